"""Task-space inertia, hybrid, mixed dynamics, payloads and subgraphs against Pinocchio."""
import numpy as np
import pytest

from oracles.pinocchio_reference import PinocchioReference
from support.numerics import assert_close
from support.robot_generator import random_tree_urdf
from support.robots import SHIPPED_ROBOTS, shipped_urdf
from soa_dynamics_ros import InvalidInputError, RobotModel, SingularDynamicsError, UnknownNameError
from soa_dynamics_ros.model.constrained import MixedDynamics


def _cases():
    cases = [pytest.param(open(shipped_urdf(name)).read(), id=name) for name in SHIPPED_ROBOTS]
    cases += [pytest.param(random_tree_urdf(seed, moving_joints=14, mimic_fraction=0.0),
                           id=f"random{seed}") for seed in range(300, 306)]
    cases += [pytest.param(random_tree_urdf(seed, moving_joints=14), id=f"random-mimic{seed}")
              for seed in range(306, 309)]
    return cases


@pytest.fixture(params=_cases())
def robot(request):
    model = RobotModel.from_urdf(request.param)
    return model, PinocchioReference(request.param, model.joint_names), request.param


def _deep_frames(model, count, rng):
    """Frames whose body has the most joints between it and the root."""
    depth = {name: _depth(model, frame.body) for name, frame in model.tree.frames.items()}
    ranked = sorted(depth, key=lambda name: (-depth[name], name))
    return [str(name) for name in rng.permutation(ranked[:max(count, 4)])[:count]]


def _depth(model, body):
    count = 0
    while body > 0:
        body, count = model.tree.parent[body], count + 1
    return count


def _state(model, rng):
    return rng.uniform(-np.pi, np.pi, model.dof), rng.normal(size=model.dof), rng.normal(size=model.dof)


def _well_conditioned(matrix, limit=1e8):
    return np.linalg.cond(matrix) < limit


def test_task_space_compliance_against_j_minv_jt(robot, rng):
    model, ref, _ = robot
    frames = _deep_frames(model, 2, rng)
    for _ in range(15):
        q = _state(model, rng)[0]
        for targets in ([frames[0]], frames):
            info = model.task_space_inertia(q, targets, damping=1e-3, return_info=True)
            expected = ref.task_space_compliance(q, targets)
            assert_close(info.inertia_inverse, expected, "Lambda^-1", 1e-9)
            assert info.rank == np.linalg.matrix_rank(expected, tol=1e-10 * np.abs(expected).max())
            if info.rank == expected.shape[0] and _well_conditioned(expected):
                assert_close(model.task_space_inertia(q, targets), np.linalg.inv(expected),
                             "Lambda", 1e-9 * np.linalg.cond(expected))
        translational = model.task_space_inertia(q, frames[0], part="translational", damping=1e-3,
                                                 return_info=True)
        assert_close(translational.inertia_inverse, ref.task_space_compliance(q, [frames[0]])[:3, :3],
                     "translational Lambda^-1", 1e-9)


def _random_constraints(model, ref, rng, q, qd, columns=None):
    """Constraint sets (1-2 frames, 1-4 rows each) that the joints can satisfy independently."""
    for _ in range(50):
        frames = _deep_frames(model, rng.integers(1, 3), rng)
        constraints = []
        for frame in frames:
            rows = rng.integers(1, 5)
            constraints.append((frame, rng.normal(size=(6, rows)), rng.normal(size=rows)))
        stacked = np.vstack([alpha.T @ ref.jacobian(q, frame)[:, columns if columns is not None
                                                                else slice(None)]
                             for frame, alpha, _ in constraints])
        if np.linalg.matrix_rank(stacked) == stacked.shape[0] and _well_conditioned(
                stacked @ stacked.T, 1e6):
            return constraints
    pytest.fail("no independent constraint set found")


def test_hybrid_dynamics_against_gauss_kkt(robot, rng):
    model, ref, _ = robot
    for _ in range(15):
        q, qd, tau = _state(model, rng)
        wrenches = {model.frame_names[-1]: rng.normal(size=6)}
        constraints = _random_constraints(model, ref, rng, q, qd)
        result = model.hybrid_dynamics(q, qd, constraints, tau, wrenches)
        qdd, nu, constraint = ref.hybrid_dynamics(q, qd, constraints, tau, wrenches)
        scale = np.linalg.cond(constraint @ constraint.T)
        assert_close(result.qdd, qdd, "qdd", 1e-9 * scale)
        assert_close(result.nu, nu, "nu", 1e-9 * scale)
        assert_close(result.constraint_torques, constraint.T @ nu, "constraint torques",
                     1e-9 * scale)
        assert result.rank == constraint.shape[0] and result.dropped_directions.shape[1] == 0
        # Physical consistency, no reference library involved.
        assert_close(model.forward_dynamics(q, qd, tau + result.constraint_torques, wrenches),
                     result.qdd, "FD(tau + constraint torques)", 1e-8)
        for frame, alpha, beta in constraints:
            achieved = ref.classical_drift(q, qd, frame) + ref.jacobian(q, frame) @ result.qdd
            assert_close(alpha.T @ achieved, beta, f"constraint at {frame}", 1e-10 * scale)
            assert_close(result.frame_accelerations[frame], achieved, "reported acceleration",
                         1e-9 * scale)


