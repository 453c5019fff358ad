"""Payload identification: least squares on a rigid load's ten inertial parameters.

Joint torques are linear in a body's inertial parameters (``tau = Y(q, qd, qdd) pi``),
so the torques a load adds to the known robot's, ``TAU - ID_robot``, fit
``pi`` of the load by least squares.  ``pi`` is, in the link frame,
``[m, m cx, m cy, m cz, Ixx, Ixy, Ixz, Iyy, Iyz, Izz]`` with the rotational
inertia about the **link origin**; :class:`PayloadEstimate` turns it into a
mass, a centre of mass and the inertia about it.  The regressor's column j
is the inverse dynamics of the tree with only a unit of parameter j on the
link (:func:`unit_payload_inertias`), computed by the model's own
recursions (compiled batch where there is one).
"""
from dataclasses import dataclass, field

import numpy as np

from ..algorithms.external_forces import gravity_root_acceleration
from ..algorithms.inverse_dynamics import inverse_dynamics as newton_euler
from ..errors import InvalidInputError
from ..multibody.spatial import (INERTIA_PARAMETER_COUNT, motion_transform,
                                 parameters_to_inertia, skew, transformed_inertia)
from ..validation import payload_problems

PARAMETER_NAMES = ("m", "m*cx", "m*cy", "m*cz", "Ixx", "Ixy", "Ixz", "Iyy", "Iyz", "Izz")
# Singular values of the column-normalized regressor below this fraction of the
# largest count as zero: the motion did not tell those parameter combinations
# apart (condition number of at least 1e8).
EXCITATION_RCOND = 1e-8


def regressor(tree, gravity, batch_kernel, frame, Q, QD, QDD):
    """The regressor of a load on ``frame``, (N, dof, 10), from validated samples: per
    inertial parameter, the inverse dynamics of the tree with that unit alone on the
    link, through ``batch_kernel`` (the generic module's inverse dynamics batch, or
    None: the recursion per sample)."""
    return np.stack([_inverse_dynamics_batch(tree.with_inertia(inertia), gravity, batch_kernel,
                                             Q, QD, QDD)
                     for inertia in unit_payload_inertias(tree, frame)], axis=-1)


def _inverse_dynamics_batch(tree, gravity, batch_kernel, Q, QD, QDD):
    from ..kernels import pack_parameters
    if batch_kernel is not None:
        torques = batch_kernel(Q, QD, QDD, pack_parameters(tree, gravity))
        if type(torques) is np.ndarray:
            return torques
    coordinates, root = tree.coordinates, gravity_root_acceleration(gravity)
    return np.array([coordinates.joint_forces(newton_euler(
        tree, coordinates.hinge_positions(q), coordinates.hinge_rates(qd),
        coordinates.hinge_rates(qdd), root)) for q, qd, qdd in zip(Q, QD, QDD)]).reshape(
            Q.shape)


def unit_payload_inertias(tree, frame):
    """Per inertial parameter of a load on ``frame``, the tree's body inertias with only
    a unit of that parameter (link-frame parameter, carried onto the frame's body)."""
    x = motion_transform(frame.rotation, frame.translation)
    inertias = []
    for unit in np.eye(INERTIA_PARAMETER_COUNT):
        inertia = np.zeros_like(tree.body_inertia)
        inertia[frame.body] = transformed_inertia(x, parameters_to_inertia(unit))
        inertias.append(inertia)
    return inertias


@dataclass
class PayloadEstimate:
    """A rigid load identified on ``link``: see :meth:`RobotModel.identify_payload`."""
    link: str
    mass: float
    com: np.ndarray              # link frame, m
    inertia: np.ndarray          # 3x3 about the COM, link axes
    parameters: np.ndarray       # the ten fitted parameters (PARAMETER_NAMES, about the link origin)
    residual: float              # RMS of the torques the fit leaves unexplained, N m
    standard_deviation: np.ndarray  # per parameter, from the residual and the regressor
    singular_values: np.ndarray  # of the column-normalized regressor, largest first
    samples: int
    problems: list = field(default_factory=list)  # why it is not a physical body, if it is not

    @property
    def condition(self):
        """Condition number of the column-normalized regressor: how well the motion
        excited the parameters apart (1 is ideal; the solve refuses at 1e8)."""
        return float(self.singular_values[0] / self.singular_values[-1])

    @property
    def plausible(self):
        return not self.problems

    def apply(self, model, name, with_inertia=True):
        """Attach the estimate to ``model`` as payload ``name``; refuses an implausible one.

        ``with_inertia=False`` attaches the mass at the centre of mass only (a
        point mass), for a motion that determined them but left the inertia
        implausible (a small load's inertia is the least excited parameter).
        """
        problems = self.problems if with_inertia else payload_problems(self.mass, np.zeros((3, 3)))
        if problems:
            raise InvalidInputError(f"identified payload on {self.link!r} is not a physical "
                                    f"body ({'; '.join(problems)}): not applied")
        model.attach_payload(name, self.link, self.mass, self.com,
                             self.inertia if with_inertia else None)


