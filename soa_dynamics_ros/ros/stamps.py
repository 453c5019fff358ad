"""builtin_interfaces Time and Duration to and from seconds, with one rounding rule."""
import math

from builtin_interfaces.msg import Duration, Time

NANOSECONDS_PER_SECOND = 1_000_000_000


def stamp_seconds(stamp):
    """Seconds of a builtin_interfaces/Time or Duration (0.0: not stamped)."""
    return stamp.sec + 1e-9 * stamp.nanosec


def stamp_nanoseconds(stamp):
    """Integer nanoseconds of a builtin_interfaces/Time or Duration (exact, unlike seconds)."""
    return stamp.sec * NANOSECONDS_PER_SECOND + stamp.nanosec


def seconds_and_nanoseconds(seconds):
    """(sec, nanosec) fields of a time in seconds; nanosec in [0, 1e9)."""
    # The fraction is split off exactly, so a wall-clock time keeps its nanoseconds (seconds * 1e9
    # would not, beyond 2**53 ns); its rounding may carry into the whole seconds.
    whole = math.floor(seconds)
    nanoseconds = round((seconds - whole) * 1e9)
    return int(whole) + nanoseconds // NANOSECONDS_PER_SECOND, nanoseconds % NANOSECONDS_PER_SECOND


def time_from_seconds(seconds):
    """builtin_interfaces/Time of a time in seconds."""
    sec, nanosec = seconds_and_nanoseconds(seconds)
    return Time(sec=sec, nanosec=nanosec)


def duration_from_seconds(seconds):
    """builtin_interfaces/Duration of a span in seconds."""
    sec, nanosec = seconds_and_nanoseconds(seconds)
    return Duration(sec=sec, nanosec=nanosec)
