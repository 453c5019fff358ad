"""The node's refusals and explanations, over real Fast DDS (issue 12, part 4)."""
import time

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from support.request_bounds import JointStateStream, longest_gap, maximal_requests, over_bound_requests
from support.robots import shipped_urdf
from support.ros_harness import RosClient, RosProcess
from support.waiting import wait_for
from support.small_robots import FIXED_ONLY
from soa_dynamics_ros.msg import Constraint
from soa_dynamics_ros.ros import conversions
from soa_dynamics_ros.srv import EvaluateTrajectory, GravityTorques, HybridDynamics, SetPayload

POSE = [0.1, -0.6, 0.2, -2.2, 0.1, 1.7, 0.6]
NAMES = [f"panda_joint{i}" for i in range(1, 8)]


def diagnostics_with(statuses, words, timeout=10.0):
    """The statuses collected so far that say ``words``, waiting for one."""
    return wait_for(lambda: [s for _, a in statuses for s in a.status if words in s.message],
                    timeout=timeout, what=f"a diagnostic saying {words!r}")


def test_bad_parameters_end_start_up_with_one_line_and_ints_are_accepted(tmp_path):
    for argument, words in (("joint_states_depth:=-5", "'joint_states_depth' must be an integer"),
                            ("marker_rate:=1e-300", "'marker_rate' must be 0 or between"),
                            ("kernels:=fast", "'kernels' must be one of auto, off"),
                            ("marker_frame:=nowhere", "no frame 'nowhere'")):
        node = RosProcess("soa_dynamics_node", "--params-file", "config/panda.yaml", "-p", argument,
                          log_dir=tmp_path, name=argument.split(":")[0])
        node.process.wait(60)
        log = node.log()
        assert node.stop() == 1 and words in log and "Traceback" not in log, log
    node = RosProcess("soa_dynamics_node", "--params-file", "config/panda.yaml", "-p",
                      "state_timeout:=1", "-p", "diagnostics_period:=1", log_dir=tmp_path, name="ints")
    try:
        wait_for(lambda: "loaded from parameters" in node.log(), timeout=60, what="start-up")
        time.sleep(1.5)
        assert node.alive(), node.log()
    finally:
        assert node.stop() == 0, node.log()


