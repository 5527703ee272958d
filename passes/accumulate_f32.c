/* passes/accumulate_f32.c — mixed-precision accumulation, as neuronx-cc does
 * by default (--enable-mixed-precision-accumulation): a sum of bf16 or f16
 * values accumulates in f32 and is rounded to the narrow type once.
 *   reduce(x: T[...], init: T[]) with an add reducer, T = bf16 | f16 | f8*
 *   → convert(reduce(convert(x, f32), convert(init, f32)) over the same dims
 *             with an f32 add reducer, T)
 * A constant init becomes an f32 constant (exact: every narrow float is an
 * f32), not a convert: at -O1 nothing folds that convert, and the backend
 * splits a reduction too long for one SBUF pass only when it sees that its
 * init is a neutral constant (llama2_dp1_tp8_pp4's gradient-norm sums).
 * Max/min reductions are exact in any type and stay; variadic reduces stay.
 * batchnorm-expand makes its own reductions in f32 under the same flag, and
 * the softmax / layer-norm sums of bf16 graphs are add-reductions, so they
 * accumulate in f32 through this rule. With
 * --disable-mixed-precision-accumulation (ctx->no_mixed_accumulation) the
 * pass changes nothing. docs/numerics.md "Mixed-precision accumulation". */
#include "passes/rewrite.h"

#include "ir/eval/eval.h"

static bool is_add_reducer(const nx_comp *c)
{
	if (!c || c->nparams != 2 || !c->root || c->root->op != NX_OP_ADD || c->root->noperands != 2)
		return false;
	const nx_inst *a = c->root->operands[0], *b = c->root->operands[1];
	return a->op == NX_OP_PARAMETER && b->op == NX_OP_PARAMETER && a != b;
}

static nx_inst *widen_reduce(nx_rw *rw, nx_inst *in)
{
	if (in->op != NX_OP_REDUCE || in->noperands != 2 || in->ncalled != 1 ||
	    !nx_shape_is_array(in->shape))
		return NULL;
	nx_inst *x = in->operands[0], *init = in->operands[1];
	nx_type t = x->shape->type;
	if (!nx_type_is_float(t) || nx_type_bits(t) >= 32 || init->shape->type != t ||
	    !is_add_reducer(in->called[0]))
		return NULL;
	nx_inst *init32 = init->op == NX_OP_CONSTANT && init->a.literal && nx_shape_elems(init->shape) == 1
	                          ? nx_rw_scalar(rw, NX_F32, nx_lit_get_f64(init->a.literal, 0))
	                          : nx_rw_convert(rw, init, NX_F32);
	nx_inst *r = nx_rw_reduce(rw, nx_rw_convert(rw, x, NX_F32), init32,
	                          in->a.dimensions.v, in->a.dimensions.n, NX_OP_ADD);
	return nx_rw_convert(rw, r, t);
}

nx_status nx_pass_accumulate_f32(nx_module *m, const nx_pass_ctx *ctx, bool *changed)
{
	if (ctx->no_mixed_accumulation) {
		*changed = false;
		return NX_OK;
	}
	return nx_rw_run(m, ctx, "accumulate-f32", widen_reduce, NULL, changed);
}
