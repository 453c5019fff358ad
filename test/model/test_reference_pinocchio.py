"""Every quantity of the model library against Pinocchio, on shipped and generated robots."""
import numpy as np
import pytest

from oracles.pinocchio_reference import PinocchioReference
from support.numerics import assert_close, random_states, random_wrenches
from support.robot_generator import random_tree_urdf
from support.robots import SHIPPED_ROBOTS, shipped_urdf
from soa_dynamics_ros import RobotModel

GENERATED = [("random", seed, 12) for seed in range(24)] + [("random", 100, 40)]


def _robot_cases():
    cases = [pytest.param(("shipped", name, 200), id=name) for name in SHIPPED_ROBOTS]
    cases += [pytest.param(case, id=f"random{case[1]}-{case[2]}dof") for case in GENERATED]
    return cases


def _load(case):
    kind, key, _ = case
    if kind == "shipped":
        with open(shipped_urdf(key)) as handle:
            xml = handle.read()
        states = 200
    else:
        xml = random_tree_urdf(key, moving_joints=case[2])
        states = 30
    return xml, states


@pytest.fixture(params=_robot_cases())
def robot(request):
    xml, states = _load(request.param)
    model = RobotModel.from_urdf(xml)
    return model, PinocchioReference(xml, model.joint_names), states, xml


def test_dynamics_against_pinocchio(robot, rng):
    model, ref, states, _ = robot
    for q, qd, qdd in random_states(model, states, rng):
        wrenches = random_wrenches(model, rng)
        zero = np.zeros(model.dof)
        assert_close(model.inverse_dynamics(q, qd, qdd), ref.inverse_dynamics(q, qd, qdd),
                     "inverse dynamics")
        assert_close(model.inverse_dynamics(q, qd, qdd, wrenches),
                     ref.inverse_dynamics(q, qd, qdd, wrenches), "inverse dynamics with wrenches")
        assert_close(model.gravity_torques(q), ref.inverse_dynamics(q, zero, zero), "gravity")
        assert_close(model.bias_torques(q, qd), ref.inverse_dynamics(q, qd, zero), "bias")
        assert_close(model.mass_matrix(q), ref.mass_matrix(q), "mass matrix")
        tau = qdd * 5
        assert_close(model.forward_dynamics(q, qd, tau, wrenches),
                     ref.forward_dynamics(q, qd, tau, wrenches), "forward dynamics")


def test_kinematics_against_pinocchio(robot, rng):
    model, ref, states, _ = robot
    for q, _, _ in random_states(model, max(20, states // 5), rng):
        poses = model.frame_poses(q)
        for frame in model.frame_names:
            assert_close(poses[frame], ref.frame_pose(q, frame), f"pose of {frame}")
            assert_close(model.frame_pose(q, frame), poses[frame], f"single pose of {frame}")
            assert_close(model.jacobian(q, frame), ref.jacobian(q, frame), f"jacobian of {frame}")


def test_gravity_setting_against_pinocchio(robot, rng):
    model, _, _, xml = robot
    tilted = rng.normal(size=3) * 5
    model.gravity = tilted
    ref = PinocchioReference(xml, model.joint_names, gravity=tilted)
    zero = np.zeros(model.dof)
    for q, qd, qdd in random_states(model, 10, rng):
        assert_close(model.gravity_torques(q), ref.inverse_dynamics(q, zero, zero),
                     "gravity torques with a tilted gravity vector")
        assert_close(model.inverse_dynamics(q, qd, qdd), ref.inverse_dynamics(q, qd, qdd),
                     "inverse dynamics with a tilted gravity vector")
