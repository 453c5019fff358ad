"""What the model layer's modules share per call: joint selections and one call's state.

A *joint selection* is the set of joints a query moves; the others are locked
at their current position with zero rate (DARTS' subgraph queries).  An
:class:`Evaluation` holds one call's validated inputs in hinge space, read
from one snapshot of the model (its tree view, so payloads, and gravity):
:mod:`.constrained`, :mod:`.dense` and :mod:`.subgraph` take it instead of
reaching into :class:`~.robot_model.RobotModel`.
"""
from dataclasses import dataclass
import functools

import numpy as np

from ..algorithms.external_forces import body_forces, gravity_root_acceleration
from ..algorithms.kinematics import body_placements
from ..errors import InvalidInputError, UnknownNameError
from ..multibody.coordinates import CoordinateMap
from ..validation import as_vector


@dataclass(frozen=True)
class JointSelection:
    names: tuple                 # the selected joints, in model order
    columns: np.ndarray          # their indices in RobotModel.joint_names
    coordinates: CoordinateMap   # the tree's coordinate map restricted to them
    free: np.ndarray             # per body: is its hinge moved by a selected joint?


def select_joints(tree, names=None):
    """The :class:`JointSelection` of ``names`` (a list of joint names; None: every joint)."""
    if names is None:
        columns = np.arange(tree.dof)
    else:
        if isinstance(names, str) or not all(isinstance(name, str) for name in names):
            raise InvalidInputError("a joint subset must be a list of joint names")
        if len(set(names)) != len(names):
            raise InvalidInputError(f"joint subset {list(names)} repeats a name")
        index = {name: i for i, name in enumerate(tree.joint_names)}
        unknown = [name for name in names if name not in index]
        if unknown:
            raise UnknownNameError("joint", unknown[0], tree.joint_names)
        columns = np.array(sorted(index[name] for name in names), dtype=int)
    coordinates = tree.coordinates.restricted(columns)
    return JointSelection(tuple(tree.joint_names[c] for c in columns), columns, coordinates,
                          coordinates.free_hinges())


def hinge_positions(tree, q):
    """q_hinge of a model configuration ``q``, validated (length, finite, bounded)."""
    return tree.coordinates.hinge_positions(as_vector("q", q, tree.dof))


class Evaluation:
    """One call's hinge-space state (``qd`` and ``tau`` sized as the selection)."""

    def __init__(self, tree, gravity, selection, q, qd=None, tau=None, wrenches=None):
        k = len(selection.names)
        self.tree = tree
        self.gravity = gravity
        self.selection = selection
        self.q_hinge = hinge_positions(tree, q)
        self.qd = np.zeros(k) if qd is None else as_vector("qd", qd, k)
        self.tau = np.zeros(k) if tau is None else as_vector("tau", tau, k)
        self.qd_hinge = selection.coordinates.hinge_rates(self.qd)
        self.body_forces = body_forces(tree, self.q_hinge, wrenches,
                                       self.placements if isinstance(wrenches, dict) and wrenches
                                       else None)
        self.root_acceleration = gravity_root_acceleration(gravity)

    @functools.cached_property
    def placements(self):
        """Body placements at ``q_hinge``, computed once and only when a query needs them."""
        return body_placements(self.tree, self.q_hinge)
