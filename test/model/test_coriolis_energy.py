"""coriolis_matrix, kinetic_energy and potential_energy (issue 47 part 5): against
Pinocchio on the shipped robots and robots of rtb-data and example-robot-data, and
against physics (dM/dt by finite differences, energy along a simulated motion, the
work of gravity), on the generic module's path and the numpy path."""
import numpy as np
import pytest

from oracles.pinocchio_reference import PinocchioReference
from support.numerics import assert_close, random_states
from support.robots import (SHIPPED_ROBOTS, example_robot_text, shipped_urdf, with_inertias,
                            zoo_urdf_text)
from soa_dynamics_ros import RobotModel
from soa_dynamics_ros.errors import InvalidInputError

KERNELS = ["generic", "off"]
# Robots the project was not written against: mimic grippers, real inertias, 32 joints.
ZOO = [("vx300s", lambda: zoo_urdf_text("trossen_descriptions/urdf/vx300s.urdf.xacro")),
       ("panda_arm_hand", lambda: with_inertias(zoo_urdf_text(
           "qut_frankie_description/robots/panda_arm_hand.urdf.xacro"))),
       ("talos", lambda: example_robot_text("talos_data/robots/talos_full_v2.urdf")),
       ("xarm7", lambda: example_robot_text("xarm_description/urdf/xarm7.urdf")),
       ("z1", lambda: example_robot_text("z1_description/urdf/z1.urdf"))]
ROBOTS = ([pytest.param(lambda name=name: open(shipped_urdf(name)).read(), id=name)
           for name in SHIPPED_ROBOTS]
          + [pytest.param(load, id=name) for name, load in ZOO])


def _model(xml, kernels):
    model = RobotModel.from_urdf(xml, kernels=kernels)
    # the generic module must be what answers on its path (a compiler is there in CI)
    assert (model.kernels.backend is not None) == (kernels == "generic")
    return model


def _assert_pinocchio_agrees(model, ref, states, rng, situation=""):
    for q, qd, _ in random_states(model, states, rng):
        assert_close(model.coriolis_matrix(q, qd), ref.coriolis_matrix(q, qd),
                     "Coriolis matrix" + situation)
        assert_close(model.kinetic_energy(q, qd), ref.kinetic_energy(q, qd),
                     "kinetic energy" + situation)
        assert_close(model.potential_energy(q), ref.potential_energy(q),
                     "potential energy" + situation)


@pytest.mark.parametrize("kernels", KERNELS)
@pytest.mark.parametrize("load", ROBOTS)
def test_against_pinocchio(load, kernels, rng):
    xml = load()
    model = _model(xml, kernels)
    _assert_pinocchio_agrees(model, PinocchioReference(xml, model.joint_names), 5, rng)


@pytest.mark.parametrize("kernels", KERNELS)
def test_payload_and_gravity_against_pinocchio(kernels, rng):
    """The energies and C read the inertias and gravity of the moment (payloads, tilt)."""
    xml = open(shipped_urdf("panda.urdf")).read()
    model = _model(xml, kernels)
    tilted = rng.normal(size=3) * 5
    model.gravity = tilted
    model.attach_payload("box", "panda_link7", 1.5, (0.01, 0.02, 0.1),
                         np.diag([0.01, 0.02, 0.015]))
    ref = PinocchioReference(xml, model.joint_names, gravity=tilted)
    ref.attach("panda_link7", 1.5, np.array([0.01, 0.02, 0.1]), np.diag([0.01, 0.02, 0.015]))
    _assert_pinocchio_agrees(model, ref, 3, rng, ", with a payload and tilted gravity")


@pytest.mark.parametrize("kernels", KERNELS)
@pytest.mark.parametrize("name", SHIPPED_ROBOTS)
def test_coriolis_matrix_physics(name, kernels, rng):
    """dM/dt = C + C^T (so dM/dt - 2C is skew) with dM/dt by central differences of M
    along q + t qd, and C qd = h - g: mimic joints (dual_arm_torso) included."""
    model = _model(open(shipped_urdf(name)).read(), kernels)
    step = 1e-6
    for q, qd, _ in random_states(model, 5, rng):
        coriolis = model.coriolis_matrix(q, qd)
        mass_rate = (model.mass_matrix(q + step * qd) - model.mass_matrix(q - step * qd)) / (
            2 * step)
        assert_close(coriolis + coriolis.T, mass_rate, "dM/dt = C + C^T", rtol=1e-6)
        skew = mass_rate - 2 * coriolis
        assert_close(skew + skew.T, np.zeros_like(skew), "dM/dt - 2C skew", rtol=1e-6)
        assert_close(coriolis @ qd, model.bias_torques(q, qd) - model.gravity_torques(q),
                     "C qd = h - g", rtol=1e-12)
        # h is quadratic in qd with the Christoffel symbols: d tau / d qd = 2 C
        assert_close(2 * coriolis, model.inverse_dynamics_derivatives(q, qd, 0 * qd)[1],
                     "d tau / d qd = 2 C", rtol=1e-12)
        assert_close(model.kinetic_energy(q, qd), 0.5 * qd @ model.mass_matrix(q) @ qd,
                     "T = 1/2 qd^T M qd", rtol=1e-12)


