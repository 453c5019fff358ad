"""Kinematics: hinge transforms, body placements, frame poses and Jacobians."""
import numpy as np

from ..multibody.spatial import dtype_of, motion_cross, motion_transform, rotation_about_axis
from ..multibody.tree import PRISMATIC


def hinge_placement(tree, body, q):
    """Placement ``(R, p)`` of body ``body`` in its parent's frame at hinge angle ``q``."""
    rotation, translation = tree.hinge_rotation[body], tree.hinge_translation[body]
    axis = tree.hinge_axis[body]
    if tree.hinge_type[body] == PRISMATIC:
        return rotation, translation + rotation @ (axis * q)
    return rotation @ rotation_about_axis(axis, q), translation


def parent_to_child_transforms(tree, q_hinge):
    """The 6x6 motion transforms X(i) from each body's parent frame to its own."""
    transforms = np.zeros((tree.nb, 6, 6), dtype=dtype_of(q_hinge))
    transforms[0] = np.eye(6)
    for body in range(1, tree.nb):
        transforms[body] = motion_transform(*hinge_placement(tree, body, q_hinge[body]))
    return transforms


def body_placements(tree, q_hinge):
    """World (root-frame) placements ``(R[i], p[i])`` of every body: a scatter."""
    rotations = np.zeros((tree.nb, 3, 3), dtype=dtype_of(q_hinge))
    translations = np.zeros((tree.nb, 3), dtype=dtype_of(q_hinge))
    rotations[0] = np.eye(3)
    for body in range(1, tree.nb):
        parent = tree.parent[body]
        rotation, translation = hinge_placement(tree, body, q_hinge[body])
        rotations[body] = rotations[parent] @ rotation
        translations[body] = translations[parent] + rotations[parent] @ translation
    return rotations, translations


def frame_placement(tree, placements, frame):
    """World placement of a URDF link frame given the body placements."""
    rotations, translations = placements
    rotation = rotations[frame.body] @ frame.rotation
    translation = translations[frame.body] + rotations[frame.body] @ frame.translation
    return rotation, translation


def ancestors(tree, body):
    """Bodies on the path from ``body`` to the root (root excluded), tip first."""
    path = []
    while body > 0:
        path.append(body)
        body = tree.parent[body]
    return path


def hinge_jacobian(tree, placements, frame):
    """6 x nb Jacobian of a frame origin against hinge rates: rows ``[v; w]``, root axes.

    Column ``i`` is the spatial velocity of the frame origin produced by a unit
    rate of hinge ``i``; only hinges between the frame's body and the root
    contribute.
    """
    rotations, translations = placements
    _, point = frame_placement(tree, placements, frame)
    jacobian = np.zeros((6, tree.nb), dtype=dtype_of(rotations, translations))
    for body in ancestors(tree, frame.body):
        axis = rotations[body] @ tree.hinge_axis[body]
        if tree.hinge_type[body] == PRISMATIC:
            jacobian[:3, body] = axis
        else:
            jacobian[:3, body] = np.cross(axis, point - translations[body])
            jacobian[3:, body] = axis
    return jacobian


def body_motion(tree, transforms, qd_hinge, qdd_hinge, root_acceleration):
    """Spatial velocities and accelerations of every body (body axes): a scatter.

    V(i) = X(i) V(parent) + H qd,  A(i) = X(i) A(parent) + H qdd + V(i) x H qd.
    """
    hinge_map = tree.hinge_map
    dtype = dtype_of(transforms, qd_hinge, qdd_hinge, root_acceleration)
    velocity = np.zeros((tree.nb, 6), dtype=dtype)
    acceleration = np.zeros((tree.nb, 6), dtype=dtype)
    acceleration[0] = root_acceleration
    for body in range(1, tree.nb):
        parent = tree.parent[body]
        joint_velocity = hinge_map[body] * qd_hinge[body]
        velocity[body] = transforms[body] @ velocity[parent] + joint_velocity
        acceleration[body] = (transforms[body] @ acceleration[parent]
                              + hinge_map[body] * qdd_hinge[body]
                              + motion_cross(velocity[body]) @ joint_velocity)
    return velocity, acceleration
