"""The embedded model, without ROS: a RobotModel kept in sync with measured joint states.

This is the logic of the node (merging partial joint states by name, freshness,
the feedforward laws, clamping to effort limits, the guarantee of never
returning a non-finite torque) written against plain Python types so that it
can be used and tested without a ROS graph.  ``soa_dynamics_ros.ros.node`` only
moves messages in and out of it.
"""
from collections import deque
from dataclasses import dataclass, field
import math
import sys

import numpy as np

from ..errors import (InvalidInputError, SoaDynamicsError, StaleStateError, TrajectoryError,
                      shown_names)
from ..model.floating_base import FloatingBaseModel, checked_base_pose
from ..model.robot_model import RobotModel
from ..plant.torques import robot_gravity_torques, trajectory_efforts
from ..plant.trajectory import trajectory_from_arrays
from ..validation import MAX_MAGNITUDE, as_samples, as_vector

FEEDFORWARD_MODES = ("gravity", "inverse_dynamics", "computed_torque", "whole_body_gravity", "off")
# The modes a floating-base robot is served (docs/floating_base.md, "In the node"):
# "gravity" holds the joints with the base held, "whole_body_gravity" standing on
# the contact frames.
FLOATING_BASE_MODES = ("gravity", "whole_body_gravity", "off")
# How a stale base state is named among stale joints (LiveModel.stale_joints).
BASE_STATE = "base (odometry)"
# Bounds on desired states and trajectory points (rad or m, per s, per s^2): far
# beyond any real motion, yet small enough that gains times errors (and inverse
# dynamics) stay finite.  Beyond them a desired state is a bug upstream and is
# refused, not tracked.
DESIRED_BOUNDS = {"positions": 1e3, "velocities": 1e4, "accelerations": 1e6}


# Over how many seconds the smallest publish-to-reception offset of a
# publisher is taken as its clock offset (TransportAge).
CLOCK_OFFSET_WINDOW = 10.0
# Publishers remembered at once (they come and go with their processes).
MAX_TRACKED_PUBLISHERS = 64


class TransportAge:
    """How long a message has been under way since its publisher wrote it, on any clocks.

    The middleware's reception time alone misses the time a message spent
    before its reception was recorded: a subscriber process that was stopped
    or starved records it only when it runs again.  The source (publish)
    timestamp covers that, but is on the publisher's clock, which may be
    offset from this one.  Per publisher, the offset is estimated as the
    smallest ``received - source`` seen over the last
    :data:`CLOCK_OFFSET_WINDOW` seconds (the fastest delivery: transport
    delay plus clock offset); a message's age is how much longer than that
    it took, plus how long it has waited since its reception.  Times in
    nanoseconds, as the middleware gives them; ``now`` is on the reception
    clock, ``monotonic`` only ages the window.
    """

    def __init__(self, window=CLOCK_OFFSET_WINDOW):
        self._window = window
        self._offsets = {}     # publisher -> deque of (monotonic s, offset ns), offsets increasing

    def age(self, publisher, source_ns, received_ns, now_ns, monotonic):
        """Seconds since the message was published (never negative)."""
        if not source_ns:      # a middleware that does not stamp the source: reception only
            return max(now_ns - received_ns, 0) * 1e-9
        offset = received_ns - source_ns
        offsets = self._offsets.get(publisher)
        if offsets is None:
            if len(self._offsets) >= MAX_TRACKED_PUBLISHERS:
                self._forget_quietest()
            offsets = self._offsets[publisher] = deque()
        # A sliding-window minimum: only offsets that could still become the
        # smallest are kept, in increasing order.
        while offsets and offsets[-1][1] >= offset:
            offsets.pop()
        offsets.append((monotonic, offset))
        while offsets[0][0] < monotonic - self._window:
            offsets.popleft()
        return max(offset - offsets[0][1] + now_ns - received_ns, 0) * 1e-9

    def _forget_quietest(self):
        quietest = min(self._offsets, key=lambda publisher: self._offsets[publisher][-1][0])
        del self._offsets[quietest]


