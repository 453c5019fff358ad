"""The robots' own kernels of inverse and forward dynamics (and of the inverse dynamics
derivatives) with link wrenches.

Each is generated for one set of links (one to MAX_WRENCHED_LINKS) and reads the
``{link: wrench}`` dict itself; they are held to the numpy reference path on the
shipped robots, random trees (mimic, prismatic and continuous joints) and rtb-data
arms, for one link and several in any order, and must leave what they cannot take
to the generic module and the numpy path.
"""
import numpy as np
import pytest

from support.numerics import assert_close
from support.numpy_path import disable_numpy_path, enable_numpy_path
from support.robot_generator import random_tree_urdf
from support.robots import SHIPPED_ROBOTS, shipped_urdf, zoo_urdf_text
from support.waiting import wait_for
from soa_dynamics_ros.errors import InvalidInputError, UnknownNameError
from soa_dynamics_ros.kernels import Kernels, generator
from soa_dynamics_ros.kernels.generic import CompiledTree
from soa_dynamics_ros.model import RobotModel, kernel_router

TOL = 1e-12
ZOO_ROBOTS = ["trossen_descriptions/urdf/vx300s.urdf.xacro",      # mimic gripper
              "trossen_descriptions/urdf/px150.urdf.xacro"]
SOURCES = ([pytest.param(shipped_urdf(name), None, id=name) for name in SHIPPED_ROBOTS]
           + [pytest.param(random_tree_urdf(seed, moving_joints=n, mimic_fraction=mimic,
                                            prismatic_fraction=0.25, continuous_fraction=0.25),
                           None, id=f"random{seed}") for seed, n, mimic in ((31, 9, 0.0),
                                                                            (32, 11, 0.3))]
           + [pytest.param(None, relative, id=relative.split("/")[-1])
              for relative in ZOO_ROBOTS])


def _load(source, zoo, kernels):
    return RobotModel.from_urdf(source if zoo is None else zoo_urdf_text(zoo), kernels=kernels)


def _refuse(*_, **__):
    raise AssertionError("the generic module or the numpy path answered")


