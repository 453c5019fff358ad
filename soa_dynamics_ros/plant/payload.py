"""Largest payload a path allows: exact, from two batched inverse-dynamics evaluations.

For a payload of mass ``m`` rigidly attached at a fixed point ``c`` of a link
(a point mass, or a body whose inertia scales with ``m``), the spatial inertia
of the loaded link is affine in ``m``, and so is inverse dynamics:

    tau(m) = tau0 + m * tau1     (per sample and per joint)

with ``tau0`` the torques without payload and ``tau1 = tau(1) - tau0``.  Each
joint ``j`` with effort limit ``L_j`` allows ``|tau0 + m tau1| <= L_j``, i.e.
``m <= (L_j - tau0) / tau1`` where ``tau1 > 0`` and ``m <= (-L_j - tau0) / tau1``
where ``tau1 < 0``; the capacity is the smallest such bound over samples and
joints.  If the path already violates a limit with no payload, no payload is
possible and the capacity is 0 (``feasible_without_payload`` is False).
"""
from dataclasses import dataclass

import numpy as np

from ..validation import as_float_array
from .torques import attached_payload, effort_limits, path_torques


@dataclass
class PayloadCapacity:
    link: str
    com: np.ndarray
    max_payload: float           # kg; inf if no effort limit ever binds
    limiting_joint: str          # None when unbounded or infeasible
    limiting_time: float
    feasible_without_payload: bool
    unloaded_peak_ratio: float   # max |tau0| / limit over the path
    torques_without_payload: np.ndarray    # tau0 (N, dof)
    torques_per_kg: np.ndarray             # tau1 (N, dof)

    def torques(self, mass):
        """Torques along the path with a payload of ``mass`` kg (from the affine model)."""
        return self.torques_without_payload + mass * self.torques_per_kg


def payload_capacity(model, trajectory, link, com=(0.0, 0.0, 0.0), wrenches=None, progress=None):
    """:class:`PayloadCapacity` for a point mass at ``com`` (link frame) on ``link`` along the path."""
    com = as_float_array("com", com, "3-vector in the link frame")
    tau0 = path_torques(model, trajectory, wrenches,
                        progress and (lambda d, t, s: progress(d, 2 * t, "without payload")))
    with attached_payload(model, link, 1.0, com):
        tau_unit = path_torques(model, trajectory, wrenches,
                                progress and (lambda d, t, s: progress(t + d, 2 * t, "with 1 kg")))
    tau1 = tau_unit - tau0
    limits = effort_limits(model)
    finite = np.isfinite(limits)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.where(finite, np.abs(tau0) / limits, 0.0)
    unloaded_peak = float(ratios.max()) if ratios.size else 0.0
    feasible = bool(np.all(np.abs(tau0)[:, finite] <= limits[finite]))
    times = trajectory.time
    if not feasible:
        over = np.argwhere((np.abs(tau0) > limits) & finite)
        sample, joint = over[np.argmin(times[over[:, 0]])]
        return PayloadCapacity(link, com, 0.0, model.joint_names[joint], float(times[sample]),
                               False, unloaded_peak, tau0, tau1)
    # Per sample and joint: the mass at which |tau0 + m tau1| reaches the limit.
    bound = np.full(tau0.shape, np.inf)
    scale = np.abs(tau1) > 0
    up = scale & (tau1 > 0) & finite
    down = scale & (tau1 < 0) & finite
    bounds_up = (limits - tau0) / np.where(up, tau1, 1.0)
    bounds_down = (-limits - tau0) / np.where(down, tau1, 1.0)
    bound[up] = bounds_up[up]
    bound[down] = bounds_down[down]
    bound = np.maximum(bound, 0.0)
    if not np.isfinite(bound).any():
        return PayloadCapacity(link, com, np.inf, None, None, True, unloaded_peak, tau0, tau1)
    sample, joint = np.unravel_index(np.argmin(bound), bound.shape)
    return PayloadCapacity(link, com, float(bound[sample, joint]), model.joint_names[joint],
                           float(times[sample]), True, unloaded_peak, tau0, tau1)
