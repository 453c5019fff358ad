"""The compiled modules recycle their answer arrays (runtime.h, soa_new_answer): an answer
the caller dropped is filled again by a later call, and one that anything still
references (the caller, a view, a weak reference, a batch in flight) never changes.
Large batch answers (4 MB and more) reuse the memory of one no array uses any more.

The expected values are the numpy reference path's (kernels="off"), computed apart.
"""
import gc
import sys
import weakref

import numpy as np
import pytest

from support.numerics import assert_close
from support.robots import shipped_urdf
from soa_dynamics_ros.model import RobotModel

TOL = 1e-12
FRAME = "panda_hand_tcp"


@pytest.fixture(scope="module", params=["c", "generic"])
def models(request):
    """(compiled model, numpy reference model) of the Panda: per-robot kernels or the
    generic module, whose answers come from different pools."""
    urdf = shipped_urdf("panda.urdf")
    fast = RobotModel.from_urdf(urdf, kernels=request.param)
    if request.param == "c":
        fast.prepare_kernels(frames=[FRAME])
    return fast, RobotModel.from_urdf(urdf, kernels="off")


def _states(rng, model, count):
    return [rng.uniform(-1.5, 1.5, model.dof) for _ in range(count)]


QUANTITIES = {
    "gravity": lambda m, q: m.gravity_torques(q),
    "inverse dynamics": lambda m, q: m.inverse_dynamics(q, 0.3 * q, -q),
    "forward dynamics": lambda m, q: m.forward_dynamics(q, 0.3 * q, q),
    "mass matrix": lambda m, q: m.mass_matrix(q),
    "frame pose": lambda m, q: m.frame_pose(q, FRAME),
    "jacobian": lambda m, q: m.jacobian(q, FRAME),
}


@pytest.mark.parametrize("quantity", QUANTITIES)
def test_answers_that_are_held_never_change(models, quantity, rng):
    fast, slow = models
    compute = QUANTITIES[quantity]
    states = _states(rng, fast, 12)
    # Many more calls than the pool has slots, every answer kept (some as a view only).
    held, views = [], []
    for k, q in enumerate(states):
        answer = compute(fast, q)
        if k % 3 == 2:
            views.append((k, answer[..., :2]))      # the view keeps its base alive
        else:
            held.append((k, answer))
        del answer
        for other in states[:3]:                    # answers dropped at once, in between
            compute(fast, other)
    for k, answer in held:
        assert_close(answer, compute(slow, states[k]), f"held {quantity} {k}", TOL)
    for k, view in views:
        assert_close(view, compute(slow, states[k])[..., :2], f"view of {quantity} {k}", TOL)


@pytest.mark.parametrize("quantity", QUANTITIES)
def test_a_dropped_answer_is_filled_again_and_answers_right(models, quantity, rng):
    fast, slow = models
    compute = QUANTITIES[quantity]
    first, second = _states(rng, fast, 2)
    answer = compute(fast, first)
    # The module keeps a reference (this name and getrefcount's argument are the others),
    # so the dropped array stays alive: the same id below is the same array, recycled.
    assert sys.getrefcount(answer) == 3
    address = id(answer)
    del answer
    answer = compute(fast, second)
    assert id(answer) == address
    assert_close(answer, compute(slow, second), quantity, TOL)


def test_an_answer_with_a_weak_reference_is_left_alone(models, rng):
    fast, slow = models
    first, second = _states(rng, fast, 2)
    answer = fast.gravity_torques(first)
    watcher = weakref.ref(answer)
    del answer
    gc.collect()
    for _ in range(6):
        fast.gravity_torques(second)
    kept = watcher()
    if kept is not None:         # kept alive by the pool: it must still be the first answer
        assert_close(kept, slow.gravity_torques(first), "weakly referenced answer", TOL)


def test_answers_in_the_loop_a_controller_writes(models, rng):
    """``tau = f(q)`` in a loop: the previous answer is still bound while the next is
    made, so answers alternate between arrays, each right."""
    fast, slow = models
    previous = None
    for q in _states(rng, fast, 8):
        tau = fast.gravity_torques(q)
        assert tau is not previous
        assert_close(tau, slow.gravity_torques(q), "gravity in a loop", TOL)
        previous = tau


