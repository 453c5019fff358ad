/* Inverse dynamics: the Newton-Euler recursion (algorithms/inverse_dynamics.py).
 * Part of generic.c (included there, one translation unit). */
/* ------------------------------------------------------------------ recursions */
static int is_zero6(const double *v)
{
    return v[0] == 0.0 && v[1] == 0.0 && v[2] == 0.0 && v[3] == 0.0 && v[4] == 0.0
           && v[5] == 0.0;
}

/* inverse_dynamics.force_gather: the body forces f (nb x 6, gathered in place) into
 * hinge torques (per hinge) */
__attribute__((always_inline))
static inline void force_gather(const Model *m, double *f, double *torque)
{
    const double *h = m->hinge_map;
    for (int body = m->nb - 1; body > 0; --body) {
        torque[body] = dot6(h + 6 * body, f + 6 * body);
        int parent = m->parent[body];
        if (parent > 0) {
            double carried[6];
            carry_force(m, body, f + 6 * body, carried);
            for (int k = 0; k < 6; ++k)
                f[6 * parent + k] += carried[k];
        }
    }
    torque[0] = 0.0;
}

/* kinematics.body_motion: each body's velocity and acceleration (gravity as the root's
 * acceleration -g) into m->velocity, m->acceleration (local_placements() current). */
__attribute__((always_inline))
static inline void body_motion(Model *m, const double *p, const double *qd, const double *qdd)
{
    const double *h = m->hinge_map;
    double *v = m->velocity, *a = m->acceleration;
    memset(v, 0, 6 * sizeof(double));
    a[0] = -p[0]; a[1] = -p[1]; a[2] = -p[2]; a[3] = a[4] = a[5] = 0.0;
    for (int body = 1; body < m->nb; ++body) {
        int parent = m->parent[body];
        const double *hb = h + 6 * body;
        double joint_velocity[6], carried[6], product[6] = {0.0};
        /* a body at rest (gravity, or still joints near the root) has no velocity terms */
        if (qd[body] != 0.0 || !is_zero6(v + 6 * parent)) {
            carry_motion(m, body, v + 6 * parent, carried);
            for (int k = 0; k < 6; ++k) {
                joint_velocity[k] = hb[k] * qd[body];
                v[6 * body + k] = carried[k] + joint_velocity[k];
            }
            motion_cross(v + 6 * body, joint_velocity, product);
        } else
            memset(v + 6 * body, 0, 6 * sizeof(double));
        carry_motion(m, body, a + 6 * parent, carried);
        for (int k = 0; k < 6; ++k)
            a[6 * body + k] = carried[k] + hb[k] * qdd[body] + product[k];
    }
}

/* inverse_dynamics.inverse_dynamics on hinge arrays (local_placements() current). */
static void newton_euler(Model *m, const double *p, const double *qd, const double *qdd,
                         int with_forces)
{
    double *v = m->velocity, *a = m->acceleration, *f = m->force;
    body_motion(m, p, qd, qdd);
    for (int body = 1; body < m->nb; ++body) {
        const double *own = p + HEADER + PARAMS_PER_BODY * (body - 1);
        double momentum[6], accelerating[6], gyroscopic[6] = {0.0};
        own_inertia_apply(own, a + 6 * body, accelerating);
        if (!is_zero6(v + 6 * body)) {
            own_inertia_apply(own, v + 6 * body, momentum);
            force_cross(v + 6 * body, momentum, gyroscopic);
        }
        for (int k = 0; k < 6; ++k)
            f[6 * body + k] = accelerating[k] + gyroscopic[k]
                              - (with_forces ? m->body_forces[6 * body + k] : 0.0);
    }
    force_gather(m, m->force, m->torque);
}

/* newton_euler at rest (qd = qdd = 0, no wrenches), what gravity torques are: each
 * body's acceleration is -g alone, whose angular half stays 0, so carrying it is a
 * rotation (R^T a) and the body's force is (m a, h x a).  A third of newton_euler's
 * arithmetic per body, the same force_gather. */
static void rest_newton_euler(Model *m, const double *p)
{
    double *a = m->acceleration, *f = m->force;
    a[0] = -p[0]; a[1] = -p[1]; a[2] = -p[2];
    for (int body = 1; body < m->nb; ++body) {
        const double *own = p + HEADER + PARAMS_PER_BODY * (body - 1);
        double *ab = a + 3 * body, *fb = f + 6 * body;
        mat3t_vec(m->local_rotation + 9 * body, a + 3 * m->parent[body], ab);
        for (int k = 0; k < 3; ++k)
            fb[k] = own[0] * ab[k];
        cross(own + 1, ab, fb + 3);
    }
    force_gather(m, m->force, m->torque);
}

/* S (6) and the composite inertia (INERTIA_DOUBLES) per body in composite_body */
#define COMPOSITE_DOUBLES (6 + INERTIA_DOUBLES)
