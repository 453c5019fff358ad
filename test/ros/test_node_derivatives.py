"""~/dynamics_derivatives: the node in its own process over Fast DDS (issue 17).

Answers are checked against Pinocchio's analytical derivatives on the Panda
(no mimic joints), and against central differences of the library's numpy
reference dynamics (kernels="off", itself checked against Pinocchio in
test/model/) where Pinocchio's derivatives do not apply: a robot with mimic
joints, and wrenches, which Pinocchio keeps fixed to the bodies and this
package keeps constant in root-link axes.
"""
import math

import numpy as np
import pytest
from geometry_msgs.msg import Vector3, Wrench
from sensor_msgs.msg import JointState

from support.numerics import assert_close
from support.robots import shipped_urdf
from support.ros_harness import RosClient, RosProcess, joint_state, publish_and_wait
from support.waiting import wait_for
from soa_dynamics_ros import RobotModel
from soa_dynamics_ros.msg import LinkWrench
from soa_dynamics_ros.ros import conversions
from soa_dynamics_ros.srv import DynamicsDerivatives

POSE = np.array([0.1, -0.6, 0.2, -2.2, 0.1, 1.7, 0.6])
MATRICES = {"inverse": ("dtau_dq", "dtau_dqd"), "forward": ("dqdd_dq", "dqdd_dqd", "dqdd_dtau"),
            "gravity": ("dg_dq",)}
ALL_MATRICES = [field for fields in MATRICES.values() for field in fields]
STEP = 1e-6           # central differences: truncation ~STEP^2, rounding ~1e-16 / STEP
# A link without mass at the end of the chain: its hinge has no inertia, M is singular.
MASSLESS_TIP = """<robot name="massless_tip">
  <link name="base"/>
  <link name="arm"><inertial><mass value="1"/>
      <inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="tip"/>
  <joint name="shoulder" type="revolute"><parent link="base"/><child link="arm"/>
    <axis xyz="0 0 1"/><limit lower="-3" upper="3" effort="10" velocity="2"/></joint>
  <joint name="wrist" type="revolute"><parent link="arm"/><child link="tip"/><origin xyz="0.3 0 0"/>
    <axis xyz="0 1 0"/><limit lower="-3" upper="3" effort="10" velocity="2"/></joint>
</robot>"""


@pytest.fixture(scope="module")
def client():
    ros = RosClient("derivatives_test")
    yield ros
    ros.close()


def _node(name, log_dir, *parameters):
    return RosProcess("soa_dynamics_node", "-r", f"__node:={name}", "-p", "marker_rate:=0.0",
                      *parameters, log_dir=log_dir, name=name)


def _stop(process):
    code = process.stop()
    assert code == 0, f"node did not exit cleanly ({code}):\n{process.log()}"


@pytest.fixture(scope="module")
def panda_node(tmp_path_factory):
    process = _node("soa_derivatives", tmp_path_factory.mktemp("panda"),
                    "-p", "urdf_file:=urdf/panda.urdf", "-p", "feedforward_ramp_time:=0.0")
    yield process
    _stop(process)


@pytest.fixture(scope="module")
def torso_node(tmp_path_factory):
    process = _node("soa_derivatives_torso", tmp_path_factory.mktemp("torso"),
                    "-p", "urdf_file:=urdf/dual_arm_torso.urdf")
    yield process
    _stop(process)


@pytest.fixture(scope="module")
def panda():
    return RobotModel.from_urdf(shipped_urdf("panda.urdf"))


@pytest.fixture(scope="module")
def panda_service(client, panda_node):
    return client.client(DynamicsDerivatives, "/soa_derivatives/dynamics_derivatives")


@pytest.fixture(scope="module")
def torso_service(client, torso_node):
    return client.client(DynamicsDerivatives, "/soa_derivatives_torso/dynamics_derivatives")


@pytest.fixture(scope="module")
def feedforward(client, panda_node, panda):
    """The Panda node's ~/feedforward_state and a publisher of joint states, once it answers.

    Feedforward is withheld while the node compiles its kernels (seconds on a
    cold cache): states are published until the first answer.
    """
    answers = client.collect(JointState, "/soa_derivatives/feedforward_state")
    states = client.node.create_publisher(JointState, "/joint_states", 10)
    wait_for(lambda: states.publish(joint_state(panda.joint_names, POSE)) or answers,
             timeout=120, what="a first feedforward")
    return states, answers


