/* backend/lower_emit.c — the emission substrate every kernel family uses:
 * instruction emission, the per-engine sync state (semaphores, what each
 * engine knows, waits, loops, registers), DMA issue over the queues, the SBUF
 * halves and resident values, and tile/access-pattern helpers. Split out of
 * lower.c (the driver); docs/lowering.md describes the scheme. */
#include "backend/lower.h"
#include "backend/lower_ext.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

double nx_l_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ------------------------------------------------------------- streams */
nx_status nx_l_err(nx_lower *L, const char *fmt, ...)
{
	char m[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(m, sizeof m, fmt, ap);
	va_end(ap);
	const nx_inst *i = L->cur;
	if (i) {
		nx_diag_set(L->d, NX_ERR_INPUT, L->m->file, i->line, i->col, "instruction '%s' (%s): %s", i->name,
		            nx_opcode_name(i->op), m);
		nx_diag_set_inst(L->d, i->name);
	} else {
		nx_diag_set(L->d, NX_ERR_INPUT, L->m->file, 0, 0, "%s", m);
	}
	return NX_ERR_INPUT;
}

nx_insn *nx_l_emit(nx_lower *L, nx_engine e, nx_isa_op op)
{
	nx_lstream *s = &L->s[e];
	if (s->n >= NX_LOWER_MAX_INSNS) {
		L->too_big = true;
		L->overflow = nx_insn_new(op, e);
		return &L->overflow;
	}
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 256;
		nx_insn *v = realloc(s->v, s->cap * sizeof *s->v);
		if (!v)
			nx_ice(__FILE__, __LINE__, "out of memory growing the %s stream", nx_engine_names[e]);
		s->v = v;
	}
	nx_insn *in = &s->v[s->n++];
	*in = nx_insn_new(op, e);
	in->debug_id = L->cur_debug;
	return in;
}

void nx_l_max(nx_lsync *a, const nx_lsync *b)
{
	for (int k = 0; k < NX_LSEMS; k++)
		if (b->s[k] > a->s[k])
			a->s[k] = b->s[k];
}

/* Knowledge tracking for the hazard check (check_sbuf): reaching count cnt
 * of semaphore k implies what the engine knew when it issued the increment. */
static void know_add(nx_lower *L, int k, int64_t cnt, const nx_lsync *kn)
{
	if (L->nknow[k] == L->capknow[k]) {
		L->capknow[k] = L->capknow[k] ? 2 * L->capknow[k] : 64;
		L->know[k] = nx_xrealloc(L->know[k], L->capknow[k] * sizeof *L->know[k]);
	}
	struct nx_lknow *r = &L->know[k][L->nknow[k]];
	r->cnt = cnt;
	r->k = *kn;
	if (L->nknow[k] > 0) /* counts are reached in order */
		nx_l_max(&r->k, &L->know[k][L->nknow[k] - 1].k);
	if (r->k.s[k] < cnt)
		r->k.s[k] = cnt;
	L->nknow[k]++;
}

const nx_lsync *nx_l_know_at(const nx_lower *L, int k, int64_t v)
{
	size_t lo = 0, hi = L->nknow[k];
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (L->know[k][mid].cnt < v)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < L->nknow[k] ? &L->know[k][lo].k : NULL;
}

void nx_l_wait(nx_lower *L, nx_engine e, const nx_lsync *y)
{
	nx_lstream *s = &L->s[e];
	bool any = false;
	for (int k = 0; k < NX_LSEMS; k++) {
		if (k == NX_LSEM_ENG + (int)e || y->s[k] <= s->waited[k])
			continue; /* an engine's own kernels finish in order */
		nx_insn *in = nx_l_emit(L, e, NX_I_WAIT);
		in->iarg[0] = k;
		in->iarg[1] = (int32_t)y->s[k];
		if (L->ndloops)
			in->iarg[2] = NX_LREG_ITER + 1;
		s->waited[k] = y->s[k];
		const nx_lsync *kk = nx_l_know_at(L, k, y->s[k]);
		if (kk)
			nx_l_max(&L->kn[e], kk);
		if (L->kn[e].s[k] < y->s[k])
			L->kn[e].s[k] = y->s[k];
		any = true;
	}
	if (!any)
		return;
	if (L->nklog[e] == L->capklog[e]) {
		L->capklog[e] = L->capklog[e] ? 2 * L->capklog[e] : 64;
		L->klog[e] = nx_xrealloc(L->klog[e], L->capklog[e] * sizeof *L->klog[e]);
	}
	L->klog[e][L->nklog[e]].at = s->n;
	L->klog[e][L->nklog[e]].k = L->kn[e];
	L->nklog[e]++;
}

