/* Python glue of the inertial-parameter regressor (regressor.c).
 * Part of generic.c (included there, one translation unit). */
/* f(model, q, qd, qdd, p) -> dof x PARAMS_PER_BODY (nb - 1) */
static PyObject *inertial_regressor(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (soa_wrong_count(nargs, 5))
        return NULL;
    Model *m = model_of(args[0]);
    if (!m)
        return NULL;
    const double *data[3], *p = soa_array(args[4], 1, m->params, 0);
    npy_intp lengths[3] = {m->dof, m->rate_dof, m->rate_dof};
    if (!p || vectors(args + 1, 3, lengths, data) != SOA_OK)
        return PyLong_FromLong(SOA_BAD_INPUT);
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
