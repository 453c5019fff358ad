"""Reading descriptions: xacro only when used, bounded expansion, package resolution."""
import pathlib
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from oracles.pinocchio_reference import PinocchioReference
from support.numerics import assert_close
from support.optional import require
from support.robots import REPO, shipped_urdf
from support.waiting import wait_for
from soa_dynamics_ros import RobotModel
from soa_dynamics_ros.errors import URDFError
from soa_dynamics_ros.description.urdf import read_description_text, uses_xacro

rtbdata = require("rtbdata")
ZOO = pathlib.Path(rtbdata.__file__).resolve().parent / "xacro"
XACRO_NS = 'xmlns:xacro="http://www.ros.org/wiki/xacro"'


def _hostile(expression):
    return (f'<robot name="r" {XACRO_NS}><xacro:property name="a" value="${{{expression}}}"/>'
            '<link name="${a}"/></robot>')


def _run(code, timeout=120):
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=timeout, cwd=REPO)


def test_xacro_output_that_keeps_the_namespace_loads_without_xacro():
    """Real files: the Panda shipped here with xmlns:xacro added, and rtb-data's plain URDFs."""
    panda = pathlib.Path(shipped_urdf("panda.urdf")).read_text()
    with_namespace = panda.replace("<robot ", f"<robot {XACRO_NS} ", 1)
    assert with_namespace != panda and not uses_xacro(with_namespace)
    plain_files = [str(path) for path in ZOO.rglob("*.urdf")
                   if "xmlns:xacro" in path.read_text()]
    assert plain_files, "rtb-data ships URDFs that keep xmlns:xacro"
    result = _run(f"""
        import sys, warnings
        sys.modules["xacro"] = None          # import xacro fails
        warnings.simplefilter("ignore")
        from soa_dynamics_ros import RobotModel
        model = RobotModel.from_urdf({with_namespace!r}, kernels="off")
        print(model.dof)
        for path in {plain_files!r}:
            print(RobotModel.from_urdf(path, kernels="off").dof)
    """)
    assert result.returncode == 0, result.stderr
    dofs = [int(line) for line in result.stdout.split()]
    assert dofs[0] == RobotModel.from_urdf(shipped_urdf("panda.urdf"), kernels="off").dof
    assert len(dofs) == 1 + len(plain_files) and all(dof > 0 for dof in dofs)


def test_namespace_alone_is_not_expanded_but_real_use_is(rng):
    """Expansion must change nothing of a plain file; with xacro used it is run."""
    panda = pathlib.Path(shipped_urdf("panda.urdf")).read_text()
    with_namespace = panda.replace("<robot ", f"<robot {XACRO_NS} ", 1)
    assert read_description_text(with_namespace) == with_namespace
    for used in ('<xacro:property name="x" value="1"/>', '<link name="${1}"/>',
                 '<link name="$(arg a)"/>'):
        assert uses_xacro(f'<robot {XACRO_NS}>{used}</robot>'), used
    # A property defined and used: the expanded model is Pinocchio's Panda.
    xacro_panda = panda.replace("<robot ", f"<robot {XACRO_NS} ", 1).replace(
        "</robot>", '<xacro:property name="unused" value="0"/></robot>')
    model = RobotModel.from_urdf(xacro_panda, kernels="off")
    reference = PinocchioReference(panda, model.joint_names)
    q = rng.uniform(-1, 1, model.dof)
    assert_close(model.gravity_torques(q), reference.inverse_dynamics(
        q, np.zeros_like(q), np.zeros_like(q)), "expanded Panda gravity")


@pytest.mark.parametrize("expression", ["9**9**9", "9**9**8"])
def test_costly_xacro_expression_is_stopped_at_the_deadline(expression):
    started = time.monotonic()
    with pytest.raises(URDFError, match=r"did not finish within 2 s"):
        RobotModel.from_urdf(_hostile(expression), kernels="off", xacro_timeout=2)
    # The deadline plus the child's kill: far below the 100 s 9**9**8 takes.
    assert time.monotonic() - started < 30


def test_huge_xacro_expression_hits_the_memory_limit():
    with pytest.raises(URDFError, match=r"exceeded its memory limit"):
        RobotModel.from_urdf(_hostile("'x' * 2**34"), kernels="off", xacro_timeout=60)


def test_xacro_errors_are_reported_with_their_message():
    with pytest.raises(URDFError, match=r"name 'undefined_name' is not defined"):
        RobotModel.from_urdf(_hostile("undefined_name"), kernels="off")
    with pytest.raises(URDFError, match=r"xacro_timeout must be a positive"):
        RobotModel.from_urdf(_hostile("1"), kernels="off", xacro_timeout=0)


def _children(pid):
    try:
        return [int(child) for child in
                pathlib.Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _alive(pid):
    try:
        state = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGKILL])
