/* backend/kernels/dot_loop.h — the dot-loop family's two schedules:
 * dot_loop.c (nx_l_dot_loop: the stationary schedule, a resident operand
 * per block or batch step, with its epilogues) hands a dot it cannot plan
 * to dot_kloop.c's K-block loop. */
#ifndef NX_BACKEND_KERNELS_DOT_LOOP_H
#define NX_BACKEND_KERNELS_DOT_LOOP_H

#include "backend/lower.h"

/* ---- the stationary schedule's state, shared by its emitter (dot_loop.c)
 * and its planner (dot_plan.c) */
enum { S_SP_PE, S_PE_T, S_PE_L, S_PE_PL, S_PE_PS, S_ACT_PE, S_ACT_ST, S_POOL_ACT };
/* epilogue registers (dot_epi.c): SP counts DVE's groups, DVE ACT's tiles
 * and its loads, POOL DVE's groups; on POOL (epool): SP counts POOL's
 * groups, POOL its loads (S_DVE_LD) */
enum { S_SP_DVE = 8, S_DVE_ACT = 9, S_DVE_LD = 10, S_POOL_DVE = 11 };
/* s0f: PE's per-pair waits on the streaming queues, and the pieces there
 * that the block's steps after the first add to the loads register */
enum { S_PE_PQ = 12, S_PE_X = 13 };
/* the epilogue's engines (DVE or POOL, and ACT): 0 in the first step, then
 * the resident pieces on the epilogue queues after its inputs (dot_start.c) */
enum { S_EPI_X = 12 };
/* S_EPI_X (an epilogue's queues) and S_POOL_DV (a second output, which
 * needs the rows epilogue) never meet: sd_emit asserts !(epi && rows) */
/* second outputs (dot_sec.c): PE counts DVE's signals (its PSUM slots)
 * and POOL's (the result multiplied), DVE the stores (its V buffers),
 * POOL DVE's signals (V evacuated) */
enum { S_PE_DV = 5, S_PE_PO = 6, S_DVE_ST = 2, S_POOL_DV = 12 };
/* the column sum (dot_cs.c; never with an epilogue nor batch steps, so
 * never with a second output): PE counts DVE's sums, DVE PE's signals */
enum { S_PE_CS = 8, S_DVE_CS = 11 };
/* mid ops (dot_epi.c mark_mid): ACT counts POOL's groups of the first pass;
 * PE's tile waits add S_PE_M, minus the step before's mid-op signals at a
 * step's first pair (its banks were evacuated before them), else 0 */
enum { S_ACT_EP = 14, S_PE_M = 7 };
enum { SQ = NX_LQ, SQS = NX_LQ / 2 }; /* queues: all, a side's */

