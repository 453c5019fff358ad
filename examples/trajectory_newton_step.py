"""One Gauss-Newton step of a trajectory optimizer, using the derivatives of the dynamics.

Documentation (README, "Derivatives of the dynamics"), not a solver: it shows
where each matrix enters.  A Panda path from a start to a goal configuration,
sampled at knots ``dt`` apart, is made to need less torque.  The unknowns are
the inner knots q_1 .. q_{K-1} (the ends are fixed); the velocity and
acceleration at a knot are central differences of its neighbours,

    qd_k  = (q_{k+1} - q_{k-1}) / (2 dt)
    qdd_k = (q_{k+1} - 2 q_k + q_{k-1}) / dt^2,

and the cost is ``sum_k |r_k|^2 / 2`` with ``r_k = tau_k / effort_limit``,
``tau_k = ID(q_k, qd_k, qdd_k)``.  By the chain rule each r_k depends on three
knots, through dtau/dq, dtau/dqd and dtau/dqdd = M:

    dtau_k/dq_{k-1} = -dtau/dqd / (2 dt) + M / dt^2
    dtau_k/dq_k     =  dtau/dq - 2 M / dt^2
    dtau_k/dq_{k+1} =  dtau/dqd / (2 dt) + M / dt^2

Gauss-Newton solves ``(J^T J + lambda I) step = -J^T r`` (a small
Levenberg-Marquardt damping lambda) and backtracks until the cost falls.

The forward derivatives linearize the dynamics for shooting methods
(DDP/iLQR, MPC): :func:`discrete_dynamics_jacobians`.

    .venv/bin/python examples/trajectory_newton_step.py
"""
import pathlib

import numpy as np

from soa_dynamics_ros import RobotModel

PANDA = pathlib.Path(__file__).resolve().parents[1] / "urdf" / "panda.urdf"


def rates(path, dt):
    """Velocities and accelerations at the inner knots of ``path`` (K+1 x n)."""
    qd = (path[2:] - path[:-2]) / (2 * dt)
    qdd = (path[2:] - 2 * path[1:-1] + path[:-2]) / dt ** 2
    return qd, qdd


def residuals(model, path, dt):
    """r_k = tau_k / effort limits at the inner knots, stacked."""
    qd, qdd = rates(path, dt)
    return (model.inverse_dynamics_batch(path[1:-1], qd, qdd) / model.effort_limits).ravel()


def residual_jacobian(model, path, dt):
    """d r / d (q_1 .. q_{K-1}): block tridiagonal, n x n blocks."""
    inner = path[1:-1]
    qd, qdd = rates(path, dt)
    dtau_dq, dtau_dqd = model.inverse_dynamics_derivatives_batch(inner, qd, qdd)
    count, n = inner.shape
    jacobian = np.zeros((count * n, count * n))
    for k in range(count):
        mass = model.mass_matrix(inner[k])                  # dtau/dqdd
        rows = slice(k * n, (k + 1) * n)
        jacobian[rows, rows] = dtau_dq[k] - 2 * mass / dt ** 2
        if k > 0:
            jacobian[rows, (k - 1) * n:k * n] = -dtau_dqd[k] / (2 * dt) + mass / dt ** 2
        if k + 1 < count:
            jacobian[rows, (k + 1) * n:(k + 2) * n] = dtau_dqd[k] / (2 * dt) + mass / dt ** 2
    return jacobian / np.tile(model.effort_limits, count)[:, None]


def cost(model, path, dt):
    return 0.5 * float(np.sum(residuals(model, path, dt) ** 2))


def gauss_newton_step(model, path, dt, damping=1e-6):
    """The path after one damped Gauss-Newton step with backtracking: (path, step length)."""
    r = residuals(model, path, dt)
    jacobian = residual_jacobian(model, path, dt)
    normal = jacobian.T @ jacobian
    lam = damping * np.trace(normal) / len(normal)
    step = -np.linalg.solve(normal + lam * np.eye(len(normal)), jacobian.T @ r)
    before, length = cost(model, path, dt), 1.0
    while length > 1e-4:
        candidate = path.copy()
        candidate[1:-1] += length * step.reshape(path[1:-1].shape)
        if cost(model, candidate, dt) < before:
            return candidate, length
        length /= 2
    return path, 0.0


def discrete_dynamics_jacobians(model, q, qd, tau, dt):
    """A, B of x' = x + dt f(x, u) with x = (q, qd), u = tau (explicit Euler): what
    DDP/iLQR linearize around each knot."""
    dqdd_dq, dqdd_dqd, dqdd_dtau = model.forward_dynamics_derivatives(q, qd, tau)
    n = model.dof
    a = np.eye(2 * n)
    a[:n, n:] += dt * np.eye(n)
    a[n:, :n] += dt * dqdd_dq
    a[n:, n:] += dt * dqdd_dqd
    b = np.vstack((np.zeros((n, n)), dt * dqdd_dtau))
    return a, b


def main():
    model = RobotModel.from_urdf(str(PANDA))
    start = np.array([0.0, -0.8, 0.0, -2.4, 0.0, 1.6, 0.8])
    goal = np.array([1.2, 0.2, -0.4, -1.6, 0.3, 2.0, 0.0])
    knots, dt = 20, 0.1
    path = start + np.linspace(0.0, 1.0, knots + 1)[:, None] * (goal - start)
    print(f"cost of the straight line:    {cost(model, path, dt):.4f}")
    path, length = gauss_newton_step(model, path, dt)
    print(f"after one Gauss-Newton step:  {cost(model, path, dt):.4f} (step length {length:g})")
    # Linearized dynamics at knot 5 (inner knot 4), checked on a small change of the state.
    velocities, accelerations = rates(path, dt)
    q, qd, qdd = path[5], velocities[4], accelerations[4]
    tau = model.inverse_dynamics(q, qd, qdd)
    a, b = discrete_dynamics_jacobians(model, q, qd, tau, dt)
    n = model.dof

    def euler(x):
        return np.concatenate((x[:n] + dt * x[n:], x[n:] + dt * model.forward_dynamics(
            x[:n], x[n:], tau)))
    x, dx = np.concatenate((q, qd)), 1e-5 * np.linspace(-1.0, 1.0, 2 * n)
    error = np.linalg.norm(euler(x + dx) - euler(x) - a @ dx) / np.linalg.norm(a @ dx)
    print(f"discrete dynamics at knot 5: A {a.shape}, B {b.shape}; A dx against the step "
          f"of x + dx: relative error {error:.1e}")


if __name__ == "__main__":
    main()
