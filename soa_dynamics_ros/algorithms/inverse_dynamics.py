"""Newton-Euler inverse dynamics (RNEA): a velocity/acceleration scatter, a force gather.

In SOA form: V = phi* H* qd, alpha = phi* (H* qdd + a), f = phi (M alpha + b),
tau = H f, with a the Coriolis and b the gyroscopic terms.
"""
import numpy as np

from ..spatial import force_cross, motion_cross
from .kinematics import parent_to_child_transforms


def inverse_dynamics(tree, q_hinge, qd_hinge, qdd_hinge, root_acceleration, body_forces=None):
    """Hinge torques for the given motion.

    ``root_acceleration`` is the spatial acceleration of the root (``[-g; 0]``
    brings in gravity).  ``body_forces`` (nb x 6 or None) are external wrenches
    acting on each body, in body axes about the body origin.
    """
    transforms = parent_to_child_transforms(tree, q_hinge)
    inertia, hinge_map = tree.body_inertia, tree.hinge_map
    velocity = np.zeros((tree.nb, 6))
    acceleration = np.zeros((tree.nb, 6))
    force = np.zeros((tree.nb, 6))
    acceleration[0] = root_acceleration
    for body in range(1, tree.nb):
        parent = tree.parent[body]
        joint_velocity = hinge_map[body] * qd_hinge[body]
        velocity[body] = transforms[body] @ velocity[parent] + joint_velocity
        acceleration[body] = (transforms[body] @ acceleration[parent]
                              + hinge_map[body] * qdd_hinge[body]
                              + motion_cross(velocity[body]) @ joint_velocity)
        force[body] = (inertia[body] @ acceleration[body]
                       + force_cross(velocity[body]) @ inertia[body] @ velocity[body])
        if body_forces is not None:
            force[body] -= body_forces[body]
    torque = np.zeros(tree.nb)
    for body in range(tree.nb - 1, 0, -1):
        torque[body] = hinge_map[body] @ force[body]
        parent = tree.parent[body]
        if parent > 0:
            force[parent] += transforms[body].T @ force[body]
    return torque
