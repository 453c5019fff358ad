/* What every generated kernel module includes: argument checks, the two
 * calling conventions seen from Python, and small dense solvers.
 *
 * A generated kernel is a "core" function over raw arrays:
 *
 *     int core(const double *const *inputs, const double *p, double *out);
 *
 * returning 0 (out holds the answer), 1 (an input is NaN/inf or beyond
 * MAX_MAGNITUDE), 2 (a singular hinge) or 3 (ill-conditioned task-space
 * compliance).  The Python-callable wrappers below take float64 C-contiguous
 * numpy arrays and return an array on success (a recycled one: soa_new_answer),
 * else the status as an int;
 * an argument of another type, dtype, layout or length is status 1 (the
 * caller converts or validates it and names the problem).  Batch wrappers
 * return 4 * (first failing sample) + its status, release the GIL and spread
 * large batches over the usable CPUs in contiguous shares.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>
#include <math.h>
#include <string.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include "runtime_c.h"

typedef int (*soa_core)(const double *const *inputs, const double *p, double *out);

/* Batches: SOA_LANES consecutive samples per instruction (GCC vector
 * extensions; 4 doubles fill an AVX2 register, 8 an AVX-512 one).  A lanes
 * core is the single-sample core's arithmetic with every per-sample value a
 * soa_vd: lane l belongs to the block's l-th sample, whose input rows are
 * SOA_STRIDE (= dof) doubles apart and whose answers SOA_OUT_STRIDE (the
 * answer's width: dof, or parts * dof * dof for the derivatives); both are
 * enums in each lanes core.  A core that fills a workspace (M and right-hand
 * sides) has one copy of it per lane, each lane's `size` doubles after the
 * last, and solves lane by lane. */
#if defined(__AVX512F__)
#define SOA_LANES 8
#else
#define SOA_LANES 4
#endif
typedef double soa_vd __attribute__((vector_size(8 * SOA_LANES)));

static inline soa_vd soa_gather(const double *first, int stride)
{
    soa_vd value;
    for (int l = 0; l < SOA_LANES; ++l)
        value[l] = first[l * stride];
    return value;
}

static inline void soa_scatter(double *first, int stride, soa_vd value)
{
    for (int l = 0; l < SOA_LANES; ++l)
        first[l * stride] = value[l];
}

#define SOA_GATHER(array, index) soa_gather(&(array)[index], SOA_STRIDE)

static inline soa_vd soa_broadcast(double x)
{
    soa_vd value;
    for (int l = 0; l < SOA_LANES; ++l)
        value[l] = x;
    return value;
}

/* sin and cos of all lanes per call from glibc's vector math library (libmvec: its AVX2
 * variants for 4 lanes, its AVX-512 ones for 8; build.py defines SOA_LIBMVEC and links
 * it where the toolchain has it).  Lane by lane, libm's sincos took a large share of the
 * instructions of a batch sample; these take a fraction of them (docs/performance.md,
 * "Design measurements").  Their results may differ from libm's in the last bits
 * (glibc bounds both to a few ulp). */
#if defined(SOA_LIBMVEC) && SOA_LANES == 4 && defined(__AVX2__)
#include <immintrin.h>
typedef __m256d soa_mvec;
#define SOA_MVEC_SIN _ZGVdN4v_sin
#define SOA_MVEC_COS _ZGVdN4v_cos
#elif defined(SOA_LIBMVEC) && SOA_LANES == 8 && defined(__AVX512F__)
#include <immintrin.h>
typedef __m512d soa_mvec;
#define SOA_MVEC_SIN _ZGVeN8v_sin
#define SOA_MVEC_COS _ZGVeN8v_cos
#endif

#if defined(SOA_MVEC_SIN)
soa_mvec SOA_MVEC_SIN(soa_mvec x);
soa_mvec SOA_MVEC_COS(soa_mvec x);

static inline soa_vd soa_vsin(soa_vd x)
{
    return (soa_vd)SOA_MVEC_SIN((soa_mvec)x);
}

static inline soa_vd soa_vcos(soa_vd x)
{
    return (soa_vd)SOA_MVEC_COS((soa_mvec)x);
}

