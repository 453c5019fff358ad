"""Compiled kernels against the numpy reference path (issue 6).

Every shipped robot and random trees (mimic, prismatic and continuous joints)
are generated, compiled with the C compiler and compared with the numpy path
on random states; the on-disk cache makes reruns fast.
"""
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from support.numerics import assert_close
from support.robot_generator import random_tree_urdf
from support.robots import REPO, SHIPPED_ROBOTS, shipped_urdf
from support.small_robots import MASSLESS
from support.waiting import wait_for
from soa_dynamics_ros.errors import InvalidInputError, SingularDynamicsError
from soa_dynamics_ros.kernels import Kernels, build, generator, tracing
from soa_dynamics_ros.model import RobotModel, kernel_router

TOL = 1e-12
RANDOM_TREES = [  # (seed, moving joints, mimic fraction)
    (11, 8, 0.0), (12, 10, 0.3), (13, 6, 0.5), (14, 12, 0.15),
    (24, 10, 0.3)]  # (its M has no tree's sparsity: the dense Cholesky tail)


def _sources():
    return ([("shipped", shipped_urdf(name)) for name in SHIPPED_ROBOTS]
            + [(f"random{seed}", random_tree_urdf(seed, moving_joints=n, mimic_fraction=mimic,
                                                   prismatic_fraction=0.25,
                                                   continuous_fraction=0.25))
               for seed, n, mimic in RANDOM_TREES])


SOURCES = _sources()
IDS = [os.path.basename(name) if kind == "shipped" else kind for kind, name in SOURCES]


def test_mimic_forward_dynamics_solves_by_the_tree_where_m_has_its_sparsity(rng):
    """folded_tree_parents' claim, checked on M itself: the factor M = L^T L (L lower
    triangular, numpy's Cholesky of M in reversed order) is zero outside each row's chain
    of parents, so the LTL tail (soa_tree_solve) loses nothing.  The robots above hold
    both forward-dynamics tails of mimic robots to the reference
    (test_generated_code_matches_reference)."""
    tails = set()
    for _, source in SOURCES:
        model = RobotModel.from_urdf(source, kernels="off")
        if not model.tree.coordinates.couples_hinges:
            continue
        parents = tracing.folded_tree_parents(model.tree)
        tails.add(parents is None)
        if parents is None:
            continue
        reverse = np.arange(model.dof)[::-1]
        for _ in range(3):
            mass = model.mass_matrix(rng.uniform(-2, 2, model.dof))
            factor = np.linalg.cholesky(mass[np.ix_(reverse, reverse)])[np.ix_(reverse, reverse)].T
            assert_close(factor.T @ factor, mass, "M = L^T L", TOL)
            for row in range(model.dof):
                chain, link = {row}, parents[row]
                while link >= 0:
                    chain.add(link)
                    link = parents[link]
                outside = [column for column in range(row) if column not in chain]
                assert np.all(np.abs(factor[row, outside]) <= TOL * np.abs(mass).max()), row
    assert tails == {True, False}, "both tails (tree and dense) must be among the robots"


def _pair(source):
    return (RobotModel.from_urdf(source, kernels="c"), RobotModel.from_urdf(source, kernels="off"))


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
        assert_close(fast.coriolis_transpose_product(q, qd),
                     slow.coriolis_transpose_product(q, qd), "C^T qd", TOL)
        assert_close(fast.forward_dynamics(q, qd, tau), slow.forward_dynamics(q, qd, tau),
                     "forward dynamics", 1e-10 if fast.tree.has_mimic else TOL)
        for k, (answer, expected) in enumerate(zip(fast.inverse_dynamics_derivatives(q, qd, qdd),
                                                   slow.inverse_dynamics_derivatives(q, qd, qdd))):
            assert_close(answer, expected, f"inverse dynamics derivatives [{k}]", TOL)
        assert_close(fast.gravity_derivatives(q), slow.gravity_derivatives(q), "dg/dq", TOL)
        for k, (answer, expected) in enumerate(zip(fast.forward_dynamics_derivatives(q, qd, tau),
                                                   slow.forward_dynamics_derivatives(q, qd, tau))):
            # solved with M: round-off grows with its condition, as forward dynamics'
            assert_close(answer, expected, f"forward dynamics derivatives [{k}]", 1e-10)
        for frame in frames:
            assert_close(fast.frame_pose(q, frame), slow.frame_pose(q, frame), f"T {frame}", TOL)
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


