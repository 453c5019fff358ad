/* Python glue of the inertial-parameter regressor (regressor.c).
 * Part of generic.c (included there, one translation unit). */
/* f(model, q, qd, qdd, p) -> dof x PARAMS_PER_BODY (nb - 1) */
static PyObject *inertial_regressor_call(const Arguments *a, PyObject *const *args)
{
    Model *m = a->m;
    double *out;
    PyObject *result = new_array(2, m->rate_dof, PARAMS_PER_BODY * (m->nb - 1), &out);
    if (!result)
        return NULL;
    hinge_positions(m, a->vector[0]);
    local_placements(m);
    hinge_rates(m, a->vector[1], m->qd_hinge);
    hinge_rates(m, a->vector[2], m->qdd_hinge);
    inertial_regressor_core(m, a->p, out);
    return result;
}

BINDING(inertial_regressor, inertial_regressor_call, "drr")
