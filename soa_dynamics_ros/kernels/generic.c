/* The generic compiled recursions: one extension module for every robot.
 *
 * The per-robot kernels (generator.py) are straight-line code traced from the
 * numpy recursions of soa_dynamics_ros.algorithms.  This module runs the same
 * recursions as loops over the parent array of any tree: compiled once per
 * machine, it answers from a model's first call.  The loops keep the numpy
 * reference's structure, names and order of operations (algorithms/*.py), so
 * both agree to round-off (test/kernels/test_generic_kernels.py holds them
 * to 1e-12).
 *
 * A model is a capsule made by make_model() from a BodyTree packed by
 * generic.py: parent array, joint types, joint frames, hinge maps, the
 * coordinate maps (positions: the whole map; rates and forces: the map of a
 * joint selection, locked hinges with master -1) and the frames.  Inertias
 * and gravity are the packed parameter vector p of the traced kernels
 * (tracing.pack_parameters), an argument of every call.
 *
 * Calling convention: f(model, [frame,] arrays..., p) -> new ndarray, or an
 * int status as the traced kernels (runtime.h): 1 bad input (type, dtype,
 * layout, length, NaN/inf or beyond MAX_MAGNITUDE, checked before any
 * arithmetic), 2 singular hinge or mass matrix, 3 ill-conditioned.  Batch
 * functions answer 4 * (first failing sample) + status.
 *
 * The including source defines SOA_GENERIC_MODULE (the module name),
 * SOA_CONDITION_LIMIT (runtime.h), SOA_RANK_RCOND and the joint motions' codes
 * JOINT_NONE, JOINT_ROTATION, JOINT_TRANSLATION (multibody/joints.py's
 * JOINT_MOTIONS) before including this file (generic.py).
 *
 * Spatial transforms are kept as each body's placement (R, p) in its parent
 * and applied in Featherstone's plux form (transform_motion, ...): a rotation
 * and a cross product instead of dense 6x6 products.  The numpy reference
 * multiplies the dense matrices; both agree to round-off.
 *
 * The code is split by algorithm into generic/*.c (as algorithms/*.py), which
 * this file includes in order: the module stays one translation unit, so -O3
 * inlines across the parts as it did in one file.
 *
 * The workspace lives in the model: sized once, except the part that grows
 * with a call's frames (scratch()); every function holds the GIL while it uses
 * it, so calls from several threads never share it.  Large batches release the
 * GIL and spread their samples over the CPUs, each worker on its own copy of
 * the model (run_samples).
 */
#include "runtime.h"
#include <stdlib.h>
#include <string.h>
#if defined(__AVX__)
#include <immintrin.h>      /* (generic_derivatives.c streams large batches out) */
#endif

#define SOA_MAX_MAGNITUDE 1e50      /* validation.MAX_MAGNITUDE */
#define HEADER 4                    /* tracing.HEADER: gravity (3), singular threshold */
#define PARAMS_PER_BODY 10
#define CAPSULE_NAME "soa_dynamics_ros.generic_model"

