"""Floating-base models against Pinocchio's free-flyer (``buildModel(urdf, JointModelFreeFlyer())``)
on humanoids and quadrupeds of example-robot-data, plus physics checks that need no library."""

import numpy as np
import pytest

from soa_dynamics_ros import RobotModel
from soa_dynamics_ros.errors import (InvalidInputError, SingularDynamicsError, UnknownNameError,
                                     UnsupportedJointError)
from soa_dynamics_ros.model.floating_base import FloatingBaseModel
from support.free_flyer import Reference, quiet_model
from support.robots import REPO, example_robot_text
from support.optional import require

pin = require("pinocchio")

ROBOTS = {
    "talos": "talos_data/robots/talos_reduced.urdf",
    "solo12": "solo_description/robots/solo12.urdf",
    "anymal_c": "anymal_c_simple_description/urdf/anymal.urdf",
    "go2": "go2_description/urdf/go2.urdf",
    "a1": "a1_description/urdf/a1.urdf",
    "hyq": "hyq_description/robots/hyq_no_sensors.urdf",
}
TOLERANCE = 1e-9


@pytest.fixture(scope="module", params=sorted(ROBOTS))
def robot(request):
    text = example_robot_text(ROBOTS[request.param])
    model = quiet_model(text, floating_base=True)
    return model, Reference(text, model)


def _state(model, rng):
    quaternion = rng.normal(size=4)
    quaternion /= np.linalg.norm(quaternion)
    q = np.r_[rng.normal(size=3), quaternion, rng.uniform(-1.0, 1.0, model.nv - 6)]
    v, a, tau = rng.normal(size=(3, model.nv))
    return q, v, a, tau


def assert_relative(ours, reference, what):
    reference = np.asarray(reference, dtype=float)
    error = np.abs(np.asarray(ours) - reference).max() / max(np.abs(reference).max(), 1e-300)
    assert error <= TOLERANCE, f"{what}: relative error {error:.2e}"


def _symmetric(upper):
    return np.triu(upper) + np.triu(upper, 1).T


def test_sizes_and_names_follow_the_free_flyer(robot):
    model, reference = robot
    assert isinstance(model, FloatingBaseModel) and isinstance(model, RobotModel)
    n = len(model.joint_names)
    assert (model.nq, model.nv, model.dof) == (7 + n, 6 + n, 6 + n)
    assert set(model.joint_names) == set(reference.model.names[2:])
    assert not any(name.startswith("free_flyer") for name in model.frame_names)
    assert_relative(model.neutral_configuration(), pin.neutral(reference.model)[reference.q_index],
                    "neutral configuration")


def test_dynamics_match_pinocchio(robot, rng):
    model, reference = robot
    pm, data = reference.model, reference.data
    for _ in range(2):
        q, v, a, tau = _state(model, rng)
        qp, vp, ap, taup = reference.q(q), reference.v(v), reference.v(a), reference.v(tau)
        assert_relative(model.inverse_dynamics(q, v, a),
                        reference.vector(pin.rnea(pm, data, qp, vp, ap)), "inverse dynamics")
        assert_relative(model.gravity_torques(q),
                        reference.vector(pin.computeGeneralizedGravity(pm, data, qp)), "gravity")
        assert_relative(model.bias_torques(q, v),
                        reference.vector(pin.nonLinearEffects(pm, data, qp, vp)), "bias")
        assert_relative(model.mass_matrix(q), reference.matrix(_symmetric(pin.crba(pm, data, qp))),
                        "mass matrix")
        assert_relative(model.forward_dynamics(q, v, tau),
                        reference.vector(pin.aba(pm, data, qp, vp, taup)), "forward dynamics")


