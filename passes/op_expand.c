/* passes/op_expand.c — small ops the backend has no kernel for, in ops it
 * lowers (docs/passes.md "op-expand"):
 *   is-finite(x)      -> compare(abs(x), +inf), direction=LT (NaN and ±inf
 *                        compare false).
 *   reduce-window(x, init) with one operand, a reducer that is one binary
 *   op of its two parameters (add, multiply, maximum, minimum, and, or) and
 *   a window of at most OP_EXPAND_MAX_WINDOW positions (pooling: max-pool
 *   3x3/2, avg-pool) -> the padded input xp = pad(x, identity of the op,
 *   lo/hi, interior base_dilation - 1) (padding and holes take no part, as
 *   in XLA; negative padding is an offset into it), one strided
 *   slice of xp per window position (start k*window_dilation, stride
 *   stride), folded in the evaluator's order: op(...op(op(init, w0), w1)...).
 *   Larger windows (cumulative sums: one long axis) stay for the GpSimd
 *   kernels.
 *   scatter-add with input_batching_dims, single-element updates into one
 *   operand dim (the transpose of jnp.take_along_axis; the gather itself is
 *   passes/gather_batching.c's) -> operand + a one-hot select of the
 *   updates (compare the index with an iota over that dim), summed over the
 *   non-batching index dims; out-of-bounds indices match nothing and are
 *   dropped, as in XLA.
 *   gather with offset dims not last -> offset dims last + transpose.
 *   scatter assigning one window (<= 64 rows, full in the other dims) at one
 *   runtime index along one dim -> select(in bounds, one size-1
 *   dynamic-update-slice per row, operand).
 *   select-and-scatter with a compare select and an add scatter (max-pool
 *   gradient; see select_and_scatter below). */
#include "passes/rewrite.h"

#include <math.h>
#include <string.h>

enum { OP_EXPAND_MAX_WINDOW = 64 };

static nx_opcode simple_reducer(const nx_inst *in)
{
	return in->ncalled == 1 ? nx_pass_reducer_op(in->called[0]) : NX_OP_COUNT;
}

static nx_inst *is_finite(nx_rw *rw, nx_inst *in)
{
	nx_inst *x = in->operands[0];
	if (nx_type_kind_of(x->shape->type) != NX_KIND_FLOAT || x->shape->dynamic)
		return NULL;
	nx_inst *ab = nx_rw_unary(rw, NX_OP_ABS, x);
	nx_inst *inf = nx_rw_splat(rw, x->shape, x->shape->type, INFINITY);
	nx_inst *c = nx_rw_binary(rw, NX_OP_COMPARE, ab, inf);
	c->a.direction = NX_CMP_LT;
	c->shape = nx_shape_copy(nx_rw_arena(rw), in->shape);
	return c;
}

