"""The generic compiled recursions (``generic.c``): one module for every robot.

The module is compiled once per machine (its name hashes its C source and the
toolchain, so nothing built elsewhere is loaded) and shared by every model of
a process; ``scripts/setup.sh`` builds it in advance.  A :class:`CompiledTree`
packs one :class:`~soa_dynamics_ros.multibody.tree.BodyTree` (structure only:
inertias and gravity are the parameter vector ``p`` of
:func:`~.tracing.pack_parameters`) into a C-side model object;
:meth:`CompiledTree.function` binds it to a function of the module, which then
has the per-robot kernels' calling convention ``f(q, ..., p)``.
"""
import functools
import hashlib
import pathlib

import numpy as np

from . import build
from ..algorithms.task_space import DEFAULT_RCOND
from ..multibody.joints import JOINT_MODELS, JOINT_MOTIONS
from .c_emission import CONDITION_LIMIT

SOURCE = pathlib.Path(__file__).resolve().parent / "generic.c"
# Sources generic.c includes, one translation unit with it so that -O3 inlines across
# them (their changes must rename the module too).
INCLUDED = (*sorted((SOURCE.parent / "generic").glob("*.c")),
            SOURCE.parent / "generic_derivatives.c")
# Each joint type's code in the module: its motion's index (generic.c's JOINT_<MOTION>).
JOINT_CODES = {name: float(JOINT_MOTIONS.index(model.motion))
               for name, model in JOINT_MODELS.items()}


@functools.cache
def module_name():
    """``soa_generic_<hash>``: of generic.c, what it includes, the defines and the toolchain.

    Once per process (as ``kernels.code_version``): every model's generic module
    lookup asks for it, and the sources do not change under a running process."""
    digest = hashlib.sha256(build.toolchain_id().encode())
    for path in (SOURCE, *INCLUDED, *build.RUNTIME_HEADERS):
        digest.update(path.read_bytes())
    digest.update(_defines().encode())
    return f"soa_generic_{digest.hexdigest()[:16]}"


def _defines():
    """The constants generic.c takes from Python: thresholds and the joint motions' codes."""
    motions = "".join(f"#define JOINT_{motion.upper()} {code}\n"
                      for code, motion in enumerate(JOINT_MOTIONS))
    return (f"#define SOA_CONDITION_LIMIT {CONDITION_LIMIT!r}\n"
            f"#define SOA_RANK_RCOND {DEFAULT_RCOND!r}\n" + motions)


def module_source(name):
    """The C source compiled as module ``name``: defines, then generic.c (found by -I)."""
    return f"#define SOA_GENERIC_MODULE {name}\n{_defines()}#include \"{SOURCE.name}\"\n"


def _flat(values):
    return np.ascontiguousarray(np.asarray(values, dtype=float).ravel())


class CompiledTree:
    """One tree (and a coordinate map of its selected joints) as a model of ``module``."""

    # The module's status for input it does not take (runtime.h SOA_BAD_INPUT).
    BAD_INPUT = 1

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
        types = [float(JOINT_MOTIONS.index("none"))] + [JOINT_CODES[model.name]
                                                        for model in tree.joint_model[1:]]
        self.rate_dof = rates.dof
        self.couples_hinges = rates.couples_hinges
        self.model = module.make_model(
            _flat([tree.nb, tree.dof, rates.dof, len(frames), rates.couples_hinges]),
            _flat(tree.parent), _flat(types), _flat(np.array(tree.hinge_axis)),
            _flat(np.array(tree.hinge_rotation)), _flat(np.array(tree.hinge_translation)),
            _flat(tree.hinge_map), _flat(positions.master), _flat(positions.multiplier),
            _flat(positions.offset), _flat(rates.master), _flat(rates.multiplier),
            _flat([frame.body for frame in frames]),
            _flat(np.array([frame.rotation for frame in frames])),
            _flat(np.array([frame.translation for frame in frames])), self.frame_index)

    def restricted(self, rate_coordinates):
        """The same tree with rates and forces on a joint selection's coordinate map."""
        return CompiledTree(self.module, self.tree, rate_coordinates)

    def function(self, name, *bound):
        """Module function ``name`` with this model (and ``bound``) as its first arguments."""
        return functools.partial(getattr(self.module, name), self.model, *bound)

    def task_space_inertia(self, frame_names, rows, q, damping, info, params):
        """``(Lambda, Lambda^-1 = J M^-1 J^T, condition number, rank)`` of unit wrenches
        along ``rows`` (a slice of ``[f; t]``) at each frame, ``damping`` (a float >= 0)
        added to Lambda^-1 before inverting (dense ``J G (G^T M G)^-1 G^T J^T`` when mimic
        joints couple hinges); None when the compiled code declines (bad input, a singular
        mass matrix, a rank the numpy path must decide: below full rank without damping,
        or within round-off of the threshold).  Without ``info`` the condition number and
        rank may be left out (NaN, -1): Lambda then comes from a Cholesky factor where that
        needs no rank decision."""
        frames = np.array([self.frame_index[name] for name in frame_names], dtype=float)
        width = rows.stop - rows.start
        # info as an exact bool: the module runs no Python code (a __bool__) once it holds
        # the arrays (a conditional, not a call of bool(), which costs more per call)
        packed = self.module.task_space_inertia(self.model, frames, rows.start, width, q,
                                                damping, True if info else False, params)
        if type(packed) is not np.ndarray:
            return None
        n = len(frames) * width
        square = n * n
        return (packed[:square].reshape(n, n), packed[square:2 * square].reshape(n, n),
                float(packed[-2]), int(packed[-1]))

    def hybrid_dynamics(self, constraints, q, qd, tau, wrenches, params):
        """``(qdd, constraint torques, nu, {frame name: classical acceleration}, rank,
        dropped directions (m x (m - rank)), [rows of nu of each constraint (slices)])`` of
        the constraints ``alpha_k^T a_k = beta_k`` (``constraints``: a list or tuple of
        ``(frame name, alpha, beta)``, float64 arrays 6 x m_k and m_k; dense Gauss least
        constraint with ``G^T M G`` where mimic joints couple hinges), dependent directions
        dropped as :func:`~soa_dynamics_ros.model.constrained._truncated_solve` drops them
        at ``DEFAULT_RCOND``; or the module's status when it declines: :attr:`BAD_INPUT`
        for anything else than those arrays or for bad values (unknown names, NaN, wrong
        lengths), 2 a singular mass matrix, 3 a rank in doubt (an eigenvalue of the
        compliance within round-off of the threshold, or no positive one: the numpy path
        decides the rank)."""
        qd = np.zeros(self.rate_dof) if qd is None else qd
        tau = np.zeros(self.rate_dof) if tau is None else tau
        if wrenches is None or (type(wrenches) is dict and not wrenches):
            return self.module.hybrid_dynamics(self.model, q, qd, tau, constraints, params)
        return self.module.hybrid_dynamics_wrenches(self.model, q, qd, tau, constraints,
                                                    wrenches, params)
