"""~/trajectory_in -> ~/trajectory_out: trajectory efforts over Fast DDS, against Pinocchio."""
import math
import time

import numpy as np
import pytest
from builtin_interfaces.msg import Duration
from diagnostic_msgs.msg import DiagnosticArray
from rcl_interfaces.msg import Parameter as ParameterMsg, ParameterType, ParameterValue
from rcl_interfaces.srv import SetParameters
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from support.numerics import assert_close
from support.robots import shipped_urdf
from support.ros_harness import RosClient, RosProcess
from support.waiting import wait_for
from soa_dynamics_ros.ros import conversions
from soa_dynamics_ros.ros.conversions import MAX_TRAJECTORY_POINTS
from soa_dynamics_ros.srv import SetPayload

POSE = np.array([0.1, -0.6, 0.2, -2.2, 0.1, 1.7, 0.6])
GRAVITY = [0.3, -0.2, -9.7]
JOINTS = [f"panda_joint{i}" for i in range(1, 8)]
ORDER = [3, 0, 5, 1, 4, 2]          # the trajectory's joints; panda_joint7 is held
TOOL = dict(link="panda_link7", mass=2.5, com=[0.02, -0.01, 0.12],
            inertia=[[0.020, 0.001, -0.002], [0.001, 0.030, 0.003], [-0.002, 0.003, 0.015]])


@pytest.fixture(scope="module")
def client():
    ros = RosClient("trajectory_test_client")
    yield ros
    ros.close()


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    process = RosProcess("soa_dynamics_node", "--params-file", "config/panda.yaml", "-p",
                         f"gravity:={GRAVITY}", log_dir=tmp_path_factory.mktemp("trajectory"),
                         name="trajectory_node")
    yield process
    code = process.stop()
    assert code == 0, f"node did not exit cleanly ({code}):\n{process.log()}"


@pytest.fixture(scope="module")
def xml():
    with open(shipped_urdf("panda.urdf")) as handle:
        return handle.read()


@pytest.fixture(scope="module")
def synced(client, node):
    """The node has the arm's state (joint 7 included) and answers it: the model is live."""
    joint_states = client.node.create_publisher(JointState, "/joint_states", 10)
    feedforward = client.collect(JointState, "/soa_dynamics/feedforward_state")

    def answered():
        joint_states.publish(JointState(name=JOINTS, position=POSE.tolist()))
        return feedforward
    wait_for(answered, timeout=60.0, interval=0.05, what="the node's first feedforward")
    return joint_states


@pytest.fixture(scope="module")
def topics(client, node, synced):
    """Both directions matched before a test publishes once: our side's match count says
    nothing of the node's, so one trajectory is answered (republished until it is) and
    one /diagnostics report arrives (that reader, made last, is announced last)."""
    outputs = client.collect(JointTrajectory, "/soa_dynamics/trajectory_out")
    diagnostics = client.collect(DiagnosticArray, "/diagnostics")
    publisher = client.publisher(JointTrajectory, "/soa_dynamics/trajectory_in")
    times, q, _, _ = path()
    answer(client, publisher, outputs, trajectory("matched", times, q))
    wait_for(lambda: diagnostics, timeout=30.0, what="a first /diagnostics report")
    return publisher, outputs, diagnostics


def trajectory(label, times, q, qd=None, qdd=None, names=None):
    message = JointTrajectory(joint_names=names or [JOINTS[i] for i in ORDER])
    message.header.frame_id = label
    for k, t in enumerate(times):
        seconds = math.floor(t)
        message.points.append(JointTrajectoryPoint(
            positions=list(map(float, q[k])),
            velocities=[] if qd is None else list(map(float, qd[k])),
            accelerations=[] if qdd is None else list(map(float, qdd[k])),
            time_from_start=Duration(sec=seconds, nanosec=int(round((t - seconds) * 1e9)))))
    return message


def path(count=20):
    times = np.linspace(0.0, 1.9, count)
    amplitude, omega = np.array([0.4, 0.3, -0.5, 0.25, 0.6, -0.35]), 2.0
    q = POSE[ORDER] + amplitude * np.sin(omega * times)[:, None]
    qd = amplitude * omega * np.cos(omega * times)[:, None]
    qdd = -amplitude * omega**2 * np.sin(omega * times)[:, None]
    return times, q, qd, qdd


def exact(ref, q, qd, qdd, robot_gravity=None):
    """Pinocchio rnea per point (joint 7 held at its synced position), columns in ORDER."""
    rows = []
    for rates in zip(q, qd, qdd):
        full = [np.zeros(7), np.zeros(7), np.zeros(7)]
        full[0][6] = POSE[6]
        for target, row in zip(full, rates):
            target[ORDER] = row
        tau = ref.inverse_dynamics(*full)
        if robot_gravity is not None:
            tau -= robot_gravity.inverse_dynamics(full[0], np.zeros(7), np.zeros(7))
        rows.append(tau[ORDER])
    return np.array(rows)


def answer(client, publisher, outputs, message, timeout=20.0, resend=2.0):
    """The first ~/trajectory_out labelled as ``message``, which is sent again every
    ``resend`` s until one arrives (a message sent before discovery ends is lost)."""
    label = message.header.frame_id
    sent = [-math.inf]

    def answered():
        if time.monotonic() - sent[0] >= resend:
            publisher.publish(message)
            sent[0] = time.monotonic()
        return [m for _, m in list(outputs) if m.header.frame_id == label]
    return wait_for(answered, timeout, what=f"~/trajectory_out for {label!r}")[0]


