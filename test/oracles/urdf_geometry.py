"""Rigid-body geometry read straight from URDF text with the standard library's
``xml.etree`` (never with this project's parser): origins, rpy rotations, link
inertias, and the sum of inertias riding on one body.  Shared by the oracles."""
import numpy as np


def floats(text, default):
    return np.array([float(x) for x in text.split()]) if text else np.array(default, dtype=float)


def rpy_matrix(rpy):
    roll, pitch, yaw = rpy
    cr, sr, cp, sp, cy, sy = (np.cos(roll), np.sin(roll), np.cos(pitch), np.sin(pitch),
                              np.cos(yaw), np.sin(yaw))
    rx = np.array([[1, 0, 0], [0, cr, -sr], [0, sr, cr]])
    ry = np.array([[cp, 0, sp], [0, 1, 0], [-sp, 0, cp]])
    rz = np.array([[cy, -sy, 0], [sy, cy, 0], [0, 0, 1]])
    return rz @ ry @ rx


def origin_transform(element):
    """4x4 transform of an URDF <origin> child (identity when absent)."""
    transform = np.eye(4)
    tag = element.find("origin") if element is not None else None
    if tag is not None:
        transform[:3, :3] = rpy_matrix(floats(tag.get("rpy"), [0, 0, 0]))
        transform[:3, 3] = floats(tag.get("xyz"), [0, 0, 0])
    return transform


def inverse_transform(transform):
    result = np.eye(4)
    result[:3, :3] = transform[:3, :3].T
    result[:3, 3] = -transform[:3, :3].T @ transform[:3, 3]
    return result


def link_inertia(link):
    """(mass, com, inertia about com) in the link frame, or None without <inertial>."""
    inertial = link.find("inertial")
    if inertial is None:
        return None
    placement = origin_transform(inertial)
    mass = float(inertial.find("mass").get("value"))
    tag = inertial.find("inertia")
    get = lambda key: float(tag.get(key, 0.0))  # noqa: E731
    principal = np.array([[get("ixx"), get("ixy"), get("ixz")],
                          [get("ixy"), get("iyy"), get("iyz")],
                          [get("ixz"), get("iyz"), get("izz")]])
    rotation = placement[:3, :3]
    return mass, placement[:3, 3], rotation @ principal @ rotation.T


def combine_inertias(parts):
    """Sum of (mass, com, inertia about com) given in one frame: one (mass, com, Ic)."""
    mass = sum(m for m, _, _ in parts)
    if mass == 0.0:
        return 0.0, np.zeros(3), np.zeros((3, 3))
    com = sum(m * c for m, c, _ in parts) / mass
    inertia = np.zeros((3, 3))
    for m, c, ic in parts:
        d = c - com
        inertia += ic + m * (d @ d * np.eye(3) - np.outer(d, d))
    return mass, com, inertia
