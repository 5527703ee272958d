/* backend/kernels/dot_kloop.c — the dot-loop's K-block schedule, taken when
 * the stationary schedule (dot_loop.c) does not fit: a (batched) dot as one
 * loop nest whose code size does not depend on the operand sizes:
 *
 *   for b < Bt:  for m-tile (full tiles in a loop, the ragged last one after):
 *     for n-tile (likewise):  for k-block:  SP loads A^T [kt, j*mt] and
 *       B [kt, j*nt] for the block's j K tiles; PE accumulates them into one
 *       PSUM bank; then ACT evacuates the bank (cast) and POOL stores it.
 *
 * Tiles: mt = min(M, 128) output rows (PE columns), nt = min(N, 512) output
 * columns (one fp32 PSUM bank), kt = min(K, 128) (PE rows); a K block holds
 * as many K tiles as fit the SBUF request. Ragged last tiles are emitted once
 * after the loop of full tiles, so the body exists at most twice per level.
 *
 * Synchronization is per iteration: every engine keeps registers counting
 * the iterations it has passed, and waits for `sem >= base + register`
 * (nx_l_wait_rel). Channels: SP loads -> PE (load queue), PE -> SP (the K
 * block buffer is free again: PE signals once per K block), PE -> ACT (PE
 * signal count through the tile's last K block), ACT -> PE (PSUM bank free:
 * ACT signals once per tile), ACT -> POOL (likewise), POOL -> ACT (the
 * output tile buffer is free: the store queue). One buffer each: the engines
 * overlap across channels (ACT/POOL of tile i with the loads of tile i+1),
 * not within one. */
#include "backend/lower.h"
#include "backend/kernels/dot_loop.h"

#include <stdio.h>
#include <string.h>

enum { R_SP_PE, R_PE_LD, R_PE_ACT, R_ACT_PE, R_ACT_ST, R_POOL_ACT, R_PE_LDX };
/* loads go to up to NQL queues: SP's 8 and POOL's but the store queue
 * (SP borrows them); every queue gets one piece (a partition range) per
 * operand part, so PE counts them all in register R_PE_LD, except a
 * ragged K tile of fewer rows than queues: its pieces go on the first nrag
 * queues only, which PE counts in R_PE_LDX */
enum { NQL = NX_LQ - 1 };

typedef struct dl {
	nx_lower *L;
	const nx_ldmat *A, *B;
	nx_lval *out;
	int64_t Bt, M, K, N, mt, nt, kt, KTb;
	int ea, eb, eo;
	int64_t a_off, b_off, o_off; /* SBUF addresses */
	int64_t pbase;
	int ql[NQL], nql, nrag, qs;  /* load and store queues */
	int64_t base_l[NQL], base_s, base_pe, base_act;
	int64_t kblocks;             /* K blocks per output tile */
	/* loop level (0 = outermost) of each dimension's loop, -1 outside one */
	int lv_b, lv_m, lv_n, lv_k;
	int depth;
	nx_lsync loads, stores, pe, act;
} dl;

static const nx_engine engs[4] = {NX_ENG_SP, NX_ENG_PE, NX_ENG_ACT, NX_ENG_POOL};

static void loop_all(dl *x, int64_t n, int nengs)
{
	for (int k = 0; k < nengs; k++)
		nx_l_loop(x->L, engs[k], n);
	x->depth++;
}

static void endloop_all(dl *x, int nengs)
{
	for (int k = 0; k < nengs; k++)
		nx_l_endloop(x->L, engs[k]);
	x->depth--;
}

/* loop strides in bytes for the enclosing b / m / n / k levels */
static void strides(const dl *x, nx_ap *ap, int64_t sb, int64_t sm, int64_t sn, int64_t sk)
{
	if (x->lv_b >= 0)
		ap->loop_stride[x->lv_b] = sb;
	if (x->lv_m >= 0)
		ap->loop_stride[x->lv_m] = sm;
	if (x->lv_n >= 0)
		ap->loop_stride[x->lv_n] = sn;
	if (x->lv_k >= 0)
		ap->loop_stride[x->lv_k] = sk;
}

