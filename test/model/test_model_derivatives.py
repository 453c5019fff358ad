"""RobotModel and Subgraph derivatives of the dynamics: against Pinocchio's analytical
derivatives (robots without mimic joints for forward dynamics), against central
differences of the numpy reference dynamics (mimic joints, root-axes wrenches,
subgraphs), against laws, and on bad input."""
import pathlib
import warnings

import numpy as np
import pytest

from oracles.pinocchio_reference import PinocchioReference
from support.numerics import assert_close, random_states, random_wrenches
from support.robot_generator import random_tree_urdf
from support.robots import SHIPPED_ROBOTS, shipped_urdf, zoo_urdf_text
from support.small_robots import MASSLESS, MASSLESS_MIMIC, SCALED_MIMIC_GRIPPER
from soa_dynamics_ros import RobotModel
from soa_dynamics_ros.kernels import tracing
from soa_dynamics_ros.model import derivatives as derivatives_module
from soa_dynamics_ros.errors import (InertiaWarning, InvalidInputError, SingularDynamicsError,
                                     UnknownNameError)

PINOCCHIO_TOL = 1e-9
DIFFERENCE_TOL = 1e-6
STEP = 1e-3
# (seed, moving joints, mimic fraction): trees without mimic joints (Pinocchio's ABA
# derivatives apply), one of 35 joints, and trees with mimic joints.
RANDOM_TREES = [(31, 8, 0.0), (32, 12, 0.0), (33, 35, 0.0), (34, 12, 0.3), (35, 16, 0.25)]
# rtb-data robots (test/system/test_zoo.py reads all of them): arms with mimic grippers.
# (Most others have a massless link on a moving joint: no forward dynamics.)
ZOO_ROBOTS = ["trossen_descriptions/urdf/vx300s.urdf.xacro",
              "trossen_descriptions/urdf/px150.urdf.xacro",
              "trossen_descriptions/urdf/wx250.urdf.xacro"]


def _xml(source):
    kind, key = source
    if kind == "shipped":
        return pathlib.Path(shipped_urdf(key)).read_text()
    if kind == "random":
        seed, joints, mimic = key
        return random_tree_urdf(seed, moving_joints=joints, mimic_fraction=mimic)
    if kind == "text":
        return key
    return zoo_urdf_text(key)


SOURCES = ([pytest.param(("shipped", name), id=name) for name in SHIPPED_ROBOTS]
           + [pytest.param(("random", key), id=f"random{key[0]}-{key[1]}dof")
              for key in RANDOM_TREES]
           + [pytest.param(("zoo", relative), id=relative.split("/")[-1])
              for relative in ZOO_ROBOTS]
           + [pytest.param(("text", SCALED_MIMIC_GRIPPER), id="scaled_mimic_gripper")])


@pytest.fixture(scope="module", params=SOURCES)
def robot(request):
    """``(numpy model, PinocchioReference, urdf xml)`` of one robot."""
    xml = _xml(request.param)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InertiaWarning)
        model = RobotModel.from_urdf(xml, kernels="off")
    return model, PinocchioReference(xml, model.joint_names), xml


def central_differences(function, x, step=STEP):
    """Columns d function / d x_j by fourth-order central differences: O(step^4)
    truncation, O(eps |f| / step) round-off (ill-conditioned M amplifies the latter)."""
    def column(e):
        return (8 * (function(x + step * e) - function(x - step * e))
                - (function(x + 2 * step * e) - function(x - 2 * step * e))) / (12 * step)
    return np.array([column(e) for e in np.eye(len(x))]).T


def _states(model, rng, count):
    for q, qd, qdd in random_states(model, count, rng):
        yield q, qd, qdd, qdd * 5


def test_inverse_and_gravity_derivatives_match_pinocchio(robot, rng):
    # Mimic joints fold the same way on both sides (S^T D S), so every robot is compared.
    model, ref, _ = robot
    for q, qd, qdd, _ in _states(model, rng, 8):
        dtau_dq, dtau_dqd = model.inverse_dynamics_derivatives(q, qd, qdd)
        expected_dq, expected_dqd = ref.inverse_dynamics_derivatives(q, qd, qdd)
        assert_close(dtau_dq, expected_dq, "dtau/dq", PINOCCHIO_TOL)
        assert_close(dtau_dqd, expected_dqd, "dtau/dqd", PINOCCHIO_TOL)
        assert_close(model.gravity_derivatives(q), ref.gravity_derivatives(q), "dg/dq",
                     PINOCCHIO_TOL)


