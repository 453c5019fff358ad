"""Subgraph queries: dynamics of a subset of joints with the others locked (DARTS-style).

A locked joint holds its position from ``q`` and has zero rate; its hinge
carries the subtree rigidly in the recursions.  Vectors other than ``q`` are
sized and ordered as :attr:`Subgraph.joint_names`; ``q`` is always the full
model configuration (it places the locked joints).
"""

from . import constrained
from ..algorithms.forward_dynamics import forward_dynamics as articulated_body_dynamics
from ..algorithms.kinematics import body_placements, hinge_jacobian
from ..algorithms.mass_matrix import mass_matrix as composite_body_mass_matrix


class Subgraph:
    def __init__(self, model, joint_names):
        self.model = model
        self.selection = constrained.select_joints(model, joint_names)

    @property
    def joint_names(self):
        return list(self.selection.names)

    @property
    def dof(self):
        return len(self.selection.names)

    def mass_matrix(self, q):
        g = self.selection.hinge_map
        return g.T @ composite_body_mass_matrix(self.model.tree, self.model._hinge_positions(q)) @ g

    def jacobian(self, q, frame):
        target = self.model._frame(frame)
        placements = body_placements(self.model.tree, self.model._hinge_positions(q))
        return hinge_jacobian(self.model.tree, placements, target) @ self.selection.hinge_map

    def forward_dynamics(self, q, qd, tau, wrenches=None):
        model, selection = self.model, self.selection
        if model.tree.has_mimic:
            return constrained.dense_forward_dynamics(model, selection, q, qd, tau, wrenches)
        state = constrained._State(model, selection, q, qd, tau, wrenches)
        qdd = articulated_body_dynamics(model.tree, state.q_hinge, state.qd_hinge,
                                        selection.hinge_map @ state.tau,
                                        model._root_acceleration(), state.body_forces,
                                        selection.free)
        return selection.hinge_map.T @ qdd

    def task_space_inertia(self, q, frame, part="full", damping=None, return_info=False):
        return constrained.task_space_inertia(self.model, self.selection, q, frame, part, damping,
                                              return_info)

    def hybrid_dynamics(self, q, qd, constraints, tau=None, wrenches=None):
        return constrained.hybrid_dynamics(self.model, self.selection, q, qd, constraints, tau,
                                           wrenches)
