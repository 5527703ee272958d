/* passes/all_to_all_expand.c — all-to-all as an all-gather and a
 * replica-dependent slice, which the backend lowers (CC all_gather,
 * dynamic-slice at a runtime start).
 *
 * Array form, split/concat dimension d, groups of N replicas, position p of
 * this replica in its group:
 *
 *   x : [.., D, ..]                      (D at d, N divides D)
 *   x1 = reshape(x)  : [1, .., N, D/N, ..]
 *   g  = all-gather(x1), dimensions={0} : [N(src), .., N(chunk), D/N, ..]
 *   s  = dynamic-slice(g, chunk = p)     : [N(src), .., 1, D/N, ..]
 *   result = reshape(transpose(reshape(s))) : [.., N(src) * D/N, ..]
 *
 * so chunk p of every member, concatenated in group order along d: XLA's
 * all-to-all. p comes from replica-id through a constant table (position of
 * each replica in its group). The tuple form (N operands, result k = member
 * k's operand p) stacks its operands on a new leading dimension, takes the
 * array form with d = 0 and slices the result apart. The all-gather moves N
 * times the bytes of a direct exchange; the collective is exact either way.
 * Left as they are (the backend refuses them by name): groups of unequal
 * size, replicas missing from the groups, the iota group form, modules with
 * several partitions or use_global_device_ids, N not dividing D. */
#include "passes/rewrite.h"

#include <string.h>

enum { MAX_REPLICAS = 4096 };

/* Position table: pos[r] = index of replica r in its group; *n = group size.
 * false when the groups do not cover 0..R-1 once with equal sizes. */
static bool group_positions(const nx_module *m, const nx_replica_groups *g, int32_t *pos, int *R, int *n)
{
	if (g->iota)
		return false;
	if (!g->present || g->ngroups == 0) {
		int64_t rc = m->replica_count > 0 ? m->replica_count : 1;
		if (rc > MAX_REPLICAS)
			return false;
		*R = *n = (int)rc;
		for (int r = 0; r < *R; r++)
			pos[r] = r;
		return true;
	}
	int size = g->groups[0].n, total = 0;
	for (int k = 0; k < g->ngroups; k++) {
		if (g->groups[k].n != size)
			return false;
		total += size;
	}
	if (size < 1 || total > MAX_REPLICAS || (m->replica_count > 0 && m->replica_count != total))
		return false;
	for (int r = 0; r < total; r++)
		pos[r] = -1;
	for (int k = 0; k < g->ngroups; k++)
		for (int e = 0; e < size; e++) {
			int64_t id = g->groups[k].v[e];
			if (id < 0 || id >= total || pos[id] >= 0)
				return false;
			pos[id] = e;
		}
	*R = total;
	*n = size;
	return true;
}

/* s32[] position of this replica: table[replica-id]. */
static nx_inst *my_position(nx_rw *rw, const int32_t *pos, int R)
{
	nx_arena *a = nx_rw_arena(rw);
	int64_t dim = R;
	nx_shape *ts = nx_shape_array(a, NX_S32, 1, &dim);
	nx_inst *tab = nx_rw_add(rw, NX_OP_CONSTANT, ts, NULL, 0, "a2a_positions");
	tab->a.literal = nx_literal_new(a, ts);
	memcpy(tab->a.literal->data, pos, sizeof(int32_t) * (size_t)R);
	nx_inst *rid = nx_rw_add(rw, NX_OP_REPLICA_ID, nx_shape_scalar(a, NX_U32), NULL, 0, NULL);
	nx_inst *ops[2] = {tab, nx_rw_convert(rw, rid, NX_S32)};
	int64_t one = 1;
	nx_inst *sl = nx_rw_add(rw, NX_OP_DYNAMIC_SLICE, nx_shape_array(a, NX_S32, 1, &one), ops, 2, NULL);
	sl->a.dynamic_slice_sizes = nx_ivec_dup(a, &one, 1);
	return nx_rw_reshape(rw, sl, 0, NULL);
}

/* The array form on x along d; p = this replica's position. */
static nx_inst *exchange(nx_rw *rw, const nx_inst *in, nx_inst *x, int d, int n, nx_inst *p)
{
	nx_arena *a = nx_rw_arena(rw);
	const nx_shape *xs = x->shape;
	int r = xs->rank;
	int64_t dims[NX_MAX_RANK], c = xs->dims[d] / n;
	int q = 0;
	dims[q++] = 1;
	for (int k = 0; k < r; k++) {
		if (k == d) {
			dims[q++] = n;
			dims[q++] = c;
		} else {
			dims[q++] = xs->dims[k];
		}
	}
	nx_inst *x1 = nx_rw_reshape(rw, x, q, dims);
	dims[0] = n;
	nx_inst *g = nx_rw_add(rw, NX_OP_ALL_GATHER, nx_shape_array(a, xs->type, q, dims), &x1, 1, NULL);
	g->a.replica_groups = in->a.replica_groups;
	g->a.channel_id = in->a.channel_id;
	int64_t zero_d = 0;
	g->a.dimensions = nx_ivec_dup(a, &zero_d, 1);
	g->a.has_dimensions = true;
	nx_inst *ops[NX_MAX_RANK + 1];
	ops[0] = g;
	nx_inst *zero = nx_rw_scalar(rw, NX_S32, 0);
	for (int k = 0; k < q; k++)
		ops[k + 1] = k == d + 1 ? p : zero;
	dims[d + 1] = 1;
	nx_inst *s = nx_rw_add(rw, NX_OP_DYNAMIC_SLICE, nx_shape_array(a, xs->type, q, dims), ops, q + 1, NULL);
	s->a.dynamic_slice_sizes = nx_ivec_dup(a, dims, q);
	/* drop the chunk dimension: [N(src), x0.., c, ..] */
	int64_t y[NX_MAX_RANK], perm[NX_MAX_RANK];
	int w = 0;
	for (int k = 0; k < q; k++)
		if (k != d + 1)
			y[w++] = dims[k];
	nx_inst *ys = nx_rw_reshape(rw, s, w, y);
	/* source axis next to the chunk's elements: [x0.., N(src), c, ..] */
	for (int k = 0; k < w; k++)
		perm[k] = k < d ? k + 1 : k == d ? 0 : k;
	nx_inst *t = nx_rw_transpose(rw, ys, perm);
	return nx_rw_reshape(rw, t, r, xs->dims);
}

