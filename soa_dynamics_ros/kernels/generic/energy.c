/* Kinetic and potential energy of the moving bodies (algorithms/energy.py).
 * Part of generic.c (included there, one translation unit).  Each is one scatter with
 * the hinge placements made in its loop (nothing else reads them) at the hinge_sines in
 * `sines` (2 nb doubles). */
/* energy.kinetic_energy: 1/2 sum V.I V in body axes (q_hinge and qd_hinge current) */
static double kinetic_energy_core(Model *m, const double *p, double *sines)
{
    double *v = m->velocity, energy = 0.0;
    hinge_sines(m, sines, sines + m->nb);
    memset(v, 0, 6 * sizeof(double));
    for (int body = 1; body < m->nb; ++body) {
        double rotation[9], translation[3], carried[6], momentum[6], *vb = v + 6 * body;
        const double *s = m->hinge_map + 6 * body;
        placement_at(m, body, sines[body], sines[m->nb + body], rotation, translation);
        transform_motion(rotation, translation, v + 6 * m->parent[body], carried);
        for (int k = 0; k < 6; ++k)
            vb[k] = carried[k] + s[k] * m->qd_hinge[body];
        own_inertia_apply(p + HEADER + PARAMS_PER_BODY * (body - 1), vb, momentum);
        energy += 0.5 * dot6(vb, momentum);
    }
    return energy;
}

/* energy.potential_energy, -sum m g.c with gravity p[0..2], without composing the
 * placements: only g matters, so the scatter carries g in each body's axes (R^T g, as
 * rest_newton_euler carries -g) and the height g.p of each body origin (g.p(parent) plus
 * the parent-axes gravity against the joint's offset); then g.c = height + (R^T g).h/m. */
static double potential_energy_core(Model *m, const double *p, double *sines)
{
    double *down = m->acceleration, *height = m->torque, energy = 0.0;
    hinge_sines(m, sines, sines + m->nb);
    memcpy(down, p, 3 * sizeof(double));
    height[0] = 0.0;
    for (int body = 1; body < m->nb; ++body) {
        const double *own = p + HEADER + PARAMS_PER_BODY * (body - 1);
        const double *above = down + 3 * m->parent[body];
        double rotation[9], translation[3], *here = down + 3 * body;
        placement_at(m, body, sines[body], sines[m->nb + body], rotation, translation);
        mat3t_vec(rotation, above, here);
        height[body] = height[m->parent[body]] + above[0] * translation[0]
                       + above[1] * translation[1] + above[2] * translation[2];
        energy -= own[0] * height[body] + here[0] * own[1] + here[1] * own[2]
                  + here[2] * own[3];
    }
    return energy;
}
