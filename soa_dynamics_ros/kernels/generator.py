"""The kernel catalogue: which compiled kernels a robot gets, how they are called, and
the C source of each.

:mod:`.tracing` runs the reference recursions on symbolic scalars and records their
arithmetic; :mod:`.c_emission` prints it as C.  This module names the kernels
(:data:`MODEL_KERNELS`, :data:`DERIVATIVE_KERNELS`, :data:`FRAME_KERNELS`,
:data:`WRENCHED_KERNELS`), caps their size (:func:`exists`, :func:`batch_only`),
names their modules by the robot's structure (:func:`kernel_key`) and puts one
module's source together (:func:`generate_source`): one extension module per kernel
(per robot, and per frame for the task-space kernels), built by :mod:`.build`,
so a first answer waits only for the kernel it needs and
:meth:`~soa_dynamics_ros.kernels.Kernels.prepare` compiles them in parallel.

Calling convention of every kernel, as Python sees it::

    result = kernel(q, [qd, [qdd | tau,]] p)

* ``q``, ``qd``, ``qdd``, ``tau``: generalized (independent-joint) float64
  C-contiguous vectors; the mimic map ``q_hinge = G q + o`` and
  ``tau = G^T tau_hinge`` are folded in.
* ``p``: the packed model parameters, ``[g (3), singular threshold, then per
  moving body its ten inertia parameters]`` (see :func:`.tracing.pack_parameters` and
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
one by one; large batches are split over the CPUs (:func:`.c_emission.samples_per_thread`).
"""
import hashlib

import numpy as np

from .c_emission import ModuleSource
from .tracing import (FRAME_MOTIONS, folded_tree_parents, matrix_outputs, parameter_count,
                      trace_coriolis_matrix, trace_coriolis_transpose_product,
                      trace_forward_dynamics, trace_forward_dynamics_derivatives,
                      trace_frame_motion, trace_frame_pose, trace_gravity_derivatives,
                      trace_inverse_dynamics, trace_inverse_dynamics_derivatives,
                      trace_jacobian, trace_kinetic_energy, trace_mass_matrix,
                      trace_potential_energy, trace_task_space_compliance, vector_outputs)

GENERATOR_VERSION = "3"


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
# 39,000) and ran no faster than the generic module's loops, which then answer
# (docs/performance.md, "Design measurements").  Arms trace 5,000-8,000.
MAX_TRACED_OPERATIONS = 15_000
# The kernels of LANES_CAP_KERNELS are generated up to this size for their lanes batch
# alone (batch_only: above MAX_TRACED_OPERATIONS their single calls stay with the generic
# module): the 19-joint dual-arm robot with mimic grippers (24,200 operations) gains
# several times on its batch; the 32-joint tree (39,200) would gain much less for
# minutes of compile per robot (docs/performance.md, "Design measurements").
MAX_LANES_TRACED_OPERATIONS = 25_000
# Measured for the inverse dynamics derivatives only: the forward ones (whose batch also
# runs lanes) trace 1.5x as many operations and keep MAX_TRACED_OPERATIONS.
LANES_CAP_KERNELS = ("inverse_dynamics_derivatives",)
# The wrenched dynamics kernels, one per link set, are the size of their plain dynamics
# and pay where the derivatives do not: the 32-joint tree's forward dynamics with a
# wrench (35,900 traced operations) compiles in about a minute and a call through the
# API runs clearly fewer instructions than the generic articulated-body pass
# (docs/performance.md, "Design measurements").  This cap keeps 30-40 joint humanoids and trees (Talos:
# 22,200) and leaves larger ones to the generic module.
MAX_WRENCHED_DYNAMICS_OPERATIONS = 40_000
_CAPPED_TRACES = {"inverse_dynamics_derivatives": trace_inverse_dynamics_derivatives,
                  "forward_dynamics_derivatives": trace_forward_dynamics_derivatives,
                  "gravity_derivatives": trace_gravity_derivatives,
                  "inverse_dynamics_wrenches": trace_inverse_dynamics,
                  "forward_dynamics_wrenches": trace_forward_dynamics}
