/* Derivatives of the dynamics (algorithms/derivatives.py, model/derivatives.py), compiled.
 *
 * Included by generic.c before its method table; uses its Model and helpers.  Forward
 * dynamics derivatives and the Python glue are in generic/forward_derivatives.c and
 * generic/bindings_derivatives.c, included at the end (one translation unit).
 * The numpy reference carries forward-mode tangents through Newton-Euler (O(nb^2)
 * 6x6 products).  Here the same derivatives come from their closed form in root
 * axes (the structure Carpentier and Mansard 2018 exploit): turning hinge j by dq
 * moves every body of its subtree rigidly, so each quantity of the subtree changes
 * covariantly (S_j x) except where it involves the bodies upstream of j.  With S,
 * v, a, F the hinge map, velocity, acceleration and gathered force of each body,
 * Ic the composite inertia and, summed over the subtree of i,
 *   B(i) = sum_k of the 6x6 map w -> I_k (w x v_k) + w x* (I_k v_k) + v_k x* (I_k w)
 *        (zero where v_k = 0),
 *   E(i) = sum_k of the wrenches' turning, 6x3: a root-axes wrench about its link
 *        origin moves with the link but does not turn with it,
 * and per hinge j with parent body l: w_j = S_j x v_l, u_j = S_j x a_l - w_j x v_l,
 *   j ancestor of i or i itself:
 *     dtau_i/dq_j  = -(Ic_i S_i).u_j - (B_i^T S_i).w_j - (E_i^T S_i).omega_j
 *     dtau_i/dqd_j = (B_i^T S_i).S_j - 2 (Ic_i S_i).w_j
 *   j in the subtree of i (j != i):
 *     dtau_i/dq_j  = S_i.(S_j x* F_j - Ic_j u_j - B_j w_j - E_j omega_j)
 *     dtau_i/dqd_j = S_i.(B_j S_j - 2 Ic_j w_j)
 * O(nb) 3x3 work (v, a and F by Newton-Euler in root axes; Ic and B summed in
 * compact form, see BODY_DOUBLES) plus two dot products per (ancestor, descendant)
 * pair.  Forward dynamics derivatives are -M^-1 of these at qdd = FD(q, qd, tau), and
 * M^-1: on a tree and with mimic joints, M and qdd come from the same pass
 * (accelerate_terms), and the solves go along the tree where M keeps its sparsity (a
 * mimic gripper's fingers: both hinges below the same rates).
 *
 * The workspace is one buffer shared by every model, grown on demand, used only
 * with the GIL held (as generic.c's workspace); batch workers have their own.
 */
static double *derivative_space;
static size_t derivative_capacity;

static double *derivative_workspace(size_t doubles)
{
    if (doubles > derivative_capacity) {
        double *grown = realloc(derivative_space, doubles * sizeof(double));
        if (!grown)
            return NULL;
        derivative_space = grown;
        derivative_capacity = doubles;
    }
    return derivative_space;
}

/* Per body in root axes: S, v, a, F; what the pair loop of derivative_answers reads, in
 * runs of 12 that it multiplies as three 4-lane vectors: of body i as the descendant
 * (or itself) Ic S, B^T S (only its angular half: the linear half is 0) and E^T S (3),
 * then the subtree terms of dq and dqd (6 each); of hinge j as the ancestor u, w x and
 * S (angular halves), then -2 w, S (angular half) and 0 (3), then S twice; then what is
 * summed over the subtree: the spatial inertia
 * [[m 1, -[h]x], [[h]x, J]] as its mass m, first moment h and rotational inertia J about
 * the root origin (1 + 3 + 9); B, which for one body with velocity (u, omega) and
 * momentum I v = (p, l) is [[0, -2 [p]x], [0, B22]] with
 *   B22 = [omega]x J - J [omega]x - [h]x [u]x - [u]x [h]x - [l]x
 * (the other blocks cancel), as p and B22 (3 + 9); E (18, with wrenches only).
 * Summing 25 numbers per body instead of two dense 6x6 matrices is most of the saving
 * over the dense form. */
#define BODY_DOUBLES 127
enum { S_ = 0, V_ = 6, A_ = 12, F_ = 18, IS_ = 24, BS_ = 30, ES_ = 33, GQ_ = 36, GR_ = 42,
       U_ = 48, WQ_ = 54, SQ_ = 57, WR_ = 60, SR_ = 66, ZR_ = 69, SS_ = 72,
       MASS_ = 84, MOMENT_ = 85, ROTATIONAL_ = 88, MOMENTUM_ = 97, B22_ = 100, E_ = 109 };
