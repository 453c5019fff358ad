"""The node's estimation (issue 16) in its own process, over real Fast DDS, fed synthetic states.

A Panda held still against a wrench w at ``panda_hand``: its joints measure
``tau = g(q) - J(q)^T w`` (Pinocchio: independent of the project's model), so
the external torque is ``J^T w`` and the wrench at ``panda_hand`` is ``w``.
The closed loop with MuJoCo is test/system/test_estimation_closed_loop.py.
"""
import itertools
import math
import time

import numpy as np
import pytest
from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import WrenchStamped
from rcl_interfaces.srv import GetParameters
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool

from support.robots import shipped_urdf
from support.ros_harness import RosClient, RosProcess
from support.sim_harness import set_parameters as set_accepted
from support.sim_harness import parameter_value
from support.waiting import wait_for
from soa_dynamics_ros import RobotModel
from soa_dynamics_ros.srv import IdentifyPayload
from rcl_interfaces.msg import Parameter as ParameterMsg
from rcl_interfaces.srv import SetParameters

NODE = "/soa_dynamics"
POSE = np.array([0.1, -0.6, 0.2, -2.2, 0.1, 1.7, 0.6])
FRAME = "panda_hand"
WRENCH = np.array([10.0, -15.0, 20.0, 0.5, 1.0, -0.5])
_MILLISECONDS = itertools.count(int(time.time() * 1e3))     # stamps: 1 ms apart, always forward


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    process = RosProcess("soa_dynamics_node", "--params-file", "config/panda.yaml",
                         "-p", "feedforward_ramp_time:=0.0", "-p", "diagnostics_period:=0.2",
                         "-p", f"external_wrench_frame:={FRAME}",
                         log_dir=tmp_path_factory.mktemp("node"), name="estimation_node")
    yield process
    code = process.stop()
    assert code == 0, f"node did not exit cleanly ({code}):\n{process.log()}"


@pytest.fixture(scope="module")
def client(node):
    ros = RosClient("estimation_test")
    yield ros
    ros.close()


@pytest.fixture(scope="module")
def topics(client):
    topics = dict(torque=client.collect(JointState, f"{NODE}/external_torque", 1000),
                  wrench=client.collect(WrenchStamped, f"{NODE}/external_wrench", 1000),
                  contact=client.collect(Bool, f"{NODE}/contact", 100),
                  diagnostics=client.collect(DiagnosticArray, "/diagnostics", 100),
                  joint_states=client.publisher(JointState, "/joint_states", 100))
    # Estimation waits for the compiled kernels (compiled once per robot, in a child process).
    wait_for(lambda: (estimation_status(topics) or {}).get("kernels") == "compiled", 300,
             interval=0.2, what="the node's compiled kernels")
    return topics


@pytest.fixture(scope="module")
def reference():
    urdf = open(shipped_urdf("panda.urdf")).read()
    from oracles.pinocchio_reference import PinocchioReference   # skips without Pinocchio (support.optional)
    return PinocchioReference(urdf, RobotModel.from_urdf(urdf, kernels="off").joint_names)


def held_against(reference, wrench):
    """The efforts of the Panda at rest at POSE with ``wrench`` acting on FRAME."""
    return reference.inverse_dynamics(POSE, np.zeros(7), np.zeros(7)) \
        - reference.jacobian(POSE, FRAME).T @ wrench


