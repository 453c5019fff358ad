"""Kinematics (algorithms/kinematics.py): frame placements and Jacobians against Pinocchio,
body velocities through the kinetic energy Pinocchio computes."""

from support.numerics import assert_close, random_states
from support.optional import require

pin = require("pinocchio")

STATES = 10


def test_frame_placements_against_pinocchio(robot, rng):
    hinges, reference = robot
    for q, _, _ in random_states(hinges, STATES, rng):
        for link in hinges.tree.frames:
            assert_close(hinges.frame_pose(q, link), reference.frame_pose(q, link),
                         f"pose of {link}", 1e-12)


def test_frame_jacobians_against_pinocchio(robot, rng):
    hinges, reference = robot
    for q, _, _ in random_states(hinges, STATES, rng):
        for link in hinges.tree.frames:
            assert_close(hinges.frame_jacobian(q, link), reference.jacobian(q, link),
                         f"Jacobian of {link}", 1e-12)


def test_body_velocities_carry_pinocchios_kinetic_energy(robot, rng):
    hinges, reference = robot
    for q, qd, _ in random_states(hinges, STATES, rng):
        velocities = hinges.body_velocities(q, qd)
        energy = 0.5 * sum(v @ inertia @ v for v, inertia in zip(velocities, hinges.body_inertias()))
        expected = pin.computeKineticEnergy(reference.model, reference.data,
                                            reference.configuration(q), reference.selection @ qd)
        assert_close(energy, expected, "kinetic energy", 1e-12)
