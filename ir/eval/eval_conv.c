/* ir/eval/eval_conv.c — convolution in the reference evaluator.
 *
 * Direct algorithm, one output element at a time: gather the (lhs, rhs)
 * element pairs its window covers, then accumulate. Accumulation follows
 * XLA's evaluator: in the output type's compute type (f32 for f32 and the
 * narrow floats, f64 for f64, wrapping integers, complex in double), with the
 * operands converted to that type first. */
#include <stdlib.h>

#include "ir/eval/eval_ops.h"

enum { ACC_F32, ACC_F64, ACC_INT, ACC_CPLX };

/* Operand values converted once to the accumulation type. */
typedef struct conv_vals {
	float *f;
	double *d;  /* f64, or (re, im) pairs for complex */
	uint64_t *u;
} conv_vals;

static bool load_vals(nx_eval *ev, const nx_literal *l, int mode, conv_vals *v)
{
	int64_t n = nx_shape_elems(l->shape);
	size_t cnt = (size_t)(n ? n : 1);
	switch (mode) {
	case ACC_F32:
		v->f = nx_arena_alloc(&ev->arena, cnt * sizeof(float));
		for (int64_t k = 0; k < n; k++)
			v->f[k] = (float)nx_lit_get_f64(l, k);
		return v->f != NULL;
	case ACC_F64:
		v->d = nx_arena_alloc(&ev->arena, cnt * sizeof(double));
		for (int64_t k = 0; k < n; k++)
			v->d[k] = nx_lit_get_f64(l, k);
		return v->d != NULL;
	case ACC_INT:
		v->u = nx_arena_alloc(&ev->arena, cnt * sizeof(uint64_t));
		for (int64_t k = 0; k < n; k++)
			v->u[k] = nx_type_kind_of(l->shape->type) == NX_KIND_FLOAT
			                  ? (uint64_t)(int64_t)nx_lit_get_f64(l, k)
			                  : nx_lit_get_u64(l, k);
		return v->u != NULL;
	default:
		v->d = nx_arena_alloc(&ev->arena, 2 * cnt * sizeof(double));
		for (int64_t k = 0; k < n; k++) {
			if (nx_type_kind_of(l->shape->type) == NX_KIND_COMPLEX)
				nx_lit_get_c128(l, k, &v->d[2 * k], &v->d[2 * k + 1]);
			else
				v->d[2 * k] = nx_lit_get_f64(l, k);
		}
		return v->d != NULL;
	}
}