def publish(topics, reference, efforts, count, names=None, positions=POSE):
    """``count`` joint states 1 ms apart (stamps), at most ~1 per 4 ms of wall time (the node keeps up)."""
    names = names or reference.joint_names
    for _ in range(count):
        stamp = next(_MILLISECONDS)
        message = JointState(name=list(names), position=[float(p) for p in positions],
                             velocity=[0.0] * len(names), effort=[float(e) for e in efforts])
        message.header.stamp = Time(sec=stamp // 1000, nanosec=(stamp % 1000) * 1_000_000)
        topics["joint_states"].publish(message)
        time.sleep(0.004)
    return stamp * 1e-3


def last_estimate(topics, after):
    answers = [m for _, m in list(topics["torque"]) if m.header.stamp.sec + 1e-9 *
               m.header.stamp.nanosec >= after - 1e-6]
    return answers[-1] if answers else None


def estimation_status(topics):
    for _, array in reversed(list(topics["diagnostics"])):
        for status in array.status:
            values = {kv.key: kv.value for kv in status.values}
            if "embedded model" in status.name and "estimation" in values:
                return values
    return None


def test_without_effort_estimation_is_off_and_diagnostics_say_why(topics, reference):
    count = len(topics["torque"])
    topics["diagnostics"].clear()

    def off():
        publish(topics, reference, [], 20)
        values = estimation_status(topics)
        return values and values["estimation"].startswith("off: joint_states carry no effort")
    wait_for(off, 10, what="diagnostics saying estimation is off for lack of effort")
    assert len(topics["torque"]) == count
    assert "panda_joint1" in estimation_status(topics)["estimation"]


def test_external_torque_and_wrench_of_an_arm_held_against_a_wrench(topics, reference):
    efforts = held_against(reference, WRENCH)
    last = publish(topics, reference, efforts, 400)     # 0.4 s of stamps: 40 time constants
    answer = wait_for(lambda: last_estimate(topics, last), 5, what="the estimate of the last state")
    expected = reference.jacobian(POSE, FRAME).T @ WRENCH
    assert list(answer.name) == reference.joint_names
    assert np.array(answer.position) == pytest.approx(POSE, abs=0)
    np.testing.assert_allclose(answer.effort, expected, rtol=0, atol=1e-6 * np.abs(expected).max())
    # the node publishes the wrench after the torque: it may still be on its way
    wrenches = wait_for(lambda: [m for _, m in list(topics["wrench"]) if abs(
        m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec - last) < 1e-6], 5,
        what="the wrench estimate of the last state")
    assert wrenches[-1].header.frame_id == "panda_link0"
    w = wrenches[-1].wrench
    measured = np.array([w.force.x, w.force.y, w.force.z, w.torque.x, w.torque.y, w.torque.z])
    np.testing.assert_allclose(measured, WRENCH, rtol=0, atol=1e-6 * np.abs(WRENCH).max())
    assert all(np.all(np.isfinite(m.effort)) for _, m in topics["torque"])
    wait_for(lambda: publish(topics, reference, efforts, 5) and (estimation_status(topics) or {})
             .get("estimation", "").startswith("on: observer gain 100 1/s"), 10,
             what="diagnostics saying estimation is on")


def test_contact_turns_on_and_off_with_hysteresis(topics, reference):
    publish(topics, reference, held_against(reference, np.zeros(6)), 200)
    wait_for(lambda: topics["contact"] and topics["contact"][-1][1].data is False, 5,
             what="no contact while nothing acts")
    publish(topics, reference, held_against(reference, WRENCH), 100)
    wait_for(lambda: topics["contact"][-1][1].data is True, 5, what="contact under the wrench")
    # Between release (0.5 x 2 N m) and the threshold (2 N m): still in contact.
    scale = 1.5 / np.abs(reference.jacobian(POSE, FRAME).T @ WRENCH).max()
    publish(topics, reference, held_against(reference, scale * WRENCH), 200)
    time.sleep(0.3)    # >= 2 republications at 10 Hz
    assert topics["contact"][-1][1].data is True
    publish(topics, reference, held_against(reference, np.zeros(6)), 200)
    wait_for(lambda: topics["contact"][-1][1].data is False, 5, what="contact released")


def test_bad_efforts_are_not_used_and_nothing_non_finite_is_published(topics, reference):
    efforts = held_against(reference, WRENCH)
    last = publish(topics, reference, efforts, 100)
    wait_for(lambda: last_estimate(topics, last), 5, what="an estimate")
    bad = efforts.copy()
    bad[3] = math.nan
    publish(topics, reference, bad, 50)
    last_bad = publish(topics, reference, efforts[:4], 50)          # fewer efforts than names
    time.sleep(0.3)
    stamps = [m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec for _, m in list(topics["torque"])]
    assert not [s for s in stamps if last < s <= last_bad + 1e-6], "estimated from refused efforts"
    values = wait_for(lambda: publish(topics, reference, bad, 5) and (
        estimation_status(topics) or {}).get("last_effort_rejection"), 5,
        what="diagnostics naming the rejected efforts")
    assert "panda_joint4" in values or "effort" in values
    assert all(np.all(np.isfinite(m.effort)) for _, m in topics["torque"])


def test_no_estimate_while_some_joints_are_stale(topics, reference):
    """Only three joints keep coming: once the others are older than state_timeout (50 ms),
    no estimate is made from the mix."""
    efforts = held_against(reference, WRENCH)
    last = publish(topics, reference, efforts, 50)
    wait_for(lambda: last_estimate(topics, last), 5, what="an estimate")
    names = reference.joint_names[:3]
    partial_start = time.monotonic()
    sent = []       # (stamp, wall seconds since the others last came)
    while time.monotonic() - partial_start < 0.4:
        stamp = publish(topics, reference, efforts[:3], 1, names=names, positions=POSE[:3])
        sent.append((stamp, time.monotonic() - partial_start))
    late = [stamp for stamp, after in sent if after > 0.2]
    time.sleep(0.3)
    estimated = {round(m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec, 6)
                 for _, m in list(topics["torque"])}
    assert late and not [s for s in late if round(s, 6) in estimated]


def refused(client, **values):
    setter = client.client(SetParameters, f"{NODE}/set_parameters")
    results = client.call(setter, SetParameters.Request(parameters=[
        ParameterMsg(name=k, value=parameter_value(v)) for k, v in values.items()])).results
    return [r.reason for r in results if not r.successful]


def parameter(client, name):
    getter = client.client(GetParameters, f"{NODE}/get_parameters")
    value = client.call(getter, GetParameters.Request(names=[name])).values[0]
    return value.double_value or list(value.double_array_value) or value.string_value


@pytest.mark.parametrize("name, value, reason", [
    ("observer_gain", -1.0, "observer_gain"), ("observer_gain", math.inf, "observer_gain"),
    ("observer_gain", 1e9, "observer_gain"), ("contact_thresholds", [1.0, 2.0, 3.0], "3 values for 7"),
    ("contact_thresholds", [0.0], "contact_thresholds"), ("contact_release_ratio", 2.0, "ratio"),
    ("external_wrench_frame", "no_such_frame", "no frame 'no_such_frame'"),
    ("identification_buffer_time", 0.0, "identification_buffer_time")])
def test_absurd_estimation_parameters_are_refused_and_change_nothing(client, name, value, reason):
    before = parameter(client, name)
    reasons = refused(client, **{name: value})
    assert reasons and reason in reasons[0], reasons
    assert parameter(client, name) == before


def test_the_gain_and_thresholds_can_change_at_run_time(client, topics, reference):
    set_accepted(client, NODE, observer_gain=20.0, contact_thresholds=[50.0] * 7)
    try:
        publish(topics, reference, held_against(reference, WRENCH), 200)
        wait_for(lambda: topics["contact"][-1][1].data is False, 5,
                 what="no contact below the raised thresholds")
        wait_for(lambda: publish(topics, reference, held_against(reference, WRENCH), 5) and (
            estimation_status(topics) or {}).get("estimation", "").startswith(
                "on: observer gain 20 1/s"), 10, what="the new gain in /diagnostics")
    finally:
        set_accepted(client, NODE, observer_gain=100.0, contact_thresholds=[2.0])


def identify(client, **fields):
    service = client.client(IdentifyPayload, f"{NODE}/identify_payload")
    return client.call(service, IdentifyPayload.Request(**fields))


@pytest.mark.parametrize("fields, problem", [
    (dict(link="no_such_link", duration=0.1), "unknown link 'no_such_link'"),
    (dict(link=FRAME, duration=0.0), "duration"), (dict(link=FRAME, duration=-1.0), "duration"),
    (dict(link=FRAME, duration=math.nan), "duration"),
    (dict(link=FRAME, duration=100.0), "longer than"),
    (dict(link=FRAME, duration=math.inf), "duration"),
    (dict(link=FRAME, duration=0.1, name="x" * 300), "at most 256"),
])
def test_identify_payload_refuses_bad_requests(client, topics, reference, fields, problem):
    publish(topics, reference, held_against(reference, np.zeros(6)), 50)
    answer = identify(client, apply=True, **fields)
    assert not answer.success and problem in answer.message, answer.message
    assert not answer.applied


def test_identify_payload_refuses_a_motion_that_does_not_excite_the_load(client, topics, reference):
    """An arm at rest says nothing of a load's inertia: refused, and nothing attached."""
    publish(topics, reference, held_against(reference, np.zeros(6)), 600)
    answer = identify(client, link=FRAME, duration=0.5, apply=True, name="box")
    assert not answer.success and answer.message, answer.message
    topics["diagnostics"].clear()
    values = wait_for(lambda: estimation_status(topics), 5, what="diagnostics")
    assert "box" not in values["payloads"]


def test_estimation_false_switches_it_off_and_diagnostics_say_so(client, topics, reference):
    efforts = held_against(reference, WRENCH)
    set_accepted(client, NODE, estimation=False)
    try:
        wait_for(lambda: publish(topics, reference, efforts, 5) and (
            estimation_status(topics) or {}).get("estimation") == "off: parameter estimation is false",
            10, what="diagnostics saying estimation is switched off")
        first = next(_MILLISECONDS) * 1e-3
        last = publish(topics, reference, efforts, 100)
        time.sleep(0.3)
        stamps = [m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec for _, m in list(topics["torque"])]
        assert not [s for s in stamps if first <= s <= last + 1e-6]
    finally:
        set_accepted(client, NODE, estimation=True)
    last = publish(topics, reference, efforts, 100)
    wait_for(lambda: last_estimate(topics, last), 5, what="estimates again")


def test_the_estimate_follows_a_step_as_a_first_order_lag_of_time_constant_one_over_gain(
        topics, reference):
    """The documented meaning of observer_gain, end to end: time from the states' stamps."""
    gain = 100.0
    publish(topics, reference, held_against(reference, np.zeros(6)), 100)
    step = next(_MILLISECONDS) * 1e-3        # the first state with the wrench: one ms later
    last = publish(topics, reference, held_against(reference, WRENCH), 60)
    wait_for(lambda: last_estimate(topics, last), 5, what="the estimate of the last state")
    final = reference.jacobian(POSE, FRAME).T @ WRENCH
    fractions, lags = [], []
    for _, m in list(topics["torque"]):
        s = m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec
        if step < s <= last + 1e-6:
            elapsed = s - step
            fractions.append(np.array(m.effort) / final)
            lags.append(1.0 - math.exp(-gain * elapsed))
    assert len(fractions) > 50
    errors = np.abs(np.array(fractions) - np.array(lags)[:, None])
    print(f"step response: largest departure from 1 - exp(-K t): {errors.max():.3f} of the final value")
    # (the discrete observer lags the continuous law by about half a 1 ms step)
    assert errors.max() < 0.04, errors.max()
