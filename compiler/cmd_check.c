/* compiler/cmd_check.c — `nxcc check`: compile, run on the simulator, evaluate
 * the original module with the reference evaluator on the same inputs and
 * compare every output with a dtype-aware tolerance. */
#include "compiler/check.h"
#include "compiler/cli.h"
#include "compiler/custom_op.h"
#include "compiler/compile_cached.h"
#include "compiler/report.h"
#include "compiler/rundev.h"

#include "ir/eval/eval.h"
#include "ir/map.h"
#include "ir/npy.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static void help(void)
{
	printf("usage: nxcc check FILE [compile flags] [--random-inputs SEED] [--ranks N] [--report report.html]\n\n"
	       "Compiles FILE (flags as nxcc compile; no --output needed), runs the .neff on\n"
	       "the simulator with random inputs (SEED, default 1; the generator of nxcc\n"
	       "eval), evaluates the original module with the reference evaluator on the\n"
	       "same inputs and compares each output. Tolerance: integers and pred exact;\n"
	       "f32 |d| <= 1e-5|ref| + 4 eps32 L max|ref| (L: longest reduction or\n"
	       "contraction, a convolution's window x input features); bf16 results\n"
	       "|d| <= 2e-2|ref| + 2e-2 max|ref|; f16 2e-3. A float output computed through\n"
	       "a narrower float (bf16 intermediates, reduce-precision) gets that type's\n"
	       "tolerance (docs/numerics.md \"Check tolerances\"). An output outside it that\n"
	       "is a sum (an add reduce, a dot, an add of sums, through shape-only ops) is\n"
	       "accepted element by element within 8 eps (sqrt n + sqrt L) sum|terms| (n\n"
	       "terms; sum|terms| from the evaluator): the rounding of sums whose terms cancel.\n"
	       "With --auto-cast, an output computed through the narrow type whose narrow\n"
	       "program is more than the bound below off the f32 original is accepted\n"
	       "element by element within 28.2 x the RMS of (the narrow program - the f32\n"
	       "original): the rounding noise of outputs the narrow type dominates.\n"
	       "With --auto-cast, the device must match the evaluator run on the module the\n"
	       "passes produced (the same narrow-type program) with those tolerances, and\n"
	       "each output's relative L2 error against the original f32 module must stay\n"
	       "within 32 unit roundoffs of the auto-cast type (bf16: 32 x 2^-8 = 0.125;\n"
	       "fp16/tf32: 2^-5, the floor for flipped ReLU/max decisions; fp8_e4m3:\n"
	       "32 x 2^-4, fp8_e5m2: 32 x 2^-3); one over it that is a sum of the original\n"
	       "(as above) is measured against sum|terms| instead: ||got - ref|| <= bound x\n"
	       "||sum|terms|||, the error of a sum whose terms each stay within the bound (see\n"
	       "docs/numerics.md). Prints the worst error per output; exit 1 on a mismatch.\n"
	       "--ranks N (default: the module's replica count) runs N simulated ranks with\n"
	       "the same inputs and compares rank r's outputs with the evaluator's replica r.\n"
	       "--report writes the HTML report of nxcc run --report (rank 0) with the\n"
	       "per-output error table added, also when the check fails (docs/looking.md).\n");
}

int64_t nx_check_longest_reduction(const nx_module *m)
{
	int64_t L = 1;
	for (int c = 0; c < m->ncomps; c++)
		for (int k = 0; k < m->comps[c]->ninsts; k++) {
			const nx_inst *i = m->comps[c]->insts[k];
			int64_t r = 1;
			if (i->op == NX_OP_DOT)
				for (int j = 0; j < i->a.dot.lhs_contracting.n; j++)
					r *= i->operands[0]->shape->dims[i->a.dot.lhs_contracting.v[j]];
			else if (i->op == NX_OP_CONVOLUTION && i->noperands == 2 && i->a.conv.present &&
			         nx_shape_is_array(i->operands[1]->shape)) {
				/* window positions x input features per group */
				r = i->operands[1]->shape->dims[i->a.conv.k_in];
				for (int j = 0; j < i->a.window.ndims; j++)
					r *= i->a.window.dims[j].size;
			} else if (i->op == NX_OP_REDUCE && i->noperands >= 1 && nx_shape_is_array(i->operands[0]->shape))
				for (int j = 0; j < i->a.dimensions.n; j++)
					r *= i->operands[0]->shape->dims[i->a.dimensions.v[j]];
			if (r > L)
				L = r;
		}
	return L;
}

