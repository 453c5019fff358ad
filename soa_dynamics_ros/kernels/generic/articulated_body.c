/* Articulated bodies (algorithms/articulated_body.py), frame Jacobians, and the
 * forward and mixed dynamics cores built on them.
 * Part of generic.c (included there, one translation unit). */
/* articulated_body.gather (local placements current): hinges not `free` are prescribed */
static int articulated_gather(Model *m, const double *p, const double *qd, const double *tau,
                              const double *qdd_prescribed, const unsigned char *free,
                              int with_forces)
{
    int nb = m->nb;
    const double *h = m->hinge_map;
    double *v = m->velocity, *c = m->bias_acceleration, *z = m->bias_force;
    double *articulated = m->articulated;
    memcpy(articulated, m->inertia, 36 * nb * sizeof(double));
    memset(v, 0, 6 * sizeof(double));
    for (int body = 1; body < nb; ++body) {
        const double *hb = h + 6 * body;
        double joint_velocity[6], carried[6], momentum[6];
        carry_motion(m, body, v + 6 * m->parent[body], carried);
        for (int k = 0; k < 6; ++k) {
            joint_velocity[k] = hb[k] * qd[body];
            v[6 * body + k] = carried[k] + joint_velocity[k];
        }
        motion_cross(v + 6 * body, joint_velocity, c + 6 * body);
        mat6_vec(articulated + 36 * body, v + 6 * body, momentum);
        force_cross(v + 6 * body, momentum, z + 6 * body);
        if (with_forces)
            for (int k = 0; k < 6; ++k)
                z[6 * body + k] -= m->body_forces[6 * body + k];
    }
    double singular_below = p[3];
    for (int body = nb - 1; body > 0; --body) {
        int parent = m->parent[body];
        const double *hb = h + 6 * body;
        double *pb = articulated + 36 * body, *u = m->gain + 6 * body;
        double reduced[36], carried[6], moved[6];
        if (free[body]) {
            mat6_vec(pb, hb, u);
            double d = dot6(hb, u);
            if (!(d > singular_below))
                return SOA_SINGULAR;
            double inverse_d = 1.0 / d;
            m->inverse_d[body] = inverse_d;
            m->residual_torque[body] = tau[body] - dot6(hb, z + 6 * body);
            for (int i = 0; i < 6; ++i)
                for (int j = 0; j < 6; ++j)
                    reduced[6 * i + j] = pb[6 * i + j] - u[i] * u[j] * inverse_d;
            mat6_vec(reduced, c + 6 * body, moved);
            for (int k = 0; k < 6; ++k)
                carried[k] = z[6 * body + k] + moved[k]
                             + u[k] * m->residual_torque[body] * inverse_d;
        } else {
            double known[6];
            memcpy(reduced, pb, sizeof reduced);
            for (int k = 0; k < 6; ++k)
                known[k] = c[6 * body + k]
                           + hb[k] * (qdd_prescribed ? qdd_prescribed[body] : 0.0);
            mat6_vec(reduced, known, moved);
            for (int k = 0; k < 6; ++k)
                carried[k] = z[6 * body + k] + moved[k];
            memset(u, 0, 6 * sizeof(double));
            m->inverse_d[body] = 0.0;
            m->residual_torque[body] = 0.0;
        }
        if (parent > 0) {
            double through[6];
            carry_inertia(m, body, reduced, articulated + 36 * parent);
            carry_force(m, body, carried, through);
            for (int k = 0; k < 6; ++k)
                z[6 * parent + k] += through[k];
        }
    }
    return SOA_OK;
}

