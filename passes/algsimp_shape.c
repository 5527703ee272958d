/* passes/algsimp_shape.c — data-movement identities:
 *   reshape(reshape(x)) → reshape(x); reshape to x's own shape → x;
 *   transpose(transpose(x)) → one transpose (composed permutation);
 *   identity transpose → x; broadcast(broadcast(x)) → one broadcast
 *   (composed dimensions); broadcast to x's own shape → x; slice of the full
 *   extent → x; slice of concatenate inside one operand → slice of that
 *   operand; reverse(reverse(x)) over the same dimensions → x; copy → x when
 *   the layouts are equal; pad with an all-zero config → x; concatenate of
 *   one operand → x; dynamic-slice with constant starts → slice;
 *   dynamic-update-slice with constant starts → the update when it covers
 *   the operand, concatenate(slice, update, slice) when it differs from it
 *   in one dimension (both as unrolled loops leave them);
 *   dynamic-slice(convert(x)) → convert(dynamic-slice(x)) (a device loop's
 *   slice of converted stacked weights). A broadcast of a scalar constant
 *   stays as it is. */
#include "passes/rewrite.h"

#include "ir/eval/eval.h"

#include <stdlib.h>
#include <string.h>

static bool is_identity_perm(nx_ivec p)
{
	for (int k = 0; k < p.n; k++)
		if (p.v[k] != k)
			return false;
	return true;
}

static bool full_slice(const nx_inst *in, const nx_inst *x)
{
	for (int k = 0; k < x->shape->rank; k++) {
		int64_t st = in->a.slice_stride.n > k ? in->a.slice_stride.v[k] : 1;
		if (in->a.slice_start.v[k] != 0 || in->a.slice_limit.v[k] != x->shape->dims[k] || st != 1)
			return false;
	}
	return true;
}

/* slice(concatenate(a0, a1, ...)) inside one operand: a slice of it. */
static nx_inst *slice_of_concat(nx_rw *rw, nx_inst *in, nx_inst *cat)
{
	if (!cat->a.dimensions.n)
		return NULL;
	int64_t cd = cat->a.dimensions.v[0];
	int64_t s = in->a.slice_start.v[cd], l = in->a.slice_limit.v[cd];
	int64_t off = 0;
	for (int k = 0; k < cat->noperands; k++) {
		nx_inst *op = cat->operands[k];
		int64_t sz = op->shape->dims[cd];
		if (s >= off && l <= off + sz && l > s) {
			nx_arena *a = nx_rw_arena(rw);
			nx_inst *sl = nx_rw_add(rw, NX_OP_SLICE, nx_shape_copy(a, in->shape), &op, 1, NULL);
			sl->a.slice_start = nx_ivec_dup(a, in->a.slice_start.v, in->a.slice_start.n);
			sl->a.slice_limit = nx_ivec_dup(a, in->a.slice_limit.v, in->a.slice_limit.n);
			sl->a.slice_stride = nx_ivec_dup(a, in->a.slice_stride.v, in->a.slice_stride.n);
			sl->a.slice_start.v[cd] -= off;
			sl->a.slice_limit.v[cd] -= off;
			sl->a.metadata = in->a.metadata;
			sl->a.nmetadata = in->a.nmetadata;
			if (full_slice(sl, op) && nx_shape_compatible(op->shape, in->shape)) {
				/* not needed after all: leave no dead slice behind */
				rw->nout--;
				return op;
			}
			return sl;
		}
		off += sz;
	}
	return NULL;
}

static bool same_dim_set(nx_ivec a, nx_ivec b)
{
	if (a.n != b.n)
		return false;
	for (int i = 0; i < a.n; i++) {
		bool found = false;
		for (int j = 0; j < b.n; j++)
			found |= a.v[i] == b.v[j];
		if (!found)
			return false;
	}
	return true;
}

/* The start indices of a dynamic-slice / dynamic-update-slice (operands
 * first..first+rank-1) when all are scalar integer constants, clamped as
 * XLA clamps them: into [0, dim - size]. */
static bool const_starts(const nx_inst *in, int first, const nx_shape *whole, const nx_shape *part, int64_t *st)
{
	int r = whole->rank;
	if (in->noperands != first + r)
		return false;
	for (int k = 0; k < r; k++) {
		const nx_inst *o = in->operands[first + k];
		if (o->op != NX_OP_CONSTANT || !o->a.literal || o->shape->rank != 0 || !nx_type_is_int(o->shape->type))
			return false;
		int64_t v = nx_lit_get_i64(o->a.literal, 0), hi = whole->dims[k] - part->dims[k];
		st[k] = v < 0 ? 0 : v > hi ? hi : v;
	}
	return true;
}

