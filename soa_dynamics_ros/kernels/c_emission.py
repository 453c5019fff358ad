"""Print traced arithmetic (:mod:`.tracing`) as the C source of a kernel extension module.

:class:`ModuleSource` assembles one module: per kernel a core (straight-line C of
the live nodes of its trace, inputs checked before any arithmetic, guards
returning the singular status), its Python wrapper (``runtime.h``'s calling
helpers) and, for a batch, a copy of the core over ``SOA_LANES`` samples at once
with the number of samples worth a thread (:func:`samples_per_thread`).  Which
kernels exist and what they trace is :mod:`.generator`'s choice.
"""
import numpy as np

from ..algorithms.task_space import DEFAULT_RCOND
from ..validation import MAX_MAGNITUDE
from .symbolic import ADD, COS, DIV, INPUT, MUL, NEG, SIN, SUB, Sym
from .tracing import live_nodes

# The task-space kernels decline (status 3) a compliance whose 1-norm condition
# number reaches this: its 2-norm condition (at most 6 times larger for 6x6)
# may then be near the reference's rank threshold 1 / DEFAULT_RCOND, which the
# reference path decides on.
CONDITION_LIMIT = 1.0 / (10.0 * DEFAULT_RCOND)


# A thread of a batch should do at least this many traced operations: such a share of
# straight-line code takes several times what starting and joining its thread costs
# (pthread_create + pthread_join; docs/performance.md, "Design measurements").
OPERATIONS_PER_THREAD = 1_500_000


def samples_per_thread(operations):
    """The fewest samples of a batch worth a thread of their own (runtime.h soa_workers)
    for a core of ``operations`` traced operations: OPERATIONS_PER_THREAD worth, within
    [32, 512].

    One rule for every batch kernel.  Arms' dynamics (300-2,800 operations) get the 512
    that runtime.h once fixed for all batches, as before; their derivatives
    (4,000-8,600 operations) 170-360, so a planner's batch of a few
    hundred samples already uses two cores.  The bounds: below 32 samples a share is a
    few blocks of lanes; above 512 (the smallest robots) a split would wait for batches
    larger than their trajectories.
    """
    return int(min(max(OPERATIONS_PER_THREAD // max(operations, 1), 32), 512))


_BINARY = {ADD: "+", SUB: "-", MUL: "*", DIV: "/"}


def _constant(value):
    """A float as a C literal (negative ones parenthesized so "a - -1.0" never occurs)."""
    value = float(value)
    if not np.isfinite(value):
        return "NAN" if np.isnan(value) else ("INFINITY" if value > 0 else "(-INFINITY)")
    text = repr(value)
    return f"({text})" if value < 0 else text


def c_comment(text):
    """``text`` safe inside a C comment (link names come from the URDF)."""
    return text.replace("*/", "* /")


def c_string(text):
    """``text`` as a C string literal (octal escapes: they never swallow the next character)."""
    safe = set(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 _-+.,:;()^=/<>")
    return '"' + "".join(chr(b) if b in safe else f"\\{b:03o}" for b in text.encode()) + '"'


def _operand(x):
    return f"t{x}" if isinstance(x, int) else _constant(x)


def _body(trace, outputs, indent="    ", strides=None):
    """C statements computing every live node, then ``outputs``: a list of ((array,
    index), value).

    Every node is a ``const double`` of its own; guards (``value > threshold``
    must hold, else status 2) follow the last node they read.  An input is read
    just before its first use and an output stored as soon as it is known (after
    the last guard), so neither stays live across the kernel: on iCub's M that
    took a sixth of the moves to and from memory and measurably less time
    (docs/performance.md, "Design measurements").  ``strides``
    (``{array: C expression}``, every output array's): the same arithmetic on
    ``SOA_LANES`` consecutive samples at once (see ``runtime.h``): nodes that
    read a sample are ``soa_vd`` vectors, nodes of the parameters alone stay
    ``double`` (computed once per block), inputs are gathered from the samples'
    rows and outputs scattered to theirs, lane l's ``stride * l`` doubles after
    lane 0's.
    """
    lanes = strides is not None
    ops = trace.ops
    live = live_nodes(trace, outputs)
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


def core_source(name, arrays, outputs, trace, doc, workspace=(), solve=None, prelude=()):
    """The C lines of a core ``static int {name}_core(inputs, p, out)`` computing
    ``outputs`` (runtime.h's convention; :meth:`ModuleSource.kernel` says what the
    arguments are); with its operation counts ``{label: count}`` and their text."""
    body, counts = _body(trace, outputs)
    stats = {label: counts.get(op, 0) for op, label in (
        (MUL, "mul"), (ADD, "add"), (SUB, "sub"), (DIV, "div"), (NEG, "neg"), (SIN, "sin"),
        (COS, "cos"))}
    vectors = [(a, size) for a, size in arrays if a != "p"]
    counted = ", ".join(f"{count} {label}" for label, count in stats.items())
    lines = ["", f"/* {c_comment(doc)} ({counted}) */",
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
    return lines + ["}"], stats, counted


# Doubles of a core's workspace per sample up to which its lanes core keeps a copy per lane
# on the stack: at 8 lanes 256 KB, well within the 8 MB of a glibc thread's default (the
# batch threads', runtime.h soa_in_parallel, and Python's).  The forward dynamics
# derivatives' 4 n^2 (a 7-joint arm: 196; MAX_TRACED_OPERATIONS keeps n small), a mimic
# robot's forward dynamics' n^2 (Talos, 32 joints: 1,024; a 64-joint one would be left
# without lanes).
MAX_LANES_WORKSPACE = 4096


class ModuleSource:
    """The C source of one extension module: kernel cores, their Python wrappers, the init."""

    def __init__(self, module_name, title, key, dof):
        self.module_name = module_name
        self.dof = dof
        self.lines = [f"/* Kernels generated by soa_dynamics_ros.kernels for {c_comment(title)}.",
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
        lines, stats, counted = core_source(name, arrays, outputs, trace, doc, workspace,
                                            solve, prelude)
        self.stats[name] = stats
        vectors = [(a, size) for a, size in arrays if a != "p"]
        self.lines += lines
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
                 f'{c_string(doc)}}},' for name, doc in self.methods]
        keys = []
        if self._links:       # interned once: the dict lookups then compare pointers
            keys = [f"    static const char *const links[] = "
                    f"{{{', '.join(c_string(link) for link in self._links)}}};",
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
