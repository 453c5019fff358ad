"""The embedded-model node: a live RobotModel in the ROS graph.

Thin glue: parameters, topics and services in, :class:`LiveModel` and
:class:`RobotModel` calls, messages out (conversions in
:mod:`soa_dynamics_ros.conversions`).  Feedforward torques are computed each
time a joint state arrives (event-driven, not a timer), so the executor is
driven by a ``spin_once`` loop (see README: executors were chosen by
measurement, bench/bench_node_latency.py).
"""
import math
import os
import sys
import time
import traceback
import warnings

import numpy as np
import rclpy
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rcl_interfaces.msg import ParameterDescriptor, SetParametersResult
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import (DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy)
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String
from trajectory_msgs.msg import JointTrajectoryPoint
from visualization_msgs.msg import Marker

from . import conversions, kernels, plant
from .errors import InvalidInputError, JointLimitWarning, SoaDynamicsError
from .kernels.warm import BackgroundWarmup
from .live_model import FEEDFORWARD_MODES, LiveModel
from .model import KERNELS_ENV, RobotModel
from .ros_process import run_node
from .urdf import read_description_text
from .validation import as_vector
from .srv import (EvaluateTrajectory, ForwardDynamics, GravityTorques, HybridDynamics,
                  InverseDynamics, MassMatrix, MixedDynamics, SetPayload, TaskSpaceInertia)

NODE_NAME = "soa_dynamics"
EXECUTORS = ("events", "single_threaded")
# Chosen by measurement (README, "Executors"): with the EventsExecutor and a
# queue of 10 every joint state of a 60 s run at 1 kHz was answered.
DEFAULT_EXECUTOR = "events"
DEFAULT_JOINT_STATES_DEPTH = 10


class ModelNotReady(SoaDynamicsError):
    """A request arrived before any robot description was loaded."""


def _descriptor(text, read_only=False, dynamic_typing=False):
    return ParameterDescriptor(description=text, read_only=read_only, dynamic_typing=dynamic_typing)