def test_holding_a_frame_still_includes_gravity(rng):
    """alpha = I, beta = 0: the frame does not fall, whatever gravity is."""
    model = RobotModel.from_urdf(shipped_urdf("panda.urdf"))
    q = np.array([0.1, -0.6, 0.2, -2.2, 0.1, 1.7, 0.6])
    result = model.hybrid_dynamics(q, np.zeros(7), [("panda_hand_tcp", np.eye(6), np.zeros(6))])
    assert_close(result.frame_accelerations["panda_hand_tcp"], np.zeros(6), "held still", 1e-10)
    free = model.hybrid_dynamics(q, np.zeros(7), [("panda_hand_tcp", np.zeros((6, 1)) + np.eye(6)[:, [0]],
                                                   np.zeros(1))])
    # Constraining x only, the frame falls along -z.
    assert free.frame_accelerations["panda_hand_tcp"][2] < -1.0


def test_redundant_constraints_are_truncated_not_nan():
    model = RobotModel.from_urdf(shipped_urdf("panda.urdf"))
    q = np.array([0.1, -0.6, 0.2, -2.2, 0.1, 1.7, 0.6])
    alpha = np.eye(6)[:, [2, 2, 0]]
    result = model.hybrid_dynamics(q, np.zeros(7), [("panda_hand_tcp", alpha, [0.5, 0.5, 0.0])])
    assert result.rank == 2 and result.dropped_directions.shape == (3, 1)
    assert_close(abs(result.dropped_directions[:, 0]), [2**-0.5, 2**-0.5, 0], "dropped", 1e-9)
    assert np.all(np.isfinite(result.qdd))
    assert_close(result.frame_accelerations["panda_hand_tcp"][[2, 0]], [0.5, 0.0], "held", 1e-9)


def test_singular_configurations_raise_or_damp_never_nan():
    pendulum = RobotModel.from_urdf(shipped_urdf("double_pendulum.urdf"))
    q = np.array([0.3, 0.4])
    for part in ("full", "translational"):
        with pytest.raises(SingularDynamicsError, match="only 2 of"):
            pendulum.task_space_inertia(q, "tip", part=part)
        damped = pendulum.task_space_inertia(q, "tip", part=part, damping=1e-6, return_info=True)
        assert np.all(np.isfinite(damped.inertia)) and damped.rank == 2
        assert damped.condition_number == np.inf
    ur5 = RobotModel.from_urdf(shipped_urdf("ur5.urdf"))
    stretched = np.zeros(6)  # wrist 2 at zero aligns wrist 1 and wrist 3: a wrist singularity
    with pytest.raises(SingularDynamicsError):
        ur5.task_space_inertia(stretched, "tool0")
    assert np.all(np.isfinite(ur5.task_space_inertia(stretched, "tool0", damping=1e-4)))
    result = ur5.hybrid_dynamics(stretched, np.zeros(6), [("tool0", np.eye(6), np.zeros(6))])
    assert np.all(np.isfinite(result.qdd)) and result.rank < 6


def test_mixed_dynamics_against_partitioned_solve(robot, rng):
    model, ref, _ = robot
    for _ in range(15):
        q, qd, qdd = _state(model, rng)
        tau = rng.normal(size=model.dof) * 5
        mask = rng.random(model.dof) < 0.5
        prescribed = [name for name, p in zip(model.joint_names, mask) if p]
        wrenches = {model.frame_names[-1]: rng.normal(size=6)}
        qdd_all, tau_all = model.mixed_dynamics(q, qd, qdd, tau, prescribed, wrenches)
        mass = ref.mass_matrix(q)
        bias = ref.inverse_dynamics(q, qd, np.zeros(model.dof), wrenches)
        free = ~mask
        expected_qdd = qdd.copy()
        expected_qdd[free] = np.linalg.solve(mass[np.ix_(free, free)],
                                             tau[free] - bias[free] - mass[np.ix_(free, mask)] @ qdd[mask])
        expected_tau = tau.copy()
        expected_tau[mask] = mass[mask] @ expected_qdd + bias[mask]
        assert_close(qdd_all, expected_qdd, "mixed qdd", 1e-9 * np.linalg.cond(mass))
        assert_close(tau_all, expected_tau, "mixed tau", 1e-9 * np.linalg.cond(mass))


