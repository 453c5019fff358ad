"""The life of a node process: init, run, and a clean shutdown on SIGINT/SIGTERM.

Shared by the package's executables so that every one exits with status 0 on
a signal (no "terminate called without an active exception", no leaked Fast
DDS shared memory) and with status 1 and one line when it cannot start.
"""
import gc
import sys

import rclpy
from rclpy.executors import ExternalShutdownException

from .errors import SoaDynamicsError


def run_node(name, make_node, make_executor, loop, args=None):
    """Build the node and its executor, run ``loop(node, executor)``; the exit status."""
    rclpy.init(args=args)
    node = executor = None
    try:
        node = make_node()
        executor = make_executor(node)
        executor.add_node(node)
        # Out of the collector's reach go the ~40,000 objects start-up made
        # (modules, the model, rclpy): a full collection scanning them paused
        # the 1 kHz loop for ~10 ms; now it scans what the loop allocates.
        gc.freeze()
        loop(node, executor)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except RuntimeError:
        # A signal arriving while spin_once takes a message surfaces as a
        # RuntimeError once the context is shut down: a normal exit.
        if rclpy.ok():
            raise
    except SoaDynamicsError as error:
        print(f"[{name}] cannot start: {error}", file=sys.stderr)
        return 1
    finally:
        if executor is not None:
            executor.shutdown()
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
    return 0
