#!/usr/bin/env python3
"""Cold start: a new process loads the robot and makes 300 calls of each quantity, this
project against Pinocchio doing the same work in a new process of its own.

Per robot, three new processes run the same workload (bench/cases.py: every
quantity x option of bench_dynamics.py except the batches), each timed from
its first line (imports included) to its last call:

* ours, empty cache: ``SOA_DYNAMICS_CACHE`` is a fresh directory, so no
  kernel compiled before helps (the generic module is part of the
  installation, outside that cache: scripts/setup.sh builds it);
* ours, robot not seen: the same fresh cache after a process ran the workload
  on another robot (the double pendulum), so whatever is shared between
  robots (a generic compiled module, say) is cached and only this robot's own
  code is not;
* Pinocchio: import, ``buildModelFromXML`` of the same URDF, the same calls
  by its first route in bench_dynamics.py.

    python bench/bench_cold.py [--robots panda ur5] [--calls 300]
    python bench/bench_cold.py --quick     # smoke (CI): dual-arm robot, 10 calls

Writes bench/results/cold.md and .json (cold-quick.* with --quick).
"""
import time

STARTED = time.perf_counter()        # before any import: a cold process pays for them

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import pathlib  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import cases  # noqa: E402
from results_file import fmt, ratio_cell, run_header, write_results  # noqa: E402

PRIMING_ROBOT = "double_pendulum"
VARIANTS = ("ours, empty cache", "ours, robot not seen", "Pinocchio")


# ---------------------------------------------------------------------------- child process
def child(side, spec_path):
    """Load the robot and make ``calls`` calls of each quantity; print the times as JSON."""
    spec = json.loads(pathlib.Path(spec_path).read_text())
    w = cases.Workload(spec["workload"]["joint_names"], spec["workload"]["frames"],
                       spec["workload"]["subgraph"], spec["workload"]["prescribed"], samples=1)
    if side == "ours":
        model = cases.load_ours(spec["urdf"])
        loaded = time.perf_counter()
        workload = cases.our_cases(model, w, batches=False)
    else:
        ref = cases.load_pinocchio(spec["urdf"], w.joint_names)
        loaded = time.perf_counter()
        workload = {quantity: next(iter(routes.values()))
                    for quantity, routes in cases.pinocchio_cases(ref, w, batches=False).items()}
    seconds, errors = {}, {}
    for quantity, case in workload.items():
        started = time.perf_counter()
        try:
            if case.enter:
                case.enter()
            for _ in range(spec["calls"]):
                case.call()
        except Exception as error:      # the robot cannot answer it (e.g. rank): noted
            errors[quantity] = f"{type(error).__name__}: {str(error).splitlines()[0][:120]}"
        finally:
            if case.leave:
                case.leave()
        seconds[quantity] = time.perf_counter() - started
    finished = time.perf_counter()
    print("RESULT " + json.dumps({"total_s": finished - STARTED, "load_s": loaded - STARTED,
                                  "calls_s": seconds, "errors": errors}))


def run_child(side, spec, cache):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as file:
        json.dump(spec, file)
    env = dict(os.environ, SOA_DYNAMICS_CACHE=str(cache))
    try:
        run = subprocess.run([sys.executable, str(pathlib.Path(__file__).resolve()), "--child",
                              side, file.name], capture_output=True, text=True, env=env,
                             timeout=3600)
    finally:
        pathlib.Path(file.name).unlink()
    lines = [line for line in run.stdout.splitlines() if line.startswith("RESULT ")]
    if run.returncode != 0 or not lines:
        raise RuntimeError(f"cold {side} process failed ({run.returncode}):\n{run.stderr[-3000:]}")
    return json.loads(lines[-1][len("RESULT "):])


# ---------------------------------------------------------------------------- parent
def spec_for(xml, calls, folder, name):
    """The URDF as a file both libraries read, and the workload (from a model with kernels
    off: nothing of it reaches the children's caches)."""
    path = pathlib.Path(folder) / f"{name}.urdf"
    path.write_text(xml)
    model = cases.load_ours(path)
    model.set_kernels("off")
    return {"urdf": str(path), "calls": calls, "workload": cases.workload_for(model, 1).as_dict()}


