/* ir/npy.h — NumPy .npy files (format versions 1, 2 and 3), little-endian,
 * C order. bf16 is stored as '<u2' raw words and the f8/f4 types as '|u1'
 * raw bytes, so numpy.load opens every file; see docs/numerics.md. */
#ifndef NX_NPY_H
#define NX_NPY_H

#include "ir/ir.h"

/* The descr string nxcc writes for t ("<f4", "|b1", "<u2" for bf16...). */
const char *nx_npy_descr(nx_type t);
/* Serializes an array literal; malloc'd, *len set. */
void *nx_npy_write(const nx_literal *l, size_t *len);
/* Parses .npy bytes into a literal in arena a. want (optional) is the type
 * expected: it decides how raw '<u2' / '|u1' data is read (bf16, f8) and
 * a mismatch is an error. */
nx_literal *nx_npy_read(nx_arena *a, const void *data, size_t len, nx_type want, nx_diag *d);
nx_status nx_npy_save(const char *path, const nx_literal *l, nx_diag *d);
nx_literal *nx_npy_load(nx_arena *a, const char *path, nx_type want, nx_diag *d);

/* ir/eval/random.c: deterministic pseudo-random data for parameter param_index of
 * a module, from seed (splitmix64 / xoshiro-style stream keyed by both, so
 * the same seed gives the same data in every nxcc command). Floats (and
 * complex parts) uniform in [-1, 1), rounded to the type; integers uniform
 * in [0, min(dim, 8)) where dim is the smallest dimension of the shape (so
 * they are valid indices where possible, and at least {0}); pred fair coin.
 * Tuples are filled leaf by leaf. */
nx_literal *nx_random_literal(nx_arena *a, nx_shape *shape, uint64_t seed, int64_t param_index);

/* The value range of a random float parameter. NONNEG maps the same draw u
 * in [-1, 1) to (u + 1) / 2 in [0, 1); integers and pred are unchanged. */
typedef enum nx_random_domain { NX_RANDOM_SIGNED, NX_RANDOM_NONNEG } nx_random_domain;

nx_literal *nx_random_literal_in(nx_arena *a, nx_shape *shape, uint64_t seed, int64_t param_index,
                                 nx_random_domain dom);
/* dom[k] for each parameter k of entry: NONNEG when the parameter reaches an
 * operand that must not be negative (sqrt, rsqrt, log, log-plus-one, power's
 * base, divide's divisor) only through ops that keep non-negative inputs non-negative (add,
 * multiply except x*x, divide, broadcast, reshape, select's branches, ...,
 * through call/fusion bodies too), e.g. Adam's second moment and beta2. Every
 * nxcc command that makes random inputs (eval, run, check) uses
 * nx_random_literal_in(..., dom[k]) so that one seed means one data set. */
void nx_random_domains(const nx_comp *entry, nx_random_domain *dom);
/* args[k] for each parameter k of entry, with domains dom[k]: the array
 * leaves of all parameters are numbered in order (a tuple parameter counts
 * one per leaf, as the .neff takes it after flatten-params) and leaf f gets
 * nx_random_literal_in(..., f, ...)'s data: without tuple parameters,
 * args[k] is nx_random_literal_in(..., k, dom[k]). */
void nx_random_args(nx_arena *a, const nx_comp *entry, uint64_t seed, const nx_random_domain *dom,
                    nx_literal **args);

#endif