typedef struct {
    int nb, dof, rate_dof, nf, couples, params;
    int *parent, *type, *master, *rate_master, *frame_body;
    double *axis, *joint_rotation, *joint_translation, *hinge_map;
    double *turn_sine, *turn_cosine;    /* E K and E K K of rotation joints (hinge_placement) */
    double *multiplier, *offset, *rate_multiplier, *frame_rotation, *frame_translation;
    /* workspace, per body unless said */
    double *q_hinge, *qd_hinge, *qdd_hinge, *qdd_given, *tau_hinge, *torque;
    double *local_rotation, *local_translation;                 /* parent -> body */
    double *rotations, *translations;                           /* world placements */
    int world_placed;           /* rotations, translations composed of the current local ones */
    double *inertia, *articulated, *velocity, *acceleration, *force, *body_forces;
    double *bias_acceleration, *bias_force, *gain, *inverse_d, *residual_torque;
    double *hinge_mass;                                         /* nb x nb */
    double *joint_mass;                                         /* rate_dof x rate_dof */
    unsigned char *free;                                        /* hinge moved by a rate */
    unsigned char *call_free;                                   /* mixed dynamics: not prescribed */
    void *block;                /* structure and workspace: lay_out() */
    size_t block_bytes;
    double *scratch;            /* calls whose workspace grows with their frames (scratch()) */
    size_t scratch_size;
    PyObject *frame_index;      /* {frame name: index} (a dict) */
    double *wrench_frames, *wrench_values;      /* a call's wrenches (parse_wrenches) */
    int *rate_bodies, rate_count;               /* the bodies whose hinge a rate moves */
    int *rate_parent, tree_sparse;  /* each rate's nearest ancestor rate (-1: none); whether
                                     * M has a tree's sparsity along it (tree_factor) */
    int *rate_subtree_end;      /* tree_sparse: 1 + the last rate below each rate (or it) */
    int rates_are_bodies;       /* tree_sparse, and rate k moves body k + 1 (no locked or
                                 * merged hinges): hinge matrices fold by rows */
    int *chain;                 /* a body and its ancestors, leaf first (chain_placements) */
    int *fold_from, *fold_to, fold_count;   /* fold_hinges' terms: D[from] scaled into */
    double *fold_scale;                     /* out[to], in the order they add up */
} Model;

#include "generic/spatial_algebra.c"
#include "generic/placements.c"
#include "generic/inverse_dynamics.c"
#include "generic/mass_matrix.c"
#include "generic/articulated_body.c"
#include "generic/task_space.c"
#include "generic/linear_algebra.c"
#include "generic/hybrid.c"
#include "generic/frame_motion.c"
#include "generic/energy.c"
#include "generic/regressor.c"
#include "generic/arguments.c"
#include "generic/bindings_dynamics.c"
#include "generic/bindings_hybrid.c"
#include "generic/bindings_queries.c"
#include "generic/bindings_frame_motion.c"
#include "generic/bindings_regressor.c"
#include "generic/batches.c"
#include "generic/model_object.c"

#include "generic_derivatives.c"
/* (after the derivatives: C is built from their root-axes vocabulary) */
#include "generic/coriolis.c"
#include "generic/bindings_energy.c"
#include "generic/bindings_floating.c"

