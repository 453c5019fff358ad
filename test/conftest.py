"""Root conftest: test/ on sys.path (for the oracles and support packages), DDS isolation,
a reproducible random generator per test."""
import os
import pathlib
import sys
import zlib

import numpy as np
import pytest

# `from oracles.… import` and `from support.… import` resolve from any test folder.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from support.robots import SHIPPED_ROBOTS  # noqa: E402

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
