/* passes/gather_linearize.c — gathers and scatters that index several
 * operand dimensions at once (JAX's t[i0, i1], t.at[i0, i1].add(u)/.set(u),
 * t[i:i+2, j:j+3] with runtime i, j) into the one-dimension form the backend
 * has kernels for (lower_gather.c, the scatter paths):
 *
 *   operand X [D...]  -> transpose the K indexed dims m_0..m_{K-1} to the
 *                        front (in start_index_map order), reshape them into
 *                        one dim of P = prod D_{m_k}: X2 [P, rest...]
 *   index vectors     -> one s32 linear index per lookup,
 *                        sum_k c_k * stride_k, stride_k = prod_{j>k} D_{m_j}
 *
 * Gather: c_k = clamp(i_k, 0, D_{m_k} - s_k) as XLA clamps every start
 * (s_k the slice size; clamped in the index type, then converted to s32).
 * An indexed dim with a window (s_k > 1, or not collapsed) becomes a dim of
 * the linear index: lin[b..., w...] = sum_k (c_k + w_k) * stride_k, an iota
 * per window dim; the new gather's result [b..., w..., rest...] is
 * transposed into the original's dim order. Form: no operand_batching_dims
 * (gather-batching's), K >= 2 or one indexed dim with a window (slice size
 * > 1: a dynamic-slice written as a gather), dims not indexed taken whole.
 *
 * Scatter (one operand, every indexed dim inserted, the other dims whole in
 * the update window): XLA skips an update whose window is out of bounds, so
 * the linear index is -1 (which the one-dimension scatter drops) when any
 * i_k is outside [0, D_{m_k} - 1]; the updates are unchanged (their window
 * dims are the rest dims in operand order), the combiner too; the result is
 * reshaped and transposed back.
 *
 * A dynamic-slice with runtime starts in two or more dims is that gather
 * (one index vector of the starts, every dim a window) and goes the same way;
 * such a dynamic-update-slice is the overwriting scatter of its whole update
 * at the clamped starts.
 *
 * Other forms are left alone (the backend names what it refuses). */
#include "passes/rewrite.h"

#include <string.h>

static int find(nx_ivec v, int64_t x)
{
	for (int k = 0; k < v.n; k++)
		if (v.v[k] == x)
			return k;
	return -1;
}

/* The indexed dims of x (m, K of them) moved to the front and merged:
 * X2 [P, rest...]. perm: the transpose; rest/nrest: the other dims in order. */
static nx_inst *linear_operand(nx_rw *rw, nx_inst *x, nx_ivec m, int64_t *perm, int64_t *rest, int *nrest,
                               int64_t *stride)
{
	int r = x->shape->rank, n = 0;
	int64_t P = 1;
	for (int k = m.n - 1; k >= 0; k--) {
		stride[k] = P;
		P *= x->shape->dims[m.v[k]];
	}
	for (int k = 0; k < m.n; k++)
		perm[k] = m.v[k];
	for (int d = 0; d < r; d++)
		if (find(m, d) < 0)
			rest[n++] = d, perm[m.n + n - 1] = d;
	*nrest = n;
	bool ident = true;
	for (int d = 0; d < r; d++)
		ident = ident && perm[d] == d;
	nx_inst *xt = ident ? x : nx_rw_transpose(rw, x, perm);
	int64_t od[NX_MAX_RANK];
	od[0] = P;
	for (int k = 0; k < n; k++)
		od[1 + k] = x->shape->dims[rest[k]];
	return nx_rw_reshape(rw, xt, n + 1, od);
}

/* Component k of the index vectors of ix (vector dim ivd, ir when implicit)
 * as [batch...]. */