def set_parameter(client, name, value):
    setter = client.client(SetParameters, "/soa_dynamics/set_parameters")
    parameter = ParameterMsg(name=name, value=ParameterValue(type=ParameterType.PARAMETER_BOOL,
                                                             bool_value=value))
    result = client.call(setter, SetParameters.Request(parameters=[parameter])).results[0]
    assert result.successful, result.reason


def attach_tool(client):
    service = client.client(SetPayload, "/soa_dynamics/set_payload")
    payload = conversions.payload_message("tool", **TOOL)
    reply = client.call(service, SetPayload.Request(payload=payload))
    assert reply.success, reply.message


def test_efforts_are_inverse_dynamics_with_payload_and_gravity(client, topics, xml):
    from oracles.pinocchio_reference import PinocchioReference   # skips without Pinocchio (support.optional)
    publisher, outputs, _ = topics
    attach_tool(client)
    reference = PinocchioReference(xml, JOINTS, gravity=GRAVITY)
    reference.attach(TOOL["link"], TOOL["mass"], np.array(TOOL["com"]), np.array(TOOL["inertia"]))
    times, q, qd, qdd = path()
    sent = trajectory("rates", times, q, qd, qdd)
    out = answer(client, publisher, outputs, sent)
    assert list(out.joint_names) == list(sent.joint_names)
    assert len(out.points) == len(sent.points)
    for before, after in zip(sent.points, out.points):     # only the efforts are new
        assert list(after.positions) == list(before.positions)
        assert list(after.velocities) == list(before.velocities)
        assert after.time_from_start == before.time_from_start
    efforts = np.array([point.effort for point in out.points])
    assert_close(efforts, exact(reference, q, qd, qdd), "efforts vs pin.rnea", 1e-6)

    # A robot that compensates its own gravity: the payload's gravity stays.
    set_parameter(client, "robot_compensates_gravity", True)
    try:
        out = answer(client, publisher, outputs, trajectory("compensated", times, q, qd, qdd))
        bare = PinocchioReference(xml, JOINTS, gravity=GRAVITY)
        efforts = np.array([point.effort for point in out.points])
        assert_close(efforts, exact(reference, q, qd, qdd, robot_gravity=bare),
                     "efforts - robot gravity", 1e-6)
    finally:
        set_parameter(client, "robot_compensates_gravity", False)


def refusals():
    times, q, qd, qdd = path(6)
    bad = {}
    bad["unknown"] = trajectory("bad-unknown", times, q, names=[JOINTS[i] for i in ORDER[:5]] + ["elbow"])
    ragged = trajectory("bad-ragged", times, q)
    ragged.points[2].positions = ragged.points[2].positions[:5]
    bad["ragged"] = ragged
    partial = trajectory("bad-partial-velocities", times, q, qd)
    partial.points[4].velocities = []
    bad["partial-velocities"] = partial
    backwards = trajectory("bad-time", times, q)
    backwards.points[3].time_from_start = backwards.points[2].time_from_start
    bad["time"] = backwards
    nan = trajectory("bad-nan", times, q)
    nan.points[1].positions[0] = float("nan")
    bad["nan"] = nan
    bad["empty"] = trajectory("bad-empty", [], [])
    many = np.linspace(0.0, 10.0, MAX_TRAJECTORY_POINTS + 1)
    bad["too-many"] = trajectory("bad-too-many", many, np.tile(POSE[ORDER], (len(many), 1)))
    return bad


REASONS = {"unknown": "unknown joint column 'elbow'", "ragged": "point 2 has 5 positions",
           "partial-velocities": "point 4 has 0 velocities", "time": "time must increase strictly",
           "nan": "NaN or inf", "empty": "no points",
           "too-many": f"{MAX_TRAJECTORY_POINTS + 1} given, at most"}


def test_malformed_trajectories_are_refused_counted_and_not_published(client, topics, node):
    publisher, outputs, diagnostics = topics
    bad = refusals()
    for message in bad.values():
        publisher.publish(message)
    # One publisher, reliable: once a later good trajectory is answered, every bad one was handled.
    times, q, _, _ = path()
    answer(client, publisher, outputs, trajectory("after-refusals", times, q))
    assert not [m for _, m in list(outputs) if m.header.frame_id.startswith("bad-")]
    for kind, reason in REASONS.items():
        wait_for(lambda: "~/trajectory_in refused: " in node.log() and reason in node.log(),
                 what=f"the {kind} refusal in the log")

    def counted():
        return sum(int(value.value) for _, array in list(diagnostics) for status in array.status
                   if "soa_dynamics" in status.name for value in status.values
                   if value.key == "rejected_trajectories")
    wait_for(lambda: counted() >= len(bad), timeout=10.0,
             what=f"{len(bad)} rejected trajectories in /diagnostics")
    assert node.alive()


def test_positions_only_are_differentiated(client, topics, xml):
    from oracles.pinocchio_reference import PinocchioReference   # skips without Pinocchio (support.optional)
    publisher, outputs, _ = topics
    reference = PinocchioReference(xml, JOINTS, gravity=GRAVITY)
    reference.attach(TOOL["link"], TOOL["mass"], np.array(TOOL["com"]), np.array(TOOL["inertia"]))
    times, q, qd, qdd = path()
    out = answer(client, publisher, outputs, trajectory("positions-only", times, q))
    assert all(len(point.velocities) == 0 for point in out.points)
    efforts = np.array([point.effort for point in out.points])
    expected = exact(reference, q, qd, qdd)
    # 20 points over 1.9 s of a 2 rad/s sine: a coarse sampling, a few percent off.
    assert np.abs(efforts - expected).max() / np.abs(expected).max() < 0.05
