"""launch/*.launch.py without `launch` (it cannot be installed here), and the installed package.

What can be checked honestly: the launch files are parsed (ast), never imported
or executed. Every file they can refer to for every robot choice exists and is
installed; no PathJoinSubstitution has a nested list (Kilted-only, ros2/launch#838);
package.xml declares every package they use; the controllers file has the
shape ros2_controllers' ForwardCommandController reads. Then the installed
executables (lib/soa_dynamics_ros, as launch starts them) run with each config
file the launch files pass, the node names and remappings the launch files
give, and a PATH without the venv; they must come up (joint states from the
sim, the remapped feedforward topic from the node) and stop cleanly.
"""
import ast
import os
import pathlib
import re
import sys
import xml.etree.ElementTree as ET

import pytest
import yaml

from support.installation import CONSOLE_SCRIPTS, EXECUTABLES as LIB, SHARE
from support.optional import needs, require
from support.robots import REPO
from support.ros_harness import RosClient
from support.waiting import wait_for
from soa_dynamics_ros.ros.processes import ChildProcess

LAUNCH_DIR = REPO / "launch"
LAUNCH_FILES = sorted(LAUNCH_DIR.glob("*.launch.py"))
PACKAGE = "soa_dynamics_ros"


# ---------------------------------------------------------------------- reading launch files
def parse(path):
    return ast.parse(path.read_text(), filename=str(path))


def calls(tree, name):
    return [node for node in ast.walk(tree) if isinstance(node, ast.Call)
            and getattr(node.func, "id", getattr(node.func, "attr", None)) == name]


def keyword(call, name):
    return next((k.value for k in call.keywords if k.arg == name), None)


def robots(tree):
    """The module-level ROBOTS list (the `robot` argument's choices)."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and [t.id for t in node.targets] == ["ROBOTS"]:
            return ast.literal_eval(node.value)
    return None


def argument_defaults(tree):
    """{name: default expression} of every DeclareLaunchArgument."""
    return {ast.literal_eval(call.args[0]): keyword(call, "default_value")
            for call in calls(tree, "DeclareLaunchArgument")}


def evaluate(expression, tree, robot, variables=None):
    """The text a substitution expression gives for `robot:=<robot>`, the package share being SHARE.

    Only what the launch files use: strings, lists (concatenation),
    PathJoinSubstitution, FindPackageShare, LaunchConfiguration and local names.
    """
    variables = variables if variables is not None else local_assignments(tree)
    if isinstance(expression, ast.Constant):
        return expression.value
    if isinstance(expression, ast.Name):
        return evaluate(variables[expression.id], tree, robot, variables)
    if isinstance(expression, (ast.List, ast.Tuple)):
        return "".join(evaluate(e, tree, robot, variables) for e in expression.elts)
    if isinstance(expression, ast.Call):
        name = getattr(expression.func, "id", None)
        if name == "PathJoinSubstitution":
            return os.path.join(*(evaluate(e, tree, robot, variables) for e in expression.args[0].elts))
        if name == "FindPackageShare":
            package = ast.literal_eval(expression.args[0])
            return str(SHARE) if package == PACKAGE else f"<share of {package}>"
        if name == "LaunchConfiguration":
            argument = ast.literal_eval(expression.args[0])
            if argument == "robot":
                return robot
            return evaluate(argument_defaults(tree)[argument], tree, robot, variables)
        if name == "TextSubstitution":
            return ast.literal_eval(keyword(expression, "text"))
    raise AssertionError(f"cannot evaluate {ast.dump(expression)}")


def local_assignments(tree):
    function = next(node for node in tree.body if isinstance(node, ast.FunctionDef)
                    and node.name == "generate_launch_description")
    return {node.targets[0].id: node.value for node in function.body
            if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)}


def our_nodes(tree):
    """The Node(...) actions starting this package's executables."""
    return [call for call in calls(tree, "Node")
            if isinstance(keyword(call, "package"), ast.Constant)
            and keyword(call, "package").value == PACKAGE]


def launch_file(name):
    return LAUNCH_DIR / name


