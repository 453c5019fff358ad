"""External joint torques by the generalized-momentum observer (De Luca et al.).

The momentum ``p = M(q) qd`` obeys ``dp/dt = tau + C(q, qd)^T qd - g(q) + tau_ext``:
no acceleration appears.  The observer integrates the known part and calls
the rest the external torque:

    r(t) = K (p(t) - p(0) - integral of (tau + C^T qd - g + r) dt)

so that ``dr/dt = K (tau_ext - r)``: per joint, ``r`` is the true external
torque through a first-order low-pass of gain ``K`` (1/s), time constant
``1/K``: a step of external torque is 63% estimated after ``1/K``, 95% after
``3/K``, and noise on measured torques above ``K / (2 pi)`` Hz is filtered.
"""
import numbers

import numpy as np

from ..errors import InvalidInputError
from ..validation import as_float_array, as_vector

DEFAULT_GAIN = 50.0
# Coulomb friction's sign(qd) is tanh(qd / this) (rad/s or m/s): a measured rate
# that crosses zero does not switch the subtracted friction in one sample.
DEFAULT_FRICTION_VELOCITY = 0.01
# Relative cut-off of J^T's singular values when a wrench is fitted to the torques.
WRENCH_RCOND = 1e-6


def _positive(name, value, size):
    """A scalar or a ``size`` vector of finite positive numbers, as a ``size`` vector."""
    array = as_float_array(name, value, f"number or vector of length {size}")
    array = as_vector(name, np.full(size, array) if array.ndim == 0 else array, size)
    if np.any(array <= 0.0):
        raise InvalidInputError(f"{name} must be positive, got {array.tolist()}")
    return array


class ExternalTorqueObserver:
    """Estimates the external joint torques acting on ``model`` from measured efforts.

    ``gain``: K in 1/s, one for all joints or one per joint (model order).  The
    estimate is the true external torque through a first-order low-pass of time
    constant 1/K (module docstring): larger K reacts faster and passes more of
    the measured torques' noise and of the model's errors.  The default 50/s
    (20 ms) leaves 0.7% of a step after 100 ms.

    ``subtract_friction``: subtract the URDF joints' ``<dynamics damping friction>``
    from the measured torques: ``damping * qd + friction * tanh(qd / friction_velocity)``
    per joint (mimic joints folded onto their masters).  Without it, the
    robot's friction is part of the estimate.

    Time is discretized with the trapezoidal rule for the known torques and
    the estimate taken implicitly (``r_k`` in its own integral), which is
    stable for any ``K dt``.  The first :meth:`update` (and the first after
    :meth:`reset`) defines the initial momentum and returns zero: the
    observer assumes no external torque then.
    """

    def __init__(self, model, gain=DEFAULT_GAIN, subtract_friction=False,
                 friction_velocity=DEFAULT_FRICTION_VELOCITY):
        self.model = model
        self.dof = model.dof
        self.gain = _positive("gain", gain, self.dof)
        self.subtract_friction = bool(subtract_friction)
        self.friction_velocity = _positive("friction_velocity", friction_velocity, 1)[0]
        hinges = model.joints
        self._damping = np.array([0.0] + [joint.damping for joint in hinges])
        self._coulomb = np.array([0.0] + [joint.friction for joint in hinges])
        self.reset()

    def reset(self):
        """Forget the history: the next :meth:`update` starts the observer again."""
        self._initial_momentum = None
        self._integral = np.zeros(self.dof)
        self._previous_known = np.zeros(self.dof)
        self._estimate = np.zeros(self.dof)

    @property
    def estimate(self):
        """The latest estimated external joint torques (model order); zeros before any update."""
        return self._estimate.copy()

    def friction_torques(self, qd):
        """The URDF joint friction at rates ``qd`` as joint torques (model order)."""
        coordinates = self.model.tree.coordinates
        qd_hinge = coordinates.hinge_rates(as_vector("qd", qd, self.dof))
        hinge = self._damping * qd_hinge + self._coulomb * np.tanh(qd_hinge / self.friction_velocity)
        return coordinates.joint_forces(hinge)

    def update(self, q, qd, tau_measured, dt):
        """Take one sample; returns the estimated external joint torques (model order).

        ``tau_measured``: the joint efforts the actuators applied (model order);
        ``dt``: seconds since the previous sample (ignored by the first).  Bad
        input raises :class:`~soa_dynamics_ros.errors.InvalidInputError` and
        leaves the observer as it was.
        """
        tau = as_vector("tau_measured", tau_measured, self.dof)
        if not isinstance(dt, numbers.Real) or isinstance(dt, bool):
            raise InvalidInputError(f"dt must be a number of seconds, not {dt!r}")
        dt = float(dt)
        if not (np.isfinite(dt) and dt > 0.0):
            raise InvalidInputError(f"dt must be finite and positive (time must increase), "
                                    f"got {dt}")
        # The model's calls validate q and qd (compiled kernels check them, and what they
        # decline the numpy path refuses by name): no second pass over them at 1 kHz.
        model = self.model
        mass = model.mass_matrix(q)
        known = tau + model.coriolis_transpose_product(q, qd) - model.gravity_torques(q)
        momentum = mass @ np.asarray(qd, dtype=float)
        if self.subtract_friction:
            known -= self.friction_torques(qd)
        if self._initial_momentum is None:
            self._initial_momentum = momentum
            self._previous_known = known
            return self._estimate.copy()
        known_step = 0.5 * (self._previous_known + known) * dt
        gain = self.gain
        estimate = gain * (momentum - self._initial_momentum - self._integral - known_step) / (
            1.0 + gain * dt)
        self._integral = self._integral + known_step + estimate * dt
        self._previous_known = known
        self._estimate = estimate
        return estimate.copy()

    def external_wrench(self, q, frame):
        """The wrench ``[f; t]`` on the robot at ``frame`` that best explains the estimate.

        Root-link axes, moment about the frame origin (the ``wrenches``
        convention).  Least squares on ``J(q)^T w = r``: where ``J^T`` has rank
        below 6 (an arm with fewer than 6 joints between root and frame, or a
        singular configuration; singular values below ``WRENCH_RCOND`` times
        the largest count as zero) the joints cannot feel some wrenches, and
        the answer is the smallest wrench that explains the torques: its
        components the joints cannot feel are zero, not estimated.  Torques no
        wrench at this frame produces (joints beyond it, contact elsewhere) are
        left as the fit's residual.
        """
        jacobian = self.model.jacobian(q, frame)
        wrench, *_ = np.linalg.lstsq(jacobian.T, self._estimate, rcond=WRENCH_RCOND)
        return wrench
