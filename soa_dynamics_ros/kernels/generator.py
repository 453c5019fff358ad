"""Generate straight-line kernel source for one robot by tracing the reference recursions.

Every kernel is produced by calling the *same* functions the numpy reference
path calls (:mod:`soa_dynamics_ros.algorithms`) on a copy of the robot's
:class:`~soa_dynamics_ros.tree.BodyTree` whose inertias are symbolic inputs,
with symbolic joint coordinates (see :mod:`.symbolic`).  The physics lives in
one place; this module only decides what is an input and what is an output,
then prints the recorded arithmetic as Python.

Calling convention of every generated kernel (all arrays float64, C-contiguous)::

    status = kernel(q, [qd, [qdd | tau,]] p, out)

* ``q``, ``qd``, ``qdd``, ``tau``: generalized (independent-joint) vectors; the
  mimic map ``q_hinge = G q + o`` and ``tau = G^T tau_hinge`` are folded in.
* ``p``: the packed model parameters, ``[g (3), singular threshold, then per
  moving body m, m c (3), I_origin (xx, xy, xz, yy, yz, zz)]`` (see
  :func:`pack_parameters`).  Inertias (so payloads) and gravity are inputs,
  never folded in: changing them needs no new code.
* ``out``: written in place (``(dof,)``, ``(dof, dof)`` or ``(6, dof)``).
* ``status``: 0 ok, 1 an input has the wrong length or is NaN/inf (checked
  before any arithmetic),
  2 a singular hinge (massless body, the reference raises), 3 ill-conditioned
  task-space compliance (the caller falls back to the reference path).

Batch kernels take ``(N, dof)`` arrays and return the index of the first
failing sample times 4 plus its status (0 when all succeeded).
"""
import copy
import hashlib

import numpy as np

from ..algorithms import articulated_body
from ..algorithms.inverse_dynamics import inverse_dynamics
from ..algorithms.kinematics import body_placements, hinge_jacobian
from ..algorithms.mass_matrix import mass_matrix
from ..algorithms.task_space import compliance_gather, frame_wrench_map
from ..validation import MAX_MAGNITUDE
from . import symbolic
from .symbolic import ADD, COS, DIV, INPUT, MUL, NEG, SIN, SUB, Sym, Trace

GENERATOR_VERSION = "1"
INLINE_DEPTH = 0
PARAMS_PER_BODY = 10
HEADER = 4          # gravity (3), singular threshold


def pack_parameters(tree, gravity, out=None):
    """The ``p`` array of the kernels from the tree's current inertias and gravity."""
    inertia = tree.body_inertia[1:]
    p = np.empty(HEADER + PARAMS_PER_BODY * (tree.nb - 1)) if out is None else out
    p[:3] = gravity
    p[3] = tree.singular_inertia_threshold()
    body = p[HEADER:].reshape(tree.nb - 1, PARAMS_PER_BODY)
    body[:, 0] = inertia[:, 0, 0]
    body[:, 1] = inertia[:, 5, 1]
    body[:, 2] = inertia[:, 3, 2]
    body[:, 3] = inertia[:, 4, 0]
    for column, (i, j) in enumerate(((3, 3), (3, 4), (3, 5), (4, 4), (4, 5), (5, 5)), start=4):
        body[:, column] = inertia[:, i, j]
    return p


def structure_key(tree):
    """Hash of everything the generated code depends on (not inertias or gravity)."""
    digest = hashlib.sha256(f"soa-kernels-{GENERATOR_VERSION}".encode())

    def add(value):
        digest.update(np.ascontiguousarray(value, dtype=float).tobytes())
        digest.update(b"|")

    add(tree.parent)
    add([-1 if t is None else t for t in tree.hinge_type])
    add(tree.hinge_map)
    for body in range(1, tree.nb):
        add(tree.hinge_axis[body])
        add(tree.hinge_rotation[body])
        add(tree.hinge_translation[body])
    add(tree.hinge_from_joint)
    add(tree.hinge_offset)
    return digest.hexdigest()[:20]


def frame_key(tree, frame_name):
    frame = tree.frames[frame_name]
    digest = hashlib.sha256(structure_key(tree).encode())
    digest.update(str(frame.body).encode())
    digest.update(np.ascontiguousarray(frame.rotation).tobytes())
    digest.update(np.ascontiguousarray(frame.translation).tobytes())
    return digest.hexdigest()[:20]