def test_payloads_against_pinocchio_and_exact_detach(robot, rng):
    model, ref, xml = robot
    links = _deep_frames(model, 2, rng)
    for index, link in enumerate(links):
        mass, com = rng.uniform(0.5, 3), rng.normal(size=3) * 0.1
        a, b, c = rng.uniform(0.001, 0.01, 3)
        rotation = np.linalg.qr(rng.normal(size=(3, 3)))[0]
        inertia = rotation @ np.diag([b + c, a + c, a + b]) @ rotation.T
        model.attach_payload(f"p{index}", link, mass, com, inertia)
        ref.attach(link, mass, com, inertia)
    for _ in range(5):
        q, qd, qdd = _state(model, rng)
        assert_close(model.inverse_dynamics(q, qd, qdd), ref.inverse_dynamics(q, qd, qdd), "ID")
        assert_close(model.mass_matrix(q), ref.mass_matrix(q), "M")
        assert_close(model.forward_dynamics(q, qd, qdd), ref.forward_dynamics(q, qd, qdd), "FD",
                     1e-9 * np.linalg.cond(ref.mass_matrix(q)))
        assert_close(model.task_space_inertia(q, links[0], damping=1e-3, return_info=True).inertia_inverse,
                     ref.task_space_compliance(q, [links[0]]), "Lambda^-1")
    assert set(model.payloads) == {"p0", "p1"}
    model.detach_payload("p0")
    model.detach_payload("p1")
    q, qd, qdd = _state(model, np.random.default_rng(0))
    fresh = RobotModel.from_urdf(xml)
    np.testing.assert_array_equal(model.tree.body_inertia, fresh.tree.body_inertia)
    np.testing.assert_array_equal(model.inverse_dynamics(q, qd, qdd), fresh.inverse_dynamics(q, qd, qdd))


