/* backend/lower_fused.c — a fusion as one kernel. The body's values live in
 * SBUF slots of the flat [P, F] tile layout (nx_l_tile): SP loads every
 * external input once (full tiles chunk by chunk; a broadcast of a scalar as
 * one [P, 1] column read with stride 0; another broadcast of an input as one
 * strided view when F fits one chunk), the engines compute each body
 * instruction in place, and POOL stores only the root. Reshape, bitcast and
 * same-type convert/copy share their operand's slot (the flat layout does
 * not change). Consecutive instructions of one engine form a stage (one loop
 * over the chunks); a stage waits for the earlier stages of other engines.
 * Bodies outside this subset are flattened by the driver (lower.c). */
#include "backend/lower.h"

#include <string.h>

#define FMAX 64 /* body instructions handled as one kernel */

enum { FV_PARAM, FV_CONST, FV_ALIAS, FV_SCALAR, FV_BVIEW, FV_COMP, FV_DOT };

typedef struct fval {
	const nx_inst *i;
	int kind, alias; /* alias: index whose slot FV_ALIAS shares */
	int src;         /* FV_SCALAR/FV_BVIEW: index of the PARAM/CONST read */
	bool load;       /* PARAM/CONST read as a full tile */
	nx_dtype dt;
	int64_t off;     /* slot, relative to the kernel's SBUF base */
	nx_lval *ext;    /* PARAM/CONST: the HBM value */
} fval;

/* Layout of the kernel's values in SBUF: P partitions of F elements. Loads
 * and stores run `ll` times, each [P, lc] (HBM: rows hps elements apart,
 * iteration i at i*hls elements); compute runs `cl` times over [P, cc].
 * Flat (nx_l_tile): element p*F + f. After a dot: M tile mi of the [M, N]
 * result at free offset mi*N of partition p = row within the tile. */
typedef struct plan {
	const nx_comp *b;
	int n;
	fval v[FMAX];
	int64_t P, F, ll, lc, hps, hls, cl, cc;
	int64_t bytes;
	int root, dot;
	const nx_lower *L;
} plan;

static int find(const plan *p, const nx_inst *i)
{
	for (int k = 0; k < p->n; k++)
		if (p->v[k].i == i)
			return p->v[k].kind == FV_ALIAS ? p->v[k].alias : k;
	return -1;
}

/* HBM access pattern reading view (dims, stride in elements) in row-major
 * order as P partitions of F elements each. */
static bool split_view(const int64_t *dims0, const int64_t *st0, int rank, int64_t P, int64_t *pstride,
                       int *nd, int32_t *fst, uint32_t *fcnt)
{
	int64_t d[NX_MAX_RANK + 1], s[NX_MAX_RANK + 1];
	int r = 0;
	for (int k = 0; k < rank; k++)
		if (dims0[k] != 1)
			d[r] = dims0[k], s[r] = st0[k], r++;
	int64_t need = P, pc = 1, ps = 0;
	int k = 0;
	bool pany = false;
	while (need > 1) {
		if (k >= r)
			return false;
		int64_t c, cs;
		if (need % d[k] == 0) {
			c = d[k], cs = s[k];
			k++;
		} else if (d[k] % need == 0) {
			c = need, cs = s[k] * (d[k] / need);
			d[k] /= need;
		} else {
			return false;
		}
		if (pany && ps != cs * c)
			return false;
		pc *= c;
		ps = cs;
		pany = true;
		need /= c;
	}
	NX_ASSERT(pc == P);
	*pstride = ps;
	int n = 0;
	int64_t fd[NX_MAX_RANK + 1], fs[NX_MAX_RANK + 1];
	for (; k < r; k++) {
		if (n > 0 && fs[n - 1] == s[k] * d[k]) {
			fd[n - 1] *= d[k];
			fs[n - 1] = s[k];
			continue;
		}
		fd[n] = d[k], fs[n] = s[k];
		n++;
	}
	if (n == 0)
		fd[0] = 1, fs[0] = 1, n = 1;
	if (n > NX_AP_DIMS)
		return false;
	for (int j = 0; j < n; j++) {
		if (fd[j] > (1 << 24) || fs[j] > INT32_MAX || fs[j] < INT32_MIN)
			return false;
		fst[j] = (int32_t)fs[j];
		fcnt[j] = (uint32_t)fd[j];
	}
	*nd = n;
	return true;
}