_Static_assert(MOMENT_ == MASS_ + INERTIA_MOMENT && ROTATIONAL_ == MASS_ + INERTIA_ROTATIONAL,
               "a body's inertia terms are laid out as inertia_to_root writes them");
/* The summed terms: from MASS_ to E_ without wrenches, to BODY_DOUBLES with them. */
#define SUMMED_PLAIN (E_ - MASS_)
#define SUMMED_WRENCHED (BODY_DOUBLES - MASS_)

/* L of tree_factor as lists, for the substitutions (list_factor): per rate i, entries
 * [above_start[i], above_start[i + 1]) of above and above_factor are its ancestor rates j
 * and L_ij; [below_start[i], below_start[i + 1]) of below and below_factor the rates k
 * below it and L_ki; reciprocal[i] = 1 / L_ii. */
typedef struct {
    int *above_start, *above, *below_start, *below;
    double *above_factor, *below_factor, *reciprocal;
} FactorLists;

/* Room for FactorLists of n rates: at most n (n - 1) / 2 pairs, 2 factors and 2 indices
 * each, n reciprocals and 2 (n + 1) starts (two ints to a double). */
static size_t factor_list_doubles(size_t n)
{
    size_t pairs = n * (n > 0 ? n - 1 : 0) / 2;
    return 2 * pairs + n + (2 * pairs + 2 * (n + 1) + 1) / 2;
}

/* An nb x nb hinge matrix (dg/dq before its fold), the per-body terms, one joint vector,
 * FactorLists (the answers are written where the caller returns them). */
static size_t derivative_doubles(const Model *m)
{
    size_t nb = (size_t)m->nb, n = (size_t)m->rate_dof;
    return nb * nb + BODY_DOUBLES * nb + n + 1 + factor_list_doubles(n);
}

/* A motion vector (body axes, body origin) in root axes about the root origin */
__attribute__((always_inline))
static inline void motion_to_root(const double *r, const double *p, const double *m, double *out)
{
    double moved[3];
    mat3_vec(r, m + 3, out + 3);
    mat3_vec(r, m, out);
    cross(p, out + 3, moved);
    for (int k = 0; k < 3; ++k)
        out[k] += moved[k];
}

/* A force (body axes, about the body origin) in root axes about the root origin */
__attribute__((always_inline))
static inline void force_to_root(const double *r, const double *p, const double *f, double *out)
{
    double moved[3];
    mat3_vec(r, f, out);
    mat3_vec(r, f + 3, out + 3);
    cross(p, out, moved);
    for (int k = 0; k < 3; ++k)
        out[3 + k] += moved[k];
}

static void skew3(const double *v, double *out)
{
    double values[9] = {0.0, -v[2], v[1], v[2], 0.0, -v[0], -v[1], v[0], 0.0};
    memcpy(out, values, sizeof values);
}

/* B x of the B in t: [-2 p x x_a; B22 x_a] */
__attribute__((always_inline))
static inline void b_apply(const double *t, const double *x, double *out)
{
    double turned[3];
    cross(t + MOMENTUM_, x + 3, turned);
    mat3_vec(t + B22_, x + 3, out + 3);
    for (int k = 0; k < 3; ++k)
        out[k] = -2.0 * turned[k];
}

/* The angular half of B^T x of the B in t, 2 p x x_l + B22^T x_a (the linear half is 0) */
__attribute__((always_inline))
static inline void b_transpose_apply(const double *t, const double *x, double *out)
{
    double turned[3], spun[3];
    cross(t + MOMENTUM_, x, turned);
    mat3t_vec(t + B22_, x + 3, spun);
    for (int k = 0; k < 3; ++k)
        out[k] = 2.0 * turned[k] + spun[k];
}

/* The root-axes quantities of one body (see BODY_DOUBLES): S; v, a and its own F by
 * Newton-Euler in root axes, where velocities and accelerations add along the tree
 * (`up`: the parent's terms) and forces gather without transforms; its own inertia
 * and B.  rate, rate_change: the hinge's qd and qdd; own: its inertia parameters. */
