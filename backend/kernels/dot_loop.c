/* backend/kernels/dot_loop.c — a (batched) dot as one loop nest whose code
 * size does not depend on the operand sizes. nx_l_dot_loop plans the
 * stationary schedule (sd_*, below: one operand resident per block or batch
 * step, the other streamed per step, tiles in pairs over four rotating PSUM
 * banks, stores in groups), with a dot epilogue (dot_epi.c) or a row
 * epilogue (dot_rows.c) applied per evacuated tile; a dot it cannot plan
 * goes to the K-block loop of dot_kloop.c.
 *
 * Synchronization is per iteration: every engine keeps registers counting
 * the iterations it has passed, and waits for `sem >= base + register`
 * (nx_l_wait_rel). */
#include "backend/lower.h"
#include "backend/kernels/dot_loop.h"

#include <stdio.h>
#include <string.h>

static const nx_engine engs[4] = {NX_ENG_SP, NX_ENG_PE, NX_ENG_ACT, NX_ENG_POOL};


/* ------------------------------------------------ stationary schedule
 * The schedule used when the tiles divide the operands evenly and a whole
 * K extent fits SBUF (docs/lowering.md, "dot-loop, stationary schedule"):
 *
 *   loop over outer blocks (a batch, or a block of resident tiles; a loop
 *   even of one):
 *     SP and POOL load the resident block R [K, G tiles] in one piece per
 *     tile pair (a loop) on their piece queues;
 *     loop over step pairs (two step bodies: buffers alternate by parity),
 *     then an odd step and a ragged one when there are:
 *       SP loads the streamed tile S [K, one tile] into S[par] on the nls
 *       streaming queues;
 *       PE: loop over the G/2 tile pairs (two PSUM banks per parity): wait
 *       for the pair's piece, per tile KT accumulating matmuls, signal;
 *       ACT evacuates each bank into the step's output block O[par];
 *       POOL: loop over the groups of gb tiles: store (partition ranges).
 *
 * The code does not depend on the volume: every count is a loop trip count
 * (pieces, blocks, step pairs, tile pairs, store groups, K tiles) and the
 * waits are relative to registers. side 0: R = A^T (tiles along M), S = B
 * tiles [K, nt]; side 1: R = B (tiles along N), S = A^T tiles [K, mt]. A
 * cost model over the target's DMA and PE rates picks side, nt, G and the
 * queue split. Batch steps (a batch is one step) may hold nbs = 2 or 4
 * batches: one transfer per queue covers them, and PE, ACT and DVE emit
 * them one after the other. The stores go to O: the result, or the layout
 * of its transposing reader (L->dot_out, lower.c dot_tout). */
typedef nx_sd sd;

static bool em(const sd *x, nx_engine e)
{
	return x->em >> e & 1;
}

/* elements between the outer loop's batches: the outer level of a two-level
 * batch, else the batch (the outer loop runs over batches only then) */
static int64_t sd_ob(const nx_ldmat *V)
{
	return V->B2 ? V->sb1 : V->sb;
}


/* one DMA per queue: partitions [0, np) in nq ranges, each [KT or G, w] */
static void split_dma(sd *x, nx_engine e, const int *qv, int nq, bool load, nx_dtype dt, int64_t hoff,
                      int64_t pstride, int64_t np, int nd, const int32_t *hs, const int32_t *ss, const uint32_t *cn,
                      int64_t soff, const int64_t *lso, const int64_t *lss, int esz, nx_lsync *acc)
{
	for (int q = 0; q < nq; q++) {
		int64_t p0 = np * q / nq, p1 = np * (q + 1) / nq;
		nx_ap h = nx_ap_hbm(dt, hoff + p0 * pstride * esz, (int)(p1 - p0), pstride, nd, hs, cn);
		nx_ap s = nx_ap_sbuf(dt, (int)p0, (int)(p1 - p0), soff, nd, ss, cn);
		if (x->lv_o >= 0)
			h.loop_stride[x->lv_o] = lso[0], s.loop_stride[x->lv_o] = lss[0];
		if (x->lv_s >= 0)
			h.loop_stride[x->lv_s] = lso[1], s.loop_stride[x->lv_s] = lss[1];
		if (x->lv_g >= 0)
			h.loop_stride[x->lv_g] = lso[2], s.loop_stride[x->lv_g] = lss[2];
		nx_lsync y = load ? nx_l_dma_q(x->L, e, qv[q], s, h) : nx_l_dma_q(x->L, e, qv[q], h, s);
		nx_l_max(acc, &y);
	}
}

/* a transfer of a batch step of nbs > 1 batches: an outer axis over them,
 * hst elements apart in HBM and sst in SBUF; the transfer's dimensions */
static int bdim(const sd *x, int32_t *hs, int32_t *ss, uint32_t *cn, int64_t hst, int64_t sst)
{
	if (x->nbs < 2)
		return 2;
	NX_ASSERT(hst <= INT32_MAX && sst <= INT32_MAX);
	for (int d = 2; d > 0; d--)
		hs[d] = hs[d - 1], ss[d] = ss[d - 1], cn[d] = cn[d - 1];
	hs[0] = (int32_t)hst, ss[0] = (int32_t)sst, cn[0] = (uint32_t)x->nbs;
	return 3;
}

/* pieces u0 .. u0 + np - 1 of the resident block (a loop, even of one
 * piece: the same code for any G), partitions [pa, pa + pn) over the nq
 * queues qv, issued by e */
static void sd_pieces(sd *x, int par, int64_t bat, nx_engine e, const int *qv, int nq, int64_t pa, int64_t pn,
                      int64_t u0, int64_t np)
{
	nx_lower *L = x->L;
	const nx_ldmat *V = x->side ? x->B : x->A;
	int64_t rw = x->side ? x->nt : x->mt, rb = x->G * rw, pw = rb / x->rp;
	/* partition k: element stride along K; w: along the resident axis */
	int64_t sk = x->side ? V->sr : V->sc, sw = x->side ? V->sc : V->sr;
	int32_t hs[3] = {(int32_t)(x->kt * sk), (int32_t)sw}, ss[3] = {(int32_t)rb, 1};
	uint32_t cn[3] = {(uint32_t)x->KT, (uint32_t)pw};
	int nd = x->bstep ? bdim(x, hs, ss, cn, V->sb, x->rbb / x->er) : 2;
	int64_t lso = x->Bt > 1 ? sd_ob(V) * x->er : rb * sw * x->er;
	int64_t hoff = V->buf->off + (V->off + bat * V->sb + u0 * pw * sw) * x->er;
	if (nq == 0 || np == 0)
		return;
	nx_l_loop(L, e, np);
	int dl = L->s[e].depth - 1;
	for (int q = 0; q < nq; q++) {
		int64_t p0 = pa + pn * q / nq, p1 = pa + pn * (q + 1) / nq;
		NX_ASSERT(p1 > p0);
		nx_ap h = nx_ap_hbm(V->dt, hoff + p0 * sk * x->er, (int)(p1 - p0), sk, nd, hs, cn);
		nx_ap s = nx_ap_sbuf(V->dt, (int)p0, (int)(p1 - p0), x->r_off[par] + u0 * pw * x->er, nd, ss, cn);
		if (x->lv_o >= 0)
			h.loop_stride[x->lv_o] = lso;
		if (x->bstep && x->lv_s >= 0)
			h.loop_stride[x->lv_s] = 2 * x->nbs * V->sb * x->er;
		h.loop_stride[dl] = pw * sw * x->er, s.loop_stride[dl] = pw * x->er;
		nx_lsync y = nx_l_dma_q(L, e, qv[q], s, h);
		nx_l_max(&x->loads, &y);
	}
	nx_l_endloop(L, e);
}

/* the resident block of the current outer iteration in rp pieces (one per
 * tile pair, in the order PE uses them; a loop), issued by SP on its piece
 * queues (partitions [0, nsp)) or by POOL on the store queues (the rest).
 * p0off: piece 0 stays off the streaming queues (on SP's other queues,
 * partitions [0, nsp0), and the store queues), the others go on every
 * load queue. Batch steps: SP loads the whole block on the load queues
 * (who = 1). */
static void sd_resident(sd *x, int par, int64_t bat, int who)
{
	if (x->bstep) { /* the queues after the streaming ones, or all */
		int r0 = x->nls < x->nql ? x->nls : 0;
		sd_pieces(x, par, bat, NX_ENG_SP, x->ql + r0, x->nql - r0, 0, x->kt, 0, x->rp);
		return;
	}
	int r0 = x->rsq ? 0 : x->nls, u0 = x->p0off ? 1 : 0;
	if (who == 1) {
		if (x->p0off)
			sd_pieces(x, par, bat, NX_ENG_SP, x->ql + x->nls, x->nql - x->nls, 0, x->nsp0, 0, 1);
		sd_pieces(x, par, bat, NX_ENG_SP, x->ql + r0, x->nql - r0, 0, x->nsp - x->nspe, u0, x->rp - u0);
		sd_pieces(x, par, bat, NX_ENG_SP, x->qe, x->nqp, x->nsp - x->nspe, x->nspe, u0, x->rp - u0); /* dot_start.c */
	} else {
		if (x->p0off)
			sd_pieces(x, par, bat, NX_ENG_POOL, x->qs, x->nqs_res, x->nsp0, x->kt - x->nsp0, 0, 1);
		sd_pieces(x, par, bat, NX_ENG_POOL, x->qs, x->nqs_res, x->nsp, x->kt - x->nsp, u0, x->rp - u0);
	}
}

/* tpe: SP loads the step's resident operand as stored, [w, K] with w on
 * partitions (128 rows per partition, nw row tiles side by side), into T[par] */
static void sd_stage(sd *x, int par, int64_t bat)
{
	const nx_ldmat *V = x->side ? x->B : x->A;
	int64_t sk = x->side ? V->sr : V->sc, sw = x->side ? V->sc : V->sr;
	int32_t hs[3] = {(int32_t)(128 * sw), (int32_t)sk}, ss[3] = {(int32_t)x->K, 1};
	uint32_t cn[3] = {(uint32_t)x->nw, (uint32_t)x->K};
	int nd = bdim(x, hs, ss, cn, V->sb, x->tbb / x->er);
	int64_t hoff = V->buf->off + (V->off + bat * V->sb) * x->er;
	int64_t lso[3] = {sd_ob(V) * x->er, 2 * x->nbs * V->sb * x->er, 0}, lss[3] = {0, 0, 0};
	int q0 = x->nls < x->nql ? x->nls : 0;
	split_dma(x, NX_ENG_SP, x->ql + q0, x->nql - q0, true, V->dt, hoff, sw, 128, nd, hs, ss, cn, x->t_off[par], lso, lss,
	          x->er, &x->loads);
}

