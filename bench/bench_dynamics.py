#!/usr/bin/env python3
"""Single-call and batched dynamics: this project against Pinocchio (and PyKDL on chains).

Everything is measured in one process, side by side, so the ratios are
meaningful on any machine.  "ours (API)" is the public RobotModel method
(argument validation included); "ours (kernel)" is the compiled kernel called
directly with prepared arrays, which is what Pinocchio's Python call is
compared with most fairly ("Pinocchio" is its Python binding, its own
validation included).  Ratios < 1 mean faster than Pinocchio.

    python bench/bench_dynamics.py            # full run, ~2 min
    python bench/bench_dynamics.py --quick    # smoke (CI): small robot, few repeats

Writes bench/results/dynamics.md and .json (dynamics-quick.* with --quick).
"""
import argparse
import os
import pathlib
import subprocess
import sys
import tempfile
import timeit

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "test"))

from soa_dynamics_ros.model import RobotModel  # noqa: E402
from results_file import run_header, write_results  # noqa: E402

TARGETS = {  # issue 6: ratio to Pinocchio (ours / theirs), single call on the 7-DOF arm
    "gravity": 0.5, "inverse dynamics": 0.5, "bias": 0.5, "mass matrix": 1.0,
    "forward dynamics": 1.0, "task-space inertia": 0.5, "ID batch (per sample)": 0.2}


def per_call(function, repeat, number):
    """Best of ``repeat`` runs of the mean time of ``number`` calls, in microseconds."""
    function()
    return min(timeit.repeat(function, number=number, repeat=repeat)) / number * 1e6


def robots(quick):
    from support.robot_generator import random_tree_urdf
    if quick:
        return [("double_pendulum", (REPO / "urdf" / "double_pendulum.urdf").read_text())]
    tree = random_tree_urdf(3030, moving_joints=32, mimic_fraction=0.0, fixed_fraction=0.1)
    return [("panda", (REPO / "urdf" / "panda.urdf").read_text()),
            ("dual_arm_torso", (REPO / "urdf" / "dual_arm_torso.urdf").read_text()),
            ("random_tree_32", tree)]


def leaf_frame(model):
    tree = model.tree
    has_child = set(tree.parent)
    leaves = [name for name, frame in tree.frames.items() if frame.body not in has_child]
    return leaves[0]


def pinocchio_side(xml, model):
    try:
        import pinocchio as pin
        from oracles.pinocchio_reference import PinocchioReference
    except ImportError:
        return None
    ref = PinocchioReference(xml, model.joint_names)
    return pin, ref


def kdl_side(xml, model, frame):
    """PyKDL on serial chains only (root link to ``frame``, every joint on the path)."""
    try:
        from oracles.kdl_reference import KdlChain
        chain = KdlChain(xml, model.tree.root_link, frame)
    except Exception:
        return None
    if sorted(chain.joint_names) != sorted(model.joint_names):
        return None       # a branched robot: KDL chains cover only part of it
    return chain


