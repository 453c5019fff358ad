"""Generate straight-line C kernels for one robot by tracing the reference recursions.

Every kernel is produced by calling the *same* functions the numpy reference
path calls (:mod:`soa_dynamics_ros.algorithms`) on a copy of the robot's
:class:`~soa_dynamics_ros.multibody.tree.BodyTree` whose inertias are symbolic inputs,
with symbolic joint coordinates (see :mod:`.symbolic`).  The physics lives in
one place; this module only decides what is an input and what is an output,
then prints the recorded arithmetic as C: one extension module per kernel
(per robot, and per frame for the task-space kernels), built by :mod:`.build`,
so a first answer waits only for the kernel it needs and
:meth:`~soa_dynamics_ros.kernels.Kernels.prepare` compiles them in parallel.

Calling convention of every kernel, as Python sees it::

    result = kernel(q, [qd, [qdd | tau,]] p)

* ``q``, ``qd``, ``qdd``, ``tau``: generalized (independent-joint) float64
  C-contiguous vectors; the mimic map ``q_hinge = G q + o`` and
  ``tau = G^T tau_hinge`` are folded in.
* ``p``: the packed model parameters, ``[g (3), singular threshold, then per
  moving body its ten inertia parameters]`` (see :func:`pack_parameters` and
  :func:`~soa_dynamics_ros.multibody.spatial.inertia_to_parameters`).
  Inertias (so payloads) and gravity are inputs, never folded in: changing
  them needs no new code.
* ``result``: a new array (``(dof,)``, ``(dof, dof)``, ``(6, dof)`` or
  ``(6, 6)``), or an int status: 1 an input is not a float64 C-contiguous
  array of the right length, or holds NaN/inf (checked before any
  arithmetic), 2 a singular hinge (massless body, the reference raises), 3
  ill-conditioned task-space compliance (the caller falls back to the
  reference path).  See ``runtime.h``.

The wrenched kernels of inverse and forward dynamics are generated per set of
links (up to :data:`MAX_WRENCHED_LINKS`) and take the caller's dict before ``p``:
``kernel(q, qd, qdd | tau, {link: wrench}, p)``, each wrench a float64 vector
``[f; t]`` in root axes about its link origin; a dict with other links, or
values that are not such vectors, is status 1 (the generic module takes it).

Batch kernels take ``(N, dof)`` arrays and answer ``(N, width)``, one sample's
answer per row (``width``: dof, or ``parts * dof * dof`` for the derivatives,
which the caller reshapes to ``(N, parts, dof, dof)``), or the index of the
first failing sample times 4 plus its status.  Most compute ``SOA_LANES``
consecutive samples per instruction (``runtime.h``: GCC vector types) through
a copy of the single-sample code printed over vectors, and the rows left over
one by one; large batches are split over the CPUs (:func:`samples_per_thread`).
"""
import hashlib

import numpy as np

from ..algorithms import aligned_frames, articulated_body, root_axes_derivatives
from ..algorithms.external_forces import (applied_wrench, forces_on_bodies,
                                          gravity_root_acceleration)
from ..algorithms.inverse_dynamics import inverse_dynamics
from ..algorithms.kinematics import body_placements, frame_placement, hinge_jacobian
from ..algorithms.mass_matrix import mass_matrix
from ..algorithms.momentum import coriolis_transpose_product
from ..algorithms.task_space import DEFAULT_RCOND, compliance_gather, frame_wrench_map
from ..errors import SingularDynamicsError
from ..multibody.spatial import (INERTIA_PARAMETER_COUNT as PARAMS_PER_BODY, homogeneous,
                                 inertia_to_parameters, parameters_to_inertia)
from ..validation import MAX_MAGNITUDE
from . import symbolic
from .symbolic import ADD, COS, DIV, INPUT, MUL, NEG, SIN, SUB, Sym, Trace

GENERATOR_VERSION = "3"
HEADER = 4          # gravity (3), singular threshold
# The task-space kernels decline (status 3) a compliance whose 1-norm condition
# number reaches this: its 2-norm condition (at most 6 times larger for 6x6)
# may then be near the reference's rank threshold 1 / DEFAULT_RCOND, which the
# reference path decides on.
CONDITION_LIMIT = 1.0 / (10.0 * DEFAULT_RCOND)


def pack_parameters(tree, gravity, out=None):
    """The ``p`` array of the kernels from the tree's current inertias and gravity."""
    p = np.empty(HEADER + PARAMS_PER_BODY * (tree.nb - 1)) if out is None else out
    p[:3] = gravity
    p[3] = tree.singular_inertia_threshold()
    p[HEADER:].reshape(tree.nb - 1, PARAMS_PER_BODY)[:] = inertia_to_parameters(
        tree.body_inertia[1:])
    return p


def structure_key(tree):
    """Hash of everything the generated code depends on (not inertias or gravity)."""
    digest = hashlib.sha256(f"soa-kernels-{GENERATOR_VERSION}".encode())

    def add(value):
        digest.update(np.ascontiguousarray(value, dtype=float).tobytes())
        digest.update(b"|")

    add(tree.parent)
    digest.update(" ".join(model.name for model in tree.joint_model[1:]).encode())
    add(tree.hinge_map)
    for body in range(1, tree.nb):
        add(tree.hinge_axis[body])
        add(tree.hinge_rotation[body])
        add(tree.hinge_translation[body])
    coordinates = tree.coordinates
    add(coordinates.master)
    add(coordinates.multiplier)
    add(coordinates.offset)
    return digest.hexdigest()[:20]


def frame_key(tree, frames):
    """Hash of the structure and of one frame's placement (a frame name), or of several
    links' names and placements (a tuple: the wrenched kernels read wrenches by name)."""
    digest = hashlib.sha256(structure_key(tree).encode())
    for name in (frames,) if isinstance(frames, str) else frames:
        frame = tree.frames[name]
        if not isinstance(frames, str):
            digest.update(name.encode() + b"|")
        digest.update(str(frame.body).encode())
        digest.update(np.ascontiguousarray(frame.rotation).tobytes())
        digest.update(np.ascontiguousarray(frame.translation).tobytes())
    return digest.hexdigest()[:20]


# ---------------------------------------------------------------------------- tracing
class _Tracing:
    """Symbolic inputs and a view of the tree with symbolic inertias for one kernel."""

    def __init__(self, tree, arrays):
        self.tree = tree
        self.coordinates = tree.coordinates
        self.trace = Trace()
        self.inputs = {}
        for name, size in arrays:
            self.inputs[name] = self.trace.inputs_array(name, size)
        if "p" in self.inputs:
            p = self.inputs["p"]
            inertia = np.zeros((tree.nb, 6, 6), dtype=object)
            inertia[...] = 0.0
            for body in range(1, tree.nb):
                start = HEADER + PARAMS_PER_BODY * (body - 1)
                inertia[body] = parameters_to_inertia(p[start:start + PARAMS_PER_BODY])
            self.symbolic_tree = tree.with_inertia(inertia, singular_threshold=p[3])

    def root_acceleration(self):
        return gravity_root_acceleration(self.inputs["p"][:3])


def _zeros(tree):
    return np.zeros(tree.dof, dtype=object) + 0.0


def _wrench_arrays(links):
    """The input of a wrenched kernel: 6 values per link (root axes, about its origin)."""
    return [("w", 6 * len(links))] if links else []


