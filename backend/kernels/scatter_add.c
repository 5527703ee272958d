/* backend/kernels/scatter_add.c — scatter-add of rows (embedding gradients:
 * out = x; out[idx[n], :] += upd[n, :], repeated indices accumulating) as
 * TensorE matmuls against one-hot tiles built on chip:
 *
 *   out[v, :] = x[v, :] + sum_n onehot[n, v] * upd[n, :],  onehot[n, v] = (idx[n] == v)
 *
 * The N updates sit on the partitions (row n = p*KT + kt: partition p,
 * column kt; the order of a sum does not matter to the contraction), so
 * one matmul contracts 128 of them. The vocabulary is cut into blocks of
 * W = B*128 rows; per block a one-hot tile [128, KT, W] is built by
 * tensor_scalar is_equal of a row iota (v0 + c) against each partition's
 * index (DVE for even blocks, ACT for odd ones), PE accumulates KT matmuls
 * per 128-row vocabulary tile in one PSUM bank (fp32: products with a
 * one-hot factor are exact, only the summation order differs from a
 * sequential scatter), POOL adds the operand rows and stores the block.
 * Indices outside [0, V) match no column, so their updates are dropped as
 * XLA drops out-of-bounds scatter windows. Blocks alternate between two
 * buffer sets and run as a counted loop over block pairs with per-iteration
 * waits (registers), so code size does not grow with V or N.
 *
 * A non-finite update (inf, NaN) multiplies the zeros of its one-hot row
 * too: NaN reaches every row of the table instead of one (docs/lowering.md).
 * nx_l_scatter_pe_ok decides (structure, SBUF, and the cost estimate
 * against the GpSimd kernel, backend/gpsimd/gs_lower.c). */
#include "backend/lower.h"
#include "backend/lower_ext.h"

#include <string.h>

enum { R_BLK, R_PAIR }; /* per-engine registers: blocks done, pairs done */
enum { NSET = 2 };

typedef struct sa {
	nx_lower *L;
	nx_lval *x, *idx, *upd, *out;
	nx_dtype dt, idt;             /* operand/updates/result; indices (s32/u32) */
	int64_t V, H, N, KT, B, W, NB; /* rows, columns of this chunk, updates, K tiles, vocab tiles per block */
	int64_t Hs, c0, n0;           /* row length in HBM, this chunk's first column, first update */
	int64_t esz;
	/* SBUF (bytes, absolute) */
	int64_t o_idxr, o_idxf, o_upd, o_iota, o_boff, o_iotab[NSET], o_oh[NSET], o_op[NSET], o_res[NSET];
	int64_t pbase[NSET];
	nx_engine be[NSET];           /* one-hot builder of each set */
	int ql[NSET], ql2, qs[NSET], qs2, qi, qu; /* a load and a store queue per buffer set */
	int64_t b_pe, b_pool, b_be[NSET], b_ql[NSET], b_qs[NSET];
	bool same_be;
	int lv;                       /* loop level of the pair loop on every engine, -1 outside */
} sa;

/* Structure: one index per update row into operand dim d (all dims before d
 * of size 1), the update's window = the operand's other dims, trailing;
 * combiner add; f32/bf16/f16 values, s32/u32 indices. Fills V, H, N. */
