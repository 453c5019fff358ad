"""Where the repository and its shipped robot descriptions are."""
import pathlib

REPO = pathlib.Path(__file__).resolve().parents[2]
URDF_DIR = REPO / "urdf"
SHIPPED_ROBOTS = sorted(path.name for path in URDF_DIR.glob("*.urdf"))


def shipped_urdf(name):
    return str(URDF_DIR / name)
