"""The external-torque observer and contact detection against MuJoCo and Pinocchio.

The plant is MuJoCo running an rtb-data arm (Interbotix ViperX 300 s, with a
mimic finger) that tracks a motion under computed torque; the truth is
MuJoCo's: its applied efforts are the measured torques, and the external
joint torques are the applied wrench through MuJoCo's own body Jacobian.
The model is exact (the same URDF).  Targets are issue 16's.
"""
import numpy as np
import pytest

from oracles.pinocchio_reference import PinocchioReference
from support.estimation_runs import (ARM_JOINTS, DT, TOOL, arm_description, simulate,
                                     sinusoid)
from support.optional import require
from soa_dynamics_ros import ContactDetector, ExternalTorqueObserver, RobotModel
from soa_dynamics_ros.errors import InvalidInputError, UnknownNameError

pin = require("pinocchio")

WRENCH = np.array([3.0, -2.0, 4.0, 0.2, -0.1, 0.15])   # N, N m: on the tool, root axes
WRENCH_START, WRENCH_END = 0.8, 1.6
GAIN = 50.0
# A moderate motion of every joint (fingers too) while the wrench acts.
MOTION = sinusoid([0.2, 0.15, 0.15, 0.3, 0.3, 0.4, 0.3, 0.005],
                  [0.5, 0.4, 0.6, 0.5, 0.7, 0.8, 0.5, 0.5])
# Fast: 1.5-2.5 rad/s on the big joints, 4-6 rad/s at the wrist, 2 Hz.
FAST_MOTION = sinusoid([0.4, 0.3, 0.35, 0.8, 0.6, 1.0, 0.5, 0.01],
                       [0.8, 1.0, 1.1, 1.2, 1.5, 1.6, 1.0, 1.0])
CONTACT_THRESHOLD_FRACTION = 0.1    # of the wrench's peak joint torque


@pytest.fixture(scope="module")
def model():
    return RobotModel.from_urdf(arm_description())


def observed(model, desired, duration, gain=GAIN, wrench=None, dynamics=None,
             subtract_friction=False, control_model=None):
    observer = ExternalTorqueObserver(model, gain=gain, subtract_friction=subtract_friction)
    estimates, wrenches = [], []

    def on_sample(t, q, qd, tau):
        estimates.append(observer.update(q, qd, tau, DT))
        wrenches.append(observer.external_wrench(q, TOOL))
    run = simulate(desired, duration, wrench, (WRENCH_START, WRENCH_END), dynamics=dynamics,
                   on_sample=on_sample, control_model=control_model or model)
    run.estimate, run.wrench = np.array(estimates), np.array(wrenches)
    return run


@pytest.fixture(scope="module")
def wrench_run(model):
    return observed(model, MOTION, 1.8, wrench=WRENCH)


@pytest.fixture(scope="module")
def fast_run(model):
    return observed(model, FAST_MOTION, 3.0)


@pytest.mark.parametrize("kernels", ["c", "off"])
def test_coriolis_transpose_product_agrees_with_pinocchio(kernels, rng):
    """The per-robot compiled kernel and the numpy recursion."""
    model = RobotModel.from_urdf(arm_description(), kernels=kernels)
    reference = PinocchioReference(arm_description(), model.joint_names)
    for _ in range(20):
        q, qd = rng.uniform(-2, 2, model.dof), rng.normal(size=model.dof) * 2
        config, v = reference.configuration(q), reference.selection @ qd
        coriolis = pin.computeCoriolisMatrix(reference.model, reference.data, config, v)
        # Mimic joints: Pinocchio has each hinge as a joint; fold with G^T.
        expected = reference.selection.T @ (coriolis.T @ v)
        np.testing.assert_allclose(model.coriolis_transpose_product(q, qd), expected,
                                   rtol=0, atol=1e-10 * max(1, np.abs(expected).max()))


def test_coriolis_products_sum_to_the_mass_matrix_rate(model, rng):
    """dM/dt = C + C^T (a law of Lagrangian mechanics): (C + C^T) qd = dM/dt qd, with
    C qd = h(q, qd) - g(q) and dM/dt by a central difference along qd."""
    for _ in range(10):
        q, qd = rng.uniform(-2, 2, model.dof), rng.normal(size=model.dof)
        step = 1e-6
        rate = (model.mass_matrix(q + step * qd) - model.mass_matrix(q - step * qd)) / (2 * step)
        coriolis = model.bias_torques(q, qd) - model.gravity_torques(q)
        np.testing.assert_allclose(model.coriolis_transpose_product(q, qd) + coriolis, rate @ qd,
                                   rtol=0, atol=1e-6)


