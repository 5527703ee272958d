/* passes/batchnorm_expand.c — batch-norm-training, -inference and -grad
 * become reduce / broadcast / elementwise ops, with the formulas of XLA's
 * operation semantics (N = elements per feature, sums over every dim but
 * feature_index, all math in the operand's type — except that bf16/f16/f8
 * operands are converted to f32, the formulas run in f32 and each result is
 * converted back once, unless --disable-mixed-precision-accumulation; torch
 * lowers LayerNorm to batch-norm-training, and bf16 statistics summed and
 * squared in bf16 lose most of their digits):
 *   training:  mean = Σx/N, var = Σ(x−mean)²/N, y = (x−mean)·rsqrt(var+ε)·γ + β
 *              → tuple(y, mean, var). XLA's expander uses E[x²] − E[x]² (two
 *              independent reductions); in f32 that cancels badly when the
 *              mean is large next to the spread (the corpus' layer norms
 *              lose 3 digits), so the two-pass form is used here.
 *   inference: y = (x−mean)·(γ·rsqrt(var+ε)) + β
 *   grad:      r = rsqrt(var+ε), d = x−mean, gβ = Σdy, gγ = Σ(dy·d)·r,
 *              gx = (γ·r/N)·(N·dy − gβ − d·(Σ(dy·d)·r²))  → tuple(gx, gγ, gβ)
 * Users of the tuple results read them through get-tuple-element, which
 * tuple-simplify then forwards. */
#include "passes/rewrite.h"

typedef struct bn {
	nx_rw *rw;
	nx_inst *x;
	int64_t f;    /* feature dimension */
	nx_type t;
	nx_shape *fs; /* [F] */
} bn;

static nx_inst *sum_f(bn *b, nx_inst *v)
{
	int64_t dims[NX_MAX_RANK];
	int n = 0;
	for (int k = 0; k < v->shape->rank; k++)
		if (k != b->f)
			dims[n++] = k;
	nx_inst *zero = nx_rw_scalar(b->rw, b->t, 0);
	return nx_rw_reduce(b->rw, v, zero, dims, n, NX_OP_ADD);
}

/* [F] → x's shape along the feature dimension */
static nx_inst *bc(bn *b, nx_inst *v)
{
	return nx_rw_broadcast(b->rw, v, b->t, b->x->shape->rank, b->x->shape->dims, &b->f);
}

static nx_inst *op2(bn *b, nx_opcode op, nx_inst *x, nx_inst *y)
{
	return nx_rw_binary(b->rw, op, x, y);
}

