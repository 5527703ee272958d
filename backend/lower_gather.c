/* backend/lower_gather.c — gather (row lookups: embeddings, position
 * tables) and dynamic-slice with one runtime start, both as one `dma_gather`
 * (indirect DMA: every destination row is a source row at an offset read
 * from an index buffer at run time, clamped into range like XLA clamps
 * start indices). */
#include "backend/lower_ext.h"

#include <string.h>

/* Row-major element strides of v's shape. */
static void strides_of(const nx_shape *s, int64_t *st)
{
	int64_t acc = 1;
	for (int k = s->rank - 1; k >= 0; k--) {
		st[k] = acc;
		acc *= s->dims[k];
	}
}

/* An HBM access pattern (one partition) over dims[]/st[] (elements) with
 * neighbours merged; false when more than 4 axes remain. */
static bool row_ap(nx_dtype dt, int64_t off, int n, const int64_t *dims, const int64_t *st, nx_ap *a,
                   int64_t *elems)
{
	int64_t d[NX_MAX_RANK], s[NX_MAX_RANK];
	int r = 0;
	*elems = 1;
	for (int k = 0; k < n; k++) {
		*elems *= dims[k];
		if (dims[k] == 1)
			continue;
		if (r > 0 && s[r - 1] == st[k] * dims[k]) {
			d[r - 1] *= dims[k];
			s[r - 1] = st[k];
			continue;
		}
		d[r] = dims[k];
		s[r] = st[k];
		r++;
	}
	if (r == 0) {
		d[0] = 1, s[0] = 1;
		r = 1;
	}
	if (r > 4)
		return false;
	int32_t ss[4];
	uint32_t cc[4];
	for (int k = 0; k < r; k++) {
		if (d[k] > (1 << 24) || s[k] > INT32_MAX)
			return false;
		ss[k] = (int32_t)s[k];
		cc[k] = (uint32_t)d[k];
	}
	*a = nx_ap_hbm(dt, off, 1, 0, r, ss, cc);
	return true;
}

/* dst (contiguous, R rows of row elements) = rows of src selected by idx. */
static nx_status emit_gather(nx_lower *L, nx_lval *src, nx_ap row, int64_t bound, int64_t row_stride,
                             nx_lval *idx, int64_t R, int64_t rowlen, nx_lval *out)
{
	if (R > (1 << 24) || rowlen > (1 << 24) || bound > INT32_MAX || row_stride > INT32_MAX)
		return nx_l_err(L, "gather of %lld rows of %lld elements is too large for one DMA", (long long)R,
		                (long long)rowlen);
	int32_t st1[1] = {1}, st2[2] = {(int32_t)rowlen, 1};
	uint32_t c1[1] = {(uint32_t)R}, c2[2] = {(uint32_t)R, (uint32_t)rowlen};
	nx_ap ia = nx_ap_hbm(idx->dt, idx->buf->off, 1, 0, 1, st1, c1);
	nx_ap da = nx_ap_hbm(out->dt, out->buf->off, 1, 0, 2, st2, c2);
	nx_l_wait(L, NX_ENG_SP, &src->buf->written);
	nx_l_wait(L, NX_ENG_SP, &idx->buf->written);
	nx_l_wait(L, NX_ENG_SP, &out->buf->war);
	nx_lsync y = nx_l_dma_indexed(L, NX_I_DMA_GATHER, da, row, ia, bound, row_stride, 0);
	nx_l_plan_kernel(L, "gather-dma");
	nx_l_max(&src->buf->war, &y);
	nx_l_max(&idx->buf->war, &y);
	nx_l_max(&out->buf->written, &y);
	nx_l_max(&out->buf->war, &y);
	return NX_OK;
}

static bool in_vec(const nx_ivec *v, int64_t x)
{
	for (int k = 0; k < v->n; k++)
		if (v->v[k] == x)
			return true;
	return false;
}

