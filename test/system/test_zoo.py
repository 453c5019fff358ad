"""Every robot description of the third-party ``rtb-data`` and ``example-robot-data``
packages against Pinocchio.

The descriptions are read where pip installed them (never copied here).  Each
``.urdf`` and each ``.xacro`` that is a robot is expanded with
``package_paths=[rtbdata/xacro]`` and its gravity torques, inverse and
forward dynamics, mass matrix, and pose and Jacobian of every link frame are
compared with Pinocchio on random states.  Files that only define xacro
macros are not robots; they are recognised by their content.
``example-robot-data`` (the Pinocchio ecosystem's robots: Talos, Romeo, iCub,
Tiago, ANYmal, Unitree, UR, Panda, ...) ships plain URDFs; its floating-base
robots load as fixed-base trees, as Pinocchio builds them without a root joint.
"""
import os
import pathlib
import warnings
import xml.etree.ElementTree as ElementTree

import numpy as np
import pytest

from oracles.pinocchio_reference import PinocchioReference
from support.numerics import assert_close, random_states
from support.optional import require
from support.robots import example_robots_folder, with_inertias
from soa_dynamics_ros import RobotModel
from soa_dynamics_ros.errors import (DescriptionWarning, InertiaWarning,
                                     SingularDynamicsError, URDFError)
from soa_dynamics_ros.description.urdf import read_description_text

rtbdata = require("rtbdata")
ZOO = pathlib.Path(rtbdata.__file__).resolve().parent / "xacro"
EXAMPLE_ROBOTS = example_robots_folder()
# The robots' ids name their package: "rtbdata/<path>" or "example-robot-data/<path>".
SOURCES = {"rtbdata": ZOO, "example-robot-data": EXAMPLE_ROBOTS}
# xacro statements that define things without instantiating any link.
DEFINITIONS = ("macro", "include", "property", "arg")

# rtb-data renamed some packages' folders but kept their xacro's $(find) of the
# original ROS-Industrial names, which no folder or package.xml declares: the
# test gives each original name as a folder (a symlink) in a second search
# path, as a user of those files would.  (The name alone does not resolve:
# test_renamed_package_without_alias_names_it.)
RENAMED_PACKAGES = {
    "abb_irb140": "abb_irb140_description",
    **{f"kuka_{robot}_support": f"kuka_description/kuka_{robot}"
       for robot in ("kr3", "kr5", "kr6", "kr10", "kr16", "kr120", "kr150", "kr210", "lbr_iiwa")},
}
# Robots that cannot be loaded: the expected URDFError message, and why.
# (Every description is a fixed-base tree: the Ridgeback's wheels and the
# Frankie robots' omnidirectional base are revolute and prismatic joints.)
NOT_LOADABLE = {
    # Its macro file declares <property name="deg" .../> without the xacro:
    # prefix, which ROS 1 xacro accepted (deprecated) and xacro 2 ignores: the
    # file itself is broken for current xacro, and the error names the cause.
    "rtbdata/kuka_description/kuka_kr210/urdf/kr210l150.xacro": r"name 'deg' is not defined",
    # An empty <robot>: xacro output of a file that only defines macros.
    "example-robot-data/ur_description/urdf/ur3.urdf": r"robot '' has no links",
}
# At least this many robots (2026-11-23: rtb-data 44 of its 66 files, 22 define
# macros only; 2026-11-26: example-robot-data 6.0.0, 69 URDFs): a moved folder must
# not make the test pass by finding nothing.
MINIMUM_ROBOTS = {"rtbdata": 44, "example-robot-data": 69}


def _defines_macros_only(path):
    """Whether a xacro file's <robot> only defines (macros, includes, properties, materials):
    no <link> or <joint> and no macro call at its top level."""
    root = ElementTree.parse(path).getroot()
    for child in root:
        if not isinstance(child.tag, str):
            continue            # comments
        namespace, _, tag = child.tag.rpartition("}")
        if tag in ("link", "joint") or ("xacro" in namespace and tag not in DEFINITIONS):
            return False
    return True


def _robot_files(source, folder):
    if folder is None:
        return []
    files = sorted(folder.rglob("*.urdf"))
    if source == "rtbdata":
        # (example-robot-data's two xacro files are the sources of hector's quadrotor_base.urdf,
        # and include it by a package:// URL, which xacro does not resolve)
        files = sorted(files + list(folder.rglob("*.xacro")))
    return [path for path in files
            if path.suffix == ".urdf" or not _defines_macros_only(path)]


