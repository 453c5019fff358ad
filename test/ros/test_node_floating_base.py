"""A floating-base quadruped served over Fast DDS (issue 46 part 6): nav_msgs/Odometry
gives the base state, whole_body_gravity feedforward is the library's answer for it,
odometry in another frame is refused and not used, stale odometry withholds feedforward.

The library's whole_body_gravity is checked against Pinocchio in
test/model/test_contacts.py; here the node must publish exactly its answer for the base
pose the odometry carried."""
import time

import numpy as np
import pytest
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import Pose, Twist
from sensor_msgs.msg import JointState

from soa_dynamics_ros import RobotModel
from soa_dynamics_ros.model.floating_base import BASE_VELOCITY_NAMES
from soa_dynamics_ros.srv import GravityTorques, InverseDynamics, MassMatrix
from support.optional import require
from support.robots import example_robot_path
from support.ros_harness import RosClient, RosProcess, joint_state, publish_and_wait
from support.waiting import wait_for

nav_msgs = require("nav_msgs.msg")

SOLO = "solo_description/robots/solo12.urdf"
FEET = ["FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT"]
LEGS = np.array([0.1, 0.8, -1.6, -0.1, 0.8, -1.6, 0.1, -0.8, 1.6, -0.1, -0.8, 1.6])
LEVEL = np.array([0.0, 0.0, 0.0, 1.0])
TILTED = np.array([0.1, 0.15, 0.05, np.sqrt(1 - 0.1 ** 2 - 0.15 ** 2 - 0.05 ** 2)])
POSITION = np.array([0.2, -0.1, 0.24])
# Long against a loaded machine's delivery; the stale test waits it out.
STATE_TIMEOUT = 1.0


@pytest.fixture(scope="module")
def urdf():
    return str(example_robot_path(SOLO))


@pytest.fixture(scope="module")
def client():
    ros = RosClient("floating_base_test_client")
    yield ros
    ros.close()


@pytest.fixture(scope="module")
def node(tmp_path_factory, urdf):
    process = RosProcess("soa_dynamics_node", "-p", f"urdf_file:={urdf}",
                         "-p", "floating_base:=true", "-p", "feedforward_mode:=whole_body_gravity",
                         "-p", f"contact_frames:=[{', '.join(FEET)}]", "-p", "kernels:=off",
                         "-p", "feedforward_ramp_time:=0.0", "-p", f"state_timeout:={STATE_TIMEOUT}",
                         "-p", "diagnostics_period:=0.2", "-p", "world_frame:=odom",
                         "-p", "base_odometry_topic:=/odom",
                         log_dir=tmp_path_factory.mktemp("floating_base"), name="floating_base")
    yield process
    code = process.stop()
    assert code == 0, f"node did not exit cleanly ({code}):\n{process.log()}"


@pytest.fixture(scope="module")
def library(urdf):
    model = RobotModel.from_urdf(urdf, floating_base=True)
    return lambda orientation: model.whole_body_gravity(
        np.r_[POSITION, orientation, LEGS], [(foot, "point") for foot in FEET]).tau, model


@pytest.fixture(scope="module")
def wired(client, node, library):
    """(odometry publisher, joint states publisher, feedforward answers, diagnostics)."""
    _, model = library
    answers = client.collect(JointState, "/soa_dynamics/feedforward_state")
    diagnostics = client.collect(DiagnosticArray, "/diagnostics")
    odometry = client.publisher(nav_msgs.Odometry, "/odom")
    joint_states = client.publisher(JointState, "/joint_states")
    client.wait_until_node_matched()
    return odometry, joint_states, answers, diagnostics, model


def odometry_message(orientation, frame="odom", child="base_link"):
    message = nav_msgs.Odometry()
    message.header.frame_id, message.child_frame_id = frame, child
    pose = message.pose.pose
    pose.position.x, pose.position.y, pose.position.z = POSITION.tolist()
    o = pose.orientation
    o.x, o.y, o.z, o.w = orientation.tolist()
    message.twist.twist.linear.x = 0.05
    return message


def answer_after(wired, orientation, frame="odom"):
    odometry, joint_states, answers, _, model = wired
    odometry.publish(odometry_message(orientation, frame))
    return publish_and_wait(joint_states, answers, joint_state(model.joint_names, LEGS),
                            timeout=10.0)


