/* compiler/check_cancel.c — nxcc check's cancellation-aware bounds: for an
 * output that fails the normal tolerance and is a sum (a reduce with an add
 * reducer, a dot, a scatter that adds, or an add of sums) seen through
 * shape-only ops, sum |terms| per element from the evaluator, to bound the
 * rounding of any summation order, and with --auto-cast the error of the
 * narrow-type program against the f32 original; the RMS noise of a narrow
 * program against its f32 original (docs/numerics.md "Check tolerances",
 * "Outputs dominated by rounding noise"). */
#include "compiler/check.h"

#include "ir/eval/eval.h"
#include "ir/map.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The instruction that produces array leaf *k (depth first) of i's value;
 * NULL when that leaf is inside a tuple value that is not a tuple
 * instruction (no single producer). */
static int count_leaves(const nx_shape *s)
{
	if (!nx_shape_is_tuple(s))
		return 1;
	int n = 0;
	for (int j = 0; j < s->ntuple; j++)
		n += count_leaves(s->tuple[j]);
	return n;
}

/* The instruction that produces array leaf *k (depth first) of i's value,
 * counting *k down past the leaves before it; NULL when that leaf lies in a
 * tuple value that is not a tuple instruction (no single producer). */
static const nx_inst *leaf_inst(const nx_inst *i, int *k)
{
	if (!nx_shape_is_tuple(i->shape))
		return (*k)-- == 0 ? i : NULL;
	if (i->op != NX_OP_TUPLE) {
		*k -= count_leaves(i->shape);
		return NULL;
	}
	for (int j = 0; j < i->noperands && *k >= 0; j++) {
		const nx_inst *r = leaf_inst(i->operands[j], k);
		if (r)
			return r;
	}
	return NULL;
}

/* The computation is the add of its two parameters. */
static bool is_add_reducer(const nx_comp *c)
{
	const nx_inst *r = c ? c->root : NULL;
	return r && c->nparams == 2 && r->op == NX_OP_ADD && r->noperands == 2 &&
	       r->operands[0]->op == NX_OP_PARAMETER && r->operands[1]->op == NX_OP_PARAMETER &&
	       r->operands[0] != r->operands[1];
}

/* Adds of sums nest at most this deep (a DAG of adds that reuse each other
 * would otherwise take exponential time). */
#define MAX_ADD_DEPTH 8

static const nx_inst *sum_source(const nx_inst *i, int64_t *nterms, int depth)
{
	for (int guard = 0; i && guard < 100000; guard++) {
		switch (i->op) {
		case NX_OP_CONVERT:
			if (!nx_shape_is_array(i->operands[0]->shape) || !nx_type_is_float(i->operands[0]->shape->type))
				return NULL;
			/* fall through */
		case NX_OP_RESHAPE:
		case NX_OP_BITCAST:
		case NX_OP_COPY:
		case NX_OP_TRANSPOSE:
		case NX_OP_BROADCAST:
		case NX_OP_SLICE:
			i = i->operands[0];
			continue;
		case NX_OP_CUSTOM_CALL:
			if (i->noperands != 1 || !nx_eval_custom_is_identity(i))
				return NULL;
			i = i->operands[0];
			continue;
		case NX_OP_GET_TUPLE_ELEMENT: {
			const nx_inst *t = i->operands[0];
			if (t->op != NX_OP_TUPLE || i->a.tuple_index < 0 || i->a.tuple_index >= t->noperands)
				return NULL;
			i = t->operands[i->a.tuple_index];
			continue;
		}
		case NX_OP_REDUCE:
			if (i->noperands != 2 || i->ncalled != 1 || !is_add_reducer(i->called[0]) ||
			    !nx_shape_is_array(i->shape) || !nx_type_is_float(i->shape->type))
				return NULL;
			*nterms = 1;
			for (int j = 0; j < i->a.dimensions.n; j++)
				*nterms *= i->operands[0]->shape->dims[i->a.dimensions.v[j]];
			return i;
		case NX_OP_SCATTER: {
			/* operand + the updates that land on each element: at most
			 * every scatter index, plus the operand's own value */
			if (i->noperands != 3 || i->ncalled != 1 || !is_add_reducer(i->called[0]) ||
			    !nx_shape_is_array(i->shape) || !nx_type_is_float(i->shape->type))
				return NULL;
			const nx_shape *u = i->operands[2]->shape;
			*nterms = 1;
			for (int d = 0; d < u->rank; d++) {
				bool window = false;
				for (int j = 0; j < i->a.scatter.update_window_dims.n; j++)
					window |= i->a.scatter.update_window_dims.v[j] == d;
				if (!window)
					*nterms *= u->dims[d];
			}
			*nterms += 1;
			return i;
		}
		case NX_OP_ADD:
		case NX_OP_SUBTRACT: {
			/* a sum of sums (dx = dx0 + dq . Wq + ...) is one sum of all
			 * their terms; an operand that is not a sum is one term */
			if (!nx_shape_is_array(i->shape) || !nx_type_is_float(i->shape->type) || depth >= MAX_ADD_DEPTH)
				return NULL;
			int64_t na = 1, nb = 1;
			bool sa = sum_source(i->operands[0], &na, depth + 1) != NULL;
			bool sb = sum_source(i->operands[1], &nb, depth + 1) != NULL;
			if (!sa && !sb)
				return NULL;
			*nterms = na + nb;
			return i;
		}
		case NX_OP_DOT:
			if (i->noperands != 2 || !nx_shape_is_array(i->shape) || !nx_type_is_float(i->shape->type))
				return NULL;
			*nterms = 1;
			for (int j = 0; j < i->a.dot.lhs_contracting.n; j++)
				*nterms *= i->operands[0]->shape->dims[i->a.dot.lhs_contracting.v[j]];
			return i;
		default:
			return NULL;
		}
	}
	return NULL;
}

