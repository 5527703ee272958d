/* backend/kernels/colsum.c — an add-reduction over leading dims (column
 * sums: bias gradients, e.g. bert_dp_graph_4's f32[30522] sum over the 2048
 * rows of the MLM logits' gradient) as TensorE matmuls against a ones
 * column, with no axis move: the input [R, C] (reduced dims leading, kept
 * dims trailing, row-major) is loaded as it lies, 128 rows on the
 * partitions and up to CW columns per tile (a narrow input in one column
 * chunk: kr consecutive rows per partition, a piece of ~16 KiB each);
 * for each 128-column tile of each row PE
 * computes psum[c, 0] += X[rows, c]^T . ones[rows] (stationary: the tile's
 * 128 columns, moving: a ones column), accumulating over the row tiles in
 * fp32 PSUM, one PSUM column per column tile (C <= 128 * 2048). ACT adds
 * the init value and casts; POOL stores. Row tiles alternate between two
 * SBUF buffers; their loads are cut into partition ranges over the SP and
 * POOL queues (16 in all). Before, the reduced axis was moved last by one
 * strided 250 MB DMA (29 ms of the kernel's 31.6 ms on that graph). */
#include "backend/lower.h"
#include "backend/lower_ext.h"

#include <string.h>

enum { CW_MAX = 4096, NBUF = 2, NPIECE = 16 };

/* reduced dims a leading prefix, kept dims trailing; R rows of C */
static bool dims_ok(const nx_inst *i, int64_t *R, int64_t *C)
{
	const nx_shape *xs = i->operands[0]->shape;
	bool red[NX_MAX_RANK] = {0};
	for (int k = 0; k < i->a.dimensions.n; k++) {
		int64_t d = i->a.dimensions.v[k];
		if (d < 0 || d >= xs->rank)
			return false;
		red[d] = true;
	}
	*R = *C = 1;
	bool kept = false;
	for (int k = 0; k < xs->rank; k++) {
		if (red[k] && kept && xs->dims[k] > 1)
			return false;
		if (!red[k] && xs->dims[k] > 1)
			kept = true;
		*(red[k] ? R : C) *= xs->dims[k];
	}
	return true;
}

bool nx_l_colsum_ok(const nx_lower *L, const nx_inst *i)
{
	int64_t R, C;
	(void)L;
	if (i->op != NX_OP_REDUCE || i->noperands != 2 || !nx_shape_is_array(i->shape) ||
	    nx_l_reduce_alu(i) != NX_ALU_ADD || !dims_ok(i, &R, &C))
		return false;
	nx_type t = i->operands[0]->shape->type, o = i->shape->type;
	if ((t != NX_F32 && t != NX_BF16 && t != NX_F16) || (o != NX_F32 && o != NX_BF16 && o != NX_F16) ||
	    i->operands[1]->shape->type != o)
		return false;
	/* worth it when the old path moves the axis: both sides a few tiles */
	return R >= 256 && C >= 256 && C <= 128 * 2048 && R * C >= (1 << 20);
}

