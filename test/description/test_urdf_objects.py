"""urdf_parser_py ``Robot`` objects: the same model as their XML, the same errors, no new dependency.

The reference for every object is the XML text it was parsed from, loaded by
the package's own reader (which test_urdf_loading and the Pinocchio/KDL tests
hold against the URDF specification and independent libraries).
"""
import contextlib
import pathlib
import pickle
import re
import subprocess
import sys
import warnings

import numpy as np
import pytest
import urdf_parser_py.urdf as urdf_parser
import urdf_parser_py.xml_reflection.core as urdf_parser_core

from support.optional import require
from support.robot_generator import random_tree_urdf
from support.robots import REPO, SHIPPED_ROBOTS, shipped_urdf
from soa_dynamics_ros import RobotModel, URDFError
from soa_dynamics_ros.description.urdf import parse_urdf
from soa_dynamics_ros.description.urdf_objects import description_from_robot
from test_urdf_loading import BROKEN, joint, robot

rtbdata = require("rtbdata")

# Plain .urdf files of the rtb-data zoo (read where pip installed them).
ZOO_DIR = pathlib.Path(rtbdata.__file__).parent / "xacro"
ZOO = sorted(str(path.relative_to(ZOO_DIR)) for path in ZOO_DIR.glob("**/*.urdf"))
GENERATED_SEEDS = range(6)


@contextlib.contextmanager
def quiet_urdf_parser():
    """urdf-parser-py prints unknown tags (ros2_control, gazebo plugins) to stderr: keep them."""
    messages, previous = [], urdf_parser_core.on_error
    urdf_parser_core.on_error = messages.append
    try:
        yield messages
    finally:
        urdf_parser_core.on_error = previous


def robot_object(text):
    with quiet_urdf_parser():
        # lxml refuses str with an encoding declaration; bytes are how ROS tools pass it too.
        return urdf_parser.URDF.from_xml_string(text.encode())


def assert_same_description(from_object, from_xml):
    """Every field but XML line numbers, exactly (bit for bit)."""
    assert (from_object.name, from_object.root) == (from_xml.name, from_xml.root)
    assert list(from_object.links) == list(from_xml.links)
    assert list(from_object.joints) == list(from_xml.joints)
    for name, link in from_xml.links.items():
        other = from_object.links[name]
        assert (other.has_inertial, other.mass) == (link.has_inertial, link.mass), name
        np.testing.assert_array_equal(other.com, link.com, err_msg=name)
        np.testing.assert_array_equal(other.inertia, link.inertia, err_msg=name)
    for name, joint_description in from_xml.joints.items():
        other = from_object.joints[name]
        for field in ("type", "parent", "child", "lower", "upper", "effort", "velocity", "damping",
                      "friction", "mimic"):
            assert getattr(other, field) == getattr(joint_description, field), (name, field)
        for field in ("origin_rotation", "origin_translation", "axis"):
            np.testing.assert_array_equal(getattr(other, field), getattr(joint_description, field),
                                          err_msg=f"{name} {field}")


def assert_same_model(from_object, from_xml, rng):
    assert from_object.joint_names == from_xml.joint_names
    assert from_object.frame_names == from_xml.frame_names
    np.testing.assert_array_equal(from_object.effort_limits, from_xml.effort_limits)
    assert from_object.total_mass == from_xml.total_mass
    q, qd, qdd = rng.uniform(-1, 1, size=(3, from_xml.dof))
    np.testing.assert_array_equal(from_object.mass_matrix(q), from_xml.mass_matrix(q))
    np.testing.assert_array_equal(from_object.inverse_dynamics(q, qd, qdd),
                                  from_xml.inverse_dynamics(q, qd, qdd))
    for frame in from_xml.frame_names:
        np.testing.assert_array_equal(from_object.frame_pose(q, frame), from_xml.frame_pose(q, frame))


def _sources():
    cases = [pytest.param(pathlib.Path(shipped_urdf(name)).read_text(), id=name)
             for name in SHIPPED_ROBOTS]
    cases += [pytest.param((ZOO_DIR / name).read_text(), id=f"rtbdata/{name}") for name in ZOO]
    cases += [pytest.param(random_tree_urdf(seed, moving_joints=10), id=f"random{seed}")
              for seed in GENERATED_SEEDS]
    return cases


