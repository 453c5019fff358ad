"""Plant description API: torques along a path, payload capacity, deflection, DH, criteria.

Every result is checked against something computed another way: the model's
per-sample inverse dynamics and Pinocchio, a payload actually attached,
the static equilibrium of the robot on joint springs, forward kinematics.
"""
import warnings

import numpy as np
import pytest

from support.numerics import assert_close
from support.optional import available, needs
from support.robot_generator import random_tree_urdf
from support.robots import SHIPPED_ROBOTS, shipped_urdf
from soa_dynamics_ros import RobotModel
from soa_dynamics_ros.errors import JointLimitWarning
from soa_dynamics_ros.plant import (default_tip, dh_parameters, differentiate, evaluate_torques,
                                    path_torques, payload_capacity, read_trajectory_csv,
                                    second_derivative, trajectory_from_arrays)
from soa_dynamics_ros.plant.criteria import criteria_along_path
from soa_dynamics_ros.plant.deflection import deflection_along_path, load_stiffness
from soa_dynamics_ros.plant.torques import effort_limits

needs_pinocchio = needs("pinocchio")
if available("pinocchio"):
    from oracles.pinocchio_reference import PinocchioReference
EXAMPLE_CSV = shipped_urdf("../examples/panda_pick_place.csv")
EXAMPLE_STIFFNESS = shipped_urdf("../examples/panda_stiffness.yaml")


def urdf_text(name):
    with open(shipped_urdf(name)) as handle:
        return handle.read()


def model_of(source):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return RobotModel.from_urdf(source)


def within_limits(model, rng, count, margin=0.1):
    """Smooth random path inside the position limits (sines around the mid-range)."""
    meta = {j.name: j for j in model.joints}
    lower = np.array([meta[n].lower if np.isfinite(meta[n].lower) else -np.pi for n in model.joint_names])
    upper = np.array([meta[n].upper if np.isfinite(meta[n].upper) else np.pi for n in model.joint_names])
    middle, half = 0.5 * (lower + upper), 0.5 * (upper - lower) * (1 - margin)
    time = np.cumsum(rng.uniform(0.005, 0.015, count))
    phase, frequency = rng.uniform(0, 2 * np.pi, model.dof), rng.uniform(0.2, 0.6, model.dof)
    positions = middle + half * np.sin(frequency * time[:, None] + phase)
    return time, positions


def random_state(model, rng, count):
    time, positions = within_limits(model, rng, count)
    return (time, positions, rng.uniform(-1, 1, positions.shape) * 0.3,
            rng.uniform(-2, 2, positions.shape))


# ---------------------------------------------------------------------- differentiation
def test_differentiation_is_exact_for_quadratics_on_uneven_times(rng):
    time = np.cumsum(rng.uniform(0.01, 0.1, 40))
    a, b, c = rng.normal(size=(3, 4))
    positions = a + b * time[:, None] + c * time[:, None] ** 2
    assert_close(differentiate(time, positions), b + 2 * c * time[:, None], "velocity", 1e-9)
    assert_close(second_derivative(time, positions), np.broadcast_to(2 * c, positions.shape),
                 "acceleration", 1e-7)


def test_differentiation_converges_at_second_order(rng):
    errors = []
    for count in (100, 200, 400):
        time = np.sort(rng.uniform(0, 2, count))
        time[0], time[-1] = 0.0, 2.0
        # Smoothly uneven spacing: a warped uniform grid.
        time = np.linspace(0, 2, count) + 0.2 * np.sin(np.linspace(0, np.pi, count)) ** 2 * 0.05
        q = np.sin(3 * time)[:, None]
        errors.append((np.abs(differentiate(time, q)[:, 0] - 3 * np.cos(3 * time)).max(),
                       np.abs(second_derivative(time, q)[1:-1, 0] + 9 * np.sin(3 * time[1:-1])).max()))
    errors = np.array(errors)
    # Halving the step divides the error by about 4.
    assert np.all(errors[:-1, 0] / errors[1:, 0] > 3.0), errors
    assert np.all(errors[:-1, 1] / errors[1:, 1] > 3.0), errors