class EmbeddedModelNode(Node):
    def __init__(self, **kwargs):
        super().__init__(NODE_NAME, **kwargs)
        self._declare_parameters()
        self.live = None
        self._warmup = None
        self._stats = _Statistics()
        self._was_stale = False
        self._messages = None           # conversions.FeedforwardMessages of live.command_joints
        self.feedforward_publisher = self.create_publisher(Float64MultiArray, "~/feedforward", 1)
        self.feedforward_state_publisher = self.create_publisher(JointState, "~/feedforward_state", 1)
        self.diagnostics_publisher = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self.marker_publisher = self.create_publisher(Marker, "~/task_space_inertia_marker", 1)

        description = self._description_from_parameters()
        if description is not None:
            self._load_model(description, source="parameters")
        else:
            self.get_logger().info("no robot_description or urdf_file parameter: waiting for "
                                   "the /robot_description topic")
        # Transient local, as robot_state_publisher publishes it; always listened
        # to when no parameter gave the model, so a new description reloads it.
        self._description_subscription = None
        if description is None:
            qos = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                             reliability=ReliabilityPolicy.RELIABLE)
            self._description_subscription = self.create_subscription(
                String, "/robot_description", self._on_description, qos)

        self.create_subscription(JointState, "joint_states", self._on_joint_states,
                                 self._joint_state_qos())
        self.create_subscription(Float64MultiArray, "~/desired_acceleration",
                                 self._on_desired_acceleration, 10)
        self.create_subscription(JointTrajectoryPoint, "~/desired_state", self._on_desired_state, 10)
        services = {
            "gravity_torques": (GravityTorques, self._gravity_torques),
            "inverse_dynamics": (InverseDynamics, self._inverse_dynamics),
            "forward_dynamics": (ForwardDynamics, self._forward_dynamics),
            "mass_matrix": (MassMatrix, self._mass_matrix),
            "task_space_inertia": (TaskSpaceInertia, self._task_space_inertia),
            "hybrid_dynamics": (HybridDynamics, self._hybrid_dynamics),
            "mixed_dynamics": (MixedDynamics, self._mixed_dynamics),
            "set_payload": (SetPayload, self._set_payload),
            "evaluate_trajectory": (EvaluateTrajectory, self._evaluate_trajectory),
        }
        for name, (service_type, handler) in services.items():
            self.create_service(service_type, f"~/{name}", self._guarded(name, handler))
        self.add_on_set_parameters_callback(self._on_set_parameters)
        period = self.get_parameter("diagnostics_period").value
        self.create_timer(period, self._publish_diagnostics)
        self.create_timer(0.5, self._poll_warmup)
        marker_rate = self.get_parameter("marker_rate").value
        if marker_rate > 0:
            self.create_timer(1.0 / marker_rate, self._publish_marker)

    # ------------------------------------------------------------------ parameters
    def _declare_parameters(self):
        declare = self.declare_parameter
        declare("robot_description", "", _descriptor("URDF or xacro XML of the robot"))
        declare("urdf_file", "", _descriptor("path of a URDF/xacro file (if robot_description is empty)"))
        declare("feedforward_mode", "gravity", _descriptor(" | ".join(FEEDFORWARD_MODES)))
        declare("command_joints", [""], _descriptor(
            "joint order of ~/feedforward (empty: all joints, model order)"))
        declare("state_timeout", 0.05, _descriptor("joint states older than this [s] stop the feedforward"))
        declare("effort_limit_scale", 1.0, _descriptor("feedforward is clamped to scale x URDF effort limit"))
        declare("gravity", [0.0, 0.0, -9.81], _descriptor("gravity vector in the root link frame [m/s^2]"))
        declare("computed_torque_kp", 0.0, _descriptor("computed-torque position gain [1/s^2]"))
        declare("computed_torque_kd", 0.0, _descriptor("computed-torque velocity gain [1/s]"))
        declare("payloads", [""], _descriptor(
            "names of start-up payloads; each reads payload.<name>.link, .mass, .com, .inertia"))
        declare("joint_states_reliability", "best_effort", _descriptor(
            "best_effort (accepts reliable and best-effort publishers) or reliable", read_only=True))
        declare("joint_states_depth", DEFAULT_JOINT_STATES_DEPTH, _descriptor(
            "joint_states queue depth (1: only the newest state is answered)", read_only=True))
        declare("diagnostics_period", 1.0, _descriptor("[s]", read_only=True))
        declare("marker_frame", "", _descriptor("frame whose inertia ellipsoid is published (empty: none)"))
        declare("marker_rate", 0.0, _descriptor("[Hz] of ~/task_space_inertia_marker; 0: off",
                                                read_only=True))
        declare("executor", DEFAULT_EXECUTOR, _descriptor(" | ".join(EXECUTORS), read_only=True))
        declare("kernels", "auto", _descriptor(
            "auto (compiled kernels once cached: compiled in a child process, then loaded) | off",
            read_only=True))

    def _joint_state_qos(self):
        reliability = self.get_parameter("joint_states_reliability").value
        if reliability not in ("best_effort", "reliable"):
            raise SoaDynamicsError(f"joint_states_reliability must be best_effort or reliable, "
                                   f"not {reliability!r}")
        return QoSProfile(depth=self.get_parameter("joint_states_depth").value,
                          history=HistoryPolicy.KEEP_LAST,
                          reliability=(ReliabilityPolicy.BEST_EFFORT if reliability == "best_effort"
                                       else ReliabilityPolicy.RELIABLE))

    def _description_from_parameters(self, overrides=None):
        values = {name: self.get_parameter(name).value for name in ("robot_description", "urdf_file")}
        values.update(overrides or {})
        if values["robot_description"].strip():
            return values["robot_description"]
        if values["urdf_file"].strip():
            return values["urdf_file"]
        return None

    def _on_set_parameters(self, parameters):
        """Validate a runtime change by applying it to a fresh LiveModel; reject it otherwise."""
        changes = {p.name: p.value for p in parameters}
        try:
            if "robot_description" in changes or "urdf_file" in changes:
                description = self._description_from_parameters(
                    {k: v for k, v in changes.items() if k in ("robot_description", "urdf_file")})
                if description is None:
                    raise SoaDynamicsError("robot_description and urdf_file cannot both be empty")
                model = RobotModel.from_urdf(description, kernels="off")
                self._install(self._build_live(model, changes), "parameters")
                self._start_kernels(model, description)
            elif self.live is not None and set(changes) & {
                    "feedforward_mode", "command_joints", "state_timeout", "effort_limit_scale",
                    "gravity", "computed_torque_kp", "computed_torque_kd"}:
                self._install(self._build_live(self.live.model, changes), None)
            elif "feedforward_mode" in changes and changes["feedforward_mode"] not in FEEDFORWARD_MODES:
                raise SoaDynamicsError(f"feedforward_mode must be one of {FEEDFORWARD_MODES}")
        except (SoaDynamicsError, TypeError, ValueError) as error:
            self.get_logger().error(f"parameter change refused: {error}")
            return SetParametersResult(successful=False, reason=str(error))
        return SetParametersResult(successful=True)

    # ------------------------------------------------------------------ the model
    def _value(self, name, changes):
        return changes[name] if name in changes else self.get_parameter(name).value

    def _build_live(self, model, changes=None):
        """A LiveModel configured from the parameters (with pending ``changes``)."""
        changes = changes or {}
        mode = self._value("feedforward_mode", changes)
        if mode not in FEEDFORWARD_MODES:
            raise SoaDynamicsError(f"feedforward_mode must be one of {FEEDFORWARD_MODES}, not {mode!r}")
        # Everything is validated before the (possibly shared) model is touched.
        gravity = as_vector("gravity", self._value("gravity", changes), 3)
        for name in ("state_timeout", "effort_limit_scale"):
            value = float(self._value(name, changes))
            if not (math.isfinite(value) and value > 0):
                raise SoaDynamicsError(f"{name} must be finite and > 0, not {value}")
        command_joints = [name for name in self._value("command_joints", changes) if name]
        live = LiveModel(model, self._value("state_timeout", changes), command_joints,
                         self._value("effort_limit_scale", changes))
        gains = (float(self._value("computed_torque_kp", changes)),
                 float(self._value("computed_torque_kd", changes)))
        if not all(math.isfinite(gain) and gain >= 0 for gain in gains):
            raise SoaDynamicsError(f"computed_torque_kp and _kd must be finite and >= 0, not {gains}")
        live.gains = gains
        model.gravity = gravity
        if self.live is None:
            self._attach_startup_payloads(model)
        else:
            # Carry over the measured state, and the payloads that still fit a new model.
            old = self.live
            if model is old.model:
                live.desired_acceleration, live.desired_point = (old.desired_acceleration,
                                                                 old.desired_point)
            else:
                for name, (link, mass, com, inertia) in old.model.payloads.items():
                    if link in model.frame_names:
                        model.attach_payload(name, link, mass, com, inertia)
                    else:
                        self.get_logger().warning(f"payload {name!r} dropped: the new model has "
                                                  f"no link {link!r}")
            for i, name in enumerate(model.joint_names):
                if name in old.model.joint_names:
                    j = old.model.joint_index(name)
                    live.position[i], live.velocity[i] = old.position[j], old.velocity[j]
                    live.received_at[i] = old.received_at[j]
        return live

    def _attach_startup_payloads(self, model):
        for name in [n for n in self.get_parameter("payloads").value if n]:
            prefix = f"payload.{name}."
            for key, default in (("link", ""), ("mass", 0.0), ("com", [0.0, 0.0, 0.0]),
                                 ("inertia", [0.0] * 9)):
                if not self.has_parameter(prefix + key):
                    self.declare_parameter(prefix + key, default)
            inertia = np.asarray(self.get_parameter(prefix + "inertia").value, dtype=float)
            if inertia.size != 9:
                raise SoaDynamicsError(f"{prefix}inertia needs 9 values (3x3 row-major)")
            model.attach_payload(name, self.get_parameter(prefix + "link").value,
                                 self.get_parameter(prefix + "mass").value,
                                 self.get_parameter(prefix + "com").value,
                                 inertia.reshape(3, 3))
            self.get_logger().info(f"payload {name!r} attached from parameters")

    def _load_model(self, description, source):
        started = time.perf_counter()
        # Kernels only by explicit choice below: the library's own "auto" would
        # compile inside this process, stalling the control loop for seconds.
        model = RobotModel.from_urdf(description, kernels="off")
        live = self._build_live(model)
        self._install(live, source, time.perf_counter() - started)
        self._start_kernels(model, description)

    def _start_kernels(self, model, description):
        """Use compiled kernels: now if cached, else after a child process has compiled them."""
        if self._warmup is not None:
            self._warmup.stop()
            self._warmup = None
        if (self.get_parameter("kernels").value == "off" or not kernels.compiler_available()
                or os.environ.get(KERNELS_ENV) == "off"):
            return
        model.set_kernels("c")
        frames = [f for f in [self.get_parameter("marker_frame").value] if f in model.frame_names]
        if model.kernels_cached(frames):
            self._use_kernels(model, frames)
            return
        model.set_kernels("off")
        xml = description if description.lstrip().startswith("<") else \
            read_description_text(description)
        self._warmup = BackgroundWarmup(xml, frames)
        self._warmup_target = (model, frames)
        self.get_logger().info("compiling the kernels of this robot in a child process (seconds, "
                               "once per robot); the numpy path answers meanwhile")

    def _use_kernels(self, model, frames):
        started = time.perf_counter()
        model.set_kernels("c")
        model.prepare_kernels(frames)
        self.get_logger().info(f"compiled kernels in use (loaded from the cache in "
                               f"{time.perf_counter() - started:.2f} s)")

    def _poll_warmup(self):
        if self._warmup is None:
            return
        outcome = self._warmup.poll()
        if outcome is None:
            return
        code, log = outcome
        self._warmup = None
        model, frames = self._warmup_target
        if code != 0:
            self.get_logger().error(f"kernel compilation failed (exit {code}); staying on the "
                                    f"numpy path:\n{log}")
        elif self.live is not None and self.live.model is model:
            self._use_kernels(model, frames)

    def _install(self, live, source, seconds=None):
        self.live = live
        if source is not None:
            model = live.model
            took = f" in {seconds * 1e3:.0f} ms" if seconds is not None else ""
            self.get_logger().info(
                f"robot model {model.name!r} loaded from {source}{took}: {model.dof} joints "
                f"({', '.join(model.joint_names)}), {len(model.frame_names)} frames, "
                f"{model.total_mass:.2f} kg")

    def _on_description(self, message):
        try:
            self._load_model(message.data, "/robot_description")
        except SoaDynamicsError as error:
            self.get_logger().error(f"/robot_description rejected, keeping the previous model: {error}")

    # ------------------------------------------------------------------ feedforward
    def _on_joint_states(self, message):
        try:
            self._handle_joint_states(message)
        except Exception as error:  # noqa: BLE001 - the control loop's callback must never die
            self._stats.rejected += 1
            self._stats.last_rejection = f"internal error: {error}"
            self.get_logger().error(f"joint_states handling failed: {error}\n"
                                    f"{traceback.format_exc()}", throttle_duration_sec=5.0)

    def _handle_joint_states(self, message):
        if self.live is None:
            self.get_logger().warning("joint_states received but no robot model is loaded yet",
                                      throttle_duration_sec=5.0)
            return
        now = time.monotonic()
        self._stats.joint_states += 1
        names, positions, velocities = conversions.joint_state_arrays(message)
        update = self.live.update_state(names, positions, velocities, now)
        if update.unknown:
            self.get_logger().warning(f"joint_states names unknown to the model are ignored: "
                                      f"{update.unknown}", throttle_duration_sec=10.0)
        if not update.accepted:
            self._stats.rejected += 1
            self._stats.last_rejection = update.error
            self.get_logger().warning(f"joint_states message rejected: {update.error}",
                                      throttle_duration_sec=2.0)
            return
        self._publish_feedforward(now, message.header.stamp)

    def _publish_feedforward(self, now, stamp):
        if self._warmup is not None:
            # No first command from the numpy path (~1 ms per state here: at 1 kHz it
            # fell behind, and the sim saw 0.1-0.9 s gaps right after it); a sim that
            # waits for the first command holds still until the kernels are in.
            self._stats.withheld_reason = "compiled kernels not ready yet"
            return
        started = time.perf_counter()
        result = self.live.feedforward(self.get_parameter("feedforward_mode").value, now)
        self._stats.record_compute(time.perf_counter() - started)
        if result.effort is None:
            self._stats.withheld_reason = result.reason
            if not self._was_stale and "older than" in result.reason:
                self.get_logger().warning(f"feedforward withheld: {result.reason}")
            self._was_stale = "older than" in result.reason
            return
        if self._was_stale:
            self.get_logger().info("joint states fresh again: feedforward resumed")
            self._was_stale = False
        self._stats.withheld_reason = ""
        if result.clamped:
            self._stats.clamped += 1
            self._stats.clamped_joints = result.clamped
            self.get_logger().warning(f"feedforward clamped to the effort limits of {result.clamped}",
                                      throttle_duration_sec=2.0)
        live = self.live
        if self._messages is None or self._messages.joint_names is not live.command_joints:
            self._messages = conversions.FeedforwardMessages(live.command_joints)
        effort_array, effort_state = self._messages.fill(
            result.effort, live.position[live.command_index], live.velocity[live.command_index],
            stamp)
        self.feedforward_publisher.publish(effort_array)
        self.feedforward_state_publisher.publish(effort_state)
        self._stats.published += 1

    def _on_desired_acceleration(self, message):
        if self.live is None:
            return
        try:
            self.live.set_desired_acceleration(self.live.command_joints, message.data)
        except SoaDynamicsError as error:
            self.get_logger().warning(f"~/desired_acceleration rejected: {error}",
                                      throttle_duration_sec=2.0)

    def _on_desired_state(self, message):
        if self.live is None:
            return
        try:
            self.live.set_desired_point(self.live.command_joints, message.positions,
                                        message.velocities, message.accelerations)
        except SoaDynamicsError as error:
            self.get_logger().warning(f"~/desired_state rejected: {error}", throttle_duration_sec=2.0)

    # ------------------------------------------------------------------ services
    def _guarded(self, name, handler):
        """Every service answers: success=false with the message on any bad request."""
        def callback(request, response):
            started = time.perf_counter()
            try:
                if self.live is None:
                    raise ModelNotReady("no robot model loaded yet (robot_description, urdf_file "
                                        "or the /robot_description topic)")
                handler(request, response)
                response.success = True
            except SoaDynamicsError as error:
                response.success = False
                response.message = str(error)
            except Exception as error:  # noqa: BLE001 - a service must answer, not crash the node
                self.get_logger().error(f"~/{name} failed unexpectedly: {error}\n"
                                        f"{traceback.format_exc()}")
                response.success = False
                response.message = f"internal error: {type(error).__name__}: {error}"
            self._stats.services += 1
            self._stats.service_time += time.perf_counter() - started
            return response
        return callback

    def _request_state(self, state):
        names, positions, velocities = conversions.joint_state_arrays(state)
        q, qd = self.live.merged_state(names, positions, velocities)
        return q, qd, self.live.order_of(names)

    def _in_model_order(self, values, order, what):
        """A request vector given in state.name order, as a full model-order vector."""
        full = np.zeros(self.live.model.dof)
        full[order] = conversions.vector_in_order(values, len(order), what)
        return full

    def _gravity_torques(self, request, response):
        q, _, _ = self._request_state(request.state)
        response.name = self.live.model.joint_names
        response.effort = self.live.model.gravity_torques(q).tolist()

    def _inverse_dynamics(self, request, response):
        q, qd, order = self._request_state(request.state)
        qdd = self._in_model_order(request.acceleration, order, "acceleration")
        wrenches = conversions.wrenches_from_messages(request.wrenches)
        response.name = self.live.model.joint_names
        response.effort = self.live.model.inverse_dynamics(q, qd, qdd, wrenches).tolist()

    def _forward_dynamics(self, request, response):
        q, qd, order = self._request_state(request.state)
        tau = self._in_model_order(request.effort, order, "effort")
        wrenches = conversions.wrenches_from_messages(request.wrenches)
        response.name = self.live.model.joint_names
        response.acceleration = self.live.model.forward_dynamics(q, qd, tau, wrenches).tolist()

    def _mass_matrix(self, request, response):
        q, _, _ = self._request_state(request.state)
        response.name = self.live.model.joint_names
        response.mass_matrix = self.live.model.mass_matrix(q).ravel().tolist()

    def _task_space_inertia(self, request, response):
        q, _, _ = self._request_state(request.state)
        model = self.live.model
        target = model.subgraph(list(request.joints)) if len(request.joints) else model
        info = target.task_space_inertia(q, request.frame, damping=request.damping or None,
                                         return_info=True)
        response.name = target.joint_names
        response.inertia = info.inertia.ravel()
        response.inertia_inverse = info.inertia_inverse.ravel()
        response.condition_number = info.condition_number
        response.rank = info.rank

    def _hybrid_dynamics(self, request, response):
        q, qd, order = self._request_state(request.state)
        tau = self._in_model_order(request.feedforward_torque, order, "feedforward_torque")
        result = self.live.model.hybrid_dynamics(
            q, qd, conversions.constraints_from_messages(request.constraints), tau,
            conversions.wrenches_from_messages(request.wrenches))
        response.name = result.joint_names
        response.acceleration = result.qdd.tolist()
        response.constraint_torque = result.constraint_torques.tolist()
        response.constraint_force_magnitude = result.nu.tolist()
        response.rank = result.rank
        if result.dropped_directions.shape[1]:
            response.message = (f"{result.dropped_directions.shape[1]} redundant or singular "
                                "constraint direction(s) dropped")

    def _mixed_dynamics(self, request, response):
        q, qd, order = self._request_state(request.state)
        qdd = self._in_model_order(request.acceleration, order, "acceleration")
        tau = self._in_model_order(request.effort, order, "effort")
        qdd_all, tau_all = self.live.model.mixed_dynamics(q, qd, qdd, tau, list(request.prescribed))
        response.name = self.live.model.joint_names
        response.acceleration = qdd_all.tolist()
        response.effort = tau_all.tolist()

    def _set_payload(self, request, response):
        model = self.live.model
        if request.detach:
            model.detach_payload(request.payload.name)
            self.get_logger().info(f"payload {request.payload.name!r} detached")
        else:
            model.attach_payload(**conversions.payload_from_message(request.payload))
            self.get_logger().info(f"payload {request.payload.name!r} ({request.payload.mass} kg) "
                                   f"attached to {request.payload.link!r}")
        response.payloads = list(model.payloads)

    def _evaluate_trajectory(self, request, response):
        """Torques along a JointTrajectory (plant.torques); joints it omits hold their synced position."""
        model, live = self.live.model, self.live
        trajectory = request.trajectory
        points = trajectory.points
        if not points:
            raise InvalidInputError("the trajectory has no points")
        names = list(trajectory.joint_names)
        count = len(names)
        for i, point in enumerate(points):
            if len(point.positions) != count:
                raise InvalidInputError(f"point {i} has {len(point.positions)} positions for "
                                        f"{count} joint names")
        time_from_start = np.array([p.time_from_start.sec + 1e-9 * p.time_from_start.nanosec
                                    for p in points])
        held = [name for name in model.joint_names if name not in names]
        full_names = names + held
        positions = np.zeros((len(points), len(full_names)))
        positions[:, :count] = [p.positions for p in points]
        if held:
            q, _ = live.merged_state([], [], [])
            positions[:, count:] = q[live.order_of(held)]

        def rates(field_name):
            values = [getattr(p, field_name) for p in points]
            if all(len(v) == count for v in values):
                array = np.zeros_like(positions)
                array[:, :count] = values
                return array
            return None   # not given for every point: differentiated
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", JointLimitWarning)
            path = plant.trajectory_from_arrays(model, time_from_start, positions, rates("velocities"),
                                                rates("accelerations"), joint_names=full_names)
        added = []
        try:
            for payload in request.payloads:
                arguments = conversions.payload_from_message(payload)
                arguments["name"] = f"evaluate_trajectory/{arguments['name'] or len(added)}"
                model.attach_payload(**arguments)
                added.append(arguments["name"])
            report = plant.torque_report(model, path, plant.path_torques(model, path))
        finally:
            for name in added:
                model.detach_payload(name)
        response.name = report.joint_names
        response.points = len(path)
        response.effort = report.torques.ravel().tolist()
        response.peak_effort = report.peak.tolist()
        response.limit_ratio = report.ratio.tolist()
        response.within_limits = not report.violated
        first = report.first_violation
        response.first_violation_time = float(first[0]) if first else -1.0
        notes = [f"{name!r} not in the trajectory: held at its synced position" for name in held[:3]]
        notes += [str(w.message) for w in caught]
        if first:
            notes.insert(0, f"{first[1]!r} exceeds its effort limit at t={first[0]:g} s")
        response.message = "; ".join(notes)

    # ------------------------------------------------------------------ diagnostics and marker
    def _publish_diagnostics(self):
        status = DiagnosticStatus(name=f"{self.get_fully_qualified_name()}: embedded model",
                                  hardware_id=self.live.model.name if self.live else "")
        now = time.monotonic()
        stats, period = self._stats.take(), self.get_parameter("diagnostics_period").value
        values = {"feedforward_mode": self.get_parameter("feedforward_mode").value}
        if self.live is None:
            status.level, status.message = DiagnosticStatus.ERROR, "no robot model loaded"
        else:
            age = self.live.state_age(now)
            values.update({
                "model": self.live.model.name, "joints": str(self.live.model.dof),
                "joint_state_rate_hz": f"{stats.joint_states / period:.1f}",
                "joint_state_age_s": "never received" if math.isinf(age) else f"{age:.4f}",
                "feedforward_published": str(stats.published),
                "feedforward_compute_mean_us": f"{stats.mean_compute_us():.1f}",
                "feedforward_compute_max_us": f"{stats.max_compute * 1e6:.1f}",
                "clamped_messages": str(stats.clamped),
                "clamped_joints": ", ".join(stats.clamped_joints),
                "rejected_joint_states": str(stats.rejected),
                "last_rejection": stats.last_rejection,
                "services_answered": str(stats.services),
                "kernels": ("compiled" if self.live.model.kernels[1] else
                            "numpy path (kernels compiling)" if self._warmup else "numpy path"),
                "payloads": ", ".join(f"{n} ({p[1]} kg on {p[0]})"
                                      for n, p in self.live.model.payloads.items()),
            })
            stale = self.live.stale_joints(now)
            if values["feedforward_mode"] != "off" and stale:
                status.level = DiagnosticStatus.WARN
                status.message = (f"feedforward stopped: no joint state for {stale[:4]}"
                                  f"{'...' if len(stale) > 4 else ''} within {self.live.state_timeout} s")
            elif stats.clamped:
                status.level, status.message = DiagnosticStatus.WARN, "feedforward clamped to effort limits"
            elif stats.rejected:
                status.level, status.message = DiagnosticStatus.WARN, f"joint states rejected: {stats.last_rejection}"
            else:
                status.level, status.message = DiagnosticStatus.OK, "model live"
        status.values = [KeyValue(key=k, value=str(v)) for k, v in values.items()]
        array = DiagnosticArray(status=[status])
        array.header.stamp = self.get_clock().now().to_msg()
        self.diagnostics_publisher.publish(array)

    def _publish_marker(self):
        frame = self.get_parameter("marker_frame").value
        if self.live is None or not frame or self.live.stale_joints(time.monotonic()):
            return
        try:
            model, q = self.live.model, self.live.position
            inertia = model.task_space_inertia(q, frame, part="translational", damping=1e-6)
            pose = model.frame_pose(q, frame)
        except SoaDynamicsError as error:
            self.get_logger().warning(f"inertia marker: {error}", throttle_duration_sec=10.0)
            return
        # The ellipsoid x^T Lambda x = 1: semi-axes 1/sqrt(eigenvalues) along the eigenvectors.
        values, vectors = np.linalg.eigh(inertia)
        if np.linalg.det(vectors) < 0:
            vectors[:, 0] *= -1
        marker = Marker(type=Marker.SPHERE, action=Marker.ADD, ns="task_space_inertia", id=0)
        marker.header.frame_id = model.tree.root_link
        marker.header.stamp = self.get_clock().now().to_msg()
        marker.pose.position = conversions.point(pose[:3, 3])
        marker.pose.orientation = conversions.quaternion_from_rotation(vectors)
        marker.scale = conversions.vector3(2.0 / np.sqrt(values))
        marker.color.r, marker.color.g, marker.color.b, marker.color.a = 0.2, 0.6, 1.0, 0.5
        self.marker_publisher.publish(marker)


    def destroy_node(self):
        if self._warmup is not None:
            self._warmup.stop()
        return super().destroy_node()


