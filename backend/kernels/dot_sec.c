/* backend/kernels/dot_sec.c — second outputs of the stationary dot-loop's
 * batch steps with a SOFTMAX_BWD row epilogue (dot_rows.c, which loads the
 * step's P anyway): V = X^T . Y per batch, X the step's P or (post) its
 * result O after POOL's multiply, Y [M, K'] another value loaded by rows,
 * so attention's dv = p^T . dctx and dk = ds^T . q beside dp = dctx . v^T
 * read neither p nor ds again (lower.c dot_sec; docs/lowering.md, "Dot
 * second output"). Per step of nbs batches (buffers of parity par), per
 * output:
 *   SP loads Y's rows [mt, nbs, G, K'] into D[par] after P on every load
 *   queue;
 *   PE, per key tile kk of kv keys: G accumulating matmuls
 *     slot[kk] += X[:, g, kk kv .. (kk + 1) kv]^T . D[:, g, :] (the query
 *     tiles on partitions) into the batch's slot of the other PSUM half
 *     (free once DVE evacuated it two steps before), then a signal: from
 *     P after each batch's tiles, from O after the step's batches once
 *     POOL multiplied the step's groups;
 *   DVE evacuates each slot into V[par] with the cast (after PE's signal),
 *     and signals (ACT's waits on DVE count it);
 *   POOL stores V[par] after the step's stores, one transfer per store queue.
 * So per step PE and DVE signal nbs (G + nsec) times, the load and store
 * queues carry nsec transfers more (dot_loop.c's counts add ld and dq).
 * ACT overwrites O[par] only after the stores of the step before the last,
 * V's among them, which follow the matmuls that read it. */
#include "backend/lower.h"
#include "backend/kernels/dot_loop.h"

/* V's columns (K') */
static int64_t sec_k(const nx_ldsec *s)
{
	return s->i->shape->dims[s->i->shape->rank - 1];
}

int64_t nx_l_sd_sec_bytes(const nx_lower *L, const nx_sd *x, int64_t G, int64_t mt, int64_t nbs)
{
	const nx_target *t = L->t;
	if (!x->sec || !x->rows || !x->rows->P)
		return -1;
	int64_t kv = nx_l_div_le(x->N, t->pe_cols), nk = x->N / kv, slots = 0, bytes = 0;
	int64_t half = (t->psum_banks / 2) * t->psum_bank_bytes;
	if (mt > t->pe_rows || G * mt != x->M)
		return -1;
	for (const nx_ldsec *s = x->sec; s; s = s->next) {
		int64_t K = sec_k(s);
		int ey = nx_dtype_bytes[nx_lower_dtype(s->i->operands[1]->shape->type)];
		int eo = nx_dtype_bytes[nx_lower_dtype(s->i->shape->type)];
		if (K > t->matmul_max_n || t->psum_bank_bytes % (K * 4) ||
		    (s->val && (kv * s->O.sr > INT32_MAX || s->O.sb > INT32_MAX || mt * s->Y.sr > INT32_MAX ||
		                s->Y.sb > INT32_MAX)))
			return -1;
		slots += nk * K * 4;
		bytes += 2 * nbs * (nx_l_al64(G * K * ey) + nx_l_al64(nk * K * eo));
	}
	return 2 * nbs * slots > half ? -1 : bytes;
}

