"""The embedded layer without ROS: description loading, reloads, withholding, staleness, the ellipsoid.

Everything here runs without rclpy (the first test checks the layer never
imports it); the node tests cover the same behaviour through the graph.
"""
import pathlib
import shutil
import subprocess
import sys
import threading

import numpy as np
import pytest

from support.hostile_descriptions import sandbox_escape
from support.robots import REPO, shipped_urdf
from support.small_robots import two_link_arm
from support.waiting import wait_for
from oracles.pinocchio_reference import PinocchioReference
from soa_dynamics_ros import RobotModel
from soa_dynamics_ros.embedded.description_loader import DescriptionLoader
from soa_dynamics_ros.embedded.live_model import LiveModel
from soa_dynamics_ros.embedded import model_host as model_host_module
from soa_dynamics_ros.embedded.model_host import (EXPANDED, MAX_DESCRIPTION_LINKS,
                                                  WITHHELD_LOG_PERIOD, ModelHost)
from soa_dynamics_ros.errors import InvalidInputError, StaleStateError, UnknownNameError, URDFError
from soa_dynamics_ros.ros.parameters import PARAMETERS

PANDA = shipped_urdf("panda.urdf")
EMBEDDED_MODULES = sorted(path.stem for path in (REPO / "soa_dynamics_ros" / "embedded").glob("*.py")
                          if path.stem != "__init__")


def test_embedded_layer_imports_without_ros():
    assert {"live_model", "model_host", "description_loader", "warmup"} <= set(EMBEDDED_MODULES)
    imports = "; ".join(f"import soa_dynamics_ros.embedded.{name}" for name in EMBEDDED_MODULES)
    code = (f"import sys; {imports}; "
            "ros = sorted(m for m in sys.modules if m.split('.')[0] in ('rclpy', 'rosidl_runtime_py')); "
            "assert not ros, ros")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)


# Loads run in a worker thread on a machine shared with other tests.
LOAD_TIMEOUT = 30.0


class RecordingLogger:
    """The logger interface ModelHost uses (rclpy's and logging's share it), kept as a list."""

    def __init__(self):
        self.lines = []

    def info(self, text):
        self.lines.append(("info", text))

    def warning(self, text):
        self.lines.append(("warning", text))

    def error(self, text):
        self.lines.append(("error", text))

    def containing(self, text):
        return [line for line in self.lines if text in line[1]]


def config(**changes):
    values = {name: spec.default for name, spec in PARAMETERS.items()}
    # No ramp: answers are compared with the law (test_feedforward_gravity_and_ramp.py: the ramp).
    values.update(package_paths=[], command_joints=[], payloads=[], kernels="off",
                  feedforward_ramp_time=0.0)
    return {**values, **changes}


# ---------------------------------------------------------------------- description loader
def test_loader_answers_only_the_newest_request_and_survives_any_error():
    release = threading.Event()
    started = []

    def load(description):
        started.append(description)
        if description == "slow":
            release.wait(30)
        if description == "bad":
            raise URDFError("not a robot")
        if description == "bug":
            raise KeyError("surprise")
        return description.upper(), None
    loader = DescriptionLoader(load)
    try:
        loader.request("slow", "first")
        wait_for(lambda: started == ["slow"], timeout=LOAD_TIMEOUT,
                 what="the first load starting")
        loader.request("dropped", "second")      # waiting, then replaced: never started
        loader.request("newest", "third")
        release.set()
        loaded = wait_for(loader.take_finished, timeout=LOAD_TIMEOUT, what="the newest load")
        assert (loaded.source, loaded.model, loaded.error) == ("third", "NEWEST", "")
        assert started == ["slow", "newest"]
        assert loader.take_finished() is None    # taken once
        loader.request("bad", "topic")
        assert wait_for(loader.take_finished, timeout=LOAD_TIMEOUT).error == "not a robot"
        loader.request("bug", "topic")
        assert (wait_for(loader.take_finished, timeout=LOAD_TIMEOUT).error
                == "internal error: KeyError: 'surprise'")
        loader.request("fine", "topic")          # the worker outlived both
        assert wait_for(loader.take_finished, timeout=LOAD_TIMEOUT).model == "FINE"
    finally:
        release.set()
        loader.close()


