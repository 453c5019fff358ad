"""The joint model (multibody/joints.py): every type's hinge map and joint placement
against closed forms and Pinocchio's joint models, and what the reader asks of it."""
import math

import numpy as np
import pytest

from support.optional import require
from soa_dynamics_ros.description.urdf import parse_urdf
from soa_dynamics_ros.errors import UnsupportedJointError, URDFError
from soa_dynamics_ros.multibody.joints import JOINT_MODELS, joint_model

pin = require("pinocchio")

AXES = [np.array([0.0, 0.0, 1.0]), np.array([1.0, -2.0, 0.5]) / np.linalg.norm([1.0, -2.0, 0.5])]
COORDINATES = [-2.7, -0.3, 0.0, 0.9, 3.1]


def _pinocchio_joint(type_name, axis):
    """Pinocchio's model of the same joint and its configuration vector for coordinate q."""
    if type_name == "revolute":
        return pin.JointModelRevoluteUnaligned(axis), lambda q: np.array([q])
    if type_name == "continuous":
        # Pinocchio's Python bindings build unbounded revolute joints about x, y or z only.
        joint = {0: pin.JointModelRUBX, 2: pin.JointModelRUBZ}[int(np.argmax(axis))]()
        return joint, lambda q: np.array([math.cos(q), math.sin(q)])
    if type_name == "prismatic":
        return pin.JointModelPrismaticUnaligned(axis), lambda q: np.array([q])
    raise AssertionError(type_name)


@pytest.mark.parametrize("type_name, axis", [
    ("revolute", AXES[0]), ("revolute", AXES[1]), ("prismatic", AXES[0]), ("prismatic", AXES[1]),
    ("continuous", AXES[0]), ("continuous", np.array([1.0, 0.0, 0.0]))],
    ids=["revolute-z", "revolute-oblique", "prismatic-z", "prismatic-oblique", "continuous-z",
         "continuous-x"])
def test_moving_joint_matches_pinocchio(type_name, axis):
    model = joint_model(type_name)
    joint, configuration = _pinocchio_joint(type_name, axis)
    origin_rotation = pin.rpy.rpyToMatrix(0.3, -1.1, 2.0)
    origin_translation = np.array([0.1, -0.2, 0.35])
    # A one-joint robot whose joint frame sits at the origin placement in its parent.
    reference = pin.Model()
    reference.addJoint(0, joint, pin.SE3(origin_rotation, origin_translation), "j")
    data = reference.createData()
    for q in COORDINATES:
        pin.forwardKinematics(reference, data, configuration(q))
        pin.computeJointJacobians(reference, data, configuration(q))
        # Pinocchio's local joint Jacobian is S, [v; w] in the joint frame, as the hinge map.
        np.testing.assert_allclose(model.hinge_map(axis),
                                   pin.getJointJacobian(reference, data, 1, pin.LOCAL).ravel(),
                                   atol=1e-15)
        rotation, translation = model.placement(origin_rotation, origin_translation, axis, q)
        np.testing.assert_allclose(rotation, data.oMi[1].rotation, atol=1e-14)
        np.testing.assert_allclose(translation, data.oMi[1].translation, atol=1e-14)


def test_closed_forms_about_z():
    q = 0.7
    rotation, translation = joint_model("revolute").placement(np.eye(3), np.zeros(3),
                                                              AXES[0], q)
    np.testing.assert_allclose(rotation, [[math.cos(q), -math.sin(q), 0.0],
                                          [math.sin(q), math.cos(q), 0.0], [0.0, 0.0, 1.0]],
                               atol=1e-15)
    np.testing.assert_array_equal(translation, np.zeros(3))
    rotation, translation = joint_model("prismatic").placement(np.eye(3), np.zeros(3), AXES[0], q)
    np.testing.assert_array_equal(rotation, np.eye(3))
    np.testing.assert_allclose(translation, [0.0, 0.0, q])
    np.testing.assert_array_equal(joint_model("revolute").hinge_map(AXES[0]), [0, 0, 0, 0, 0, 1])
    np.testing.assert_array_equal(joint_model("prismatic").hinge_map(AXES[0]), [0, 0, 1, 0, 0, 0])


def test_fixed_joint_does_not_move():
    fixed = joint_model("fixed")
    assert not fixed.moving
    rotation, translation = fixed.placement(np.eye(3), np.ones(3), AXES[1], 1.3)
    np.testing.assert_array_equal(rotation, np.eye(3))
    np.testing.assert_array_equal(translation, np.ones(3))


def test_units_and_limits():
    assert {name: (m.unit, m.effort_unit, m.bounded) for name, m in JOINT_MODELS.items()
            if m.moving} == {"revolute": ("rad", "N m", True), "continuous": ("rad", "N m", False),
                             "prismatic": ("m", "N", True)}


def _one_joint(joint_type, extra=""):
    return (f'<robot name="r"><link name="a"/><link name="b"/>'
            f'<joint name="j" type="{joint_type}"><parent link="a"/><child link="b"/>{extra}'
            f'</joint></robot>')


def test_reader_refuses_types_the_joint_model_lacks():
    with pytest.raises(UnsupportedJointError, match="revolute, continuous, prismatic and fixed"):
        parse_urdf(_one_joint("planar"))


def test_reader_takes_a_floating_joint_only_as_a_free_base():
    """From a massless root link it is the robot's free base (test_floating_base.py); from
    a body, it is refused by name."""
    assert parse_urdf(_one_joint("floating")).free_root_joint == "j"
    heavy_root = _one_joint("floating").replace(
        '<link name="a"/>', '<link name="a"><inertial><mass value="1"/><inertia ixx="1" '
        'iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link>')
    with pytest.raises(UnsupportedJointError, match="'j' is of type 'floating'.*has mass"):
        parse_urdf(heavy_root)


def test_reader_refuses_unknown_types_and_bounded_joints_without_limits():
    with pytest.raises(URDFError, match="unknown type 'spherical'"):
        parse_urdf(_one_joint("spherical"))
    for bounded in ("revolute", "prismatic"):
        with pytest.raises(URDFError, match="has no <limit>"):
            parse_urdf(_one_joint(bounded))
    continuous = parse_urdf(_one_joint("continuous", '<limit effort="3" velocity="2"/>'))
    assert continuous.joints["j"].lower == -math.inf and continuous.joints["j"].upper == math.inf
