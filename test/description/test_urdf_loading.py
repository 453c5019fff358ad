"""The URDF loader: spec defaults, joint types, fixed-joint merging, mimic, errors."""
import warnings

import numpy as np
import pytest

from support.numerics import assert_close
from soa_dynamics_ros import (DescriptionWarning, InertiaError, InertiaWarning, RobotModel,
                              UnsupportedJointError, URDFError)

INERTIAL = ('<inertial><origin xyz="0.1 0.02 -0.05" rpy="0.3 -0.2 0.1"/><mass value="1.5"/>'
            '<inertia ixx="0.02" ixy="0.001" ixz="0" iyy="0.03" iyz="0.002" izz="0.04"/></inertial>')


def robot(*joints, links=None, name="test"):
    """URDF text: base plus links l1..ln (with inertials) joined by the given joint elements."""
    count = len(joints)
    links = links if links is not None else ["base"] + [f"l{i}" for i in range(1, count + 1)]
    link_xml = "".join(f'<link name="{link}">{INERTIAL}</link>' for link in links)
    return f'<robot name="{name}">{link_xml}{"".join(joints)}</robot>'


def joint(name, parent, child, kind="revolute", body=None):
    limit = '<limit lower="-3" upper="3" effort="10" velocity="2"/>'
    body = body if body is not None else '<origin xyz="0.1 0.2 0.3" rpy="0.1 0.2 0.3"/><axis xyz="0 0 1"/>'
    return (f'<joint name="{name}" type="{kind}"><parent link="{parent}"/><child link="{child}"/>'
            f'{body}{limit if kind != "fixed" else ""}</joint>')


def test_missing_origin_and_axis_follow_the_urdf_spec():
    implicit = RobotModel.from_urdf(robot(joint("j1", "base", "l1", body="")))
    explicit = RobotModel.from_urdf(robot(joint(
        "j1", "base", "l1", body='<origin xyz="0 0 0" rpy="0 0 0"/><axis xyz="1 0 0"/>')))
    for q in ([0.3], [-1.2]):
        assert_close(implicit.frame_pose(q, "l1"), explicit.frame_pose(q, "l1"), "pose", 1e-15)
        assert_close(implicit.mass_matrix(q), explicit.mass_matrix(q), "mass matrix", 1e-15)
    rotated = implicit.frame_pose([np.pi / 2], "l1")[:3, :3]
    assert_close(rotated, [[1, 0, 0], [0, 0, -1], [0, 1, 0]], "rotation about x", 1e-15)


def test_axes_are_normalized():
    unit = RobotModel.from_urdf(robot(joint("j1", "base", "l1", "prismatic",
                                            body='<axis xyz="0 0.6 0.8"/>')))
    scaled = RobotModel.from_urdf(robot(joint("j1", "base", "l1", "prismatic",
                                              body='<axis xyz="0 3 4"/>')))
    assert_close(scaled.frame_pose([0.5], "l1"), unit.frame_pose([0.5], "l1"), "pose", 1e-15)
    assert_close(scaled.frame_pose([0.5], "l1")[:3, 3], [0, 0.3, 0.4], "translation", 1e-15)


def test_axis_components_at_double_rounding_are_zero():
    """An axis exported as "0 1 6.12323e-17" (cos(pi/2) in doubles: iCub's URDF) turns
    about y exactly, so that the compiled kernels keep the axis's zeros; a component
    above 1e-12 stays."""
    def rotation(axis):
        model = RobotModel.from_urdf(robot(joint("j1", "base", "l1",
                                                 body=f'<axis xyz="{axis}"/>')))
        return model.frame_pose([0.5], "l1")[:3, :3]
    c, s = np.cos(0.5), np.sin(0.5)
    assert_close(rotation("0 1 6.12323e-17"), [[c, 0, s], [0, 1, 0], [-s, 0, c]],
                 "about y", 0.0)
    assert_close(rotation("0 -1 -1e-13"), [[c, 0, -s], [0, 1, 0], [s, 0, c]], "about -y", 0.0)
    assert_close(rotation("0 1e308 0"), [[c, 0, s], [0, 1, 0], [-s, 0, c]], "about y, scaled",
                 0.0)
    kept = rotation("0 1 1e-9")
    assert_close(kept[[1, 0], [0, 1]], [1e-9 * s, -1e-9 * s], "the kept z component", 1e-20)


def test_continuous_joint_is_one_angle():
    model = RobotModel.from_urdf(robot(joint("j1", "base", "l1", "continuous")))
    assert model.dof == 1
    assert_close(model.frame_pose([2 * np.pi + 0.4], "l1"), model.frame_pose([0.4], "l1"),
                 "periodic", 1e-13)


