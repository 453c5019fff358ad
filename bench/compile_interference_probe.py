"""How long a 1 kHz request/answer loop stalls while a robot's kernels compile beside it.

    python bench/compile_interference_probe.py ROBOT.urdf [--seconds 20] [--json out.json]

Two processes stand for the simulated arm and the node: the loop sends a request every
millisecond and waits for the answer.  Meanwhile the package's own background warm-up
(``soa_dynamics_ros.embedded.warmup.BackgroundWarmup``, as the node starts it) compiles the
robot's kernels into fresh caches, one after another.  For the longest gap between two
answers the loop reports where its wall time went: in the garbage collector
(``gc.callbacks``), running on a CPU (``time.thread_time``), or runnable but waiting for
a CPU (``/proc/thread-self/schedstat``).  Run it from checkouts before and after a change
of how the compiler is started (PYTHONPATH picks which).
"""
import argparse
import gc
import json
import os
import select
import subprocess
import sys
import tempfile
import time

ANSWERER = r"""
import os, sys
import numpy as np
inp, out = int(sys.argv[1]), int(sys.argv[2])
a = np.eye(8)
while True:
    data = os.read(inp, 8)
    if not data:
        break
    for _ in range(20):        # ~0.1 ms of numpy work, as a feedforward answer
        a = np.eye(8) @ a @ np.eye(8)
    os.write(out, data)
"""

HALF_BUSY = r"""
import time
while True:
    end = time.monotonic() + 0.0005
    while time.monotonic() < end:
        pass
    time.sleep(0.0005)
"""


def run_queue_wait():
    """[s] this thread's time runnable but not running (schedstat's second field)."""
    with open("/proc/thread-self/schedstat") as f:
        return int(f.read().split()[1]) * 1e-9


class GcTimer:
    def __init__(self):
        self.total = 0.0
        self.longest = (0.0, -1)
        self._start = None
        gc.callbacks.append(self._on_gc)

    def _on_gc(self, phase, info):
        if phase == "start":
            self._start = time.perf_counter()
        elif self._start is not None:
            pause = time.perf_counter() - self._start
            self.total += pause
            self.longest = max(self.longest, (pause, info["generation"]))


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("urdf")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--no-compile", action="store_true", help="the loop alone (a baseline)")
    parser.add_argument("--busy", type=int, default=1,
                        help="processes beside them using half a CPU each, as the test process "
                             "taking every joint state does")
    parser.add_argument("--json")
    args = parser.parse_args()
    from soa_dynamics_ros.embedded.warmup import BackgroundWarmup
    description = open(args.urdf).read()

    to_answerer, from_loop = os.pipe()
    from_answerer, to_loop = os.pipe()
    answerer = subprocess.Popen([sys.executable, "-c", ANSWERER, str(to_answerer), str(to_loop)],
                                pass_fds=(to_answerer, to_loop))
    busy = [subprocess.Popen([sys.executable, "-c", HALF_BUSY]) for _ in range(args.busy)]
    gc_timer = GcTimer()
    gaps = []
    worst = dict(gap=0.0)
    warmups = compiles = 0
    warmup = None
    caches = tempfile.TemporaryDirectory()
    load_before = os.getloadavg()
    start = next_tick = time.monotonic()
    last_answer = None
    previous = first = (time.thread_time(), run_queue_wait(), gc_timer.total)
    try:
        while time.monotonic() - start < args.seconds:
            if not args.no_compile and (warmup is None or warmup.poll() is not None):
                if warmup is not None:
                    compiles += 1
                os.environ["SOA_DYNAMICS_CACHE"] = os.path.join(caches.name, str(warmups))
                warmup = BackgroundWarmup(description)
                warmups += 1
            os.write(from_loop, b"12345678")
            ready, _, _ = select.select([from_answerer], [], [], 10.0)
            if not ready:
                raise SystemExit("no answer within 10 s")
            os.read(from_answerer, 8)
            now = time.monotonic()
            current = (time.thread_time(), run_queue_wait(), gc_timer.total)
            if last_answer is not None:
                gap = now - last_answer
                gaps.append(gap)
                if gap > worst["gap"]:
                    worst = dict(gap=gap, cpu=current[0] - previous[0],
                                 waiting_for_cpu=current[1] - previous[1],
                                 gc=current[2] - previous[2], at=now - start)
            last_answer, previous = now, current
            next_tick += 0.001
            delay = next_tick - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            else:
                next_tick = time.monotonic()
    finally:
        if warmup is not None:
            warmup.stop()
        os.close(from_loop)
        answerer.wait()
        for process in busy:
            process.terminate()
            process.wait()
        caches.cleanup()
    gaps.sort()
    result = dict(
        python_path=os.environ.get("PYTHONPATH", ""), seconds=args.seconds, busy=args.busy,
        warmups_finished=compiles, answers=len(gaps) + 1,
        gap_max_ms=worst["gap"] * 1e3,
        gap_p999_ms=gaps[int(0.999 * (len(gaps) - 1))] * 1e3,
        gaps_over_20ms=sum(g > 0.02 for g in gaps),
        gaps_over_50ms=sum(g > 0.05 for g in gaps),
        waiting_for_cpu_per_s_ms=(previous[1] - first[1]) * 1e3 / args.seconds,
        worst_gap_cpu_ms=worst.get("cpu", 0.0) * 1e3,
        worst_gap_waiting_for_cpu_ms=worst.get("waiting_for_cpu", 0.0) * 1e3,
        worst_gap_gc_ms=worst.get("gc", 0.0) * 1e3,
        gc_longest_ms=gc_timer.longest[0] * 1e3, gc_longest_generation=gc_timer.longest[1],
        load_before=load_before, load_after=os.getloadavg())
    print(json.dumps(result, indent=1))
    if args.json:
        with open(args.json, "a") as f:
            f.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
