"""The generic compiled recursions (kernels/generic.c, issue 14) against the numpy reference.

Every answer of a ``kernels="generic"`` model is compared with a ``kernels="off"``
model (the numpy recursions) at 1e-12 on the shipped robots (mimic ones
included), random trees and a few rtb-data robots, on random states with
wrenches, payloads and another gravity.  The generic model's numpy path is
disabled in these comparisons, so an answer that silently came from numpy
fails them.
"""
import os
import pathlib
import subprocess
import sys
from unittest import mock

import numpy as np
import pytest

from support.numerics import assert_close, random_wrenches
from support.numpy_path import disable_numpy_path
from support.optional import require
from support.robot_generator import random_tree_urdf
from support.robots import REPO, SHIPPED_ROBOTS, shipped_urdf
from soa_dynamics_ros.algorithms.task_space import DEFAULT_RCOND
from soa_dynamics_ros.errors import InvalidInputError, SingularDynamicsError, UnknownNameError
from soa_dynamics_ros import kernels
from soa_dynamics_ros.kernels import build, generic_module
from soa_dynamics_ros.model import RobotModel
from soa_dynamics_ros.model import constrained, subgraph as subgraph_module
from soa_dynamics_ros.multibody.joints import JOINT_MODELS

TOL = 1e-12
RANDOM_TREES = [  # (seed, moving joints, mimic fraction)
    (21, 9, 0.0), (22, 12, 0.3), (23, 30, 0.0), (24, 14, 0.2)]
# A few rtb-data robots (test/system/test_zoo.py reads all of them against Pinocchio),
# ones whose every body has mass (mimic grippers).
ZOO_ROBOTS = ["trossen_descriptions/urdf/vx300s.urdf.xacro",
              "trossen_descriptions/urdf/px150.urdf.xacro",
              "trossen_descriptions/urdf/wx250.urdf.xacro"]


def _zoo_source(relative):
    rtbdata = require("rtbdata")
    root = pathlib.Path(rtbdata.__file__).resolve().parent / "xacro"
    return RobotModel.from_urdf, str(root / relative), {"package_paths": [str(root)]}


SOURCES = ([pytest.param(shipped_urdf(name), None, id=name) for name in SHIPPED_ROBOTS]
           + [pytest.param(random_tree_urdf(seed, moving_joints=n, mimic_fraction=mimic,
                                            prismatic_fraction=0.25, continuous_fraction=0.25),
                           None, id=f"random{seed}") for seed, n, mimic in RANDOM_TREES]
           + [pytest.param(None, relative, id=relative.split("/")[-1]) for relative in ZOO_ROBOTS])


def _load(source, zoo, kernels):
    if zoo is None:
        return RobotModel.from_urdf(source, kernels=kernels)
    load, path, options = _zoo_source(zoo)
    return load(path, kernels=kernels, **options)


def _refuse(*_, **__):
    raise AssertionError("the numpy path answered")


def _pair(source, zoo):
    """A generic model whose numpy path raises (its answers must come from compiled code)
    and a numpy-only one."""
    return disable_numpy_path(_load(source, zoo, "generic")), _load(source, zoo, "off")


def _frames(model, rng, count=3):
    names = model.frame_names
    return [str(name) for name in rng.choice(names, size=min(count, len(names)), replace=False)]


