"""The one place where this folder builds library internals (the body tree from URDF text),
so that a change of their signatures is adapted here alone."""
import pytest

from soa_dynamics_ros.description.urdf import parse_urdf
from soa_dynamics_ros.multibody.tree import BodyTree


@pytest.fixture(scope="session")
def body_tree():
    """``body_tree(urdf_text_or_path)``: the parsed robot's :class:`BodyTree`."""
    return lambda source: BodyTree(parse_urdf(source))
