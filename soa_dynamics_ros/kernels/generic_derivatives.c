/* Derivatives of the dynamics (algorithms/derivatives.py, model/derivatives.py), compiled.
 *
 * Included by generic.c before its method table; uses its Model and helpers.
 * Forward-mode differentiation of newton_euler(): every body carries the
 * tangents of its velocity, acceleration and force along each hinge, one
 * 6-vector per (body, hinge) stored at [body][hinge][6].  A body's velocity
 * and acceleration depend only on its ancestors' hinges, so the scatter walks
 * each body's path to the root; the gather carries whole rows.
 *
 * The tangents live in one buffer shared by every model, grown on demand
 * (every function holds the GIL from start to end, as generic.c's workspace).
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

/* Tangent blocks (6 per body and hinge, 6 kinds), two nb x nb hinge matrices, nb ints
 * (subtree ends, one double each), the wrenches' arms (9 per body), one joint vector. */
static size_t derivative_doubles(const Model *m)
{
    size_t nb = (size_t)m->nb;
    return 38 * nb * nb + nb + 9 * nb + (size_t)m->rate_dof + 1;
}

/* external_forces.body_force_turning without the [[f x], [n x]] part (taken from
 * body_forces): per body, sum_k (f_k x)(r_k x) of the wrenches applied to it. */
static void body_force_arms(const Model *m, const double *frames, const double *wrenches,
                            int count, double *arms)
{
    memset(arms, 0, 9 * m->nb * sizeof(double));
    for (int k = 0; k < count; ++k) {
        int frame = (int)frames[k], body = m->frame_body[frame];
        const double *r = m->frame_translation + 3 * frame;
        double f[3];
        mat3t_vec(m->rotations + 9 * body, wrenches + 6 * k, f);
        double fs[9] = {0.0, -f[2], f[1], f[2], 0.0, -f[0], -f[1], f[0], 0.0};
        double rs[9] = {0.0, -r[2], r[1], r[2], 0.0, -r[0], -r[1], r[0], 0.0}, product[9];
        mat3_mul(fs, rs, product);
        for (int i = 0; i < 9; ++i)
            arms[9 * body + i] += product[i];
    }
}

/* derivatives.inverse_dynamics_derivatives on hinge arrays: q_hinge and transforms
 * current, body_forces too when `arms` (wrenches held in root axes) is not NULL.
 * space: the tangent blocks; dtau_dq, dtau_dqd: nb x nb, row and column 0 zero.
 *
 * Two shortcuts the numpy reference does not take (the results are the same): at rest
 * (qd = 0, no wrenches) velocities and their tangents vanish, so only the acceleration
 * tangents are carried and dtau/dqd is zero (Coriolis torques are quadratic in qd); and
 * a body's force depends only on the hinges of its ancestors and its subtree (bodies
 * body..last[body] in the depth-first numbering), so the gather carries those columns. */
