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
most ``share`` of the thread, and a joint state waits at most for one request.
Requests not yet taken stay in the middleware, in each service's bounded queue
(its QoS depth, rclpy's default for services): under a flood clients get slower
answers, or none when their request is pushed out of that queue, and the
node's memory stays bounded.

An idle node is not woken to look for requests: a watcher thread waits (in
``rcl_wait``, without the GIL) until one is waiting, then wakes the node's
executor through a timer, and waits again only after the loop has looked.
"""
import contextlib
import threading
import time
import traceback

from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy
from rclpy.node import Node

from ..errors import clipped
from .throttled_log import MAX_LOG_TEXT, ThrottledLog

# The most of the serving thread's time requests may take, over time.
REQUEST_SHARE = 0.2
# [s] The longest pause after one request: a request too large to be accepted
# (refused once taken: seconds of deserializing) must not silence the services for long.
LONGEST_REQUEST_PAUSE = 1.0
# [s] The least pause between two looks for requests.
REQUEST_POLL_PERIOD = 0.002
# [s] The wake-up timer's period: it fires once, at once, after the watcher resets it.
WAKE_DELAY = 1e-6


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
        self._next_look = 0.0        # (monotonic) no request is taken before
        self._turn = 0               # where the next look starts: no service starves another
        self._log = ThrottledLog(node.get_logger())
        # The watcher's signals: a request waits (the loop should look), the loop has looked.
        self._waiting = threading.Event()
        self._looked = threading.Event()
        self._looked.set()
        self._closing = False
        # A timer rather than a guard condition: the EventsExecutor runs no guard conditions,
        # and a timer reset from another thread wakes either executor.
        self._wake_node = node.create_timer(WAKE_DELAY, self._woken)
        self._wake_node.cancel()
        self._stop_watching = self.node.create_guard_condition(lambda: None)
        self._watcher = threading.Thread(target=self._watch, name="request-watcher", daemon=True)
        self._watcher.start()

    def wait_time(self, longest):
        """Seconds the loop may wait for callbacks before :meth:`serve` should run, at most ``longest``."""
        if not self._waiting.is_set():
            return longest
        return min(max(self._next_look - time.monotonic(), 0.0), longest)

    def serve(self):
        """Answer one waiting request if the requests' share allows it now; True if one was."""
        if not self._waiting.is_set():
            return False
        started = time.monotonic()
        if started < self._next_look:
            return False
        if self._watcher.is_alive():     # (else looked for at every chance: see _watch)
            self._waiting.clear()
        # (also after a look that found nothing: a service the middleware reports ready
        # without a request to take cannot make the loop spin)
        self._next_look = started + REQUEST_POLL_PERIOD
        answered = False
        count = len(self._services)
        for step in range(count):
            service = self._services[(self._turn + step) % count]
            if self._answer(service):
                self._turn = (self._turn + step + 1) % count
                cost = time.monotonic() - started
                pause = min(cost * (1.0 - self._share) / self._share, LONGEST_REQUEST_PAUSE)
                self._next_look = started + cost + max(pause, REQUEST_POLL_PERIOD)
                answered = True
                break
        self._looked.set()
        return answered

    def _watch(self):
        """Until :meth:`destroy`: wait for a request, signal it, wait for the loop to look.

        Should the wait fail, the loop looks for requests at every chance from then on
        (every REQUEST_POLL_PERIOD at most), so the services go on answering.
        """
        try:
            self._watch_until_closed()
        except Exception as error:  # noqa: BLE001 - the services must outlive their watcher
            if not self._closing:
                self._log.error("request watcher", 10.0, clipped(
                    f"the request watcher stopped ({type(error).__name__}: {error}); requests "
                    f"are looked for every {REQUEST_POLL_PERIOD * 1e3:g} ms instead", MAX_LOG_TEXT))
                self._waiting.set()

    def _watch_until_closed(self):
        wait_set = _rclpy.WaitSet(0, 1, 0, 0, len(self._services), 0, self.node.context.handle)
        while True:
            self._looked.wait()
            self._looked.clear()
            if self._closing:
                return
            with contextlib.ExitStack() as handles:
                wait_set.clear_entities()
                for service in self._services:
                    handles.enter_context(service.handle)
                    wait_set.add_service(service.handle)
                handles.enter_context(self._stop_watching.handle)
                wait_set.add_guard_condition(self._stop_watching.handle)
                wait_set.wait(-1)
            if self._closing:
                return
            self._waiting.set()
            self._wake_node.reset()

    def _woken(self):
        """The wake-up timer's callback: once is enough (the loop serves after every callback)."""
        self._wake_node.cancel()

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
        self._closing = True
        self._stop_watching.trigger()
        self._looked.set()
        self._watcher.join(timeout=5.0)
        self.node.destroy_node()
