"""The pick-and-place through the simulated joint_trajectory_controller, twice: without and
with the node's trajectory feedforward (rclpy; the demo and the system test use it).

Processes (started by the caller): ``soa_dynamics_sim`` with
``controller:=joint_trajectory`` and the task's ``gains.<joint>.*``, and
``soa_dynamics_node`` with ``-r '~/trajectory_out:=/joint_trajectory_controller/joint_trajectory'``.
Each run resets the sim (time stands still until a trajectory arrives), then

* without feedforward: this process publishes the trajectory, efforts empty
  (JTC adds none), on ``/joint_trajectory_controller/joint_trajectory``;
* with feedforward: it publishes the same trajectory on the node's
  ``~/trajectory_in``; the node fills every point's effort and publishes it
  on ``~/trajectory_out``, i.e. to the controller.

The controller runs inside the sim's loop, and the run starts at the step the
trajectory arrives at, so both runs are deterministic whatever the load.
"""
import threading

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from .arm import TRAJECTORY_TOPIC, reset_time
from .clients import wait_until
from .pick_and_place import SETTLE, rms_error
from ..ros.stamps import duration_from_seconds, stamp_seconds

NODE_TRAJECTORY_IN = "/soa_dynamics/trajectory_in"
SIM_RESET = "/soa_dynamics_sim/reset"


def sim_gain_arguments(gains):
    """``-p gains.<joint>.<name>:=value`` ROS arguments for the sim."""
    arguments = []
    for joint, values in gains.items():
        for name, value in values.items():
            arguments += ["-p", f"gains.{joint}.{name}:={float(value)!r}"]
    return arguments


def trajectory_message(task):
    """The task's points (positions, velocities, accelerations; no efforts), header stamp zero."""
    times, q, qd, qdd = task.points()
    points = []
    for t, *rows in zip(times, q, qd, qdd):
        points.append(JointTrajectoryPoint(
            positions=rows[0].tolist(), velocities=rows[1].tolist(), accelerations=rows[2].tolist(),
            time_from_start=duration_from_seconds(t)))
    return JointTrajectory(joint_names=list(task.joint_names), points=points)


class TrackingLoop:
    """Records /joint_states (sim time, positions in the task's joint order) and runs the task."""

    def __init__(self, node, task):
        self.node, self.task = node, task
        self.lock = threading.Lock()
        self.rows = []
        self.compiled = False
        self.trajectories = {}      # effort filled by the node, as it reached this process
        self._index = None
        qos = QoSProfile(depth=1000, history=HistoryPolicy.KEEP_LAST,
                         reliability=ReliabilityPolicy.RELIABLE)
        node.create_subscription(JointState, "/joint_states", self._on_state, qos)
        node.create_subscription(DiagnosticArray, "/diagnostics", self._on_diagnostics, 10)
        node.create_subscription(JointTrajectory, TRAJECTORY_TOPIC, self._on_trajectory, 10)
        self.to_controller = node.create_publisher(JointTrajectory, TRAJECTORY_TOPIC, 10)
        self.to_node = node.create_publisher(JointTrajectory, NODE_TRAJECTORY_IN, 10)
        self.reset_client = node.create_client(Trigger, SIM_RESET)

    def _on_state(self, message):
        if self._index is None:
            self._index = [list(message.name).index(n) for n in self.task.joint_names]
        row = (stamp_seconds(message.header.stamp),
               np.asarray(message.position)[self._index])
        with self.lock:
            self.rows.append(row)

    def _on_diagnostics(self, message):
        for status in message.status:
            if any(kv.key == "kernels" and kv.value == "compiled" for kv in status.values):
                self.compiled = True

    def _on_trajectory(self, message):
        if message.points and message.points[0].effort:
            self.trajectories["feedforward"] = message

    def latest_time(self):
        with self.lock:
            return self.rows[-1][0] if self.rows else None

    def wait_until_ready(self, timeout):
        """The sim's states and reset service, the node compiled (its numpy path takes at most
        20 points per trajectory) and both trajectory subscriptions matched."""
        wait_until(lambda: self.latest_time() is not None, timeout, "no joint state from the sim")
        if not self.reset_client.wait_for_service(timeout_sec=timeout):
            raise TimeoutError(f"no {SIM_RESET} within {timeout:.0f} s")
        wait_until(lambda: self.compiled, timeout, "the node's kernels were not compiled")
        wait_until(lambda: self.to_node.get_subscription_count() > 0
              and self.to_controller.get_subscription_count() > 0, timeout,
              "the trajectory subscriptions did not match")

    def _reset(self, timeout):
        future = self.reset_client.call_async(Trigger.Request())
        done = threading.Event()
        future.add_done_callback(lambda _: done.set())
        if not done.wait(timeout):
            raise TimeoutError(f"no answer from {SIM_RESET} within {timeout:.0f} s")
        answer = future.result()
        if not answer.success:
            raise RuntimeError(f"{SIM_RESET}: {answer.message}")
        return reset_time(answer.message)

    def run(self, feedforward, timeout=120.0):
        """One run from the home pose; (rms error, times, positions) from its start on."""
        start = self._reset(timeout)
        message = trajectory_message(self.task)
        (self.to_node if feedforward else self.to_controller).publish(message)
        end = start + self.task.duration + SETTLE
        wait_until(lambda: (self.latest_time() or 0.0) >= end, timeout,
              f"the simulation did not reach t={end:.2f} s")
        with self.lock:
            rows = sorted((r for r in self.rows if start < r[0] <= end), key=lambda r: r[0])
        times = np.array([r[0] for r in rows])
        positions = np.array([r[1] for r in rows])
        return rms_error(times, positions, self.task, start), times - start, positions


def compare(node, task, timeout=120.0):
    """Both runs: dict(off=(rms, t, q), on=(rms, t, q), trajectory=the node's annotated message)."""
    loop = TrackingLoop(node, task)
    loop.wait_until_ready(timeout)
    result = dict(off=loop.run(False, timeout), on=loop.run(True, timeout))
    result["trajectory"] = loop.trajectories.get("feedforward")
    return result
