"""Derivatives of Newton-Euler inverse dynamics against hinge positions and rates.

Forward-mode differentiation of the RNEA recursion itself (structure-based,
not finite differences): every body carries, beside its velocity V(i),
acceleration A(i) and force f(i), their tangents along each hinge coordinate,
one 6 x nb block per body whose column j is the derivative against hinge j.
O(nb^2) work, one base-to-tips scatter and one tips-to-base gather.

The only place a hinge position enters is its transform X(i) = X_J(q) X_tree,
whose derivative is ``dX(i)/dq(i) = -(H(i) x) X(i)``.  External wrenches are
held constant in root-frame axes about their link origins (the package's
convention), so their body-frame expression turns with the body:
``d f_ext(i) = T(i) dtheta(i)`` (:func:`~.external_forces.body_force_turning`),
with dtheta(i) the body's rotation, the angular rows of its body-frame
Jacobian, itself the velocity tangent against the rates.  (Pinocchio holds its
external forces fixed in the joint frames instead; its derivative has no such
term.)

Forward dynamics derivatives follow from these at qdd = FD(q, qd, tau):
``dqdd/dq = -M^-1 dtau/dq``, ``dqdd/dqd = -M^-1 dtau/dqd``, ``dqdd/dtau = M^-1``
(the model layer solves with M after folding mimic joints).
"""
import numpy as np

from ..multibody.spatial import dtype_of, force_cross, force_cross_of, motion_cross
from .kinematics import body_motion, parent_to_child_transforms


def inverse_dynamics_derivatives(tree, q_hinge, qd_hinge, qdd_hinge, root_acceleration,
                                 body_forces=None, body_force_turning=None):
    """``(dtau/dq_hinge, dtau/dqd_hinge)``, each nb x nb (row and column 0, the root, zero).

    Arguments as :func:`~.inverse_dynamics.inverse_dynamics`; with
    ``body_force_turning`` (:func:`~.external_forces.body_force_turning`) the
    ``body_forces`` are wrenches constant in root axes, without it they are fixed
    in the body frames (Pinocchio's convention).
    """
    nb, hinge_map, inertia = tree.nb, tree.hinge_map, tree.body_inertia
    transforms = parent_to_child_transforms(tree, q_hinge)
    velocity, acceleration = body_motion(tree, transforms, qd_hinge, qdd_hinge, root_acceleration)
    dtype = dtype_of(velocity, acceleration, inertia, body_forces)
    # Tangent blocks (body, 6, hinge): against positions (_dq) and rates (_dqd).
    # dv_dqd[i] is also body i's Jacobian in its own axes.
    dv_dq, dv_dqd, da_dq, da_dqd = (np.zeros((nb, 6, nb), dtype=dtype) for _ in range(4))
    force = np.zeros((nb, 6), dtype=dtype)
    df_dq, df_dqd = np.zeros((nb, 6, nb), dtype=dtype), np.zeros((nb, 6, nb), dtype=dtype)
    for body in range(1, nb):
        parent, x, h = tree.parent[body], transforms[body], hinge_map[body]
        dv_dq[body] = x @ dv_dq[parent]
        dv_dqd[body] = x @ dv_dqd[parent]
        da_dq[body] = x @ da_dq[parent]
        da_dqd[body] = x @ da_dqd[parent]
        # d(X v)/dq(i) = -(H x)(X v) = (X v) x H
        dv_dq[body][:, body] += motion_cross(x @ velocity[parent]) @ h
        da_dq[body][:, body] += motion_cross(x @ acceleration[parent]) @ h
        dv_dqd[body][:, body] += h
        # The velocity product V x H qd varies with V and with qd(i).
        carried_by_hinge = motion_cross(h * qd_hinge[body])
        da_dq[body] -= carried_by_hinge @ dv_dq[body]
        da_dqd[body] -= carried_by_hinge @ dv_dqd[body]
        da_dqd[body][:, body] += motion_cross(velocity[body]) @ h
        # f = I A + V x* I V - f_ext
        momentum = inertia[body] @ velocity[body]
        gyroscopic = force_cross(velocity[body]) @ inertia[body] + force_cross_of(momentum)
        force[body] = inertia[body] @ acceleration[body] + force_cross(velocity[body]) @ momentum
        df_dq[body] = inertia[body] @ da_dq[body] + gyroscopic @ dv_dq[body]
        df_dqd[body] = inertia[body] @ da_dqd[body] + gyroscopic @ dv_dqd[body]
        if body_forces is not None:
            force[body] -= body_forces[body]
        if body_force_turning is not None:
            df_dq[body] -= body_force_turning[body] @ dv_dqd[body][3:]

    dtau_dq, dtau_dqd = np.zeros((nb, nb), dtype=dtype), np.zeros((nb, nb), dtype=dtype)
    for body in range(nb - 1, 0, -1):
        parent, x, h = tree.parent[body], transforms[body], hinge_map[body]
        dtau_dq[body] = h @ df_dq[body]
        dtau_dqd[body] = h @ df_dqd[body]
        if parent > 0:
            # d(X^T f)/dq(i) = X^T (H x* f)
            df_dq[parent] += x.T @ df_dq[body]
            df_dq[parent][:, body] += x.T @ (force_cross(h) @ force[body])
            df_dqd[parent] += x.T @ df_dqd[body]
            force[parent] += x.T @ force[body]
    return dtau_dq, dtau_dqd


def gravity_derivatives(tree, q_hinge, root_acceleration):
    """``d g / dq_hinge``, nb x nb: the inverse dynamics derivative at rest."""
    zeros = np.zeros(tree.nb)
    return inverse_dynamics_derivatives(tree, q_hinge, zeros, zeros, root_acceleration)[0]