const nx_inst *nx_check_sum_source(const nx_inst *i, int64_t *nterms)
{
	return sum_source(i, nterms, 0);
}

const nx_inst *nx_check_output_sum(const nx_module *m, int leaf, int64_t *nterms)
{
	if (!m->entry || !m->entry->root)
		return NULL;
	int k = leaf;
	const nx_inst *i = leaf_inst(m->entry->root, &k);
	return i ? nx_check_sum_source(i, nterms) : NULL;
}

static nx_inst *new_abs(nx_module *m, nx_comp *c, nx_inst *x)
{
	return nx_inst_new(c, NX_OP_ABS, x->shape, &x, 1, nx_module_unique_name(m, "abs"));
}

/* A new instruction like i (attributes, called computations) on operands
 * ops, appended to e. */
static nx_inst *clone_on(nx_module *m, nx_comp *e, const nx_inst *i, nx_inst *const *ops)
{
	nx_inst *c = nx_inst_new(e, i->op, i->shape, ops, i->noperands, nx_module_unique_name(m, "abs.sum"));
	c->a = i->a;
	nx_inst_set_called(c, i->called, i->ncalled);
	return c;
}

/* sum |terms| of value i, which has a sum source (nx_check_sum_source):
 * new instructions appended to e, the originals untouched (other values may
 * read them). A dot, reduce or scatter on the abs of its operands (not a
 * scatter's indices); an add or subtract of sums the add of their sum
 * |terms| (an operand that is not a sum: its abs); shape-only ops on top
 * repeated on the result. */
static nx_inst *abs_sum(nx_module *m, nx_comp *e, nx_inst *i, int depth, nx_ptrmap *memo)
{
	nx_inst *ops[3], *r = (nx_inst *)nx_ptrmap_get(memo, i, 0);
	int64_t n;
	if (r)
		return r;
	switch (i->op) {
	case NX_OP_GET_TUPLE_ELEMENT:
		r = abs_sum(m, e, i->operands[0]->operands[i->a.tuple_index], depth, memo);
		break;
	case NX_OP_CUSTOM_CALL: /* an identity */
		r = abs_sum(m, e, i->operands[0], depth, memo);
		break;
	case NX_OP_CONVERT: case NX_OP_RESHAPE: case NX_OP_BITCAST: case NX_OP_COPY: case NX_OP_TRANSPOSE:
	case NX_OP_BROADCAST: case NX_OP_SLICE:
		ops[0] = abs_sum(m, e, i->operands[0], depth, memo);
		r = clone_on(m, e, i, ops);
		break;
	case NX_OP_ADD:
	case NX_OP_SUBTRACT: /* as sum_source saw it, one level deeper */
		for (int j = 0; j < 2; j++)
			ops[j] = sum_source(i->operands[j], &n, depth + 1) ? abs_sum(m, e, i->operands[j], depth + 1, memo)
			                                                   : new_abs(m, e, i->operands[j]);
		r = clone_on(m, e, i, ops);
		r->op = NX_OP_ADD;
		break;
	default: /* dot, reduce, scatter */
		NX_ASSERT(i->noperands <= 3);
		for (int j = 0; j < i->noperands; j++)
			ops[j] = i->op == NX_OP_SCATTER && j == 1 ? i->operands[j] : new_abs(m, e, i->operands[j]);
		r = clone_on(m, e, i, ops);
		break;
	}
	nx_ptrmap_put(memo, i, (intptr_t)r);
	return r;
}

