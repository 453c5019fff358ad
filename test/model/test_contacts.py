"""Standing on contacts (issue 46 part 5): whole-body gravity compensation and contact
dynamics on floating-base quadrupeds and a humanoid of example-robot-data, against
Pinocchio's free-flyer gravity, Jacobians and constraint dynamics."""
import numpy as np
import pytest

from soa_dynamics_ros.errors import InvalidInputError, UnbalancedContactsError, UnknownNameError
from soa_dynamics_ros.model.contacts import Contact
from support.free_flyer import Reference as FreeFlyerReference, quiet_model
from support.robots import example_robot_text
from support.optional import require

pin = require("pinocchio")

# robot -> (URDF, contact frames, kind)
STANDING = {
    "solo12": ("solo_description/robots/solo12.urdf",
               ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT"), "point"),
    "anymal_c": ("anymal_c_simple_description/urdf/anymal.urdf",
                 ("LF_FOOT", "RF_FOOT", "LH_FOOT", "RH_FOOT"), "point"),
    "go2": ("go2_description/urdf/go2.urdf", ("FL_foot", "FR_foot", "RL_foot", "RR_foot"),
            "point"),
    "talos": ("talos_data/robots/talos_reduced.urdf", ("left_sole_link", "right_sole_link"),
              "flat"),
}
TOLERANCE = 1e-9
ROWS = {"point": 3, "flat": 6}


class Reference(FreeFlyerReference):
    """Pinocchio's gravity, Jacobians and constraint dynamics in our coordinates."""

    def gravity(self, q):
        return self.vector(pin.computeGeneralizedGravity(self.model, self.data, self.q(q)))

    def mass_and_bias(self, q, v):
        mass = pin.crba(self.model, self.data, self.q(q))
        bias = pin.nonLinearEffects(self.model, self.data, self.q(q), self.v(v))
        return self.matrix(np.triu(mass) + np.triu(mass, 1).T), self.vector(bias)

    def contact_jacobian(self, q, frames, kind):
        rows = []
        for frame in frames:
            index = self.model.getFrameId(frame, pin.BODY)
            jacobian = pin.computeFrameJacobian(self.model, self.data, self.q(q), index,
                                                pin.LOCAL_WORLD_ALIGNED)
            rows.append(self.matrix(jacobian, rows=False)[:ROWS[kind]])
        return np.vstack(rows)

    def constraint_dynamics(self, q, v, tau, frames, kind):
        """Pinocchio's accelerations and contact forces (LOCAL_WORLD_ALIGNED), ours' order."""
        contact_type = pin.ContactType.CONTACT_3D if kind == "point" else \
            pin.ContactType.CONTACT_6D
        models = pin.StdVec_RigidConstraintModel()
        for frame in frames:
            placed = self.model.frames[self.model.getFrameId(frame, pin.BODY)]
            models.append(pin.RigidConstraintModel(contact_type, self.model, placed.parentJoint,
                                                   placed.placement, pin.LOCAL_WORLD_ALIGNED))
        datas = pin.StdVec_RigidConstraintData()
        for constraint in models:
            datas.append(constraint.createData())
        pin.initConstraintDynamics(self.model, self.data, models, datas)
        acceleration = pin.constraintDynamics(self.model, self.data, self.q(q), self.v(v),
                                              self.v(tau), models, datas)
        return self.vector(acceleration), np.array(self.data.lambda_c)


@pytest.fixture(scope="module", params=sorted(STANDING))
def standing(request):
    path, frames, kind = STANDING[request.param]
    text = example_robot_text(path)
    model = quiet_model(text, floating_base=True)
    return model, Reference(text, model), frames, kind


def _configuration(model, rng):
    quaternion = rng.normal(size=4)
    return np.r_[rng.normal(size=3), quaternion / np.linalg.norm(quaternion),
                 rng.uniform(-0.5, 0.5, model.nv - 6)]


def _relative(ours, reference):
    reference = np.asarray(reference, dtype=float)
    return np.abs(np.asarray(ours) - reference).max() / max(np.abs(reference).max(), 1e-300)


def test_whole_body_gravity_balances_with_the_minimum_norm_contact_wrenches(standing, rng):
    model, reference, frames, kind = standing
    for _ in range(3):
        _check_whole_body_gravity(model, reference, frames, kind, _configuration(model, rng))


def _check_whole_body_gravity(model, reference, frames, kind, q):
    result = model.whole_body_gravity(q, [(frame, kind) for frame in frames])
    assert list(result.contact_wrenches) == list(frames)
    assert all(w.shape == (ROWS[kind],) for w in result.contact_wrenches.values())
    wrenches = np.concatenate(list(result.contact_wrenches.values()))
    gravity = reference.gravity(q)
    jacobian = reference.contact_jacobian(q, frames, kind)
    # The equilibrium, on Pinocchio's g and J: g = S^T tau + J^T w.
    actuated = np.r_[np.zeros(6), result.tau]
    residual = gravity - actuated - jacobian.T @ wrenches
    assert np.abs(residual).max() <= TOLERANCE * np.abs(gravity).max()
    # The rule: the minimum-norm wrenches balancing the base rows (numpy's lstsq).
    minimum, *_ = np.linalg.lstsq(jacobian[:, :6].T, gravity[:6], rcond=None)
    assert _relative(wrenches, minimum) <= TOLERANCE
    assert _relative(result.tau, gravity[6:] - jacobian[:, 6:].T @ minimum) <= TOLERANCE
    assert result.residual <= TOLERANCE * np.linalg.norm(gravity[:6])


@pytest.mark.parametrize("kernels", ["off", "generic"])
def test_every_kernel_path_stands_on_contacts(kernels, rng):
    path, frames, kind = STANDING["talos"]
    text = example_robot_text(path)
    model = quiet_model(text, floating_base=True, kernels=kernels)
    reference = Reference(text, model)
    q = _configuration(model, rng)
    _check_whole_body_gravity(model, reference, frames, kind, q)
    jacobian = reference.contact_jacobian(q, frames, kind)
    v = rng.normal(size=model.nv)
    v -= np.linalg.pinv(jacobian) @ (jacobian @ v)
    tau = rng.normal(size=model.nv - 6) * 5
    result = model.contact_dynamics(q, v, tau, [(frame, kind) for frame in frames])
    acceleration, forces = reference.constraint_dynamics(q, v, np.r_[np.zeros(6), tau], frames,
                                                         kind)
    assert _relative(result.a, acceleration) <= TOLERANCE
    assert _relative(np.concatenate(list(result.contact_wrenches.values())), forces) <= TOLERANCE


def test_contacts_that_cannot_hold_the_robot_are_refused_with_the_residual(standing, rng):
    model, reference, frames, kind = standing
    q = _configuration(model, rng)
    # Two point contacts push no moment about the line through them; one cannot hold it.
    for chosen in ([(frames[0], "point")], [(frames[0], "point"), (frames[1], "point")]):
        with pytest.raises(UnbalancedContactsError, match="cannot hold") as refused:
            model.whole_body_gravity(q, chosen)
        gravity = reference.gravity(q)[:6]
        base_map = reference.contact_jacobian(q, [f for f, _ in chosen], "point")[:, :6].T
        best, *_ = np.linalg.lstsq(base_map, gravity, rcond=None)
        expected = np.linalg.norm(gravity - base_map @ best)
        assert abs(refused.value.residual - expected) <= 1e-6 * np.linalg.norm(gravity)
        assert f"{refused.value.residual:.6g}" in str(refused.value)
        assert isinstance(refused.value, InvalidInputError)


def test_contact_dynamics_matches_pinocchio_constraint_dynamics(standing, rng):
    model, reference, frames, kind = standing
    contacts = [Contact(frame, kind) for frame in frames]
    q = _configuration(model, rng)
    # Velocities the held contacts allow (Pinocchio's 6D contact holds the spatial
    # acceleration, ours the classical: they agree when the contacts do not move).
    jacobian = reference.contact_jacobian(q, frames, kind)
    v = rng.normal(size=model.nv)
    v -= np.linalg.pinv(jacobian) @ (jacobian @ v)
    tau = np.r_[np.zeros(6), rng.normal(size=model.nv - 6) * 5]
    result = model.contact_dynamics(q, v, tau, contacts)
    acceleration, forces = reference.constraint_dynamics(q, v, tau, frames, kind)
    assert _relative(result.a, acceleration) <= TOLERANCE
    assert _relative(np.concatenate(list(result.contact_wrenches.values())), forces) <= TOLERANCE
    assert result.rank == len(frames) * ROWS[kind]
    assert np.array_equal(result.hybrid.qdd, result.a)
    # Actuated torques only (the base unactuated) give the same answer.
    same = model.contact_dynamics(q, v, tau[6:], contacts)
    assert np.array_equal(same.a, result.a)


def test_contact_dynamics_holds_the_contacts_at_any_velocity(standing, rng):
    model, reference, frames, kind = standing
    q = _configuration(model, rng)
    v = rng.normal(size=model.nv)
    tau = rng.normal(size=model.nv) * 5
    result = model.contact_dynamics(q, v, tau, [(frame, kind) for frame in frames])
    mass, bias = reference.mass_and_bias(q, v)
    jacobian = reference.contact_jacobian(q, frames, kind)
    wrenches = np.concatenate(list(result.contact_wrenches.values()))
    assert _relative(mass @ result.a + bias, tau + jacobian.T @ wrenches) <= TOLERANCE
    pm, data = reference.model, reference.data
    pin.forwardKinematics(pm, data, reference.q(q), reference.v(v), reference.v(result.a))
    pin.updateFramePlacements(pm, data)
    for frame in frames:
        classical = pin.getFrameClassicalAcceleration(pm, data, pm.getFrameId(frame, pin.BODY),
                                                      pin.LOCAL_WORLD_ALIGNED).vector
        assert np.abs(classical[:ROWS[kind]]).max() <= TOLERANCE * np.abs(result.a).max()


def test_whole_body_gravity_torques_keep_the_robot_still_on_its_contacts(standing, rng):
    model, _, frames, kind = standing
    contacts = [(frame, kind) for frame in frames]
    q = _configuration(model, rng)
    held = model.whole_body_gravity(q, contacts)
    still = model.contact_dynamics(q, np.zeros(model.nv), held.tau, contacts)
    assert np.abs(still.a).max() <= 1e-8
    pushed = model.contact_dynamics(q, np.zeros(model.nv), held.tau * 0.5, contacts)
    assert np.abs(pushed.a).max() > 1e-3


def test_bad_contacts_are_refused_and_change_nothing(standing, rng):
    model, _, frames, kind = standing
    q = _configuration(model, rng)
    before = model.gravity_torques(q)
    bad = {
        UnknownNameError: [[("no_such_foot", kind)], [("free_flyer_world", "point")],
                           [(3, "point")]],
        InvalidInputError: ["LF_FOOT", [frames[0]], [(frames[0], "edge")],
                            [(frames[0], kind), (frames[0], kind)], [], None,
                            [(frames[0], kind)] * (len(model.frame_names) + 1)],
    }
    for error, cases in bad.items():
        for contacts in cases:
            with pytest.raises(error):
                model.whole_body_gravity(q, contacts)
            with pytest.raises(error):
                model.contact_dynamics(q, np.zeros(model.nv), np.zeros(model.nv), contacts)
    contacts = [(frame, kind) for frame in frames]
    broken = q.copy()
    broken[3:7] *= 1.1
    for configuration in (broken, np.r_[q[:-1], np.nan], q[:-1]):
        with pytest.raises(InvalidInputError):
            model.whole_body_gravity(configuration, contacts)
    for tau in (np.zeros(model.nv + 1), np.full(model.nv, np.nan), np.zeros(5)):
        with pytest.raises(InvalidInputError):
            model.contact_dynamics(q, np.zeros(model.nv), tau, contacts)
    assert np.array_equal(model.gravity_torques(q), before)


def test_a_fixed_base_model_holds_itself_by_its_joints(rng):
    path, frames, kind = STANDING["solo12"]
    text = example_robot_text(path)
    model = quiet_model(text)
    q = rng.uniform(-1.0, 1.0, model.dof)
    result = model.whole_body_gravity(q, [(frame, kind) for frame in frames])
    fixed = pin.buildModelFromXML(text)
    order = [fixed.joints[fixed.getJointId(name)].idx_v for name in model.joint_names]
    theirs = np.zeros(fixed.nq)
    theirs[order] = q
    gravity = pin.computeGeneralizedGravity(fixed, fixed.createData(), theirs)[order]
    assert _relative(result.tau, gravity) <= TOLERANCE
    assert all(not w.any() for w in result.contact_wrenches.values())
    # Its contact dynamics holds the feet still as well (Pinocchio's classical acceleration).
    qd, tau = rng.normal(size=(2, model.dof))
    moved = model.contact_dynamics(q, qd, tau, [(frame, kind) for frame in frames])
    data = fixed.createData()
    rates, accelerations = np.zeros(fixed.nv), np.zeros(fixed.nv)
    rates[order], accelerations[order] = qd, moved.a
    pin.forwardKinematics(fixed, data, theirs, rates, accelerations)
    pin.updateFramePlacements(fixed, data)
    for frame in frames:
        classical = pin.getFrameClassicalAcceleration(fixed, data, fixed.getFrameId(frame, pin.BODY),
                                                      pin.LOCAL_WORLD_ALIGNED).vector[:3]
        assert np.abs(classical).max() <= TOLERANCE * np.abs(moved.a).max()
    with pytest.raises(UnknownNameError):
        model.whole_body_gravity(q, [("no_such_foot", "point")])
