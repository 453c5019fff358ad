"""Task-space inertia, constrained hybrid dynamics and mixed dynamics on a RobotModel.

These sit between :class:`~soa_dynamics_ros.model.RobotModel` and the
recursions: they validate the richer arguments (frames, constraint sets, joint
subsets), pick the O(N) recursion where the tree structure allows it, and fall
back to dense joint-space algebra where mimic joints couple hinges across the
tree (stated in each result's ``method``).

A *joint selection* is the set of joints a query moves; the others are locked
at their current position with zero rate (DARTS' subgraph queries).
"""
from dataclasses import dataclass, field

import numpy as np

from ..algorithms import articulated_body
from ..algorithms.inverse_dynamics import force_gather, inverse_dynamics
from ..algorithms.mass_matrix import mass_matrix
from ..algorithms.mixed_dynamics import mixed_dynamics as mixed_recursion
from ..algorithms.kinematics import (body_motion, body_placements, hinge_jacobian,
                                    parent_to_child_transforms)
from ..algorithms.task_space import (classical_acceleration, compliance_gather, correction_scatter,
                                    frame_wrench_map)
from ..errors import InvalidInputError, SingularDynamicsError
from ..validation import MAX_MAGNITUDE, as_float_array, as_vector

TASK_SPACE_PARTS = {"full": slice(0, 6), "translational": slice(0, 3), "rotational": slice(3, 6)}
# Directions of a compliance matrix weaker than this fraction of the strongest
# are treated as absent (singular configuration or redundant constraint).
DEFAULT_RCOND = 1e-10


@dataclass(frozen=True)
class JointSelection:
    names: tuple            # the selected joints, in model order
    columns: np.ndarray     # their indices in RobotModel.joint_names
    hinge_map: np.ndarray   # nb x k: hinge rates from the selected joints' rates (G restricted)
    free: np.ndarray        # per body: is its hinge moved by a selected joint?


def select_joints(model, names=None):
    tree = model.tree
    if names is None:
        columns = np.arange(tree.dof)
    else:
        if isinstance(names, str) or not all(isinstance(name, str) for name in names):
            raise InvalidInputError("a joint subset must be a list of joint names")
        if len(set(names)) != len(names):
            raise InvalidInputError(f"joint subset {list(names)} repeats a name")
        columns = np.array(sorted(model.joint_index(name) for name in names), dtype=int)
    hinge_map = tree.hinge_from_joint[:, columns]
    free = np.abs(hinge_map).sum(axis=1) > 0
    return JointSelection(tuple(tree.joint_names[c] for c in columns), columns, hinge_map, free)


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


def _check_part(part):
    if part not in TASK_SPACE_PARTS:
        raise InvalidInputError(f"part must be one of {sorted(TASK_SPACE_PARTS)}, not {part!r}")
    return TASK_SPACE_PARTS[part]


def _frames_of(model, frame):
    names = [frame] if isinstance(frame, str) else list(frame) if frame is not None else []
    if not names:
        raise InvalidInputError("at least one frame is needed")
    return names, [model._frame(name) for name in names]


def _symmetric_inverse(matrix, damping):
    values, vectors = np.linalg.eigh(matrix)
    return (vectors / (values + damping)) @ vectors.T


class _State:
    """Per-call hinge-space quantities shared by the O(N) and dense paths."""

    def __init__(self, model, selection, q, qd=None, tau=None, wrenches=None):
        tree = model.tree
        k = len(selection.names)
        self.q_hinge = model._hinge_positions(q)
        self.qd = np.zeros(k) if qd is None else as_vector("qd", qd, k)
        self.tau = np.zeros(k) if tau is None else as_vector("tau", tau, k)
        self.qd_hinge = selection.hinge_map @ self.qd
        self.placements = body_placements(tree, self.q_hinge)
        self.body_forces = model._body_forces(self.q_hinge, wrenches, self.placements)


def _constraint_columns(model, state, frames, blocks):
    """(nb, 6, m) unit wrenches of the blocks (6 x m_i, root axes about each frame origin)."""
    rotations, _ = state.placements
    total = sum(block.shape[1] for block in blocks)
    columns = np.zeros((model.tree.nb, 6, total))
    start = 0
    for frame, block in zip(frames, blocks):
        wrench_map = frame_wrench_map(rotations[frame.body], frame.translation)
        columns[frame.body][:, start:start + block.shape[1]] += wrench_map @ block
        start += block.shape[1]
    return columns


