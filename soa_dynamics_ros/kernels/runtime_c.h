/* The part of runtime.h with no Python in it: the status values, the input check and
 * the small dense solvers the generated cores call.  The extension modules include it
 * through runtime.h; a library exported with `soa-dynamics export-c` (export.py) carries
 * a copy of it in its source, so that it needs nothing of this package.  C99 and libm
 * only: no allocation, no global state, no system calls. */
#ifndef SOA_RUNTIME_C_H
#define SOA_RUNTIME_C_H
#include <math.h>

/* Status values of a core (runtime.h, at the top). */
#define SOA_OK 0
#define SOA_BAD_INPUT 1
#define SOA_SINGULAR 2
#define SOA_ILL_CONDITIONED 3

/* Status 1 unless every entry is finite and within `limit` (NaN fails "<="). */
static int soa_check(const double *values, int count, double limit)
{
    for (int k = 0; k < count; ++k)
        if (!(fabs(values[k]) <= limit))
            return SOA_BAD_INPUT;
    return SOA_OK;
}

/* The lower Cholesky factor of symmetric positive definite n x n `m` (row-major) in
 * place; status 2 when m is not positive definite. */
static int soa_cholesky_factor(double *m, int n)
{
    for (int j = 0; j < n; ++j) {
        double d = m[j * n + j];
        for (int k = 0; k < j; ++k)
            d -= m[j * n + k] * m[j * n + k];
        if (!(d > 0.0))
            return SOA_SINGULAR;
        d = sqrt(d);
        m[j * n + j] = d;
        for (int i = j + 1; i < n; ++i) {
            double s = m[i * n + j];
            for (int k = 0; k < j; ++k)
                s -= m[i * n + k] * m[j * n + k];
            m[i * n + j] = s / d;
        }
    }
    return SOA_OK;
}

/* Solve m x = rhs in place of rhs for symmetric positive definite n x n `m`
 * (row-major; its lower Cholesky factor overwrites it when `factor`).
 * Status 2 when m is not positive definite (the reference path then raises). */
static int soa_cholesky_solve(double *m, double *rhs, int n, int factor)
{
    if (factor && soa_cholesky_factor(m, n) != SOA_OK)
        return SOA_SINGULAR;
    for (int i = 0; i < n; ++i) {
        double s = rhs[i];
        for (int k = 0; k < i; ++k)
            s -= m[i * n + k] * rhs[k];
        rhs[i] = s / m[i * n + i];
    }
    for (int i = n - 1; i >= 0; --i) {
        double s = rhs[i];
        for (int k = i + 1; k < n; ++k)
            s -= m[k * n + i] * rhs[k];
        rhs[i] = s / m[i * n + i];
    }
    return SOA_OK;
}

/* Featherstone's LTL factorization (RBDA 6.5) of a mass matrix `h` (n x n, row-major)
 * in place: M = L^T L, L lower triangular and, in row k, nonzero only at k and its
 * ancestor rates up[k], up[up[k]], ... (-1 ends a chain; each ancestor earlier than
 * its descendants), so that a tree costs O(n d^2) for depth d instead of the dense
 * O(n^3), without fill-in.  Reads and writes the lower triangle only.  Status 2 where
 * a pivot is not above `singular_below`. */
static int soa_tree_factor(double *h, int n, const int *up, double singular_below)
{
    for (int k = n - 1; k >= 0; --k) {
        if (!(h[k * n + k] > singular_below))
            return SOA_SINGULAR;
        double d = sqrt(h[k * n + k]), reciprocal = 1.0 / d;
        h[k * n + k] = d;
        for (int i = up[k]; i >= 0; i = up[i])
            h[k * n + i] *= reciprocal;
        for (int i = up[k]; i >= 0; i = up[i])
            for (int j = i; j >= 0; j = up[j])
                h[i * n + j] -= h[k * n + i] * h[k * n + j];
    }
    return SOA_OK;
}

/* M x = rhs in place of rhs, M = L^T L factored by soa_tree_factor: L^T y = rhs from
 * the leaves up, then L x = y from the root down (RBDA 6.5's back-substitutions). */
static void soa_tree_substitute(const double *l, double *x, int n, const int *up)
{
    for (int k = n - 1; k >= 0; --k) {
        x[k] /= l[k * n + k];
        for (int i = up[k]; i >= 0; i = up[i])
            x[i] -= l[k * n + i] * x[k];
    }
    for (int k = 0; k < n; ++k) {
        for (int i = up[k]; i >= 0; i = up[i])
            x[k] -= l[k * n + i] * x[i];
        x[k] /= l[k * n + k];
    }
}

/* soa_tree_factor, then soa_tree_substitute: the mimic robots' forward dynamics where
 * their M keeps a tree's sparsity (mimic joints within one branch, as a gripper's
 * fingers); status 2 where M is not positive definite, as soa_cholesky_solve. */
static int soa_tree_solve(double *m, double *rhs, int n, const int *up)
{
    if (soa_tree_factor(m, n, up, 0.0) != SOA_OK)
        return SOA_SINGULAR;
    soa_tree_substitute(m, rhs, n, up);
    return SOA_OK;
}

/* Largest absolute column sum of a square n x n matrix. */
static double soa_one_norm(const double *a, int n)
{
    double norm = 0.0;
    for (int j = 0; j < n; ++j) {
        double column = 0.0;
        for (int i = 0; i < n; ++i)
            column += fabs(a[i * n + j]);
        norm = column > norm ? column : norm;
    }
    return norm;
}

/* SOA_CONDITION_LIMIT: Lambda^-1 with a 1-norm condition number above it is
 * left to the reference path; each generated module defines it from
 * DEFAULT_RCOND (c_emission.CONDITION_LIMIT). */
#ifndef SOA_CONDITION_LIMIT
#error "SOA_CONDITION_LIMIT must be defined by the generated module"
#endif

/* out = c^-1 for symmetric positive definite n x n `c` (n <= 6, overwritten);
 * status 3 when ill-conditioned or not positive definite. */
static int soa_invert_spd_checked(double *c, double *out, int n)
{
    double norm = soa_one_norm(c, n), column[6];
    if (!(norm > 0.0))
        return SOA_ILL_CONDITIONED;
    for (int j = 0; j < n; ++j) {
        for (int i = 0; i < n; ++i)
            column[i] = i == j ? 1.0 : 0.0;
        if (soa_cholesky_solve(c, column, n, j == 0) != SOA_OK)
            return SOA_ILL_CONDITIONED;
        for (int i = 0; i < n; ++i)
            out[i * n + j] = column[i];
    }
    if (!(norm * soa_one_norm(out, n) < SOA_CONDITION_LIMIT))
        return SOA_ILL_CONDITIONED;
    for (int i = 0; i < n; ++i)
        for (int j = i + 1; j < n; ++j) {
            double value = 0.5 * (out[i * n + j] + out[j * n + i]);
            out[i * n + j] = value;
            out[j * n + i] = value;
        }
    return SOA_OK;
}

#endif