/* Broadcast view of body value src (an input) to the shape of instruction i. */
static void bcast_view(const nx_inst *i, const nx_shape *src, int64_t *dims, int64_t *st)
{
	int64_t sst[NX_MAX_RANK], acc = 1;
	for (int k = src->rank - 1; k >= 0; k--) {
		sst[k] = acc;
		acc *= src->dims[k];
	}
	for (int k = 0; k < i->shape->rank; k++) {
		dims[k] = i->shape->dims[k];
		st[k] = 0;
	}
	for (int j = 0; j < i->a.dimensions.n && j < src->rank; j++)
		st[i->a.dimensions.v[j]] = sst[j];
}

/* P0 > 0: flat layout with P0 partitions instead of nx_l_tile's choice. */
static bool build(const nx_lower *L, const nx_inst *f, plan *p, int64_t P0)
{
	memset(p, 0, sizeof *p);
	if (f->op != NX_OP_FUSION || f->ncalled != 1 || !nx_shape_is_array(f->shape))
		return false;
	const nx_comp *b = f->called[0];
	if (b->ninsts > FMAX || !b->root || nx_lower_dtype(f->shape->type) < 0)
		return false;
	p->b = b;
	int64_t n = nx_shape_elems(f->shape);
	if (n == 0)
		return false;
	p->dot = -1;
	p->L = L;
	nx_ltile t = nx_l_tile(n, 2048);
	if (P0 > 0) {
		t.P = P0, t.F = n / P0;
		t.Fc = nx_l_chunk(t.F, 2048);
		t.Lc = t.F / t.Fc;
	}
	p->P = t.P, p->F = t.F, p->ll = t.Lc, p->lc = t.Fc, p->hps = t.F, p->hls = t.Fc, p->cl = t.Lc, p->cc = t.Fc;
	for (int k = 0; k < b->ninsts; k++) {
		const nx_inst *i = b->insts[k];
		if (i->op != NX_OP_DOT)
			continue;
		int64_t M, N, mt;
		if (p->dot >= 0 || !nx_l_dot_dims(L, i, &M, &N, &mt) || M * N != n)
			return false;
		p->dot = k; /* index among body instructions: all are kept in order */
		p->P = mt, p->F = (M / mt) * N, p->ll = M / mt, p->lc = N, p->hps = N, p->hls = mt * N;
		p->cl = 1, p->cc = p->F;
	}
	for (int k = 0; k < b->ninsts; k++) {
		const nx_inst *i = b->insts[k];
		fval *v = &p->v[p->n];
		memset(v, 0, sizeof *v);
		v->i = i;
		v->alias = v->src = -1;
		if (!nx_shape_is_array(i->shape) || nx_lower_dtype(i->shape->type) < 0)
			return false;
		v->dt = (nx_dtype)nx_lower_dtype(i->shape->type);
		int64_t ne = nx_shape_elems(i->shape);
		int op0 = i->noperands > 0 ? find(p, i->operands[0]) : -1;
		for (int j = 0; j < i->noperands; j++)
			if (find(p, i->operands[j]) < 0)
				return false;
		switch (i->op) {
		case NX_OP_PARAMETER:
			if (i->a.parameter_number < 0 || i->a.parameter_number >= f->noperands)
				return false;
			v->kind = FV_PARAM;
			break;
		case NX_OP_CONSTANT:
			v->kind = FV_CONST;
			break;
		case NX_OP_RESHAPE: case NX_OP_BITCAST: case NX_OP_COPY: case NX_OP_CONVERT:
			if (p->v[op0].dt != v->dt || nx_shape_elems(p->v[op0].i->shape) != ne)
				return false;
			v->kind = FV_ALIAS;
			v->alias = op0;
			break;
		case NX_OP_BROADCAST: {
			const fval *o = &p->v[op0];
			if ((o->kind != FV_PARAM && o->kind != FV_CONST) || ne != n || o->dt != v->dt)
				return false;
			v->src = op0;
			if (nx_shape_elems(o->i->shape) == 1) {
				v->kind = FV_SCALAR;
				break;
			}
			int64_t dims[NX_MAX_RANK], st[NX_MAX_RANK], ps;
			int nd;
			int32_t fst[NX_AP_DIMS];
			uint32_t fc[NX_AP_DIMS];
			bcast_view(i, i->operands[0]->shape, dims, st);
			if (p->ll != 1 || !split_view(dims, st, i->shape->rank, p->P, &ps, &nd, fst, fc))
				return false;
			v->kind = FV_BVIEW;
			break;
		}
		case NX_OP_DOT:
			for (int j = 0; j < 2; j++) {
				int o = find(p, i->operands[j]);
				if (p->v[o].kind != FV_PARAM && p->v[o].kind != FV_CONST)
					return false;
			}
			if (i->shape->type != f->shape->type && nx_lower_dtype(i->shape->type) < 0)
				return false;
			v->kind = FV_DOT;
			break;
		default: {
			nx_lemap m;
			if (!nx_l_elem_map(i, &m) || ne != n || i->noperands > 3)
				return false;
			for (int j = 0; j < i->noperands; j++) {
				fval *o = &p->v[find(p, i->operands[j])];
				if (o->kind == FV_PARAM || o->kind == FV_CONST) {
					if (nx_shape_elems(o->i->shape) != n)
						return false;
					o->load = true;
				}
			}
			v->kind = FV_COMP;
			break;
		}
		}
		p->n++;
	}
	p->root = find(p, b->root);
	if (p->root < 0 || p->v[p->root].kind != FV_COMP)
		return false;
	for (int k = 0; k < p->n; k++) {
		fval *v = &p->v[k];
		if (v->kind == FV_SCALAR) {
			v->off = p->bytes;
			p->bytes += 64;
		} else if (v->kind == FV_BVIEW || v->kind == FV_COMP || v->load) {
			v->off = p->bytes;
			p->bytes += nx_l_al64(p->F * nx_dtype_bytes[v->dt]);
		}
	}
	if (p->F > L->t->vec_max_free_sbuf && p->cl == 1)
		return false;
	/* the dot's own operands and result come first in a dot kernel */
	int64_t extra = 0;
	if (p->dot >= 0) {
		const nx_inst *d = b->insts[p->dot];
		int64_t M, N, mt;
		nx_l_dot_dims(L, d, &M, &N, &mt);
		int64_t K = nx_shape_elems(d->operands[0]->shape) / M;
		int64_t kt = nx_l_div_le(K, L->t->pe_rows);
		extra = nx_l_al64(K / kt * M * 4) + nx_l_al64(K / kt * N * 4) + nx_l_al64(M / mt * N * 4);
	}
	return p->bytes + extra <= L->sbuf_half;
}

