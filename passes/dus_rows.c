/* passes/dus_rows.c — a dynamic-update-slice that writes a slab of K > 1
 * rows (K <= 64) along one dimension d at a runtime start becomes K
 * one-row dynamic-update-slices, which the backend lowers (a masked
 * update): with s = clamp(start, 0, D - K) — XLA's clamping of the whole
 * slab — row k of the update goes to s + k. The other dimensions of the
 * update cover the operand (their starts clamp to 0 and are kept). Unrolled
 * chunked loops (colabfold's mapping.py writes [4,1,64] chunks) leave these
 * at -O1, where their starts are not folded to constants (and constant
 * starts are not made concatenates: algsimp-shape runs from -O2). */
#include "passes/rewrite.h"

#define NX_DUS_ROWS_MAX 64

static nx_inst *row_of(nx_rw *rw, nx_inst *u, int d, int64_t k)
{
	nx_arena *a = nx_rw_arena(rw);
	int r = u->shape->rank;
	int64_t lo[NX_MAX_RANK], hi[NX_MAX_RANK], one[NX_MAX_RANK];
	nx_shape *sh = nx_shape_copy(a, u->shape);
	for (int j = 0; j < r; j++)
		lo[j] = j == d ? k : 0, hi[j] = j == d ? k + 1 : u->shape->dims[j], one[j] = 1;
	sh->dims[d] = 1;
	nx_inst *sl = nx_rw_add(rw, NX_OP_SLICE, sh, &u, 1, NULL);
	sl->a.slice_start = nx_ivec_dup(a, lo, r);
	sl->a.slice_limit = nx_ivec_dup(a, hi, r);
	sl->a.slice_stride = nx_ivec_dup(a, one, r);
	return sl;
}

static nx_inst *rewrite(nx_rw *rw, nx_inst *in)
{
	if (in->op != NX_OP_DYNAMIC_UPDATE_SLICE || in->noperands < 2)
		return NULL;
	nx_inst *x = in->operands[0], *u = in->operands[1];
	int r = x->shape->rank, d = -1;
	if (in->noperands != 2 + r || !nx_shape_is_array(u->shape) || u->shape->rank != r)
		return NULL;
	for (int k = 0; k < r; k++)
		if (u->shape->dims[k] != x->shape->dims[k]) {
			if (d >= 0)
				return NULL;
			d = k;
		}
	if (d < 0 || u->shape->dims[d] < 2 || u->shape->dims[d] > NX_DUS_ROWS_MAX)
		return NULL;
	nx_inst *s = in->operands[2 + d];
	if (s->shape->rank != 0 || !nx_type_is_int(s->shape->type))
		return NULL; /* (at -O2 algsimp-shape made constant starts concatenates) */
	nx_arena *a = nx_rw_arena(rw);
	int64_t K = u->shape->dims[d], D = x->shape->dims[d];
	nx_type t = s->shape->type;
	nx_inst *cops[3] = {nx_rw_scalar(rw, t, 0), s, nx_rw_scalar(rw, t, (double)(D - K))};
	nx_inst *sc = nx_rw_add(rw, NX_OP_CLAMP, nx_shape_scalar(a, t), cops, 3, NULL);
	nx_inst *cur = x;
	nx_inst **ops = nx_arena_alloc(a, sizeof *ops * (size_t)(2 + r));
	for (int64_t k = 0; k < K; k++) {
		ops[0] = cur;
		ops[1] = row_of(rw, u, d, k);
		for (int j = 0; j < r; j++)
			ops[2 + j] = in->operands[2 + j];
		ops[2 + d] = k ? nx_rw_binary(rw, NX_OP_ADD, sc, nx_rw_scalar(rw, t, (double)k)) : sc;
		cur = nx_rw_add(rw, NX_OP_DYNAMIC_UPDATE_SLICE, nx_shape_copy(a, in->shape), ops, 2 + r, NULL);
		cur->a.metadata = in->a.metadata;
		cur->a.nmetadata = in->a.nmetadata;
	}
	return cur;
}

nx_status nx_pass_dus_rows(nx_module *m, const nx_pass_ctx *ctx, bool *changed)
{
	return nx_rw_run(m, ctx, "dus-rows", rewrite, NULL, changed);
}
