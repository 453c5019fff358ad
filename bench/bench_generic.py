"""Microseconds per call: generic compiled module vs per-robot kernels vs numpy vs Pinocchio.

Not a test (no timing assertions anywhere) and not the full benchmark (bench_dynamics.py):
the generic module against the per-robot kernels, the numpy path and
Pinocchio, per call, on the Panda and a 30-DOF random tree.
Run: .venv/bin/python bench/bench_generic.py [--quick]; writes
bench/results/generic.md and .json (generic-quick.* with --quick).
"""
import argparse
import pathlib
import sys
import timeit

import numpy as np
import pinocchio as pin

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "test"))
sys.path.insert(0, str(ROOT / "bench"))
from results_file import run_header, write_results  # noqa: E402
from support.robot_generator import random_tree_urdf  # noqa: E402
from soa_dynamics_ros.model import RobotModel  # noqa: E402


def per_call(function, *arguments, repeat=5, number=None, budget=2e-2):
    number = number or max(10, int(budget / max(1e-7, timeit.timeit(
        lambda: function(*arguments), number=3) / 3)))
    best = min(timeit.repeat(lambda: function(*arguments), repeat=repeat, number=number))
    return 1e6 * best / number


def measure(name, xml, quick=False):
    """Markdown lines and JSON rows of one robot's table."""
    generic = RobotModel.from_urdf(xml, kernels="generic")
    robot = RobotModel.from_urdf(xml, kernels="c")
    numpy_path = RobotModel.from_urdf(xml, kernels="off")
    tree = generic.tree

    def depth(body):
        return 0 if body <= 0 else 1 + depth(tree.parent[body])
    frame = max(generic.frame_names, key=lambda name: depth(tree.frames[name].body))
    robot.prepare_kernels(frames=[frame])
    pinocchio = pin.buildModelFromXML(xml)
    data = pinocchio.createData()
    rng = np.random.default_rng(1)
    n = generic.dof
    q, qd, qdd = rng.uniform(-1, 1, (3, n))
    wrenches = {frame: rng.normal(size=6)}
    # Pinocchio on its own configuration (continuous joints: cos, sin): same work per call.
    np.random.seed(1)
    pq, pv = pin.randomConfiguration(pinocchio), np.zeros(pinocchio.nv)
    frame_id = pinocchio.getFrameId(frame)

    def pin_jacobian(config):
        pin.computeFrameJacobian(pinocchio, data, config, frame_id, pin.LOCAL_WORLD_ALIGNED)

    def pin_lambda(config):
        pin.computeMinverse(pinocchio, data, config)
        jacobian = pin.computeFrameJacobian(pinocchio, data, config, frame_id,
                                            pin.LOCAL_WORLD_ALIGNED)
        return np.linalg.pinv(jacobian @ data.Minv @ jacobian.T)

    rows = [
        ("gravity", lambda m: m.gravity_torques(q),
         lambda: pin.computeGeneralizedGravity(pinocchio, data, pq)),
        ("inverse dynamics", lambda m: m.inverse_dynamics(q, qd, qdd),
         lambda: pin.rnea(pinocchio, data, pq, pv, pv)),
        ("ID + wrench", lambda m: m.inverse_dynamics(q, qd, qdd, wrenches), None),
        ("mass matrix", lambda m: m.mass_matrix(q), lambda: pin.crba(pinocchio, data, pq)),
        ("forward dynamics", lambda m: m.forward_dynamics(q, qd, qdd),
         lambda: pin.aba(pinocchio, data, pq, pv, pv)),
        ("FD + wrench", lambda m: m.forward_dynamics(q, qd, qdd, wrenches), None),
        ("jacobian", lambda m: m.jacobian(q, frame), lambda: pin_jacobian(pq)),
        ("frame pose", lambda m: m.frame_pose(q, frame), None),
        ("Lambda (1 frame)", lambda m: m.task_space_inertia(q, frame, damping=1e-9),
         lambda: pin_lambda(pq)),
        ("Lambda 2 frames, info", lambda m: m.task_space_inertia(
            q, [frame, m.frame_names[len(m.frame_names) // 2]], "translational", 1e-9, True), None),
        ("hybrid (1 frame, 3 rows)", lambda m: m.hybrid_dynamics(
            q, qd, [(frame, np.eye(6)[:, :3], np.zeros(3))]), None),
        ("mixed dynamics", lambda m: m.mixed_dynamics(q, qd, qdd, qdd, m.joint_names[:2]), None),
    ]
    lines = [f"## {name} ({n} dof)", "",
             "| quantity | generic | per-robot | numpy | Pinocchio | generic/Pin |",
             "|---|---|---|---|---|---|"]
    repeat, budget = (1, 1e-3) if quick else (5, 2e-2)
    records = []
    for label, call, reference in rows:
        times = [per_call(call, model, repeat=repeat, budget=budget)
                 for model in (generic, robot, numpy_path)]
        pin_time = per_call(reference, repeat=repeat, budget=budget) if reference else float("nan")
        lines.append(f"| {label} | {times[0]:.2f} | {times[1]:.2f} | {times[2]:.1f} | "
                     f"{pin_time:.2f} | {times[0] / pin_time:.2f} |")
        print(lines[-1], flush=True)
        records.append({"robot": name, "quantity": label, "generic_us": times[0],
                     "per_robot_us": times[1], "numpy_us": times[2],
                     "pinocchio_us": None if reference is None else pin_time})
    return lines + [""], records


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short smoke run (CI): the Panda only")
    parser.add_argument("--output", default=str(ROOT / "bench" / "results"), help="results directory")
    settings = parser.parse_args()
    robots = [("panda", (ROOT / "urdf" / "panda.urdf").read_text())]
    if not settings.quick:
        robots.append(("random tree", random_tree_urdf(30, moving_joints=30, mimic_fraction=0.0)))
    lines = [f"# {run_header('Generic module' + (' (quick smoke)' if settings.quick else ''))}", "",
             "Microseconds per call (best of 5 runs; numpy: the reference path).", ""]
    rows = []
    for name, xml in robots:
        print(f"[bench] {name}", flush=True)
        robot_lines, robot_rows = measure(name, xml, settings.quick)
        lines += robot_lines
        rows += robot_rows
    write_results(settings.output, "generic-quick" if settings.quick else "generic",
                  "\n".join(lines), rows)


if __name__ == "__main__":
    main()
