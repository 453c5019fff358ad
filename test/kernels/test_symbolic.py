"""The symbolic tracer (kernels/symbolic.py): what it records evaluates to what numpy computes
from the same functions, exact zeros and ones fold away, equal operations are recorded once,
and the traced and compiled recursions agree with Pinocchio."""
import numpy as np
import pytest

from oracles.pinocchio_reference import PinocchioReference
from support.numerics import assert_close, random_states
from support.optional import require
from support.robot_generator import random_tree_urdf
from support.robots import example_robot_text, shipped_urdf
from support.small_robots import FIXED_ONLY
from soa_dynamics_ros.kernels.symbolic import ADD, MUL, SUB, Sym, Trace
from soa_dynamics_ros.multibody.spatial import (force_cross, motion_cross, motion_transform,
                                                rotation_about_axis)

pin = require("pinocchio")

ROBOTS = [pytest.param(open(shipped_urdf("panda.urdf")).read(), id="panda.urdf"),
          pytest.param(random_tree_urdf(500, moving_joints=5, mimic_fraction=0.4), id="random500")]


@pytest.fixture
def symbols():
    trace = Trace()
    return trace, trace.inputs_array("x", 3)


def test_exact_zeros_and_ones_fold(symbols):
    trace, (x, y, _) = symbols
    assert (x * 0) == 0.0 and not isinstance(x * 0, Sym)
    assert (0.0 * x) == 0.0 and not isinstance(0.0 * x, Sym)
    assert (x * 1) is x and (1.0 * x) is x
    assert (x + 0) is x and (0.0 + x) is x and (x - 0) is x
    assert (x / 1) is x
    assert (0.0 / x) == 0.0 and not isinstance(0.0 / x, Sym)
    assert (x - x) == 0.0 and not isinstance(x - x, Sym)
    assert (-(-x)).i == x.i and (+x) is x
    assert (x * -1).i == (-x).i
    before = len(trace.ops)
    assert (0.0 - x).i == (-x).i and len(trace.ops) == before


def test_equal_operations_are_recorded_once(symbols):
    trace, (x, y, z) = symbols
    assert (x * y).i == (y * x).i and (x + y).i == (y + x).i
    count = len(trace.ops)
    assert ((x * y) + z).i == ((y * x) + z).i and len(trace.ops) == count + 1
    # a + (-b) is recorded as a - b, and a - (-b) as a + b: exact in IEEE arithmetic.
    assert trace.ops[(x + (-y)).i] == (SUB, x.i, y.i)
    assert trace.ops[(x - (-y)).i][0] == ADD
    assert trace.ops[(x * 2.5).i] == (MUL, x.i, 2.5)


def test_branches_on_traced_values_are_guards_or_errors(symbols):
    trace, (x, _, _) = symbols
    assert (x > 1e-9) is True
    assert trace.guards == [(x.i, 1e-9)]
    with pytest.raises(TypeError, match="data-dependent branch"):
        bool(x)


def test_traced_spatial_algebra_is_numpys(rng, evaluate_trace):
    # The library's own numpy functions, run on symbols, record their arithmetic.
    trace = Trace()
    angle, = trace.inputs_array("q", 1)
    motion = trace.inputs_array("v", 6)
    axis = np.array([0.0, 0.6, 0.8])
    translation = rng.normal(size=3)
    transform = motion_transform(rotation_about_axis(axis, angle), translation)
    outputs = np.concatenate((transform.ravel(), motion_cross(motion).ravel(),
                              force_cross(motion).ravel()))
    for _ in range(10):
        q, v = rng.uniform(-np.pi, np.pi), rng.normal(size=6)
        expected = np.concatenate((motion_transform(rotation_about_axis(axis, q), translation).ravel(),
                                   motion_cross(v).ravel(), force_cross(v).ravel()))
        assert_close(evaluate_trace(trace, outputs, {"q": [q], "v": v}), expected,
                     "traced against numpy", 1e-15)


def test_rotation_about_a_coordinate_axis_keeps_its_exact_zeros_and_ones():
    trace = Trace()
    angle, = trace.inputs_array("q", 1)
    rotation = rotation_about_axis(np.array([0.0, 0.0, 1.0]), angle)
    constants = {(i, j): rotation[i, j] for i in range(3) for j in range(3)
                 if not isinstance(rotation[i, j], Sym)}
    assert constants == {(0, 2): 0.0, (1, 2): 0.0, (2, 0): 0.0, (2, 1): 0.0, (2, 2): 1.0}


@pytest.fixture(scope="module", params=ROBOTS)
def robot(request, traced_robot):
    robot = traced_robot(request.param)
    return robot, PinocchioReference(request.param, robot.joint_names)


def test_traced_inverse_dynamics_is_pinocchios(robot, rng, evaluate_trace):
    traced, reference = robot
    trace, torque = traced.traced_inverse_dynamics()
    p = traced.parameters()
    for q, qd, qdd in random_states(traced, 5, rng):
        assert_close(evaluate_trace(trace, torque, {"q": q, "qd": qd, "qdd": qdd, "p": p}),
                     reference.inverse_dynamics(q, qd, qdd), "traced M qdd + h", 1e-10)


