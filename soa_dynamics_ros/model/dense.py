"""The dense joint-space fallbacks: every algorithm through M, h and J.

The O(N) recursions give each hinge its own coordinate.  When mimic joints
couple hinges (:attr:`~soa_dynamics_ros.multibody.coordinates.CoordinateMap.couples_hinges`)
the model layer answers here instead, from the folded mass matrix
``G^T M G``, bias ``G^T h`` and Jacobians ``J G`` (O(N^2) memory, O(N^3)
time).  Each function has the signature of its O(N) twin in
:mod:`.constrained`, which picks between the two in one place.
"""
import numpy as np

from ..algorithms.inverse_dynamics import inverse_dynamics
from ..algorithms.kinematics import body_motion, hinge_jacobian, parent_to_child_transforms
from ..algorithms.mass_matrix import mass_matrix
from ..errors import SingularDynamicsError


def mass_and_bias(evaluation):
    """M and h (wrenches included) of the selected joints."""
    tree, coordinates = evaluation.tree, evaluation.selection.coordinates
    mass = coordinates.joint_mass_matrix(mass_matrix(tree, evaluation.q_hinge))
    bias = coordinates.joint_forces(inverse_dynamics(
        tree, evaluation.q_hinge, evaluation.qd_hinge, np.zeros(tree.nb),
        evaluation.root_acceleration, evaluation.body_forces))
    return mass, bias


def solve_mass(mass, rhs):
    """``mass^-1 rhs`` by Cholesky; :class:`SingularDynamicsError` when ``mass`` is not definite."""
    try:
        factor = np.linalg.cholesky(mass)
    except np.linalg.LinAlgError:
        raise SingularDynamicsError("the mass matrix is singular (a massless body on a "
                                    "moving joint has no unique dynamics)") from None
    return np.linalg.solve(factor.T, np.linalg.solve(factor, rhs))


def constraint_jacobian(evaluation, frames, blocks):
    """Rows ``alpha^T J`` of every constraint block, against the selected joints."""
    coordinates = evaluation.selection.coordinates
    return np.vstack([block.T @ coordinates.joint_columns(
        hinge_jacobian(evaluation.tree, evaluation.placements, frame))
        for frame, block in zip(frames, blocks)])


def forward_dynamics(evaluation):
    """Accelerations of the selected joints from ``M qdd = tau - h`` by Cholesky."""
    mass, bias = mass_and_bias(evaluation)
    return solve_mass(mass, evaluation.tau - bias)


def task_space_compliance(evaluation, frames, blocks):
    """``J M^-1 J^T`` of the constraint blocks."""
    jacobian = constraint_jacobian(evaluation, frames, blocks)
    mass, _ = mass_and_bias(evaluation)
    return (jacobian @ solve_mass(mass, jacobian.T),
            "dense J M^-1 J^T (mimic joints couple hinges across the tree)")


def hybrid_dynamics(evaluation, frames, blocks, beta, solve_constraints, drift_of):
    """Gauss' least constraint with M: see :func:`.constrained.hybrid_dynamics`."""
    tree, coordinates = evaluation.tree, evaluation.selection.coordinates
    mass, bias = mass_and_bias(evaluation)
    jacobian = constraint_jacobian(evaluation, frames, blocks)
    # Classical drift of each frame at qdd = 0 (the J-dot qd term).
    transforms = parent_to_child_transforms(tree, evaluation.q_hinge)
    velocity, drift_accelerations = body_motion(tree, transforms, evaluation.qd_hinge,
                                                np.zeros(tree.nb), evaluation.root_acceleration)
    drift = drift_of(velocity, drift_accelerations)
    qdd_free = solve_mass(mass, evaluation.tau - bias)
    inverse_mass_at = solve_mass(mass, jacobian.T)
    nu, rank, dropped = solve_constraints(jacobian @ inverse_mass_at,
                                          beta - drift - jacobian @ qdd_free)
    qdd = qdd_free + inverse_mass_at @ nu
    _, accelerations = body_motion(tree, transforms, evaluation.qd_hinge,
                                   coordinates.hinge_rates(qdd), evaluation.root_acceleration)
    return (qdd, jacobian.T @ nu, nu, rank, dropped, velocity, accelerations,
            "dense Gauss least-constraint (mimic joints couple hinges across the tree)")


def mixed_dynamics(evaluation, qdd, prescribed):
    """``(qdd_all, tau_all)``: the free block of ``M qdd = tau - h`` solved by Cholesky."""
    mass, bias = mass_and_bias(evaluation)
    free = ~prescribed
    qdd_all, tau_all = qdd.copy(), evaluation.tau.copy()
    qdd_all[free] = solve_mass(mass[np.ix_(free, free)],
                               evaluation.tau[free] - bias[free]
                               - mass[np.ix_(free, prescribed)] @ qdd[prescribed])
    tau_all[prescribed] = mass[prescribed] @ qdd_all + bias[prescribed]
    return qdd_all, tau_all
