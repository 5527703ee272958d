/* ir/eval/eval_gather.c — gather and scatter in the reference evaluator, with
 * XLA's semantics: batching dimensions, index_vector_dim == rank meaning an
 * implicit trailing 1, gather start indices clamped into bounds, scatter
 * windows that do not fit skipped whole; a narrow-float scatter-add
 * accumulates in f32 and rounds once. */
#include "ir/eval/eval_impl.h"
#include "ir/eval/eval_ops.h"

/* Reads component k of the index vector selected by the batch position bidx
 * (indices dims without index_vector_dim, in order). */
static int64_t index_component(const nx_literal *idx, int64_t ivd, const int64_t *bidx, int64_t k)
{
	const nx_shape *s = idx->shape;
	int64_t lin = 0, b = 0;
	for (int d = 0; d < s->rank; d++) {
		int64_t v = d == ivd ? k : bidx[b++];
		lin = lin * s->dims[d] + v;
	}
	return nx_lit_get_i64(idx, lin);
}

/* Position of indices dim d within the batch index (dims other than ivd). */
static int batch_pos(int64_t d, int64_t ivd)
{
	return (int)(d < ivd ? d : d - 1);
}

nx_status nx_eval_gather(nx_eval *ev, const nx_inst *i, nx_literal *const *ops, nx_literal **out)
{
	const nx_literal *operand = ops[0], *idx = ops[1];
	const nx_gather_dnums *g = &i->a.gather;
	const nx_shape *os = i->shape, *ins = operand->shape;
	if (g->slice_sizes.n != ins->rank)
		return nx_eval_error(ev, i, "gather: slice_sizes has %d entries for an operand of rank %d",
		                     g->slice_sizes.n, ins->rank);
	nx_literal *res = nx_eval_alloc(ev, i->shape);
	if (!res)
		return ev->diag->status;
	*out = res;
	int64_t nout = nx_shape_elems(os);
	if (nout == 0)
		return NX_OK;

	/* Operand dims that the offset dims of the output walk, in order. */
	int64_t offset_operand_dim[NX_MAX_RANK];
	int noff = 0;
	for (int d = 0; d < ins->rank; d++)
		if (!nx_evop_ivec_has(g->collapsed_slice_dims, d) &&
		    !nx_evop_ivec_has(g->operand_batching_dims, d))
			offset_operand_dim[noff++] = d;
	if (noff != g->offset_dims.n)
		return nx_eval_error(ev, i, "gather: %d offset dims but %d uncollapsed slice dims",
		                     g->offset_dims.n, noff);

	int64_t ivd = g->index_vector_dim;
	int64_t instr[NX_MAX_RANK], oidx[NX_MAX_RANK], bidx[NX_MAX_RANK], start[NX_MAX_RANK];
	nx_evop_strides(ins, instr);
	memset(oidx, 0, sizeof oidx);
	for (int64_t o = 0; o < nout; o++, nx_evop_next(oidx, os->dims, os->rank)) {
		int nb = 0, no = 0;
		int64_t offs[NX_MAX_RANK];
		for (int d = 0; d < os->rank; d++) {
			if (nx_evop_ivec_has(g->offset_dims, d))
				offs[no++] = oidx[d];
			else
				bidx[nb++] = oidx[d];
		}
		memset(start, 0, sizeof(int64_t) * (size_t)ins->rank);
		for (int k = 0; k < g->start_index_map.n; k++) {
			int64_t od = g->start_index_map.v[k];
			int64_t v = index_component(idx, ivd, bidx, k);
			int64_t hi = ins->dims[od] - g->slice_sizes.v[od];
			start[od] = v < 0 ? 0 : v > hi ? hi : v;
		}
		for (int k = 0; k < g->operand_batching_dims.n; k++)
			start[g->operand_batching_dims.v[k]] =
			        bidx[batch_pos(g->start_indices_batching_dims.v[k], ivd)];
		int64_t lin = 0;
		for (int d = 0; d < ins->rank; d++)
			lin += start[d] * instr[d];
		for (int k = 0; k < noff; k++)
			lin += offs[k] * instr[offset_operand_dim[k]];
		nx_lit_copy_elem(res, o, operand, lin);
	}
	return NX_OK;
}

