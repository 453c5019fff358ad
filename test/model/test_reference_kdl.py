"""Serial chains against Orocos KDL, a second oracle independent of Pinocchio.

KDL's chain is built from the URDF text by test/oracles/kdl_chain.py (xml.etree,
not this project's parser).  Compared, over 100 random states per chain:
ChainIdSolver_RNE (gravity, segment wrenches), ChainDynParam (mass matrix,
Coriolis, gravity), ChainJntToJacSolver and ChainFkSolverPos_recursive at
every segment tip.  The last tests check the documented mapping between KDL's
ChainHdSolver_Vereshchagin conventions and ``RobotModel.hybrid_dynamics``
(docs/kdl_mapping.md); Vereshchagin has no Python binding, so those use
Pinocchio's spatial and classical frame accelerations and KDL's RNE.
"""
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from oracles.kdl_reference import KdlChain, kdl
from oracles.pinocchio_reference import PinocchioReference
from support.numerics import assert_close, random_states, random_wrenches
from support.optional import require
from support.robot_generator import random_tree_urdf
from support.robots import shipped_urdf
from soa_dynamics_ros import RobotModel

pin = require("pinocchio")

STATES = 100
SHIPPED_CHAINS = [("panda.urdf", "panda_link0", "panda_hand_tcp"),
                  ("ur5.urdf", "base_link", "tool0")]
RANDOM_CHAINS = [(seed, 8) for seed in range(500, 512)] + [(512, 30)]


def _cases():
    cases = [pytest.param(("shipped", *chain), id=chain[0]) for chain in SHIPPED_CHAINS]
    cases += [pytest.param(("random", seed, dof), id=f"chain{seed}-{dof}dof")
              for seed, dof in RANDOM_CHAINS]
    return cases


def _load(case):
    if case[0] == "shipped":
        _, name, root, tip = case
        with open(shipped_urdf(name)) as handle:
            return handle.read(), root, tip
    _, seed, dof = case
    xml = random_tree_urdf(seed, moving_joints=dof, branching=0.0, mimic_fraction=0.0)
    links = [link.get("name") for link in ET.fromstring(xml).findall("link")]
    return xml, links[0], links[-1]  # branching=0: a chain from the first to the last link


@pytest.fixture(params=_cases())
def chain(request):
    xml, root, tip = _load(request.param)
    model = RobotModel.from_urdf(xml)
    reference = KdlChain(xml, root, tip)
    assert sorted(reference.joint_names) == sorted(model.joint_names), "not the same chain"
    columns = np.array([model.joint_index(name) for name in reference.joint_names])
    return model, reference, columns, xml, tip


def test_kdl_is_importable_from_the_venv():
    assert kdl.Chain is not None and hasattr(kdl, "ChainIdSolver_RNE")


def test_rne_against_kdl(chain, rng):
    model, ref, cols, _, _ = chain
    for q, qd, qdd in random_states(model, STATES, rng):
        wrenches = random_wrenches(model, rng)
        assert_close(model.inverse_dynamics(q, qd, qdd)[cols],
                     ref.inverse_dynamics(q[cols], qd[cols], qdd[cols]), "RNE with gravity")
        assert_close(model.inverse_dynamics(q, qd, qdd, wrenches)[cols],
                     ref.inverse_dynamics(q[cols], qd[cols], qdd[cols], wrenches),
                     f"RNE with wrenches on {sorted(wrenches)}")


def test_dynamic_parameters_against_kdl(chain, rng):
    model, ref, cols, _, _ = chain
    for q, qd, _ in random_states(model, STATES, rng):
        kq, kqd = q[cols], qd[cols]
        assert_close(model.mass_matrix(q)[np.ix_(cols, cols)], ref.mass_matrix(kq), "mass matrix")
        gravity = model.gravity_torques(q)
        assert_close(gravity[cols], ref.gravity_torques(kq), "gravity torques")
        assert_close((model.bias_torques(q, qd) - gravity)[cols], ref.coriolis(kq, kqd),
                     "Coriolis and centrifugal torques")


