/* backend/kernels/dot_rows.c — a row epilogue of the batched dot, applied
 * to each PSUM tile as it is evacuated when one tile holds whole rows
 * (dot_loop.c's stationary schedule with nt = N), so the dot's result never
 * goes to HBM and the row fusion is no kernel of its own (docs/lowering.md,
 * "Dot row epilogue"). nx_l_dot_rows_match recognises the consumer
 * structurally, float converts allowed anywhere between, the reductions
 * over the last axis, c > 0 a product of broadcast constants (1 if none;
 * a divide by one counts as its reciprocal),
 * x its parameter k (the dot):
 *   SOFTMAX      p = e / rowsum(e), e = exp(s - rowmax(s)), s = c x;
 *   SOFTMAX_BWD  ds = c p (x - rowsum(x p)), p another parameter (the
 *                forward's probabilities, loaded per step).
 * Per tile [np rows, n] in PSUM (f32), statistics in f32 whatever the types:
 *   SOFTMAX      DVE nb = -c max(x) (tensor_reduce, tensor_scalar);
 *                ACT o = exp(c x + nb) with the row sum as the activate's
 *                accumulator (zeroed first), then o /= sum.
 *   SOFTMAX_BWD  DVE t = x p (tensor_tensor);
 *                ACT t summed in place as the accumulator, nb = -c sum,
 *                o = c x + nb (identity activate);
 *                POOL o *= p before the store. */
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
	if (i->op == NX_OP_DIVIDE && i->noperands == 2 && bconst(i->operands[1], &v) && v != 0.0) {
		*c /= v; /* x / sqrt(d) */
		return factors(i->operands[0], f, nf, n, c);
	}
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
	int64_t C = xs->dims[xs->rank - 1];
	const nx_inst *fs[2];
	int nf = 0;
	double c = 1.0;
	/* SOFTMAX_BWD: c p (x - rowsum(x p)) */
	if (factors(root, fs, &nf, 2, &c) && nf == 2 && c > 0 && isfinite(c) && (float)c != 0.0f) {
		for (int t = 0; t < 2; t++) {
			const nx_inst *p = fs[t], *d = fs[1 - t];
			if (p->op != NX_OP_PARAMETER || p == x || d->op != NX_OP_SUBTRACT || skip_cvt(d->operands[0]) != x ||
			    nx_shape_elems(p->shape) != nx_shape_elems(xs) || !nx_type_is_float(p->shape->type))
				continue;
			const nx_inst *sum = rowbc(d->operands[1]), *pr = sum ? rowred(sum, NX_ALU_ADD, 0.0) : NULL, *g[2];
			int ng = 0;
			double c2 = 1.0;
			if (!pr || !factors(pr, g, &ng, 2, &c2) || ng != 2 || c2 != 1.0 ||
			    !((g[0] == x && g[1] == p) || (g[0] == p && g[1] == x)))
				continue;
			int pk = -1;
			for (int q = 0; q < f->called[0]->nparams; q++)
				if (f->called[0]->params[q] == p)
					pk = q;
			if (pk < 0 || pk >= f->noperands)
				continue;
			r->kind = NX_DR_SOFTMAX_BWD, r->scale = (float)c, r->C = C, r->pk = pk;
			return true;
		}
	}
	/* SOFTMAX: p = e / rowsum(e) */
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
	/* s = c x */
	nf = 0, c = 1.0;
	if (!factors(s, fs, &nf, 1, &c) || nf != 1 || fs[0] != x || !(c > 0) || !isfinite(c) || (float)c == 0.0f)
		return false;
	r->kind = NX_DR_SOFTMAX, r->scale = (float)c, r->C = C;
	return true;
}

void nx_l_dot_rows_plan(nx_lower *L, const nx_ldrows *r, int64_t mt, int64_t nt)
{
	if (r->kind == NX_DR_SOFTMAX)
		nx_l_plan(L, "epilogue",
		          "row softmax of %g x per [%lld, %lld] tile: max on dve; exp with the row sum and divide on act",
		          r->scale, (long long)mt, (long long)nt);
	else
		nx_l_plan(L, "epilogue",
		          "softmax backward %g p (x - rowsum(x p)) per [%lld, %lld] tile, p loaded per step on every load "
		          "queue: x p on dve; row sum and %g (x - sum) on act; times p on pool",
		          r->scale, (long long)mt, (long long)nt, r->scale);
}