def _compare_everything(fast, slow, rng, samples=3):
    n = fast.dof
    for _ in range(samples):
        q, qd, qdd = rng.uniform(-2, 2, (3, n))
        wrenches = random_wrenches(slow, rng)
        tau = slow.inverse_dynamics(q, qd, qdd)
        assert_close(fast.gravity_torques(q), slow.gravity_torques(q), "gravity", TOL)
        assert_close(fast.bias_torques(q, qd), slow.bias_torques(q, qd), "bias", TOL)
        assert_close(fast.inverse_dynamics(q, qd, qdd), tau, "inverse dynamics", TOL)
        assert_close(fast.inverse_dynamics(q, qd, qdd, wrenches),
                     slow.inverse_dynamics(q, qd, qdd, wrenches), "ID with wrenches", TOL)
        assert_close(fast.mass_matrix(q), slow.mass_matrix(q), "mass matrix", TOL)
        assert_close(fast.forward_dynamics(q, qd, tau), slow.forward_dynamics(q, qd, tau),
                     "forward dynamics", TOL)
        assert_close(fast.forward_dynamics(q, qd, tau, wrenches),
                     slow.forward_dynamics(q, qd, tau, wrenches), "FD with wrenches", TOL)
        for frame in _frames(slow, rng):
            assert_close(fast.jacobian(q, frame), slow.jacobian(q, frame), f"J {frame}", TOL)
            assert_close(fast.frame_pose(q, frame), slow.frame_pose(q, frame), f"T {frame}", TOL)
        prescribed = [str(name) for name in rng.choice(slow.joint_names, size=max(1, n // 2),
                                                       replace=False)]
        for load in (None, wrenches):
            expected = slow.mixed_dynamics(q, qd, qdd, tau, prescribed, load)
            with mock.patch.object(constrained, "mixed_dynamics", _refuse):
                answer = fast.mixed_dynamics(q, qd, qdd, tau, prescribed, load)
            assert_close(answer[0], expected[0], "mixed qdd", TOL)
            assert_close(answer[1], expected[1], "mixed tau", TOL)
        assert_close(fast.center_of_mass(q), slow.center_of_mass(q), "centre of mass", TOL)
        poses = fast.frame_poses(q)
        for frame, pose in slow.frame_poses(q).items():
            assert_close(poses[frame], pose, f"frame_poses {frame}", TOL)
    Q, QD, QDD = rng.uniform(-2, 2, (3, 4, n))
    TAU = slow.inverse_dynamics_batch(Q, QD, QDD)
    assert_close(fast.inverse_dynamics_batch(Q, QD, QDD), TAU, "ID batch", TOL)
    assert_close(fast.gravity_torques_batch(Q), slow.gravity_torques_batch(Q), "g batch", TOL)
    assert_close(fast.forward_dynamics_batch(Q, QD, TAU), slow.forward_dynamics_batch(Q, QD, TAU),
                 "FD batch", TOL)


@pytest.mark.parametrize("source,zoo", SOURCES)
def test_generic_matches_the_numpy_recursions(source, zoo, rng):
    fast, slow = _pair(source, zoo)
    _compare_everything(fast, slow, rng)
    # Payloads and gravity are the parameter vector: the same compiled model answers.
    link = slow.frame_names[-1]
    for model in (fast, slow):
        model.attach_payload("box", link, 2.5, (0.0, 0.01, 0.1), np.diag([0.01, 0.02, 0.03]))
        model.gravity = [0.5, -1.0, -9.7]
    _compare_everything(fast, slow, rng, samples=2)


def _chain_of_every_joint_type():
    """URDF text of a chain with two joints of each type of multibody/joints.py, one about a
    coordinate axis and one about an axis off them (the C has a path for each)."""
    links, joints = ['<link name="link0"/>'], []
    inertial = ('<inertial><origin xyz="0.02 -0.01 0.05"/><mass value="1.3"/><inertia ixx="0.02"'
                ' ixy="0.001" ixz="-0.002" iyy="0.03" iyz="0.001" izz="0.025"/></inertial>')
    for k, joint_type in enumerate(2 * list(JOINT_MODELS), start=1):
        axis = "0 0 1" if k <= len(JOINT_MODELS) else "0.48 -0.6 0.64"
        limit = '<limit lower="-3" upper="3" effort="10" velocity="1"/>'
        links.append(f'<link name="link{k}">{inertial}</link>')
        joints.append(f'<joint name="joint{k}" type="{joint_type}"><parent link="link{k - 1}"/>'
                      f'<child link="link{k}"/><origin xyz="0.1 0.05 0.2" rpy="0.3 -0.2 0.5"/>'
                      f'<axis xyz="{axis}"/>{limit}</joint>')
    return '<robot name="every_joint_type">' + "".join(links + joints) + "</robot>"


def test_every_joint_type_has_its_compiled_path(rng):
    """A joint type added to multibody/joints.py reaches the C through its motion's code:
    the generic module answers a chain of every type as the numpy recursions do."""
    fast, slow = _pair(_chain_of_every_joint_type(), None)
    _compare_everything(fast, slow, rng)


@pytest.mark.parametrize("source,zoo", SOURCES)
def test_subgraphs_match_the_numpy_recursions(source, zoo, rng, monkeypatch):
    fast, slow = _pair(source, zoo)
    names = slow.joint_names
    subsets = [list(rng.choice(names, size=max(1, len(names) // 2), replace=False)),
               names[-1:], names]
    q = rng.uniform(-2, 2, slow.dof)
    expected = []
    for subset in subsets:
        view = slow.subgraph(subset)
        qd, tau = rng.uniform(-2, 2, (2, view.dof))
        wrenches = random_wrenches(slow, rng)
        frame = _frames(slow, rng, 1)[0]
        expected.append((subset, qd, tau, wrenches, frame, view.mass_matrix(q),
                         view.jacobian(q, frame), view.forward_dynamics(q, qd, tau),
                         view.forward_dynamics(q, qd, tau, wrenches)))

    monkeypatch.setattr(constrained, "selected_forward_dynamics", _refuse)
    monkeypatch.setattr(subgraph_module, "composite_body_mass_matrix", _refuse)
    monkeypatch.setattr(subgraph_module, "hinge_jacobian", _refuse)
    for subset, qd, tau, wrenches, frame, mass, jacobian, qdd, qdd_wrenched in expected:
        view = fast.subgraph(subset)
        assert_close(view.mass_matrix(q), mass, f"M {subset}", TOL)
        assert_close(view.jacobian(q, frame), jacobian, f"J {subset}", TOL)
        assert_close(view.forward_dynamics(q, qd, tau), qdd, f"FD {subset}", TOL)
        assert_close(view.forward_dynamics(q, qd, tau, wrenches), qdd_wrenched,
                     f"FD wrenches {subset}", TOL)


def _task_space_queries(model, rng):
    frames = _frames(model, rng, 3)
    return [(frames[:1], "full", None), (frames[:2], "translational", None),
            (frames, "rotational", 1e-3), (frames, "full", 1e-2)]


@pytest.mark.parametrize("source,zoo", SOURCES)
def test_task_space_inertia_matches_the_numpy_recursions(source, zoo, rng):
    fast, slow = _pair(source, zoo)
    views = [(fast, slow), (fast.subgraph(slow.joint_names[1:]), slow.subgraph(slow.joint_names[1:]))]
    for q in rng.uniform(-2, 2, (3, slow.dof)):
        for fast_view, slow_view in views:
            for frames, part, damping in _task_space_queries(slow, rng):
                try:
                    expected = slow_view.task_space_inertia(q, frames, part, damping,
                                                            return_info=True)
                except SingularDynamicsError:
                    with pytest.raises(SingularDynamicsError):
                        fast_view.task_space_inertia(q, frames, part, damping)
                    continue
                answer = fast_view.task_space_inertia(q, frames, part, damping, return_info=True)
                assert answer.rank == expected.rank
                assert_close(answer.inertia_inverse, expected.inertia_inverse, "Lambda^-1", TOL)
                # Lambda = (Lambda^-1 + damping I)^-1 amplifies round-off by the condition
                # number of Lambda^-1 + damping I.
                values = np.linalg.eigvalsh(expected.inertia_inverse) + (damping or 0.0)
                scale = max(1.0, values[-1] / values[0])
                assert_close(answer.inertia, expected.inertia, f"Lambda {frames} {part}",
                             TOL * scale)
                # Without return_info the compiled code may invert by Cholesky instead.
                assert_close(fast_view.task_space_inertia(q, frames, part, damping),
                             expected.inertia, f"Lambda (no info) {frames} {part}", TOL * scale)
                # Its smallest eigenvalue carries round-off of the largest: cond * eps.
                assert answer.condition_number == pytest.approx(
                    expected.condition_number, rel=TOL * max(1.0, expected.condition_number))
                # Mimic robots included: compiled code answers (dense where hinges couple).
                assert answer.method in (constrained.COMPILED_COMPLIANCE,
                                         constrained.COMPILED_DENSE_COMPLIANCE)
                if not slow.tree.has_mimic:
                    assert answer.method == constrained.COMPILED_COMPLIANCE


def _constraints(model, rng):
    moved = [name for name in model.frame_names if np.any(model.jacobian(np.zeros(model.dof), name))]
    frames = [str(name) for name in rng.choice(moved, size=min(2, len(moved)), replace=False)]
    return [(frame, rng.normal(size=(6, int(rng.integers(1, 4)))), rng.normal(size=0))
            for frame in frames]


def _kept_condition(view, q, constraints):
    """Largest / smallest of the compliance eigenvalues the rank rule keeps: how much the
    solve through them amplifies round-off."""
    rows = np.vstack([alpha.T @ view.jacobian(q, frame) for frame, alpha, _ in constraints])
    values = np.linalg.eigvalsh(rows @ np.linalg.solve(view.mass_matrix(q), rows.T))
    kept = values[values > DEFAULT_RCOND * max(values[-1], 0.0)]
    return kept[-1] / kept[0] if kept.size else 1.0


def _assert_frame_accelerations(answer, expected, tolerance, what=""):
    """A frame's acceleration is J qdd plus its drift: its round-off scales with the joint
    accelerations it sums, not with its own size.  (wx250, random torques and wrenches:
    a finger's 1.9e5 rad/s^2 beside a shoulder's 0.46, which two correct orders of the
    same sums give 9e-12 apart.)"""
    qdd_scale = float(np.abs(expected.qdd).max()) if expected.qdd.size else 0.0
    for frame, acceleration in expected.frame_accelerations.items():
        scale = max(1.0, qdd_scale, float(np.abs(acceleration).max()))
        np.testing.assert_allclose(answer.frame_accelerations[frame], acceleration, rtol=0.0,
                                   atol=tolerance * scale,
                                   err_msg=f"acceleration of {frame}{what}")


@pytest.mark.parametrize("source,zoo", SOURCES)
def test_hybrid_dynamics_matches_the_numpy_recursions(source, zoo, rng):
    fast, slow = _pair(source, zoo)
    views = [(fast, slow), (fast.subgraph(slow.joint_names[1:]), slow.subgraph(slow.joint_names[1:]))]
    for _ in range(3):
        q = rng.uniform(-2, 2, slow.dof)
        constraints = [(frame, alpha, rng.normal(size=alpha.shape[1]))
                       for frame, alpha, _ in _constraints(slow, rng)]
        wrenches = random_wrenches(slow, rng)
        for fast_view, slow_view in views:
            qd, tau = rng.uniform(-2, 2, (2, slow_view.dof))
            tolerance = TOL * _kept_condition(slow_view, q, constraints)
            for load in (None, wrenches):
                expected = slow_view.hybrid_dynamics(q, qd, constraints, tau, load)
                answer = fast_view.hybrid_dynamics(q, qd, constraints, tau, load)
                if expected.rank:
                    # Compiled code answers, dependent constraints included (dense where
                    # mimic joints couple hinges); constraints no joint of the view moves
                    # leave the rank to numpy.
                    assert answer.method in (constrained.COMPILED_HYBRID,
                                             constrained.COMPILED_DENSE_HYBRID)
                    if not slow.tree.has_mimic:
                        assert answer.method == constrained.COMPILED_HYBRID
                assert answer.rank == expected.rank
                assert_close(answer.qdd, expected.qdd, "hybrid qdd", tolerance)
                assert_close(answer.nu, expected.nu, "hybrid nu", tolerance)
                assert_close(answer.constraint_torques, expected.constraint_torques,
                             "constraint torques", tolerance)
                _assert_frame_accelerations(answer, expected, tolerance)
                assert answer.dropped_directions.shape == expected.dropped_directions.shape


def _dependent_constraint_sets(frames, rng):
    """Constraint sets whose compliance is singular (or more rows than the joints can
    meet): a duplicated constraint, three full 6-row constraints, and a row that is a
    combination of two others (its beta not the same combination: no exact solution)."""
    alpha = rng.normal(size=(6, 2))
    beta = rng.normal(size=2)
    return {"duplicate": [(frames[0], alpha, beta), (frames[0], alpha.copy(), beta.copy())],
            "three full": [(frames[k % len(frames)], np.eye(6), rng.normal(size=6))
                           for k in range(3)],
            "combination": [(frames[-1], np.column_stack([alpha, alpha @ rng.normal(size=2)]),
                             rng.normal(size=3))]}


@pytest.mark.parametrize("source,zoo", SOURCES)
def test_dependent_constraints_get_the_compiled_truncated_solve(source, zoo, rng):
    """Redundant and over-determined constraint sets: the compiled code drops the
    directions the numpy reference drops and answers the same."""
    fast, slow = _pair(source, zoo)
    tail = slow.joint_names[1:]
    views = [(fast, slow), (fast.subgraph(tail), slow.subgraph(tail))]
    q = rng.uniform(-2, 2, slow.dof)
    wrenches = random_wrenches(slow, rng)
    methods = set()
    for fast_view, slow_view in views:
        moved = [name for name in slow.frame_names if np.any(slow_view.jacobian(q, name))]
        frames = [str(name) for name in rng.choice(moved, size=min(3, len(moved)), replace=False)]
        qd, tau = rng.uniform(-2, 2, (2, slow_view.dof))
        for kind, constraints in _dependent_constraint_sets(frames, rng).items():
            tolerance = TOL * _kept_condition(slow_view, q, constraints)
            for load in (None, wrenches):
                expected = slow_view.hybrid_dynamics(q, qd, constraints, tau, load)
                answer = fast_view.hybrid_dynamics(q, qd, constraints, tau, load)
                what = f"{kind}, {fast_view.dof} joints"
                methods.add(answer.method)
                assert answer.rank == expected.rank, what
                # Three full constraints may be independent on a tree of 18 joints or more.
                assert expected.rank < len(expected.nu) or kind == "three full", what
                assert_close(answer.qdd, expected.qdd, f"qdd ({what})", tolerance)
                assert_close(answer.nu, expected.nu, f"nu ({what})", tolerance)
                assert_close(answer.constraint_torques, expected.constraint_torques,
                             f"constraint torques ({what})", tolerance)
                assert answer.frame_accelerations.keys() == expected.frame_accelerations.keys()
                _assert_frame_accelerations(answer, expected, tolerance, f" ({what})")
                # More than one dropped direction: any basis of their span (and either
                # sign of each) is as right, so compare the projectors onto it.
                dropped, reference = answer.dropped_directions, expected.dropped_directions
                assert dropped.shape == reference.shape, what
                assert_close(dropped @ dropped.T, reference @ reference.T,
                             f"dropped span ({what})", tolerance)
                assert answer.constraint_slices == expected.constraint_slices
    # Every answer compiled: the tree sweeps, or the dense solve where mimic joints
    # couple hinges.
    assert methods <= {constrained.COMPILED_HYBRID, constrained.COMPILED_DENSE_HYBRID}
    assert constrained.COMPILED_DENSE_HYBRID in methods if slow.tree.has_mimic \
        else methods == {constrained.COMPILED_HYBRID}


@pytest.mark.parametrize("source,zoo", SOURCES)
def test_dependent_constraints_hold_along_the_directions_kept(source, zoo, rng):
    """No library involved: the kept constraint directions hold (all rows of a consistent
    set), and the constraint torques produce the answer's accelerations."""
    model = _load(source, zoo, "generic")
    q, qd, tau = rng.uniform(-2, 2, (3, model.dof))
    # The frame the most joints move: two random rows there are independent.
    frame = max(model.frame_names, key=lambda name: np.linalg.matrix_rank(model.jacobian(q, name)))
    alpha, beta, weights = rng.normal(size=(6, 2)), rng.normal(size=2), rng.normal(size=2)
    consistent = [(frame, alpha, beta), (frame, alpha, beta),
                  (frame, (alpha @ weights)[:, None], [beta @ weights])]
    over_determined = _dependent_constraint_sets([frame], rng)["three full"]
    for constraints in (consistent, over_determined):
        result = model.hybrid_dynamics(q, qd, constraints, tau)
        assert result.method in (constrained.COMPILED_HYBRID, constrained.COMPILED_DENSE_HYBRID)
        residual = np.concatenate([
            block.T @ result.frame_accelerations[name] - np.asarray(target, dtype=float)
            for name, block, target in constraints])
        dropped = result.dropped_directions
        scale = max(1.0, np.abs(result.frame_accelerations[frame]).max())
        assert_close(residual - dropped @ (dropped.T @ residual), 0.0, "kept rows", 1e-9 * scale)
        if constraints is consistent:
            assert result.rank == 2
            assert_close(residual, 0.0, "every row of a consistent set", 1e-9 * scale)
        assert_close(model.forward_dynamics(q, qd, tau + result.constraint_torques), result.qdd,
                     "FD(tau + constraint torques)", 1e-9 * scale)


def test_inputs_the_compiled_code_declines_get_the_numpy_answer_or_error(rng):
    fast = RobotModel.from_urdf(shipped_urdf("panda.urdf"), kernels="generic")
    slow = RobotModel.from_urdf(shipped_urdf("panda.urdf"), kernels="off")
    n = fast.dof
    q, qd, qdd = rng.uniform(-2, 2, (3, n))
    strided = np.zeros(2 * n)
    strided[::2] = q
    for variant in (list(q), q.astype(np.float32), strided[::2], q.astype(">f8")):
        assert_close(fast.inverse_dynamics(variant, qd, qdd),
                     slow.inverse_dynamics(variant, qd, qdd), "converted input", TOL)
        assert_close(fast.frame_pose(variant, "panda_hand"), slow.frame_pose(variant, "panda_hand"),
                     "converted pose", TOL)
    wrenches = {"panda_hand": list(rng.normal(size=6))}
    assert_close(fast.forward_dynamics(list(q), qd, qdd, wrenches),
                 slow.forward_dynamics(list(q), qd, qdd, wrenches), "list + wrench list", TOL)
    # The wrench forms the compiled code reads itself (the dict goes to C as it is); with
    # the numpy path off, an answer that came from numpy fails.
    compiled_only = disable_numpy_path(
        RobotModel.from_urdf(shipped_urdf("panda.urdf"), kernels="generic"))
    columns = rng.normal(size=(6, 2))
    for wrench in (tuple(int(value) for value in rng.integers(-5, 5, 6)),
                   list(rng.normal(size=6)), rng.normal(size=6), columns[:, 0]):
        loads = {"panda_hand": wrench, "panda_link3": np.ones(6)}
        assert_close(compiled_only.inverse_dynamics(q, qd, qdd, loads),
                     slow.inverse_dynamics(q, qd, qdd, loads), f"ID with {wrench!r}", TOL)
        assert_close(compiled_only.forward_dynamics(q, qd, qdd, loads),
                     slow.forward_dynamics(q, qd, qdd, loads), f"FD with {wrench!r}", TOL)
    # Text numpy converts: the compiled code declines, the numpy path answers.
    assert_close(fast.inverse_dynamics(q, qd, qdd, {"panda_hand": ["1"] * 6}),
                 slow.inverse_dynamics(q, qd, qdd, {"panda_hand": ["1"] * 6}), "text wrench", TOL)
    bad = q.copy()
    bad[3] = np.nan
    for model in (fast, slow):
        with pytest.raises(InvalidInputError, match="index"):
            model.inverse_dynamics(bad, qd, qdd)
        with pytest.raises(InvalidInputError, match="shape"):
            model.gravity_torques(np.zeros(n + 1))
        with pytest.raises(InvalidInputError):
            model.frame_pose(bad, "panda_hand")
        with pytest.raises(InvalidInputError):
            model.jacobian(np.zeros(n - 1), "panda_hand")
        with pytest.raises(UnknownNameError):
            model.frame_pose(q, "no_such_link")
        with pytest.raises(UnknownNameError):
            model.inverse_dynamics(q, qd, qdd, {"no_such_link": np.zeros(6)})
        with pytest.raises(InvalidInputError):
            model.inverse_dynamics(q, qd, qdd, {"panda_hand": np.zeros(5)})
        with pytest.raises(InvalidInputError):
            model.forward_dynamics(q, qd, qdd, {"panda_hand": [np.nan] * 6})
        for malformed in (np.zeros(6, dtype=complex), [1e300 * 1e10] * 6, [0.0] * 7):
            with pytest.raises(InvalidInputError):
                model.inverse_dynamics(q, qd, qdd, {"panda_hand": malformed})
        with pytest.raises(UnknownNameError):
            model.forward_dynamics(q, qd, qdd, {3: np.zeros(6)})
        # Constraints the compiled code reads unparsed still get the parser's errors.
        rows = np.eye(6)[:, :3]
        with pytest.raises(UnknownNameError):
            model.hybrid_dynamics(q, qd, [("no_such_link", rows, np.zeros(3))])
        with pytest.raises(InvalidInputError, match="alpha holds NaN"):
            model.hybrid_dynamics(q, qd, [("panda_hand", np.full((6, 3), np.nan), np.zeros(3))])
        with pytest.raises(InvalidInputError, match="beta"):
            model.hybrid_dynamics(q, qd, [("panda_hand", rows, np.zeros(2))])
        with pytest.raises(InvalidInputError, match="beta"):
            model.hybrid_dynamics(q, qd, [("panda_hand", rows, np.array([np.inf, 0.0, 0.0]))])
        with pytest.raises(InvalidInputError):
            model.forward_dynamics(q, qd, qdd, [("panda_hand", np.zeros(6))])
        with pytest.raises(InvalidInputError, match="sample"):
            model.inverse_dynamics_batch(np.zeros((3, n)), np.zeros((3, n)),
                                         np.full((3, n), np.inf))
        with pytest.raises(InvalidInputError):
            model.subgraph(model.joint_names[:3]).forward_dynamics(q, np.zeros(3), np.zeros(4))


def test_a_wrongly_called_generic_function_is_a_type_error_or_a_status():
    module = generic_module()
    fast = RobotModel.from_urdf(shipped_urdf("double_pendulum.urdf"), kernels="generic")
    compiled, params = fast.generic_kernels()
    with pytest.raises(TypeError, match="arguments"):
        module.gravity_torques(compiled.model, np.zeros(2))
    with pytest.raises(ValueError):
        module.gravity_torques(object(), np.zeros(2), params)     # not a model capsule
    assert module.gravity_torques(compiled.model, np.zeros(3), params) == 1
    assert module.gravity_torques(compiled.model, np.zeros(2), np.zeros(3)) == 1
    assert module.jacobian(compiled.model, 10 ** 6, np.zeros(2), params) == 1


def _run(script, cache, prebuilt):
    env = dict(os.environ, SOA_DYNAMICS_CACHE=str(cache), SOA_DYNAMICS_PREBUILT=str(prebuilt))
    env.pop("SOA_DYNAMICS_KERNELS", None)
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          cwd=REPO, env=env, timeout=600)


FIRST_CALLS = (
        "import logging, sys\n"
        "logging.basicConfig(level=logging.INFO, stream=sys.stdout, format='%(message)s')\n"
        "from soa_dynamics_ros.model import RobotModel, reference\n"
        "answers = []\n"
        f"for path in ({shipped_urdf('panda.urdf')!r}, {shipped_urdf('ur5.urdf')!r}):\n"
        "    m = RobotModel.from_urdf(path)\n"
        "    def refuse(*_):\n"
        "        raise AssertionError('numpy path')\n"
        "    reference.inverse_dynamics = refuse\n"
        "    answers.append(m.gravity_torques([0.1] * m.dof).tolist())\n"
        "print('answers', answers)\n")


def _check_first_answers(run):
    expected = [RobotModel.from_urdf(shipped_urdf(name), kernels="off").gravity_torques(
        [0.1] * dof).tolist() for name, dof in (("panda.urdf", 7), ("ur5.urdf", 6))]
    answers = eval(run.stdout.split("answers", 1)[1])
    for answer, reference in zip(answers, expected):
        assert_close(np.array(answer), np.array(reference), "first call", TOL)


def test_without_an_installed_generic_module_one_compile_per_cache(tmp_path):
    """No generic module installed, an empty cache: the first call of a model is answered
    by compiled code after one compile (the generic module, into the cache); a second robot
    and a second process compile nothing."""
    cache, prebuilt = tmp_path / "cache", tmp_path / "prebuilt"
    first, second = _run(FIRST_CALLS, cache, prebuilt), _run(FIRST_CALLS, cache, prebuilt)
    for run in (first, second):
        assert run.returncode == 0, run.stderr
    assert first.stdout.count("compiling kernel") == 1, first.stdout
    assert "compiling kernel generic" in first.stdout
    assert "compiling" not in second.stdout, second.stdout
    assert len(list((cache / "kernels").glob(f"soa_generic_*{build.EXTENSION}"))) == 1
    assert not prebuilt.exists()
    _check_first_answers(first)


def test_the_installed_generic_module_serves_an_empty_cache_with_no_compile(tmp_path):
    """setup.sh installs the generic module outside the kernel cache: a new, empty cache
    (a robot never seen, SOA_DYNAMICS_CACHE emptied) answers compiled from the first call."""
    prebuilt = tmp_path / "prebuilt"
    installed = _run("from soa_dynamics_ros import kernels; kernels.install_generic_module()",
                     tmp_path / "unused", prebuilt)
    assert installed.returncode == 0, installed.stderr
    assert len(list(prebuilt.glob(f"soa_generic_*{build.EXTENSION}"))) == 1
    run = _run(FIRST_CALLS, tmp_path / "cache", prebuilt)
    assert run.returncode == 0, run.stderr
    assert "compiling" not in run.stdout, run.stdout
    assert not list((tmp_path / "cache").glob(f"**/soa_generic_*{build.EXTENSION}"))
    _check_first_answers(run)


def test_the_installed_generic_module_is_looked_up_in_the_ament_index_prefix(tmp_path, monkeypatch):
    """A colcon workspace installs into install/soa_dynamics_ros, not the interpreter's prefix:
    the prefix whose ament index lists the package is where the generic module is."""
    workspace, other = tmp_path / "install" / "soa_dynamics_ros", tmp_path / "other"
    marker = workspace / "share" / "ament_index" / "resource_index" / "packages" / "soa_dynamics_ros"
    marker.parent.mkdir(parents=True)
    marker.touch()
    other.mkdir()
    monkeypatch.delenv("SOA_DYNAMICS_PREBUILT", raising=False)
    monkeypatch.setenv("AMENT_PREFIX_PATH", os.pathsep.join([str(other), str(workspace)]))
    assert kernels.prebuilt_dir() == workspace / "share" / "soa_dynamics_ros" / "kernels"
    monkeypatch.setenv("AMENT_PREFIX_PATH", str(other))
    assert kernels.prebuilt_dir() == pathlib.Path(sys.prefix) / "share" / "soa_dynamics_ros" / "kernels"
