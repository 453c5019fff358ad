/* Python glue of the floating-base models' warm dynamics (model/floating_base.py): the
 * chain model's inputs from the free-flyer's q, v and a in one call, so that a warm call
 * is this and the chain model's kernel.  It needs no model: the lengths are q's.
 * Part of generic.c (included there, one translation unit). */

/* The squared norm of q's quaternion, or -1 when it is off unit norm by more than
 * base[3..4] (the lowest and highest squared norm taken) */
static double quaternion_norm2(const double *q, const double *base)
{
    double norm2 = q[3] * q[3] + q[4] * q[4] + q[5] * q[5] + q[6] * q[6];
    return base[3] <= norm2 && norm2 <= base[4] ? norm2 : -1.0;
}

/* f(q, v, a, base) -> (chain q, a - shift), two new arrays of nv = nq - 1:
 * q = [position, quaternion (x, y, z, w), joints], v and a of nv (None: zero),
 * base = [gx, gy, gz, lowest and highest squared quaternion norm taken].  The chain q is
 * [0 x 6, joints]; the shift is floating_base.py's _shift_of: the virtual joints'
 * velocity product plus gravity in base axes (R^T g, R of the quaternion over its norm),
 * in the same order of operations.  Status 1 (the Python path names the problem) for
 * anything else: a quaternion off unit norm, NaN/inf or beyond MAX_MAGNITUDE in q, v or
 * a, a wrong type or length. */
static PyObject *floating_inputs(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (soa_wrong_count(nargs, 4))
        return NULL;
    const double *base = soa_array(args[3], 1, 5, 0);
    npy_intp nq = PyArray_Check(args[0]) ? PyArray_SIZE((PyArrayObject *)args[0]) : 0;
    if (!base || nq < 7 || nq > INT_MAX)
        return PyLong_FromLong(SOA_BAD_INPUT);
    npy_intp nv = nq - 1;
    const double *q = soa_array(args[0], 1, nq, 0);
    const double *v = args[1] == Py_None ? NULL : soa_array(args[1], 1, nv, 0);
    const double *a = args[2] == Py_None ? NULL : soa_array(args[2], 1, nv, 0);
    if (!q || (args[1] != Py_None && !v) || (args[2] != Py_None && !a)
        || soa_check(q, (int)nq, SOA_MAX_MAGNITUDE)
        || (v && soa_check(v, (int)nv, SOA_MAX_MAGNITUDE))
        || (a && soa_check(a, (int)nv, SOA_MAX_MAGNITUDE)))
        return PyLong_FromLong(SOA_BAD_INPUT);
    double x = q[3], y = q[4], z = q[5], w = q[6], norm2 = quaternion_norm2(q, base);
    if (norm2 < 0.0)
        return PyLong_FromLong(SOA_BAD_INPUT);
    double gx = base[0], gy = base[1], gz = base[2];
    /* R^T g = g + (w t - u x t) / |q|^2 with t = 2 g x u */
    double tx = 2.0 * (gy * z - gz * y), ty = 2.0 * (gz * x - gx * z),
           tz = 2.0 * (gx * y - gy * x);
    double shift[6] = {gx + (w * tx - (y * tz - z * ty)) / norm2,
                       gy + (w * ty - (z * tx - x * tz)) / norm2,
                       gz + (w * tz - (x * ty - y * tx)) / norm2, 0.0, 0.0, 0.0};
    if (v) {
        double vx = v[0], vy = v[1], vz = v[2], wx = v[3], wy = v[4], wz = v[5];
        shift[0] = vy * wz - vz * wy + shift[0];
        shift[1] = vz * wx - vx * wz + shift[1];
        shift[2] = vx * wy - vy * wx + shift[2];
        shift[3] = wy * wz;
        shift[4] = -wx * wz;
        shift[5] = wx * wy;
    }
    PyObject *chain_q = soa_new_answer(1, &nv);
    if (!chain_q)
        return NULL;
    PyObject *shifted = soa_new_answer(1, &nv);
    if (!shifted) {
        Py_DECREF(chain_q);
        return NULL;
    }
    double *coordinates = (double *)PyArray_DATA((PyArrayObject *)chain_q);
    double *accelerations = (double *)PyArray_DATA((PyArrayObject *)shifted);
    for (int k = 0; k < 6; ++k) {
        coordinates[k] = 0.0;
        accelerations[k] = (a ? a[k] : 0.0) - shift[k];
    }
    for (npy_intp k = 6; k < nv; ++k) {
        coordinates[k] = q[k + 1];
        accelerations[k] = a ? a[k] : 0.0;
    }
    PyObject *result = PyTuple_New(2);
    if (!result) {
        Py_DECREF(chain_q);
        Py_DECREF(shifted);
        return NULL;
    }
    PyTuple_SET_ITEM(result, 0, chain_q);       /* steals the references */
    PyTuple_SET_ITEM(result, 1, shifted);
    return result;
}

