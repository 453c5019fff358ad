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
from transforms3d.quaternions import mat2quat
from visualization_msgs.msg import Marker

from ..errors import InvalidInputError
from ..msg import Payload
# Kept importable from here, the message mapping's public path.
from .stamps import stamp_seconds, time_from_seconds  # noqa: F401

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


def bounded(what, items, limit):
    """``items`` when there are at most ``limit`` of them, else a refusal naming the limit."""
    if len(items) > limit:
        raise InvalidInputError(f"{what}: {len(items)} given, at most {limit} accepted in one "
                                "request")
    return items


def joint_state_arrays(message):
    """(names, positions, velocities) of a JointState; velocities may be empty."""
    return list(message.name), np.asarray(message.position, dtype=float), \
        np.asarray(message.velocity, dtype=float)


JointStateArrays = namedtuple("JointStateArrays", "names positions velocities efforts stamp")

# The encapsulation of little-endian CDR (XCDR1), which ROS 2's middlewares send.
_CDR_LITTLE_ENDIAN = b"\x00\x01"
_CDR_HEADER = struct.Struct("<iII")      # stamp.sec, stamp.nanosec, frame_id's length
_CDR_COUNT = struct.Struct("<I")
_LITTLE_ENDIAN_DOUBLE = np.dtype("<f8")
MAX_JOINT_STATE_SHAPES = 64


class JointStateReader:
    """JointStates read from their serialization, as a raw subscription gives them.

    On the 1 kHz path, rclpy's message object costs ~10 us a state (built
    from the C message, then turned into arrays); read here, ~3 us: the
    arrays are read-only views of the message's bytes, and the names, which
    a driver sends the same every time, are compared with the last list read
    rather than decoded.  Only little-endian CDR is read so; anything else
    goes through rclpy's deserialize_message.  Each new shape (the names, and
    which arrays are empty, which decides CDR's padding) is read both ways
    once and must agree, or that shape is always deserialized.
    """

    def __init__(self):
        self._names = None       # (bytes, their parts [(offset, bytes)], names) last read
        self._shapes = {}        # shape -> whether reading agrees with deserialize_message

    def read(self, data):
        """The :data:`JointStateArrays` of one serialized JointState.

        :class:`InvalidInputError` for bytes that are no JointState.
        """
        if data[:2] != _CDR_LITTLE_ENDIAN:
            return _deserialized_joint_state(data)
        try:
            state = self._read_cdr(data)
        except (struct.error, ValueError, UnicodeDecodeError):
            return _deserialized_joint_state(data)
        shape = (state.names, state.positions.size > 0, state.velocities.size > 0,
                 state.efforts.size > 0)
        agrees = self._shapes.get(shape)
        if agrees is None:
            deserialized = _deserialized_joint_state(data)
            agrees = _same_joint_state(state, deserialized)
            if len(self._shapes) >= MAX_JOINT_STATE_SHAPES:
                self._shapes.clear()
            self._shapes[shape] = agrees
            return deserialized
        return state if agrees else _deserialized_joint_state(data)

    def _read_cdr(self, data):
        sec, nanosec, frame_length = _CDR_HEADER.unpack_from(data, 4)
        names, offset = self._read_names(data, _cdr_aligned(16 + frame_length, 4))
        positions, offset = _read_doubles(data, offset)
        velocities, offset = _read_doubles(data, offset)
        efforts, _ = _read_doubles(data, offset)
        return JointStateArrays(names, positions, velocities, efforts,
                                Time(sec=sec, nanosec=nanosec))

    def _read_names(self, data, offset):
        """(names, the offset after them) of the string sequence at ``offset``."""
        if self._names is not None:
            block, parts, names = self._names
            # The whole block at once, unless the padding after a name, which CDR
            # leaves unset, differs: then name by name.
            if data.startswith(block, offset) or all(
                    data.startswith(part, offset + at) for at, part in parts):
                return names, offset + len(block)
        count, = _CDR_COUNT.unpack_from(data, offset)
        parts, names, end = [(0, data[offset:offset + 4])], [], offset + 4
        for _ in range(count):        # each name takes 4 bytes or more: bounded by the data
            end = _cdr_aligned(end, 4)
            length, = _CDR_COUNT.unpack_from(data, end)
            text = data[end + 4:end + 4 + length]
            if len(text) != length:
                raise ValueError("a name runs past the end of the message")
            parts.append((end - offset, data[end:end + 4 + length]))
            names.append(text[:-1].decode())       # (its length counts the terminating NUL)
            end += 4 + length
        names = tuple(names)
        self._names = (data[offset:end], parts, names)
        return names, end