# ---------------------------------------------------------------------- torques along a path
@pytest.mark.parametrize("robot", SHIPPED_ROBOTS)
def test_path_torques_equal_per_sample_inverse_dynamics(robot, rng):
    model = model_of(shipped_urdf(robot))
    time, q, qd, qdd = random_state(model, rng, 60)
    trajectory = trajectory_from_arrays(model, time, q, qd, qdd, check_limits=False)
    torques = path_torques(model, trajectory, chunk=17)  # several chunks
    expected = np.array([model.inverse_dynamics(*s) for s in zip(q, qd, qdd)])
    assert_close(torques, expected, f"{robot}: torques vs per-sample inverse dynamics", 1e-12)


@needs_pinocchio
@pytest.mark.parametrize("robot", SHIPPED_ROBOTS + ["random"])
def test_path_torques_with_payload_and_wrench_match_pinocchio(robot, rng):
    text = random_tree_urdf(11, moving_joints=8) if robot == "random" else urdf_text(robot)
    model = model_of(text)
    reference = PinocchioReference(text, model.joint_names)
    time, q, qd, qdd = random_state(model, rng, 25)
    trajectory = trajectory_from_arrays(model, time, q, qd, qdd, check_limits=False)
    tip = model.frame_names[-1]
    wrench = rng.normal(size=6) * 5
    com = rng.uniform(-0.05, 0.05, 3)
    report = evaluate_torques(model, trajectory, payload=(tip, 1.7, com), wrenches={tip: wrench})
    assert model.payloads == {}, "the payload must be detached afterwards"
    reference.attach(tip, 1.7, com, np.zeros((3, 3)))
    expected = np.array([reference.inverse_dynamics(*s, wrenches={tip: wrench})
                         for s in zip(q, qd, qdd)])
    assert_close(report.torques, expected, f"{robot}: torques vs Pinocchio", 1e-9)


def test_report_peaks_ratios_and_first_violation():
    model = model_of(shipped_urdf("double_pendulum.urdf"))
    limits = effort_limits(model)
    time = np.linspace(0, 1, 11)
    q = np.zeros((11, 2))
    q[:, 0] = np.linspace(-np.pi / 2, 0, 11)   # from hanging to horizontal: gravity torque grows
    trajectory = trajectory_from_arrays(model, time, q, np.zeros_like(q), np.zeros_like(q),
                                        check_limits=False)
    report = evaluate_torques(model, trajectory)
    gravity = np.array([model.gravity_torques(s) for s in q])
    assert_close(report.peak, np.abs(gravity).max(axis=0), "peak")
    assert report.peak_time[0] == time[np.abs(gravity[:, 0]).argmax()]
    finite = np.isfinite(limits)
    assert_close(report.ratio[finite], (np.abs(gravity).max(axis=0) / limits)[finite], "ratio")
    # Lower a limit below the peak: the first violation is the first sample above it.
    model.tree.joints[0].effort = 0.5 * report.peak[0]
    report = evaluate_torques(model, trajectory)
    first = time[np.flatnonzero(np.abs(gravity[:, 0]) > 0.5 * np.abs(gravity[:, 0]).max())[0]]
    assert report.violated and report.first_violation == (first, model.joint_names[0])


# ---------------------------------------------------------------------- payload capacity
def _peak_ratio_with_payload(model, trajectory, link, mass, com):
    """max |tau| / limit along the path with the payload really attached (not the affine model)."""
    model.attach_payload("check", link, mass, com)
    try:
        torques = np.array([model.inverse_dynamics(*s) for s in zip(
            trajectory.positions, trajectory.velocities, trajectory.accelerations)])
    finally:
        model.detach_payload("check")
    limits = effort_limits(model)
    finite = np.isfinite(limits)
    return (np.abs(torques)[:, finite] / limits[finite]).max()


