/* backend/lower_custom.c — the AwsNeuron custom calls of torch-neuronx
 * graphs, with the formulas of ir/eval/eval_custom.c:
 *   AwsNeuronGelu(x)               ACT gelu (erf form)
 *   AwsNeuronGeluBackward(x[, g])  Φ(x) + x·φ(x) (times g with two operands)
 *   AwsNeuronSoftmax(x)            along the backend_config axis: rows on
 *                                  partitions, max and sum per row on DVE, exp on ACT
 *   AwsNeuronSoftmaxBackward(g, y) y·(g − Σ g·y) along the axis
 * The axis is moved last by a DMA when it is not. */
#include "backend/lower_ext.h"

#include <stdlib.h>
#include <string.h>

static bool is(const nx_inst *i, const char *t)
{
	return i->a.custom_call_target && !strcmp(i->a.custom_call_target, t);
}

bool nx_l_custom_ok(const nx_inst *i)
{
	if (!nx_shape_is_array(i->shape))
		return false;
	if (is(i, "AwsNeuronGelu") || is(i, "AwsNeuronSoftmax"))
		return i->noperands == 1;
	if (is(i, "AwsNeuronGeluBackward"))
		return i->noperands == 1 || i->noperands == 2;
	if (is(i, "AwsNeuronSoftmaxBackward"))
		return i->noperands == 2;
	return false;
}

/* v with dim ax moved last: a permuted copy (or v itself when ax is last or
 * the dims after it are all 1); back = true copies src (axis last) into v's
 * layout instead. */
static nx_status axis_last(nx_lower *L, nx_lval *v, int ax, nx_lval **res)
{
	const nx_shape *s = v->shape;
	int64_t inner = 1;
	for (int k = ax + 1; k < s->rank; k++)
		inner *= s->dims[k];
	if (inner == 1) {
		*res = v;
		return NX_OK;
	}
	nx_lview w = nx_l_view_of(v), p = w;
	int r = 0;
	for (int k = 0; k < s->rank; k++)
		if (k != ax)
			p.dims[r] = w.dims[k], p.stride[r] = w.stride[k], r++;
	p.dims[r] = w.dims[ax], p.stride[r] = w.stride[ax];
	nx_lval *c = nx_l_newval(L, s);
	nx_lview d = nx_l_view_of(c);
	int64_t st = 1;
	for (int k = s->rank - 1; k >= 0; k--)
		d.dims[k] = p.dims[k], d.stride[k] = st, st *= p.dims[k];
	nx_lsync y, ww = c->buf->war;
	nx_status rc = nx_l_dma_vv(L, &p, &d, &ww, &y);
	nx_l_max(&c->buf->written, &y);
	nx_l_max(&c->buf->war, &y);
	*res = c;
	return rc;
}

/* out (layout of the original) = src (axis last) */
static nx_status axis_back(nx_lower *L, nx_lval *src, int ax, nx_lval *out)
{
	const nx_shape *s = out->shape;
	nx_lview w = nx_l_view_of(out), d = w, sv = nx_l_view_of(src);
	int r = 0;
	for (int k = 0; k < s->rank; k++)
		if (k != ax)
			d.dims[r] = w.dims[k], d.stride[r] = w.stride[k], r++;
	d.dims[r] = w.dims[ax], d.stride[r] = w.stride[ax];
	int64_t st = 1;
	for (int k = s->rank - 1; k >= 0; k--)
		sv.dims[k] = d.dims[k], sv.stride[k] = st, st *= d.dims[k];
	nx_lsync y, ww = out->buf->war;
	nx_status rc = nx_l_dma_vv(L, &sv, &d, &ww, &y);
	nx_l_max(&out->buf->written, &y);
	nx_l_max(&out->buf->war, &y);
	return rc;
}

#define TS(P, F, D, A, IMM) nx_lp_add(P, NX_ENG_DVE, NX_I_TENSOR_SCALAR, NX_ALU_##F, D, A, -1, IMM)
#define TT(P, F, D, A, B) nx_lp_add(P, NX_ENG_DVE, NX_I_TENSOR_TENSOR, NX_ALU_##F, D, A, B, 0)
#define AC(P, F, D, A, SCALE) nx_lp_add(P, NX_ENG_ACT, NX_I_ACTIVATE, NX_ACT_##F, D, A, -1, SCALE)

