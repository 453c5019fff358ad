/* Python glue of the floating-base models' warm dynamics (model/floating_base.py): the
 * chain model's inputs from the free-flyer's q, v and a in one call, so that a warm call
 * is this and the chain model's kernel.  It needs no model: the lengths are q's.
 * Part of generic.c (included there, one translation unit). */

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
    double x = q[3], y = q[4], z = q[5], w = q[6];
    double norm2 = x * x + y * y + z * z + w * w;
    if (!(base[3] <= norm2 && norm2 <= base[4]))
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
