"""The largest request every node service accepts, one past each bound, and feedforward gaps.

Shared by test/test_node_robustness.py and bench/bench_request_gaps.py, so
that the test and the benchmark send the same requests.  The sizes come from
soa_dynamics_ros/ros/conversions.py (compiled kernels assumed for trajectories).
"""
import threading
import time

import numpy as np
from geometry_msgs.msg import Vector3, Wrench
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from soa_dynamics_ros.ros import conversions
from soa_dynamics_ros.ros.stamps import stamp_nanoseconds
from soa_dynamics_ros.sim.clients import wait_for_compiled_kernels
from .waiting import wait_for
from soa_dynamics_ros.msg import Constraint, LinkWrench
from soa_dynamics_ros.srv import (DynamicsDerivatives, EvaluateTrajectory, ForwardDynamics,
                                  HybridDynamics, InverseDynamics, MixedDynamics, SetPayload,
                                  TaskSpaceInertia)


def _state(names, pose):
    return JointState(name=list(names), position=list(pose), velocity=[0.1] * len(names))


def _wrenches(links, count):
    return [LinkWrench(link=links[i % len(links)],
                       wrench=Wrench(force=Vector3(x=1.0, y=-2.0, z=0.5 * i),
                                     torque=Vector3(x=0.1, y=0.0, z=-0.2)))
            for i in range(count)]


def _constraints(frames, count, rows_each):
    """``count`` constraints of ``rows_each`` rows each (alpha column-major, 6 x m)."""
    alpha = np.eye(6)[:, :rows_each].T.ravel().tolist()
    return [Constraint(frame=frames[i % len(frames)], alpha=alpha, beta=[0.0] * rows_each)
            for i in range(count)]


def _trajectory(names, pose, points):
    result = JointTrajectory(joint_names=list(names))
    for i in range(points):
        point = JointTrajectoryPoint(positions=[p + 0.2 * np.sin(1e-3 * i) for p in pose])
        point.time_from_start.sec, point.time_from_start.nanosec = divmod(i * 1_000_000, 10**9)
        result.points.append(point)
    return result


def _payload(name):
    return conversions.payload_message(name, "panda_link7", 1.5, [0.0, 0.0, 0.05], np.eye(3) * 0.01)