static nx_inst *reduce_window(nx_rw *rw, nx_inst *in)
{
	nx_opcode op = simple_reducer(in);
	nx_inst *x = in->operands[0], *init = in->operands[1];
	int r = x->shape->rank;
	const nx_window *w = &in->a.window;
	if (op == NX_OP_COUNT || in->noperands != 2 || !nx_shape_is_array(in->shape) || x->shape->dynamic ||
	    in->shape->dynamic || w->ndims != r || in->shape->rank != r || init->shape->rank != 0)
		return NULL;
	int64_t vol = 1;
	for (int d = 0; d < r; d++) {
		if (w->dims[d].size <= 0 || w->dims[d].reversal)
			return NULL;
		vol *= w->dims[d].size;
		if (vol > OP_EXPAND_MAX_WINDOW)
			return NULL;
	}
	if (nx_shape_elems(in->shape) == 0)
		return NULL;
	nx_arena *a = nx_rw_arena(rw);
	nx_pad_dim *pd = nx_arena_alloc(a, sizeof(nx_pad_dim) * (size_t)r);
	int64_t xd[NX_MAX_RANK], off[NX_MAX_RANK], st[NX_MAX_RANK], dl[NX_MAX_RANK];
	bool padded = false;
	for (int d = 0; d < r; d++) {
		const nx_window_dim *wd = &w->dims[d];
		int64_t bd = wd->base_dilation > 0 ? wd->base_dilation : 1, I = x->shape->dims[d];
		pd[d].lo = wd->pad_lo > 0 ? wd->pad_lo : 0;
		pd[d].hi = wd->pad_hi > 0 ? wd->pad_hi : 0;
		pd[d].interior = I > 0 ? bd - 1 : 0;
		padded = padded || pd[d].lo || pd[d].hi || pd[d].interior;
		off[d] = wd->pad_lo < 0 ? -wd->pad_lo : 0;
		st[d] = wd->stride > 0 ? wd->stride : 1;
		dl[d] = wd->window_dilation > 0 ? wd->window_dilation : 1;
		xd[d] = pd[d].lo + pd[d].hi + (I > 0 ? (I - 1) * bd + 1 : 0);
		if (off[d] + (in->shape->dims[d] - 1) * st[d] + (wd->size - 1) * dl[d] + 1 > xd[d])
			return NULL; /* malformed: the verifier reports it */
	}
	/* padding and dilation holes are skipped, not init: pad with the
	 * reducer's identity */
	nx_type t = x->shape->type;
	nx_type_kind kind = nx_type_kind_of(t);
	double ident;
	switch (op) {
	case NX_OP_ADD: case NX_OP_OR: ident = 0; break;
	case NX_OP_MULTIPLY: case NX_OP_AND: ident = 1; break;
	case NX_OP_MAXIMUM: ident = -INFINITY; break;
	default: ident = INFINITY; break;
	}
	if (padded && (kind == NX_KIND_COMPLEX ||
	               ((op == NX_OP_MAXIMUM || op == NX_OP_MINIMUM) && kind != NX_KIND_FLOAT)))
		return NULL;
	nx_inst *xp = x;
	if (padded) {
		nx_inst *ops[2] = {x, nx_rw_scalar(rw, t, ident)};
		xp = nx_rw_add(rw, NX_OP_PAD, nx_shape_array(a, x->shape->type, r, xd), ops, 2, NULL);
		xp->a.padding = pd;
		xp->a.npadding = r;
	}
	/* max/min with an init of -inf/+inf: the fold may start at w0 */
	bool skip_init = kind == NX_KIND_FLOAT &&
	                 ((op == NX_OP_MAXIMUM && nx_rw_is_splat(init, -INFINITY)) ||
	                  (op == NX_OP_MINIMUM && nx_rw_is_splat(init, INFINITY)));
	nx_inst *acc = skip_init ? NULL
	                         : nx_rw_broadcast(rw, init, t, r, in->shape->dims, NULL);
	int64_t k[NX_MAX_RANK];
	memset(k, 0, sizeof k);
	for (int64_t n = 0; n < vol; n++) {
		int64_t start[NX_MAX_RANK], limit[NX_MAX_RANK], stride[NX_MAX_RANK];
		bool same = true;
		for (int d = 0; d < r; d++) {
			start[d] = off[d] + k[d] * dl[d];
			stride[d] = st[d];
			limit[d] = start[d] + (in->shape->dims[d] - 1) * st[d] + 1;
			same = same && start[d] == 0 && stride[d] == 1 && limit[d] == xd[d];
		}
		nx_inst *s = xp;
		if (!same) {
			s = nx_rw_add(rw, NX_OP_SLICE, nx_shape_array(a, t, r, in->shape->dims), &xp, 1, NULL);
			s->a.slice_start = nx_ivec_dup(a, start, r);
			s->a.slice_limit = nx_ivec_dup(a, limit, r);
			s->a.slice_stride = nx_ivec_dup(a, stride, r);
		}
		acc = acc ? nx_rw_binary(rw, op, acc, s) : s;
		for (int d = r - 1; d >= 0; d--) { /* row-major next window position */
			if (++k[d] < w->dims[d].size)
				break;
			k[d] = 0;
		}
	}
	if (acc == x) /* a 1x..x1 window over the unpadded input, no init */
		return x;
	acc->shape = nx_shape_copy(a, in->shape);
	return acc;
}


/* scatter-add with batching dims of single elements into one operand dim
 * (the transpose of gather-batching's one-hot gather): out = X + the one-hot sum over the
 * index dims that are not batching dims of select(c == idx[i], u[i], 0).
 * Out-of-bounds indices match no c: dropped, as scatter does. */
