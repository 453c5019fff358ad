"""What :class:`~.robot_model.RobotModel` answers when a compiled kernel declined.

Kernels take float64 C-contiguous, aligned, native-order arrays only and check
lengths and NaN themselves, and return a status instead of an answer for anything
else.  Status 1 (lists, other dtypes, strided, unaligned or byte-swapped views)
gets one retry with arguments the validator converted; no kernel (None), NaN or a
singular hinge (2) go to the numpy path (:mod:`.reference`), which answers or
raises the error that names the problem.  None of this is on the warm path: the
model's methods call their kernels inline and come here only with a status.
"""
import numpy as np

from ..errors import InvalidInputError
from ..validation import as_vector, readable

_NDARRAY = np.ndarray


def fallback(dof, params, kernel, status, vectors, reference):
    """The answer when ``kernel`` declined ``vectors`` (each of length ``dof``) with
    ``status``: the kernel's on converted arguments, else ``reference(*vectors)``."""
    if status == 1:
        try:
            converted = [readable(as_vector("q", value, dof)) for value in vectors]
        except InvalidInputError:
            converted = None
        if converted is not None:
            result = kernel(*converted, params)
            if type(result) in (_NDARRAY, float):     # (the energies are floats)
                return result
    return reference(*vectors)


def wrenched_fallback(dof, params, function, result, vectors, wrenches, reference):
    """The answer when wrenched ``function`` (a generic one, or _no_kernel) returned
    ``result`` for ``vectors`` and ``wrenches``: itself, or what :func:`fallback` makes
    of its status (``reference`` takes the wrenches last)."""
    if type(result) is _NDARRAY:
        return result
    return fallback(dof, params,
                    lambda *arguments: function(*arguments[:-1], wrenches, arguments[-1]),
                    result, vectors, lambda *vectors: reference(*vectors, wrenches))


def run_batch(kernel, params, lock, single, arrays, dof):
    """One call of batch ``kernel`` over validated sample ``arrays``; the per-sample loop
    of ``single`` where there is no kernel (None).

    A failing sample (only a singular hinge can fail after validation) is re-run
    first, alone, which raises its error.  The loop holds ``lock`` (the model's
    parameters lock): every row from one payload and gravity state.
    """
    count = len(arrays[0])
    if kernel is not None:
        result = kernel(*arrays, params)
        if type(result) is _NDARRAY:
            return result
        single(*(array[result // 4] for array in arrays))
    with lock:
        return np.array([single(*sample) for sample in zip(*arrays)]).reshape((count, dof))
