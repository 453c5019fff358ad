"""ROS messages as their serialization (CDR): read, sized, and written in place.

The node subscribes raw where the sender chooses a message's size: each
length CDR gives is checked against its bound before anything is
materialised, and deserialize_message only sees bytes whose layout fits.
On the 1 kHz path joint states are read from their bytes and the
feedforward's numbers written into a serialization made once, rather than
rclpy building and serializing message objects.  The message mapping
(message objects to and from arrays) is :mod:`.conversions`.
"""
import struct
from collections import namedtuple

import numpy as np
from builtin_interfaces.msg import Time
from rclpy.serialization import deserialize_message, serialize_message
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, MultiArrayDimension
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from .conversions import (MAX_NAME_LENGTH, joint_state_arrays, joint_state_efforts,
                          message_doubles, too_many_in_request, trajectory_point_limit)
from ..errors import InvalidInputError

JointStateArrays = namedtuple("JointStateArrays", "names positions velocities efforts stamp")

# The encapsulation of little-endian CDR (XCDR1), which ROS 2's middlewares send,
# and its options, which say how many bytes at the end are padding: none.
_CDR_LITTLE_ENDIAN = b"\x00\x01\x00\x00"
_CDR_HEADER = struct.Struct("<iII")      # stamp.sec, stamp.nanosec, frame_id's length
_CDR_COUNT = struct.Struct("<I")
_CDR_COUNT_BIG_ENDIAN = struct.Struct(">I")
_LITTLE_ENDIAN_DOUBLE = np.dtype("<f8")
MAX_JOINT_STATE_SHAPES = 64
MAX_ARRAY_DIMENSIONS = 8         # layout dimensions of a Float64MultiArray on a topic
# A JointState may name joints the model lacks (a gripper's, another arm's):
# this many besides the model's own are read, more are refused unread.
MAX_OTHER_JOINT_STATE_NAMES = 256
# The bound for a reader that knows no model.
MAX_JOINT_STATE_NAMES = 1024
# A CDR string's length counts its terminating NUL.
_MAX_CDR_STRING = MAX_NAME_LENGTH + 1


def joint_state_name_limit(model_joints):
    """The most names a JointState for a model of ``model_joints`` joints may carry."""
    return model_joints + MAX_OTHER_JOINT_STATE_NAMES


def max_joint_state_bytes(max_names):
    """The size of the largest serialized JointState of ``max_names`` names and a frame_id,
    each of at most MAX_NAME_LENGTH bytes, and three arrays of ``max_names`` values."""
    string = 4 + _MAX_CDR_STRING + 3        # length, text and NUL, padding up to the next 4
    return 4 + 8 + string + 4 + max_names * string + 3 * (4 + 4 + 8 * max_names)