def test_a_large_tree_takes_the_generic_derivatives(rng, monkeypatch):
    """Above their caps (MAX_LANES_TRACED_OPERATIONS for the inverse dynamics
    derivatives: 37,000 operations here) no derivative kernel is generated (it would
    compile for minutes); the generic module answers, held to the numpy path.  The
    wrenched dynamics take their own, larger cap."""
    source = random_tree_urdf(15, moving_joints=30)
    fast, slow = _pair(source)
    assert generator.exists(fast.tree, "gravity_derivatives")
    assert not generator.exists(fast.tree, "inverse_dynamics_derivatives")
    q, qd, qdd = rng.uniform(-2, 2, (3, fast.dof))
    for answer, expected in zip(fast.inverse_dynamics_derivatives(q, qd, qdd),
                                slow.inverse_dynamics_derivatives(q, qd, qdd)):
        assert_close(answer, expected, "inverse dynamics derivatives", TOL)
    assert fast.kernels.routes.kernel_set.get("inverse_dynamics_derivatives") is None
    # a forward dynamics kernel per set of wrenched links fits its own cap, and above
    # it (lowered here rather than compile this tree's for a minute) none is generated
    link = _leaf_frames(fast, 1)[0]
    wrenches = {link: rng.normal(size=6)}
    assert generator.exists(fast.tree, "forward_dynamics_wrenches")
    monkeypatch.setattr(generator, "MAX_WRENCHED_DYNAMICS_OPERATIONS", 10)
    assert not generator.exists(fast.tree, "forward_dynamics_wrenches")
    assert_close(fast.forward_dynamics(q, qd, qdd, wrenches),
                 slow.forward_dynamics(q, qd, qdd, wrenches), "FD with a wrench", 1e-10)
    assert fast.kernels.routes.kernel_set.get("forward_dynamics_wrenches", (link,)) is None


def test_a_kernel_whose_batch_runs_lanes_takes_the_larger_cap(monkeypatch):
    """Between MAX_TRACED_OPERATIONS and MAX_LANES_TRACED_OPERATIONS only the inverse
    dynamics derivatives are generated (their batch runs SIMD lanes), and only their batch
    answers: not their wrenched version, which has no batch, nor the gravity and forward
    ones (caps lowered here to the Panda's trace sizes, so that nothing compiles)."""
    tree = RobotModel.from_urdf(shipped_urdf("panda.urdf"), kernels="off").tree
    assert generator.DERIVATIVE_LANES["inverse_dynamics_derivatives"]
    sizes = {kernel: len(generator._CAPPED_TRACES[kernel](tree)[0].trace.ops)
             for kernel in ("inverse_dynamics_derivatives", "gravity_derivatives",
                            "forward_dynamics_derivatives")}
    smallest = min(sizes.values())
    monkeypatch.setattr(generator, "MAX_TRACED_OPERATIONS", smallest - 1)
    monkeypatch.setattr(generator, "MAX_LANES_TRACED_OPERATIONS",
                        sizes["inverse_dynamics_derivatives"])
    assert generator.exists(tree, "inverse_dynamics_derivatives")
    assert generator.batch_only(tree, "inverse_dynamics_derivatives")
    assert not generator.batch_only(tree, "inverse_dynamics_derivatives_batch")
    for kernel in ("inverse_dynamics_derivatives_wrenches", "gravity_derivatives",
                   "forward_dynamics_derivatives"):
        assert not generator.exists(tree, kernel), kernel
    monkeypatch.setattr(generator, "MAX_LANES_TRACED_OPERATIONS",
                        sizes["inverse_dynamics_derivatives"] - 1)
    assert not generator.exists(tree, "inverse_dynamics_derivatives")
    monkeypatch.setattr(generator, "MAX_TRACED_OPERATIONS", 10**9)
    monkeypatch.setattr(generator, "MAX_LANES_TRACED_OPERATIONS", 10**9)
    assert not generator.batch_only(tree, "inverse_dynamics_derivatives")


