"""Closed loop over real DDS: the MuJoCo arm (soa_dynamics_sim) driven by the model node.

Two executables, as a user runs them: the sim publishes /joint_states and takes
/effort_controller/commands; the node runs with
``-r ~/feedforward:=/effort_controller/commands``.  The sim runs lockstep
(it waits for the command answering each state) and as fast as the loop
allows, so the results do not depend on the machine's load; MuJoCo computes
the dynamics independently of this project.  The real-time mode is checked
in test_sim_realtime.py.
"""
import math

import numpy as np
import pytest
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectoryPoint

from support.robots import shipped_urdf
from support.ros_harness import RosClient
from support.waiting import wait_for
from support.sim_harness import (PAYLOAD, POSES, TOOL, StateRecorder, reset_sim, run_for, set_parameters,
                         stamp_seconds, start_node, start_sim)
from soa_dynamics_ros import RobotModel
from soa_dynamics_ros.msg import Constraint
from soa_dynamics_ros.ros import conversions
from soa_dynamics_ros.srv import HybridDynamics, SetPayload
from std_msgs.msg import Float64MultiArray

NODE, SIM = "/soa_dynamics", "/soa_dynamics_sim"
ROBOTS = ["panda", "dual_arm_torso"]


class Loop:
    def __init__(self, robot, client, sim, node):
        self.robot, self.client, self.sim, self.node = robot, client, sim, node
        self.model = RobotModel.from_urdf(shipped_urdf(f"{robot}.urdf"), kernels="off")
        self.names = self.model.joint_names
        self.q0 = np.array([POSES[robot][n] for n in self.names])
        self.on_state = None
        self.states = StateRecorder(client, self.names, on_state=self._on_state)

    def _on_state(self, row):
        if self.on_state is not None:
            self.on_state(row)

    def start(self, **node_parameters):
        """Configure the node, reset the sim; returns the sim time the run starts at."""
        if node_parameters:
            set_parameters(self.client, NODE, **node_parameters)
        return reset_sim(self.client, SIM)

    def drift(self, q):
        return np.abs(q - self.q0).max(axis=0)


@pytest.fixture(scope="module", params=ROBOTS)
def loop(request, tmp_path_factory):
    robot = request.param
    logs = tmp_path_factory.mktemp(f"loop_{robot}")
    sim = start_sim(robot, logs, "-p", "lockstep:=true", "-p", "real_time_factor:=0.0",
                    "-p", "wait_for_command:=true", "-p", "publish_clock:=true",
                    "-p", "lockstep_timeout:=2.0")
    node = start_node(robot, logs)
    client = RosClient(f"loop_test_{robot}")
    try:
        yield Loop(robot, client, sim, node)
    finally:
        client.close()
        codes = sim.stop(), node.stop()
        assert codes == (0, 0), f"exit codes {codes}\n{sim.log()[-3000:]}\n{node.log()[-3000:]}"


def wait_for_service(client, name):
    from soa_dynamics_ros.srv import SetPayload as _Probe
    client.client(_Probe, name, timeout=30.0)


def test_gravity_feedforward_holds_the_arm_still(loop):
    t0 = loop.start(feedforward_mode="gravity")
    t, q, _ = run_for(loop.states, t0, 5.0)
    drift = loop.drift(q)
    print(f"{loop.robot}: drift over {t[-1] - t[0]:.2f} s with gravity feedforward: "
          f"{drift.max():.2e} rad ({len(t)} states)")
    # (the test client may miss a few of the 1 kHz states; the loop does not)
    assert t[-1] - t[0] > 4.99 and np.median(np.diff(t)) == pytest.approx(1e-3), "not 1 kHz"
    assert drift.max() < 1e-3, dict(zip(loop.names, drift))


def test_without_feedforward_the_arm_falls(loop):
    # No commands at all: the sim must not wait for them (no lockstep, no wait).
    set_parameters(loop.client, SIM, lockstep=False, wait_for_command=False, real_time_factor=2.0)
    try:
        t0 = loop.start(feedforward_mode="off")
        t, q, _ = run_for(loop.states, t0, 0.5)
    finally:
        set_parameters(loop.client, SIM, lockstep=True, wait_for_command=True, real_time_factor=0.0)
        set_parameters(loop.client, NODE, feedforward_mode="gravity")
    drift = loop.drift(q)
    print(f"{loop.robot}: drift after 0.5 s without feedforward: {drift.max():.3f} rad")
    assert drift.max() > 0.05


