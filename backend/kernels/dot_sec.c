/* backend/kernels/dot_sec.c — a second output of the stationary dot-loop's
 * batch steps with a SOFTMAX_BWD row epilogue (dot_rows.c, which loads the
 * step's P anyway): V = P^T . A per batch, A the dot's lhs [M, K] (its
 * rows), so attention's dv = p^T . dctx beside dp = dctx . v^T reads p
 * once (lower.c dot_sec; docs/lowering.md, "Dot second output"). Per step
 * of nbs batches (buffers of parity par):
 *   SP loads A's rows [mt, nbs, G, K] into D[par] after P on every load queue;
 *   PE per batch, per key tile kk of kv keys: G accumulating matmuls
 *     slot[kk] += P[:, g, kk kv .. (kk + 1) kv]^T . D[:, g, :] (the query
 *     tiles on partitions) into the batch's slot of the other PSUM half
 *     (free once DVE evacuated it two steps before); a signal;
 *   DVE per batch evacuates the slot into V[par] with the cast; a signal
 *     (ACT's waits on DVE count it);
 *   POOL stores V[par] after the step's stores, one transfer per store queue.
 * So PE and DVE signal G + 1 times per batch, the load and store queues
 * carry one transfer more per step (dot_loop.c's counts add ld and dq). */
#include "backend/lower.h"
#include "backend/kernels/dot_loop.h"

static int64_t al64(int64_t x)
{
	return (x + 63) & ~(int64_t)63;
}

int64_t nx_l_sd_sec_bytes(const nx_lower *L, const nx_sd *x, int64_t G, int64_t mt, int64_t nbs)
{
	const nx_target *t = L->t;
	if (!x->sec || !x->rows || !x->rows->P)
		return -1;
	int64_t kv = nx_l_div_le(x->N, t->pe_cols), nk = x->N / kv, K = x->K, slot = nk * K * 4;
	int64_t half = (t->psum_banks / 2) * t->psum_bank_bytes;
	int eo = nx_dtype_bytes[nx_lower_dtype(x->sec->i->shape->type)];
	if (K > t->matmul_max_n || t->psum_bank_bytes % (K * 4) || 2 * nbs * slot > half || mt > t->pe_rows ||
	    G * mt != x->M || mt * x->A->sr > INT32_MAX ||
	    (x->sec->val && (kv * x->sec->O.sr > INT32_MAX || x->sec->O.sb > INT32_MAX)))
		return -1;
	return 2 * nbs * (al64(G * K * x->ea) + al64(nk * K * eo));
}

void nx_l_sd_sec_setup(nx_sd *x, int64_t off, int ph)
{
	nx_lower *L = x->L;
	const nx_target *t = L->t;
	const nx_ldsec *s = x->sec;
	int eo = nx_dtype_bytes[s->O.dt];
	x->kv = nx_l_div_le(x->N, t->pe_cols), x->nk = x->N / x->kv;
	x->dbb = al64(x->G * x->K * x->ea), x->vbb = al64(x->nk * x->K * eo);
	x->d_off[0] = off, x->d_off[1] = off + x->nbs * x->dbb;
	x->v_off[0] = x->d_off[1] + x->nbs * x->dbb, x->v_off[1] = x->v_off[0] + x->nbs * x->vbb;
	x->vps = (1 - ph) * (t->psum_banks / 2) * t->psum_bank_bytes;
	x->ld = x->dq = 1;
	nx_l_plan(L, "second output",
	          "%s = p^T . A per batch [%lld, %lld] -> %s: %lld key tiles of %lld, %lld query tiles accumulated in psum "
	          "half %d on pe; A's rows [%lld, %lld x %lld] after p on every load queue; evacuated on dve; stored "
	          "after the step's stores%s%s",
	          s->i->name, (long long)x->N, (long long)x->K, nx_dtype_names[s->O.dt], (long long)x->nk,
	          (long long)x->kv, (long long)x->G, 1 - ph, (long long)x->mt, (long long)x->G, (long long)x->K,
	          s->tout ? " in the layout of " : "", s->tout ? s->tout->name : "");
}

