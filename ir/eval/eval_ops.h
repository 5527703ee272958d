/* ir/eval/eval_ops.h — helpers shared by the evaluator's op-family files
 * (eval_conv.c, eval_window.c, eval_gather.c, eval_sort.c, eval_collective.c,
 * ...). Internal to the evaluator. */
#ifndef NX_EVAL_OPS_H
#define NX_EVAL_OPS_H

#include <math.h>
#include <string.h>

#include "ir/eval/eval.h"

/* Row-major strides of a shape (strides[rank-1] = 1). */
static inline void nx_evop_strides(const nx_shape *s, int64_t *strides)
{
	int64_t st = 1;
	for (int d = s->rank - 1; d >= 0; d--) {
		strides[d] = st;
		st *= s->dims[d];
	}
}

/* Advances a row-major multi-index; false after the last one. */
static inline bool nx_evop_next(int64_t *idx, const int64_t *dims, int rank)
{
	for (int d = rank - 1; d >= 0; d--) {
		if (++idx[d] < dims[d])
			return true;
		idx[d] = 0;
	}
	return false;
}

static inline void nx_evop_unravel(int64_t lin, const int64_t *dims, int rank, int64_t *idx)
{
	for (int d = rank - 1; d >= 0; d--) {
		int64_t n = dims[d];
		idx[d] = n ? lin % n : 0;
		lin = n ? lin / n : 0;
	}
}

static inline bool nx_evop_ivec_has(nx_ivec v, int64_t x)
{
	for (int k = 0; k < v.n; k++)
		if (v.v[k] == x)
			return true;
	return false;
}

/* A literal whose shape is a tuple of element literals, each zero-filled. */
static inline nx_literal *nx_evop_alloc_tuple(nx_eval *ev, nx_shape *shape)
{
	nx_literal *t = nx_arena_alloc(&ev->arena, sizeof *t);
	t->shape = shape;
	t->ntuple = shape->ntuple;
	t->tuple = nx_arena_alloc(&ev->arena, sizeof(nx_literal *) * (size_t)(shape->ntuple + 1));
	for (int k = 0; k < shape->ntuple; k++) {
		if (nx_shape_is_tuple(shape->tuple[k]))
			t->tuple[k] = nx_evop_alloc_tuple(ev, shape->tuple[k]);
		else
			t->tuple[k] = nx_eval_alloc(ev, shape->tuple[k]);
		if (!t->tuple[k])
			return NULL;
	}
	return t;
}

/* Deep copy of an array literal into the evaluation arena. */
static inline nx_literal *nx_evop_clone(nx_eval *ev, const nx_literal *src)
{
	nx_literal *l = nx_eval_alloc(ev, src->shape);
	if (l && src->nbytes)
		memcpy(l->data, src->data, (size_t)src->nbytes);
	return l;
}

/* The scalar binary op a reducer computation performs on its two parameters
 * (root = op(p0, p1), or op(p1, p0) for commutative ops), or NX_OP_COUNT when
 * it is anything else: then callers go through nx_eval_call. */
static inline nx_opcode nx_evop_reducer_op(const nx_comp *c)
{
	if (!c || c->nparams != 2 || !c->root || c->root->noperands != 2)
		return NX_OP_COUNT;
	const nx_inst *r = c->root, *p0 = c->params[0], *p1 = c->params[1];
	if (!p0 || !p1 || r->shape->rank != 0 || nx_shape_is_tuple(r->shape) ||
	    p0->shape->type != r->shape->type || p1->shape->type != r->shape->type ||
	    p0->shape->rank != 0 || p1->shape->rank != 0)
		return NX_OP_COUNT;
	switch (r->op) {
	case NX_OP_ADD: case NX_OP_MULTIPLY: case NX_OP_MAXIMUM: case NX_OP_MINIMUM:
	case NX_OP_AND: case NX_OP_OR: case NX_OP_XOR:
		break;
	default:
		return NX_OP_COUNT;
	}
	if ((r->operands[0] == p0 && r->operands[1] == p1) ||
	    (r->operands[0] == p1 && r->operands[1] == p0))
		return r->op;
	return NX_OP_COUNT;
}

