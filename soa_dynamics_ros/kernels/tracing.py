"""Run the reference recursions on symbolic scalars: the traces the C kernels are printed from.

Every kernel is produced by calling the *same* functions the numpy reference
path calls (:mod:`soa_dynamics_ros.algorithms`) on a copy of the robot's
:class:`~soa_dynamics_ros.multibody.tree.BodyTree` whose inertias are symbolic inputs,
with symbolic joint coordinates (see :mod:`.symbolic`).  The physics lives in
one place; this module only decides what is an input and what is an output of
each kernel, and, where the recursions offer several ways to one answer, which
way traces to the fewest operations.  :mod:`.c_emission` prints the traces as C.

A ``trace_*`` function returns ``(t, arrays, answer)``: ``t.trace`` the recorded
arithmetic, ``arrays`` the kernel's inputs in call order (``(name, length)``, the
packed parameters ``p`` last, see :func:`pack_parameters`), ``answer`` traced values
(numpy arrays of :class:`~.symbolic.Sym` and constants) that :func:`vector_outputs`
and :func:`matrix_outputs` lay out as the kernel's outputs.
"""
import numpy as np

from ..algorithms import aligned_frames, articulated_body, frame_motion, root_axes_derivatives
from ..algorithms.coriolis import coriolis_matrix
from ..algorithms.energy import kinetic_energy, potential_energy
from ..algorithms.external_forces import (applied_wrench, forces_on_bodies,
                                          gravity_root_acceleration)
from ..algorithms.inverse_dynamics import inverse_dynamics
from ..algorithms.kinematics import body_placements, frame_placement, hinge_jacobian
from ..algorithms.mass_matrix import mass_matrix
from ..algorithms.momentum import coriolis_transpose_product
from ..algorithms.task_space import compliance_gather, frame_wrench_map
from ..errors import SingularDynamicsError
from ..multibody.spatial import (INERTIA_PARAMETER_COUNT as PARAMS_PER_BODY, homogeneous,
                                 inertia_to_parameters, parameters_to_inertia)
from . import symbolic
from .symbolic import INPUT, Sym, Trace

HEADER = 4          # gravity (3), singular threshold


def pack_parameters(tree, gravity, out=None):
    """The ``p`` array of the kernels from the tree's current inertias and gravity."""
    p = np.empty(parameter_count(tree)) if out is None else out
    p[:3] = gravity
    p[3] = tree.singular_inertia_threshold()
    p[HEADER:].reshape(tree.nb - 1, PARAMS_PER_BODY)[:] = inertia_to_parameters(
        tree.body_inertia[1:])
    return p


def parameter_count(tree):
    """Length of the ``p`` array of this tree's kernels."""
    return HEADER + PARAMS_PER_BODY * (tree.nb - 1)


def vector_outputs(values, target="out"):
    """``values`` as outputs ``[((target, k), value)]``, each folded (:func:`.symbolic.fold`)."""
    return [((target, k), symbolic.fold(v)) for k, v in enumerate(values)]


def matrix_outputs(values, target="out", offset=0):
    """A matrix of ``values`` as outputs, row by row from ``target[offset]`` on."""
    rows, cols = values.shape
    return [((target, offset + i * cols + j), symbolic.fold(values[i, j]))
            for i in range(rows) for j in range(cols)]


def live_nodes(trace, outputs):
    """Which nodes of ``trace`` the ``outputs`` (as :func:`vector_outputs` lays them out)
    and the guards read: what the C kernel computes."""
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


def operation_count(trace, outputs):
    """The operations (inputs read included) the C kernel of ``outputs`` would compute."""
    return int(live_nodes(trace, outputs).sum())


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
        ("p", parameter_count(tree))]
    t = _Tracing(tree, arrays)
    c = t.coordinates
    qd = t.inputs["qd"] if with_qd else _zeros(tree)
    qdd = t.inputs["qdd"] if with_qdd else _zeros(tree)
    q_hinge = c.hinge_positions(t.inputs["q"])
    torque = inverse_dynamics(t.symbolic_tree, q_hinge, c.hinge_rates(qd), c.hinge_rates(qdd),
                              t.root_acceleration(), _traced_body_forces(t, q_hinge, links))
    return t, arrays, c.joint_forces(torque)


def trace_coriolis_transpose_product(tree):
    arrays = [("q", tree.dof), ("qd", tree.dof), ("p", parameter_count(tree))]
    t = _Tracing(tree, arrays)
    product = coriolis_transpose_product(t.symbolic_tree,
                                         t.coordinates.hinge_positions(t.inputs["q"]),
                                         t.coordinates.hinge_rates(t.inputs["qd"]))
    return t, arrays, t.coordinates.joint_forces(product)


# Frames with root axes take more loads and stores per operation than body frames, so
# aligned frames pay only where they save a clear share of the operations: below this
# share they measured faster, above it alike or slower (docs/performance.md, "Design
# measurements").
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
        arrays = [("q", tree.dof), ("p", parameter_count(tree))]
        t = _Tracing(tree, arrays)
        mass = t.coordinates.joint_mass_matrix(
            recursion(t.symbolic_tree, t.coordinates.hinge_positions(t.inputs["q"])))
        traced.append((operation_count(t.trace, matrix_outputs(mass)), t, arrays, mass))
    return traced


