/* passes/conv_to_dot.c — every canonical convolution (b01f_01io->b01f, made
 * by canonicalize-conv) into pad, slice, reshape, dot, add and concatenate,
 * ops the backend lowers. docs/passes.md "conv-to-dot".
 *
 * In the padded input xp = pad(x, 0, lo/hi, interior = lhs_dilation - 1)
 * (negative padding becomes an offset into xp), output position o and kernel
 * position k of a spatial dim read xp at o*s + k*d (s: window stride, d: rhs
 * dilation). Each spatial dim, with O output and K kernel positions, takes
 * one of these forms:
 *   K == 1            : the dim keeps its O positions: a strided slice (O).
 *   O == 1            : the dim keeps its K positions, contracted (K).
 *   d == 1 && s == K  : o*K + k: a reshape to [O, K] (non-overlapping
 *                       windows: patch embeddings, im2col without copies).
 *   s == 1 && d == O  : k*O + o: a reshape to [K, O] (their weight gradient).
 *   else, K <= O      : loop over k: one strided slice (O) per k, summed.
 *   else              : loop over o: one slice (K) per o, contracted, the
 *                       results concatenated (weight gradients, whose
 *                       "kernel" is the large output gradient).
 * Every loop iteration is one dot of the sliced input [N, dims..., C] with the
 * matching kernel slice [Kdims..., Ci, Co], contracting the K dims and the
 * input features; so the code grows with the loop extents (at most
 * min(K, O) per dim), never with the tensor volume. Feature groups (G) and
 * batch groups (B) are a batch dim of the dot (input features [G, Ci] with
 * kernel output features [G, Co/G]; input batch [B, N/B] with kernel output
 * features [B, Co/B]), restored to [N, ..., Co] by a transpose and a reshape;
 * a depthwise group of one input feature with nothing else contracted is an
 * elementwise multiply instead. bf16/f16 convolutions accumulate in f32 (the
 * dots produce f32) and convert once at the end. Integer convolutions,
 * dynamic shapes and G, B both > 1 are left alone (the backend refuses). */
#include "passes/canonicalize.h"
#include "passes/rewrite.h"

#include <string.h>

enum { F_O, F_K, F_OK, F_KO, F_LOOPK, F_LOOPO };

typedef struct conv_plan {
	nx_inst *xp, *w; /* padded input, kernel */
	int ns;
	int64_t n, c, ci, co, g, b; /* batch, in features, kernel in/out features, groups */
	int form[NX_MAX_RANK];
	int64_t ko[NX_MAX_RANK], kk[NX_MAX_RANK]; /* O and K per spatial dim */
	int64_t st[NX_MAX_RANK], dl[NX_MAX_RANK], off[NX_MAX_RANK];
	int64_t pos[NX_MAX_RANK]; /* the current loop index per looped dim */
	nx_type acc, out;
} conv_plan;

static nx_inst *slice(nx_rw *rw, nx_inst *x, const int64_t *start, const int64_t *limit,
                      const int64_t *stride)
{
	int r = x->shape->rank;
	int64_t dims[NX_MAX_RANK];
	bool same = true;
	for (int k = 0; k < r; k++) {
		dims[k] = (limit[k] - start[k] + stride[k] - 1) / stride[k];
		same = same && dims[k] == x->shape->dims[k];
	}
	if (same)
		return x;
	nx_arena *a = nx_rw_arena(rw);
	nx_inst *s = nx_rw_add(rw, NX_OP_SLICE, nx_shape_array(a, x->shape->type, r, dims), &x, 1, NULL);
	s->a.slice_start = nx_ivec_dup(a, start, r);
	s->a.slice_limit = nx_ivec_dup(a, limit, r);
	s->a.slice_stride = nx_ivec_dup(a, stride, r);
	return s;
}

