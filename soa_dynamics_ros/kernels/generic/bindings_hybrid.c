/* Python glue of hybrid dynamics: constraint parsing and the answer's packing.
 * Part of generic.c (included there, one translation unit). */
/* A float64 ndarray (not a subclass, native byte order, aligned, any strides) of `ndim`
 * dimensions, the first `rows` long; NULL for anything else. */
static PyArrayObject *strided_array(PyObject *object, int ndim, npy_intp rows)
{
    if (!PyArray_CheckExact(object))
        return NULL;
    PyArrayObject *array = (PyArrayObject *)object;
    if (PyArray_NDIM(array) != ndim || PyArray_TYPE(array) != NPY_DOUBLE
        || !PyArray_ISNOTSWAPPED(array) || !PyArray_ISALIGNED(array)
        || PyArray_DIM(array, 0) != rows)
        return NULL;
    return array;
}

/* One constraint of a call, a list or tuple (frame name, alpha, beta): the name a frame's
 * (named_frame), alpha a 6 x w array and beta an array of w (strided_array, 1 <= w <= 6).
 * Its frame index, with the name, alpha and beta (borrowed), or -1 for anything else.  It
 * runs no Python code. */
static int constraint_parts(Model *m, PyObject *constraint, PyObject **name,
                            PyArrayObject **alpha, PyArrayObject **beta)
{
    if (!(PyList_CheckExact(constraint) || PyTuple_CheckExact(constraint))
        || PySequence_Fast_GET_SIZE(constraint) != 3)
        return -1;
    *name = PySequence_Fast_GET_ITEM(constraint, 0);
    *alpha = strided_array(PySequence_Fast_GET_ITEM(constraint, 1), 2, 6);
    if (!*alpha)
        return -1;
    npy_intp width = PyArray_DIM(*alpha, 1);
    if (width < 1 || width > 6
        || !(*beta = strided_array(PySequence_Fast_GET_ITEM(constraint, 2), 1, width)))
        return -1;
    return named_frame(m, *name);
}

/* The count and total columns of a call's constraints, a list or tuple of at least one
 * constraint_parts(), or status 1 for anything else (the Python layer then parses them
 * and names what is wrong, or retries with the arrays it converted). */
static int constraint_shape(Model *m, PyObject *constraints, int *count, int *columns)
{
    if (!(PyList_CheckExact(constraints) || PyTuple_CheckExact(constraints)))
        return SOA_BAD_INPUT;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(constraints);
    if (n < 1 || n > INT_MAX / 6)
        return SOA_BAD_INPUT;
    int total = 0;
    for (Py_ssize_t k = 0; k < n; ++k) {
        PyObject *name;
        PyArrayObject *alpha, *beta;
        if (constraint_parts(m, PySequence_Fast_GET_ITEM(constraints, k), &name, &alpha,
                             &beta) < 0)
            return SOA_BAD_INPUT;
        total += (int)PyArray_DIM(alpha, 1);
    }
    *count = (int)n;
    *columns = total;
    return SOA_OK;
}

/* The constraints of constraint_shape()'s `count` and `columns`, packed as hybrid_core
 * reads them: frame indices and widths (count each), alpha (6 x columns, by rows) and
 * beta (columns), and their names into `names` (a new tuple of count).  Every item is
 * checked again as it is read: what ran between the two passes (allocating `names` may
 * run a collection's finalizers) may have changed a list.  Status 1 when they no longer
 * have that shape, or a value is NaN, inf or beyond SOA_MAX_MAGNITUDE. */
static int pack_constraints(Model *m, PyObject *constraints, int count, int columns,
                            double *frames, double *widths, double *alpha, double *beta,
                            PyObject *names)
{
    if (!(PyList_CheckExact(constraints) || PyTuple_CheckExact(constraints))
        || PySequence_Fast_GET_SIZE(constraints) != count)
        return SOA_BAD_INPUT;
    npy_intp start = 0;
    for (int k = 0; k < count; ++k) {
        PyObject *name;
        PyArrayObject *block, *target;
        int frame = constraint_parts(m, PySequence_Fast_GET_ITEM(constraints, k), &name,
                                     &block, &target);
        if (frame < 0)
            return SOA_BAD_INPUT;
        npy_intp width = PyArray_DIM(block, 1);
        if (width > columns - start)
            return SOA_BAD_INPUT;
        frames[k] = (double)frame;
        widths[k] = (double)width;
        for (npy_intp c = 0; c < width; ++c) {
            for (int i = 0; i < 6; ++i)
                alpha[i * columns + start + c] = *(const double *)PyArray_GETPTR2(block, i, c);
            beta[start + c] = *(const double *)PyArray_GETPTR1(target, c);
        }
        Py_INCREF(name);
        PyTuple_SET_ITEM(names, k, name);
        start += width;
    }
    if (start != columns || soa_check(alpha, 6 * columns, SOA_MAX_MAGNITUDE)
        || soa_check(beta, columns, SOA_MAX_MAGNITUDE))
        return SOA_BAD_INPUT;
    return SOA_OK;
}

/* The answer of hybrid_call from the cores' output `out` (a copy the call owns: making
 * the answer's objects may run finalizers, which may call this model again): (qdd,
 * constraint torques, nu, {frame name: classical acceleration}, rank, dropped directions
 * (columns x (columns - rank)), [the slice of nu of each constraint]), the parts
 * HybridDynamics holds; `names` and `widths` those of pack_constraints. */