@dataclass
class StateUpdate:
    """What a joint-state message changed (for logging by the caller)."""
    accepted: bool
    unknown: list = field(default_factory=list)   # names the model does not have
    error: str = ""
    updated: int = 0                              # joints of the model it measured
    effort_error: str = ""                        # why its efforts were not taken (if any)
    efforts_taken: bool = False                   # it measured the efforts of its joints


@dataclass
class Feedforward:
    """One feedforward evaluation: ``effort`` is None when nothing may be published."""
    effort: np.ndarray = None       # ordered as the LiveModel's command_joints
    reason: str = ""                # why there is no effort
    clamped: list = field(default_factory=list)   # joints held at their effort limit
    error: SoaDynamicsError = None  # the error behind ``reason``, when one is (StaleStateError, ...)
    seconds: float = None           # how long the law took, when it was evaluated


@dataclass
class InertiaEllipsoid:
    """The translational inertia ellipsoid x^T Lambda x = 1 of a frame, in the root link frame."""
    center: np.ndarray              # the frame's origin
    rotation: np.ndarray            # proper rotation whose columns are the principal axes
    diameters: np.ndarray           # along those axes: 2 / sqrt(eigenvalue)


def require_moving_joints(model):
    """:class:`InvalidInputError` for a robot whose joints are all fixed: nothing to feed forward."""
    if model.dof == 0:
        raise InvalidInputError(f"robot {model.name!r} has no moving joints: there is nothing "
                                "to measure or to feed forward")