class JointStateReader:
    """JointStates read from their serialization, as a raw subscription gives them.

    On the 1 kHz path, rclpy's message object (built from the C message,
    then turned into arrays) costs several times what reading here does: the
    arrays are read-only views of the message's bytes, and the names, which
    a driver sends the same every time, are compared byte for byte (lengths
    and terminating NULs included) with the last name block read rather
    than decoded.  Only little-endian CDR is read so; anything else goes
    through rclpy's deserialize_message.  Each new shape (the name block's
    bytes, and which arrays are empty, which decides CDR's padding) is read
    both ways once and must agree, or that shape is always deserialized.

    Sizes are checked before anything is materialised: a message larger than
    the largest JointState of ``max_names`` names, more names than that, a
    name or frame_id longer than MAX_NAME_LENGTH, or an array longer than
    ``max_names`` is refused from the lengths CDR gives, neither decoded nor
    deserialized.  Bytes whose lengths run past their end are refused so
    too: deserialize_message only sees bytes whose layout fits.
    """

    def __init__(self):
        self._names = None       # (bytes, their parts [(offset, bytes)], names, key) last read
        self._shapes = {}        # shape -> whether reading agrees with deserialize_message
        self._byte_limit = (None, 0)       # (max_names, max_joint_state_bytes of it)

    def read(self, data, max_names=MAX_JOINT_STATE_NAMES):
        """The :data:`JointStateArrays` of one serialized JointState of at most ``max_names`` names.

        :class:`InvalidInputError` for bytes that are no JointState, or one too large.
        """
        if self._byte_limit[0] != max_names:
            self._byte_limit = (max_names, max_joint_state_bytes(max_names))
        if len(data) > self._byte_limit[1]:
            raise _refused_unread(
                f"{len(data)} bytes are more than the {self._byte_limit[1]} of the largest "
                f"JointState read ({max_names} names and values, names of at most "
                f"{MAX_NAME_LENGTH} bytes)")
        if not data.startswith(_CDR_LITTLE_ENDIAN):
            return _deserialized_joint_state(data, max_names)
        try:
            state, names_key = self._read_cdr(data, max_names)
        except InvalidInputError:
            raise
        except (struct.error, ValueError):
            return _deserialized_joint_state(data, max_names)
        shape = (names_key, state.positions.size > 0, state.velocities.size > 0,
                 state.efforts.size > 0)
        agrees = self._shapes.get(shape)
        if agrees is None:
            deserialized = _deserialized_joint_state(data, max_names)
            agrees = _same_joint_state(state, deserialized)
            if len(self._shapes) >= MAX_JOINT_STATE_SHAPES:
                self._shapes.clear()
            self._shapes[shape] = agrees
            return deserialized
        return state if agrees else _deserialized_joint_state(data, max_names)

    def _read_cdr(self, data, max_names):
        """(JointStateArrays, the key of its name block) of little-endian CDR."""
        sec, nanosec, frame_length = _CDR_HEADER.unpack_from(data, 4)
        if frame_length > _MAX_CDR_STRING:
            raise _refused_unread(_too_long("frame_id", frame_length))
        names, names_key, offset = self._read_names(
            data, _cdr_aligned(16 + frame_length, 4), max_names)
        positions, offset = read_doubles(data, offset, max_names)
        velocities, offset = read_doubles(data, offset, max_names)
        efforts, _ = read_doubles(data, offset, max_names)
        return JointStateArrays(names, positions, velocities, efforts,
                                Time(sec=sec, nanosec=nanosec)), names_key

    def _read_names(self, data, offset, max_names):
        """(names, their key, the offset after them) of the string sequence at ``offset``."""
        if self._names is not None:
            block, parts, names, key = self._names
            # The whole block at once, unless the padding after a name, which CDR
            # leaves unset, differs: then name by name (each with its length and NUL).
            if data.startswith(block, offset) or all(
                    data.startswith(part, offset + at) for at, part in parts):
                return names, key, offset + len(block)
        count, = _CDR_COUNT.unpack_from(data, offset)
        if count > max_names:
            raise _refused_unread(_too_many("names", count, max_names))
        parts, names, end = [(0, data[offset:offset + 4])], [], offset + 4
        for _ in range(count):
            end = _cdr_aligned(end, 4)
            length, = _CDR_COUNT.unpack_from(data, end)
            if length > _MAX_CDR_STRING:
                raise _refused_unread(_too_long("a joint name", length))
            text = data[end + 4:end + 4 + length]
            if len(text) != length:
                raise ValueError("a name runs past the end of the message")
            parts.append((end - offset, data[end:end + 4 + length]))
            names.append(_cdr_string(text))
            end += 4 + length
        names = tuple(names)
        key = b"".join(part for _, part in parts)
        self._names = (data[offset:end], parts, names, key)
        return names, key, end


def _cdr_string(text):
    """A CDR string's bytes (its NUL included) as rclpy gives it with Fast DDS.

    Fast CDR drops the last byte only when it is a NUL, the C message keeps
    the text up to its first NUL, and rclpy decodes that as UTF-8, replacing
    what is not.
    """
    return text.partition(b"\0")[0].decode("utf-8", "replace")


def _refused_unread(reason):
    return _refusal("a joint_states message", JointState)(reason)


def _too_long(what, length):
    """Why a string of CDR ``length`` (its NUL counted) is refused."""
    return f"{what} of {length - 1} bytes is too long (at most {MAX_NAME_LENGTH})"


def _too_many(what, count, limit):
    return f"{count} {what} are too many (at most {limit})"


def _cdr_aligned(offset, size):
    """``offset`` moved up to a multiple of ``size``, counted after the 4-byte encapsulation."""
    return offset + (4 - offset) % size


def read_doubles(data, offset, max_count):
    """(float64 array view, the offset after it) of the double sequence at ``offset``."""
    offset = _cdr_aligned(offset, 4)
    count, = _CDR_COUNT.unpack_from(data, offset)
    if count > max_count:
        raise _refused_unread(_too_many("values in an array", count, max_count))
    offset += 4
    if count:                   # an empty sequence is not padded to its elements' size
        offset = _cdr_aligned(offset, 8)
    return np.frombuffer(data, _LITTLE_ENDIAN_DOUBLE, count, offset), offset + 8 * count