def test_external_torques_meet_the_targets(wrench_run):
    """From 100 ms after the wrench starts, within 10% of its peak joint torque; before
    it, below 5% of that peak."""
    run = wrench_run
    peak = np.abs(run.true_external).max()
    assert peak > 0.5                       # the wrench is felt (N m)
    settled = (run.t >= WRENCH_START + 0.1) & (run.t < WRENCH_END)
    error = np.abs(run.estimate[settled] - run.true_external[settled]).max()
    assert error <= 0.1 * peak, (error, peak)
    before = run.t < WRENCH_START
    assert np.abs(run.estimate[before]).max() <= 0.05 * peak
    # After release, back to zero the same way.
    released = run.t >= WRENCH_END + 0.1
    assert np.abs(run.estimate[released]).max() <= 0.1 * peak


def test_estimate_is_a_first_order_lag_of_time_constant_one_over_gain(wrench_run):
    """The documented bandwidth: after 1/K, 1 - 1/e of the step is estimated."""
    run = wrench_run
    joint = np.argmax(np.abs(run.true_external).max(axis=0))
    start = np.searchsorted(run.t, WRENCH_START)
    at_tau = start + int(round(1.0 / GAIN / DT))
    fraction = run.estimate[at_tau, joint] / run.true_external[at_tau, joint]
    assert abs(fraction - (1 - np.exp(-1))) < 0.05, fraction


def test_wrench_at_the_tool_within_ten_percent(wrench_run):
    run = wrench_run
    settled = (run.t >= WRENCH_START + 0.1) & (run.t < WRENCH_END)
    error = np.abs(run.wrench[settled] - WRENCH).max(axis=0)
    assert np.all(error[:3] <= 0.1 * np.linalg.norm(WRENCH[:3])), error
    assert np.all(error[3:] <= 0.1 * np.linalg.norm(WRENCH[3:])), error


def test_contact_detected_within_20_ms_and_released(wrench_run):
    run = wrench_run
    detector = ContactDetector(CONTACT_THRESHOLD_FRACTION * np.abs(run.true_external).max())
    states = np.array([detector.update(estimate) for estimate in run.estimate])
    onsets = run.t[np.flatnonzero(np.diff(states.astype(int)) == 1) + 1]
    assert len(onsets) == 1, onsets
    assert WRENCH_START <= onsets[0] <= WRENCH_START + 0.020, onsets
    assert not states[-1]


def test_no_false_contact_during_a_fast_trajectory(fast_run, wrench_run):
    run = fast_run
    assert np.abs(run.qd[:, :ARM_JOINTS]).max() > 3.0        # it is fast (rad/s)
    threshold = CONTACT_THRESHOLD_FRACTION * np.abs(wrench_run.true_external).max()
    detector = ContactDetector(threshold)
    assert not any(detector.update(estimate) for estimate in run.estimate)


def test_unknown_damping_shows_as_its_torque_and_subtracting_it_meets_the_targets(model):
    """With joint damping in the plant that the model ignores, the estimate is the
    external torque minus the damping torque (MuJoCo's qfrc_passive); subtracting
    the URDF damping removes it."""
    dynamics = (0.5, 0.0)
    damped = RobotModel.from_urdf(arm_description(dynamics))
    ignored = observed(model, MOTION, 1.8, wrench=WRENCH, dynamics=dynamics,
                       control_model=damped)
    settled = (ignored.t >= WRENCH_START + 0.1) & (ignored.t < WRENCH_END)
    expected = ignored.true_external + ignored.passive
    peak = np.abs(ignored.true_external).max()
    assert np.abs(ignored.estimate[settled] - expected[settled]).max() <= 0.1 * peak
    assert np.abs(ignored.passive).max() > 0.1 * peak     # the damping matters
    subtracted = observed(damped, MOTION, 1.8, wrench=WRENCH, dynamics=dynamics,
                          subtract_friction=True)
    error = np.abs(subtracted.estimate[settled] - subtracted.true_external[settled]).max()
    assert error <= 0.1 * peak, error


def test_friction_of_a_mimic_joint_is_folded_onto_its_master():
    """The right finger mirrors the left (multiplier read from the URDF text): its friction
    force on the left coordinate is multiplier * (its force at multiplier * qd)."""
    import xml.etree.ElementTree as ET
    root = ET.fromstring(arm_description())
    dynamics = {"left_finger": (2.0, 0.3), "right_finger": (5.0, 0.7)}
    multiplier = None
    for joint in root.iter("joint"):
        if joint.get("name") in dynamics:
            damping, friction = dynamics[joint.get("name")]
            ET.SubElement(joint, "dynamics", damping=str(damping), friction=str(friction))
            if joint.find("mimic") is not None:
                multiplier = float(joint.find("mimic").get("multiplier", 1))
    model = RobotModel.from_urdf(ET.tostring(root, encoding="unicode"))
    observer = ExternalTorqueObserver(model, subtract_friction=True, friction_velocity=1e-3)
    qd = np.zeros(model.dof)
    qd[model.joint_index("left_finger")] = 0.05           # far above friction_velocity
    left = 2.0 * 0.05 + 0.3
    right_rate = multiplier * 0.05
    right = 5.0 * right_rate + 0.7 * np.sign(right_rate)
    expected = np.zeros(model.dof)
    expected[model.joint_index("left_finger")] = left + multiplier * right
    np.testing.assert_allclose(observer.friction_torques(qd), expected, atol=1e-12)


