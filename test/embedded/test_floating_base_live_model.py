"""A floating-base robot in the embedded model (issue 46 part 6, without ROS): the base
state drives the feedforward as Pinocchio's free-flyer says, its age withholds feedforward
as a joint's does, and the settings that do not fit a floating base are refused."""
import logging
import math

import numpy as np
import pytest

from soa_dynamics_ros.embedded.live_model import BASE_STATE
from soa_dynamics_ros.embedded.model_host import ModelHost
from soa_dynamics_ros.errors import InvalidInputError
from soa_dynamics_ros.ros.parameters import PARAMETERS
from support.robots import example_robot_path, example_robot_text
from support.optional import require

pin = require("pinocchio")

SOLO = "solo_description/robots/solo12.urdf"
FEET = ["FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT"]
TIMEOUT = 0.05
# A standing pose of the legs (hip abduction, hip flexion, knee per leg) and a base
# tilted about a skew axis, so that every quaternion component and joint row counts.
LEGS = np.array([0.1, 0.8, -1.6, -0.1, 0.8, -1.6, 0.1, -0.8, 1.6, -0.1, -0.8, 1.6])
POSITION = np.array([0.3, -0.2, 0.25])
AXIS, ANGLE = np.array([1.0, 2.0, 0.5]) / np.linalg.norm([1.0, 2.0, 0.5]), 0.4
ORIENTATION = np.r_[AXIS * math.sin(ANGLE / 2), math.cos(ANGLE / 2)]


def config(**changes):
    values = {name: spec.default for name, spec in PARAMETERS.items()}
    values.update(package_paths=[], command_joints=[], payloads=[], contact_frames=[], kernels="off",
                  feedforward_ramp_time=0.0, state_timeout=TIMEOUT, floating_base=True,
                  urdf_file=str(example_robot_path(SOLO)))
    return {**values, **changes}


def host_of(**changes):
    host = ModelHost(config(**changes), logging.getLogger("floating_base_test"))
    host.load_now(host.config["urdf_file"], "parameters")
    return host


def measure(live, now, legs=LEGS, position=POSITION, orientation=ORIENTATION):
    assert live.update_state(live.model.joint_names, legs, np.zeros(legs.size), now).accepted
    live.update_base(position, orientation, (0.1, 0.0, 0.0), (0.0, 0.0, 0.2), now)


@pytest.fixture(scope="module")
def pinocchio_gravity():
    model = pin.buildModelFromXML(example_robot_text(SOLO), pin.JointModelFreeFlyer())
    data = model.createData()

    def gravity(joint_names, legs, position, orientation):
        q = np.r_[position, orientation, np.zeros(model.nq - 7)]
        rows = []
        for name, value in zip(joint_names, legs):
            joint = model.joints[model.getJointId(name)]
            q[joint.idx_q] = value
            rows.append(joint.idx_v)
        return pin.computeGeneralizedGravity(model, data, q)[rows]
    return gravity


def test_the_base_pose_turns_the_joints_gravity_as_pinocchio_free_flyer(pinocchio_gravity):
    live = host_of().live
    for orientation in (ORIENTATION, np.array([0.0, 0.0, 0.0, 1.0])):
        measure(live, 1.0, orientation=orientation)
        result = live.feedforward("gravity", 1.0)
        expected = pinocchio_gravity(live.model.joint_names, LEGS, POSITION, orientation)
        np.testing.assert_allclose(result.effort, expected, rtol=1e-9, atol=1e-9)


def test_whole_body_gravity_feedforward_is_the_library_answer_and_balances_the_robot():
    host = host_of(feedforward_mode="whole_body_gravity", contact_frames=FEET)
    live = host.live
    measure(live, 1.0)
    effort = host.feedforward(1.0).effort
    q = np.r_[POSITION, ORIENTATION, LEGS]
    np.testing.assert_array_equal(
        effort, live.model.whole_body_gravity(q, [(f, "point") for f in FEET]).tau)


def test_a_stale_base_state_withholds_feedforward_as_a_stale_joint_does():
    live = host_of().live
    measure(live, 1.0)
    assert live.feedforward("gravity", 1.0 + TIMEOUT / 2).effort is not None
    # The joints stay fresh; only the base state ages.
    live.update_state(live.model.joint_names, LEGS, np.zeros(LEGS.size), 1.0 + 2 * TIMEOUT)
    result = live.feedforward("gravity", 1.0 + 2 * TIMEOUT)
    assert result.effort is None and BASE_STATE in result.reason
    assert live.stale_joints(1.0 + 2 * TIMEOUT) == [BASE_STATE]


def test_no_base_state_yet_withholds_feedforward():
    live = host_of().live
    live.update_state(live.model.joint_names, LEGS, np.zeros(LEGS.size), 1.0)
    result = live.feedforward("gravity", 1.0)
    assert result.effort is None and BASE_STATE in result.reason


@pytest.mark.parametrize("orientation", [(0.0, 0.0, 0.0, 1.1), (0.0, 0.0, float("nan"), 1.0)])
def test_a_bad_base_quaternion_is_refused_and_changes_nothing(orientation):
    live = host_of().live
    measure(live, 1.0)
    with pytest.raises(InvalidInputError, match="quaternion|NaN"):
        live.update_base(POSITION, orientation, (0, 0, 0), (0, 0, 0), 2.0)
    np.testing.assert_array_equal(live.base_pose, np.r_[POSITION, ORIENTATION])
    assert live.feedforward("gravity", 1.0).effort is not None


@pytest.mark.parametrize("changes, refusal", [
    ({"feedforward_mode": "inverse_dynamics"}, "not served for floating-base"),
    ({"feedforward_mode": "whole_body_gravity"}, "needs contact_frames"),
    ({"contact_frames": ["no_such_foot"]}, "no frame 'no_such_foot'"),
    ({"robot_compensates_gravity": True}, "robot_compensates_gravity"),
])
def test_settings_that_do_not_fit_a_floating_base_are_refused(changes, refusal):
    with pytest.raises(InvalidInputError, match=refusal):
        host_of(**changes)


def test_whole_body_gravity_on_a_fixed_base_robot_is_refused():
    with pytest.raises(InvalidInputError, match="needs a floating-base robot"):
        host_of(floating_base=False, feedforward_mode="whole_body_gravity", contact_frames=FEET)


def test_estimation_is_off_on_a_floating_base_and_says_why():
    host = host_of()
    measure(host.live, 1.0)
    assert host.estimation_off(1.0) == "not estimated on floating-base robots yet"
    with pytest.raises(InvalidInputError, match="floating-base"):
        host.identify_payload("base_link", 1.0, False, "load")


def test_the_inertia_marker_is_at_the_odometry_base_pose():
    live = host_of().live
    measure(live, 1.0)
    ellipsoid = live.inertia_ellipsoid("FL_FOOT", 1.0)
    q = np.r_[POSITION, ORIENTATION, LEGS]
    np.testing.assert_allclose(ellipsoid.center, live.model.frame_pose(q, "FL_FOOT")[:3, 3])