static nx_inst *scatter_batched(nx_rw *rw, nx_inst *in)
{
	const nx_scatter_dnums *g = &in->a.scatter;
	if (in->noperands != 3 || simple_reducer(in) != NX_OP_ADD)
		return NULL;
	nx_inst *x = in->operands[0], *ix = in->operands[1], *u = in->operands[2];
	int xr = x->shape->rank, ir = ix->shape->rank, q = u->shape->rank;
	nx_type_kind ik = nx_type_kind_of(ix->shape->type), xk = nx_type_kind_of(x->shape->type);
	if (!g->input_batching_dims.n || g->update_window_dims.n || g->inserted_window_dims.n != 1 ||
	    g->scatter_dims_to_operand_dims.n != 1 ||
	    g->inserted_window_dims.v[0] != g->scatter_dims_to_operand_dims.v[0] ||
	    g->input_batching_dims.n + 1 != xr || x->shape->dynamic || ix->shape->dynamic || u->shape->dynamic ||
	    (ik != NX_KIND_SINT && ik != NX_KIND_UINT) ||
	    (xk != NX_KIND_FLOAT && xk != NX_KIND_SINT && xk != NX_KIND_UINT) || u->shape->type != x->shape->type ||
	    !nx_shape_is_array(in->shape) || q + 1 > NX_MAX_RANK)
		return NULL;
	int64_t ivd = g->index_vector_dim, c = g->scatter_dims_to_operand_dims.v[0];
	if (ivd < ir && ix->shape->dims[ivd] != 1)
		return NULL;
	if (q != (ivd < ir ? ir - 1 : ir))
		return NULL;
	/* update dim of each operand batching dim; the others are summed */
	int64_t umap[NX_MAX_RANK];
	bool batch_u[NX_MAX_RANK] = {false};
	for (int d = 0; d < xr; d++)
		umap[d] = -1;
	for (int j = 0; j < g->input_batching_dims.n; j++) {
		int64_t id = g->scatter_indices_batching_dims.v[j];
		int64_t ud = id - (ivd < ir && id > ivd ? 1 : 0);
		if (ud < 0 || ud >= q)
			return NULL;
		umap[g->input_batching_dims.v[j]] = ud;
		batch_u[ud] = true;
	}
	for (int d = 0; d < xr; d++)
		if (d != c && (umap[d] < 0 || u->shape->dims[umap[d]] != x->shape->dims[d]))
			return NULL;
	nx_type t = x->shape->type, it = ix->shape->type;
	nx_arena *a = nx_rw_arena(rw);
	int64_t C = x->shape->dims[c], sd[NX_MAX_RANK], seq[NX_MAX_RANK];
	for (int d = 0; d < q; d++)
		sd[d] = u->shape->dims[d], seq[d] = d;
	sd[q] = C;
	nx_inst *ub = nx_rw_broadcast(rw, u, t, q + 1, sd, seq);
	nx_inst *ib = nx_rw_broadcast(rw, nx_rw_reshape(rw, ix, q, sd), it, q + 1, sd, seq);
	nx_inst *io = nx_rw_add(rw, NX_OP_IOTA, nx_shape_array(a, it, q + 1, sd), NULL, 0, NULL);
	io->a.iota_dimension = q;
	nx_inst *eq = nx_rw_binary(rw, NX_OP_COMPARE, ib, io);
	eq->a.direction = NX_CMP_EQ;
	nx_inst *sel[3] = {eq, ub, nx_rw_splat(rw, ub->shape, t, 0)};
	nx_inst *v = nx_rw_add(rw, NX_OP_SELECT, nx_shape_copy(a, ub->shape), sel, 3, NULL);
	int64_t rdims[NX_MAX_RANK];
	int nr = 0;
	for (int d = 0; d < q; d++)
		if (!batch_u[d])
			rdims[nr++] = d;
	if (nr)
		v = nx_rw_reduce(rw, v, nx_rw_scalar(rw, t, 0), rdims, nr, NX_OP_ADD);
	/* v: [batching update dims in order..., C] -> x's dim order */
	int64_t pos[NX_MAX_RANK], perm[NX_MAX_RANK];
	for (int d = 0; d < xr; d++) {
		if (d == c) {
			pos[d] = xr - 1;
			continue;
		}
		int64_t p = 0;
		for (int e = 0; e < umap[d]; e++)
			p += batch_u[e];
		pos[d] = p;
	}
	bool ident = true;
	for (int d = 0; d < xr; d++)
		perm[d] = pos[d], ident = ident && pos[d] == d;
	if (!ident)
		v = nx_rw_transpose(rw, v, perm);
	nx_inst *r = nx_rw_binary(rw, NX_OP_ADD, x, v);
	r->shape = nx_shape_copy(a, in->shape);
	return r;
}

