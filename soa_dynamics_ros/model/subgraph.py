"""Subgraph queries: dynamics of a subset of joints with the others locked (DARTS-style).

A locked joint holds its position from ``q`` and has zero rate; its hinge
carries the subtree rigidly in the recursions.  Vectors other than ``q`` are
sized and ordered as :attr:`Subgraph.joint_names`; ``q`` is always the full
model configuration (it places the locked joints).
"""
import numpy as np

from . import constrained
from . import derivatives
from ..algorithms.kinematics import body_placements, hinge_jacobian
from ..algorithms.mass_matrix import mass_matrix as composite_body_mass_matrix
from ..validation import as_samples
from .evaluation import hinge_positions, select_joints


_NDARRAY = np.ndarray


class Subgraph:
    def __init__(self, model, joint_names):
        self.model = model
        self.selection = select_joints(model.tree, joint_names)
        self._base = self._restricted = None
        self._derivatives_of, self._derivative_functions = None, {}

    def _restricted_kernels(self):
        """``(compiled tree, p)`` of the generic module on this selection, or ``(None, None)``."""
        base, params = self.model.generic_kernels()
        if base is None:
            return None, None
        if self._base is not base:
            self._restricted, self._base = base.restricted(self.selection.coordinates), base
        return self._restricted, params

    def _compiled_answer(self, name, arguments, *bound):
        """Generic compiled function ``name`` on this selection, or None; anything it
        declines goes to the numpy path, which names it.  (The module function is called
        directly: binding it per call cost as much as a small robot's recursion.)"""
        compiled, params = self._restricted_kernels()
        if compiled is None:
            return None
        result = getattr(compiled.module, name)(compiled.model, *bound, *arguments, params)
        return result if type(result) is _NDARRAY else None

    @property
    def joint_names(self):
        return list(self.selection.names)

    @property
    def dof(self):
        return len(self.selection.names)

    def mass_matrix(self, q):
        mass = self._compiled_answer("mass_matrix", (q,))
        if mass is not None:
            return mass
        with self.model.parameters_lock:
            tree = self.model.tree
            return self.selection.coordinates.joint_mass_matrix(
                composite_body_mass_matrix(tree, hinge_positions(tree, q)))

    def jacobian(self, q, frame):
        base, _ = self.model.generic_kernels()
        if base is not None and type(frame) is str and frame in base.frame_index:
            jacobian = self._compiled_answer("jacobian", (q,), base.frame_index[frame])
            if jacobian is not None:
                return jacobian
        tree = self.model.tree
        target = tree.frame(frame)
        placements = body_placements(tree, hinge_positions(tree, q))
        return self.selection.coordinates.joint_columns(hinge_jacobian(tree, placements, target))

    def forward_dynamics(self, q, qd, tau, wrenches=None):
        base, _ = self.model.generic_kernels()
        if base is not None and (wrenches is None or (type(wrenches) is dict and not wrenches)):
            qdd = self._compiled_answer("forward_dynamics", (q, qd, tau))
        elif base is not None:
            qdd = self._compiled_answer("forward_dynamics_wrenches", (q, qd, tau, wrenches))
        else:
            qdd = None
        if qdd is not None:
            return qdd
        with self.model.parameters_lock:
            return constrained.selected_forward_dynamics(self.model, self.selection, q, qd, tau,
                                                         wrenches)

    def task_space_inertia(self, q, frame, part="full", damping=None, return_info=False):
        with self.model.parameters_lock:
            return constrained.task_space_inertia(self.model, self.selection, q, frame, part,
                                                  damping, return_info,
                                                  kernels=self._restricted_kernels())

    def task_space_inertia_info(self, q, frame, part="full", damping=None):
        """See :meth:`RobotModel.task_space_inertia_info`."""
        return self.task_space_inertia(q, frame, part, damping, True)

    def hybrid_dynamics(self, q, qd, constraints, tau=None, wrenches=None):
        return constrained.hybrid_dynamics(self.model, self.selection, q, qd, constraints,
                                           tau, wrenches, kernels=self._restricted_kernels())

    # Derivatives (see RobotModel.inverse_dynamics_derivatives): against the selected
    # joints only; the locked ones hold their positions from q.
    def _derivative_kernels(self):
        """``(name -> generic function on this selection, p)``; empty without the generic
        module."""
        compiled, params = self._restricted_kernels()
        if compiled is None:
            return {}, None
        if self._derivatives_of is not compiled:
            self._derivative_functions = {name: compiled.function(name)
                                          for name in derivatives.COMPILED_FUNCTIONS}
            self._derivatives_of = compiled
        return self._derivative_functions, params

    def _compiled_derivatives(self, name, vectors, wrenches=None):
        functions, params = self._derivative_kernels()
        return derivatives.compiled_answer(functions, name, vectors, wrenches, params)

    def inverse_dynamics_derivatives(self, q, qd, qdd, wrenches=None):
        both = self._compiled_derivatives("inverse_dynamics_derivatives", (q, qd, qdd), wrenches)
        if both is not None:
            return both
        with self.model.parameters_lock:
            return derivatives.inverse_dynamics_derivatives(self.model, self.selection, q, qd,
                                                            qdd, wrenches)

    def forward_dynamics_derivatives(self, q, qd, tau, wrenches=None):
        three = self._compiled_derivatives("forward_dynamics_derivatives", (q, qd, tau), wrenches)
        if three is not None:
            return three
        with self.model.parameters_lock:
            return derivatives.forward_dynamics_derivatives(self.model, self.selection, q, qd,
                                                            tau, wrenches)

    def gravity_derivatives(self, q):
        derivative = self._compiled_derivatives("gravity_derivatives", (q,))
        if derivative is not None:
            return derivative
        with self.model.parameters_lock:
            return derivatives.gravity_derivatives(self.model, self.selection, q)

    def _samples(self, Q, rates):
        """Validated batch arrays: Q (N, model dof), the others (N, subgraph dof)."""
        Q = as_samples("Q", Q, self.model.dof)
        return (Q,) + tuple(as_samples(name, value, self.dof, len(Q)) for name, value in rates)

    def _batch(self, name, single, arrays):
        functions, params = self._derivative_kernels()
        return derivatives.run_batch(functions.get(name + "_batch"), params,
                                     self.model.parameters_lock, name, single, arrays, self.dof)

    def inverse_dynamics_derivatives_batch(self, Q, QD, QDD):
        return self._batch("inverse_dynamics_derivatives", self.inverse_dynamics_derivatives,
                           self._samples(Q, (("QD", QD), ("QDD", QDD))))

    def forward_dynamics_derivatives_batch(self, Q, QD, TAU):
        return self._batch("forward_dynamics_derivatives", self.forward_dynamics_derivatives,
                           self._samples(Q, (("QD", QD), ("TAU", TAU))))

    def gravity_derivatives_batch(self, Q):
        return self._batch("gravity_derivatives", self.gravity_derivatives, self._samples(Q, ()))
