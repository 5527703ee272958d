/* backend/lower_data.c — data movement that is pure DMA access patterns
 * (slice, concatenate, pad, reverse), views of part of a buffer as a value
 * of its own (so the kernels of lower_ops.c / lower_dot.c can run on pieces),
 * and the drivers built on that: kernels split into passes when their
 * operands do not fit an SBUF half, and dot (the loop kernel, kernels/dot_loop.c, on
 * strided operand views). */
#include "backend/lower.h"
#include "backend/lower_ext.h"
#include "ir/eval/eval.h"

#include <string.h>

/* ----------------------------------------------------------- DMA views */
/* One DMA issued by engine e (in loops when more than 5 axes remain after
 * merging) copying view src to view dst, element for element in row-major
 * order of src's dims (dst has the same dims). Waits for src written and for
 * *dwait (the destination's readers/writers that must finish first); returns
 * the completion. The caller records it on the buffers. With fits non-NULL,
 * a merged axis over 2^24 elements or a stride beyond int32 emits nothing
 * and clears *fits (the caller splits the copy); else such an axis becomes
 * two. */
static nx_status dma_vv(nx_lower *L, nx_engine e, const nx_lview *src, const nx_lview *dst, const nx_lsync *dwait,
                       nx_lsync *done, bool *fits)
{
	int64_t d[NX_MAX_RANK + 1], s[NX_MAX_RANK + 1], t[NX_MAX_RANK + 1];
	int r = 0;
	memset(done, 0, sizeof *done);
	if (fits)
		*fits = true;
	NX_ASSERT(src->rank == dst->rank);
	for (int k = 0; k < src->rank; k++) {
		NX_ASSERT(src->dims[k] == dst->dims[k]);
		if (src->dims[k] == 0)
			return NX_OK;
		if (src->dims[k] == 1)
			continue;
		if (r > 0 && s[r - 1] == src->stride[k] * src->dims[k] && t[r - 1] == dst->stride[k] * src->dims[k]) {
			d[r - 1] *= src->dims[k];
			s[r - 1] = src->stride[k];
			t[r - 1] = dst->stride[k];
			continue;
		}
		d[r] = src->dims[k];
		s[r] = src->stride[k];
		t[r] = dst->stride[k];
		r++;
	}
	if (r == 0) {
		d[0] = 1, s[0] = 1, t[0] = 1;
		r = 1;
	}
	if (fits) { /* the caller splits what one DMA cannot hold */
		for (int k = 0; k < r; k++)
			if (d[k] > (1 << 24) || s[k] > INT32_MAX || s[k] < INT32_MIN || t[k] > INT32_MAX || t[k] < INT32_MIN)
				*fits = false;
		if (!*fits)
			return NX_OK;
	}
	/* a dim beyond one DMA axis (2^24) becomes two axes */
	for (int k = 0; k < r; k++) {
		if (d[k] <= (1 << 24) || r == NX_MAX_RANK)
			continue;
		int64_t f = nx_l_div_le(d[k], 1 << 20);
		if (f < 2)
			continue;
		for (int j = r; j > k + 1; j--)
			d[j] = d[j - 1], s[j] = s[j - 1], t[j] = t[j - 1];
		d[k + 1] = f, s[k + 1] = s[k], t[k + 1] = t[k];
		d[k] /= f, s[k] *= f, t[k] *= f;
		r++;
	}
	if (r > 5 + NX_LOOP_DEPTH)
		return nx_l_err(L, "view of rank %d after merging is not supported", r);
	for (int k = 0; k < r; k++)
		if (d[k] > (1 << 24) || s[k] > INT32_MAX || s[k] < INT32_MIN || t[k] > INT32_MAX || t[k] < INT32_MIN)
			return nx_l_err(L, "dimension of %lld elements too large for one DMA", (long long)d[k]);
	if (r <= 4) {
		for (int k = r; k > 0; k--)
			d[k] = d[k - 1], s[k] = s[k - 1], t[k] = t[k - 1];
		/* one row: its stride is never used; a contiguous destination
		 * (copy_view) records the whole length, as it always has */
		d[0] = 1, s[0] = 0, t[0] = fits ? t[1] * d[1] : 0;
		r++;
	}
	int nloop = r > 5 ? r - 5 : 0, nfree = r - nloop - 1;
	int32_t ss[4], ts[4];
	uint32_t cnt[4];
	for (int k = 0; k < nfree; k++) {
		ss[k] = (int32_t)s[nloop + 1 + k];
		ts[k] = (int32_t)t[nloop + 1 + k];
		cnt[k] = (uint32_t)d[nloop + 1 + k];
	}
	int64_t P = d[nloop];
	if (P > 65535)
		return nx_l_err(L, "dimension of %lld elements too large for one DMA", (long long)P);
	int es = nx_dtype_bytes[src->dt], ed = nx_dtype_bytes[dst->dt];
	nx_ap a = nx_ap_hbm(src->dt, src->buf->off + src->off * es, (int)P, s[nloop], nfree, ss, cnt);
	nx_ap b = nx_ap_hbm(dst->dt, dst->buf->off + dst->off * ed, (int)P, t[nloop], nfree, ts, cnt);
	if (nfree == 0) {
		a.ndims = b.ndims = 1;
		a.stride[0] = b.stride[0] = 1;
		a.count[0] = b.count[0] = 1;
	}
	for (int k = 0; k < nloop; k++) {
		a.loop_stride[k] = s[k] * es;
		b.loop_stride[k] = t[k] * ed;
	}
	nx_l_wait(L, e, &src->buf->written);
	nx_l_wait(L, e, dwait);
	for (int k = 0; k < nloop; k++)
		nx_l_loop(L, e, d[k]);
	*done = nx_l_dma(L, e, b, a);
	for (int k = 0; k < nloop; k++)
		nx_l_endloop(L, e);
	nx_l_max(&src->buf->war, done);
	return NX_OK;
}

nx_status nx_l_dma_vv(nx_lower *L, const nx_lview *src, const nx_lview *dst, const nx_lsync *dwait,
                      nx_lsync *done)
{
	return dma_vv(L, NX_ENG_SP, src, dst, dwait, done, NULL);
}

/* DMA from an arbitrary strided view into a contiguous buffer (dma_vv onto
 * a row-major view of dst) on engine e's queues. */
static nx_status copy_view(nx_lower *L, const nx_lview *src, nx_lval *dst, nx_engine e);

/* A copy of 1 MiB or more: cut into up to 8 pieces, one DMA each on its own
 * SP queue (one DMA moves ~17 B/ns); of 4 MiB or more into up to 16, the
 * second half issued by POOL on its queues. The outermost axis is cut; when
 * it has fewer indices than pieces, each index is its own slab and the next
 * axis is cut too (a [4, 512, 16, 64] permutation: 4 x 4 pieces), so every
 * piece stays one contiguous block of dst. */
