/* ir/eval/eval_window.c — reduce-window and select-and-scatter in the reference
 * evaluator. Windows follow XLA: position = out * stride - pad_lo + k *
 * window_dilation in the base-dilated input; positions that fall in padding
 * or between dilated base elements contribute nothing. */
#include "ir/eval/eval_ops.h"

/* Linear input index of window element kidx for output index oidx, or -1
 * when it lies in padding or in a base-dilation hole. */
static int64_t window_src(const nx_window *w, const nx_shape *in, const int64_t *instr,
                          const int64_t *oidx, const int64_t *kidx)
{
	int64_t lin = 0;
	for (int d = 0; d < in->rank; d++) {
		const nx_window_dim *wd = &w->dims[d];
		int64_t st = wd->stride > 0 ? wd->stride : 1;
		int64_t dil = wd->window_dilation > 0 ? wd->window_dilation : 1;
		int64_t bd = wd->base_dilation > 0 ? wd->base_dilation : 1;
		int64_t pos = oidx[d] * st - wd->pad_lo + kidx[d] * dil;
		if (pos < 0 || pos % bd != 0 || pos / bd >= in->dims[d])
			return -1;
		lin += (pos / bd) * instr[d];
	}
	return lin;
}

/* Copies the per-element result r of a reducer call into accs[0..n-1]. The
 * result may alias the argument literals, so it goes through tmp first. */
static void take_result(const nx_literal *r, int n, nx_literal **tmp, nx_literal **accs)
{
	for (int k = 0; k < n; k++)
		nx_lit_copy_elem(tmp[k], 0, n == 1 && !r->tuple ? r : r->tuple[k], 0);
	for (int k = 0; k < n; k++)
		nx_lit_copy_elem(accs[k], 0, tmp[k], 0);
}

nx_status nx_eval_reduce_window(nx_eval *ev, const nx_inst *i, nx_literal *const *ops, nx_literal **out)
{
	int n = i->noperands / 2;
	const nx_window *w = &i->a.window;
	if (n < 1 || i->ncalled < 1)
		return nx_eval_error(ev, i, "reduce-window needs inputs, init values and to_apply");
	const nx_shape *in = ops[0]->shape;
	if (w->ndims != in->rank)
		return nx_eval_error(ev, i, "reduce-window: window rank %d != operand rank %d", w->ndims,
		                     in->rank);
	nx_literal *res, *outs[n];
	if (nx_shape_is_tuple(i->shape)) {
		res = nx_evop_alloc_tuple(ev, i->shape);
		if (!res)
			return ev->diag->status;
		for (int k = 0; k < n; k++)
			outs[k] = res->tuple[k];
	} else {
		res = outs[0] = nx_eval_alloc(ev, i->shape);
		if (!res)
			return ev->diag->status;
	}
	*out = res;
	const nx_shape *os = outs[0]->shape;
	int64_t nout = nx_shape_elems(os);
	if (nout == 0)
		return NX_OK;

	const nx_comp *f = i->called[0];
	nx_opcode fast = n == 1 ? nx_evop_reducer_op(f) : NX_OP_COUNT;
	if (fast != NX_OP_COUNT && (ops[0]->shape->type != os->type || ops[1]->shape->type != os->type))
		fast = NX_OP_COUNT;
	nx_literal *args[2 * n], *tmp[n];
	if (fast == NX_OP_COUNT) {
		for (int k = 0; k < n; k++) {
			args[k] = nx_evop_scalar(ev, ops[n + k]->shape->type);
			args[n + k] = nx_evop_scalar(ev, ops[k]->shape->type);
			tmp[k] = nx_evop_scalar(ev, ops[n + k]->shape->type);
			if (!args[k] || !args[n + k] || !tmp[k])
				return ev->diag->status;
		}
	}

	int64_t instr[NX_MAX_RANK], oidx[NX_MAX_RANK], kidx[NX_MAX_RANK], kdims[NX_MAX_RANK];
	nx_evop_strides(in, instr);
	bool empty_window = false;
	for (int d = 0; d < in->rank; d++) {
		kdims[d] = w->dims[d].size;
		empty_window |= kdims[d] == 0;
	}
	memset(oidx, 0, sizeof oidx);
	for (int64_t o = 0; o < nout; o++, nx_evop_next(oidx, os->dims, os->rank)) {
		if (fast != NX_OP_COUNT) {
			nx_lit_copy_elem(outs[0], o, ops[1], 0);
		} else {
			for (int k = 0; k < n; k++)
				nx_lit_copy_elem(args[k], 0, ops[n + k], 0);
		}
		memset(kidx, 0, sizeof(int64_t) * (size_t)in->rank);
		if (!empty_window) {
			do {
				int64_t src = window_src(w, in, instr, oidx, kidx);
				if (src < 0)
					continue;
				if (fast != NX_OP_COUNT) {
					nx_evop_apply(fast, outs[0], o, outs[0], o, ops[0], src);
					continue;
				}
				for (int k = 0; k < n; k++)
					nx_lit_copy_elem(args[n + k], 0, ops[k], src);
				nx_literal *r;
				nx_status st = nx_eval_call(ev, f, args, 2 * n, &r);
				if (st != NX_OK)
					return st;
				take_result(r, n, tmp, args);
			} while (nx_evop_next(kidx, kdims, in->rank));
		}
		if (fast == NX_OP_COUNT)
			for (int k = 0; k < n; k++)
				nx_lit_copy_elem(outs[k], o, args[k], 0);
	}
	return NX_OK;
}