static void body_terms(const Model *m, int body, double rate, double rate_change,
                       const double *own, const double *up, int with_forces, double *t)
{
    const double *r = m->rotations + 9 * body, *p = m->translations + 3 * body;
    double *v = t + V_, *a = t + A_, joint_velocity[6], product[6], momentum[6], gyroscopic[6];
    motion_to_root(r, p, m->hinge_map + 6 * body, t + S_);
    inertia_to_root(own, r, p, t + MASS_);
    if (with_forces)    /* (wrench_turning adds to it) */
        memset(t + E_, 0, (BODY_DOUBLES - E_) * sizeof(double));
    int moving = rate != 0.0 || !is_zero6(up + V_);
    for (int k = 0; k < 6; ++k) {
        joint_velocity[k] = t[S_ + k] * rate;
        v[k] = up[V_ + k] + joint_velocity[k];
        a[k] = up[A_ + k] + t[S_ + k] * rate_change;
    }
    if (moving) {
        motion_cross(v, joint_velocity, product);
        for (int k = 0; k < 6; ++k)
            a[k] += product[k];
    }
    inertia_apply(t + MASS_, a, t + F_);
    if (moving) {
        inertia_apply(t + MASS_, v, momentum);
        force_cross(v, momentum, gyroscopic);
        for (int k = 0; k < 6; ++k)
            t[F_ + k] += gyroscopic[k];
    }
    if (with_forces) {
        double pushed[6];
        force_to_root(r, p, m->body_forces + 6 * body, pushed);
        for (int k = 0; k < 6; ++k)
            t[F_ + k] -= pushed[k];
    }
    if (!moving) {      /* B = 0 at rest */
        memset(t + MOMENTUM_, 0, (E_ - MOMENTUM_) * sizeof(double));
        return;
    }
    const double *u = t + V_, *omega = t + V_ + 3, *h = t + MOMENT_, *j = t + ROTATIONAL_;
    double oj[9], hu = h[0] * u[0] + h[1] * u[1] + h[2] * u[2];
    memcpy(t + MOMENTUM_, momentum, 3 * sizeof(double));
    for (int b = 0; b < 3; ++b) {       /* column b of [omega]x J */
        double column[3] = {j[b], j[3 + b], j[6 + b]}, turned[3];
        cross(omega, column, turned);
        for (int a = 0; a < 3; ++a)
            oj[3 * a + b] = turned[a];
    }
    const double *l = momentum + 3;
    double minus_l[9] = {0.0, l[2], -l[1], -l[2], 0.0, l[0], l[1], -l[0], 0.0};
    double *b22 = t + B22_;
    for (int a = 0; a < 3; ++a) {
        for (int b = 0; b < 3; ++b)     /* -J [omega]x = ([omega]x J)^T for a symmetric J */
            b22[3 * a + b] = oj[3 * a + b] + oj[3 * b + a] - u[a] * h[b] - h[a] * u[b]
                             + minus_l[3 * a + b];
        b22[4 * a] += 2.0 * hu;
    }
}

/* values[stride * body + first ...] (count doubles) summed over each body's subtree, in
 * place: tips to base, into every parent but the root. */
static void sum_over_subtrees(const Model *m, double *values, int stride, int first,
                              int count)
{
    for (int body = m->nb - 1; body > 1; --body) {
        int parent = m->parent[body];
        if (parent > 0) {
            double *to = values + (size_t)stride * parent + first;
            const double *from = values + (size_t)stride * body + first;
            for (int k = 0; k < count; ++k)
                to[k] += from[k];
        }
    }
}

/* E of the wrenches (root axes, about each frame origin) on each body: how its force
 * in root axes changes with a turn omega beyond the covariant part, 6x3 per body. */
static void wrench_turning(const Model *m, const double *frames, const double *wrenches,
                           int count, double *terms)
{
    for (int k = 0; k < count; ++k) {
        int frame = (int)frames[k];
        double *e = terms + BODY_DOUBLES * m->frame_body[frame] + E_;
        double rotation[9], point[3], fs[9], ts[9], ps[9], pf[9];
        frame_placement(m, frame, rotation, point);
        skew3(wrenches + 6 * k, fs);
        skew3(wrenches + 6 * k + 3, ts);
        skew3(point, ps);
        mat3_mul(ps, fs, pf);
        for (int i = 0; i < 9; ++i) {
            e[i] += fs[i];
            e[9 + i] += ts[i] + pf[i];
        }
    }
}

/* The wrenches of one call (frames NULL: none). */
typedef struct {
    const double *frames, *wrenches;
    int count;
} Wrenches;

/* The first half of the derivative pass (see the file comment) at hinge rates qd, qdd:
 * each body's terms, F gathered and Ic, B, E summed over each subtree, and Ic S.
 * q_hinge and body placements current, body_forces too with wrenches. */
