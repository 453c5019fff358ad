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
 * (generator.pack_parameters), an argument of every call.
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
#define HEADER 4                    /* generator.HEADER: gravity (3), singular threshold */
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

/* ------------------------------------------------------------------ small algebra */
/* Forced inline: -O3 leaves most of these as calls in the loops over bodies, whose
 * arguments and results then go through memory (inlined, 3-11% fewer instructions in
 * every generic function measured, derivatives and forward dynamics the most). */
__attribute__((always_inline))
static inline void mat3_mul(const double *a, const double *b, double *out)
{
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j)
            out[3 * i + j] = a[3 * i] * b[j] + a[3 * i + 1] * b[3 + j] + a[3 * i + 2] * b[6 + j];
}

__attribute__((always_inline))
static inline void mat3_vec(const double *a, const double *v, double *out)
{
    for (int i = 0; i < 3; ++i)
        out[i] = a[3 * i] * v[0] + a[3 * i + 1] * v[1] + a[3 * i + 2] * v[2];
}

__attribute__((always_inline))
static inline void mat3t_vec(const double *a, const double *v, double *out)
{
    for (int i = 0; i < 3; ++i)
        out[i] = a[i] * v[0] + a[3 + i] * v[1] + a[6 + i] * v[2];
}

__attribute__((always_inline))
static inline void cross(const double *a, const double *b, double *out)
{
    double x = a[1] * b[2] - a[2] * b[1], y = a[2] * b[0] - a[0] * b[2],
           z = a[0] * b[1] - a[1] * b[0];
    out[0] = x; out[1] = y; out[2] = z;
}

__attribute__((always_inline))
static inline double dot6(const double *a, const double *b)
{
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3] + a[4] * b[4] + a[5] * b[5];
}

static void mat6_vec(const double *x, const double *v, double *out)
{
    for (int i = 0; i < 6; ++i)
        out[i] = dot6(x + 6 * i, v);
}

/* spatial.motion_cross(v) @ m */
__attribute__((always_inline))
static inline void motion_cross(const double *v, const double *m, double *out)
{
    double a[3], b[3], c[3];
    cross(v + 3, m, a);
    cross(v, m + 3, b);
    cross(v + 3, m + 3, c);
    for (int k = 0; k < 3; ++k) {
        out[k] = a[k] + b[k];
        out[3 + k] = c[k];
    }
}

/* spatial.force_cross(v) @ f */
__attribute__((always_inline))
static inline void force_cross(const double *v, const double *f, double *out)
{
    double a[3], b[3], c[3];
    cross(v + 3, f, a);
    cross(v, f, b);
    cross(v + 3, f + 3, c);
    for (int k = 0; k < 3; ++k) {
        out[k] = a[k];
        out[3 + k] = b[k] + c[k];
    }
}

/* Featherstone's plux form of spatial.motion_transform(R, p) = [[R^T, -R^T skew(p)],
 * [0, R^T]] (R, p: the body's placement in its parent): the products below cost a
 * rotation and a cross product where the dense 6x6 would cost 36 multiplications.
 * `out` must not alias the input. */

/* X m: [R^T (v + w x p); R^T w] */
static void transform_motion(const double *r, const double *p, const double *m, double *out)
{
    double moved[3], shifted[3];
    cross(m + 3, p, moved);
    for (int k = 0; k < 3; ++k)
        shifted[k] = m[k] + moved[k];
    mat3t_vec(r, shifted, out);
    mat3t_vec(r, m + 3, out + 3);
}

/* X^T f: [R f; p x (R f) + R n] */
static void transform_force_back(const double *r, const double *p, const double *f, double *out)
{
    double turned[3], moment[3];
    mat3_vec(r, f, out);
    mat3_vec(r, f + 3, moment);
    cross(p, out, turned);
    for (int k = 0; k < 3; ++k)
        out[3 + k] = turned[k] + moment[k];
}

/* out += X^T A X for a symmetric 6x6 A.  X = diag(R^T, R^T) [[1, -P], [0, 1]] with
 * P = skew(p): the blocks rotated to the parent, B_ij = R A_ij R^T, then
 * [[B11, C12], [C12^T, B22 - B21 P + P C12]] with C12 = B12 - B11 P. */
static void add_transformed_inertia(const double *r, const double *p, const double *a,
                                    double *out)
{
    double blocks[3][9], rotated[3][9];
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) {
            blocks[0][3 * i + j] = a[6 * i + j];
            blocks[1][3 * i + j] = a[6 * i + j + 3];
            blocks[2][3 * i + j] = a[6 * (i + 3) + j + 3];
        }
    for (int b = 0; b < 3; ++b) {
        double turned[9];
        mat3_mul(r, blocks[b], turned);
        for (int i = 0; i < 3; ++i)
            for (int j = 0; j < 3; ++j)
                rotated[b][3 * i + j] = turned[3 * i] * r[3 * j] + turned[3 * i + 1] * r[3 * j + 1]
                                        + turned[3 * i + 2] * r[3 * j + 2];
    }
    const double *b11 = rotated[0], *b12 = rotated[1], *b22 = rotated[2];
    double c12[9], c22[9];
    for (int i = 0; i < 3; ++i) {
        /* row i of M P is (row i of M) x p */
        double moved[3];
        cross(b11 + 3 * i, p, moved);
        for (int j = 0; j < 3; ++j)
            c12[3 * i + j] = b12[3 * i + j] - moved[j];
    }
    for (int i = 0; i < 3; ++i) {
        /* row i of B21 P: (column i of B12) x p */
        double column[3] = {b12[i], b12[3 + i], b12[6 + i]}, moved[3];
        cross(column, p, moved);
        for (int j = 0; j < 3; ++j)
            c22[3 * i + j] = b22[3 * i + j] - moved[j];
    }
    for (int j = 0; j < 3; ++j) {
        /* column j of P C12: p x (column j of C12) */
        double column[3] = {c12[j], c12[3 + j], c12[6 + j]}, moved[3];
        cross(p, column, moved);
        for (int i = 0; i < 3; ++i)
            c22[3 * i + j] += moved[i];
    }
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) {
            out[6 * i + j] += b11[3 * i + j];
            out[6 * i + j + 3] += c12[3 * i + j];
            out[6 * (j + 3) + i] += c12[3 * i + j];
            out[6 * (i + 3) + j + 3] += c22[3 * i + j];
        }
}

/* ------------------------------------------------------------------ root axes */
/* A rigid body's spatial inertia [[m 1, -[h]x], [[h]x, J]] in root axes about some
 * point, as INERTIA_DOUBLES: its mass m, first moment h and rotational inertia J. */
enum { INERTIA_MASS = 0, INERTIA_MOMENT = 1, INERTIA_ROTATIONAL = 4, INERTIA_DOUBLES = 13 };

/* A body's inertia parameters (mass, first moment h_b and rotational inertia J_b in body
 * axes about the body origin: a body's PARAMS_PER_BODY of p, read where they are rather
 * than unpacked into 6x6 matrices) turned into root axes by R, still about the body
 * origin: R h_b and R J_b R^T. */
__attribute__((always_inline))
static inline void rotated_inertia(const double *own, const double *r, double *inertia)
{
    double j[9] = {own[4], own[5], own[6], own[5], own[7], own[8], own[6], own[8], own[9]};
    double rj[9], *out = inertia + INERTIA_ROTATIONAL;
    inertia[INERTIA_MASS] = own[0];
    mat3_vec(r, own + 1, inertia + INERTIA_MOMENT);
    mat3_mul(r, j, rj);
    for (int a = 0; a < 3; ++a)
        for (int b = 0; b < 3; ++b)
            out[3 * a + b] = rj[3 * a] * r[3 * b] + rj[3 * a + 1] * r[3 * b + 1]
                             + rj[3 * a + 2] * r[3 * b + 2];
}

/* The same inertia about a point from which its point lies at d (X^T I X without the
 * 6x6 products): first moment h + m d, rotational inertia
 *   J - m [d]x[d]x - [d]x[h]x - [h]x[d]x,  [a]x[b]x = b a^T - (a.b) 1. */
__attribute__((always_inline))
static inline void shifted_inertia(const double *inertia, const double *d, double *out)
{
    double mass = inertia[INERTIA_MASS];
    const double *h = inertia + INERTIA_MOMENT, *j = inertia + INERTIA_ROTATIONAL;
    double dd = d[0] * d[0] + d[1] * d[1] + d[2] * d[2], dh = d[0] * h[0] + d[1] * h[1] + d[2] * h[2];
    for (int a = 0; a < 3; ++a) {
        for (int b = 0; b < 3; ++b)
            out[INERTIA_ROTATIONAL + 3 * a + b] = j[3 * a + b] - mass * d[a] * d[b]
                                                  - h[a] * d[b] - d[a] * h[b];
        out[INERTIA_ROTATIONAL + 4 * a] += mass * dd + 2.0 * dh;
        out[INERTIA_MOMENT + a] = h[a] + mass * d[a];
    }
    out[INERTIA_MASS] = mass;
}

/* A body's inertia parameters (rotated_inertia) in root axes about the root origin, the
 * body's placement being (r, p) */
__attribute__((always_inline))
static inline void inertia_to_root(const double *own, const double *r, const double *p,
                                   double *inertia)
{
    double rotated[INERTIA_DOUBLES];
    rotated_inertia(own, r, rotated);
    shifted_inertia(rotated, p, inertia);
}

/* I x of an inertia in root axes: [m x_l - h x x_a; h x x_l + J x_a] */
__attribute__((always_inline))
static inline void inertia_apply(const double *inertia, const double *x, double *out)
{
    double turned[3], pushed[3], spun[3];
    cross(inertia + INERTIA_MOMENT, x + 3, turned);
    cross(inertia + INERTIA_MOMENT, x, pushed);
    mat3_vec(inertia + INERTIA_ROTATIONAL, x + 3, spun);
    for (int k = 0; k < 3; ++k) {
        out[k] = inertia[INERTIA_MASS] * x[k] - turned[k];
        out[3 + k] = pushed[k] + spun[k];
    }
}

/* I x of a body's inertia parameters as they are in p (mass m, first moment h and the
 * six entries of J, body axes about the body origin: unpack_inertias' matrix)
 * [m x_l - h x x_a; h x x_l + J x_a], without the 6x6 (24 products against 36) */
__attribute__((always_inline))
static inline void own_inertia_apply(const double *own, const double *x, double *out)
{
    double turned[3], pushed[3];
    const double *h = own + 1, *w = x + 3;
    cross(h, w, turned);
    cross(h, x, pushed);
    out[0] = own[0] * x[0] - turned[0];
    out[1] = own[0] * x[1] - turned[1];
    out[2] = own[0] * x[2] - turned[2];
    out[3] = pushed[0] + own[4] * w[0] + own[5] * w[1] + own[6] * w[2];
    out[4] = pushed[1] + own[5] * w[0] + own[7] * w[1] + own[8] * w[2];
    out[5] = pushed[2] + own[6] * w[0] + own[8] * w[1] + own[9] * w[2];
}

/* ------------------------------------------------------------------ model data */
/* Spatial inertias of the moving bodies from p (spatial.inertia_from_parameters). */
static void unpack_inertias(Model *m, const double *p)
{
    for (int body = 1; body < m->nb; ++body) {
        const double *c = p + HEADER + PARAMS_PER_BODY * (body - 1);
        double mass = c[0], mcx = c[1], mcy = c[2], mcz = c[3];
        double values[36] = {
            mass, 0.0, 0.0, 0.0, mcz, -mcy,
            0.0, mass, 0.0, -mcz, 0.0, mcx,
            0.0, 0.0, mass, mcy, -mcx, 0.0,
            0.0, -mcz, mcy, c[4], c[5], c[6],
            mcz, 0.0, -mcx, c[5], c[7], c[8],
            -mcy, mcx, 0.0, c[6], c[8], c[9]};
        memcpy(m->inertia + 36 * body, values, sizeof values);
    }
}

/* coordinates.hinge_positions and hinge_rates (of the rate map) */
static void hinge_positions(const Model *m, const double *q)
{
    m->q_hinge[0] = 0.0;
    for (int i = 1; i < m->nb; ++i)
        m->q_hinge[i] = m->master[i] < 0 ? m->offset[i]
                        : m->multiplier[i] * q[m->master[i]] + m->offset[i];
}

static void hinge_rates(const Model *m, const double *rates, double *out)
{
    out[0] = 0.0;
    for (int i = 1; i < m->nb; ++i)
        out[i] = m->rate_master[i] < 0 ? 0.0 : m->rate_multiplier[i] * rates[m->rate_master[i]];
}

/* coordinates.joint_forces: out = G^T hinge (hinges sharing a master add up in hinge order) */
static void joint_forces(const Model *m, const double *hinge, double *out)
{
    for (int k = 0; k < m->rate_dof; ++k)
        out[k] = 0.0;
    for (int i = 1; i < m->nb; ++i)
        if (m->rate_master[i] >= 0)
            out[m->rate_master[i]] += hinge[i] * m->rate_multiplier[i];
}

/* joints.placement: the body's placement in its parent at the hinge coordinate.  Inlined
 * in the loops over bodies (local_placements, chain_placements): a call per body costs
 * ~5% of a frame pose. */
__attribute__((always_inline)) static inline void hinge_placement(const Model *m, int body,
                                                                  double *rotation,
                                                                  double *translation)
{
    const double *e = m->joint_rotation + 9 * body, *r = m->joint_translation + 3 * body;
    double q = m->q_hinge[body];
    if (m->type[body] == JOINT_ROTATION) {
        /* E rotation_about_axis(q) = E + sin(q) E K + (1 - cos(q)) E K K, the products
         * with E made once (make_model): 9 multiply-adds per entry pair instead of the
         * turn and a 3x3 product per body and call */
        const double *sine = m->turn_sine + 9 * body, *cosine = m->turn_cosine + 9 * body;
        double s = sin(q), c = 1.0 - cos(q);
        for (int k = 0; k < 9; ++k)
            rotation[k] = e[k] + s * sine[k] + c * cosine[k];
        memcpy(translation, r, 3 * sizeof(double));
    } else {
        const double *axis = m->axis + 3 * body;
        memcpy(rotation, e, 9 * sizeof(double));
        memcpy(translation, r, 3 * sizeof(double));
        if (m->type[body] == JOINT_TRANSLATION) {
            double moved[3] = {axis[0] * q, axis[1] * q, axis[2] * q}, step[3];
            mat3_vec(e, moved, step);
            for (int k = 0; k < 3; ++k)
                translation[k] += step[k];
        }
    }
}

