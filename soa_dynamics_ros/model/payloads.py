"""Payloads: rigid bodies attached to a link of a :class:`~.robot_model.RobotModel`.

A payload adds its spatial inertia, moved into its link's body frame, to that
body's.  The model keeps the URDF's inertias untouched and rebuilds its tree view
from them and every payload after each change, so that detaching restores them
exactly.
"""
import numpy as np

from ..errors import InvalidInputError
from ..multibody.spatial import motion_transform, spatial_inertia, transformed_inertia
from ..validation import MAX_PAYLOAD_COM, as_float_array, as_vector, payload_problems


def payload(tree, name, link, mass, com, inertia):
    """The validated payload ``(link, mass, com, inertia, body, contribution)``: its
    arguments as :meth:`RobotModel.attach_payload` takes them, its link's body and
    the spatial inertia it adds to that body."""
    if not isinstance(name, str) or not name:
        raise InvalidInputError("a payload needs a non-empty name")
    frame = tree.frame(link)
    mass = as_vector(f"payload {name!r} mass", [mass], 1)[0]
    com = as_vector(f"payload {name!r} com", com, 3)
    if not np.all(np.abs(com) <= MAX_PAYLOAD_COM):
        raise InvalidInputError(f"payload {name!r} com must be within +-{MAX_PAYLOAD_COM:g} m "
                                f"of the link origin in each axis, not {com.tolist()}")
    inertia = np.zeros((3, 3)) if inertia is None else as_float_array(
        f"payload {name!r} inertia", inertia, "3x3 matrix")
    if inertia.shape != (3, 3) or not np.all(np.isfinite(inertia)):
        raise InvalidInputError(f"payload {name!r} inertia must be a finite 3x3 matrix")
    problems = payload_problems(mass, inertia)
    if problems:
        raise InvalidInputError(f"payload {name!r}: " + "; ".join(problems))
    contribution = transformed_inertia(motion_transform(frame.rotation, frame.translation),
                                       spatial_inertia(mass, com, inertia))
    return link, float(mass), com, inertia, frame.body, contribution


def loaded_tree(parsed_tree, payloads):
    """A view of ``parsed_tree`` with every payload of ``payloads`` (name -> payload)."""
    inertia = parsed_tree.body_inertia.copy()
    for *_, body, contribution in payloads.values():
        inertia[body] += contribution
    return parsed_tree.with_inertia(inertia)