static void newton_euler_derivatives(Model *m, const double *p, const double *qd,
                                     const double *qdd, const double *arms, double *space,
                                     double *dtau_dq, double *dtau_dqd)
{
    int nb = m->nb, at_rest = arms == NULL;
    for (int body = 1; body < nb && at_rest; ++body)
        at_rest = qd[body] == 0.0;
    size_t block = 6 * (size_t)nb * nb;
    double *dv_dq = space, *dv_dqd = space + block, *da_dq = space + 2 * block;
    double *da_dqd = space + 3 * block, *df_dq = space + 4 * block, *df_dqd = space + 5 * block;
    int *last = (int *)(dtau_dqd + (size_t)nb * nb);    /* nb ints after the two matrices */
    newton_euler(m, p, qd, qdd, arms != NULL);    /* force: the gathered F(i) */
    memset(df_dq, 0, (at_rest ? 1 : 2) * block * sizeof(double));
    const double *v = m->velocity, *a = m->acceleration;
#define AT(array, body, hinge) ((array) + 6 * ((size_t)(body) * nb + (hinge)))
    for (int body = 1; body < nb; ++body) {
        int parent = m->parent[body];
        const double *x = m->transforms + 36 * body, *h = m->hinge_map + 6 * body;
        const double *inertia = m->inertia + 36 * body, *vb = v + 6 * body;
        double carried[6], joint_velocity[6], momentum[6];
        last[body] = body;
        /* d(X a)/dq(i) = (X a) x H, and likewise for v */
        mat6_vec(x, a + 6 * parent, carried);
        motion_cross(carried, h, AT(da_dq, body, body));
        if (at_rest) {
            for (int hinge = body; hinge > 0; hinge = m->parent[hinge]) {
                double *da = AT(da_dq, body, hinge);
                if (hinge != body)
                    mat6_vec(x, AT(da_dq, parent, hinge), da);
                mat6_vec(inertia, da, AT(df_dq, body, hinge));
            }
            continue;
        }
        for (int k = 0; k < 6; ++k)
            joint_velocity[k] = h[k] * qd[body];
        mat6_vec(inertia, vb, momentum);
        mat6_vec(x, v + 6 * parent, carried);
        motion_cross(carried, h, AT(dv_dq, body, body));
        memcpy(AT(dv_dqd, body, body), h, 6 * sizeof(double));
        motion_cross(vb, h, AT(da_dqd, body, body));
        for (int hinge = body; hinge > 0; hinge = m->parent[hinge]) {
            double *dv = AT(dv_dq, body, hinge), *dvr = AT(dv_dqd, body, hinge);
            double *da = AT(da_dq, body, hinge), *dar = AT(da_dqd, body, hinge);
            if (hinge != body) {
                mat6_vec(x, AT(dv_dq, parent, hinge), dv);
                mat6_vec(x, AT(dv_dqd, parent, hinge), dvr);
                mat6_vec(x, AT(da_dq, parent, hinge), da);
                mat6_vec(x, AT(da_dqd, parent, hinge), dar);
            }
            /* the velocity product V x H qd varies with V */
            double product[6];
            motion_cross(joint_velocity, dv, product);
            for (int k = 0; k < 6; ++k)
                da[k] -= product[k];
            motion_cross(joint_velocity, dvr, product);
            for (int k = 0; k < 6; ++k)
                dar[k] -= product[k];
            /* f = I A + V x* I V - f_ext */
            for (int kind = 0; kind < 2; ++kind) {
                const double *dvk = kind ? dvr : dv, *dak = kind ? dar : da;
                double *df = kind ? AT(df_dqd, body, hinge) : AT(df_dq, body, hinge);
                double accelerating[6], turned[6], moving[6], spun[6];
                mat6_vec(inertia, dak, accelerating);
                mat6_vec(inertia, dvk, turned);
                force_cross(vb, turned, moving);
                force_cross(dvk, momentum, spun);
                for (int k = 0; k < 6; ++k)
                    df[k] = accelerating[k] + moving[k] + spun[k];
            }
            if (arms) {
                /* d f_ext = [f x w; n x w + A w] with w the body's turn (dvr[3:]) */
                const double *fb = m->body_forces + 6 * body, *w = dvr + 3;
                double *df = AT(df_dq, body, hinge), fw[3], nw[3], aw[3];
                cross(fb, w, fw);
                cross(fb + 3, w, nw);
                mat3_vec(arms + 9 * body, w, aw);
                for (int k = 0; k < 3; ++k) {
                    df[k] -= fw[k];
                    df[3 + k] -= nw[k] + aw[k];
                }
            }
        }
    }
    for (int body = nb - 1; body > 1; --body)
        if (m->parent[body] > 0 && last[body] > last[m->parent[body]])
            last[m->parent[body]] = last[body];
    memset(dtau_dq, 0, (size_t)nb * nb * sizeof(double));
    memset(dtau_dqd, 0, (size_t)nb * nb * sizeof(double));
    for (int body = nb - 1; body > 0; --body) {
        int parent = m->parent[body];
        const double *x = m->transforms + 36 * body, *h = m->hinge_map + 6 * body;
        /* the columns that can be nonzero: ancestors, then the subtree */
        for (int hinge = m->parent[body], pass = 0; pass < 2; ++pass) {
            int stop = pass ? last[body] + 1 : 0;
            if (pass)
                hinge = body;
            while (pass ? hinge < stop : hinge > 0) {
                dtau_dq[body * nb + hinge] = dot6(h, AT(df_dq, body, hinge));
                if (!at_rest)
                    dtau_dqd[body * nb + hinge] = dot6(h, AT(df_dqd, body, hinge));
                if (parent > 0) {
                    double through[6], *dfp = AT(df_dq, parent, hinge);
                    mat6t_vec(x, AT(df_dq, body, hinge), through);
                    for (int k = 0; k < 6; ++k)
                        dfp[k] += through[k];
                    if (!at_rest) {
                        dfp = AT(df_dqd, parent, hinge);
                        mat6t_vec(x, AT(df_dqd, body, hinge), through);
                        for (int k = 0; k < 6; ++k)
                            dfp[k] += through[k];
                    }
                }
                hinge = pass ? hinge + 1 : m->parent[hinge];
            }
        }
        if (parent == 0)
            continue;
        /* d(X^T F)/dq(i) = X^T (H x* F) */
        double spun[6], through[6], *dfp = AT(df_dq, parent, body);
        force_cross(h, m->force + 6 * body, spun);
        mat6t_vec(x, spun, through);
        for (int k = 0; k < 6; ++k)
            dfp[k] += through[k];
    }
#undef AT
}