static nx_inst *reshape(nx_rw *rw, nx_inst *x, int r, const int64_t *dims)
{
	bool same = x->shape->rank == r;
	for (int k = 0; same && k < r; k++)
		same = x->shape->dims[k] == dims[k];
	return same ? x : nx_rw_reshape(rw, x, r, dims);
}

/* The dot (or multiply) of one loop iteration: [N, O'..., Co] in p->acc,
 * O' = O for dims that keep their output positions, 1 otherwise. */
static nx_inst *one_dot(nx_rw *rw, const conv_plan *p)
{
	int ns = p->ns;
	/* lhs: slice of xp, then reshape to [N, per-dim dims..., C] */
	int64_t start[NX_MAX_RANK], limit[NX_MAX_RANK], stride[NX_MAX_RANK];
	int64_t ld[2 * NX_MAX_RANK + 3], rd[NX_MAX_RANK + 3];
	bool lk[2 * NX_MAX_RANK + 3]; /* lhs dim is a contracted K dim */
	int nl = 0, nr = 0;
	start[0] = 0, limit[0] = p->n, stride[0] = 1;
	start[ns + 1] = 0, limit[ns + 1] = p->c, stride[ns + 1] = 1;
	if (p->b > 1)
		ld[nl] = p->b, lk[nl++] = false;
	ld[nl] = p->n / p->b, lk[nl++] = false;
	/* kernel: slice of w at the looped k, reshape to [Kdims..., Ci, Co] */
	int64_t wstart[NX_MAX_RANK], wlimit[NX_MAX_RANK], wstride[NX_MAX_RANK];
	for (int i = 0; i < ns; i++) {
		int64_t O = p->ko[i], K = p->kk[i], s = p->st[i], d = p->dl[i], o0 = p->off[i];
		int64_t cnt = O;
		wstart[i] = 0, wlimit[i] = K, wstride[i] = 1;
		switch (p->form[i]) {
		case F_O: start[i + 1] = o0, stride[i + 1] = s; ld[nl] = O, lk[nl++] = false; break;
		case F_K:
			start[i + 1] = o0, stride[i + 1] = d, cnt = K;
			ld[nl] = K, lk[nl++] = true, rd[nr++] = K;
			break;
		case F_OK:
			start[i + 1] = o0, stride[i + 1] = 1, cnt = O * K;
			ld[nl] = O, lk[nl++] = false, ld[nl] = K, lk[nl++] = true, rd[nr++] = K;
			break;
		case F_KO:
			start[i + 1] = o0, stride[i + 1] = 1, cnt = O * K;
			ld[nl] = K, lk[nl++] = true, ld[nl] = O, lk[nl++] = false, rd[nr++] = K;
			break;
		case F_LOOPK:
			start[i + 1] = o0 + p->pos[i] * d, stride[i + 1] = s;
			wstart[i] = p->pos[i], wlimit[i] = p->pos[i] + 1;
			ld[nl] = O, lk[nl++] = false;
			break;
		default: /* F_LOOPO */
			start[i + 1] = o0 + p->pos[i] * s, stride[i + 1] = d, cnt = K;
			ld[nl] = K, lk[nl++] = true, rd[nr++] = K;
			break;
		}
		limit[i + 1] = start[i + 1] + (cnt - 1) * stride[i + 1] + 1;
	}
	if (p->g > 1)
		ld[nl] = p->g, lk[nl++] = false;
	ld[nl] = p->c / p->g, lk[nl++] = true;
	wstart[ns] = 0, wlimit[ns] = p->ci, wstride[ns] = 1;
	wstart[ns + 1] = 0, wlimit[ns + 1] = p->co, wstride[ns + 1] = 1;
	nx_inst *xsl = slice(rw, p->xp, start, limit, stride);
	int64_t grp = p->g > 1 ? p->g : p->b;
	rd[nr++] = p->ci;
	if (grp > 1)
		rd[nr++] = grp;
	rd[nr++] = p->co / grp;
	nx_inst *w = reshape(rw, slice(rw, p->w, wstart, wlimit, wstride), nr, rd);

	/* the result's free dims: [grp?] N, O dims of the lhs in order, Co/grp */
	int64_t od[NX_MAX_RANK + 3];
	int no = 0;
	for (int k = 0; k < nl; k++)
		if (!lk[k] && !(p->g > 1 && k == nl - 2) && !(p->b > 1 && k == 0))
			od[no++] = ld[k];
	nx_arena *a = nx_rw_arena(rw);
	nx_inst *r;
	bool depthwise = p->g > 1 && p->ci == 1 && nr == 3;
	if (depthwise) {
		/* x [N, O..., G] times w [G, m], both broadcast to [N, O..., G, m]
		 * (to [N, O..., G] when m == 1) */
		int64_t m = p->co / p->g, bd[NX_MAX_RANK + 3], bx[NX_MAX_RANK + 3], wb[2];
		int nb = m > 1 ? nl : nl - 1;
		for (int k = 0; k < nl - 1; k++)
			bd[k] = ld[k], bx[k] = k;
		bd[nl - 1] = m;
		wb[0] = nl - 2, wb[1] = nl - 1;
		nx_inst *xs = xsl, *ws = reshape(rw, w, m > 1 ? 2 : 1, &rd[1]);
		if (xs->shape->type != p->acc)
			xs = nx_rw_convert(rw, xs, p->acc);
		if (ws->shape->type != p->acc)
			ws = nx_rw_convert(rw, ws, p->acc);
		if (m > 1)
			xs = nx_rw_broadcast(rw, xs, p->acc, nb, bd, bx);
		ws = nx_rw_broadcast(rw, ws, p->acc, nb, bd, wb);
		r = nx_rw_binary(rw, NX_OP_MULTIPLY, xs, ws);
	} else {
		int64_t lc[NX_MAX_RANK + 3], rc[NX_MAX_RANK + 3], lb = -1, rb = -1;
		int nc = 0;
		for (int k = 0; k < nl; k++)
			if (lk[k])
				lc[nc++] = k;
		for (int k = 0; k < nc; k++)
			rc[k] = k;
		if (p->g > 1)
			lb = nl - 2, rb = nr - 2;
		else if (p->b > 1)
			lb = 0, rb = nr - 2;
		int64_t dd[NX_MAX_RANK + 4];
		int nd = 0;
		if (lb >= 0)
			dd[nd++] = grp;
		for (int k = 0; k < no; k++)
			dd[nd++] = od[k];
		dd[nd++] = p->co / grp;
		nx_inst *x = reshape(rw, xsl, nl, ld);
		nx_inst *ops[2] = {x, w};
		if (x->shape->type != w->shape->type) {
			ops[0] = nx_rw_convert(rw, x, p->acc);
			ops[1] = nx_rw_convert(rw, w, p->acc);
		}
		r = nx_rw_add(rw, NX_OP_DOT, nx_shape_array(a, p->acc, nd, dd), ops, 2, NULL);
		r->a.dot.lhs_contracting = nx_ivec_dup(a, lc, nc);
		r->a.dot.rhs_contracting = nx_ivec_dup(a, rc, nc);
		if (lb >= 0) {
			r->a.dot.lhs_batch = nx_ivec_dup(a, &lb, 1);
			r->a.dot.rhs_batch = nx_ivec_dup(a, &rb, 1);
			/* [grp, N, O..., Co/grp] -> [N, O..., grp, Co/grp] */
			int64_t perm[NX_MAX_RANK];
			for (int k = 0; k < nd - 2; k++)
				perm[k] = k + 1;
			perm[nd - 2] = 0;
			perm[nd - 1] = nd - 1;
			r = nx_rw_transpose(rw, r, perm);
		}
	}
	/* reshape to [N, O'..., Co] */
	int64_t fd[NX_MAX_RANK];
	fd[0] = p->n / p->b;
	for (int i = 0; i < ns; i++)
		fd[i + 1] = (p->form[i] == F_K || p->form[i] == F_LOOPO) ? 1 : p->ko[i];
	fd[ns + 1] = p->co;
	return reshape(rw, r, ns + 2, fd);
}

