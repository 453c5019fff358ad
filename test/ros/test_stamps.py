"""builtin_interfaces Time/Duration <-> seconds: exact to the nanosecond, nanosec always in [0, 1e9)."""
from fractions import Fraction

import pytest

from soa_dynamics_ros.ros.stamps import (duration_from_seconds, stamp_nanoseconds, stamp_seconds,
                                         time_from_seconds)


@pytest.mark.parametrize("seconds", [0.0, 0.3, 1.5, 2.0, 0.9999999996, 1.9999999999, 3.0000000004,
                                     1_700_000_000.123456789, -0.5, -1.0000000001])
@pytest.mark.parametrize("make", [time_from_seconds, duration_from_seconds])
def test_a_time_in_seconds_becomes_the_nearest_whole_nanosecond(make, seconds):
    message = make(seconds)
    # The reference: the float's exact value, rounded to nanoseconds in rational arithmetic.
    nearest = round(Fraction(seconds) * 10**9)
    assert 0 <= message.nanosec < 10**9
    assert stamp_nanoseconds(message) == nearest
    assert stamp_seconds(message) == pytest.approx(seconds, abs=1e-9, rel=1e-15)


def test_near_a_whole_second_the_carry_goes_into_sec():
    # Rounding the fraction on its own would give nanosec = 1e9, which the message cannot hold.
    message = duration_from_seconds(0.9999999996)
    assert (message.sec, message.nanosec) == (1, 0)
