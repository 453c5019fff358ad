"""Throttled logging that costs nothing while it is throttled.

rclpy's ``throttle_duration_sec`` looks up the calling line with ``inspect``
(file stats included) on every call, throttled or not: most of a 1 kHz
cycle.  A Panda whose /joint_states also name its two finger joints, which
the arm's URDF lacks, made the node several times slower per state through
the throttled "names unknown to the model" warning (docs/performance.md,
"Design measurements").  The node and the sim log per-message
problems through this instead.
"""
import math
import time

from ..errors import clipped

# A line longer than this is cut (a traceback fits): text can quote what came from outside.
MAX_LOG_TEXT = 8000


class ThrottledLog:
    """An rclpy logger's warning and error, each ``key`` at most once per ``period`` [s].

    ``text`` is a string, or a function that gives it when the line is due: text
    worth building only for the lines written.
    """

    def __init__(self, logger):
        self._logger = logger
        self._logged_at = {}        # key -> time.monotonic() of its last line

    def _due(self, key, period):
        now = time.monotonic()
        if now - self._logged_at.get(key, -math.inf) < period:
            return False
        self._logged_at[key] = now
        return True

    def warning(self, key, period, text):
        if self._due(key, period):
            self._logger.warning(_line(text))

    def error(self, key, period, text):
        if self._due(key, period):
            self._logger.error(_line(text))


def _line(text):
    return clipped(text() if callable(text) else text, MAX_LOG_TEXT)