def installed_directories():
    """Top-level folders CMakeLists.txt installs into share/<package>."""
    text = (REPO / "CMakeLists.txt").read_text()
    match = re.search(r"foreach\(_soa_dir ([^)]*)\)", text)
    return match.group(1).split()


# ---------------------------------------------------------------------- static checks
def test_every_launch_file_is_covered():
    assert {p.name for p in LAUNCH_FILES} == {"embedded_model.launch.py", "sim.launch.py",
                                             "gazebo.launch.py", "trajectory_feedforward.launch.py"}


@pytest.mark.parametrize("path", LAUNCH_FILES, ids=lambda p: p.name)
def test_no_nested_list_inside_a_path_join(path):
    """A list as one PathJoinSubstitution component loads only on Kilted's launch (ros2/launch#838)."""
    for call in calls(parse(path), "PathJoinSubstitution"):
        assert len(call.args) == 1 and isinstance(call.args[0], ast.List), ast.unparse(call)
        nested = [ast.unparse(e) for e in call.args[0].elts if isinstance(e, (ast.List, ast.Tuple))]
        assert not nested, f"{path.name}: nested list {nested} in {ast.unparse(call)}"


@pytest.mark.parametrize("path", LAUNCH_FILES, ids=lambda p: p.name)
def test_every_file_a_launch_file_refers_to_exists_and_is_installed(path):
    tree = parse(path)
    choices = robots(tree) or [None]
    referred = set()
    for robot in choices:
        for call in calls(tree, "PathJoinSubstitution"):
            text = evaluate(call, tree, robot)
            if text.startswith(str(SHARE)) and "." in pathlib.Path(text).name:
                referred.add(text)
        for name, default in argument_defaults(tree).items():
            if name.endswith(("params", "params_file")):
                referred.add(evaluate(default, tree, robot))
    assert referred, f"{path.name} refers to no file of the package"
    for installed in referred:
        relative = pathlib.Path(installed).relative_to(SHARE)
        assert (REPO / relative).is_file(), f"{path.name}: {relative} is not in the package"
        assert relative.parts[0] in installed_directories(), f"{relative} is not installed"
        assert pathlib.Path(installed).is_file(), f"{installed} is not installed (colcon build, or scripts/setup.sh)"


def test_robot_choices_are_every_robot_with_configs():
    """Each launch file's choices are exactly the robots it has configuration files for."""
    node_configs = {p.stem for p in (REPO / "config").glob("*.yaml")
                    if not p.stem.endswith(("_sim", "_controllers"))}
    sim_configs = {p.stem[:-len("_sim")] for p in (REPO / "config").glob("*_sim.yaml")}
    assert set(robots(parse(launch_file("embedded_model.launch.py")))) == node_configs
    assert set(robots(parse(launch_file("trajectory_feedforward.launch.py")))) == node_configs
    assert set(robots(parse(launch_file("sim.launch.py")))) == node_configs & sim_configs
    assert sim_configs <= node_configs


@pytest.mark.parametrize("path", LAUNCH_FILES, ids=lambda p: p.name)
def test_executables_named_are_installed(path):
    for call in our_nodes(parse(path)):
        executable = LIB / ast.literal_eval(keyword(call, "executable"))
        assert executable.is_file() and os.access(executable, os.X_OK), executable


def test_node_names_match_the_config_files_they_are_given():
    """A params file keyed by another node name would be ignored without a word."""
    for path in LAUNCH_FILES:
        tree = parse(path)
        for call in our_nodes(tree):
            name = ast.literal_eval(keyword(call, "name"))
            for robot in robots(tree) or ["panda"]:
                for parameter in keyword(call, "parameters").elts:
                    if isinstance(parameter, ast.Dict):
                        continue
                    config = yaml.safe_load(open(evaluate(parameter, tree, robot)))
                    assert list(config) == [name], (path.name, robot, list(config), name)


