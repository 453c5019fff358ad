"""A stand-in for ros2_controllers' joint_trajectory_controller on effort interfaces (no ROS).

What it emulates, per update at the controller rate (the sim's 1 kHz step), of
``joint_trajectory_controller/JointTrajectoryController`` with
``command_interfaces: [effort]``, ``state_interfaces: [position, velocity]``
and ``interpolation_method: splines`` (its default), Jazzy and later
(ros2_controllers PR #1200):

* **Sampling** (JTC's ``Trajectory::sample``): between two points the
  interpolant depends on what both points give: positions only, a line;
  positions and velocities, a cubic; positions, velocities and accelerations,
  a quintic, each matching the points' values at both ends.  A trajectory
  whose ``header.stamp`` is zero starts at the first update after it arrives
  ("start now"); a non-zero stamp starts it then.  Before the first point's
  time the desired state goes from the state measured at the first update
  (positions and velocities, no accelerations) to the first point; after the
  last point the last point is held (missing velocities and accelerations
  read as zero).  A new trajectory replaces the active one at once (no
  splicing), starting from the state measured then.
* **Effort feedforward**: each point's ``effort``, interpolated linearly
  between points that both give one; after the last point the last point's
  effort, before the first point the first point's.  Points without efforts
  add none.
* **Command** per joint: ``effort = ff_effort + ff_velocity_scale * v_d +
  p * e + i_term + d * e_dot`` with ``e = q_d - q``, ``e_dot = v_d - v`` and
  ``i_term`` the sum of ``i * e * dt`` clamped to ``[-i_clamp, i_clamp]``
  (control_toolbox's ``Pid``), gains named as JTC's ``gains.<joint>.{p, i,
  d, i_clamp, ff_velocity_scale}`` (all default 0, as in JTC).
* **No trajectory yet**: the position at activation is held by the PID alone.
* **An empty trajectory** (no points) stops the active one: the position
  measured at the next update is held (handled by the caller, ``arm.py``).
* **Refused trajectories** (JTC's ``validate_trajectory_msg`` with
  ``allow_partial_joints_goal: false``): unknown or repeated joints, a joint of
  the controller missing, a field whose length is neither 0 nor the
  number of joints (ragged), a non-finite value, ``time_from_start`` not
  strictly increasing, more than :data:`MAX_POINTS` points.

Not emulated: path and goal tolerances (``constraints``; JTC aborts on a
violation), the action interface, ``open_loop_control``,
``interpolate_from_desired_state``, ``allow_integration_in_goal_trajectories``,
``interpolation_method: none``, ``speed_scaling``, angle wrapping of
continuous joints' errors, trajectories with future stamps spliced into the
active one, partial goals, and control_toolbox's anti-windup variants.
"""
from dataclasses import dataclass

import numpy as np

from ..errors import InvalidInputError

#: Points accepted in one trajectory (a refusal names it).
MAX_POINTS = 10000
GAIN_NAMES = ("p", "i", "d", "i_clamp", "ff_velocity_scale")


@dataclass
class Point:
    """One trajectory point in the controller's joint order; absent fields are None."""
    time: float                     # time_from_start [s]
    positions: np.ndarray
    velocities: np.ndarray = None
    accelerations: np.ndarray = None
    effort: np.ndarray = None


def trajectory_points(controller_joints, joint_names, points):
    """Validated :class:`Point` list, reordered to ``controller_joints``, or InvalidInputError.

    ``points``: one dict per point with ``time`` and the sequences ``positions``,
    ``velocities``, ``accelerations``, ``effort`` (each in ``joint_names`` order,
    empty when not given).
    """
    joint_names = list(joint_names)
    unknown = [name for name in joint_names if name not in controller_joints]
    if unknown:
        raise InvalidInputError(f"unknown joint {unknown[0]!r}; the controller's joints are "
                                f"{list(controller_joints)}")
    if len(set(joint_names)) != len(joint_names):
        raise InvalidInputError(f"joint_names {joint_names} repeats a name")
    missing = [name for name in controller_joints if name not in joint_names]
    if missing:
        raise InvalidInputError(f"joints {missing} missing (every joint of the controller must be "
                                "given, as with JTC's allow_partial_joints_goal: false)")
    if not points:
        raise InvalidInputError("the trajectory has no points")
    if len(points) > MAX_POINTS:
        raise InvalidInputError(f"{len(points)} points; at most {MAX_POINTS} accepted")
    order = np.array([joint_names.index(name) for name in controller_joints])
    count, result, previous = len(joint_names), [], -np.inf
    for index, point in enumerate(points):
        fields = {}
        for field in ("positions", "velocities", "accelerations", "effort"):
            values = np.asarray(point[field], dtype=float)
            if values.size == 0 and field != "positions":
                fields[field] = None
                continue
            if values.shape != (count,):
                raise InvalidInputError(f"point {index}: {values.size} {field} for {count} joints")
            if not np.all(np.isfinite(values)):
                raise InvalidInputError(f"point {index}: non-finite {field}")
            fields[field] = values[order]
        time = float(point["time"])
        if not np.isfinite(time) or time <= previous:
            raise InvalidInputError(f"point {index}: time_from_start {time} s does not increase "
                                    f"(previous {previous} s)")
        previous = time
        result.append(Point(time, **fields))
    return result