def test_whole_body_gravity_follows_the_odometry_base_pose(wired, library):
    whole_body_gravity, model = library
    assert model.base_link == "base_link"
    for orientation in (LEVEL, TILTED, LEVEL):
        expected = whole_body_gravity(orientation)
        # The first answers may be for the previous pose: the odometry and the joint
        # state travel on two topics.
        answered = []
        wait_for(lambda: np.allclose(answered.append(answer_after(wired, orientation))
                                     or answered[-1], expected, rtol=0, atol=1e-9),
                 timeout=20, interval=0.0, what=f"feedforward for base orientation {orientation}")
        np.testing.assert_allclose(answered[-1], expected, rtol=0, atol=1e-9)
    assert not np.allclose(whole_body_gravity(LEVEL), whole_body_gravity(TILTED), atol=1e-3)


def status_values(diagnostics, since):
    for arrival, array in reversed(list(diagnostics)):
        if arrival > since:
            for status in array.status:
                values = {item.key: item.value for item in status.values}
                if "rejected_base_odometry" in values:
                    return values
    return None


def test_odometry_in_another_frame_is_refused_and_not_used(wired, library):
    whole_body_gravity, _ = library
    odometry, _, _, diagnostics, _ = wired
    started = time.monotonic()
    efforts = []
    for _ in range(10):
        # The refused message is the newest: were it used, the answer would be for it.
        odometry.publish(odometry_message(LEVEL))
        efforts.append(answer_after(wired, TILTED, frame="map"))
    for effort in efforts:
        np.testing.assert_allclose(effort, whole_body_gravity(LEVEL), rtol=0, atol=1e-9)
    values = wait_for(lambda: (lambda v: v if v and v["rejected_base_odometry"] != "0" else None)(
        status_values(diagnostics, started)), timeout=20, what="the refusal in /diagnostics")
    assert "'map'" in values["last_base_odometry_rejection"]
    assert "'odom'" in values["last_base_odometry_rejection"]


def test_services_answer_at_the_odometry_base_state(client, wired, library):
    _, model = library
    answer_after(wired, TILTED)         # the base state the services use
    service = client.client(GravityTorques, "/soa_dynamics/gravity_torques")
    request = GravityTorques.Request()
    request.state = joint_state(model.joint_names, LEGS)
    response = client.call(service, request)
    assert list(response.name) == list(BASE_VELOCITY_NAMES) + model.joint_names
    np.testing.assert_allclose(response.effort, model.gravity_torques(np.r_[POSITION, TILTED, LEGS]),
                               rtol=0, atol=1e-9)


def base_pose(position, orientation):
    pose = Pose()
    pose.position.x, pose.position.y, pose.position.z = map(float, position)
    o = pose.orientation
    o.x, o.y, o.z, o.w = map(float, orientation)
    return pose


def base_twist(twist):
    message = Twist()
    v, w = message.linear, message.angular
    v.x, v.y, v.z, w.x, w.y, w.z = map(float, twist)
    return message


# A base state unlike the odometry's: elsewhere, rolled, moving.
REQUEST_POSITION = np.array([-1.0, 0.5, 0.4])
REQUEST_ORIENTATION = np.array([0.3, -0.2, 0.1, np.sqrt(1 - 0.3 ** 2 - 0.2 ** 2 - 0.1 ** 2)])
REQUEST_TWIST = np.array([0.3, -0.2, 0.1, 0.5, -0.4, 0.8])
ODOMETRY_TWIST = np.array([0.05, 0.0, 0.0, 0.0, 0.0, 0.0])     # odometry_message's
LEG_RATES = np.linspace(-1.0, 1.0, 12)
LEG_ACCELERATIONS = np.linspace(0.5, -0.5, 12)


def inverse_dynamics(client, model, **base):
    service = client.client(InverseDynamics, "/soa_dynamics/inverse_dynamics")
    return client.call(service, InverseDynamics.Request(
        state=joint_state(model.joint_names, LEGS, LEG_RATES),
        acceleration=LEG_ACCELERATIONS.tolist(), **base))


def expected_inverse_dynamics(model, position, orientation, twist):
    return model.inverse_dynamics(np.r_[position, orientation, LEGS], np.r_[twist, LEG_RATES],
                                  np.r_[np.zeros(6), LEG_ACCELERATIONS])


