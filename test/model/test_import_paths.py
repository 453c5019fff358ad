"""Import paths users wrote before the modules moved into layer folders keep working."""
import subprocess
import sys

import soa_dynamics_ros
from soa_dynamics_ros.description import urdf as description_urdf
from soa_dynamics_ros.model import robot_model


def test_model_package_keeps_the_old_module_names():
    import soa_dynamics_ros.model as old_model
    for name in ("RobotModel", "KERNELS_ENV", "AUTO_COMPILE_AFTER", "DEFAULT_GRAVITY",
                 "KERNEL_MODES", "FAST_KERNELS"):
        assert getattr(old_model, name) is getattr(robot_model, name), name
    assert soa_dynamics_ros.RobotModel is robot_model.RobotModel


def test_old_urdf_module_is_the_description_reader():
    import soa_dynamics_ros.urdf as old_urdf
    from soa_dynamics_ros.urdf import parse_urdf
    assert old_urdf is description_urdf
    assert parse_urdf is description_urdf.parse_urdf


def test_errors_stay_where_they_were():
    from soa_dynamics_ros.errors import SoaDynamicsError, URDFError
    assert issubclass(URDFError, SoaDynamicsError)
    assert soa_dynamics_ros.URDFError is URDFError


def test_old_paths_import_in_a_fresh_interpreter_without_rclpy():
    # A fresh process: the aliases must not depend on what this test session imported first.
    code = ("import sys; import soa_dynamics_ros.urdf, soa_dynamics_ros.model; "
            "from soa_dynamics_ros.model import RobotModel; "
            "assert soa_dynamics_ros.urdf.__name__ == 'soa_dynamics_ros.description.urdf'; "
            "assert 'rclpy' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)
