"""Batches split over the CPUs (runtime.h soa_call_batch, generic/batches.c run_samples).

A batch of at least two threads' shares (32 samples each in the generic module,
32-512 for a traced kernel: c_emission.samples_per_thread) runs on one thread per
usable CPU, without the GIL, each taking chunks of samples (8 in the generic
module, 64 for a traced kernel) until none is left, so which thread runs which
sample changes from call to call; the generic module's workers each on a copy of
the model's workspace.  Every row must be the single call's answer (exactly
in the generic module, which runs the same arithmetic; to 1e-12 for a traced kernel,
whose blocks of samples run through its lanes core), the first failing sample must
be the one reported whichever share it is in, and a thread using the same model
meanwhile must get its own answers.
"""
import os
import threading

import numpy as np
import pytest

from support.numerics import assert_close
from support.robot_generator import random_tree_urdf
from support.robots import shipped_urdf
from support.small_robots import POINT_ONTO_AXIS
from soa_dynamics_ros.errors import InertiaWarning
from soa_dynamics_ros.kernels import generic_module
from soa_dynamics_ros.model import RobotModel

SAMPLES = 150
ROBOTS = {"panda": shipped_urdf("panda.urdf"),
          "random_tree": random_tree_urdf(31, moving_joints=12, prismatic_fraction=0.25),
          "mimic_tree": random_tree_urdf(32, moving_joints=10, mimic_fraction=0.3)}
BATCHES = {  # batch function: (single-sample function, inputs, matrices per sample or 0)
    "gravity_torques_batch": ("gravity_torques", 1, 0),
    "inverse_dynamics_batch": ("inverse_dynamics", 3, 0),
    "forward_dynamics_batch": ("forward_dynamics", 3, 0),
    "gravity_derivatives_batch": ("gravity_derivatives", 1, 1),
    "inverse_dynamics_derivatives_batch": ("inverse_dynamics_derivatives", 3, 2),
    "forward_dynamics_derivatives_batch": ("forward_dynamics_derivatives", 3, 3)}


@pytest.fixture(scope="module", autouse=True)
def several_cpus():
    if len(os.sched_getaffinity(0)) < 2:
        pytest.fail("these tests need 2 usable CPUs: with one, batches never split")


def _compiled(name):
    model = RobotModel.from_urdf(ROBOTS[name], kernels="generic")
    compiled, params = model.generic_kernels()
    return model, compiled.model, params


def _inputs(model, rng, count=SAMPLES):
    q, qd, qdd = rng.uniform(-2, 2, (3, count, model.dof))
    return q, qd, qdd * 10          # torques for forward dynamics


@pytest.mark.parametrize("robot", ROBOTS)
def test_every_row_is_the_single_call(robot, rng):
    model, tree, params = _compiled(robot)
    module = generic_module()
    arrays = _inputs(model, rng)
    for batch, (single, inputs, matrices) in BATCHES.items():
        rows = getattr(module, batch)(tree, *arrays[:inputs], params)
        assert isinstance(rows, np.ndarray), (batch, rows)
        for s in range(SAMPLES):
            expected = getattr(module, single)(tree, *(a[s] for a in arrays[:inputs]), params)
            row = rows[s] if matrices != 1 else rows[s, 0]
            # exactly: each share runs the same arithmetic as a single call
            np.testing.assert_array_equal(np.array(row), np.array(expected), f"{batch} {s}")


# (7, 8): the two in neighbouring chunks, which the two threads usually take
@pytest.mark.parametrize("first, later", [(0, 149), (7, 8), (74, 76), (120, 149), (149, 149)])
def test_the_first_bad_sample_is_reported_whichever_share_it_is_in(first, later, rng):
    model, tree, params = _compiled("panda")
    module = generic_module()
    q, qd, qdd = _inputs(model, rng)
    qd[first, 2] = np.nan
    q[later, 0] = np.inf
    for batch, (_, inputs, _) in BATCHES.items():
        arrays = (q, qd, qdd)[:inputs]
        expected = 4 * (first if inputs == 3 else later) + 1
        assert getattr(module, batch)(tree, *arrays, params) == expected, batch


