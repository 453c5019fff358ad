"""The recursions called directly, in hinge space, with Pinocchio beside them.

``HingeSpace`` is the one place where this folder calls library internals (the body
tree and the algorithm functions), so that a change of their signatures is adapted
here alone.  Hinge vectors here leave out the root's unused entry: one entry per
moving URDF joint, mimic joints included as independent hinges (the mimic map is
the tree's business, tested in test/multibody).  The Pinocchio side is built from the
same URDF with its <mimic> tags removed, so it has the same independent joints.
"""
import re

import numpy as np
import pytest

from support.robot_generator import random_tree_urdf
from support.robots import SHIPPED_ROBOTS, shipped_urdf
from soa_dynamics_ros.algorithms import aligned_frames, root_axes_derivatives
from soa_dynamics_ros.algorithms.derivatives import (gravity_derivatives,
                                                     inverse_dynamics_derivatives)
from soa_dynamics_ros.algorithms.forward_dynamics import forward_dynamics
from soa_dynamics_ros.algorithms.inverse_dynamics import inverse_dynamics
from soa_dynamics_ros.algorithms.kinematics import (body_motion, body_placements, frame_placement,
                                                    hinge_jacobian, parent_to_child_transforms)
from soa_dynamics_ros.algorithms.mass_matrix import mass_matrix
from soa_dynamics_ros.algorithms.mixed_dynamics import mixed_dynamics
from soa_dynamics_ros.description.urdf import parse_urdf
from soa_dynamics_ros.multibody.spatial import homogeneous
from soa_dynamics_ros.multibody.tree import BodyTree

GRAVITY = (0.0, 0.0, -9.81)


