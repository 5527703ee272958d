/* backend/kernels/dot_rows.c — a row epilogue of the batched dot: the row
 * softmax of a dot's result applied to each PSUM tile as it is evacuated,
 * when one tile holds whole rows (dot_loop.c's stationary schedule with
 * nt = N), so the scores never go to HBM and the softmax is no kernel of
 * its own (docs/lowering.md, "Dot row epilogue").
 *
 * nx_l_dot_rows_match recognises the consumer structurally: a fusion whose
 * root is p = e / rowsum(e), e = exp(s - rowmax(s)), s = c * x (c > 0, a
 * product of broadcast constants, 1 when absent), x its parameter k (the
 * dot), the reductions over the last axis, float converts anywhere between.
 * Per tile [np rows, n] in PSUM (f32):
 *   DVE  nb = -c * max(x) over the row (tensor_reduce + tensor_scalar);
 *   ACT  o = exp(c * x + nb), the row sum as the activate's accumulator
 *        (zeroed first), then o /= sum (tensor_scalar per partition).
 * Statistics are f32 whatever the result type. */
#include "backend/lower.h"
#include "ir/eval/eval.h"

#include <math.h>
#include <string.h>

static const nx_inst *skip_cvt(const nx_inst *i)
{
	while (i->op == NX_OP_CONVERT && i->noperands == 1 && nx_type_is_float(i->shape->type) &&
	       nx_type_is_float(i->operands[0]->shape->type))
		i = i->operands[0];
	return i;
}

/* a scalar constant, or a broadcast of one */
static bool bconst(const nx_inst *i, double *v)
{
	i = skip_cvt(i);
	if (i->op == NX_OP_BROADCAST && i->noperands == 1)
		i = skip_cvt(i->operands[0]);
	if (i->op != NX_OP_CONSTANT || !nx_shape_is_array(i->shape) || nx_shape_elems(i->shape) != 1)
		return false;
	*v = nx_lit_get_f64(i->a.literal, 0);
	return true;
}

/* the factors of a product (through float converts): constants multiplied
 * into *c, the others in f[] (false past n) */
static bool factors(const nx_inst *i, const nx_inst **f, int *nf, int n, double *c)
{
	double v;
	i = skip_cvt(i);
	if (i->op == NX_OP_MULTIPLY && i->noperands == 2)
		return factors(i->operands[0], f, nf, n, c) && factors(i->operands[1], f, nf, n, c);
	if (bconst(i, &v)) {
		*c *= v;
		return true;
	}
	if (*nf == n)
		return false;
	f[(*nf)++] = i;
	return true;
}

/* reduce(x, init) over the last axis with `alu`: x */
static const nx_inst *rowred(const nx_inst *i, int alu, double init)
{
	double v;
	i = skip_cvt(i);
	if (i->op != NX_OP_REDUCE || i->noperands != 2 || i->a.dimensions.n != 1 ||
	    i->a.dimensions.v[0] != i->operands[0]->shape->rank - 1 || nx_l_reduce_alu(i) != alu ||
	    !bconst(i->operands[1], &v) || v != init)
		return NULL;
	return skip_cvt(i->operands[0]);
}

/* broadcast of a per-row statistic along the last axis: the statistic */
static const nx_inst *rowbc(const nx_inst *i)
{
	i = skip_cvt(i);
	if (i->op != NX_OP_BROADCAST || i->noperands != 1)
		return NULL;
	const nx_shape *o = i->shape, *s = i->operands[0]->shape;
	if (s->rank != o->rank - 1 || i->a.dimensions.n != s->rank)
		return NULL;
	for (int k = 0; k < s->rank; k++)
		if (i->a.dimensions.v[k] != k || s->dims[k] != o->dims[k])
			return NULL;
	return i->operands[0];
}