nx_status nx_l_copy_view(nx_lower *L, const nx_lview *src, nx_lval *dst)
{
	int64_t n = 1;
	int k0 = -1, k1 = -1;
	for (int k = 0; k < src->rank; k++) {
		n *= src->dims[k];
		if (k0 >= 0 && k1 < 0 && src->dims[k] > 1)
			k1 = k;
		if (k0 < 0 && src->dims[k] > 1)
			k0 = k;
	}
	int es = nx_dtype_bytes[dst->dt];
	if (k0 < 0 || n * es < ((int64_t)1 << 20))
		return copy_view(L, src, dst, NX_ENG_SP);
	int64_t D = src->dims[k0], nmax = n * es >= ((int64_t)4 << 20) ? 16 : 8;
	int64_t c0 = D < nmax ? D : nmax, c1 = 1;
	if (c0 < nmax && k1 >= 0) {
		c1 = nmax / c0;
		c1 = src->dims[k1] < c1 ? src->dims[k1] : c1;
	}
	int64_t inner0 = n / D, D1 = c1 > 1 ? src->dims[k1] : 1, inner1 = inner0 / D1;
	nx_lbuf *real = dst->buf;
	nx_lsync w = real->written, war = real->war;
	for (int64_t pc = 0; pc < c0 * c1; pc++) {
		int64_t p0 = pc / c1, p1 = pc % c1;
		int64_t a = D * p0 / c0, b = D * (p0 + 1) / c0;
		nx_lview ps = *src;
		ps.off += a * src->stride[k0];
		ps.dims[k0] = b - a;
		int64_t doff = a * inner0;
		if (c1 > 1) { /* one index of k0 (c0 == D), a range of k1 */
			int64_t a1 = D1 * p1 / c1, b1 = D1 * (p1 + 1) / c1;
			ps.off += a1 * src->stride[k1];
			ps.dims[k1] = b1 - a1;
			doff += a1 * inner1;
		}
		nx_lbuf db = *real;
		db.off += doff * es;
		nx_lval dv = *dst;
		dv.buf = &db;
		nx_status rc = copy_view(L, &ps, &dv, pc < 8 ? NX_ENG_SP : NX_ENG_POOL);
		if (rc)
			return rc;
		nx_l_max(&w, &db.written);
		nx_l_max(&war, &db.war);
	}
	real->written = w;
	real->war = war;
	return NX_OK;
}

static nx_status copy_view(nx_lower *L, const nx_lview *src, nx_lval *dst, nx_engine e)
{
	/* dst as a contiguous row-major view with src's dims */
	nx_lview dv = {.buf = dst->buf, .dt = dst->dt, .rank = src->rank, .off = 0};
	int64_t acc = 1;
	for (int k = src->rank - 1; k >= 0; k--) {
		dv.dims[k] = src->dims[k];
		dv.stride[k] = acc;
		acc *= src->dims[k];
	}
	nx_lsync y;
	bool fits;
	nx_status rc = dma_vv(L, e, src, &dv, &dst->buf->war, &y, &fits);
	if (rc)
		return rc;
	if (!fits) /* a merged axis over 2^24 elements or a stride beyond int32 */
		return nx_l_copy_view_split(L, src, dst);
	nx_l_max(&dst->buf->written, &y);
	nx_l_max(&dst->buf->war, &y);
	return NX_OK;
}

/* A copy whose destination writes are ordered after everything before. */
static nx_status copy(nx_lower *L, const nx_lview *src, const nx_lview *dst)
{
	nx_lsync y, w = dst->buf->war;
	nx_status rc = nx_l_dma_vv(L, src, dst, &w, &y);
	if (rc)
		return rc;
	nx_l_max(&dst->buf->written, &y);
	nx_l_max(&dst->buf->war, &y);
	return NX_OK;
}

nx_status nx_l_copy_view_split(nx_lower *L, const nx_lview *src, nx_lval *dst)
{
	nx_lview s, d = nx_l_view_of(dst);
	memset(&s, 0, sizeof s);
	s.buf = src->buf;
	s.dt = src->dt;
	s.rank = src->rank;
	for (int k = 0; k < src->rank; k++) {
		s.dims[k] = src->dims[k];
		s.stride[k] = src->stride[k];
	}
	/* dst is contiguous in src's dims (its own shape may differ) */
	d.rank = s.rank;
	int64_t st = 1;
	for (int k = s.rank - 1; k >= 0; k--) {
		d.dims[k] = s.dims[k];
		d.stride[k] = st;
		st *= s.dims[k];
	}
	return copy(L, &s, &d);
}

/* ------------------------------------------------------------- pieces */
nx_lval *nx_l_piece(nx_lower *L, const nx_lval *v, int64_t off, const nx_shape *s)
{
	nx_lval *p = nx_arena_alloc(&L->a, sizeof *p);
	memset(p, 0, sizeof *p);
	p->dt = v->dt;
	p->shape = s;
	p->buf = nx_arena_alloc(&L->a, sizeof *p->buf);
	*p->buf = *v->buf;
	p->buf->off = v->buf->off + off * nx_dtype_bytes[v->dt];
	p->buf->bytes = nx_shape_elems(s) * nx_dtype_bytes[v->dt];
	p->buf->refs = 1;
	p->buf->pinned = true; /* never returned to the free list: the parent owns it */
	return p;
}

void nx_l_piece_done(nx_lval *v, const nx_lval *p)
{
	nx_l_max(&v->buf->written, &p->buf->written);
	nx_l_max(&v->buf->war, &p->buf->war);
}

static nx_shape *shape1(nx_lower *L, nx_type t, int64_t n)
{
	return nx_shape_array(&L->a, t, 1, &n);
}

static nx_shape *shape2(nx_lower *L, nx_type t, int64_t a, int64_t b)
{
	int64_t d[2] = {a, b};
	return nx_shape_array(&L->a, t, 2, d);
}

/* --------------------------------------------------------- data ops */
static nx_status lower_slice(nx_lower *L, const nx_inst *i, nx_lval *op, nx_lval *out)
{
	nx_lview s = nx_l_view_of(op), d = nx_l_view_of(out);
	if (i->a.slice_start.n != s.rank)
		return nx_l_err(L, "slice bounds do not match the operand rank");
	for (int k = 0; k < s.rank; k++) {
		int64_t st = i->a.slice_stride.n == s.rank ? i->a.slice_stride.v[k] : 1;
		s.off += i->a.slice_start.v[k] * s.stride[k];
		s.stride[k] *= st;
		s.dims[k] = out->shape->dims[k];
	}
	nx_l_plan_kernel(L, "slice-dma");
	return copy(L, &s, &d);
}

