/* passes/algsimp_convert.c — conversion identities:
 *   convert to the operand's own type → x; bitcast-convert to the same type
 *   → x; convert(convert(x)) → x or one convert when the middle type holds
 *   every value of x's type exactly (f32→f64→f32, s8→s32→s8, bf16→f32→f16):
 *   conversions depend only on the value, so skipping an exact step cannot
 *   change the result. A chain through a narrower or inexact type stays. */
#include "passes/rewrite.h"

/* significand bits (with the implicit one) of a float type; 0 for others */
static int significand(nx_type t)
{
	switch (t) {
	case NX_F16: return 11;
	case NX_BF16: return 8;
	case NX_F32: return 24;
	case NX_F64: return 53;
	default: return 0;
	}
}

/* every value of a is exactly representable in b (NaN and inf included) */
static bool exact(nx_type a, nx_type b)
{
	if (a == b)
		return true;
	nx_type_kind ka = nx_type_kind_of(a), kb = nx_type_kind_of(b);
	int ba = nx_type_bits(a), bb = nx_type_bits(b);
	if (ka == NX_KIND_PRED)
		return kb == NX_KIND_SINT || kb == NX_KIND_UINT || significand(b) > 0;
	if (ka == NX_KIND_SINT && kb == NX_KIND_SINT)
		return bb >= ba;
	if (ka == NX_KIND_UINT && kb == NX_KIND_UINT)
		return bb >= ba;
	if (ka == NX_KIND_UINT && kb == NX_KIND_SINT)
		return bb > ba;
	if (ka == NX_KIND_SINT && significand(b))
		return ba - 1 <= significand(b);
	if (ka == NX_KIND_UINT && significand(b))
		return ba <= significand(b);
	if (ka == NX_KIND_FLOAT && significand(b)) {
		if (a == NX_F16)
			return b == NX_F32 || b == NX_F64;
		if (a == NX_BF16)
			return b == NX_F32 || b == NX_F64;
		if (a == NX_F32)
			return b == NX_F64;
		/* the f8/f4 formats: every value is a small dyadic rational */
		return nx_type_bits(a) <= 8 && (b == NX_F32 || b == NX_F64);
	}
	return false;
}

static nx_inst *simplify(nx_rw *rw, nx_inst *in)
{
	if (in->noperands != 1 || !nx_shape_is_array(in->shape))
		return NULL;
	nx_inst *x = in->operands[0];
	if (in->op == NX_OP_BITCAST_CONVERT)
		return nx_shape_compatible(x->shape, in->shape) ? x : NULL;
	if (in->op != NX_OP_CONVERT)
		return NULL;
	nx_type c = in->shape->type;
	if (x->shape->type == c)
		return x;
	if (x->op != NX_OP_CONVERT)
		return NULL;
	nx_inst *y = x->operands[0];
	nx_type a = y->shape->type, b = x->shape->type;
	if (nx_type_kind_of(a) == NX_KIND_COMPLEX || nx_type_kind_of(c) == NX_KIND_COMPLEX ||
	    !exact(a, b))
		return NULL;
	if (a == c)
		return y;
	in->operands[0] = y;
	rw->mutated = true;
	return NULL;
}

nx_status nx_pass_algsimp_convert(nx_module *m, const nx_pass_ctx *ctx, bool *changed)
{
	return nx_rw_run(m, ctx, "algsimp-convert", simplify, NULL, changed);
}