/* Sum over the looped kernel positions from spatial dim i on. */
static nx_inst *sum_k(nx_rw *rw, conv_plan *p, int i)
{
	while (i < p->ns && p->form[i] != F_LOOPK)
		i++;
	if (i == p->ns)
		return one_dot(rw, p);
	nx_inst *acc = NULL;
	for (int64_t k = 0; k < p->kk[i]; k++) {
		p->pos[i] = k;
		nx_inst *t = sum_k(rw, p, i + 1);
		if (!t)
			return NULL;
		acc = acc ? nx_rw_binary(rw, NX_OP_ADD, acc, t) : t;
	}
	return acc;
}

/* Concatenation over the looped output positions from spatial dim i on. */
static nx_inst *cat_o(nx_rw *rw, conv_plan *p, int i)
{
	while (i < p->ns && p->form[i] != F_LOOPO)
		i++;
	if (i == p->ns)
		return sum_k(rw, p, 0);
	int64_t O = p->ko[i];
	nx_inst **parts = nx_arena_alloc(nx_rw_arena(rw), sizeof(nx_inst *) * (size_t)O);
	for (int64_t o = 0; o < O; o++) {
		p->pos[i] = o;
		if (!(parts[o] = cat_o(rw, p, i + 1)))
			return NULL;
	}
	if (O == 1)
		return parts[0];
	nx_shape *s = nx_shape_copy(nx_rw_arena(rw), parts[0]->shape);
	s->dims[i + 1] = O;
	nx_inst *c = nx_rw_add(rw, NX_OP_CONCATENATE, s, parts, (int)O, NULL);
	int64_t dim = i + 1;
	c->a.dimensions = nx_ivec_dup(nx_rw_arena(rw), &dim, 1);
	c->a.has_dimensions = true;
	return c;
}