static nx_status lower_concat(nx_lower *L, const nx_inst *i, nx_lval *const *ops, nx_lval *out)
{
	if (i->a.dimensions.n != 1)
		return nx_l_err(L, "concatenate needs one dimension");
	int dim = (int)i->a.dimensions.v[0];
	nx_lview d = nx_l_view_of(out);
	/* the pieces are disjoint: every DMA waits only for the earlier contents */
	nx_lsync w = out->buf->war, all;
	memset(&all, 0, sizeof all);
	int64_t at = 0;
	nx_l_plan_kernel(L, "concatenate-dma");
	for (int k = 0; k < i->noperands; k++) {
		nx_lview s = nx_l_view_of(ops[k]), p = d;
		p.off = at * d.stride[dim];
		p.dims[dim] = s.dims[dim];
		at += s.dims[dim];
		nx_lsync y;
		nx_status rc = nx_l_dma_vv(L, &s, &p, &w, &y);
		if (rc)
			return rc;
		nx_l_max(&all, &y);
	}
	nx_l_max(&out->buf->written, &all);
	nx_l_max(&out->buf->war, &all);
	return NX_OK;
}

static nx_status lower_pad(nx_lower *L, const nx_inst *i, nx_lval *op, nx_lval *pv, nx_lval *out)
{
	const nx_shape *os = op->shape;
	if (i->a.npadding != os->rank)
		return nx_l_err(L, "padding does not match the operand rank");
	nx_l_plan_kernel(L, "pad-dma");
	/* fill with the padding value (stride 0 everywhere), then the operand */
	nx_lview f = nx_l_view_of(out), d = nx_l_view_of(out), s = nx_l_view_of(op);
	f.buf = pv->buf;
	f.dt = pv->dt;
	for (int k = 0; k < f.rank; k++)
		f.stride[k] = 0;
	nx_status rc = copy(L, &f, &d);
	if (rc)
		return rc;
	for (int k = 0; k < os->rank; k++) {
		const nx_pad_dim *p = &i->a.padding[k];
		int64_t step = p->interior + 1, lo = p->lo, n = os->dims[k];
		int64_t first = 0; /* first operand element kept */
		if (lo < 0)
			first = (-lo + step - 1) / step; /* elements cut off at the low end */
		int64_t pos = lo + first * step; /* output position of element `first` */
		int64_t last = n - 1;            /* last element kept: position < out dim */
		int64_t od = out->shape->dims[k];
		if (n == 0 || first > last || pos >= od) {
			return NX_OK; /* nothing of the operand survives */
		}
		int64_t maxk = (od - 1 - lo) / step;
		if (maxk < last)
			last = maxk;
		if (last < first)
			return NX_OK;
		s.off += first * s.stride[k];
		s.dims[k] = last - first + 1;
		d.off += pos * d.stride[k];
		d.stride[k] *= step;
		d.dims[k] = s.dims[k];
	}
	return copy(L, &s, &d);
}

static nx_status lower_reverse(nx_lower *L, const nx_inst *i, nx_lval *op, nx_lval *out)
{
	nx_lview s = nx_l_view_of(op), d = nx_l_view_of(out);
	for (int k = 0; k < i->a.dimensions.n; k++) {
		int dim = (int)i->a.dimensions.v[k];
		if (s.dims[dim] == 0)
			return NX_OK;
		s.off += (s.dims[dim] - 1) * s.stride[dim];
		s.stride[dim] = -s.stride[dim];
	}
	nx_l_plan_kernel(L, "reverse-dma");
	return copy(L, &s, &d);
}

/* ------------------------------------------------- passes over pieces */
static int64_t elementwise_bytes(nx_lval *const *ops, int nops, const nx_lval *out, int64_t F)
{
	int64_t b = 0;
	for (int k = 0; k < nops; k++)
		b += nx_l_al64(F * nx_dtype_bytes[ops[k]->dt]);
	return b + nx_l_al64(F * nx_dtype_bytes[out->dt]);
}

/* Elementwise over contiguous ranges of the flat values, each range a
 * kernel whose operands fit an SBUF half. */
static nx_status split_elementwise(nx_lower *L, const nx_inst *i, nx_lval *const *ops, nx_lval *out)
{
	int nops = i->noperands;
	int64_t n = nx_shape_elems(out->shape);
	nx_ltile t = nx_l_tile(n, 2048);
	if (elementwise_bytes(ops, nops, out, t.F) <= L->sbuf_half)
		return nx_l_elementwise(L, i, ops, out);
	nx_lemap em;
	if (nops <= 3 && nx_l_elem_map(i, &em))
		return nx_l_elementwise_loop(L, i, ops, out); /* one loop nest (kernels/stream.c) */
	int64_t per = elementwise_bytes(ops, nops, out, 2048); /* bytes per 2048-element column block */
	int64_t Fm = 2048 * (L->sbuf_half / per);
	if (Fm < 2048)
		Fm = nx_l_div_le(2048, 2048 * L->sbuf_half / per);
	if (Fm < 1)
		Fm = 1;
	int64_t m = t.P * Fm;
	nx_lval *po[8];
	for (int64_t a = 0; a < n; a += m) {
		int64_t len = n - a < m ? n - a : m;
		for (int k = 0; k < nops; k++)
			po[k] = nx_l_piece(L, ops[k], a, shape1(L, ops[k]->shape->type, len));
		nx_lval *pout = nx_l_piece(L, out, a, shape1(L, out->shape->type, len));
		nx_status rc = nx_l_elementwise(L, i, po, pout);
		if (rc)
			return rc;
		for (int k = 0; k < nops; k++)
			nx_l_piece_done(ops[k], po[k]);
		nx_l_piece_done(out, pout);
	}
	return NX_OK;
}

static nx_status split_reduce(nx_lower *L, const nx_inst *i, nx_lval *const *ops, nx_lval *out);

/* The init value is combined into every partial result of a split
 * reduction, so splitting is exact only when it changes nothing there: any
 * init of max/min/and/or, the constant 0 of add, 1 of multiply. */
static bool init_is_neutral(const nx_inst *i)
{
	const nx_inst *r = i->called[0]->root, *c = i->operands[1];
	if (r->op == NX_OP_MAXIMUM || r->op == NX_OP_MINIMUM || r->op == NX_OP_AND || r->op == NX_OP_OR)
		return true;
	if (c->op != NX_OP_CONSTANT || !c->a.literal || nx_shape_elems(c->a.literal->shape) != 1)
		return false;
	double v = nx_lit_get_f64(c->a.literal, 0);
	return (r->op == NX_OP_ADD && v == 0) || (r->op == NX_OP_MULTIPLY && v == 1);
}