static PyObject *hybrid_answer(PyObject *names, int n, int columns, const double *widths,
                               const double *out)
{
    Py_ssize_t count = PyTuple_GET_SIZE(names);
    PyObject *parts = PyTuple_New(7);
    if (!parts)
        return NULL;
    npy_intp sizes[3] = {n, n, columns};
    for (int k = 0; k < 3; ++k) {
        double *part;
        PyObject *array = new_array(1, sizes[k], 0, &part);
        if (!array)
            goto failed;
        memcpy(part, out, sizes[k] * sizeof(double));
        out += sizes[k];
        PyTuple_SET_ITEM(parts, k, array);
    }
    const double *ranked = out + 6 * count;
    int rank = (int)ranked[0];
    double *dropped_directions;
    PyObject *accelerations = PyDict_New(), *rank_object = PyLong_FromLong(rank),
             *dropped = new_array(2, columns, columns - rank, &dropped_directions),
             *slices = PyList_New(count);
    if (accelerations)
        PyTuple_SET_ITEM(parts, 3, accelerations);
    if (rank_object)
        PyTuple_SET_ITEM(parts, 4, rank_object);
    if (dropped)
        PyTuple_SET_ITEM(parts, 5, dropped);
    if (slices)
        PyTuple_SET_ITEM(parts, 6, slices);
    if (!accelerations || !rank_object || !dropped || !slices)
        goto failed;
    memcpy(dropped_directions, ranked + 1, (size_t)columns * (columns - rank) * sizeof(double));
    for (Py_ssize_t k = 0, start = 0; k < count; start += (Py_ssize_t)widths[k], ++k) {
        double *acceleration;
        PyObject *array = new_array(1, 6, 0, &acceleration);
        if (!array)
            goto failed;
        memcpy(acceleration, out + 6 * k, 6 * sizeof(double));
        int stored = PyDict_SetItem(accelerations, PyTuple_GET_ITEM(names, k), array);
        Py_DECREF(array);
        PyObject *first = PyLong_FromSsize_t(start);
        PyObject *stop = PyLong_FromSsize_t(start + (Py_ssize_t)widths[k]);
        PyObject *rows = first && stop ? PySlice_New(first, stop, NULL) : NULL;
        Py_XDECREF(first);
        Py_XDECREF(stop);
        if (stored < 0 || !rows) {
            Py_XDECREF(rows);
            goto failed;
        }
        PyList_SET_ITEM(slices, k, rows);
    }
    return parts;
failed:
    Py_DECREF(parts);
    return NULL;
}

/* f(model, q, qd, tau, constraints, [wrenches,] p) -> hybrid_answer() (hybrid_core);
 * constraints as constraint_shape() reads them.  Layout "drr.[w]". */
static PyObject *hybrid_call(const Arguments *a, PyObject *const *args)
{
    Model *m = a->m;
    int count, columns;
    if (constraint_shape(m, args[4], &count, &columns) != SOA_OK)
        return PyLong_FromLong(SOA_BAD_INPUT);
    size_t tree_size = 2 * (size_t)m->nb * 6 * columns;
    size_t dense_size = ((size_t)6 * count + 2 * columns) * m->rate_dof;
    size_t core_size = (dense_size > tree_size ? dense_size : tree_size)
                       + 2 * (size_t)columns * columns + 7 * (size_t)columns;
    int n = m->rate_dof;
    /* the cores' workspace, the packed constraints, then the cores' output */
    double *work = scratch(m, core_size + 2 * (size_t)count + 7 * (size_t)columns
                              + 2 * (size_t)n + columns + 6 * (size_t)count + 1
                              + (size_t)columns * columns);
    if (!work)
        return PyErr_NoMemory();
    double *frames = work + core_size, *widths = frames + count, *alpha = widths + count;
    double *beta = alpha + 6 * (size_t)columns, *out = beta + columns;
    PyObject *names = PyTuple_New(count);
    if (!names)
        return NULL;
    if (pack_constraints(m, args[4], count, columns, frames, widths, alpha, beta, names)
        != SOA_OK) {
        Py_DECREF(names);
        return PyLong_FromLong(SOA_BAD_INPUT);
    }
    unpack_inertias(m, a->p);
    place_call(a, 1);
    int (*core)(Model *, const double *, const double *, const double *, const double *, int,
                const double *, const double *, int, const double *, int, double *, double *)
        = m->couples ? dense_hybrid_core : hybrid_core;
    int status = core(m, a->vector[1], a->vector[2], frames, widths, count, alpha, beta, columns,
                      a->p, a->wrenched, work, out);
    size_t out_size = 2 * (size_t)n + columns + 6 * (size_t)count + 1
                      + (size_t)columns * columns;
    double *owned = status == SOA_OK ? PyMem_Malloc((out_size + count) * sizeof(double)) : NULL;
    PyObject *result = NULL;
    if (status != SOA_OK)
        result = PyLong_FromLong(status);
    else if (!owned)
        PyErr_NoMemory();
    else {
        memcpy(owned, out, out_size * sizeof(double));
        memcpy(owned + out_size, widths, count * sizeof(double));
        result = hybrid_answer(names, n, columns, owned + out_size, owned);
    }
    PyMem_Free(owned);
    Py_DECREF(names);
    return result;
}

BINDING(hybrid_dynamics, hybrid_call, "drr.")
BINDING(hybrid_dynamics_wrenches, hybrid_call, "drr.w")