int64_t nx_l_dot_rows_bytes(const nx_ldrows *r, int64_t G, int64_t nt)
{
	if (r->kind != NX_DR_SOFTMAX_BWD)
		return 0;
	return 2 * ((G * nt * nx_dtype_bytes[r->P->dt] + 63) & ~63LL) + 4 * nt * 4;
}

static nx_ap col(nx_ap ps, int64_t off)
{
	int32_t s1[1] = {1};
	uint32_t c1[1] = {1};
	return nx_ap_sbuf(NX_DT_F32, ps.part_start, ps.part_count, off, 1, s1, c1);
}

static nx_ap like(nx_ap ps, nx_dtype dt, int64_t off)
{
	nx_ap a = ps;
	a.space = NX_MEM_SBUF;
	a.dtype = dt;
	a.offset = off;
	return a;
}

void nx_l_dot_rows_stats(nx_lower *L, const nx_ldrows *r, nx_ap ps, nx_ap p, int64_t nb, int64_t tmp)
{
	if (r->kind == NX_DR_SOFTMAX_BWD) {
		nx_insn *in = nx_l_emit(L, NX_ENG_DVE, NX_I_TENSOR_TENSOR);
		in->func = NX_ALU_MUL;
		in->ap[0] = like(ps, NX_DT_F32, tmp);
		in->ap[1] = ps;
		in->ap[2] = p;
		return;
	}
	nx_insn *in = nx_l_emit(L, NX_ENG_DVE, NX_I_TENSOR_REDUCE);
	in->func = NX_ALU_MAX;
	in->iarg[0] = 1;
	in->ap[0] = col(ps, nb);
	in->ap[1] = ps;
	in = nx_l_emit(L, NX_ENG_DVE, NX_I_TENSOR_SCALAR);
	in->func = NX_ALU_MUL;
	in->fimm[0] = -r->scale;
	in->ap[0] = col(ps, nb);
	in->ap[1] = col(ps, nb);
}

void nx_l_dot_rows_evac(nx_lower *L, const nx_ldrows *r, nx_ap o, nx_ap ps, int64_t nb, int64_t sum, int64_t tmp)
{
	nx_insn *in = nx_l_emit(L, NX_ENG_ACT, NX_I_MEMSET);
	in->fimm[0] = 0.0f;
	in->ap[0] = col(ps, sum);
	if (r->kind == NX_DR_SOFTMAX_BWD) {
		nx_ap t = like(ps, NX_DT_F32, tmp);
		in = nx_l_emit(L, NX_ENG_ACT, NX_I_ACTIVATE);
		in->func = NX_ACT_IDENTITY;
		in->fimm[0] = 1.0f;
		in->ap[0] = t;
		in->ap[1] = t;
		in->ap[3] = col(ps, sum);
		in = nx_l_emit(L, NX_ENG_ACT, NX_I_TENSOR_SCALAR);
		in->func = NX_ALU_MUL;
		in->fimm[0] = -r->scale;
		in->ap[0] = col(ps, nb);
		in->ap[1] = col(ps, sum);
		in = nx_l_emit(L, NX_ENG_ACT, NX_I_ACTIVATE);
		in->func = NX_ACT_IDENTITY;
		in->fimm[0] = r->scale;
		in->ap[0] = o;
		in->ap[1] = ps;
		in->ap[2] = col(ps, nb);
		return;
	}
	in = nx_l_emit(L, NX_ENG_ACT, NX_I_ACTIVATE);
	in->func = NX_ACT_EXP;
	in->fimm[0] = r->scale;
	in->ap[0] = o;
	in->ap[1] = ps;
	in->ap[2] = col(ps, nb);
	in->ap[3] = col(ps, sum);
	in = nx_l_emit(L, NX_ENG_ACT, NX_I_TENSOR_SCALAR);
	in->func = NX_ALU_DIV;
	in->ap[0] = o;
	in->ap[1] = o;
	in->ap[2] = col(ps, sum);
}

void nx_l_dot_rows_post(nx_lower *L, const nx_ldrows *r, nx_ap o, nx_ap p)
{
	if (r->kind != NX_DR_SOFTMAX_BWD)
		return;
	nx_insn *in = nx_l_emit(L, NX_ENG_POOL, NX_I_TENSOR_TENSOR);
	in->func = NX_ALU_MUL;
	in->ap[0] = o;
	in->ap[1] = o;
	in->ap[2] = p;
}
