"""The ROS 2 layer: the node (glue only), its parameters, message conversions
and process life.  The only folder of the library that imports rclpy.
"""
