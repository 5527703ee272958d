/* ir/eval/eval_collective.c — collectives in the reference evaluator.
 *
 * Every replica runs the same instruction; nx_eval_exchange hands each one
 * the operand values of all replicas, and each computes its own share of
 * the result from its replica group. The async -start forms do the work and
 * wrap the result the way XLA shapes them ((operands, results[, contexts])
 * for all-gather-start and collective-permute-start, the bare result for
 * all-reduce-start); -done unwraps. With num_partitions = 1 every id in
 * replica groups and source_target_pairs is a replica id. */
#include <stdlib.h>

#include "ir/eval/eval_ops.h"

static nx_literal *clone_deep(nx_eval *ev, const nx_literal *src)
{
	if (!nx_shape_is_tuple(src->shape))
		return nx_evop_clone(ev, src);
	nx_literal *t = nx_arena_alloc(&ev->arena, sizeof *t);
	t->shape = src->shape;
	t->ntuple = src->ntuple;
	t->tuple = nx_arena_alloc(&ev->arena, sizeof(nx_literal *) * (size_t)(src->ntuple + 1));
	for (int k = 0; k < src->ntuple; k++)
		if (!(t->tuple[k] = clone_deep(ev, src->tuple[k])))
			return NULL;
	return t;
}

/* The replica group holding this replica: members in group order. Returns
 * the group size (0 if this replica is in none) and sets *rank. */
static int my_group(nx_eval *ev, const nx_inst *i, int64_t *members, int *rank)
{
	const nx_replica_groups *g = &i->a.replica_groups;
	int nrep = ev->nreplicas > 0 ? ev->nreplicas : 1;
	*rank = -1;
	if (g->iota && g->iota_shape.n == 2) {
		int64_t ng = g->iota_shape.v[0], gs = g->iota_shape.v[1];
		int nr = g->iota_reshape.n;
		int64_t total = 1, dims[NX_MAX_RANK], tdims[NX_MAX_RANK], idx[NX_MAX_RANK], st[NX_MAX_RANK];
		for (int d = 0; d < nr; d++) {
			dims[d] = g->iota_reshape.v[d];
			total *= dims[d];
		}
		if (total != ng * gs || total <= 0)
			return 0;
		/* Element (transposed index) = iota value at the permuted index. */
		int64_t s = 1;
		for (int d = nr - 1; d >= 0; d--) {
			st[d] = s;
			s *= dims[d];
		}
		for (int d = 0; d < nr; d++)
			tdims[d] = g->iota_transpose.n == nr ? dims[g->iota_transpose.v[d]] : dims[d];
		memset(idx, 0, sizeof idx);
		for (int64_t k = 0; k < total; k++, nx_evop_next(idx, tdims, nr)) {
			int64_t v = 0;
			for (int d = 0; d < nr; d++)
				v += idx[d] * st[g->iota_transpose.n == nr ? g->iota_transpose.v[d] : d];
			if (v == ev->replica) {
				int64_t grp = k / gs;
				/* Re-walk to collect the members of that group. */
				int64_t jdx[NX_MAX_RANK];
				memset(jdx, 0, sizeof jdx);
				for (int64_t q = 0; q < total; q++, nx_evop_next(jdx, tdims, nr)) {
					if (q / gs != grp)
						continue;
					int64_t w = 0;
					for (int d = 0; d < nr; d++)
						w += jdx[d] * st[g->iota_transpose.n == nr ? g->iota_transpose.v[d] : d];
					members[q % gs] = w;
				}
				*rank = (int)(k % gs);
				return (int)gs;
			}
		}
		return 0;
	}
	if (!g->present || g->ngroups == 0) {
		for (int r = 0; r < nrep; r++)
			members[r] = r;
		*rank = ev->replica;
		return nrep;
	}
	for (int k = 0; k < g->ngroups; k++) {
		for (int j = 0; j < g->groups[k].n; j++) {
			if (g->groups[k].v[j] != ev->replica)
				continue;
			for (int q = 0; q < g->groups[k].n; q++)
				members[q] = g->groups[k].v[q];
			*rank = j;
			return g->groups[k].n;
		}
	}
	return 0;
}

/* Operand values of every replica: *all[r] is replica r's tuple of operand
 * literals (or its single operand when nops == 1). */
static nx_status exchange(nx_eval *ev, const nx_inst *i, nx_literal *const *ops, int nops,
                          nx_literal ***all)
{
	nx_literal *mine = ops[0];
	if (nops != 1) {
		mine = nx_arena_alloc(&ev->arena, sizeof *mine);
		mine->shape = NULL;
		mine->ntuple = nops;
		mine->tuple = nx_arena_alloc(&ev->arena, sizeof(nx_literal *) * (size_t)nops);
		for (int k = 0; k < nops; k++)
			mine->tuple[k] = ops[k];
	}
	if (ev->nreplicas <= 1 || !ev->group) {
		nx_literal **one = nx_arena_alloc(&ev->arena, sizeof(nx_literal *) * 2);
		one[0] = mine;
		*all = one;
		return NX_OK;
	}
	return nx_eval_exchange(ev, i, mine, all);
}

