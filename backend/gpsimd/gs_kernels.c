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
	return nx_llvm.LLVMBuildGEP2(g->b, g->i8, p, &off, 1, "");
}

/* address of element e of row r in slot s (row ignored for per-partition slots) */
static LLVMValueRef elem(kctx *c, int s, LLVMValueRef r, LLVMValueRef e)
{
	nx_gs *g = c->g;
	LLVMValueRef idx = e;
	if (!per_part(c->k, s) && r)
		idx = nx_llvm.LLVMBuildAdd(g->b, nx_llvm.LLVMBuildMul(g->b, r, nx_gs_c64(g, c->k->slot[s].R), ""), e, "");
	return gep(g, c->sbase[s], nx_llvm.LLVMBuildMul(g->b, idx, nx_gs_c64(g, esz(c->k->slot[s].t)), ""));
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
		nx_llvm.LLVMBuildStore(g->b, ld(c, n + j, NULL, nx_gs_c64(g, 0)).v, acc[j]);
	}
	nx_gs_loop l = nx_gs_for(g, nx_gs_c64(g, 0), nx_gs_c64(g, k->slot[0].R), "e");
	LLVMValueRef e = nx_gs_idx(g, &l);
	nx_gs_val a[2 * NX_GS_MAXSLOT], o[NX_GS_MAXSLOT];
	for (int j = 0; j < n; j++) {
		a[j] = (nx_gs_val){nx_llvm.LLVMBuildLoad2(g->b, nx_gs_ctype(g, k->slot[n + j].t), acc[j], ""), k->slot[n + j].t};
		a[n + j] = ld(c, j, r, e);
	}
	if (call_comp(c, k->inst->called[0], a, o, n) != n)
		return nx_gs_fail(g, "reducer '%s' does not return %d values", k->inst->called[0]->name, n);
	for (int j = 0; j < n; j++)
		nx_llvm.LLVMBuildStore(g->b, o[j].v, acc[j]);
	nx_gs_endfor(g, &l);
	for (int j = 0; j < n; j++) {
		nx_gs_val v = {nx_llvm.LLVMBuildLoad2(g->b, nx_gs_ctype(g, k->slot[n + j].t), acc[j], ""), k->slot[n + j].t};
		nx_gs_store(g, v, elem(c, 2 * n + j, r, nx_gs_c64(g, 0)));
	}
	return 0;
}

static LLVMValueRef imin(nx_gs *g, LLVMValueRef a, LLVMValueRef b)
{
	return nx_llvm.LLVMBuildSelect(g->b, nx_llvm.LLVMBuildICmp(g->b, LLVMIntSLT, a, b, ""), a, b, "");
}

static LLVMValueRef ldv(nx_gs *g, LLVMValueRef var)
{
	return nx_llvm.LLVMBuildLoad2(g->b, g->i64, var, "");
}

static LLVMBasicBlockRef block(nx_gs *g, const char *name)
{
	return nx_llvm.LLVMAppendBasicBlockInContext(g->ctx, g->fn, name);
}

