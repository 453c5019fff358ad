"""Where the package under test is installed, found the way ROS finds it: the ament index.

Its prefix is a colcon workspace's install/soa_dynamics_ros, or the .venv that
scripts/setup.sh builds into (scripts/test.sh puts it on AMENT_PREFIX_PATH);
without an index entry, the checkout's .venv.  Either way the layout is the same:
lib/<package> holds the node executables (what `ros2 run` and launch start),
share/<package> the launch files, configurations and descriptions, bin/ the CLI.
"""
import pathlib

from support.robots import REPO

PACKAGE = "soa_dynamics_ros"


def _prefix():
    try:
        from ament_index_python.packages import PackageNotFoundError, get_package_prefix
    except ImportError:
        return REPO / ".venv"
    try:
        return pathlib.Path(get_package_prefix(PACKAGE))
    except (PackageNotFoundError, OSError):     # OSError: AMENT_PREFIX_PATH unset
        return REPO / ".venv"


PREFIX = _prefix()
EXECUTABLES = PREFIX / "lib" / PACKAGE
SHARE = PREFIX / "share" / PACKAGE
CONSOLE_SCRIPTS = PREFIX / "bin"
