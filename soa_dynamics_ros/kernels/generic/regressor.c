/* The inertial-parameter regressor (algorithms/regressor.py): tau = Y pi, a block of
 * PARAMS_PER_BODY columns per moving body, in root axes about the root origin.
 * Part of generic.c (included there, one translation unit). */
/* regressor.body_regressor of a body at velocity v = [vl; w] and acceleration
 * a = [al; aw] (body axes), taken to root axes about the root origin (motion_transform^T
 * of the body's placement R, p), column by column (`columns`[6 k + row]).  Written out
 * per parameter (own_inertia_apply and force_cross of a unit parameter), in root axes
 * with g_i = R e_i, the body's axes, and c = al + w x vl (the origin's acceleration):
 * mass [R c; p x R c]; first moment e_i: f = R (aw x e_i + w w_i - e_i |w|^2),
 * [f; R (e_i x c) + p x f]; rotational inertia entry (i, j): the pure moment
 * R (E aw + w x E w) = g_i aw_j + g_j aw_i + (R w x g_i) w_j + (R w x g_j) w_i, halved
 * on the diagonal.  Only the moments of the rotational inertia's columns are written:
 * their forces are zero. */
static void root_body_regressor(const double *r, const double *p, const double *v,
                                const double *a, double *columns)
{
    const double *vl = v, *w = v + 3, *al = a, *aw = a + 3;
    double c[3], whirl[3], c_root[3], w_root[3], aw_root[3], axes[3][3], spun[3][3];
    cross(w, vl, whirl);
    for (int k = 0; k < 3; ++k)
        c[k] = al[k] + whirl[k];
    mat3_vec(r, c, c_root);
    mat3_vec(r, w, w_root);
    mat3_vec(r, aw, aw_root);
    double spin = w[0] * w[0] + w[1] * w[1] + w[2] * w[2];
    for (int i = 0; i < 3; ++i) {
        for (int k = 0; k < 3; ++k)
            axes[i][k] = r[3 * k + i];
        cross(w_root, axes[i], spun[i]);
    }
    memcpy(columns, c_root, sizeof c_root);
    cross(p, c_root, columns + 3);
    for (int i = 0; i < 3; ++i) {
        double *column = columns + 6 * (1 + i), turned[3], moved[3];
        cross(aw_root, axes[i], turned);
        for (int k = 0; k < 3; ++k)
            column[k] = turned[k] + w_root[k] * w[i] - axes[i][k] * spin;
        cross(axes[i], c_root, turned);
        cross(p, column, moved);
        for (int k = 0; k < 3; ++k)
            column[3 + k] = turned[k] + moved[k];
    }
    /* Ixx, Ixy, Ixz, Iyy, Iyz, Izz */
    static const int row_of[6] = {0, 0, 0, 1, 1, 2}, column_of[6] = {0, 1, 2, 1, 2, 2};
    for (int entry = 0; entry < 6; ++entry) {
        int i = row_of[entry], j = column_of[entry];
        double *moment = columns + 6 * (4 + entry) + 3;
        if (i == j)
            for (int k = 0; k < 3; ++k)
                moment[k] = axes[i][k] * aw[i] + spun[i][k] * w[i];
        else
            for (int k = 0; k < 3; ++k)
                moment[k] = axes[i][k] * aw[j] + axes[j][k] * aw[i] + spun[i][k] * w[j]
                            + spun[j][k] * w[i];
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
        double force[6 * PARAMS_PER_BODY];
        int first = PARAMS_PER_BODY * (body - 1);
        root_body_regressor(m->rotations + 9 * body, m->translations + 3 * body,
                            m->velocity + 6 * body, m->acceleration + 6 * body, force);
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