void nx_check_leaves(const nx_literal *l, const nx_literal **out, int *n, int cap)
{
	if (l->shape->ntuple || nx_shape_is_tuple(l->shape)) {
		for (int k = 0; k < l->ntuple; k++)
			nx_check_leaves(l->tuple[k], out, n, cap);
		return;
	}
	if (*n < cap)
		out[*n] = l;
	(*n)++;
}

/* 32 unit roundoffs of the auto-cast type (error growth through a training
 * step), and never below 2^-5: a ReLU or max decision that flips under any
 * narrowing moves a gradient element by O(1) whatever the precision (the
 * tf32 mlp__mlp_single_case_2 weight gradient: 0.0205, from 55 of 10,080
 * elements). */
double nx_check_autocast_bound(const char *type)
{
	if (!type || !strcmp(type, "bf16"))
		return 32 * ldexp(1, -8);
	if (!strcmp(type, "fp16") || !strcmp(type, "tf32"))
		return ldexp(1, -5);
	if (!strcmp(type, "fp8_e4m3"))
		return 32 * ldexp(1, -4);
	return 32 * ldexp(1, -3);
}

/* Tolerance tiers: 0 f32 (and wider), 1 f16 (10 mantissa bits), 2 bf16 and
 * the 8-bit floats (7 or fewer). Integers and pred do not narrow a float. */
static int tier_of_type(nx_type t)
{
	if (!nx_type_is_float(t))
		return 0;
	if (t == NX_BF16 || nx_type_bits(t) <= 8)
		return 2;
	return t == NX_F16 ? 1 : 0;
}

static int tier_of_shape(const nx_shape *s)
{
	int t = 0;
	if (nx_shape_is_tuple(s)) {
		for (int k = 0; k < s->ntuple; k++) {
			int u = tier_of_shape(s->tuple[k]);
			t = u > t ? u : t;
		}
		return t;
	}
	return tier_of_type(s->type);
}

/* An instruction's own tier: its shape's, or a reduce-precision's mantissa. */
static int tier_own(const nx_inst *i)
{
	int t = tier_of_shape(i->shape);
	if (i->op == NX_OP_REDUCE_PRECISION) {
		int u = i->a.mantissa_bits <= 7 ? 2 : i->a.mantissa_bits <= 10 ? 1 : 0;
		t = u > t ? u : t;
	}
	return t;
}

static int tier_of_comp(const nx_comp *c, nx_ptrmap *memo);

static int tier_of_called(const nx_inst *i, nx_ptrmap *memo)
{
	int t = 0;
	for (int k = 0; k < i->ncalled; k++) {
		int u = i->called[k] ? tier_of_comp(i->called[k], memo) : 0;
		t = u > t ? u : t;
	}
	return t;
}

/* The narrowest tier anywhere in c or what it calls (memoized). */
static int tier_of_comp(const nx_comp *c, nx_ptrmap *memo)
{
	intptr_t t = nx_ptrmap_get(memo, c, -1);
	if (t >= 0)
		return (int)t;
	nx_ptrmap_put(memo, c, 0); /* a call cycle (invalid HLO) stops here */
	t = 0;
	for (int k = 0; k < c->ninsts; k++) {
		int u = tier_own(c->insts[k]), v = tier_of_called(c->insts[k], memo);
		u = v > u ? v : u;
		t = u > t ? u : t;
	}
	nx_ptrmap_put(memo, c, t);
	return (int)t;
}

/* Output leaves depth first (nx_check_leaves' order): a tuple instruction's
 * operands each with their own tier, any other tuple value's leaves with its
 * tier (a tuple counts as its narrowest element). */