/* tpe: PE transposes T[par] into PSUM, one bank per K tile (its nw blocks
 * side by side), K tiles in pairs on the step's two banks; ACT copies each
 * bank into R[par]'s K tile row; PE waits for the last copy. The banks are
 * uses like the tiles': PE counts them in S_PE_T, ACT in S_ACT_PE. */
static void sd_transpose(sd *x, int par)
{
	nx_lower *L = x->L;
	const nx_ldmat *V = x->side ? x->B : x->A;
	int64_t rb = x->G * (x->side ? x->nt : x->mt);
	int32_t s1[1] = {1};
	uint32_t c128[1] = {128}, cr[1] = {(uint32_t)rb};
	for (int64_t b = 0; b < x->nbs; b++) { /* the step's batches, one after the other */
	nx_l_loop(L, NX_ENG_PE, x->KT / 2);
	nx_l_loop(L, NX_ENG_ACT, x->KT / 2);
	int dg = L->s[NX_ENG_PE].depth - 1, da = L->s[NX_ENG_ACT].depth - 1;
	for (int j = 0; j < 2; j++) {
		int64_t pb = x->pbase + (2 * par + j) * x->bank;
		nx_l_addreg(L, NX_ENG_PE, S_PE_T, 1);
		nx_l_wait_rel(L, NX_ENG_PE, NX_LSEM_ENG + NX_ENG_ACT, x->base_act - 2, S_PE_T);
		nx_l_loop(L, NX_ENG_PE, x->nw);
		int di = L->s[NX_ENG_PE].depth - 1;
		nx_insn *tr = nx_l_emit(L, NX_ENG_PE, NX_I_TRANSPOSE);
		tr->ap[0] = nx_ap_psum(NX_DT_F32, 0, 128, pb, 1, s1, c128);
		tr->ap[0].loop_stride[di] = 128 * 4;
		tr->ap[1] = nx_ap_sbuf(V->dt, 0, 128, x->t_off[par] + b * x->tbb + j * 128 * x->er, 1, s1, c128);
		tr->ap[1].loop_stride[di] = x->K * x->er;
		tr->ap[1].loop_stride[dg] = 2 * 128 * x->er;
		nx_l_endloop(L, NX_ENG_PE);
		nx_lsync y = nx_l_signal(L, NX_ENG_PE);
		nx_l_max(&x->pe, &y);
		nx_l_addreg(L, NX_ENG_ACT, S_ACT_PE, 1);
		nx_l_wait_rel(L, NX_ENG_ACT, NX_LSEM_ENG + NX_ENG_PE, x->base_pe, S_ACT_PE);
		nx_insn *cp = nx_l_emit(L, NX_ENG_ACT, NX_I_TENSOR_COPY);
		cp->ap[0] = nx_ap_sbuf(V->dt, 0, 128, x->r_off[par] + b * x->rbb + j * rb * x->er, 1, s1, cr);
		cp->ap[0].loop_stride[da] = 2 * rb * x->er;
		cp->ap[1] = nx_ap_psum(NX_DT_F32, 0, 128, pb, 1, s1, cr);
		y = nx_l_signal(L, NX_ENG_ACT);
		nx_l_max(&x->act, &y);
	}
	nx_l_endloop(L, NX_ENG_PE);
	nx_l_endloop(L, NX_ENG_ACT);
	}
	/* the matmuls read R[par]: every copy done */
	nx_l_wait_rel(L, NX_ENG_PE, NX_LSEM_ENG + NX_ENG_ACT, x->base_act, S_PE_T);
}

/* the epilogue's per-step work: SP loads the streamed inputs of the step
 * into E[par] (the stores' pattern); DVE, per store group once ACT
 * evacuated it, applies the ops in place in O[par] (dot_epi.c); POOL's
 * stores wait for DVE (sd_step) */
/* the engine that runs the epilogue's ops */
static nx_engine sd_epi_eng(const sd *x)
{
	return x->epool ? NX_ENG_POOL : NX_ENG_DVE;
}

/* the epilogue has mid ops (two passes on POOL, ACT between them) */
static bool sd_mid(const sd *x)
{
	return x->epi && x->epi->nmid;
}

/* the epilogue engine's signals per step: one per group and pass */
static int64_t sd_epi_sigs(const sd *x)
{
	return x->G / x->gb * (sd_mid(x) ? 2 : 1);
}

static void sd_epi_loads(sd *x, int par, const int64_t *lso, int64_t hoff0, int64_t mrow, int64_t ncol)
{
	const nx_ldepi *e = x->epi;
	if (!e->nstr)
		return;
	nx_lower *L = x->L;
	/* E[par] is free once DVE (POOL) finished the step before the last */
	int64_t nst = sd_epi_sigs(x);
	nx_l_wait_rel(L, NX_ENG_SP, NX_LSEM_ENG + sd_epi_eng(x), x->base_dve - nst, S_SP_DVE);
	nx_l_addreg(L, NX_ENG_SP, S_SP_DVE, nst);
	int64_t tstep = x->side ? x->nt : x->mt * x->N, lss[3] = {0, 0, 0};
	int32_t hs[2] = {(int32_t)tstep, 1}, ss[2] = {(int32_t)x->nt, 1};
	uint32_t cn[2] = {(uint32_t)x->G, (uint32_t)ncol};
	int es = nx_dtype_bytes[e->dt];
	for (int k = 0; k < e->nstr; k++) {
		const nx_lval *v = e->str[k];
		split_dma(x, NX_ENG_SP, x->qe, x->nqe, true, e->dt, v->buf->off + hoff0 * es, x->N, mrow, 2, hs, ss, cn,
		          x->e_str[k][par], lso, lss, es, &x->eloads);
	}
}

/* the epilogue engine: the step's streamed inputs are loaded (once per
 * step, before its loop over the store groups) */
static void sd_epi_wait_loads(sd *x, nx_engine eng)
{
	const nx_ldepi *e = x->epi;
	if (!e->nstr)
		return;
	if (eng == sd_epi_eng(x)) /* the bias rows SP loaded (nx_l_sd_epi_start) */
		nx_l_wait(x->L, eng, &x->erows);
	nx_l_addreg(x->L, eng, S_DVE_LD, e->nstr);
	for (int q = 0; q < x->nqe; q++)
		nx_l_wait_rel(x->L, eng, x->qe[q], x->base_e[q], S_DVE_LD);
	nx_l_sd_epi_skip(x, eng, x->nqe);
}

/* ACT (epool): the act ops, once the step's streamed inputs are loaded
 * (sd_epi_act_wait, before the step's loop over tile pairs), on each tile
 * pair before its evacuation (loop level da of the pairs, tp tiles); POOL's
 * wait for the evacuations covers them, ACT's for the stores of the step
 * before the last their buffers */
static bool sd_epi_act_any(const sd *x)
{
	bool any = false;
	for (int k = 0; x->epool && k < x->epi->nop; k++)
		any |= x->epi->op[k].act;
	return any;
}

static void sd_epi_act(sd *x, int par, int64_t mrow, int64_t ncol, int da, int tp)
{
	const nx_ldepi *e = x->epi;
	int es = nx_dtype_bytes[e->dt];
	int32_t ss[2] = {(int32_t)x->nt, 1};
	uint32_t cn[2] = {(uint32_t)tp, (uint32_t)ncol};
	nx_ap val[1 + 2 * NX_LEPI_IN], pre[NX_LEPI_OPS];
	memset(val, 0, sizeof val);
	for (int k = 0; k < e->nstr; k++) {
		val[NX_LEPI_STR(e, k)] = nx_ap_sbuf(e->dt, 0, (int)mrow, x->e_str[k][par], 2, ss, cn);
		val[NX_LEPI_STR(e, k)].loop_stride[da] = tp * x->nt * es;
	}
	for (int j = 0; j < e->npbuf; j++) {
		pre[j] = nx_ap_sbuf(e->dt, 0, (int)mrow, x->e_pre[j][par], 2, ss, cn);
		pre[j].loop_stride[da] = tp * x->nt * es;
	}
	nx_l_epi_emit_act(x->L, e, val, pre);
}

/* the stores per group and store queue: one per output (a multi-output
 * epilogue's outputs over all the queues), or one (each output on its own
 * share of the queues: qsplit) */
static int64_t sd_nso(const sd *x)
{
	return x->epi && !x->qsplit ? 1 + x->epi->nxo : 1;
}

/* step slot c's offset (an output's: of parity par) */
static int64_t sd_slot(const sd *x, int c, int par)
{
	const nx_ldepi *e = x->epi;
	int es = nx_dtype_bytes[e->dt];
	int64_t sl = nx_l_al64(x->G * x->nt * es), off = x->e_scr + (e->nop - 1) * nx_l_al64(x->gb * x->nt * es);
	return c < e->ncarry ? off + c * sl : off + (e->ncarry + 2 * (c - e->ncarry) + par) * sl;
}

/* step slot c's access pattern for the group (loop level dg over them) */
static nx_ap sd_carry(const sd *x, int c, int par, int dg, int64_t mrow, int64_t ncol)
{
	int es = nx_dtype_bytes[x->epi->dt];
	int32_t ss[2] = {(int32_t)x->nt, 1};
	uint32_t cn[2] = {(uint32_t)x->gb, (uint32_t)ncol};
	int64_t off = sd_slot(x, c, par);
	nx_ap a = nx_ap_sbuf(x->epi->dt, 0, (int)mrow, off, 2, ss, cn);
	a.loop_stride[dg] = x->gb * x->nt * es;
	return a;
}

/* ACT (mid ops): over the step's groups once POOL's first pass did each */
static void sd_mid_act(sd *x, int par, int64_t mrow, int64_t ncol)
{
	nx_lower *L = x->L;
	int64_t nst = x->G / x->gb;
	nx_ap carry[NX_LEPI_OPS];
	nx_l_loop(L, NX_ENG_ACT, nst);
	int dg = L->s[NX_ENG_ACT].depth - 1;
	nx_l_addreg(L, NX_ENG_ACT, S_ACT_EP, 1);
	nx_l_wait_rel(L, NX_ENG_ACT, NX_LSEM_ENG + NX_ENG_POOL, x->base_dve, S_ACT_EP);
	for (int c = 0; c < x->epi->ncarry + x->epi->nxo; c++)
		carry[c] = sd_carry(x, c, par, dg, mrow, ncol);
	int es = nx_dtype_bytes[x->epi->dt];
	int32_t ss[2] = {(int32_t)x->nt, 1};
	uint32_t cn[2] = {(uint32_t)x->gb, (uint32_t)ncol};
	nx_ap o = nx_ap_sbuf(x->epi->dt, 0, (int)mrow, x->o_off[par], 2, ss, cn);
	o.loop_stride[dg] = x->gb * x->nt * es;
	nx_l_epi_emit_mid(L, x->epi, carry, o);
	nx_lsync y = nx_l_signal(L, NX_ENG_ACT);
	nx_l_max(&x->act, &y);
	nx_l_endloop(L, NX_ENG_ACT);
	nx_l_addreg(L, NX_ENG_ACT, S_ACT_EP, nst); /* POOL's second pass */
}

