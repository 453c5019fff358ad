"""M and h in frames at each body's origin with root axes (algorithms/aligned_frames.py),
the form kernels of robots whose joint placements do not fold are traced from, against
Pinocchio's crba and rnea."""
import numpy as np
import pinocchio as pin

from support.numerics import assert_close, random_states, random_wrenches

STATES = 5


def test_aligned_mass_matrix_is_pinocchios(robot, rng):
    hinges, reference = robot
    for q, _, _ in random_states(hinges, STATES, rng):
        assert_close(hinges.aligned_mass_matrix(q), reference.mass_matrix(q), "M(q)", 1e-12)


def test_aligned_inverse_dynamics_and_bias_are_pinocchios(robot, rng):
    hinges, reference = robot
    for q, qd, qdd in random_states(hinges, STATES, rng):
        assert_close(hinges.aligned_inverse_dynamics(q, qd, qdd),
                     reference.inverse_dynamics(q, qd, qdd), "M qdd + h", 1e-12)
        assert_close(hinges.aligned_inverse_dynamics(q, qd),
                     reference.inverse_dynamics(q, qd, np.zeros_like(q)), "h", 1e-12)


def test_aligned_link_wrenches_are_pinocchios(robot, rng):
    # [f; t] in root axes about each link's origin, the package's convention; Pinocchio
    # gets them about the world origin, carried to its joints' frames.
    hinges, reference = robot
    for q, qd, qdd in random_states(hinges, STATES, rng):
        wrenches = random_wrenches(hinges, rng)
        assert_close(hinges.aligned_inverse_dynamics(q, qd, qdd, wrenches),
                     reference.inverse_dynamics(q, qd, qdd, wrenches), "M qdd + h - J^T w",
                     1e-12)


def test_aligned_gravity_is_a_root_acceleration(robot, rng):
    hinges, reference = robot
    gravity = rng.normal(size=3) * 5
    reference.model.gravity = pin.Motion(gravity, np.zeros(3))
    try:
        for q, _, _ in random_states(hinges, STATES, rng):
            zeros = np.zeros_like(q)
            assert_close(hinges.aligned_inverse_dynamics(q, zeros, zeros, gravity=gravity),
                         reference.inverse_dynamics(q, zeros, zeros), "g(q) under g'", 1e-12)
    finally:
        reference.model.gravity = pin.Motion(np.array([0.0, 0.0, -9.81]), np.zeros(3))
