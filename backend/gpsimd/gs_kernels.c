/* backend/gpsimd/gs_kernels.c — the kernel families, each a function
 * `void NAME(const nx_gs_tensor *t, int32_t n)` over the row layout of
 * gs.h: t[0] is the region (u8, shape {partitions, rows per partition,
 * bytes}), slots at 64-byte aligned offsets.
 *
 *   map         out[r][e] = body(in_0[r][e], ...)
 *   reduce      out_k[r] = fold over e of reducer(acc..., in[r][e]...), from init
 *   sort        in place, stable bottom-up merge sort of the row; the scratch
 *               slots hold the other half of each merge pass
 *   cumulative  reduce-window along the row (padding contributes nothing); a
 *               prefix window (size R, stride 1, low pad R-1) is a running fold
 *   scatter     one partition, one row: the whole operand, indices and updates
 *   selscat     one partition, one row: operand, source, init -> out
 * Orders of evaluation follow the evaluator's (ir/eval/), so results agree
 * bit for bit where the evaluator's order is the only freedom. */
#include "backend/gpsimd/gs.h"

#include <string.h>

static int64_t al64(int64_t x)
{
	return (x + 63) & ~(int64_t)63;
}

static int64_t esz(nx_type t)
{
	int d = nx_lower_dtype(t);
	return d < 0 ? 4 : nx_dtype_bytes[d];
}

/* slots of kind "per partition" (inits) have R elements once per partition */
static bool per_part(const nx_gs_kspec *k, int s)
{
	return (k->kind == NX_GS_REDUCE && s >= k->nin && s < 2 * k->nin) ||
	       (k->kind == NX_GS_CUMULATIVE && s == 1);
}

static int64_t slot_bytes(const nx_gs_kspec *k, int s, int64_t T)
{
	return al64((per_part(k, s) ? 1 : T) * k->slot[s].R * esz(k->slot[s].t));
}

int64_t nx_gs_slot_off(const nx_gs_kspec *k, int s, int64_t T)
{
	int64_t off = 0;
	for (int j = 0; j < s; j++)
		off += slot_bytes(k, j, T);
	return off;
}

int64_t nx_gs_region_bytes(const nx_gs_kspec *k, int64_t T)
{
	return nx_gs_slot_off(k, k->nslot, T);
}

typedef struct kctx {
	nx_gs *g;
	const nx_gs_kspec *k;
	LLVMValueRef T;            /* rows per partition (i64) */
	LLVMValueRef base;         /* this partition's region */
	LLVMValueRef sbase[NX_GS_MAXSLOT]; /* slot start in this partition */
} kctx;

static LLVMValueRef gep(nx_gs *g, LLVMValueRef p, LLVMValueRef off)
{
	return LLVMBuildGEP2(g->b, g->i8, p, &off, 1, "");
}

/* address of element e of row r in slot s (row ignored for per-partition slots) */
static LLVMValueRef elem(kctx *c, int s, LLVMValueRef r, LLVMValueRef e)
{
	nx_gs *g = c->g;
	LLVMValueRef idx = e;
	if (!per_part(c->k, s) && r)
		idx = LLVMBuildAdd(g->b, LLVMBuildMul(g->b, r, nx_gs_c64(g, c->k->slot[s].R), ""), e, "");
	return gep(g, c->sbase[s], LLVMBuildMul(g->b, idx, nx_gs_c64(g, esz(c->k->slot[s].t)), ""));
}

static nx_gs_val ld(kctx *c, int s, LLVMValueRef r, LLVMValueRef e)
{
	return nx_gs_load(c->g, c->k->slot[s].t, elem(c, s, r, e));
}

static int call_comp(kctx *c, const nx_comp *f, const nx_gs_val *args, nx_gs_val *out, int maxout)
{
	return nx_gs_comp(c->g, f, args, out, maxout);
}

/* ------------------------------------------------------------ families */
static int row_map(kctx *c, LLVMValueRef r)
{
	nx_gs *g = c->g;
	const nx_gs_kspec *k = c->k;
	nx_gs_loop l = nx_gs_for(g, nx_gs_c64(g, 0), nx_gs_c64(g, k->slot[0].R), "e");
	LLVMValueRef e = nx_gs_idx(g, &l);
	nx_gs_val a[NX_GS_MAXSLOT], o;
	for (int s = 0; s < k->nin; s++)
		a[s] = ld(c, s, r, e);
	if (call_comp(c, k->inst->called[0], a, &o, 1) != 1)
		return -1;
	nx_gs_store(g, nx_gs_convert(g, o, k->slot[k->nin].t), elem(c, k->nin, r, e));
	nx_gs_endfor(g, &l);
	return 0;
}

