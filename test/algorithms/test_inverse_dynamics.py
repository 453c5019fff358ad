"""Newton-Euler inverse dynamics (algorithms/inverse_dynamics.py, aligned_frames.py) against
Pinocchio's rnea."""
import numpy as np
import pytest

from support.numerics import assert_close, random_states, random_wrenches
from support.optional import require

pin = require("pinocchio")

STATES = 10


# Body frames (algorithms/inverse_dynamics.py), and frames at each body's origin with
# root axes (algorithms/aligned_frames.py: h for the forward dynamics kernels of robots
# whose joint placements do not fold).
FORMS = ["inverse_dynamics", "aligned_inverse_dynamics"]


@pytest.mark.parametrize("form", FORMS)
def test_inverse_dynamics_against_pinocchio(robot, rng, form):
    hinges, reference = robot
    for q, qd, qdd in random_states(hinges, STATES, rng):
        assert_close(getattr(hinges, form)(q, qd, qdd), reference.inverse_dynamics(q, qd, qdd),
                     f"M qdd + h by {form}", 1e-10)


def test_aligned_bias_is_inverse_dynamics_at_rest(robot, rng):
    hinges, reference = robot
    for q, qd, _ in random_states(hinges, STATES, rng):
        assert_close(hinges.aligned_inverse_dynamics(q, qd),
                     reference.inverse_dynamics(q, qd, np.zeros_like(q)), "h", 1e-12)


def test_aligned_link_wrenches_against_pinocchio(robot, rng):
    # [f; t] in root axes about each link's origin, the package's convention; Pinocchio
    # gets them about the world origin, carried to its joints' frames.
    hinges, reference = robot
    for q, qd, qdd in random_states(hinges, STATES, rng):
        wrenches = random_wrenches(hinges, rng)
        assert_close(hinges.aligned_inverse_dynamics(q, qd, qdd, wrenches),
                     reference.inverse_dynamics(q, qd, qdd, wrenches), "M qdd + h - J^T w",
                     1e-12)


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


@pytest.mark.parametrize("form", FORMS)
def test_gravity_is_a_root_acceleration(robot, rng, form):
    # Pinocchio with gravity set to g' gives the torques of the recursion's root acceleration -g'.
    hinges, reference = robot
    gravity = rng.normal(size=3) * 5
    reference.model.gravity = pin.Motion(gravity, np.zeros(3))
    try:
        for q, qd, qdd in random_states(hinges, STATES, rng):
            assert_close(getattr(hinges, form)(q, qd, qdd, gravity=gravity),
                         reference.inverse_dynamics(q, qd, qdd), "torques under gravity g'", 1e-10)
    finally:
        reference.model.gravity = pin.Motion(np.array([0.0, 0.0, -9.81]), np.zeros(3))
