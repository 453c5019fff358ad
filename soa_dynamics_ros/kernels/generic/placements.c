/* Model data: inertias from p, hinge coordinates, body and frame placements.
 * Part of generic.c (included there, one translation unit). */
/* ------------------------------------------------------------------ model data */
/* Spatial inertias of the moving bodies from p (spatial.inertia_from_parameters). */
static void unpack_inertias(Model *m, const double *p)
{
    for (int body = 1; body < m->nb; ++body) {
        const double *c = p + HEADER + PARAMS_PER_BODY * (body - 1);
        double mass = c[0], mcx = c[1], mcy = c[2], mcz = c[3];
        double values[36] = {
            mass, 0.0, 0.0, 0.0, mcz, -mcy,
            0.0, mass, 0.0, -mcz, 0.0, mcx,
            0.0, 0.0, mass, mcy, -mcx, 0.0,
            0.0, -mcz, mcy, c[4], c[5], c[6],
            mcz, 0.0, -mcx, c[5], c[7], c[8],
            -mcy, mcx, 0.0, c[6], c[8], c[9]};
        memcpy(m->inertia + 36 * body, values, sizeof values);
    }
}

/* coordinates.hinge_positions and hinge_rates (of the rate map) */
static void hinge_positions(const Model *m, const double *q)
{
    m->q_hinge[0] = 0.0;
    for (int i = 1; i < m->nb; ++i)
        m->q_hinge[i] = m->master[i] < 0 ? m->offset[i]
                        : m->multiplier[i] * q[m->master[i]] + m->offset[i];
}

static void hinge_rates(const Model *m, const double *rates, double *out)
{
    out[0] = 0.0;
    for (int i = 1; i < m->nb; ++i)
        out[i] = m->rate_master[i] < 0 ? 0.0 : m->rate_multiplier[i] * rates[m->rate_master[i]];
}

/* coordinates.joint_forces: out = G^T hinge (hinges sharing a master add up in hinge order) */
static void joint_forces(const Model *m, const double *hinge, double *out)
{
    for (int k = 0; k < m->rate_dof; ++k)
        out[k] = 0.0;
    for (int i = 1; i < m->nb; ++i)
        if (m->rate_master[i] >= 0)
            out[m->rate_master[i]] += hinge[i] * m->rate_multiplier[i];
}

/* joints.placement at a rotation joint's sin(q) and 1 - cos(q) (`sine`, `versine`; not
 * read for other joints), made by the caller: hinge_placement one angle at a time,
 * hinge_sines all of them at once. */
__attribute__((always_inline)) static inline void placement_at(const Model *m, int body,
                                                               double sine, double versine,
                                                               double *rotation,
                                                               double *translation)
{
    const double *e = m->joint_rotation + 9 * body, *r = m->joint_translation + 3 * body;
    if (m->type[body] == JOINT_ROTATION) {
        /* E rotation_about_axis(q) = E + sin(q) E K + (1 - cos(q)) E K K, the products
         * with E made once (make_model): 9 multiply-adds per entry pair instead of the
         * turn and a 3x3 product per body and call */
        const double *turn_sine = m->turn_sine + 9 * body, *cosine = m->turn_cosine + 9 * body;
        for (int k = 0; k < 9; ++k)
            rotation[k] = e[k] + sine * turn_sine[k] + versine * cosine[k];
        memcpy(translation, r, 3 * sizeof(double));
    } else {
        const double *axis = m->axis + 3 * body;
        double q = m->q_hinge[body];
        memcpy(rotation, e, 9 * sizeof(double));
        memcpy(translation, r, 3 * sizeof(double));
        if (m->type[body] == JOINT_TRANSLATION) {
            double moved[3] = {axis[0] * q, axis[1] * q, axis[2] * q}, step[3];
            mat3_vec(e, moved, step);
            for (int k = 0; k < 3; ++k)
                translation[k] += step[k];
        }
    }
}

/* joints.placement: the body's placement in its parent at the hinge coordinate.  Inlined
 * in the loops over bodies (local_placements, chain_placements): a call per body costs
 * a measurable share of a frame pose (docs/performance.md, "Design measurements"). */
__attribute__((always_inline)) static inline void hinge_placement(const Model *m, int body,
                                                                  double *rotation,
                                                                  double *translation)
{
    double q = m->q_hinge[body], sine = 0.0, versine = 0.0;
    if (m->type[body] == JOINT_ROTATION) {
        sine = sin(q);
        versine = 1.0 - cos(q);
    }
    placement_at(m, body, sine, versine, rotation, translation);
}

/* sin(q) and 1 - cos(q) of every hinge for placement_at, SOA_LANES angles per call of
 * runtime.h's soa_vsincos (glibc's vector math library where the build links it: within
 * a few ulp of libm's sincos, at a fraction of its time per angle).  For the calls that
 * place every body with little else to do (the energies, the Coriolis matrix), where
 * one sincos per body was most of the time. */
