"""The kernel cache cannot be used against its user (issue 43): a module file is loaded
only when this user (or root) owns it and its directory, nobody else may write either,
and its bytes are those its build recorded; anything else is rebuilt with one warning,
never loaded.  The cache is private and bounded.

Each load runs in a process of its own, as a node's start-up does: a module once loaded
stays in a process, so only a new one reads the cache again.  The robots are two-link
arms, each test's of its own lengths (its own module names), and each test compiles one
small kernel (the module fixture compiled the first).
"""
import os
import shutil
import stat
import subprocess
import sys

import numpy as np
import pytest

from support.robots import REPO
from support.small_robots import two_link_arm
from oracles.pinocchio_reference import PinocchioReference
from soa_dynamics_ros.kernels import build

Q = [0.3, -0.4]
# Loads the gravity kernel of the robot on stdin (compiling it if it must) and prints its
# answer; the log (warnings first in their line) on stdout too.
GRAVITY_RUN = """
import logging, sys
logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="%(levelname)s %(message)s")
import numpy as np
from soa_dynamics_ros.description.urdf import parse_urdf
from soa_dynamics_ros.kernels import Kernels, pack_parameters
from soa_dynamics_ros.multibody.tree import BodyTree
tree = BodyTree(parse_urdf(sys.stdin.read()))
try:
    gravity_torques = Kernels(tree).get("gravity_torques")
except ImportError as error:
    print("refused:", error)
else:
    p = pack_parameters(tree, (0.0, 0.0, -9.81))
    print("answer", gravity_torques(np.array(Q_VALUES), p).tolist())
""".replace("Q_VALUES", repr(Q))


BUILT_LENGTH = 0.4


def run(script, cache_root, urdf, **environment):
    env = {name: value for name, value in os.environ.items()
           if name not in ("SOA_DYNAMICS_CACHE_MAX_MB", "SOA_DYNAMICS_KERNELS")}
    env.update(SOA_DYNAMICS_CACHE=str(cache_root), **environment)
    finished = subprocess.run([sys.executable, "-c", script], input=urdf, capture_output=True,
                              text=True, cwd=REPO, env=env, timeout=600)
    assert finished.returncode == 0, finished.stderr[-3000:]
    return finished.stdout


def warnings(log):
    return [line for line in log.splitlines() if line.startswith("WARNING")]


def assert_right_answer(log, length):
    answer = [line for line in log.splitlines() if line.startswith("answer")]
    assert answer, log
    expected = PinocchioReference(two_link_arm(length), ["shoulder", "elbow"]).inverse_dynamics(
        np.array(Q), np.zeros(2), np.zeros(2))
    np.testing.assert_allclose(eval(answer[0].split(" ", 1)[1]), expected, rtol=0, atol=1e-12)


def library(kernels):
    """The one compiled module file of ``kernels`` (a cache's kernels directory)."""
    [path] = kernels.glob(f"soa_kernels_*{build.EXTENSION}")
    return path


@pytest.fixture(scope="module")
def built_cache(tmp_path_factory):
    """A kernel cache root whose kernels directory holds the gravity kernel of
    ``two_link_arm(BUILT_LENGTH)``, as its build left it."""
    root = tmp_path_factory.mktemp("built_cache")
    log = run(GRAVITY_RUN, root, two_link_arm(BUILT_LENGTH))
    assert "compiling kernel" in log and not warnings(log), log
    return root


@pytest.fixture
def cache(built_cache, tmp_path):
    """This test's copy of :func:`built_cache` (modes and times kept); its kernels directory."""
    root = tmp_path / "cache"
    shutil.copytree(built_cache, root)
    return root / "kernels"


def test_the_cache_is_created_private_and_every_module_has_its_hash_record(cache):
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700
    module = library(cache)
    assert build.record_path(module).exists()
    assert not stat.S_IMODE(module.stat().st_mode) & 0o022