def test_the_zoo_is_there():
    # The parametrization below must not shrink silently if rtb-data moves its files.
    assert len(ZOO) >= 8, ZOO


@pytest.mark.parametrize("text", _sources())
def test_an_object_gives_the_model_of_its_xml(text, rng):
    robot_object_ = robot_object(text)
    before = pickle.dumps(robot_object_)
    assert_same_description(description_from_robot(robot_object_), parse_urdf(text))
    with warnings.catch_warnings(record=True) as object_warnings:
        warnings.simplefilter("always")
        from_object = RobotModel.from_urdf(robot_object_, kernels="off")
    with warnings.catch_warnings(record=True) as xml_warnings:
        warnings.simplefilter("always")
        from_xml = RobotModel.from_urdf(text, kernels="off")
    # The same inertia checks: rtb-data's AL5D has links with zero inertia.
    assert [str(w.message) for w in object_warnings] == [str(w.message) for w in xml_warnings]
    assert_same_model(from_object, from_xml, rng)
    assert pickle.dumps(robot_object_) == before, "the conversion changed the object"


def test_pieces_urdf_parser_py_leaves_as_none_get_the_urdf_spec_defaults(rng):
    """An object built in code: no origin, no axis, no dynamics, limits without lower/upper."""
    built = urdf_parser.Robot(name="built")
    inertial = urdf_parser.Inertial(mass=1.5, inertia=urdf_parser.Inertia(
        ixx=0.02, ixy=0.001, ixz=0.0, iyy=0.03, iyz=0.002, izz=0.04))
    for name in ("base", "l1", "l2"):
        built.add_link(urdf_parser.Link(name=name, inertial=inertial))
    built.add_joint(urdf_parser.Joint("j1", "base", "l1", "revolute",
                                      limit=urdf_parser.JointLimit(effort=10, velocity=2)))
    built.add_joint(urdf_parser.Joint("j2", "l1", "l2", "continuous"))
    link = '<link name="{}"><inertial><mass value="1.5"/><inertia ixx="0.02" ixy="0.001" ' \
           'ixz="0" iyy="0.03" iyz="0.002" izz="0.04"/></inertial></link>'
    text = ('<robot name="built">' + "".join(link.format(n) for n in ("base", "l1", "l2")) +
            '<joint name="j1" type="revolute"><parent link="base"/><child link="l1"/>'
            '<limit effort="10" velocity="2"/></joint>'
            '<joint name="j2" type="continuous"><parent link="l1"/><child link="l2"/></joint></robot>')
    from_object = description_from_robot(built)
    assert_same_description(from_object, parse_urdf(text))
    j1 = from_object.joints["j1"]
    np.testing.assert_array_equal(j1.origin_rotation, np.eye(3))
    np.testing.assert_array_equal(j1.origin_translation, np.zeros(3))
    np.testing.assert_array_equal(j1.axis, [1.0, 0.0, 0.0])
    assert (j1.lower, j1.upper, j1.damping, j1.friction) == (0.0, 0.0, 0.0, 0.0)
    assert from_object.links["l1"].com.tolist() == [0.0, 0.0, 0.0]
    assert_same_model(RobotModel.from_urdf(built, kernels="off"),
                      RobotModel.from_urdf(text, kernels="off"), rng)


# Malformed descriptions that urdf-parser-py still turns into a Robot object
# (it refuses the others itself: bad XML, unknown joint type, non-numeric
# values, an inertial without mass). "not a robot" becomes a Robot without
# links; "entity expansion" is expanded by lxml before the object exists.
PARSED_BY_URDF_PARSER_PY = [
    "no links", "duplicate link", "duplicate joint", "undefined link", "two parents", "two roots",
    "cycle", "missing limit", "inverted limits", "not finite", "zero axis",
    "mimic cycle", "absurd mass", "absurd length",
]


@pytest.mark.parametrize("case", PARSED_BY_URDF_PARSER_PY)
def test_a_broken_object_gets_the_error_of_its_xml(case):
    text, message = BROKEN[case]
    with pytest.raises(URDFError) as from_xml:
        RobotModel.from_urdf(text)
    with pytest.raises(URDFError, match=message) as from_object:
        RobotModel.from_urdf(robot_object(text))
    assert type(from_object.value) is type(from_xml.value)