/* the ops on one store group (loop level dg of eng over the groups); pass
 * 0 or 1 with mid ops, else -1 */
static void sd_epi_group(sd *x, nx_engine eng, int dg, int par, int64_t stl, int64_t mrow, int64_t ncol, int pass)
{
	const nx_ldepi *e = x->epi;
	nx_lower *L = x->L;
	int es = nx_dtype_bytes[e->dt];
	nx_ap val[1 + 2 * NX_LEPI_IN + NX_LEPI_OPS];
	int32_t ss[2] = {(int32_t)x->nt, 1};
	uint32_t cn[2] = {(uint32_t)x->gb, (uint32_t)ncol};
	val[0] = nx_ap_sbuf(e->dt, 0, (int)mrow, x->o_off[par], 2, ss, cn);
	val[0].loop_stride[dg] = x->gb * x->nt * es;
	for (int k = 0; k < e->nrow; k++) {
		/* side 0: the step's columns, every tile of a group the same; side
		 * 1: the group's tiles side by side along N */
		int32_t rs[2] = {x->side ? (int32_t)x->nt : 0, 1};
		nx_ap r = nx_ap_sbuf(e->dt, 0, (int)mrow, x->e_row[k] + (x->side ? 0 : stl * x->nt * es), 2, rs, cn);
		if (x->side) {
			r.loop_stride[dg] = x->gb * x->nt * es;
			if (x->lv_o >= 0 && x->Bt == 1)
				r.loop_stride[x->lv_o] = x->G * x->nt * es;
		} else if (x->lv_s >= 0 && !x->bstep) {
			r.loop_stride[x->lv_s] = 2 * x->nt * es;
		}
		val[NX_LEPI_ROW(e, k)] = r;
	}
	for (int k = 0; k < e->nstr; k++) {
		nx_ap a = val[0];
		a.offset = x->e_str[k][par];
		val[NX_LEPI_STR(e, k)] = a;
	}
	for (int k = 0; k < e->nop && x->epool; k++)
		if (e->op[k].act) { /* ACT computed it before the evacuations */
			nx_ap a = val[0];
			int b = e->op[k].pbuf;
			a.offset = b >= 0 ? x->e_pre[b][par] : x->e_str[-b - 1][par];
			val[NX_LEPI_OP(e, k)] = a;
		}
	if (pass >= 0 || e->nxo) {
		nx_ap carry[NX_LEPI_OPS];
		for (int c = 0; c < e->ncarry + e->nxo; c++)
			carry[c] = sd_carry(x, c, par, dg, mrow, ncol);
		nx_l_epi_emit_pass(L, e, eng, val, val[0], x->e_scr, x->gb * x->nt, pass, carry);
	} else {
		nx_l_epi_emit(L, e, eng, val, val[0], x->e_scr, x->gb * x->nt, x->epool);
	}
	nx_lsync y = nx_l_signal(L, eng);
	nx_l_max(&x->dve, &y);
}

static void sd_epi_ops(sd *x, int par, int64_t stl, int64_t mrow, int64_t ncol)
{
	nx_lower *L = x->L;
	if (x->epool)
		return; /* POOL's store loop (sd_step) */
	if (x->tpe)
		nx_l_addreg(L, NX_ENG_DVE, S_DVE_ACT, x->KT);
	sd_epi_wait_loads(x, NX_ENG_DVE);
	nx_l_loop(L, NX_ENG_DVE, x->G / x->gb);
	int dg = L->s[NX_ENG_DVE].depth - 1;
	nx_l_addreg(L, NX_ENG_DVE, S_DVE_ACT, x->gb);
	nx_l_wait_rel(L, NX_ENG_DVE, NX_LSEM_ENG + NX_ENG_ACT, x->base_act, S_DVE_ACT);
	sd_epi_group(x, NX_ENG_DVE, dg, par, stl, mrow, ncol, -1);
	nx_l_endloop(L, NX_ENG_DVE);
}

/* ---- the row epilogue's parts of a step (kernels/dot_rows.c) */
/* SP: P[par] ([mt, G, nt] as O) after the step's other loads on every load
 * queue, once POOL multiplied the groups of the step before the last (it
 * signals per group, before the group's store) */
static void sd_rows_load(sd *x, int par, int64_t bat)
{
	nx_lower *L = x->L;
	const nx_lval *P = x->rows->P;
	nx_l_addreg(L, NX_ENG_SP, S_SP_PE + 1, x->G / x->gb);
	nx_l_wait_rel(L, NX_ENG_SP, NX_LSEM_ENG + NX_ENG_POOL, x->base_pool - 2 * (x->G / x->gb), S_SP_PE + 1);
	int32_t hs[3] = {(int32_t)(x->mt * x->N), 1}, ss[3] = {(int32_t)x->nt, 1};
	uint32_t cn[3] = {(uint32_t)x->G, (uint32_t)x->nt};
	int nd = bdim(x, hs, ss, cn, x->M * x->N, x->pbb / x->ep);
	int64_t lso[3] = {(x->A->B2 ? x->A->B2 : 1) * x->M * x->N * x->ep, 2 * x->nbs * x->M * x->N * x->ep, 0};
	int64_t lss[3] = {0, 0, 0};
	split_dma(x, NX_ENG_SP, x->ql, x->nql, true, P->dt, P->buf->off + bat * x->M * x->N * x->ep, x->N, x->mt, nd, hs,
	          ss, cn, x->p_off[par], lso, lss, x->ep, &x->loads);
}

/* DVE: the step's P (the last of n transfers per load queue and step) */
static void sd_rows_wait(sd *x, int64_t n)
{
	nx_l_addreg(x->L, NX_ENG_DVE, 1, n);
	for (int q = 0; q < x->nql; q++)
		nx_l_wait_rel(x->L, NX_ENG_DVE, x->ql[q], x->base_l[q] - x->ld, 1);
}

/* DVE: tile j of the pair (PSUM bank bi, ps) evacuated by PE: its statistics */
static void sd_rows_stats(sd *x, int par, int j, int tp, int64_t bi, nx_ap ps)
{
	nx_lower *L = x->L;
	int32_t s1[1] = {1};
	uint32_t cn[1] = {ps.count[0]};
	nx_ap pt = nx_ap_sbuf(x->lp ? x->rows->P->dt : NX_DT_F32, 0, ps.part_count, x->p_off[par] + j * x->nt * x->ep, 1,
	                      s1, cn);
	pt.offset += x->bo * x->pbb;
	pt.loop_stride[L->s[NX_ENG_DVE].depth - 1] = tp * x->nt * x->ep;
	nx_l_addreg(L, NX_ENG_DVE, 0, 1);
	nx_l_wait_rel(L, NX_ENG_DVE, NX_LSEM_ENG + NX_ENG_PE, x->base_pe, 0);
	nx_l_dot_rows_stats(L, x->rows, ps, pt, x->rows_off + bi * 4, x->tmp_off + bi * x->nt * 4);
	nx_lsync y = nx_l_signal(L, NX_ENG_DVE);
	nx_l_max(&x->dve, &y);
}

/* POOL: the epilogue's last op on the store group (before its store) */
static void sd_rows_post(sd *x, int par, int64_t mrow)
{
	int32_t so[2] = {(int32_t)(x->obb / x->eo), 1}, sp[2] = {(int32_t)(x->pbb / x->ep), 1};
	uint32_t cg[2] = {(uint32_t)x->nbs, (uint32_t)(x->gb * x->nt)};
	int nd = x->nbs > 1 ? 2 : 1; /* nbs > 1: one group per batch */
	nx_ap o = nx_ap_sbuf(x->out->dt, 0, (int)mrow, x->o_off[par], nd, so + 2 - nd, cg + 2 - nd);
	nx_ap p = nx_ap_sbuf(x->rows->P->dt, 0, (int)mrow, x->p_off[par], nd, sp + 2 - nd, cg + 2 - nd);
	o.loop_stride[x->lv_g] = x->gb * x->nt * x->eo, p.loop_stride[x->lv_g] = x->gb * x->nt * x->ep;
	nx_l_dot_rows_post(x->L, x->rows, o, p);
	nx_l_signal(x->L, NX_ENG_POOL);
}

/* PE: tile j of the pair (PSUM bank at pb): KT accumulating matmuls of the
 * resident block at roff and the streamed tile at soff, once ACT evacuated the bank's tile
 * dist tiles before */
