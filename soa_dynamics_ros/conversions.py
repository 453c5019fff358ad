"""Conversions between ROS messages and the numpy world of the model library.

The only module (with the node) that knows message types; everything else in
the package sees arrays, dicts and names.
"""
import array

import numpy as np

from geometry_msgs.msg import Point, Quaternion, Vector3
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, MultiArrayDimension

from .errors import InvalidInputError


def joint_state_arrays(message):
    """(names, positions, velocities) of a JointState; velocities may be empty."""
    return list(message.name), np.asarray(message.position, dtype=float), \
        np.asarray(message.velocity, dtype=float)


def wrenches_from_messages(link_wrenches):
    """LinkWrench[] -> {link: [f; t]} (summing repeated links)."""
    wrenches = {}
    for item in link_wrenches:
        force, torque = item.wrench.force, item.wrench.torque
        vector = np.array([force.x, force.y, force.z, torque.x, torque.y, torque.z])
        wrenches[item.link] = wrenches.get(item.link, 0.0) + vector
    return wrenches


def constraints_from_messages(constraints):
    """Constraint[] -> [(frame, alpha 6 x m, beta m)] (alpha arrives column-major)."""
    result = []
    for index, constraint in enumerate(constraints):
        alpha = np.asarray(constraint.alpha, dtype=float)
        beta = np.asarray(constraint.beta, dtype=float)
        if alpha.size == 0 or alpha.size % 6:
            raise InvalidInputError(f"constraint {index} ({constraint.frame!r}): alpha has "
                                    f"{alpha.size} entries; it must hold 6 x m values, column-major")
        result.append((constraint.frame, alpha.reshape(-1, 6).T, beta))
    return result


def payload_from_message(payload):
    """Payload -> keyword arguments of RobotModel.attach_payload."""
    inertia = np.asarray(payload.inertia, dtype=float)
    if inertia.size not in (0, 9):
        raise InvalidInputError(f"payload {payload.name!r}: inertia needs 9 values (3x3 row-major) "
                                f"or none for a point mass, got {inertia.size}")
    return dict(name=payload.name, link=payload.link, mass=payload.mass,
                com=[payload.com.x, payload.com.y, payload.com.z],
                inertia=inertia.reshape(3, 3) if inertia.size else None)


def vector_in_order(values, count, what):
    """A float array of ``count`` values, or zeros when empty."""
    values = np.asarray(values, dtype=float)
    if values.size == 0:
        return np.zeros(count)
    if values.size != count:
        raise InvalidInputError(f"{what} has {values.size} values, expected {count}")
    return values


class FeedforwardMessages:
    """The two feedforward messages of one joint order, built once and refilled per state.

    ``array``: Float64MultiArray for a ros2_control effort ForwardCommandController;
    ``state``: JointState with the effort, the state it was computed from and
    that state's stamp.  Refilling skips rebuilding names and layout and the
    per-element checks message setters make on lists (the 1 kHz path; rclpy
    serializes at publish, so reusing the objects is safe).
    """

    def __init__(self, joint_names):
        self.joint_names = joint_names
        self.array = Float64MultiArray()
        self.array.layout.dim = [MultiArrayDimension(label="joints", size=len(joint_names),
                                                     stride=len(joint_names))]
        self.state = JointState(name=list(joint_names))

    def fill(self, effort, position, velocity, stamp):
        self.array.data = _doubles(effort)
        self.state.header.stamp = stamp
        self.state.position = _doubles(position)
        self.state.velocity = _doubles(velocity)
        self.state.effort = _doubles(effort)
        return self.array, self.state


def _doubles(vector):
    """A float64 numpy vector as the array.array message setters take without a check per entry."""
    return array.array("d", np.ascontiguousarray(vector, dtype=float).tobytes())


def point(vector):
    return Point(x=float(vector[0]), y=float(vector[1]), z=float(vector[2]))


def vector3(vector):
    return Vector3(x=float(vector[0]), y=float(vector[1]), z=float(vector[2]))


def quaternion_from_rotation(rotation):
    """Unit quaternion (x, y, z, w) of a rotation matrix (Shepperd's method)."""
    trace = np.trace(rotation)
    if trace > 0:
        s = 2.0 * np.sqrt(trace + 1.0)
        w, x = 0.25 * s, (rotation[2, 1] - rotation[1, 2]) / s
        y, z = (rotation[0, 2] - rotation[2, 0]) / s, (rotation[1, 0] - rotation[0, 1]) / s
    else:
        i = int(np.argmax(np.diag(rotation)))
        j, k = (i + 1) % 3, (i + 2) % 3
        s = 2.0 * np.sqrt(1.0 + rotation[i, i] - rotation[j, j] - rotation[k, k])
        q = np.zeros(3)
        q[i] = 0.25 * s
        q[j] = (rotation[j, i] + rotation[i, j]) / s
        q[k] = (rotation[k, i] + rotation[i, k]) / s
        w = (rotation[k, j] - rotation[j, k]) / s
        x, y, z = q
    return Quaternion(x=float(x), y=float(y), z=float(z), w=float(w))