void nx_l_loop(nx_lower *L, nx_engine e, int64_t n)
{
	nx_lstream *s = &L->s[e];
	NX_ASSERT(s->depth < NX_LOOP_DEPTH && n >= 1 && n < INT32_MAX);
	nx_insn *in = nx_l_emit(L, e, NX_I_LOOP);
	in->iarg[0] = (int32_t)n;
	s->mult[s->depth + 1] = (s->depth ? s->mult[s->depth] : 1) * n;
	s->depth++;
}

void nx_l_endloop(nx_lower *L, nx_engine e)
{
	NX_ASSERT(L->s[e].depth > 0);
	nx_l_emit(L, e, NX_I_ENDLOOP);
	L->s[e].depth--;
}

nx_lsync nx_l_dma_q(nx_lower *L, nx_engine e, int q, nx_ap dst, nx_ap src)
{
	NX_ASSERT((e == NX_ENG_SP || e == NX_ENG_POOL) && q >= 0 && q < NX_LQ);
	nx_insn *in = nx_l_emit(L, e, NX_I_DMA);
	in->ap[0] = dst;
	in->ap[1] = src;
	in->iarg[0] = q;
	in->iarg[1] = q;
	nx_lstream *s = &L->s[e];
	L->qcount[q] += s->depth ? s->mult[s->depth] : 1;
	know_add(L, q, L->qcount[q], &L->kn[e]);
	nx_lsync y;
	memset(&y, 0, sizeof y);
	y.s[q] = L->qcount[q];
	return y;
}

int nx_l_queue(nx_lower *L, nx_engine e)
{
	NX_ASSERT(e == NX_ENG_SP || e == NX_ENG_POOL);
	int side = e == NX_ENG_POOL;
	int q = side * (NX_LQ / 2) + L->qnext[side];
	L->qnext[side] = (L->qnext[side] + 1) % (NX_LQ / 2);
	return q;
}

int nx_l_load_queues(int64_t bl, int64_t bs, int nout)
{
	NX_ASSERT(bl > 0 && bs > 0 && nout >= 1 && nout <= NX_LQ / 2);
	int nl = (int)((NX_LQ * bl + (bl + bs) / 2) / (bl + bs));
	return nl < NX_LQ / 2 ? NX_LQ / 2 : nl > NX_LQ - nout ? NX_LQ - nout : nl;
}

nx_lsync nx_l_dma(nx_lower *L, nx_engine e, nx_ap dst, nx_ap src)
{
	return nx_l_dma_q(L, e, nx_l_queue(L, e), dst, src);
}

void nx_l_colsum_mm(nx_lower *L, nx_dtype dt, int64_t np, int64_t roff, int64_t w, int64_t ones, int64_t pcol,
                    uint32_t flags)
{
	int64_t esz = nx_dtype_bytes[dt], nfull = w / 128, rem = w % 128;
	int32_t s1[1] = {1};
	uint32_t c1[1] = {1};
	for (int part = 0; part < 2; part++) {
		int64_t n = part ? (rem ? 1 : 0) : nfull, M = part ? rem : 128, ct = part ? nfull : 0;
		if (n == 0)
			continue;
		if (n > 1)
			nx_l_loop(L, NX_ENG_PE, n);
		int lv = L->s[NX_ENG_PE].depth - 1;
		nx_insn *mm = nx_l_emit(L, NX_ENG_PE, NX_I_MATMUL);
		mm->flags = flags;
		c1[0] = 1;
		mm->ap[0] = nx_ap_psum(NX_DT_F32, 0, (int)M, pcol + ct * 4, 1, s1, c1);
		mm->ap[2] = nx_ap_sbuf(dt, 0, (int)np, ones, 1, s1, c1);
		c1[0] = (uint32_t)M;
		mm->ap[1] = nx_ap_sbuf(dt, 0, (int)np, roff + ct * 128 * esz, 1, s1, c1);
		if (n > 1) {
			mm->ap[0].loop_stride[lv] = 4;
			mm->ap[1].loop_stride[lv] = 128 * esz;
			nx_l_endloop(L, NX_ENG_PE);
		}
	}
}

