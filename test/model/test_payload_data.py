"""Model and data: a payload changes the model's current inertias, never the parsed robot."""
import threading

import numpy as np
import pytest

from support.robots import shipped_urdf
from soa_dynamics_ros.errors import InvalidInputError
from soa_dynamics_ros.ros.parameters import PAYLOAD_FIELDS, validate
from soa_dynamics_ros.model import RobotModel
from soa_dynamics_ros.multibody.tree import BodyTree
from soa_dynamics_ros.description.urdf import parse_urdf


def test_payload_leaves_the_parsed_tree_untouched(rng):
    urdf = shipped_urdf("panda.urdf")
    model = RobotModel.from_urdf(urdf, kernels="off")
    parsed = model.tree
    urdf_inertia = BodyTree(parse_urdf(urdf)).body_inertia
    model.attach_payload("box", "panda_link7", 2.5, com=(0.0, 0.0, 0.1))
    # The tree seen before the payload is the parsed robot, unchanged.
    np.testing.assert_array_equal(parsed.body_inertia, urdf_inertia)
    # The model's current view carries the payload: 2.5 kg more in total.
    np.testing.assert_allclose(model.total_mass, urdf_inertia[:, 0, 0].sum() + 2.5, rtol=1e-14)
    assert model.tree.parent is parsed.parent          # one structure, shared
    model.detach_payload("box")
    np.testing.assert_array_equal(model.tree.body_inertia, urdf_inertia)


def test_a_tree_held_by_a_running_computation_never_changes(rng):
    """A reader that took the tree keeps one inertia state while payloads change."""
    model = RobotModel.from_urdf(shipped_urdf("panda.urdf"), kernels="off")
    held = model.tree
    snapshot = held.body_inertia.copy()
    stop = threading.Event()

    def churn():
        while not stop.is_set():
            model.attach_payload("p", "panda_link5", 1.0)
            model.detach_payload("p")

    worker = threading.Thread(target=churn)
    worker.start()
    try:
        for _ in range(200):
            np.testing.assert_array_equal(held.body_inertia, snapshot)
    finally:
        stop.set()
        worker.join(timeout=30)
    assert not worker.is_alive()


def test_a_centre_of_mass_beyond_the_bound_is_refused_and_changes_nothing():
    """Before: ~/set_payload (RobotModel.attach_payload) took a centre of mass 1e30 m away."""
    model = RobotModel.from_urdf(shipped_urdf("panda.urdf"), kernels="off")
    inertia = model.tree.body_inertia.copy()
    for com in ([0.0, 0.0, 1e30], [-1.0001e4, 0.0, 0.0]):
        with pytest.raises(InvalidInputError, match=r"com must be within \+-10000 m"):
            model.attach_payload("far", "panda_link7", 1.0, com=com)
        # the start-up payload parameters have the same bound
        with pytest.raises(InvalidInputError, match=r"within \+-10000 m"):
            validate("com", com, PAYLOAD_FIELDS, "payload.far.")
    assert model.payloads == {}
    np.testing.assert_array_equal(model.tree.body_inertia, inertia)
    model.attach_payload("reach", "panda_link7", 1.0, com=[0.0, 0.0, 1e4])
    assert list(model.payloads) == ["reach"]
