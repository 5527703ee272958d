/* compiler/check.h — the comparison of `nxcc check` (device outputs against
 * the reference evaluator, tolerance from the dtype), shared with the
 * in-process differential campaign (tests/fuzz/diff_inproc.c). */
#ifndef NX_CHECK_H
#define NX_CHECK_H

#include "compiler/report.h"
#include "ir/eval/eval.h"
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

/* The second, cancellation-aware bound of one output (docs/numerics.md
 * "Check tolerances"): an element outside the normal tolerance is accepted
 * when |d| <= NX_CHECK_CANCEL_C * eps * (sqrt(nterms) + sqrt(Lr)) * abssum[i],
 * abssum the sum of the absolute values of the terms of the sum that produced
 * it (Higham & Mary's probabilistic bound with lambda = 8, both sides). */
#define NX_CHECK_CANCEL_C 8
typedef struct nx_check_cancel {
	const nx_literal *abssum; /* per element of the output; NULL: no second bound */
	int64_t nterms;           /* terms per element of the sum */
	const char *op;           /* "reduce", "dot" or "scatter", for the message */
	/* An output computed through a narrower float, with --auto-cast, that
	 * the narrow type's rounding dominates (nx_check_noise): the RMS over
	 * the output of (evaluator's narrow program - f32 original), the
	 * rounding noise the narrow type puts into it; an element outside
	 * the normal tolerance is accepted when |d| <= NX_CHECK_NOISE_C * noise
	 * (docs/numerics.md "Outputs dominated by rounding noise"). 0: none. */
	double noise;
} nx_check_cancel;
/* lambda (2 / 0.425), lambda = 6: Hoeffding's bound on a sum of independent
 * rounding differences, each at most 2u, where one rounding error has the
 * standard deviation 0.425u (round to nearest, log-uniform mantissas) */
#define NX_CHECK_NOISE_LAMBDA 6
#define NX_CHECK_NOISE_C (NX_CHECK_NOISE_LAMBDA * 2 / 0.425)

/* nx_check_compare with cancel[k] (cancel may be NULL, and cancel[k].abssum
 * NULL) as output k's second bound; the line says when it was used. */
int nx_check_compare_cancel(FILE *out, const nx_literal *const *refs, nx_literal *const *outs, int nref, int64_t Lr,
                            const nx_type *through, nx_report_output *rows, const nx_check_cancel *cancel);

/* Whether output ref/got fails the normal tolerance (through as
 * nx_check_compare's through[k]: NX_F32 for the output's own type). */
bool nx_check_output_fails(const nx_literal *ref, const nx_literal *got, int64_t Lr, nx_type through);

/* compiler/check_cancel.c. The reduce with an add reducer (one operand), the
 * dot, the scatter with an add combiner (one operand), or the add or subtract
 * with a sum among its operands (one sum of all their terms; *nterms adds
 * up, an operand that is no sum counting 1) whose value i is, through
 * shape-only ops (convert from a float,
 * reshape, bitcast, copy, transpose, broadcast, slice, get-tuple-element of a
 * tuple, identity custom calls); *nterms: the terms of each of its sums.
 * NULL when i is not such a value. */
const nx_inst *nx_check_sum_source(const nx_inst *i, int64_t *nterms);
/* The same for array leaf `leaf` (nx_check_leaves' order) of m's entry result. */
const nx_inst *nx_check_output_sum(const nx_module *m, int leaf, int64_t *nterms);
/* Sum |terms| for every element of output leaf `leaf` of m (which must have a
 * sum source): evaluates a copy of m whose root is that output and whose sum
 * takes the absolute values of its operands. out[r]: replica r's literal, in a. */
nx_status nx_check_abs_sums(const nx_module *m, int leaf, const nx_eval_opts *eo, nx_literal *const *const *args,
                            nx_arena *a, nx_literal **out, nx_diag *d);

/* RMS over the elements of a - b (same shape); 0 when a non-finite value
 * is in either (no noise estimate). */
double nx_check_rms_diff(const nx_literal *a, const nx_literal *b);
/* The noise of nx_check_cancel: nx_check_rms_diff(ref, orig) when the narrow
 * program's output ref is dominated by its rounding, i.e. its relative L2
 * error against the f32 original orig exceeds bound (nx_check_autocast_bound:
 * more than the error growth auto-cast is allowed); 0 otherwise (no second
 * chance for an output the narrow type computes well). */
double nx_check_noise(const nx_literal *ref, const nx_literal *orig, double bound);

/* Relative L2 error ||got - ref|| / ||scale|| (scale NULL: ||ref||; sqrt of
 * the squared error when that norm is 0); 0 when every non-finite value
 * matches, infinity when one does not. */
double nx_check_rel_l2(const nx_literal *ref, const nx_literal *got, const nx_literal *scale);

/* --auto-cast: the bound on an output's relative L2 error against the f32
 * original, 32 unit roundoffs of the auto-cast type (type: the
 * --auto-cast-type name; NULL: bf16) and never below 2^-5. An output that
 * exceeds it and is a sum is measured against sum |terms| instead (the
 * scale of nx_check_rel_l2 from nx_check_abs_sums of the original module;
 * docs/numerics.md "Auto-cast error of a sum"). */
double nx_check_autocast_bound(const char *type);

#endif
