/* The mass matrix: composite bodies and hinge folding (algorithms/mass_matrix.py).
 * Part of generic.c (included there, one translation unit). */
/* composite_body's first passes: each body's hinge axis S (6) and composite inertia Ic
 * (INERTIA_DOUBLES) in root axes, Ic about the body's origin, COMPOSITE_DOUBLES per body
 * in `articulated`.  Composes the world placements if they are not current. */
static void composite_inertias(Model *m, const double *p)
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
}

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
    const double *terms = m->articulated, *origin = m->translations;
    composite_inertias(m, p);
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
