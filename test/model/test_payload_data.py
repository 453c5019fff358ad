"""Model and data: a payload changes the model's current inertias, never the parsed robot."""
import threading

import numpy as np

from support.robots import shipped_urdf
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