/* f(model, q, base, p) -> Ag (6 x nv): the centroidal momentum matrix of a floating-base
 * model whose chain model is `model` (q and base as floating_inputs takes them).  The
 * virtual joints' rows of M are the momentum [f; t about the base origin], in base axes
 * (the root's), of each rate's composite body moving at unit rate, Ic_i S_i with its
 * moment carried to the root origin: one pass over the bodies, where M's other rows take
 * a walk to each ancestor.  Then Ag = [[R, 0], [-R [c]x, R]] M[:6] with c the centre of
 * mass in base axes (floating_base.py's _to_center_of_mass).  Status 1 as
 * floating_inputs', and for a robot without mass (the Python path names it). */
static PyObject *centroidal_call(const Arguments *a, PyObject *const *args)
{
    Model *m = a->m;
    int nv = m->rate_dof;
    const double *q = a->vector[0], *base = soa_array(args[2], 1, 5, 0), *p = a->p;
    if (!base || m->dof < 6 || m->dof != nv)
        return PyLong_FromLong(SOA_BAD_INPUT);
    double norm2 = quaternion_norm2(q, base);
    double *coordinates = scratch(m, (size_t)m->dof + 2 * (size_t)m->nb);
    if (norm2 < 0.0)
        return PyLong_FromLong(SOA_BAD_INPUT);
    if (!coordinates)
        return PyErr_NoMemory();
    double *out;
    PyObject *result = new_array(2, 6, nv, &out);
    if (!result)
        return NULL;
    for (int k = 0; k < m->dof; ++k)
        coordinates[k] = k < 6 ? 0.0 : q[k + 1];
    hinge_positions(m, coordinates);
    /* every body placed and little else done, as the energies: hinge_sines takes the
     * sincos of SOA_LANES hinges at a time, where libm's one by one weighed most */
    double *sines = coordinates + m->dof;
    hinge_sines(m, sines, sines + m->nb);
    m->world_placed = 0;
    for (int body = 1; body < m->nb; ++body)
        placement_at(m, body, sines[body], sines[m->nb + body], m->local_rotation + 9 * body,
                     m->local_translation + 3 * body);
    composite_inertias(m, p);
    memset(out, 0, (size_t)6 * nv * sizeof(double));
    for (int body = 1; body < m->nb; ++body) {
        int rate = m->rate_master[body];
        if (rate < 0)
            continue;
        const double *t = m->articulated + COMPOSITE_DOUBLES * body;
        double force[6], moment[3];
        inertia_apply(t + 6, t, force);
        cross(m->translations + 3 * body, force, moment);
        for (int k = 0; k < 3; ++k) {
            out[k * nv + rate] += m->rate_multiplier[body] * force[k];
            out[(k + 3) * nv + rate] += m->rate_multiplier[body] * (force[k + 3] + moment[k]);
        }
    }
    double mass = out[0];
    if (!(mass > 0.0))
        return answer(result, SOA_BAD_INPUT);
    double cx = out[5 * nv + 1] / mass, cy = out[3 * nv + 2] / mass, cz = out[4 * nv] / mass;
    double scale = 1.0 / sqrt(norm2);
    double x = q[3] * scale, y = q[4] * scale, z = q[5] * scale, w = q[6] * scale;
    double r[9] = {1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w),
                   2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w),
                   2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)};
    /* -R [c]x, row by row */
    double lever[9];
    for (int row = 0; row < 3; ++row) {
        const double *ri = r + 3 * row;
        lever[3 * row] = ri[2] * cy - ri[1] * cz;
        lever[3 * row + 1] = ri[0] * cz - ri[2] * cx;
        lever[3 * row + 2] = ri[1] * cx - ri[0] * cy;
    }
    for (int column = 0; column < nv; ++column) {
        double linear[3], angular[3], turned[3], moved[3], carried[3];
        for (int k = 0; k < 3; ++k) {
            linear[k] = out[k * nv + column];
            angular[k] = out[(k + 3) * nv + column];
        }
        mat3_vec(r, linear, turned);
        mat3_vec(lever, linear, moved);
        mat3_vec(r, angular, carried);
        for (int k = 0; k < 3; ++k) {
            out[k * nv + column] = turned[k];
            out[(k + 3) * nv + column] = moved[k] + carried[k];
        }
    }
    return result;
}

BINDING(floating_centroidal_momentum_matrix, centroidal_call, "f.")