/* G^T D G of a hinge matrix (nb x nb) onto the selected joints, into out (n x n) */
static void fold_hinge_matrix(Model *m, const double *hinge_matrix, double *out)
{
    memcpy(m->hinge_mass, hinge_matrix, (size_t)m->nb * m->nb * sizeof(double));
    joint_mass_matrix(m);
    memcpy(out, m->joint_mass, (size_t)m->rate_dof * m->rate_dof * sizeof(double));
}

/* out = [dtau/dq, dtau/dqd] (2 x n x n) at the joint accelerations qdd (NULL: zero);
 * q_hinge, qd_hinge and transforms current; space: the derivative workspace. */
static void inverse_derivatives_core(Model *m, const double *qdd, const double *p,
                                     const double *arms, double *space, double *out)
{
    int nb = m->nb, n = m->rate_dof;
    double *dtau_dq = space + 36 * (size_t)nb * nb, *dtau_dqd = dtau_dq + (size_t)nb * nb;
    if (qdd)
        hinge_rates(m, qdd, m->qdd_hinge);
    else
        memset(m->qdd_hinge, 0, nb * sizeof(double));
    newton_euler_derivatives(m, p, m->qd_hinge, m->qdd_hinge, arms, space, dtau_dq, dtau_dqd);
    fold_hinge_matrix(m, dtau_dq, out);
    fold_hinge_matrix(m, dtau_dqd, out + (size_t)n * n);
}

/* out = [dqdd/dq, dqdd/dqd, dqdd/dtau] (3 x n x n); q_hinge current (body placements and
 * body forces too with wrenches).  Status 2 when M or a hinge is singular. */
static int forward_derivatives_core(Model *m, const double *qd, const double *tau,
                                    const double *p, const double *arms, double *space,
                                    double *qdd, double *out)
{
    int n = m->rate_dof;
    size_t nn = (size_t)n * n;
    int status = forward_core(m, qd, tau, p, arms != NULL, qdd);
    if (status != SOA_OK)
        return status;
    inverse_derivatives_core(m, qdd, p, arms, space, out);
    composite_body(m);
    joint_mass_matrix(m);
    double *column = qdd;       /* qdd is no longer needed */
    for (int j = 0; j < n; ++j)
        out[2 * nn + (size_t)j * n + j] = 1.0;
    for (int j = 0; j < n; ++j)
        for (int i = 0; i < n; ++i)
            if (i != j)
                out[2 * nn + (size_t)i * n + j] = 0.0;
    for (int matrix = 0; matrix < 3; ++matrix) {
        double *d = out + matrix * nn, sign = matrix < 2 ? -1.0 : 1.0;
        for (int j = 0; j < n; ++j) {
            for (int i = 0; i < n; ++i)
                column[i] = d[(size_t)i * n + j];
            if (soa_cholesky_solve(m->joint_mass, column, n, matrix == 0 && j == 0) != SOA_OK)
                return SOA_SINGULAR;
            for (int i = 0; i < n; ++i)
                d[(size_t)i * n + j] = sign * column[i];
        }
    }
    return SOA_OK;
}