/* The default tile, else (a broadcast view that does not split into its
 * partitions) the most partitions that work. */
static bool plan_fusion(const nx_lower *L, const nx_inst *f, plan *p)
{
	if (build(L, f, p, 0))
		return true;
	if (!nx_shape_is_array(f->shape) || p->dot >= 0 || p->b == NULL)
		return false;
	int64_t n = nx_shape_elems(f->shape);
	for (int64_t P = n < 128 ? n : 128; P >= 1; P--)
		if (n % P == 0 && n / P <= 2048 && build(L, f, p, P))
			return true;
	return false;
}

bool nx_l_fused_ok(const nx_lower *L, const nx_inst *f)
{
	plan p;
	return plan_fusion(L, f, &p);
}

/* AP of body value k in SBUF: a compute chunk (scalars repeat). */
static nx_ap operand(const plan *p, int k, const int64_t *addr)
{
	const fval *v = &p->v[k];
	int32_t st[1] = {v->kind == FV_SCALAR ? 0 : 1};
	uint32_t c[1] = {(uint32_t)p->cc};
	nx_ap a = nx_ap_sbuf(v->dt, 0, (int)p->P, addr[k], 1, st, c);
	if (v->kind != FV_SCALAR)
		a.loop_stride[0] = p->cc * nx_dtype_bytes[v->dt];
	return a;
}