/* One K block: nfull whole K tiles from K index k0 (plus the loop's k
 * advance), then rr ragged rows (0: none). first: the block starts the
 * tile's accumulation. */
static void kblock(dl *x, int64_t msz, int64_t m0, int64_t nsz, int64_t n0, int64_t nfull, int64_t rr, int64_t k0,
                   bool first)
{
	nx_lower *L = x->L;
	const nx_ldmat *A = x->A, *B = x->B;
	int64_t kadv = x->KTb * x->kt; /* K elements per iteration of the K-block loop */
	/* SP: wait until PE consumed the previous K block, then load */
	nx_l_wait_rel(L, NX_ENG_SP, NX_LSEM_ENG + NX_ENG_PE, x->base_pe, R_SP_PE);
	int64_t per = 0, perx = 0; /* pieces per queue; more on the first nrag */
	for (int side = 0; side < 2; side++) {
		const nx_ldmat *V = side ? B : A;
		int esz = side ? x->eb : x->ea;
		int64_t w = side ? nsz : msz, wt = side ? x->nt : x->mt, o0 = side ? n0 : m0;
		/* A: element (k, m) at off + m*sr + k*sc; B: (k, n) at off + k*sr + n*sc */
		int64_t s_k = side ? V->sr : V->sc, s_w = side ? V->sc : V->sr;
		int64_t sbuf = side ? x->b_off : x->a_off;
		for (int part = 0; part < 2; part++) {
			int64_t nt_ = part ? (rr > 0) : nfull, np = part ? rr : x->kt;
			if (nt_ == 0)
				continue;
			/* the part's K tiles [np partitions, nt_ tiles, w] in nq
			 * partition ranges */
			int64_t kk = k0 + (part ? nfull * x->kt : 0);
			int32_t hs[2] = {(int32_t)(x->kt * s_k), (int32_t)s_w}, ss[2] = {(int32_t)wt, 1};
			uint32_t hc[2] = {(uint32_t)nt_, (uint32_t)w};
			int nq = np < x->nql ? (int)np : x->nql;
			NX_ASSERT(nq == x->nql || nq == x->nrag);
			for (int q = 0; q < nq; q++) {
				int64_t p0 = np * q / nq, p1 = np * (q + 1) / nq;
				nx_ap h = nx_ap_hbm(V->dt, V->buf->off + (V->off + o0 * s_w + (kk + p0) * s_k) * esz,
				                   (int)(p1 - p0), s_k, 2, hs, hc);
				strides(x, &h, V->sb * esz, side ? 0 : x->mt * s_w * esz, side ? x->nt * s_w * esz : 0,
				        kadv * s_k * esz);
				nx_ap sb = nx_ap_sbuf(V->dt, (int)p0, (int)(p1 - p0),
				                      sbuf + (part ? nfull : 0) * wt * esz, 2, ss, hc);
				nx_lsync y = nx_l_dma_q(L, NX_ENG_SP, x->ql[q], sb, h);
				nx_l_max(&x->loads, &y);
			}
			if (nq == x->nql)
				per++;
			else
				perx++;
		}
	}
	nx_l_addreg(L, NX_ENG_SP, R_SP_PE, 1);
	/* PE: wait for the loads, accumulate */
	nx_l_addreg(L, NX_ENG_PE, R_PE_LD, per);
	if (x->nrag)
		nx_l_addreg(L, NX_ENG_PE, R_PE_LDX, per + perx);
	for (int q = 0; q < x->nql; q++)
		nx_l_wait_rel(L, NX_ENG_PE, x->ql[q], x->base_l[q], q < x->nrag ? R_PE_LDX : R_PE_LD);
	for (int part = 0; part < 2; part++) {
		int64_t cnt = part ? (rr > 0) : nfull, np = part ? rr : x->kt;
		if (cnt == 0)
			continue;
		int64_t aoff = x->a_off + (part ? nfull * x->mt * x->ea : 0);
		int64_t boff = x->b_off + (part ? nfull * x->nt * x->eb : 0);
		for (int lead = 0; lead < 2; lead++) {
			/* lead: the START matmul of the first tile, then the rest in a loop */
			int64_t c = lead == 0 ? (first && part == 0 ? 1 : 0) : cnt - (first && part == 0 ? 1 : 0);
			if (first && part == 1 && nfull == 0)
				c = lead == 0 ? 1 : 0;
			if (c == 0)
				continue;
			int64_t j0 = lead == 0 ? 0 : cnt - c;
			bool lp = c > 1 && L->s[NX_ENG_PE].depth < NX_LOOP_DEPTH;
			int64_t reps = lp ? 1 : c;
			if (lp)
				nx_l_loop(L, NX_ENG_PE, c);
			for (int64_t j = 0; j < reps; j++) {
				nx_insn *mm = nx_l_emit(L, NX_ENG_PE, NX_I_MATMUL);
				mm->flags = lead == 0 ? NX_IF_START : 0;
				int32_t s1[1] = {1};
				uint32_t cn[1] = {(uint32_t)nsz}, cm[1] = {(uint32_t)msz};
				mm->ap[0] = nx_ap_psum(NX_DT_F32, 0, (int)msz, x->pbase, 1, s1, cn);
				mm->ap[1] = nx_ap_sbuf(A->dt, 0, (int)np, aoff + (j0 + j) * x->mt * x->ea, 1, s1, cm);
				mm->ap[2] = nx_ap_sbuf(B->dt, 0, (int)np, boff + (j0 + j) * x->nt * x->eb, 1, s1, cn);
				if (lp) {
					int d = L->s[NX_ENG_PE].depth - 1;
					mm->ap[1].loop_stride[d] = x->mt * x->ea;
					mm->ap[2].loop_stride[d] = x->nt * x->eb;
				}
			}
			if (lp)
				nx_l_endloop(L, NX_ENG_PE);
		}
	}
	nx_lsync y = nx_l_signal(L, NX_ENG_PE);
	nx_l_max(&x->pe, &y);
}