static void derivative_terms(Model *m, const double *p, const double *qd, const double *qdd,
                             const Wrenches *w, double *terms)
{
    int nb = m->nb;
    memset(terms, 0, BODY_DOUBLES * sizeof(double));      /* the root: at rest, a = -g */
    for (int k = 0; k < 3; ++k)
        terms[A_ + k] = -p[k];
    for (int body = 1; body < nb; ++body)
        body_terms(m, body, qd[body], qdd[body], p + HEADER + PARAMS_PER_BODY * (body - 1),
                   terms + BODY_DOUBLES * m->parent[body], w->frames != NULL,
                   terms + BODY_DOUBLES * body);
    if (w->frames)
        wrench_turning(m, w->frames, w->wrenches, w->count, terms);
    int summed = w->frames ? SUMMED_WRENCHED : SUMMED_PLAIN;
    sum_over_subtrees(m, terms, BODY_DOUBLES, F_, 6);
    sum_over_subtrees(m, terms, BODY_DOUBLES, MASS_, summed);
    for (int body = 1; body < nb; ++body) {
        double *t = terms + BODY_DOUBLES * body;
        inertia_apply(t + MASS_, t + S_, t + IS_);
    }
}

/* The pair loop multiplies runs of 12 of the terms as three soa_lanes4, a third of the
 * scalar instructions, and its sums are four short chains instead of one long one (the
 * loop is bound by their latency). */
typedef double lanes2 __attribute__((vector_size(2 * sizeof(double))));

/* Sums add the halves of a vector first: one 2-lane add instead of two scalar ones. */
__attribute__((always_inline))
static inline lanes2 low_half(soa_lanes4 x)
{
    return (lanes2){x[0], x[1]};
}

__attribute__((always_inline))
static inline lanes2 high_half(soa_lanes4 x)
{
    return (lanes2){x[2], x[3]};
}

__attribute__((always_inline))
static inline double lane_sum(soa_lanes4 x)
{
    lanes2 halves = low_half(x) + high_half(x);
    return halves[0] + halves[1];
}

/* An entry of pair_products: stored where each is one pair's (`direct`), else added up */
__attribute__((always_inline))
static inline void pair_entry(double *entry, double value, const int direct)
{
    if (direct)
        *entry = value;
    else
        *entry += value;
}

/* The pair products of derivative_answers added into out[0] and out[1] (zeroed), at the
 * rates moving each pair's bodies, scaled by both rates' multipliers: mimic hinges share
 * a rate, and their entries add up there (fold_hinges' sum, without the nb x nb hinge
 * matrices it reads: Talos, 44 hinges for 32 rates, spent a measurable share of a
 * call's instructions folding them; docs/performance.md, "Design measurements").  `direct` (a constant where inlined): rate k
 * moves body k + 1 with multiplier 1, every hinge is free, and each entry is one pair's. */
__attribute__((always_inline))
static inline void pair_products(const Model *m, const double *terms, double sign,
                                 double *const *out, const int direct)
{
    size_t n = (size_t)m->rate_dof;
    double *dtau_dq = out[0], *dtau_dqd = out[1];
    for (int body = 1; body < m->nb; ++body) {
        if (!direct && !m->free[body])
            continue;
        const double *ti = terms + BODY_DOUBLES * body;
        double scale = direct ? sign : sign * m->rate_multiplier[body];
        soa_lanes4 own0 = scale * soa_load_lanes(ti + IS_), own1 = scale * soa_load_lanes(ti + IS_ + 4),
               own2 = scale * soa_load_lanes(ti + IS_ + 8), subtree0 = scale * soa_load_lanes(ti + GQ_),
               subtree1 = scale * soa_load_lanes(ti + GQ_ + 4),
               subtree2 = scale * soa_load_lanes(ti + GQ_ + 8);
        size_t row = direct ? (size_t)body - 1 : (size_t)m->rate_master[body];
        double *dq_row = dtau_dq + row * n, *dqd_row = dtau_dqd + row * n;
        for (int hinge = body; hinge > 0; hinge = m->parent[hinge]) {
            if (!direct && !m->free[hinge])
                continue;
            const double *tj = terms + BODY_DOUBLES * hinge;
            size_t column = direct ? (size_t)hinge - 1 : (size_t)m->rate_master[hinge];
            double by = direct ? 1.0 : m->rate_multiplier[hinge];
            /* hinge an ancestor of body (or body itself): -(Ic_i S_i).u_j - (B_i^T S_i).w_j
             * - (E_i^T S_i).omega_j and (B_i^T S_i).S_j - 2 (Ic_i S_i).w_j */
            pair_entry(dq_row + column, -by * lane_sum(own0 * soa_load_lanes(tj + U_)
                                                       + own1 * soa_load_lanes(tj + U_ + 4)
                                                       + own2 * soa_load_lanes(tj + U_ + 8)),
                       direct);
            pair_entry(dqd_row + column, by * lane_sum(own0 * soa_load_lanes(tj + WR_)
                                                       + own1 * soa_load_lanes(tj + WR_ + 4)
                                                       + own2 * soa_load_lanes(tj + WR_ + 8)),
                       direct);
            if (hinge != body) {
                /* body in the subtree of hinge: row hinge, column body, S_j times the
                 * subtree terms of dq (lanes 0-5) and dqd (6-11) */
                soa_lanes4 first = subtree0 * soa_load_lanes(tj + SS_),
                       middle = subtree1 * soa_load_lanes(tj + SS_ + 4),
                       last = subtree2 * soa_load_lanes(tj + SS_ + 8);
                size_t at = column * n + row;
                lanes2 dq = low_half(first) + high_half(first) + low_half(middle),
                       dqd = high_half(middle) + low_half(last) + high_half(last);
                pair_entry(dtau_dq + at, by * (dq[0] + dq[1]), direct);
                pair_entry(dtau_dqd + at, by * (dqd[0] + dqd[1]), direct);
            }
        }
    }
}

