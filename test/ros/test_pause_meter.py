"""The real-time loops' account of their own pauses (ros/pauses.py), as /diagnostics reports it."""
import gc

from soa_dynamics_ros.ros.pauses import PauseMeter


def test_a_full_collection_is_counted_with_its_generation_and_taken_once():
    meter = PauseMeter()
    try:
        before = meter.sample()
        survivors = [[i] for i in range(50000)]     # something for the collector to scan
        gc.collect()
        after = meter.sample()
        assert after[2] > before[2] and survivors
        longest, generation = meter.take_longest_gc()
        assert longest > 0.0 and generation == 2
        assert meter.take_longest_gc() == (0.0, -1)
    finally:
        meter.close()


def test_the_account_is_cumulative_and_leaves_no_callback_behind():
    callbacks = list(gc.callbacks)
    meter = PauseMeter()
    first = meter.sample()
    sum(i * i for i in range(200000))
    second = meter.sample()
    assert all(b >= a for a, b in zip(first, second)) and second[0] > first[0]
    assert PauseMeter.describe(first, second).startswith("this thread ")
    meter.close()
    assert gc.callbacks == callbacks
