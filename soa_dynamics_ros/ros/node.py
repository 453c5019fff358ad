"""The embedded-model node: a live RobotModel in the ROS graph.

Glue only: parameters (:mod:`.parameters`) configure an
:class:`~soa_dynamics_ros.embedded.model_host.ModelHost`, which keeps the
live model across description reloads and kernel warm-ups; joint states in,
feedforward out (messages in :mod:`.conversions`, serialized ones in
:mod:`.cdr`); services in :mod:`.services`, /diagnostics in
:mod:`.diagnostics`.  Feedforward torques are computed each time a joint
state arrives (event-driven, not a timer), so the executor is driven by a
``spin_once`` loop (see README: executors were chosen by measurement,
bench/bench_node_latency.py).
"""
import sys
import time
import traceback

from diagnostic_msgs.msg import DiagnosticArray
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from geometry_msgs.msg import WrenchStamped
from std_msgs.msg import Bool, Float64MultiArray, String
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint
from visualization_msgs.msg import Marker

from . import cdr, conversions, diagnostics
from .command_line import help_text, unknown_parameter_warning, unknown_parameters
from .parameters import PARAMETERS, PAYLOAD_FIELDS, startup_payload, validate_all
from .pauses import PauseMeter
from .process import make_executor, run_node, subscribe_with_info
from .request_gate import RequestGate
from .services import ModelNotReady, ModelServices
from .stamps import stamp_seconds
from .throttled_log import MAX_LOG_TEXT, ThrottledLog
from ..embedded.live_model import TransportAge
from ..embedded.model_host import TOPIC, ModelHost, description_from
from ..errors import InvalidInputError, SoaDynamicsError, StaleStateError, clipped, shown_names

NODE_NAME = "soa_dynamics"
# How often finished background work (a description load, a kernel warm-up)
# is looked for: the delay before a loaded model serves.
BACKGROUND_POLL_PERIOD = 0.05
# [s] The longest one wait for callbacks lasts: how soon the loop sees a stop request
# (a waiting request wakes it at once: ros/request_gate.py).
IDLE_WAIT = 0.1
CONTACT_PERIOD = 0.1     # [s] ~/contact is republished this often with the estimates (and on a change)


def odometry_type():
    """nav_msgs/Odometry, imported only for floating-base robots: InvalidInputError
    saying how to install it when it is missing."""
    try:
        from nav_msgs.msg import Odometry
    except ImportError:
        raise InvalidInputError(
            "floating_base needs nav_msgs for the base odometry: install it (pip install "
            "ros-kilted-nav-msgs, as scripts/setup.sh does, or your distribution's "
            "ros-<distro>-nav-msgs)") from None
    return Odometry


