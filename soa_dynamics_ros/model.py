"""``RobotModel``: the public face of the computational layer.

It validates arguments, maps between generalized coordinates (independent
joints) and hinge coordinates (every moving joint, mimic joints included), and
calls the recursions in :mod:`soa_dynamics_ros.algorithms`.

Conventions (stated once; README repeats them):

* ``q``, ``qd``, ``qdd``, ``tau`` are ordered as :attr:`RobotModel.joint_names`
  (independent joints, depth-first model order).  A continuous joint is one angle.
* Gravity is the vector :attr:`RobotModel.gravity` in root-link axes, default
  ``[0, 0, -9.81]``: the gravitational acceleration itself, not its reaction.
* A wrench is ``[fx, fy, fz, tx, ty, tz]`` in root-link axes, about the origin
  of the link it is applied to, acting *on* the robot.
* Jacobians and spatial velocities are ``[v; w]``: velocity of the frame
  origin, then angular velocity, both in root-link axes.
* Inverse dynamics returns ``tau`` with ``M qdd + h = tau + sum J_i^T w_i``.
"""
import numpy as np

from . import algorithms, constrained
from .algorithms.forward_dynamics import forward_dynamics as _articulated_body
from .algorithms.inverse_dynamics import inverse_dynamics as _newton_euler
from .algorithms.kinematics import body_placements, frame_placement, hinge_jacobian
from .algorithms.mass_matrix import mass_matrix as _composite_body
from .errors import InvalidInputError, SingularDynamicsError, UnknownNameError
from .spatial import (homogeneous, inertia_parameters, motion_transform, spatial_inertia,
                      wrench_in_frame)
from .subgraph import Subgraph
from .tree import BodyTree
from .urdf import parse_urdf
from .validation import as_vector, check_link_inertias, payload_problems

DEFAULT_GRAVITY = (0.0, 0.0, -9.81)

__all__ = ["RobotModel", "algorithms"]


