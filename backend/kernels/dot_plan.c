/* backend/kernels/dot_plan.c — the planner of the dot-loop family's
 * stationary schedule (dot_loop.c emits it): a cost model over the
 * target's DMA, PE and ACT rates picks the side, the tiles, the resident
 * block, the queue split, batch steps and the epilogue's engine
 * (docs/lowering.md, "dot-loop, stationary schedule"). */
#include "backend/lower.h"
#include "backend/kernels/dot_loop.h"

typedef nx_sd sd;

/* rng: by the largest partition range of the split (the plans without
 * batch steps; the batch-step model keeps the even split it was tuned on) */
static double dma_est_q(const nx_target *t, double bytes, double parts, bool strided, int nq, bool rng)
{
	double bpp = bytes / parts, eff = bpp / (bpp + t->dma_knee_bytes);
	if (strided)
		eff *= t->dma_stride_factor;
	if (!rng)
		return t->dma_fixed_ns + bytes / nq / (nx_target_dma_queue_gbps(t) * eff);
	/* the queues split the partitions: the largest range takes longest */
	double pq = parts >= nq ? (double)(int64_t)((parts + nq - 1) / nq) : 1;
	return t->dma_fixed_ns + bpp * pq / (nx_target_dma_queue_gbps(t) * eff);
}

static double dma_est(const nx_target *t, double bytes, double parts, bool strided, int nq)
{
	return dma_est_q(t, bytes, parts, strided, nq, true);
}

/* matrix element (r, c) of V at off + r*sr + c*sc: a [K, w] slab with K on
 * partitions is strided when the w axis is */
static bool slab_strided(const nx_ldmat *V, int side_of_w, int esz)
{
	int64_t s = side_of_w ? V->sc : V->sr;
	return s * esz > 16;
}

/* engine time of one matmul of [kt, m] x [kt, n] (the cost model's rule) */
static double mm_est(const nx_target *t, int64_t m, int64_t n, nx_dtype dt)
{
	double c = (double)(m < t->mm_min_cycles ? m : t->mm_min_cycles);
	if ((double)n > c)
		c = (double)n;
	if (dt == NX_DT_F32)
		c *= t->pe_fp32_factor;
	return c / t->freq_ghz[NX_ENG_PE];
}

/* the tile of extent n: n itself up to cap, else its largest divisor <= cap
 * when that is at least cap/4 (0: none) */
static int64_t even_tile(int64_t n, int64_t cap)
{
	int64_t d = nx_l_div_le(n, cap);
	return d == n || d * 4 >= cap ? d : 0;
}

