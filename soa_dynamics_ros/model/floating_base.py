"""Floating-base robots: a free joint between the world and the URDF's root link.

Conventions (Pinocchio's free-flyer; docs/floating_base.md states them for users):

* ``q = [x, y, z, qx, qy, qz, qw, joints...]``: the base position in the world, then
  the unit quaternion of the base orientation (base to world); ``nq = 7 + n``;
* ``v = [v, w, joint rates...]``: the base's linear and angular velocity in the base
  frame; accelerations alike (``[dv/dt; dw/dt]`` of those base-frame components);
  ``nv = 6 + n``;
* generalized forces have ``nv`` entries, the first 6 the wrench ``[f; t]`` on the
  base in the base frame, about its origin;
* world quantities (frame poses, Jacobians, wrenches, constraint directions, the
  centre of mass, centroidal momentum) are in world axes; gravity is in world axes.

How it is computed.  The fixed-base machinery is the engine: the model holds a
fixed-base :class:`RobotModel` (the *chain model*) whose root is an inertial frame
coinciding with the base at this instant, joined to the base by six virtual 1-DOF
joints (prismatic along base x, y, z, then revolute about base x, y, z), always at
coordinate 0, between massless bodies.  At coordinate 0 their rates are the base
twist in base axes, their generalized forces the base wrench, and the chain's mass
matrix is the free-flyer's.  Two things differ from a true 6-DOF joint, and this
module adds them back:

* the chain's velocity-product acceleration ``c(v)`` at the base (a 6-DOF joint
  has none): the chain's base acceleration is ``qdd[:6] + c``;
* gravity: the chain model has none; gravity in base axes ``R^T g`` enters as the
  base's acceleration ``-R^T g`` would (gravity is the root's acceleration ``-g``
  in a fixed-base model), a pure translation shared by every body.

So the chain model's accelerations are ``qdd - shift`` with
``shift = [c_lin + R^T g; c_ang; 0...]``, and every compiled path of the chain
model (generic module, per-robot kernels, batches) serves the floating base.
"""
import dataclasses
import math

import numpy as np

from ..description.urdf import JointDescription, LinkDescription, RobotDescription
from ..errors import InvalidInputError, SingularDynamicsError, UnknownNameError
from ..validation import MAX_MAGNITUDE, as_samples, as_vector
from .configuration import time_step
from .constrained import TASK_SPACE_PARTS
from .robot_model import DEFAULT_GRAVITY, RobotModel

# A quaternion whose norm is this far from 1 is refused, never normalized: a pose
# from float32 messages is unit to about 1e-7; one off by more is not a rotation.
# Within it, the quaternion is used divided by its norm.
QUATERNION_TOLERANCE = 1e-6
BASE_VELOCITY_NAMES = ("base_vx", "base_vy", "base_vz", "base_wx", "base_wy", "base_wz")
# The virtual chain, root to base: (joint type, axis name, axis in base axes).
_VIRTUAL_AXES = (("prismatic", "x", (1.0, 0.0, 0.0)), ("prismatic", "y", (0.0, 1.0, 0.0)),
                 ("prismatic", "z", (0.0, 0.0, 1.0)), ("revolute", "rx", (1.0, 0.0, 0.0)),
                 ("revolute", "ry", (0.0, 1.0, 0.0)), ("revolute", "rz", (0.0, 0.0, 1.0)))
_BASE = 6
_NDARRAY = np.ndarray
_FLOAT = np.dtype(float)
_NORM2_LOW, _NORM2_HIGH = (1.0 - QUATERNION_TOLERANCE) ** 2, (1.0 + QUATERNION_TOLERANCE) ** 2


def _skew(vector):
    x, y, z = vector
    return np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])


def rotation_from_quaternion(quaternion):
    """The rotation matrix of a unit quaternion ``[x, y, z, w]``."""
    x, y, z, w = quaternion
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def _rotations_from_quaternions(quaternions):
    x, y, z, w = quaternions.T
    return np.stack([np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)], -1),
                     np.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)], -1),
                     np.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], -1)],
                    axis=1)


def _quaternion_product(a, b):
    return np.concatenate((a[3] * b[:3] + b[3] * a[:3] + np.cross(a[:3], b[:3]),
                           [a[3] * b[3] - a[:3] @ b[:3]]))


def _checked_quaternions(name, quaternions):
    """Unit quaternions (rows), each divided by its norm; InvalidInputError naming the
    first one whose norm is off by more than QUATERNION_TOLERANCE."""
    norms = np.linalg.norm(quaternions, axis=-1)
    bad = np.flatnonzero(np.abs(np.atleast_1d(norms) - 1.0) > QUATERNION_TOLERANCE)
    if bad.size:
        which = "" if quaternions.ndim == 1 else f" of sample {bad[0]}"
        norm = np.atleast_1d(norms)[bad[0]]
        raise InvalidInputError(
            f"{name}[3:7]{which}, the base orientation quaternion (qx, qy, qz, qw), must have "
            f"unit norm within {QUATERNION_TOLERANCE:g}; its norm is {norm:.9g} (it is not "
            "normalized for you)")
    return quaternions / (norms[..., None] if quaternions.ndim > 1 else norms)


