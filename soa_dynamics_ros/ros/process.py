"""The life of a node process: init, run, and a clean shutdown on SIGINT/SIGTERM/SIGHUP.

Shared by the package's executables so that every one exits with status 0 on
a signal (no "terminate called without an active exception", no leaked Fast
DDS shared memory) and with status 1 and one line when it cannot start.  The
command line is read first (:mod:`.command_line`): ``--help`` prints the
executable's parameters without starting ROS (status 0); a mistake in the
arguments is one line and status 2.  SIGHUP (the terminal that started the
node closed) ends it as SIGINT does.

Signals are this module's, not rclpy's: rclpy's default handler shuts the
context down at once, while a callback may be running, and that callback's
next ``publish`` or ``take_message`` then fails ("[FATAL] Exception in
'subscriptions' callback", "Unable to convert call argument '0' to Python
object").  Here a signal only asks the loop to end; the loop finishes the
callback it is in, returns, and the node is torn down in order (executor,
node, context).  A teardown that does not finish within
:data:`TEARDOWN_DEADLINE` seconds of the request ends the process anyway
(status 0), with a log line and the threads' stacks: a process never stays
alive ignoring signals.  Signals after the first are ignored (not delivered), so
that none interrupts the teardown's blocking calls.  Fast DDS can hang deleting a participant while it
holds the GIL (rclpy's ``destroy_node``; eProsima/Fast-DDS#235 is that class
of hang): no Python thread runs then, so a POSIX timer whose own C thread
calls ``_exit(0)`` ends the process at :data:`LAST_RESORT_DEADLINE`, after
faulthandler's C thread has written the stacks.
"""
import ctypes
import faulthandler
import gc
import os
import signal
import sys
import threading

import rclpy
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.signals import SignalHandlerOptions
from rclpy.subscription import Subscription

from ..errors import SoaDynamicsError
from .command_line import (USAGE_ERROR, CommandLineError, check_arguments, ros_arguments_error,
                           wants_help)
from .parameters import EXECUTORS

TEARDOWN_DEADLINE = 3.0     # [s] from the stop request to a forced exit
# If the hang holds the GIL, the Python watchdog cannot run: faulthandler's C
# thread dumps the stacks at STACKS_DEADLINE, and the C timer exits a little later.
STACKS_DEADLINE = TEARDOWN_DEADLINE + 0.8
LAST_RESORT_DEADLINE = TEARDOWN_DEADLINE + 1.0
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
WATCHDOG_MESSAGE = "teardown did not finish within {:g} s of the stop request: exiting without it"


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


class _Itimerspec(ctypes.Structure):
    _fields_ = [("it_interval", _Timespec), ("it_value", _Timespec)]


class _SigeventThread(ctypes.Structure):
    """glibc's ``struct sigevent`` (64 bytes) with ``SIGEV_THREAD``'s function and attributes."""
    _fields_ = [("sigev_value", ctypes.c_void_p), ("sigev_signo", ctypes.c_int),
                ("sigev_notify", ctypes.c_int), ("function", ctypes.c_void_p),
                ("attributes", ctypes.c_void_p), ("padding", ctypes.c_int * 8)]


_SIGEV_THREAD = 2
_CLOCK_MONOTONIC = 1


class _ExitTimer:
    """A POSIX timer whose own C thread calls ``_exit(0)``: it ends the process GIL or not."""

    def __init__(self):
        self._libc = ctypes.CDLL(None)
        self._timer = None

    def arm(self, seconds):
        """True once armed; False where this C library offers no such timer (then
        faulthandler ends the process instead, status 1)."""
        try:
            # (item access: a C name, not an attribute of this module)
            exit_function = ctypes.cast(self._libc["_exit"], ctypes.c_void_p).value
            # sigev_value 0 is _exit's argument: the exit status.
            event = _SigeventThread(sigev_value=None, sigev_notify=_SIGEV_THREAD,
                                    function=exit_function)
            timer = ctypes.c_void_p()
            if self._libc.timer_create(_CLOCK_MONOTONIC, ctypes.byref(event),
                                       ctypes.byref(timer)) != 0:
                return False
            self._timer = timer
            whole = int(seconds)
            when = _Itimerspec(it_value=_Timespec(whole, int((seconds - whole) * 1e9)))
            return self._libc.timer_settime(timer, 0, ctypes.byref(when), None) == 0
        except AttributeError:
            return False

    def cancel(self):
        if self._timer is not None:
            self._libc.timer_delete(self._timer)
            self._timer = None