static int row_reduce(kctx *c, LLVMValueRef r)
{
	nx_gs *g = c->g;
	const nx_gs_kspec *k = c->k;
	int n = k->nin;
	LLVMValueRef acc[NX_GS_MAXSLOT];
	for (int j = 0; j < n; j++) {
		acc[j] = nx_gs_var(g, nx_gs_ctype(g, k->slot[n + j].t), "acc");
		LLVMBuildStore(g->b, ld(c, n + j, NULL, nx_gs_c64(g, 0)).v, acc[j]);
	}
	nx_gs_loop l = nx_gs_for(g, nx_gs_c64(g, 0), nx_gs_c64(g, k->slot[0].R), "e");
	LLVMValueRef e = nx_gs_idx(g, &l);
	nx_gs_val a[2 * NX_GS_MAXSLOT], o[NX_GS_MAXSLOT];
	for (int j = 0; j < n; j++) {
		a[j] = (nx_gs_val){LLVMBuildLoad2(g->b, nx_gs_ctype(g, k->slot[n + j].t), acc[j], ""), k->slot[n + j].t};
		a[n + j] = ld(c, j, r, e);
	}
	if (call_comp(c, k->inst->called[0], a, o, n) != n)
		return nx_gs_fail(g, "reducer '%s' does not return %d values", k->inst->called[0]->name, n);
	for (int j = 0; j < n; j++)
		LLVMBuildStore(g->b, o[j].v, acc[j]);
	nx_gs_endfor(g, &l);
	for (int j = 0; j < n; j++) {
		nx_gs_val v = {LLVMBuildLoad2(g->b, nx_gs_ctype(g, k->slot[n + j].t), acc[j], ""), k->slot[n + j].t};
		nx_gs_store(g, v, elem(c, 2 * n + j, r, nx_gs_c64(g, 0)));
	}
	return 0;
}

static LLVMValueRef imin(nx_gs *g, LLVMValueRef a, LLVMValueRef b)
{
	return LLVMBuildSelect(g->b, LLVMBuildICmp(g->b, LLVMIntSLT, a, b, ""), a, b, "");
}

static LLVMValueRef ldv(nx_gs *g, LLVMValueRef var)
{
	return LLVMBuildLoad2(g->b, g->i64, var, "");
}

static LLVMBasicBlockRef block(nx_gs *g, const char *name)
{
	return LLVMAppendBasicBlockInContext(g->ctx, g->fn, name);
}

/* element address in buffer (0: operand slot, 1: scratch slot) of operand j */
static LLVMValueRef sort_elem(kctx *c, LLVMValueRef which, int j, LLVMValueRef r, LLVMValueRef e)
{
	nx_gs *g = c->g;
	int n = c->k->nin;
	LLVMValueRef a = elem(c, j, r, e), b = elem(c, n + j, r, e);
	return LLVMBuildSelect(g->b, which, b, a, "");
}