def test_a_batch_answer_is_its_own_array(models, rng):
    fast, slow = models
    samples = np.array(_states(rng, fast, 3))
    batch = fast.gravity_torques_batch(samples)
    for q in _states(rng, fast, 6):
        fast.gravity_torques(q)
    for k, q in enumerate(samples):
        assert_close(batch[k], slow.gravity_torques(q), f"batch sample {k}", TOL)


def test_resizing_an_answer_in_place_refuses_as_the_readme_says(models, rng):
    fast, slow = models
    q, = _states(rng, fast, 1)
    answer = fast.gravity_torques(q)
    with pytest.raises(ValueError, match="resize"):
        answer.resize(fast.dof + 1)
    assert_close(answer, slow.gravity_torques(q), "gravity after the refused resize", TOL)
    assert_close(np.resize(answer, fast.dof + 1)[:fast.dof], answer, "np.resize", 0.0)


@pytest.mark.parametrize("name", ["inverse_dynamics_derivatives", "forward_dynamics_derivatives"])
def test_derivative_parts_that_are_held_never_change(models, name, rng):
    """The derivative kernels answer tuples of arrays, recycled part by part."""
    fast, slow = models
    states = _states(rng, fast, 6)
    held = []
    for q in states:
        held.append(getattr(fast, name)(q, 0.3 * q, -q))
        for other in states[:2]:
            getattr(fast, name)(other, 0.3 * other, -other)      # dropped at once
    for q, parts in zip(states, held):
        for k, (part, expected) in enumerate(zip(parts, getattr(slow, name)(q, 0.3 * q, -q))):
            assert_close(part, expected, f"{name} part {k}", 1e-10)


# Samples whose derivative answers pass runtime.h's SOA_SPARE_MIN_BYTES (4 MB): 12,000
# Panda samples are 4.7 MB of gravity derivatives, 9.4 of inverse, 14 of forward ones.
LARGE_BATCH = 12_000
LARGE = {
    "gravity_derivatives": lambda m, Q: (m.gravity_derivatives_batch(Q),),
    "inverse_dynamics_derivatives": lambda m, Q: m.inverse_dynamics_derivatives_batch(
        Q, 0.3 * Q, -Q),
    "forward_dynamics_derivatives": lambda m, Q: m.forward_dynamics_derivatives_batch(
        Q, 0.3 * Q, -Q)}


def _address(array):
    return array.__array_interface__["data"][0]


@pytest.mark.parametrize("name", LARGE)
def test_large_batch_answers_take_only_memory_nothing_uses(models, name, rng):
    """A held large answer (or a view of one) is never written by a later batch; a
    dropped one's memory is what the next batch answers in, and it answers right."""
    fast, slow = models
    batch = LARGE[name]

    def check(parts, Q, what):
        for row in (0, 4321, LARGE_BATCH - 1):
            q = Q[row]
            expected = getattr(slow, name)(q) if name == "gravity_derivatives" else getattr(
                slow, name)(q, 0.3 * q, -q)
            for k, part in enumerate(parts):
                reference = expected if name == "gravity_derivatives" else expected[k]
                assert_close(part[row][..., :part.shape[-1]], reference[..., :part.shape[-1]],
                             f"{what}: {name} part {k}, sample {row}", 1e-10)

    samples = [rng.uniform(-1.5, 1.5, (LARGE_BATCH, fast.dof)) for _ in range(4)]
    first = batch(fast, samples[0])
    second_view = tuple(part[..., :3] for part in batch(fast, samples[1]))
    third = batch(fast, samples[2])
    check(first, samples[0], "held answer")
    check(second_view, samples[1], "view of a dropped answer")
    check(third, samples[2], "answer made while others were held")
    dropped = _address(first[0])
    del first
    gc.collect()
    fourth = batch(fast, samples[3])
    assert _address(fourth[0]) == dropped
    check(fourth, samples[3], "answer in a dropped answer's memory")
    check(second_view, samples[1], "view after the memory was reused")
    check(third, samples[2], "held answer after the memory was reused")
