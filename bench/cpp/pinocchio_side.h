// Pinocchio's side of export_vs_pinocchio.cpp, in a translation unit of its own: it
// compiles for minutes and is cached, while the exported library changes with each export.
#pragma once
#include <string>
#include <vector>

namespace pinocchio_side {

enum Function { GRAVITY, INVERSE_DYNAMICS, MASS_MATRIX, FORWARD_DYNAMICS, JACOBIAN, FUNCTIONS };

struct Bench;

// The model of a description file written by bench_export_c.py (Pinocchio's own model of
// the URDF, joint by joint); nullptr and `error` set when the file does not parse.
Bench *load(const std::string &path, std::string &error);
void release(Bench *bench);
int nq(const Bench *bench);
int nv(const Bench *bench);

// `count` states in Pinocchio's layout: q (nq each), v, a and tau (nv each).
void set_states(Bench *bench, const std::vector<double> &q, const std::vector<double> &v,
                const std::vector<double> &a, const std::vector<double> &tau, int count);

// One call of `function` on state `state`; its answer in `out` (nv, nv x nv or 6 x nv,
// row-major; the mass matrix's upper triangle, which is what crba fills).
void answer(Bench *bench, Function function, int state, std::vector<double> &out);

// Nanoseconds per call of `function`, called once on every state in turn.
double time_per_call(Bench *bench, Function function);

}  // namespace pinocchio_side
