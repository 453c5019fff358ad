"""Articulated-body forward dynamics (algorithms/forward_dynamics.py) against Pinocchio's aba,
and as the inverse of inverse dynamics."""

from support.numerics import assert_close, random_states
from support.optional import require

pin = require("pinocchio")

STATES = 10


def test_forward_dynamics_against_pinocchio(robot, rng):
    hinges, reference = robot
    s = reference.selection
    for q, qd, tau in random_states(hinges, STATES, rng):
        forces = rng.normal(size=(hinges.dof, 6))
        expected = s.T @ pin.aba(reference.model, reference.data, reference.configuration(q),
                                 s @ qd, s @ tau,
                                 reference.joint_forces(dict(zip(hinges.joint_names, forces))))
        assert_close(hinges.forward_dynamics(q, qd, tau, forces), expected, "qdd", 1e-8)


def test_forward_dynamics_inverts_inverse_dynamics(robot, rng):
    hinges, _ = robot
    for q, qd, qdd in random_states(hinges, STATES, rng):
        tau = hinges.inverse_dynamics(q, qd, qdd)
        assert_close(hinges.forward_dynamics(q, qd, tau), qdd, "FD(ID(qdd)) = qdd", 1e-8)
