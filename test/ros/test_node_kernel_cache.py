"""The real node's start-up with a kernel module that may not be loaded (issue 43)."""
import shutil

import numpy as np
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from support.numerics import assert_close
from support.ros_harness import RosClient, RosProcess
from support.small_robots import two_link_arm
from support.waiting import wait_for
from oracles.pinocchio_reference import PinocchioReference
from soa_dynamics_ros import kernels
from soa_dynamics_ros.kernels import build, generic

ARM = two_link_arm(elbow=0.65)


def test_a_corrupt_installed_generic_module_never_ends_the_node_start_up(tmp_path, monkeypatch):
    """The installation's generic module is garbage under its exact name (before: the node
    ended with ImportError at start-up); the cache has a good one.  The node starts, says
    once that it builds from the cache instead, and its feedforward is Pinocchio's gravity."""
    prebuilt = tmp_path / "prebuilt"
    prebuilt.mkdir()
    (prebuilt / f"{generic.module_name()}{build.EXTENSION}").write_bytes(b"\x7fELF" * 100)
    cache = tmp_path / "cache" / "kernels"
    cache.mkdir(parents=True, mode=0o700)
    library = kernels.generic_module().__file__
    shutil.copy(library, cache)
    shutil.copy(build.record_path(library), cache)
    urdf = tmp_path / "arm.urdf"
    urdf.write_text(ARM)
    monkeypatch.setenv("SOA_DYNAMICS_PREBUILT", str(prebuilt))
    monkeypatch.setenv("SOA_DYNAMICS_CACHE", str(cache.parent))
    monkeypatch.delenv("SOA_DYNAMICS_KERNELS", raising=False)
    client = RosClient("kernel_cache_client")
    node = RosProcess("soa_dynamics_node", "-p", f"urdf_file:={urdf}", "-p",
                      "feedforward_ramp_time:=0.0", "-r", "__node:=cache_trust",
                      log_dir=tmp_path, name="cache_trust")
    try:
        feedforward = client.collect(Float64MultiArray, "/cache_trust/feedforward")
        publisher = client.node.create_publisher(JointState, "/joint_states", 10)
        q = [0.5, -0.9]
        state = JointState(name=["shoulder", "elbow"], position=q)
        wait_for(lambda: publisher.publish(state) or feedforward, timeout=60.0,
                 what="feedforward")
        expected = PinocchioReference(ARM, ["shoulder", "elbow"]).inverse_dynamics(
            np.array(q), np.zeros(2), np.zeros(2))
        assert_close(feedforward[-1][1].data, expected, "gravity", 1e-12)
        assert node.log().count("building it into the kernel cache instead") == 1, node.log()
    finally:
        assert node.stop() == 0, node.log()
        client.close()
