"""soa_dynamics_ros: a structure-based (spatial operator algebra) multibody model of a robot.

The library layer imports numpy only; the ROS node lives in
:mod:`soa_dynamics_ros.ros.node` and is never imported from here.
"""
import pkgutil

# Generated ROS interfaces (soa_dynamics_ros.msg / .srv) are installed by CMake
# into the environment's site-packages, beside this source tree: let both
# halves of the package import.
__path__ = pkgutil.extend_path(__path__, __name__)

from .errors import (  # noqa: E402
    DescriptionWarning, InertiaError, InertiaWarning, InvalidInputError, SingularDynamicsError,
    SoaDynamicsError, UnknownNameError, UnsupportedJointError, URDFError)
from .model import RobotModel  # noqa: E402
from .estimation import ContactDetector, ExternalTorqueObserver  # noqa: E402

__all__ = [
    "RobotModel", "ExternalTorqueObserver", "ContactDetector", "SoaDynamicsError",
    "InvalidInputError", "UnknownNameError", "URDFError", "UnsupportedJointError", "InertiaError",
    "InertiaWarning", "DescriptionWarning", "SingularDynamicsError",
]
