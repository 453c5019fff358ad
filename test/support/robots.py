"""Where the repository and its shipped robot descriptions are."""
import pathlib

REPO = pathlib.Path(__file__).resolve().parents[2]
URDF_DIR = REPO / "urdf"
SHIPPED_ROBOTS = sorted(path.name for path in URDF_DIR.glob("*.urdf"))


def shipped_urdf(name):
    return str(URDF_DIR / name)


def zoo_urdf_text(relative):
    """The expanded description of rtb-data robot ``relative`` (a path under its xacro/
    folder; test/system/test_zoo.py reads them all); skips the test without rtb-data."""
    import pytest
    from soa_dynamics_ros.description.urdf import read_description_text
    rtbdata = pytest.importorskip("rtbdata", reason="rtb-data is in requirements-dev.txt")
    root = pathlib.Path(rtbdata.__file__).resolve().parent / "xacro"
    return read_description_text(str(root / relative), package_paths=[str(root)])