def test_forward_dynamics_derivatives_match_pinocchio(robot, rng):
    # Mimic robots: against Pinocchio's RNEA derivatives and mass matrix (see the oracle).
    model, ref, _ = robot
    for q, qd, _, tau in _states(model, rng, 8):
        expected = ref.forward_dynamics_derivatives(q, qd, tau)
        for name, answer, reference in zip(("dqdd/dq", "dqdd/dqd", "dqdd/dtau"),
                                           model.forward_dynamics_derivatives(q, qd, tau),
                                           expected):
            assert_close(answer, reference, name, PINOCCHIO_TOL)


def test_derivatives_match_central_differences(robot, rng):
    """Mimic robots included, and root-axes wrenches (constant in root axes while q varies)."""
    model, _, _ = robot
    for q, qd, qdd, tau in _states(model, rng, 2):
        for wrenches in (None, random_wrenches(model, rng)):
            dtau_dq, dtau_dqd = model.inverse_dynamics_derivatives(q, qd, qdd, wrenches)
            assert_close(dtau_dq, central_differences(
                lambda x: model.inverse_dynamics(x, qd, qdd, wrenches), q), "dtau/dq",
                DIFFERENCE_TOL)
            assert_close(dtau_dqd, central_differences(
                lambda x: model.inverse_dynamics(q, x, qdd, wrenches), qd), "dtau/dqd",
                DIFFERENCE_TOL)
            dqdd_dq, dqdd_dqd, dqdd_dtau = model.forward_dynamics_derivatives(q, qd, tau,
                                                                              wrenches)
            for name, answer, argument in (("dqdd/dq", dqdd_dq, 0), ("dqdd/dqd", dqdd_dqd, 1),
                                           ("dqdd/dtau", dqdd_dtau, 2)):
                def forward(x, argument=argument):
                    state = [q, qd, tau]
                    state[argument] = x
                    return model.forward_dynamics(*state, wrenches)
                assert_close(answer, central_differences(forward, [q, qd, tau][argument]),
                             name, DIFFERENCE_TOL)
        assert_close(model.gravity_derivatives(q),
                     central_differences(model.gravity_torques, q), "dg/dq", DIFFERENCE_TOL)


def test_input_derivative_inverts_the_mass_matrix(robot, rng):
    # dqdd/dtau = M^-1 whatever computes it; and dtau/dqd at qd = 0 vanishes (Coriolis
    # torques are quadratic in qd).
    model, _, _ = robot
    zeros = np.zeros(model.dof)
    for q, _, qdd, tau in _states(model, rng, 3):
        _, _, dqdd_dtau = model.forward_dynamics_derivatives(q, zeros, tau)
        assert_close(dqdd_dtau @ model.mass_matrix(q), np.eye(model.dof), "M^-1 M", 1e-9)
        _, dtau_dqd = model.inverse_dynamics_derivatives(q, zeros, qdd)
        assert_close(dtau_dqd, np.zeros((model.dof, model.dof)), "dtau/dqd at qd = 0", 1e-12)


def _compiled(xml):
    from soa_dynamics_ros import kernels
    if not kernels.compiler_available():
        pytest.fail("no C compiler: scripts/setup.sh installs one")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InertiaWarning)
        return RobotModel.from_urdf(xml, kernels="generic")


def _refuse(*_, **__):
    raise AssertionError("the numpy path answered")


def _compiled_only(monkeypatch, call):
    """``call()`` with the numpy path of the derivatives refusing to answer."""
    with monkeypatch.context() as patch:
        for name in ("inverse_dynamics_derivatives", "forward_dynamics_derivatives",
                     "gravity_derivatives", "batch"):
            patch.setattr(derivatives_module, name, _refuse)
        return call()


