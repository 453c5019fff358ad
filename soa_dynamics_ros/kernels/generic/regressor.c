/* The inertial-parameter regressor (algorithms/regressor.py): tau = Y pi, a block of
 * PARAMS_PER_BODY columns per moving body.
 * Part of generic.c (included there, one translation unit). */
/* regressor.body_regressor: the 6 x 10 A of a body at velocity v and acceleration a,
 * column by column (`columns`[6 k + row]): A e_k = I(e_k) a + v x* I(e_k) v. */
static void body_regressor(const double *v, const double *a, double *columns)
{
    int moving = !is_zero6(v);
    for (int k = 0; k < PARAMS_PER_BODY; ++k) {
        double unit[PARAMS_PER_BODY] = {0.0}, momentum[6], gyroscopic[6] = {0.0};
        double *column = columns + 6 * k;
        unit[k] = 1.0;
        own_inertia_apply(unit, a, column);
        if (moving) {
            own_inertia_apply(unit, v, momentum);
            force_cross(v, momentum, gyroscopic);
            for (int row = 0; row < 6; ++row)
                column[row] += gyroscopic[row];
        }
    }
}

/* regressor.inertial_regressor folded on the rate map: `out` rate_dof x PARAMS_PER_BODY
 * (nb - 1), row-major, at m->qd_hinge, m->qdd_hinge (local_placements() current). */
static void inertial_regressor_core(Model *m, const double *p, double *out)
{
    int columns = PARAMS_PER_BODY * (m->nb - 1);
    memset(out, 0, (size_t)m->rate_dof * columns * sizeof(double));
    body_motion(m, p, m->qd_hinge, m->qdd_hinge);
    for (int body = 1; body < m->nb; ++body) {
        double force[6 * PARAMS_PER_BODY], carried[6];
        int first = PARAMS_PER_BODY * (body - 1);
        body_regressor(m->velocity + 6 * body, m->acceleration + 6 * body, force);
        for (int hinge = body; hinge > 0; hinge = m->parent[hinge]) {
            int rate = m->rate_master[hinge];
            if (rate >= 0) {
                const double *hb = m->hinge_map + 6 * hinge;
                double *row = out + (size_t)rate * columns + first, scale = m->rate_multiplier[hinge];
                for (int k = 0; k < PARAMS_PER_BODY; ++k)
                    row[k] += scale * dot6(hb, force + 6 * k);
            }
            if (m->parent[hinge] > 0)
                for (int k = 0; k < PARAMS_PER_BODY; ++k) {
                    carry_force(m, hinge, force + 6 * k, carried);
                    memcpy(force + 6 * k, carried, sizeof carried);
                }
        }
    }
}
