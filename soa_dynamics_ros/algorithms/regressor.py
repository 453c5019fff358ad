"""The inertial-parameter regressor: joint torques as a linear map of every body's
ten inertial parameters, ``tau = Y(q, qd, qdd) pi``.

A body's Newton-Euler force ``f = I a + v x* I v`` is linear in its parameters
(:func:`..multibody.spatial.inertia_to_parameters`, about the body origin, body
axes): ``f = A(v, a) pi_body`` with ``A`` 6 x 10.  The force reaches hinge ``j``
(the body's and each ancestor's) carried rigidly, so the block of body ``i`` on hinge
``j`` is ``H(j) X(j <- i)^T A``.  Both are taken to root axes about the root origin
once (``A`` with the body's placement, ``H(j)`` as a motion): each block is then a
product of the two, with no carrying from hinge to hinge.
"""
import numpy as np

from ..multibody.spatial import (INERTIA_PARAMETER_COUNT, cross, dtype_of, force_cross,
                                 motion_transform, parameters_to_inertia)
from .kinematics import body_motion, body_placements, parent_to_child_transforms

# The spatial inertia of a unit of each parameter alone, (10, 6, 6).
_UNIT_INERTIAS = np.array([parameters_to_inertia(unit)
                           for unit in np.eye(INERTIA_PARAMETER_COUNT)])


def body_regressor(velocity, acceleration):
    """6 x 10 ``A`` with ``A @ pi == I a + v x* I v`` for the inertia ``I`` of ``pi``."""
    return (_UNIT_INERTIAS @ acceleration).T + force_cross(velocity) @ (
        _UNIT_INERTIAS @ velocity).T


def root_motion(rotation, translation, motion):
    """A motion ``[v; w]`` in the axes of a body placed at ``(rotation, translation)``,
    about its origin, in root axes about the root origin (the inverse of
    :func:`..multibody.spatial.motion_transform`): ``[R v + p x R w; R w]``."""
    angular = rotation @ motion[3:]
    return np.concatenate((rotation @ motion[:3] + cross(translation, angular), angular))


def inertial_regressor(tree, q_hinge, qd_hinge, qdd_hinge, root_acceleration):
    """nb x 10 (nb - 1) hinge regressor: row per hinge (row 0 zero), a block of ten
    columns per moving body (body 1 first), ``Y @ pi`` the hinge torques of
    :func:`.inverse_dynamics.inverse_dynamics` without external forces."""
    transforms = parent_to_child_transforms(tree, q_hinge)
    velocity, acceleration = body_motion(tree, transforms, qd_hinge, qdd_hinge, root_acceleration)
    rotations, translations = body_placements(tree, q_hinge)
    to_body = [motion_transform(rotation, translation)
               for rotation, translation in zip(rotations, translations)]
    hinge_maps = [root_motion(rotation, translation, hinge)
                  for rotation, translation, hinge in zip(rotations, translations, tree.hinge_map)]
    regressor = np.zeros((tree.nb, INERTIA_PARAMETER_COUNT * (tree.nb - 1)),
                         dtype=dtype_of(velocity, acceleration))
    for body in range(1, tree.nb):
        columns = slice(INERTIA_PARAMETER_COUNT * (body - 1), INERTIA_PARAMETER_COUNT * body)
        force = to_body[body].T @ body_regressor(velocity[body], acceleration[body])
        hinge = body
        while hinge > 0:
            regressor[hinge, columns] = hinge_maps[hinge] @ force
            hinge = tree.parent[hinge]
    return regressor