static void tier_leaves(const nx_inst *i, const nx_shape *s, int tier, const nx_ptrmap *at, nx_type *out, int *n,
                        int cap)
{
	static const nx_type ty[3] = {NX_F32, NX_F16, NX_BF16};
	if (i && i->op == NX_OP_TUPLE && nx_shape_is_tuple(s)) {
		for (int k = 0; k < i->noperands; k++) {
			const nx_inst *o = i->operands[k];
			tier_leaves(o, o->shape, (int)nx_ptrmap_get(at, o, 0), at, out, n, cap);
		}
		return;
	}
	if (nx_shape_is_tuple(s)) {
		for (int k = 0; k < s->ntuple; k++)
			tier_leaves(NULL, s->tuple[k], tier, at, out, n, cap);
		return;
	}
	if (*n < cap)
		out[*n] = ty[tier];
	(*n)++;
}

int nx_check_through_types(const nx_module *m, nx_type *out, int cap)
{
	const nx_comp *e = m->entry;
	nx_ptrmap memo = {0}, at = {0};
	int n = 0;
	if (!e || !e->root)
		return 0;
	for (int k = 0; k < e->ninsts; k++) {
		const nx_inst *i = e->insts[k];
		int t = tier_own(i), u = tier_of_called(i, &memo);
		t = u > t ? u : t;
		for (int j = 0; j < i->noperands; j++) {
			u = (int)nx_ptrmap_get(&at, i->operands[j], 0);
			t = u > t ? u : t;
		}
		nx_ptrmap_put(&at, i, t);
	}
	tier_leaves(e->root, e->root->shape, (int)nx_ptrmap_get(&at, e->root, 0), &at, out, &n, cap);
	nx_ptrmap_free(&memo);
	nx_ptrmap_free(&at);
	return n;
}

/* Unit roundoff x 2 (the machine epsilon) of a tolerance type. */
static double eps_of(nx_type t)
{
	if (t == NX_BF16)
		return ldexp(1, -7);
	if (t == NX_F16)
		return ldexp(1, -10);
	if (t == NX_F64)
		return DBL_EPSILON;
	return FLT_EPSILON;
}

/* Compares output k (ref r, got g); prints its line to out when out is not
 * NULL, fills row when not NULL. Returns 1 when it differs. */
