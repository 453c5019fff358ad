"""Descriptions the node reads: package_paths, xacro_timeout, and a xacro that never ends
(issue 12, parts 1 and 4), over real Fast DDS with the node in its own process."""
import pathlib
import signal
import threading
import time

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from sensor_msgs.msg import JointState
from std_msgs.msg import String

from support.numerics import assert_close
from support.robots import shipped_urdf
from support.ros_harness import RosClient, RosProcess
from support.waiting import wait_for
from soa_dynamics_ros.ros.process import WATCHDOG_MESSAGE
from soa_dynamics_ros.srv import GravityTorques

POSE = [0.1, -0.6, 0.2, -2.2, 0.1, 1.7, 0.6]
NAMES = [f"panda_joint{i}" for i in range(1, 8)]
TOOL_MASS = 1.75
# A fixed tool on the flange, so that the expansion visibly changed the robot.
TOOL = """  <joint name="tool_joint" type="fixed"><parent link="panda_link8"/><child link="tool"/>
    <origin xyz="0 0 0.05" rpy="0 0 0"/></joint>
  <link name="tool"><inertial><origin xyz="0.01 0 0.04" rpy="0 0 0"/><mass value="{mass}"/>
    <inertia ixx="0.002" ixy="0" ixz="0" iyy="0.002" iyz="0" izz="0.001"/></inertial></link>
"""
# A property used in the robot: xacro evaluates 9**9**9 (hours of big-integer work).
ENDLESS = """<robot name="endless" xmlns:xacro="http://www.ros.org/wiki/xacro">
  <xacro:property name="big" value="${9**9**9}"/>
  <link name="base"/>
  <joint name="j" type="revolute"><parent link="base"/><child link="arm"/><axis xyz="0 0 1"/>
    <limit lower="-1" upper="1" effort="${big}" velocity="1"/></joint>
  <link name="arm"><inertial><mass value="1"/>
    <inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link>
</robot>
"""


def panda_with_tool(mass_text):
    text = pathlib.Path(shipped_urdf("panda.urdf")).read_text()
    return text.replace("</robot>", TOOL.format(mass=mass_text) + "</robot>")


def gravity_request():
    return GravityTorques.Request(state=JointState(name=NAMES, position=POSE))


def test_package_paths_resolve_find_for_the_node(tmp_path):
    from oracles.pinocchio_reference import PinocchioReference   # skips without Pinocchio (support.optional)
    # A package only package_paths knows, holding the robot body; the top file includes it.
    package = tmp_path / "packages" / "nested" / "tool_robot_description"
    (package / "urdf").mkdir(parents=True)
    (package / "urdf" / "body.xacro").write_text(panda_with_tool("${tool_mass}"))
    top = tmp_path / "robot.urdf.xacro"
    top.write_text(f"""<robot name="panda" xmlns:xacro="http://www.ros.org/wiki/xacro">
  <xacro:property name="tool_mass" value="{TOOL_MASS}"/>
  <xacro:include filename="$(find tool_robot_description)/urdf/body.xacro"/>
</robot>""")
    common = ("-p", f"urdf_file:={top}", "-p", "kernels:='off'", "-p", "xacro_timeout:=30")

    alone = RosProcess("soa_dynamics_node", *common, log_dir=tmp_path, name="without_paths")
    alone.process.wait(60)
    assert alone.stop() == 1 and "tool_robot_description" in alone.log(), alone.log()

    node = RosProcess("soa_dynamics_node", *common, "-r", "__node:=with_paths",
                      "-p", f"package_paths:=['{tmp_path / 'packages'}']",
                      log_dir=tmp_path, name="with_paths")
    client = RosClient("package_paths_test")
    try:
        gravity = client.client(GravityTorques, "/with_paths/gravity_torques", timeout=60)
        answer = client.call(gravity, gravity_request())
        assert answer.success, answer.message
        reference = PinocchioReference(panda_with_tool(str(TOOL_MASS)), list(answer.name))
        q, zero = np.array(POSE)[[NAMES.index(n) for n in answer.name]], np.zeros(7)
        expected = reference.inverse_dynamics(q, zero, zero)
        assert_close(answer.effort, expected, "gravity of the expanded description")
        without_tool = PinocchioReference(open(shipped_urdf("panda.urdf")).read(), list(answer.name))
        assert np.abs(expected - without_tool.inverse_dynamics(q, zero, zero)).max() > 0.1
    finally:
        client.close()
        assert node.stop() == 0, node.log()