/* One output tile [msz, nsz] at (m0, n0) (plus the loops' advance). */
static void tile(dl *x, int64_t msz, int64_t m0, int64_t nsz, int64_t n0)
{
	nx_lower *L = x->L;
	int64_t KT = (x->K + x->kt - 1) / x->kt, KTf = x->K / x->kt, rk = x->K % x->kt;
	/* PE: the PSUM bank is free once ACT evacuated the previous tile */
	nx_l_wait_rel(L, NX_ENG_PE, NX_LSEM_ENG + NX_ENG_ACT, x->base_act, R_PE_ACT);
	if (KT <= x->KTb) {
		kblock(x, msz, m0, nsz, n0, KTf, rk, 0, true);
	} else {
		kblock(x, msz, m0, nsz, n0, x->KTb, 0, 0, true);
		int64_t rest = KTf - x->KTb, nmid = rest / x->KTb, lastf = rest % x->KTb;
		if (nmid > 0) {
			bool lp = nmid > 1;
			if (lp) {
				nx_l_loop(L, NX_ENG_SP, nmid);
				nx_l_loop(L, NX_ENG_PE, nmid);
				x->lv_k = L->s[NX_ENG_SP].depth - 1;
				NX_ASSERT(L->s[NX_ENG_PE].depth - 1 == x->lv_k);
			}
			kblock(x, msz, m0, nsz, n0, x->KTb, 0, x->KTb * x->kt, false);
			if (lp) {
				nx_l_endloop(L, NX_ENG_SP);
				nx_l_endloop(L, NX_ENG_PE);
				x->lv_k = -1;
			}
		}
		if (lastf > 0 || rk > 0)
			kblock(x, msz, m0, nsz, n0, lastf, rk, (x->KTb + nmid * x->KTb) * x->kt, false);
	}
	nx_l_addreg(L, NX_ENG_PE, R_PE_ACT, 1);
	/* ACT: wait for PE's last K block of this tile and for the store of the
	 * previous tile, evacuate with the cast */
	nx_l_addreg(L, NX_ENG_ACT, R_ACT_PE, x->kblocks);
	nx_l_wait_rel(L, NX_ENG_ACT, NX_LSEM_ENG + NX_ENG_PE, x->base_pe, R_ACT_PE);
	nx_l_wait_rel(L, NX_ENG_ACT, x->qs, x->base_s, R_ACT_ST);
	nx_insn *cp = nx_l_emit(L, NX_ENG_ACT, NX_I_TENSOR_COPY);
	int32_t s1[1] = {1};
	uint32_t cn[1] = {(uint32_t)nsz};
	cp->ap[0] = nx_ap_sbuf(x->out->dt, 0, (int)msz, x->o_off, 1, s1, cn);
	cp->ap[1] = nx_ap_psum(NX_DT_F32, 0, (int)msz, x->pbase, 1, s1, cn);
	nx_lsync y = nx_l_signal(L, NX_ENG_ACT);
	nx_l_max(&x->act, &y);
	nx_l_addreg(L, NX_ENG_ACT, R_ACT_ST, 1);
	/* POOL: store the tile */
	nx_l_addreg(L, NX_ENG_POOL, R_POOL_ACT, 1);
	nx_l_wait_rel(L, NX_ENG_POOL, NX_LSEM_ENG + NX_ENG_ACT, x->base_act, R_POOL_ACT);
	int32_t hs[1] = {1};
	nx_ap h = nx_ap_hbm(x->out->dt, x->out->buf->off + (m0 * x->N + n0) * x->eo, (int)msz, x->N, 1, hs, cn);
	strides(x, &h, x->M * x->N * x->eo, x->mt * x->N * x->eo, x->nt * x->eo, 0);
	nx_ap so = nx_ap_sbuf(x->out->dt, 0, (int)msz, x->o_off, 1, s1, cn);
	y = nx_l_dma_q(L, NX_ENG_POOL, x->qs, h, so);
	nx_l_max(&x->stores, &y);
}