/* x with its reduced axes (red[]) moved last and contiguous: x itself when
 * they already are (size-1 kept axes between them do not count), else a new
 * value filled by one strided DMA. The caller releases *src when != x. */
static nx_status reduced_axes_last(nx_lower *L, nx_lval *x, const bool *red, nx_lval **src)
{
	const nx_shape *xs = x->shape;
	bool trailing = true;
	for (int k = 0, seen = 0; k < xs->rank; k++) {
		if (red[k])
			seen = 1;
		else if (seen && xs->dims[k] > 1)
			trailing = false;
	}
	*src = x;
	if (trailing)
		return NX_OK;
	nx_lview v = nx_l_view_of(x), w = v;
	int r = 0;
	for (int pass = 0; pass < 2; pass++)
		for (int k = 0; k < xs->rank; k++)
			if (red[k] == (pass == 1)) {
				w.dims[r] = v.dims[k];
				w.stride[r] = v.stride[k];
				r++;
			}
	*src = nx_l_newval(L, xs);
	nx_lview dv = nx_l_view_of(*src);
	for (int k = 0; k < w.rank; k++)
		dv.dims[k] = w.dims[k];
	int64_t st = 1;
	for (int k = w.rank - 1; k >= 0; k--)
		dv.stride[k] = st, st *= dv.dims[k];
	return copy(L, &w, &dv);
}

/* A reduction whose reduced rows do not fit one SBUF half (or a full
 * reduction whose slice per partition does not): the reduced axes (moved
 * last) are cut into R1 chunks of R2 elements; pass 1 reduces every chunk
 * into an fp32 partial [O, R1] (in HBM scratch), pass 2 reduces the
 * partials. Each pass is itself split as needed. */
static nx_status two_stage_reduce(nx_lower *L, const nx_inst *i, nx_lval *const *ops, nx_lval *out, int64_t R)
{
	nx_lval *x = ops[0];
	const nx_shape *xs = x->shape;
	if (!init_is_neutral(i))
		return nx_l_err(L, "reduction of %lld elements per row is too large for one SBUF pass and its "
		                   "init value is not neutral", (long long)R);
	bool red[NX_MAX_RANK] = {0};
	for (int k = 0; k < i->a.dimensions.n; k++)
		red[i->a.dimensions.v[k]] = true;
	int64_t O = nx_shape_elems(xs) / R;
	int esz = nx_dtype_bytes[x->dt];
	int64_t R2 = nx_l_div_le(R, (L->sbuf_half / 4) / esz);
	if (R2 < 2)
		R2 = nx_l_div_le(R, R / 2); /* R prime-ish: still two passes */
	int64_t R1 = R / R2;
	if (R2 < 2 || R1 < 2)
		return nx_l_err(L, "reduction of %lld elements per row cannot be split into passes", (long long)R);
	/* reduced axes last, contiguous */
	nx_lval *src = x;
	nx_status mrc = reduced_axes_last(L, x, red, &src);
	if (mrc)
		return mrc;
	nx_type pt = nx_type_kind_of(xs->type) == NX_KIND_FLOAT ? NX_F32 : out->shape->type;
	nx_lval *part = nx_l_newval(L, shape2(L, pt, O, R1));
	nx_inst fi = *i;
	int64_t one = 1;
	fi.a.dimensions.v = &one;
	fi.a.dimensions.n = 1;
	nx_lval *p1[2] = {nx_l_piece(L, src, 0, shape2(L, xs->type, O * R1, R2)), ops[1]};
	nx_lval *pp = nx_l_piece(L, part, 0, shape1(L, pt, O * R1));
	nx_status rc = split_reduce(L, &fi, p1, pp);
	nx_l_piece_done(src, p1[0]);
	nx_l_piece_done(part, pp);
	if (rc)
		return rc;
	nx_lval *p2[2] = {part, ops[1]};
	nx_lval *po = nx_l_piece(L, out, 0, shape1(L, out->shape->type, O));
	rc = split_reduce(L, &fi, p2, po);
	nx_l_piece_done(out, po);
	nx_l_release_buf(L, part->buf);
	if (src != x)
		nx_l_release_buf(L, src->buf);
	return rc;
}

/* Reduce whose rows [O kept, R reduced] do not fit: reduced axes moved last
 * (a DMA), then the kept rows in groups, one kernel per group. */
static nx_status split_reduce(nx_lower *L, const nx_inst *i, nx_lval *const *ops, nx_lval *out)
{
	nx_lval *x = ops[0];
	const nx_shape *xs = x->shape;
	bool red[NX_MAX_RANK] = {0};
	for (int k = 0; k < i->a.dimensions.n; k++)
		red[i->a.dimensions.v[k]] = true;
	int64_t O = 1, R = 1;
	for (int k = 0; k < xs->rank; k++)
		*(red[k] ? &R : &O) *= xs->dims[k];
	/* the reduced axes leading (a column sum): row tiles, no transpose */
	bool lead = true;
	for (int k = 0, seen = 0; k < xs->rank; k++) {
		if (!red[k])
			seen = 1;
		else if (seen && xs->dims[k] > 1)
			lead = false;
	}
	if (lead && O > 1 && nx_l_colreduce_ok(L, i, x->dt, out->dt, R, O))
		return nx_l_colreduce(L, i, ops, out, R, O);
	int esz = nx_dtype_bytes[x->dt];
	/* the same layout nx_l_reduce uses for its partitions */
	int64_t P = O == 1 ? 1 : nx_l_div_le(O, 128), T = O == 1 ? 1 : O / P;
	int64_t need = nx_l_al64(T * R * esz) + nx_l_al64(T * 4) + 64 + nx_l_al64(T * nx_dtype_bytes[out->dt]);
	if (O == 1 && R > 1) {
		/* a full reduction spreads R over up to 128 partitions */
		int64_t S = nx_l_div_le(R, 128);
		need = nx_l_al64(R / S * esz) + 4 + 64 + nx_l_al64(nx_dtype_bytes[out->dt]);
	}
	/* a row too long for the loop nest's buffer sets: two passes */
	bool row_fits = nx_l_reduce_row_fits(L, x->dt, out->dt, R);
	if (R > 1 && i->noperands == 2 && (O == 1 || !row_fits) && need > L->sbuf_half)
		return two_stage_reduce(L, i, ops, out, R);
	if (O <= 1 || R == 0 || need <= L->sbuf_half || i->noperands != 2 || !row_fits)
		return nx_l_reduce(L, i, ops, out);
	nx_lval *src = x;
	nx_status mrc = reduced_axes_last(L, x, red, &src);
	if (mrc)
		return mrc;
	/* the kept rows as one loop nest (kernels/stream.c) */
	nx_lval *po[2] = {src, ops[1]};
	nx_status rc = nx_l_reduce_loop(L, i, po, out, O, R);
	if (src != x)
		nx_l_release_buf(L, src->buf);
	return rc;
}

