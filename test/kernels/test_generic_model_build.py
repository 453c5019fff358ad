"""Building a generic-module model of a large tree (issue 43): a 3000-joint chain
answers as the numpy recursions do, and the build in C lets other threads run.

make_model's tables were cubic in a chain's depth (seconds for the Panda plus a
3000-joint chain) and held the GIL for all of it: the node's feedforward and
services stopped while a new description loaded in the background.
"""
import re
import sys
import threading

import numpy as np
import pytest

from support.numpy_path import disable_numpy_path
from support.robot_generator import random_tree_urdf
from soa_dynamics_ros.kernels import build, generic, generic_module
from soa_dynamics_ros.model import RobotModel

CHAIN_JOINTS = 3000


@pytest.fixture(scope="module")
def chain_urdf():
    return random_tree_urdf(43, moving_joints=CHAIN_JOINTS, branching=0.0, fixed_fraction=0.0,
                            mimic_fraction=0.0)


def test_long_chain_forward_dynamics_satisfies_numpy_inverse_dynamics(chain_urdf):
    """The generic module's forward dynamics of a 3000-joint chain (M factored along the
    chain: make_model found its rates nested) against the numpy recursions.  Pinocchio's
    data of such a chain does not fit in memory (dense nv x nv matrices per joint)."""
    fast = RobotModel.from_urdf(chain_urdf, kernels="generic")
    disable_numpy_path(fast, ["forward_dynamics"])
    slow = RobotModel.from_urdf(chain_urdf, kernels="off")
    rng = np.random.default_rng(3)
    q = rng.uniform(-1.0, 1.0, fast.dof)
    qd = rng.uniform(-0.5, 0.5, fast.dof)
    tau = rng.uniform(-5.0, 5.0, fast.dof)
    qdd = fast.forward_dynamics(q, qd, tau)
    # The chain is ill-conditioned (qdd large and sensitive to round-off): judge qdd by
    # the torques it takes, which are well-conditioned in qdd.
    residual = slow.inverse_dynamics(q, qd, qdd) - tau
    assert np.max(np.abs(residual)) <= 1e-6 * np.max(np.abs(tau))


def test_make_model_lets_another_thread_run_while_it_builds(chain_urdf, monkeypatch):
    """A Python thread runs while make_model builds a large tree in another thread.

    With a switch interval far longer than the test, a thread holding the GIL only
    gives it up by blocking or by C code releasing it: this thread can count while
    the builder is alive only if make_model released the GIL."""
    module = generic_module()
    tree = RobotModel.from_urdf(chain_urdf, kernels="off").tree
    arguments = []
    monkeypatch.setattr(module, "make_model", lambda *packed: arguments.extend(packed))
    generic.CompiledTree(module, tree)      # packs the arguments only
    monkeypatch.undo()
    wanted_iterations = 1000
    iterations = 0
    builder = threading.Thread(target=module.make_model, args=arguments)
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1000.0)
    try:
        builder.start()
        while builder.is_alive() and iterations < wanted_iterations:
            iterations += 1
    finally:
        builder.join()
        sys.setswitchinterval(interval)
    assert iterations == wanted_iterations, (
        f"this thread ran {iterations} iterations while make_model built a {CHAIN_JOINTS}-joint "
        "chain: the build held the GIL")


def _included(source):
    """Every project file ``source`` includes, directly or not (quoted includes, found
    beside the including file first, then in the kernels folder: the build's -I)."""
    pending, included = [source], set()
    while pending:
        including = pending.pop()
        for name in re.findall(r'^#include "([^"]+)"', including.read_text(), re.MULTILINE):
            beside = including.parent / name
            path = (beside if beside.exists() else build.RUNTIME_DIR / name).resolve()
            if path not in included:
                included.add(path)
                pending.append(path)
    return included


def test_every_source_generic_c_includes_renames_the_module():
    """The module's name hashes its sources: a changed include must not load a stale build."""
    hashed = {generic.SOURCE, *generic.INCLUDED, *build.RUNTIME_HEADERS}
    included = _included(generic.SOURCE)
    assert included, "generic.c includes its parts"
    assert not included - hashed, f"not hashed into its name: {sorted(included - hashed)}"


def test_every_part_of_the_runtime_renames_the_per_robot_kernels():
    """Every generated kernel includes runtime.h, whose parts are hashed into the kernels'
    code version (as into the generic module's name)."""
    runtime = build.RUNTIME_DIR / "runtime.h"
    included = _included(runtime)
    assert included, "runtime.h includes its parts"
    assert {runtime, *included} <= set(build.RUNTIME_HEADERS)