static int compare_one(FILE *out, int k, const nx_literal *r, const nx_literal *g, int64_t Lr, nx_type through,
                       nx_report_output *row, const nx_check_cancel *cancel)
{
	nx_type t = r->shape->type;
	int64_t ne = nx_shape_elems(r->shape);
	bool exact = !nx_type_is_float(t);
	/* a float output computed through a narrower float is held to that
	 * type's tolerance (docs/numerics.md) */
	nx_type tt = t;
	if (!exact && tier_of_type(through) > tier_of_type(t))
		tt = through;
	double rtol, atolf;
	if (tt == NX_BF16 || nx_type_bits(tt) == 8)
		rtol = 2e-2, atolf = 2e-2;
	else if (tt == NX_F16)
		rtol = 2e-3, atolf = 2e-3;
	else
		rtol = 1e-5, atolf = 4 * FLT_EPSILON * (double)Lr;
	const nx_literal *abssum = cancel && !exact ? cancel->abssum : NULL;
	double noise = cancel && !exact ? cancel->noise : 0;
	/* the cancellation bound's factor: c eps (sqrt n + sqrt L) (docs/numerics.md) */
	double cfac = abssum ? NX_CHECK_CANCEL_C * eps_of(tt) * (sqrt((double)cancel->nterms) + sqrt((double)Lr)) : 0;
	double maxabs = 0;
	for (int64_t i = 0; i < ne; i++) {
		double x = fabs(nx_lit_get_f64(r, i));
		if (isfinite(x) && x > maxabs)
			maxabs = x;
	}
	double worst = 0, worst_rel = 0, worst_ratio = 0, worst_nratio = 0;
	int64_t where = -1, nbad = 0, ncancel = 0, nnoise = 0;
	for (int64_t i = 0; i < ne; i++) {
		double x = nx_lit_get_f64(r, i), y = nx_lit_get_f64(g, i);
		bool ok;
		double diff = fabs(x - y);
		if (isnan(x) || isnan(y))
			ok = isnan(x) && isnan(y), diff = ok ? 0 : INFINITY;
		else if (isinf(x) || isinf(y))
			ok = x == y, diff = ok ? 0 : INFINITY;
		else if (exact)
			ok = x == y;
		else {
			ok = diff <= rtol * fabs(x) + atolf * maxabs;
			if (!ok && abssum) {
				double b = cfac * fabs(nx_lit_get_f64(abssum, i));
				ok = diff <= b;
				ncancel += ok;
				if (ok && b > 0 && diff / b > worst_ratio)
					worst_ratio = diff / b;
			}
			if (!ok && noise > 0) {
				double b = NX_CHECK_NOISE_C * noise;
				ok = diff <= b;
				nnoise += ok;
				if (ok && diff / b > worst_nratio)
					worst_nratio = diff / b;
			}
		}
		if (!ok)
			nbad++;
		if (diff > worst || (where < 0 && !ok)) {
			worst = diff;
			worst_rel = x != 0 ? diff / fabs(x) : diff;
			where = i;
		}
	}
	char shp[256];
	nx_shape_print(shp, sizeof shp, r->shape, false);
	char via[512] = "";
	int w = 0;
	if (exact)
		w = snprintf(via, sizeof via, " (exact)");
	else if (tt != t)
		w = snprintf(via, sizeof via, " (computed through %s: its tolerance)", nx_type_name(tt));
	if (ncancel && w >= 0 && (size_t)w < sizeof via)
		snprintf(via + w, sizeof via - (size_t)w,
		         " (%lld elements by the cancellation bound: %s of %lld terms, |d| <= %d eps (sqrt n + sqrt L) sum|terms|, "
		         "at most %.2g of it)",
		         (long long)ncancel, cancel->op, (long long)cancel->nterms, NX_CHECK_CANCEL_C, worst_ratio);
	if (nnoise && (w = (int)strlen(via)) >= 0 && (size_t)w < sizeof via)
		snprintf(via + w, sizeof via - (size_t)w,
		         " (%lld elements by the rounding-noise bound: |d| <= %.1f x %.3g, the RMS of the %s program's "
		         "distance from the f32 original; at most %.2g of it)",
		         (long long)nnoise, NX_CHECK_NOISE_C, noise, nx_type_name(tt), worst_nratio);
	if (out)
		fprintf(out, "out%d %s: %s  worst |diff| %.3g (rel %.3g) at %lld%s\n", k, shp, nbad ? "MISMATCH" : "ok",
		        worst, worst_rel, (long long)where, via);
	if (row) {
		snprintf(row->name, sizeof row->name, "out%d", k);
		snprintf(row->shape, sizeof row->shape, "%s", shp);
		row->ok = !nbad, row->exact = exact, row->worst = worst, row->worst_rel = worst_rel;
		row->where = where, row->nbad = nbad, row->n = ne;
		row->expected = where >= 0 ? nx_lit_get_f64(r, where) : 0;
		row->got = where >= 0 ? nx_lit_get_f64(g, where) : 0;
	}
	if (nbad && out)
		fprintf(out, "  %lld of %lld elements outside tolerance; at %lld: expected %.9g, got %.9g\n", (long long)nbad,
		        (long long)ne, (long long)where, nx_lit_get_f64(r, where), nx_lit_get_f64(g, where));
	return nbad ? 1 : 0;
}

bool nx_check_output_fails(const nx_literal *ref, const nx_literal *got, int64_t Lr, nx_type through)
{
	return compare_one(NULL, 0, ref, got, Lr, through, NULL, NULL) != 0;
}

int nx_check_compare_cancel(FILE *out, const nx_literal *const *refs, nx_literal *const *outs, int nref, int64_t Lr,
                            const nx_type *through, nx_report_output *rows, const nx_check_cancel *cancel)
{
	int bad = 0;
	for (int k = 0; k < nref; k++)
		bad += compare_one(out, k, refs[k], outs[k], Lr, through ? through[k] : NX_F32, rows ? &rows[k] : NULL,
		                   cancel ? &cancel[k] : NULL);
	return bad;
}

int nx_check_compare(FILE *out, const nx_literal *const *refs, nx_literal *const *outs, int nref, int64_t Lr,
                     const nx_type *through, nx_report_output *rows)
{
	return nx_check_compare_cancel(out, refs, outs, nref, Lr, through, rows, NULL);
}

