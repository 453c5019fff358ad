"""Recorded joint states made ready for :meth:`RobotModel.identify_payload`.

Joint states carry positions, rates and efforts, not accelerations: these are
differentiated from the rates here.
"""
import numpy as np

from ..errors import InvalidInputError
from ..validation import as_float_array, as_samples


def accelerations(times, QD):
    """Joint accelerations of rates ``QD`` (N, dof) sampled at ``times`` (N,), seconds.

    Second-order central differences on the (possibly uneven) time grid,
    one-sided at both ends (``numpy.gradient``).  Differentiation amplifies
    noise on measured rates: filter them first if they are noisy.  Refuses
    (:class:`InvalidInputError`) times that do not strictly increase, fewer
    than 3 samples, NaN and mismatched lengths.
    """
    times = as_float_array("times", times, "vector of sample times")
    if times.ndim != 1 or not np.all(np.isfinite(times)):
        raise InvalidInputError(f"times must be a finite vector, got shape {times.shape}")
    rates = as_float_array("QD", QD, "array of shape (N, dof)")
    if rates.ndim != 2:
        raise InvalidInputError(f"QD must have shape (N, dof), got {rates.shape}")
    rates = as_samples("QD", rates, rates.shape[1], len(times))
    if len(times) < 3:
        raise InvalidInputError(f"{len(times)} samples: at least 3 are needed to differentiate")
    steps = np.diff(times)
    if np.any(steps <= 0.0):
        bad = int(np.flatnonzero(steps <= 0.0)[0]) + 1
        raise InvalidInputError(f"times must increase strictly: sample {bad} at {times[bad]} s "
                                f"follows {times[bad - 1]} s")
    return np.gradient(rates, times, axis=0)