def test_xacro_child_does_not_outlive_its_caller(how):
    """Interrupted (KeyboardInterrupt) or killed outright, the caller takes the child with it."""
    # The caller stands for an interactive Python, where Ctrl-C raises KeyboardInterrupt.
    # A test run started in the background of a non-interactive shell (as CI may be)
    # has SIGINT ignored, and Python keeps an inherited "ignore": set the default back.
    caller = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import signal
        signal.signal(signal.SIGINT, signal.default_int_handler)
        from soa_dynamics_ros import RobotModel
        RobotModel.from_urdf({_hostile("9**9**9")!r}, kernels="off", xacro_timeout=600)
    """)], cwd=REPO, stderr=subprocess.PIPE, text=True)
    try:
        children = wait_for(lambda: _children(caller.pid), timeout=60.0,
                            what="the caller to start its xacro child")
        # Let the child get past its start-up into the expression.
        time.sleep(1.0)
        caller.send_signal(how)
        caller.wait(timeout=60)
        wait_for(lambda: not any(_alive(child) for child in children), timeout=60.0,
                 what=f"xacro child {children} to end with its caller")
    finally:
        if caller.poll() is None:
            caller.terminate()
            caller.wait(timeout=30)
    if how == signal.SIGINT:
        assert "KeyboardInterrupt" in caller.stderr.read()


def _package(root, folder, files, declared=None):
    directory = root / folder
    directory.mkdir(parents=True)
    if declared:
        (directory / "package.xml").write_text(f"<package><name>{declared}</name></package>")
    for name, text in files.items():
        (directory / name).write_text(text)
    return directory


def test_find_and_package_uris_resolve_through_package_paths(tmp_path):
    """$(find) inside xacro and package:// sources: a folder of that name below a search
    path (several levels down), or a package.xml that declares the name."""
    _package(tmp_path, "src/deep/arm_description", {
        "arm.xacro": f'<robot {XACRO_NS}><xacro:macro name="arm"><link name="a"/>'
                     '</xacro:macro></robot>'})
    _package(tmp_path, "src/checkout_of_tools", {
        "tool.urdf": '<robot name="t"><link name="tool"/></robot>'}, declared="tools_pkg")
    robot = (f'<robot name="r" {XACRO_NS}>'
             '<xacro:include filename="$(find arm_description)/arm.xacro"/><xacro:arm/></robot>')
    text = read_description_text(robot, package_paths=[str(tmp_path)])
    assert '<link name="a"/>' in text
    text = read_description_text("package://tools_pkg/tool.urdf", package_paths=[tmp_path])
    assert 'name="tool"' in text
    model = RobotModel.from_urdf(robot, kernels="off", package_paths=[tmp_path])
    assert model.frame_names == ["a"]


def test_ament_index_comes_first(tmp_path, monkeypatch):
    share = _package(tmp_path / "prefix" / "share", "indexed_pkg",
                     {"r.urdf": '<robot name="from_index"><link name="a"/></robot>'})
    _package(tmp_path / "search", "indexed_pkg",
             {"r.urdf": '<robot name="from_search"><link name="a"/></robot>'})
    monkeypatch.setenv("AMENT_PREFIX_PATH", str(tmp_path / "prefix"))
    text = read_description_text("package://indexed_pkg/r.urdf",
                                 package_paths=[tmp_path / "search"])
    assert "from_index" in text and share.is_dir()


def test_unresolvable_package_names_it_and_where_it_looked(tmp_path):
    robot = (f'<robot name="r" {XACRO_NS}>'
             '<xacro:include filename="$(find no_such_pkg)/x.xacro"/><link name="a"/></robot>')
    for call in (lambda: RobotModel.from_urdf(robot, kernels="off", package_paths=[tmp_path]),
                 lambda: read_description_text("package://no_such_pkg/x.urdf",
                                               package_paths=[tmp_path])):
        with pytest.raises(URDFError, match=r"package 'no_such_pkg' not found.*AMENT_PREFIX_PATH"
                                            r".*" + str(tmp_path)):
            call()
    with pytest.raises(URDFError, match=r"not directories"):
        read_description_text("package://x/y.urdf", package_paths=[str(tmp_path / "missing")])


def test_search_depth_is_bounded(tmp_path):
    _package(tmp_path, "a/b/c/d/e/f/too_deep_pkg", {"r.urdf": '<robot name="r"><link name="a"/></robot>'})
    with pytest.raises(URDFError, match=r"too_deep_pkg"):
        read_description_text("package://too_deep_pkg/r.urdf", package_paths=[tmp_path])


def test_all_fixed_robot_is_a_zero_dof_model():
    """A valid URDF whose joints are all fixed: a usable model whose answers are empty."""
    model = RobotModel.from_urdf(
        '<robot name="f"><link name="a"><inertial><mass value="2"/><inertia ixx="1" iyy="1" '
        'izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link><link name="b"/>'
        '<joint name="j" type="fixed"><parent link="a"/><child link="b"/>'
        '<origin xyz="0 0 1"/></joint></robot>', kernels="c")
    assert model.dof == 0 and model.joint_names == []
    empty = np.zeros(0)
    assert model.gravity_torques(empty).shape == (0,)
    assert model.inverse_dynamics(empty, empty, empty).shape == (0,)
    assert model.forward_dynamics(empty, empty, empty).shape == (0,)
    assert model.mass_matrix(empty).shape == (0, 0)
    assert model.jacobian(empty, "b").shape == (6, 0)
    assert model.gravity_torques_batch(np.zeros((4, 0))).shape == (4, 0)
    np.testing.assert_array_equal(model.frame_pose(empty, "b")[:3, 3], [0.0, 0.0, 1.0])
    assert model.total_mass == 2.0
