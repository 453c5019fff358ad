/* Forward dynamics derivatives: -M^-1 of the inverse ones, M factored along the tree
 * (algorithms/derivatives.py); and one sample of any kind.
 * Part of generic.c (included there, one translation unit). */
/* soa_tree_factor of the joint-space mass matrix along the rates' tree.  Without mimic
 * joints its pivots are the articulated hinge inertias of the ABA: status 2 where one is
 * not above `singular_below` (the ABA's threshold; 0 with mimic joints). */
static int tree_factor(Model *m, double singular_below)
{
    return soa_tree_factor(m->joint_mass, m->rate_dof, m->rate_parent, singular_below);
}

/* f for tree_factor's L in `space` (factor_list_doubles(n)): the ancestor chains
 * walked once per call, where each row of each matrix and half walked them again. */
static void list_factor(const Model *m, double *space, FactorLists *f)
{
    int n = m->rate_dof, pairs = 0;
    const int *up = m->rate_parent;
    const double *l = m->joint_mass;
    for (int i = 0; i < n; ++i)
        for (int j = up[i]; j >= 0; j = up[j])
            ++pairs;
    f->above_factor = space;
    f->below_factor = space + pairs;
    f->reciprocal = space + 2 * pairs;
    f->above_start = (int *)(space + 2 * pairs + n);
    f->above = f->above_start + n + 1;
    f->below_start = f->above + pairs;
    f->below = f->below_start + n + 1;
    memset(f->below_start, 0, (n + 1) * sizeof(int));
    for (int i = 0, at = 0; i < n; ++i) {
        f->above_start[i] = at;
        f->reciprocal[i] = 1.0 / l[i * n + i];
        for (int j = up[i]; j >= 0; j = up[j]) {
            f->above[at] = j;
            f->above_factor[at++] = l[i * n + j];
            ++f->below_start[j + 1];
        }
    }
    f->above_start[n] = pairs;
    for (int j = 0; j < n; ++j)         /* counts -> starts */
        f->below_start[j + 1] += f->below_start[j];
    for (int i = 0; i < n; ++i)         /* each start moves to the next rate's */
        for (int a = f->above_start[i]; a < f->above_start[i + 1]; ++a) {
            int at = f->below_start[f->above[a]]++;
            f->below[at] = i;
            f->below_factor[at] = f->above_factor[a];
        }
    for (int j = n; j > 0; --j)
        f->below_start[j] = f->below_start[j - 1];
    f->below_start[0] = 0;
}

/* Columns [first, end) of row = scale (row - sum over k of factor[k] times row rows[k]
 * of x, rows `stride` apart), 16 columns at a time summed in registers: one load per
 * other row and column, where a row updated in memory took a store too. */
__attribute__((always_inline))
static inline void gather_row(double *row, const double *x, size_t stride, const int *rows,
                              const double *factor, int count, double scale, int first,
                              int end)
{
    int c = first;
    for (; c + 16 <= end; c += 16) {
        soa_lanes4 x0 = soa_load_lanes(row + c), x1 = soa_load_lanes(row + c + 4),
               x2 = soa_load_lanes(row + c + 8), x3 = soa_load_lanes(row + c + 12);
        for (int k = 0; k < count; ++k) {
            const double *in = x + rows[k] * stride + c;
            x0 -= factor[k] * soa_load_lanes(in);
            x1 -= factor[k] * soa_load_lanes(in + 4);
            x2 -= factor[k] * soa_load_lanes(in + 8);
            x3 -= factor[k] * soa_load_lanes(in + 12);
        }
        soa_store_lanes(row + c, scale * x0);
        soa_store_lanes(row + c + 4, scale * x1);
        soa_store_lanes(row + c + 8, scale * x2);
        soa_store_lanes(row + c + 12, scale * x3);
    }
    if (c + 8 <= end) {     /* (an arm's 7-10 columns: one pass over the other rows) */
        soa_lanes4 x0 = soa_load_lanes(row + c), x1 = soa_load_lanes(row + c + 4);
        for (int k = 0; k < count; ++k) {
            const double *in = x + rows[k] * stride + c;
            x0 -= factor[k] * soa_load_lanes(in);
            x1 -= factor[k] * soa_load_lanes(in + 4);
        }
        soa_store_lanes(row + c, scale * x0);
        soa_store_lanes(row + c + 4, scale * x1);
        c += 8;
    }
    if (c + 4 <= end) {
        soa_lanes4 sum = soa_load_lanes(row + c);
        for (int k = 0; k < count; ++k)
            sum -= factor[k] * soa_load_lanes(x + rows[k] * stride + c);
        soa_store_lanes(row + c, scale * sum);
        c += 4;
    }
    for (; c < end; ++c) {
        double sum = row[c];
        for (int k = 0; k < count; ++k)
            sum -= factor[k] * x[rows[k] * stride + c];
        row[c] = scale * sum;
    }
}

