/* passes/gather_batching.c — every rewrite of a gather with batching
 * dimensions (operand_batching_dims: JAX's vmap of `take`, jnp.
 * take_along_axis) into forms the backend has kernels for, tried in order:
 *
 * 1. One-hot (`one_hot`): single-element slices indexing one operand dim,
 *    the batching dims in any order (take_along_axis: logits[b, label[b]],
 *    optax's cross-entropy with integer labels) -> clamp the index, compare
 *    it with an iota over the indexed dim, select the operand or 0,
 *    reduce-add that dim (reduce-or for pred). Exact: one term is not 0.
 *    O(N) work per element, but no runtime-indexed DMA.
 * 2. Lookup (`lookup`): the batch dimensions and the indexed dimension of
 *    the operand are merged by a reshape, and the index becomes clamp(idx,
 *    0, N-1) + (linear batch position) * N, where the batch position comes
 *    from iotas over the index tensor's batch dims: a plain one-dimension
 *    lookup (the gather-dma kernel). The clamp keeps XLA's semantics (a
 *    start index is clamped within its own dimension, never into the next
 *    batch row). Form: operand_batching_dims = {0..nb-1} and
 *    start_indices_batching_dims = {0..nb-1} (leading, in order), one
 *    start_index_map dim nb, collapsed_slice_dims = {nb}, slice size 1 in
 *    the batch dims and nb and full elsewhere, an integer index.
 *
 * Other gathers are left alone (the backend names what it refuses). The
 * transposed scatter-add of form 1 is op-expand's (passes/op_expand.c).
 * Both forms were once split between op-expand and this pass; the .neff of
 * every graph that uses them is unchanged by the move (colabfold, the JAX
 * training graphs, tests/e2e/ops/gather_batched.hlo, take_along_axis.hlo). */
#include "passes/rewrite.h"

#include <string.h>

static bool is_prefix(nx_ivec v, int n)
{
	if (v.n != n)
		return false;
	for (int k = 0; k < n; k++)
		if (v.v[k] != k)
			return false;
	return true;
}

/* Form 1: a gather with batching dims whose slices are single elements and
 * index one operand dim (take_along_axis: logits[b, label[b]]): a one-hot selection,
 * out[i] = sum_c select(c == clamp(idx[i], 0, C-1), X[batch(i), c], 0). */
static nx_inst *one_hot(nx_rw *rw, nx_inst *in)
{
	const nx_gather_dnums *g = &in->a.gather;
	nx_inst *x = in->operands[0], *ix = in->operands[1];
	int xr = x->shape->rank, ir = ix->shape->rank, q = in->shape->rank;
	nx_type_kind ik = nx_type_kind_of(ix->shape->type);
	if (in->noperands != 2 || !g->operand_batching_dims.n || g->offset_dims.n || g->start_index_map.n != 1 ||
	    g->collapsed_slice_dims.n != 1 || g->collapsed_slice_dims.v[0] != g->start_index_map.v[0] ||
	    g->operand_batching_dims.n + 1 != xr || g->slice_sizes.n != xr || x->shape->dynamic ||
	    ix->shape->dynamic || in->shape->dynamic || (ik != NX_KIND_SINT && ik != NX_KIND_UINT) ||
	    nx_type_kind_of(x->shape->type) == NX_KIND_COMPLEX)
		return NULL;
	for (int d = 0; d < xr; d++)
		if (g->slice_sizes.v[d] != 1)
			return NULL;
	int64_t ivd = g->index_vector_dim, c = g->start_index_map.v[0];
	if (ivd < ir && ix->shape->dims[ivd] != 1)
		return NULL;
	int ns = ivd < ir ? ir - 1 : ir; /* index dims without the vector dim */
	if (q != ns || q + 1 > NX_MAX_RANK)
		return NULL;
	/* output dim of each operand dim: batching dims via the index dims,
	 * the indexed dim c last (q) */
	int64_t omap[NX_MAX_RANK];
	for (int d = 0; d < xr; d++)
		omap[d] = -1;
	omap[c] = q;
	for (int j = 0; j < g->operand_batching_dims.n; j++) {
		int64_t id = g->start_indices_batching_dims.v[j];
		omap[g->operand_batching_dims.v[j]] = id - (ivd < ir && id > ivd ? 1 : 0);
	}
	for (int d = 0; d < xr; d++)
		if (omap[d] < 0)
			return NULL;
	int64_t C = x->shape->dims[c], sd[NX_MAX_RANK], perm[NX_MAX_RANK], bdims[NX_MAX_RANK];
	for (int d = 0; d < q; d++)
		sd[d] = in->shape->dims[d];
	sd[q] = C;
	/* x transposed into the order of its output dims, then broadcast */
	int np = 0;
	for (int o = 0; o <= q; o++)
		for (int d = 0; d < xr; d++)
			if (omap[d] == o)
				bdims[np] = o, perm[np++] = d;
	bool ident = true;
	for (int d = 0; d < xr; d++)
		ident = ident && perm[d] == d;
	nx_inst *xt = ident ? x : nx_rw_transpose(rw, x, perm);
	nx_type t = x->shape->type, it = ix->shape->type;
	nx_inst *xb = nx_rw_broadcast(rw, xt, t, q + 1, sd, bdims);
	/* the index without its vector dim (no reshape when it has none: at -O2
	 * the simplify group runs before this pass, not after) */
	bool same = ix->shape->rank == q;
	for (int d = 0; same && d < q; d++)
		same = ix->shape->dims[d] == sd[d];
	nx_inst *idx = same ? ix : nx_rw_reshape(rw, ix, q, sd);
	nx_arena *a = nx_rw_arena(rw);
	nx_inst *cl[3] = {nx_rw_scalar(rw, it, 0), idx, nx_rw_scalar(rw, it, (double)(C - 1))};
	idx = nx_rw_add(rw, NX_OP_CLAMP, nx_shape_copy(a, idx->shape), cl, 3, NULL);
	int64_t seq[NX_MAX_RANK];
	for (int d = 0; d < q; d++)
		seq[d] = d;
	nx_inst *ib = nx_rw_broadcast(rw, idx, it, q + 1, sd, seq);
	nx_inst *io = nx_rw_add(rw, NX_OP_IOTA, nx_shape_array(a, it, q + 1, sd), NULL, 0, NULL);
	io->a.iota_dimension = q;
	nx_inst *eq = nx_rw_binary(rw, NX_OP_COMPARE, ib, io);
	eq->a.direction = NX_CMP_EQ;
	nx_inst *sel[3] = {eq, xb, nx_rw_splat(rw, xb->shape, t, 0)};
	nx_inst *s = nx_rw_add(rw, NX_OP_SELECT, nx_shape_copy(a, xb->shape), sel, 3, NULL);
	int64_t rd = q;
	nx_inst *r = nx_rw_reduce(rw, s, nx_rw_scalar(rw, t, 0), &rd, 1,
	                          nx_type_kind_of(t) == NX_KIND_PRED ? NX_OP_OR : NX_OP_ADD);
	r->shape = nx_shape_copy(a, in->shape);
	return r;
}