/* One load/store iteration: SBUF side and HBM side of value x. */
static nx_ap sbuf_io(const plan *p, nx_dtype dt, int64_t addr)
{
	int32_t st[1] = {1};
	uint32_t c[1] = {(uint32_t)p->lc};
	nx_ap a = nx_ap_sbuf(dt, 0, (int)p->P, addr, 1, st, c);
	a.loop_stride[0] = p->lc * nx_dtype_bytes[dt];
	return a;
}

static nx_ap hbm_io(const plan *p, const nx_lval *x)
{
	int32_t st[1] = {1};
	uint32_t c[1] = {(uint32_t)p->lc};
	nx_ap a = nx_ap_hbm(x->dt, x->buf->off, (int)p->P, p->hps, 1, st, c);
	a.loop_stride[0] = p->hls * nx_dtype_bytes[x->dt];
	return a;
}

typedef struct ectx {
	plan *p;
	int h;
	nx_lval *out;
} ectx;

/* Loads, compute stages after `ready`, store of the root; *done = the
 * kernel's completion. addr: SBUF address per body value. */
static nx_status body(nx_lower *L, plan *p, const int64_t *addr0, const nx_lsync *ready, int h, nx_lval *out,
                      nx_lsync *done)
{
	nx_lsync loads, rd;
	memset(&loads, 0, sizeof loads);
	memset(&rd, 0, sizeof rd);
	/* inputs still in SBUF from the kernel that made them are read there
	 * (the slot order is flat when there is no dot or one M tile) */
	bool flat = p->dot < 0 || p->ll == 1, res[FMAX], any = false;
	int64_t addr[FMAX];
	for (int k = 0; k < p->n; k++) {
		fval *v = &p->v[k];
		addr[k] = addr0[k];
		res[k] = flat && v->load && nx_l_resident(L, v->ext, p->P, p->F);
		if (res[k]) {
			addr[k] = v->ext->sb_off;
			nx_l_max(&rd, &v->ext->sb_ready);
		}
		any |= (v->load && !res[k]) || v->kind == FV_SCALAR || v->kind == FV_BVIEW;
	}
	if (any)
		nx_l_wait(L, NX_ENG_SP, &L->sbuf_free[h]);
	for (int k = 0; k < p->n; k++)
		if (p->v[k].ext && !res[k] && (p->v[k].load || p->v[k].kind == FV_PARAM || p->v[k].kind == FV_CONST))
			nx_l_wait(L, NX_ENG_SP, &p->v[k].ext->buf->written);
	bool any_tile = false;
	for (int k = 0; k < p->n; k++) {
		fval *v = &p->v[k];
		if (v->kind == FV_SCALAR) {
			nx_lval *x = p->v[v->src].ext;
			int32_t st[1] = {1};
			uint32_t c[1] = {1};
			nx_ap src = nx_ap_hbm(x->dt, x->buf->off, (int)p->P, 0, 1, st, c);
			nx_lsync y = nx_l_dma(L, NX_ENG_SP, nx_ap_sbuf(v->dt, 0, (int)p->P, addr[k], 1, st, c), src);
			nx_l_max(&loads, &y);
		} else if (v->kind == FV_BVIEW) {
			nx_lval *x = p->v[v->src].ext;
			int64_t dims[NX_MAX_RANK], st[NX_MAX_RANK], ps;
			int nd;
			int32_t fst[NX_AP_DIMS], s1[1] = {1};
			uint32_t fc[NX_AP_DIMS], cF[1] = {(uint32_t)p->F};
			/* the operand's shape (a reshaped parameter's, not the parameter's) */
			bcast_view(v->i, v->i->operands[0]->shape, dims, st);
			bool ok = split_view(dims, st, v->i->shape->rank, p->P, &ps, &nd, fst, fc);
			NX_ASSERT(ok);
			nx_ap src = nx_ap_hbm(x->dt, x->buf->off, (int)p->P, ps, nd, fst, fc);
			nx_lsync y = nx_l_dma(L, NX_ENG_SP, nx_ap_sbuf(v->dt, 0, (int)p->P, addr[k], 1, s1, cF), src);
			nx_l_max(&loads, &y);
		} else if (v->load && !res[k]) {
			any_tile = true;
		}
	}
	if (any_tile) {
		nx_l_loop(L, NX_ENG_SP, p->ll);
		for (int k = 0; k < p->n; k++)
			if (p->v[k].load && !res[k]) {
				nx_lval *x = p->v[k].ext;
				nx_lsync y = nx_l_dma(L, NX_ENG_SP, sbuf_io(p, x->dt, addr[k]), hbm_io(p, x));
				nx_l_max(&loads, &y);
			}
		nx_l_endloop(L, NX_ENG_SP);
	}
	for (int k = 0; k < p->n; k++)
		if (p->v[k].ext && !res[k])
			nx_l_max(&p->v[k].ext->buf->war, &loads);

	/* compute: stages of consecutive instructions on one engine */
	nx_lsync stages = loads;
	nx_l_max(&stages, ready);
	nx_l_max(&stages, &rd);
	int k = 0;
	while (k < p->n) {
		nx_lemap m;
		if (p->v[k].kind != FV_COMP) {
			k++;
			continue;
		}
		nx_l_elem_map(p->v[k].i, &m);
		nx_engine e = m.e;
		nx_l_wait(L, e, &stages);
		nx_l_wait(L, e, &L->sbuf_free[h]);
		nx_l_loop(L, e, p->cl);
		for (; k < p->n; k++) {
			const fval *v = &p->v[k];
			if (v->kind != FV_COMP)
				continue;
			nx_l_elem_map(v->i, &m);
			if (m.e != e)
				break;
			nx_insn *in = nx_l_emit(L, e, m.op);
			in->func = (uint8_t)m.func;
			in->flags = (uint16_t)m.flags;
			in->fimm[0] = m.imm;
			in->ap[0] = operand(p, k, addr);
			for (int j = 0; j < v->i->noperands; j++)
				in->ap[1 + j] = operand(p, find(p, v->i->operands[j]), addr);
		}
		nx_l_endloop(L, e);
		nx_lsync y = nx_l_signal(L, e);
		nx_l_max(&stages, &y);
	}

	for (int k = 0; k < p->n; k++)
		if (res[k])
			nx_l_resident_read(L, p->v[k].ext, &stages);
	if (flat)
		nx_l_set_resident(L, out, h, addr[p->root], p->P, p->F, &stages);

	/* store the root */
	const fval *r = &p->v[p->root];
	nx_l_wait(L, NX_ENG_POOL, &stages);
	nx_l_wait(L, NX_ENG_POOL, &out->buf->war);
	nx_l_loop(L, NX_ENG_POOL, p->ll);
	nx_lsync st = nx_l_dma(L, NX_ENG_POOL, hbm_io(p, out), sbuf_io(p, r->dt, addr[p->root]));
	nx_l_endloop(L, NX_ENG_POOL);
	nx_l_max(&out->buf->written, &st);
	nx_l_max(&out->buf->war, &st);
	*done = stages;
	nx_l_max(done, &st);
	return NX_OK;
}

