/* Python glue of the Coriolis matrix and the energies.
 * Part of generic.c (included there, one translation unit). */
/* f(model, q, qd, p) -> C, dof x dof (G^T C_hinge G), or with `energy` 1/2 qd^T M qd (a
 * float); the workspace stays in the model.  Layout "dr". */
static PyObject *velocity_call(const Arguments *a, PyObject *const *args, int energy)
{
    Model *m = a->m;
    double *work = scratch(m, (size_t)m->nb * (energy ? 2 : CORIOLIS_DOUBLES + 2));
    if (!work)
        return PyErr_NoMemory();
    hinge_positions(m, a->vector[0]);
    hinge_rates(m, a->vector[1], m->qd_hinge);
    if (energy)
        return PyFloat_FromDouble(kinetic_energy_core(m, a->p, work));
    double *out;
    PyObject *result = new_array(2, m->rate_dof, m->rate_dof, &out);
    if (!result)
        return NULL;
    coriolis_hinges(m, a->p, work);
    fold_hinges(m, m->hinge_mass, out);
    return result;
}

BINDING(coriolis_matrix, velocity_call, "dr", 0)
BINDING(kinetic_energy, velocity_call, "dr", 1)

/* f(model, q, p) -> -sum m g.c over the moving bodies, a float */
static PyObject *potential_energy_call(const Arguments *a, PyObject *const *args)
{
    Model *m = a->m;
    double *sines = scratch(m, 2 * (size_t)m->nb);
    if (!sines)
        return PyErr_NoMemory();
    hinge_positions(m, a->vector[0]);
    return PyFloat_FromDouble(potential_energy_core(m, a->p, sines));
}

BINDING(potential_energy, potential_energy_call, "d")