def ask(client, service, names, kind, q, qd=(), vector=None, wrenches=(), order=None):
    """The node's answer for a state given in ``order`` (a permutation of model order)."""
    order = np.arange(len(names)) if order is None else np.asarray(order)
    request = DynamicsDerivatives.Request(
        state=joint_state([names[i] for i in order], np.asarray(q)[order],
                          np.asarray(qd)[order] if len(qd) else ()),
        kind=kind, wrenches=list(wrenches))
    if vector is not None:
        setattr(request, "acceleration" if kind == "inverse" else "effort",
                np.asarray(vector)[order].tolist())
    answer = client.call(service, request)
    assert answer.success, answer.message
    n = len(names)
    assert list(answer.name) == list(names) and answer.size == n
    for field in ALL_MATRICES:
        assert len(getattr(answer, field)) == (n * n if field in MATRICES[kind] else 0), field
    return [np.reshape(getattr(answer, field), (n, n)) for field in MATRICES[kind]]


def link_wrench(link, values):
    return LinkWrench(link=link, wrench=Wrench(force=Vector3(x=values[0], y=values[1], z=values[2]),
                                               torque=Vector3(x=values[3], y=values[4], z=values[5])))


def central_differences(function, x):
    """d function / dx, column by column."""
    columns = []
    for i in range(len(x)):
        step = np.zeros(len(x))
        step[i] = STEP
        columns.append((function(x + step) - function(x - step)) / (2 * STEP))
    return np.column_stack(columns)


def numeric_derivatives(model, kind, q, qd, vector=None, wrenches=None):
    """The matrices of ``kind`` by central differences of the model's dynamics."""
    if kind == "gravity":
        return [central_differences(model.gravity_torques, q)]
    dynamics = model.inverse_dynamics if kind == "inverse" else model.forward_dynamics
    result = [central_differences(lambda x: dynamics(x, qd, vector, wrenches), q),
              central_differences(lambda x: dynamics(q, x, vector, wrenches), qd)]
    if kind == "forward":
        result.append(central_differences(lambda x: dynamics(q, qd, x, wrenches), vector))
    return result


def test_panda_derivatives_match_pinocchio(client, panda_service, panda):
    """Each kind, a state given in a scrambled joint order, against Pinocchio to 1e-9."""
    from oracles.pinocchio_reference import PinocchioReference   # skips without Pinocchio (support.optional)
    reference = PinocchioReference(open(shipped_urdf("panda.urdf")).read(), panda.joint_names)
    rng = np.random.default_rng(17)
    order = [3, 0, 6, 1, 5, 2, 4]
    for _ in range(3):
        q, qd, qdd, tau = (rng.uniform(-2, 2, 7), rng.normal(size=7) * 2, rng.normal(size=7) * 3,
                           rng.normal(size=7) * 10)
        for kind, vector, expected in (
                ("inverse", qdd, reference.inverse_dynamics_derivatives(q, qd, qdd)),
                ("forward", tau, reference.forward_dynamics_derivatives(q, qd, tau)),
                ("gravity", None, [reference.gravity_derivatives(q)])):
            answer = ask(client, panda_service, panda.joint_names, kind, q,
                         qd if vector is not None else (), vector, order=order)
            for field, ours, theirs in zip(MATRICES[kind], answer, expected):
                assert_close(ours, theirs, field, 1e-9)


def test_wrenches_are_constant_in_root_axes(client, panda_service):
    """With wrenches: central differences of the numpy reference, wrenches held in root axes."""
    reference = RobotModel.from_urdf(shipped_urdf("panda.urdf"), kernels="off")
    rng = np.random.default_rng(5)
    q, qd, qdd, tau = POSE, rng.normal(size=7), rng.normal(size=7), rng.normal(size=7) * 5
    wrenches = {"panda_hand": [3.0, -1.0, -20.0, 0.5, 0.2, -0.3], "panda_link4": [0, 8.0, 0, 0, 0, 1.0]}
    messages = [link_wrench(link, values) for link, values in wrenches.items()]
    loaded = {}
    for kind, vector in (("inverse", qdd), ("forward", tau)):
        loaded[kind] = ask(client, panda_service, reference.joint_names, kind, q, qd, vector,
                           messages)
        expected = numeric_derivatives(reference, kind, q, qd, vector, wrenches)
        for field, ours, theirs in zip(MATRICES[kind], loaded[kind], expected):
            assert_close(ours, theirs, f"{kind} {field} with wrenches", 1e-6)
    # The wrenches reached the derivatives: without them dtau/dq differs.
    plain = ask(client, panda_service, reference.joint_names, "inverse", q, qd, qdd)
    assert not np.allclose(plain[0], loaded["inverse"][0], rtol=0, atol=1e-3)