static nx_inst *component(nx_rw *rw, nx_inst *ix, int64_t ivd, int k, int nb, const int64_t *bd)
{
	nx_arena *a = nx_rw_arena(rw);
	int ir = ix->shape->rank;
	if (ivd >= ir) /* implicit vector dim of size 1 */
		return ix;
	int64_t lo[NX_MAX_RANK], hi[NX_MAX_RANK], one[NX_MAX_RANK], sd[NX_MAX_RANK];
	for (int d = 0; d < ir; d++) {
		lo[d] = d == ivd ? k : 0;
		hi[d] = d == ivd ? k + 1 : ix->shape->dims[d];
		one[d] = 1;
		sd[d] = hi[d] - lo[d];
	}
	nx_inst *sl = nx_rw_add(rw, NX_OP_SLICE, nx_shape_array(a, ix->shape->type, ir, sd), &ix, 1, NULL);
	sl->a.slice_start = nx_ivec_dup(a, lo, ir);
	sl->a.slice_limit = nx_ivec_dup(a, hi, ir);
	sl->a.slice_stride = nx_ivec_dup(a, one, ir);
	return nx_rw_reshape(rw, sl, nb, bd);
}

/* clamp(v, lo, hi) in v's type, then s32 */
static nx_inst *clamp_s32(nx_rw *rw, nx_inst *v, int64_t lo, int64_t hi)
{
	nx_type t = v->shape->type;
	nx_inst *ops[3] = {nx_rw_splat(rw, v->shape, t, (double)lo), v, nx_rw_splat(rw, v->shape, t, (double)hi)};
	nx_inst *c = nx_rw_add(rw, NX_OP_CLAMP, nx_shape_copy(nx_rw_arena(rw), v->shape), ops, 3, NULL);
	return t == NX_S32 ? c : nx_rw_convert(rw, c, NX_S32);
}

/* v * stride (v itself when stride is 1) */
static nx_inst *scaled(nx_rw *rw, nx_inst *v, int64_t stride)
{
	if (stride == 1)
		return v;
	return nx_rw_binary(rw, NX_OP_MULTIPLY, v, nx_rw_splat(rw, v->shape, NX_S32, (double)stride));
}

/* The batch shape of an index tensor: its dims without ivd. */
static int batch_shape(const nx_shape *is, int64_t ivd, int64_t *bd)
{
	int nb = 0;
	for (int d = 0; d < is->rank; d++)
		if (d != ivd)
			bd[nb++] = is->dims[d];
	return nb;
}

static bool index_ok(const nx_inst *ix, int64_t ivd, int K)
{
	const nx_shape *is = ix->shape;
	return !is->dynamic && nx_type_is_int(is->type) && ivd >= 0 &&
	       (ivd < is->rank ? is->dims[ivd] == K : ivd == is->rank && K == 1);
}

