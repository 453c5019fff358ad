"""The closed loop in real time (no lockstep), as the demo and a user run it.

The sim steps at 1 kHz against the wall clock and uses whatever command has
arrived; the node answers each state as it comes.  Latency is measured at a
third process: arrival of ~/feedforward_state (stamped with the state it
answers) minus arrival of that /joint_states message.
"""
import numpy as np
import pytest
from sensor_msgs.msg import JointState

from support.ros_harness import RosClient
from soa_dynamics_ros.sim.clients import wait_for_compiled_kernels
from support.sim_harness import (POSES, StateRecorder, reset_client, reset_sim, run_for,
                                 stamp_seconds, start_node, start_sim)


@pytest.mark.realtime
def test_gravity_feedforward_holds_the_arm_in_real_time(tmp_path):
    names = list(POSES["panda"])
    q0 = np.array(list(POSES["panda"].values()))
    # The claim is the torque: a command late by more than the sim's default 0.1 s
    # command_timeout (the 2-core VM stalled one of these three 1 kHz Python processes
    # that long now and then) would drop the arm to zero effort and test the scheduler
    # instead.  With 1 s the sim holds the last command, as a ros2_control
    # ForwardCommandController does; a wrong torque, or none for 1 s, still drifts.
    sim = start_sim("panda", tmp_path, "-p", "wait_for_command:=true", "-p", "publish_clock:=true",
                    "-p", "command_timeout:=1.0", realtime=True)
    node = start_node("panda", tmp_path, realtime=True)
    client = RosClient("realtime_test")
    states = StateRecorder(client, names)
    answered = {}
    client.node.create_subscription(
        JointState, "/soa_dynamics/feedforward_state",
        lambda m: answered.setdefault(stamp_seconds(m.header.stamp), __import__("time").monotonic()), 50)
    try:
        # As in production and the demo: the node on its compiled kernels (loading
        # them pauses it past the sim's command timeout), then from the pose again.
        reset_client(client)
        run_for(states, states.wait_next(0)[0][0], 1.0)
        wait_for_compiled_kernels(client.node, 180.0)
        t0 = reset_sim(client)
        t, q, _ = run_for(states, t0, 5.0)
        with states.lock:
            arrivals = {r[0]: r[1] for r in states.rows if r[0] > t0}
    finally:
        client.close()
        codes = sim.stop(), node.stop()
    assert codes == (0, 0), f"{sim.log()[-2000:]}\n{node.log()[-2000:]}"
    drift = np.abs(q - q0).max()
    latency = np.array([answered[s] - arrivals[s] for s in arrivals if s in answered]) * 1e3
    wall = max(arrivals.values()) - min(arrivals.values())
    print(f"real time: drift over {t[-1] - t0:.2f} s {drift:.2e} rad; {len(t) / wall:.0f} states/s "
          f"seen; feedforward latency (state seen -> feedforward seen) median "
          f"{np.median(latency):.2f} ms, p99 {np.percentile(latency, 99):.2f} ms; "
          f"{latency.size / len(arrivals):.0%} of the states answered")
    assert drift < 1e-3, f"{sim.log()[-2000:]}\n{node.log()[-2000:]}"
    assert t[-1] - t0 >= 4.99 and wall < 6.5            # about real time
    # The latency is printed, not bounded: measured at a third Python process at 1 kHz its
    # median ranged 0.5-4.7 ms between runs of one commit (and of the one before) on
    # the 2-core VM, mostly that process's own backlog; bench_node_latency.py measures it.
    assert latency.size > 0.2 * len(arrivals)