def test_a_batch_only_module_answers_batches_and_leaves_single_calls_generic(rng):
    """The dual-arm robot's inverse dynamics derivatives are batch-only: after
    prepare_kernels() its batch is the robot's own kernel, its single calls the generic
    module's, and both agree with the numpy path."""
    source = shipped_urdf("dual_arm_torso.urdf")
    fast, slow = _pair(source)
    name = "inverse_dynamics_derivatives"
    assert generator.batch_only(fast.tree, name), "the robot no longer falls between the caps"
    fast.prepare_kernels(wrenches=False)
    assert fast.kernels.routes.ready[name] is None
    assert fast.kernels.routes.single["inverse_dynamics_derivatives"] is fast.kernels.routes.generic[name]
    batch = fast.kernels.routes.ready[name + "_batch"]
    assert batch is not None and batch is not fast.kernels.routes.generic.get(name + "_batch")
    Q, QD, QDD = rng.uniform(-2, 2, (3, 9, fast.dof))
    rows = fast.inverse_dynamics_derivatives_batch(Q, QD, QDD)
    for s in range(len(Q)):
        expected = slow.inverse_dynamics_derivatives(Q[s], QD[s], QDD[s])
        for part, answer, single in zip(expected, (rows[0][s], rows[1][s]),
                                        fast.inverse_dynamics_derivatives(Q[s], QD[s], QDD[s])):
            assert_close(answer, part, "batch-only kernel's row", TOL)
            assert_close(single, part, "generic single call", TOL)


def test_prepared_kernels_that_are_not_generated_go_to_the_generic_module_at_once(
        rng, monkeypatch):
    """prepare_kernels decides every kernel: one that is not generated (derivatives over
    their cap, as here the forward ones of a mimic robot with the cap lowered below them;
    wrenched ones of a link whose set is over the cap) is answered by the generic function
    from the first call, with no auto-mode request counting towards a compile that cannot
    happen."""
    (source,) = [source for kind, source in SOURCES if kind == "random12"]   # mimic joints
    fast, slow = RobotModel.from_urdf(source, kernels="auto"), RobotModel.from_urdf(
        source, kernels="off")
    if fast.kernels[1] is None:
        pytest.fail("auto mode found no compiler: scripts/setup.sh installs one")
    name = "forward_dynamics_derivatives"
    assert generator.exists(fast.tree, name)
    monkeypatch.setattr(generator, "MAX_TRACED_OPERATIONS",
                        generator.traced_size(fast.tree, name) - 1)
    assert not generator.exists(fast.tree, name)
    link = _leaf_frames(fast, 1)[0]
    fast.prepare_kernels(frames=[link])
    assert fast.kernels.routes.ready[name] is None and fast.kernels.routes.ready[name + "_batch"] is None
    assert fast.kernels.routes.single["forward_dynamics_derivatives"] is fast.kernels.routes.generic[name]
    q, qd, tau = rng.uniform(-1, 1, (3, fast.dof))
    for answer, expected in zip(fast.forward_dynamics_derivatives(q, qd, tau),
                                slow.forward_dynamics_derivatives(q, qd, tau)):
        assert_close(answer, expected, "forward dynamics derivatives",
                     TOL * np.linalg.cond(slow.mass_matrix(q)))
    assert not fast.kernels.routes.requests, fast.kernels.routes.requests


@pytest.mark.parametrize("kind,source", SOURCES, ids=IDS)
def test_generated_code_matches_reference(kind, source, rng):
    fast, slow = _pair(source)
    _check_against_reference(fast, slow, rng, frames=_leaf_frames(fast))
    # The generated code was used, not the numpy fallback.
    assert fast.kernels.routes.ready.get("inverse_dynamics") is not None
    for frame in _leaf_frames(fast):    # what frame_pose and jacobian call: their kernels
        assert fast.kernels.routes.frame_pose[frame] is fast.kernels.routes.ready[("frame_pose", frame)]
        assert fast.kernels.routes.jacobian[frame] is fast.kernels.routes.ready[("jacobian", frame)]
    # Derivative kernels where generated (not too large).
    for kernel in ("inverse_dynamics_derivatives", "forward_dynamics_derivatives",
                   "gravity_derivatives"):
        assert (fast.kernels.routes.ready.get(kernel) is not None) == (
            generator.exists(fast.tree, kernel) and not generator.batch_only(fast.tree, kernel))
    # Up to 10 hinges (the arms, the mimic trees here) the forward derivatives' trace is
    # under the cap: mimic joints too, by M and h and a traced solve for qdd.
    if fast.tree.nb <= 11:
        assert fast.kernels.routes.ready.get("forward_dynamics_derivatives") is not None


