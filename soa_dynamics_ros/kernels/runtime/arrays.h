/* Arrays in and out: argument checks, and answers recycled.
 * Part of runtime.h (included there in order, after runtime_c.h: the status values and
 * soa_check). */
/* Flags an array's memory needs for its data to be read as a C array of doubles:
 * unaligned data (a view at an odd byte offset) may meet an aligned vector load. */
#define SOA_READABLE (NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED)

/* The data of `object` when it is a float64 C-contiguous, aligned array of native byte
 * order and of `shape` (ndim 1: rows only; a negative row count accepts any), else
 * NULL. */
static const double *soa_array(PyObject *object, int ndim, npy_intp rows, npy_intp cols)
{
    if (!PyArray_Check(object))
        return NULL;
    PyArrayObject *array = (PyArrayObject *)object;
    if (PyArray_NDIM(array) != ndim || PyArray_TYPE(array) != NPY_DOUBLE
        || !PyArray_CHKFLAGS(array, SOA_READABLE) || PyArray_ISBYTESWAPPED(array))
        return NULL;
    if (rows >= 0 && PyArray_DIM(array, 0) != rows)
        return NULL;
    if (ndim == 2 && PyArray_DIM(array, 1) != cols)
        return NULL;
    return (const double *)PyArray_DATA(array);
}

static int soa_wrong_count(Py_ssize_t given, int expected)
{
    if (given == expected)
        return 0;
    PyErr_Format(PyExc_TypeError, "kernel takes %d arguments, %zd given", expected, given);
    return 1;
}

/* The arguments of one sample: `inputs` vectors of length dof into data, then p.
 * -1 (TypeError set) for a wrong count, else SOA_OK or SOA_BAD_INPUT. */
static int soa_sample_arguments(PyObject *const *args, Py_ssize_t nargs, int inputs,
                                npy_intp dof, npy_intp params, const double **data,
                                const double **p)
{
    if (soa_wrong_count(nargs, inputs + 1))
        return -1;
    for (int k = 0; k < inputs; ++k)
        if (!(data[k] = soa_array(args[k], 1, dof, 0)))
            return SOA_BAD_INPUT;
    *p = soa_array(args[inputs], 1, params, 0);
    return *p ? SOA_OK : SOA_BAD_INPUT;
}

/* Answer arrays, recycled.  Making a small array and freeing it costs numpy more
 * instructions than a 7-joint pose or gravity vector does (docs/performance.md, "Design
 * measurements"): a module keeps its
 * last SOA_POOL answers, and one that nothing references any more (its caller dropped
 * it, and no view, buffer or weak reference of it lives: the reference count says so)
 * is filled again instead.  An answer that is still held is never touched: the next
 * one is a new array.  Only ever under the GIL (single samples; batches make their
 * own). */
#define SOA_POOL 8
/* Larger answers (batches) are not kept: a kept one would pin its memory. */
#define SOA_POOL_MAX_DOUBLES 1024
static PyObject *soa_pool[SOA_POOL];

/* Large answers' memory, reused.  A batch's answer over 32 MB is a fresh mapping from
 * glibc every time (its mmap threshold stops growing there), which the kernel faults in
 * and zeroes page by page: a noticeable share of a large batch's time
 * (docs/performance.md, "Design measurements").  So the memory
 * of a large answer, once no array uses it any more, is kept for the next one (one
 * block per module, at most SOA_SPARE_MAX_BYTES), already faulted in.  Only ever
 * under the GIL: answers are made before a batch releases it, and freed by numpy. */
#define SOA_SPARE_MIN_BYTES ((size_t)4 << 20)
#define SOA_SPARE_MAX_BYTES ((size_t)1 << 30)
#define SOA_HUGE_PAGE ((size_t)2 << 20)
static void *soa_spare;
static size_t soa_spare_bytes;