def test_derivatives_match_pinocchio(robot, rng):
    model, reference = robot
    pm, data = reference.model, reference.data
    q, v, a, tau = _state(model, rng)
    qp, vp, ap, taup = reference.q(q), reference.v(v), reference.v(a), reference.v(tau)
    pin.computeRNEADerivatives(pm, data, qp, vp, ap)
    dtau_dq, dtau_dv = model.inverse_dynamics_derivatives(q, v, a)
    assert_relative(dtau_dq, reference.matrix(data.dtau_dq), "dtau/dq")
    assert_relative(dtau_dv, reference.matrix(data.dtau_dv), "dtau/dv")
    pin.computeABADerivatives(pm, data, qp, vp, taup)
    da_dq, da_dv, da_dtau = model.forward_dynamics_derivatives(q, v, tau)
    assert_relative(da_dq, reference.matrix(data.ddq_dq), "da/dq")
    assert_relative(da_dv, reference.matrix(data.ddq_dv), "da/dv")
    assert_relative(da_dtau, reference.matrix(_symmetric(data.Minv)), "da/dtau")
    assert_relative(model.gravity_derivatives(q), reference.matrix(
        pin.computeGeneralizedGravityDerivatives(pm, data, qp)), "dg/dq")


def test_kinematics_and_centroidal_quantities_match_pinocchio(robot, rng):
    model, reference = robot
    pm, data = reference.model, reference.data
    q, v, _, _ = _state(model, rng)
    qp, vp = reference.q(q), reference.v(v)
    pin.forwardKinematics(pm, data, qp)
    pin.updateFramePlacements(pm, data)
    poses = model.frame_poses(q)
    for frame in model.frame_names[::5] + [model.base_link]:
        index = pm.getFrameId(frame, pin.BODY)
        assert_relative(model.frame_pose(q, frame), data.oMf[index].homogeneous, frame)
        assert_relative(poses[frame], data.oMf[index].homogeneous, frame)
        jacobian = pin.computeFrameJacobian(pm, data, qp, index, pin.LOCAL_WORLD_ALIGNED)
        assert_relative(model.jacobian(q, frame), reference.matrix(jacobian, rows=False), frame)
    assert_relative(model.center_of_mass(q), pin.centerOfMass(pm, data, qp), "centre of mass")
    assert_relative(model.center_of_mass_jacobian(q),
                    reference.matrix(pin.jacobianCenterOfMass(pm, data, qp), rows=False),
                    "centre of mass Jacobian")
    assert_relative(model.centroidal_momentum_matrix(q),
                    reference.matrix(pin.ccrba(pm, data, qp, vp), rows=False), "Ag")
    pin.computeCentroidalMomentumTimeVariation(pm, data, qp, vp, np.zeros(pm.nv))
    assert_relative(model.centroidal_momentum_bias(q, v), data.dhg.vector, "Ag_dot v")
    assert abs(model.total_mass - pin.computeTotalMass(pm)) <= TOLERANCE * model.total_mass


def _foot(model):
    return next(name for name in model.frame_names
                if any(tag in name.lower() for tag in ("foot", "sole", "ankle")))


def test_wrenches_task_space_hybrid_and_mixed_dynamics_match_pinocchio(robot, rng):
    model, reference = robot
    pm, data = reference.model, reference.data
    q, v, a, tau = _state(model, rng)
    qp, vp = reference.q(q), reference.v(v)
    foot = _foot(model)
    index = pm.getFrameId(foot, pin.BODY)
    jacobian = reference.matrix(pin.computeFrameJacobian(pm, data, qp, index,
                                                         pin.LOCAL_WORLD_ALIGNED), rows=False)
    mass = reference.matrix(_symmetric(pin.crba(pm, data, qp)))
    bias = reference.vector(pin.nonLinearEffects(pm, data, qp, vp))
    wrench = rng.normal(size=6) * 10
    # Wrenches in world axes about the link origin: tau = M a + h - J^T w.
    assert_relative(model.inverse_dynamics(q, v, a, {foot: wrench}),
                    mass @ a + bias - jacobian.T @ wrench, "wrenched inverse dynamics")
    assert_relative(model.forward_dynamics(q, v, tau, {foot: wrench}),
                    np.linalg.solve(mass, tau + jacobian.T @ wrench - bias), "wrenched forward")
    assert_relative(model.task_space_inertia(q, foot),
                    np.linalg.inv(jacobian @ np.linalg.solve(mass, jacobian.T)), "Lambda")
    translational = jacobian[:3]
    assert_relative(model.task_space_inertia(q, foot, part="translational"),
                    np.linalg.inv(translational @ np.linalg.solve(mass, translational.T)),
                    "translational Lambda")
    # The foot held still: its classical acceleration (Pinocchio's) is zero.
    held = model.hybrid_dynamics(q, v, [(foot, np.eye(6), np.zeros(6))], tau)
    assert_relative(mass @ held.qdd + bias, tau + held.constraint_torques, "hybrid equation")
    pin.forwardKinematics(pm, data, qp, vp, reference.v(held.qdd))
    pin.updateFramePlacements(pm, data)
    classical = pin.getFrameClassicalAcceleration(pm, data, index, pin.LOCAL_WORLD_ALIGNED)
    assert np.abs(classical.vector).max() <= TOLERANCE * np.abs(held.qdd).max()
    assert np.abs(held.frame_accelerations[foot]).max() <= TOLERANCE * np.abs(held.qdd).max()
    prescribed = model.joint_names[::2]
    qdd, tau_all = model.mixed_dynamics(q, v, a, tau, prescribed)
    assert_relative(tau_all, mass @ qdd + bias, "mixed dynamics equation")
    chosen = [6 + model.joint_index(name) for name in prescribed]
    free = sorted(set(range(model.nv)) - set(chosen))
    assert_relative(qdd[chosen], a[chosen], "prescribed accelerations")
    assert_relative(tau_all[free], tau[free], "free torques")