def test_computed_torque_tracks_a_sinusoid(loop, tmp_path):
    """tau = ID(q, qd, qdd_d + kp e + kd e_dot): the node's computed-torque law, PD included.

    The reference generator (this process) must not fall behind the loop, so it
    is put inside it: it relays /joint_states to a second node after sending the
    desired point for that very state (sim -> test -> node -> sim, lockstep).
    """
    joints = {j.name: j for j in loop.model.joints}
    amplitude = np.array([0.05 if joints[n].type == "prismatic" else 0.0 if "finger" in n else 0.15
                          for n in loop.names])
    # Stay 0.02 inside the position limits (MuJoCo enforces them; the model does not know them).
    room = np.array([min(q - joints[n].lower, joints[n].upper - q) - 0.02
                     if joints[n].type != "continuous" else np.inf
                     for n, q in zip(loop.names, loop.q0)])
    amplitude = np.minimum(amplitude, room)
    omega = 2 * math.pi * 0.5
    # (config/<robot>.yaml is keyed by the node name "soa_dynamics": give the model again)
    tracker = start_node(loop.robot, tmp_path, "-r", "__node:=tracker",
                         "-p", f"urdf_file:=urdf/{loop.robot}.urdf",
                         "-r", "joint_states:=/tracker/joint_states_in",
                         "-p", "feedforward_mode:=computed_torque",
                         "-p", "computed_torque_kp:=400.0", "-p", "computed_torque_kd:=40.0")
    node = loop.client.node
    desired_publisher = node.create_publisher(JointTrajectoryPoint, "/tracker/desired_state", 10)
    relay = node.create_publisher(JointState, "/tracker/joint_states_in", 10)
    start = {}

    def desired(t):
        s = t - start["t"]
        return (loop.q0 + amplitude * np.sin(omega * s), amplitude * omega * np.cos(omega * s),
                -amplitude * omega ** 2 * np.sin(omega * s))

    def forward(message):
        t = stamp_seconds(message.header.stamp)
        if "t" in start and t > start["t"]:
            q, qd, qdd = desired(t)
            desired_publisher.publish(JointTrajectoryPoint(
                positions=q.tolist(), velocities=qd.tolist(), accelerations=qdd.tolist()))
        relay.publish(message)
    subscription = node.create_subscription(JointState, "/joint_states", forward, 10)
    try:
        set_parameters(loop.client, NODE, feedforward_mode="off")   # the tracker drives the arm
        wait_for_service(loop.client, "/tracker/set_payload")
        wait_for(lambda: desired_publisher.get_subscription_count() and relay.get_subscription_count(),
                 30, what="the tracker's subscriptions")
        t0 = loop.start()
        start["t"] = t0
        t, q, _ = run_for(loop.states, t0, 3.0)
    finally:
        node.destroy_subscription(subscription)
        code = tracker.stop()
        node.destroy_publisher(desired_publisher)
        node.destroy_publisher(relay)
        set_parameters(loop.client, NODE, feedforward_mode="gravity")
    assert code == 0, tracker.log()[-3000:]
    error = np.abs(q - np.array([desired(s)[0] for s in t]))
    late = error[t - t0 > 1.0].max(axis=0)
    moved = np.abs(q - loop.q0).max()
    print(f"{loop.robot}: computed torque, max tracking error after 1 s: {late.max():.2e} rad "
          f"(joints moved up to {moved:.3f}); first second: {error.max():.2e}")
    assert moved > 0.1
    assert late.max() < 5e-3, ", ".join(f"{n} {e:.1e}" for n, e in zip(loop.names, late))


