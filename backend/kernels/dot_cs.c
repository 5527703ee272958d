/* backend/kernels/dot_cs.c — a column sum folded into the stationary
 * dot-loop (lower.c dot_cs pairs a reduce-add over the contracting dims of
 * a dot's operand with that dot: a bias gradient beside its weight
 * gradient). When the schedule streams that operand, each step's tile
 * S [K, sw] ([kt partitions, KT x sw]) is in SBUF anyway: once PE's first
 * tile of the step is done (S[par] is loaded then) DVE, idle in the dot,
 * adds its K tiles into P[par] [kt, sw] (f32) and signals; after the
 * step's tiles PE waits for it and sums P[par]'s partitions, per 128
 * columns one matmul with P as stationary and a ones column as moving
 * (nx_l_colsum_mm), into PSUM columns after the tiles' in the step's first
 * bank, and signals; ACT adds the init value and casts them into the
 * sums' SBUF buffer [128, columns / 128] (column c at partition c % 128 of
 * tile c / 128); POOL stores them once at the end. The standalone kernel
 * loaded the operand again (bert_layer's l1.db: 32 MiB, ~160 us after its
 * dot); summing the K tiles on PE instead (a matmul per K tile) cost the
 * PE-bound dots 47 us (l1.dw) and 12 us (lq/lk/lv.dw). */
#include "backend/lower.h"
#include "backend/kernels/dot_loop.h"

#include <string.h>

/* the streamed axis' extent and its columns per step */
static int64_t cs_extent(const nx_sd *x)
{
	return x->side ? x->M : x->N;
}

static int64_t cs_sw(const nx_sd *x)
{
	return x->side ? x->mt : x->nt;
}

bool nx_l_dot_cs_ok(const nx_lower *L, const nx_sd *c)
{
	int64_t sw = cs_sw(c), ncs = (sw + 127) / 128;
	/* side 0 streams B (operand 1), side 1 A (operand 0); whole column
	 * tiles per step; the sums' PSUM columns fit after the tiles' */
	return c->cs && c->side == 1 - c->cs->k && c->Bt == 1 && !c->bstep && !c->tpe && c->nbs == 1 && !c->rows &&
	       !c->epi && sw % 128 == 0 && (c->nt + ncs) * 4 <= L->t->psum_bank_bytes;
}

int64_t nx_l_dot_cs_bytes(const nx_sd *c)
{
	int64_t ct = (cs_extent(c) + 127) / 128;
	return c->cs ? 64 + nx_l_al64(ct * nx_dtype_bytes[c->cs->dt]) + 2 * nx_l_al64(cs_sw(c) * 4) : 0;
}

double nx_l_dot_cs_pe_ns(const nx_sd *c, double mm_ns, double ctl_ns)
{
	int64_t ncs = (cs_sw(c) + 127) / 128;
	return c->cs ? (double)ncs * (mm_ns + ctl_ns) + 4 * ctl_ns : 0;
}

bool nx_l_dot_cs_worth(const nx_lower *L, const nx_sd *c, const nx_sd *plain)
{
	/* the standalone kernel streams the operand again (at the DMA peak) */
	double alone = (double)(c->K * cs_extent(c) * c->es) / nx_target_dma_peak_gbps(L->t) + 3000;
	return c->est <= plain->est + alone;
}

void nx_l_dot_cs_setup(nx_sd *x, int64_t off)
{
	x->cs->out = nx_l_newval(x->L, x->cs->red->shape);
	x->cs_ones = off;
	x->cs_p[0] = off + 64;
	x->cs_p[1] = x->cs_p[0] + nx_l_al64(cs_sw(x) * 4);
	x->cs_res = x->cs_p[1] + nx_l_al64(cs_sw(x) * 4);
}

void nx_l_dot_cs_plan(nx_lower *L, const nx_sd *x)
{
	nx_l_plan(L, "column sum",
	          "of %s per step: its %lld K tiles added on dve, %lld matmul%s on pe against a ones column (into psum "
	          "after the tiles), second output %s",
	          x->side ? "A" : "B", (long long)x->KT, (long long)((cs_sw(x) + 127) / 128),
	          cs_sw(x) > 128 ? "s" : "", x->cs->red->name);
}

/* kernel entry: DVE writes the ones column (PE waits for it); the
 * registers that count PE's signals on DVE and DVE's on PE */
void nx_l_dot_cs_entry(nx_sd *x, int h)
{
	nx_lower *L = x->L;
	int32_t s1[1] = {1};
	uint32_t c1[1] = {1};
	nx_l_wait(L, NX_ENG_DVE, &L->sbuf_free[h]);
	nx_insn *m = nx_l_emit(L, NX_ENG_DVE, NX_I_MEMSET);
	m->ap[0] = nx_ap_sbuf(NX_DT_F32, 0, (int)x->kt, x->cs_ones, 1, s1, c1);
	m->fimm[0] = 1;
	x->cs_sig = nx_l_signal(L, NX_ENG_DVE);
	nx_l_wait(L, NX_ENG_PE, &x->cs_sig);
	nx_l_setreg(L, NX_ENG_DVE, S_DVE_CS, 0);
	nx_l_setreg(L, NX_ENG_PE, S_PE_CS, 0);
	nx_l_wait(L, NX_ENG_POOL, &x->cs->out->buf->war);
}

/* the step's PSUM columns: after the tiles' in its first bank */
static int64_t cs_pcol(const nx_sd *x, int par)
{
	int tp = x->G % 2 ? 1 : 2;
	return x->pbase + (tp == 2 ? 2 * par : par) * x->bank + x->nt * 4;
}