static void copy_data(nx_literal *dst, const nx_literal *src)
{
	if (src->nbytes > 0 && src->nbytes == dst->nbytes)
		memcpy(dst->data, src->data, (size_t)src->nbytes);
}

static const nx_literal *operand_of(nx_literal *const *all, int64_t replica, int nops, int k)
{
	return nops == 1 ? all[replica] : all[replica]->tuple[k];
}

/* Result literal for a (possibly tuple) result shape; res[k] its arrays. */
static nx_literal *alloc_result(nx_eval *ev, nx_shape *shape, int nops, nx_literal **res)
{
	if (nx_shape_is_tuple(shape)) {
		nx_literal *t = nx_evop_alloc_tuple(ev, shape);
		if (!t || t->ntuple < nops)
			return NULL;
		for (int k = 0; k < nops; k++)
			res[k] = t->tuple[k];
		return t;
	}
	res[0] = nx_eval_alloc(ev, shape);
	return res[0];
}

/* res[k][e] = reduce over the group's members of operand k, in group order. */
static nx_status reduce_group(nx_eval *ev, const nx_inst *i, nx_literal *const *all, int nops,
                              const int64_t *members, int gsize, nx_literal **res)
{
	const nx_comp *f = i->ncalled ? i->called[0] : NULL;
	if (!f)
		return nx_eval_error(ev, i, "%s needs to_apply", nx_opcode_name(i->op));
	nx_opcode fast = nx_evop_reducer_op(f);
	for (int k = 0; k < nops; k++) {
		nx_literal *r = res[k];
		const nx_literal *first = operand_of(all, members[0], nops, k);
		int64_t n = nx_shape_elems(first->shape);
		if (first->nbytes)
			memcpy(r->data, first->data, (size_t)first->nbytes);
		if ((fast == NX_OP_ADD || fast == NX_OP_MULTIPLY) && r->shape->type == NX_F32 &&
		    f->root->shape->type == NX_F32) {
			/* f32 add/multiply in float: the same bits as nx_evop_apply's
			 * double operation rounded once to f32 (53 >= 2 x 24 + 2) */
			float *rp = r->data;
			for (int m = 1; m < gsize; m++) {
				const float *xp = operand_of(all, members[m], nops, k)->data;
				if (fast == NX_OP_ADD)
					for (int64_t e = 0; e < n; e++)
						rp[e] = rp[e] + xp[e];
				else
					for (int64_t e = 0; e < n; e++)
						rp[e] = rp[e] * xp[e];
			}
			continue;
		}
		if (fast != NX_OP_COUNT && f->root->shape->type == r->shape->type) {
			for (int m = 1; m < gsize; m++) {
				const nx_literal *x = operand_of(all, members[m], nops, k);
				for (int64_t e = 0; e < n; e++)
					nx_evop_apply(fast, r, e, r, e, x, e);
			}
			continue;
		}
		nx_literal *args[2] = {nx_evop_scalar(ev, r->shape->type), nx_evop_scalar(ev, r->shape->type)};
		if (!args[0] || !args[1])
			return ev->diag->status;
		for (int64_t e = 0; e < n; e++) {
			nx_lit_copy_elem(args[0], 0, r, e);
			for (int m = 1; m < gsize; m++) {
				nx_lit_copy_elem(args[1], 0, operand_of(all, members[m], nops, k), e);
				nx_literal *out;
				nx_status st = nx_eval_call(ev, f, args, 2, &out);
				if (st != NX_OK)
					return st;
				nx_lit_copy_elem(args[0], 0, out, 0);
			}
			nx_lit_copy_elem(r, e, args[0], 0);
		}
	}
	return NX_OK;
}

/* Copies the slab along dim d between `big` (from offset `at` along d) and
 * `small` (whole) with one memcpy per index of the dims before d (literals
 * are row-major); false, copying nothing, unless the two have one type and
 * rank and the same extent in every dim but d. to_big: small into big, else
 * big into small. */