typedef struct nx_sd {
	nx_lower *L;
	const nx_ldmat *A, *B;
	nx_lval *out;
	nx_ldmat O; /* where the stores go: out, or L->dot_out (a transposing view) */
	int side;
	int64_t Bt, M, K, N, mt, nt, kt, KT;
	int64_t G, gb, NB, NS; /* tiles per block, tiles per store; blocks, steps */
	int ea, eb, eo, er, es;   /* element sizes (resident, streamed) */
	int64_t r_off[2], s_off[2], o_off[2], pbase, bank;
	bool bstep;   /* batches are the steps: R and S both load per step (two R buffers) */
	/* batch steps of nbs batches (each transfer covers them all; PE, ACT
	 * and DVE loop over them): a buffer holds nbs batches, rbb, sbb, obb,
	 * tbb and pbb bytes apart (R, S, O, T, P) */
	int64_t nbs, rbb, sbb, obb, tbb, pbb;
	int64_t bo; /* the batch of the step being emitted */
	int64_t srag; /* the streamed axis' ragged last tile (0: none) */
	/* load queues ql: the first nls take the streamed tiles, the others
	 * (SP's piece queues) and nqs_res of the store queues the resident block */
	int ql[SQ], nql, nls, qs[SQ], nqs, nqs_res;
	bool rsq;    /* the resident pieces also go on the streaming queues (after the block's first tile) */
	/* batch steps whose resident operand is stored [w, K] (K contiguous):
	 * SP loads it as is into a staging buffer T[par] ([128 w rows, nw x K]),
	 * PE transposes its 128 x 128 blocks (nw per PSUM bank, one bank per K
	 * tile) and ACT copies them into R[par]; the strided load it replaces
	 * runs at half the DMA rate */
	bool tpe;
	int64_t nw, t_off[2];
	double est;    /* the cost model's time (ns) */
	int64_t bytes; /* SBUF per partition, without the tpe staging buffers */
	int64_t nsp; /* resident partitions on SP's piece queues (the rest on the store queues) */
	bool p0off;   /* rsq: piece 0 not on the streaming queues (their pieces follow the first tile); planned */
	int64_t nsp0; /* p0off: piece 0's partitions on SP's other queues */
	int64_t rp;  /* resident pieces: one per tile pair (1 for batch steps) */
	int64_t base_l[SQ], base_s[SQ], base_pe, base_act, base_pool;
	int lv_o, lv_s; /* loop levels (all four engines): outer, step */
	int lv_g;       /* POOL's loop over the store groups of a step */
	unsigned em;    /* the engines sd_step emits for (bit per nx_engine) */
	/* s0f (no batch steps, outside device loops): on the streaming queues
	 * the block's first tile comes first, then its rq pieces (rsq; none
	 * otherwise); SP loads that tile ahead of the pieces, PE's pairs wait
	 * for their piece there too (trivially without rsq) */
	bool s0f;
	int64_t rq;
	nx_lsync loads, stores, pe, act;
	/* the epilogue (NULL none): DVE applies it per store group; SP loads
	 * its streamed inputs on nqe queues of their own */
	const nx_ldepi *epi;
	bool epool; /* the epilogue runs on POOL before each store (it is faster there) */
	bool qsplit; /* a multi-output epilogue: each output stored on its share of the store queues */
	int nqe, qe[8];
	int64_t base_e[8], base_dve, e_row[NX_LEPI_IN], e_str[NX_LEPI_IN][2], e_scr;
	int64_t e_pre[NX_LEPI_OPS][2]; /* the act ops' pre buffers (epool) */
	nx_lsync eloads, dve; /* DVE's signal base and completion: the epilogue's or the row epilogue's */
	nx_lsync erows; /* the bias rows, when SP loads them on the epilogue's queues (dot_start.c) */
	int nqp;      /* the epilogue's queues that carry resident pieces too (0 or nqe; dot_start.c) */
	int64_t nspe; /* their partitions, the last nspe of SP's nsp */
	/* a row epilogue (kernels/dot_rows.c; never with epi): DVE's statistics
	 * slots per PSUM bank at rows_off, ACT's row sums after them; ACT waits
	 * for DVE. With a P operand (batch steps only): P[par] ([mt, G, nt]
	 * like O) loaded last on every load queue (lp = 1 more per queue and
	 * step), free once the stores of the step before the last are done;
	 * DVE's products per bank at tmp_off */
	nx_ldrows *rows;
	int64_t rows_off, p_off[2], tmp_off;
	int lp, ep;
	/* a column sum of the streamed operand (kernels/dot_cs.c; NULL none):
	 * the ones column and the sums' buffer; DVE's signal for the ones */
	nx_ldcs *cs;
	int64_t cs_ones, cs_p[2], cs_res;
	nx_lsync cs_sig;
	/* second outputs (dot_sec.c; batch steps with P, side 0): V = X^T . Y
	 * per batch, X the step's P or (post) O, the N keys in nk tiles of kv.
	 * Per output: SP loads Y's rows D[par] ([mt, nbs, G, K'], dbb bytes
	 * per batch) after P on every load queue; PE accumulates the G query
	 * tiles into PSUM slots of the other half (one per batch and parity,
	 * at vps), DVE evacuates each into V[par] ([kv, nbs, nk x K'], vbb per
	 * batch), POOL stores V after the step's stores. ld, dq: the loads
	 * and stores per queue and step they add (nsec); npre, npost: the
	 * outputs from P (per batch) and from O (after the step's batches) */
	nx_ldsec *sec;
	int nsec, npre, npost, ld, dq;
	int64_t kv, nk;
	struct nx_sdo {
		const nx_ldsec *s;
		int64_t K, d_off[2], v_off[2], dbb, vbb, vps;
		int ey, eo;
	} so[2];
} nx_sd;

