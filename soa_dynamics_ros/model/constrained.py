"""Task-space inertia, constrained hybrid dynamics and mixed dynamics on a RobotModel.

These sit between :class:`~soa_dynamics_ros.model.RobotModel` and the
recursions: they validate the richer arguments (frames, constraint sets, joint
subsets), then run the O(N) recursions of :mod:`.recursive`, or where mimic
joints couple hinges across the tree their dense twins in :mod:`.dense`;
:func:`dynamics_for` is the one place that decides (each result's ``method``
says which ran).
Every function takes the model (for its public tree view, gravity and joint
names) and a :class:`~.evaluation.JointSelection`; the caller holds the
model's parameters lock so that one answer sees one payload and gravity state
(:func:`hybrid_dynamics` takes it itself, around its numpy path only).
"""
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from . import dense, recursive
from ..algorithms.task_space import DEFAULT_RCOND, classical_acceleration
from ..errors import InvalidInputError, SingularDynamicsError
from ..validation import MAX_MAGNITUDE, as_float_array, as_vector
from .evaluation import Evaluation, select_joints

TASK_SPACE_PARTS = {"full": slice(0, 6), "translational": slice(0, 3), "rotational": slice(3, 6)}
COMPILED_COMPLIANCE = "O(N) articulated-body compliance recursion, compiled (generic module)"
COMPILED_DENSE_COMPLIANCE = ("dense J M^-1 J^T by Cholesky, compiled (generic module; mimic "
                             "joints couple hinges across the tree)")
COMPILED_HYBRID = "O(N) Popov-Vereshchagin sweeps on the tree, compiled (generic module)"
COMPILED_DENSE_HYBRID = ("dense Gauss least-constraint by Cholesky, compiled (generic module; "
                         "mimic joints couple hinges across the tree)")


@dataclass
class TaskSpaceInertia:
    """Operational-space inertia of one or several frames (blocks in ``frames`` order)."""
    inertia: np.ndarray            # Lambda
    inertia_inverse: np.ndarray    # Lambda^-1 = J M^-1 J^T
    condition_number: float        # of Lambda^-1 (inf when singular)
    rank: int                      # independent directions of Lambda^-1
    damping: float                 # added to Lambda^-1 before inverting (0 = exact)
    frames: list
    part: str
    method: str


@dataclass
class HybridDynamics:
    """Result of :meth:`RobotModel.hybrid_dynamics` (vectors in ``joint_names`` order)."""
    qdd: np.ndarray
    constraint_torques: np.ndarray      # J^T alpha nu
    nu: np.ndarray                      # constraint force magnitudes, stacked per constraint
    frame_accelerations: dict           # frame -> classical [dv/dt; dw/dt], root axes
    rank: int                           # independent constraint directions used
    dropped_directions: np.ndarray      # m x (m - rank): combinations of constraints dropped
    joint_names: list
    method: str
    constraint_slices: list = field(default_factory=list)  # rows of nu per constraint


class MixedDynamics(NamedTuple):
    """Result of :meth:`RobotModel.mixed_dynamics` (vectors in ``joint_names`` order).

    A named pair: it also unpacks and indexes as ``(qdd, tau)``, the form it had as a
    tuple, and costs a warm compiled call no Python-level constructor.
    """
    qdd: np.ndarray                     # every joint's acceleration, prescribed ones as given
    tau: np.ndarray                     # every joint's torque, free ones as given


def _check_part(part):
    if part not in TASK_SPACE_PARTS:
        raise InvalidInputError(f"part must be one of {sorted(TASK_SPACE_PARTS)}, not {part!r}")
    return TASK_SPACE_PARTS[part]


def _frames_of(model, frame):
    names = [frame] if isinstance(frame, str) else list(frame) if frame is not None else []
    if not names:
        raise InvalidInputError("at least one frame is needed")
    return names, [model.tree.frame(name) for name in names]


def _symmetric_inverse(matrix, damping):
    values, vectors = np.linalg.eigh(matrix)
    return (vectors / (values + damping)) @ vectors.T


def frame_accelerations_of(evaluation, frames, velocity, acceleration):
    """Classical accelerations of the frames from body velocities and accelerations."""
    rotations, _ = evaluation.placements
    return [classical_acceleration(rotations[f.body], f.translation, velocity[f.body],
                                   acceleration[f.body], evaluation.gravity) for f in frames]


def _evaluation(model, selection, q, qd=None, tau=None, wrenches=None):
    return Evaluation(model.tree, model.gravity, selection, q, qd, tau, wrenches)