static void soa_release_block(PyObject *capsule)
{
    void *block = PyCapsule_GetPointer(capsule, "soa_block");
    size_t bytes = (size_t)(uintptr_t)PyCapsule_GetContext(capsule);
    if (bytes <= SOA_SPARE_MAX_BYTES && bytes > soa_spare_bytes) {
        free(soa_spare);
        soa_spare = block;
        soa_spare_bytes = bytes;
    } else {
        free(block);
    }
}

/* A new float64 array of `size` doubles: on the kept block when it is large enough (the
 * larger of two is kept: a module's answers keep their sizes), else numpy's. */
static PyObject *soa_new_large(int ndim, const npy_intp *shape, size_t size)
{
    size_t bytes = size * sizeof(double);
    if (bytes < SOA_SPARE_MIN_BYTES)
        return PyArray_SimpleNew(ndim, (npy_intp *)shape, NPY_DOUBLE);
    void *block = NULL;
    if (soa_spare_bytes >= bytes) {
        block = soa_spare;
        bytes = soa_spare_bytes;
        soa_spare = NULL;
        soa_spare_bytes = 0;
    } else {
        bytes = (bytes + SOA_HUGE_PAGE - 1) / SOA_HUGE_PAGE * SOA_HUGE_PAGE;
        if (posix_memalign(&block, SOA_HUGE_PAGE, bytes))
            return PyErr_NoMemory();
        madvise(block, bytes, MADV_HUGEPAGE);      /* as numpy does for its large arrays */
    }
    PyObject *owner = PyCapsule_New(block, "soa_block", soa_release_block);
    if (!owner || PyCapsule_SetContext(owner, (void *)(uintptr_t)bytes)) {
        if (owner)
            Py_DECREF(owner);       /* (its destructor keeps or frees the block) */
        else
            free(block);
        return NULL;
    }
    PyObject *result = PyArray_SimpleNewFromData(ndim, (npy_intp *)shape, NPY_DOUBLE, block);
    if (!result || PyArray_SetBaseObject((PyArrayObject *)result, owner)) {
        Py_XDECREF(result);
        if (!result)
            Py_DECREF(owner);
        return NULL;
    }
    return result;
}

static int soa_recyclable(PyObject *object, int ndim, const npy_intp *shape)
{
    PyArrayObject *array = (PyArrayObject *)object;
    if (Py_REFCNT(object) != 1 || ((PyArrayObject_fields *)array)->weakreflist
        || PyArray_BASE(array) || PyArray_NDIM(array) != ndim
        || PyArray_TYPE(array) != NPY_DOUBLE || PyArray_ISBYTESWAPPED(array)
        || !PyArray_IS_C_CONTIGUOUS(array) || !PyArray_ISWRITEABLE(array))
        return 0;
    for (int k = 0; k < ndim; ++k)
        if (PyArray_DIM(array, k) != shape[k])
            return 0;
    return 1;
}

/* A float64 array of `shape` to write an answer into: recycled, or new (and kept). */
static PyObject *soa_new_answer(int ndim, const npy_intp *shape)
{
    npy_intp size = 1;
    for (int k = 0; k < ndim; ++k)
        size *= shape[k];
    if (size > SOA_POOL_MAX_DOUBLES)
        return soa_new_large(ndim, shape, (size_t)size);
    int free_slot = -1;
    for (int k = 0; k < SOA_POOL; ++k) {
        PyObject *kept = soa_pool[k];
        if (kept && soa_recyclable(kept, ndim, shape)) {
            Py_INCREF(kept);
            return kept;
        }
        if (free_slot < 0 && (!kept || Py_REFCNT(kept) == 1))
            free_slot = k;
    }
    PyObject *result = PyArray_SimpleNew(ndim, (npy_intp *)shape, NPY_DOUBLE);
    if (result && free_slot >= 0) {
        Py_XSETREF(soa_pool[free_slot], result);
        Py_INCREF(result);
    }
    return result;
}
