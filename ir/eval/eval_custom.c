/* ir/eval/eval_custom.c — the custom-call targets torch-neuronx and JAX
 * graphs use.
 *
 *  AwsNeuronGelu(x)            gelu in its exact erf form, 0.5·x·(1 + erf(x/√2)).
 *                              torch's default GELU (approximate='none') is the
 *                              erf form; the tanh approximation is not used here.
 *  AwsNeuronGeluApprxTanh(x)   the tanh form 0.5·x·(1 + tanh(√(2/π)(x + 0.044715x³))).
 *  AwsNeuronGeluBackward(x)    gelu'(x) = Φ(x) + x·φ(x). In the corpus the call has
 *                              one operand and the graph multiplies the result by
 *                              the incoming gradient itself; with two operands
 *                              (grad, x) the product is taken here.
 *  AwsNeuronSilu(x)            x·σ(x).
 *  AwsNeuronSiluBackward(x)    σ(x)·(1 + x·(1 − σ(x))); (grad, x) as for gelu.
 *  AwsNeuronErf(x)             erf(x).
 *  AwsNeuronRmsNorm(x, w, eps) x / sqrt(mean over dim d of x² + eps) · w[i_d], d in
 *                              backend_config.
 *  AwsNeuronSoftmax(x)         softmax along the axis in backend_config ("3" or 3).
 *  AwsNeuronSoftmaxBackward(g, y)  y·(g − Σ g·y) along the axis, y = softmax output.
 *  AwsNeuronTransferWithStaticRing(x), and JAX's Sharding, SPMDFullToShardShape,
 *  SPMDShardToFullShape, xla.sdy.* with one operand of the result's shape:
 *                              identity (one device).
 * Computation is in f32 (f64 for f64 tensors), rounded once to the result type. */
#include "ir/eval/eval_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

bool nx_eval_custom_is_identity(const nx_inst *i)
{
	const char *t = i->op == NX_OP_CUSTOM_CALL && i->a.custom_call_target ? i->a.custom_call_target : "";
	return !strcmp(t, "AwsNeuronTransferWithStaticRing") || !strcmp(t, "Sharding") ||
	       !strcmp(t, "SPMDFullToShardShape") || !strcmp(t, "SPMDShardToFullShape") || !strncmp(t, "xla.sdy.", 8);
}

static double gelu_grad(double x)
{
	return 0.5 * (1 + erf(x * M_SQRT1_2)) + x * exp(-0.5 * x * x) * (0.5 * M_2_SQRTPI * M_SQRT1_2);
}

/* x (any float), w[dim], eps scalar; backend_config = dim. */
static nx_status eval_rms_norm(nx_eval *ev, const nx_inst *i, nx_literal *const *ops, nx_literal **out)
{
	const char *t = "AwsNeuronRmsNorm";
	if (i->noperands != 3 || !nx_shape_is_array(i->shape) || i->shape->rank == 0)
		return nx_eval_error(ev, i, "%s needs (x, weight, eps) and an array result", t);
	int r = i->shape->rank;
	int64_t d = nx_custom_call_axis(i, r);
	if (d < 0 || d >= r || nx_shape_elems(ops[0]->shape) != nx_shape_elems(i->shape) ||
	    nx_shape_elems(ops[1]->shape) != i->shape->dims[d] || nx_shape_elems(ops[2]->shape) != 1)
		return nx_eval_error(ev, i, "%s: operands do not match the result and dimension %lld", t, (long long)d);
	for (int k = 0; k < 3; k++)
		if (nx_dom_of(ops[k]->shape->type) == NX_DOM_INT || nx_dom_of(ops[k]->shape->type) == NX_DOM_C)
			return nx_eval_error(ev, i, "%s: operand %d must be floating point", t, k);
	nx_literal *o = nx_eval_alloc(ev, i->shape);
	if (!o)
		return NX_ERR_INPUT;
	*out = o;
	int64_t n = nx_shape_elems(i->shape), len = i->shape->dims[d], inner = 1;
	for (int j = (int)d + 1; j < r; j++)
		inner *= i->shape->dims[j];
	double *x = malloc(sizeof(double) * (size_t)(n ? n : 1));
	double *w = malloc(sizeof(double) * (size_t)(len ? len : 1));
	double eps;
	NX_ASSERT(x && w);
	nx_load_f64(ops[0], 0, n, x);
	nx_load_f64(ops[1], 0, len, w);
	nx_load_f64(ops[2], 0, 1, &eps);
	bool f64 = i->shape->type == NX_F64;
	int64_t outer = len && inner ? n / (len * inner) : 0;
	for (int64_t a = 0; a < outer; a++)
		for (int64_t b = 0; b < inner; b++) {
			double *row = x + a * len * inner + b, ss = 0;
			for (int64_t k = 0; k < len; k++)
				ss += row[k * inner] * row[k * inner];
			double inv = 1.0 / sqrt(ss / (double)len + eps);
			for (int64_t k = 0; k < len; k++) {
				double v = row[k * inner] * inv * w[k];
				row[k * inner] = f64 ? v : (double)(float)v;
			}
		}
	nx_store_f64(o, 0, n, x);
	free(x);
	free(w);
	return NX_OK;
}

nx_eval_custom_fn nx_eval_custom_hook;

