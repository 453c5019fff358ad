"""Descriptions that arrive over ROS are data, never code nor a file path (issue 43), over
real Fast DDS with the node in its own process."""
import pathlib

from diagnostic_msgs.msg import DiagnosticArray
from sensor_msgs.msg import JointState
from std_msgs.msg import String

from support.hostile_descriptions import SECRET, sandbox_escape, secret_in_an_error
from support.robots import shipped_urdf
from support.ros_harness import RosClient, RosProcess
from support.sim_harness import set_parameters
from support.waiting import wait_for
from soa_dynamics_ros.srv import GravityTorques

PANDA_JOINTS = [f"panda_joint{i}" for i in range(1, 8)]


def refusals(node):
    return node.log().count(" refused: ")


def test_descriptions_from_the_graph_are_never_run_nor_opened(tmp_path, monkeypatch):
    monkeypatch.setenv("SOA_TEST_SECRET", SECRET)      # in the node's environment
    secrets = tmp_path / "secrets.yaml"
    secrets.write_text(f"token: {SECRET}\n")
    markers = [tmp_path / "ran_from_topic", tmp_path / "ran_from_parameter"]
    node = RosProcess("soa_dynamics_node", "-r", "__node:=untrusted", "-p", "kernels:='off'",
                      "-p", "diagnostics_period:=0.5", log_dir=tmp_path, name="untrusted")
    client = RosClient("untrusted_descriptions_test")
    try:
        description = client.latched_publisher(String, "/robot_description")
        no_state = GravityTorques.Request(state=JointState())
        gravity = client.client(GravityTorques, "/untrusted/gravity_torques", timeout=60)
        statuses = client.collect(DiagnosticArray, "/diagnostics")

        def refused(text, count):
            description.publish(String(data=text))
            wait_for(lambda: refusals(node) >= count, timeout=30, what=f"refusal {count}")
            return node.log().splitlines()[-1]

        line = refused(sandbox_escape(markers[0]), 1)
        assert "uses xacro" in line and "allow_runtime_xacro" in line, line
        line = refused(secret_in_an_error(secrets), 2)
        assert "uses xacro" in line, line
        # A string on the topic is never a path: neither a secret file nor a real URDF.
        line = refused(str(secrets), 3)
        assert "never opened as a file path" in line, line
        line = refused(shipped_urdf("panda.urdf"), 4)
        assert "never opened as a file path" in line, line
        assert "no robot model loaded" in client.call(gravity, no_state).message

        panda = pathlib.Path(shipped_urdf("panda.urdf")).read_text()
        description.publish(String(data=panda))
        wait_for(lambda: "loaded from /robot_description" in node.log(), timeout=30,
                 what="the Panda from the topic")
        # A parameter changed over ROS is no more trusted with xacro than the topic; it may
        # name a file, whose contents never show.
        set_parameters(client, "/untrusted", robot_description=sandbox_escape(markers[1]))
        wait_for(lambda: refusals(node) >= 5, timeout=30, what="the refused parameter")
        assert "allow_runtime_xacro" in node.log().splitlines()[-1]
        set_parameters(client, "/untrusted", robot_description="/proc/self/environ")
        wait_for(lambda: refusals(node) >= 6, timeout=30, what="the refused urdf_file")
        assert "'/proc/self/environ' is not XML" in node.log().splitlines()[-1]
        wait_for(lambda: [s for _, a in statuses for s in a.status
                          if "'/proc/self/environ' is not XML" in s.message], timeout=30,
                 what="the refusal in /diagnostics")

        assert not [marker for marker in markers if marker.exists()], "xacro ran topic data"
        shown = node.log() + "".join(s.message + "".join(v.value for v in s.values)
                                     for _, a in statuses for s in a.status)
        assert SECRET not in shown
        # The Panda served throughout.
        pose = GravityTorques.Request(state=JointState(name=PANDA_JOINTS, position=[0.3] * 7))
        assert client.call(gravity, pose).success
    finally:
        client.close()
        assert node.stop() == 0, node.log()


def test_a_urdf_file_that_is_not_a_urdf_ends_start_up_without_its_contents(tmp_path,
                                                                          monkeypatch):
    monkeypatch.setenv("SOA_TEST_SECRET", SECRET)
    node = RosProcess("soa_dynamics_node", "-r", "__node:=environ", "-p", "kernels:='off'",
                      "-p", "urdf_file:=/proc/self/environ", log_dir=tmp_path, name="environ")
    node.process.wait(60)
    log = node.log()
    assert node.stop() == 1, log
    assert "robot description file '/proc/self/environ' is not XML" in log, log
    assert SECRET not in log and "SOA_TEST_SECRET" not in log, log