@pytest.mark.parametrize("robot, link, com", [
    ("panda.urdf", "panda_hand_tcp", (0.0, 0.0, 0.0)),
    ("panda.urdf", "panda_link7", (0.05, -0.02, 0.15)),
    ("ur5.urdf", "tool0", (0.0, 0.0, 0.05)),
    ("dual_arm_torso.urdf", "l_gripper_tool_frame", (0.0, 0.0, 0.0)),
])
def test_payload_capacity_is_tight(robot, link, com):
    model = model_of(shipped_urdf(robot))
    if robot == "dual_arm_torso.urdf":
        # The PR2's arms rely on counterbalance springs the URDF does not model: at full
        # gravity no path is feasible even unloaded, so weaken gravity for this check.
        model.gravity = [0.0, 0.0, -1.0]
    if robot == "panda.urdf":
        trajectory = read_trajectory_csv(model, EXAMPLE_CSV)
    else:
        time, q = within_limits(model, np.random.default_rng(3), 150, margin=0.5)
        trajectory = trajectory_from_arrays(model, time, q, check_limits=False)
    result = payload_capacity(model, trajectory, link, com)
    assert result.feasible_without_payload and np.isfinite(result.max_payload)
    assert result.max_payload > 0
    at_limit = _peak_ratio_with_payload(model, trajectory, link, result.max_payload, com)
    assert abs(at_limit - 1.0) <= 1e-6, f"{robot}: at the capacity the peak ratio is {at_limit}"
    over = _peak_ratio_with_payload(model, trajectory, link, 1.01 * result.max_payload, com)
    assert over > 1.0, f"{robot}: 1% over the capacity still fits ({over})"
    assert model.payloads == {}


def test_payload_capacity_of_an_infeasible_path_is_zero():
    model = model_of(shipped_urdf("panda.urdf"))
    trajectory = read_trajectory_csv(model, EXAMPLE_CSV)
    model.tree.joints[1].effort = 10.0   # panda_joint2 cannot hold the arm any more
    result = payload_capacity(model, trajectory, "panda_hand_tcp")
    assert not result.feasible_without_payload and result.max_payload == 0.0
    assert result.limiting_joint == "panda_joint2" and result.unloaded_peak_ratio > 1


def test_payload_capacity_without_effort_limits_is_unbounded():
    text = urdf_text("double_pendulum.urdf").replace('effort="', 'effort="0" old="')
    model = model_of(text)
    time, q = within_limits(model, np.random.default_rng(0), 20)
    trajectory = trajectory_from_arrays(model, time, q, check_limits=False)
    assert np.isinf(payload_capacity(model, trajectory, "tip").max_payload)


# ---------------------------------------------------------------------- deflection
def _rotation_vector(rotation):
    angle = np.arccos(np.clip((np.trace(rotation) - 1) / 2, -1, 1))
    axis = np.array([rotation[2, 1] - rotation[1, 2], rotation[0, 2] - rotation[2, 0],
                     rotation[1, 0] - rotation[0, 1]])
    return axis * (0.5 / np.sinc(angle / np.pi)) if angle > 0 else np.zeros(3)


def _equilibrium_deflection(model, q_command, stiffness, frame, wrench):
    """Static equilibrium on joint springs, K (q_c - q) = g(q) - J(q)^T w, solved by iteration;
    the frame's true displacement from forward kinematics."""
    q = q_command.copy()
    for _ in range(100):
        needed = model.inverse_dynamics(q, np.zeros(model.dof), np.zeros(model.dof),
                                        wrenches={frame: wrench})
        q_next = q_command - needed / stiffness
        if np.abs(q_next - q).max() < 1e-15:
            break
        q = q_next
    start, end = model.frame_pose(q_command, frame), model.frame_pose(q, frame)
    return np.concatenate((end[:3, 3] - start[:3, 3], _rotation_vector(end[:3, :3] @ start[:3, :3].T)))


