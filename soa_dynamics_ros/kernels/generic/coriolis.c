/* The Coriolis matrix: composite inertias and their variations in root axes
 * (algorithms/coriolis.py, whose docstring derives it).
 * Part of generic.c (included there after generic_derivatives.c, whose motion_to_root it
 * uses; one translation unit). */
/* Per body in coriolis_hinges' workspace: S, dS/dt, the composite inertia (INERTIA_DOUBLES,
 * about the root origin), A^T with A = sum V x* I (row c is column c of A) and the
 * momentum sum I V, each summed over the body's subtree */
#define CORIOLIS_AXES 0
#define CORIOLIS_AXES_RATE 6
#define CORIOLIS_COMPOSITE 12
#define CORIOLIS_TURNING (12 + INERTIA_DOUBLES)
#define CORIOLIS_MOMENTUM (CORIOLIS_TURNING + 36)
#define CORIOLIS_DOUBLES (CORIOLIS_MOMENTUM + 6)

/* coriolis.coriolis_matrix into hinge_mass (nb x nb, only hinge pairs on one path, as
 * fold_hinges reads), q_hinge and qd_hinge current; work: CORIOLIS_DOUBLES + 2 per body */
static void coriolis_hinges(Model *m, const double *p, double *work)
{
    int nb = m->nb;
    double *v = m->velocity, *sines = work + (size_t)CORIOLIS_DOUBLES * nb;
    hinge_sines(m, sines, sines + nb);
    for (int body = 1; body < nb; ++body)
        placement_at(m, body, sines[body], sines[nb + body], m->local_rotation + 9 * body,
                     m->local_translation + 3 * body);
    compose_placements(m);
    memset(v, 0, 6 * sizeof(double));
    for (int body = 1; body < nb; ++body) {
        double *w = work + CORIOLIS_DOUBLES * body, *s = w + CORIOLIS_AXES;
        double *vb = v + 6 * body, *inertia = w + CORIOLIS_COMPOSITE;
        const double *vp = v + 6 * m->parent[body];
        motion_to_root(m->rotations + 9 * body, m->translations + 3 * body,
                       m->hinge_map + 6 * body, s);
        for (int k = 0; k < 6; ++k)
            vb[k] = vp[k] + s[k] * m->qd_hinge[body];
        motion_cross(vb, s, w + CORIOLIS_AXES_RATE);
        inertia_to_root(p + HEADER + PARAMS_PER_BODY * (body - 1), m->rotations + 9 * body,
                        m->translations + 3 * body, inertia);
        for (int c = 0; c < 6; ++c) {
            double unit[6] = {0.0}, column[6];
            unit[c] = 1.0;
            inertia_apply(inertia, unit, column);
            force_cross(vb, column, w + CORIOLIS_TURNING + 6 * c);
        }
        inertia_apply(inertia, vb, w + CORIOLIS_MOMENTUM);
    }
    for (int body = nb - 1; body > 1; --body) {
        int parent = m->parent[body];
        if (parent > 0) {
            const double *from = work + CORIOLIS_DOUBLES * body + CORIOLIS_COMPOSITE;
            double *to = work + CORIOLIS_DOUBLES * parent + CORIOLIS_COMPOSITE;
            for (int k = 0; k < CORIOLIS_DOUBLES - CORIOLIS_COMPOSITE; ++k)
                to[k] += from[k];
        }
    }
    for (int body = 1; body < nb; ++body) {
        const double *w = work + CORIOLIS_DOUBLES * body, *s = w + CORIOLIS_AXES;
        const double *turning = w + CORIOLIS_TURNING;
        double symmetric[6], skew[6], force[6], axis_momentum[6], turned[6];
        /* Bc S = 1/2 (A S + A^T S + S x* P), Bc^T S with the skew part's sign flipped */
        for (int r = 0; r < 6; ++r) {
            double along = 0.0;
            for (int c = 0; c < 6; ++c)
                along += turning[6 * c + r] * s[c];
            symmetric[r] = 0.5 * (along + dot6(turning + 6 * r, s));
        }
        force_cross(s, w + CORIOLIS_MOMENTUM, skew);
        inertia_apply(w + CORIOLIS_COMPOSITE, w + CORIOLIS_AXES_RATE, force);
        inertia_apply(w + CORIOLIS_COMPOSITE, s, axis_momentum);
        for (int k = 0; k < 6; ++k) {
            force[k] += symmetric[k] + 0.5 * skew[k];
            turned[k] = symmetric[k] - 0.5 * skew[k];
        }
        m->hinge_mass[body * nb + body] = dot6(s, force);
        for (int ancestor = m->parent[body]; ancestor > 0; ancestor = m->parent[ancestor]) {
            const double *a = work + CORIOLIS_DOUBLES * ancestor;
            m->hinge_mass[ancestor * nb + body] = dot6(a + CORIOLIS_AXES, force);
            m->hinge_mass[body * nb + ancestor] = dot6(axis_momentum, a + CORIOLIS_AXES_RATE)
                                                  + dot6(turned, a + CORIOLIS_AXES);
        }
    }
}
