/* Dense linear algebra of compliances: eigen-decomposition, rank decisions, solves.
 * Part of generic.c (included there, one translation unit). */
/* Eigen-decomposition of a symmetric n x n matrix by cyclic Jacobi rotations: `a` is
 * overwritten (its diagonal ends as the eigenvalues, copied to `values`), `vectors`
 * (row-major n x n) gets the eigenvectors as columns.  Sweeps until no off-diagonal
 * element changes its diagonal neighbours' sum. */
static void symmetric_eigen(double *a, int n, double *values, double *vectors)
{
    for (int i = 0; i < n * n; ++i)
        vectors[i] = i % (n + 1) == 0 ? 1.0 : 0.0;
    for (int sweep = 0; sweep < 64; ++sweep) {
        int rotated = 0;
        for (int p = 0; p < n; ++p)
            for (int q = p + 1; q < n; ++q) {
                double apq = a[p * n + q], app = a[p * n + p], aqq = a[q * n + q];
                if (apq == 0.0 || (fabs(app) + 100.0 * fabs(apq) == fabs(app)
                                   && fabs(aqq) + 100.0 * fabs(apq) == fabs(aqq))) {
                    a[p * n + q] = a[q * n + p] = 0.0;
                    continue;
                }
                rotated = 1;
                double theta = (aqq - app) / (2.0 * apq);
                double t = fabs(theta) > 1e150 ? 0.5 / theta
                           : copysign(1.0, theta) / (fabs(theta) + sqrt(theta * theta + 1.0));
                double c = 1.0 / sqrt(t * t + 1.0), s = t * c;
                for (int k = 0; k < n; ++k) {
                    double akp = a[k * n + p], akq = a[k * n + q];
                    a[k * n + p] = c * akp - s * akq;
                    a[k * n + q] = s * akp + c * akq;
                }
                for (int k = 0; k < n; ++k) {
                    double apk = a[p * n + k], aqk = a[q * n + k];
                    a[p * n + k] = c * apk - s * aqk;
                    a[q * n + k] = s * apk + c * aqk;
                }
                a[p * n + q] = a[q * n + p] = 0.0;
                for (int k = 0; k < n; ++k) {
                    double vkp = vectors[k * n + p], vkq = vectors[k * n + q];
                    vectors[k * n + p] = c * vkp - s * vkq;
                    vectors[k * n + q] = s * vkp + c * vkq;
                }
            }
        if (!rotated)
            break;
    }
    for (int i = 0; i < n; ++i)
        values[i] = a[i * n + i];
}

/* rhs = a^-1 rhs (a: symmetric n x n, its Cholesky factor overwrites it) when the 2-norm
 * condition number of `a` is surely below 1 / rcond; else status 3: the reference then
 * decides the rank (DEFAULT_RCOND) and drops directions.  `scratch` holds n. */
static int solve_clearly_full_rank(double *a, double *rhs, int n, double *scratch)
{
    double norm = soa_one_norm(a, n);
    if (!(norm > 0.0) || soa_cholesky_solve(a, rhs, n, 1) != SOA_OK)
        return SOA_ILL_CONDITIONED;
    double inverse_norm = 0.0;
    for (int j = 0; j < n; ++j) {
        /* the 1-norm of a^-1, a column at a time from the factor */
        double s = 0.0;
        for (int i = 0; i < n; ++i)
            scratch[i] = i == j ? 1.0 : 0.0;
        soa_cholesky_solve(a, scratch, n, 0);
        for (int i = 0; i < n; ++i)
            s += fabs(scratch[i]);
        inverse_norm = s > inverse_norm ? s : inverse_norm;
    }
    /* cond_2 <= n cond_1: below SOA_CONDITION_LIMIT = 1 / (10 DEFAULT_RCOND), the
     * reference keeps every direction */
    return norm * inverse_norm * n < SOA_CONDITION_LIMIT ? SOA_OK : SOA_ILL_CONDITIONED;
}

/* Lambda = (compliance + damping I)^-1 by Cholesky where no rank or condition number is
 * asked for and none needs deciding: with damping (the reference then inverts whatever
 * the rank), or without when the compliance is surely of full rank (as in
 * solve_clearly_full_rank).  out as invert_compliance's, with condition NaN and rank -1;
 * status 3 otherwise (invert_compliance then decides).  `work` holds n^2 + 2 n. */
static int invert_compliance_by_cholesky(const double *compliance, int n, double damping,
                                         double *work, double *out)
{
    double *a = work, *column = work + (size_t)n * n, *scratch = column + n;
    memcpy(a, compliance, (size_t)n * n * sizeof(double));
    memcpy(out + n * n, compliance, (size_t)n * n * sizeof(double));
    for (int i = 0; i < n; ++i) {
        a[i * n + i] += damping;
        column[i] = 0.0;
    }
    int status = damping > 0.0 ? soa_cholesky_solve(a, column, n, 1)
                               : solve_clearly_full_rank(a, column, n, scratch);
    if (status != SOA_OK)
        return SOA_ILL_CONDITIONED;
    for (int j = 0; j < n; ++j) {
        for (int i = 0; i < n; ++i)
            column[i] = i == j ? 1.0 : 0.0;
        soa_cholesky_solve(a, column, n, 0);
        for (int i = 0; i < n; ++i)
            out[i * n + j] = column[i];
    }
    symmetrize(out, n);
    out[2 * n * n] = NAN;
    out[2 * n * n + 1] = -1.0;
    return SOA_OK;
}

