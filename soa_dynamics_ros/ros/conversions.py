"""Conversions between ROS messages and the numpy world of the model library.

The only module that builds or unpacks message types (the service handlers
fill their responses' fields); everything else in the package sees arrays,
dicts and names.
"""
import array
import struct
from collections import namedtuple

import numpy as np
from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import Inertia, Point, Quaternion, Vector3, WrenchStamped
from rcl_interfaces.msg import ParameterDescriptor, SetParametersResult
from rclpy.serialization import deserialize_message, serialize_message
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool, Float64MultiArray, MultiArrayDimension
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint
from transforms3d.quaternions import mat2quat
from visualization_msgs.msg import Marker

from ..errors import InvalidInputError, clipped, shown
from ..msg import Payload

# Bounds on one service request (docs/robustness.md, "Bounded requests"): with
# them the largest accepted request of every service costs well under 50 ms
# on the 2-core development machine, so no request holds the feedforward path
# longer.  Name lists are bounded by the model itself (a joint named twice is
# refused anyway).
MAX_WRENCHES = 64
MAX_CONSTRAINTS = 16
MAX_CONSTRAINT_ROWS = 48
MAX_TRAJECTORY_POINTS = 1000
# On the numpy path (no compiler, or kernels still compiling) a trajectory
# point costs ~1 ms instead of ~5 us.
MAX_TRAJECTORY_POINTS_NUMPY_PATH = 20
MAX_REQUEST_PAYLOADS = 8
MAX_PAYLOADS = 64                # attached at once through ~/set_payload
MAX_NAME_LENGTH = 256
MAX_ARRAY_DIMENSIONS = 8         # layout dimensions of a Float64MultiArray on a topic


def bounded(what, items, limit):
    """``items`` when there are at most ``limit`` of them, else a refusal naming the limit."""
    if len(items) > limit:
        raise too_many_in_request(what, len(items), limit)
    return items


def too_many_in_request(what, count, limit):
    return InvalidInputError(f"{what}: {count} given, at most {limit} accepted in one request")


def joint_state_arrays(message):
    """(names, positions, velocities) of a JointState; velocities may be empty."""
    return list(message.name), np.asarray(message.position, dtype=float), \
        np.asarray(message.velocity, dtype=float)


JointStateArrays = namedtuple("JointStateArrays", "names positions velocities efforts stamp")

# The encapsulation of little-endian CDR (XCDR1), which ROS 2's middlewares send,
# and its options, which say how many bytes at the end are padding: none.
_CDR_LITTLE_ENDIAN = b"\x00\x01\x00\x00"
_CDR_HEADER = struct.Struct("<iII")      # stamp.sec, stamp.nanosec, frame_id's length
_CDR_COUNT = struct.Struct("<I")
_CDR_COUNT_BIG_ENDIAN = struct.Struct(">I")
_LITTLE_ENDIAN_DOUBLE = np.dtype("<f8")
MAX_JOINT_STATE_SHAPES = 64
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

    On the 1 kHz path, rclpy's message object costs ~10 us a state (built
    from the C message, then turned into arrays); read here, ~3 us: the
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
        positions, offset = _read_doubles(data, offset, max_names)
        velocities, offset = _read_doubles(data, offset, max_names)
        efforts, _ = _read_doubles(data, offset, max_names)
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


def _read_doubles(data, offset, max_count):
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


def joint_state_efforts(message):
    """The efforts of a JointState (may be empty)."""
    return np.asarray(message.effort, dtype=float)


def stamp_seconds(stamp):
    """Seconds of a builtin_interfaces/Time (0.0: not stamped)."""
    return stamp.sec + 1e-9 * stamp.nanosec


def publication_times(info):
    """(publisher id or None, source stamp [ns], reception stamp [ns]) of an rclpy MessageInfo."""
    gid = info.get("publisher_gid")
    return (bytes(gid["data"]) if gid else None), info["source_timestamp"], info["received_timestamp"]


def wrenches_from_messages(link_wrenches):
    """LinkWrench[] -> {link: [f; t]} (summing repeated links)."""
    wrenches = {}
    for item in bounded("wrenches", link_wrenches, MAX_WRENCHES):
        force, torque = item.wrench.force, item.wrench.torque
        vector = np.array([force.x, force.y, force.z, torque.x, torque.y, torque.z])
        wrenches[item.link] = wrenches.get(item.link, 0.0) + vector
    return wrenches


def constraints_from_messages(constraints):
    """Constraint[] -> [(frame, alpha 6 x m, beta m)] (alpha arrives column-major)."""
    result, rows = [], 0
    for index, constraint in enumerate(bounded("constraints", constraints, MAX_CONSTRAINTS)):
        alpha = np.asarray(constraint.alpha, dtype=float)
        beta = np.asarray(constraint.beta, dtype=float)
        if alpha.size == 0 or alpha.size % 6:
            raise InvalidInputError(f"constraint {index} ({shown(constraint.frame)}): alpha has "
                                    f"{alpha.size} entries; it must hold 6 x m values, column-major")
        rows += alpha.size // 6
        if rows > MAX_CONSTRAINT_ROWS:
            raise InvalidInputError(f"constraints: more than {MAX_CONSTRAINT_ROWS} rows (6 x m "
                                    "alpha columns) in all, the most accepted in one request")
        result.append((constraint.frame, alpha.reshape(-1, 6).T, beta))
    return result


