"""The embedded-model node: a live RobotModel in the ROS graph.

Thin glue: parameters, topics and services in, :class:`LiveModel` and
:class:`RobotModel` calls, messages out (conversions in
:mod:`soa_dynamics_ros.ros.conversions`).  Feedforward torques are computed each
time a joint state arrives (event-driven, not a timer), so the executor is
driven by a ``spin_once`` loop (see README: executors were chosen by
measurement, bench/bench_node_latency.py).
"""
import os
import sys
import threading
import time
import traceback
import warnings
from dataclasses import dataclass

import numpy as np
import rclpy
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rcl_interfaces.msg import ParameterDescriptor, SetParametersResult
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import (DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy)
from rclpy.subscription import Subscription
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String
from trajectory_msgs.msg import JointTrajectoryPoint
from visualization_msgs.msg import Marker

from . import conversions
from .. import kernels
from .. import plant
from ..errors import InvalidInputError, JointLimitWarning, SoaDynamicsError
from ..embedded.warmup import BackgroundWarmup
from ..embedded.live_model import LiveModel, TransportAge, require_moving_joints
from ..model.robot_model import KERNELS_ENV, RobotModel
from .parameters import (DEFAULT_EXECUTOR, DEFAULT_JOINT_STATES_DEPTH,  # noqa: F401 (API)
                              EXECUTORS, PARAMETERS, PAYLOAD_FIELDS, validate_all)
from .process import run_node
from ..description.urdf import read_description_text
from ..srv import (EvaluateTrajectory, ForwardDynamics, GravityTorques, HybridDynamics,
                  InverseDynamics, MassMatrix, MixedDynamics, SetPayload, TaskSpaceInertia)

NODE_NAME = "soa_dynamics"
# Parameters a new LiveModel is built for (the model itself stays).
LIVE_PARAMETERS = {"feedforward_mode", "command_joints", "state_timeout", "effort_limit_scale",
                   "gravity", "computed_torque_kp", "computed_torque_kd"}
DESCRIPTION_PARAMETERS = {"robot_description", "urdf_file"}
# How often finished background work (a description load, a kernel warm-up)
# is looked for: the delay before a loaded model serves.
BACKGROUND_POLL_PERIOD = 0.05
# At most one "feedforward withheld" line per this many seconds.
WITHHELD_LOG_PERIOD = 2.0


class ModelNotReady(SoaDynamicsError):
    """A request arrived before any robot description was loaded."""


@dataclass
class LoadedDescription:
    """What the loader thread made of a description (``error`` set when it failed)."""
    source: str
    model: RobotModel = None
    warmup: tuple = None            # (URDF XML, frames) when the kernels must be compiled first
    error: str = ""
    seconds: float = 0.0


class DescriptionLoader:
    """Loads robot descriptions in a worker thread, so the executor thread never waits for one.

    Parsing, xacro expansion and loading cached kernels take milliseconds to
    seconds (unbounded for a hostile xacro); meanwhile the installed model
    keeps serving.  Only the newest request counts: a request waiting when a
    newer one arrives is dropped unstarted, and a load that finishes after a
    newer request was made is discarded.
    """

    def __init__(self, load):
        self._load = load                 # description -> (model, warmup); runs in the worker
        self._condition = threading.Condition()
        self._generation = 0
        self._pending = None              # (generation, description, source)
        self._finished = None             # (generation, LoadedDescription)
        self._closed = False
        threading.Thread(target=self._run, name="description-loader", daemon=True).start()

    def request(self, description, source):
        with self._condition:
            self._generation += 1
            self._pending = (self._generation, description, source)
            self._condition.notify()

    def take_finished(self):
        """The newest request's outcome once it is ready, else None."""
        with self._condition:
            finished, self._finished = self._finished, None
            if finished is None or finished[0] != self._generation:
                return None
            return finished[1]

    def close(self):
        # The worker is not joined: a load can run for as long as a hostile
        # description makes it; the daemon thread ends with the process.
        with self._condition:
            self._closed = True
            self._condition.notify()

    def _run(self):
        while True:
            with self._condition:
                while self._pending is None and not self._closed:
                    self._condition.wait()
                if self._closed:
                    return
                generation, description, source = self._pending
                self._pending = None
            started = time.perf_counter()
            try:
                model, warmup = self._load(description)
                loaded = LoadedDescription(source, model, warmup)
            except SoaDynamicsError as error:
                loaded = LoadedDescription(source, error=str(error))
            except Exception as error:  # noqa: BLE001 - any description must leave the loader alive
                loaded = LoadedDescription(source, error=f"internal error: {type(error).__name__}: "
                                                         f"{error}")
            loaded.seconds = time.perf_counter() - started
            with self._condition:
                if generation == self._generation:
                    self._finished = (generation, loaded)