@pytest.mark.parametrize("robot", ["panda.urdf", "ur5.urdf", "random"])
def test_deflection_matches_finite_difference_compliance(robot, rng):
    model = model_of(random_tree_urdf(5, 6, branching=0.0, mimic_fraction=0.0) if robot == "random"
                     else shipped_urdf(robot))
    frame = default_tip(model)
    _, q = within_limits(model, rng, 1)
    wrench = rng.normal(size=6) * np.r_[20, 20, 20, 2, 2, 2]
    base = rng.uniform(0.5, 2.0, model.dof) * 1e5
    errors = []
    for scale in (1.0, 10.0):
        stiffness = base * scale
        trajectory = trajectory_from_arrays(model, [0.0], q, np.zeros_like(q), np.zeros_like(q),
                                            check_limits=False)
        predicted = deflection_along_path(model, trajectory, stiffness, frame, {frame: wrench}).deflection[0]
        true = _equilibrium_deflection(model, q[0], stiffness, frame, wrench)
        errors.append(np.abs(predicted - true).max() / np.abs(true).max())
        assert errors[-1] < 1e-2, f"{robot}: J K^-1 tau_load vs equilibrium: {predicted} {true}"
    # Exact to first order: 10x stiffer, 10x less deflection, and the (second-order)
    # error relative to the deflection falls about 10x.
    assert errors[1] < errors[0] / 5, errors


def test_deflection_under_a_pure_wrench_is_the_cartesian_compliance(rng):
    model = model_of(shipped_urdf("panda.urdf"))
    frame = "panda_hand_tcp"
    _, q = within_limits(model, rng, 1)
    stiffness = rng.uniform(1e4, 5e4, model.dof)
    jacobian = model.jacobian(q[0], frame)
    compliance = jacobian @ np.diag(1 / stiffness) @ jacobian.T
    trajectory = trajectory_from_arrays(model, [0.0], q, np.zeros_like(q), np.zeros_like(q),
                                        check_limits=False)
    wrench = rng.normal(size=6)
    result = deflection_along_path(model, trajectory, stiffness, frame, {frame: wrench}, gravity=False)
    assert_close(result.deflection[0], compliance @ wrench, "compliance", 1e-12)
    assert_close(model.gravity, [0, 0, -9.81], "gravity restored")


def test_deflection_along_a_path_includes_inertial_loads(rng):
    model = model_of(shipped_urdf("panda.urdf"))
    stiffness, frame = load_stiffness(model, EXAMPLE_STIFFNESS)
    assert frame == "panda_hand_tcp"
    trajectory = read_trajectory_csv(model, EXAMPLE_CSV)
    result = deflection_along_path(model, trajectory, stiffness, frame)
    for k in (0, 150, 333):
        s = (trajectory.positions[k], trajectory.velocities[k], trajectory.accelerations[k])
        expected = model.jacobian(s[0], frame) @ (-model.inverse_dynamics(*s) / stiffness)
        assert_close(result.deflection[k], expected, f"sample {k}", 1e-12)


# ---------------------------------------------------------------------- DH
def _check_dh(model, tip, rng, what):
    for convention in ("standard", "modified"):
        table = dh_parameters(model, tip, convention)
        assert table.fk_error <= 1e-12, f"{what} {convention}: {table.fk_error}"
        meta = {j.name: j for j in model.joints}
        for _ in range(10):
            q = rng.uniform(-np.pi, np.pi, model.dof)
            error = np.abs(table.forward(q) - model.frame_pose(q, tip)).max()
            assert error <= 1e-12, f"{what} {convention}: FK from DH differs by {error}"
        for row in table.rows:
            assert row.variable == ("d" if meta[row.joint].type == "prismatic" else "theta")
            assert -np.pi <= row.alpha <= np.pi
    return table


@pytest.mark.parametrize("robot", ["panda.urdf", "ur5.urdf", "double_pendulum.urdf"])
def test_dh_round_trip_on_shipped_serial_arms(robot, rng):
    model = model_of(shipped_urdf(robot))
    _check_dh(model, default_tip(model), rng, robot)


def test_dh_of_ur5_has_the_published_lengths(rng):
    model = model_of(shipped_urdf("ur5.urdf"))
    table = dh_parameters(model, "tool0", "standard")
    assert_close(sorted(abs(r.a) for r in table.rows), [0, 0, 0, 0, 0.39225, 0.425], "a", 1e-12)
    assert_close(sorted(abs(r.d) for r in table.rows), [0, 0, 0, 0, 0.09465, 0.10915], "d", 1e-12)
    assert_close(table.base[2, 3], 0.089159, "d1 in the base transform", 1e-12)
    assert_close(table.tool[2, 3], 0.0823, "d6 in the tool transform", 1e-12)


