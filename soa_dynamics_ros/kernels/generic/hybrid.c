/* Hybrid dynamics: Gauss least constraint over the compliance (model/constrained.py),
 * and the dense compliance (mimic joints) task-space inertia shares with it.
 * Part of generic.c (included there, one translation unit). */
/* dense.task_space_compliance where mimic joints couple hinges: out = (J G) (G^T M G)^-1
 * (J G)^T of unit wrenches along rows first..first+width-1 at each frame, with the mass
 * matrix factored by Cholesky (status 2 when it is not definite).  Local and root
 * placements current; `work` holds (6 count + columns) rate_dof. */
static int dense_compliance_core(Model *m, const double *frames, int count, int first,
                                 int width, const double *p, double *work, double *out)
{
    int n = m->rate_dof, columns = count * width;
    double *jacobians = work, *solved = work + (size_t)6 * count * n;
    composite_body(m, p);
    joint_mass_matrix(m);
    for (int k = 0; k < count; ++k)
        frame_jacobian(m, (int)frames[k], jacobians + (size_t)6 * k * n);
    for (int c = 0; c < columns; ++c) {
        const double *row = jacobians + ((size_t)6 * (c / width) + first + c % width) * n;
        double *x = solved + (size_t)c * n;
        memcpy(x, row, n * sizeof(double));
        int status = soa_cholesky_solve(m->joint_mass, x, n, c == 0);
        if (status != SOA_OK)
            return status;
    }
    for (int a = 0; a < columns; ++a) {
        const double *row = jacobians + ((size_t)6 * (a / width) + first + a % width) * n;
        for (int b = 0; b < columns; ++b) {
            double s = 0.0;
            for (int k = 0; k < n; ++k)
                s += row[k] * solved[(size_t)b * n + k];
            out[a * columns + b] = s;
        }
    }
    symmetrize(out, columns);
    return SOA_OK;
}

/* task_space.classical_acceleration of frame `frame` from its body's velocity and
 * acceleration (body axes) and gravity g: [dv/dt; dw/dt] in root axes. */
static void classical_acceleration(const Model *m, int frame, const double *velocity,
                                   const double *acceleration, const double *g, double *out)
{
    int body = m->frame_body[frame];
    const double *offset = m->frame_translation + 3 * frame, *r = m->rotations + 9 * body;
    const double *v = velocity, *w = velocity + 3, *a_lin = acceleration,
                 *a_ang = acceleration + 3;
    double turned[3], moving[3], whirl[3], linear[3];
    cross(a_ang, offset, turned);
    cross(w, offset, moving);
    for (int i = 0; i < 3; ++i)
        moving[i] += v[i];
    cross(w, moving, whirl);
    for (int i = 0; i < 3; ++i)
        linear[i] = a_lin[i] + turned[i] + whirl[i];
    mat3_vec(r, linear, out);
    for (int i = 0; i < 3; ++i)
        out[i] += g[i];
    mat3_vec(r, a_ang, out + 3);
}

/* Popov-Vereshchagin on the tree (model/recursive.py hybrid_dynamics) for constraints
 * alpha_k^T a_k = beta_k at frames[k] (alpha: 6 x columns, blocks of widths[k] columns),
 * dependent ones dropped by solve_constraints (status 3 when it leaves the rank to the
 * numpy path).  Output: qdd, constraint torques (rate_dof each), nu (columns), each
 * constraint frame's classical acceleration (6), the rank, then the dropped directions
 * (columns x (columns - rank), by rows).
 * `work` holds nb x 6 x columns twice, 2 columns^2 + 7 columns. */