class _CdrLengths:
    """A walk over CDR (XCDR1) bytes by their lengths alone, nothing decoded.

    Each length is checked against its bound as it is met, and :meth:`check_end`
    that the whole fits in the bytes; ``refuse(reason)`` makes the error raised.
    """

    def __init__(self, data, refuse):
        self.data, self.refuse = data, refuse
        if len(data) < 4 or data[0] != 0 or data[1] > 3:
            raise refuse(f"its encapsulation {data[:2].hex()} is none of XCDR1's")
        # (the lowest bit of the encapsulation is the byte order)
        self._unpack = (_CDR_COUNT if data[1] & 1 else _CDR_COUNT_BIG_ENDIAN).unpack_from
        self.offset = 4
        self._end = len(data) - (data[3] & 3)       # (options: padding bytes at the end)

    def count(self):
        """The sequence or string length at the cursor."""
        self.offset = _cdr_aligned(self.offset, 4)
        try:
            value, = self._unpack(self.data, self.offset)
        except struct.error:
            raise self.refuse(f"its {len(self.data)} bytes end inside a length") from None
        self.offset += 4
        return value

    def counted(self, what, limit):
        count = self.count()
        if count > limit:
            raise self.refuse(_too_many(what, count, limit))
        return count

    def skip_string(self, what):
        length = self.count()
        if length > _MAX_CDR_STRING:
            raise self.refuse(_too_long(what, length))
        self.offset += length

    def skip_doubles(self, limit):
        count = self.counted("values in an array", limit)
        if count:               # an empty sequence is not padded to its elements' size
            self.offset = _cdr_aligned(self.offset, 8) + 8 * count

    def skip_int32s(self, count):
        self.offset = _cdr_aligned(self.offset, 4) + 4 * count

    def check_end(self):
        if self.offset > self._end:
            raise self.refuse(f"its lengths run past the end of its {len(self.data)} bytes")


def _deserialized(data, message_type, what, walk):
    """deserialize_message's ``message_type`` of ``data`` once ``walk(cdr)`` has checked
    the lengths of its fields on a :class:`_CdrLengths` and they fit: rclpy's C
    deserializer only ever sees bytes that can be such a message (it prints to stderr
    for each message it refuses), and builds no message larger than the walk allows."""
    cdr = _CdrLengths(data, _refusal(what, message_type))
    walk(cdr)
    cdr.check_end()
    try:
        return deserialize_message(data, message_type)
    except Exception as error:   # noqa: BLE001 - rclpy raises its own RMWError on bad bytes
        raise InvalidInputError(f"{what} that is no {message_type.__name__} serialization "
                                f"({len(data)} bytes): {error}") from None


def _refusal(what, message_type):
    """The InvalidInputError maker for a ``message_type`` called ``what`` refused unread."""
    return lambda reason: InvalidInputError(
        f"{what} that is no {message_type.__name__} serialization this node reads, refused "
        f"unread: {reason}")


def _skip_header(cdr):
    cdr.skip_int32s(2)                  # stamp
    cdr.skip_string("frame_id")


def _deserialized_joint_state(data, max_names):
    """deserialize_message's JointStateArrays of a JointState of at most ``max_names``
    names and values, names and frame_id of at most MAX_NAME_LENGTH."""
    def walk(cdr):
        _skip_header(cdr)
        for _ in range(cdr.counted("names", max_names)):
            cdr.skip_string("a joint name")
        for _ in range(3):              # position, velocity, effort
            cdr.skip_doubles(max_names)
    message = _deserialized(data, JointState, "a joint_states message", walk)
    names, positions, velocities = joint_state_arrays(message)
    return JointStateArrays(tuple(names), positions, velocities, joint_state_efforts(message),
                            message.header.stamp)


def trajectory_from_serialized(data, max_joints, compiled):
    """The JointTrajectory of serialized bytes, refused from their lengths before rclpy
    builds it (a point costs a Python object) when they hold more joint names than
    ``max_joints``, more points than the kernels in use take, or longer arrays or names.
    """
    def walk(cdr):
        _skip_header(cdr)
        for _ in range(cdr.counted("joint names", max_joints)):
            cdr.skip_string("a joint name")
        what, limit = trajectory_point_limit(compiled)
        points = cdr.count()
        if points > limit:
            raise too_many_in_request(what, points, limit)
        for _ in range(points):
            _skip_point(cdr, max_joints)
    return _deserialized(data, JointTrajectory, "a trajectory", walk)


def _skip_point(cdr, max_joints):
    """A JointTrajectoryPoint of at most ``max_joints`` values in each array."""
    for _ in range(4):                  # positions, velocities, accelerations, effort
        cdr.skip_doubles(max_joints)
    cdr.skip_int32s(2)                  # time_from_start


def desired_point_from_serialized(data, max_joints):
    """The JointTrajectoryPoint of serialized bytes (~/desired_state), refused from its
    lengths when an array holds more than ``max_joints`` values."""
    return _deserialized(data, JointTrajectoryPoint, "a desired state",
                         lambda cdr: _skip_point(cdr, max_joints))