# ---------------------------------------------------------------------------- bad input
def _twin_observers(model):
    observers = [ExternalTorqueObserver(model, gain=[20.0] * model.dof) for _ in range(2)]
    q, qd, tau = np.full(model.dof, 0.2), np.full(model.dof, 0.1), np.ones(model.dof)
    for observer in observers:
        for _ in range(5):
            observer.update(q, qd, tau, DT)
    return observers, (q, qd, tau)


@pytest.mark.parametrize("change", [
    {"q": [0.0] * 3}, {"qd": [np.nan] * 8}, {"tau": "a"}, {"tau": [np.inf] + [0.0] * 7},
    {"dt": 0.0}, {"dt": -0.001}, {"dt": np.nan}, {"dt": np.inf}, {"dt": None}, {"dt": "1"},
])
def test_bad_samples_raise_and_change_nothing(model, change):
    (observer, twin), (q, qd, tau) = _twin_observers(model)
    arguments = dict(q=q, qd=qd, tau=tau, dt=DT)
    arguments.update(change)
    with pytest.raises(InvalidInputError):
        observer.update(arguments["q"], arguments["qd"], arguments["tau"], arguments["dt"])
    np.testing.assert_array_equal(observer.estimate, twin.estimate)
    np.testing.assert_array_equal(observer.update(q, qd, tau * 2, DT),
                                  twin.update(q, qd, tau * 2, DT))


def test_unknown_frame_and_bad_configuration_are_named(model):
    observer = ExternalTorqueObserver(model)
    with pytest.raises(UnknownNameError, match="gripper"):
        observer.external_wrench(np.zeros(model.dof), "/gripper")
    with pytest.raises(InvalidInputError):
        observer.external_wrench(np.zeros(3), TOOL)


@pytest.mark.parametrize("gain", [0.0, -1.0, np.nan, [1.0, 2.0], "fast"])
def test_bad_gain_is_refused(model, gain):
    with pytest.raises(InvalidInputError):
        ExternalTorqueObserver(model, gain=gain)


def test_reset_starts_again_from_zero(model):
    (observer, _), (q, qd, tau) = _twin_observers(model)
    assert np.any(observer.estimate)
    observer.reset()
    np.testing.assert_array_equal(observer.estimate, np.zeros(model.dof))
    np.testing.assert_array_equal(observer.update(q, qd, tau, DT), np.zeros(model.dof))


def test_wrench_from_fewer_joints_than_six_is_the_smallest_that_explains_them(model, rng):
    """At the wrist only 5 joints move the frame: J^T has rank 5, and the answer is the
    minimum-norm wrench with J^T w = the estimated torques (a physics law: any wrench
    w + n with J^T n = 0 produces the same torques)."""
    observer = ExternalTorqueObserver(model)
    q = rng.uniform(-1, 1, model.dof)
    jacobian = model.jacobian(q, "/wrist_link")
    assert np.linalg.matrix_rank(jacobian) == 5
    applied = rng.normal(size=6)
    # Drive the observer with a static external torque J^T w (robot held still).
    torque = jacobian.T @ applied
    hold = model.gravity_torques(q)
    observer.update(q, np.zeros(model.dof), hold, DT)
    for _ in range(2000):
        observer.update(q, np.zeros(model.dof), hold - torque, DT)
    wrench = observer.external_wrench(q, "/wrist_link")
    # The estimate of the external torque on a still robot is -(tau - g) after settling.
    np.testing.assert_allclose(jacobian.T @ wrench, observer.estimate, atol=1e-9)
    null = np.linalg.svd(jacobian.T)[2][-1]
    assert abs(null @ wrench) < 1e-9


@pytest.mark.parametrize("thresholds, release", [
    (0.0, 0.5), (-1.0, 0.5), (np.nan, 0.5), ([1.0, -1.0], 0.5), (1.0, 0.0), (1.0, 1.5),
    (1.0, "x"), ([], 0.5)])
def test_contact_detector_refuses_bad_settings(thresholds, release):
    with pytest.raises(InvalidInputError):
        ContactDetector(thresholds, release_ratio=release)


def test_contact_detector_hysteresis_and_per_joint_thresholds():
    detector = ContactDetector([1.0, 2.0], release_ratio=0.5)
    assert not detector.update([0.9, 1.9])
    assert detector.update([0.0, 2.1]) and detector.joints == [1]
    assert detector.update([0.0, 1.5])           # between release (1.0) and threshold
    assert detector.update([0.6, 0.0])           # joint 0 above its release 0.5
    assert not detector.update([0.4, 0.9])
    with pytest.raises(InvalidInputError):
        detector.update([1.0, 2.0, 3.0])
    assert not detector.in_contact
