/* passes/custom_call_recognize.c — the custom calls torch-neuronx and JAX
 * leave in a module (DESIGN.md section 4; the list of targets neuronx-cc
 * recognizes is in its error NCC_EVRF015):
 *   AwsNeuronSoftmax(x), AwsNeuronSoftmaxBackward(g, y): backend_config is the
 *     axis ("3" or 3), within the rank; result shaped as x.
 *   These two stay custom calls: the backend has kernels for them.
 * Rewritten into plain HLO here, so the backend needs no kernel of its own
 * (narrow float inputs are computed in f32 and converted back once):
 *   AwsNeuronTransferWithStaticRing(x), and on one device JAX's Sharding,
 *     SPMDFullToShardShape, SPMDShardToFullShape and every xla.sdy.* target
 *     with one operand of the result's shape: x (an identity);
 *   AwsNeuronRmsNorm(x, w, eps), backend_config = the normalized dim d:
 *     x · rsqrt(Σ_d x² / N + eps) · broadcast(w along d);
 *   AwsNeuronGelu(x): 0.5·x·(1 + erf(x/√2));
 *   AwsNeuronGeluBackward([g, ]x): Φ(x) + x·φ(x) [· g];
 *   AwsNeuronGeluApprxTanh(x): 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)));
 *   AwsNeuronSilu(x): x·logistic(x);
 *   AwsNeuronSiluBackward(x[, g]): s·(1 + x·(1 − s)) [· g], s = logistic(x)
 *     (the operand order follows AwsNeuronGeluBackward);
 *   AwsNeuronErf(x): erf(x).
 * The other targets neuronx-cc knows (ArgMax, ArgMin, TopK, DropoutMaskV1,
 * CollectiveMatmul, IntMatmult, CustomNativeKernel, CustomOp, DevicePrint,
 * Resize*) and unknown targets are user errors naming the target, the
 * instruction and its source, at its position in the file. A sharding custom
 * call that changes the shape (a module partitioned for several devices) is
 * refused the same way. */
#include "passes/rewrite.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static nx_inst *fail(nx_rw *rw, const nx_inst *in, const char *fmt, const char *arg)
{
	nx_diag *d = rw->ctx->diag;
	nx_diag tmp = {0};
	if (!d)
		d = &tmp;
	char src[512], msg[1024];
	snprintf(msg, sizeof msg, fmt, arg, in->name);
	if (nx_inst_source(rw->m, in, src, sizeof src))
		rw->status = nx_diag_set(d, NX_ERR_INPUT, rw->m->file, in->line, in->col, "%s [from %s]", msg, src);
	else
		rw->status = nx_diag_set(d, NX_ERR_INPUT, rw->m->file, in->line, in->col, "%s", msg);
	nx_diag_set_inst(d, in->name);
	if (d == &tmp)
		nx_diag_clear(&tmp);
	return NULL;
}

static bool float_like(const nx_inst *in, const nx_inst *x)
{
	return nx_shape_is_array(x->shape) && nx_type_is_float(x->shape->type) &&
	       nx_shape_compatible(x->shape, in->shape);
}

/* x is a float array with the result's dimensions (its type may differ:
 * torch-neuronx converts x to f32 and returns the model's type). */
static bool same_dims_float(const nx_inst *in, const nx_inst *x)
{
	const nx_shape *a = x->shape, *b = in->shape;
	if (!nx_shape_is_array(a) || !nx_shape_is_array(b) || !nx_type_is_float(a->type) ||
	    !nx_type_is_float(b->type) || a->rank != b->rank)
		return false;
	for (int k = 0; k < a->rank; k++)
		if (a->dims[k] != b->dims[k])
			return false;
	return true;
}

static bool narrow_float(nx_type t)
{
	return nx_type_is_float(t) && nx_type_bits(t) < 32;
}

/* x in f32 when it is a narrower float (computing there, converting back once). */
static nx_inst *widen(nx_rw *rw, nx_inst *x)
{
	return narrow_float(x->shape->type) ? nx_rw_convert(rw, x, NX_F32) : x;
}

static nx_inst *narrow_to(nx_rw *rw, nx_inst *v, nx_type t)
{
	return v->shape->type == t ? v : nx_rw_convert(rw, v, t);
}