/* DVE, per step: once PE's first tile of the step is done (S[par] is
 * loaded), P[par] = the sum of S[par]'s K tiles (ssz columns); a signal */
void nx_l_dot_cs_dve(nx_sd *x, int par, int64_t ssz)
{
	nx_lower *L = x->L;
	const nx_ldmat *V = x->side ? x->A : x->B;
	int64_t upe = x->G + 1, sw = cs_sw(x);
	nx_l_addreg(L, NX_ENG_DVE, S_DVE_CS, upe);
	nx_l_wait_rel(L, NX_ENG_DVE, NX_LSEM_ENG + NX_ENG_PE, x->base_pe - upe + 1, S_DVE_CS);
	int32_t s2[2] = {1, (int32_t)sw}, s1[1] = {1};
	uint32_t c2[2] = {(uint32_t)ssz, (uint32_t)x->KT}, c1[1] = {(uint32_t)ssz};
	nx_insn *in = nx_l_emit(L, NX_ENG_DVE, NX_I_TENSOR_REDUCE);
	in->func = NX_ALU_ADD;
	in->iarg[0] = 1;
	in->ap[0] = nx_ap_sbuf(NX_DT_F32, 0, (int)x->kt, x->cs_p[par], 1, s1, c1);
	in->ap[1] = nx_ap_sbuf(V->dt, 0, (int)x->kt, x->s_off[par], 2, s2, c2);
	nx_lsync y = nx_l_signal(L, NX_ENG_DVE);
	nx_l_max(&x->dve, &y);
}

/* PE, after the step's tiles: once DVE summed the step's K tiles and ACT
 * evacuated the step's first tile (ACT has evacuated every earlier step's
 * sums then: program order), P[par]'s partitions summed into the step's
 * PSUM columns; a signal (SP's wait for S[par], which DVE read, and ACT's
 * for the sums count it) */
void nx_l_dot_cs_pe(nx_sd *x, int par, int64_t ssz)
{
	nx_lower *L = x->L;
	nx_l_addreg(L, NX_ENG_PE, S_PE_CS, 1);
	nx_l_wait_rel(L, NX_ENG_PE, NX_LSEM_ENG + NX_ENG_DVE, x->base_dve, S_PE_CS);
	nx_l_wait_rel(L, NX_ENG_PE, NX_LSEM_ENG + NX_ENG_ACT, x->base_act - x->G + 1, S_PE_T);
	nx_l_colsum_mm(L, NX_DT_F32, x->kt, x->cs_p[par], ssz, x->cs_ones, cs_pcol(x, par), NX_IF_START);
	nx_lsync y = nx_l_signal(L, NX_ENG_PE);
	nx_l_max(&x->pe, &y);
}

/* ACT, after the step's evacuations: the sums of step sidx (ssz columns)
 * plus init, cast into the result's column tiles (the steps' loop advances
 * them; every block sums the same columns again) */
void nx_l_dot_cs_act(nx_sd *x, int par, int64_t sidx, int64_t ssz)
{
	nx_lower *L = x->L;
	int64_t ct = cs_sw(x) / 128, eo = nx_dtype_bytes[x->cs->dt];
	nx_l_addreg(L, NX_ENG_ACT, S_ACT_PE, 1);
	nx_l_wait_rel(L, NX_ENG_ACT, NX_LSEM_ENG + NX_ENG_PE, x->base_pe, S_ACT_PE);
	size_t n0 = L->s[NX_ENG_ACT].n;
	nx_l_colsum_finish(L, x->cs->dt, x->cs_res + sidx * ct * eo, cs_pcol(x, par), ssz, x->cs->init, NX_DT_F32,
	                   -1);
	if (x->lv_s >= 0)
		for (size_t i = n0; i < L->s[NX_ENG_ACT].n; i++)
			L->s[NX_ENG_ACT].v[i].ap[0].loop_stride[x->lv_s] = 2 * ct * eo;
}

/* kernel end (after POOL's wait for SP's loads on its queues): ACT signals
 * its last sums, POOL stores them (out[t*128 + p] = res[p, t]) */
void nx_l_dot_cs_store(nx_sd *x, nx_lsync *done)
{
	nx_lower *L = x->L;
	nx_lval *out = x->cs->out;
	int64_t C = cs_extent(x), CTf = C / 128, rem = C % 128, eo = nx_dtype_bytes[out->dt];
	nx_lsync ev = nx_l_signal(L, NX_ENG_ACT), st;
	nx_l_max(&x->act, &ev);
	nx_l_wait(L, NX_ENG_POOL, &ev);
	memset(&st, 0, sizeof st);
	for (int part = 0; part < 2; part++) {
		int64_t np = part ? rem : 128, nf = part ? (rem ? 1 : 0) : CTf, off = part ? CTf : 0;
		if (np == 0 || nf == 0)
			continue;
		int32_t s128[1] = {128}, s1[1] = {1};
		uint32_t c1[1] = {(uint32_t)nf};
		nx_ap ho = nx_ap_hbm(out->dt, out->buf->off + off * 128 * eo, (int)np, 1, 1, s128, c1);
		nx_lsync y = nx_l_dma(L, NX_ENG_POOL, ho, nx_ap_sbuf(out->dt, 0, (int)np, x->cs_res + off * eo, 1, s1, c1));
		nx_l_max(&st, &y);
	}
	nx_l_max(&out->buf->written, &st);
	nx_l_max(&out->buf->war, &st);
	nx_l_max(done, &st);
	nx_l_max(done, &ev);
	nx_l_max(done, &x->cs_sig);
	x->cs->done = true;
}