static int row_sort(kctx *c, LLVMValueRef r)
{
	nx_gs *g = c->g;
	const nx_gs_kspec *k = c->k;
	int n = k->nin;
	int64_t R = k->slot[0].R;
	LLVMBuilderRef b = g->b;
	LLVMValueRef src = nx_gs_var(g, g->i1, "src"), w = nx_gs_var(g, g->i64, "w"), lo = nx_gs_var(g, g->i64, "lo");
	LLVMValueRef vi = nx_gs_var(g, g->i64, "i"), vj = nx_gs_var(g, g->i64, "j"), vk = nx_gs_var(g, g->i64, "k");
	LLVMBuildStore(b, LLVMConstInt(g->i1, 0, 0), src);
	LLVMBuildStore(b, nx_gs_c64(g, 1), w);
	LLVMBasicBlockRef wc = block(g, "wcond"), wb = block(g, "wbody"), lc = block(g, "lcond"), lb = block(g, "lbody");
	LLVMBasicBlockRef mc = block(g, "mcond"), mb = block(g, "mbody"), cmpb = block(g, "cmp"), tr = block(g, "right");
	LLVMBasicBlockRef tl = block(g, "left"), mn = block(g, "mnext"), le = block(g, "lend"), we = block(g, "wend");
	LLVMBuildBr(b, wc);
	/* while (w < R) */
	LLVMPositionBuilderAtEnd(b, wc);
	LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, ldv(g, w), nx_gs_c64(g, R), ""), wb, we);
	LLVMPositionBuilderAtEnd(b, wb);
	LLVMBuildStore(b, nx_gs_c64(g, 0), lo);
	LLVMBuildBr(b, lc);
	/* for lo < R step 2w */
	LLVMPositionBuilderAtEnd(b, lc);
	LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, ldv(g, lo), nx_gs_c64(g, R), ""), lb, le);
	LLVMPositionBuilderAtEnd(b, lb);
	LLVMValueRef mid = imin(g, LLVMBuildAdd(b, ldv(g, lo), ldv(g, w), ""), nx_gs_c64(g, R));
	LLVMValueRef hi = imin(g, LLVMBuildAdd(b, ldv(g, lo), LLVMBuildShl(b, ldv(g, w), nx_gs_c64(g, 1), ""), ""),
	                       nx_gs_c64(g, R));
	LLVMValueRef vmid = nx_gs_var(g, g->i64, "mid"), vhi = nx_gs_var(g, g->i64, "hi");
	LLVMBuildStore(b, mid, vmid);
	LLVMBuildStore(b, hi, vhi);
	LLVMBuildStore(b, ldv(g, lo), vi);
	LLVMBuildStore(b, mid, vj);
	LLVMBuildStore(b, ldv(g, lo), vk);
	LLVMBuildBr(b, mc);
	/* while (k < hi) */
	LLVMPositionBuilderAtEnd(b, mc);
	LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, ldv(g, vk), ldv(g, vhi), ""), mb, mn);
	LLVMPositionBuilderAtEnd(b, mb);
	/* right when j < hi and (i >= mid or less(src[j], src[i])) */
	LLVMValueRef jok = LLVMBuildICmp(b, LLVMIntSLT, ldv(g, vj), ldv(g, vhi), "");
	LLVMValueRef idone = LLVMBuildICmp(b, LLVMIntSGE, ldv(g, vi), ldv(g, vmid), "");
	LLVMBasicBlockRef jcheck = block(g, "jcheck");
	LLVMBuildCondBr(b, jok, jcheck, tl);
	LLVMPositionBuilderAtEnd(b, jcheck);
	LLVMBuildCondBr(b, idone, tr, cmpb);
	LLVMPositionBuilderAtEnd(b, cmpb);
	LLVMValueRef s = LLVMBuildLoad2(b, g->i1, src, "");
	nx_gs_val a[2 * NX_GS_MAXSLOT], o;
	for (int j = 0; j < n; j++) {
		a[2 * j] = nx_gs_load(g, k->slot[j].t, sort_elem(c, s, j, r, ldv(g, vj)));
		a[2 * j + 1] = nx_gs_load(g, k->slot[j].t, sort_elem(c, s, j, r, ldv(g, vi)));
	}
	if (call_comp(c, k->inst->called[0], a, &o, 1) != 1 || o.t != NX_PRED)
		return nx_gs_fail(g, "comparator '%s' does not return one pred", k->inst->called[0]->name);
	LLVMBuildCondBr(b, o.v, tr, tl);
	/* move one element of every operand from src[x] to dst[k] */
	for (int side = 0; side < 2; side++) {
		LLVMPositionBuilderAtEnd(b, side ? tr : tl);
		LLVMValueRef from = side ? vj : vi;
		LLVMValueRef sv = LLVMBuildLoad2(b, g->i1, src, ""), dv = LLVMBuildNot(b, sv, "");
		for (int j = 0; j < n; j++) {
			LLVMTypeRef st = LLVMIntTypeInContext(g->ctx, (unsigned)(8 * esz(k->slot[j].t)));
			LLVMValueRef x = LLVMBuildLoad2(b, st, sort_elem(c, sv, j, r, ldv(g, from)), "");
			LLVMBuildStore(b, x, sort_elem(c, dv, j, r, ldv(g, vk)));
		}
		LLVMBuildStore(b, LLVMBuildAdd(b, ldv(g, from), nx_gs_c64(g, 1), ""), from);
		LLVMBuildStore(b, LLVMBuildAdd(b, ldv(g, vk), nx_gs_c64(g, 1), ""), vk);
		LLVMBuildBr(b, mc);
	}
	LLVMPositionBuilderAtEnd(b, mn);
	LLVMBuildStore(b, LLVMBuildAdd(b, ldv(g, lo), LLVMBuildShl(b, ldv(g, w), nx_gs_c64(g, 1), ""), ""), lo);
	LLVMBuildBr(b, lc);
	LLVMPositionBuilderAtEnd(b, le);
	LLVMBuildStore(b, LLVMBuildNot(b, LLVMBuildLoad2(b, g->i1, src, ""), ""), src);
	LLVMBuildStore(b, LLVMBuildShl(b, ldv(g, w), nx_gs_c64(g, 1), ""), w);
	LLVMBuildBr(b, wc);
	LLVMPositionBuilderAtEnd(b, we);
	/* the result sits in the scratch slots after an odd number of passes */
	LLVMBasicBlockRef cp = block(g, "copyback"), done = block(g, "sorted");
	LLVMBuildCondBr(b, LLVMBuildLoad2(b, g->i1, src, ""), cp, done);
	LLVMPositionBuilderAtEnd(b, cp);
	nx_gs_loop l = nx_gs_for(g, nx_gs_c64(g, 0), nx_gs_c64(g, R), "e");
	LLVMValueRef e = nx_gs_idx(g, &l);
	for (int j = 0; j < n; j++) {
		LLVMTypeRef st = LLVMIntTypeInContext(g->ctx, (unsigned)(8 * esz(k->slot[j].t)));
		LLVMBuildStore(b, LLVMBuildLoad2(b, st, elem(c, n + j, r, e), ""), elem(c, j, r, e));
	}
	nx_gs_endfor(g, &l);
	LLVMBuildBr(b, done);
	LLVMPositionBuilderAtEnd(b, done);
	return 0;
}

