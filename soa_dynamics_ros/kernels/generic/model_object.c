/* The model object: layout, rate structure, make_model.
 * Part of generic.c (included there, one translation unit). */
/* ------------------------------------------------------------------ the model object */
/* The one allocation holding a model's structure and workspace (nb, nf, rate_dof set):
 * per body the structure (42), then the workspace in the order lay_out takes it. */
static size_t model_block_bytes(const Model *m)
{
    size_t nb = (size_t)m->nb, nf = (size_t)m->nf, n = m->rate_dof > 0 ? (size_t)m->rate_dof : 1;
    size_t doubles = nb * (42 + 6 + 9 + 3 + 9 + 3 + 36 * 2 + 6 * 8 + 2 + 2 * nb) + nf * (12 + 7)
                     + n * n;
    size_t ints = nb * (8 + 2 * nb) + nf;
    return doubles * sizeof(double) + ints * sizeof(int) + 2 * nb;
}

/* Points every array of m into m->block. */
static void lay_out(Model *m)
{
    int nb = m->nb, nf = m->nf, n = m->rate_dof > 0 ? m->rate_dof : 1;
    double *d = (double *)m->block;
#define TAKE(field, count) (m->field = d, d += (count))
    TAKE(axis, 3 * nb); TAKE(joint_rotation, 9 * nb); TAKE(joint_translation, 3 * nb);
    TAKE(turn_sine, 9 * nb); TAKE(turn_cosine, 9 * nb);
    TAKE(hinge_map, 6 * nb); TAKE(multiplier, nb); TAKE(offset, nb); TAKE(rate_multiplier, nb);
    TAKE(frame_rotation, 9 * nf); TAKE(frame_translation, 3 * nf);
    TAKE(wrench_frames, nf); TAKE(wrench_values, 6 * nf);
    TAKE(q_hinge, nb); TAKE(qd_hinge, nb); TAKE(qdd_hinge, nb); TAKE(qdd_given, nb); TAKE(tau_hinge, nb);
    TAKE(torque, nb); TAKE(local_rotation, 9 * nb); TAKE(local_translation, 3 * nb);
    TAKE(rotations, 9 * nb); TAKE(translations, 3 * nb);
    TAKE(inertia, 36 * nb); TAKE(articulated, 36 * nb); TAKE(velocity, 6 * nb);
    TAKE(acceleration, 6 * nb); TAKE(force, 6 * nb); TAKE(body_forces, 6 * nb);
    TAKE(bias_acceleration, 6 * nb); TAKE(bias_force, 6 * nb); TAKE(gain, 6 * nb);
    TAKE(inverse_d, nb); TAKE(residual_torque, nb); TAKE(hinge_mass, nb * nb);
    TAKE(joint_mass, n * n); TAKE(fold_scale, nb * nb);
#undef TAKE
    int *i = (int *)d;
#define TAKE_INT(field, count) (m->field = i, i += (count))
    TAKE_INT(parent, nb); TAKE_INT(type, nb); TAKE_INT(master, nb); TAKE_INT(rate_master, nb);
    TAKE_INT(frame_body, nf); TAKE_INT(rate_bodies, nb); TAKE_INT(rate_parent, nb);
    TAKE_INT(chain, nb); TAKE_INT(rate_subtree_end, nb); TAKE_INT(fold_from, nb * nb);
    TAKE_INT(fold_to, nb * nb);
#undef TAKE_INT
    m->free = (unsigned char *)i;
    m->call_free = m->free + nb;
}

static void free_model(PyObject *capsule)
{
    Model *m = model_of(capsule);
    if (m) {
        Py_XDECREF(m->frame_index);
        free(m->scratch);
        free(m->block);
        free(m);
    }
}

/* Whether M = G^T M_hinge G keeps a tree's sparsity along rate_parent (each rate's
 * nearest ancestor rate, earlier): the ancestor hinges of every hinge of a rate move only
 * that rate and rates on its chain of ancestors.  Each rate's chain is marked once
 * (mark: rate_dof ints) and each ancestor hinge looked up in it, so the work is the
 * bodies times the depth of the tree; walking the chain again per ancestor hinge made it
 * cubic in the depth, which a long chain turned into seconds. */