def _dense_mass_and_bias(model, selection, state):
    """M and h (with wrenches) restricted to the selection: the fallback for mimic joints."""
    g = selection.hinge_map
    mass = g.T @ mass_matrix(model.tree, state.q_hinge) @ g
    bias = g.T @ inverse_dynamics(model.tree, state.q_hinge, state.qd_hinge,
                                  np.zeros(model.tree.nb), model._root_acceleration(),
                                  state.body_forces)
    return mass, bias


def dense_forward_dynamics(model, selection, q, qd, tau, wrenches=None):
    """Accelerations of the selected joints from ``M qdd = tau - h`` by Cholesky.

    The path for robots with mimic joints, whose coupling the articulated-body
    recursion cannot express.
    """
    state = _State(model, selection, q, qd, tau, wrenches)
    mass, bias = _dense_mass_and_bias(model, selection, state)
    return _solve_mass(mass, state.tau - bias)


def _solve_mass(mass, rhs):
    """``mass^-1 rhs`` by Cholesky; :class:`SingularDynamicsError` when ``mass`` is not definite."""
    try:
        factor = np.linalg.cholesky(mass)
    except np.linalg.LinAlgError:
        raise SingularDynamicsError("the mass matrix is singular (a massless body on a "
                                    "moving joint has no unique dynamics)") from None
    return np.linalg.solve(factor.T, np.linalg.solve(factor, rhs))


def _dense_jacobian(model, selection, state, frames, blocks):
    rows = [block.T @ hinge_jacobian(model.tree, state.placements, frame) @ selection.hinge_map
            for frame, block in zip(frames, blocks)]
    return np.vstack(rows)


def _drift_accelerations(model, state, frames, velocity, acceleration):
    rotations, _ = state.placements
    return [classical_acceleration(rotations[f.body], f.translation, velocity[f.body],
                                   acceleration[f.body], model.gravity) for f in frames]


def task_space_inertia(model, selection, q, frame, part="full", damping=None, return_info=False,
                       rcond=DEFAULT_RCOND):
    rows = _check_part(part)
    names, frames = _frames_of(model, frame)
    if damping is not None and not (np.isfinite(damping) and damping >= 0):
        raise InvalidInputError(f"damping must be a finite non-negative number, not {damping!r}")
    state = _State(model, selection, q)
    blocks = [np.eye(6)[:, rows] for _ in frames]
    if model.tree.has_mimic:
        jacobian = _dense_jacobian(model, selection, state, frames, blocks)
        mass, _ = _dense_mass_and_bias(model, selection, state)
        compliance = jacobian @ _solve_mass(mass, jacobian.T)
        method = "dense J M^-1 J^T (mimic joints couple hinges across the tree)"
    else:
        bodies = articulated_body.gather(model.tree, state.q_hinge, state.qd_hinge,
                                         np.zeros(model.tree.nb), free=selection.free)
        compliance, _ = compliance_gather(model.tree, bodies,
                                          _constraint_columns(model, state, frames, blocks))
        method = "O(N) articulated-body compliance recursion"
    compliance = 0.5 * (compliance + compliance.T)
    values = np.linalg.eigvalsh(compliance)
    strongest = max(values[-1], 0.0)
    rank = int((values > rcond * strongest).sum()) if strongest > 0 else 0
    condition = values[-1] / values[0] if rank == len(values) else np.inf
    if rank < len(values) and not damping:
        raise SingularDynamicsError(
            f"the {part} task-space inertia of {', '.join(names)} is singular here: only {rank} "
            f"of {len(values)} directions can be moved by the joints; ask for part='translational' "
            "or part='rotational', or pass damping=... for a damped result")
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
        frame = model._frame(name)
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
    return names, frames, blocks, np.concatenate(targets)


def _truncated_solve(matrix, rhs, rcond):
    """Least-squares solution through the directions of ``matrix`` that are not singular."""
    values, vectors = np.linalg.eigh(0.5 * (matrix + matrix.T))
    strongest = max(values[-1], 0.0) if values.size else 0.0
    keep = values > rcond * strongest if strongest > 0 else np.zeros(values.size, dtype=bool)
    kept = vectors[:, keep]
    solution = kept @ ((kept.T @ rhs) / values[keep])
    return solution, int(keep.sum()), vectors[:, ~keep]