static inline void soa_vsincos(soa_vd x, soa_vd *sine, soa_vd *cosine)
{
    *sine = soa_vsin(x);
    *cosine = soa_vcos(x);
}
#else
/* sin and cos lane by lane: the same libm results as the single-sample core. */
static inline soa_vd soa_vsin(soa_vd x)
{
    for (int l = 0; l < SOA_LANES; ++l)
        x[l] = sin(x[l]);
    return x;
}

static inline soa_vd soa_vcos(soa_vd x)
{
    for (int l = 0; l < SOA_LANES; ++l)
        x[l] = cos(x[l]);
    return x;
}

/* Both of one angle: one sincos per lane, as GCC makes of the single-sample core's
 * sin and cos of one angle (GCC does not fuse the two loops above, and one sincos
 * costs less than a sin and a cos). */
static inline void soa_vsincos(soa_vd x, soa_vd *sine, soa_vd *cosine)
{
    for (int l = 0; l < SOA_LANES; ++l) {
        double s, c;
        sincos(x[l], &s, &c);
        (*sine)[l] = s;
        (*cosine)[l] = c;
    }
}
#endif

/* Whether a > b in every lane (false for NaN, like the scalar guard). */
static inline int soa_all_greater(soa_vd a, soa_vd b)
{
    __typeof__(a > b) greater = a > b;
    for (int l = 0; l < SOA_LANES; ++l)
        if (!greater[l])
            return 0;
    return 1;
}

#define SOA_MAX_INPUTS 3
/* generator.MAX_WRENCHED_LINKS */
#define SOA_MAX_WRENCHED_LINKS 4

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

static PyObject *soa_answer_parts(const double *const *data, const double *p, int parts,
                                  npy_intp rows, npy_intp cols, soa_core core);

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

/* Samples first .. first + n - 1 through `core` one by one (input rows dof doubles apart,
 * answers width); 4 * (failing sample) + status, or 0. */
static long soa_run_samples(const double *const *data, npy_intp first, npy_intp n, npy_intp dof,
                            npy_intp width, const double *p, double *out, soa_core core)
{
    const double *sample[SOA_MAX_INPUTS];
    for (npy_intp s = first; s < first + n; ++s) {
        for (int k = 0; k < SOA_MAX_INPUTS; ++k)
            sample[k] = data[k] ? data[k] + s * dof : NULL;
        int status = core(sample, p, out + s * width);
        if (status != SOA_OK)
            return 4 * (long)s + status;
    }
    return 0;
}

#define SOA_MAX_WORKERS 16

/* The threads a batch of `count` samples is worth: one per CPU this process may use,
 * each with `least` samples at least (below that, starting it costs what it saves). */
static int soa_workers(npy_intp count, npy_intp least)
{
    cpu_set_t set;
    npy_intp cpus = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
    npy_intp workers = count / least < cpus ? count / least : cpus;
    return workers < 1 ? 1 : workers > SOA_MAX_WORKERS ? SOA_MAX_WORKERS : (int)workers;
}

/* run() on each of `workers` items `size` bytes apart: item 0 here, the others in
 * threads (here too when no thread can be had).  Called without the GIL. */
static void soa_in_parallel(void *(*run)(void *), void *items, size_t size, int workers)
{
    pthread_t threads[SOA_MAX_WORKERS];
    int started[SOA_MAX_WORKERS] = {0};
    char *item = items;
    for (int k = 1; k < workers; ++k)
        started[k] = pthread_create(&threads[k], NULL, run, item + k * size) == 0;
    run(item);
    for (int k = 1; k < workers; ++k) {
        if (started[k])
            pthread_join(threads[k], NULL);
        else
            run(item + k * size);
    }
}

/* Samples of a batch taken SOA_CHUNK at a time from *next (shared by the shares of one
 * batch) until all `count` are taken (input rows dof doubles apart, answers width):
 * a share whose CPU is slowed (another guest on a VM's host, another process) takes
 * fewer chunks instead of holding the whole batch up.  `failed` as soa_run_samples,
 * for the first failing sample of this share. */
typedef struct {
    const double *const *data;
    const double *p;
    double *out;
    npy_intp *next, count, dof, width;
    soa_core core, lanes;
    long failed;
} soa_share;