def trace_forward_dynamics(tree, links=()):
    """``(t, arrays, answer, method)``: forward dynamics; ``links``: wrenches on these
    links are an input too.  Robots with mimic joints get (M, h) as the answer, for the
    kernel to solve.  Others get qdd by whichever of :func:`forward_dynamics_traces`
    traces to the fewest operations: on the Panda M, h and M's LTDL in body frames
    (2,300 against 2,400 by the articulated-body recursion, and measurably faster a
    kernel call: docs/performance.md, "Design measurements"), on a 32-joint tree with random axes the same in aligned
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
        ("p", parameter_count(tree))]


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
    return operation_count(t.trace, vector_outputs(qdd)), t, qdd, way


# A solve multiplies the error of M by its condition number, and M in root axes
# carries more: aligned frames are kept only where their qdd agrees with the
# recursion's to this (ill-conditioned trees such as iCub's miss it by orders of
# magnitude; docs/performance.md, "Design measurements").
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
        ("p", parameter_count(tree))]
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


def trace_forward_dynamics_derivatives(tree):
    """``(dtau/dq, dtau/dqd)`` of the joints at ``qdd = FD(q, qd, tau)`` and M, by the
    root-axes closed form: the kernel then solves with M.  qdd from M, which the kernel
    needs anyway, and h by :func:`_traced_solve`: fewer operations than the
    articulated-body recursion on the arms; h from the closed form's own pass at
    qdd = 0, then what qdd adds (fewer than a separate inverse dynamics pass for h;
    docs/performance.md, "Design measurements").  Its
    pivots guard as the recursion's hinge inertias do (the singular threshold, status 2)
    where they are those (:func:`_pivots_are_articulated`), else > 0 as the reference's
    forward dynamics of mimic robots, which solves with M; a joint order that would fill
    M's factor in keeps the recursion."""
    arrays = [("q", tree.dof), ("qd", tree.dof), ("tau", tree.dof), ("p", parameter_count(tree))]
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
    arrays = [("q", tree.dof), ("p", parameter_count(tree))]
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
    arrays = [("q", tree.dof), ("p", parameter_count(tree))]
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


# The frame motions ``export-c`` exports: (the joint-rate inputs besides q, the algorithm of
# :mod:`~soa_dynamics_ros.algorithms.frame_motion`, whether its answer is a hinge matrix).
FRAME_MOTIONS = {"frame_twist": (("qd",), frame_motion.frame_twist, False),
                 "jacobian_derivative_product": (("qd",),
                                                 frame_motion.jacobian_derivative_product, False),
                 "frame_acceleration": (("qd", "qdd"), frame_motion.frame_acceleration, False),
                 "jacobian_time_derivative": (("qd",), frame_motion.hinge_jacobian_derivative,
                                              True)}


def trace_frame_motion(tree, frame_name, quantity):
    """One of FRAME_MOTIONS of one frame: a 6-vector, or 6 x dof for the Jacobian's time
    derivative."""
    rates, algorithm, hinge_matrix = FRAME_MOTIONS[quantity]
    arrays = [("q", tree.dof)] + [(name, tree.dof) for name in rates]
    t = _Tracing(tree, arrays)
    c = t.coordinates
    placements = body_placements(tree, c.hinge_positions(t.inputs["q"]))
    answer = algorithm(tree, placements, tree.frames[frame_name],
                       *(c.hinge_rates(t.inputs[name]) for name in rates))
    return t, arrays, c.joint_columns(answer) if hinge_matrix else answer


def trace_coriolis_matrix(tree):
    """C(q, qd) of the joints, the Christoffel-symbol one (:mod:`..algorithms.coriolis`)."""
    arrays = [("q", tree.dof), ("qd", tree.dof), ("p", parameter_count(tree))]
    t = _Tracing(tree, arrays)
    c = t.coordinates
    return t, arrays, c.joint_mass_matrix(coriolis_matrix(
        t.symbolic_tree, c.hinge_positions(t.inputs["q"]), c.hinge_rates(t.inputs["qd"])))


def trace_kinetic_energy(tree):
    arrays = [("q", tree.dof), ("qd", tree.dof), ("p", parameter_count(tree))]
    t = _Tracing(tree, arrays)
    c = t.coordinates
    return t, arrays, np.array([kinetic_energy(t.symbolic_tree, c.hinge_positions(t.inputs["q"]),
                                               c.hinge_rates(t.inputs["qd"]))], dtype=object)


def trace_potential_energy(tree):
    arrays = [("q", tree.dof), ("p", parameter_count(tree))]
    t = _Tracing(tree, arrays)
    return t, arrays, np.array([potential_energy(
        t.symbolic_tree, t.coordinates.hinge_positions(t.inputs["q"]), t.inputs["p"][:3])],
        dtype=object)
