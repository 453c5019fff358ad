"""The multibody layer (numpy only): spatial algebra (:mod:`.spatial`), the joint
model (:mod:`.joints`), the map from generalized to hinge coordinates where mimic
joints live (:mod:`.coordinates`) and the body tree (:mod:`.tree`).

Everything here is constant for a robot once its description is read; the
recursions in :mod:`soa_dynamics_ros.algorithms` take it plus the joint state.
"""