class LiveModel:
    """A RobotModel plus the latest measured state and the feedforward laws."""

    def __init__(self, model, state_timeout=0.05, command_joints=None, effort_limit_scale=1.0):
        if not isinstance(model, RobotModel):
            raise TypeError("LiveModel needs a RobotModel")
        require_moving_joints(model)
        self.model = model
        self.state_timeout = float(state_timeout)
        self.effort_limit_scale = float(effort_limit_scale)
        self.floating_base = isinstance(model, FloatingBaseModel)
        joints = len(model.joint_names)      # actuated: dof less a floating base's six
        self.position = np.zeros(joints)
        self.velocity = np.zeros(joints)
        # Per joint (then the base of a floating-base robot, as one more entry, so that
        # one freshness test covers both), caller's clock [s].
        self._arrivals = np.full(joints + self.floating_base, -math.inf)
        self.received_at = self._arrivals[:joints]
        self.base_pose = np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0])   # q[:7]
        self.base_twist = np.zeros(6)                                    # v[:6], base frame
        self.contacts = []                                               # (frame, kind)
        self.effort = np.zeros(joints)                       # measured, for estimation
        self.effort_received_at = np.full(joints, -math.inf)
        self.desired_acceleration = None
        self.desired_point = None                            # (q, qd, qdd) model order
        self.gains = (0.0, 0.0)                              # computed torque kp, kd
        # The robot adds its own gravity torques (URDF masses, not the payloads
        # attached here): every feedforward leaves them out.
        self.robot_compensates_gravity = False
        self.ramp_time = 0.0                                 # [s] feedforward blends in over
        self._ramp = (-math.inf, None)     # (start [s], the effort it starts from)
        self._last_effort_at = -math.inf   # [s] when last_effort was returned; -inf: interrupted
        self.last_effort = np.zeros(joints)      # last returned, model order (zero: none yet)
        self._index = {name: i for i, name in enumerate(model.joint_names)}
        self._mimic_names = {joint.name for joint in model.joints if joint.mimic_of}
        self._layouts = {}
        self.set_command_joints(command_joints)

    # ------------------------------------------------------------------ configuration
    def set_command_joints(self, names):
        """Order of the published effort vector (default: every joint, model order)."""
        names = list(names) if names else self.model.joint_names
        if len(set(names)) != len(names):
            raise InvalidInputError(f"command_joints {names} repeats a name")
        self.command_index = np.array([self.model.joint_index(name) for name in names], dtype=int)
        self.command_joints = names
        self.effort_limits = self.model.effort_limits[self.command_index] * self.effort_limit_scale
        # "No limit" (inf) as the largest float: then one comparison also refuses an inf
        # effort.  A list: the per-state test is plain Python (see _unramped).
        self._finite_limits = np.minimum(self.effort_limits, sys.float_info.max).tolist()

    def take_over(self, previous):
        """Carry the measured and desired state of ``previous`` (a LiveModel of an earlier model) over.

        Measurements carry over per joint name; desired states only when the
        joints are the same, since they are whole vectors in model order.
        """
        if self.model.joint_names == previous.model.joint_names:
            self.desired_acceleration = previous.desired_acceleration
            self.desired_point = previous.desired_point
        if self.floating_base and previous.floating_base:
            self.base_pose, self.base_twist = previous.base_pose, previous.base_twist
            self._arrivals[-1] = previous.base_received_at
        previous_index = {name: j for j, name in enumerate(previous.model.joint_names)}
        for i, name in enumerate(self.model.joint_names):
            if name in previous_index:
                j = previous_index[name]
                self.position[i], self.velocity[i] = previous.position[j], previous.velocity[j]
                self.received_at[i] = previous.received_at[j]
                self.effort[i] = previous.effort[j]
                self.effort_received_at[i] = previous.effort_received_at[j]
                # The new law ramps in from what the controller was last given.
                self.last_effort[i] = previous.last_effort[j]

    # ------------------------------------------------------------------ measured state
    def _layout(self, names):
        """Where a message's entries go, computed once per distinct name list (1 kHz path)."""
        key = tuple(names)
        layout = self._layouts.get(key)
        if layout is None:
            if len(set(key)) != len(key):
                return None
            rows, columns, unknown = [], [], []
            for row, name in enumerate(key):
                if name in self._index:
                    rows.append(row)
                    columns.append(self._index[name])
                elif name not in self._mimic_names:   # mimic joints follow their master
                    unknown.append(name)
            layout = (np.array(rows, dtype=int), np.array(columns, dtype=int), unknown)
            if len(self._layouts) < 64:
                self._layouts[key] = layout
        return layout

    def update_state(self, names, positions, velocities, now, efforts=()):
        """Merge a (possibly partial) joint-state message; all-or-nothing on bad input.

        Efforts (optional, as in a JointState) are taken when the message gives
        one per name, all finite; otherwise the state still counts and
        ``effort_error`` says why its efforts did not.
        """
        layout = self._layout(names)
        if layout is None:
            return StateUpdate(False, error=f"joint names repeat in {shown_names(names)}")
        rows, columns, unknown = layout
        positions = np.asarray(positions, dtype=float)
        velocities = np.asarray(velocities, dtype=float)
        mismatch = _length_mismatch(names, positions, velocities)
        if mismatch:
            return StateUpdate(False, error=mismatch)
        new_positions = positions[rows]
        new_velocities = velocities[rows] if velocities.size else 0.0
        if not (_all_physical(positions, velocities)
                or _physical(new_positions) and _physical(new_velocities)):
            bad = [names[r] for r in rows if not _physical(positions[r])
                   or (velocities.size and not _physical(velocities[r]))]
            return StateUpdate(False, unknown, f"non-finite or out-of-range position or velocity "
                                               f"for {shown_names(bad)}")
        self.position[columns] = new_positions
        self.velocity[columns] = new_velocities
        self.received_at[columns] = now
        efforts = np.asarray(efforts, dtype=float)
        effort_error = ""
        if efforts.size and efforts.shape != (len(names),):
            effort_error = f"{efforts.size} efforts for {len(names)} names"
        elif efforts.size and not (_all_physical(efforts) or _physical(efforts[rows])):
            effort_error = "non-finite or out-of-range effort for " + shown_names(
                [names[r] for r in rows if not _physical(efforts[r])])
        elif efforts.size:
            self.effort[columns] = efforts[rows]
            self.effort_received_at[columns] = now
        return StateUpdate(True, unknown, updated=columns.size, effort_error=effort_error,
                           efforts_taken=bool(efforts.size) and not effort_error)

    def update_base(self, position, orientation, linear, angular, now):
        """Take a floating base's measured state; all-or-nothing on bad input (InvalidInputError).

        ``position`` and the unit quaternion ``orientation`` (x, y, z, w) are the base
        pose in the world, ``linear`` and ``angular`` its velocity in the base frame:
        ``q[:7]`` and ``v[:6]`` of docs/floating_base.md.
        """
        if not self.floating_base:
            raise InvalidInputError(f"robot {self.model.name!r} has a fixed base: it has no "
                                    "base state")
        self.base_pose, self.base_twist = (_checked_pose("base pose", position, orientation),
                                           _checked_twist("base twist", linear, angular))
        self._arrivals[-1] = now

    @property
    def base_received_at(self):
        """When a floating base's latest state arrived (caller's clock [s]; -inf: none yet)."""
        return float(self._arrivals[-1]) if self.floating_base else -math.inf

    def model_state(self, positions, velocities, base_pose=None, base_twist=None):
        """``(q, v)`` of the model from joint positions and rates: a floating base's state
        before them.  A request's ``base_pose`` (position, orientation x y z w) and
        ``base_twist`` (linear, angular), as :meth:`update_base` takes them, replace the
        latest measured state: a pose with no twist has zero twist, a twist alone is at
        the measured pose.  InvalidInputError on a bad pose or twist, on a fixed-base robot
        given either, and when the measured state is needed before any arrived."""
        if not self.floating_base:
            if base_pose is not None or base_twist is not None:
                raise InvalidInputError(f"robot {self.model.name!r} has a fixed base: a "
                                        "request's base_pose and base_twist must be empty")
            return positions, velocities
        pose = None if base_pose is None else _checked_pose("base_pose", *base_pose)
        twist = None if base_twist is None else _checked_twist("base_twist", *base_twist)
        if pose is None:
            if not math.isfinite(self.base_received_at):
                raise InvalidInputError("no base state yet: the base odometry has not arrived "
                                        "(or give base_pose in the request)")
            pose = self.base_pose
            twist = self.base_twist if twist is None else twist
        elif twist is None:
            twist = np.zeros(len(self.base_twist))
        return np.concatenate((pose, positions)), np.concatenate((twist, velocities))

    def stale_joints(self, now):
        """Joints whose latest measurement is older than ``state_timeout`` (or missing);
        a floating base's state among them as BASE_STATE."""
        old = (now - self._arrivals) > self.state_timeout
        names = self.model.joint_names + [BASE_STATE] * self.floating_base
        return [name for name, is_old in zip(names, old) if is_old]

    def require_fresh(self, now):
        """:class:`StaleStateError` naming the joints whose measurement is older than ``state_timeout``."""
        # (a list's min: a numpy reduction of a 7-vector costs twice as much)
        if now - min(self._arrivals.tolist()) > self.state_timeout:
            stale = self.stale_joints(now)
            raise StaleStateError(f"joint states older than {self.state_timeout} s for {stale}",
                                  stale)

    def effortless_joints(self, now):
        """Joints with no effort measured within ``state_timeout`` (estimation needs every one)."""
        old = (now - self.effort_received_at) > self.state_timeout
        return [name for name, is_old in zip(self.model.joint_names, old) if is_old]

    def state_age(self, now):
        """Age of the oldest joint (or base) measurement [s] (inf before every one was seen)."""
        return float(now - self._arrivals.min())

    def merged_state(self, names, positions, velocities):
        """(q, qd) for a request: the given joints over the latest measured ones.

        Every joint must come either from the request or from an earlier
        measurement; names must be known joints.
        """
        names = list(names)
        positions = np.asarray(positions, dtype=float)
        velocities = np.asarray(velocities, dtype=float)
        if len(set(names)) != len(names):
            raise InvalidInputError(f"state.name repeats a name: {shown_names(names)}")
        mismatch = _length_mismatch(names, positions, velocities)
        if mismatch:
            raise InvalidInputError(f"state has {mismatch}")
        # every value, also those a query does not read (the velocity of a gravity or
        # mass matrix request): a request with NaN or inf in it is refused as a whole
        as_vector("state.position", positions, positions.size)
        as_vector("state.velocity", velocities, velocities.size)
        q, qd = self.position.copy(), self.velocity.copy()
        given = np.isfinite(self.received_at)
        for i, name in enumerate(names):
            j = self.model.joint_index(name)
            q[j] = positions[i]
            qd[j] = velocities[i] if velocities.size else 0.0
            given[j] = True
        if not given.all():
            missing = [n for n, g in zip(self.model.joint_names, given) if not g]
            raise InvalidInputError(f"no position known for joints {missing}: name them in "
                                    "state or wait for joint_states")
        return q, qd

    def order_of(self, names):
        """Model indices of a list of joint names (model order when empty)."""
        if not len(names):
            return np.arange(self.position.size)
        return np.array([self.model.joint_index(name) for name in names], dtype=int)

    # ------------------------------------------------------------------ feedforward
    def set_desired_acceleration(self, names, accelerations):
        index = self.order_of(names)
        desired = np.zeros(self.position.size)
        desired[index] = _desired("accelerations", accelerations, index.size)
        self.desired_acceleration = desired

    def set_desired_point(self, names, positions, velocities, accelerations):
        """Desired state for computed torque; velocities/accelerations may be empty (zero)."""
        index = self.order_of(names)
        arrays = [_desired("positions", positions, index.size)]
        for label, values in (("velocities", velocities), ("accelerations", accelerations)):
            arrays.append(np.zeros(index.size) if len(values) == 0 else
                          _desired(label, values, index.size))
        q, qd, qdd = self.position.copy(), np.zeros(self.position.size), np.zeros(self.position.size)
        q[index], qd[index], qdd[index] = arrays
        self.desired_point = (q, qd, qdd)

    def feedforward(self, mode, now):
        """The feedforward effort for the latest state, or the reason there is none."""
        result = self._unramped(mode, now)
        if result.effort is None:
            self.interrupt()
        else:
            result.effort = self._ramped(result.effort, now)
        return result

    def _unramped(self, mode, now):
        if mode == "off":
            return Feedforward(reason="feedforward_mode is off")
        try:
            self.require_fresh(now)
        except StaleStateError as error:
            return Feedforward(reason=str(error), error=error)
        try:
            effort = self._floating_law(mode) if self.floating_base else self._law(mode)
            if self.robot_compensates_gravity:
                effort = effort - robot_gravity_torques(self.model, self.position[None])[0]
            effort = effort[self.command_index]
        except SoaDynamicsError as error:   # e.g. gains so large that the law leaves any range
            return Feedforward(reason=f"feedforward not computable: {error}", error=error)
        # The common case in one plain-Python test (False for NaN): half the cost of the
        # numpy calls on a 7-vector.
        if all(-limit <= value <= limit
               for value, limit in zip(effort.tolist(), self._finite_limits)):
            return Feedforward(effort)
        if not np.all(np.isfinite(effort)):
            return Feedforward(reason="the computed effort is not finite")
        limits = self.effort_limits
        over = np.abs(effort) > limits
        clamped = [self.command_joints[i] for i in np.flatnonzero(over)]
        return Feedforward(np.clip(effort, -limits, limits), clamped=clamped)

    def interrupt(self):
        """No effort for the latest state: the next one ramps in again (see :meth:`_ramped`)."""
        self._last_effort_at = -math.inf

    def _ramped(self, effort, now):
        """``effort`` blended in linearly over ``ramp_time`` from the effort last returned.

        A ramp starts at the first effort, at the first after an interruption
        (a state refused as stale, feedforward withheld, or no effort for
        longer than ``state_timeout``: joint states stopped coming) and at the
        first of a new LiveModel (a mode or setting change): from the last
        effort returned (zero at start), which an effort controller such as
        ForwardCommandController keeps applying while nothing is published,
        to the law's effort.  Linear: the torque never steps, and its rate
        stays within the smallest bound a ramp of that length allows,
        ``|change| / ramp_time``.
        """
        if now - self._last_effort_at > self.state_timeout:
            self._ramp = (now, self.last_effort[self.command_index])
        start, origin = self._ramp
        progress = (now - start) / self.ramp_time if self.ramp_time > 0 else 1.0
        if progress < 1.0:
            effort = origin + max(progress, 0.0) * (effort - origin)
        self.last_effort[self.command_index] = effort
        self._last_effort_at = now
        return effort

    def joint_path(self, names, time, positions, velocities=None, accelerations=None,
                   check_limits=False):
        """A :class:`~soa_dynamics_ros.plant.Trajectory` (model order) of a trajectory over ``names``.

        Rates not given (None) are differentiated over ``time`` as
        :mod:`soa_dynamics_ros.plant.trajectory` describes, and are zero for a
        trajectory of fewer than three points (held still).  Joints the
        trajectory omits hold their latest measured positions at zero rates.
        Refusals raise :class:`InvalidInputError` (unknown, repeated or mimic
        joints, wrong shapes, NaN or inf, times not strictly increasing, no
        points, no joints, an omitted joint never measured); nothing changes.
        """
        if self.floating_base:
            raise InvalidInputError("trajectories are not served for floating-base robots yet")
        names = list(names)
        count = len(time)
        if count == 0:
            raise TrajectoryError("the trajectory has no points")
        if not names:
            raise TrajectoryError("the trajectory names no joints")
        positions, velocities, accelerations = (
            None if values is None else as_samples(label, values, len(names), count)
            for label, values in (("positions", positions), ("velocities", velocities),
                                  ("accelerations", accelerations)))
        held = [name for name in self.model.joint_names if name not in names]
        if held:
            index = self.order_of(held)
            unmeasured = [name for name, i in zip(held, index) if not np.isfinite(self.received_at[i])]
            if unmeasured:
                raise InvalidInputError(f"joints {unmeasured} are not in the trajectory and no "
                                        "joint state gave their position yet")
            positions = np.hstack([positions, np.tile(self.position[index], (count, 1))])
            velocities, accelerations = (
                None if rates is None else np.hstack([rates, np.zeros((count, len(held)))])
                for rates in (velocities, accelerations))
        if count < 3:       # too few points to differentiate: the points are held still
            velocities, accelerations = (np.zeros(positions.shape) if rates is None
                                         else rates for rates in (velocities, accelerations))
        return trajectory_from_arrays(self.model, time, positions, velocities, accelerations,
                                      joint_names=names + held, check_limits=check_limits)

    def trajectory_efforts(self, names, time, positions, velocities=None, accelerations=None):
        """Feedforward efforts (N, len(names)) at every point of a trajectory, in ``names`` order.

        Inverse dynamics with the attached payloads and gravity (less the
        robot's own gravity when it compensates it) at each point's positions,
        velocities and accelerations, completed as :meth:`joint_path` says;
        its refusals, and nothing changed by a call.  Positions and rates,
        given or differentiated, are held to DESIRED_BOUNDS as desired states are.
        """
        path = self.joint_path(names, time, positions, velocities, accelerations)
        _check_trajectory_bounds(path)
        efforts = trajectory_efforts(self.model, path, self.robot_compensates_gravity)
        return efforts[:, self.order_of(names)]

    def inertia_ellipsoid(self, frame, now, damping=1e-6):
        """The translational inertia ellipsoid of ``frame`` at the measured state.

        :class:`StaleStateError` when the state is stale: an ellipsoid for
        where the arm was would mislead.
        """
        self.require_fresh(now)
        q, _ = self.model_state(self.position, self.velocity)
        inertia = self.model.task_space_inertia(q, frame, part="translational", damping=damping)
        pose = self.model.frame_pose(q, frame)
        values, vectors = np.linalg.eigh(inertia)
        if np.linalg.det(vectors) < 0:    # eigh may return a reflection
            vectors[:, 0] *= -1
        return InertiaEllipsoid(pose[:3, 3], vectors, 2.0 / np.sqrt(values))

    def _floating_law(self, mode):
        """Actuated joint efforts (model order) of a floating-base robot's mode."""
        q, _ = self.model_state(self.position, self.velocity)
        if mode == "whole_body_gravity":
            return self.model.whole_body_gravity(q, self.contacts).tau
        if mode == "gravity":           # the base held: the joints' rows of g(q)
            return self.model.gravity_torques(q)[6:]
        raise InvalidInputError(f"feedforward_mode {mode!r} is not served for floating-base "
                                f"robots; one of {FLOATING_BASE_MODES}")

    def _law(self, mode):
        """Joint efforts (model order) of a feedforward mode at the measured state."""
        q, qd = self.position, self.velocity
        if mode == "gravity":
            return self.model.gravity_torques(q)
        if mode == "inverse_dynamics":
            acceleration = (self.desired_acceleration if self.desired_acceleration is not None
                            else np.zeros(self.model.dof))
            return self.model.inverse_dynamics(q, qd, acceleration)
        if mode == "computed_torque":
            if self.desired_point is None:
                # Nothing to track yet: hold where the arm is.
                return self.model.inverse_dynamics(q, qd, np.zeros(self.model.dof))
            kp, kd = self.gains
            q_d, qd_d, qdd_d = self.desired_point
            return self.model.inverse_dynamics(q, qd, qdd_d + kp * (q_d - q) + kd * (qd_d - qd))
        if mode == "whole_body_gravity":
            raise InvalidInputError("feedforward_mode 'whole_body_gravity' needs a floating-base "
                                    "robot (parameter floating_base)")
        raise InvalidInputError(f"feedforward_mode must be one of {FEEDFORWARD_MODES}, not {mode!r}")