/* M X = B for `count` n x width matrices x[0..count-1] (row-major, in place) with
 * tree_factor's L as lists f: L^T Y = B from the leaves up, each row gathering the rows
 * below it, then L X = Y from the root down, gathering its ancestors'.
 * inverting: the last B is the identity (set by the caller, width n), whose rows
 * L^T Y = B leaves zero outside the columns of their rate's subtree, all within
 * [i, rate_subtree_end[i]): the first half skips the others. */
static void tree_solve(const Model *m, const FactorLists *f, double *const *x, int count,
                       int width, int inverting)
{
    int n = m->rate_dof;
    for (int i = n - 1; i >= 0; --i) {
        int first = f->below_start[i], below = f->below_start[i + 1] - first;
        for (int matrix = 0; matrix < count; ++matrix) {
            int identity = inverting && matrix == count - 1;
            gather_row(x[matrix] + (size_t)i * width, x[matrix], width, f->below + first,
                       f->below_factor + first, below, f->reciprocal[i], identity ? i : 0,
                       identity ? m->rate_subtree_end[i] : width);
        }
    }
    for (int i = 0; i < n; ++i) {
        int first = f->above_start[i], above = f->above_start[i + 1] - first;
        for (int matrix = 0; matrix < count; ++matrix)
            gather_row(x[matrix] + (size_t)i * width, x[matrix], width, f->above + first,
                       f->above_factor + first, above, f->reciprocal[i], 0, width);
    }
}

/* From derivative_terms at qdd = 0: the hinge mass matrix from the composite inertias
 * (M_ij = S_j . Ic_i S_i, j an ancestor of i: the CRBA in root axes) and the hinge
 * bias S . F, on the selected joints M = G^T M_hinge G and qdd = M^-1 (tau - G^T S . F)
 * (n doubles) and into m->qdd_hinge, then the terms moved to that qdd: a += a' (what
 * qdd adds along the tree) and
 *   F_i += Ic_i a'_i + sum over the subtree of i but i of Ic_j S_j qdd_j,
 * which replaces an articulated-body pass and a CRBA.  m->joint_mass is left factored:
 * by tree_factor, listed in `lists` (after qdd), where M keeps a tree's sparsity
 * (status 2 where the ABA's would be without mimic joints; with them where M is not
 * positive definite, as forward_core's Cholesky), else by Cholesky (status 2 as
 * forward_core). */
static int accelerate_terms(Model *m, const double *tau, const double *p, double *terms,
                            double *qdd, FactorLists *lists)
{
    int nb = m->nb, n = m->rate_dof;
    /* without mimic joints on a tree G only selects: each entry of M written once; with
     * them G^T M_hinge G summed as the hinge pairs come (as fold_hinges would add them up),
     * M_hinge itself not needed */
    int selects = m->tree_sparse && !m->couples;
    double *mass = m->joint_mass, *bias = m->torque;
    double *added = m->acceleration, *gathered = m->force;
    if (!selects)
        memset(mass, 0, (size_t)n * n * sizeof(double));
    for (int a = 0; a < m->rate_count; ++a) {
        int body = m->rate_bodies[a], i = m->rate_master[body];
        const double *ti = terms + BODY_DOUBLES * body;
        bias[body] = dot6(ti + S_, ti + F_);
        for (int hinge = body; hinge > 0; hinge = m->parent[hinge])
            if (m->free[hinge]) {
                int j = m->rate_master[hinge];
                double value = dot6(terms + BODY_DOUBLES * hinge + S_, ti + IS_);
                if (selects) {
                    mass[i * n + j] = mass[j * n + i] = value;
                    continue;
                }
                value *= m->rate_multiplier[body] * m->rate_multiplier[hinge];
                mass[i * n + j] += value;
                if (hinge != body)
                    mass[j * n + i] += value;
            }
    }
    joint_forces(m, bias, qdd);
    for (int k = 0; k < n; ++k)
        qdd[k] = tau[k] - qdd[k];
    if (m->tree_sparse) {
        if (tree_factor(m, m->couples ? 0.0 : p[3]) != SOA_OK)
            return SOA_SINGULAR;
        list_factor(m, qdd + n + 1, lists);
        tree_solve(m, lists, &qdd, 1, 1, 0);
    } else if (soa_cholesky_solve(m->joint_mass, qdd, n, 1) != SOA_OK)
        return SOA_SINGULAR;
    hinge_rates(m, qdd, m->qdd_hinge);
    memset(added, 0, 6 * sizeof(double));
    for (int body = 1; body < nb; ++body) {
        double *t = terms + BODY_DOUBLES * body, rate = m->qdd_hinge[body];
        const double *up = added + 6 * m->parent[body];
        for (int k = 0; k < 6; ++k) {
            added[6 * body + k] = up[k] + t[S_ + k] * rate;
            t[A_ + k] += added[6 * body + k];
            gathered[6 * body + k] = t[IS_ + k] * rate;
        }
    }
    sum_over_subtrees(m, gathered, 6, 0, 6);
    for (int body = 1; body < nb; ++body) {
        double *t = terms + BODY_DOUBLES * body, pushed[6], rate = m->qdd_hinge[body];
        inertia_apply(t + MASS_, added + 6 * body, pushed);
        for (int k = 0; k < 6; ++k)
            t[F_ + k] += pushed[k] + gathered[6 * body + k] - t[IS_ + k] * rate;
    }
    return SOA_OK;
}