static const char *sum_name(const nx_inst *s)
{
	return s->op == NX_OP_DOT ? "dot" : s->op == NX_OP_SCATTER ? "scatter" : s->op == NX_OP_REDUCE ? "reduce" : "sum of sums";
}

/* --auto-cast (docs/numerics.md "Auto-cast error of a sum"):
 * output k of every rank against the f32 original, relative L2 within
 * nx_check_autocast_bound; one that exceeds it on some rank and is a sum of
 * the original module m is measured against sum |terms| of that sum (the
 * original's, from one more evaluation). Prints one line per output and
 * rank; returns how many fail. */
static int autocast_compare(const nx_module *m, nx_literal **oref, nx_literal ***outs, int nref, int nranks,
                            int rank, double bound, const nx_eval_opts *eo, nx_literal *const *const *argv,
                            nx_arena *a, nx_literal ***abss)
{
	static nx_literal *none[1]; /* abss[k] tried, no scale */
	const nx_literal **orefs = nx_arena_alloc(a, sizeof *orefs * (size_t)(nref + 1) * (size_t)nranks);
	for (int r = 0; r < nranks; r++) {
		int n = 0;
		nx_check_leaves(oref[r], orefs + (size_t)r * (size_t)nref, &n, nref);
		if (n != nref)
			return nref; /* not the same outputs: nothing compares */
	}
	int bad = 0;
	for (int k = 0; k < nref; k++) {
		double *rel = nx_arena_alloc(a, sizeof *rel * (size_t)nranks);
		bool over = false;
		for (int r = 0; r < nranks; r++) {
			rel[r] = nx_check_rel_l2(orefs[(size_t)r * (size_t)nref + (size_t)k], outs[r][k], NULL);
			over |= !(rel[r] <= bound);
		}
		int64_t nterms = 0;
		const nx_inst *s = over && nx_type_is_float(outs[0][k]->shape->type) ? nx_check_output_sum(m, k, &nterms)
		                                                                      : NULL;
		if (s && !abss[k]) { /* once for every rank */
			nx_diag d = {0};
			abss[k] = nx_arena_alloc(a, sizeof **abss * (size_t)nranks);
			if (nx_check_abs_sums(m, k, eo, argv, a, abss[k], &d) != NX_OK) {
				printf("out%d: no sum|terms| of the original (%s)\n", k,
				       d.msg ? d.msg : "evaluation failed");
				abss[k] = none;
			}
			nx_diag_clear(&d);
		}
		nx_literal **abs = s && abss[k] != none ? abss[k] : NULL;
		int r = rank;
		const nx_literal *ref = orefs[(size_t)r * (size_t)nref + (size_t)k];
		bool ok = rel[r] <= bound;
		printf("out%d vs f32 original: relative L2 error %.3g (bound %.3g)", k, rel[r], bound);
		if (!ok && abs) {
			double rs = nx_check_rel_l2(ref, outs[r][k], abs[r]);
			ok = rs <= bound;
			printf(", against sum|terms| of its %s (%lld terms) %.3g", sum_name(s), (long long)nterms, rs);
		}
		printf(" %s\n", ok ? "ok" : "TOO LARGE");
		bad += !ok;
	}
	return bad;
}

/* The cancellation bounds (docs/numerics.md "Check tolerances"): for each
 * float output that fails the normal tolerance on some rank and is a sum
 * (nx_check_output_sum) of rm, the module the references came from, sum
 * |terms| per element from one more evaluation; with --auto-cast (oref: the
 * f32 original's results), for one computed through a narrower float, its
 * rounding noise (nx_check_noise against acbound). cancel[r * nref + k]; NULL
 * when no output needs one. A copy that cannot be evaluated leaves that
 * output to the normal tolerance, with a note. */
