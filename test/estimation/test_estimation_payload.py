"""RobotModel.identify_payload against MuJoCo (an unknown box on the rtb-data arm) and
Pinocchio (exact torques of a random load), and its refusals."""
import numpy as np
import pytest

from oracles.pinocchio_reference import PinocchioReference
from support.estimation_runs import WRIST, arm_description, simulate, sinusoid
from soa_dynamics_ros import RobotModel
from soa_dynamics_ros.estimation import accelerations
from soa_dynamics_ros.errors import InvalidInputError, UnknownNameError

# An off-centre box (0.10 x 0.06 x 0.04 m, 0.4 kg) held by the gripper.
BOX_MASS = 0.4
BOX_COM = np.array([0.05, 0.02, -0.01])
BOX_INERTIA = BOX_MASS / 12 * np.diag([0.06 ** 2 + 0.04 ** 2, 0.1 ** 2 + 0.04 ** 2,
                                       0.1 ** 2 + 0.06 ** 2])
# Six seconds of every arm joint at incommensurate frequencies.
EXCITING = sinusoid([0.3, 0.25, 0.25, 0.8, 0.5, 1.2, 0.0, 0.0],
                    [0.31, 0.43, 0.37, 0.53, 0.61, 0.71, 0.5, 0.5])


@pytest.fixture(scope="module")
def model():
    return RobotModel.from_urdf(arm_description())


@pytest.fixture(scope="module")
def box_run(model):
    # The controller does not know the box: it is what is identified.
    return simulate(EXCITING, 6.0, payload=dict(link=WRIST, mass=BOX_MASS, com=BOX_COM,
                                                inertia=BOX_INERTIA), control_model=model)


def test_box_mass_and_centre_of_mass_from_six_seconds(model, box_run):
    run = box_run
    estimate = model.identify_payload(WRIST, run.q, run.qd, run.qdd, run.tau)
    assert abs(estimate.mass - BOX_MASS) <= 0.02 * BOX_MASS, estimate.mass
    assert np.linalg.norm(estimate.com - BOX_COM) <= 0.005, estimate.com
    assert estimate.samples == len(run.t)
    assert estimate.residual < 1e-3 * np.abs(run.tau).max()
    assert estimate.standard_deviation.shape == (10,) and estimate.condition >= 1.0