void nx_l_sd_sec_setup(nx_sd *x, int64_t off, int ph)
{
	nx_lower *L = x->L;
	const nx_target *t = L->t;
	x->kv = nx_l_div_le(x->N, t->pe_cols), x->nk = x->N / x->kv;
	int64_t vps = (1 - ph) * (t->psum_banks / 2) * t->psum_bank_bytes;
	x->nsec = x->npre = x->npost = 0;
	for (const nx_ldsec *s = x->sec; s; s = s->next) {
		NX_ASSERT(x->nsec < 2);
		struct nx_sdo *o = &x->so[x->nsec++];
		x->npre += !s->post, x->npost += s->post;
		o->s = s, o->K = sec_k(s), o->ey = nx_dtype_bytes[s->Y.dt], o->eo = nx_dtype_bytes[s->O.dt];
		o->dbb = nx_l_al64(x->G * o->K * o->ey), o->vbb = nx_l_al64(x->nk * o->K * o->eo);
		o->d_off[0] = off, o->d_off[1] = off + x->nbs * o->dbb;
		o->v_off[0] = o->d_off[1] + x->nbs * o->dbb, o->v_off[1] = o->v_off[0] + x->nbs * o->vbb;
		off = o->v_off[1] + x->nbs * o->vbb;
		o->vps = vps, vps += 2 * x->nbs * x->nk * o->K * 4;
		/* its FLOPs: V's dot has no kernel of its own (compile --stats) */
		L->st.flops += 2.0 * (double)x->Bt * (double)x->M * (double)x->N * (double)o->K;
		nx_l_plan(L, "second output",
		          "%s = %s^T . Y per batch [%lld, %lld] -> %s: %lld key tiles of %lld, %lld query tiles accumulated in "
		          "psum half %d on pe%s; Y's rows [%lld, %lld x %lld] after p on every load queue; evacuated on dve; "
		          "stored after the step's stores%s%s",
		          s->i->name, s->post ? "result" : "p", (long long)x->N, (long long)o->K, nx_dtype_names[s->O.dt],
		          (long long)x->nk, (long long)x->kv, (long long)x->G, 1 - ph,
		          s->post ? " after the step's batches" : "", (long long)x->mt, (long long)x->G, (long long)o->K,
		          s->tout ? " in the layout of " : "", s->tout ? s->tout->name : "");
	}
	x->ld = x->dq = x->nsec;
}

void nx_l_sd_sec_entry(nx_sd *x, int ph)
{
	nx_lower *L = x->L;
	nx_l_wait(L, NX_ENG_PE, &L->psum_free[1 - ph]);
	for (int k = 0; k < x->nsec; k++) {
		nx_l_wait(L, NX_ENG_SP, &x->so[k].s->Y.buf->written);
		nx_l_wait(L, NX_ENG_POOL, &x->so[k].s->O.buf->war);
	}
	nx_l_setreg(L, NX_ENG_PE, S_PE_DV, 0);
	nx_l_setreg(L, NX_ENG_PE, S_PE_PO, 0);
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
	for (int k = 0; k < x->nsec; k++) {
		const struct nx_sdo *o = &x->so[k];
		const nx_ldmat *Y = &o->s->Y;
		int32_t hs[3] = {x->nbs > 1 ? (int32_t)Y->sb : 0, (int32_t)(x->mt * Y->sr), (int32_t)Y->sc};
		int32_t ss[3] = {(int32_t)(o->dbb / o->ey), (int32_t)o->K, 1};
		uint32_t cn[3] = {(uint32_t)x->nbs, (uint32_t)x->G, (uint32_t)o->K};
		int64_t hoff = Y->buf->off + (Y->off + bat * Y->sb) * o->ey;
		for (int q = 0; q < x->nql; q++) {
			int64_t p0 = x->mt * q / x->nql, p1 = x->mt * (q + 1) / x->nql;
			nx_ap h = nx_ap_hbm(Y->dt, hoff + p0 * Y->sr * o->ey, (int)(p1 - p0), Y->sr, 3, hs, cn);
			nx_ap s = nx_ap_sbuf(Y->dt, (int)p0, (int)(p1 - p0), o->d_off[par], 3, ss, cn);
			sec_strides(x, &h, Y->B2 ? Y->sb1 : Y->sb, Y->sb, o->ey);
			nx_lsync y = nx_l_dma_q(x->L, NX_ENG_SP, x->ql[q], s, h);
			nx_l_max(&x->loads, &y);
		}
	}
}

/* PE: the step's loads (Y's rows the last), once per step before its first matmul here */
static void sec_wait_loads(nx_sd *x)
{
	for (int q = 0; q < x->nql; q++)
		nx_l_wait_rel(x->L, NX_ENG_PE, x->ql[q], x->base_l[q], S_PE_L);
}

