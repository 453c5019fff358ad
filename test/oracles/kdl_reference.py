"""Orocos KDL as a second, independent oracle for serial chains.

There is no Python kdl_parser, so the ``PyKDL.Chain`` is built here from the
URDF text with the standard library's ``xml.etree`` (never with this
project's parser).  KDL conventions this relies on (orocos_kdl 1.5.1 source):

* A ``Segment`` is a ``Joint`` expressed in the segment's *start* frame (the
  previous segment's tip) plus ``f_tip``, the tip frame relative to the start
  frame at q = 0: ``Segment::pose(q) = joint.pose(q) * f_tip``.  A revolute
  ``Joint(origin, axis, RotAxis)`` rotates about the line through ``origin``
  along ``axis`` (both in start-frame coordinates; KDL normalizes the axis).
* A segment's ``RigidBodyInertia`` is expressed in its *tip* frame, about the
  tip origin; ``RigidBodyInertia(m, c, Ic)`` takes ``Ic`` about the centre of
  mass ``c`` (rigidbodyinertia.cpp: ``I = Ic - m (c c^T - c.c E)``, the
  parallel-axis shift to the tip origin).
* ``ChainIdSolver_RNE`` works in tip coordinates and computes
  ``f[i] = I a + v x I v - f_ext[i]``: ``f_ext[i]`` is the wrench acting *on*
  segment i, in segment i's tip axes, about its tip origin.

Fixed joints are merged: the inertias of links attached through fixed joints
are added to the moving segment they ride on, fixed transforms before a moving
joint are folded into that joint's start-to-joint placement, and fixed joints
after the last moving joint (tool frames) are folded into the last segment's
``f_tip``.  The chain therefore has no Fixed segment, as
``ChainHdSolver_Vereshchagin`` requires.
"""
import xml.etree.ElementTree as ET

import numpy as np

try:
    import PyKDL as kdl
except ImportError as error:  # a missing oracle must fail, not skip
    raise ImportError(
        "PyKDL (Orocos KDL) cannot be imported; it is the second reference oracle for the "
        "serial-chain tests. Install it with scripts/setup.sh (Debian python3-pykdl, linked "
        f"into the venv through a .pth file). Original error: {error}") from error


# ---------------------------------------------------------------- small geometry helpers
def _floats(text, default):
    return np.array([float(x) for x in text.split()]) if text else np.array(default, dtype=float)


def _rpy_matrix(rpy):
    roll, pitch, yaw = rpy
    cr, sr, cp, sp, cy, sy = (np.cos(roll), np.sin(roll), np.cos(pitch), np.sin(pitch),
                              np.cos(yaw), np.sin(yaw))
    rx = np.array([[1, 0, 0], [0, cr, -sr], [0, sr, cr]])
    ry = np.array([[cp, 0, sp], [0, 1, 0], [-sp, 0, cp]])
    rz = np.array([[cy, -sy, 0], [sy, cy, 0], [0, 0, 1]])
    return rz @ ry @ rx


def _origin(element):
    """4x4 transform of an URDF <origin> child (identity when absent)."""
    transform = np.eye(4)
    tag = element.find("origin") if element is not None else None
    if tag is not None:
        transform[:3, :3] = _rpy_matrix(_floats(tag.get("rpy"), [0, 0, 0]))
        transform[:3, 3] = _floats(tag.get("xyz"), [0, 0, 0])
    return transform


def _inverse(transform):
    result = np.eye(4)
    result[:3, :3] = transform[:3, :3].T
    result[:3, 3] = -transform[:3, :3].T @ transform[:3, 3]
    return result


def to_kdl_frame(transform):
    rotation = kdl.Rotation(*transform[:3, :3].ravel())
    return kdl.Frame(rotation, kdl.Vector(*transform[:3, 3]))


def from_kdl_frame(frame):
    transform = np.eye(4)
    transform[:3, :3] = [[frame.M[r, c] for c in range(3)] for r in range(3)]
    transform[:3, 3] = [frame.p[i] for i in range(3)]
    return transform


def _link_inertia(link):
    """(mass, com, inertia about com) in the link frame, or None without <inertial>."""
    inertial = link.find("inertial")
    if inertial is None:
        return None
    placement = _origin(inertial)
    mass = float(inertial.find("mass").get("value"))
    tag = inertial.find("inertia")
    get = lambda key: float(tag.get(key, 0.0))  # noqa: E731
    principal = np.array([[get("ixx"), get("ixy"), get("ixz")],
                          [get("ixy"), get("iyy"), get("iyz")],
                          [get("ixz"), get("iyz"), get("izz")]])
    rotation = placement[:3, :3]
    return mass, placement[:3, 3], rotation @ principal @ rotation.T