def test_batches_match_single_calls(robot, rng):
    model, _ = robot
    samples = [_state(model, rng) for _ in range(3)]
    Q, V, A, TAU = (np.array(column) for column in zip(*samples))
    assert_relative(model.inverse_dynamics_batch(Q, V, A),
                    [model.inverse_dynamics(*sample[:3]) for sample in samples], "ID batch")
    assert_relative(model.forward_dynamics_batch(Q, V, TAU),
                    [model.forward_dynamics(q, v, tau) for q, v, _, tau in samples], "FD batch")
    assert_relative(model.gravity_torques_batch(Q), [model.gravity_torques(q) for q in Q],
                    "gravity batch")
    dq, dv = model.inverse_dynamics_derivatives_batch(Q, V, A)
    assert_relative(dq[1], model.inverse_dynamics_derivatives(*samples[1][:3])[0], "dq batch")


def test_integrate_and_difference_match_pinocchio(robot, rng):
    model, reference = robot
    for scale in (1e-7, 0.3, 3.0):
        q, v, _, _ = _state(model, rng)
        q1 = model.integrate(q, v, scale)
        theirs = pin.integrate(reference.model, reference.q(q), reference.v(v) * scale)
        sign = np.sign(theirs[6] * q1[6])     # q and -q are the same rotation
        assert_relative(q1[:3], theirs[:3], "integrated position")
        assert_relative(q1[3:7] * sign, theirs[3:7], "integrated quaternion")
        assert_relative(q1[7:], theirs[reference.q_index[7:]], "integrated joints")
        q2 = _state(model, rng)[0]
        assert_relative(model.difference(q, q2), reference.vector(
            pin.difference(reference.model, reference.q(q), reference.q(q2))), "difference")
        if scale < 3.0:     # within the shorter rotation, difference inverts integrate
            assert_relative(model.difference(q, q1), v * scale, "round trip")


def test_free_fall_and_momentum_conservation(robot, rng):
    """Physics without a library: with no joint torques the centre of mass falls at g,
    and without gravity the centroidal momentum is constant."""
    _check_free_fall(robot[0], rng)


def test_mimic_joints_beside_a_free_base_fall_freely(rng):
    """The dual-arm torso's grippers are mimic joints (dynamics through M, not the
    articulated-body recursion)."""
    model = RobotModel.from_urdf(str(REPO / "urdf" / "dual_arm_torso.urdf"), floating_base=True)
    assert model.nv == 6 + len(model.joint_names)
    _check_free_fall(model, rng)


def _check_free_fall(model, rng):
    q, v, _, _ = _state(model, rng)
    rest = np.zeros(model.nv)
    qdd = model.forward_dynamics(q, rest, rest)
    np.testing.assert_allclose(model.center_of_mass_jacobian(q) @ qdd, model.gravity,
                               atol=1e-9 * 9.81)
    qdd = model.forward_dynamics(q, v, rest)
    falling = model.centroidal_momentum_matrix(q) @ qdd + model.centroidal_momentum_bias(q, v)
    np.testing.assert_allclose(falling, np.r_[model.total_mass * model.gravity, np.zeros(3)],
                               atol=1e-8 * model.total_mass * 9.81)


