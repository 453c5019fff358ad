"""The embedded-model node in its own process, over real Fast DDS."""
import math
import time

import numpy as np
import pytest
from rcl_interfaces.msg import Parameter as ParameterMsg, ParameterType, ParameterValue
from rcl_interfaces.srv import SetParameters
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String
from trajectory_msgs.msg import JointTrajectoryPoint
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import Pose, Twist
from visualization_msgs.msg import Marker

from support.numerics import assert_close
from support.optional import require
from support.robots import shipped_urdf
from support.ros_harness import RosClient, RosProcess, joint_state as state, publish_and_wait
from support.waiting import wait_for
from soa_dynamics_ros import RobotModel
from soa_dynamics_ros.msg import Constraint, LinkWrench, Payload
from soa_dynamics_ros.ros import conversions
from soa_dynamics_ros.srv import (ForwardDynamics, GravityTorques, HybridDynamics, InverseDynamics,
                                  MassMatrix, MixedDynamics, SetPayload, TaskSpaceInertia)

POSE = np.array([0.1, -0.6, 0.2, -2.2, 0.1, 1.7, 0.6])


@pytest.fixture(scope="module")
def client():
    ros = RosClient()
    yield ros
    ros.close()


@pytest.fixture(scope="module")
def panda_node(tmp_path_factory):
    # No ramp: every answer is compared with the law itself (test_node_ramp.py: the ramp).
    process = RosProcess("soa_dynamics_node", "--params-file", "config/panda.yaml",
                         "-p", "feedforward_ramp_time:=0.0",
                         log_dir=tmp_path_factory.mktemp("node"), name="panda_node")
    yield process
    code = process.stop()
    assert code == 0, f"node did not exit cleanly ({code}):\n{process.log()}"


@pytest.fixture(scope="module")
def panda():
    return RobotModel.from_urdf(shipped_urdf("panda.urdf"))


@pytest.fixture(scope="module")
def joint_states(client):
    return client.node.create_publisher(JointState, "/joint_states", 10)


@pytest.fixture(scope="module")
def feedforward(client, panda_node):
    """~/feedforward_state: the effort with the stamp of the joint state it answers."""
    return client.collect(JointState, "/soa_dynamics/feedforward_state")


@pytest.fixture(scope="module")
def services(client, panda_node):
    types = {"gravity_torques": GravityTorques, "inverse_dynamics": InverseDynamics,
             "forward_dynamics": ForwardDynamics, "mass_matrix": MassMatrix,
             "task_space_inertia": TaskSpaceInertia, "hybrid_dynamics": HybridDynamics,
             "mixed_dynamics": MixedDynamics, "set_payload": SetPayload}
    return {name: client.client(kind, f"/soa_dynamics/{name}") for name, kind in types.items()}


def answer_once_taken(publish_desired, joint_states, feedforward, message, expected):
    """The answer to ``message`` once the node has taken the desired value ``publish_desired`` sends.

    Messages on two topics keep no order between them: a joint state may be
    answered before a desired value published earlier arrives, so both are
    sent until the answer shows it (then once more, for the exact comparison).
    """
    wait_for(lambda: publish_desired() or np.allclose(
        publish_and_wait(joint_states, feedforward, message), expected, rtol=0, atol=1e-6),
        what="an answer using the desired value")
    return publish_and_wait(joint_states, feedforward, message)


def set_parameters(client, node="/soa_dynamics", **values):
    setter = client.client(SetParameters, f"{node}/set_parameters")
    parameters = []
    for name, value in values.items():
        if isinstance(value, str):
            pv = ParameterValue(type=ParameterType.PARAMETER_STRING, string_value=value)
        elif isinstance(value, float):
            pv = ParameterValue(type=ParameterType.PARAMETER_DOUBLE, double_value=value)
        else:
            pv = ParameterValue(type=ParameterType.PARAMETER_STRING_ARRAY, string_array_value=value)
        parameters.append(ParameterMsg(name=name, value=pv))
    return client.call(setter, SetParameters.Request(parameters=parameters)).results