ROBOTS = [f"{source}/{path.relative_to(folder)}"
          for source, folder in SOURCES.items() for path in _robot_files(source, folder)]


def _path(robot):
    source, _, relative = robot.partition("/")
    return SOURCES[source] / relative


def _read(robot, package_paths):
    """The description's text, xacro expanded."""
    return read_description_text(str(_path(robot)), package_paths=package_paths)


def _singular(mass):
    """Whether M has no unique inverse (a massless link on a moving joint); a robot
    without moving joints (a quadrotor's frame) has an empty M, which is not."""
    moments = np.linalg.eigvalsh(mass)
    return moments.size > 0 and moments[0] <= 1e-12 * moments[-1]


def _solve_tolerance(mass):
    """Tolerance of what is solved with M (forward dynamics and its derivatives): 1e-9,
    or what M's conditioning allows, a backward-stable solve being exact to about
    eps cond(M) (the iCub's M reaches cond 1.5e7: ours and Pinocchio then differ by up to
    1.5e-9 of the largest entry, Pinocchio and the numpy reference by 1.6e-10)."""
    if mass.size == 0:
        return 1e-9
    return max(1e-9, 10 * np.finfo(float).eps * np.linalg.cond(mass))


def _load(xml, kernels):
    with warnings.catch_warnings():
        # Zero-mass links (tool frames, bases) are common in real descriptions, and so are
        # mimic tags left on joints a reduced model locked (fixed), which are ignored with
        # a DescriptionWarning (test_urdf_loading tests it).
        warnings.simplefilter("ignore", InertiaWarning)
        warnings.simplefilter("ignore", DescriptionWarning)
        return RobotModel.from_urdf(xml, kernels=kernels)


@pytest.fixture(scope="module")
def package_paths(tmp_path_factory):
    aliases = tmp_path_factory.mktemp("renamed_packages")
    for name, folder in RENAMED_PACKAGES.items():
        (aliases / name).symlink_to(ZOO / folder, target_is_directory=True)
    return [str(ZOO), str(aliases)]


def test_the_zoo_is_found_and_complete():
    for source, folder in SOURCES.items():
        assert folder is not None and folder.is_dir(), f"{source}: scripts/setup.sh installs it"
        found = [robot for robot in ROBOTS if robot.startswith(source + "/")]
        assert len(found) >= MINIMUM_ROBOTS[source], (source, found)
    # The classification is by content; a macro-only file expands (where it can:
    # the Ridgeback's laser mounts include a package rtb-data lacks) to no link.
    macro_files = [path for path in ZOO.rglob("*.xacro") if _defines_macros_only(path)]
    assert 0 < len(macro_files) <= 66 - MINIMUM_ROBOTS["rtbdata"]


@pytest.mark.parametrize("robot", ROBOTS)
def test_robot_agrees_with_pinocchio(robot, package_paths, rng):
    if robot in NOT_LOADABLE:
        with pytest.raises(URDFError, match=NOT_LOADABLE[robot]):
            _load(_read(robot, package_paths), "off")
        return
    xml = _read(robot, package_paths)
    model = _load(xml, "off")
    reference = PinocchioReference(xml, model.joint_names)
    for q, qd, qdd in random_states(model, 3, rng):
        assert_close(model.gravity_torques(q), reference.inverse_dynamics(
            q, np.zeros_like(q), np.zeros_like(q)), f"{robot} gravity")
        tau = reference.inverse_dynamics(q, qd, qdd)
        assert_close(model.inverse_dynamics(q, qd, qdd), tau, f"{robot} inverse dynamics")
        mass = reference.mass_matrix(q)
        assert_close(model.mass_matrix(q), mass, f"{robot} mass matrix")
        if _singular(mass):
            # A massless link on a moving joint (the IRB140's flange): M is singular.
            with pytest.raises(SingularDynamicsError):
                model.forward_dynamics(q, qd, tau)
        else:
            assert_close(model.forward_dynamics(q, qd, tau),
                         reference.forward_dynamics(q, qd, tau), f"{robot} forward dynamics",
                         _solve_tolerance(mass))
        for frame in model.frame_names:
            assert_close(model.frame_pose(q, frame), reference.frame_pose(q, frame),
                         f"{robot} pose of {frame}")
            assert_close(model.jacobian(q, frame), reference.jacobian(q, frame),
                         f"{robot} Jacobian of {frame}")