def _length_mismatch(names, positions, velocities):
    """Why a JointState's arrays do not fit its names (velocities may be empty), or ""."""
    if positions.shape != (len(names),):
        return f"{positions.size} positions for {len(names)} names"
    if velocities.size and velocities.shape != (len(names),):
        return f"{velocities.size} velocities for {len(names)} names"
    return ""


def _desired(label, values, count):
    """A desired-state vector of ``count`` finite values within DESIRED_BOUNDS[label]."""
    values = np.asarray(values, dtype=float)
    bound = DESIRED_BOUNDS[label]
    if values.shape != (count,):
        raise InvalidInputError(f"desired {label}: {count} values expected (one per command "
                                f"joint), got {values.size}")
    if not np.all(np.abs(values) <= bound):   # False for NaN too
        bad = np.flatnonzero(~(np.abs(values) <= bound)).tolist()
        raise InvalidInputError(f"desired {label} must be finite and within +-{bound:g}; "
                                f"index {bad} is not")
    return values


def _check_trajectory_bounds(path):
    """InvalidInputError naming the first quantity of ``path`` beyond DESIRED_BOUNDS."""
    sources = {"positions": "given", "velocities": path.velocity_source,
               "accelerations": path.acceleration_source}
    for label, bound in DESIRED_BOUNDS.items():
        values = getattr(path, label)
        beyond = ~(np.abs(values) <= bound)     # True for NaN too
        if beyond.any():
            samples = sorted(set(np.nonzero(beyond)[0].tolist()))
            origin = "" if sources[label] == "given" else \
                " (differentiated from the positions over time_from_start)"
            raise InvalidInputError(f"trajectory {label}{origin} must be within +-{bound:g}, as "
                                    f"desired states; point(s) {samples[:10]} are not")


