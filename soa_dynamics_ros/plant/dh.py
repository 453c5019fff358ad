"""Denavit-Hartenberg parameters of a serial chain, extracted from the general URDF transforms.

The URDF places each joint by a general homogeneous transform.  Here every
moving joint's axis is taken as a line in space at the zero configuration
(point and unit direction, from :meth:`RobotModel.frame_pose` of its child
link); DH frames are built on these lines, and the four parameters of each
joint are then read back from the relative transform of consecutive DH frames
with ``atan2`` (never ``acos``), so that signs come out right in every quadrant.

Choices that make the frames unique (documented in docs/plant_tools.md):

* ``z`` points along the URDF joint axis, so the joint variable enters with
  sign +1: ``theta = theta_offset + s`` (revolute, continuous) or
  ``d = d_offset + s`` (prismatic), with ``s`` the joint coordinate
  (``multiplier * q_master + offset`` for a mimic joint).
* Skew consecutive axes: ``x`` is their common normal, pointing from the
  earlier axis to the later one (``a > 0``).
* Intersecting axes: ``x = z_prev x z_next`` normalized (``a = 0``, ``alpha`` in (0, pi)).
* Parallel axes (sine of the angle below :data:`PARALLEL_TOLERANCE`): the
  common normal through the previous frame's origin (``d = 0``), ``x``
  pointing towards the later axis; ``alpha`` is 0 or pi.
* Collinear axes: ``x`` keeps the previous frame's ``x`` (``theta_offset = 0``, ``a = 0``).
* First and last frames are free in DH; a constant ``base`` transform (root
  link to DH frame 0) and ``tool`` transform (last DH frame to the tip link)
  make ``base @ A_1(q) ... A_n(q) @ tool`` equal the URDF forward kinematics
  of the tip link exactly.

Standard (distal) DH: ``A_i = Rz(theta_i) Tz(d_i) Tx(a_i) Rx(alpha_i)``, joint i
moves about ``z_{i-1}``.  Modified (proximal, Craig) DH:
``A_i = Rx(alpha_{i-1}) Tx(a_{i-1}) Rz(theta_i) Tz(d_i)``, joint i moves about
``z_i``; the row of joint i holds ``alpha_{i-1}, a_{i-1}, theta_i, d_i``.

Axes that are nearly but not exactly parallel have a common normal far away:
DH is ill-conditioned there (a known limitation of the convention); the
``fk_error`` of the result reports how well the table reproduces the URDF.
"""
from dataclasses import dataclass, field

import numpy as np

from ..multibody.joints import is_moving, joint_model
from ..validation import as_float_array
from .chain import serial_path

#: Consecutive axes whose directions differ by less than this (sine of the angle) are parallel.
PARALLEL_TOLERANCE = 1e-10
#: Lines closer than this (metres) intersect.
DISTANCE_TOLERANCE = 1e-10

STANDARD, MODIFIED = "standard", "modified"


def standard_transform(theta, d, a, alpha):
    """``Rz(theta) Tz(d) Tx(a) Rx(alpha)``, closed form."""
    ct, st, ca, sa = np.cos(theta), np.sin(theta), np.cos(alpha), np.sin(alpha)
    return np.array([[ct, -st * ca, st * sa, a * ct],
                     [st, ct * ca, -ct * sa, a * st],
                     [0.0, sa, ca, d],
                     [0.0, 0.0, 0.0, 1.0]])


def modified_transform(alpha, a, theta, d):
    """``Rx(alpha) Tx(a) Rz(theta) Tz(d)``, closed form."""
    ct, st, ca, sa = np.cos(theta), np.sin(theta), np.cos(alpha), np.sin(alpha)
    return np.array([[ct, -st, 0.0, a],
                     [st * ca, ct * ca, -sa, -sa * d],
                     [st * sa, ct * sa, ca, ca * d],
                     [0.0, 0.0, 0.0, 1.0]])


def _inverse(t):
    result = np.eye(4)
    result[:3, :3] = t[:3, :3].T
    result[:3, 3] = -t[:3, :3].T @ t[:3, 3]
    return result


def _frame(origin, z, x):
    z = z / np.linalg.norm(z)
    x = x - (x @ z) * z
    x = x / np.linalg.norm(x)
    t = np.eye(4)
    t[:3, 0], t[:3, 1], t[:3, 2], t[:3, 3] = x, np.cross(z, x), z, origin
    return t


def _perpendicular(z, preferred):
    """Unit vector perpendicular to ``z``, as close to ``preferred`` as possible."""
    for candidate in (preferred, np.array([1.0, 0, 0]), np.array([0, 1.0, 0]), np.array([0, 0, 1.0])):
        if candidate is None:
            continue
        v = candidate - (candidate @ z) * z
        if np.linalg.norm(v) > 1e-6:
            return v / np.linalg.norm(v)
    raise AssertionError("unreachable")  # pragma: no cover