#define METHOD(name, doc) {#name, (PyCFunction)(void (*)(void))name, METH_FASTCALL, doc}
static PyMethodDef methods[] = {
    METHOD(make_model, "A model capsule from a packed BodyTree (generic.py)."),
    METHOD(gravity_torques, "g(q): f(model, q, p)"),
    METHOD(bias_torques, "h(q, qd): f(model, q, qd, p)"),
    METHOD(inverse_dynamics, "M qdd + h: f(model, q, qd, qdd, p)"),
    METHOD(inverse_dynamics_wrenches, "M qdd + h - sum J^T w: f(model, q, qd, qdd, "
                                      "{frame: wrench}, p)"),
    METHOD(forward_dynamics, "qdd of the selected joints: f(model, q, qd, tau, p)"),
    METHOD(forward_dynamics_wrenches, "qdd with wrenches: f(model, q, qd, tau, "
                                      "{frame: wrench}, p)"),
    METHOD(mass_matrix, "G^T M G: f(model, q, p)"),
    METHOD(torques_with_wrenches, "tau + G^T sum J^T w: f(model, q, tau, {frame: wrench}, "
                                  "p)"),
    METHOD(hybrid_dynamics, "(qdd, constraint torques, nu, {frame: acceleration}, "
                            "[slice of nu per constraint]): "
                            "f(model, q, qd, tau, [(frame, alpha, beta), ...], p)"),
    METHOD(hybrid_dynamics_wrenches, "hybrid dynamics with wrenches: f(model, q, qd, tau, "
                                     "[(frame, alpha, beta), ...], {frame: wrench}, p)"),
    METHOD(task_space_inertia, "[Lambda, Lambda^-1, condition, rank] of frames' wrench "
                               "rows, flat: f(model, frames, first, width, q, damping, info, "
                               "p)"),
    METHOD(mixed_dynamics, "[qdd_all; tau_all]: f(model, q, qd, qdd, tau, prescribed, p)"),
    METHOD(mixed_dynamics_wrenches, "mixed dynamics with wrenches: f(model, q, qd, qdd, tau, "
                                    "prescribed, {frame: wrench}, p)"),
    METHOD(jacobian, "6 x dof Jacobian of a frame: f(model, frame, q, p)"),
    METHOD(frame_poses, "4x4 pose of a frame, or (frames, 4, 4) for frame -1: "
                        "f(model, frame, q, p)"),
    METHOD(frame_twist, "[v; w] of a frame origin: f(model, frame, q, qd, p)"),
    METHOD(frame_acceleration, "classical [dv/dt; dw/dt] of a frame origin: "
                               "f(model, frame, q, qd, qdd, p)"),
    METHOD(jacobian_time_derivative, "6 x dof dJ/dt of a frame: f(model, frame, q, qd, p)"),
    METHOD(jacobian_derivative_product, "dJ/dt qd of a frame: f(model, frame, q, qd, p)"),
    METHOD(coriolis_matrix, "C with C qd = h - g, dM/dt = C + C^T: f(model, q, qd, p)"),
    METHOD(kinetic_energy, "1/2 qd^T M qd: f(model, q, qd, p)"),
    METHOD(potential_energy, "-sum m g.c: f(model, q, p)"),
    METHOD(inertial_regressor, "dof x 10 (nb - 1) Y with Y pi = inverse dynamics: "
                               "f(model, q, qd, qdd, p)"),
    METHOD(gravity_torques_batch, "g over (N, dof) rows: f(model, Q, p)"),
    METHOD(inverse_dynamics_batch, "inverse dynamics over rows: f(model, Q, QD, QDD, p)"),
    METHOD(forward_dynamics_batch, "forward dynamics over rows: f(model, Q, QD, TAU, p)"),
    METHOD(inverse_dynamics_derivatives, "(dtau/dq, dtau/dqd): f(model, q, qd, qdd, p)"),
    METHOD(inverse_dynamics_derivatives_wrenches, "the same with wrenches held in root axes: "
                                                  "f(model, q, qd, qdd, {link: wrench}, p)"),
    METHOD(forward_dynamics_derivatives, "(dqdd/dq, dqdd/dqd, dqdd/dtau): "
                                         "f(model, q, qd, tau, p)"),
    METHOD(forward_dynamics_derivatives_wrenches, "the same with wrenches: "
                                                  "f(model, q, qd, tau, {link: wrench}, p)"),
    METHOD(gravity_derivatives, "dg/dq: f(model, q, p)"),
    METHOD(inverse_dynamics_derivatives_batch, "(N, 2, n, n): f(model, Q, QD, QDD, p)"),
    METHOD(forward_dynamics_derivatives_batch, "(N, 3, n, n): f(model, Q, QD, TAU, p)"),
    METHOD(gravity_derivatives_batch, "(N, n, n): f(model, Q, p)"),
    METHOD(floating_inputs, "(chain q, a - shift) of a floating-base model: "
                            "f(q, v or None, a or None, [gx, gy, gz, norm2 low, high])"),
    METHOD(floating_centroidal_momentum_matrix, "Ag (6 x nv) of a floating-base model: "
                                                "f(chain model, q, base, p)"),
    {NULL, NULL, 0, NULL}};

#ifndef SOA_GENERIC_MODULE
#error "SOA_GENERIC_MODULE (the module name) must be defined by the build"
#endif
#define SOA_CONCAT(a, b) a##b
#define SOA_INIT(name) SOA_CONCAT(PyInit_, name)
#define SOA_STRING(name) #name
#define SOA_NAME(name) SOA_STRING(name)

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, SOA_NAME(SOA_GENERIC_MODULE), NULL,
                                    -1, methods};

PyMODINIT_FUNC SOA_INIT(SOA_GENERIC_MODULE)(void)
{
    import_array();
    return PyModule_Create(&module);
}
