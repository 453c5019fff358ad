"""``soa-dynamics export-c``: one robot's kernels as a self-contained C99 library.

The library is the straight-line code the Python model compiles (the same traces,
:func:`.generator.emit_kernel`, printed by :func:`.c_emission.core_source`), and traces
of the same kind of what the Python model answers with its generic module (frame
motions, the Coriolis matrix, the energies), with a plain C calling convention instead
of Python wrappers: ``P.h`` (the convention, the
joint and frame tables), ``P.c`` (the cores, a copy of ``runtime_c.h``'s solvers and
the public functions), a ``CMakeLists.txt`` building a static or shared library and a
CMake package config (``PConfig.cmake``), so that a ros2_control controller links it
with ``find_package(P)``.  No Python, no allocation, no global mutable state, no locks
or system calls: every function is reentrant and real-time safe.  The inertial
parameters are the caller's array (the kernels' ``p``, :func:`.tracing.pack_parameters`),
so payloads change without regenerating.  docs/export_c.md describes the library.
"""
import pathlib
import re

from ..errors import SoaDynamicsError
from ..multibody.joints import JOINT_MODELS
from ..validation import MAX_MAGNITUDE
from . import generator
from .c_emission import CONDITION_LIMIT, c_comment, c_string, core_source
from .tracing import parameter_count, pack_parameters

RUNTIME_C = pathlib.Path(__file__).resolve().parent / "runtime_c.h"
PREFIX_PATTERN = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,39}")
# Above this many traced operations over all exported kernels the library compiles for
# minutes per build; --frames exports fewer frames.
MAX_EXPORTED_OPERATIONS = 1_500_000
# The per-frame kernels and the joint vectors each takes (besides params and the frame).
_FRAME_KERNELS = {"frame_pose": ("q",), "jacobian": ("q",), "task_space_inertia": ("q",),
                  "frame_twist": ("q", "qd"), "jacobian_derivative_product": ("q", "qd"),
                  "frame_acceleration": ("q", "qd", "qdd"),
                  "jacobian_time_derivative": ("q", "qd")}
# The public functions of the joint-space kernels: (kernel, joint vectors in, output, its size).
_JOINT_SIGNATURES = (("gravity_torques", ("q",), "tau", "N"),
                     ("bias_torques", ("q", "qd"), "tau", "N"),
                     ("inverse_dynamics", ("q", "qd", "qdd"), "tau", "N"),
                     ("mass_matrix", ("q",), "M", "N * N"),
                     ("forward_dynamics", ("q", "qd", "tau"), "qdd", "N"),
                     ("coriolis_transpose_product", ("q", "qd"), "out", "N"),
                     ("coriolis_matrix", ("q", "qd"), "C", "N * N"))
# The scalar ones, which return their value: (kernel, joint vectors in).
_ENERGIES = (("kinetic_energy", ("q", "qd")), ("potential_energy", ("q",)))
_JOINT_KERNELS = tuple(kernel for kernel, *_ in _JOINT_SIGNATURES + _ENERGIES)


class ExportError(SoaDynamicsError, ValueError):
    """A robot, prefix or frame that ``export-c`` cannot export; the message names it."""


class _Cores:
    """A sink for :func:`.generator.emit_kernel`: the C cores alone (no Python wrapper,
    no batch), each named ``{kernel}{suffix}_core``."""

    def __init__(self):
        self.lines = []
        self.suffix = ""
        self.operations = 0

    def kernel(self, name, arrays, outputs, trace, doc, shape, workspace=(), solve=None,
               prelude=(), parts=1, links=()):
        lines, stats, _ = core_source(name + self.suffix, arrays, outputs, trace, doc,
                                      workspace, solve, prelude)
        self.lines += lines
        self.operations += sum(stats.values())

    def batch(self, *_, **__):
        """Batches are Python's: the library's caller loops."""