static bool is_sharding_target(const char *t)
{
	return !strcmp(t, "Sharding") || !strcmp(t, "SPMDFullToShardShape") ||
	       !strcmp(t, "SPMDShardToFullShape") || !strncmp(t, "xla.sdy.", 8);
}

static nx_inst *gelu_tanh(nx_rw *rw, nx_inst *in)
{
	nx_inst *x = widen(rw, in->operands[0]);
	const nx_shape *s = x->shape;
	nx_type t = s->type;
	nx_inst *x3 = nx_rw_binary(rw, NX_OP_MULTIPLY, nx_rw_binary(rw, NX_OP_MULTIPLY, x, x), x);
	nx_inst *inner = nx_rw_binary(rw, NX_OP_ADD, x,
	                              nx_rw_binary(rw, NX_OP_MULTIPLY, nx_rw_splat(rw, s, t, 0.044715), x3));
	nx_inst *th = nx_rw_unary(rw, NX_OP_TANH,
	                          nx_rw_binary(rw, NX_OP_MULTIPLY, nx_rw_splat(rw, s, t, sqrt(2.0 / M_PI)), inner));
	nx_inst *one_p = nx_rw_binary(rw, NX_OP_ADD, nx_rw_splat(rw, s, t, 1.0), th);
	nx_inst *half_x = nx_rw_binary(rw, NX_OP_MULTIPLY, nx_rw_splat(rw, s, t, 0.5), x);
	return narrow_to(rw, nx_rw_binary(rw, NX_OP_MULTIPLY, half_x, one_p), in->shape->type);
}

/* AwsNeuronGelu(x) = 0.5·x·(1 + erf(x/√2)); AwsNeuronGeluBackward(x) =
 * Φ(x) + x·φ(x) = 0.5 + 0.5·erf(x/√2) + x·exp(−x²/2)/√(2π), times g for
 * (g, x). Plain elementwise HLO fuses with its neighbours (a bias add before,
 * the gradient's multiply after); as custom calls they were row programs of
 * their own (bert_dp_graph_4: 2.4 ms each for f32[16,128,4096]). */
static nx_inst *gelu_erf(nx_rw *rw, nx_inst *in, bool backward)
{
	nx_inst *x = widen(rw, in->operands[in->noperands - 1]);
	const nx_shape *s = x->shape;
	nx_type t = s->type;
	nx_inst *e = nx_rw_unary(rw, NX_OP_ERF, nx_rw_binary(rw, NX_OP_MULTIPLY, x, nx_rw_splat(rw, s, t, M_SQRT1_2)));
	nx_inst *half = nx_rw_splat(rw, s, t, 0.5);
	nx_inst *cdf = nx_rw_binary(rw, NX_OP_ADD, half, nx_rw_binary(rw, NX_OP_MULTIPLY, half, e));
	if (!backward)
		return narrow_to(rw, nx_rw_binary(rw, NX_OP_MULTIPLY, x, cdf), in->shape->type);
	nx_inst *sq = nx_rw_binary(rw, NX_OP_MULTIPLY, x, x);
	nx_inst *pdf = nx_rw_unary(rw, NX_OP_EXPONENTIAL, nx_rw_binary(rw, NX_OP_MULTIPLY, sq, nx_rw_splat(rw, s, t, -0.5)));
	nx_inst *xpdf = nx_rw_binary(rw, NX_OP_MULTIPLY, nx_rw_binary(rw, NX_OP_MULTIPLY, x, pdf),
	                             nx_rw_splat(rw, s, t, 0.3989422804014327));
	nx_inst *v = nx_rw_binary(rw, NX_OP_ADD, cdf, xpdf);
	if (in->noperands == 2)
		v = nx_rw_binary(rw, NX_OP_MULTIPLY, v, widen(rw, in->operands[0]));
	return narrow_to(rw, v, in->shape->type);
}

static nx_inst *silu(nx_rw *rw, nx_inst *in, bool backward)
{
	nx_inst *x = widen(rw, in->operands[in->noperands - 1]);
	nx_inst *sg = nx_rw_unary(rw, NX_OP_LOGISTIC, x);
	nx_inst *v;
	if (!backward) {
		v = nx_rw_binary(rw, NX_OP_MULTIPLY, x, sg);
	} else {
		const nx_shape *s = x->shape;
		nx_inst *one = nx_rw_splat(rw, s, s->type, 1.0);
		nx_inst *t1 = nx_rw_binary(rw, NX_OP_MULTIPLY, x, nx_rw_binary(rw, NX_OP_SUBTRACT, one, sg));
		v = nx_rw_binary(rw, NX_OP_MULTIPLY, sg, nx_rw_binary(rw, NX_OP_ADD, one, t1));
		if (in->noperands == 2)
			v = nx_rw_binary(rw, NX_OP_MULTIPLY, v, widen(rw, in->operands[0]));
	}
	return narrow_to(rw, v, in->shape->type);
}