/* DVE: V[par] is free once the stores of the step before the last are
 * done, once per step before its first evacuation */
static void sec_wait_stores(nx_sd *x)
{
	int64_t nst = x->G / x->gb + x->dq;
	nx_l_addreg(x->L, NX_ENG_DVE, S_DVE_ST, nst);
	for (int q = 0; q < x->nqs; q++)
		nx_l_wait_rel(x->L, NX_ENG_DVE, x->qs[q], x->base_s[q] - 2 * nst, S_DVE_ST);
}

/* output o of batch b: PE's matmuls (its slot free: PE's register S_PE_DV
 * advanced by inc to count DVE's signals up to it) and DVE's evacuation */
static void sec_one(nx_sd *x, const struct nx_sdo *o, int par, int64_t b, int64_t inc)
{
	nx_lower *L = x->L;
	int32_t s1[1] = {1};
	uint32_t ck[1] = {(uint32_t)x->kv}, cK[1] = {(uint32_t)o->K}, cv[1] = {(uint32_t)(x->nk * o->K)};
	int64_t U = x->nbs * (x->G + x->nsec); /* DVE's signals per step */
	int64_t slot = o->vps + (par * x->nbs + b) * x->nk * o->K * 4;
	bool post = o->s->post;
	nx_dtype xdt = post ? x->out->dt : x->rows->P->dt;
	int ex = post ? x->eo : x->ep;
	int64_t xoff = post ? x->o_off[par] + b * x->obb : x->p_off[par] + b * x->pbb;
	nx_l_addreg(L, NX_ENG_PE, S_PE_DV, inc);
	nx_l_wait_rel(L, NX_ENG_PE, NX_LSEM_ENG + NX_ENG_DVE, x->base_dve - 2 * U, S_PE_DV);
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
		nx_ap st = nx_ap_sbuf(xdt, 0, (int)x->mt, xoff + g0 * x->nt * ex, 1, s1, ck);
		nx_ap mv = nx_ap_sbuf(o->s->Y.dt, 0, (int)x->mt, o->d_off[par] + b * o->dbb + g0 * o->K * o->ey, 1, s1, cK);
		ps.loop_stride[dk] = o->K * 4, st.loop_stride[dk] = x->kv * ex;
		if (!first)
			st.loop_stride[dg] = x->nt * ex, mv.loop_stride[dg] = o->K * o->ey;
		mm->ap[0] = ps;
		mm->ap[1] = st;
		mm->ap[2] = mv;
		if (!first)
			nx_l_endloop(L, NX_ENG_PE);
	}
	nx_l_endloop(L, NX_ENG_PE);
	nx_lsync y = nx_l_signal(L, NX_ENG_PE);
	nx_l_max(&x->pe, &y);
	nx_l_addreg(L, NX_ENG_DVE, 0, 1);
	nx_l_wait_rel(L, NX_ENG_DVE, NX_LSEM_ENG + NX_ENG_PE, x->base_pe, 0);
	nx_insn *cp = nx_l_emit(L, NX_ENG_DVE, NX_I_TENSOR_COPY);
	cp->ap[0] = nx_ap_sbuf(o->s->O.dt, 0, (int)x->kv, o->v_off[par] + b * o->vbb, 1, s1, cv);
	cp->ap[1] = nx_ap_psum(NX_DT_F32, 0, (int)x->kv, slot, 1, s1, cv);
	y = nx_l_signal(L, NX_ENG_DVE);
	nx_l_max(&x->dve, &y);
}

void nx_l_sd_sec_batch(nx_sd *x, int par, int64_t b)
{
	for (int k = 0; k < x->nsec; k++)
		if (!x->so[k].s->post) {
			if (b == 0) {
				sec_wait_loads(x);
				sec_wait_stores(x);
			}
			sec_one(x, &x->so[k], par, b, x->G + x->npre);
		}
	/* ACT's waits on DVE's tiles count the evacuations */
	nx_l_addreg(x->L, NX_ENG_ACT, S_ACT_PE, x->npre);
}