class JointStateStream:
    """Joint states published from a thread at up to ~500 Hz until stopped."""

    def __init__(self, client, pose=POSE):
        self._publisher = client.node.create_publisher(JointState, "/joint_states", 10)
        self._message = JointState(name=NAMES, position=[float(p) for p in pose])
        self._running = True
        wait_for(lambda: self._publisher.get_subscription_count() > 0, timeout=30,
                 what="the node's joint_states subscription")
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        while self._running:
            self._publisher.publish(self._message)
            time.sleep(0.002)

    def stop(self):
        self._running = False
        self._thread.join(5)


def longest_gap(arrivals, start, end):
    times = [t for t, _ in arrivals if start <= t <= end]
    assert len(times) > 10, f"only {len(times)} feedforward messages between the marks"
    return max(np.diff([start, *times, end]))


def test_an_endless_xacro_never_stalls_the_node(tmp_path):
    # xacro from the topic only where every publisher is trusted (allow_runtime_xacro).
    node = RosProcess("soa_dynamics_node", "-r", "__node:=endless", "-p", "kernels:='off'",
                      "-p", "xacro_timeout:=3.0", "-p", "allow_runtime_xacro:=true",
                      log_dir=tmp_path, name="endless")
    client = RosClient("endless_xacro_test")
    stream = None
    try:
        description = client.latched_publisher(String, "/robot_description")
        statuses = client.collect(DiagnosticArray, "/diagnostics")
        feedforward = client.collect(JointState, "/endless/feedforward_state")
        gravity = client.client(GravityTorques, "/endless/gravity_torques", timeout=60)
        panda = open(shipped_urdf("panda.urdf")).read()
        description.publish(String(data=panda))
        before = wait_for(lambda: (a := client.call(gravity, gravity_request())).success and a,
                          timeout=30, what="the Panda loaded")
        stream = JointStateStream(client)
        wait_for(lambda: len(feedforward) > 20, timeout=30, what="feedforward flowing")

        published = time.monotonic()
        description.publish(String(data=ENDLESS))
        # While xacro computes in its child, services answer (before the deadline).
        time.sleep(0.5)
        during = client.call(gravity, gravity_request(), timeout=2.0)
        assert during.success and list(during.effort) == list(before.effort)
        assert "did not finish" not in node.log()
        error = wait_for(lambda: [s for _, a in statuses for s in a.status
                                  if "did not finish within 3" in s.message], timeout=30,
                         what="the xacro deadline in /diagnostics")
        reported = time.monotonic()
        assert reported - published >= 2.5
        # Feedforward kept flowing throughout; the old behaviour (expansion in
        # the executor thread) paused it for the whole 3 s deadline.
        gap = longest_gap(feedforward, published, reported)
        assert gap < 0.5, f"feedforward paused {gap:.3f} s while the description expanded"
        assert "refused" in error[-1].message and "xacro" in node.log()
        after = client.call(gravity, gravity_request())
        assert after.success and list(after.effort) == list(before.effort)
        assert node.alive()
    finally:
        if stream is not None:
            stream.stop()
        client.close()
        assert node.stop() == 0, node.log()


def test_states_that_waited_in_a_stopped_node_are_never_answered(tmp_path):
    """SIGSTOP holds the node's middleware threads too: its reception stamps of the states
    published meanwhile are taken after SIGCONT, so only their publication time shows
    that they are stale (a reception-time rule answered them)."""
    import os
    import signal
    node = RosProcess("soa_dynamics_node", "-r", "__node:=stopped", "-p", "kernels:='off'",
                      "-p", f"urdf_file:={shipped_urdf('panda.urdf')}", "-p", "state_timeout:=0.1",
                      "-p", "diagnostics_period:=0.5", log_dir=tmp_path, name="stopped")
    client = RosClient("freshness_test")
    try:
        statuses = client.collect(DiagnosticArray, "/diagnostics")
        feedforward = client.collect(JointState, "/stopped/feedforward_state")
        publisher = client.node.create_publisher(JointState, "/joint_states", 10)
        wait_for(lambda: publisher.get_subscription_count() > 0, timeout=60, what="the node")
        fresh = JointState(name=NAMES, position=POSE)
        wait_for(lambda: publisher.publish(fresh) or feedforward, timeout=30, what="feedforward")
        wait_for(lambda: statuses, what="the node's diagnostics")
        os.kill(node.pid, signal.SIGSTOP)
        try:
            time.sleep(0.2)
            for second in range(1, 6):
                stale = JointState(name=NAMES, position=POSE)
                stale.header.stamp.sec = 7000 + second
                publisher.publish(stale)
                time.sleep(0.01)
            time.sleep(0.5)          # five times state_timeout
        finally:
            os.kill(node.pid, signal.SIGCONT)
        dropped = wait_for(lambda: [int(v.value) for _, a in statuses for s in a.status
                                    for v in s.values if v.key == "stale_joint_states_dropped"
                                    and int(v.value) > 0], timeout=10, what="stale drops counted")
        assert sum(dropped) >= 1
        marker = JointState(name=NAMES, position=POSE)
        marker.header.stamp.sec = 8000
        wait_for(lambda: publisher.publish(marker) or
                 any(m.header.stamp.sec == 8000 for _, m in feedforward), timeout=10,
                 what="feedforward for a fresh state after SIGCONT")
        answered = sorted({m.header.stamp.sec for _, m in feedforward} & set(range(7001, 7006)))
        assert not answered, f"feedforward published for stale states {answered}"
    finally:
        client.close()
        assert node.stop() == 0, node.log()


