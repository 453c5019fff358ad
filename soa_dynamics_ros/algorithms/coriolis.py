"""The Coriolis matrix C(q, qd): composite inertias and their variations, in root axes.

Of the many C with ``C qd = h - g``, this is the one of the Christoffel symbols,
the only one with ``dM/dt = C + C^T`` for every qd (Pinocchio's
``computeCoriolisMatrix``); h - g being quadratic in qd, it is also half of
``d tau / d qd`` (which costs the q derivatives too).  With S(j) the hinge map
of body j in root axes (about the root origin), V(k) each body's velocity and
I(k) its inertia there,

    M = sum_k J(k)^T I(k) J(k),    J(k) = [S(j) for j on the path of k],

and since dS(j)/dt = V(j) x S(j) and dI/dt = V x* I - I V x,

    C = sum_k J(k)^T (I(k) dJ(k)/dt + B(k) J(k)),
    B(k) = 1/2 (V(k) x* I(k) - I(k) V(k) x + (I(k) V(k)) xbar*)

(Echeandia and Wensing, "A numerical method for computing the Coriolis
matrix", 2021), with ``f xbar* m = m x* f``: B + B^T = dI/dt, and B V = V x* I V
gives C qd = h - g.  Two hinges share the bodies of the deeper one's subtree,
so with the composites Ic(i) and Bc(i) of that subtree, for j on the path of i

    C(j, i) = S(j) . (Ic(i) dS(i)/dt + Bc(i) S(i)),
    C(i, j) = (Ic(i) S(i)) . dS(j)/dt + (Bc(i)^T S(i)) . S(j),

one gather of the composites and one walk up each body's path: O(n d) for a
tree of depth d.  Root axes (as Pinocchio's) make the composites plain sums.
"""
import numpy as np

from ..multibody.root_axes import motion_to_root
from ..multibody.spatial import (dtype_of, force_cross, motion_cross, motion_transform,
                                 transformed_inertia)
from .kinematics import ancestors, body_placements


def coriolis_matrix(tree, q_hinge, qd_hinge):
    """The nb x nb hinge-space Coriolis matrix (row and column 0, the root, are zero)."""
    rotations, translations = body_placements(tree, q_hinge)
    nb = tree.nb
    dtype = dtype_of(rotations, qd_hinge, tree.body_inertia)
    axes = np.zeros((nb, 6), dtype=dtype)            # S(i)
    axes_rate = np.zeros((nb, 6), dtype=dtype)       # dS(i)/dt
    velocity = np.zeros((nb, 6), dtype=dtype)
    composite = np.zeros((nb, 6, 6), dtype=dtype)    # Ic(i)
    turning = np.zeros((nb, 6, 6), dtype=dtype)      # sum of V x* I over the subtree
    momentum = np.zeros((nb, 6), dtype=dtype)        # sum of I V over the subtree
    for body in range(1, nb):
        axes[body] = motion_to_root(rotations[body], translations[body], tree.hinge_map[body])
        velocity[body] = velocity[tree.parent[body]] + axes[body] * qd_hinge[body]
        axes_rate[body] = motion_cross(velocity[body]) @ axes[body]
        composite[body] = transformed_inertia(
            motion_transform(rotations[body], translations[body]), tree.body_inertia[body])
        turning[body] = force_cross(velocity[body]) @ composite[body]
        momentum[body] = composite[body] @ velocity[body]
    for body in range(nb - 1, 0, -1):
        parent = tree.parent[body]
        if parent > 0:
            composite[parent] += composite[body]
            turning[parent] += turning[body]
            momentum[parent] += momentum[body]
    coriolis = np.zeros((nb, nb), dtype=dtype)
    for body in range(1, nb):
        # Bc = 1/2 (A + A^T + P xbar*), A = sum V x* I and P = sum I V over the subtree
        # (I V x = -(V x* I)^T), so Bc S and Bc^T S differ in the skew part's sign.
        symmetric = 0.5 * (turning[body] @ axes[body] + turning[body].T @ axes[body])
        skew = 0.5 * force_cross(axes[body]) @ momentum[body]
        force = composite[body] @ axes_rate[body] + symmetric + skew
        axis_momentum = composite[body] @ axes[body]
        turned = symmetric - skew
        coriolis[body, body] = axes[body] @ force
        for ancestor in ancestors(tree, tree.parent[body]):
            coriolis[ancestor, body] = axes[ancestor] @ force
            coriolis[body, ancestor] = (axis_momentum @ axes_rate[ancestor]
                                        + turned @ axes[ancestor])
    return coriolis