def _good_robot():
    return robot_object(robot(joint("j1", "base", "l1"), joint("j2", "l1", "l2", "prismatic")))


def _set(path, value):
    """A change to one piece of the good robot: ``path`` like ``joints.0.limit``."""
    def change(target):
        *owners, last = path.split(".")
        for step in owners:
            target = target[int(step)] if step.isdigit() else getattr(target, step)
        setattr(target, last, value)
    return change


BAD_OBJECTS = {
    "joint without parent": (_set("joints.0.parent", None), r"joint 'j1' has no <parent link=\.\.\.>"),
    "joint without child": (_set("joints.1.child", None), r"joint 'j2' has no <child link=\.\.\.>"),
    "revolute without limit": (_set("joints.0.limit", None), "revolute joint 'j1' has no <limit>"),
    "prismatic without limit": (_set("joints.1.limit", None), "prismatic joint 'j2' has no <limit>"),
    "joint without type": (_set("joints.0.type", None), "joint 'j1' has unknown type None"),
    "floating joint": (_set("joints.0.type", "floating"), "'j1' is of type 'floating'"),
    "joint without name": (_set("joints.0.name", None), "joint without a name"),
    "link without name": (_set("links.1.name", None), "link without a name"),
    "link name not a string": (_set("links.1.name", 5), "link name 5 is not a string"),
    "parent not a string": (_set("joints.0.parent", ["base"]), "joint 'j1': parent link .* not a string"),
    "inertial without inertia": (_set("links.1.inertial.inertia", None),
                                 "link 'l1': <inertial> needs <mass> and <inertia>"),
    "inertial without mass": (_set("links.1.inertial.mass", None),
                              "link 'l1': <inertial> needs <mass> and <inertia>"),
    "inertia moment missing": (_set("links.1.inertial.inertia.ixx", None),
                               "link 'l1': missing attribute 'ixx'"),
    "mass not a number": (_set("links.1.inertial.mass", "heavy"), "link 'l1': .*not numeric"),
    "mass NaN": (_set("links.1.inertial.mass", float("nan")), "link 'l1': .*not finite"),
    "origin of two numbers": (_set("joints.1.origin.xyz", [0.1, 0.2]), "joint 'j2': .*needs 3 numbers"),
    "origin of objects": (_set("joints.1.origin.rpy", [{}, 0, 0]), "joint 'j2': .*not numeric"),
    "axis of zeros": (_set("joints.0.axis", [0, 0, 0]), "joint 'j1' has a zero axis"),
    "negative effort": (_set("joints.1.limit.effort", -1.0), "joint 'j2': negative effort"),
    "mimic without joint": (_set("joints.1.mimic", urdf_parser.JointMimic()),
                            r"joint 'j2': <mimic> without joint=\.\.\."),
    "links not a list": (_set("links", None), "robot.links must be a list, not NoneType"),
    "a joint that is a string": (_set("joints", ["j1"]), "joint without a name"),
    "a link that is a number": (_set("links", [3.0]), "link without a name"),
}


@pytest.mark.parametrize("case", list(BAD_OBJECTS))
def test_bad_objects_get_a_specific_error_naming_the_piece(case):
    change, message = BAD_OBJECTS[case]
    bad = _good_robot()
    change(bad)
    with pytest.raises(URDFError, match=message):
        RobotModel.from_urdf(bad)


@pytest.mark.parametrize("source", [
    42, None, {"links": []}, b"<robot name='r'/>", urdf_parser.Link(name="base"),
], ids=["int", "None", "dict", "bytes", "a Link"])
def test_what_is_not_a_robot_is_refused_by_type(source):
    with pytest.raises(URDFError, match=re.escape("a path, an XML string or a "
                                                  "urdf_parser_py.urdf.Robot, not")):
        RobotModel.from_urdf(source)


def test_library_and_plant_tools_import_neither_urdf_parser_py_nor_transforms3d():
    code = ("import sys; from soa_dynamics_ros import RobotModel; import soa_dynamics_ros.plant; "
            f"RobotModel.from_urdf({shipped_urdf('panda.urdf')!r}, kernels='off'); "
            "loaded = sorted(m for m in sys.modules if m.split('.')[0] in "
            "('urdf_parser_py', 'transforms3d', 'lxml')); assert not loaded, loaded")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)
