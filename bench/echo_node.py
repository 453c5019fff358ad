#!/usr/bin/env python3
"""A do-nothing node for the latency baseline: /joint_states echoed on ~/feedforward_state.

Same process layout, executor and spin_once loop as soa_dynamics_node, no
model: what bench_node_latency.py measures with it is the floor set by DDS,
rclpy and the measuring process, against which the node's own share shows.
"""
import sys

from rclpy.node import Node
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState

from soa_dynamics_ros.ros.parameters import DEFAULT_EXECUTOR, DEFAULT_JOINT_STATES_DEPTH
from soa_dynamics_ros.ros.process import make_executor, run_node, spin_until_stopped


class EchoNode(Node):
    def __init__(self):
        super().__init__("soa_dynamics")
        self.declare_parameter("executor", DEFAULT_EXECUTOR)
        self.declare_parameter("joint_states_depth", DEFAULT_JOINT_STATES_DEPTH)
        publisher = self.create_publisher(JointState, "~/feedforward_state", 1)
        qos = QoSProfile(depth=self.get_parameter("joint_states_depth").value,
                         history=HistoryPolicy.KEEP_LAST,
                         reliability=ReliabilityPolicy.BEST_EFFORT)
        self.create_subscription(JointState, "joint_states", publisher.publish, qos)


if __name__ == "__main__":
    sys.exit(run_node("echo", EchoNode,
                      lambda node: make_executor(node.get_parameter("executor").value),
                      spin_until_stopped))
