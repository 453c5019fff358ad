"""The test-only libraries of requirements-dev.txt that a ROS workspace may not have.

Pinocchio, MuJoCo, PyKDL, rtb-data and example-robot-data are the independent references and
robot sets the tests compare against (MuJoCo is the simulated arm's plant too), hypothesis
drives the fuzz tests, matplotlib draws the plots. `scripts/setup.sh`
installs them all; a colcon workspace (`colcon test`, docs/ros_workspace.md) may lack some:
Jazzy's numpy 1.26 has no Pinocchio wheel. A test that needs one of them then skips, saying
which library is missing and how to install it; it never skips where the library imports.

`scripts/test.sh` sets SOA_TEST_REQUIRE_OPTIONAL=1: in the project's own venv, where
requirements-dev.txt is installed, a missing library is an error, not a skip, so the main
suite never silently loses a reference.
"""
import importlib
import os

import pytest

# import name -> how to install it
INSTALL = {
    "pinocchio": "pip install pin",
    "mujoco": "pip install mujoco",
    "PyKDL": "apt-get install python3-pykdl (Debian/Ubuntu), linked into the venv by scripts/setup.sh",
    "rtbdata": "pip install rtb-data",
    "example-robot-data": "pip install example-robot-data",   # data only: no module to import
    "hypothesis": "pip install hypothesis",
    "matplotlib": "pip install matplotlib",
    "nav_msgs.msg": "pip install ros-<distro>-nav-msgs (apt: ros-<distro>-nav-msgs)",
}
STRICT = os.environ.get("SOA_TEST_REQUIRE_OPTIONAL") == "1"


def _missing_reason(name, error):
    return f"{name} is not installed ({INSTALL[name]}; requirements-dev.txt): {error}"


def _import(name):
    """The module, or the ModuleNotFoundError that says it is absent.

    A namespace package of that name (a folder without the library, left by a partial
    install such as mujoco-core without mujoco) is absent too. Any other import error
    (a broken install) propagates: that is a failure, not a missing library.
    """
    if name not in INSTALL:
        raise ValueError(f"{name!r} is not an optional test library (support.optional.INSTALL)")
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as error:
        if error.name != name.split(".")[0]:
            raise          # the library is there but something it needs is not
        return error
    if getattr(module, "__file__", None) is None:
        return ModuleNotFoundError(f"{name} is only an empty namespace package here", name=name)
    return module


def absent(name, detail):
    """The calling test (or module, at module level) skipped: library ``name`` is missing."""
    if STRICT:
        raise ModuleNotFoundError(_missing_reason(name, detail) + " (SOA_TEST_REQUIRE_OPTIONAL=1)",
                                  name=name)
    pytest.skip(_missing_reason(name, detail), allow_module_level=True)


def require(name):
    """``name`` imported, or the calling test (or module, at module level) skipped."""
    found = _import(name)
    if isinstance(found, ModuleNotFoundError):
        absent(name, found)
    return found


def available(name):
    return not isinstance(_import(name), ModuleNotFoundError)


def needs(*names):
    """A mark: the test skips unless every library of ``names`` imports (never under STRICT)."""
    missing = [name for name in names if not available(name)]
    return pytest.mark.skipif(
        bool(missing) and not STRICT,
        reason="; ".join(_missing_reason(name, "not found") for name in missing) or "-")