static int row_cumulative(kctx *c, LLVMValueRef r)
{
	nx_gs *g = c->g;
	const nx_gs_kspec *k = c->k;
	LLVMBuilderRef b = g->b;
	int64_t R = k->slot[0].R, Ro = k->slot[2].R;
	nx_type at = k->slot[1].t;
	LLVMValueRef acc = nx_gs_var(g, nx_gs_ctype(g, at), "acc");
	const nx_comp *f = k->inst->called[0];
	nx_gs_val a[2], o;
	bool prefix = k->win == R && k->wstride == 1 && k->wpad == R - 1 && Ro == R;
	if (prefix) { /* out[j] = fold(init, x_0..x_j): one running fold */
		LLVMBuildStore(b, ld(c, 1, NULL, nx_gs_c64(g, 0)).v, acc);
		nx_gs_loop l = nx_gs_for(g, nx_gs_c64(g, 0), nx_gs_c64(g, R), "j");
		LLVMValueRef j = nx_gs_idx(g, &l);
		a[0] = (nx_gs_val){LLVMBuildLoad2(b, nx_gs_ctype(g, at), acc, ""), at};
		a[1] = ld(c, 0, r, j);
		if (call_comp(c, f, a, &o, 1) != 1)
			return -1;
		LLVMBuildStore(b, o.v, acc);
		nx_gs_store(g, o, elem(c, 2, r, j));
		nx_gs_endfor(g, &l);
		return 0;
	}
	nx_gs_loop l = nx_gs_for(g, nx_gs_c64(g, 0), nx_gs_c64(g, Ro), "j");
	LLVMValueRef j = nx_gs_idx(g, &l);
	LLVMBuildStore(b, ld(c, 1, NULL, nx_gs_c64(g, 0)).v, acc);
	LLVMValueRef start = LLVMBuildSub(b, LLVMBuildMul(b, j, nx_gs_c64(g, k->wstride), ""), nx_gs_c64(g, k->wpad), "");
	nx_gs_loop lw = nx_gs_for(g, nx_gs_c64(g, 0), nx_gs_c64(g, k->win), "w");
	LLVMValueRef pos = LLVMBuildAdd(b, start, nx_gs_idx(g, &lw), "");
	LLVMValueRef in = LLVMBuildAnd(b, LLVMBuildICmp(b, LLVMIntSGE, pos, nx_gs_c64(g, 0), ""),
	                               LLVMBuildICmp(b, LLVMIntSLT, pos, nx_gs_c64(g, R), ""), "");
	LLVMBasicBlockRef yes = block(g, "inwin"), next = block(g, "wnext");
	LLVMBuildCondBr(b, in, yes, next);
	LLVMPositionBuilderAtEnd(b, yes);
	a[0] = (nx_gs_val){LLVMBuildLoad2(b, nx_gs_ctype(g, at), acc, ""), at};
	a[1] = ld(c, 0, r, pos);
	if (call_comp(c, f, a, &o, 1) != 1)
		return -1;
	LLVMBuildStore(b, o.v, acc);
	LLVMBuildBr(b, next);
	LLVMPositionBuilderAtEnd(b, next);
	nx_gs_endfor(g, &lw);
	nx_gs_store(g, (nx_gs_val){LLVMBuildLoad2(b, nx_gs_ctype(g, at), acc, ""), at}, elem(c, 2, r, j));
	nx_gs_endfor(g, &l);
	return 0;
}

/* top-k: slot 0 the row (R), 1 the values (K), 2 the s32 indices (K); the
 * best m so far kept sorted, a new element inserted after its equals */