def dynamics_for(selection):
    """:mod:`.recursive` (O(N)), or :mod:`.dense` where mimic joints couple hinges.

    The one place that makes this choice.
    """
    return dense if selection.coordinates.couples_hinges else recursive


# ---------------------------------------------------------------------------- the queries
def selected_forward_dynamics(model, selection, q, qd, tau, wrenches=None):
    """Accelerations of the selected joints (the others locked)."""
    evaluation = _evaluation(model, selection, q, qd, tau, wrenches)
    return dynamics_for(selection).forward_dynamics(evaluation)


def task_space_inertia(model, selection, q, frame, part="full", damping=None, return_info=False,
                       rcond=DEFAULT_RCOND, kernels=(None, None)):
    """``kernels``: ``(compiled tree, p)`` of the generic module for ``selection``
    (:meth:`~soa_dynamics_ros.kernels.generic.CompiledTree.task_space_inertia` then
    answers, unless it leaves the rank to this reference), or ``(None, None)``."""
    rows = _check_part(part)
    names, frames = _frames_of(model, frame)
    if damping is not None and not (np.isfinite(damping) and damping >= 0):
        raise InvalidInputError(f"damping must be a finite non-negative number, not {damping!r}")
    compiled, params = kernels
    answer = None if compiled is None or rcond != DEFAULT_RCOND else (
        compiled.task_space_inertia(names, rows, q, float(damping or 0.0), return_info, params))
    if answer is not None:
        inertia, compliance, condition, rank = answer
        method = COMPILED_DENSE_COMPLIANCE if compiled.couples_hinges else COMPILED_COMPLIANCE
    else:
        evaluation = _evaluation(model, selection, q)
        blocks = [np.eye(6)[:, rows] for _ in frames]
        compliance, method = dynamics_for(selection).task_space_compliance(evaluation, frames,
                                                                           blocks)
        compliance = 0.5 * (compliance + compliance.T)
        values = np.linalg.eigvalsh(compliance)
        strongest = max(values[-1], 0.0)
        rank = int((values > rcond * strongest).sum()) if strongest > 0 else 0
        condition = values[-1] / values[0] if rank == len(values) else np.inf
        if rank < len(values) and not damping:
            raise SingularDynamicsError(
                f"the {part} task-space inertia of {', '.join(names)} is singular here: only "
                f"{rank} of {len(values)} directions can be moved by the joints; ask for "
                "part='translational' or part='rotational', or pass damping=... for a damped "
                "result")
        inertia = _symmetric_inverse(compliance, damping or 0.0)
    if not return_info:
        return inertia
    return TaskSpaceInertia(inertia, compliance, float(condition), rank, float(damping or 0.0),
                            names, part, method)


def _parse_constraints(model, constraints):
    if not isinstance(constraints, (list, tuple)):
        raise InvalidInputError("constraints must be a list of (frame, alpha, beta)")
    frames, blocks, targets, names = [], [], [], []
    for index, constraint in enumerate(constraints):
        try:
            name, alpha, beta = constraint
        except (TypeError, ValueError):
            raise InvalidInputError(f"constraint {index} must be (frame, alpha, beta)") from None
        frame = model.tree.frame(name)
        alpha = as_float_array(f"constraint {index} ({name}) alpha", alpha, "6 x m array")
        if alpha.ndim == 1 and alpha.shape == (6,):
            alpha = alpha[:, None]
        if alpha.ndim != 2 or alpha.shape[0] != 6 or not 1 <= alpha.shape[1] <= 6:
            raise InvalidInputError(f"constraint {index} ({name}): alpha must be 6 x m with "
                                    f"1 <= m <= 6, got shape {alpha.shape}")
        if not np.all(np.isfinite(alpha)):
            raise InvalidInputError(f"constraint {index} ({name}): alpha holds NaN or inf")
        if np.any(np.abs(alpha) > MAX_MAGNITUDE):
            raise InvalidInputError(f"constraint {index} ({name}): alpha holds values beyond "
                                    f"{MAX_MAGNITUDE:g}")
        beta = as_vector(f"constraint {index} ({name}) beta", beta, alpha.shape[1])
        frames.append(frame)
        blocks.append(alpha)
        targets.append(beta)
        names.append(name)
    if not frames:
        raise InvalidInputError("hybrid dynamics needs at least one constraint")
    return names, frames, blocks, targets


def _constraint_slices(blocks):
    """The rows of nu of each constraint block."""
    slices, start = [], 0
    for block in blocks:
        slices.append(slice(start, start + block.shape[1]))
        start += block.shape[1]
    return slices