def test_fixed_joints_merge_bodies_but_every_link_stays_a_frame():
    text = robot(joint("j1", "base", "l1"), joint("f2", "l1", "l2", "fixed"),
                 joint("j3", "l2", "l3"), joint("f4", "l3", "l4", "fixed"))
    model = RobotModel.from_urdf(text)
    assert model.joint_names == ["j1", "j3"]
    assert model.frame_names == ["base", "l1", "l2", "l3", "l4"]
    assert model.tree.nb == 3
    assert model.total_mass == pytest.approx(5 * 1.5)


def test_links_without_inertial_are_massless():
    text = robot(joint("j1", "base", "l1"), joint("f2", "l1", "tool", "fixed"),
                 links=["base", "l1"]).replace("</robot>", '<link name="tool"/></robot>')
    model = RobotModel.from_urdf(text)
    assert model.total_mass == pytest.approx(3.0)
    assert "tool" in model.frame_names


def test_mimic_joints_follow_their_master_and_fold_their_effort(rng):
    multiplier, offset = -0.7, 0.25
    mimic = joint("j2", "l1", "l2").replace(
        "</joint>", f'<mimic joint="j1" multiplier="{multiplier}" offset="{offset}"/></joint>')
    coupled = RobotModel.from_urdf(robot(joint("j1", "base", "l1"), mimic))
    free = RobotModel.from_urdf(robot(joint("j1", "base", "l1"), joint("j2", "l1", "l2")))
    assert coupled.joint_names == ["j1"]
    assert [j.mimic_of for j in coupled.joints] == [None, "j1"]
    for _ in range(10):
        q, qd, qdd = rng.normal(size=3)
        hinge = lambda x, o=0.0: np.array([x, multiplier * x + o])  # noqa: E731
        assert_close(coupled.frame_pose([q], "l2"), free.frame_pose(hinge(q, offset), "l2"),
                     "mimic pose", 1e-14)
        tau_free = free.inverse_dynamics(hinge(q, offset), hinge(qd), hinge(qdd))
        assert_close(coupled.inverse_dynamics([q], [qd], [qdd]),
                     [tau_free[0] + multiplier * tau_free[1]], "folded effort", 1e-12)


def test_chained_mimic_composes():
    j2 = joint("j2", "l1", "l2").replace("</joint>", '<mimic joint="j1" multiplier="2" offset="0.1"/></joint>')
    j3 = joint("j3", "l2", "l3").replace("</joint>", '<mimic joint="j2" multiplier="3" offset="0.2"/></joint>')
    model = RobotModel.from_urdf(robot(joint("j1", "base", "l1"), j2, j3))
    free = RobotModel.from_urdf(robot(joint("j1", "base", "l1"), joint("j2", "l1", "l2"),
                                      joint("j3", "l2", "l3")))
    q = 0.3
    q2 = 2 * q + 0.1
    assert_close(model.frame_pose([q], "l3"), free.frame_pose([q, q2, 3 * q2 + 0.2], "l3"),
                 "chained mimic", 1e-14)


def test_a_mimic_tag_on_a_fixed_joint_is_ignored_with_a_warning():
    """Reduced models lock joints by making them fixed and keep their <mimic> (Talos's
    talos_reduced.urdf in example-robot-data): the joint cannot move, so it follows nothing."""
    locked = joint("j2", "l1", "l2", "fixed").replace(
        "</joint>", '<mimic joint="j1" multiplier="2" offset="0.5"/></joint>')
    with pytest.warns(DescriptionWarning, match=r"<mimic> of 1 fixed joint\(s\) is ignored: "
                                                r"'j2' \(line 1, mimics 'j1'\)"):
        model = RobotModel.from_urdf(robot(joint("j1", "base", "l1"), locked))
    plain = RobotModel.from_urdf(robot(joint("j1", "base", "l1"),
                                       joint("j2", "l1", "l2", "fixed")))
    assert model.joint_names == ["j1"] and not model.tree.has_mimic
    for q in ([0.4], [-1.1]):
        assert_close(model.frame_pose(q, "l2"), plain.frame_pose(q, "l2"), "pose", 0)
        assert_close(model.mass_matrix(q), plain.mass_matrix(q), "mass matrix", 0)


@pytest.mark.parametrize("master, why", [
    ("ghost", "unknown joint 'ghost'"), ("j0", "'j0', a fixed joint")])