/* element address in buffer (0: operand slot, 1: scratch slot) of operand j */
static LLVMValueRef sort_elem(kctx *c, LLVMValueRef which, int j, LLVMValueRef r, LLVMValueRef e)
{
	nx_gs *g = c->g;
	int n = c->k->nin;
	LLVMValueRef a = elem(c, j, r, e), b = elem(c, n + j, r, e);
	return nx_llvm.LLVMBuildSelect(g->b, which, b, a, "");
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
	nx_llvm.LLVMBuildStore(b, nx_llvm.LLVMConstInt(g->i1, 0, 0), src);
	nx_llvm.LLVMBuildStore(b, nx_gs_c64(g, 1), w);
	LLVMBasicBlockRef wc = block(g, "wcond"), wb = block(g, "wbody"), lc = block(g, "lcond"), lb = block(g, "lbody");
	LLVMBasicBlockRef mc = block(g, "mcond"), mb = block(g, "mbody"), cmpb = block(g, "cmp"), tr = block(g, "right");
	LLVMBasicBlockRef tl = block(g, "left"), mn = block(g, "mnext"), le = block(g, "lend"), we = block(g, "wend");
	nx_llvm.LLVMBuildBr(b, wc);
	/* while (w < R) */
	nx_llvm.LLVMPositionBuilderAtEnd(b, wc);
	nx_llvm.LLVMBuildCondBr(b, nx_llvm.LLVMBuildICmp(b, LLVMIntSLT, ldv(g, w), nx_gs_c64(g, R), ""), wb, we);
	nx_llvm.LLVMPositionBuilderAtEnd(b, wb);
	nx_llvm.LLVMBuildStore(b, nx_gs_c64(g, 0), lo);
	nx_llvm.LLVMBuildBr(b, lc);
	/* for lo < R step 2w */
	nx_llvm.LLVMPositionBuilderAtEnd(b, lc);
	nx_llvm.LLVMBuildCondBr(b, nx_llvm.LLVMBuildICmp(b, LLVMIntSLT, ldv(g, lo), nx_gs_c64(g, R), ""), lb, le);
	nx_llvm.LLVMPositionBuilderAtEnd(b, lb);
	LLVMValueRef mid = imin(g, nx_llvm.LLVMBuildAdd(b, ldv(g, lo), ldv(g, w), ""), nx_gs_c64(g, R));
	LLVMValueRef hi = imin(g, nx_llvm.LLVMBuildAdd(b, ldv(g, lo), nx_llvm.LLVMBuildShl(b, ldv(g, w), nx_gs_c64(g, 1), ""), ""),
	                       nx_gs_c64(g, R));
	LLVMValueRef vmid = nx_gs_var(g, g->i64, "mid"), vhi = nx_gs_var(g, g->i64, "hi");
	nx_llvm.LLVMBuildStore(b, mid, vmid);
	nx_llvm.LLVMBuildStore(b, hi, vhi);
	nx_llvm.LLVMBuildStore(b, ldv(g, lo), vi);
	nx_llvm.LLVMBuildStore(b, mid, vj);
	nx_llvm.LLVMBuildStore(b, ldv(g, lo), vk);
	nx_llvm.LLVMBuildBr(b, mc);
	/* while (k < hi) */
	nx_llvm.LLVMPositionBuilderAtEnd(b, mc);
	nx_llvm.LLVMBuildCondBr(b, nx_llvm.LLVMBuildICmp(b, LLVMIntSLT, ldv(g, vk), ldv(g, vhi), ""), mb, mn);
	nx_llvm.LLVMPositionBuilderAtEnd(b, mb);
	/* right when j < hi and (i >= mid or less(src[j], src[i])) */
	LLVMValueRef jok = nx_llvm.LLVMBuildICmp(b, LLVMIntSLT, ldv(g, vj), ldv(g, vhi), "");
	LLVMValueRef idone = nx_llvm.LLVMBuildICmp(b, LLVMIntSGE, ldv(g, vi), ldv(g, vmid), "");
	LLVMBasicBlockRef jcheck = block(g, "jcheck");
	nx_llvm.LLVMBuildCondBr(b, jok, jcheck, tl);
	nx_llvm.LLVMPositionBuilderAtEnd(b, jcheck);
	nx_llvm.LLVMBuildCondBr(b, idone, tr, cmpb);
	nx_llvm.LLVMPositionBuilderAtEnd(b, cmpb);
	LLVMValueRef s = nx_llvm.LLVMBuildLoad2(b, g->i1, src, "");
	nx_gs_val a[2 * NX_GS_MAXSLOT], o;
	for (int j = 0; j < n; j++) {
		a[2 * j] = nx_gs_load(g, k->slot[j].t, sort_elem(c, s, j, r, ldv(g, vj)));
		a[2 * j + 1] = nx_gs_load(g, k->slot[j].t, sort_elem(c, s, j, r, ldv(g, vi)));
	}
	if (call_comp(c, k->inst->called[0], a, &o, 1) != 1 || o.t != NX_PRED)
		return nx_gs_fail(g, "comparator '%s' does not return one pred", k->inst->called[0]->name);
	nx_llvm.LLVMBuildCondBr(b, o.v, tr, tl);
	/* move one element of every operand from src[x] to dst[k] */
	for (int side = 0; side < 2; side++) {
		nx_llvm.LLVMPositionBuilderAtEnd(b, side ? tr : tl);
		LLVMValueRef from = side ? vj : vi;
		LLVMValueRef sv = nx_llvm.LLVMBuildLoad2(b, g->i1, src, ""), dv = nx_llvm.LLVMBuildNot(b, sv, "");
		for (int j = 0; j < n; j++) {
			LLVMTypeRef st = nx_llvm.LLVMIntTypeInContext(g->ctx, (unsigned)(8 * esz(k->slot[j].t)));
			LLVMValueRef x = nx_llvm.LLVMBuildLoad2(b, st, sort_elem(c, sv, j, r, ldv(g, from)), "");
			nx_llvm.LLVMBuildStore(b, x, sort_elem(c, dv, j, r, ldv(g, vk)));
		}
		nx_llvm.LLVMBuildStore(b, nx_llvm.LLVMBuildAdd(b, ldv(g, from), nx_gs_c64(g, 1), ""), from);
		nx_llvm.LLVMBuildStore(b, nx_llvm.LLVMBuildAdd(b, ldv(g, vk), nx_gs_c64(g, 1), ""), vk);
		nx_llvm.LLVMBuildBr(b, mc);
	}
	nx_llvm.LLVMPositionBuilderAtEnd(b, mn);
	nx_llvm.LLVMBuildStore(b, nx_llvm.LLVMBuildAdd(b, ldv(g, lo), nx_llvm.LLVMBuildShl(b, ldv(g, w), nx_gs_c64(g, 1), ""), ""), lo);
	nx_llvm.LLVMBuildBr(b, lc);
	nx_llvm.LLVMPositionBuilderAtEnd(b, le);
	nx_llvm.LLVMBuildStore(b, nx_llvm.LLVMBuildNot(b, nx_llvm.LLVMBuildLoad2(b, g->i1, src, ""), ""), src);
	nx_llvm.LLVMBuildStore(b, nx_llvm.LLVMBuildShl(b, ldv(g, w), nx_gs_c64(g, 1), ""), w);
	nx_llvm.LLVMBuildBr(b, wc);
	nx_llvm.LLVMPositionBuilderAtEnd(b, we);
	/* the result sits in the scratch slots after an odd number of passes */
	LLVMBasicBlockRef cp = block(g, "copyback"), done = block(g, "sorted");
	nx_llvm.LLVMBuildCondBr(b, nx_llvm.LLVMBuildLoad2(b, g->i1, src, ""), cp, done);
	nx_llvm.LLVMPositionBuilderAtEnd(b, cp);
	nx_gs_loop l = nx_gs_for(g, nx_gs_c64(g, 0), nx_gs_c64(g, R), "e");
	LLVMValueRef e = nx_gs_idx(g, &l);
	for (int j = 0; j < n; j++) {
		LLVMTypeRef st = nx_llvm.LLVMIntTypeInContext(g->ctx, (unsigned)(8 * esz(k->slot[j].t)));
		nx_llvm.LLVMBuildStore(b, nx_llvm.LLVMBuildLoad2(b, st, elem(c, n + j, r, e), ""), elem(c, j, r, e));
	}
	nx_gs_endfor(g, &l);
	nx_llvm.LLVMBuildBr(b, done);
	nx_llvm.LLVMPositionBuilderAtEnd(b, done);
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
		nx_llvm.LLVMBuildStore(b, ld(c, 1, NULL, nx_gs_c64(g, 0)).v, acc);
		nx_gs_loop l = nx_gs_for(g, nx_gs_c64(g, 0), nx_gs_c64(g, R), "j");
		LLVMValueRef j = nx_gs_idx(g, &l);
		a[0] = (nx_gs_val){nx_llvm.LLVMBuildLoad2(b, nx_gs_ctype(g, at), acc, ""), at};
		a[1] = ld(c, 0, r, j);
		if (call_comp(c, f, a, &o, 1) != 1)
			return -1;
		nx_llvm.LLVMBuildStore(b, o.v, acc);
		nx_gs_store(g, o, elem(c, 2, r, j));
		nx_gs_endfor(g, &l);
		return 0;
	}
	nx_gs_loop l = nx_gs_for(g, nx_gs_c64(g, 0), nx_gs_c64(g, Ro), "j");
	LLVMValueRef j = nx_gs_idx(g, &l);
	nx_llvm.LLVMBuildStore(b, ld(c, 1, NULL, nx_gs_c64(g, 0)).v, acc);
	LLVMValueRef start = nx_llvm.LLVMBuildSub(b, nx_llvm.LLVMBuildMul(b, j, nx_gs_c64(g, k->wstride), ""), nx_gs_c64(g, k->wpad), "");
	nx_gs_loop lw = nx_gs_for(g, nx_gs_c64(g, 0), nx_gs_c64(g, k->win), "w");
	LLVMValueRef pos = nx_llvm.LLVMBuildAdd(b, start, nx_gs_idx(g, &lw), "");
	LLVMValueRef in = nx_llvm.LLVMBuildAnd(b, nx_llvm.LLVMBuildICmp(b, LLVMIntSGE, pos, nx_gs_c64(g, 0), ""),
	                               nx_llvm.LLVMBuildICmp(b, LLVMIntSLT, pos, nx_gs_c64(g, R), ""), "");
	LLVMBasicBlockRef yes = block(g, "inwin"), next = block(g, "wnext");
	nx_llvm.LLVMBuildCondBr(b, in, yes, next);
	nx_llvm.LLVMPositionBuilderAtEnd(b, yes);
	a[0] = (nx_gs_val){nx_llvm.LLVMBuildLoad2(b, nx_gs_ctype(g, at), acc, ""), at};
	a[1] = ld(c, 0, r, pos);
	if (call_comp(c, f, a, &o, 1) != 1)
		return -1;
	nx_llvm.LLVMBuildStore(b, o.v, acc);
	nx_llvm.LLVMBuildBr(b, next);
	nx_llvm.LLVMPositionBuilderAtEnd(b, next);
	nx_gs_endfor(g, &lw);
	nx_gs_store(g, (nx_gs_val){nx_llvm.LLVMBuildLoad2(b, nx_gs_ctype(g, at), acc, ""), at}, elem(c, 2, r, j));
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
	LLVMTypeRef st = nx_llvm.LLVMIntTypeInContext(g->ctx, (unsigned)(8 * esz(t)));
	LLVMValueRef m = nx_gs_var(g, g->i64, "m"), j = nx_gs_var(g, g->i64, "j"), q = nx_gs_var(g, g->i64, "q");
	nx_llvm.LLVMBuildStore(b, nx_gs_c64(g, 0), m);
	nx_gs_loop l = nx_gs_for(g, nx_gs_c64(g, 0), nx_gs_c64(g, R), "e");
	LLVMValueRef e = nx_gs_idx(g, &l);
	LLVMValueRef key = nx_gs_order_key(g, ld(c, 0, r, e));
	nx_llvm.LLVMBuildStore(b, ldv(g, m), j);
	LLVMBasicBlockRef sc = block(g, "scan"), sk = block(g, "scank"), sd = block(g, "scanned");
	LLVMBasicBlockRef ins = block(g, "insert"), shc = block(g, "shift"), shb = block(g, "shiftb"), put = block(g, "put");
	LLVMBasicBlockRef next = block(g, "enext");
	nx_llvm.LLVMBuildBr(b, sc);
	nx_llvm.LLVMPositionBuilderAtEnd(b, sc); /* while j > 0 && better(key, vals[j-1]) */
	nx_llvm.LLVMBuildCondBr(b, nx_llvm.LLVMBuildICmp(b, LLVMIntSGT, ldv(g, j), nx_gs_c64(g, 0), ""), sk, sd);
	nx_llvm.LLVMPositionBuilderAtEnd(b, sk);
	LLVMValueRef jm1 = nx_llvm.LLVMBuildSub(b, ldv(g, j), nx_gs_c64(g, 1), "");
	LLVMValueRef ok = nx_gs_order_key(g, ld(c, 1, r, jm1));
	LLVMValueRef better = nx_llvm.LLVMBuildICmp(b, k->largest ? LLVMIntSGT : LLVMIntSLT, key, ok, "");
	LLVMBasicBlockRef dec = block(g, "dec");
	nx_llvm.LLVMBuildCondBr(b, better, dec, sd);
	nx_llvm.LLVMPositionBuilderAtEnd(b, dec);
	nx_llvm.LLVMBuildStore(b, jm1, j);
	nx_llvm.LLVMBuildBr(b, sc);
	nx_llvm.LLVMPositionBuilderAtEnd(b, sd);
	nx_llvm.LLVMBuildCondBr(b, nx_llvm.LLVMBuildICmp(b, LLVMIntSLT, ldv(g, j), nx_gs_c64(g, K), ""), ins, next);
	nx_llvm.LLVMPositionBuilderAtEnd(b, ins); /* q = min(m, K-1) down to j+1: shift */
	LLVMValueRef last = nx_llvm.LLVMBuildSelect(b, nx_llvm.LLVMBuildICmp(b, LLVMIntSLT, ldv(g, m), nx_gs_c64(g, K), ""), ldv(g, m),
	                                    nx_gs_c64(g, K - 1), "");
	nx_llvm.LLVMBuildStore(b, last, q);
	nx_llvm.LLVMBuildBr(b, shc);
	nx_llvm.LLVMPositionBuilderAtEnd(b, shc);
	nx_llvm.LLVMBuildCondBr(b, nx_llvm.LLVMBuildICmp(b, LLVMIntSGT, ldv(g, q), ldv(g, j), ""), shb, put);
	nx_llvm.LLVMPositionBuilderAtEnd(b, shb);
	LLVMValueRef qm1 = nx_llvm.LLVMBuildSub(b, ldv(g, q), nx_gs_c64(g, 1), "");
	nx_llvm.LLVMBuildStore(b, nx_llvm.LLVMBuildLoad2(b, st, elem(c, 1, r, qm1), ""), elem(c, 1, r, ldv(g, q)));
	nx_llvm.LLVMBuildStore(b, nx_llvm.LLVMBuildLoad2(b, g->i32, elem(c, 2, r, qm1), ""), elem(c, 2, r, ldv(g, q)));
	nx_llvm.LLVMBuildStore(b, qm1, q);
	nx_llvm.LLVMBuildBr(b, shc);
	nx_llvm.LLVMPositionBuilderAtEnd(b, put);
	nx_llvm.LLVMBuildStore(b, nx_llvm.LLVMBuildLoad2(b, st, elem(c, 0, r, e), ""), elem(c, 1, r, ldv(g, j)));
	nx_llvm.LLVMBuildStore(b, nx_llvm.LLVMBuildTrunc(b, e, g->i32, ""), elem(c, 2, r, ldv(g, j)));
	LLVMValueRef mn = nx_llvm.LLVMBuildAdd(b, ldv(g, m), nx_gs_c64(g, 1), "");
	nx_llvm.LLVMBuildStore(b, nx_llvm.LLVMBuildSelect(b, nx_llvm.LLVMBuildICmp(b, LLVMIntSLT, ldv(g, m), nx_gs_c64(g, K), ""), mn, ldv(g, m), ""), m);
	nx_llvm.LLVMBuildBr(b, next);
	nx_llvm.LLVMPositionBuilderAtEnd(b, next);
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
		ui[d] = nx_llvm.LLVMBuildURem(b, nx_llvm.LLVMBuildUDiv(b, u, nx_gs_c64(g, ustr[d]), ""), nx_gs_c64(g, us->dims[d]), "");
	/* index tensor position of this update's batch index */
	LLVMValueRef ibase = nx_gs_c64(g, 0);
	int bpos = 0;
	for (int d = 0; d < us->rank; d++) {
		if (has(&sd->update_window_dims, d))
			continue;
		int e = bpos < ivd ? bpos : bpos + 1; /* indices dim holding batch position bpos */
		if (ivd >= is->rank)
			e = bpos;
		ibase = nx_llvm.LLVMBuildAdd(b, ibase, nx_llvm.LLVMBuildMul(b, ui[d], nx_gs_c64(g, istr[e]), ""), "");
		bpos++;
	}
	LLVMValueRef fits = nx_llvm.LLVMConstInt(g->i1, 1, 0), lin = nx_gs_c64(g, 0);
	for (int k = 0; k < sd->scatter_dims_to_operand_dims.n; k++) {
		int64_t od = sd->scatter_dims_to_operand_dims.v[k];
		LLVMValueRef at = ivd < is->rank ? nx_llvm.LLVMBuildAdd(b, ibase, nx_gs_c64(g, k * istr[ivd]), "") : ibase;
		nx_gs_val iv = ld(c, 1, NULL, at);
		LLVMValueRef st = nx_type_is_int(iv.t) && (iv.t == NX_U8 || iv.t == NX_U16 || iv.t == NX_U32 || iv.t == NX_U64)
		                      ? nx_llvm.LLVMBuildZExt(b, iv.v, g->i64, "")
		                      : nx_llvm.LLVMBuildSExt(b, iv.v, g->i64, "");
		int64_t full = od == c->k->pdim ? c->k->pfull : os->dims[od];
		fits = nx_llvm.LLVMBuildAnd(b, fits, nx_llvm.LLVMBuildICmp(b, LLVMIntSGE, st, nx_gs_c64(g, 0), ""), "");
		fits = nx_llvm.LLVMBuildAnd(b, fits, nx_llvm.LLVMBuildICmp(b, LLVMIntSLE, st, nx_gs_c64(g, full - wsize[od]), ""), "");
		if (od == c->k->pdim) { /* a part of the operand: rows [r0, r0 + n) of dim od (slot 3 holds r0) */
			LLVMValueRef r0 = nx_llvm.LLVMBuildSExt(b, ld(c, 3, NULL, nx_gs_c64(g, 0)).v, g->i64, "r0");
			st = nx_llvm.LLVMBuildSub(b, st, r0, "");
			fits = nx_llvm.LLVMBuildAnd(b, fits, nx_llvm.LLVMBuildICmp(b, LLVMIntSGE, st, nx_gs_c64(g, 0), ""), "");
			fits = nx_llvm.LLVMBuildAnd(b, fits, nx_llvm.LLVMBuildICmp(b, LLVMIntSLE, st, nx_gs_c64(g, os->dims[od] - wsize[od]), ""), "");
		}
		lin = nx_llvm.LLVMBuildAdd(b, lin, nx_llvm.LLVMBuildMul(b, st, nx_gs_c64(g, ostr[od]), ""), "");
	}
	for (int k = 0; k < nwin; k++)
		lin = nx_llvm.LLVMBuildAdd(b, lin, nx_llvm.LLVMBuildMul(b, ui[sd->update_window_dims.v[k]], nx_gs_c64(g, ostr[wod[k]]), ""), "");
	LLVMBasicBlockRef yes = block(g, "fits"), next = block(g, "unext");
	nx_llvm.LLVMBuildCondBr(b, fits, yes, next);
	nx_llvm.LLVMPositionBuilderAtEnd(b, yes);
	nx_gs_val a[2], o;
	a[0] = ld(c, 0, NULL, lin);
	a[1] = ld(c, 2, NULL, u);
	if (call_comp(c, i->called[0], a, &o, 1) != 1)
		return -1;
	nx_gs_store(g, nx_gs_convert(g, o, c->k->slot[0].t), elem(c, 0, NULL, lin));
	nx_llvm.LLVMBuildBr(b, next);
	nx_llvm.LLVMPositionBuilderAtEnd(b, next);
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
	nx_llvm.LLVMBuildStore(b, nx_gs_c64(g, -1), best);
	nx_gs_loop lk = nx_gs_for(g, nx_gs_c64(g, 0), nx_gs_c64(g, nw), "k");
	LLVMValueRef kk = nx_gs_idx(g, &lk);
	LLVMValueRef ok = nx_llvm.LLVMConstInt(g->i1, 1, 0), src = nx_gs_c64(g, 0);
	for (int d = 0; d < os->rank; d++) {
		const nx_window_dim *wd = &w->dims[d];
		int64_t st = wd->stride > 0 ? wd->stride : 1, dil = wd->window_dilation > 0 ? wd->window_dilation : 1;
		LLVMValueRef od = nx_llvm.LLVMBuildURem(b, nx_llvm.LLVMBuildUDiv(b, s, nx_gs_c64(g, sstr[d]), ""), nx_gs_c64(g, ss->dims[d]), "");
		LLVMValueRef kd = nx_llvm.LLVMBuildURem(b, nx_llvm.LLVMBuildUDiv(b, kk, nx_gs_c64(g, wstr[d]), ""), nx_gs_c64(g, wd->size), "");
		LLVMValueRef pos = nx_llvm.LLVMBuildAdd(b, nx_llvm.LLVMBuildSub(b, nx_llvm.LLVMBuildMul(b, od, nx_gs_c64(g, st), ""), nx_gs_c64(g, wd->pad_lo), ""),
		                                nx_llvm.LLVMBuildMul(b, kd, nx_gs_c64(g, dil), ""), "");
		ok = nx_llvm.LLVMBuildAnd(b, ok, nx_llvm.LLVMBuildICmp(b, LLVMIntSGE, pos, nx_gs_c64(g, 0), ""), "");
		ok = nx_llvm.LLVMBuildAnd(b, ok, nx_llvm.LLVMBuildICmp(b, LLVMIntSLT, pos, nx_gs_c64(g, os->dims[d]), ""), "");
		src = nx_llvm.LLVMBuildAdd(b, src, nx_llvm.LLVMBuildMul(b, pos, nx_gs_c64(g, ostr[d]), ""), "");
	}
	LLVMBasicBlockRef valid = block(g, "valid"), first = block(g, "first"), sel = block(g, "select");
	LLVMBasicBlockRef take = block(g, "take"), knext = block(g, "knext");
	nx_llvm.LLVMBuildCondBr(b, ok, valid, knext);
	nx_llvm.LLVMPositionBuilderAtEnd(b, valid);
	nx_llvm.LLVMBuildCondBr(b, nx_llvm.LLVMBuildICmp(b, LLVMIntSLT, ldv(g, best), nx_gs_c64(g, 0), ""), first, sel);
	nx_llvm.LLVMPositionBuilderAtEnd(b, first);
	nx_llvm.LLVMBuildBr(b, take);
	nx_llvm.LLVMPositionBuilderAtEnd(b, sel);
	nx_gs_val a[2], o;
	a[0] = nx_gs_load(g, ot, elem(c, 0, NULL, ldv(g, best)));
	a[1] = nx_gs_load(g, ot, elem(c, 0, NULL, src));
	if (call_comp(c, i->called[0], a, &o, 1) != 1 || o.t != NX_PRED)
		return nx_gs_fail(g, "select '%s' does not return one pred", i->called[0]->name);
	nx_llvm.LLVMBuildCondBr(b, o.v, knext, take);
	nx_llvm.LLVMPositionBuilderAtEnd(b, take);
	nx_llvm.LLVMBuildStore(b, src, best);
	nx_llvm.LLVMBuildBr(b, knext);
	nx_llvm.LLVMPositionBuilderAtEnd(b, knext);
	nx_gs_endfor(g, &lk);
	LLVMBasicBlockRef apply = block(g, "apply"), snext = block(g, "snext");
	nx_llvm.LLVMBuildCondBr(b, nx_llvm.LLVMBuildICmp(b, LLVMIntSGE, ldv(g, best), nx_gs_c64(g, 0), ""), apply, snext);
	nx_llvm.LLVMPositionBuilderAtEnd(b, apply);
	a[0] = nx_gs_load(g, rt, elem(c, 3, NULL, ldv(g, best)));
	a[1] = ld(c, 1, NULL, s);
	if (call_comp(c, i->called[1], a, &o, 1) != 1)
		return -1;
	nx_gs_store(g, nx_gs_convert(g, o, rt), elem(c, 3, NULL, ldv(g, best)));
	nx_llvm.LLVMBuildBr(b, snext);
	nx_llvm.LLVMPositionBuilderAtEnd(b, snext);
	nx_gs_endfor(g, &l);
	return 0;
}

