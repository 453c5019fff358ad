/* What every binding reads first: the model, its vectors and p, checked once here; then
 * the frames and wrenches some bindings take, and their answers.
 * Part of generic.c (included there, one translation unit).
 *
 * A binding states its arguments as a layout (read_arguments) and reads only what is its
 * own; the module function is made by BINDING:
 *
 *     static PyObject *mass_matrix_call(const Arguments *a, PyObject *const *args)
 *     {
 *         ... a->m, a->vector[0] (q), a->p; args[k] for a '.' argument ...
 *     }
 *
 *     BINDING(mass_matrix, mass_matrix_call, "d")
 */

/* A binding's layout: one letter per argument between the model and p.
 *   'd'  a vector of the model's dof (q, or the full map's rates: inverse dynamics)
 *   'r'  a vector of its rate_dof (rates, accelerations, torques of the selected joints)
 *   'f'  a vector of dof + 1: a floating-base q (position, quaternion, joints) of the
 *        model of its chain (bindings_floating.c), whose dof counts the base's 6 rates
 *   'w'  a {frame name: wrench} dict (parse_wrenches: into the model's wrench_frames and
 *        wrench_values)
 *   '.'  an argument the binding reads itself (a frame, constraints, an option)
 * Batches (BATCH_BINDING) take 'd' and 'r' as (N, length) arrays of one N. */
#define LAYOUT_DOF 'd'
#define LAYOUT_RATES 'r'
#define LAYOUT_FLOATING 'f'
#define LAYOUT_WRENCHES 'w'
#define LAYOUT_OWN '.'
/* The most vectors a layout may hold (mixed dynamics' q, qd, qdd, tau, prescribed) */
#define MAX_VECTORS 5

typedef struct {
    Model *m;
    const double *vector[MAX_VECTORS];  /* the layout's vectors in order; NULL past them */
    int vectors;                        /* how many */
    const double *p;                    /* the packed parameters (last argument) */
    int wrenched, wrench_count;         /* a 'w' argument; its wrenches in the model */
    npy_intp samples;                   /* batches: N (0 for a single call) */
} Arguments;

static Model *model_of(PyObject *object)
{
    return (Model *)PyCapsule_GetPointer(object, CAPSULE_NAME);
}

static int parse_wrenches(Model *m, PyObject *wrenches, int *count);

/* The arguments of f(model, <layout>..., p) into *a (2 + `length` of them, the layout's
 * letters; a batch's when `batch`): the model a capsule of make_model; p a float64 array
 * of the model's params; each vector a float64, C-contiguous, aligned, native-order array
 * of its length (runtime.h soa_array) whose entries are finite and within
 * SOA_MAX_MAGNITUDE (a batch's: (N, length) arrays of one N, in a->samples, whose rows
 * the run checks sample by sample); a wrench dict as parse_wrenches takes it.  The '.'
 * arguments are left to the binding, which must read them without running Python code
 * (an exact type's C accessors, as named_frame; the Python caller converts an option to
 * one): Python code could resize or free an array read here.
 * SOA_OK; SOA_BAD_INPUT for anything else; -1 (an exception set) for a wrong count or no
 * model, which refused() answers as NULL.  Inlined into each BINDING, whose layout is a
 * literal: the compiler unrolls the loop over its letters, so that each binding reads
 * its arguments in straight-line code as a hand-written prologue would. */
__attribute__((always_inline))
static inline int read_arguments(PyObject *const *args, Py_ssize_t nargs, const char *layout,
                                 int length, int batch, Arguments *a)
{
    if (soa_wrong_count(nargs, 2 + length))
        return -1;
    Model *m = a->m = model_of(args[0]);
    if (!m)
        return -1;
    a->vectors = a->wrenched = a->wrench_count = 0;
    a->samples = batch ? -1 : 0;
    a->p = soa_array(args[1 + length], 1, m->params, 0);
    if (!a->p)
        return SOA_BAD_INPUT;
    for (int k = 0; k < length; ++k) {
        PyObject *argument = args[1 + k];
        if (layout[k] == LAYOUT_WRENCHES) {
            a->wrenched = 1;
            if (parse_wrenches(m, argument, &a->wrench_count) != SOA_OK)
                return SOA_BAD_INPUT;
        } else if (layout[k] != LAYOUT_OWN) {
            npy_intp size = layout[k] == LAYOUT_DOF ? m->dof
                : layout[k] == LAYOUT_RATES ? m->rate_dof : (npy_intp)m->dof + 1;
            const double *data = batch ? soa_array(argument, 2, a->samples, size)
                                       : soa_array(argument, 1, size, 0);
            if (!data || (!batch && soa_check(data, (int)size, SOA_MAX_MAGNITUDE)))
                return SOA_BAD_INPUT;
            if (batch)
                a->samples = PyArray_DIM((PyArrayObject *)argument, 0);
            a->vector[a->vectors++] = data;
        }
    }
    for (int k = a->vectors; k < MAX_VECTORS; ++k)
        a->vector[k] = NULL;
    return SOA_OK;
}

/* The bodies at the call's q (its layout's first vector): local placements, and the
 * root ones too when `world` or the call has wrenches, which become body forces. */
static void place_call(const Arguments *a, int world)
{
    Model *m = a->m;
    hinge_positions(m, a->vector[0]);
    placements(m, world || a->wrenched);
    if (a->wrenched)
        body_forces(m, m->wrench_frames, m->wrench_values, a->wrench_count);
}

/* A binding's answer to a status of read_arguments other than SOA_OK */
static PyObject *refused(int status)
{
    return status < 0 ? NULL : PyLong_FromLong(status);
}

/* The module function `name` (METH_FASTCALL, generic.c's method table) of arguments
 * f(model, <layout>..., p), `layout` a string literal: they are read (read_arguments),
 * then answered by call(&arguments, args, ...), which reads its '.' arguments from args;
 * or refused.  BATCH_BINDING reads them as a batch's. */
#define BINDING(name, call, layout, ...) BINDING_READ(0, name, call, layout, ##__VA_ARGS__)
#define BATCH_BINDING(name, call, layout, ...) \
    BINDING_READ(1, name, call, layout, ##__VA_ARGS__)
#define BINDING_READ(batch, name, call, layout, ...)                                    \
    static PyObject *name(PyObject *self, PyObject *const *args, Py_ssize_t nargs)      \
    {                                                                                   \
        (void)self;                                                                     \
        Arguments arguments;                                                            \
        int status = read_arguments(args, nargs, layout, (int)sizeof(layout) - 1, batch, \
                                    &arguments);                                        \
        return status == SOA_OK ? call(&arguments, args, ##__VA_ARGS__) : refused(status); \
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

/* An answer of (rows,), (rows, cols) or (rows, cols, cols) doubles (runtime.h
 * soa_new_answer), its data in *data */
static PyObject *new_array(int ndim, npy_intp rows, npy_intp cols, double **data)
{
    npy_intp shape[3] = {rows, cols, cols};
    PyObject *result = soa_new_answer(ndim, shape);
    if (result)
        *data = (double *)PyArray_DATA((PyArrayObject *)result);
    return result;
}

/* result when status is SOA_OK, else the status (result dropped) */
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

/* A frame given by its index (an int), or -1 when it is no frame's */
static int frame_index(Model *m, PyObject *object)
{
    long frame = PyLong_Check(object) ? PyLong_AsLong(object) : -1;
    if (frame == -1 && PyErr_Occurred())
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