static bool shape_ok(const nx_lower *L, const nx_inst *i, int64_t *V, int64_t *H, int64_t *N)
{
	const nx_scatter_dnums *sd = &i->a.scatter;
	if (i->op != NX_OP_SCATTER || i->noperands != 3 || i->ncalled != 1 || sd->input_batching_dims.n ||
	    sd->scatter_dims_to_operand_dims.n != 1 || sd->inserted_window_dims.n != 1 ||
	    sd->inserted_window_dims.v[0] != sd->scatter_dims_to_operand_dims.v[0])
		return false;
	const nx_inst *r = i->called[0]->root;
	if (r->op != NX_OP_ADD || r->noperands != 2 || r->operands[0]->op != NX_OP_PARAMETER ||
	    r->operands[1]->op != NX_OP_PARAMETER || r->operands[0] == r->operands[1])
		return false;
	const nx_shape *xs = i->operands[0]->shape, *is = i->operands[1]->shape, *us = i->operands[2]->shape;
	if (!nx_shape_is_array(i->shape) || !nx_shape_is_array(xs) || !nx_shape_is_array(is) || !nx_shape_is_array(us))
		return false;
	nx_type t = xs->type;
	if ((t != NX_F32 && t != NX_BF16 && t != NX_F16) || us->type != t || i->shape->type != t)
		return false;
	if (is->type != NX_S32 && is->type != NX_U32 && is->type != NX_S64 && is->type != NX_U64)
		return false;
	int d = (int)sd->scatter_dims_to_operand_dims.v[0];
	if (d < 0 || d >= xs->rank)
		return false;
	for (int k = 0; k < d; k++)
		if (xs->dims[k] != 1)
			return false;
	int64_t ivd = sd->index_vector_dim;
	if (ivd < is->rank && is->dims[ivd] != 1)
		return false;
	int nw = sd->update_window_dims.n;
	if (nw != xs->rank - 1)
		return false;
	*H = 1;
	for (int k = 0, w = 0; k < xs->rank; k++) {
		if (k == d)
			continue;
		int64_t ud = sd->update_window_dims.v[w];
		if (ud != us->rank - nw + w || us->dims[ud] != xs->dims[k])
			return false;
		*H *= xs->dims[k];
		w++;
	}
	*V = xs->dims[d];
	*N = 1;
	for (int k = 0; k < us->rank - nw; k++)
		*N *= us->dims[k];
	/* the device holds 64-bit indices as s32 after int64-split */
	int idt = nx_lower_dtype(is->type);
	(void)L;
	return *N == nx_shape_elems(is) && *V >= 1 && *H >= 1 && *N >= 2 &&
	       *V <= (1 << 24) && *N <= (1 << 24) && (idt == NX_DT_S32 || idt == NX_DT_U32);
}

/* Vocabulary tiles per block (B >= 1) that fit one SBUF half, 0: none. */
static int64_t pick_b(const nx_lower *L, int64_t V, int64_t H, int64_t N, int64_t esz, int64_t *bytes)
{
	int64_t KT = (N + 127) / 128, VT = (V + 127) / 128, c = 512 / H;
	for (int64_t B = 16; B >= 1; B /= 2) {
		if (B > c || (B > 1 && B / 2 >= VT))
			continue;
		int64_t W = B * 128, NB = (V + W - 1) / W;
		int64_t b = nx_l_al64(KT * 4) * 2 + nx_l_al64(KT * H * esz) + nx_l_al64(W * 4) + nx_l_al64(NB * 4) +
		            NSET * (nx_l_al64(W * 4) + nx_l_al64(KT * W * esz) + 2 * nx_l_al64(B * H * esz));
		if (b <= L->sbuf_half) {
			*bytes = b;
			return B;
		}
	}
	return 0;
}

/* Estimated time of this kernel (ns): the busiest of the one-hot builders
 * (two engines), PE (fp32 at a quarter of the bf16 rate) and the DMAs. */
static double pe_ns(const nx_lower *L, int64_t V, int64_t H, int64_t N, int64_t B, nx_dtype dt)
{
	const nx_target *t = L->t;
	int64_t KT = (N + 127) / 128, W = B * 128, NB = (V + W - 1) / W;
	double build = (double)NB * (double)(KT + 1) * ((double)(W > 64 ? W : 64) + 60.0);
	double dve = build / 2 / t->freq_ghz[NX_ENG_DVE];
	double mm = (double)(H > 64 ? H : 64) * (dt == NX_DT_F32 ? t->pe_fp32_factor : 1.0);
	double pe = (double)NB * (double)KT * (double)B * mm / t->freq_ghz[NX_ENG_PE];
	double bytes = 2.0 * (double)V * (double)H * (double)nx_dtype_bytes[dt] + (double)N * (double)H * 4;
	double dma = bytes / nx_target_dma_peak_gbps(t) + 4.0 * t->dma_fixed_ns;
	double m = dve > pe ? dve : pe;
	return (m > dma ? m : dma) + 2.0 * t->dma_fixed_ns;
}

/* The GpSimd scatter (backend/gpsimd/) runs in one partition, element by
 * element: ~24 ns per operand element and per update element of each part
 * the operand is cut into (measured: bert_dp_graph_4's f32[30522,16]
 * scatter of 2048 rows, 96 calls, 86 ms on trn1). */
#define GS_SCATTER_NS_PER_ELEM 24.0

static double gs_ns(const nx_lower *L, int64_t V, int64_t H, int64_t N, int64_t esz)
{
	double part = (double)L->sbuf_half / (double)esz / 2.0; /* operand elements per part */
	double parts = (double)V * (double)H / part;
	if (parts < 1)
		parts = 1;
	return GS_SCATTER_NS_PER_ELEM * ((double)V * (double)H + parts * (double)N * (double)H);
}

