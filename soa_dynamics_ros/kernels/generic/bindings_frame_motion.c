/* Python glue of the frame motion calls (frame_motion.c).
 * Part of generic.c (included there, one translation unit). */
enum { FRAME_TWIST, FRAME_ACCELERATION, JACOBIAN_TIME_DERIVATIVE, JACOBIAN_DERIVATIVE_PRODUCT };

/* f(model, frame, q, qd, [qdd,] p) -> `quantity` of the frame (frame_motion) */
static PyObject *frame_motion_call(PyObject *const *args, Py_ssize_t nargs, int quantity)
{
    int rates = quantity == FRAME_ACCELERATION ? 2 : 1;
    if (soa_wrong_count(nargs, 4 + rates))
        return NULL;
    Model *m = model_of(args[0]);
    if (!m)
        return NULL;
    int frame = frame_index(m, args[1]);
    const double *data[3], *p = soa_array(args[3 + rates], 1, m->params, 0);
    npy_intp lengths[3] = {m->dof, m->rate_dof, m->rate_dof};
    if (frame < 0 || !p || vectors(args + 2, 1 + rates, lengths, data) != SOA_OK)
        return PyLong_FromLong(SOA_BAD_INPUT);
    double *out;
    PyObject *result = quantity == JACOBIAN_TIME_DERIVATIVE
        ? new_array(2, 6, m->rate_dof, &out) : new_array(1, 6, 0, &out);
    if (!result)
        return NULL;
    hinge_positions(m, data[0]);
    hinge_rates(m, data[1], m->qd_hinge);
    if (rates == 2)
        hinge_rates(m, data[2], m->qdd_hinge);
    chain_placements(m, m->frame_body[frame]);
    frame_motion(m, frame, rates == 2 ? m->qdd_hinge : NULL,
                 quantity == FRAME_TWIST ? out : NULL,
                 quantity == JACOBIAN_TIME_DERIVATIVE ? out : NULL,
                 quantity == FRAME_ACCELERATION || quantity == JACOBIAN_DERIVATIVE_PRODUCT
                 ? out : NULL);
    return result;
}

static PyObject *frame_twist(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    return frame_motion_call(args, nargs, FRAME_TWIST);
}

static PyObject *frame_acceleration(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    return frame_motion_call(args, nargs, FRAME_ACCELERATION);
}

static PyObject *jacobian_time_derivative(PyObject *self, PyObject *const *args,
                                          Py_ssize_t nargs)
{
    (void)self;
    return frame_motion_call(args, nargs, JACOBIAN_TIME_DERIVATIVE);
}

static PyObject *jacobian_derivative_product(PyObject *self, PyObject *const *args,
                                             Py_ssize_t nargs)
{
    (void)self;
    return frame_motion_call(args, nargs, JACOBIAN_DERIVATIVE_PRODUCT);
}
