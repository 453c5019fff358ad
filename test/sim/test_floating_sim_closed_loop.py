"""The floating-base robot on ROS with the node in the loop (issue 46 part 7), as the demo's
standing part runs it: ``soa_dynamics_sim`` with ``floating_base`` publishes Solo-12's base
state on nav_msgs/Odometry, the node's whole_body_gravity feedforward plus the sim's joint PD
keeps the base height still, and PD alone at the same gains lets it sink.  The physics is
MuJoCo's: the targets are issue 46's, with margin."""
import os

import numpy as np
import pytest

from soa_dynamics_ros.sim import standing_demo
from support.optional import require
from support.robots import example_robot_path

require("nav_msgs.msg")
require("mujoco")

SOLO = "solo_description/robots/solo12.urdf"
SECONDS = 3.0           # [simulated s] after settling; PD alone has sunk most of its way by then


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    urdf = str(example_robot_path(SOLO))
    return standing_demo.standing_runs(urdf, tmp_path_factory.mktemp("standing"),
                                       os.environ.copy(), SECONDS)


def test_the_node_keeps_the_simulated_quadruped_standing(runs):
    t, heights = runs[standing_demo.WITH_FEEDFORWARD]
    drift = standing_demo.drift(t, heights)
    assert drift < standing_demo.DRIFT_TARGET / 2, \
        f"base height drift {drift * 1e3:.2f} mm with the node's feedforward; heights " \
        f"{heights.min():.4f} to {heights.max():.4f} m"


def test_pd_alone_sinks_far_more_at_the_same_gains(runs):
    with_feedforward = standing_demo.drift(*runs[standing_demo.WITH_FEEDFORWARD])
    alone = standing_demo.drift(*runs[standing_demo.PD_ALONE])
    assert alone > 2 * standing_demo.RATIO_TARGET * with_feedforward, \
        f"PD alone {alone * 1e3:.2f} mm, with feedforward {with_feedforward * 1e3:.2f} mm"


def test_both_runs_cover_the_simulated_time(runs):
    for label, (t, _) in runs.items():
        assert t[-1] >= standing_demo.SETTLE + SECONDS - 1e-9, label
        # The sim stood still until its first command, and this process heard it from then on.
        assert t[0] < 0.01 and np.all(np.diff(t) > 0), label
