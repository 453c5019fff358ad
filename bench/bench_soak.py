#!/usr/bin/env python3
"""Load and soak: 1 kHz joint states plus a sustained mixed service load on the node.

    .venv/bin/python bench/bench_soak.py --minutes 10 [--robot panda] [--requests-per-second 200]

The node runs as its own process; this script publishes joint states at the
rate given, runs several client processes that call a mix of services at the
requested total rate, and samples the node's memory (VmRSS) every second.  At
the end it prints: joint states published, feedforward messages received,
missed cycles, latency percentiles, service calls answered/failed, RSS at start
and end and its growth per minute, and whether the node is still alive; and
writes bench/results/soak.{md,json}.  Not a test (bounded in count and time,
local DDS only); `--quick` runs 15 s for CI.
"""
import argparse
import multiprocessing
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
os.environ.setdefault("ROS_DOMAIN_ID", str(20 + os.getpid() % 70))

from results_file import run_header, write_results  # noqa: E402


def rss_kib(pid):
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def service_client(index, rate, seconds, queue):
    """One client process: a round-robin of services at ``rate`` calls/s."""
    from support.ros_harness import RosClient
    from sensor_msgs.msg import JointState
    from soa_dynamics_ros.msg import Constraint
    from soa_dynamics_ros.srv import (GravityTorques, HybridDynamics, InverseDynamics, MassMatrix,
                                      TaskSpaceInertia)
    client = RosClient(f"soak_client_{index}")
    try:
        calls = [
            (client.client(GravityTorques, "/soa_dynamics/gravity_torques"), GravityTorques.Request()),
            (client.client(InverseDynamics, "/soa_dynamics/inverse_dynamics"), InverseDynamics.Request()),
            (client.client(MassMatrix, "/soa_dynamics/mass_matrix"), MassMatrix.Request()),
            (client.client(TaskSpaceInertia, "/soa_dynamics/task_space_inertia"),
             TaskSpaceInertia.Request(frame=os.environ["SOAK_FRAME"], damping=1e-6)),
            (client.client(HybridDynamics, "/soa_dynamics/hybrid_dynamics"),
             HybridDynamics.Request(constraints=[Constraint(frame=os.environ["SOAK_FRAME"],
                                                            alpha=[0, 0, 1, 0, 0, 0], beta=[0.0])])),
            # A bad request in the mix: it must be answered, not crash anything.
            (client.client(GravityTorques, "/soa_dynamics/gravity_torques"),
             GravityTorques.Request(state=JointState(name=["nope"], position=[0.0]))),
        ]
        answered = failed = timeouts = 0
        period, start = 1.0 / rate, time.monotonic()
        i = 0
        while time.monotonic() - start < seconds:
            target = start + i * period
            delay = target - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            service, request = calls[i % len(calls)]
            try:
                answer = client.call(service, request, timeout=5.0)
                answered += 1
                failed += (not answer.success) and i % len(calls) != len(calls) - 1
            except TimeoutError:
                timeouts += 1
            i += 1
        queue.put({"answered": answered, "unexpected_failures": failed, "timeouts": timeouts})
    finally:
        client.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--robot", default="panda")
    parser.add_argument("--frame", default=None, help="task-space frame (default: the config's marker frame)")
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--rate", type=float, default=1000.0, help="joint states per second")
    parser.add_argument("--requests-per-second", type=float, default=200.0)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--quick", action="store_true", help="15 s smoke run")
    parser.add_argument("--output", default=str(REPO / "bench" / "results"),
                        help="directory for the table (.md) and the figures (.json)")
    args = parser.parse_args()
    seconds = 15.0 if args.quick else args.minutes * 60
    frames = {"panda": "panda_hand_tcp", "ur5": "tool0", "dual_arm_torso": "l_gripper_tool_frame",
              "double_pendulum": "tip"}
    os.environ["SOAK_FRAME"] = args.frame or frames.get(args.robot, "")

    from feedforward_probe import FeedforwardProbe
    from support.ros_harness import RosClient, RosProcess
    from soa_dynamics_ros import RobotModel

    model = RobotModel.from_urdf(str(REPO / "urdf" / f"{args.robot}.urdf"))
    with tempfile.TemporaryDirectory() as log_dir:
        node = RosProcess("soa_dynamics_node", "--params-file", f"config/{args.robot}.yaml",
                          "-p", "marker_rate:=0.0", log_dir=log_dir, name="soak_node")
        publisher_side = RosClient("soak_publisher")
        probe = FeedforwardProbe(publisher_side, model.joint_names)
        if not probe.wait_until_answered():
            sys.exit(f"[soak] the node never answered; its log:\n{node.log()}")

        queue = multiprocessing.get_context("spawn").Queue()
        per_client = args.requests_per_second / args.clients
        clients = [multiprocessing.get_context("spawn").Process(
            target=service_client, args=(i, per_client, seconds, queue)) for i in range(args.clients)]
        for process in clients:
            process.start()
        print(f"[soak] {args.robot}: {seconds:.0f} s, joint states at {args.rate:g} Hz, "
              f"{args.requests_per_second:g} requests/s from {args.clients} clients", flush=True)
        memory = [(0.0, rss_kib(node.pid))]

        def sample_memory(elapsed):
            memory.append((elapsed, rss_kib(node.pid)))
            if int(elapsed) % 30 == 0 or args.quick:
                print(f"[soak] {elapsed:5.0f} s: node RSS {memory[-1][1]} KiB, "
                      f"{len(probe.received)} feedforward received", flush=True)

        probe.run(seconds, args.rate, sample_memory)
        time.sleep(1.0)
        client_results = [queue.get(timeout=60) for _ in clients]
        for process in clients:
            process.join(timeout=30)
        alive = node.alive()
        publisher_side.close()
        code = node.stop()

    rss = np.array([(t, kib) for t, kib in memory if kib is not None], dtype=float)
    # Growth from a straight-line fit after the first minute (allocator warm-up excluded).
    settled = rss[rss[:, 0] >= min(60.0, seconds / 4)]
    growth = float(np.polyfit(settled[:, 0] / 60, settled[:, 1], 1)[0]) if len(settled) > 2 else 0.0
    result = {
        "robot": args.robot, "seconds": seconds, "joint_state_rate_hz": args.rate,
        "requests_per_second": args.requests_per_second, "clients": args.clients,
        **probe.summary(),
        "service_calls_answered": sum(r["answered"] for r in client_results),
        "service_unexpected_failures": sum(r["unexpected_failures"] for r in client_results),
        "service_timeouts": sum(r["timeouts"] for r in client_results),
        "rss_kib_start": int(rss[0, 1]), "rss_kib_end": int(rss[-1, 1]),
        "rss_growth_kib_per_minute": growth, "node_alive_at_end": alive, "node_exit_code": code,
    }
    header = run_header(f"soak, {args.robot}")
    table = "\n".join([f"# {header}", ""] + [f"- {key}: {value}" for key, value in result.items()])
    print(table)
    write_results(args.output, "soak", table, {"header": header, "result": result})
    return 0 if alive and code == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