def test_a_mimic_of_no_moving_joint_is_ignored_with_a_warning(master, why):
    """A broken <mimic> (example-robot-data's alex_psyonic_hands.urdf names joints its file
    lacks): the joint moves on its own, as Pinocchio and KDL take every <mimic>."""
    fixed = joint("j0", "base", "l0", "fixed")
    follower = joint("j2", "l1", "l2").replace(
        "</joint>", f'<mimic joint="{master}" multiplier="2" offset="0.5"/></joint>')
    with pytest.warns(DescriptionWarning, match=rf"<mimic> of 1 joint\(s\) names no joint that "
                                                rf"moves and is ignored .*'j2' \(line 1, mimics "
                                                rf"{why}\)"):
        model = RobotModel.from_urdf(robot(fixed, joint("j1", "l0", "l1"), follower,
                                           links=["base", "l0", "l1", "l2"]))
    plain = RobotModel.from_urdf(robot(fixed, joint("j1", "l0", "l1"), joint("j2", "l1", "l2"),
                                       links=["base", "l0", "l1", "l2"]))
    assert model.joint_names == ["j1", "j2"] and not model.tree.has_mimic
    for q in ([0.4, -0.3], [-1.1, 2.0]):
        assert_close(model.frame_pose(q, "l2"), plain.frame_pose(q, "l2"), "pose", 0)
        assert_close(model.mass_matrix(q), plain.mass_matrix(q), "mass matrix", 0)


def test_inertial_origin_rotation_is_applied():
    diagonal = ('<inertial><origin xyz="0 0 0" rpy="0 0 1.5707963267948966"/><mass value="1"/>'
                '<inertia ixx="0.01" ixy="0" ixz="0" iyy="0.05" iyz="0" izz="0.05"/></inertial>')
    text = (f'<robot name="r"><link name="base"/><link name="l1">{diagonal}</link>'
            '<joint name="j1" type="revolute"><parent link="base"/><child link="l1"/>'
            '<axis xyz="1 0 0"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint></robot>')
    # Rotated 90 degrees about z, the 0.05 moment now lies about x.
    assert RobotModel.from_urdf(text).mass_matrix([0.0])[0, 0] == pytest.approx(0.05)


def test_file_path_and_string_load_the_same(tmp_path):
    text = robot(joint("j1", "base", "l1"))
    path = tmp_path / "r.urdf"
    path.write_text(text)
    assert_close(RobotModel.from_urdf(str(path)).mass_matrix([0.2]),
                 RobotModel.from_urdf(text).mass_matrix([0.2]), "file vs string", 0)
    assert RobotModel.from_urdf(path).joint_names == ["j1"]


def test_xacro_string_and_file(tmp_path):
    text = ('<robot name="x" xmlns:xacro="http://www.ros.org/wiki/xacro">'
            '<xacro:property name="len" value="0.5"/>'
            '<xacro:macro name="seg" params="n parent">'
            f'<link name="l${{n}}">{INERTIAL}</link>'
            '<joint name="j${n}" type="revolute"><parent link="${parent}"/><child link="l${n}"/>'
            '<origin xyz="0 0 ${len}"/><axis xyz="0 1 0"/>'
            '<limit lower="-1" upper="1" effort="5" velocity="1"/></joint></xacro:macro>'
            '<link name="base"/><xacro:seg n="1" parent="base"/><xacro:seg n="2" parent="l1"/>'
            '</robot>')
    model = RobotModel.from_urdf(text)
    assert model.joint_names == ["j1", "j2"]
    assert_close(model.frame_pose([0, 0], "l2")[:3, 3], [0, 0, 1.0], "xacro property", 1e-15)
    path = tmp_path / "r.urdf.xacro"
    path.write_text(text)
    assert RobotModel.from_urdf(str(path)).joint_names == ["j1", "j2"]


@pytest.mark.parametrize("kind", ["floating", "planar"])
def test_floating_and_planar_joints_are_refused_by_name(kind):
    with pytest.raises(UnsupportedJointError, match=f"'j1'.*{kind}"):
        RobotModel.from_urdf(robot(joint("j1", "base", "l1", kind)))