/* Narrow floats are computed in f32 by XLA's evaluator: round there first so
 * that the final rounding matches (no double rounding surprises vs XLA). */
static inline double nx_evop_round_f32_if_narrow(nx_type t, double v)
{
	return (t == NX_F32 || nx_type_bytes(t) < 4) && nx_type_kind_of(t) == NX_KIND_FLOAT
	               ? (double)(float)v
	               : v;
}

/* dst[di] = op(a[ai], b[bi]) for an op accepted by nx_evop_reducer_op; all
 * three literals of one element type. */
static inline void nx_evop_apply(nx_opcode op, nx_literal *dst, int64_t di, const nx_literal *a,
                                 int64_t ai, const nx_literal *b, int64_t bi)
{
	nx_type t = dst->shape->type;
	switch (nx_type_kind_of(t)) {
	case NX_KIND_FLOAT: {
		double x = nx_lit_get_f64(a, ai), y = nx_lit_get_f64(b, bi), r;
		switch (op) {
		case NX_OP_ADD: r = x + y; break;
		case NX_OP_MULTIPLY: r = x * y; break;
		/* ties (±0) keep the left operand, as XLA's std::max/std::min and
		 * the elementwise ops do */
		case NX_OP_MAXIMUM: r = (isnan(x) || isnan(y)) ? NAN : (x < y ? y : x); break;
		case NX_OP_MINIMUM: r = (isnan(x) || isnan(y)) ? NAN : (y < x ? y : x); break;
		default: r = NAN; break;
		}
		nx_lit_set_f64(dst, di, nx_evop_round_f32_if_narrow(t, r));
		return;
	}
	case NX_KIND_COMPLEX: {
		double xr, xi, yr, yi;
		nx_lit_get_c128(a, ai, &xr, &xi);
		nx_lit_get_c128(b, bi, &yr, &yi);
		if (op == NX_OP_MULTIPLY)
			nx_lit_set_c128(dst, di, xr * yr - xi * yi, xr * yi + xi * yr);
		else
			nx_lit_set_c128(dst, di, xr + yr, xi + yi);
		return;
	}
	case NX_KIND_UINT:
	case NX_KIND_PRED: {
		uint64_t x = nx_lit_get_u64(a, ai), y = nx_lit_get_u64(b, bi), r = 0;
		switch (op) {
		case NX_OP_ADD: r = x + y; break;
		case NX_OP_MULTIPLY: r = x * y; break;
		case NX_OP_MAXIMUM: r = x > y ? x : y; break;
		case NX_OP_MINIMUM: r = x < y ? x : y; break;
		case NX_OP_AND: r = x & y; break;
		case NX_OP_OR: r = x | y; break;
		case NX_OP_XOR: r = x ^ y; break;
		default: break;
		}
		if (t == NX_PRED && op == NX_OP_ADD)
			r = (x | y) != 0;
		nx_lit_set_u64(dst, di, r);
		return;
	}
	default: {
		int64_t x = nx_lit_get_i64(a, ai), y = nx_lit_get_i64(b, bi), r = 0;
		switch (op) {
		case NX_OP_ADD: r = (int64_t)((uint64_t)x + (uint64_t)y); break;
		case NX_OP_MULTIPLY: r = (int64_t)((uint64_t)x * (uint64_t)y); break;
		case NX_OP_MAXIMUM: r = x > y ? x : y; break;
		case NX_OP_MINIMUM: r = x < y ? x : y; break;
		case NX_OP_AND: r = x & y; break;
		case NX_OP_OR: r = x | y; break;
		case NX_OP_XOR: r = x ^ y; break;
		default: break;
		}
		nx_lit_set_i64(dst, di, r);
		return;
	}
	}
}

/* A scalar argument for calling a computation per element. Its data lives
 * in the arena, outside the core's buffer reference counts, so that the
 * callee releasing its parameters never frees it and it can be reused. */
static inline nx_literal *nx_evop_scalar(nx_eval *ev, nx_type t)
{
	return nx_literal_new(&ev->arena, nx_shape_scalar(&ev->arena, t));
}

#endif