static nx_inst *rms_norm(nx_rw *rw, nx_inst *in, int64_t d)
{
	nx_inst *x = widen(rw, in->operands[0]);
	nx_inst *w = widen(rw, in->operands[1]);
	nx_inst *eps = widen(rw, in->operands[2]);
	const nx_shape *s = x->shape;
	nx_type t = s->type;
	int r = s->rank;
	int64_t rdims[NX_MAX_RANK], bd[NX_MAX_RANK];
	int k = 0;
	for (int j = 0; j < r; j++)
		if (j != d) {
			bd[k] = j;
			rdims[k++] = s->dims[j];
		}
	nx_inst *sq = nx_rw_binary(rw, NX_OP_MULTIPLY, x, x);
	nx_inst *sum = nx_rw_reduce(rw, sq, nx_rw_scalar(rw, t, 0.0), &d, 1, NX_OP_ADD);
	nx_inst *mean = nx_rw_binary(rw, NX_OP_DIVIDE, sum,
	                             nx_rw_splat(rw, sum->shape, t, (double)s->dims[d]));
	nx_inst *epsb = nx_rw_broadcast(rw, eps, t, r - 1, rdims, NULL);
	nx_inst *inv = nx_rw_unary(rw, NX_OP_RSQRT, nx_rw_binary(rw, NX_OP_ADD, mean, epsb));
	nx_inst *invb = nx_rw_broadcast(rw, inv, t, r, s->dims, bd);
	nx_inst *wb = nx_rw_broadcast(rw, w, t, r, s->dims, &d);
	nx_inst *v = nx_rw_binary(rw, NX_OP_MULTIPLY, nx_rw_binary(rw, NX_OP_MULTIPLY, x, invb), wb);
	return narrow_to(rw, v, in->shape->type);
}

bool (*nx_custom_target_hook)(const char *target);