# Hung from the Panda's hand: ~1 MB of URDF, whose load held the GIL in C for seconds
# (generic.c's make_model, cubic in the chain's length, built twice; issue 43).
LARGE_CHAIN_JOINTS = 3000
CHAIN_LINK = """<joint name="chain{k}" type="revolute"><parent link="{parent}"/>
  <child link="chain_link{k}"/><origin xyz="0 0 0.01"/><axis xyz="0 1 0"/>
  <limit lower="-1" upper="1" effort="10" velocity="1"/></joint>
<link name="chain_link{k}"><inertial><mass value="0.01"/>
  <inertia ixx="1e-6" ixy="0" ixz="0" iyy="1e-6" iyz="0" izz="1e-6"/></inertial></link>
"""
# What the node logs on a forced exit (soa_dynamics_ros/ros/process.py): its watchdog's
# line, and faulthandler's header of the stacks it dumps when the GIL is never released.
FORCED_EXIT_MARKS = (WATCHDOG_MESSAGE.split("{")[0], "Timeout (")


def panda_with_chain(joints):
    parents = ["panda_link8"] + [f"chain_link{k}" for k in range(joints - 1)]
    chain = "".join(CHAIN_LINK.format(k=k, parent=parent) for k, parent in enumerate(parents))
    return open(shipped_urdf("panda.urdf")).read().replace("</robot>", chain + "</robot>")


def test_a_large_description_loads_beside_the_serving_model_and_a_signal_ends_it(tmp_path):
    """Compiled kernels on (the generic module builds the large model): feedforward and
    services keep answering with the Panda while the large description loads, and
    SIGTERM during a second such load ends the node by itself.  Before, feedforward
    stopped for the seconds make_model held the GIL, and a signal waited for it."""
    node = RosProcess("soa_dynamics_node", "-r", "__node:=large", log_dir=tmp_path, name="large")
    client = RosClient("large_description_test")
    stream = None
    try:
        description = client.latched_publisher(String, "/robot_description")
        feedforward = client.collect(JointState, "/large/feedforward_state")
        gravity = client.client(GravityTorques, "/large/gravity_torques", timeout=60)
        description.publish(String(data=open(shipped_urdf("panda.urdf")).read()))
        before = wait_for(lambda: (a := client.call(gravity, gravity_request())).success and a,
                          timeout=60, what="the Panda loaded")
        stream = JointStateStream(client)
        wait_for(lambda: len(feedforward) > 20, timeout=30, what="feedforward flowing")

        published = time.monotonic()
        description.publish(String(data=panda_with_chain(LARGE_CHAIN_JOINTS)))
        during = client.call(gravity, gravity_request(), timeout=30.0)
        assert during.success and list(during.effort) == list(before.effort)
        wait_for(lambda: node.log().count("loaded from /robot_description") == 2, timeout=600,
                 what="the large description loaded")
        loaded = time.monotonic()
        gap = longest_gap(feedforward, published, loaded)
        assert gap < 1.0, f"feedforward paused {gap:.3f} s while the large description loaded"

        description.publish(String(data=panda_with_chain(LARGE_CHAIN_JOINTS + 1)))
        time.sleep(1.0)      # into the load (seconds of parsing and building)
        stream.stop()
        stream = None
        node.process.send_signal(signal.SIGTERM)
        node.process.wait(60)
        log = node.log()
        assert node.process.returncode == 0, log
        assert not [mark for mark in FORCED_EXIT_MARKS if mark in log], log
    finally:
        if stream is not None:
            stream.stop()
        client.close()
        node.stop()