/* The comparison a select computation makes on its two parameters, or
 * NX_CMP_NONE when it is something else. */
static nx_cmp_dir select_fast(const nx_comp *c)
{
	if (!c || c->nparams != 2 || !c->root || c->root->op != NX_OP_COMPARE)
		return NX_CMP_NONE;
	const nx_inst *r = c->root;
	if (r->operands[0] != c->params[0] || r->operands[1] != c->params[1] ||
	    r->a.compare_type == NX_CMPT_TOTALORDER)
		return NX_CMP_NONE;
	nx_type_kind k = nx_type_kind_of(c->params[0]->shape->type);
	if (k != NX_KIND_FLOAT && k != NX_KIND_SINT && k != NX_KIND_UINT)
		return NX_CMP_NONE;
	return r->a.direction;
}

static bool cmp_f64(nx_cmp_dir d, double x, double y)
{
	switch (d) {
	case NX_CMP_EQ: return x == y;
	case NX_CMP_NE: return x != y;
	case NX_CMP_LT: return x < y;
	case NX_CMP_LE: return x <= y;
	case NX_CMP_GT: return x > y;
	case NX_CMP_GE: return x >= y;
	default: return false;
	}
}

nx_status nx_eval_select_and_scatter(nx_eval *ev, const nx_inst *i, nx_literal *const *ops, nx_literal **out)
{
	const nx_literal *operand = ops[0], *source = ops[1], *init = ops[2];
	const nx_shape *in = operand->shape, *ss = source->shape;
	const nx_window *w = &i->a.window;
	if (i->ncalled < 2 || w->ndims != in->rank)
		return nx_eval_error(ev, i, "select-and-scatter needs select, scatter and a window of rank %d",
		                     in->rank);
	nx_literal *res = nx_eval_alloc(ev, i->shape);
	if (!res)
		return ev->diag->status;
	*out = res;
	int64_t nres = nx_shape_elems(i->shape);
	for (int64_t k = 0; k < nres; k++)
		nx_lit_copy_elem(res, k, init, 0);
	int64_t nsrc = nx_shape_elems(ss);
	if (nsrc == 0 || nres == 0)
		return NX_OK;

	const nx_comp *sel = i->called[0], *sc = i->called[1];
	nx_cmp_dir sfast = select_fast(sel);
	nx_opcode cfast = nx_evop_reducer_op(sc);
	if (cfast != NX_OP_COUNT && (source->shape->type != res->shape->type))
		cfast = NX_OP_COUNT;
	nx_literal *sargs[2], *cargs[2];
	for (int k = 0; k < 2; k++) {
		sargs[k] = nx_evop_scalar(ev, in->type);
		cargs[k] = nx_evop_scalar(ev, k == 0 ? res->shape->type : ss->type);
		if (!sargs[k] || !cargs[k])
			return ev->diag->status;
	}

	int64_t instr[NX_MAX_RANK], oidx[NX_MAX_RANK], kidx[NX_MAX_RANK], kdims[NX_MAX_RANK];
	nx_evop_strides(in, instr);
	bool empty_window = false;
	for (int d = 0; d < in->rank; d++) {
		kdims[d] = w->dims[d].size;
		empty_window |= kdims[d] == 0;
	}
	if (empty_window)
		return NX_OK;
	memset(oidx, 0, sizeof oidx);
	for (int64_t s = 0; s < nsrc; s++, nx_evop_next(oidx, ss->dims, ss->rank)) {
		int64_t best = -1;
		memset(kidx, 0, sizeof(int64_t) * (size_t)in->rank);
		do {
			int64_t src = window_src(w, in, instr, oidx, kidx);
			if (src < 0)
				continue;
			if (best < 0) {
				best = src;
				continue;
			}
			bool keep;
			if (sfast != NX_CMP_NONE) {
				keep = cmp_f64(sfast, nx_lit_get_f64(operand, best), nx_lit_get_f64(operand, src));
			} else {
				nx_lit_copy_elem(sargs[0], 0, operand, best);
				nx_lit_copy_elem(sargs[1], 0, operand, src);
				nx_literal *r;
				nx_status st = nx_eval_call(ev, sel, sargs, 2, &r);
				if (st != NX_OK)
					return st;
				keep = nx_lit_get_i64(r, 0) != 0;
			}
			if (!keep)
				best = src;
		} while (nx_evop_next(kidx, kdims, in->rank));
		if (best < 0)
			continue;
		if (cfast != NX_OP_COUNT) {
			nx_evop_apply(cfast, res, best, res, best, source, s);
			continue;
		}
		nx_lit_copy_elem(cargs[0], 0, res, best);
		nx_lit_copy_elem(cargs[1], 0, source, s);
		nx_literal *r;
		nx_status st = nx_eval_call(ev, sc, cargs, 2, &r);
		if (st != NX_OK)
			return st;
		nx_lit_copy_elem(res, best, r, 0);
	}
	return NX_OK;
}