static bool slab(nx_literal *big, nx_literal *small, int d, int64_t at, bool to_big)
{
	const nx_shape *bs = big->shape, *ss = small->shape;
	if (bs->type != ss->type || bs->rank != ss->rank || d < 0 || d >= ss->rank || !big->data || !small->data)
		return false;
	for (int q = 0; q < ss->rank; q++)
		if (q != d && bs->dims[q] != ss->dims[q])
			return false;
	int64_t outer = 1, inner = 1, esz = nx_type_bytes(ss->type);
	for (int q = 0; q < d; q++)
		outer *= ss->dims[q];
	for (int q = d + 1; q < ss->rank; q++)
		inner *= ss->dims[q];
	size_t blk = (size_t)(ss->dims[d] * inner * esz);
	for (int64_t o = 0; blk && o < outer; o++) {
		uint8_t *pb = (uint8_t *)big->data + ((o * bs->dims[d] + at) * inner) * esz;
		uint8_t *ps = (uint8_t *)small->data + o * (int64_t)blk;
		if (to_big)
			memcpy(pb, ps, blk);
		else
			memcpy(ps, pb, blk);
	}
	return true;
}

/* Copies src (an array) into dst at offset `at` along dim d. */
static void place(nx_literal *dst, const nx_literal *src, int d, int64_t at)
{
	if (slab(dst, (nx_literal *)src, d, at, true))
		return;
	int64_t n = nx_shape_elems(src->shape), dst_st[NX_MAX_RANK], idx[NX_MAX_RANK];
	nx_evop_strides(dst->shape, dst_st);
	memset(idx, 0, sizeof idx);
	for (int64_t e = 0; e < n; e++, nx_evop_next(idx, src->shape->dims, src->shape->rank)) {
		int64_t lin = 0;
		for (int q = 0; q < src->shape->rank; q++)
			lin += (idx[q] + (q == d ? at : 0)) * dst_st[q];
		nx_lit_copy_elem(dst, lin, src, e);
	}
}

/* dst = the slice of src starting at `at` along dim d, dst's extent. */
static void take(nx_literal *dst, const nx_literal *src, int d, int64_t at)
{
	if (slab((nx_literal *)src, dst, d, at, false))
		return;
	int64_t n = nx_shape_elems(dst->shape), src_st[NX_MAX_RANK], idx[NX_MAX_RANK];
	nx_evop_strides(src->shape, src_st);
	memset(idx, 0, sizeof idx);
	for (int64_t e = 0; e < n; e++, nx_evop_next(idx, dst->shape->dims, dst->shape->rank)) {
		int64_t lin = 0;
		for (int q = 0; q < dst->shape->rank; q++)
			lin += (idx[q] + (q == d ? at : 0)) * src_st[q];
		nx_lit_copy_elem(dst, e, src, lin);
	}
}

/* The result part of an async -start shape: tuple element 1 for the
 * (operands, results[, contexts]) form, else the shape itself. */
static nx_shape *start_result_shape(const nx_inst *i, nx_literal *const *ops, int nops, bool *wrapped)
{
	nx_shape *s = i->shape;
	*wrapped = false;
	if (i->op != NX_OP_ALL_GATHER_START && i->op != NX_OP_COLLECTIVE_PERMUTE_START)
		return s;
	if (nx_shape_is_tuple(s) && s->ntuple >= 2) {
		const nx_shape *o0 = s->tuple[0];
		bool same = nops == 1 ? nx_shape_compatible(o0, ops[0]->shape)
		                      : (nx_shape_is_tuple(o0) && o0->ntuple == nops);
		if (same) {
			*wrapped = true;
			return s->tuple[1];
		}
	}
	return s;
}

