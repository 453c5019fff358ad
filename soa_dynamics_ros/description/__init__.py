"""Robot descriptions: URDF and xacro reading, ROS package resolution, validation.

The reader turns a description into plain records (links, joints) that
:mod:`soa_dynamics_ros.multibody` builds the body tree from; nothing here
knows about dynamics.
"""
