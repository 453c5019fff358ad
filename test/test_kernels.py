"""Generated kernels against the numpy reference path (issue 6).

The generated source is the same for both backends; the "python" backend runs
it without compiling, so it is checked on every shipped robot and on random
trees; numba compiles a few robots (its on-disk cache makes reruns fast).
"""
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import REPO, SHIPPED_ROBOTS, assert_close, shipped_urdf
from robot_generator import random_tree_urdf
from soa_dynamics_ros.errors import InvalidInputError, SingularDynamicsError
from soa_dynamics_ros.kernels import numba_available
from soa_dynamics_ros.model import RobotModel

TOL = 1e-12
RANDOM_TREES = [  # (seed, moving joints, mimic fraction)
    (11, 8, 0.0), (12, 10, 0.3), (13, 6, 0.5), (14, 12, 0.15)]
needs_numba = pytest.mark.skipif(not numba_available(), reason="numba is not installed")


def _sources():
    return ([("shipped", shipped_urdf(name)) for name in SHIPPED_ROBOTS]
            + [(f"random{seed}", random_tree_urdf(seed, moving_joints=n, mimic_fraction=mimic,
                                                   prismatic_fraction=0.25,
                                                   continuous_fraction=0.25))
               for seed, n, mimic in RANDOM_TREES])


SOURCES = _sources()
IDS = [os.path.basename(name) if kind == "shipped" else kind for kind, name in SOURCES]


def _pair(source, backend):
    return (RobotModel.from_urdf(source, kernels=backend),
            RobotModel.from_urdf(source, kernels="off"))


def _leaf_frames(model, count=2):
    tree = model.tree
    has_child = set(tree.parent)
    leaves = [name for name, frame in tree.frames.items() if frame.body not in has_child]
    return leaves[-count:]


def _check_against_reference(fast, slow, rng, samples=4, frames=()):
    n = fast.dof
    for _ in range(samples):
        q, qd, qdd = rng.uniform(-2, 2, (3, n))
        tau = slow.inverse_dynamics(q, qd, qdd)
        assert_close(fast.gravity_torques(q), slow.gravity_torques(q), "gravity", TOL)
        assert_close(fast.bias_torques(q, qd), slow.bias_torques(q, qd), "bias", TOL)
        assert_close(fast.inverse_dynamics(q, qd, qdd), tau, "inverse dynamics", TOL)
        assert_close(fast.mass_matrix(q), slow.mass_matrix(q), "mass matrix", TOL)
        assert_close(fast.forward_dynamics(q, qd, tau), slow.forward_dynamics(q, qd, tau),
                     "forward dynamics", 1e-10 if fast.tree.has_mimic else TOL)
        for frame in frames:
            assert_close(fast.jacobian(q, frame), slow.jacobian(q, frame), f"J {frame}", TOL)
            try:
                expected = slow.task_space_inertia(q, frame, return_info=True)
            except SingularDynamicsError:
                with pytest.raises(SingularDynamicsError):
                    fast.task_space_inertia(q, frame)
                continue
            # Lambda = (J M^-1 J^T)^-1 amplifies round-off by the condition number.
            assert_close(fast.task_space_inertia(q, frame), expected.inertia, f"Lambda {frame}",
                         TOL * max(1.0, expected.condition_number))


@pytest.mark.parametrize("kind,source", SOURCES, ids=IDS)
def test_generated_code_matches_reference(kind, source, rng):
    fast, slow = _pair(source, "python")
    _check_against_reference(fast, slow, rng, frames=_leaf_frames(fast))
    # The generated code was used, not the numpy fallback.
    assert fast._ready.get("inverse_dynamics") is not None


@pytest.mark.parametrize("kind,source", SOURCES, ids=IDS)
def test_batches_match_single_calls(kind, source, rng):
    fast, slow = _pair(source, "python")
    n = fast.dof
    Q, QD, QDD = rng.uniform(-2, 2, (3, 5, n))
    TAU = slow.inverse_dynamics_batch(Q, QD, QDD)
    assert_close(fast.inverse_dynamics_batch(Q, QD, QDD), TAU, "ID batch", TOL)
    assert_close(fast.gravity_torques_batch(Q), slow.gravity_torques_batch(Q), "g batch", TOL)
    assert_close(fast.forward_dynamics_batch(Q, QD, TAU), slow.forward_dynamics_batch(Q, QD, TAU),
                 "FD batch", 1e-10)
    assert fast.inverse_dynamics_batch(np.zeros((0, n)), np.zeros((0, n)),
                                       np.zeros((0, n))).shape == (0, n)