nx_status nx_l_custom(nx_lower *L, const nx_inst *i, nx_lval *const *ops, nx_lval *out)
{
	nx_lprog p;
	memset(&p, 0, sizeof p);
	int64_t n = nx_shape_elems(out->shape);
	if (n == 0)
		return NX_OK;
	if (is(i, "AwsNeuronGelu")) {
		p.nin = 1;
		AC(&p, GELU, 1, 0, 1.0f);
		return nx_l_rowprog(L, &p, ops, out, n, 1);
	}
	if (is(i, "AwsNeuronGeluBackward")) {
		/* slots: x [g], out, then scratch e, q */
		int nin = i->noperands, x = nin - 1, o = nin, e = nin + 1, q = nin + 2;
		nx_lval *in[2] = {ops[0], ops[1]};
		p.nin = nin;
		p.nscratch = 2;
		AC(&p, ERF, e, x, 0.70710678118654752f);
		AC(&p, SQUARE, q, x, 1.0f);
		AC(&p, EXP, q, q, -0.5f);
		TS(&p, MUL, e, e, 0.5f);
		TS(&p, ADD, e, e, 0.5f);
		TT(&p, MUL, q, q, x);
		TS(&p, MUL, q, q, 0.39894228040143268f); /* 1/sqrt(2 pi) */
		TT(&p, ADD, nin == 2 ? e : o, e, q);
		if (nin == 2)
			TT(&p, MUL, o, e, 0);
		return nx_l_rowprog(L, &p, in, out, n, 1);
	}
	bool bwd = is(i, "AwsNeuronSoftmaxBackward");
	int rank = out->shape->rank;
	int64_t ax = nx_custom_call_axis(i, rank);
	if (rank == 0 || ax < 0 || ax >= rank)
		return nx_l_err(L, "%s: axis %lld out of range", i->a.custom_call_target, (long long)ax);
	int64_t R = out->shape->dims[ax], O = n / R;
	nx_lval *in[2] = {NULL, NULL}, *res = out;
	nx_status rc = NX_OK;
	for (int k = 0; k < i->noperands && rc == NX_OK; k++)
		rc = axis_last(L, ops[k], (int)ax, &in[k]);
	if (rc)
		return rc;
	if (in[0] != ops[0])
		res = nx_l_newval(L, out->shape);
	if (!bwd) {
		/* slots: x, out, d (full), m (row), s (row) */
		p.nin = 1;
		p.nscratch = 3;
		p.row[3] = p.row[4] = true;
		nx_lp_add(&p, NX_ENG_DVE, NX_I_TENSOR_REDUCE, NX_ALU_MAX, 3, 0, -1, 0);
		TT(&p, SUB, 2, 0, 3);
		AC(&p, EXP, 2, 2, 1.0f);
		nx_lp_add(&p, NX_ENG_DVE, NX_I_TENSOR_REDUCE, NX_ALU_ADD, 4, 2, -1, 0);
		TT(&p, DIV, 1, 2, 4);
	} else {
		/* slots: g, y, out, t (full), s (row) */
		p.nin = 2;
		p.nscratch = 2;
		p.row[4] = true;
		TT(&p, MUL, 3, 0, 1);
		nx_lp_add(&p, NX_ENG_DVE, NX_I_TENSOR_REDUCE, NX_ALU_ADD, 4, 3, -1, 0);
		TT(&p, SUB, 3, 0, 4);
		TT(&p, MUL, 2, 1, 3);
	}
	rc = nx_l_rowprog(L, &p, in, res, O, R);
	if (rc == NX_OK && res != out)
		rc = axis_back(L, res, (int)ax, out);
	for (int k = 0; k < i->noperands; k++)
		if (in[k] && in[k] != ops[k])
			nx_l_release_buf(L, in[k]->buf);
	if (res != out)
		nx_l_release_buf(L, res->buf);
	return rc;
}