/* The next `size` samples of a batch of `count` whose threads share `*next`:
 * [*start, *end), or 0 when none is left.  Every batch (these kernels' and the generic
 * module's) shares out its samples this way. */
static inline int soa_take_chunk(npy_intp *next, npy_intp size, npy_intp count,
                                 npy_intp *start, npy_intp *end)
{
    npy_intp taken = __atomic_fetch_add(next, size, __ATOMIC_RELAXED);
    if (taken >= count)
        return 0;
    *start = taken;
    *end = taken + size < count ? taken + size : count;
    return 1;
}

/* A multiple of SOA_LANES, so that chunks start on a block boundary and every sample
 * goes through the same path (lanes or core) however the chunks are shared; 64 samples
 * of even the cheapest core make the atomic add negligible. */
#define SOA_CHUNK (64 / SOA_LANES * SOA_LANES)

static void *soa_run_share(void *argument)
{
    soa_share *share = argument;
    npy_intp dof = share->dof, width = share->width;
    share->failed = 0;
    npy_intp done, end;
    while (!share->failed && soa_take_chunk(share->next, SOA_CHUNK, share->count, &done, &end)) {
        if (share->lanes) {
            const double *block[SOA_MAX_INPUTS];
            for (; done + SOA_LANES <= end && !share->failed; done += SOA_LANES) {
                for (int k = 0; k < SOA_MAX_INPUTS; ++k)
                    block[k] = share->data[k] ? share->data[k] + done * dof : NULL;
                if (share->lanes(block, share->p, share->out + done * width) != SOA_OK)
                    share->failed = soa_run_samples(share->data, done, SOA_LANES, dof, width,
                                                    share->p, share->out, share->core);
            }
        }
        if (!share->failed)
            share->failed = soa_run_samples(share->data, done, end - done, dof, width,
                                            share->p, share->out, share->core);
    }
    return NULL;
}

/* N samples: `inputs` arrays of shape (N, dof), then p; the answer is (N, width): the
 * core's answer of each sample on its row (width = dof for the dynamics, parts * dof * dof
 * for the derivatives: the generic module's (N, parts, dof, dof) in its memory order).
 * `least`: the fewest samples worth a thread of their own (the generator derives it from
 * the core's operation count, c_emission.samples_per_thread).
 * `lanes` (or NULL) computes SOA_LANES consecutive samples at once; a block it
 * declines (bad input or a singular hinge in some lane) is re-run sample by
 * sample through `core`, which names the first failing sample and its status.
 * Threads take chunks of SOA_CHUNK samples (soa_run_share), which start on a block
 * boundary, so every sample goes through the same path (lanes or core) as in one
 * thread. */
static PyObject *soa_call_batch(PyObject *const *args, Py_ssize_t nargs, int inputs,
                                npy_intp dof, npy_intp params, npy_intp width, npy_intp least,
                                soa_core core, soa_core lanes)
{
    const double *data[SOA_MAX_INPUTS] = {NULL};
    if (soa_wrong_count(nargs, inputs + 1))
        return NULL;
    npy_intp count = -1;
    for (int k = 0; k < inputs; ++k) {
        if (!(data[k] = soa_array(args[k], 2, count, dof)))
            return PyLong_FromLong(SOA_BAD_INPUT);
        count = PyArray_DIM((PyArrayObject *)args[k], 0);
    }
    const double *p = soa_array(args[inputs], 1, params, 0);
    if (!p)
        return PyLong_FromLong(SOA_BAD_INPUT);
    npy_intp shape[2] = {count, width};
    PyObject *result = soa_new_answer(2, shape);
    if (!result)
        return NULL;
    double *out = (double *)PyArray_DATA((PyArrayObject *)result);
    int workers = soa_workers(count, least);
    npy_intp next = 0;
    soa_share shares[SOA_MAX_WORKERS];
    for (int k = 0; k < workers; ++k)
        shares[k] = (soa_share){data, p, out, &next, count, dof, width, core, lanes, 0};
    Py_BEGIN_ALLOW_THREADS
    soa_in_parallel(soa_run_share, shares, sizeof *shares, workers);
    Py_END_ALLOW_THREADS
    /* a share stops at its first failure: the first of the batch is the least of them
     * (each chunk before it was taken and run to its end, or to a failure of its own) */
    long failed = 0;
    for (int k = 0; k < workers; ++k)
        if (shares[k].failed && (!failed || shares[k].failed < failed))
            failed = shares[k].failed;
    if (failed) {
        Py_DECREF(result);
        return PyLong_FromLong(failed);
    }
    return result;
}

