"""``soa-dynamics export-c``: the exported C library is the model.

A C harness (export_c/harness.c), compiled with the system C compiler against each
robot's exported library, computes every exported quantity at random states; the numpy
reference path of the Python model (no compiled kernels) must agree to 1e-12, on the
shipped robots and rtb-data robots, with parameters (a payload, another gravity) that
differ from those the library was exported with.  The exported CMake project is built,
installed and found by a consumer through ``find_package``.
"""
import os
import pathlib
import shutil
import subprocess

import numpy as np
import pytest

from support.numerics import assert_close
from support.robots import SHIPPED_ROBOTS, shipped_urdf, zoo_urdf_text
from soa_dynamics_ros.errors import SingularDynamicsError
from soa_dynamics_ros.estimation.observer import ExternalTorqueObserver
from soa_dynamics_ros.kernels import pack_parameters
from soa_dynamics_ros.kernels.export import ExportError, export_c
from soa_dynamics_ros.model import RobotModel
from soa_dynamics_ros.plant import cli

TOL = 1e-12
HERE = pathlib.Path(__file__).resolve().parent / "export_c"
LOOP_EXAMPLE = HERE.parents[2] / "examples" / "export_c_loop"
ZOO_ROBOTS = ["trossen_descriptions/urdf/vx300s.urdf.xacro",      # mimic gripper
              "trossen_descriptions/urdf/px150.urdf.xacro"]
SOURCES = ([pytest.param(shipped_urdf(name), None, id=name) for name in SHIPPED_ROBOTS]
           + [pytest.param(None, relative, id=relative.split("/")[-1]) for relative in ZOO_ROBOTS])
SAMPLES = 4
CC = shutil.which(os.environ.get("CC", "cc"))
needs_cc = pytest.mark.skipif(CC is None, reason="no C compiler")


def _load(source, zoo):
    return RobotModel.from_urdf(source if zoo is None else zoo_urdf_text(zoo), kernels="off")


def _compile(directory):
    """The harness linked with the library (unoptimized: the test's compile time)."""
    executable = directory / "harness"
    subprocess.run([CC, "-std=c99", "-O0", "-Wall", "-Werror", f"-I{directory}",
                    str(HERE / "harness.c"), str(directory / "soa.c"), "-lm", "-o",
                    str(executable)], check=True)
    return executable


def _run(executable, params, gain, states):
    values = [repr(float(v)) for v in (*params, *gain)] + [str(len(states))]
    for state in states:
        values += [repr(float(x)) for part in state for x in np.atleast_1d(part)]
    answer = subprocess.run([str(executable)], input=" ".join(values), capture_output=True,
                            text=True, check=True).stdout
    rows = []
    for line in answer.splitlines():
        name, frame, *numbers = line.split()
        rows.append((name, int(frame), np.array([float(x) for x in numbers])))
    return rows


def _task_space_inertia(model, q, frame):
    """Lambda and the tolerance it is held to: (J M^-1 J^T)^-1 amplifies round-off by its
    condition number (as test_kernels.py holds the compiled kernels to it)."""
    try:
        info = model.task_space_inertia_info(q, frame)
    except SingularDynamicsError:       # the library answers NaN
        return np.full((6, 6), np.nan), TOL
    return info.inertia, TOL * max(1.0, info.condition_number)