static nx_status lower_gather(nx_lower *L, const nx_inst *i, nx_lval *const *ops, nx_lval *out)
{
	const nx_gather_dnums *g = &i->a.gather;
	const nx_shape *os = ops[0]->shape, *is = ops[1]->shape;
	int r = os->rank;
	if (g->start_index_map.n != 1 || g->operand_batching_dims.n || g->start_indices_batching_dims.n)
		return nx_l_err(L, "gather: only lookups along one operand dimension are supported "
		                   "(start_index_map of %d dims)", g->start_index_map.n);
	int d0 = (int)g->start_index_map.v[0];
	for (int k = 0; k < r; k++) {
		int64_t want = k == d0 ? 1 : os->dims[k];
		if (g->slice_sizes.n != r || g->slice_sizes.v[k] != want)
			return nx_l_err(L, "gather: only whole rows are supported (slice size %lld in dim %d)",
			                (long long)(g->slice_sizes.n == r ? g->slice_sizes.v[k] : -1), k);
	}
	if (g->index_vector_dim < is->rank && is->dims[g->index_vector_dim] != 1)
		return nx_l_err(L, "gather: index vectors of %lld components", (long long)is->dims[g->index_vector_dim]);
	int noff = g->offset_dims.n;
	for (int k = 0; k < noff; k++)
		if (g->offset_dims.v[k] != i->shape->rank - noff + k)
			return nx_l_err(L, "gather: offset dims must be the result's last dims");
	/* one row: the operand without d0 (and the collapsed dims, all size 1) */
	int64_t st[NX_MAX_RANK], dims[NX_MAX_RANK], sts[NX_MAX_RANK];
	strides_of(os, st);
	int n = 0;
	for (int k = 0; k < r; k++)
		if (k != d0 && !in_vec(&g->collapsed_slice_dims, k)) {
			dims[n] = os->dims[k];
			sts[n++] = st[k];
		}
	nx_ap row;
	int64_t rowlen;
	if (!row_ap(ops[0]->dt, ops[0]->buf->off, n, dims, sts, &row, &rowlen))
		return nx_l_err(L, "gather: row view has more than 4 axes after merging");
	int64_t R = nx_shape_elems(is);
	if (R * rowlen != nx_shape_elems(i->shape))
		return nx_l_err(L, "gather: result is not one row per index");
	if (R == 0 || rowlen == 0)
		return NX_OK;
	return emit_gather(L, ops[0], row, os->dims[d0], st[d0] * nx_dtype_bytes[ops[0]->dt], ops[1], R, rowlen,
	                   out);
}

static bool lit_int(const nx_literal *l, int64_t *v)
{
	if (!l || !l->data || !l->shape || nx_shape_elems(l->shape) != 1)
		return false;
	switch (l->shape->type) {
	case NX_S32: { int32_t x; memcpy(&x, l->data, 4); *v = x; return true; }
	case NX_U32: { uint32_t x; memcpy(&x, l->data, 4); *v = x; return true; }
	case NX_S64: { int64_t x; memcpy(&x, l->data, 8); *v = x; return true; }
	case NX_U64: { uint64_t x; memcpy(&x, l->data, 8); *v = x > INT64_MAX ? INT64_MAX : (int64_t)x; return true; }
	default: return false;
	}
}

/* dynamic-slice with every start but one a constant: the window is the row,
 * the runtime start (clamped into [0, D - size]) picks it. */
static nx_status lower_dynamic_slice(nx_lower *L, const nx_inst *i, nx_lval *const *ops, nx_lval *out)
{
	const nx_shape *os = ops[0]->shape;
	int r = os->rank, dyn = -1;
	int64_t start[NX_MAX_RANK], st[NX_MAX_RANK], size[NX_MAX_RANK];
	strides_of(os, st);
	for (int k = 0; k < r; k++) {
		const nx_inst *s = i->operands[1 + k];
		size[k] = i->shape->dims[k];
		start[k] = 0;
		if (size[k] == os->dims[k])
			continue; /* whole dim: the start clamps to 0 */
		int64_t v = 0;
		if (s->op == NX_OP_CONSTANT && lit_int(s->a.literal, &v)) {
			start[k] = v < 0 ? 0 : v > os->dims[k] - size[k] ? os->dims[k] - size[k] : v;
			continue;
		}
		if (dyn >= 0)
			return nx_l_err(L, "dynamic-slice: runtime starts in more than one dimension (%d and %d)", dyn, k);
		dyn = k;
	}
	int64_t off = 0;
	for (int k = 0; k < r; k++)
		off += start[k] * st[k];
	nx_ap row;
	int64_t rowlen;
	if (!row_ap(ops[0]->dt, ops[0]->buf->off + off * nx_dtype_bytes[ops[0]->dt], r, size, st, &row, &rowlen))
		return nx_l_err(L, "dynamic-slice: window has more than 4 axes after merging");
	if (rowlen == 0)
		return NX_OK;
	if (dyn < 0) /* every start constant: the bound 1 makes the index irrelevant */
		return emit_gather(L, ops[0], row, 1, 0, ops[1], 1, rowlen, out);
	return emit_gather(L, ops[0], row, os->dims[dyn] - size[dyn] + 1, st[dyn] * nx_dtype_bytes[ops[0]->dt],
	                   ops[1 + dyn], 1, rowlen, out);
}

nx_status nx_l_gather(nx_lower *L, const nx_inst *i, nx_lval *const *ops, nx_lval *out, bool *done)
{
	*done = true;
	switch (i->op) {
	case NX_OP_GATHER: return lower_gather(L, i, ops, out);
	case NX_OP_DYNAMIC_SLICE: return lower_dynamic_slice(L, i, ops, out);
	default:
		*done = false;
		return NX_OK;
	}
}
