"""feedforward_ramp_time over Fast DDS: the effort ramps in linearly at start, after a stop
and after a setting change, never stepping; the law it reaches is Pinocchio's gravity.

The node's ramp runs on its own clock from when it takes each state; the
states carry the test's publication time in their stamps, which the answers
echo: the two clocks differ by the transport delay, which the tolerance on
the ramp's shape (RAMP_SLACK of the ramp) covers.
"""
import time

import numpy as np
import pytest
from rcl_interfaces.msg import Parameter as ParameterMsg
from rcl_interfaces.srv import SetParameters
from sensor_msgs.msg import JointState

from oracles.pinocchio_reference import PinocchioReference
from support.numerics import assert_close
from support.robots import shipped_urdf
from support.ros_harness import RosClient, RosProcess
from soa_dynamics_ros.ros.stamps import stamp_seconds, time_from_seconds
from soa_dynamics_ros.sim.clients import parameter_value

RAMP = 2.0                    # [s]
# A state_timeout long enough that no state of a loaded machine is dropped as
# stale mid-ramp (a drop restarts the ramp, by design).
STATE_TIMEOUT = 1.0
RAMP_SLACK = 0.06             # of the ramp: 120 ms of transport delay variation
JOINTS = [f"panda_joint{i}" for i in range(1, 8)]
POSE_A = np.array([0.1, -0.6, 0.2, -2.2, 0.1, 1.7, 0.6])
POSE_B = np.array([-0.3, 0.4, -0.2, -1.6, 0.3, 2.0, -0.4])


@pytest.fixture(scope="module")
def client():
    ros = RosClient("ramp_test_client")
    yield ros
    ros.close()


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    process = RosProcess("soa_dynamics_node", "--params-file", "config/panda.yaml",
                         "-p", f"feedforward_ramp_time:={RAMP}", "-p",
                         f"state_timeout:={STATE_TIMEOUT}", "-p", "marker_rate:=0.0",
                         log_dir=tmp_path_factory.mktemp("ramp"), name="ramp")
    yield process
    code = process.stop()
    assert code == 0, f"node did not exit cleanly ({code}):\n{process.log()}"


@pytest.fixture(scope="module")
def gravity():
    with open(shipped_urdf("panda.urdf")) as handle:
        reference = PinocchioReference(handle.read(), JOINTS)
    return lambda q: reference.inverse_dynamics(q, np.zeros(7), np.zeros(7))


def stream(client, answers, pose, duration):
    """Publish ``pose`` every 10 ms for ``duration`` s after its first answer; its answers, in order.

    Each answer is (stamp of the state it answers [s], effort).
    """
    publisher = client.node.create_publisher(JointState, "/joint_states", 10)
    sent, first_answer = set(), None
    deadline = time.monotonic() + 60.0
    while time.monotonic() < deadline:
        now = time.time()
        message = JointState(name=JOINTS, position=pose.tolist())
        message.header.stamp = time_from_seconds(now)
        sent.add((message.header.stamp.sec, message.header.stamp.nanosec))
        publisher.publish(message)
        time.sleep(0.01)
        ours = [m for _, m in list(answers) if (m.header.stamp.sec, m.header.stamp.nanosec) in sent]
        if ours and first_answer is None:
            first_answer = time.monotonic()
        if first_answer is not None and time.monotonic() - first_answer > duration:
            client.node.destroy_publisher(publisher)
            return [(stamp_seconds(m.header.stamp), np.array(m.effort)) for m in ours]
    raise TimeoutError("no feedforward for the published states")


def check_ramp(answers, origin, target, what):
    """Every answer is origin + s (target - origin) with s linear in time from 0 to 1 over RAMP."""
    change = target - origin
    direction = change / np.linalg.norm(change)
    start = answers[0][0]
    progress = []
    for stamp, effort in answers:
        s = float(direction @ (effort - origin)) / np.linalg.norm(change)
        # On the segment from origin to target: a blend, not some other torque.
        assert_close(effort, origin + s * change, f"{what}: on the blend", 1e-9)
        expected = min((stamp - start) / RAMP, 1.0)
        assert abs(s - expected) <= RAMP_SLACK, (what, stamp - start, s, expected)
        progress.append(s)
    assert progress[0] <= RAMP_SLACK, f"{what}: starts at {progress[0]} of the step"
    assert np.all(np.diff(progress) >= -1e-12), f"{what}: not monotonic"
    settled = [effort for stamp, effort in answers if stamp - start > RAMP + 0.5]
    assert settled, f"{what}: no answer after the ramp"
    for effort in settled:
        assert_close(effort, target, f"{what}: the law after the ramp", 1e-9)


def set_flag(client, name, value):
    setter = client.client(SetParameters, "/soa_dynamics/set_parameters")
    parameter = ParameterMsg(name=name, value=parameter_value(value))
    result = client.call(setter, SetParameters.Request(parameters=[parameter])).results[0]
    assert result.successful, result.reason


def test_feedforward_ramps_in_at_start_after_a_stop_and_after_a_change(client, node, gravity):
    # Matched at the node before the first state: the ramp starts at the node's first
    # state, and answers it sends before it has matched this reader are lost to it.
    answers = client.collect(JointState, "/soa_dynamics/feedforward_state", 1000)
    client.wait_until_node_matched()
    # Start: from zero to the gravity torques.
    started = stream(client, answers, POSE_A, RAMP + 1.0)
    check_ramp(started, np.zeros(7), gravity(POSE_A), "start")

    # Joint states stop for longer than state_timeout; the controller keeps the
    # last effort, and the feedforward resumes from it: no step to the new pose's.
    time.sleep(STATE_TIMEOUT + 0.5)
    resumed = stream(client, answers, POSE_B, RAMP + 1.0)
    check_ramp(resumed, gravity(POSE_A), gravity(POSE_B), "resume")

    # A setting change (the robot compensates its own gravity; no payload): from
    # the gravity torques down to zero, ramped as well.
    set_flag(client, "robot_compensates_gravity", True)
    changed = stream(client, answers, POSE_B, RAMP + 1.0)
    check_ramp(changed, gravity(POSE_B), np.zeros(7), "change")
    assert node.alive()