@pytest.mark.parametrize("kind,source", SOURCES, ids=IDS)
def test_batches_match_single_calls(kind, source, rng):
    fast, slow = _pair(source)
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
    fast, slow = _pair(shipped_urdf("panda.urdf"))
    q, qd, qdd = rng.uniform(-2, 2, (3, fast.dof))
    fast.inverse_dynamics(q, qd, qdd), fast.forward_dynamics(q, qd, qdd), fast.gravity_torques(q)
    modules = dict(fast.kernels.routes.kernel_set.modules)
    for model in (fast, slow):
        model.attach_payload("box", "panda_hand", 2.5, (0.0, 0.01, 0.1), np.diag([0.01, 0.02, 0.03]))
        model.gravity = [0.5, -1.0, -9.7]
    assert_close(fast.inverse_dynamics(q, qd, qdd), slow.inverse_dynamics(q, qd, qdd), "payload", TOL)
    assert_close(fast.forward_dynamics(q, qd, qdd), slow.forward_dynamics(q, qd, qdd), "FD", TOL)
    for model in (fast, slow):
        model.detach_payload("box")
    assert_close(fast.gravity_torques(q), slow.gravity_torques(q), "detached", TOL)
    assert fast.kernels.routes.kernel_set.modules == modules   # no new code


def test_validation_and_errors_in_front_of_kernels():
    fast = RobotModel.from_urdf(shipped_urdf("panda.urdf"), kernels="c")
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


@pytest.mark.parametrize("compiled", ["c", "generic"])
def test_singular_hinge_raises_like_the_reference(compiled):
    fast = RobotModel.from_urdf(MASSLESS, kernels=compiled)
    with pytest.raises(SingularDynamicsError):
        fast.forward_dynamics([0.0], [0.0], [1.0])
    with pytest.raises(SingularDynamicsError):
        fast.forward_dynamics_batch(np.zeros((2, 1)), np.zeros((2, 1)), np.ones((2, 1)))


def test_kernel_switch():
    model = RobotModel.from_urdf(shipped_urdf("double_pendulum.urdf"), kernels="off")
    assert model.kernels == ("off", None)
    model.set_kernels("c")
    assert model.kernels == ("c", "c")
    with pytest.raises(InvalidInputError):
        model.set_kernels("fortran")


def test_compiled_kernels_survive_a_new_process():
    """A second process loads the compiled kernels instead of compiling them."""
    script = (
        "import logging, sys\n"
        "logging.basicConfig(level=logging.INFO, stream=sys.stdout, format='%(message)s')\n"
        "from soa_dynamics_ros.model import RobotModel\n"
        f"m = RobotModel.from_urdf({shipped_urdf('double_pendulum.urdf')!r}, kernels='c')\n"
        "m.prepare_kernels()\n"
        "print('answer', m.gravity_torques([0.1, 0.2]))\n")
    runs = [subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                           cwd=REPO, timeout=600) for _ in range(2)]
    for run in runs:
        assert run.returncode == 0, run.stderr
        assert "answer" in run.stdout
    assert "compiled in" not in runs[1].stdout, runs[1].stdout
    assert "loaded from cache" in runs[1].stdout


def test_arrays_the_kernels_decline_still_get_the_reference_answer(rng):
    """Lists, integer, float32, strided and non-contiguous inputs are converted, not refused."""
    fast, slow = _pair(shipped_urdf("panda.urdf"))
    n = fast.dof
    q, qd, qdd = rng.uniform(-2, 2, (3, n))
    strided = np.zeros(2 * n)
    strided[::2] = q
    for variant in (list(q), q.astype(np.float32), strided[::2], q.astype(">f8")):
        assert_close(fast.inverse_dynamics(variant, qd, qdd),
                     slow.inverse_dynamics(variant, qd, qdd), "declined input", TOL)
    assert fast.kernels.routes.ready.get("inverse_dynamics") is not None
    integers = np.arange(n)
    assert_close(fast.gravity_torques(integers), slow.gravity_torques(integers), "ints", TOL)
    frame = "panda_hand_tcp"
    assert_close(fast.jacobian(list(q), frame), slow.jacobian(q, frame), "J list", TOL)
    assert_close(fast.task_space_inertia(strided[::2], frame), slow.task_space_inertia(q, frame),
                 "Lambda strided", 1e-9)
    assert fast.kernels.routes.ready.get(("jacobian", frame)) is not None
    with pytest.raises(InvalidInputError):
        fast.jacobian(np.full(n, np.nan), frame)
    Q = np.asfortranarray(rng.uniform(-2, 2, (4, n)))
    assert_close(fast.gravity_torques_batch(Q), slow.gravity_torques_batch(Q), "F-order", TOL)
    with pytest.raises(InvalidInputError, match="q"):
        fast.bias_torques(None, qd)
    with pytest.raises(InvalidInputError):
        fast.bias_torques(q, None)
    with pytest.raises(InvalidInputError):
        fast.mass_matrix(np.full(n, 1e51))


