/* Batch lanes: SOA_LANES consecutive samples per instruction (GCC vector
 * extensions; 4 doubles fill an AVX2 register, 8 an AVX-512 one).  A lanes
 * core is the single-sample core's arithmetic with every per-sample value a
 * soa_vd: lane l belongs to the block's l-th sample, whose input rows are
 * SOA_STRIDE (= dof) doubles apart and whose answers SOA_OUT_STRIDE (the
 * answer's width: dof, or parts * dof * dof for the derivatives); both are
 * enums in each lanes core.  A core that fills a workspace (M and right-hand
 * sides) has one copy of it per lane, each lane's `size` doubles after the
 * last, and solves lane by lane.
 * Part of runtime.h (included there in order, after the status values). */
#if defined(__AVX512F__)
#define SOA_LANES 8
#else
#define SOA_LANES 4
#endif
typedef double soa_vd __attribute__((vector_size(8 * SOA_LANES)));

static inline soa_vd soa_gather(const double *first, int stride)
{
    soa_vd value;
    for (int l = 0; l < SOA_LANES; ++l)
        value[l] = first[l * stride];
    return value;
}

static inline void soa_scatter(double *first, int stride, soa_vd value)
{
    for (int l = 0; l < SOA_LANES; ++l)
        first[l * stride] = value[l];
}

#define SOA_GATHER(array, index) soa_gather(&(array)[index], SOA_STRIDE)

static inline soa_vd soa_broadcast(double x)
{
    soa_vd value;
    for (int l = 0; l < SOA_LANES; ++l)
        value[l] = x;
    return value;
}

/* sin and cos of all lanes per call from glibc's vector math library (libmvec: its AVX2
 * variants for 4 lanes, its AVX-512 ones for 8; build.py defines SOA_LIBMVEC and links
 * it where the toolchain has it).  Lane by lane, libm's sincos took a large share of the
 * instructions of a batch sample; these take a fraction of them (docs/performance.md,
 * "Design measurements").  Their results may differ from libm's in the last bits
 * (glibc bounds both to a few ulp). */
#if defined(SOA_LIBMVEC) && SOA_LANES == 4 && defined(__AVX2__)
#include <immintrin.h>
typedef __m256d soa_mvec;
#define SOA_MVEC_SIN _ZGVdN4v_sin
#define SOA_MVEC_COS _ZGVdN4v_cos
#elif defined(SOA_LIBMVEC) && SOA_LANES == 8 && defined(__AVX512F__)
#include <immintrin.h>
typedef __m512d soa_mvec;
#define SOA_MVEC_SIN _ZGVeN8v_sin
#define SOA_MVEC_COS _ZGVeN8v_cos
#endif

#if defined(SOA_MVEC_SIN)
soa_mvec SOA_MVEC_SIN(soa_mvec x);
soa_mvec SOA_MVEC_COS(soa_mvec x);

static inline soa_vd soa_vsin(soa_vd x)
{
    return (soa_vd)SOA_MVEC_SIN((soa_mvec)x);
}

static inline soa_vd soa_vcos(soa_vd x)
{
    return (soa_vd)SOA_MVEC_COS((soa_mvec)x);
}

static inline void soa_vsincos(soa_vd x, soa_vd *sine, soa_vd *cosine)
{
    *sine = soa_vsin(x);
    *cosine = soa_vcos(x);
}
#else
/* sin and cos lane by lane: the same libm results as the single-sample core. */
static inline soa_vd soa_vsin(soa_vd x)
{
    for (int l = 0; l < SOA_LANES; ++l)
        x[l] = sin(x[l]);
    return x;
}

static inline soa_vd soa_vcos(soa_vd x)
{
    for (int l = 0; l < SOA_LANES; ++l)
        x[l] = cos(x[l]);
    return x;
}

/* Both of one angle: one sincos per lane, as GCC makes of the single-sample core's
 * sin and cos of one angle (GCC does not fuse the two loops above, and one sincos
 * costs less than a sin and a cos). */
static inline void soa_vsincos(soa_vd x, soa_vd *sine, soa_vd *cosine)
{
    for (int l = 0; l < SOA_LANES; ++l) {
        double s, c;
        sincos(x[l], &s, &c);
        (*sine)[l] = s;
        (*cosine)[l] = c;
    }
}
#endif

/* Whether a > b in every lane (false for NaN, like the scalar guard). */
static inline int soa_all_greater(soa_vd a, soa_vd b)
{
    __typeof__(a > b) greater = a > b;
    for (int l = 0; l < SOA_LANES; ++l)
        if (!greater[l])
            return 0;
    return 1;
}