def test_a_singular_sample_in_a_later_share_is_named(rng):
    with pytest.warns(InertiaWarning, match="l2"):
        model = RobotModel.from_urdf(POINT_ONTO_AXIS, kernels="generic")
    compiled, params = model.generic_kernels()
    module = generic_module()
    q, qd, tau = _inputs(model, rng)
    q[:, 1] = np.clip(q[:, 1], -1.0, 1.0)        # well away from pi/2 ...
    q[[100, 130], 1] = np.pi / 2                 # ... but in these two samples
    for batch in ("forward_dynamics_batch", "forward_dynamics_derivatives_batch"):
        assert getattr(module, batch)(compiled.model, q, qd, tau, params) == 4 * 100 + 2, batch
    rows = module.inverse_dynamics_derivatives_batch(compiled.model, q, qd, tau, params)
    assert isinstance(rows, np.ndarray) and np.all(np.isfinite(rows))


def test_a_thread_using_the_same_model_meanwhile_gets_its_own_answers(rng):
    model, tree, params = _compiled("random_tree")
    module = generic_module()
    Q, QD, TAU = _inputs(model, rng, count=2000)
    q = Q[7]
    expected = module.gravity_torques(tree, q, params)
    errors, stop = [], threading.Event()

    def control_loop():
        while not stop.is_set():
            answer = module.gravity_torques(tree, q, params)
            if not np.array_equal(answer, expected):
                errors.append(answer)
    thread = threading.Thread(target=control_loop)
    thread.start()
    try:
        singles = [module.forward_dynamics_derivatives(tree, *sample, params)
                   for sample in zip(Q[:40], QD[:40], TAU[:40])]
        for _ in range(3):
            rows = module.forward_dynamics_derivatives_batch(tree, Q, QD, TAU, params)
            for s, single in enumerate(singles):
                np.testing.assert_array_equal(rows[s], np.array(single))
    finally:
        stop.set()
        thread.join()
    assert not errors


# Enough samples for two threads (at most 512 each: c_emission.samples_per_thread), and a
# tail of fewer than a block.  (The derivative kernels' batches: test_batch_derivatives.py.)
TRACED_SAMPLES = 2 * 512 + 19
TRACED_BATCHES = ("gravity_torques_batch", "inverse_dynamics_batch", "forward_dynamics_batch")


def test_traced_batches_keep_every_row(traced_robot, rng):
    robot = traced_robot(ROBOTS["random_tree"])
    p = robot.parameters()
    arrays = _inputs(robot, rng, TRACED_SAMPLES)
    for batch in TRACED_BATCHES:
        single, inputs, _ = BATCHES[batch]
        rows = robot.compiled(batch)(*arrays[:inputs], p)
        assert isinstance(rows, np.ndarray), (batch, rows)
        for s in range(0, TRACED_SAMPLES, 7):
            expected = robot.compiled(single)(*(a[s] for a in arrays[:inputs]), p)
            assert_close(rows[s], expected, f"{batch} row {s}", 1e-12)


@pytest.mark.parametrize("first, later", [(3, 1000), (63, 64), (515, 530),
                                          (700, TRACED_SAMPLES - 1)])
def test_traced_batches_name_the_first_bad_sample(first, later, traced_robot, rng):
    robot = traced_robot(ROBOTS["panda"])
    p = robot.parameters()
    q, qd, qdd = _inputs(robot, rng, TRACED_SAMPLES)
    qd[first, 1] = np.nan
    q[later, 2] = -np.inf
    for batch in TRACED_BATCHES:
        inputs = BATCHES[batch][1]
        expected = 4 * (first if inputs == 3 else later) + 1
        assert robot.compiled(batch)(*(q, qd, qdd)[:inputs], p) == expected, batch