def common_normal(point_a, z_a, point_b, z_b, preferred_point, preferred_x):
    """``(x, foot_a, foot_b, kind)`` of two lines (unit directions), per the module's rules.

    ``foot_a`` / ``foot_b`` are where the normal meets line a / b; ``x`` is its
    unit direction; ``kind`` is 'skew', 'intersecting', 'parallel' or 'collinear'.
    """
    cross = np.cross(z_a, z_b)
    sine = np.linalg.norm(cross)
    w = point_b - point_a
    if sine > PARALLEL_TOLERANCE:
        # Feet: point_a + s z_a and point_b + t z_b with their difference normal to both lines.
        c = z_a @ z_b
        s = (w @ z_a - c * (w @ z_b)) / (1.0 - c * c)
        t = (c * (w @ z_a) - w @ z_b) / (1.0 - c * c)
        foot_a, foot_b = point_a + s * z_a, point_b + t * z_b
        normal = cross / sine
        gap = (foot_b - foot_a) @ normal
        if abs(gap) <= DISTANCE_TOLERANCE:
            middle = 0.5 * (foot_a + foot_b)
            return normal, middle, middle, "intersecting"
        return normal * np.sign(gap), foot_a, foot_b, "skew"
    foot_a = point_a + ((preferred_point - point_a) @ z_a) * z_a
    offset = point_b - foot_a
    offset = offset - (offset @ z_a) * z_a
    distance = np.linalg.norm(offset)
    if distance <= DISTANCE_TOLERANCE:
        return _perpendicular(z_a, preferred_x), foot_a, foot_a, "collinear"
    return offset / distance, foot_a, foot_a + offset, "parallel"


# ---------------------------------------------------------------------- tables
@dataclass
class DHRow:
    joint: str
    type: str            # 'revolute', 'continuous' or 'prismatic'
    theta: float         # offset if the joint is rotary, else the constant value
    d: float             # offset if the joint is prismatic, else the constant value
    a: float
    alpha: float
    variable: str        # 'theta' or 'd'
    axis_relation: str   # how this joint's axis meets the next one: skew, intersecting, parallel, collinear, last
    mimic_of: str = None
    multiplier: float = 1.0
    offset: float = 0.0

    def as_dict(self):
        return dict(self.__dict__)


@dataclass
class DHTable:
    """DH parameters of the chain root -> tip: ``base @ A_1(q) ... A_n(q) @ tool`` is the tip pose."""
    convention: str
    root: str
    tip: str
    rows: list
    base: np.ndarray
    tool: np.ndarray
    joint_names: list                 # model q order
    fk_error: float = float("nan")   # max |FK(DH) - FK(URDF)| over the verification samples
    _columns: dict = field(default=None, repr=False)

    def coordinate(self, row, q):
        """The joint coordinate s of ``row`` at model configuration ``q``."""
        master = row.mimic_of or row.joint
        return row.multiplier * q[self._columns[master]] + row.offset

    def transforms(self, q):
        """``A_1(q) ... A_n(q)`` as a list of 4x4."""
        q = as_float_array("q", q, "vector of joint positions")
        result = []
        for row in self.rows:
            s = self.coordinate(row, q)
            theta = row.theta + s if row.variable == "theta" else row.theta
            d = row.d + s if row.variable == "d" else row.d
            if self.convention == STANDARD:
                result.append(standard_transform(theta, d, row.a, row.alpha))
            else:
                result.append(modified_transform(row.alpha, row.a, theta, d))
        return result

    def forward(self, q):
        """Pose of the tip link in the root link frame rebuilt from the table."""
        pose = self.base
        for transform in self.transforms(q):
            pose = pose @ transform
        return pose @ self.tool

    def as_dict(self):
        return {"convention": self.convention, "root": self.root, "tip": self.tip,
                "joint_names": self.joint_names, "rows": [row.as_dict() for row in self.rows],
                "base": self.base.tolist(), "tool": self.tool.tolist(), "fk_error": self.fk_error}


def _axis_lines(model, joints):
    """World (root-frame) line ``(point, unit direction)`` of each moving joint at q = 0."""
    q0 = np.zeros(model.dof)
    lines = []
    for joint in joints:
        pose = model.frame_pose(q0, joint.child)
        axis = pose[:3, :3] @ (joint.axis / np.linalg.norm(joint.axis))
        lines.append((pose[:3, 3], axis / np.linalg.norm(axis)))
    return lines


def _coordinate_maps(model, joints):
    """Per joint ``(master or None, multiplier, offset)`` from the model's coordinate map."""
    bodies = {joint.name: joint.body for joint in model.joints}
    maps = []
    for joint in joints:
        master, multiplier, offset = model.tree.coordinates.hinge_coordinate(bodies[joint.name])
        master_name = model.joint_names[master]
        maps.append((None if master_name == joint.name else master_name, multiplier, offset))
    return maps


