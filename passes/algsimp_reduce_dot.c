/* passes/algsimp_reduce_dot.c — reductions and dots:
 *   reduce(x, init) over no dimensions → x when init is the identity of the
 *     reducer (reduce with dimensions={} is f(init, x) elementwise);
 *   reduce(x, init) over dimensions of size 1 only → reshape(x), or
 *     f(broadcast(init), reshape(x)) when init is not the identity (JAX's
 *     attention gradients sum over a trailing 1: ViT's reduce_sum.2500, a
 *     kernel of 588 one-row DMAs, 4.0 ms each);
 *   reduce(broadcast(x), init) over exactly the broadcast's new dimensions:
 *     max / min / and / or with an identity init → x (idempotent, exact for
 *     floats too); add with init 0 → x·N for integer types only (for floats
 *     a sum of N copies rounds differently from one multiply; we keep it);
 *   dot(transpose(x), y) / dot(x, transpose(y)) → dot of x / y with the
 *     permutation folded into the dimension numbers, when the free
 *     dimensions keep their order (the result layout must not change).
 *   A dot with a size-1 contracting dimension stays a dot. A dot already in
 *   canonicalize-dot's form is left alone, so the two never undo each other. */
#include "passes/canonicalize.h"
#include "passes/rewrite.h"

#include "ir/eval/eval.h"

#include <math.h>

static bool is_identity(const nx_inst *init, nx_opcode op, nx_type t)
{
	const nx_literal *l = nx_rw_splat_value(init);
	if (!l || l->shape->type != t)
		return false;
	nx_type_kind k = nx_type_kind_of(t);
	switch (op) {
	case NX_OP_ADD: return nx_rw_is_splat(init, 0);
	case NX_OP_MULTIPLY: return nx_rw_is_splat(init, 1);
	case NX_OP_AND: return t == NX_PRED && nx_rw_is_splat(init, 1);
	case NX_OP_OR: return t == NX_PRED && nx_rw_is_splat(init, 0);
	case NX_OP_MAXIMUM:
	case NX_OP_MINIMUM: {
		bool mx = op == NX_OP_MAXIMUM;
		if (k == NX_KIND_FLOAT)
			return nx_lit_get_f64(l, 0) == (mx ? -INFINITY : INFINITY);
		int bits = nx_type_bits(t);
		if (k == NX_KIND_UINT)
			return mx ? nx_lit_get_u64(l, 0) == 0
			          : nx_lit_get_u64(l, 0) == (bits >= 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1);
		if (k == NX_KIND_SINT) {
			int64_t max = bits >= 64 ? INT64_MAX : (int64_t)(((uint64_t)1 << (bits - 1)) - 1);
			return nx_lit_get_i64(l, 0) == (mx ? -max - 1 : max);
		}
		return false;
	}
	default: return false;
	}
}

