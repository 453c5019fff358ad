"""The numpy path of :class:`~.robot_model.RobotModel`'s calls: the recursions of
:mod:`soa_dynamics_ros.algorithms` on the model's current tree (URDF plus payloads)
and gravity, read under its parameters lock so that each answer sees one state.

It answers wherever compiled code does not (no compiler, ``kernels="off"``, input the
kernels decline), and it names the problem where there is one: each function
validates its arguments as every path does.  Every function takes the model first.
"""
import numpy as np

from ..algorithms import frame_motion as motion
from ..algorithms.coriolis import coriolis_matrix as christoffel_coriolis
from ..algorithms.energy import kinetic_energy as body_kinetic_energy
from ..algorithms.energy import potential_energy as body_potential_energy
from ..algorithms.external_forces import body_forces, gravity_root_acceleration
from ..algorithms.inverse_dynamics import inverse_dynamics as newton_euler
from ..algorithms.kinematics import body_placements, frame_placement, hinge_jacobian
from ..algorithms.mass_matrix import mass_matrix as composite_body
from ..algorithms.momentum import coriolis_transpose_product as momentum_gather
from ..algorithms.regressor import inertial_regressor as hinge_regressor
from ..multibody.spatial import homogeneous, inertia_to_parameters
from ..validation import as_vector
from . import constrained
from .evaluation import hinge_positions


def _hinge_rates(tree, name, rates):
    return tree.coordinates.hinge_rates(as_vector(name, rates, tree.dof))


def inverse_dynamics(model, q, qd, qdd, wrenches=None):
    with model.parameters_lock:
        tree = model.tree
        q_hinge = hinge_positions(tree, q)
        qd_hinge, qdd_hinge = _hinge_rates(tree, "qd", qd), _hinge_rates(tree, "qdd", qdd)
        hinge_torques = newton_euler(tree, q_hinge, qd_hinge, qdd_hinge,
                                     gravity_root_acceleration(model.gravity),
                                     body_forces(tree, q_hinge, wrenches))
    return tree.coordinates.joint_forces(hinge_torques)


def gravity_torques(model, q):
    zeros = np.zeros(model.dof)
    return inverse_dynamics(model, q, zeros, zeros)


def bias_torques(model, q, qd):
    return inverse_dynamics(model, q, qd, np.zeros(model.dof))


def mass_matrix(model, q):
    with model.parameters_lock:
        tree = model.tree
        return tree.coordinates.joint_mass_matrix(composite_body(tree, hinge_positions(tree, q)))


def forward_dynamics(model, selection, q, qd, tau, wrenches=None):
    """On ``selection`` (every joint: the model's); ``tau`` is required here (a
    selection's query defaults it to 0)."""
    tau = as_vector("tau", tau, model.dof)
    with model.parameters_lock:
        return constrained.selected_forward_dynamics(model, selection, q, qd, tau, wrenches)


def _at_rates(model, algorithm, q, qd):
    """``(tree, algorithm(tree, q_hinge, qd_hinge))`` on the model's tree, one state."""
    with model.parameters_lock:
        tree = model.tree
        return tree, algorithm(tree, hinge_positions(tree, q), _hinge_rates(tree, "qd", qd))


def coriolis_transpose_product(model, q, qd):
    tree, product = _at_rates(model, momentum_gather, q, qd)
    return tree.coordinates.joint_forces(product)


def frame_pose(model, q, frame):
    tree = model.tree
    target = tree.frame(frame)
    placements = body_placements(tree, hinge_positions(tree, q))
    return homogeneous(*frame_placement(tree, placements, target))


def frame_poses(model, q):
    tree = model.tree
    placements = body_placements(tree, hinge_positions(tree, q))
    return {name: homogeneous(*frame_placement(tree, placements, frame))
            for name, frame in tree.frames.items()}


def jacobian(model, q, frame):
    tree = model.tree
    target = tree.frame(frame)
    placements = body_placements(tree, hinge_positions(tree, q))
    return tree.coordinates.joint_columns(hinge_jacobian(tree, placements, target))


def frame_twist(model, q, qd, frame):
    return _frame_motion(model, motion.frame_twist, frame, q, qd)


def frame_acceleration(model, q, qd, qdd, frame):
    return _frame_motion(model, motion.frame_acceleration, frame, q, qd, qdd)


def jacobian_derivative_product(model, q, qd, frame):
    return _frame_motion(model, motion.jacobian_derivative_product, frame, q, qd)


def jacobian_time_derivative(model, q, qd, frame):
    return model.tree.coordinates.joint_columns(
        _frame_motion(model, motion.hinge_jacobian_derivative, frame, q, qd))


def _frame_motion(model, algorithm, frame, q, *rates):
    """A frame motion ``algorithm`` (of :mod:`soa_dynamics_ros.algorithms.frame_motion`)
    at ``q`` and the joint ``rates`` (qd, then qdd)."""
    tree = model.tree
    target = tree.frame(frame)
    placements = body_placements(tree, hinge_positions(tree, q))
    hinge_rates = [_hinge_rates(tree, name, value) for name, value in zip(("qd", "qdd"), rates)]
    return algorithm(tree, placements, target, *hinge_rates)


def coriolis_matrix(model, q, qd):
    tree, matrix = _at_rates(model, christoffel_coriolis, q, qd)
    return tree.coordinates.joint_mass_matrix(matrix)


def kinetic_energy(model, q, qd):
    return float(_at_rates(model, body_kinetic_energy, q, qd)[1])


def potential_energy(model, q):
    with model.parameters_lock:
        tree = model.tree
        return float(body_potential_energy(tree, hinge_positions(tree, q), model.gravity))


def inertial_regressor(model, q, qd, qdd):
    tree = model.tree
    regressor = hinge_regressor(tree, hinge_positions(tree, q), _hinge_rates(tree, "qd", qd),
                                _hinge_rates(tree, "qdd", qdd),
                                gravity_root_acceleration(model.gravity))
    return np.ascontiguousarray(tree.coordinates.joint_columns(regressor.T).T)


def center_of_mass(model, q):
    tree = model.tree
    return center_of_bodies(tree, *body_placements(tree, hinge_positions(tree, q)))


def center_of_bodies(tree, rotations, translations):
    """Centre of mass of ``tree``'s bodies placed at ``rotations`` (nb, 3, 3) and
    ``translations`` (nb, 3): the sum of m p + R (m c) over the bodies, over their mass."""
    parameters = inertia_to_parameters(tree.body_inertia)
    mass, first_moment = parameters[:, 0], parameters[:, 1:4]
    weighted = (mass[:, None] * translations
                + np.einsum("kij,kj->ki", rotations, first_moment)).sum(axis=0)
    total_mass = mass.sum()
    return weighted / total_mass if total_mass > 0 else weighted
