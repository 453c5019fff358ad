"""examples/trajectory_newton_step.py (the README's trajectory-optimizer example) runs, and its
Jacobians are those of the functions they differentiate (central differences)."""
import importlib.util
import re
import subprocess
import sys

import numpy as np
import pytest

from support.numerics import assert_close
from support.robots import REPO, shipped_urdf
from soa_dynamics_ros import RobotModel

EXAMPLE = REPO / "examples" / "trajectory_newton_step.py"


@pytest.fixture(scope="module")
def example():
    spec = importlib.util.spec_from_file_location("trajectory_newton_step", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def central_differences(function, x, step=1e-6):
    columns = []
    for i in range(len(x)):
        delta = np.zeros(len(x))
        delta[i] = step
        columns.append((function(x + delta) - function(x - delta)) / (2 * step))
    return np.column_stack(columns)


def test_the_example_runs_and_its_step_lowers_the_cost():
    run = subprocess.run([sys.executable, str(EXAMPLE)], capture_output=True, text=True,
                         cwd=REPO, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    before, after = map(float, re.findall(r"(?:line|step):\s+([0-9.]+)", run.stdout))
    assert after < 0.9 * before, run.stdout
    error = float(re.search(r"relative error (\S+)", run.stdout).group(1))
    assert error < 1e-3, run.stdout


def test_the_residual_jacobian_is_the_derivative_of_the_residuals(example):
    model = RobotModel.from_urdf(shipped_urdf("panda.urdf"))
    rng = np.random.default_rng(8)
    path = rng.uniform(-1.0, 1.0, (6, model.dof))
    dt = 0.1

    def residuals(inner):
        return example.residuals(model, np.vstack((path[:1], inner.reshape(4, -1), path[-1:])), dt)
    expected = central_differences(residuals, path[1:-1].ravel())
    assert_close(example.residual_jacobian(model, path, dt), expected, "d r / d q", 1e-6)


def test_the_discrete_dynamics_jacobians_linearize_an_euler_step(example):
    model = RobotModel.from_urdf(shipped_urdf("panda.urdf"))
    rng = np.random.default_rng(9)
    n, dt = model.dof, 0.01
    q, qd, tau = rng.uniform(-1, 1, n), rng.normal(size=n), rng.normal(size=n) * 5

    def euler(x, u):
        return np.concatenate((x[:n] + dt * x[n:], x[n:] + dt * model.forward_dynamics(
            x[:n], x[n:], u)))
    x = np.concatenate((q, qd))
    a, b = example.discrete_dynamics_jacobians(model, q, qd, tau, dt)
    assert_close(a, central_differences(lambda y: euler(y, tau), x), "A", 1e-6)
    assert_close(b, central_differences(lambda u: euler(x, u), tau), "B", 1e-6)
