"""Derivatives of inverse dynamics in hinge space: against Pinocchio's analytical
derivatives, and laws they must obey whatever computes them."""
import numpy as np

from support.numerics import assert_close, random_states

STATES = 10
NO_GRAVITY = (0.0, 0.0, 0.0)
TILTED_GRAVITY = (0.3, -0.2, -9.7)


def test_inverse_dynamics_derivatives_match_pinocchio(robot, rng):
    hinges, ref = robot
    for q, qd, qdd in random_states(hinges, STATES, rng):
        dtau_dq, dtau_dqd = hinges.inverse_dynamics_derivatives(q, qd, qdd)
        expected_dq, expected_dqd = ref.inverse_dynamics_derivatives(q, qd, qdd)
        assert_close(dtau_dq, expected_dq, "dtau/dq (computeRNEADerivatives)")
        assert_close(dtau_dqd, expected_dqd, "dtau/dqd (computeRNEADerivatives)")


def test_gravity_derivatives_match_pinocchio(robot, rng):
    hinges, ref = robot
    for q, _, _ in random_states(hinges, STATES, rng):
        assert_close(hinges.gravity_derivatives(q), ref.gravity_derivatives(q),
                     "dg/dq (computeGeneralizedGravityDerivatives)")


def test_the_root_axes_closed_form_matches_pinocchio_and_the_tangents(robot, rng):
    """The closed form the derivative kernels are traced from, against Pinocchio and to
    round-off against the forward-mode tangents (the reference), at rest too."""
    hinges, ref = robot
    states = list(random_states(hinges, STATES, rng))
    states.append((states[0][0], np.zeros(hinges.dof), states[0][2]))
    for q, qd, qdd in states:
        dtau_dq, dtau_dqd, dg_dq = hinges.root_axes_derivatives(q, qd, qdd, TILTED_GRAVITY)
        expected_dq, expected_dqd = hinges.inverse_dynamics_derivatives(q, qd, qdd,
                                                                        gravity=TILTED_GRAVITY)
        assert_close(dtau_dq, expected_dq, "closed-form dtau/dq", 1e-12)
        assert_close(dtau_dqd, expected_dqd, "closed-form dtau/dqd", 1e-12)
        assert_close(dg_dq, hinges.gravity_derivatives(q, gravity=TILTED_GRAVITY),
                     "closed-form dg/dq", 1e-12)
        dtau_dq, dtau_dqd, dg_dq = hinges.root_axes_derivatives(q, qd, qdd)
        pinocchio_dq, pinocchio_dqd = ref.inverse_dynamics_derivatives(q, qd, qdd)
        assert_close(dtau_dq, pinocchio_dq, "closed-form dtau/dq (computeRNEADerivatives)")
        assert_close(dtau_dqd, pinocchio_dqd, "closed-form dtau/dqd (computeRNEADerivatives)")
        assert_close(dg_dq, ref.gravity_derivatives(q), "closed-form dg/dq (Pinocchio)")


def test_the_closed_form_in_two_steps_gives_the_bias_and_the_same_derivatives(robot, rng):
    """What the forward derivative kernels trace: h from the closed form's pass at
    qdd = 0 is inverse dynamics at qdd = 0 (the reference recursion), and the derivatives
    after adding qdd along the tree are the one-step closed form's and the tangents'."""
    hinges, _ = robot
    for q, qd, qdd in random_states(hinges, STATES, rng):
        bias, dtau_dq, dtau_dqd = hinges.root_axes_split(q, qd, qdd, TILTED_GRAVITY)
        assert_close(bias, hinges.inverse_dynamics(q, qd, np.zeros(hinges.dof),
                                                   gravity=TILTED_GRAVITY),
                     "h from the closed form's pass", 1e-12)
        expected_dq, expected_dqd = hinges.inverse_dynamics_derivatives(q, qd, qdd,
                                                                        gravity=TILTED_GRAVITY)
        assert_close(dtau_dq, expected_dq, "dtau/dq after adding qdd", 1e-12)
        assert_close(dtau_dqd, expected_dqd, "dtau/dqd after adding qdd", 1e-12)


def test_rate_derivative_vanishes_at_rest(robot, rng):
    # Coriolis and centrifugal torques are quadratic in qd: their derivative is 0 at qd = 0.
    hinges, _ = robot
    for q, _, qdd in random_states(hinges, STATES, rng):
        _, dtau_dqd = hinges.inverse_dynamics_derivatives(q, np.zeros(hinges.dof), qdd)
        assert_close(dtau_dqd, np.zeros((hinges.dof, hinges.dof)), "dtau/dqd at qd = 0", 1e-12)


def test_rate_derivative_along_qd_is_twice_the_velocity_torques(robot, rng):
    # Euler's theorem for the quadratic C(q, qd) qd: (dtau/dqd) qd = 2 C(q, qd) qd.
    hinges, _ = robot
    zeros = np.zeros(hinges.dof)
    for q, qd, qdd in random_states(hinges, STATES, rng):
        _, dtau_dqd = hinges.inverse_dynamics_derivatives(q, qd, qdd)
        velocity_torques = hinges.inverse_dynamics(q, qd, zeros, gravity=NO_GRAVITY)
        assert_close(dtau_dqd @ qd, 2 * velocity_torques, "(dtau/dqd) qd = 2 C qd")


def test_gravity_derivative_is_symmetric(robot, rng):
    # g = dV/dq for the potential energy V, so dg/dq is the Hessian of V.
    hinges, _ = robot
    for q, _, _ in random_states(hinges, STATES, rng):
        derivative = hinges.gravity_derivatives(q)
        assert_close(derivative, derivative.T, "dg/dq symmetric", 1e-12)
