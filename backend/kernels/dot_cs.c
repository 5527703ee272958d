/* backend/kernels/dot_cs.c — a column sum folded into the stationary
 * dot-loop (lower.c dot_cs pairs a reduce-add over the contracting dims of
 * a dot's operand with that dot: a bias gradient beside its weight
 * gradient). When the schedule streams that operand, each step's tile
 * S [K, sw] is in SBUF anyway: after the step's tiles PE sums its columns,
 * per K tile and per 128 columns one matmul with the tile as stationary and
 * a ones column as moving (nx_l_colsum_mm's), accumulating over the K tiles
 * in PSUM columns after the tiles' in the step's first bank, and signals;
 * ACT adds the init value and casts them into the sums' SBUF buffer
 * [128, columns / 128] (column c at partition c % 128 of tile c / 128);
 * POOL stores them once at the end. The standalone kernel loaded the
 * operand again (bert_layer's l1.db: 32 MiB, ~160 us after its dot). */
#include "backend/lower.h"
#include "backend/kernels/dot_loop.h"

#include <string.h>

static int64_t al64(int64_t x)
{
	return (x + 63) & ~(int64_t)63;
}

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
	       sw % 128 == 0 && (c->nt + ncs) * 4 <= L->t->psum_bank_bytes;
}

int64_t nx_l_dot_cs_bytes(const nx_sd *c)
{
	int64_t ct = (cs_extent(c) + 127) / 128;
	return c->cs ? 64 + al64(ct * nx_dtype_bytes[c->cs->dt]) : 0;
}

double nx_l_dot_cs_pe_ns(const nx_sd *c, double mm_ns, double ctl_ns)
{
	int64_t ncs = (cs_sw(c) + 127) / 128;
	return c->cs ? (double)(c->KT * ncs) * (mm_ns + ctl_ns) + 4 * ctl_ns : 0;
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
	x->cs_res = off + 64;
}

void nx_l_dot_cs_plan(nx_lower *L, const nx_sd *x)
{
	nx_l_plan(L, "column sum", "of %s on pe (%lld matmuls per step against a ones column, into psum after the tiles), second output %s",
	          x->side ? "A" : "B", (long long)(x->KT * ((cs_sw(x) + 127) / 128)), x->cs->red->name);
}

/* kernel entry: DVE writes the ones column; PE waits for it */
void nx_l_dot_cs_entry(nx_sd *x, int h)
{
	nx_lower *L = x->L;
	int32_t s1[1] = {1};
	uint32_t c1[1] = {1};
	nx_l_wait(L, NX_ENG_DVE, &L->sbuf_free[h]);
	nx_insn *m = nx_l_emit(L, NX_ENG_DVE, NX_I_MEMSET);
	m->ap[0] = nx_ap_sbuf((x->side ? x->A : x->B)->dt, 0, (int)x->kt, x->cs_ones, 1, s1, c1);
	m->fimm[0] = 1;
	x->cs_sig = nx_l_signal(L, NX_ENG_DVE);
	nx_l_wait(L, NX_ENG_PE, &x->cs_sig);
	nx_l_wait(L, NX_ENG_POOL, &x->cs->out->buf->war);
}

/* the step's PSUM columns: after the tiles' in its first bank */
static int64_t cs_pcol(const nx_sd *x, int par)
{
	int tp = x->G % 2 ? 1 : 2;
	return x->pbase + (tp == 2 ? 2 * par : par) * x->bank + x->nt * 4;
}

/* PE, after the step's tiles: once ACT evacuated the step's first tile (its
 * sums of the steps before are evacuated then: ACT's program order), the
 * K tiles of S[par] (ssz columns) summed into the step's PSUM columns; a
 * signal (SP's wait for S[par] and ACT's for the sums count it) */
void nx_l_dot_cs_pe(nx_sd *x, int par, int64_t ssz)
{
	nx_lower *L = x->L;
	const nx_ldmat *V = x->side ? x->A : x->B;
	int64_t sw = cs_sw(x), pcol = cs_pcol(x, par);
	nx_l_wait_rel(L, NX_ENG_PE, NX_LSEM_ENG + NX_ENG_ACT, x->base_act - x->G + 1, S_PE_T);
	for (int first = 1; first >= 0; first--) {
		if (!first) {
			if (x->KT == 1)
				break;
			nx_l_loop(L, NX_ENG_PE, x->KT - 1);
		}
		size_t n0 = L->s[NX_ENG_PE].n;
		int dk = L->s[NX_ENG_PE].depth - 1;
		nx_l_colsum_mm(L, V->dt, x->kt, x->s_off[par] + (first ? 0 : sw * x->es), ssz, x->cs_ones, pcol,
		               first ? NX_IF_START : 0);
		if (!first) {
			for (size_t i = n0; i < L->s[NX_ENG_PE].n; i++)
				if (L->s[NX_ENG_PE].v[i].op == NX_I_MATMUL)
					L->s[NX_ENG_PE].v[i].ap[1].loop_stride[dk] = sw * x->es;
			nx_l_endloop(L, NX_ENG_PE);
		}
	}
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