def test_traced_mass_matrix_is_pinocchios(robot, rng, evaluate_trace):
    traced, reference = robot
    trace, mass = traced.traced_mass_matrix()
    p = traced.parameters()
    for q, _, _ in random_states(traced, 5, rng):
        assert_close(evaluate_trace(trace, mass, {"q": q, "p": p}), reference.mass_matrix(q),
                     "traced M(q)", 1e-10)


@pytest.mark.parametrize("urdf", [
    pytest.param(open(shipped_urdf("panda.urdf")).read(), id="panda.urdf"),
    pytest.param(random_tree_urdf(501, moving_joints=9, mimic_fraction=0.0), id="random501"),
    # a robot nobody here wrote whose forward dynamics kernel is in aligned frames
    pytest.param(example_robot_text("xarm_description/urdf/xarm7.urdf"), id="xarm7")])
def test_each_way_of_tracing_forward_dynamics_is_pinocchios(urdf, traced_robot, rng,
                                                             evaluate_trace):
    """The generator keeps whichever of the articulated-body recursion and M, h and M's
    LTDL (in body frames or in aligned frames) traces smaller; each must be the
    dynamics, with a wrench too, to round-off (M about the root origin was not: 5e-11
    off on iCub, whose M is ill-conditioned)."""
    traced = traced_robot(urdf)
    reference = PinocchioReference(urdf, traced.joint_names)
    p = traced.parameters()
    link = list(traced.tree.frames)[-1]
    for links in ((), (link,)):
        ways = traced.traced_forward_dynamics_ways(links)
        assert len(ways) == 3, list(ways)
        for q, qd, tau in random_states(traced, 3, rng):
            wrench = rng.normal(size=6) * 10 if links else np.zeros(0)
            inputs = {"q": q, "qd": qd, "tau": tau, "p": p, "w": wrench}
            expected = reference.forward_dynamics(q, qd, tau, {link: wrench} if links else None)
            for method, (trace, qdd) in ways.items():
                assert_close(evaluate_trace(trace, qdd, inputs), expected,
                             f"qdd by {method}, wrenches on {links}", 1e-12)


def test_aligned_frames_are_not_offered_where_their_solve_loses_digits(traced_robot):
    """iCub's M reaches condition 1e5 to 6e8: solved in aligned frames its qdd is 1e-12
    to 4e-11 off Pinocchio's, so its forward dynamics keeps the body-frame ways."""
    traced = traced_robot(example_robot_text("icub_description/robots/icub.urdf"))
    ways = list(traced.traced_forward_dynamics_ways())
    assert len(ways) == 2 and not any("aligned" in way for way in ways), ways


def test_a_robot_without_moving_joints_traces_every_way_empty(traced_robot):
    traced = traced_robot(FIXED_ONLY)
    ways = traced.traced_forward_dynamics_ways()
    assert len(ways) == 3 and all(len(qdd) == 0 for _, qdd in ways.values()), ways


@pytest.mark.parametrize("urdf", ROBOTS)
def test_each_way_of_tracing_the_mass_matrix_is_pinocchios(urdf, traced_robot, rng,
                                                           evaluate_trace):
    """M traced in body frames and in aligned frames (the generator keeps the cheaper)."""
    traced = traced_robot(urdf)
    reference = PinocchioReference(urdf, traced.joint_names)
    p = traced.parameters()
    ways = traced.traced_mass_matrix_ways()
    assert len(ways) == 2
    for q, _, _ in random_states(traced, 3, rng):
        for trace, mass in ways:
            assert_close(evaluate_trace(trace, mass, {"q": q, "p": p}), reference.mass_matrix(q),
                         "traced M(q)", 1e-12)


def test_inertias_and_gravity_are_inputs_not_constants(robot, rng, evaluate_trace):
    # A payload or another gravity changes p only: the same trace must follow.
    traced, reference = robot
    trace, torque = traced.traced_inverse_dynamics()
    gravity = rng.normal(size=3) * 5
    reference.model.gravity = pin.Motion(gravity, np.zeros(3))
    try:
        q, qd, qdd = next(random_states(traced, 1, rng))
        inputs = {"q": q, "qd": qd, "qdd": qdd, "p": traced.parameters(gravity)}
        assert_close(evaluate_trace(trace, torque, inputs), reference.inverse_dynamics(q, qd, qdd),
                     "traced torques under another gravity", 1e-10)
    finally:
        reference.model.gravity = pin.Motion(np.array([0.0, 0.0, -9.81]), np.zeros(3))


def test_compiled_kernel_computes_what_was_traced(robot, rng, evaluate_trace):
    traced, reference = robot
    trace, torque = traced.traced_inverse_dynamics()
    kernel = traced.compiled("inverse_dynamics")
    p = traced.parameters()
    for q, qd, qdd in random_states(traced, 5, rng):
        compiled = kernel(q, qd, qdd, p)
        assert_close(compiled, evaluate_trace(trace, torque, {"q": q, "qd": qd, "qdd": qdd, "p": p}),
                     "C against the trace it was printed from", 1e-13)
        assert_close(compiled, reference.inverse_dynamics(q, qd, qdd), "C against Pinocchio", 1e-10)