def _all_physical(*arrays):
    """Whether every entry of these float arrays is finite and within the library's range:
    the common case, told in plain Python (a numpy reduction of a 7-vector costs more
    than the sum itself on the 1 kHz path).  A sum of magnitudes is never below their largest (rounding included),
    is NaN or inf for any non-finite entry and can only overflow past the bound;
    a False here may still be a state whose entries are each in range."""
    return sum(sum(map(abs, values.tolist())) for values in arrays) <= MAX_MAGNITUDE


def _physical(values):
    """Finite and within the library's range (False for NaN, which max passes on and
    comparisons refuse); the array's own max is half the cost of np.all."""
    return bool(np.abs(values).max(initial=0.0) <= MAX_MAGNITUDE)


def _checked_pose(name, position, orientation):
    """A floating base's ``q[:7]`` from its position and unit quaternion (x, y, z, w), the
    quaternion normalised; InvalidInputError naming ``name`` for a quaternion off unit norm,
    NaN or a value beyond the library's range."""
    pose = checked_base_pose(name, np.concatenate(
        (as_vector(f"{name} position", position, 3),
         as_vector(f"{name} orientation", orientation, 4))))
    if not _physical(pose):
        raise InvalidInputError(f"{name} out of the library's range")
    return pose


def _checked_twist(name, linear, angular):
    """A floating base's ``v[:6]`` from its linear and angular velocity (base frame)."""
    twist = np.concatenate((as_vector(f"{name} linear velocity", linear, 3),
                            as_vector(f"{name} angular velocity", angular, 3)))
    if not _physical(twist):
        raise InvalidInputError(f"{name} out of the library's range")
    return twist