nx_status nx_gs_build(nx_gs *g, const nx_gs_kspec *k, const char *name)
{
	LLVMTypeRef pt[2] = {g->ptr, g->i32};
	LLVMTypeRef ft = nx_llvm.LLVMFunctionType(g->vd, pt, 2, 0);
	g->fn = nx_llvm.LLVMAddFunction(g->mod, name, ft);
	g->inst = k->inst;
	LLVMBasicBlockRef entry = nx_llvm.LLVMAppendBasicBlockInContext(g->ctx, g->fn, "entry");
	nx_llvm.LLVMPositionBuilderAtEnd(g->b, entry);
	LLVMBuilderRef b = g->b;
	LLVMValueRef t = nx_llvm.LLVMGetParam(g->fn, 0);
	kctx c = {g, k, NULL, NULL, {0}};
	LLVMValueRef data = nx_llvm.LLVMBuildLoad2(b, g->ptr, t, "data");
	LLVMValueRef P = nx_llvm.LLVMBuildLoad2(b, g->i64, gep(g, t, nx_gs_c64(g, NX_GS_T_SHAPE)), "P");
	c.T = nx_llvm.LLVMBuildLoad2(b, g->i64, gep(g, t, nx_gs_c64(g, NX_GS_T_SHAPE + 8)), "T");
	LLVMValueRef ps = nx_llvm.LLVMBuildLoad2(b, g->i64, gep(g, t, nx_gs_c64(g, NX_GS_T_STRIDE)), "pstride");
	nx_gs_loop lp = nx_gs_for(g, nx_gs_c64(g, 0), P, "p");
	c.base = gep(g, data, nx_llvm.LLVMBuildMul(b, nx_gs_idx(g, &lp), ps, ""));
	LLVMValueRef off = nx_gs_c64(g, 0);
	for (int s = 0; s < k->nslot; s++) {
		c.sbase[s] = gep(g, c.base, off);
		LLVMValueRef rows = per_part(k, s) ? nx_gs_c64(g, 1) : c.T;
		LLVMValueRef by = nx_llvm.LLVMBuildMul(b, rows, nx_gs_c64(g, k->slot[s].R * esz(k->slot[s].t)), "");
		by = nx_llvm.LLVMBuildAnd(b, nx_llvm.LLVMBuildAdd(b, by, nx_gs_c64(g, 63), ""), nx_gs_c64(g, ~(int64_t)63), "");
		off = nx_llvm.LLVMBuildAdd(b, off, by, "");
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
	nx_llvm.LLVMBuildRetVoid(b);
	return NX_OK;
}
