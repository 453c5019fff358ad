"""Hostile robot descriptions: every one loads or raises a SoaDynamicsError, nothing else."""
import re
import warnings

import numpy as np
import pytest

from support.optional import require
from support.robot_generator import random_tree_urdf
from support.robots import SHIPPED_ROBOTS, shipped_urdf
from soa_dynamics_ros import RobotModel, SoaDynamicsError, URDFError
from soa_dynamics_ros.description.urdf import MAX_DESCRIPTION_BYTES

require("hypothesis")
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

SOURCES = [open(shipped_urdf(name)).read() for name in SHIPPED_ROBOTS] + [
    random_tree_urdf(seed, moving_joints=6) for seed in range(3)]
NUMBER = re.compile(r"-?\d+(\.\d+)?(e-?\d+)?")
JUNK_NUMBERS = ["nan", "inf", "-inf", "1e308", "-1e308", "0", "-0", "1e-320", "abc", "", "1 2",
                "0x10", "١٢"]


def _check_loads_or_refuses(text):
    """The contract: a model whose answers are finite for a finite state, or a SoaDynamicsError."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            model = RobotModel.from_urdf(text)
        except SoaDynamicsError:
            return None
    q = np.full(model.dof, 0.3)
    try:
        assert np.all(np.isfinite(model.inverse_dynamics(q, q, q)))
    except SoaDynamicsError:
        pass
    return model


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(source=st.sampled_from(SOURCES), data=st.data())
def test_mutated_numbers(source, data):
    matches = list(NUMBER.finditer(source))
    chosen = data.draw(st.lists(st.integers(0, len(matches) - 1), min_size=1, max_size=4, unique=True))
    text = source
    for index in sorted(chosen, reverse=True):
        match = matches[index]
        replacement = data.draw(st.sampled_from(JUNK_NUMBERS))
        text = text[:match.start()] + replacement + text[match.end():]
    _check_loads_or_refuses(text)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(source=st.sampled_from(SOURCES), data=st.data())
def test_deleted_and_duplicated_elements(source, data):
    """Cut out or repeat whole elements and attributes (missing tags, duplicate names, cycles)."""
    elements = list(re.finditer(r"<(link|joint|inertial|origin|axis|limit|mimic|parent|child|mass|"
                                r"inertia)\b[^>]*?(/>|>.*?</\1>)", source, re.S))
    text = source
    for _ in range(data.draw(st.integers(1, 3))):
        if not elements:
            break
        match = data.draw(st.sampled_from(elements))
        action = data.draw(st.sampled_from(["delete", "duplicate", "rename", "swap_link"]))
        piece = match.group(0)
        if action == "delete":
            replacement = ""
        elif action == "duplicate":
            replacement = piece + piece
        elif action == "rename":
            replacement = re.sub(r'name="[^"]*"', 'name="base"', piece, count=1)
        else:
            replacement = re.sub(r'link="[^"]*"', 'link="' + data.draw(st.sampled_from(
                re.findall(r'<link name="([^"]*)"', source))) + '"', piece, count=1)
        text = text.replace(piece, replacement, 1)
    _check_loads_or_refuses(text)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_arbitrary_text(text):
    with pytest.raises(SoaDynamicsError):
        RobotModel.from_urdf("<" + text)


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=300))
def test_arbitrary_bytes_as_text(blob):
    with pytest.raises(SoaDynamicsError):
        RobotModel.from_urdf("<robot " + blob.decode("latin-1"))


def test_entity_expansion_is_refused():
    laughs = '<?xml version="1.0"?><!DOCTYPE r [<!ENTITY a "lol">' + "".join(
        f'<!ENTITY {chr(98 + i)} "&{chr(97 + i)};&{chr(97 + i)};&{chr(97 + i)};">' for i in range(9)
    ) + ']><robot name="r"><link name="&j;"/></robot>'
    with pytest.raises(URDFError, match="entity declaration"):
        RobotModel.from_urdf(laughs)
    external = ('<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
                '<robot name="r"><link name="&x;"/></robot>')
    with pytest.raises(URDFError, match="entity declaration"):
        RobotModel.from_urdf(external)


def test_huge_description_is_refused_before_parsing():
    text = '<robot name="big">' + " " * MAX_DESCRIPTION_BYTES + "</robot>"
    with pytest.raises(URDFError, match="larger than"):
        RobotModel.from_urdf(text)


def test_deep_tree_loads_and_computes():
    """A 3000-link chain: no recursion limit anywhere."""
    links = ['<link name="l0"/>'] + [
        f'<link name="l{i}"><inertial><mass value="0.1"/><inertia ixx="1e-4" ixy="0" ixz="0" '
        f'iyy="1e-4" iyz="0" izz="1e-4"/></inertial></link>' for i in range(1, 3001)]
    joints = [f'<joint name="j{i}" type="revolute"><parent link="l{i - 1}"/><child link="l{i}"/>'
              f'<origin xyz="0 0 0.01"/><axis xyz="0 1 0"/>'
              f'<limit lower="-1" upper="1" effort="1" velocity="1"/></joint>' for i in range(1, 3001)]
    model = RobotModel.from_urdf('<robot name="deep">' + "".join(links + joints) + "</robot>")
    assert model.dof == 3000
    assert np.all(np.isfinite(model.gravity_torques(np.full(3000, 0.001))))