def measure_robot(index, total, name, source, xml, settings, priming_spec, folder):
    spec = spec_for(xml, settings.calls, folder, name)
    print(f"[bench] robot {index}/{total} {name} ({source}): cold runs, {settings.calls} calls "
          "of each quantity ...", flush=True)
    result = {"robot": name, "source": source, "dof": len(spec["workload"]["joint_names"]),
              "calls": settings.calls}
    with tempfile.TemporaryDirectory() as empty:
        result["ours, empty cache"] = run_child("ours", spec, empty)
    with tempfile.TemporaryDirectory() as primed:
        run_child("ours", priming_spec, primed)
        result["ours, robot not seen"] = run_child("ours", spec, primed)
    with tempfile.TemporaryDirectory() as unused:
        result["Pinocchio"] = run_child("pinocchio", spec, unused)
    theirs = result["Pinocchio"]["total_s"]
    print(f"[bench]   {name}: " + ", ".join(
        f"{variant} {result[variant]['total_s']:.2f} s" for variant in VARIANTS)
        + f"; ratio {result['ours, empty cache']['total_s'] / theirs:.2f} (empty cache), "
        f"{result['ours, robot not seen']['total_s'] / theirs:.2f} (robot not seen)", flush=True)
    return result


def table(results, settings):
    lines = [f"# {run_header('Cold start' + (' (quick smoke)' if settings.quick else ''))}", "",
             "A new process per column: imports, load of the URDF, then "
             f"{settings.calls} calls of each quantity of bench_dynamics.py (batches excluded), "
             "timed from the process's first line. *Empty cache*: `SOA_DYNAMICS_CACHE` a fresh "
             "directory. *Robot not seen*: the same after a process ran the workload on "
             f"{PRIMING_ROBOT} with that cache (shared compiled code cached, this robot's not). "
             "Pinocchio: its own process, its first route per quantity. Ratio = ours / "
             f"Pinocchio, target <= {cases.COLD_TARGET} (**bold** where missed).", "",
             "| robot | dof | ours, empty cache (s) | ours, robot not seen (s) | Pinocchio (s) "
             "| ratio, empty cache | ratio, robot not seen | ours: load (s) | slowest quantities "
             "(ours, s) |", "|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        theirs = r["Pinocchio"]["total_s"]
        ours, unseen = r["ours, empty cache"], r["ours, robot not seen"]
        slowest = sorted(ours["calls_s"].items(), key=lambda item: -item[1])[:3]
        lines.append(
            f"| {r['robot']} | {r['dof']} | {fmt(ours['total_s'])} | {fmt(unseen['total_s'])} "
            f"| {fmt(theirs)} | {ratio_cell(ours['total_s'], theirs, cases.COLD_TARGET)} "
            f"| {ratio_cell(unseen['total_s'], theirs, cases.COLD_TARGET)} "
            f"| {fmt(ours['load_s'])} | "
            + ", ".join(f"{quantity} {seconds:.2f}" for quantity, seconds in slowest) + " |")
    errors = [(r["robot"], variant, quantity, error) for r in results for variant in VARIANTS
              for quantity, error in r[variant]["errors"].items()]
    if errors:
        lines += ["", "Calls that raised (their time is counted up to the error):", ""]
        lines += [f"- {robot}, {variant}, {quantity}: {error}"
                  for robot, variant, quantity, error in errors]
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short smoke run (CI)")
    parser.add_argument("--robots", nargs="*", help="robot names (bench/cases.py ROBOTS)")
    parser.add_argument("--calls", type=int, default=300, help="calls of each quantity")
    parser.add_argument("--output", default=str(HERE / "results"), help="results directory")
    parser.add_argument("--child", nargs=2, metavar=("SIDE", "SPEC"), help=argparse.SUPPRESS)
    settings = parser.parse_args(argv)
    if settings.child:
        return child(*settings.child)
    if settings.quick:
        settings.calls = min(settings.calls, 10)
    robots = cases.robots(settings.quick, settings.robots)
    with tempfile.TemporaryDirectory() as folder:
        (_, _, priming_xml), = cases.robots(only=[PRIMING_ROBOT])
        priming_spec = spec_for(priming_xml, settings.calls, folder, PRIMING_ROBOT)
        results = [measure_robot(i + 1, len(robots), name, source, xml, settings, priming_spec,
                                 folder)
                   for i, (name, source, xml) in enumerate(robots)]
    text = table(results, settings)
    print()
    print(text)
    write_results(settings.output, "cold-quick" if settings.quick else "cold", text,
                  {"header": text.splitlines()[0][2:], "calls": settings.calls,
                   "results": results})


if __name__ == "__main__":
    main()
