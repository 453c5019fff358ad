"""Descriptions as data (issue 43): xacro and file paths only where allowed, errors that never
show a file's contents, Drake's undeclared ``drake:`` prefix, package_paths that cannot be read."""
import importlib.util
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import warnings

import numpy as np
import pytest

from support.hostile_descriptions import SECRET, XACRO_NS, sandbox_escape, secret_in_an_error
from support.numerics import assert_close
from support.optional import require
from support.robots import shipped_urdf
from soa_dynamics_ros import RobotModel
from soa_dynamics_ros.description import xacro as xacro_module
from soa_dynamics_ros.description.urdf import read_description_text, resolve_package_uri
from soa_dynamics_ros.errors import DescriptionWarning, URDFError, XacroRefusedError


def test_the_sandbox_escape_runs_only_where_xacro_is_allowed(tmp_path):
    # Trusted (the library's default): xacro runs it, which is why topics never get xacro.
    trusted_marker = tmp_path / "ran_when_trusted"
    RobotModel.from_urdf(sandbox_escape(trusted_marker), kernels="off")
    assert trusted_marker.exists(), "the escape no longer runs: the threat model changed"

    marker = tmp_path / "must_not_exist"
    as_file = tmp_path / "robot.urdf"
    as_file.write_text(sandbox_escape(marker))
    for source in (sandbox_escape(marker), str(as_file)):
        with pytest.raises(XacroRefusedError, match=r"uses xacro .*\(allow_xacro=False\)"):
            RobotModel.from_urdf(source, kernels="off", allow_xacro=False)
    assert not marker.exists()
    # Plain URDF loads as before.
    panda = pathlib.Path(shipped_urdf("panda.urdf")).read_text()
    assert RobotModel.from_urdf(panda, kernels="off", allow_xacro=False).dof == 7


def test_text_is_never_opened_as_a_file_without_allow_path():
    path = shipped_urdf("panda.urdf")
    with pytest.raises(URDFError, match=r"not XML .* never opened as a file path"):
        RobotModel.from_urdf(path, kernels="off", allow_path=False)
    assert RobotModel.from_urdf(path, kernels="off").dof == 7


def test_a_file_that_is_not_a_urdf_is_refused_naming_it_without_its_contents(tmp_path,
                                                                              monkeypatch):
    monkeypatch.setenv("SOA_TEST_SECRET", SECRET)
    text_file = tmp_path / "credentials.env"
    text_file.write_text(f"TOKEN={SECRET}\n")
    binary_file = tmp_path / "key.bin"
    binary_file.write_bytes(b"\xff\xfe" + SECRET.encode() + b"\x80")
    # /proc/self/environ: size 0 to stat, the whole environment to read.
    for path, problem in ((text_file, "is not XML"), ("/proc/self/environ", "is not XML"),
                          (binary_file, "is not UTF-8 text")):
        with pytest.raises(URDFError) as refused:
            read_description_text(str(path))
        message = str(refused.value)
        assert repr(str(path)) in message and problem in message, message
        assert SECRET not in message and "TOKEN" not in message, message


def test_a_file_that_cannot_be_read_is_a_urdf_error():
    # /proc/self/mem: a regular file that fails with EIO at offset 0 (also for root).
    with pytest.raises(URDFError, match=r"cannot read robot description file '/proc/self/mem'"):
        read_description_text("/proc/self/mem")


def test_xacro_error_text_is_bounded_and_untrusted_xacro_reads_no_file(tmp_path):
    long_message = (f'<robot name="r" {XACRO_NS}>'
                    '<xacro:if value="${xacro.fatal(\'x\' * 100000)}"/></robot>')
    with pytest.raises(URDFError) as refused:
        RobotModel.from_urdf(long_message, kernels="off")
    assert len(str(refused.value)) < 2 * xacro_module.MAX_MESSAGE_CHARS

    secrets = tmp_path / "secrets.yaml"
    secrets.write_text(f"token: {SECRET}\n")
    with pytest.raises(XacroRefusedError) as refused:
        RobotModel.from_urdf(secret_in_an_error(secrets), kernels="off", allow_xacro=False)
    assert SECRET not in str(refused.value)


