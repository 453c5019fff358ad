"""Waiting for a condition with a deadline, instead of a fixed sleep (no ROS needed)."""
import time


def wait_for(predicate, timeout=10.0, interval=0.01, what="condition"):
    """``predicate()``'s first truthy value; TimeoutError naming ``what`` after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise TimeoutError(f"timed out after {timeout} s waiting for {what}")
