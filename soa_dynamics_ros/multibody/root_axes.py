"""Spatial vectors and inertias in root axes, kept as their 3-vector parts.

The vocabulary of the recursions that keep every quantity in root axes
(:mod:`~soa_dynamics_ros.algorithms.root_axes_derivatives`,
:mod:`~soa_dynamics_ros.algorithms.aligned_frames`): with no rotations between
bodies, a 6x6 product is a few cross products, and written so the kernels traced
from them carry no multiplications by structural zeros.  Orderings are those of
:mod:`.spatial`: motions ``[linear; angular]``, forces ``[force; moment]``.
"""
import numpy as np

from .spatial import first_moment, mirror_upper


def cross(a, b):
    return np.array([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2],
                     a[0] * b[1] - a[1] * b[0]])


def motion_cross(v, m):
    """``v x m`` of motion vectors."""
    return np.concatenate((cross(v[3:], m[:3]) + cross(v[:3], m[3:]), cross(v[3:], m[3:])))


def force_cross(v, f):
    """``v x* f``: motion ``v`` acting on force ``f``."""
    return np.concatenate((cross(v[3:], f[:3]), cross(v[3:], f[3:]) + cross(v[:3], f[:3])))


def motion_to_root(rotation, translation, motion):
    """A motion in the axes of a body placed at ``(rotation, translation)``, about its
    origin, in root axes about the root origin."""
    angular = rotation @ motion[3:]
    return np.concatenate((rotation @ motion[:3] + cross(translation, angular), angular))


class Inertia:
    """A spatial inertia ``[[m 1, -[h]x], [[h]x, J]]`` about some point, as its mass m,
    first moment h and rotational inertia J about that point."""

    def __init__(self, mass, moment, rotational):
        self.mass, self.moment, self.rotational = mass, moment, rotational

    @classmethod
    def turned(cls, inertia, rotation):
        """A body inertia (6x6, body axes, about its origin) in root axes, about the same
        origin."""
        return cls(inertia[0, 0],
                   rotation @ first_moment(inertia),
                   mirror_upper(rotation @ inertia[3:, 3:] @ rotation.T))

    @classmethod
    def in_root(cls, inertia, rotation, translation):
        """A body inertia (body axes, about its origin) in root axes about the root origin,
        the body placed at ``(rotation, translation)``."""
        return cls.turned(inertia, rotation).shifted(translation)

    def shifted(self, offset):
        """The same inertia about the point ``offset`` behind its own: ``J - m [d]x[d]x
        - [d]x[h]x - [h]x[d]x``, written as ``J + 2 (d.u) 1 - d u^T - u d^T`` with
        ``u = h + m d / 2`` and the lower triangle taken from the upper: a fifth fewer
        operations traced, and placing inertias is half of M's on a robot whose joint
        placements do not fold (iCub's M in root axes: 10,031 -> 8,961)."""
        d, m = offset, self.mass
        u = self.moment + (0.5 * m) * d
        rotational = mirror_upper(self.rotational + (2.0 * (d @ u)) * np.eye(3)
                                  - np.outer(d, u) - np.outer(u, d))
        return Inertia(m, self.moment + m * d, rotational)

    def __add__(self, other):
        return Inertia(self.mass + other.mass, self.moment + other.moment,
                       self.rotational + other.rotational)

    def apply(self, x):
        return np.concatenate((self.mass * x[:3] - cross(self.moment, x[3:]),
                               cross(self.moment, x[:3]) + self.rotational @ x[3:]))
