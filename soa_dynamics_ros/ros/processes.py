"""Child processes of the package's tools (demo, benchmarks, tests), stopped gracefully."""
import signal
import subprocess


class ChildProcess:
    """A command whose output goes to a log file; stopped by PID, SIGKILL only as a last resort.

    SIGKILL leaves Fast DDS shared-memory segments behind in /dev/shm, so
    :meth:`stop` tries SIGINT, then SIGTERM, waiting for each.
    """

    def __init__(self, command, log_path, env=None, cwd=None):
        self.log_path = log_path
        self._log = open(log_path, "w")
        self.process = subprocess.Popen(command, stdout=self._log, stderr=subprocess.STDOUT,
                                        env=env, cwd=cwd)

    @property
    def pid(self):
        return self.process.pid

    def alive(self):
        return self.process.poll() is None

    def log(self):
        if not self._log.closed:
            self._log.flush()
        return self.log_path.read_text()

    def stop(self, timeout=10.0):
        """The exit status (0 for a clean shutdown on SIGINT)."""
        for sig in (signal.SIGINT, signal.SIGTERM):
            if self.process.poll() is not None:
                break
            self.process.send_signal(sig)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                continue
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self._log.close()
        return self.process.returncode
