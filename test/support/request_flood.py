"""Client processes that flood the node's services with their largest accepted requests.

Shared by test/ros/test_node_request_flood.py and bench/bench_request_gaps.py
(``--flood``), so that the test and the benchmark send the same flood.  Each
client is a process of its own (rclpy deserializes and serializes with the
GIL: clients as threads of the measuring process would slow it, not the node).
"""
import multiprocessing
import time

from .request_bounds import maximal_requests
from .ros_harness import RosClient

PANDA_JOINTS = [f"panda_joint{i}" for i in range(1, 8)]
PANDA_POSE = [0.1, -0.6, 0.2, -2.2, 0.1, 1.7, 0.6]
PANDA_FRAME = "panda_hand_tcp"
PANDA_LINKS = [f"panda_link{i}" for i in range(1, 8)]
CALL_TIMEOUT = 20.0     # [s] a request without an answer by then counts as unanswered


def _flood_client(index, seconds, services, node, queue):
    """One client: the largest requests of ``services`` (None: all) in rotation, back to back."""
    client = RosClient(f"flood_client_{index}")
    counts = {"served": 0, "failed": 0, "unanswered": 0}
    try:
        handles = [(client.client(service_type, f"{node}/{service}"), request)
                   for service, service_type, request in maximal_requests(
                       PANDA_JOINTS, PANDA_POSE, PANDA_FRAME, PANDA_LINKS)
                   if services is None or service in services]
        start = time.monotonic()
        i = index
        while time.monotonic() - start < seconds:
            handle, request = handles[i % len(handles)]
            i += 1
            try:
                answer = client.call(handle, request, timeout=CALL_TIMEOUT)
            except TimeoutError:
                counts["unanswered"] += 1
                continue
            counts["served" if answer.success else "failed"] += 1
    finally:
        queue.put(counts)
        client.close()


class RequestFlood:
    """``clients`` processes flooding ``node``'s services for ``seconds`` from :meth:`start`."""

    def __init__(self, clients, seconds, services=None, node="/soa_dynamics"):
        context = multiprocessing.get_context("spawn")
        self._queue = context.Queue()
        self._processes = [context.Process(target=_flood_client,
                                           args=(k, seconds, services, node, self._queue))
                           for k in range(clients)]

    def start(self):
        for process in self._processes:
            process.start()

    def finish(self, timeout=120.0):
        """The clients' summed counts {served, failed, unanswered}, once all have ended."""
        try:
            counts = [self._queue.get(timeout=timeout) for _ in self._processes]
        finally:
            self.stop()
        return {key: sum(c[key] for c in counts) for key in counts[0]}

    def stop(self):
        """End the clients still running (SIGTERM), and wait for them."""
        for process in self._processes:
            if process.pid is not None:
                process.join(timeout=30.0)
                if process.is_alive():
                    process.terminate()
                    process.join(timeout=10.0)
