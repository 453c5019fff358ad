"""Derivatives of inverse dynamics in closed form, in root axes: the compiled form.

The same hinge-space derivatives as :mod:`.derivatives` (forward-mode tangents,
the reference), from the structure Carpentier and Mansard 2018 exploit:
turning hinge j by dq moves every body of its subtree rigidly, so each
quantity of the subtree changes covariantly (``S_j x``) except where it
involves the bodies upstream of j.  Everything is in root axes about the root
origin: velocities and accelerations add along the tree and forces gather with
no transforms.  With S, v, a, F the hinge map, velocity, acceleration and
gathered force of each body, Ic the composite inertia and, summed over the
subtree of i,

    B(i) = sum_k of the 6x6 map w -> I_k (w x v_k) + w x* (I_k v_k) + v_k x* (I_k w),

and per hinge j with parent body l: ``w_j = S_j x v_l``,
``u_j = S_j x a_l - w_j x v_l``:

* j an ancestor of i or i itself:
  ``dtau_i/dq_j = -(Ic_i S_i).u_j - (B_i^T S_i).w_j``,
  ``dtau_i/dqd_j = (B_i^T S_i).S_j - 2 (Ic_i S_i).w_j``;
* j in the subtree of i (j != i):
  ``dtau_i/dq_j = S_i.(S_j x* F_j - Ic_j u_j - B_j w_j)``,
  ``dtau_i/dqd_j = S_i.(B_j S_j - 2 Ic_j w_j)``.

Spatial inertias are kept as mass m, first moment h and rotational inertia J
about the root origin, and B as ``[[0, -2 [p]x], [0, B22]]`` (p: the body's
linear momentum), the only blocks that do not cancel.  At rest (gravity) only
each subtree's mass and first moment remain (:func:`gravity_derivatives`).

The per-robot kernels are traced from these functions
(:mod:`soa_dynamics_ros.kernels.generator`); ``kernels/generic_derivatives.c``
runs the same formulas as loops, with wrenches.  The tests hold all of them to
the forward-mode reference.
"""
import numpy as np

from ..multibody.root_axes import Inertia, cross, force_cross, motion_cross, motion_to_root
from ..multibody.spatial import dtype_of, first_moment, skew
from .kinematics import body_placements


class _VelocityTerm:
    """B of the file comment as ``[[0, -2 [p]x], [0, B22]]``."""

    def __init__(self, momentum, b22):
        self.momentum, self.b22 = momentum, b22

    @classmethod
    def of_body(cls, inertia, velocity):
        """``B22 = [w]x J - J [w]x - [h]x[u]x - [u]x[h]x - [l]x`` for velocity (u, w)
        and momentum I v = (p, l)."""
        momentum = inertia.apply(velocity)
        u, omega, h = velocity[:3], velocity[3:], inertia.moment
        spun = skew(omega) @ inertia.rotational
        b22 = (spun + spun.T - np.outer(u, h) - np.outer(h, u) + 2.0 * (h @ u) * np.eye(3)
               - skew(momentum[3:]))
        return cls(momentum[:3], b22)

    def __add__(self, other):
        return _VelocityTerm(self.momentum + other.momentum, self.b22 + other.b22)

    def apply(self, x):
        return np.concatenate((-2.0 * cross(self.momentum, x[3:]), self.b22 @ x[3:]))

    def transpose_apply(self, x):
        return np.concatenate((np.zeros(3), 2.0 * cross(self.momentum, x[:3])
                               + self.b22.T @ x[3:]))


def inverse_dynamics_derivatives(tree, q_hinge, qd_hinge, qdd_hinge, root_acceleration,
                                 wrenches=()):
    """``(dtau/dq_hinge, dtau/dqd_hinge)``, each nb x nb (row and column 0, the root, zero);
    arguments as :func:`.inverse_dynamics.inverse_dynamics`.

    ``wrenches``: ``(frame, [f; t])`` pairs, each held constant in root axes about the
    frame's link origin ``r``.  It acts on its body as ``(f, t + r x f)`` about the root
    origin; turning hinge j turns ``r`` with its subtree, which adds
    ``E omega_j`` to the body's force, ``E = [[f]x; [t]x + [r]x [f]x]`` (summed over
    each subtree like the inertias): ``-(E_i^T S_i).omega_j`` to the ancestor formula
    and ``-E_j omega_j`` to the subtree term.
    """
    return _pair_derivatives(tree, _body_terms(tree, q_hinge, qd_hinge, qdd_hinge,
                                               root_acceleration, wrenches))


