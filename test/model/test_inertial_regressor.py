"""The inertial-parameter regressor, base parameters and whole-robot identification
(issue 47 part 5): against Pinocchio's computeJointTorqueRegressor and rnea on shipped,
rtb-data and example-robot-data robots (mimic joints included), on the compiled path and
the numpy path; identification from Pinocchio's torques; refusals and bad input."""
import dataclasses
import pathlib

import numpy as np
import pytest

from oracles.pinocchio_reference import PinocchioReference
from support.numerics import assert_close, random_states
from support.robots import (EXAMPLE_ARMS, MIMIC_ZOO_ARMS, quiet_model, reference_robot_params,
                            reference_robot_text, shipped_urdf)
from soa_dynamics_ros.errors import InvalidInputError

KERNELS = ["generic", "off"]
# Our parameter k of a body is Pinocchio's PINOCCHIO_COLUMN[k] (Ixz and Iyy swap).
PINOCCHIO_COLUMN = [0, 1, 2, 3, 4, 5, 7, 6, 8, 9]


@pytest.fixture(scope="module", params=reference_robot_params())
def xml(request):
    return reference_robot_text(request.param)


def _pinocchio_columns(model, reference):
    """For each of our regressor columns, Pinocchio's: our body is the one its moving
    joint moves, Pinocchio's the joint of that name."""
    columns = []
    for joint in model.tree.joints:
        block = 10 * (reference.model.getJointId(joint.name) - 1)
        columns.extend(block + k for k in PINOCCHIO_COLUMN)
    return columns


@pytest.mark.parametrize("kernels", KERNELS)
def test_regressor_matches_pinocchio(xml, kernels, rng):
    model = quiet_model(xml, kernels)
    reference = PinocchioReference(xml, model.joint_names)
    assert reference.model.njoints - 1 == model.tree.nb - 1
    columns = _pinocchio_columns(model, reference)
    parameters = model.inertial_parameters()
    assert len(parameters) == 10 * (model.tree.nb - 1) == len(model.inertial_parameter_names)
    for q, qd, qdd in random_states(model, 4, rng):
        regressor = model.inertial_regressor(q, qd, qdd)
        assert regressor.shape == (model.dof, len(parameters))
        assert_close(regressor, reference.joint_torque_regressor(q, qd, qdd)[:, columns],
                     "regressor against computeJointTorqueRegressor")
        torques = reference.inverse_dynamics(q, qd, qdd)
        assert_close(regressor @ parameters, torques, "Y pi against Pinocchio's rnea")
        assert_close(regressor @ parameters, model.inverse_dynamics(q, qd, qdd),
                     "Y pi against inverse_dynamics")


def test_parameters_are_pinocchios_inertias(xml):
    """Each body's parameters are Pinocchio's inertia of the joint moving it (dynamic
    parameters, reordered): the same bodies, fixed links merged the same way."""
    model = quiet_model(xml, "off")
    reference = PinocchioReference(xml, model.joint_names)
    columns = _pinocchio_columns(model, reference)
    theirs = np.concatenate([reference.model.inertias[j].toDynamicParameters()
                             for j in range(1, reference.model.njoints)])
    assert_close(model.inertial_parameters(), theirs[columns], "parameters", rtol=1e-12)


def test_the_generic_module_answers_as_the_numpy_path(xml, rng):
    model, numpy_path = quiet_model(xml, "generic"), quiet_model(xml, "off")
    compiled, params = model.generic_kernels()
    for q, qd, qdd in random_states(model, 3, rng):
        answer = compiled.function("inertial_regressor")(q, qd, qdd, params)
        assert type(answer) is np.ndarray, f"declined: {answer}"
        assert_close(answer, numpy_path.inertial_regressor(q, qd, qdd), "regressor", rtol=1e-12)


