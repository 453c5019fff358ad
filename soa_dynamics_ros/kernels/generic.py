"""The generic compiled recursions (``generic.c``): one module for every robot.

The module is compiled once per machine (its name hashes its C source and the
toolchain, so nothing built elsewhere is loaded) and shared by every model of
a process; ``scripts/setup.sh`` builds it in advance.  A :class:`CompiledTree`
packs one :class:`~soa_dynamics_ros.multibody.tree.BodyTree` (structure only:
inertias and gravity are the parameter vector ``p`` of
:func:`~.generator.pack_parameters`) into a C-side model object;
:meth:`CompiledTree.function` binds it to a function of the module, which then
has the per-robot kernels' calling convention ``f(q, ..., p)``.
"""
import functools
import hashlib
import pathlib

import numpy as np

from . import build
from .generator import CONDITION_LIMIT

SOURCE = pathlib.Path(__file__).resolve().parent / "generic.c"
# Sources generic.c includes (their changes must rename the module too).
INCLUDED = (SOURCE.parent / "generic_derivatives.c",)
_JOINT_TYPES = {"revolute": 1.0, "continuous": 1.0, "prismatic": 2.0, "fixed": 0.0}


def module_name():
    """``soa_generic_<hash>``: of generic.c, runtime.h, the defines and the toolchain."""
    digest = hashlib.sha256(build.toolchain_id().encode())
    for path in (SOURCE, *INCLUDED, build.RUNTIME_DIR / "runtime.h"):
        digest.update(path.read_bytes())
    digest.update(repr(CONDITION_LIMIT).encode())
    return f"soa_generic_{digest.hexdigest()[:16]}"


def module_source(name):
    """The C source compiled as module ``name``: defines, then generic.c (found by -I)."""
    return (f"#define SOA_GENERIC_MODULE {name}\n"
            f"#define SOA_CONDITION_LIMIT {CONDITION_LIMIT!r}\n"
            f'#include "{SOURCE.name}"\n')


def _flat(values):
    return np.ascontiguousarray(np.asarray(values, dtype=float).ravel())


class CompiledTree:
    """One tree (and a coordinate map of its selected joints) as a model of ``module``."""

    def __init__(self, module, tree, rate_coordinates=None):
        rates = tree.coordinates if rate_coordinates is None else rate_coordinates
        self.module = module
        self.tree = tree
        self.frame_names = list(tree.frames)
        self.frame_index = {name: k for k, name in enumerate(self.frame_names)}
        # Each body's own link frame: its pose is the body's placement.
        self.body_frames = np.array([self.frame_index[link] for link in tree.body_link])
        frames = list(tree.frames.values())
        positions = tree.coordinates
        types = [0.0] + [_JOINT_TYPES[model.name] for model in tree.joint_model[1:]]
        self.rate_dof = rates.dof
        self.model = module.make_model(
            _flat([tree.nb, tree.dof, rates.dof, len(frames), rates.couples_hinges]),
            _flat(tree.parent), _flat(types), _flat(np.array(tree.hinge_axis)),
            _flat(np.array(tree.hinge_rotation)), _flat(np.array(tree.hinge_translation)),
            _flat(tree.hinge_map), _flat(positions.master), _flat(positions.multiplier),
            _flat(positions.offset), _flat(rates.master), _flat(rates.multiplier),
            _flat([frame.body for frame in frames]),
            _flat(np.array([frame.rotation for frame in frames])),
            _flat(np.array([frame.translation for frame in frames])))

    def restricted(self, rate_coordinates):
        """The same tree with rates and forces on a joint selection's coordinate map."""
        return CompiledTree(self.module, self.tree, rate_coordinates)

    def function(self, name, *bound):
        """Module function ``name`` with this model (and ``bound``) as its first arguments."""
        return functools.partial(getattr(self.module, name), self.model, *bound)

    def wrench_arrays(self, wrenches):
        """``(frame indices, (k, 6) wrenches)`` of a ``{link: wrench}`` dict, or None when
        it does not convert (an unknown link, a malformed wrench): the numpy path then
        names the problem."""
        try:
            frames = np.array([self.frame_index[link] for link in wrenches], dtype=float)
            values = np.array(list(wrenches.values()))
        except (LookupError, TypeError, ValueError):
            return None
        # Only real numbers convert silently: complex, huge integers (object) and text do not.
        if values.shape != (len(frames), 6) or values.dtype.kind not in "biuf":
            return None
        return frames, np.ascontiguousarray(values, dtype=float)

    def task_space_compliance(self, frame_names, rows, q, params):
        """``J M^-1 J^T`` of unit wrenches along ``rows`` (a slice of ``[f; t]``) at each
        frame, or None when the compiled code declines (mimic joints, bad input)."""
        frames = np.array([self.frame_index[name] for name in frame_names], dtype=float)
        compliance = self.module.task_space_compliance(self.model, frames, rows.start,
                                                       rows.stop - rows.start, q, params)
        return compliance if type(compliance) is np.ndarray else None

    def hybrid_dynamics(self, frame_names, blocks, beta, q, qd, tau, wrenches, params):
        """``(qdd, constraint torques, nu, frame accelerations)`` of the constraints
        ``alpha_k^T a_k = beta`` (``blocks``: the alphas, 6 x m_k), or None when the
        compiled code declines (mimic joints, bad input, a compliance not clearly of full
        rank: the numpy path decides the rank)."""
        qd = np.zeros(self.rate_dof) if qd is None else qd
        tau = np.zeros(self.rate_dof) if tau is None else tau
        frames = np.array([self.frame_index[name] for name in frame_names], dtype=float)
        widths = np.array([block.shape[1] for block in blocks], dtype=float)
        alpha = np.ascontiguousarray(np.hstack(blocks), dtype=float)
        arguments = (q, qd, tau, frames, widths, alpha, np.ascontiguousarray(beta, dtype=float))
        if wrenches is None or (type(wrenches) is dict and not wrenches):
            result = self.module.hybrid_dynamics(self.model, *arguments, params)
        else:
            arrays = self.wrench_arrays(wrenches) if type(wrenches) is dict else None
            if arrays is None:
                return None
            result = self.module.hybrid_dynamics_wrenches(self.model, *arguments, *arrays,
                                                          params)
        if type(result) is not np.ndarray:
            return None
        n, m = self.rate_dof, alpha.shape[1]
        return result[:n], result[n:2 * n], result[2 * n:2 * n + m], result[2 * n + m:].reshape(
            len(frames), 6)