_traced_sizes = {}          # (structure key, kernel) -> operations
# Whether the batches of the derivative kernels run blocks of samples through a lanes
# core: the inverse and forward dynamics derivatives (one copy of M and of the right-hand
# sides per lane, then the solve lane by lane) run several times faster per sample,
# worth the seconds of a background or prepare_kernels() compile; the gravity
# derivatives gain nothing (as for gravity_torques: 660 operations, memory-bound) and
# would double their compile time (docs/performance.md, "Design measurements").
DERIVATIVE_LANES = {"inverse_dynamics_derivatives": True, "forward_dynamics_derivatives": True,
                    "gravity_derivatives": False}


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
    return traced_size(tree, plain) <= cap


def traced_size(tree, kernel):
    """Traced operations of capped ``kernel`` for this tree's structure (traced once)."""
    key = (structure_key(tree), kernel)
    if key not in _traced_sizes:
        _traced_sizes[key] = len(_CAPPED_TRACES[kernel](tree)[0].trace.ops)
    return _traced_sizes[key]


def batch_only(tree, kernel):
    """Whether only the batch of ``kernel``'s module answers, its single calls going to the
    generic module: a trace over MAX_TRACED_OPERATIONS, where a single call runs no faster
    than the generic loops (the dual-arm robot's inverse dynamics derivatives, 24,200
    operations; docs/performance.md, "Design measurements"), but within
    MAX_LANES_TRACED_OPERATIONS, where its lanes batch pays."""
    return kernel in LANES_CAP_KERNELS and (
        MAX_TRACED_OPERATIONS < traced_size(tree, kernel) <= MAX_LANES_TRACED_OPERATIONS)


def kernel_key(tree, kernel, frame=None):
    """Hash naming the module of one kernel (of one frame for the per-frame kernels)."""
    base = structure_key(tree) if frame is None else frame_key(tree, frame)
    return hashlib.sha256(f"{base}|{kernel}".encode()).hexdigest()[:20]


def generate_source(tree, kernel, module_name, name="robot", frame=None):
    """C source of the module of one kernel, with its batch version where it has one.

    Returns ``(source, stats)``; ``stats`` counts the operations of the kernel.
    """
    title = f"robot {name!r}" + ("" if frame is None else f", frame {frame!r}"
                                  if type(frame) is str else f", links {', '.join(frame)}")
    module = ModuleSource(module_name, title, kernel_key(tree, kernel, frame), tree.dof)
    emit_kernel(module, tree, kernel, frame, title)
    return module.source(), module.stats[kernel]


