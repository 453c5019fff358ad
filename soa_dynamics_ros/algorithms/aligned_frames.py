"""M and h in frames at each body's origin with root axes: a compiled form of both.

Body frames (:mod:`.mass_matrix`, :mod:`.inverse_dynamics`) turn every quantity
by each joint's rotation on its way between parent and child.  Root axes about the
root origin (:mod:`.root_axes_derivatives`) need no transforms, but hold each
inertia about the root origin, where a light body far from it loses digits; a
solve with M multiplies that loss by M's condition number.  Here each body's
quantities are in root axes about its own origin, so moving between parent and
child is a shift by the link ``d`` from the parent's origin to the child's (root
axes) alone: a motion's linear part gains ``w x d``, a force's moment ``d x f``, an
inertia the parallel-axis terms; no value is ever about a point far from its body.
On a robot whose joint placements do not fold to axis swaps, M this way traces to
about half of body frames' operations (a tree with random axes) or 72% (iCub), and
M, h and M's LTDL to three quarters of the articulated-body recursion's on that tree
(:mod:`soa_dynamics_ros.kernels.generator` picks the form per robot).  Inverse
dynamics alone stays cheaper in body frames, where only a 3-vector turns per body.

Conventions are the package's: motions ``[linear; angular]``, forces
``[force; moment]``, gravity as the root acceleration ``[-g; 0]`` (a pure
translation field, the same about every point), wrenches ``[f; t]`` in root axes
about their link's origin.
"""
import numpy as np

from ..multibody.root_axes import Inertia, cross, force_cross, motion_cross
from ..multibody.spatial import dtype_of
from .kinematics import hinge_placement


def _placed(tree, q_hinge):
    """Per body (root axes): its rotation, the link from its parent's origin to its own,
    its hinge map and its inertia about its origin."""
    nb, parent = tree.nb, tree.parent
    rotations, links = [np.eye(3)] + [None] * (nb - 1), [None] * nb
    hinge_map, inertia = [None] * nb, [None] * nb
    for body in range(1, nb):
        rotation, translation = hinge_placement(tree, body, q_hinge[body])
        turned = rotations[parent[body]]
        links[body] = turned @ translation
        rotations[body] = turned @ rotation
        s = tree.hinge_map[body]
        hinge_map[body] = np.concatenate((rotations[body] @ s[:3], rotations[body] @ s[3:]))
        inertia[body] = Inertia.turned(tree.body_inertia[body], rotations[body])
    return rotations, links, hinge_map, inertia


def _shifted_motion(motion, link):
    """A motion about the parent's origin, taken about the child's."""
    return np.concatenate((motion[:3] + cross(motion[3:], link), motion[3:]))


def _shifted_force(force, link):
    """A force about the child's origin, taken about the parent's."""
    return np.concatenate((force[:3], force[3:] + cross(link, force[:3])))


def mass_matrix(tree, q_hinge):
    """M (nb x nb, row and column 0 the root's zeros) by the composite-body recursion:
    ``M_ij = S_j . Ic_i S_i`` for j an ancestor of i, the force shifted to each
    ancestor's origin on the way."""
    nb, parent = tree.nb, tree.parent
    _, links, hinge_map, composite = _placed(tree, q_hinge)
    for body in range(nb - 1, 1, -1):
        if parent[body] > 0:
            composite[parent[body]] = composite[parent[body]] + composite[body].shifted(links[body])
    mass = np.zeros((nb, nb), dtype=dtype_of(q_hinge, tree.body_inertia))
    for body in range(1, nb):
        force = composite[body].apply(hinge_map[body])
        mass[body, body] = hinge_map[body] @ force
        ancestor = body
        while parent[ancestor] > 0:
            force = _shifted_force(force, links[ancestor])
            ancestor = parent[ancestor]
            mass[body, ancestor] = mass[ancestor, body] = hinge_map[ancestor] @ force
    return mass


def inverse_dynamics(tree, q_hinge, qd_hinge, qdd_hinge, root_acceleration, wrenches=()):
    """Hinge torques (nb, the root's 0 first) by the Newton-Euler recursion, less those of
    ``wrenches``, ``(frame, [f; t])`` pairs as in
    :func:`.root_axes_derivatives.inverse_dynamics_derivatives`; ``qdd_hinge`` None: at
    ``qdd = 0`` (h of ``M qdd = tau - h``)."""
    nb, parent = tree.nb, tree.parent
    rotations, links, hinge_map, inertia = _placed(tree, q_hinge)
    velocity, acceleration = [np.zeros(6)] * nb, [root_acceleration] * nb
    force = [None] * nb
    for body in range(1, nb):
        up, link = parent[body], links[body]
        joint_velocity = hinge_map[body] * qd_hinge[body]
        v = velocity[body] = _shifted_motion(velocity[up], link) + joint_velocity
        a = acceleration[body] = (_shifted_motion(acceleration[up], link)
                                  + motion_cross(v, joint_velocity))
        if qdd_hinge is not None:
            a = acceleration[body] = a + hinge_map[body] * qdd_hinge[body]
        force[body] = inertia[body].apply(a) + force_cross(v, inertia[body].apply(v))
    for frame, wrench in wrenches:
        if frame.body == 0:
            continue                        # on the root: it moves nothing
        arm, f = rotations[frame.body] @ frame.translation, wrench[:3]
        force[frame.body] = force[frame.body] - np.concatenate((f, wrench[3:] + cross(arm, f)))
    torque = np.zeros(nb, dtype=dtype_of(q_hinge, qd_hinge, qdd_hinge, root_acceleration,
                                         tree.body_inertia))
    for body in range(nb - 1, 0, -1):
        torque[body] = hinge_map[body] @ force[body]
        if parent[body] > 0:
            force[parent[body]] = force[parent[body]] + _shifted_force(force[body], links[body])
    return torque
