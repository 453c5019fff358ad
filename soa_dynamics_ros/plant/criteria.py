"""Performance criteria along a path.

Per sample, for an end-effector ``frame`` and the rows ``part`` of its
Jacobian J (``full`` = [v; w], ``translational`` = v, ``rotational`` = w):

* torque utilization: ``max_j |tau_j| / effort_limit_j`` (1 = at a limit);
* manipulability (Yoshikawa): ``sqrt(det(J J^T))``, computed as the product of
  the ``min(rows, dof)`` largest singular values of J (so it is also defined,
  as ``sqrt(det(J^T J))``, for robots with fewer joints than task directions);
* dynamic manipulability (Yoshikawa): the same product for ``J M^-1``,
  i.e. ``sqrt(det(J (M^T M)^-1 J^T))``: how well joint torques accelerate the frame;
* condition number of the task-space inertia Lambda (equal to that of
  ``Lambda^-1 = J M^-1 J^T``), ``inf`` where Lambda is singular.
"""
from dataclasses import dataclass

import numpy as np

from ..errors import SingularDynamicsError
from .torques import chunked, effort_limits, path_torques

PARTS = {"full": slice(0, 6), "translational": slice(0, 3), "rotational": slice(3, 6)}


def _volume(matrix, rank):
    values = np.linalg.svd(matrix, compute_uv=False)
    return float(np.prod(values[:rank])) if rank else 0.0


@dataclass
class Criteria:
    frame: str
    part: str
    time: np.ndarray
    torque_utilization: np.ndarray
    manipulability: np.ndarray
    dynamic_manipulability: np.ndarray
    inertia_condition: np.ndarray

    NAMES = ("torque_utilization", "manipulability", "dynamic_manipulability", "inertia_condition")

    def summary(self):
        result = {}
        for name in self.NAMES:
            values = getattr(self, name)
            result[name] = {"min": float(values.min()), "max": float(values.max()),
                            "mean": float(values.mean()),
                            "argmin_time": float(self.time[values.argmin()]),
                            "argmax_time": float(self.time[values.argmax()])}
        return result


def criteria_along_path(model, trajectory, frame, part="full", wrenches=None, progress=None):
    """:class:`Criteria` at every sample of ``trajectory``."""
    if part not in PARTS:
        raise ValueError(f"part must be one of {sorted(PARTS)}, not {part!r}")
    rows = PARTS[part]
    model.frame_pose(np.zeros(model.dof), frame)  # UnknownNameError early
    count = len(trajectory)
    torques = path_torques(model, trajectory, wrenches,
                           progress and (lambda d, t, s: progress(d, 2 * t, "torques")))
    limits = effort_limits(model)
    with np.errstate(divide="ignore", invalid="ignore"):
        utilization = np.where(np.isfinite(limits), np.abs(torques) / limits, 0.0)
    utilization = utilization.max(axis=1) if model.dof else np.zeros(count)
    manipulability = np.empty(count)
    dynamic = np.empty(count)
    condition = np.empty(count)
    rank = min(rows.stop - rows.start, model.dof)
    for part_slice in chunked(count, "criteria",
                              progress and (lambda d, t, s: progress(t + d, 2 * t, "criteria")), 200):
        for k in range(part_slice.start, part_slice.stop):
            q = trajectory.positions[k]
            jacobian = model.jacobian(q, frame)[rows]
            mass = model.mass_matrix(q)
            manipulability[k] = _volume(jacobian, rank)
            dynamic[k] = _volume(np.linalg.solve(mass.T, jacobian.T).T, rank)
            try:
                info = model.task_space_inertia(q, frame, part=part, return_info=True)
                condition[k] = info.condition_number
            except SingularDynamicsError:
                condition[k] = np.inf
    return Criteria(frame, part, trajectory.time, utilization, manipulability, dynamic, condition)