def solve(link, regressor, torques):
    """Fit the ten parameters: ``regressor`` (N, dof, 10), ``torques`` (N, dof) the load's."""
    parameters, residual, deviation, singular = least_squares(
        regressor, torques, PARAMETER_NAMES,
        Subject("the payload's", f"a load on {link!r}", f"the payload parameters on {link!r}"))
    return _estimate(link, parameters, residual, deviation, singular, len(regressor))


@dataclass(frozen=True)
class Subject:
    """How the refusals of :func:`least_squares` name what is fitted: ``whose``
    parameters (``"the payload's"``), ``what`` cannot then be identified (``"a load on
    'tool'"``), which ``parameters`` the motion does not excite."""
    whose: str
    what: str
    parameters: str


def least_squares(regressor, torques, names, subject):
    """``(parameters, residual, standard_deviation, singular_values)`` fitting
    ``torques`` (N, dof) with ``regressor`` (N, dof, count), column ``j`` the parameter
    ``names[j]``; refuses too few equations, a parameter the torques do not depend on,
    and a motion whose column-normalized regressor is singular to EXCITATION_RCOND."""
    samples, dof, count = regressor.shape
    rows = regressor.reshape(samples * dof, count)
    target = torques.reshape(samples * dof)
    if len(rows) < 2 * count:
        raise InvalidInputError(f"{samples} samples of {dof} joints give {len(rows)} equations: "
                                f"at least {2 * count} are needed for {count} parameters")
    scale = np.linalg.norm(rows, axis=0)
    unfelt = [names[j] for j in np.flatnonzero(scale == 0.0)]
    if unfelt:
        raise InvalidInputError(f"the joint torques do not depend on {subject.whose} "
                                f"{_bounded(unfelt)} in this motion: {subject.what} cannot be "
                                f"identified from it")
    left, singular, right = np.linalg.svd(rows / scale, full_matrices=False)
    weak = singular < EXCITATION_RCOND * singular[0]
    if np.any(weak):
        # The right singular vectors of the weak directions name the parameters they mix.
        mixed = sorted({names[j] for vector in right[weak]
                        for j in np.flatnonzero(np.abs(vector) > 0.1)})
        raise InvalidInputError(
            f"the motion does not excite {subject.parameters} enough to tell "
            f"{_bounded(mixed)} apart (condition number {singular[0] / singular[-1]:.3g} of the "
            f"normalized regressor): move more joints, faster, in more directions")
    scaled = right.T @ ((left.T @ target) / singular)
    parameters = scaled / scale
    error = target - rows @ parameters
    residual = float(np.sqrt(np.mean(error ** 2)))
    variance = float(error @ error) / (len(rows) - count)
    covariance_scaled = (right.T / singular ** 2) @ right
    deviation = np.sqrt(variance * np.diag(covariance_scaled)) / scale
    return parameters, residual, deviation, singular


def _bounded(names, shown=12):
    """A list of parameter names for an error message, at most ``shown`` of them."""
    if len(names) <= shown:
        return names
    return f"{names[:shown]} and {len(names) - shown} more"


def _estimate(link, parameters, residual, deviation, singular, samples):
    mass = float(parameters[0])
    first_moment = parameters[1:4]
    ixx, ixy, ixz, iyy, iyz, izz = parameters[4:]
    about_origin = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
    if mass != 0.0:
        com = first_moment / mass
        c = skew(com)
        inertia = about_origin + mass * (c @ c)     # parallel axis, back to the COM
    else:
        com, inertia = np.zeros(3), about_origin
    return PayloadEstimate(link, mass, com, inertia, parameters, residual, deviation, singular,
                           samples, payload_problems(mass, inertia))


# --------------------------------------------------------------------- the whole robot
# base_parameters: random states stacked (the regressor's structure is the same at
# almost every state), and a column counts as independent of the columns before it when
# what the earlier ones leave of it (normalized) is above BASE_TOLERANCE.  A column this
# much smaller than the largest is round-off of a zero one (a parameter no joint feels):
# columns scale with the motion and the geometry, never with the inertias.
BASE_SAMPLES = 40
MAX_BASE_SAMPLES = 1000
# The most values a stacked regressor may hold (128 MiB of doubles), checked before it
# is made: whole-robot regressors grow with samples x joints x parameters.
MAX_REGRESSOR_VALUES = 2 ** 24
BASE_TOLERANCE = 1e-7
ZERO_COLUMN = 1e-10


