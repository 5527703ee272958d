/* compiler/check.h — the comparison of `nxcc check` (device outputs against
 * the reference evaluator, tolerance from the dtype), shared with the
 * in-process differential campaign (tests/fuzz/diff_inproc.c). */
#ifndef NX_CHECK_H
#define NX_CHECK_H

#include "compiler/report.h"
#include "ir/ir.h"

#include <stdio.h>

/* Longest reduction or contraction in any computation of m (the L of the
 * f32 tolerance). */
int64_t nx_check_longest_reduction(const nx_module *m);

/* The array leaves of l, depth first, into out[0..cap); *n counts them all. */
void nx_check_leaves(const nx_literal *l, const nx_literal **out, int *n, int cap);

/* For each array leaf of m's entry result (nx_check_leaves' order), into
 * out[0..cap): the narrowest float precision its computation passed through,
 * as NX_BF16 (bf16 and the 8-bit floats, or a reduce-precision to <= 7
 * mantissa bits), NX_F16 (<= 10) or NX_F32: the narrowest over every value
 * it depends on in the entry computation and everything those call (a
 * tuple value counts as its narrowest element). Returns the leaf count. */
int nx_check_through_types(const nx_module *m, nx_type *out, int cap);

/* Compares every output (integers and pred exact; f32 |d| <= 1e-5|ref| +
 * 4 eps32 Lr max|ref|; bf16 and 8-bit 2e-2; f16 2e-3), a float output with
 * the tolerance of through[k] when that is narrower than its own type
 * (through may be NULL: each output's own type); prints one line each to
 * out, fills rows (may be NULL); returns the number that differ. */
int nx_check_compare(FILE *out, const nx_literal *const *refs, nx_literal *const *outs, int nref, int64_t Lr,
                     const nx_type *through, nx_report_output *rows);

#endif