def test_bad_configurations_are_refused_and_change_nothing(robot, rng):
    model, _ = robot
    q, v, a, _ = _state(model, rng)
    before = model.inverse_dynamics(q, v, a)
    for bad, message in ((np.r_[q[:3], 2 * q[3:7], q[7:]], "unit norm.*norm is 2"),
                         (np.r_[q[:3], [0.0, 0.0, 0.0, 0.0], q[7:]], "unit norm"),
                         (np.r_[q[:3], [np.nan, 0.0, 0.0, 1.0], q[7:]], "NaN"),
                         (q[:-1], "shape")):
        for call in (lambda: model.inverse_dynamics(bad, v, a), lambda: model.mass_matrix(bad),
                     lambda: model.frame_pose(bad, model.base_link),
                     lambda: model.integrate(bad, v, 0.1),
                     lambda: model.inverse_dynamics_batch([bad], [v], [a])):
            with pytest.raises(InvalidInputError, match=message):
                call()
    with pytest.raises(InvalidInputError, match="shape"):
        model.inverse_dynamics(q, v[1:], a)
    # NaN in a joint is named at its index in this model's vectors, not the engine's.
    for name, vector in (("q", q), ("v", v), ("a", a)):
        bad = vector.copy()
        bad[10] = np.nan
        arguments = {"q": q, "v": v, "a": a, name: bad}
        with pytest.raises(InvalidInputError, match=rf"{name} holds NaN or inf at index \[10\]"):
            model.inverse_dynamics(**arguments)
        if name == "q":
            with pytest.raises(InvalidInputError, match=r"q holds NaN or inf at index \[10\]"):
                model.mass_matrix(bad)
    with pytest.raises(UnknownNameError):
        model.jacobian(q, "free_flyer_world")
    with pytest.raises(InvalidInputError, match="subgraph is not available"):
        model.subgraph(model.joint_names[:2])
    np.testing.assert_array_equal(model.inverse_dynamics(q, v, a), before)


def test_quaternion_within_tolerance_is_taken_as_unit(robot, rng):
    model, _ = robot
    q, v, a, _ = _state(model, rng)
    nearly = q.copy()
    nearly[3:7] *= 1.0 + 5e-7
    assert_relative(model.inverse_dynamics(nearly, v, a), model.inverse_dynamics(q, v, a),
                    "quaternion within tolerance")


FREE_ROOT = ('<robot name="r"><link name="world"/>'
             '<link name="base"><inertial><mass value="2"/><origin xyz="0.1 0 0"/>'
             '<inertia ixx="0.1" iyy="0.2" izz="0.3" ixy="0" ixz="0" iyz="0"/></inertial></link>'
             '<link name="arm"><inertial><mass value="1"/><origin xyz="0 0 0.2"/>'
             '<inertia ixx="0.01" iyy="0.01" izz="0.02" ixy="0" ixz="0" iyz="0"/></inertial></link>'
             '{root_joint}'
             '<joint name="shoulder" type="continuous"><parent link="base"/><child link="arm"/>'
             '<origin xyz="0 0.1 0.3"/><axis xyz="0 1 0"/></joint></robot>')
FLOATING = '<joint name="free" type="floating"><parent link="world"/><child link="base"/>{}</joint>'


def _without_world(text):
    return text.replace('<link name="world"/>', "").replace("{root_joint}", "")


def test_a_floating_root_joint_loads_as_the_free_flyer(rng):
    text = FREE_ROOT.replace("{root_joint}", FLOATING.format(""))
    from_joint = RobotModel.from_urdf(text)
    requested = RobotModel.from_urdf(_without_world(FREE_ROOT), floating_base=True)
    assert from_joint.joint_names == requested.joint_names == ["shoulder"]
    assert "world" not in from_joint.frame_names
    q, v, a, _ = _state(from_joint, rng)
    assert_relative(from_joint.inverse_dynamics(q, v, a), requested.inverse_dynamics(q, v, a),
                    "floating joint vs floating_base=True")
    reference = pin.buildModelFromXML(_without_world(FREE_ROOT), pin.JointModelFreeFlyer())
    angle = q[7]    # Pinocchio's continuous joint is (cos, sin)
    assert_relative(from_joint.inverse_dynamics(q, v, a), pin.rnea(
        reference, reference.createData(), np.r_[q[:7], np.cos(angle), np.sin(angle)], v, a),
        "continuous joint beside a free base")