static nx_check_cancel *cancel_bounds(const nx_module *rm, nx_literal **ref, nx_literal **oref, double acbound,
                                      nx_literal ***outs, int nref, int nranks, int64_t Lr, const nx_type *through,
                                      const nx_eval_opts *eo, nx_literal *const *const *argv, nx_arena *a)
{
	nx_check_cancel *cancel = NULL;
	const nx_literal **refs = nx_arena_alloc(a, sizeof *refs * (size_t)(nref + 1) * (size_t)nranks);
	const nx_literal **orefs = nx_arena_alloc(a, sizeof *orefs * (size_t)(nref + 1) * (size_t)nranks);
	for (int r = 0; r < nranks; r++) {
		int n = 0, no = 0;
		nx_check_leaves(ref[r], refs + (size_t)r * (size_t)nref, &n, nref);
		if (oref)
			nx_check_leaves(oref[r], orefs + (size_t)r * (size_t)nref, &no, nref);
		if (oref && no != nref)
			oref = NULL; /* not the same outputs */
	}
	for (int k = 0; k < nref; k++) {
		bool fails = false;
		int64_t nterms = 0;
		for (int r = 0; r < nranks && !fails; r++)
			fails = nx_check_output_fails(refs[(size_t)r * (size_t)nref + (size_t)k], outs[r][k], Lr,
			                              through ? through[k] : NX_F32);
		if (fails && oref && through && nx_type_is_float(outs[0][k]->shape->type) &&
		    tier_of_type(through[k]) > tier_of_type(outs[0][k]->shape->type)) {
			/* computed through a narrower float: the rounding noise it
			 * carries, from the f32 original (docs/numerics.md) */
			if (!cancel) {
				cancel = nx_arena_alloc(a, sizeof *cancel * (size_t)nref * (size_t)nranks);
				memset(cancel, 0, sizeof *cancel * (size_t)nref * (size_t)nranks);
			}
			for (int r = 0; r < nranks; r++)
				cancel[(size_t)r * (size_t)nref + (size_t)k].noise =
					nx_check_noise(refs[(size_t)r * (size_t)nref + (size_t)k],
					               orefs[(size_t)r * (size_t)nref + (size_t)k], acbound);
		}
		const nx_inst *s = fails && nx_type_is_float(outs[0][k]->shape->type) ? nx_check_output_sum(rm, k, &nterms)
		                                                                      : NULL;
		if (!s)
			continue;
		nx_literal **abs = nx_arena_alloc(a, sizeof *abs * (size_t)nranks);
		nx_diag d = {0};
		if (nx_check_abs_sums(rm, k, eo, argv, a, abs, &d) != NX_OK) {
			printf("out%d: no cancellation bound (%s)\n", k, d.msg ? d.msg : "evaluation failed");
			nx_diag_clear(&d);
			continue;
		}
		if (!cancel) {
			cancel = nx_arena_alloc(a, sizeof *cancel * (size_t)nref * (size_t)nranks);
			memset(cancel, 0, sizeof *cancel * (size_t)nref * (size_t)nranks);
		}
		for (int r = 0; r < nranks; r++) {
			nx_check_cancel *c = &cancel[(size_t)r * (size_t)nref + (size_t)k];
			c->abssum = abs[r], c->nterms = nterms, c->op = sum_name(s);
		}
	}
	return cancel;
}

