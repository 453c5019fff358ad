// A controller's update() at 1 kHz over a library exported by `soa-dynamics export-c`
// (prefix soa): each cycle reads a state, asks the model for gravity, inverse dynamics,
// the mass matrix, forward dynamics and the end-effector Jacobian, as a computed-torque or
// impedance controller would, and times the model's share of the cycle.  Prints the
// distribution of that time and of the wake-up lateness, and counts every allocation
// (malloc, calloc, realloc, operator new) made inside the loop: there must be none.
//
//     control_loop [CYCLES] [FRAME]      (default: 5000 cycles, the last frame)
//
// Exit status 1 when the loop allocated.
#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <new>
#include <vector>

#include "soa.h"

// Every allocation of the process passes here (glibc's own functions do the work): the
// count of those made while `counting` is set is the loop's.
static std::atomic<bool> counting{false};
static std::atomic<long> allocations{0};

extern "C" {
void *__libc_malloc(size_t size);
void *__libc_calloc(size_t count, size_t size);
void *__libc_realloc(void *pointer, size_t size);

void *malloc(size_t size)
{
    if (counting.load(std::memory_order_relaxed))
        allocations.fetch_add(1, std::memory_order_relaxed);
    return __libc_malloc(size);
}

void *calloc(size_t count, size_t size)
{
    if (counting.load(std::memory_order_relaxed))
        allocations.fetch_add(1, std::memory_order_relaxed);
    return __libc_calloc(count, size);
}

void *realloc(void *pointer, size_t size)
{
    if (counting.load(std::memory_order_relaxed))
        allocations.fetch_add(1, std::memory_order_relaxed);
    return __libc_realloc(pointer, size);
}
}

void *operator new(size_t size)
{
    if (void *pointer = malloc(size ? size : 1))
        return pointer;
    throw std::bad_alloc();
}

void operator delete(void *pointer) noexcept { std::free(pointer); }
void operator delete(void *pointer, size_t) noexcept { std::free(pointer); }

namespace {

constexpr long kPeriodNs = 1000000;      // 1 kHz
constexpr int n = SOA_NUM_JOINTS;

long nanoseconds(const timespec &t) { return t.tv_sec * 1000000000L + t.tv_nsec; }

double percentile(std::vector<long> &values, double fraction)
{
    std::sort(values.begin(), values.end());
    size_t index = static_cast<size_t>(fraction * static_cast<double>(values.size() - 1) + 0.5);
    return values[index] / 1000.0;      // microseconds
}

struct Model {
    std::array<double, SOA_NUM_PARAMETERS> params;
    std::array<double, n> q, qd, qdd_desired, tau, qdd;
    std::array<double, n * n> mass;
    std::array<double, 6 * n> jacobian;
};

// One update(): what a computed-torque controller with a task-space term asks for.
void update(Model &model, int frame)
{
    soa_gravity_torques(model.params.data(), model.q.data(), model.tau.data());
    soa_inverse_dynamics(model.params.data(), model.q.data(), model.qd.data(),
                         model.qdd_desired.data(), model.tau.data());
    soa_mass_matrix(model.params.data(), model.q.data(), model.mass.data());
    soa_forward_dynamics(model.params.data(), model.q.data(), model.qd.data(), model.tau.data(),
                         model.qdd.data());
    soa_frame_jacobian(model.params.data(), model.q.data(), frame, model.jacobian.data());
}

}  // namespace

int main(int argc, char **argv)
{
    const long cycles = argc > 1 ? std::atol(argv[1]) : 5000;
    const int frame = argc > 2 ? std::atoi(argv[2]) : SOA_NUM_FRAMES - 1;
    if (cycles < 1 || frame < 0 || frame >= SOA_NUM_FRAMES) {
        std::fprintf(stderr, "usage: control_loop [CYCLES >= 1] [FRAME 0..%d]\n",
                     SOA_NUM_FRAMES - 1);
        return 2;
    }
    Model model{};
    soa_default_parameters(model.params.data());
    std::vector<long> model_ns(cycles), late_ns(cycles);     // before the loop
    double checksum = 0.0;
    timespec next, start, end;
    clock_gettime(CLOCK_MONOTONIC, &next);
    counting = true;
    for (long cycle = 0; cycle < cycles; ++cycle) {
        next.tv_nsec += kPeriodNs;
        if (next.tv_nsec >= 1000000000L) {
            next.tv_nsec -= 1000000000L;
            ++next.tv_sec;
        }
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, nullptr);
        clock_gettime(CLOCK_MONOTONIC, &start);
        const double t = 0.001 * static_cast<double>(cycle);   // the state interfaces' read
        for (int k = 0; k < n; ++k) {
            model.q[k] = 0.5 * std::sin(t + k);
            model.qd[k] = 0.5 * std::cos(t + k);
            model.qdd_desired[k] = -0.5 * std::sin(t + k);
        }
        update(model, frame);
        clock_gettime(CLOCK_MONOTONIC, &end);
        checksum += model.tau[0] + model.qdd[n - 1] + model.mass[0] + model.jacobian[0];
        model_ns[cycle] = nanoseconds(end) - nanoseconds(start);
        late_ns[cycle] = nanoseconds(start) - nanoseconds(next);
    }
    counting = false;
    std::printf("%ld cycles at 1 kHz, %d joints, frame %s (checksum %.6g)\n", cycles, n,
                soa_frame_name(frame), checksum);
    std::printf("model time per cycle [us]: p50 %.2f  p99 %.2f  p99.9 %.2f  max %.2f\n",
                percentile(model_ns, 0.5), percentile(model_ns, 0.99),
                percentile(model_ns, 0.999), percentile(model_ns, 1.0));
    std::printf("wake-up lateness [us]:     p50 %.2f  p99 %.2f  p99.9 %.2f  max %.2f\n",
                percentile(late_ns, 0.5), percentile(late_ns, 0.99), percentile(late_ns, 0.999),
                percentile(late_ns, 1.0));
    std::printf("allocations in the loop: %ld\n", allocations.load());
    return allocations.load() == 0 ? 0 : 1;
}
