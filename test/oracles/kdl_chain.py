"""A ``PyKDL.Chain`` built from URDF text, with fixed joints merged away.

There is no Python kdl_parser, so the chain is built here from the URDF text
with the standard library's ``xml.etree`` (never with this project's parser).
KDL conventions this relies on (orocos_kdl 1.5.1 source):

* A ``Segment`` is a ``Joint`` expressed in the segment's *start* frame (the
  previous segment's tip) plus ``f_tip``, the tip frame relative to the start
  frame at q = 0: ``Segment::pose(q) = joint.pose(q) * f_tip``.  A revolute
  ``Joint(origin, axis, RotAxis)`` rotates about the line through ``origin``
  along ``axis`` (both in start-frame coordinates; KDL normalizes the axis).
* A segment's ``RigidBodyInertia`` is expressed in its *tip* frame, about the
  tip origin; ``RigidBodyInertia(m, c, Ic)`` takes ``Ic`` about the centre of
  mass ``c`` (rigidbodyinertia.cpp: ``I = Ic - m (c c^T - c.c E)``, the
  parallel-axis shift to the tip origin).

Fixed joints are merged: the inertias of links attached through fixed joints
are added to the moving segment they ride on, fixed transforms before a moving
joint are folded into that joint's start-to-joint placement, and fixed joints
after the last moving joint (tool frames) are folded into the last segment's
``f_tip``.  The chain therefore has no Fixed segment, as
``ChainHdSolver_Vereshchagin`` requires.
"""
import xml.etree.ElementTree as ET

import numpy as np

from oracles.urdf_geometry import (combine_inertias, floats, inverse_transform, link_inertia,
                                   origin_transform)

from support.optional import require

# The second reference oracle of the serial-chain tests (scripts/setup.sh links Debian's
# python3-pykdl into the venv); where it is missing they skip (support.optional).
kdl = require("PyKDL")


def to_kdl_frame(transform):
    rotation = kdl.Rotation(*transform[:3, :3].ravel())
    return kdl.Frame(rotation, kdl.Vector(*transform[:3, 3]))


def from_kdl_frame(frame):
    transform = np.eye(4)
    transform[:3, :3] = [[frame.M[r, c] for c in range(3)] for r in range(3)]
    transform[:3, 3] = [frame.p[i] for i in range(3)]
    return transform


class SerialChain:
    """A ``PyKDL.Chain`` from ``root`` to ``tip`` of a URDF.

    ``joint_names``: the chain's moving joints, root to tip (the order of every
    KDL joint array).  ``segment_links``: for each segment, the URDF link whose
    frame is the segment's tip frame (the tip link for the last segment).
    ``link_body``: link -> (segment index, -1 for the root; placement in that
    segment's body frame).  ``tip_from_body``: per segment, its tip frame in its
    body frame.
    """

    def __init__(self, urdf_xml, root, tip):
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
                        item = (child, placement @ origin_transform(joint))
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
            joint_frame = (inverse_transform(previous_tip_in_body) @ parent_in_body
                           @ origin_transform(joint))
            last = k == len(moving) - 1
            tip_in_own_body = tip_in_body if last else np.eye(4)
            f_tip = joint_frame @ tip_in_own_body
            axis = floats(joint.find("axis").get("xyz") if joint.find("axis") is not None
                           else None, [1, 0, 0])
            axis = joint_frame[:3, :3] @ (axis / np.linalg.norm(axis))
            kind = kdl.Joint.TransAxis if joint.get("type") == "prismatic" else kdl.Joint.RotAxis
            kdl_joint = kdl.Joint(joint.get("name"), kdl.Vector(*joint_frame[:3, 3]),
                                  kdl.Vector(*axis), kind)
            # Inertia of every link riding on this body, in the segment's tip frame.
            body_to_tip = inverse_transform(tip_in_own_body)
            parts = []
            for link, placement in rigid_members(bodies[k + 1]):
                value = link_inertia(links[link])
                if value is None:
                    continue
                mass, com, inertia = value
                in_tip = body_to_tip @ placement
                rotation = in_tip[:3, :3]
                parts.append((mass, rotation @ com + in_tip[:3, 3],
                              rotation @ inertia @ rotation.T))
            mass, com, ic = combine_inertias(parts)
            rigid = kdl.RigidBodyInertia(
                mass, kdl.Vector(*com),
                kdl.RotationalInertia(ic[0, 0], ic[1, 1], ic[2, 2], ic[0, 1], ic[0, 2], ic[1, 2]))
            self.chain.addSegment(kdl.Segment(bodies[k + 1], kdl_joint, to_kdl_frame(f_tip), rigid))
            self.segment_links.append(tip if last else bodies[k + 1])
            self.tip_from_body.append(tip_in_own_body)
            previous_tip_in_body = tip_in_own_body
