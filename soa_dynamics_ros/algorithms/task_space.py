"""Operational-space compliance J M^-1 J^T by recursion, and the frame quantities it needs.

For unit wrenches applied at some bodies (columns W(k), body axes about the
body origin), the tips-to-base gather carries them through the articulated
bodies, Z(k) = W(k) + sum_children psi(c) Z(c) with psi(c) = X(c)^T (I - U D^-1 H),
and accumulates the compliance seen by those wrenches,

    Lambda^-1 = sum_k Z(k)^T H(k)* D(k)^-1 H(k) Z(k),

which equals J M^-1 J^T without forming or inverting M (Jain & Rodriguez's
operational-space compliance; the same accumulation is the backward sweep of
the Popov-Vereshchagin solver).  Cost O(N m) for m wrench columns.
"""
import numpy as np

from ..multibody.spatial import cross, dtype_of, skew

# Directions of a compliance matrix weaker than this fraction of the strongest
# are treated as absent (singular configuration or redundant constraint).  The
# compiled task-space kernels derive their condition limit from it.
DEFAULT_RCOND = 1e-10


def frame_wrench_map(rotation, offset):
    """T^T: a wrench [f; t] at a frame origin (root axes) as a wrench on its body.

    ``rotation`` is the body's root-frame orientation and ``offset`` the frame
    origin in body coordinates.  T itself maps the body's spatial velocity
    (body axes) to the frame origin's [v; w] in root axes.
    """
    t = np.zeros((6, 6), dtype=dtype_of(rotation, offset))
    t[:3, :3] = rotation
    t[:3, 3:] = -rotation @ skew(offset)
    t[3:, 3:] = rotation
    return t.T


def compliance_gather(tree, bodies, wrench_columns):
    """``(L, Z)``: compliance of the columns and their carried force matrices.

    ``wrench_columns`` is an (nb, 6, m) array of applied unit wrenches.
    """
    carried = wrench_columns.copy()
    compliance = np.zeros((carried.shape[2], carried.shape[2]),
                          dtype=dtype_of(carried, bodies.gain, bodies.inverse_d))
    hinge_map = tree.hinge_map
    for body in range(tree.nb - 1, 0, -1):
        projected = hinge_map[body] @ carried[body]          # H Z, one row
        transform = bodies.transforms[body]
        if bodies.free[body]:
            compliance += bodies.inverse_d[body] * np.outer(projected, projected)
            # psi Z = X^T (Z - U D^-1 H Z)
            through = carried[body] - np.outer(bodies.gain[body], projected) * bodies.inverse_d[body]
        else:
            through = carried[body]
        parent = tree.parent[body]
        if parent > 0:
            carried[parent] += transform.T @ through
    return compliance, carried


def correction_scatter(tree, bodies, carried, multipliers):
    """Accelerations added by the wrenches ``W nu`` (the gather's columns times ``nu``)."""
    hinge_map = tree.hinge_map
    delta_qdd = np.zeros(tree.nb)
    delta_acceleration = np.zeros((tree.nb, 6))
    for body in range(1, tree.nb):
        incoming = bodies.transforms[body] @ delta_acceleration[tree.parent[body]]
        if bodies.free[body]:
            force = carried[body] @ multipliers
            delta_qdd[body] = bodies.inverse_d[body] * (hinge_map[body] @ force
                                                        - bodies.gain[body] @ incoming)
        delta_acceleration[body] = incoming + hinge_map[body] * delta_qdd[body]
    return delta_qdd, delta_acceleration


def classical_acceleration(rotation, offset, velocity, acceleration, gravity):
    """[dv/dt; dw/dt] of a point on a body, root axes, gravity removed.

    ``velocity`` and ``acceleration`` are the body's spatial vectors in body
    axes as the recursions produce them (with the root accelerating at -g to
    bring in gravity, which is undone here).
    """
    v, w = velocity[:3], velocity[3:]
    a_lin, a_ang = acceleration[:3], acceleration[3:]
    linear = a_lin + cross(a_ang, offset) + cross(w, v + cross(w, offset))
    return np.concatenate((rotation @ linear + gravity, rotation @ a_ang))
