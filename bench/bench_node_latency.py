#!/usr/bin/env python3
"""joint_states -> feedforward latency of the node at 1 kHz, and service round trips.

    .venv/bin/python bench/bench_node_latency.py [--robot panda] [--seconds 60] [--rounds 6] [--executor both]

Starts the node executable in its own process (as in production) and measures
it from two sides, each in the language of the client it stands for:

- The 1 kHz loop: bench/latency_probe.c, a C program on rcl in a process of its
  own (compiled on first use into build/bench/ by bench/latency_probe.py).  It
  stands where a controller stands (ros2_control is C++): one thread publishes
  stamped JointState on an absolute clock, another sleeps in rcl_wait and
  timestamps each ~/feedforward_state echo (it carries the joint state's
  stamp).  A Python probe charged its own executor wake-ups (0.1-0.2 ms) and
  the GIL contention between its publisher and its receiver to the node.
  Latency is publish -> node -> probe, two DDS hops; a missed cycle is a joint
  state that got no feedforward.
- The service round trips: Python (RosClient, in this process), as the
  planners that call those services are.

The same C probe against bench/echo_node.py (same executor and spin loop, no
model; this process's client running as during the node's run) gives the floor
of the set-up, against which the node's own share shows.  The node and the echo
node take turns (--rounds, each run seconds/rounds long) and each row pools
every state of its runs: this 2-core VM's host drifts over minutes (a floor
measured right after the node's minute read p99 0.8 to 1.3 ms on the same
code), and turns give both the same host.  Prints a table and writes
bench/results/node_latency.{md,json}.  Not a test: nothing here asserts a time.
"""
import argparse
import os
import pathlib
import sys
import tempfile
import time

import numpy as np

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "test"))
sys.path.insert(0, str(REPO / "bench"))
os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
os.environ.setdefault("ROS_DOMAIN_ID", str(150 + os.getpid() % 80))

from feedforward_probe import NodeCount  # noqa: E402
from latency_probe import ProbeError, build_probe, run_probe  # noqa: E402
from results_file import run_header, write_results  # noqa: E402
from support.ros_harness import RosClient, RosProcess  # noqa: E402
from soa_dynamics_ros.sim.clients import wait_for_compiled_kernels  # noqa: E402
from soa_dynamics_ros.ros.parameters import DEFAULT_EXECUTOR, DEFAULT_JOINT_STATES_DEPTH  # noqa: E402
from soa_dynamics_ros.ros.processes import ChildProcess  # noqa: E402
from soa_dynamics_ros import RobotModel  # noqa: E402
from soa_dynamics_ros.srv import GravityTorques  # noqa: E402


def _statistics(values_ms):
    values = np.asarray(values_ms)
    return {"median": float(np.median(values)), "p99": float(np.percentile(values, 99)),
            "max": float(values.max()), "mean": float(values.mean())}


def pooled_row(label, robot, rate, runs):
    """One table row from the runs (probe results with their latencies) of one set-up:
    counts summed, percentiles over every answered state of every run."""
    trips = [t for run in runs for t in run.get("service_trips_ms", [])]
    node_published = [run["node_published"] for run in runs if "node_published" in run]
    return {"executor": label, "robot": robot, "rate_hz": rate, "runs": len(runs),
            "seconds": sum(run["seconds"] for run in runs),
            "achieved_publish_rate_hz": round(float(np.mean(
                [run["achieved_publish_rate_hz"] for run in runs])), 1),
            **{key: sum(run[key] for run in runs) for key in ("published", "received", "missed")},
            "node_published_about": sum(node_published) if node_published else None,
            "latency_ms": _statistics([v for run in runs for v in run["latencies_ms"]]),
            "latency_p99_per_run_ms": [round(run["latency_ms"]["p99"], 3) for run in runs],
            "service_round_trip_ms": _statistics(trips) if trips else None}


def measure(executor, robot, seconds, rate, service_calls, log_dir, node_args=(), foreign=0):
    """One run of the node: the probe's result with its latencies, and the service
    round trips.  ``foreign``: that many more names in every joint state, joints the
    model lacks (as a Panda driver's finger joints beside an arm-only URDF)."""
    model = RobotModel.from_urdf(str(REPO / "urdf" / f"{robot}.urdf"))
    node = RosProcess("soa_dynamics_node", "--params-file", f"config/{robot}.yaml",
                      "-p", f"executor:={executor}", "-p", "marker_rate:=0.0", *node_args,
                      log_dir=log_dir, name=f"node_{executor}_{foreign}")
    client = RosClient(f"latency_bench_{executor}")
    try:
        try:
            gravity = client.client(GravityTorques, "/soa_dynamics/gravity_torques")
        except TimeoutError as error:
            raise RuntimeError(f"the node never came up ({error}); its log:\n{node.log()}") from None
        wait_for_compiled_kernels(client.node, 180.0)   # as in production, not the numpy path
        count = NodeCount(client.node)
        count.counting = True
        try:
            # The probe's warm-up waits for the node's first answer, then forgets it.
            probe = run_probe(model.joint_names + [f"not_in_model_{k}" for k in range(foreign)],
                              rate, seconds, latencies=True)
        except ProbeError as error:
            raise RuntimeError(f"{error}\nthe node's log:\n{node.log()}") from None
        time.sleep(1.2)   # one more diagnostics period covers the end of the run
        count.counting = False
        round_trips = []
        request = GravityTorques.Request()
        for _ in range(service_calls):
            started = time.perf_counter()
            client.call(gravity, request)
            round_trips.append(time.perf_counter() - started)
        return {**probe, "seconds": seconds, "node_published": count.published,
                "service_trips_ms": [t * 1e3 for t in round_trips]}
    finally:
        client.close()
        node.stop()