def checked_base_pose(name, pose):
    """``pose`` (``[x, y, z, qx, qy, qz, qw]``, finite) with its quaternion divided by its
    norm; InvalidInputError, naming ``name``, when the norm is off by more than
    QUATERNION_TOLERANCE."""
    pose = as_vector(name, pose, 7)
    return np.concatenate((pose[:3], _checked_quaternions(name, pose[3:7])))


def velocity_product(v):
    """The chain's velocity-product acceleration at the base, ``c(v)`` of the base twist
    ``v = [lin; ang]`` (``sum_{i<k} S_i v_i x S_k v_k`` over the virtual joints)."""
    lin, ang = v[:3], v[3:6]
    return np.array([lin[1] * ang[2] - lin[2] * ang[1], lin[2] * ang[0] - lin[0] * ang[2],
                     lin[0] * ang[1] - lin[1] * ang[0],
                     ang[1] * ang[2], -ang[0] * ang[2], ang[0] * ang[1]])


def _velocity_product_rows(V):
    lin, ang = V[:, :3], V[:, 3:6]
    return np.concatenate((np.cross(lin, ang), np.stack(
        (ang[:, 1] * ang[:, 2], -ang[:, 0] * ang[:, 2], ang[:, 0] * ang[:, 1]), -1)), axis=1)


def velocity_product_derivative(v):
    """``d c / d v[:6]``, 6 x 6."""
    lin, ang = v[:3], v[3:6]
    derivative = np.zeros((6, 6))
    derivative[:3, :3] = -_skew(ang)
    derivative[:3, 3:] = _skew(lin)
    derivative[3:, 3:] = [[0.0, ang[2], ang[1]], [-ang[2], 0.0, -ang[0]], [ang[1], ang[0], 0.0]]
    return derivative


def chain_description(description):
    """``description`` with a virtual root link and the six virtual joints above its
    root link: the chain model's description (module docstring)."""
    taken = set(description.links) | set(description.joints)
    prefix = "free_flyer"
    while any(name.startswith(prefix) for name in taken):
        prefix = "_" + prefix
    world = prefix + "_world"
    links, joints, parent = {world: LinkDescription(world, 0)}, {}, world
    for number, (kind, axis_name, axis) in enumerate(_VIRTUAL_AXES):
        child = description.root if number == _BASE - 1 else f"{prefix}_{axis_name}_body"
        if child != description.root:
            links[child] = LinkDescription(child, 0)
        name = f"{prefix}_{axis_name}"
        joints[name] = JointDescription(name, kind, parent, child, 0, axis=np.array(axis))
        parent = child
    links.update(description.links)
    joints.update(description.joints)
    return RobotDescription(description.name, links, joints, world)