def payload_from_message(payload):
    """Payload (its geometry_msgs/Inertia) -> keyword arguments of RobotModel.attach_payload.

    The model refuses a mass that is not positive, a non-physical inertia and
    NaN or inf.
    """
    bounded("payload name", payload.name, MAX_NAME_LENGTH)
    inertia = payload.inertia
    tensor = np.array([[inertia.ixx, inertia.ixy, inertia.ixz],
                       [inertia.ixy, inertia.iyy, inertia.iyz],
                       [inertia.ixz, inertia.iyz, inertia.izz]])
    return dict(name=payload.name, link=payload.link, mass=inertia.m,
                com=[inertia.com.x, inertia.com.y, inertia.com.z], inertia=tensor)


def payload_message(name, link, mass, com=(0.0, 0.0, 0.0), inertia=None):
    """A Payload message of a mass, a centre of mass and a 3x3 inertia about it (None: point mass)."""
    return Payload(name=name, link=link, inertia=inertia_message(mass, com, inertia))


def inertia_message(mass, com=(0.0, 0.0, 0.0), inertia=None):
    """geometry_msgs/Inertia of a mass, a centre of mass and a 3x3 inertia about it (None: point mass)."""
    tensor = np.zeros((3, 3)) if inertia is None else np.asarray(inertia, dtype=float)
    return Inertia(m=float(mass), com=vector3(com), ixx=float(tensor[0, 0]),
                   ixy=float(tensor[0, 1]), ixz=float(tensor[0, 2]), iyy=float(tensor[1, 1]),
                   iyz=float(tensor[1, 2]), izz=float(tensor[2, 2]))


def trajectory_arrays(points, count):
    """JointTrajectoryPoint[] of ``count`` joints -> (time_from_start, positions, velocities, accelerations).

    Velocities and accelerations are None unless every point gives them.
    """
    for i, point in enumerate(points):
        if len(point.positions) != count:
            raise InvalidInputError(f"point {i} has {len(point.positions)} positions for "
                                    f"{count} joint names")
    time_from_start = np.array([p.time_from_start.sec + 1e-9 * p.time_from_start.nanosec
                                for p in points])

    def rates(field_name):
        values = [getattr(p, field_name) for p in points]
        return np.array(values, dtype=float).reshape(len(points), count) \
            if all(len(v) == count for v in values) else None
    positions = np.array([p.positions for p in points], dtype=float).reshape(len(points), count)
    return time_from_start, positions, rates("velocities"), rates("accelerations")


def bounded_trajectory_points(points, compiled):
    """A trajectory's points when there are few enough for the kernels in use (else a refusal)."""
    what, limit = trajectory_point_limit(compiled)
    return bounded(what, points, limit)


def trajectory_point_limit(compiled):
    """(what the points are called in a refusal, the most accepted) for the kernels in use."""
    if compiled:
        return "trajectory points", MAX_TRAJECTORY_POINTS
    return ("trajectory points (numpy path: compiled kernels not in use)",
            MAX_TRAJECTORY_POINTS_NUMPY_PATH)


def joint_trajectory_arrays(trajectory):
    """JointTrajectory -> (names, time_from_start, positions, velocities, accelerations).

    Velocities and accelerations are each given by every point or by none
    (None); any other mix, or a point whose arrays do not match the joint
    names, is refused as ragged.
    """
    names, points = list(trajectory.joint_names), trajectory.points
    count = len(names)
    for field_name in ("positions", "velocities", "accelerations"):
        lengths = [len(getattr(point, field_name)) for point in points]
        expected = count if field_name == "positions" or any(lengths) else 0
        bad = next((i for i, length in enumerate(lengths) if length != expected), None)
        if bad is not None:
            raise InvalidInputError(
                f"ragged trajectory: point {bad} has {lengths[bad]} {field_name} for {count} "
                "joint names" + ("" if field_name == "positions" else
                                 f" ({field_name} go with every point or with none)"))
    time_from_start, positions, velocities, accelerations = trajectory_arrays(points, count)
    return names, time_from_start, positions, velocities, accelerations


def with_efforts(trajectory, efforts):
    """``trajectory`` with each point's ``effort`` set to the rows of ``efforts`` (filled in place)."""
    for point, row in zip(trajectory.points, efforts):
        point.effort = message_doubles(row)
    return trajectory


def vector_in_order(values, count, what):
    """A float array of ``count`` finite values, or zeros when empty.

    NaN and inf are refused here, not later by the model, so that the message
    names the request's field and index (the model names its own argument,
    in model order).
    """
    values = np.asarray(values, dtype=float)
    if values.size == 0:
        return np.zeros(count)
    if values.size != count:
        raise InvalidInputError(f"{what} has {values.size} values, expected {count}")
    if not np.all(np.isfinite(values)):
        raise InvalidInputError(f"{what} holds NaN or inf at index "
                                f"{np.flatnonzero(~np.isfinite(values)).tolist()}")
    return values


