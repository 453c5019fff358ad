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

/* ------------------------------------------------------------------ Python glue */
static Model *model_of(PyObject *object)
{
    return (Model *)PyCapsule_GetPointer(object, CAPSULE_NAME);
}

/* At least `doubles` of workspace kept in the model (grown, never shrunk), or NULL when
 * out of memory */
static double *scratch(Model *m, size_t doubles)
{
    if (doubles > m->scratch_size) {
        double *grown = realloc(m->scratch, doubles * sizeof(double));
        if (!grown)
            return NULL;
        m->scratch = grown;
        m->scratch_size = doubles;
    }
    return m->scratch;
}

/* `count` vectors of the given lengths from args, checked (runtime.h rules) */
static int vectors(PyObject *const *args, int count, const npy_intp *lengths,
                   const double **out)
{
    for (int k = 0; k < count; ++k)
        if (!(out[k] = soa_array(args[k], 1, lengths[k], 0)))
            return SOA_BAD_INPUT;
    for (int k = 0; k < count; ++k)
        if (soa_check(out[k], (int)lengths[k], SOA_MAX_MAGNITUDE))
            return SOA_BAD_INPUT;
    return SOA_OK;
}

/* The model of f(model, q, [qd, [qdd,]] p), its `count` joint vectors checked into `data`
 * (q of length dof, the rates rate_dof) and p into `p`.  NULL when refused: `refusal` is
 * then the status to answer, or NULL with a Python error set (wrong argument count, no
 * model capsule). */
static Model *joint_vectors_call(PyObject *const *args, Py_ssize_t nargs, int count,
                                 const double **data, const double **p, PyObject **refusal)
{
    *refusal = NULL;
    if (soa_wrong_count(nargs, 2 + count))
        return NULL;
    Model *m = model_of(args[0]);
    if (!m)
        return NULL;
    npy_intp lengths[3] = {m->dof, m->rate_dof, m->rate_dof};
    *p = soa_array(args[1 + count], 1, m->params, 0);
    if (!*p || vectors(args + 1, count, lengths, data) != SOA_OK) {
        *refusal = PyLong_FromLong(SOA_BAD_INPUT);
        return NULL;
    }
    return m;
}

static PyObject *new_array(int ndim, npy_intp rows, npy_intp cols, double **data)
{
    npy_intp shape[3] = {rows, cols, cols};
    PyObject *result = soa_new_answer(ndim, shape);
    if (result)
        *data = (double *)PyArray_DATA((PyArrayObject *)result);
    return result;
}

static PyObject *answer(PyObject *result, int status)
{
    if (status == SOA_OK)
        return result;
    Py_XDECREF(result);
    return PyLong_FromLong(status);
}

/* The index of the frame named `name`, or -1 when it is no frame's name or no exact str
 * (whose lookup could run Python code).  The index is checked too: the dict is a Python
 * object the model shares with its CompiledTree. */
static int named_frame(Model *m, PyObject *name)
{
    PyObject *index = PyUnicode_CheckExact(name)
        ? PyDict_GetItemWithError(m->frame_index, name) : NULL;
    long frame = index && PyLong_CheckExact(index) ? PyLong_AsLong(index) : -1;
    if (PyErr_Occurred())
        PyErr_Clear();
    return frame >= 0 && frame < m->nf ? (int)frame : -1;
}

/* A wrench [f; t]: a float64 ndarray of 6 (any strides; native byte order and aligned,
 * else the numpy path reads it), or a list or tuple of 6 floats or ints */
static int parse_wrench(PyObject *value, double *out)
{
    if (PyArray_Check(value)) {
        PyArrayObject *array = (PyArrayObject *)value;
        if (PyArray_TYPE(array) != NPY_DOUBLE || PyArray_NDIM(array) != 1
            || PyArray_DIM(array, 0) != 6 || !PyArray_ISNOTSWAPPED(array)
            || !PyArray_ISALIGNED(array))
            return SOA_BAD_INPUT;
        for (int k = 0; k < 6; ++k)
            out[k] = *(const double *)PyArray_GETPTR1(array, k);
        return SOA_OK;
    }
    if (!(PyList_CheckExact(value) || PyTuple_CheckExact(value)) || PySequence_Fast_GET_SIZE(value) != 6)
        return SOA_BAD_INPUT;
    for (int k = 0; k < 6; ++k) {
        PyObject *item = PySequence_Fast_GET_ITEM(value, k);
        if (PyFloat_Check(item))
            out[k] = PyFloat_AS_DOUBLE(item);
        else if (PyLong_CheckExact(item)) {
            out[k] = PyLong_AsDouble(item);
            if (out[k] == -1.0 && PyErr_Occurred()) {
                PyErr_Clear();
                return SOA_BAD_INPUT;
            }
        } else
            return SOA_BAD_INPUT;
    }
    return SOA_OK;
}