static nx_inst *gather(nx_rw *rw, nx_inst *in)
{
	const nx_gather_dnums *g = &in->a.gather;
	nx_inst *x = in->operands[0], *ix = in->operands[1];
	int r = x->shape->rank, K = g->start_index_map.n;
	/* one indexed dim is the backend's own form unless it has a window */
	bool one_window = K == 1 && g->slice_sizes.n == r && g->start_index_map.v[0] >= 0 &&
	                  g->start_index_map.v[0] < r && g->slice_sizes.v[g->start_index_map.v[0]] > 1;
	if (in->noperands != 2 || g->operand_batching_dims.n || g->start_indices_batching_dims.n ||
	    (K < 2 && !one_window) ||
	    g->slice_sizes.n != r || x->shape->dynamic || in->shape->dynamic || !index_ok(ix, g->index_vector_dim, K))
		return NULL;
	for (int k = 0; k < g->collapsed_slice_dims.n; k++)
		if (find(g->start_index_map, g->collapsed_slice_dims.v[k]) < 0)
			return NULL;
	int64_t P = 1;
	for (int d = 0; d < r; d++) {
		int k = find(g->start_index_map, d);
		int64_t s = g->slice_sizes.v[d], D = x->shape->dims[d];
		if (k < 0 ? s != D : (s < 1 || s > D || (find(g->collapsed_slice_dims, d) >= 0 && s != 1)))
			return NULL;
		if (k >= 0)
			P *= D;
	}
	for (int k = 0; k < K; k++) /* distinct, in range */
		if (g->start_index_map.v[k] < 0 || g->start_index_map.v[k] >= r ||
		    find(g->start_index_map, g->start_index_map.v[k]) != k)
			return NULL;
	if (P > INT32_MAX)
		return NULL;
	nx_arena *a = nx_rw_arena(rw);
	int64_t perm[NX_MAX_RANK], rest[NX_MAX_RANK], stride[NX_MAX_RANK], bd[NX_MAX_RANK];
	int nrest, nb = batch_shape(ix->shape, g->index_vector_dim, bd);
	/* window dims of the linear index: indexed dims not collapsed */
	int nw = 0, wk[NX_MAX_RANK];
	for (int k = 0; k < K; k++)
		if (find(g->collapsed_slice_dims, g->start_index_map.v[k]) < 0)
			wk[nw++] = k;
	if (nb + nw + r - K > NX_MAX_RANK || in->shape->rank != nb + nw + r - K)
		return NULL;
	nx_inst *x2 = linear_operand(rw, x, g->start_index_map, perm, rest, &nrest, stride);
	int64_t ld[NX_MAX_RANK], bdims[NX_MAX_RANK];
	for (int d = 0; d < nb; d++)
		ld[d] = bd[d], bdims[d] = d;
	for (int w = 0; w < nw; w++)
		ld[nb + w] = g->slice_sizes.v[g->start_index_map.v[wk[w]]];
	nx_shape *ls = nx_shape_array(a, NX_S32, nb + nw, ld);
	nx_inst *lin = NULL;
	for (int k = 0; k < K; k++) {
		int64_t d = g->start_index_map.v[k];
		nx_inst *c = clamp_s32(rw, component(rw, ix, g->index_vector_dim, k, nb, bd), 0,
		                       x->shape->dims[d] - g->slice_sizes.v[d]);
		c = scaled(rw, c, stride[k]);
		if (nw)
			c = nx_rw_broadcast(rw, c, NX_S32, nb + nw, ld, bdims);
		lin = lin ? nx_rw_binary(rw, NX_OP_ADD, lin, c) : c;
	}
	for (int w = 0; w < nw; w++) {
		nx_inst *io = nx_rw_add(rw, NX_OP_IOTA, ls, NULL, 0, NULL);
		io->a.iota_dimension = nb + w;
		io = scaled(rw, io, stride[wk[w]]);
		lin = nx_rw_binary(rw, NX_OP_ADD, lin, io);
	}
	/* the one-dimension gather: result [b..., w..., rest...] */
	int gr = nb + nw + nrest;
	int64_t gd[NX_MAX_RANK], ss[NX_MAX_RANK], offs[NX_MAX_RANK], zero = 0;
	memcpy(gd, ld, sizeof(int64_t) * (size_t)(nb + nw));
	ss[0] = 1;
	for (int k = 0; k < nrest; k++) {
		gd[nb + nw + k] = ss[1 + k] = x->shape->dims[rest[k]];
		offs[k] = nb + nw + k;
	}
	nx_inst *ops[2] = {x2, lin};
	nx_inst *ng = nx_rw_add(rw, NX_OP_GATHER, nx_shape_array(a, in->shape->type, gr, gd), ops, 2, NULL);
	ng->a = in->a;
	nx_gather_dnums *n = &ng->a.gather;
	n->offset_dims = nx_ivec_dup(a, offs, nrest);
	n->collapsed_slice_dims = nx_ivec_dup(a, &zero, 1);
	n->start_index_map = nx_ivec_dup(a, &zero, 1);
	n->slice_sizes = nx_ivec_dup(a, ss, nrest + 1);
	n->index_vector_dim = nb + nw;
	n->indices_are_sorted = false;
	/* into the original dim order: offset dim j is the j-th operand dim not
	 * collapsed, the other result dims are the batch dims in order */
	int64_t tp[NX_MAX_RANK];
	int j = 0, b = 0;
	for (int p = 0; p < gr; p++) {
		if (find(g->offset_dims, p) < 0) {
			tp[p] = b++;
			continue;
		}
		int d = 0, seen = -1;
		for (; d < r; d++)
			if (find(g->collapsed_slice_dims, d) < 0 && ++seen == j)
				break;
		j++;
		int k = find(g->start_index_map, d);
		if (k >= 0) {
			int w = 0;
			while (wk[w] != k)
				w++;
			tp[p] = nb + w;
		} else {
			int q = 0;
			while (rest[q] != d)
				q++;
			tp[p] = nb + nw + q;
		}
	}
	bool ident = true;
	for (int p = 0; p < gr; p++)
		ident = ident && tp[p] == p;
	nx_inst *res = ident ? ng : nx_rw_transpose(rw, ng, tp);
	res->shape = nx_shape_copy(a, in->shape);
	return res;
}

