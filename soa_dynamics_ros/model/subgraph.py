"""Subgraph queries: dynamics of a subset of joints with the others locked (DARTS-style).

A locked joint holds its position from ``q`` and has zero rate; its hinge
carries the subtree rigidly in the recursions.  Vectors other than ``q`` are
sized and ordered as :attr:`Subgraph.joint_names`; ``q`` is always the full
model configuration (it places the locked joints).
"""
from . import constrained
from ..algorithms.kinematics import body_placements, hinge_jacobian
from ..algorithms.mass_matrix import mass_matrix as composite_body_mass_matrix
from .evaluation import hinge_positions, select_joints


class Subgraph:
    def __init__(self, model, joint_names):
        self.model = model
        self.selection = select_joints(model.tree, joint_names)

    @property
    def joint_names(self):
        return list(self.selection.names)

    @property
    def dof(self):
        return len(self.selection.names)

    def mass_matrix(self, q):
        with self.model.parameters_lock:
            tree = self.model.tree
            return self.selection.coordinates.joint_mass_matrix(
                composite_body_mass_matrix(tree, hinge_positions(tree, q)))

    def jacobian(self, q, frame):
        tree = self.model.tree
        target = tree.frame(frame)
        placements = body_placements(tree, hinge_positions(tree, q))
        return self.selection.coordinates.joint_columns(hinge_jacobian(tree, placements, target))

    def forward_dynamics(self, q, qd, tau, wrenches=None):
        with self.model.parameters_lock:
            return constrained.selected_forward_dynamics(self.model, self.selection, q, qd, tau,
                                                         wrenches)

    def task_space_inertia(self, q, frame, part="full", damping=None, return_info=False):
        with self.model.parameters_lock:
            return constrained.task_space_inertia(self.model, self.selection, q, frame, part,
                                                  damping, return_info)

    def hybrid_dynamics(self, q, qd, constraints, tau=None, wrenches=None):
        with self.model.parameters_lock:
            return constrained.hybrid_dynamics(self.model, self.selection, q, qd, constraints,
                                               tau, wrenches)