def test_feedforward_is_the_gravity_torque_of_the_measured_state(client, joint_states, feedforward,
                                                                   panda):
    commands = client.collect(Float64MultiArray, "/soa_dynamics/feedforward")
    order = [6, 2, 0, 5, 1, 3, 4]
    names = [panda.joint_names[i] for i in order]
    effort = publish_and_wait(joint_states, feedforward, state(names, POSE[order]))
    assert_close(effort, panda.gravity_torques(POSE), "feedforward = g(q)", 1e-12)
    # The command array for ros2_control carries the same efforts, in the model's order.

    def command_array():
        joint_states.publish(state(names, POSE[order]))
        return commands and commands[-1][1].data
    command = wait_for(command_array, what="the command array on ~/feedforward")
    assert_close(command, panda.gravity_torques(POSE), "~/feedforward = g(q)", 1e-12)


def test_partial_joint_states_are_merged_by_name(joint_states, feedforward, panda):
    publish_and_wait(joint_states, feedforward, state(panda.joint_names, POSE))
    effort = publish_and_wait(joint_states, feedforward,
                              state(["panda_joint4", "panda_joint2", "finger"], [-1.5, 0.3, 0.01]))
    merged = POSE.copy()
    merged[[3, 1]] = [-1.5, 0.3]
    assert_close(effort, panda.gravity_torques(merged), "merged state", 1e-12)


def test_non_finite_joint_states_are_rejected_and_never_published(joint_states, feedforward, panda):
    publish_and_wait(joint_states, feedforward, state(panda.joint_names, POSE))
    count = len(feedforward)
    bad = POSE.copy()
    bad[2] = math.nan
    for _ in range(10):
        joint_states.publish(state(panda.joint_names, bad))
        joint_states.publish(state(panda.joint_names, POSE, [0, 0, math.inf, 0, 0, 0, 0]))
        joint_states.publish(state(panda.joint_names[:3], POSE[:4]))  # lengths disagree
        time.sleep(0.01)
    time.sleep(0.2)
    assert len(feedforward) == count
    effort = publish_and_wait(joint_states, feedforward, state(panda.joint_names, POSE))
    assert_close(effort, panda.gravity_torques(POSE), "resumes", 1e-12)
    assert all(np.all(np.isfinite(m.effort)) for _, m in feedforward)


def test_stale_joints_stop_the_feedforward_and_diagnostics_say_why(client, joint_states, feedforward,
                                                                   panda):
    diagnostics = client.collect(DiagnosticArray, "/diagnostics")
    publish_and_wait(joint_states, feedforward, state(panda.joint_names, POSE))
    time.sleep(0.1)  # older than state_timeout = 0.05 s
    count = len(feedforward)
    for _ in range(20):  # only some joints keep coming: the others are stale
        joint_states.publish(state(panda.joint_names[:3], POSE[:3]))
        time.sleep(0.01)
    assert len(feedforward) == count

    def stale_report():
        return [s for _, array in diagnostics for s in array.status
                if "soa_dynamics" in s.name and "feedforward stopped" in s.message]
    report = wait_for(stale_report, timeout=5.0, what="a stale-state diagnostic")
    assert "panda_joint4" in report[-1].message
    # The serving thread's longest garbage collection of the period (none: generation -1).
    values = {kv.key: kv.value for kv in report[-1].values}
    assert float(values["gc_pause_max_ms"]) >= 0.0
    assert int(values["gc_pause_max_generation"]) in (-1, 0, 1, 2)
    effort = publish_and_wait(joint_states, feedforward, state(panda.joint_names, POSE))
    assert_close(effort, panda.gravity_torques(POSE), "resumed", 1e-12)