def test_services_answer_at_the_request_base_state(client, wired, library):
    """Issue 46 part 6: a request's base_pose and base_twist, not the odometry's."""
    _, model = library
    answer_after(wired, TILTED)
    pose, twist = base_pose(REQUEST_POSITION, REQUEST_ORIENTATION), base_twist(REQUEST_TWIST)
    response = inverse_dynamics(client, model, base_pose=[pose], base_twist=[twist])
    assert response.success, response.message
    assert list(response.name) == list(BASE_VELOCITY_NAMES) + model.joint_names
    expected = expected_inverse_dynamics(model, REQUEST_POSITION, REQUEST_ORIENTATION,
                                         REQUEST_TWIST)
    np.testing.assert_allclose(response.effort, expected, rtol=0, atol=1e-9)
    # A pose alone: zero base twist, as a joint named without a velocity.
    response = inverse_dynamics(client, model, base_pose=[pose])
    np.testing.assert_allclose(response.effort, expected_inverse_dynamics(
        model, REQUEST_POSITION, REQUEST_ORIENTATION, np.zeros(6)), rtol=0, atol=1e-9)
    # A twist alone: at the odometry's pose.
    response = inverse_dynamics(client, model, base_twist=[twist])
    np.testing.assert_allclose(response.effort, expected_inverse_dynamics(
        model, POSITION, TILTED, REQUEST_TWIST), rtol=0, atol=1e-9)
    # Every service with a state takes the base: the mass matrix at the request's attitude.
    service = client.client(MassMatrix, "/soa_dynamics/mass_matrix")
    response = client.call(service, MassMatrix.Request(
        state=joint_state(model.joint_names, LEGS), base_pose=[pose]))
    assert response.success, response.message
    np.testing.assert_allclose(np.reshape(response.mass_matrix, (model.nv, model.nv)),
                               model.mass_matrix(np.r_[REQUEST_POSITION, REQUEST_ORIENTATION, LEGS]),
                               rtol=0, atol=1e-9)
    assert not response.coriolis and "floating-base" in response.message


def test_an_empty_base_uses_the_odometry_base_state(client, wired, library):
    _, model = library
    answer_after(wired, TILTED)
    response = inverse_dynamics(client, model)
    assert response.success, response.message
    np.testing.assert_allclose(response.effort, expected_inverse_dynamics(
        model, POSITION, TILTED, ODOMETRY_TWIST), rtol=0, atol=1e-9)


@pytest.mark.parametrize("orientation, twist, message", [
    ([0.0, 0.0, 0.0, 2.0], np.zeros(6), "base_pose"),
    ([0.0, 0.0, 0.0, 0.9], np.zeros(6), "norm"),
    ([np.nan, 0.0, 0.0, 1.0], np.zeros(6), "NaN"),
    (LEVEL, [0.0, np.nan, 0.0, 0.0, 0.0, 0.0], "base_twist"),
    (LEVEL, [0.0, 0.0, 0.0, 0.0, 0.0, np.inf], "inf"),
], ids=["norm-2", "norm-0.9", "nan-quaternion", "nan-twist", "inf-twist"])
def test_a_bad_request_base_is_refused_and_changes_nothing(client, wired, library, orientation,
                                                           twist, message):
    _, model = library
    answer_after(wired, TILTED)
    response = inverse_dynamics(client, model, base_pose=[base_pose(REQUEST_POSITION, orientation)],
                                base_twist=[base_twist(twist)])
    assert not response.success and message in response.message, response.message
    assert not response.effort
    response = inverse_dynamics(client, model)
    np.testing.assert_allclose(response.effort, expected_inverse_dynamics(
        model, POSITION, TILTED, ODOMETRY_TWIST), rtol=0, atol=1e-9)


def test_stale_odometry_withholds_feedforward(wired):
    _, joint_states, answers, diagnostics, model = wired
    answer_after(wired, LEVEL)
    stopped = time.monotonic()
    time.sleep(STATE_TIMEOUT * 1.5)      # the odometry stops; joint states go on

    def withheld_for_the_base():
        message = joint_state(model.joint_names, LEGS)
        joint_states.publish(message)
        time.sleep(0.05)
        values = status_values(diagnostics, stopped + STATE_TIMEOUT)
        return values and "base (odometry)" in values.get("withheld_reason", "")
    wait_for(withheld_for_the_base, timeout=20, what="feedforward withheld for the stale base")
    count = len(answers)
    for _ in range(5):
        joint_states.publish(joint_state(model.joint_names, LEGS))
        time.sleep(0.05)
    assert len(answers) == count
