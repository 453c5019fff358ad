/* Python glue of torques with wrenches, mass matrix, Jacobian, poses.
 * Part of generic.c (included there, one translation unit). */
/* f(model, q, tau, {frame: wrench}, p) -> tau + G^T sum J^T w, tau plus the joint
 * torques of the wrenches: forward dynamics with wrenches is forward dynamics at these
 * (qdd is linear in tau), which lets a robot's own forward dynamics kernel answer them. */
static PyObject *torques_with_wrenches_call(const Arguments *a, PyObject *const *args)
{
    Model *m = a->m;
    double *out;
    PyObject *result = new_array(1, m->rate_dof, 0, &out);
    if (!result)
        return NULL;
    hinge_positions(m, a->vector[0]);
    /* only each wrenched body's path to the root: a fingertip of a 45-body humanoid
     * places and gathers along 12 bodies, where the whole tree's passes took several
     * times longer (docs/performance.md, "Design measurements") */
    memset(m->torque, 0, m->nb * sizeof(double));
    for (int k = 0; k < a->wrench_count; ++k) {
        int body = m->frame_body[(int)m->wrench_frames[k]];
        chain_placements(m, body);
        body_forces(m, m->wrench_frames + k, m->wrench_values + 6 * k, 1);
        double force[6], carried[6];
        memcpy(force, m->body_forces + 6 * body, sizeof force);
        for (; body > 0; body = m->parent[body]) {
            m->torque[body] += dot6(m->hinge_map + 6 * body, force);
            carry_force(m, body, force, carried);
            memcpy(force, carried, sizeof force);
        }
    }
    joint_forces(m, m->torque, out);
    for (int k = 0; k < m->rate_dof; ++k)
        out[k] += a->vector[1][k];
    return result;
}

BINDING(torques_with_wrenches, torques_with_wrenches_call, "drw")

/* f(model, q, p) -> G^T M G of the selected joints */
static PyObject *mass_matrix_call(const Arguments *a, PyObject *const *args)
{
    Model *m = a->m;
    double *out;
    PyObject *result = new_array(2, m->rate_dof, m->rate_dof, &out);
    if (!result)
        return NULL;
    hinge_positions(m, a->vector[0]);    /* (composite_body reads the inertias from p) */
    local_placements(m);
    composite_body(m, a->p);
    joint_mass_matrix(m);
    memcpy(out, m->joint_mass, m->rate_dof * m->rate_dof * sizeof(double));
    return result;
}

BINDING(mass_matrix, mass_matrix_call, "d")

/* f(model, frame, q, p) -> 6 x (selected joints) Jacobian (kinematics.hinge_jacobian, J G) */
static PyObject *jacobian_call(const Arguments *a, PyObject *const *args)
{
    Model *m = a->m;
    int frame = frame_index(m, args[1]);
    if (frame < 0)
        return PyLong_FromLong(SOA_BAD_INPUT);
    double *out;
    PyObject *result = new_array(2, 6, m->rate_dof, &out);
    if (!result)
        return NULL;
    hinge_positions(m, a->vector[0]);
    chain_placements(m, m->frame_body[frame]);
    frame_jacobian(m, frame, out);
    return result;
}

BINDING(jacobian, jacobian_call, ".d")

static void write_pose(const double *rotation, const double *translation, double *out)
{
    for (int i = 0; i < 3; ++i) {
        for (int j = 0; j < 3; ++j)
            out[4 * i + j] = rotation[3 * i + j];
        out[4 * i + 3] = translation[i];
    }
    out[12] = out[13] = out[14] = 0.0;
    out[15] = 1.0;
}

/* f(model, frame, q, p) -> 4x4 pose of the frame; frame -1: (frames, 4, 4) of every frame.
 * p is checked but not read: poses take the calling convention of the other functions. */
static PyObject *frame_poses_call(const Arguments *a, PyObject *const *args)
{
    Model *m = a->m;
    long requested = PyLong_Check(args[1]) ? PyLong_AsLong(args[1]) : -2;
    if (requested == -1 && PyErr_Occurred()) {     /* beyond a long: no frame */
        PyErr_Clear();
        requested = -2;
    }
    int every = requested == -1;
    int frame = every ? -1 : frame_index(m, args[1]);
    if (!every && frame < 0)
        return PyLong_FromLong(SOA_BAD_INPUT);
    double *out;
    PyObject *result = every ? new_array(3, m->nf, 4, &out) : new_array(2, 4, 4, &out);
    if (!result)
        return NULL;
    hinge_positions(m, a->vector[0]);
    if (every)
        body_placements(m);
    else
        chain_placements(m, m->frame_body[frame]);
    double rotation[9], translation[3];
    for (int k = every ? 0 : frame; k < (every ? m->nf : frame + 1); ++k) {
        frame_placement(m, k, rotation, translation);
        write_pose(rotation, translation, out + (every ? 16 * k : 0));
    }
    return result;
}

BINDING(frame_poses, frame_poses_call, ".d")