def test_a_node_start_up_never_compiles_the_derivative_or_wrenched_kernels(rng):
    """prepare_kernels(derivatives=False, wrenches=False), as the node's: kernels="c"
    neither builds nor loads a derivative or wrenched kernel then or later; the generic
    module answers them."""
    fast, slow = _pair(shipped_urdf("double_pendulum.urdf"))
    link = _leaf_frames(fast, 1)[0]
    fast.prepare_kernels(frames=[link], derivatives=False, wrenches=False)
    q, qd, qdd = rng.uniform(-2, 2, (3, fast.dof))
    wrenches = {link: rng.normal(size=6)}
    for name, arguments in (("inverse_dynamics_derivatives", (q, qd, qdd)),
                            ("forward_dynamics_derivatives", (q, qd, qdd)),
                            ("gravity_derivatives", (q,)),
                            ("inverse_dynamics", (q, qd, qdd, wrenches)),
                            ("forward_dynamics", (q, qd, qdd, wrenches))):
        answers, expected = getattr(fast, name)(*arguments), getattr(slow, name)(*arguments)
        if type(answers) is np.ndarray:
            answers, expected = (answers,), (expected,)
        for k, (answer, reference) in enumerate(zip(answers, expected)):
            assert_close(answer, reference, f"{name} [{k}]", TOL)
    # every module the model's kernel set was asked for, built or loaded
    asked = {kernel for kernel, _ in fast.kernels.routes.kernel_set.modules}
    assert "inverse_dynamics" in asked and "jacobian" in asked, asked
    assert not asked & set(Kernels.DERIVATIVE_KERNELS + Kernels.WRENCHED_KERNELS), asked


def test_the_derivative_kernels_leave_bad_input_to_the_numpy_path_to_name():
    fast = RobotModel.from_urdf(shipped_urdf("double_pendulum.urdf"), kernels="c")
    n = fast.dof
    z = np.zeros(n)
    calls = [lambda v: fast.inverse_dynamics_derivatives(v, z, z),
             lambda v: fast.inverse_dynamics_derivatives(z, z, v),
             lambda v: fast.forward_dynamics_derivatives(z, v, z),
             lambda v: fast.forward_dynamics_derivatives(z, z, v),
             lambda v: fast.gravity_derivatives(v),
             # the batches: a bad value in the last of two samples
             lambda v: fast.inverse_dynamics_derivatives_batch([z, v], [z, z], [z, z]),
             lambda v: fast.inverse_dynamics_derivatives_batch([z, z], [z, z], [z, v]),
             lambda v: fast.forward_dynamics_derivatives_batch([z, z], [z, v], [z, z]),
             lambda v: fast.forward_dynamics_derivatives_batch([z, z], [z, z], [z, v]),
             lambda v: fast.gravity_derivatives_batch([z, v])]
    for call in calls:
        call(z)
        for bad, message in ((np.zeros(n + 1), "shape"), (np.r_[z[:-1], np.nan], "NaN or inf"),
                             (np.r_[z[:-1], 1e200], "beyond 1e\\+50"), (["a"] * n, "numeric")):
            with pytest.raises(InvalidInputError, match=message):
                call(bad)
    p = fast.kernels.parameters
    for kernel in Kernels.DERIVATIVE_KERNELS:       # the kernels, not the generic module
        assert fast.kernels.routes.ready.get(kernel) is not None, kernel
        # The batch kernels refuse what the validation above never lets through: sample 1
        # (4 * 1 + status 1), or status 1 for arrays of another shape or type.
        batch = fast.kernels.routes.ready.get(kernel + "_batch")
        inputs = 1 if kernel == "gravity_derivatives" else 3
        assert batch is not None, kernel
        for bad in (np.nan, np.inf, 1e200):
            rows = np.zeros((2, n))
            rows[1, -1] = bad
            assert batch(*[rows] * inputs, p) == 5, (kernel, bad)
        for rows in (np.zeros((2, n + 1)), np.zeros((2, n), dtype=np.float32),
                     np.zeros((n, 2)).T, [[0.0] * n] * 2):
            assert batch(*[rows] * inputs, p) == 1, (kernel, rows)