# A Drake-flavoured arm (the forms of drake/manipulation/models: iiwa and Panda URDFs):
# drake: is never declared.  Pinocchio (urdfdom) ignores what it does not know.
DRAKE_ARM = """<?xml version="1.0"?>
<robot name="drake_arm">
  <link name="base"><inertial><origin xyz="0 0 0.05"/><mass value="4"/>
    <inertia ixx="0.02" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.01"/></inertial>
    <collision><geometry><cylinder radius="0.1" length="0.1"/></geometry>
      <drake:proximity_properties><drake:mu_dynamic value="0.5"/>
        <drake:hydroelastic_modulus value="5e7"/></drake:proximity_properties></collision></link>
  <link name="upper"><inertial><origin xyz="0 0.03 0.12" rpy="0.1 0 0"/><mass value="3.4"/>
    <inertia ixx="0.033" ixy="0.001" ixz="0" iyy="0.0333" iyz="0.002" izz="0.0123"/></inertial></link>
  <link name="fore"><inertial><origin xyz="0.003 0.059 0.042"/><mass value="2.2"/>
    <inertia ixx="0.0305" ixy="0" ixz="0" iyy="0.0304" iyz="0.003" izz="0.011"/></inertial></link>
  <link name="hand"><inertial><origin xyz="0 0 0.04"/><mass value="0.7"/>
    <inertia ixx="0.002" ixy="0" ixz="0" iyy="0.002" iyz="0" izz="0.001"/></inertial></link>
  <joint name="joint1" type="revolute"><parent link="base"/><child link="upper"/>
    <origin xyz="0 0 0.1575"/><axis xyz="0 0 1"/>
    <limit lower="-2.96" upper="2.96" effort="320" velocity="1.48" drake:acceleration="8.57"/>
    <drake:rotor_inertia value="0.3"/><drake:gear_ratio value="160"/></joint>
  <joint name="joint2" type="revolute"><parent link="upper"/><child link="fore"/>
    <origin xyz="0 0 0.2025" rpy="1.5708 0 3.1416"/><axis xyz="0 0 1"/>
    <limit lower="-2.09" upper="2.09" effort="320" velocity="1.48" drake:acceleration="8.57"/>
    <dynamics damping="0.5"/></joint>
  <joint name="joint3" type="continuous"><parent link="fore"/><child link="hand"/>
    <origin xyz="0 0.2045 0" rpy="1.5708 0 3.1416"/><axis xyz="0 0 1"/>
    <limit effort="176" velocity="1.75" drake:acceleration="10"/></joint>
  <drake:joint name="hand_slide" type="prismatic"><parent link="fore"/><child link="hand"/></drake:joint>
  <drake:collision_filter_group name="arm"><drake:member link="upper"/>
    <drake:member link="fore"/><drake:ignored_collision_filter_group name="arm"/>
  </drake:collision_filter_group>
</robot>
"""


def _without_drake(text):
    """The arm with every drake: element and attribute cut out, by text (not by any parser)."""
    text = re.sub(r'\s+drake:[\w]+="[^"]*"', "", text)
    for _ in range(3):      # nested elements, innermost first
        text = re.sub(r"<drake:(\w+)[^>]*/>", "", text)
        text = re.sub(r"<drake:(\w+)[^>]*>(?:(?!<drake:)[\s\S])*?</drake:\1>", "", text)
    assert "drake:" not in text
    return text


def _loaded_with_one_warning(source):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = RobotModel.from_urdf(source, kernels="off")
    prefix_warnings = [w for w in caught if issubclass(w.category, DescriptionWarning)]
    assert len(prefix_warnings) == 1, [str(w.message) for w in caught]
    assert "undeclared namespace prefixes are ignored: drake:" in str(prefix_warnings[0].message)
    return model