static int row_topk(kctx *c, LLVMValueRef r)
{
	nx_gs *g = c->g;
	const nx_gs_kspec *k = c->k;
	LLVMBuilderRef b = g->b;
	int64_t R = k->slot[0].R, K = k->slot[1].R;
	nx_type t = k->slot[0].t;
	LLVMTypeRef st = LLVMIntTypeInContext(g->ctx, (unsigned)(8 * esz(t)));
	LLVMValueRef m = nx_gs_var(g, g->i64, "m"), j = nx_gs_var(g, g->i64, "j"), q = nx_gs_var(g, g->i64, "q");
	LLVMBuildStore(b, nx_gs_c64(g, 0), m);
	nx_gs_loop l = nx_gs_for(g, nx_gs_c64(g, 0), nx_gs_c64(g, R), "e");
	LLVMValueRef e = nx_gs_idx(g, &l);
	LLVMValueRef key = nx_gs_order_key(g, ld(c, 0, r, e));
	LLVMBuildStore(b, ldv(g, m), j);
	LLVMBasicBlockRef sc = block(g, "scan"), sk = block(g, "scank"), sd = block(g, "scanned");
	LLVMBasicBlockRef ins = block(g, "insert"), shc = block(g, "shift"), shb = block(g, "shiftb"), put = block(g, "put");
	LLVMBasicBlockRef next = block(g, "enext");
	LLVMBuildBr(b, sc);
	LLVMPositionBuilderAtEnd(b, sc); /* while j > 0 && better(key, vals[j-1]) */
	LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSGT, ldv(g, j), nx_gs_c64(g, 0), ""), sk, sd);
	LLVMPositionBuilderAtEnd(b, sk);
	LLVMValueRef jm1 = LLVMBuildSub(b, ldv(g, j), nx_gs_c64(g, 1), "");
	LLVMValueRef ok = nx_gs_order_key(g, ld(c, 1, r, jm1));
	LLVMValueRef better = LLVMBuildICmp(b, k->largest ? LLVMIntSGT : LLVMIntSLT, key, ok, "");
	LLVMBasicBlockRef dec = block(g, "dec");
	LLVMBuildCondBr(b, better, dec, sd);
	LLVMPositionBuilderAtEnd(b, dec);
	LLVMBuildStore(b, jm1, j);
	LLVMBuildBr(b, sc);
	LLVMPositionBuilderAtEnd(b, sd);
	LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, ldv(g, j), nx_gs_c64(g, K), ""), ins, next);
	LLVMPositionBuilderAtEnd(b, ins); /* q = min(m, K-1) down to j+1: shift */
	LLVMValueRef last = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSLT, ldv(g, m), nx_gs_c64(g, K), ""), ldv(g, m),
	                                    nx_gs_c64(g, K - 1), "");
	LLVMBuildStore(b, last, q);
	LLVMBuildBr(b, shc);
	LLVMPositionBuilderAtEnd(b, shc);
	LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSGT, ldv(g, q), ldv(g, j), ""), shb, put);
	LLVMPositionBuilderAtEnd(b, shb);
	LLVMValueRef qm1 = LLVMBuildSub(b, ldv(g, q), nx_gs_c64(g, 1), "");
	LLVMBuildStore(b, LLVMBuildLoad2(b, st, elem(c, 1, r, qm1), ""), elem(c, 1, r, ldv(g, q)));
	LLVMBuildStore(b, LLVMBuildLoad2(b, g->i32, elem(c, 2, r, qm1), ""), elem(c, 2, r, ldv(g, q)));
	LLVMBuildStore(b, qm1, q);
	LLVMBuildBr(b, shc);
	LLVMPositionBuilderAtEnd(b, put);
	LLVMBuildStore(b, LLVMBuildLoad2(b, st, elem(c, 0, r, e), ""), elem(c, 1, r, ldv(g, j)));
	LLVMBuildStore(b, LLVMBuildTrunc(b, e, g->i32, ""), elem(c, 2, r, ldv(g, j)));
	LLVMValueRef mn = LLVMBuildAdd(b, ldv(g, m), nx_gs_c64(g, 1), "");
	LLVMBuildStore(b, LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSLT, ldv(g, m), nx_gs_c64(g, K), ""), mn, ldv(g, m), ""), m);
	LLVMBuildBr(b, next);
	LLVMPositionBuilderAtEnd(b, next);
	nx_gs_endfor(g, &l);
	return 0;
}

static bool has(const nx_ivec *v, int64_t x)
{
	for (int k = 0; k < v->n; k++)
		if (v->v[k] == x)
			return true;
	return false;
}

static void strides(const nx_shape *s, int64_t *st)
{
	int64_t m = 1;
	for (int d = s->rank - 1; d >= 0; d--)
		st[d] = m, m *= s->dims[d];
}

