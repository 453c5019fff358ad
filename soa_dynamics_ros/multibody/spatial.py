"""Spatial (6D) algebra: the vocabulary of the spatial operator algebra.

Conventions, used everywhere in this package:

* A spatial motion vector (velocity, acceleration, hinge map column) is
  ``[v; w]``: the linear part of the frame origin first, then the angular part,
  both in that frame's axes.  A spatial force (wrench) is ``[f; t]``: force,
  then moment about the frame origin.  This is Pinocchio's ordering (Jain and
  Featherstone put the angular part first; only the ordering differs).
* A placement ``(R, p)`` of frame B in frame A maps B coordinates to A:
  ``x_A = R @ x_B + p``.
* ``motion_transform(R, p)`` is the 6x6 matrix that re-expresses a motion
  vector given at A's origin in A's axes at B's origin in B's axes.  Its
  transpose carries a force from B back to A.  In the SOA literature this pair
  is the rigid-body transformation operator phi and its adjoint phi*.
"""
import numpy as np

IDENTITY3 = np.eye(3)


def dtype_of(*arrays):
    """Element type for results computed from ``arrays``: float64, or ``object``
    when an input holds symbolic scalars (the kernel generator traces these same
    functions with them; see :mod:`soa_dynamics_ros.kernels`)."""
    for array in arrays:
        if getattr(array, "dtype", None) == object:
            return object
    return float


def cross(a, b):
    """``a x b`` of 3-vectors, float or symbolic: numpy 1.x's ``np.cross`` refuses object
    arrays (UFuncTypeError), and the kernel generator traces with those."""
    return np.array([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]],
                    dtype=dtype_of(a, b))


def skew(vector):
    """Matrix of the cross product: ``skew(a) @ b == cross(a, b)``."""
    x, y, z = vector
    return np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])


def rotation_about_axis(axis, angle):
    """Rotation by ``angle`` about the unit vector ``axis`` (Rodrigues)."""
    k = skew(axis)
    return IDENTITY3 + np.sin(angle) * k + (1.0 - np.cos(angle)) * (k @ k)


