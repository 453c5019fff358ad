"""Newton-Euler inverse dynamics (RNEA): a velocity/acceleration scatter, a force gather.

In SOA form: V = phi* H* qd, alpha = phi* (H* qdd + a), f = phi (M alpha + b),
tau = H f, with a the Coriolis and b the gyroscopic terms.
"""
import numpy as np

from ..multibody.spatial import dtype_of, force_cross
from .kinematics import body_motion, parent_to_child_transforms


def inverse_dynamics(tree, q_hinge, qd_hinge, qdd_hinge, root_acceleration, body_forces=None):
    """Hinge torques for the given motion.

    ``root_acceleration`` is the spatial acceleration of the root (``[-g; 0]``
    brings in gravity).  ``body_forces`` (nb x 6 or None) are external wrenches
    acting on each body, in body axes about the body origin.
    """
    transforms = parent_to_child_transforms(tree, q_hinge)
    velocity, acceleration = body_motion(tree, transforms, qd_hinge, qdd_hinge, root_acceleration)
    inertia = tree.body_inertia
    force = np.zeros((tree.nb, 6), dtype=dtype_of(velocity, acceleration, inertia))
    for body in range(1, tree.nb):
        force[body] = (inertia[body] @ acceleration[body]
                       + force_cross(velocity[body]) @ (inertia[body] @ velocity[body]))
    if body_forces is not None:
        force -= body_forces
    return force_gather(tree, transforms, force)


def force_gather(tree, transforms, body_forces):
    """Hinge torques of body forces carried rigidly to the root: tau(i) = H(i) sum X^T f.

    The tips-to-base half of RNEA; applied to external wrenches alone it is J^T w.
    """
    force = body_forces.copy()
    torque = np.zeros(tree.nb, dtype=dtype_of(force))
    for body in range(tree.nb - 1, 0, -1):
        torque[body] = tree.hinge_map[body] @ force[body]
        parent = tree.parent[body]
        if parent > 0:
            force[parent] += transforms[body].T @ force[body]
    return torque
