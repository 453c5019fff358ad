/* Python glue of the inertial-parameter regressor (regressor.c).
 * Part of generic.c (included there, one translation unit). */
/* f(model, q, qd, qdd, p) -> dof x PARAMS_PER_BODY (nb - 1) */
static PyObject *inertial_regressor(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    const double *data[3], *p;
    PyObject *refusal;
    Model *m = joint_vectors_call(args, nargs, 3, data, &p, &refusal);
    if (!m)
        return refusal;
    double *out;
    PyObject *result = new_array(2, m->rate_dof, PARAMS_PER_BODY * (m->nb - 1), &out);
    if (!result)
        return NULL;
    hinge_positions(m, data[0]);
    local_placements(m);
    hinge_rates(m, data[1], m->qd_hinge);
    hinge_rates(m, data[2], m->qdd_hinge);
    inertial_regressor_core(m, p, out);
    return result;
}