static int hybrid_core(Model *m, const double *qd, const double *tau, const double *frames,
                       const double *widths, int count, const double *alpha, const double *beta,
                       int columns, const double *p, int with_forces, double *work, double *out)
{
    int nb = m->nb, n = m->rate_dof;
    size_t block = (size_t)nb * 6 * columns;
    double *wrench_columns = work, *carried = work + block, *compliance = carried + block;
    double *scratch = compliance + (size_t)columns * columns, *nu = out + 2 * n;
    hinge_rates(m, qd, m->qd_hinge);
    hinge_rates(m, tau, m->tau_hinge);
    int status = articulated_gather(m, p, m->qd_hinge, m->tau_hinge, NULL, m->free, with_forces);
    if (status != SOA_OK)
        return status;
    articulated_scatter(m, p, NULL, m->free);           /* free motion: qdd_hinge, acceleration */
    memset(wrench_columns, 0, block * sizeof(double));
    for (int k = 0, start = 0; k < count; start += (int)widths[k], ++k)
        add_wrench_columns(m, (int)frames[k], alpha + start, columns, (int)widths[k],
                           wrench_columns, columns, start);
    memcpy(carried, wrench_columns, block * sizeof(double));
    compliance_gather(m, carried, columns, compliance, scratch);
    symmetrize(compliance, columns);
    /* rhs = beta - alpha^T a_free */
    for (int k = 0, start = 0; k < count; start += (int)widths[k], ++k) {
        int frame = (int)frames[k], body = m->frame_body[frame];
        double a[6];
        classical_acceleration(m, frame, m->velocity + 6 * body, m->acceleration + 6 * body, p,
                               a);
        for (int c = start; c < start + (int)widths[k]; ++c) {
            double drift = 0.0;
            for (int i = 0; i < 6; ++i)
                drift += alpha[i * columns + c] * a[i];
            nu[c] = beta[c] - drift;
        }
    }
    double *ranked = out + 2 * n + columns + 6 * count;
    int rank;
    int status_nu = solve_constraints(compliance, nu, columns, scratch, &rank, ranked + 1);
    if (status_nu != SOA_OK)
        return status_nu;
    *ranked = rank;
    /* correction_scatter: accelerations added by the constraint wrenches */
    double *delta_acceleration = m->force, *delta_qdd = m->torque;
    memset(delta_acceleration, 0, 6 * sizeof(double));
    for (int body = 1; body < nb; ++body) {
        const double *hb = m->hinge_map + 6 * body;
        double incoming[6];
        carry_motion(m, body, delta_acceleration + 6 * m->parent[body], incoming);
        delta_qdd[body] = 0.0;
        if (m->free[body]) {
            const double *z = carried + (size_t)body * 6 * columns;
            double force[6];
            for (int i = 0; i < 6; ++i) {
                double s = 0.0;
                for (int c = 0; c < columns; ++c)
                    s += z[i * columns + c] * nu[c];
                force[i] = s;
            }
            delta_qdd[body] = m->inverse_d[body] * (dot6(hb, force)
                                                    - dot6(m->gain + 6 * body, incoming));
        }
        for (int k = 0; k < 6; ++k)
            delta_acceleration[6 * body + k] = incoming[k] + hb[k] * delta_qdd[body];
    }
    for (int body = 1; body < nb; ++body) {
        m->qdd_hinge[body] += delta_qdd[body];
        for (int k = 0; k < 6; ++k)
            m->acceleration[6 * body + k] += delta_acceleration[6 * body + k];
    }
    joint_forces(m, m->qdd_hinge, out);
    /* constraint torques: force_gather of the wrenches (columns nu), J^T alpha nu */
    double *applied = carried;
    for (int body = 0; body < nb; ++body)
        for (int i = 0; i < 6; ++i) {
            double s = 0.0;
            for (int c = 0; c < columns; ++c)
                s += wrench_columns[((size_t)body * 6 + i) * columns + c] * nu[c];
            applied[6 * body + i] = s;
        }
    force_gather(m, applied, m->tau_hinge);
    joint_forces(m, m->tau_hinge, out + n);
    for (int k = 0; k < count; ++k) {
        int frame = (int)frames[k], body = m->frame_body[frame];
        classical_acceleration(m, frame, m->velocity + 6 * body, m->acceleration + 6 * body, p,
                               out + 2 * n + columns + 6 * k);
    }
    return SOA_OK;
}

