// Per-call time of an exported library (soa-dynamics export-c, prefix "bench") against
// Pinocchio's C++ API, in one process, on the same states: bench/bench_export_c.py writes
// the inputs, builds this program and reads the JSON it prints.
//
//   export_vs_pinocchio DESCRIPTION STATES FRAME ROUNDS
//
// DESCRIPTION is Pinocchio's model of the robot (pinocchio_side.cpp reads it), STATES the
// random states in both joint orders with the map between them, FRAME the exported frame
// the Jacobian is of.  Each round times every function over all states, ours then
// Pinocchio's, so both see the same load; the answers of the first state are compared.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "bench.h"
#include "pinocchio_side.h"

namespace {

using pinocchio_side::Function;

const char *const NAMES[] = {"gravity", "inverse dynamics", "mass matrix", "forward dynamics",
                             "jacobian"};

struct States {
  int n = 0, nq = 0, nv = 0, count = 0;
  std::vector<int> column;  // Pinocchio's velocity index of each of our joints
  std::vector<double> q, qd, qdd, tau;              // ours, n per state
  std::vector<double> pin_q, pin_v, pin_a, pin_tau;  // Pinocchio's
};

bool read_values(std::istream &in, std::vector<double> &values, int count) {
  for (int k = 0; k < count; ++k) {
    double value;
    if (!(in >> value)) return false;
    values.push_back(value);
  }
  return true;
}

bool read_states(const char *path, States &s) {
  std::ifstream in(path);
  if (!(in >> s.n >> s.nq >> s.nv >> s.count) || s.n != BENCH_NUM_JOINTS || s.nv != s.n ||
      s.count < 1 || s.count > 100000 || s.nq < s.n || s.nq > 2 * s.n)
    return false;
  s.column.resize(s.n);
  for (int &c : s.column)
    if (!(in >> c) || c < 0 || c >= s.nv) return false;
  for (int k = 0; k < s.count; ++k)
    if (!read_values(in, s.q, s.n) || !read_values(in, s.qd, s.n) ||
        !read_values(in, s.qdd, s.n) || !read_values(in, s.tau, s.n) ||
        !read_values(in, s.pin_q, s.nq) || !read_values(in, s.pin_v, s.nv) ||
        !read_values(in, s.pin_a, s.nv) || !read_values(in, s.pin_tau, s.nv))
      return false;
  return true;
}

struct Ours {
  std::vector<double> params = std::vector<double>(BENCH_NUM_PARAMETERS);
  std::vector<double> out = std::vector<double>(6 * BENCH_NUM_JOINTS * BENCH_NUM_JOINTS);
  int frame = 0;
};

void call(Ours &o, const States &s, Function function, int k) {
  const double *p = o.params.data();
  const double *q = &s.q[k * s.n], *qd = &s.qd[k * s.n];
  switch (function) {
    case pinocchio_side::GRAVITY: bench_gravity_torques(p, q, o.out.data()); break;
    case pinocchio_side::INVERSE_DYNAMICS:
      bench_inverse_dynamics(p, q, qd, &s.qdd[k * s.n], o.out.data());
      break;
    case pinocchio_side::MASS_MATRIX: bench_mass_matrix(p, q, o.out.data()); break;
    case pinocchio_side::FORWARD_DYNAMICS:
      bench_forward_dynamics(p, q, qd, &s.tau[k * s.n], o.out.data());
      break;
    case pinocchio_side::JACOBIAN: bench_frame_jacobian(p, q, o.frame, o.out.data()); break;
    default: break;
  }
}

double time_per_call(Ours &o, const States &s, Function function) {
  const auto start = std::chrono::steady_clock::now();
  for (int k = 0; k < s.count; ++k) call(o, s, function, k);
  const auto stop = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::nano>(stop - start).count() / s.count;
}

// Largest |ours - Pinocchio's| of state 0, relative to the largest |Pinocchio's| (at least 1).
double difference(Ours &o, const States &s, pinocchio_side::Bench *pin, Function function) {
  std::vector<double> theirs;
  pinocchio_side::answer(pin, function, 0, theirs);
  call(o, s, function, 0);
  const int n = s.n;
  double largest = 1.0, worst = 0.0;
  for (double value : theirs) largest = std::max(largest, std::fabs(value));
  const int rows = function == pinocchio_side::JACOBIAN ? 6 : function == pinocchio_side::MASS_MATRIX ? n : 1;
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < n; ++j) {
      double mine = o.out[i * n + j], other;
      if (function == pinocchio_side::MASS_MATRIX) other = theirs[s.column[i] * n + s.column[j]];
      else if (rows == 1) other = theirs[s.column[j]];
      else other = theirs[i * n + s.column[j]];
      worst = std::max(worst, std::fabs(mine - other));
    }
  return worst / largest;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s DESCRIPTION STATES FRAME ROUNDS\n", argv[0]);
    return 2;
  }
  std::string error;
  pinocchio_side::Bench *pin = pinocchio_side::load(argv[1], error);
  if (!pin) {
    std::fprintf(stderr, "description: %s\n", error.c_str());
    return 2;
  }
  States s;
  if (!read_states(argv[2], s) || s.nq != pinocchio_side::nq(pin) || s.nv != pinocchio_side::nv(pin)) {
    std::fprintf(stderr, "states: the file does not match the exported library or the model\n");
    return 2;
  }
  Ours ours;
  bench_default_parameters(ours.params.data());
  ours.frame = bench_frame_index(argv[3]);
  const int rounds = std::atoi(argv[4]);
  if (ours.frame < 0 || rounds < 1 || rounds > 10000) {
    std::fprintf(stderr, "unknown frame or rounds out of 1..10000\n");
    return 2;
  }
  pinocchio_side::set_states(pin, s.pin_q, s.pin_v, s.pin_a, s.pin_tau, s.count);

  std::printf("{\"states\": %d, \"rounds\": %d, \"functions\": {", s.count, rounds);
  for (int f = 0; f < pinocchio_side::FUNCTIONS; ++f) {
    const Function function = static_cast<Function>(f);
    std::vector<double> mine, theirs;
    time_per_call(ours, s, function);  // warm both: caches, branch predictors, clocks
    pinocchio_side::time_per_call(pin, function);
    for (int r = 0; r < rounds; ++r) {
      mine.push_back(time_per_call(ours, s, function));
      theirs.push_back(pinocchio_side::time_per_call(pin, function));
    }
    std::printf("%s\"%s\": {\"difference\": %.3e, \"ours_ns\": [", f ? ", " : "", NAMES[f],
                difference(ours, s, pin, function));
    for (int r = 0; r < rounds; ++r) std::printf("%s%.2f", r ? ", " : "", mine[r]);
    std::printf("], \"pinocchio_ns\": [");
    for (int r = 0; r < rounds; ++r) std::printf("%s%.2f", r ? ", " : "", theirs[r]);
    std::printf("]}");
  }
  std::printf("}}\n");
  pinocchio_side::release(pin);
  return 0;
}