def check_exportable(model, prefix, frames):
    """Raise :class:`ExportError` naming what cannot be exported: the prefix, an unknown
    frame, a robot without moving joints or with a joint type the kernels do not trace."""
    if not isinstance(prefix, str) or not PREFIX_PATTERN.fullmatch(prefix):
        raise ExportError(f"prefix {str(prefix)[:60]!r} is not a C identifier of at most 40 "
                          "characters starting with a letter")
    if model.dof == 0:
        raise ExportError(f"robot {model.name[:60]!r} has no moving joint: nothing to export")
    unsupported = sorted({joint.type for joint in model.joints} - set(JOINT_MODELS))
    if unsupported:
        raise ExportError(f"joint type {unsupported[0][:40]!r} is not exported")
    unknown = [name for name in frames if name not in model.tree.frames]
    if unknown:
        raise ExportError(f"frame {unknown[0][:60]!r} is not a link of the robot")


def export_c(model, directory, prefix="soa", frames=None):
    """Write ``model``'s C library into ``directory`` (created); returns the paths written.

    ``frames``: the link names the frame functions take (default: every link), in
    this order (the frame index).  Raises :class:`ExportError` for what cannot be
    exported (:func:`check_exportable`, or a library over MAX_EXPORTED_OPERATIONS),
    before anything is written.
    """
    frames = list(model.frame_names if frames is None else dict.fromkeys(frames))
    check_exportable(model, prefix, frames)
    tree = model.tree
    cores = _Cores()
    for kernel in _JOINT_KERNELS:
        generator.emit_kernel(cores, tree, kernel)
    task_space_cores = generator.exists(tree, "task_space_inertia")
    for index, frame in enumerate(frames):
        cores.suffix = f"_f{index}"
        for kernel in _FRAME_KERNELS:
            if kernel != "task_space_inertia" or task_space_cores:
                generator.emit_kernel(cores, tree, kernel, frame)
        if cores.operations > MAX_EXPORTED_OPERATIONS:
            raise ExportError(
                f"robot {model.name[:60]!r} with {len(frames)} frames traces over "
                f"{MAX_EXPORTED_OPERATIONS} operations (frame kernels of a large robot): "
                "export fewer frames (--frames)")
    directory = pathlib.Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    files = {f"{prefix}.h": _header(model, prefix, frames),
             f"{prefix}.c": _source(model, prefix, frames, cores.lines, task_space_cores),
             "CMakeLists.txt": _cmake_lists(prefix),
             f"{prefix}Config.cmake.in": _package_config(prefix)}
    paths = []
    for name, text in files.items():
        path = directory / name
        path.write_text(text)
        paths.append(path)
    return paths


def _listing(names):
    return "\n".join(f" *   {k:3d}  {c_comment(name)}" for k, name in enumerate(names))