static nx_inst *scatter(nx_rw *rw, nx_inst *in)
{
	const nx_scatter_dnums *sd = &in->a.scatter;
	nx_ivec m = sd->scatter_dims_to_operand_dims;
	int K = m.n;
	if (in->noperands != 3 || in->ncalled != 1 || sd->input_batching_dims.n || K < 2)
		return NULL;
	nx_inst *x = in->operands[0], *ix = in->operands[1], *u = in->operands[2];
	int r = x->shape->rank;
	if (x->shape->dynamic || u->shape->dynamic || !index_ok(ix, sd->index_vector_dim, K) ||
	    sd->inserted_window_dims.n != K || sd->update_window_dims.n != r - K)
		return NULL;
	int64_t P = 1;
	for (int k = 0; k < K; k++) {
		if (m.v[k] < 0 || m.v[k] >= r || find(m, m.v[k]) != k || find(sd->inserted_window_dims, m.v[k]) < 0)
			return NULL;
		P *= x->shape->dims[m.v[k]];
	}
	if (P > INT32_MAX)
		return NULL;
	/* the update window is the rest dims, whole */
	for (int d = 0, j = 0; d < r; d++) {
		if (find(m, d) >= 0)
			continue;
		int64_t w = sd->update_window_dims.v[j++];
		if (w < 0 || w >= u->shape->rank || u->shape->dims[w] != x->shape->dims[d])
			return NULL;
	}
	nx_arena *a = nx_rw_arena(rw);
	int64_t perm[NX_MAX_RANK], rest[NX_MAX_RANK], stride[NX_MAX_RANK], bd[NX_MAX_RANK];
	int nrest, nb = batch_shape(ix->shape, sd->index_vector_dim, bd);
	if (u->shape->rank != nb + r - K)
		return NULL;
	nx_inst *x2 = linear_operand(rw, x, m, perm, rest, &nrest, stride);
	nx_inst *lin = NULL, *ok = NULL;
	for (int k = 0; k < K; k++) {
		int64_t D = x->shape->dims[m.v[k]];
		nx_inst *i = component(rw, ix, sd->index_vector_dim, k, nb, bd);
		nx_type t = i->shape->type;
		nx_inst *ge = nx_rw_binary(rw, NX_OP_COMPARE, i, nx_rw_splat(rw, i->shape, t, 0));
		ge->a.direction = NX_CMP_GE;
		nx_inst *le = nx_rw_binary(rw, NX_OP_COMPARE, i, nx_rw_splat(rw, i->shape, t, (double)(D - 1)));
		le->a.direction = NX_CMP_LE;
		nx_inst *in_k = nx_rw_binary(rw, NX_OP_AND, ge, le);
		ok = ok ? nx_rw_binary(rw, NX_OP_AND, ok, in_k) : in_k;
		/* in bounds it is its own value; out of bounds the select drops it */
		nx_inst *c = scaled(rw, t == NX_S32 ? i : nx_rw_convert(rw, i, NX_S32), stride[k]);
		lin = lin ? nx_rw_binary(rw, NX_OP_ADD, lin, c) : c;
	}
	nx_inst *sel[3] = {ok, lin, nx_rw_splat(rw, lin->shape, NX_S32, -1)};
	lin = nx_rw_add(rw, NX_OP_SELECT, nx_shape_copy(a, lin->shape), sel, 3, NULL);
	nx_inst *ops[3] = {x2, lin, u};
	nx_inst *ns = nx_rw_add(rw, NX_OP_SCATTER, nx_shape_copy(a, x2->shape), ops, 3, NULL);
	ns->a = in->a;
	ns->called = in->called;
	ns->ncalled = in->ncalled;
	int64_t zero = 0;
	nx_scatter_dnums *n = &ns->a.scatter;
	n->inserted_window_dims = nx_ivec_dup(a, &zero, 1);
	n->scatter_dims_to_operand_dims = nx_ivec_dup(a, &zero, 1);
	n->index_vector_dim = nb;
	n->indices_are_sorted = false;
	/* back: [P, rest...] -> [D_m..., rest...] -> the operand's order */
	int64_t td[NX_MAX_RANK], inv[NX_MAX_RANK];
	for (int d = 0; d < r; d++)
		td[d] = x->shape->dims[perm[d]], inv[perm[d]] = d;
	nx_inst *res = nx_rw_reshape(rw, ns, r, td);
	bool ident = true;
	for (int d = 0; d < r; d++)
		ident = ident && perm[d] == d;
	if (!ident)
		res = nx_rw_transpose(rw, res, inv);
	res->shape = nx_shape_copy(a, in->shape);
	return res;
}

