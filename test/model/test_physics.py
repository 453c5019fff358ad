"""Physics checks that need no reference library: consistency and energy."""
import numpy as np
import pytest

from support.numerics import assert_close
from support.robot_generator import random_tree_urdf
from support.robots import SHIPPED_ROBOTS, shipped_urdf
from soa_dynamics_ros import RobotModel

SOURCES = ([pytest.param(shipped_urdf(name), id=name) for name in SHIPPED_ROBOTS]
           + [pytest.param(random_tree_urdf(seed, moving_joints=10), id=f"random{seed}")
              for seed in range(200, 208)])


@pytest.fixture(params=SOURCES)
def model(request):
    return RobotModel.from_urdf(request.param)


def _state(model, rng):
    return (rng.uniform(-np.pi, np.pi, model.dof), rng.normal(size=model.dof),
            rng.normal(size=model.dof))


def _kinetic_energy(model, q, qd):
    return 0.5 * qd @ model.mass_matrix(q) @ qd


def _potential_energy(model, q):
    return -model.total_mass * model.gravity @ model.center_of_mass(q)


def test_forward_and_inverse_dynamics_are_inverse(model, rng):
    for _ in range(20):
        q, qd, qdd = _state(model, rng)
        wrenches = {model.frame_names[-1]: rng.normal(size=6)}
        tau = model.inverse_dynamics(q, qd, qdd, wrenches)
        assert_close(model.forward_dynamics(q, qd, tau, wrenches), qdd, "FD(ID(qdd))", 1e-8)
        qdd_free = model.forward_dynamics(q, qd, np.zeros(model.dof))
        assert_close(model.inverse_dynamics(q, qd, qdd_free), np.zeros(model.dof),
                     "ID(FD(0))", 1e-8)


def test_mass_matrix_is_symmetric_positive_definite(model, rng):
    for _ in range(20):
        mass = model.mass_matrix(_state(model, rng)[0])
        assert_close(mass, mass.T, "symmetry", 1e-13)
        assert np.linalg.eigvalsh(mass).min() > 0


def test_power_balance(model, rng):
    """d/dt kinetic energy equals the power of the non-gravity forces: qd.(tau - g + J^T w)."""
    step = 1e-6
    for _ in range(10):
        q, qd, tau = _state(model, rng)
        link = model.frame_names[-1]
        wrench = rng.normal(size=6)
        qdd = model.forward_dynamics(q, qd, tau, {link: wrench})
        rate = (_kinetic_energy(model, q + step * qd, qd + step * qdd)
                - _kinetic_energy(model, q - step * qd, qd - step * qdd)) / (2 * step)
        power = qd @ (tau - model.gravity_torques(q) + model.jacobian(q, link).T @ wrench)
        assert rate == pytest.approx(power, rel=1e-6, abs=1e-6)


def test_gravity_torques_are_the_gradient_of_potential_energy(model, rng):
    step = 1e-6
    for _ in range(5):
        q = _state(model, rng)[0]
        gradient = np.array([
            (_potential_energy(model, q + step * e) - _potential_energy(model, q - step * e))
            / (2 * step) for e in np.eye(model.dof)])
        assert_close(model.gravity_torques(q), gradient, "g(q) = dV/dq", 1e-6)


def test_jacobian_maps_joint_rates_to_frame_velocity(model, rng):
    """J qd equals the finite-difference velocity of the frame pose."""
    step = 1e-7
    q, qd, _ = _state(model, rng)
    for frame in model.frame_names:
        before, after = model.frame_pose(q - step * qd, frame), model.frame_pose(q + step * qd, frame)
        linear = (after[:3, 3] - before[:3, 3]) / (2 * step)
        rotation_rate = (after[:3, :3] - before[:3, :3]) / (2 * step)
        omega_skew = rotation_rate @ model.frame_pose(q, frame)[:3, :3].T
        angular = np.array([omega_skew[2, 1], omega_skew[0, 2], omega_skew[1, 0]])
        assert_close(model.jacobian(q, frame) @ qd, np.concatenate((linear, angular)),
                     f"velocity of {frame}", 1e-6)


def test_double_pendulum_closed_form(rng):
    """Spong's 2-link planar equations (urdf/SOURCES.md), written out by hand."""
    m1, m2, l1, lc1, lc2, i1, i2 = 1.0, 1.0, 1.0, 0.5, 1.0, 0.083, 0.33
    model = RobotModel.from_urdf(shipped_urdf("double_pendulum.urdf"))
    g = -model.gravity[2]
    for _ in range(50):
        (q1, q2), (qd1, qd2), qdd = rng.uniform(-np.pi, np.pi, 2), rng.normal(size=2), rng.normal(size=2)
        c2, s2 = np.cos(q2), np.sin(q2)
        mass = np.array([
            [i1 + i2 + m1 * lc1**2 + m2 * (l1**2 + lc2**2 + 2 * l1 * lc2 * c2),
             i2 + m2 * (lc2**2 + l1 * lc2 * c2)],
            [i2 + m2 * (lc2**2 + l1 * lc2 * c2), i2 + m2 * lc2**2]])
        coriolis = m2 * l1 * lc2 * s2 * np.array([-(2 * qd1 * qd2 + qd2**2), qd1**2])
        # Hanging along -z at q = 0, rotating about +y: the potential is
        # -g (m1 lc1 cos q1 + m2 (l1 cos q1 + lc2 cos(q1 + q2))).
        gravity = g * np.array([(m1 * lc1 + m2 * l1) * np.sin(q1) + m2 * lc2 * np.sin(q1 + q2),
                                m2 * lc2 * np.sin(q1 + q2)])
        q, qd = np.array([q1, q2]), np.array([qd1, qd2])
        assert_close(model.mass_matrix(q), mass, "M", 1e-12)
        assert_close(model.gravity_torques(q), gravity, "g", 1e-12)
        assert_close(model.inverse_dynamics(q, qd, qdd), mass @ qdd + coriolis + gravity, "ID", 1e-12)
