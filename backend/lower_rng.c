/* backend/lower_rng.c — rng-bit-generator on the device, bit-exact with the
 * reference evaluator (ir/eval/eval_rng.c, docs/numerics.md "rng-bit-generator").
 *
 * Philox-4x32-10 (rng_default and rng_philox) runs on DVE with the exact
 * integer ALU operators: int_multiply (low word of the 32x32 product),
 * int_multiply_high (its high word), int_xor, int_add, int_is_lt. One
 * Philox block per SBUF element: block b of the output sits at element
 * p*F + f of a [P, F] tile (b = b0 + p*F + f, a kernel per group of blocks).
 *
 * Representation: a u64 value is a (lo, hi) u32 word pair on the device
 * (nx_l_dev_shape), so the u64[2] state is four words: key lo, key hi,
 * counter lo, counter hi. Block b's counter is the 128-bit (counter + b,
 * 0) with both carries computed; the new state is (key, counter + blocks)
 * mod 2^64. A 64-bit result element 2b + w is word[2w] | word[2w+1] << 32,
 * so 64-bit results are the 32-bit word stream of twice the elements.
 * three_fry is not lowered yet. */
#include "backend/lower.h"
#include "backend/lower_ext.h"

#include <string.h>

#define RNG_FMAX 1024 /* blocks per partition per kernel */

static nx_shape *shp1(nx_lower *L, nx_type t, int64_t n)
{
	int64_t d[1] = {n};
	return nx_shape_array(&L->a, t, 1, d);
}

/* A [P, 1] u32 column holding the constant v: memset of the high half,
 * shifted, plus the low half (fp32 immediates are exact below 2^24). */
static void const_col(nx_lower *L, int64_t off, int P, uint32_t v)
{
	int32_t s1[1] = {1};
	uint32_t c1[1] = {1};
	nx_ap a = nx_ap_sbuf(NX_DT_U32, 0, P, off, 1, s1, c1);
	nx_insn *m = nx_l_emit(L, NX_ENG_DVE, NX_I_MEMSET);
	m->ap[0] = a;
	m->fimm[0] = (float)(v >> 16);
	nx_insn *h = nx_l_emit(L, NX_ENG_DVE, NX_I_TENSOR_SCALAR);
	h->func = NX_ALU_ISHL;
	h->ap[0] = a;
	h->ap[1] = a;
	h->fimm[0] = 16;
	nx_insn *l = nx_l_emit(L, NX_ENG_DVE, NX_I_TENSOR_SCALAR);
	l->func = NX_ALU_IADD;
	l->ap[0] = a;
	l->ap[1] = a;
	l->fimm[0] = (float)(v & 0xffff);
}

/* dst = a op col[p] */
static void ts(nx_lower *L, int alu, nx_ap dst, nx_ap a, nx_ap col)
{
	nx_insn *in = nx_l_emit(L, NX_ENG_DVE, NX_I_TENSOR_SCALAR);
	in->func = (uint8_t)alu;
	in->ap[0] = dst;
	in->ap[1] = a;
	in->ap[2] = col;
}

static void tt(nx_lower *L, int alu, nx_ap dst, nx_ap a, nx_ap b)
{
	nx_insn *in = nx_l_emit(L, NX_ENG_DVE, NX_I_TENSOR_TENSOR);
	in->func = (uint8_t)alu;
	in->ap[0] = dst;
	in->ap[1] = a;
	in->ap[2] = b;
}

/* Philox blocks [b0, b0 + P*F) into words [per*b0, ...) of res; group 0 also
 * writes the new state (key, counter + B) to st. */
