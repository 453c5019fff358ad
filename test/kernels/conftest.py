"""The one place where this folder's tracer tests call library internals (the body tree,
the tracing, parameter packing, the generator, the compiled kernels, their build), so
that a change of their signatures is adapted here alone."""
import math
import os
import subprocess

import numpy as np
import pytest

from soa_dynamics_ros.description.urdf import parse_urdf
from soa_dynamics_ros.kernels import Kernels, build, cache_dir, generator, generic, tracing
from soa_dynamics_ros.kernels.symbolic import ADD, COS, DIV, INPUT, MUL, NEG, SIN, SUB, Sym
from soa_dynamics_ros.multibody.tree import BodyTree

GRAVITY = (0.0, 0.0, -9.81)
_OPERATIONS = {ADD: lambda a, b: a + b, SUB: lambda a, b: a - b, MUL: lambda a, b: a * b,
               DIV: lambda a, b: a / b, NEG: lambda a, _: -a,
               SIN: lambda a, _: math.sin(a), COS: lambda a, _: math.cos(a)}


def evaluate(trace, outputs, inputs):
    """Values of traced ``outputs`` (Syms or constants) for ``inputs`` ({array name: values}),
    interpreting the recorded operations one by one: an evaluator independent of the C
    printer and of numpy."""
    values = []
    for op, a, b in trace.ops:
        if op == INPUT:
            values.append(float(inputs[a][b]))
            continue
        operand = lambda x: values[x] if isinstance(x, int) else x  # noqa: E731
        values.append(_OPERATIONS[op](operand(a), None if b is None else operand(b)))
    flat = [values[x.i] if isinstance(x, Sym) else float(x) for x in np.ravel(outputs)]
    return np.reshape(flat, np.shape(outputs))


class TracedRobot:
    """One robot's tree, its traced kernels (joint space, mimic map folded in) and their
    compiled versions."""

    def __init__(self, urdf_xml):
        self.tree = BodyTree(parse_urdf(urdf_xml))
        self.joint_names = self.tree.joint_names
        self.dof = self.tree.dof
        self._compiled = None

    def parameters(self, gravity=GRAVITY):
        return tracing.pack_parameters(self.tree, gravity)

    def traced_inverse_dynamics(self):
        """``(trace, outputs)``: the inverse dynamics traced with inputs q, qd, qdd, p."""
        traced, _, torque = tracing.trace_inverse_dynamics(self.tree)
        return traced.trace, torque

    def traced_forward_dynamics_ways(self, links=()):
        """``{method: (trace, qdd)}``: each way the generator may trace this robot's
        forward dynamics (no mimic joints), not only the one it keeps; ``links``: with
        wrenches on these (input ``w``, 6 values per link)."""
        return {method: (traced.trace, qdd) for _, traced, qdd, method
                in tracing.forward_dynamics_traces(self.tree, links)}

    def traced_mass_matrix(self):
        traced, _, mass = tracing.trace_mass_matrix(self.tree)
        return traced.trace, mass

    def traced_mass_matrix_ways(self):
        """``[(trace, M)]``: each way the generator may trace M, not only the one it keeps."""
        return [(traced.trace, mass) for _, traced, _, mass
                in tracing.mass_matrix_traces(self.tree)]

    def compiled(self, kernel):
        """The module's function ``kernel``, or None where no module is generated; also
        the single call of a batch-only module (generator.batch_only), which the API
        leaves to the generic module but its batch's rows are held to."""
        if self._compiled is None:
            self._compiled = Kernels(self.tree)
        module = self._compiled._module(kernel.removesuffix("_batch"), None)
        return None if module is None else getattr(module, kernel, None)

    def generated_source(self, kernel):
        """The C source of ``kernel``'s module, as the generator writes it."""
        source, _ = generator.generate_source(self.tree, kernel, f"soa_kernels_{kernel}_test")
        return source


@pytest.fixture(scope="session")
def traced_robot():
    """``traced_robot(urdf_xml)``: a :class:`TracedRobot`."""
    return TracedRobot


@pytest.fixture(scope="session")
def evaluate_trace():
    """:func:`evaluate`: ``evaluate_trace(trace, outputs, inputs)``."""
    return evaluate


def _address_sanitizer_runtime():
    """The compiler's AddressSanitizer runtime (libasan.so), or None."""
    if build.toolchain_problem() is not None:
        return None
    found = subprocess.run([build.compiler(), "-print-file-name=libasan.so"],
                           capture_output=True, text=True, timeout=60).stdout.strip()
    return os.path.realpath(found) if os.path.isabs(found) and os.path.exists(found) else None


@pytest.fixture(scope="session")
def address_sanitized_generic_module():
    """``(libasan path, module path, module name)``: the generic module built with
    AddressSanitizer, once per source and toolchain (kept in the kernel cache's asan/
    folder); skips where the compiler has no AddressSanitizer runtime.  A process loads it
    with the runtime preloaded (LD_PRELOAD)."""
    library = _address_sanitizer_runtime()
    if library is None:
        pytest.skip("the C compiler has no AddressSanitizer runtime (libasan.so)")
    name = f"{generic.module_name()}_asan"
    directory = cache_dir() / "asan"
    path = directory / f"{name}{build.EXTENSION}"
    if path.exists():
        return library, path, name
    directory.mkdir(parents=True, exist_ok=True)
    source = directory / f".{name}.{os.getpid()}.c"
    partial = directory / f".{name}.{os.getpid()}{build.EXTENSION}"
    defines, libraries = build.vector_math()
    source.write_text(generic.module_source(name))
    command = [build.compiler(), "-O1", "-g", "-fsanitize=address", "-fno-omit-frame-pointer",
               "-march=native", "-fno-math-errno", "-std=gnu11", "-fPIC", "-shared", *defines,
               f"-I{build.RUNTIME_DIR}", f"-I{build.python_include()}",
               f"-I{np.get_include()}", str(source), "-o", str(partial), *libraries]
    try:
        compiled = subprocess.run(command, capture_output=True, text=True, timeout=900)
        assert compiled.returncode == 0, compiled.stderr[-3000:]
        os.replace(partial, path)
    finally:
        source.unlink(missing_ok=True)
        partial.unlink(missing_ok=True)
    return library, path, name
