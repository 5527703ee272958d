/* backend/lower_pair.c — the driver's pairings, after liveness: a node
 * that an earlier or later kernel can produce beside its own result is
 * marked on that kernel's entry, and its own node then only names the
 * value. A dot stores in its transposing reader's layout (dot_tout),
 * applies its only reader's row softmax (dot_rows, kernels/dot_rows.c),
 * sums its streamed operand's columns for a reduce (dot_cs,
 * kernels/dot_cs.c), or computes later batched dots over its p (dot_sec,
 * kernels/dot_sec.c). */
#include "backend/lower.h"

/* the flattened nodes, in program order (lower.c) */
typedef struct nodes {
	const nx_inst *const *v;
	int n;
} nodes;

/* how many live nodes read d (counting up to 2) */
static int live_readers(nx_lower *L, const nodes *ns, const nx_inst *d)
{
	int readers = 0;
	for (int q = 0; q < ns->n && readers < 2; q++) {
		const nx_lent *qe = nx_l_ent(L, ns->v[q]);
		for (int o = 0; (qe->used || qe->output) && o < ns->v[q]->noperands; o++)
			readers += nx_l_resolve(L, ns->v[q]->operands[o]) == d;
	}
	return readers;
}

/* A batched dot read only by a transpose that keeps the last dim (and is no
 * output) may store its tiles in the transpose's layout (lower_data.c
 * tout_mat, when the stationary dot-loop takes it): the transpose then only
 * names that value (the attention's context and gradients, [b, h, s, d]
 * stored as [b, s, h, d]). */
static void dot_tout(nx_lower *L, const nodes *ns)
{
	for (int k = 0; k < ns->n; k++) {
		const nx_inst *t = ns->v[k];
		const nx_lent *te = nx_l_ent(L, t);
		if (t->op != NX_OP_TRANSPOSE || te->output || !te->used || t->noperands != 1)
			continue;
		const nx_inst *d = nx_l_resolve(L, t->operands[0]);
		const nx_lent *de = nx_l_ent(L, d);
		int r = d->shape->rank;
		if (d->op != NX_OP_DOT || de->output || de->rows_f || de->tout || de->last_use != k ||
		    !d->a.dot.lhs_batch.n || t->a.dimensions.n != r || t->a.dimensions.v[r - 1] != r - 1 ||
		    live_readers(L, ns, d) != 1)
			continue;
		nx_l_ent(L, d)->tout = t;
	}
}

/* A dot read only by a row fusion that is its row softmax (kernels/dot_rows.c)
 * may apply it in its evacuation: the fusion then only names the result. */
static void dot_rows(nx_lower *L, const nodes *ns)
{
	for (int k = 0; k < ns->n; k++) {
		const nx_inst *f = ns->v[k];
		nx_lent *fe = nx_l_ent(L, f);
		if (f->op != NX_OP_FUSION || (!fe->output && !fe->used) || !nx_l_row_ok(L, f))
			continue;
		for (int j = 0; j < f->noperands; j++) {
			const nx_inst *d = nx_l_resolve(L, f->operands[j]);
			nx_lent *de = nx_l_ent(L, d);
			if (d->op != NX_OP_DOT || de->output || de->rows_f || de->last_use != k)
				continue;
			nx_ldrows r;
			if (live_readers(L, ns, d) == 1 && nx_l_dot_rows_match(f, j, &r)) {
				de = nx_l_ent(L, d); /* the map may have grown */
				de->rows_f = f;
				de->rows = r;
				break;
			}
		}
	}
}

/* A reduce-add over the contracting dims of an earlier dot's operand (a bias
 * gradient beside its weight gradient) may be summed by that dot from the
 * tiles it streams (kernels/dot_cs.c): the reduce then only names it. */
static void dot_cs(nx_lower *L, const nodes *ns)
{
	for (int k = 0; k < ns->n; k++) {
		const nx_inst *r = ns->v[k];
		const nx_lent *re = nx_l_ent(L, r);
		if (r->op != NX_OP_REDUCE || (!re->output && !re->used) || r->noperands != 2)
			continue;
		const nx_inst *x = nx_l_resolve(L, r->operands[0]), *init = nx_l_resolve(L, r->operands[1]);
		for (int q = 0; q < k; q++) {
			const nx_inst *d = ns->v[q];
			const nx_lent *de = nx_l_ent(L, d);
			if (d->op != NX_OP_DOT || d->noperands != 2 || de->cs.red || (!de->output && !de->used))
				continue;
			for (int j = 0; j < 2 && !nx_l_ent(L, d)->cs.red; j++) {
				/* the operand, or a transpose of it (a deferred one) */
				const nx_inst *o = nx_l_resolve(L, d->operands[j]), *t = NULL;
				if (o != x && o->op == NX_OP_TRANSPOSE && nx_l_resolve(L, o->operands[0]) == x)
					t = o, o = x;
				nx_ldcs cs;
				if (o == x && nx_l_dot_cs_match(d, j, r, init, t, &cs))
					nx_l_ent(L, d)->cs = cs;
			}
			if (nx_l_ent(L, d)->cs.red)
				break;
		}
	}
}

/* A SOFTMAX_BWD row epilogue's dot may compute later dots x^T . Y per
 * batch, x its p or its result (nx_l_dot_sec_match; attention's dv and dk
 * beside dp; kernels/dot_sec.c): they then only name their values, their
 * transposing readers too (dot_tout). */
static void dot_sec(nx_lower *L, const nodes *ns)
{
	for (int k = 0; k < ns->n; k++) {
		const nx_inst *d = ns->v[k];
		const nx_lent *de = nx_l_ent(L, d);
		if (d->op != NX_OP_DOT || !de->rows_f || de->rows.kind != NX_DR_SOFTMAX_BWD || de->output)
			continue;
		const nx_inst *x[2] = {nx_l_resolve(L, de->rows_f->operands[de->rows.pk]), nx_l_resolve(L, de->rows_f)};
		for (int j = k + 1, w; j < ns->n; j++) {
			const nx_inst *d2 = ns->v[j];
			const nx_lent *e2 = nx_l_ent(L, d2);
			if (!e2->used || e2->output || e2->rows_f)
				continue;
			for (w = 0; w < 2 && (nx_l_ent(L, d)->sec[w].i || !nx_l_dot_sec_match(L, d, d2, x[w], nx_l_resolve)); w++)
				;
			if (w < 2)
				nx_l_ent(L, d)->sec[w] = (nx_ldsec){.i = d2, .tout = nx_l_ent(L, d2)->tout, .post = w};
		}
	}
}

void nx_l_pair_dots(nx_lower *L, const nx_inst *const *v, int n)
{
	const nodes ns = {v, n};
	dot_rows(L, &ns);
	dot_tout(L, &ns);
	dot_cs(L, &ns);
	dot_sec(L, &ns);
}
