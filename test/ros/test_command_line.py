"""The executables' command line: `--help`, one-line mistakes, unknown parameter names.

Before: `soa_dynamics_node --help` started the node; `--ros-args --help`, an
unknown ROS argument or a missing params file ended in rclpy's traceback; a
misspelt parameter (`-p urdf_fil:=...`) was ignored without a word.
"""
import subprocess

import pytest
import yaml

from support.optional import needs, require
from support.robots import REPO
from support.installation import EXECUTABLES as INSTALLED_EXECUTABLES
from support.ros_harness import RosProcess
from support.waiting import wait_for
from soa_dynamics_ros.ros.command_line import USAGE_ERROR, type_name, unknown_parameters
from soa_dynamics_ros.ros.node import NODE_NAME
from soa_dynamics_ros.ros.parameters import PARAMETERS, PAYLOAD_FIELDS

# The simulated arm needs MuJoCo (requirements-dev.txt): without it its cases skip.
NEEDS_SIM = needs("mujoco")
EXECUTABLES = ["soa_dynamics_node", pytest.param("soa_dynamics_sim", marks=NEEDS_SIM)]
# A process that got as far as starting ROS runs until it is signalled: one that
# is still there after this long has started.
EXIT_TIMEOUT = 60.0


def _sim_arm():
    require("mujoco")
    from soa_dynamics_ros.sim import arm
    return arm


def _parameter_table(executable):
    if executable == "soa_dynamics_sim":
        return [(p.name, p.default, p.read_only) for p in _sim_arm().SIM_PARAMETERS]
    return [(name, spec.default, spec.read_only) for name, spec in PARAMETERS.items()] + \
        [(f"payload.<name>.{field}", spec.default, spec.read_only)
         for field, spec in PAYLOAD_FIELDS.items()]


def _run(executable, *arguments):
    return subprocess.run([str(INSTALLED_EXECUTABLES / executable), *arguments], capture_output=True,
                          text=True, timeout=EXIT_TIMEOUT, cwd=REPO)


@pytest.mark.parametrize("arguments", [["--help"], ["-h"], ["--ros-args", "--help"],
                                       ["--ros-args", "-p", "urdf_file:=x", "--help"]],
                         ids=["--help", "-h", "ros-args --help", "after a parameter"])
@pytest.mark.parametrize("executable", EXECUTABLES)
def test_help_prints_every_parameter_and_starts_nothing(executable, arguments):
    result = _run(executable, *arguments)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"usage: {executable} "), result.stdout[:300]
    assert "[INFO]" not in result.stdout + result.stderr, "ROS was started"
    entries = {line.split(" (", 1)[0].strip(): line for line in result.stdout.splitlines()
               if line.startswith("  ") and not line.startswith("   ") and " (" in line}
    for name, default, read_only in _parameter_table(executable):
        assert name in entries, f"{name} is not in the help:\n{result.stdout}"
        assert f"({type_name(default)}, default " in entries[name], entries[name]
        assert entries[name].endswith(", read-only)") == read_only, entries[name]


@pytest.mark.parametrize("executable", EXECUTABLES)
@pytest.mark.parametrize("arguments, expected", [
    (["--ros-args", "--params-file", "config/no_such_file.yaml"], "cannot read params file"),
    (["--ros-args", "--params-file", "config"], "is a directory"),
    (["--ros-args", "--params-file", "test/ros/not_yaml.yaml"], "params file"),
    (["--ros-args", "--no-such-option"], "unknown ROS argument"),
    (["--ros-args", "-p", "no_value"], "parameter override"),
    (["stray"], "unexpected argument 'stray'"),
], ids=["missing params file", "directory", "bad YAML", "unknown option", "bad -p", "stray"])
def test_command_line_mistakes_are_one_line(executable, arguments, expected, tmp_path):
    if "test/ros/not_yaml.yaml" in arguments:
        bad = tmp_path / "not_yaml.yaml"
        bad.write_text("soa_dynamics:\n  ros__parameters:\n    gravity: [0.0, \n")
        arguments = [str(bad) if a == "test/ros/not_yaml.yaml" else a for a in arguments]
    result = _run(executable, *arguments)
    assert result.returncode == USAGE_ERROR, (result.returncode, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    # (rcl logs its own "[ERROR] ... [rcl]: Failed to parse global arguments" first)
    ours = [line for line in result.stderr.splitlines() if line and not line.startswith("[")]
    assert len(ours) == 1 and ours[0].startswith(f"{executable}: "), result.stderr
    assert expected in ours[0], ours[0]


def _flattened(parameters, prefix=""):
    for key, value in parameters.items():
        if isinstance(value, dict):
            yield from _flattened(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}"


@pytest.mark.parametrize("config", sorted(path.name for path in (REPO / "config").glob("*.yaml")
                                          if "controllers" not in path.name))
def test_the_shipped_params_files_name_only_known_parameters(config):
    """No warning at start-up from the package's own files (a warning cried wolf)."""
    sections = yaml.safe_load((REPO / "config" / config).read_text())
    for node, section in sections.items():
        given = set(_flattened(section["ros__parameters"]))
        payloads = section["ros__parameters"].get("payloads", [])
        if node.lstrip("/") == NODE_NAME:
            known = set(PARAMETERS)
        else:
            sim = _sim_arm()
            assert node.lstrip("/") == sim.NODE_NAME, (config, node)
            known = {p.name for p in sim.SIM_PARAMETERS}
        declared = known | {f"payload.{name}.{field}" for name in payloads
                                              for field in PAYLOAD_FIELDS}
        assert not unknown_parameters(given, declared), (config, node)


@pytest.mark.parametrize("executable, arguments, in_file, warned", [
    pytest.param("soa_dynamics_node", ["--params-file", "config/panda.yaml",
                                       "-p", "urdf_fil:=urdf/ur5.urdf"], "obsrever_gain: 50.0",
                 ["'urdf_fil' (did you mean 'urdf_file'?)",
                  "'obsrever_gain' (did you mean 'observer_gain'?)"], id="node"),
    pytest.param("soa_dynamics_sim", ["-p", "urdf_file:=urdf/panda.urdf",
                                      "-p", "lockstep_timout:=1.0"], "payload_mas: 1.0",
                 ["'lockstep_timout' (did you mean 'lockstep_timeout'?)",
                  "'payload_mas' (did you mean 'payload_mass'?)"], id="sim", marks=NEEDS_SIM),
])
def test_unknown_parameters_are_warned_with_the_closest_known_name(executable, arguments, in_file,
                                                                   warned, tmp_path):
    node = _sim_arm().NODE_NAME if executable == "soa_dynamics_sim" else NODE_NAME
    params_file = tmp_path / "extra.yaml"
    params_file.write_text(f"{node}:\n  ros__parameters:\n    {in_file}\n")
    process = RosProcess(executable, *arguments, "--params-file", str(params_file),
                         log_dir=tmp_path)
    try:
        line = wait_for(lambda: next((line for line in process.log().splitlines()
                                      if "has no parameter" in line), None), 90,
                        interval=0.2, what=f"the unknown-parameter warning of {executable}")
    finally:
        status = process.stop()
    assert "[WARN]" in line and f"{node} has no parameter" in line, line
    for text in warned:
        assert text in line, line
    assert status == 0, process.log()[-3000:]