static nx_status dot_epi(nx_lower *L, void *ctx, int half, int64_t res, int64_t epi, const nx_lsync *ready,
                         nx_lsync *done)
{
	ectx *c = ctx;
	c->h = half;
	int64_t addr[FMAX];
	for (int k = 0; k < c->p->n; k++)
		addr[k] = k == c->p->dot ? res : epi + c->p->v[k].off;
	return body(L, c->p, addr, ready, c->h, c->out, done);
}

nx_status nx_l_fused(nx_lower *L, const nx_inst *f, nx_lval *const *ops, nx_lval *out)
{
	plan p;
	if (f->noperands > 8) /* beyond the fused kernel's inputs: the loop nest */
		return nx_l_fused_loop(L, f, ops, out);
	/* an input still in SBUF fixes the partitions when the body allows it */
	int64_t Pr = 0, n = nx_shape_elems(f->shape);
	for (int k = 0; k < f->noperands && k < 8 && !Pr; k++)
		if (nx_l_resident(L, ops[k], 0, 0) && ops[k]->sb_P * ops[k]->sb_F == n &&
		    nx_shape_elems(ops[k]->shape) == n)
			Pr = ops[k]->sb_P;
	if (!(Pr && build(L, f, &p, Pr)) && !plan_fusion(L, f, &p)) {
		if (nx_l_fused_loop_ok(L, f))
			return nx_l_fused_loop(L, f, ops, out); /* beyond one SBUF half: a loop nest */
		return nx_l_err(L, "fusion body is not a single kernel");
	}
	nx_status rc;
	/* bind inputs to HBM values */
	for (int k = 0; k < p.n; k++) {
		fval *v = &p.v[k];
		if (v->kind == FV_PARAM)
			v->ext = ops[v->i->a.parameter_number];
		else if (v->kind == FV_CONST && (rc = nx_l_constant(L, v->i, &v->ext)) != NX_OK)
			return rc;
	}
	if (p.dot >= 0) {
		/* the dot kernel takes the SBUF half; the epilogue follows its result */
		const nx_inst *d = p.v[p.dot].i;
		/* an operand reshaped inside the fusion aliases the parameter: the
		 * dot reads it with its own shape (differential seed 2050) */
		nx_lval dl[2], *dops[2] = {&dl[0], &dl[1]};
		for (int j = 0; j < 2; j++) {
			dl[j] = *p.v[find(&p, d->operands[j])].ext;
			dl[j].shape = d->operands[j]->shape;
		}
		nx_lval dv;
		memset(&dv, 0, sizeof dv);
		dv.dt = p.v[p.dot].dt;
		dv.shape = d->shape;
		ectx c = {&p, -1, out};
		nx_ldot_epi e = {p.bytes, dot_epi, &c};
		return nx_l_dot_epi(L, d, dops, &dv, &e);
	}
	int64_t base;
	int h;
	if ((rc = nx_l_sbuf_begin(L, p.bytes, &base, &h)) != NX_OK)
		return rc;
	nx_l_plan_kernel(L, "fused");
	nx_l_plan(L, "tiling", "[%lld, %lld] in %lld chunks of %lld", (long long)p.P, (long long)p.F, (long long)p.ll,
	          (long long)p.lc);
	nx_l_plan(L, "body", "%d values, SBUF slots of %lld bytes per partition in all", p.n, (long long)p.bytes);
	nx_l_plan(L, "loops", "chunks %lld (one loop per engine stage)", (long long)p.ll);
	int64_t addr[FMAX];
	for (int k = 0; k < p.n; k++)
		addr[k] = base + p.v[k].off;
	nx_lsync none, done;
	memset(&none, 0, sizeof none);
	if ((rc = body(L, &p, addr, &none, h, out, &done)) != NX_OK)
		return rc;
	nx_l_sbuf_end(L, h, &done);
	return NX_OK;
}