static void sd_tile_pe(sd *x, int64_t soff, int j, int tp, int64_t pb, int64_t mrow, int64_t ncol, int64_t roff,
                       int64_t dist)
{
	nx_lower *L = x->L;
	int32_t s1[1] = {1};
	int dj = L->s[NX_ENG_PE].depth - 1;
	int64_t rb = x->G * (x->side ? x->nt : x->mt);
	/* PE: the bank is free once ACT evacuated its previous tile */
	nx_l_addreg(L, NX_ENG_PE, S_PE_T, 1);
	nx_l_wait_rel(L, NX_ENG_PE, NX_LSEM_ENG + NX_ENG_ACT, x->base_act - dist, S_PE_T);
	/* not for the mid-op signals of the step before (S_PE_M); in a device
	 * loop the wait's second register is the iteration's: it waits for them */
	if (sd_mid(x) && !L->ndloops) {
		nx_insn *w = &L->s[NX_ENG_PE].v[L->s[NX_ENG_PE].n - 1];
		NX_ASSERT(w->op == NX_I_WAIT && w->iarg[3] == 0);
		w->iarg[3] = S_PE_M + 1;
	}
	for (int first = 1; first >= 0; first--) {
		if (!first) {
			if (x->KT == 1)
				break;
			nx_l_loop(L, NX_ENG_PE, x->KT - 1);
		}
		int dk = L->s[NX_ENG_PE].depth - 1;
		nx_insn *mm = nx_l_emit(L, NX_ENG_PE, NX_I_MATMUL);
		mm->flags = first ? NX_IF_START : 0;
		uint32_t cm[1] = {(uint32_t)mrow}, cn[1] = {(uint32_t)ncol};
		int64_t k0 = first ? 0 : 1;
		nx_ap ps = nx_ap_psum(NX_DT_F32, 0, (int)mrow, pb, 1, s1, cn);
		nx_ap st, mv;
		if (x->side == 0) { /* stationary: resident A^T; moving: S */
			st = nx_ap_sbuf(x->A->dt, 0, (int)x->kt, roff + (k0 * rb + j * x->mt) * x->ea, 1, s1, cm);
			mv = nx_ap_sbuf(x->B->dt, 0, (int)x->kt, soff + k0 * x->nt * x->eb, 1, s1, cn);
			st.loop_stride[dj] = tp * x->mt * x->ea;
			if (!first)
				st.loop_stride[dk] = rb * x->ea, mv.loop_stride[dk] = x->nt * x->eb;
		} else { /* stationary: S (A^T tile); moving: resident B */
			st = nx_ap_sbuf(x->A->dt, 0, (int)x->kt, soff + k0 * x->mt * x->ea, 1, s1, cm);
			mv = nx_ap_sbuf(x->B->dt, 0, (int)x->kt, roff + (k0 * rb + j * x->nt) * x->eb, 1, s1, cn);
			mv.loop_stride[dj] = tp * x->nt * x->eb;
			if (!first)
				st.loop_stride[dk] = x->mt * x->ea, mv.loop_stride[dk] = rb * x->eb;
		}
		mm->ap[0] = ps;
		mm->ap[1] = st;
		mm->ap[2] = mv;
		if (!first)
			nx_l_endloop(L, NX_ENG_PE);
	}
	nx_lsync y = nx_l_signal(L, NX_ENG_PE);
	nx_l_max(&x->pe, &y);
}

/* One step (buffers of parity par): streamed tile sidx (plus the loops'
 * advance) of ssz rows (side 1) or columns (side 0). The step's G tiles run
 * as a loop over tile pairs (two PSUM banks per parity, four in rotation)
 * and its stores as a loop over groups of gb tiles, so the code of a step
 * does not depend on G. */
static void sd_step(sd *x, int par, int64_t sidx, int64_t ssz)
{
	nx_lower *L = x->L;
	const nx_ldmat *V = x->side ? x->A : x->B;
	/* ---- SP: S[par] is free once PE finished the step before the last */
	int64_t upe = (x->G + (x->tpe ? x->KT : 0) + x->nsec) * x->nbs + (x->cs != NULL); /* PE signals (and ACT's) per step */
	bool sp = em(x, NX_ENG_SP);
	if (sp) {
		nx_l_wait_rel(L, NX_ENG_SP, NX_LSEM_ENG + NX_ENG_PE, x->base_pe - upe, S_SP_PE);
		nx_l_addreg(L, NX_ENG_SP, S_SP_PE, upe);
	}
	/* batch steps: step sidx is batch sidx, with one streamed tile */
	int64_t bat = x->bstep ? sidx * x->nbs : 0, stl = x->bstep ? 0 : sidx;
	NX_ASSERT(!x->bstep || x->em == ~0u); /* batch steps: every engine at once */
	if (x->tpe)
		sd_stage(x, par, bat);
	else if (x->bstep)
		sd_resident(x, par, bat, 1);
	int64_t sw = x->side ? x->mt : x->nt;
	/* this step's tile: mrow x ncol (the streamed side may be ragged) */
	int64_t mrow = x->side ? ssz : x->mt, ncol = x->side ? x->nt : ssz;
	int64_t sk = x->side ? V->sc : V->sr, swd = x->side ? V->sr : V->sc;
	if (sp) {
		int32_t hs[3] = {(int32_t)(x->kt * sk), (int32_t)swd}, ss[3] = {(int32_t)sw, 1};
		uint32_t cn[3] = {(uint32_t)x->KT, (uint32_t)ssz};
		int nd = bdim(x, hs, ss, cn, V->sb, x->sbb / x->es);
		int64_t hoff = V->buf->off + (V->off + stl * sw * swd + bat * V->sb) * x->es;
		int64_t lso[3] = {x->Bt > 1 ? sd_ob(V) * x->es : 0,
		                  x->bstep ? 2 * x->nbs * V->sb * x->es : 2 * sw * swd * x->es, 0};
		int64_t lss[3] = {0, 0, 0};
		split_dma(x, NX_ENG_SP, x->ql, x->nls, true, V->dt, hoff, sk, x->kt, nd, hs, ss, cn, x->s_off[par], lso, lss,
		          x->es, &x->loads);
	}
	/* the output's pattern: the step's elements from hoff0, loop strides olso */
	int64_t m0 = x->side ? stl * x->mt : 0, n0 = x->side ? 0 : stl * x->nt, olso[3];
	int64_t hoff0 = bat * x->M * x->N + m0 * x->N + n0, eo = x->eo;
	if (x->Bt > 1) /* a batch, or B2 of them (two levels) */
		olso[0] = (x->A->B2 ? x->A->B2 : 1) * x->M * x->N * eo;
	else
		olso[0] = x->side ? x->G * x->nt * eo : x->G * x->mt * x->N * eo;
	olso[1] = x->bstep ? 2 * x->nbs * x->M * x->N * eo : x->side ? 2 * x->mt * x->N * eo : 2 * x->nt * eo;
	olso[2] = x->gb * (x->side ? x->nt : x->mt * x->N) * eo;
	/* the stores' pattern in O (out's: the same as hoff0, olso) */
	int64_t ohoff = x->O.off + bat * x->O.sb + m0 * x->O.sr + n0, oslo[3];
	if (x->Bt > 1)
		oslo[0] = (x->A->B2 ? x->O.sb1 : x->O.sb) * eo;
	else
		oslo[0] = x->side ? x->G * x->nt * eo : x->G * x->mt * x->O.sr * eo;
	oslo[1] = x->bstep ? 2 * x->nbs * x->O.sb * eo : x->side ? 2 * x->mt * x->O.sr * eo : 2 * x->nt * eo;
	oslo[2] = x->gb * (x->side ? x->nt : x->mt * x->O.sr) * eo;
	if (x->epi && sp)
		sd_epi_loads(x, par, olso, hoff0, mrow, ncol);
	if (x->lp)
		sd_rows_load(x, par, bat);
	if (x->sec) /* Y's rows after P (dot_sec.c) */
		nx_l_sd_sec_load(x, par, bat);
	/* ---- PE: the step's loads */
	/* batch steps: R and S each on their own queues (one load per queue),
	 * or both on every load queue */
	bool both = x->bstep && x->nls == x->nql, pe = em(x, NX_ENG_PE), act = em(x, NX_ENG_ACT);
	bool dve = x->rows && em(x, NX_ENG_DVE);
	if (pe) {
		nx_l_addreg(L, NX_ENG_PE, S_PE_L, (both ? 2 : 1) + x->lp + x->ld);
		for (int q = 0; q < (x->bstep ? x->nql : x->nls); q++) { /* (not the step's P and D, the last) */
			nx_l_wait_rel(L, NX_ENG_PE, x->ql[q], x->base_l[q] - x->lp - x->ld, S_PE_L);
			if (x->s0f) /* plus the block's pieces after its first step */
				L->s[NX_ENG_PE].v[L->s[NX_ENG_PE].n - 1].iarg[3] = S_PE_X + 1;
		}
	}
	if (x->lp)
		sd_rows_wait(x, (both ? 2 : 1) + x->lp + x->ld);
	/* ---- ACT: O[par] is free once the stores of the step before the last are done */
	int64_t nst = x->G / x->gb; /* store groups per step (sd_nso stores per queue each; and the second output's) */
	if (act) {
		nx_l_addreg(L, NX_ENG_ACT, S_ACT_ST, nst * sd_nso(x) + x->dq);
		for (int q = 0; q < x->nqs; q++)
			nx_l_wait_rel(L, NX_ENG_ACT, x->qs[q], x->base_s[q] - 2 * (nst * sd_nso(x) + x->dq), S_ACT_ST);
		if (sd_epi_act_any(x))
			sd_epi_wait_loads(x, NX_ENG_ACT);
	}
	int32_t s1[1] = {1};
	int64_t roff = x->r_off[x->bstep ? par : 0];
	int tp = x->G % 2 ? 1 : 2; /* tiles per iteration, one PSUM bank each */
	int64_t npair = x->G / tp;
	/* a bank's previous tile: two tiles before (pairs alternate banks by
	 * parity; one tile per step alternates by step) */
	int64_t dist = tp == 2 || x->G == 1 ? 2 : 1;
	if (x->tpe)
		sd_transpose(x, par);
	/* the step's nbs batches one after the other (unrolled: the loop
	 * nest is at its depth limit) */
	int64_t roff0 = roff;
	for (int64_t b = 0; b < x->nbs; b++) {
	roff = roff0 + b * x->rbb, x->bo = b;
	int64_t soff = x->s_off[par] + b * x->sbb, ooff = x->o_off[par] + b * x->obb;
	/* a loop even of one pair: the code does not depend on G */
	if (pe)
		nx_l_loop(L, NX_ENG_PE, npair);
	if (act)
		nx_l_loop(L, NX_ENG_ACT, npair);
	if (dve)
		nx_l_loop(L, NX_ENG_DVE, npair);
	int da = L->s[NX_ENG_ACT].depth - 1;
	if (act && sd_epi_act_any(x))
		sd_epi_act(x, par, mrow, ncol, da, tp);
	if (!x->bstep && pe) {
		/* the pair's resident piece (trivially there after the block's
		 * first step): piece u of block b is the queue's (b*pieces + u + 1)-th
		 * transfer, after b blocks of stores on the store queues */
		nx_l_addreg(L, NX_ENG_PE, S_PE_PL, 1);
		for (int q = x->nls; q < x->nql; q++)
			nx_l_wait_rel(L, NX_ENG_PE, x->ql[q], x->base_l[q], S_PE_PL);
		for (int q = 0; q < x->nqp; q++) /* after the first step's epilogue inputs (dot_start.c) */
			nx_l_wait_rel(L, NX_ENG_PE, x->qe[q], x->base_e[q] + x->epi->nstr - x->p0off, S_PE_PL);
		nx_l_addreg(L, NX_ENG_PE, S_PE_PS, 1);
		for (int q = 0; q < x->nqs_res; q++)
			nx_l_wait_rel(L, NX_ENG_PE, x->qs[q], x->base_s[q], S_PE_PS);
		/* s0f: on the streaming queues piece u of block b follows
		 * b*(NS + rq) transfers and the block's first tile (p0off: piece
		 * 0 is not there); trivially there after the first step */
		if (x->s0f) {
			nx_l_addreg(L, NX_ENG_PE, S_PE_PQ, 1);
			for (int q = 0; q < x->nls; q++)
				nx_l_wait_rel(L, NX_ENG_PE, x->ql[q], x->base_l[q], S_PE_PQ);
		}
	}
	for (int j = 0; j < tp; j++) {
		int64_t pb = x->pbase + (tp == 2 ? 2 * par + j : par) * x->bank;
		if (pe)
			sd_tile_pe(x, soff, j, tp, pb, mrow, ncol, roff, dist);
		/* ACT: evacuate the bank into O[par] with the cast (a row
		 * epilogue: after DVE's statistics of the bank, kernels/dot_rows.c) */
		if (!act)
			continue;
		uint32_t cn[1] = {(uint32_t)ncol};
		nx_ap po = nx_ap_sbuf(x->out->dt, 0, (int)mrow, ooff + j * x->nt * x->eo, 1, s1, cn);
		nx_ap pp = nx_ap_psum(NX_DT_F32, 0, (int)mrow, pb, 1, s1, cn);
		po.loop_stride[da] = tp * x->nt * x->eo;
		int64_t bi = (pb - x->pbase) / x->bank;
		if (x->rows)
			sd_rows_stats(x, par, j, tp, bi, pp);
		nx_l_addreg(L, NX_ENG_ACT, S_ACT_PE, 1);
		nx_l_wait_rel(L, NX_ENG_ACT, NX_LSEM_ENG + (x->rows ? NX_ENG_DVE : NX_ENG_PE),
		              x->rows ? x->base_dve : x->base_pe, S_ACT_PE);
		if (x->rows) {
			nx_l_dot_rows_evac(L, x->rows, po, pp, x->rows_off + bi * 4, x->rows_off + 16 + bi * 4,
			                   x->tmp_off + bi * x->nt * 4);
		} else if (x->epi && x->epi->evac_func >= 0) { /* the epilogue's first ops (dot_epi.c) */
			nx_insn *cp = nx_l_emit(L, NX_ENG_ACT, NX_I_ACTIVATE);
			cp->func = (uint8_t)x->epi->evac_func;
			cp->fimm[0] = x->epi->evac_scale;
			cp->ap[0] = po;
			cp->ap[1] = pp;
		} else {
			nx_insn *cp = nx_l_emit(L, NX_ENG_ACT, NX_I_TENSOR_COPY);
			cp->ap[0] = po;
			cp->ap[1] = pp;
		}
		nx_lsync y = nx_l_signal(L, NX_ENG_ACT);
		nx_l_max(&x->act, &y);
	}
	if (pe && sd_mid(x))
		nx_l_setreg(L, NX_ENG_PE, S_PE_M, 0);
	if (pe)
		nx_l_endloop(L, NX_ENG_PE);
	if (act)
		nx_l_endloop(L, NX_ENG_ACT);
	if (dve)
		nx_l_endloop(L, NX_ENG_DVE);
	if (x->sec) /* the batch's second output (dot_sec.c) */
		nx_l_sd_sec_batch(x, par, b);
	}
	x->bo = 0;
	if (x->cs && pe) /* the column sum of S[par] (kernels/dot_cs.c) */
		nx_l_dot_cs_pe(x, par, ssz);
	if (x->cs && act)
		nx_l_dot_cs_act(x, par, stl, ssz);
	if (x->cs && em(x, NX_ENG_DVE))
		nx_l_dot_cs_dve(x, par, ssz);
	if (x->sec) /* the outputs from the step's result (dot_sec.c) */
		nx_l_sd_sec_step(x, par);
	if (sd_mid(x) && act)
		sd_mid_act(x, par, mrow, ncol);
	if (sd_mid(x) && pe) { /* ACT's mid-op signals (the next step's first pair not for them) */
		nx_l_addreg(L, NX_ENG_PE, S_PE_T, nst);
		nx_l_setreg(L, NX_ENG_PE, S_PE_M, -nst);
	}
	if (!x->bstep && pe) {
		nx_l_addreg(L, NX_ENG_PE, S_PE_PL, -npair);
		nx_l_addreg(L, NX_ENG_PE, S_PE_PS, -npair);
		if (x->s0f) {
			nx_l_addreg(L, NX_ENG_PE, S_PE_PQ, -npair);
			nx_l_setreg(L, NX_ENG_PE, S_PE_X, x->rq); /* the next steps follow the pieces */
		}
	}
	if (x->epi && em(x, NX_ENG_DVE))
		sd_epi_ops(x, par, stl, mrow, ncol);
	if (!em(x, NX_ENG_POOL))
		return;
	/* ---- POOL: store each group of gb tiles of O[par] once ACT evacuated it
	 * side 0: tiles along M: O [mt, G, nt] -> C[m0 + g*mt + p, n0 + n];
	 * side 1: tiles along N: O [mt, G*nt] -> C[m0 + p, n0 + n] */
	if (x->tpe)
		nx_l_addreg(L, NX_ENG_POOL, S_POOL_ACT, x->KT * x->nbs);
	if (x->epool) /* an epilogue keeps nbs == 1 (dot_plan.c) */
		sd_epi_wait_loads(x, NX_ENG_POOL);
	if (sd_mid(x)) { /* the first pass over the groups, once ACT evacuated each */
		nx_l_loop(L, NX_ENG_POOL, nst);
		nx_l_addreg(L, NX_ENG_POOL, S_POOL_ACT, x->gb);
		nx_l_wait_rel(L, NX_ENG_POOL, NX_LSEM_ENG + NX_ENG_ACT, x->base_act, S_POOL_ACT);
		sd_epi_group(x, NX_ENG_POOL, L->s[NX_ENG_POOL].depth - 1, par, stl, mrow, ncol, 0);
		nx_l_endloop(L, NX_ENG_POOL);
	}
	nx_l_loop(L, NX_ENG_POOL, nst); /* a loop even of one group (nbs > 1: of each batch) */
	x->lv_g = L->s[NX_ENG_POOL].depth - 1;
	/* (mid ops: then ACT's mid ops on the group) */
	nx_l_addreg(L, NX_ENG_POOL, S_POOL_ACT, sd_mid(x) ? 1 : x->gb * x->nbs);
	nx_l_wait_rel(L, NX_ENG_POOL, NX_LSEM_ENG + NX_ENG_ACT, x->base_act, S_POOL_ACT);
	if (x->epool) {
		sd_epi_group(x, NX_ENG_POOL, x->lv_g, par, stl, mrow, ncol, sd_mid(x) ? 1 : -1);
	} else if (x->epi) {
		nx_l_addreg(L, NX_ENG_POOL, S_POOL_DVE, 1);
		nx_l_wait_rel(L, NX_ENG_POOL, NX_LSEM_ENG + NX_ENG_DVE, x->base_dve, S_POOL_DVE);
	}
	{
		int64_t tstep = x->side ? x->nt : x->mt * x->O.sr;
		int32_t hs[3] = {(int32_t)tstep, 1}, ss[3] = {(int32_t)x->nt, 1};
		uint32_t cn[3] = {(uint32_t)x->gb, (uint32_t)ncol};
		int nd = bdim(x, hs, ss, cn, x->O.sb, x->obb / eo);
		int64_t lss[3] = {0, 0, x->gb * x->nt * eo};
		if (x->lp)
			sd_rows_post(x, par, mrow);
		int nq = x->qsplit ? x->nqs / (1 + x->epi->nxo) : x->nqs;
		split_dma(x, NX_ENG_POOL, x->qs, nq, false, x->out->dt, x->O.buf->off + ohoff * eo, x->O.sr, mrow, nd, hs,
		          ss, cn, x->o_off[par], oslo, lss, (int)eo, &x->stores);
		for (int j = 0; x->epi && j < x->epi->nxo; j++) /* the other outputs, the same layout */
			split_dma(x, NX_ENG_POOL, x->qs + (x->qsplit ? (j + 1) * nq : 0), nq, false, x->out->dt,
			          x->epi->xout[j]->buf->off + ohoff * eo, x->O.sr, mrow, nd, hs, ss, cn,
			          sd_slot(x, x->epi->ncarry + j, par), oslo, lss, (int)eo, &x->stores);
	}
	nx_l_endloop(L, NX_ENG_POOL);
	x->lv_g = -1;
	if (x->sec)
		nx_l_sd_sec_store(x, par, bat);
}