static int check(const char *file, const nx_compile_flags *f, uint64_t seed, int nranks, const char *report,
                 nx_log *log)
{
	nx_rt_profile *prof = NULL;
	nx_report_output *rows = NULL;
	nx_compile_opts o;
	nx_pass_opts po;
	nx_compile_opts_from_flags(f, &o, &po, log);
	o.replicas = nranks;
	nx_diag d = {0};
	nx_arena a;
	nx_arena_init(&a);
	nx_compile_result cr = {0};
	nx_neff *n = NULL;
	nx_module *m = NULL;
	int rc = 0;
	bool autocast = o.auto_cast && strcmp(o.auto_cast, "none") != 0;
	if (nx_compile_logged(file, f, &o, log, autocast, &cr, &d) != NX_OK)
		goto fail;
	nx_module *opt = cr.module; /* the narrow-type program, with --auto-cast */
	n = nx_rt_load_bytes(cr.neff, cr.len, file, NULL, &d);
	m = nx_read_file(file, &d);
	nx_cli_warn_elided(m);
	if (!n || !m || nx_verify_module(m, &d) != NX_OK)
		goto fail;
	const nx_comp *e = m->entry;
	nx_literal **args = nx_arena_alloc(&a, sizeof *args * (size_t)(e->nparams + 1));
	nx_random_domain *dom = nx_arena_alloc(&a, sizeof *dom * (size_t)(e->nparams + 1));
	nx_random_domains(e, dom);
	nx_random_args(&a, e, seed, dom, args);
	/* the device takes the array leaves of the parameters in order (a tuple
	 * parameter is one input per leaf: passes/flatten_params.c) */
	const nx_literal *flat[4096];
	int nflat = 0;
	for (int k = 0; k < e->nparams && nflat <= 4096; k++)
		nx_check_leaves(args[k], flat, &nflat, 4096);
	if (nflat != n->ninputs || nflat > 4096) {
		nx_diag_set(&d, NX_ERR_INTERNAL, file, 0, 0, "the .neff has %d inputs, the module's parameters %d arrays",
		            n->ninputs, nflat);
		goto fail;
	}
	nx_literal **dargs = nx_arena_alloc(&a, sizeof *dargs * (size_t)(nflat + 1));
	for (int k = 0; k < nflat; k++)
		dargs[k] = (nx_literal *)flat[k];
	if (!nranks)
		nranks = n->nreplicas;
	nx_literal *const **argv_r = nx_arena_alloc(&a, sizeof *argv_r * (size_t)nranks);
	nx_literal *const **dargv_r = nx_arena_alloc(&a, sizeof *dargv_r * (size_t)nranks);
	for (int r = 0; r < nranks; r++)
		argv_r[r] = args, dargv_r[r] = dargs;
	nx_literal **ref = nx_arena_alloc(&a, sizeof *ref * (size_t)nranks),
	           **oref = nx_arena_alloc(&a, sizeof *oref * (size_t)nranks);
	nx_eval_opts eo = {.replicas = nranks, .rng_seed = seed};
	if (nx_eval_module(m, &eo, e->nparams, argv_r, &a, opt ? oref : ref, &d) != NX_OK)
		goto fail;
	if (opt && nx_eval_module(opt, &eo, opt->entry->nparams, opt->entry->nparams == e->nparams ? argv_r : dargv_r,
	                          &a, ref, &d) != NX_OK)
		goto fail;
	const nx_literal *refs[4096];
	int nref = 0;
	nx_check_leaves(ref[0], refs, &nref, 4096);
	if (nref != n->noutputs || nref > 4096) {
		nx_diag_set(&d, NX_ERR_INTERNAL, file, 0, 0, "the .neff has %d outputs, the module %d", n->noutputs, nref);
		goto fail;
	}
	/* the narrowest float each output was computed through, in the program
	 * the device ran (the auto-cast module, else the original) */
	nx_type *through = nx_arena_alloc(&a, sizeof *through * (size_t)(nref + 1));
	if (nx_check_through_types(opt ? opt : m, through, nref) != nref)
		through = NULL;
	nx_type *types = nx_arena_alloc(&a, sizeof *types * (size_t)(nref + 1));
	for (int k = 0; k < nref; k++)
		types[k] = refs[k]->shape->type;
	nx_literal ***outs = nx_arena_alloc(&a, sizeof *outs * (size_t)nranks);
	for (int r = 0; r < nranks; r++)
		outs[r] = nx_arena_alloc(&a, sizeof **outs * (size_t)(nref + 1));
	nx_rt_opts ro = nx_rt_opts_default();
	if (report) {
		ro.profile_out = &prof;
		rows = nx_arena_alloc(&a, sizeof *rows * (size_t)(nref + 1));
	}
	nx_rt_stats *st = nx_arena_alloc(&a, sizeof *st * (size_t)nranks);
	if (nx_rundev_ranks(n, nranks, (nx_literal *const *const *)dargv_r, types, &a, outs, &ro, st, &d) != NX_OK)
		goto fail;
	int64_t Lr = nx_check_longest_reduction(m);
	nx_check_cancel *cancel = cancel_bounds(opt ? opt : m, ref, opt ? oref : NULL,
	                                        nx_check_autocast_bound(o.auto_cast_type), outs, nref, nranks, Lr, through, &eo,
	                                        !opt || opt->entry->nparams == e->nparams ? argv_r : dargv_r, &a);
	int bad = 0;
	nx_literal ***abss = nx_arena_alloc(&a, sizeof *abss * (size_t)(nref + 1));
	memset(abss, 0, sizeof *abss * (size_t)(nref + 1));
	for (int r = 0; r < nranks; r++) {
		if (nranks > 1)
			printf("rank %d:\n", r);
		nref = 0;
		nx_check_leaves(ref[r], refs, &nref, 4096);
		bad += nx_check_compare_cancel(stdout, refs, outs[r], nref, Lr, through, r == 0 ? rows : NULL,
		                               cancel ? cancel + (size_t)r * (size_t)nref : NULL);
		/* Auto-cast: the device ran the narrow-type program; the original f32
		 * module measures how far auto-cast moved the results. */
		if (opt)
			bad += autocast_compare(m, oref, outs, nref, nranks, r, nx_check_autocast_bound(o.auto_cast_type), &eo,
			                        argv_r, &a, abss);
	}
	nx_rundev_print_ranks(n, nranks, st);
	if (bad) {
		printf("check: FAILED (%d of %d outputs differ)\n", bad, nref * nranks);
		rc = NX_EXIT_USER;
	} else {
		printf("check: ok (%d outputs%s)\n", nref, nranks > 1 ? " on every rank" : "");
	}
	if (report) {
		nx_report rep = {.n = n, .prof = prof, .source = file, .hlo_path = file, .outputs = rows,
		                 .noutputs = nref, .verdict = bad ? "FAILED" : "ok"};
		if (nx_report_write(report, &rep, &d) != NX_OK)
			goto fail;
	}
	goto done;
fail:
	rc = nx_log_report(log, &d);
done:
	nx_prof_free(prof);
	nx_diag_clear(&d);
	nx_neff_free(n);
	nx_module_free(m);
	nx_module_free(cr.module);
	free(cr.neff);
	nx_arena_free(&a);
	return rc;
}

