/* Task-space compliance J M^-1 J^T of unit wrenches at frames (algorithms/task_space.py).
 * Part of generic.c (included there, one translation unit). */
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