def test_services_answer_like_the_library(client, services, panda):
    rng = np.random.default_rng(3)
    order = [3, 0, 6, 1, 5, 2, 4]
    names = [panda.joint_names[i] for i in order]
    q, qd, qdd, tau = POSE, rng.normal(size=7), rng.normal(size=7), rng.normal(size=7)
    request_state = state(names, q[order], qd[order])
    wrench = LinkWrench(link="panda_hand")
    wrench.wrench.force.z, wrench.wrench.torque.x = -5.0, 0.3
    wrenches = {"panda_hand": [0, 0, -5.0, 0.3, 0, 0]}

    answer = client.call(services["gravity_torques"], GravityTorques.Request(state=request_state))
    assert answer.success and list(answer.name) == panda.joint_names
    assert_close(answer.effort, panda.gravity_torques(q), "gravity", 1e-12)

    answer = client.call(services["inverse_dynamics"], InverseDynamics.Request(
        state=request_state, acceleration=qdd[order].tolist(), wrenches=[wrench]))
    assert answer.success, answer.message
    assert_close(answer.effort, panda.inverse_dynamics(q, qd, qdd, wrenches), "ID", 1e-12)

    answer = client.call(services["forward_dynamics"], ForwardDynamics.Request(
        state=request_state, effort=tau[order].tolist(), wrenches=[wrench]))
    assert_close(answer.acceleration, panda.forward_dynamics(q, qd, tau, wrenches), "FD", 1e-12)

    answer = client.call(services["mass_matrix"], MassMatrix.Request(state=request_state))
    assert_close(np.reshape(answer.mass_matrix, (7, 7)), panda.mass_matrix(q), "M", 1e-12)

    answer = client.call(services["task_space_inertia"], TaskSpaceInertia.Request(
        state=request_state, frame="panda_hand_tcp"))
    assert answer.success, answer.message
    info = panda.task_space_inertia(q, "panda_hand_tcp", return_info=True)
    assert_close(np.reshape(answer.inertia, (6, 6)), info.inertia, "Lambda", 1e-10)
    assert_close(np.reshape(answer.inertia_inverse, (6, 6)), info.inertia_inverse, "Lambda^-1", 1e-12)
    assert answer.condition_number == pytest.approx(info.condition_number) and answer.rank == 6

    alpha = np.eye(6)[:, [0, 2, 4]]
    constraint = Constraint(frame="panda_hand_tcp", alpha=alpha.T.ravel().tolist(), beta=[0.1, 0.0, -0.2])
    answer = client.call(services["hybrid_dynamics"], HybridDynamics.Request(
        state=request_state, constraints=[constraint], feedforward_torque=tau[order].tolist(),
        wrenches=[wrench]))
    assert answer.success, answer.message
    result = panda.hybrid_dynamics(q, qd, [("panda_hand_tcp", alpha, [0.1, 0.0, -0.2])], tau, wrenches)
    assert_close(answer.acceleration, result.qdd, "hybrid qdd", 1e-12)
    assert_close(answer.constraint_torque, result.constraint_torques, "hybrid torque", 1e-12)
    assert_close(answer.constraint_force_magnitude, result.nu, "nu", 1e-12)

    answer = client.call(services["mixed_dynamics"], MixedDynamics.Request(
        state=request_state, prescribed=["panda_joint2", "panda_joint5"],
        acceleration=qdd[order].tolist(), effort=tau[order].tolist()))
    expected = panda.mixed_dynamics(q, qd, qdd, tau, ["panda_joint2", "panda_joint5"])
    assert_close(answer.acceleration, expected[0], "mixed qdd", 1e-12)
    assert_close(answer.effort, expected[1], "mixed tau", 1e-12)


def test_mass_matrix_answers_coriolis_and_energies_at_the_request_state(
        client, services, joint_states, feedforward, panda):
    """Issue 47 part 5: C(q, qd) and the energies at the request's state, velocities
    merged by name over the synced ones as positions are (the library's answers,
    checked against Pinocchio in test/model)."""
    synced_velocity = np.linspace(-0.4, 0.5, 7)
    publish_and_wait(joint_states, feedforward, state(panda.joint_names, POSE, synced_velocity))
    order = [5, 2, 0]
    names = [panda.joint_names[i] for i in order]
    q, qd = POSE.copy(), synced_velocity.copy()
    q[order], qd[order] = [0.3, -0.5, 1.1], [0.7, -1.2, 0.4]
    answer = client.call(services["mass_matrix"], MassMatrix.Request(
        state=state(names, q[order], qd[order])))
    assert answer.success, answer.message
    assert_close(np.reshape(answer.mass_matrix, (7, 7)), panda.mass_matrix(q), "M", 1e-12)
    assert len(answer.coriolis) == 49
    assert_close(np.reshape(answer.coriolis, (7, 7)), panda.coriolis_matrix(q, qd), "C", 1e-12)
    assert answer.kinetic_energy == pytest.approx(panda.kinetic_energy(q, qd), rel=1e-12)
    assert answer.potential_energy == pytest.approx(panda.potential_energy(q), rel=1e-12)
    assert answer.kinetic_energy > 0.0 and np.abs(answer.coriolis).max() > 0.0


