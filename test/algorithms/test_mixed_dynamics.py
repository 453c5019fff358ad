"""Mixed dynamics (algorithms/mixed_dynamics.py): the answer obeys Pinocchio's equations of
motion, with the given accelerations and torques where they were given."""
import numpy as np

from support.numerics import assert_close, random_states

STATES = 10


def test_mixed_dynamics_satisfies_the_equations_of_motion(robot, rng):
    hinges, reference = robot
    for q, qd, qdd in random_states(hinges, STATES, rng):
        tau = rng.normal(size=hinges.dof) * 5
        prescribed = rng.random(hinges.dof) < 0.5
        qdd_out, tau_out = hinges.mixed_dynamics(q, qd, qdd, tau, prescribed)
        assert_close(qdd_out[prescribed], qdd[prescribed], "prescribed accelerations kept", 0.0)
        assert_close(tau_out[~prescribed], tau[~prescribed], "given torques kept", 0.0)
        assert_close(reference.inverse_dynamics(q, qd, qdd_out), tau_out,
                     "M qdd + h = tau on every hinge", 1e-8)


def test_all_prescribed_is_inverse_dynamics_and_none_is_forward(robot, rng):
    hinges, reference = robot
    q, qd, qdd = next(random_states(hinges, 1, rng))
    everything = np.ones(hinges.dof, dtype=bool)
    _, tau = hinges.mixed_dynamics(q, qd, qdd, np.zeros(hinges.dof), everything)
    assert_close(tau, reference.inverse_dynamics(q, qd, qdd), "all prescribed: ID", 1e-10)
    qdd_out, _ = hinges.mixed_dynamics(q, qd, np.zeros(hinges.dof), tau, ~everything)
    assert_close(qdd_out, qdd, "none prescribed: FD", 1e-8)
