"""External forces as the recursions take them: gravity as a root acceleration, link
wrenches as body-frame wrenches."""
import numpy as np

from ..errors import InvalidInputError
from ..multibody.spatial import wrench_in_frame
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
    if wrenches is None:
        return None
    if not isinstance(wrenches, dict):
        raise InvalidInputError("wrenches must map link names to 6-vectors [f; t]")
    if not wrenches:
        return None
    if placements is None:
        placements = body_placements(tree, q_hinge)
    rotations, translations = placements
    forces = np.zeros((tree.nb, 6))
    for link, wrench in wrenches.items():
        frame = tree.frame(link)
        wrench = as_vector(f"wrench on {link!r}", wrench, 6)
        _, point = frame_placement(tree, placements, frame)
        forces[frame.body] += wrench_in_frame(wrench, point, rotations[frame.body],
                                              translations[frame.body])
    return forces