def test_compiled_derivatives_match_the_numpy_path(robot, rng, monkeypatch):
    model, _, xml = robot
    fast = _compiled(xml)
    states = list(_states(model, rng, 4))
    # At rest (qd = 0) the compiled recursion skips the velocity tangents.
    states.append((states[0][0], np.zeros(model.dof), states[0][2], states[0][3]))
    for q, qd, qdd, tau in states:
        for wrenches in (None, random_wrenches(model, rng)):
            for name, arguments in (("inverse_dynamics_derivatives", (q, qd, qdd, wrenches)),
                                    ("forward_dynamics_derivatives", (q, qd, tau, wrenches))):
                answer = _compiled_only(monkeypatch,
                                        lambda: getattr(fast, name)(*arguments))
                for k, (a, b) in enumerate(zip(answer, getattr(model, name)(*arguments))):
                    assert_close(a, b, f"compiled {name} [{k}]", 1e-12 * _conditioning(b))
        assert_close(_compiled_only(monkeypatch, lambda: fast.gravity_derivatives(q)),
                     model.gravity_derivatives(q), "compiled dg/dq", 1e-12)
    view_names = model.joint_names[::2]
    fast_view, slow_view = fast.subgraph(view_names), model.subgraph(view_names)
    for q, _, _, _ in _states(model, rng, 2):
        qd, tau = rng.normal(size=len(view_names)), rng.normal(size=len(view_names))
        for name in ("inverse_dynamics_derivatives", "forward_dynamics_derivatives"):
            answer = _compiled_only(monkeypatch,
                                    lambda: getattr(fast_view, name)(q, qd, tau))
            for a, b in zip(answer, getattr(slow_view, name)(q, qd, tau)):
                assert_close(a, b, f"compiled subgraph {name}", 1e-12 * _conditioning(b))
        assert_close(_compiled_only(monkeypatch, lambda: fast_view.gravity_derivatives(q)),
                     slow_view.gravity_derivatives(q), "compiled subgraph dg/dq", 1e-12)


def test_compiled_derivatives_see_a_payload_and_another_gravity(robot, rng):
    """The compiled derivatives read inertias and gravity from the packed parameters
    (gravity's straight from them): against Pinocchio holding the same payload."""
    _, _, xml = robot
    fast = _compiled(xml)
    gravity, mass = (0.4, -0.3, -9.7), 1.5
    com, inertia = np.array([0.02, -0.01, 0.05]), np.diag([0.004, 0.005, 0.003])
    link = max(fast.tree.frames.items(), key=lambda item: item[1].body)[0]
    fast.gravity = gravity
    fast.attach_payload("load", link, mass, com=com, inertia=inertia)
    ref = PinocchioReference(xml, fast.joint_names, gravity=gravity)
    ref.attach(link, mass, com, inertia)
    for q, qd, qdd, _ in _states(fast, rng, 3):
        assert_close(fast.gravity_derivatives(q), ref.gravity_derivatives(q),
                     "dg/dq with a payload", PINOCCHIO_TOL)
        for name, answer, expected in zip(("dtau/dq", "dtau/dqd"),
                                          fast.inverse_dynamics_derivatives(q, qd, qdd),
                                          ref.inverse_dynamics_derivatives(q, qd, qdd)):
            assert_close(answer, expected, f"{name} with a payload", PINOCCHIO_TOL)


def _conditioning(matrix):
    # Solving with M loses digits in proportion to its condition number (up to 1e4 on
    # small grippers' fingers).
    return max(1.0, float(np.abs(matrix).max()))


@pytest.mark.parametrize("kernels", ["off", "generic"])
def test_batches_are_loops_of_single_calls(robot, rng, kernels, monkeypatch):
    model = robot[0] if kernels == "off" else _compiled(robot[2])
    Q, QD, QDD = (np.array(rows) for rows in zip(*random_states(model, 4, rng)))
    TAU = QDD * 5
    batches = (
        (model.inverse_dynamics_derivatives_batch(Q, QD, QDD),
         [model.inverse_dynamics_derivatives(*sample) for sample in zip(Q, QD, QDD)]),
        (model.forward_dynamics_derivatives_batch(Q, QD, TAU),
         [model.forward_dynamics_derivatives(*sample) for sample in zip(Q, QD, TAU)]),
        ((model.gravity_derivatives_batch(Q),), [(model.gravity_derivatives(q),) for q in Q]))
    for outputs, singles in batches:
        for k, output in enumerate(outputs):
            assert output.shape == (len(Q), model.dof, model.dof)
            assert_close(output, np.array([single[k] for single in singles]), "batch", 1e-12)
    if kernels == "generic":
        # One compiled call, not a loop of singles.
        _compiled_only(monkeypatch, lambda: model.forward_dynamics_derivatives_batch(Q, QD, TAU))


