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

Compiled kernels in C answer where they can (``kernels=``: ``"auto"``, ``"c"``,
``"generic"``, ``"off"``; :mod:`.kernel_router` says which answers, and
``model.kernels`` manages them); what they decline goes to the numpy path
(:mod:`.reference`, through :mod:`.fallback`), which answers or names the problem.
Arguments are validated the same way on every path.
"""
import functools
import os
import threading

import numpy as np

from .. import algorithms
from ..description.urdf import parse_urdf
from ..description.urdf_objects import description_from_robot
from ..description.xacro import DEFAULT_TIMEOUT as DEFAULT_XACRO_TIMEOUT
from ..errors import InvalidInputError, UnknownNameError, UnsupportedJointError
from ..multibody.spatial import inertia_to_parameters
from ..multibody.tree import BodyTree
from ..validation import as_float_array, as_samples, as_vector, check_link_inertias
from . import constrained, derivatives, fallback, identification, payloads, reference
from . import contacts as contacts_module
from .configuration import ConfigurationSpace
from .evaluation import select_joints
from .kernel_router import (AUTO_COMPILE_AFTER, FAST_KERNELS, KERNEL_MODES, KERNELS_ENV,
                            KernelControls, KernelRouter)
from .subgraph import Subgraph

DEFAULT_GRAVITY = (0.0, 0.0, -9.81)
_NDARRAY = np.ndarray
# Builds a MixedDynamics without its generated __new__, a Python call on a warm compiled path.
_new_mixed_dynamics = tuple.__new__
__all__ = ["RobotModel", "algorithms", "AUTO_COMPILE_AFTER", "FAST_KERNELS", "KERNEL_MODES",
           "KERNELS_ENV"]


class RobotModel(ConfigurationSpace):
    """A fixed-base rigid multibody tree built from a URDF (a floating-base one:
    :class:`~soa_dynamics_ros.model.floating_base.FloatingBaseModel`)."""

    def __init__(self, description, strict_inertia=False, kernels="auto"):
        check_link_inertias(description, strict_inertia)
        self.description = description
        # The parsed robot, never edited; ``tree`` is a view of it with the
        # current inertias (URDF plus payloads), replaced whole when they change.
        self._parsed_tree = BodyTree(description)
        self.tree = self._parsed_tree
        self._gravity = np.array(DEFAULT_GRAVITY)
        self._joint_index = {name: i for i, name in enumerate(self.tree.joint_names)}
        self._payloads = {}
        # Held while payloads or gravity change and while a numpy-path computation
        # reads them, so that each answer (a whole batch included) sees one state.
        # The compiled kernels read one packed parameter array and need no lock.
        # The model layer's modules (constrained, subgraph) take it too.
        self.parameters_lock = threading.RLock()
        self._all_joints = select_joints(self.tree)
        # Kernel dispatch: the mode, the compiled functions and their readiness.
        self._router = KernelRouter(self._parsed_tree, kernels, self._use_router)

    @classmethod
    def from_urdf(cls, source, strict_inertia=False, kernels="auto", package_paths=None,
                  xacro_timeout=DEFAULT_XACRO_TIMEOUT, allow_xacro=True, allow_path=True,
                  floating_base=False):
        """Build from a URDF/xacro file path or XML string.

        ``strict_inertia=True`` turns inertia warnings (zero mass, not positive
        definite, triangle inequality) into :class:`~soa_dynamics_ros.errors.InertiaError`.
        ``kernels``: ``"auto"``, ``"off"``, ``"c"`` or ``"generic"`` (:mod:`.kernel_router`).
        ``package_paths``: directories searched for ROS packages named by
        ``$(find pkg)`` and ``package://pkg/`` when the ament index lacks them.
        ``xacro_timeout``: seconds a xacro expansion may take before it is
        stopped with :class:`~soa_dynamics_ros.errors.URDFError`.
        xacro runs the Python in the description's ``${...}`` with this
        process's rights: for descriptions from untrusted sources pass
        ``allow_xacro=False`` (a description using xacro is refused) and
        ``allow_path=False`` (``source`` is XML text, never opened as a file);
        docs/descriptions.md, "Untrusted descriptions".
        ``source`` may also be a ``urdf_parser_py.urdf.Robot`` (see
        :mod:`soa_dynamics_ros.description.urdf_objects`): the same model as from its XML.
        ``floating_base=True`` puts a free joint between the world and the root link, as
        a root link hanging from a massless world link by a ``floating`` joint does: a
        :class:`~soa_dynamics_ros.model.floating_base.FloatingBaseModel`
        (docs/floating_base.md).
        """
        if not isinstance(source, (str, os.PathLike)):
            description = description_from_robot(source)
        else:
            description = parse_urdf(source, package_paths, xacro_timeout, allow_xacro,
                                     allow_path)
        if floating_base and description.free_root_joint is not None:
            raise UnsupportedJointError(
                f"floating_base=True, but robot {description.name!r} already hangs from the "
                f"world by its floating joint {description.free_root_joint!r}, which makes it "
                "floating-base: load it without floating_base=True")
        if floating_base or description.free_root_joint is not None:
            from .floating_base import FloatingBaseModel
            return FloatingBaseModel(description, strict_inertia, kernels)
        return cls(description, strict_inertia, kernels)

    # ------------------------------------------------------------------ compiled kernels
    def _use_router(self, dispatch):
        """Take what the kernel router (re)built: the functions this model's methods call
        inline (a warm call reads them as attributes, with no Python call of the router's)."""
        self._kernel_set, self._compiled, self._generic = (dispatch.kernel_set,
                                                           dispatch.compiled, dispatch.generic)
        self._fast, self._wrenched = dispatch.fast, dispatch.wrenched
        self._bound_poses, self._bound_jacobians = dispatch.bound_poses, dispatch.bound_jacobians
        (self._bound_twists, self._bound_accelerations, self._bound_jacobian_derivatives,
         self._bound_derivative_products) = dispatch.bound_frame_motion
        self._kernel, self._bind_frame = dispatch.kernel, dispatch.bind_frame
        self._wrenched_call = dispatch.wrenched_call
        self._pack_parameters()

    @property
    def kernels(self):
        """The kernel mode and backend in use, ``(mode, backend or None)``, and the kernel
        management: ``.set_mode``, ``.prepare``, ``.cached``; for diagnostics, ``.routes``
        and ``.parameters`` (the packed inertias and gravity the kernels read now)
        (:class:`KernelControls`)."""
        return KernelControls(self._router, self._params)

    def set_kernels(self, mode):
        """Deprecated: ``model.kernels.set_mode(mode)``."""
        self._router.set_mode(mode)

    def prepare_kernels(self, *arguments, **options):
        """Deprecated: ``model.kernels.prepare(...)``."""
        return self._router.prepare(*arguments, **options)

    def kernels_cached(self, *arguments, **options):
        """Deprecated: ``model.kernels.cached(...)``."""
        return self._router.cached(*arguments, **options)

    def generic_kernels(self):
        """For the model layer (:mod:`.subgraph`): ``(compiled tree, p)`` of the generic
        module (:class:`soa_dynamics_ros.kernels.generic.CompiledTree`), or
        ``(None, None)`` when this model uses none."""
        return self._compiled, None if self._compiled is None else self._params

    def _pack_parameters(self):
        """Pack inertias and gravity into the kernels' ``p``; after every change of either."""
        from ..kernels import pack_parameters
        self._params = pack_parameters(self.tree, self._gravity)

    def _fallback(self, kernel, status, vectors, answer):
        """The answer when ``kernel`` declined with ``status`` (:func:`.fallback.fallback`)."""
        return fallback.fallback(self.tree.dof, self._params, kernel, status, vectors, answer)

    @staticmethod
    def _no_wrenches(wrenches):
        return wrenches is None or (type(wrenches) is dict and not wrenches)

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
        gravity = as_vector("gravity", value, 3)
        with self.parameters_lock:
            self._gravity = gravity
            self._pack_parameters()

    def joint_index(self, name):
        try:
            return self._joint_index[name]
        except KeyError:
            raise UnknownNameError("joint", name, self.tree.joint_names) from None

    # ------------------------------------------------------------------ dynamics
    # Each method asks its compiled kernel first, inline: this is the path a
    # 1 kHz controller takes, where a shared helper's extra Python call costs
    # as much as the gravity kernel's arithmetic.  Whatever the kernel
    # declines goes through _fallback to the numpy path (:mod:`.reference`).
    def inverse_dynamics(self, q, qd, qdd, wrenches=None):
        """Joint torques producing ``qdd``: ``M qdd + h = tau + sum J_i^T w_i``."""
        if wrenches is not None:
            tau = self._wrenched.inverse_dynamics_wrenches(q, qd, qdd, wrenches, self._params)
            if type(tau) is _NDARRAY:
                return tau
            if type(wrenches) is not dict or wrenches:
                return self._wrenched_dynamics("inverse_dynamics_wrenches", (q, qd, qdd),
                                               wrenches, self._reference_inverse_dynamics)
        tau = self._fast.inverse_dynamics(q, qd, qdd, self._params)
        if type(tau) is _NDARRAY:
            return tau
        return self._fallback(self._fast.inverse_dynamics, tau, (q, qd, qdd),
                              self._reference_inverse_dynamics)

    def gravity_torques(self, q):
        """Torques that hold the robot still against gravity, g(q)."""
        tau = self._fast.gravity_torques(q, self._params)
        if type(tau) is _NDARRAY:
            return tau
        return self._fallback(self._fast.gravity_torques, tau, (q,),
                              functools.partial(reference.gravity_torques, self))

    def bias_torques(self, q, qd):
        """Coriolis, centrifugal and gravity torques h(q, qd)."""
        tau = self._fast.bias_torques(q, qd, self._params)
        if type(tau) is _NDARRAY:
            return tau
        return self._fallback(self._fast.bias_torques, tau, (q, qd),
                              functools.partial(reference.bias_torques, self))

    def mass_matrix(self, q):
        """Joint-space mass matrix M(q), dof x dof, symmetric."""
        mass = self._fast.mass_matrix(q, self._params)
        if type(mass) is _NDARRAY:
            return mass
        return self._fallback(self._fast.mass_matrix, mass, (q,),
                              functools.partial(reference.mass_matrix, self))

    def coriolis_transpose_product(self, q, qd):
        """``C(q, qd)^T qd``, the gradient of the kinetic energy in q (a momentum gather).

        With ``h = C qd + g`` the bias, this is the other product of the Coriolis
        matrix: the term the generalized-momentum observer integrates, since
        ``d(M qd)/dt = tau + C^T qd - g + tau_ext``.  Mimic joints are folded
        (``G^T``).  A per-robot compiled kernel where there is one (the
        generic module has none).
        """
        kernel = None if self._kernel_set is None else self._kernel("coriolis_transpose_product")
        if kernel is not None:
            product = kernel(q, qd, self._params)
            if type(product) is _NDARRAY:
                return product
            return self._fallback(kernel, product, (q, qd),
                                  functools.partial(reference.coriolis_transpose_product, self))
        return reference.coriolis_transpose_product(self, q, qd)

    def forward_dynamics(self, q, qd, tau, wrenches=None):
        """Joint accelerations: solves ``M qdd + h = tau + sum J_i^T w_i``.

        Articulated-body recursion (O(N)); robots with mimic joints couple
        hinges outside the tree structure and are solved through M instead.
        """
        if wrenches is not None:
            qdd = self._wrenched.forward_dynamics_wrenches(q, qd, tau, wrenches, self._params)
            if type(qdd) is _NDARRAY:
                return qdd
            if type(wrenches) is not dict or wrenches:
                return self._wrenched_dynamics("forward_dynamics_wrenches", (q, qd, tau),
                                               wrenches, self._reference_forward_dynamics)
        qdd = self._fast.forward_dynamics(q, qd, tau, self._params)
        if type(qdd) is _NDARRAY:
            return qdd
        return self._fallback(self._fast.forward_dynamics, qdd, (q, qd, tau),
                              self._reference_forward_dynamics)

    def _wrenched_dynamics(self, name, vectors, wrenches, answer):
        """Inverse or forward dynamics with wrenches that the function last used declined:
        _wrenched_call's answer, or what :func:`.fallback.wrenched_fallback` makes of its
        status (``answer``: the numpy path's)."""
        result = self._wrenched_call(name, vectors, wrenches, self._params)
        return fallback.wrenched_fallback(self.tree.dof, self._params, getattr(self._fast, name),
                                          result, vectors, wrenches, answer)

    # The numpy path (:mod:`.reference`) of the two dynamics that take wrenches.
    def _reference_inverse_dynamics(self, q, qd, qdd, wrenches=None):
        return reference.inverse_dynamics(self, q, qd, qdd, wrenches)

    def _reference_forward_dynamics(self, q, qd, tau, wrenches=None):
        return reference.forward_dynamics(self, self._all_joints, q, qd, tau, wrenches)

    # ------------------------------------------------------------------ batches (trajectories)
    def _samples(self, *named):
        """The validated (N, dof) arrays of ``(name, value)`` pairs, N from the first."""
        first = as_samples(*named[0], self.tree.dof)
        return (first,) + tuple(as_samples(name, value, self.tree.dof, len(first))
                                for name, value in named[1:])

    def _run_batch(self, name, single, arrays):
        """One kernel call over all samples (:func:`.fallback.run_batch`)."""
        return fallback.run_batch(self._router.batch_kernel(name, len(arrays[0])), self._params,
                                  self.parameters_lock, single, arrays, self.tree.dof)

    def inverse_dynamics_batch(self, Q, QD, QDD):
        """Inverse dynamics of N samples: arrays of shape (N, dof) in, (N, dof) out."""
        return self._run_batch("inverse_dynamics_batch", self.inverse_dynamics,
                               self._samples(("Q", Q), ("QD", QD), ("QDD", QDD)))

    def gravity_torques_batch(self, Q):
        """Gravity torques of N configurations: (N, dof) in, (N, dof) out."""
        return self._run_batch("gravity_torques_batch", self.gravity_torques,
                               self._samples(("Q", Q)))

    def forward_dynamics_batch(self, Q, QD, TAU):
        """Forward dynamics of N samples: (N, dof) arrays in, accelerations (N, dof) out."""
        return self._run_batch("forward_dynamics_batch", self.forward_dynamics,
                               self._samples(("Q", Q), ("QD", QD), ("TAU", TAU)))

    # ------------------------------------------------------------------ derivatives (planners)
    # Compiled code answers, inline as the dynamics above: a robot's own kernel once ready
    # (a tree's without wrenches), the generic module meanwhile and otherwise; what it
    # declines (no compiler, lists, NaN, a singular M) goes to the numpy path, which
    # answers or names the problem.  Batches likewise (_derivatives_batch).
    def inverse_dynamics_derivatives(self, q, qd, qdd, wrenches=None):
        """``(dtau_dq, dtau_dqd)``: derivatives of :meth:`inverse_dynamics`, each dof x dof.

        ``dtau_dq[i, j] = d tau_i / d q_j`` at fixed ``qd``, ``qdd`` (and
        ``d tau / d qdd`` is :meth:`mass_matrix`).  Wrenches are held constant in
        root-link axes about their link origins, so they contribute to ``dtau_dq``
        as the links turn (Pinocchio's external forces are fixed in the joint
        frames: its ``computeRNEADerivatives`` differs by that term).  Mimic joints
        are folded (chain rule through ``q_mimic = multiplier * q_master + offset``).
        """
        if wrenches is None:
            both = self._fast.inverse_dynamics_derivatives(q, qd, qdd, self._params)
        else:   # (the C reads the dict; what it declines, numpy names)
            both = self._wrenched.inverse_dynamics_derivatives_wrenches(q, qd, qdd, wrenches,
                                                                        self._params)
            if type(both) is tuple:
                return both
            if type(wrenches) is dict and not wrenches:
                both = self._fast.inverse_dynamics_derivatives(q, qd, qdd, self._params)
            else:
                both = self._wrenched_call("inverse_dynamics_derivatives_wrenches",
                                           (q, qd, qdd), wrenches, self._params)
        if type(both) is tuple:
            return both
        with self.parameters_lock:
            return derivatives.inverse_dynamics_derivatives(self, self._all_joints, q, qd, qdd,
                                                            wrenches)

    def forward_dynamics_derivatives(self, q, qd, tau, wrenches=None):
        """``(dqdd_dq, dqdd_dqd, dqdd_dtau)``: derivatives of :meth:`forward_dynamics`.

        ``dqdd_dtau`` is ``M^-1``; the other two are ``-M^-1`` times the inverse
        dynamics derivatives at ``qdd = forward_dynamics(q, qd, tau, wrenches)``.
        A singular mass matrix raises :class:`SingularDynamicsError`.
        """
        if wrenches is None or (type(wrenches) is dict and not wrenches):
            three = self._fast.forward_dynamics_derivatives(q, qd, tau, self._params)
        else:
            three = self._fast.forward_dynamics_derivatives_wrenches(q, qd, tau, wrenches,
                                                                     self._params)
        if type(three) is tuple:
            return three
        with self.parameters_lock:
            return derivatives.forward_dynamics_derivatives(self, self._all_joints, q, qd, tau,
                                                            wrenches)

    def gravity_derivatives(self, q):
        """``dg_dq``: derivative of :meth:`gravity_torques`, dof x dof, symmetric (the
        Hessian of the potential energy)."""
        derivative = self._fast.gravity_derivatives(q, self._params)
        if type(derivative) is _NDARRAY:
            return derivative
        with self.parameters_lock:
            return derivatives.gravity_derivatives(self, self._all_joints, q)

    def _derivatives_batch(self, name, single, arrays):
        return derivatives.run_batch(self._router.batch_kernel(name + "_batch", len(arrays[0])),
                                     self._params, self.parameters_lock, name, single, arrays,
                                     self.tree.dof)

    def inverse_dynamics_derivatives_batch(self, Q, QD, QDD):
        """:meth:`inverse_dynamics_derivatives` of N samples: two arrays (N, dof, dof)."""
        return self._derivatives_batch("inverse_dynamics_derivatives",
                                       self.inverse_dynamics_derivatives,
                                       self._samples(("Q", Q), ("QD", QD), ("QDD", QDD)))

    def forward_dynamics_derivatives_batch(self, Q, QD, TAU):
        """:meth:`forward_dynamics_derivatives` of N samples: three arrays (N, dof, dof)."""
        return self._derivatives_batch("forward_dynamics_derivatives",
                                       self.forward_dynamics_derivatives,
                                       self._samples(("Q", Q), ("QD", QD), ("TAU", TAU)))

    def gravity_derivatives_batch(self, Q):
        """:meth:`gravity_derivatives` of N configurations: an array (N, dof, dof)."""
        return self._derivatives_batch("gravity_derivatives", self.gravity_derivatives,
                                       self._samples(("Q", Q)))

    # ------------------------------------------------------------------ task space and constraints
    def task_space_inertia(self, q, frame, part="full", damping=None, return_info=False):
        """Operational-space inertia Lambda of a frame origin (``[v; w]`` rows, root axes).

        ``frame`` may be a list of frames: the coupled Lambda of several
        end-effectors, blocks in list order.  ``part`` is ``'full'`` (6x6 per
        frame), ``'translational'`` or ``'rotational'`` (3x3 per frame).  Where
        the joints cannot move the frame in every direction of ``part`` this
        raises :class:`SingularDynamicsError` unless ``damping`` > 0 is given:
        then Lambda = (Lambda^-1 + damping I)^-1.  ``return_info=True`` is deprecated:
        :meth:`task_space_inertia_info` returns what it returned.
        """
        if (self._kernel_set is not None and type(frame) is str and part == "full"
                and damping is None and not return_info and frame in self.tree.frames):
            kernel = self._kernel("task_space_inertia", frame)
            if kernel is not None:
                inertia = kernel(q, self._params)
                if type(inertia) is _NDARRAY:
                    return inertia
                # Status 3 (ill-conditioned): the numpy path decides on the rank and raises.
                return self._fallback(kernel, inertia, (q,), lambda q: (
                    self._rank_checked_task_space_inertia(q, frame)))
        return self._rank_checked_task_space_inertia(q, frame, part, damping, return_info)

    def task_space_inertia_info(self, q, frame, part="full", damping=None):
        """:meth:`task_space_inertia` with what it was computed from: a
        :class:`~soa_dynamics_ros.model.constrained.TaskSpaceInertia` with Lambda,
        Lambda^-1, its condition number and rank."""
        return self._rank_checked_task_space_inertia(q, frame, part, damping, True)

    def _rank_checked_task_space_inertia(self, q, frame, part="full", damping=None,
                                      return_info=False):
        """The compliance from the generic module where it answers, then the numpy path's
        rank decision, inversion and errors."""
        with self.parameters_lock:
            return constrained.task_space_inertia(self, self._all_joints, q, frame, part,
                                                  damping, return_info,
                                                  kernels=self.generic_kernels())

    def hybrid_dynamics(self, q, qd, constraints, tau=None, wrenches=None):
        """Constrained (Popov-Vereshchagin) hybrid dynamics, generalized to trees.

        ``constraints``: list of ``(frame, alpha, beta)``; ``alpha`` is 6 x m
        (unit constraint wrenches [f; t], root axes, about the frame origin) and
        the constraint is ``alpha^T a = beta`` on the classical acceleration
        ``a = [dv/dt; dw/dt]`` of the frame origin (gravity not included:
        ``alpha = I, beta = 0`` holds the frame still).  Returns a
        :class:`~soa_dynamics_ros.model.constrained.HybridDynamics` with ``qdd``, ``nu``
        (constraint wrench on the robot = ``alpha @ nu``) and
        ``constraint_torques = J^T alpha nu``, so that
        ``M qdd + h = tau + constraint_torques + sum J_i^T w_i``.
        """
        return constrained.hybrid_dynamics(self, self._all_joints, q, qd, constraints, tau,
                                           wrenches, kernels=self.generic_kernels())

    def mixed_dynamics(self, q, qd, qdd, tau, prescribed, wrenches=None):
        """Joints in ``prescribed`` take their ``qdd``, the rest their ``tau``: a
        :class:`~soa_dynamics_ros.model.constrained.MixedDynamics` with every joint's
        ``qdd`` and ``tau`` (it unpacks as ``qdd_all, tau_all``)."""
        if self._compiled is not None:
            mask = constrained.prescribed_mask(self, prescribed).astype(float)
            if self._no_wrenches(wrenches):
                both = self._generic["mixed_dynamics"](q, qd, qdd, tau, mask, self._params)
            else:
                function = self._generic["mixed_dynamics_wrenches"]
                both = fallback.wrenched_fallback(
                    self.tree.dof, self._params, function,
                    function(q, qd, qdd, tau, mask, wrenches, self._params),
                    (q, qd, qdd, tau, mask), wrenches, lambda *_: None)
            if type(both) is _NDARRAY:
                return _new_mixed_dynamics(constrained.MixedDynamics, (both[0], both[1]))
        with self.parameters_lock:
            return constrained.mixed_dynamics(self, q, qd, qdd, tau, prescribed, wrenches)

    # ------------------------------------------------------------------ standing on contacts
    def whole_body_gravity(self, q, contacts):
        """The actuated joint torques and contact wrenches that hold the robot still at ``q``.

        ``contacts``: a list of ``(frame, kind)`` pairs (or
        :class:`~soa_dynamics_ros.model.contacts.Contact`), kind ``"point"`` (a force
        holds the frame origin) or ``"flat"`` (a force and a moment hold the frame).
        Returns a :class:`~soa_dynamics_ros.model.contacts.WholeBodyGravity`: ``tau``
        (actuated joints, ``joint_names`` order) and ``contact_wrenches`` (frame -> 3 or
        6 entries, world axes about the frame origin, on the robot) with
        ``g(q) = S^T tau + sum_c J_c^T w_c``.  The contact wrenches are the minimum-norm
        ones that balance the unactuated base rows; the joint rows then give ``tau``.
        A set that cannot balance the base raises
        :class:`~soa_dynamics_ros.errors.UnbalancedContactsError` with the
        residual.  A fixed-base model has no unactuated rows: the wrenches are zero and
        ``tau`` is :meth:`gravity_torques` (docs/floating_base.md).
        """
        return contacts_module.whole_body_gravity(self, q, contacts,
                                                  self.nv - len(self.joint_names))

    def contact_dynamics(self, q, v, tau, contacts):
        """Accelerations and contact wrenches with the contact frames held still.

        ``contacts`` as :meth:`whole_body_gravity`; each contact's rows of the frame's
        classical acceleration (world axes) are zero: :meth:`hybrid_dynamics` with the
        contacts as constraints.  ``tau``: ``nv`` generalized forces, or on a
        floating-base model the actuated joints' only (the base unactuated), as
        :meth:`whole_body_gravity` returns them.  Returns a
        :class:`~soa_dynamics_ros.model.contacts.ContactDynamics` ``(a,
        contact_wrenches, rank, hybrid)`` with ``M a + h = tau + sum_c J_c^T w_c``
        (``hybrid``: the :class:`~soa_dynamics_ros.model.constrained.HybridDynamics`).
        """
        parsed = contacts_module.parse_contacts(self.frame_names, contacts)
        forces = as_float_array("tau", tau, f"vector of length {self.nv}")
        actuated = len(self.joint_names)
        if forces.shape == (actuated,) and actuated != self.nv:
            forces = np.concatenate((np.zeros(self.nv - actuated), forces))
        forces = as_vector("tau", forces, self.nv)
        result = self.hybrid_dynamics(q, v, contacts_module.contact_constraints(parsed), forces)
        return contacts_module.ContactDynamics(
            result.qdd, contacts_module.split_wrenches(parsed, result.nu), result.rank, result)

    def subgraph(self, joint_names):
        """A view that moves only ``joint_names``; the other joints are locked where ``q`` puts them."""
        return Subgraph(self, joint_names)

    # ------------------------------------------------------------------ payloads
    @property
    def payloads(self):
        """Attached payloads: ``{name: (link, mass, com, inertia)}``."""
        with self.parameters_lock:
            return {name: payload[:4] for name, payload in self._payloads.items()}

    def attach_payload(self, name, link, mass, com=(0.0, 0.0, 0.0), inertia=None):
        """Rigidly attach a body to ``link`` (replacing a payload of the same name).

        ``com`` is in the link frame, each component within +-MAX_PAYLOAD_COM
        (1e4 m), ``inertia`` the 3x3 inertia about the COM in link-frame axes
        (default: a point mass).  Every algorithm sees it at once.
        """
        attached = payloads.payload(self.tree, name, link, mass, com, inertia)
        with self.parameters_lock:
            self._payloads[name] = attached
            self._update_body_inertias()

    def detach_payload(self, name):
        with self.parameters_lock:
            if name not in self._payloads:
                raise UnknownNameError("payload", name, list(self._payloads))
            del self._payloads[name]
            self._update_body_inertias()

    def _update_body_inertias(self):
        """Called with the parameters lock held."""
        self.tree = payloads.loaded_tree(self._parsed_tree, self._payloads)
        self._pack_parameters()

    def identify_payload(self, link, Q, QD, QDD, TAU):
        """Identify a rigid load on ``link`` from N samples of a motion carrying it.

        ``Q``, ``QD``, ``QDD``, ``TAU``: (N, dof) arrays in model order, ``TAU``
        the measured joint torques (``M qdd + h`` of the robot with its load).
        The model as it is (URDF and attached payloads) is the known robot: the
        torques it does not explain are fitted by least squares with the ten
        inertial parameters of one rigid body on ``link``.  Returns a
        :class:`~soa_dynamics_ros.model.identification.PayloadEstimate`:
        ``.mass``, ``.com`` (link frame), ``.inertia`` (3x3 about the COM, link
        axes), ``.residual`` (RMS unexplained torque, N m), per-parameter
        ``.standard_deviation`` and the regressor's ``.singular_values`` and
        ``.condition`` (how well the motion excited the parameters),
        ``.problems`` (why the estimate is not a physical body; empty when it
        is) and ``.apply(model, name)`` (attach it; refused with the problems
        named).  Raises :class:`InvalidInputError` for bad shapes, NaN, fewer
        than 20 equations, or a motion that cannot tell the parameters apart.
        """
        frame = self.tree.frame(link)
        Q, QD, QDD, TAU = self._samples(("Q", Q), ("QD", QD), ("QDD", QDD), ("TAU", TAU))
        with self.parameters_lock:
            known = self.inverse_dynamics_batch(Q, QD, QDD)
            regressor = identification.regressor(self.tree, self._gravity,
                                                 self._generic.get("inverse_dynamics_batch"),
                                                 frame, Q, QD, QDD)
        return identification.solve(link, regressor, TAU - known)

    # ------------------------------------------------------------------ inertial parameters
    # One body per moving joint: the links a fixed joint welds to it are part of it.
    @property
    def inertial_parameter_names(self):
        """``"link.m"``, ``"link.m*cx"``, ... of :meth:`inertial_parameters`, ``link``
        each body's (its moving joint's child link)."""
        return tuple(f"{link}.{name}" for link in self.tree.body_link[1:]
                     for name in identification.PARAMETER_NAMES)

    def inertial_parameters(self):
        """The ten inertial parameters of each body, body after body (model order: a
        parent before its children), one vector of 10 x bodies.

        A body is the child link of a moving joint with every link fixed joints weld to
        it (their inertias merged in), and its attached payloads.  Per body, in its link
        frame: ``[m, m cx, m cy, m cz, Ixx, Ixy, Ixz, Iyy, Iyz, Izz]``, the rotational
        inertia about the **link origin** (:data:`identification.PARAMETER_NAMES`, as
        :meth:`identify_payload`).  The root link's own inertia moves nothing and is
        not among them.
        """
        with self.parameters_lock:
            return inertia_to_parameters(self.tree.body_inertia[1:]).reshape(-1)

    def inertial_regressor(self, q, qd, qdd):
        """dof x (10 x bodies) ``Y`` with ``Y @ inertial_parameters() ==
        inverse_dynamics(q, qd, qdd)`` (gravity included), columns as
        :attr:`inertial_parameter_names`."""
        kernel = self._generic.get("inertial_regressor")
        if kernel is None:
            return reference.inertial_regressor(self, q, qd, qdd)
        regressor = kernel(q, qd, qdd, self._params)
        if type(regressor) is _NDARRAY:
            return regressor
        return self._fallback(kernel, regressor, (q, qd, qdd),
                              functools.partial(reference.inertial_regressor, self))

    def _stacked_regressor(self, Q, QD, QDD, columns=None):
        """(N, dof, len(columns)) regressors of validated samples, only ``columns`` (default
        all) kept; refused beyond identification.MAX_REGRESSOR_VALUES before it is made."""
        count = len(self.inertial_parameter_names) if columns is None else len(columns)
        identification.check_regressor_size(len(Q), self.tree.dof, count)
        stacked = np.empty((len(Q), self.tree.dof, count))
        for row, (q, qd, qdd) in enumerate(zip(Q, QD, QDD)):
            regressor = self.inertial_regressor(q, qd, qdd)
            stacked[row] = regressor if columns is None else regressor[:, columns]
        return stacked

    def base_parameters(self, samples=identification.BASE_SAMPLES, seed=0):
        """The identifiable combinations of :meth:`inertial_parameters`
        (:class:`~soa_dynamics_ros.model.identification.BaseParameters`).

        The full regressor is stacked over ``samples`` random states (seeded by
        ``seed``: the same answer every call): ``q`` uniform in [-pi, pi], ``qd``
        and ``qdd`` normal (deviations 2 and 3).  Its columns are taken in order
        (body by body from the root, parameters in their order) and each is kept
        when it is no combination of those kept before it; the others fold into
        them: ``Y @ pi == Y[:, base.independent] @ (base.mapping @ pi)`` at every
        state.  With the model's gravity: gravity excites some combinations.
        """
        if type(samples) is not int or not 1 <= samples <= identification.MAX_BASE_SAMPLES:
            shown = samples if type(samples) is int else type(samples).__name__
            raise InvalidInputError(f"samples must be an int from 1 to "
                                    f"{identification.MAX_BASE_SAMPLES}, not {shown}")
        if type(seed) is not int:
            raise InvalidInputError(f"seed must be an int, not {type(seed).__name__}")
        rng = np.random.default_rng(seed)
        dof = self.tree.dof
        Q = rng.uniform(-np.pi, np.pi, (samples, dof))
        QD, QDD = rng.normal(size=(samples, dof)) * 2, rng.normal(size=(samples, dof)) * 3
        names = self.inertial_parameter_names
        stacked = self._stacked_regressor(Q, QD, QDD).reshape(samples * dof, len(names))
        return identification.base_parameters(stacked, names,
                                              self.inertial_parameters(), samples, seed)

    def identify_inertial_parameters(self, Q, QD, QDD, TAU, base=None):
        """Fit the robot's base parameters to N samples of a motion: least squares on
        ``TAU = Y_base beta``, ``identify_payload`` for the whole robot.

        ``Q``, ``QD``, ``QDD``, ``TAU``: (N, dof) arrays in model order, ``TAU`` the
        measured joint torques.  ``base``: the combinations fitted (default
        :meth:`base_parameters`).  Returns an
        :class:`~soa_dynamics_ros.model.identification.InertialEstimate`: ``.values``
        (``base.names``), ``.residual``, ``.standard_deviation``,
        ``.singular_values`` and ``.condition``.  Raises :class:`InvalidInputError`
        as :meth:`identify_payload` does: bad shapes, NaN, fewer equations than twice
        the base parameters, or a motion that cannot tell them apart.
        """
        Q, QD, QDD, TAU = self._samples(("Q", Q), ("QD", QD), ("QDD", QDD), ("TAU", TAU))
        if base is None:
            base = self.base_parameters()
        elif not identification.fits(base, len(self.inertial_parameter_names)):
            raise InvalidInputError("base must be this model's base_parameters()")
        if base.count == 0:
            raise InvalidInputError("no joint torque of this robot depends on its inertial "
                                    "parameters: there is nothing to identify")
        return identification.solve_inertial(
            base, self._stacked_regressor(Q, QD, QDD, base.independent), TAU)

    # ------------------------------------------------------------------ mass properties
    @property
    def total_mass(self):
        """Mass of every moving body and of the root link's own inertials."""
        return float(self.tree.body_inertia[:, 0, 0].sum())

    def center_of_mass(self, q):
        """Centre of mass of the whole robot (root included), root-link axes."""
        compiled = self._compiled
        if compiled is not None:
            poses = compiled.module.frame_poses(compiled.model, -1, q, self._params)
            if type(poses) is _NDARRAY:     # (the placements of the compiled scatter)
                bodies = poses[compiled.body_frames]
                return reference.center_of_bodies(self.tree, bodies[:, :3, :3], bodies[:, :3, 3])
        return reference.center_of_mass(self, q)

    # ------------------------------------------------------------------ kinematics
    def frame_pose(self, q, frame):
        """4x4 pose of a link frame in the root link frame."""
        # jacobian repeats these lines: a shared helper's extra Python call is a quarter
        # of a warm call (docs/performance.md, "Design measurements").
        try:
            kernel = self._bound_poses[frame]
        except KeyError:
            kernel = self._bind_frame("frame_pose", frame)
            if kernel is None:
                return reference.frame_pose(self, q, frame)
        pose = kernel(q, self._params)
        if type(pose) is _NDARRAY:
            return pose
        return self._fallback(kernel, pose, (q,), lambda q: reference.frame_pose(self, q, frame))

    def frame_poses(self, q):
        """Poses of every link frame, computed in one scatter: ``{name: 4x4}``."""
        compiled = self._compiled
        if compiled is not None:
            kernel = compiled.function("frame_poses", -1)
            poses = kernel(q, self._params)
            if type(poses) is not _NDARRAY:
                poses = self._fallback(kernel, poses, (q,), lambda q: None)
            if poses is not None:
                return dict(zip(compiled.frame_names, poses))
        return reference.frame_poses(self, q)

    def jacobian(self, q, frame):
        """6 x dof Jacobian of the frame origin, rows ``[v; w]`` in root-link axes."""
        try:
            kernel = self._bound_jacobians[frame]
        except KeyError:
            kernel = self._bind_frame("jacobian", frame)
            if kernel is None:
                return reference.jacobian(self, q, frame)
        jacobian = kernel(q, self._params)
        if type(jacobian) is _NDARRAY:
            return jacobian
        return self._fallback(kernel, jacobian, (q,), lambda q: reference.jacobian(self, q, frame))

    # ------------------------------------------------------------------ frame motion
    # As jacobian: the compiled function bound to the frame first, inline.
    def frame_twist(self, q, qd, frame):
        """``[v; w]`` of the frame origin, root-link axes: ``jacobian(q, frame) @ qd``."""
        try:
            kernel = self._bound_twists[frame]
        except (KeyError, TypeError):
            kernel = self._bind_frame("frame_twist", frame)
            if kernel is None:
                return reference.frame_twist(self, q, qd, frame)
        twist = kernel(q, qd, self._params)
        if type(twist) is _NDARRAY:
            return twist
        return self._fallback(kernel, twist, (q, qd), lambda q, qd: (
            reference.frame_twist(self, q, qd, frame)))

    def frame_acceleration(self, q, qd, qdd, frame):
        """Classical acceleration ``[dv/dt; dw/dt]`` of the frame origin, root-link axes
        (gravity not included): ``jacobian @ qdd + jacobian_derivative_product``."""
        try:
            kernel = self._bound_accelerations[frame]
        except (KeyError, TypeError):
            kernel = self._bind_frame("frame_acceleration", frame)
            if kernel is None:
                return reference.frame_acceleration(self, q, qd, qdd, frame)
        acceleration = kernel(q, qd, qdd, self._params)
        if type(acceleration) is _NDARRAY:
            return acceleration
        return self._fallback(kernel, acceleration, (q, qd, qdd),
                              lambda q, qd, qdd: (
                                  reference.frame_acceleration(self, q, qd, qdd, frame)))

    def jacobian_time_derivative(self, q, qd, frame):
        """6 x dof time derivative of ``jacobian(q, frame)`` moving at ``qd``."""
        try:
            kernel = self._bound_jacobian_derivatives[frame]
        except (KeyError, TypeError):
            kernel = self._bind_frame("jacobian_time_derivative", frame)
            if kernel is None:
                return reference.jacobian_time_derivative(self, q, qd, frame)
        derivative = kernel(q, qd, self._params)
        if type(derivative) is _NDARRAY:
            return derivative
        return self._fallback(kernel, derivative, (q, qd), lambda q, qd: (
            reference.jacobian_time_derivative(self, q, qd, frame)))

    def jacobian_derivative_product(self, q, qd, frame):
        """``jacobian_time_derivative(q, qd, frame) @ qd``: the classical bias, so that
        ``frame_acceleration(q, qd, qdd, frame) == jacobian(q, frame) @ qdd + this``."""
        try:
            kernel = self._bound_derivative_products[frame]
        except (KeyError, TypeError):
            kernel = self._bind_frame("jacobian_derivative_product", frame)
            if kernel is None:
                return reference.jacobian_derivative_product(self, q, qd, frame)
        product = kernel(q, qd, self._params)
        if type(product) is _NDARRAY:
            return product
        return self._fallback(kernel, product, (q, qd), lambda q, qd: (
            reference.jacobian_derivative_product(self, q, qd, frame)))

    # ------------------------------------------------------------------ Coriolis matrix, energy
    # The generic module answers (no per-robot kernel); what it declines, or no generic
    # module (_fast's stand-in answers None), goes to the numpy path, which answers or
    # names the problem.  Mimic joints fold as the mass matrix does:
    # C = G^T C_hinge G (G constant, so dM/dt = C + C^T still holds).
    def coriolis_matrix(self, q, qd):
        """C(q, qd), dof x dof, with ``C qd = h(q, qd) - g(q)`` and ``dM/dt = C + C^T``
        (the Christoffel-symbol C, Pinocchio's ``computeCoriolisMatrix``)."""
        matrix = self._fast.coriolis_matrix(q, qd, self._params)
        if type(matrix) is _NDARRAY:
            return matrix
        return self._fallback(self._fast.coriolis_matrix, matrix, (q, qd),
                              functools.partial(reference.coriolis_matrix, self))

    def kinetic_energy(self, q, qd):
        """``1/2 qd^T M(q) qd`` (J), a float."""
        energy = self._fast.kinetic_energy(q, qd, self._params)
        if type(energy) is float:
            return energy
        return self._fallback(self._fast.kinetic_energy, energy, (q, qd),
                              functools.partial(reference.kinetic_energy, self))

    def potential_energy(self, q):
        """Gravitational potential energy (J), a float: ``-sum m g . c`` over the moving
        bodies, with :attr:`gravity` and each centre of mass ``c`` in root-link axes; zero
        at the root frame's origin, and its gradient in q is :meth:`gravity_torques`."""
        energy = self._fast.potential_energy(q, self._params)
        if type(energy) is float:
            return energy
        return self._fallback(self._fast.potential_energy, energy, (q,),
                              functools.partial(reference.potential_energy, self))
