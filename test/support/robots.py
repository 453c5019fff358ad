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


def example_robot_path(relative):
    """The path of example-robot-data's file ``relative`` (under its robots/ folder);
    skips the test (or module) without example-robot-data (support.optional)."""
    folder = example_robots_folder()
    if folder is None:
        from support.optional import absent
        absent("example-robot-data", "no such distribution")
    return folder / relative


def example_robot_text(relative):
    """The text of example-robot-data's plain URDF ``relative`` (as :func:`example_robot_path`)."""
    return example_robot_path(relative).read_text()


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


# Robots the newer quantities are compared with Pinocchio on (issue 47 part 5): the
# shipped ones, rtb-data arms with mimic grippers (prismatic fingers) and
# example-robot-data arms.  ``(kind, key)`` pairs, read by :func:`reference_robot_text`.
MIMIC_ZOO_ARMS = ["trossen_descriptions/urdf/vx300s.urdf.xacro",
                  "trossen_descriptions/urdf/px150.urdf.xacro"]
EXAMPLE_ARMS = ["xarm_description/urdf/xarm7.urdf", "z1_description/urdf/z1.urdf",
                "kinova_description/robots/kinova.urdf"]
REFERENCE_ROBOTS = ([("shipped", name) for name in SHIPPED_ROBOTS]
                    + [("zoo", path) for path in MIMIC_ZOO_ARMS]
                    + [("example", path) for path in EXAMPLE_ARMS])


def reference_robot_params():
    """:data:`REFERENCE_ROBOTS` as pytest parameters named after their files."""
    import pytest
    return [pytest.param(source, id=source[1].split("/")[-1]) for source in REFERENCE_ROBOTS]


def reference_robot_text(source):
    """The URDF text of a ``(kind, key)`` of :data:`REFERENCE_ROBOTS`."""
    kind, key = source
    if kind == "shipped":
        return pathlib.Path(shipped_urdf(key)).read_text()
    return zoo_urdf_text(key) if kind == "zoo" else example_robot_text(key)


def quiet_model(xml, kernels):
    """``RobotModel.from_urdf(xml, kernels=kernels)`` without its inertia warnings;
    ``"generic"`` is checked to be compiled (not the numpy path)."""
    import warnings
    from soa_dynamics_ros import RobotModel
    from soa_dynamics_ros.errors import InertiaWarning
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InertiaWarning)
        model = RobotModel.from_urdf(xml, kernels=kernels)
    if kernels == "generic":
        assert model.kernels.backend == "c"
    return model