def test_payload_and_gravity_are_inputs_not_constants(rng):
    fast, slow = _pair(shipped_urdf("panda.urdf"), "python")
    q, qd, qdd = rng.uniform(-2, 2, (3, fast.dof))
    fast.inverse_dynamics(q, qd, qdd)
    module = fast._kernel_set._module
    for model in (fast, slow):
        model.attach_payload("box", "panda_hand", 2.5, (0.0, 0.01, 0.1), np.diag([0.01, 0.02, 0.03]))
        model.gravity = [0.5, -1.0, -9.7]
    assert_close(fast.inverse_dynamics(q, qd, qdd), slow.inverse_dynamics(q, qd, qdd), "payload", TOL)
    assert_close(fast.forward_dynamics(q, qd, qdd), slow.forward_dynamics(q, qd, qdd), "FD", TOL)
    for model in (fast, slow):
        model.detach_payload("box")
    assert_close(fast.gravity_torques(q), slow.gravity_torques(q), "detached", TOL)
    assert fast._kernel_set._module is module   # no new code


def test_validation_and_errors_in_front_of_kernels():
    fast = RobotModel.from_urdf(shipped_urdf("panda.urdf"), kernels="python")
    n = fast.dof
    q = np.zeros(n)
    bad = q.copy()
    bad[3] = np.nan
    with pytest.raises(InvalidInputError, match="index"):
        fast.inverse_dynamics(bad, q, q)
    with pytest.raises(InvalidInputError, match="shape"):
        fast.gravity_torques(np.zeros(n + 1))
    with pytest.raises(InvalidInputError):
        fast.forward_dynamics(q, q, 1.0)
    with pytest.raises(InvalidInputError, match="sample"):
        fast.inverse_dynamics_batch(np.zeros((3, n)), np.zeros((3, n)), np.full((3, n), np.inf))
    # Lists are accepted as on the numpy path.
    assert_close(fast.gravity_torques([0.0] * n), fast.gravity_torques(q), "list input", 0.0)


MASSLESS = """<robot name="massless">
  <link name="base"><inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link>
  <link name="l1"/>
  <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/><axis xyz="0 0 1"/>
    <limit effort="1" velocity="1" lower="-1" upper="1"/></joint>
</robot>"""


def test_singular_hinge_raises_like_the_reference():
    fast = RobotModel.from_urdf(MASSLESS, kernels="python")
    with pytest.raises(SingularDynamicsError):
        fast.forward_dynamics([0.0], [0.0], [1.0])
    with pytest.raises(SingularDynamicsError):
        fast.forward_dynamics_batch(np.zeros((2, 1)), np.zeros((2, 1)), np.ones((2, 1)))


def test_kernel_switch():
    model = RobotModel.from_urdf(shipped_urdf("double_pendulum.urdf"), kernels="off")
    assert model.kernels == ("off", None)
    model.set_kernels("python")
    assert model.kernels == ("python", "python")
    with pytest.raises(InvalidInputError):
        model.set_kernels("fortran")


@needs_numba
@pytest.mark.parametrize("source", [shipped_urdf("panda.urdf"),
                                    random_tree_urdf(21, moving_joints=5, mimic_fraction=0.4,
                                                     prismatic_fraction=0.3,
                                                     continuous_fraction=0.3)],
                         ids=["panda", "random-mimic"])
def test_numba_kernels_match_reference(source, rng):
    fast, slow = _pair(source, "numba")
    frames = _leaf_frames(fast, 1)
    fast.prepare_kernels(frames=frames)
    _check_against_reference(fast, slow, rng, samples=3, frames=frames)
    n = fast.dof
    Q, QD, QDD = rng.uniform(-2, 2, (3, 50, n))
    TAU = slow.inverse_dynamics_batch(Q, QD, QDD)
    assert_close(fast.inverse_dynamics_batch(Q, QD, QDD), TAU, "ID batch", TOL)
    assert_close(fast.gravity_torques_batch(Q), slow.gravity_torques_batch(Q), "g batch", TOL)
    assert_close(fast.forward_dynamics_batch(Q, QD, TAU), slow.forward_dynamics_batch(Q, QD, TAU),
                 "FD batch", 1e-10)
    bad = Q[0].copy()
    bad[0] = np.nan
    with pytest.raises(InvalidInputError):
        fast.inverse_dynamics(bad, QD[0], QDD[0])


@needs_numba
def test_numba_cache_survives_a_new_process():
    """A second process loads the compiled kernels instead of compiling them."""
    script = (
        "import logging, sys\n"
        "logging.basicConfig(level=logging.INFO, stream=sys.stdout, format='%(message)s')\n"
        "from soa_dynamics_ros.model import RobotModel\n"
        f"m = RobotModel.from_urdf({shipped_urdf('double_pendulum.urdf')!r}, kernels='numba')\n"
        "m.prepare_kernels()\n"
        "print('answer', m.gravity_torques([0.1, 0.2]))\n")
    runs = [subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                           cwd=REPO, timeout=600) for _ in range(2)]
    for run in runs:
        assert run.returncode == 0, run.stderr
        assert "answer" in run.stdout
    assert "compiled in" not in runs[1].stdout, runs[1].stdout
    assert "loaded from cache" in runs[1].stdout