class _Lifetime:
    """Whether the loop should go on; the watchdog, started once, at the first stop request."""

    def __init__(self, name):
        self.name = name
        self._stop = threading.Event()
        self._finished = threading.Event()
        self._watchdog = None
        self._exit_timer = _ExitTimer()

    def running(self):
        return not self._stop.is_set()

    def on_signal(self, _signum, _frame):
        self._stop.set()
        # Later stop signals (a second Ctrl-C, launch's SIGTERM after its SIGINT)
        # are discarded by the kernel from now on: delivered, one would interrupt the
        # teardown's blocking C calls (EINTR ends a sleep or wait early) and cut the
        # orderly teardown short; the watchdog ends a teardown that hangs.
        for signum in STOP_SIGNALS:
            signal.signal(signum, signal.SIG_IGN)
        self.start_watchdog()

    def start_watchdog(self):
        # Only ever called in the main thread (signal handlers run there): no lock,
        # which a handler interrupting its own thread could never acquire.
        if self._watchdog is not None:
            return
        self._watchdog = threading.Thread(target=self._expire, name="shutdown-watchdog",
                                          daemon=True)
        self._watchdog.start()
        if self._exit_timer.arm(LAST_RESORT_DEADLINE):
            faulthandler.dump_traceback_later(STACKS_DEADLINE, exit=False)
        else:
            faulthandler.dump_traceback_later(LAST_RESORT_DEADLINE, exit=True)

    def _expire(self):
        if not self._finished.wait(TEARDOWN_DEADLINE):
            print(f"[{self.name}] " + WATCHDOG_MESSAGE.format(TEARDOWN_DEADLINE),
                  file=sys.stderr, flush=True)
            faulthandler.dump_traceback(all_threads=True)    # where the teardown hangs
            os._exit(0)

    def finished(self):
        self._finished.set()
        faulthandler.cancel_dump_traceback_later()
        self._exit_timer.cancel()


def make_executor(kind):
    """An executor of one of :data:`~soa_dynamics_ros.ros.parameters.EXECUTORS`."""
    if kind == "events":
        try:
            from rclpy.experimental import EventsExecutor
        except ImportError:         # rclpy before 7.1.4 (Jazzy's first releases) has none
            print("rclpy has no EventsExecutor (rclpy.experimental); the single_threaded "
                  "executor runs instead", file=sys.stderr, flush=True)
            return SingleThreadedExecutor()
        return EventsExecutor()
    if kind == "single_threaded":
        return SingleThreadedExecutor()
    raise SoaDynamicsError(f"executor must be one of {EXECUTORS}, not {kind!r}")


def subscribe_with_info(node, message_type, topic, callback, qos, raw=False):
    """A subscription calling ``callback(message, MessageInfo)`` under every executor.

    rclpy 9.1.2's EventsExecutor passes (message, info) as one tuple where the
    other executors pass two arguments, and fails on a two-argument callback:
    the callback it gets takes both forms, and is declared as wanting the info.
    ``raw``: the message comes serialized (bytes), as rclpy's ``raw`` subscription gives it.
    """
    def receive(message, info=None):
        if info is None:
            message, info = message
        callback(message, info)
    subscription = node.create_subscription(message_type, topic, receive, qos, raw=raw)
    subscription._callback_type = Subscription.CallbackType.WithMessageInfo
    return subscription


def spin_until_stopped(node, executor, running):
    """The loop of an event-driven node: callbacks until ``running()`` turns False."""
    # A spin_once loop, not spin(): the EventsExecutor's spin() busy-loops and
    # misses messages from other processes (see README, "Executors").
    while running():
        executor.spin_once(timeout_sec=0.1)


def run_node(name, make_node, executor_for, loop, args=None, help_text=None):
    """Build the node and its executor, run ``loop(node, executor, running)``; the exit status.

    ``running()`` turns False once one of :data:`STOP_SIGNALS` has arrived:
    the loop checks it between ``spin_once`` calls and returns.  ``args``: as
    ``sys.argv`` (the default), program name first.  ``help_text(program)``:
    what ``--help`` prints.
    """
    argv = sys.argv if args is None else list(args)
    program = os.path.basename(argv[0]) if argv else name
    if help_text is not None and wants_help(argv[1:]):
        print(help_text(program))
        return 0
    try:
        check_arguments(argv[1:], program)
    except CommandLineError as error:
        print(f"{program}: {error}", file=sys.stderr)
        return USAGE_ERROR
    lifetime = _Lifetime(name)
    for signum in STOP_SIGNALS:
        signal.signal(signum, lifetime.on_signal)
    try:
        rclpy.init(args=argv, signal_handler_options=SignalHandlerOptions.NO)
    except Exception as error:  # noqa: BLE001 - rcl refusing the ROS arguments, in its own types
        print(f"{program}: {ros_arguments_error(error, program)}", file=sys.stderr)
        return USAGE_ERROR
    node = executor = None
    try:
        node = make_node()
        executor = executor_for(node)
        executor.add_node(node)
        # Out of the collector's reach go the ~40,000 objects start-up made
        # (modules, the model, rclpy): a full collection scanning them paused
        # the 1 kHz loop for cycles; now it scans what the loop allocates.
        gc.freeze()
        loop(node, executor, lifetime.running)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except SoaDynamicsError as error:
        print(f"[{name}] cannot start: {error}", file=sys.stderr)
        return 1
    finally:
        lifetime.start_watchdog()
        if executor is not None:
            executor.shutdown()
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
        lifetime.finished()
    return 0
