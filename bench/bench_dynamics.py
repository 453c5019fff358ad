#!/usr/bin/env python3
"""Every quantity x option, warm, per call: this project's public API against Pinocchio's
fastest Python route, side by side in one process.

For each robot (bench/cases.py: the shipped ones, 6- and 7-DOF arms and a
Panda with mimic fingers from the rtb-data zoo, a 32-joint random tree) the
model is loaded as a user loads it (``RobotModel.from_urdf``, kernels="auto"),
``prepare_kernels(frames=...)`` compiles or loads every per-robot kernel for the
three frames used, and each quantity is called ``--warmup`` times (at most
``--warmup-seconds`` per quantity; the table gives the count) before timing.
Times are the best of several rounds of a mean over many calls, each round timing
both libraries in turn (the VM's speed drifts); batches are
per sample over 10,000 samples (1,000 for the derivatives) against Pinocchio
looped from Python.  Ratios < 1: faster than Pinocchio.  The cold start is bench_cold.py.

    python bench/bench_dynamics.py                  # every robot (~40 min)
    python bench/bench_dynamics.py --robots panda   # some robots
    python bench/bench_dynamics.py --quick          # smoke (CI): dual-arm robot, few repeats
    python bench/bench_dynamics.py --robots ur5 --quantities "frame twist" --name frame_motion \
        --no-prepare                                # some quantities, to results/frame_motion.*

Writes bench/results/dynamics.md and .json (dynamics-quick.* with --quick, --name's).
"""
import argparse
import pathlib
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import cases  # noqa: E402
from results_file import fmt, ratio_cell, run_header, write_results  # noqa: E402


def calls_lasting(call, min_seconds):
    """How many calls of ``call`` last at least ``min_seconds``."""
    number = 1
    while True:
        started = time.perf_counter()
        for _ in range(number):
            call()
        elapsed = time.perf_counter() - started
        if elapsed >= min_seconds:
            return number
        number *= 2 if elapsed <= 0 else max(2, min(10, int(1.2 * min_seconds / elapsed) + 1))


def mean_seconds(call, number):
    started = time.perf_counter()
    for _ in range(number):
        call()
    return (time.perf_counter() - started) / number


def warm_up(call, calls, seconds):
    """``call`` up to ``calls`` times or for ``seconds``; how many calls were made."""
    deadline = time.perf_counter() + seconds
    for made in range(1, calls + 1):
        call()
        if time.perf_counter() > deadline:
            return made
    return calls


def measure_side_by_side(cases_by_side, settings, warm_calls):
    """``{side: (microseconds, warm-up calls, error)}`` of Cases timed in alternating rounds.

    This VM's speed drifts by up to 2x over seconds (other guests on the host):
    timing one library's runs after the other's let a slow phase fall on one
    side only, and it moved single ratios across the target between runs.  Each
    round times one run of every side, and each side keeps its best round.
    Every side's model change is made for the whole measurement and undone after.
    """
    results, live = {}, {}
    entered = []
    try:
        for side, case in cases_by_side.items():
            try:
                if case.enter:
                    case.enter()
                entered.append(case)
                case.call()
                made = warm_up(case.call, warm_calls, settings.warmup_seconds)
                live[side] = [calls_lasting(case.call, settings.min_seconds), float("inf"), made]
            except Exception as error:       # a quantity this robot cannot answer (e.g. rank)
                results[side] = (None, 0, f"{type(error).__name__}: "
                                          f"{str(error).splitlines()[0][:120]}")
        for _ in range(settings.repeat):
            for side, timing in live.items():
                timing[1] = min(timing[1], mean_seconds(cases_by_side[side].call, timing[0]))
    finally:
        for case in entered:
            if case.leave:
                case.leave()
    results.update({side: (best * 1e6, made, None) for side, (_, best, made) in live.items()})
    return results


def target_of(quantity):
    return cases.BATCH_TARGETS.get(quantity, cases.WARM_TARGET)