/* A call's wrenches, {frame name: [f; t]} (root axes, about the frame origin), into
 * wrench_frames and wrench_values; status 1 for anything else (an unknown frame, a
 * malformed wrench: the numpy path names the problem). */
static int parse_wrenches(Model *m, PyObject *wrenches, int *count)
{
    if (!PyDict_CheckExact(wrenches))
        return SOA_BAD_INPUT;
    PyObject *name, *value;
    Py_ssize_t position = 0;
    int k = 0;
    while (PyDict_Next(wrenches, &position, &name, &value)) {
        int frame = named_frame(m, name);
        if (frame < 0 || k >= m->nf)
            return SOA_BAD_INPUT;
        m->wrench_frames[k] = (double)frame;
        if (parse_wrench(value, m->wrench_values + 6 * k) != SOA_OK)
            return SOA_BAD_INPUT;
        ++k;
    }
    if (soa_check(m->wrench_values, 6 * k, SOA_MAX_MAGNITUDE))
        return SOA_BAD_INPUT;
    *count = k;
    return SOA_OK;
}

/* f(model, q, [qd, [qdd,]] [wrenches,] p) -> tau: inputs vectors of length dof */
static PyObject *inverse_call(PyObject *const *args, Py_ssize_t nargs, int inputs, int wrenched)
{
    if (soa_wrong_count(nargs, 2 + inputs + wrenched))
        return NULL;
    Model *m = model_of(args[0]);
    if (!m)
        return NULL;
    const double *data[4];
    npy_intp lengths[4] = {m->dof, m->dof, m->dof, m->params};
    data[3] = soa_array(args[1 + inputs + wrenched], 1, m->params, 0);
    if (!data[3] || vectors(args + 1, inputs, lengths, data) != SOA_OK)
        return PyLong_FromLong(SOA_BAD_INPUT);
    int count = 0;
    if (wrenched && parse_wrenches(m, args[1 + inputs], &count) != SOA_OK)
        return PyLong_FromLong(SOA_BAD_INPUT);
    double *out;
    PyObject *result = new_array(1, m->dof, 0, &out);
    if (!result)
        return NULL;
    hinge_positions(m, data[0]);
    placements(m, wrenched);
    if (wrenched)
        body_forces(m, m->wrench_frames, m->wrench_values, count);
    inverse_core(m, inputs > 1 ? data[1] : NULL, inputs > 2 ? data[2] : NULL, data[3],
                 wrenched, out);
    return result;
}

static PyObject *gravity_torques(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    return inverse_call(args, nargs, 1, 0);
}

static PyObject *bias_torques(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    return inverse_call(args, nargs, 2, 0);
}

static PyObject *inverse_dynamics(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    return inverse_call(args, nargs, 3, 0);
}

static PyObject *inverse_dynamics_wrenches(PyObject *self, PyObject *const *args,
                                           Py_ssize_t nargs)
{
    (void)self;
    return inverse_call(args, nargs, 3, 1);
}

/* f(model, q, qd, tau, [wrenches,] p) -> qdd of the selected joints */
static PyObject *forward_call(PyObject *const *args, Py_ssize_t nargs, int wrenched)
{
    if (soa_wrong_count(nargs, 5 + wrenched))
        return NULL;
    Model *m = model_of(args[0]);
    if (!m)
        return NULL;
    const double *data[3], *p = soa_array(args[4 + wrenched], 1, m->params, 0);
    npy_intp lengths[3] = {m->dof, m->rate_dof, m->rate_dof};
    int count = 0;
    if (!p || vectors(args + 1, 3, lengths, data) != SOA_OK
        || (wrenched && parse_wrenches(m, args[4], &count) != SOA_OK))
        return PyLong_FromLong(SOA_BAD_INPUT);
    double *out;
    PyObject *result = new_array(1, m->rate_dof, 0, &out);
    if (!result)
        return NULL;
    unpack_inertias(m, p);
    hinge_positions(m, data[0]);
    placements(m, wrenched);
    if (wrenched)
        body_forces(m, m->wrench_frames, m->wrench_values, count);
    return answer(result, forward_core(m, data[1], data[2], p, wrenched, out));
}

