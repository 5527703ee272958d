/* passes/algsimp_arith.c — arithmetic identities:
 *   x+0, 0+x, x-0, x*1, 1*x, x/1, x|0, x^0 → x; x*0 → 0 (integers only: for
 *   floats NaN*0 and inf*0 are NaN); negate(negate(x)), not(not(x)) → x;
 *   max/min/and/or(x, x) → x; and(x, true), or(x, false) → x (pred);
 *   and(x, false) → false, or(x, true) → true (pred); x-x → 0 and
 *   compare(x, x) → true/false (integers only: NaN breaks both for floats);
 *   select(constant p, a, b) → a or b; select(p, a, a) → a;
 *   clamp(lo, x, hi) → x for integers when [lo, hi] covers the whole type.
 * Constants are splats: a constant whose elements are all equal, or a
 * broadcast of one. x+0 → x is also done for floats, as XLA does, although
 * it turns -0+0 (= +0) into -0. */
#include "passes/rewrite.h"

#include "ir/eval/eval.h"

static bool same_shape(const nx_inst *a, const nx_inst *b)
{
	return nx_shape_compatible(a->shape, b->shape);
}

/* Returns the value of a splat integer constant in *v. */
static bool int_splat(const nx_inst *x, int64_t *v, uint64_t *u)
{
	const nx_literal *l = nx_rw_splat_value(x);
	if (!l || !nx_rw_is_intlike(l->shape->type))
		return false;
	*v = nx_lit_get_i64(l, 0);
	*u = nx_lit_get_u64(l, 0);
	return true;
}

/* clamp bounds that cover every value of integer type t */
static bool covers_type(const nx_inst *lo, const nx_inst *hi, nx_type t)
{
	int64_t lv, hv;
	uint64_t lu, hu;
	if (!int_splat(lo, &lv, &lu) || !int_splat(hi, &hv, &hu))
		return false;
	int bits = nx_type_bits(t);
	if (nx_type_kind_of(t) == NX_KIND_UINT || t == NX_PRED) {
		uint64_t max = bits >= 64 ? UINT64_MAX : (((uint64_t)1 << bits) - 1);
		return lu == 0 && hu == max;
	}
	int64_t max = bits >= 64 ? INT64_MAX : (int64_t)(((uint64_t)1 << (bits - 1)) - 1);
	return lv == -max - 1 && hv == max;
}

static nx_inst *simplify(nx_rw *rw, nx_inst *in)
{
	nx_inst *x = in->noperands > 0 ? in->operands[0] : NULL;
	nx_inst *y = in->noperands > 1 ? in->operands[1] : NULL;
	nx_type t = in->shape->type;
	bool intlike = nx_type_is_array(t) && nx_rw_is_intlike(t);
	switch (in->op) {
	case NX_OP_ADD:
	case NX_OP_OR:
	case NX_OP_XOR:
		if (in->op == NX_OP_OR && t == NX_PRED) {
			if (nx_rw_is_splat(y, 1) && same_shape(y, in))
				return y;
			if (nx_rw_is_splat(x, 1) && same_shape(x, in))
				return x;
		}
		if (in->op == NX_OP_OR && x == y)
			return x;
		if (nx_rw_is_splat(y, 0) && same_shape(x, in))
			return x;
		if (nx_rw_is_splat(x, 0) && same_shape(y, in))
			return y;
		return NULL;
	case NX_OP_SUBTRACT:
		if (nx_rw_is_splat(y, 0) && same_shape(x, in))
			return x;
		if (x == y && intlike)
			return nx_rw_splat(rw, in->shape, t, 0);
		return NULL;
	case NX_OP_MULTIPLY:
		if (nx_rw_is_splat(y, 1) && same_shape(x, in))
			return x;
		if (nx_rw_is_splat(x, 1) && same_shape(y, in))
			return y;
		if (intlike && nx_rw_is_splat(y, 0) && same_shape(y, in))
			return y;
		if (intlike && nx_rw_is_splat(x, 0) && same_shape(x, in))
			return x;
		return NULL;
	case NX_OP_DIVIDE:
		if (nx_rw_is_splat(y, 1) && same_shape(x, in))
			return x;
		return NULL;
	case NX_OP_AND:
		if (x == y)
			return x;
		if (t == NX_PRED) {
			if (nx_rw_is_splat(y, 1))
				return x;
			if (nx_rw_is_splat(x, 1))
				return y;
			if (nx_rw_is_splat(y, 0) && same_shape(y, in))
				return y;
			if (nx_rw_is_splat(x, 0) && same_shape(x, in))
				return x;
		}
		return NULL;
	case NX_OP_MAXIMUM:
	case NX_OP_MINIMUM:
		return x == y ? x : NULL;
	case NX_OP_NEGATE:
	case NX_OP_NOT:
		if (x->op == in->op && same_shape(x->operands[0], in))
			return x->operands[0];
		return NULL;
	case NX_OP_COMPARE: {
		if (x != y || !nx_rw_is_intlike(x->shape->type))
			return NULL;
		nx_cmp_dir d = in->a.direction;
		bool v = d == NX_CMP_EQ || d == NX_CMP_LE || d == NX_CMP_GE;
		return nx_rw_splat(rw, in->shape, NX_PRED, v);
	}
	case NX_OP_SELECT: {
		nx_inst *a = in->operands[1], *b = in->operands[2];
		if (a == b)
			return a;
		if (nx_rw_is_splat(x, 1))
			return a;
		if (nx_rw_is_splat(x, 0))
			return b;
		return NULL;
	}
	case NX_OP_CLAMP: {
		/* clamp(lo, x, hi) */
		nx_inst *v = in->operands[1];
		if (intlike && t != NX_PRED && same_shape(v, in) && covers_type(x, in->operands[2], t))
			return v;
		return NULL;
	}
	default:
		return NULL;
	}
}

nx_status nx_pass_algsimp_arith(nx_module *m, const nx_pass_ctx *ctx, bool *changed)
{
	return nx_rw_run(m, ctx, "algsimp-arith", simplify, NULL, changed);
}
