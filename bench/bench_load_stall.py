#!/usr/bin/env python3
"""How long a large description's load in the background stalls the serving thread.

    .venv/bin/python bench/bench_load_stall.py [--joints 3000]

A node loads a new description in a worker thread (ModelHost.load, as its
DescriptionLoader does) while its executor thread serves joint states.  Here
the worker loads the Panda with a chain of ``--joints`` revolute joints hung
from its hand (kernels as the node uses them: the generic compiled module),
while this thread sleeps 1 ms at a time and records each wake-up: a gap far
above 1 ms is the time the load held the GIL (or the machine's scheduling:
"none" is the same loop without a load).  Writes bench/results/load_stall.{md,json}.
Not a test: nothing here asserts a time.
"""
import argparse
import pathlib
import sys
import threading
import time

import numpy as np

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "test"))
sys.path.insert(0, str(REPO / "bench"))

from results_file import run_header, write_results  # noqa: E402
from soa_dynamics_ros.embedded.model_host import TOPIC, ModelHost  # noqa: E402
from soa_dynamics_ros.ros.parameters import PARAMETERS  # noqa: E402

CHAIN_LINK = ('<joint name="chain{k}" type="revolute"><parent link="{parent}"/>'
              '<child link="chain_link{k}"/><origin xyz="0 0 0.01"/><axis xyz="0 1 0"/>'
              '<limit lower="-1" upper="1" effort="10" velocity="1"/></joint>'
              '<link name="chain_link{k}"><inertial><mass value="0.01"/><inertia ixx="1e-6" '
              'ixy="0" ixz="0" iyy="1e-6" iyz="0" izz="1e-6"/></inertial></link>')


class Quiet:
    def info(self, _):
        pass

    warning = error = info


def panda_with_chain(joints):
    parents = ["panda_link8"] + [f"chain_link{k}" for k in range(joints - 1)]
    chain = "".join(CHAIN_LINK.format(k=k, parent=parent) for k, parent in enumerate(parents))
    return (REPO / "urdf" / "panda.urdf").read_text().replace("</robot>", chain + "</robot>")


def wake_up_gaps(busy, started):
    """Gaps [s] between 1 ms sleeps from ``started`` until ``busy()`` turns False (one at least:
    a load that never lets this thread run is one gap, the whole load)."""
    gaps, last = [], started
    while True:
        time.sleep(0.001)
        now = time.perf_counter()
        gaps.append(now - last)
        last = now
        if not busy():
            return np.array(gaps)


def figures(name, gaps, seconds=None):
    return {"case": name, "load_s": seconds, "wake_ups": int(gaps.size),
            "max_gap_ms": float(gaps.max() * 1e3), "p99_gap_ms": float(np.percentile(gaps, 99) * 1e3),
            "gaps_over_50ms": int((gaps > 0.05).sum())}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--joints", type=int, default=3000, help="joints of the chain on the Panda")
    parser.add_argument("--quick", action="store_true", help="a 300-joint chain: a smoke run")
    parser.add_argument("--output", default=str(REPO / "bench" / "results"),
                        help="directory for the table (.md) and the figures (.json)")
    args = parser.parse_args()
    if args.quick:
        args.joints = 300
    config = {name: spec.default for name, spec in PARAMETERS.items()}
    config.update(package_paths=[], command_joints=[], payloads=[])
    host = ModelHost(config, Quiet())
    description = panda_with_chain(args.joints)
    quiet_start = time.perf_counter()
    results = [figures("none (2 s, no load)",
                       wake_up_gaps(lambda: time.perf_counter() < quiet_start + 2.0, quiet_start))]
    outcome = {}

    def load():
        started = time.perf_counter()
        try:
            model, _ = host.load(description, TOPIC)
            outcome["kernels"] = model.kernels
        except Exception as error:  # noqa: BLE001 - reported in the table
            outcome["error"] = f"{type(error).__name__}: {error}"
        outcome["seconds"] = time.perf_counter() - started
    worker = threading.Thread(target=load)
    started = time.perf_counter()
    worker.start()
    gaps = wake_up_gaps(worker.is_alive, started)
    worker.join()
    host.close()
    results.append(figures(f"Panda + {args.joints}-joint chain ({len(description) / 2**20:.1f} MiB)",
                           gaps, outcome["seconds"]))
    header = (run_header("background load stall") + f", kernels {outcome.get('kernels')}"
              + (f", load failed: {outcome['error']}" if "error" in outcome else ""))
    lines = [f"# {header}", "",
             "| load in the worker thread | load [s] | wake-ups | longest gap [ms] | p99 gap [ms] "
             "| gaps over 50 ms |", "|---|---|---|---|---|---|"]
    for r in results:
        load_s = "-" if r["load_s"] is None else f"{r['load_s']:.2f}"
        lines.append(f"| {r['case']} | {load_s} | {r['wake_ups']} | {r['max_gap_ms']:.1f} | "
                     f"{r['p99_gap_ms']:.1f} | {r['gaps_over_50ms']} |")
    table = "\n".join(lines)
    print(table)
    write_results(args.output, "load_stall", table, {"header": header, "results": results})
    return 0 if "error" not in outcome else 1


if __name__ == "__main__":
    sys.exit(main())