/* f(model, q, qd, qdd, tau, prescribed, [wrenches,] p) -> [qdd_all; tau_all], (2, dof);
 * prescribed: per joint, nonzero where its qdd is given. */
static PyObject *mixed_call(PyObject *const *args, Py_ssize_t nargs, int wrenched)
{
    if (soa_wrong_count(nargs, 7 + wrenched))
        return NULL;
    Model *m = model_of(args[0]);
    if (!m)
        return NULL;
    const double *data[5], *p = soa_array(args[6 + wrenched], 1, m->params, 0);
    npy_intp lengths[5] = {m->dof, m->rate_dof, m->rate_dof, m->rate_dof, m->rate_dof};
    int count = 0;
    if (!p || vectors(args + 1, 5, lengths, data) != SOA_OK
        || (wrenched && parse_wrenches(m, args[6], &count) != SOA_OK))
        return PyLong_FromLong(SOA_BAD_INPUT);
    double *out, *work = m->couples ? scratch(m, (size_t)m->rate_dof * (m->rate_dof + 1)) : NULL;
    if (m->couples && !work)
        return PyErr_NoMemory();
    PyObject *result = new_array(2, 2, m->rate_dof, &out);
    if (!result)
        return NULL;
    unpack_inertias(m, p);
    hinge_positions(m, data[0]);
    placements(m, wrenched);
    if (wrenched)
        body_forces(m, m->wrench_frames, m->wrench_values, count);
    return answer(result, m->couples
        ? dense_mixed_core(m, data[1], data[2], data[3], data[4], p, wrenched, work, out)
        : mixed_core(m, data[1], data[2], data[3], data[4], p, wrenched, out));
}

static PyObject *mixed_dynamics(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    return mixed_call(args, nargs, 0);
}

static PyObject *mixed_dynamics_wrenches(PyObject *self, PyObject *const *args,
                                         Py_ssize_t nargs)
{
    (void)self;
    return mixed_call(args, nargs, 1);
}

/* f(model, frames, first, width, q, damping, info, p) -> [Lambda, Lambda^-1, condition,
 * rank] (invert_compliance; without `info`, invert_compliance_by_cholesky where it
 * answers: condition NaN, rank -1), flat, of unit wrenches along rows first..first+width-1 of [f; t]
 * at each frame (float64 frame indices), for the selected joints: the articulated-body
 * compliance recursion, or dense_compliance_core where mimic joints couple hinges.
 * Status 3 (the numpy path decides) when the rank is in doubt.  Its workspace (sized by
 * the frames) stays in the model. */
static PyObject *task_space_inertia(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (soa_wrong_count(nargs, 8))
        return NULL;
    Model *m = model_of(args[0]);
    if (!m)
        return NULL;
    int info = PyObject_IsTrue(args[6]);
    long first = PyLong_Check(args[2]) ? PyLong_AsLong(args[2]) : -1;
    long width = PyLong_Check(args[3]) ? PyLong_AsLong(args[3]) : -1;
    double damping = PyFloat_Check(args[5]) ? PyFloat_AS_DOUBLE(args[5]) : -1.0;
    if (PyErr_Occurred())
        PyErr_Clear();
    npy_intp frame_count = PyArray_Check(args[1]) ? PyArray_SIZE((PyArrayObject *)args[1]) : 0;
    /* (at most INT_MAX / 6 frames: their columns are counted in an int) */
    const double *frames = frame_count >= 1 && frame_count <= INT_MAX / 6
        ? soa_array(args[1], 1, frame_count, 0) : NULL;
    const double *q, *p = soa_array(args[7], 1, m->params, 0);
    npy_intp length = m->dof;
    if (!frames || !p || first < 0 || width < 1 || first + width > 6 || info < 0
        || !(damping >= 0.0 && damping <= SOA_MAX_MAGNITUDE)
        || vectors(args + 4, 1, &length, &q) != SOA_OK)
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
    hinge_positions(m, q);
    placements(m, 1);
    int status = m->couples
        ? dense_compliance_core(m, frames, count, (int)first, (int)width, p, carried,
                                compliance)
        : compliance_core(m, frames, count, (int)first, (int)width, p, carried, compliance);
    if (status == SOA_OK && (info || invert_compliance_by_cholesky(compliance, columns, damping,
                                                                   work, out) != SOA_OK))
        status = invert_compliance(compliance, columns, damping, work, out);
    return answer(result, status);
}