/* rows beyond 512 elements (one PSUM bank): column chunks of <= 512, one
 * kernel each (each builds its own one-hot tiles) */
static int64_t chunk_cols(int64_t H)
{
	int64_t n = (H + 511) / 512;
	return (H + n - 1) / n;
}

/* updates per kernel: all N, or the most multiples of 128 whose one-hot
 * and update tiles fit (later chunks add into the result so far: a bf16
 * result is rounded once per chunk); 0: not even 128 fit */
static int64_t chunk_rows(const nx_lower *L, int64_t V, int64_t hc, int64_t N, int64_t esz)
{
	int64_t bytes;
	if (pick_b(L, V, hc, N, esz, &bytes) > 0)
		return N;
	int64_t lo = 0;
	for (int64_t k = 1; k * 128 < N; k++) {
		if (pick_b(L, V, hc, k * 128, esz, &bytes) <= 0)
			break;
		lo = k * 128;
	}
	return lo;
}

bool nx_l_scatter_pe_ok(const nx_lower *L, const nx_inst *i)
{
	int64_t V, H, N, bytes;
	if (!shape_ok(L, i, &V, &H, &N))
		return false;
	nx_dtype dt = (nx_dtype)nx_lower_dtype(i->shape->type);
	int64_t hc = chunk_cols(H), nch = (H + hc - 1) / hc, nc = chunk_rows(L, V, hc, N, nx_dtype_bytes[dt]);
	if (nc < 1 || N < 2)
		return false;
	int64_t nrc = (N + nc - 1) / nc, B = pick_b(L, V, hc, nc, nx_dtype_bytes[dt], &bytes);
	return B > 0 && (double)(nch * nrc) * pe_ns(L, V, hc, nc, B, dt) < gs_ns(L, V, H, N, nx_dtype_bytes[dt]);
}

/* wait until semaphore sem >= base + register r of engine e (inside or
 * outside the pair loop: the registers count blocks / pairs throughout) */
static void wrel(sa *x, nx_engine e, int sem, int64_t base, int r)
{
	nx_l_wait_rel(x->L, e, sem, base, r);
}

static nx_lsync at(int sem, int64_t v)
{
	nx_lsync y;
	memset(&y, 0, sizeof y);
	y.s[sem] = v;
	return y;
}

/* HBM rows [v0 + vt0*128, +np) x H of buffer b (elements of dt) over
 * partitions, nv vocabulary tiles of 128 rows */
static nx_ap rows_ap(const sa *x, const nx_lval *b, int64_t row0, int64_t np, int64_t nv)
{
	int32_t s2[2] = {(int32_t)(128 * x->Hs), 1};
	uint32_t c2[2] = {(uint32_t)nv, (uint32_t)x->H};
	return nx_ap_hbm(b->dt, b->buf->off + (row0 * x->Hs + x->c0) * x->esz, (int)np, x->Hs, 2, s2, c2);
}

/* block j (set s = j % 2) of vocabulary rows [v0, v0 + W); full: all W rows
 * exist. In the pair loop, addresses advance by 2W rows per iteration. */
