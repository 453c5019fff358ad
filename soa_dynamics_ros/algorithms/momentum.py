"""The Coriolis matrix's transpose times the rates, C(q, qd)^T qd, by a scatter and a gather.

C^T qd is the gradient of the kinetic energy T = 1/2 qd^T M(q) qd with respect to
q (Lagrange: C qd = dM/dt qd - dT/dq and dM/dt = C + C^T).  Moving hinge i
rotates every body of its subtree about the axis H(i); differentiating
T = sum 1/2 V(k)^T M(k) V(k) over that subtree gives

    (C^T qd)(i) = -H(i)^T (V(i) x* P(i)),    P(i) = sum over the subtree of i of M(k) V(k),

all in body i's axes: P(i) is the spatial momentum of the subtree, gathered
tips to base like RNEA's forces.  (The expression equals De Luca and
Ferrajoli's modified Newton-Euler for the pair (qd, qd) without the
acceleration terms; V(i) may replace the parent's velocity because
H(i)^T (H(i) x* f) = 0.)  The generalized-momentum observer needs this term
without any acceleration.
"""
import numpy as np

from ..multibody.spatial import dtype_of, force_cross
from .kinematics import parent_to_child_transforms, velocity_step


def coriolis_transpose_product(tree, q_hinge, qd_hinge):
    """Hinge-space C(q, qd)^T qd: one velocity scatter, one momentum gather."""
    transforms = parent_to_child_transforms(tree, q_hinge)
    inertia = tree.body_inertia
    dtype = dtype_of(transforms, qd_hinge, inertia)
    velocity = np.zeros((tree.nb, 6), dtype=dtype)
    momentum = np.zeros((tree.nb, 6), dtype=dtype)
    for body in range(1, tree.nb):
        velocity[body], _ = velocity_step(tree, body, transforms[body],
                                          velocity[tree.parent[body]], qd_hinge[body])
        momentum[body] = inertia[body] @ velocity[body]
    result = np.zeros(tree.nb, dtype=dtype)
    for body in range(tree.nb - 1, 0, -1):
        result[body] = -tree.hinge_map[body] @ (force_cross(velocity[body]) @ momentum[body])
        parent = tree.parent[body]
        if parent > 0:
            momentum[parent] += transforms[body].T @ momentum[body]
    return result