def test_parameter_overrides_in_launch_files_are_node_parameters():
    node_parameters = set(yaml.safe_load(open(REPO / "config" / "panda.yaml"))["soa_dynamics"]
                          ["ros__parameters"]) | {"use_sim_time"}
    for path in LAUNCH_FILES:
        for call in our_nodes(parse(path)):
            for parameter in keyword(call, "parameters").elts:
                if isinstance(parameter, ast.Dict):
                    keys = {ast.literal_eval(k) for k in parameter.keys}
                    assert keys <= node_parameters, (path.name, keys - node_parameters)


def packages_used():
    """Packages the launch files import, start, find, or (through config/urdf) load as plugins."""
    used = set()
    for path in LAUNCH_FILES:
        tree = parse(path)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                used.add(node.module.split(".")[0])
            elif isinstance(node, ast.Import):
                used.update(alias.name.split(".")[0] for alias in node.names)
        for call in calls(tree, "Node") + calls(tree, "FindPackageShare"):
            value = keyword(call, "package") if call.args == [] else call.args[0]
            used.add(ast.literal_eval(value))
        used.update(ast.literal_eval(keyword(c, "name")) for c in calls(tree, "FindExecutable"))
    controllers = yaml.safe_load(open(REPO / "config" / "panda_controllers.yaml"))
    for entry in controllers["controller_manager"]["ros__parameters"].values():
        if isinstance(entry, dict) and "type" in entry:
            used.add(entry["type"].split("/")[0])
    xacro = ET.parse(REPO / "urdf" / "panda.ros2_control.xacro").getroot()
    used.update(plugin.text.split("/")[0] for plugin in xacro.iter("plugin")
                if plugin.text and plugin.text.strip())
    used.update(plugin.get("filename").removesuffix("-system") for plugin in xacro.iter("plugin")
                if plugin.get("filename"))
    return used - {PACKAGE}


def test_package_xml_declares_what_the_launch_files_use():
    manifest = ET.parse(REPO / "package.xml").getroot()
    declared = {e.text for tag in ("exec_depend", "depend") for e in manifest.iter(tag)}
    used = packages_used()
    assert {"launch", "launch_ros", "ros_gz_sim", "ros_gz_bridge", "controller_manager",
            "robot_state_publisher", "xacro", "gz_ros2_control", "joint_state_broadcaster",
            "forward_command_controller"} <= used, used
    assert used <= declared, f"not in package.xml: {sorted(used - declared)}"


def test_effort_controller_is_a_forward_command_controller_on_the_effort_interface():
    """ros2_controllers removed JointGroupEffortController (Rolling, PR #2016); parameter
    names as in forward_command_controller/src/forward_command_controller_parameters.yaml."""
    from soa_dynamics_ros import RobotModel
    controllers = yaml.safe_load(open(REPO / "config" / "panda_controllers.yaml"))
    manager = controllers["controller_manager"]["ros__parameters"]
    assert manager["effort_controller"] == {"type": "forward_command_controller/ForwardCommandController"}
    assert manager["joint_state_broadcaster"] == {"type": "joint_state_broadcaster/JointStateBroadcaster"}
    effort = controllers["effort_controller"]["ros__parameters"]
    assert set(effort) == {"joints", "interface_name"}
    assert effort["interface_name"] == "effort"
    assert effort["joints"] == RobotModel.from_urdf(str(REPO / "urdf" / "panda.urdf")).joint_names
    # The node publishes where the controller listens: <controller>/commands.
    gazebo = parse(launch_file("gazebo.launch.py"))
    remaps = [ast.literal_eval(r) for c in our_nodes(gazebo) for r in keyword(c, "remappings").elts]
    assert remaps == [("~/feedforward", "/effort_controller/commands")]


