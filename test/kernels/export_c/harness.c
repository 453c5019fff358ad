/* Runs a library exported with prefix "soa" (soa.h) on the states read from stdin and
 * prints every answer, for test_export_c.py to compare with the Python model.
 *
 * stdin: the params (soa_num_parameters), the observer's gain (n), the sample count,
 * then per sample q, qd, qdd, tau (n each), a wrench (6) and dt.  stdout: per sample one
 * line per quantity, "name value value ...", each value printed to round-trip exactly. */
#include <stdio.h>
#include <stdlib.h>
#include "soa.h"

enum { N = SOA_NUM_JOINTS };

static void read_values(double *values, int count)
{
    for (int k = 0; k < count; ++k)
        if (scanf("%lf", &values[k]) != 1) {
            fprintf(stderr, "harness: short input\n");
            exit(2);
        }
}

static void print_values(const char *name, int frame, const double *values, int count)
{
    printf("%s %d", name, frame);
    for (int k = 0; k < count; ++k)
        printf(" %.17g", values[k]);
    printf("\n");
}

int main(void)
{
    static double params[SOA_NUM_PARAMETERS], defaults[SOA_NUM_PARAMETERS];
    double gain[N], q[N], qd[N], qdd[N], tau[N], wrench[6], dt, out[N], matrix[N * N];
    double jacobian[6 * N], pose[16], lambda[36], motion[6], energy;
    int samples;
    soa_observer observer;
    if (soa_num_joints() != N || soa_num_parameters() != SOA_NUM_PARAMETERS
        || soa_num_frames() != SOA_NUM_FRAMES)
        return 3;
    soa_default_parameters(defaults);
    print_values("defaults", -1, defaults, SOA_NUM_PARAMETERS);
    read_values(params, SOA_NUM_PARAMETERS);
    read_values(gain, N);
    soa_observer_reset(&observer, gain);
    if (scanf("%d", &samples) != 1)
        return 2;
    for (int frame = 0; frame < SOA_NUM_FRAMES; ++frame)
        if (soa_frame_index(soa_frame_name(frame)) != frame)
            return 4;
    if (soa_frame_index("no such frame") != -1 || soa_frame_name(SOA_NUM_FRAMES) != NULL)
        return 5;
    for (int s = 0; s < samples; ++s) {
        read_values(q, N);
        read_values(qd, N);
        read_values(qdd, N);
        read_values(tau, N);
        read_values(wrench, 6);
        read_values(&dt, 1);
        int pushed = s % SOA_NUM_FRAMES;
        soa_gravity_torques(params, q, out);
        print_values("gravity_torques", -1, out, N);
        soa_bias_torques(params, q, qd, out);
        print_values("bias_torques", -1, out, N);
        soa_inverse_dynamics(params, q, qd, qdd, out);
        print_values("inverse_dynamics", -1, out, N);
        soa_mass_matrix(params, q, matrix);
        print_values("mass_matrix", -1, matrix, N * N);
        soa_forward_dynamics(params, q, qd, tau, out);
        print_values("forward_dynamics", -1, out, N);
        soa_coriolis_transpose_product(params, q, qd, out);
        print_values("coriolis_transpose_product", -1, out, N);
        soa_coriolis_matrix(params, q, qd, matrix);
        print_values("coriolis_matrix", -1, matrix, N * N);
        energy = soa_kinetic_energy(params, q, qd);
        print_values("kinetic_energy", -1, &energy, 1);
        energy = soa_potential_energy(params, q);
        print_values("potential_energy", -1, &energy, 1);
        soa_inverse_dynamics_wrenches(params, q, qd, qdd, 1, &pushed, wrench, out);
        print_values("inverse_dynamics_wrenches", pushed, out, N);
        soa_forward_dynamics_wrenches(params, q, qd, tau, 1, &pushed, wrench, out);
        print_values("forward_dynamics_wrenches", pushed, out, N);
        soa_observer_update(params, &observer, q, qd, tau, dt, out);
        print_values("observer", -1, out, N);
        for (int frame = 0; frame < SOA_NUM_FRAMES; ++frame) {
            soa_frame_pose(params, q, frame, pose);
            print_values("frame_pose", frame, pose, 16);
            soa_frame_jacobian(params, q, frame, jacobian);
            print_values("jacobian", frame, jacobian, 6 * N);
            soa_task_space_inertia(params, q, frame, lambda);
            print_values("task_space_inertia", frame, lambda, 36);
            soa_frame_twist(params, q, qd, frame, motion);
            print_values("frame_twist", frame, motion, 6);
            soa_jacobian_derivative_product(params, q, qd, frame, motion);
            print_values("jacobian_derivative_product", frame, motion, 6);
            soa_frame_acceleration(params, q, qd, qdd, frame, motion);
            print_values("frame_acceleration", frame, motion, 6);
            soa_jacobian_time_derivative(params, q, qd, frame, jacobian);
            print_values("jacobian_time_derivative", frame, jacobian, 6 * N);
        }
        soa_frame_jacobian(params, q, SOA_NUM_FRAMES, jacobian);
        print_values("unknown_frame_jacobian", SOA_NUM_FRAMES, jacobian, 6 * N);
        soa_frame_acceleration(params, q, qd, qdd, -1, motion);
        print_values("unknown_frame_acceleration", -1, motion, 6);
    }
    return 0;
}