/* The second half: the subtree terms, then sign dtau/dq and sign dtau/dqd (n x n) into
 * out[0] and out[1] from one product per (ancestor, descendant) pair; sign -1 for forward
 * dynamics, whose derivatives are -M^-1 of these (negated here for free, not in a pass
 * over the answer). */
static void derivative_answers(Model *m, int wrenched, double *terms, double sign,
                               double *const *out)
{
    int nb = m->nb, at_rest = 1;
    for (int body = 1; body < nb && at_rest; ++body)
        at_rest = is_zero6(terms + BODY_DOUBLES * body + V_);
    for (int body = 1; body < nb; ++body) {
        double *t = terms + BODY_DOUBLES * body;
        const double *up = terms + BODY_DOUBLES * m->parent[body], *s = t + S_;
        double w[6] = {0.0}, crossed[6], spun[6], pushed[6], bent[6] = {0.0};
        motion_cross(s, up + A_, t + U_);
        if (!at_rest) {     /* at rest w = 0 and B = 0 (qd = 0) */
            motion_cross(s, up + V_, w);
            motion_cross(w, up + V_, spun);
            for (int k = 0; k < 6; ++k)
                t[U_ + k] -= spun[k];
            b_apply(t, w, bent);
        }
        /* the subtree terms: S x* F - Ic u - B w - E omega, and B S - 2 Ic w */
        force_cross(s, t + F_, spun);
        inertia_apply(t + MASS_, t + U_, pushed);
        for (int k = 0; k < 6; ++k)
            t[GQ_ + k] = spun[k] - pushed[k] - bent[k];
        if (wrenched)
            for (int c = 0; c < 3; ++c) {
                double sum = 0.0;
                for (int k = 0; k < 6; ++k) {
                    sum += t[E_ + 3 * k + c] * s[k];
                    t[GQ_ + k] -= t[E_ + 3 * k + c] * s[3 + c];
                }
                t[ES_ + c] = sum;
            }
        else
            t[ES_] = t[ES_ + 1] = t[ES_ + 2] = 0.0;
        if (at_rest) {
            memset(t + BS_, 0, 3 * sizeof(double));
            memset(t + GR_, 0, 6 * sizeof(double));
        } else {
            b_transpose_apply(t, s, t + BS_);
            b_apply(t, s, crossed);
            inertia_apply(t + MASS_, w, pushed);
            for (int k = 0; k < 6; ++k)
                t[GR_ + k] = crossed[k] - 2.0 * pushed[k];
        }
        for (int k = 0; k < 3; ++k) {
            t[WQ_ + k] = w[3 + k];
            t[SQ_ + k] = t[SR_ + k] = s[3 + k];
            t[ZR_ + k] = 0.0;
        }
        for (int k = 0; k < 6; ++k) {
            t[WR_ + k] = -2.0 * w[k];
            t[SS_ + k] = t[SS_ + 6 + k] = s[k];
        }
    }
    size_t n = (size_t)m->rate_dof;
    for (int matrix = 0; matrix < 2; ++matrix)     /* (pairs on different branches: 0) */
        memset(out[matrix], 0, n * n * sizeof(double));
    if (m->rates_are_bodies)
        pair_products(m, terms, sign, out, 1);
    else
        pair_products(m, terms, sign, out, 0);
}