class EmbeddedModelNode(Node):
    def __init__(self, **kwargs):
        super().__init__(NODE_NAME, **kwargs)
        config = validate_all({name: self._declared(name, spec) for name, spec in PARAMETERS.items()})
        self.host = ModelHost(config, self.get_logger(), self._startup_payloads)
        self.stats = diagnostics.Statistics()
        self.pauses = PauseMeter()      # (made in the thread that serves the joint states)
        self._messages = None           # cdr.FeedforwardMessages of live.command_joints
        self._transport_age = TransportAge()
        self._joint_states = cdr.JointStateReader()
        self._log = ThrottledLog(self.get_logger())     # for what can repeat every message
        # Taken by the node's loop within a share of its time, so that no flood of requests
        # holds the joint states for long (ros/request_gate.py; spin_serving_requests).
        self.requests = RequestGate(self, ModelServices(self.host, self.stats,
                                                        self.get_logger()).callbacks())
        self.feedforward_publisher = self.create_publisher(Float64MultiArray, "~/feedforward", 1)
        self.feedforward_state_publisher = self.create_publisher(JointState, "~/feedforward_state", 1)
        self.diagnostics_publisher = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self.marker_publisher = self.create_publisher(Marker, "~/task_space_inertia_marker", 1)
        self.trajectory_publisher = self.create_publisher(JointTrajectory, "~/trajectory_out", 10)
        self.external_torque_publisher = self.create_publisher(JointState, "~/external_torque", 10)
        self.external_wrench_publisher = self.create_publisher(WrenchStamped, "~/external_wrench", 10)
        self.contact_publisher = self.create_publisher(Bool, "~/contact", 10)
        # (the host.estimation they were made for, conversions.EstimationMessages)
        self._estimation_messages = (None, None)
        self._contact_published_at = -float("inf")     # (monotonic)

        description = description_from(config)
        if description is not None:
            # At start-up nothing is being served yet: load here, so that a bad
            # description ends the process with one line (exit 1).
            self.host.load_now(description, "parameters")
        else:
            self.get_logger().info("no robot_description or urdf_file parameter: waiting for "
                                   "the /robot_description topic")
            # Transient local, as robot_state_publisher publishes it; listened to
            # only when no parameter gave the model, so a new description reloads it.
            qos = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                             reliability=ReliabilityPolicy.RELIABLE)
            self.create_subscription(String, "/robot_description", self._on_robot_description, qos)
        best_effort = config["joint_states_reliability"] == "best_effort"
        # Freshness needs each state's arrival time (MessageInfo); serialized, the
        # state is read without building a message object (JointStateReader).
        subscribe_with_info(
            self, JointState, "joint_states", self._on_joint_states,
            QoSProfile(depth=config["joint_states_depth"], history=HistoryPolicy.KEEP_LAST,
                       reliability=(ReliabilityPolicy.BEST_EFFORT if best_effort
                                    else ReliabilityPolicy.RELIABLE)), raw=True)
        if config["floating_base"]:
            subscribe_with_info(self, odometry_type(), config["base_odometry_topic"],
                                self._on_base_odometry, 10)
        # Serialized, so that their sizes are checked before rclpy builds a message of them.
        self.create_subscription(Float64MultiArray, "~/desired_acceleration",
                                 self._on_desired_acceleration, 10, raw=True)
        self.create_subscription(JointTrajectoryPoint, "~/desired_state", self._on_desired_state,
                                 10, raw=True)
        self.create_subscription(JointTrajectory, "~/trajectory_in", self._on_trajectory, 10,
                                 raw=True)
        self.add_on_set_parameters_callback(self._on_set_parameters)
        self.create_timer(config["diagnostics_period"],
                          self._never_raises("diagnostics", self._publish_diagnostics))
        self._background_timer = self.create_timer(
            BACKGROUND_POLL_PERIOD, self._never_raises("background work", self._poll_background))
        self._poll_while_busy()
        if config["marker_rate"] > 0:
            self.create_timer(1.0 / config["marker_rate"],
                              self._never_raises("inertia marker", self._publish_marker))
        self._warn_unknown_parameters()

    def _warn_unknown_parameters(self):
        """A warning naming every parameter given (-p, params file) that this node never reads.

        Start-up payloads' fields count as known: they are declared when a model loads.
        """
        known = set(self._parameters) | {f"payload.{name}.{field}" for field in PAYLOAD_FIELDS
                                         for name in self.host.config["payloads"]}
        # rclpy keeps the node's overrides (-p, params files) there and offers no public reader.
        unknown = unknown_parameters(self._parameter_overrides, known)
        if unknown:
            self.get_logger().warning(unknown_parameter_warning(NODE_NAME, unknown))

    def _never_raises(self, what, callback):
        """A timer callback whose failure is logged: an exception would end the node."""
        def guarded():   # no parameter: rclpy would pass a TimerInfo to one
            try:
                callback()
            except Exception as error:  # noqa: BLE001 - the node must outlive any one callback
                self._log.error(what, 10.0, f"{what} failed: {type(error).__name__}: {error}\n"
                                            f"{traceback.format_exc()}")
        return guarded

    def _poll_while_busy(self):
        """Run the background poll only while a load or warm-up is under way.

        Every wake-up of the executor takes this thread a while (even an
        EventsExecutor timer with an empty callback), and a joint state arriving
        meanwhile waits: polling an idle host was 20 such delays a second.
        Called wherever background work may start or end.
        """
        busy = self.host.background_work
        if busy and self._background_timer.is_canceled():
            self._background_timer.reset()
        elif not busy and not self._background_timer.is_canceled():
            self._background_timer.cancel()

    @property
    def polling_background_work(self):
        """Whether the background poll runs (only while a load or warm-up is under way)."""
        return not self._background_timer.is_canceled()

    def _poll_background(self):
        self.host.poll()
        self._poll_while_busy()

    def _on_robot_description(self, message):
        # Anyone on the domain may publish it: URDF text only (docs/robustness.md, "Trust").
        self.host.request(message.data, "/robot_description", TOPIC)
        self._poll_while_busy()

    def _declared(self, name, spec):
        """The value of a parameter, declared (with dynamic typing) if it was not yet."""
        if not self.has_parameter(name):
            # Dynamic typing: parameters.validate_all checks types itself, so that an
            # int given for a double is accepted and anything else gets one clear line.
            self.declare_parameter(name, spec.default, conversions.parameter_descriptor(
                spec.description, spec.read_only, dynamic_typing=True))
        return self.get_parameter(name).value

    def _startup_payloads(self):
        """The payloads the ``payloads`` parameter names, from payload.<name>.<field> parameters."""
        return [startup_payload(name, {field: self._declared(f"payload.{name}.{field}", spec)
                                       for field, spec in PAYLOAD_FIELDS.items()})
                for name in self.host.config["payloads"]]

    def _on_set_parameters(self, parameters):
        """Validate a runtime change completely before any of it is applied; reject it otherwise.

        A new description is accepted here and loaded in the background; if it
        fails, the error is logged and reported in /diagnostics and the
        current model keeps serving.
        """
        changes = {p.name: p.value for p in parameters if p.name in PARAMETERS}
        try:
            self.host.reconfigure({**self.host.config, **validate_all(changes)}, changes.keys())
        except SoaDynamicsError as error:
            self.get_logger().error(f"parameter change refused: {error}")
            return conversions.parameters_result(refusal=str(error))
        self._poll_while_busy()
        return conversions.parameters_result()

    # ------------------------------------------------------------------ feedforward
    def _on_joint_states(self, serialized, info):
        taken = time.monotonic()
        try:
            self._handle_joint_states(serialized, info, taken)
        except Exception as error:  # noqa: BLE001 - the control loop's callback must never die
            self.stats.rejected += 1
            self.stats.last_rejection = f"internal error: {error}"
            self._log.error("joint_states failed", 5.0, f"joint_states handling failed: {error}\n"
                                                        f"{traceback.format_exc()}")

    def _handle_joint_states(self, serialized, info, taken):
        """Merge a joint state and answer it, unless it waited in the queue past state_timeout.

        Freshness is judged from publication (TransportAge: the source
        timestamp, corrected for the publisher's clock offset), not from
        when this thread got to the message nor from when the middleware
        recorded its reception: behind a long request, or in a process that
        was stopped or starved, states queue up, and answering them late
        would publish torques for where the arm was.
        """
        live = self.host.live
        if live is None:
            self._withhold("no robot model loaded", taken)
            return
        self.stats.joint_states += 1
        # The timestamps are on the system clock; the age, taken on that
        # clock, moves the arrival onto the monotonic clock freshness uses.
        publisher, source_ns, received_ns = conversions.publication_times(info)
        now_ns = time.time_ns()
        waited = self._transport_age.age(publisher, source_ns, received_ns, now_ns, taken)
        if waited > live.state_timeout:
            self.stats.stale_dropped += 1
            # Where the time went tells a slow middleware from a busy node.
            queued = max(now_ns - received_ns, 0) * 1e-9
            self._withhold(f"a joint state arrived {waited * 1e3:.1f} ms after it was published "
                           f"({queued * 1e3:.1f} ms of it queued in this node after the "
                           f"middleware received it; state_timeout {live.state_timeout} s): "
                           "dropped", taken)
            return
        try:
            state = self._joint_states.read(serialized,
                                            cdr.joint_state_name_limit(live.model.dof))
        except SoaDynamicsError as error:
            self._reject(str(error))
            return
        arrival = taken - max(waited, 0.0)
        update = live.update_state(state.names, state.positions, state.velocities, arrival,
                                   state.efforts)
        if update.unknown:
            self._log.warning("unknown joints", 10.0, lambda: "joint_states names unknown to "
                              f"the model are ignored: {shown_names(update.unknown)}")
        if not update.accepted:
            self._reject(update.error)
            return
        if update.effort_error:
            self.stats.rejected_efforts += 1
            self.stats.last_effort_rejection = update.effort_error
            self._log.warning("efforts rejected", 2.0,
                              f"joint_states efforts not used: {update.effort_error}")
        if update.updated:   # a message about other joints only measured nothing of ours
            self._publish_feedforward(live, taken, state.stamp)
        if update.updated and update.efforts_taken:
            # After the feedforward, which the arm waits for; never from a state whose
            # efforts were refused (its positions with older efforts would mislead).
            self._publish_estimate(state.stamp, arrival, taken)

    def _on_base_odometry(self, message, info):
        taken = time.monotonic()
        try:
            self._handle_base_odometry(message, info, taken)
        except SoaDynamicsError as error:
            self._refuse_odometry(f"base odometry refused: {error}")
        except Exception as error:  # noqa: BLE001 - the control loop's callback must never die
            self._refuse_odometry(f"base odometry handling failed: {error}")
            self._log.error("base odometry failed", 5.0, traceback.format_exc())

    def _handle_base_odometry(self, message, info, taken):
        """The base state of a floating-base robot; its age counts as a joint state's does."""
        live = self.host.live
        if live is None:
            return
        reason = conversions.odometry_frame_error(message, self.host.config["world_frame"],
                                                  live.model.base_link)
        if reason:
            self._refuse_odometry(reason)
            return
        publisher, source_ns, received_ns = conversions.publication_times(info)
        waited = self._transport_age.age(publisher, source_ns, received_ns, time.time_ns(), taken)
        live.update_base(*conversions.base_state(message), taken - max(waited, 0.0))
        self.stats.base_odometry += 1

    def _refuse_odometry(self, reason):
        self.stats.rejected_odometry += 1
        self.stats.last_odometry_rejection = reason
        self._log.warning("base odometry refused", 2.0, reason)

    def _reject(self, reason):
        self.stats.rejected += 1
        self.stats.last_rejection = reason
        self._log.warning("joint_states rejected", 2.0, f"joint_states message rejected: {reason}")

    def _withhold(self, reason, now):
        self.stats.withheld += 1
        self.stats.withheld_reason = reason
        self.host.withhold(reason, now)

    def _publish_feedforward(self, live, now, stamp):
        result = self.host.feedforward(now)
        if result is None:          # feedforward_mode off
            return
        if result.seconds is not None:
            self.stats.record_compute(result.seconds)
        if result.effort is None:
            self._withhold(result.reason, now)
            return
        self.host.resume()
        if result.clamped:
            self.stats.clamped += 1
            self.stats.clamped_joints = result.clamped
            self._log.warning("clamped", 2.0,
                              f"feedforward clamped to the effort limits of {result.clamped}")
        if self._messages is None or self._messages.joint_names is not live.command_joints:
            self._messages = cdr.FeedforwardMessages(live.command_joints)
            if self._messages.serialized_error:
                self.get_logger().warning(
                    f"feedforward published as message objects (slower): "
                    f"{self._messages.serialized_error}")
        effort_array, effort_state = self._messages.fill(
            result.effort, live.position[live.command_index], live.velocity[live.command_index],
            stamp)
        self.feedforward_publisher.publish(effort_array)
        self.feedforward_state_publisher.publish(effort_state)
        self.stats.published += 1

    def _publish_estimate(self, stamp, arrival, now):
        """~/external_torque (and ~/external_wrench, and ~/contact on a change or
        CONTACT_PERIOD after the last) for the latest state.

        The observer's clock is the state's stamp, or its arrival when unstamped.
        ~/contact rides on the estimates rather than on a timer: a timer would wake
        the 1 kHz thread (see _poll_while_busy), and a robot whose states stop gets
        no contact state from it either way.
        """
        seconds = stamp_seconds(stamp)
        estimate = self.host.estimate(seconds if seconds else arrival, now)
        if estimate is None:
            return
        estimation = self.host.estimation
        made_for, messages = self._estimation_messages
        if made_for is not estimation:     # a new model or new settings: new LiveEstimation
            messages = conversions.EstimationMessages(
                estimation.model.joint_names, estimation.model.tree.root_link)
            self._estimation_messages = (estimation, messages)
        torque, wrench = messages.fill(estimate, stamp)
        self.external_torque_publisher.publish(torque)
        if wrench is not None:
            self.external_wrench_publisher.publish(wrench)
        if estimate.contact_changed or now - self._contact_published_at >= CONTACT_PERIOD:
            self.contact_publisher.publish(conversions.contact(estimation.contact))
            self._contact_published_at = now
        self.stats.estimates += 1

    def _on_desired_acceleration(self, serialized):
        def apply(live):
            message = cdr.desired_acceleration_from_serialized(serialized, live.model.dof)
            live.set_desired_acceleration(live.command_joints, message.data)
        self._set_desired("~/desired_acceleration", apply)

    def _on_desired_state(self, serialized):
        def apply(live):
            message = cdr.desired_point_from_serialized(serialized, live.model.dof)
            live.set_desired_point(live.command_joints, message.positions, message.velocities,
                                   message.accelerations)
        self._set_desired("~/desired_state", apply)

    def _set_desired(self, topic, apply):
        """Apply a desired-state message; a refused one is logged, counted, and changes nothing."""
        try:
            if self.host.live is None:
                raise ModelNotReady("no robot model loaded yet")
            apply(self.host.live)
        except SoaDynamicsError as error:
            self.stats.rejected_commands += 1
            self.stats.last_command_rejection = f"{topic} rejected: {error}"
            self._log.warning(topic, 2.0, self.stats.last_command_rejection)

    # ------------------------------------------------------------------ trajectory efforts
    def _on_trajectory(self, serialized):
        """Republish a trajectory on ~/trajectory_out with every point's effort filled.

        A refused trajectory is logged and counted (/diagnostics) and nothing
        is published.
        """
        try:
            live = self.host.live
            if live is None:
                raise ModelNotReady("no robot model loaded yet")
            message = cdr.trajectory_from_serialized(
                serialized, live.model.dof, live.model.kernels[1] is not None)
            names, time_from_start, positions, velocities, accelerations = \
                conversions.joint_trajectory_arrays(message)
            efforts = live.trajectory_efforts(names, time_from_start, positions, velocities,
                                              accelerations)
        except SoaDynamicsError as error:
            self._refuse_trajectory(str(error))
            return
        except Exception as error:  # noqa: BLE001 - a bad message must not end the node
            self._refuse_trajectory(f"internal error: {type(error).__name__}: {error}")
            self._log.error("trajectory failed", 10.0, traceback.format_exc())
            return
        self.trajectory_publisher.publish(conversions.with_efforts(message, efforts))
        self.stats.trajectories += 1

    def _refuse_trajectory(self, reason):
        self.stats.rejected_trajectories += 1
        self.stats.last_trajectory_rejection = f"~/trajectory_in refused: {reason}"
        # Not throttled: each refused trajectory is a planner's motion that did not happen.
        self.get_logger().warning(clipped(self.stats.last_trajectory_rejection, MAX_LOG_TEXT))

    # ------------------------------------------------------------------ diagnostics and marker
    def _publish_diagnostics(self):
        self.stats.gc_pause_max, self.stats.gc_pause_generation = self.pauses.take_longest_gc()
        self.diagnostics_publisher.publish(diagnostics.model_status(
            f"{self.get_fully_qualified_name()}: embedded model", self.host, self.stats.take(),
            self.host.config["diagnostics_period"], self.get_clock().now().to_msg()))

    def _publish_marker(self):
        live, frame = self.host.live, self.host.config["marker_frame"]
        if live is None or not frame:
            return
        try:
            ellipsoid = live.inertia_ellipsoid(frame, time.monotonic())
        except StaleStateError:     # no marker of where the arm was
            return
        except SoaDynamicsError as error:
            self._log.warning("inertia marker", 10.0, f"inertia marker: {error}")
            return
        self.marker_publisher.publish(conversions.inertia_marker(
            ellipsoid, live.model.tree.root_link, self.get_clock().now().to_msg()))

    def destroy_node(self):
        self.requests.destroy()
        self.host.close()
        self.pauses.close()
        return super().destroy_node()


