"""Bad arguments raise a specific, readable error and change nothing."""
import subprocess
import sys

import numpy as np
import pytest

from conftest import REPO, assert_close
from robot_generator import random_tree_urdf
from soa_dynamics_ros import InvalidInputError, RobotModel, UnknownNameError


@pytest.fixture(scope="module")
def model():
    return RobotModel.from_urdf(random_tree_urdf(7, moving_joints=6))


def calls(model):
    n = model.dof
    z = np.zeros(n)
    frame = model.frame_names[-1]
    return {
        "gravity_torques": lambda v: model.gravity_torques(v),
        "inverse_dynamics(q)": lambda v: model.inverse_dynamics(v, z, z),
        "inverse_dynamics(qd)": lambda v: model.inverse_dynamics(z, v, z),
        "inverse_dynamics(qdd)": lambda v: model.inverse_dynamics(z, z, v),
        "bias_torques(qd)": lambda v: model.bias_torques(z, v),
        "mass_matrix": lambda v: model.mass_matrix(v),
        "forward_dynamics(tau)": lambda v: model.forward_dynamics(z, z, v),
        "frame_pose": lambda v: model.frame_pose(v, frame),
        "jacobian": lambda v: model.jacobian(v, frame),
        "center_of_mass": lambda v: model.center_of_mass(v),
    }


@pytest.mark.parametrize("call", list(calls(RobotModel.from_urdf(random_tree_urdf(7, moving_joints=6)))))
def test_wrong_length_nan_inf_and_junk_are_refused(model, call):
    function = calls(model)[call]
    good = np.zeros(model.dof)
    function(good)
    for bad, message in ((np.zeros(model.dof + 1), "shape"), (np.zeros((model.dof, 1)), "shape"),
                         (np.r_[good[:-1], np.nan], "NaN or inf at index"),
                         (np.r_[np.inf, good[1:]], "NaN or inf at index \\[0\\]"),
                         (np.r_[good[:-1], 1e200], "beyond 1e\\+50"),
                         (["a"] * model.dof, "numeric"), (None, "numeric|shape")):
        with pytest.raises(InvalidInputError, match=message):
            function(bad)


def test_unknown_frame_lists_close_matches(model):
    with pytest.raises(UnknownNameError, match=r"unknown frame 'link_3'.*did you mean.*'link3'"):
        model.jacobian(np.zeros(model.dof), "link_3")
    with pytest.raises(UnknownNameError, match="unknown frame 'zzz'$"):
        model.frame_pose(np.zeros(model.dof), "zzz")
    with pytest.raises(UnknownNameError, match="unknown joint"):
        model.joint_index("nope")


@pytest.mark.parametrize("wrenches, error, message", [
    ({"ghost": np.zeros(6)}, UnknownNameError, "unknown frame 'ghost'"),
    ({"base": np.zeros(5)}, InvalidInputError, "wrench on 'base'.*shape"),
    ({"base": [0, 0, np.nan, 0, 0, 0]}, InvalidInputError, "wrench on 'base'.*NaN"),
    ([np.zeros(6)], InvalidInputError, "map link names"),
])
def test_bad_wrenches(model, wrenches, error, message):
    z = np.zeros(model.dof)
    with pytest.raises(error, match=message):
        model.inverse_dynamics(z, z, z, wrenches)
    with pytest.raises(error, match=message):
        model.forward_dynamics(z, z, z, wrenches)


def test_bad_gravity_keeps_the_old_value(model):
    before = model.gravity
    for bad in ([0, 0], [0, np.nan, 0], "down"):
        with pytest.raises(InvalidInputError, match="gravity"):
            model.gravity = bad
    np.testing.assert_array_equal(model.gravity, before)


def test_gravity_getter_returns_a_copy(model):
    model.gravity[2] = 100.0
    assert model.gravity[2] == -9.81


def test_library_imports_without_ros():
    code = ("import sys, soa_dynamics_ros; "
            "assert not any(m.split('.')[0] in ('rclpy', 'rosidl_runtime_py') for m in sys.modules), "
            "sorted(m for m in sys.modules if 'rcl' in m)")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)


def test_batches_match_single_calls_and_refuse_bad_shapes(model, rng):
    Q, QD, QDD = rng.normal(size=(3, 20, model.dof))
    assert_close(model.inverse_dynamics_batch(Q, QD, QDD),
                 [model.inverse_dynamics(*s) for s in zip(Q, QD, QDD)], "ID batch", 1e-14)
    assert_close(model.gravity_torques_batch(Q), [model.gravity_torques(q) for q in Q], "g batch", 1e-14)
    assert_close(model.forward_dynamics_batch(Q, QD, QDD),
                 [model.forward_dynamics(*s) for s in zip(Q, QD, QDD)], "FD batch", 1e-14)
    assert model.inverse_dynamics_batch(Q[:0], QD[:0], QDD[:0]).shape == (0, model.dof)
    with pytest.raises(InvalidInputError, match=r"QD must have shape \(20,"):
        model.inverse_dynamics_batch(Q, QD[:5], QDD)
    with pytest.raises(InvalidInputError, match=r"Q must have shape \(N,"):
        model.gravity_torques_batch(Q[:, :-1])
    Q[3, 1] = np.nan
    with pytest.raises(InvalidInputError, match=r"sample\(s\) \[3\]"):
        model.gravity_torques_batch(Q)