void nx_l_colsum_finish(nx_lower *L, nx_dtype dt, int64_t out, int64_t pcol, int64_t C, float init, nx_dtype init_dt,
                        int64_t init_off)
{
	int64_t CTf = C / 128, rem = C % 128, eo = nx_dtype_bytes[dt];
	int32_t s1[1] = {1};
	uint32_t c1[1];
	for (int part = 0; part < 2; part++) {
		int64_t np = part ? rem : 128, nf = part ? (rem ? 1 : 0) : CTf, off = part ? CTf : 0;
		if (np == 0 || nf == 0)
			continue;
		nx_insn *in = nx_l_emit(L, NX_ENG_ACT, NX_I_TENSOR_SCALAR);
		in->func = NX_ALU_ADD;
		c1[0] = (uint32_t)nf;
		in->ap[0] = nx_ap_sbuf(dt, 0, (int)np, out + off * eo, 1, s1, c1);
		in->ap[1] = nx_ap_psum(NX_DT_F32, 0, (int)np, pcol + off * 4, 1, s1, c1);
		if (init_off < 0) {
			in->fimm[0] = init;
		} else {
			c1[0] = 1;
			in->ap[2] = nx_ap_sbuf(init_dt, 0, (int)np, init_off, 1, s1, c1);
		}
	}
}

nx_lsync nx_l_dma_indexed(nx_lower *L, int op, nx_ap dst, nx_ap src, nx_ap idx, int64_t bound, int64_t row_stride,
                          int flags)
{
	NX_ASSERT(op == NX_I_DMA_GATHER || op == NX_I_DMA_SCATTER);
	NX_ASSERT(bound <= INT32_MAX && row_stride <= INT32_MAX);
	nx_lsync y = nx_l_dma(L, NX_ENG_SP, dst, src);
	nx_insn *in = &L->s[NX_ENG_SP].v[L->s[NX_ENG_SP].n - 1];
	NX_ASSERT(in->op == NX_I_DMA);
	in->op = (uint16_t)op;
	in->ap[2] = idx;
	in->iarg[2] = (int32_t)bound;
	in->iarg[3] = (int32_t)row_stride;
	in->flags = (uint16_t)flags;
	return y;
}

nx_lsync nx_l_signal(nx_lower *L, nx_engine e)
{
	nx_lstream *s = &L->s[e];
	nx_l_signal_sem(L, e, NX_LSEM_ENG + e, s->depth ? s->mult[s->depth] : 1); /* once per iteration */
	nx_lsync y;
	memset(&y, 0, sizeof y);
	y.s[NX_LSEM_ENG + e] = L->ecount[e];
	return y;
}

void nx_l_signal_sem(nx_lower *L, nx_engine e, int sem, int64_t inc)
{
	NX_ASSERT(sem >= 0 && sem < NX_LSEMS && inc >= 1 && (L->s[e].depth || inc <= 65535));
	nx_insn *in = nx_l_emit(L, e, NX_I_SIGNAL);
	in->iarg[0] = sem;
	in->iarg[1] = L->s[e].depth ? 1 : (int32_t)inc; /* inside a data loop: +1 per iteration */
	if (sem < NX_LQ) {
		L->qcount[sem] += inc;
		know_add(L, sem, L->qcount[sem], &L->kn[e]);
		return;
	}
	NX_ASSERT(sem == NX_LSEM_ENG + (int)e);
	L->ecount[e] += inc;
	if (L->nsig[e] == L->capsig[e]) {
		L->capsig[e] = L->capsig[e] ? 2 * L->capsig[e] : 64;
		L->sig_idx[e] = nx_xrealloc(L->sig_idx[e], L->capsig[e] * sizeof *L->sig_idx[e]);
		L->sig_cnt[e] = nx_xrealloc(L->sig_cnt[e], L->capsig[e] * sizeof *L->sig_cnt[e]);
	}
	L->sig_idx[e][L->nsig[e]] = L->s[e].n - 1;
	L->sig_cnt[e][L->nsig[e]++] = L->ecount[e];
	know_add(L, NX_LSEM_ENG + e, L->ecount[e], &L->kn[e]);
}

void nx_l_setreg(nx_lower *L, nx_engine e, int r, int64_t v)
{
	NX_ASSERT(r >= 0 && r < NX_NREGS && v >= INT32_MIN && v <= INT32_MAX);
	nx_insn *in = nx_l_emit(L, e, NX_I_SETREG);
	in->iarg[0] = r;
	in->iarg[1] = (int32_t)v;
}