nx_status nx_l_colsum(nx_lower *L, const nx_inst *i, nx_lval *const *ops, nx_lval *out)
{
	int64_t R, C;
	if (!nx_l_colsum_ok(L, i) || !dims_ok(i, &R, &C))
		return nx_l_err(L, "reduce: not a column sum (internal: the PE path was chosen)");
	nx_lval *x = ops[0], *init = ops[1];
	nx_dtype dt = x->dt, odt = out->dt;
	int64_t esz = nx_dtype_bytes[dt], eo = nx_dtype_bytes[odt];
	int64_t CW = C < CW_MAX ? C : CW_MAX, NC = (C + CW - 1) / CW;
	int64_t CT = (C + 127) / 128, rem = C % 128, CTf = C / 128;
	/* rows per partition of a full row tile (one column chunk): each
	 * partition's piece kr rows long, about 16 KiB (bert's [2048, 1024]
	 * f32: 4 tiles of 2 MiB in pieces of 128 KiB, 63.7 -> 43 us after
	 * the dot it follows; the DMAs' fixed cost was a third of it) */
	int64_t kr = NC == 1 ? (16384 / (C * esz) < 1 ? 1 : 16384 / (C * esz)) : 1;
	kr = kr < R / 256 ? kr : R / 256 > 1 ? R / 256 : 1;
	int64_t TF = R / (128 * kr), KT = TF + (R - TF * 128 * kr + 127) / 128; /* full tiles, all tiles */
	/* SBUF: row-tile buffers [128, kr * CW], ones [128, 1], init [128, 1] f32, result [128, CT] */
	int64_t o_buf = 0, o_ones = o_buf + NBUF * nx_l_al64(kr * CW * esz), o_init = o_ones + 64, o_res = o_init + 64;
	int64_t bytes = o_res + nx_l_al64(CT * eo), base;
	int h;
	nx_status rc = nx_l_sbuf_begin(L, bytes, &base, &h);
	if (rc)
		return rc;
	o_buf += base, o_ones += base, o_init += base, o_res += base;
	int64_t pbase = 0; /* PSUM half 0: [128, CT] fp32 (CT <= 2048 = 4 banks) */
	nx_l_plan_kernel(L, "column-sum-pe");
	nx_l_plan(L, "shape", "%lld rows of %lld %s -> %lld %s", (long long)R, (long long)C, nx_dtype_names[dt],
	          (long long)C, nx_dtype_names[odt]);
	if (kr > 1)
		nx_l_plan(L, "tiling",
		          "[128 partitions, %lld rows of %lld] per tile, %lld tiles (%lld of 128 rows after); "
		          "%lld column tiles of 128",
		          (long long)kr, (long long)CW, (long long)KT, (long long)(KT - TF), (long long)CT);
	else
		nx_l_plan(L, "tiling", "[128 rows, %lld columns] per tile, %lld x %lld tiles; %lld column tiles of 128",
		          (long long)CW, (long long)NC, (long long)KT, (long long)CT);
	nx_l_plan(L, "engines", "load sp+pool (%d queues), matmul pe (ones column), init+cast act, store pool", NPIECE);
	nx_l_mem(L, "psum", "half 0, %lld columns", (long long)CT);

	bool used[NX_ENG_COUNT];
	nx_engine st[2] = {NX_ENG_PE, NX_ENG_ACT};
	nx_l_kernel_engines(st, 2, used);
	used[NX_ENG_DVE] = true;
	nx_l_kernel_begin(L, h, used);
	nx_l_wait(L, NX_ENG_SP, &x->buf->written);
	nx_l_wait(L, NX_ENG_POOL, &x->buf->written);
	nx_l_wait(L, NX_ENG_SP, &init->buf->written);
	nx_l_wait(L, NX_ENG_POOL, &out->buf->war);
	for (int k = 0; k < 2; k++) {
		nx_l_wait(L, NX_ENG_PE, &L->psum_free[k]);
		nx_l_wait(L, NX_ENG_ACT, &L->psum_free[k]);
	}
	int32_t s1[1] = {1};
	uint32_t c1[1] = {1};
	/* ones column (DVE) and the init value in every partition (SP) */
	nx_insn *m = nx_l_emit(L, NX_ENG_DVE, NX_I_MEMSET);
	m->ap[0] = nx_ap_sbuf(dt, 0, 128, o_ones, 1, s1, c1);
	m->fimm[0] = 1;
	nx_lsync ones = nx_l_signal(L, NX_ENG_DVE), loads, pe, comp;
	memset(&loads, 0, sizeof loads);
	memset(&pe, 0, sizeof pe);
	nx_lsync yi = nx_l_dma(L, NX_ENG_SP, nx_ap_sbuf(init->dt, 0, 128, o_init, 1, s1, c1),
	                       nx_ap_hbm(init->dt, init->buf->off, 128, 0, 1, s1, c1));
	nx_l_max(&loads, &yi);
	nx_l_wait(L, NX_ENG_PE, &ones);
	nx_lsync done_pe[NBUF];
	memset(done_pe, 0, sizeof done_pe);
	int64_t t = 0;
	for (int64_t cc = 0; cc < NC; cc++) {
		int64_t c0 = cc * CW, cw = C - c0 < CW ? C - c0 : CW;
		int64_t ct0 = c0 / 128;
		for (int64_t kt = 0; kt < KT; kt++, t++) {
			int b = (int)(t % NBUF);
			/* full tiles of kr rows per partition, then tiles of one */
			int64_t kk = kt < TF ? kr : 1, r0 = kt < TF ? kt * 128 * kr : TF * 128 * kr + (kt - TF) * 128;
			int64_t np = R - r0 < 128 * kk ? R - r0 : 128, ob = o_buf + b * nx_l_al64(kr * CW * esz);
			/* loads, once PE is done with the buffer (tile t - NBUF) */
			nx_lsync ld;
			memset(&ld, 0, sizeof ld);
			nx_l_wait(L, NX_ENG_SP, &done_pe[b]);
			nx_l_wait(L, NX_ENG_POOL, &done_pe[b]);
			int64_t npc = np < NPIECE ? np : NPIECE;
			for (int64_t pc = 0; pc < npc; pc++) {
				int64_t p0 = np * pc / npc, p1 = np * (pc + 1) / npc;
				nx_engine e = pc % 2 ? NX_ENG_POOL : NX_ENG_SP;
				c1[0] = (uint32_t)(kk * cw); /* (kk > 1: one chunk, rows contiguous) */
				nx_ap hs = nx_ap_hbm(dt, x->buf->off + ((r0 + p0 * kk) * C + c0) * esz, (int)(p1 - p0), kk * C, 1,
				                     s1, c1);
				nx_lsync y = nx_l_dma(L, e, nx_ap_sbuf(dt, (int)p0, (int)(p1 - p0), ob, 1, s1, c1), hs);
				nx_l_max(&ld, &y);
			}
			nx_l_max(&loads, &ld);
			/* PE: one matmul per column tile, accumulating over the row tiles */
			nx_l_wait(L, NX_ENG_PE, &ld);
			for (int64_t j = 0; j < kk; j++)
				nx_l_colsum_mm(L, dt, np, ob + j * cw * esz, cw, o_ones, pbase + ct0 * 4,
				               kt == 0 && j == 0 ? NX_IF_START : 0);
			done_pe[b] = nx_l_signal(L, NX_ENG_PE);
			pe = done_pe[b];
		}
	}
	/* ACT: + init, cast, [128, CT] (the ragged column tile has rem partitions) */
	nx_l_wait(L, NX_ENG_ACT, &pe);
	nx_l_wait(L, NX_ENG_ACT, &loads);
	nx_l_colsum_finish(L, odt, o_res, pbase, C, 0.0f, init->dt, o_init);
	nx_lsync ev = nx_l_signal(L, NX_ENG_ACT);
	L->psum_free[0] = L->psum_free[1] = ev;
	/* POOL: out[ct*128 + p] = res[p, ct] */
	nx_l_wait(L, NX_ENG_POOL, &ev);
	nx_lsync stores;
	memset(&stores, 0, sizeof stores);
	for (int part = 0; part < 2; part++) {
		int64_t np = part ? rem : 128, nf = part ? (rem ? 1 : 0) : CTf, off = part ? CTf : 0;
		if (np == 0 || nf == 0)
			continue;
		int32_t s128[1] = {128};
		c1[0] = (uint32_t)nf;
		nx_ap ho = nx_ap_hbm(odt, out->buf->off + off * 128 * eo, (int)np, 1, 1, s128, c1);
		nx_lsync y = nx_l_dma(L, NX_ENG_POOL, ho, nx_ap_sbuf(odt, 0, (int)np, o_res + off * eo, 1, s1, c1));
		nx_l_max(&stores, &y);
	}
	memset(&comp, 0, sizeof comp);
	nx_l_max(&comp, &pe);
	nx_l_max(&comp, &ev);
	nx_l_max(&comp, &ones);
	nx_l_max(&x->buf->war, &loads);
	nx_l_max(&init->buf->war, &loads);
	nx_l_kernel_end(L, h, &out, 1, &loads, &stores, &comp);
	return NX_OK;
}