class HingeSpace:
    """The algorithm functions on one robot's tree; vectors have one entry per hinge."""

    def __init__(self, urdf_xml):
        self.tree = BodyTree(parse_urdf(urdf_xml))
        self.joint_names = [joint.name for joint in self.tree.joints]  # body 1, 2, ... order
        self.dof = self.tree.nb - 1   # as a model's, so support.numerics.random_states fits
        self.frame_names = list(self.tree.frames)   # and random_wrenches

    @staticmethod
    def _hinge(values):
        return np.concatenate(([0.0], values))

    @staticmethod
    def _root_acceleration(gravity):
        # Accelerating the root upwards by g is gravity acting on every body.
        return np.concatenate((-np.asarray(gravity, dtype=float), np.zeros(3)))

    def _body_forces(self, forces):
        """Per-hinge wrenches (n x 6, body axes about the body origin) with the root's row."""
        return None if forces is None else np.vstack((np.zeros(6), forces))

    def inverse_dynamics(self, q, qd, qdd, body_forces=None, gravity=GRAVITY):
        return inverse_dynamics(self.tree, self._hinge(q), self._hinge(qd), self._hinge(qdd),
                                self._root_acceleration(gravity), self._body_forces(body_forces))[1:]

    def inverse_dynamics_derivatives(self, q, qd, qdd, body_forces=None, gravity=GRAVITY):
        dtau_dq, dtau_dqd = inverse_dynamics_derivatives(
            self.tree, self._hinge(q), self._hinge(qd), self._hinge(qdd),
            self._root_acceleration(gravity), self._body_forces(body_forces))
        return dtau_dq[1:, 1:], dtau_dqd[1:, 1:]

    def gravity_derivatives(self, q, gravity=GRAVITY):
        return gravity_derivatives(self.tree, self._hinge(q),
                                   self._root_acceleration(gravity))[1:, 1:]

    def root_axes_derivatives(self, q, qd, qdd, gravity=GRAVITY):
        """The closed form the kernels are traced from: ``(dtau/dq, dtau/dqd, dg/dq)``."""
        root_acceleration = self._root_acceleration(gravity)
        dtau_dq, dtau_dqd = root_axes_derivatives.inverse_dynamics_derivatives(
            self.tree, self._hinge(q), self._hinge(qd), self._hinge(qdd), root_acceleration)
        dg_dq = root_axes_derivatives.gravity_derivatives(self.tree, self._hinge(q),
                                                          root_acceleration)
        return dtau_dq[1:, 1:], dtau_dqd[1:, 1:], dg_dq[1:, 1:]

    def root_axes_split(self, q, qd, qdd, gravity=GRAVITY):
        """The closed form in the two steps the forward derivative kernels take: h at
        ``qdd = 0`` from its own pass, then the derivatives once ``qdd`` is added:
        ``(h, dtau/dq, dtau/dqd)``."""
        bias, terms = root_axes_derivatives.terms_without_acceleration(
            self.tree, self._hinge(q), self._hinge(qd), self._root_acceleration(gravity))
        dtau_dq, dtau_dqd = root_axes_derivatives.derivatives_at(self.tree, terms,
                                                                 self._hinge(qdd))
        return bias[1:], dtau_dq[1:, 1:], dtau_dqd[1:, 1:]

    def mass_matrix(self, q):
        return mass_matrix(self.tree, self._hinge(q))[1:, 1:]

    def aligned_mass_matrix(self, q):
        """M by the compiled form in frames at each body's origin with root axes."""
        return aligned_frames.mass_matrix(self.tree, self._hinge(q))[1:, 1:]

    def aligned_inverse_dynamics(self, q, qd, qdd=None, wrenches=None, gravity=GRAVITY):
        """Torques by the same form; ``qdd`` None: h; ``wrenches``: {link: [f; t]}, root
        axes about the link origin."""
        return aligned_frames.inverse_dynamics(
            self.tree, self._hinge(q), self._hinge(qd), None if qdd is None else self._hinge(qdd),
            self._root_acceleration(gravity),
            [(self.tree.frames[link], wrench) for link, wrench in (wrenches or {}).items()])[1:]

    def forward_dynamics(self, q, qd, tau, body_forces=None, gravity=GRAVITY):
        return forward_dynamics(self.tree, self._hinge(q), self._hinge(qd), self._hinge(tau),
                                self._root_acceleration(gravity),
                                self._body_forces(body_forces))[1:]

    def mixed_dynamics(self, q, qd, qdd, tau, prescribed):
        qdd, tau = mixed_dynamics(self.tree, self._hinge(q), self._hinge(qd), self._hinge(qdd),
                                  self._hinge(tau), np.concatenate(([False], prescribed)),
                                  self._root_acceleration(GRAVITY))
        return qdd[1:], tau[1:]

    def frame_pose(self, q, link):
        placements = body_placements(self.tree, self._hinge(q))
        return homogeneous(*frame_placement(self.tree, placements, self.tree.frames[link]))

    def frame_jacobian(self, q, link):
        placements = body_placements(self.tree, self._hinge(q))
        return hinge_jacobian(self.tree, placements, self.tree.frames[link])[:, 1:]

    def body_velocities(self, q, qd):
        """Spatial velocity of every moving body, body axes ([v; w] at the body origin)."""
        transforms = parent_to_child_transforms(self.tree, self._hinge(q))
        velocity, _ = body_motion(self.tree, transforms, self._hinge(qd), np.zeros(self.tree.nb),
                                  np.zeros(6))
        return velocity[1:]

    def body_inertias(self):
        """Spatial inertia of every moving body about its origin (fixed links merged)."""
        return self.tree.body_inertia[1:]


def without_mimic(urdf_xml):
    return re.sub(r"<mimic\b[^>]*/>", "", urdf_xml)


SOURCES = ([pytest.param(shipped_urdf(name), id=name) for name in SHIPPED_ROBOTS]
           + [pytest.param(random_tree_urdf(seed, moving_joints=10), id=f"random{seed}")
              for seed in range(400, 406)])


@pytest.fixture(scope="module", params=SOURCES)
def robot(request):
    """``(HingeSpace, PinocchioReference)`` of one shipped or generated robot."""
    from oracles.pinocchio_reference import PinocchioReference   # skips without Pinocchio
    source = request.param
    xml = open(source).read() if source.endswith(".urdf") else source
    hinges = HingeSpace(xml)
    return hinges, PinocchioReference(without_mimic(xml), hinges.joint_names)
