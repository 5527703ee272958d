/* backend/kernels/dot_start.c — the start of the dot-loop family's
 * stationary schedule (dot_loop.c) with an epilogue that has queues of its
 * own (nqe > 0): what the first matmuls wait for may not queue behind
 * what only later work needs, and those queues, idle at the start apart
 * from the first step's inputs, carry a share of the resident block. */
#include "backend/lower.h"
#include "backend/kernels/dot_loop.h"

/* The epilogue queues also carry resident pieces in a plan without batch
 * steps, outside device loops, of one block (the epilogue's counts skip
 * them once), with a partition for every piece queue: nqe, else 0. */
int nx_l_sd_epi_queues(const nx_lower *L, const nx_sd *x, bool bstep, int64_t nblocks, int nqe, int npl, int nres)
{
	if (!x->epi || !x->epi->nstr || nqe <= 0 || bstep || L->ndloops || nblocks != 1)
		return 0;
	return x->kt >= npl + nres + nqe ? nqe : 0;
}

/* sd_emit: SP's resident partitions [0, nsp) split between its npl piece
 * queues and the nqp epilogue queues (the last nspe), the same share per
 * queue as the store queues' [nsp, kt) */
void nx_l_sd_epi_pieces(nx_sd *x, int npl)
{
	x->nqp = x->s0f ? nx_l_sd_epi_queues(x->L, x, x->bstep, x->NB * x->Bt, x->nqe, npl, (int)x->nqs_res) : 0;
	x->nspe = 0;
	if (!x->nqp)
		return;
	int64_t n = npl + x->nqp + x->nqs_res;
	x->nsp = x->kt * (npl + x->nqp) / n;
	x->nspe = x->nsp - x->kt * npl / n;
	NX_ASSERT(x->nspe >= x->nqp && x->nsp - x->nspe >= npl && x->kt - x->nsp >= x->nqs_res);
}

/* SP loads the epilogue's bias rows over queues qv[0..nq) (partitions
 * split among them); each transfer counts in eloads, and in erows (the
 * epilogue queues) or DVE's waits (dve: SP's own queues) */
static void rows_load(nx_sd *x, const int *qv, int nq, bool dve)
{
	const nx_ldepi *e = x->epi;
	nx_lower *L = x->L;
	int32_t s1[1] = {1};
	uint32_t cn[1] = {(uint32_t)x->N};
	for (int k = 0; k < e->nrow; k++) {
		nx_l_wait(L, NX_ENG_SP, &e->row[k]->buf->written);
		for (int q = 0; q < nq; q++) {
			int64_t p0 = x->mt * q / nq, p1 = x->mt * (q + 1) / nq;
			nx_ap hb = nx_ap_hbm(e->dt, e->row[k]->buf->off, (int)(p1 - p0), 0, 1, s1, cn);
			nx_ap sb = nx_ap_sbuf(e->dt, (int)p0, (int)(p1 - p0), x->e_row[k], 1, s1, cn);
			nx_lsync y = nx_l_dma_q(L, NX_ENG_SP, qv[q], sb, hb);
			nx_l_max(&x->eloads, &y);
			if (dve)
				nx_l_wait(L, NX_ENG_DVE, &y);
			else
				nx_l_max(&x->erows, &y);
		}
	}
}

/* The bias rows (every partition the same row of N): SP loads them on the
 * epilogue queues, ahead of the streamed inputs, instead of POOL on the
 * store queues, where they held up the resident pieces PE starts on (and
 * POOL, which waited for them before issuing its pieces). The epilogue's
 * engine waits for them before its first group (sd_epi_wait_loads); the
 * streamed inputs' counts start after them. SP runs this after its wait
 * for the earlier transfers on the POOL-side queues. On those queues
 * come then the first step's inputs, the pieces (nqp), the other steps'
 * inputs: the engines that wait for the inputs count the pieces from the
 * second step on (S_EPI_X). */
void nx_l_sd_epi_start(nx_sd *x)
{
	const nx_ldepi *e = x->epi;
	nx_lower *L = x->L;
	if (x->nqp) {
		nx_l_setreg(L, x->epool ? NX_ENG_POOL : NX_ENG_DVE, S_EPI_X, 0);
		nx_l_setreg(L, NX_ENG_ACT, S_EPI_X, 0);
	}
	if (!x->nqe || !e->nrow)
		return;
	rows_load(x, x->qe, x->nqe < x->mt ? x->nqe : (int)x->mt, false);
	for (int q = 0; q < x->nqe; q++)
		x->base_e[q] = L->qcount[x->qe[q]];
}

/* eng's last n instructions wait for a step's inputs on the epilogue
 * queues: from the second step on they also count the pieces there */
void nx_l_sd_epi_skip(nx_sd *x, nx_engine eng, int n)
{
	nx_lower *L = x->L;
	if (!x->nqp)
		return;
	for (int k = 1; k <= n; k++) {
		nx_insn *w = &L->s[eng].v[L->s[eng].n - k];
		NX_ASSERT(w->op == NX_I_WAIT && w->iarg[3] == 0);
		w->iarg[3] = S_EPI_X + 1;
	}
	nx_l_setreg(L, eng, S_EPI_X, x->rp - x->p0off);
}

/* Without epilogue queues (nqe 0) and with the epilogue on DVE: SP loads
 * the bias rows on its own load queues, ahead of the first step's inputs
 * (before their counts start: sd_emit), instead of POOL on the store
 * queues. Those queues are FIFO and still carry the previous kernel's
 * last stores at this kernel's start, and POOL only issues after them
 * (program order), so there the rows held up the resident pieces PE
 * starts on; SP's queues are idle by then. DVE waits for them; false when
 * SP has no queue of its own here (POOL loads them: sd_epi_entry). */
bool nx_l_sd_epi_rows_sp(nx_sd *x)
{
	const nx_ldepi *e = x->epi;
	int nsq = x->nql < SQS ? x->nql : SQS;
	if (x->nqe || x->epool || !e->nrow || nsq < 1)
		return false;
	rows_load(x, x->ql, nsq < x->mt ? nsq : (int)x->mt, true);
	return true;
}