def _traced_link_wrenches(t, links):
    """``[(frame, wrench)]``: each link's frame and its 6 symbolic values of ``w``."""
    w = t.inputs.get("w")
    return [(t.tree.frames[link], w[6 * k:6 * k + 6]) for k, link in enumerate(links)]


def _traced_body_forces(t, q_hinge, links):
    """Body-frame wrenches of the symbolic link wrenches ``w``, or None without links."""
    if not links:
        return None
    placements = body_placements(t.tree, q_hinge)
    return forces_on_bodies(t.tree, [applied_wrench(t.tree, placements, frame, wrench)
                                     for frame, wrench in _traced_link_wrenches(t, links)])


def trace_inverse_dynamics(tree, with_qd=True, with_qdd=True, links=()):
    """Torques of the joints; ``links``: wrenches on these links are an input too."""
    arrays = [("q", tree.dof)] + ([("qd", tree.dof)] if with_qd else []) + (
        [("qdd", tree.dof)] if with_qdd else []) + _wrench_arrays(links) + [
        ("p", _param_count(tree))]
    t = _Tracing(tree, arrays)
    c = t.coordinates
    qd = t.inputs["qd"] if with_qd else _zeros(tree)
    qdd = t.inputs["qdd"] if with_qdd else _zeros(tree)
    q_hinge = c.hinge_positions(t.inputs["q"])
    torque = inverse_dynamics(t.symbolic_tree, q_hinge, c.hinge_rates(qd), c.hinge_rates(qdd),
                              t.root_acceleration(), _traced_body_forces(t, q_hinge, links))
    return t, arrays, c.joint_forces(torque)


def trace_coriolis_transpose_product(tree):
    arrays = [("q", tree.dof), ("qd", tree.dof), ("p", _param_count(tree))]
    t = _Tracing(tree, arrays)
    product = coriolis_transpose_product(t.symbolic_tree,
                                         t.coordinates.hinge_positions(t.inputs["q"]),
                                         t.coordinates.hinge_rates(t.inputs["qd"]))
    return t, arrays, t.coordinates.joint_forces(product)


# Frames with root axes take more loads and stores per operation than body frames:
# on G1 (43 joints) M in aligned frames traced 7% fewer operations and ran alike;
# on iCub 28% fewer and ran 17% faster (2026-11-27, same machine).  Example-robot-data
# robots the bench does not list (2026-11-28; traced share, callgrind instructions a
# call body -> aligned, time): Alex with Psyonic hands 0.86, 22.2k -> 19.6k, 15% faster;
# Centauro 0.86, 16.2k -> 14.8k, between 3% slower and 15% faster over four processes;
# SO-101 0.89, 2.66k -> 2.44k but 5% slower; the Puma 0.96, 25% slower.
ALIGNED_FRAMES_MASS_MATRIX_SHARE = 0.87


def trace_mass_matrix(tree):
    """``(t, arrays, M)``: M(q) by the composite-body recursion in body frames, or in
    frames at each body's origin with root axes
    (:mod:`~soa_dynamics_ros.algorithms.aligned_frames`) where that traces to at most
    :data:`ALIGNED_FRAMES_MASS_MATRIX_SHARE` of the operations: body frames on the arms
    (1,015 against 1,331 operations on the Panda), aligned frames on a 32-joint tree
    with random axes (13,200 against 25,400), whose constant joint placements do not
    fold away, and on iCub (8,000 against 11,100)."""
    (body_frames, *body), (aligned, *other) = mass_matrix_traces(tree)
    return tuple(other if aligned <= ALIGNED_FRAMES_MASS_MATRIX_SHARE * body_frames else body)


def mass_matrix_traces(tree):
    """``[(operations, t, arrays, M)]``: M traced in body frames, then in aligned frames."""
    traced = []
    for recursion in (mass_matrix, aligned_frames.mass_matrix):
        arrays = [("q", tree.dof), ("p", _param_count(tree))]
        t = _Tracing(tree, arrays)
        mass = t.coordinates.joint_mass_matrix(
            recursion(t.symbolic_tree, t.coordinates.hinge_positions(t.inputs["q"])))
        traced.append((_operations(t.trace, _matrix_outputs(mass)), t, arrays, mass))
    return traced


def trace_forward_dynamics(tree, links=()):
    """``(t, arrays, answer, method)``: forward dynamics; ``links``: wrenches on these
    links are an input too.  Robots with mimic joints get (M, h) as the answer, for the
    kernel to solve.  Others get qdd by whichever of :func:`forward_dynamics_traces`
    traces to the fewest operations: on the Panda M, h and M's LTDL in body frames
    (2,300 against 2,400 by the articulated-body recursion, 0.22 against 0.25 us a
    kernel call, 2026-11-27), on a 32-joint tree with random axes the same in aligned
    frames (22,100 against 29,900)."""
    arrays = _forward_dynamics_arrays(tree, links)
    if tree.coordinates.couples_hinges:
        t = _Tracing(tree, arrays)
        q_hinge = t.coordinates.hinge_positions(t.inputs["q"])
        forces = _traced_body_forces(t, q_hinge, links)
        mass = t.coordinates.joint_mass_matrix(mass_matrix(t.symbolic_tree, q_hinge))
        bias = _joint_bias(t, q_hinge, t.coordinates.hinge_rates(t.inputs["qd"]), forces)
        return t, arrays, (mass, t.inputs["tau"] - bias), "M and h"
    _, t, qdd, method = min(forward_dynamics_traces(tree, links), key=lambda way: way[0])
    return t, arrays, qdd, method


def _forward_dynamics_arrays(tree, links):
    return [("q", tree.dof), ("qd", tree.dof), ("tau", tree.dof)] + _wrench_arrays(links) + [
        ("p", _param_count(tree))]


ARTICULATED, BODY_FRAMES_SOLVE, ALIGNED_FRAMES_SOLVE = (
    "articulated-body recursion", "M, h and M's LTDL in body frames",
    "M, h and M's LTDL in aligned frames")


def forward_dynamics_traces(tree, links=()):
    """``[(operations, t, qdd, method)]``: each way :func:`trace_forward_dynamics` chooses
    from on a robot without mimic joints.  The articulated-body recursion always; M, h
    and M's LTDL where its pivots are the recursion's hinge inertias
    (:func:`_pivots_are_articulated`), so that both guard alike; in aligned frames only
    where :func:`_aligned_solve_is_precise`."""
    arrays = _forward_dynamics_arrays(tree, links)
    ways = [ARTICULATED]
    if _pivots_are_articulated(tree):
        ways.append(BODY_FRAMES_SOLVE)
        if _aligned_solve_is_precise(tree):
            ways.append(ALIGNED_FRAMES_SOLVE)
    return [_traced_forward_dynamics(tree, arrays, links, way) for way in ways]