# ------------------------------------------------------------------ subgraphs
def _subgraph_case(rng):
    xml = random_tree_urdf(36, moving_joints=10, mimic_fraction=0.0)
    model = RobotModel.from_urdf(xml, kernels="off")
    names = [str(name) for name in rng.choice(model.joint_names, size=5, replace=False)]
    return model, model.subgraph(names), PinocchioReference(xml, model.joint_names)


def test_subgraph_derivatives_hold_the_locked_joints(rng):
    model, view, ref = _subgraph_case(rng)
    columns = [model.joint_index(name) for name in view.joint_names]
    for q, qd, qdd, tau in _states(view, rng, 3):
        q = rng.uniform(-np.pi, np.pi, model.dof)
        full_qd, full_qdd = np.zeros(model.dof), np.zeros(model.dof)
        full_qd[columns], full_qdd[columns] = qd, qdd
        # Locked joints: zero rate and acceleration, so the view's torques are the model's.
        expected_dq, expected_dqd = ref.inverse_dynamics_derivatives(q, full_qd, full_qdd)
        dtau_dq, dtau_dqd = view.inverse_dynamics_derivatives(q, qd, qdd)
        assert_close(dtau_dq, expected_dq[np.ix_(columns, columns)], "subgraph dtau/dq",
                     PINOCCHIO_TOL)
        assert_close(dtau_dqd, expected_dqd[np.ix_(columns, columns)], "subgraph dtau/dqd",
                     PINOCCHIO_TOL)
        assert_close(view.gravity_derivatives(q),
                     ref.gravity_derivatives(q)[np.ix_(columns, columns)], "subgraph dg/dq",
                     PINOCCHIO_TOL)
        wrenches = random_wrenches(model, rng)

        def forward(x, argument):
            state = [q.copy(), qd, tau]
            if argument == 0:
                state[0][columns] = x
            else:
                state[argument] = x
            return view.forward_dynamics(*state, wrenches)
        for name, answer, argument in zip(("dqdd/dq", "dqdd/dqd", "dqdd/dtau"),
                                          view.forward_dynamics_derivatives(q, qd, tau, wrenches),
                                          range(3)):
            start = [q[columns], qd, tau][argument]
            assert_close(answer, central_differences(lambda x: forward(x, argument), start),
                         f"subgraph {name}", DIFFERENCE_TOL)
    Q = rng.uniform(-1, 1, (3, model.dof))
    QD, TAU = rng.normal(size=(3, view.dof)), rng.normal(size=(3, view.dof))
    for k, output in enumerate(view.forward_dynamics_derivatives_batch(Q, QD, TAU)):
        assert_close(output, [view.forward_dynamics_derivatives(*s)[k] for s in zip(Q, QD, TAU)],
                     "subgraph batch", 1e-12)
    assert view.gravity_derivatives_batch(Q).shape == (3, view.dof, view.dof)
    with pytest.raises(InvalidInputError):
        view.inverse_dynamics_derivatives_batch(Q, QD[:, :2], QD)


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize("kernels", ["off", "generic"])
def test_bad_input_gets_a_specific_error(kernels):
    model = RobotModel.from_urdf(shipped_urdf("panda.urdf"), kernels=kernels)
    n, good = model.dof, np.zeros(model.dof)
    nan = good.copy()
    nan[2] = np.nan
    for call in (lambda: model.inverse_dynamics_derivatives(good[:-1], good, good),
                 lambda: model.inverse_dynamics_derivatives(good, nan, good),
                 lambda: model.inverse_dynamics_derivatives(good, good, "x"),
                 lambda: model.inverse_dynamics_derivatives(good, good, good, wrenches=[1]),
                 lambda: model.forward_dynamics_derivatives(good, good, None),
                 lambda: model.forward_dynamics_derivatives(good, good, nan),
                 lambda: model.gravity_derivatives(np.zeros(n + 1)),
                 lambda: model.gravity_derivatives_batch(np.zeros((2, n - 1))),
                 lambda: model.inverse_dynamics_derivatives_batch(
                     np.zeros((2, n)), np.zeros((3, n)), np.zeros((2, n))),
                 lambda: model.forward_dynamics_derivatives_batch(
                     np.zeros((2, n)), np.zeros((2, n)), np.full((2, n), np.inf))):
        with pytest.raises(InvalidInputError):
            call()
    unknown = {"nowhere": np.ones(6)}
    for call in (lambda: model.inverse_dynamics_derivatives(good, good, good, unknown),
                 lambda: model.forward_dynamics_derivatives(good, good, good, unknown)):
        with pytest.raises(UnknownNameError, match="nowhere"):
            call()
    with pytest.raises(UnknownNameError):
        model.subgraph(["no_such_joint"])