def rotation_from_rpy(roll, pitch, yaw):
    """URDF's fixed-axis roll-pitch-yaw: ``Rz(yaw) @ Ry(pitch) @ Rx(roll)``."""
    cr, sr = np.cos(roll), np.sin(roll)
    cp, sp = np.cos(pitch), np.sin(pitch)
    cy, sy = np.cos(yaw), np.sin(yaw)
    return np.array([
        [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
        [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
        [-sp, cp * sr, cp * cr],
    ])


def homogeneous(rotation, translation):
    """4x4 homogeneous matrix of a placement (float, or symbolic for the kernel generator)."""
    pose = np.eye(4, dtype=dtype_of(rotation, translation)) + 0.0
    pose[:3, :3] = rotation
    pose[:3, 3] = translation
    return pose


def motion_transform(rotation, translation):
    """6x6 map of motion vectors from frame A to frame B placed at (R, p) in A."""
    rt = rotation.T
    x = np.zeros((6, 6), dtype=dtype_of(rotation, translation))
    x[:3, :3] = rt
    x[:3, 3:] = -rt @ skew(translation)
    x[3:, 3:] = rt
    return x


def motion_cross(motion):
    """6x6 matrix of ``motion x`` acting on motion vectors (Featherstone's crm)."""
    v_skew, w_skew = skew(motion[:3]), skew(motion[3:])
    x = np.zeros((6, 6), dtype=dtype_of(motion))
    x[:3, :3] = w_skew
    x[:3, 3:] = v_skew
    x[3:, 3:] = w_skew
    return x


def force_cross(motion):
    """6x6 matrix of ``motion x*`` acting on force vectors (crf = -crm^T)."""
    return -motion_cross(motion).T


def transformed_inertia(transform, inertia):
    """``transform^T inertia transform``: a spatial inertia (6x6, symmetric) carried from
    body to parent by the transpose of ``motion_transform``.

    The two triangles of the product round differently; the lower one is set to the
    upper so that inertias stay exactly symmetric, and the kernels traced from this
    compute 21 entries, not 36.  ``transform`` has a zero lower-left block; multiplying it
    on the right first leaves the denser left product only the upper triangle to form.
    """
    return mirror_upper(transform.T @ (inertia @ transform))


def mirror_upper(matrix):
    """``matrix`` (square, changed in place) with its lower triangle set to its upper:
    each mirrored pair is then one value, which a traced kernel computes once."""
    lower = np.tril_indices(len(matrix), -1)
    matrix[lower] = matrix.T[lower]
    return matrix


def spatial_inertia(mass, com, inertia_about_com):
    """6x6 spatial inertia about the frame origin.

    ``com`` and ``inertia_about_com`` are in the frame's axes; the rotational
    block is moved to the origin with the parallel-axis theorem.
    """
    c = skew(com)
    return inertia_from_parameters(mass, mass * np.asarray(com),
                                   inertia_about_com - mass * (c @ c))


# The ten inertial parameters of a body, as the compiled kernels take them:
# m, m c (x, y, z), then the rotational inertia about the frame origin
# (xx, xy, xz, yy, yz, zz).
INERTIA_PARAMETER_COUNT = 10
_ROTATIONAL_ENTRIES = ((3, 3), (3, 4), (3, 5), (4, 4), (4, 5), (5, 5))


def inertia_from_parameters(mass, first_moment, rotational, dtype=float):
    """6x6 spatial inertia from mass, first moment m c and the 3x3 rotational
    inertia about the origin (only its upper triangle is read); ``dtype``
    object for symbolic entries."""
    mcx, mcy, mcz = first_moment
    (ixx, ixy, ixz), (_, iyy, iyz), (_, _, izz) = rotational
    return np.array([
        [mass, 0.0, 0.0, 0.0, mcz, -mcy],
        [0.0, mass, 0.0, -mcz, 0.0, mcx],
        [0.0, 0.0, mass, mcy, -mcx, 0.0],
        [0.0, -mcz, mcy, ixx, ixy, ixz],
        [mcz, 0.0, -mcx, ixy, iyy, iyz],
        [-mcy, mcx, 0.0, ixz, iyz, izz]], dtype=dtype)


def first_moment(inertia):
    """The first moment ``m c`` of spatial inertias ``(..., 6, 6)`` (its lower-left block
    is ``[m c]x``), as ``(..., 3)``."""
    return np.stack((inertia[..., 5, 1], inertia[..., 3, 2], inertia[..., 4, 0]), axis=-1)


def inertia_to_parameters(inertia):
    """The :data:`INERTIA_PARAMETER_COUNT` parameters of spatial inertias ``(..., 6, 6)``."""
    parameters = np.empty(inertia.shape[:-2] + (INERTIA_PARAMETER_COUNT,))
    parameters[..., 0] = inertia[..., 0, 0]
    parameters[..., 1:4] = first_moment(inertia)
    for column, (i, j) in enumerate(_ROTATIONAL_ENTRIES, start=4):
        parameters[..., column] = inertia[..., i, j]
    return parameters


def parameters_to_inertia(parameters):
    """Inverse of :func:`inertia_to_parameters` for one body."""
    m, mcx, mcy, mcz, ixx, ixy, ixz, iyy, iyz, izz = parameters
    return inertia_from_parameters(m, (mcx, mcy, mcz),
                                   ((ixx, ixy, ixz), (ixy, iyy, iyz), (ixz, iyz, izz)),
                                   dtype_of(parameters))


def inertia_parameters(inertia):
    """Inverse of :func:`spatial_inertia`: ``(mass, com, inertia_about_com)``."""
    mass = inertia[0, 0]
    if mass <= 0.0:
        return 0.0, np.zeros(3), np.zeros((3, 3))
    c = inertia[3:, :3] / mass
    com = np.array([c[2, 1], c[0, 2], c[1, 0]])
    return mass, com, inertia[3:, 3:] + mass * (c @ c)


def wrench_in_frame(wrench, point, rotation, origin):
    """Re-express a wrench ``[f; t]`` given in A's axes about ``point`` (in A)
    in the axes of a frame placed at ``(rotation, origin)`` in A, about its origin."""
    force, moment = wrench[:3], wrench[3:]
    moment_about_origin = moment + cross(point - origin, force)
    return np.concatenate((rotation.T @ force, rotation.T @ moment_about_origin))


def force_cross_of(force):
    """6x6 matrix ``K`` with ``K @ m == force_cross(m) @ force``: ``m x* f`` as a linear
    map of the motion ``m`` (the derivative recursions vary the motion, not the force)."""
    f_skew, n_skew = skew(force[:3]), skew(force[3:])
    x = np.zeros((6, 6), dtype=dtype_of(force))
    x[:3, 3:] = f_skew
    x[3:, :3] = f_skew
    x[3:, 3:] = n_skew
    return -x