BROKEN = {
    "malformed XML": ('<robot name="r">\n<link name="a">\n</robot>', "malformed XML.*line 3"),
    "not a robot": ('<model name="r"/>', "expected <robot>"),
    "no links": ('<robot name="r"/>', "no links"),
    "unknown joint type": (robot(joint("j1", "base", "l1", "spherical")), "unknown type 'spherical'"),
    "duplicate link": (robot(joint("j1", "base", "l1"), links=["base", "l1", "l1"]),
                       "duplicate link name 'l1'"),
    "duplicate joint": (robot(joint("j1", "base", "l1"), joint("j1", "l1", "l2")),
                        "duplicate joint name 'j1'"),
    "undefined link": (robot(joint("j1", "base", "nowhere"), links=["base"]),
                       "child link 'nowhere'"),
    "two parents": (robot(joint("j1", "base", "l1"), joint("j2", "base", "l1"), links=["base", "l1"]),
                    "child of two joints"),
    "two roots": (robot(joint("j1", "base", "l1"), links=["base", "l1", "stray"]),
                  "exactly one root.*'stray'"),
    "cycle": (robot(joint("j0", "l2", "base"), joint("j1", "base", "l1"), joint("j2", "l1", "l2"),
                    links=["base", "l1", "l2"]), "cycle"),
    "missing limit": (robot(joint("j1", "base", "l1").replace(
        '<limit lower="-3" upper="3" effort="10" velocity="2"/>', "")), "no <limit>"),
    "inverted limits": (robot(joint("j1", "base", "l1").replace('lower="-3" upper="3"',
                                                                 'lower="3" upper="-3"')),
                        "lower limit"),
    "non-numeric": (robot(joint("j1", "base", "l1").replace('xyz="0 0 1"', 'xyz="0 zero 1"')),
                    "not numeric.*<axis>"),
    "not finite": (robot(joint("j1", "base", "l1").replace('xyz="0 0 1"', 'xyz="0 nan 1"')),
                   "not finite"),
    "zero axis": (robot(joint("j1", "base", "l1").replace('xyz="0 0 1"', 'xyz="0 0 0"')),
                  "zero axis"),
    "mimic cycle": (robot(
        joint("j1", "base", "l1").replace("</joint>", '<mimic joint="j2"/></joint>'),
        joint("j2", "l1", "l2").replace("</joint>", '<mimic joint="j1"/></joint>')), "cycle"),
    "entity expansion": ('<?xml version="1.0"?><!DOCTYPE r [<!ENTITY a "aaaa">]>'
                         '<robot name="r"><link name="&a;"/></robot>', "entity declaration"),
    "missing file": ("/nonexistent/robot.urdf", "does not exist"),
    "absurd mass": (robot(joint("j1", "base", "l1")).replace('<mass value="1.5"/>', '<mass value="1e300"/>', 1),
                    "beyond 1e\\+09"),
    "absurd length": (robot(joint("j1", "base", "l1")).replace('xyz="0.1 0.2 0.3"', 'xyz="1e200 0 0"'),
                      "beyond 10000.*<origin>"),
    "inertial without mass": (robot(joint("j1", "base", "l1")).replace('<mass value="1.5"/>', "", 1),
                              "needs <mass> and <inertia>"),
}


@pytest.mark.parametrize("case", list(BROKEN), ids=list(BROKEN))
def test_broken_descriptions_raise_a_specific_error(case):
    text, message = BROKEN[case]
    with pytest.raises(URDFError, match=message):
        RobotModel.from_urdf(text)


def test_error_names_the_line():
    text = robot(joint("j1", "base", "l1")).replace("><joint", ">\n\n<joint")
    with pytest.raises(URDFError) as error:
        RobotModel.from_urdf(text.replace('type="revolute"', 'type="helical"'))
    assert error.value.line == 3 and "line 3" in str(error.value)


def _with_l1_inertial(text, old, new):
    """Replace ``old`` in the second link's inertial only (links appear in order base, l1)."""
    head, base_part, rest = text.partition("</link>")
    return head + base_part + rest.replace(old, new, 1)


def test_negative_mass_is_always_an_error():
    text = _with_l1_inertial(robot(joint("j1", "base", "l1")), '<mass value="1.5"/>',
                             '<mass value="-1"/>')
    with pytest.raises(InertiaError, match="'l1'.*negative mass"):
        RobotModel.from_urdf(text)


@pytest.mark.parametrize("inertia, problem", [
    ('ixx="0.02" ixy="0" ixz="0" iyy="-0.03" iyz="0" izz="0.04"', "positive definite"),
    ('ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.05"', "triangle inequality"),
])
def test_non_physical_inertia_warns_or_raises_when_strict(inertia, problem):
    text = _with_l1_inertial(robot(joint("j1", "base", "l1")),
                             'ixx="0.02" ixy="0.001" ixz="0" iyy="0.03" iyz="0.002" izz="0.04"',
                             inertia)
    with pytest.warns(InertiaWarning, match=f"'l1'.*{problem}"):
        RobotModel.from_urdf(text)
    with pytest.raises(InertiaError, match=f"'l1'.*{problem}"):
        RobotModel.from_urdf(text, strict_inertia=True)


def test_physical_inertias_raise_no_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        RobotModel.from_urdf(robot(joint("j1", "base", "l1"), joint("j2", "l1", "l2")))