static nx_inst *pad_to(nx_rw *rw, nx_inst *x, nx_inst *fill, const nx_pad_dim *pd)
{
	int r = x->shape->rank;
	nx_arena *a = nx_rw_arena(rw);
	int64_t d[NX_MAX_RANK];
	for (int k = 0; k < r; k++) {
		int64_t n = x->shape->dims[k];
		d[k] = pd[k].lo + pd[k].hi + (n > 0 ? (n - 1) * (pd[k].interior + 1) + 1 : 0);
	}
	nx_inst *ops[2] = {x, fill};
	nx_inst *p = nx_rw_add(rw, NX_OP_PAD, nx_shape_array(a, x->shape->type, r, d), ops, 2, NULL);
	p->a.padding = nx_arena_alloc(a, sizeof(nx_pad_dim) * (size_t)r);
	memcpy(p->a.padding, pd, sizeof(nx_pad_dim) * (size_t)r);
	p->a.npadding = r;
	return p;
}

/* select-and-scatter (max-pool gradient) whose select is a compare of its
 * two parameters and whose scatter adds, window <= OP_EXPAND_MAX_WINDOW
 * positions, no dilation, no negative padding: per window position k (row-
 * major), v_k = strided slice of the padded operand, take_k = valid_k and
 * (nothing found yet or not select(best, v_k)), best = take_k ? v_k : best;
 * the chosen position is the last k that took (the evaluator's scan); the
 * source, masked by chosen_k, is put back at o*stride + k with an interior
 * pad, summed, the padding sliced off, added to init. */