@needs_cc
@pytest.mark.parametrize("source, zoo", SOURCES)
def test_exported_library_is_the_model(source, zoo, tmp_path):
    model = _load(source, zoo)
    export_c(model, tmp_path, "soa")
    exported_parameters = pack_parameters(model.tree, model.gravity)
    # Other parameters than the exported ones: the library takes them as input.
    leaf = model.frame_names[-1]
    model.attach_payload("tool", leaf, 1.3, com=(0.02, -0.01, 0.07))
    model.gravity = (0.4, -0.3, -9.7)
    params = pack_parameters(model.tree, model.gravity)
    rng = np.random.default_rng(47)
    n = model.dof
    gain = rng.uniform(20.0, 80.0, n)
    states = [(rng.uniform(-np.pi, np.pi, n), rng.normal(size=n) * 2, rng.normal(size=n) * 3,
               rng.normal(size=n) * 5, rng.normal(size=6) * 10, 0.001 * (1 + s))
              for s in range(SAMPLES)]
    rows = iter(_run(_compile(tmp_path), params, gain, states))
    name, _, defaults = next(rows)
    assert name == "defaults"
    np.testing.assert_array_equal(defaults, exported_parameters)
    frames = model.frame_names
    observer = ExternalTorqueObserver(model, gain=gain)
    for q, qd, qdd, tau, wrench, dt in states:
        expected = {
            "gravity_torques": lambda _: model.gravity_torques(q),
            "bias_torques": lambda _: model.bias_torques(q, qd),
            "inverse_dynamics": lambda _: model.inverse_dynamics(q, qd, qdd),
            "mass_matrix": lambda _: model.mass_matrix(q),
            "forward_dynamics": lambda _: model.forward_dynamics(q, qd, tau),
            "coriolis_transpose_product": lambda _: model.coriolis_transpose_product(q, qd),
            "coriolis_matrix": lambda _: model.coriolis_matrix(q, qd),
            "kinetic_energy": lambda _: model.kinetic_energy(q, qd),
            "potential_energy": lambda _: model.potential_energy(q),
            "inverse_dynamics_wrenches": lambda f: model.inverse_dynamics(
                q, qd, qdd, {frames[f]: wrench}),
            "forward_dynamics_wrenches": lambda f: model.forward_dynamics(
                q, qd, tau, {frames[f]: wrench}),
            "observer": lambda _: observer.update(q, qd, tau, dt),
            "frame_pose": lambda f: model.frame_pose(q, frames[f]),
            "jacobian": lambda f: model.jacobian(q, frames[f]),
            "task_space_inertia": lambda f: _task_space_inertia(model, q, frames[f]),
            "frame_twist": lambda f: model.frame_twist(q, qd, frames[f]),
            "jacobian_derivative_product": lambda f: model.jacobian_derivative_product(
                q, qd, frames[f]),
            "frame_acceleration": lambda f: model.frame_acceleration(q, qd, qdd, frames[f]),
            "jacobian_time_derivative": lambda f: model.jacobian_time_derivative(
                q, qd, frames[f]),
            "unknown_frame_jacobian": lambda _: np.full((6, n), np.nan),
            "unknown_frame_acceleration": lambda _: np.full(6, np.nan),
        }
        for _ in range(12 + 7 * len(frames) + 2):
            name, frame, actual = next(rows)
            reference, tolerance = expected[name](frame), TOL
            if name == "task_space_inertia":
                reference, tolerance = reference
            reference = np.ravel(reference)
            what = f"{name} (frame {frame}) of {model.name}"
            np.testing.assert_array_equal(np.isnan(actual), np.isnan(reference), err_msg=what)
            finite = ~np.isnan(reference)
            assert_close(actual[finite], reference[finite], what, rtol=tolerance)
    assert next(rows, None) is None


@needs_cc
@pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake is not installed")
def test_cmake_package_is_found_by_a_controller_build(tmp_path):
    """The CLI's export builds with CMake (static library), installs, and C++ consumers (a
    small one, and examples/export_c_loop) find it with find_package and link it."""
    urdf = shipped_urdf("double_pendulum.urdf")
    library, build, prefix = tmp_path / "library", tmp_path / "build", tmp_path / "install"
    assert cli.main(["export-c", urdf, "--out", str(library), "--prefix", "soa"]) == 0
    for arguments in (["-S", str(library), "-B", str(build), f"-DCMAKE_INSTALL_PREFIX={prefix}"],
                      ["--build", str(build)], ["--install", str(build)],
                      ["-S", str(HERE / "consumer"), "-B", str(tmp_path / "consumer"),
                       f"-DCMAKE_PREFIX_PATH={prefix}"],
                      ["--build", str(tmp_path / "consumer")],
                      ["-S", str(LOOP_EXAMPLE), "-B", str(tmp_path / "loop"),
                       f"-DCMAKE_PREFIX_PATH={prefix}"],
                      ["--build", str(tmp_path / "loop")]):
        subprocess.run(["cmake", *arguments], check=True, capture_output=True)
    printed = subprocess.run([str(tmp_path / "consumer" / "consumer")], check=True,
                             capture_output=True, text=True).stdout
    model = RobotModel.from_urdf(urdf, kernels="off")
    q = 0.1 * np.arange(1, model.dof + 1)
    assert_close(np.array([float(x) for x in printed.split()]), model.gravity_torques(q),
                 "gravity from the installed library", rtol=TOL)
    # The 1 kHz loop example: its check that the loop never allocates (exit status 1 if so).
    loop = subprocess.run([str(tmp_path / "loop" / "control_loop"), "50"], capture_output=True,
                          text=True)
    assert loop.returncode == 0, loop.stdout + loop.stderr
    assert "allocations in the loop: 0" in loop.stdout
    assert "model time per cycle [us]: p50" in loop.stdout