/* dot as [batch..., M, K] x [batch..., K, N]: operands with the batch dims
 * moved first (a DMA when they are not), then one dot per batch element. */
static nx_status batch_front(nx_lower *L, nx_lval *v, nx_ivec batch, nx_lval **res)
{
	const nx_shape *s = v->shape;
	int perm[NX_MAX_RANK], r = 0;
	bool isb[NX_MAX_RANK] = {0};
	for (int k = 0; k < batch.n; k++) {
		perm[r++] = (int)batch.v[k];
		isb[batch.v[k]] = true;
	}
	for (int k = 0; k < s->rank; k++)
		if (!isb[k])
			perm[r++] = k;
	bool id = true;
	for (int k = 0; k < s->rank; k++)
		id &= perm[k] == k;
	if (id) {
		*res = v;
		return NX_OK;
	}
	nx_lview w = nx_l_view_of(v), p = w;
	int64_t dims[NX_MAX_RANK];
	for (int k = 0; k < s->rank; k++) {
		p.dims[k] = w.dims[perm[k]];
		p.stride[k] = w.stride[perm[k]];
		dims[k] = p.dims[k];
	}
	nx_lval *c = nx_l_newval(L, nx_shape_array(&L->a, s->type, s->rank, dims));
	nx_lview dv = nx_l_view_of(c);
	nx_status rc = copy(L, &p, &dv);
	*res = c;
	return rc;
}

static nx_status dot_loop(nx_lower *L, const nx_inst *i, nx_lval *const *ops, nx_lval *out, int nb,
                          const int64_t *lc, const int64_t *rc);

static nx_status batch_dot(nx_lower *L, const nx_inst *i, nx_lval *const *ops, nx_lval *out)
{
	const nx_dot_dnums *dn = &i->a.dot;
	int nb = dn->lhs_batch.n;
	if (nb != dn->rhs_batch.n || i->noperands != 2)
		return nx_l_err(L, "dot batch dimensions do not match");
	nx_lval *A, *B;
	nx_status rc;
	if ((rc = batch_front(L, ops[0], dn->lhs_batch, &A)) || (rc = batch_front(L, ops[1], dn->rhs_batch, &B)))
		return rc;
	/* contracting dims renumbered in the batch-first operands */
	int64_t lc[NX_MAX_RANK], rcd[NX_MAX_RANK];
	nx_ivec bl = dn->lhs_batch, br = dn->rhs_batch;
	for (int side = 0; side < 2; side++) {
		nx_ivec c = side ? dn->rhs_contracting : dn->lhs_contracting, b = side ? br : bl;
		int64_t *o = side ? rcd : lc;
		const nx_shape *s = side ? ops[1]->shape : ops[0]->shape;
		for (int k = 0; k < c.n; k++) {
			int pos = 0; /* position among the non-batch dims */
			for (int d = 0; d < c.v[k]; d++) {
				bool isb = false;
				for (int j = 0; j < b.n; j++)
					isb |= b.v[j] == d;
				pos += !isb;
			}
			o[k] = pos;
		}
		(void)s;
	}
	nx_lval *ab[2] = {A, B};
	rc = dot_loop(L, i, ab, out, nb, lc, rcd);
	if (A != ops[0])
		nx_l_release_buf(L, A->buf);
	if (B != ops[1])
		nx_l_release_buf(L, B->buf);
	return rc;
}

/* SBUF bytes per partition nx_l_dot needs for C[M,N] = A[M,K] B[K,N]. */
static int64_t dot_bytes(const nx_lower *L, int64_t M, int64_t K, int64_t N, int ea, int eb, int eo)
{
	int64_t kt = nx_l_div_le(K, L->t->pe_rows), KT = K / kt;
	int64_t mt = nx_l_div_le(M, L->t->pe_cols), MT = M / mt;
	return nx_l_al64(KT * M * ea) + nx_l_al64(KT * N * eb) + MT * N * eo;
}

/* Operand side of a batch dot as a per-batch matrix: its dims after the nb
 * batch dims that make rows (ra) and columns (ca), and their extents. */
typedef struct dot_side {
	int64_t fr[NX_MAX_RANK];
	const int64_t *ra, *ca;
	int nra, nca;
	int64_t rows, cols;
} dot_side;

static void dot_side_of(const nx_inst *i, nx_lval *const *V, int side, int nb, const int64_t *lc, const int64_t *rc,
                        dot_side *d)
{
	const nx_dot_dnums *dn = &i->a.dot;
	const nx_shape *s = V[side]->shape;
	nx_ivec c = side ? dn->rhs_contracting : dn->lhs_contracting;
	const int64_t *cv = side ? (rc ? rc : c.v) : (lc ? lc : c.v);
	int nf = 0;
	for (int k = 0; k < s->rank - nb; k++) {
		bool u = false;
		for (int j = 0; j < c.n; j++)
			u |= cv[j] == k;
		if (!u)
			d->fr[nf++] = k;
	}
	d->ra = side ? cv : d->fr, d->ca = side ? d->fr : cv;
	d->nra = side ? c.n : nf, d->nca = side ? nf : c.n;
	d->rows = d->cols = 1;
	for (int k = 0; k < d->nra; k++)
		d->rows *= s->dims[nb + d->ra[k]];
	for (int k = 0; k < d->nca; k++)
		d->cols *= s->dims[nb + d->ca[k]];
}

/* The dot's result [batch, M, N] as a matrix view into T, the value of its
 * transposing reader t (L->tout_i, lower.c dot_tout): one row and one column
 * dim (the columns contiguous: the transpose keeps the last dim), the batch
 * dims in one stride (split 0) or in two levels split there, like the
 * operands' (nx_l_dot_mat2). T NULL: whether it can. */