def _interpolate(t0, a, t1, b, t):
    """(q, qd, qdd) at ``t`` between points ``a`` at ``t0`` and ``b`` at ``t1``.

    The polynomial of least degree matching the fields both points give: a line
    (positions), a cubic (and velocities) or a quintic (and accelerations).
    """
    span = t1 - t0          # > 0: times strictly increase
    s = min(max(t - t0, 0.0), span)
    n = len(a.positions)
    conditions = [(0.0, 0, a.positions), (span, 0, b.positions)]
    if a.velocities is not None and b.velocities is not None:
        conditions += [(0.0, 1, a.velocities), (span, 1, b.velocities)]
        if a.accelerations is not None and b.accelerations is not None:
            conditions += [(0.0, 2, a.accelerations), (span, 2, b.accelerations)]
    degree = len(conditions) - 1
    powers = np.arange(degree + 1)

    def basis(x, derivative):
        """d^derivative/dx^derivative of [1, x, ..., x^degree]."""
        factor = np.ones(degree + 1)
        for k in range(derivative):
            factor *= np.maximum(powers - k, 0)
        return factor * x ** np.maximum(powers - derivative, 0)
    matrix = np.array([basis(x, d) for x, d, _ in conditions])
    coefficients = np.linalg.solve(matrix, np.array([v for _, _, v in conditions]).reshape(-1, n))
    return tuple(basis(s, d) @ coefficients for d in range(3))


class JointTrajectoryControllerEmulation:
    """JTC's update for ``joint_names`` with per-joint ``gains`` (dict name -> dict of GAIN_NAMES)."""

    def __init__(self, joint_names, gains):
        self.joint_names = list(joint_names)
        n = len(self.joint_names)
        table = {name: np.array([float(gains.get(joint, {}).get(name, 0.0))
                                 for joint in self.joint_names]) for name in GAIN_NAMES}
        for name, values in table.items():
            if not np.all(np.isfinite(values)) or np.any(values < 0.0):
                bad = self.joint_names[int(np.flatnonzero(~(np.isfinite(values) & (values >= 0)))[0])]
                raise InvalidInputError(f"gains.{bad}.{name} must be finite and >= 0")
        self.p, self.i, self.d = table["p"], table["i"], table["d"]
        self.i_clamp, self.ff_velocity_scale = table["i_clamp"], table["ff_velocity_scale"]
        self.i_term = np.zeros(n)
        self.points = None          # the active trajectory
        self.start = None           # its start time, None: at the next update
        self.before = None          # (time, Point) measured at its first update
        self.hold = None            # position held while no trajectory is active

    def reset(self):
        """No trajectory, integral terms zero: the next update holds the measured position."""
        self.points, self.start, self.before, self.hold = None, None, None, None
        self.i_term[:] = 0.0

    def set_trajectory(self, points, start=None):
        """Replace the active trajectory; ``start`` in the update clock, None: at the next update."""
        self.points, self.start, self.before = points, start, None

    def sample(self, t):
        """(q, qd, qdd, effort) desired at ``t`` (after the first update of the trajectory)."""
        points, start = self.points, self.start
        first = points[0]
        effort = first.effort if first.effort is not None else np.zeros_like(first.positions)
        if t < start + first.time:
            t0, before = self.before
            q, qd, qdd = _interpolate(t0, before, start + first.time, first, t)
            return q, qd, qdd, effort.copy()
        for a, b in zip(points, points[1:]):
            if t < start + b.time:
                q, qd, qdd = _interpolate(start + a.time, a, start + b.time, b, t)
                if a.effort is not None and b.effort is not None:
                    fraction = (t - start - a.time) / (b.time - a.time)
                    effort = a.effort + fraction * (b.effort - a.effort)
                else:
                    effort = np.zeros_like(q)
                return q, qd, qdd, effort
        last = points[-1]
        zero = np.zeros_like(last.positions)
        return (last.positions.copy(),
                *(v.copy() if v is not None else zero for v in (last.velocities, last.accelerations)),
                last.effort.copy() if last.effort is not None else zero)

    def update(self, t, q, qd, dt):
        """The effort command for the step starting at ``t`` from the measured ``q``, ``qd``."""
        q, qd = np.asarray(q, dtype=float), np.asarray(qd, dtype=float)
        if self.points is None:
            if self.hold is None:
                self.hold = q.copy()
            desired = (self.hold, np.zeros_like(q), np.zeros_like(q), np.zeros_like(q))
        else:
            if self.before is None:
                if self.start is None:
                    self.start = t
                self.before = (t, Point(0.0, q.copy(), qd.copy()))
            desired = self.sample(t)
        q_d, qd_d, _, effort = desired
        error, error_rate = q_d - q, qd_d - qd
        self.i_term = np.clip(self.i_term + self.i * error * dt, -self.i_clamp, self.i_clamp)
        return (effort + self.ff_velocity_scale * qd_d + self.p * error + self.i_term
                + self.d * error_rate)