@pytest.mark.parametrize("seed", range(12))
def test_dh_round_trip_on_random_chains(seed, rng):
    model = model_of(random_tree_urdf(seed, moving_joints=4 + seed % 7, branching=0.0,
                                      mimic_fraction=0.0, fixed_fraction=0.3))
    _check_dh(model, default_tip(model), rng, f"random chain {seed}")


def special_chain_urdf(relations, seed):
    """A chain whose consecutive axes are parallel, intersecting, collinear or random on purpose."""
    rng = np.random.default_rng(seed)
    inertial = ('<inertial><mass value="1"/><inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" '
                'izz="0.01"/></inertial>')
    links = [f'<link name="l0">{inertial}</link>']
    joints = []
    for i, relation in enumerate(relations, start=1):
        # Each joint's axis is its frame's z axis; the next joint is placed relative to it.
        if relation == "parallel":
            xyz, rpy = rng.uniform(-0.3, 0.3, 3), [0, 0, rng.uniform(-3, 3)]
        elif relation == "antiparallel":
            xyz, rpy = rng.uniform(-0.3, 0.3, 3), [np.pi, 0, rng.uniform(-3, 3)]
        elif relation == "intersecting":
            xyz, rpy = [0, 0, rng.uniform(-0.3, 0.3)], rng.uniform(-3, 3, 3)
        elif relation == "perpendicular":
            xyz, rpy = [rng.uniform(-0.3, 0.3), 0, rng.uniform(-0.3, 0.3)], [np.pi / 2, 0, 0]
        elif relation == "collinear":
            xyz, rpy = [0, 0, rng.uniform(-0.3, 0.3)], [0, 0, rng.uniform(-3, 3)]
        else:
            xyz, rpy = rng.uniform(-0.3, 0.3, 3), rng.uniform(-3, 3, 3)
        joint_type = "prismatic" if i % 4 == 0 else "revolute"
        joints.append(f'<joint name="j{i}" type="{joint_type}"><parent link="l{i - 1}"/>'
                      f'<child link="l{i}"/><origin xyz="{" ".join(map(repr, map(float, xyz)))}" '
                      f'rpy="{" ".join(map(repr, map(float, rpy)))}"/><axis xyz="0 0 1"/>'
                      '<limit lower="-2" upper="2" effort="10" velocity="1"/></joint>')
        links.append(f'<link name="l{i}">{inertial}</link>')
    joints.append(f'<joint name="tool" type="fixed"><parent link="l{len(relations)}"/>'
                  '<child link="tcp"/><origin xyz="0.1 0.02 0.2" rpy="0.3 -0.2 0.1"/></joint>')
    links.append('<link name="tcp"/>')
    return '<robot name="special">' + "".join(links + joints) + "</robot>"


@pytest.mark.parametrize("relations", [
    ["random", "parallel", "parallel", "random", "intersecting", "intersecting", "random"],
    ["intersecting", "intersecting", "intersecting", "parallel", "antiparallel", "random"],
    ["random", "collinear", "collinear", "parallel", "perpendicular", "random"],
    ["perpendicular", "perpendicular", "parallel", "intersecting", "collinear", "random"],
    ["parallel", "parallel", "parallel"],
    ["random"],
])
@pytest.mark.parametrize("seed", range(3))
def test_dh_round_trip_with_parallel_and_intersecting_axes(relations, seed, rng):
    model = model_of(special_chain_urdf(relations, seed))
    table = _check_dh(model, "tcp", rng, f"{relations}")
    kinds = [row.axis_relation for row in table.rows]
    expected = {"parallel": "parallel", "antiparallel": "parallel", "intersecting": "intersecting",
                "collinear": "collinear"}
    # relation k places joint k+1 relative to joint k: it describes the pair (k, k+1).
    for k, relation in enumerate(relations[1:]):
        if relation in expected:
            assert kinds[k] == expected[relation], (relations, kinds)