bool nx_l_tout_mat(const nx_inst *t, const nx_inst *i, int nb, int split, const nx_lval *T, nx_ldmat *O)
{
	int r = i->shape->rank;
	if (r != nb + 2 || nb < 1 || t->a.dimensions.n != r || t->a.dimensions.v[r - 1] != r - 1)
		return false;
	if (!nx_type_is_float(i->shape->type) || i->shape->type != t->shape->type)
		return false;
	int64_t ts[NX_MAX_RANK], ds[NX_MAX_RANK], gs[2] = {0, 0};
	const int64_t *dims = i->shape->dims;
	ts[r - 1] = 1;
	for (int k = r - 2; k >= 0; k--)
		ts[k] = ts[k + 1] * t->shape->dims[k + 1];
	for (int j = 0; j < r; j++)
		ds[t->a.dimensions.v[j]] = ts[j];
	/* each batch group [0, split), [split, nb) one stride gs (its innermost
	 * dim's), dims of extent 1 aside */
	for (int g = 0, k0 = 0; g < 2; g++) {
		int k1 = g == 0 && split ? split : nb;
		for (int k = k0, prev = -1; k < k1; k++) {
			if (dims[k] == 1)
				continue;
			if (prev >= 0 && ds[prev] != ds[k] * dims[k])
				return false;
			prev = k, gs[g] = ds[k];
		}
		k0 = k1;
		if (!split)
			break;
	}
	memset(O, 0, sizeof *O);
	if (T)
		O->buf = T->buf, O->dt = T->dt;
	O->sr = ds[nb], O->sc = ds[nb + 1], O->sb = split ? gs[1] : gs[0];
	if (split) {
		O->B2 = 1;
		for (int k = split; k < nb; k++)
			O->B2 *= dims[k];
		O->sb1 = gs[0];
	}
	return O->sc == 1;
}

/* nx_l_dot_loop, into the transposing reader's layout when it takes it
 * (L->tout_v = T then; else T is released and out written) */
static nx_status dot_loop_tout(nx_lower *L, const nx_inst *i, int nb, int split, nx_lval *T, const nx_ldmat *A,
                               const nx_ldmat *B, nx_lval *out, int64_t Bt, int64_t M, int64_t K, int64_t N)
{
	nx_ldmat O;
	bool set = T && nx_l_tout_mat(L->tout_i, i, nb, split, T, &O);
	L->dot_out = set ? &O : NULL;
	nx_l_dot_sec_prep(L, nb, split); /* a second output (kernels/dot_sec.c) */
	nx_status rc = nx_l_dot_loop(L, A, B, out, Bt, M, K, N);
	nx_l_dot_sec_end(L);
	if (set && !L->dot_out)
		L->tout_v = T;
	else if (T)
		nx_l_release_buf(L, T->buf);
	L->dot_out = NULL;
	return rc;
}

/* A dot as one loop nest (kernels/dot_loop.c): nb leading batch dims
 * (already first in both operands, contiguous), contracting dims lc / rc
 * among the rest (NULL: i's own). Operands whose rows or columns do not merge
 * are materialized as [batch, M, K] / [batch, K, N] first; a batch whose
 * dims do not merge but fall into two groups that do (attention's [batch,
 * heads] over a [batch, seq, heads x d] layout) is read as two levels when
 * the loop takes it. */
static nx_status dot_loop(nx_lower *L, const nx_inst *i, nx_lval *const *ops, nx_lval *out, int nb,
                          const int64_t *lc, const int64_t *rc)
{
	nx_lval *V[2] = {ops[0], ops[1]};
	nx_ldmat mat[2];
	int64_t Bt = 1;
	nx_lval *made[2] = {NULL, NULL};
	dot_side d[2];
	for (int k = 0; k < nb; k++)
		Bt *= V[0]->shape->dims[k];
	bool merged = true;
	for (int side = 0; side < 2; side++) {
		dot_side_of(i, V, side, nb, lc, rc, &d[side]);
		merged &= nx_l_dot_mat(V[side], nb, d[side].ra, d[side].nra, d[side].ca, d[side].nca, &mat[side]);
	}
	NX_ASSERT(d[0].cols == d[1].rows);
	/* two batch levels also when only the transposing reader's layout needs them */
	nx_ldmat o0;
	bool tsplit = merged && L->tout_i && !nx_l_tout_mat(L->tout_i, i, nb, 0, NULL, &o0);
	for (int split = 1; (!merged || tsplit) && split < nb; split++) {
		nx_ldmat m2[2];
		bool ok = true;
		for (int side = 0; side < 2 && ok; side++)
			ok = nx_l_dot_mat2(V[side], nb, split, d[side].ra, d[side].nra, d[side].ca, d[side].nca, &m2[side]);
		ok = ok && (!tsplit || nx_l_tout_mat(L->tout_i, i, nb, split, NULL, &o0));
		if (ok && nx_l_dot_loop_b2_ok(L, &m2[0], &m2[1], out, Bt, d[0].rows, d[0].cols, d[1].cols))
			return dot_loop_tout(L, i, nb, split, L->tout_i ? nx_l_newval(L, L->tout_i->shape) : NULL, &m2[0],
			                     &m2[1], out, Bt, d[0].rows, d[0].cols, d[1].cols);
	}
	for (int side = 0; side < 2; side++) {
		/* the operand's view (a deferred transpose's too) when its batch,
		 * row and column dims each merge into one stride */
		if (!nx_l_dot_mat(V[side], nb, d[side].ra, d[side].nra, d[side].ca, d[side].nca, &mat[side])) {
			/* materialize [batch, rows, cols] */
			nx_lview w = nx_l_view_of(V[side]), p = w;
			int r = 0;
			for (int k = 0; k < nb; k++, r++)
				p.dims[r] = w.dims[k], p.stride[r] = w.stride[k];
			for (int k = 0; k < d[side].nra; k++, r++)
				p.dims[r] = w.dims[nb + d[side].ra[k]], p.stride[r] = w.stride[nb + d[side].ra[k]];
			for (int k = 0; k < d[side].nca; k++, r++)
				p.dims[r] = w.dims[nb + d[side].ca[k]], p.stride[r] = w.stride[nb + d[side].ca[k]];
			made[side] = nx_l_newval(L, V[side]->shape);
			p.rank = r;
			nx_status rc2 = nx_l_copy_view(L, &p, made[side]); /* split over the queues when large */
			if (rc2)
				return rc2;
			memset(&mat[side], 0, sizeof mat[side]);
			mat[side].buf = made[side]->buf;
			mat[side].dt = made[side]->dt;
			mat[side].sr = d[side].cols;
			mat[side].sc = 1;
			mat[side].sb = d[side].rows * d[side].cols;
		}
	}
	nx_status rc2 = dot_loop_tout(L, i, nb, 0, L->tout_i ? nx_l_newval(L, L->tout_i->shape) : NULL, &mat[0],
	                              &mat[1], out, Bt, d[0].rows, d[0].cols, d[1].cols);
	for (int side = 0; side < 2; side++)
		if (made[side]) {
			nx_l_release_buf(L, made[side]->buf);
		}
	return rc2;
}

/* A dot without batch dims whose operands do not fit one SBUF half: A
 * materialized as [M, K], B as [K, N]; rows of A (contiguous pieces) and
 * columns of B (copied out) in blocks, each block one nx_l_dot. */