def test_hybrid_dynamics_in_the_loop(loop):
    """constraint_torques from ~/hybrid_dynamics applied each step: the tool's vertical
    acceleration is held at zero, the rest of the arm falls as the hybrid solution says."""
    model, frame = loop.model, TOOL[loop.robot]
    hybrid = loop.client.client(HybridDynamics, f"{NODE}/hybrid_dynamics")
    commands = loop.client.publisher(Float64MultiArray, "/effort_controller/commands")
    alpha = np.array([0.0, 0.0, 1.0, 0.0, 0.0, 0.0])
    predicted, sent = {}, {}
    set_parameters(loop.client, NODE, feedforward_mode="off")    # this test is the controller
    count = loop.states.count()
    t0 = loop.start()
    last, started = t0, False
    try:
        while last < t0 + 0.12:
            (t, _, q, qd, _), count = loop.states.wait_next(count)
            # States from before the reset may still arrive (and an answer to one of
            # them, if slow, would be taken for the reset state's): start at the pose.
            started = started or (t >= t0 - 1e-9 and np.array_equal(q, loop.q0) and not qd.any())
            if not started:
                continue
            last = max(last, t)
            answer = loop.client.call(hybrid, HybridDynamics.Request(
                state=JointState(name=loop.names, position=q.tolist(), velocity=qd.tolist()),
                constraints=[Constraint(frame=frame, alpha=alpha.tolist(), beta=[0.0])],
                feedforward_torque=[0.0] * model.dof))
            assert answer.success, answer.message
            assert list(answer.name) == loop.names
            predicted[round(t, 6)] = np.array(answer.acceleration)
            sent[round(t, 6)] = np.array(answer.constraint_torque)
            commands.publish(Float64MultiArray(data=list(answer.constraint_torque)))
    finally:
        loop.client.node.destroy_publisher(commands)
        set_parameters(loop.client, NODE, feedforward_mode="gravity")
    # Up to the state before the last one answered: once this loop ends, the node is
    # switched back on and its commands may race the last ones sent here.
    t, q, qd = loop.states.since(t0, last - 1.5e-3)
    z = np.array([model.frame_pose(x, frame)[2, 3] for x in q])
    xy = np.array([model.frame_pose(x, frame)[:2, 3] for x in q])
    measured = np.diff(qd, axis=0) / np.diff(t)[:, None]            # qdd over each step
    expected = np.array([predicted[round(s, 6)] for s in t[:-1]])
    scale = np.abs(expected).max()
    qdd_error = np.abs(measured - expected).max() / scale
    # Lockstep pairing: the effort applied over each step is the one sent for its state.
    with loop.states.lock:
        applied = {round(r[0], 6): r[4] for r in loop.states.rows if t0 < r[0] <= last}
    unpaired = [s for s in t[:-1] if not np.allclose(applied[round(s + 1e-3, 6)], sent[round(s, 6)])]
    assert not unpaired, f"commands applied to other states from t={unpaired[0] - t0:.3f} s on"
    # Tool acceleration measured in the simulation: differences of v = J(q) qd.
    velocity = np.array([model.jacobian(x, frame)[:3] @ v for x, v in zip(q, qd)])
    acceleration = np.diff(velocity, axis=0) / np.diff(t)[:, None]
    free = model.jacobian(q[0], frame)[:3] @ model.forward_dynamics(q[0], qd[0], np.zeros(model.dof))
    moved = np.abs(q[-1] - q[0]).max()
    print(f"{loop.robot}: hybrid in the loop over {t[-1] - t[0]:.3f} s: tool vertical acceleration "
          f"max {np.abs(acceleration[:, 2]).max():.2e} m/s^2 (falling freely: {free[2]:.2f}), "
          f"horizontal up to {np.abs(acceleration[:, :2]).max():.2f}; tool z moved {np.ptp(z):.1e} m, "
          f"xy {np.linalg.norm(xy[-1] - xy[0]):.1e} m; joints up to {moved:.3f} rad; "
          f"measured vs predicted qdd {qdd_error:.1e} (relative)")
    assert t[-1] - t[0] > 0.1
    # (1e-13 on the Panda; the PR2 mimic fingers are stiff equality constraints in MuJoCo)
    assert qdd_error < 1e-3                        # the arm moves as the hybrid solution says
    assert moved > 0.02 and np.linalg.norm(xy[-1] - xy[0]) > 1e-3   # the free directions fall
    # The constrained direction holds (to the time discretization: a_z = J qdd + Jdot qd
    # sampled by differences over 1 ms steps of a fast motion).
    assert np.abs(acceleration[:, 2]).max() < 0.05 * abs(free[2])
    assert np.ptp(z) < 0.01 * np.linalg.norm(xy[-1] - xy[0])


def test_payload_told_holds_untold_sags(loop):
    link, com = PAYLOAD[loop.robot]
    set_parameters(loop.client, SIM, payload_link=link, payload_mass=2.0, payload_com=com)
    service = loop.client.client(SetPayload, f"{NODE}/set_payload")
    payload = conversions.payload_message("box", link, 2.0, com)
    try:
        answer = loop.client.call(service, SetPayload.Request(payload=payload))
        assert answer.success and list(answer.payloads) == ["box"], answer.message
        t0 = loop.start(feedforward_mode="gravity")
        _, q, _ = run_for(loop.states, t0, 3.0)
        told = loop.drift(q).max()
        answer = loop.client.call(service, SetPayload.Request(payload=payload, detach=True))
        assert answer.success, answer.message
        t0 = loop.start()
        _, q, _ = run_for(loop.states, t0, 1.0)
        untold = loop.drift(q).max()
    finally:
        set_parameters(loop.client, SIM, payload_mass=0.0)
    print(f"{loop.robot}: 2 kg payload on {link}: drift told {told:.2e} rad over 3 s, "
          f"untold {untold:.3f} rad after 1 s")
    assert told < 1e-3
    assert untold > 1e-2
