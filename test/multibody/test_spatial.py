"""Spatial algebra (multibody/spatial.py) against Pinocchio's SE3, Motion, Force and Inertia,
transforms3d and the definitions themselves.

Conventions checked: motion vectors [v; w], forces [f; t] (Pinocchio's order);
a placement (R, p) of frame B in A maps B coordinates to A; motion_transform(R, p)
carries a motion from A to B, its transpose a force from B back to A.
"""
import numpy as np
import pytest
import transforms3d

from support.numerics import assert_close
from support.optional import require
from soa_dynamics_ros.multibody.spatial import (cross, force_cross, homogeneous, inertia_parameters,
                                                motion_cross, motion_transform, rotation_about_axis,
                                                rotation_from_rpy, skew, spatial_inertia,
                                                transformed_inertia, wrench_in_frame)

pin = require("pinocchio")

SAMPLES = 50
TIGHT = 1e-13


def random_rotation(rng):
    # From an independent source: a unit quaternion drawn uniformly, converted by Pinocchio.
    quaternion = rng.normal(size=4)
    quaternion /= np.linalg.norm(quaternion)
    return pin.Quaternion(*quaternion).toRotationMatrix()


def random_body(rng):
    """Mass, centre of mass and a physical inertia about it (principal moments obeying
    the triangle inequality, rotated)."""
    mass = rng.uniform(0.1, 10.0)
    a, b, c = rng.uniform(0.01, 1.0, 3)
    rotation = random_rotation(rng)
    return mass, rng.normal(size=3), rotation @ np.diag([b + c, a + c, a + b]) @ rotation.T


@pytest.fixture
def placements(rng):
    return [(random_rotation(rng), rng.normal(size=3)) for _ in range(SAMPLES)]


def test_skew_is_the_cross_product(rng):
    for _ in range(SAMPLES):
        a, b = rng.normal(size=3), rng.normal(size=3)
        assert_close(skew(a) @ b, np.cross(a, b), "skew(a) b = a x b", TIGHT)
        assert_close(skew(a), pin.skew(a), "skew against pin.skew", 0.0)


def test_motion_transform_is_pinocchios_inverse_action(placements, rng):
    # Pinocchio's SE3(R, p) is B in A; actInv takes a motion from A to B: X = (aMb)^-1 action.
    for rotation, translation in placements:
        placement = pin.SE3(rotation, translation)
        assert_close(motion_transform(rotation, translation), placement.inverse().action,
                     "motion_transform against SE3.inverse().action", TIGHT)
        motion = rng.normal(size=6)
        assert_close(motion_transform(rotation, translation) @ motion,
                     placement.actInv(pin.Motion(motion)).vector, "motion carried to B", TIGHT)


def test_motion_transform_by_its_definition(placements, rng):
    # A rigid motion seen at B's origin p: v_B = R^T (v + w x p), w_B = R^T w.
    for rotation, translation in placements:
        v, w = rng.normal(size=3), rng.normal(size=3)
        expected = np.concatenate((rotation.T @ (v + np.cross(w, translation)), rotation.T @ w))
        assert_close(motion_transform(rotation, translation) @ np.concatenate((v, w)), expected,
                     "velocity of a rigid body at B's origin, B's axes", TIGHT)


def test_motion_transforms_compose_and_invert(placements):
    for (r1, p1), (r2, p2) in zip(placements, placements[1:]):
        # C placed at (r2, p2) in B, B at (r1, p1) in A: C in A is (r1 r2, p1 + r1 p2).
        a_to_c = motion_transform(r1 @ r2, p1 + r1 @ p2)
        assert_close(a_to_c, motion_transform(r2, p2) @ motion_transform(r1, p1),
                     "X(A->C) = X(B->C) X(A->B)", TIGHT)
        # A in B is (r1^T, -r1^T p1).
        assert_close(motion_transform(r1.T, -r1.T @ p1) @ motion_transform(r1, p1), np.eye(6),
                     "X(B->A) X(A->B) = 1", TIGHT)


def test_force_transform_is_the_dual(placements, rng):
    for rotation, translation in placements:
        x = motion_transform(rotation, translation)
        force_b = rng.normal(size=6)
        # The transpose carries a force from B back to A: Pinocchio's SE3 action on forces.
        assert_close(x.T @ force_b, pin.SE3(rotation, translation).act(pin.Force(force_b)).vector,
                     "X^T f: force from B to A", TIGHT)
        # Power is frame-independent: <X v, X^-T f> = <v, f>.
        motion, force_a = rng.normal(size=6), rng.normal(size=6)
        carried_force = np.linalg.solve(x.T, force_a)
        assert abs((x @ motion) @ carried_force - motion @ force_a) < TIGHT * 100


def test_cross_products_against_pinocchio(rng):
    for _ in range(SAMPLES):
        v, m, f = rng.normal(size=6), rng.normal(size=6), rng.normal(size=6)
        assert_close(motion_cross(v) @ m, pin.Motion(v).cross(pin.Motion(m)).vector,
                     "v x m", TIGHT)
        assert_close(force_cross(v) @ f, pin.Motion(v).cross(pin.Force(f)).vector,
                     "v x* f", TIGHT)
        # Duality: v x* = -(v x)^T, i.e. <v x m, f> = -<m, v x* f>.
        assert abs((motion_cross(v) @ m) @ f + m @ (force_cross(v) @ f)) < TIGHT * 100
        assert_close(motion_cross(v) @ v, np.zeros(6), "v x v = 0", TIGHT)


