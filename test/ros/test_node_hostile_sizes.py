"""Hostile sizes on the node's inputs, over real Fast DDS (issue 43, items 9-10): refused
from their lengths, with short text, and the feedforward goes on."""
import struct
import time

import pytest
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import Point, Pose
from rclpy.serialization import deserialize_message, serialize_message
from sensor_msgs.msg import JointState

from support.ros_harness import RosClient, RosProcess, joint_state, publish_and_wait
from support.waiting import wait_for
from soa_dynamics_ros.ros import cdr, conversions, services, throttled_log
from soa_dynamics_ros.errors import InvalidInputError
from soa_dynamics_ros.srv import GravityTorques, TaskSpaceInertia

POSE = [0.1, -0.6, 0.2, -2.2, 0.1, 1.7, 0.6]
NAMES = [f"panda_joint{i}" for i in range(1, 8)]
HUGE = "x" * 4_000_000


def statuses_saying(statuses, words):
    return [s for _, a in list(statuses) for s in a.status if words in s.message]


def test_hostile_joint_states_are_refused_unread_with_short_text(tmp_path):
    """A 4 MB name, a message cut inside a name list that claims 10^9 names, 263 long
    unknown names: refused (the first two) from their lengths without rclpy's
    deserializer, which prints for each message it refuses; every /diagnostics text,
    reply and log line stays short; the next valid state gets its feedforward."""
    node = RosProcess("soa_dynamics_node", "-r", "__node:=hostile",
                      "-p", "urdf_file:=urdf/panda.urdf", "-p", "kernels:='off'",
                      "-p", "state_timeout:=2.0", "-p", "joint_states_reliability:=reliable",
                      log_dir=tmp_path, name="hostile")
    client = RosClient("hostile_sizes_test")
    try:
        statuses = client.collect(DiagnosticArray, "/diagnostics")
        feedforward = client.collect(JointState, "/hostile/feedforward_state")
        states = client.publisher(JointState, "/joint_states")
        client.wait_until_node_matched()
        wait_for(lambda: states.publish(joint_state(NAMES, POSE)) or feedforward, timeout=60,
                 what="a first feedforward")

        huge = serialize_message(JointState(name=[HUGE, *NAMES], position=[0.0] * 8))
        wait_for(lambda: states.publish(huge) or statuses_saying(statuses, "bytes are more than"),
                 timeout=30, interval=0.2, what="the 4 MB joint state refused")
        publish_and_wait(states, feedforward, joint_state(NAMES, POSE))

        data = serialize_message(JointState(name=NAMES, position=POSE))
        count = data.index(b"\x07\x00\x00\x00", 16)
        claims_too_many = data[:count] + b"\x00\xca\x9a\x3b" + data[count + 4:count + 40]
        wait_for(lambda: states.publish(claims_too_many)
                 or statuses_saying(statuses, "1000000000 names are too many"),
                 timeout=30, interval=0.2, what="the cut joint state refused")

        unknown = [f"{i}_" + "u" * 250 for i in range(cdr.MAX_OTHER_JOINT_STATE_NAMES)]
        many = joint_state(NAMES + unknown, POSE + [0.0] * len(unknown))
        wait_for(lambda: states.publish(many) or "names unknown to the model" in node.log(),
                 timeout=30, interval=0.2, what="the unknown names warned about")
        publish_and_wait(states, feedforward, joint_state(NAMES, POSE))

        inertia = client.client(TaskSpaceInertia, "/hostile/task_space_inertia")
        reply = client.call(inertia, TaskSpaceInertia.Request(frame=HUGE), timeout=30)
        assert not reply.success and "unknown frame" in reply.message
        assert len(reply.message) <= services.MAX_REPLY_TEXT + 50

        time.sleep(1.5)          # a diagnostics period after the last rejection
        for _, array in list(statuses):
            for status in array.status:
                assert len(status.message) <= conversions.MAX_DIAGNOSTIC_MESSAGE + 50
                assert all(len(v.value) <= conversions.MAX_DIAGNOSTIC_VALUE + 50
                           for v in status.values)
        log = node.log()
        assert "sequence size exceeds" not in log and "Traceback" not in log, log[-3000:]
        assert max(map(len, log.splitlines())) <= throttled_log.MAX_LOG_TEXT + 200
        assert node.alive()
    finally:
        client.close()
        assert node.stop() == 0, node.log()[-3000:]


def test_a_request_base_past_its_bound_is_refused():
    """base_pose is a sequence of at most one, but rclpy builds a request whose CDR holds
    two (a client other than rclpy can send it): the handler refuses it by its length."""
    marker = struct.pack("<d", 1234.5)
    one = serialize_message(GravityTorques.Request(base_pose=[Pose(position=Point(x=1234.5))]))
    start = one.index(marker)
    count = one.rindex(struct.pack("<I", 1), 0, start)
    pose = one[start:start + 56]          # 7 doubles
    two = one[:count] + struct.pack("<I", 2) + one[count + 4:start] + pose + pose + one[start + 56:]
    request = deserialize_message(two, GravityTorques.Request)
    assert len(request.base_pose) == 2
    with pytest.raises(InvalidInputError, match="base_pose: 2 given, at most 1"):
        conversions.request_base(request)