static void block(sa *x, int64_t j, bool full)
{
	nx_lower *L = x->L;
	int s = (int)(j % NSET);
	int64_t v0 = j * x->W, rows = full ? x->W : x->V - v0;
	int64_t fv = rows / 128, pr = rows % 128; /* whole vocabulary tiles, rows of a partial one */
	int64_t adv_rows = NSET * x->W;
	int32_t s1[1] = {1};
	uint32_t c1[1];
	nx_engine be = x->be[s];
	/* where the builder's signal count stands after this block */
	int bsem = NX_LSEM_ENG + be, breg = x->same_be ? R_BLK : R_PAIR;
	int64_t bbase = x->b_be[s] + 1; /* + the block (one builder) or the pair index (two) */

	/* SP: the operand rows, once POOL has added block j - 2 (its buffer) */
	wrel(x, NX_ENG_SP, NX_LSEM_ENG + NX_ENG_POOL, x->b_pool + 1 - NSET, R_BLK);
	if (fv > 0) {
		nx_ap h = rows_ap(x, x->x, v0, 128, fv);
		if (x->lv >= 0)
			h.loop_stride[x->lv] = adv_rows * x->Hs * x->esz;
		c1[0] = (uint32_t)(fv * x->H);
		nx_l_dma_q(L, NX_ENG_SP, x->ql[s], nx_ap_sbuf(x->dt, 0, 128, x->o_op[s], 1, s1, c1), h);
	}
	if (pr > 0) {
		c1[0] = (uint32_t)x->H;
		nx_l_dma_q(L, NX_ENG_SP, x->ql2, nx_ap_sbuf(x->dt, 0, (int)pr, x->o_op[s] + fv * x->H * x->esz, 1, s1, c1),
		           rows_ap(x, x->x, v0 + fv * 128, pr, 1));
	}

	/* builder: once PE is done with block j - 2 (the one-hot set) */
	wrel(x, be, NX_LSEM_ENG + NX_ENG_PE, x->b_pe + 1 - NSET, R_BLK);
	{
		nx_insn *in = nx_l_emit(L, be, NX_I_TENSOR_SCALAR); /* iotab = iota + v0 */
		in->func = NX_ALU_ADD;
		c1[0] = (uint32_t)x->W;
		in->ap[0] = nx_ap_sbuf(NX_DT_F32, 0, 128, x->o_iotab[s], 1, s1, c1);
		in->ap[1] = nx_ap_sbuf(NX_DT_F32, 0, 128, x->o_iota, 1, s1, c1);
		c1[0] = 1;
		in->ap[2] = nx_ap_sbuf(NX_DT_F32, 0, 128, x->o_boff + j * 4, 1, s1, c1);
		if (x->lv >= 0)
			in->ap[2].loop_stride[x->lv] = NSET * 4;
	}
	nx_l_loop(L, be, x->KT);
	{
		int kl = L->s[be].depth - 1;
		nx_insn *in = nx_l_emit(L, be, NX_I_TENSOR_SCALAR); /* onehot[kt] = (iotab == idx[:, kt]) */
		in->func = NX_ALU_EQ;
		c1[0] = (uint32_t)x->W;
		in->ap[0] = nx_ap_sbuf(x->dt, 0, 128, x->o_oh[s], 1, s1, c1);
		in->ap[0].loop_stride[kl] = x->W * x->esz;
		in->ap[1] = nx_ap_sbuf(NX_DT_F32, 0, 128, x->o_iotab[s], 1, s1, c1);
		c1[0] = 1;
		in->ap[2] = nx_ap_sbuf(NX_DT_F32, 0, 128, x->o_idxf, 1, s1, c1);
		in->ap[2].loop_stride[kl] = 4;
	}
	nx_l_endloop(L, be);
	nx_l_signal(L, be);

	/* PE: the one-hot tile, and the PSUM bank once POOL has read block j - 2 */
	wrel(x, NX_ENG_PE, bsem, bbase, breg);
	wrel(x, NX_ENG_PE, NX_LSEM_ENG + NX_ENG_POOL, x->b_pool + 1 - NSET, R_BLK);
	int64_t B = x->B;
	for (int first = 1; first >= 0; first--) {
		if (!first) {
			if (x->KT == 1)
				break;
			nx_l_loop(L, NX_ENG_PE, x->KT - 1);
		}
		nx_l_loop(L, NX_ENG_PE, B);
		int vl = L->s[NX_ENG_PE].depth - 1, kl = vl - 1;
		nx_insn *mm = nx_l_emit(L, NX_ENG_PE, NX_I_MATMUL);
		mm->flags = first ? NX_IF_START : 0;
		c1[0] = (uint32_t)x->H;
		mm->ap[0] = nx_ap_psum(NX_DT_F32, 0, 128, x->pbase[s], 1, s1, c1);
		mm->ap[0].loop_stride[vl] = x->H * 4;
		c1[0] = 128;
		int64_t k0 = first ? 0 : 1;
		mm->ap[1] = nx_ap_sbuf(x->dt, 0, 128, x->o_oh[s] + k0 * x->W * x->esz, 1, s1, c1);
		mm->ap[1].loop_stride[vl] = 128 * x->esz;
		c1[0] = (uint32_t)x->H;
		mm->ap[2] = nx_ap_sbuf(x->dt, 0, 128, x->o_upd + k0 * x->H * x->esz, 1, s1, c1);
		if (!first) {
			mm->ap[1].loop_stride[kl] = x->W * x->esz;
			mm->ap[2].loop_stride[kl] = x->H * x->esz;
		}
		nx_l_endloop(L, NX_ENG_PE);
		if (!first)
			nx_l_endloop(L, NX_ENG_PE);
	}
	nx_l_signal(L, NX_ENG_PE);

	/* POOL: PSUM + operand rows -> result (cast), once PE, the load and the
	 * store of block j - 2 (the result buffer) are done; then the store */
	wrel(x, NX_ENG_POOL, NX_LSEM_ENG + NX_ENG_PE, x->b_pe + 1, R_BLK);
	if (full) {
		wrel(x, NX_ENG_POOL, x->ql[s], x->b_ql[s] + 1, R_PAIR); /* one per pair on each */
		wrel(x, NX_ENG_POOL, x->qs[s], x->b_qs[s], R_PAIR);
	} else { /* the last block: every load so far, every earlier store */
		nx_lsync y = at(x->ql2, L->qcount[x->ql2]);
		for (int k = 0; k < NSET; k++) {
			y.s[x->ql[k]] = L->qcount[x->ql[k]];
			y.s[x->qs[k]] = L->qcount[x->qs[k]];
		}
		nx_l_wait(L, NX_ENG_POOL, &y);
	}
	for (int part = 0; part < 2; part++) {
		int64_t np = part ? pr : 128, nf = part ? x->H : fv * x->H, off = part ? fv * x->H : 0;
		if (np == 0 || nf == 0)
			continue;
		nx_insn *in = nx_l_emit(L, NX_ENG_POOL, NX_I_TENSOR_TENSOR);
		in->func = NX_ALU_ADD;
		c1[0] = (uint32_t)nf;
		in->ap[0] = nx_ap_sbuf(x->dt, 0, (int)np, x->o_res[s] + off * x->esz, 1, s1, c1);
		in->ap[1] = nx_ap_psum(NX_DT_F32, 0, (int)np, x->pbase[s] + off * 4, 1, s1, c1);
		in->ap[2] = nx_ap_sbuf(x->dt, 0, (int)np, x->o_op[s] + off * x->esz, 1, s1, c1);
	}
	nx_l_signal(L, NX_ENG_POOL);
	if (fv > 0) {
		nx_ap h = rows_ap(x, x->out, v0, 128, fv);
		if (x->lv >= 0)
			h.loop_stride[x->lv] = adv_rows * x->Hs * x->esz;
		c1[0] = (uint32_t)(fv * x->H);
		nx_l_dma_q(L, NX_ENG_POOL, x->qs[s], h, nx_ap_sbuf(x->dt, 0, 128, x->o_res[s], 1, s1, c1));
	}
	if (pr > 0) {
		c1[0] = (uint32_t)x->H;
		nx_l_dma_q(L, NX_ENG_POOL, x->qs2, rows_ap(x, x->out, v0 + fv * 128, pr, 1),
		           nx_ap_sbuf(x->dt, 0, (int)pr, x->o_res[s] + fv * x->H * x->esz, 1, s1, c1));
	}
	nx_engine all[5] = {NX_ENG_SP, NX_ENG_PE, NX_ENG_POOL, x->be[0], x->be[1]};
	int nall = x->same_be ? 4 : 5;
	for (int k = 0; k < nall; k++) {
		nx_l_addreg(L, all[k], R_BLK, 1);
		if (s == NSET - 1)
			nx_l_addreg(L, all[k], R_PAIR, 1);
	}
}

