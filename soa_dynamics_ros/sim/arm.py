"""``soa_dynamics_sim``: a MuJoCo-simulated arm that speaks what gz_ros2_control speaks.

Topics, as Gazebo + gz_ros2_control with a
``forward_command_controller/ForwardCommandController`` (``interface_name:
effort``) named ``effort_controller`` and a joint_state_broadcaster:

* publishes ``/joint_states`` (``sensor_msgs/JointState``, every step,
  stamped; ``effort`` is the effort applied during the step that led there),
* takes ``/effort_controller/commands`` (``std_msgs/Float64MultiArray``,
  one effort per joint in the ``joints`` parameter order), or, with
  ``controller:=joint_trajectory``, ``/joint_trajectory_controller/joint_trajectory``
  (``trajectory_msgs/JointTrajectory``) and tracks it as joint_trajectory_controller
  does on effort interfaces: PID on the sampled position and velocity error plus
  each point's effort, every step (:mod:`.trajectory_controller`; gains
  ``gains.<joint>.p/i/d/i_clamp/ff_velocity_scale``).  An empty trajectory holds
  the position; a malformed one is refused with a throttled warning and the
  active one goes on.  Lockstep and ``command_timeout`` do not apply (the
  controller is inside the loop); time stands still until the first trajectory,
  as it does until the first command,
* optionally publishes ``/clock`` (``publish_clock``) and then stamps with
  simulated time, for nodes run with ``use_sim_time:=true``.

A command of the wrong length (or non-finite) is rejected with a throttled
warning; the last valid command is applied for at most ``command_timeout``
(simulated) seconds, then zero effort, as real drivers do.

By default (``wait_for_command``) simulated time stands still until the first
valid command, the state still published every 0.1 s: gravity feedforward
cannot stop an arm that already moves, so the arm waits for its controller,
whichever starts first.  Parameters are checked (finite, in physical ranges;
docs/simulation.md) before anything changes, and a diverged simulation is
never published: the arm goes back to its initial pose and waits.

Timing: ``real_time_factor`` 1 paces the 1 kHz loop against the wall clock
(0: as fast as possible).  ``lockstep`` makes the loop wait, after publishing
the state of step k, for the command that answers it (at most
``lockstep_timeout`` wall seconds) before stepping: the loop is then
deterministic on a loaded machine.  After a timeout it stops waiting until a
command arrives again, so a silent controller does not slow the sim down.

The physics is :class:`soa_dynamics_ros.sim.mujoco_plant.MujocoPlant`.  With
``floating_base:=true`` the node serves a floating-base robot standing on the ground
instead (:mod:`.floating_sim`: its base state on nav_msgs/Odometry, joint PD plus the
commands), from the same parameter table.
"""
import math
import statistics
import sys
import time
from typing import NamedTuple

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.node import Node
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory

from .mujoco_plant import MujocoPlant, route_warnings
from .trajectory_controller import GAIN_NAMES, JointTrajectoryControllerEmulation, trajectory_points
from ..errors import SoaDynamicsError
from ..ros import conversions
from ..ros.command_line import help_text, unknown_parameter_warning, unknown_parameters
from ..ros.pauses import PauseMeter
from ..ros.process import make_executor, run_node, spin_until_stopped, subscribe_with_info
from ..ros.stamps import stamp_seconds, time_from_seconds
from ..ros.throttled_log import ThrottledLog
from ..validation import as_vector, payload_problems