# ---------------------------------------------------------------------------- tracing
class _Tracing:
    """Symbolic inputs and a symbolic copy of the tree for one kernel."""

    def __init__(self, tree, arrays):
        self.tree = tree
        self.trace = Trace()
        self.inputs = {}
        for name, size in arrays:
            self.inputs[name] = self.trace.inputs_array(name, size)
        if "p" in self.inputs:
            self.symbolic_tree = self._symbolic_tree(self.inputs["p"])

    def _symbolic_tree(self, p):
        tree = copy.copy(self.tree)
        inertia = np.zeros((tree.nb, 6, 6), dtype=object)
        inertia[...] = 0.0
        for body in range(1, tree.nb):
            m, mcx, mcy, mcz, ixx, ixy, ixz, iyy, iyz, izz = p[
                HEADER + PARAMS_PER_BODY * (body - 1):HEADER + PARAMS_PER_BODY * body]
            inertia[body] = np.array([
                [m, 0.0, 0.0, 0.0, mcz, -mcy],
                [0.0, m, 0.0, -mcz, 0.0, mcx],
                [0.0, 0.0, m, mcy, -mcx, 0.0],
                [0.0, -mcz, mcy, ixx, ixy, ixz],
                [mcz, 0.0, -mcx, ixy, iyy, iyz],
                [-mcy, mcx, 0.0, ixz, iyz, izz]], dtype=object)
        tree.body_inertia = inertia
        threshold = p[3]
        tree.singular_inertia_threshold = lambda: threshold
        return tree

    def hinge_positions(self, q):
        return self.tree.hinge_from_joint @ q + self.tree.hinge_offset

    def hinge_rates(self, rates):
        return self.tree.hinge_from_joint @ rates

    def joint_forces(self, hinge_forces):
        return self.tree.hinge_from_joint.T @ hinge_forces

    def root_acceleration(self):
        g = self.inputs["p"][:3]
        return np.array([-g[0], -g[1], -g[2], 0.0, 0.0, 0.0], dtype=object)


def _zeros(tree):
    return np.zeros(tree.dof, dtype=object) + 0.0


def trace_inverse_dynamics(tree, with_qd=True, with_qdd=True):
    arrays = [("q", tree.dof)] + ([("qd", tree.dof)] if with_qd else []) + (
        [("qdd", tree.dof)] if with_qdd else []) + [("p", _param_count(tree))]
    t = _Tracing(tree, arrays)
    qd = t.inputs["qd"] if with_qd else _zeros(tree)
    qdd = t.inputs["qdd"] if with_qdd else _zeros(tree)
    torque = inverse_dynamics(t.symbolic_tree, t.hinge_positions(t.inputs["q"]), t.hinge_rates(qd),
                              t.hinge_rates(qdd), t.root_acceleration())
    return t, arrays, t.joint_forces(torque)


def trace_mass_matrix(tree):
    arrays = [("q", tree.dof), ("p", _param_count(tree))]
    t = _Tracing(tree, arrays)
    g = tree.hinge_from_joint
    mass = g.T @ mass_matrix(t.symbolic_tree, t.hinge_positions(t.inputs["q"])) @ g
    return t, arrays, mass


def trace_forward_dynamics(tree):
    """Articulated-body forward dynamics; robots with mimic joints get (M, h) instead."""
    arrays = [("q", tree.dof), ("qd", tree.dof), ("tau", tree.dof), ("p", _param_count(tree))]
    t = _Tracing(tree, arrays)
    q_hinge = t.hinge_positions(t.inputs["q"])
    qd_hinge = t.hinge_rates(t.inputs["qd"])
    if tree.has_mimic:
        g = tree.hinge_from_joint
        mass = g.T @ mass_matrix(t.symbolic_tree, q_hinge) @ g
        bias = t.joint_forces(inverse_dynamics(t.symbolic_tree, q_hinge, qd_hinge,
                                               np.zeros(tree.nb, dtype=object) + 0.0,
                                               t.root_acceleration()))
        return t, arrays, (mass, t.inputs["tau"] - bias)
    bodies = articulated_body.gather(t.symbolic_tree, q_hinge, qd_hinge,
                                     t.hinge_rates(t.inputs["tau"]))
    qdd, _ = articulated_body.scatter(t.symbolic_tree, bodies, t.root_acceleration())
    return t, arrays, tree.hinge_from_joint.T @ qdd


def trace_jacobian(tree, frame_name):
    arrays = [("q", tree.dof)]
    t = _Tracing(tree, arrays)
    placements = body_placements(tree, t.hinge_positions(t.inputs["q"]))
    jacobian = hinge_jacobian(tree, placements, tree.frames[frame_name]) @ tree.hinge_from_joint
    return t, arrays, jacobian


def trace_task_space_compliance(tree, frame_name):
    """Lambda^-1 = J M^-1 J^T of one frame (6x6) by the articulated-body recursion."""
    arrays = [("q", tree.dof), ("p", _param_count(tree))]
    t = _Tracing(tree, arrays)
    frame = tree.frames[frame_name]
    q_hinge = t.hinge_positions(t.inputs["q"])
    zeros = np.zeros(tree.nb, dtype=object) + 0.0
    bodies = articulated_body.gather(t.symbolic_tree, q_hinge, zeros, zeros)
    rotations, _ = body_placements(tree, q_hinge)
    columns = np.zeros((tree.nb, 6, 6), dtype=object) + 0.0
    columns[frame.body] += frame_wrench_map(rotations[frame.body], frame.translation) @ np.eye(6)
    compliance, _ = compliance_gather(t.symbolic_tree, bodies, columns)
    return t, arrays, 0.5 * (compliance + compliance.T)