def _descriptor(spec):
    # Dynamic typing: node_parameters validates types itself, so that an int
    # given for a double is accepted and anything else gets one clear line.
    return ParameterDescriptor(description=spec.description, read_only=spec.read_only,
                               dynamic_typing=True)


class EmbeddedModelNode(Node):
    def __init__(self, **kwargs):
        super().__init__(NODE_NAME, **kwargs)
        for name, spec in PARAMETERS.items():
            self.declare_parameter(name, spec.default, _descriptor(spec))
        self._config = validate_all({name: self.get_parameter(name).value for name in PARAMETERS})
        self.live = None
        self._warmup = None
        self._awaiting_kernels = False      # compiling, or loading them once compiled
        self._stats = _Statistics()
        self._withheld_logged_at = -float("inf")
        self._withholding = False
        self._description_error = ""
        self._messages = None           # conversions.FeedforwardMessages of live.command_joints
        self._loader = DescriptionLoader(self._load_description)
        self._transport_age = TransportAge()
        self.feedforward_publisher = self.create_publisher(Float64MultiArray, "~/feedforward", 1)
        self.feedforward_state_publisher = self.create_publisher(JointState, "~/feedforward_state", 1)
        self.diagnostics_publisher = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self.marker_publisher = self.create_publisher(Marker, "~/task_space_inertia_marker", 1)

        description = self._description_from(self._config)
        if description is not None:
            # At start-up nothing is being served yet: load here, so that a bad
            # description ends the process with one line (exit 1).
            started = time.perf_counter()
            model, warmup = self._load_description(description)
            self._check_marker_frame(self._config["marker_frame"], model)
            self._install(self._build_live(model, self._config), "parameters",
                          time.perf_counter() - started)
            self._start_warmup(model, warmup)
        else:
            self.get_logger().info("no robot_description or urdf_file parameter: waiting for "
                                   "the /robot_description topic")
            # Transient local, as robot_state_publisher publishes it; listened to
            # only when no parameter gave the model, so a new description reloads it.
            qos = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                             reliability=ReliabilityPolicy.RELIABLE)
            self.create_subscription(String, "/robot_description", self._on_description, qos)

        joint_states = self.create_subscription(JointState, "joint_states", self._on_joint_states,
                                                self._joint_state_qos())
        # Freshness needs each state's arrival time (MessageInfo).  rclpy 9.1.2's
        # EventsExecutor passes (message, info) as one tuple where the other
        # executors pass two arguments, and fails on a two-argument callback:
        # the callback takes both forms, and is declared as wanting the info.
        joint_states._callback_type = Subscription.CallbackType.WithMessageInfo
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
        self.create_timer(self._config["diagnostics_period"],
                          self._never_raises("diagnostics", self._publish_diagnostics))
        self.create_timer(BACKGROUND_POLL_PERIOD,
                          self._never_raises("background work", self._poll_background))
        if self._config["marker_rate"] > 0:
            self.create_timer(1.0 / self._config["marker_rate"],
                              self._never_raises("inertia marker", self._publish_marker))

    def _never_raises(self, what, callback):
        """A timer callback whose failure is logged: an exception would end the node."""
        def guarded():   # no parameter: rclpy would pass a TimerInfo to one
            try:
                callback()
            except Exception as error:  # noqa: BLE001 - the node must outlive any one callback
                self.get_logger().error(f"{what} failed: {type(error).__name__}: {error}\n"
                                        f"{traceback.format_exc()}", throttle_duration_sec=10.0)
        return guarded

    # ------------------------------------------------------------------ parameters
    def _joint_state_qos(self):
        best_effort = self._config["joint_states_reliability"] == "best_effort"
        return QoSProfile(depth=self._config["joint_states_depth"], history=HistoryPolicy.KEEP_LAST,
                          reliability=(ReliabilityPolicy.BEST_EFFORT if best_effort
                                       else ReliabilityPolicy.RELIABLE))

    @staticmethod
    def _description_from(config):
        for name in ("robot_description", "urdf_file"):
            if config[name].strip():
                return config[name]
        return None

    def _check_marker_frame(self, frame, model):
        if frame and frame not in model.frame_names:
            raise InvalidInputError(f"parameter 'marker_frame': robot {model.name!r} has no frame "
                                    f"{frame!r}")

    def _on_set_parameters(self, parameters):
        """Validate a runtime change completely before any of it is applied; reject it otherwise.

        A new description is accepted here and loaded in the background; if it
        fails, the error is logged and reported in /diagnostics and the
        current model keeps serving.
        """
        changes = {p.name: p.value for p in parameters if p.name in PARAMETERS}
        live = description = None
        try:
            config = {**self._config, **validate_all(changes)}
            if DESCRIPTION_PARAMETERS & changes.keys():
                description = self._description_from(config)
                if description is None:
                    raise InvalidInputError("robot_description and urdf_file cannot both be empty")
            elif self.live is not None:
                self._check_marker_frame(config["marker_frame"], self.live.model)
                if LIVE_PARAMETERS & changes.keys():
                    live = self._build_live(self.live.model, config)
        except SoaDynamicsError as error:
            self.get_logger().error(f"parameter change refused: {error}")
            return SetParametersResult(successful=False, reason=str(error))
        self._config = config
        if description is not None:
            self._loader.request(description, "parameters")
        if live is not None:
            self._install(live)
        return SetParametersResult(successful=True)

    # ------------------------------------------------------------------ the model
    def _kernels_wanted(self):
        return (self._config["kernels"] != "off" and os.environ.get(KERNELS_ENV) != "off"
                and kernels.compiler_available())

    def _load_description(self, description):
        """(model, warm-up) of a description; runs in the loader thread, so it touches no node state.

        Kernels only by explicit choice: the library's own "auto" would
        compile inside this process, holding the GIL for seconds.  Cached
        kernels are loaded here; otherwise the warm-up (XML, frames) says what
        a child process must compile first.
        """
        config = self._config
        # Expanded once, here: the warm-up child and the kernel-cache reload
        # get plain URDF and need neither package_paths nor xacro again.
        xml = read_description_text(description, config["package_paths"], config["xacro_timeout"])
        model = RobotModel.from_urdf(xml, kernels="off")
        require_moving_joints(model)
        if not self._kernels_wanted():
            return model, None
        model.set_kernels("c")
        frames = [f for f in [config["marker_frame"]] if f in model.frame_names]
        if model.kernels_cached(frames):
            model.prepare_kernels(frames)
            return model, None
        model.set_kernels("off")
        return model, (xml, frames)

    def _build_live(self, model, config):
        """A LiveModel configured from ``config``; raises before the (possibly shared) model is touched."""
        live = LiveModel(model, config["state_timeout"], config["command_joints"],
                         config["effort_limit_scale"])
        live.gains = (config["computed_torque_kp"], config["computed_torque_kd"])
        if self.live is None:
            self._attach_startup_payloads(model)
        else:
            # Carry over the measured state, and the payloads that still fit a new model.
            old = self.live
            if model.joint_names == old.model.joint_names:
                live.desired_acceleration, live.desired_point = (old.desired_acceleration,
                                                                 old.desired_point)
            if model is not old.model:
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
        model.gravity = config["gravity"]
        return live

    def _attach_startup_payloads(self, model):
        for name in self._config["payloads"]:
            prefix = f"payload.{name}."
            values = {}
            for key, spec in PAYLOAD_FIELDS.items():
                if not self.has_parameter(prefix + key):
                    self.declare_parameter(prefix + key, spec.default, _descriptor(spec))
                values[key] = self.get_parameter(prefix + key).value
            values = validate_all(values, PAYLOAD_FIELDS, prefix)
            model.attach_payload(name, values["link"], values["mass"], values["com"],
                                 np.reshape(values["inertia"], (3, 3)))
            self.get_logger().info(f"payload {name!r} attached from parameters")

    def _start_warmup(self, model, warmup):
        """Compile this robot's kernels in a child process; the model is reloaded with them after."""
        if self._warmup is not None:
            self._warmup.stop()
            self._warmup = None
        self._awaiting_kernels = warmup is not None
        if warmup is None:
            return
        xml, frames = warmup
        self._warmup = BackgroundWarmup(xml, frames)
        self._warmup_target = (model, xml)
        self.get_logger().info("compiling the kernels of this robot in a child process (seconds, "
                               "once per robot); the numpy path answers meanwhile")

    def _poll_background(self):
        loaded = self._loader.take_finished()
        if loaded is not None:
            self._install_model(loaded)
        if self._warmup is None:
            return
        outcome = self._warmup.poll()
        if outcome is None:
            return
        code, log = outcome
        self._warmup = None
        model, xml = self._warmup_target
        if code != 0:
            self._awaiting_kernels = False
            self.get_logger().error(f"kernel compilation failed (exit {code}); staying on the "
                                    f"numpy path:\n{log}")
        elif self.live is not None and self.live.model is model:
            # Loading the now cached kernels is itself work for the loader thread.
            self._loader.request(xml, "the kernel cache (compiled kernels in use)")

    def _install_model(self, loaded):
        """Install a loaded description (executor thread), or report why it was refused."""
        try:
            if loaded.error:
                raise SoaDynamicsError(loaded.error)
            live = self._build_live(loaded.model, self._config)
        except SoaDynamicsError as error:
            keeping = "keeping the previous model" if self.live else "no model loaded"
            self._description_error = f"robot description from {loaded.source} refused: {error}"
            self.get_logger().error(f"{self._description_error} ({keeping})")
            return
        self._description_error = ""
        self._install(live, loaded.source, loaded.seconds)
        frame = self._config["marker_frame"]
        if frame and frame not in loaded.model.frame_names:
            self.get_logger().warning(f"marker_frame {frame!r} is not a frame of "
                                      f"{loaded.model.name!r}: no inertia marker")
        self._start_warmup(loaded.model, loaded.warmup)

    def _install(self, live, source=None, seconds=None):
        self.live = live
        if source is not None:
            model = live.model
            self.get_logger().info(
                f"robot model {model.name!r} loaded from {source} in {seconds * 1e3:.0f} ms: "
                f"{model.dof} joints ({', '.join(model.joint_names)}), {len(model.frame_names)} "
                f"frames, {model.total_mass:.2f} kg")

    def _on_description(self, message):
        self._loader.request(message.data, "/robot_description")

    # ------------------------------------------------------------------ feedforward
    def _on_joint_states(self, message, info=None):
        taken = time.monotonic()
        if info is None:            # the EventsExecutor's form: one (message, info) tuple
            message, info = message
        try:
            self._handle_joint_states(message, info, taken)
        except Exception as error:  # noqa: BLE001 - the control loop's callback must never die
            self._stats.rejected += 1
            self._stats.last_rejection = f"internal error: {error}"
            self.get_logger().error(f"joint_states handling failed: {error}\n"
                                    f"{traceback.format_exc()}", throttle_duration_sec=5.0)

    def _handle_joint_states(self, message, info, taken):
        """Merge a joint state and answer it, unless it waited in the queue past state_timeout.

        Freshness is judged from publication (TransportAge: the source
        timestamp, corrected for the publisher's clock offset), not from
        when this thread got to the message nor from when the middleware
        recorded its reception: behind a long request, or in a process that
        was stopped or starved, states queue up, and answering them late
        would publish torques for where the arm was.
        """
        live = self.live
        if live is None:
            self._withhold("no robot model loaded")
            return
        self._stats.joint_states += 1
        # The timestamps are on the system clock; the age, taken on that
        # clock, moves the arrival onto the monotonic clock freshness uses.
        gid = info.get("publisher_gid")
        waited = self._transport_age.age(bytes(gid["data"]) if gid else None,
                                         info["source_timestamp"], info["received_timestamp"],
                                         time.time_ns(), taken)
        if waited > live.state_timeout:
            self._stats.stale_dropped += 1
            self._withhold(f"a joint state arrived {waited * 1e3:.1f} ms after it was published "
                           f"(state_timeout {live.state_timeout} s): dropped")
            return
        names, positions, velocities = conversions.joint_state_arrays(message)
        update = live.update_state(names, positions, velocities, taken - max(waited, 0.0))
        if update.unknown:
            self.get_logger().warning(f"joint_states names unknown to the model are ignored: "
                                      f"{update.unknown}", throttle_duration_sec=10.0)
        if not update.accepted:
            self._stats.rejected += 1
            self._stats.last_rejection = update.error
            self.get_logger().warning(f"joint_states message rejected: {update.error}",
                                      throttle_duration_sec=2.0)
            return
        if update.updated:   # a message about other joints only measured nothing of ours
            self._publish_feedforward(taken, message.header.stamp)

    def _withhold(self, reason):
        """Count and (rate-limited) log a joint state that got no feedforward, and why."""
        self._stats.withheld += 1
        self._stats.withheld_reason = reason
        now = time.monotonic()
        if now - self._withheld_logged_at >= WITHHELD_LOG_PERIOD:
            self._withheld_logged_at = now
            self.get_logger().warning(f"feedforward withheld: {reason}")
        self._withholding = True

    def _publish_feedforward(self, now, stamp):
        mode = self._config["feedforward_mode"]
        if mode == "off":
            return
        if self._awaiting_kernels:
            # No first command from the numpy path (~1 ms per state here: at 1 kHz it
            # fell behind, and the sim saw 0.1-0.9 s gaps right after it); a sim that
            # waits for the first command holds still until the kernels are in.
            self._withhold("compiled kernels not ready yet")
            return
        started = time.perf_counter()
        result = self.live.feedforward(mode, now)
        self._stats.record_compute(time.perf_counter() - started)
        if result.effort is None:
            self._withhold(result.reason)
            return
        if self._withholding:
            self.get_logger().info("feedforward resumed")
            self._withholding = False
            self._withheld_logged_at = -float("inf")
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
        self._set_desired("~/desired_acceleration", lambda live: live.set_desired_acceleration(
            live.command_joints, message.data))

    def _on_desired_state(self, message):
        self._set_desired("~/desired_state", lambda live: live.set_desired_point(
            live.command_joints, message.positions, message.velocities, message.accelerations))

    def _set_desired(self, topic, apply):
        """Apply a desired-state message; a refused one is logged, counted, and changes nothing."""
        try:
            if self.live is None:
                raise ModelNotReady("no robot model loaded yet")
            apply(self.live)
        except SoaDynamicsError as error:
            self._stats.rejected_commands += 1
            self._stats.last_command_rejection = f"{topic} rejected: {error}"
            self.get_logger().warning(self._stats.last_command_rejection, throttle_duration_sec=2.0)

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

    def _joint_names(self, what, names):
        """A request's joint-name list, no longer than the model's (every name once at most)."""
        return list(conversions.bounded(what, names, self.live.model.dof))

    def _request_state(self, state):
        self._joint_names("state.name", state.name)
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
        joints = self._joint_names("joints", request.joints)
        target = model.subgraph(joints) if joints else model
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
        prescribed = self._joint_names("prescribed", request.prescribed)
        qdd_all, tau_all = self.live.model.mixed_dynamics(q, qd, qdd, tau, prescribed)
        response.name = self.live.model.joint_names
        response.acceleration = qdd_all.tolist()
        response.effort = tau_all.tolist()

    def _set_payload(self, request, response):
        model = self.live.model
        if request.detach:
            model.detach_payload(request.payload.name)
            self.get_logger().info(f"payload {request.payload.name!r} detached")
        else:
            if request.payload.name not in model.payloads:
                conversions.bounded("payloads attached", [*model.payloads, request.payload.name],
                                    conversions.MAX_PAYLOADS)
            model.attach_payload(**conversions.payload_from_message(request.payload))
            self.get_logger().info(f"payload {request.payload.name!r} ({request.payload.mass} kg) "
                                   f"attached to {request.payload.link!r}")
        response.payloads = list(model.payloads)

    def _evaluate_trajectory(self, request, response):
        """Torques along a JointTrajectory (plant.torques); joints it omits hold their synced position."""
        model, live = self.live.model, self.live
        trajectory = request.trajectory
        compiled = model.kernels[1] is not None
        points = conversions.bounded(
            "trajectory points" + ("" if compiled else " (numpy path: compiled kernels not in use)"),
            trajectory.points, conversions.MAX_TRAJECTORY_POINTS if compiled
            else conversions.MAX_TRAJECTORY_POINTS_NUMPY_PATH)
        if not points:
            raise InvalidInputError("the trajectory has no points")
        names = self._joint_names("trajectory.joint_names", trajectory.joint_names)
        payloads = [conversions.payload_from_message(payload) for payload in conversions.bounded(
            "payloads", request.payloads, conversions.MAX_REQUEST_PAYLOADS)]
        payload_names = [payload["name"] for payload in payloads]
        if "" in payload_names or len(set(payload_names)) != len(payload_names):
            raise InvalidInputError(f"request payloads need distinct, non-empty names: "
                                    f"{payload_names}")
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
            # Attached for this evaluation only, under names no attached
            # payload has, so that persistent payloads are never replaced.
            for payload in payloads:
                name = f"evaluate_trajectory/{payload['name']}"
                while name in model.payloads:
                    name += "'"
                model.attach_payload(**{**payload, "name": name})
                added.append(name)
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
        stats, period = self._stats.take(), self._config["diagnostics_period"]
        mode = self._config["feedforward_mode"]
        values = {"feedforward_mode": mode, "description_error": self._description_error}
        if self.live is None:
            status.level = DiagnosticStatus.ERROR
            status.message = "no robot model loaded" + (
                f": {self._description_error}" if self._description_error else "")
        else:
            age = self.live.state_age(now)
            values.update({
                "model": self.live.model.name, "joints": str(self.live.model.dof),
                "joint_state_rate_hz": f"{stats.joint_states / period:.1f}",
                "joint_state_age_s": "never received" if age == float("inf") else f"{age:.4f}",
                "feedforward_published": str(stats.published),
                "feedforward_withheld": str(stats.withheld),
                "withheld_reason": stats.withheld_reason,
                "stale_joint_states_dropped": str(stats.stale_dropped),
                "feedforward_compute_mean_us": f"{stats.mean_compute_us():.1f}",
                "feedforward_compute_max_us": f"{stats.max_compute * 1e6:.1f}",
                "clamped_messages": str(stats.clamped),
                "clamped_joints": ", ".join(stats.clamped_joints),
                "rejected_joint_states": str(stats.rejected),
                "last_rejection": stats.last_rejection,
                "rejected_commands": str(stats.rejected_commands),
                "last_command_rejection": stats.last_command_rejection,
                "services_answered": str(stats.services),
                "kernels": ("compiled" if self.live.model.kernels[1] else
                            "numpy path (kernels compiling)" if self._warmup else "numpy path"),
                "payloads": ", ".join(f"{n} ({p[1]} kg on {p[0]})"
                                      for n, p in self.live.model.payloads.items()),
            })
            stale = self.live.stale_joints(now)
            problems = []
            if mode != "off" and stale:
                problems.append(f"feedforward stopped: no joint state for {stale[:4]}"
                                    f"{'...' if len(stale) > 4 else ''} within "
                                    f"{self.live.state_timeout} s")
            if mode != "off" and stats.withheld:
                problems.append(f"feedforward withheld for {stats.withheld} joint state(s): "
                                    f"{stats.withheld_reason}")
            if stats.clamped:
                problems.append("feedforward clamped to effort limits")
            if stats.rejected:
                problems.append(f"joint states rejected: {stats.last_rejection}")
            if stats.rejected_commands:
                problems.append(stats.last_command_rejection)
            if self._description_error:
                problems.append(self._description_error)
            status.level = DiagnosticStatus.WARN if problems else DiagnosticStatus.OK
            status.message = "; ".join(problems) or "model live"
        status.values = [KeyValue(key=k, value=str(v)) for k, v in values.items()]
        array = DiagnosticArray(status=[status])
        array.header.stamp = self.get_clock().now().to_msg()
        self.diagnostics_publisher.publish(array)

    def _publish_marker(self):
        frame = self._config["marker_frame"]
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
        self._loader.close()
        if self._warmup is not None:
            self._warmup.stop()
        return super().destroy_node()


class _Statistics:
    """Counters for one diagnostics period."""

    def __init__(self):
        self.joint_states = self.published = self.clamped = self.rejected = self.services = 0
        self.withheld = self.stale_dropped = self.rejected_commands = 0
        self.compute_total = self.max_compute = self.service_time = 0.0
        self.compute_count = 0
        self.clamped_joints, self.last_rejection, self.withheld_reason = [], "", ""
        self.last_command_rejection = ""

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
                    lambda node: make_executor(node._config["executor"]), _spin, args)


if __name__ == "__main__":
    sys.exit(main())