/* indices (s32/u32) and updates into [128, KT] / [128, KT*H], row n at
 * partition n / KT, column n % KT; rows past N: index -1 (matches no
 * column), update 0 */
static void setup(sa *x)
{
	nx_lower *L = x->L;
	int64_t KT = x->KT, N = x->N, Pf = N / KT, r = N % KT;
	int32_t s1[1] = {1};
	uint32_t c1[1];
	bool pad = Pf < 128;
	nx_engine e = NX_ENG_DVE;
	if (pad) { /* updates of missing rows: 0 (a NaN there would spread) */
		nx_insn *m = nx_l_emit(L, e, NX_I_MEMSET);
		c1[0] = (uint32_t)(KT * x->H);
		m->ap[0] = nx_ap_sbuf(x->dt, 0, 128, x->o_upd, 1, s1, c1);
		m->fimm[0] = 0;
		nx_lsync y = nx_l_signal(L, e);
		nx_l_wait(L, NX_ENG_SP, &y);
	}
	for (int k = 0; k < 2; k++) { /* k 0: indices, 1: updates */
		nx_lval *v = k ? x->upd : x->idx;
		/* rows of rl elements (this chunk's columns) rs apart in HBM */
		int64_t rl = k ? x->H : 1, rs = k ? x->Hs : 1, es = nx_dtype_bytes[v->dt], o = k ? x->o_upd : x->o_idxr;
		int64_t h0 = v->buf->off + (x->n0 * rs + (k ? x->c0 : 0)) * es;
		int q = k ? x->qu : x->qi;
		for (int part = 0; part < 2; part++) {
			int64_t np = part ? 1 : Pf, nr = part ? r : KT;
			if (np == 0 || nr == 0)
				continue;
			int32_t s2[2] = {(int32_t)rs, 1};
			uint32_t c2[2] = {(uint32_t)nr, (uint32_t)rl};
			c1[0] = (uint32_t)(nr * rl);
			nx_l_dma_q(L, NX_ENG_SP, q, nx_ap_sbuf(v->dt, part ? (int)Pf : 0, (int)np, o, 1, s1, c1),
			           nx_ap_hbm(v->dt, h0 + (part ? Pf * KT * rs * es : 0), (int)np, KT * rs, 2, s2, c2));
		}
	}
	/* indices as f32 (exact below 2^24; larger ones stay >= 2^24 > V - 1) */
	nx_lsync li = at(x->qi, L->qcount[x->qi]);
	nx_l_wait(L, e, &li);
	nx_insn *m = nx_l_emit(L, e, NX_I_MEMSET);
	c1[0] = (uint32_t)KT;
	m->ap[0] = nx_ap_sbuf(NX_DT_F32, 0, 128, x->o_idxf, 1, s1, c1);
	m->fimm[0] = -1;
	for (int k = 0; k < 2; k++) {
		int64_t np = k ? 1 : Pf, nf = k ? r : KT, p0 = k ? Pf : 0;
		if (np == 0 || nf == 0)
			continue;
		nx_insn *cp = nx_l_emit(L, e, NX_I_TENSOR_COPY);
		c1[0] = (uint32_t)nf;
		cp->ap[0] = nx_ap_sbuf(NX_DT_F32, (int)p0, (int)np, x->o_idxf, 1, s1, c1);
		cp->ap[1] = nx_ap_sbuf(x->idt, (int)p0, (int)np, x->o_idxr, 1, s1, c1);
	}
	/* iota row 0..W-1 and the block offsets j*W */
	nx_insn *io = nx_l_emit(L, e, NX_I_IOTA);
	c1[0] = (uint32_t)x->W;
	io->ap[0] = nx_ap_sbuf(NX_DT_F32, 0, 128, x->o_iota, 1, s1, c1);
	io->iarg[2] = 1;
	io = nx_l_emit(L, e, NX_I_IOTA);
	c1[0] = (uint32_t)x->NB;
	io->ap[0] = nx_ap_sbuf(NX_DT_F32, 0, 128, x->o_boff, 1, s1, c1);
	io->iarg[2] = (int32_t)x->W;
	nx_lsync ready = nx_l_signal(L, e);
	/* the other builder and PE start after it; PE after the update loads */
	nx_l_wait(L, x->be[1], &ready);
	nx_lsync lu = at(x->qu, L->qcount[x->qu]);
	nx_l_wait(L, NX_ENG_PE, &lu);
}