/* constrained.py's rank of a symmetric matrix from its eigenvalues: how many lie above
 * *threshold = SOA_RANK_RCOND times the largest; -1, for the reference to decide, when the
 * largest is not positive and finite or an eigenvalue lies within round-off of the
 * threshold. */
static int decided_rank(const double *values, int n, double *threshold)
{
    double strongest = 0.0;
    for (int i = 0; i < n; ++i)
        strongest = values[i] > strongest ? values[i] : strongest;
    if (!(strongest > 0.0) || !isfinite(strongest))
        return -1;
    *threshold = SOA_RANK_RCOND * strongest;
    int rank = 0;
    for (int i = 0; i < n; ++i) {
        /* both eigen-solvers err by a few ulps of the largest eigenvalue */
        if (fabs(values[i] - *threshold) < 1e-3 * *threshold)
            return -1;
        rank += values[i] > *threshold;
    }
    return rank;
}

/* constrained.task_space_inertia after the compliance: its rank (decided_rank), condition
 * number (largest / smallest eigenvalue, inf below full rank) and Lambda = V diag(1 /
 * (values + damping)) V^T.  out: Lambda (n x n), the compliance (n x n), condition, rank.
 * Status 3, for the reference to decide (and raise), below full rank without damping or
 * when decided_rank leaves the rank to it.  `work` holds 2 n^2 + n. */
static int invert_compliance(const double *compliance, int n, double damping, double *work,
                             double *out)
{
    double *a = work, *vectors = work + n * n, *values = vectors + n * n;
    memcpy(a, compliance, (size_t)n * n * sizeof(double));
    memcpy(out + n * n, compliance, (size_t)n * n * sizeof(double));
    symmetric_eigen(a, n, values, vectors);
    double threshold, strongest = values[0], weakest = values[0];
    for (int i = 0; i < n; ++i) {
        strongest = values[i] > strongest ? values[i] : strongest;
        weakest = values[i] < weakest ? values[i] : weakest;
    }
    int rank = decided_rank(values, n, &threshold);
    if (rank < 0 || (rank < n && !(damping > 0.0)))
        return SOA_ILL_CONDITIONED;
    for (int i = 0; i < n; ++i)
        for (int j = i; j < n; ++j) {
            double s = 0.0;
            for (int k = 0; k < n; ++k)
                s += vectors[i * n + k] * vectors[j * n + k] / (values[k] + damping);
            out[i * n + j] = out[j * n + i] = s;
        }
    out[2 * n * n] = rank == n ? strongest / weakest : INFINITY;
    out[2 * n * n + 1] = rank;
    return SOA_OK;
}

/* constrained._truncated_solve of the constraint compliance (symmetric n x n, overwritten)
 * for hybrid dynamics: rhs becomes the least-squares nu through the directions kept, *rank
 * their count and `dropped` (n x (n - rank), by rows) the eigenvectors not kept.  By
 * Cholesky when the compliance is clearly of full rank, else (redundant constraints, or
 * more than the joints can meet) through the eigenvectors whose eigenvalues pass
 * decided_rank's threshold; status 3 when decided_rank leaves the rank to the reference.
 * `work` holds n^2 + 2 n. */
static int solve_constraints(double *compliance, double *rhs, int n, double *work, int *rank,
                             double *dropped)
{
    /* `square` holds the Cholesky factor, then (if that declines) the eigenvectors */
    double *square = work, *given = work + (size_t)n * n, *values = given + n;
    memcpy(square, compliance, (size_t)n * n * sizeof(double));
    memcpy(given, rhs, n * sizeof(double));
    *rank = n;
    if (solve_clearly_full_rank(square, rhs, n, values) == SOA_OK)
        return SOA_OK;
    symmetric_eigen(compliance, n, values, square);
    double threshold;
    if ((*rank = decided_rank(values, n, &threshold)) < 0)
        return SOA_ILL_CONDITIONED;
    int width = n - *rank;
    memset(rhs, 0, n * sizeof(double));
    for (int k = 0, d = 0; k < n; ++k) {
        if (values[k] > threshold) {
            double along = 0.0;
            for (int i = 0; i < n; ++i)
                along += square[i * n + k] * given[i];
            along /= values[k];
            for (int i = 0; i < n; ++i)
                rhs[i] += square[i * n + k] * along;
        } else {
            for (int i = 0; i < n; ++i)
                dropped[i * width + d] = square[i * n + k];
            ++d;
        }
    }
    return SOA_OK;
}
