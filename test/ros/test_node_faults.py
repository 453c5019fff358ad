"""Stale and faulty data around a running node: stop/resume/jump, model swaps, clock jumps."""
import time

import numpy as np
import pytest
from builtin_interfaces.msg import Time
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String

from support.numerics import assert_close
from support.robots import shipped_urdf
from support.ros_harness import RosClient, RosProcess
from support.waiting import wait_for
from soa_dynamics_ros import RobotModel

PANDA = RobotModel.from_urdf(shipped_urdf("panda.urdf"))
UR5 = RobotModel.from_urdf(shipped_urdf("ur5.urdf"))


@pytest.fixture
def client():
    ros = RosClient("faults_client")
    yield ros
    ros.close()


def _state(model, q, stamp=None):
    message = JointState(name=model.joint_names, position=[float(x) for x in q])
    if stamp is not None:
        message.header.stamp = stamp
    return message


# Each answer is compared with the law itself (test_node_ramp.py: the ramp).
NO_RAMP = ("-p", "feedforward_ramp_time:=0.0")


def test_stop_resume_and_jumps(client, tmp_path):
    node = RosProcess("soa_dynamics_node", "-p", "urdf_file:=urdf/panda.urdf", *NO_RAMP, "-r",
                      "__node:=faults", log_dir=tmp_path, name="faults")
    try:
        feedforward = client.collect(Float64MultiArray, "/faults/feedforward")
        publisher = client.node.create_publisher(JointState, "/joint_states", 10)
        q = np.full(7, 0.2)
        wait_for(lambda: publisher.publish(_state(PANDA, q)) or feedforward, what="feedforward")
        # Stop: nothing more is published once the states stop.
        time.sleep(0.3)
        count = len(feedforward)
        time.sleep(0.3)
        assert len(feedforward) == count
        # Resume with a large jump: the answer follows the new state at once.
        jumped = q + np.array([1.0, -0.8, 0.5, -1.0, 0.9, 1.2, -2.0])
        for _ in range(5):
            publisher.publish(_state(PANDA, jumped))
            time.sleep(0.02)
        wait_for(lambda: len(feedforward) > count, what="feedforward after resuming")
        assert_close(feedforward[-1][1].data, PANDA.gravity_torques(jumped), "after the jump", 1e-12)
        # Header stamps going backwards do not matter: freshness is arrival time.
        count = len(feedforward)
        for sec in (100, 50, 10):
            publisher.publish(_state(PANDA, q, Time(sec=sec)))
            time.sleep(0.02)
        wait_for(lambda: len(feedforward) >= count + 3, what="an answer to each backwards stamp")
        assert_close(feedforward[-1][1].data, PANDA.gravity_torques(q), "stamps backwards", 1e-12)
    finally:
        assert node.stop() == 0, node.log()


def test_description_change_mid_run_never_mixes_models(client, tmp_path):
    node = RosProcess("soa_dynamics_node", *NO_RAMP, "-r", "__node:=swap", log_dir=tmp_path,
                      name="swap")
    try:
        feedforward = client.collect(Float64MultiArray, "/swap/feedforward")
        description = client.latched_publisher(String, "/robot_description")
        publisher = client.node.create_publisher(JointState, "/joint_states", 10)
        description.publish(String(data=open(shipped_urdf("panda.urdf")).read()))
        q_panda, q_ur5 = np.full(7, 0.3), np.full(6, -0.4)
        wait_for(lambda: publisher.publish(_state(PANDA, q_panda)) or feedforward, what="panda feedforward")
        description.publish(String(data=open(shipped_urdf("ur5.urdf")).read()))
        # Panda states keep coming: the UR5 model knows none of those joints, so
        # nothing may be published until UR5 states arrive.
        wait_for(lambda: "model 'ur5' loaded from /robot_description" in node.log(),
                 what="the UR5 model")
        time.sleep(0.3)          # answers to the Panda states sent before may still arrive
        count = len(feedforward)
        for _ in range(20):
            publisher.publish(_state(PANDA, q_panda))
            time.sleep(0.01)
        assert len(feedforward) == count
        wait_for(lambda: publisher.publish(_state(UR5, q_ur5)) or len(feedforward) > count,
                 what="UR5 feedforward")
        last = feedforward[-1][1].data
        assert len(last) == 6
        assert_close(last, UR5.gravity_torques(q_ur5), "UR5 torques", 1e-12)
        assert all(len(m.data) in (6, 7) and np.all(np.isfinite(m.data)) for _, m in feedforward)
    finally:
        assert node.stop() == 0, node.log()


