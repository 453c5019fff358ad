"""The floating-base robot on ROS with the node in the loop (issue 46 part 7): the sim's
nav_msgs/Odometry is accepted by the node, whose whole_body_gravity feedforward, added to
the sim's joint PD, keeps Solo-12's base height within 5 mm."""
import sys

import numpy as np
import pytest
from sensor_msgs.msg import JointState

from soa_dynamics_ros.ros.processes import ChildProcess
from support.optional import require
from support.robots import REPO, example_robots_folder
from support.ros_harness import RosClient, RosProcess
from support.waiting import wait_for

nav_msgs = require("nav_msgs.msg")

SOLO = "solo_description/robots/solo12.urdf"
FEET = "[FL_FOOT, FR_FOOT, HL_FOOT, HR_FOOT]"
STANDING = [0.0, 0.8, -1.6, 0.0, 0.8, -1.6, 0.0, -0.8, 1.6, 0.0, -0.8, 1.6]
SIM = "/soa_dynamics_floating_sim"


@pytest.fixture
def processes(tmp_path):
    import os
    urdf = str(example_robots_folder() / SOLO)
    node = RosProcess("soa_dynamics_node", "-p", f"urdf_file:={urdf}", "-p", "floating_base:=true",
                      "-p", "feedforward_mode:=whole_body_gravity", "-p", f"contact_frames:={FEET}",
                      "-p", "kernels:=off", "-p", "state_timeout:=0.5", "-p", "feedforward_ramp_time:=0.0",
                      "-r", f"~/feedforward:={SIM}/effort", log_dir=tmp_path, name="node")
    sim = ChildProcess([sys.executable, "-m", "soa_dynamics_ros.sim.floating_sim", "--ros-args",
                        "-p", f"urdf_file:={urdf}", "-p", f"contact_frames:={FEET}",
                        "-p", f"initial_positions:={STANDING}"], tmp_path / "sim.log",
                       os.environ.copy(), REPO)
    yield node, sim
    for process in (sim, node):
        code = process.stop()
        assert code == 0, f"exit {code}:\n{process.log()}"


def test_the_node_keeps_the_simulated_quadruped_standing(processes):
    client = RosClient("floating_sim_test")
    try:
        odometry = client.collect(nav_msgs.Odometry, "/odom")
        feedforward = client.collect(JointState, "/soa_dynamics/feedforward_state")
        wait_for(lambda: len(feedforward) > 50, timeout=60,
                 what="the node's feedforward for the sim's states")
        # Over 3 s of the sim's (real) time from there (it stands still until the node's
        # first command, so the robot never stood on PD alone).
        start = len(odometry)
        wait_for(lambda: len(odometry) > start + 600, timeout=60, what="3 s of odometry")
        heights = np.array([m.pose.pose.position.z for _, m in list(odometry)[start:]])
    finally:
        client.close()
    drift = heights - heights[0]
    assert np.max(np.abs(drift)) < 5e-3, \
        f"base height drift {drift.min() * 1e3:.2f} to {drift.max() * 1e3:.2f} mm, " \
        f"first {heights[0]:.4f} m, last {heights[-1]:.4f} m"
