"""Derivatives of the dynamics for planners, on a joint selection (the numpy path).

The hinge-space recursion is :mod:`soa_dynamics_ros.algorithms.derivatives`;
here its nb x nb results fold onto the selected joints.  A hinge follows its
joint as ``q_hinge = G q + offset`` (mimic joints), so every derivative folds as
``G^T D G``.  Locked joints of a selection hold their positions and have zero
rate; they are not differentiated.  Wrenches are constant in root-frame axes
about each link origin, so turning a link turns the wrench in its frame: the
derivative against ``q`` includes that term (Pinocchio's external forces are
fixed in the joint frames instead and have none).

Forward dynamics derivatives come from the inverse ones at ``qdd = FD(q, qd, tau)``:
differentiating ``ID(q, qd, FD(q, qd, tau)) = tau`` gives
``dqdd/dq = -M^-1 dtau/dq``, ``dqdd/dqd = -M^-1 dtau/dqd`` and ``dqdd/dtau = M^-1``,
solved with one Cholesky factor of M (:class:`SingularDynamicsError` when M is
not positive definite).

Callers hold the model's parameters lock.
"""
import numpy as np

from ..algorithms import derivatives as recursion
from ..algorithms.external_forces import body_force_turning
from ..algorithms.mass_matrix import mass_matrix
from ..validation import as_vector
from . import dense
from .constrained import dynamics_for
from .evaluation import Evaluation


def _fold(selection, hinge_matrix):
    return np.ascontiguousarray(selection.coordinates.joint_mass_matrix(hinge_matrix))


def _inverse_at(evaluation, qdd, wrenches):
    selection = evaluation.selection
    turning = None if evaluation.body_forces is None else body_force_turning(
        evaluation.tree, evaluation.q_hinge, wrenches, evaluation.placements)
    dtau_dq, dtau_dqd = recursion.inverse_dynamics_derivatives(
        evaluation.tree, evaluation.q_hinge, evaluation.qd_hinge,
        selection.coordinates.hinge_rates(qdd), evaluation.root_acceleration,
        evaluation.body_forces, turning)
    return _fold(selection, dtau_dq), _fold(selection, dtau_dqd)


def inverse_dynamics_derivatives(model, selection, q, qd, qdd, wrenches=None):
    """``(dtau/dq, dtau/dqd)`` of the selected joints, each k x k."""
    evaluation = Evaluation(model.tree, model.gravity, selection, q, qd, None, wrenches)
    return _inverse_at(evaluation, as_vector("qdd", qdd, len(selection.names)), wrenches)


def forward_dynamics_derivatives(model, selection, q, qd, tau, wrenches=None):
    """``(dqdd/dq, dqdd/dqd, dqdd/dtau)`` of the selected joints, each k x k."""
    k = len(selection.names)
    tau = as_vector("tau", tau, k)
    evaluation = Evaluation(model.tree, model.gravity, selection, q, qd, tau, wrenches)
    qdd = dynamics_for(selection).forward_dynamics(evaluation)
    dtau_dq, dtau_dqd = _inverse_at(evaluation, qdd, wrenches)
    mass = _fold(selection, mass_matrix(evaluation.tree, evaluation.q_hinge))
    solved = dense.solve_mass(mass, np.hstack((dtau_dq, dtau_dqd, np.eye(k))))
    return -solved[:, :k], -solved[:, k:2 * k], np.ascontiguousarray(solved[:, 2 * k:])


def gravity_derivatives(model, selection, q):
    """``dg/dq`` of the selected joints, k x k (symmetric: the Hessian of the potential)."""
    evaluation = Evaluation(model.tree, model.gravity, selection, q)
    return _fold(selection, recursion.gravity_derivatives(evaluation.tree, evaluation.q_hinge,
                                                          evaluation.root_acceleration))


# The generic module's functions (kernels/generic_derivatives.c) models and subgraphs bind.
COMPILED_FUNCTIONS = (
    "inverse_dynamics_derivatives", "inverse_dynamics_derivatives_wrenches",
    "forward_dynamics_derivatives", "forward_dynamics_derivatives_wrenches",
    "gravity_derivatives", "inverse_dynamics_derivatives_batch",
    "forward_dynamics_derivatives_batch", "gravity_derivatives_batch")
# Matrices per answer, as the compiled functions lay them out.
OUTPUTS = {"inverse_dynamics_derivatives": 2, "forward_dynamics_derivatives": 3,
           "gravity_derivatives": 1}


def compiled_answer(functions, name, vectors, wrenches, params):
    """The generic module's answer (``functions``: name -> bound function, as
    ``RobotModel._generic``): a tuple of k x k arrays (one array for the gravity
    derivatives), or None when there is none or it declines: bad or
    unconverted input, a singular mass matrix (the numpy path then answers or raises)."""
    function = functions.get(name)
    if function is None:
        return None
    if wrenches is None or (type(wrenches) is dict and not wrenches):
        result = function(*vectors, params)
    else:       # (the C reads the {link: wrench} dict; what it declines, numpy names)
        result = functions[name + "_wrenches"](*vectors, wrenches, params)
    return None if type(result) is int else result


def run_batch(function, params, lock, name, single, arrays, k):
    """Batch of ``name`` over validated sample ``arrays``: one call of compiled ``function``
    (a ``<name>_batch``: the generic module's, (N, outputs, k, k), or a robot's own,
    (N, outputs * k * k); None when there is none), or the loop of ``single`` (under
    ``lock``, one parameter state) where there is none or a sample fails: the failing
    sample first, whose single call raises its error (a singular M), then the loop."""
    outputs = OUTPUTS[name]
    if function is not None:
        result = function(*arrays, params)
        if type(result) is np.ndarray:
            result = result.reshape(len(result), outputs, k, k)
            return result[:, 0] if outputs == 1 else tuple(result[:, i] for i in range(outputs))
        single(*(array[result // 4] for array in arrays))
    with lock:
        return batch(single, arrays, outputs, k)


def batch(single, arrays, outputs, k):
    """Per-sample loop of ``single`` over validated sample ``arrays``: a tuple of
    ``outputs`` arrays (N, k, k), or one array when ``outputs`` is 1."""
    shape = (len(arrays[0]), k, k)
    results = [single(*sample) for sample in zip(*arrays)]
    if outputs == 1:
        return np.array(results).reshape(shape)
    return tuple(np.array([result[i] for result in results]).reshape(shape)
                 for i in range(outputs))
