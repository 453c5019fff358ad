/* What every generated kernel module includes: argument checks, the two
 * calling conventions seen from Python, and small dense solvers.
 *
 * A generated kernel is a "core" function over raw arrays:
 *
 *     int core(const double *const *inputs, const double *p, double *out);
 *
 * returning 0 (out holds the answer), 1 (an input is NaN/inf or beyond
 * MAX_MAGNITUDE), 2 (a singular hinge) or 3 (ill-conditioned task-space
 * compliance).  The Python-callable wrappers (runtime/calls.h, runtime/batches.h)
 * take float64 C-contiguous numpy arrays and return an array on success (a recycled
 * one: soa_new_answer), else the status as an int;
 * an argument of another type, dtype, layout or length is status 1 (the
 * caller converts or validates it and names the problem).  Batch wrappers
 * return 4 * (first failing sample) + its status, release the GIL and spread
 * large batches over the usable CPUs in contiguous shares.
 *
 * The parts, in runtime/ (each reads what the ones before it define):
 *   lanes.h           SOA_LANES consecutive samples per vector instruction (batch cores)
 *   arrays.h          which arrays a kernel reads (soa_array); answers recycled
 *   calls.h           one sample: soa_call, soa_call_parts, soa_call_wrenched
 *   batches.h         N samples over the CPUs: soa_call_batch
 *   linear_algebra.h  row eliminations over whole rows (soa_solve_parts)
 * runtime_c.h (beside this file, Python-free: an exported library carries it) holds the
 * status values, soa_check and the small solvers: Cholesky, the tree's LTL, a checked
 * 6x6 inverse.
 * The generic module (generic.c) includes this file too, for the checks, answers,
 * threads and solvers.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>
#include <math.h>
#include <string.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include "runtime_c.h"

typedef int (*soa_core)(const double *const *inputs, const double *p, double *out);

#define SOA_MAX_INPUTS 3
/* generator.MAX_WRENCHED_LINKS */
#define SOA_MAX_WRENCHED_LINKS 4

#include "runtime/lanes.h"
#include "runtime/arrays.h"
#include "runtime/calls.h"
#include "runtime/batches.h"
#include "runtime/linear_algebra.h"