def test_clock_jumps_with_sim_time(client, tmp_path):
    node = RosProcess("soa_dynamics_node", "-p", "urdf_file:=urdf/panda.urdf", "-p", "use_sim_time:=true",
                      *NO_RAMP, "-r", "__node:=simclock", log_dir=tmp_path, name="simclock")
    try:
        feedforward = client.collect(Float64MultiArray, "/simclock/feedforward")
        clock = client.node.create_publisher(Clock, "/clock", 10)
        publisher = client.node.create_publisher(JointState, "/joint_states", 10)
        q = np.full(7, -0.1)
        for seconds in (1000, 5, 100000, 0, 42):   # forwards, backwards, far ahead, zero
            count = len(feedforward)
            # the clock too is sent until answered: one sent before discovery ends is lost
            wait_for(lambda: clock.publish(Clock(clock=Time(sec=seconds))) or
                     publisher.publish(_state(PANDA, q, Time(sec=seconds))) or
                     len(feedforward) > count, what=f"feedforward at sim time {seconds}")
            assert_close(feedforward[-1][1].data, PANDA.gravity_torques(q), "with sim time", 1e-12)
        assert node.alive()
    finally:
        assert node.stop() == 0, node.log()


def test_simulated_arm_killed_and_restarted(client, tmp_path):
    """The arm's driver dies: the feedforward stops, diagnostics say why; it comes back: resumes."""
    import signal
    from diagnostic_msgs.msg import DiagnosticArray
    from support.optional import require
    from support.sim_harness import POSES, StateRecorder, run_for, start_node, start_sim
    require("mujoco")   # the simulated arm (checked before the node starts: no process left behind)
    names = list(POSES["panda"])
    q0 = np.array(list(POSES["panda"].values()))
    # Subscribed before the processes start, and a first message of each awaited:
    # counting starts only on subscriptions known to be matched.
    feedforward = client.collect(Float64MultiArray, "/effort_controller/commands")
    diagnostics = client.collect(DiagnosticArray, "/diagnostics")
    states = StateRecorder(client, names)
    node = start_node("panda", tmp_path)
    sim = start_sim("panda", tmp_path, "-p", "lockstep:=true", "-p", "wait_for_command:=true",
                    "-p", "real_time_factor:=0.0", name="sim_first")
    restarted = None
    try:
        t, q, _ = run_for(states, states.wait_next(0, timeout=60)[0][0], 1.0)
        wait_for(lambda: feedforward and diagnostics, timeout=30,
                 what="feedforward and diagnostics on the test's subscriptions")
        assert np.abs(q - q0).max() < 1e-3
        sim.process.send_signal(signal.SIGTERM)          # the driver dies
        assert sim.process.wait(10) == 0
        died = time.monotonic()
        time.sleep(0.3)
        count = len(feedforward)
        time.sleep(0.5)
        assert len(feedforward) == count                   # nothing without joint states
        assert all(arrival <= died + 0.05 for arrival, _ in feedforward)   # within one timeout

        def stale_report():
            return [s for arrival, array in diagnostics if arrival > died for s in array.status
                    if "soa_dynamics" in s.name and "feedforward stopped" in s.message]
        wait_for(stale_report, timeout=5.0, what="a diagnostic naming the stale joint states")

        states.clear()
        restarted = start_sim("panda", tmp_path, "-p", "lockstep:=true", "-p",
                              "wait_for_command:=true", "-p", "real_time_factor:=0.0",
                              name="sim_second")
        t, q, _ = run_for(states, states.wait_next(0, timeout=60)[0][0], 1.0)
        wait_for(lambda: len(feedforward) > count, what="feedforward resumed")
        assert np.abs(q - q0).max() < 1e-3                 # and holds the arm again
    finally:
        codes = [restarted.stop() if restarted else 0, node.stop()]
        if sim.alive():
            sim.stop()
    assert codes == [0, 0], node.log()[-2000:]