def _param_count(tree):
    return HEADER + PARAMS_PER_BODY * (tree.nb - 1)


# ---------------------------------------------------------------------------- printing
_BINARY = {ADD: "+", SUB: "-", MUL: "*", DIV: "/"}


class _Printer:
    def __init__(self, trace):
        self.trace = trace
        self.names = {}

    def ref(self, value):
        if isinstance(value, Sym):
            return self.names[value.i]
        value = float(value)
        return repr(value) if np.isfinite(value) else f"float('{value}')"

    def operand(self, a):
        return self.names[a] if isinstance(a, int) else repr(a)

    def body(self, outputs, indent="    "):
        """Lines computing every live node; ``outputs``: list of (target, value).

        Every node gets a variable of its own: writing single-use nodes into
        their user's expression was tried and made numba compile 1.5x slower
        and run slower (INLINE_DEPTH = 0 disables it).
        """
        ops = self.trace.ops
        uses = np.zeros(len(ops), dtype=np.int64)
        live = np.zeros(len(ops), dtype=bool)
        roots = [v.i for _, v in outputs if isinstance(v, Sym)]
        roots += [i for guard in self.trace.guards for i in guard if isinstance(i, int)]
        for i in roots:
            uses[i] += 2          # outputs and guards always get a variable
        stack = list(roots)
        while stack:
            i = stack.pop()
            if live[i]:
                continue
            live[i] = True
            op, a, b = ops[i]
            if op != INPUT:
                for x in (a, b):
                    if isinstance(x, int):
                        uses[x] += 1
                        stack.append(x)
        guards_after = {}
        for value, threshold in self.trace.guards:
            last = max(x for x in (value, threshold) if isinstance(x, int))
            guards_after.setdefault(last, []).append((value, threshold))
        lines, counts, depth = [], {}, {}
        for i, (op, a, b) in enumerate(ops):
            if not live[i]:
                continue
            if op == INPUT:
                text, level = f"{a}[{b}]", 0
            elif op in _BINARY:
                text = f"({self.operand(a)} {_BINARY[op]} {self.operand(b)})"
                level = 1 + max(depth.get(x, 0) if isinstance(x, int) else 0 for x in (a, b))
            elif op == NEG:
                text, level = f"(-{self.operand(a)})", 1 + depth.get(a, 0) if isinstance(a, int) else 1
            elif op in (SIN, COS):
                text, level = f"math.{op}({self.operand(a)})", 1 + depth.get(a, 0)
            else:
                raise AssertionError(op)
            counts[op] = counts.get(op, 0) + 1
            if uses[i] == 1 and op != INPUT and level < INLINE_DEPTH:
                self.names[i] = text
                depth[i] = level
                continue
            name = self.names[i] = f"t{i}"
            lines.append(f"{indent}{name} = {text}")
            for value, threshold in guards_after.get(i, ()):
                lines.append(f"{indent}if not ({self.operand(value)} > {self.operand(threshold)}):")
                lines.append(f"{indent}    return 2")
        for target, value in outputs:
            lines.append(f"{indent}{target} = {self.ref(value)}")
        return lines, counts


def _finite_check(arrays, indent="    "):
    """Status 1 for a wrong length (callers skip Python checks), a NaN/inf or an absurd entry."""
    lines = []
    for name, size in arrays:
        if name == "p":
            continue
        lines.append(f"{indent}if {name}.shape[0] != {size}:")
        lines.append(f"{indent}    return 1")
        lines.append(f"{indent}for k in range({size}):")
        # Not "<=" holds for NaN too; the bound is validation.MAX_MAGNITUDE.
        lines.append(f"{indent}    if not abs({name}[k]) <= {MAX_MAGNITUDE!r}:")
        lines.append(f"{indent}        return 1")
    return lines


def _function(name, arrays, outputs, trace, doc, tail=()):
    args = ", ".join([a for a, _ in arrays] + ["out"])
    printer = _Printer(trace)
    body, counts = printer.body(outputs)
    stats = ", ".join(f"{counts.get(op, 0)} {label}" for op, label in (
        (MUL, "mul"), (ADD, "add"), (SUB, "sub"), (DIV, "div"), (NEG, "neg"), (SIN, "sin"),
        (COS, "cos")))
    lines = ["", "", "@jit", f"def {name}({args}):", f'    """{doc} ({stats})"""']
    if any(a == "p" for a, _ in arrays):
        lines += ["    if p.shape[0] != %d:" % _param_count_from(arrays), "        return 1"]
    lines += _finite_check(arrays) + body + list(tail) + ["    return 0"]
    return lines, counts


