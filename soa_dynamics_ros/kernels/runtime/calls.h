/* One sample's calling conventions: plain, in parts, with wrenches.
 * Part of runtime.h (included there in order, after the status values). */
/* core's answer to one sample's data and p: a (rows,) array when cols == 0, else
 * (rows, cols); or core's status. */
static PyObject *soa_answer(const double *const *data, const double *p, npy_intp rows,
                            npy_intp cols, soa_core core)
{
    npy_intp shape[2] = {rows, cols};
    PyObject *result = soa_new_answer(cols ? 2 : 1, shape);
    if (!result)
        return NULL;
    int status = core(data, p, (double *)PyArray_DATA((PyArrayObject *)result));
    if (status == SOA_OK)
        return result;
    Py_DECREF(result);
    return PyLong_FromLong(status);
}

/* As soa_answer, for `parts` answers: a tuple of new arrays, or core's status. */
static PyObject *soa_answer_parts(const double *const *data, const double *p, int parts,
                                  npy_intp rows, npy_intp cols, soa_core core)
{
    size_t size = (size_t)rows * cols;
    double *out = PyMem_Malloc(parts * size * sizeof(double));
    if (!out)
        return PyErr_NoMemory();
    int status = core(data, p, out);
    PyObject *result = status == SOA_OK ? PyTuple_New(parts) : PyLong_FromLong(status);
    npy_intp shape[2] = {rows, cols};
    for (int k = 0; status == SOA_OK && result && k < parts; ++k) {
        PyObject *array = soa_new_answer(2, shape);
        if (!array) {
            Py_CLEAR(result);
            break;
        }
        memcpy(PyArray_DATA((PyArrayObject *)array), out + k * size, size * sizeof(double));
        PyTuple_SET_ITEM(result, k, array);     /* steals the reference */
    }
    PyMem_Free(out);
    return result;
}

/* One sample: `inputs` vectors of length dof, then p; soa_answer. */
static PyObject *soa_call(PyObject *const *args, Py_ssize_t nargs, int inputs, npy_intp dof,
                          npy_intp params, npy_intp rows, npy_intp cols, soa_core core)
{
    const double *data[SOA_MAX_INPUTS], *p;
    int checked = soa_sample_arguments(args, nargs, inputs, dof, params, data, &p);
    if (checked != SOA_OK)
        return checked < 0 ? NULL : PyLong_FromLong(checked);
    return soa_answer(data, p, rows, cols, core);
}

/* As soa_call, for a core writing `parts` answers of (rows, cols) one after the other:
 * a tuple of `parts` new arrays. */
static PyObject *soa_call_parts(PyObject *const *args, Py_ssize_t nargs, int inputs,
                                npy_intp dof, npy_intp params, int parts, npy_intp rows,
                                npy_intp cols, soa_core core)
{
    const double *data[SOA_MAX_INPUTS], *p;
    int checked = soa_sample_arguments(args, nargs, inputs, dof, params, data, &p);
    if (checked != SOA_OK)
        return checked < 0 ? NULL : PyLong_FromLong(checked);
    return soa_answer_parts(data, p, parts, rows, cols, core);
}

/* A wrenched kernel's sample: `inputs` vectors of length dof, a {link: wrench} dict, then
 * p.  The dict must hold exactly the kernel's `links` (interned `keys`), each a float64
 * vector of 6; core reads their values as one more input, 6 per link in `keys` order.
 * Anything else is SOA_BAD_INPUT, which sends the caller to the generic module.  The
 * answer as soa_call's (parts 1) or soa_call_parts'. */
static PyObject *soa_call_wrenched(PyObject *const *args, Py_ssize_t nargs, int inputs,
                                   npy_intp dof, npy_intp params, PyObject *const *keys,
                                   int links, int parts, npy_intp rows, npy_intp cols,
                                   soa_core core)
{
    if (soa_wrong_count(nargs, inputs + 2))
        return NULL;
    PyObject *vectors[SOA_MAX_INPUTS + 1];
    memcpy(vectors, args, inputs * sizeof *args);
    vectors[inputs] = args[inputs + 1];
    const double *data[SOA_MAX_INPUTS + 1], *p;
    double wrenches[6 * SOA_MAX_WRENCHED_LINKS];
    PyObject *given = args[inputs];
    int status = PyDict_CheckExact(given) && PyDict_GET_SIZE(given) == links
        ? SOA_OK : SOA_BAD_INPUT;
    /* The wrenches first, each copied at once: a lookup may run a key's __eq__ (a str
     * subclass in the dict), which may change any array; the vectors' data are taken
     * after the last lookup. */
    for (int k = 0; k < links && status == SOA_OK; ++k) {
        PyObject *value = PyDict_GetItemWithError(given, keys[k]);
        const double *wrench = value ? soa_array(value, 1, 6, 0) : NULL;
        if (wrench)
            memcpy(wrenches + 6 * k, wrench, 6 * sizeof(double));
        else
            status = PyErr_Occurred() ? -1 : SOA_BAD_INPUT;
    }
    if (status == SOA_OK)
        status = soa_sample_arguments(vectors, inputs + 1, inputs, dof, params, data, &p);
    if (status != SOA_OK)
        return status < 0 ? NULL : PyLong_FromLong(status);
    data[inputs] = wrenches;
    return parts > 1 ? soa_answer_parts(data, p, parts, rows, cols, core)
                     : soa_answer(data, p, rows, cols, core);
}