static int rates_nest(const Model *m, int *mark)
{
    for (int r = 0; r < m->rate_dof; ++r)
        mark[r] = -1;
    for (int a = 0; a < m->rate_count; ++a) {
        int b = m->rate_bodies[a];
        for (int k = m->rate_master[b]; k >= 0 && mark[k] != a; k = m->rate_parent[k])
            mark[k] = a;
        for (int up = m->parent[b]; up > 0; up = m->parent[up])
            if (m->free[up] && mark[m->rate_master[up]] != a)
                return 0;
    }
    return 1;
}

/* The rate structure of m (parent, free, rate_* set): rate_parent, tree_sparse,
 * rate_subtree_end, rates_are_bodies.  0 when out of memory. */
static int rate_structure(Model *m)
{
    int nb = m->nb;
    /* Without mimic joints each rate must also move its hinge unscaled, so that
     * tree_factor's pivots are the ABA's. */
    m->tree_sparse = 1;
    for (int r = 0; r < m->rate_dof; ++r)
        m->rate_parent[r] = -2;
    for (int a = 0; a < m->rate_count; ++a) {
        int b = m->rate_bodies[a], r = m->rate_master[b], above = -1;
        for (int up = m->parent[b]; up > 0 && above < 0; up = m->parent[up])
            if (m->free[up] && m->rate_master[up] != r)
                above = m->rate_master[up];
        if (above > m->rate_parent[r])
            m->rate_parent[r] = above;
        if (!m->couples && m->rate_multiplier[b] != 1.0)
            m->tree_sparse = 0;
    }
    for (int r = 0; r < m->rate_dof; ++r)
        if (m->rate_parent[r] == -2 || m->rate_parent[r] >= r)
            m->tree_sparse = 0;
    if (m->tree_sparse) {
        int *mark = malloc((m->rate_dof > 0 ? (size_t)m->rate_dof : 1) * sizeof(int));
        if (!mark)
            return 0;
        m->tree_sparse = rates_nest(m, mark);
        free(mark);
    }
    for (int r = 0; r < m->rate_dof; ++r)
        m->rate_subtree_end[r] = r + 1;
    for (int r = m->rate_dof - 1; r >= 0 && m->tree_sparse; --r) {
        int above = m->rate_parent[r];
        if (above >= 0 && m->rate_subtree_end[r] > m->rate_subtree_end[above])
            m->rate_subtree_end[above] = m->rate_subtree_end[r];
    }
    m->rates_are_bodies = m->tree_sparse && m->rate_count == nb - 1 && m->rate_dof == nb - 1;
    for (int b = 1; b < nb; ++b)
        if (m->rate_master[b] != b - 1)
            m->rates_are_bodies = 0;
    return 1;
}

/* A model from make_model's arrays (data, in its argument order) without its frame
 * index; NULL when out of memory.  Plain C, run without the GIL: the arrays are the
 * caller's and stay alive and unchanged for the call. */