static nx_inst *simplify_reduce(nx_rw *rw, nx_inst *in)
{
	if (in->noperands != 2 || !nx_shape_is_array(in->shape))
		return NULL;
	nx_inst *x = in->operands[0], *init = in->operands[1];
	nx_type t = in->shape->type;
	nx_opcode op = in->ncalled == 1 ? nx_pass_reducer_op(in->called[0]) : NX_OP_COUNT;
	if (op == NX_OP_COUNT || x->shape->type != t)
		return NULL;
	bool ident = is_identity(init, op, t);
	if (in->a.dimensions.n == 0)
		return ident && nx_shape_compatible(x->shape, in->shape) ? x : NULL;
	/* every reduced dim of size 1: one element per result, f(init, x) */
	int64_t nred = 1;
	for (int j = 0; j < in->a.dimensions.n; j++)
		nred *= x->shape->dims[in->a.dimensions.v[j]];
	if (nred == 1 && nx_shape_is_array(init->shape) && init->shape->rank == 0) {
		nx_inst *r = nx_rw_reshape(rw, x, in->shape->rank, in->shape->dims);
		if (ident)
			return r;
		nx_inst *ib = nx_rw_broadcast(rw, init, t, in->shape->rank, in->shape->dims, NULL);
		return nx_rw_binary(rw, op, ib, r);
	}
	if (!ident)
		return NULL;
	if (x->op != NX_OP_BROADCAST)
		return NULL;
	/* reduced dims must be exactly the dims the broadcast added, and the
	 * kept ones in x's order */
	nx_inst *y = x->operands[0];
	nx_ivec bd = x->a.dimensions;
	if (in->a.dimensions.n + bd.n != x->shape->rank)
		return NULL;
	for (int k = 0; k < bd.n; k++) {
		if (k && bd.v[k] <= bd.v[k - 1])
			return NULL;
		for (int j = 0; j < in->a.dimensions.n; j++)
			if (in->a.dimensions.v[j] == bd.v[k])
				return NULL;
	}
	if (!nx_shape_compatible(y->shape, in->shape))
		return NULL;
	if (op == NX_OP_MAXIMUM || op == NX_OP_MINIMUM || op == NX_OP_AND || op == NX_OP_OR)
		return y;
	if (op != NX_OP_ADD || !nx_type_is_int(t))
		return NULL;
	int64_t n = 1;
	for (int j = 0; j < in->a.dimensions.n; j++)
		n *= x->shape->dims[in->a.dimensions.v[j]];
	if (n == 1)
		return y;
	return nx_rw_binary(rw, NX_OP_MULTIPLY, y, nx_rw_splat(rw, y->shape, t, (double)n));
}

static bool in_list(nx_ivec v, int64_t d)
{
	for (int k = 0; k < v.n; k++)
		if (v.v[k] == d)
			return true;
	return false;
}

/* Folds a transpose operand of a dot (side 0 = lhs, 1 = rhs) into the dims. */
static bool fold_transpose(nx_rw *rw, nx_inst *in, int side)
{
	nx_inst *t = in->operands[side];
	if (t->op != NX_OP_TRANSPOSE)
		return false;
	nx_ivec *batch = side ? &in->a.dot.rhs_batch : &in->a.dot.lhs_batch;
	nx_ivec *con = side ? &in->a.dot.rhs_contracting : &in->a.dot.lhs_contracting;
	nx_ivec perm = t->a.dimensions;
	int64_t last = -1;
	for (int k = 0; k < perm.n; k++) {
		if (in_list(*batch, k) || in_list(*con, k))
			continue;
		if (perm.v[k] < last)
			return false; /* free dims would change order */
		last = perm.v[k];
	}
	nx_arena *a = nx_rw_arena(rw);
	nx_ivec nb = nx_ivec_dup(a, batch->v, batch->n), nc = nx_ivec_dup(a, con->v, con->n);
	for (int k = 0; k < nb.n; k++)
		nb.v[k] = perm.v[nb.v[k]];
	for (int k = 0; k < nc.n; k++)
		nc.v[k] = perm.v[nc.v[k]];
	*batch = nb;
	*con = nc;
	in->operands[side] = t->operands[0];
	return true;
}

static nx_inst *simplify(nx_rw *rw, nx_inst *in)
{
	if (in->op == NX_OP_REDUCE)
		return simplify_reduce(rw, in);
	if (in->op == NX_OP_DOT) {
		/* A canonical dot stays canonical (canonicalize-dot made its
		 * transposes); a fold that yields a canonical dot is fine. */
		bool canon = nx_dot_is_canonical(in);
		nx_dot_dnums saved = in->a.dot;
		nx_inst *ops[2] = {in->operands[0], in->operands[1]};
		bool a = fold_transpose(rw, in, 0);
		bool b = fold_transpose(rw, in, 1);
		if ((a || b) && canon && !nx_dot_is_canonical(in)) {
			in->a.dot = saved;
			in->operands[0] = ops[0];
			in->operands[1] = ops[1];
			a = b = false;
		}
		rw->mutated |= a || b;
	}
	return NULL;
}

nx_status nx_pass_algsimp_reduce_dot(nx_module *m, const nx_pass_ctx *ctx, bool *changed)
{
	return nx_rw_run(m, ctx, "algsimp-reduce-dot", simplify, NULL, changed);
}
