"""Per-message log lines: once per period and key, and never through rclpy's own throttle,
which inspects the caller's source on every call (0.7 ms, most of a 1 kHz cycle)."""
import ast
import logging
import time

from support.robots import REPO
from soa_dynamics_ros.ros.throttled_log import ThrottledLog


def test_each_key_logs_once_per_period(caplog):
    log = ThrottledLog(logging.getLogger("throttled_log_test"))
    with caplog.at_level(logging.WARNING, logger="throttled_log_test"):
        for k in range(1000):
            log.warning("unknown joints", 60.0, f"unknown names, message {k}")
            log.error("failed", 60.0, f"failure {k}")
        log.warning("clamped", 0.05, "clamped 1")
        time.sleep(0.06)
        log.warning("clamped", 0.05, "clamped 2")
        log.warning("clamped", 0.05, "clamped 3")
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        ("WARNING", "unknown names, message 0"), ("ERROR", "failure 0"),
        ("WARNING", "clamped 1"), ("WARNING", "clamped 2")]


def test_no_module_uses_rclpys_per_call_throttle():
    users = []
    for path in sorted((REPO / "soa_dynamics_ros").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and any(
                    keyword.arg == "throttle_duration_sec" for keyword in node.keywords):
                users.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert not users, f"use ros/throttled_log.ThrottledLog instead: {users}"


def test_lines_are_built_only_when_due_and_cut_to_a_bound(caplog):
    """Text about a message is made for the lines written only, and a 4 MB name in it
    makes no 4 MB line."""
    log = ThrottledLog(logging.getLogger("throttled_log_test"))
    built = []
    with caplog.at_level(logging.WARNING, logger="throttled_log_test"):
        for k in range(100):
            log.warning("unknown joints", 60.0, lambda: built.append(k) or "x" * 4_000_000)
    assert built == [0]
    assert [len(r.getMessage()) < 9000 for r in caplog.records] == [True]