class RobotModel:
    """A fixed-base rigid multibody tree built from a URDF."""

    def __init__(self, description, strict_inertia=False):
        check_link_inertias(description, strict_inertia)
        self.description = description
        self.tree = BodyTree(description)
        self._gravity = np.array(DEFAULT_GRAVITY)
        self._joint_index = {name: i for i, name in enumerate(self.tree.joint_names)}
        self._payloads = {}
        self._all_joints = constrained.select_joints(self)

    @classmethod
    def from_urdf(cls, source, strict_inertia=False):
        """Build from a URDF/xacro file path or XML string.

        ``strict_inertia=True`` turns inertia warnings (zero mass, not positive
        definite, triangle inequality) into :class:`~soa_dynamics_ros.errors.InertiaError`.
        """
        return cls(parse_urdf(source), strict_inertia)

    # ------------------------------------------------------------------ structure
    @property
    def name(self):
        return self.tree.name

    @property
    def joint_names(self):
        """Independent joints, in the order of every q/qd/qdd/tau vector."""
        return list(self.tree.joint_names)

    @property
    def frame_names(self):
        """Every URDF link, addressable as a frame."""
        return list(self.tree.frames)

    @property
    def dof(self):
        return self.tree.dof

    @property
    def joints(self):
        """Metadata (type, limits, mimic) of every moving joint, mimic joints included."""
        return list(self.tree.joints)

    @property
    def effort_limits(self):
        """URDF effort limits of the independent joints (inf where none is given)."""
        by_name = {joint.name: joint.effort for joint in self.tree.joints}
        return np.array([by_name[name] for name in self.tree.joint_names])

    @property
    def gravity(self):
        return self._gravity.copy()

    @gravity.setter
    def gravity(self, value):
        self._gravity = as_vector("gravity", value, 3)

    def joint_index(self, name):
        try:
            return self._joint_index[name]
        except KeyError:
            raise UnknownNameError("joint", name, self.tree.joint_names) from None

    def _frame(self, name):
        try:
            return self.tree.frames[name]
        except (KeyError, TypeError):
            raise UnknownNameError("frame", name, self.tree.frames) from None

    # ------------------------------------------------------------------ coordinates
    def _vector(self, name, value):
        return as_vector(name, value, self.tree.dof)

    def _hinge_positions(self, q):
        return self.tree.hinge_from_joint @ self._vector("q", q) + self.tree.hinge_offset

    def _hinge_rates(self, name, rates):
        return self.tree.hinge_from_joint @ self._vector(name, rates)

    def _joint_forces(self, hinge_forces):
        """Fold hinge torques onto independent joints: tau = G^T tau_hinge."""
        return self.tree.hinge_from_joint.T @ hinge_forces

    def _root_acceleration(self):
        # Accelerating the root upwards by g is equivalent to gravity on every body.
        return np.concatenate((-self._gravity, np.zeros(3)))

    def _body_forces(self, q_hinge, wrenches):
        """External link wrenches (root axes, about link origin) as body-frame wrenches."""
        if wrenches is None:
            return None
        if not isinstance(wrenches, dict):
            raise InvalidInputError("wrenches must map link names to 6-vectors [f; t]")
        if not wrenches:
            return None
        placements = body_placements(self.tree, q_hinge)
        rotations, translations = placements
        forces = np.zeros((self.tree.nb, 6))
        for link, wrench in wrenches.items():
            frame = self._frame(link)
            wrench = as_vector(f"wrench on {link!r}", wrench, 6)
            _, point = frame_placement(self.tree, placements, frame)
            forces[frame.body] += wrench_in_frame(wrench, point, rotations[frame.body],
                                                  translations[frame.body])
        return forces

    # ------------------------------------------------------------------ dynamics
    def inverse_dynamics(self, q, qd, qdd, wrenches=None):
        """Joint torques producing ``qdd``: ``M qdd + h = tau + sum J_i^T w_i``."""
        q_hinge = self._hinge_positions(q)
        hinge_torques = _newton_euler(
            self.tree, q_hinge, self._hinge_rates("qd", qd), self._hinge_rates("qdd", qdd),
            self._root_acceleration(), self._body_forces(q_hinge, wrenches))
        return self._joint_forces(hinge_torques)

    def gravity_torques(self, q):
        """Torques that hold the robot still against gravity, g(q)."""
        zeros = np.zeros(self.tree.dof)
        return self.inverse_dynamics(q, zeros, zeros)

    def bias_torques(self, q, qd):
        """Coriolis, centrifugal and gravity torques h(q, qd)."""
        return self.inverse_dynamics(q, qd, np.zeros(self.tree.dof))

    def mass_matrix(self, q):
        """Joint-space mass matrix M(q), dof x dof, symmetric."""
        g = self.tree.hinge_from_joint
        return g.T @ _composite_body(self.tree, self._hinge_positions(q)) @ g

    def forward_dynamics(self, q, qd, tau, wrenches=None):
        """Joint accelerations: solves ``M qdd + h = tau + sum J_i^T w_i``.

        Articulated-body recursion (O(N)); robots with mimic joints couple
        hinges outside the tree structure and are solved through M instead.
        """
        tau = self._vector("tau", tau)
        if not self.tree.has_mimic:
            q_hinge = self._hinge_positions(q)
            hinge_torques = self.tree.hinge_from_joint @ tau
            qdd_hinge = _articulated_body(
                self.tree, q_hinge, self._hinge_rates("qd", qd), hinge_torques,
                self._root_acceleration(), self._body_forces(q_hinge, wrenches))
            return self.tree.hinge_from_joint.T @ qdd_hinge
        bias = self.inverse_dynamics(q, qd, np.zeros(self.tree.dof), wrenches)
        mass = self.mass_matrix(q)
        try:
            factor = np.linalg.cholesky(mass)
        except np.linalg.LinAlgError:
            raise SingularDynamicsError("the mass matrix is singular (a massless body on a "
                                        "moving joint has no forward dynamics)") from None
        return np.linalg.solve(factor.T, np.linalg.solve(factor, tau - bias))

    # ------------------------------------------------------------------ batches (trajectories)
    def _samples(self, name, value, count=None):
        try:
            samples = np.asarray(value, dtype=float)
        except (TypeError, ValueError):
            raise InvalidInputError(f"{name} must be a numeric array of shape (N, {self.dof})") from None
        if samples.ndim != 2 or samples.shape[1] != self.tree.dof or (
                count is not None and samples.shape[0] != count):
            expected = f"({'N' if count is None else count}, {self.tree.dof})"
            raise InvalidInputError(f"{name} must have shape {expected}, got {samples.shape}")
        if not np.all(np.isfinite(samples)):
            rows = sorted(set(np.nonzero(~np.isfinite(samples))[0].tolist()))
            raise InvalidInputError(f"{name} holds NaN or inf in sample(s) {rows[:10]}")
        return samples

    def inverse_dynamics_batch(self, Q, QD, QDD):
        """Inverse dynamics of N samples: arrays of shape (N, dof) in, (N, dof) out."""
        Q = self._samples("Q", Q)
        QD, QDD = self._samples("QD", QD, len(Q)), self._samples("QDD", QDD, len(Q))
        return np.array([self.inverse_dynamics(*sample) for sample in zip(Q, QD, QDD)]).reshape(Q.shape)

    def gravity_torques_batch(self, Q):
        Q = self._samples("Q", Q)
        return np.array([self.gravity_torques(q) for q in Q]).reshape(Q.shape)

    def forward_dynamics_batch(self, Q, QD, TAU):
        Q = self._samples("Q", Q)
        QD, TAU = self._samples("QD", QD, len(Q)), self._samples("TAU", TAU, len(Q))
        return np.array([self.forward_dynamics(*sample) for sample in zip(Q, QD, TAU)]).reshape(Q.shape)

    # ------------------------------------------------------------------ task space and constraints
    def task_space_inertia(self, q, frame, part="full", damping=None, return_info=False):
        """Operational-space inertia Lambda of a frame origin (``[v; w]`` rows, root axes).

        ``frame`` may be a list of frames: the coupled Lambda of several
        end-effectors, blocks in list order.  ``part`` is ``'full'`` (6x6 per
        frame), ``'translational'`` or ``'rotational'`` (3x3 per frame).  Where
        the joints cannot move the frame in every direction of ``part`` this
        raises :class:`SingularDynamicsError` unless ``damping`` > 0 is given:
        then Lambda = (Lambda^-1 + damping I)^-1.  ``return_info=True`` returns a
        :class:`~soa_dynamics_ros.constrained.TaskSpaceInertia` with Lambda^-1,
        its condition number and rank.
        """
        return constrained.task_space_inertia(self, self._all_joints, q, frame, part, damping,
                                              return_info)

    def hybrid_dynamics(self, q, qd, constraints, tau=None, wrenches=None):
        """Constrained (Popov-Vereshchagin) hybrid dynamics, generalized to trees.

        ``constraints``: list of ``(frame, alpha, beta)``; ``alpha`` is 6 x m
        (unit constraint wrenches [f; t], root axes, about the frame origin) and
        the constraint is ``alpha^T a = beta`` on the classical acceleration
        ``a = [dv/dt; dw/dt]`` of the frame origin (gravity not included:
        ``alpha = I, beta = 0`` holds the frame still).  Returns a
        :class:`~soa_dynamics_ros.constrained.HybridDynamics` with ``qdd``, ``nu``
        (constraint wrench on the robot = ``alpha @ nu``) and
        ``constraint_torques = J^T alpha nu``, so that
        ``M qdd + h = tau + constraint_torques + sum J_i^T w_i``.
        """
        return constrained.hybrid_dynamics(self, self._all_joints, q, qd, constraints, tau,
                                           wrenches)

    def mixed_dynamics(self, q, qd, qdd, tau, prescribed, wrenches=None):
        """``(qdd_all, tau_all)``: joints in ``prescribed`` take their ``qdd``, the rest their ``tau``."""
        return constrained.mixed_dynamics(self, q, qd, qdd, tau, prescribed, wrenches)

    def subgraph(self, joint_names):
        """A view that moves only ``joint_names``; the other joints are locked where ``q`` puts them."""
        return Subgraph(self, joint_names)

    # ------------------------------------------------------------------ payloads
    @property
    def payloads(self):
        """Attached payloads: ``{name: (link, mass, com, inertia)}``."""
        return {name: payload[:4] for name, payload in self._payloads.items()}

    def attach_payload(self, name, link, mass, com=(0.0, 0.0, 0.0), inertia=None):
        """Rigidly attach a body to ``link`` (replacing a payload of the same name).

        ``com`` is in the link frame, ``inertia`` the 3x3 inertia about the COM in
        link-frame axes (default: a point mass).  Every algorithm sees it at once.
        """
        if not isinstance(name, str) or not name:
            raise InvalidInputError("a payload needs a non-empty name")
        frame = self._frame(link)
        mass = as_vector(f"payload {name!r} mass", [mass], 1)[0]
        com = as_vector(f"payload {name!r} com", com, 3)
        inertia = np.zeros((3, 3)) if inertia is None else np.asarray(inertia, dtype=float)
        if inertia.shape != (3, 3) or not np.all(np.isfinite(inertia)):
            raise InvalidInputError(f"payload {name!r} inertia must be a finite 3x3 matrix")
        problems = payload_problems(mass, inertia)
        if problems:
            raise InvalidInputError(f"payload {name!r}: " + "; ".join(problems))
        x = motion_transform(frame.rotation, frame.translation)
        contribution = x.T @ spatial_inertia(mass, com, inertia) @ x
        self._payloads[name] = (link, float(mass), com, inertia, frame.body, contribution)
        self._update_body_inertias()

    def detach_payload(self, name):
        if name not in self._payloads:
            raise UnknownNameError("payload", name, self._payloads)
        del self._payloads[name]
        self._update_body_inertias()

    def _update_body_inertias(self):
        # Rebuilt from the URDF values each time, so detaching restores them exactly.
        inertia = self.tree.urdf_inertia.copy()
        for *_, body, contribution in self._payloads.values():
            inertia[body] += contribution
        self.tree.body_inertia = inertia

    # ------------------------------------------------------------------ mass properties
    @property
    def total_mass(self):
        """Mass of every moving body and of the root link's own inertials."""
        return float(self.tree.body_inertia[:, 0, 0].sum())

    def center_of_mass(self, q):
        """Centre of mass of the whole robot (root included), root-link axes."""
        rotations, translations = body_placements(self.tree, self._hinge_positions(q))
        weighted = np.zeros(3)
        for body, inertia in enumerate(self.tree.body_inertia):
            mass, com, _ = inertia_parameters(inertia)
            weighted += mass * (translations[body] + rotations[body] @ com)
        return weighted / self.total_mass if self.total_mass > 0 else weighted

    # ------------------------------------------------------------------ kinematics
    def frame_pose(self, q, frame):
        """4x4 pose of a link frame in the root link frame."""
        target = self._frame(frame)
        placements = body_placements(self.tree, self._hinge_positions(q))
        return homogeneous(*frame_placement(self.tree, placements, target))

    def frame_poses(self, q):
        """Poses of every link frame, computed in one scatter: ``{name: 4x4}``."""
        placements = body_placements(self.tree, self._hinge_positions(q))
        return {name: homogeneous(*frame_placement(self.tree, placements, frame))
                for name, frame in self.tree.frames.items()}

    def jacobian(self, q, frame):
        """6 x dof Jacobian of the frame origin, rows ``[v; w]`` in root-link axes."""
        target = self._frame(frame)
        placements = body_placements(self.tree, self._hinge_positions(q))
        return hinge_jacobian(self.tree, placements, target) @ self.tree.hinge_from_joint