NODE_NAME = "soa_dynamics_sim"
COMMAND_TOPIC = "/effort_controller/commands"
TRAJECTORY_TOPIC = "/joint_trajectory_controller/joint_trajectory"
CONTROLLERS = ("effort", "joint_trajectory")
RESET_SETTLE = 0.05   # [wall s] after ~/reset: time stopped, late commands dropped
WAITING_REPUBLISH = 0.1   # [wall s] state republished this often while time stands still
LOCKSTEP_TIMEOUT = 0.5    # [wall s] the lockstep_timeout parameter's default
# Physically sane parameter ranges (docs/simulation.md); beyond them MuJoCo's
# mass matrix loses its precision and the simulation diverges.
MAX_TIMESTEP = 0.01                 # [s]
MAX_PAYLOAD_MASS_RATIO = 100.0      # payload mass / robot mass
MAX_PAYLOAD_OFFSET = 10.0           # [m] payload COM from its link's origin
MUJOCO_WARNING_PERIOD = 2.0         # [s] at most one MuJoCo warning line this often


class SimParameter(NamedTuple):
    name: str
    default: object
    description: str
    read_only: bool = False
    number: bool = False    # integers accepted too (`real_time_factor:=0` on a command line)


# Declared in this order; `soa_dynamics_sim --help` prints this table.
SIM_PARAMETERS = (
    SimParameter("robot_description", "", "URDF or xacro XML of the robot", True),
    SimParameter("urdf_file", "", "path of a URDF/xacro file (if robot_description is empty)",
                 True),
    SimParameter("joints", [""], "joint order of the effort commands (empty: model order)", True),
    SimParameter("controller", "effort",
                 "effort: a ForwardCommandController on /effort_controller/commands; "
                 "joint_trajectory: a joint_trajectory_controller stand-in on "
                 "/joint_trajectory_controller/joint_trajectory (PID "
                 "gains.<joint>.p/i/d/i_clamp/ff_velocity_scale plus each point's effort)", True),
    SimParameter("initial_positions", [0.0], "start pose in `joints` order (one 0.0 or empty: 0, "
                 "or the nearest joint limit)", True),
    SimParameter("timestep", 0.001, "[s]", True, number=True),
    SimParameter("real_time_factor", 1.0, "simulated / wall time; 0: as fast as possible",
                 number=True),
    SimParameter("lockstep", False, "wait for the command answering each state"),
    SimParameter("lockstep_timeout", LOCKSTEP_TIMEOUT,
                 "[wall s] longest wait for a command in lockstep", number=True),
    SimParameter("wait_for_command", True,
                 "hold the simulation (time stopped, state still published) until the first "
                 "valid command; ~/reset re-arms it"),
    SimParameter("command_timeout", 0.1, "[simulated s] a command older than this: zero effort",
                 number=True),
    SimParameter("publish_clock", False, "publish /clock and stamp with simulated time", True),
    SimParameter("urdf_dynamics", False, "apply URDF joint damping/friction", True),
    SimParameter("joint_limits", True, "enforce URDF position limits", True),
    SimParameter("payload_link", "", "link carrying a simulated payload (empty: none)"),
    SimParameter("payload_mass", 0.0, "[kg]", number=True),
    SimParameter("payload_com", [0.0, 0.0, 0.0], "[m] in the link frame"),
    SimParameter("payload_inertia", [0.0] * 9, "3x3 about the COM, link axes (0: point mass)"),
    SimParameter("wrench_link", "", "link receiving an external wrench (empty: none)"),
    SimParameter("wrench", [0.0] * 6, "[f; t] in root axes about the link origin, on the robot"),
    SimParameter("wrench_start", 0.0, "[simulated s] when the wrench starts acting", number=True),
    SimParameter("wrench_duration", 0.0, "[simulated s] how long it acts; 0: no end", number=True),
    SimParameter("diagnostics_period", 1.0, "[s]", True, number=True),
    SimParameter("floating_base", False,
                 "a floating-base robot on a ground plane (MuJoCo free joint, contact spheres "
                 "at contact_frames): joint PD (kp, kd) about initial_positions plus the "
                 "commands, base state on base_odometry_topic; uses robot_description, "
                 "urdf_file, initial_positions, timestep, wait_for_command and publish_clock "
                 "of the parameters above", True),
    SimParameter("contact_frames", [""], "with floating_base: frames touching the ground "
                 "(a 5 mm contact sphere each)", True),
    SimParameter("kp", 3.0, "with floating_base: joint PD stiffness [N m/rad]", True, number=True),
    SimParameter("kd", 0.1, "with floating_base: joint PD damping [N m s/rad]", True,
                 number=True),
    SimParameter("world_frame", "odom", "with floating_base: the odometry's header.frame_id",
                 True),
    SimParameter("base_odometry_topic", "odom",
                 "with floating_base: nav_msgs/Odometry of the root link", True),
    SimParameter("publish_period", 0.005, "[s] with floating_base: state published (and "
                 "physics stepped that long) this often", True, number=True),
)


