"""Moved to :mod:`soa_dynamics_ros.description.urdf`; this old path still imports it."""
import sys

from .description import urdf as _moved

sys.modules[__name__] = _moved
