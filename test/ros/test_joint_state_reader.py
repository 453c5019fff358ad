"""cdr.JointStateReader: serialized JointStates read as rclpy deserializes them."""
import itertools
import math
import struct

import numpy as np
import pytest
from builtin_interfaces.msg import Time
from rclpy.serialization import deserialize_message, serialize_message
from sensor_msgs.msg import JointState

from support.mutations import mutated
from soa_dynamics_ros.errors import InvalidInputError
from soa_dynamics_ros.ros import cdr, conversions
from soa_dynamics_ros.ros.cdr import JointStateReader


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
    read_doubles = cdr.read_doubles
    monkeypatch.setattr(cdr, "read_doubles",
                        lambda *arguments: (lambda values, end: (values + 1.0, end))(
                            *read_doubles(*arguments)))
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


PANDA_STATE = joint_state([f"panda_joint{i}" for i in range(1, 8)],
                          [[0.5] * 7, [0.25] * 7, [1.0] * 7], "base", stamp=(5, 6))


def rclpy_reading(data):
    """deserialize_message's JointState of ``data``, or None where it refuses them."""
    try:
        return deserialize_message(data, JointState)
    except Exception:  # noqa: BLE001 - rclpy's RMWError
        return None


@pytest.fixture
def failed_deserializations(monkeypatch):
    """The bytes the reader gave deserialize_message and it refused: rclpy's C
    deserializer prints to stderr for each such message."""
    failed, deserialize = [], cdr.deserialize_message

    def counting(data, message_type):
        try:
            return deserialize(data, message_type)
        except Exception:
            failed.append(data)
            raise
    monkeypatch.setattr(cdr, "deserialize_message", counting)
    return failed


def assert_reads_as_rclpy(reader, data):
    """The reader gives what deserialize_message gives, or refuses exactly where it refuses."""
    expected = rclpy_reading(data)
    if expected is None:
        with pytest.raises(InvalidInputError, match="no JointState serialization"):
            reader.read(data)
    else:
        assert_reads_as(reader.read(data), expected)


def test_a_name_whose_nul_is_replaced_reads_as_rclpy_deserializes_it():
    """After the layout is cached, 'panda_joint1' + NUL turned into 'panda_joint1X' is that
    joint, unknown to the model, not panda_joint1."""
    data = serialize_message(PANDA_STATE)
    reader = JointStateReader()
    reader.read(data)
    reader.read(data)
    nul = data.index(b"panda_joint1\x00") + len("panda_joint1")
    mutated = data[:nul] + b"X" + data[nul + 1:]
    assert reader.read(mutated).names[0] == "panda_joint1X"
    assert rclpy_reading(mutated).name[0] == "panda_joint1X"
    assert reader.read(data).names[0] == "panda_joint1"


def test_every_byte_of_a_cached_name_block_mutated_reads_as_rclpy(failed_deserializations):
    """Differential: every value of every byte of the name block (count, lengths, text,
    NULs, padding) of a layout the reader has cached; the reader's result must not depend
    on what it read before, and rclpy's deserializer is never given bytes it refuses."""
    data = serialize_message(PANDA_STATE)
    start = data.index(b"\x07\x00\x00\x00", 16)
    end = data.index(b"panda_joint7\x00") + len("panda_joint7\x00")
    reader = JointStateReader()
    for at in range(start, end):
        for value in range(256):
            reader.read(data)                # the driver's layout, cached
            mutated = bytearray(data)
            mutated[at] = value
            assert_reads_as_rclpy(reader, bytes(mutated))
    assert failed_deserializations == []


def test_every_encapsulation_reads_as_rclpy(failed_deserializations):
    """Every value of each of the 4 bytes before the message (kind, byte order, options)."""
    data = serialize_message(PANDA_STATE)
    reader = JointStateReader()
    for at in range(4):
        for value in range(256):
            mutated = bytearray(data)
            mutated[at] = value
            assert_reads_as_rclpy(reader, bytes(mutated))
    assert failed_deserializations == []


def test_randomly_mutated_messages_read_as_rclpy(failed_deserializations):
    """Differential, seeded: bytes overwritten, inserted, deleted and messages cut, across
    the whole message after its encapsulation (stamp, frame_id, names, arrays).

    (Not cut into its encapsulation: rclpy's deserializer reads past the end of bytes
    shorter than the padding their options announce, and gives what it found there.)
    """
    rng = np.random.default_rng(43)
    originals = [serialize_message(PANDA_STATE), serialize_message(
        joint_state(["é", "名前", "a"], [[1.0, 2.0, 3.0], [], [4.0, 5.0, 6.0]], "b"))]
    reader = JointStateReader()
    for trial in range(3000):
        reader.read(originals[trial % 2])
        assert_reads_as_rclpy(reader, mutated(originals[trial % 2], rng))
    assert failed_deserializations == []


def test_a_message_larger_than_the_largest_joint_state_is_refused_unread(monkeypatch):
    """A 4 MB name: refused from its size, neither decoded nor deserialized."""
    monkeypatch.setattr(cdr, "deserialize_message", None)    # (a call would raise)
    huge = serialize_message(joint_state(["x" * 4_000_000], [[0.5], [], []]))
    reader = JointStateReader()
    with pytest.raises(InvalidInputError, match="refused unread: 4000.* bytes are more than"):
        reader.read(huge, max_names=7 + cdr.MAX_OTHER_JOINT_STATE_NAMES)


@pytest.mark.parametrize("message, reason", [
    (joint_state(["x" * (conversions.MAX_NAME_LENGTH + 1)], [[0.5], [], []]),
     "a joint name of 257 bytes is too long"),
    (joint_state(["a"], [[0.5], [], []], frame_id="f" * 300), "frame_id of 300 bytes is too long"),
    (joint_state([f"j{i}" for i in range(30)], [[0.5] * 30, [], []]), "30 names are too many"),
    (joint_state(["a"], [[0.5] * 30, [], []]), "30 values in an array are too many"),
])
@pytest.mark.parametrize("byte_order", ["little", "big"])
def test_too_many_or_too_long_names_and_values_are_refused_unread(monkeypatch, message, reason,
                                                                  byte_order):
    """Lengths past the bounds, from the CDR lengths, before deserialize_message; in either
    byte order (big-endian CDR is not read in place but deserialized)."""
    data = serialize_message(message) if byte_order == "little" else big_endian(message)
    assert rclpy_reading(data) == message          # (a JointState, only too large)
    monkeypatch.setattr(cdr, "deserialize_message", None)    # (a call would raise)
    with pytest.raises(InvalidInputError, match=f"refused unread: {reason}"):
        JointStateReader().read(data, max_names=20)


def big_endian(message):
    """A JointState as big-endian CDR (encapsulation 00 00), which rclpy reads too."""
    data = bytearray(b"\x00\x00\x00\x00")

    def align(size):
        data.extend(bytes(-(len(data) - 4) % size))

    def count(value):
        align(4)
        data.extend(struct.pack(">I", value))

    def text(string):
        encoded = string.encode() + b"\x00"
        count(len(encoded))
        data.extend(encoded)
    data.extend(struct.pack(">iI", message.header.stamp.sec, message.header.stamp.nanosec))
    text(message.header.frame_id)
    count(len(message.name))
    for name in message.name:
        text(name)
    for values in (message.position, message.velocity, message.effort):
        count(len(values))
        if len(values):
            align(8)
            data.extend(struct.pack(f">{len(values)}d", *values))
    return bytes(data)
