#!/usr/bin/env python3
"""How long the largest accepted request of each service holds the node's feedforward path.

    .venv/bin/python bench/bench_request_gaps.py [--repeats 10] [--rate 1000]
    .venv/bin/python bench/bench_request_gaps.py --flood 4 [--seconds 20]

The node runs as its own process on the Panda (config/panda.yaml) with its
compiled kernels (waited for, as in production).  This script publishes joint
states at ``--rate`` from one thread and timestamps every
``~/feedforward_state`` echo on arrival; meanwhile, from a second rclpy
context in this process, it sends the largest request each service accepts
(test/support/request_bounds.py: 16 constraints / 48 rows and 64 wrenches, 1000
trajectory points with 8 request payloads, ...) ``--repeats`` times each, one
at a time.  Per service it reports the longest gap between consecutive
feedforward messages overlapping one of its requests, and the round trips.
A gap is measured in this Python process: it includes the probe's own
scheduling (the floor is the gap with no request, reported as "none").
Writes bench/results/request_gaps.{md,json}.  Not a test: nothing here
asserts a time.

``--flood N``: N client processes instead, each calling the largest accepted
requests in rotation, back to back (the next as soon as the last is answered),
for ``--seconds``; reports the share of joint states answered, the longest
gap and the requests served (bench/results/request_flood.{md,json}).
"""
import argparse
import os
import pathlib
import sys
import tempfile
import threading
import time

import numpy as np

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "test"))
sys.path.insert(0, str(REPO / "bench"))
os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
os.environ.setdefault("ROS_DOMAIN_ID", str(20 + os.getpid() % 70))

from feedforward_probe import FeedforwardProbe  # noqa: E402
from results_file import run_header, write_results  # noqa: E402
from support.request_bounds import longest_gap, maximal_requests  # noqa: E402
from support.request_flood import (CALL_TIMEOUT, PANDA_FRAME as FRAME, PANDA_JOINTS,  # noqa: E402
                                   PANDA_LINKS as LINKS, PANDA_POSE as POSE, RequestFlood)
from support.ros_harness import RosClient, RosProcess  # noqa: E402
from soa_dynamics_ros import RobotModel  # noqa: E402
from soa_dynamics_ros.sim.clients import wait_for_compiled_kernels  # noqa: E402


def send_requests(client, requests, repeats, pause):
    """Each request ``repeats`` times: {service: [(start, end, round trip, success, message)]}."""
    windows = {}
    for service, service_type, request in requests:
        handle = client.client(service_type, f"/soa_dynamics/{service}")
        for _ in range(repeats):
            time.sleep(pause)       # the stream settles between requests: one gap per request
            start = time.monotonic()
            answer = client.call(handle, request, timeout=60.0)
            end = time.monotonic()
            windows.setdefault(service, []).append((start, end, end - start, answer.success,
                                                    answer.message))
    return windows