def test_empty_state_uses_the_synced_joint_states(client, services, joint_states, feedforward, panda):
    publish_and_wait(joint_states, feedforward, state(panda.joint_names, POSE))
    answer = client.call(services["gravity_torques"], GravityTorques.Request())
    assert_close(answer.effort, panda.gravity_torques(POSE), "synced", 1e-12)


BAD_REQUESTS = [
    ("gravity_torques", lambda: GravityTorques.Request(state=state(["panda_joint1", "elbow"], [0, 0])),
     "unknown joint 'elbow'"),
    ("gravity_torques", lambda: GravityTorques.Request(state=state(["panda_joint1"], [0, 1])),
     "2 positions for 1 names"),
    ("gravity_torques", lambda: GravityTorques.Request(state=state(["panda_joint1"], [math.nan])),
     "NaN"),
    ("inverse_dynamics", lambda: InverseDynamics.Request(acceleration=[1.0, 2.0]),
     "acceleration has 2 values, expected 7"),
    ("inverse_dynamics", lambda: InverseDynamics.Request(wrenches=[LinkWrench(link="gripper")]),
     "unknown frame 'gripper'"),
    ("task_space_inertia", lambda: TaskSpaceInertia.Request(frame="panda_hnd"), "did you mean"),
    ("task_space_inertia", lambda: TaskSpaceInertia.Request(frame="panda_hand", damping=-1.0),
     "damping"),
    ("hybrid_dynamics", lambda: HybridDynamics.Request(constraints=[Constraint(
        frame="panda_hand", alpha=[1.0] * 7, beta=[0.0])]), "column-major"),
    ("hybrid_dynamics", lambda: HybridDynamics.Request(constraints=[Constraint(
        frame="panda_hand", alpha=[1.0] * 6, beta=[0.0, 1.0])]), "beta"),
    ("hybrid_dynamics", lambda: HybridDynamics.Request(), "at least one constraint"),
    ("mixed_dynamics", lambda: MixedDynamics.Request(prescribed=["wrist"]), "unknown joint"),
    # Issue 46 part 6: a base state is a floating-base robot's only.
    ("gravity_torques", lambda: GravityTorques.Request(base_pose=[Pose()]), "has a fixed base"),
    ("inverse_dynamics", lambda: InverseDynamics.Request(base_twist=[Twist()]),
     "base_pose and base_twist must be empty"),
    ("mass_matrix", lambda: MassMatrix.Request(base_pose=[Pose()], base_twist=[Twist()]),
     "has a fixed base"),
    ("set_payload", lambda: SetPayload.Request(payload=conversions.payload_message(
        "box", "panda_hand", -2.0)), "not positive"),
    ("set_payload", lambda: SetPayload.Request(payload=conversions.payload_message(
        "box", "panda_hand", 2.0, inertia=np.diag([0.01, 0.01, 0.03]))), "triangle"),
    ("set_payload", lambda: SetPayload.Request(payload=conversions.payload_message(
        "box", "panda_hand", 2.0, com=[0.0, float("nan"), 0.0])), "com"),
    ("set_payload", lambda: SetPayload.Request(payload=conversions.payload_message(
        "box", "hand", 2.0)), "unknown frame 'hand'"),
    ("set_payload", lambda: SetPayload.Request(payload=Payload(name="ghost"), detach=True),
     "unknown payload"),
]


@pytest.mark.parametrize("service, make_request, message", BAD_REQUESTS,
                         ids=[f"{s}-{m}" for s, _, m in BAD_REQUESTS])
def test_bad_requests_get_success_false_and_a_message(client, services, joint_states, feedforward,
                                                      panda_node, panda, service, make_request,
                                                      message):
    publish_and_wait(joint_states, feedforward, state(panda.joint_names, POSE))
    answer = client.call(services[service], make_request())
    assert not answer.success
    assert message in answer.message
    assert panda_node.alive()


