"""Ask a running soa_dynamics_node for the gravity torques at one configuration.

    .venv/bin/python examples/ask_gravity_torques.py [--node /soa_dynamics] [--timeout 30]

Positions are given by joint name and merged over the node's latest joint state, so this
works before any robot publishes /joint_states.  Exits 1 with the node's message when the
request is refused, 2 when no node answers in time.
"""
import argparse
import sys

import rclpy
from sensor_msgs.msg import JointState

from soa_dynamics_ros.srv import GravityTorques

PANDA_POSE = {"panda_joint1": 0.0, "panda_joint2": -0.5, "panda_joint3": 0.0,
              "panda_joint4": -2.0, "panda_joint5": 0.0, "panda_joint6": 1.5,
              "panda_joint7": 0.7}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--node", default="/soa_dynamics", help="the node's name")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for it")
    args = parser.parse_args()

    rclpy.init()
    node = rclpy.create_node("ask_gravity_torques")
    try:
        client = node.create_client(GravityTorques, f"{args.node}/gravity_torques")
        if not client.wait_for_service(timeout_sec=args.timeout):
            print(f"no {args.node}/gravity_torques service after {args.timeout:g} s", file=sys.stderr)
            return 2
        request = GravityTorques.Request(state=JointState(name=list(PANDA_POSE),
                                                          position=list(PANDA_POSE.values())))
        future = client.call_async(request)
        rclpy.spin_until_future_complete(node, future, timeout_sec=args.timeout)
        response = future.result()
        if response is None:
            print(f"no answer from {args.node} after {args.timeout:g} s", file=sys.stderr)
            return 2
        if not response.success:
            print(f"refused: {response.message}", file=sys.stderr)
            return 1
        for name, effort in zip(response.name, response.effort):
            print(f"{name:>14s} {effort:9.3f} N m")
        return 0
    finally:
        node.destroy_node()
        rclpy.try_shutdown()


if __name__ == "__main__":
    sys.exit(main())