def test_mimic_robot_matches_central_differences(client, torso_service):
    """dual_arm_torso: mimic grippers folded onto their masters, a prismatic and continuous joints."""
    reference = RobotModel.from_urdf(shipped_urdf("dual_arm_torso.urdf"), kernels="off")
    n = reference.dof
    rng = np.random.default_rng(23)
    q = rng.uniform(-1, 1, n)
    q[reference.joint_names.index("torso_lift_joint")] = 0.1
    qd, qdd, tau = rng.normal(size=n), rng.normal(size=n), rng.normal(size=n) * 3
    order = rng.permutation(n)
    for kind, vector in (("inverse", qdd), ("forward", tau), ("gravity", None)):
        answer = ask(client, torso_service, reference.joint_names, kind, q,
                     qd if vector is not None else (), vector, order=order)
        expected = numeric_derivatives(reference, kind, q, qd, vector)
        for field, ours, theirs in zip(MATRICES[kind], answer, expected):
            assert_close(ours, theirs, f"{kind} {field}", 1e-6)


def _wrenches(count):
    return [link_wrench("panda_hand", [0.0, 0.0, -1.0, 0.0, 0.0, 0.0])] * count


BAD_REQUESTS = [
    (dict(kind="hessian"), "kind 'hessian' unknown: expected one of 'inverse', 'forward', 'gravity'"),
    (dict(kind=""), "kind '' unknown"),
    (dict(kind="Inverse"), "kind 'Inverse' unknown"),
    (dict(kind="inverse", effort=[1.0] * 7), "kind 'inverse' takes no effort"),
    (dict(kind="forward", acceleration=[1.0] * 7), "kind 'forward' takes no acceleration"),
    (dict(kind="gravity", wrenches=_wrenches(1)), "kind 'gravity' takes no wrenches"),
    (dict(kind="inverse", acceleration=[1.0, 2.0]), "acceleration has 2 values, expected 7"),
    (dict(kind="forward", effort=[1.0] * 8), "effort has 8 values, expected 7"),
    (dict(kind="inverse", state=joint_state(["panda_joint1", "elbow"], [0, 0])),
     "unknown joint 'elbow'"),
    (dict(kind="gravity", state=joint_state(["panda_joint1"], [0, 1])), "2 positions for 1 names"),
    (dict(kind="gravity", state=joint_state(["panda_joint1"], [math.nan])), "NaN"),
    (dict(kind="forward", state=joint_state(["panda_joint2"], [0.0], [math.inf])), "inf"),
    (dict(kind="inverse", wrenches=[LinkWrench(link="gripper")]), "unknown frame 'gripper'"),
    (dict(kind="forward", wrenches=_wrenches(conversions.MAX_WRENCHES + 1)),
     f"wrenches: {conversions.MAX_WRENCHES + 1} given, at most {conversions.MAX_WRENCHES}"),
]


@pytest.mark.parametrize("fields, words", BAD_REQUESTS, ids=[w for _, w in BAD_REQUESTS])
def test_bad_requests_are_refused_by_name_and_feedforward_goes_on(
        client, panda_node, panda_service, feedforward, panda, fields, words):
    answer = client.call(panda_service, DynamicsDerivatives.Request(**fields))
    assert not answer.success and words in answer.message, answer.message
    assert answer.size == 0 and not any(len(getattr(answer, f)) for f in ALL_MATRICES)
    states, answers = feedforward
    effort = publish_and_wait(states, answers, joint_state(panda.joint_names, POSE), timeout=20)
    assert_close(effort, panda.gravity_torques(POSE), "feedforward after the refusal", 1e-12)
    assert panda_node.alive()


def test_non_finite_request_vectors_are_refused_by_field_and_index(client, panda_service):
    """The index is the request's (state.name order), not the model's."""
    names = [f"panda_joint{i}" for i in (3, 1, 2, 4, 5, 6, 7)]
    for kind, field in (("inverse", "acceleration"), ("forward", "effort")):
        vector = [0.0] * 7
        vector[2] = math.inf
        answer = client.call(panda_service, DynamicsDerivatives.Request(
            kind=kind, state=joint_state(names, POSE), **{field: vector}))
        assert not answer.success, field
        assert f"{field} holds NaN or inf at index [2]" in answer.message, answer.message


def test_singular_mass_matrix_is_refused_and_the_rest_still_answers(client, tmp_path):
    urdf = tmp_path / "massless_tip.urdf"
    urdf.write_text(MASSLESS_TIP)
    node = _node("soa_derivatives_singular", tmp_path, "-p", f"urdf_file:={urdf}")
    try:
        service = client.client(DynamicsDerivatives, "/soa_derivatives_singular/dynamics_derivatives")
        state = joint_state(["shoulder", "wrist"], [0.3, 0.4], [0.1, 0.2])
        answer = client.call(service, DynamicsDerivatives.Request(state=state, kind="forward"))
        assert not answer.success and "massless body" in answer.message, answer.message
        assert not any(len(getattr(answer, f)) for f in ALL_MATRICES)
        # Inverse dynamics needs no M^-1: the same node answers it.
        answer = client.call(service, DynamicsDerivatives.Request(state=state, kind="inverse"))
        assert answer.success, answer.message
        assert node.alive()
    finally:
        _stop(node)
