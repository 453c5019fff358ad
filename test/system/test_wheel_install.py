"""`pip install .` gives a library that answers from compiled code at its first call.

The wheel is built from a copy of the sources (the build writes into its source
tree) and installed into a fresh venv that sees none of this environment's
packages (no --system-site-packages, no PYTHONPATH): only the wheel and numpy.
Before the fix the wheel carried `kernels/*.h` but no `generic.c`, and the
installed library logged a FileNotFoundError traceback and answered from numpy.

Slow layer (about 20 s): builds a wheel, makes a venv, compiles the generic module once.
"""
import json
import os
import shutil
import subprocess
import sys
import zipfile

import numpy as np
import pytest

from oracles.pinocchio_reference import PinocchioReference
from support.numerics import assert_close
from support.robots import REPO, shipped_urdf

# What `pip wheel` reads: the build configuration and the package.
BUILD_INPUTS = ("setup.cfg", "setup.py", "pyproject.toml", "soa_dynamics_ros")
# Run inside the fresh venv: the first call's answer and what computed it.
PROBE = """
import json, sys
import soa_dynamics_ros
from soa_dynamics_ros import RobotModel
model = RobotModel.from_urdf(sys.argv[1])
q = [float(v) for v in sys.argv[2].split(",")]
torques = model.gravity_torques(q)
print(json.dumps(dict(package=soa_dynamics_ros.__file__, kernels=model.kernels,
                      generic_module=model.generic_kernels()[0] is not None,
                      joint_names=model.joint_names, torques=[float(t) for t in torques])))
"""
# Variables of this environment that would let the venv see other code or kernels.
LEAKING_VARIABLES = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "SOA_DYNAMICS_PREBUILT",
                     "SOA_DYNAMICS_KERNELS")


def _run(command, **kwargs):
    result = subprocess.run(command, capture_output=True, text=True, **kwargs)
    assert result.returncode == 0, (f"{command} failed ({result.returncode}):\n"
                                    f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    return result


def _package_data_files():
    """Every file of the package that is not Python source: what the library reads at run time."""
    package = REPO / "soa_dynamics_ros"
    return sorted(str(path.relative_to(REPO)) for path in package.rglob("*")
                  if path.is_file() and path.suffix not in (".py", ".pyc")
                  and "__pycache__" not in path.parts)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    root = tmp_path_factory.mktemp("wheel")
    source = root / "source"
    source.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build")
    for name in BUILD_INPUTS:
        path = REPO / name
        if path.is_dir():
            shutil.copytree(path, source / name, ignore=ignore)
        else:
            shutil.copy2(path, source / name)
    _run([sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "-w", str(root / "dist"),
          "-q"])
    [built] = (root / "dist").glob("*.whl")
    return built


def test_the_wheel_carries_every_file_the_package_reads(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    data_files = _package_data_files()
    assert "soa_dynamics_ros/kernels/generic.c" in data_files
    missing = [name for name in data_files if name not in names]
    assert not missing, f"{wheel.name} lacks {missing}"


def test_the_installed_library_answers_compiled_from_the_first_call(wheel, tmp_path):
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)])
    python = venv / "bin" / "python"
    _run([str(python), "-m", "pip", "install", "-q", str(wheel), "numpy"])
    environment = {key: value for key, value in os.environ.items()
                   if key not in LEAKING_VARIABLES}
    environment["SOA_DYNAMICS_CACHE"] = str(tmp_path / "cache")
    urdf = shipped_urdf("panda.urdf")
    q = np.linspace(-0.9, 1.2, 7)
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE)
    result = _run([str(python), str(probe), urdf, ",".join(map(repr, q.tolist()))],
                  cwd=tmp_path, env=environment)
    answer = json.loads(result.stdout.strip().splitlines()[-1])
    assert answer["package"].startswith(str(venv)), answer["package"]
    assert "Traceback" not in result.stderr and "FileNotFoundError" not in result.stderr, \
        result.stderr[-3000:]
    assert answer["generic_module"], f"no compiled generic module:\n{result.stderr[-3000:]}"
    assert answer["kernels"] == ["auto", "c"], answer["kernels"]
    with open(urdf) as file:
        reference = PinocchioReference(file.read(), answer["joint_names"])
    zero = np.zeros(len(q))
    assert_close(np.array(answer["torques"]), reference.inverse_dynamics(q, zero, zero),
                 "gravity torques of the installed wheel")