def _cdr_aligned(offset, size):
    """``offset`` moved up to a multiple of ``size``, counted after the 4-byte encapsulation."""
    return offset + (4 - offset) % size


def _read_doubles(data, offset):
    """(float64 array view, the offset after it) of the double sequence at ``offset``."""
    offset = _cdr_aligned(offset, 4)
    count, = _CDR_COUNT.unpack_from(data, offset)
    offset += 4
    if count:                   # an empty sequence is not padded to its elements' size
        offset = _cdr_aligned(offset, 8)
    return np.frombuffer(data, _LITTLE_ENDIAN_DOUBLE, count, offset), offset + 8 * count


def _deserialized_joint_state(data):
    try:
        message = deserialize_message(data, JointState)
    except Exception as error:   # noqa: BLE001 - rclpy raises its own RMWError on bad bytes
        raise InvalidInputError(f"a joint_states message that is no JointState serialization "
                                f"({len(data)} bytes): {error}") from None
    names, positions, velocities = joint_state_arrays(message)
    return JointStateArrays(tuple(names), positions, velocities, joint_state_efforts(message),
                            message.header.stamp)


def _same_joint_state(read, deserialized):
    return (read.names == deserialized.names and read.stamp == deserialized.stamp
            and all(np.array_equal(a, b, equal_nan=True) for a, b in zip(read[1:4],
                                                                       deserialized[1:4])))


def joint_state_efforts(message):
    """The efforts of a JointState (may be empty)."""
    return np.asarray(message.effort, dtype=float)


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
            raise InvalidInputError(f"constraint {index} ({constraint.frame!r}): alpha has "
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
    time_from_start = np.array([stamp_seconds(p.time_from_start) for p in points])

    def rates(field_name):
        values = [getattr(p, field_name) for p in points]
        return np.array(values, dtype=float).reshape(len(points), count) \
            if all(len(v) == count for v in values) else None
    positions = np.array([p.positions for p in points], dtype=float).reshape(len(points), count)
    return time_from_start, positions, rates("velocities"), rates("accelerations")


def bounded_trajectory_points(points, compiled):
    """A trajectory's points when there are few enough for the kernels in use (else a refusal)."""
    return bounded("trajectory points" + ("" if compiled else
                                          " (numpy path: compiled kernels not in use)"),
                   points, MAX_TRAJECTORY_POINTS if compiled else MAX_TRAJECTORY_POINTS_NUMPY_PATH)


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
        point.effort = _doubles(row)
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
        array.data = _doubles(markers[0])
        state.header.stamp = Time(sec=0x1234567, nanosec=0x7654321)
        state.position, state.velocity, state.effort = map(_doubles, markers[1:])
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
        self._array.data = _doubles(effort)
        self._state.header.stamp = stamp
        self._state.position = _doubles(position)
        self._state.velocity = _doubles(velocity)
        self._state.effort = _doubles(effort)
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
    return _doubles(np.ravel(matrix))


def _doubles(vector):
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
        self.torque.position = _doubles(estimate.position)
        self.torque.effort = _doubles(estimate.torques)
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
        self.message.position = _doubles(position)
        self.message.velocity = _doubles(velocity)
        self.message.effort = _doubles(effort)
        return self.message


def parameter_descriptor(description, read_only=False, dynamic_typing=False):
    return ParameterDescriptor(description=description, read_only=read_only,
                               dynamic_typing=dynamic_typing)


def parameters_result(refusal=""):
    """The answer to a parameter change: accepted, or refused for ``refusal``."""
    return SetParametersResult(successful=not refusal, reason=refusal)


DIAGNOSTIC_LEVELS = {"ok": DiagnosticStatus.OK, "warn": DiagnosticStatus.WARN,
                     "error": DiagnosticStatus.ERROR}


def diagnostics(name, hardware_id, level, message, values, stamp):
    """A DiagnosticArray of one status; ``level`` is "ok", "warn" or "error"; values as text."""
    status = DiagnosticStatus(name=name, hardware_id=hardware_id, level=DIAGNOSTIC_LEVELS[level],
                              message=message)
    status.values = [KeyValue(key=k, value=str(v)) for k, v in values.items()]
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
