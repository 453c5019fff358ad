"""The computational layer's public face: :class:`RobotModel`, its constrained
and mixed dynamics and its subgraph views.
"""
from .robot_model import (AUTO_COMPILE_AFTER, DEFAULT_GRAVITY, FAST_KERNELS, KERNEL_MODES,
                          KERNELS_ENV, RobotModel)

__all__ = ["RobotModel", "AUTO_COMPILE_AFTER", "DEFAULT_GRAVITY", "FAST_KERNELS",
           "KERNEL_MODES", "KERNELS_ENV"]