/* scatter (one operand): slot 0 operand/result, 1 indices, 2 updates */
static int whole_scatter(kctx *c)
{
	nx_gs *g = c->g;
	LLVMBuilderRef b = g->b;
	const nx_inst *i = c->k->inst;
	const nx_scatter_dnums *sd = &i->a.scatter;
	const nx_shape *os = i->operands[0]->shape, *is = i->operands[1]->shape, *us = i->operands[2]->shape;
	int64_t ostr[NX_MAX_RANK], istr[NX_MAX_RANK], ustr[NX_MAX_RANK], wsize[NX_MAX_RANK];
	int wod[NX_MAX_RANK], nwin = 0;
	strides(os, ostr), strides(is, istr), strides(us, ustr);
	for (int d = 0; d < os->rank; d++) {
		wsize[d] = 1;
		if (!has(&sd->inserted_window_dims, d) && !has(&sd->input_batching_dims, d))
			wod[nwin++] = d;
	}
	if (nwin != sd->update_window_dims.n || sd->input_batching_dims.n)
		return nx_gs_fail(g, "scatter dimension numbers with batching dims");
	for (int k = 0; k < nwin; k++)
		wsize[wod[k]] = us->dims[sd->update_window_dims.v[k]];
	int64_t ivd = sd->index_vector_dim;
	nx_gs_loop l = nx_gs_for(g, nx_gs_c64(g, 0), nx_gs_c64(g, nx_shape_elems(us)), "u");
	LLVMValueRef u = nx_gs_idx(g, &l);
	LLVMValueRef ui[NX_MAX_RANK];
	for (int d = 0; d < us->rank; d++)
		ui[d] = LLVMBuildURem(b, LLVMBuildUDiv(b, u, nx_gs_c64(g, ustr[d]), ""), nx_gs_c64(g, us->dims[d]), "");
	/* index tensor position of this update's batch index */
	LLVMValueRef ibase = nx_gs_c64(g, 0);
	int bpos = 0;
	for (int d = 0; d < us->rank; d++) {
		if (has(&sd->update_window_dims, d))
			continue;
		int e = bpos < ivd ? bpos : bpos + 1; /* indices dim holding batch position bpos */
		if (ivd >= is->rank)
			e = bpos;
		ibase = LLVMBuildAdd(b, ibase, LLVMBuildMul(b, ui[d], nx_gs_c64(g, istr[e]), ""), "");
		bpos++;
	}
	LLVMValueRef fits = LLVMConstInt(g->i1, 1, 0), lin = nx_gs_c64(g, 0);
	for (int k = 0; k < sd->scatter_dims_to_operand_dims.n; k++) {
		int64_t od = sd->scatter_dims_to_operand_dims.v[k];
		LLVMValueRef at = ivd < is->rank ? LLVMBuildAdd(b, ibase, nx_gs_c64(g, k * istr[ivd]), "") : ibase;
		nx_gs_val iv = ld(c, 1, NULL, at);
		LLVMValueRef st = nx_type_is_int(iv.t) && (iv.t == NX_U8 || iv.t == NX_U16 || iv.t == NX_U32 || iv.t == NX_U64)
		                      ? LLVMBuildZExt(b, iv.v, g->i64, "")
		                      : LLVMBuildSExt(b, iv.v, g->i64, "");
		int64_t full = od == c->k->pdim ? c->k->pfull : os->dims[od];
		fits = LLVMBuildAnd(b, fits, LLVMBuildICmp(b, LLVMIntSGE, st, nx_gs_c64(g, 0), ""), "");
		fits = LLVMBuildAnd(b, fits, LLVMBuildICmp(b, LLVMIntSLE, st, nx_gs_c64(g, full - wsize[od]), ""), "");
		if (od == c->k->pdim) { /* a part of the operand: rows [r0, r0 + n) of dim od (slot 3 holds r0) */
			LLVMValueRef r0 = LLVMBuildSExt(b, ld(c, 3, NULL, nx_gs_c64(g, 0)).v, g->i64, "r0");
			st = LLVMBuildSub(b, st, r0, "");
			fits = LLVMBuildAnd(b, fits, LLVMBuildICmp(b, LLVMIntSGE, st, nx_gs_c64(g, 0), ""), "");
			fits = LLVMBuildAnd(b, fits, LLVMBuildICmp(b, LLVMIntSLE, st, nx_gs_c64(g, os->dims[od] - wsize[od]), ""), "");
		}
		lin = LLVMBuildAdd(b, lin, LLVMBuildMul(b, st, nx_gs_c64(g, ostr[od]), ""), "");
	}
	for (int k = 0; k < nwin; k++)
		lin = LLVMBuildAdd(b, lin, LLVMBuildMul(b, ui[sd->update_window_dims.v[k]], nx_gs_c64(g, ostr[wod[k]]), ""), "");
	LLVMBasicBlockRef yes = block(g, "fits"), next = block(g, "unext");
	LLVMBuildCondBr(b, fits, yes, next);
	LLVMPositionBuilderAtEnd(b, yes);
	nx_gs_val a[2], o;
	a[0] = ld(c, 0, NULL, lin);
	a[1] = ld(c, 2, NULL, u);
	if (call_comp(c, i->called[0], a, &o, 1) != 1)
		return -1;
	nx_gs_store(g, nx_gs_convert(g, o, c->k->slot[0].t), elem(c, 0, NULL, lin));
	LLVMBuildBr(b, next);
	LLVMPositionBuilderAtEnd(b, next);
	nx_gs_endfor(g, &l);
	return 0;
}