def _traced_forward_dynamics(tree, arrays, links, way):
    """``(operations, t, qdd, way)``: qdd by one of :func:`forward_dynamics_traces`."""
    t = _Tracing(tree, arrays)
    c = t.coordinates
    q_hinge, qd_hinge = c.hinge_positions(t.inputs["q"]), c.hinge_rates(t.inputs["qd"])
    if way == ARTICULATED:
        bodies = articulated_body.gather(t.symbolic_tree, q_hinge, qd_hinge,
                                         c.hinge_rates(t.inputs["tau"]),
                                         _traced_body_forces(t, q_hinge, links))
        qdd, _ = articulated_body.scatter(t.symbolic_tree, bodies, t.root_acceleration())
        qdd = c.joint_forces(qdd)
    else:
        if way == BODY_FRAMES_SOLVE:
            mass = mass_matrix(t.symbolic_tree, q_hinge)
            bias = _joint_bias(t, q_hinge, qd_hinge, _traced_body_forces(t, q_hinge, links))
        else:
            mass = aligned_frames.mass_matrix(t.symbolic_tree, q_hinge)
            bias = c.joint_forces(aligned_frames.inverse_dynamics(
                t.symbolic_tree, q_hinge, qd_hinge, None, t.root_acceleration(),
                _traced_link_wrenches(t, links)))
        qdd = _traced_solve(c.joint_mass_matrix(mass), t.inputs["tau"] - bias,
                            t.symbolic_tree.singular_inertia_threshold())
    return _operations(t.trace, _vector_outputs(qdd)), t, qdd, way


# A solve multiplies the error of M by its condition number, and M in root axes
# carries more: on iCub (condition 1e5 to 6e8) qdd by aligned frames was 1e-12 to
# 4e-11 off Pinocchio's, by body frames 5e-14 to 8e-13; on the random tree
# (condition up to 1e4) 9e-15 off the recursion's (2026-11-27).
ALIGNED_SOLVE_AGREEMENT = 1e-13


def _aligned_solve_is_precise(tree, samples=8):
    """Whether qdd by M, h and M's LTDL in aligned frames agrees with the
    articulated-body recursion's to :data:`ALIGNED_SOLVE_AGREEMENT` (relative to
    max(1, |qdd|)) at ``samples`` random states of this robot, evaluated in floats."""
    c, rng = tree.coordinates, np.random.default_rng(0)
    root_acceleration = gravity_root_acceleration(np.array([0.0, 0.0, -9.81]))
    for _ in range(samples):
        q, qd, tau = (rng.uniform(-np.pi, np.pi, tree.dof), rng.normal(size=tree.dof),
                      rng.normal(size=tree.dof))
        q_hinge, qd_hinge = c.hinge_positions(q), c.hinge_rates(qd)
        try:
            bodies = articulated_body.gather(tree, q_hinge, qd_hinge, c.hinge_rates(tau))
            expected = c.joint_forces(
                articulated_body.scatter(tree, bodies, root_acceleration)[0])
            bias = c.joint_forces(aligned_frames.inverse_dynamics(
                tree, q_hinge, qd_hinge, None, root_acceleration))
            qdd = _traced_solve(c.joint_mass_matrix(aligned_frames.mass_matrix(tree, q_hinge)),
                                tau - bias, tree.singular_inertia_threshold())
        except SingularDynamicsError:
            return False
        if np.max(np.abs(qdd - expected), initial=0.0) > ALIGNED_SOLVE_AGREEMENT * np.max(
                np.abs(expected), initial=1.0):
            return False
    return True


def _joint_bias(t, q_hinge, qd_hinge, forces=None):
    """h(q, qd) of the joints, ``G^T ID(q, qd, 0)`` (less the joint torques of the body
    ``forces``): what a mimic robot's forward dynamics solves ``M qdd = tau - h`` with."""
    return t.coordinates.joint_forces(inverse_dynamics(
        t.symbolic_tree, q_hinge, qd_hinge, np.zeros(t.tree.nb, dtype=object) + 0.0,
        t.root_acceleration(), forces))


def trace_inverse_dynamics_derivatives(tree, links=()):
    """``(dtau/dq, dtau/dqd)`` of the joints, by the root-axes closed form; ``links``:
    wrenches on these links are an input too."""
    arrays = [("q", tree.dof), ("qd", tree.dof), ("qdd", tree.dof)] + _wrench_arrays(links) + [
        ("p", _param_count(tree))]
    t = _Tracing(tree, arrays)
    c = t.coordinates
    hinge_matrices = root_axes_derivatives.inverse_dynamics_derivatives(
        t.symbolic_tree, c.hinge_positions(t.inputs["q"]), c.hinge_rates(t.inputs["qd"]),
        c.hinge_rates(t.inputs["qdd"]), t.root_acceleration(), _traced_link_wrenches(t, links))
    return t, arrays, [c.joint_mass_matrix(matrix) for matrix in hinge_matrices]


def _pivots_are_articulated(tree):
    """Whether the LTDL of M (:func:`_traced_solve`) has the articulated-body recursion's
    hinge inertias as its pivots: no mimic joints, every joint moving its hinge unscaled,
    and the joints in an order whose factor keeps the tree's sparsity (RBDA 6.5)."""
    c = tree.coordinates
    moving = c.master[1:] >= 0
    return (not c.couples_hinges and np.all(c.multiplier[1:][moving] == 1.0)
            and folded_tree_parents(tree) is not None)


def trace_forward_dynamics_derivatives(tree):
    """``(dtau/dq, dtau/dqd)`` of the joints at ``qdd = FD(q, qd, tau)`` and M, by the
    root-axes closed form: the kernel then solves with M.  qdd from M, which the kernel
    needs anyway, and h by :func:`_traced_solve`: 16-21% fewer operations than the
    articulated-body recursion on the Panda, UR5, iiwa 14 and Puma (2026-11-27); h from
    the closed form's own pass at qdd = 0, then what qdd adds (9-11% fewer than a
    separate inverse dynamics pass for h).  Its
    pivots guard as the recursion's hinge inertias do (the singular threshold, status 2)
    where they are those (:func:`_pivots_are_articulated`), else > 0 as the reference's
    forward dynamics of mimic robots, which solves with M; a joint order that would fill
    M's factor in keeps the recursion."""
    arrays = [("q", tree.dof), ("qd", tree.dof), ("tau", tree.dof), ("p", _param_count(tree))]
    t = _Tracing(tree, arrays)
    c = t.coordinates
    q_hinge, qd_hinge = c.hinge_positions(t.inputs["q"]), c.hinge_rates(t.inputs["qd"])
    mass = c.joint_mass_matrix(root_axes_derivatives.mass_matrix(t.symbolic_tree, q_hinge))
    bias, terms = root_axes_derivatives.terms_without_acceleration(
        t.symbolic_tree, q_hinge, qd_hinge, t.root_acceleration())
    articulated = _pivots_are_articulated(tree)
    if c.couples_hinges or articulated:
        qdd = _traced_solve(mass, t.inputs["tau"] - c.joint_forces(bias),
                            t.symbolic_tree.singular_inertia_threshold() if articulated else 0.0)
    else:
        bodies = articulated_body.gather(t.symbolic_tree, q_hinge, qd_hinge,
                                         c.hinge_rates(t.inputs["tau"]))
        qdd_hinge, _ = articulated_body.scatter(t.symbolic_tree, bodies, t.root_acceleration())
        qdd = c.joint_forces(qdd_hinge)
    hinge_matrices = root_axes_derivatives.derivatives_at(t.symbolic_tree, terms,
                                                          c.hinge_rates(qdd))
    return t, arrays, [c.joint_mass_matrix(matrix) for matrix in hinge_matrices] + [mass]