static nx_inst *slice_dims(nx_rw *rw, nx_inst *x, const int64_t *lo, const int64_t *hi, const nx_inst *meta)
{
	nx_arena *a = nx_rw_arena(rw);
	int r = x->shape->rank;
	nx_shape *sh = nx_shape_copy(a, x->shape);
	int64_t one[NX_MAX_RANK];
	for (int k = 0; k < r; k++)
		sh->dims[k] = hi[k] - lo[k], one[k] = 1;
	nx_inst *sl = nx_rw_add(rw, NX_OP_SLICE, sh, &x, 1, NULL);
	sl->a.slice_start = nx_ivec_dup(a, lo, r);
	sl->a.slice_limit = nx_ivec_dup(a, hi, r);
	sl->a.slice_stride = nx_ivec_dup(a, one, r);
	sl->a.metadata = meta->a.metadata;
	sl->a.nmetadata = meta->a.nmetadata;
	return sl;
}

/* dynamic-update-slice(x, u, constant starts) where u spans x but in one
 * dimension d: concatenate(x before, u, x after) along d (XLA unrolled
 * scans write chunk t at a constant offset). */
static nx_inst *dus_const(nx_rw *rw, nx_inst *in)
{
	nx_inst *x = in->operands[0], *u = in->operands[1];
	int64_t st[NX_MAX_RANK];
	int r = x->shape->rank, d = -1;
	if (!const_starts(in, 2, x->shape, u->shape, st) || u->shape->type != x->shape->type)
		return NULL;
	for (int k = 0; k < r; k++)
		if (u->shape->dims[k] != x->shape->dims[k]) {
			if (d >= 0)
				return NULL;
			d = k;
		}
	if (d < 0)
		return nx_shape_compatible(u->shape, in->shape) ? u : NULL;
	int64_t lo[NX_MAX_RANK], hi[NX_MAX_RANK];
	for (int k = 0; k < r; k++)
		lo[k] = 0, hi[k] = x->shape->dims[k];
	nx_inst *parts[3];
	int np = 0;
	if (st[d] > 0) {
		hi[d] = st[d];
		parts[np++] = slice_dims(rw, x, lo, hi, in);
	}
	parts[np++] = u;
	if (st[d] + u->shape->dims[d] < x->shape->dims[d]) {
		lo[d] = st[d] + u->shape->dims[d];
		hi[d] = x->shape->dims[d];
		parts[np++] = slice_dims(rw, x, lo, hi, in);
	}
	nx_arena *a = nx_rw_arena(rw);
	nx_inst *cat = nx_rw_add(rw, NX_OP_CONCATENATE, nx_shape_copy(a, in->shape), parts, np, NULL);
	int64_t dd = d;
	cat->a.dimensions = nx_ivec_dup(a, &dd, 1);
	cat->a.has_dimensions = true;
	cat->a.metadata = in->a.metadata;
	cat->a.nmetadata = in->a.nmetadata;
	return cat;
}

/* dynamic-slice(convert(x)) -> convert(dynamic-slice(x)): a device loop
 * that reads one layer of converted stacked weights converts that layer,
 * not the whole stack, each trip. */
static nx_inst *slice_before_convert(nx_rw *rw, nx_inst *in, nx_inst *cv)
{
	nx_arena *a = nx_rw_arena(rw);
	nx_inst *src = cv->operands[0];
	nx_shape *sh = nx_shape_copy(a, in->shape);
	sh->type = src->shape->type;
	nx_inst **ops = nx_arena_alloc(a, sizeof *ops * (size_t)in->noperands);
	ops[0] = src;
	for (int k = 1; k < in->noperands; k++)
		ops[k] = in->operands[k];
	nx_inst *ds = nx_rw_add(rw, NX_OP_DYNAMIC_SLICE, sh, ops, in->noperands, NULL);
	ds->a.dynamic_slice_sizes = nx_ivec_dup(a, in->a.dynamic_slice_sizes.v, in->a.dynamic_slice_sizes.n);
	ds->a.metadata = in->a.metadata;
	ds->a.nmetadata = in->a.nmetadata;
	nx_inst *c = nx_rw_add(rw, NX_OP_CONVERT, nx_shape_copy(a, in->shape), &ds, 1, NULL);
	c->a.metadata = cv->a.metadata;
	c->a.nmetadata = cv->a.nmetadata;
	return c;
}

