"""The embedded-model layer without ROS: the live model a node serves, kept in
step with the robot's state, and the compiled-kernel warm-up.  The ROS glue
in :mod:`soa_dynamics_ros.ros` only converts messages and calls into here.
"""