# ---------------------------------------------------------------------- the host
@pytest.fixture
def logger():
    return RecordingLogger()


@pytest.fixture
def host(logger):
    host = ModelHost(config(urdf_file=PANDA), logger)
    host.load_now(PANDA, "parameters")
    yield host
    host.close()


def measure(host, position, now=0.0):
    names = host.live.model.joint_names
    update = host.live.update_state(names, position, np.zeros(len(names)), now)
    assert update.accepted


def test_new_settings_keep_the_measured_state_and_refused_ones_change_nothing(host):
    measure(host, np.full(7, 0.3))
    host.live.set_desired_acceleration([], np.full(7, 0.5))
    first = host.live
    host.reconfigure({**host.config, "state_timeout": 0.2}, {"state_timeout"})
    assert host.live is not first and host.live.state_timeout == 0.2
    np.testing.assert_array_equal(host.live.position, np.full(7, 0.3))
    np.testing.assert_array_equal(host.live.received_at, first.received_at)
    np.testing.assert_array_equal(host.live.desired_acceleration, np.full(7, 0.5))

    before = (host.live, dict(host.config))
    with pytest.raises(UnknownNameError, match="panda_joint9"):
        host.reconfigure({**host.config, "command_joints": ["panda_joint9"],
                          "state_timeout": 1.0}, {"command_joints", "state_timeout"})
    assert (host.live, host.config) == before


def test_a_reloaded_description_inherits_state_and_the_payloads_that_fit(host, logger):
    measure(host, np.full(7, 0.2))
    host.live.model.attach_payload("tool", "panda_hand", 1.5)
    host.live.model.attach_payload("on_tcp", "panda_hand_tcp", 0.5)
    # The same arm without its tcp link.
    text = pathlib.Path(PANDA).read_text()
    start = text.index('<joint name="panda_hand_tcp_joint"')
    trimmed = text[:start] + text[text.index("</joint>", start) + len("</joint>"):]
    trimmed = trimmed.replace('<link name="panda_hand_tcp"/>', "")
    host.request(trimmed, "/robot_description")
    old = host.live
    wait_for(lambda: host.poll() or host.live is not old, timeout=LOAD_TIMEOUT, what="the reload")
    assert "panda_hand_tcp" not in host.live.model.frame_names
    assert list(host.live.model.payloads) == ["tool"]
    assert logger.containing("payload 'on_tcp' dropped: the new model has no link "
                                  "'panda_hand_tcp'")
    np.testing.assert_array_equal(host.live.position, np.full(7, 0.2))
    # The inherited payload is in the physics: gravity torques against Pinocchio's
    # model of the trimmed arm with the same mass attached.
    reference = PinocchioReference(trimmed, host.live.model.joint_names)
    reference.attach("panda_hand", 1.5, np.zeros(3), np.zeros((3, 3)))
    q = np.full(7, 0.2)
    np.testing.assert_allclose(host.live.model.gravity_torques(q),
                               reference.inverse_dynamics(q, np.zeros(7), np.zeros(7)),
                               rtol=0, atol=1e-9)


def test_a_refused_description_keeps_the_model_and_says_why(host, logger):
    old = host.live
    host.request("<robot name='broken'>", "/robot_description")
    wait_for(lambda: host.poll() or host.description_error, timeout=LOAD_TIMEOUT,
             what="the refusal")
    assert host.live is old
    assert host.description_error.startswith("robot description from /robot_description refused:")
    assert logger.containing("(keeping the previous model)")


# Two links, so that its kernels compile in seconds in the warm-up child.
TWO_LINKS = two_link_arm(elbow=0.4)
# TWO_LINKS as xacro: an effort limit computed by an expression.
TWO_LINKS_XACRO = TWO_LINKS.replace('effort="100"', 'effort="${50 * 2}"', 1)


def _outcome(host, before):
    """The description_error, or "" once a new model is live, of the newest request."""
    wait_for(lambda: host.poll() or host.background_work is False, timeout=LOAD_TIMEOUT,
             what="the load")
    return "" if host.live is not before else host.description_error