nx_status nx_l_dot_split(nx_lower *L, const nx_inst *i, nx_lval *const *ops, nx_lval *out)
{
	const nx_dot_dnums *dn = &i->a.dot;
	nx_lval *A = ops[0], *B = ops[1];
	int64_t K = 1, M = 1, N = 1;
	for (int k = 0; k < dn->lhs_contracting.n; k++)
		K *= A->shape->dims[dn->lhs_contracting.v[k]];
	M = K ? nx_shape_elems(A->shape) / K : 0;
	N = K ? nx_shape_elems(B->shape) / K : 0;
	int ea = nx_dtype_bytes[A->dt], eb = nx_dtype_bytes[B->dt], eo = nx_dtype_bytes[out->dt];
	if (K == 0 || M == 0 || N == 0 ||
	    (!A->tsrc && !B->tsrc && dot_bytes(L, M, K, N, ea, eb, eo) <= L->sbuf_half && nx_l_dot_chunks(L, M, N) <= 1))
		return nx_l_dot(L, i, ops, out);
	return dot_loop(L, i, ops, out, 0, NULL, NULL);
}

/* --------------------------------------------------- dynamic indexing */
/* x viewed as [A, D, B] around its dim d: the slab at one index of d is A
 * rows of B elements, D * B apart */
static void slab_view(const nx_shape *s, int d, int64_t *A, int64_t *D, int64_t *B)
{
	*A = 1, *D = s->dims[d], *B = 1;
	for (int k = 0; k < d; k++)
		*A *= s->dims[k];
	for (int k = d + 1; k < s->rank; k++)
		*B *= s->dims[k];
}

/* out = x with its slab at the runtime index idx along dim d replaced by u
 * (x viewed as [A, D, B], the slab A rows of B): x copied to out (unless
 * out is x's buffer), then one dma_scatter writes u's A x B elements at
 * out + idx * B, idx clamped into [0, D - 1] (dynamic-update-slice) or, with
 * drop, the write skipped when idx is out of range (scatter). False when the
 * shapes or types do not fit one such DMA (the row program does it). */
static bool slab_scatter(nx_lower *L, nx_lval *x, nx_lval *u, nx_lval *idx, int64_t idx_off, int d, bool drop,
                         nx_lval *out, nx_status *rc)
{
	int64_t A, D, B;
	slab_view(x->shape, d, &A, &D, &B);
	int es = nx_dtype_bytes[x->dt];
	if ((idx->dt != NX_DT_S32 && idx->dt != NX_DT_U32) || u->dt != x->dt || out->dt != x->dt || A * B == 0 ||
	    A > (1 << 24) || B > (1 << 24) || D * B > INT32_MAX || B * es > INT32_MAX || D > INT32_MAX)
		return false;
	*rc = NX_OK;
	if (out->buf->off != x->buf->off) {
		nx_lview v = nx_l_view_of(x);
		if ((*rc = nx_l_copy_view(L, &v, out)) != NX_OK)
			return true;
	}
	int32_t st[2] = {(int32_t)(D * B), 1}, su[2] = {(int32_t)B, 1}, s1[1] = {1};
	uint32_t c2[2] = {(uint32_t)A, (uint32_t)B}, c1[1] = {1};
	nx_ap row = nx_ap_hbm(out->dt, out->buf->off, 1, 0, 2, st, c2);
	nx_ap src = nx_ap_hbm(u->dt, u->buf->off, 1, 0, 2, su, c2);
	nx_ap ia = nx_ap_hbm(idx->dt, idx->buf->off + idx_off * nx_dtype_bytes[idx->dt], 1, 0, 1, s1, c1);
	nx_l_wait(L, NX_ENG_SP, &u->buf->written);
	nx_l_wait(L, NX_ENG_SP, &idx->buf->written);
	nx_l_wait(L, NX_ENG_SP, &out->buf->written);
	nx_l_wait(L, NX_ENG_SP, &out->buf->war);
	nx_lsync y = nx_l_dma_indexed(L, NX_I_DMA_SCATTER, row, src, ia, D, B * es, drop ? NX_IF_DROP : 0);
	nx_l_plan_kernel(L, "scatter-dma");
	nx_l_plan(L, "slab", "%lld x %lld elements at a runtime index of %lld (%s)%s", (long long)A, (long long)B,
	          (long long)D, drop ? "dropped when out of range" : "clamped",
	          out->buf->off != x->buf->off ? ", after a copy of the operand" : ", in place");
	nx_l_max(&u->buf->war, &y);
	nx_l_max(&idx->buf->war, &y);
	nx_l_max(&out->buf->written, &y);
	nx_l_max(&out->buf->war, &y);
	return true;
}

/* out = x with the slab x[..., idx, ...] (dim d) replaced by u (or, add,
 * increased by u), idx a runtime scalar: a row program over rows (a, j) of x
 * viewed as [A*D, B] selecting by (iota j == idx), the update broadcast over
 * D by a DMA. clamp: XLA's dynamic-update-slice clamps idx into [0, D-1];
 * scatter drops an update whose index is out of bounds. */
