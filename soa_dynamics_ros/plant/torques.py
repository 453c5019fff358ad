"""Joint torques along a path, their peaks and their ratio to the URDF effort limits.

Effort limits belong to independent joints (``RobotModel.joint_names``): a
mimic joint's torque is folded onto its master (``tau = G^T tau_hinge``), so
the master's limit is checked against the folded torque and the mimic joint's
own ``effort`` attribute is not used.  A limit that is missing, infinite or not
positive counts as "no limit" (ratio 0, never violated).
"""
import contextlib
import itertools
from dataclasses import dataclass

import numpy as np

from ..errors import InvalidInputError
from ..validation import as_vector

#: Samples per batched call; progress is reported between chunks.
CHUNK = 2000

_probe_names = itertools.count()


def effort_limits(model):
    """Effort limits of the independent joints, ``inf`` where none (missing, inf or <= 0)."""
    limits = np.array(model.effort_limits, dtype=float)
    limits[~(limits > 0)] = np.inf
    return limits


def chunked(count, stage, progress, chunk=CHUNK):
    """Slices of ``range(count)``, calling ``progress(done, count, stage)`` after each."""
    for start in range(0, count, chunk):
        stop = min(count, start + chunk)
        yield slice(start, stop)
        if progress is not None:
            progress(stop, count, stage)


def check_wrenches(model, wrenches):
    """``{link: 6-vector}`` checked against the model (root axes, about the link origin, on the robot)."""
    if not wrenches:
        return {}
    if not isinstance(wrenches, dict):
        raise InvalidInputError("wrenches must map link names to 6-vectors [fx, fy, fz, tx, ty, tz]")
    checked = {}
    for link, wrench in wrenches.items():
        model.frame_pose(np.zeros(model.dof), link)  # UnknownNameError for a bad link
        checked[link] = as_vector(f"wrench on {link!r}", wrench, 6)
    return checked


def wrench_torques(model, positions, wrenches):
    """``sum_i J_i(q)^T w_i`` per sample, (N, dof): what the applied wrenches do at the joints."""
    result = np.zeros((len(positions), model.dof))
    for link, wrench in wrenches.items():
        for k, q in enumerate(positions):
            result[k] += model.jacobian(q, link).T @ wrench
    return result


@contextlib.contextmanager
def attached_payload(model, link, mass, com=(0.0, 0.0, 0.0), inertia=None):
    """Attach a payload to ``model`` for the duration of a ``with`` block (detached afterwards)."""
    if mass is None or mass == 0:
        yield None
        return
    name = f"__plant_payload_{next(_probe_names)}__"
    try:
        model.attach_payload(name, link, mass, com, inertia)
    except InvalidInputError as error:
        if repr(name) not in str(error):
            raise
        # The probe's name is this module's: the caller gave a payload, not a name.
        raise InvalidInputError(str(error).replace(f"payload {name!r}", "payload")) from None
    try:
        yield name
    finally:
        model.detach_payload(name)


def path_torques(model, trajectory, wrenches=None, progress=None, chunk=CHUNK):
    """Joint torques (N, dof) at every sample: ``M qdd + h - sum J_i^T w_i``.

    Uses :meth:`RobotModel.inverse_dynamics_batch`, chunk by chunk;
    ``progress(done, total, stage)`` is called between chunks.
    """
    wrenches = check_wrenches(model, wrenches)
    count = len(trajectory)
    torques = np.empty((count, model.dof))
    for part in chunked(count, "inverse dynamics", progress, chunk):
        torques[part] = model.inverse_dynamics_batch(
            trajectory.positions[part], trajectory.velocities[part], trajectory.accelerations[part])
        if wrenches:
            torques[part] -= wrench_torques(model, trajectory.positions[part], wrenches)
    return torques