nx_status nx_eval_convolution(nx_eval *ev, const nx_inst *i, nx_literal *const *ops, nx_literal **out)
{
	const nx_literal *lhs = ops[0], *rhs = ops[1];
	const nx_shape *ls = lhs->shape, *rs = rhs->shape, *os = i->shape;
	const nx_conv_dnums *dn = &i->a.conv;
	int nsp = dn->in_spatial.n;
	if (!dn->present || dn->k_spatial.n != nsp || dn->out_spatial.n != nsp ||
	    (i->a.window.ndims != nsp && !(i->a.window.ndims == 0 && nsp == 0)))
		return nx_eval_error(ev, i, "convolution: dimension numbers do not match the window");
	nx_literal *res = nx_eval_alloc(ev, i->shape);
	if (!res)
		return ev->diag->status;
	*out = res;
	int64_t nout = nx_shape_elems(os);
	if (nout == 0)
		return NX_OK;

	nx_type ot = os->type;
	int mode;
	switch (nx_type_kind_of(ot)) {
	case NX_KIND_FLOAT: mode = ot == NX_F64 ? ACC_F64 : ACC_F32; break;
	case NX_KIND_COMPLEX: mode = ACC_CPLX; break;
	default: mode = ACC_INT; break;
	}
	conv_vals lv = {0}, rv = {0};
	if (!load_vals(ev, lhs, mode, &lv) || !load_vals(ev, rhs, mode, &rv))
		return nx_eval_error(ev, i, "out of memory");

	int64_t lst[NX_MAX_RANK], rst[NX_MAX_RANK], oidx[NX_MAX_RANK];
	nx_evop_strides(ls, lst);
	nx_evop_strides(rs, rst);
	int64_t G = i->a.feature_group_count > 0 ? i->a.feature_group_count : 1;
	int64_t B = i->a.batch_group_count > 0 ? i->a.batch_group_count : 1;
	int64_t in_batch = ls->dims[dn->in_batch];
	int64_t in_feat = ls->dims[dn->in_feature];
	int64_t out_feat = os->dims[dn->out_feature];
	int64_t ifg = in_feat / G;           /* input features per feature group */
	int64_t kin = rs->dims[dn->k_in];     /* == ifg */
	int64_t ofg = out_feat / G;          /* output features per feature group */
	int64_t ofb = out_feat / B;          /* output features per batch group */
	int64_t bgs = in_batch / B;          /* input batches per batch group */
	if (kin != ifg || ofg == 0 || ofb == 0)
		return nx_eval_error(ev, i, "convolution: feature or batch group counts do not divide");

	int64_t kdims[NX_MAX_RANK], kidx[NX_MAX_RANK];
	int64_t kwin = 1;
	for (int s = 0; s < nsp; s++) {
		kdims[s] = i->a.window.dims[s].size;
		kwin *= kdims[s];
	}
	if (kwin == 0 || kin == 0)
		return NX_OK; /* empty sums: zeros */

	for (int64_t o = 0; o < nout; o++) {
		nx_evop_unravel(o, os->dims, os->rank, oidx);
		int64_t of = oidx[dn->out_feature];
		int64_t fg = of / ofg, bg = of / ofb;
		int64_t lbase = (bg * bgs + oidx[dn->out_batch]) * lst[dn->in_batch] +
		                fg * ifg * lst[dn->in_feature];
		int64_t rbase = of * rst[dn->k_out];
		float accf = 0;
		double accd = 0, acci = 0;
		uint64_t accu = 0;
		memset(kidx, 0, sizeof(int64_t) * (size_t)nsp);
		do {
			int64_t loff = lbase, roff = rbase;
			bool ok = true;
			for (int s = 0; s < nsp && ok; s++) {
				const nx_window_dim *w = &i->a.window.dims[s];
				int64_t bd = w->base_dilation > 0 ? w->base_dilation : 1;
				int64_t wd = w->window_dilation > 0 ? w->window_dilation : 1;
				int64_t st = w->stride > 0 ? w->stride : 1;
				int64_t pos = oidx[dn->out_spatial.v[s]] * st - w->pad_lo + kidx[s] * wd;
				int64_t isz = ls->dims[dn->in_spatial.v[s]];
				if (pos < 0 || pos % bd != 0 || pos / bd >= isz) {
					ok = false;
					break;
				}
				loff += (pos / bd) * lst[dn->in_spatial.v[s]];
				int64_t kk = w->reversal ? kdims[s] - 1 - kidx[s] : kidx[s];
				roff += kk * rst[dn->k_spatial.v[s]];
			}
			if (!ok)
				continue;
			int64_t lfs = lst[dn->in_feature], rfs = rst[dn->k_in];
			switch (mode) {
			case ACC_F32:
				for (int64_t z = 0; z < kin; z++)
					accf += lv.f[loff + z * lfs] * rv.f[roff + z * rfs];
				break;
			case ACC_F64:
				for (int64_t z = 0; z < kin; z++)
					accd += lv.d[loff + z * lfs] * rv.d[roff + z * rfs];
				break;
			case ACC_INT:
				for (int64_t z = 0; z < kin; z++)
					accu += lv.u[loff + z * lfs] * rv.u[roff + z * rfs];
				break;
			default:
				for (int64_t z = 0; z < kin; z++) {
					const double *a = &lv.d[2 * (loff + z * lfs)], *b = &rv.d[2 * (roff + z * rfs)];
					accd += a[0] * b[0] - a[1] * b[1];
					acci += a[0] * b[1] + a[1] * b[0];
				}
				break;
			}
		} while (nx_evop_next(kidx, kdims, nsp));
		switch (mode) {
		case ACC_F32: nx_lit_set_f64(res, o, (double)accf); break;
		case ACC_F64: nx_lit_set_f64(res, o, accd); break;
		case ACC_INT:
			if (nx_type_kind_of(ot) == NX_KIND_SINT)
				nx_lit_set_i64(res, o, (int64_t)accu);
			else
				nx_lit_set_u64(res, o, accu);
			break;
		default: nx_lit_set_c128(res, o, accd, acci); break;
		}
	}
	return NX_OK;
}
