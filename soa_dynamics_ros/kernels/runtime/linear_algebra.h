/* Row eliminations over whole rows: the generic module's multi-column solves.
 * Part of runtime.h (included there in order, after runtime_c.h, whose Cholesky
 * factor they start from; the dense and tree solvers and the checked inverse are there,
 * Python-free, for the exported libraries too). */
/* Four doubles, one AVX register: the generic derivative pass and the substitutions
 * below work on rows four columns at a time. */
typedef double soa_lanes4 __attribute__((vector_size(4 * sizeof(double))));
__attribute__((always_inline))
static inline soa_lanes4 soa_load_lanes(const double *x)
{
    soa_lanes4 lanes;
    memcpy(&lanes, x, sizeof lanes);    /* the terms are only 8-byte aligned */
    return lanes;
}

__attribute__((always_inline))
static inline void soa_store_lanes(double *x, soa_lanes4 lanes)
{
    memcpy(x, &lanes, sizeof lanes);
}

/* Row i of x (rows n doubles apart) less the rows [first, end) weighted by l[k * stride],
 * times scale, on columns [0, columns): eight, then four columns at a time summed in
 * registers over all the rows (stored once, not once per row; one weight loaded for two
 * vectors).  lower: x's rows are zero right of their diagonal, so a column block starting
 * at c takes only the rows from c. */
__attribute__((always_inline))
static inline void soa_eliminate_row(double *x, int n, int i, int first, int end, const double *l,
                                 int stride, double scale, int columns, int lower)
{
    double *row = x + (size_t)i * n;
    int c = 0;
    for (; c + 8 <= columns; c += 8) {
        soa_lanes4 low = soa_load_lanes(row + c), high = soa_load_lanes(row + c + 4);
        for (int k = lower && c > first ? c : first; k < end; ++k) {
            const double *done = x + (size_t)k * n + c;
            double weight = l[k * stride];
            low -= weight * soa_load_lanes(done);
            high -= weight * soa_load_lanes(done + 4);
        }
        soa_store_lanes(row + c, scale * low);
        soa_store_lanes(row + c + 4, scale * high);
    }
    for (; c + 4 <= columns; c += 4) {
        soa_lanes4 sum = soa_load_lanes(row + c);
        for (int k = lower && c > first ? c : first; k < end; ++k)
            sum -= l[k * stride] * soa_load_lanes(x + (size_t)k * n + c);
        soa_store_lanes(row + c, scale * sum);
    }
    for (; c < columns; ++c) {
        double sum = row[c];
        for (int k = lower && c > first ? c : first; k < end; ++k)
            sum -= l[k * stride] * x[(size_t)k * n + c];
        row[c] = sum * scale;
    }
}

/* The per-robot kernels build at -O2 (build.KERNEL_OPTIMIZATION); row updates over whole
 * rows need -O3's vectorizer (measurably faster: docs/performance.md, "Design
 * measurements"). */
#define SOA_VECTORIZED __attribute__((optimize("O3")))

/* M X = B for n x n symmetric positive definite m (its lower Cholesky factor overwrites
 * it) and B of n rows of `parts` n-column blocks (row-major, overwritten): both
 * substitutions as operations on whole rows; out gets X's blocks one after the other,
 * each n x n row-major.  Status 2 when m is not positive definite. */
SOA_VECTORIZED static int soa_solve_parts(double *m, double *b, int n, int parts, double *out)
{
    int width = parts * n;
    if (soa_cholesky_factor(m, n) != SOA_OK)
        return SOA_SINGULAR;
    for (int i = 0; i < n; ++i)
        soa_eliminate_row(b, width, i, 0, i, m + (size_t)i * n, 1, 1.0 / m[i * n + i], width, 0);
    for (int i = n - 1; i >= 0; --i)
        soa_eliminate_row(b, width, i, i + 1, n, m + i, n, 1.0 / m[i * n + i], width, 0);
    for (int p = 0; p < parts; ++p)
        for (int i = 0; i < n; ++i)
            memcpy(out + ((size_t)p * n + i) * n, b + (size_t)i * width + (size_t)p * n,
                   (size_t)n * sizeof(double));
    return SOA_OK;
}
