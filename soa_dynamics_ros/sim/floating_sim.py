r"""A floating-base robot standing in MuJoCo, on ROS: ``soa_dynamics_sim`` with
``floating_base:=true``.

    soa_dynamics_sim --ros-args -p floating_base:=true -p urdf_file:=solo12.urdf \\
        -p "contact_frames:=[FL_FOOT, FR_FOOT, HL_FOOT, HR_FOOT]" \\
        -p "initial_positions:=[0.0, 0.8, -1.6, ...]"

:class:`~soa_dynamics_ros.sim.floating_plant.FloatingPlant` in real time: every
``publish_period`` it steps the physics that long and publishes ``/joint_states`` and
the base state on ``base_odometry_topic`` (nav_msgs/Odometry: the root link's pose in
``world_frame``, its twist in the root link's frame, the model's convention).  The
joints get joint PD about ``initial_positions`` (``kp``, ``kd``) plus the latest
command on ``/effort_controller/commands`` (Float64MultiArray, joint order, the
node's ``~/feedforward`` remapped there, as for the arm), held until the next.  With
``wait_for_command`` (the default) time stands still until the first command, so that
a robot is never seen without its feedforward; without it, PD alone acts from the
start.  ``publish_clock`` stamps with simulated time and publishes ``/clock``.
"""
import numpy as np
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from .floating_plant import FloatingPlant
from ..errors import InvalidInputError
from ..ros import conversions
from ..ros.node import odometry_type
from ..ros.stamps import time_from_seconds
from ..ros.throttled_log import ThrottledLog


class FloatingSim:
    """The floating-base plant on ``node``'s publishers, subscription and timer;
    ``value(name)`` reads the node's (checked) parameters."""

    def __init__(self, node, description, value, command_topic):
        self.node = node
        frames = [frame for frame in value("contact_frames") if frame]
        self.plant = FloatingPlant(description, frames, value("timestep"))
        joints = len(self.plant.joint_names)
        self.initial = np.array(value("initial_positions"), dtype=float)
        if self.initial.shape != (joints,) or not np.all(np.isfinite(self.initial)):
            raise InvalidInputError(f"initial_positions must be {joints} finite numbers "
                                    f"({', '.join(self.plant.joint_names)})")
        self.plant.place(self.initial)
        self.gains = (value("kp"), value("kd"))
        self.command = None
        self.running = not value("wait_for_command")
        self.world_frame = value("world_frame")
        self.period = value("publish_period")
        self.steps_per_period = max(1, round(self.period / self.plant.model.opt.timestep))
        self._log = ThrottledLog(node.get_logger())
        self._odometry = odometry_type()
        self.clock_publisher = node.create_publisher(Clock, "/clock", 10) \
            if value("publish_clock") else None
        self.odometry_publisher = node.create_publisher(self._odometry,
                                                        value("base_odometry_topic"), 10)
        self.joint_state_publisher = node.create_publisher(JointState, "/joint_states", 10)
        self.command_topic = command_topic
        node.create_subscription(Float64MultiArray, command_topic, self._on_command, 10)
        node.create_timer(self.period, self._advance)
        node.get_logger().info(
            f"MuJoCo floating-base robot {self.plant.reference.name!r}: {joints} joints, "
            f"contacts at {', '.join(frames)}, joint PD kp {self.gains[0]:g} kd "
            f"{self.gains[1]:g}, base odometry on {value('base_odometry_topic')!r}")

    def _on_command(self, message):
        effort = np.array(message.data, dtype=float)
        joints = len(self.plant.joint_names)
        if effort.shape != (joints,) or not np.all(np.isfinite(effort)):
            self._log.warning("command refused", 2.0, f"{self.command_topic} refused: "
                              f"{effort.size} values, {joints} finite ones expected")
            return
        self.command = effort
        self.running = True

    def _advance(self):
        kp, kd = self.gains
        command = np.zeros(len(self.plant.joint_names)) if self.command is None else self.command
        for _ in range(self.steps_per_period if self.running else 0):
            q, v = self.plant.state()
            self.plant.step(command + kp * (self.initial - q[7:]) - kd * v[6:])
        q, v = self.plant.state()
        if self.clock_publisher is not None:
            stamp = time_from_seconds(self.plant.time)
            self.clock_publisher.publish(conversions.clock(stamp))
        else:
            stamp = self.node.get_clock().now().to_msg()
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
