/* Python glue of the inverse, forward, mixed and task-space calls (and the inverse core).
 * Part of generic.c (included there, one translation unit). */
/* Inverse dynamics with the full map (qd and qdd NULL: zero). */
static void inverse_core(Model *m, const double *qd, const double *qdd, const double *p,
                         int with_forces, double *out)
{
    if (!qd && !qdd && !with_forces) {
        rest_newton_euler(m, p);
        joint_forces(m, m->torque, out);
        return;
    }
    if (qd)
        hinge_rates(m, qd, m->qd_hinge);
    else
        memset(m->qd_hinge, 0, m->nb * sizeof(double));
    if (qdd)
        hinge_rates(m, qdd, m->qdd_hinge);
    else
        memset(m->qdd_hinge, 0, m->nb * sizeof(double));
    newton_euler(m, p, m->qd_hinge, m->qdd_hinge, with_forces);
    joint_forces(m, m->torque, out);
}

/* f(model, q, [qd, [qdd,]] [wrenches,] p) -> tau: layout "d" .. "ddd", "dddw" */
static PyObject *inverse_call(const Arguments *a, PyObject *const *args)
{
    Model *m = a->m;
    double *out;
    PyObject *result = new_array(1, m->dof, 0, &out);
    if (!result)
        return NULL;
    place_call(a, 0);
    inverse_core(m, a->vector[1], a->vector[2], a->p, a->wrenched, out);
    return result;
}

BINDING(gravity_torques, inverse_call, "d")
BINDING(bias_torques, inverse_call, "dd")
BINDING(inverse_dynamics, inverse_call, "ddd")
BINDING(inverse_dynamics_wrenches, inverse_call, "dddw")

/* f(model, q, qd, tau, [wrenches,] p) -> qdd of the selected joints: layout "drr[w]" */
static PyObject *forward_call(const Arguments *a, PyObject *const *args)
{
    Model *m = a->m;
    double *out;
    PyObject *result = new_array(1, m->rate_dof, 0, &out);
    if (!result)
        return NULL;
    unpack_inertias(m, a->p);
    place_call(a, 0);
    return answer(result, forward_core(m, a->vector[1], a->vector[2], a->p, a->wrenched, out));
}

BINDING(forward_dynamics, forward_call, "drr")
BINDING(forward_dynamics_wrenches, forward_call, "drrw")

/* f(model, q, qd, qdd, tau, prescribed, [wrenches,] p) -> [qdd_all; tau_all], (2, dof);
 * prescribed: per joint, nonzero where its qdd is given.  Layout "drrrr[w]". */
static PyObject *mixed_call(const Arguments *a, PyObject *const *args)
{
    Model *m = a->m;
    const double *const *v = a->vector;
    double *out, *work = m->couples ? scratch(m, (size_t)m->rate_dof * (m->rate_dof + 1)) : NULL;
    if (m->couples && !work)
        return PyErr_NoMemory();
    PyObject *result = new_array(2, 2, m->rate_dof, &out);
    if (!result)
        return NULL;
    unpack_inertias(m, a->p);
    place_call(a, 0);
    return answer(result, m->couples
        ? dense_mixed_core(m, v[1], v[2], v[3], v[4], a->p, a->wrenched, work, out)
        : mixed_core(m, v[1], v[2], v[3], v[4], a->p, a->wrenched, out));
}

BINDING(mixed_dynamics, mixed_call, "drrrr")
BINDING(mixed_dynamics_wrenches, mixed_call, "drrrrw")

/* f(model, frames, first, width, q, damping, info, p) -> [Lambda, Lambda^-1, condition,
 * rank] (invert_compliance; without `info`, invert_compliance_by_cholesky where it
 * answers: condition NaN, rank -1), flat, of unit wrenches along rows first..first+width-1 of [f; t]
 * at each frame (float64 frame indices), for the selected joints: the articulated-body
 * compliance recursion, or dense_compliance_core where mimic joints couple hinges.
 * Status 3 (the numpy path decides) when the rank is in doubt.  Its workspace (sized by
 * the frames) stays in the model.  `info` is True or False (an exact bool: the module runs
 * no Python code once it holds the arrays). */
static PyObject *task_space_inertia_call(const Arguments *a, PyObject *const *args)
{
    Model *m = a->m;
    const double *p = a->p;
    int info = args[6] == Py_True;
    long first = PyLong_Check(args[2]) ? PyLong_AsLong(args[2]) : -1;
    long width = PyLong_Check(args[3]) ? PyLong_AsLong(args[3]) : -1;
    double damping = PyFloat_Check(args[5]) ? PyFloat_AS_DOUBLE(args[5]) : -1.0;
    if (PyErr_Occurred())
        PyErr_Clear();
    npy_intp frame_count = PyArray_Check(args[1]) ? PyArray_SIZE((PyArrayObject *)args[1]) : 0;
    /* (at most INT_MAX / 6 frames: their columns are counted in an int) */
    const double *frames = frame_count >= 1 && frame_count <= INT_MAX / 6
        ? soa_array(args[1], 1, frame_count, 0) : NULL;
    if (!frames || first < 0 || width < 1 || first + width > 6
        || !(info || args[6] == Py_False) || !(damping >= 0.0 && damping <= SOA_MAX_MAGNITUDE))
        return PyLong_FromLong(SOA_BAD_INPUT);
    int count = (int)frame_count;
    for (int k = 0; k < count; ++k)
        if (!(frames[k] >= 0 && frames[k] < m->nf))
            return PyLong_FromLong(SOA_BAD_INPUT);
    int columns = count * (int)width;
    size_t carried_size = ((size_t)m->nb * 6 + 7) * columns;
    size_t dense_size = ((size_t)6 * count + columns) * m->rate_dof;
    carried_size = dense_size > carried_size ? dense_size : carried_size;
    size_t size = carried_size + (size_t)columns * columns + 2 * (size_t)columns * columns + columns;
    double *out, *carried = scratch(m, size);
    if (!carried)
        return PyErr_NoMemory();
    double *compliance = carried + carried_size, *work = compliance + (size_t)columns * columns;
    PyObject *result = new_array(1, 2 * (npy_intp)columns * columns + 2, 0, &out);
    if (!result)
        return NULL;
    unpack_inertias(m, p);
    place_call(a, 1);
    int status = m->couples
        ? dense_compliance_core(m, frames, count, (int)first, (int)width, p, carried,
                                compliance)
        : compliance_core(m, frames, count, (int)first, (int)width, p, carried, compliance);
    if (status == SOA_OK && (info || invert_compliance_by_cholesky(compliance, columns, damping,
                                                                   work, out) != SOA_OK))
        status = invert_compliance(compliance, columns, damping, work, out);
    return answer(result, status);
}

BINDING(task_space_inertia, task_space_inertia_call, "...d..")