def maximal_requests(names, pose, frame, links):
    """(service, type, request): the largest request of each service the node accepts.

    Constraints: the most constraints (16) and, with 3 rows each, the most rows (48).
    Derivatives: the forward ones, the costliest kind (they include the inverse ones and M^-1).
    """
    state = _state(names, pose)
    dof = len(names)
    return [
        ("hybrid_dynamics", HybridDynamics, HybridDynamics.Request(
            state=state, constraints=_constraints(links, conversions.MAX_CONSTRAINTS,
                                                  conversions.MAX_CONSTRAINT_ROWS
                                                  // conversions.MAX_CONSTRAINTS),
            feedforward_torque=[0.5] * dof, wrenches=_wrenches(links, conversions.MAX_WRENCHES))),
        ("evaluate_trajectory", EvaluateTrajectory, EvaluateTrajectory.Request(
            trajectory=_trajectory(names, pose, conversions.MAX_TRAJECTORY_POINTS),
            payloads=[_payload(f"box{i}") for i in range(conversions.MAX_REQUEST_PAYLOADS)])),
        ("task_space_inertia", TaskSpaceInertia, TaskSpaceInertia.Request(
            state=state, frame=frame, damping=1e-6, joints=list(names))),
        ("mixed_dynamics", MixedDynamics, MixedDynamics.Request(
            state=state, prescribed=list(names[: dof // 2]), acceleration=[0.3] * dof,
            effort=[1.0] * dof)),
        ("inverse_dynamics", InverseDynamics, InverseDynamics.Request(
            state=state, acceleration=[0.3] * dof, wrenches=_wrenches(links, conversions.MAX_WRENCHES))),
        ("forward_dynamics", ForwardDynamics, ForwardDynamics.Request(
            state=state, effort=[1.0] * dof, wrenches=_wrenches(links, conversions.MAX_WRENCHES))),
        ("set_payload", SetPayload, SetPayload.Request(
            payload=_payload("p" * conversions.MAX_NAME_LENGTH))),
        ("dynamics_derivatives", DynamicsDerivatives, DynamicsDerivatives.Request(
            state=state, kind="forward", effort=[1.0] * dof,
            wrenches=_wrenches(links, conversions.MAX_WRENCHES))),
    ]


def over_bound_requests(names, pose, frame, links):
    """(service, type, request, words of the refusal): one past each bound."""
    state = _state(names, pose)
    dof = len(names)
    too_many_names = list(names) + ["one_too_many"]
    return [
        ("hybrid_dynamics", HybridDynamics, HybridDynamics.Request(
            state=state, constraints=_constraints(links, conversions.MAX_CONSTRAINTS + 1, 1)),
         f"at most {conversions.MAX_CONSTRAINTS} accepted"),
        ("hybrid_dynamics", HybridDynamics, HybridDynamics.Request(
            state=state, constraints=_constraints(links, conversions.MAX_CONSTRAINT_ROWS // 6, 6)
            + _constraints(links, 1, 1)),
         f"more than {conversions.MAX_CONSTRAINT_ROWS} rows"),
        ("evaluate_trajectory", EvaluateTrajectory, EvaluateTrajectory.Request(
            trajectory=_trajectory(names, pose, conversions.MAX_TRAJECTORY_POINTS + 1)),
         f"trajectory points: {conversions.MAX_TRAJECTORY_POINTS + 1} given, "
         f"at most {conversions.MAX_TRAJECTORY_POINTS}"),
        ("evaluate_trajectory", EvaluateTrajectory, EvaluateTrajectory.Request(
            trajectory=_trajectory(names, pose, 2),
            payloads=[_payload(f"box{i}") for i in range(conversions.MAX_REQUEST_PAYLOADS + 1)]),
         f"payloads: {conversions.MAX_REQUEST_PAYLOADS + 1} given, "
         f"at most {conversions.MAX_REQUEST_PAYLOADS}"),
        ("task_space_inertia", TaskSpaceInertia, TaskSpaceInertia.Request(
            state=state, frame=frame, joints=too_many_names),
         f"joints: {dof + 1} given, at most {dof}"),
        ("mixed_dynamics", MixedDynamics, MixedDynamics.Request(
            state=state, prescribed=too_many_names),
         f"prescribed: {dof + 1} given, at most {dof}"),
        ("inverse_dynamics", InverseDynamics, InverseDynamics.Request(
            state=state, wrenches=_wrenches(links, conversions.MAX_WRENCHES + 1)),
         f"wrenches: {conversions.MAX_WRENCHES + 1} given, at most {conversions.MAX_WRENCHES}"),
        ("forward_dynamics", ForwardDynamics, ForwardDynamics.Request(
            state=state, wrenches=_wrenches(links, conversions.MAX_WRENCHES + 1)),
         f"wrenches: {conversions.MAX_WRENCHES + 1} given, at most {conversions.MAX_WRENCHES}"),
        ("set_payload", SetPayload, SetPayload.Request(
            payload=_payload("p" * (conversions.MAX_NAME_LENGTH + 1))),
         f"payload name: {conversions.MAX_NAME_LENGTH + 1} given, "
         f"at most {conversions.MAX_NAME_LENGTH}"),
        ("dynamics_derivatives", DynamicsDerivatives, DynamicsDerivatives.Request(
            state=state, kind="inverse", wrenches=_wrenches(links, conversions.MAX_WRENCHES + 1)),
         f"wrenches: {conversions.MAX_WRENCHES + 1} given, at most {conversions.MAX_WRENCHES}"),
    ]


def longest_gap(arrivals, start, end):
    """Longest interval between consecutive arrivals that overlaps [start, end].

    ``arrivals`` are sorted times; the last arrival before ``start`` and the
    first after ``end`` count, so a request that stopped every message shows
    its whole length (or more), not zero.
    """
    times = np.asarray(arrivals, dtype=float)
    first = max(int(np.searchsorted(times, start)) - 1, 0)
    last = min(int(np.searchsorted(times, end, side="right")), len(times) - 1)
    window = times[first:last + 1]
    if len(window) < 2:
        return float("inf")
    return float(np.diff(window).max())


class JointStateStream:
    """Joint states published on /joint_states every ``period`` s from a thread, until :meth:`stop`.

    Each is stamped at publication (the node judges freshness from the stamp) and
    recorded in ``sent`` as (monotonic time, stamp in ns).
    """

    def __init__(self, client, names, pose, period):
        self._publisher = client.node.create_publisher(JointState, "/joint_states", 10)
        self._clock = client.node.get_clock()
        self._message = JointState(name=list(names), position=list(pose), velocity=[0.0] * len(names))
        self._period = period
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.sent = []

    def _run(self):
        while not self._stop.is_set():
            self._message.header.stamp = self._clock.now().to_msg()
            self._publisher.publish(self._message)
            self.sent.append((time.monotonic(), stamp_nanoseconds(self._message.header.stamp)))
            time.sleep(self._period)

    def start_until_answered(self, client, node="/soa_dynamics"):
        """Start; once ``node`` answers with its compiled kernels (as in production), the
        list its ``~/feedforward_state`` messages are collected into, as (arrival, message)."""
        feedforward = client.collect(JointState, f"{node}/feedforward_state")
        self._thread.start()
        wait_for(lambda: feedforward, timeout=60, what="a first feedforward")
        wait_for_compiled_kernels(client.node, 180.0)
        return feedforward

    def stop(self):
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5.0)