/* select-and-scatter: slot 0 operand, 1 source, 2 init, 3 result */
static int whole_selscat(kctx *c)
{
	nx_gs *g = c->g;
	LLVMBuilderRef b = g->b;
	const nx_inst *i = c->k->inst;
	const nx_shape *os = i->operands[0]->shape, *ss = i->operands[1]->shape;
	const nx_window *w = &i->a.window;
	int64_t ostr[NX_MAX_RANK], sstr[NX_MAX_RANK], wstr[NX_MAX_RANK], nw = 1;
	strides(os, ostr), strides(ss, sstr);
	for (int d = os->rank - 1; d >= 0; d--)
		wstr[d] = nw, nw *= w->dims[d].size;
	nx_type ot = c->k->slot[0].t, rt = c->k->slot[3].t;
	int64_t n = nx_shape_elems(os);
	nx_gs_val init = ld(c, 2, NULL, nx_gs_c64(g, 0));
	nx_gs_loop li = nx_gs_for(g, nx_gs_c64(g, 0), nx_gs_c64(g, n), "x");
	nx_gs_store(g, init, elem(c, 3, NULL, nx_gs_idx(g, &li)));
	nx_gs_endfor(g, &li);
	LLVMValueRef best = nx_gs_var(g, g->i64, "best");
	nx_gs_loop l = nx_gs_for(g, nx_gs_c64(g, 0), nx_gs_c64(g, nx_shape_elems(ss)), "s");
	LLVMValueRef s = nx_gs_idx(g, &l);
	LLVMBuildStore(b, nx_gs_c64(g, -1), best);
	nx_gs_loop lk = nx_gs_for(g, nx_gs_c64(g, 0), nx_gs_c64(g, nw), "k");
	LLVMValueRef kk = nx_gs_idx(g, &lk);
	LLVMValueRef ok = LLVMConstInt(g->i1, 1, 0), src = nx_gs_c64(g, 0);
	for (int d = 0; d < os->rank; d++) {
		const nx_window_dim *wd = &w->dims[d];
		int64_t st = wd->stride > 0 ? wd->stride : 1, dil = wd->window_dilation > 0 ? wd->window_dilation : 1;
		LLVMValueRef od = LLVMBuildURem(b, LLVMBuildUDiv(b, s, nx_gs_c64(g, sstr[d]), ""), nx_gs_c64(g, ss->dims[d]), "");
		LLVMValueRef kd = LLVMBuildURem(b, LLVMBuildUDiv(b, kk, nx_gs_c64(g, wstr[d]), ""), nx_gs_c64(g, wd->size), "");
		LLVMValueRef pos = LLVMBuildAdd(b, LLVMBuildSub(b, LLVMBuildMul(b, od, nx_gs_c64(g, st), ""), nx_gs_c64(g, wd->pad_lo), ""),
		                                LLVMBuildMul(b, kd, nx_gs_c64(g, dil), ""), "");
		ok = LLVMBuildAnd(b, ok, LLVMBuildICmp(b, LLVMIntSGE, pos, nx_gs_c64(g, 0), ""), "");
		ok = LLVMBuildAnd(b, ok, LLVMBuildICmp(b, LLVMIntSLT, pos, nx_gs_c64(g, os->dims[d]), ""), "");
		src = LLVMBuildAdd(b, src, LLVMBuildMul(b, pos, nx_gs_c64(g, ostr[d]), ""), "");
	}
	LLVMBasicBlockRef valid = block(g, "valid"), first = block(g, "first"), sel = block(g, "select");
	LLVMBasicBlockRef take = block(g, "take"), knext = block(g, "knext");
	LLVMBuildCondBr(b, ok, valid, knext);
	LLVMPositionBuilderAtEnd(b, valid);
	LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, ldv(g, best), nx_gs_c64(g, 0), ""), first, sel);
	LLVMPositionBuilderAtEnd(b, first);
	LLVMBuildBr(b, take);
	LLVMPositionBuilderAtEnd(b, sel);
	nx_gs_val a[2], o;
	a[0] = nx_gs_load(g, ot, elem(c, 0, NULL, ldv(g, best)));
	a[1] = nx_gs_load(g, ot, elem(c, 0, NULL, src));
	if (call_comp(c, i->called[0], a, &o, 1) != 1 || o.t != NX_PRED)
		return nx_gs_fail(g, "select '%s' does not return one pred", i->called[0]->name);
	LLVMBuildCondBr(b, o.v, knext, take);
	LLVMPositionBuilderAtEnd(b, take);
	LLVMBuildStore(b, src, best);
	LLVMBuildBr(b, knext);
	LLVMPositionBuilderAtEnd(b, knext);
	nx_gs_endfor(g, &lk);
	LLVMBasicBlockRef apply = block(g, "apply"), snext = block(g, "snext");
	LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSGE, ldv(g, best), nx_gs_c64(g, 0), ""), apply, snext);
	LLVMPositionBuilderAtEnd(b, apply);
	a[0] = nx_gs_load(g, rt, elem(c, 3, NULL, ldv(g, best)));
	a[1] = ld(c, 1, NULL, s);
	if (call_comp(c, i->called[1], a, &o, 1) != 1)
		return -1;
	nx_gs_store(g, nx_gs_convert(g, o, rt), elem(c, 3, NULL, ldv(g, best)));
	LLVMBuildBr(b, snext);
	LLVMPositionBuilderAtEnd(b, snext);
	nx_gs_endfor(g, &l);
	return 0;
}