def test_spatial_inertia_is_pinocchios(rng):
    for _ in range(SAMPLES):
        mass, com, inertia = random_body(rng)
        assert_close(spatial_inertia(mass, com, inertia), pin.Inertia(mass, com, inertia).matrix(),
                     "spatial inertia about the frame origin", TIGHT)


def test_inertia_parameters_recover_the_body(rng):
    for _ in range(SAMPLES):
        mass, com, inertia = random_body(rng)
        recovered_mass, recovered_com, recovered_inertia = inertia_parameters(
            pin.Inertia(mass, com, inertia).matrix())
        assert_close(recovered_mass, mass, "mass", TIGHT)
        assert_close(recovered_com, com, "centre of mass", TIGHT)
        assert_close(recovered_inertia, inertia, "inertia about the centre of mass", 1e-12)
    assert inertia_parameters(np.zeros((6, 6)))[0] == 0.0


def test_inertia_moved_between_frames_is_pinocchios(placements, rng):
    # X^T I_B X: an inertia given in B, about B's origin, seen in A (what fixed-joint
    # merging and the composite-body recursion do).
    for rotation, translation in placements:
        body = pin.Inertia(*random_body(rng))
        moved = transformed_inertia(motion_transform(rotation, translation), body.matrix())
        assert_close(moved, pin.SE3(rotation, translation).act(body).matrix(),
                     "inertia carried from B to A", 1e-12)
        assert np.array_equal(moved, moved.T)


def test_articulated_inertia_moved_between_frames(placements, rng):
    # An articulated inertia (P - U D^-1 U^T) is symmetric but not a rigid body's: checked
    # against the plain triple product, and exactly symmetric.
    for rotation, translation in placements:
        x = motion_transform(rotation, translation)
        gain = rng.normal(size=6)
        articulated = pin.Inertia(*random_body(rng)).matrix() - 0.1 * np.outer(gain, gain)
        moved = transformed_inertia(x, articulated)
        assert_close(moved, x.T @ articulated @ x, "articulated inertia carried from B to A",
                     1e-12)
        assert np.array_equal(moved, moved.T)


def test_rotation_from_rpy_against_pinocchio_and_transforms3d(rng):
    for _ in range(SAMPLES):
        roll, pitch, yaw = rng.uniform(-np.pi, np.pi, 3)
        rotation = rotation_from_rpy(roll, pitch, yaw)
        assert_close(rotation, pin.rpy.rpyToMatrix(roll, pitch, yaw), "rpy against Pinocchio",
                     TIGHT)
        assert_close(rotation, transforms3d.euler.euler2mat(roll, pitch, yaw, "sxyz"),
                     "rpy against transforms3d (static x, y, z)", TIGHT)


def test_rotation_about_axis_against_pinocchio(rng):
    for _ in range(SAMPLES):
        axis = rng.normal(size=3)
        axis /= np.linalg.norm(axis)
        angle = rng.uniform(-2 * np.pi, 2 * np.pi)
        assert_close(rotation_about_axis(axis, angle), pin.AngleAxis(angle, axis).matrix(),
                     "Rodrigues against Pinocchio's AngleAxis", TIGHT)


def test_homogeneous_is_the_placement(placements, rng):
    for rotation, translation in placements:
        pose = homogeneous(rotation, translation)
        assert_close(pose, pin.SE3(rotation, translation).homogeneous, "4x4 placement", 0.0)
        point = rng.normal(size=3)
        assert_close((pose @ np.append(point, 1.0))[:3], rotation @ point + translation,
                     "x_A = R x_B + p", TIGHT)


def test_wrench_in_frame_against_pinocchio(placements, rng):
    for rotation, origin in placements:
        wrench, point = rng.normal(size=6), rng.normal(size=3)
        # The wrench about `point` in A's axes is a force on a frame at `point` with A's
        # axes; carried to A's origin, then expressed in the frame placed at (R, origin).
        about_a_origin = pin.SE3(np.eye(3), point).act(pin.Force(wrench))
        expected = pin.SE3(rotation, origin).actInv(about_a_origin).vector
        assert_close(wrench_in_frame(wrench, point, rotation, origin), expected,
                     "wrench re-expressed about the frame origin", TIGHT)


def test_cross_of_float_and_of_traced_vectors(rng):
    """The kernel generator traces with object arrays, which numpy 1.x's np.cross refuses."""
    for _ in range(20):
        a, b = rng.normal(size=3), rng.normal(size=3)
        assert_close(cross(a, b), pin.skew(a) @ b, "a x b", TIGHT)
        traced = cross(a.astype(object), b.astype(object))
        assert traced.dtype == object
        assert_close(traced.astype(float), pin.skew(a) @ b, "a x b on object arrays", TIGHT)
