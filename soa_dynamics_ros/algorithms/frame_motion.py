"""Frame motion: twist, the Jacobian's time derivative, classical acceleration.

Everything is in root axes about the frame origin, as :func:`.kinematics.hinge_jacobian`:
its column ``i`` is ``[l(i) + s(i) x (p - o(i)); s(i)]`` with ``l(i), s(i)`` body
``i``'s hinge map turned to root axes, ``o(i)`` its origin and ``p`` the frame origin.
Each of them turns with body ``i`` (angular velocity ``w(i)``) and ``p - o(i)``
changes at ``v(p) - v(o(i))``, so

    dJ/dt column i = [w(i) x l(i) + (w(i) x s(i)) x (p - o(i)) + s(i) x (v(p) - v(o(i)));
                      w(i) x s(i)].

The twist ``J qd`` differentiates to the classical acceleration ``[dv/dt; dw/dt]`` of
the frame origin, ``J qdd + dJ/dt qd`` (no gravity).  Only the hinges between the
frame's body and the root move the frame: each function walks that path.
"""
import numpy as np

from ..multibody.spatial import cross, dtype_of
from .kinematics import ancestors, frame_placement, hinge_jacobian


def path_velocities(tree, placements, qd_hinge, body):
    """Root-axes velocity of the origin and angular velocity of ``body`` and its
    ancestors (rows of two (nb, 3) arrays; other rows zero), root first:

    v(o(i)) = v(o(parent)) + w(parent) x (o(i) - o(parent)) + l(i) qd(i),
    w(i) = w(parent) + s(i) qd(i).
    """
    rotations, translations = placements
    dtype = dtype_of(rotations, translations, qd_hinge)
    linear = np.zeros((tree.nb, 3), dtype=dtype)
    angular = np.zeros((tree.nb, 3), dtype=dtype)
    for link in reversed(ancestors(tree, body)):
        parent = tree.parent[link]
        hinge = tree.hinge_map[link]
        linear[link] = (linear[parent]
                        + cross(angular[parent], translations[link] - translations[parent])
                        + rotations[link] @ hinge[:3] * qd_hinge[link])
        angular[link] = angular[parent] + rotations[link] @ hinge[3:] * qd_hinge[link]
    return linear, angular


def frame_twist(tree, placements, frame, qd_hinge):
    """``[v; w]`` of the frame origin, root axes."""
    _, point = frame_placement(tree, placements, frame)
    linear, angular = path_velocities(tree, placements, qd_hinge, frame.body)
    body = frame.body
    return np.concatenate((linear[body] + cross(angular[body], point - placements[1][body]),
                           angular[body]))


def hinge_jacobian_derivative(tree, placements, frame, qd_hinge):
    """6 x nb time derivative of :func:`.kinematics.hinge_jacobian` at hinge rates ``qd_hinge``."""
    rotations, translations = placements
    _, point = frame_placement(tree, placements, frame)
    linear, angular = path_velocities(tree, placements, qd_hinge, frame.body)
    point_velocity = linear[frame.body] + cross(angular[frame.body],
                                                point - translations[frame.body])
    derivative = np.zeros((6, tree.nb), dtype=dtype_of(rotations, translations, qd_hinge))
    for body in ancestors(tree, frame.body):
        axis_linear = rotations[body] @ tree.hinge_map[body][:3]
        axis_angular = rotations[body] @ tree.hinge_map[body][3:]
        turning = cross(angular[body], axis_angular)
        derivative[:3, body] = (cross(angular[body], axis_linear)
                                + cross(turning, point - translations[body])
                                + cross(axis_angular, point_velocity - linear[body]))
        derivative[3:, body] = turning
    return derivative


def jacobian_derivative_product(tree, placements, frame, qd_hinge):
    """dJ/dt qd: the classical acceleration of the frame origin at qdd = 0."""
    return hinge_jacobian_derivative(tree, placements, frame, qd_hinge) @ qd_hinge


def frame_acceleration(tree, placements, frame, qd_hinge, qdd_hinge):
    """Classical ``[dv/dt; dw/dt]`` of the frame origin, root axes: J qdd + dJ/dt qd."""
    return (hinge_jacobian(tree, placements, frame) @ qdd_hinge
            + jacobian_derivative_product(tree, placements, frame, qd_hinge))