@pytest.mark.parametrize("through_xacro", [False, True])
def test_drake_flavoured_urdf_loads_as_pinocchio_reads_it(through_xacro, rng):
    pin = require("pinocchio")
    from oracles.pinocchio_reference import PinocchioReference
    text = DRAKE_ARM.replace('effort="176"', 'effort="${88 * 2}"') if through_xacro else DRAKE_ARM
    model = _loaded_with_one_warning(text)
    assert model.joint_names == ["joint1", "joint2", "joint3"]
    assert pin.buildModelFromXML(DRAKE_ARM).nv == model.dof   # Pinocchio takes it as it is
    reference = PinocchioReference(_without_drake(DRAKE_ARM), model.joint_names)
    for _ in range(5):
        q, qd, qdd = rng.uniform(-1.5, 1.5, (3, 3))
        assert_close(model.inverse_dynamics(q, qd, qdd), reference.inverse_dynamics(q, qd, qdd),
                     "inverse dynamics of the Drake arm")
        assert_close(model.mass_matrix(q), reference.mass_matrix(q), "mass matrix")
    assert np.isclose(model.description.joints["joint3"].effort, 176.0)


def test_a_loop_in_package_paths_is_named_not_an_internal_error(tmp_path):
    packages = tmp_path / "packages"
    (packages / "other_description").mkdir(parents=True)
    os.symlink("loop", packages / "loop")          # stat() fails: too many levels of links
    with pytest.raises(URDFError) as refused:
        resolve_package_uri("package://robot_description/robot.urdf", [str(packages)])
    assert re.search(rf"{re.escape(repr(str(packages / 'loop')))} could not be searched "
                     r"\(Too many levels of symbolic links\)", str(refused.value)), refused.value
    # The loop hides nothing beside it.
    (packages / "robot_description").mkdir()
    assert resolve_package_uri("package://robot_description/robot.urdf", [str(packages)]) == \
        str(packages / "robot_description" / "robot.urdf")


def test_xacro_expands_where_its_child_script_is_a_symlink(tmp_path):
    """`colcon build --symlink-install` installs the library as symlinks into the source
    tree; the child then found this package's own xacro.py for `import xacro` and every
    xacro description failed ("install the 'xacro' package")."""
    linked = tmp_path / "xacro.py"
    linked.symlink_to(xacro_module.__file__)
    spec = importlib.util.spec_from_file_location("xacro_through_a_symlink", linked)
    through_symlink = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(through_symlink)
    text = ('<robot name="r" xmlns:xacro="http://www.ros.org/wiki/xacro">'
            '<xacro:property name="side" value="0.5"/><link name="base_${side * 2}"/></robot>')
    assert '<link name="base_1.0"/>' in through_symlink.expand([], text=text)


def test_a_folder_of_package_paths_that_cannot_be_read_is_named():
    """A real permission check: as root (which reads any folder), the search runs as
    nobody, from a copy of the package finder (it needs only the standard library)."""
    as_root = os.geteuid() == 0
    python = shutil.which("python3", path="/usr/bin:/bin") if as_root else sys.executable
    if as_root and (shutil.which("setpriv") is None or python is None):
        pytest.skip("running as root without setpriv and a system python3")
    # (pytest's own tmp_path lies in a folder only its owner may enter)
    with tempfile.TemporaryDirectory() as folder:
        base = pathlib.Path(folder)
        base.chmod(0o755)
        locked = base / "packages" / "locked"
        (locked / "robot_description").mkdir(parents=True)
        shutil.copy(xacro_module.__file__, base / "finder.py")
        code = textwrap.dedent(f"""
            import sys
            sys.path.insert(0, {folder!r})
            import finder
            try:
                finder.find_package("robot_description", [{str(base / 'packages')!r}])
            except finder.PackageNotFoundError as error:
                print(error)
        """)
        unprivileged = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
        locked.chmod(0)
        try:
            result = subprocess.run([*(unprivileged if as_root else []), python, "-c", code],
                                    capture_output=True, text=True, timeout=60)
        finally:
            locked.chmod(0o755)
    assert result.returncode == 0, result.stderr
    assert f"{str(locked)!r} could not be searched (Permission denied)" in result.stdout, \
        result.stdout