def test_refusals_are_explained_and_the_node_lives_on(tmp_path):
    node = RosProcess("soa_dynamics_node", "-r", "__node:=robust", "-p", "feedforward_mode:=computed_torque",
                      "-p", "computed_torque_kp:=25.0", log_dir=tmp_path, name="robust")
    client = RosClient("robustness_test")
    try:
        description = client.latched_publisher(String, "/robot_description")
        gravity = client.client(GravityTorques, "/robust/gravity_torques")
        # Some reports last one diagnostics period: listen before anything happens.
        statuses = client.collect(DiagnosticArray, "/diagnostics")
        wait_for(lambda: statuses, what="the node's first diagnostics")
        # 1. all joints fixed: refused, explained, and the node keeps running.
        description.publish(String(data=FIXED_ONLY))
        status = diagnostics_with(statuses, "no moving joints")
        assert status[-1].level == DiagnosticStatus.ERROR and node.alive()
        time.sleep(2.5)          # past two diagnostics periods: the node did not die
        assert node.alive(), node.log()
        description.publish(String(data=open(shipped_urdf("panda.urdf")).read()))
        request = GravityTorques.Request(state=JointState(name=NAMES, position=POSE))
        wait_for(lambda: client.call(gravity, request).success, what="the Panda loaded")

        # 9. joint states about other joints only (or none) get no feedforward.
        feedforward = client.collect(JointState, "/robust/feedforward_state")
        states = client.publisher(JointState, "/joint_states")
        # Feedforward is withheld until the compiled kernels are loaded (seconds on a cold
        # cache): one state sent in that window gets no answer, so keep states coming.
        wait_for(lambda: states.publish(JointState(name=NAMES, position=POSE)) or feedforward,
                 timeout=60, what="a first feedforward")
        for names in (["gripper_finger"], []):
            message = JointState(name=names, position=[0.0] * len(names))
            message.header.stamp.sec = 4242
            for _ in range(20):
                states.publish(message)
                time.sleep(0.005)
        time.sleep(0.5)
        assert all(m.header.stamp.sec != 4242 for _, m in feedforward)

        # 10. bytes that are no JointState (a raw publisher): refused and explained; the
        # next state is answered.
        states.publish(b"\x00\x01\x00\x00" + b"\xff" * 40)
        diagnostics_with(statuses, "no JointState serialization")
        answered = len(feedforward)
        wait_for(lambda: states.publish(JointState(name=NAMES, position=POSE))
                 or len(feedforward) > answered, what="a feedforward after the garbage")

        # 5. an absurd desired state: refused with a log line and a diagnostic.
        desired = client.publisher(JointTrajectoryPoint, "/robust/desired_state")
        desired.publish(JointTrajectoryPoint(positions=[1e49] * 7))
        diagnostics_with(statuses, "~/desired_state rejected")
        assert "desired positions must be finite and within +-1000" in node.log()

        # 4. requests beyond the bounds are refused at once, naming the limit.
        hybrid = client.client(HybridDynamics, "/robust/hybrid_dynamics")
        constraint = Constraint(frame="panda_link7", alpha=np.eye(6).ravel().tolist(), beta=[0.0] * 6)
        answer = client.call(hybrid, HybridDynamics.Request(state=request.state,
                                                            constraints=[constraint] * 600))
        assert not answer.success and "at most 16 accepted" in answer.message
        evaluate = client.client(EvaluateTrajectory, "/robust/evaluate_trajectory")
        # This client's first exchange with a small request: RosClient.call sends a first
        # request again when its answer is slow (a lost first response), and a second copy
        # of the 300,000-point request kept the node deserializing it (rclpy builds every
        # point before the node can refuse; over 10 s on Jazzy) while set_payload waited.
        empty = client.call(evaluate, EvaluateTrajectory.Request(trajectory=JointTrajectory(joint_names=NAMES)))
        assert not empty.success and "no points" in empty.message
        point = JointTrajectoryPoint(positions=POSE)
        answer = client.call(evaluate, EvaluateTrajectory.Request(trajectory=JointTrajectory(
            joint_names=NAMES, points=[point] * 300_000)), timeout=60)
        assert not answer.success and "trajectory points" in answer.message and "at most" in answer.message

        # 7. request payloads apply to that evaluation only.
        set_payload = client.client(SetPayload, "/robust/set_payload")
        persistent = conversions.payload_message("evaluate_trajectory/box", "panda_link7", 1.0)
        assert client.call(set_payload, SetPayload.Request(payload=persistent)).success
        points = []
        for i in range(5):
            p = JointTrajectoryPoint(positions=POSE)
            p.time_from_start.nanosec = 100_000_000 * i
            points.append(p)
        trajectory = JointTrajectory(joint_names=NAMES, points=points)
        box = conversions.payload_message("box", "panda_link7", 2.0)
        with_box = client.call(evaluate, EvaluateTrajectory.Request(trajectory=trajectory, payloads=[box]))
        assert with_box.success, with_box.message
        payloads = client.call(set_payload, SetPayload.Request(payload=persistent)).payloads
        assert list(payloads) == ["evaluate_trajectory/box"]
        for names in (["x", "x"], [""]):
            answer = client.call(evaluate, EvaluateTrajectory.Request(trajectory=trajectory, payloads=[
                conversions.payload_message(n, "panda_link7", 1.0) for n in names]))
            assert not answer.success and "distinct, non-empty names" in answer.message
        assert node.alive()
    finally:
        client.close()
        assert node.stop() == 0, node.log()


def test_maximal_requests_never_hold_the_feedforward_and_one_more_is_refused(tmp_path):
    """Issue 12, part 4: each maximal request answered without a long feedforward gap.

    Compiled kernels, as in production: on the numpy path the trajectory bound
    is 20 points, and the 1000-point bound would go untested.  250 ms is far
    above the measured gaps (bench/results/request_gaps.md) and far below the
    seconds an unbounded request used to take, so a loaded CI machine passes
    and a regression does not.
    """
    node = RosProcess("soa_dynamics_node", "--params-file", "config/panda.yaml",
                      "-p", "marker_rate:=0.0", log_dir=tmp_path, name="gaps")
    client = RosClient("gaps_test")
    stream = JointStateStream(client, NAMES, POSE, period=0.001)
    try:
        feedforward = stream.start_until_answered(client)
        frame, links = "panda_hand_tcp", [f"panda_link{i}" for i in range(1, 8)]

        def arrivals():
            return [t for t, _ in list(feedforward)]
        for service, service_type, request in maximal_requests(NAMES, POSE, frame, links):
            handle = client.client(service_type, f"/soa_dynamics/{service}")
            start = time.monotonic()
            answer = client.call(handle, request, timeout=60)
            end = time.monotonic()
            assert answer.success, f"{service}: {answer.message}"
            wait_for(lambda: arrivals()[-1] > end, timeout=10, what=f"feedforward after {service}")
            gap = longest_gap(arrivals(), start, end)
            assert gap < 0.25, f"{service} held the feedforward for {gap * 1e3:.0f} ms"
        for service, service_type, request, words in over_bound_requests(NAMES, POSE, frame, links):
            handle = client.client(service_type, f"/soa_dynamics/{service}")
            answer = client.call(handle, request, timeout=60)
            assert not answer.success and words in answer.message, (service, words, answer.message)
            before = len(feedforward)
            wait_for(lambda: len(feedforward) > before + 10, timeout=10,
                     what=f"feedforward after the refused {service}")
        assert node.alive(), node.log()
    finally:
        stream.stop()
        client.close()
        assert node.stop() == 0, node.log()
