"""Serial chains in a robot tree: the root-to-tip path, branch detection, default end-effector."""
from ..errors import NonSerialChainError, UnknownNameError
from ..multibody.joints import is_moving


class LinkTree:
    """The URDF link tree of a model (children in document order)."""

    def __init__(self, model):
        description = model.description
        self.root = description.root
        self.joints = description.joints
        self.parent_joint = {joint.child: joint for joint in description.joints.values()}
        self.children = {}
        for joint in description.joints.values():
            self.children.setdefault(joint.parent, []).append(joint)
        self._moves = {}
        self.links = model.frame_names

    def path(self, tip):
        """Joints from the root link to ``tip``, root first."""
        if tip not in self.links:
            raise UnknownNameError("link", tip, self.links)
        joints = []
        link = tip
        while link != self.root:
            joint = self.parent_joint[link]
            joints.append(joint)
            link = joint.parent
        return joints[::-1]

    def has_moving(self, link):
        """Does the subtree below ``link`` hold a moving joint?"""
        if link not in self._moves:
            # Iterative post-order, for deep trees.
            stack, order = [link], []
            while stack:
                current = stack.pop()
                order.append(current)
                stack.extend(j.child for j in self.children.get(current, []))
            for current in reversed(order):
                self._moves[current] = any(
                    is_moving(j.type) or self._moves[j.child] for j in self.children.get(current, []))
        return self._moves[link]

    def moving_branches(self, link):
        """Child joints of ``link`` whose subtree (the joint included) moves."""
        return [j for j in self.children.get(link, []) if is_moving(j.type) or self.has_moving(j.child)]

    def depth(self, link):
        return len(self.path(link))


def serial_path(model, tip):
    """Joints from root to ``tip`` if the robot's moving joints up to ``tip`` form one chain.

    Raises :class:`NonSerialChainError` naming the link where moving joints
    branch off the root-to-tip path (joints beyond ``tip`` do not matter).
    """
    tree = LinkTree(model)
    joints = tree.path(tip)
    on_path = {j.name for j in joints}
    for joint in joints:
        link = joint.parent
        others = [j for j in tree.moving_branches(link) if j.name not in on_path]
        if others:
            raise NonSerialChainError(
                f"the robot is not a serial chain up to {tip!r}: it branches at link {link!r}, "
                f"where {', '.join(repr(j.name) for j in others)} lead(s) off the path to {tip!r} "
                f"through {joint.name!r}", branch_link=link)
    return joints


def default_tip(model):
    """The end-effector link of a serial robot: the deepest link after the last moving joint.

    Raises :class:`NonSerialChainError` naming the branch point if the moving
    joints do not form one chain.
    """
    tree = LinkTree(model)
    link = tree.root
    while True:
        branches = tree.moving_branches(link)
        if len(branches) > 1:
            raise NonSerialChainError(
                f"the robot branches at link {link!r} into {', '.join(repr(j.child) for j in branches)};"
                " name the end-effector link explicitly", branch_link=link)
        if not branches:
            break
        link = branches[0].child
    # Beyond the last moving joint only fixed joints remain: take the deepest link.
    best, best_depth, stack = link, 0, [(link, 0)]
    while stack:
        current, depth = stack.pop()
        if depth > best_depth:
            best, best_depth = current, depth
        stack.extend((j.child, depth + 1) for j in reversed(tree.children.get(current, [])))
    return best