def reset_time(message):
    """The sim time [s] of a reset, from the message of ``~/reset``'s answer."""
    return float(message.rsplit("t=", 1)[1].split()[0])


def _descriptor(text, read_only=False, number=False):
    return conversions.parameter_descriptor(text, read_only, dynamic_typing=number)


class SimNode(Node):
    def __init__(self, **kwargs):
        super().__init__(NODE_NAME, **kwargs)
        self._log = ThrottledLog(self.get_logger())     # for what can repeat every step
        for parameter in SIM_PARAMETERS:
            self.declare_parameter(parameter.name, parameter.default, _descriptor(
                parameter.description, parameter.read_only, parameter.number))

        value = self._value
        description = value("robot_description").strip() or value("urdf_file").strip()
        if not description:
            raise SoaDynamicsError("soa_dynamics_sim needs a urdf_file or robot_description parameter")
        self._check_numbers(value, self.NUMBERS)
        self.floating = None
        self.pauses = None
        if value("floating_base"):
            self._start_floating(description)
        else:
            self._start_arm(description)
        # rclpy keeps the node's overrides (-p, params files) there and offers no public reader.
        unknown = unknown_parameters(self._parameter_overrides, self._parameters)
        if unknown:
            self.get_logger().warning(unknown_parameter_warning(NODE_NAME, unknown))

    def _start_floating(self, description):
        # Imported here: it needs nav_msgs, which only floating-base robots do.
        from .floating_sim import FloatingSim
        self.floating = FloatingSim(self, description, self._value, COMMAND_TOPIC)
        self.add_on_set_parameters_callback(lambda _parameters: conversions.parameters_result(
            refusal="with floating_base the parameters are fixed at start"))

    def _start_arm(self, description):
        value = self._value
        joints = [name for name in value("joints") if name]
        self.controller = value("controller")
        if self.controller not in CONTROLLERS:
            raise SoaDynamicsError(f"controller must be one of {CONTROLLERS}, not {self.controller!r}")
        self.stats = dict(steps=0, commands=0, rejected=0, lockstep_timeouts=0, overruns=0,
                          latencies=[], timed_out=False, mujoco_warnings=0, divergences=0,
                          command_gap_max=0.0, command_gap_detail="", trajectories=0)
        route_warnings(self._on_mujoco_warning)
        self.plant = MujocoPlant(description, joints, value("timestep"), value("urdf_dynamics"),
                                 value("joint_limits"))
        payload = self._payload_from(value)
        if payload is not None:
            self.plant.set_payload(payload)
        self._set_wrench(value, as_vector("wrench", value("wrench"), 6))
        initial = as_vector("initial_positions", value("initial_positions"),
                            len(value("initial_positions"))).tolist()
        if len(initial) <= 1 and not any(initial):
            self.initial = self.plant.default_positions()
        elif len(initial) == len(self.plant.joint_names):
            self.initial = np.array(initial)
        else:
            raise SoaDynamicsError(f"initial_positions has {len(initial)} values for "
                                   f"{len(self.plant.joint_names)} joints {self.plant.joint_names}")
        self.plant.reset(self.initial)
        self.n = len(self.plant.joint_names)
        self.trajectory_controller = self._trajectory_controller() \
            if self.controller == "joint_trajectory" else None
        self.publish_clock = value("publish_clock")
        self.command = None                 # last valid command
        self.command_time = -math.inf       # simulated time it arrived
        self.command_arrival = math.inf     # [wall s] when it arrived (no gap before the first)
        # Made in the thread that runs the loop (its schedstat is per thread): where the
        # wall time between two commands went.
        self.pauses = PauseMeter()
        self._command_pauses = self.pauses.sample()
        self.waiting = value("wait_for_command")
        self.hold_until = 0.0
        self.applied = np.zeros(self.n)
        self.answered = False               # a command arrived since the last state
        self.state_published_at = 0.0
        self.commander_present = True

        qos = QoSProfile(depth=10, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.RELIABLE)
        self.state_publisher = self.create_publisher(JointState, "/joint_states", qos)
        self.clock_publisher = self.create_publisher(Clock, "/clock", 10) if self.publish_clock else None
        self.diagnostics_publisher = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        if self.trajectory_controller is None:
            subscribe_with_info(self, Float64MultiArray, COMMAND_TOPIC, self._on_command, 10)
        else:
            self.create_subscription(JointTrajectory, TRAJECTORY_TOPIC, self._on_trajectory, 10)
        self.create_service(Trigger, "~/reset", self._on_reset)
        self.add_on_set_parameters_callback(self._on_set_parameters)
        self._state_message = conversions.JointStates(self.plant.state_names)
        self._diag_period = value("diagnostics_period")
        self._diag_wall = time.monotonic()
        self._diag_sim = self.plant.time
        self.get_logger().info(
            f"MuJoCo arm {self.plant.reference.name!r}: {self.n} commanded joints "
            f"({', '.join(self.plant.joint_names)}), dt {self.plant.timestep * 1e3:g} ms, "
            f"controller {self.controller}, lockstep {value('lockstep')}, "
            f"real_time_factor {value('real_time_factor')}"
            + (f", payload {self.plant.payload['mass']} kg on {self.plant.payload['link']!r}"
               if self.plant.payload else ""))

    # ------------------------------------------------------------------ parameters
    NUMBERS = ("timestep", "real_time_factor", "lockstep_timeout", "command_timeout", "payload_mass",
               "diagnostics_period", "wrench_start", "wrench_duration", "kp", "kd", "publish_period")
    WRENCH = {"wrench_link", "wrench", "wrench_start", "wrench_duration"}

    def _value(self, name, changes=None):
        value = changes[name] if changes and name in changes else self.get_parameter(name).value
        if name not in self.NUMBERS:
            return value
        try:
            return float(value)
        except (TypeError, ValueError):
            raise SoaDynamicsError(f"{name} must be a number, not {value!r}") from None

    @staticmethod
    def _check_numbers(value, names):
        """Every scalar parameter in ``names`` finite and in its range, or SoaDynamicsError."""
        for name in names:
            number = value(name)
            if not math.isfinite(number):
                raise SoaDynamicsError(f"{name} must be finite, not {number}")
            if name == "timestep" and not 0.0 < number <= MAX_TIMESTEP:
                raise SoaDynamicsError(f"timestep must be in (0, {MAX_TIMESTEP}] s, not {number}")
            if name in ("diagnostics_period", "publish_period") and not number > 0.0:
                raise SoaDynamicsError(f"{name} must be > 0, not {number}")
            if number < 0.0:
                raise SoaDynamicsError(f"{name} must be >= 0, not {number}")

    def _trajectory_controller(self):
        """The joint_trajectory_controller stand-in, gains from ``gains.<joint>.<name>`` (JTC's names)."""
        gains = {}
        for joint in self.plant.joint_names:
            gains[joint] = {}
            for name in GAIN_NAMES:
                parameter = f"gains.{joint}.{name}"
                number = self.declare_parameter(parameter, 0.0, _descriptor(
                    "joint_trajectory_controller gain (default 0, as in JTC)", True, number=True)).value
                try:
                    gains[joint][name] = float(number)
                except (TypeError, ValueError):
                    raise SoaDynamicsError(f"{parameter} must be a number, not {number!r}") from None
        return JointTrajectoryControllerEmulation(self.plant.joint_names, gains)

    def _payload_from(self, value):
        """The payload the parameters describe (None: none), validated before MuJoCo sees it."""
        mass = value("payload_mass")
        self._check_numbers(value, ["payload_mass"])
        com = as_vector("payload_com", value("payload_com"), 3)
        inertia = as_vector("payload_inertia", value("payload_inertia"), 9).reshape(3, 3)
        if not value("payload_link") or mass == 0.0:
            return None
        robot_mass = self.plant.reference.total_mass
        if mass > MAX_PAYLOAD_MASS_RATIO * robot_mass:
            raise SoaDynamicsError(f"payload_mass {mass} kg is more than {MAX_PAYLOAD_MASS_RATIO:g} "
                                   f"times the robot's mass ({robot_mass:.3g} kg)")
        if np.linalg.norm(com) > MAX_PAYLOAD_OFFSET:
            raise SoaDynamicsError(f"payload_com {com.tolist()} is more than {MAX_PAYLOAD_OFFSET:g} m "
                                   "from the link origin")
        problems = payload_problems(mass, inertia)
        if problems:
            raise SoaDynamicsError("payload_inertia: " + "; ".join(problems))
        return dict(link=value("payload_link"), mass=mass, com=com.tolist(),
                    inertia=inertia.ravel().tolist())

    def _set_wrench(self, value, wrench):
        duration = value("wrench_duration")
        self.plant.set_wrench(value("wrench_link"), wrench, value("wrench_start"),
                              duration if duration > 0.0 else math.inf)

    def _on_set_parameters(self, parameters):
        changes = {p.name: p.value for p in parameters}
        value = lambda name: self._value(name, changes)  # noqa: E731
        try:
            # Everything is checked before anything changes.
            self._check_numbers(value, [name for name in self.NUMBERS if name in changes])
            payload_changed = bool(set(changes) & {"payload_link", "payload_mass", "payload_com",
                                                   "payload_inertia"})
            payload = self._payload_from(value) if payload_changed else None
            wrench_changed = bool(set(changes) & self.WRENCH)
            wrench = as_vector("wrench [f; t]", value("wrench"), 6) if wrench_changed else None
            if wrench_changed and value("wrench_link"):
                self.plant.check_link(value("wrench_link"))
            if payload_changed:
                self.plant.set_payload(payload)
                self.get_logger().info(f"payload now {self.plant.payload}")
            if wrench_changed:
                self._set_wrench(value, wrench)
                start, end = self.plant.wrench_window
                self.get_logger().info(f"external wrench {wrench.tolist()} on "
                                       f"{value('wrench_link')!r} for t in [{start:g}, {end:g}) s")
        except (SoaDynamicsError, ValueError, TypeError) as error:
            self.get_logger().error(f"parameter change refused: {error}")
            return conversions.parameters_result(refusal=str(error))
        if "lockstep" in changes:
            self.commander_present = True
        return conversions.parameters_result()

    def _on_mujoco_warning(self, text):
        # Called from inside mj_step: MuJoCo repeats a warning every step of a
        # bad simulation, so the log gets one line per period and a count.
        self.stats["mujoco_warnings"] += 1
        self._log.warning("mujoco", MUJOCO_WARNING_PERIOD,
                          f"MuJoCo: {text.strip()} ({self.stats['mujoco_warnings']} MuJoCo "
                          "warnings so far)")

    # ------------------------------------------------------------------ inputs
    def _on_command(self, message, info):
        data = np.asarray(message.data, dtype=float)
        if data.shape != (self.n,) or not np.all(np.isfinite(data)):
            self.stats["rejected"] += 1
            problem = (f"{data.size} values for {self.n} joints" if data.shape != (self.n,)
                       else "non-finite values")
            self._log.warning(COMMAND_TOPIC, 2.0,
                              f"{COMMAND_TOPIC} rejected ({problem}; order: "
                              f"{self.plant.joint_names}); keeping the last valid command until "
                              "command_timeout")
            return
        now = time.monotonic()
        if now < self.hold_until:
            return              # answers a state from before a reset
        if not self.answered:
            self.stats["latencies"].append(now - self.state_published_at)
        gap = now - self.command_arrival
        pauses = self.pauses.sample()
        if gap > self.stats["command_gap_max"]:
            self.stats["command_gap_max"] = gap
            self.stats["command_gap_detail"] = self._gap_detail(info, now, pauses)
        self.command_arrival, self._command_pauses = now, pauses
        self.command, self.command_time = data, self.plant.time
        self.answered = True
        self.commander_present = True
        if self.waiting:
            self.get_logger().info(f"first command at t={self.plant.time:.3f} s: simulation running")
            self.waiting = False
        self.stats["commands"] += 1
        if self.stats["timed_out"]:
            self.get_logger().info(f"commands are back (none for {gap:.3f} wall s)")
            self.stats["timed_out"] = False

    def _gap_detail(self, info, now, pauses):
        """Where the wall time before a command went: the controller, the middleware or this
        loop, and this loop's since the command before: its own work, waiting for a CPU, or
        the garbage collector."""
        _, source_ns, received_ns = conversions.publication_times(info)
        in_transport = f"{(received_ns - source_ns) * 1e-6:.1f} ms in transport, " \
            if source_ns else ""
        return (f"{in_transport}{max(time.time_ns() - received_ns, 0) * 1e-6:.1f} ms queued here, "
                f"{(now - self.state_published_at) * 1e3:.1f} ms after the state it answers; "
                f"since the command before: {PauseMeter.describe(self._command_pauses, pauses)}")

    def _on_trajectory(self, message):
        if not message.points:      # JTC: an empty trajectory stops; the position is held
            self.trajectory_controller.reset()
            return
        try:
            points = trajectory_points(self.plant.joint_names, message.joint_names, [
                dict(time=stamp_seconds(point.time_from_start),
                     positions=point.positions, velocities=point.velocities,
                     accelerations=point.accelerations, effort=point.effort)
                for point in message.points])
        except SoaDynamicsError as error:
            self.stats["rejected"] += 1
            self._log.warning(TRAJECTORY_TOPIC, 2.0, f"{TRAJECTORY_TOPIC} rejected: {error}; the "
                                                     "active trajectory goes on")
            return
        stamp = stamp_seconds(message.header.stamp)
        start = None                # zero stamp: start now (at the next step)
        if stamp:
            clock = self.plant.time if self.publish_clock else \
                self.get_clock().now().nanoseconds * 1e-9
            start = self.plant.time + (stamp - clock)
        self.trajectory_controller.set_trajectory(points, start)
        self.stats["trajectories"] += 1
        if self.waiting:
            self.get_logger().info(f"first trajectory at t={self.plant.time:.3f} s: simulation running")
            self.waiting = False

    def _restart(self, now):
        """Back to the initial pose at rest, time stopped until a command; sim time ``now``."""
        self.plant.reset(self.initial)
        self.plant.data.time = now     # time goes on: /clock never jumps back
        self.command, self.command_time = None, -math.inf
        self.command_arrival = math.inf     # [wall s] no gap before the first command
        if self.trajectory_controller is not None:
            self.trajectory_controller.reset()
        # Time stands still for a moment: commands computed for the state before
        # the reset may still be on their way; they are dropped.
        self.waiting = True
        self.hold_until = time.monotonic() + RESET_SETTLE
        self.commander_present = True

    def _on_reset(self, _request, response):
        now = self.plant.time
        self._restart(now)
        response.success = True
        response.message = f"reset to {self.initial.tolist()} at t={now:.6f}"   # reset_time() reads it
        return response

    # ------------------------------------------------------------------ loop
    def effort_now(self):
        """The effort for the coming step: the trajectory controller's, or the last valid
        command while it is fresh, else zero."""
        if self.trajectory_controller is not None:
            return self.trajectory_controller.update(self.plant.time, self.plant.positions(),
                                                     self.plant.velocities(), self.plant.timestep)
        timeout = self._value("command_timeout")
        if self.command is not None and self.plant.time - self.command_time <= timeout + 1e-9:
            return self.command
        if self.command is not None and not self.stats["timed_out"]:
            self.get_logger().warning(f"no valid command for {timeout} s: zero effort")
            self.stats["timed_out"] = True
        return np.zeros(self.n)

    def publish_state(self):
        plant = self.plant
        if self.publish_clock:
            stamp = time_from_seconds(plant.time)
            self.clock_publisher.publish(conversions.clock(stamp))
        else:
            stamp = self.get_clock().now().to_msg()
        effort = np.zeros(len(plant.state_names))
        effort[plant.joint_state_index] = self.applied
        message = self._state_message.fill(stamp, plant.state_positions()[1],
                                           plant.state_velocities()[1], effort)
        self.answered = False
        self.state_published_at = time.monotonic()
        self.state_publisher.publish(message)

    def step(self):
        before = self.plant.time
        self.applied = self.plant.set_effort(self.effort_now())
        self.plant.step()
        self.stats["steps"] += 1
        problem = self.plant.divergence()
        if problem is not None:
            # Never published: the arm goes back to its initial pose and waits for commands.
            self.stats["divergences"] += 1
            self._log.error("diverged", MUJOCO_WARNING_PERIOD,
                            f"simulation diverged at t={before:.3f} s ({problem}): reset to "
                            "the initial pose, time stopped until the next command")
            self._restart(before)

    def publish_diagnostics(self):
        now = time.monotonic()
        wall, simulated = now - self._diag_wall, self.plant.time - self._diag_sim
        self._diag_wall, self._diag_sim = now, self.plant.time
        stats = self.stats
        latencies = np.array(stats["latencies"]) * 1e6
        stats["latencies"] = []
        values = {
            "sim_time": f"{self.plant.time:.3f}",
            "real_time_factor": f"{simulated / wall:.3f}" if wall > 0 else "",
            "steps": stats["steps"], "commands": stats["commands"],
            "controller": self.controller, "trajectories": stats["trajectories"],
            "rejected_commands": stats["rejected"], "lockstep_timeouts": stats["lockstep_timeouts"],
            "overruns": stats["overruns"],
            # (statistics, not numpy: np.median imports numpy.ma at its first call, a
            # pause of this loop)
            "command_latency_median_us": f"{statistics.median(latencies):.0f}"
            if latencies.size else "",
            "command_latency_max_us": f"{latencies.max():.0f}" if latencies.size else "",
            "command_fresh": str(not stats["timed_out"] and self.command is not None),
            "mujoco_warnings": stats["mujoco_warnings"], "divergences": stats["divergences"],
            # the longest wall time between two valid commands in this period
            "command_gap_max_ms": f"{stats['command_gap_max'] * 1e3:.1f}",
            "command_gap_max_detail": stats["command_gap_detail"],
        }
        stats["command_gap_max"], stats["command_gap_detail"] = 0.0, ""
        gc_longest, generation = self.pauses.take_longest_gc()
        values["gc_pause_max_ms"] = f"{gc_longest * 1e3:.1f}"
        values["gc_pause_max_generation"] = str(generation)
        self.diagnostics_publisher.publish(conversions.diagnostics(
            f"{self.get_fully_qualified_name()}: MuJoCo arm", self.plant.reference.name,
            "warn" if stats["timed_out"] else "ok",
            "zero effort: no fresh command" if stats["timed_out"] else "running", values,
            self.get_clock().now().to_msg()))

    def destroy_node(self):
        if self.pauses is not None:
            self.pauses.close()
        return super().destroy_node()

    def run(self, executor, running):
        """The loop: publish state k, wait (lockstep / pacing) while taking commands, step.

        ``running()`` turns False on a stop signal (ros.process.run_node).  A floating-base
        robot advances on its timer instead (:mod:`.floating_sim`).
        """
        if self.floating is not None:
            return spin_until_stopped(self, executor, running)
        dt = self.plant.timestep
        next_tick = time.monotonic()
        next_diagnostics = next_tick + self._diag_period
        while running():
            self.publish_state()
            if self.waiting:      # time stands still until the controller speaks
                # Republished every WAITING_REPUBLISH: rarely enough that a controller never
                # has two answers to the same state in flight (in lockstep the second
                # would be taken for the next state's, shifting every command by a step).
                pause_until = time.monotonic() + WAITING_REPUBLISH
                while self.waiting and running() and time.monotonic() < pause_until:
                    executor.spin_once(timeout_sec=pause_until - time.monotonic())
                if self.waiting and not self.get_parameter("wait_for_command").value \
                        and time.monotonic() >= self.hold_until:
                    self.waiting = False
                if self.waiting:
                    next_tick = time.monotonic()
                    continue
            rtf = self._value("real_time_factor")
            # (the trajectory controller is inside the loop: nothing to wait for)
            if self.get_parameter("lockstep").value and self.commander_present \
                    and self.trajectory_controller is None:
                deadline = time.monotonic() + self._value("lockstep_timeout")
                while not self.answered and not self.waiting and running():
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        self.stats["lockstep_timeouts"] += 1
                        self.commander_present = False
                        break
                    executor.spin_once(timeout_sec=remaining)
            if rtf > 0:
                next_tick += dt / rtf
                while running():
                    remaining = next_tick - time.monotonic()
                    if remaining <= 0:
                        break
                    executor.spin_once(timeout_sec=remaining)
                if time.monotonic() - next_tick > 0.1:   # far behind: do not try to catch up
                    self.stats["overruns"] += 1
                    next_tick = time.monotonic()
            else:
                executor.spin_once(timeout_sec=0.0)
            if time.monotonic() >= next_diagnostics:
                next_diagnostics += self._diag_period
                self.publish_diagnostics()
            if self.waiting:    # reset while waiting: publish the new state first
                continue
            self.step()