static nx_inst *expand(nx_rw *rw, nx_inst *in)
{
	if (in->op != NX_OP_BATCH_NORM_TRAINING && in->op != NX_OP_BATCH_NORM_INFERENCE &&
	    in->op != NX_OP_BATCH_NORM_GRAD)
		return NULL;
	nx_inst *x = in->operands[0];
	if (!nx_shape_is_array(x->shape) || !nx_type_is_float(x->shape->type))
		return NULL;
	int64_t f = in->a.feature_index;
	if (f < 0 || f >= x->shape->rank)
		return NULL;
	/* mixed-precision accumulation: every operand into f32, results back */
	nx_type orig = x->shape->type;
	bool widen = !rw->ctx->no_mixed_accumulation && nx_type_bits(orig) < 32;
	nx_inst *ops[5];
	for (int k = 0; k < in->noperands && k < 5; k++) {
		ops[k] = in->operands[k];
		if (widen && nx_shape_is_array(ops[k]->shape) && nx_type_is_float(ops[k]->shape->type) &&
		    ops[k]->shape->type != NX_F32)
			ops[k] = nx_rw_convert(rw, ops[k], NX_F32);
	}
	x = ops[0];
	bn b = {rw, x, f, x->shape->type, NULL};
	b.fs = nx_shape_array(nx_rw_arena(rw), b.t, 1, &x->shape->dims[f]);
	int64_t total = nx_shape_elems(x->shape);
	double n = x->shape->dims[f] ? (double)(total / x->shape->dims[f]) : 0;
	nx_inst *eps = nx_rw_splat(rw, b.fs, b.t, (double)in->a.epsilon);
	nx_inst *scale = ops[1];
	if (in->op == NX_OP_BATCH_NORM_INFERENCE) {
		nx_inst *offset = ops[2], *mean = ops[3], *var = ops[4];
		nx_inst *r = nx_rw_unary(rw, NX_OP_RSQRT, op2(&b, NX_OP_ADD, var, eps));
		nx_inst *k = op2(&b, NX_OP_MULTIPLY, scale, r);
		nx_inst *d = op2(&b, NX_OP_SUBTRACT, x, bc(&b, mean));
		nx_inst *y = op2(&b, NX_OP_ADD, op2(&b, NX_OP_MULTIPLY, d, bc(&b, k)), bc(&b, offset));
		return y->shape->type == in->shape->type ? y : nx_rw_convert(rw, y, in->shape->type);
	}
	nx_inst *nf = nx_rw_splat(rw, b.fs, b.t, n);
	nx_inst *res[3];
	if (in->op == NX_OP_BATCH_NORM_TRAINING) {
		nx_inst *offset = ops[2];
		nx_inst *mean = op2(&b, NX_OP_DIVIDE, sum_f(&b, x), nf);
		nx_inst *d = op2(&b, NX_OP_SUBTRACT, x, bc(&b, mean));
		nx_inst *var = op2(&b, NX_OP_DIVIDE, sum_f(&b, op2(&b, NX_OP_MULTIPLY, d, d)), nf);
		nx_inst *r = nx_rw_unary(rw, NX_OP_RSQRT, op2(&b, NX_OP_ADD, var, eps));
		nx_inst *y = op2(&b, NX_OP_MULTIPLY, op2(&b, NX_OP_MULTIPLY, d, bc(&b, r)), bc(&b, scale));
		res[0] = op2(&b, NX_OP_ADD, y, bc(&b, offset));
		res[1] = mean;
		res[2] = var;
	} else {
		nx_inst *mean = ops[2], *var = ops[3], *dy = ops[4];
		nx_inst *r = nx_rw_unary(rw, NX_OP_RSQRT, op2(&b, NX_OP_ADD, var, eps));
		nx_inst *d = op2(&b, NX_OP_SUBTRACT, x, bc(&b, mean));
		nx_inst *gb = sum_f(&b, dy);
		nx_inst *s = sum_f(&b, op2(&b, NX_OP_MULTIPLY, dy, d));
		nx_inst *gs = op2(&b, NX_OP_MULTIPLY, s, r);
		nx_inst *k = op2(&b, NX_OP_DIVIDE, op2(&b, NX_OP_MULTIPLY, scale, r), nf);
		nx_inst *q = op2(&b, NX_OP_MULTIPLY, gs, r);
		nx_inst *t1 = op2(&b, NX_OP_MULTIPLY, bc(&b, nf), dy);
		nx_inst *t2 = op2(&b, NX_OP_SUBTRACT, t1, bc(&b, gb));
		nx_inst *t3 = op2(&b, NX_OP_SUBTRACT, t2, op2(&b, NX_OP_MULTIPLY, d, bc(&b, q)));
		res[0] = op2(&b, NX_OP_MULTIPLY, bc(&b, k), t3);
		res[1] = gs;
		res[2] = gb;
	}
	for (int k = 0; k < 3 && nx_shape_is_tuple(in->shape) && k < in->shape->ntuple; k++)
		if (res[k]->shape->type != in->shape->tuple[k]->type)
			res[k] = nx_rw_convert(rw, res[k], in->shape->tuple[k]->type);
	nx_shape *ts[3] = {res[0]->shape, res[1]->shape, res[2]->shape};
	return nx_rw_add(rw, NX_OP_TUPLE, nx_shape_tuple(nx_rw_arena(rw), 3, ts), res, 3, NULL);
}

nx_status nx_pass_batchnorm_expand(nx_module *m, const nx_pass_ctx *ctx, bool *changed)
{
	return nx_rw_run(m, ctx, "batchnorm-expand", expand, NULL, changed);
}
