"""Articulated-body forward dynamics (ABA), the SOA innovations factorization of M^-1.

Gather: articulated inertias P, D = H P H*, gain G = P H* D^-1 and residual
forces.  Scatter: accelerations.  Names follow Featherstone's ABA with the SOA
meaning in comments.
"""
import numpy as np

from ..errors import SingularDynamicsError
from ..spatial import force_cross, motion_cross
from .kinematics import parent_to_child_transforms


def forward_dynamics(tree, q_hinge, qd_hinge, tau_hinge, root_acceleration, body_forces=None):
    """Hinge accelerations produced by hinge torques (no mimic coupling)."""
    transforms = parent_to_child_transforms(tree, q_hinge)
    hinge_map = tree.hinge_map
    velocity = np.zeros((tree.nb, 6))
    bias_acceleration = np.zeros((tree.nb, 6))
    articulated = tree.body_inertia.copy()     # P(k)
    bias_force = np.zeros((tree.nb, 6))         # z(k), the residual force
    for body in range(1, tree.nb):
        joint_velocity = hinge_map[body] * qd_hinge[body]
        velocity[body] = transforms[body] @ velocity[tree.parent[body]] + joint_velocity
        bias_acceleration[body] = motion_cross(velocity[body]) @ joint_velocity
        bias_force[body] = force_cross(velocity[body]) @ articulated[body] @ velocity[body]
        if body_forces is not None:
            bias_force[body] -= body_forces[body]

    gain = np.zeros((tree.nb, 6))                # P H* (the Kalman-like gain is this / D)
    inverse_d = np.zeros(tree.nb)
    residual_torque = np.zeros(tree.nb)         # epsilon(k) = T(k) - H z(k)
    # A hinge whose articulated inertia is this small against the robot's has
    # none at all (round-off of an exact zero): dividing by it would give inf.
    singular_below = 1e-13 * max(np.abs(tree.body_inertia).max(), 1e-300)
    for body in range(tree.nb - 1, 0, -1):
        gain[body] = articulated[body] @ hinge_map[body]
        d = hinge_map[body] @ gain[body]
        if not d > singular_below:
            raise SingularDynamicsError(
                f"the articulated inertia about the hinge of link {tree.body_link[body]!r} "
                "is zero: a massless body on a moving joint has no forward dynamics")
        inverse_d[body] = 1.0 / d
        residual_torque[body] = tau_hinge[body] - hinge_map[body] @ bias_force[body]
        parent = tree.parent[body]
        if parent > 0:
            # P+ = P - G D G* and z+ = z + P+ a + G epsilon, carried to the parent.
            reduced = articulated[body] - np.outer(gain[body], gain[body]) * inverse_d[body]
            carried = (bias_force[body] + reduced @ bias_acceleration[body]
                       + gain[body] * residual_torque[body] * inverse_d[body])
            articulated[parent] += transforms[body].T @ reduced @ transforms[body]
            bias_force[parent] += transforms[body].T @ carried

    acceleration = np.zeros((tree.nb, 6))
    acceleration[0] = root_acceleration
    qdd = np.zeros(tree.nb)
    for body in range(1, tree.nb):
        incoming = transforms[body] @ acceleration[tree.parent[body]] + bias_acceleration[body]
        qdd[body] = inverse_d[body] * (residual_torque[body] - gain[body] @ incoming)
        acceleration[body] = incoming + hinge_map[body] * qdd[body]
    return qdd
