"""conversions.JointStateReader: serialized JointStates read as rclpy deserializes them."""
import itertools
import math

import numpy as np
import pytest
from builtin_interfaces.msg import Time
from rclpy.serialization import deserialize_message, serialize_message
from sensor_msgs.msg import JointState

from soa_dynamics_ros.errors import InvalidInputError
from soa_dynamics_ros.ros import conversions
from soa_dynamics_ros.ros.conversions import JointStateReader


def joint_state(names, arrays, frame_id="", stamp=(1795665238, 999_999_999)):
    message = JointState(name=list(names), position=arrays[0], velocity=arrays[1],
                         effort=arrays[2])
    message.header.frame_id = frame_id
    message.header.stamp = Time(sec=stamp[0], nanosec=stamp[1])
    return message


def assert_reads_as(state, message):
    assert state.names == tuple(message.name)
    assert state.stamp == message.header.stamp
    for values, field in zip(state[1:4], (message.position, message.velocity, message.effort)):
        np.testing.assert_array_equal(values, np.asarray(field, dtype=float))


def read_from_bytes(state):
    """Whether the reader read these arrays in place (views of the message's bytes)
    rather than through deserialize_message."""
    return all(not values.flags.writeable for values in state[1:4])


# Name and frame_id lengths that move every field across every alignment; every
# combination of empty and filled arrays (CDR pads an empty sequence differently).
NAME_LISTS = [["j"], ["a", "bb", "ccc", "dddd"], [f"panda_joint{i}" for i in range(1, 8)],
              [f"{'x' * i}_{i}" for i in range(13)], ["é", "名前"], []]


@pytest.mark.parametrize("names", NAME_LISTS)
@pytest.mark.parametrize("frame_id", ["", "b", "base", "world_frame"])
def test_every_shape_reads_as_rclpy_deserializes_it(names, frame_id):
    rng = np.random.default_rng(len(names) + len(frame_id))
    for filled in itertools.product((True, False), repeat=3):
        reader = JointStateReader()
        for stamp in [(1795665238, 999_999_999), (0, 0), (-5, 7)]:
            arrays = [rng.normal(size=len(names)).tolist() if full else [] for full in filled]
            if names and filled[0]:
                arrays[0][0] = math.nan
            message = joint_state(names, arrays, frame_id, stamp)
            state = reader.read(serialize_message(message))
            assert_reads_as(state, message)
        # The first of a shape is deserialized and compared; the rest are read.
        assert read_from_bytes(state)


def test_names_are_read_when_the_padding_after_them_differs():
    """CDR leaves the padding after a string unset: other bytes there are the same names."""
    names = ["ab", "cde"]          # "ab" + NUL is 3 bytes, one byte of padding after it
    message = joint_state(names, [[1.0, 2.0], [3.0, 4.0], []])
    data = serialize_message(message)
    padding = data.index(b"ab\x00") + 3
    reader = JointStateReader()
    reader.read(data)               # (a new shape: compared with deserialize_message)
    first = reader.read(data)
    for byte in (0x00, 0x7F, 0xFF):
        state = reader.read(data[:padding] + bytes([byte]) + data[padding + 1:])
        assert_reads_as(state, message)
        assert read_from_bytes(state)
        assert state.names is first.names       # compared name by name, not decoded again
    other = joint_state(["ab", "cdf"], [[1.0, 2.0], [3.0, 4.0], []])
    assert reader.read(serialize_message(other)).names == ("ab", "cdf")


def test_a_shape_read_otherwise_than_rclpy_deserializes_it_is_deserialized(monkeypatch):
    """The guard for a middleware that pads otherwise: a reading that disagrees once is
    never used for that shape."""
    read_doubles = conversions._read_doubles
    monkeypatch.setattr(conversions, "_read_doubles",
                        lambda data, offset: (lambda values, end: (values + 1.0, end))(
                            *read_doubles(data, offset)))
    message = joint_state(["a", "b"], [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    reader = JointStateReader()
    for _ in range(3):
        state = reader.read(serialize_message(message))
        assert_reads_as(state, message)
        assert not read_from_bytes(state)


def test_bytes_that_are_no_joint_state_are_refused_by_name():
    """Every truncation of a message, garbage, a huge count, big-endian CDR: a refusal
    naming the problem, or exactly what deserialize_message reads."""
    message = joint_state([f"panda_joint{i}" for i in range(1, 8)],
                          [[0.5] * 7, [0.25] * 7, [1.0] * 7], "base")
    data = serialize_message(message)
    reader = JointStateReader()
    assert_reads_as(reader.read(data), message)
    huge_count = bytearray(data)
    huge_count[data.index(b"\x07\x00\x00\x00"):][:4] = b"\xff\xff\xff\x7f"
    rng = np.random.default_rng(3)
    hostile = [data[:length] for length in range(len(data))] + [
        b"", b"\x00\x01", bytes(huge_count), b"\x00\x00" + data[2:],
        *(rng.bytes(n) for n in (4, 40, 400)), *(b"\x00\x01\x00\x00" + rng.bytes(200)
                                                  for _ in range(20))]
    for candidate in hostile:
        try:
            expected = deserialize_message(candidate, JointState)
        except Exception:  # noqa: BLE001 - rclpy's RMWError: the reader must refuse it too
            expected = None
        if expected is None:
            with pytest.raises(InvalidInputError, match="no JointState serialization"):
                reader.read(candidate)
        else:
            assert_reads_as(reader.read(candidate), expected)
    assert_reads_as(reader.read(data), message)      # and it still reads the real thing