def _links(model):
    """Three links on different bodies: the deepest leaf, one halfway up its chain, and a
    link of the root body where there is one (its wrench does no work)."""
    tree = model.tree
    frames = tree.frames
    by_body = {}
    for name, frame in frames.items():
        by_body.setdefault(int(frame.body), name)

    def depth(body):
        return 0 if body == 0 else 1 + depth(int(tree.parent[body]))

    leaf = max(by_body, key=depth)
    chain = [leaf]
    while chain[-1] != 0:
        chain.append(int(tree.parent[chain[-1]]))
    middle = chain[len(chain) // 2] if chain[len(chain) // 2] != 0 else chain[0]
    others = [b for b in by_body if b not in (leaf, middle)]
    third = 0 if 0 in by_body and middle != 0 else others[0]
    return [by_body[leaf], by_body[middle], by_body[third]]


@pytest.mark.parametrize("source,zoo", SOURCES)
def test_wrenched_kernels_match_the_reference(source, zoo, rng, monkeypatch):
    slow = _load(source, zoo, "off")
    links = _links(slow)
    # only the robot's own kernels may answer: the generic module's wrenched functions
    # refuse (torques_with_wrenches too, with which the robot's forward dynamics kernel
    # answers where it has no wrenched one), and so does the numpy path
    refused = {"inverse_dynamics_wrenches", "forward_dynamics_wrenches", "torques_with_wrenches"}
    if generator.exists(slow.tree, "inverse_dynamics_derivatives_wrenches"):
        refused.add("inverse_dynamics_derivatives_wrenches")      # (else above the cap)
    bind = CompiledTree.function
    monkeypatch.setattr(CompiledTree, "function", lambda compiled, name, *bound: (
        _refuse if name in refused else bind(compiled, name, *bound)))
    fast = _load(source, zoo, "c")
    fast.prepare_kernels(frames=links)
    disable_numpy_path(fast, ["inverse_dynamics", "forward_dynamics"])
    n = fast.dof
    for _ in range(3):
        q, qd, qdd = rng.uniform(-2, 2, (3, n))
        condition = np.linalg.cond(slow.mass_matrix(q))
        # (one link, then a set, then the same set in another order: a kernel
        # remembered by the first link declines a set it was not made for)
        for chosen in (links[:1], links, links[::-1], links[1:2]):
            wrenches = {link: rng.normal(size=6) * 5.0 for link in chosen}
            tau = slow.inverse_dynamics(q, qd, qdd, wrenches)
            assert_close(fast.inverse_dynamics(q, qd, qdd, wrenches), tau,
                         f"ID with wrenches on {chosen}", TOL)
            # qdd solves with M: round-off grows with its condition number
            assert_close(fast.forward_dynamics(q, qd, tau, wrenches),
                         slow.forward_dynamics(q, qd, tau, wrenches),
                         f"FD with wrenches on {chosen}", TOL * condition)
            for k, (answer, expected) in enumerate(zip(
                    fast.inverse_dynamics_derivatives(q, qd, qdd, wrenches),
                    slow.inverse_dynamics_derivatives(q, qd, qdd, wrenches))):
                assert_close(answer, expected, f"ID derivatives [{k}] with wrenches on {chosen}",
                             TOL)
    built = {(kernel, frame) for kernel, frame in fast.kernels.routes.kernel_set.modules
             if kernel in Kernels.WRENCHED_KERNELS}
    link_sets = [(links[0],), (links[1],), (links[2],), tuple(sorted(links))]
    assert built == {(kernel, chosen) for kernel in Kernels.WRENCHED_KERNELS
                     for chosen in link_sets}, built


def test_wrenches_are_taken_as_the_reference_takes_them(rng):
    """A link wrench in root axes about the link origin acts as -J^T w in inverse dynamics,
    checked without the recursions: J from finite differences of the link's pose."""
    fast = RobotModel.from_urdf(shipped_urdf("panda.urdf"), kernels="c")
    link = _links(fast)[0]
    fast.prepare_kernels(frames=[link])
    q, qd, qdd = rng.uniform(-1, 1, (3, fast.dof))
    wrench = rng.normal(size=6)
    step, jacobian = 1e-6, np.zeros((6, fast.dof))
    pose = fast.frame_pose(q, link)
    for j in range(fast.dof):
        moved = q.copy()
        moved[j] += step
        other = fast.frame_pose(moved, link)
        jacobian[:3, j] = (other[:3, 3] - pose[:3, 3]) / step
        turn = (other[:3, :3] @ pose[:3, :3].T - np.eye(3)) / step
        jacobian[3:, j] = [turn[2, 1], turn[0, 2], turn[1, 0]]
    expected = fast.inverse_dynamics(q, qd, qdd) - jacobian.T @ wrench
    answer = fast.inverse_dynamics(q, qd, qdd, {link: wrench})
    assert fast.kernels.routes.wrenched["inverse_dynamics_wrenches"] is fast.kernels.routes.kernel_set.get(
        "inverse_dynamics_wrenches", (link,))
    assert_close(answer, expected, "ID with a wrench against -J^T w", 1e-5)


def test_wrenched_kernels_leave_what_they_cannot_take_to_the_paths_that_name_it(rng):
    fast, slow = _load(shipped_urdf("panda.urdf"), None, "c"), _load(shipped_urdf("panda.urdf"),
                                                                      None, "off")
    links = _links(slow)
    fast.prepare_kernels(frames=links)
    n = fast.dof
    q, qd, qdd = rng.uniform(-1, 1, (3, n))
    good = rng.normal(size=6)
    for call in (lambda w: fast.inverse_dynamics(q, qd, qdd, w),
                 lambda w: fast.forward_dynamics(q, qd, qdd, w),
                 lambda w: fast.inverse_dynamics_derivatives(q, qd, qdd, w)):
        call({links[0]: good})                             # the kernel is ready and used
        for bad, error, message in (
                ({links[0]: np.r_[good[:5], np.nan]}, InvalidInputError, "NaN or inf"),
                ({links[0]: np.r_[good[:5], 1e200]}, InvalidInputError, "beyond 1e\\+50"),
                ({links[0]: np.zeros(5)}, InvalidInputError, "shape"),
                ({links[0]: ["a"] * 6}, InvalidInputError, "numeric"),
                ({links[0]: good, "no_such_link": good}, UnknownNameError, "no_such_link"),
                ({links[0]: good, 3: good}, UnknownNameError, "3")):
            with pytest.raises(error, match=message):
                call(bad)
    # converted by the paths behind: a list, float32, more links than a kernel takes
    many = {name: good for name in list(slow.tree.frames)[:generator.MAX_WRENCHED_LINKS + 1]}
    for wrenches in ({links[0]: list(good)}, {links[0]: good.astype(np.float32)}, many):
        assert_close(fast.inverse_dynamics(q, qd, qdd, wrenches),
                     slow.inverse_dynamics(q, qd, qdd, wrenches), "converted", TOL)
        assert_close(fast.forward_dynamics(q, qd, qdd, wrenches),
                     slow.forward_dynamics(q, qd, qdd, wrenches), "converted", TOL)
    assert not any(len(frame) > generator.MAX_WRENCHED_LINKS
                   for kernel, frame in fast.kernels.routes.kernel_set.modules
                   if kernel in Kernels.WRENCHED_KERNELS)
    # the kernels themselves: the dict's links and values, else status 1, never a crash
    kernel = fast.kernels.routes.kernel_set.get("inverse_dynamics_wrenches", (links[0],))
    p = fast.kernels.parameters
    assert type(kernel(q, qd, qdd, {links[0]: good}, p)) is np.ndarray
    for wrenches in ({}, {links[1]: good}, {links[0]: good, links[1]: good}, [good],
                     {links[0]: good[:5]}, {links[0]: np.zeros((2, 6))}):
        assert kernel(q, qd, qdd, wrenches, p) == 1, wrenches
    with pytest.raises(TypeError, match="5 arguments"):
        kernel(q, qd, qdd, p)


def test_kernels_c_compiles_a_link_set_at_its_first_call(rng):
    fast, slow = _load(shipped_urdf("ur5.urdf"), None, "c"), _load(shipped_urdf("ur5.urdf"),
                                                                    None, "off")
    links = _links(slow)[:2]
    q, qd, qdd = rng.uniform(-1, 1, (3, fast.dof))
    wrenches = {links[1]: rng.normal(size=6), links[0]: rng.normal(size=6)}
    assert_close(fast.inverse_dynamics(q, qd, qdd, wrenches),
                 slow.inverse_dynamics(q, qd, qdd, wrenches), "ID", TOL)
    kernel = fast.kernels.routes.kernel_set.get("inverse_dynamics_wrenches", tuple(sorted(links)))
    assert fast.kernels.routes.wrenched["inverse_dynamics_wrenches"] is kernel
    assert fast.kernels.routes.last_wrenched["inverse_dynamics_wrenches"][links[1]] is kernel


def test_calls_alternating_link_sets_are_each_answered_by_their_own_kernel(rng):
    """The function last used answers first and declines other links: each set of links
    still gets its own kernel (and the right answer) when calls alternate between sets,
    including sets that start with the same link."""
    fast, slow = _load(shipped_urdf("panda.urdf"), None, "c"), _load(
        shipped_urdf("panda.urdf"), None, "off")
    links = _links(slow)[:2]
    q, qd, qdd = rng.uniform(-1, 1, (3, fast.dof))
    for chosen in [links[:1], links, links[1:], links[:1], links[1:], links] * 2:
        wrenches = {link: rng.normal(size=6) for link in chosen}
        key = tuple(sorted(chosen))
        assert_close(fast.inverse_dynamics(q, qd, qdd, wrenches),
                     slow.inverse_dynamics(q, qd, qdd, wrenches), f"ID on {chosen}", TOL)
        assert fast.kernels.routes.wrenched["inverse_dynamics_wrenches"] is fast.kernels.routes.kernel_set.get(
            "inverse_dynamics_wrenches", key)
        assert_close(fast.forward_dynamics(q, qd, qdd, wrenches),
                     slow.forward_dynamics(q, qd, qdd, wrenches), f"FD on {chosen}", TOL)
        assert fast.kernels.routes.wrenched["forward_dynamics_wrenches"] is fast.kernels.routes.kernel_set.get(
            "forward_dynamics_wrenches", key)
        for answer, expected in zip(fast.inverse_dynamics_derivatives(q, qd, qdd, wrenches),
                                    slow.inverse_dynamics_derivatives(q, qd, qdd, wrenches)):
            assert_close(answer, expected, f"ID derivatives on {chosen}", TOL)
        assert fast.kernels.routes.wrenched["inverse_dynamics_derivatives_wrenches"] is (
            fast.kernels.routes.kernel_set.get("inverse_dynamics_derivatives_wrenches", key))
    # no wrenches, or none in the dict: the plain dynamics, whatever was used before
    for none in (None, {}):
        assert_close(fast.inverse_dynamics(q, qd, qdd, none), slow.inverse_dynamics(q, qd, qdd),
                     f"ID with {none}", TOL)
        assert_close(fast.forward_dynamics(q, qd, qdd, none), slow.forward_dynamics(q, qd, qdd),
                     f"FD with {none}", TOL)
        for answer, expected in zip(fast.inverse_dynamics_derivatives(q, qd, qdd, none),
                                    slow.inverse_dynamics_derivatives(q, qd, qdd)):
            assert_close(answer, expected, f"ID derivatives with {none}", TOL)


def test_the_robots_wrenched_kernels_take_over_from_the_generic_module_once_prepared(rng):
    """A node's start-up leaves wrenched calls to the generic module for good; kernels
    prepared later answer from then on."""
    fast, slow = _load(shipped_urdf("ur5.urdf"), None, "c"), _load(shipped_urdf("ur5.urdf"),
                                                                    None, "off")
    link = _links(slow)[0]
    q, qd, qdd = rng.uniform(-1, 1, (3, fast.dof))
    wrenches = {link: rng.normal(size=6)}
    fast.prepare_kernels(frames=[link], derivatives=False, wrenches=False)
    for _ in range(2):
        assert_close(fast.inverse_dynamics(q, qd, qdd, wrenches),
                     slow.inverse_dynamics(q, qd, qdd, wrenches), "ID, generic", TOL)
    routes = fast.kernels.routes
    assert routes.wrenched["inverse_dynamics_wrenches"] is routes.single["inverse_dynamics_wrenches"]
    fast.prepare_kernels(frames=[link])
    assert_close(fast.inverse_dynamics(q, qd, qdd, wrenches),
                 slow.inverse_dynamics(q, qd, qdd, wrenches), "ID, the robot's kernel", TOL)
    assert fast.kernels.routes.wrenched["inverse_dynamics_wrenches"] is fast.kernels.routes.ready[
        ("inverse_dynamics_wrenches", (link,))]


def test_auto_mode_compiles_a_link_set_asked_for_often(rng, monkeypatch):
    monkeypatch.setattr(kernel_router, "AUTO_COMPILE_AFTER", 5)
    fast, slow = _load(shipped_urdf("ur5.urdf"), None, "auto"), _load(shipped_urdf("ur5.urdf"),
                                                                       None, "off")
    if fast.kernels[1] is None:
        pytest.fail("auto mode found no compiler: scripts/setup.sh installs one")
    link = _links(slow)[0]
    q, qd, tau = rng.uniform(-1, 1, (3, fast.dof))
    wrenches = {link: rng.normal(size=6)}
    expected = slow.forward_dynamics(q, qd, tau, wrenches)
    key = ("forward_dynamics_wrenches", (link,))
    for _ in range(6):      # the generic module answers meanwhile
        assert_close(fast.forward_dynamics(q, qd, tau, wrenches), expected, "FD", TOL)
    wait_for(lambda: key in fast.kernels.routes.ready, timeout=120.0, what="the wrenched kernel compiled")
    assert_close(fast.forward_dynamics(q, qd, tau, wrenches), expected, "FD", TOL)
    assert fast.kernels.routes.wrenched["forward_dynamics_wrenches"] is fast.kernels.routes.ready[key]


def test_a_link_over_the_size_cap_is_answered_by_the_generic_module_from_then_on(rng):
    """A 32-joint tree's wrenched derivative kernel is over the size cap: after the first
    call the generic function answers that link directly, and any set of links starting
    with it, while bad input still gets its error."""
    source = random_tree_urdf(3030, moving_joints=32)
    fast, slow = _load(source, None, "c"), _load(source, None, "off")
    name = "inverse_dynamics_derivatives_wrenches"
    links = _links(slow)
    if generator.exists(fast.tree, name):
        pytest.fail("the 32-joint tree's wrenched derivative kernel fits the cap now: "
                    "choose a larger tree for this test")
    q, qd, qdd = rng.uniform(-1, 1, (3, fast.dof))
    for chosen in (links[:1], links[:1], links, links[:1] + links[2:]):
        wrenches = {link: rng.normal(size=6) for link in chosen}
        for k, (answer, expected) in enumerate(zip(
                fast.inverse_dynamics_derivatives(q, qd, qdd, wrenches),
                slow.inverse_dynamics_derivatives(q, qd, qdd, wrenches))):
            assert_close(answer, expected, f"ID derivatives [{k}] with wrenches on {chosen}", TOL)
        assert fast.kernels.routes.wrenched[name] is fast.kernels.routes.single[name]
    with pytest.raises(InvalidInputError, match="NaN or inf"):
        fast.inverse_dynamics_derivatives(q, qd, qdd, {links[0]: np.r_[np.ones(5), np.nan]})
    with pytest.raises(UnknownNameError, match="no_such_link"):
        fast.inverse_dynamics_derivatives(q, qd, qdd, {links[0]: np.ones(6),
                                                       "no_such_link": np.ones(6)})


@pytest.mark.parametrize("source", [
    pytest.param(shipped_urdf("dual_arm_torso.urdf"), id="dual_arm_torso"),
    pytest.param(random_tree_urdf(24, moving_joints=10, mimic_fraction=0.3,
                                  prismatic_fraction=0.25, continuous_fraction=0.25),
                 id="random24"),
    pytest.param(shipped_urdf("panda.urdf"), id="panda"),
    pytest.param(random_tree_urdf(25, moving_joints=12, mimic_fraction=0.0,
                                  prismatic_fraction=0.25, continuous_fraction=0.25),
                 id="random25")])
def test_robots_without_wrenched_kernels_solve_with_their_own(source, rng, monkeypatch):
    """A robot whose wrenched kernels are over the size cap (the cap is lowered here; the
    101-joint TIAGo dual is over the real one) answers forward dynamics with wrenches by
    its own kernel at tau + G^T sum J^T w (the generic torques_with_wrenches), not by the
    generic module's slower wrenched pass; the torques of the wrenches and the
    accelerations against the numpy path, with mimic joints and without."""
    monkeypatch.setattr(generator, "MAX_WRENCHED_DYNAMICS_OPERATIONS", 10)
    monkeypatch.setattr(generator, "MAX_TRACED_OPERATIONS", 10)
    fast, slow = _load(source, None, "c"), _load(source, None, "off")
    links = _links(slow)
    fast.prepare_kernels(frames=links)
    assert not generator.exists(fast.tree, "forward_dynamics_wrenches")
    solve = fast.kernels.routes.single["forward_dynamics_wrenches"]
    assert solve.__qualname__.startswith("_forward_at_wrench_torques"), solve
    disable_numpy_path(fast, ["forward_dynamics"])
    torques_with_wrenches = fast.kernels.routes.generic["torques_with_wrenches"]
    for _ in range(3):
        q, qd, qdd = rng.uniform(-2, 2, (3, fast.dof))
        condition = np.linalg.cond(slow.mass_matrix(q))
        for chosen in (links[:1], links, links[1:2]):
            wrenches = {link: rng.normal(size=6) * 5.0 for link in chosen}
            applied = slow.gravity_torques(q) - slow.inverse_dynamics(
                q, np.zeros_like(q), np.zeros_like(q), wrenches)
            tau = slow.inverse_dynamics(q, qd, qdd, wrenches)
            assert_close(torques_with_wrenches(q, tau, wrenches, fast.kernels.parameters), tau + applied,
                         f"tau + G^T sum J^T w on {chosen}", TOL)
            assert_close(fast.forward_dynamics(q, qd, tau, wrenches),
                         slow.forward_dynamics(q, qd, tau, wrenches),
                         f"FD with wrenches on {chosen}", TOL * condition)
    enable_numpy_path(fast)
    q, qd, tau = rng.uniform(-1, 1, (3, fast.dof))
    good = {links[0]: rng.normal(size=6)}
    assert_close(fast.forward_dynamics(q, qd, list(tau), good),
                 slow.forward_dynamics(q, qd, tau, good), "a list of torques", TOL * 1e3)
    for call, error, message in (
            (lambda: fast.forward_dynamics(q, qd, np.r_[tau[:-1], np.nan], good),
             InvalidInputError, "NaN or inf"),
            (lambda: fast.forward_dynamics(q, qd, tau[:-1], good), InvalidInputError, "shape"),
            (lambda: fast.forward_dynamics(q, qd, tau, {links[0]: np.r_[np.ones(5), np.nan]}),
             InvalidInputError, "NaN or inf"),
            (lambda: fast.forward_dynamics(q, qd, tau, {**good, "no_such_link": np.ones(6)}),
             UnknownNameError, "no_such_link")):
        with pytest.raises(error, match=message):
            call()