/* the four engines' loops, and DVE's when an epilogue runs there */
static void sd_loop(sd *x, int64_t n)
{
	for (int k = 0; k < 4; k++)
		if (em(x, engs[k]))
			nx_l_loop(x->L, engs[k], n);
	if (((x->epi && !x->epool) || x->rows || x->cs) && em(x, NX_ENG_DVE))
		nx_l_loop(x->L, NX_ENG_DVE, n);
}

static void sd_endloop(sd *x)
{
	for (int k = 0; k < 4; k++)
		if (em(x, engs[k]))
			nx_l_endloop(x->L, engs[k]);
	if (((x->epi && !x->epool) || x->rows || x->cs) && em(x, NX_ENG_DVE))
		nx_l_endloop(x->L, NX_ENG_DVE);
}

/* steps s0 .. nsteps - 1 of a block for the engines in em: the full ones
 * in pairs (a loop even of one pair: the same code for any step count),
 * then the odd one, then the ragged one; step s has parity s % 2 */
static void sd_steps(sd *x, int64_t s0, int64_t nsteps)
{
	nx_lower *L = x->L;
	int64_t sw = x->side ? x->mt : x->nt, nfull = nsteps - (x->srag > 0);
	int64_t m = nfull > s0 ? nfull - s0 : 0;
	int p = (int)(s0 % 2);
	if (m / 2 > 0) {
		sd_loop(x, m / 2);
		int e = 0;
		while (!em(x, (nx_engine)e))
			e++;
		x->lv_s = L->s[e].depth - 1; /* every engine at the same depth */
		sd_step(x, p, s0, sw);
		sd_step(x, 1 - p, s0 + 1, sw);
		sd_endloop(x);
		x->lv_s = -1;
	}
	if (m % 2)
		sd_step(x, (int)((nfull - 1) % 2), nfull - 1, sw);
	if (x->srag && nsteps - 1 >= s0)
		sd_step(x, (int)((nsteps - 1) % 2), nsteps - 1, x->srag);
}