@needs_cc
@pytest.mark.parametrize("call, message", [
    ("soa_gravity_torques(p, q, out)", "soa_gravity_torques: q is NULL or holds NaN or inf"),
    ("soa_frame_acceleration(p, zero, zero, q, 1, out)",
     "soa_frame_acceleration: qdd is NULL or holds NaN or inf")])
def test_debug_checks_abort_naming_the_problem(call, message, tmp_path):
    """Built with -DSOA_DEBUG_CHECKS, a NaN input stops the program with a message; without
    them the answer is NaN (test_exported_library_is_the_model: an unknown frame)."""
    export_c(RobotModel.from_urdf(shipped_urdf("double_pendulum.urdf"), kernels="off"),
             tmp_path, "soa")
    program = tmp_path / "nan.c"
    program.write_text('#include <math.h>\n#include <stdio.h>\n#include "soa.h"\n'
                       "int main(void) {\n"
                       "    double p[SOA_NUM_PARAMETERS], q[SOA_NUM_JOINTS] = {NAN}, "
                       "zero[SOA_NUM_JOINTS] = {0.0}, out[6 * SOA_NUM_JOINTS];\n"
                       f"    soa_default_parameters(p);\n    {call};\n"
                       '    printf("%g\\n", out[0]);\n    return 0;\n}\n')
    results = []
    for checks in ([], ["-DSOA_DEBUG_CHECKS"]):
        executable = tmp_path / f"nan{len(checks)}"
        subprocess.run([CC, "-std=c99", "-O0", *checks, f"-I{tmp_path}", str(program),
                        str(tmp_path / "soa.c"), "-lm", "-o", str(executable)], check=True)
        results.append(subprocess.run([str(executable)], capture_output=True, text=True))
    unchecked, checked = results
    assert unchecked.returncode == 0 and unchecked.stdout.strip() in ("nan", "-nan")
    assert checked.returncode != 0
    assert message in checked.stderr


FIXED_ONLY = ('<robot name="statue"><link name="base"/><link name="head"/>'
              '<joint name="neck" type="fixed"><parent link="base"/><child link="head"/></joint>'
              '</robot>')


@pytest.mark.parametrize("robot, prefix, frames, named", [
    (FIXED_ONLY, "soa", None, "no moving joint"),
    (shipped_urdf("ur5.urdf"), "2fast", None, "prefix '2fast'"),
    (shipped_urdf("ur5.urdf"), "soa", ["tool0", "gripper"], "frame 'gripper'")])
def test_export_refuses_what_it_cannot_export_and_writes_nothing(robot, prefix, frames, named,
                                                                  tmp_path):
    model = RobotModel.from_urdf(robot, kernels="off")
    with pytest.raises(ExportError, match=named):
        export_c(model, tmp_path / "out", prefix, frames)
    assert not (tmp_path / "out").exists()


def test_cli_names_the_refused_feature(tmp_path, capsys):
    urdf = tmp_path / "statue.urdf"
    urdf.write_text(FIXED_ONLY)
    assert cli.main(["export-c", str(urdf), "--out", str(tmp_path / "out")]) == 2
    assert "export-c: error: robot 'statue' has no moving joint" in capsys.readouterr().err