@pytest.mark.parametrize("robot", [robot for robot in ROBOTS if robot not in NOT_LOADABLE])
def test_robot_derivatives_agree_with_pinocchio(robot, package_paths, rng):
    """Issue 17's derivatives as a never-seen robot gets them first (the generic compiled
    module: no per-robot compile) against Pinocchio's analytical derivatives; links
    without inertia get a filler (test/support/robots.py), or the kinematic-only
    descriptions would compare zeros."""
    xml = with_inertias(_read(robot, package_paths))
    model = _load(xml, "generic")
    reference = PinocchioReference(xml, model.joint_names)
    for q, qd, qdd in random_states(model, 3, rng):
        assert_close(model.gravity_derivatives(q), reference.gravity_derivatives(q),
                     f"{robot} gravity derivatives")
        for ours, theirs, name in zip(model.inverse_dynamics_derivatives(q, qd, qdd),
                                      reference.inverse_dynamics_derivatives(q, qd, qdd),
                                      ("dtau_dq", "dtau_dqd")):
            assert_close(ours, theirs, f"{robot} {name}")
        tau = reference.inverse_dynamics(q, qd, qdd)
        mass = reference.mass_matrix(q)
        assert model.dof == 0 or mass.max() > 0, \
            f"{robot}: no mass moves, and every derivative would be 0"
        if _singular(mass):
            # a zero-mass link of the description itself on a moving joint
            with pytest.raises(SingularDynamicsError):
                model.forward_dynamics_derivatives(q, qd, tau)
            continue
        for ours, theirs, name in zip(model.forward_dynamics_derivatives(q, qd, tau),
                                      reference.forward_dynamics_derivatives(q, qd, tau),
                                      ("dqdd_dq", "dqdd_dqd", "dqdd_dtau")):
            assert_close(ours, theirs, f"{robot} {name}", _solve_tolerance(mass))


def test_compiled_kernels_agree_on_one_zoo_robot(package_paths, tmp_path, monkeypatch, rng):
    """The C kernels on a third-party robot with mimic joints and fixed frames (one is enough:
    the per-robot numpy comparisons above cover the descriptions)."""
    from soa_dynamics_ros import kernels
    if not kernels.compiler_available():
        pytest.fail("no C compiler: scripts/setup.sh installs one")
    monkeypatch.setenv("SOA_DYNAMICS_CACHE", str(tmp_path))
    xml = _read("rtbdata/trossen_descriptions/urdf/px100.urdf.xacro", package_paths)
    model = _load(xml, "c")
    assert model.tree.has_mimic
    reference = PinocchioReference(xml, model.joint_names)
    for q, qd, qdd in random_states(model, 3, rng):
        tau = reference.inverse_dynamics(q, qd, qdd)
        assert_close(model.inverse_dynamics(q, qd, qdd), tau, "px100 kernel inverse dynamics")
        assert_close(model.mass_matrix(q), reference.mass_matrix(q), "px100 kernel mass matrix")


def test_renamed_package_without_alias_names_it():
    with pytest.raises(URDFError, match=r"package 'kuka_kr16_support' not found.*"
                                         + str(ZOO).replace(".", r"\.")):
        read_description_text(str(ZOO / "kuka_description/kuka_kr16/urdf/kr16_2.xacro"),
                              package_paths=[str(ZOO)])


def test_package_found_through_a_package_xml(tmp_path):
    """The Ridgeback's folder holds a package.xml; a folder of another name that declares
    the package is found by that declaration."""
    declared = ElementTree.parse(ZOO / "clearpath_ridgeback_description/package.xml").getroot()
    name = declared.findtext("name").strip()
    renamed = tmp_path / "deep" / "checkout"
    renamed.mkdir(parents=True)
    (renamed / "package.xml").write_text(f"<package><name>{name}</name></package>")
    (renamed / "robot.urdf").write_text('<robot name="r"><link name="a"/></robot>')
    model_text = read_description_text(f"package://{name}/robot.urdf",
                                       package_paths=[str(tmp_path)])
    assert 'link name="a"' in model_text
    assert os.fspath(tmp_path) not in model_text
