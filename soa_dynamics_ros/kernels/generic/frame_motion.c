/* Frame motion (algorithms/frame_motion.py): the twist, the Jacobian's time derivative
 * and the classical acceleration of a frame origin, root axes, along the frame body's
 * path to the root.
 * Part of generic.c (included there, one translation unit). */
/* frame_motion.path_velocities: [v(o(i)); w(i)] (root axes) of `body` and its ancestors
 * into m->velocity, root first, and their hinge maps in root axes [l(i); s(i)] into
 * m->bias_acceleration (free between calls: the columns of frame_motion read them);
 * chain_placements(m, body) current. */
static void path_velocities(Model *m, int body, const double *qd)
{
    int depth = 0;
    for (; body > 0; body = m->parent[body])
        m->chain[depth++] = body;
    double *v = m->velocity;
    memset(v, 0, 6 * sizeof(double));
    while (depth > 0) {
        int link = m->chain[--depth], parent = m->parent[link];
        const double *r = m->rotations + 9 * link, *hb = m->hinge_map + 6 * link;
        double arm[3], whirl[3];
        double *axis_linear = m->bias_acceleration + 6 * link, *axis_angular = axis_linear + 3;
        for (int k = 0; k < 3; ++k)
            arm[k] = m->translations[3 * link + k] - m->translations[3 * parent + k];
        cross(v + 6 * parent + 3, arm, whirl);
        mat3_vec(r, hb, axis_linear);
        mat3_vec(r, hb + 3, axis_angular);
        for (int k = 0; k < 3; ++k) {
            v[6 * link + k] = v[6 * parent + k] + whirl[k] + axis_linear[k] * qd[link];
            v[6 * link + 3 + k] = v[6 * parent + 3 + k] + axis_angular[k] * qd[link];
        }
    }
}

/* The motion of `frame` at m->qd_hinge (and `qdd`, hinge accelerations, or NULL: zero),
 * each output skipped when NULL: `twist` [v; w]; `derivative` dJ/dt folded on the rate
 * map (6 x rate_dof, row-major, frame_motion.hinge_jacobian_derivative then J G);
 * `acceleration` J qdd + dJ/dt qd (frame_motion.frame_acceleration and
 * jacobian_derivative_product).  chain_placements(m, frame's body) current. */
static void frame_motion(Model *m, int frame, const double *qdd, double *twist,
                         double *derivative, double *acceleration)
{
    int n = m->rate_dof, body = m->frame_body[frame];
    const double *qd = m->qd_hinge, *v_body = m->velocity + 6 * body;
    double rotation[9], point[3], arm[3], whirl[3], point_velocity[3];
    double bias[6] = {0.0}, driven[6] = {0.0};
    frame_placement(m, frame, rotation, point);
    path_velocities(m, body, qd);
    for (int k = 0; k < 3; ++k)
        arm[k] = point[k] - m->translations[3 * body + k];
    cross(v_body + 3, arm, whirl);
    for (int k = 0; k < 3; ++k)
        point_velocity[k] = v_body[k] + whirl[k];
    if (twist) {
        memcpy(twist, point_velocity, sizeof point_velocity);
        memcpy(twist + 3, v_body + 3, 3 * sizeof(double));
    }
    if (!derivative && !acceleration)
        return;
    if (derivative)
        memset(derivative, 0, 6 * n * sizeof(double));
    for (int link = body; link > 0; link = m->parent[link]) {
        const double *v_link = m->velocity + 6 * link, *w = v_link + 3;
        const double *axis_linear = m->bias_acceleration + 6 * link, *axis_angular = axis_linear + 3;
        double turning[3], spin[3], swing[3], slide[3], relative[3], column[6];
        for (int k = 0; k < 3; ++k) {
            arm[k] = point[k] - m->translations[3 * link + k];
            relative[k] = point_velocity[k] - v_link[k];
        }
        cross(w, axis_angular, turning);
        cross(w, axis_linear, spin);
        cross(turning, arm, swing);
        cross(axis_angular, relative, slide);
        for (int k = 0; k < 3; ++k) {
            column[k] = spin[k] + swing[k] + slide[k];
            column[3 + k] = turning[k];
        }
        if (acceleration) {
            double lever[3];
            cross(axis_angular, arm, lever);
            for (int k = 0; k < 6; ++k)
                bias[k] += column[k] * qd[link];
            if (qdd)
                for (int k = 0; k < 3; ++k) {
                    driven[k] += (axis_linear[k] + lever[k]) * qdd[link];
                    driven[3 + k] += axis_angular[k] * qdd[link];
                }
        }
        int rate = m->rate_master[link];
        if (derivative && rate >= 0)
            for (int k = 0; k < 6; ++k)
                derivative[k * n + rate] += column[k] * m->rate_multiplier[link];
    }
    if (acceleration)
        for (int k = 0; k < 6; ++k)
            acceleration[k] = driven[k] + bias[k];
}