@dataclass(frozen=True)
class BaseParameters:
    """The identifiable combinations of a robot's inertial parameters: see
    :meth:`RobotModel.base_parameters`.

    ``independent`` are the columns of the full regressor kept (ascending),
    ``dependent`` the others; ``mapping`` (len(independent) x full) gives the base
    parameters ``beta = mapping @ pi`` of full parameters ``pi``, with
    ``mapping[:, independent]`` the identity, so that ``Y @ pi == Y[:, independent] @
    beta`` at every state.  ``names`` names each base parameter after its independent
    column (``"link.m*cx"``): that parameter plus the dependent ones ``mapping`` adds.
    ``values`` are the model's own base parameters when it was computed.
    """
    independent: np.ndarray
    dependent: np.ndarray
    mapping: np.ndarray
    names: tuple
    values: np.ndarray
    samples: int
    seed: int

    @property
    def count(self):
        return len(self.independent)

    def regressor(self, full_regressor):
        """The base regressor: the independent columns of a full one (..., dof, full)."""
        return full_regressor[..., self.independent]


def fits(base, parameters):
    """Whether ``base`` is a :class:`BaseParameters` of a robot with that many
    parameters: its columns in range, its mapping of the size they give."""
    if not isinstance(base, BaseParameters):
        return False
    columns = np.concatenate((base.independent, base.dependent))
    return (base.mapping.shape == (len(base.independent), parameters)
            and columns.dtype.kind == "i" and len(columns) == parameters
            and np.array_equal(np.sort(columns), np.arange(parameters)))


def check_regressor_size(samples, dof, parameters):
    """Refuses a stacked regressor beyond MAX_REGRESSOR_VALUES before it is made."""
    values = samples * dof * parameters
    if values > MAX_REGRESSOR_VALUES:
        raise InvalidInputError(
            f"{samples} samples of {dof} joints and {parameters} parameters make a regressor "
            f"of {values} values, more than {MAX_REGRESSOR_VALUES}: use fewer samples")


def base_parameters(stacked, names, values, samples, seed):
    """:class:`BaseParameters` of a full regressor stacked over random states, rows x
    full: columns taken in order, each kept when it is not zero (ZERO_COLUMN) nor (to
    BASE_TOLERANCE, column normalized) a combination of those kept before it."""
    scale = np.linalg.norm(stacked, axis=0)
    basis = np.zeros((stacked.shape[0], 0))
    independent = []
    for column in np.flatnonzero(scale > ZERO_COLUMN * scale.max(initial=0.0)):
        remainder = stacked[:, column] / scale[column]
        for _ in range(2):     # Gram-Schmidt twice: orthogonal to round-off
            remainder = remainder - basis @ (basis.T @ remainder)
        size = np.linalg.norm(remainder)
        if size > BASE_TOLERANCE:
            independent.append(column)
            basis = np.column_stack((basis, remainder / size))
    independent = np.array(independent, dtype=int)
    dependent = np.setdiff1d(np.arange(stacked.shape[1]), independent)
    kept = stacked[:, independent]
    combination = np.linalg.lstsq(kept, stacked[:, dependent], rcond=None)[0]
    mapping = np.zeros((len(independent), stacked.shape[1]))
    mapping[:, independent] = np.eye(len(independent))
    mapping[:, dependent] = combination
    return BaseParameters(independent, dependent, mapping,
                          tuple(names[j] for j in independent), mapping @ values, samples, seed)


@dataclass
class InertialEstimate:
    """The robot's base parameters fitted to a motion: see
    :meth:`RobotModel.identify_inertial_parameters`."""
    base: BaseParameters
    values: np.ndarray               # the fitted base parameters (base.names)
    residual: float                  # RMS of the torques the fit leaves unexplained, N m
    standard_deviation: np.ndarray   # per base parameter
    singular_values: np.ndarray      # of the column-normalized base regressor, largest first
    samples: int

    @property
    def condition(self):
        """Condition number of the column-normalized base regressor (the solve refuses
        at 1 / EXCITATION_RCOND)."""
        return float(self.singular_values[0] / self.singular_values[-1])


def solve_inertial(base, regressor, torques):
    """Fit the base parameters: ``regressor`` (N, dof, base.count) the base regressor."""
    values, residual, deviation, singular = least_squares(
        regressor, torques, base.names,
        Subject("the base parameters", "the robot's inertial parameters",
                "the robot's base inertial parameters"))
    return InertialEstimate(base, values, residual, deviation, singular, len(regressor))
