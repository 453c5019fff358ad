"""Symbolic scalars that record the arithmetic of the reference recursions.

The recursions in :mod:`soa_dynamics_ros.algorithms` are written with numpy
arrays; given object arrays of :class:`Sym` values they run unchanged and
every scalar operation lands in a :class:`Trace` instead of being computed.
Constants stay plain Python floats, so operations on known values are
evaluated at trace time and zeros and ones fold away (``0 * x -> 0``,
``1 * x -> x``, ``x + 0 -> x``).  Identical operations are recorded once
(hash-consing: common subexpressions are shared).  Every folding rule is exact
in IEEE arithmetic for finite inputs, and the operations kept are the
reference's own, in its order, so the generated code agrees with the numpy
path to round-off.

Data-dependent branches are not allowed in the traced code with one
exception: ``d > threshold`` (the singular-hinge test of the articulated-body
gather) returns True and records a *guard* the generated code checks at run time.
"""
import math

import numpy as np

_NUMBER = (int, float, np.integer, np.floating)

ADD, SUB, MUL, DIV, NEG, SIN, COS, INPUT = "add", "sub", "mul", "div", "neg", "sin", "cos", "in"


class Trace:
    """The recorded operations: a DAG in topological order."""

    def __init__(self):
        self.ops = []          # (op, a, b): a/b are node ids (int) or float constants
        self.index = {}        # hash-consing
        self.guards = []       # (value, threshold, code): value > threshold must hold
        self.inputs = {}       # node id -> (array name, index)

    def node(self, op, a, b=None):
        key = (op, a, b)
        found = self.index.get(key)
        if found is None:
            found = len(self.ops)
            self.ops.append(key)
            self.index[key] = found
        return Sym(self, found)

    def input(self, name, index):
        sym = self.node(INPUT, name, index)
        self.inputs[sym.i] = (name, index)
        return sym

    def inputs_array(self, name, count):
        array = np.empty(count, dtype=object)
        for k in range(count):
            array[k] = self.input(name, k)
        return array


def _value(x):
    """A Sym's node id, or a constant as float (the key used in the trace)."""
    return x.i if isinstance(x, Sym) else float(x)


class Sym:
    """One scalar of the generated code."""
    __slots__ = ("trace", "i")

    def __init__(self, trace, i):
        self.trace = trace
        self.i = i

    # Node kind helpers -----------------------------------------------------------
    def _neg_of(self):
        op, a, _ = self.trace.ops[self.i]
        return Sym(self.trace, a) if op == NEG else None

    # Arithmetic ------------------------------------------------------------------
    def __add__(self, other):
        if isinstance(other, Sym):
            if other.trace is not self.trace:
                return NotImplemented
            negated = other._neg_of()
            if negated is not None:          # a + (-b) == a - b exactly
                return self.trace.node(SUB, self.i, negated.i)
            a, b = sorted((self.i, other.i))  # IEEE addition commutes exactly
            return self.trace.node(ADD, a, b)
        if isinstance(other, _NUMBER):
            if other == 0:
                return self
            return self.trace.node(ADD, self.i, float(other))
        return NotImplemented

    __radd__ = __add__

    def __sub__(self, other):
        if isinstance(other, Sym):
            if other.i == self.i:
                return 0.0
            negated = other._neg_of()
            if negated is not None:
                a, b = sorted((self.i, negated.i))
                return self.trace.node(ADD, a, b)
            return self.trace.node(SUB, self.i, other.i)
        if isinstance(other, _NUMBER):
            if other == 0:
                return self
            return self.trace.node(SUB, self.i, float(other))
        return NotImplemented

    def __rsub__(self, other):
        if isinstance(other, _NUMBER):
            if other == 0:
                return -self
            return self.trace.node(SUB, float(other), self.i)
        return NotImplemented

    def __mul__(self, other):
        if isinstance(other, Sym):
            a, b = sorted((self.i, other.i))
            return self.trace.node(MUL, a, b)
        if isinstance(other, _NUMBER):
            if other == 0:
                return 0.0
            if other == 1:
                return self
            if other == -1:
                return -self
            return self.trace.node(MUL, self.i, float(other))
        return NotImplemented

    __rmul__ = __mul__

    def __truediv__(self, other):
        if isinstance(other, Sym):
            return self.trace.node(DIV, self.i, other.i)
        if isinstance(other, _NUMBER):
            if other == 1:
                return self
            return self.trace.node(DIV, self.i, float(other))
        return NotImplemented

    def __rtruediv__(self, other):
        if isinstance(other, _NUMBER):
            if other == 0:
                return 0.0
            return self.trace.node(DIV, float(other), self.i)
        return NotImplemented

    def __neg__(self):
        negated = self._neg_of()
        if negated is not None:
            return negated
        return self.trace.node(NEG, self.i)

    def __pos__(self):
        return self

    # numpy calls these for np.sin / np.cos on object arrays
    def sin(self):
        return self.trace.node(SIN, self.i)

    def cos(self):
        return self.trace.node(COS, self.i)

    # The only comparison the recursions make on computed values.
    def __gt__(self, threshold):
        self.trace.guards.append((self.i, _value(threshold)))
        return True

    def __bool__(self):
        raise TypeError("a data-dependent branch cannot be traced into a kernel")

    def __repr__(self):
        return f"Sym({self.i}: {self.trace.ops[self.i]})"


def fold(value):
    """Scalar result of a trace: a Sym or a float constant."""
    if isinstance(value, Sym):
        return value
    return float(value)


def is_finite_constant(value):
    return not isinstance(value, Sym) and math.isfinite(value)
