"""The ~/feedforward laws without ROS: robot_compensates_gravity in every mode against
Pinocchio (with and without a payload), the ramp's shape, and the two parameters' refusals."""
import numpy as np
import pytest

from oracles.pinocchio_reference import PinocchioReference
from support.numerics import assert_close
from support.robots import shipped_urdf
from soa_dynamics_ros import RobotModel
from soa_dynamics_ros.embedded.live_model import LiveModel
from soa_dynamics_ros.errors import InvalidInputError
from soa_dynamics_ros.ros.parameters import validate

POSE = np.array([0.1, -0.6, 0.2, -2.2, 0.1, 1.7, 0.6])
VELOCITY = np.array([0.3, -0.2, 0.4, 0.1, -0.5, 0.2, 0.6])
PAYLOAD = dict(name="tool", link="panda_link7", mass=2.5, com=np.array([0.02, -0.01, 0.12]),
               inertia=np.diag([0.02, 0.03, 0.015]))
ZERO = np.zeros(7)


@pytest.fixture(scope="module")
def xml():
    with open(shipped_urdf("panda.urdf")) as handle:
        return handle.read()


def live_model(xml, payload, compensates=True, ramp_time=0.0):
    model = RobotModel.from_urdf(xml)
    if payload:
        model.attach_payload(**PAYLOAD)
    # Far from the effort limits: no clamping hides a difference.
    live = LiveModel(model, state_timeout=0.05, effort_limit_scale=10.0)
    live.robot_compensates_gravity = compensates
    live.ramp_time = ramp_time
    live.gains = (40.0, 5.0)
    return live


@pytest.mark.parametrize("payload", [True, False], ids=["payload", "no-payload"])
def test_every_mode_leaves_out_the_robots_gravity_and_keeps_the_payloads(xml, payload):
    live = live_model(xml, payload)
    names = live.model.joint_names
    reference = PinocchioReference(xml, names)
    if payload:
        reference.attach(PAYLOAD["link"], PAYLOAD["mass"], PAYLOAD["com"], PAYLOAD["inertia"])
    robot_gravity = PinocchioReference(xml, names).inverse_dynamics(POSE, ZERO, ZERO)
    live.update_state(names, POSE, VELOCITY, now=0.0)

    effort = live.feedforward("gravity", 0.0).effort
    assert_close(effort, reference.inverse_dynamics(POSE, ZERO, ZERO) - robot_gravity,
                 "gravity mode: the payload's gravity only", 1e-9)
    if not payload:
        assert np.abs(effort).max() < 1e-9

    acceleration = np.linspace(-1.0, 1.0, 7)
    live.set_desired_acceleration(names, acceleration)
    assert_close(live.feedforward("inverse_dynamics", 0.0).effort,
                 reference.inverse_dynamics(POSE, VELOCITY, acceleration) - robot_gravity,
                 "inverse_dynamics mode", 1e-9)

    q_d, qd_d, qdd_d = POSE + 0.05, VELOCITY * 0.5, acceleration * 0.3
    live.set_desired_point(names, q_d, qd_d, qdd_d)
    commanded = qdd_d + 40.0 * (q_d - POSE) + 5.0 * (qd_d - VELOCITY)
    assert_close(live.feedforward("computed_torque", 0.0).effort,
                 reference.inverse_dynamics(POSE, VELOCITY, commanded) - robot_gravity,
                 "computed_torque mode", 1e-9)


def test_the_ramp_is_linear_from_the_last_effort_and_restarts_after_a_stop(xml):
    live = live_model(xml, payload=False, compensates=False, ramp_time=1.0)
    names = live.model.joint_names
    gravity = PinocchioReference(xml, names).inverse_dynamics
    full_a = gravity(POSE, ZERO, ZERO)
    for now in np.arange(0.0, 1.6, 0.01):
        live.update_state(names, POSE, ZERO, now)
        effort = live.feedforward("gravity", now).effort
        assert_close(effort, min(now, 1.0) * full_a, f"ramp at t={now:.2f}", 1e-9)
    # Joint states stop for longer than state_timeout; then they come from another pose.
    pose_b = POSE + 0.3
    full_b = gravity(pose_b, ZERO, ZERO)
    assert live.feedforward("gravity", 1.7).effort is None      # stale: nothing
    for now in np.arange(3.0, 4.6, 0.01):
        live.update_state(names, pose_b, ZERO, now)
        progress = min(now - 3.0, 1.0)
        assert_close(live.feedforward("gravity", now).effort,
                     full_a + progress * (full_b - full_a), f"resume at t={now:.2f}", 1e-9)
    # A gap in the states without any refusal (nothing asked for) ramps again too.
    live.update_state(names, POSE, ZERO, 10.0)
    assert_close(live.feedforward("gravity", 10.0).effort, full_b, "after a silent gap", 1e-9)


def test_a_new_live_model_ramps_from_the_effort_its_predecessor_gave(xml):
    old = live_model(xml, payload=False, compensates=False, ramp_time=0.0)
    names = old.model.joint_names
    old.update_state(names, POSE, ZERO, 0.0)
    given = old.feedforward("gravity", 0.0).effort
    new = live_model(xml, payload=False, compensates=True, ramp_time=2.0)
    new.take_over(old)
    new.update_state(names, POSE, ZERO, 0.01)
    assert_close(new.feedforward("gravity", 0.01).effort, given, "no step at the change", 1e-9)
    for now in np.arange(0.02, 1.015, 0.01):     # states keep coming: one ramp
        new.update_state(names, POSE, ZERO, now)
        effort = new.feedforward("gravity", now).effort
    assert_close(effort, (1.0 - (now - 0.01) / 2.0) * given, "halfway", 1e-9)


@pytest.mark.parametrize("name, value, message", [
    ("feedforward_ramp_time", -0.1, "between 0 and 60"),
    ("feedforward_ramp_time", float("nan"), "between 0 and 60"),
    ("feedforward_ramp_time", "1", "must be a number"),
    ("robot_compensates_gravity", "true", "must be true or false"),
    ("robot_compensates_gravity", 1, "must be true or false"),
])
def test_bad_values_are_refused_naming_the_parameter(name, value, message):
    with pytest.raises(InvalidInputError) as refusal:
        validate(name, value)
    assert f"parameter {name!r}" in str(refusal.value) and message in str(refusal.value)