def desired_acceleration_from_serialized(data, max_joints):
    """The Float64MultiArray of serialized bytes (~/desired_acceleration), refused from its
    lengths when it holds more than ``max_joints`` values or MAX_ARRAY_DIMENSIONS
    layout dimensions (each a message rclpy would build)."""
    def walk(cdr):
        for _ in range(cdr.counted("layout dimensions", MAX_ARRAY_DIMENSIONS)):
            cdr.skip_string("a dimension label")
            cdr.skip_int32s(2)          # size, stride
        cdr.skip_int32s(1)              # data_offset
        cdr.skip_doubles(max_joints)
    return _deserialized(data, Float64MultiArray, "a desired acceleration", walk)


def _same_joint_state(read, deserialized):
    return (read.names == deserialized.names and read.stamp == deserialized.stamp
            and all(np.array_equal(a, b, equal_nan=True) for a, b in zip(read[1:4],
                                                                       deserialized[1:4])))


class FeedforwardMessages:
    """The two feedforward messages of one joint order, serialized once and refilled per state.

    ``array``: Float64MultiArray for a ros2_control effort ForwardCommandController;
    ``state``: JointState with the effort, the state it was computed from and
    that state's stamp.  :meth:`fill` gives them serialized, which publishers
    take as they are: rclpy's publish of a message object converts it to C and
    serializes it, most of its cost, twice per state on the 1 kHz path.
    Names and layout never change, so only the numbers are written, in place,
    into a serialization made once; where they go is found by serializing
    marker values, and checked by deserializing it back.  Where that check
    fails (a middleware whose serialization is not laid out so),
    ``serialized_error`` says why and :meth:`fill` gives message objects.
    """

    def __init__(self, joint_names):
        self.joint_names = joint_names
        count = len(joint_names)
        self._array = Float64MultiArray()
        self._array.layout.dim = [MultiArrayDimension(label="joints", size=count, stride=count)]
        self._state = JointState(name=list(joint_names))
        try:
            self._serialize(count)
            self.serialized_error = ""
        except RuntimeError as error:
            self.serialized_error = str(error)
            self.fill = self._fill_messages

    def _serialize(self, count):
        markers = [np.arange(count) + 0.5 + 1000.0 * field for field in range(4)]
        array, state = self._array, self._state
        array.data = message_doubles(markers[0])
        state.header.stamp = Time(sec=0x1234567, nanosec=0x7654321)
        state.position, state.velocity, state.effort = map(message_doubles, markers[1:])
        self._array_bytes = bytearray(serialize_message(array))
        self._state_bytes = bytearray(serialize_message(state))
        self._array_effort = _view(self._array_bytes, markers[0])
        self._stamp_offset = _offset(self._state_bytes, struct.pack("=iI", 0x1234567, 0x7654321))
        self._position, self._velocity, self._state_effort = (
            _view(self._state_bytes, marker) for marker in markers[1:])
        # The serializations must read back as the messages they stand for, filled.
        values = [np.arange(count) * -0.25 + 0.125 * field for field in range(3)]
        stamp = Time(sec=3, nanosec=4)
        array_bytes, state_bytes = self.fill(values[0], values[1], values[2], stamp)
        array, state = self._fill_messages(values[0], values[1], values[2], stamp)
        if (deserialize_message(array_bytes, Float64MultiArray) != array
                or deserialize_message(state_bytes, JointState) != state):
            raise RuntimeError("the serialized feedforward messages do not read back as written")

    def fill(self, effort, position, velocity, stamp):
        """(serialized Float64MultiArray, serialized JointState) of one state's feedforward."""
        self._array_effort[:] = effort
        self._state_effort[:] = effort
        self._position[:] = position
        self._velocity[:] = velocity
        struct.pack_into("=iI", self._state_bytes, self._stamp_offset, stamp.sec, stamp.nanosec)
        return bytes(self._array_bytes), bytes(self._state_bytes)

    def _fill_messages(self, effort, position, velocity, stamp):
        """fill's messages as objects (rclpy serializes them at publish: reusing them is safe)."""
        self._array.data = message_doubles(effort)
        self._state.header.stamp = stamp
        self._state.position = message_doubles(position)
        self._state.velocity = message_doubles(velocity)
        self._state.effort = message_doubles(effort)
        return self._array, self._state


def _offset(serialized, pattern):
    """Where ``pattern`` starts in ``serialized``; it must occur exactly once."""
    start = serialized.find(pattern)
    if start < 0 or serialized.find(pattern, start + 1) >= 0:
        raise RuntimeError("a marker of the feedforward messages is not once in their "
                           "serialization")
    return start


def _view(serialized, marker):
    """The float64 vector of ``serialized`` that holds ``marker`` (native byte order, as the
    middleware serializes), as a writable numpy view."""
    marker = np.ascontiguousarray(marker, dtype=float)
    return np.frombuffer(serialized, dtype=float, count=marker.size,
                         offset=_offset(serialized, marker.tobytes()))
