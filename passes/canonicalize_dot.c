/* passes/canonicalize_dot.c — every dot into the one form the backend
 * consumes:
 *   lhs [batch..., M, K] · rhs [batch..., K, N] → [batch..., M, N]
 * with the batch dimensions first and in order, exactly one contracting
 * dimension (lhs dim nb+1, rhs dim nb).
 *
 * Each operand is transposed to (batch, free, contracting) — rhs to (batch,
 * contracting, free) — and reshaped so its free and its contracting dims
 * become one dim each; a missing free dim becomes a dim of size 1
 * (matrix·vector is [M,K]·[K,1]). The canonical result [batch..., ΠM, ΠN]
 * has the elements of the original result in the same row-major order
 * (a dot's result is batch, lhs free, rhs free, each in operand order), so
 * a reshape to the original shape restores it.
 *
 * Runs after the simplify group: algsimp-reduce-dot folds transposes into
 * the dimension numbers, which is the opposite direction; it leaves
 * canonical dots alone (nx_dot_is_canonical). */
#include "passes/canonicalize.h"
#include "passes/rewrite.h"

#include <string.h>

static bool is_seq(nx_ivec v, int64_t first)
{
	for (int k = 0; k < v.n; k++)
		if (v.v[k] != first + k)
			return false;
	return true;
}

bool nx_dot_is_canonical(const nx_inst *d)
{
	if (d->op != NX_OP_DOT || d->noperands != 2)
		return false;
	const nx_dot_dnums *dn = &d->a.dot;
	int nb = dn->lhs_batch.n;
	return d->operands[0]->shape->rank == nb + 2 && d->operands[1]->shape->rank == nb + 2 &&
	       dn->rhs_batch.n == nb && is_seq(dn->lhs_batch, 0) && is_seq(dn->rhs_batch, 0) &&
	       dn->lhs_contracting.n == 1 && dn->lhs_contracting.v[0] == nb + 1 &&
	       dn->rhs_contracting.n == 1 && dn->rhs_contracting.v[0] == nb;
}

static bool in_list(nx_ivec v, int64_t d)
{
	for (int k = 0; k < v.n; k++)
		if (v.v[k] == d)
			return true;
	return false;
}

static bool is_static(const nx_shape *s)
{
	if (!nx_shape_is_array(s))
		return false;
	for (int k = 0; s->dynamic && k < s->rank; k++)
		if (s->dynamic[k] != NX_DIM_STATIC)
			return false;
	return true;
}

/* Brings operand x into [batch..., A, B]: A = free and B = contracting dims
 * (lhs), or A = contracting and B = free (rhs). *free_n is ΠM or ΠN. */
static nx_inst *canon_operand(nx_rw *rw, nx_inst *x, nx_ivec batch, nx_ivec con, bool rhs,
                              int64_t *free_n)
{
	int r = x->shape->rank, nb = batch.n;
	int64_t perm[NX_MAX_RANK], fre[NX_MAX_RANK];
	int np = 0, nf = 0;
	for (int k = 0; k < r; k++)
		if (!in_list(batch, k) && !in_list(con, k))
			fre[nf++] = k;
	for (int k = 0; k < nb; k++)
		perm[np++] = batch.v[k];
	if (rhs)
		for (int k = 0; k < con.n; k++)
			perm[np++] = con.v[k];
	for (int k = 0; k < nf; k++)
		perm[np++] = fre[k];
	if (!rhs)
		for (int k = 0; k < con.n; k++)
			perm[np++] = con.v[k];
	NX_ASSERT(np == r);
	int64_t fn = 1, cn = 1;
	for (int k = 0; k < nf; k++)
		fn *= x->shape->dims[fre[k]];
	for (int k = 0; k < con.n; k++)
		cn *= x->shape->dims[con.v[k]];
	*free_n = fn;
	bool ident = true;
	for (int k = 0; k < r; k++)
		ident &= perm[k] == k;
	if (!ident)
		x = nx_rw_transpose(rw, x, perm);
	int64_t dims[NX_MAX_RANK];
	for (int k = 0; k < nb; k++)
		dims[k] = x->shape->dims[k];
	dims[nb] = rhs ? cn : fn;
	dims[nb + 1] = rhs ? fn : cn;
	bool same = x->shape->rank == nb + 2;
	for (int k = 0; same && k < nb + 2; k++)
		same = x->shape->dims[k] == dims[k];
	return same ? x : nx_rw_reshape(rw, x, nb + 2, dims);
}

static nx_inst *canonicalize(nx_rw *rw, nx_inst *in)
{
	if (in->op != NX_OP_DOT || in->noperands != 2 || nx_dot_is_canonical(in))
		return NULL;
	nx_inst *l = in->operands[0], *r = in->operands[1];
	if (!is_static(l->shape) || !is_static(r->shape) || !is_static(in->shape))
		return NULL;
	const nx_dot_dnums *dn = &in->a.dot;
	int nb = dn->lhs_batch.n;
	if (nb + 2 > NX_MAX_RANK)
		return NULL;
	int64_t m, n;
	nx_inst *cl = canon_operand(rw, l, dn->lhs_batch, dn->lhs_contracting, false, &m);
	nx_inst *cr = canon_operand(rw, r, dn->rhs_batch, dn->rhs_contracting, true, &n);
	nx_arena *a = nx_rw_arena(rw);
	int64_t dims[NX_MAX_RANK];
	for (int k = 0; k < nb; k++)
		dims[k] = cl->shape->dims[k];
	dims[nb] = m;
	dims[nb + 1] = n;
	nx_shape *s = nx_shape_array(a, in->shape->type, nb + 2, dims);
	nx_inst *ops[2] = {cl, cr};
	nx_inst *d = nx_rw_add(rw, NX_OP_DOT, s, ops, 2, in->name);
	d->a = in->a;
	/* the driver moves in's control edges onto the replacement */
	d->a.control_predecessors = NULL;
	d->a.ncontrol_predecessors = 0;
	int64_t seq[NX_MAX_RANK];
	for (int k = 0; k < nb + 2; k++)
		seq[k] = k;
	d->a.dot.lhs_batch = nx_ivec_dup(a, seq, nb);
	d->a.dot.rhs_batch = nx_ivec_dup(a, seq, nb);
	d->a.dot.lhs_contracting = nx_ivec_dup(a, &seq[nb + 1], 1);
	d->a.dot.rhs_contracting = nx_ivec_dup(a, &seq[nb], 1);
	bool same = in->shape->rank == nb + 2;
	for (int k = 0; same && k < nb + 2; k++)
		same = in->shape->dims[k] == dims[k];
	if (same) {
		/* keep the original result layout */
		d->shape = nx_shape_copy(a, in->shape);
		return d;
	}
	return nx_rw_add(rw, NX_OP_RESHAPE, nx_shape_copy(a, in->shape), &d, 1, NULL);
}

nx_status nx_pass_canonicalize_dot(nx_module *m, const nx_pass_ctx *ctx, bool *changed)
{
	return nx_rw_run(m, ctx, "canonicalize-dot", canonicalize, NULL, changed);
}