void nx_l_sd_sec_entry(nx_sd *x, int ph)
{
	nx_lower *L = x->L;
	nx_l_wait(L, NX_ENG_PE, &L->psum_free[1 - ph]);
	nx_l_wait(L, NX_ENG_POOL, &x->sec->O.buf->war);
	nx_l_setreg(L, NX_ENG_PE, S_PE_DV, 0);
	nx_l_setreg(L, NX_ENG_DVE, S_DVE_ST, 0);
	nx_l_setreg(L, NX_ENG_POOL, S_POOL_DV, 0);
}

/* the loops' advance: the outer batch (or batch group) and the step pair */
static void sec_strides(const nx_sd *x, nx_ap *h, int64_t ob, int64_t sb, int es)
{
	if (x->lv_o >= 0)
		h->loop_stride[x->lv_o] = ob * es;
	if (x->lv_s >= 0)
		h->loop_stride[x->lv_s] = 2 * x->nbs * sb * es;
}

void nx_l_sd_sec_load(nx_sd *x, int par, int64_t bat)
{
	const nx_ldmat *A = x->A;
	NX_ASSERT(x->nbs == 1 || A->sb <= INT32_MAX);
	int32_t hs[3] = {x->nbs > 1 ? (int32_t)A->sb : 0, (int32_t)(x->mt * A->sr), (int32_t)A->sc};
	int32_t ss[3] = {(int32_t)(x->dbb / x->ea), (int32_t)x->K, 1};
	uint32_t cn[3] = {(uint32_t)x->nbs, (uint32_t)x->G, (uint32_t)x->K};
	int64_t hoff = A->buf->off + (A->off + bat * A->sb) * x->ea;
	for (int q = 0; q < x->nql; q++) {
		int64_t p0 = x->mt * q / x->nql, p1 = x->mt * (q + 1) / x->nql;
		nx_ap h = nx_ap_hbm(A->dt, hoff + p0 * A->sr * x->ea, (int)(p1 - p0), A->sr, 3, hs, cn);
		nx_ap s = nx_ap_sbuf(A->dt, (int)p0, (int)(p1 - p0), x->d_off[par], 3, ss, cn);
		sec_strides(x, &h, A->B2 ? A->sb1 : A->sb, A->sb, x->ea);
		nx_lsync y = nx_l_dma_q(x->L, NX_ENG_SP, x->ql[q], s, h);
		nx_l_max(&x->loads, &y);
	}
}

void nx_l_sd_sec_batch(nx_sd *x, int par, int64_t b)
{
	nx_lower *L = x->L;
	const nx_ldsec *s = x->sec;
	int32_t s1[1] = {1};
	uint32_t ck[1] = {(uint32_t)x->kv}, cK[1] = {(uint32_t)x->K}, cv[1] = {(uint32_t)(x->nk * x->K)};
	int64_t upb = x->G + 1; /* PE's and DVE's signals per batch */
	int64_t slot = x->vps + (par * x->nbs + b) * x->nk * x->K * 4;
	nx_dtype pdt = x->rows->P->dt;
	/* PE: the step's P and D (its last transfers on every load queue) */
	if (b == 0)
		for (int q = 0; q < x->nql; q++)
			nx_l_wait_rel(L, NX_ENG_PE, x->ql[q], x->base_l[q], S_PE_L);
	nx_l_addreg(L, NX_ENG_PE, S_PE_DV, upb);
	nx_l_wait_rel(L, NX_ENG_PE, NX_LSEM_ENG + NX_ENG_DVE, x->base_dve - 2 * x->nbs * upb, S_PE_DV);
	nx_l_loop(L, NX_ENG_PE, x->nk);
	int dk = L->s[NX_ENG_PE].depth - 1;
	for (int first = 1; first >= 0; first--) {
		if (!first) {
			if (x->G == 1)
				break;
			nx_l_loop(L, NX_ENG_PE, x->G - 1);
		}
		int dg = L->s[NX_ENG_PE].depth - 1;
		int64_t g0 = first ? 0 : 1;
		nx_insn *mm = nx_l_emit(L, NX_ENG_PE, NX_I_MATMUL);
		mm->flags = first ? NX_IF_START : 0;
		nx_ap ps = nx_ap_psum(NX_DT_F32, 0, (int)x->kv, slot, 1, s1, cK);
		nx_ap st = nx_ap_sbuf(pdt, 0, (int)x->mt, x->p_off[par] + b * x->pbb + g0 * x->nt * x->ep, 1, s1, ck);
		nx_ap mv = nx_ap_sbuf(x->A->dt, 0, (int)x->mt, x->d_off[par] + b * x->dbb + g0 * x->K * x->ea, 1, s1, cK);
		ps.loop_stride[dk] = x->K * 4, st.loop_stride[dk] = x->kv * x->ep;
		if (!first)
			st.loop_stride[dg] = x->nt * x->ep, mv.loop_stride[dg] = x->K * x->ea;
		mm->ap[0] = ps;
		mm->ap[1] = st;
		mm->ap[2] = mv;
		if (!first)
			nx_l_endloop(L, NX_ENG_PE);
	}
	nx_l_endloop(L, NX_ENG_PE);
	nx_lsync y = nx_l_signal(L, NX_ENG_PE);
	nx_l_max(&x->pe, &y);
	/* DVE: V[par] is free once the stores of the step before the last are
	 * done; the slot once PE's matmuls are */
	int64_t nst = x->G / x->gb + x->dq;
	if (b == 0) {
		nx_l_addreg(L, NX_ENG_DVE, S_DVE_ST, nst);
		for (int q = 0; q < x->nqs; q++)
			nx_l_wait_rel(L, NX_ENG_DVE, x->qs[q], x->base_s[q] - 2 * nst, S_DVE_ST);
	}
	nx_l_addreg(L, NX_ENG_DVE, 0, 1);
	nx_l_wait_rel(L, NX_ENG_DVE, NX_LSEM_ENG + NX_ENG_PE, x->base_pe, 0);
	nx_insn *cp = nx_l_emit(L, NX_ENG_DVE, NX_I_TENSOR_COPY);
	cp->ap[0] = nx_ap_sbuf(s->O.dt, 0, (int)x->kv, x->v_off[par] + b * x->vbb, 1, s1, cv);
	cp->ap[1] = nx_ap_psum(NX_DT_F32, 0, (int)x->kv, slot, 1, s1, cv);
	y = nx_l_signal(L, NX_ENG_DVE);
	nx_l_max(&x->dve, &y);
	/* ACT's waits on DVE's tiles count the evacuation */
	nx_l_addreg(L, NX_ENG_ACT, S_ACT_PE, 1);
}