static nx_inst *select_and_scatter(nx_rw *rw, nx_inst *in)
{
	if (in->noperands != 3 || in->ncalled != 2 || nx_pass_reducer_op(in->called[1]) != NX_OP_ADD)
		return NULL;
	const nx_inst *sr = in->called[0]->root;
	if (in->called[0]->nparams != 2 || !sr || sr->op != NX_OP_COMPARE || sr->noperands != 2 ||
	    sr->operands[0]->op != NX_OP_PARAMETER || sr->operands[1]->op != NX_OP_PARAMETER ||
	    sr->operands[0] == sr->operands[1])
		return NULL;
	nx_cmp_dir dir = sr->a.direction;
	if (dir != NX_CMP_GE && dir != NX_CMP_GT && dir != NX_CMP_LE && dir != NX_CMP_LT)
		return NULL;
	bool swapped = sr->operands[0]->a.parameter_number == 1;
	nx_inst *x = in->operands[0], *src = in->operands[1], *init = in->operands[2];
	int r = x->shape->rank;
	const nx_window *w = &in->a.window;
	nx_type t = x->shape->type, st = src->shape->type;
	if (w->ndims != r || src->shape->rank != r || init->shape->rank != 0 || x->shape->dynamic ||
	    src->shape->dynamic || in->shape->type != st || init->shape->type != st ||
	    nx_type_kind_of(t) == NX_KIND_COMPLEX || nx_type_kind_of(st) == NX_KIND_COMPLEX ||
	    nx_shape_elems(src->shape) == 0 || nx_shape_elems(x->shape) == 0)
		return NULL;
	int64_t vol = 1;
	nx_pad_dim pd[NX_MAX_RANK];
	bool padded = false;
	for (int d = 0; d < r; d++) {
		const nx_window_dim *wd = &w->dims[d];
		if (wd->size <= 0 || wd->pad_lo < 0 || wd->pad_hi < 0 || wd->base_dilation > 1 ||
		    wd->window_dilation > 1 || wd->reversal)
			return NULL;
		vol *= wd->size;
		if (vol > OP_EXPAND_MAX_WINDOW)
			return NULL;
		pd[d].lo = wd->pad_lo, pd[d].hi = wd->pad_hi, pd[d].interior = 0;
		padded = padded || pd[d].lo || pd[d].hi;
	}
	nx_arena *a = nx_rw_arena(rw);
	nx_inst *xp = padded ? pad_to(rw, x, nx_rw_scalar(rw, t, 0), pd) : x;
	nx_inst *mp = NULL; /* valid (not padding) positions */
	if (padded)
		mp = pad_to(rw, nx_rw_splat(rw, x->shape, NX_PRED, 1), nx_rw_scalar(rw, NX_PRED, 0), pd);
	nx_inst **take = nx_arena_alloc(a, sizeof(nx_inst *) * (size_t)vol);
	nx_inst *best = NULL, *found = NULL;
	int64_t k[NX_MAX_RANK], start[NX_MAX_RANK], limit[NX_MAX_RANK], stride[NX_MAX_RANK];
	memset(k, 0, sizeof k);
	for (int64_t n = 0; n < vol; n++) {
		for (int d = 0; d < r; d++) {
			start[d] = k[d];
			stride[d] = w->dims[d].stride > 0 ? w->dims[d].stride : 1;
			limit[d] = start[d] + (src->shape->dims[d] - 1) * stride[d] + 1;
		}
		nx_inst *v = nx_rw_add(rw, NX_OP_SLICE, nx_shape_array(a, t, r, src->shape->dims), &xp, 1, NULL);
		v->a.slice_start = nx_ivec_dup(a, start, r);
		v->a.slice_limit = nx_ivec_dup(a, limit, r);
		v->a.slice_stride = nx_ivec_dup(a, stride, r);
		nx_inst *ok = NULL;
		if (mp) {
			ok = nx_rw_add(rw, NX_OP_SLICE, nx_shape_array(a, NX_PRED, r, src->shape->dims), &mp, 1, NULL);
			ok->a.slice_start = v->a.slice_start;
			ok->a.slice_limit = v->a.slice_limit;
			ok->a.slice_stride = v->a.slice_stride;
		}
		nx_inst *tk;
		if (!best) {
			tk = ok ? ok : nx_rw_splat(rw, src->shape, NX_PRED, 1);
			best = v;
			found = ok;
		} else {
			nx_inst *keep = swapped ? nx_rw_binary(rw, NX_OP_COMPARE, v, best)
			                        : nx_rw_binary(rw, NX_OP_COMPARE, best, v);
			keep->a.direction = dir;
			tk = nx_rw_unary(rw, NX_OP_NOT, keep);
			if (found) /* padding: never taken; the first valid one always */
				tk = nx_rw_binary(rw, NX_OP_AND, ok,
				                  nx_rw_binary(rw, NX_OP_OR, tk, nx_rw_unary(rw, NX_OP_NOT, found)));
			nx_inst *sel[3] = {tk, v, best};
			best = nx_rw_add(rw, NX_OP_SELECT, nx_shape_copy(a, v->shape), sel, 3, NULL);
			if (found)
				found = nx_rw_binary(rw, NX_OP_OR, found, ok);
		}
		take[n] = tk;
		for (int d = r - 1; d >= 0; d--) {
			if (++k[d] < w->dims[d].size)
				break;
			k[d] = 0;
		}
	}
	/* chosen = the last k that took; its source goes back to o*stride + k */
	nx_inst *later = NULL, *acc = NULL, *zero = nx_rw_splat(rw, src->shape, st, 0);
	nx_inst *zs = nx_rw_scalar(rw, st, 0);
	for (int64_t n = vol - 1; n >= 0; n--) {
		int64_t rem = n;
		for (int d = r - 1; d >= 0; d--) {
			k[d] = rem % w->dims[d].size;
			rem /= w->dims[d].size;
		}
		nx_inst *ch = later ? nx_rw_binary(rw, NX_OP_AND, take[n], nx_rw_unary(rw, NX_OP_NOT, later)) : take[n];
		later = later ? nx_rw_binary(rw, NX_OP_OR, later, take[n]) : take[n];
		nx_inst *sel[3] = {ch, src, zero};
		nx_inst *c = nx_rw_add(rw, NX_OP_SELECT, nx_shape_copy(a, src->shape), sel, 3, NULL);
		nx_pad_dim pk[NX_MAX_RANK];
		for (int d = 0; d < r; d++) {
			int64_t s = w->dims[d].stride > 0 ? w->dims[d].stride : 1;
			pk[d].lo = k[d];
			pk[d].interior = s - 1;
			pk[d].hi = xp->shape->dims[d] - (k[d] + (src->shape->dims[d] - 1) * s + 1);
		}
		nx_inst *placed = pad_to(rw, c, zs, pk);
		acc = acc ? nx_rw_binary(rw, NX_OP_ADD, acc, placed) : placed;
	}
	if (padded) {
		int64_t s0[NX_MAX_RANK], l0[NX_MAX_RANK], one[NX_MAX_RANK];
		for (int d = 0; d < r; d++)
			s0[d] = pd[d].lo, l0[d] = pd[d].lo + x->shape->dims[d], one[d] = 1;
		nx_inst *sl = nx_rw_add(rw, NX_OP_SLICE, nx_shape_array(a, st, r, x->shape->dims), &acc, 1, NULL);
		sl->a.slice_start = nx_ivec_dup(a, s0, r);
		sl->a.slice_limit = nx_ivec_dup(a, l0, r);
		sl->a.slice_stride = nx_ivec_dup(a, one, r);
		acc = sl;
	}
	nx_inst *res = nx_rw_binary(rw, NX_OP_ADD, nx_rw_broadcast(rw, init, st, r, x->shape->dims, NULL), acc);
	res->shape = nx_shape_copy(a, in->shape);
	return res;
}