def flood(args, node_log):
    """Joint states at ``args.rate`` while ``args.flood`` client processes send requests."""
    publisher_side = RosClient("flood_publisher")
    requester = RosClient("flood_requester")
    clients = RequestFlood(args.flood, args.seconds)
    try:
        probe = FeedforwardProbe(publisher_side, PANDA_JOINTS)
        if not probe.wait_until_answered(timeout=60.0):
            sys.exit(f"[flood] the node never answered; its log:\n{node_log()}")
        wait_for_compiled_kernels(requester.node, 180.0)   # as in production
        clients.start()
        time.sleep(3.0)       # the clients' discovery; their flood has begun
        start = time.monotonic()
        achieved = probe.run(args.seconds - 4.0, args.rate)
        end = time.monotonic()
        counts = clients.finish()
    finally:
        clients.stop()
        requester.close()
        publisher_side.close()
    arrivals = sorted(probe.arrivals)
    summary = probe.summary()
    return {"clients": args.flood, "seconds": end - start, "states_per_second": achieved,
            "states": summary["published"], "answered": summary["received"],
            "answered_share": summary["received"] / max(summary["published"], 1),
            "longest_gap_ms": longest_gap(arrivals, start + 0.5, end - 1.5) * 1e3,
            "latency_ms": summary["latency_ms"],
            **counts}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=10, help="requests per service")
    parser.add_argument("--rate", type=float, default=1000.0, help="joint states per second")
    parser.add_argument("--quick", action="store_true", help="2 requests per service: a smoke run")
    parser.add_argument("--output", default=str(REPO / "bench" / "results"),
                        help="directory for the table (.md) and the figures (.json)")
    parser.add_argument("--flood", type=int, default=0, metavar="CLIENTS",
                        help="client processes flooding the largest requests instead")
    parser.add_argument("--seconds", type=float, default=20.0, help="length of a --flood run")
    parser.add_argument("--joint-states-depth", type=int, default=None,
                        help="the node's joint_states_depth (default: the node's default)")
    args = parser.parse_args()
    if args.quick:
        args.repeats = 2
        args.seconds = 8.0
    if args.flood:
        return main_flood(args)
    model = RobotModel.from_urdf(str(REPO / "urdf" / "panda.urdf"))
    requests = maximal_requests(model.joint_names, POSE, FRAME, LINKS)
    pause = 0.1
    with tempfile.TemporaryDirectory() as log_dir:
        node = RosProcess("soa_dynamics_node", "--params-file", "config/panda.yaml",
                          "-p", "marker_rate:=0.0", log_dir=log_dir, name="gaps_node")
        publisher_side = RosClient("gaps_publisher")
        requester = RosClient("gaps_requester")
        stop = threading.Event()
        try:
            probe = FeedforwardProbe(publisher_side, model.joint_names)
            if not probe.wait_until_answered(timeout=60.0):
                sys.exit(f"[gaps] the node never answered; its log:\n{node.log()}")
            stream = threading.Thread(target=probe.run, args=(3600.0, args.rate),
                                      kwargs={"stop": stop}, daemon=True)
            stream.start()
            wait_for_compiled_kernels(requester.node, 180.0)   # as in production
            print(f"[gaps] joint states at {args.rate:g} Hz; {args.repeats} maximal requests "
                  f"per service", flush=True)
            quiet_start = time.monotonic()
            time.sleep(1.0)
            quiet = (quiet_start, time.monotonic())
            windows = send_requests(requester, requests, args.repeats, pause)
            time.sleep(0.5)
        finally:
            stop.set()
            requester.close()
            publisher_side.close()
            code = node.stop()
    arrivals = sorted(probe.arrivals)
    results = [{"service": "none (1 s, no request)", "requests": 0,
                "longest_gap_ms": longest_gap(arrivals, *quiet) * 1e3,
                "round_trip_ms": None, "failures": 0}]
    for service, calls in windows.items():
        trips = np.array([c[2] for c in calls]) * 1e3
        failures = [c[4] for c in calls if not c[3]]
        results.append({"service": service, "requests": len(calls),
                        "longest_gap_ms": max(longest_gap(arrivals, c[0], c[1]) for c in calls) * 1e3,
                        "round_trip_ms": {"median": float(np.median(trips)), "max": float(trips.max())},
                        "failures": len(failures), "failure_messages": failures[:1]})
    header = (run_header("request gaps, panda") + f", joint states at {args.rate:g} Hz, "
              f"compiled kernels, node exit code {code}")
    lines = [f"# {header}", "",
             "| service (largest accepted request) | requests | failed | longest feedforward gap [ms] "
             "| round trip median [ms] | round trip max [ms] |",
             "|---|---|---|---|---|---|"]
    for r in results:
        trip = r["round_trip_ms"]
        trips = f"{trip['median']:.1f} | {trip['max']:.1f}" if trip else "- | -"
        lines.append(f"| {r['service']} | {r['requests']} | {r['failures']} | "
                     f"{r['longest_gap_ms']:.1f} | {trips} |")
    table = "\n".join(lines)
    print(table)
    write_results(args.output, "request_gaps", table, {"header": header, "results": results})
    failed = any(r["failures"] for r in results)
    return 0 if code == 0 and not failed else 1


def main_flood(args):
    with tempfile.TemporaryDirectory() as log_dir:
        depth = [] if args.joint_states_depth is None else [
            "-p", f"joint_states_depth:={args.joint_states_depth}"]
        node = RosProcess("soa_dynamics_node", "--params-file", "config/panda.yaml",
                          "-p", "marker_rate:=0.0", *depth, log_dir=log_dir, name="flood_node")
        try:
            result = flood(args, node.log)
        finally:
            code = node.stop()
    header = (run_header("request flood, panda") + f", joint states at {args.rate:g} Hz, "
              f"{args.flood} client processes, joint_states_depth "
              f"{args.joint_states_depth or 'default'}, compiled kernels, node exit code {code}")
    latency = result["latency_ms"] or {"median": float("nan"), "max": float("nan")}
    table = "\n".join([
        f"# {header}", "",
        "| figure | value |", "|---|---|",
        f"| flood length [s] | {result['seconds']:.1f} |",
        f"| joint states sent (rate achieved) | {result['states']} ({result['states_per_second']:.0f}/s) |",
        f"| feedforward answers received | {result['answered']} ({result['answered_share']:.1%}) |",
        f"| longest feedforward gap [ms] | {result['longest_gap_ms']:.1f} |",
        f"| feedforward latency median / max [ms] | {latency['median']:.2f} / {latency['max']:.1f} |",
        f"| requests answered successfully / failed / unanswered within "
        f"{CALL_TIMEOUT:g} s | {result['served']} / {result['failed']} / {result['unanswered']} |"])
    print(table)
    write_results(args.output, "request_flood", table, {"header": header, "result": result})
    return 0 if code == 0 and not result["failed"] else 1


if __name__ == "__main__":
    sys.exit(main())
