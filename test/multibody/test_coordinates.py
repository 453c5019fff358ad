"""The coordinate map (multibody/coordinates.py): mimic joints as one map q -> q_hinge.

Every product is checked against a dense G and offset built here, independently,
from the URDF's mimic tags (not from the map under test)."""
import tracemalloc

import numpy as np
import pytest

from support.robot_generator import random_tree_urdf
from soa_dynamics_ros.description.urdf import parse_urdf
from soa_dynamics_ros.errors import URDFError
from soa_dynamics_ros.model import RobotModel
from soa_dynamics_ros.multibody.tree import BodyTree


def _dense_map(description, tree):
    """G (nb x dof) and offset, by composing each mimic chain from the description."""
    column = {name: k for k, name in enumerate(tree.joint_names)}
    g = np.zeros((tree.nb, tree.dof))
    offset = np.zeros(tree.nb)
    for joint in tree.joints:
        current, multiplier, shift = description.joints[joint.name], 1.0, 0.0
        while current.mimic is not None:
            shift += multiplier * current.mimic.offset
            multiplier *= current.mimic.multiplier
            current = description.joints[current.mimic.joint]
        g[joint.body, column[current.name]] = multiplier
        offset[joint.body] = shift
    return g, offset


@pytest.fixture(params=[(21, 0.0), (22, 0.4), (23, 0.7)], ids=["no-mimic", "mimic", "chains"])
def mapped(request):
    seed, mimic = request.param
    description = parse_urdf(random_tree_urdf(seed, moving_joints=12, mimic_fraction=mimic))
    tree = BodyTree(description)
    return tree, *_dense_map(description, tree)


def test_map_products_equal_the_dense_operator(mapped, rng):
    tree, g, offset = mapped
    coordinates = tree.coordinates
    q = rng.uniform(-2, 2, tree.dof)
    np.testing.assert_allclose(coordinates.hinge_positions(q), g @ q + offset, rtol=0, atol=1e-14)
    np.testing.assert_allclose(coordinates.hinge_rates(q), g @ q, rtol=0, atol=1e-14)
    forces = rng.normal(size=tree.nb)
    np.testing.assert_allclose(coordinates.joint_forces(forces), g.T @ forces, atol=1e-13)
    columns = rng.normal(size=(6, tree.nb))
    np.testing.assert_allclose(coordinates.joint_columns(columns), columns @ g, atol=1e-13)
    hinge_mass = rng.normal(size=(tree.nb, tree.nb))
    np.testing.assert_allclose(coordinates.joint_mass_matrix(hinge_mass), g.T @ hinge_mass @ g,
                               atol=1e-12)
    assert coordinates.couples_hinges == any(j.mimic_of for j in tree.joints)


def test_restriction_locks_the_other_joints(mapped, rng):
    tree, g, _ = mapped
    chosen = np.array(sorted(rng.choice(tree.dof, size=tree.dof // 2, replace=False)))
    restricted = tree.coordinates.restricted(chosen)
    g_chosen = g[:, chosen]
    rates = rng.normal(size=len(chosen))
    np.testing.assert_allclose(restricted.hinge_rates(rates), g_chosen @ rates, atol=1e-14)
    forces = rng.normal(size=tree.nb)
    np.testing.assert_allclose(restricted.joint_forces(forces), g_chosen.T @ forces, atol=1e-13)
    np.testing.assert_array_equal(restricted.free_hinges(), np.abs(g_chosen).sum(axis=1) > 0)


def test_mimic_chain_composes_multiplier_and_offset():
    urdf = ('<robot name="r"><link name="l0"/><link name="l1"/><link name="l2"/><link name="l3"/>'
            + "".join(
                f'<joint name="j{i}" type="revolute"><parent link="l{i - 1}"/><child link="l{i}"/>'
                f'<limit lower="-1" upper="1" effort="1" velocity="1"/>{mimic}</joint>'
                for i, mimic in ((1, ""), (2, '<mimic joint="j1" multiplier="2" offset="0.5"/>'),
                                 (3, '<mimic joint="j2" multiplier="-3" offset="0.25"/>')))
            + "</robot>")
    tree = BodyTree(parse_urdf(urdf))
    assert tree.joint_names == ["j1"]
    # q2 = 2 q1 + 0.5; q3 = -3 q2 + 0.25 = -6 q1 - 1.25
    np.testing.assert_allclose(tree.coordinates.hinge_positions(np.array([0.4])),
                               [0.0, 0.4, 1.3, -3.65], atol=1e-15)
    assert tree.coordinates.hinge_coordinate(3) == (0, -6.0, -1.25)


@pytest.mark.parametrize("length", [1, 3])
def test_mimic_cycles_are_refused_by_the_reader(length):
    joints = "".join(
        f'<joint name="j{i}" type="revolute"><parent link="l{i}"/><child link="l{i + 1}"/>'
        f'<limit lower="-1" upper="1" effort="1" velocity="1"/>'
        f'<mimic joint="j{(i + 1) % length}"/></joint>' for i in range(length))
    links = "".join(f'<link name="l{i}"/>' for i in range(length + 1))
    with pytest.raises(URDFError, match="mimic joints form a cycle") as raised:
        parse_urdf(f'<robot name="r">{links}{joints}</robot>')
    assert raised.value.element == "mimic"


def _star(links):
    arms = "".join(
        f'<link name="l{i}"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" '
        f'ixy="0" ixz="0" iyz="0"/></inertial></link><joint name="j{i}" type="revolute">'
        f'<parent link="base"/><child link="l{i}"/><axis xyz="0 0 1"/>'
        f'<limit lower="-1" upper="1" effort="1" velocity="1"/></joint>' for i in range(links))
    return f'<robot name="star"><link name="base"/>{arms}</robot>'


def test_a_large_star_never_allocates_a_dense_coordinate_map():
    """10,000 links: building the model and a mass-matrix-sized product stay O(n) beyond M."""
    links = 10_000
    urdf = _star(links)
    tracemalloc.start()
    model = RobotModel.from_urdf(urdf, kernels="off")
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    # A dense nb x dof map alone would be 800 MB; the whole model stays far below.
    assert peak < 200e6, f"building the model peaked at {peak / 1e6:.0f} MB"
    assert model.dof == links


def test_mass_matrix_of_a_star_allocates_about_one_matrix():
    links = 2_000
    model = RobotModel.from_urdf(_star(links), kernels="off")
    q = np.linspace(-1, 1, links)
    one_matrix = 8.0 * (links + 1) ** 2
    tracemalloc.start()
    mass = model.mass_matrix(q)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    # G^T M G with a dense G took four matrices (G, G^T M, the result, M).
    assert peak < 1.5 * one_matrix, f"peak {peak / one_matrix:.2f} mass matrices"
    # Each arm about its own axis: inertia 0.1 + m r^2 with the COM on the axis: 0.1.
    np.testing.assert_allclose(np.diag(mass), 0.1)
    assert not np.count_nonzero(mass - np.diag(np.diag(mass)))