def test_kernel_called_wrongly_is_a_type_error_not_a_crash():
    fast = RobotModel.from_urdf(shipped_urdf("double_pendulum.urdf"), kernels="c")
    fast.prepare_kernels()
    kernel = fast.kernels.routes.ready["gravity_torques"]
    with pytest.raises(TypeError, match="2 arguments"):
        kernel(np.zeros(2))
    assert kernel(np.zeros(3), fast.kernels.parameters) == 1          # wrong length: status, no answer
    assert kernel(np.zeros(2), np.zeros(3)) == 1           # wrong parameter vector


def _run_with_cache(script, cache, **environment):
    env = dict(os.environ, SOA_DYNAMICS_CACHE=str(cache), **environment)
    return subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=REPO, env=env)


def test_concurrent_first_compiles_share_one_cache(tmp_path):
    """Two processes compiling the same robot at once both load a whole library."""
    script = (
        "from soa_dynamics_ros.model import RobotModel\n"
        f"m = RobotModel.from_urdf({shipped_urdf('double_pendulum.urdf')!r}, kernels='c')\n"
        "m.prepare_kernels()\n"
        "print(m.gravity_torques([0.1, 0.2]).tolist())\n")
    # No generic module installed either: both processes compile it too.
    processes = [_run_with_cache(script, tmp_path, SOA_DYNAMICS_PREBUILT=str(tmp_path / "none"))
                 for _ in range(2)]
    outputs = [process.communicate(timeout=600) for process in processes]
    expected = RobotModel.from_urdf(shipped_urdf("double_pendulum.urdf"),
                                    kernels="off").gravity_torques([0.1, 0.2])
    for process, (stdout, stderr) in zip(processes, outputs):
        assert process.returncode == 0, stderr
        assert_close(np.array(eval(stdout)), expected, "concurrent compile", TOL)
    libraries = list((tmp_path / "kernels").glob(f"soa_kernels_*{build.EXTENSION}"))
    # one per kernel, none twice
    assert len(libraries) == len(Kernels.MODEL_KERNELS) + len(Kernels.DERIVATIVE_KERNELS)
    assert len(list((tmp_path / "kernels").glob(f"soa_generic_*{build.EXTENSION}"))) == 1
    assert not list((tmp_path / "kernels").glob(".*"))           # no partial file left


def test_a_failing_compiler_is_reported_and_auto_keeps_answering(tmp_path):
    script = (
        "import logging, sys\n"
        "logging.basicConfig(level=logging.INFO, stream=sys.stdout, format='%(message)s')\n"
        "from soa_dynamics_ros.model import RobotModel\n"
        "from soa_dynamics_ros.kernels.build import KernelBuildError\n"
        f"m = RobotModel.from_urdf({shipped_urdf('double_pendulum.urdf')!r}, kernels='c')\n"
        "try:\n"
        "    m.prepare_kernels()\n"
        "except KernelBuildError as error:\n"
        "    print('build error:', str(error).splitlines()[0])\n"
        f"m = RobotModel.from_urdf({shipped_urdf('double_pendulum.urdf')!r})\n"
        "for _ in range(3000):\n"
        "    tau = m.gravity_torques([0.1, 0.2])\n"
        "import time; time.sleep(2)\n"
        "print('answer', m.gravity_torques([0.1, 0.2]), m.kernels.routes.ready.get('gravity_torques'))\n")
    stdout, stderr = _run_with_cache(script, tmp_path, CC="false").communicate(timeout=600)
    assert "build error: compiling" in stdout, stdout + stderr
    assert "failed to build; using numpy" in stdout + stderr
    assert "answer" in stdout and stdout.rstrip().endswith("None")