static void sd_block(sd *x)
{
	nx_lower *L = x->L;
	int64_t nsteps = x->bstep ? (x->A->B2 ? x->A->B2 : x->Bt) / x->nbs : x->NS;
	if (x->bstep) {
		sd_steps(x, 0, nsteps);
		return;
	}
	int64_t sz0 = nsteps > 1 || !x->srag ? (x->side ? x->mt : x->nt) : x->srag;
	/* s0f: SP loads the block's first tile before its pieces (which share
	 * its queues), once S[0] is free: with an odd step count the parity
	 * restarts, so after the previous block (below) */
	bool restart = x->NS % 2 && x->NB * x->Bt > 1, early = x->s0f && !restart;
	int64_t upe = early ? x->G + (x->cs != NULL) : 0, udve = early ? sd_epi_sigs(x) : 0;
	x->em = 1u << NX_ENG_SP;
	if (early)
		sd_step(x, 0, 0, sz0);
	/* SP and POOL: the previous block's matmuls are done (POOL: its
	 * tiles are evacuated, and stored: program order) */
	nx_l_wait_rel(L, NX_ENG_SP, NX_LSEM_ENG + NX_ENG_PE, x->base_pe - upe, S_SP_PE);
	nx_l_wait_rel(L, NX_ENG_POOL, NX_LSEM_ENG + NX_ENG_ACT, x->base_act, S_POOL_ACT);
	if (x->epi && x->epi->nstr)
		nx_l_wait_rel(L, NX_ENG_SP, NX_LSEM_ENG + sd_epi_eng(x), x->base_dve - udve, S_SP_DVE);
	if (x->s0f && restart)
		sd_step(x, 0, 0, sz0);
	sd_resident(x, 0, 0, 1);
	sd_resident(x, 0, 0, 2);
	/* PE: without s0f, on the streaming queues the block's pieces come
	 * before its tiles, so the first step's load wait covers them */
	if (x->rsq && !x->s0f)
		nx_l_addreg(L, NX_ENG_PE, S_PE_L, x->rp);
	if (x->s0f)
		nx_l_setreg(L, NX_ENG_PE, S_PE_X, 0);
	/* ACT: counts the resident pieces on the store queues; with an odd
	 * step count the parity restarts, so every earlier store must be done */
	if (x->nqs_res)
		nx_l_addreg(L, NX_ENG_ACT, S_ACT_ST, x->rp);
	if (restart)
		for (int q = 0; q < x->nqs; q++)
			nx_l_wait_rel(L, NX_ENG_ACT, x->qs[q], x->base_s[q], S_ACT_ST);
	/* PE: one tile per step takes the bank of its parity, which then
	 * restarts too: the odd step's bank must be evacuated */
	if (x->G == 1 && restart)
		nx_l_wait_rel(L, NX_ENG_PE, NX_LSEM_ENG + NX_ENG_ACT, x->base_act, S_PE_T);
	/* s0f: SP the other steps; the other engines every step */
	x->em = ~0u;
	if (x->s0f) {
		x->em = 1u << NX_ENG_SP;
		sd_steps(x, 1, nsteps);
		x->em = ~(1u << NX_ENG_SP);
	}
	sd_steps(x, 0, nsteps);
	x->em = ~0u;
	if (x->s0f) { /* the next block's tiles and pieces follow these */
		nx_l_addreg(L, NX_ENG_PE, S_PE_L, x->rq);
		nx_l_addreg(L, NX_ENG_PE, S_PE_PQ, nsteps + x->rq);
	}
	/* PE: the next block's pieces follow this block's on the piece queues
	 * (and its stores on the store queues) */
	nx_l_addreg(L, NX_ENG_PE, S_PE_PL, x->rp);
	nx_l_addreg(L, NX_ENG_PE, S_PE_PS, x->rp + nsteps * (x->G / x->gb) * sd_nso(x));
}


/* the epilogue's buffers from `off` (bias rows, E[2] per streamed input,
 * DVE's scratch) and queues (the ones the dot leaves: SP's side first) */
static void sd_epi_setup(sd *x, int64_t off)
{
	const nx_ldepi *e = x->epi;
	int es = nx_dtype_bytes[e->dt];
	for (int k = 0; k < e->nrow; k++, off += nx_l_al64(x->N * es))
		x->e_row[k] = off;
	for (int k = 0; k < e->nstr; k++)
		for (int p = 0; p < 2; p++, off += nx_l_al64(x->G * x->nt * es))
			x->e_str[k][p] = off;
	for (int k = 0; k < e->npbuf && x->epool; k++)
		for (int p = 0; p < 2; p++, off += nx_l_al64(x->G * x->nt * es))
			x->e_pre[k][p] = off;
	x->e_scr = off;
	int spq = (x->nql < SQS ? x->nql : SQS) + (x->nqs > SQS ? x->nqs - SQS : 0);
	for (int q = 0; q < x->nqe; q++)
		x->qe[q] = nx_l_queue(x->L, spq++ < SQS ? NX_ENG_SP : NX_ENG_POOL);
}

/* kernel entry: DVE (POOL) takes the region; without queues of the
 * epilogue's own, POOL loads the bias rows (every partition the same row)
 * on the store queues, idle until the first stores, before the counts
 * start, and DVE (POOL) waits for them (else SP loads them there:
 * dot_start.c); then the counts */
static void sd_epi_entry(sd *x, int h)
{
	const nx_ldepi *e = x->epi;
	nx_lower *L = x->L;
	nx_engine ee = sd_epi_eng(x);
	nx_l_wait(L, ee, &L->sbuf_free[h]);
	for (int k = 0; k < e->nstr; k++)
		nx_l_wait(L, NX_ENG_SP, &e->str[k]->buf->written);
	nx_lsync sq;
	memset(&sq, 0, sizeof sq);
	for (int q = 0; q < x->nqs; q++) /* SP's queues: its transfers first */
		if (x->qs[q] < SQS)
			sq.s[x->qs[q]] = L->qcount[x->qs[q]];
	bool pr = !x->nqe && !nx_l_sd_epi_rows_sp(x); /* POOL loads the rows */
	if (e->nrow && pr)
		nx_l_wait(L, NX_ENG_POOL, &sq);
	int nq = x->nqs < x->mt ? x->nqs : (int)x->mt;
	for (int k = 0; k < e->nrow && pr; k++) { /* (else SP: nx_l_sd_epi_start) */
		nx_l_wait(L, NX_ENG_POOL, &e->row[k]->buf->written);
		int32_t s1[1] = {1};
		uint32_t cn[1] = {(uint32_t)x->N};
		for (int q = 0; q < nq; q++) {
			int64_t p0 = x->mt * q / nq, p1 = x->mt * (q + 1) / nq;
			nx_ap hb = nx_ap_hbm(e->dt, e->row[k]->buf->off, (int)(p1 - p0), 0, 1, s1, cn);
			nx_ap sb = nx_ap_sbuf(e->dt, (int)p0, (int)(p1 - p0), x->e_row[k], 1, s1, cn);
			nx_lsync y = nx_l_dma_q(L, NX_ENG_POOL, x->qs[q], sb, hb);
			nx_l_max(&x->eloads, &y);
			if (!x->epool) /* POOL issues them all first */
				nx_l_wait(L, ee, &y);
		}
	}
	if (x->epool && !x->nqe)
		nx_l_wait(L, ee, &x->eloads);
	for (int q = 0; q < x->nqe; q++)
		x->base_e[q] = L->qcount[x->qe[q]];
	x->base_dve = L->ecount[ee];
	nx_l_setreg(L, NX_ENG_SP, S_SP_DVE, 0);
	nx_l_setreg(L, ee, S_DVE_LD, 0);
	if (x->epool)
		nx_l_setreg(L, NX_ENG_ACT, S_DVE_LD, 0); /* the act ops' wait for the loads */
	if (sd_mid(x))
		nx_l_setreg(L, NX_ENG_ACT, S_ACT_EP, 0);
	/* relative waits on DVE or POOL (POOL; SP's: sd_emit) and on ACT (DVE)
	 * see only this kernel's signals */
	nx_lsync e0;
	memset(&e0, 0, sizeof e0);
	e0.s[NX_LSEM_ENG + ee] = x->base_dve;
	if (x->epool)
		return; /* POOL's own waits on ACT: sd_emit */
	nx_l_setreg(L, NX_ENG_DVE, S_DVE_ACT, 0);
	nx_l_setreg(L, NX_ENG_POOL, S_POOL_DVE, 0);
	nx_l_wait(L, NX_ENG_POOL, &e0);
	memset(&e0, 0, sizeof e0);
	e0.s[NX_LSEM_ENG + NX_ENG_ACT] = L->ecount[NX_ENG_ACT];
	nx_l_wait(L, NX_ENG_DVE, &e0);
}