static nx_inst *simplify(nx_rw *rw, nx_inst *in)
{
	if (in->noperands < 1 || !nx_shape_is_array(in->shape))
		return NULL;
	nx_inst *x = in->operands[0];
	switch (in->op) {
	case NX_OP_RESHAPE:
		if (nx_shape_compatible(x->shape, in->shape))
			return x;
		if (x->op == NX_OP_RESHAPE) {
			in->operands[0] = x->operands[0];
			rw->mutated = true;
			if (nx_shape_compatible(in->operands[0]->shape, in->shape))
				return in->operands[0];
		}
		return NULL;
	case NX_OP_TRANSPOSE:
		if (is_identity_perm(in->a.dimensions) && nx_shape_compatible(x->shape, in->shape))
			return x;
		if (x->op == NX_OP_TRANSPOSE) {
			int r = in->shape->rank;
			int64_t p[NX_MAX_RANK];
			for (int k = 0; k < r; k++)
				p[k] = x->a.dimensions.v[in->a.dimensions.v[k]];
			in->operands[0] = x->operands[0];
			/* attribute arrays may be shared with clones: never write through them */
			in->a.dimensions = nx_ivec_dup(nx_rw_arena(rw), p, r);
			rw->mutated = true;
			if (is_identity_perm(in->a.dimensions))
				return in->operands[0];
		}
		return NULL;
	case NX_OP_BROADCAST:
		if (nx_shape_compatible(x->shape, in->shape) && is_identity_perm(in->a.dimensions))
			return x;
		if (x->op == NX_OP_BROADCAST) {
			nx_inst *y = x->operands[0];
			int64_t d[NX_MAX_RANK];
			for (int k = 0; k < y->shape->rank; k++)
				d[k] = in->a.dimensions.v[x->a.dimensions.v[k]];
			in->operands[0] = y;
			in->a.dimensions = nx_ivec_dup(nx_rw_arena(rw), d, y->shape->rank);
			rw->mutated = true;
		}
		return NULL;
	case NX_OP_SLICE:
		if (full_slice(in, x) && nx_shape_compatible(x->shape, in->shape))
			return x;
		if (x->op == NX_OP_CONCATENATE)
			return slice_of_concat(rw, in, x);
		return NULL;
	case NX_OP_REVERSE:
		if (in->a.dimensions.n == 0 && nx_shape_compatible(x->shape, in->shape))
			return x;
		if (x->op == NX_OP_REVERSE && same_dim_set(x->a.dimensions, in->a.dimensions) &&
		    nx_shape_compatible(x->operands[0]->shape, in->shape))
			return x->operands[0];
		return NULL;
	case NX_OP_COPY:
		if (nx_shape_equal(x->shape, in->shape))
			return x;
		return NULL;
	case NX_OP_PAD:
		for (int k = 0; k < in->a.npadding; k++)
			if (in->a.padding[k].lo || in->a.padding[k].hi || in->a.padding[k].interior)
				return NULL;
		if (nx_shape_compatible(x->shape, in->shape))
			return x;
		return NULL;
	case NX_OP_CONCATENATE:
		if (in->noperands == 1 && nx_shape_compatible(x->shape, in->shape))
			return x;
		return NULL;
	case NX_OP_DYNAMIC_SLICE: {
		int64_t st[NX_MAX_RANK], hi[NX_MAX_RANK];
		if (x->op == NX_OP_CONVERT && x->noperands == 1 && nx_shape_is_array(x->operands[0]->shape))
			return slice_before_convert(rw, in, x);
		if (!const_starts(in, 1, x->shape, in->shape, st) || x->shape->type != in->shape->type)
			return NULL;
		for (int k = 0; k < x->shape->rank; k++)
			hi[k] = st[k] + in->shape->dims[k];
		return slice_dims(rw, x, st, hi, in);
	}
	case NX_OP_DYNAMIC_UPDATE_SLICE:
		return in->noperands >= 2 ? dus_const(rw, in) : NULL;
	default:
		return NULL;
	}
}

nx_status nx_pass_algsimp_shape(nx_module *m, const nx_pass_ctx *ctx, bool *changed)
{
	return nx_rw_run(m, ctx, "algsimp-shape", simplify, NULL, changed);
}
