"""Fill the kernel cache for a robot in a process of its own.

    python -m soa_dynamics_ros.embedded.warmup [--frame LINK ...] < robot.urdf

Tracing a robot's recursions into kernels takes seconds and holds the GIL; a
process that must keep answering (the node, at 1 kHz) runs this instead and
loads the cached kernels, which takes well under a second, when it is done.
Concurrent warm-ups of the same robot wait for each other (a lock file per
robot structure) instead of compiling the same code twice.
"""
import argparse
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
    args = parser.parse_args(argv)
    # The lowest CPU priority, inherited by the compilers: on a 2-core machine two
    # compilers at normal priority starved the node beside them, whose 1 kHz
    # feedforward then paused for 0.1-1 s (the simulated arm fell).
    os.nice(19)
    logging.basicConfig(level=logging.INFO, format="[kernels] %(message)s")
    from .. import RobotModel
    from ..kernels import ensure_cache_dir
    from ..kernels.generator import structure_key
    model = RobotModel.from_urdf(sys.stdin.read(), kernels="c")
    directory = ensure_cache_dir()
    with open(directory / f".warm-{structure_key(model.tree)}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        # (not the derivative and wrenched kernels: the node never compiles them)
        seconds = model.kernels.prepare(frames=args.frame, derivatives=False, wrenches=False)
    logging.info("%d kernels ready for %s in %.1f s", len(seconds), model.name, sum(seconds.values()))
    return 0


class BackgroundWarmup:
    """This module run as a child process, for a description given as XML text."""

    def __init__(self, description_xml, frames=()):
        command = [sys.executable, "-m", __name__]
        for frame in frames:
            command += ["--frame", frame]
        # The log goes to a file, not a pipe: a full pipe would block the child.
        self._log = tempfile.TemporaryFile(mode="w+")
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                        stderr=self._log, text=True)
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