/* dense.hybrid_dynamics where mimic joints couple hinges: Gauss' least constraint with
 * G^T M G factored by forward_core; the output and statuses of hybrid_core.  Local and
 * root placements current; `work` holds (6 count + 2 columns) rate_dof + 2 columns^2 + 7 columns. */
static int dense_hybrid_core(Model *m, const double *qd, const double *tau, const double *frames,
                             const double *widths, int count, const double *alpha,
                             const double *beta, int columns, const double *p, int with_forces,
                             double *work, double *out)
{
    int n = m->rate_dof;
    double *jacobian = work, *rows = jacobian + (size_t)6 * count * n;
    double *inverse_mass_at = rows + (size_t)columns * n;       /* M^-1 rows^T, by rows */
    double *compliance = inverse_mass_at + (size_t)columns * n;
    double *scratch = compliance + (size_t)columns * columns, *qdd = out, *nu = out + 2 * n;
    /* qdd_free; velocity and acceleration are then the drift motion (qdd = 0), and
     * joint_mass holds the factor of G^T M G */
    int status = forward_core(m, qd, tau, p, with_forces, qdd);
    if (status != SOA_OK)
        return status;
    for (int k = 0, start = 0; k < count; start += (int)widths[k], ++k) {
        int frame = (int)frames[k], body = m->frame_body[frame];
        double drift[6], *frame_jacobian_rows = jacobian + (size_t)6 * k * n;
        frame_jacobian(m, frame, frame_jacobian_rows);
        classical_acceleration(m, frame, m->velocity + 6 * body, m->acceleration + 6 * body, p,
                               drift);
        for (int c = start; c < start + (int)widths[k]; ++c) {
            double *row = rows + (size_t)c * n, drifting = 0.0, moving = 0.0;
            for (int j = 0; j < n; ++j) {
                double s = 0.0;
                for (int i = 0; i < 6; ++i)
                    s += alpha[i * columns + c] * frame_jacobian_rows[i * n + j];
                row[j] = s;
                moving += s * qdd[j];
            }
            for (int i = 0; i < 6; ++i)
                drifting += alpha[i * columns + c] * drift[i];
            nu[c] = beta[c] - drifting - moving;
            memcpy(inverse_mass_at + (size_t)c * n, row, n * sizeof(double));
            solve_factored_joint_mass(m, inverse_mass_at + (size_t)c * n);
        }
    }
    for (int a = 0; a < columns; ++a)
        for (int b = 0; b < columns; ++b) {
            double s = 0.0;
            for (int j = 0; j < n; ++j)
                s += rows[(size_t)a * n + j] * inverse_mass_at[(size_t)b * n + j];
            compliance[a * columns + b] = s;
        }
    symmetrize(compliance, columns);
    double *ranked = out + 2 * n + columns + 6 * count;
    int rank;
    status = solve_constraints(compliance, nu, columns, scratch, &rank, ranked + 1);
    if (status != SOA_OK)
        return status;
    *ranked = rank;
    double *constraint_torques = out + n;
    for (int j = 0; j < n; ++j) {
        double moved = 0.0, pushed = 0.0;
        for (int c = 0; c < columns; ++c) {
            moved += inverse_mass_at[(size_t)c * n + j] * nu[c];
            pushed += rows[(size_t)c * n + j] * nu[c];
        }
        qdd[j] += moved;
        constraint_torques[j] = pushed;
    }
    /* kinematics.body_motion at qdd for the frames' accelerations */
    hinge_rates(m, qdd, m->qdd_hinge);
    newton_euler(m, p, m->qd_hinge, m->qdd_hinge, with_forces);
    for (int k = 0; k < count; ++k) {
        int frame = (int)frames[k], body = m->frame_body[frame];
        classical_acceleration(m, frame, m->velocity + 6 * body, m->acceleration + 6 * body, p,
                               out + 2 * n + columns + 6 * k);
    }
    return SOA_OK;
}
