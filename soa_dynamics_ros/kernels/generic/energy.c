/* Kinetic and potential energy of the moving bodies (algorithms/energy.py).
 * Part of generic.c (included there, one translation unit). */
/* energy.kinetic_energy: 1/2 sum V.I V in body axes (local_placements and qd_hinge current) */
static double kinetic_energy_core(Model *m, const double *p)
{
    double *v = m->velocity, energy = 0.0;
    memset(v, 0, 6 * sizeof(double));
    for (int body = 1; body < m->nb; ++body) {
        double carried[6], momentum[6], *vb = v + 6 * body;
        const double *s = m->hinge_map + 6 * body;
        carry_motion(m, body, v + 6 * m->parent[body], carried);
        for (int k = 0; k < 6; ++k)
            vb[k] = carried[k] + s[k] * m->qd_hinge[body];
        own_inertia_apply(p + HEADER + PARAMS_PER_BODY * (body - 1), vb, momentum);
        energy += 0.5 * dot6(vb, momentum);
    }
    return energy;
}

/* energy.potential_energy: -sum g.(m p + R h), gravity p[0..2] (body_placements current) */
static double potential_energy_core(const Model *m, const double *p)
{
    double energy = 0.0;
    for (int body = 1; body < m->nb; ++body) {
        const double *own = p + HEADER + PARAMS_PER_BODY * (body - 1);
        const double *at = m->translations + 3 * body;
        double moment[3];
        mat3_vec(m->rotations + 9 * body, own + 1, moment);
        for (int k = 0; k < 3; ++k)
            energy -= p[k] * (own[0] * at[k] + moment[k]);
    }
    return energy;
}
