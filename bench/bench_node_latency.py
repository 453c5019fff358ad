#!/usr/bin/env python3
"""joint_states -> feedforward latency of the node at 1 kHz, and service round trips.

    .venv/bin/python bench/bench_node_latency.py [--robot panda] [--seconds 60] [--executor both]

Starts the node executable in its own process (as in production), publishes
JointState at the given rate from this process, and timestamps each
~/feedforward_state echo (it carries the joint state's stamp).  Latency is
publish -> node -> this process, so it includes two DDS hops.  A missed cycle
is a joint state that got no feedforward.  Prints a table and writes
bench/results/node_latency.{md,json}.  Not a test: nothing here asserts a time.
"""
import argparse
import json
import os
import pathlib
import platform
import sys
import tempfile
import time

import numpy as np

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "test"))
sys.path.insert(0, str(REPO / "bench"))
os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
os.environ.setdefault("ROS_DOMAIN_ID", str(150 + os.getpid() % 80))

from feedforward_probe import FeedforwardProbe  # noqa: E402
from ros_harness import RosClient, RosProcess  # noqa: E402
from soa_dynamics_ros.demo import wait_for_compiled_kernels  # noqa: E402
from soa_dynamics_ros.processes import ChildProcess  # noqa: E402
from soa_dynamics_ros import RobotModel  # noqa: E402
from soa_dynamics_ros.srv import GravityTorques  # noqa: E402


def measure(executor, robot, seconds, rate, service_calls, log_dir, node_args=()):
    model = RobotModel.from_urdf(str(REPO / "urdf" / f"{robot}.urdf"))
    node = RosProcess("soa_dynamics_node", "--params-file", f"config/{robot}.yaml",
                      "-p", f"executor:={executor}", "-p", "marker_rate:=0.0", *node_args,
                      log_dir=log_dir, name=f"node_{executor}")
    client = RosClient(f"latency_bench_{executor}")
    try:
        gravity = client.client(GravityTorques, "/soa_dynamics/gravity_torques")
        probe = FeedforwardProbe(client, model.joint_names)
        if not probe.wait_until_answered():
            raise RuntimeError(f"the node never answered; its log:\n{node.log()}")
        wait_for_compiled_kernels(client.node, 180.0)   # as in production, not the numpy path
        probe.wait_until_answered()
        achieved_rate = probe.run(seconds, rate)
        time.sleep(0.5)
        round_trips = []
        request = GravityTorques.Request()
        for _ in range(service_calls):
            started = time.perf_counter()
            client.call(gravity, request)
            round_trips.append(time.perf_counter() - started)
        trips = np.array(round_trips) * 1e3
        return {"executor": executor, "robot": robot, "seconds": seconds, "rate_hz": rate,
                "achieved_publish_rate_hz": round(achieved_rate, 1), **probe.summary(),
                "service_round_trip_ms": {"median": float(np.median(trips)),
                                          "p99": float(np.percentile(trips, 99))}}
    finally:
        client.close()
        node.stop()


def measure_echo(executor, robot, seconds, rate, log_dir):
    """The floor: bench/echo_node.py (no model) measured the same way."""
    model = RobotModel.from_urdf(str(REPO / "urdf" / f"{robot}.urdf"))
    echo = ChildProcess([sys.executable, str(REPO / "bench" / "echo_node.py"), "--ros-args",
                         "-p", f"executor:={executor}"], pathlib.Path(log_dir) / "echo.log")
    client = RosClient(f"latency_echo_{executor}")
    try:
        probe = FeedforwardProbe(client, model.joint_names)
        if not probe.wait_until_answered():
            raise RuntimeError(f"the echo node never answered; its log:\n{echo.log()}")
        achieved_rate = probe.run(seconds, rate)
        time.sleep(0.5)
        return {"executor": f"{executor}, echo node (floor)", "robot": robot, "seconds": seconds,
                "rate_hz": rate, "achieved_publish_rate_hz": round(achieved_rate, 1),
                **probe.summary(), "service_round_trip_ms": None}
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
    parser.add_argument("--quick", action="store_true", help="2 s and 100 calls: a smoke run")
    parser.add_argument("--no-floor", action="store_true",
                        help="skip the echo node that measures the floor of the set-up")
    parser.add_argument("--node-arg", action="append", default=[], metavar="ARG",
                        help="extra --ros-args for the node, e.g. --node-arg=-p "
                             "--node-arg=joint_states_depth:=10")
    parser.add_argument("--output", default=str(REPO / "bench" / "results"),
                        help="directory for the table (.md) and the figures (.json)")
    args = parser.parse_args()
    if args.quick:
        args.seconds, args.service_calls = 2.0, 100
    executors = ["events", "single_threaded"] if args.executor == "both" else [args.executor]
    results = []
    with tempfile.TemporaryDirectory() as log_dir:
        for executor in executors:
            print(f"[bench] {executor}: {args.seconds:g} s of joint states at {args.rate:g} Hz, "
                  f"then {args.service_calls} service calls", flush=True)
            results.append(measure(executor, args.robot, args.seconds, args.rate,
                                   args.service_calls, log_dir, args.node_arg))
            if not args.no_floor:
                print(f"[bench] {executor}: the same with an echo node (no model)", flush=True)
                results.append(measure_echo(executor, args.robot, args.seconds, args.rate, log_dir))
    header = (f"node latency, {args.robot}, {time.strftime('%Y-%m-%d')}, "
              f"{platform.node()} ({os.cpu_count()} cores, Python {platform.python_version()})")
    lines = [f"# {header}", "",
             "| executor | published | rate [Hz] | missed | latency median [ms] | p99 [ms] | max [ms] "
             "| service median [ms] | service p99 [ms] |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        trips = r["service_round_trip_ms"]
        services = (f"{trips['median']:.3f} | {trips['p99']:.3f}" if trips else "- | -")
        lines.append(f"| {r['executor']} | {r['published']} | {r['achieved_publish_rate_hz']} | "
                     f"{r['missed']} | {r['latency_ms']['median']:.3f} | {r['latency_ms']['p99']:.3f} | "
                     f"{r['latency_ms']['max']:.3f} | {services} |")
    table = "\n".join(lines)
    print(table)
    out = pathlib.Path(args.output) / "node_latency"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".md").write_text(table + "\n")
    out.with_suffix(".json").write_text(json.dumps({"header": header, "results": results}, indent=2))
    print(f"[bench] written to {out.with_suffix('.md')} and .json")


if __name__ == "__main__":
    main()