def _header(model, prefix, frames):
    tree = model.tree
    upper = prefix.upper()
    dof, count = tree.dof, parameter_count(tree)
    bodies = "\n".join(f" *   body {body:3d}: params[{4 + 10 * (body - 1)}..{13 + 10 * (body - 1)}]"
                       f"  link {c_comment(tree.body_link[body])}" for body in range(1, tree.nb))
    mimic = ("\n * Mimic joints are not among them: each follows its master (q_mimic = "
             "multiplier * q_master\n * + offset), and the torques are the independent "
             "joints' (the mimic joints' folded in).\n" if tree.coordinates.couples_hinges
             or len(model.joints) != dof else "")
    return f"""/* {prefix}.h: the dynamics of robot {c_comment(model.name)}, exported by soa_dynamics_ros
 * (`soa-dynamics export-c`).  Do not edit: export again from the URDF.
 *
 * Calling convention
 * - Units: SI (m, kg, s, rad; N and N m).  Angles of revolute and continuous joints in
 *   rad, prismatic joints in m.
 * - Arrays are doubles, row-major, joint vectors in the model joint order below
 *   ({upper}_NUM_JOINTS entries): q, qd, qdd, tau.  Matrices n x n are {upper}_NUM_JOINTS
 *   squared doubles, Jacobians 6 x n, poses 4 x 4 (homogeneous), Lambda 6 x 6.
 * - Frames are the robot's links, addressed by index ({prefix}_frame_index).  Jacobians,
 *   twists and wrenches are in the root link's (world) axes, about the frame's origin,
 *   rows [v; w] (wrenches [f; t]).  Poses are of the frame in the root link frame.
 * - params: the caller's copy of the inertial parameters ({upper}_NUM_PARAMETERS doubles;
 *   {prefix}_default_parameters fills the URDF's): params[0..2] gravity (m/s^2, root
 *   axes), params[3] the articulated inertia below which a hinge counts as massless,
 *   then 10 per moving body: m, m*cx, m*cy, m*cz, Ixx, Ixy, Ixz, Iyy, Iyz, Izz (kg,
 *   kg m, kg m^2), about the body's link origin in its axes, links welded to it by
 *   fixed joints merged in.  A payload is added to its body's 10 parameters.
{bodies}
 * - Every function is reentrant and real-time safe: no allocation, no global mutable
 *   state, no locks, no system calls; the outputs must not overlap the inputs.
 * - Preconditions: pointers to arrays of the sizes above, finite inputs within {MAX_MAGNITUDE:g}.
 *   Where they fail (NaN or inf input, an unknown frame) or the answer does not exist
 *   (a massless hinge in forward dynamics, a frame the joints cannot move in every
 *   direction in the task-space inertia) the output is all NaN.  Compiled with
 *   -D{upper}_DEBUG_CHECKS (the CMake option {upper}_DEBUG_CHECKS), a function whose
 *   preconditions fail or whose answer is NaN prints which to stderr and aborts.
 *
 * Joints (q order):
{_listing(model.joint_names)}{mimic}
 * Frames (index: link):
{_listing(frames)}
 */
#ifndef {upper}_EXPORTED_H
#define {upper}_EXPORTED_H

#ifdef __cplusplus
extern "C" {{
#endif

#define {upper}_NUM_JOINTS {dof}
#define {upper}_NUM_PARAMETERS {count}
#define {upper}_NUM_FRAMES {len(frames)}

int {prefix}_num_joints(void);
int {prefix}_num_parameters(void);
int {prefix}_num_frames(void);
/* The URDF's inertial parameters and gravity (0, 0, -9.81 unless the model's was set). */
void {prefix}_default_parameters(double *params);
/* The index of frame (link) `name`, -1 when it is not one of the exported frames. */
int {prefix}_frame_index(const char *name);
/* The name of frame `frame`, NULL when there is none. */
const char *{prefix}_frame_name(int frame);

/* g(q): the torques that hold the robot still against gravity. */
void {prefix}_gravity_torques(const double *params, const double *q, double *tau);
/* h(q, qd): Coriolis, centrifugal and gravity torques. */
void {prefix}_bias_torques(const double *params, const double *q, const double *qd, double *tau);
/* M(q) qdd + h(q, qd). */
void {prefix}_inverse_dynamics(const double *params, const double *q, const double *qd,
                               const double *qdd, double *tau);
/* M(q) qdd + h(q, qd) - sum J_k^T w_k: `count` wrenches [f; t] (6 doubles each, root axes,
 * about the origin of frame frames[k]) acting on the robot. */
void {prefix}_inverse_dynamics_wrenches(const double *params, const double *q, const double *qd,
                                        const double *qdd, int count, const int *frames,
                                        const double *wrenches, double *tau);
/* M(q), n x n, symmetric. */
void {prefix}_mass_matrix(const double *params, const double *q, double *M);
/* qdd solving M qdd + h = tau. */
void {prefix}_forward_dynamics(const double *params, const double *q, const double *qd,
                               const double *tau, double *qdd);
/* qdd solving M qdd + h = tau + sum J_k^T w_k (wrenches as above). */
void {prefix}_forward_dynamics_wrenches(const double *params, const double *q, const double *qd,
                                        const double *tau, int count, const int *frames,
                                        const double *wrenches, double *qdd);
/* C(q, qd)^T qd: the gradient of the kinetic energy in q (the momentum observer's term). */
void {prefix}_coriolis_transpose_product(const double *params, const double *q, const double *qd,
                                         double *out);
/* 4 x 4 pose of frame `frame` in the root link frame. */
void {prefix}_frame_pose(const double *params, const double *q, int frame, double *pose);
/* 6 x n Jacobian of frame `frame`'s origin: rows [v; w], root axes. */
void {prefix}_frame_jacobian(const double *params, const double *q, int frame, double *J);
/* 6 x 6 operational-space inertia Lambda = (J M^-1 J^T)^-1 of frame `frame`. */
void {prefix}_task_space_inertia(const double *params, const double *q, int frame, double *Lambda);
/* Twist [v; w] of frame `frame`'s origin (6): J qd. */
void {prefix}_frame_twist(const double *params, const double *q, const double *qd, int frame,
                          double *twist);
/* dJ/dt qd (6): the classical bias, the frame origin's acceleration at qdd = 0, so that
 * {prefix}_frame_acceleration = J qdd + this. */
void {prefix}_jacobian_derivative_product(const double *params, const double *q,
                                          const double *qd, int frame, double *out);
/* Classical acceleration [dv/dt; dw/dt] of frame `frame`'s origin (6), gravity not included:
 * J qdd + dJ/dt qd. */
void {prefix}_frame_acceleration(const double *params, const double *q, const double *qd,
                                 const double *qdd, int frame, double *out);
/* dJ/dt, 6 x n: the time derivative of {prefix}_frame_jacobian moving at qd. */
void {prefix}_jacobian_time_derivative(const double *params, const double *q, const double *qd,
                                       int frame, double *out);
/* C(q, qd), n x n: the Christoffel-symbol Coriolis matrix, C qd = h(q, qd) - g(q) and
 * dM/dt = C + C^T (Pinocchio's computeCoriolisMatrix). */
void {prefix}_coriolis_matrix(const double *params, const double *q, const double *qd, double *C);
/* 1/2 qd^T M(q) qd (J); NaN where the preconditions fail. */
double {prefix}_kinetic_energy(const double *params, const double *q, const double *qd);
/* -sum m g . c over the moving bodies (J), g = params[0..2] and each centre of mass c in root
 * axes: zero at the root frame's origin, its gradient in q is g(q); NaN where the
 * preconditions fail. */
double {prefix}_potential_energy(const double *params, const double *q);

/* The generalized-momentum observer of external joint torques (soa_dynamics_ros'
 * ExternalTorqueObserver, without friction subtraction): its state is the caller's. */
typedef struct {{
    double gain[{dof}];              /* K, 1/s, per joint */
    double initial_momentum[{dof}];
    double integral[{dof}];
    double previous_known[{dof}];
    double estimate[{dof}];
    int started;
}} {prefix}_observer;
/* Start (or restart) `observer` with gains `gain` (1/s, per joint, positive). */
void {prefix}_observer_reset({prefix}_observer *observer, const double *gain);
/* One sample: q, qd and the measured joint torques, dt seconds after the previous sample
 * (ignored by the first after a reset, which returns zeros).  estimate: the external joint
 * torques; on bad input (NaN, dt not positive) it is NaN and the observer is unchanged. */
void {prefix}_observer_update(const double *params, {prefix}_observer *observer, const double *q,
                              const double *qd, const double *tau_measured, double dt,
                              double *estimate);

#ifdef __cplusplus
}}
#endif

#endif
"""