def test_trajectory_launch_feeds_a_joint_trajectory_controller():
    """The planner's topic in, the controller's trajectory topic out, the ~/feedforward stream off."""
    path = launch_file("trajectory_feedforward.launch.py")
    tree = parse(path)
    (node_call,) = our_nodes(tree)
    remaps = {evaluate(source, tree, "panda"): evaluate(target, tree, "panda")
              for source, target in (pair.elts for pair in keyword(node_call, "remappings").elts)}
    assert remaps["~/trajectory_out"] == "/joint_trajectory_controller/joint_trajectory"
    assert remaps["~/trajectory_in"] == "/planned_trajectory"
    overrides = next(p for p in keyword(node_call, "parameters").elts if isinstance(p, ast.Dict))
    values = dict(zip((ast.literal_eval(k) for k in overrides.keys), overrides.values))
    assert ast.literal_eval(values["feedforward_mode"]) == "off"
    assert evaluate(values["robot_compensates_gravity"], tree, "panda") == "false"
    choices = next(c for c in calls(tree, "DeclareLaunchArgument")
                   if ast.literal_eval(c.args[0]) == "robot_compensates_gravity")
    assert ast.literal_eval(keyword(choices, "choices")) == ["true", "false"]


def test_no_launch_file_or_config_names_the_removed_controller():
    for path in [*LAUNCH_FILES, *(REPO / "config").glob("*.yaml"), *(REPO / "urdf").glob("*.xacro")]:
        text = "\n".join(line for line in path.read_text().splitlines()
                         if not line.lstrip().startswith(("#", "<!--")))
        assert "JointGroupEffortController" not in text, path


# ---------------------------------------------------------------------- installed executables
# What sourcing a workspace's install/setup.bash sets besides PATH: a colcon install's
# Python library and generated interfaces are found through them, not through the interpreter.
WORKSPACE_VARIABLES = ("PYTHONPATH", "AMENT_PREFIX_PATH", "LD_LIBRARY_PATH")


def bare_environment(tmp_path):
    """What `env -i PATH=/usr/bin:/bin` leaves, plus this test's DDS isolation and a log folder,
    and the workspace's variables where a sourced install/setup.bash set them."""
    environment = {"PATH": "/usr/bin:/bin", "ROS_DOMAIN_ID": os.environ["ROS_DOMAIN_ID"],
                   "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST", "ROS_LOG_DIR": str(tmp_path / "ros_log")}
    environment.update({name: os.environ[name] for name in WORKSPACE_VARIABLES if os.environ.get(name)})
    return environment


def start_as_launch_would(path, node_call, robot, tmp_path):
    """The installed executable with the name, params files and remappings the launch file gives."""
    tree = parse(path)
    executable = ast.literal_eval(keyword(node_call, "executable"))
    name = ast.literal_eval(keyword(node_call, "name"))
    command = [str(LIB / executable), "--ros-args", "-r", f"__node:={name}"]
    for parameter in keyword(node_call, "parameters").elts:
        if not isinstance(parameter, ast.Dict):
            command += ["--params-file", evaluate(parameter, tree, robot)]
    remappings = keyword(node_call, "remappings")
    remapped = []
    for pair in (remappings.elts if remappings else []):
        source, target = (evaluate(e, tree, robot) for e in pair.elts)
        command += ["-r", f"{source}:={target}"]
        remapped.append((source, target))
    process = ChildProcess(command, tmp_path / f"{executable}_{robot}.log",
                           bare_environment(tmp_path), cwd=tmp_path)
    return process, name, remapped


@pytest.fixture
def client():
    client = RosClient("launch_test_client")
    yield client
    client.close()


def test_installed_scripts_name_the_python_they_were_built_for():
    for executable in sorted(LIB.iterdir()):
        first = executable.read_text().splitlines()[0]
        assert first == f"#!{sys.executable}", (executable, first)


