/* Batches: samples shared out over the usable CPUs.
 * Part of runtime.h (included there in order, after the status values). */
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
