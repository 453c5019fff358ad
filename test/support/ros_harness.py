"""Real processes and real DDS for node tests: start executables, talk to them with rclpy."""
import itertools
import os
import pathlib
import threading
import time

import numpy as np
import rclpy
from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState

from soa_dynamics_ros.ros.processes import ChildProcess
from support.installation import EXECUTABLES
from support.realtime import raise_priority
from support.robots import REPO
from support.waiting import wait_for

FIRST_EXCHANGE_RESEND = 5.0     # [s] see RosClient.call


class RosProcess(ChildProcess):
    """One of the package's executables in its own process, stopped gracefully by PID.

    ``realtime``: at a real-time priority where permitted (support.realtime), for the
    tests whose verdict depends on the wall clock (marked ``realtime``)."""

    def __init__(self, executable, *ros_args, log_dir, name=None, realtime=False):
        self.name = name or executable
        command = [str(EXECUTABLES / executable)]
        if ros_args:
            command += ["--ros-args", *ros_args]
        super().__init__(command, pathlib.Path(log_dir) / f"{self.name}.log", os.environ.copy(), REPO)
        if realtime:
            raise_priority(self.pid, self.name)


class RosClient:
    """A test-side rclpy node spinning in a background thread."""

    def __init__(self, name="test_client"):
        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node(name, context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self._clients = {}
        self._answered = set()      # clients that have had an answer (see call)
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
        """A client of ``name``, made once: Fast DDS drops a response when the server has
        not yet matched the client's response reader (it waits 100 ms), which a loaded
        machine can take longer than; a client made ahead of a timed call is ready then."""
        key = (service_type, name)
        if key not in self._clients:
            self._clients[key] = self.node.create_client(service_type, name)
        client = self._clients[key]
        if not client.wait_for_service(timeout_sec=timeout):
            raise TimeoutError(f"service {name} did not appear within {timeout} s")
        return client

    def call(self, client, request, timeout=10.0):
        """The answer to ``request`` within ``timeout`` s, else TimeoutError.

        A client's first exchange with a server may lose its response: Fast DDS's server
        waits only 100 ms for the client's response reader (ros2/rmw_fastrtps#390),
        which discovery on a loaded machine can take longer than (a CI run lost the
        first answer of a node started a moment before).  So a client's first request
        goes out once more after FIRST_EXCHANGE_RESEND s without an answer; the first
        answer to either is taken (a slow first answer is not cancelled: a 300,000-point
        request takes the node longer than that to refuse).
        """
        deadline = time.monotonic() + timeout
        done = threading.Event()
        futures = []

        def send():
            futures.append(client.call_async(request))
            futures[-1].add_done_callback(lambda _: done.set())
        send()
        if client not in self._answered and not done.wait(min(FIRST_EXCHANGE_RESEND, timeout)):
            send()
        answered = done.wait(max(deadline - time.monotonic(), 0.0))
        for future in futures:
            if not future.done():
                client.remove_pending_request(future)
        if not answered:
            raise TimeoutError(f"no answer from {client.srv_name} within {timeout} s")
        self._answered.add(client)
        return next(future for future in futures if future.done()).result()

    def collect(self, message_type, topic, qos=10):
        """Subscribe and gather messages into a list (with arrival times).

        What the publisher writes before it has matched this reader is lost to it, and
        this side's publisher count says nothing of that side's match: a test whose
        first messages matter calls :meth:`wait_until_node_matched` after this."""
        messages = []
        self.node.create_subscription(
            message_type, topic, lambda m: messages.append((time.monotonic(), m)), qos)
        return messages

    def wait_until_node_matched(self, timeout=30.0):
        """Return once every reader made so far and a node publishing /diagnostics have
        matched each other, both ways.

        This side: each reader counts a matched publisher.  The node's side: a reader on
        /diagnostics, made now, is announced after the others, and Fast DDS announces a
        participant's readers in order on one reliable channel, so the node's first report
        on it shows the node has taken in, and matched its writers to, the earlier ones
        (CI, 2026-11-26: waiting for this side's match only, the first feedforward answer
        received was already 16% into the node's ramp)."""
        readers = list(self.node.subscriptions)
        wait_for(lambda: all(reader.get_publisher_count() > 0 for reader in readers), timeout,
                 what="a publisher matched on " + ", ".join(r.topic_name for r in readers))
        reports = []
        subscription = self.node.create_subscription(
            DiagnosticArray, "/diagnostics", reports.append, 10)
        try:
            wait_for(lambda: reports, timeout, what="a first /diagnostics report")
        finally:
            self.node.destroy_subscription(subscription)

    def collect_published(self, message_type, topic, qos=10):
        """Subscribe and gather (source timestamp [ns], message): when the publisher wrote each,
        on its process's clock, so that messages of one publisher on two topics can be ordered."""
        messages = []
        self.node.create_subscription(
            message_type, topic, lambda m, info: messages.append((info["source_timestamp"], m)),
            qos)
        return messages

    def publisher(self, message_type, topic, depth=10, timeout=30.0):
        """A publisher on ``topic`` once a subscriber has matched it (earlier messages are lost)."""
        publisher = self.node.create_publisher(message_type, topic, depth)
        wait_for(lambda: publisher.get_subscription_count() > 0, timeout,
                 what=f"a subscriber on {topic}")
        return publisher

    def latched_publisher(self, message_type, topic):
        qos = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                         reliability=ReliabilityPolicy.RELIABLE)
        return self.node.create_publisher(message_type, topic, qos)


def joint_state(names, positions, velocities=()):
    return JointState(name=list(names), position=[float(p) for p in positions],
                      velocity=[float(v) for v in velocities])


_STAMPS = itertools.count(1)


def publish_and_wait(joint_states, feedforward, message, timeout=5.0):
    """The effort answering ``message``, published until its answer arrives.

    ``feedforward`` collects ``~/feedforward_state`` (RosClient.collect).  The
    answer is known by the stamp given to this message alone: answers to
    earlier states (computed before a parameter or payload changed) may still
    be on their way, and the last message to arrive need not be this one's.
    """
    message.header.stamp = Time(sec=next(_STAMPS))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        joint_states.publish(message)
        time.sleep(0.02)
        answers = [m for _, m in list(feedforward) if m.header.stamp == message.header.stamp]
        if answers:
            return np.array(answers[0].effort)
    raise TimeoutError("no feedforward after publishing a joint state")