nx_status nx_eval_collective(nx_eval *ev, const nx_inst *i, nx_literal *const *ops, nx_literal **out)
{
	switch (i->op) {
	case NX_OP_ALL_REDUCE_DONE:
	case NX_OP_ALL_GATHER_DONE:
	case NX_OP_COLLECTIVE_PERMUTE_DONE: {
		const nx_literal *s = ops[0];
		if (!nx_shape_compatible(i->shape, s->shape) && nx_shape_is_tuple(s->shape) &&
		    s->ntuple >= 2 && nx_shape_compatible(i->shape, s->tuple[1]->shape))
			s = s->tuple[1];
		*out = clone_deep(ev, s);
		return *out ? NX_OK : ev->diag->status;
	}
	default:
		break;
	}

	int nops = i->noperands;
	if (nops < 1)
		return nx_eval_error(ev, i, "%s needs operands", nx_opcode_name(i->op));
	int nrep = ev->nreplicas > 0 ? ev->nreplicas : 1;
	int64_t *members = nx_arena_alloc(&ev->arena, sizeof(int64_t) * (size_t)(nrep + 1));
	int rank = 0, gsize = 1;
	if (i->op != NX_OP_COLLECTIVE_PERMUTE && i->op != NX_OP_COLLECTIVE_PERMUTE_START) {
		gsize = my_group(ev, i, members, &rank);
		if (gsize <= 0)
			return nx_eval_error(ev, i, "replica %d is in none of the replica groups", ev->replica);
		for (int m = 0; m < gsize; m++)
			if (members[m] < 0 || members[m] >= nrep)
				return nx_eval_error(ev, i, "replica group names replica %lld of %d",
				                     (long long)members[m], nrep);
	}
	nx_literal **all;
	nx_status st = exchange(ev, i, ops, nops, &all);
	if (st != NX_OK)
		return st;

	bool wrapped;
	nx_shape *rs = start_result_shape(i, ops, nops, &wrapped);
	nx_literal *res[nops + 1];
	nx_literal *result;
	int64_t d = i->a.dimensions.n ? i->a.dimensions.v[0] : 0;

	switch (i->op) {
	case NX_OP_ALL_REDUCE:
	case NX_OP_ALL_REDUCE_START:
		if (!(result = alloc_result(ev, rs, nops, res)))
			return ev->diag->status;
		st = reduce_group(ev, i, all, nops, members, gsize, res);
		break;
	case NX_OP_REDUCE_SCATTER: {
		if (!(result = alloc_result(ev, rs, nops, res)))
			return ev->diag->status;
		nx_literal *full[nops + 1];
		for (int k = 0; k < nops; k++)
			if (!(full[k] = nx_eval_alloc(ev, ops[k]->shape)))
				return ev->diag->status;
		st = reduce_group(ev, i, all, nops, members, gsize, full);
		for (int k = 0; k < nops && st == NX_OK; k++)
			take(res[k], full[k], (int)d, rank * res[k]->shape->dims[d]);
		break;
	}
	case NX_OP_ALL_GATHER:
	case NX_OP_ALL_GATHER_START:
		if (!(result = alloc_result(ev, rs, nops, res)))
			return ev->diag->status;
		for (int k = 0; k < nops; k++)
			for (int m = 0; m < gsize; m++) {
				const nx_literal *x = operand_of(all, members[m], nops, k);
				place(res[k], x, (int)d, m * x->shape->dims[d]);
			}
		break;
	case NX_OP_ALL_TO_ALL:
		if (!(result = alloc_result(ev, rs, nops, res)))
			return ev->diag->status;
		if (i->a.dimensions.n > 0 && nops == 1) {
			int64_t chunk = ops[0]->shape->dims[d] / gsize;
			nx_literal *piece = nx_eval_alloc(ev, nx_shape_copy(&ev->arena, ops[0]->shape));
			if (!piece)
				return ev->diag->status;
			piece->shape->dims[d] = chunk;
			for (int m = 0; m < gsize; m++) {
				take(piece, operand_of(all, members[m], 1, 0), (int)d, rank * chunk);
				place(res[0], piece, (int)d, m * chunk);
			}
		} else {
			if (nops != gsize)
				return nx_eval_error(ev, i, "tuple all-to-all has %d operands for a group of %d",
				                     nops, gsize);
			for (int m = 0; m < gsize; m++) {
				const nx_literal *x = operand_of(all, members[m], nops, rank);
				copy_data(res[m], x);
			}
		}
		break;
	case NX_OP_COLLECTIVE_PERMUTE:
	case NX_OP_COLLECTIVE_PERMUTE_START: {
		if (!(result = alloc_result(ev, rs, 1, res)))
			return ev->diag->status;
		for (int p = 0; p < i->a.nsource_target_pairs; p++) {
			int64_t src = i->a.source_target_pairs[p][0], tgt = i->a.source_target_pairs[p][1];
			if (tgt != ev->replica)
				continue;
			if (src < 0 || src >= nrep)
				return nx_eval_error(ev, i, "source_target_pairs names replica %lld of %d",
				                     (long long)src, nrep);
			const nx_literal *x = operand_of(all, src, nops, 0);
			copy_data(res[0], x);
		}
		break;
	}
	case NX_OP_COLLECTIVE_BROADCAST:
		if (!(result = alloc_result(ev, rs, nops, res)))
			return ev->diag->status;
		for (int k = 0; k < nops; k++) {
			const nx_literal *x = operand_of(all, members[0], nops, k);
			copy_data(res[k], x);
		}
		break;
	default:
		return nx_eval_error(ev, i, "%s is not implemented in the evaluator yet",
		                     nx_opcode_name(i->op));
	}
	if (st != NX_OK)
		return st;
	if (!result)
		return ev->diag->status;

	if (wrapped) {
		/* (operands, results, contexts...): contexts stay zero. */
		nx_literal *t = nx_evop_alloc_tuple(ev, i->shape);
		if (!t)
			return ev->diag->status;
		t->tuple[0] = nops == 1 ? clone_deep(ev, ops[0]) : t->tuple[0];
		for (int k = 0; nops > 1 && k < nops; k++)
			t->tuple[0]->tuple[k] = clone_deep(ev, ops[k]);
		t->tuple[1] = result;
		result = t;
	}
	*out = result;
	return NX_OK;
}