static bool float_type(nx_type t)
{
	return nx_type_kind_of(t) == NX_KIND_FLOAT;
}

static nx_inst *lower(nx_rw *rw, nx_inst *in)
{
	if (in->op != NX_OP_CONVOLUTION || in->noperands != 2 || !nx_conv_is_canonical(in))
		return NULL;
	nx_inst *x = in->operands[0], *w = in->operands[1];
	int ns = in->a.conv.in_spatial.n, r = ns + 2;
	if (2 * ns + 4 > NX_MAX_RANK) /* the dot operands' rank (two dims per spatial dim) */
		return NULL;
	if (x->shape->dynamic || w->shape->dynamic || in->shape->dynamic || x->shape->rank != r ||
	    w->shape->rank != r || in->shape->rank != r || in->a.window.ndims != ns ||
	    !float_type(in->shape->type) || !float_type(x->shape->type) || !float_type(w->shape->type))
		return NULL;
	conv_plan p = {0};
	p.ns = ns;
	p.n = x->shape->dims[0];
	p.c = x->shape->dims[ns + 1];
	p.ci = w->shape->dims[ns];
	p.co = w->shape->dims[ns + 1];
	p.g = in->a.feature_group_count > 1 ? in->a.feature_group_count : 1;
	p.b = in->a.batch_group_count > 1 ? in->a.batch_group_count : 1;
	if ((p.g > 1 && p.b > 1) || p.c != p.ci * p.g || p.co % p.g || p.co % p.b || p.n % p.b ||
	    in->shape->dims[0] != p.n / p.b || in->shape->dims[ns + 1] != p.co)
		return NULL;
	p.out = in->shape->type;
	p.acc = (p.out == NX_BF16 || p.out == NX_F16) ? NX_F32 : p.out;
	if (nx_shape_elems(in->shape) == 0 || p.ci == 0)
		return NULL;
	nx_arena *a = nx_rw_arena(rw);
	/* the padded input; negative padding is an offset into it */
	nx_pad_dim *pd = nx_arena_alloc(a, sizeof(nx_pad_dim) * (size_t)r);
	memset(pd, 0, sizeof(nx_pad_dim) * (size_t)r);
	bool padded = false;
	int64_t xd[NX_MAX_RANK];
	xd[0] = p.n, xd[ns + 1] = p.c;
	for (int i = 0; i < ns; i++) {
		const nx_window_dim *wd = &in->a.window.dims[i];
		int64_t ld = wd->base_dilation > 0 ? wd->base_dilation : 1;
		int64_t I = x->shape->dims[i + 1];
		p.ko[i] = in->shape->dims[i + 1];
		p.kk[i] = wd->size;
		p.st[i] = wd->stride > 0 ? wd->stride : 1;
		p.dl[i] = wd->window_dilation > 0 ? wd->window_dilation : 1;
		if (p.kk[i] != w->shape->dims[i] || p.kk[i] <= 0) /* malformed: the verifier reports it */
			return NULL;
		pd[i + 1].lo = wd->pad_lo > 0 ? wd->pad_lo : 0;
		pd[i + 1].hi = wd->pad_hi > 0 ? wd->pad_hi : 0;
		pd[i + 1].interior = I > 0 ? ld - 1 : 0;
		p.off[i] = wd->pad_lo < 0 ? -wd->pad_lo : 0;
		padded = padded || pd[i + 1].lo || pd[i + 1].hi || pd[i + 1].interior;
		xd[i + 1] = pd[i + 1].lo + pd[i + 1].hi + (I > 0 ? (I - 1) * ld + 1 : 0);
		int64_t O = p.ko[i], K = p.kk[i], s = p.st[i], d = p.dl[i];
		if (p.off[i] + (O - 1) * s + (K - 1) * d + 1 > xd[i + 1])
			return NULL; /* the window leaves the padded input: malformed */
		if (K == 1)
			p.form[i] = F_O;
		else if (O == 1)
			p.form[i] = F_K;
		else if (d == 1 && s == K)
			p.form[i] = F_OK;
		else if (s == 1 && d == O)
			p.form[i] = F_KO;
		else
			p.form[i] = K <= O ? F_LOOPK : F_LOOPO;
	}
	/* the kernel, reversed where the window says so */
	int64_t rev[NX_MAX_RANK];
	int nrev = 0;
	for (int i = 0; i < ns; i++)
		if (in->a.window.dims[i].reversal)
			rev[nrev++] = i;
	if (nrev) {
		nx_inst *rv = nx_rw_add(rw, NX_OP_REVERSE, nx_shape_copy(a, w->shape), &w, 1, NULL);
		rv->a.dimensions = nx_ivec_dup(a, rev, nrev);
		rv->a.has_dimensions = true;
		w = rv;
	}
	p.xp = x;
	if (padded) {
		nx_inst *ops[2] = {x, nx_rw_scalar(rw, x->shape->type, 0)};
		p.xp = nx_rw_add(rw, NX_OP_PAD, nx_shape_array(a, x->shape->type, r, xd), ops, 2, NULL);
		p.xp->a.padding = pd;
		p.xp->a.npadding = r;
	}
	p.w = w;
	nx_inst *res = cat_o(rw, &p, 0);
	if (!res)
		return NULL;
	if (res->shape->type != p.out)
		res = nx_rw_convert(rw, res, p.out);
	/* res is new and has the result's dims: give it the result's layout */
	res->shape = nx_shape_copy(a, in->shape);
	return res;
}

nx_status nx_pass_conv_to_dot(nx_module *m, const nx_pass_ctx *ctx, bool *changed)
{
	return nx_rw_run(m, ctx, "conv-to-dot", lower, NULL, changed);
}
