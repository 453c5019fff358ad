#!/usr/bin/env python3
"""Floating-base dynamics, warm, per call: this project's free-flyer model against
Pinocchio's ``rnea``, ``crba``, ``aba`` and ``ccrba`` with ``JointModelFreeFlyer``, on a
30+ DOF humanoid (Talos, example-robot-data) from Python.

The model is loaded as a user loads it (``from_urdf(..., floating_base=True)``,
kernels="auto") and its per-robot kernels prepared (compiled or loaded from the
cache) before timing, as a node does at start-up.  Times are the best of several
rounds of a mean over many calls, each round timing both libraries in turn
(bench_dynamics.py's method).  Ratios < 1: faster than Pinocchio.

    python bench/bench_floating_base.py            # Talos
    python bench/bench_floating_base.py --quick    # fewer rounds, generic module only

Writes bench/results/floating_base.md and .json.
"""
import argparse
import os
import pathlib
import sys
import time
import warnings

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import cases  # noqa: E402,F401  (puts the repository and test/ on the path)
from bench_dynamics import calls_lasting, mean_seconds  # noqa: E402
from results_file import fmt, ratio_cell, run_header, write_results  # noqa: E402
from support.robots import example_robot_text  # noqa: E402

ROBOT = "talos_data/robots/talos_reduced.urdf"


def build(text, prepare=True):
    import pinocchio as pin
    from soa_dynamics_ros import RobotModel
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = RobotModel.from_urdf(text, floating_base=True)
    if prepare:
        model.kernels.prepare(derivatives=False, wrenches=False)
    theirs = pin.buildModelFromXML(text, pin.JointModelFreeFlyer())
    data = theirs.createData()
    rng = np.random.default_rng(1)
    quaternion = rng.normal(size=4)
    quaternion /= np.linalg.norm(quaternion)
    q = np.r_[rng.normal(size=3), quaternion, rng.uniform(-1, 1, model.nv - 6)]
    v, a, tau = rng.normal(size=(3, model.nv))
    ids = [theirs.getJointId(name) for name in model.joint_names]
    q_index = np.r_[np.arange(7), [theirs.joints[i].idx_q for i in ids]]
    v_index = np.r_[np.arange(6), [theirs.joints[i].idx_v for i in ids]]
    qp, vp, ap, taup = np.zeros(theirs.nq), np.zeros(theirs.nv), np.zeros(theirs.nv), np.zeros(
        theirs.nv)
    qp[q_index], vp[v_index], ap[v_index], taup[v_index] = q, v, a, tau
    calls = {
        "inverse dynamics": (lambda: model.inverse_dynamics(q, v, a),
                             lambda: pin.rnea(theirs, data, qp, vp, ap), "rnea"),
        "mass matrix": (lambda: model.mass_matrix(q), lambda: pin.crba(theirs, data, qp), "crba"),
        "forward dynamics": (lambda: model.forward_dynamics(q, v, tau),
                             lambda: pin.aba(theirs, data, qp, vp, taup), "aba"),
        "centroidal momentum matrix": (lambda: model.centroidal_momentum_matrix(q),
                                       lambda: pin.ccrba(theirs, data, qp, vp), "ccrba"),
    }
    return model, calls


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer and shorter rounds")
    parser.add_argument("--output", default=str(HERE / "results"))
    settings = parser.parse_args()
    repeat, min_seconds = (3, 0.05) if settings.quick else (7, 0.2)
    # --quick (the CI smoke) times the generic module: a 38-DOF robot's own kernels take
    # minutes to compile.
    model, calls = build(example_robot_text(ROBOT), prepare=not settings.quick)
    print(f"[bench] Talos floating base: nq {model.nq}, nv {model.nv}, kernels {model.kernels}")
    rows = []
    for quantity, (ours, theirs, route) in calls.items():
        counts = [calls_lasting(call, min_seconds) for call in (ours, theirs)]
        best = [float("inf"), float("inf")]
        for _ in range(repeat):
            for side, call in enumerate((ours, theirs)):
                best[side] = min(best[side], mean_seconds(call, counts[side]))
        row = {"quantity": quantity, "ours_us": best[0] * 1e6, "pinocchio_us": best[1] * 1e6,
               "pinocchio_route": route, "target": cases.WARM_TARGET}
        rows.append(row)
        print(f"[bench] {quantity}: ours {fmt(row['ours_us'])} us, Pinocchio "
              f"{fmt(row['pinocchio_us'])} us ({route}), ratio "
              f"{ratio_cell(row['ours_us'], row['pinocchio_us'], row['target'])}", flush=True)
    lines = [f"# {run_header('Floating-base dynamics, warm per call (bench_floating_base.py)')}",
             "", f"Talos (talos_reduced.urdf), free-flyer: nq {model.nq}, nv {model.nv}; "
             f"kernels {model.kernels}; load average at the end "
             f"{', '.join(f'{load:.1f}' for load in os.getloadavg())}.  Ratio = ours / "
             "Pinocchio; bold misses the target.", "",
             "| quantity | ours (us) | Pinocchio (us) | Pinocchio route | ratio | target |",
             "|---|---|---|---|---|---|"]
    lines += [f"| {row['quantity']} | {fmt(row['ours_us'])} | {fmt(row['pinocchio_us'])} | "
              f"{row['pinocchio_route']} | "
              f"{ratio_cell(row['ours_us'], row['pinocchio_us'], row['target'])} | "
              f"{row['target']} |" for row in rows]
    write_results(settings.output, "floating_base", "\n".join(lines) + "\n",
                  {"robot": "talos_reduced", "nq": model.nq, "nv": model.nv, "rows": rows})


if __name__ == "__main__":
    started = time.perf_counter()
    main()
    print(f"[bench] {time.perf_counter() - started:.0f} s")