class _Statistics:
    """Counters for one diagnostics period."""

    def __init__(self):
        self.joint_states = self.published = self.clamped = self.rejected = self.services = 0
        self.compute_total = self.max_compute = self.service_time = 0.0
        self.compute_count = 0
        self.clamped_joints, self.last_rejection, self.withheld_reason = [], "", ""

    def record_compute(self, seconds):
        self.compute_total += seconds
        self.compute_count += 1
        self.max_compute = max(self.max_compute, seconds)

    def mean_compute_us(self):
        return 1e6 * self.compute_total / self.compute_count if self.compute_count else 0.0

    def take(self):
        """This period's figures, resetting the counters (the last rejection stays)."""
        taken = _Statistics()
        taken.__dict__.update(self.__dict__)
        last_rejection = self.last_rejection
        self.__init__()
        self.last_rejection = last_rejection
        return taken


def make_executor(kind):
    if kind == "events":
        from rclpy.experimental import EventsExecutor
        return EventsExecutor()
    if kind == "single_threaded":
        return SingleThreadedExecutor()
    raise SoaDynamicsError(f"executor must be one of {EXECUTORS}, not {kind!r}")


def _spin(node, executor, running):
    # A spin_once loop, not spin(): the EventsExecutor's spin() busy-loops and
    # misses messages from other processes (see README, "Executors").
    while running():
        executor.spin_once(timeout_sec=0.1)


def main(args=None):
    return run_node(NODE_NAME, EmbeddedModelNode,
                    lambda node: make_executor(node.get_parameter("executor").value), _spin, args)


if __name__ == "__main__":
    sys.exit(main())