static nx_status sd_emit(nx_lower *L, sd *x)
{
	const nx_target *t = L->t;
	int64_t rw = x->side ? x->nt : x->mt, sw = x->side ? x->mt : x->nt;
	int64_t rbytes = nx_l_al64(x->KT * x->G * rw * x->er), sbytes = nx_l_al64(x->KT * sw * x->es);
	int64_t obytes = nx_l_al64(x->G * x->nt * x->eo);
	int64_t tbytes = x->tpe ? nx_l_al64(x->nw * x->K * x->er) : 0;
	NX_ASSERT(!(x->epi && x->rows)); /* their buffers and DVE counts share the same places */
	NX_ASSERT(x->nbs >= 1 && (x->nbs == 1 || (x->bstep && !x->epi)));
	x->ep = x->rows && x->rows->P ? nx_dtype_bytes[x->rows->P->dt] : 0;
	x->rbb = rbytes, x->sbb = sbytes, x->obb = obytes, x->tbb = tbytes, x->pbb = nx_l_al64(x->G * x->nt * x->ep);
	rbytes *= x->nbs, sbytes *= x->nbs, obytes *= x->nbs, tbytes *= x->nbs;
	int64_t ebytes = x->rows ? 64 + nx_l_dot_rows_bytes(x->rows, x->G, x->nt) + 2 * (x->nbs - 1) * x->pbb : 0;
	int64_t bytes = (x->bstep ? 2 : 1) * rbytes + 2 * sbytes + 2 * obytes + 2 * tbytes + ebytes, base;
	if (x->epi)
		bytes += nx_l_epi_bytes(x->epi, x->G, x->gb, x->nt, x->N) +
		         (x->epool ? nx_l_epi_pre_bytes(x->epi, x->G, x->nt) : 0);
	int64_t cs_off = bytes;
	bytes += nx_l_dot_cs_bytes(x);
	int64_t secb = x->sec ? nx_l_sd_sec_bytes(L, x, x->G, x->mt, x->nbs) : 0;
	NX_ASSERT(secb >= 0 && (!x->sec || (x->bstep && x->side == 0)));
	bytes += secb;
	int h;
	nx_status rc;
	if ((rc = nx_l_sbuf_begin_big(L, bytes, &base, &h)))
		return rc;
	L->st.flops += 2.0 * (double)x->Bt * (double)x->M * (double)x->N * (double)x->K;
	x->r_off[0] = base;
	x->r_off[1] = base + (x->bstep ? rbytes : 0);
	x->s_off[0] = x->r_off[1] + rbytes, x->s_off[1] = x->s_off[0] + sbytes;
	x->o_off[0] = x->s_off[1] + sbytes, x->o_off[1] = x->o_off[0] + obytes;
	x->t_off[0] = x->o_off[1] + obytes, x->t_off[1] = x->t_off[0] + tbytes;
	x->rows_off = x->t_off[1] + tbytes;
	x->lp = x->ep ? 1 : 0;
	x->p_off[0] = x->rows_off + 64, x->p_off[1] = x->p_off[0] + x->nbs * x->pbb;
	x->tmp_off = x->p_off[1] + x->nbs * x->pbb;
	int ph = L->pidx++ & 1;
	x->bank = t->psum_bank_bytes;
	x->pbase = ph * (t->psum_banks / 2) * x->bank;
	for (int q = 0; q < x->nql; q++) /* SP issues every load, on either side's queues */
		x->ql[q] = nx_l_queue(L, q < SQS ? NX_ENG_SP : NX_ENG_POOL);
	for (int q = 0; q < x->nqs; q++) /* POOL issues every store, on either side's queues */
		x->qs[q] = nx_l_queue(L, q < SQS ? NX_ENG_POOL : NX_ENG_SP);
	if (x->epi)
		sd_epi_setup(x, x->t_off[1] + tbytes);
	if (x->cs)
		nx_l_dot_cs_setup(x, base + cs_off);
	/* resident partitions: the same share per piece queue */
	int npl = x->rsq ? x->nql : x->nql - x->nls;
	x->nsp = npl + x->nqs_res ? x->kt * npl / (npl + x->nqs_res) : x->kt;
	int n0 = x->nql - x->nls + x->nqs_res;
	/* s0f: every plan without batch steps outside device loops (a device
	 * loop's waits add its own register), so that the code does not
	 * depend on rsq; without rsq the streaming queues carry no pieces */
	x->s0f = !x->bstep && !L->ndloops;
	x->p0off = x->p0off && x->s0f && x->rsq && x->rp > 1 && n0 > 0 && x->kt >= n0; /* the planner's choice */
	x->rq = x->rsq ? x->rp - x->p0off : 0;
	x->nsp0 = x->p0off ? x->kt * (x->nql - x->nls) / n0 : 0;
	nx_l_sd_epi_pieces(x, npl);
	x->lv_o = x->lv_s = x->lv_g = -1;
	x->em = ~0u;
	const char *rn = x->side ? "B" : "A^T", *sn = x->side ? "A^T" : "B";
	nx_l_plan_kernel(L, "dot-loop");
	nx_l_plan(L, "shape", "%lld x [%lld, %lld] . [%lld, %lld] %s.%s -> %s", (long long)x->Bt, (long long)x->M,
	          (long long)x->K, (long long)x->K, (long long)x->N, nx_dtype_names[x->A->dt], nx_dtype_names[x->B->dt],
	          nx_dtype_names[x->out->dt]);
	nx_l_plan(L, "tiling", "mt %lld, nt %lld, kt %lld; %lld K tiles, whole K resident", (long long)x->mt,
	          (long long)x->nt, (long long)x->kt, (long long)x->KT);
	if (x->bstep && x->nbs > 1)
		nx_l_plan(L, "loops",
		          "%sstep = %lld batches of %lld (pairs, double-buffered, one transfer per queue) > %lld "
		          "tiles each (pairs, stores of %lld) > k %lld",
		          x->A->B2 ? nx_arena_printf(&L->a, "b %lld > ", (long long)(x->Bt / x->A->B2)) : "", (long long)x->nbs,
		          (long long)(x->A->B2 ? x->A->B2 : x->Bt), (long long)x->G, (long long)x->gb, (long long)x->KT);
	else if (x->bstep && x->A->B2)
		nx_l_plan(L, "loops",
		          "b %lld > step = batch %lld (pairs, double-buffered) > %lld tiles (%s, stores of %lld) > k %lld",
		          (long long)(x->Bt / x->A->B2), (long long)x->A->B2, (long long)x->G, x->G > 1 ? "pairs" : "one",
		          (long long)x->gb, (long long)x->KT);
	else if (x->bstep)
		nx_l_plan(L, "loops", "step = batch %lld (pairs, double-buffered) > %lld tiles (%s, stores of %lld) > k %lld",
		          (long long)x->Bt, (long long)x->G, x->G > 1 ? "pairs" : "one", (long long)x->gb, (long long)x->KT);
	else
		nx_l_plan(L, "loops", "%s %lld > step %lld (pairs, double-buffered) > %lld tiles (%s, stores of %lld) > k %lld",
		          x->Bt > 1 ? "b" : "block", (long long)(x->Bt > 1 ? x->Bt : x->NB), (long long)x->NS,
		          (long long)x->G, x->G > 1 ? "pairs" : "one", (long long)x->gb, (long long)x->KT);
	if (x->bstep && x->nls < x->nql)
		nx_l_plan(L, "engines",
		          "load sp q%d (+%d queues: %d streamed, %d resident), matmul pe, evacuate act, store pool q%d (+%d "
		          "queues)",
		          x->ql[0], x->nql - 1, x->nls, x->nql - x->nls, x->qs[0], x->nqs - 1);
	else if (x->bstep)
		nx_l_plan(L, "engines", "load sp q%d (+%d queues), matmul pe, evacuate act, store pool q%d (+%d queues)",
		          x->ql[0], x->nql - 1, x->qs[0], x->nqs - 1);
	else
		nx_l_plan(L, "engines",
		          "load sp q%d (+%d queues), resident on %d sp + %d store queues, matmul pe, evacuate act, store "
		          "pool q%d (+%d queues)",
		          x->ql[0], x->nls - 1, x->rsq ? x->nql : x->nql - x->nls, x->nqs_res, x->qs[0], x->nqs - 1);
	nx_l_plan(L, "resident", "%s [%lld, %lld] per %s in %lld piece%s%s, streamed %s [%lld, %lld] per step", rn,
	          (long long)x->K, (long long)(x->G * rw), x->bstep ? "step" : x->Bt > 1 ? "batch" : "block",
	          (long long)x->rp, x->rp > 1 ? "s" : "",
	          x->tpe     ? " (loaded as stored, transposed on pe)"
	          : x->p0off ? " (piece 0 not on the streaming queues)"
	                     : "",
	          sn,
	          (long long)x->K, (long long)sw);
	if (x->epi) {
		int na = 0, nv = 0;
		for (int k = 0; k < x->epi->nop; k++)
			na += x->epool && x->epi->op[k].act, nv += x->epi->op[k].evac || x->epi->op[k].fold;
		int nm = x->epi->nmid;
		nx_l_plan(L, "epilogue", "%d op%s on %s per store group%s%s%s%s", x->epi->nop - na - nv - nm,
		          x->epi->nop - na - nv - nm == 1 ? "" : "s", x->epool ? "pool" : "dve",
		          na   ? nx_arena_printf(&L->a, " (%d more on act, per tile pair before its evacuation)", na)
		          : nm ? nx_arena_printf(&L->a, " in two passes (%d more on act between them, %d step slot%s)", nm,
		                                 x->epi->ncarry, x->epi->ncarry == 1 ? "" : "s")
		               : "",
		          x->epi->desc,
		          x->nqe ? nx_arena_printf(&L->a, " on sp q%d (+%d queues%s)", x->qe[0], x->nqe - 1,
		                                   x->nqp ? ", then resident pieces" : "")
		                 : "",
		          x->qsplit ? nx_arena_printf(&L->a, ", each on %d store queues", x->nqs / (1 + x->epi->nxo)) : "");
	}
	if (x->rows)
		nx_l_dot_rows_plan(L, x->rows, x->mt, x->nt);
	if (x->cs)
		nx_l_dot_cs_plan(L, x);
	if (x->sec)
		nx_l_sd_sec_setup(x, base + bytes - secb, ph);
	nx_l_mem(L, "psum", "half %d, %d banks rotating", ph, x->G > 1 ? 4 : 2);

	for (int k = 0; k < 4; k++)
		nx_l_wait(L, engs[k], &L->sbuf_free[h]);
	nx_l_wait(L, NX_ENG_SP, &x->A->buf->written);
	nx_l_wait(L, NX_ENG_SP, &x->B->buf->written);
	if (x->lp)
		nx_l_wait(L, NX_ENG_SP, &x->rows->P->buf->written);
	nx_l_wait(L, NX_ENG_POOL, &x->A->buf->written);
	nx_l_wait(L, NX_ENG_POOL, &x->B->buf->written);
	nx_l_wait(L, NX_ENG_PE, &L->psum_free[ph]);
	nx_l_wait(L, NX_ENG_POOL, &x->O.buf->war);
	for (int j = 0; x->epi && j < x->epi->nxo; j++)
		nx_l_wait(L, NX_ENG_POOL, &x->epi->xout[j]->buf->war);
	if (x->cs)
		nx_l_dot_cs_entry(x, h);
	if (x->epi)
		sd_epi_entry(x, h);
	for (int q = 0; q < x->nql; q++)
		x->base_l[q] = L->qcount[x->ql[q]];
	for (int q = 0; q < x->nqs; q++)
		x->base_s[q] = L->qcount[x->qs[q]];
	x->base_pe = L->ecount[NX_ENG_PE];
	x->base_act = L->ecount[NX_ENG_ACT];
	x->base_dve = L->ecount[x->epi ? sd_epi_eng(x) : NX_ENG_DVE];
	x->base_pool = L->ecount[NX_ENG_POOL];
	if (x->rows) {
		nx_l_wait(L, NX_ENG_DVE, &L->sbuf_free[h]);
		nx_l_setreg(L, NX_ENG_DVE, 0, 0);
		nx_l_setreg(L, NX_ENG_DVE, 1, 0);
		x->rows->done = true;
	}
	if (x->lp) {
		nx_l_setreg(L, NX_ENG_SP, S_SP_PE + 1, 0);
	}
	if (x->sec)
		nx_l_sd_sec_entry(x, ph);
	/* SP loading on POOL-side queues: the semaphore counts assume one
	 * issuing engine per queue at a time, so SP first waits for everything
	 * earlier on them (and POOL waits for SP's loads at the end) */
	nx_lsync bq, bs;
	memset(&bq, 0, sizeof bq);
	for (int q = SQS; q < x->nql; q++)
		bq.s[x->ql[q]] = x->base_l[q];
	for (int q = 0; q < x->nqe; q++)
		if (x->qe[q] >= SQS)
			bq.s[x->qe[q]] = x->base_e[q];
	nx_l_wait(L, NX_ENG_SP, &bq);
	if (x->epi)
		nx_l_sd_epi_start(x);
	/* likewise POOL storing on SP-side queues */
	memset(&bs, 0, sizeof bs);
	for (int q = SQS; q < x->nqs; q++)
		bs.s[x->qs[q]] = x->base_s[q];
	nx_l_wait(L, NX_ENG_POOL, &bs);
	nx_l_setreg(L, NX_ENG_SP, S_SP_PE, 0);
	nx_l_setreg(L, NX_ENG_PE, S_PE_T, 0);
	if (sd_mid(x))
		nx_l_setreg(L, NX_ENG_PE, S_PE_M, 0);
	nx_l_setreg(L, NX_ENG_PE, S_PE_L, 0);
	if (!x->bstep) {
		nx_l_setreg(L, NX_ENG_PE, S_PE_PL, 0);
		nx_l_setreg(L, NX_ENG_PE, S_PE_PS, 0);
		if (x->s0f)
			nx_l_setreg(L, NX_ENG_PE, S_PE_PQ, x->rsq ? 1 - x->p0off : 1 - x->G / (x->G % 2 ? 1 : 2));
	}
	nx_l_setreg(L, NX_ENG_ACT, S_ACT_PE, 0);
	nx_l_setreg(L, NX_ENG_ACT, S_ACT_ST, 0);
	nx_l_setreg(L, NX_ENG_POOL, S_POOL_ACT, 0);
	/* relative waits see only this kernel's signals: the engines' earlier
	 * kernels must be complete before; not SP's, whose waits only guard
	 * buffers of this region (the region's wait covers their earlier
	 * users) and imply this kernel's signals they count (program order):
	 * its first loads overlap the previous kernel's tail */
	nx_lsync e0;
	memset(&e0, 0, sizeof e0);
	e0.s[NX_LSEM_ENG + NX_ENG_ACT] = x->base_act;
	nx_l_wait(L, NX_ENG_PE, &e0);
	nx_l_wait(L, NX_ENG_POOL, &e0);
	e0.s[NX_LSEM_ENG + NX_ENG_ACT] = 0;
	e0.s[NX_LSEM_ENG + NX_ENG_PE] = x->base_pe;
	nx_l_wait(L, NX_ENG_ACT, &e0);
	e0.s[NX_LSEM_ENG + NX_ENG_PE] = 0;
	for (int q = 0; q < x->nqs; q++)
		e0.s[x->qs[q]] = x->base_s[q];
	nx_l_wait(L, NX_ENG_ACT, &e0);

	int64_t nout = x->bstep ? (x->A->B2 ? x->Bt / x->A->B2 : 1) : x->Bt > 1 ? x->Bt : x->NB;
	sd_loop(x, nout); /* a loop even of one block: the same code for any volume */
	x->lv_o = L->s[NX_ENG_SP].depth - 1;
	sd_block(x);
	sd_endloop(x);

	for (int q = SQS; q < x->nql; q++)
		bq.s[x->ql[q]] = L->qcount[x->ql[q]];
	for (int q = 0; q < x->nqe; q++)
		if (x->qe[q] >= SQS)
			bq.s[x->qe[q]] = L->qcount[x->qe[q]];
	nx_l_wait(L, NX_ENG_POOL, &bq);
	for (int q = SQS; q < x->nqs; q++)
		bs.s[x->qs[q]] = L->qcount[x->qs[q]];
	nx_l_wait(L, NX_ENG_SP, &bs);
	nx_l_max(&x->A->buf->war, &x->loads);
	nx_l_max(&x->B->buf->war, &x->loads);
	if (x->lp)
		nx_l_max(&x->rows->P->buf->war, &x->loads);
	nx_l_max(&x->O.buf->written, &x->stores);
	nx_l_max(&x->O.buf->war, &x->stores);
	if (x->cs) /* (ACT's last signal: its sums too) */
		nx_l_dot_cs_store(x, &x->pe);
	L->psum_free[ph] = x->act;
	if (x->sec)
		nx_l_sd_sec_exit(x, ph);
	nx_lsync done = x->stores;
	nx_l_max(&done, &x->loads);
	nx_l_max(&done, &x->pe);
	nx_l_max(&done, &x->act);
	nx_l_max(&done, &x->dve);
	if (x->epi) {
		nx_l_max(&done, &x->eloads);
		nx_l_max(&x->out->buf->written, &x->dve);
		for (int j = 0; j < x->epi->nxo; j++) {
			nx_l_max(&x->epi->xout[j]->buf->written, &x->stores);
			nx_l_max(&x->epi->xout[j]->buf->war, &x->stores);
		}
		for (int k = 0; k < x->epi->nrow; k++)
			nx_l_max(&x->epi->row[k]->buf->war, &x->eloads);
		for (int k = 0; k < x->epi->nstr; k++)
			nx_l_max(&x->epi->str[k]->buf->war, &x->eloads);
	}
	if (x->lp) { /* POOL's multiplies read P and O */
		nx_lsync y = nx_l_signal(L, NX_ENG_POOL);
		nx_l_max(&done, &y);
	}
	nx_l_sbuf_end(L, h, &done);
	return NX_OK;
}