def test_console_script_runs_without_the_venv_on_path(tmp_path):
    import subprocess
    result = subprocess.run([str(CONSOLE_SCRIPTS / "soa-dynamics"), "info", str(REPO / "urdf" / "panda.urdf")],
                            env=bare_environment(tmp_path), capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and "total mass" in result.stdout, result.stderr


def running_nodes(client):
    return {f"{ns.rstrip('/')}/{name}" for name, ns in client.node.get_node_names_and_namespaces()}


SIM_CASES = [(robot, launch_file("sim.launch.py")) for robot in robots(parse(launch_file("sim.launch.py")))]


@needs("mujoco")   # the simulated arm's plant
@pytest.mark.parametrize("robot, path", SIM_CASES, ids=[c[0] for c in SIM_CASES])
def test_sim_comes_up_with_each_config_the_launch_file_passes(robot, path, client, tmp_path):
    from sensor_msgs.msg import JointState
    from soa_dynamics_ros import RobotModel
    tree = parse(path)
    sim_call = next(c for c in our_nodes(tree)
                    if ast.literal_eval(keyword(c, "executable")) == "soa_dynamics_sim")
    states = client.collect(JointState, "/joint_states")
    process, _, _ = start_as_launch_would(path, sim_call, robot, tmp_path)
    try:
        wait_for(lambda: len(states) >= 20 or not process.alive(), 90, 0.05, f"{robot} joint states")
        assert process.alive(), process.log()
        # Mimic joints (the PR2 grippers) are published too.
        independent = RobotModel.from_urdf(str(REPO / "urdf" / f"{robot}.urdf")).joint_names
        assert set(independent) <= set(states[-1][1].name)
    finally:
        code = process.stop()
    assert code == 0, process.log()


@pytest.mark.parametrize("robot", [c[0] for c in SIM_CASES])
def test_sim_configs_start_inside_the_limits_where_gravity_feedforward_can_hold_the_arm(robot):
    """Pinocchio's gravity torques at each initial pose are within the URDF effort limits."""
    pin = require("pinocchio")
    from soa_dynamics_ros import RobotModel
    urdf = str(REPO / "urdf" / f"{robot}.urdf")
    model = RobotModel.from_urdf(urdf)
    q = yaml.safe_load(open(REPO / "config" / f"{robot}_sim.yaml"))["soa_dynamics_sim"][
        "ros__parameters"]["initial_positions"]
    assert len(q) == model.dof
    reference = pin.buildModelFromUrdf(urdf, mimic=True)
    data = reference.createData()
    configuration = pin.neutral(reference)
    for name, value in zip(model.joint_names, q):
        joint = reference.joints[reference.getJointId(name)]
        configuration[joint.idx_q] = value
        lower, upper = reference.lowerPositionLimit[joint.idx_q], reference.upperPositionLimit[joint.idx_q]
        assert lower <= value <= upper, (name, value, lower, upper)
    gravity = pin.computeGeneralizedGravity(reference, data, configuration)
    for name in model.joint_names:
        joint = reference.joints[reference.getJointId(name)]
        assert abs(gravity[joint.idx_v]) < reference.effortLimit[joint.idx_v], (name, gravity[joint.idx_v])


NODE_CASES = [(robot, path) for path in LAUNCH_FILES for robot in (robots(parse(path)) or ["panda"])
              if any(ast.literal_eval(keyword(c, "executable")) == "soa_dynamics_node"
                     for c in our_nodes(parse(path)))]


@pytest.mark.parametrize("robot, path", NODE_CASES, ids=[f"{p.name}-{r}" for r, p in NODE_CASES])
def test_node_comes_up_with_each_config_and_remapping_the_launch_file_passes(robot, path, client,
                                                                              tmp_path):
    """The remapped feedforward topic appearing shows the remapping's source is a real topic."""
    tree = parse(path)
    node_call = next(c for c in our_nodes(tree)
                     if ast.literal_eval(keyword(c, "executable")) == "soa_dynamics_node")
    process, name, remapped = start_as_launch_would(path, node_call, robot, tmp_path)
    try:
        wait_for(lambda: f"/{name}" in running_nodes(client) or not process.alive(), 90, 0.1,
                 f"node /{name} with config/{robot}.yaml")
        assert process.alive(), process.log()
        assert remapped, f"{path.name} remaps nothing"
        for source, target in remapped:
            def topics():
                published = client.node.get_publisher_names_and_types_by_node(name, "/")
                subscribed = client.node.get_subscriber_names_and_types_by_node(name, "/")
                return {topic for topic, _ in published + subscribed}
            wait_for(lambda: target in topics(), 30, 0.1, f"{target} (remapped from {source})")
            assert f"/{name}/{source.removeprefix('~/')}" not in topics()
    finally:
        code = process.stop()
    assert code == 0, process.log()
