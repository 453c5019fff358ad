"""The multibody structure: bodies joined by hinges in a tree.

This is the model half of the model/data split: everything here is constant
for a robot (structure, placements, inertias); the algorithms take it plus the
joint state and keep nothing between calls.

Links joined by fixed joints are merged into one rigid *body* (their inertias
added), but every link stays addressable as a *frame* on its body.  Body 0 is
the root link, welded to the world.  Bodies are numbered so that a parent
always precedes its children (``parent[i] < i``): base-to-tips scatter
recursions run ``for i in 1..n``, tips-to-base gathers run backwards.

Each moving body ``i`` has one hinge with one coordinate ``q_hinge[i]``.  The
generalized coordinates ``q`` hold the independent joints only; a mimic
joint's hinge coordinate is ``multiplier * q[master] + offset``.  In operator
form ``q_hinge = G q + offset``, so ``qd_hinge = G qd`` and generalized forces
fold back as ``tau = G^T tau_hinge``.
"""
from dataclasses import dataclass
import numpy as np

from ..errors import URDFError
from .spatial import motion_transform, spatial_inertia

REVOLUTE, PRISMATIC = 0, 1


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
    type: str              # 'revolute', 'continuous' or 'prismatic'
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
        self.hinge_type = [None]
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
            # The joint frame, placed in the frame of the body it hangs from.
            joint_rotation = _snap(rotation @ joint.origin_rotation)
            joint_translation = _snap(translation + rotation @ joint.origin_translation)
            if joint.type == "fixed":
                self.frames[child.name] = Frame(child.name, body, joint_rotation, joint_translation)
                link_inertias[body].append((child, joint_rotation, joint_translation))
                child_body, child_rotation, child_translation = body, joint_rotation, joint_translation
            else:
                child_body = len(self.parent)
                self.parent.append(body)
                self.hinge_type.append(PRISMATIC if joint.type == "prismatic" else REVOLUTE)
                self.hinge_axis.append(joint.axis)
                # Hinge map H: the spatial motion of unit joint rate, in the body frame.
                column = np.zeros(6)
                if joint.type == "prismatic":
                    column[:3] = joint.axis
                else:
                    column[3:] = joint.axis
                self.hinge_map.append(column)
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
        # Spatial inertia M(k) of each body about its frame origin, from the URDF
        # alone; ``body_inertia`` is what the algorithms use (payloads included).
        self.urdf_inertia = np.array([self._merged_inertia(parts) for parts in link_inertias])
        self.body_inertia = self.urdf_inertia.copy()
        self._build_coordinates(description, joints_by_body)

    def singular_inertia_threshold(self):
        """Articulated inertia about a hinge below which it counts as zero.

        A hinge whose articulated inertia is this small against the robot's has
        none at all (round-off of an exact zero): dividing by it would give inf.
        """
        return 1e-13 * max(np.abs(self.body_inertia).max(), 1e-300)

    @staticmethod
    def _merged_inertia(parts):
        total = np.zeros((6, 6))
        for link, rotation, translation in parts:
            if link.has_inertial:
                own = spatial_inertia(link.mass, link.com, link.inertia)
                x = motion_transform(rotation, translation)
                total += x.T @ own @ x
        return total

    def _build_coordinates(self, description, joints_by_body):
        """Independent joints, mimic folding (the map G) and joint metadata."""
        self.joints = []
        master_of = {}
        for body in range(1, self.nb):
            joint = joints_by_body[body]
            master, multiplier, offset = self._mimic_chain(description, joint)
            master_of[body] = (master, multiplier, offset)
            self.joints.append(Joint(
                joint.name, joint.type, body, joint.lower, joint.upper, joint.effort,
                joint.velocity, joint.damping, joint.friction,
                mimic_of=None if joint.mimic is None else master))
        independent = [joint.name for joint in self.joints if joint.mimic_of is None]
        index = {name: i for i, name in enumerate(independent)}
        self.joint_names = independent
        self.dof = len(independent)
        self.hinge_from_joint = np.zeros((self.nb, self.dof))
        self.hinge_offset = np.zeros(self.nb)
        for body, (master, multiplier, offset) in master_of.items():
            self.hinge_from_joint[body, index[master]] = multiplier
            self.hinge_offset[body] = offset
        self.has_mimic = any(joint.mimic_of for joint in self.joints)

    # Without mimic joints G is the identity below a zero root row (body i moves
    # joint i - 1): these apply it by slicing, never as a product with a dense
    # nb x dof matrix, which costs O(n^2) memory and O(n^3) time on a large tree.
    def hinge_positions(self, q):
        """q_hinge = G q + offset, for a validated ``q``."""
        if self.has_mimic:
            return self.hinge_from_joint @ q + self.hinge_offset
        return np.concatenate(([0.0], q))

    def hinge_rates(self, rates):
        """qd_hinge = G qd (also accelerations and torques fanned out to hinges)."""
        if self.has_mimic:
            return self.hinge_from_joint @ rates
        return np.concatenate(([0.0], rates))

    def joint_forces(self, hinge_forces):
        """tau = G^T tau_hinge; also folds hinge accelerations of a mimic-free tree."""
        if self.has_mimic:
            return self.hinge_from_joint.T @ hinge_forces
        return hinge_forces[1:]

    def joint_columns(self, hinge_matrix):
        """A @ G for any matrix A with one column per hinge (a Jacobian)."""
        if self.has_mimic:
            return hinge_matrix @ self.hinge_from_joint
        return hinge_matrix[:, 1:]

    def joint_mass_matrix(self, hinge_mass):
        """G^T M G; without mimic joints a view of ``hinge_mass`` (no copy of n x n)."""
        if self.has_mimic:
            return self.hinge_from_joint.T @ hinge_mass @ self.hinge_from_joint
        return hinge_mass[1:, 1:]

    @staticmethod
    def _mimic_chain(description, joint):
        """Root master of ``joint`` and the affine map from it: ``q = m q_master + o``."""
        multiplier, offset = 1.0, 0.0
        current, seen = joint, {joint.name}
        while current.mimic is not None:
            # q_current = m_c q_next + o_c, with q_next itself affine in the master.
            offset += multiplier * current.mimic.offset
            multiplier *= current.mimic.multiplier
            current = description.joints[current.mimic.joint]
            if current.name in seen:
                raise URDFError(f"mimic joints form a cycle through {joint.name!r}",
                                "mimic", joint.line)
            seen.add(current.name)
        return current.name, multiplier, offset


def _snap(values):
    """Round-off of exact zeros and ones (cos(pi/2) = 6e-17) back to them.

    URDF placements are mostly quarter turns given as rpy; the generated
    kernels fold exact zeros and ones, which round-off would otherwise hide.
    The change is below 1e-15, far under any tolerance of the model.
    """
    snapped = np.where(np.abs(values) < 1e-15, 0.0, values)
    return np.where(np.abs(np.abs(snapped) - 1.0) < 1e-15, np.sign(snapped), snapped)
