/* ir/eval/eval_custom.c — the custom-call targets torch-neuronx graphs use.
 *
 *  AwsNeuronGelu(x)            gelu in its exact erf form, 0.5·x·(1 + erf(x/√2)).
 *                              torch's default GELU (approximate='none') is the
 *                              erf form; the tanh approximation is not used here.
 *  AwsNeuronGeluBackward(x)    gelu'(x) = Φ(x) + x·φ(x). In the corpus the call has
 *                              one operand and the graph multiplies the result by
 *                              the incoming gradient itself; with two operands
 *                              (grad, x) the product is taken here.
 *  AwsNeuronSoftmax(x)         softmax along the axis in backend_config ("3" or 3).
 *  AwsNeuronSoftmaxBackward(g, y)  y·(g − Σ g·y) along the axis, y = softmax output.
 *  AwsNeuronTransferWithStaticRing(x)  identity.
 * Computation is in f32 (f64 for f64 tensors), rounded once to the result type. */
#include "ir/eval/eval_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static double gelu_grad(double x)
{
	return 0.5 * (1 + erf(x * M_SQRT1_2)) + x * exp(-0.5 * x * x) * (0.5 * M_2_SQRTPI * M_SQRT1_2);
}

nx_status nx_eval_custom_call(nx_eval *ev, const nx_inst *i, nx_literal *const *ops, nx_literal **out)
{
	const char *t = i->a.custom_call_target ? i->a.custom_call_target : "";
	bool gelu = !strcmp(t, "AwsNeuronGelu"), gelub = !strcmp(t, "AwsNeuronGeluBackward");
	bool sm = !strcmp(t, "AwsNeuronSoftmax"), smb = !strcmp(t, "AwsNeuronSoftmaxBackward");
	if (!strcmp(t, "AwsNeuronTransferWithStaticRing")) {
		if (i->noperands < 1)
			return nx_eval_error(ev, i, "%s needs an operand", t);
		*out = i->noperands == 1 ? ops[0] : NULL;
		if (!*out)
			return nx_eval_error(ev, i, "%s with %d operands", t, i->noperands);
		return NX_OK;
	}
	if (!gelu && !gelub && !sm && !smb)
		return nx_eval_error(ev, i, "custom-call target '%s' is not supported by the evaluator", t);
	int need = smb ? 2 : 1;
	if (i->noperands < need || i->noperands > (gelub ? 2 : need) || !nx_shape_is_array(i->shape))
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
	if (gelu || gelub) {
		for (int64_t k = 0; k < n; k++) {
			double v = gelu ? 0.5 * x[k] * (1 + erf(x[k] * M_SQRT1_2)) : gelu_grad(x[k]);
			if (gelub && i->noperands == 2)
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
