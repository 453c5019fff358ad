/* The inertial-parameter regressor (algorithms/regressor.py): tau = Y pi, a block of
 * PARAMS_PER_BODY columns per moving body, in root axes about the root origin.
 * Part of generic.c (included there, one translation unit). */
/* regressor.body_regressor: the 6 x 10 A of a body at velocity v = [vl; w] and
 * acceleration a = [al; aw] (body axes), column by column (`columns`[6 k + row]):
 * A e_k = I(e_k) a + v x* I(e_k) v, written out per parameter (own_inertia_apply and
 * force_cross of a unit parameter).  With c = al + w x vl (the origin's acceleration):
 * mass [c; 0]; first moment e_k: [aw x e_k + w x (w x e_k); e_k x c]; rotational
 * inertia E: [0; E aw + w x E w]. */
static void body_regressor(const double *v, const double *a, double *columns)
{
    const double *vl = v, *w = v + 3, *al = a, *aw = a + 3;
    double c[3], whirl[3];
    cross(w, vl, whirl);
    for (int k = 0; k < 3; ++k)
        c[k] = al[k] + whirl[k];
    memcpy(columns, c, sizeof c);
    memset(columns + 3, 0, 3 * sizeof(double));
    for (int axis = 0; axis < 3; ++axis) {
        double e[3] = {0.0}, turned[3], swung[3], *column = columns + 6 * (1 + axis);
        e[axis] = 1.0;
        cross(aw, e, column);
        cross(w, e, turned);
        cross(w, turned, swung);
        for (int k = 0; k < 3; ++k)
            column[k] += swung[k];
        cross(e, c, column + 3);
    }
    /* Ixx, Ixy, Ixz, Iyy, Iyz, Izz: the rows and columns of E's entries */
    static const int row_of[6] = {0, 0, 0, 1, 1, 2}, column_of[6] = {0, 1, 2, 1, 2, 2};
    for (int entry = 0; entry < 6; ++entry) {
        int i = row_of[entry], j = column_of[entry];
        double pushed[3] = {0.0}, spun[3] = {0.0}, gyroscopic[3];
        double *column = columns + 6 * (4 + entry);
        pushed[i] += aw[j];
        spun[i] += w[j];
        if (i != j) {
            pushed[j] += aw[i];
            spun[j] += w[i];
        }
        cross(w, spun, gyroscopic);
        memset(column, 0, 3 * sizeof(double));
        for (int k = 0; k < 3; ++k)
            column[3 + k] = pushed[k] + gyroscopic[k];
    }
}

/* regressor.inertial_regressor folded on the rate map: `out` rate_dof x PARAMS_PER_BODY
 * (nb - 1), row-major, at m->qd_hinge, m->qdd_hinge (local_placements() current).  The
 * root-axes hinge maps (regressor.root_motion) go to m->bias_acceleration, free between
 * calls. */
static void inertial_regressor_core(Model *m, const double *p, double *out)
{
    int columns = PARAMS_PER_BODY * (m->nb - 1);
    double *hinge_maps = m->bias_acceleration;
    memset(out, 0, (size_t)m->rate_dof * columns * sizeof(double));
    body_motion(m, p, m->qd_hinge, m->qdd_hinge);
    compose_placements(m);
    for (int body = 1; body < m->nb; ++body) {
        const double *r = m->rotations + 9 * body, *hb = m->hinge_map + 6 * body;
        double *root = hinge_maps + 6 * body, lever[3];
        mat3_vec(r, hb + 3, root + 3);
        mat3_vec(r, hb, root);
        cross(m->translations + 3 * body, root + 3, lever);
        for (int k = 0; k < 3; ++k)
            root[k] += lever[k];
    }
    for (int body = 1; body < m->nb; ++body) {
        double local[6 * PARAMS_PER_BODY], force[6 * PARAMS_PER_BODY];
        int first = PARAMS_PER_BODY * (body - 1);
        body_regressor(m->velocity + 6 * body, m->acceleration + 6 * body, local);
        const double *r = m->rotations + 9 * body;
        /* the rotational inertia's columns are pure moments: turned, never moved */
        for (int k = 0; k < 4; ++k)
            transform_force_back(r, m->translations + 3 * body, local + 6 * k, force + 6 * k);
        for (int k = 4; k < PARAMS_PER_BODY; ++k)
            mat3_vec(r, local + 6 * k + 3, force + 6 * k + 3);
        for (int hinge = body; hinge > 0; hinge = m->parent[hinge]) {
            int rate = m->rate_master[hinge];
            if (rate < 0)
                continue;
            const double *map = hinge_maps + 6 * hinge, *axis = map + 3;
            double *row = out + (size_t)rate * columns + first, scale = m->rate_multiplier[hinge];
            for (int k = 0; k < 4; ++k)
                row[k] += scale * dot6(map, force + 6 * k);
            for (int k = 4; k < PARAMS_PER_BODY; ++k) {
                const double *moment = force + 6 * k + 3;
                row[k] += scale * (axis[0] * moment[0] + axis[1] * moment[1]
                                   + axis[2] * moment[2]);
            }
        }
    }
}
