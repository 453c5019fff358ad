"""An idle node wakes only for its diagnostics: each executor wake-up delays a joint state.

The node runs in this process here (real rclpy, its own context) so that its
timers can be inspected; test_node.py's reload tests run it as its own process.
"""
import pathlib
import time

import pytest
import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.parameter import Parameter

from soa_dynamics_ros.ros.node import EmbeddedModelNode

REPO = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture
def node():
    context = rclpy.Context()
    rclpy.init(context=context)
    node = EmbeddedModelNode(context=context, parameter_overrides=[
        Parameter("urdf_file", value=str(REPO / "urdf" / "double_pendulum.urdf")),
        Parameter("kernels", value="off")])        # no warm-up: idle once loaded
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    try:
        yield node, executor
    finally:
        executor.shutdown()
        node.destroy_node()
        rclpy.shutdown(context=context)


def test_background_poll_runs_only_while_a_load_is_under_way(node):
    node, executor = node
    assert node.host.live.model.name == "double_pendulum"
    assert not node.polling_background_work, "an idle node polls for background work"
    # (the poll's own timer is among the canceled ones)
    assert not [t for t in node.timers if not t.is_canceled() and t.timer_period_ns < 1e9], \
        "a timer faster than the diagnostics runs on an idle node"

    ur5 = (REPO / "urdf" / "ur5.urdf").read_text()
    assert node.set_parameters([Parameter("robot_description", value=ur5)])[0].successful
    assert node.polling_background_work, "a load is under way but nothing polls it"
    deadline = time.monotonic() + 30.0
    while node.host.live.model.name != "ur5" and time.monotonic() < deadline:
        executor.spin_once(timeout_sec=0.1)
    assert node.host.live.model.name == "ur5", "the new description was never installed"
    assert not node.polling_background_work, "the poll went on after the load"


def test_a_refused_description_ends_the_poll_too(node):
    node, executor = node
    broken = "<robot name='x'><joint/></robot>"
    assert node.set_parameters([Parameter("robot_description", value=broken)])[0].successful
    deadline = time.monotonic() + 30.0
    while not node.host.description_error and time.monotonic() < deadline:
        executor.spin_once(timeout_sec=0.1)
    assert node.host.description_error, "the broken description was never reported"
    assert node.host.live.model.name == "double_pendulum"
    assert not node.polling_background_work, "the poll went on after a refused load"
