/* ir/eval/eval_bn.c — batch-norm-training, -inference and -grad in the reference
 * evaluator, with the formulas of XLA's operation semantics (the same ones
 * batchnorm_expander lowers to). Statistics are computed in double over
 * every dim except feature_index; the variance is the biased one. */
#include <stdlib.h>

#include "ir/eval/eval_ops.h"

/* Feature of linear element k of an array with dims, feature dim f. */
static int64_t feature_of(int64_t k, int64_t fstride, int64_t nfeat)
{
	return (k / fstride) % nfeat;
}

nx_status nx_eval_batch_norm(nx_eval *ev, const nx_inst *i, nx_literal *const *ops, nx_literal **out)
{
	const nx_literal *x = ops[0];
	const nx_shape *xs = x->shape;
	int64_t f = i->a.feature_index;
	if (f < 0 || f >= xs->rank)
		return nx_eval_error(ev, i, "feature_index %lld out of range", (long long)f);
	int64_t st[NX_MAX_RANK];
	nx_evop_strides(xs, st);
	int64_t nfeat = xs->dims[f], fstride = st[f];
	int64_t total = nx_shape_elems(xs);
	int64_t per = nfeat ? total / nfeat : 0; /* elements per feature */
	double eps = (double)i->a.epsilon;
	double *mean = calloc((size_t)(nfeat + 1), sizeof(double));
	double *var = calloc((size_t)(nfeat + 1), sizeof(double));
	double *s1 = calloc((size_t)(nfeat + 1), sizeof(double));
	double *s2 = calloc((size_t)(nfeat + 1), sizeof(double));
	nx_status status = NX_OK;
	if (!mean || !var || !s1 || !s2) {
		status = nx_eval_error(ev, i, "out of memory");
		goto done;
	}

	if (i->op == NX_OP_BATCH_NORM_INFERENCE) {
		/* operand, scale, offset, mean, variance */
		nx_literal *r = nx_eval_alloc(ev, i->shape);
		if (!r) {
			status = ev->diag->status;
			goto done;
		}
		for (int64_t k = 0; k < total; k++) {
			int64_t c = feature_of(k, fstride, nfeat);
			double v = (nx_lit_get_f64(x, k) - nx_lit_get_f64(ops[3], c)) /
			                   sqrt(nx_lit_get_f64(ops[4], c) + eps) * nx_lit_get_f64(ops[1], c) +
			           nx_lit_get_f64(ops[2], c);
			nx_lit_set_f64(r, k, v);
		}
		*out = r;
		goto done;
	}

	if (!nx_shape_is_tuple(i->shape) || i->shape->ntuple != 3) {
		status = nx_eval_error(ev, i, "%s must produce a 3-tuple", nx_opcode_name(i->op));
		goto done;
	}
	nx_literal *t = nx_evop_alloc_tuple(ev, i->shape);
	if (!t) {
		status = ev->diag->status;
		goto done;
	}
	if (i->op == NX_OP_BATCH_NORM_TRAINING) {
		/* operand, scale, offset -> (output, batch mean, batch variance) */
		for (int64_t k = 0; k < total; k++)
			mean[feature_of(k, fstride, nfeat)] += nx_lit_get_f64(x, k);
		for (int64_t c = 0; c < nfeat; c++)
			mean[c] = per ? mean[c] / (double)per : 0;
		for (int64_t k = 0; k < total; k++) {
			int64_t c = feature_of(k, fstride, nfeat);
			double dv = nx_lit_get_f64(x, k) - mean[c];
			var[c] += dv * dv;
		}
		for (int64_t c = 0; c < nfeat; c++)
			var[c] = per ? var[c] / (double)per : 0;
		for (int64_t k = 0; k < total; k++) {
			int64_t c = feature_of(k, fstride, nfeat);
			double v = (nx_lit_get_f64(x, k) - mean[c]) / sqrt(var[c] + eps) *
			                   nx_lit_get_f64(ops[1], c) +
			           nx_lit_get_f64(ops[2], c);
			nx_lit_set_f64(t->tuple[0], k, v);
		}
		for (int64_t c = 0; c < nfeat; c++) {
			nx_lit_set_f64(t->tuple[1], c, mean[c]);
			nx_lit_set_f64(t->tuple[2], c, var[c]);
		}
	} else {
		/* operand, scale, mean, variance, grad_output ->
		 * (grad_operand, grad_scale, grad_offset) */
		const nx_literal *gy = ops[4];
		for (int64_t k = 0; k < total; k++) {
			int64_t c = feature_of(k, fstride, nfeat);
			double g = nx_lit_get_f64(gy, k);
			s1[c] += g;
			s2[c] += g * (nx_lit_get_f64(x, k) - nx_lit_get_f64(ops[2], c));
		}
		for (int64_t k = 0; k < total; k++) {
			int64_t c = feature_of(k, fstride, nfeat);
			double ve = nx_lit_get_f64(ops[3], c) + eps;
			double xc = nx_lit_get_f64(x, k) - nx_lit_get_f64(ops[2], c);
			double n = (double)per;
			double v = nx_lit_get_f64(ops[1], c) / sqrt(ve) / n *
			           (n * nx_lit_get_f64(gy, k) - s1[c] - xc * s2[c] / ve);
			nx_lit_set_f64(t->tuple[0], k, v);
		}
		for (int64_t c = 0; c < nfeat; c++) {
			double ve = nx_lit_get_f64(ops[3], c) + eps;
			nx_lit_set_f64(t->tuple[1], c, s2[c] / sqrt(ve));
			nx_lit_set_f64(t->tuple[2], c, s1[c]);
		}
	}
	*out = t;
done:
	free(mean);
	free(var);
	free(s1);
	free(s2);
	return status;
}
