"""Rotation conversions against independent ones: Pinocchio and MuJoCo.

``conversions.quaternion_from_rotation`` orients the node's inertia marker;
``spatial.rotation_from_rpy`` reads every URDF ``<origin rpy>``.
"""
import numpy as np
import pytest
import transforms3d.euler

from support.optional import require
from soa_dynamics_ros.ros.conversions import quaternion_from_rotation
from soa_dynamics_ros.multibody.spatial import rotation_from_rpy

mujoco = require("mujoco")
pin = require("pinocchio")


def _random_rotations(rng, count):
    for _ in range(count):
        quaternion = rng.normal(size=4)
        yield pin.Quaternion(*(quaternion / np.linalg.norm(quaternion))).toRotationMatrix()


def _half_turns(rng):
    """Angles at and near pi, where the trace is -1 and w vanishes: the hard case."""
    axes = [np.eye(3)[i] for i in range(3)] + [v / np.linalg.norm(v) for v in rng.normal(size=(5, 3))]
    for axis in axes:
        for angle in (np.pi, np.pi - 1e-9, np.pi - 1e-4, -np.pi + 1e-6):
            yield pin.AngleAxis(angle, axis).toRotationMatrix()


def _marker_like(rng, count):
    """Eigenvector matrices of symmetric positive definite matrices, made proper as the node does."""
    for _ in range(count):
        a = rng.normal(size=(3, 3))
        _, vectors = np.linalg.eigh(a @ a.T + 0.1 * np.eye(3))
        if np.linalg.det(vectors) < 0:
            vectors[:, 0] *= -1
        yield vectors


def _rotation_cases(rng):
    return (list(_random_rotations(rng, 200)) + list(_half_turns(rng)) + list(_marker_like(rng, 100))
            + [np.eye(3), pin.AngleAxis(1e-12, np.array([0.0, 0.0, 1.0])).toRotationMatrix()])


def _same_rotation(quaternion, reference, what):
    """Equal up to the sign (q and -q are one rotation)."""
    quaternion, reference = np.asarray(quaternion), np.asarray(reference)
    sign = 1.0 if quaternion @ reference >= 0 else -1.0
    np.testing.assert_allclose(sign * quaternion, reference, rtol=0, atol=1e-12, err_msg=what)


def test_marker_quaternion_matches_pinocchio_and_mujoco(rng):
    for rotation in _rotation_cases(rng):
        message = quaternion_from_rotation(rotation)
        xyzw = [message.x, message.y, message.z, message.w]
        assert abs(np.linalg.norm(xyzw) - 1.0) < 1e-14
        _same_rotation(xyzw, pin.Quaternion(rotation).coeffs(), "against pin.Quaternion (x, y, z, w)")
        mujoco_wxyz = np.zeros(4)
        mujoco.mju_mat2Quat(mujoco_wxyz, rotation.flatten())
        _same_rotation([message.w, message.x, message.y, message.z], mujoco_wxyz,
                       "against mju_mat2Quat (w, x, y, z)")


@pytest.mark.parametrize("scale", [1.0, 3.0, np.pi])
def test_urdf_rpy_matches_pinocchio_and_transforms3d(rng, scale):
    for roll, pitch, yaw in rng.uniform(-scale, scale, size=(300, 3)):
        rotation = rotation_from_rpy(roll, pitch, yaw)
        np.testing.assert_allclose(rotation, pin.rpy.rpyToMatrix(roll, pitch, yaw), rtol=0,
                                   atol=1e-15)
        # URDF's rpy: fixed ("static") axes, roll about x first.
        np.testing.assert_allclose(rotation, transforms3d.euler.euler2mat(roll, pitch, yaw, "sxyz"),
                                   rtol=0, atol=1e-15)
