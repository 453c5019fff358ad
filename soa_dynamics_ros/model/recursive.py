"""The O(N) recursions behind the model layer's constrained queries.

Each function has the signature of its dense twin in :mod:`.dense` and takes
an :class:`~.evaluation.Evaluation`; :func:`.constrained.dynamics_for` picks
between the two.  Hinges are independent here: the coordinate map must not
couple them (no mimic joints), though it may lock some (a joint subset).
"""
import numpy as np

from ..algorithms import articulated_body
from ..algorithms.forward_dynamics import forward_dynamics as articulated_body_dynamics
from ..algorithms.inverse_dynamics import force_gather
from ..algorithms.mixed_dynamics import mixed_dynamics as mixed_recursion
from ..algorithms.task_space import compliance_gather, correction_scatter, frame_wrench_map


def _constraint_columns(evaluation, frames, blocks):
    """(nb, 6, m) unit wrenches of the blocks (6 x m_i, root axes about each frame origin)."""
    rotations, _ = evaluation.placements
    total = sum(block.shape[1] for block in blocks)
    columns = np.zeros((evaluation.tree.nb, 6, total))
    start = 0
    for frame, block in zip(frames, blocks):
        wrench_map = frame_wrench_map(rotations[frame.body], frame.translation)
        columns[frame.body][:, start:start + block.shape[1]] += wrench_map @ block
        start += block.shape[1]
    return columns


def forward_dynamics(evaluation):
    """Accelerations of the selected joints by the articulated-body recursion."""
    coordinates = evaluation.selection.coordinates
    qdd = articulated_body_dynamics(evaluation.tree, evaluation.q_hinge, evaluation.qd_hinge,
                                    coordinates.hinge_rates(evaluation.tau),
                                    evaluation.root_acceleration, evaluation.body_forces,
                                    evaluation.selection.free)
    return coordinates.joint_forces(qdd)


def task_space_compliance(evaluation, frames, blocks):
    """``J M^-1 J^T`` of the constraint blocks by the compliance recursion."""
    tree = evaluation.tree
    bodies = articulated_body.gather(tree, evaluation.q_hinge, evaluation.qd_hinge,
                                     np.zeros(tree.nb), free=evaluation.selection.free)
    compliance, _ = compliance_gather(tree, bodies,
                                      _constraint_columns(evaluation, frames, blocks))
    return compliance, "O(N) articulated-body compliance recursion"


def hybrid_dynamics(evaluation, frames, blocks, beta, solve_constraints, drift_of):
    """Popov-Vereshchagin sweeps: see :func:`.constrained.hybrid_dynamics`."""
    tree, coordinates = evaluation.tree, evaluation.selection.coordinates
    bodies = articulated_body.gather(tree, evaluation.q_hinge, evaluation.qd_hinge,
                                     coordinates.hinge_rates(evaluation.tau),
                                     evaluation.body_forces, evaluation.selection.free)
    qdd_free_hinge, free_accelerations = articulated_body.scatter(tree, bodies,
                                                                  evaluation.root_acceleration)
    columns = _constraint_columns(evaluation, frames, blocks)
    compliance, carried = compliance_gather(tree, bodies, columns)
    nu, rank, dropped = solve_constraints(compliance,
                                          beta - drift_of(bodies.velocity, free_accelerations))
    delta_qdd, delta_accelerations = correction_scatter(tree, bodies, carried, nu)
    qdd = coordinates.joint_forces(qdd_free_hinge + delta_qdd)
    constraint_torques = coordinates.joint_forces(force_gather(tree, bodies.transforms,
                                                               columns @ nu))
    return (qdd, constraint_torques, nu, rank, dropped, bodies.velocity,
            free_accelerations + delta_accelerations, "O(N) Popov-Vereshchagin sweeps on the tree")


def mixed_dynamics(evaluation, qdd, prescribed):
    """``(qdd_all, tau_all)`` by the mixed articulated-body recursion."""
    coordinates = evaluation.selection.coordinates
    hinge_qdd, hinge_tau = mixed_recursion(
        evaluation.tree, evaluation.q_hinge, evaluation.qd_hinge, coordinates.hinge_rates(qdd),
        coordinates.hinge_rates(evaluation.tau), coordinates.hinges_following(prescribed),
        evaluation.root_acceleration, evaluation.body_forces)
    return coordinates.joint_forces(hinge_qdd), coordinates.joint_forces(hinge_tau)
