"""What generated kernel modules import: the compiler decorator and small dense helpers.

With numba importable, ``jit`` compiles with an on-disk cache (``cache=True``:
numba stores machine code beside the generated module, which is named by a
hash of the model structure, so a new process loads instead of compiling).
Without numba the helpers stay Python and the generated code runs as Python.
"""
import math

import numpy as np

try:
    import numba
except ImportError:  # pragma: no cover - numba is in requirements-dev.txt
    numba = None


def python_jit(function):
    return function


if numba is not None:
    # error_model='numpy': a division by zero gives inf instead of raising, so no
    # exception checks in the straight-line code (the guards report singular hinges).
    def jit(function):
        return numba.njit(cache=True, nogil=True, error_model="numpy")(function)
else:  # pragma: no cover
    jit = python_jit

# Lambda^-1 with a 1-norm condition number above this may have a 2-norm
# condition number near the reference's rank threshold (1e10, and
# kappa_2 <= 6 kappa_1 for 6x6): the caller then uses the reference path.
TASK_SPACE_CONDITION_LIMIT = 1e9


def cholesky_solve(m, rhs):
    """Solve ``m x = rhs`` in place of ``rhs`` for symmetric positive definite ``m``
    (its lower Cholesky factor overwrites ``m``).  Returns 2 when ``m`` is not
    positive definite (the reference path then raises SingularDynamicsError)."""
    return cholesky_solve_factored(m, rhs, True)


def cholesky_solve_factored(m, rhs, factor):
    """Like :func:`cholesky_solve`; factors ``m`` first only when ``factor`` is true."""
    n = m.shape[0]
    if factor:
        for j in range(n):
            d = m[j, j]
            for k in range(j):
                d -= m[j, k] * m[j, k]
            if not d > 0.0:
                return 2
            d = math.sqrt(d)
            m[j, j] = d
            for i in range(j + 1, n):
                s = m[i, j]
                for k in range(j):
                    s -= m[i, k] * m[j, k]
                m[i, j] = s / d
    for i in range(n):
        s = rhs[i]
        for k in range(i):
            s -= m[i, k] * rhs[k]
        rhs[i] = s / m[i, i]
    for i in range(n - 1, -1, -1):
        s = rhs[i]
        for k in range(i + 1, n):
            s -= m[k, i] * rhs[k]
        rhs[i] = s / m[i, i]
    return 0


def one_norm(a):
    """Largest absolute column sum of a square matrix."""
    n = a.shape[0]
    norm = 0.0
    for j in range(n):
        column = 0.0
        for i in range(n):
            column += abs(a[i, j])
        norm = max(norm, column)
    return norm


def invert_spd_checked(c, out):
    """``out = c^-1`` for symmetric positive definite ``c``; 3 when ill-conditioned."""
    n = c.shape[0]
    norm = one_norm(c)
    if not norm > 0.0:
        return 3
    factor = c.copy()
    rhs = np.empty(n)
    for j in range(n):
        for i in range(n):
            rhs[i] = 1.0 if i == j else 0.0
        if cholesky_solve_factored(factor, rhs, j == 0) != 0:
            return 3
        for i in range(n):
            out[i, j] = rhs[i]
    if not norm * one_norm(out) < TASK_SPACE_CONDITION_LIMIT:
        return 3
    for i in range(n):
        for j in range(i + 1, n):
            value = 0.5 * (out[i, j] + out[j, i])
            out[i, j] = value
            out[j, i] = value
    return 0


# Python versions for the "python" backend (generated code run without numba).
PYTHON_HELPERS = {"jit": python_jit, "cholesky_solve": cholesky_solve,
                  "invert_spd_checked": invert_spd_checked}

if numba is not None:
    one_norm = jit(one_norm)
    cholesky_solve_factored = jit(cholesky_solve_factored)
    cholesky_solve = jit(cholesky_solve)
    invert_spd_checked = jit(invert_spd_checked)
