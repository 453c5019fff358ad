"""Numbers no float holds (10**400) and complex values are refused by name, in the
constraint and plant APIs too (before: OverflowError, or numpy's ComplexWarning
and the real part silently used)."""
import numpy as np
import pytest

from support.robots import shipped_urdf
from soa_dynamics_ros import RobotModel
from soa_dynamics_ros.errors import InvalidInputError
from soa_dynamics_ros.plant import (differentiate, dh_parameters, payload_capacity,
                                    second_derivative, trajectory_from_arrays)
from soa_dynamics_ros.plant.deflection import deflection_along_path

HOSTILE = {"too large for a float": 10 ** 400, "complex": 1j}


@pytest.fixture(scope="module")
def panda():
    return RobotModel.from_urdf(shipped_urdf("panda.urdf"), kernels="off")


@pytest.fixture(scope="module")
def path(panda):
    time = np.linspace(0.0, 1.0, 5)
    return trajectory_from_arrays(panda, time, np.zeros((5, panda.dof)) + 0.1 * time[:, None])


def _with(value, size, kind):
    values = [0.0] * size
    values[1] = HOSTILE[kind] if value is None else value
    return values


@pytest.mark.parametrize("kind", HOSTILE)
def test_constraint_alpha(panda, kind):
    alpha = np.eye(6).tolist()
    alpha[2][2] = HOSTILE[kind]
    with pytest.raises(InvalidInputError, match="alpha"):
        panda.hybrid_dynamics(np.zeros(7), np.zeros(7), [("panda_link7", alpha, np.zeros(6))])


def test_constraint_alpha_beyond_the_magnitude_bound(panda):
    alpha = np.eye(6) * 1e300
    with pytest.raises(InvalidInputError, match="alpha holds values beyond"):
        panda.hybrid_dynamics(np.zeros(7), np.zeros(7), [("panda_link7", alpha, np.zeros(6))])


@pytest.mark.parametrize("kind", HOSTILE)
def test_trajectory_time_and_derivatives(panda, kind):
    time = _with(None, 5, kind)
    with pytest.raises(InvalidInputError, match="time"):
        trajectory_from_arrays(panda, time, np.zeros((5, panda.dof)))
    for function in (differentiate, second_derivative):
        with pytest.raises(InvalidInputError, match="time"):
            function(time, np.zeros((5, 2)))
        with pytest.raises(InvalidInputError, match="values"):
            function([0.0, 1.0, 2.0], _with(None, 3, kind))


@pytest.mark.parametrize("kind", HOSTILE)
def test_payload_com_and_stiffness(panda, path, kind):
    with pytest.raises(InvalidInputError, match="com"):
        payload_capacity(panda, path, "panda_link7", com=_with(None, 3, kind))
    with pytest.raises(InvalidInputError, match="stiffness"):
        deflection_along_path(panda, path, _with(None, panda.dof, kind), "panda_link7")


@pytest.mark.parametrize("kind", HOSTILE)
def test_dh_table_configuration(panda, kind):
    table = dh_parameters(panda, "panda_link7")
    with pytest.raises(InvalidInputError, match="q"):
        table.transforms(_with(None, panda.dof, kind))
