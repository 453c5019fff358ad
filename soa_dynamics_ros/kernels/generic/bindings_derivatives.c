/* Python glue of the derivatives: single calls and batches.
 * Part of generic.c (included there, one translation unit). */
/* Matrices per answer: 2 (inverse), 3 (forward), 1 (gravity). */
static const int derivative_outputs[3] = {2, 3, 1};

/* f(model, q, [qd, qdd | tau,] [{link: wrench},] p) (layout "d", "drr[w]") -> a tuple of
 * 2 (inverse) or 3 (forward) n x n arrays, or one (gravity): separate arrays, as the user gets them, cost
 * less than views of one stacked array made in Python; made first, they are computed in
 * place rather than copied from the workspace. */
static PyObject *derivatives_call(const Arguments *a, PyObject *const *args,
                                  int kind)
{
    Model *m = a->m;
    double *space = derivative_workspace(derivative_doubles(m));
    if (!space)
        return PyErr_NoMemory();
    npy_intp n = m->rate_dof;
    int outputs = derivative_outputs[kind];
    PyObject *arrays[3] = {NULL, NULL, NULL};
    double *out[3] = {NULL, NULL, NULL};
    for (int k = 0; k < outputs; ++k)
        if (!(arrays[k] = new_array(2, n, n, out + k))) {
            for (int j = 0; j < k; ++j)
                Py_DECREF(arrays[j]);
            return NULL;
        }
    Wrenches w = {a->wrenched ? m->wrench_frames : NULL, a->wrenched ? m->wrench_values : NULL,
                  a->wrench_count};
    int status = derivatives_sample(m, kind, a->vector[0], a->vector[1], a->vector[2], a->p, &w,
                                    space, out);
    if (status != SOA_OK) {
        for (int k = 0; k < outputs; ++k)
            Py_DECREF(arrays[k]);
        return PyLong_FromLong(status);
    }
    if (outputs == 1)
        return arrays[0];
    PyObject *result = PyTuple_New(outputs);
    for (int k = 0; k < outputs; ++k) {
        if (result)
            PyTuple_SET_ITEM(result, k, arrays[k]);     /* steals the reference */
        else
            Py_DECREF(arrays[k]);
    }
    return result;
}

/* What one sample of derivatives_batch reads */
typedef struct {
    const double *data[3], *p;
    npy_intp widths[3];
    int kind, inputs, stream;
    size_t answer_at;               /* where in a sample's space its answer is made */
    size_t answer_size;             /* doubles of one sample's answer */
    double *out;
} DerivativeBatch;

/* to[0 .. count - 1] = from[...] past the caches.  A large batch's answers go to memory
 * whatever is done; a plain store first reads each line it writes (so 32 KB of traffic
 * for 16 KB of a 32-joint robot's inverse dynamics derivatives).  Made in the sample's
 * space (the incremental sums stay in the L1 cache), they are streamed out instead. */
static void stream_copy(double *to, const double *from, size_t count)
{
    size_t k = 0;
#if defined(__AVX__)
    for (; k < count && ((uintptr_t)(to + k) & 31); ++k)
        to[k] = from[k];
    for (; k + 4 <= count; k += 4)
        _mm256_stream_pd(to + k, _mm256_loadu_pd(from + k));
    _mm_sfence();       /* (streamed stores are not ordered with the thread's others) */
#endif
    for (; k < count; ++k)
        to[k] = from[k];
}

static int derivative_batch_sample(Model *m, const void *batch, double *space, npy_intp s)
{
    const DerivativeBatch *b = batch;
    const double *sample[3] = {NULL, NULL, NULL};
    for (int k = 0; k < b->inputs; ++k) {
        sample[k] = b->data[k] + s * b->widths[k];
        if (soa_check(sample[k], (int)b->widths[k], SOA_MAX_MAGNITUDE))
            return SOA_BAD_INPUT;
    }
    size_t nn = (size_t)m->rate_dof * m->rate_dof, size = b->answer_size;
    double *target = b->out + (size_t)s * size, *first = b->stream ? space + b->answer_at : target;
    double *out[3] = {first, first + nn, first + 2 * nn};
    Wrenches none = {NULL, NULL, 0};
    int status = derivatives_sample(m, b->kind, sample[0], sample[1], sample[2], b->p, &none,
                                    space, out);
    if (status == SOA_OK && b->stream)
        stream_copy(target, first, size);
    return status;
}

/* f(model, Q, [QD, QDD | TAU,] p) (layout "d", "drr") -> (N, outputs, n, n); a failing
 * sample s answers 4 s + status. */
static PyObject *derivatives_batch(const Arguments *a, PyObject *const *args,
                                   int kind)
{
    Model *m = a->m;
    npy_intp count = a->samples, failed = 0;
    DerivativeBatch batch = {.data = {a->vector[0], a->vector[1], a->vector[2]}, .p = a->p,
                             .widths = {m->dof, m->rate_dof, m->rate_dof}, .kind = kind,
                             .inputs = a->vectors};
    npy_intp n = m->rate_dof, shape[4] = {count, derivative_outputs[kind], n, n};
    size_t size = batch.answer_size = (size_t)derivative_outputs[kind] * n * n;
    /* answers that outgrow the caches are streamed out (stream_copy) */
    batch.stream = (size_t)count * size * sizeof(double) >= SOA_SPARE_MIN_BYTES;
    batch.answer_at = derivative_doubles(m);
    size_t doubles = batch.answer_at + (batch.stream ? size : 0);
    double *space = derivative_workspace(doubles);
    if (!space)
        return PyErr_NoMemory();
    PyObject *result = soa_new_answer(4, shape);
    if (!result)
        return NULL;
    batch.out = (double *)PyArray_DATA((PyArrayObject *)result);
    int status = run_samples(m, derivative_batch_sample, &batch, space, doubles, count, &failed);
    return answer(result, status == SOA_OK ? SOA_OK : (int)(4 * failed + status));
}

BINDING(inverse_dynamics_derivatives, derivatives_call, "drr", 0)
BINDING(inverse_dynamics_derivatives_wrenches, derivatives_call, "drrw", 0)
BINDING(forward_dynamics_derivatives, derivatives_call, "drr", 1)
BINDING(forward_dynamics_derivatives_wrenches, derivatives_call, "drrw", 1)
BINDING(gravity_derivatives, derivatives_call, "d", 2)
BATCH_BINDING(inverse_dynamics_derivatives_batch, derivatives_batch, "drr", 0)
BATCH_BINDING(forward_dynamics_derivatives_batch, derivatives_batch, "drr", 1)
BATCH_BINDING(gravity_derivatives_batch, derivatives_batch, "d", 2)