/* One sample into out: kind 0 inverse (qdd in `second`), 1 forward (tau), 2 gravity. */
static int derivatives_sample(Model *m, int kind, const double *q, const double *qd,
                              const double *second, const double *p, const double *frames,
                              const double *wrenches, int count, double *space, double *out)
{
    int nb = m->nb;
    double *arms = frames ? space + 38 * (size_t)nb * nb + nb : NULL;
    double *qdd = space + 38 * (size_t)nb * nb + 10 * (size_t)nb;
    hinge_positions(m, q);
    if (frames) {
        body_placements(m);
        body_forces(m, frames, wrenches, count);
        body_force_arms(m, frames, wrenches, count, arms);
    }
    if (kind == 1)
        return forward_derivatives_core(m, qd, second, p, arms, space, qdd, out);
    transforms(m);
    if (kind == 0) {
        hinge_rates(m, qd, m->qd_hinge);
        inverse_derivatives_core(m, second, p, arms, space, out);
        return SOA_OK;
    }
    memset(m->qd_hinge, 0, nb * sizeof(double));
    memset(m->qdd_hinge, 0, nb * sizeof(double));
    double *dtau_dq = space + 36 * (size_t)nb * nb, *dtau_dqd = dtau_dq + (size_t)nb * nb;
    newton_euler_derivatives(m, p, m->qd_hinge, m->qdd_hinge, NULL, space, dtau_dq, dtau_dqd);
    fold_hinge_matrix(m, dtau_dq, out);
    return SOA_OK;
}

/* Matrices per answer: 2 (inverse), 3 (forward), 1 (gravity). */
static const int derivative_outputs[3] = {2, 3, 1};

/* f(model, q, [qd, qdd | tau,] [frames, wrenches,] p) -> (outputs, n, n) or (n, n) */
static PyObject *derivatives_call(PyObject *const *args, Py_ssize_t nargs, int kind,
                                  int wrenched)
{
    int inputs = kind == 2 ? 1 : 3;
    if (soa_wrong_count(nargs, 2 + inputs + 2 * wrenched))
        return NULL;
    Model *m = model_of(args[0]);
    if (!m)
        return NULL;
    const double *data[3] = {NULL, NULL, NULL};
    const double *p = soa_array(args[1 + inputs + 2 * wrenched], 1, m->params, 0);
    npy_intp lengths[3] = {m->dof, m->rate_dof, m->rate_dof};
    if (!p || vectors(args + 1, inputs, lengths, data) != SOA_OK)
        return PyLong_FromLong(SOA_BAD_INPUT);
    const double *frames = NULL, *wrenches = NULL;
    int count = 0;
    if (wrenched && wrench_arrays(m, args[1 + inputs], args[2 + inputs], &frames, &wrenches,
                                  &count) != SOA_OK)
        return PyLong_FromLong(SOA_BAD_INPUT);
    double *space = derivative_workspace(derivative_doubles(m)), *out;
    if (!space)
        return PyErr_NoMemory();
    npy_intp n = m->rate_dof;
    PyObject *result = kind == 2 ? new_array(2, n, n, &out)
                                 : new_array(3, derivative_outputs[kind], n, &out);
    if (!result)
        return NULL;
    unpack_inertias(m, p);
    return answer(result, derivatives_sample(m, kind, data[0], data[1], data[2], p, frames,
                                             wrenches, count, space, out));
}