def _traced_solve(mass, rhs, singular_below=0.0):
    """``M^-1 rhs`` for a symmetric positive definite (n, n) ``mass`` of traced values:
    the LTDL factorization (RBDA 6.5: M = L^T D L, eliminating from the last joint, so
    that a tree's sparsity in parent-first order fills nothing in; its zeros fold away in
    the trace), then the two substitutions.  Each pivot is guarded > ``singular_below``
    (else the kernel's status 2, as soa_cholesky_factor's where M is not positive
    definite, or the articulated-body recursion's at its threshold)."""
    n = len(rhs)
    h = [[mass[i, j] for j in range(i + 1)] for i in range(n)]     # the lower triangle
    for k in range(n - 1, -1, -1):
        if not h[k][k] > singular_below:       # (a traced pivot records its guard and passes)
            raise SingularDynamicsError(f"pivot {k} of the mass matrix is {h[k][k]}")
        for i in range(k - 1, -1, -1):     # (row k's entries left of i still M's)
            factor = h[k][i] / h[k][k]
            for j in range(i + 1):
                h[i][j] = h[i][j] - factor * h[k][j]
            h[k][i] = factor
    x = list(rhs)
    for k in range(n - 1, -1, -1):          # L^T z = rhs
        for i in range(k):
            x[i] = x[i] - h[k][i] * x[k]
    x = [x[k] / h[k][k] for k in range(n)]  # D w = z
    for i in range(n):                      # L qdd = w
        for j in range(i):
            x[i] = x[i] - h[i][j] * x[j]
    return np.array(x, dtype=object)


def trace_gravity_derivatives(tree):
    """``dg/dq`` of the joints, by the root-axes closed form."""
    arrays = [("q", tree.dof), ("p", _param_count(tree))]
    t = _Tracing(tree, arrays)
    c = t.coordinates
    return t, arrays, c.joint_mass_matrix(root_axes_derivatives.gravity_derivatives(
        t.symbolic_tree, c.hinge_positions(t.inputs["q"]), t.root_acceleration()))


def trace_jacobian(tree, frame_name):
    arrays = [("q", tree.dof)]
    t = _Tracing(tree, arrays)
    placements = body_placements(tree, t.coordinates.hinge_positions(t.inputs["q"]))
    jacobian = hinge_jacobian(tree, placements, tree.frames[frame_name])
    return t, arrays, t.coordinates.joint_columns(jacobian)


def trace_frame_pose(tree, frame_name):
    arrays = [("q", tree.dof)]
    t = _Tracing(tree, arrays)
    placements = body_placements(tree, t.coordinates.hinge_positions(t.inputs["q"]))
    return t, arrays, homogeneous(*frame_placement(tree, placements, tree.frames[frame_name]))


def trace_task_space_compliance(tree, frame_name):
    """Lambda^-1 = J M^-1 J^T of one frame (6x6) by the articulated-body recursion."""
    arrays = [("q", tree.dof), ("p", _param_count(tree))]
    t = _Tracing(tree, arrays)
    frame = tree.frames[frame_name]
    q_hinge = t.coordinates.hinge_positions(t.inputs["q"])
    zeros = np.zeros(tree.nb, dtype=object) + 0.0
    bodies = articulated_body.gather(t.symbolic_tree, q_hinge, zeros, zeros)
    rotations, _ = body_placements(tree, q_hinge)
    columns = np.zeros((tree.nb, 6, 6), dtype=object) + 0.0
    columns[frame.body] += frame_wrench_map(rotations[frame.body], frame.translation) @ np.eye(6)
    compliance, _ = compliance_gather(t.symbolic_tree, bodies, columns)
    return t, arrays, 0.5 * (compliance + compliance.T)


def _param_count(tree):
    return HEADER + PARAMS_PER_BODY * (tree.nb - 1)


# A thread of a batch should do at least this many traced operations: starting and
# joining one costs 26-55 us here (pthread_create + pthread_join, 2026-11-25), and an
# operation of straight-line code 0.1 ns (lanes: the Panda's inverse dynamics derivatives,
# 5,592 operations, 0.52 us a sample) to 0.2 ns (one sample at a time), so such a share
# takes 150-300 us: at least 3 times what its thread costs.
OPERATIONS_PER_THREAD = 1_500_000