def test_what_a_description_may_do_depends_on_where_it_came_from(tmp_path, logger):
    marker = tmp_path / "ran"
    host = ModelHost(config(robot_description=TWO_LINKS_XACRO), logger)
    try:
        host.load_now(TWO_LINKS_XACRO, "parameters")       # start-up: xacro is expanded
        assert host.live.model.description.joints["shoulder"].effort == 100.0
        for description in (sandbox_escape(marker), TWO_LINKS_XACRO):
            host.request(description, "/robot_description")
            assert "allow_runtime_xacro" in _outcome(host, host.live)
        host.request(PANDA, "/robot_description")
        assert "never opened as a file path" in _outcome(host, host.live)
        changed = {**host.config, "robot_description": sandbox_escape(marker)}
        host.reconfigure(changed, {"robot_description"})
        assert "allow_runtime_xacro" in _outcome(host, host.live)
        assert not marker.exists()
        # A parameter may name a file (urdf_file can); the kernel cache's URDF, already
        # expanded, is taken as it is: a ${...} left in it is text, not run again.
        host.reconfigure({**host.config, "robot_description": PANDA}, {"robot_description"})
        assert _outcome(host, host.live) == "" and host.live.model.dof == 7
        expanded = TWO_LINKS.replace("</robot>", "<gazebo><plugin>${kept}</plugin></gazebo></robot>")
        host.request(expanded, "the kernel cache", EXPANDED)
        assert _outcome(host, host.live) == "" and host.live.model.name == "two_links"
    finally:
        host.close()
    trusting = ModelHost(config(allow_runtime_xacro=True), logger)
    try:
        trusting.request(TWO_LINKS_XACRO, "/robot_description")
        assert _outcome(trusting, None) == "" and trusting.live.model.dof == 2
    finally:
        trusting.close()


# The warm-up child compiles at the lowest CPU priority on a machine shared with other tests.
WARMUP_TIMEOUT = 180.0


def _kernel_cache(tmp_path, monkeypatch, with_generic):
    """A kernel cache new to the robot (empty); the generic module installed or not."""
    from soa_dynamics_ros import kernels
    prebuilt = tmp_path / "prebuilt"
    prebuilt.mkdir()
    if with_generic:    # a copy of the one this process uses (setup.sh installs it)
        library = kernels.generic_module().__file__
        shutil.copy(library, prebuilt)
        shutil.copy(kernels.build.record_path(library), prebuilt)   # or it is not loaded
    monkeypatch.setenv("SOA_DYNAMICS_PREBUILT", str(prebuilt))
    monkeypatch.setenv("SOA_DYNAMICS_CACHE", str(tmp_path / "cache"))


def _gravity(q):
    return PinocchioReference(TWO_LINKS, ["shoulder", "elbow"]).inverse_dynamics(
        q, np.zeros(2), np.zeros(2))


def test_a_robot_new_to_the_machine_gets_compiled_feedforward_from_its_first_state(
        tmp_path, monkeypatch, logger):
    _kernel_cache(tmp_path, monkeypatch, with_generic=True)
    host = ModelHost(config(robot_description=TWO_LINKS, kernels="auto"), logger)
    try:
        host.load_now(TWO_LINKS, "parameters")
        assert host.live.model.kernels == ("generic", "c")
        assert host.kernels_status() == "generic compiled module (this robot's kernels compiling)"
        assert logger.containing("the generic compiled module answers meanwhile")
        q = np.array([0.4, -0.7])
        measure(host, q)
        np.testing.assert_allclose(host.feedforward(0.01).effort, _gravity(q), rtol=0, atol=1e-12)
        wait_for(lambda: host.poll() or host.kernels_status() == "compiled", WARMUP_TIMEOUT,
                 what="this robot's kernels compiled in the child and loaded")
        assert host.live.model.kernels == ("c", "c")
        # The reloaded model carries the measured state over and answers the same.
        np.testing.assert_allclose(host.feedforward(0.02).effort, _gravity(q), rtol=0, atol=1e-12)
    finally:
        host.close()


