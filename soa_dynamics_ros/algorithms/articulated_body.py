"""The articulated-body sweeps shared by forward, mixed, hybrid and task-space dynamics.

SOA reading (Jain & Rodriguez): the tips-to-base gather builds the articulated
inertias P(k) and the residual forces z(k) (a Riccati-like recursion), with
D(k) = H P H*, the gain U(k) = P H* and the force carry psi(k) = X^T (I - U D^-1 H)
to the parent; the base-to-tips scatter then yields accelerations.  This is
the innovations factorization of M^-1, evaluated without forming M.

Every hinge is either *free* (its torque is given and its acceleration
unknown) or *prescribed* (its acceleration is given).  A prescribed hinge does
not reduce the articulated inertia: the subtree is carried rigidly across it.
Forward dynamics has all hinges free; mixed dynamics prescribes some; a locked
joint of a subgraph query is prescribed with zero rate and acceleration.
"""
from dataclasses import dataclass

import numpy as np

from ..errors import SingularDynamicsError
from ..multibody.spatial import dtype_of, force_cross, transformed_inertia
from .kinematics import parent_to_child_transforms, velocity_product, velocity_step


@dataclass
class ArticulatedBodies:
    transforms: np.ndarray         # X(i): parent -> body motion transforms
    velocity: np.ndarray           # V(i), body axes
    bias_acceleration: np.ndarray  # c(i) = V(i) x H qd(i)
    articulated: np.ndarray        # P(i) before the hinge projection
    bias_force: np.ndarray         # z(i) before the hinge projection
    gain: np.ndarray               # U(i) = P(i) H(i)
    inverse_d: np.ndarray          # 1 / D(i), 0 on prescribed hinges
    residual_torque: np.ndarray    # u(i) = T(i) - H z(i)
    free: np.ndarray               # bool per body: hinge acceleration unknown


def gather(tree, q_hinge, qd_hinge, tau_hinge, body_forces=None, free=None, qdd_prescribed=None):
    """Velocity scatter, then the tips-to-base articulated-body gather."""
    nb = tree.nb
    free = np.ones(nb, dtype=bool) if free is None else free
    qdd_prescribed = np.zeros(nb) if qdd_prescribed is None else qdd_prescribed
    transforms = parent_to_child_transforms(tree, q_hinge)
    hinge_map = tree.hinge_map
    articulated = tree.body_inertia.copy()
    dtype = dtype_of(transforms, qd_hinge, tau_hinge, articulated, body_forces)
    velocity = np.zeros((nb, 6), dtype=dtype)
    bias_acceleration = np.zeros((nb, 6), dtype=dtype)
    bias_force = np.zeros((nb, 6), dtype=dtype)
    for body in range(1, nb):
        velocity[body], joint_velocity = velocity_step(
            tree, body, transforms[body], velocity[tree.parent[body]], qd_hinge[body])
        bias_acceleration[body] = velocity_product(velocity[body], joint_velocity)
        bias_force[body] = force_cross(velocity[body]) @ (articulated[body] @ velocity[body])
        if body_forces is not None:
            bias_force[body] -= body_forces[body]

    gain = np.zeros((nb, 6), dtype=dtype)
    inverse_d = np.zeros(nb, dtype=dtype)
    residual_torque = np.zeros(nb, dtype=dtype)
    singular_below = tree.singular_inertia_threshold()
    for body in range(nb - 1, 0, -1):
        parent = tree.parent[body]
        if free[body]:
            gain[body] = articulated[body] @ hinge_map[body]
            d = hinge_map[body] @ gain[body]
            if not d > singular_below:
                raise SingularDynamicsError(
                    f"the articulated inertia about the hinge of link {tree.body_link[body]!r} "
                    "is zero: a massless body on a moving joint has no forward dynamics")
            inverse_d[body] = 1.0 / d
            residual_torque[body] = tau_hinge[body] - hinge_map[body] @ bias_force[body]
            # P+ = P - U D^-1 U*,  z+ = z + P+ c + U D^-1 u
            reduced = articulated[body] - np.outer(gain[body], gain[body]) * inverse_d[body]
            carried = (bias_force[body] + reduced @ bias_acceleration[body]
                       + gain[body] * residual_torque[body] * inverse_d[body])
        else:
            # Known hinge acceleration: the subtree moves with its parent plus c + H qdd.
            reduced = articulated[body]
            carried = bias_force[body] + reduced @ (bias_acceleration[body]
                                                    + hinge_map[body] * qdd_prescribed[body])
        if parent > 0:
            articulated[parent] += transformed_inertia(transforms[body], reduced)
            bias_force[parent] += transforms[body].T @ carried
    return ArticulatedBodies(transforms, velocity, bias_acceleration, articulated, bias_force,
                             gain, inverse_d, residual_torque, free)


def scatter(tree, bodies, root_acceleration, qdd_prescribed=None):
    """Base-to-tips acceleration sweep: hinge accelerations and body accelerations."""
    hinge_map = tree.hinge_map
    dtype = dtype_of(bodies.transforms, bodies.gain, root_acceleration, qdd_prescribed)
    acceleration = np.zeros((tree.nb, 6), dtype=dtype)
    acceleration[0] = root_acceleration
    qdd = np.zeros(tree.nb, dtype=dtype) if qdd_prescribed is None else qdd_prescribed.copy()
    for body in range(1, tree.nb):
        incoming = (bodies.transforms[body] @ acceleration[tree.parent[body]]
                    + bodies.bias_acceleration[body])
        if bodies.free[body]:
            qdd[body] = bodies.inverse_d[body] * (bodies.residual_torque[body]
                                                  - bodies.gain[body] @ incoming)
        acceleration[body] = incoming + hinge_map[body] * qdd[body]
    return qdd, acceleration


def hinge_forces(tree, bodies, acceleration):
    """Spatial force across every hinge, f(i) = P(i) a(i) + z(i), body axes."""
    return (np.einsum("kij,kj->ki", bodies.articulated, acceleration) + bodies.bias_force)