/* Each body's placement (R, p) in its parent at q_hinge: the recursions transform with
 * these (transform_motion, transform_force_back, add_transformed_inertia). */
static void local_placements(Model *m)
{
    m->world_placed = 0;
    for (int body = 1; body < m->nb; ++body)
        hinge_placement(m, body, m->local_rotation + 9 * body, m->local_translation + 3 * body);
}

/* The root's placement in the root (rotations, translations of body 0). */
static void root_placement(Model *m)
{
    static const double identity[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    memcpy(m->rotations, identity, sizeof identity);
    memset(m->translations, 0, 3 * sizeof(double));
}

/* Body's placement in the root from its parent's and its local placement (inlined as
 * hinge_placement). */
__attribute__((always_inline)) static inline void compose_placement(Model *m, int body)
{
    int parent = m->parent[body];
    double moved[3];
    mat3_mul(m->rotations + 9 * parent, m->local_rotation + 9 * body, m->rotations + 9 * body);
    mat3_vec(m->rotations + 9 * parent, m->local_translation + 3 * body, moved);
    for (int k = 0; k < 3; ++k)
        m->translations[3 * body + k] = m->translations[3 * parent + k] + moved[k];
}

/* The placements in the root (rotations, translations) from current local_placements. */
static void compose_placements(Model *m)
{
    root_placement(m);
    for (int body = 1; body < m->nb; ++body)
        compose_placement(m, body);
    m->world_placed = 1;
}

/* kinematics.body_placements (after hinge_positions); local_placements too */
static void body_placements(Model *m)
{
    local_placements(m);
    compose_placements(m);
}

/* body_placements of `body` and its ancestors only: all one frame's pose and Jacobian
 * read (on a branched tree most bodies are on other branches).  Root first, so each
 * placement is composed exactly as compose_placements does. */
static void chain_placements(Model *m, int body)
{
    int depth = 0;
    for (; body > 0; body = m->parent[body])
        m->chain[depth++] = body;
    m->world_placed = 0;
    root_placement(m);
    while (depth > 0) {
        body = m->chain[--depth];
        hinge_placement(m, body, m->local_rotation + 9 * body, m->local_translation + 3 * body);
        compose_placement(m, body);
    }
}

/* The motion, force and inertia transforms of body's joint (local_placements current) */
static void carry_motion(const Model *m, int body, const double *motion, double *out)
{
    transform_motion(m->local_rotation + 9 * body, m->local_translation + 3 * body, motion, out);
}

static void carry_force(const Model *m, int body, const double *force, double *out)
{
    transform_force_back(m->local_rotation + 9 * body, m->local_translation + 3 * body, force,
                         out);
}

static void carry_inertia(const Model *m, int body, const double *inertia, double *out)
{
    add_transformed_inertia(m->local_rotation + 9 * body, m->local_translation + 3 * body,
                            inertia, out);
}

/* kinematics.frame_placement */
static void frame_placement(const Model *m, int frame, double *rotation, double *translation)
{
    int body = m->frame_body[frame];
    double moved[3];
    mat3_mul(m->rotations + 9 * body, m->frame_rotation + 9 * frame, rotation);
    mat3_vec(m->rotations + 9 * body, m->frame_translation + 3 * frame, moved);
    for (int k = 0; k < 3; ++k)
        translation[k] = m->translations[3 * body + k] + moved[k];
}

/* external_forces.body_forces: wrenches [f; t] (root axes, about the frame origin) on
 * frames, as body wrenches; body placements must be current.  Returns whether any. */
static int body_forces(Model *m, const double *frames, const double *wrenches, int count)
{
    memset(m->body_forces, 0, 6 * m->nb * sizeof(double));
    for (int k = 0; k < count; ++k) {
        int frame = (int)frames[k], body = m->frame_body[frame];
        const double *wrench = wrenches + 6 * k, *origin = m->translations + 3 * body;
        double rotation[9], point[3], arm[3], moment[3], turned[3];
        frame_placement(m, frame, rotation, point);
        for (int i = 0; i < 3; ++i)
            arm[i] = point[i] - origin[i];
        cross(arm, wrench, turned);
        for (int i = 0; i < 3; ++i)
            moment[i] = wrench[3 + i] + turned[i];
        double *out = m->body_forces + 6 * body, force_body[3], moment_body[3];
        mat3t_vec(m->rotations + 9 * body, wrench, force_body);
        mat3t_vec(m->rotations + 9 * body, moment, moment_body);
        for (int i = 0; i < 3; ++i) {
            out[i] += force_body[i];
            out[3 + i] += moment_body[i];
        }
    }
    return count > 0;
}

/* ------------------------------------------------------------------ recursions */
static int is_zero6(const double *v)
{
    return v[0] == 0.0 && v[1] == 0.0 && v[2] == 0.0 && v[3] == 0.0 && v[4] == 0.0
           && v[5] == 0.0;
}

/* inverse_dynamics.force_gather: the body forces f (nb x 6, gathered in place) into
 * hinge torques (per hinge) */
__attribute__((always_inline))
static inline void force_gather(const Model *m, double *f, double *torque)
{
    const double *h = m->hinge_map;
    for (int body = m->nb - 1; body > 0; --body) {
        torque[body] = dot6(h + 6 * body, f + 6 * body);
        int parent = m->parent[body];
        if (parent > 0) {
            double carried[6];
            carry_force(m, body, f + 6 * body, carried);
            for (int k = 0; k < 6; ++k)
                f[6 * parent + k] += carried[k];
        }
    }
    torque[0] = 0.0;
}

/* inverse_dynamics.inverse_dynamics on hinge arrays (local_placements() current). */
static void newton_euler(Model *m, const double *p, const double *qd, const double *qdd,
                         int with_forces)
{
    const double *h = m->hinge_map;
    double *v = m->velocity, *a = m->acceleration, *f = m->force;
    memset(v, 0, 6 * sizeof(double));
    a[0] = -p[0]; a[1] = -p[1]; a[2] = -p[2]; a[3] = a[4] = a[5] = 0.0;
    for (int body = 1; body < m->nb; ++body) {
        int parent = m->parent[body];
        const double *hb = h + 6 * body;
        double joint_velocity[6], carried[6], product[6] = {0.0};
        /* a body at rest (gravity, or still joints near the root) has no velocity terms */
        if (qd[body] != 0.0 || !is_zero6(v + 6 * parent)) {
            carry_motion(m, body, v + 6 * parent, carried);
            for (int k = 0; k < 6; ++k) {
                joint_velocity[k] = hb[k] * qd[body];
                v[6 * body + k] = carried[k] + joint_velocity[k];
            }
            motion_cross(v + 6 * body, joint_velocity, product);
        } else
            memset(v + 6 * body, 0, 6 * sizeof(double));
        carry_motion(m, body, a + 6 * parent, carried);
        for (int k = 0; k < 6; ++k)
            a[6 * body + k] = carried[k] + hb[k] * qdd[body] + product[k];
    }
    for (int body = 1; body < m->nb; ++body) {
        const double *own = p + HEADER + PARAMS_PER_BODY * (body - 1);
        double momentum[6], accelerating[6], gyroscopic[6] = {0.0};
        own_inertia_apply(own, a + 6 * body, accelerating);
        if (!is_zero6(v + 6 * body)) {
            own_inertia_apply(own, v + 6 * body, momentum);
            force_cross(v + 6 * body, momentum, gyroscopic);
        }
        for (int k = 0; k < 6; ++k)
            f[6 * body + k] = accelerating[k] + gyroscopic[k]
                              - (with_forces ? m->body_forces[6 * body + k] : 0.0);
    }
    force_gather(m, m->force, m->torque);
}

/* newton_euler at rest (qd = qdd = 0, no wrenches), what gravity torques are: each
 * body's acceleration is -g alone, whose angular half stays 0, so carrying it is a
 * rotation (R^T a) and the body's force is (m a, h x a).  A third of newton_euler's
 * arithmetic per body, the same force_gather. */
static void rest_newton_euler(Model *m, const double *p)
{
    double *a = m->acceleration, *f = m->force;
    a[0] = -p[0]; a[1] = -p[1]; a[2] = -p[2];
    for (int body = 1; body < m->nb; ++body) {
        const double *own = p + HEADER + PARAMS_PER_BODY * (body - 1);
        double *ab = a + 3 * body, *fb = f + 6 * body;
        mat3t_vec(m->local_rotation + 9 * body, a + 3 * m->parent[body], ab);
        for (int k = 0; k < 3; ++k)
            fb[k] = own[0] * ab[k];
        cross(own + 1, ab, fb + 3);
    }
    force_gather(m, m->force, m->torque);
}

/* S (6) and the composite inertia (INERTIA_DOUBLES) per body in composite_body */
#define COMPOSITE_DOUBLES (6 + INERTIA_DOUBLES)

/* mass_matrix.mass_matrix into hinge_mass, by the composite-body algorithm in root axes:
 * M_ij = S_j . Ic_i S_i for j an ancestor of i (or i), with the hinge axes S and the
 * composite inertias Ic in root axes, each about its body's origin.  The inertias add up
 * along the tree by a shift only, and Ic_i S_i reaches each ancestor by one cross
 * product; carrying both joint by joint (a rotation and a translation each) took twice
 * as long on a 32-joint humanoid.  (About the root origin even the shift goes, but the
 * rotational inertias of small bodies far from it lose digits to m |p|^2.)  Only hinge
 * pairs on one path are written: all fold_hinges reads.  Composes the world placements
 * if they are not current. */
static void composite_body(Model *m, const double *p)
{
    int nb = m->nb;
    double *terms = m->articulated;
    const double *origin = m->translations;
    if (!m->world_placed)
        compose_placements(m);
    for (int body = 1; body < nb; ++body) {
        const double *r = m->rotations + 9 * body, *s = m->hinge_map + 6 * body;
        double *t = terms + COMPOSITE_DOUBLES * body;
        mat3_vec(r, s, t);
        mat3_vec(r, s + 3, t + 3);
        rotated_inertia(p + HEADER + PARAMS_PER_BODY * (body - 1), r, t + 6);
    }
    for (int body = nb - 1; body > 1; --body) {
        int parent = m->parent[body];
        if (parent > 0) {
            double d[3], shifted[INERTIA_DOUBLES], *to = terms + COMPOSITE_DOUBLES * parent + 6;
            for (int k = 0; k < 3; ++k)
                d[k] = origin[3 * body + k] - origin[3 * parent + k];
            shifted_inertia(terms + COMPOSITE_DOUBLES * body + 6, d, shifted);
            for (int k = 0; k < INERTIA_DOUBLES; ++k)
                to[k] += shifted[k];
        }
    }
    for (int body = 1; body < nb; ++body) {
        const double *t = terms + COMPOSITE_DOUBLES * body, *at = origin + 3 * body;
        double force[6];
        inertia_apply(t + 6, t, force);
        m->hinge_mass[body * nb + body] = dot6(t, force);
        for (int ancestor = m->parent[body]; ancestor > 0; ancestor = m->parent[ancestor]) {
            const double *s = terms + COMPOSITE_DOUBLES * ancestor, *to = origin + 3 * ancestor;
            double lever[3] = {at[0] - to[0], at[1] - to[1], at[2] - to[2]}, moment[3];
            cross(lever, force, moment);
            m->hinge_mass[body * nb + ancestor] = m->hinge_mass[ancestor * nb + body]
                = dot6(s, force) + s[3] * moment[0] + s[4] * moment[1] + s[5] * moment[2];
        }
    }
}

/* G^T D G of a hinge matrix D (nb x nb) on the rate map into out (rate_dof x rate_dof).
 * D couples a hinge only with its ancestors and descendants (a mass matrix, the
 * derivatives of the torques): only those entries are read, the others need not be set.
 * The terms are listed once per model (fold_terms): walking the tree per call spent
 * more on the walk than on the sums. */
static void fold_hinges(const Model *m, const double *hinge_matrix, double *out)
{
    int n = m->rate_dof;
    memset(out, 0, (size_t)n * n * sizeof(double));
    for (int k = 0; k < m->fold_count; ++k)
        out[m->fold_to[k]] += m->fold_scale[k] * hinge_matrix[m->fold_from[k]];
}

/* fold_hinges' terms: per rate-moved hinge i and each rate-moved ancestor j (or i), D_ij
 * into M_(rate i)(rate j) and D_ji into M_(rate j)(rate i), scaled by both multipliers */
static void fold_terms(Model *m)
{
    int nb = m->nb, n = m->rate_dof, count = 0;
    for (int a = 0; a < m->rate_count; ++a) {
        int i = m->rate_bodies[a], ri = m->rate_master[i];
        for (int j = i; j > 0; j = m->parent[j]) {
            if (!m->free[j])
                continue;
            int rj = m->rate_master[j];
            double scale = m->rate_multiplier[i] * m->rate_multiplier[j];
            m->fold_from[count] = i * nb + j;
            m->fold_to[count] = ri * n + rj;
            m->fold_scale[count++] = scale;
            if (j != i) {
                m->fold_from[count] = j * nb + i;
                m->fold_to[count] = rj * n + ri;
                m->fold_scale[count++] = scale;
            }
        }
    }
    m->fold_count = count;
}

/* G^T M G of the rate map into joint_mass */
static void joint_mass_matrix(Model *m)
{
    fold_hinges(m, m->hinge_mass, m->joint_mass);
}

/* articulated_body.gather (local placements current): hinges not `free` are prescribed */
static int articulated_gather(Model *m, const double *p, const double *qd, const double *tau,
                              const double *qdd_prescribed, const unsigned char *free,
                              int with_forces)
{
    int nb = m->nb;
    const double *h = m->hinge_map;
    double *v = m->velocity, *c = m->bias_acceleration, *z = m->bias_force;
    double *articulated = m->articulated;
    memcpy(articulated, m->inertia, 36 * nb * sizeof(double));
    memset(v, 0, 6 * sizeof(double));
    for (int body = 1; body < nb; ++body) {
        const double *hb = h + 6 * body;
        double joint_velocity[6], carried[6], momentum[6];
        carry_motion(m, body, v + 6 * m->parent[body], carried);
        for (int k = 0; k < 6; ++k) {
            joint_velocity[k] = hb[k] * qd[body];
            v[6 * body + k] = carried[k] + joint_velocity[k];
        }
        motion_cross(v + 6 * body, joint_velocity, c + 6 * body);
        mat6_vec(articulated + 36 * body, v + 6 * body, momentum);
        force_cross(v + 6 * body, momentum, z + 6 * body);
        if (with_forces)
            for (int k = 0; k < 6; ++k)
                z[6 * body + k] -= m->body_forces[6 * body + k];
    }
    double singular_below = p[3];
    for (int body = nb - 1; body > 0; --body) {
        int parent = m->parent[body];
        const double *hb = h + 6 * body;
        double *pb = articulated + 36 * body, *u = m->gain + 6 * body;
        double reduced[36], carried[6], moved[6];
        if (free[body]) {
            mat6_vec(pb, hb, u);
            double d = dot6(hb, u);
            if (!(d > singular_below))
                return SOA_SINGULAR;
            double inverse_d = 1.0 / d;
            m->inverse_d[body] = inverse_d;
            m->residual_torque[body] = tau[body] - dot6(hb, z + 6 * body);
            for (int i = 0; i < 6; ++i)
                for (int j = 0; j < 6; ++j)
                    reduced[6 * i + j] = pb[6 * i + j] - u[i] * u[j] * inverse_d;
            mat6_vec(reduced, c + 6 * body, moved);
            for (int k = 0; k < 6; ++k)
                carried[k] = z[6 * body + k] + moved[k]
                             + u[k] * m->residual_torque[body] * inverse_d;
        } else {
            double known[6];
            memcpy(reduced, pb, sizeof reduced);
            for (int k = 0; k < 6; ++k)
                known[k] = c[6 * body + k]
                           + hb[k] * (qdd_prescribed ? qdd_prescribed[body] : 0.0);
            mat6_vec(reduced, known, moved);
            for (int k = 0; k < 6; ++k)
                carried[k] = z[6 * body + k] + moved[k];
            memset(u, 0, 6 * sizeof(double));
            m->inverse_d[body] = 0.0;
            m->residual_torque[body] = 0.0;
        }
        if (parent > 0) {
            double through[6];
            carry_inertia(m, body, reduced, articulated + 36 * parent);
            carry_force(m, body, carried, through);
            for (int k = 0; k < 6; ++k)
                z[6 * parent + k] += through[k];
        }
    }
    return SOA_OK;
}

/* articulated_body.scatter into qdd_hinge and acceleration */
static void articulated_scatter(Model *m, const double *p, const double *qdd_prescribed,
                                const unsigned char *free)
{
    double *a = m->acceleration, *qdd = m->qdd_hinge;
    a[0] = -p[0]; a[1] = -p[1]; a[2] = -p[2]; a[3] = a[4] = a[5] = 0.0;
    qdd[0] = 0.0;
    for (int body = 1; body < m->nb; ++body) {
        const double *hb = m->hinge_map + 6 * body;
        double incoming[6];
        carry_motion(m, body, a + 6 * m->parent[body], incoming);
        for (int k = 0; k < 6; ++k)
            incoming[k] += m->bias_acceleration[6 * body + k];
        qdd[body] = qdd_prescribed ? qdd_prescribed[body] : 0.0;
        if (free[body])
            qdd[body] = m->inverse_d[body] * (m->residual_torque[body]
                                              - dot6(m->gain + 6 * body, incoming));
        for (int k = 0; k < 6; ++k)
            a[6 * body + k] = incoming[k] + hb[k] * qdd[body];
    }
}

/* kinematics.hinge_jacobian folded on the rate map (J G): the 6 x rate_dof Jacobian of
 * `frame` ([v; w] of its origin, root axes), row-major; root placements current. */
static void frame_jacobian(const Model *m, int frame, double *out)
{
    int n = m->rate_dof;
    memset(out, 0, 6 * n * sizeof(double));
    double rotation[9], point[3];
    frame_placement(m, frame, rotation, point);
    for (int body = m->frame_body[frame]; body > 0; body = m->parent[body]) {
        int column = m->rate_master[body];
        if (column < 0)
            continue;
        const double *r = m->rotations + 9 * body, *hb = m->hinge_map + 6 * body;
        double linear[3], angular[3], arm[3], turned[3];
        mat3_vec(r, hb, linear);
        mat3_vec(r, hb + 3, angular);
        for (int k = 0; k < 3; ++k)
            arm[k] = point[k] - m->translations[3 * body + k];
        cross(angular, arm, turned);
        double scale = m->rate_multiplier[body];
        for (int k = 0; k < 3; ++k) {
            out[k * n + column] += (linear[k] + turned[k]) * scale;
            out[(3 + k) * n + column] += angular[k] * scale;
        }
    }
}

/* ------------------------------------------------------------------ cores
 * Each core starts from current local placements (and, with wrenches, body forces from
 * the root placements): the calls compute them once (placements()). */
/* After hinge_positions: the local placements, and the root ones when `world` */
static void placements(Model *m, int world)
{
    local_placements(m);
    if (world)
        compose_placements(m);
}

/* x = M^-1 x with M = G^T M_hinge G as forward_core's coupled branch left it factored */
static void solve_factored_joint_mass(const Model *m, double *x)
{
    if (m->tree_sparse)
        soa_tree_substitute(m->joint_mass, x, m->rate_dof, m->rate_parent);
    else
        soa_cholesky_solve(m->joint_mass, x, m->rate_dof, 0);
}

/* The selected joints' accelerations: articulated-body recursion, or with coupled
 * hinges (mimic joints) G^T M G qdd = tau - G^T h as model/dense.py, by the tree's LTL
 * where that M keeps a tree's sparsity, else by Cholesky (m->joint_mass is left
 * factored: solve_factored_joint_mass). */
static int forward_core(Model *m, const double *qd, const double *tau,
                        const double *p, int with_forces, double *out)
{
    hinge_rates(m, qd, m->qd_hinge);
    if (m->couples) {
        memset(m->qdd_hinge, 0, m->nb * sizeof(double));
        newton_euler(m, p, m->qd_hinge, m->qdd_hinge, with_forces);
        joint_forces(m, m->torque, out);
        for (int k = 0; k < m->rate_dof; ++k)
            out[k] = tau[k] - out[k];
        composite_body(m, p);
        joint_mass_matrix(m);
        return m->tree_sparse ? soa_tree_solve(m->joint_mass, out, m->rate_dof, m->rate_parent)
                              : soa_cholesky_solve(m->joint_mass, out, m->rate_dof, 1);
    }
    hinge_rates(m, tau, m->tau_hinge);
    int status = articulated_gather(m, p, m->qd_hinge, m->tau_hinge, NULL, m->free, with_forces);
    if (status != SOA_OK)
        return status;
    articulated_scatter(m, p, NULL, m->free);
    joint_forces(m, m->qdd_hinge, out);
    return SOA_OK;
}

/* mixed_dynamics.mixed_dynamics: joints where `prescribed` is nonzero take their qdd, the
 * others their tau; out = [qdd_all; tau_all].  Hinges must not be coupled. */
static int mixed_core(Model *m, const double *qd, const double *qdd, const double *tau,
                      const double *prescribed, const double *p, int with_forces, double *out)
{
    hinge_rates(m, qd, m->qd_hinge);
    hinge_rates(m, qdd, m->qdd_given);
    hinge_rates(m, tau, m->tau_hinge);
    for (int body = 0; body < m->nb; ++body)
        m->call_free[body] = m->free[body] && prescribed[m->rate_master[body]] == 0.0;
    int status = articulated_gather(m, p, m->qd_hinge, m->tau_hinge, m->qdd_given, m->call_free,
                                    with_forces);
    if (status != SOA_OK)
        return status;
    articulated_scatter(m, p, m->qdd_given, m->call_free);
    /* hinge_forces: f = P a + z across each prescribed hinge, projected on it */
    for (int body = 1; body < m->nb; ++body) {
        if (m->call_free[body])
            continue;
        double force[6];
        mat6_vec(m->articulated + 36 * body, m->acceleration + 6 * body, force);
        for (int k = 0; k < 6; ++k)
            force[k] += m->bias_force[6 * body + k];
        m->tau_hinge[body] = dot6(m->hinge_map + 6 * body, force);
    }
    joint_forces(m, m->qdd_hinge, out);
    joint_forces(m, m->tau_hinge, out + m->rate_dof);
    return SOA_OK;
}

/* dense.mixed_dynamics where mimic joints couple hinges: the free block of
 * G^T M G qdd = tau - G^T h solved by Cholesky; out = [qdd_all; tau_all].  `work` holds
 * rate_dof (rate_dof + 1). */
static int dense_mixed_core(Model *m, const double *qd, const double *qdd, const double *tau,
                            const double *prescribed, const double *p, int with_forces,
                            double *work, double *out)
{
    int n = m->rate_dof, free_count = 0;
    double *qdd_all = out, *tau_all = out + n, *bias = tau_all;
    double *reduced = work, *rhs = work + (size_t)n * n, *mass = m->joint_mass;
    hinge_rates(m, qd, m->qd_hinge);
    memset(m->qdd_hinge, 0, m->nb * sizeof(double));
    newton_euler(m, p, m->qd_hinge, m->qdd_hinge, with_forces);
    joint_forces(m, m->torque, bias);
    composite_body(m, p);
    joint_mass_matrix(m);
    for (int i = 0; i < n; ++i) {
        if (prescribed[i] != 0.0)
            continue;
        double s = tau[i] - bias[i];
        for (int j = 0; j < n; ++j)
            if (prescribed[j] != 0.0)
                s -= mass[i * n + j] * qdd[j];
        int column = 0;
        for (int j = 0; j < n; ++j)
            if (prescribed[j] == 0.0)
                reduced[free_count * n + column++] = mass[i * n + j];
        rhs[free_count++] = s;
    }
    /* pack the free block's rows to free_count x free_count */
    for (int i = 0; i < free_count; ++i)
        memmove(reduced + (size_t)i * free_count, reduced + (size_t)i * n,
                free_count * sizeof(double));
    int status = soa_cholesky_solve(reduced, rhs, free_count, 1);
    if (status != SOA_OK)
        return status;
    for (int i = 0, k = 0; i < n; ++i)
        qdd_all[i] = prescribed[i] != 0.0 ? qdd[i] : rhs[k++];
    for (int i = 0; i < n; ++i) {
        if (prescribed[i] == 0.0) {
            tau_all[i] = tau[i];
            continue;
        }
        double s = bias[i];
        for (int j = 0; j < n; ++j)
            s += mass[i * n + j] * qdd_all[j];
        tau_all[i] = s;
    }
    return SOA_OK;
}

/* frame_wrench_map: wrench columns w (6 x width, row stride `stride`, root axes, about the
 * frame origin) as body wrenches added to carried[body] (6 x columns) from column `start`.
 * Body placements must be current. */
static void add_wrench_columns(const Model *m, int frame, const double *w, int stride, int width,
                               double *carried, int columns, int start)
{
    int body = m->frame_body[frame];
    const double *r = m->rotations + 9 * body, *offset = m->frame_translation + 3 * frame;
    double *z = carried + (size_t)body * 6 * columns + start;
    for (int c = 0; c < width; ++c) {
        /* [f; t] -> [R^T f; offset x R^T f + R^T t] */
        double f[3] = {w[c], w[stride + c], w[2 * stride + c]};
        double t[3] = {w[3 * stride + c], w[4 * stride + c], w[5 * stride + c]};
        double force[3], moment[3], turned[3];
        mat3t_vec(r, f, force);
        mat3t_vec(r, t, moment);
        cross(offset, force, turned);
        for (int i = 0; i < 3; ++i) {
            z[i * columns + c] += force[i];
            z[(3 + i) * columns + c] += turned[i] + moment[i];
        }
    }
}

/* task_space.compliance_gather: out = J M^-1 J^T of the wrench columns in `carried`
 * (nb x 6 x columns, kept: the correction scatter reads them), after the articulated-body
 * gather; `scratch` holds 7 x columns. */
static void compliance_gather(const Model *m, const double *carried, int columns, double *out,
                              double *scratch)
{
    double *row = scratch, *through = scratch + columns;      /* H Z; Z - U D^-1 H Z */
    double *mutable_carried = (double *)carried;
    memset(out, 0, (size_t)columns * columns * sizeof(double));
    for (int body = m->nb - 1; body > 0; --body) {
        const double *z = carried + (size_t)body * 6 * columns, *hb = m->hinge_map + 6 * body;
        for (int c = 0; c < columns; ++c) {
            double s = 0.0;
            for (int i = 0; i < 6; ++i)
                s += hb[i] * z[i * columns + c];
            row[c] = s;
        }
        memcpy(through, z, 6 * columns * sizeof(double));
        if (m->free[body]) {
            double inverse_d = m->inverse_d[body];
            const double *u = m->gain + 6 * body;
            for (int a = 0; a < columns; ++a)
                for (int b = 0; b < columns; ++b)
                    out[a * columns + b] += inverse_d * (row[a] * row[b]);
            for (int i = 0; i < 6; ++i)
                for (int c = 0; c < columns; ++c)
                    through[i * columns + c] -= u[i] * row[c] * inverse_d;
        }
        int parent = m->parent[body];
        if (parent > 0) {
            double *target = mutable_carried + (size_t)parent * 6 * columns;
            for (int c = 0; c < columns; ++c) {
                double force[6], back[6];
                for (int i = 0; i < 6; ++i)
                    force[i] = through[i * columns + c];
                carry_force(m, body, force, back);
                for (int i = 0; i < 6; ++i)
                    target[i * columns + c] += back[i];
            }
        }
    }
}

static void symmetrize(double *a, int n)
{
    for (int i = 0; i < n; ++i)
        for (int j = i + 1; j < n; ++j) {
            double value = 0.5 * (a[i * n + j] + a[j * n + i]);
            a[i * n + j] = a[j * n + i] = value;
        }
}

/* Unit wrenches along rows first..first+width-1 of [f; t] at each of `count` frames:
 * out = J M^-1 J^T, (count width) squared, symmetrized.  Hinges must not be coupled.
 * `carried` holds nb x 6 x columns, then 7 x columns of scratch. */
static int compliance_core(Model *m, const double *frames, int count, int first, int width,
                           const double *p, double *carried, double *out)
{
    int nb = m->nb, columns = count * width;
    static const double identity[36] = {1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0,
                                        0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1};
    memset(m->qd_hinge, 0, nb * sizeof(double));
    int status = articulated_gather(m, p, m->qd_hinge, m->qd_hinge, NULL, m->free, 0);
    if (status != SOA_OK)
        return status;
    memset(carried, 0, (size_t)nb * 6 * columns * sizeof(double));
    for (int k = 0; k < count; ++k)
        add_wrench_columns(m, (int)frames[k], identity + first, 6, width, carried, columns,
                           k * width);
    compliance_gather(m, carried, columns, out, carried + (size_t)nb * 6 * columns);
    symmetrize(out, columns);
    return SOA_OK;
}

/* Eigen-decomposition of a symmetric n x n matrix by cyclic Jacobi rotations: `a` is
 * overwritten (its diagonal ends as the eigenvalues, copied to `values`), `vectors`
 * (row-major n x n) gets the eigenvectors as columns.  Sweeps until no off-diagonal
 * element changes its diagonal neighbours' sum. */
static void symmetric_eigen(double *a, int n, double *values, double *vectors)
{
    for (int i = 0; i < n * n; ++i)
        vectors[i] = i % (n + 1) == 0 ? 1.0 : 0.0;
    for (int sweep = 0; sweep < 64; ++sweep) {
        int rotated = 0;
        for (int p = 0; p < n; ++p)
            for (int q = p + 1; q < n; ++q) {
                double apq = a[p * n + q], app = a[p * n + p], aqq = a[q * n + q];
                if (apq == 0.0 || (fabs(app) + 100.0 * fabs(apq) == fabs(app)
                                   && fabs(aqq) + 100.0 * fabs(apq) == fabs(aqq))) {
                    a[p * n + q] = a[q * n + p] = 0.0;
                    continue;
                }
                rotated = 1;
                double theta = (aqq - app) / (2.0 * apq);
                double t = fabs(theta) > 1e150 ? 0.5 / theta
                           : copysign(1.0, theta) / (fabs(theta) + sqrt(theta * theta + 1.0));
                double c = 1.0 / sqrt(t * t + 1.0), s = t * c;
                for (int k = 0; k < n; ++k) {
                    double akp = a[k * n + p], akq = a[k * n + q];
                    a[k * n + p] = c * akp - s * akq;
                    a[k * n + q] = s * akp + c * akq;
                }
                for (int k = 0; k < n; ++k) {
                    double apk = a[p * n + k], aqk = a[q * n + k];
                    a[p * n + k] = c * apk - s * aqk;
                    a[q * n + k] = s * apk + c * aqk;
                }
                a[p * n + q] = a[q * n + p] = 0.0;
                for (int k = 0; k < n; ++k) {
                    double vkp = vectors[k * n + p], vkq = vectors[k * n + q];
                    vectors[k * n + p] = c * vkp - s * vkq;
                    vectors[k * n + q] = s * vkp + c * vkq;
                }
            }
        if (!rotated)
            break;
    }
    for (int i = 0; i < n; ++i)
        values[i] = a[i * n + i];
}

/* rhs = a^-1 rhs (a: symmetric n x n, its Cholesky factor overwrites it) when the 2-norm
 * condition number of `a` is surely below 1 / rcond; else status 3: the reference then
 * decides the rank (DEFAULT_RCOND) and drops directions.  `scratch` holds n. */
static int solve_clearly_full_rank(double *a, double *rhs, int n, double *scratch)
{
    double norm = soa_one_norm(a, n);
    if (!(norm > 0.0) || soa_cholesky_solve(a, rhs, n, 1) != SOA_OK)
        return SOA_ILL_CONDITIONED;
    double inverse_norm = 0.0;
    for (int j = 0; j < n; ++j) {
        /* the 1-norm of a^-1, a column at a time from the factor */
        double s = 0.0;
        for (int i = 0; i < n; ++i)
            scratch[i] = i == j ? 1.0 : 0.0;
        soa_cholesky_solve(a, scratch, n, 0);
        for (int i = 0; i < n; ++i)
            s += fabs(scratch[i]);
        inverse_norm = s > inverse_norm ? s : inverse_norm;
    }
    /* cond_2 <= n cond_1: below SOA_CONDITION_LIMIT = 1 / (10 DEFAULT_RCOND), the
     * reference keeps every direction */
    return norm * inverse_norm * n < SOA_CONDITION_LIMIT ? SOA_OK : SOA_ILL_CONDITIONED;
}

/* Lambda = (compliance + damping I)^-1 by Cholesky where no rank or condition number is
 * asked for and none needs deciding: with damping (the reference then inverts whatever
 * the rank), or without when the compliance is surely of full rank (as in
 * solve_clearly_full_rank).  out as invert_compliance's, with condition NaN and rank -1;
 * status 3 otherwise (invert_compliance then decides).  `work` holds n^2 + 2 n. */
static int invert_compliance_by_cholesky(const double *compliance, int n, double damping,
                                         double *work, double *out)
{
    double *a = work, *column = work + (size_t)n * n, *scratch = column + n;
    memcpy(a, compliance, (size_t)n * n * sizeof(double));
    memcpy(out + n * n, compliance, (size_t)n * n * sizeof(double));
    for (int i = 0; i < n; ++i) {
        a[i * n + i] += damping;
        column[i] = 0.0;
    }
    int status = damping > 0.0 ? soa_cholesky_solve(a, column, n, 1)
                               : solve_clearly_full_rank(a, column, n, scratch);
    if (status != SOA_OK)
        return SOA_ILL_CONDITIONED;
    for (int j = 0; j < n; ++j) {
        for (int i = 0; i < n; ++i)
            column[i] = i == j ? 1.0 : 0.0;
        soa_cholesky_solve(a, column, n, 0);
        for (int i = 0; i < n; ++i)
            out[i * n + j] = column[i];
    }
    symmetrize(out, n);
    out[2 * n * n] = NAN;
    out[2 * n * n + 1] = -1.0;
    return SOA_OK;
}

/* constrained.py's rank of a symmetric matrix from its eigenvalues: how many lie above
 * *threshold = SOA_RANK_RCOND times the largest; -1, for the reference to decide, when the
 * largest is not positive and finite or an eigenvalue lies within round-off of the
 * threshold. */
static int decided_rank(const double *values, int n, double *threshold)
{
    double strongest = 0.0;
    for (int i = 0; i < n; ++i)
        strongest = values[i] > strongest ? values[i] : strongest;
    if (!(strongest > 0.0) || !isfinite(strongest))
        return -1;
    *threshold = SOA_RANK_RCOND * strongest;
    int rank = 0;
    for (int i = 0; i < n; ++i) {
        /* both eigen-solvers err by a few ulps of the largest eigenvalue */
        if (fabs(values[i] - *threshold) < 1e-3 * *threshold)
            return -1;
        rank += values[i] > *threshold;
    }
    return rank;
}

/* constrained.task_space_inertia after the compliance: its rank (decided_rank), condition
 * number (largest / smallest eigenvalue, inf below full rank) and Lambda = V diag(1 /
 * (values + damping)) V^T.  out: Lambda (n x n), the compliance (n x n), condition, rank.
 * Status 3, for the reference to decide (and raise), below full rank without damping or
 * when decided_rank leaves the rank to it.  `work` holds 2 n^2 + n. */
static int invert_compliance(const double *compliance, int n, double damping, double *work,
                             double *out)
{
    double *a = work, *vectors = work + n * n, *values = vectors + n * n;
    memcpy(a, compliance, (size_t)n * n * sizeof(double));
    memcpy(out + n * n, compliance, (size_t)n * n * sizeof(double));
    symmetric_eigen(a, n, values, vectors);
    double threshold, strongest = values[0], weakest = values[0];
    for (int i = 0; i < n; ++i) {
        strongest = values[i] > strongest ? values[i] : strongest;
        weakest = values[i] < weakest ? values[i] : weakest;
    }
    int rank = decided_rank(values, n, &threshold);
    if (rank < 0 || (rank < n && !(damping > 0.0)))
        return SOA_ILL_CONDITIONED;
    for (int i = 0; i < n; ++i)
        for (int j = i; j < n; ++j) {
            double s = 0.0;
            for (int k = 0; k < n; ++k)
                s += vectors[i * n + k] * vectors[j * n + k] / (values[k] + damping);
            out[i * n + j] = out[j * n + i] = s;
        }
    out[2 * n * n] = rank == n ? strongest / weakest : INFINITY;
    out[2 * n * n + 1] = rank;
    return SOA_OK;
}

/* constrained._truncated_solve of the constraint compliance (symmetric n x n, overwritten)
 * for hybrid dynamics: rhs becomes the least-squares nu through the directions kept, *rank
 * their count and `dropped` (n x (n - rank), by rows) the eigenvectors not kept.  By
 * Cholesky when the compliance is clearly of full rank, else (redundant constraints, or
 * more than the joints can meet) through the eigenvectors whose eigenvalues pass
 * decided_rank's threshold; status 3 when decided_rank leaves the rank to the reference.
 * `work` holds n^2 + 2 n. */
static int solve_constraints(double *compliance, double *rhs, int n, double *work, int *rank,
                             double *dropped)
{
    /* `square` holds the Cholesky factor, then (if that declines) the eigenvectors */
    double *square = work, *given = work + (size_t)n * n, *values = given + n;
    memcpy(square, compliance, (size_t)n * n * sizeof(double));
    memcpy(given, rhs, n * sizeof(double));
    *rank = n;
    if (solve_clearly_full_rank(square, rhs, n, values) == SOA_OK)
        return SOA_OK;
    symmetric_eigen(compliance, n, values, square);
    double threshold;
    if ((*rank = decided_rank(values, n, &threshold)) < 0)
        return SOA_ILL_CONDITIONED;
    int width = n - *rank;
    memset(rhs, 0, n * sizeof(double));
    for (int k = 0, d = 0; k < n; ++k) {
        if (values[k] > threshold) {
            double along = 0.0;
            for (int i = 0; i < n; ++i)
                along += square[i * n + k] * given[i];
            along /= values[k];
            for (int i = 0; i < n; ++i)
                rhs[i] += square[i * n + k] * along;
        } else {
            for (int i = 0; i < n; ++i)
                dropped[i * width + d] = square[i * n + k];
            ++d;
        }
    }
    return SOA_OK;
}

/* dense.task_space_compliance where mimic joints couple hinges: out = (J G) (G^T M G)^-1
 * (J G)^T of unit wrenches along rows first..first+width-1 at each frame, with the mass
 * matrix factored by Cholesky (status 2 when it is not definite).  Local and root
 * placements current; `work` holds (6 count + columns) rate_dof. */
static int dense_compliance_core(Model *m, const double *frames, int count, int first,
                                 int width, const double *p, double *work, double *out)
{
    int n = m->rate_dof, columns = count * width;
    double *jacobians = work, *solved = work + (size_t)6 * count * n;
    composite_body(m, p);
    joint_mass_matrix(m);
    for (int k = 0; k < count; ++k)
        frame_jacobian(m, (int)frames[k], jacobians + (size_t)6 * k * n);
    for (int c = 0; c < columns; ++c) {
        const double *row = jacobians + ((size_t)6 * (c / width) + first + c % width) * n;
        double *x = solved + (size_t)c * n;
        memcpy(x, row, n * sizeof(double));
        int status = soa_cholesky_solve(m->joint_mass, x, n, c == 0);
        if (status != SOA_OK)
            return status;
    }
    for (int a = 0; a < columns; ++a) {
        const double *row = jacobians + ((size_t)6 * (a / width) + first + a % width) * n;
        for (int b = 0; b < columns; ++b) {
            double s = 0.0;
            for (int k = 0; k < n; ++k)
                s += row[k] * solved[(size_t)b * n + k];
            out[a * columns + b] = s;
        }
    }
    symmetrize(out, columns);
    return SOA_OK;
}

/* task_space.classical_acceleration of frame `frame` from its body's velocity and
 * acceleration (body axes) and gravity g: [dv/dt; dw/dt] in root axes. */
static void classical_acceleration(const Model *m, int frame, const double *velocity,
                                   const double *acceleration, const double *g, double *out)
{
    int body = m->frame_body[frame];
    const double *offset = m->frame_translation + 3 * frame, *r = m->rotations + 9 * body;
    const double *v = velocity, *w = velocity + 3, *a_lin = acceleration,
                 *a_ang = acceleration + 3;
    double turned[3], moving[3], whirl[3], linear[3];
    cross(a_ang, offset, turned);
    cross(w, offset, moving);
    for (int i = 0; i < 3; ++i)
        moving[i] += v[i];
    cross(w, moving, whirl);
    for (int i = 0; i < 3; ++i)
        linear[i] = a_lin[i] + turned[i] + whirl[i];
    mat3_vec(r, linear, out);
    for (int i = 0; i < 3; ++i)
        out[i] += g[i];
    mat3_vec(r, a_ang, out + 3);
}

/* Popov-Vereshchagin on the tree (model/recursive.py hybrid_dynamics) for constraints
 * alpha_k^T a_k = beta_k at frames[k] (alpha: 6 x columns, blocks of widths[k] columns),
 * dependent ones dropped by solve_constraints (status 3 when it leaves the rank to the
 * numpy path).  Output: qdd, constraint torques (rate_dof each), nu (columns), each
 * constraint frame's classical acceleration (6), the rank, then the dropped directions
 * (columns x (columns - rank), by rows).
 * `work` holds nb x 6 x columns twice, 2 columns^2 + 7 columns. */
static int hybrid_core(Model *m, const double *qd, const double *tau, const double *frames,
                       const double *widths, int count, const double *alpha, const double *beta,
                       int columns, const double *p, int with_forces, double *work, double *out)
{
    int nb = m->nb, n = m->rate_dof;
    size_t block = (size_t)nb * 6 * columns;
    double *wrench_columns = work, *carried = work + block, *compliance = carried + block;
    double *scratch = compliance + (size_t)columns * columns, *nu = out + 2 * n;
    hinge_rates(m, qd, m->qd_hinge);
    hinge_rates(m, tau, m->tau_hinge);
    int status = articulated_gather(m, p, m->qd_hinge, m->tau_hinge, NULL, m->free, with_forces);
    if (status != SOA_OK)
        return status;
    articulated_scatter(m, p, NULL, m->free);           /* free motion: qdd_hinge, acceleration */
    memset(wrench_columns, 0, block * sizeof(double));
    for (int k = 0, start = 0; k < count; start += (int)widths[k], ++k)
        add_wrench_columns(m, (int)frames[k], alpha + start, columns, (int)widths[k],
                           wrench_columns, columns, start);
    memcpy(carried, wrench_columns, block * sizeof(double));
    compliance_gather(m, carried, columns, compliance, scratch);
    symmetrize(compliance, columns);
    /* rhs = beta - alpha^T a_free */
    for (int k = 0, start = 0; k < count; start += (int)widths[k], ++k) {
        int frame = (int)frames[k], body = m->frame_body[frame];
        double a[6];
        classical_acceleration(m, frame, m->velocity + 6 * body, m->acceleration + 6 * body, p,
                               a);
        for (int c = start; c < start + (int)widths[k]; ++c) {
            double drift = 0.0;
            for (int i = 0; i < 6; ++i)
                drift += alpha[i * columns + c] * a[i];
            nu[c] = beta[c] - drift;
        }
    }
    double *ranked = out + 2 * n + columns + 6 * count;
    int rank;
    int status_nu = solve_constraints(compliance, nu, columns, scratch, &rank, ranked + 1);
    if (status_nu != SOA_OK)
        return status_nu;
    *ranked = rank;
    /* correction_scatter: accelerations added by the constraint wrenches */
    double *delta_acceleration = m->force, *delta_qdd = m->torque;
    memset(delta_acceleration, 0, 6 * sizeof(double));
    for (int body = 1; body < nb; ++body) {
        const double *hb = m->hinge_map + 6 * body;
        double incoming[6];
        carry_motion(m, body, delta_acceleration + 6 * m->parent[body], incoming);
        delta_qdd[body] = 0.0;
        if (m->free[body]) {
            const double *z = carried + (size_t)body * 6 * columns;
            double force[6];
            for (int i = 0; i < 6; ++i) {
                double s = 0.0;
                for (int c = 0; c < columns; ++c)
                    s += z[i * columns + c] * nu[c];
                force[i] = s;
            }
            delta_qdd[body] = m->inverse_d[body] * (dot6(hb, force)
                                                    - dot6(m->gain + 6 * body, incoming));
        }
        for (int k = 0; k < 6; ++k)
            delta_acceleration[6 * body + k] = incoming[k] + hb[k] * delta_qdd[body];
    }
    for (int body = 1; body < nb; ++body) {
        m->qdd_hinge[body] += delta_qdd[body];
        for (int k = 0; k < 6; ++k)
            m->acceleration[6 * body + k] += delta_acceleration[6 * body + k];
    }
    joint_forces(m, m->qdd_hinge, out);
    /* constraint torques: force_gather of the wrenches (columns nu), J^T alpha nu */
    double *applied = carried;
    for (int body = 0; body < nb; ++body)
        for (int i = 0; i < 6; ++i) {
            double s = 0.0;
            for (int c = 0; c < columns; ++c)
                s += wrench_columns[((size_t)body * 6 + i) * columns + c] * nu[c];
            applied[6 * body + i] = s;
        }
    force_gather(m, applied, m->tau_hinge);
    joint_forces(m, m->tau_hinge, out + n);
    for (int k = 0; k < count; ++k) {
        int frame = (int)frames[k], body = m->frame_body[frame];
        classical_acceleration(m, frame, m->velocity + 6 * body, m->acceleration + 6 * body, p,
                               out + 2 * n + columns + 6 * k);
    }
    return SOA_OK;
}

/* dense.hybrid_dynamics where mimic joints couple hinges: Gauss' least constraint with
 * G^T M G factored by forward_core; the output and statuses of hybrid_core.  Local and
 * root placements current; `work` holds (6 count + 2 columns) rate_dof + 2 columns^2 + 7 columns. */
static int dense_hybrid_core(Model *m, const double *qd, const double *tau, const double *frames,
                             const double *widths, int count, const double *alpha,
                             const double *beta, int columns, const double *p, int with_forces,
                             double *work, double *out)
{
    int n = m->rate_dof;
    double *jacobian = work, *rows = jacobian + (size_t)6 * count * n;
    double *inverse_mass_at = rows + (size_t)columns * n;       /* M^-1 rows^T, by rows */
    double *compliance = inverse_mass_at + (size_t)columns * n;
    double *scratch = compliance + (size_t)columns * columns, *qdd = out, *nu = out + 2 * n;
    /* qdd_free; velocity and acceleration are then the drift motion (qdd = 0), and
     * joint_mass holds the factor of G^T M G */
    int status = forward_core(m, qd, tau, p, with_forces, qdd);
    if (status != SOA_OK)
        return status;
    for (int k = 0, start = 0; k < count; start += (int)widths[k], ++k) {
        int frame = (int)frames[k], body = m->frame_body[frame];
        double drift[6], *frame_jacobian_rows = jacobian + (size_t)6 * k * n;
        frame_jacobian(m, frame, frame_jacobian_rows);
        classical_acceleration(m, frame, m->velocity + 6 * body, m->acceleration + 6 * body, p,
                               drift);
        for (int c = start; c < start + (int)widths[k]; ++c) {
            double *row = rows + (size_t)c * n, drifting = 0.0, moving = 0.0;
            for (int j = 0; j < n; ++j) {
                double s = 0.0;
                for (int i = 0; i < 6; ++i)
                    s += alpha[i * columns + c] * frame_jacobian_rows[i * n + j];
                row[j] = s;
                moving += s * qdd[j];
            }
            for (int i = 0; i < 6; ++i)
                drifting += alpha[i * columns + c] * drift[i];
            nu[c] = beta[c] - drifting - moving;
            memcpy(inverse_mass_at + (size_t)c * n, row, n * sizeof(double));
            solve_factored_joint_mass(m, inverse_mass_at + (size_t)c * n);
        }
    }
    for (int a = 0; a < columns; ++a)
        for (int b = 0; b < columns; ++b) {
            double s = 0.0;
            for (int j = 0; j < n; ++j)
                s += rows[(size_t)a * n + j] * inverse_mass_at[(size_t)b * n + j];
            compliance[a * columns + b] = s;
        }
    symmetrize(compliance, columns);
    double *ranked = out + 2 * n + columns + 6 * count;
    int rank;
    status = solve_constraints(compliance, nu, columns, scratch, &rank, ranked + 1);
    if (status != SOA_OK)
        return status;
    *ranked = rank;
    double *constraint_torques = out + n;
    for (int j = 0; j < n; ++j) {
        double moved = 0.0, pushed = 0.0;
        for (int c = 0; c < columns; ++c) {
            moved += inverse_mass_at[(size_t)c * n + j] * nu[c];
            pushed += rows[(size_t)c * n + j] * nu[c];
        }
        qdd[j] += moved;
        constraint_torques[j] = pushed;
    }
    /* kinematics.body_motion at qdd for the frames' accelerations */
    hinge_rates(m, qdd, m->qdd_hinge);
    newton_euler(m, p, m->qd_hinge, m->qdd_hinge, with_forces);
    for (int k = 0; k < count; ++k) {
        int frame = (int)frames[k], body = m->frame_body[frame];
        classical_acceleration(m, frame, m->velocity + 6 * body, m->acceleration + 6 * body, p,
                               out + 2 * n + columns + 6 * k);
    }
    return SOA_OK;
}

/* Inverse dynamics with the full map (qd and qdd NULL: zero). */
static void inverse_core(Model *m, const double *qd, const double *qdd, const double *p,
                         int with_forces, double *out)
{
    if (!qd && !qdd && !with_forces) {
        rest_newton_euler(m, p);
        joint_forces(m, m->torque, out);
        return;
    }
    if (qd)
        hinge_rates(m, qd, m->qd_hinge);
    else
        memset(m->qd_hinge, 0, m->nb * sizeof(double));
    if (qdd)
        hinge_rates(m, qdd, m->qdd_hinge);
    else
        memset(m->qdd_hinge, 0, m->nb * sizeof(double));
    newton_euler(m, p, m->qd_hinge, m->qdd_hinge, with_forces);
    joint_forces(m, m->torque, out);
}

/* ------------------------------------------------------------------ Python glue */
static Model *model_of(PyObject *object)
{
    return (Model *)PyCapsule_GetPointer(object, CAPSULE_NAME);
}

/* At least `doubles` of workspace kept in the model (grown, never shrunk), or NULL when
 * out of memory */
static double *scratch(Model *m, size_t doubles)
{
    if (doubles > m->scratch_size) {
        double *grown = realloc(m->scratch, doubles * sizeof(double));
        if (!grown)
            return NULL;
        m->scratch = grown;
        m->scratch_size = doubles;
    }
    return m->scratch;
}

/* `count` vectors of the given lengths from args, checked (runtime.h rules) */
static int vectors(PyObject *const *args, int count, const npy_intp *lengths,
                   const double **out)
{
    for (int k = 0; k < count; ++k)
        if (!(out[k] = soa_array(args[k], 1, lengths[k], 0)))
            return SOA_BAD_INPUT;
    for (int k = 0; k < count; ++k)
        if (soa_check(out[k], (int)lengths[k], SOA_MAX_MAGNITUDE))
            return SOA_BAD_INPUT;
    return SOA_OK;
}

static PyObject *new_array(int ndim, npy_intp rows, npy_intp cols, double **data)
{
    npy_intp shape[3] = {rows, cols, cols};
    PyObject *result = soa_new_answer(ndim, shape);
    if (result)
        *data = (double *)PyArray_DATA((PyArrayObject *)result);
    return result;
}

static PyObject *answer(PyObject *result, int status)
{
    if (status == SOA_OK)
        return result;
    Py_XDECREF(result);
    return PyLong_FromLong(status);
}

/* The index of the frame named `name`, or -1 when it is no frame's name or no exact str
 * (whose lookup could run Python code).  The index is checked too: the dict is a Python
 * object the model shares with its CompiledTree. */
static int named_frame(Model *m, PyObject *name)
{
    PyObject *index = PyUnicode_CheckExact(name)
        ? PyDict_GetItemWithError(m->frame_index, name) : NULL;
    long frame = index && PyLong_CheckExact(index) ? PyLong_AsLong(index) : -1;
    if (PyErr_Occurred())
        PyErr_Clear();
    return frame >= 0 && frame < m->nf ? (int)frame : -1;
}

/* A wrench [f; t]: a float64 ndarray of 6 (any strides; native byte order and aligned,
 * else the numpy path reads it), or a list or tuple of 6 floats or ints */
static int parse_wrench(PyObject *value, double *out)
{
    if (PyArray_Check(value)) {
        PyArrayObject *array = (PyArrayObject *)value;
        if (PyArray_TYPE(array) != NPY_DOUBLE || PyArray_NDIM(array) != 1
            || PyArray_DIM(array, 0) != 6 || !PyArray_ISNOTSWAPPED(array)
            || !PyArray_ISALIGNED(array))
            return SOA_BAD_INPUT;
        for (int k = 0; k < 6; ++k)
            out[k] = *(const double *)PyArray_GETPTR1(array, k);
        return SOA_OK;
    }
    if (!(PyList_CheckExact(value) || PyTuple_CheckExact(value)) || PySequence_Fast_GET_SIZE(value) != 6)
        return SOA_BAD_INPUT;
    for (int k = 0; k < 6; ++k) {
        PyObject *item = PySequence_Fast_GET_ITEM(value, k);
        if (PyFloat_Check(item))
            out[k] = PyFloat_AS_DOUBLE(item);
        else if (PyLong_CheckExact(item)) {
            out[k] = PyLong_AsDouble(item);
            if (out[k] == -1.0 && PyErr_Occurred()) {
                PyErr_Clear();
                return SOA_BAD_INPUT;
            }
        } else
            return SOA_BAD_INPUT;
    }
    return SOA_OK;
}

/* A call's wrenches, {frame name: [f; t]} (root axes, about the frame origin), into
 * wrench_frames and wrench_values; status 1 for anything else (an unknown frame, a
 * malformed wrench: the numpy path names the problem). */
static int parse_wrenches(Model *m, PyObject *wrenches, int *count)
{
    if (!PyDict_CheckExact(wrenches))
        return SOA_BAD_INPUT;
    PyObject *name, *value;
    Py_ssize_t position = 0;
    int k = 0;
    while (PyDict_Next(wrenches, &position, &name, &value)) {
        int frame = named_frame(m, name);
        if (frame < 0 || k >= m->nf)
            return SOA_BAD_INPUT;
        m->wrench_frames[k] = (double)frame;
        if (parse_wrench(value, m->wrench_values + 6 * k) != SOA_OK)
            return SOA_BAD_INPUT;
        ++k;
    }
    if (soa_check(m->wrench_values, 6 * k, SOA_MAX_MAGNITUDE))
        return SOA_BAD_INPUT;
    *count = k;
    return SOA_OK;
}

/* f(model, q, [qd, [qdd,]] [wrenches,] p) -> tau: inputs vectors of length dof */
static PyObject *inverse_call(PyObject *const *args, Py_ssize_t nargs, int inputs, int wrenched)
{
    if (soa_wrong_count(nargs, 2 + inputs + wrenched))
        return NULL;
    Model *m = model_of(args[0]);
    if (!m)
        return NULL;
    const double *data[4];
    npy_intp lengths[4] = {m->dof, m->dof, m->dof, m->params};
    data[3] = soa_array(args[1 + inputs + wrenched], 1, m->params, 0);
    if (!data[3] || vectors(args + 1, inputs, lengths, data) != SOA_OK)
        return PyLong_FromLong(SOA_BAD_INPUT);
    int count = 0;
    if (wrenched && parse_wrenches(m, args[1 + inputs], &count) != SOA_OK)
        return PyLong_FromLong(SOA_BAD_INPUT);
    double *out;
    PyObject *result = new_array(1, m->dof, 0, &out);
    if (!result)
        return NULL;
    hinge_positions(m, data[0]);
    placements(m, wrenched);
    if (wrenched)
        body_forces(m, m->wrench_frames, m->wrench_values, count);
    inverse_core(m, inputs > 1 ? data[1] : NULL, inputs > 2 ? data[2] : NULL, data[3],
                 wrenched, out);
    return result;
}

static PyObject *gravity_torques(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    return inverse_call(args, nargs, 1, 0);
}

static PyObject *bias_torques(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    return inverse_call(args, nargs, 2, 0);
}

static PyObject *inverse_dynamics(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    return inverse_call(args, nargs, 3, 0);
}

static PyObject *inverse_dynamics_wrenches(PyObject *self, PyObject *const *args,
                                           Py_ssize_t nargs)
{
    (void)self;
    return inverse_call(args, nargs, 3, 1);
}

/* f(model, q, qd, tau, [wrenches,] p) -> qdd of the selected joints */
static PyObject *forward_call(PyObject *const *args, Py_ssize_t nargs, int wrenched)
{
    if (soa_wrong_count(nargs, 5 + wrenched))
        return NULL;
    Model *m = model_of(args[0]);
    if (!m)
        return NULL;
    const double *data[3], *p = soa_array(args[4 + wrenched], 1, m->params, 0);
    npy_intp lengths[3] = {m->dof, m->rate_dof, m->rate_dof};
    int count = 0;
    if (!p || vectors(args + 1, 3, lengths, data) != SOA_OK
        || (wrenched && parse_wrenches(m, args[4], &count) != SOA_OK))
        return PyLong_FromLong(SOA_BAD_INPUT);
    double *out;
    PyObject *result = new_array(1, m->rate_dof, 0, &out);
    if (!result)
        return NULL;
    unpack_inertias(m, p);
    hinge_positions(m, data[0]);
    placements(m, wrenched);
    if (wrenched)
        body_forces(m, m->wrench_frames, m->wrench_values, count);
    return answer(result, forward_core(m, data[1], data[2], p, wrenched, out));
}

/* f(model, q, qd, qdd, tau, prescribed, [wrenches,] p) -> [qdd_all; tau_all], (2, dof);
 * prescribed: per joint, nonzero where its qdd is given. */
static PyObject *mixed_call(PyObject *const *args, Py_ssize_t nargs, int wrenched)
{
    if (soa_wrong_count(nargs, 7 + wrenched))
        return NULL;
    Model *m = model_of(args[0]);
    if (!m)
        return NULL;
    const double *data[5], *p = soa_array(args[6 + wrenched], 1, m->params, 0);
    npy_intp lengths[5] = {m->dof, m->rate_dof, m->rate_dof, m->rate_dof, m->rate_dof};
    int count = 0;
    if (!p || vectors(args + 1, 5, lengths, data) != SOA_OK
        || (wrenched && parse_wrenches(m, args[6], &count) != SOA_OK))
        return PyLong_FromLong(SOA_BAD_INPUT);
    double *out, *work = m->couples ? scratch(m, (size_t)m->rate_dof * (m->rate_dof + 1)) : NULL;
    if (m->couples && !work)
        return PyErr_NoMemory();
    PyObject *result = new_array(2, 2, m->rate_dof, &out);
    if (!result)
        return NULL;
    unpack_inertias(m, p);
    hinge_positions(m, data[0]);
    placements(m, wrenched);
    if (wrenched)
        body_forces(m, m->wrench_frames, m->wrench_values, count);
    return answer(result, m->couples
        ? dense_mixed_core(m, data[1], data[2], data[3], data[4], p, wrenched, work, out)
        : mixed_core(m, data[1], data[2], data[3], data[4], p, wrenched, out));
}

static PyObject *mixed_dynamics(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    return mixed_call(args, nargs, 0);
}

static PyObject *mixed_dynamics_wrenches(PyObject *self, PyObject *const *args,
                                         Py_ssize_t nargs)
{
    (void)self;
    return mixed_call(args, nargs, 1);
}

/* f(model, frames, first, width, q, damping, info, p) -> [Lambda, Lambda^-1, condition,
 * rank] (invert_compliance; without `info`, invert_compliance_by_cholesky where it
 * answers: condition NaN, rank -1), flat, of unit wrenches along rows first..first+width-1 of [f; t]
 * at each frame (float64 frame indices), for the selected joints: the articulated-body
 * compliance recursion, or dense_compliance_core where mimic joints couple hinges.
 * Status 3 (the numpy path decides) when the rank is in doubt.  Its workspace (sized by
 * the frames) stays in the model. */
static PyObject *task_space_inertia(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (soa_wrong_count(nargs, 8))
        return NULL;
    Model *m = model_of(args[0]);
    if (!m)
        return NULL;
    int info = PyObject_IsTrue(args[6]);
    long first = PyLong_Check(args[2]) ? PyLong_AsLong(args[2]) : -1;
    long width = PyLong_Check(args[3]) ? PyLong_AsLong(args[3]) : -1;
    double damping = PyFloat_Check(args[5]) ? PyFloat_AS_DOUBLE(args[5]) : -1.0;
    if (PyErr_Occurred())
        PyErr_Clear();
    npy_intp frame_count = PyArray_Check(args[1]) ? PyArray_SIZE((PyArrayObject *)args[1]) : 0;
    /* (at most INT_MAX / 6 frames: their columns are counted in an int) */
    const double *frames = frame_count >= 1 && frame_count <= INT_MAX / 6
        ? soa_array(args[1], 1, frame_count, 0) : NULL;
    const double *q, *p = soa_array(args[7], 1, m->params, 0);
    npy_intp length = m->dof;
    if (!frames || !p || first < 0 || width < 1 || first + width > 6 || info < 0
        || !(damping >= 0.0 && damping <= SOA_MAX_MAGNITUDE)
        || vectors(args + 4, 1, &length, &q) != SOA_OK)
        return PyLong_FromLong(SOA_BAD_INPUT);
    int count = (int)frame_count;
    for (int k = 0; k < count; ++k)
        if (!(frames[k] >= 0 && frames[k] < m->nf))
            return PyLong_FromLong(SOA_BAD_INPUT);
    int columns = count * (int)width;
    size_t carried_size = ((size_t)m->nb * 6 + 7) * columns;
    size_t dense_size = ((size_t)6 * count + columns) * m->rate_dof;
    carried_size = dense_size > carried_size ? dense_size : carried_size;
    size_t size = carried_size + (size_t)columns * columns + 2 * (size_t)columns * columns + columns;
    double *out, *carried = scratch(m, size);
    if (!carried)
        return PyErr_NoMemory();
    double *compliance = carried + carried_size, *work = compliance + (size_t)columns * columns;
    PyObject *result = new_array(1, 2 * (npy_intp)columns * columns + 2, 0, &out);
    if (!result)
        return NULL;
    unpack_inertias(m, p);
    hinge_positions(m, q);
    placements(m, 1);
    int status = m->couples
        ? dense_compliance_core(m, frames, count, (int)first, (int)width, p, carried,
                                compliance)
        : compliance_core(m, frames, count, (int)first, (int)width, p, carried, compliance);
    if (status == SOA_OK && (info || invert_compliance_by_cholesky(compliance, columns, damping,
                                                                   work, out) != SOA_OK))
        status = invert_compliance(compliance, columns, damping, work, out);
    return answer(result, status);
}

/* A float64 ndarray (not a subclass, native byte order, aligned, any strides) of `ndim`
 * dimensions, the first `rows` long; NULL for anything else. */
static PyArrayObject *strided_array(PyObject *object, int ndim, npy_intp rows)
{
    if (!PyArray_CheckExact(object))
        return NULL;
    PyArrayObject *array = (PyArrayObject *)object;
    if (PyArray_NDIM(array) != ndim || PyArray_TYPE(array) != NPY_DOUBLE
        || !PyArray_ISNOTSWAPPED(array) || !PyArray_ISALIGNED(array)
        || PyArray_DIM(array, 0) != rows)
        return NULL;
    return array;
}

/* One constraint of a call, a list or tuple (frame name, alpha, beta): the name a frame's
 * (named_frame), alpha a 6 x w array and beta an array of w (strided_array, 1 <= w <= 6).
 * Its frame index, with the name, alpha and beta (borrowed), or -1 for anything else.  It
 * runs no Python code. */
static int constraint_parts(Model *m, PyObject *constraint, PyObject **name,
                            PyArrayObject **alpha, PyArrayObject **beta)
{
    if (!(PyList_CheckExact(constraint) || PyTuple_CheckExact(constraint))
        || PySequence_Fast_GET_SIZE(constraint) != 3)
        return -1;
    *name = PySequence_Fast_GET_ITEM(constraint, 0);
    *alpha = strided_array(PySequence_Fast_GET_ITEM(constraint, 1), 2, 6);
    if (!*alpha)
        return -1;
    npy_intp width = PyArray_DIM(*alpha, 1);
    if (width < 1 || width > 6
        || !(*beta = strided_array(PySequence_Fast_GET_ITEM(constraint, 2), 1, width)))
        return -1;
    return named_frame(m, *name);
}

/* The count and total columns of a call's constraints, a list or tuple of at least one
 * constraint_parts(), or status 1 for anything else (the Python layer then parses them
 * and names what is wrong, or retries with the arrays it converted). */
static int constraint_shape(Model *m, PyObject *constraints, int *count, int *columns)
{
    if (!(PyList_CheckExact(constraints) || PyTuple_CheckExact(constraints)))
        return SOA_BAD_INPUT;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(constraints);
    if (n < 1 || n > INT_MAX / 6)
        return SOA_BAD_INPUT;
    int total = 0;
    for (Py_ssize_t k = 0; k < n; ++k) {
        PyObject *name;
        PyArrayObject *alpha, *beta;
        if (constraint_parts(m, PySequence_Fast_GET_ITEM(constraints, k), &name, &alpha,
                             &beta) < 0)
            return SOA_BAD_INPUT;
        total += (int)PyArray_DIM(alpha, 1);
    }
    *count = (int)n;
    *columns = total;
    return SOA_OK;
}

/* The constraints of constraint_shape()'s `count` and `columns`, packed as hybrid_core
 * reads them: frame indices and widths (count each), alpha (6 x columns, by rows) and
 * beta (columns), and their names into `names` (a new tuple of count).  Every item is
 * checked again as it is read: what ran between the two passes (allocating `names` may
 * run a collection's finalizers) may have changed a list.  Status 1 when they no longer
 * have that shape, or a value is NaN, inf or beyond SOA_MAX_MAGNITUDE. */
static int pack_constraints(Model *m, PyObject *constraints, int count, int columns,
                            double *frames, double *widths, double *alpha, double *beta,
                            PyObject *names)
{
    if (!(PyList_CheckExact(constraints) || PyTuple_CheckExact(constraints))
        || PySequence_Fast_GET_SIZE(constraints) != count)
        return SOA_BAD_INPUT;
    npy_intp start = 0;
    for (int k = 0; k < count; ++k) {
        PyObject *name;
        PyArrayObject *block, *target;
        int frame = constraint_parts(m, PySequence_Fast_GET_ITEM(constraints, k), &name,
                                     &block, &target);
        if (frame < 0)
            return SOA_BAD_INPUT;
        npy_intp width = PyArray_DIM(block, 1);
        if (width > columns - start)
            return SOA_BAD_INPUT;
        frames[k] = (double)frame;
        widths[k] = (double)width;
        for (npy_intp c = 0; c < width; ++c) {
            for (int i = 0; i < 6; ++i)
                alpha[i * columns + start + c] = *(const double *)PyArray_GETPTR2(block, i, c);
            beta[start + c] = *(const double *)PyArray_GETPTR1(target, c);
        }
        Py_INCREF(name);
        PyTuple_SET_ITEM(names, k, name);
        start += width;
    }
    if (start != columns || soa_check(alpha, 6 * columns, SOA_MAX_MAGNITUDE)
        || soa_check(beta, columns, SOA_MAX_MAGNITUDE))
        return SOA_BAD_INPUT;
    return SOA_OK;
}

/* The answer of hybrid_call from the cores' output `out` (a copy the call owns: making
 * the answer's objects may run finalizers, which may call this model again): (qdd,
 * constraint torques, nu, {frame name: classical acceleration}, rank, dropped directions
 * (columns x (columns - rank)), [the slice of nu of each constraint]), the parts
 * HybridDynamics holds; `names` and `widths` those of pack_constraints. */
static PyObject *hybrid_answer(PyObject *names, int n, int columns, const double *widths,
                               const double *out)
{
    Py_ssize_t count = PyTuple_GET_SIZE(names);
    PyObject *parts = PyTuple_New(7);
    if (!parts)
        return NULL;
    npy_intp sizes[3] = {n, n, columns};
    for (int k = 0; k < 3; ++k) {
        double *part;
        PyObject *array = new_array(1, sizes[k], 0, &part);
        if (!array)
            goto failed;
        memcpy(part, out, sizes[k] * sizeof(double));
        out += sizes[k];
        PyTuple_SET_ITEM(parts, k, array);
    }
    const double *ranked = out + 6 * count;
    int rank = (int)ranked[0];
    double *dropped_directions;
    PyObject *accelerations = PyDict_New(), *rank_object = PyLong_FromLong(rank),
             *dropped = new_array(2, columns, columns - rank, &dropped_directions),
             *slices = PyList_New(count);
    if (accelerations)
        PyTuple_SET_ITEM(parts, 3, accelerations);
    if (rank_object)
        PyTuple_SET_ITEM(parts, 4, rank_object);
    if (dropped)
        PyTuple_SET_ITEM(parts, 5, dropped);
    if (slices)
        PyTuple_SET_ITEM(parts, 6, slices);
    if (!accelerations || !rank_object || !dropped || !slices)
        goto failed;
    memcpy(dropped_directions, ranked + 1, (size_t)columns * (columns - rank) * sizeof(double));
    for (Py_ssize_t k = 0, start = 0; k < count; start += (Py_ssize_t)widths[k], ++k) {
        double *acceleration;
        PyObject *array = new_array(1, 6, 0, &acceleration);
        if (!array)
            goto failed;
        memcpy(acceleration, out + 6 * k, 6 * sizeof(double));
        int stored = PyDict_SetItem(accelerations, PyTuple_GET_ITEM(names, k), array);
        Py_DECREF(array);
        PyObject *first = PyLong_FromSsize_t(start);
        PyObject *stop = PyLong_FromSsize_t(start + (Py_ssize_t)widths[k]);
        PyObject *rows = first && stop ? PySlice_New(first, stop, NULL) : NULL;
        Py_XDECREF(first);
        Py_XDECREF(stop);
        if (stored < 0 || !rows) {
            Py_XDECREF(rows);
            goto failed;
        }
        PyList_SET_ITEM(slices, k, rows);
    }
    return parts;
failed:
    Py_DECREF(parts);
    return NULL;
}

/* f(model, q, qd, tau, constraints, [wrenches,] p) -> hybrid_answer() (hybrid_core);
 * constraints as constraint_shape() reads them. */
static PyObject *hybrid_call(PyObject *const *args, Py_ssize_t nargs, int wrenched)
{
    if (soa_wrong_count(nargs, 6 + wrenched))
        return NULL;
    Model *m = model_of(args[0]);
    if (!m)
        return NULL;
    const double *data[3], *p = soa_array(args[5 + wrenched], 1, m->params, 0);
    npy_intp lengths[3] = {m->dof, m->rate_dof, m->rate_dof};
    int count, columns;
    if (!p || vectors(args + 1, 3, lengths, data) != SOA_OK
        || constraint_shape(m, args[4], &count, &columns) != SOA_OK)
        return PyLong_FromLong(SOA_BAD_INPUT);
    int wrench_count = 0;
    if (wrenched && parse_wrenches(m, args[5], &wrench_count) != SOA_OK)
        return PyLong_FromLong(SOA_BAD_INPUT);
    size_t tree_size = 2 * (size_t)m->nb * 6 * columns;
    size_t dense_size = ((size_t)6 * count + 2 * columns) * m->rate_dof;
    size_t core_size = (dense_size > tree_size ? dense_size : tree_size)
                       + 2 * (size_t)columns * columns + 7 * (size_t)columns;
    int n = m->rate_dof;
    /* the cores' workspace, the packed constraints, then the cores' output */
    double *work = scratch(m, core_size + 2 * (size_t)count + 7 * (size_t)columns
                              + 2 * (size_t)n + columns + 6 * (size_t)count + 1
                              + (size_t)columns * columns);
    if (!work)
        return PyErr_NoMemory();
    double *frames = work + core_size, *widths = frames + count, *alpha = widths + count;
    double *beta = alpha + 6 * (size_t)columns, *out = beta + columns;
    PyObject *names = PyTuple_New(count);
    if (!names)
        return NULL;
    if (pack_constraints(m, args[4], count, columns, frames, widths, alpha, beta, names)
        != SOA_OK) {
        Py_DECREF(names);
        return PyLong_FromLong(SOA_BAD_INPUT);
    }
    unpack_inertias(m, p);
    hinge_positions(m, data[0]);
    body_placements(m);
    if (wrenched)
        body_forces(m, m->wrench_frames, m->wrench_values, wrench_count);
    int (*core)(Model *, const double *, const double *, const double *, const double *, int,
                const double *, const double *, int, const double *, int, double *, double *)
        = m->couples ? dense_hybrid_core : hybrid_core;
    int status = core(m, data[1], data[2], frames, widths, count, alpha, beta, columns, p,
                      wrenched, work, out);
    size_t out_size = 2 * (size_t)n + columns + 6 * (size_t)count + 1
                      + (size_t)columns * columns;
    double *owned = status == SOA_OK ? PyMem_Malloc((out_size + count) * sizeof(double)) : NULL;
    PyObject *result = NULL;
    if (status != SOA_OK)
        result = PyLong_FromLong(status);
    else if (!owned)
        PyErr_NoMemory();
    else {
        memcpy(owned, out, out_size * sizeof(double));
        memcpy(owned + out_size, widths, count * sizeof(double));
        result = hybrid_answer(names, n, columns, owned + out_size, owned);
    }
    PyMem_Free(owned);
    Py_DECREF(names);
    return result;
}

static PyObject *hybrid_dynamics(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    return hybrid_call(args, nargs, 0);
}

static PyObject *hybrid_dynamics_wrenches(PyObject *self, PyObject *const *args,
                                          Py_ssize_t nargs)
{
    (void)self;
    return hybrid_call(args, nargs, 1);
}

static PyObject *forward_dynamics(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    return forward_call(args, nargs, 0);
}

static PyObject *forward_dynamics_wrenches(PyObject *self, PyObject *const *args,
                                           Py_ssize_t nargs)
{
    (void)self;
    return forward_call(args, nargs, 1);
}

/* f(model, q, tau, {frame: wrench}, p) -> tau + G^T sum J^T w, tau plus the joint
 * torques of the wrenches: forward dynamics with wrenches is forward dynamics at these
 * (qdd is linear in tau), which lets a robot's own forward dynamics kernel answer them. */
static PyObject *torques_with_wrenches(PyObject *self, PyObject *const *args,
                                       Py_ssize_t nargs)
{
    (void)self;
    if (soa_wrong_count(nargs, 5))
        return NULL;
    Model *m = model_of(args[0]);
    if (!m)
        return NULL;
    const double *data[2], *p = soa_array(args[4], 1, m->params, 0);
    npy_intp lengths[2] = {m->dof, m->rate_dof};
    int count = 0;
    if (!p || vectors(args + 1, 2, lengths, data) != SOA_OK
        || parse_wrenches(m, args[3], &count) != SOA_OK)
        return PyLong_FromLong(SOA_BAD_INPUT);
    double *out;
    PyObject *result = new_array(1, m->rate_dof, 0, &out);
    if (!result)
        return NULL;
    hinge_positions(m, data[0]);
    /* only each wrenched body's path to the root: a fingertip of a 45-body humanoid
     * places and gathers along 12 bodies, where the whole tree's passes took 3x longer */
    memset(m->torque, 0, m->nb * sizeof(double));
    for (int k = 0; k < count; ++k) {
        int body = m->frame_body[(int)m->wrench_frames[k]];
        chain_placements(m, body);
        body_forces(m, m->wrench_frames + k, m->wrench_values + 6 * k, 1);
        double force[6], carried[6];
        memcpy(force, m->body_forces + 6 * body, sizeof force);
        for (; body > 0; body = m->parent[body]) {
            m->torque[body] += dot6(m->hinge_map + 6 * body, force);
            carry_force(m, body, force, carried);
            memcpy(force, carried, sizeof force);
        }
    }
    joint_forces(m, m->torque, out);
    for (int k = 0; k < m->rate_dof; ++k)
        out[k] += data[1][k];
    return result;
}

/* f(model, q, p) -> G^T M G of the selected joints */
static PyObject *mass_matrix(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (soa_wrong_count(nargs, 3))
        return NULL;
    Model *m = model_of(args[0]);
    if (!m)
        return NULL;
    const double *q, *p = soa_array(args[2], 1, m->params, 0);
    npy_intp length = m->dof;
    if (!p || vectors(args + 1, 1, &length, &q) != SOA_OK)
        return PyLong_FromLong(SOA_BAD_INPUT);
    double *out;
    PyObject *result = new_array(2, m->rate_dof, m->rate_dof, &out);
    if (!result)
        return NULL;
    hinge_positions(m, q);      /* (composite_body reads the inertias from p) */
    local_placements(m);
    composite_body(m, p);
    joint_mass_matrix(m);
    memcpy(out, m->joint_mass, m->rate_dof * m->rate_dof * sizeof(double));
    return result;
}

static int frame_index(Model *m, PyObject *object)
{
    long frame = PyLong_Check(object) ? PyLong_AsLong(object) : -1;
    if (frame == -1 && PyErr_Occurred())
        PyErr_Clear();
    return frame >= 0 && frame < m->nf ? (int)frame : -1;
}

/* f(model, frame, q, p) -> 6 x (selected joints) Jacobian (kinematics.hinge_jacobian, J G) */
static PyObject *jacobian(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (soa_wrong_count(nargs, 4))
        return NULL;
    Model *m = model_of(args[0]);
    if (!m)
        return NULL;
    int frame = frame_index(m, args[1]);
    const double *q, *p = soa_array(args[3], 1, m->params, 0);
    npy_intp length = m->dof;
    if (frame < 0 || !p || vectors(args + 2, 1, &length, &q) != SOA_OK)
        return PyLong_FromLong(SOA_BAD_INPUT);
    double *out;
    PyObject *result = new_array(2, 6, m->rate_dof, &out);
    if (!result)
        return NULL;
    hinge_positions(m, q);
    chain_placements(m, m->frame_body[frame]);
    frame_jacobian(m, frame, out);
    return result;
}

static void write_pose(const double *rotation, const double *translation, double *out)
{
    for (int i = 0; i < 3; ++i) {
        for (int j = 0; j < 3; ++j)
            out[4 * i + j] = rotation[3 * i + j];
        out[4 * i + 3] = translation[i];
    }
    out[12] = out[13] = out[14] = 0.0;
    out[15] = 1.0;
}

/* f(model, frame, q, p) -> 4x4 pose of the frame; frame -1: (frames, 4, 4) of every frame.
 * p is checked but not read: poses take the calling convention of the other functions. */
static PyObject *frame_poses(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (soa_wrong_count(nargs, 4))
        return NULL;
    Model *m = model_of(args[0]);
    if (!m)
        return NULL;
    long requested = PyLong_Check(args[1]) ? PyLong_AsLong(args[1]) : -2;
    if (requested == -1 && PyErr_Occurred()) {     /* beyond a long: no frame */
        PyErr_Clear();
        requested = -2;
    }
    int every = requested == -1;
    int frame = every ? -1 : frame_index(m, args[1]);
    const double *q;
    npy_intp length = m->dof;
    if ((!every && frame < 0) || !soa_array(args[3], 1, m->params, 0)
        || vectors(args + 2, 1, &length, &q) != SOA_OK)
        return PyLong_FromLong(SOA_BAD_INPUT);
    double *out;
    PyObject *result = every ? new_array(3, m->nf, 4, &out) : new_array(2, 4, 4, &out);
    if (!result)
        return NULL;
    hinge_positions(m, q);
    if (every)
        body_placements(m);
    else
        chain_placements(m, m->frame_body[frame]);
    double rotation[9], translation[3];
    for (int k = every ? 0 : frame; k < (every ? m->nf : frame + 1); ++k) {
        frame_placement(m, k, rotation, translation);
        write_pose(rotation, translation, out + (every ? 16 * k : 0));
    }
    return result;
}

/* ------------------------------------------------------------------ batches over the CPUs */
static void lay_out(Model *m);

/* Sample s of a batch (`batch`: what the caller's run reads) on model m, which it may use
 * as workspace, with `space` of scratch (the caller's size; NULL when it asked for none). */
typedef int (*SampleRun)(Model *m, const void *batch, double *space, npy_intp s);

/* A worker takes GENERIC_CHUNK samples at a time from *next (shared by the batch's
 * workers), so that one whose CPU is slowed takes fewer instead of holding the batch up. */
typedef struct {
    Model *model;               /* the caller's model, or `copy` */
    Model copy;                 /* the caller's model with a workspace of its own */
    SampleRun run;
    const void *batch;
    double *space;
    npy_intp *next, count, failed;
    int status;
} Worker;

/* Samples of 1-50 us: an atomic add per 8 is nothing, and 8 leave a slowed worker little
 * to finish after the others. */
#define GENERIC_CHUNK 8

static void *work(void *argument)
{
    Worker *w = argument;
    w->status = SOA_OK;
    npy_intp s, end;
    while (w->status == SOA_OK && soa_take_chunk(w->next, GENERIC_CHUNK, w->count, &s, &end)) {
        for (; s < end; ++s)
            if ((w->status = w->run(w->model, w->batch, w->space, s)) != SOA_OK) {
                w->failed = s;
                break;
            }
    }
    return NULL;
}

/* Fewer samples than this per worker: copying the workspace and starting a thread cost
 * more than the samples they take over. */
#define SAMPLES_PER_WORKER 32

static void free_workers(Worker *workers, int count)
{
    for (int k = 0; k < count; ++k) {
        free(workers[k].copy.block);
        free(workers[k].space);
    }
    free(workers);
}

/* Workers on copies of m (structure, unpacked inertias and all), each with
 * `space_doubles` of scratch: NULL when memory runs short. */
static Worker *make_workers(const Model *m, int count, size_t space_doubles)
{
    Worker *workers = calloc((size_t)count, sizeof(Worker));
    if (!workers)
        return NULL;
    for (int k = 0; k < count; ++k) {
        Worker *w = workers + k;
        w->copy = *m;
        w->copy.scratch = NULL;         /* (no sample grows it) */
        w->copy.scratch_size = 0;
        w->copy.block = malloc(m->block_bytes);
        w->space = space_doubles ? malloc(space_doubles * sizeof(double)) : NULL;
        if (!w->copy.block || (space_doubles && !w->space)) {
            free_workers(workers, k + 1);
            return NULL;
        }
        memcpy(w->copy.block, m->block, m->block_bytes);
        lay_out(&w->copy);
        w->model = &w->copy;
    }
    return workers;
}

/* Samples 0 .. count - 1 of a batch: split over the CPUs this process may use, without
 * the GIL, each worker on its own copy of m (so m's workspace, which calls from other
 * threads use, is never shared); in order on m and `space` where the batch is too
 * small for that.  Every sample is the same arithmetic either way.  SOA_OK, or the
 * status of the first failing sample and its index in *failed. */
static int run_samples(Model *m, SampleRun run, const void *batch, double *space,
                       size_t space_doubles, npy_intp count, npy_intp *failed)
{
    int workers_count = soa_workers(count, SAMPLES_PER_WORKER);
    Worker *workers = workers_count > 1 ? make_workers(m, workers_count, space_doubles) : NULL;
    npy_intp next = 0;
    if (!workers) {
        Worker here = {.model = m, .run = run, .batch = batch, .space = space, .next = &next,
                       .count = count};
        work(&here);
        *failed = here.failed;
        return here.status;
    }
    for (int k = 0; k < workers_count; ++k) {
        workers[k].run = run;
        workers[k].batch = batch;
        workers[k].next = &next;
        workers[k].count = count;
    }
    Py_BEGIN_ALLOW_THREADS
    soa_in_parallel(work, workers, sizeof *workers, workers_count);
    Py_END_ALLOW_THREADS
    /* a worker stops at its first failure: the batch's first is the least of them (each
     * chunk before it was taken and run to its end, or to a failure of its own) */
    int status = SOA_OK;
    for (int k = 0; k < workers_count; ++k)
        if (workers[k].status != SOA_OK && (status == SOA_OK || workers[k].failed < *failed)) {
            status = workers[k].status;
            *failed = workers[k].failed;
        }
    free_workers(workers, workers_count);
    return status;
}

/* What one sample of batch_call reads */
typedef struct {
    const double *data[3], *p;
    int inputs, forward;
    double *out;
} DynamicsBatch;

static int dynamics_sample(Model *m, const void *batch, double *space, npy_intp s)
{
    (void)space;
    const DynamicsBatch *b = batch;
    const double *sample[3] = {NULL, NULL, NULL};
    for (int k = 0; k < b->inputs; ++k) {
        sample[k] = b->data[k] + s * m->dof;
        if (soa_check(sample[k], m->dof, SOA_MAX_MAGNITUDE))
            return SOA_BAD_INPUT;
    }
    hinge_positions(m, sample[0]);
    local_placements(m);
    if (b->forward)
        return forward_core(m, sample[1], sample[2], b->p, 0, b->out + s * m->dof);
    inverse_core(m, sample[1], sample[2], b->p, 0, b->out + s * m->dof);
    return SOA_OK;
}

/* Batches: f(model, Q, [QD, QDD | QD, TAU], p) over the rows of (N, dof) arrays */
static PyObject *batch_call(PyObject *const *args, Py_ssize_t nargs, int inputs, int forward)
{
    if (soa_wrong_count(nargs, 2 + inputs))
        return NULL;
    Model *m = model_of(args[0]);
    if (!m)
        return NULL;
    DynamicsBatch batch = {.p = soa_array(args[1 + inputs], 1, m->params, 0),
                           .inputs = inputs, .forward = forward};
    npy_intp count = -1, failed = 0;
    if (!batch.p)
        return PyLong_FromLong(SOA_BAD_INPUT);
    for (int k = 0; k < inputs; ++k) {
        if (!(batch.data[k] = soa_array(args[1 + k], 2, count, m->dof)))
            return PyLong_FromLong(SOA_BAD_INPUT);
        count = PyArray_DIM((PyArrayObject *)args[1 + k], 0);
    }
    PyObject *result = new_array(2, count, m->dof, &batch.out);
    if (!result)
        return NULL;
    unpack_inertias(m, batch.p);
    int status = run_samples(m, dynamics_sample, &batch, NULL, 0, count, &failed);
    return answer(result, status == SOA_OK ? SOA_OK : (int)(4 * failed + status));
}

static PyObject *gravity_torques_batch(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    return batch_call(args, nargs, 1, 0);
}

static PyObject *inverse_dynamics_batch(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    return batch_call(args, nargs, 3, 0);
}

static PyObject *forward_dynamics_batch(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    return batch_call(args, nargs, 3, 1);
}

/* ------------------------------------------------------------------ the model object */
/* The one allocation holding a model's structure and workspace (nb, nf, rate_dof set):
 * per body the structure (42), then the workspace in the order lay_out takes it. */
static size_t model_block_bytes(const Model *m)
{
    size_t nb = (size_t)m->nb, nf = (size_t)m->nf, n = m->rate_dof > 0 ? (size_t)m->rate_dof : 1;
    size_t doubles = nb * (42 + 6 + 9 + 3 + 9 + 3 + 36 * 2 + 6 * 8 + 2 + 2 * nb) + nf * (12 + 7)
                     + n * n;
    size_t ints = nb * (8 + 2 * nb) + nf;
    return doubles * sizeof(double) + ints * sizeof(int) + 2 * nb;
}

/* Points every array of m into m->block. */
static void lay_out(Model *m)
{
    int nb = m->nb, nf = m->nf, n = m->rate_dof > 0 ? m->rate_dof : 1;
    double *d = (double *)m->block;
#define TAKE(field, count) (m->field = d, d += (count))
    TAKE(axis, 3 * nb); TAKE(joint_rotation, 9 * nb); TAKE(joint_translation, 3 * nb);
    TAKE(turn_sine, 9 * nb); TAKE(turn_cosine, 9 * nb);
    TAKE(hinge_map, 6 * nb); TAKE(multiplier, nb); TAKE(offset, nb); TAKE(rate_multiplier, nb);
    TAKE(frame_rotation, 9 * nf); TAKE(frame_translation, 3 * nf);
    TAKE(wrench_frames, nf); TAKE(wrench_values, 6 * nf);
    TAKE(q_hinge, nb); TAKE(qd_hinge, nb); TAKE(qdd_hinge, nb); TAKE(qdd_given, nb); TAKE(tau_hinge, nb);
    TAKE(torque, nb); TAKE(local_rotation, 9 * nb); TAKE(local_translation, 3 * nb);
    TAKE(rotations, 9 * nb); TAKE(translations, 3 * nb);
    TAKE(inertia, 36 * nb); TAKE(articulated, 36 * nb); TAKE(velocity, 6 * nb);
    TAKE(acceleration, 6 * nb); TAKE(force, 6 * nb); TAKE(body_forces, 6 * nb);
    TAKE(bias_acceleration, 6 * nb); TAKE(bias_force, 6 * nb); TAKE(gain, 6 * nb);
    TAKE(inverse_d, nb); TAKE(residual_torque, nb); TAKE(hinge_mass, nb * nb);
    TAKE(joint_mass, n * n); TAKE(fold_scale, nb * nb);
#undef TAKE
    int *i = (int *)d;
#define TAKE_INT(field, count) (m->field = i, i += (count))
    TAKE_INT(parent, nb); TAKE_INT(type, nb); TAKE_INT(master, nb); TAKE_INT(rate_master, nb);
    TAKE_INT(frame_body, nf); TAKE_INT(rate_bodies, nb); TAKE_INT(rate_parent, nb);
    TAKE_INT(chain, nb); TAKE_INT(rate_subtree_end, nb); TAKE_INT(fold_from, nb * nb);
    TAKE_INT(fold_to, nb * nb);
#undef TAKE_INT
    m->free = (unsigned char *)i;
    m->call_free = m->free + nb;
}

static void free_model(PyObject *capsule)
{
    Model *m = model_of(capsule);
    if (m) {
        Py_XDECREF(m->frame_index);
        free(m->scratch);
        free(m->block);
        free(m);
    }
}

/* Whether M = G^T M_hinge G keeps a tree's sparsity along rate_parent (each rate's
 * nearest ancestor rate, earlier): the ancestor hinges of every hinge of a rate move only
 * that rate and rates on its chain of ancestors.  Each rate's chain is marked once
 * (mark: rate_dof ints) and each ancestor hinge looked up in it, so the work is the
 * bodies times the depth of the tree; walking the chain again per ancestor hinge made it
 * cubic in the depth, which a long chain turned into seconds. */
static int rates_nest(const Model *m, int *mark)
{
    for (int r = 0; r < m->rate_dof; ++r)
        mark[r] = -1;
    for (int a = 0; a < m->rate_count; ++a) {
        int b = m->rate_bodies[a];
        for (int k = m->rate_master[b]; k >= 0 && mark[k] != a; k = m->rate_parent[k])
            mark[k] = a;
        for (int up = m->parent[b]; up > 0; up = m->parent[up])
            if (m->free[up] && mark[m->rate_master[up]] != a)
                return 0;
    }
    return 1;
}

/* The rate structure of m (parent, free, rate_* set): rate_parent, tree_sparse,
 * rate_subtree_end, rates_are_bodies.  0 when out of memory. */
static int rate_structure(Model *m)
{
    int nb = m->nb;
    /* Without mimic joints each rate must also move its hinge unscaled, so that
     * tree_factor's pivots are the ABA's. */
    m->tree_sparse = 1;
    for (int r = 0; r < m->rate_dof; ++r)
        m->rate_parent[r] = -2;
    for (int a = 0; a < m->rate_count; ++a) {
        int b = m->rate_bodies[a], r = m->rate_master[b], above = -1;
        for (int up = m->parent[b]; up > 0 && above < 0; up = m->parent[up])
            if (m->free[up] && m->rate_master[up] != r)
                above = m->rate_master[up];
        if (above > m->rate_parent[r])
            m->rate_parent[r] = above;
        if (!m->couples && m->rate_multiplier[b] != 1.0)
            m->tree_sparse = 0;
    }
    for (int r = 0; r < m->rate_dof; ++r)
        if (m->rate_parent[r] == -2 || m->rate_parent[r] >= r)
            m->tree_sparse = 0;
    if (m->tree_sparse) {
        int *mark = malloc((m->rate_dof > 0 ? (size_t)m->rate_dof : 1) * sizeof(int));
        if (!mark)
            return 0;
        m->tree_sparse = rates_nest(m, mark);
        free(mark);
    }
    for (int r = 0; r < m->rate_dof; ++r)
        m->rate_subtree_end[r] = r + 1;
    for (int r = m->rate_dof - 1; r >= 0 && m->tree_sparse; --r) {
        int above = m->rate_parent[r];
        if (above >= 0 && m->rate_subtree_end[r] > m->rate_subtree_end[above])
            m->rate_subtree_end[above] = m->rate_subtree_end[r];
    }
    m->rates_are_bodies = m->tree_sparse && m->rate_count == nb - 1 && m->rate_dof == nb - 1;
    for (int b = 1; b < nb; ++b)
        if (m->rate_master[b] != b - 1)
            m->rates_are_bodies = 0;
    return 1;
}

/* A model from make_model's arrays (data, in its argument order) without its frame
 * index; NULL when out of memory.  Plain C, run without the GIL: the arrays are the
 * caller's and stay alive and unchanged for the call. */
static Model *new_model(const double *sizes, const double **data)
{
    int nb = (int)sizes[0], nf = (int)sizes[3];
    Model *m = calloc(1, sizeof(Model));
    if (!m)
        return NULL;
    m->nb = nb;
    m->dof = (int)sizes[1];
    m->rate_dof = (int)sizes[2];
    m->nf = nf;
    m->couples = (int)sizes[4];
    m->params = HEADER + PARAMS_PER_BODY * (nb - 1);
    m->block_bytes = model_block_bytes(m);
    m->block = calloc(m->block_bytes, 1);
    if (!m->block) {
        free(m);
        return NULL;
    }
    lay_out(m);
    for (int b = 0; b < nb; ++b) {
        m->parent[b] = (int)data[0][b];
        m->type[b] = (int)data[1][b];
        m->master[b] = (int)data[6][b];
        m->multiplier[b] = data[7][b];
        m->offset[b] = data[8][b];
        m->rate_master[b] = (int)data[9][b];
        m->rate_multiplier[b] = data[10][b];
        m->free[b] = b > 0 && m->rate_master[b] >= 0;
        if (m->free[b])
            m->rate_bodies[m->rate_count++] = b;
    }
    if (!rate_structure(m)) {
        free(m->block);
        free(m);
        return NULL;
    }
    fold_terms(m);
    memcpy(m->axis, data[2], 3 * nb * sizeof(double));
    memcpy(m->joint_rotation, data[3], 9 * nb * sizeof(double));
    memcpy(m->joint_translation, data[4], 3 * nb * sizeof(double));
    memcpy(m->hinge_map, data[5], 6 * nb * sizeof(double));
    for (int b = 1; b < nb; ++b)
        if (m->type[b] == JOINT_ROTATION) {
            /* K = skew(a) and K K = a a^T - |a|^2 1 (joints.rotation_about_axis) */
            const double *a = m->axis + 3 * b;
            double squared = a[0] * a[0] + a[1] * a[1] + a[2] * a[2];
            double skew[9] = {0.0, -a[2], a[1], a[2], 0.0, -a[0], -a[1], a[0], 0.0}, twice[9];
            for (int i = 0; i < 3; ++i)
                for (int j = 0; j < 3; ++j)
                    twice[3 * i + j] = a[i] * a[j] - (i == j ? squared : 0.0);
            mat3_mul(m->joint_rotation + 9 * b, skew, m->turn_sine + 9 * b);
            mat3_mul(m->joint_rotation + 9 * b, twice, m->turn_cosine + 9 * b);
        }
    for (int f = 0; f < nf; ++f)
        m->frame_body[f] = (int)data[11][f];
    memcpy(m->frame_rotation, data[12], 9 * nf * sizeof(double));
    memcpy(m->frame_translation, data[13], 3 * nf * sizeof(double));
    return m;
}

/* make_model(sizes, parent, type, axis, joint_rotation, joint_translation, hinge_map,
 *            master, multiplier, offset, rate_master, rate_multiplier,
 *            frame_body, frame_rotation, frame_translation, frame_index)
 * sizes = [nb, dof, rate_dof, frames, couples]; every argument a float64 array
 * (generic.py packs them) but frame_index, a {frame name: index} dict.  The model is
 * built without the GIL: a large tree's tables take long enough to stall the threads
 * serving the model the caller is replacing. */
static PyObject *make_model(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (soa_wrong_count(nargs, 16))
        return NULL;
    if (!PyDict_CheckExact(args[15])) {
        PyErr_SetString(PyExc_TypeError, "make_model: frame_index must be a dict");
        return NULL;
    }
    const double *sizes = soa_array(args[0], 1, 5, 0);
    if (!sizes) {
        PyErr_SetString(PyExc_ValueError, "make_model: sizes must be 5 float64 values");
        return NULL;
    }
    int nb = (int)sizes[0], nf = (int)sizes[3];
    npy_intp lengths[14] = {nb, nb, 3 * nb, 9 * nb, 3 * nb, 6 * nb, nb, nb, nb, nb, nb,
                            nf, 9 * nf, 3 * nf};
    const double *data[14];
    for (int k = 0; k < 14; ++k)
        if (!(data[k] = soa_array(args[1 + k], 1, lengths[k], 0))) {
            PyErr_Format(PyExc_ValueError, "make_model: argument %d has the wrong shape", k + 1);
            return NULL;
        }
    Model *m;
    Py_BEGIN_ALLOW_THREADS
    m = new_model(sizes, data);
    Py_END_ALLOW_THREADS
    if (!m)
        return PyErr_NoMemory();
    Py_INCREF(args[15]);
    m->frame_index = args[15];
    PyObject *capsule = PyCapsule_New(m, CAPSULE_NAME, free_model);
    if (!capsule) {
        Py_DECREF(m->frame_index);
        free(m->block);
        free(m);
    }
    return capsule;
}

#include "generic_derivatives.c"

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