def test_without_a_compiler_auto_is_the_numpy_path_and_c_says_why(tmp_path):
    script = (
        "from soa_dynamics_ros.model import RobotModel\n"
        f"m = RobotModel.from_urdf({shipped_urdf('double_pendulum.urdf')!r})\n"
        "print('mode', m.kernels)\n"
        "try:\n"
        f"    RobotModel.from_urdf({shipped_urdf('double_pendulum.urdf')!r}, kernels='c')\n"
        "except ImportError as error:\n"
        "    print('error:', error)\n")
    stdout, stderr = _run_with_cache(script, tmp_path, CC="no-such-cc").communicate(timeout=600)
    assert "mode ('auto', None)" in stdout, stdout + stderr
    assert "error: compiled kernels are unavailable: the C compiler CC='no-such-cc' is not found" \
        in stdout, stdout


def _processes_mentioning(text):
    found = []
    for cmdline in pathlib.Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if text in cmdline.read_bytes().decode(errors="replace"):
                found.append(int(cmdline.parent.name))
        except OSError:
            continue
    return found


def test_a_process_killed_mid_compile_leaves_no_compiler_and_no_partial_file(tmp_path):
    """SIGKILL (no clean-up runs) while the compiler works: the compiler dies with the
    process, nothing partial appears under a final name, and the next build sweeps the
    temporary files and compiles."""
    urdf = random_tree_urdf(11, moving_joints=12)
    script = (f"from soa_dynamics_ros.model import RobotModel\n"
              f"RobotModel.from_urdf({urdf!r}, kernels='c').prepare_kernels()\n")
    cache = tmp_path / "kernels"
    victim = _run_with_cache(script, tmp_path)
    try:
        wait_for(lambda: any(_processes_mentioning(f"{cache}/.soa_kernels_")), timeout=120.0,
                 what="a compiler to start")
        victim.kill()
        victim.wait(timeout=60)
    finally:
        if victim.poll() is None:
            victim.kill()
            victim.wait()
    wait_for(lambda: not _processes_mentioning(str(cache)), timeout=60.0,
             what="the compilers to end with the process that started them")
    for library in cache.glob(f"soa_kernels_*{build.EXTENSION}"):
        build.load(library.name.removesuffix(build.EXTENSION), library)   # complete, loadable
    survivor = _run_with_cache(script + "print('built')\n", tmp_path)
    stdout, stderr = survivor.communicate(timeout=900)
    assert survivor.returncode == 0 and "built" in stdout, stderr
    assert not list(cache.glob(".*")), list(cache.glob(".*"))


def test_auto_mode_moves_frame_pose_and_jacobian_to_their_kernels(rng, monkeypatch):
    """The generic module answers a frame's pose and Jacobian until the frame's own kernels
    are compiled (after AUTO_COMPILE_AFTER calls), then those do, with the same answers."""
    monkeypatch.setattr(kernel_router, "AUTO_COMPILE_AFTER", 5)
    fast = RobotModel.from_urdf(shipped_urdf("ur5.urdf"), kernels="auto")
    slow = RobotModel.from_urdf(shipped_urdf("ur5.urdf"), kernels="off")
    if fast.kernels[1] is None:
        pytest.fail("auto mode found no compiler: scripts/setup.sh installs one")
    frame = _leaf_frames(fast, 1)[0]
    q = rng.uniform(-2, 2, fast.dof)
    for _ in range(6):
        assert_close(fast.frame_pose(q, frame), slow.frame_pose(q, frame), "pose", TOL)
        assert_close(fast.jacobian(q, frame), slow.jacobian(q, frame), "J", TOL)
    for kernel, bound in (("frame_pose", fast.kernels.routes.frame_pose), ("jacobian", fast.kernels.routes.jacobian)):
        wait_for(lambda: (kernel, frame) in fast.kernels.routes.ready, timeout=120.0, what=f"{kernel} compiled")
        assert bound[frame] is fast.kernels.routes.ready[(kernel, frame)]
    assert_close(fast.frame_pose(q, frame), slow.frame_pose(q, frame), "pose", TOL)
    assert_close(fast.jacobian(q, frame), slow.jacobian(q, frame), "J", TOL)