def test_payload_service_changes_every_answer(client, services, joint_states, feedforward, panda):
    payload = conversions.payload_message("box", "panda_hand", 2.0, [0, 0, 0.05], np.eye(3) * 0.01)
    answer = client.call(services["set_payload"], SetPayload.Request(payload=payload))
    assert answer.success and list(answer.payloads) == ["box"]
    loaded = RobotModel.from_urdf(shipped_urdf("panda.urdf"))
    loaded.attach_payload("box", "panda_hand", 2.0, [0, 0, 0.05], np.eye(3) * 0.01)
    effort = publish_and_wait(joint_states, feedforward, state(panda.joint_names, POSE))
    assert_close(effort, loaded.gravity_torques(POSE), "feedforward with payload", 1e-12)
    answer = client.call(services["gravity_torques"], GravityTorques.Request(
        state=state(panda.joint_names, POSE)))
    assert_close(answer.effort, loaded.gravity_torques(POSE), "service with payload", 1e-12)
    answer = client.call(services["set_payload"], SetPayload.Request(payload=Payload(name="box"),
                                                                     detach=True))
    assert answer.success and list(answer.payloads) == []
    effort = publish_and_wait(joint_states, feedforward, state(panda.joint_names, POSE))
    assert_close(effort, panda.gravity_torques(POSE), "payload gone", 1e-12)


def test_attached_payloads_are_bounded_and_a_refusal_changes_nothing(
        client, services, joint_states, feedforward, panda):
    """~/set_payload keeps at most MAX_PAYLOADS attached: one more is refused by name and bound."""
    def attach(name, mass):
        return client.call(services["set_payload"], SetPayload.Request(
            payload=conversions.payload_message(name, "panda_hand", mass)))

    expected = RobotModel.from_urdf(shipped_urdf("panda.urdf"))
    names = [f"part{i}" for i in range(conversions.MAX_PAYLOADS)]
    for name in names:
        assert attach(name, 0.01).success
        expected.attach_payload(name, "panda_hand", 0.01)
    refused = attach("one_too_many", 0.01)
    assert not refused.success
    assert (f"{conversions.MAX_PAYLOADS} payloads attached already, at most "
            f"{conversions.MAX_PAYLOADS}; detach one first") in refused.message, refused.message
    # Replacing an attached payload at the bound is not one more.
    assert attach("part0", 0.02).success
    expected.attach_payload("part0", "panda_hand", 0.02)
    effort = publish_and_wait(joint_states, feedforward, state(panda.joint_names, POSE))
    assert_close(effort, expected.gravity_torques(POSE), "feedforward at the payload bound", 1e-12)
    for name in names:
        assert client.call(services["set_payload"], SetPayload.Request(
            payload=Payload(name=name), detach=True)).success
    effort = publish_and_wait(joint_states, feedforward, state(panda.joint_names, POSE))
    assert_close(effort, panda.gravity_torques(POSE), "every payload detached", 1e-12)


def test_runtime_parameters_order_clamp_and_modes(client, joint_states, feedforward, panda):
    results = set_parameters(client, command_joints=["panda_joint7", "panda_joint2"])
    assert results[0].successful
    effort = publish_and_wait(joint_states, feedforward, state(panda.joint_names, POSE))
    assert_close(effort, panda.gravity_torques(POSE)[[6, 1]], "command_joints order", 1e-12)
    assert not set_parameters(client, command_joints=["panda_joint7", "nope"])[0].successful

    assert set_parameters(client, effort_limit_scale=0.01)[0].successful
    effort = publish_and_wait(joint_states, feedforward, state(panda.joint_names, POSE))
    limits = panda.effort_limits[[6, 1]] * 0.01
    assert np.all(np.abs(effort) <= limits + 1e-12) and np.any(np.abs(effort) == limits)
    assert set_parameters(client, effort_limit_scale=1.0, command_joints=[""])[0].successful

    desired = client.publisher(Float64MultiArray, "/soa_dynamics/desired_acceleration")
    acceleration = np.linspace(-1, 1, 7)
    assert set_parameters(client, feedforward_mode="inverse_dynamics")[0].successful
    velocity = np.linspace(0.5, -0.5, 7)
    measured = state(panda.joint_names, POSE, velocity)
    expected = panda.inverse_dynamics(POSE, velocity, acceleration)
    effort = answer_once_taken(lambda: desired.publish(Float64MultiArray(data=acceleration.tolist())),
                               joint_states, feedforward, measured, expected)
    assert_close(effort, expected, "ID mode", 1e-12)

    assert set_parameters(client, feedforward_mode="computed_torque", computed_torque_kp=100.0,
                          computed_torque_kd=20.0)[0].successful
    point_publisher = client.publisher(JointTrajectoryPoint, "/soa_dynamics/desired_state")
    target = POSE + 0.1
    law = acceleration + 100.0 * (target - POSE) + 20.0 * (0 - velocity)
    expected = np.clip(panda.inverse_dynamics(POSE, velocity, law), -panda.effort_limits,
                       panda.effort_limits)
    effort = answer_once_taken(lambda: point_publisher.publish(JointTrajectoryPoint(
        positions=target.tolist(), accelerations=acceleration.tolist())),
        joint_states, feedforward, measured, expected)
    assert_close(effort, expected, "computed torque", 1e-12)
    assert not set_parameters(client, feedforward_mode="magic")[0].successful
    assert set_parameters(client, feedforward_mode="gravity")[0].successful