def test_subgraph_locks_the_other_joints(robot, rng):
    model, ref, _ = robot
    chosen = sorted(rng.choice(model.dof, size=max(1, model.dof // 2), replace=False))
    names = [model.joint_names[i] for i in chosen]
    sub = model.subgraph(names)
    assert sub.joint_names == names
    frames = _deep_frames(model, 1, rng)
    for _ in range(8):
        q = _state(model, rng)[0]
        qd, tau = rng.normal(size=len(names)), rng.normal(size=len(names))
        full_qd = np.zeros(model.dof)
        full_qd[chosen] = qd
        mass = ref.mass_matrix(q)[np.ix_(chosen, chosen)]
        bias = ref.inverse_dynamics(q, full_qd, np.zeros(model.dof))[chosen]
        assert_close(sub.mass_matrix(q), mass, "subgraph M")
        assert_close(sub.jacobian(q, frames[0]), ref.jacobian(q, frames[0])[:, chosen], "subgraph J")
        assert_close(sub.forward_dynamics(q, qd, tau), np.linalg.solve(mass, tau - bias),
                     "subgraph FD", 1e-9 * np.linalg.cond(mass))
        info = sub.task_space_inertia(q, frames[0], damping=1e-3, return_info=True)
        assert_close(info.inertia_inverse, ref.task_space_compliance(q, frames, chosen),
                     "subgraph Lambda^-1")
        jacobian = ref.jacobian(q, frames[0])[:, chosen]
        rows = min(2, np.linalg.matrix_rank(jacobian))
        if rows == 0:
            continue
        alpha = np.linalg.svd(jacobian)[0][:, :rows]  # directions the subset can move
        constraints = [(frames[0], alpha, rng.normal(size=rows))]
        result = sub.hybrid_dynamics(q, qd, constraints, tau)
        qdd, nu, constraint = ref.hybrid_dynamics(q, qd, constraints, tau, columns=chosen)
        scale = np.linalg.cond(mass) * np.linalg.cond(constraint @ constraint.T)
        assert_close(result.qdd, qdd, "subgraph hybrid qdd", 1e-9 * scale)
        assert_close(result.constraint_torques, constraint.T @ nu, "subgraph torques", 1e-9 * scale)


@pytest.fixture(scope="module")
def panda():
    return RobotModel.from_urdf(shipped_urdf("panda.urdf"))


@pytest.mark.parametrize("constraints, error, message", [
    ([("panda_hand_tcp", np.eye(5), np.zeros(5))], InvalidInputError, "6 x m"),
    ([("panda_hand_tcp", np.ones((6, 7)), np.zeros(7))], InvalidInputError, "6 x m"),
    ([("panda_hand_tcp", np.eye(6), np.zeros(5))], InvalidInputError, "beta must have shape"),
    ([("panda_hand_tcp", np.eye(6) * np.nan, np.zeros(6))], InvalidInputError, "NaN"),
    ([("panda_hand_tcp", np.eye(6), [0, 0, 0, 0, 0, np.inf])], InvalidInputError, "NaN or inf"),
    ([("panda_hnd", np.eye(6), np.zeros(6))], UnknownNameError, "did you mean"),
    ([("panda_hand_tcp", np.eye(6))], InvalidInputError, "must be \\(frame, alpha, beta\\)"),
    ([], InvalidInputError, "at least one constraint"),
    ("panda_hand_tcp", InvalidInputError, "list of"),
])
def test_bad_constraints(panda, constraints, error, message):
    with pytest.raises(error, match=message):
        panda.hybrid_dynamics(np.zeros(7), np.zeros(7), constraints)


def test_bad_task_space_and_mixed_arguments(panda):
    q = np.zeros(7)
    with pytest.raises(InvalidInputError, match="part must be"):
        panda.task_space_inertia(q, "panda_hand", part="linear")
    with pytest.raises(InvalidInputError, match="damping"):
        panda.task_space_inertia(q, "panda_hand", damping=-1)
    with pytest.raises(UnknownNameError, match="unknown frame"):
        panda.task_space_inertia(q, ["panda_hand", "gripper"])
    with pytest.raises(UnknownNameError, match="unknown joint 'panda_joint9'"):
        panda.mixed_dynamics(q, q, q, q, ["panda_joint9"])
    with pytest.raises(UnknownNameError, match="unknown joint"):
        panda.subgraph(["panda_joint1", "elbow"])


@pytest.mark.parametrize("kwargs, message", [
    (dict(mass=-1.0), "mass -1.0 is not positive"),
    (dict(mass=np.nan), "NaN"),
    (dict(mass=1.0, inertia=np.diag([0.01, 0.01, 0.05])), "triangle"),
    (dict(mass=1.0, inertia=np.diag([0.01, -0.01, 0.01])), "positive definite"),
    (dict(mass=1.0, com=[0, 0]), "com must have shape"),
    (dict(mass=1.0, inertia=np.eye(2)), "3x3"),
])
def test_bad_payloads_change_nothing(panda, kwargs, message):
    q = np.full(7, 0.3)
    before = panda.gravity_torques(q)
    with pytest.raises(InvalidInputError, match=message):
        panda.attach_payload("box", "panda_hand", **kwargs)
    assert panda.payloads == {}
    np.testing.assert_array_equal(panda.gravity_torques(q), before)
    with pytest.raises(UnknownNameError, match="unknown payload 'box'"):
        panda.detach_payload("box")
    with pytest.raises(UnknownNameError, match="unknown frame"):
        panda.attach_payload("box", "hand", 1.0)


@pytest.mark.parametrize("kernels", ["auto", "off"])
def test_mixed_result_and_task_space_info_are_their_own_types(kernels, rng):
    """Mixed dynamics answers a named result (like hybrid dynamics) on the compiled and the
    numpy path, and task-space information comes from its own call, for a model and a
    subgraph, against Pinocchio."""
    urdf = open(shipped_urdf("panda.urdf")).read()
    model = RobotModel.from_urdf(urdf, kernels=kernels)
    ref = PinocchioReference(urdf, model.joint_names)
    q, qd, qdd = _state(model, rng)
    tau = rng.normal(size=model.dof)
    prescribed = model.joint_names[:3]
    mixed = model.mixed_dynamics(q, qd, qdd, tau, prescribed)
    mass, bias = ref.mass_matrix(q), ref.inverse_dynamics(q, qd, np.zeros(model.dof))
    assert isinstance(mixed, MixedDynamics)
    assert_close(mixed.tau[:3], mass[:3] @ mixed.qdd + bias[:3], "mixed tau", 1e-9)
    assert_close(mass[3:] @ mixed.qdd + bias[3:], tau[3:], "mixed free rows", 1e-9)
    frame = "panda_hand_tcp"
    for target in (model, model.subgraph(model.joint_names)):
        info = target.task_space_inertia_info(q, frame, damping=1e-3)
        assert_close(info.inertia_inverse, ref.task_space_compliance(q, [frame]), "Lambda^-1",
                     1e-9)
        assert info.rank == 6 and info.damping == 1e-3
