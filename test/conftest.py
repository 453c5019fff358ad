"""Root conftest: test/ on sys.path (for the oracles and support packages), DDS isolation,
a reproducible random generator per test, the conditions of a failed real-time test."""
import os
import pathlib
import sys
import zlib

import numpy as np
import pytest

# `from oracles.… import` and `from support.… import` resolve from any test folder.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from support import realtime  # noqa: E402
from support.robots import SHIPPED_ROBOTS  # noqa: E402

LOAD_AT_START = pytest.StashKey[str]()
SKIPPED_COLLECTORS = []     # the modules (or folders) skipped whole, by their node ids

# DDS stays on this machine, in a domain of its own (scripts/test.sh sets both;
# this covers running pytest directly).
os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
os.environ.setdefault("ROS_DOMAIN_ID", str(100 + os.getpid() % 100))


@pytest.fixture
def rng(request):
    # A seed per test, derived from its name, so a failure is reproducible.
    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))


def pytest_report_header(config):
    return f"shipped robots: {', '.join(SHIPPED_ROBOTS) or 'none'}"


@pytest.fixture(autouse=True)
def _realtime_priority(request):
    """A real-time test runs at a known priority, above the ordinary policy (support.realtime)."""
    if not request.node.get_closest_marker("realtime"):
        yield
        return
    restore = realtime.raise_own_priority()
    try:
        yield
    finally:
        restore()


def pytest_collectreport(report):
    if report.skipped:
        SKIPPED_COLLECTORS.append(report.nodeid)


def pytest_sessionfinish(session, exitstatus):
    # A folder whose every module skipped (a library of support.optional is missing: colcon
    # test's one ctest per folder) did run: that is a pass, as a run of skipped tests is.
    # Nothing found at all stays exit code 5.
    if exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED and SKIPPED_COLLECTORS:
        session.exitstatus = pytest.ExitCode.OK


def pytest_runtest_setup(item):
    if item.get_closest_marker("realtime"):
        realtime.RAISED.clear()
        item.stash[LOAD_AT_START] = realtime.machine_load()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    # A real-time verdict is read with the machine's load and the priorities it ran at.
    report = (yield).get_result()
    if report.failed and item.get_closest_marker("realtime"):
        report.sections.append(("real-time conditions", "\n".join([
            f"at the start: {item.stash.get(LOAD_AT_START, 'not recorded')}",
            f"at the failure: {realtime.machine_load()}",
            f"priorities: test process {realtime.priority_of()}; "
            + "; ".join(realtime.RAISED or ["no process raised"])])))