/* gather whose offset dims are not the result's last dims (jax.image.resize
 * nearest: rows gathered in the middle of NHWC) -> the same gather with the
 * offset dims last, then a transpose into the original order. */
static nx_inst *gather_offset_last(nx_rw *rw, nx_inst *in)
{
	const nx_gather_dnums *g = &in->a.gather;
	int q = in->shape->rank, no = g->offset_dims.n, nb = q - no;
	if (in->noperands != 2 || g->operand_batching_dims.n || in->shape->dynamic || no > q)
		return NULL;
	bool last = true, isoff[NX_MAX_RANK] = {false};
	for (int j = 0; j < no; j++) {
		int64_t d = g->offset_dims.v[j];
		if (d < 0 || d >= q || isoff[d] || (j && d <= g->offset_dims.v[j - 1]))
			return NULL; /* malformed: the verifier reports it */
		isoff[d] = true;
		last = last && d == nb + j;
	}
	if (last)
		return NULL;
	nx_arena *a = nx_rw_arena(rw);
	int64_t dims[NX_MAX_RANK], perm[NX_MAX_RANK], seq[NX_MAX_RANK];
	int kb = 0;
	for (int p = 0; p < q; p++)
		if (!isoff[p])
			perm[p] = kb, dims[kb++] = in->shape->dims[p];
	for (int j = 0; j < no; j++) {
		perm[g->offset_dims.v[j]] = nb + j;
		dims[nb + j] = in->shape->dims[g->offset_dims.v[j]];
		seq[j] = nb + j;
	}
	nx_inst *n = nx_rw_add(rw, NX_OP_GATHER, nx_shape_array(a, in->shape->type, q, dims), in->operands, 2, NULL);
	n->a.gather = *g;
	n->a.gather.offset_dims = nx_ivec_dup(a, seq, no);
	nx_inst *t = nx_rw_transpose(rw, n, perm);
	t->shape = nx_shape_copy(a, in->shape);
	return t;
}

/* scatter that overwrites one window at one runtime index along one dim
 * (the window spans that dim: jax's x.at[i:i+n].set(v) in stable_diffusion's
 * scheduler) -> select(window in bounds, dynamic-update-slice(x, v, i, 0...),
 * x): XLA skips an out-of-bounds window where dynamic-update-slice clamps. */