/* articulated_body.scatter into qdd_hinge and acceleration */
static void articulated_scatter(Model *m, const double *p, const double *qdd_prescribed,
                                const unsigned char *free)
{
    double *a = m->acceleration, *qdd = m->qdd_hinge;
    a[0] = -p[0]; a[1] = -p[1]; a[2] = -p[2]; a[3] = a[4] = a[5] = 0.0;
    qdd[0] = 0.0;
    for (int body = 1; body < m->nb; ++body) {
        const double *hb = m->hinge_map + 6 * body;
        double incoming[6];
        carry_motion(m, body, a + 6 * m->parent[body], incoming);
        for (int k = 0; k < 6; ++k)
            incoming[k] += m->bias_acceleration[6 * body + k];
        qdd[body] = qdd_prescribed ? qdd_prescribed[body] : 0.0;
        if (free[body])
            qdd[body] = m->inverse_d[body] * (m->residual_torque[body]
                                              - dot6(m->gain + 6 * body, incoming));
        for (int k = 0; k < 6; ++k)
            a[6 * body + k] = incoming[k] + hb[k] * qdd[body];
    }
}

/* kinematics.hinge_jacobian folded on the rate map (J G): the 6 x rate_dof Jacobian of
 * `frame` ([v; w] of its origin, root axes), row-major; root placements current. */
static void frame_jacobian(const Model *m, int frame, double *out)
{
    int n = m->rate_dof;
    memset(out, 0, 6 * n * sizeof(double));
    double rotation[9], point[3];
    frame_placement(m, frame, rotation, point);
    for (int body = m->frame_body[frame]; body > 0; body = m->parent[body]) {
        int column = m->rate_master[body];
        if (column < 0)
            continue;
        const double *r = m->rotations + 9 * body, *hb = m->hinge_map + 6 * body;
        double linear[3], angular[3], arm[3], turned[3];
        mat3_vec(r, hb, linear);
        mat3_vec(r, hb + 3, angular);
        for (int k = 0; k < 3; ++k)
            arm[k] = point[k] - m->translations[3 * body + k];
        cross(angular, arm, turned);
        double scale = m->rate_multiplier[body];
        for (int k = 0; k < 3; ++k) {
            out[k * n + column] += (linear[k] + turned[k]) * scale;
            out[(3 + k) * n + column] += angular[k] * scale;
        }
    }
}

/* ------------------------------------------------------------------ cores
 * Each core starts from current local placements (and, with wrenches, body forces from
 * the root placements): the calls compute them once (placements()). */
/* After hinge_positions: the local placements, and the root ones when `world` */
static void placements(Model *m, int world)
{
    local_placements(m);
    if (world)
        compose_placements(m);
}

/* x = M^-1 x with M = G^T M_hinge G as forward_core's coupled branch left it factored */
static void solve_factored_joint_mass(const Model *m, double *x)
{
    if (m->tree_sparse)
        soa_tree_substitute(m->joint_mass, x, m->rate_dof, m->rate_parent);
    else
        soa_cholesky_solve(m->joint_mass, x, m->rate_dof, 0);
}

/* The selected joints' accelerations: articulated-body recursion, or with coupled
 * hinges (mimic joints) G^T M G qdd = tau - G^T h as model/dense.py, by the tree's LTL
 * where that M keeps a tree's sparsity, else by Cholesky (m->joint_mass is left
 * factored: solve_factored_joint_mass). */
static int forward_core(Model *m, const double *qd, const double *tau,
                        const double *p, int with_forces, double *out)
{
    hinge_rates(m, qd, m->qd_hinge);
    if (m->couples) {
        memset(m->qdd_hinge, 0, m->nb * sizeof(double));
        newton_euler(m, p, m->qd_hinge, m->qdd_hinge, with_forces);
        joint_forces(m, m->torque, out);
        for (int k = 0; k < m->rate_dof; ++k)
            out[k] = tau[k] - out[k];
        composite_body(m, p);
        joint_mass_matrix(m);
        return m->tree_sparse ? soa_tree_solve(m->joint_mass, out, m->rate_dof, m->rate_parent)
                              : soa_cholesky_solve(m->joint_mass, out, m->rate_dof, 1);
    }
    hinge_rates(m, tau, m->tau_hinge);
    int status = articulated_gather(m, p, m->qd_hinge, m->tau_hinge, NULL, m->free, with_forces);
    if (status != SOA_OK)
        return status;
    articulated_scatter(m, p, NULL, m->free);
    joint_forces(m, m->qdd_hinge, out);
    return SOA_OK;
}

