"""The robots' own batches of the derivative kernels (issue 17).

A robot's derivative kernel module carries a batch version (generator.py): (N, dof)
inputs, one row of ``parts * dof * dof`` per sample.  Every row must be the single call's
answer: exactly where the same core runs it (the gravity derivatives, which have no lanes
core), to 1e-12 where a lanes core does (the inverse and forward derivatives: the forward
one's fills a copy of M and of the right-hand sides per lane, then solves lane by lane);
in a batch of a few blocks and a tail, and in one split over two threads.  The first
failing sample is named whichever share it is in; through the API, ``kernels="c"`` and
``"auto"`` answer with these kernels as the generic module would, and a node's start-up
never compiles one.
"""
import os

import numpy as np
import pytest

from support.numerics import assert_close
from support.robot_generator import random_tree_urdf
from support.robots import SHIPPED_ROBOTS, shipped_urdf, zoo_urdf_text
from support.small_robots import POINT_ONTO_AXIS
from support.waiting import wait_for
from soa_dynamics_ros.errors import InertiaWarning, SingularDynamicsError
from soa_dynamics_ros.kernels import generator
from soa_dynamics_ros.model import RobotModel
from soa_dynamics_ros.model import derivatives as derivatives_module
from soa_dynamics_ros.model import robot_model as robot_model_module

TOL = 1e-12
DERIVATIVES = {  # batch kernel: (single-sample kernel, (N, dof) inputs, matrices per sample)
    "inverse_dynamics_derivatives_batch": ("inverse_dynamics_derivatives", 3, 2),
    "forward_dynamics_derivatives_batch": ("forward_dynamics_derivatives", 3, 3),
    "gravity_derivatives_batch": ("gravity_derivatives", 1, 1)}
# Fewer than three blocks of the widest lanes (8) and a tail; over two threads' shares
# (c_emission.samples_per_thread: at most 512 samples each) and a tail.
COUNTS = (19, 2 * 512 + 19)


# The shipped robots, a random tree and an rtb-data arm with a mimic gripper (its forward
# derivatives solve for qdd with M and h); loaded in the test (the zoo one skips without
# rtb-data).
ZOO_ROBOT = "trossen_descriptions/urdf/vx300s.urdf.xacro"
ROBOTS = ([pytest.param(lambda name=name: shipped_urdf(name), id=name) for name in SHIPPED_ROBOTS]
          + [pytest.param(lambda: random_tree_urdf(21, moving_joints=9, prismatic_fraction=0.25,
                                                   continuous_fraction=0.25), id="random21"),
             pytest.param(lambda: zoo_urdf_text(ZOO_ROBOT), id="vx300s")])


@pytest.fixture(scope="module", autouse=True)
def several_cpus():
    if len(os.sched_getaffinity(0)) < 2:
        pytest.fail("these tests need 2 usable CPUs: with one, batches never split")


def _inputs(dof, rng, count):
    q, qd, qdd = rng.uniform(-2, 2, (3, count, dof))
    return q, qd, qdd * 10          # torques for forward dynamics


def _tuple(answer):
    """An answer of the API or a single kernel as a tuple of its parts."""
    return answer if type(answer) is tuple else (answer,)


@pytest.mark.parametrize("load", ROBOTS)
def test_every_row_is_the_single_kernel(load, traced_robot, rng):
    robot = traced_robot(load())
    p, n = robot.parameters(), robot.dof
    for count in COUNTS:
        arrays = _inputs(n, rng, count)
        for batch, (single, inputs, parts) in DERIVATIVES.items():
            kernel = robot.compiled(batch)
            assert (kernel is not None) == generator.exists(robot.tree, single), batch
            if kernel is None:
                continue
            rows = kernel(*arrays[:inputs], p)
            assert isinstance(rows, np.ndarray) and rows.shape == (count, parts * n * n), batch
            lanes = generator.DERIVATIVE_LANES.get(single, False)
            for s in range(count):
                expected = np.array(_tuple(
                    robot.compiled(single)(*(a[s] for a in arrays[:inputs]), p)))
                row = rows[s].reshape(parts, n, n)
                if lanes:
                    assert_close(row, expected, f"{batch} row {s} of {count}", TOL)
                else:       # the same core, the same arithmetic
                    np.testing.assert_array_equal(row, expected, f"{batch} row {s} of {count}")


@pytest.mark.parametrize("first, later", [(3, 1000), (515, 530), (700, COUNTS[1] - 1), (17, 18)])
def test_the_first_bad_sample_is_named_whichever_share_it_is_in(first, later, traced_robot,
                                                                 rng):
    robot = traced_robot(shipped_urdf("panda.urdf"))
    p = robot.parameters()
    count = COUNTS[1] if later >= COUNTS[0] else COUNTS[0]
    q, qd, tau = _inputs(robot.dof, rng, count)
    qd[first, 1] = np.nan
    q[later, 2] = 1e200             # beyond validation.MAX_MAGNITUDE
    for batch, (_, inputs, _) in DERIVATIVES.items():
        expected = 4 * (first if inputs == 3 else later) + 1
        assert robot.compiled(batch)(*(q, qd, tau)[:inputs], p) == expected, batch


def test_wrong_arrays_are_a_status_not_a_crash(traced_robot):
    robot = traced_robot(shipped_urdf("panda.urdf"))
    p, n = robot.parameters(), robot.dof
    kernel = robot.compiled("inverse_dynamics_derivatives_batch")
    good = np.zeros((4, n))
    with pytest.raises(TypeError, match="4 arguments"):
        kernel(good, good, p)
    for arrays in ((good, good[:3], good), (good[:, :-1], good[:, :-1], good[:, :-1]),
                   (good, good, good.T.copy().T), (good.astype(np.float32), good, good),
                   (good, good, [[0.0] * n] * 4)):
        assert kernel(*arrays, p) == 1
    assert kernel(good, good, good, p[:-1]) == 1


