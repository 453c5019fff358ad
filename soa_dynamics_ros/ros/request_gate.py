"""The node's services, taken one request at a time within a share of the serving thread.

rclpy turns a request into Python objects (holding the GIL) when it takes the
request, before the handler runs; the largest accepted ones cost tens of
milliseconds that way.  Under an executor every ready request is taken as it
arrives, so clients flooding valid requests kept the thread that answers the
joint states busy for most of its time (docs/robustness.md, "Request floods").
Neither a budget on the handlers (the take is not in them) nor a second thread
(the take holds the GIL) changed that.

Here the services live on a companion node that no executor spins.  The node's
loop calls :meth:`RequestGate.serve` between its executor's callbacks; it takes
at most one request, and only once the time the previous request took (take,
handler and reply) is repaid: after a request of ``c`` seconds the next waits
``c / share - c`` (at most :data:`LONGEST_REQUEST_PAUSE`), so requests get at
most ``share`` of the thread, and a joint state waits at most for one request.  Requests not yet taken stay in the
middleware, in each service's bounded queue (its QoS depth, rclpy's default for
services): under a flood clients get slower answers, or none when their
request is pushed out of that queue, and the node's memory stays bounded.
"""
import time
import traceback

from rclpy.node import Node

from ..errors import clipped
from .throttled_log import MAX_LOG_TEXT, ThrottledLog

# The most of the serving thread's time requests may take, over time.
REQUEST_SHARE = 0.2
# [s] The longest pause after one request: a request too large to be accepted
# (refused once taken: seconds of deserializing) must not silence the services for long.
LONGEST_REQUEST_PAUSE = 1.0
# [s] How often an idle gate looks for requests: what an idle node's loop
# wakes for, and the longest a request waits in an idle node.
REQUEST_POLL_PERIOD = 0.002


class RequestGate:
    """Services ``{name: (type, callback)}`` under ``node``'s name, answered by :meth:`serve`."""

    def __init__(self, node, services, share=REQUEST_SHARE):
        # Its own name, without the process's remappings (which would rename it
        # after the node it serves); the services carry the node's full name.
        self.node = Node(f"{node.get_name()}_requests", namespace=node.get_namespace(),
                         context=node.context, use_global_arguments=False,
                         start_parameter_services=False, enable_rosout=False)
        prefix = node.get_fully_qualified_name().rstrip("/")
        self._services = [self.node.create_service(service_type, f"{prefix}/{name}", callback)
                          for name, (service_type, callback) in services.items()]
        self._share = share
        self._next_look = 0.0        # (monotonic)
        self._turn = 0               # where the next look starts: no service starves another
        self._log = ThrottledLog(node.get_logger())

    def wait_time(self, longest):
        """Seconds until :meth:`serve` may take a request, at most ``longest``."""
        return min(max(self._next_look - time.monotonic(), 0.0), longest)

    def serve(self):
        """Answer one waiting request if the requests' share allows it now; True if one was."""
        started = time.monotonic()
        if started < self._next_look:
            return False
        self._next_look = started + REQUEST_POLL_PERIOD
        count = len(self._services)
        for step in range(count):
            service = self._services[(self._turn + step) % count]
            if self._answer(service):
                self._turn = (self._turn + step + 1) % count
                cost = time.monotonic() - started
                pause = min(cost * (1.0 - self._share) / self._share, LONGEST_REQUEST_PAUSE)
                self._next_look = started + cost + max(pause, REQUEST_POLL_PERIOD)
                return True
        return False

    def _answer(self, service):
        """Take one request of ``service`` and reply to it; False if none was waiting."""
        try:
            with service.handle:
                request, header = service.handle.service_take_request(service.srv_type.Request)
            if header is None:
                return False
            # The callback answers every request itself (ModelServices._guarded).
            service.send_response(service.callback(request, service.srv_type.Response()), header)
        except Exception as error:  # noqa: BLE001 - a request (or a client gone) must not end the node
            self._log.error("request failed", 10.0, clipped(
                f"{service.srv_name} request failed: {type(error).__name__}: {error}\n"
                f"{traceback.format_exc()}", MAX_LOG_TEXT))
        return True

    def destroy(self):
        self.node.destroy_node()