def measure_robot(index, total, name, source, xml, settings):
    with tempfile.NamedTemporaryFile("w", suffix=".urdf", delete=False) as urdf:
        urdf.write(xml)
    model = cases.load_ours(urdf.name)
    samples = settings.samples
    w = cases.workload_for(model, samples)
    print(f"[bench] robot {index}/{total} {name} ({model.dof} dof, {source}): frames "
          f"{w.frames}; subgraph {len(w.subgraph)} joints; preparing kernels ...", flush=True)
    started = time.perf_counter()
    if settings.prepare:
        model.prepare_kernels(frames=w.frames)
    prepare_seconds = time.perf_counter() - started
    ref = cases.load_pinocchio(urdf.name, model.joint_names)
    pathlib.Path(urdf.name).unlink()
    ours = {quantity: case for quantity, case in cases.our_cases(model, w).items()
            if settings.quantities is None or quantity in settings.quantities}
    theirs = cases.pinocchio_cases(ref, w)
    rows = []
    for quantity, case in ours.items():
        if settings.quantities and quantity not in settings.quantities:
            continue
        batch = quantity in cases.BATCHES
        per = (case.samples or samples) if batch else 1
        warm_calls = 1 if batch else settings.warmup
        row = {"robot": name, "dof": model.dof, "quantity": quantity,
               "target": target_of(quantity), "per_sample": batch}
        timed = measure_side_by_side({None: case, **theirs.get(quantity, {})}, settings,
                                     warm_calls)
        ours_us, row["warmup_calls"], row["error"] = timed.pop(None)
        row["ours_us"] = None if ours_us is None else ours_us / per
        best = None
        for route, (us, _, error) in timed.items():
            if us is not None and (best is None or us / per < best[0]):
                best = (us / per, route)
            elif error:
                row.setdefault("pinocchio_errors", {})[route] = error
        row["pinocchio_us"], row["pinocchio_route"] = best or (None, None)
        rows.append(row)
        print(f"[bench]   {name} {quantity}: ours {fmt(row['ours_us'])} us, Pinocchio "
              f"{fmt(row['pinocchio_us'])} us ({row['pinocchio_route']}), ratio "
              f"{ratio_cell(row['ours_us'], row['pinocchio_us'], row['target'])}"
              + (f" [{row['error']}]" if row["error"] else ""), flush=True)
    return {"robot": name, "source": source, "dof": model.dof, "frames": w.frames,
            "subgraph": w.subgraph, "prescribed": w.prescribed,
            "prepare_kernels_s": prepare_seconds, "rows": rows}


