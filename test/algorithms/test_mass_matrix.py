"""Composite-body mass matrix (algorithms/mass_matrix.py, aligned_frames.py) against
Pinocchio's crba."""
import numpy as np
import pytest

from support.numerics import assert_close, random_states

STATES = 10


# Body frames (algorithms/mass_matrix.py), and frames at each body's origin with root
# axes (algorithms/aligned_frames.py), which kernels of robots whose joint placements do
# not fold are traced from.
FORMS = ["mass_matrix", "aligned_mass_matrix"]


@pytest.mark.parametrize("form", FORMS)
def test_mass_matrix_against_pinocchio(robot, rng, form):
    hinges, reference = robot
    for q, _, _ in random_states(hinges, STATES, rng):
        assert_close(getattr(hinges, form)(q), reference.mass_matrix(q), f"M(q) by {form}",
                     1e-12)


def test_mass_matrix_is_symmetric_positive_definite(robot, rng):
    hinges, _ = robot
    for q, _, _ in random_states(hinges, STATES, rng):
        mass = hinges.mass_matrix(q)
        assert_close(mass, mass.T, "M = M^T", 1e-15)
        eigenvalues = np.linalg.eigvalsh(mass)
        assert eigenvalues.min() > 1e-12 * eigenvalues.max(), eigenvalues


def test_mass_matrix_columns_are_inverse_dynamics_of_unit_accelerations(robot, rng):
    # M e_k = ID(q, 0, e_k) without gravity: a second way through the equations of motion.
    hinges, _ = robot
    q, _, _ = next(random_states(hinges, 1, rng))
    zeros = np.zeros(hinges.dof)
    columns = np.column_stack([hinges.inverse_dynamics(q, zeros, unit, gravity=(0.0, 0.0, 0.0))
                               for unit in np.eye(hinges.dof)])
    assert_close(hinges.mass_matrix(q), columns, "M against inverse dynamics", 1e-12)
