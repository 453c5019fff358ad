"""Where a real-time thread's wall time went: on a CPU, waiting for one, or in the collector.

A loop that answers late has either been busy (its own work, a garbage collection), or
runnable while the kernel ran something else (another process, a compiler), or blocked.
:class:`PauseMeter` reads the three clocks that tell these apart, cheaply enough to be read
at every message of a 1 kHz loop: the thread's CPU time, its time runnable but not running
(``/proc/thread-self/schedstat``, Linux), and the time spent in the cycle collector
(``gc.callbacks``).
"""
import gc
import os
import time


class PauseMeter:
    """Counters of the thread that makes it (schedstat is per thread)."""

    def __init__(self):
        try:
            self._schedstat = os.open("/proc/thread-self/schedstat", os.O_RDONLY)
        except OSError:     # not Linux, or no CONFIG_SCHED_INFO: that part reads as 0
            self._schedstat = None
        self.gc_total = 0.0                     # [s] in collections, since start
        self.gc_longest = 0.0                   # [s] the longest one since take_longest_gc()
        self.gc_longest_generation = -1
        self._gc_started = None
        gc.callbacks.append(self._on_gc)

    def close(self):
        if self._on_gc in gc.callbacks:
            gc.callbacks.remove(self._on_gc)
        if self._schedstat is not None:
            os.close(self._schedstat)
            self._schedstat = None

    def _on_gc(self, phase, info):
        if phase == "start":
            self._gc_started = time.perf_counter()
            return
        if self._gc_started is None:
            return
        pause = time.perf_counter() - self._gc_started
        self._gc_started = None
        self.gc_total += pause
        if pause > self.gc_longest:
            self.gc_longest, self.gc_longest_generation = pause, info["generation"]

    def waiting_for_cpu(self):
        """[s] the thread's total time runnable but not running."""
        if self._schedstat is None:
            return 0.0
        try:
            return int(os.pread(self._schedstat, 64, 0).split()[1]) * 1e-9
        except (OSError, IndexError, ValueError):
            return 0.0

    def sample(self):
        """(thread CPU time, time waiting for a CPU, time in the collector) [s], cumulative."""
        return time.thread_time(), self.waiting_for_cpu(), self.gc_total

    @staticmethod
    def describe(before, after):
        """Where the wall time between two samples went, as text."""
        cpu, waiting, collecting = (b - a for a, b in zip(before, after))
        return (f"this thread {cpu * 1e3:.1f} ms on a CPU, {waiting * 1e3:.1f} ms waiting for "
                f"one, {collecting * 1e3:.1f} ms collecting garbage")

    def take_longest_gc(self):
        """(longest collection [s], its generation) since the last call; resets it."""
        taken = self.gc_longest, self.gc_longest_generation
        self.gc_longest, self.gc_longest_generation = 0.0, -1
        return taken