static nx_status philox_group(nx_lower *L, nx_lval *state, nx_lval *res, nx_lval *st, int64_t b0, int P, int64_t F,
                              int per, int64_t B)
{
	int64_t tb = (F * 4 + 63) / 64 * 64;
	/* columns: key0 key1 ctr M0 M1 C0 C1 newctr ctrhi newctrhi (64 bytes each), tiles X0-3 Y0-3,
	 * output */
	int64_t ocol = 0, otile = 10 * 64, oout = otile + 8 * tb;
	int64_t bytes = oout + (per * F * 4 + 63) / 64 * 64;
	int64_t base;
	int h;
	nx_status rc = nx_l_sbuf_begin(L, bytes, &base, &h);
	if (rc)
		return rc;
	nx_l_plan_kernel(L, "rng-philox");
	int32_t s1[1] = {1};
	uint32_t c1[1] = {1}, cF[1] = {(uint32_t)F};
	nx_ap col[10];
	for (int k = 0; k < 10; k++)
		col[k] = nx_ap_sbuf(NX_DT_U32, 0, P, base + ocol + 64 * k, 1, s1, c1);
	nx_ap T[8];
	for (int k = 0; k < 8; k++)
		T[k] = nx_ap_sbuf(NX_DT_U32, 0, P, base + otile + tb * k, 1, s1, cF);
	/* loads: key and counter words broadcast over the partitions */
	nx_l_wait(L, NX_ENG_SP, &L->sbuf_free[h]);
	nx_l_wait(L, NX_ENG_SP, &state->buf->written);
	nx_lsync loads = nx_l_dma(L, NX_ENG_SP, col[0], nx_ap_hbm(NX_DT_U32, state->buf->off, P, 0, 1, s1, c1));
	static const int word_col[3] = {1, 2, 8}; /* key hi, counter lo, counter hi */
	for (int k = 0; k < 3; k++) {
		nx_lsync y = nx_l_dma(L, NX_ENG_SP, col[word_col[k]],
		                      nx_ap_hbm(NX_DT_U32, state->buf->off + 4 * (k + 1), P, 0, 1, s1, c1));
		nx_l_max(&loads, &y);
	}
	nx_l_max(&state->buf->war, &loads);

	nx_l_wait(L, NX_ENG_DVE, &loads);
	const_col(L, base + ocol + 64 * 3, P, 0xD2511F53u);
	const_col(L, base + ocol + 64 * 4, P, 0xCD9E8D57u);
	const_col(L, base + ocol + 64 * 5, P, 0x9E3779B9u);
	const_col(L, base + ocol + 64 * 6, P, 0xBB67AE85u);
	/* counter (lo + b, hi + carry, carry, 0) */
	nx_insn *io = nx_l_emit(L, NX_ENG_DVE, NX_I_IOTA);
	io->ap[0] = T[0];
	io->iarg[0] = (int32_t)b0;
	io->iarg[1] = (int32_t)F;
	io->iarg[2] = 1;
	ts(L, NX_ALU_IADD, T[0], T[0], col[2]);
	ts(L, NX_ALU_ILT, T[2], T[0], col[2]); /* carry into the high word */
	ts(L, NX_ALU_IADD, T[1], T[2], col[8]);
	tt(L, NX_ALU_ILT, T[2], T[1], T[2]); /* carry out of the high word */
	nx_insn *m3 = nx_l_emit(L, NX_ENG_DVE, NX_I_MEMSET);
	m3->ap[0] = T[3];
	nx_ap *x = T, *w = T + 4;
	for (int r = 0; r < 10; r++) {
		ts(L, NX_ALU_IMULHI, w[0], x[2], col[4]);
		tt(L, NX_ALU_IXOR, w[0], w[0], x[1]);
		ts(L, NX_ALU_IXOR, w[0], w[0], col[0]);
		ts(L, NX_ALU_IMUL, w[1], x[2], col[4]);
		ts(L, NX_ALU_IMULHI, w[2], x[0], col[3]);
		tt(L, NX_ALU_IXOR, w[2], w[2], x[3]);
		ts(L, NX_ALU_IXOR, w[2], w[2], col[1]);
		ts(L, NX_ALU_IMUL, w[3], x[0], col[3]);
		ts(L, NX_ALU_IADD, col[0], col[0], col[5]);
		ts(L, NX_ALU_IADD, col[1], col[1], col[6]);
		nx_ap *t = x;
		x = w;
		w = t;
	}
	/* interleave: word j of block f at f*per + j */
	for (int j = 0; j < per; j++) {
		int32_t sp[1] = {per};
		nx_ap o = nx_ap_sbuf(NX_DT_U32, 0, P, base + oout + 4 * j, 1, sp, cF);
		nx_insn *cp = nx_l_emit(L, NX_ENG_DVE, NX_I_TENSOR_COPY);
		cp->ap[0] = o;
		cp->ap[1] = x[j];
	}
	if (st) {
		/* new counter: (lo + B, hi + carry) (key unchanged; col[0] was
		 * advanced, the original key words are copied from HBM) */
		const_col(L, base + ocol + 64 * 7, P, (uint32_t)B);
		ts(L, NX_ALU_IADD, col[7], col[7], col[2]);
		ts(L, NX_ALU_ILT, col[9], col[7], col[2]);
		ts(L, NX_ALU_IADD, col[9], col[9], col[8]);
	}
	nx_lsync done = nx_l_signal(L, NX_ENG_DVE);
	nx_l_wait(L, NX_ENG_POOL, &done);
	nx_l_wait(L, NX_ENG_POOL, &res->buf->war);
	uint32_t cO[1] = {(uint32_t)(per * F)};
	nx_lsync s = nx_l_dma(L, NX_ENG_POOL,
	                      nx_ap_hbm(NX_DT_U32, res->buf->off + per * b0 * 4, P, per * F, 1, s1, cO),
	                      nx_ap_sbuf(NX_DT_U32, 0, P, base + oout, 1, s1, cO));
	nx_l_max(&res->buf->written, &s);
	nx_l_max(&res->buf->war, &s);
	nx_l_max(&done, &s);
	if (st) {
		nx_l_wait(L, NX_ENG_POOL, &st->buf->war);
		nx_l_wait(L, NX_ENG_POOL, &state->buf->written);
		uint32_t c2[1] = {2};
		nx_ap key = nx_ap_hbm(NX_DT_U32, st->buf->off, 1, 2, 1, s1, c2);
		nx_lsync a = nx_l_dma(L, NX_ENG_POOL, key, nx_ap_hbm(NX_DT_U32, state->buf->off, 1, 2, 1, s1, c2));
		for (int k = 0; k < 2; k++) {
			nx_ap one = nx_ap_hbm(NX_DT_U32, st->buf->off + 8 + 4 * k, 1, 1, 1, s1, c1);
			nx_ap nc = col[k ? 9 : 7];
			nc.part_count = 1;
			nx_lsync b = nx_l_dma(L, NX_ENG_POOL, one, nc);
			nx_l_max(&a, &b);
		}
		nx_l_max(&state->buf->war, &a);
		nx_l_max(&st->buf->written, &a);
		nx_l_max(&st->buf->war, &a);
		nx_l_max(&done, &a);
	}
	nx_l_max(&done, &loads);
	nx_l_sbuf_end(L, h, &done);
	return NX_OK;
}