def terms_without_acceleration(tree, q_hinge, qd_hinge, root_acceleration):
    """``(h, terms)``: the hinge torques at ``qdd = 0`` (``C qd + g``: h of
    ``M qdd = tau - h``) and each body's terms there, for :func:`derivatives_at`.  A
    forward dynamics derivative takes its ``qdd`` from M and this h, then the derivatives
    at that ``qdd``, with no inverse dynamics pass of its own for h."""
    terms = _body_terms(tree, q_hinge, qd_hinge, None, root_acceleration)
    nb, parent, hinge_map = tree.nb, tree.parent, terms["hinge_map"]
    gathered = list(terms["force"])
    for body in range(nb - 1, 1, -1):
        if parent[body] > 0:
            gathered[parent[body]] = gathered[parent[body]] + gathered[body]
    bias = np.zeros(nb, dtype=dtype_of(q_hinge, qd_hinge, root_acceleration,
                                       tree.body_inertia))
    for body in range(1, nb):
        bias[body] = hinge_map[body] @ gathered[body]
    return bias, terms


def derivatives_at(tree, terms, qdd_hinge):
    """``(dtau/dq_hinge, dtau/dqd_hinge)`` at ``qdd_hinge`` from
    :func:`terms_without_acceleration`'s ``terms`` (consumed): what ``qdd`` adds along
    the tree, ``a'_i = a'_parent + S_i qdd_i``, goes into each body's acceleration and,
    as ``I_i a'_i``, its force."""
    hinge_map, acceleration = terms["hinge_map"], terms["acceleration"]
    force, inertia = terms["force"], terms["inertia"]
    added = [np.zeros(6)] * tree.nb
    for body in range(1, tree.nb):
        added[body] = added[tree.parent[body]] + hinge_map[body] * qdd_hinge[body]
        acceleration[body] = acceleration[body] + added[body]
        force[body] = force[body] + inertia[body].apply(added[body])
    return _pair_derivatives(tree, terms)


def _body_terms(tree, q_hinge, qd_hinge, qdd_hinge, root_acceleration, wrenches=()):
    """Per body in root axes (each before the sums over subtrees): S, v, a, its force
    (less the wrenches), its inertia, B and E of the file comment; ``qdd_hinge`` None:
    at ``qdd = 0``.  A known qdd goes into this pass (inverse derivatives: adding it
    afterwards, as :func:`derivatives_at` must, traces to 6-7% more operations)."""
    nb, parent = tree.nb, tree.parent
    rotations, translations = body_placements(tree, q_hinge)
    hinge_map, velocity, acceleration = [None] * nb, [np.zeros(6)] * nb, [root_acceleration] * nb
    force, inertia, term = [None] * nb, [None] * nb, [None] * nb
    turning = [None] * nb           # E of the file comment's wrenches, per body (6 x 3)
    for body in range(1, nb):
        up = parent[body]
        s = hinge_map[body] = motion_to_root(rotations[body], translations[body],
                                             tree.hinge_map[body])
        joint_velocity = s * qd_hinge[body]
        v = velocity[body] = velocity[up] + joint_velocity
        a = acceleration[body] = acceleration[up] + motion_cross(v, joint_velocity)
        if qdd_hinge is not None:
            a = acceleration[body] = a + s * qdd_hinge[body]
        inertia[body] = Inertia.in_root(tree.body_inertia[body], rotations[body],
                                        translations[body])
        force[body] = inertia[body].apply(a) + force_cross(v, inertia[body].apply(v))
        term[body] = _VelocityTerm.of_body(inertia[body], v)
    for frame, wrench in wrenches:
        if frame.body == 0:
            continue                        # on the root: it moves nothing
        point = rotations[frame.body] @ frame.translation + translations[frame.body]
        f, t = wrench[:3], wrench[3:]
        force[frame.body] = force[frame.body] - np.concatenate((f, t + cross(point, f)))
        f_skew = skew(f)
        e = np.vstack((f_skew, skew(t) + skew(point) @ f_skew))
        turning[frame.body] = e if turning[frame.body] is None else turning[frame.body] + e
    return dict(hinge_map=hinge_map, velocity=velocity, acceleration=acceleration,
                force=force, inertia=inertia, term=term, turning=turning)


