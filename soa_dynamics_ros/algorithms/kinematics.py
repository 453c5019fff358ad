"""Kinematics: hinge transforms, body placements, frame poses and Jacobians."""
import numpy as np

from ..multibody.spatial import cross, dtype_of, motion_cross, motion_transform


def hinge_placement(tree, body, q):
    """Placement ``(R, p)`` of body ``body`` in its parent's frame at hinge coordinate ``q``."""
    return tree.joint_model[body].placement(tree.hinge_rotation[body], tree.hinge_translation[body],
                                            tree.hinge_axis[body], q)


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
    rate of hinge ``i`` (its hinge map H, moved from the body origin to the
    frame origin); only hinges between the frame's body and the root contribute.
    """
    rotations, translations = placements
    _, point = frame_placement(tree, placements, frame)
    jacobian = np.zeros((6, tree.nb), dtype=dtype_of(rotations, translations))
    for body in ancestors(tree, frame.body):
        linear = rotations[body] @ tree.hinge_map[body][:3]
        angular = rotations[body] @ tree.hinge_map[body][3:]
        jacobian[:3, body] = linear + cross(angular, point - translations[body])
        jacobian[3:, body] = angular
    return jacobian


def velocity_step(tree, body, transform, parent_velocity, qd):
    """One step of the velocity scatter: ``(V(i), H qd)`` with V(i) = X(i) V(parent) + H qd."""
    joint_velocity = tree.hinge_map[body] * qd
    return transform @ parent_velocity + joint_velocity, joint_velocity


def velocity_product(velocity, joint_velocity):
    """The velocity-product acceleration c(i) = V(i) x H qd of a moving hinge."""
    return motion_cross(velocity) @ joint_velocity


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
        velocity[body], joint_velocity = velocity_step(tree, body, transforms[body],
                                                       velocity[parent], qd_hinge[body])
        acceleration[body] = (transforms[body] @ acceleration[parent]
                              + hinge_map[body] * qdd_hinge[body]
                              + velocity_product(velocity[body], joint_velocity))
    return velocity, acceleration