def test_floating_joints_the_free_flyer_cannot_be_are_refused_by_name():
    text = FREE_ROOT.replace("{root_joint}", FLOATING.format(""))
    with pytest.raises(UnsupportedJointError, match="already hangs from the world.*'free'"):
        RobotModel.from_urdf(text, floating_base=True)
    with pytest.raises(UnsupportedJointError, match="'free'.*floating.*origin"):
        RobotModel.from_urdf(FREE_ROOT.replace("{root_joint}", FLOATING.format(
            '<origin xyz="0 0 1"/>')))
    heavy_world = FREE_ROOT.replace('<link name="world"/>', '<link name="world"><inertial>'
                                    '<mass value="1"/><inertia ixx="1" iyy="1" izz="1" ixy="0" '
                                    'ixz="0" iyz="0"/></inertial></link>')
    with pytest.raises(UnsupportedJointError, match="'free'.*floating.*has mass"):
        RobotModel.from_urdf(heavy_world.replace("{root_joint}", FLOATING.format("")))
    below = _without_world(FREE_ROOT).replace(
        'type="continuous"', 'type="floating"').replace('<axis xyz="0 1 0"/>', "")
    with pytest.raises(UnsupportedJointError, match="'shoulder'.*floating.*root link"):
        RobotModel.from_urdf(below)
    planar = _without_world(FREE_ROOT).replace('type="continuous"', 'type="planar"')
    with pytest.raises(UnsupportedJointError, match="'shoulder'.*planar"):
        RobotModel.from_urdf(planar, floating_base=True)


def test_fixed_base_models_have_the_trivial_configuration_space(rng):
    model = RobotModel.from_urdf(_without_world(FREE_ROOT))
    assert (model.nq, model.nv) == (1, 1)
    np.testing.assert_array_equal(model.neutral_configuration(), [0.0])
    np.testing.assert_allclose(model.integrate([0.5], [2.0], 0.25), [1.0])
    np.testing.assert_allclose(model.difference([0.5], [1.0]), [0.5])
    with pytest.raises(InvalidInputError, match="dt must be finite"):
        model.integrate([0.5], [2.0], float("nan"))


@pytest.mark.parametrize("kernels", ["off", "generic"])
def test_every_path_of_the_chain_model_gives_pinocchio_s_answers(kernels, rng):
    """The numpy path and the generic module (the per-robot kernels: bench_floating_base.py
    prepares them on Talos) serve the same floating-base answers."""
    text = example_robot_text(ROBOTS["solo12"])
    model = quiet_model(text, floating_base=True, kernels=kernels)
    reference = Reference(text, model)
    pm, data = reference.model, reference.data
    q, v, a, tau = _state(model, rng)
    qp, vp, ap, taup = reference.q(q), reference.v(v), reference.v(a), reference.v(tau)
    assert_relative(model.inverse_dynamics(q, v, a),
                    reference.vector(pin.rnea(pm, data, qp, vp, ap)), "inverse dynamics")
    assert_relative(model.forward_dynamics(q, v, tau),
                    reference.vector(pin.aba(pm, data, qp, vp, taup)), "forward dynamics")
    assert_relative(model.mass_matrix(q), reference.matrix(_symmetric(pin.crba(pm, data, qp))),
                    "mass matrix")
    pin.computeRNEADerivatives(pm, data, qp, vp, ap)
    assert_relative(model.inverse_dynamics_derivatives(q, v, a)[0],
                    reference.matrix(data.dtau_dq), "dtau/dq")
    assert_relative(model.centroidal_momentum_matrix(q),
                    reference.matrix(pin.ccrba(pm, data, qp, vp), rows=False), "Ag")
    # gravity in another direction reaches every path (base axes: R^T g)
    model.gravity = pm.gravity.linear = np.array([1.5, -0.7, -9.6])
    zero = np.zeros(model.nv)
    assert_relative(model.inverse_dynamics(q, v, a),
                    reference.vector(pin.rnea(pm, data, qp, vp, ap)), "tilted inverse dynamics")
    assert_relative(model.bias_torques(q, v), reference.vector(pin.rnea(pm, data, qp, vp, 0 * ap)),
                    "tilted bias")
    assert_relative(model.gravity_torques(q),
                    reference.vector(pin.rnea(pm, data, qp, 0 * vp, 0 * ap)), "tilted gravity")
    assert_relative(model.forward_dynamics(q, zero, tau),
                    reference.vector(pin.aba(pm, data, qp, 0 * vp, taup)), "tilted forward")


