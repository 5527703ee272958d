/* backend/kernels/dot_start.c — the start of the dot-loop family's
 * stationary schedule (dot_loop.c): what a kernel loads before its first
 * matmuls may not wait behind what it needs only later. */
#include "backend/lower.h"
#include "backend/kernels/dot_loop.h"

/* The epilogue's bias rows (every partition the same row of N) when it has
 * queues of its own (nqe > 0): SP loads them there, ahead of the streamed
 * inputs, instead of POOL on the store queues, where they held up the
 * resident pieces PE starts on (and POOL, which waited for them before
 * issuing its pieces). The epilogue's engine waits for them before its
 * first group (sd_epi_wait_loads); the streamed inputs' counts start after
 * them. SP runs this after its wait for the earlier transfers on the
 * POOL-side queues. */
void nx_l_sd_epi_rows(nx_sd *x)
{
	const nx_ldepi *e = x->epi;
	nx_lower *L = x->L;
	if (!x->nqe || !e->nrow)
		return;
	int nq = x->nqe < x->mt ? x->nqe : (int)x->mt;
	int32_t s1[1] = {1};
	uint32_t cn[1] = {(uint32_t)x->N};
	for (int k = 0; k < e->nrow; k++) {
		nx_l_wait(L, NX_ENG_SP, &e->row[k]->buf->written);
		for (int q = 0; q < nq; q++) {
			int64_t p0 = x->mt * q / nq, p1 = x->mt * (q + 1) / nq;
			nx_ap hb = nx_ap_hbm(e->dt, e->row[k]->buf->off, (int)(p1 - p0), 0, 1, s1, cn);
			nx_ap sb = nx_ap_sbuf(e->dt, (int)p0, (int)(p1 - p0), x->e_row[k], 1, s1, cn);
			nx_lsync y = nx_l_dma_q(L, NX_ENG_SP, x->qe[q], sb, hb);
			nx_l_max(&x->eloads, &y);
			nx_l_max(&x->erows, &y);
		}
	}
	for (int q = 0; q < x->nqe; q++)
		x->base_e[q] = L->qcount[x->qe[q]];
}