def test_inertia_marker_is_published(client, joint_states, feedforward, panda):
    markers = client.collect(Marker, "/soa_dynamics/task_space_inertia_marker")
    pose = panda.frame_pose(POSE, "panda_hand_tcp")

    def marker_of_pose():
        # Publishing until then: the node may still be starting (this test alone) and
        # markers of earlier tests' states may arrive first.
        joint_states.publish(state(panda.joint_names, POSE))
        position = markers[-1][1].pose.position if markers else None
        if position and np.allclose([position.x, position.y, position.z], pose[:3, 3], rtol=0, atol=1e-9):
            return markers[-1][1]
        return None
    marker = wait_for(marker_of_pose, timeout=30.0, what="a marker of the published state")
    assert marker.header.frame_id == "panda_link0"
    assert_close([marker.pose.position.x, marker.pose.position.y, marker.pose.position.z],
                 pose[:3, 3], "marker position", 1e-9)
    radii = np.sort([marker.scale.x, marker.scale.y, marker.scale.z]) / 2
    values = np.linalg.eigvalsh(panda.task_space_inertia(POSE, "panda_hand_tcp", part="translational"))
    assert_close(radii, np.sort(1 / np.sqrt(values)), "ellipsoid radii", 1e-5)
    # Orientation and radii together: the marker's quaternion, read by Pinocchio, turns
    # diag(1 / radius^2) back into the (damped, as the node computes it) inertia.
    orientation = marker.pose.orientation
    pin = require("pinocchio")
    axes = pin.Quaternion(orientation.w, orientation.x, orientation.y, orientation.z).toRotationMatrix()
    ellipsoid = axes @ np.diag(4.0 / np.array([marker.scale.x, marker.scale.y, marker.scale.z]) ** 2) @ axes.T
    assert_close(ellipsoid, panda.task_space_inertia(POSE, "panda_hand_tcp", part="translational",
                                                     damping=1e-6), "ellipsoid orientation", 1e-9)


def test_robot_description_from_topic_reload_and_bad_descriptions(client, tmp_path):
    # A second node, renamed so that it does not answer for the module's panda node.
    node = RosProcess("soa_dynamics_node", "-r", "__node:=soa_dynamics_topic", log_dir=tmp_path,
                      name="topic_node")
    try:
        gravity = client.client(GravityTorques, "/soa_dynamics_topic/gravity_torques")
        answer = client.call(gravity, GravityTorques.Request())
        assert not answer.success and "no robot model loaded" in answer.message
        description = client.latched_publisher(String, "/robot_description")
        description.publish(String(data=open(shipped_urdf("ur5.urdf")).read()))
        ur5 = RobotModel.from_urdf(shipped_urdf("ur5.urdf"))
        request = GravityTorques.Request(state=state(ur5.joint_names, np.full(6, 0.4)))
        answer = wait_for(lambda: (a := client.call(gravity, request)).success and a,
                          what="the model from /robot_description")
        assert_close(answer.effort, ur5.gravity_torques(np.full(6, 0.4)), "UR5 from topic", 1e-12)

        description.publish(String(data="<robot name='broken'><link name='a'></robot>"))
        time.sleep(0.5)
        assert client.call(gravity, request).success  # the last good model stays
        assert "keeping the previous model" in node.log()

        pendulum_xml = open(shipped_urdf("double_pendulum.urdf")).read()
        assert set_parameters(client, "/soa_dynamics_topic", robot_description=pendulum_xml)[0].successful
        pendulum_request = GravityTorques.Request(state=state(["joint1", "joint2"], [0.3, 0.2]))
        answer = wait_for(lambda: (a := client.call(gravity, pendulum_request)).success and a,
                          what="the model from the robot_description parameter")
        assert list(answer.name) == ["joint1", "joint2"]
        # Loaded in the background: accepted, then refused in the log and /diagnostics.
        assert set_parameters(client, "/soa_dynamics_topic",
                              robot_description="<robot name='x'><joint/></robot>")[0].successful
        wait_for(lambda: "joint without a name" in node.log(), what="the refusal in the log")
        assert list(client.call(gravity, GravityTorques.Request(
            state=state(["joint1", "joint2"], [0.3, 0.2]))).name) == ["joint1", "joint2"]
        assert node.alive()
    finally:
        assert node.stop() == 0, node.log()