int nx_cmd_check(int argc, char **argv)
{
	/* check's own flags come out first; the rest are nxcc compile's
	 * (compiler/flags.c), NEURON_CC_FLAGS merged the same way */
	char **rest = calloc((size_t)argc + 1, sizeof(char *));
	if (!rest)
		abort();
	int nrest = 0, nranks = 0;
	const char *v, *report = NULL;
	uint64_t seed = 1;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			help();
			free(rest);
			return 0;
		}
		int r = nx_cli_flag(argc, argv, &i, "--ranks", &v);
		if (r > 0) {
			nranks = atoi(v);
			if (nranks < 1 || nranks > 64)
				r = -1, nx_cli_usage_error("check", "--ranks must be 1 to 64");
		} else if (r == 0) {
			r = nx_cli_flag(argc, argv, &i, "--random-inputs", &v);
			if (r > 0)
				seed = strtoull(v, NULL, 0);
			else if (r == 0 && (r = nx_cli_flag(argc, argv, &i, "--report", &v)) > 0)
				report = v;
		}
		if (r < 0) {
			free(rest);
			return NX_EXIT_USER;
		}
		if (r == 0)
			rest[nrest++] = argv[i];
	}
	nx_compile_flags f;
	nx_diag fd = {0};
	nx_log log = {0};
	int rc;
	if (nx_flags_parse(nrest, rest, getenv("NEURON_CC_FLAGS"), &f, &fd) != NX_OK)
		rc = nx_cli_report(&fd);
	else if (f.n_inputs == 0)
		rc = nx_cli_usage_error("check", "no input file (see nxcc check --help)");
	else if (f.n_inputs > 1)
		rc = nx_cli_usage_error("check", "more than one input file ('%s', '%s')", f.inputs[0], f.inputs[1]);
	else if (nx_log_open(&log, &f, &fd) != NX_OK)
		rc = nx_cli_report(&fd);
	else {
		nx_log_flags(&log, "check", argc - 1, argv + 1, &f);
		rc = nx_custom_ops_setup(&f, &log); /* --custom-op (GpSimd kernels) */
		if (rc == 0)
			rc = check(f.inputs[0], &f, seed, nranks, report, &log);
		nx_logf(&log, rc ? NX_LOG_ERROR : NX_LOG_INFO, "check %s (exit status %d)", rc ? "FAILED" : "PASSED", rc);
	}
	nx_log_close(&log);
	nx_diag_clear(&fd);
	nx_flags_free(&f);
	free(rest);
	return rc;
}