def measure_robot(name, xml, quick, rng):
    repeat, number = (3, 200) if quick else (7, 5000)
    samples = 200 if quick else 10_000
    rows = []
    model = RobotModel.from_urdf(xml, kernels="c")
    frame = leaf_frame(model)
    print(f"[{name}] dof {model.dof}, frame {frame}: compiling/loading kernels ...", flush=True)
    seconds = model.prepare_kernels(frames=[frame])
    print(f"[{name}] kernels ready ({sum(seconds.values()):.1f} s)", flush=True)
    reference = RobotModel.from_urdf(xml, kernels="off")
    n = model.dof
    q, qd, qdd = rng.uniform(-1, 1, (3, n))
    tau = reference.inverse_dynamics(q, qd, qdd)
    kernels = model._kernel_set
    p = model._params
    k = {key: kernels.get(key) for key in ("gravity_torques", "inverse_dynamics", "bias_torques",
                                           "mass_matrix", "forward_dynamics")}
    k_lambda = kernels.get("task_space_inertia", frame)
    k_jac = kernels.get("jacobian", frame)

    ours = {
        "gravity": (lambda: model.gravity_torques(q), lambda: k["gravity_torques"](q, p),
                    lambda: reference.gravity_torques(q)),
        "inverse dynamics": (lambda: model.inverse_dynamics(q, qd, qdd),
                             lambda: k["inverse_dynamics"](q, qd, qdd, p),
                             lambda: reference.inverse_dynamics(q, qd, qdd)),
        "bias": (lambda: model.bias_torques(q, qd), lambda: k["bias_torques"](q, qd, p),
                 lambda: reference.bias_torques(q, qd)),
        "mass matrix": (lambda: model.mass_matrix(q), lambda: k["mass_matrix"](q, p),
                        lambda: reference.mass_matrix(q)),
        "forward dynamics": (lambda: model.forward_dynamics(q, qd, tau),
                             lambda: k["forward_dynamics"](q, qd, tau, p),
                             lambda: reference.forward_dynamics(q, qd, tau)),
        "frame Jacobian": (lambda: model.jacobian(q, frame), lambda: k_jac(q, p),
                           lambda: reference.jacobian(q, frame)),
    }
    if k_lambda is not None and type(k_lambda(q, p)) is np.ndarray:
        ours["task-space inertia"] = (lambda: model.task_space_inertia(q, frame),
                                      lambda: k_lambda(q, p),
                                      lambda: reference.task_space_inertia(q, frame))

    theirs, kdl_calls = {}, {}
    pin_side = pinocchio_side(xml, model)
    if pin_side is not None:
        pin, ref = pin_side
        pm, pd = ref.model, ref.data
        cq = ref.configuration(q)
        sel = ref.selection
        v, a, t = sel @ qd, sel @ qdd, sel @ tau
        fid = pm.getFrameId(frame, pin.FrameType.BODY)
        lwa = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED

        def pin_lambda():
            mass = pin.crba(pm, pd, cq)
            mass = np.triu(mass) + np.triu(mass, 1).T
            jac = pin.computeFrameJacobian(pm, pd, cq, fid, lwa)
            return np.linalg.inv(jac @ np.linalg.solve(mass, jac.T))

        def pin_lambda_minverse():
            minv = pin.computeMinverse(pm, pd, cq)
            minv = np.triu(minv) + np.triu(minv, 1).T
            jac = pin.computeFrameJacobian(pm, pd, cq, fid, lwa)
            return np.linalg.inv(jac @ minv @ jac.T)

        theirs = {
            "gravity": lambda: pin.computeGeneralizedGravity(pm, pd, cq),
            "inverse dynamics": lambda: pin.rnea(pm, pd, cq, v, a),
            "bias": lambda: pin.nonLinearEffects(pm, pd, cq, v),
            "mass matrix": lambda: pin.crba(pm, pd, cq),
            "forward dynamics": lambda: pin.aba(pm, pd, cq, v, t),
            "frame Jacobian": lambda: pin.computeFrameJacobian(pm, pd, cq, fid, lwa),
            "task-space inertia": [pin_lambda, pin_lambda_minverse],
        }
        # Sanity: the same physics on both sides.
        if sel.shape[0] == sel.shape[1]:
            expected = pin.rnea(pm, pd, cq, v, a)
            got = sel.T @ expected
            assert np.allclose(model.inverse_dynamics(q, qd, qdd), got, atol=1e-8), name
    chain = kdl_side(xml, model, frame)
    if chain is not None:
        import PyKDL as kdl
        jq, jqd, jqdd = chain._array(q), chain._array(qd), chain._array(qdd)
        torques = kdl.JntArray(chain.nj)
        wrenches = [kdl.Wrench.Zero() for _ in range(chain.ns)]
        mass = kdl.JntSpaceInertiaMatrix(chain.nj)
        jac = kdl.Jacobian(chain.nj)
        kdl_calls = {
            "gravity": lambda: chain.dyn.JntToGravity(jq, torques),
            "inverse dynamics": lambda: chain.rne.CartToJnt(jq, jqd, jqdd, wrenches, torques),
            "mass matrix": lambda: chain.dyn.JntToMass(jq, mass),
            "frame Jacobian": lambda: chain.jac_solver.JntToJac(jq, jac),
        }

    for quantity, (api, raw, numpy_path) in ours.items():
        row = {"robot": name, "dof": n, "quantity": quantity,
               "ours_api_us": per_call(api, repeat, number),
               "ours_kernel_us": per_call(raw, repeat, number),
               "numpy_us": per_call(numpy_path, repeat, max(number // 50, 20))}
        if quantity in theirs:
            routes = theirs[quantity]
            routes = routes if isinstance(routes, list) else [routes]
            row["pinocchio_us"] = min(per_call(r, repeat, number) for r in routes)
        if quantity in kdl_calls:
            row["kdl_us"] = per_call(kdl_calls[quantity], repeat, number)
        rows.append(row)
        print(f"[{name}] {quantity}: {_fmt_row(row)}", flush=True)

    # Batched inverse dynamics over a trajectory.
    Q, QD, QDD = rng.uniform(-1, 1, (3, samples, n))
    batch = {"robot": name, "dof": n, "quantity": "ID batch (per sample)", "samples": samples}
    batch["ours_api_us"] = per_call(lambda: model.inverse_dynamics_batch(Q, QD, QDD), 3, 1) / samples
    k_batch = kernels.get("inverse_dynamics_batch")
    batch["ours_kernel_us"] = per_call(lambda: k_batch(Q, QD, QDD, p), 3, 1) / samples
    small = slice(0, min(samples, 200))
    batch["numpy_us"] = per_call(lambda: reference.inverse_dynamics_batch(Q[small], QD[small],
                                                                         QDD[small]), 1, 1) / (
        small.stop)
    if pin_side is not None:
        CQ = [ref.configuration(x) for x in Q]
        V, A = QD @ sel.T, QDD @ sel.T

        def pin_loop():
            for i in range(samples):
                pin.rnea(pm, pd, CQ[i], V[i], A[i])
        batch["pinocchio_us"] = per_call(pin_loop, 3, 1) / samples
        if hasattr(pin, "rneaInParallel"):
            CQT, VT, AT = (np.asfortranarray(np.array(x).T) for x in (CQ, V, A))
            try:
                batch["pinocchio_parallel1_us"] = per_call(
                    lambda: pin.rneaInParallel(1, pm, pd, CQT, VT, AT), 3, 1) / samples
            except Exception:
                pass
    if chain is not None:
        arrays = [(chain._array(x), chain._array(y), chain._array(z)) for x, y, z in zip(Q, QD, QDD)]

        def kdl_loop():
            for jq_, jqd_, jqdd_ in arrays:
                chain.rne.CartToJnt(jq_, jqd_, jqdd_, wrenches, torques)
        batch["kdl_us"] = per_call(kdl_loop, 3, 1) / samples
    rows.append(batch)
    print(f"[{name}] ID batch: {_fmt_row(batch)}", flush=True)
    return rows


LOAD_SCRIPT = """
import time
t0 = time.perf_counter()
import numpy as np
from soa_dynamics_ros.model import RobotModel
m = RobotModel.from_urdf({path!r}, kernels="c")
loaded = time.perf_counter() - t0
g = m.gravity_torques(np.zeros(m.dof))
print("RESULT", loaded, time.perf_counter() - t0, m._ready.get("gravity_torques") is not None)
"""


def load_times(name, xml):
    """Model load to first answer (gravity torques through a compiled kernel), cold and warm."""
    with tempfile.TemporaryDirectory() as cache, tempfile.NamedTemporaryFile(
            "w", suffix=".urdf", delete=False) as urdf:
        urdf.write(xml)
        urdf.flush()
        env = dict(os.environ, SOA_DYNAMICS_CACHE=cache, PYTHONPATH=str(REPO))
        result = {"robot": name}
        for label in ("cold", "warm"):
            run = subprocess.run([sys.executable, "-c", LOAD_SCRIPT.format(path=urdf.name)],
                                 capture_output=True, text=True, env=env, timeout=900)
            line = [x for x in run.stdout.splitlines() if x.startswith("RESULT")]
            if run.returncode != 0 or not line:
                result[label] = None
                print(run.stderr[-2000:], file=sys.stderr)
                continue
            _, loaded, first, used_kernel = line[0].split()
            result[label] = float(first)
            result[f"{label}_model_load"] = float(loaded)
            result[f"{label}_used_kernel"] = used_kernel == "True"
        os.unlink(urdf.name)
    print(f"[{name}] load to first answer: cold {result['cold']:.2f} s, warm {result['warm']:.2f} s",
          flush=True)
    return result


def _fmt(value, digits=2):
    return "-" if value is None else f"{value:.{digits}f}"


def _ratio(row, key):
    if row.get("pinocchio_us") and row.get(key):
        return row[key] / row["pinocchio_us"]
    return None


def _fmt_row(row):
    return (f"ours {_fmt(row.get('ours_api_us'))} us (kernel {_fmt(row.get('ours_kernel_us'))}), "
            f"numpy {_fmt(row.get('numpy_us'))}, pinocchio {_fmt(row.get('pinocchio_us'))}, "
            f"kdl {_fmt(row.get('kdl_us'))}")


def table(rows, loads, args):
    lines = [f"# {run_header('Dynamics benchmark' + (' (quick smoke)' if args.quick else ''))}",
             "", "Times in microseconds per call (batch rows: per sample). Ratios are ours / "
             "Pinocchio (< 1: faster). *API* = RobotModel method with validation; *kernel* = the "
             "compiled kernel called directly. Pinocchio's task-space inertia is its fastest route "
             "(crba or computeMinverse + computeFrameJacobian + numpy solve/inverse).", "",
             "| robot | dof | quantity | ours API | ours kernel | numpy ref | Pinocchio | PyKDL "
             "| API/Pin | kernel/Pin | target |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        target = TARGETS.get(row["quantity"]) if row["robot"] == "panda" else None
        lines.append(
            f"| {row['robot']} | {row['dof']} | {row['quantity']} | {_fmt(row.get('ours_api_us'))} "
            f"| {_fmt(row.get('ours_kernel_us'))} | {_fmt(row.get('numpy_us'), 1)} "
            f"| {_fmt(row.get('pinocchio_us'))} | {_fmt(row.get('kdl_us'))} "
            f"| {_fmt(_ratio(row, 'ours_api_us'))} | {_fmt(_ratio(row, 'ours_kernel_us'))} "
            f"| {'-' if target is None else f'<= {target}'} |")
    parallel = [r for r in rows if r.get("pinocchio_parallel1_us")]
    if parallel:
        lines += ["", "Pinocchio `rneaInParallel` (1 thread), per sample: " + ", ".join(
            f"{r['robot']} {r['pinocchio_parallel1_us']:.2f} us" for r in parallel)]
    if loads:
        lines += ["", "Model load to first answer (new process, gravity torques through a compiled "
                  "kernel; imports included):", "", "| robot | cold cache (s) | warm cache (s) | target |",
                  "|---|---|---|---|"]
        for load in loads:
            lines.append(f"| {load['robot']} | {_fmt(load['cold'])} | {_fmt(load['warm'])} "
                         f"| cold <= 10, warm <= 1 |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short smoke run (CI)")
    parser.add_argument("--output", default=str(HERE / "results"), help="results directory")
    parser.add_argument("--no-load", action="store_true", help="skip the cold/warm load runs")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(6)
    rows, loads = [], []
    for name, xml in robots(args.quick):
        rows += measure_robot(name, xml, args.quick, rng)
    if not args.no_load:
        for name, xml in robots(args.quick)[:2]:
            loads.append(load_times(name, xml))
    text = table(rows, loads, args)
    print()
    print(text)
    write_results(args.output, "dynamics-quick" if args.quick else "dynamics", text,
                  {"header": text.splitlines()[0][2:], "rows": rows, "loads": loads})


if __name__ == "__main__":
    main()