/* Four doubles, one AVX register: the generic derivative pass and the substitutions
 * below work on rows four columns at a time. */
typedef double soa_lanes4 __attribute__((vector_size(4 * sizeof(double))));
__attribute__((always_inline))
static inline soa_lanes4 soa_load_lanes(const double *x)
{
    soa_lanes4 lanes;
    memcpy(&lanes, x, sizeof lanes);    /* the terms are only 8-byte aligned */
    return lanes;
}

__attribute__((always_inline))
static inline void soa_store_lanes(double *x, soa_lanes4 lanes)
{
    memcpy(x, &lanes, sizeof lanes);
}

/* Row i of x (rows n doubles apart) less the rows [first, end) weighted by l[k * stride],
 * times scale, on columns [0, columns): eight, then four columns at a time summed in
 * registers over all the rows (stored once, not once per row; one weight loaded for two
 * vectors).  lower: x's rows are zero right of their diagonal, so a column block starting
 * at c takes only the rows from c. */
__attribute__((always_inline))
static inline void soa_eliminate_row(double *x, int n, int i, int first, int end, const double *l,
                                 int stride, double scale, int columns, int lower)
{
    double *row = x + (size_t)i * n;
    int c = 0;
    for (; c + 8 <= columns; c += 8) {
        soa_lanes4 low = soa_load_lanes(row + c), high = soa_load_lanes(row + c + 4);
        for (int k = lower && c > first ? c : first; k < end; ++k) {
            const double *done = x + (size_t)k * n + c;
            double weight = l[k * stride];
            low -= weight * soa_load_lanes(done);
            high -= weight * soa_load_lanes(done + 4);
        }
        soa_store_lanes(row + c, scale * low);
        soa_store_lanes(row + c + 4, scale * high);
    }
    for (; c + 4 <= columns; c += 4) {
        soa_lanes4 sum = soa_load_lanes(row + c);
        for (int k = lower && c > first ? c : first; k < end; ++k)
            sum -= l[k * stride] * soa_load_lanes(x + (size_t)k * n + c);
        soa_store_lanes(row + c, scale * sum);
    }
    for (; c < columns; ++c) {
        double sum = row[c];
        for (int k = lower && c > first ? c : first; k < end; ++k)
            sum -= l[k * stride] * x[(size_t)k * n + c];
        row[c] = sum * scale;
    }
}

/* The per-robot kernels build at -O2 (build.KERNEL_OPTIMIZATION); row updates over whole
 * rows need -O3's vectorizer (measurably faster: docs/performance.md, "Design
 * measurements"). */
#define SOA_VECTORIZED __attribute__((optimize("O3")))

/* M X = B for n x n symmetric positive definite m (its lower Cholesky factor overwrites
 * it) and B of n rows of `parts` n-column blocks (row-major, overwritten): both
 * substitutions as operations on whole rows; out gets X's blocks one after the other,
 * each n x n row-major.  Status 2 when m is not positive definite. */
SOA_VECTORIZED static int soa_solve_parts(double *m, double *b, int n, int parts, double *out)
{
    int width = parts * n;
    if (soa_cholesky_factor(m, n) != SOA_OK)
        return SOA_SINGULAR;
    for (int i = 0; i < n; ++i)
        soa_eliminate_row(b, width, i, 0, i, m + (size_t)i * n, 1, 1.0 / m[i * n + i], width, 0);
    for (int i = n - 1; i >= 0; --i)
        soa_eliminate_row(b, width, i, i + 1, n, m + i, n, 1.0 / m[i * n + i], width, 0);
    for (int p = 0; p < parts; ++p)
        for (int i = 0; i < n; ++i)
            memcpy(out + ((size_t)p * n + i) * n, b + (size_t)i * width + (size_t)p * n,
                   (size_t)n * sizeof(double));
    return SOA_OK;
}

