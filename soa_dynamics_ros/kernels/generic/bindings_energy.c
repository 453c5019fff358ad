/* Python glue of the Coriolis matrix and the energies.
 * Part of generic.c (included there, one translation unit). */
/* f(model, q, qd, p) -> C, dof x dof (G^T C_hinge G), or with `energy` 1/2 qd^T M qd (a
 * float); the workspace stays in the model */
static PyObject *velocity_call(PyObject *const *args, Py_ssize_t nargs, int energy)
{
    if (soa_wrong_count(nargs, 4))
        return NULL;
    Model *m = model_of(args[0]);
    if (!m)
        return NULL;
    const double *data[2], *p = soa_array(args[3], 1, m->params, 0);
    npy_intp lengths[2] = {m->dof, m->rate_dof};
    if (!p || vectors(args + 1, 2, lengths, data) != SOA_OK)
        return PyLong_FromLong(SOA_BAD_INPUT);
    double *work = scratch(m, (size_t)m->nb * (energy ? 2 : CORIOLIS_DOUBLES + 2));
    if (!work)
        return PyErr_NoMemory();
    hinge_positions(m, data[0]);
    hinge_rates(m, data[1], m->qd_hinge);
    if (energy)
        return PyFloat_FromDouble(kinetic_energy_core(m, p, work));
    double *out;
    PyObject *result = new_array(2, m->rate_dof, m->rate_dof, &out);
    if (!result)
        return NULL;
    coriolis_hinges(m, p, work);
    fold_hinges(m, m->hinge_mass, out);
    return result;
}

static PyObject *coriolis_matrix(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    return velocity_call(args, nargs, 0);
}

static PyObject *kinetic_energy(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    return velocity_call(args, nargs, 1);
}

/* f(model, q, p) -> -sum m g.c over the moving bodies, a float */
static PyObject *potential_energy(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (soa_wrong_count(nargs, 3))
        return NULL;
    Model *m = model_of(args[0]);
    if (!m)
        return NULL;
    const double *q, *p = soa_array(args[2], 1, m->params, 0);
    npy_intp length = m->dof;
    if (!p || vectors(args + 1, 1, &length, &q) != SOA_OK)
        return PyLong_FromLong(SOA_BAD_INPUT);
    double *sines = scratch(m, 2 * (size_t)m->nb);
    if (!sines)
        return PyErr_NoMemory();
    hinge_positions(m, q);
    return PyFloat_FromDouble(potential_energy_core(m, p, sines));
}
