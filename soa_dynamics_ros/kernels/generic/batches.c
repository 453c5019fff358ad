/* Batches over the CPUs: workers each on its own copy of the model.
 * Part of generic.c (included there, one translation unit). */
/* ------------------------------------------------------------------ batches over the CPUs */
static void lay_out(Model *m);

/* Sample s of a batch (`batch`: what the caller's run reads) on model m, which it may use
 * as workspace, with `space` of scratch (the caller's size; NULL when it asked for none). */
typedef int (*SampleRun)(Model *m, const void *batch, double *space, npy_intp s);

/* A worker takes GENERIC_CHUNK samples at a time from *next (shared by the batch's
 * workers), so that one whose CPU is slowed takes fewer instead of holding the batch up. */
typedef struct {
    Model *model;               /* the caller's model, or `copy` */
    Model copy;                 /* the caller's model with a workspace of its own */
    SampleRun run;
    const void *batch;
    double *space;
    npy_intp *next, count, failed;
    int status;
} Worker;

/* A generic sample costs far more than an atomic add, so one add per 8 is nothing, and 8
 * leave a slowed worker little to finish after the others. */
#define GENERIC_CHUNK 8

static void *work(void *argument)
{
    Worker *w = argument;
    w->status = SOA_OK;
    npy_intp s, end;
    while (w->status == SOA_OK && soa_take_chunk(w->next, GENERIC_CHUNK, w->count, &s, &end)) {
        for (; s < end; ++s)
            if ((w->status = w->run(w->model, w->batch, w->space, s)) != SOA_OK) {
                w->failed = s;
                break;
            }
    }
    return NULL;
}

/* Fewer samples than this per worker: copying the workspace and starting a thread cost
 * more than the samples they take over. */
#define SAMPLES_PER_WORKER 32

static void free_workers(Worker *workers, int count)
{
    for (int k = 0; k < count; ++k) {
        free(workers[k].copy.block);
        free(workers[k].space);
    }
    free(workers);
}

/* Workers on copies of m (structure, unpacked inertias and all), each with
 * `space_doubles` of scratch: NULL when memory runs short. */
static Worker *make_workers(const Model *m, int count, size_t space_doubles)
{
    Worker *workers = calloc((size_t)count, sizeof(Worker));
    if (!workers)
        return NULL;
    for (int k = 0; k < count; ++k) {
        Worker *w = workers + k;
        w->copy = *m;
        w->copy.scratch = NULL;         /* (no sample grows it) */
        w->copy.scratch_size = 0;
        w->copy.block = malloc(m->block_bytes);
        w->space = space_doubles ? malloc(space_doubles * sizeof(double)) : NULL;
        if (!w->copy.block || (space_doubles && !w->space)) {
            free_workers(workers, k + 1);
            return NULL;
        }
        memcpy(w->copy.block, m->block, m->block_bytes);
        lay_out(&w->copy);
        w->model = &w->copy;
    }
    return workers;
}

/* Samples 0 .. count - 1 of a batch: split over the CPUs this process may use, without
 * the GIL, each worker on its own copy of m (so m's workspace, which calls from other
 * threads use, is never shared); in order on m and `space` where the batch is too
 * small for that.  Every sample is the same arithmetic either way.  SOA_OK, or the
 * status of the first failing sample and its index in *failed. */
static int run_samples(Model *m, SampleRun run, const void *batch, double *space,
                       size_t space_doubles, npy_intp count, npy_intp *failed)
{
    int workers_count = soa_workers(count, SAMPLES_PER_WORKER);
    Worker *workers = workers_count > 1 ? make_workers(m, workers_count, space_doubles) : NULL;
    npy_intp next = 0;
    if (!workers) {
        Worker here = {.model = m, .run = run, .batch = batch, .space = space, .next = &next,
                       .count = count};
        work(&here);
        *failed = here.failed;
        return here.status;
    }
    for (int k = 0; k < workers_count; ++k) {
        workers[k].run = run;
        workers[k].batch = batch;
        workers[k].next = &next;
        workers[k].count = count;
    }
    Py_BEGIN_ALLOW_THREADS
    soa_in_parallel(work, workers, sizeof *workers, workers_count);
    Py_END_ALLOW_THREADS
    /* a worker stops at its first failure: the batch's first is the least of them (each
     * chunk before it was taken and run to its end, or to a failure of its own) */
    int status = SOA_OK;
    for (int k = 0; k < workers_count; ++k)
        if (workers[k].status != SOA_OK && (status == SOA_OK || workers[k].failed < *failed)) {
            status = workers[k].status;
            *failed = workers[k].failed;
        }
    free_workers(workers, workers_count);
    return status;
}

/* What one sample of batch_call reads */
typedef struct {
    const double *data[3], *p;
    int inputs, forward;
    double *out;
} DynamicsBatch;

static int dynamics_sample(Model *m, const void *batch, double *space, npy_intp s)
{
    (void)space;
    const DynamicsBatch *b = batch;
    const double *sample[3] = {NULL, NULL, NULL};
    for (int k = 0; k < b->inputs; ++k) {
        sample[k] = b->data[k] + s * m->dof;
        if (soa_check(sample[k], m->dof, SOA_MAX_MAGNITUDE))
            return SOA_BAD_INPUT;
    }
    hinge_positions(m, sample[0]);
    local_placements(m);
    if (b->forward)
        return forward_core(m, sample[1], sample[2], b->p, 0, b->out + s * m->dof);
    inverse_core(m, sample[1], sample[2], b->p, 0, b->out + s * m->dof);
    return SOA_OK;
}

/* Batches: f(model, Q, [QD, QDD | QD, TAU], p) over the rows of (N, dof) arrays */
static PyObject *batch_call(const Arguments *a, PyObject *const *args,
                            int forward)
{
    Model *m = a->m;
    DynamicsBatch batch = {.data = {a->vector[0], a->vector[1], a->vector[2]}, .p = a->p,
                           .inputs = a->vectors, .forward = forward};
    npy_intp failed = 0;
    PyObject *result = new_array(2, a->samples, m->dof, &batch.out);
    if (!result)
        return NULL;
    unpack_inertias(m, batch.p);
    int status = run_samples(m, dynamics_sample, &batch, NULL, 0, a->samples, &failed);
    return answer(result, status == SOA_OK ? SOA_OK : (int)(4 * failed + status));
}

BATCH_BINDING(gravity_torques_batch, batch_call, "d", 0)
BATCH_BINDING(inverse_dynamics_batch, batch_call, "ddd", 0)
BATCH_BINDING(forward_dynamics_batch, batch_call, "ddd", 1)
