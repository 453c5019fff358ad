"""The body tree (multibody/tree.py) against Pinocchio's model of the same URDF, and the
mimic coordinate map against hand-written expectations.

Pinocchio is built without mimic folding, so it has one joint per moving URDF joint,
as the tree has one body per moving joint; bodies and joints are matched by name.
"""
import numpy as np
import pytest

from support.numerics import assert_close
from support.optional import require
from support.robot_generator import random_tree_urdf
from support.robots import SHIPPED_ROBOTS, shipped_urdf

pin = require("pinocchio")

SOURCES = ([pytest.param(shipped_urdf(name), id=name) for name in SHIPPED_ROBOTS]
           + [pytest.param(random_tree_urdf(seed, moving_joints=12), id=f"random{seed}")
              for seed in range(300, 306)])


@pytest.fixture(params=SOURCES)
def robot(request, body_tree):
    source = request.param
    xml = open(source).read() if source.endswith(".urdf") else source
    tree = body_tree(xml)
    model = pin.buildModelFromXML(xml)
    joint_of_body = [0] + [model.getJointId(joint.name) for joint in tree.joints]
    return tree, model, joint_of_body


def test_bodies_are_numbered_parent_first(robot):
    tree, model, joint_of_body = robot
    assert tree.parent[0] == -1
    assert all(0 <= tree.parent[body] < body for body in range(1, tree.nb))
    # The same tree as Pinocchio's: parent joint of each body's joint.
    assert [model.parents[joint_of_body[body]] for body in range(1, tree.nb)] == \
        [joint_of_body[tree.parent[body]] for body in range(1, tree.nb)]


def test_hinge_placements_are_pinocchios_joint_placements(robot):
    tree, model, joint_of_body = robot
    for body in range(1, tree.nb):
        placement = model.jointPlacements[joint_of_body[body]]
        assert_close(tree.hinge_rotation[body], placement.rotation, f"hinge rotation {body}", 1e-14)
        assert_close(tree.hinge_translation[body], placement.translation,
                     f"hinge translation {body}", 1e-14)


def test_merged_inertias_are_pinocchios(robot):
    # Pinocchio also adds the inertia of each link hanging from a fixed joint to the
    # joint it rides on, moved into that joint's frame (the body frame here).
    tree, model, joint_of_body = robot
    for body in range(1, tree.nb):
        assert_close(tree.body_inertia[body], model.inertias[joint_of_body[body]].matrix(),
                     f"inertia of body {body} ({tree.body_link[body]})", 1e-12)


def test_frames_ride_on_the_bodies_pinocchio_puts_them_on(robot):
    tree, model, joint_of_body = robot
    for name, frame in tree.frames.items():
        reference = model.frames[model.getFrameId(name, pin.FrameType.BODY)]
        assert reference.parentJoint == joint_of_body[frame.body], name
        assert_close(frame.rotation, reference.placement.rotation, f"{name} rotation", 1e-14)
        assert_close(frame.translation, reference.placement.translation, f"{name} translation",
                     1e-14)


def test_hinge_maps_are_pinocchios_motion_subspaces(robot):
    tree, model, joint_of_body = robot
    data = model.createData()
    pin.computeJointJacobians(model, data, pin.neutral(model))
    for body in range(1, tree.nb):
        joint = joint_of_body[body]
        # Column of the joint's own rate in its local Jacobian: its motion subspace S.
        subspace = pin.getJointJacobian(model, data, joint, pin.LOCAL)[:, model.joints[joint].idx_v]
        assert_close(tree.hinge_map[body], subspace, f"hinge map of body {body}", 1e-14)


MIMIC_CHAIN = """<robot name="mimic_chain">
  <link name="base"/><link name="a"/><link name="b"/><link name="c"/><link name="d"/>
  <joint name="shoulder" type="revolute"><parent link="base"/><child link="a"/>
    <axis xyz="0 0 1"/><limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
  <joint name="finger" type="prismatic"><parent link="a"/><child link="b"/>
    <axis xyz="1 0 0"/><limit lower="0" upper="0.1" effort="1" velocity="1"/>
    <mimic joint="elbow" multiplier="2" offset="0.1"/></joint>
  <joint name="elbow" type="revolute"><parent link="a"/><child link="c"/>
    <axis xyz="0 1 0"/><limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
  <joint name="thumb" type="prismatic"><parent link="b"/><child link="d"/>
    <axis xyz="0 1 0"/><limit lower="0" upper="0.1" effort="1" velocity="1"/>
    <mimic joint="finger" multiplier="-0.5" offset="0.3"/></joint>
</robot>"""


def test_mimic_map_by_hand(body_tree, rng):
    tree = body_tree(MIMIC_CHAIN)
    # Depth first in document order: a (shoulder), b (finger), d (thumb), c (elbow).
    assert tree.body_link == ["base", "a", "b", "d", "c"]
    assert tree.joint_names == ["shoulder", "elbow"]
    assert tree.has_mimic
    # finger = 2 elbow + 0.1; thumb = -0.5 finger + 0.3 = -elbow + 0.25.
    expected_map = np.array([[0, 0], [1, 0], [0, 2], [0, -1], [0, 1]], dtype=float)
    expected_offset = np.array([0, 0, 0.1, 0.25, 0])
    coordinates = tree.coordinates
    # Each row of G has one non-zero: the hinge's master column and multiplier (root: none).
    assert list(coordinates.master) == [-1, 0, 1, 1, 1]
    assert_close(coordinates.multiplier, expected_map.sum(axis=1), "multipliers", 0.0)
    assert_close(coordinates.offset, expected_offset, "offset", 1e-15)
    assert [joint.mimic_of for joint in tree.joints] == [None, "elbow", "elbow", None]
    q, rates, hinge_forces = rng.normal(size=2), rng.normal(size=2), rng.normal(size=5)
    hinge_mass = rng.normal(size=(5, 5))
    assert_close(tree.coordinates.hinge_positions(q), expected_map @ q + expected_offset, "G q + o", 1e-15)
    assert_close(tree.coordinates.hinge_rates(rates), expected_map @ rates, "G qd", 1e-15)
    assert_close(tree.coordinates.joint_forces(hinge_forces), expected_map.T @ hinge_forces, "G^T tau", 1e-15)
    assert_close(tree.coordinates.joint_columns(hinge_mass), hinge_mass @ expected_map, "A G", 1e-15)
    assert_close(tree.coordinates.joint_mass_matrix(hinge_mass), expected_map.T @ hinge_mass @ expected_map,
                 "G^T M G", 1e-14)


def test_coordinate_map_without_mimic_is_the_identity_below_the_root(body_tree, rng):
    tree = body_tree(random_tree_urdf(310, moving_joints=6, mimic_fraction=0.0))
    assert not tree.has_mimic
    assert [joint.body for joint in tree.joints] == list(range(1, tree.nb))
    q, hinge_forces = rng.normal(size=tree.dof), rng.normal(size=tree.nb)
    hinge_mass = rng.normal(size=(tree.nb, tree.nb))
    assert_close(tree.coordinates.hinge_positions(q), np.concatenate(([0.0], q)), "q_hinge", 0.0)
    assert_close(tree.coordinates.hinge_rates(q), np.concatenate(([0.0], q)), "qd_hinge", 0.0)
    assert_close(tree.coordinates.joint_forces(hinge_forces), hinge_forces[1:], "tau", 0.0)
    assert_close(tree.coordinates.joint_columns(hinge_mass), hinge_mass[:, 1:], "A G", 0.0)
    assert_close(tree.coordinates.joint_mass_matrix(hinge_mass), hinge_mass[1:, 1:], "G^T M G", 0.0)
