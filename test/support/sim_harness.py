"""Helpers for closed-loop tests: the MuJoCo arm and the model node as real processes."""
import threading
import time

import numpy as np
from rcl_interfaces.msg import Parameter as ParameterMsg
from rcl_interfaces.srv import SetParameters
from sensor_msgs.msg import JointState
from std_srvs.srv import Trigger

from support.optional import require
from support.ros_harness import RosProcess
from support.waiting import wait_for
from soa_dynamics_ros.ros.stamps import stamp_seconds
from soa_dynamics_ros.sim.clients import parameter_value

# Non-trivial poses, inside the joint limits, with gravity torques inside the
# effort limits (the PR2 arms have no counterbalance springs here).
POSES = {
    "panda": dict(zip([f"panda_joint{i}" for i in range(1, 8)],
                      [0.1, -0.6, 0.2, -2.2, 0.1, 1.7, 0.6])),
    "dual_arm_torso": dict(
        torso_lift_joint=0.15, head_pan_joint=0.3, head_tilt_joint=0.4,
        l_shoulder_pan_joint=0.5, l_shoulder_lift_joint=1.3, l_upper_arm_roll_joint=0.6,
        l_elbow_flex_joint=-1.2, l_forearm_roll_joint=0.4, l_wrist_flex_joint=-0.8,
        l_wrist_roll_joint=0.3, l_gripper_l_finger_joint=0.3,
        r_shoulder_pan_joint=-0.4, r_shoulder_lift_joint=1.25, r_upper_arm_roll_joint=-0.7,
        r_elbow_flex_joint=-1.0, r_forearm_roll_joint=-0.3, r_wrist_flex_joint=-0.6,
        r_wrist_roll_joint=-0.2, r_gripper_l_finger_joint=0.2),
}
TOOL = {"panda": "panda_hand_tcp", "dual_arm_torso": "l_gripper_tool_frame"}
PAYLOAD = {"panda": ("panda_hand", [0.0, 0.0, 0.05]), "dual_arm_torso": ("l_wrist_roll_link", [0.1, 0.0, 0.0])}


def set_parameters(client, node, **values):
    setter = client.client(SetParameters, f"{node}/set_parameters")
    request = SetParameters.Request(parameters=[ParameterMsg(name=k, value=parameter_value(v))
                                                for k, v in values.items()])
    results = client.call(setter, request).results
    failed = [r.reason for r in results if not r.successful]
    assert not failed, f"{node}: parameters refused: {failed}"


def start_sim(robot, log_dir, *extra, name=None, realtime=False):
    require("mujoco")       # the simulated arm's plant (requirements-dev.txt, not package.xml)
    positions = list(POSES[robot].values())
    return RosProcess("soa_dynamics_sim", "-p", f"urdf_file:=urdf/{robot}.urdf",
                      "-p", f"initial_positions:={positions}", *extra,
                      log_dir=log_dir, name=name or f"sim_{robot}", realtime=realtime)


def start_node(robot, log_dir, *extra, realtime=False):
    # No ramp (as in launch/sim.launch.py): the simulated arm is released at its
    # first command, with no controller of its own to hold it during a ramp.
    return RosProcess("soa_dynamics_node", "--params-file", f"config/{robot}.yaml",
                      "-p", "marker_rate:=0.0", "-p", "feedforward_ramp_time:=0.0",
                      "-r", "~/feedforward:=/effort_controller/commands",
                      *extra, log_dir=log_dir, name=f"node_{robot}", realtime=realtime)


class StateRecorder:
    """/joint_states as arrays (sim time, positions and velocities of chosen joints)."""

    def __init__(self, client, joint_names, on_state=None):
        self.joint_names = list(joint_names)
        self.lock = threading.Lock()
        self.rows = []
        self.on_state = on_state
        self.new_state = threading.Condition(self.lock)
        self._index = None
        client.node.create_subscription(JointState, "/joint_states", self._on_message, 50)

    def _on_message(self, message):
        if self._index is None:
            self._index = [list(message.name).index(n) for n in self.joint_names]
        position, velocity = np.asarray(message.position), np.asarray(message.velocity)
        effort = np.asarray(message.effort)
        row = (stamp_seconds(message.header.stamp), time.monotonic(), position[self._index],
               velocity[self._index], effort[self._index] if effort.size else None)
        with self.lock:
            self.rows.append(row)
            self.new_state.notify_all()
        if self.on_state is not None:
            self.on_state(row)

    def clear(self):
        with self.lock:
            self.rows = []

    def latest(self):
        with self.lock:
            return self.rows[-1] if self.rows else None

    def count(self):
        with self.lock:
            return len(self.rows)

    def wait_next(self, count, timeout=5.0):
        """(latest row, new count) once more than ``count`` states have arrived.

        Every state is answered, repeats of the same time included: while the sim
        waits for a command it republishes its state.
        """
        deadline = time.monotonic() + timeout
        with self.lock:
            while len(self.rows) <= count:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(f"no joint state after the {count}th")
                self.new_state.wait(remaining)
            return self.rows[-1], len(self.rows)

    def since(self, t0, t1=np.inf):
        """(t, q, qd) arrays of the states with t0 < t <= t1 (sim time).

        Strictly after t0: after a reset (time goes on) the state published just
        before it carries the same time as the reset pose.
        """
        with self.lock:
            rows = [r for r in self.rows if t0 + 1e-9 < r[0] <= t1 + 1e-9]
        rows.sort(key=lambda r: r[0])
        t = np.array([r[0] for r in rows])
        return t, np.array([r[2] for r in rows]), np.array([r[3] for r in rows])


def reset_client(client, sim="/soa_dynamics_sim"):
    """The sim's ~/reset client (made once per RosClient: make it early, see RosClient.client)."""
    return client.client(Trigger, f"{sim}/reset")


def reset_sim(client, sim="/soa_dynamics_sim"):
    """~/reset: back to the initial pose (time continues); returns the sim time of the reset."""
    answer = client.call(reset_client(client, sim), Trigger.Request())
    assert answer.success, answer.message
    from soa_dynamics_ros.sim.arm import reset_time   # a module that needs mujoco, as the sim does
    return reset_time(answer.message)


def run_for(recorder, t_start, duration, timeout=None):
    """Wait until the sim has simulated ``duration`` seconds after ``t_start``."""
    timeout = timeout or 10.0 + 6.0 * duration
    wait_for(lambda: (recorder.latest() or (0,))[0] >= t_start + duration, timeout,
             interval=0.05, what=f"{duration} s of simulation after t={t_start:.3f}")
    return recorder.since(t_start, t_start + duration)
