"""The multibody structure: bodies joined by hinges in a tree.

The parsed :class:`BodyTree` is constant for a robot: structure, placements,
joint models and the URDF's inertias.  Data that changes (payloads) never
edits it: :meth:`BodyTree.with_inertia` gives a view that shares the
structure and carries other inertias, and the recursions take such a view.

Links joined by fixed joints are merged into one rigid *body* (their inertias
added), but every link stays addressable as a *frame* on its body.  Body 0 is
the root link, welded to the world.  Bodies are numbered so that a parent
always precedes its children (``parent[i] < i``): base-to-tips scatter
recursions run ``for i in 1..n``, tips-to-base gathers run backwards.

Each moving body ``i`` has one hinge with one coordinate ``q_hinge[i]``; how
it moves is its joint model (:mod:`.joints`).  The generalized coordinates
``q`` hold the independent joints only; :attr:`BodyTree.coordinates` (a
:class:`~.coordinates.CoordinateMap`) maps them to hinges, mimic joints included.
"""
import copy
from dataclasses import dataclass

import numpy as np

from ..errors import UnknownNameError
from .coordinates import CoordinateMap
from .joints import joint_model
from .spatial import motion_transform, spatial_inertia, transformed_inertia


@dataclass
class Frame:
    """A URDF link: the body it rides on and its placement in that body's frame."""
    name: str
    body: int
    rotation: np.ndarray
    translation: np.ndarray


@dataclass
class Joint:
    """An independent or mimic URDF joint that moves a body."""
    name: str
    type: str              # a moving type of :data:`~.joints.JOINT_MODELS`
    body: int              # the body this joint's hinge moves
    lower: float
    upper: float
    effort: float
    velocity: float
    damping: float
    friction: float
    mimic_of: str = None   # name of the independent joint this one follows


class BodyTree:
    """Structure and constants of a fixed-base multibody tree."""

    def __init__(self, description):
        self.name = description.name
        self.root_link = description.root
        children = {}
        for joint in description.joints.values():
            children.setdefault(joint.parent, []).append(joint)

        self.parent = [-1]
        self.joint_model = [None]
        self.hinge_axis = [np.zeros(3)]
        self.hinge_map = [np.zeros(6)]
        # Placement of each body's hinge (joint) frame in its parent body's frame.
        self.hinge_rotation = [np.eye(3)]
        self.hinge_translation = [np.zeros(3)]
        self.body_link = [description.root]
        link_inertias = [[]]
        self.frames = {description.root: Frame(description.root, 0, np.eye(3), np.zeros(3))}
        joints_by_body = [None]

        # Depth-first, children in document order, so that parent[i] < i.  An
        # explicit stack, because trees may be deeper than Python's recursion limit.
        link_inertias[0].append((description.links[description.root], np.eye(3), np.zeros(3)))
        stack = [(joint, 0, np.eye(3), np.zeros(3))
                 for joint in reversed(children.get(description.root, []))]
        while stack:
            joint, body, rotation, translation = stack.pop()
            child = description.links[joint.child]
            model = joint_model(joint.type)
            # The joint frame, placed in the frame of the body it hangs from.
            joint_rotation = _snap(rotation @ joint.origin_rotation)
            joint_translation = _snap(translation + rotation @ joint.origin_translation)
            if not model.moving:
                self.frames[child.name] = Frame(child.name, body, joint_rotation, joint_translation)
                link_inertias[body].append((child, joint_rotation, joint_translation))
                child_body, child_rotation, child_translation = body, joint_rotation, joint_translation
            else:
                child_body = len(self.parent)
                self.parent.append(body)
                self.joint_model.append(model)
                self.hinge_axis.append(joint.axis)
                self.hinge_map.append(model.hinge_map(joint.axis))
                self.hinge_rotation.append(joint_rotation)
                self.hinge_translation.append(joint_translation)
                self.body_link.append(child.name)
                link_inertias.append([(child, np.eye(3), np.zeros(3))])
                self.frames[child.name] = Frame(child.name, child_body, np.eye(3), np.zeros(3))
                joints_by_body.append(joint)
                child_rotation, child_translation = np.eye(3), np.zeros(3)
            stack.extend((grandchild, child_body, child_rotation, child_translation)
                         for grandchild in reversed(children.get(child.name, [])))
        self.nb = len(self.parent)
        self.hinge_map = np.array(self.hinge_map)
        # Spatial inertia M(k) of each body about its frame origin, from the URDF.
        self.body_inertia = np.array([self._merged_inertia(parts) for parts in link_inertias])
        self._singular_below = _singular_threshold(self.body_inertia)
        self.coordinates, self.joint_names = CoordinateMap.from_mimic_chains([
            (joint.name, None if joint.mimic is None else (
                joint.mimic.joint, joint.mimic.multiplier, joint.mimic.offset))
            for joint in joints_by_body[1:]])
        masters = self.coordinates.master
        self.joints = [Joint(joint.name, joint.type, body, joint.lower, joint.upper, joint.effort,
                             joint.velocity, joint.damping, joint.friction,
                             mimic_of=None if joint.mimic is None
                             else self.joint_names[masters[body]])
                       for body, joint in enumerate(joints_by_body[1:], start=1)]
        self.dof = self.coordinates.dof

    def with_inertia(self, body_inertia, singular_threshold=None):
        """A view of this tree with other body inertias (payloads, or symbolic ones).

        The structure is shared, not copied.  ``singular_threshold`` is needed
        only when ``body_inertia`` is symbolic (the kernels take it as an input).
        """
        view = copy.copy(self)
        view.body_inertia = body_inertia
        view._singular_below = (_singular_threshold(body_inertia) if singular_threshold is None
                                else singular_threshold)
        return view

    def singular_inertia_threshold(self):
        """Articulated inertia about a hinge below which it counts as zero.

        A hinge whose articulated inertia is this small against the robot's has
        none at all (round-off of an exact zero): dividing by it would give inf.
        """
        return self._singular_below

    @property
    def has_mimic(self):
        """Whether mimic joints couple hinges (see :attr:`CoordinateMap.couples_hinges`)."""
        return self.coordinates.couples_hinges

    def frame(self, name):
        """The :class:`Frame` of a link; :class:`UnknownNameError` names the known ones."""
        try:
            return self.frames[name]
        except (KeyError, TypeError):
            raise UnknownNameError("frame", name, self.frames) from None

    @staticmethod
    def _merged_inertia(parts):
        total = np.zeros((6, 6))
        for link, rotation, translation in parts:
            if link.has_inertial:
                own = spatial_inertia(link.mass, link.com, link.inertia)
                total += transformed_inertia(motion_transform(rotation, translation), own)
        return total


def _singular_threshold(body_inertia):
    return 1e-13 * max(np.abs(body_inertia).max(), 1e-300)


def _snap(values):
    """Round-off of exact zeros and ones (cos(pi/2) = 6e-17) back to them.

    URDF placements are mostly quarter turns given as rpy; the generated
    kernels fold exact zeros and ones, which round-off would otherwise hide.
    The change is below 1e-15, far under any tolerance of the model.
    """
    snapped = np.where(np.abs(values) < 1e-15, 0.0, values)
    return np.where(np.abs(np.abs(snapped) - 1.0) < 1e-15, np.sign(snapped), snapped)