def _truncated_solve(matrix, rhs, rcond):
    """Least-squares solution through the directions of ``matrix`` that are not singular."""
    values, vectors = np.linalg.eigh(0.5 * (matrix + matrix.T))
    strongest = max(values[-1], 0.0) if values.size else 0.0
    keep = values > rcond * strongest if strongest > 0 else np.zeros(values.size, dtype=bool)
    kept = vectors[:, keep]
    solution = kept @ ((kept.T @ rhs) / values[keep])
    return solution, int(keep.sum()), vectors[:, ~keep]


def hybrid_dynamics(model, selection, q, qd, constraints, tau=None, wrenches=None,
                    rcond=DEFAULT_RCOND, kernels=(None, None)):
    """``kernels``: ``(compiled tree, p)`` of the generic module for ``selection``, which
    answers (dropping dependent constraint directions as :func:`_truncated_solve` does)
    unless the rank is within round-off of its threshold (then the recursions decide
    it), or ``(None, None)``.

    Unlike the other queries here it takes the parameters lock itself, for the
    recursions only: the compiled code reads the one ``p`` it is given (a payload or
    gravity change packs a new one, never edits it), and a warm call is short enough
    for the lock to be a sizeable share of it."""
    compiled, params = kernels
    parsed = None
    if compiled is not None and rcond == DEFAULT_RCOND:
        # The compiled code reads constraints of float64 arrays as they are and checks
        # their names and values; what it declines as bad input is parsed (and named
        # when wrong), then tried once more as the arrays the parser made.
        answer = compiled.hybrid_dynamics(constraints, q, qd, tau, wrenches, params)
        if type(answer) is not tuple:
            parsed = _parse_constraints(model, constraints)
            if answer == compiled.BAD_INPUT:
                # the frames' own names: the compiled code takes no str subclass
                _, frames, blocks, targets = parsed
                answer = compiled.hybrid_dynamics(
                    [(frame.name, *parts) for frame, *parts in zip(frames, blocks, targets)],
                    q, qd, tau, wrenches, params)
        if type(answer) is tuple:
            qdd, constraint_torques, nu, frame_accelerations, rank, dropped, slices = answer
            return HybridDynamics(qdd, constraint_torques, nu, frame_accelerations, rank,
                                  dropped, list(selection.names),
                                  COMPILED_DENSE_HYBRID if compiled.couples_hinges
                                  else COMPILED_HYBRID, slices)
    with model.parameters_lock:
        return _reference_hybrid_dynamics(model, selection, q, qd,
                                          parsed or _parse_constraints(model, constraints),
                                          tau, wrenches, rcond)


def _reference_hybrid_dynamics(model, selection, q, qd, parsed, tau, wrenches, rcond):
    """The recursions' answer to the parsed constraints; the caller holds the parameters
    lock."""
    names, frames, blocks, targets = parsed
    beta = np.concatenate(targets)
    slices = _constraint_slices(blocks)
    evaluation = _evaluation(model, selection, q, qd, tau, wrenches)

    def drift_of(velocity, accelerations):
        """alpha^T a of every constraint at these body velocities and accelerations."""
        return np.concatenate([block.T @ a for block, a in zip(
            blocks, frame_accelerations_of(evaluation, frames, velocity, accelerations))])

    def solve_constraints(compliance, rhs):
        return _truncated_solve(compliance, rhs, rcond)

    (qdd, constraint_torques, nu, rank, dropped, velocity, accelerations,
     method) = dynamics_for(selection).hybrid_dynamics(evaluation, frames, blocks, beta,
                                                       solve_constraints, drift_of)
    frame_accelerations = dict(zip(names, frame_accelerations_of(evaluation, frames, velocity,
                                                                 accelerations)))
    return HybridDynamics(qdd, constraint_torques, nu, frame_accelerations, rank, dropped,
                          list(selection.names), method, slices)


def prescribed_mask(model, prescribed):
    """Per joint of ``model``: is it in ``prescribed`` (a joint name or a list of them)?"""
    if isinstance(prescribed, str):
        prescribed = [prescribed]
    prescribed_columns = [model.joint_index(name) for name in prescribed]
    mask = np.zeros(model.tree.dof, dtype=bool)
    mask[prescribed_columns] = True
    return mask


def mixed_dynamics(model, q, qd, qdd, tau, prescribed, wrenches=None):
    mask = prescribed_mask(model, prescribed)
    selection = select_joints(model.tree)
    evaluation = _evaluation(model, selection, q, qd, tau, wrenches)
    qdd = as_vector("qdd", qdd, model.tree.dof)
    return MixedDynamics(*dynamics_for(selection).mixed_dynamics(evaluation, qdd, mask))
