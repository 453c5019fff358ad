"""Shared by the node benchmarks: publish stamped joint states, time the feedforward echoes."""
import time

import numpy as np
from rclpy.qos import QoSProfile, ReliabilityPolicy
from diagnostic_msgs.msg import DiagnosticArray
from sensor_msgs.msg import JointState

from soa_dynamics_ros.ros.stamps import stamp_nanoseconds


class NodeCount:
    """The node's own count of published feedforwards (from /diagnostics) while ``counting``.

    Tells the node's misses from a probe's: the node published about this many.
    """

    def __init__(self, node):
        self.published, self.counting = 0, False
        node.create_subscription(DiagnosticArray, "/diagnostics", self._on_diagnostics, 10)

    def _on_diagnostics(self, array):
        for status in array.status:
            values = {kv.key: kv.value for kv in status.values}
            if self.counting and "feedforward_published" in values:
                self.published += int(values["feedforward_published"])


class FeedforwardProbe:
    """Joint states out on /joint_states, ``~/feedforward_state`` echoes back (same stamp)."""

    def __init__(self, client, joint_names, node="/soa_dynamics"):
        self.clock = client.node.get_clock()
        self.sent, self.received, self.latencies = [], set(), []
        self.arrivals = []   # time.monotonic() of each echo, for gaps in the stream
        client.node.create_subscription(JointState, f"{node}/feedforward_state", self._on_echo,
                                        QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE))
        self.publisher = client.node.create_publisher(JointState, "/joint_states", 10)
        self.node_count = NodeCount(client.node)
        self.message = JointState(name=list(joint_names), position=[0.3] * len(joint_names),
                                  velocity=[0.0] * len(joint_names))

    def _on_echo(self, message):
        stamp = stamp_nanoseconds(message.header.stamp)
        self.received.add(stamp)
        self.arrivals.append(time.monotonic())
        self.latencies.append((self.clock.now().nanoseconds - stamp) * 1e-9)

    def publish(self):
        self.message.header.stamp = self.clock.now().to_msg()
        self.sent.append(stamp_nanoseconds(self.message.header.stamp))
        self.publisher.publish(self.message)

    def wait_until_answered(self, timeout=30.0):
        """Publish slowly until the node answers; then forget the warm-up."""
        deadline = time.monotonic() + timeout
        while not self.received and time.monotonic() < deadline:
            self.publish()
            time.sleep(0.01)
        answered = bool(self.received)
        self.sent.clear()
        self.received.clear()
        self.latencies.clear()
        self.arrivals.clear()
        return answered

    def run(self, seconds, rate, every_second=None, stop=None):
        """Publish at ``rate`` for ``seconds`` or until the event ``stop`` is set.

        Sleeps, then spins the last 0.3 ms of each period for accuracy.
        """
        period, start = 1.0 / rate, time.perf_counter()
        next_second = 1.0
        self.node_count.counting = True
        for i in range(int(seconds * rate)):
            if stop is not None and stop.is_set():
                break
            target = start + i * period
            while (remaining := target - time.perf_counter()) > 0:
                if remaining > 3e-4:
                    time.sleep(remaining - 2e-4)
            self.publish()
            elapsed = time.perf_counter() - start
            if every_second is not None and elapsed >= next_second:
                every_second(elapsed)
                next_second += 1.0
        achieved = len(self.sent) / (time.perf_counter() - start)
        time.sleep(1.2)   # one more diagnostics period covers the end of the run
        self.node_count.counting = False
        return achieved

    def summary(self):
        latency = np.array(self.latencies) * 1e3
        missed = sum(1 for stamp in self.sent if stamp not in self.received)
        return {"published": len(self.sent), "received": len(self.received), "missed": missed,
                "node_published_about": self.node_count.published,
                "latency_ms": {"median": float(np.median(latency)),
                               "p99": float(np.percentile(latency, 99)),
                               "max": float(latency.max())} if latency.size else None}