class FloatingBaseModel(RobotModel):
    """A robot with a free base (module docstring for conventions and method).

    Built by :meth:`RobotModel.from_urdf` with ``floating_base=True``, or for a URDF
    whose root link hangs from a massless world link by a ``floating`` joint.  Methods
    of :class:`RobotModel` not listed in docs/floating_base.md raise
    :class:`InvalidInputError` naming themselves.
    """

    def __init__(self, description, strict_inertia=False, kernels="auto"):
        # Not RobotModel.__init__: this model is a view of the chain model, which holds
        # the tree, inertias, payloads and kernels.
        self.description = description
        self._chain = RobotModel(chain_description(description), strict_inertia, kernels)
        self._virtual_joints = self._chain.joint_names[:_BASE]
        self._virtual_frames = {self._chain.tree.root_link} | {
            self._chain.tree.body_link[body] for body in range(1, _BASE)}
        self._frame_names = [name for name in self._chain.frame_names
                             if name not in self._virtual_frames]
        self.gravity = DEFAULT_GRAVITY
        self._chain.gravity = np.zeros(3)
        self.parameters_lock = self._chain.parameters_lock
        self._n = self._chain.dof - _BASE
        self._nv = self._chain.dof
        self._q_shape, self._v_shape = (self._n + 7,), (self._nv,)

    # ------------------------------------------------------------------ structure
    @property
    def floating_base(self):
        return True

    @property
    def name(self):
        return self._chain.name

    @property
    def base_link(self):
        """The URDF link the free joint moves (its root link)."""
        return self._chain.tree.body_link[_BASE]

    @property
    def joint_names(self):
        """The actuated joints, in the order of ``q[7:]`` and ``v[6:]``."""
        return self._chain.joint_names[_BASE:]

    @property
    def frame_names(self):
        return list(self._frame_names)

    @property
    def dof(self):
        """Degrees of freedom, ``nv``."""
        return self._chain.dof

    @property
    def nq(self):
        return self._n + 7

    @property
    def nv(self):
        return self._n + _BASE

    @property
    def joints(self):
        return [joint for joint in self._chain.joints if joint.name not in self._virtual_joints]

    @property
    def effort_limits(self):
        return self._chain.effort_limits[_BASE:]

    @property
    def gravity(self):
        """Gravitational acceleration in world axes."""
        return np.array(self._gravity_floats)

    @gravity.setter
    def gravity(self, value):
        # One assignment each, so that a call reading either sees the old or the new gravity.
        self._gravity_floats = tuple(as_vector("gravity", value, 3).tolist())
        self._base_constants = np.array((*self._gravity_floats, _NORM2_LOW, _NORM2_HIGH))

    def joint_index(self, name):
        """Index of an actuated joint in ``q[7:]`` and ``v[6:]``."""
        if name in self._virtual_joints:
            raise UnknownNameError("joint", name, self.joint_names)
        return self._chain.joint_index(name) - _BASE

    @property
    def kernels(self):
        return self._chain.kernels

    @property
    def total_mass(self):
        return self._chain.total_mass

    @property
    def payloads(self):
        return self._chain.payloads

    def attach_payload(self, name, link, *arguments, **options):
        self._frame(link)
        self._chain.attach_payload(name, link, *arguments, **options)

    def detach_payload(self, name):
        self._chain.detach_payload(name)

    # ------------------------------------------------------------------ configuration space
    def neutral_configuration(self):
        """The base at the world origin, unrotated; every joint at zero."""
        q = np.zeros(self.nq)
        q[6] = 1.0
        return q

    def _pose_values(self, q):
        """``(chain coordinates, [x, y, z, qx, qy, qz, qw], squared quaternion norm)`` of
        ``q``; InvalidInputError for anything but a finite vector of nq with a unit
        quaternion.

        Written on Python floats: on the warm path of the dynamics this costs less than
        the compiled recursion, where numpy calls would cost several of it."""
        if type(q) is not _NDARRAY or q.shape != self._q_shape or q.dtype != _FLOAT:
            q = as_vector("q", q, self.nq)
        values = q[:7].tolist()
        px, py, pz, x, y, z, w = values
        norm2 = x * x + y * y + z * z + w * w
        if not (_NORM2_LOW <= norm2 <= _NORM2_HIGH and -MAX_MAGNITUDE <= px <= MAX_MAGNITUDE
                and -MAX_MAGNITUDE <= py <= MAX_MAGNITUDE
                and -MAX_MAGNITUDE <= pz <= MAX_MAGNITUDE):
            _checked_quaternions("q", as_vector("q", q, self.nq)[3:7])  # raises, naming it
        chain_q = np.zeros(self._nv)
        chain_q[_BASE:] = q[7:]
        return chain_q, values, norm2

    def _pose(self, q):
        """``(chain coordinates, the base rotation's 9 entries row by row)`` of ``q``."""
        chain_q, (_, _, _, x, y, z, w), norm2 = self._pose_values(q)
        scale = 1.0 / math.sqrt(norm2)
        x, y, z, w = x * scale, y * scale, z * scale, w * scale
        return chain_q, (1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w),
                         2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w),
                         2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y))

    def _chain_inputs(self, q, v):
        """``(chain coordinates, shift)`` of the dynamics' warm path (:meth:`_shift`), gravity
        turned into base axes by the quaternion directly."""
        chain_q, (_, _, _, x, y, z, w), norm2 = self._pose_values(q)
        gx, gy, gz = self._gravity_floats
        # R^T g for R of the unit quaternion q / |q|: g + (w t - u x t) / |q|^2, t = 2 g x u.
        tx, ty, tz = 2.0 * (gy * z - gz * y), 2.0 * (gz * x - gx * z), 2.0 * (gx * y - gy * x)
        gravity = (gx + (w * tx - (y * tz - z * ty)) / norm2,
                   gy + (w * ty - (z * tx - x * tz)) / norm2,
                   gz + (w * tz - (x * ty - y * tx)) / norm2)
        return chain_q, self._shift_of(gravity, v)

    def _base(self, q):
        """``(q, base rotation 3x3, chain coordinates)``, ``q`` validated."""
        chain_q, rotation = self._pose(q)
        if type(q) is not _NDARRAY:
            q = as_vector("q", q, self.nq)
        return q, np.array(rotation).reshape(3, 3), chain_q

    def _v(self, name, value):
        """A vector of nv (its NaN the chain model's kernels name, or _shift)."""
        if type(value) is _NDARRAY and value.shape == self._v_shape:
            return value
        return as_vector(name, value, self.nv)

    def integrate(self, q, v, dt):
        """``q`` moved at constant velocity ``v`` for ``dt``: the base along the screw of
        its twist (SE(3) exponential, as Pinocchio), the joints linearly."""
        q, rotation, _ = self._base(q)
        step = self._v("v", v) * time_step(dt)
        linear, angular = step[:3], step[3:6]
        angle = np.linalg.norm(angular)
        turn = _skew(angular)
        if angle < 1e-4:
            first, second = 0.5 - angle ** 2 / 24.0, 1.0 / 6.0 - angle ** 2 / 120.0
            half = 0.5 - angle ** 2 / 48.0
        else:
            first = (1.0 - math.cos(angle)) / angle ** 2
            second = (angle - math.sin(angle)) / angle ** 3
            half = math.sin(0.5 * angle) / angle
        translation = linear + first * (turn @ linear) + second * (turn @ (turn @ linear))
        result = q.copy()
        result[:3] = q[:3] + rotation @ translation
        quaternion = _quaternion_product(q[3:7] / np.linalg.norm(q[3:7]),
                                         np.concatenate((half * angular, [math.cos(0.5 * angle)])))
        result[3:7] = quaternion / np.linalg.norm(quaternion)
        result[7:] = q[7:] + step[_BASE:]
        return result

    def difference(self, q0, q1):
        """The velocity ``d`` with ``integrate(q0, d, 1) == q1`` (SE(3) logarithm for the
        base, the shorter of the two rotations)."""
        q0, rotation, _ = self._base(q0)
        q1, _, _ = self._base(q1)
        first, second = q0[3:7] / np.linalg.norm(q0[3:7]), q1[3:7] / np.linalg.norm(q1[3:7])
        relative = _quaternion_product(np.concatenate((-first[:3], first[3:])), second)
        if relative[3] < 0:
            relative = -relative
        sine = np.linalg.norm(relative[:3])
        angle = 2.0 * math.atan2(sine, relative[3])
        angular = relative[:3] * (angle / sine if sine > 1e-12 else 2.0 / relative[3])
        turn = _skew(angular)
        if angle < 1e-4:
            beta = 1.0 / 12.0 + angle ** 2 / 720.0
        else:
            beta = (1.0 - angle * math.sin(angle) / (2.0 * (1.0 - math.cos(angle)))) / angle ** 2
        offset = rotation.T @ (q1[:3] - q0[:3])
        result = np.empty(self.nv)
        result[:3] = offset - 0.5 * (turn @ offset) + beta * (turn @ (turn @ offset))
        result[3:6] = angular
        result[_BASE:] = q1[7:] - q0[7:]
        return result

    # ------------------------------------------------------------------ the chain model's terms
    def _shift(self, rotation, v):
        """``qdd - chain qdd`` of the base rotation's 9 entries and ``v`` (None: at rest)."""
        r00, r01, r02, r10, r11, r12, r20, r21, r22 = rotation
        gx, gy, gz = self._gravity_floats
        return self._shift_of((r00 * gx + r10 * gy + r20 * gz, r01 * gx + r11 * gy + r21 * gz,
                               r02 * gx + r12 * gy + r22 * gz), v)

    def _shift_of(self, gravity, v):
        """``qdd - chain qdd``: the velocity product of ``v`` (None: at rest) and gravity
        in base axes."""
        shift = np.zeros(self._nv)
        if v is None:
            shift[:3] = gravity
            return shift
        vx, vy, vz, wx, wy, wz = v[:_BASE].tolist()
        total = vx + vy + vz + wx + wy + wz
        if total - total != 0.0:
            as_vector("v", v, self.nv)      # NaN or inf: raises, naming v
        shift[:_BASE] = (vy * wz - vz * wy + gravity[0], vz * wx - vx * wz + gravity[1],
                         vx * wy - vy * wx + gravity[2], wy * wz, -wx * wz, wx * wy)
        return shift

    def _named(self, error, **vectors):
        """The chain model's InvalidInputError ``error`` about NaN or range, as the
        validation of this model's ``vectors`` names it (indices in this model's
        coordinates); ``error`` itself when they pass."""
        sizes = {"q": self.nq}
        try:
            for name, value in vectors.items():
                as_vector(name, value, sizes.get(name, self.nv))
        except InvalidInputError as named:
            return named
        return error

    def _frame(self, frame):
        if type(frame) is not str or frame in self._virtual_frames:
            raise UnknownNameError("frame", frame, self._frame_names)
        return frame

    def _base_wrenches(self, wrenches, rotation):
        """World-axes link wrenches as the chain model's (base axes)."""
        if wrenches is None:
            return None
        if type(rotation) is tuple:
            rotation = np.array(rotation).reshape(3, 3)
        if not isinstance(wrenches, dict):
            raise InvalidInputError("wrenches must be a dict {link: [fx, fy, fz, tx, ty, tz]}, "
                                    f"not {type(wrenches).__name__}")
        turned = {}
        for link, wrench in wrenches.items():
            wrench = as_vector(f"wrench on {link!r}", wrench, 6)
            turned[self._frame(link)] = np.concatenate((wrench[:3] @ rotation,
                                                        wrench[3:] @ rotation))
        return turned

    @staticmethod
    def _spatial_rotation(rotation, blocks=2):
        return np.kron(np.eye(blocks), rotation)

    # ------------------------------------------------------------------ dynamics
    def _compiled_inputs(self, q, v, a):
        """``(chain coordinates, a - shift)`` (v or a None: zero) in one call of the generic
        module; None where it is not loaded or declines the input (the Python path then
        answers, or names the problem)."""
        compiled = self._chain._compiled
        if compiled is None:
            return None
        prepared = compiled.module.floating_inputs(q, v, a, self._base_constants)
        return prepared if type(prepared) is tuple else None

    def inverse_dynamics(self, q, v, a, wrenches=None):
        """Generalized forces (nv; base wrench first) producing ``a``:
        ``M a + h = tau + sum J_i^T w_i``."""
        if wrenches is None:
            prepared = self._compiled_inputs(q, v, a)
            if prepared is not None:
                try:
                    return self._chain.inverse_dynamics(prepared[0], v, prepared[1])
                except InvalidInputError as error:
                    raise self._named(error, q=q, v=v, a=a) from None
        v = self._v("v", v)
        if wrenches is None:
            chain_q, shift = self._chain_inputs(q, v)
            try:
                return self._chain.inverse_dynamics(chain_q, v, self._v("a", a) - shift)
            except InvalidInputError as error:
                raise self._named(error, q=q, v=v, a=a) from None
        chain_q, rotation = self._pose(q)
        return self._chain.inverse_dynamics(chain_q, v, self._v("a", a) - self._shift(rotation, v),
                                            self._base_wrenches(wrenches, rotation))

    def gravity_torques(self, q):
        """``g(q)``: the generalized forces that hold the robot still, the base's included."""
        prepared = self._compiled_inputs(q, None, None)
        if prepared is None:
            chain_q, shift = self._chain_inputs(q, None)
            prepared = chain_q, -shift
        try:
            return self._chain.inverse_dynamics(prepared[0], np.zeros(self._nv), prepared[1])
        except InvalidInputError as error:
            raise self._named(error, q=q) from None

    def bias_torques(self, q, v):
        prepared = self._compiled_inputs(q, v, None)
        if prepared is None:
            v = self._v("v", v)
            chain_q, shift = self._chain_inputs(q, v)
            prepared = chain_q, -shift
        try:
            return self._chain.inverse_dynamics(prepared[0], v, prepared[1])
        except InvalidInputError as error:
            raise self._named(error, q=q, v=v) from None

    def mass_matrix(self, q):
        """M(q), nv x nv: the base's orientation and position do not enter it."""
        prepared = self._compiled_inputs(q, None, None)
        try:
            return self._chain.mass_matrix(self._pose_values(q)[0] if prepared is None
                                           else prepared[0])
        except InvalidInputError as error:
            raise self._named(error, q=q) from None

    def forward_dynamics(self, q, v, tau, wrenches=None):
        prepared = None if wrenches is not None else self._compiled_inputs(q, v, None)
        if prepared is not None:
            # the second part is -shift: qdd = chain qdd + shift
            chain_q, base_wrenches, minus_shift = prepared[0], None, prepared[1]
        else:
            v = self._v("v", v)
            if wrenches is None:
                chain_q, shift = self._chain_inputs(q, v)
                base_wrenches = None
            else:
                chain_q, rotation = self._pose(q)
                shift = self._shift(rotation, v)
                base_wrenches = self._base_wrenches(wrenches, rotation)
            minus_shift = -shift
        try:
            return self._chain.forward_dynamics(chain_q, v, tau, base_wrenches) - minus_shift
        except SingularDynamicsError as error:
            raise self._named_base(error) from None
        except InvalidInputError as error:
            raise self._named(error, q=q, v=v, tau=tau) from None

    def _named_base(self, error):
        """The chain model's singular-dynamics ``error`` in this model's terms."""
        if not any(f"{name!r}" in str(error) for name in self._virtual_frames):
            return error
        return SingularDynamicsError(
            f"robot {self.name!r} has no forward dynamics on a free base: its inertia about "
            "the base cannot be inverted (a massless robot, or one whose bodies have no "
            "inertia about some axis, cannot float)")

    # ------------------------------------------------------------------ batches
    def _batch_base(self, Q, V=None):
        """``(chain Q, shifts)`` of validated samples."""
        Q = as_samples("Q", Q, self.nq)
        rotations = _rotations_from_quaternions(_checked_quaternions("Q", Q[:, 3:7]))
        chain_Q = np.zeros((len(Q), self.nv))
        chain_Q[:, _BASE:] = Q[:, 7:]
        shifts = np.zeros((len(Q), self.nv))
        if V is not None:
            shifts[:, :_BASE] = _velocity_product_rows(V)
        shifts[:, :3] += np.einsum("nij,i->nj", rotations, np.array(self._gravity_floats))
        return chain_Q, shifts

    def inverse_dynamics_batch(self, Q, V, A):
        count = len(as_samples("Q", Q, self.nq))
        V, A = as_samples("V", V, self.nv, count), as_samples("A", A, self.nv, count)
        chain_Q, shifts = self._batch_base(Q, V)
        return self._chain.inverse_dynamics_batch(chain_Q, V, A - shifts)

    def gravity_torques_batch(self, Q):
        chain_Q, shifts = self._batch_base(Q)
        return self._chain.inverse_dynamics_batch(chain_Q, np.zeros_like(chain_Q), -shifts)

    def forward_dynamics_batch(self, Q, V, TAU):
        count = len(as_samples("Q", Q, self.nq))
        V, TAU = as_samples("V", V, self.nv, count), as_samples("TAU", TAU, self.nv, count)
        chain_Q, shifts = self._batch_base(Q, V)
        try:
            return self._chain.forward_dynamics_batch(chain_Q, V, TAU) + shifts
        except SingularDynamicsError as error:
            raise self._named_base(error) from None

    # ------------------------------------------------------------------ derivatives
    def inverse_dynamics_derivatives(self, q, v, a, wrenches=None):
        """``(dtau_dq, dtau_dv)``, nv x nv, ``dq`` in the tangent space of ``q`` as
        Pinocchio's (the base displaced in its own frame); wrenches held fixed in world
        axes about their link origins."""
        _, rotation, chain_q = self._base(q)
        v = self._v("v", v)
        shift = self._shift(rotation.ravel().tolist(), v)
        base_wrenches = self._base_wrenches(wrenches, rotation)
        chain_dq, dtau_dv = self._chain.inverse_dynamics_derivatives(
            chain_q, v, self._v("a", a) - shift, base_wrenches)
        mass = self._chain.mass_matrix(chain_q)
        dtau_dv = dtau_dv.copy()
        dtau_dv[:, :_BASE] -= mass[:, :_BASE] @ velocity_product_derivative(v)
        return self._with_base_columns(chain_dq, mass, rotation, chain_q, base_wrenches), dtau_dv

    def _with_base_columns(self, chain_dq, mass, rotation, chain_q, base_wrenches):
        """dtau/dq: the joints' columns of the chain model's, the base's from what its
        pose changes: gravity (and wrenches) in base axes as the base turns."""
        dtau_dq = np.zeros_like(chain_dq)
        dtau_dq[:, _BASE:] = chain_dq[:, _BASE:]
        # R -> R exp(d), so R^T g -> R^T g + [R^T g]x d.
        dtau_dq[:, 3:6] = -mass[:, :3] @ _skew(np.array(self._gravity_floats) @ rotation)
        for link, wrench in (base_wrenches or {}).items():
            turning = np.vstack((_skew(wrench[:3]), _skew(wrench[3:])))
            dtau_dq[:, 3:6] -= self._chain.jacobian(chain_q, link).T @ turning
        return dtau_dq

    def forward_dynamics_derivatives(self, q, v, tau, wrenches=None):
        """``(da_dq, da_dv, da_dtau)``; ``dq`` as :meth:`inverse_dynamics_derivatives`.

        The chain model's, with the base's columns: turned, the base sees gravity (and
        world-fixed wrenches) turn the other way; the velocity product adds to ``da_dv``."""
        _, rotation, chain_q = self._base(q)
        v = self._v("v", v)
        base_wrenches = self._base_wrenches(wrenches, rotation)
        try:
            chain_dq, da_dv, inverse = self._chain.forward_dynamics_derivatives(
                chain_q, v, tau, base_wrenches)
        except SingularDynamicsError as error:
            raise self._named_base(error) from None
        da_dq = np.zeros_like(chain_dq)
        da_dq[:, _BASE:] = chain_dq[:, _BASE:]
        da_dq[:3, 3:6] = _skew(np.array(self._gravity_floats) @ rotation)
        for link, wrench in (base_wrenches or {}).items():
            turning = np.vstack((_skew(wrench[:3]), _skew(wrench[3:])))
            da_dq[:, 3:6] += inverse @ (self._chain.jacobian(chain_q, link).T @ turning)
        da_dv = da_dv.copy()
        da_dv[:_BASE, :_BASE] += velocity_product_derivative(v)
        return da_dq, da_dv, inverse

    def gravity_derivatives(self, q):
        return self.inverse_dynamics_derivatives(q, np.zeros(self.nv), np.zeros(self.nv))[0]

    def _samples_loop(self, single, arrays):
        results = [single(*sample) for sample in zip(*arrays)]
        return tuple(np.array(part) for part in zip(*results)) if type(results[0]) is tuple \
            else np.array(results)

    def inverse_dynamics_derivatives_batch(self, Q, V, A):
        count = len(as_samples("Q", Q, self.nq))
        return self._samples_loop(self.inverse_dynamics_derivatives, (
            as_samples("Q", Q, self.nq), as_samples("V", V, self.nv, count),
            as_samples("A", A, self.nv, count)))

    def forward_dynamics_derivatives_batch(self, Q, V, TAU):
        count = len(as_samples("Q", Q, self.nq))
        return self._samples_loop(self.forward_dynamics_derivatives, (
            as_samples("Q", Q, self.nq), as_samples("V", V, self.nv, count),
            as_samples("TAU", TAU, self.nv, count)))

    def gravity_derivatives_batch(self, Q):
        return self._samples_loop(self.gravity_derivatives, (as_samples("Q", Q, self.nq),))

    # ------------------------------------------------------------------ kinematics
    def frame_pose(self, q, frame):
        """4x4 pose of a link frame in the world."""
        q, rotation, chain_q = self._base(q)
        local = self._chain.frame_pose(chain_q, self._frame(frame))
        pose = np.eye(4)
        pose[:3, :3] = rotation @ local[:3, :3]
        pose[:3, 3] = rotation @ local[:3, 3] + q[:3]
        return pose

    def frame_poses(self, q):
        q, rotation, chain_q = self._base(q)
        base_pose = np.eye(4)
        base_pose[:3, :3], base_pose[:3, 3] = rotation, q[:3]
        return {name: base_pose @ pose for name, pose in self._chain.frame_poses(chain_q).items()
                if name not in self._virtual_frames}

    def jacobian(self, q, frame):
        """6 x nv: ``[v; w]`` of the frame origin in world axes."""
        _, rotation, chain_q = self._base(q)
        local = self._chain.jacobian(chain_q, self._frame(frame))
        return np.vstack((rotation @ local[:3], rotation @ local[3:]))

    # ------------------------------------------------------------------ task space and constraints
    def _frame_list(self, frame):
        names = [frame] if isinstance(frame, str) else list(frame) if frame is not None else []
        for name in names:
            self._frame(name)
        return names

    def task_space_inertia(self, q, frame, part="full", damping=None):
        """Lambda of the frame origin(s), world axes (:meth:`RobotModel.task_space_inertia`)."""
        return self.task_space_inertia_info(q, frame, part, damping).inertia

    def task_space_inertia_info(self, q, frame, part="full", damping=None):
        _, rotation, chain_q = self._base(q)
        names = self._frame_list(frame)
        info = self._chain.task_space_inertia_info(chain_q, frame, part, damping)
        rows = len(range(6)[TASK_SPACE_PARTS[part]])
        turn = self._spatial_rotation(rotation, len(names) * rows // 3)
        return dataclasses.replace(info, inertia=turn @ info.inertia @ turn.T,
                                   inertia_inverse=turn @ info.inertia_inverse @ turn.T)

    def hybrid_dynamics(self, q, v, constraints, tau=None, wrenches=None):
        """:meth:`RobotModel.hybrid_dynamics` with ``alpha`` in world axes and frame
        accelerations in world axes; ``qdd`` has nv entries."""
        _, rotation, chain_q = self._base(q)
        v = self._v("v", v)
        shift = self._shift(rotation.ravel().tolist(), v)
        gravity = np.concatenate((np.array(self._gravity_floats) @ rotation, np.zeros(3)))
        turn = self._spatial_rotation(rotation)
        chain_constraints = []
        for constraint in constraints:
            try:
                frame, alpha, beta = constraint
            except (TypeError, ValueError):
                raise InvalidInputError("each constraint must be (frame, alpha, beta)") from None
            alpha = np.asarray(alpha, dtype=float)
            if alpha.ndim == 1:
                alpha = alpha[:, None]
            if alpha.shape[0] != 6:
                raise InvalidInputError(f"constraint on {frame!r}: alpha must be 6 x m, not "
                                        f"{alpha.shape}")
            base_alpha = turn.T @ alpha
            chain_constraints.append((self._frame(frame), base_alpha,
                                      np.asarray(beta, dtype=float) - gravity @ base_alpha))
        try:
            result = self._chain.hybrid_dynamics(chain_q, v, chain_constraints, tau,
                                                 self._base_wrenches(wrenches, rotation))
        except SingularDynamicsError as error:
            raise self._named_base(error) from None
        accelerations = {name: turn @ (acceleration + gravity)
                         for name, acceleration in result.frame_accelerations.items()}
        return dataclasses.replace(result, qdd=result.qdd + shift, frame_accelerations=accelerations,
                                   joint_names=list(BASE_VELOCITY_NAMES) + self.joint_names)

    def mixed_dynamics(self, q, v, a, tau, prescribed, wrenches=None):
        """Actuated joints in ``prescribed`` take their ``a``, the rest (the base always)
        their ``tau``."""
        _, rotation, chain_q = self._base(q)
        v = self._v("v", v)
        try:
            names = [prescribed] if isinstance(prescribed, str) else list(prescribed)
        except TypeError:
            raise InvalidInputError("prescribed must be a joint name or a list of them, not "
                                    f"{type(prescribed).__name__}") from None
        for name in names:
            self.joint_index(name)
        shift = self._shift(rotation.ravel().tolist(), v)
        try:
            result = self._chain.mixed_dynamics(chain_q, v, self._v("a", a) - shift, tau, names,
                                                self._base_wrenches(wrenches, rotation))
        except SingularDynamicsError as error:
            raise self._named_base(error) from None
        return type(result)(result.qdd + shift, result.tau)

    # RobotModel's, on this model's Jacobians and gravity torques: the base's six rows
    # are the unactuated ones.
    whole_body_gravity = RobotModel.whole_body_gravity
    contact_dynamics = RobotModel.contact_dynamics

    # ------------------------------------------------------------------ centroidal quantities
    def center_of_mass(self, q):
        """Centre of mass in the world."""
        q, rotation, chain_q = self._base(q)
        return rotation @ self._base_center_of_mass(self._chain.mass_matrix(chain_q)) + q[:3]

    def _base_center_of_mass(self, mass_matrix):
        """The centre of mass in base axes, read from M's base block, the whole robot's
        spatial inertia about the base origin: ``M[3:6, :3] = m [c]x``."""
        mass = float(mass_matrix[0, 0])
        if not mass > 0:
            raise InvalidInputError(f"robot {self.name!r} has no mass: it has no centre of mass")
        return (float(mass_matrix[5, 1]) / mass, float(mass_matrix[3, 2]) / mass,
                float(mass_matrix[4, 0]) / mass)

    def _to_center_of_mass(self, rotation, mass_matrix):
        """The 6x6 map from momentum ``[linear; angular about the base origin]`` in base
        axes to momentum about the centre of mass in world axes, ``[[R, 0], [-R [c]x, R]]``
        (``rotation``: the base rotation's 9 entries)."""
        cx, cy, cz = self._base_center_of_mass(mass_matrix)
        r00, r01, r02, r10, r11, r12, r20, r21, r22 = rotation
        # One flat tuple: numpy builds it at a third of the cost of nested rows.
        return np.array((
            r00, r01, r02, 0.0, 0.0, 0.0, r10, r11, r12, 0.0, 0.0, 0.0,
            r20, r21, r22, 0.0, 0.0, 0.0,
            r02 * cy - r01 * cz, r00 * cz - r02 * cx, r01 * cx - r00 * cy, r00, r01, r02,
            r12 * cy - r11 * cz, r10 * cz - r12 * cx, r11 * cx - r10 * cy, r10, r11, r12,
            r22 * cy - r21 * cz, r20 * cz - r22 * cx, r21 * cx - r20 * cy, r20, r21, r22,
        )).reshape(6, 6)

    def centroidal_momentum_matrix(self, q):
        """Ag, 6 x nv: ``[linear; angular]`` momentum about the centre of mass, world
        axes, is ``Ag v`` (Pinocchio's ``ccrba``).  The first six rows of M are the
        momentum at the base, in base axes."""
        compiled = self._chain._compiled
        if compiled is not None:
            matrix = compiled.module.floating_centroidal_momentum_matrix(
                compiled.model, q, self._base_constants, self._chain._params)
            if type(matrix) is _NDARRAY:
                return matrix
        chain_q, rotation = self._pose(q)
        mass_matrix = self._chain.mass_matrix(chain_q)
        return self._to_center_of_mass(rotation, mass_matrix) @ mass_matrix[:_BASE]

    def center_of_mass_jacobian(self, q):
        """3 x nv: the centre of mass's velocity in world axes is ``J v``."""
        chain_q, rotation = self._pose(q)
        mass_matrix = self._chain.mass_matrix(chain_q)
        self._base_center_of_mass(mass_matrix)      # refuses a massless robot
        return np.array(rotation).reshape(3, 3) @ mass_matrix[:3] / mass_matrix[0, 0]

    def centroidal_momentum_bias(self, q, v):
        """``Ag_dot v``: the rate of centroidal momentum at zero acceleration (world axes,
        about the centre of mass; gravity not included).  It is the wrench on the base
        that gives the base no acceleration without gravity: the rate of the momentum
        about the inertial point at the base origin, moved to the centre of mass."""
        chain_q, rotation = self._pose(q)
        v = self._v("v", v)
        shift = np.zeros(self._nv)
        shift[:_BASE] = velocity_product(v)
        wrench = self._chain.inverse_dynamics(chain_q, v, -shift)[:_BASE]
        return self._to_center_of_mass(rotation, self._chain.mass_matrix(chain_q)) @ wrench


def _not_yet(name):
    def refuse(self, *arguments, **options):
        raise InvalidInputError(f"{name} is not available on floating-base models yet "
                                "(docs/floating_base.md)")
    refuse.__name__ = name
    return refuse


# What RobotModel has and the floating-base model does not do yet is refused by name,
# never answered in the chain model's coordinates.
for _name, _value in list(vars(RobotModel).items()):
    if not _name.startswith("_") and _name not in vars(FloatingBaseModel) and (
            callable(_value) and not isinstance(_value, (classmethod, staticmethod))):
        setattr(FloatingBaseModel, _name, _not_yet(_name))
