"""The multibody layer: spatial algebra, the joint model and the body tree (numpy only).

Everything here is constant for a robot once its description is read; the
recursions in :mod:`soa_dynamics_ros.algorithms` take it plus the joint state.
"""