def test_a_robot_new_to_the_machine_gets_its_generic_model_built_once(
        tmp_path, monkeypatch, logger):
    """The load asks whether the robot's own kernels are cached, then serves the generic
    module: one build of the tree's generic model (a large tree's takes long; the load
    built it for each of the two kernel modes)."""
    _kernel_cache(tmp_path, monkeypatch, with_generic=True)
    from soa_dynamics_ros import kernels
    module = kernels.generic_module()
    builds = []
    make_model = module.make_model
    monkeypatch.setattr(module, "make_model",
                        lambda *packed: builds.append(packed) or make_model(*packed))
    host = ModelHost(config(robot_description=TWO_LINKS, kernels="auto"), logger)
    try:
        model, warmup = host.load(TWO_LINKS, EXPANDED)
        assert warmup is not None and model.kernels == ("generic", "c")
        assert len(builds) == 1
    finally:
        host.close()


def _bare_links(count):
    """URDF text of ``count`` links: a moving one on the base, bare ones on fixed joints."""
    chain = "".join(f'<joint name="f{k}" type="fixed"><parent link="l{k - 1}"/>'
                    f'<child link="l{k}"/></joint><link name="l{k}"/>' for k in range(2, count))
    return ('<robot name="bare_links"><link name="l0"/><joint name="j" type="revolute">'
            '<parent link="l0"/><child link="l1"/><axis xyz="0 0 1"/>'
            '<limit lower="-1" upper="1" effort="1" velocity="1"/></joint>'
            '<link name="l1"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" '
            f'ixy="0" ixz="0" iyz="0"/></inertial></link>{chain}</robot>')


def test_a_description_over_the_link_bound_is_refused_before_it_is_parsed(monkeypatch, logger):
    """A 50,000-link description took the loader seconds of Python whose garbage
    collections paused the serving thread; one past the bound is refused from its text."""
    host = ModelHost(config(), logger)
    try:
        model_host_module.check_description_size(_bare_links(MAX_DESCRIPTION_LINKS))
        monkeypatch.setattr(RobotModel, "from_urdf", _never_parsed)
        with pytest.raises(URDFError, match=f"has {MAX_DESCRIPTION_LINKS + 1} <link> tags; at "
                                            f"most {MAX_DESCRIPTION_LINKS} are served"):
            host.load(_bare_links(MAX_DESCRIPTION_LINKS + 1), EXPANDED)
    finally:
        host.close()


def _never_parsed(*_, **__):
    raise AssertionError("the description was parsed")


def test_without_the_generic_module_feedforward_waits_for_the_child(tmp_path, monkeypatch, logger):
    _kernel_cache(tmp_path, monkeypatch, with_generic=False)
    host = ModelHost(config(robot_description=TWO_LINKS, kernels="auto"), logger)
    try:
        host.load_now(TWO_LINKS, "parameters")
        assert host.live.model.kernels == ("off", None)
        assert host.kernels_status() == "numpy path (kernels compiling)"
        measure(host, np.array([0.4, -0.7]))
        assert host.feedforward(0.01).reason == "compiled kernels not ready yet"
        assert logger.containing("feedforward waits")
    finally:
        host.close()


def test_feedforward_waits_for_compiled_kernels_and_withholding_is_logged_sparingly(host, logger):
    measure(host, np.zeros(7), now=0.0)
    host.awaiting_kernels = True
    result = host.feedforward(0.01)
    assert result.effort is None and result.reason == "compiled kernels not ready yet"
    host.awaiting_kernels = False
    gravity = host.feedforward(0.01).effort
    np.testing.assert_allclose(gravity, PinocchioReference(pathlib.Path(PANDA).read_text(),
                               host.live.model.joint_names).inverse_dynamics(
                                   np.zeros(7), np.zeros(7), np.zeros(7)), rtol=0, atol=1e-9)
    for now in (10.0, 10.0 + WITHHELD_LOG_PERIOD / 2, 10.0 + WITHHELD_LOG_PERIOD):
        host.withhold("stale", now)
    assert len(logger.containing("feedforward withheld: stale")) == 2
    host.resume()
    host.resume()
    assert len(logger.containing("feedforward resumed")) == 1
    host.reconfigure({**host.config, "feedforward_mode": "off"}, {"feedforward_mode"})
    assert host.feedforward(0.01) is None


