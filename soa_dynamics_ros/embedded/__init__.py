"""The embedded-model layer without ROS: the live model a node serves, kept in
step with the robot's state (live_model), hosted across description reloads
(model_host, description_loader) and given compiled kernels (warmup).  The ROS
glue in :mod:`soa_dynamics_ros.ros` only converts messages and calls into here.
"""
