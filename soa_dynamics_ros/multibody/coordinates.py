"""The map from generalized coordinates ``q`` to hinge coordinates: mimic joints live here.

Every moving body ``i`` has one hinge coordinate; ``q`` holds the independent
joints only.  Hinge ``i`` follows one coordinate, its *master*::

    q_hinge[i] = multiplier[i] * q[master[i]] + offset[i]

An independent joint is its own master with multiplier 1 and offset 0; a mimic
joint follows the root of its mimic chain (chains are composed when the map is
built).  In operator form ``q_hinge = G q + offset``, so rates and
accelerations map by ``G`` and generalized forces fold back by ``G^T``.  The
map is applied from the three per-hinge arrays, never as a dense nb x dof
matrix (O(n^2) memory on a large tree); without mimic joints it is a slice.

``master[i] == -1`` marks a hinge that follows nothing: the root (body 0),
and in a :meth:`CoordinateMap.restricted` map the hinges of locked joints.

All methods accept float arrays and the kernel generator's symbolic (object)
arrays alike, and keep the reference's order of additions.
"""
import numpy as np

from .spatial import dtype_of


class CoordinateMap:
    """``q_hinge = multiplier * q[master] + offset`` per hinge (module docstring)."""

    def __init__(self, master, multiplier, offset, dof):
        self.master = np.asarray(master, dtype=int)
        self.multiplier = np.asarray(multiplier, dtype=float)
        self.offset = np.asarray(offset, dtype=float)
        self.dof = dof
        self.nb = len(self.master)
        # Gathers read q padded with one zero: a master of -1 picks that zero.
        self._gather = np.where(self.master < 0, dof, self.master)
        self._is_slice = (self.nb == dof + 1 and np.array_equal(self.master[1:], np.arange(dof))
                          and np.all(self.multiplier[1:] == 1.0) and not self.offset.any())

    @classmethod
    def from_mimic_chains(cls, joints):
        """The map of ``joints``: (name, mimic) per hinge 1..nb-1, mimic ``None`` or
        ``(master name, multiplier, offset)``.  Chains must be acyclic (the
        description reader checks it)."""
        mimic_of = dict(joints)
        independent = [name for name, mimic in joints if mimic is None]
        column = {name: k for k, name in enumerate(independent)}
        master, multiplier, offset = [-1], [0.0], [0.0]
        for name, _ in joints:
            scale, shift = 1.0, 0.0
            while mimic_of[name] is not None:
                # q_name = m q_next + o, with q_next itself affine in the root master.
                name, m, o = mimic_of[name]
                shift += scale * o
                scale *= m
            master.append(column[name])
            multiplier.append(scale)
            offset.append(shift)
        return cls(master, multiplier, offset, len(independent)), independent

    @property
    def couples_hinges(self):
        """True when one coordinate drives several hinges (mimic joints).

        The O(N) recursions treat each hinge as independent; a map that couples
        hinges needs the dense joint-space algebra (:mod:`soa_dynamics_ros.model.dense`).
        """
        masters = self.master[self.master >= 0]
        return len(np.unique(masters)) < len(masters)

    def free_hinges(self):
        """Per body: is its hinge moved by a coordinate of this map?"""
        return self.master >= 0

    def hinges_following(self, selected):
        """Per body: does its hinge follow a coordinate where the bool mask ``selected`` is set?"""
        return np.append(selected, False)[self._gather]

    def restricted(self, columns):
        """The map onto the coordinates ``columns`` only (the others locked, rate 0).

        It maps rates, accelerations and forces of a joint subset; positions
        always come from the whole map (locked joints keep their ``q``).
        """
        position = np.full(self.dof + 1, -1)
        position[columns] = np.arange(len(columns))
        return CoordinateMap(position[self._gather], self.multiplier, np.zeros(self.nb),
                             len(columns))

    def hinge_coordinate(self, hinge):
        """``(master, multiplier, offset)`` of one hinge: q_hinge = multiplier * q[master] + offset."""
        return int(self.master[hinge]), float(self.multiplier[hinge]), float(self.offset[hinge])

    # ------------------------------------------------------------------ q -> hinges
    def hinge_positions(self, q):
        """q_hinge = G q + offset."""
        if self._is_slice:
            return np.concatenate(([0.0], q))
        return self.multiplier * self._padded(q)[self._gather] + self.offset

    def hinge_rates(self, rates):
        """qd_hinge = G qd (also accelerations, and torques fanned out to hinges)."""
        if self._is_slice:
            return np.concatenate(([0.0], rates))
        return self.multiplier * self._padded(rates)[self._gather]

    # ------------------------------------------------------------------ hinges -> q
    def joint_forces(self, hinge_forces):
        """tau = G^T tau_hinge (also folds hinge accelerations when G is a slice)."""
        return self._fold(hinge_forces)

    def joint_columns(self, hinge_matrix):
        """A G for any matrix A with one column per hinge (a Jacobian)."""
        return self._fold(hinge_matrix)

    def joint_mass_matrix(self, hinge_mass):
        """G^T M G; when G is a slice, a view of ``hinge_mass`` (no copy of n x n)."""
        if self._is_slice:
            return hinge_mass[1:, 1:]
        return self._fold(self._fold(hinge_mass.T).T)

    def _padded(self, values):
        padded = np.zeros(len(values) + 1, dtype=dtype_of(values))
        padded[:-1] = values
        padded[-1] = 0.0
        return padded

    def _fold(self, values):
        """Sum the last axis (one entry per hinge) onto coordinates: ``values @ G``."""
        if self._is_slice:
            return values[..., 1:]
        folded = np.zeros(values.shape[:-1] + (self.dof + 1,), dtype=dtype_of(values))
        folded[...] = 0.0
        # add.at is unbuffered: hinges sharing a master add up in hinge order.
        np.add.at(folded, (Ellipsis, self._gather), values * self.multiplier)
        return folded[..., :self.dof]