static nx_inst *recognize(nx_rw *rw, nx_inst *in)
{
	if (in->op != NX_OP_CUSTOM_CALL)
		return NULL;
	const char *t = in->a.custom_call_target ? in->a.custom_call_target : "";
	if (!strcmp(t, "AwsNeuronTransferWithStaticRing") || is_sharding_target(t)) {
		if (in->noperands != 1 || !nx_shape_compatible(in->operands[0]->shape, in->shape)) {
			if (is_sharding_target(t) && in->noperands == 1)
				return fail(rw, in, "custom-call target '%s' in instruction '%s' changes the shape: the module is partitioned for several devices (num_partitions > 1), and nxcc compiles for one NeuronCore; hint: dump the module before SPMD partitioning, or compile each partition's module", t);
			return fail(rw, in, "custom-call target '%s' in instruction '%s' must have one operand of the result's shape", t);
		}
		return in->operands[0];
	}
	if (!strcmp(t, "AwsNeuronGelu") || !strcmp(t, "AwsNeuronGeluBackward")) {
		int maxops = t[strlen(t) - 1] == 'd' ? 2 : 1;
		if (in->noperands < 1 || in->noperands > maxops)
			return fail(rw, in, "custom-call target '%s' in instruction '%s' has the wrong number of operands", t);
		for (int k = 0; k < in->noperands; k++)
			if (!same_dims_float(in, in->operands[k]))
				return fail(rw, in, "custom-call target '%s' in instruction '%s' needs floating-point operands with the result's dimensions", t);
		return gelu_erf(rw, in, maxops == 2);
	}
	if (!strcmp(t, "AwsNeuronSoftmax") || !strcmp(t, "AwsNeuronSoftmaxBackward")) {
		int nops = !strcmp(t, "AwsNeuronSoftmax") ? 1 : 2;
		if (in->noperands != nops)
			return fail(rw, in, "custom-call target '%s' in instruction '%s' has the wrong number of operands", t);
		for (int k = 0; k < nops; k++)
			if (!float_like(in, in->operands[k]))
				return fail(rw, in, "custom-call target '%s' in instruction '%s' needs floating-point operands of the result's shape", t);
		int64_t axis;
		if (!nx_custom_call_axis_parse(in->a.backend_config, &axis) || axis < 0 || axis >= in->shape->rank)
			return fail(rw, in, "custom-call target '%s' in instruction '%s' needs backend_config holding an axis within the rank", t);
		return NULL;
	}
	bool silu_f = !strcmp(t, "AwsNeuronSilu"), silu_b = !strcmp(t, "AwsNeuronSiluBackward");
	if (!strcmp(t, "AwsNeuronGeluApprxTanh") || !strcmp(t, "AwsNeuronErf") || silu_f || silu_b) {
		int maxops = silu_b ? 2 : 1;
		if (in->noperands < 1 || in->noperands > maxops)
			return fail(rw, in, "custom-call target '%s' in instruction '%s' has the wrong number of operands", t);
		for (int k = 0; k < in->noperands; k++)
			if (!float_like(in, in->operands[k]))
				return fail(rw, in, "custom-call target '%s' in instruction '%s' needs floating-point operands of the result's shape", t);
		if (silu_f || silu_b)
			return silu(rw, in, silu_b);
		if (!strcmp(t, "AwsNeuronErf"))
			return narrow_to(rw, nx_rw_unary(rw, NX_OP_ERF, widen(rw, in->operands[0])), in->shape->type);
		return gelu_tanh(rw, in);
	}
	if (!strcmp(t, "AwsNeuronRmsNorm")) {
		int64_t d;
		if (in->noperands != 3 || !same_dims_float(in, in->operands[0]) ||
		    !nx_shape_is_array(in->operands[1]->shape) || !nx_type_is_float(in->operands[1]->shape->type) ||
		    !nx_shape_is_array(in->operands[2]->shape) || in->operands[2]->shape->rank != 0 ||
		    !nx_type_is_float(in->operands[2]->shape->type))
			return fail(rw, in, "custom-call target '%s' in instruction '%s' needs (x, weight, eps): float x of the result's shape, a float weight and a float scalar eps", t);
		if (!nx_custom_call_axis_parse(in->a.backend_config, &d) || d < 0 || d >= in->shape->rank)
			return fail(rw, in, "custom-call target '%s' in instruction '%s' needs backend_config holding the normalized dimension within the rank", t);
		const nx_shape *ws = in->operands[1]->shape;
		if (ws->rank != 1 || ws->dims[0] != in->shape->dims[d])
			return fail(rw, in, "custom-call target '%s' in instruction '%s' needs a 1-D weight as long as the normalized dimension", t);
		return rms_norm(rw, in, d);
	}
	if (nx_custom_target_hook && nx_custom_target_hook(t))
		return NULL; /* a user GpSimd kernel (--custom-op, compiler/custom_op.c) */
	static const char *const known[] = {
		"AwsNeuronArgMax", "AwsNeuronArgMin", "AwsNeuronTopK", "AwsNeuronDropoutMaskV1",
		"AwsNeuronCollectiveMatmul", "AwsNeuronIntMatmult", "AwsNeuronCustomNativeKernel",
		"AwsNeuronCustomOp", "AwsNeuronDevicePrint", "ResizeNearest", "ResizeBilinear",
		"ResizeNearestGrad"};
	for (size_t k = 0; k < sizeof known / sizeof known[0]; k++)
		if (!strcmp(t, known[k]))
			return fail(rw, in, "custom-call target '%s' in instruction '%s' is a Neuron custom call that nxcc does not implement yet; hint: express it in plain HLO (torch ops instead of the torch-neuronx kernel)", t);
	return fail(rw, in, "unsupported custom-call target '%s' in instruction '%s' (supported: AwsNeuronGelu, AwsNeuronGeluBackward, AwsNeuronGeluApprxTanh, AwsNeuronSoftmax, AwsNeuronSoftmaxBackward, AwsNeuronRmsNorm, AwsNeuronSilu, AwsNeuronSiluBackward, AwsNeuronErf, AwsNeuronTransferWithStaticRing, and on one device Sharding, SPMDFullToShardShape, SPMDShardToFullShape, xla.sdy.*)", t);
}

nx_status nx_pass_custom_call_recognize(nx_module *m, const nx_pass_ctx *ctx, bool *changed)
{
	return nx_rw_run(m, ctx, "custom-call-recognize", recognize, NULL, changed);
}