/* f(model, Q, [QD, QDD | TAU,] p) -> (N, outputs, n, n); a failing sample s answers
 * 4 s + status. */
static PyObject *derivatives_batch(PyObject *const *args, Py_ssize_t nargs, int kind)
{
    int inputs = kind == 2 ? 1 : 3;
    if (soa_wrong_count(nargs, 2 + inputs))
        return NULL;
    Model *m = model_of(args[0]);
    if (!m)
        return NULL;
    const double *data[3] = {NULL, NULL, NULL};
    const double *p = soa_array(args[1 + inputs], 1, m->params, 0);
    npy_intp count = -1, widths[3] = {m->dof, m->rate_dof, m->rate_dof};
    if (!p)
        return PyLong_FromLong(SOA_BAD_INPUT);
    for (int k = 0; k < inputs; ++k) {
        if (!(data[k] = soa_array(args[1 + k], 2, count, widths[k])))
            return PyLong_FromLong(SOA_BAD_INPUT);
        count = PyArray_DIM((PyArrayObject *)args[1 + k], 0);
    }
    double *space = derivative_workspace(derivative_doubles(m));
    if (!space)
        return PyErr_NoMemory();
    npy_intp n = m->rate_dof, outputs = derivative_outputs[kind];
    npy_intp shape[4] = {count, outputs, n, n};
    PyObject *result = PyArray_SimpleNew(4, shape, NPY_DOUBLE);
    if (!result)
        return NULL;
    double *out = (double *)PyArray_DATA((PyArrayObject *)result);
    unpack_inertias(m, p);
    for (npy_intp s = 0; s < count; ++s) {
        const double *sample[3] = {NULL, NULL, NULL};
        for (int k = 0; k < inputs; ++k) {
            sample[k] = data[k] + s * widths[k];
            if (soa_check(sample[k], (int)widths[k], SOA_MAX_MAGNITUDE))
                return answer(result, (int)(4 * s + SOA_BAD_INPUT));
        }
        int status = derivatives_sample(m, kind, sample[0], sample[1], sample[2], p, NULL, NULL,
                                        0, space, out + s * outputs * n * n);
        if (status != SOA_OK)
            return answer(result, (int)(4 * s + status));
    }
    return result;
}

static PyObject *inverse_dynamics_derivatives(PyObject *self, PyObject *const *args,
                                              Py_ssize_t nargs)
{
    (void)self;
    return derivatives_call(args, nargs, 0, 0);
}

static PyObject *inverse_dynamics_derivatives_wrenches(PyObject *self, PyObject *const *args,
                                                       Py_ssize_t nargs)
{
    (void)self;
    return derivatives_call(args, nargs, 0, 1);
}

static PyObject *forward_dynamics_derivatives(PyObject *self, PyObject *const *args,
                                              Py_ssize_t nargs)
{
    (void)self;
    return derivatives_call(args, nargs, 1, 0);
}

static PyObject *forward_dynamics_derivatives_wrenches(PyObject *self, PyObject *const *args,
                                                       Py_ssize_t nargs)
{
    (void)self;
    return derivatives_call(args, nargs, 1, 1);
}

static PyObject *gravity_derivatives(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    return derivatives_call(args, nargs, 2, 0);
}

static PyObject *inverse_dynamics_derivatives_batch(PyObject *self, PyObject *const *args,
                                                    Py_ssize_t nargs)
{
    (void)self;
    return derivatives_batch(args, nargs, 0);
}

static PyObject *forward_dynamics_derivatives_batch(PyObject *self, PyObject *const *args,
                                                    Py_ssize_t nargs)
{
    (void)self;
    return derivatives_batch(args, nargs, 1);
}

static PyObject *gravity_derivatives_batch(PyObject *self, PyObject *const *args,
                                           Py_ssize_t nargs)
{
    (void)self;
    return derivatives_batch(args, nargs, 2);
}
