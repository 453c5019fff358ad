import os
import pathlib
import sys
import zlib

import numpy as np
import pytest

TEST_DIR = pathlib.Path(__file__).resolve().parent
REPO = TEST_DIR.parent
URDF_DIR = REPO / "urdf"
sys.path.insert(0, str(TEST_DIR))

# DDS stays on this machine, in a domain of its own (scripts/test.sh sets both;
# this covers running pytest directly).
os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
os.environ.setdefault("ROS_DOMAIN_ID", str(100 + os.getpid() % 100))

SHIPPED_ROBOTS = sorted(path.name for path in URDF_DIR.glob("*.urdf"))


def shipped_urdf(name):
    return str(URDF_DIR / name)


def assert_close(actual, expected, what, rtol=1e-9):
    """Agreement to ``rtol`` relative to the size of the expected quantity."""
    expected = np.asarray(expected, dtype=float)
    scale = max(1.0, float(np.abs(expected).max()) if expected.size else 1.0)
    np.testing.assert_allclose(actual, expected, rtol=0.0, atol=rtol * scale, err_msg=what)


def random_states(model, count, rng):
    """``count`` random (q, qd, qdd) for reference comparisons."""
    for _ in range(count):
        yield (rng.uniform(-np.pi, np.pi, model.dof), rng.normal(size=model.dof) * 2,
               rng.normal(size=model.dof) * 3)


def random_wrenches(model, rng):
    """Wrenches on up to 3 random links (root-attached ones included: they do no work)."""
    links = rng.choice(model.frame_names, size=min(3, len(model.frame_names)), replace=False)
    return {str(link): rng.normal(size=6) * 10 for link in links}


@pytest.fixture
def rng(request):
    # A seed per test, derived from its name, so a failure is reproducible.
    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))


def pytest_report_header(config):
    return f"shipped robots: {', '.join(SHIPPED_ROBOTS) or 'none'}"