/* Form 2: the lookup. */
static nx_inst *lookup(nx_rw *rw, nx_inst *in)
{
	const nx_gather_dnums *g = &in->a.gather;
	nx_inst *x = in->operands[0], *idx = in->operands[1];
	int nb = g->operand_batching_dims.n, r = x->shape->rank, ir = idx->shape->rank;
	if (nb == 0 || !is_prefix(g->operand_batching_dims, nb) || !is_prefix(g->start_indices_batching_dims, nb) ||
	    g->start_index_map.n != 1 || g->start_index_map.v[0] != nb || g->collapsed_slice_dims.n != 1 ||
	    g->collapsed_slice_dims.v[0] != nb || g->slice_sizes.n != r || nb + 1 > r ||
	    !nx_type_is_int(idx->shape->type) || g->index_vector_dim < nb)
		return NULL;
	for (int k = 0; k < r; k++)
		if (g->slice_sizes.v[k] != (k <= nb ? 1 : x->shape->dims[k]))
			return NULL;
	if (g->index_vector_dim < ir && idx->shape->dims[g->index_vector_dim] != 1)
		return NULL;
	int64_t N = x->shape->dims[nb], B = 1;
	for (int k = 0; k < nb; k++)
		B *= x->shape->dims[k];
	if (B * N > INT32_MAX)
		return NULL;
	nx_arena *a = nx_rw_arena(rw);
	nx_type it = idx->shape->type;
	/* operand [B..., N, rest...] -> [B*N, rest...] */
	int64_t od[NX_MAX_RANK];
	od[0] = B * N;
	for (int k = nb + 1; k < r; k++)
		od[k - nb] = x->shape->dims[k];
	nx_inst *x2 = nx_rw_reshape(rw, x, r - nb, od);
	/* index: clamp(idx, 0, N-1) + sum_j iota_j * N * prod(B[j+1..]) */
	nx_inst *lo = nx_rw_splat(rw, idx->shape, it, 0), *hi = nx_rw_splat(rw, idx->shape, it, (double)(N - 1));
	nx_inst *cops[3] = {lo, idx, hi};
	nx_inst *lin = nx_rw_add(rw, NX_OP_CLAMP, nx_shape_copy(a, idx->shape), cops, 3, NULL);
	int64_t stride = N;
	for (int j = nb - 1; j >= 0; j--) {
		nx_inst *io = nx_rw_add(rw, NX_OP_IOTA, nx_shape_copy(a, idx->shape), NULL, 0, NULL);
		io->a.iota_dimension = j;
		nx_inst *sc = nx_rw_splat(rw, idx->shape, it, (double)stride);
		lin = nx_rw_binary(rw, NX_OP_ADD, lin, nx_rw_binary(rw, NX_OP_MULTIPLY, io, sc));
		stride *= x->shape->dims[j];
	}
	nx_inst *ops[2] = {x2, lin};
	nx_inst *ng = nx_rw_add(rw, NX_OP_GATHER, nx_shape_copy(a, in->shape), ops, 2, NULL);
	ng->a = in->a;
	nx_gather_dnums *d = &ng->a.gather;
	int64_t zero = 0, ss[NX_MAX_RANK];
	ss[0] = 1;
	for (int k = nb + 1; k < r; k++)
		ss[k - nb] = x->shape->dims[k];
	d->operand_batching_dims = (nx_ivec){NULL, 0};
	d->start_indices_batching_dims = (nx_ivec){NULL, 0};
	d->start_index_map = nx_ivec_dup(a, &zero, 1);
	d->collapsed_slice_dims = nx_ivec_dup(a, &zero, 1);
	d->slice_sizes = nx_ivec_dup(a, ss, r - nb);
	d->indices_are_sorted = false;
	return ng;
}

static nx_inst *rewrite(nx_rw *rw, nx_inst *in)
{
	if (in->op != NX_OP_GATHER || in->noperands != 2 || !in->a.gather.operand_batching_dims.n)
		return NULL;
	nx_inst *r = one_hot(rw, in);
	return r ? r : lookup(rw, in);
}

nx_status nx_pass_gather_batching(nx_module *m, const nx_pass_ctx *ctx, bool *changed)
{
	return nx_rw_run(m, ctx, "gather-batching", rewrite, NULL, changed);
}