def _source(model, prefix, frames, core_lines, task_space_cores):
    tree = model.tree
    upper = prefix.upper()
    dof, count = tree.dof, parameter_count(tree)
    defaults = ", ".join(repr(float(x)) for x in pack_parameters(tree, model.gravity))
    runtime = RUNTIME_C.read_text()
    names = ", ".join(c_string(name) for name in frames)

    def joint_function(kernel, vectors, out, size):
        arguments = ", ".join(f"const double *{name}" for name in vectors)
        inputs = ", ".join(vectors + ("NULL",) * (3 - len(vectors)))
        return f"""void {prefix}_{kernel}(const double *params, {arguments}, double *{out})
{{
    joint_kernel({kernel}_core, params, {inputs}, {out}, {size}, "{kernel}");
}}
"""
    joint_functions = "\n".join(joint_function(*signature) for signature in _JOINT_SIGNATURES)

    def energy(kernel, vectors):
        arguments = ", ".join(f"const double *{name}" for name in vectors)
        inputs = ", ".join(vectors + ("NULL",) * (3 - len(vectors)))
        return f"""double {prefix}_{kernel}(const double *params, {arguments})
{{
    double value;
    joint_kernel({kernel}_core, params, {inputs}, &value, 1, "{kernel}");
    return value;
}}
"""
    energies = "\n".join(energy(*signature) for signature in _ENERGIES)

    def per_frame(kernel, size, public=None):
        """The frame switch over ``kernel``'s cores, and its public function when the
        library's name is ``public``."""
        vectors = _FRAME_KERNELS[kernel]
        switch = kernel if kernel.startswith("frame_") else f"frame_{kernel}"
        cases = "\n".join(f"    case {k}: status = {kernel}_f{k}_core(inputs, params, out); break;"
                          for k in range(len(frames)))
        arguments = ", ".join(f"const double *{name}" for name in vectors)
        checks = "".join(f'    REQUIRE({name}, {length}, "{public}", "{name}");\n'
                         for name, length in (("params", "PARAMETERS"),)
                         + tuple((name, "N") for name in vectors))
        function = f"""
void {prefix}_{public}(const double *params, {arguments},
    int frame, double *out)
{{
{checks}    {switch}(params, {", ".join(vectors)}, frame, out);
}}
""" if public else ""
        return f"""static int {switch}(const double *params, {arguments},
    int frame, double *out)
{{
    const double *inputs[{len(vectors)}] = {{{", ".join(vectors)}}};
    int status = SOA_BAD_INPUT;
    switch (frame) {{
{cases}
    default: break;
    }}
    return finished(status, out, {size}, "{public or switch}");
}}
{function}"""
    motions = "\n".join(per_frame(kernel, 6 * dof if kernel == "jacobian_time_derivative"
                                   else 6, kernel)
                         for kernel in _FRAME_KERNELS if _FRAME_KERNELS[kernel] != ("q",))
    if task_space_cores:
        task_space = per_frame("task_space_inertia", 36)
    else:       # mimic joints: M and J, then the same checked inversion
        task_space = """static int frame_task_space_inertia(const double *params, const double *q, int frame,
                                    double *out)
{
    const double *inputs[1] = {q};
    double m[N * N], jacobian[6 * N], column[N], compliance[36];
    int status = frame_jacobian(params, q, frame, jacobian);
    if (status == SOA_OK)
        status = mass_matrix_core(inputs, params, m);
    if (status == SOA_OK)
        status = soa_cholesky_factor(m, N);
    for (int j = 0; j < 6 && status == SOA_OK; ++j) {
        for (int k = 0; k < N; ++k)
            column[k] = jacobian[j * N + k];
        soa_cholesky_solve(m, column, N, 0);
        for (int i = 0; i < 6; ++i) {
            double sum = 0.0;
            for (int k = 0; k < N; ++k)
                sum += jacobian[i * N + k] * column[k];
            compliance[i * 6 + j] = sum;
        }
    }
    if (status == SOA_OK) {
        for (int i = 0; i < 6; ++i)
            for (int j = i + 1; j < 6; ++j)
                compliance[i * 6 + j] = compliance[j * 6 + i] =
                    0.5 * (compliance[i * 6 + j] + compliance[j * 6 + i]);
        status = soa_invert_spd_checked(compliance, out, 6) == SOA_OK ? SOA_OK
                                                                       : SOA_ILL_CONDITIONED;
    }
    return finished(status, out, 36, "frame_task_space_inertia");
}
"""
    return f"""/* {prefix}.c: the dynamics of robot {c_comment(model.name)}, exported by soa_dynamics_ros
 * (`soa-dynamics export-c`); the calling convention is in {prefix}.h.  Do not edit. */
#include "{prefix}.h"
#include <math.h>
#include <stddef.h>
#include <string.h>
#ifdef {upper}_DEBUG_CHECKS
#include <stdio.h>
#include <stdlib.h>
#endif

#define SOA_CONDITION_LIMIT {CONDITION_LIMIT!r}
/* The largest magnitude an input may have (the cores' bound). */
#define LIMIT {MAX_MAGNITUDE!r}
enum {{ N = {dof}, PARAMETERS = {count}, FRAMES = {len(frames)} }};

/* ---- soa_dynamics_ros/kernels/runtime_c.h (not every robot needs every solver, nor every core p) ---- */
#if defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#endif
{runtime}
/* ---- the robot's kernels ---- */
{chr(10).join(core_lines)}

/* ---- the calling convention of {prefix}.h ---- */
static const double default_parameters[PARAMETERS] = {{{defaults}}};
static const char *const frame_names[FRAMES] = {{{names}}};

#ifdef {upper}_DEBUG_CHECKS
static void debug_failure(const char *function, const char *problem)
{{
    fprintf(stderr, "{prefix}_%s: %s\\n", function, problem);
    abort();
}}

static void require_finite(const double *values, int count, const char *function,
                           const char *name)
{{
    if (!values)
        debug_failure(function, name);
    for (int k = 0; k < count; ++k)
        if (!isfinite(values[k]))
            debug_failure(function, name);
}}
#define REQUIRE(values, count, function, name) require_finite(values, count, function, \\
    name " is NULL or holds NaN or inf")
#else
#define REQUIRE(values, count, function, name) ((void)0)
#endif

/* A core's status: SOA_OK, or `out` all NaN (and, checked, the problem reported). */
static int finished(int status, double *out, int size, const char *function)
{{
    if (status == SOA_OK)
        return SOA_OK;
    for (int k = 0; k < size; ++k)
        out[k] = NAN;
#ifdef {upper}_DEBUG_CHECKS
    debug_failure(function, status == SOA_BAD_INPUT ? "an input is NaN, inf or beyond {MAX_MAGNITUDE:g}, or "
                  "a frame is unknown" : status == SOA_SINGULAR ? "a hinge is massless"
                  : "the frame cannot move in every direction (Lambda is singular)");
#else
    (void)function;
#endif
    return status;
}}

static int joint_kernel(int (*core)(const double *const *, const double *restrict,
                                    double *restrict),
                        const double *params, const double *a, const double *b,
                        const double *c, double *out, int size, const char *function)
{{
    const double *inputs[3] = {{a, b, c}};
    REQUIRE(params, PARAMETERS, function, "params");
    REQUIRE(a, N, function, "q");
    if (b)
        REQUIRE(b, N, function, "the second joint vector");
    if (c)
        REQUIRE(c, N, function, "the third joint vector");
    return finished(core(inputs, params, out), out, size, function);
}}

{per_frame("frame_pose", 16)}
{per_frame("jacobian", 6 * dof)}
{task_space}
{motions}
/* tau += sign * sum J_k^T w_k; status SOA_BAD_INPUT for an unknown frame or a bad wrench. */
static int add_wrench_torques(const double *params, const double *q, int count, const int *frames,
                              const double *wrenches, double sign, double *tau)
{{
    double jacobian[6 * N];
    if (count < 0 || (count > 0 && (!frames || !wrenches)))
        return SOA_BAD_INPUT;
    for (int k = 0; k < count; ++k) {{
        if (soa_check(wrenches + 6 * k, 6, LIMIT) != SOA_OK
            || frame_jacobian(params, q, frames[k], jacobian) != SOA_OK)
            return SOA_BAD_INPUT;
        for (int i = 0; i < 6; ++i)
            for (int j = 0; j < N; ++j)
                tau[j] += sign * jacobian[i * N + j] * wrenches[6 * k + i];
    }}
    return SOA_OK;
}}

int {prefix}_num_joints(void) {{ return N; }}
int {prefix}_num_parameters(void) {{ return PARAMETERS; }}
int {prefix}_num_frames(void) {{ return FRAMES; }}

void {prefix}_default_parameters(double *params)
{{
    memcpy(params, default_parameters, sizeof default_parameters);
}}

int {prefix}_frame_index(const char *name)
{{
    if (!name)
        return -1;
    for (int k = 0; k < FRAMES; ++k)
        if (strcmp(name, frame_names[k]) == 0)
            return k;
    return -1;
}}

const char *{prefix}_frame_name(int frame)
{{
    return frame >= 0 && frame < FRAMES ? frame_names[frame] : NULL;
}}

{joint_functions}
{energies}
void {prefix}_inverse_dynamics_wrenches(const double *params, const double *q, const double *qd,
                                        const double *qdd, int count, const int *frames,
                                        const double *wrenches, double *tau)
{{
    if (joint_kernel(inverse_dynamics_core, params, q, qd, qdd, tau, N,
                     "inverse_dynamics_wrenches") == SOA_OK)
        finished(add_wrench_torques(params, q, count, frames, wrenches, -1.0, tau), tau, N,
                 "inverse_dynamics_wrenches");
}}

void {prefix}_forward_dynamics_wrenches(const double *params, const double *q, const double *qd,
                                        const double *tau, int count, const int *frames,
                                        const double *wrenches, double *qdd)
{{
    double applied[N];
    REQUIRE(tau, N, "forward_dynamics_wrenches", "tau");
    memcpy(applied, tau, sizeof applied);
    if (finished(add_wrench_torques(params, q, count, frames, wrenches, 1.0, applied), qdd, N,
                 "forward_dynamics_wrenches") == SOA_OK)
        joint_kernel(forward_dynamics_core, params, q, qd, applied, qdd, N,
                     "forward_dynamics_wrenches");
}}

void {prefix}_frame_pose(const double *params, const double *q, int frame, double *pose)
{{
    frame_pose(params, q, frame, pose);
}}

void {prefix}_frame_jacobian(const double *params, const double *q, int frame, double *J)
{{
    frame_jacobian(params, q, frame, J);
}}

void {prefix}_task_space_inertia(const double *params, const double *q, int frame, double *Lambda)
{{
    frame_task_space_inertia(params, q, frame, Lambda);
}}

void {prefix}_observer_reset({prefix}_observer *observer, const double *gain)
{{
    REQUIRE(gain, N, "observer_reset", "gain");
    memset(observer, 0, sizeof *observer);
    memcpy(observer->gain, gain, sizeof observer->gain);
}}

/* ExternalTorqueObserver.update: trapezoidal known torques, the estimate implicit. */
void {prefix}_observer_update(const double *params, {prefix}_observer *observer, const double *q,
                              const double *qd, const double *tau_measured, double dt,
                              double *estimate)
{{
    double mass[N * N], known[N], product[N], gravity[N], momentum[N];
    const double *inputs[2] = {{q, qd}};
    int status = soa_check(tau_measured, N, LIMIT);
    if (status == SOA_OK && observer->started && !(dt > 0.0 && dt <= LIMIT))
        status = SOA_BAD_INPUT;
    if (status == SOA_OK)
        status = mass_matrix_core(inputs, params, mass);
    if (status == SOA_OK)
        status = coriolis_transpose_product_core(inputs, params, product);
    if (status == SOA_OK)
        status = gravity_torques_core(inputs, params, gravity);
    if (finished(status, estimate, N, "observer_update") != SOA_OK)
        return;
    for (int i = 0; i < N; ++i) {{
        double sum = 0.0;
        for (int j = 0; j < N; ++j)
            sum += mass[i * N + j] * qd[j];
        momentum[i] = sum;
        known[i] = tau_measured[i] + product[i] - gravity[i];
    }}
    if (!observer->started) {{
        memcpy(observer->initial_momentum, momentum, sizeof momentum);
        memcpy(observer->previous_known, known, sizeof known);
        memset(observer->integral, 0, sizeof observer->integral);
        memset(observer->estimate, 0, sizeof observer->estimate);
        observer->started = 1;
        memcpy(estimate, observer->estimate, sizeof observer->estimate);
        return;
    }}
    for (int i = 0; i < N; ++i) {{
        const double gain = observer->gain[i];
        const double known_step = 0.5 * (observer->previous_known[i] + known[i]) * dt;
        const double value = gain * (momentum[i] - observer->initial_momentum[i]
                                     - observer->integral[i] - known_step) / (1.0 + gain * dt);
        observer->integral[i] = observer->integral[i] + known_step + value * dt;
        observer->previous_known[i] = known[i];
        observer->estimate[i] = value;
    }}
    memcpy(estimate, observer->estimate, sizeof observer->estimate);
}}
"""