static void hinge_sines(const Model *m, double *sine, double *versine)
{
    for (int first = 0; first < m->nb; first += SOA_LANES) {
        soa_vd angle = soa_broadcast(0.0), s, c;
        for (int l = 0; l < SOA_LANES && first + l < m->nb; ++l)
            angle[l] = m->q_hinge[first + l];
        soa_vsincos(angle, &s, &c);
        for (int l = 0; l < SOA_LANES && first + l < m->nb; ++l) {
            sine[first + l] = s[l];
            versine[first + l] = 1.0 - c[l];
        }
    }
}

/* Each body's placement (R, p) in its parent at q_hinge: the recursions transform with
 * these (transform_motion, transform_force_back, add_transformed_inertia). */
static void local_placements(Model *m)
{
    m->world_placed = 0;
    for (int body = 1; body < m->nb; ++body)
        hinge_placement(m, body, m->local_rotation + 9 * body, m->local_translation + 3 * body);
}

/* The root's placement in the root (rotations, translations of body 0). */
static void root_placement(Model *m)
{
    static const double identity[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    memcpy(m->rotations, identity, sizeof identity);
    memset(m->translations, 0, 3 * sizeof(double));
}

/* Body's placement in the root from its parent's and its local placement (inlined as
 * hinge_placement). */
__attribute__((always_inline)) static inline void compose_placement(Model *m, int body)
{
    int parent = m->parent[body];
    double moved[3];
    mat3_mul(m->rotations + 9 * parent, m->local_rotation + 9 * body, m->rotations + 9 * body);
    mat3_vec(m->rotations + 9 * parent, m->local_translation + 3 * body, moved);
    for (int k = 0; k < 3; ++k)
        m->translations[3 * body + k] = m->translations[3 * parent + k] + moved[k];
}

/* The placements in the root (rotations, translations) from current local_placements. */
static void compose_placements(Model *m)
{
    root_placement(m);
    for (int body = 1; body < m->nb; ++body)
        compose_placement(m, body);
    m->world_placed = 1;
}

/* kinematics.body_placements (after hinge_positions); local_placements too */
static void body_placements(Model *m)
{
    local_placements(m);
    compose_placements(m);
}

/* body_placements of `body` and its ancestors only: all one frame's pose and Jacobian
 * read (on a branched tree most bodies are on other branches).  Root first, so each
 * placement is composed exactly as compose_placements does. */
static void chain_placements(Model *m, int body)
{
    int depth = 0;
    for (; body > 0; body = m->parent[body])
        m->chain[depth++] = body;
    m->world_placed = 0;
    root_placement(m);
    while (depth > 0) {
        body = m->chain[--depth];
        hinge_placement(m, body, m->local_rotation + 9 * body, m->local_translation + 3 * body);
        compose_placement(m, body);
    }
}

/* The motion, force and inertia transforms of body's joint (local_placements current) */
static void carry_motion(const Model *m, int body, const double *motion, double *out)
{
    transform_motion(m->local_rotation + 9 * body, m->local_translation + 3 * body, motion, out);
}

static void carry_force(const Model *m, int body, const double *force, double *out)
{
    transform_force_back(m->local_rotation + 9 * body, m->local_translation + 3 * body, force,
                         out);
}

static void carry_inertia(const Model *m, int body, const double *inertia, double *out)
{
    add_transformed_inertia(m->local_rotation + 9 * body, m->local_translation + 3 * body,
                            inertia, out);
}

/* kinematics.frame_placement */
static void frame_placement(const Model *m, int frame, double *rotation, double *translation)
{
    int body = m->frame_body[frame];
    double moved[3];
    mat3_mul(m->rotations + 9 * body, m->frame_rotation + 9 * frame, rotation);
    mat3_vec(m->rotations + 9 * body, m->frame_translation + 3 * frame, moved);
    for (int k = 0; k < 3; ++k)
        translation[k] = m->translations[3 * body + k] + moved[k];
}

/* external_forces.body_forces: wrenches [f; t] (root axes, about the frame origin) on
 * frames, as body wrenches; body placements must be current.  Returns whether any. */
static int body_forces(Model *m, const double *frames, const double *wrenches, int count)
{
    memset(m->body_forces, 0, 6 * m->nb * sizeof(double));
    for (int k = 0; k < count; ++k) {
        int frame = (int)frames[k], body = m->frame_body[frame];
        const double *wrench = wrenches + 6 * k, *origin = m->translations + 3 * body;
        double rotation[9], point[3], arm[3], moment[3], turned[3];
        frame_placement(m, frame, rotation, point);
        for (int i = 0; i < 3; ++i)
            arm[i] = point[i] - origin[i];
        cross(arm, wrench, turned);
        for (int i = 0; i < 3; ++i)
            moment[i] = wrench[3 + i] + turned[i];
        double *out = m->body_forces + 6 * body, force_body[3], moment_body[3];
        mat3t_vec(m->rotations + 9 * body, wrench, force_body);
        mat3t_vec(m->rotations + 9 * body, moment, moment_body);
        for (int i = 0; i < 3; ++i) {
            out[i] += force_body[i];
            out[3 + i] += moment_body[i];
        }
    }
    return count > 0;
}