static Model *new_model(const double *sizes, const double **data)
{
    int nb = (int)sizes[0], nf = (int)sizes[3];
    Model *m = calloc(1, sizeof(Model));
    if (!m)
        return NULL;
    m->nb = nb;
    m->dof = (int)sizes[1];
    m->rate_dof = (int)sizes[2];
    m->nf = nf;
    m->couples = (int)sizes[4];
    m->params = HEADER + PARAMS_PER_BODY * (nb - 1);
    m->block_bytes = model_block_bytes(m);
    m->block = calloc(m->block_bytes, 1);
    if (!m->block) {
        free(m);
        return NULL;
    }
    lay_out(m);
    for (int b = 0; b < nb; ++b) {
        m->parent[b] = (int)data[0][b];
        m->type[b] = (int)data[1][b];
        m->master[b] = (int)data[6][b];
        m->multiplier[b] = data[7][b];
        m->offset[b] = data[8][b];
        m->rate_master[b] = (int)data[9][b];
        m->rate_multiplier[b] = data[10][b];
        m->free[b] = b > 0 && m->rate_master[b] >= 0;
        if (m->free[b])
            m->rate_bodies[m->rate_count++] = b;
    }
    if (!rate_structure(m)) {
        free(m->block);
        free(m);
        return NULL;
    }
    fold_terms(m);
    memcpy(m->axis, data[2], 3 * nb * sizeof(double));
    memcpy(m->joint_rotation, data[3], 9 * nb * sizeof(double));
    memcpy(m->joint_translation, data[4], 3 * nb * sizeof(double));
    memcpy(m->hinge_map, data[5], 6 * nb * sizeof(double));
    for (int b = 1; b < nb; ++b)
        if (m->type[b] == JOINT_ROTATION) {
            /* K = skew(a) and K K = a a^T - |a|^2 1 (joints.rotation_about_axis) */
            const double *a = m->axis + 3 * b;
            double squared = a[0] * a[0] + a[1] * a[1] + a[2] * a[2];
            double skew[9] = {0.0, -a[2], a[1], a[2], 0.0, -a[0], -a[1], a[0], 0.0}, twice[9];
            for (int i = 0; i < 3; ++i)
                for (int j = 0; j < 3; ++j)
                    twice[3 * i + j] = a[i] * a[j] - (i == j ? squared : 0.0);
            mat3_mul(m->joint_rotation + 9 * b, skew, m->turn_sine + 9 * b);
            mat3_mul(m->joint_rotation + 9 * b, twice, m->turn_cosine + 9 * b);
        }
    for (int f = 0; f < nf; ++f)
        m->frame_body[f] = (int)data[11][f];
    memcpy(m->frame_rotation, data[12], 9 * nf * sizeof(double));
    memcpy(m->frame_translation, data[13], 3 * nf * sizeof(double));
    return m;
}

/* make_model(sizes, parent, type, axis, joint_rotation, joint_translation, hinge_map,
 *            master, multiplier, offset, rate_master, rate_multiplier,
 *            frame_body, frame_rotation, frame_translation, frame_index)
 * sizes = [nb, dof, rate_dof, frames, couples]; every argument a float64 array
 * (generic.py packs them) but frame_index, a {frame name: index} dict.  The model is
 * built without the GIL: a large tree's tables take long enough to stall the threads
 * serving the model the caller is replacing. */
static PyObject *make_model(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (soa_wrong_count(nargs, 16))
        return NULL;
    if (!PyDict_CheckExact(args[15])) {
        PyErr_SetString(PyExc_TypeError, "make_model: frame_index must be a dict");
        return NULL;
    }
    const double *sizes = soa_array(args[0], 1, 5, 0);
    if (!sizes) {
        PyErr_SetString(PyExc_ValueError, "make_model: sizes must be 5 float64 values");
        return NULL;
    }
    int nb = (int)sizes[0], nf = (int)sizes[3];
    npy_intp lengths[14] = {nb, nb, 3 * nb, 9 * nb, 3 * nb, 6 * nb, nb, nb, nb, nb, nb,
                            nf, 9 * nf, 3 * nf};
    const double *data[14];
    for (int k = 0; k < 14; ++k)
        if (!(data[k] = soa_array(args[1 + k], 1, lengths[k], 0))) {
            PyErr_Format(PyExc_ValueError, "make_model: argument %d has the wrong shape", k + 1);
            return NULL;
        }
    Model *m;
    Py_BEGIN_ALLOW_THREADS
    m = new_model(sizes, data);
    Py_END_ALLOW_THREADS
    if (!m)
        return PyErr_NoMemory();
    Py_INCREF(args[15]);
    m->frame_index = args[15];
    PyObject *capsule = PyCapsule_New(m, CAPSULE_NAME, free_model);
    if (!capsule) {
        Py_DECREF(m->frame_index);
        free(m->block);
        free(m);
    }
    return capsule;
}