SUMMARY = """\
A MuJoCo-simulated arm that speaks what gz_ros2_control speaks: /joint_states out,
efforts in on /effort_controller/commands (or, with controller:=joint_trajectory,
trajectories on /joint_trajectory_controller/joint_trajectory); ~/reset; /clock
with publish_clock.  Time stands still until the first command (wait_for_command).
With floating_base:=true: a floating-base robot on the ground, its base on
nav_msgs/Odometry, joint PD (kp, kd) plus the commands."""


def parameters_help(program):
    """``--help``: the usage and the table the node declares (SIM_PARAMETERS)."""
    rows = [(p.name, p.default, p.description, p.read_only) for p in SIM_PARAMETERS]
    rows.append(("gains.<joint>.<gain>", 0.0, "with controller:=joint_trajectory: "
                 f"joint_trajectory_controller gain, <gain> one of {', '.join(GAIN_NAMES)}", True))
    return help_text(program, NODE_NAME, SUMMARY, rows)


def main(args=None):
    # The events executor takes callbacks in arrival order.  The single-threaded one
    # builds a new wait set for each spin_once whose timeout differs from the last (this
    # loop's always do) and runs only its first ready entity, timers and subscriptions
    # before services: while commands kept arriving faster than the loop took them (a
    # loaded machine, a flooding client), ~/reset and the parameter services went
    # unanswered for seconds.
    return run_node(NODE_NAME, SimNode, lambda node: make_executor("events"),
                    lambda node, executor, running: node.run(executor, running), args,
                    parameters_help)


if __name__ == "__main__":
    sys.exit(main())