/* A row of output tiles [msz, N] at m0. */
static void mrow(dl *x, int64_t msz, int64_t m0)
{
	int64_t FN = x->N / x->nt, rn = x->N % x->nt;
	if (FN > 0) {
		if (FN > 1) {
			loop_all(x, FN, 4);
			x->lv_n = x->depth - 1;
		}
		tile(x, msz, m0, x->nt, 0);
		if (FN > 1) {
			endloop_all(x, 4);
			x->lv_n = -1;
		}
	}
	if (rn > 0)
		tile(x, msz, m0, rn, FN * x->nt);
}

nx_status nx_l_dot_kloop(nx_lower *L, const nx_ldmat *A, const nx_ldmat *B, nx_lval *out, int64_t Bt, int64_t M,
                         int64_t K, int64_t N)
{
	const nx_target *t = L->t;
	dl x;
	memset(&x, 0, sizeof x);
	x.L = L, x.A = A, x.B = B, x.out = out;
	x.Bt = Bt, x.M = M, x.K = K, x.N = N;
	x.mt = M < t->pe_cols ? M : t->pe_cols;
	x.nt = N < t->matmul_max_n ? N : t->matmul_max_n;
	x.kt = K < t->pe_rows ? K : t->pe_rows;
	x.ea = nx_dtype_bytes[A->dt], x.eb = nx_dtype_bytes[B->dt], x.eo = nx_dtype_bytes[out->dt];
	NX_ASSERT(!A->B2); /* nx_l_dot_loop_b2_ok said the stationary schedule takes it */
	int64_t KT = (K + x.kt - 1) / x.kt;
	int64_t per = x.mt * x.ea + x.nt * x.eb, room = L->sbuf_half - nx_l_al64(x.nt * x.eo) - 128;
	x.KTb = room / per;
	if (x.KTb < 1)
		return nx_l_err(L, "dot tile does not fit SBUF");
	if (x.KTb > KT)
		x.KTb = KT;
	if (x.KTb > 64)
		x.KTb = 64;
	/* operand extents must fit the access-pattern fields */
	int64_t big = INT32_MAX;
	if (A->sr * x.mt > big || A->sc * x.kt * x.KTb > big || B->sr * x.kt * x.KTb > big || B->sc * x.nt > big ||
	    N > big || x.M * x.N > ((int64_t)1 << 40))
		return nx_l_err(L, "dot operands too large for one access pattern");
	int64_t KTf = K / x.kt, rk = K % x.kt;
	if (KT <= x.KTb)
		x.kblocks = 1;
	else {
		int64_t rest = KTf - x.KTb;
		x.kblocks = 1 + rest / x.KTb + ((rest % x.KTb) > 0 || rk > 0);
	}
	int64_t bytes = nx_l_al64(x.KTb * x.mt * x.ea) + nx_l_al64(x.KTb * x.nt * x.eb) + nx_l_al64(x.nt * x.eo);
	int64_t base;
	int h;
	nx_status rc;
	if ((rc = nx_l_sbuf_begin(L, bytes, &base, &h)))
		return rc;
	L->st.flops += 2.0 * (double)Bt * (double)M * (double)N * (double)K;
	x.a_off = base;
	x.b_off = base + nx_l_al64(x.KTb * x.mt * x.ea);
	x.o_off = x.b_off + nx_l_al64(x.KTb * x.nt * x.eb);
	int ph = L->pidx++ & 1;
	x.pbase = ph * (t->psum_banks / 2) * t->psum_bank_bytes;
	/* load queues: up to NQL, at most the partitions of every part, and
	 * 64 KiB or more per transfer (a wait per queue per K block on PE) */
	int64_t kbb = x.KTb * x.kt * per / 65536;
	x.nql = x.kt < NQL ? (int)x.kt : NQL;
	if (kbb < x.nql)
		x.nql = kbb > 1 ? (int)kbb : 1;
	x.nrag = K % x.kt && K % x.kt < x.nql ? (int)(K % x.kt) : 0;
	x.qs = nx_l_queue(L, NX_ENG_POOL);
	for (int q = 0; q < x.nql; q++) /* SP's queues, then POOL's but qs */
		x.ql[q] = nx_l_queue(L, q < NX_LQ / 2 ? NX_ENG_SP : NX_ENG_POOL);
	x.lv_b = x.lv_m = x.lv_n = x.lv_k = -1;
	nx_l_plan_kernel(L, "dot-loop");
	nx_l_plan(L, "shape", "%lld x [%lld, %lld] . [%lld, %lld] %s.%s -> %s", (long long)Bt, (long long)M,
	          (long long)K, (long long)K, (long long)N, nx_dtype_names[A->dt], nx_dtype_names[B->dt],
	          nx_dtype_names[out->dt]);
	nx_l_plan(L, "tiling", "mt %lld, nt %lld, kt %lld; %lld K tiles per block, %lld K blocks per tile",
	          (long long)x.mt, (long long)x.nt, (long long)x.kt, (long long)x.KTb, (long long)x.kblocks);
	nx_l_plan(L, "loops", "b %lld > m %lld%s > n %lld%s > k %lld (single-buffered, per-iteration waits)",
	          (long long)Bt, (long long)(M / x.mt), M % x.mt ? "+ragged" : "", (long long)(N / x.nt),
	          N % x.nt ? "+ragged" : "", (long long)x.kblocks);
	char qn[32] = "";
	if (x.nql > 1)
		snprintf(qn, sizeof qn, " (+%d queues)", x.nql - 1);
	nx_l_plan(L, "engines", "load sp q%d%s, matmul pe, evacuate act, store pool q%d", x.ql[0], qn, x.qs);
	nx_l_plan(L, "resident", "none");
	nx_l_mem(L, "psum", "half %d, one bank", ph);

	/* kernel entry: the region, the PSUM half, the operands, the result buffer */
	for (int k = 0; k < 4; k++)
		nx_l_wait(L, engs[k], &L->sbuf_free[h]);
	nx_l_wait(L, NX_ENG_SP, &A->buf->written);
	nx_l_wait(L, NX_ENG_SP, &B->buf->written);
	nx_l_wait(L, NX_ENG_PE, &L->psum_free[ph]);
	nx_l_wait(L, NX_ENG_POOL, &out->buf->war);
	for (int q = 0; q < x.nql; q++)
		x.base_l[q] = L->qcount[x.ql[q]];
	x.base_s = L->qcount[x.qs];
	x.base_pe = L->ecount[NX_ENG_PE];
	x.base_act = L->ecount[NX_ENG_ACT];
	nx_l_setreg(L, NX_ENG_SP, R_SP_PE, 0);
	nx_l_setreg(L, NX_ENG_PE, R_PE_LD, 0);
	if (x.nrag)
		nx_l_setreg(L, NX_ENG_PE, R_PE_LDX, 0);
	/* SP loading on POOL's queues: the semaphore counts assume one issuing
	 * engine per queue at a time, so SP first waits for everything earlier
	 * on them (and POOL for SP's loads at the end) */
	nx_lsync bq;
	memset(&bq, 0, sizeof bq);
	for (int q = NX_LQ / 2; q < x.nql; q++)
		bq.s[x.ql[q]] = x.base_l[q];
	nx_l_wait(L, NX_ENG_SP, &bq);
	nx_l_setreg(L, NX_ENG_PE, R_PE_ACT, 0);
	nx_l_setreg(L, NX_ENG_ACT, R_ACT_PE, 0);
	nx_l_setreg(L, NX_ENG_ACT, R_ACT_ST, 0);
	nx_l_setreg(L, NX_ENG_POOL, R_POOL_ACT, 0);
	/* PE waits on ACT signals and SP on PE signals of this kernel only, so
	 * their own earlier kernels must be complete before (first iteration) */
	nx_lsync e0;
	memset(&e0, 0, sizeof e0);
	e0.s[NX_LSEM_ENG + NX_ENG_ACT] = x.base_act;
	nx_l_wait(L, NX_ENG_PE, &e0);
	e0.s[NX_LSEM_ENG + NX_ENG_ACT] = 0;
	e0.s[NX_LSEM_ENG + NX_ENG_PE] = x.base_pe;
	nx_l_wait(L, NX_ENG_SP, &e0);
	nx_l_wait(L, NX_ENG_ACT, &e0);
	e0.s[NX_LSEM_ENG + NX_ENG_PE] = 0;
	e0.s[x.qs] = x.base_s;
	nx_l_wait(L, NX_ENG_ACT, &e0);

	if (Bt > 1) {
		loop_all(&x, Bt, 4);
		x.lv_b = x.depth - 1;
	}
	int64_t FM = M / x.mt, rm = M % x.mt;
	if (FM > 0) {
		if (FM > 1) {
			loop_all(&x, FM, 4);
			x.lv_m = x.depth - 1;
		}
		mrow(&x, x.mt, 0);
		if (FM > 1) {
			endloop_all(&x, 4);
			x.lv_m = -1;
		}
	}
	if (rm > 0)
		mrow(&x, rm, FM * x.mt);
	if (Bt > 1)
		endloop_all(&x, 4);

	/* kernel exit */
	for (int q = NX_LQ / 2; q < x.nql; q++)
		bq.s[x.ql[q]] = L->qcount[x.ql[q]];
	nx_l_wait(L, NX_ENG_POOL, &bq);
	nx_l_max(&A->buf->war, &x.loads);
	nx_l_max(&B->buf->war, &x.loads);
	nx_l_max(&out->buf->written, &x.stores);
	nx_l_max(&out->buf->war, &x.stores);
	L->psum_free[ph] = x.act;
	nx_lsync done = x.stores;
	nx_l_max(&done, &x.loads);
	nx_l_max(&done, &x.pe);
	nx_l_max(&done, &x.act);
	nx_l_sbuf_end(L, h, &done);
	return NX_OK;
}
