"""ROS-free parts of the node's robustness: parameters, the live model's refusals, singular solves."""
import numpy as np
import pytest

from support.robots import shipped_urdf
from support.small_robots import FIXED_ONLY
from soa_dynamics_ros import RobotModel
from soa_dynamics_ros.errors import InvalidInputError, SingularDynamicsError
from soa_dynamics_ros.embedded.live_model import LiveModel
from soa_dynamics_ros.ros.parameters import PARAMETERS, PAYLOAD_FIELDS, validate, validate_all

INERTIAL = '<inertial><mass value="1"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial>'
# A mimic joint (the dense path) and a moving link without mass: M is singular.
MIMIC_AND_MASSLESS = f"""<robot name="singular">
  <link name="base"/>
  <link name="a">{INERTIAL}</link>
  <link name="b">{INERTIAL}</link>
  <link name="ghost"/>
  <joint name="j1" type="revolute"><parent link="base"/><child link="a"/><origin xyz="0 0 0.1"/>
    <axis xyz="0 0 1"/><limit lower="-3" upper="3" effort="10" velocity="2"/></joint>
  <joint name="j2" type="revolute"><parent link="a"/><child link="b"/><origin xyz="0.3 0 0"/>
    <axis xyz="0 1 0"/><limit lower="-3" upper="3" effort="10" velocity="2"/><mimic joint="j1"/></joint>
  <joint name="j3" type="revolute"><parent link="b"/><child link="ghost"/><origin xyz="0.3 0 0"/>
    <axis xyz="0 1 0"/><limit lower="-3" upper="3" effort="10" velocity="2"/></joint>
</robot>"""


def test_a_robot_without_moving_joints_is_refused_by_the_live_model():
    model = RobotModel.from_urdf(FIXED_ONLY)
    assert model.dof == 0
    with pytest.raises(InvalidInputError, match="no moving joints"):
        LiveModel(model)


def test_singular_mass_matrix_raises_singular_dynamics_error_everywhere():
    model = RobotModel.from_urdf(MIMIC_AND_MASSLESS)
    q, qd = np.full(model.dof, 0.2), np.zeros(model.dof)
    # The reference: numpy's own test of definiteness on the dense mass matrix.
    with pytest.raises(np.linalg.LinAlgError):
        np.linalg.cholesky(model.mass_matrix(q))
    with pytest.raises(SingularDynamicsError):
        model.forward_dynamics(q, qd, np.zeros(model.dof))
    with pytest.raises(SingularDynamicsError):
        model.mixed_dynamics(q, qd, np.zeros(model.dof), np.zeros(model.dof), [])
    with pytest.raises(SingularDynamicsError):
        model.hybrid_dynamics(q, qd, [("b", np.eye(6)[:, :1], [0.0])])
    with pytest.raises(SingularDynamicsError):
        model.task_space_inertia(q, "b", part="translational", damping=1e-6)


def test_absurd_desired_states_are_refused_and_change_nothing():
    live = LiveModel(RobotModel.from_urdf(shipped_urdf("panda.urdf")))
    names = live.model.joint_names
    live.set_desired_point(names, np.full(7, 0.5), [], [])
    kept = live.desired_point
    for positions in (np.full(7, 1e49), np.full(7, np.nan), np.full(7, 1001.0)):
        with pytest.raises(InvalidInputError, match="desired positions"):
            live.set_desired_point(names, positions, [], [])
        assert live.desired_point is kept
    with pytest.raises(InvalidInputError, match="desired velocities"):
        live.set_desired_point(names, np.zeros(7), np.full(7, 1e5), [])
    with pytest.raises(InvalidInputError, match="desired accelerations"):
        live.set_desired_acceleration(names, np.full(7, 1e7))


def test_joint_states_of_other_joints_measure_nothing():
    live = LiveModel(RobotModel.from_urdf(shipped_urdf("panda.urdf")))
    for names in (["gripper_left", "gripper_right"], []):
        update = live.update_state(names, np.zeros(len(names)), [], now=1.0)
        assert update.accepted and update.updated == 0
    assert live.update_state(["panda_joint1"], [0.1], [], now=1.0).updated == 1


@pytest.mark.parametrize("name, value", [
    ("state_timeout", 1), ("diagnostics_period", 2), ("computed_torque_kp", 25),
    ("gravity", [0, 0, -10]), ("marker_rate", 0)])
def test_integers_are_accepted_where_doubles_are_expected(name, value):
    checked = validate(name, value)
    assert checked == value and all(isinstance(v, float) for v in np.atleast_1d(checked))


@pytest.mark.parametrize("name, value, words", [
    ("joint_states_depth", -5, "between 1 and 1000"),
    ("marker_rate", 1e-300, "0 or between 0.1 and 100"),
    ("diagnostics_period", 0.0, "between 0.1 and 60"),
    ("kernels", "fast", "one of auto, off"),
    ("computed_torque_kp", 1e308, "between 0 and 1e+06"),
    ("state_timeout", 1e308, "between 0.001 and 10"),
    ("state_timeout", True, "must be a number"),
    ("feedforward_mode", "magic", "one of gravity"),
    ("gravity", [0.0, 0.0], "must be 3 numbers"),
    ("command_joints", ["a", "a"], "repeats a name"),
])
def test_bad_parameters_are_refused_with_the_parameter_named(name, value, words):
    with pytest.raises(InvalidInputError, match=f"parameter '{name}'") as caught:
        validate(name, value)
    assert words in str(caught.value)


def test_every_default_is_valid_and_all_problems_are_reported_at_once():
    assert validate_all({name: spec.default for name, spec in PARAMETERS.items()})
    assert validate_all({name: spec.default for name, spec in PAYLOAD_FIELDS.items()},
                        PAYLOAD_FIELDS, "payload.box.")
    with pytest.raises(InvalidInputError) as caught:
        validate_all({"mass": "heavy", "com": [0, 0]}, PAYLOAD_FIELDS, "payload.box.")
    assert "'payload.box.mass'" in str(caught.value) and "'payload.box.com'" in str(caught.value)
    assert validate("mass", 2, PAYLOAD_FIELDS) == 2.0


def test_off_read_by_ros_as_yaml_false_means_the_option_off():
    # `-p kernels:=off` reaches the node as the boolean False (YAML 1.1).
    assert validate("kernels", False) == "off"
    with pytest.raises(InvalidInputError, match="parameter 'kernels'"):
        validate("kernels", True)