def measure_echo(executor, robot, seconds, rate, log_dir, node_args=()):
    """The floor: one run of bench/echo_node.py (no model) measured the same way."""
    model = RobotModel.from_urdf(str(REPO / "urdf" / f"{robot}.urdf"))
    echo = ChildProcess([sys.executable, str(REPO / "bench" / "echo_node.py"), "--ros-args",
                         "-p", f"executor:={executor}", *node_args],
                        pathlib.Path(log_dir) / "echo.log")
    # The set-up of measure(): this process's client, spinning and listening to
    # /diagnostics while the probe runs.  It costs the 2-core VM's p99 about 0.1 ms
    # (three 30 s runs each way, 2026-11-26: echo 0.48 -> 0.58 ms, node 0.54 ->
    # 0.71 ms); a floor measured without it had charged that to the node.
    client = RosClient(f"latency_bench_echo_{executor}")
    try:
        NodeCount(client.node).counting = True    # (the echo node publishes no diagnostics)
        try:
            # The probe's warm-up waits until the echo node answers.
            probe = run_probe(model.joint_names, rate, seconds, latencies=True)
        except ProbeError as error:
            raise RuntimeError(f"{error}\nthe echo node's log:\n{echo.log()}") from None
        return {**probe, "seconds": seconds}
    finally:
        client.close()
        echo.stop()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--robot", default="panda")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--rate", type=float, default=1000.0)
    parser.add_argument("--service-calls", type=int, default=1000)
    parser.add_argument("--executor", choices=["events", "single_threaded", "both"], default="both")
    parser.add_argument("--quick", action="store_true",
                        help="2 s and 100 calls in one round: a smoke run")
    parser.add_argument("--no-floor", action="store_true",
                        help="skip the echo node that measures the floor of the set-up")
    parser.add_argument("--depth", type=int, default=None,
                        help="joint_states queue depth of the node and the echo node "
                             "(default: the node's own default)")
    parser.add_argument("--foreign-joints", type=int, default=2,
                        help="a row more (default executor) with joint states naming that many "
                             "joints the model lacks; 0: none")
    parser.add_argument("--rounds", type=int, default=6,
                        help="the node and the echo node take turns this many times, "
                             "seconds/rounds each; the rows pool every state of their runs")
    parser.add_argument("--output", default=str(REPO / "bench" / "results"),
                        help="directory for the table (.md) and the figures (.json)")
    args = parser.parse_args()
    if args.quick:
        args.seconds, args.service_calls, args.rounds = 2.0, 100, 1
    if args.rounds < 1:
        parser.error(f"--rounds must be at least 1, not {args.rounds}")
    executors = ["events", "single_threaded"] if args.executor == "both" else [args.executor]
    node_args = [] if args.depth is None else ["-p", f"joint_states_depth:={args.depth}"]
    print(f"[bench] measuring probe: {build_probe()}", flush=True)   # a build error stops us here
    rounds = args.rounds
    seconds, calls = args.seconds / rounds, max(1, args.service_calls // rounds)
    results = []
    with tempfile.TemporaryDirectory() as log_dir:
        for executor in executors:
            node_runs, echo_runs = [], []
            for turn in range(rounds):
                print(f"[bench] {executor}, round {turn + 1}/{rounds}: {seconds:g} s of joint "
                      f"states at {args.rate:g} Hz, then {calls} service calls", flush=True)
                node_runs.append(measure(executor, args.robot, seconds, args.rate, calls,
                                         log_dir, node_args))
                if not args.no_floor:
                    print(f"[bench] {executor}, round {turn + 1}/{rounds}: the same with an echo "
                          "node (no model)", flush=True)
                    echo_runs.append(measure_echo(executor, args.robot, seconds, args.rate,
                                                  log_dir, node_args))
            results.append(pooled_row(executor, args.robot, args.rate, node_runs))
            if echo_runs:
                results.append(pooled_row(f"{executor}, echo node (floor)", args.robot, args.rate,
                                          echo_runs))
        if args.foreign_joints:
            print(f"[bench] {DEFAULT_EXECUTOR}: joint states also naming {args.foreign_joints} "
                  "joints the model lacks", flush=True)
            run = measure(DEFAULT_EXECUTOR, args.robot, seconds, args.rate, calls, log_dir,
                          node_args, args.foreign_joints)
            results.append(pooled_row(f"{DEFAULT_EXECUTOR}, {args.foreign_joints} joints not in "
                                      "the model", args.robot, args.rate, [run]))
    header = run_header(f"node latency, {args.robot}")
    lines = [f"# {header}", "",
             "| executor | joint_states depth | published | rate [Hz] | missed | latency median [ms] "
             "| p99 [ms] | max [ms] | p99 of each run [ms] | service median [ms] | service p99 [ms] |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    depth = DEFAULT_JOINT_STATES_DEPTH if args.depth is None else args.depth
    for r in results:
        trips = r["service_round_trip_ms"]
        services = (f"{trips['median']:.3f} | {trips['p99']:.3f}" if trips else "- | -")
        lines.append(f"| {r['executor']} | {depth} | {r['published']} | {r['achieved_publish_rate_hz']} | "
                     f"{r['missed']} | {r['latency_ms']['median']:.3f} | {r['latency_ms']['p99']:.3f} | "
                     f"{r['latency_ms']['max']:.3f} | "
                     f"{', '.join(f'{p:.2f}' for p in r['latency_p99_per_run_ms'])} | {services} |")
    table = "\n".join(lines)
    print(table)
    write_results(args.output, "node_latency", table,
                  {"header": header, "joint_states_depth": depth, "results": results})


if __name__ == "__main__":
    main()
