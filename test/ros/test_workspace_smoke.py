"""The package as installed, started the way a ROS user starts it.

``ros2 run soa_dynamics_ros soa_dynamics_node --ros-args --params-file <share>/config/...``:
the executable from lib/<package> and the parameters from share/<package>, both
found through the ament index (a colcon workspace's install/, or the .venv of
scripts/setup.sh).  Feedforward for a few states, this robot's kernels generated
and compiled on the numpy at hand, one service call, SIGINT exits 0.
scripts/ci_workspace.sh runs it in the Jazzy and Kilted workspaces.
"""
import math
import os

import pytest
from diagnostic_msgs.msg import DiagnosticArray
from sensor_msgs.msg import JointState

from support.installation import EXECUTABLES, SHARE
from support.numerics import assert_close
from support.ros_harness import RosClient, RosProcess, joint_state, publish_and_wait
from support.waiting import wait_for
from soa_dynamics_ros.srv import GravityTorques

JOINTS = ["joint1", "joint2"]
STATES = [(0.0, 0.0), (0.4, -0.3), (-0.3, 0.5), (0.2, -0.9)]   # within the 10 N m effort limits


def acrobot_gravity_torques(q1, q2, g=9.81):
    """dV/dq of urdf/double_pendulum.urdf (Spong's Acrobot: m1 = m2 = 1 kg, l1 = 1 m,
    lc1 = 0.5 m, lc2 = 1 m), hanging along -z at q = 0 and turning about +y."""
    return [g * (0.5 * math.sin(q1) + math.sin(q1) + math.sin(q1 + q2)), g * math.sin(q1 + q2)]


@pytest.fixture(scope="module")
def client():
    ros = RosClient("workspace_smoke_client")
    yield ros
    ros.close()


def kernels_status(reports):
    values = {kv.key: kv.value for _, report in list(reports) for status in report.status
              for kv in status.values}
    return values.get("kernels")


def test_installed_node_serves_feedforward_and_a_service_and_exits_cleanly(client, tmp_path):
    executable, params = EXECUTABLES / "soa_dynamics_node", SHARE / "config" / "double_pendulum.yaml"
    assert os.access(executable, os.X_OK), f"{executable} is not executable"
    assert params.is_file(), f"{params} is not installed"
    node = RosProcess("soa_dynamics_node", "--params-file", str(params),
                      "-p", "feedforward_ramp_time:=0.0", "-p", "diagnostics_period:=0.2",
                      log_dir=tmp_path, name="smoke_node")
    try:
        reports = client.collect(DiagnosticArray, "/diagnostics")
        feedforward = client.collect(JointState, "/soa_dynamics/feedforward_state")
        joint_states = client.publisher(JointState, "/joint_states")
        # This robot's own kernels are generated and compiled (in a child process) on this
        # numpy; until then the node answers on another path, so wait for them first.
        wait_for(lambda: kernels_status(reports) == "compiled", 300,
                 what="the node's kernels compiled (diagnostics 'kernels')")
        for q in STATES:
            effort = publish_and_wait(joint_states, feedforward, joint_state(JOINTS, q), timeout=30)
            assert_close(effort, acrobot_gravity_torques(*q), f"feedforward at q = {q}", 1e-12)
        service = client.client(GravityTorques, "/soa_dynamics/gravity_torques")
        answer = client.call(service, GravityTorques.Request(state=joint_state(JOINTS, (0.3, 0.9))),
                             timeout=30)
        assert answer.success, answer.message
        assert list(answer.name) == JOINTS
        assert_close(answer.effort, acrobot_gravity_torques(0.3, 0.9), "gravity_torques service", 1e-12)
    finally:
        code = node.stop()
    assert code == 0, f"the node did not exit 0 on SIGINT ({code}):\n{node.log()}"
    assert "kernel compilation failed" not in node.log()
