"""The ROS 2 layer: the node (glue only), its parameters, services and
diagnostics, message conversions, serialized messages and process life.
The only folder of the library that imports rclpy (with the simulated arm
and demo in sim/).
"""