def test_accelerations_differentiated_from_recorded_rates_identify_the_box(model, box_run):
    """What a node has: joint states without accelerations, here at uneven times (every
    other sample of the second half dropped)."""
    run = box_run
    keep = np.ones(len(run.t), bool)
    keep[len(keep) // 2::2] = False
    QDD = accelerations(run.t[keep], run.qd[keep])
    estimate = model.identify_payload(WRIST, run.q[keep], run.qd[keep], QDD, run.tau[keep])
    assert abs(estimate.mass - BOX_MASS) <= 0.02 * BOX_MASS, estimate.mass
    assert np.linalg.norm(estimate.com - BOX_COM) <= 0.005, estimate.com


@pytest.mark.parametrize("times, rates", [
    ([0.0, 0.1, 0.1, 0.2], np.zeros((4, 2))),          # time standing still
    ([0.0, 0.2, 0.1, 0.3], np.zeros((4, 2))),          # going back
    ([0.0, 0.1], np.zeros((2, 2))),                    # too few
    ([0.0, 0.1, 0.2], np.zeros((4, 2))),               # lengths differ
    ([0.0, np.nan, 0.2], np.zeros((3, 2))),
    ([0.0, 0.1, 0.2], np.full((3, 2), np.inf)),
    ([0.0, 0.1, 0.2], np.zeros(3)),
])
def test_accelerations_refuse_bad_samples(times, rates):
    with pytest.raises(InvalidInputError):
        accelerations(times, rates)


def test_applied_estimate_explains_the_measured_torques(box_run):
    """Attached as a payload, the model's inverse dynamics reproduce MuJoCo's torques."""
    model = RobotModel.from_urdf(arm_description())
    run = box_run
    estimate = model.identify_payload(WRIST, run.q, run.qd, run.qdd, run.tau)
    before = np.abs(model.inverse_dynamics_batch(run.q, run.qd, run.qdd) - run.tau).max()
    estimate.apply(model, "box", with_inertia=estimate.plausible)
    assert "box" in model.payloads
    after = np.abs(model.inverse_dynamics_batch(run.q, run.qd, run.qdd) - run.tau).max()
    assert after < 0.05 * before, (after, before)


@pytest.mark.parametrize("kernels", ["auto", "off"])
def test_exact_torques_of_a_random_load_give_it_back(kernels, rng):
    """Pinocchio's torques of the arm with a load: all ten parameters recovered (compiled
    regressor columns and the numpy path)."""
    text = arm_description()
    model = RobotModel.from_urdf(text, kernels=kernels)
    reference = PinocchioReference(text, model.joint_names)
    mass, com = 1.3, np.array([0.02, -0.03, 0.04])
    inertia = np.array([[0.004, 0.0005, -0.0003], [0.0005, 0.003, 0.0002],
                        [-0.0003, 0.0002, 0.005]])
    reference.attach("/ee_arm_link", mass, com, inertia)
    count = 200
    Q = rng.uniform(-1.5, 1.5, (count, model.dof))
    QD, QDD = rng.normal(size=(count, model.dof)), rng.normal(size=(count, model.dof)) * 3
    TAU = np.array([reference.inverse_dynamics(*sample) for sample in zip(Q, QD, QDD)])
    estimate = model.identify_payload("/ee_arm_link", Q, QD, QDD, TAU)
    np.testing.assert_allclose(estimate.mass, mass, rtol=1e-8)
    np.testing.assert_allclose(estimate.com, com, atol=1e-8)
    np.testing.assert_allclose(estimate.inertia, inertia, atol=1e-8)
    assert estimate.plausible and estimate.residual < 1e-8


def test_negative_mass_is_reported_implausible_and_not_applied(model, rng):
    count = 100
    Q = rng.uniform(-1.5, 1.5, (count, model.dof))
    QD, QDD = rng.normal(size=(count, model.dof)), rng.normal(size=(count, model.dof))
    loaded = RobotModel.from_urdf(arm_description())
    loaded.attach_payload("box", WRIST, BOX_MASS, BOX_COM, BOX_INERTIA)
    bare = model.inverse_dynamics_batch(Q, QD, QDD)
    TAU = 2 * bare - loaded.inverse_dynamics_batch(Q, QD, QDD)    # a box of negative mass
    estimate = model.identify_payload(WRIST, Q, QD, QDD, TAU)
    assert not estimate.plausible and any("mass" in p for p in estimate.problems)
    target = RobotModel.from_urdf(arm_description())
    with pytest.raises(InvalidInputError, match="not applied"):
        estimate.apply(target, "load")
    assert target.payloads == {}


def test_a_robot_standing_still_cannot_tell_the_inertia(model):
    """At rest only gravity acts: the inertia parameters are not excited."""
    Q = np.tile(np.linspace(-0.5, 0.5, 50)[:, None], (1, model.dof))
    zeros = np.zeros_like(Q)
    with pytest.raises(InvalidInputError, match="Ixx|do not depend"):
        model.identify_payload(WRIST, Q, zeros, zeros, model.gravity_torques_batch(Q))


@pytest.mark.parametrize("change, error", [
    ({"link": "/nowhere"}, UnknownNameError),
    ({"Q": np.zeros((10, 3))}, InvalidInputError),
    ({"TAU": np.zeros((9, 8))}, InvalidInputError),
    ({"QD": np.full((10, 8), np.nan)}, InvalidInputError),
    ({"Q": np.zeros((2, 8)), "QD": np.zeros((2, 8)), "QDD": np.ones((2, 8)),
      "TAU": np.zeros((2, 8))}, InvalidInputError),          # 16 equations for 10 parameters
])
def test_bad_input_is_refused(model, rng, change, error):
    arguments = dict(link=WRIST, Q=rng.normal(size=(10, 8)), QD=rng.normal(size=(10, 8)),
                     QDD=rng.normal(size=(10, 8)), TAU=rng.normal(size=(10, 8)))
    arguments.update(change)
    with pytest.raises(error):
        model.identify_payload(arguments["link"], arguments["Q"], arguments["QD"],
                               arguments["QDD"], arguments["TAU"])
    assert model.payloads == {}