def _cmake_lists(prefix):
    upper = prefix.upper()
    return f"""# Builds {prefix}, exported by soa_dynamics_ros (`soa-dynamics export-c`): a static library
# (-DBUILD_SHARED_LIBS=ON: shared), installed with a CMake package config, so that
#     find_package({prefix} REQUIRED)
#     target_link_libraries(my_controller {prefix}::{prefix})
# links it (CMAKE_PREFIX_PATH: the install prefix; or {prefix}_DIR: this build folder).
cmake_minimum_required(VERSION 3.14)
project({prefix} VERSION 1.0.0 LANGUAGES C)

option(BUILD_SHARED_LIBS "Build a shared library" OFF)
option({upper}_DEBUG_CHECKS "Check preconditions and abort with a message where they fail" OFF)
if(NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)
  set(CMAKE_BUILD_TYPE Release CACHE STRING "Build type" FORCE)
endif()

include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

add_library({prefix} {prefix}.c)
add_library({prefix}::{prefix} ALIAS {prefix})
set_target_properties({prefix} PROPERTIES C_STANDARD 99 C_STANDARD_REQUIRED ON
                      POSITION_INDEPENDENT_CODE ON PUBLIC_HEADER {prefix}.h)
target_include_directories({prefix} PUBLIC $<BUILD_INTERFACE:${{CMAKE_CURRENT_SOURCE_DIR}}>
                           $<INSTALL_INTERFACE:${{CMAKE_INSTALL_INCLUDEDIR}}>)
if(UNIX)
  target_link_libraries({prefix} PUBLIC m)
endif()
if({upper}_DEBUG_CHECKS)
  target_compile_definitions({prefix} PRIVATE {upper}_DEBUG_CHECKS)
endif()

set(config_dir ${{CMAKE_INSTALL_LIBDIR}}/cmake/{prefix})
install(TARGETS {prefix} EXPORT {prefix}Targets
        ARCHIVE DESTINATION ${{CMAKE_INSTALL_LIBDIR}}
        LIBRARY DESTINATION ${{CMAKE_INSTALL_LIBDIR}}
        RUNTIME DESTINATION ${{CMAKE_INSTALL_BINDIR}}
        PUBLIC_HEADER DESTINATION ${{CMAKE_INSTALL_INCLUDEDIR}})
install(EXPORT {prefix}Targets NAMESPACE {prefix}:: DESTINATION ${{config_dir}})
configure_package_config_file({prefix}Config.cmake.in ${{CMAKE_CURRENT_BINARY_DIR}}/{prefix}Config.cmake
                              INSTALL_DESTINATION ${{config_dir}})
write_basic_package_version_file(${{CMAKE_CURRENT_BINARY_DIR}}/{prefix}ConfigVersion.cmake
                                 COMPATIBILITY ExactVersion)
install(FILES ${{CMAKE_CURRENT_BINARY_DIR}}/{prefix}Config.cmake
              ${{CMAKE_CURRENT_BINARY_DIR}}/{prefix}ConfigVersion.cmake
        DESTINATION ${{config_dir}})
# find_package from the build folder, without installing
export(EXPORT {prefix}Targets NAMESPACE {prefix}:: FILE ${{CMAKE_CURRENT_BINARY_DIR}}/{prefix}Targets.cmake)
"""


def _package_config(prefix):
    return f"""@PACKAGE_INIT@
include("${{CMAKE_CURRENT_LIST_DIR}}/{prefix}Targets.cmake")
check_required_components({prefix})
"""