# ---------------------------------------------------------------------- staleness, ellipsoid
def test_staleness_is_a_typed_error_naming_the_stale_joints():
    live = LiveModel(RobotModel.from_urdf(PANDA, kernels="off"), state_timeout=0.05)
    names = live.model.joint_names
    live.update_state(names, np.zeros(7), [], now=0.0)
    live.update_state(names[:3], np.zeros(3), [], now=0.1)
    result = live.feedforward("gravity", 0.1)
    assert result.effort is None and isinstance(result.error, StaleStateError)
    assert result.error.joints == names[3:] and result.reason == str(result.error)
    with pytest.raises(StaleStateError) as raised:
        live.inertia_ellipsoid("panda_hand_tcp", 0.1)
    assert raised.value.joints == names[3:]


def test_inertia_ellipsoid_against_pinocchio():
    live = LiveModel(RobotModel.from_urdf(PANDA, kernels="off"))
    q = np.array([0.3, -0.5, 0.2, -2.0, 0.1, 1.6, 0.7])
    live.update_state(live.model.joint_names, q, [], now=0.0)
    ellipsoid = live.inertia_ellipsoid("panda_hand_tcp", 0.0)
    reference = PinocchioReference(pathlib.Path(PANDA).read_text(), live.model.joint_names)
    np.testing.assert_allclose(ellipsoid.center, reference.frame_pose(q, "panda_hand_tcp")[:3, 3],
                               rtol=0, atol=1e-12)
    rotation = ellipsoid.rotation
    np.testing.assert_allclose(rotation.T @ rotation, np.eye(3), rtol=0, atol=1e-12)
    assert np.linalg.det(rotation) == pytest.approx(1.0)
    # Each semi-axis end x lies on x^T Lambda x = 1, Lambda = (J_v M^-1 J_v^T)^-1 from Pinocchio.
    inertia = np.linalg.inv(reference.task_space_compliance(q, ["panda_hand_tcp"])[:3, :3])
    for axis, diameter in zip(rotation.T, ellipsoid.diameters):
        end = axis * diameter / 2
        assert end @ inertia @ end == pytest.approx(1.0, rel=1e-5)


def test_startup_payloads_go_on_the_first_model_only(logger):
    box = dict(name="box", link="panda_hand", mass=2.0, com=[0.0, 0.0, 0.1], inertia=None)
    host = ModelHost(config(urdf_file=PANDA), logger, startup_payloads=lambda: [box])
    try:
        host.load_now(PANDA, "parameters")
        assert host.live.model.payloads["box"][:2] == ("panda_hand", 2.0)
        assert logger.containing("payload 'box' attached from parameters")
        host.reconfigure({**host.config, "state_timeout": 0.2}, {"state_timeout"})
        assert list(host.live.model.payloads) == ["box"]
        assert len(logger.containing("attached from parameters")) == 1
    finally:
        host.close()


def test_a_request_state_with_nan_or_inf_is_refused_whole_even_where_unread():
    """Issue 43: a gravity request answered as if its inf velocity were not there."""
    live = LiveModel(RobotModel.from_urdf(PANDA, kernels="off"))
    names = live.model.joint_names
    q = np.array([0.3, -0.5, 0.2, -2.0, 0.1, 1.6, 0.7])
    for positions, velocities, refused in ((q, np.r_[np.inf, np.zeros(6)], r"velocity.*\[0\]"),
                                           (q, np.r_[np.zeros(6), np.nan], r"velocity.*\[6\]"),
                                           (np.r_[q[:6], -np.inf], [], r"position.*\[6\]")):
        with pytest.raises(InvalidInputError, match=refused):
            live.merged_state(names, positions, velocities)
    merged_q, merged_qd = live.merged_state(names, q, [])
    np.testing.assert_array_equal(merged_q, q)
    np.testing.assert_array_equal(merged_qd, np.zeros(7))