def _param_count_from(arrays):
    return dict(arrays)["p"]


def _vector_outputs(values, target="out"):
    return [(f"{target}[{k}]", symbolic.fold(v)) for k, v in enumerate(values)]


def _matrix_outputs(values, target="out"):
    rows, cols = values.shape
    return [(f"{target}[{i}, {j}]", symbolic.fold(values[i, j]))
            for i in range(rows) for j in range(cols)]


PRELUDE = '''"""Kernels generated by soa_dynamics_ros.kernels for robot {name!r}.

Do not edit: regenerated from the model (structure key {key}).
"""
import math

import numpy as np

try:  # the Python backend executes this source with its own helpers defined
    jit
except NameError:
    from soa_dynamics_ros.kernels.runtime import jit, cholesky_solve, invert_spd_checked
'''


def _batch(name, single, arrays):
    """A loop over samples calling the single-sample kernel."""
    names = [a for a, _ in arrays]
    batch_args = ", ".join([n.upper() if n != "p" else "p" for n in names] + ["OUT"])
    call = ", ".join([f"{n.upper()}[s]" if n != "p" else "p" for n in names] + ["OUT[s]"])
    first = names[0].upper()
    return ["", "", "@jit", f"def {name}({batch_args}):",
            f'    """{single} over the rows of (N, dof) arrays."""',
            f"    for s in range({first}.shape[0]):",
            f"        status = {single}({call})",
            "        if status != 0:",
            "            return 4 * s + status",
            "    return 0"]


def generate_model_source(tree, name="robot"):
    """Source of the per-robot module: gravity, bias, inverse/forward dynamics, mass matrix."""
    key = structure_key(tree)
    lines = PRELUDE.format(name=name, key=key).splitlines()
    stats = {}

    for kernel, with_qd, with_qdd, doc in (
            ("gravity_torques", False, False, "g(q)"),
            ("bias_torques", True, False, "h(q, qd)"),
            ("inverse_dynamics", True, True, "M qdd + h")):
        t, arrays, torque = trace_inverse_dynamics(tree, with_qd, with_qdd)
        code, stats[kernel] = _function(kernel, arrays, _vector_outputs(torque), t.trace, doc)
        lines += code + _batch(kernel + "_batch", kernel, arrays)

    t, arrays, mass = trace_mass_matrix(tree)
    code, stats["mass_matrix"] = _function("mass_matrix", arrays, _matrix_outputs(mass), t.trace,
                                           "M(q), composite-body recursion")
    lines += code

    t, arrays, result = trace_forward_dynamics(tree)
    if tree.has_mimic:
        mass, rhs = result
        outputs = _matrix_outputs(mass, "m") + _vector_outputs(rhs)
        tail = ["    return cholesky_solve(m, out)"]
        code, stats["forward_dynamics"] = _function(
            "forward_dynamics", arrays, outputs, t.trace,
            "qdd = M^-1 (tau - h): mimic joints couple hinges, so M and h, then Cholesky",
            tail=tail)
        code.insert(code.index(next(l for l in code if l.startswith("def "))) + 2,
                    f"    m = np.empty(({tree.dof}, {tree.dof}))")
    else:
        code, stats["forward_dynamics"] = _function(
            "forward_dynamics", arrays, _vector_outputs(result), t.trace,
            "qdd, articulated-body recursion")
    lines += code + _batch("forward_dynamics_batch", "forward_dynamics", arrays)
    return "\n".join(lines) + "\n", key, stats


def generate_frame_source(tree, frame_name, name="robot"):
    """Source of the per-frame module: Jacobian and (trees without mimic) task-space inertia."""
    key = frame_key(tree, frame_name)
    lines = PRELUDE.format(name=f"{name}, frame {frame_name}", key=key).splitlines()
    stats = {}
    t, arrays, jacobian = trace_jacobian(tree, frame_name)
    code, stats["jacobian"] = _function("jacobian", arrays, _matrix_outputs(jacobian), t.trace,
                                        f"6 x dof Jacobian of {frame_name}")
    lines += code
    if not tree.has_mimic:
        t, arrays, compliance = trace_task_space_compliance(tree, frame_name)
        outputs = _matrix_outputs(compliance, "c")
        code, stats["task_space_inertia"] = _function(
            "task_space_inertia", arrays, outputs, t.trace,
            f"Lambda of {frame_name}: compliance recursion, then a checked inversion",
            tail=["    return invert_spd_checked(c, out)"])
        code.insert(code.index(next(l for l in code if l.startswith("def "))) + 2,
                    "    c = np.empty((6, 6))")
        lines += code
    return "\n".join(lines) + "\n", key, stats