/* Plans the stationary schedule; false when it does not apply. */
static bool sd_plan(nx_lower *L, sd *x, int64_t budget)
{
	const nx_target *t = L->t;
	int64_t mte = even_tile(x->M, t->pe_cols), kt = even_tile(x->K, t->pe_rows);
	if (!kt)
		return false;
	x->kt = kt, x->KT = x->K / kt;
	int64_t bank = t->psum_bank_bytes, banks = t->psum_banks / 2;
	double best = 0;
	bool found = false;
	sd c = *x;
	for (int side = 0; side < 2; side++)
		for (int64_t ntc = t->matmul_max_n; ntc >= 64; ntc /= 2) {
			/* the resident axis needs even tiles; the streamed one may end
			 * in a ragged step (full tiles otherwise) */
			int64_t nt = even_tile(x->N, ntc), mt = mte, srag = 0;
			if (nt && ntc < t->matmul_max_n && nt != ntc)
				continue;
			if (side == 0) {
				if (!mt || (!nt && ntc < t->matmul_max_n))
					continue;
				if (!nt)
					nt = ntc, srag = x->N % ntc;
			} else {
				if (!nt)
					continue;
				if (!mt)
					mt = t->pe_cols, srag = x->M % mt;
				if (srag && srag < SQS)
					continue;
			}
			if (nt * 4 > bank || (x->rows && nt != x->N))
				continue;
			c.side = side, c.nt = nt, c.mt = mt, c.srag = srag;
			c.er = side ? x->eb : x->ea, c.es = side ? x->ea : x->eb;
			int64_t rw = side ? nt : mt, sw = side ? mt : nt;
			int64_t RT = (side ? x->N : x->M) / rw, ST = ((side ? x->M : x->N) + sw - 1) / sw;
			const nx_ldmat *R = side ? x->B : x->A, *S = side ? x->A : x->B;
			bool rstr = slab_strided(R, side, c.er), sstr = slab_strided(S, !side, c.es);
			/* G tiles per block, stored in groups of gb: as many as the
			 * banks, or (no batch) a half or a quarter of that, a shorter
			 * last store */
			for (int64_t gg = 3 * (RT < 16 ? RT : 16) + 2; gg >= 3; gg--) {
				int64_t G = gg / 3, cap = banks >> (2 - gg % 3), gb = nx_l_div_le(G, cap);
				if (RT % G || (cap < banks && (x->Bt > 1 || gb == nx_l_div_le(G, 2 * cap))))
					continue;
				/* tiles run in pairs (one tile alone when G = 1) */
				if ((G > 1 && G % 2) || (x->Bt > 1 && G != RT))
					continue;
				/* batches as steps when a batch is one step: R double-buffered too */
				bool bstep = x->Bt > 1 && ST == 1 && !srag;
				/* a two-level batch: batch steps only, the inner batches in
				 * pairs (the parity continues across the outer ones) */
				if (x->A->B2 && (!bstep || (x->Bt > x->A->B2 && x->A->B2 % 2)))
					continue;
				/* an odd step count costs a step body more code (the pairs
				 * loop and the odd one): narrower streamed tiles instead */
				if (!bstep && ST % 2 && side == 0 && ntc > 64 && x->N % (ntc / 2) == 0)
					continue;
				/* batch steps of nbs batches: each transfer covers them all
				 * (fewer, larger ones); tile pairs, one store group */
				int64_t nb2 = x->A->B2 ? x->A->B2 : x->Bt;
				for (int64_t nbs = 1; nbs <= 4; nbs *= 2) {
				if (nbs > 1 && (!bstep || G % 2 || G != gb || x->epi || nb2 % nbs ||
				                (x->A->B2 && x->Bt > nb2 && (nb2 / nbs) % 2) || x->A->sb > INT32_MAX ||
				                x->B->sb > INT32_MAX || x->M * x->N > INT32_MAX))
					continue;
				int64_t bytes = nbs * ((bstep ? 2 : 1) * nx_l_al64(x->KT * G * rw * c.er) + 2 * nx_l_al64(x->KT * sw * c.es) +
				                       2 * nx_l_al64(G * nt * x->eo)) +
				                (x->epi ? nx_l_epi_bytes(x->epi, G, gb, nt, x->N) : 0) +
				                (x->rows ? nx_l_dot_rows_bytes(x->rows, G, nt) : 0) +
				                (x->rows && x->rows->P ? 2 * (nbs - 1) * nx_l_al64(G * nt * nx_dtype_bytes[x->rows->P->dt]) : 0) +
				                nx_l_dot_cs_bytes(&c);
				if (x->rows && x->rows->P && !bstep)
					continue; /* P loads per batch step only */
				/* a second output (dot_sec.c): side 0, its buffers */
				int64_t secb = x->sec ? nx_l_sd_sec_bytes(L, x, G, mt, nbs) : 0;
				if (secb < 0 || (x->sec && side))
					continue;
				bytes += secb;
				/* the epilogue's streamed inputs: queues of their own, each
				 * with a partition range of every tile */
				static const int nqe_opt[] = {1, 2, 4, 8};
				int nqe_n = x->epi && x->epi->nstr ? 4 : 1;
				while (nqe_n > 1 && (mt < nqe_opt[nqe_n - 1] || (side && srag && srag < nqe_opt[nqe_n - 1])))
					nqe_n--;
				if (bytes + 128 > budget)
					continue;
				/* batch steps may load a resident operand stored [w, K] as it
				 * is and transpose it on PE (the 128-row tiles of a step side
				 * by side in one PSUM bank) */
				int64_t rbw = G * rw, nw = rbw / 128;
				bool mid = x->epi && x->epi->nmid;
				if (mid && G % 2)
					continue; /* (PE's first pair of a step waits for the step before: two banks) */
				bool tpe_ok = !x->rows && !mid && bstep && rstr && (side ? x->B->sr : x->A->sc) == 1 && kt == 128 && x->KT % 2 == 0 &&
				              G % 2 == 0 && rbw % 128 == 0 && nw * 128 * 4 <= bank &&
				              bytes + 2 * nbs * nx_l_al64(nw * x->K * c.er) + 128 <= budget;
				/* loads over the 8 SP queues, stores over the 8 POOL ones; or,
				 * with small stores, loads over 15 queues and stores on one */
				/* stores over 8, 4, 2 or 1 queues, loads over the others (SP
				 * issuing on POOL queues beyond its 8); also 5 to 7 (a row
				 * epilogue's P loads with the operands; the dx dots of
				 * bert_layer's projections) */
				static const int nqs_opt[] = {8, 4, 2, 1, 10, 12, 6, 7, 5};
				enum { NQS_OPT = sizeof nqs_opt / sizeof nqs_opt[0] };
				for (int qw = 0; qw < nqe_n * NQS_OPT; qw++) {
					int wide = qw % NQS_OPT, nqs = nqs_opt[wide];
					int nqe = x->epi && x->epi->nstr ? nqe_opt[qw / NQS_OPT] : 0;
					c.nqe = nqe;
					int nso = x->epi ? 1 + x->epi->nxo : 1;
					if (nqs > mt)
						nqs = (int)mt;
					int nql = kt < SQ - nqe - nqs ? (int)kt : SQ - nqe - nqs;
					/* fewer than 8 store queues lend theirs to the loads, more
					 * than 8 borrow SP's (every store range one partition at least) */
					if ((nqe ? nql + nqs < SQ - nqe : nqs < SQS && nql <= SQS) ||
					    (nqs > SQS && ((srag && srag < nqs) || (side && mt < nqs))) ||
					    (x->rows && x->rows->P && nql > mt) || /* P: a partition range on every load queue */
					    (x->sec && nqs > nx_l_div_le(x->N, t->pe_cols))) /* V: a key range on every store queue */
						continue;
					/* nls of the load queues take the streamed tiles, the
					 * others and the store queues the resident pieces */
					for (int tpe = 0; tpe < 1 + tpe_ok; tpe++)
					for (int nls = 1; nls <= nql; nls++)
					for (int rsq = 0; rsq < 2; rsq++) /* resident pieces on the streaming queues too */
					for (int sres = 0; sres < 2; sres++) { /* resident pieces on the store queues too */
						int npl = rsq ? nql : nql - nls, nres = sres && !bstep && kt >= npl + nqs ? nqs : 0;
						if ((sres && !nres) || (rsq && bstep) || (!bstep && npl + nres == 0))
							continue;
						int tp = G % 2 ? 1 : 2;
						int64_t rp = bstep ? 1 : G / tp;
						c.bstep = bstep, c.tpe = tpe, c.nbs = nbs;
						if (x->cs && !nx_l_dot_cs_ok(L, &c)) /* the column sum (kernels/dot_cs.c) */
							continue;
						/* PE: the matmuls, a loop step each, ~6 control instructions
						 * per tile (register, wait, signal, loops), a wait per queue per step */
						double ctl = t->ctrl_cycles / t->freq_ghz[NX_ENG_PE];
						c.p0off = false;
						double pe = (double)(G * nbs) * (x->KT * (mm_est(t, mt, nt, x->B->dt) + ctl) + 6 * ctl) +
						            (nls + 2) * ctl + (double)rp * (npl + nres + 2) * ctl +
						            nx_l_dot_cs_pe_ns(&c, mm_est(t, 128, 1, NX_DT_F32), ctl);
						double ld = dma_est_q(t, (double)(x->K * sw * c.es * nbs), kt, sstr, nls, !bstep);
						/* stores: one per tile group of gb tiles */
						double st1 = dma_est_q(t, (double)(mt * gb * nt * x->eo * nbs), mt, false, nqs, !bstep),
						       st = (double)(G / gb) * st1 * nso;
						/* a multi-output epilogue: each output on its share
						 * of the queues when they divide (fewer, larger
						 * transfers), all in parallel */
						c.qsplit = nso > 1 && nqs % nso == 0;
						if (c.qsplit) {
							st1 = dma_est_q(t, (double)(mt * gb * nt * x->eo * nbs), mt, false, nqs / nso, !bstep);
							st = (double)(G / gb) * st1;
						}
						for (const nx_ldsec *s = x->sec; s; s = s->next) { /* a store per step, matmuls per batch */
							int64_t kv = nx_l_div_le(x->N, t->pe_cols), k2 = s->i->shape->dims[s->i->shape->rank - 1];
							st += dma_est_q(t, (double)(x->N * k2 * 4 * nbs), kv, false, nqs, false);
							pe += (double)(nbs * (x->N / kv)) *
							      ((double)G * (mm_est(t, kv, k2, x->A->dt) + ctl) + 6 * ctl);
						}
						double ev = (double)(G * nbs) *
						            ((nt > 64 ? nt : 64) + t->access_overhead[NX_ENG_ACT] + 4.0 * t->ctrl_cycles) /
						            t->freq_ghz[NX_ENG_ACT];
						double rbytes = (double)(x->K * G * rw * c.er * nbs);
						if (tpe) {
							/* KT x nw transposes, a bank each K tile, and the wait
							 * for the last copy; ACT copies KT banks */
							double tr = 128.0 * (c.er == 4 ? t->pe_fp32_factor : 1) / t->freq_ghz[NX_ENG_PE];
							double cpy = ((double)rbw + t->access_overhead[NX_ENG_ACT] + 4.0 * t->ctrl_cycles) /
							             t->freq_ghz[NX_ENG_ACT];
							pe += (double)(x->KT * nbs) * ((double)nw * (tr + ctl) + 6 * ctl) + cpy;
							ev += (double)(x->KT * nbs) * cpy;
						}
						double step = pe;
						if (ld > step)
							step = ld;
						if (st > step)
							step = st;
						if (ev > step)
							step = ev;
						if (x->epi) {
							/* the streamed inputs per step; DVE per store
							 * group, or POOL before each store when DVE alone
							 * would bound the step and POOL is faster (else
							 * DVE runs beside POOL's stores) */
							double eld = nqe ? x->epi->nstr * dma_est_q(t, (double)mt * G * nt * x->eo, mt, false, nqe, !bstep) : 0;
							step = eld > step ? eld : step;
							double dve = (double)(G / gb) * nx_l_epi_ns(L, x->epi, NX_ENG_DVE, gb * nt);
							double pool = (double)(G / gb) * nx_l_epi_ns(L, x->epi, NX_ENG_POOL, gb * nt);
							/* (POOL: ACT runs the act ops, in the SBUF left) */
							double act = ev + nx_l_epi_act_ns(L, x->epi, G * nt);
							c.epool = mid || (dve > step && pool < dve &&
							                  bytes + nx_l_epi_pre_bytes(x->epi, G, nt) + 128 <= budget);
							if (c.epool)
								dve = pool > act ? pool : act;
							step = dve > step ? dve : step;
						}
						double nb = (double)x->Bt * (RT / G), tot;
						if (bstep) {
							/* resident and streamed tile: each on its own queues
							 * (nls < nql), or both on every load queue */
							int nr = nls < nql ? nql - nls : nql;
							double lr = tpe ? dma_est_q(t, rbytes, 128, false, nr, false) : dma_est_q(t, rbytes, kt, rstr, nr, false);
							lr = nls < nql ? (lr > ld ? lr : ld) : lr + ld;
							if (x->rows && x->rows->P) /* the epilogue's P, after them on every load queue */
								lr += dma_est_q(t, (double)(x->M * x->N * nx_dtype_bytes[x->rows->P->dt] * nbs), mt,
								                false, nql, false);
							for (const nx_ldsec *s = x->sec; s; s = s->next) /* then Y's rows (dot_sec.c) */
								lr += dma_est_q(t, (double)(x->M * s->i->shape->dims[s->i->shape->rank - 1] * 4 * nbs),
								                mt, false, nql, false);
							tot = (double)(x->Bt / nbs) * (lr > step ? lr : step) + st1 + lr;
						} else {
							/* a block's first step uses each tile pair as its piece
							 * arrives, and its streamed tile */
							double pt = dma_est(t, rbytes / (double)rp, kt, rstr, npl + nres), res = (double)rp * pt;
							double resq = res, a1 = ld + pe, s1 = 0;
							if (rsq && L->ndloops) { /* no s0f: the pieces before the tiles */
								a1 = res + ld + pe;
							} else if (rsq) {
								/* the pieces follow the first tile on the streaming
								 * queues, the second tile the pieces; p0off: piece 0
								 * on the other queues only, when there are */
								int n0 = nql - nls + nres;
								bool p0ok = rp > 1 && n0 > 0 && kt >= n0;
								double bm = -1;
								for (int p0 = 0; p0 <= p0ok; p0++) {
									double t0 = p0 ? dma_est(t, rbytes / (double)rp, kt, rstr, n0) : ld + pt;
									double r1 = (t0 > ld ? t0 : ld) + (double)(rp - 1) * pt;
									double b1 = (t0 > ld ? t0 : ld) + pe, c1 = 2 * ld + (double)(rp - p0) * pt;
									double m = r1 + pe * tp / G;
									m = b1 > m ? b1 : m;
									m = ST > 1 && c1 > m ? c1 : m;
									if (bm < 0 || m < bm)
										bm = m, resq = r1, a1 = b1, s1 = c1, c.p0off = p0;
								}
							}
							double a0 = resq + pe * tp / G;
							/* after the first block, pieces on the store queues
							 * follow the previous block's last stores */
							if (nb > 1 && nres)
								a0 += st1;
							if (a1 < a0)
								a1 = a0;
							double blk = (ST > 1 && s1 > a1 ? s1 : a1) + (double)(ST - 1) * step;
							/* the stores queue behind the pieces on the store queues */
							double sc = (nres ? res : 0) + (double)ST * st;
							tot = nb * (blk > sc ? blk : sc) + st1;
						}
						if (!found || tot < best) {
							found = true, best = tot;
							c.est = tot, c.bytes = bytes;
							c.G = G, c.gb = gb, c.NB = RT / G, c.NS = ST;
							c.nql = nql, c.nqs = nqs, c.nls = nls, c.nqs_res = nres, c.rp = rp, c.rsq = rsq;
							c.tpe = tpe, c.nw = nw;
							c.bstep = bstep, c.nbs = nbs;
							*x = c;
						}
					}
				}
				}
			}
		}
	return found;
}

/* Plans within half the SBUF partition (the neighbouring kernels run
 * beside it), and within more of it (nx_l_sbuf_big: the neighbours wait):
 * the larger plan when the model says it is at least 3 % faster. A
 * larger region holds a whole resident operand that would otherwise come
 * in blocks, each loaded before its first step (bert_layer's K = 4096
 * dots). */
bool nx_l_sd_plan(nx_lower *L, sd *x)
{
	sd big = *x;
	bool ok = sd_plan(L, x, L->sbuf_half);
	int64_t lim = nx_l_sbuf_big(L);
	bool okb = lim > L->sbuf_half && sd_plan(L, &big, lim);
	if (okb && (!ok || big.est < 0.97 * x->est)) {
		*x = big;
		return true;
	}
	return ok;
}