def _corrupt(path, how):
    data = path.read_bytes()
    if how == "truncated":
        path.write_bytes(data[:len(data) // 3])
    elif how == "random bytes":
        path.write_bytes(np.random.default_rng(4).bytes(len(data)))
    else:       # another ELF file: this Python's executable
        shutil.copyfile(sys.executable, path)


@pytest.mark.parametrize("how", ["truncated", "random bytes", "another ELF file"])
def test_a_corrupt_module_is_rebuilt_with_one_warning_and_answers_right(cache, how):
    module = library(cache)
    _corrupt(module, how)
    log = run(GRAVITY_RUN, cache.parent, two_link_arm(BUILT_LENGTH))
    assert len(warnings(log)) == 1 and "rebuilding it" in warnings(log)[0], log
    assert "compiling kernel" in log
    assert_right_answer(log, BUILT_LENGTH)
    # rebuilt: the next process loads it with no warning
    log = run(GRAVITY_RUN, cache.parent, two_link_arm(BUILT_LENGTH))
    assert "loaded from cache" in log and not warnings(log), log


PLANTED = r"""
#include <stdio.h>
__attribute__((constructor)) static void planted(void) {
    FILE *marker = fopen("%s", "w");
    if (marker) { fputs("ran", marker); fclose(marker); }
}
"""


@pytest.mark.parametrize("record", ["its record kept", "its record removed"])
def test_a_planted_module_never_runs_and_is_rebuilt(cache, tmp_path, record):
    """A shared object put under the module's exact name, whose constructor would write a
    marker file when loaded: it is not loaded (no marker) and the kernel is rebuilt."""
    module = library(cache)
    marker = tmp_path / "marker"
    source = tmp_path / "planted.c"
    source.write_text(PLANTED % marker)
    subprocess.run([build.compiler(), "-shared", "-fPIC", str(source), "-o", str(module)],
                   check=True, timeout=120)
    os.chmod(module, 0o755)
    if record == "its record removed":
        build.record_path(module).unlink()
    log = run(GRAVITY_RUN, cache.parent, two_link_arm(BUILT_LENGTH))
    assert not marker.exists()
    assert len(warnings(log)) == 1 and "rebuilding it" in warnings(log)[0], log
    assert_right_answer(log, BUILT_LENGTH)


def _writable_by_group(path):
    os.chmod(path, stat.S_IMODE(path.stat().st_mode) | stat.S_IWGRP)


def _owned_by_nobody(path):
    if os.geteuid() != 0:
        pytest.skip("giving a file to another user takes root")
    os.chown(path, 65534, 65534)


@pytest.mark.parametrize("change", [_writable_by_group, _owned_by_nobody])
@pytest.mark.parametrize("which", ["module", "hash record"])
def test_a_module_others_may_write_or_own_is_refused_and_rebuilt(cache, change, which):
    module = library(cache)
    change(module if which == "module" else build.record_path(module))
    log = run(GRAVITY_RUN, cache.parent, two_link_arm(BUILT_LENGTH))
    assert len(warnings(log)) == 1 and "rebuilding it" in warnings(log)[0], log
    assert "compiling kernel" in log
    assert_right_answer(log, BUILT_LENGTH)
    for path in (module, build.record_path(module)):
        status = path.stat()
        assert status.st_uid == os.geteuid() and not status.st_mode & 0o022


@pytest.mark.parametrize("change", [_writable_by_group, _owned_by_nobody])
def test_a_cache_directory_others_may_write_or_own_turns_compiled_kernels_off(cache, change):
    change(cache)
    log = run(GRAVITY_RUN, cache.parent, two_link_arm(BUILT_LENGTH))
    assert "refused: compiled kernels are unavailable: the kernel cache" in log, log
    assert len(warnings(log)) == 1 and "compiled kernels are off" in warnings(log)[0], log
    assert "loaded from cache" not in log and "compiling" not in log


def test_a_model_with_an_untrusted_cache_answers_from_numpy(cache):
    """kernels="auto" (the default): no compiled code, the right answer, one warning."""
    _writable_by_group(cache)
    script = ("import logging, sys\n"
              "logging.basicConfig(level=logging.INFO, stream=sys.stdout, "
              "format='%(levelname)s %(message)s')\n"
              "from soa_dynamics_ros import RobotModel\n"
              "model = RobotModel.from_urdf(sys.stdin.read())\n"
              f"print('kernels', model.kernels)\n"
              f"print('answer', model.gravity_torques({Q!r}).tolist())\n")
    log = run(script, cache.parent, two_link_arm(BUILT_LENGTH))
    assert "kernels ('auto', None)" in log, log
    assert len(warnings(log)) == 1 and "compiled kernels are off" in warnings(log)[0], log
    assert_right_answer(log, BUILT_LENGTH)


def _fake_module(directory, name, megabytes, age_seconds):
    """Files of a module named ``name`` as a build leaves them, last used ``age_seconds`` ago."""
    paths = [directory / f"{name}{build.EXTENSION}", build.record_path(directory / name),
             directory / f"{name}.c"]
    paths[0].write_bytes(b"\0" * int(megabytes * 2 ** 20))
    paths[1].write_text("0" * 64 + "\n")
    paths[2].write_text("/* source */\n")
    for path in paths:
        used = path.stat().st_mtime - age_seconds
        os.utime(path, (used, used))
    return paths[0]


def _megabytes(directory):
    return sum(path.stat().st_size for path in directory.iterdir()
               if not path.name.startswith(".")) / 2 ** 20


def test_the_cache_evicts_the_least_recently_used_modules_down_to_its_bound(cache):
    kept = library(cache)
    oldest, older, old = (_fake_module(cache, f"soa_kernels_unused{i}", 1.0, age)
                          for i, age in enumerate((3000, 2000, 1000)))
    log = run(GRAVITY_RUN, cache.parent, two_link_arm(0.45), SOA_DYNAMICS_CACHE_MAX_MB="2.5")
    assert_right_answer(log, 0.45)
    assert _megabytes(cache) <= 2.5
    assert not oldest.exists() and not build.record_path(oldest).exists()
    assert older.exists() and old.exists() and kept.exists()
    assert len(list(cache.glob(f"soa_kernels_*{build.EXTENSION}"))) == 4


def test_eviction_never_takes_a_module_the_process_uses(cache):
    """A bound below what one module takes: everything else goes, the new module stays."""
    before = library(cache)
    _fake_module(cache, "soa_kernels_unused", 1.0, 10)
    log = run(GRAVITY_RUN, cache.parent, two_link_arm(0.5), SOA_DYNAMICS_CACHE_MAX_MB="0.001")
    assert_right_answer(log, 0.5)
    [built] = cache.glob(f"soa_kernels_*{build.EXTENSION}")
    assert built != before and build.record_path(built).exists()


def test_a_used_module_outlives_an_older_unused_one(cache):
    """Loading a module marks it used: the module loaded last is evicted last."""
    module = library(cache)
    _fake_module(cache, "soa_kernels_unused", 0.5, 0)
    source = module.with_name(module.name.removesuffix(build.EXTENSION) + ".c")
    for path in (module, build.record_path(module), source):
        os.utime(path, (path.stat().st_mtime - 5000,) * 2)
    assert "loaded from cache" in run(GRAVITY_RUN, cache.parent, two_link_arm(BUILT_LENGTH))
    run(GRAVITY_RUN, cache.parent, two_link_arm(0.55), SOA_DYNAMICS_CACHE_MAX_MB="0.4")
    assert module.exists() and not (cache / f"soa_kernels_unused{build.EXTENSION}").exists()


def test_an_installed_generic_module_is_checked_too(tmp_path):
    """An installation's generic module that was not built there (no hash record) is not
    taken as installed: the kernels come from the cache instead, with one warning."""
    from soa_dynamics_ros.kernels import generic
    prebuilt = tmp_path / "prebuilt"
    prebuilt.mkdir()
    planted = prebuilt / f"{generic.module_name()}{build.EXTENSION}"
    planted.write_bytes(b"\x7fELF not a module")
    script = ("import logging, sys\n"
              "logging.basicConfig(level=logging.INFO, stream=sys.stdout, "
              "format='%(levelname)s %(message)s')\n"
              "from soa_dynamics_ros import kernels\n"
              "print('installed', kernels.generic_cached())\n")
    log = run(script, tmp_path / "cache", "", SOA_DYNAMICS_PREBUILT=str(prebuilt))
    assert "installed False" in log, log
    assert len(warnings(log)) == 1 and "building it into the kernel cache" in warnings(log)[0]


# A node's start-up (its model host, as soa_dynamics_node runs it): the robot on stdin.
START_UP = """
import logging, sys
logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="%(levelname)s %(message)s")
from soa_dynamics_ros.embedded.model_host import ModelHost
from soa_dynamics_ros.ros.parameters import PARAMETERS
urdf = sys.stdin.read()
config = {name: spec.default for name, spec in PARAMETERS.items()}
config.update(robot_description=urdf, kernels="auto", package_paths=[], command_joints=[],
              payloads=[])
host = ModelHost(config, logging.getLogger("node"))
try:
    host.load_now(urdf, "parameters")
    print("serving:", host.kernels_status())
finally:
    host.close()
"""


def _installed_generic_module(directory):
    """``directory`` holding a copy of the generic module this process uses, as installed."""
    from soa_dynamics_ros import kernels
    directory.mkdir()
    library = kernels.generic_module().__file__
    shutil.copy(library, directory)
    shutil.copy(build.record_path(library), directory)
    return directory


@pytest.mark.parametrize("corrupt", ["generic module", "robot's kernel"])
def test_a_corrupt_module_in_the_cache_never_ends_a_node_start_up(tmp_path, corrupt):
    """The node starts (the warm-up child is to rebuild), with one warning."""
    from soa_dynamics_ros.kernels import generic
    urdf = two_link_arm(0.6)
    kernels = tmp_path / "cache" / "kernels"
    environment = {"SOA_DYNAMICS_PREBUILT": str(tmp_path / "prebuilt")}
    if corrupt == "generic module":
        kernels.mkdir(parents=True, mode=0o700)
        (kernels / f"{generic.module_name()}{build.EXTENSION}").write_bytes(b"\x7fELF" * 100)
        status = "numpy path (kernels compiling)"
    else:
        _installed_generic_module(tmp_path / "prebuilt")
        run("import runpy; runpy.run_module('soa_dynamics_ros.embedded.warmup', "
            "run_name='__main__')", tmp_path / "cache", urdf, **environment)
        gravity = next(kernels.glob(f"soa_kernels_gravity_torques_*{build.EXTENSION}"))
        gravity.write_bytes(gravity.read_bytes()[:1000])
        status = "generic compiled module (this robot's kernels compiling)"
    log = run(START_UP, tmp_path / "cache", urdf, **environment)
    assert f"serving: {status}" in log, log
    rebuilding = [line for line in log.splitlines() if "rebuilding it" in line]
    assert len(rebuilding) == 1 and rebuilding[0].startswith("WARNING"), log
