"""Real processes and real DDS for node tests: start executables, talk to them with rclpy."""
import os
import pathlib
import signal
import subprocess
import threading
import time

import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

REPO = pathlib.Path(__file__).resolve().parents[1]
VENV_BIN = REPO / ".venv" / "bin"


class RosProcess:
    """One of the package's executables in its own process, stopped gracefully by PID."""

    def __init__(self, executable, *ros_args, log_dir, name=None):
        self.name = name or executable
        self.log_path = pathlib.Path(log_dir) / f"{self.name}.log"
        self._log = open(self.log_path, "w")
        command = [str(VENV_BIN / executable)]
        if ros_args:
            command += ["--ros-args", *ros_args]
        self.process = subprocess.Popen(command, stdout=self._log, stderr=subprocess.STDOUT,
                                        cwd=REPO, env=os.environ.copy())

    @property
    def pid(self):
        return self.process.pid

    def log(self):
        if not self._log.closed:
            self._log.flush()
        return self.log_path.read_text()

    def alive(self):
        return self.process.poll() is None

    def stop(self, timeout=10.0):
        """SIGINT, then SIGTERM; SIGKILL only as a last resort (it leaks DDS shared memory)."""
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


class RosClient:
    """A test-side rclpy node spinning in a background thread."""

    def __init__(self, name="test_client"):
        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node(name, context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self._thread = threading.Thread(target=self._spin, daemon=True)
        self._thread.start()

    def _spin(self):
        while self.context.ok():
            try:
                self.executor.spin_once(timeout_sec=0.05)
            except Exception:  # noqa: BLE001 - shutdown races end the loop
                if not self.context.ok():
                    return
                raise

    def close(self):
        self.executor.shutdown()
        rclpy.try_shutdown(context=self.context)
        self._thread.join(timeout=5)
        self.node.destroy_node()

    def client(self, service_type, name, timeout=20.0):
        client = self.node.create_client(service_type, name)
        if not client.wait_for_service(timeout_sec=timeout):
            raise TimeoutError(f"service {name} did not appear within {timeout} s")
        return client

    def call(self, client, request, timeout=10.0):
        future = client.call_async(request)
        done = threading.Event()
        future.add_done_callback(lambda _: done.set())
        if not done.wait(timeout):
            raise TimeoutError(f"no answer from {client.srv_name} within {timeout} s")
        return future.result()

    def collect(self, message_type, topic, qos=10):
        """Subscribe and gather messages into a list (with arrival times)."""
        messages = []
        self.node.create_subscription(message_type, topic,
                                      lambda m: messages.append((time.monotonic(), m)), qos)
        return messages

    def latched_publisher(self, message_type, topic):
        qos = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                         reliability=ReliabilityPolicy.RELIABLE)
        return self.node.create_publisher(message_type, topic, qos)


def wait_for(predicate, timeout=10.0, interval=0.01, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise TimeoutError(f"timed out after {timeout} s waiting for {what}")
