/* passes/algsimp_shape.c — data-movement identities:
 *   reshape(reshape(x)) → reshape(x); reshape to x's own shape → x;
 *   transpose(transpose(x)) → one transpose (composed permutation);
 *   identity transpose → x; broadcast(broadcast(x)) → one broadcast
 *   (composed dimensions); broadcast to x's own shape → x; slice of the full
 *   extent → x; slice of concatenate inside one operand → slice of that
 *   operand; reverse(reverse(x)) over the same dimensions → x; copy → x when
 *   the layouts are equal; pad with an all-zero config → x; concatenate of
 *   one operand → x. A broadcast of a scalar constant stays as it is. */
#include "passes/rewrite.h"

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
	default:
		return NULL;
	}
}

nx_status nx_pass_algsimp_shape(nx_module *m, const nx_pass_ctx *ctx, bool *changed)
{
	return nx_rw_run(m, ctx, "algsimp-shape", simplify, NULL, changed);
}