def test_kinematics_against_kdl(chain, rng):
    model, ref, cols, _, tip = chain
    for q, _, _ in random_states(model, STATES, rng):
        kq = q[cols]
        assert_close(model.frame_pose(q, tip), ref.frame(kq), "pose of the chain tip")
        assert_close(model.jacobian(q, tip)[:, cols], ref.jacobian(kq), "jacobian of the chain tip")
        poses = model.frame_poses(q)
        tips = ref.tip_poses(kq)
        for segment, link in enumerate(ref.segment_links):
            assert_close(poses[link], tips[segment], f"pose of {link}")
            assert_close(model.jacobian(q, link)[:, cols], ref.jacobian(kq, segment),
                         f"jacobian of {link}")
        # Links merged through fixed joints: KDL tip pose times the constant placement.
        for link, (segment, placement) in ref.link_body.items():
            if segment >= 0:
                expected = tips[segment] @ np.linalg.inv(ref.tip_from_body[segment]) @ placement
                assert_close(poses[link], expected, f"pose of merged link {link}")


# ---------------------------------------------------------------- Vereshchagin mapping
def _vereshchagin_wrenches(ref, q, wrenches):
    """Project wrenches as ChainHdSolver_Vereshchagin f_ext: base axes, about each segment
    tip, acting on the body (docs/kdl_mapping.md)."""
    result = [np.zeros(6) for _ in range(ref.ns)]
    tips = ref.tip_poses(q)
    for link, wrench in wrenches.items():
        segment, placement = ref.link_body[link]
        if segment < 0:
            continue
        link_origin = (tips[segment] @ np.linalg.inv(ref.tip_from_body[segment]) @ placement)[:3, 3]
        force, torque = wrench[:3], wrench[3:]
        result[segment] += np.concatenate(
            (force, torque + np.cross(link_origin - tips[segment][:3, 3], force)))
    return result


def test_vereshchagin_style_external_wrenches(chain, rng):
    """Vereshchagin rotates f_ext into tip axes (FextLocal = F_total.M.Inverse() * f_ext[i])
    and then uses it exactly as RNE uses its f_ext: feeding RNE the rotated
    Vereshchagin-style wrenches must reproduce this project's torques."""
    model, ref, cols, _, _ = chain
    for q, qd, qdd in random_states(model, 20, rng):
        wrenches = random_wrenches(model, rng)
        kq = q[cols]
        tips = ref.tip_poses(kq)
        f_ext = []
        for segment, wrench in enumerate(_vereshchagin_wrenches(ref, kq, wrenches)):
            rotation = tips[segment][:3, :3]
            f_ext.append(kdl.Wrench(kdl.Vector(*(rotation.T @ wrench[:3])),
                                    kdl.Vector(*(rotation.T @ wrench[3:]))))
        torques = kdl.JntArray(ref.nj)
        assert ref.rne.CartToJnt(ref._array(kq), ref._array(qd[cols]), ref._array(qdd[cols]),
                                 f_ext, torques) == 0
        assert_close(model.inverse_dynamics(q, qd, qdd, wrenches)[cols], ref._numpy(torques),
                     "RNE fed Vereshchagin-style f_ext")


def kdl_beta_to_classical(alpha, beta_kdl, velocity, gravity):
    """docs/kdl_mapping.md: beta for hybrid_dynamics from a KDL Vereshchagin beta.

    KDL constrains A = [a_spatial - g; dw/dt] (spatial acceleration of the tip origin,
    base axes, root acceleration -g included); hybrid_dynamics constrains the classical
    a = [a_spatial + w x v; dw/dt] without gravity, so
    beta = beta_kdl + alpha^T [w x v + g; 0].
    """
    v, w = velocity[:3], velocity[3:]
    return beta_kdl + alpha.T @ np.concatenate((np.cross(w, v) + gravity, np.zeros(3)))


def _well_conditioned_alpha(model, q, tip, rng):
    """6 x m constraint directions, m < dof (some freedom is left), with alpha^T J well
    conditioned: this test is about the beta convention, not about near-singular
    constraints (those are dropped by the solver, see test_task_space_and_constraints)."""
    jacobian = model.jacobian(q, tip)
    while True:
        m = int(rng.integers(1, min(6, model.dof - 1) + 1))
        alpha = rng.normal(size=(6, m))
        values = np.linalg.svd(alpha.T @ jacobian, compute_uv=False)
        if values[-1] > 0.02 * values[0]:
            return alpha