/* Rewrites m (a private copy) so that its entry returns sum |terms| for each
 * element of output leaf `leaf` (the sum's terms replaced by their absolute
 * values, carried through the same shape-only ops). Only what the new root
 * needs stays. false: not such an output. */
static bool abs_module(nx_module *m, int leaf)
{
	int64_t n;
	nx_comp *e = m->entry;
	int k = leaf;
	nx_inst *out = (nx_inst *)leaf_inst(e->root, &k);
	if (!out || !nx_check_sum_source(out, &n))
		return false;
	nx_ptrmap memo = {0};
	out = abs_sum(m, e, out, 0, &memo); /* appended: after everything it reads */
	nx_ptrmap_free(&memo);
	bool *keep = calloc((size_t)e->ninsts, sizeof *keep);
	NX_ASSERT(keep);
	/* keep what the new root needs, and the parameters */
	nx_ptrmap live = {0};
	nx_ptrmap_put(&live, out, 1);
	for (int j = e->ninsts - 1; j >= 0; j--) {
		nx_inst *i = e->insts[j];
		if (!nx_ptrmap_get(&live, i, 0) && i->op != NX_OP_PARAMETER)
			continue;
		keep[j] = true;
		for (int q = 0; q < i->noperands; q++)
			nx_ptrmap_put(&live, i->operands[q], 1);
	}
	nx_ptrmap_free(&live);
	nx_comp_compact(e, keep);
	e->root = out;
	m->entry_layout = NULL;
	m->naliases = 0;
	free(keep);
	return true;
}

nx_status nx_check_abs_sums(const nx_module *m, int leaf, const nx_eval_opts *eo, nx_literal *const *const *args,
                            nx_arena *a, nx_literal **out, nx_diag *d)
{
	nx_print_opts po = {.no_metadata = true};
	char *text = nx_print_module(m, &po);
	if (!text)
		return nx_diag_set(d, NX_ERR_INTERNAL, NULL, 0, 0, "cannot print the module");
	nx_module *c = nx_read_text(text, strlen(text), m->file ? m->file : "(check copy)", d);
	free(text);
	if (!c)
		return d->status ? d->status : NX_ERR_INTERNAL;
	nx_status st;
	if (!abs_module(c, leaf))
		st = nx_diag_set(d, NX_ERR_INTERNAL, NULL, 0, 0, "output %d is not a sum", leaf);
	else
		st = nx_eval_module(c, eo, c->entry->nparams, args, a, out, d);
	nx_module_free(c);
	return st;
}

double nx_check_rel_l2(const nx_literal *ref, const nx_literal *got, const nx_literal *scale)
{
	int64_t ne = nx_shape_elems(ref->shape);
	double num = 0, den = 0;
	for (int64_t i = 0; i < ne; i++) {
		double x = nx_lit_get_f64(ref, i), y = nx_lit_get_f64(got, i);
		if (!isfinite(x) || !isfinite(y))
			return x == y || (isnan(x) && isnan(y)) ? 0 : INFINITY;
		double z = scale ? nx_lit_get_f64(scale, i) : x;
		num += (x - y) * (x - y);
		den += z * z;
	}
	return den > 0 ? sqrt(num / den) : sqrt(num);
}

double nx_check_noise(const nx_literal *ref, const nx_literal *orig, double bound)
{
	double rel = nx_check_rel_l2(orig, ref, NULL);
	return isfinite(rel) && rel > bound ? nx_check_rms_diff(ref, orig) : 0;
}

double nx_check_rms_diff(const nx_literal *a, const nx_literal *b)
{
	int64_t ne = nx_shape_elems(a->shape);
	double sq = 0;
	for (int64_t i = 0; i < ne; i++) {
		double x = nx_lit_get_f64(a, i), y = nx_lit_get_f64(b, i);
		if (!isfinite(x) || !isfinite(y))
			return 0;
		sq += (x - y) * (x - y);
	}
	return ne ? sqrt(sq / (double)ne) : 0;
}