static nx_inst *scatter_window(nx_rw *rw, nx_inst *in)
{
	const nx_scatter_dnums *g = &in->a.scatter;
	if (in->noperands != 3 || in->ncalled != 1)
		return NULL;
	const nx_comp *cc = in->called[0];
	if (cc->nparams != 2 || !cc->root || cc->root->op != NX_OP_PARAMETER || cc->root->a.parameter_number != 1)
		return NULL; /* not an assignment */
	nx_inst *x = in->operands[0], *ix = in->operands[1], *u = in->operands[2];
	int r = x->shape->rank;
	nx_type_kind ik = nx_type_kind_of(ix->shape->type);
	if (g->inserted_window_dims.n || g->input_batching_dims.n || g->scatter_dims_to_operand_dims.n != 1 ||
	    g->update_window_dims.n != r || u->shape->rank != r || x->shape->dynamic || u->shape->dynamic ||
	    ix->shape->dynamic || (ik != NX_KIND_SINT && ik != NX_KIND_UINT) || nx_shape_elems(ix->shape) != 1 ||
	    !(ix->shape->rank == 0 || (ix->shape->rank == 1 && g->index_vector_dim == 0)) ||
	    u->shape->type != x->shape->type || !nx_shape_is_array(in->shape))
		return NULL;
	int64_t c = g->scatter_dims_to_operand_dims.v[0];
	if (c < 0 || c >= r || u->shape->dims[c] > OP_EXPAND_MAX_WINDOW || u->shape->dims[c] > x->shape->dims[c])
		return NULL;
	for (int d = 0; d < r; d++)
		if (g->update_window_dims.v[d] != d || (d != c && u->shape->dims[d] != x->shape->dims[d]))
			return NULL;
	nx_arena *a = nx_rw_arena(rw);
	nx_type it = ix->shape->type;
	nx_inst *idx = ix->shape->rank ? nx_rw_reshape(rw, ix, 0, NULL) : ix;
	nx_inst *zero = nx_rw_scalar(rw, it, 0);
	/* one size-1 slab per row of the window along c (the backend's
	 * dynamic-update-slice form); in bounds, idx + j never clamps */
	nx_inst *dus = x;
	int64_t st[NX_MAX_RANK], li[NX_MAX_RANK], one[NX_MAX_RANK], rd[NX_MAX_RANK];
	for (int d = 0; d < r; d++)
		st[d] = 0, li[d] = u->shape->dims[d], one[d] = 1, rd[d] = u->shape->dims[d];
	rd[c] = 1;
	for (int64_t j = 0; j < u->shape->dims[c]; j++) {
		nx_inst *row = u;
		if (u->shape->dims[c] > 1) {
			st[c] = j, li[c] = j + 1;
			row = nx_rw_add(rw, NX_OP_SLICE, nx_shape_array(a, u->shape->type, r, rd), &u, 1, NULL);
			row->a.slice_start = nx_ivec_dup(a, st, r);
			row->a.slice_limit = nx_ivec_dup(a, li, r);
			row->a.slice_stride = nx_ivec_dup(a, one, r);
		}
		nx_inst **ops = nx_arena_alloc(a, sizeof(nx_inst *) * (size_t)(r + 2));
		ops[0] = dus, ops[1] = row;
		nx_inst *at = j ? nx_rw_binary(rw, NX_OP_ADD, idx, nx_rw_scalar(rw, it, (double)j)) : idx;
		for (int d = 0; d < r; d++)
			ops[2 + d] = d == c ? at : zero;
		dus = nx_rw_add(rw, NX_OP_DYNAMIC_UPDATE_SLICE, nx_shape_copy(a, x->shape), ops, r + 2, NULL);
	}
	nx_inst *ge = nx_rw_binary(rw, NX_OP_COMPARE, idx, zero);
	ge->a.direction = NX_CMP_GE;
	nx_inst *le = nx_rw_binary(rw, NX_OP_COMPARE, idx,
	                           nx_rw_scalar(rw, it, (double)(x->shape->dims[c] - u->shape->dims[c])));
	le->a.direction = NX_CMP_LE;
	nx_inst *ok = nx_rw_binary(rw, NX_OP_AND, ge, le);
	nx_inst *okb = nx_rw_broadcast(rw, ok, NX_PRED, r, x->shape->dims, NULL);
	nx_inst *sel[3] = {okb, dus, x};
	nx_inst *res = nx_rw_add(rw, NX_OP_SELECT, nx_shape_copy(a, in->shape), sel, 3, NULL);
	return res;
}

static nx_inst *expand(nx_rw *rw, nx_inst *in)
{
	switch (in->op) {
	case NX_OP_IS_FINITE: return in->noperands == 1 ? is_finite(rw, in) : NULL;
	case NX_OP_REDUCE_WINDOW: return reduce_window(rw, in);
	case NX_OP_GATHER: return gather_offset_last(rw, in);
	case NX_OP_SCATTER: {
		nx_inst *r = scatter_batched(rw, in);
		return r ? r : scatter_window(rw, in);
	}
	case NX_OP_SELECT_AND_SCATTER: return select_and_scatter(rw, in);
	default: return NULL;
	}
}

nx_status nx_pass_op_expand(nx_module *m, const nx_pass_ctx *ctx, bool *changed)
{
	return nx_rw_run(m, ctx, "op-expand", expand, NULL, changed);
}