/* dynamic-slice with runtime starts in several dims (the backend takes one):
 * the gather whose one index vector holds the starts, which XLA clamps the
 * same way (clamp(s_k, 0, D_k - size_k)), linearized as above. Starts of
 * types that do not convert to s32 exactly stay as they are. */
static nx_inst *dynamic_slice(nx_rw *rw, nx_inst *in)
{
	nx_inst *x = in->operands[0];
	int r = x->shape->rank, runtime = 0;
	if (!nx_shape_is_array(x->shape) || r < 2 || in->noperands != r + 1 || in->a.dynamic_slice_sizes.n != r ||
	    x->shape->dynamic || in->shape->dynamic)
		return NULL;
	for (int k = 0; k < r; k++) {
		nx_type t = in->operands[k + 1]->shape->type;
		if (t != NX_S8 && t != NX_S16 && t != NX_S32 && t != NX_U8 && t != NX_U16)
			return NULL;
		runtime += !nx_rw_is_const(in->operands[k + 1]);
	}
	if (runtime < 2)
		return NULL;
	nx_arena *a = nx_rw_arena(rw);
	nx_inst *parts[NX_MAX_RANK];
	int64_t one = 1, zero = 0, rr = r, iv[NX_MAX_RANK];
	for (int k = 0; k < r; k++) {
		nx_inst *st = in->operands[k + 1];
		if (st->shape->type != NX_S32)
			st = nx_rw_convert(rw, st, NX_S32);
		parts[k] = nx_rw_reshape(rw, st, 1, &one);
		iv[k] = k;
	}
	nx_inst *starts = nx_rw_add(rw, NX_OP_CONCATENATE, nx_shape_array(a, NX_S32, 1, &rr), parts, r, NULL);
	starts->a.dimensions = nx_ivec_dup(a, &zero, 1);
	starts->a.has_dimensions = true;
	nx_inst *ops[2] = {x, starts};
	nx_inst *g = nx_rw_add(rw, NX_OP_GATHER, nx_shape_copy(a, in->shape), ops, 2, NULL);
	g->a.gather.offset_dims = nx_ivec_dup(a, iv, r);
	g->a.gather.start_index_map = nx_ivec_dup(a, iv, r);
	g->a.gather.index_vector_dim = 0;
	g->a.gather.slice_sizes = nx_ivec_dup(a, in->a.dynamic_slice_sizes.v, r);
	return gather(rw, g); /* NULL: left as it is (what was added is dead) */
}

/* dynamic-update-slice with runtime starts in several dims (the backend
 * writes one runtime-start slab): XLA clamps every start so that the update
 * lies inside the operand, clamp(s_k, 0, D_k - U_k); with the starts so
 * clamped it is the overwriting scatter of the whole update at one index
 * vector, which never falls outside (GpSimd's scatter path). */