def test_payloads_are_in_the_parameters(rng):
    xml = pathlib.Path(shipped_urdf("panda.urdf")).read_text()
    model = quiet_model(xml, "generic")
    reference = PinocchioReference(xml, model.joint_names)
    before = model.inertial_parameters()
    com, inertia = np.array([0.01, 0.0, 0.08]), np.eye(3) * 1e-3
    model.attach_payload("tool", "panda_hand", 1.5, com, inertia)
    reference.attach("panda_hand", 1.5, com, inertia)
    assert not np.allclose(before, model.inertial_parameters())
    for q, qd, qdd in random_states(model, 2, rng):
        assert_close(model.inertial_regressor(q, qd, qdd) @ model.inertial_parameters(),
                     reference.inverse_dynamics(q, qd, qdd), "Y pi with a payload")


IDENTIFIED = [pytest.param(("shipped", "ur5.urdf"), id="ur5"),
              pytest.param(("shipped", "panda.urdf"), id="panda"),
              pytest.param(("zoo", MIMIC_ZOO_ARMS[0]), id="vx300s"),
              pytest.param(("example", EXAMPLE_ARMS[1]), id="z1")]


@pytest.mark.parametrize("source", IDENTIFIED)
def test_identification_recovers_the_base_parameters(source, rng):
    """Torques from Pinocchio's rnea of the model's robot: the fit is the model's own
    base parameters, and they predict the torques at new states."""
    xml = reference_robot_text(source)
    model = quiet_model(xml, "generic")
    reference = PinocchioReference(xml, model.joint_names)
    base = model.base_parameters()
    assert np.array_equal(base.mapping, model.base_parameters().mapping)     # seeded
    count = -(-3 * base.count // model.dof)
    states = list(random_states(model, count, rng))
    Q, QD, QDD = (np.array(column) for column in zip(*states))
    TAU = np.array([reference.inverse_dynamics(*state) for state in states])
    estimate = model.identify_inertial_parameters(Q, QD, QDD, TAU, base)
    assert_close(estimate.values, base.values, "base parameters", rtol=1e-6)
    assert estimate.residual < 1e-8
    for q, qd, qdd in random_states(model, 3, rng):
        assert_close(base.regressor(model.inertial_regressor(q, qd, qdd)) @ estimate.values,
                     reference.inverse_dynamics(q, qd, qdd), "predicted torques", rtol=1e-6)


def test_base_parameters_fold_the_full_regressor(xml, rng):
    model = quiet_model(xml, "generic")
    base = model.base_parameters()
    assert np.array_equal(base.mapping[:, base.independent], np.eye(base.count))
    assert sorted(np.concatenate((base.independent, base.dependent))) == list(
        range(len(model.inertial_parameters())))
    assert_close(base.values, base.mapping @ model.inertial_parameters(), "values", rtol=1e-12)
    for q, qd, qdd in random_states(model, 3, rng):
        full = model.inertial_regressor(q, qd, qdd)
        assert_close(base.regressor(full) @ base.mapping, full, "Y_base K == Y", rtol=1e-7)
    # The rank of other states' regressor, columns normalized (unfelt parameters' columns
    # are round-off: left out), by its singular values: as many as the base parameters.
    stacked = np.vstack([model.inertial_regressor(*state)
                         for state in random_states(model, 60, rng)])
    scale = np.linalg.norm(stacked, axis=0)
    felt = scale > 1e-10 * scale.max()
    singular = np.linalg.svd(stacked[:, felt] / scale[felt], compute_uv=False)
    assert np.count_nonzero(singular > 1e-9 * singular[0]) == base.count


def test_a_robot_standing_still_is_refused():
    model = quiet_model(pathlib.Path(shipped_urdf("ur5.urdf")).read_text(), "generic")
    base = model.base_parameters()
    count = 3 * base.count
    Q = np.tile([0.1, -1.0, 1.2, 0.3, 0.5, 0.2], (count, 1))
    zeros = np.zeros_like(Q)
    TAU = np.array([model.gravity_torques(q) for q in Q])
    with pytest.raises(InvalidInputError, match="do not depend on the base parameters .* "
                                                "the robot's inertial parameters cannot be "
                                                "identified"):
        model.identify_inertial_parameters(Q, zeros, zeros, TAU, base)


def test_a_motion_of_one_joint_is_refused(rng):
    """Only the last joint moves: the other bodies' inertias are felt (through gravity)
    but not told apart."""
    model = quiet_model(pathlib.Path(shipped_urdf("ur5.urdf")).read_text(), "generic")
    base = model.base_parameters()
    count = 3 * base.count
    Q = np.tile([0.1, -1.0, 1.2, 0.3, 0.5, 0.2], (count, 1))
    QD, QDD = np.zeros_like(Q), np.zeros_like(Q)
    Q[:, 5] = rng.uniform(-3, 3, count)
    QD[:, 5], QDD[:, 5] = rng.normal(size=count), rng.normal(size=count)
    TAU = np.array([model.inverse_dynamics(*state) for state in zip(Q, QD, QDD)])
    with pytest.raises(InvalidInputError, match="does not excite the robot's base inertial "
                                                "parameters enough|do not depend on"):
        model.identify_inertial_parameters(Q, QD, QDD, TAU, base)


@pytest.mark.parametrize("kernels", KERNELS)
def test_bad_input(kernels):
    model = quiet_model(pathlib.Path(shipped_urdf("panda.urdf")).read_text(), kernels)
    n = model.dof
    good = np.zeros(n)
    for bad in (np.zeros(n + 1), np.zeros(n - 1), np.full(n, np.nan), np.full(n, np.inf),
                "abc", None):
        for position in range(3):
            arguments = [good, good, good]
            arguments[position] = bad
            with pytest.raises(InvalidInputError):
                model.inertial_regressor(*arguments)
    for samples in (0, -3, 10 ** 9, 2.5, "many", np.nan, None):
        with pytest.raises(InvalidInputError):
            model.base_parameters(samples=samples)
    with pytest.raises(InvalidInputError):
        model.base_parameters(seed="zero")
    Q = np.zeros((5, n))
    with pytest.raises(InvalidInputError):
        model.identify_inertial_parameters(Q, Q, Q, np.zeros((4, n)))
    with pytest.raises(InvalidInputError):
        model.identify_inertial_parameters(Q, Q, Q, np.full((5, n), np.nan))
    with pytest.raises(InvalidInputError, match="equations"):
        model.identify_inertial_parameters(Q, Q, Q, Q)
    many = np.zeros((200000, n))
    with pytest.raises(InvalidInputError, match="use fewer samples"):
        model.identify_inertial_parameters(many, many, many, many)
    base = model.base_parameters()
    other = quiet_model(reference_robot_text(("shipped", "ur5.urdf")), kernels).base_parameters()
    shifted = dataclasses.replace(base, independent=base.independent + 1000)
    for wrong in ("all", other, shifted):
        with pytest.raises(InvalidInputError, match="base must be"):
            model.identify_inertial_parameters(Q, Q, Q, Q, base=wrong)


def test_a_robot_without_moving_joints_has_nothing_to_identify():
    inertial = ('<inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" '
                'izz="1"/></inertial>')
    xml = (f'<robot name="welded"><link name="a">{inertial}</link><link name="b">{inertial}'
           '</link><joint name="weld" type="fixed"><parent link="a"/><child link="b"/></joint>'
           '</robot>')
    for kernels in ("auto", "off"):        # (nothing to compile for no joints)
        model = quiet_model(xml, kernels)
        assert model.inertial_parameters().shape == (0,)
        assert model.inertial_regressor([], [], []).shape == (0, 0)
        assert model.base_parameters().count == 0
        empty = np.zeros((3, 0))
        with pytest.raises(InvalidInputError, match="nothing to identify"):
            model.identify_inertial_parameters(empty, empty, empty, empty)