static bool sd_fits(const nx_target *t, const nx_ldmat *A, const nx_ldmat *B, int64_t M, int64_t N)
{
	return M * N < ((int64_t)1 << 40) && A->sr <= INT32_MAX && B->sc <= INT32_MAX && A->sc * t->pe_rows <= INT32_MAX &&
	       B->sr * t->pe_rows <= INT32_MAX && N * t->pe_cols <= INT32_MAX;
}

static void sd_init(sd *sc, nx_lower *L, const nx_ldmat *A, const nx_ldmat *B, nx_lval *out, int64_t Bt, int64_t M,
                    int64_t K, int64_t N)
{
	memset(sc, 0, sizeof *sc);
	sc->L = L, sc->A = A, sc->B = B, sc->out = out, sc->Bt = Bt, sc->M = M, sc->K = K, sc->N = N;
	sc->ea = nx_dtype_bytes[A->dt], sc->eb = nx_dtype_bytes[B->dt], sc->eo = nx_dtype_bytes[out->dt];
	sc->nbs = 1;
	sc->O.buf = out->buf, sc->O.dt = out->dt, sc->O.sr = N, sc->O.sc = 1, sc->O.sb = M * N;
	sc->O.B2 = A->B2, sc->O.sb1 = A->B2 * M * N;
}

/* the plan with the row epilogue when a tile can hold whole rows, else without */
static bool sd_plan_rows(nx_lower *L, sd *x)
{
	x->rows = L->dot_rows && L->dot_rows->C == x->N ? L->dot_rows : NULL;
	x->sec = x->rows && x->rows->P ? x->rows->sec : NULL; /* with a second output (dot_sec.c) if it fits */
	if (x->rows && nx_l_sd_plan(L, x))
		return true;
	if (x->sec && (x->sec = NULL, nx_l_sd_plan(L, x)))
		return true;
	x->rows = NULL;
	return nx_l_sd_plan(L, x);
}

/* x, with the column sum L->dot_cs beside it when a plan takes it and
 * that costs less than its own kernel (kernels/dot_cs.c) */
static nx_status sd_emit_cs(nx_lower *L, sd *x)
{
	sd c = *x;
	c.cs = L->dot_cs;
	if (c.cs && !x->rows && nx_l_sd_plan(L, &c) && nx_l_dot_cs_worth(L, &c, x))
		return sd_emit(L, &c);
	return sd_emit(L, x);
}

bool nx_l_dot_loop_b2_ok(nx_lower *L, const nx_ldmat *A, const nx_ldmat *B, nx_lval *out, int64_t Bt, int64_t M,
                         int64_t K, int64_t N)
{
	sd sc;
	sd_init(&sc, L, A, B, out, Bt, M, K, N);
	NX_ASSERT(A->B2 > 0 && A->B2 == B->B2);
	return Bt > 0 && M > 0 && N > 0 && K > 0 && A->sb1 <= INT32_MAX && B->sb1 <= INT32_MAX &&
	       sd_fits(L->t, A, B, M, N) && sd_plan_rows(L, &sc);
}

nx_status nx_l_dot_loop(nx_lower *L, const nx_ldmat *A, const nx_ldmat *B, nx_lval *out, int64_t Bt, int64_t M,
                        int64_t K, int64_t N)
{
	const nx_target *t = L->t;
	if (Bt == 0 || M == 0 || N == 0)
		return NX_OK;
	if (K == 0)
		return nx_l_err(L, "dot with an empty contraction is not supported by the backend yet");
	sd sc;
	nx_ldepi *epi = L->epi; /* dot_epi.c: applied by the stationary schedule only */
	L->epi = NULL;
	sd_init(&sc, L, A, B, out, Bt, M, K, N);
	sc.epi = epi;
	sd pl;
	sd_init(&pl, L, A, B, out, Bt, M, K, N);
	bool plain = sd_fits(t, A, B, M, N) && sd_plan_rows(L, &pl); /* with the row epilogue if it fits */
	const nx_ldmat *O = L->dot_out;
	if (O && plain && !epi && O->sc == 1 && O->B2 == A->B2 && O->sr <= INT32_MAX && O->sr * t->pe_cols <= INT32_MAX &&
	    O->sb <= INT32_MAX) {
		/* into the transposing reader's layout (lower.c tout) */
		L->dot_out = NULL;
		pl.O = *O;
		return sd_emit(L, &pl);
	}
	if (epi && sd_fits(t, A, B, M, N) && nx_l_sd_plan(L, &sc)) {
		/* unless the region's own kernel (its streamed bytes at the
		 * DMA peak) costs less than the epilogue costs the dot */
		double reg = (double)(1 + (epi->nxo ? epi->nxo : 1) + epi->nstr) * (double)(Bt * M * N * sc.eo) /
		                 nx_target_dma_peak_gbps(t) +
		             3000;
		if (!plain || sc.est <= pl.est + reg) {
			epi->used = true;
			return sd_emit_cs(L, &sc);
		}
	}
	if (plain)
		return sd_emit_cs(L, &pl);
	return nx_l_dot_kloop(L, A, B, out, Bt, M, K, N);
}