def _singular_robot():
    with pytest.warns(InertiaWarning, match="l2"):
        return RobotModel.from_urdf(POINT_ONTO_AXIS, kernels="c")


@pytest.mark.parametrize("count, singular", [(150, (100, 130)), (COUNTS[1], (700, 900)),
                                             (COUNTS[1], (5, 900))])
def test_a_singular_sample_is_named_and_raised(count, singular, rng):
    model = _singular_robot()
    model.prepare_kernels()
    kernel = model.kernels.routes.ready["forward_dynamics_derivatives_batch"]
    q, qd, tau = _inputs(model.dof, rng, count)
    q[:, 1] = np.clip(q[:, 1], -1.0, 1.0)        # well away from pi/2 ...
    q[list(singular), 1] = np.pi / 2             # ... but in these samples
    assert kernel(q, qd, tau, model.kernels.parameters) == 4 * singular[0] + 2
    with pytest.raises(SingularDynamicsError, match="l1"):
        model.forward_dynamics_derivatives_batch(q, qd, tau)
    dtau = model.inverse_dynamics_derivatives_batch(q, qd, tau)      # needs no inverse
    assert all(np.all(np.isfinite(part)) for part in dtau)


def _refuse(*_, **__):
    raise AssertionError("the per-sample loop answered")


@pytest.mark.parametrize("mode", ["c", "auto"])
def test_the_api_answers_with_the_robot_batches_after_prepare(mode, rng, monkeypatch):
    """After prepare_kernels(), each derivative batch is one call of the robot's own
    batch kernel (never the loop), with the generic module's shapes and answers."""
    source = shipped_urdf("panda.urdf")
    fast = RobotModel.from_urdf(source, kernels=mode)
    generic = RobotModel.from_urdf(source, kernels="generic")
    fast.prepare_kernels()
    Q, QD, TAU = _inputs(fast.dof, rng, COUNTS[1])
    monkeypatch.setattr(derivatives_module, "batch", _refuse)
    for batch, (_, inputs, parts) in DERIVATIVES.items():
        assert fast.kernels.routes.ready.get(batch) is not None, batch
        for count in (len(Q), 0):
            arrays = tuple(a[:count] for a in (Q, QD, TAU)[:inputs])
            answers, expected = _tuple(getattr(fast, batch)(*arrays)), _tuple(
                getattr(generic, batch)(*arrays))
            assert len(answers) == parts
            for k, (answer, reference) in enumerate(zip(answers, expected)):
                assert answer.shape == reference.shape == (count, fast.dof, fast.dof)
                # solved with M: round-off grows with its condition, as forward dynamics'
                assert_close(answer, reference, f"{batch} [{k}]", 1e-10 if parts == 3 else TOL)


def test_auto_mode_compiles_a_derivative_batch_after_enough_samples(rng):
    """kernels="auto": each batch sample counts as a call towards compiling the robot's
    batch kernel in the background; the generic module answers meanwhile."""
    fast = RobotModel.from_urdf(shipped_urdf("panda.urdf"), kernels="auto")
    Q = rng.uniform(-2, 2, (robot_model_module.AUTO_COMPILE_AFTER, fast.dof))
    first = fast.gravity_derivatives_batch(Q)
    kernel = wait_for(lambda: fast.kernels.routes.ready.get("gravity_derivatives_batch"), timeout=120,
                      what="the background compile of gravity_derivatives_batch")
    rows = kernel(Q, fast.kernels.parameters).reshape(first.shape)
    np.testing.assert_array_equal(fast.gravity_derivatives_batch(Q), rows)
    assert_close(rows, first, "robot's batch against the generic module's", TOL)


@pytest.mark.parametrize("mode", ["c", "auto"])
def test_a_node_start_up_never_compiles_a_derivative_batch(mode, rng):
    """prepare_kernels(derivatives=False, wrenches=False), as the node's: derivative
    batches of any size neither build nor load a derivative module (nor count towards one
    in auto mode); the generic module answers them."""
    source = shipped_urdf("double_pendulum.urdf")
    fast = RobotModel.from_urdf(source, kernels=mode)
    generic = RobotModel.from_urdf(source, kernels="generic")
    compiled = fast.prepare_kernels(derivatives=False, wrenches=False)      # {label: s}
    assert not [label for label in compiled for single in generator.DERIVATIVE_KERNELS
                if single in label], compiled
    Q, QD, TAU = _inputs(fast.dof, rng, robot_model_module.AUTO_COMPILE_AFTER + 1)
    for batch, (_, inputs, _) in DERIVATIVES.items():
        arrays = (Q, QD, TAU)[:inputs]
        for answer, expected in zip(_tuple(getattr(fast, batch)(*arrays)),
                                    _tuple(getattr(generic, batch)(*arrays))):
            np.testing.assert_array_equal(answer, expected)
    routes = fast.kernels.routes
    assert not [name for name in DERIVATIVES if name in routes.ready or name in routes.requests]
    # every module the model's kernel set was asked for, built or loaded
    asked = {kernel for kernel, _ in fast.kernels.routes.kernel_set.modules}
    assert "inverse_dynamics" in asked, asked
    assert not asked & set(generator.DERIVATIVE_KERNELS), asked