def test_vereshchagin_beta_mapping(chain, rng):
    model, _, _, xml, tip = chain
    pinocchio = PinocchioReference(xml, model.joint_names, gravity=model.gravity)
    fid = pinocchio.model.getFrameId(tip, pin.FrameType.BODY)
    root_acceleration = np.concatenate((-model.gravity, np.zeros(3)))  # KDL root_acc (+9.81 z)
    for q, qd, tau in random_states(model, 30, rng):
        alpha = _well_conditioned_alpha(model, q, tip, rng)
        m = alpha.shape[1]
        beta_kdl = rng.normal(size=m) * 5
        velocity = model.jacobian(q, tip) @ qd
        beta = kdl_beta_to_classical(alpha, beta_kdl, velocity, model.gravity)
        result = model.hybrid_dynamics(q, qd, [(tip, alpha, beta)], tau)

        pin.forwardKinematics(pinocchio.model, pinocchio.data, pinocchio.configuration(q),
                              pinocchio.selection @ qd, pinocchio.selection @ result.qdd)
        pin.updateFramePlacements(pinocchio.model, pinocchio.data)
        spatial = pin.getFrameAcceleration(pinocchio.model, pinocchio.data, fid,
                                           pin.LOCAL_WORLD_ALIGNED).vector
        classical = pin.getFrameClassicalAcceleration(pinocchio.model, pinocchio.data, fid,
                                                      pin.LOCAL_WORLD_ALIGNED).vector
        # What KDL's Vereshchagin constrains: spatial acceleration plus the root acceleration.
        assert_close(alpha.T @ (spatial + root_acceleration), beta_kdl,
                     "KDL-style constraint alpha^T (a_spatial + root_acc) = beta_kdl")
        assert_close(alpha.T @ classical, beta, "classical constraint alpha^T a = beta")
        assert_close(result.frame_accelerations[tip], classical, "frame acceleration")
        assert_close(classical - spatial,
                     np.concatenate((np.cross(velocity[3:], velocity[:3]), np.zeros(3))),
                     "classical = spatial + [w x v; 0]")
        # Project nu: constraint wrench on the robot is alpha nu (KDL's nu is its negative).
        free = model.forward_dynamics(q, qd, tau)
        assert_close(result.constraint_torques, model.mass_matrix(q) @ (result.qdd - free),
                     "J^T alpha nu = M (qdd - qdd_free)")
        assert_close(result.constraint_torques, model.jacobian(q, tip).T @ alpha @ result.nu,
                     "constraint torques = J^T alpha nu")


def test_vereshchagin_hold_and_free_fall(chain, rng):
    """The two facts from running KDL's C++ (notes): with alpha = I, beta_kdl = 0 the tip
    falls freely; beta_kdl = alpha^T [0, 0, 9.81, 0, 0, 0] holds it."""
    model, _, _, _, tip = chain
    alpha, held = np.eye(6), 0
    for q, _, tau in random_states(model, 10, rng):
        zero = np.zeros(model.dof)
        values = np.linalg.svd(model.jacobian(q, tip), compute_uv=False)
        if len(values) < 6 or values[-1] < 0.02 * values[0]:
            continue  # cannot hold all 6 directions, or only through a near-singular J
        held += 1
        fall = model.hybrid_dynamics(q, zero, [(tip, alpha, kdl_beta_to_classical(
            alpha, np.zeros(6), np.zeros(6), model.gravity))], tau)
        assert_close(fall.frame_accelerations[tip], np.concatenate((model.gravity, np.zeros(3))),
                     "free fall")
        hold = model.hybrid_dynamics(q, zero, [(tip, alpha, kdl_beta_to_classical(
            alpha, alpha.T @ np.array([0, 0, 9.81, 0, 0, 0]), np.zeros(6), model.gravity))], tau)
        assert_close(hold.frame_accelerations[tip], np.zeros(6), "held still")
    assert held > 0 or model.dof < 6, "no well-conditioned state drawn"