@pytest.mark.parametrize("kernels", KERNELS)
@pytest.mark.parametrize("name", ["double_pendulum.urdf", "panda.urdf", "dual_arm_torso.urdf"])
def test_energy_conserved_in_free_motion(name, kernels, rng):
    """With tau = 0 the total energy stays what it was along a small-step RK4 motion."""
    model = _model(open(shipped_urdf(name)).read(), kernels)
    q, qd = rng.uniform(-1.0, 1.0, model.dof), rng.uniform(-1.0, 1.0, model.dof)
    zero = np.zeros(model.dof)

    def rate(state):
        return np.concatenate((state[1], model.forward_dynamics(state[0], state[1], zero)))

    def energy(state):
        return model.kinetic_energy(*state) + model.potential_energy(state[0])

    state, step = np.stack((q, qd)), 1e-3
    start = energy(state)
    scale = max(abs(start), model.kinetic_energy(q, qd), 1.0)
    for _ in range(300):
        k1 = rate(state).reshape(2, -1)
        k2 = rate(state + 0.5 * step * k1).reshape(2, -1)
        k3 = rate(state + 0.5 * step * k2).reshape(2, -1)
        k4 = rate(state + step * k3).reshape(2, -1)
        state = state + step / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    assert np.ptp(state[0] - q) > 1e-2, "the robot moved"
    assert abs(energy(state) - start) <= 1e-8 * scale


@pytest.mark.parametrize("kernels", KERNELS)
@pytest.mark.parametrize("name", SHIPPED_ROBOTS)
def test_potential_energy_is_the_work_of_gravity(name, kernels, rng):
    """dV/dq = g(q) by central differences, and V(q1) - V(q0) = int g(q) . dq along the
    segment between them (Simpson's rule): minus the work gravity does."""
    model = _model(open(shipped_urdf(name)).read(), kernels)
    model.gravity = rng.normal(size=3) * 5
    q0, q1 = rng.uniform(-1.0, 1.0, (2, model.dof))
    step = 1e-6
    gradient = [(model.potential_energy(q0 + step * e) - model.potential_energy(q0 - step * e))
                / (2 * step) for e in np.eye(model.dof)]
    assert_close(gradient, model.gravity_torques(q0), "dV/dq = g", rtol=1e-6)
    points = np.linspace(0.0, 1.0, 201)
    weights = np.ones_like(points)
    weights[1:-1:2], weights[2:-1:2] = 4.0, 2.0
    work = sum(w * model.gravity_torques(q0 + t * (q1 - q0)) @ (q1 - q0)
               for t, w in zip(points, weights)) * (points[1] / 3)
    assert_close(model.potential_energy(q1) - model.potential_energy(q0), work,
                 "V difference = -work of gravity", rtol=1e-9)


@pytest.mark.parametrize("kernels", KERNELS)
def test_bad_input_is_refused_as_by_the_other_methods(kernels):
    model = _model(open(shipped_urdf("panda.urdf")).read(), kernels)
    q, qd = np.full(model.dof, 0.3), np.full(model.dof, -0.2)
    for call in (lambda: model.coriolis_matrix(q[:-1], qd),
                 lambda: model.coriolis_matrix(q, np.append(qd, 1.0)),
                 lambda: model.kinetic_energy(q, np.full(model.dof, np.nan)),
                 lambda: model.kinetic_energy("q", qd),
                 lambda: model.potential_energy(np.full(model.dof, np.inf)),
                 lambda: model.potential_energy(q.reshape(1, -1)[:, :3])):
        with pytest.raises(InvalidInputError):
            call()
    # lists, other dtypes and strided views are answered as arrays are
    strided = np.repeat(q, 2)[::2]
    assert_close(model.coriolis_matrix(list(q), qd.astype(np.float32)),
                 model.coriolis_matrix(q, qd.astype(np.float32).astype(float)), "lists")
    assert model.kinetic_energy(list(q), list(qd)) == model.kinetic_energy(q, qd)
    assert model.potential_energy(strided) == model.potential_energy(q)
    assert isinstance(model.potential_energy(q), float)
