r"""A floating-base robot standing in MuJoCo, on ROS.

    python -m soa_dynamics_ros.sim.floating_sim --ros-args -p urdf_file:=solo12.urdf \\
        -p "contact_frames:=[FL_FOOT, FR_FOOT, HL_FOOT, HR_FOOT]" \\
        -p "initial_positions:=[0.0, 0.8, -1.6, ...]"

:class:`~soa_dynamics_ros.sim.floating_plant.FloatingPlant` in real time: every
``publish_period`` it steps the physics that long and publishes ``/joint_states`` and
the base state on ``base_odometry_topic`` (nav_msgs/Odometry: the root link's pose in
``world_frame``, its twist in the root link's frame, the model's convention).  The
joints get joint PD about ``initial_positions`` (``kp``, ``kd``) plus the latest
``~/effort`` command (Float64MultiArray, joint_names order; the node's
``~/feedforward`` remapped here), held until the next.  Time stands still until the
first command, so that a robot is never seen without its feedforward.  Not yet part of
``soa_dynamics_sim``: the arm's simulator serves fixed-base robots only.
"""
import sys

import numpy as np
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from .floating_plant import FloatingPlant
from ..errors import InvalidInputError
from ..ros.node import odometry_type
from ..ros.process import make_executor, run_node, spin_until_stopped
from ..ros.throttled_log import ThrottledLog

NODE_NAME = "soa_dynamics_floating_sim"
PARAMETERS = {"urdf_file": "", "contact_frames": [""], "initial_positions": [0.0],
              "kp": 3.0, "kd": 0.1, "world_frame": "odom", "base_odometry_topic": "odom",
              "publish_period": 0.005}


class FloatingSimNode(Node):
    def __init__(self, **kwargs):
        super().__init__(NODE_NAME, **kwargs)
        value = {name: self.declare_parameter(name, default).value
                 for name, default in PARAMETERS.items()}
        frames = [frame for frame in value["contact_frames"] if frame]
        self.plant = FloatingPlant(value["urdf_file"], frames)
        joints = len(self.plant.joint_names)
        self.initial = np.array(value["initial_positions"], dtype=float)
        if self.initial.shape != (joints,) or not np.all(np.isfinite(self.initial)):
            raise InvalidInputError(f"initial_positions must be {joints} finite numbers "
                                    f"({', '.join(self.plant.joint_names)})")
        self.plant.place(self.initial)
        self.gains = (float(value["kp"]), float(value["kd"]))
        self.command = None         # time stands still until the first command
        self.world_frame = value["world_frame"]
        self.period = float(value["publish_period"])
        self._log = ThrottledLog(self.get_logger())
        self._odometry = odometry_type()
        self.odometry_publisher = self.create_publisher(self._odometry,
                                                        value["base_odometry_topic"], 10)
        self.joint_state_publisher = self.create_publisher(JointState, "joint_states", 10)
        self.create_subscription(Float64MultiArray, "~/effort", self._on_effort, 10)
        self.create_timer(self.period, self._advance)

    def _on_effort(self, message):
        effort = np.array(message.data, dtype=float)
        joints = len(self.plant.joint_names)
        if effort.shape != (joints,) or not np.all(np.isfinite(effort)):
            self._log.warning("effort refused", 2.0, f"~/effort refused: {effort.size} values, "
                              f"{joints} finite ones expected")
            return
        self.command = effort

    def _advance(self):
        kp, kd = self.gains
        steps = 0 if self.command is None else max(1, round(self.period / self.plant.model.opt.timestep))
        for _ in range(steps):
            q, v = self.plant.state()
            self.plant.step(self.command + kp * (self.initial - q[7:]) - kd * v[6:])
        q, v = self.plant.state()
        stamp = self.get_clock().now().to_msg()
        state = JointState(name=self.plant.joint_names, position=q[7:].tolist(),
                           velocity=v[6:].tolist())
        state.header.stamp = stamp
        odometry = self._odometry()
        odometry.header.stamp, odometry.header.frame_id = stamp, self.world_frame
        odometry.child_frame_id = self.plant.reference.base_link
        pose, twist = odometry.pose.pose, odometry.twist.twist
        (pose.position.x, pose.position.y, pose.position.z, pose.orientation.x,
         pose.orientation.y, pose.orientation.z, pose.orientation.w) = q[:7].tolist()
        (twist.linear.x, twist.linear.y, twist.linear.z,
         twist.angular.x, twist.angular.y, twist.angular.z) = v[:6].tolist()
        # The base first: the node answers the joint state with the base state it has.
        self.odometry_publisher.publish(odometry)
        self.joint_state_publisher.publish(state)


def main(args=None):
    return run_node(NODE_NAME, FloatingSimNode, lambda node: make_executor("single_threaded"),
                    spin_until_stopped, args)


if __name__ == "__main__":
    sys.exit(main())