def table(results, settings):
    lines = [f"# {run_header('Dynamics, warm, per call' + (' (quick smoke)' if settings.quick else ''))}",
             "",
             "Ours: the public `RobotModel` method as a user calls it (validation included). "
             "Pinocchio: its fastest Python route measured here (route column). Protocol per "
             "robot: `RobotModel.from_urdf` (kernels=\"auto\"), then "
             + ("`prepare_kernels(frames=[F1, F2, F3])` (every per-robot kernel compiled or "
                "loaded)" if settings.prepare else "no `prepare_kernels` (--no-prepare: the "
                "generic module answers)") + ", then each quantity called "
             f"{settings.warmup} times (at most {settings.warmup_seconds:g} s; fewer where the "
             "warm-up column says) before timing; time = best of "
             f"{settings.repeat} rounds of a mean over >= {settings.min_seconds:g} s of calls, "
             "each round timing ours and every Pinocchio route in turn. "
             f"Batch rows: per sample over {settings.samples} samples "
             f"({min(settings.samples, cases.DERIVATIVE_BATCH_SAMPLES)} for the derivatives), "
             "Pinocchio looped from Python. Ratio = ours / Pinocchio; **bold** where the target "
             "of issue 14 (17 for the derivatives) is missed. Derivatives: ours n x n in model "
             "order (mimic joints folded), Pinocchio's `compute*Derivatives` on its own "
             "joints; wrenches constant in root axes for ours, body-fixed for Pinocchio (the "
             "same work). "
             "Pinocchio builds mimic joints as independent joints. ID/FD wrenches: one link "
             "wrench per frame; Pinocchio gets a prepared `StdVec_Force`. Hybrid: `1 constraint` "
             "= the vertical acceleration of F1, `3` = its linear acceleration. TSI two frames: the "
             "coupled translational Lambda of F1 and F2 with damping 1e-3 (two points of a serial "
             "arm are often not independently movable: undamped it raises on most arms). Mixed: "
             "the first half of the joints "
             "prescribed. Subgraph: the joints moving F1 but the first (its TSI: "
             "translational). "
             "Payload: 2 kg on F1; gravity changed: (0.4, -0.3, -9.7). Coriolis matrix and "
             "energies: the generic module's (no per-robot kernel) against "
             "`computeCoriolisMatrix`, `computeKineticEnergy`, `computePotentialEnergy` (each "
             "runs its own forward kinematics, as ours does).", ""]
    for result in results:
        lines += [f"## {result['robot']} ({result['dof']} dof; {result['source']})", "",
                  f"Frames F1-F3: {', '.join(result['frames'])}; subgraph: "
                  f"{', '.join(result['subgraph'])}; prepare_kernels "
                  f"{result['prepare_kernels_s']:.1f} s.", "",
                  "| quantity | ours (us) | Pinocchio (us) | Pinocchio route | ratio | target "
                  "| warm-up calls |", "|---|---|---|---|---|---|---|"]
        for row in result["rows"]:
            quantity = row["quantity"] + (" (per sample)" if row["per_sample"] else "")
            if row["error"]:
                quantity += f" - raises {row['error']}"
            lines.append(
                f"| {quantity} | {fmt(row['ours_us'])} | {fmt(row['pinocchio_us'])} "
                f"| {row['pinocchio_route'] or '-'} "
                f"| {ratio_cell(row['ours_us'], row['pinocchio_us'], row['target'])} "
                f"| <= {row['target']} | {row['warmup_calls']} |")
        lines.append("")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short smoke run (CI)")
    parser.add_argument("--robots", nargs="*", help="robot names (bench/cases.py ROBOTS)")
    parser.add_argument("--output", default=str(HERE / "results"), help="results directory")
    parser.add_argument("--warmup", type=int, default=2100,
                        help="calls of each quantity before timing (default 2100)")
    parser.add_argument("--warmup-seconds", type=float, default=3.0,
                        help="at most this long warming up one quantity")
    parser.add_argument("--quantities", nargs="*",
                        help="only these quantities (bench/cases.py our_cases' names)")
    parser.add_argument("--no-prepare", dest="prepare", action="store_false",
                        help="leave the per-robot kernels uncompiled: for quantities only the "
                             "generic module answers (frame motion, Coriolis matrix, energies)")
    parser.add_argument("--name", help="results file name (default dynamics, dynamics-quick)")
    settings = parser.parse_args(argv)
    settings.repeat, settings.min_seconds = (2, 0.002) if settings.quick else (7, 0.04)
    settings.samples = 200 if settings.quick else cases.BATCH_SAMPLES
    if settings.quick:
        settings.warmup = min(settings.warmup, 20)
    robots = cases.robots(settings.quick, settings.robots)
    results = [measure_robot(i + 1, len(robots), name, source, xml, settings)
               for i, (name, source, xml) in enumerate(robots)]
    text = table(results, settings)
    print()
    print(text)
    name = settings.name or ("dynamics-quick" if settings.quick else "dynamics")
    write_results(settings.output, name, text,
                  {"header": text.splitlines()[0][2:], "warmup_calls": settings.warmup,
                   "warmup_seconds": settings.warmup_seconds, "repeat": settings.repeat,
                   "batch_samples": settings.samples, "robots": results})


if __name__ == "__main__":
    main()