def dh_parameters(model, tip, convention=STANDARD, verify_samples=20, seed=0):
    """:class:`DHTable` of the serial chain from the root link to ``tip``.

    Raises :class:`~soa_dynamics_ros.errors.NonSerialChainError` naming the
    branch point if moving joints leave the root-to-tip path.  ``fk_error`` is
    the largest entry-wise difference between the rebuilt and the URDF tip pose
    over the zero pose and ``verify_samples`` random configurations.
    """
    if convention not in (STANDARD, MODIFIED):
        raise ValueError(f"convention must be {STANDARD!r} or {MODIFIED!r}")
    path = serial_path(model, tip)
    joints = [joint for joint in path if is_moving(joint.type)]
    lines = _axis_lines(model, joints)
    q0 = np.zeros(model.dof)
    tip_pose = model.frame_pose(q0, tip)
    root_x = np.array([1.0, 0.0, 0.0])
    n = len(joints)
    frames, relations = [], []
    if convention == STANDARD:
        # Frame i (0..n-1) has z on joint i+1's axis; frame n coincides with frame n-1 at q = 0.
        if n == 0:
            frames = []
        else:
            point, z = lines[0]
            if n >= 2:
                x, origin, _, _ = common_normal(*lines[0], *lines[1], point, root_x)
            else:
                x, origin = _perpendicular(z, root_x), point
            frames.append(_frame(origin, z, x))
            for i in range(1, n):
                previous = frames[-1]
                x, _, foot_b, kind = common_normal(*lines[i - 1], *lines[i], previous[:3, 3],
                                                   previous[:3, 0])
                frames.append(_frame(foot_b, lines[i][1], x))
                relations.append(kind)
            frames.append(frames[-1].copy())
            relations.append("last")
    else:
        # Frame i (1..n) has z on joint i's axis; frame 0 coincides with frame 1 at q = 0.
        if n:
            preferred_point, preferred_x = lines[0][0], root_x
            for i in range(n):
                point, z = lines[i]
                if i + 1 < n:
                    x, foot_a, foot_b, kind = common_normal(point, z, *lines[i + 1], preferred_point,
                                                            preferred_x)
                    frames.append(_frame(foot_a, z, x))
                    relations.append(kind)
                    preferred_point, preferred_x = foot_b, x
                else:
                    origin = point + ((preferred_point - point) @ z) * z
                    frames.append(_frame(origin, z, _perpendicular(z, preferred_x)))
                    relations.append("last")
            frames.insert(0, frames[0].copy())
    maps = _coordinate_maps(model, joints)
    rows = []
    for i, joint in enumerate(joints):
        relative = _inverse(frames[i]) @ frames[i + 1]
        rot, p = relative[:3, :3], relative[:3, 3]
        if convention == STANDARD:
            theta = np.arctan2(rot[1, 0], rot[0, 0])
            alpha = np.arctan2(rot[2, 1], rot[2, 2])
            a = p[0] * np.cos(theta) + p[1] * np.sin(theta)
            d = p[2]
        else:
            theta = np.arctan2(-rot[0, 1], rot[0, 0])
            alpha = np.arctan2(-rot[1, 2], rot[2, 2])
            a = p[0]
            d = -np.sin(alpha) * p[1] + np.cos(alpha) * p[2]
        master, multiplier, offset = maps[i]
        variable = "d" if joint_model(joint.type).unit == "m" else "theta"
        # The coordinate s is `offset` at q = 0: subtract it so that theta = theta_offset + s.
        if variable == "theta":
            theta = theta - offset
        else:
            d = d - offset
        rows.append(DHRow(joint.name, joint.type, float(theta) + 0.0, float(d) + 0.0, float(a) + 0.0,
                          float(alpha) + 0.0,
                          variable, relations[i], master, multiplier, offset))
    if n:
        base = frames[0]
        tool = _inverse(frames[-1]) @ tip_pose
    else:
        base, tool = tip_pose, np.eye(4)
    table = DHTable(convention, model.description.root, tip, rows, base, tool, model.joint_names,
                    _columns={name: i for i, name in enumerate(model.joint_names)})
    table.fk_error = fk_error(model, table, verify_samples, seed)
    return table


def verification_configurations(model, count, seed=0):
    """The zero pose and ``count`` random configurations within the joint limits (+-pi if none)."""
    rng = np.random.default_rng(seed)
    meta = {joint.name: joint for joint in model.joints}
    lower = np.array([meta[n].lower if np.isfinite(meta[n].lower) else -np.pi for n in model.joint_names])
    upper = np.array([meta[n].upper if np.isfinite(meta[n].upper) else np.pi for n in model.joint_names])
    return [np.zeros(model.dof)] + [rng.uniform(lower, upper) for _ in range(count)]


def fk_error(model, table, samples=20, seed=0):
    """Largest entry-wise |rebuilt - URDF| of the tip pose over :func:`verification_configurations`."""
    return float(max(np.abs(table.forward(q) - model.frame_pose(q, table.tip)).max()
                     for q in verification_configurations(model, samples, seed)))