def samples_per_thread(operations):
    """The fewest samples of a batch worth a thread of their own (runtime.h soa_workers)
    for a core of ``operations`` traced operations: OPERATIONS_PER_THREAD worth, within
    [32, 512].

    One rule for every batch kernel.  Arms' dynamics (300-2,800 operations) get the 512
    that runtime.h once fixed for all batches, as before; their derivatives
    (4,000-8,600 operations, 0.5-2 us a sample) 170-360, so a planner's batch of a few
    hundred samples already uses two cores.  The bounds: below 32 samples a share is a
    few blocks of lanes; above 512 (the smallest robots) a split would wait for batches
    larger than their trajectories.
    """
    return int(min(max(OPERATIONS_PER_THREAD // max(operations, 1), 32), 512))


# ---------------------------------------------------------------------------- printing
_BINARY = {ADD: "+", SUB: "-", MUL: "*", DIV: "/"}


def _constant(value):
    """A float as a C literal (negative ones parenthesized so "a - -1.0" never occurs)."""
    value = float(value)
    if not np.isfinite(value):
        return "NAN" if np.isnan(value) else ("INFINITY" if value > 0 else "(-INFINITY)")
    text = repr(value)
    return f"({text})" if value < 0 else text


def _comment(text):
    """``text`` safe inside a C comment (link names come from the URDF)."""
    return text.replace("*/", "* /")


def _string(text):
    """``text`` as a C string literal (octal escapes: they never swallow the next character)."""
    safe = set(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 _-+.,:;()^=/<>")
    return '"' + "".join(chr(b) if b in safe else f"\\{b:03o}" for b in text.encode()) + '"'


def _operand(x):
    return f"t{x}" if isinstance(x, int) else _constant(x)


def _live(trace, outputs):
    """Which nodes of ``trace`` the ``outputs`` (as for :func:`_body`) and the guards read."""
    live = np.zeros(len(trace.ops), dtype=bool)
    stack = [v.i for _, v in outputs if isinstance(v, Sym)]
    stack += [i for guard in trace.guards for i in guard if isinstance(i, int)]
    while stack:
        i = stack.pop()
        if live[i]:
            continue
        live[i] = True
        op, a, b = trace.ops[i]
        if op != INPUT:
            stack += [x for x in (a, b) if isinstance(x, int)]
    return live


def _operations(trace, outputs):
    """The operations (inputs read included) of the C :func:`_body` would print."""
    return int(_live(trace, outputs).sum())


def _body(trace, outputs, indent="    ", strides=None):
    """C statements computing every live node, then ``outputs``: a list of ((array,
    index), value).

    Every node is a ``const double`` of its own; guards (``value > threshold``
    must hold, else status 2) follow the last node they read.  An input is read
    just before its first use and an output stored as soon as it is known (after
    the last guard), so neither stays live across the kernel: on iCub's M that
    took a sixth of the moves to and from memory and 8-12% of the time.  ``strides``
    (``{array: C expression}``, every output array's): the same arithmetic on
    ``SOA_LANES`` consecutive samples at once (see ``runtime.h``): nodes that
    read a sample are ``soa_vd`` vectors, nodes of the parameters alone stay
    ``double`` (computed once per block), inputs are gathered from the samples'
    rows and outputs scattered to theirs, lane l's ``stride * l`` doubles after
    lane 0's.
    """
    lanes = strides is not None
    ops = trace.ops
    live = _live(trace, outputs)
    guards_after = {}
    for value, threshold in trace.guards:
        last = max(x for x in (value, threshold) if isinstance(x, int))
        guards_after.setdefault(last, []).append((value, threshold))
    # A failing guard leaves ``out`` untouched only if no output is stored before it.
    stores_from = max(guards_after, default=-1)
    stores_after = {}
    for (array, index), value in outputs:
        if isinstance(value, Sym):
            stores_after.setdefault(max(value.i, stores_from), []).append((array, index, value.i))
    per_sample = np.zeros(len(ops), dtype=bool)     # with lanes: a soa_vd, not a double
    # with lanes, the live sin and cos of one angle: both come from one soa_vsincos
    angles = {}
    for i, (op, a, _) in enumerate(ops):
        if lanes and live[i] and op in (SIN, COS):
            angles.setdefault(a, {})[op] = i
    lines, counts = [], {}
    emitted = np.zeros(len(ops), dtype=bool)

    def declare(i, text):
        lines.append(f"{indent}const {'soa_vd' if per_sample[i] else 'double'} t{i} = {text};")

    def read_inputs(operands):
        for x in operands:
            if isinstance(x, int) and ops[x][0] == INPUT and not emitted[x]:
                _, name, index = ops[x]
                per_sample[x] = lanes and name != "p"
                declare(x, f"SOA_GATHER({name}, {index})" if per_sample[x] else f"{name}[{index}]")
                counts[INPUT] = counts.get(INPUT, 0) + 1
                emitted[x] = True
                after(x)

    def store(array, index, value):
        if lanes:
            lines.append(f"{indent}soa_scatter(&{array}[{index}], {strides[array]}, "
                         f"{_lanes(value, per_sample)});")
        else:
            lines.append(f"{indent}{array}[{index}] = {_operand(value)};")

    def after(i):
        """The guards that read node ``i`` last, and the outputs known from it on."""
        for value, threshold in guards_after.get(i, ()):
            read_inputs((value, threshold))
            if any(per_sample[x] for x in (value, threshold) if isinstance(x, int)):
                check = (f"soa_all_greater({_lanes(value, per_sample)}, "
                         f"{_lanes(threshold, per_sample)})")
            else:
                check = f"{_operand(value)} > {_operand(threshold)}"
            lines.append(f"{indent}if (!({check}))")
            lines.append(f"{indent}    return SOA_SINGULAR;")
        for array, index, value in stores_after.pop(i, ()):
            store(array, index, value)

    for i, (op, a, b) in enumerate(ops):
        if not live[i] or op == INPUT:
            continue
        read_inputs((a, b))
        per_sample[i] = any(per_sample[x] for x in (a, b) if isinstance(x, int))
        if op in _BINARY:
            declare(i, f"{_operand(a)} {_BINARY[op]} {_operand(b)}")
        elif op == NEG:
            declare(i, f"-{_operand(a)}")
        elif per_sample[i] and len(angles[a]) == 2:
            pair = angles[a]
            if i == min(pair.values()):     # both are declared at the first
                lines.append(f"{indent}soa_vd t{pair[SIN]}, t{pair[COS]};")
                lines.append(f"{indent}soa_vsincos(t{a}, &t{pair[SIN]}, &t{pair[COS]});")
        elif op in (SIN, COS):
            declare(i, f"soa_v{op}({_operand(a)})" if per_sample[i] else f"{op}({_operand(a)})")
        else:
            raise AssertionError(op)
        counts[op] = counts.get(op, 0) + 1
        emitted[i] = True
        after(i)
    # Outputs that are inputs no node reads, or known only at a guard on an input.
    for key in sorted(stores_after):
        for array, index, value in stores_after[key]:
            read_inputs((value,))
            store(array, index, value)
    for (array, index), value in outputs:
        if not isinstance(value, Sym):
            store(array, index, float(value))
    return lines, counts


def _lanes(x, per_sample):
    """Operand ``x`` as a ``soa_vd`` (a double is broadcast to every lane)."""
    if isinstance(x, int) and per_sample[x]:
        return _operand(x)
    return f"soa_broadcast({_operand(x)})"


# Doubles of a core's workspace per sample up to which its lanes core keeps a copy per lane
# on the stack: at 8 lanes 256 KB, well within the 8 MB of a glibc thread's default (the
# batch threads', runtime.h soa_in_parallel, and Python's).  The forward dynamics
# derivatives' 4 n^2 (a 7-joint arm: 196; MAX_TRACED_OPERATIONS keeps n small), a mimic
# robot's forward dynamics' n^2 (Talos, 32 joints: 1,024; a 64-joint one would be left
# without lanes).
MAX_LANES_WORKSPACE = 4096


class _Module:
    """The C source of one extension module: kernel cores, their Python wrappers, the init."""

    def __init__(self, module_name, title, key, dof):
        self.module_name = module_name
        self.dof = dof
        self.lines = [f"/* Kernels generated by soa_dynamics_ros.kernels for {_comment(title)}.",
                      f" * Do not edit: regenerated from the model (structure key {key}). */",
                      f"#define SOA_CONDITION_LIMIT {CONDITION_LIMIT!r}",
                      '#include "runtime.h"']
        self.methods = []
        self.stats = {}
        self._lane_sources = {}
        self._links = ()           # the links a wrenched kernel reads wrenches of
        self._widths = {}

    def kernel(self, name, arrays, outputs, trace, doc, shape, workspace=(), solve=None,
               prelude=(), parts=1, links=()):
        """A core computing ``outputs`` from ``arrays`` and its single-sample wrapper.

        ``arrays``: (name, length) of the vector inputs, then ("p", length).
        ``shape``: (rows,) or (rows, cols) of the answer, or of each of ``parts``
        answers (a tuple of arrays then).  ``workspace``: (name, length) of local
        arrays the outputs fill and ``solve`` turns into ``out``: a C call
        returning a status, with ``{name}`` for each of them and ``{out}``, after
        the C lines ``prelude``.
        ``links``: the last vector input ``w`` holds the wrenches on these links,
        which the wrapper reads from a ``{link: wrench}`` dict before ``p``.
        """
        body, counts = _body(trace, outputs)
        stats = self.stats[name] = {label: counts.get(op, 0) for op, label in (
            (MUL, "mul"), (ADD, "add"), (SUB, "sub"), (DIV, "div"), (NEG, "neg"), (SIN, "sin"),
            (COS, "cos"))}
        vectors = [(a, size) for a, size in arrays if a != "p"]
        counted = ", ".join(f"{count} {label}" for label, count in stats.items())
        lines = ["", f"/* {_comment(doc)} ({counted}) */",
                 f"static int {name}_core(const double *const *inputs, const double *restrict p, "
                 "double *restrict out)", "{"]
        lines += [f"    const double *restrict {a} = inputs[{k}];" for k, (a, _) in enumerate(vectors)]
        # Not "<=" holds for NaN too; the bound is validation.MAX_MAGNITUDE.
        lines += [f"    if (soa_check({a}, {size}, {MAX_MAGNITUDE!r}))\n        return SOA_BAD_INPUT;"
                  for a, size in vectors]
        if workspace:
            lines.append(f"    double {', '.join(f'{a}[{size}]' for a, size in workspace)};")
        lines += body + [f"    {line}" for line in prelude]
        if solve:
            lines.append(f"    return {solve.format(out='out', **{a: a for a, _ in workspace})};")
        else:
            lines.append("    return SOA_OK;")
        self.lines += lines + ["}"]
        self._lane_sources[name] = (vectors, outputs, trace, counted, workspace, solve, prelude)
        rows, cols = (shape + (0,))[:2]
        self._widths[name] = parts * rows * (cols or 1)       # doubles per sample
        if links:
            self._links = links
            self._wrapper(name, doc, f"soa_call_wrenched(args, nargs, {len(vectors) - 1}, "
                                     f"{self.dof}, {dict(arrays)['p']}, wrench_keys, "
                                     f"{len(links)}, {parts}, {rows}, {cols}, {name}_core)")
        elif parts > 1:
            self._wrapper(name, doc, f"soa_call_parts(args, nargs, {len(vectors)}, {self.dof}, "
                                     f"{dict(arrays)['p']}, {parts}, {rows}, {cols}, {name}_core)")
        else:
            self._wrapper(name, doc, f"soa_call(args, nargs, {len(vectors)}, {self.dof}, "
                                     f"{dict(arrays)['p']}, {rows}, {cols}, {name}_core)")

    def batch(self, name, single, arrays, vectorized=True):
        """``single`` over the rows of (N, dof) arrays: answers (N, width), each row one
        sample's answer (all its parts, as the single core writes them).

        ``vectorized``: blocks of ``SOA_LANES`` samples go through a vectorized
        copy of the core (``single``_lanes), the remaining rows through the
        core itself.
        """
        vectors = [a for a, _ in arrays if a != "p"]
        lanes = self._lanes_core(single) if vectorized else "NULL"
        width = self._widths[single]
        least = samples_per_thread(sum(self.stats[single].values()))
        self._wrapper(name, f"{single} over the rows of (N, dof) arrays: (N, {width})",
                      f"soa_call_batch(args, nargs, {len(vectors)}, {self.dof}, "
                      f"{dict(arrays)['p']}, {width}, {least}, {single}_core, {lanes})")

    def _lanes_core(self, single):
        """Emit ``single``'s core over SOA_LANES consecutive samples; its name.

        A core with a workspace gets one copy of it per lane, which the traced
        arithmetic fills for the block at once; then ``solve`` runs lane by lane.  Not
        above MAX_LANES_WORKSPACE (then NULL: the batch runs the core sample by sample)."""
        vectors, outputs, trace, counted, workspace, solve, prelude = self._lane_sources[single]
        if sum(size for _, size in workspace) > MAX_LANES_WORKSPACE:
            return "NULL"
        strides = {"out": "SOA_OUT_STRIDE", **{a: size for a, size in workspace}}
        body, _ = _body(trace, outputs, strides=strides)
        lines = ["", f"/* {single} on SOA_LANES consecutive samples ({counted}, per block) */",
                 f"static int {single}_lanes(const double *const *inputs, "
                 "const double *restrict p, double *restrict out)", "{",
                 f"    enum {{ SOA_STRIDE = {self.dof}, "
                 f"SOA_OUT_STRIDE = {self._widths[single]} }};"]
        lines += [f"    const double *restrict {a} = inputs[{k}];"
                  for k, (a, _) in enumerate(vectors)]
        # The samples of a block are consecutive rows: one check covers them.
        lines += [f"    if (soa_check({a}, SOA_LANES * {size}, {MAX_MAGNITUDE!r}))\n"
                  "        return SOA_BAD_INPUT;" for a, size in vectors]
        if workspace:
            lines.append("    double " + ", ".join(f"{a}[SOA_LANES * {size}]"
                                                  for a, size in workspace) + ";")
        lines += body + [f"    {line}" for line in prelude]
        if solve:
            lane = solve.format(out="out + l * SOA_OUT_STRIDE",
                                **{a: f"{a} + l * {size}" for a, size in workspace})
            lines += ["    for (int l = 0; l < SOA_LANES; ++l) {",
                      f"        const int status = {lane};",
                      "        if (status != SOA_OK)",
                      "            return status;",
                      "    }"]
        self.lines += lines + ["    return SOA_OK;", "}"]
        return f"{single}_lanes"

    def _wrapper(self, name, doc, call):
        self.lines += ["", f"static PyObject *{name}(PyObject *self, PyObject *const *args, "
                           "Py_ssize_t nargs)", "{", "    (void)self;", f"    return {call};", "}"]
        self.methods.append((name, doc))

    def source(self):
        table = [f'    {{"{name}", (PyCFunction)(void (*)(void)){name}, METH_FASTCALL, '
                 f'{_string(doc)}}},' for name, doc in self.methods]
        keys = []
        if self._links:       # interned once: the dict lookups then compare pointers
            keys = [f"    static const char *const links[] = "
                    f"{{{', '.join(_string(link) for link in self._links)}}};",
                    f"    for (int k = 0; k < {len(self._links)}; ++k)",
                    "        if (!(wrench_keys[k] = PyUnicode_InternFromString(links[k])))",
                    "            return NULL;"]
        declarations = ([f"static PyObject *wrench_keys[{len(self._links)}];"]
                        if self._links else [])
        return "\n".join(self.lines[:4] + declarations + self.lines[4:] + [
            "", "static PyMethodDef methods[] = {", *table, "    {NULL, NULL, 0, NULL}};", "",
            f'static struct PyModuleDef module = {{PyModuleDef_HEAD_INIT, "{self.module_name}", '
            'NULL, -1, methods};', "",
            f"PyMODINIT_FUNC PyInit_{self.module_name}(void)", "{", "    import_array();",
            *keys, "    return PyModule_Create(&module);", "}", ""])


def _vector_outputs(values, target="out"):
    return [((target, k), symbolic.fold(v)) for k, v in enumerate(values)]


def _matrix_outputs(values, target="out", offset=0):
    rows, cols = values.shape
    return [((target, offset + i * cols + j), symbolic.fold(values[i, j]))
            for i in range(rows) for j in range(cols)]


MODEL_KERNELS = ("gravity_torques", "bias_torques", "inverse_dynamics", "mass_matrix",
                 "forward_dynamics", "coriolis_transpose_product")
# Kernels of a set of links (their ``frame``: a sorted tuple of link names) taking the
# wrenches on them; other wrench sets take the generic module.
WRENCHED_DERIVATIVE_KERNELS = ("inverse_dynamics_derivatives_wrenches",)
WRENCHED_KERNELS = ("inverse_dynamics_wrenches", "forward_dynamics_wrenches"
                    ) + WRENCHED_DERIVATIVE_KERNELS
MAX_WRENCHED_LINKS = 4
# The planners' kernels, which a node's start-up leaves out (see Kernels.prepare).
DERIVATIVE_KERNELS = ("inverse_dynamics_derivatives", "forward_dynamics_derivatives",
                      "gravity_derivatives")
FRAME_KERNELS = ("frame_pose", "jacobian", "task_space_inertia")
_INVERSE_DYNAMICS = {"gravity_torques": (False, False, "g(q)"),
                     "bias_torques": (True, False, "h(q, qd)"),
                     "inverse_dynamics": (True, True, "M qdd + h")}


# The derivative kernels grow with the (ancestor, descendant) pairs: above this many traced
# operations one compiles for minutes (a 32-joint tree's inverse dynamics derivatives:
# 39,000, 137 s) and ran no faster than the generic module's loops (13 against 14 us),
# which then answer.  Arms trace 5,000-8,000.
MAX_TRACED_OPERATIONS = 15_000
# The kernels of LANES_CAP_KERNELS are generated up to this size for their lanes batch
# alone (batch_only: above MAX_TRACED_OPERATIONS their single calls stay with the generic
# module).  Measured 2026-11-27, same process, per sample of 1,000 / per call,
# kernel against generic: the 19-joint dual-arm robot with mimic grippers (24,200
# operations, 69 s to compile) 1.72 against 5.49 us / 10.75 against 11.21 us; the
# 32-joint tree (39,200, 187 s) 4.18 against 6.65 us / 21.2 against 11.6 us: its batch
# would gain 1.6x for minutes of compile per robot.
MAX_LANES_TRACED_OPERATIONS = 25_000
# Measured for the inverse dynamics derivatives only: the forward ones (whose batch also
# runs lanes) trace 1.5x as many operations and keep MAX_TRACED_OPERATIONS.
LANES_CAP_KERNELS = ("inverse_dynamics_derivatives",)
# The wrenched dynamics kernels, one per link set, are the size of their plain dynamics
# and pay where the derivatives do not: the 32-joint tree's forward dynamics with a
# wrench (35,900 traced operations) compiled in 59 s here; a call through the API took
# 45.7k instructions (40.0k in the kernel, as its plain forward dynamics) against 69k
# through the generic articulated-body pass (callgrind, 2026-11-26), which had read
# 0.58x Pinocchio's aba(fext).  This cap keeps 30-40 joint humanoids and trees (Talos:
# 22,200) and leaves larger ones to the generic module.
MAX_WRENCHED_DYNAMICS_OPERATIONS = 40_000
_CAPPED_TRACES = {"inverse_dynamics_derivatives": trace_inverse_dynamics_derivatives,
                  "forward_dynamics_derivatives": trace_forward_dynamics_derivatives,
                  "gravity_derivatives": trace_gravity_derivatives,
                  "inverse_dynamics_wrenches": trace_inverse_dynamics,
                  "forward_dynamics_wrenches": trace_forward_dynamics}
_traced_sizes = {}          # (structure key, kernel) -> operations
# Whether the batches of the derivative kernels run blocks of samples through a lanes
# core.  Measured 2026-11-25, per sample, batch of 32 (one thread) / 1,000, without -> with
# lanes, and the module's compile time (another job was using one of the two cores):
#   inverse dynamics derivatives: panda 1.18 -> 0.52 us (1.21 -> 0.55), compile 3.7 ->
#     5.2 s; lbr_iiwa_14 1.19 -> 0.51 us (1.22 -> 0.56), compile 2.5 -> 6.4 s: 2.2-2.3x,
#     worth the seconds of a background or prepare_kernels() compile;
#   gravity derivatives: panda 0.234 -> 0.228 us (0.232 -> 0.215), compile 0.4 -> 0.8 s;
#     lbr_iiwa_14 0.217 -> 0.235 us (0.214 -> 0.215), compile 0.4 -> 1.0 s: nothing
#     gained (as for gravity_torques: 660 operations, memory-bound), compile doubled.
# 2026-11-27, batch of 1,000, without -> with lanes (one copy of M and of the right-hand
# sides per lane, then the solve lane by lane), same process: forward dynamics
# derivatives: panda 1.79 -> 0.62 us, lbr_iiwa_14 1.33 -> 0.49 us, ur5 1.31 -> 0.50 us
# (2.6-2.9x), compile 5.9 -> 11.0 s (panda).
DERIVATIVE_LANES = {"inverse_dynamics_derivatives": True, "forward_dynamics_derivatives": True,
                    "gravity_derivatives": False}


def folded_tree_parents(tree):
    """Each joint's parent in M = G^T M_hinge G's tree of nonzeros, or None where that M
    has none (then a dense Cholesky): mimic joints within one branch (a gripper's fingers
    mimicking its motor) keep a tree's sparsity, for soa_tree_factor's LTL.

    From the pattern alone: M_rs may be nonzero when a hinge of joint r and one of s lie
    on one path to the root.  The LTL, eliminating from the last joint, fills in only
    along chains of parents when the nonzeros left of each diagonal lie on the chain
    that starts at the rightmost of them (RBDA 6.5; model order puts ancestors first)."""
    master, parent, dof = tree.coordinates.master, tree.parent, tree.dof
    pattern = np.zeros((dof, dof), dtype=bool)
    for body in range(1, len(parent)):
        if master[body] < 0:
            continue
        up = body
        while up > 0:
            if master[up] >= 0:
                pattern[master[body], master[up]] = pattern[master[up], master[body]] = True
            up = parent[up]
    parents = []
    for joint in range(dof):
        left = np.flatnonzero(pattern[joint, :joint])
        above = int(left[-1]) if left.size else -1
        chain, link = set(), above
        while link >= 0:
            chain.add(link)
            link = parents[link]
        if not chain.issuperset(left.tolist()):
            return None
        parents.append(above)
    return parents


def exists(tree, kernel):
    """Whether ``kernel`` is generated for this tree: task-space inertia not with mimic
    joints, the derivatives up to
    MAX_TRACED_OPERATIONS (MAX_LANES_TRACED_OPERATIONS those of LANES_CAP_KERNELS), the
    wrenched dynamics up to MAX_WRENCHED_DYNAMICS_OPERATIONS."""
    if kernel == "task_space_inertia":
        return not tree.coordinates.couples_hinges
    # with wrenches: the size without them (they add a few hundred operations), and no
    # batch: the plain cap
    plain = kernel.replace("_derivatives_wrenches", "_derivatives")
    if plain not in _CAPPED_TRACES:
        return True
    if plain == kernel and kernel in WRENCHED_KERNELS:
        cap = MAX_WRENCHED_DYNAMICS_OPERATIONS
    elif kernel in LANES_CAP_KERNELS:
        cap = MAX_LANES_TRACED_OPERATIONS
    else:
        cap = MAX_TRACED_OPERATIONS
    return _traced_size(tree, plain) <= cap


def _traced_size(tree, kernel):
    """Traced operations of capped ``kernel`` for this tree's structure (traced once)."""
    key = (structure_key(tree), kernel)
    if key not in _traced_sizes:
        _traced_sizes[key] = len(_CAPPED_TRACES[kernel](tree)[0].trace.ops)
    return _traced_sizes[key]


def batch_only(tree, kernel):
    """Whether only the batch of ``kernel``'s module answers, its single calls going to the
    generic module: a trace over MAX_TRACED_OPERATIONS, where a single call runs no faster
    than the generic loops (the dual-arm robot's inverse dynamics derivatives, 24,200
    operations: 9.8-10.1 against 7.2-9.4 us, two same-process A/Bs, 2026-11-27), but within
    MAX_LANES_TRACED_OPERATIONS, where its lanes batch pays."""
    return kernel in LANES_CAP_KERNELS and (
        MAX_TRACED_OPERATIONS < _traced_size(tree, kernel) <= MAX_LANES_TRACED_OPERATIONS)


def kernel_key(tree, kernel, frame=None):
    """Hash naming the module of one kernel (of one frame for the per-frame kernels)."""
    base = structure_key(tree) if frame is None else frame_key(tree, frame)
    return hashlib.sha256(f"{base}|{kernel}".encode()).hexdigest()[:20]


def generate_source(tree, kernel, module_name, name="robot", frame=None):
    """C source of the module of one kernel, with its batch version where it has one.

    Returns ``(source, stats)``; ``stats`` counts the operations of the kernel.
    """
    dof = tree.dof
    title = f"robot {name!r}" + ("" if frame is None else f", frame {frame!r}"
                                  if type(frame) is str else f", links {', '.join(frame)}")
    module = _Module(module_name, title, kernel_key(tree, kernel, frame), dof)
    if kernel in _INVERSE_DYNAMICS:
        with_qd, with_qdd, doc = _INVERSE_DYNAMICS[kernel]
        t, arrays, torque = trace_inverse_dynamics(tree, with_qd, with_qdd)
        module.kernel(kernel, arrays, _vector_outputs(torque), t.trace, doc, (dof,))
        # Gravity gained nothing from lanes on 6-7 DOF arms (0.88-1.03x per
        # sample, 1.65x on a 32-joint tree, 2026-11-23) and costs compile time;
        # inverse and forward dynamics gained 1.3-2.1x and 2.0-5.3x.
        module.batch(kernel + "_batch", kernel, arrays, vectorized=kernel != "gravity_torques")
    elif kernel == "coriolis_transpose_product":
        t, arrays, product = trace_coriolis_transpose_product(tree)
        module.kernel(kernel, arrays, _vector_outputs(product), t.trace,
                      "C(q, qd)^T qd, momentum gather", (dof,))
    elif kernel == "mass_matrix":
        t, arrays, mass = trace_mass_matrix(tree)
        module.kernel(kernel, arrays, _matrix_outputs(mass), t.trace,
                      "M(q), composite-body recursion", (dof, dof))
    elif kernel in ("forward_dynamics", "forward_dynamics_wrenches"):
        links = frame if kernel in WRENCHED_KERNELS else ()
        t, arrays, answer, method = trace_forward_dynamics(tree, links)
        wrenched = f", wrenches on {', '.join(links)}" if links else ""
        if tree.coordinates.couples_hinges:
            mass, rhs = answer
            parents = folded_tree_parents(tree)
            if parents is None:
                factor, prelude = "Cholesky", ()
                solve = f"soa_cholesky_solve({{m}}, {{out}}, {dof}, 1)"
            else:
                factor = "the LTL of its tree's sparsity"
                prelude = (f"static const int up[{dof}] = {{{', '.join(map(str, parents))}}};",)
                solve = f"soa_tree_solve({{m}}, {{out}}, {dof}, up)"
            module.kernel(kernel, arrays, _matrix_outputs(mass, "m") + _vector_outputs(rhs),
                          t.trace, f"qdd = M^-1 (tau - h){wrenched}: mimic joints couple "
                          f"hinges, so {method}, then {factor}", (dof,),
                          workspace=(("m", dof * dof),), solve=solve, prelude=prelude,
                          links=links)
        else:
            module.kernel(kernel, arrays, _vector_outputs(answer), t.trace,
                          f"qdd, {method}{wrenched}", (dof,), links=links)
        if not links:
            module.batch(kernel + "_batch", kernel, arrays)
    elif kernel == "inverse_dynamics_wrenches":
        t, arrays, torque = trace_inverse_dynamics(tree, links=frame)
        module.kernel(kernel, arrays, _vector_outputs(torque), t.trace,
                      f"M qdd + h - sum J^T w, wrenches on {', '.join(frame)}", (dof,),
                      links=frame)
    elif kernel in ("inverse_dynamics_derivatives", "inverse_dynamics_derivatives_wrenches") \
            and exists(tree, kernel):
        links = frame if kernel in WRENCHED_KERNELS else ()
        t, arrays, (dtau_dq, dtau_dqd) = trace_inverse_dynamics_derivatives(tree, links)
        wrenched = f", wrenches on {', '.join(links)}" if links else ""
        module.kernel(kernel, arrays, _matrix_outputs(dtau_dq)
                      + _matrix_outputs(dtau_dqd, offset=dof * dof), t.trace,
                      f"(dtau/dq, dtau/dqd), root-axes closed form{wrenched}", (dof, dof),
                      parts=2, links=links)
        if not links:       # (batches take no wrenches)
            module.batch(kernel + "_batch", kernel, arrays, DERIVATIVE_LANES[kernel])
    elif kernel == "forward_dynamics_derivatives" and exists(tree, kernel):
        t, arrays, (dtau_dq, dtau_dqd, mass) = trace_forward_dynamics_derivatives(tree)
        # M X = [-dtau/dq, -dtau/dqd, I]
        module.kernel(kernel, arrays, _matrix_outputs(mass, "m") + _matrix_outputs(
                          np.hstack((-dtau_dq, -dtau_dqd, np.eye(dof))), "b"), t.trace,
                      "(dqdd/dq, dqdd/dqd, M^-1): root-axes closed form at qdd = FD(q, qd, "
                      "tau), then Cholesky", (dof, dof),
                      workspace=(("m", dof * dof), ("b", 3 * dof * dof)),
                      solve=f"soa_solve_parts({{m}}, {{b}}, {dof}, 3, {{out}})", parts=3)
        module.batch(kernel + "_batch", kernel, arrays, DERIVATIVE_LANES[kernel])
    elif kernel == "gravity_derivatives" and exists(tree, kernel):
        t, arrays, dg_dq = trace_gravity_derivatives(tree)
        module.kernel(kernel, arrays, _matrix_outputs(dg_dq), t.trace,
                      "dg/dq, root-axes closed form", (dof, dof))
        module.batch(kernel + "_batch", kernel, arrays, DERIVATIVE_LANES[kernel])
    elif kernel == "jacobian":
        t, arrays, jacobian = trace_jacobian(tree, frame)
        module.kernel(kernel, arrays + [("p", _param_count(tree))], _matrix_outputs(jacobian),
                      t.trace, f"6 x dof Jacobian of {frame}", (6, dof))
    elif kernel == "frame_pose":
        t, arrays, pose = trace_frame_pose(tree, frame)
        module.kernel(kernel, arrays + [("p", _param_count(tree))], _matrix_outputs(pose),
                      t.trace, f"4 x 4 pose of {frame}", (4, 4))
    elif kernel == "task_space_inertia" and exists(tree, kernel):
        t, arrays, compliance = trace_task_space_compliance(tree, frame)
        module.kernel(kernel, arrays, _matrix_outputs(compliance, "c"), t.trace,
                      f"Lambda of {frame}: compliance recursion, then a checked inversion",
                      (6, 6), workspace=(("c", 36),),
                      solve="soa_invert_spd_checked({c}, {out}, 6)")
    else:
        raise ValueError(f"no kernel {kernel!r} for {title}")
    return module.source(), module.stats[kernel]
