"""Where the repository, its shipped robot descriptions and the third-party robots are."""
import importlib.metadata
import pathlib

REPO = pathlib.Path(__file__).resolve().parents[2]
URDF_DIR = REPO / "urdf"
SHIPPED_ROBOTS = sorted(path.name for path in URDF_DIR.glob("*.urdf"))


def shipped_urdf(name):
    return str(URDF_DIR / name)


def zoo_urdf_text(relative):
    """The expanded description of rtb-data robot ``relative`` (a path under its xacro/
    folder; test/system/test_zoo.py reads them all); skips the test without rtb-data
    (support.optional)."""
    from soa_dynamics_ros.description.urdf import read_description_text
    from support.optional import require
    rtbdata = require("rtbdata")
    root = pathlib.Path(rtbdata.__file__).resolve().parent / "xacro"
    return read_description_text(str(root / relative), package_paths=[str(root)])


def example_robots_folder():
    """Where pip put example-robot-data's robots (a data-only wheel: no module to import),
    or None."""
    try:
        distribution = importlib.metadata.distribution("example-robot-data")
    except importlib.metadata.PackageNotFoundError:
        return None
    return pathlib.Path(distribution.locate_file(
        "cmeel.prefix/share/example-robot-data/robots")).resolve()


def example_robot_text(relative):
    """The text of example-robot-data's plain URDF ``relative`` (under its robots/
    folder); skips the test (or module) without example-robot-data (support.optional)."""
    folder = example_robots_folder()
    if folder is None:
        from support.optional import absent
        absent("example-robot-data", "no such distribution")
    return (folder / relative).read_text()


# What a link without <inertial> gets where a zoo description has none (the KUKA,
# Puma and Panda files of rtb-data are kinematic only): a massless robot's
# dynamics are all zero, and a comparison of zeros proves nothing.
FILLER_INERTIAL = ('<inertial><origin xyz="0.01 0.02 0.05" rpy="0 0 0"/><mass value="1.0"/>'
                   '<inertia ixx="0.010" ixy="0" ixz="0" iyy="0.012" iyz="0" izz="0.008"/>'
                   '</inertial>')


def with_inertias(xml):
    """``xml`` with :data:`FILLER_INERTIAL` in every link that has no inertial."""
    import xml.etree.ElementTree as ElementTree
    robot = ElementTree.fromstring(xml)
    for link in robot.findall("link"):
        if link.find("inertial") is None:
            link.append(ElementTree.fromstring(FILLER_INERTIAL))
    return ElementTree.tostring(robot, encoding="unicode")