/* M X = B for the 3 n x n matrices out[0..2] where M is not tree-sparse (mimic joints
 * across branches, rates out of tree order), with
 * M = L L^T already factored in m->joint_mass (soa_cholesky_solve): L Y = B, then
 * L^T X = Y, row by row.  out[2] is the identity, whose Y = L^-1 is lower triangular:
 * its first half skips the zeros. */
static void dense_solve(const Model *m, double *const *out)
{
    int n = m->rate_dof;
    const double *l = m->joint_mass;
    for (int i = 0; i < n; ++i) {
        const double *factors = l + (size_t)i * n;
        double scale = 1.0 / factors[i];
        for (int matrix = 0; matrix < 3; ++matrix)
            soa_eliminate_row(out[matrix], n, i, 0, i, factors, 1, scale,
                          matrix == 2 ? i + 1 : n, matrix == 2);
    }
    for (int i = n - 1; i >= 0; --i) {
        double scale = 1.0 / l[(size_t)i * n + i];
        for (int matrix = 0; matrix < 3; ++matrix)
            soa_eliminate_row(out[matrix], n, i, i + 1, n, l + i, n, scale, n, 0);
    }
}

/* out[0..2] = dqdd/dq, dqdd/dqd, dqdd/dtau (n x n); as inverse_derivatives_core, with
 * qdd = FD(q, qd, tau) (n + 1 doubles, then factor_list_doubles(n) of scratch).  Trees
 * and mimic joints take one derivative pass (accelerate_terms), and the solves along the
 * tree where M keeps its sparsity; a map that neither couples hinges nor keeps the tree's
 * sparsity (rates out of tree order, scaled rates) the ABA, for its singular threshold,
 * and a second pass.
 * Status 2 when M or a hinge is singular. */
static int forward_derivatives_core(Model *m, const double *qd, const double *tau,
                                    const double *p, const Wrenches *w, double *space,
                                    double *qdd, double *const *out)
{
    int n = m->rate_dof, nb = m->nb;
    FactorLists lists;
    if (m->tree_sparse || m->couples) {
        double *terms = space + (size_t)nb * nb;
        hinge_rates(m, qd, m->qd_hinge);
        memset(m->qdd_hinge, 0, nb * sizeof(double));
        derivative_terms(m, p, m->qd_hinge, m->qdd_hinge, w, terms);
        if (accelerate_terms(m, tau, p, terms, qdd, &lists) != SOA_OK)
            return SOA_SINGULAR;
        derivative_answers(m, w->frames != NULL, terms, -1.0, out);
    } else {
        unpack_inertias(m, p);      /* (the derivative pass reads p itself) */
        int status = forward_core(m, qd, tau, p, w->frames != NULL, qdd);
        if (status != SOA_OK)
            return status;
        inverse_derivatives_core(m, qdd, p, w, -1.0, space, out);
        composite_body(m, p);
        joint_mass_matrix(m);
        if (soa_cholesky_solve(m->joint_mass, qdd, n, 1) != SOA_OK)
            return SOA_SINGULAR;
    }
    memset(out[2], 0, (size_t)n * n * sizeof(double));
    for (int i = 0; i < n; ++i)
        out[2][(size_t)i * n + i] = 1.0;
    if (m->tree_sparse)
        tree_solve(m, &lists, out, 3, n, 1);
    else
        dense_solve(m, out);
    return SOA_OK;
}

/* One sample into the n x n matrices out[0..]: kind 0 inverse (qdd in `second`), 1
 * forward (tau), 2 gravity. */
static int derivatives_sample(Model *m, int kind, const double *q, const double *qd,
                              const double *second, const double *p, const Wrenches *w,
                              double *space, double *const *out)
{
    int nb = m->nb;
    double *qdd = space + (size_t)nb * nb + BODY_DOUBLES * (size_t)nb;
    hinge_positions(m, q);
    body_placements(m);
    if (w->frames)
        body_forces(m, w->frames, w->wrenches, w->count);
    if (kind == 1)
        return forward_derivatives_core(m, qd, second, p, w, space, qdd, out);
    if (kind == 2) {
        gravity_derivative_matrix(m, p, space + (size_t)nb * nb, space);
        fold_hinge_matrix(m, space, out[0]);
        return SOA_OK;
    }
    hinge_rates(m, qd, m->qd_hinge);
    inverse_derivatives_core(m, second, p, w, 1.0, space, out);
    return SOA_OK;
}