def _pair_derivatives(tree, terms):
    """The sums over each subtree of ``terms`` (in place), then the pair formulas of the
    file comment."""
    nb, parent = tree.nb, tree.parent
    hinge_map, velocity, acceleration = terms["hinge_map"], terms["velocity"], terms["acceleration"]
    force, inertia, term, turning = terms["force"], terms["inertia"], terms["term"], terms["turning"]
    for body in range(nb - 1, 1, -1):       # sums over each subtree
        up = parent[body]
        if up > 0:
            force[up] = force[up] + force[body]
            inertia[up] = inertia[up] + inertia[body]
            term[up] = term[up] + term[body]
            if turning[body] is not None:
                turning[up] = (turning[body] if turning[up] is None
                               else turning[up] + turning[body])
    turned, carried, pushed, spun, inertia_s, term_s, turning_s = ([None] * nb for _ in range(7))
    for body in range(1, nb):
        s, up = hinge_map[body], parent[body]
        w = turned[body] = motion_cross(s, velocity[up])
        u = carried[body] = motion_cross(s, acceleration[up]) - motion_cross(w, velocity[up])
        pushed[body] = (force_cross(s, force[body]) - inertia[body].apply(u)
                        - term[body].apply(w))
        spun[body] = term[body].apply(s) - 2.0 * inertia[body].apply(w)
        inertia_s[body] = inertia[body].apply(s)
        term_s[body] = term[body].transpose_apply(s)
        if turning[body] is not None:
            pushed[body] = pushed[body] - turning[body] @ s[3:]
            turning_s[body] = turning[body].T @ s
    dtype = dtype_of(*hinge_map[1:], *velocity, *acceleration, tree.body_inertia)
    dtau_dq, dtau_dqd = np.zeros((nb, nb), dtype=dtype), np.zeros((nb, nb), dtype=dtype)
    for body in range(1, nb):
        hinge = body
        while hinge > 0:        # hinge: body and its ancestors
            dtau_dq[body, hinge] = -(inertia_s[body] @ carried[hinge]
                                     + term_s[body] @ turned[hinge])
            if turning_s[body] is not None:
                dtau_dq[body, hinge] = dtau_dq[body, hinge] - turning_s[body] @ hinge_map[hinge][3:]
            dtau_dqd[body, hinge] = (term_s[body] @ hinge_map[hinge]
                                     - 2.0 * (inertia_s[body] @ turned[hinge]))
            if hinge != body:
                dtau_dq[hinge, body] = hinge_map[hinge] @ pushed[body]
                dtau_dqd[hinge, body] = hinge_map[hinge] @ spun[body]
            hinge = parent[hinge]
    return dtau_dq, dtau_dqd


def mass_matrix(tree, q_hinge):
    """M (nb x nb) in root axes, ``M_ij = S_j . Ic_i S_i`` for j an ancestor of i: the
    composite inertias of :func:`inverse_dynamics_derivatives`, summed in the same order
    (traced beside it, the kernel generator shares their arithmetic)."""
    nb, parent = tree.nb, tree.parent
    rotations, translations = body_placements(tree, q_hinge)
    hinge_map, inertia = [None] * nb, [None] * nb
    for body in range(1, nb):
        hinge_map[body] = motion_to_root(rotations[body], translations[body],
                                         tree.hinge_map[body])
        inertia[body] = Inertia.in_root(tree.body_inertia[body], rotations[body],
                                        translations[body])
    for body in range(nb - 1, 1, -1):
        if parent[body] > 0:
            inertia[parent[body]] = inertia[parent[body]] + inertia[body]
    mass = np.zeros((nb, nb), dtype=dtype_of(q_hinge, tree.body_inertia))
    for body in range(1, nb):
        inertia_s = inertia[body].apply(hinge_map[body])
        hinge = body
        while hinge > 0:
            mass[body, hinge] = mass[hinge, body] = hinge_map[hinge] @ inertia_s
            hinge = parent[hinge]
    return mass


def gravity_derivatives(tree, q_hinge, root_acceleration):
    """``d g / dq_hinge``, nb x nb, symmetric: at rest ``a = -g`` on every body leaves of
    each subtree its mass M_i and first moment h_i, and both formulas above reduce to
    ``-P_i . (g x omega_j)`` for j an ancestor of i or i itself, with
    ``P_i = M_i v_i + omega_i x h_i`` the linear part of ``Ic_i S_i``."""
    nb, parent = tree.nb, tree.parent
    gravity = -root_acceleration[:3]
    rotations, translations = body_placements(tree, q_hinge)
    hinge_map, mass, moment = [None] * nb, [None] * nb, [None] * nb
    for body in range(1, nb):
        rotation, translation = rotations[body], translations[body]
        inertia = tree.body_inertia[body]
        hinge_map[body] = motion_to_root(rotation, translation, tree.hinge_map[body])
        mass[body] = inertia[0, 0]
        moment[body] = rotation @ first_moment(inertia) + mass[body] * translation
    for body in range(nb - 1, 1, -1):
        up = parent[body]
        if up > 0:
            mass[up] = mass[up] + mass[body]
            moment[up] = moment[up] + moment[body]
    linear = [None] + [mass[b] * hinge_map[b][:3] + cross(hinge_map[b][3:], moment[b])
                       for b in range(1, nb)]
    turned = [None] + [cross(gravity, hinge_map[b][3:]) for b in range(1, nb)]
    dtype = dtype_of(q_hinge, tree.body_inertia)
    dg_dq = np.zeros((nb, nb), dtype=dtype)
    for body in range(1, nb):
        hinge = body
        while hinge > 0:
            dg_dq[body, hinge] = dg_dq[hinge, body] = -(linear[body] @ turned[hinge])
            hinge = parent[hinge]
    return dg_dq