void nx_l_addreg(nx_lower *L, nx_engine e, int r, int64_t v)
{
	NX_ASSERT(r >= 0 && r < NX_NREGS && v >= INT32_MIN && v <= INT32_MAX);
	if (v == 0)
		return;
	nx_insn *in = nx_l_emit(L, e, NX_I_ADDREG);
	in->iarg[0] = r;
	in->iarg[1] = (int32_t)v;
}

void nx_l_wait_rel(nx_lower *L, nx_engine e, int sem, int64_t base, int r)
{
	NX_ASSERT(sem >= 0 && sem < NX_LSEMS && r >= 0 && r < NX_NREGS && base <= INT32_MAX);
	nx_insn *in = nx_l_emit(L, e, NX_I_WAIT);
	in->iarg[0] = sem;
	in->iarg[1] = (int32_t)base;
	in->iarg[2] = r + 1;
	if (L->ndloops)
		in->iarg[3] = NX_LREG_ITER + 1;
}

/* ---------------------------------------------------------- on-chip */
/* 15/16 of the partition: a little room stays for small kernels beside it */
int64_t nx_l_sbuf_big(const nx_lower *L)
{
	int64_t p = L->t->sbuf_partition_bytes;
	return p - p / 16 > L->sbuf_half ? p - p / 16 : L->sbuf_half;
}

int64_t nx_l_div_le(int64_t n, int64_t cap)
{
	if (n <= cap)
		return n < 1 ? 1 : n;
	for (int64_t k = cap; k > 1; k--)
		if (n % k == 0)
			return k;
	return 1;
}

static bool overlaps(int64_t a0, int64_t a1, int64_t b0, int64_t b1)
{
	return a0 < b1 && b0 < a1;
}

nx_status nx_l_sbuf_begin(nx_lower *L, int64_t bytes, int64_t *base, int *half)
{
	if (bytes > L->sbuf_half)
		return nx_l_err(L, "kernel needs %lld SBUF bytes per partition; %s allows %lld per kernel "
		                   "(half of the %lld-byte partition)",
		                (long long)bytes, L->t->name, (long long)L->sbuf_half,
		                (long long)L->t->sbuf_partition_bytes);
	return nx_l_sbuf_begin_big(L, bytes, base, half);
}

nx_status nx_l_sbuf_begin_big(nx_lower *L, int64_t bytes, int64_t *base, int *half)
{
	nx_l_check_sbuf(L);
	NX_ASSERT(bytes <= nx_l_sbuf_big(L));
	int64_t b = (bytes + 63) & ~(int64_t)63, total = L->t->sbuf_partition_bytes;
	if (b == 0)
		b = 64;
	if (L->ring_top + b > total)
		L->ring_top = 0;
	int64_t off = L->ring_top;
	L->ring_top += b;
	L->last_off = off;
	L->last_bytes = bytes;
	/* the new region waits for every live region it overwrites; a slot is
	 * taken from the dead ones, else the oldest live one is retired (its
	 * free point folded into the new region's wait, and kept as "retired"
	 * for whoever later writes its bytes) */
	nx_lsync w = L->sbuf_retired;
	int slot = -1;
	int64_t oldest = INT64_MAX;
	int oslot = 0;
	for (int k = 0; k < NX_LREGS; k++) {
		if (L->reg_gen[k] == 0) {
			if (slot < 0)
				slot = k;
			continue;
		}
		if (overlaps(off, off + b, L->reg_off[k], L->reg_end[k])) {
			nx_l_check_free(L, k);
			nx_l_max(&w, &L->sbuf_free[k]);
			/* partly overwritten: its other bytes stay in use until its
			 * free point, and nobody tracks them once the slot is gone */
			if (L->reg_off[k] < off || L->reg_end[k] > off + b)
				nx_l_max(&L->sbuf_retired, &L->sbuf_free[k]);
			L->reg_gen[k] = 0;
			if (slot < 0)
				slot = k;
		} else if (L->reg_gen[k] < oldest) {
			oldest = L->reg_gen[k];
			oslot = k;
		}
	}
	if (slot < 0) {
		slot = oslot;
		nx_l_check_free(L, slot);
		nx_l_max(&L->sbuf_retired, &L->sbuf_free[slot]);
		nx_l_max(&w, &L->sbuf_free[slot]);
	}
	L->reg_off[slot] = off;
	L->reg_end[slot] = off + b;
	L->reg_req[slot] = off + bytes;
	L->reg_wait[slot] = w;
	memset(&L->reg_need[slot], 0, sizeof L->reg_need[slot]);
	for (int e = 0; e < NX_ENG_COUNT; e++)
		L->reg_last[slot][e] = -1;
	L->reg_gen[slot] = ++L->gen_next;
	L->sbuf_free[slot] = w;
	L->kidx++;
	*half = slot;
	*base = off;
	L->last_slot = slot;
	if (bytes > L->sbuf_peak)
		L->sbuf_peak = bytes;
	return NX_OK;
}