def _combine(parts):
    """Sum of (mass, com, inertia about com) given in one frame: one (mass, com, Ic)."""
    mass = sum(m for m, _, _ in parts)
    if mass == 0.0:
        return 0.0, np.zeros(3), np.zeros((3, 3))
    com = sum(m * c for m, c, _ in parts) / mass
    inertia = np.zeros((3, 3))
    for m, c, ic in parts:
        d = c - com
        inertia += ic + m * (d @ d * np.eye(3) - np.outer(d, d))
    return mass, com, inertia


# ---------------------------------------------------------------- the chain
class KdlChain:
    """A ``PyKDL.Chain`` from ``root`` to ``tip`` of a URDF, plus KDL solvers.

    ``joint_names``: the chain's moving joints, root to tip (the order of every
    KDL joint array).  ``segment_links``: for each segment, the URDF link whose
    frame is the segment's tip frame (the tip link for the last segment).
    """

    def __init__(self, urdf_xml, root, tip, gravity=(0.0, 0.0, -9.81)):
        robot = ET.fromstring(urdf_xml)
        links = {link.get("name"): link for link in robot.findall("link")}
        joints = {}                      # child link -> joint element
        children = {name: [] for name in links}
        for joint in robot.findall("joint"):
            child, parent = joint.find("child").get("link"), joint.find("parent").get("link")
            joints[child] = joint
            children[parent].append(child)
        if root not in links or tip not in links:
            raise ValueError(f"unknown link {root!r} or {tip!r}")

        # Path root -> tip as a list of joint elements.
        path, link = [], tip
        while link != root:
            if link not in joints:
                raise ValueError(f"{tip!r} is not below {root!r}")
            path.append(joints[link])
            link = joints[link].find("parent").get("link")
        path.reverse()
        moving = [j for j in path if j.get("type") != "fixed"]
        if not moving:
            raise ValueError("the chain has no moving joint")
        for joint in path:
            if joint.get("type") not in ("fixed", "revolute", "continuous", "prismatic"):
                raise ValueError(f"joint type {joint.get('type')!r} is not supported here")
        self.joint_names = [j.get("name") for j in moving]

        # body (root or child link of a moving joint) of every link reached from root
        # through fixed joints, with the link's placement in that body's frame.
        def rigid_members(body):
            members, stack = [(body, np.eye(4))], [(body, np.eye(4))]
            while stack:
                link, placement = stack.pop()
                for child in children[link]:
                    joint = joints[child]
                    if joint.get("type") == "fixed":
                        item = (child, placement @ _origin(joint))
                        members.append(item)
                        stack.append(item)
            return members

        # Every moving joint below a chain body must be on the path (serial chain).
        bodies = [root] + [j.find("child").get("link") for j in moving]
        on_path = {j.get("name") for j in moving}
        for body in bodies:
            for link, _ in rigid_members(body):
                for child in children[link]:
                    joint = joints[child]
                    if joint.get("type") != "fixed" and joint.get("name") not in on_path:
                        raise ValueError(f"joint {joint.get('name')!r} branches off the chain: "
                                         "KDL chains are serial")

        # Placement of each link in its body frame (only the chain's bodies matter).
        self.link_body = {}              # link -> (body index: -1 root, k segment k; placement)
        for index, body in enumerate(bodies):
            for link, placement in rigid_members(body):
                self.link_body[link] = (index - 1, placement)
        tip_body, tip_in_body = self.link_body[tip]
        if tip_body != len(moving) - 1:
            raise ValueError(f"{tip!r} must be rigidly attached to the last moving link")

        self.chain = kdl.Chain()
        self.segment_links = []
        self.tip_from_body = []          # per segment: segment tip frame in its body frame
        previous_tip_in_body = np.eye(4)  # start frame of segment 0: the root link frame
        for k, joint in enumerate(moving):
            parent = joint.find("parent").get("link")
            parent_body, parent_in_body = self.link_body[parent]
            assert parent_body == k - 1
            # Joint frame at q = 0 in the segment's start frame (= previous tip frame).
            joint_frame = _inverse(previous_tip_in_body) @ parent_in_body @ _origin(joint)
            last = k == len(moving) - 1
            tip_in_own_body = tip_in_body if last else np.eye(4)
            f_tip = joint_frame @ tip_in_own_body
            axis = _floats(joint.find("axis").get("xyz") if joint.find("axis") is not None
                           else None, [1, 0, 0])
            axis = joint_frame[:3, :3] @ (axis / np.linalg.norm(axis))
            kind = kdl.Joint.TransAxis if joint.get("type") == "prismatic" else kdl.Joint.RotAxis
            kdl_joint = kdl.Joint(joint.get("name"), kdl.Vector(*joint_frame[:3, 3]),
                                  kdl.Vector(*axis), kind)
            # Inertia of every link riding on this body, in the segment's tip frame.
            body_to_tip = _inverse(tip_in_own_body)
            parts = []
            for link, placement in rigid_members(bodies[k + 1]):
                value = _link_inertia(links[link])
                if value is None:
                    continue
                mass, com, inertia = value
                in_tip = body_to_tip @ placement
                rotation = in_tip[:3, :3]
                parts.append((mass, rotation @ com + in_tip[:3, 3],
                              rotation @ inertia @ rotation.T))
            mass, com, ic = _combine(parts)
            rigid = kdl.RigidBodyInertia(
                mass, kdl.Vector(*com),
                kdl.RotationalInertia(ic[0, 0], ic[1, 1], ic[2, 2], ic[0, 1], ic[0, 2], ic[1, 2]))
            self.chain.addSegment(kdl.Segment(bodies[k + 1], kdl_joint, to_kdl_frame(f_tip), rigid))
            self.segment_links.append(tip if last else bodies[k + 1])
            self.tip_from_body.append(tip_in_own_body)
            previous_tip_in_body = tip_in_own_body

        self.nj = self.chain.getNrOfJoints()
        self.ns = self.chain.getNrOfSegments()
        self.gravity = kdl.Vector(*gravity)
        self.rne = kdl.ChainIdSolver_RNE(self.chain, self.gravity)
        self.dyn = kdl.ChainDynParam(self.chain, self.gravity)
        self.jac_solver = kdl.ChainJntToJacSolver(self.chain)
        self.fk = kdl.ChainFkSolverPos_recursive(self.chain)

    # ------------------------------------------------------------ conversions
    def _array(self, values):
        array = kdl.JntArray(self.nj)
        for i, value in enumerate(values):
            array[i] = float(value)
        return array

    @staticmethod
    def _numpy(array):
        return np.array([array[i] for i in range(array.rows())])

    def tip_poses(self, q):
        """4x4 pose of every segment tip frame in the root frame (KDL FK)."""
        # One call per segment: the List[Frame] overload of the binding fills a copy of
        # the list, leaving the caller's frames untouched.
        return [self.frame(q, segment) for segment in range(self.ns)]

    def frame(self, q, segment=-1):
        """4x4 pose of a segment tip (default: the chain tip) in the root frame."""
        frame = kdl.Frame()
        number = self.ns if segment < 0 else segment + 1
        assert self.fk.JntToCart(self._array(q), frame, number) >= 0
        return from_kdl_frame(frame)

    def segment_wrenches(self, q, wrenches):
        """Project wrenches ``{link: [f; t]}`` (root axes, about the link origin, acting on
        the robot) as KDL RNE ``f_ext``: per segment, tip axes, about the tip origin.
        Wrenches on links rigidly attached to the root are dropped (they do no work)."""
        result = [kdl.Wrench.Zero() for _ in range(self.ns)]
        if not wrenches:
            return result
        poses = self.tip_poses(q)
        for link, wrench in wrenches.items():
            segment, placement = self.link_body[link]
            if segment < 0:
                continue
            # Link origin in the segment tip frame (constant).
            r = (_inverse(self.tip_from_body[segment]) @ placement)[:3, 3]
            rotation = poses[segment][:3, :3]
            force = rotation.T @ np.asarray(wrench[:3], dtype=float)
            torque = rotation.T @ np.asarray(wrench[3:], dtype=float) + np.cross(r, force)
            result[segment] += kdl.Wrench(kdl.Vector(*force), kdl.Vector(*torque))
        return result

    # ------------------------------------------------------------ solvers
    def inverse_dynamics(self, q, qd, qdd, wrenches=None):
        torques = kdl.JntArray(self.nj)
        status = self.rne.CartToJnt(self._array(q), self._array(qd), self._array(qdd),
                                    self.segment_wrenches(q, wrenches), torques)
        assert status == 0, f"ChainIdSolver_RNE failed with {status}"
        return self._numpy(torques)

    def mass_matrix(self, q):
        mass = kdl.JntSpaceInertiaMatrix(self.nj)
        assert self.dyn.JntToMass(self._array(q), mass) == 0
        return np.array([[mass[r, c] for c in range(self.nj)] for r in range(self.nj)])

    def coriolis(self, q, qd):
        """C(q, qd) qd (no gravity)."""
        torques = kdl.JntArray(self.nj)
        assert self.dyn.JntToCoriolis(self._array(q), self._array(qd), torques) == 0
        return self._numpy(torques)

    def gravity_torques(self, q):
        torques = kdl.JntArray(self.nj)
        assert self.dyn.JntToGravity(self._array(q), torques) == 0
        return self._numpy(torques)

    def jacobian(self, q, segment=-1):
        """6 x nj Jacobian of a segment tip (default: the chain tip), reference point at
        that tip, base axes, rows [v; w]."""
        jacobian = kdl.Jacobian(self.nj)
        number = self.ns if segment < 0 else segment + 1
        assert self.jac_solver.JntToJac(self._array(q), jacobian, number) == 0
        return np.array([[jacobian[r, c] for c in range(self.nj)] for r in range(6)])