nx_status nx_l_rng(nx_lower *L, const nx_inst *i, nx_lval *const *ops, nx_lval **out)
{
	const nx_shape *ss = i->operands[0]->shape;
	if (!nx_shape_is_tuple(i->shape) || i->shape->ntuple != 2 || ss->type != NX_U64 || ss->rank != 1 ||
	    ss->dims[0] != 2)
		return nx_l_err(L, "rng-bit-generator: only a u64[2] state is supported by the backend");
	nx_rng_algorithm alg = i->a.rng_algorithm == NX_RNG_DEFAULT ? NX_RNG_PHILOX : i->a.rng_algorithm;
	if (alg != NX_RNG_PHILOX)
		return nx_l_err(L, "rng-bit-generator: algorithm three_fry is not supported by the backend yet");
	const nx_shape *rs = i->shape->tuple[1];
	int bits = nx_type_bits(rs->type);
	nx_type_kind kk = nx_type_kind_of(rs->type);
	if (bits != 32 && bits != 64)
		return nx_l_err(L, "rng-bit-generator: %s results are not supported by the backend yet",
		                nx_type_name(rs->type));
	if (kk != NX_KIND_UINT && kk != NX_KIND_SINT)
		return nx_l_err(L, "rng-bit-generator: %s results are not supported by the backend yet",
		                nx_type_name(rs->type));
	nx_lval *t = nx_arena_alloc(&L->a, sizeof *t);
	memset(t, 0, sizeof *t);
	t->shape = i->shape;
	t->ntuple = 2;
	t->tuple = nx_arena_alloc(&L->a, 2 * sizeof *t->tuple);
	t->tuple[0] = nx_l_newval(L, i->shape->tuple[0]);
	t->tuple[1] = nx_l_newval(L, rs);
	*out = t;
	int64_t n = nx_shape_elems(rs) * (bits / 32); /* 32-bit words */
	int per = 4;
	int64_t B = (n + per - 1) / per;
	if (B > INT32_MAX / 2)
		return nx_l_err(L, "rng-bit-generator of %lld elements is too large", (long long)n);
	/* whole blocks: through a scratch buffer when the last one is partial */
	nx_lval *res = t->tuple[1];
	if (B * per != n)
		res = nx_l_newval(L, shp1(L, NX_U32, B * per));
	nx_status rc = NX_OK;
	for (int64_t b0 = 0; b0 < B && rc == NX_OK;) {
		int64_t left = B - b0, g;
		if (left >= 128)
			g = left / 128 * 128 < 128 * RNG_FMAX ? left / 128 * 128 : 128 * RNG_FMAX;
		else
			g = left;
		int P = (int)nx_l_div_le(g, 128);
		rc = philox_group(L, ops[0], res, b0 == 0 ? t->tuple[0] : NULL, b0, P, g / P, per, B);
		b0 += g;
	}
	if (rc == NX_OK && res != t->tuple[1]) {
		nx_lview v = nx_l_view_of(res);
		v.rank = 1;
		v.dims[0] = n;
		v.stride[0] = 1;
		rc = nx_l_copy_view(L, &v, t->tuple[1]);
		res->buf->refs = 1;
		nx_l_release_buf(L, res->buf);
	}
	return rc;
}