nx_status nx_eval_custom_call(nx_eval *ev, const nx_inst *i, nx_literal *const *ops, nx_literal **out)
{
	const char *t = i->a.custom_call_target ? i->a.custom_call_target : "";
	bool gelu = !strcmp(t, "AwsNeuronGelu"), gelub = !strcmp(t, "AwsNeuronGeluBackward");
	bool sm = !strcmp(t, "AwsNeuronSoftmax"), smb = !strcmp(t, "AwsNeuronSoftmaxBackward");
	bool tanhf_ = !strcmp(t, "AwsNeuronGeluApprxTanh"), erf_ = !strcmp(t, "AwsNeuronErf");
	bool silu = !strcmp(t, "AwsNeuronSilu"), silub = !strcmp(t, "AwsNeuronSiluBackward");
	bool rms = !strcmp(t, "AwsNeuronRmsNorm");
	if (nx_eval_custom_is_identity(i)) {
		if (i->noperands != 1 || !nx_shape_compatible(ops[0]->shape, i->shape))
			return nx_eval_error(ev, i, "%s needs one operand of the result's shape (one device)", t);
		*out = ops[0];
		return NX_OK;
	}
	if (rms)
		return eval_rms_norm(ev, i, ops, out);
	if (!gelu && !gelub && !sm && !smb && !tanhf_ && !erf_ && !silu && !silub && nx_eval_custom_hook) {
		/* user GpSimd kernels (compiler/custom_op.c) */
		bool handled = false;
		nx_status hrc = nx_eval_custom_hook(ev, i, ops, out, &handled);
		if (handled)
			return hrc;
	}
	if (!gelu && !gelub && !sm && !smb && !tanhf_ && !erf_ && !silu && !silub)
		return nx_eval_error(ev, i, "custom-call target '%s' is not supported by the evaluator", t);
	int need = smb ? 2 : 1;
	if (i->noperands < need || i->noperands > (gelub || silub ? 2 : need) || !nx_shape_is_array(i->shape))
		return nx_eval_error(ev, i, "%s with %d operands", t, i->noperands);
	for (int k = 0; k < i->noperands; k++)
		if (nx_shape_elems(ops[k]->shape) != nx_shape_elems(i->shape) || nx_dom_of(ops[k]->shape->type) == NX_DOM_INT ||
		    nx_dom_of(ops[k]->shape->type) == NX_DOM_C)
			return nx_eval_error(ev, i, "%s: operand %d must be a float array of the result's size", t, k);
	nx_literal *o = nx_eval_alloc(ev, i->shape);
	if (!o)
		return NX_ERR_INPUT;
	*out = o;
	int64_t n = nx_shape_elems(i->shape);
	double *x = malloc(sizeof(double) * (size_t)(n ? n : 1));
	double *y = malloc(sizeof(double) * (size_t)(n ? n : 1));
	NX_ASSERT(x && y);
	bool f64 = i->shape->type == NX_F64;
	/* values pass through f32 unless the tensor is f64 */
	nx_load_f64(ops[i->noperands - 1], 0, n, x);
	if (i->noperands == 2)
		nx_load_f64(ops[0], 0, n, y);
	nx_status st = NX_OK;
	if (gelu || gelub || tanhf_ || erf_ || silu || silub) {
		for (int64_t k = 0; k < n; k++) {
			double a = x[k], v;
			if (gelu)
				v = 0.5 * a * (1 + erf(a * M_SQRT1_2));
			else if (gelub)
				v = gelu_grad(a);
			else if (tanhf_)
				v = 0.5 * a * (1 + tanh(sqrt(2.0 / M_PI) * (a + 0.044715 * a * a * a)));
			else if (erf_)
				v = erf(a);
			else {
				double sg = 1.0 / (1.0 + exp(-a));
				v = silu ? a * sg : sg * (1 + a * (1 - sg));
			}
			if ((gelub || silub) && i->noperands == 2)
				v *= y[k];
			x[k] = f64 ? v : (double)(float)v;
		}
	} else {
		int r = i->shape->rank;
		int64_t ax = nx_custom_call_axis(i, r);
		if (r == 0 || ax < 0 || ax >= r) {
			st = nx_eval_error(ev, i, "%s: axis %lld out of range for rank %d", t, (long long)ax, r);
		} else {
			int64_t len = i->shape->dims[ax], inner = 1;
			for (int d = (int)ax + 1; d < r; d++)
				inner *= i->shape->dims[d];
			int64_t outer = len && inner ? n / (len * inner) : 0;
			for (int64_t a = 0; a < outer; a++)
				for (int64_t b = 0; b < inner; b++) {
					double *row = x + a * len * inner + b, *g = y + a * len * inner + b;
					if (sm) {
						double mx = -INFINITY, sum = 0;
						for (int64_t k = 0; k < len; k++)
							mx = row[k * inner] > mx ? row[k * inner] : mx;
						for (int64_t k = 0; k < len; k++)
							sum += (row[k * inner] = exp(row[k * inner] - mx));
						for (int64_t k = 0; k < len; k++)
							row[k * inner] /= sum;
					} else { /* row = y (softmax output), g = incoming gradient */
						double dot = 0;
						for (int64_t k = 0; k < len; k++)
							dot += g[k * inner] * row[k * inner];
						for (int64_t k = 0; k < len; k++)
							row[k * inner] = row[k * inner] * (g[k * inner] - dot);
					}
				}
		}
	}
	if (st == NX_OK)
		nx_store_f64(o, 0, n, x);
	free(x);
	free(y);
	return st;
}