void nx_l_sbuf_end(nx_lower *L, int half, const nx_lsync *done)
{
	L->sbuf_free[half] = *done;
}

void nx_l_kernel_engines(const nx_engine *stage, int nstage, bool used[NX_ENG_COUNT])
{
	for (int e = 0; e < NX_ENG_COUNT; e++)
		used[e] = e == NX_ENG_SP || e == NX_ENG_POOL;
	for (int k = 0; k < nstage; k++)
		used[stage[k]] = true;
}

void nx_l_kernel_begin(nx_lower *L, int half, const bool used[NX_ENG_COUNT])
{
	for (int e = 0; e < NX_ENG_COUNT; e++)
		if (used[e])
			nx_l_wait(L, (nx_engine)e, &L->sbuf_free[half]);
}

void nx_l_kernel_end(nx_lower *L, int half, nx_lval *const *out, int nout, const nx_lsync *loads,
                     const nx_lsync *stores, const nx_lsync *comp)
{
	for (int o = 0; o < nout; o++) {
		nx_l_max(&out[o]->buf->written, stores);
		nx_l_max(&out[o]->buf->war, stores);
	}
	nx_lsync done = *stores;
	nx_l_max(&done, loads);
	nx_l_max(&done, comp);
	nx_l_sbuf_end(L, half, &done);
}

void nx_l_set_resident(nx_lower *L, nx_lval *v, int slot, int64_t off, int64_t P, int64_t F,
                       const nx_lsync *ready)
{
	NX_ASSERT(slot >= 0 && slot < NX_LREGS && L->reg_gen[slot] != 0);
	v->sb_slot = slot;
	v->sb_gen = L->reg_gen[slot];
	v->sb_off = off;
	v->sb_P = P;
	v->sb_F = F;
	v->sb_ready = *ready;
}

bool nx_l_resident(const nx_lower *L, const nx_lval *v, int64_t P, int64_t F)
{
	if (!v || v->tuple || v->sb_gen == 0 || L->reg_gen[v->sb_slot] != v->sb_gen)
		return false;
	return (P <= 0 || v->sb_P == P) && (F <= 0 || v->sb_F == F);
}

void nx_l_resident_read(nx_lower *L, const nx_lval *v, const nx_lsync *done)
{
	NX_ASSERT(nx_l_resident(L, v, 0, 0));
	nx_l_max(&L->sbuf_free[v->sb_slot], done);
}

nx_ltile nx_l_tile_p(int64_t n, int64_t P, int64_t fmax)
{
	nx_ltile t;
	NX_ASSERT(P >= 1 && n % P == 0);
	t.n = n;
	t.P = P;
	t.F = n / P;
	t.Fc = nx_l_chunk(t.F, fmax);
	t.Lc = t.F / t.Fc;
	return t;
}

nx_ltile nx_l_tile(int64_t n, int64_t fmax)
{
	nx_ltile t;
	t.n = n;
	t.P = nx_l_div_le(n, 128);
	t.F = n / t.P;
	t.Fc = nx_l_chunk(t.F, fmax);
	t.Lc = t.F / t.Fc;
	return t;
}

nx_ap nx_l_hbm_tile(const nx_lval *v, const nx_ltile *t)
{
	int32_t st[1] = {1};
	uint32_t c[1] = {(uint32_t)t->Fc};
	nx_ap a = nx_ap_hbm(v->dt, v->buf->off, (int)t->P, t->F, 1, st, c);
	a.loop_stride[0] = t->Fc * nx_dtype_bytes[v->dt];
	return a;
}

nx_ap nx_l_sbuf_tile(nx_dtype dt, const nx_ltile *t, int64_t off, int64_t esz_slot)
{
	(void)esz_slot;
	int32_t st[1] = {1};
	uint32_t c[1] = {(uint32_t)t->Fc};
	nx_ap a = nx_ap_sbuf(dt, 0, (int)t->P, off, 1, st, c);
	a.loop_stride[0] = t->Fc * nx_dtype_bytes[dt];
	return a;
}