@pytest.mark.parametrize("kernels", ["off", "generic", "c"])
def test_singular_mass_matrix_raises(kernels):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InertiaWarning)
        model = RobotModel.from_urdf(MASSLESS, kernels=kernels)
        # Mimic joints couple hinges: M is solved densely, not along the tree.
        mimic = RobotModel.from_urdf(MASSLESS_MIMIC, kernels=kernels)
    for robot, q in ((model, [0.0]), (mimic, [0.3, -0.2])):
        ones = np.ones(robot.dof)
        with pytest.raises(SingularDynamicsError):
            robot.forward_dynamics_derivatives(q, ones, ones)
        with pytest.raises(SingularDynamicsError):
            robot.forward_dynamics_derivatives_batch(
                np.zeros((2, robot.dof)), np.zeros((2, robot.dof)), np.ones((2, robot.dof)))
        if kernels != "off":
            # The compiled path itself declines with status 2 (the numpy path then raises):
            # the robot's own kernel with "c" (its pivots' guards, mimic joints too).
            compiled = (robot.kernels.routes.generic if kernels == "generic"
                        else robot.kernels.routes.ready)["forward_dynamics_derivatives"]
            assert compiled(np.asarray(q, dtype=float), ones, ones, robot.kernels.parameters) == 2
    # Inverse dynamics needs no inverse: a massless body simply has no torque.
    assert_close(model.inverse_dynamics_derivatives([0.3], [1.0], [2.0])[0], [[0.0]], "dtau/dq",
                 0.0)


# A distal link far too light to move against the arm (articulated inertia 1.25e-16 kg m^2
# about its hinge against the threshold 1e-13 x the largest inertia entry, the arm's mass
# 10: 1e-12): singular by the articulated-body recursion's rule, though its pivot is
# positive.
NEARLY_MASSLESS_TIP = """<robot name="nearly_massless_tip">
  <link name="base"/>
  <link name="arm"><inertial><mass value="10"/><origin xyz="0.2 0 0"/>
      <inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link>
  <link name="tip"><inertial><mass value="1e-16"/><origin xyz="0.5 0 0"/>
      <inertia ixx="1e-16" ixy="0" ixz="0" iyy="1e-16" iyz="0" izz="1e-16"/></inertial></link>
  <joint name="j1" type="revolute"><parent link="base"/><child link="arm"/><axis xyz="0 0 1"/>
    <limit effort="1" velocity="1" lower="-1" upper="1"/></joint>
  <joint name="j2" type="revolute"><parent link="arm"/><child link="tip"/><origin xyz="0.4 0 0"/>
    <axis xyz="0 0 1"/><limit effort="1" velocity="1" lower="-1" upper="1"/></joint>
</robot>"""


@pytest.mark.parametrize("kernels", ["off", "generic", "c"])
def test_a_hinge_below_the_singular_threshold_raises_as_forward_dynamics_does(kernels):
    """The compiled forward derivatives, and forward dynamics where that traces smaller
    (this robot's kernel), take qdd from M by its LTDL, whose pivots on a tree-ordered
    robot are the articulated-body recursion's hinge inertias: they guard at its
    threshold, so a hinge that the recursion calls singular is singular here too (the
    kernels and the generic module decline with status 2), not a huge answer."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InertiaWarning)
        robot = RobotModel.from_urdf(NEARLY_MASSLESS_TIP, kernels=kernels)
    q, ones = np.array([0.3, -0.2]), np.ones(2)
    with pytest.raises(SingularDynamicsError):
        robot.forward_dynamics(q, ones, ones)
    with pytest.raises(SingularDynamicsError):
        robot.forward_dynamics_derivatives(q, ones, ones)
    if kernels != "off":
        compiled = robot.kernels.routes.generic if kernels == "generic" else robot.kernels.routes.ready
        for name in ("forward_dynamics", "forward_dynamics_derivatives"):
            assert compiled[name](q, ones, ones, robot.kernels.parameters) == 2, name
    if kernels == "c":
        _, _, _, method = tracing.trace_forward_dynamics(robot.tree)
        assert "LTDL" in method