/* columns [c0, c0 + hc) of rows of Hs elements, updates [n0, n0 + N), the
 * operand rows from xin: one kernel */
static nx_status chunk(nx_lower *L, nx_lval *const *ops, nx_lval *xin, nx_lval *out, int64_t V, int64_t N, int64_t Hs,
                       int64_t c0, int64_t hc, int64_t n0)
{
	sa x;
	memset(&x, 0, sizeof x);
	int64_t bytes = 0;
	x.V = V, x.N = N, x.Hs = Hs, x.c0 = c0, x.H = hc, x.n0 = n0;
	x.L = L, x.x = xin, x.idx = ops[1], x.upd = ops[2], x.out = out;
	x.dt = out->dt, x.idt = ops[1]->dt, x.esz = nx_dtype_bytes[x.dt];
	x.B = pick_b(L, x.V, x.H, x.N, x.esz, &bytes);
	if (x.B < 1 || ops[0]->dt != x.dt || ops[2]->dt != x.dt)
		return nx_l_err(L, "scatter: the one-hot matmul kernel does not fit (internal: the PE path was chosen)");
	x.KT = (x.N + 127) / 128, x.W = x.B * 128, x.NB = (x.V + x.W - 1) / x.W;
	int64_t base;
	int h;
	nx_status rc = nx_l_sbuf_begin(L, bytes, &base, &h);
	if (rc)
		return rc;
	int64_t o = base;
	x.o_idxr = o, o += nx_l_al64(x.KT * 4);
	x.o_idxf = o, o += nx_l_al64(x.KT * 4);
	x.o_upd = o, o += nx_l_al64(x.KT * x.H * x.esz);
	x.o_iota = o, o += nx_l_al64(x.W * 4);
	x.o_boff = o, o += nx_l_al64(x.NB * 4);
	for (int s = 0; s < NSET; s++) {
		x.o_iotab[s] = o, o += nx_l_al64(x.W * 4);
		x.o_oh[s] = o, o += nx_l_al64(x.KT * x.W * x.esz);
		x.o_op[s] = o, o += nx_l_al64(x.B * x.H * x.esz);
		x.o_res[s] = o, o += nx_l_al64(x.B * x.H * x.esz);
		x.pbase[s] = s * (L->t->psum_banks / 2) * L->t->psum_bank_bytes;
	}
	NX_ASSERT(o - base == bytes);
	x.be[0] = NX_ENG_DVE, x.be[1] = NX_ENG_ACT;
	x.same_be = x.be[0] == x.be[1];
	x.qi = nx_l_queue(L, NX_ENG_SP), x.qu = nx_l_queue(L, NX_ENG_SP);
	for (int k = 0; k < NSET; k++)
		x.ql[k] = nx_l_queue(L, NX_ENG_SP), x.qs[k] = nx_l_queue(L, NX_ENG_POOL);
	x.ql2 = nx_l_queue(L, NX_ENG_SP), x.qs2 = nx_l_queue(L, NX_ENG_POOL);
	int64_t NBF = x.V / x.W, pairs = NBF / NSET;

	nx_l_plan_kernel(L, "scatter-add-pe");
	nx_l_plan(L, "shape", "[%lld, %lld] += onehot(%lld indices)^T . [%lld, %lld] %s", (long long)x.V,
	          (long long)x.H, (long long)x.N, (long long)x.N, (long long)x.H, nx_dtype_names[x.dt]);
	if (x.H < x.Hs)
		nx_l_plan(L, "columns", "[%lld, %lld) of %lld", (long long)x.c0, (long long)(x.c0 + x.H), (long long)x.Hs);
	if (x.n0 > 0 || nx_shape_elems(x.idx->shape) > x.N)
		nx_l_plan(L, "updates", "[%lld, %lld) of %lld%s", (long long)x.n0, (long long)(x.n0 + x.N),
		          (long long)nx_shape_elems(x.idx->shape), x.n0 ? ", added to the result so far" : "");
	nx_l_plan(L, "tiling", "%lld K tiles of 128 updates; blocks of %lld vocabulary rows (%lld tiles), %lld blocks",
	          (long long)x.KT, (long long)x.W, (long long)x.B, (long long)x.NB);
	nx_l_plan(L, "loops", "block pairs %lld > k %lld > vocabulary tile %lld (%d buffer sets, per-iteration waits)",
	          (long long)pairs, (long long)x.KT, (long long)x.B, (int)NSET);
	nx_l_plan(L, "engines", "load sp q%d/q%d, one-hot %s/%s, matmul pe, add+store pool q%d/q%d", x.ql[0], x.ql[1],
	          nx_engine_names[x.be[0]], nx_engine_names[x.be[1]], x.qs[0], x.qs[1]);
	nx_l_plan(L, "resident", "none");
	nx_l_mem(L, "psum", "halves 0 and 1, one bank each");

	bool used[NX_ENG_COUNT];
	nx_engine stages[3] = {NX_ENG_DVE, NX_ENG_ACT, NX_ENG_PE};
	nx_l_kernel_engines(stages, 3, used);
	nx_l_kernel_begin(L, h, used);
	nx_l_wait(L, NX_ENG_SP, &x.x->buf->written);
	nx_l_wait(L, NX_ENG_SP, &x.idx->buf->written);
	nx_l_wait(L, NX_ENG_SP, &x.upd->buf->written);
	nx_l_wait(L, NX_ENG_POOL, &out->buf->war);
	for (int k = 0; k < 2; k++) { /* POOL reads the PSUM halves PE writes */
		nx_l_wait(L, NX_ENG_PE, &L->psum_free[k]);
		nx_l_wait(L, NX_ENG_POOL, &L->psum_free[k]);
	}
	setup(&x);
	x.b_pe = L->ecount[NX_ENG_PE], x.b_pool = L->ecount[NX_ENG_POOL];
	for (int s = 0; s < NSET; s++)
		x.b_be[s] = L->ecount[x.be[s]];
	for (int k = 0; k < NSET; k++)
		x.b_ql[k] = L->qcount[x.ql[k]], x.b_qs[k] = L->qcount[x.qs[k]];
	nx_engine eng[5] = {NX_ENG_SP, NX_ENG_DVE, NX_ENG_ACT, NX_ENG_PE, NX_ENG_POOL};
	for (int k = 0; k < 5; k++) {
		nx_l_setreg(L, eng[k], R_BLK, 0);
		nx_l_setreg(L, eng[k], R_PAIR, 0);
	}
	x.lv = -1;
	if (pairs > 1) {
		for (int k = 0; k < 5; k++)
			nx_l_loop(L, eng[k], pairs);
		x.lv = L->s[NX_ENG_PE].depth - 1;
		for (int k = 0; k < 5; k++)
			NX_ASSERT(L->s[eng[k]].depth - 1 == x.lv);
	}
	int64_t j = 0;
	if (pairs > 0) {
		for (int s = 0; s < NSET; s++)
			block(&x, s, true);
		j = NSET;
	}
	if (pairs > 1) {
		for (int k = 0; k < 5; k++)
			nx_l_endloop(L, eng[k]);
		x.lv = -1;
		j = pairs * NSET;
	}
	for (; j < NBF; j++)
		block(&x, j, true);
	if (x.V % x.W)
		block(&x, NBF, false);

	/* POOL's last signal stands for every engine's work (the per-iteration
	 * waits above carry no knowledge to the compile-time checks): the PSUM
	 * halves are free after it */
	nx_lsync fin;
	memset(&fin, 0, sizeof fin);
	for (int k = 1; k < 4; k++)
		fin.s[NX_LSEM_ENG + eng[k]] = L->ecount[eng[k]];
	nx_l_wait(L, NX_ENG_POOL, &fin);
	nx_l_signal(L, NX_ENG_POOL);
	nx_lsync loads, stores, comp;
	memset(&loads, 0, sizeof loads);
	memset(&stores, 0, sizeof stores);
	memset(&comp, 0, sizeof comp);
	int lq[5] = {x.qi, x.qu, x.ql[0], x.ql[1], x.ql2};
	for (int k = 0; k < 5; k++)
		loads.s[lq[k]] = L->qcount[lq[k]];
	stores.s[x.qs[0]] = L->qcount[x.qs[0]];
	stores.s[x.qs[1]] = L->qcount[x.qs[1]];
	stores.s[x.qs2] = L->qcount[x.qs2];
	for (int k = 1; k < 5; k++)
		comp.s[NX_LSEM_ENG + eng[k]] = L->ecount[eng[k]];
	for (int k = 0; k < 3; k++)
		nx_l_max(&ops[k]->buf->war, &loads);
	nx_l_max(&x.x->buf->war, &loads);
	nx_lsync pool = at(NX_LSEM_ENG + NX_ENG_POOL, L->ecount[NX_ENG_POOL]);
	L->psum_free[0] = L->psum_free[1] = pool;
	nx_l_kernel_end(L, h, &out, 1, &loads, &stores, &comp);
	return NX_OK;
}

nx_status nx_l_scatter_pe(nx_lower *L, const nx_inst *i, nx_lval *const *ops, nx_lval *out)
{
	int64_t V, H, N;
	if (!shape_ok(L, i, &V, &H, &N))
		return nx_l_err(L, "scatter: not an add of rows into one dimension (internal: the PE path was chosen)");
	int64_t hc = chunk_cols(H), nc = chunk_rows(L, V, hc, N, nx_dtype_bytes[out->dt]);
	if (nc < 1)
		return nx_l_err(L, "scatter: the one-hot matmul kernel does not fit (internal: the PE path was chosen)");
	for (int64_t c0 = 0; c0 < H; c0 += hc)
		for (int64_t n0 = 0; n0 < N; n0 += nc) {
			/* later update chunks add into the result so far */
			nx_status rc = chunk(L, ops, n0 ? out : ops[0], out, V, N - n0 < nc ? N - n0 : nc, H, c0,
			                     H - c0 < hc ? H - c0 : hc, n0);
			if (rc)
				return rc;
		}
	return NX_OK;
}