void nx_l_sd_sec_store(nx_sd *x, int par, int64_t bat)
{
	nx_lower *L = x->L;
	const nx_ldmat *O = &x->sec->O;
	int eo = nx_dtype_bytes[O->dt];
	/* the step's evacuations (DVE's last signal of each batch) */
	nx_l_addreg(L, NX_ENG_POOL, S_POOL_DV, x->nbs * (x->G + 1));
	nx_l_wait_rel(L, NX_ENG_POOL, NX_LSEM_ENG + NX_ENG_DVE, x->base_dve, S_POOL_DV);
	NX_ASSERT(x->nbs == 1 || O->sb <= INT32_MAX);
	int32_t hs[3] = {x->nbs > 1 ? (int32_t)O->sb : 0, (int32_t)(x->kv * O->sr), (int32_t)O->sc};
	int32_t ss[3] = {(int32_t)(x->vbb / eo), (int32_t)x->K, 1};
	uint32_t cn[3] = {(uint32_t)x->nbs, (uint32_t)x->nk, (uint32_t)x->K};
	int64_t hoff = O->buf->off + (O->off + bat * O->sb) * eo;
	for (int q = 0; q < x->nqs; q++) {
		int64_t p0 = x->kv * q / x->nqs, p1 = x->kv * (q + 1) / x->nqs;
		nx_ap h = nx_ap_hbm(O->dt, hoff + p0 * O->sr * eo, (int)(p1 - p0), O->sr, 3, hs, cn);
		nx_ap s = nx_ap_sbuf(O->dt, (int)p0, (int)(p1 - p0), x->v_off[par], 3, ss, cn);
		sec_strides(x, &h, x->A->B2 ? O->sb1 : O->sb, O->sb, eo);
		nx_lsync y = nx_l_dma_q(L, NX_ENG_POOL, x->qs[q], h, s);
		nx_l_max(&x->stores, &y);
	}
}

void nx_l_sd_sec_exit(nx_sd *x, int ph)
{
	nx_lower *L = x->L;
	nx_l_max(&x->sec->O.buf->written, &x->stores);
	nx_l_max(&x->sec->O.buf->war, &x->stores);
	L->psum_free[1 - ph] = x->dve; /* its last evacuation */
	x->sec->done = true;
}
