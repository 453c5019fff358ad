"""Checks of physical consistency of inertial parameters and of call arguments."""
import warnings

import numpy as np

from .errors import InertiaError, InertiaWarning, InvalidInputError


def inertia_problems(mass, inertia_about_com):
    """Reasons why (mass, 3x3 inertia about the COM) is not a physical rigid body."""
    problems = []
    if not mass > 0.0:
        problems.append(f"mass {mass} is not positive")
    if not np.allclose(inertia_about_com, inertia_about_com.T, rtol=0.0,
                       atol=1e-12 * max(1.0, np.abs(inertia_about_com).max())):
        problems.append("inertia is not symmetric")
        return problems
    moments = np.linalg.eigvalsh(inertia_about_com)
    if moments[0] <= 0.0:
        problems.append(f"inertia is not positive definite (principal moments {moments})")
    else:
        # A real mass distribution has each principal moment at most the sum of
        # the other two.
        tolerance = 1e-9 * moments.sum()
        if moments[2] > moments[0] + moments[1] + tolerance:
            problems.append(f"principal moments {moments} violate the triangle inequality")
    return problems


# A payload's centre of mass further than this from its link's origin (each
# component, metres) is no tool or load of a robot: refused, as the start-up
# payload parameters (payload.<name>.com) are.
MAX_PAYLOAD_COM = 1e4


def payload_problems(mass, inertia_about_com):
    """Like :func:`inertia_problems`, but a point mass (zero inertia) is physical."""
    if not mass > 0.0:
        return [f"mass {mass} is not positive"]
    if not np.any(inertia_about_com):
        return []
    problems = inertia_problems(mass, inertia_about_com)
    # Thin rods and point-like bodies have a zero principal moment: allow it.
    return [p for p in problems if "positive definite" not in p
            or np.linalg.eigvalsh(inertia_about_com)[0] < -1e-12 * np.abs(inertia_about_com).max()]


def check_link_inertias(description, strict):
    """Warn (or raise :class:`InertiaError` when ``strict``) for every bad ``<inertial>``."""
    for link in description.links.values():
        if not link.has_inertial:
            continue
        if link.mass < 0.0:
            raise InertiaError(f"link {link.name!r} has negative mass {link.mass}",
                               "link", link.line)
        problems = inertia_problems(link.mass, link.inertia)
        if problems:
            message = f"link {link.name!r}: " + "; ".join(problems)
            if strict:
                raise InertiaError(message, "link", link.line)
            # Point the warning at the caller of RobotModel.from_urdf.
            warnings.warn(message, InertiaWarning, stacklevel=4)


# Joint and wrench values beyond this are outside any physical range, and their
# products overflow double precision in the recursions: refused like NaN.
MAX_MAGNITUDE = 1e50


def _within_range(array):
    """Whether every entry of a non-empty ``array`` is finite and within MAX_MAGNITUDE.

    Two reductions that allocate nothing (NaN fails both comparisons): the
    common case, a valid trajectory, passes faster than isfinite and abs
    did (docs/performance.md, "Design measurements"); only a
    refused array pays for finding the samples to name.
    """
    return -MAX_MAGNITUDE <= array.min() and array.max() <= MAX_MAGNITUDE


def as_float_array(name, value, expected):
    """``value`` as a float array, or :class:`InvalidInputError` naming ``expected``.

    Complex values are refused rather than cut to their real part (numpy would
    only warn), and integers too large for a float are refused rather than
    raising OverflowError.
    """
    if type(value) is np.ndarray and value.dtype == np.float64:
        return value
    try:
        array = np.asarray(value)
        if np.iscomplexobj(array):
            raise InvalidInputError(f"{name} holds complex values; {name} must be a real "
                                    f"{expected}")
        return array.astype(float, copy=False)
    except (TypeError, ValueError) as error:
        if isinstance(error, InvalidInputError):
            raise
        raise InvalidInputError(f"{name} must be a numeric {expected}") from None
    except OverflowError:
        raise InvalidInputError(f"{name} holds a number too large for a float; {name} must be "
                                f"a numeric {expected}") from None


def as_vector(name, value, size):
    """A float vector of exactly ``size`` finite entries, or :class:`InvalidInputError`."""
    vector = as_float_array(name, value, f"vector of length {size}")
    if vector.shape != (size,):
        raise InvalidInputError(f"{name} must have shape ({size},), got {vector.shape}")
    if vector.size and _within_range(vector):
        return vector
    if not np.all(np.isfinite(vector)):
        bad = np.flatnonzero(~np.isfinite(vector)).tolist()
        raise InvalidInputError(f"{name} holds NaN or inf at index {bad}")
    if np.any(np.abs(vector) > MAX_MAGNITUDE):
        bad = np.flatnonzero(np.abs(vector) > MAX_MAGNITUDE).tolist()
        raise InvalidInputError(f"{name} holds values beyond {MAX_MAGNITUDE:g} at index {bad}")
    return vector


def readable(array):
    """A float array as compiled code reads it: C-contiguous and aligned (a copy only
    where ``array`` is not)."""
    flags = array.flags
    return array if flags.c_contiguous and flags.aligned else np.array(array, order="C")


def as_samples(name, value, columns, count=None):
    """A float array of shape (count or N, columns), finite and in range, :func:`readable`."""
    rows = "N" if count is None else count
    samples = as_float_array(name, value, f"array of shape ({rows}, {columns})")
    if samples.ndim != 2 or samples.shape[1] != columns or (
            count is not None and samples.shape[0] != count):
        raise InvalidInputError(f"{name} must have shape ({rows}, {columns}), got {samples.shape}")
    if samples.size and _within_range(samples):
        return readable(samples)
    if not np.all(np.isfinite(samples)):
        bad = sorted(set(np.nonzero(~np.isfinite(samples))[0].tolist()))
        raise InvalidInputError(f"{name} holds NaN or inf in sample(s) {bad[:10]}")
    if np.any(np.abs(samples) > MAX_MAGNITUDE):
        bad = sorted(set(np.nonzero(np.abs(samples) > MAX_MAGNITUDE)[0].tolist()))
        raise InvalidInputError(f"{name} holds values beyond {MAX_MAGNITUDE:g} in sample(s) "
                                f"{bad[:10]}")
    return readable(samples)