static nx_status masked_update(nx_lower *L, nx_lval *x, nx_lval *u, nx_lval *idx, int64_t idx_off, int d,
                               bool clamp, bool add, nx_lval *out)
{
	const nx_shape *s = x->shape;
	int64_t A, D, B;
	slab_view(s, d, &A, &D, &B);
	/* long rows split: rows (a, j, b1) of B2 elements, so a row fits SBUF */
	int64_t B2 = nx_l_div_le(B, 2048), B1 = B / B2, O = A * D * B1;
	if (nx_shape_elems(s) == 0)
		return NX_OK;
	nx_status rc;
	if (!add && slab_scatter(L, x, u, idx, idx_off, d, !clamp, out, &rc))
		return rc;
	/* row index j of each row, and the index broadcast to every row */
	int64_t ad[3] = {A, D, B1};
	nx_inst fi;
	memset(&fi, 0, sizeof fi);
	fi.op = NX_OP_IOTA;
	fi.a.iota_dimension = 1;
	nx_lval *iv = nx_l_newval(L, nx_shape_array(&L->a, NX_S32, 3, ad));
	fi.shape = (nx_shape *)iv->shape;
	if ((rc = nx_l_iota(L, &fi, iv)))
		return rc;
	nx_lval *ip = nx_l_piece(L, idx, idx_off, nx_shape_scalar(&L->a, idx->shape->type)), *ib;
	if ((rc = nx_l_bcast_scalar(L, ip, shape1(L, idx->shape->type, O), &ib)))
		return rc;
	nx_l_piece_done(idx, ip);
	/* update broadcast over D */
	nx_lval *ub = nx_l_newval(L, nx_shape_with_type(&L->a, s, u->shape->type));
	{
		nx_lview v = nx_l_view_of(ub), w = v;
		w.buf = u->buf;
		w.dt = u->dt;
		w.rank = 3;
		w.dims[0] = A, w.dims[1] = D, w.dims[2] = B;
		w.stride[0] = B, w.stride[1] = 0, w.stride[2] = 1;
		v.rank = 3;
		v.dims[0] = A, v.dims[1] = D, v.dims[2] = B;
		v.stride[0] = D * B, v.stride[1] = B, v.stride[2] = 1;
		if ((rc = copy(L, &w, &v)))
			return rc;
	}
	/* slots: x, ub, iota (row), idx (row), out, m (row), t */
	nx_lprog p;
	memset(&p, 0, sizeof p);
	p.nin = 4;
	p.nscratch = 2;
	p.row[2] = p.row[3] = p.row[5] = true;
	if (clamp) {
		nx_lp_add(&p, NX_ENG_DVE, NX_I_TENSOR_SCALAR, NX_ALU_MAX, 5, 3, -1, 0.0f);
		nx_lp_add(&p, NX_ENG_DVE, NX_I_TENSOR_SCALAR, NX_ALU_MIN, 5, 5, -1, (float)(D - 1));
		nx_lp_add(&p, NX_ENG_DVE, NX_I_TENSOR_TENSOR, NX_ALU_EQ, 5, 2, 5, 0);
	} else {
		nx_lp_add(&p, NX_ENG_DVE, NX_I_TENSOR_TENSOR, NX_ALU_EQ, 5, 2, 3, 0);
	}
	if (add) {
		nx_lp_add(&p, NX_ENG_DVE, NX_I_TENSOR_TENSOR, NX_ALU_MUL, 6, 1, 5, 0);
		nx_lp_add(&p, NX_ENG_DVE, NX_I_TENSOR_TENSOR, NX_ALU_ADD, 4, 0, 6, 0);
	} else {
		int k = nx_lp_add(&p, NX_ENG_DVE, NX_I_SELECT, 0, 4, 5, 1, 0);
		p.s[k].c = 0;
	}
	nx_lval *in[4] = {x, ub, iv, ib};
	rc = nx_l_rowprog(L, &p, in, out, O, B2);
	nx_l_release_buf(L, iv->buf);
	nx_l_release_buf(L, ib->buf);
	nx_l_release_buf(L, ub->buf);
	return rc;
}

static nx_status lower_scatter(nx_lower *L, const nx_inst *i, nx_lval *const *ops, nx_lval *out)
{
	const nx_scatter_dnums *sd = &i->a.scatter;
	if (nx_l_scatter_pe_ok(L, i))
		return nx_l_scatter_pe(L, i, ops, out);
	if (i->noperands != 3 || sd->scatter_dims_to_operand_dims.n != 1 || sd->input_batching_dims.n ||
	    nx_shape_elems(ops[1]->shape) != 1 || i->ncalled != 1)
		return nx_l_err(L, "scatter: only one runtime index into one dimension is supported by the backend");
	int d = (int)sd->scatter_dims_to_operand_dims.v[0];
	const nx_shape *xs = ops[0]->shape;
	if (nx_shape_elems(ops[2]->shape) * xs->dims[d] != nx_shape_elems(xs))
		return nx_l_err(L, "scatter: the update must cover every dimension but the indexed one");
	const nx_inst *r = i->called[0]->root;
	bool add;
	if (r->op == NX_OP_PARAMETER && r->a.parameter_number == 1)
		add = false;
	else if (r->op == NX_OP_ADD && r->operands[0]->op == NX_OP_PARAMETER && r->operands[1]->op == NX_OP_PARAMETER)
		add = true;
	else
		return nx_l_err(L, "scatter: combiner '%s' is not assignment or add", i->called[0]->name);
	return masked_update(L, ops[0], ops[2], ops[1], 0, d, false, add, out);
}

static nx_status lower_dus(nx_lower *L, const nx_inst *i, nx_lval *const *ops, nx_lval *out)
{
	const nx_shape *xs = ops[0]->shape, *us = ops[1]->shape;
	int d = -1;
	for (int k = 0; k < xs->rank; k++)
		if (us->dims[k] != xs->dims[k]) {
			if (d >= 0 || us->dims[k] != 1)
				return nx_l_err(L, "dynamic-update-slice: only a slab of size 1 in one dimension is "
				                   "supported by the backend");
			d = k;
		}
	if (i->noperands != 2 + xs->rank)
		return nx_l_err(L, "dynamic-update-slice needs one index per dimension");
	if (d < 0) { /* the update covers the operand: indices clamp to 0 */
		nx_lview s = nx_l_view_of(ops[1]), t = nx_l_view_of(out);
		return copy(L, &s, &t);
	}
	return masked_update(L, ops[0], ops[1], ops[2 + d], 0, d, true, false, out);
}

nx_status nx_l_index(nx_lower *L, const nx_inst *i, nx_lval *const *ops, nx_lval *out, bool *done)
{
	*done = true;
	switch (i->op) {
	case NX_OP_SCATTER: return lower_scatter(L, i, ops, out);
	case NX_OP_DYNAMIC_UPDATE_SLICE: return lower_dus(L, i, ops, out);
	default:
		return nx_l_gather(L, i, ops, out, done);
	}
}

/* ------------------------------------------------------------ dispatch */
nx_status nx_l_data(nx_lower *L, const nx_inst *i, nx_lval *const *ops, nx_lval *out, bool *done)
{
	*done = true;
	switch (i->op) {
	case NX_OP_SLICE: return lower_slice(L, i, ops[0], out);
	case NX_OP_CONCATENATE: return lower_concat(L, i, ops, out);
	case NX_OP_PAD: return lower_pad(L, i, ops[0], ops[1], out);
	case NX_OP_REVERSE: return lower_reverse(L, i, ops[0], out);
	case NX_OP_DOT:
		if (i->a.dot.lhs_batch.n || i->a.dot.rhs_batch.n)
			return batch_dot(L, i, ops, out);
		return nx_l_dot_split(L, i, ops, out);
	case NX_OP_REDUCE:
		if (nx_l_colsum_ok(L, i))
			return nx_l_colsum(L, i, ops, out);
		if (i->noperands == 2)
			return split_reduce(L, i, ops, out);
		break;
	default:
		break;
	}
	nx_status rc = nx_l_math(L, i, ops, out, done);
	if (*done)
		return rc;
	rc = nx_l_index(L, i, ops, out, done);
	if (*done)
		return rc;
	if (nx_l_elementwise_ok(i) && i->noperands <= 8) {
		*done = true;
		return split_elementwise(L, i, ops, out);
	}
	return NX_OK;
}