nx_status nx_eval_scatter(nx_eval *ev, const nx_inst *i, nx_literal *const *ops, nx_literal **out)
{
	int n = (i->noperands - 1) / 2;
	if (n < 1 || i->noperands != 2 * n + 1 || i->ncalled < 1)
		return nx_eval_error(ev, i, "scatter needs N operands, indices, N updates and to_apply");
	const nx_literal *idx = ops[n];
	const nx_scatter_dnums *sd = &i->a.scatter;
	const nx_shape *ins = ops[0]->shape, *us = ops[n + 1]->shape;

	nx_literal *res, *outs[n];
	if (nx_shape_is_tuple(i->shape)) {
		res = nx_arena_alloc(&ev->arena, sizeof *res);
		res->shape = i->shape;
		res->ntuple = n;
		res->tuple = nx_arena_alloc(&ev->arena, sizeof(nx_literal *) * (size_t)n);
		for (int k = 0; k < n; k++)
			outs[k] = res->tuple[k] = nx_evop_clone(ev, ops[k]);
	} else {
		res = outs[0] = nx_evop_clone(ev, ops[0]);
	}
	for (int k = 0; k < n; k++)
		if (!outs[k])
			return ev->diag->status;
	*out = res;
	int64_t nupd = nx_shape_elems(us);
	if (nupd == 0 || nx_shape_elems(ins) == 0)
		return NX_OK;

	/* Operand dims the update window dims walk, in order. */
	int64_t win_operand_dim[NX_MAX_RANK];
	int nwin = 0;
	for (int d = 0; d < ins->rank; d++)
		if (!nx_evop_ivec_has(sd->inserted_window_dims, d) &&
		    !nx_evop_ivec_has(sd->input_batching_dims, d))
			win_operand_dim[nwin++] = d;
	if (nwin != sd->update_window_dims.n)
		return nx_eval_error(ev, i, "scatter: %d update window dims but %d operand window dims",
		                     sd->update_window_dims.n, nwin);
	/* Window extent per operand dim: 1 for inserted and batching dims. */
	int64_t wsize[NX_MAX_RANK];
	for (int d = 0; d < ins->rank; d++)
		wsize[d] = 1;
	for (int k = 0; k < nwin; k++)
		wsize[win_operand_dim[k]] = us->dims[sd->update_window_dims.v[k]];

	const nx_comp *f = i->called[0];
	nx_opcode fast = NX_OP_COUNT;
	bool replace = false;
	if (n == 1) {
		fast = nx_evop_reducer_op(f);
		replace = f->nparams == 2 && f->root == f->params[1] && f->root->shape->type == ins->type;
		if (ops[2]->shape->type != ins->type) {
			fast = NX_OP_COUNT;
			replace = false;
		}
	}
	/* a narrow float (f16, bf16, f8) scatter-add accumulates each element in
	 * f32 and rounds once at the end, as the device's one-hot matmul does and
	 * as reduce sums narrow floats (docs/numerics.md) */
	nx_type t0 = ins->type;
	bool narrow = fast == NX_OP_ADD && nx_dom_of(t0) == NX_DOM_F32 && t0 != NX_F32;
	nx_literal *acc = outs[0], *upd = n == 1 ? ops[2] : NULL;
	if (narrow) {
		acc = nx_eval_convert_lit(ev, outs[0], NX_F32);
		upd = nx_eval_convert_lit(ev, ops[2], NX_F32);
		if (!acc || !upd)
			return NX_ERR_INPUT;
	}
	nx_literal *args[2 * n], *tmp[n];
	if (fast == NX_OP_COUNT && !replace) {
		for (int k = 0; k < n; k++) {
			args[k] = nx_evop_scalar(ev, ops[k]->shape->type);
			args[n + k] = nx_evop_scalar(ev, ops[n + 1 + k]->shape->type);
			tmp[k] = nx_evop_scalar(ev, ops[k]->shape->type);
			if (!args[k] || !args[n + k] || !tmp[k])
				return ev->diag->status;
		}
	}

	int64_t ivd = sd->index_vector_dim;
	int64_t instr[NX_MAX_RANK], uidx[NX_MAX_RANK], bidx[NX_MAX_RANK], start[NX_MAX_RANK];
	nx_evop_strides(ins, instr);
	memset(uidx, 0, sizeof uidx);
	for (int64_t u = 0; u < nupd; u++, nx_evop_next(uidx, us->dims, us->rank)) {
		int nb = 0, no = 0;
		int64_t offs[NX_MAX_RANK];
		for (int d = 0; d < us->rank; d++) {
			if (nx_evop_ivec_has(sd->update_window_dims, d))
				offs[no++] = uidx[d];
			else
				bidx[nb++] = uidx[d];
		}
		memset(start, 0, sizeof(int64_t) * (size_t)ins->rank);
		for (int k = 0; k < sd->scatter_dims_to_operand_dims.n; k++)
			start[sd->scatter_dims_to_operand_dims.v[k]] = index_component(idx, ivd, bidx, k);
		for (int k = 0; k < sd->input_batching_dims.n; k++)
			start[sd->input_batching_dims.v[k]] =
			        bidx[batch_pos(sd->scatter_indices_batching_dims.v[k], ivd)];
		/* The whole window must fit, else the update is dropped. */
		bool fits = true;
		for (int d = 0; d < ins->rank && fits; d++)
			fits = start[d] >= 0 && start[d] <= ins->dims[d] - wsize[d];
		if (!fits)
			continue;
		int64_t lin = 0;
		for (int d = 0; d < ins->rank; d++)
			lin += start[d] * instr[d];
		for (int k = 0; k < nwin; k++)
			lin += offs[k] * instr[win_operand_dim[k]];
		if (replace) {
			nx_lit_copy_elem(outs[0], lin, ops[2], u);
		} else if (fast != NX_OP_COUNT) {
			nx_evop_apply(fast, acc, lin, acc, lin, upd, u);
		} else {
			for (int k = 0; k < n; k++) {
				nx_lit_copy_elem(args[k], 0, outs[k], lin);
				nx_lit_copy_elem(args[n + k], 0, ops[n + 1 + k], u);
			}
			nx_literal *r;
			nx_status st = nx_eval_call(ev, f, args, 2 * n, &r);
			if (st != NX_OK)
				return st;
			for (int k = 0; k < n; k++)
				nx_lit_copy_elem(tmp[k], 0, n == 1 && !r->tuple ? r : r->tuple[k], 0);
			for (int k = 0; k < n; k++)
				nx_lit_copy_elem(outs[k], lin, tmp[k], 0);
		}
	}
	if (narrow) {
		nx_literal *c = nx_eval_convert_lit(ev, acc, t0);
		if (!c)
			return NX_ERR_INPUT;
		if (c->nbytes)
			memcpy(outs[0]->data, c->data, (size_t)c->nbytes);
	}
	return NX_OK;
}
