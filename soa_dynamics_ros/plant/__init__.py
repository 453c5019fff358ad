"""Automatic plant description: what a robot can do along a path (ROS-free, numpy only).

* :mod:`.trajectory` - CSV paths, differentiation, joint-limit checks
* :mod:`.torques` - torques along a path, peaks, ratios to the effort limits
* :mod:`.payload` - largest payload a path allows (exact)
* :mod:`.deflection` - end-effector deflection from joint stiffness
* :mod:`.dh` - standard and modified Denavit-Hartenberg parameters of a serial chain
* :mod:`.criteria` - manipulability, dynamic manipulability, task-space inertia conditioning
* :mod:`.info` - a summary of a robot description
* :mod:`.plots` - figures (matplotlib, imported only when plotting)
"""
from .chain import default_tip, serial_path
from .dh import DHTable, dh_parameters
from .payload import PayloadCapacity, payload_capacity
from .torques import (TorqueReport, evaluate_torques, path_torques, payload_gravity_torques,
                      robot_gravity_torques, torque_report, trajectory_efforts)
from .trajectory import (Trajectory, check_joint_limits, differentiate, read_trajectory_csv,
                         second_derivative, trajectory_from_arrays)

__all__ = [
    "Trajectory", "read_trajectory_csv", "trajectory_from_arrays", "differentiate",
    "second_derivative", "check_joint_limits", "path_torques", "torque_report", "evaluate_torques",
    "trajectory_efforts", "payload_gravity_torques", "robot_gravity_torques",
    "TorqueReport", "payload_capacity", "PayloadCapacity", "dh_parameters", "DHTable",
    "serial_path", "default_tip",
]
