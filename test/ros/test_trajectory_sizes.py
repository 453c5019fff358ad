"""~/trajectory_in, ~/desired_state and ~/desired_acceleration sized from their CDR
lengths before rclpy builds them (issue 43, item 9), and otherwise read exactly as rclpy
reads them."""
import numpy as np
import pytest
from rclpy.serialization import deserialize_message, serialize_message
from std_msgs.msg import Float64MultiArray, MultiArrayDimension, MultiArrayLayout
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from support.mutations import mutated
from soa_dynamics_ros.errors import InvalidInputError
from soa_dynamics_ros.ros import cdr, conversions

NAMES = [f"panda_joint{i}" for i in range(1, 8)]


def trajectory(points, names=NAMES, rates=True):
    message = JointTrajectory(joint_names=list(names))
    message.header.frame_id = "base"
    for i in range(points):
        point = JointTrajectoryPoint(positions=[0.1 * i] * len(names))
        if rates:
            point.velocities = [0.2] * len(names)
        point.time_from_start.sec, point.time_from_start.nanosec = i, 5
        message.points.append(point)
    return message


@pytest.mark.parametrize("message", [trajectory(0), trajectory(3), trajectory(5, rates=False),
                                     trajectory(2, names=["a", "bb", "é"])])
def test_a_trajectory_reads_as_rclpy_deserializes_it(message):
    assert cdr.trajectory_from_serialized(serialize_message(message), 7, True) == message


@pytest.mark.parametrize("message, max_joints, compiled, reason", [
    (trajectory(100_000, names=["j"], rates=False), 7, True,
     "trajectory points: 100000 given, at most 1000"),
    (trajectory(conversions.MAX_TRAJECTORY_POINTS_NUMPY_PATH + 1), 7, False,
     "numpy path: compiled kernels not in use.: 21 given"),
    (trajectory(1, names=[f"j{i}" for i in range(8)]), 7, True, "8 joint names are too many"),
    (trajectory(1, names=["n" * 300]), 7, True, "a joint name of 300 bytes is too long"),
])
def test_too_many_points_or_names_are_refused_unread(monkeypatch, message, max_joints, compiled,
                                                     reason):
    data = serialize_message(message)
    monkeypatch.setattr(cdr, "deserialize_message", None)    # (a call would raise)
    with pytest.raises(InvalidInputError, match=reason):
        cdr.trajectory_from_serialized(data, max_joints, compiled)


def dimensions(count):
    return [MultiArrayDimension(label="joints", size=7, stride=7)] * count


DESIRED = [
    (cdr.desired_acceleration_from_serialized, Float64MultiArray(
        layout=MultiArrayLayout(dim=dimensions(1)), data=[0.5] * 7)),
    (cdr.desired_point_from_serialized, JointTrajectoryPoint(
        positions=[0.1] * 7, velocities=[0.2] * 7)),
]


@pytest.mark.parametrize("read, message", DESIRED)
def test_a_desired_value_reads_as_rclpy_deserializes_it(read, message):
    assert read(serialize_message(message), 7) == message


@pytest.mark.parametrize("read, message, reason", [
    (cdr.desired_acceleration_from_serialized,
     Float64MultiArray(layout=MultiArrayLayout(dim=dimensions(100_000))),
     "100000 layout dimensions are too many"),
    (cdr.desired_acceleration_from_serialized, Float64MultiArray(data=[0.5] * 8),
     "8 values in an array are too many"),
    (cdr.desired_point_from_serialized, JointTrajectoryPoint(accelerations=[0.5] * 8),
     "8 values in an array are too many"),
])
def test_oversized_desired_values_are_refused_unread(monkeypatch, read, message, reason):
    data = serialize_message(message)
    monkeypatch.setattr(cdr, "deserialize_message", None)    # (a call would raise)
    with pytest.raises(InvalidInputError, match=reason):
        read(data, 7)


def assert_reads_as_rclpy(read, data, message_type, capfd):
    """``read(data)`` is what rclpy deserializes, or refuses where rclpy refuses or where its C
    deserializer found a sequence of messages running past the end, said so on stderr, and
    gave a message made of what it had read so far (a nested sequence's failure does not
    fail the whole)."""
    capfd.readouterr()
    try:
        expected = deserialize_message(data, message_type)
    except Exception:  # noqa: BLE001 - rclpy's RMWError
        expected = None
    partial = "sequence size exceeds remaining buffer" in capfd.readouterr().err
    try:
        result = read(data)
    except InvalidInputError as refusal:
        assert expected is None or partial, str(refusal)
    else:
        assert result == expected


@pytest.mark.parametrize("read, message", DESIRED)
def test_mutated_desired_values_read_as_rclpy_or_are_refused_where_it_refuses(read, message,
                                                                              capfd):
    """Differential, seeded: bytes overwritten, inserted, deleted and cut after the
    encapsulation."""
    rng = np.random.default_rng(11)
    original = serialize_message(message)
    for _ in range(1000):
        assert_reads_as_rclpy(lambda data: read(data, 1000), mutated(original, rng),
                              type(message), capfd)


def test_mutated_trajectories_read_as_rclpy_or_are_refused_where_it_refuses(capfd):
    """Differential, seeded: bytes overwritten, inserted and deleted after the encapsulation."""
    rng = np.random.default_rng(9)
    original = serialize_message(trajectory(3))
    for _ in range(3000):
        assert_reads_as_rclpy(
            lambda data: cdr.trajectory_from_serialized(data, 1000, True),
            mutated(original, rng, cut=False), JointTrajectory, capfd)