/* dg/dq as an nb x nb hinge matrix: derivative_answers at rest, where a = -g on every
 * body leaves of each subtree only its mass M_i and first moment h_i (root axes, about
 * the root origin).  Then u_j = (g x omega_j, 0), and both the ancestor and the
 * descendant formula reduce to
 *   dg_i/dq_j = dg_j/dq_i = -P_i . (g x omega_j),  j an ancestor of i or i itself,
 * with P_i = M_i v_i + omega_i x h_i the linear part of Ic_i S_i, S_i = (v_i, omega_i):
 * symmetric, as the Hessian of the potential energy is.  12 doubles summed or formed per
 * body and one 3-vector dot product per pair, instead of the full pass.  Body
 * placements current; params: p (gravity first); terms: BODY_DOUBLES per body (S_, MASS_,
 * MOMENT_; P in IS_, g x omega in U_). */
static void gravity_derivative_matrix(Model *m, const double *params, double *terms,
                                      double *dg_dq)
{
    int nb = m->nb;
    const double *g = params;
    for (int body = 1; body < nb; ++body) {
        double *t = terms + BODY_DOUBLES * body;
        const double *r = m->rotations + 9 * body, *p = m->translations + 3 * body;
        /* mass and first moment in body axes, read from the parameters (no unpack) */
        const double *own = params + HEADER + PARAMS_PER_BODY * (body - 1);
        motion_to_root(r, p, m->hinge_map + 6 * body, t + S_);
        mat3_vec(r, own + 1, t + MOMENT_);
        t[MASS_] = own[0];
        for (int k = 0; k < 3; ++k)
            t[MOMENT_ + k] += own[0] * p[k];
    }
    sum_over_subtrees(m, terms, BODY_DOUBLES, MASS_, 4);
    for (int body = 1; body < nb; ++body) {
        double *t = terms + BODY_DOUBLES * body;
        const double *omega = t + S_ + 3;
        cross(omega, t + MOMENT_, t + IS_);
        for (int k = 0; k < 3; ++k)
            t[IS_ + k] += t[MASS_] * t[S_ + k];
        cross(g, omega, t + U_);
    }
    memset(dg_dq, 0, (size_t)nb * nb * sizeof(double));
    for (int body = 1; body < nb; ++body) {
        const double *pi = terms + BODY_DOUBLES * body + IS_;
        for (int hinge = body; hinge > 0; hinge = m->parent[hinge]) {
            const double *turned = terms + BODY_DOUBLES * hinge + U_;
            double value = -(pi[0] * turned[0] + pi[1] * turned[1] + pi[2] * turned[2]);
            dg_dq[body * nb + hinge] = value;
            dg_dq[hinge * nb + body] = value;
        }
    }
}

/* G^T D G of a hinge matrix (nb x nb) onto the selected joints, into out (n x n): rows
 * copied where rate k moves body k + 1 (every entry of D set then), else fold_hinges */
static void fold_hinge_matrix(const Model *m, const double *hinge_matrix, double *out)
{
    int nb = m->nb, n = m->rate_dof;
    if (m->rates_are_bodies) {
        for (int i = 1; i < nb; ++i)
            memcpy(out + (size_t)(i - 1) * n, hinge_matrix + (size_t)i * nb + 1,
                   (size_t)n * sizeof(double));
        return;
    }
    fold_hinges(m, hinge_matrix, out);
}

/* out[0], out[1] = sign dtau/dq, sign dtau/dqd (n x n) at the joint accelerations qdd
 * (sign as derivative_answers); q_hinge, qd_hinge and body placements current (and body
 * forces with wrenches); space: the derivative workspace. */
static void inverse_derivatives_core(Model *m, const double *qdd, const double *p,
                                     const Wrenches *w, double sign, double *space,
                                     double *const *out)
{
    int nb = m->nb;
    hinge_rates(m, qdd, m->qdd_hinge);
    double *terms = space + (size_t)nb * nb;
    derivative_terms(m, p, m->qd_hinge, m->qdd_hinge, w, terms);
    derivative_answers(m, w->frames != NULL, terms, sign, out);
}

#include "generic/forward_derivatives.c"
#include "generic/bindings_derivatives.c"