class FeedforwardMessages:
    """The two feedforward messages of one joint order, serialized once and refilled per state.

    ``array``: Float64MultiArray for a ros2_control effort ForwardCommandController;
    ``state``: JointState with the effort, the state it was computed from and
    that state's stamp.  :meth:`fill` gives them serialized, which publishers
    take as they are: rclpy's publish of a message object converts it to C and
    serializes it, ~13 of its ~16 us here, twice per state on the 1 kHz path.
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


def row_major(matrix):
    """A matrix as the flat, row-major float64 array of a message field."""
    return message_doubles(np.ravel(matrix))


def message_doubles(vector):
    """A float64 numpy vector as the array.array message setters take without a check per entry."""
    return array.array("d", np.ascontiguousarray(vector, dtype=float).tobytes())


def point(vector):
    return Point(x=float(vector[0]), y=float(vector[1]), z=float(vector[2]))


def vector3(vector):
    return Vector3(x=float(vector[0]), y=float(vector[1]), z=float(vector[2]))


def quaternion_from_rotation(rotation):
    """Unit quaternion message of a rotation matrix (transforms3d, which orders it w, x, y, z)."""
    w, x, y, z = mat2quat(rotation)
    return Quaternion(x=float(x), y=float(y), z=float(z), w=float(w))


def time_from_seconds(seconds):
    """builtin_interfaces/Time of a time in seconds."""
    # Round once, in integer nanoseconds (rounding the fraction alone can carry into a lost second).
    sec, nanosec = divmod(int(round(seconds * 1e9)), 1_000_000_000)
    return Time(sec=sec, nanosec=nanosec)


def clock(time_message):
    return Clock(clock=time_message)


class EstimationMessages:
    """The estimation topics' messages of one model, built once and refilled per estimate."""

    def __init__(self, joint_names, root_link):
        self.torque = JointState(name=list(joint_names))
        self.wrench = WrenchStamped()
        self.wrench.header.frame_id = root_link       # root axes, about the frame's origin

    def fill(self, estimate, stamp):
        """(JointState of the external torques at the state's positions, WrenchStamped or None)."""
        self.torque.header.stamp = stamp
        self.torque.position = message_doubles(estimate.position)
        self.torque.effort = message_doubles(estimate.torques)
        if estimate.wrench is None:
            return self.torque, None
        self.wrench.header.stamp = stamp
        force, torque = estimate.wrench[:3], estimate.wrench[3:]
        self.wrench.wrench.force = vector3(force)
        self.wrench.wrench.torque = vector3(torque)
        return self.torque, self.wrench


def contact(value):
    return Bool(data=bool(value))


class JointStates:
    """One JointState message for a fixed name list, refilled per publication."""

    def __init__(self, joint_names):
        self.message = JointState(name=list(joint_names))

    def fill(self, stamp, position, velocity, effort):
        self.message.header.stamp = stamp
        self.message.position = message_doubles(position)
        self.message.velocity = message_doubles(velocity)
        self.message.effort = message_doubles(effort)
        return self.message


def parameter_descriptor(description, read_only=False, dynamic_typing=False):
    return ParameterDescriptor(description=description, read_only=read_only,
                               dynamic_typing=dynamic_typing)


def parameters_result(refusal=""):
    """The answer to a parameter change: accepted, or refused for ``refusal``."""
    return SetParametersResult(successful=not refusal, reason=refusal)


DIAGNOSTIC_LEVELS = {"ok": DiagnosticStatus.OK, "warn": DiagnosticStatus.WARN,
                     "error": DiagnosticStatus.ERROR}


# /diagnostics texts are cut to these many characters: they can quote rejected input,
# and are republished every period.
MAX_DIAGNOSTIC_MESSAGE = 2000
MAX_DIAGNOSTIC_VALUE = 1000


def diagnostics(name, hardware_id, level, message, values, stamp):
    """A DiagnosticArray of one status; ``level`` is "ok", "warn" or "error"; values as text."""
    status = DiagnosticStatus(name=name, hardware_id=hardware_id, level=DIAGNOSTIC_LEVELS[level],
                              message=clipped(message, MAX_DIAGNOSTIC_MESSAGE))
    status.values = [KeyValue(key=k, value=clipped(str(v), MAX_DIAGNOSTIC_VALUE))
                     for k, v in values.items()]
    array_message = DiagnosticArray(status=[status])
    array_message.header.stamp = stamp
    return array_message


def inertia_marker(ellipsoid, frame_id, stamp):
    """A sphere Marker scaled and turned into an embedded.live_model.InertiaEllipsoid."""
    marker = Marker(type=Marker.SPHERE, action=Marker.ADD, ns="task_space_inertia", id=0)
    marker.header.frame_id = frame_id
    marker.header.stamp = stamp
    marker.pose.position = point(ellipsoid.center)
    marker.pose.orientation = quaternion_from_rotation(ellipsoid.rotation)
    marker.scale = vector3(ellipsoid.diameters)
    marker.color.r, marker.color.g, marker.color.b, marker.color.a = 0.2, 0.6, 1.0, 0.5
    return marker