nx_status nx_gs_build(nx_gs *g, const nx_gs_kspec *k, const char *name)
{
	LLVMTypeRef pt[2] = {g->ptr, g->i32};
	LLVMTypeRef ft = LLVMFunctionType(g->vd, pt, 2, 0);
	g->fn = LLVMAddFunction(g->mod, name, ft);
	g->inst = k->inst;
	LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "entry");
	LLVMPositionBuilderAtEnd(g->b, entry);
	LLVMBuilderRef b = g->b;
	LLVMValueRef t = LLVMGetParam(g->fn, 0);
	kctx c = {g, k, NULL, NULL, {0}};
	LLVMValueRef data = LLVMBuildLoad2(b, g->ptr, t, "data");
	LLVMValueRef P = LLVMBuildLoad2(b, g->i64, gep(g, t, nx_gs_c64(g, NX_GS_T_SHAPE)), "P");
	c.T = LLVMBuildLoad2(b, g->i64, gep(g, t, nx_gs_c64(g, NX_GS_T_SHAPE + 8)), "T");
	LLVMValueRef ps = LLVMBuildLoad2(b, g->i64, gep(g, t, nx_gs_c64(g, NX_GS_T_STRIDE)), "pstride");
	nx_gs_loop lp = nx_gs_for(g, nx_gs_c64(g, 0), P, "p");
	c.base = gep(g, data, LLVMBuildMul(b, nx_gs_idx(g, &lp), ps, ""));
	LLVMValueRef off = nx_gs_c64(g, 0);
	for (int s = 0; s < k->nslot; s++) {
		c.sbase[s] = gep(g, c.base, off);
		LLVMValueRef rows = per_part(k, s) ? nx_gs_c64(g, 1) : c.T;
		LLVMValueRef by = LLVMBuildMul(b, rows, nx_gs_c64(g, k->slot[s].R * esz(k->slot[s].t)), "");
		by = LLVMBuildAnd(b, LLVMBuildAdd(b, by, nx_gs_c64(g, 63), ""), nx_gs_c64(g, ~(int64_t)63), "");
		off = LLVMBuildAdd(b, off, by, "");
	}
	int rc = 0;
	if (k->kind == NX_GS_SCATTER)
		rc = whole_scatter(&c);
	else if (k->kind == NX_GS_SELSCAT)
		rc = whole_selscat(&c);
	else {
		nx_gs_loop lr = nx_gs_for(g, nx_gs_c64(g, 0), c.T, "r");
		LLVMValueRef r = nx_gs_idx(g, &lr);
		switch (k->kind) {
		case NX_GS_MAP: rc = row_map(&c, r); break;
		case NX_GS_REDUCE: rc = row_reduce(&c, r); break;
		case NX_GS_SORT: rc = row_sort(&c, r); break;
		case NX_GS_CUMULATIVE: rc = row_cumulative(&c, r); break;
		case NX_GS_TOPK: rc = row_topk(&c, r); break;
		default: rc = nx_gs_fail(g, "no kernel family");
		}
		if (rc == 0)
			nx_gs_endfor(g, &lr);
	}
	if (rc < 0)
		return nx_diag_set(g->d, NX_ERR_INPUT, NULL, 0, 0, "instruction '%s': %s on GpSimd: %s", k->inst->name,
		                   nx_opcode_name(k->inst->op), g->err ? g->err : "unsupported");
	nx_gs_endfor(g, &lp);
	LLVMBuildRetVoid(b);
	return NX_OK;
}