void nx_l_sd_sec_step(nx_sd *x, int par)
{
	nx_lower *L = x->L;
	if (!x->npost)
		return;
	if (!x->npre) {
		sec_wait_loads(x);
		sec_wait_stores(x);
		nx_l_addreg(L, NX_ENG_PE, S_PE_DV, x->nbs * x->G); /* DVE's stats of the step */
	}
	/* PE: the step's groups multiplied by POOL (one signal each) */
	nx_l_addreg(L, NX_ENG_PE, S_PE_PO, x->G / x->gb);
	nx_l_wait_rel(L, NX_ENG_PE, NX_LSEM_ENG + NX_ENG_POOL, x->base_pool, S_PE_PO);
	for (int64_t b = 0; b < x->nbs; b++)
		for (int k = 0; k < x->nsec; k++)
			if (x->so[k].s->post)
				sec_one(x, &x->so[k], par, b, 1);
	nx_l_addreg(L, NX_ENG_ACT, S_ACT_PE, x->nbs * x->npost);
}

void nx_l_sd_sec_store(nx_sd *x, int par, int64_t bat)
{
	nx_lower *L = x->L;
	int64_t at = 0, U = x->nbs * (x->G + x->nsec); /* DVE's signals per step */
	for (int k = 0; k < x->nsec; k++) {
		const struct nx_sdo *o = &x->so[k];
		const nx_ldmat *O = &o->s->O;
		int eo = o->eo;
		/* the step's evacuations of it: DVE's signals up to the batches'
		 * (from P), or all of the step's (from O; they come last) */
		int64_t want = o->s->post ? U : x->nbs * (x->G + x->npre);
		NX_ASSERT(want >= at);
		nx_l_addreg(L, NX_ENG_POOL, S_POOL_DV, want - at);
		at = want;
		nx_l_wait_rel(L, NX_ENG_POOL, NX_LSEM_ENG + NX_ENG_DVE, x->base_dve, S_POOL_DV);
		int32_t hs[3] = {x->nbs > 1 ? (int32_t)O->sb : 0, (int32_t)(x->kv * O->sr), (int32_t)O->sc};
		int32_t ss[3] = {(int32_t)(o->vbb / eo), (int32_t)o->K, 1};
		uint32_t cn[3] = {(uint32_t)x->nbs, (uint32_t)x->nk, (uint32_t)o->K};
		int64_t hoff = O->buf->off + (O->off + bat * O->sb) * eo;
		for (int q = 0; q < x->nqs; q++) {
			int64_t p0 = x->kv * q / x->nqs, p1 = x->kv * (q + 1) / x->nqs;
			nx_ap h = nx_ap_hbm(O->dt, hoff + p0 * O->sr * eo, (int)(p1 - p0), O->sr, 3, hs, cn);
			nx_ap s = nx_ap_sbuf(O->dt, (int)p0, (int)(p1 - p0), o->v_off[par], 3, ss, cn);
			sec_strides(x, &h, x->A->B2 ? O->sb1 : O->sb, O->sb, eo);
			nx_lsync y = nx_l_dma_q(L, NX_ENG_POOL, x->qs[q], h, s);
			nx_l_max(&x->stores, &y);
		}
	}
	nx_l_addreg(L, NX_ENG_POOL, S_POOL_DV, U - at);
}

void nx_l_sd_sec_exit(nx_sd *x, int ph)
{
	nx_lower *L = x->L;
	for (int k = 0; k < x->nsec; k++) {
		nx_ldsec *s = (nx_ldsec *)x->so[k].s;
		nx_l_max(&s->O.buf->written, &x->stores);
		nx_l_max(&s->O.buf->war, &x->stores);
		nx_l_max(&s->Y.buf->war, &x->loads);
		s->done = true;
	}
	L->psum_free[1 - ph] = x->dve; /* its last evacuation */
}
