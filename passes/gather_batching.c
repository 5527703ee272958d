/* passes/gather_batching.c — a gather with batching dimensions (JAX's
 * vmap of `take`: out[b, j, :] = x[b, idx[b, j], :]) becomes a plain
 * one-dimension lookup the backend has a kernel for: the batch dimensions
 * and the indexed dimension of the operand are merged by a reshape, and the
 * index becomes clamp(idx, 0, N-1) + (linear batch position) * N, where the
 * batch position comes from iotas over the index tensor's batch dims. The
 * clamp keeps XLA's semantics (a start index is clamped within its own
 * dimension, never into the next batch row).
 *
 * Form handled: operand_batching_dims = {0..nb-1} and
 * start_indices_batching_dims = {0..nb-1} (leading, in order), one
 * start_index_map dim nb, collapsed_slice_dims = {nb}, slice size 1 in the
 * batch dims and nb and full elsewhere, an integer index. Other gathers are
 * left alone (the backend names what it refuses). */
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

static nx_inst *rewrite(nx_rw *rw, nx_inst *in)
{
	if (in->op != NX_OP_GATHER || in->noperands != 2)
		return NULL;
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

nx_status nx_pass_gather_batching(nx_module *m, const nx_pass_ctx *ctx, bool *changed)
{
	return nx_rw_run(m, ctx, "gather-batching", rewrite, NULL, changed);
}