def payload_gravity_torques(model, positions):
    """Torques (N, dof) holding the attached payloads alone against gravity, per sample.

    For each payload of mass ``m`` whose centre of mass ``p`` sits on a link:
    ``-J_p(q)^T m g``, with ``J_p`` the linear Jacobian of ``p`` (the link
    origin's ``[v; w]`` Jacobian shifted by the lever ``R com``).  This is the
    part of :meth:`RobotModel.gravity_torques` that a robot compensating its
    own gravity knows nothing about.
    """
    positions = np.atleast_2d(positions)
    torques = np.zeros((len(positions), model.dof))
    gravity = model.gravity
    for link, mass, com, _ in model.payloads.values():
        weight = mass * gravity
        for k, q in enumerate(positions):
            lever = model.frame_pose(q, link)[:3, :3] @ com
            jacobian = model.jacobian(q, link)
            torques[k] -= jacobian[:3].T @ weight + jacobian[3:].T @ np.cross(lever, weight)
    return torques


def robot_gravity_torques(model, positions):
    """Gravity torques (N, dof) of the robot itself, without the attached payloads."""
    return model.gravity_torques_batch(positions) - payload_gravity_torques(model, positions)


def trajectory_efforts(model, trajectory, robot_compensates_gravity=False, progress=None):
    """Feedforward efforts (N, dof) along a path: inverse dynamics with the attached payloads.

    With ``robot_compensates_gravity`` the robot's own gravity torques are
    left out and the payloads' are kept: a robot that compensates its own
    gravity (Franka, KUKA LBR iiwa in torque mode) does so for its URDF
    masses only, not for a payload attached in this model.
    """
    torques = path_torques(model, trajectory, progress=progress)
    if robot_compensates_gravity:
        torques -= robot_gravity_torques(model, trajectory.positions)
    return torques


@dataclass
class TorqueReport:
    """Torques along a path and how they compare with the effort limits (``joint_names`` order)."""
    joint_names: list
    time: np.ndarray
    torques: np.ndarray          # (N, dof)
    effort_limits: np.ndarray    # (dof,), inf where none
    peak: np.ndarray             # max |tau| per joint
    peak_time: np.ndarray        # time of the peak per joint
    ratio: np.ndarray            # peak / limit (0 where no limit)
    first_violation_time: list   # per joint: first time |tau| > limit, or None
    utilization: np.ndarray      # (N,): max_j |tau_j| / limit_j per sample

    @property
    def violated(self):
        return any(t is not None for t in self.first_violation_time)

    @property
    def first_violation(self):
        """``(time, joint)`` of the earliest violation, or None."""
        found = [(t, name) for t, name in zip(self.first_violation_time, self.joint_names)
                 if t is not None]
        return min(found) if found else None

    def summary(self):
        return [{"joint": name, "peak": float(self.peak[j]), "peak_time": float(self.peak_time[j]),
                 "effort_limit": float(self.effort_limits[j]), "ratio": float(self.ratio[j]),
                 "first_violation_time": self.first_violation_time[j]}
                for j, name in enumerate(self.joint_names)]


def torque_report(model, trajectory, torques):
    """Peaks, ratios to the effort limits and first violations of ``torques`` along ``trajectory``."""
    limits = effort_limits(model)
    magnitude = np.abs(torques)
    peak_index = magnitude.argmax(axis=0)
    columns = np.arange(model.dof)
    peak = magnitude[peak_index, columns]
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.where(np.isfinite(limits), magnitude / limits, 0.0)
    first = []
    for j in columns:
        over = np.flatnonzero(magnitude[:, j] > limits[j])
        first.append(float(trajectory.time[over[0]]) if len(over) else None)
    return TorqueReport(model.joint_names, trajectory.time, torques, limits, peak,
                        trajectory.time[peak_index], ratios.max(axis=0) if len(ratios) else peak * 0,
                        first, ratios.max(axis=1) if model.dof else np.zeros(len(trajectory)))


def evaluate_torques(model, trajectory, payload=None, wrenches=None, progress=None):
    """:class:`TorqueReport` of a path, optionally with a payload ``(link, mass[, com[, inertia]])``."""
    payload = tuple(payload) if payload else (None, 0.0)
    link, mass, *rest = payload
    with attached_payload(model, link, mass, *rest):
        torques = path_torques(model, trajectory, wrenches, progress)
    return torque_report(model, trajectory, torques)