def hybrid_dynamics(model, selection, q, qd, constraints, tau=None, wrenches=None,
                    rcond=DEFAULT_RCOND):
    names, frames, blocks, beta = _parse_constraints(model, constraints)
    state = _State(model, selection, q, qd, tau, wrenches)
    tree = model.tree
    slices, start = [], 0
    for block in blocks:
        slices.append(slice(start, start + block.shape[1]))
        start += block.shape[1]

    if tree.has_mimic:
        mass, bias = _dense_mass_and_bias(model, selection, state)
        constraint_jacobian = _dense_jacobian(model, selection, state, frames, blocks)
        # Classical drift of each frame at qdd = 0 (the J-dot qd term).
        transforms = parent_to_child_transforms(tree, state.q_hinge)
        velocity, drift_body = body_motion(tree, transforms, state.qd_hinge, np.zeros(tree.nb),
                                           model._root_acceleration())
        drift = np.concatenate([block.T @ a for block, a in zip(
            blocks, _drift_accelerations(model, state, frames, velocity, drift_body))])
        qdd_free = _solve_mass(mass, state.tau - bias)
        inverse_mass_at = _solve_mass(mass, constraint_jacobian.T)
        compliance = constraint_jacobian @ inverse_mass_at
        nu, rank, dropped = _truncated_solve(compliance, beta - drift - constraint_jacobian @ qdd_free,
                                             rcond)
        qdd = qdd_free + inverse_mass_at @ nu
        constraint_torques = constraint_jacobian.T @ nu
        _, accelerations = body_motion(tree, transforms, state.qd_hinge, selection.hinge_map @ qdd,
                                       model._root_acceleration())
        method = "dense Gauss least-constraint (mimic joints couple hinges across the tree)"
    else:
        hinge_tau = selection.hinge_map @ state.tau
        bodies = articulated_body.gather(tree, state.q_hinge, state.qd_hinge, hinge_tau,
                                         state.body_forces, selection.free)
        qdd_free_hinge, free_accelerations = articulated_body.scatter(
            tree, bodies, model._root_acceleration())
        columns = _constraint_columns(model, state, frames, blocks)
        compliance, carried = compliance_gather(tree, bodies, columns)
        free_frame = np.concatenate([block.T @ a for block, a in zip(
            blocks, _drift_accelerations(model, state, frames, bodies.velocity, free_accelerations))])
        nu, rank, dropped = _truncated_solve(compliance, beta - free_frame, rcond)
        delta_qdd, delta_accelerations = correction_scatter(tree, bodies, carried, nu)
        accelerations = free_accelerations + delta_accelerations
        qdd = selection.hinge_map.T @ (qdd_free_hinge + delta_qdd)
        constraint_torques = selection.hinge_map.T @ force_gather(
            tree, bodies.transforms, columns @ nu)
        velocity = bodies.velocity
        method = "O(N) Popov-Vereshchagin sweeps on the tree"

    frame_accelerations = dict(zip(names, _drift_accelerations(model, state, frames, velocity,
                                                               accelerations)))
    return HybridDynamics(qdd, constraint_torques, nu, frame_accelerations, rank, dropped,
                          list(selection.names), method, slices)


def mixed_dynamics(model, q, qd, qdd, tau, prescribed, wrenches=None):
    if isinstance(prescribed, str):
        prescribed = [prescribed]
    prescribed_columns = [model.joint_index(name) for name in prescribed]
    mask = np.zeros(model.tree.dof, dtype=bool)
    mask[prescribed_columns] = True
    selection = select_joints(model)
    state = _State(model, selection, q, qd, tau, wrenches)
    qdd = as_vector("qdd", qdd, model.tree.dof)
    tree = model.tree
    if tree.has_mimic:
        mass, bias = _dense_mass_and_bias(model, selection, state)
        free = ~mask
        qdd_all, tau_all = qdd.copy(), state.tau.copy()
        qdd_all[free] = _solve_mass(mass[np.ix_(free, free)],
                                    state.tau[free] - bias[free]
                                    - mass[np.ix_(free, mask)] @ qdd[mask])
        tau_all[mask] = mass[mask] @ qdd_all + bias[mask]
        return qdd_all, tau_all
    g = selection.hinge_map
    hinge_prescribed = (np.abs(g[:, mask]).sum(axis=1) > 0)
    hinge_qdd, hinge_tau = mixed_recursion(tree, state.q_hinge, state.qd_hinge, g @ qdd, g @ state.tau,
                                           hinge_prescribed, model._root_acceleration(),
                                           state.body_forces)
    return g.T @ hinge_qdd, g.T @ hinge_tau
