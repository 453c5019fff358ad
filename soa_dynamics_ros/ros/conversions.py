"""Conversions between ROS messages and the numpy world of the model library.

With :mod:`.cdr` (messages as their serialization) the only modules that
build or unpack message types (the service handlers fill their
responses' fields); everything else in the package sees arrays, dicts and
names.
"""
import array

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import Inertia, Point, Quaternion, Vector3, WrenchStamped
from rcl_interfaces.msg import ParameterDescriptor, SetParametersResult
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool
from transforms3d.quaternions import mat2quat
from visualization_msgs.msg import Marker

from ..errors import InvalidInputError, clipped, shown
from ..msg import Payload
from .stamps import stamp_seconds

# Bounds on one service request (docs/robustness.md, "Bounded requests"): with
# them the largest accepted request of every service stays short
# (docs/performance.md, "Design measurements"), so no request holds the
# feedforward path long.  Name lists are bounded by the model itself (a joint named twice is
# refused anyway).
MAX_WRENCHES = 64
MAX_CONSTRAINTS = 16
MAX_CONSTRAINT_ROWS = 48
MAX_TRAJECTORY_POINTS = 1000
# On the numpy path (no compiler, or kernels still compiling) a trajectory
# point costs orders of magnitude more than through the kernels.
MAX_TRAJECTORY_POINTS_NUMPY_PATH = 20
MAX_REQUEST_PAYLOADS = 8
MAX_PAYLOADS = 64                # attached at once through ~/set_payload
MAX_NAME_LENGTH = 256


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


def joint_state_efforts(message):
    """The efforts of a JointState (may be empty)."""
    return np.asarray(message.effort, dtype=float)


def publication_times(info):
    """(publisher id or None, source stamp [ns], reception stamp [ns]) of an rclpy MessageInfo."""
    gid = info.get("publisher_gid")
    return (bytes(gid["data"]) if gid else None), info["source_timestamp"], info["received_timestamp"]


def odometry_frame_error(message, world_frame, base_link):
    """Why a nav_msgs/Odometry cannot be the base state ("" when it can): its pose must be
    of ``base_link`` (child_frame_id) in ``world_frame`` (header.frame_id)."""
    frame, child = message.header.frame_id, message.child_frame_id
    if frame == world_frame and child == base_link:
        return ""
    return (f"base odometry in frame {clipped(frame, 100)!r} of child {clipped(child, 100)!r} "
            f"refused: it must be the pose of {base_link!r} (child_frame_id) in "
            f"{clipped(world_frame, 100)!r} (header.frame_id, parameter world_frame)")


def base_state(message):
    """(position, orientation x y z w, linear, angular velocity) of a nav_msgs/Odometry."""
    return pose_arrays(message.pose.pose) + twist_arrays(message.twist.twist)


def pose_arrays(pose):
    """(position, orientation x y z w) of a geometry_msgs/Pose."""
    p, o = pose.position, pose.orientation
    return (p.x, p.y, p.z), (o.x, o.y, o.z, o.w)


def twist_arrays(twist):
    """(linear, angular) velocity of a geometry_msgs/Twist."""
    v, w = twist.linear, twist.angular
    return (v.x, v.y, v.z), (w.x, w.y, w.z)


def request_base(request):
    """(pose arrays or None, twist arrays or None) of a request's optional ``base_pose`` and
    ``base_twist`` (bounded sequences of at most one)."""
    poses = bounded("base_pose", request.base_pose, 1)
    twists = bounded("base_twist", request.base_twist, 1)
    return (pose_arrays(poses[0]) if len(poses) else None,
            twist_arrays(twists[0]) if len(twists) else None)


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
    time_from_start = np.array([stamp_seconds(p.time_from_start) for p in points])

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
