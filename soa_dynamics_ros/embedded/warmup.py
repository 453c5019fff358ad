"""Fill the kernel cache for a robot in a process of its own.

    python -m soa_dynamics_ros.embedded.warmup [--frame LINK ...] < robot.urdf

Tracing a robot's recursions into kernels takes seconds and holds the GIL; a
process that must keep answering (the node, at 1 kHz) runs this instead and
loads the cached kernels, which takes well under a second, when it is done.
Concurrent warm-ups of the same robot wait for each other (a lock file per
robot structure) instead of compiling the same code twice.
"""
import argparse
import contextlib
import fcntl
import logging
import os
import subprocess
import sys
import tempfile


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--frame", action="append", default=[],
                        help="also the task-space kernels of this frame (repeatable)")
    parser.add_argument("--floating-base", action="store_true",
                        help="the kernels of the robot on a free base (docs/floating_base.md)")
    args = parser.parse_args(argv)
    lowest_priority()
    logging.basicConfig(level=logging.INFO, format="[kernels] %(message)s")
    from .. import RobotModel
    from ..kernels import ensure_cache_dir
    from ..kernels.generator import structure_key
    text = sys.stdin.read()
    if args.floating_base:
        # A floating-base model's kernels are those of its chain model.
        from ..description.urdf import parse_urdf_xml
        from ..model.floating_base import chain_description
        model = RobotModel(chain_description(parse_urdf_xml(text)), kernels="c")
    else:
        model = RobotModel.from_urdf(text, kernels="c")
    directory = ensure_cache_dir()
    with open(directory / f".warm-{structure_key(model.tree)}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        # (not the derivative and wrenched kernels: the node never compiles them)
        seconds = model.kernels.prepare(frames=args.frame, derivatives=False, wrenches=False)
    logging.info("%d kernels ready for %s in %.1f s", len(seconds), model.name, sum(seconds.values()))
    return 0


def lowest_priority():
    """This process and its compilers at the lowest CPU priority of the ordinary policy.

    On a 2-core machine two compilers at normal priority starved the node beside them,
    whose 1 kHz feedforward then paused long enough for the simulated arm to fall.  Absolute,
    not relative to the parent: a node run at a real-time policy (SCHED_FIFO, which nice
    does not touch) or at a raised priority passes it on to this child.
    """
    try:
        os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
    except (AttributeError, OSError):   # not Linux: nice alone
        pass
    os.setpriority(os.PRIO_PROCESS, 0, 19)


@contextlib.contextmanager
def _forking_at_the_ordinary_policy():
    """This thread at SCHED_OTHER meanwhile, if it runs at a real-time policy.

    A child starts at its parent's policy: the warm-up's interpreter start and package
    imports (a tenth of a second of CPU) then ran at the node's real-time priority, before
    :func:`lowest_priority`, and kept a CPU from the simulated arm beside it (its loop
    waited for one; docs/performance.md, "Design measurements").  Setting the child's
    policy between fork and exec is not safe in a process with threads (``preexec_fn``),
    so this thread forks at SCHED_OTHER.
    """
    try:
        policy = os.sched_getscheduler(0)
    except (AttributeError, OSError):   # not Linux: nothing to lower
        policy = None
    if policy not in (getattr(os, "SCHED_FIFO", None), getattr(os, "SCHED_RR", None)):
        yield
        return
    parameter = os.sched_getparam(0)
    os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
    try:
        yield
    finally:
        os.sched_setscheduler(0, policy, parameter)


class BackgroundWarmup:
    """This module run as a child process, for a description given as XML text."""

    def __init__(self, description_xml, frames=(), floating_base=False):
        command = [sys.executable, "-m", __name__] + ["--floating-base"] * floating_base
        for frame in frames:
            command += ["--frame", frame]
        # The log goes to a file, not a pipe: a full pipe would block the child.
        self._log = tempfile.TemporaryFile(mode="w+")
        with _forking_at_the_ordinary_policy():
            self.process = subprocess.Popen(command, stdin=subprocess.PIPE,
                                            stdout=subprocess.DEVNULL, stderr=self._log, text=True)
        self.process.stdin.write(description_xml)
        self.process.stdin.close()

    def poll(self):
        """None while running, else ``(returncode, last lines of its log)``."""
        code = self.process.poll()
        if code is None:
            return None
        self._log.seek(0)
        return code, self._log.read()[-2000:]

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)


if __name__ == "__main__":
    sys.exit(main())
