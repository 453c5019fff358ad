"""Newton-Euler inverse dynamics (algorithms/inverse_dynamics.py) against Pinocchio's rnea."""
import numpy as np
import pinocchio as pin

from support.numerics import assert_close, random_states

STATES = 10


def test_inverse_dynamics_against_pinocchio(robot, rng):
    hinges, reference = robot
    for q, qd, qdd in random_states(hinges, STATES, rng):
        assert_close(hinges.inverse_dynamics(q, qd, qdd), reference.inverse_dynamics(q, qd, qdd),
                     "M qdd + h", 1e-10)


def test_body_forces_against_pinocchio(robot, rng):
    # A wrench on every body, in its axes about its origin: Pinocchio's fext convention.
    hinges, reference = robot
    s = reference.selection
    for q, qd, qdd in random_states(hinges, STATES, rng):
        forces = rng.normal(size=(hinges.dof, 6)) * 10
        expected = s.T @ pin.rnea(reference.model, reference.data, reference.configuration(q),
                                  s @ qd, s @ qdd,
                                  reference.joint_forces(dict(zip(hinges.joint_names, forces))))
        assert_close(hinges.inverse_dynamics(q, qd, qdd, forces), expected,
                     "M qdd + h - sum J^T f", 1e-10)


def test_gravity_is_a_root_acceleration(robot, rng):
    # Pinocchio with gravity set to g' gives the torques of the recursion's root acceleration -g'.
    hinges, reference = robot
    gravity = rng.normal(size=3) * 5
    reference.model.gravity = pin.Motion(gravity, np.zeros(3))
    try:
        for q, qd, qdd in random_states(hinges, STATES, rng):
            assert_close(hinges.inverse_dynamics(q, qd, qdd, gravity=gravity),
                         reference.inverse_dynamics(q, qd, qdd), "torques under gravity g'", 1e-10)
    finally:
        reference.model.gravity = pin.Motion(np.array([0.0, 0.0, -9.81]), np.zeros(3))
