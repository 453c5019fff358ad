"""External forces as the recursions take them: gravity as a root acceleration, link
wrenches as body-frame wrenches."""
import numpy as np

from ..errors import InvalidInputError
from ..multibody.spatial import dtype_of, skew, wrench_in_frame
from ..validation import as_vector
from .kinematics import body_placements, frame_placement


def gravity_root_acceleration(gravity):
    """``[-g; 0]``: accelerating the root upwards by g is gravity acting on every body."""
    return np.concatenate((-gravity, np.zeros(3)))


def body_forces(tree, q_hinge, wrenches, placements=None):
    """Link wrenches (root axes, about each link origin) as body-frame wrenches, nb x 6.

    ``wrenches`` maps link names to 6-vectors ``[f; t]`` acting on the robot;
    None or ``{}`` gives None (no external forces).  ``placements``
    (:func:`~.kinematics.body_placements` at ``q_hinge``) saves a kinematics
    pass when the caller has them already.
    """
    applied = _applied_wrenches(tree, q_hinge, wrenches, placements)
    if applied is None:
        return None
    return forces_on_bodies(tree, applied)


def forces_on_bodies(tree, applied):
    """nb x 6 body-frame wrenches summed from :func:`applied_wrench` results (float or
    symbolic: the kernel generator traces this with symbolic wrenches)."""
    forces = np.zeros((tree.nb, 6), dtype=dtype_of(*(wrench for _, wrench, _ in applied))) + 0.0
    for body, wrench, _ in applied:
        forces[body] += wrench
    return forces


def body_force_turning(tree, q_hinge, wrenches, placements=None):
    """How each body's external wrench changes as the body turns, nb x 6 x 3 (or None).

    A wrench held constant in root axes about a link origin keeps its root-axes
    value while the body turns by a small body-axes rotation ``theta``; its body-
    frame expression (:func:`body_forces`) changes by ``T(i) @ theta``, with
    ``T = [[f x], [n x + sum_k (f_k x)(r_k x)]]`` (``f``, ``n`` the body-frame
    wrench, ``f_k`` each force applied at ``r_k`` in body axes).  Translating the
    body changes nothing: the point of application moves with it.
    """
    applied = _applied_wrenches(tree, q_hinge, wrenches, placements)
    if applied is None:
        return None
    turning = np.zeros((tree.nb, 6, 3))
    for body, wrench, arm in applied:
        force_skew = skew(wrench[:3])
        turning[body][:3] += force_skew
        turning[body][3:] += skew(wrench[3:]) + force_skew @ skew(arm)
    return turning


def _applied_wrenches(tree, q_hinge, wrenches, placements):
    """``(body, body-frame wrench about the body origin, link origin in body axes)`` per
    wrench, or None when there is none."""
    if wrenches is None:
        return None
    if not isinstance(wrenches, dict):
        raise InvalidInputError("wrenches must map link names to 6-vectors [f; t]")
    if not wrenches:
        return None
    if placements is None:
        placements = body_placements(tree, q_hinge)
    return [applied_wrench(tree, placements, tree.frame(link),
                           as_vector(f"wrench on {link!r}", wrench, 6))
            for link, wrench in wrenches.items()]


def applied_wrench(tree, placements, frame, wrench):
    """``(body, body-frame wrench about the body origin, link origin in body axes)`` of
    ``wrench`` (root axes, about the origin of link ``frame``) at body ``placements``."""
    rotations, translations = placements
    _, point = frame_placement(tree, placements, frame)
    return (frame.body, wrench_in_frame(wrench, point, rotations[frame.body],
                                        translations[frame.body]), frame.translation)