def test_dh_with_a_mimic_joint_in_the_chain(rng):
    text = special_chain_urdf(["random", "parallel", "intersecting", "random"], 4).replace(
        '<joint name="j3" type="revolute"><parent link="l2"/><child link="l3"/>',
        '<joint name="j3" type="revolute"><parent link="l2"/><child link="l3"/>'
        '<mimic joint="j1" multiplier="-0.7" offset="0.2"/>')
    model = model_of(text)
    assert "j3" not in model.joint_names
    table = _check_dh(model, "tcp", rng, "mimic chain")
    row = next(r for r in table.rows if r.joint == "j3")
    assert row.mimic_of == "j1" and row.multiplier == -0.7 and row.offset == 0.2


def test_dh_of_a_branched_robot_names_the_branch_point():
    from soa_dynamics_ros.errors import NonSerialChainError
    model = model_of(shipped_urdf("dual_arm_torso.urdf"))
    with pytest.raises(NonSerialChainError, match="branches at link 'torso_lift_link'") as error:
        dh_parameters(model, "l_gripper_tool_frame")
    assert error.value.branch_link == "torso_lift_link"
    with pytest.raises(NonSerialChainError, match="branches at link"):
        default_tip(model)
    # Joints beyond the tip do not matter: the chain up to a link before any branch is fine.
    table = dh_parameters(model, "torso_lift_link")
    assert [row.joint for row in table.rows] == ["torso_lift_joint"]
    assert table.fk_error <= 1e-12


# ---------------------------------------------------------------------- criteria
def test_criteria_against_direct_formulas(rng):
    model = model_of(shipped_urdf("panda.urdf"))
    trajectory = read_trajectory_csv(model, EXAMPLE_CSV)
    frame = "panda_hand_tcp"
    result = criteria_along_path(model, trajectory, frame)
    torques = path_torques(model, trajectory)
    utilization = (np.abs(torques) / effort_limits(model)).max(axis=1)
    assert_close(result.torque_utilization, utilization, "utilization", 1e-12)
    for k in (0, 77, 260, 500):
        q = trajectory.positions[k]
        jacobian, mass = model.jacobian(q, frame), model.mass_matrix(q)
        minv = np.linalg.inv(mass)
        assert_close(result.manipulability[k], np.sqrt(np.linalg.det(jacobian @ jacobian.T)),
                     "manipulability", 1e-9)
        assert_close(result.dynamic_manipulability[k],
                     np.sqrt(np.linalg.det(jacobian @ minv @ minv.T @ jacobian.T)),
                     "dynamic manipulability", 1e-7)
        assert_close(result.inertia_condition[k], np.linalg.cond(jacobian @ minv @ jacobian.T),
                     "condition number", 1e-6)


def test_criteria_of_a_planar_arm_use_the_available_directions():
    model = model_of(shipped_urdf("double_pendulum.urdf"))
    time, q = within_limits(model, np.random.default_rng(1), 30)
    trajectory = trajectory_from_arrays(model, time, q, check_limits=False)
    full = criteria_along_path(model, trajectory, "tip")
    assert np.all(np.isinf(full.inertia_condition))         # 2 joints cannot span 6 directions
    assert np.all(full.manipulability > 0)
    for k in (0, 10):
        jacobian = model.jacobian(q[k], "tip")
        assert_close(full.manipulability[k], np.sqrt(np.linalg.det(jacobian.T @ jacobian)), "w", 1e-9)


def test_limit_checks_warn_by_default_and_fail_when_strict():
    from soa_dynamics_ros.errors import JointLimitError
    model = model_of(shipped_urdf("panda.urdf"))
    time = np.linspace(0, 1, 5)
    q = np.tile([0.0, 0.0, 0.0, -1.0, 0.0, 1.0, 0.0], (5, 1))
    q[3:, 3] = 0.5   # above panda_joint4's upper limit -0.0698
    with pytest.warns(JointLimitWarning, match=r"panda_joint4.*position above upper limit -0.0698 "
                                               r"from t=0.75"):
        trajectory = trajectory_from_arrays(model, time, q)
    assert trajectory.limit_violations[0]["joint"] == "panda_joint4"
    with pytest.raises(JointLimitError, match="panda_joint4"):
        trajectory_from_arrays(model, time, q, strict=True)