bool nx_l_dot_rows_match(const nx_inst *f, int k, nx_ldrows *r)
{
	memset(r, 0, sizeof *r);
	if (f->op != NX_OP_FUSION || f->ncalled != 1 || !f->called[0]->root || k >= f->called[0]->nparams ||
	    !f->called[0]->params[k] || !nx_shape_is_array(f->shape))
		return false;
	const nx_inst *x = f->called[0]->params[k], *root = skip_cvt(f->called[0]->root);
	const nx_shape *xs = x->shape;
	if (xs->rank < 2 || !nx_type_is_float(xs->type) || nx_shape_elems(f->shape) != nx_shape_elems(xs) ||
	    nx_lower_dtype(f->shape->type) != nx_lower_dtype(xs->type))
		return false;
	/* p = e / rowsum(e) */
	if (root->op != NX_OP_DIVIDE || root->noperands != 2)
		return false;
	const nx_inst *e = skip_cvt(root->operands[0]), *den = rowbc(root->operands[1]);
	if (!den || rowred(den, NX_ALU_ADD, 0.0) != e)
		return false;
	/* e = exp(s - rowmax(s)) */
	if (e->op != NX_OP_EXPONENTIAL)
		return false;
	const nx_inst *sh = skip_cvt(e->operands[0]);
	if (sh->op != NX_OP_SUBTRACT || sh->noperands != 2)
		return false;
	const nx_inst *s = skip_cvt(sh->operands[0]), *mx = rowbc(sh->operands[1]);
	if (!mx || rowred(mx, NX_ALU_MAX, -INFINITY) != s)
		return false;
	/* s = c * x */
	const nx_inst *fs[1];
	int nf = 0;
	double c = 1.0;
	if (!factors(s, fs, &nf, 1, &c) || nf != 1 || fs[0] != x || !(c > 0) || !isfinite(c) || (float)c == 0.0f)
		return false;
	r->kind = NX_DR_SOFTMAX;
	r->scale = (float)c;
	r->C = xs->dims[xs->rank - 1];
	return true;
}

void nx_l_dot_rows_plan(nx_lower *L, const nx_ldrows *r, int64_t mt, int64_t nt)
{
	nx_l_plan(L, "epilogue",
	          "row softmax of %g x per [%lld, %lld] tile: max on dve; exp with the row sum and divide on act", r->scale,
	          (long long)mt, (long long)nt);
}

void nx_l_dot_rows_stats(nx_lower *L, const nx_ldrows *r, nx_ap ps, int64_t nb)
{
	int32_t s1[1] = {1};
	uint32_t c1[1] = {1};
	nx_ap st = nx_ap_sbuf(NX_DT_F32, ps.part_start, ps.part_count, nb, 1, s1, c1);
	nx_insn *in = nx_l_emit(L, NX_ENG_DVE, NX_I_TENSOR_REDUCE);
	in->func = NX_ALU_MAX;
	in->iarg[0] = 1;
	in->ap[0] = st;
	in->ap[1] = ps;
	in = nx_l_emit(L, NX_ENG_DVE, NX_I_TENSOR_SCALAR);
	in->func = NX_ALU_MUL;
	in->fimm[0] = -r->scale;
	in->ap[0] = st;
	in->ap[1] = st;
}

void nx_l_dot_rows_evac(nx_lower *L, const nx_ldrows *r, nx_ap o, nx_ap ps, int64_t nb, int64_t sum)
{
	int32_t s1[1] = {1};
	uint32_t c1[1] = {1};
	nx_ap b = nx_ap_sbuf(NX_DT_F32, ps.part_start, ps.part_count, nb, 1, s1, c1);
	nx_ap a = nx_ap_sbuf(NX_DT_F32, ps.part_start, ps.part_count, sum, 1, s1, c1);
	nx_insn *in = nx_l_emit(L, NX_ENG_ACT, NX_I_MEMSET);
	in->fimm[0] = 0.0f;
	in->ap[0] = a;
	in = nx_l_emit(L, NX_ENG_ACT, NX_I_ACTIVATE);
	in->func = NX_ACT_EXP;
	in->fimm[0] = r->scale;
	in->ap[0] = o;
	in->ap[1] = ps;
	in->ap[2] = b;
	in->ap[3] = a;
	in = nx_l_emit(L, NX_ENG_ACT, NX_I_TENSOR_SCALAR);
	in->func = NX_ALU_DIV;
	in->ap[0] = o;
	in->ap[1] = o;
	in->ap[2] = a;
}
