/* Spatial algebra: 3x3, 6-vector and inertia products in the plux form.
 * Part of generic.c (included there, one translation unit). */
/* ------------------------------------------------------------------ small algebra */
/* Forced inline: -O3 leaves most of these as calls in the loops over bodies, whose
 * arguments and results then go through memory (inlined, fewer instructions in every
 * generic function measured: docs/performance.md, "Design measurements"). */
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