SUMMARY = """\
The embedded dynamics model of a robot in the ROS graph: the description from
robot_description, urdf_file or the /robot_description topic; ~/feedforward
(and ~/feedforward_state) answering every joint_states message; estimation
topics, ~/trajectory_in -> ~/trajectory_out, and the model's services."""


def parameters_help(program):
    """``--help``: the usage and the parameter table of ros/parameters.py."""
    rows = [(name, spec.default, spec.description, spec.read_only)
            for name, spec in PARAMETERS.items()]
    rows += [(f"payload.<name>.{field}", spec.default, spec.description, spec.read_only)
             for field, spec in PAYLOAD_FIELDS.items()]
    return help_text(program, NODE_NAME, SUMMARY, rows,
                     "<name>: each name the payloads parameter lists.")


def spin_serving_requests(node, executor, running):
    """The node's loop: its executor's callbacks, and between them its requests, within their share."""
    while running():
        executor.spin_once(timeout_sec=node.requests.wait_time(IDLE_WAIT))
        node.requests.serve()


def main(args=None):
    return run_node(NODE_NAME, EmbeddedModelNode,
                    lambda node: make_executor(node.host.config["executor"]), spin_serving_requests,
                    args, parameters_help)


if __name__ == "__main__":
    sys.exit(main())