def test_evaluate_trajectory_answers_can_the_arm_do_this(client, panda_node, joint_states, feedforward,
                                                         panda):
    from builtin_interfaces.msg import Duration
    from trajectory_msgs.msg import JointTrajectory
    from soa_dynamics_ros.srv import EvaluateTrajectory
    evaluate = client.client(EvaluateTrajectory, "/soa_dynamics/evaluate_trajectory")
    publish_and_wait(joint_states, feedforward, state(panda.joint_names, POSE))
    times = np.linspace(0.0, 2.0, 41)
    moving = panda.joint_names[:6]       # joint 7 is left out: held at its synced position
    positions = POSE[:6] + 0.3 * np.sin(np.pi * times)[:, None]
    velocities = 0.3 * np.pi * np.cos(np.pi * times)[:, None] * np.ones(6)
    accelerations = -0.3 * np.pi**2 * np.sin(np.pi * times)[:, None] * np.ones(6)
    trajectory = JointTrajectory(joint_names=moving)
    for t, q, qd, qdd in zip(times, positions, velocities, accelerations):
        trajectory.points.append(JointTrajectoryPoint(
            positions=q.tolist(), velocities=qd.tolist(), accelerations=qdd.tolist(),
            time_from_start=Duration(sec=int(t), nanosec=int(round((t % 1) * 1e9)))))
    answer = client.call(evaluate, EvaluateTrajectory.Request(trajectory=trajectory))
    assert answer.success, answer.message
    assert answer.points == 41 and list(answer.name) == panda.joint_names
    full = lambda part: np.hstack([part, np.full((41, 1), POSE[6] if part is positions else 0.0)])  # noqa: E731
    expected = panda.inverse_dynamics_batch(full(positions), full(velocities), full(accelerations))
    effort = np.reshape(answer.effort, (41, 7))
    assert_close(effort, expected, "torques along the path", 1e-12)
    assert_close(answer.peak_effort, np.abs(expected).max(axis=0), "peaks", 1e-12)
    assert_close(answer.limit_ratio, np.abs(expected).max(axis=0) / panda.effort_limits, "ratios", 1e-12)
    assert answer.within_limits and answer.first_violation_time == -1.0
    assert "'panda_joint7' not in the trajectory" in answer.message

    heavy = conversions.payload_message("anvil", "panda_hand", 40.0)
    answer = client.call(evaluate, EvaluateTrajectory.Request(trajectory=trajectory, payloads=[heavy]))
    assert answer.success and not answer.within_limits and answer.first_violation_time >= 0
    assert max(answer.limit_ratio) > 1 and "exceeds its effort limit" in answer.message
    # The evaluation's payload was temporary: the live model is unchanged.
    effort_now = publish_and_wait(joint_states, feedforward, state(panda.joint_names, POSE))
    assert_close(effort_now, panda.gravity_torques(POSE), "no payload left behind", 1e-12)

    trajectory.points[3].positions = [0.0]
    answer = client.call(evaluate, EvaluateTrajectory.Request(trajectory=trajectory))
    assert not answer.success and "point 3 has 1 positions" in answer.message
    answer = client.call(evaluate, EvaluateTrajectory.Request())
    assert not answer.success and "no points" in answer.message
