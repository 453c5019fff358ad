"""Kinetic and potential energy of the moving bodies.

T = 1/2 sum V(k)^T M(k) V(k) over the bodies (body axes), which is 1/2 qd^T M qd.
V = -sum m(k) g . c(k), c(k) each body's centre of mass in root axes: zero at
the root frame's origin, and dV/dq = g(q), the gravity torques.  The root link
does not move and is left out of both (Pinocchio's computeKineticEnergy and
computePotentialEnergy sum over the moving joints' bodies alike).
"""
import numpy as np

from ..multibody.spatial import dtype_of, first_moment
from .kinematics import body_placements, parent_to_child_transforms, velocity_step


def kinetic_energy(tree, q_hinge, qd_hinge):
    """1/2 qd^T M qd by one velocity scatter."""
    transforms = parent_to_child_transforms(tree, q_hinge)
    inertia = tree.body_inertia
    velocity = np.zeros((tree.nb, 6), dtype=dtype_of(transforms, qd_hinge, inertia))
    energy = 0.0
    for body in range(1, tree.nb):
        velocity[body], _ = velocity_step(tree, body, transforms[body],
                                          velocity[tree.parent[body]], qd_hinge[body])
        energy += 0.5 * velocity[body] @ (inertia[body] @ velocity[body])
    return energy


def potential_energy(tree, q_hinge, gravity):
    """-sum m g . c over the moving bodies, ``gravity`` the acceleration in root axes."""
    rotations, translations = body_placements(tree, q_hinge)
    inertia = tree.body_inertia
    moments = first_moment(inertia)
    energy = 0.0
    for body in range(1, tree.nb):
        weighted = inertia[body][0, 0] * translations[body] + rotations[body] @ moments[body]
        energy -= gravity @ weighted
    return energy
