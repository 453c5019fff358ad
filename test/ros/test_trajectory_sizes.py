"""conversions.trajectory_from_serialized: ~/trajectory_in sized from its CDR lengths
before rclpy builds it (issue 43, item 9), and otherwise read exactly as rclpy reads it."""
import numpy as np
import pytest
from rclpy.serialization import deserialize_message, serialize_message
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from support.mutations import mutated
from soa_dynamics_ros.errors import InvalidInputError
from soa_dynamics_ros.ros import conversions

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
    assert conversions.trajectory_from_serialized(serialize_message(message), 7, True) == message


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
    monkeypatch.setattr(conversions, "deserialize_message", None)    # (a call would raise)
    with pytest.raises(InvalidInputError, match=reason):
        conversions.trajectory_from_serialized(data, max_joints, compiled)


def test_mutated_trajectories_read_as_rclpy_or_are_refused_where_it_refuses(capfd):
    """Differential, seeded: bytes overwritten, inserted and deleted after the encapsulation.

    Refused where rclpy refuses, or where its C deserializer found a point's sequence
    running past the end, said so on stderr, and gave a message made of what it had
    read so far (a nested message's failure does not fail the whole).
    """
    rng = np.random.default_rng(9)
    original = serialize_message(trajectory(3))
    for _ in range(3000):
        data = mutated(original, rng, cut=False)
        capfd.readouterr()
        try:
            expected = deserialize_message(data, JointTrajectory)
        except Exception:  # noqa: BLE001 - rclpy's RMWError
            expected = None
        partial = "sequence size exceeds remaining buffer" in capfd.readouterr().err
        try:
            read = conversions.trajectory_from_serialized(data, 1000, True)
        except InvalidInputError as refusal:
            assert expected is None or partial, str(refusal)
        else:
            assert read == expected