def test_derivatives_with_wrenches_match_finite_differences(rng):
    """Wrenches held fixed in world axes: the base columns turn them in base axes."""
    model = quiet_model(example_robot_text(ROBOTS["go2"]), floating_base=True)
    q, v, a, _ = _state(model, rng)
    wrenches = {_foot(model): rng.normal(size=6) * 20, model.base_link: rng.normal(size=6)}
    dtau_dq, dtau_dv = model.inverse_dynamics_derivatives(q, v, a, wrenches)
    da_dq, _, _ = model.forward_dynamics_derivatives(q, v, a, wrenches)
    step = 1e-6
    for column in range(model.nv):
        direction = np.zeros(model.nv)
        direction[column] = step
        ahead = model.inverse_dynamics(model.integrate(q, direction, 1.0), v, a, wrenches)
        behind = model.inverse_dynamics(model.integrate(q, -direction, 1.0), v, a, wrenches)
        np.testing.assert_allclose(dtau_dq[:, column], (ahead - behind) / (2 * step),
                                   atol=1e-5 * np.abs(dtau_dq).max(), err_msg=f"column {column}")
        ahead = model.forward_dynamics(model.integrate(q, direction, 1.0), v, a, wrenches)
        behind = model.forward_dynamics(model.integrate(q, -direction, 1.0), v, a, wrenches)
        np.testing.assert_allclose(da_dq[:, column], (ahead - behind) / (2 * step),
                                   atol=1e-5 * np.abs(da_dq).max(), err_msg=f"column {column}")
        faster = model.inverse_dynamics(q, v + direction, a, wrenches)
        slower = model.inverse_dynamics(q, v - direction, a, wrenches)
        np.testing.assert_allclose(dtau_dv[:, column], (faster - slower) / (2 * step),
                                   atol=1e-5 * np.abs(dtau_dv).max(), err_msg=f"column {column}")


def test_a_robot_that_cannot_float_is_named_not_its_virtual_joints():
    """A planar pendulum's rods have no inertia about their own axes: free, it has no
    forward dynamics, and the error says so without the model's internal names."""
    model = RobotModel.from_urdf(str(REPO / "urdf" / "double_pendulum.urdf"), floating_base=True)
    with pytest.raises(SingularDynamicsError, match="free base") as raised:
        model.forward_dynamics(model.neutral_configuration(), np.zeros(model.nv),
                               np.zeros(model.nv))
    assert "free_flyer" not in str(raised.value)


def test_a_payload_on_the_base_is_carried_by_the_base_wrench():
    """Physics: at the neutral pose, holding 2 kg more takes 2 g more force on the base."""
    model = RobotModel.from_urdf(str(REPO / "urdf" / "dual_arm_torso.urdf"), floating_base=True)
    q = model.neutral_configuration()
    before, mass = model.gravity_torques(q), model.total_mass
    model.attach_payload("box", model.base_link, 2.0)
    assert model.total_mass == pytest.approx(mass + 2.0)
    np.testing.assert_allclose(model.gravity_torques(q)[:3] - before[:3], [0.0, 0.0, 2.0 * 9.81],
                               atol=1e-9)
    with pytest.raises(UnknownNameError):
        model.attach_payload("ghost", "free_flyer_world", 1.0)
    model.detach_payload("box")
    np.testing.assert_allclose(model.gravity_torques(q), before, atol=1e-12)
