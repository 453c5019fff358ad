"""Python-side overhead of the public RobotModel calls issue 14 names: each call timed
through the public method and as the raw generic-module function it ends up calling
(same inputs, same model, kernels="generic"), best of 15 in µs per call.  The difference
is what the wrappers cost; the raw figure is the floor the C arithmetic sets.

    .venv/bin/python bench/overhead_probe.py [robot ...]

It prints its figures and writes no results file (bench_*.py scripts do).

Wall times on a shared or virtual machine drift by tens of percent between runs; for
differences of a few hundred nanoseconds count instructions instead with callgrind (the
venv's python is a symlink valgrind resolves past the venv: run the base interpreter
with the venv's site-packages on PYTHONPATH).
"""
import sys
import tempfile
import timeit

import cases


def _best(call, number):
    return min(timeit.repeat(call, number=number, repeat=15)) / number * 1e6


def pairs(model, w):
    """``{call: (public, raw)}`` zero-argument callables over the workload."""
    f1 = w.frames[0]
    q, qd, qdd, tau = w.q, w.qd, w.qdd, w.tau
    compiled, p = model.generic_kernels()
    generic = model.kernels.routes.generic
    one = {f1: w.wrenches[0]}
    raw_hybrid = compiled.module.hybrid_dynamics
    hybrid = {}
    for label, (alpha, beta) in (("hybrid, 1 constraint", cases.ONE_CONSTRAINT),
                                 ("hybrid, 3 constraints", cases.THREE_CONSTRAINTS)):
        constraints = [(f1, alpha, beta)]
        hybrid[label] = (
            lambda c=constraints: model.hybrid_dynamics(q, qd, c, tau),
            lambda c=constraints: raw_hybrid(compiled.model, q, qd, tau, c, p))
    pose = compiled.function("frame_poses", compiled.frame_index[f1])
    jacobian = compiled.function("jacobian", compiled.frame_index[f1])
    return {
        "inverse dynamics": (lambda: model.inverse_dynamics(q, qd, qdd),
                             lambda: generic["inverse_dynamics"](q, qd, qdd, p)),
        "ID, 1 wrench": (lambda: model.inverse_dynamics(q, qd, qdd, one),
                         lambda: generic["inverse_dynamics_wrenches"](q, qd, qdd, one, p)),
        "FD, 1 wrench": (lambda: model.forward_dynamics(q, qd, tau, one),
                         lambda: generic["forward_dynamics_wrenches"](q, qd, tau, one, p)),
        **hybrid,
        "frame pose": (lambda: model.frame_pose(q, f1), lambda: pose(q, p)),
        "Jacobian": (lambda: model.jacobian(q, f1), lambda: jacobian(q, p)),
    }


def main(names):
    for name, _, urdf in cases.robots(only=names or ["panda", "ur5", "random_tree_32"]):
        with tempfile.NamedTemporaryFile("w", suffix=".urdf") as handle:
            handle.write(urdf)
            handle.flush()
            model = cases.load_ours(handle.name)
        model.set_kernels("generic")
        w = cases.workload_for(model, samples=1)
        print(f"{name}:")
        for call, (public, raw) in pairs(model, w).items():
            number = 2000
            print(f"  {call:24s} public {_best(public, number):7.2f}  raw {_best(raw, number):7.2f}")


if __name__ == "__main__":
    main(sys.argv[1:])
