"""Laws the recursions must obey together, needing no reference library."""
import numpy as np

from support.numerics import assert_close, random_states

STATES = 5
NO_GRAVITY = (0.0, 0.0, 0.0)


def test_power_of_coriolis_forces_is_half_the_mass_matrix_rate(robot, rng):
    # d/dt (1/2 qd^T M qd) = qd^T (tau - g): with qdd = M^-1 (tau - g - C qd) this is
    # qd^T C qd = 1/2 qd^T Mdot qd (Mdot - 2C skew in the quadratic form).  Mdot along qd
    # by a central difference: error O(h^2), round-off O(eps / h).
    hinges, _ = robot
    step = 1e-5
    for q, qd, _ in random_states(hinges, STATES, rng):
        coriolis = hinges.inverse_dynamics(q, qd, np.zeros(hinges.dof), gravity=NO_GRAVITY)
        mass_rate = (hinges.mass_matrix(q + step * qd) - hinges.mass_matrix(q - step * qd)) / (2 * step)
        assert_close(qd @ coriolis, 0.5 * qd @ mass_rate @ qd, "qd^T C qd = 1/2 qd^T Mdot qd", 1e-7)


def test_energy_is_conserved_without_torques_or_gravity(robot, rng):
    # A free robot keeps its kinetic energy: d/dt (1/2 qd^T M qd) = 0 with qdd = FD(q, qd, 0).
    hinges, _ = robot
    step = 1e-5
    zeros = np.zeros(hinges.dof)
    for q, qd, _ in random_states(hinges, STATES, rng):
        qdd = hinges.forward_dynamics(q, qd, zeros, gravity=NO_GRAVITY)
        mass_rate = (hinges.mass_matrix(q + step * qd) - hinges.mass_matrix(q - step * qd)) / (2 * step)
        power = qd @ hinges.mass_matrix(q) @ qdd + 0.5 * qd @ mass_rate @ qd
        assert_close(power, 0.0, "dT/dt of a free robot", 1e-7 * max(1.0, qd @ qd))