/* mixed_dynamics.mixed_dynamics: joints where `prescribed` is nonzero take their qdd, the
 * others their tau; out = [qdd_all; tau_all].  Hinges must not be coupled. */
static int mixed_core(Model *m, const double *qd, const double *qdd, const double *tau,
                      const double *prescribed, const double *p, int with_forces, double *out)
{
    hinge_rates(m, qd, m->qd_hinge);
    hinge_rates(m, qdd, m->qdd_given);
    hinge_rates(m, tau, m->tau_hinge);
    for (int body = 0; body < m->nb; ++body)
        m->call_free[body] = m->free[body] && prescribed[m->rate_master[body]] == 0.0;
    int status = articulated_gather(m, p, m->qd_hinge, m->tau_hinge, m->qdd_given, m->call_free,
                                    with_forces);
    if (status != SOA_OK)
        return status;
    articulated_scatter(m, p, m->qdd_given, m->call_free);
    /* hinge_forces: f = P a + z across each prescribed hinge, projected on it */
    for (int body = 1; body < m->nb; ++body) {
        if (m->call_free[body])
            continue;
        double force[6];
        mat6_vec(m->articulated + 36 * body, m->acceleration + 6 * body, force);
        for (int k = 0; k < 6; ++k)
            force[k] += m->bias_force[6 * body + k];
        m->tau_hinge[body] = dot6(m->hinge_map + 6 * body, force);
    }
    joint_forces(m, m->qdd_hinge, out);
    joint_forces(m, m->tau_hinge, out + m->rate_dof);
    return SOA_OK;
}

/* dense.mixed_dynamics where mimic joints couple hinges: the free block of
 * G^T M G qdd = tau - G^T h solved by Cholesky; out = [qdd_all; tau_all].  `work` holds
 * rate_dof (rate_dof + 1). */
static int dense_mixed_core(Model *m, const double *qd, const double *qdd, const double *tau,
                            const double *prescribed, const double *p, int with_forces,
                            double *work, double *out)
{
    int n = m->rate_dof, free_count = 0;
    double *qdd_all = out, *tau_all = out + n, *bias = tau_all;
    double *reduced = work, *rhs = work + (size_t)n * n, *mass = m->joint_mass;
    hinge_rates(m, qd, m->qd_hinge);
    memset(m->qdd_hinge, 0, m->nb * sizeof(double));
    newton_euler(m, p, m->qd_hinge, m->qdd_hinge, with_forces);
    joint_forces(m, m->torque, bias);
    composite_body(m, p);
    joint_mass_matrix(m);
    for (int i = 0; i < n; ++i) {
        if (prescribed[i] != 0.0)
            continue;
        double s = tau[i] - bias[i];
        for (int j = 0; j < n; ++j)
            if (prescribed[j] != 0.0)
                s -= mass[i * n + j] * qdd[j];
        int column = 0;
        for (int j = 0; j < n; ++j)
            if (prescribed[j] == 0.0)
                reduced[free_count * n + column++] = mass[i * n + j];
        rhs[free_count++] = s;
    }
    /* pack the free block's rows to free_count x free_count */
    for (int i = 0; i < free_count; ++i)
        memmove(reduced + (size_t)i * free_count, reduced + (size_t)i * n,
                free_count * sizeof(double));
    int status = soa_cholesky_solve(reduced, rhs, free_count, 1);
    if (status != SOA_OK)
        return status;
    for (int i = 0, k = 0; i < n; ++i)
        qdd_all[i] = prescribed[i] != 0.0 ? qdd[i] : rhs[k++];
    for (int i = 0; i < n; ++i) {
        if (prescribed[i] == 0.0) {
            tau_all[i] = tau[i];
            continue;
        }
        double s = bias[i];
        for (int j = 0; j < n; ++j)
            s += mass[i * n + j] * qdd_all[j];
        tau_all[i] = s;
    }
    return SOA_OK;
}