static nx_inst *rewrite(nx_rw *rw, nx_inst *in)
{
	if (in->op != NX_OP_ALL_TO_ALL || in->noperands < 1)
		return NULL;
	const nx_module *m = rw->m;
	if (m->num_partitions > 1 || in->a.use_global_device_ids)
		return NULL;
	int32_t pos[MAX_REPLICAS];
	int R, n;
	if (!group_positions(m, &in->a.replica_groups, pos, &R, &n))
		return NULL;
	nx_arena *a = nx_rw_arena(rw);
	if (in->a.dimensions.n > 0 && in->noperands == 1) {
		nx_inst *x = in->operands[0];
		int d = (int)in->a.dimensions.v[0];
		if (!nx_shape_is_array(x->shape) || !nx_shape_compatible(x->shape, in->shape) || d < 0 ||
		    d >= x->shape->rank || x->shape->rank + 2 > NX_MAX_RANK || x->shape->dims[d] % n != 0)
			return NULL;
		if (n == 1)
			return x;
		nx_pass_log(rw->ctx, 2, "all-to-all-expand: %s (group of %d, dimension %d)", in->name, n, d);
		return exchange(rw, in, x, d, n, my_position(rw, pos, R));
	}
	/* tuple form: N operands of one shape, a tuple of N results */
	const nx_shape *s0 = in->operands[0]->shape;
	if (in->noperands != n || !nx_shape_is_tuple(in->shape) || in->shape->ntuple != n || !nx_shape_is_array(s0) ||
	    s0->rank + 3 > NX_MAX_RANK)
		return NULL;
	for (int k = 0; k < n; k++)
		if (!nx_shape_compatible(in->operands[k]->shape, s0) || !nx_shape_compatible(in->shape->tuple[k], s0))
			return NULL;
	nx_pass_log(rw->ctx, 2, "all-to-all-expand: %s (tuple of %d)", in->name, n);
	int r = s0->rank;
	int64_t dims[NX_MAX_RANK];
	dims[0] = 1;
	memcpy(dims + 1, s0->dims, sizeof(int64_t) * (size_t)r);
	nx_inst *el[64];
	if (n > 64)
		return NULL;
	for (int k = 0; k < n; k++)
		el[k] = nx_rw_reshape(rw, in->operands[k], r + 1, dims);
	dims[0] = n;
	nx_inst *st = el[0];
	if (n > 1) {
		st = nx_rw_add(rw, NX_OP_CONCATENATE, nx_shape_array(a, s0->type, r + 1, dims), el, n, NULL);
		int64_t zero_d = 0;
		st->a.dimensions = nx_ivec_dup(a, &zero_d, 1);
		st->a.has_dimensions = true;
	}
	nx_inst *y = n > 1 ? exchange(rw, in, st, 0, n, my_position(rw, pos, R)) : st;
	for (int k = 0; k < n; k++) {
		int64_t lo[NX_MAX_RANK], hi[NX_MAX_RANK], one[NX_MAX_RANK];
		for (int j = 0; j <= r; j++)
			lo[j] = j == 0 ? k : 0, hi[j] = j == 0 ? k + 1 : dims[j], one[j] = 1;
		int64_t sd[NX_MAX_RANK];
		memcpy(sd, dims, sizeof sd);
		sd[0] = 1;
		nx_inst *sl = nx_rw_add(rw, NX_OP_SLICE, nx_shape_array(a, s0->type, r + 1, sd), &y, 1, NULL);
		sl->a.slice_start = nx_ivec_dup(a, lo, r + 1);
		sl->a.slice_limit = nx_ivec_dup(a, hi, r + 1);
		sl->a.slice_stride = nx_ivec_dup(a, one, r + 1);
		el[k] = nx_rw_reshape(rw, sl, r, s0->dims);
	}
	return nx_rw_add(rw, NX_OP_TUPLE, in->shape, el, n, NULL);
}

nx_status nx_pass_all_to_all_expand(nx_module *m, const nx_pass_ctx *ctx, bool *changed)
{
	return nx_rw_run(m, ctx, "all-to-all-expand", rewrite, NULL, changed);
}