static nx_inst *dynamic_update_slice(nx_rw *rw, nx_inst *in)
{
	nx_inst *x = in->operands[0], *u = in->operands[1];
	int r = x->shape->rank, runtime = 0;
	if (!nx_shape_is_array(x->shape) || !nx_shape_is_array(u->shape) || r < 2 || u->shape->rank != r ||
	    in->noperands != r + 2 || x->shape->dynamic || u->shape->dynamic)
		return NULL;
	for (int k = 0; k < r; k++) {
		nx_type t = in->operands[k + 2]->shape->type;
		if (t != NX_S8 && t != NX_S16 && t != NX_S32 && t != NX_U8 && t != NX_U16)
			return NULL;
		if (u->shape->dims[k] > x->shape->dims[k])
			return NULL;
		runtime += !nx_rw_is_const(in->operands[k + 2]);
	}
	/* the backend's own form: the update covers every dim but at most one,
	 * where it is one slab thick (the other starts clamp to 0) */
	int partial = 0, thick = 0;
	for (int k = 0; k < r; k++)
		if (u->shape->dims[k] != x->shape->dims[k]) {
			partial++;
			thick += u->shape->dims[k] != 1;
		}
	if (runtime < 2 || (partial <= 1 && thick == 0))
		return NULL;
	nx_module *m = rw->m;
	nx_arena *a = nx_rw_arena(rw);
	nx_inst *parts[NX_MAX_RANK];
	int64_t one = 1, zero = 0, rr = r, iv[NX_MAX_RANK];
	for (int k = 0; k < r; k++) {
		nx_inst *st = clamp_s32(rw, in->operands[k + 2], 0, x->shape->dims[k] - u->shape->dims[k]);
		parts[k] = nx_rw_reshape(rw, st, 1, &one);
		iv[k] = k;
	}
	nx_inst *starts = nx_rw_add(rw, NX_OP_CONCATENATE, nx_shape_array(a, NX_S32, 1, &rr), parts, r, NULL);
	starts->a.dimensions = nx_ivec_dup(a, &zero, 1);
	starts->a.has_dimensions = true;
	/* the overwrite combiner: (old, new) -> new; callees precede callers */
	nx_comp *ow = nx_comp_new(m, nx_rw_unique_name(rw, "overwrite"));
	memmove(m->comps + 1, m->comps, sizeof(nx_comp *) * (size_t)(m->ncomps - 1));
	m->comps[0] = ow;
	nx_inst *p[2];
	for (int k = 0; k < 2; k++) {
		p[k] = nx_inst_new(ow, NX_OP_PARAMETER, nx_shape_scalar(&m->arena, x->shape->type), NULL, 0,
		                   nx_rw_unique_name(rw, k ? "new" : "old"));
		p[k]->a.parameter_number = k;
		nx_comp_add_param(ow, p[k]);
	}
	ow->root = p[1];
	nx_inst *ops[3] = {x, starts, u};
	nx_inst *sc = nx_rw_add(rw, NX_OP_SCATTER, nx_shape_copy(a, in->shape), ops, 3, NULL);
	sc->a.scatter.update_window_dims = nx_ivec_dup(a, iv, r);
	sc->a.scatter.scatter_dims_to_operand_dims = nx_ivec_dup(a, iv, r);
	sc->a.scatter.index_vector_dim = 0;
	sc->a.scatter.unique_indices = true;
	sc->called = nx_arena_alloc(a, sizeof(nx_comp *));
	sc->called[0] = ow;
	sc->ncalled = 1;
	return sc;
}

static nx_inst *rewrite(nx_rw *rw, nx_inst *in)
{
	if (in->op == NX_OP_DYNAMIC_UPDATE_SLICE)
		return dynamic_update_slice(rw, in);
	if (in->op == NX_OP_GATHER)
		return gather(rw, in);
	if (in->op == NX_OP_DYNAMIC_SLICE)
		return dynamic_slice(rw, in);
	if (in->op == NX_OP_SCATTER)
		return scatter(rw, in);
	return NULL;
}

nx_status nx_pass_gather_linearize(nx_module *m, const nx_pass_ctx *ctx, bool *changed)
{
	return nx_rw_run(m, ctx, "gather-linearize", rewrite, NULL, changed);
}