def emit_kernel(module, tree, kernel, frame=None, title="the robot"):
    """Trace ``kernel`` (of ``frame``) and hand it to ``module``'s ``kernel`` and ``batch``
    (:class:`.c_emission.ModuleSource`'s, or an exported library's)."""
    dof = tree.dof
    if kernel in _INVERSE_DYNAMICS:
        with_qd, with_qdd, doc = _INVERSE_DYNAMICS[kernel]
        t, arrays, torque = trace_inverse_dynamics(tree, with_qd, with_qdd)
        module.kernel(kernel, arrays, vector_outputs(torque), t.trace, doc, (dof,))
        # Gravity gains nothing from lanes on arms (memory-bound) and lanes cost
        # compile time; inverse and forward dynamics gain clearly
        # (docs/performance.md, "Design measurements").
        module.batch(kernel + "_batch", kernel, arrays, vectorized=kernel != "gravity_torques")
    elif kernel == "coriolis_transpose_product":
        t, arrays, product = trace_coriolis_transpose_product(tree)
        module.kernel(kernel, arrays, vector_outputs(product), t.trace,
                      "C(q, qd)^T qd, momentum gather", (dof,))
    elif kernel == "mass_matrix":
        t, arrays, mass = trace_mass_matrix(tree)
        module.kernel(kernel, arrays, matrix_outputs(mass), t.trace,
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
            module.kernel(kernel, arrays, matrix_outputs(mass, "m") + vector_outputs(rhs),
                          t.trace, f"qdd = M^-1 (tau - h){wrenched}: mimic joints couple "
                          f"hinges, so {method}, then {factor}", (dof,),
                          workspace=(("m", dof * dof),), solve=solve, prelude=prelude,
                          links=links)
        else:
            module.kernel(kernel, arrays, vector_outputs(answer), t.trace,
                          f"qdd, {method}{wrenched}", (dof,), links=links)
        if not links:
            module.batch(kernel + "_batch", kernel, arrays)
    elif kernel == "inverse_dynamics_wrenches":
        t, arrays, torque = trace_inverse_dynamics(tree, links=frame)
        module.kernel(kernel, arrays, vector_outputs(torque), t.trace,
                      f"M qdd + h - sum J^T w, wrenches on {', '.join(frame)}", (dof,),
                      links=frame)
    elif kernel in ("inverse_dynamics_derivatives", "inverse_dynamics_derivatives_wrenches") \
            and exists(tree, kernel):
        links = frame if kernel in WRENCHED_KERNELS else ()
        t, arrays, (dtau_dq, dtau_dqd) = trace_inverse_dynamics_derivatives(tree, links)
        wrenched = f", wrenches on {', '.join(links)}" if links else ""
        module.kernel(kernel, arrays, matrix_outputs(dtau_dq)
                      + matrix_outputs(dtau_dqd, offset=dof * dof), t.trace,
                      f"(dtau/dq, dtau/dqd), root-axes closed form{wrenched}", (dof, dof),
                      parts=2, links=links)
        if not links:       # (batches take no wrenches)
            module.batch(kernel + "_batch", kernel, arrays, DERIVATIVE_LANES[kernel])
    elif kernel == "forward_dynamics_derivatives" and exists(tree, kernel):
        t, arrays, (dtau_dq, dtau_dqd, mass) = trace_forward_dynamics_derivatives(tree)
        # M X = [-dtau/dq, -dtau/dqd, I]
        module.kernel(kernel, arrays, matrix_outputs(mass, "m") + matrix_outputs(
                          np.hstack((-dtau_dq, -dtau_dqd, np.eye(dof))), "b"), t.trace,
                      "(dqdd/dq, dqdd/dqd, M^-1): root-axes closed form at qdd = FD(q, qd, "
                      "tau), then Cholesky", (dof, dof),
                      workspace=(("m", dof * dof), ("b", 3 * dof * dof)),
                      solve=f"soa_solve_parts({{m}}, {{b}}, {dof}, 3, {{out}})", parts=3)
        module.batch(kernel + "_batch", kernel, arrays, DERIVATIVE_LANES[kernel])
    elif kernel == "gravity_derivatives" and exists(tree, kernel):
        t, arrays, dg_dq = trace_gravity_derivatives(tree)
        module.kernel(kernel, arrays, matrix_outputs(dg_dq), t.trace,
                      "dg/dq, root-axes closed form", (dof, dof))
        module.batch(kernel + "_batch", kernel, arrays, DERIVATIVE_LANES[kernel])
    elif kernel == "jacobian":
        t, arrays, jacobian = trace_jacobian(tree, frame)
        module.kernel(kernel, arrays + [("p", parameter_count(tree))], matrix_outputs(jacobian),
                      t.trace, f"6 x dof Jacobian of {frame}", (6, dof))
    elif kernel == "frame_pose":
        t, arrays, pose = trace_frame_pose(tree, frame)
        module.kernel(kernel, arrays + [("p", parameter_count(tree))], matrix_outputs(pose),
                      t.trace, f"4 x 4 pose of {frame}", (4, 4))
    elif kernel in FRAME_MOTIONS:         # export-c's (the Python model's are generic)
        t, arrays, motion = trace_frame_motion(tree, frame, kernel)
        outputs = matrix_outputs(motion) if motion.ndim == 2 else vector_outputs(motion)
        module.kernel(kernel, arrays + [("p", parameter_count(tree))], outputs, t.trace,
                      f"{kernel.replace('_', ' ')} of {frame}", motion.shape)
    elif kernel == "coriolis_matrix":
        t, arrays, coriolis = trace_coriolis_matrix(tree)
        module.kernel(kernel, arrays, matrix_outputs(coriolis), t.trace,
                      "C(q, qd), Christoffel symbols", (dof, dof))
    elif kernel in ("kinetic_energy", "potential_energy"):
        t, arrays, energy = (trace_kinetic_energy if kernel == "kinetic_energy"
                             else trace_potential_energy)(tree)
        module.kernel(kernel, arrays, vector_outputs(energy), t.trace,
                      kernel.replace("_", " "), (1,))
    elif kernel == "task_space_inertia" and exists(tree, kernel):
        t, arrays, compliance = trace_task_space_compliance(tree, frame)
        module.kernel(kernel, arrays, matrix_outputs(compliance, "c"), t.trace,
                      f"Lambda of {frame}: compliance recursion, then a checked inversion",
                      (6, 6), workspace=(("c", 36),),
                      solve="soa_invert_spd_checked({c}, {out}, 6)")
    else:
        raise ValueError(f"no kernel {kernel!r} for {title}")