/* dot_sec.c: the second outputs. nx_l_sd_sec_bytes: their SBUF bytes per
 * partition for G tiles of mt rows and nbs batches per step (-1: they do
 * not fit, PSUM included); setup (buffers from off, plan lines), entry
 * (after the kernel's bases), per step SP's loads, per batch PE's
 * matmuls and DVE's evacuations of the outputs from P, after the step's
 * batches those from O, per step POOL's stores, and the exit. */
int64_t nx_l_sd_sec_bytes(const nx_lower *L, const nx_sd *x, int64_t G, int64_t mt, int64_t nbs);
void nx_l_sd_sec_setup(nx_sd *x, int64_t off, int ph);
void nx_l_sd_sec_entry(nx_sd *x, int ph);
void nx_l_sd_sec_load(nx_sd *x, int par, int64_t bat);
void nx_l_sd_sec_batch(nx_sd *x, int par, int64_t b);
void nx_l_sd_sec_step(nx_sd *x, int par);
void nx_l_sd_sec_store(nx_sd *x, int par, int64_t bat);
void nx_l_sd_sec_exit(nx_sd *x, int ph);

/* Plans the stationary schedule for x (its operands, output and options
 * set): within half the SBUF partition, or more when that is at least 3 %
 * faster; false when it does not apply. */
bool nx_l_sd_plan(nx_lower *L, nx_sd *x);

/* kernels/dot_cs.c: the column sum beside the stationary schedule. ok:
 * plan c (side, tiles, batch steps set) can take it; bytes: its SBUF per
 * partition; pe_ns: its PE time per step (mm_ns per matmul, ctl_ns per
 * control instruction); worth: plan c with it costs less than plain and
 * the standalone kernel; setup: its buffers from off; plan: its plan
 * line; entry, dve (a step's), pe (after a step's tiles), act (after a
 * step's evacuations), store (kernel end, into done): its code */
bool nx_l_dot_cs_ok(const nx_lower *L, const nx_sd *c);
int64_t nx_l_dot_cs_bytes(const nx_sd *c);
double nx_l_dot_cs_pe_ns(const nx_sd *c, double mm_ns, double ctl_ns);
bool nx_l_dot_cs_worth(const nx_lower *L, const nx_sd *c, const nx_sd *plain);
void nx_l_dot_cs_setup(nx_sd *x, int64_t off);
void nx_l_dot_cs_plan(nx_lower *L, const nx_sd *x);
void nx_l_dot_cs_entry(nx_sd *x, int h);
void nx_l_dot_cs_dve(nx_sd *x, int par, int64_t ssz);
void nx_l_dot_cs_pe(nx_sd *x, int par, int64_t ssz);
void nx_l_dot_cs_act(nx_sd *x, int par, int64_t sidx, int64_t ssz);
void nx_l_dot_cs_store(nx_sd *x, nx_lsync *done);

/* dot_start.c: the epilogue queues (nqe > 0) at the start of the kernel.
 * nx_l_sd_epi_queues: whether a plan's resident pieces go on them too
 * (npl SP piece queues, nres store queues); nx_l_sd_epi_pieces sets nqp,
 * nspe and nsp (sd_emit); nx_l_sd_epi_start: SP loads the bias rows there,
 * the engines' registers start; nx_l_sd_epi_skip: eng's waits for a step's
 * inputs, the last n emitted, skip the pieces after the first step's */
int nx_l_sd_epi_queues(const nx_lower *L, const nx_sd *x, bool bstep, int64_t nblocks, int nqe, int npl, int nres);
void nx_l_sd_epi_pieces(nx_sd *x, int npl);
void nx_l_sd_epi_start(nx_sd *x);
void nx_l_sd_epi_skip(nx_sd *x, nx_engine eng, int n);
/* dot_start.c: SP loads the bias rows of an epilogue without queues of its
 * own on DVE (false: POOL does, sd_epi_entry) */
bool nx_l_sd_epi_rows_sp(nx_sd *x);

/* out = A . B per batch as the K-block loop nest (no batch of two levels) */
nx_status nx_l_dot_kloop(nx_lower *L, const nx_ldmat *A, const nx_ldmat *B, nx_lval *out, int64_t Bt, int64_t M,
                         int64_t K, int64_t N);

#endif
