/* Python glue of the frame motion calls (frame_motion.c).
 * Part of generic.c (included there, one translation unit). */
enum { FRAME_TWIST, FRAME_ACCELERATION, JACOBIAN_TIME_DERIVATIVE, JACOBIAN_DERIVATIVE_PRODUCT };

/* f(model, frame, q, qd, [qdd,] p) -> `quantity` of the frame (frame_motion): layout
 * ".dr", or ".drr" for the acceleration */
static PyObject *frame_motion_call(const Arguments *a, PyObject *const *args, int quantity)
{
    Model *m = a->m;
    int frame = frame_index(m, args[1]);
    if (frame < 0)
        return PyLong_FromLong(SOA_BAD_INPUT);
    double *out;
    PyObject *result = quantity == JACOBIAN_TIME_DERIVATIVE
        ? new_array(2, 6, m->rate_dof, &out) : new_array(1, 6, 0, &out);
    if (!result)
        return NULL;
    const double *qdd = a->vector[2];
    hinge_positions(m, a->vector[0]);
    hinge_rates(m, a->vector[1], m->qd_hinge);
    if (qdd)
        hinge_rates(m, qdd, m->qdd_hinge);
    chain_placements(m, m->frame_body[frame]);
    frame_motion(m, frame, qdd ? m->qdd_hinge : NULL,
                 quantity == FRAME_TWIST ? out : NULL,
                 quantity == JACOBIAN_TIME_DERIVATIVE ? out : NULL,
                 quantity == FRAME_ACCELERATION || quantity == JACOBIAN_DERIVATIVE_PRODUCT
                 ? out : NULL);
    return result;
}

BINDING(frame_twist, frame_motion_call, ".dr", FRAME_TWIST)
BINDING(frame_acceleration, frame_motion_call, ".drr", FRAME_ACCELERATION)
BINDING(jacobian_time_derivative, frame_motion_call, ".dr", JACOBIAN_TIME_DERIVATIVE)
BINDING(jacobian_derivative_product, frame_motion_call, ".dr", JACOBIAN_DERIVATIVE_PRODUCT)
