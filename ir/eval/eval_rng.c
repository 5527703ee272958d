/* ir/eval/eval_rng.c — rng-bit-generator, rng and rng-get-and-update-state in
 * the reference evaluator.
 *
 * Reproduces the bit streams of XLA's RngBitGeneratorExpander (which lowers
 * the op with the generators of XLA's prng library); docs/numerics.md,
 * section "rng-bit-generator", states the algorithm in full. state[0] is the
 * key; three_fry uses state[1] as a 64-bit counter, philox (also
 * rng_default, as on XLA's CPU backend) state[1..2] as a 128-bit counter. */
#include "ir/eval/eval_impl.h"
#include "ir/eval/eval_ops.h"

#include <stdlib.h>

static uint32_t rotl32(uint32_t v, int r)
{
	return (v << r) | (v >> (32 - r));
}

/* Threefry-2x32 with 20 rounds. */
static void threefry2x32(uint32_t key0, uint32_t key1, uint32_t in0, uint32_t in1, uint32_t out[2])
{
	static const int rot[8] = {13, 15, 26, 6, 17, 29, 16, 24};
	uint32_t ks[3] = {key0, key1, 0x1BD11BDAu ^ key0 ^ key1};
	uint32_t x0 = in0 + ks[0], x1 = in1 + ks[1];
	for (int blk = 0; blk < 5; blk++) {
		for (int r = 0; r < 4; r++) {
			x0 += x1;
			x1 = rotl32(x1, rot[(blk % 2) * 4 + r]);
			x1 ^= x0;
		}
		x0 += ks[(blk + 1) % 3];
		x1 += ks[(blk + 2) % 3] + (uint32_t)(blk + 1);
	}
	out[0] = x0;
	out[1] = x1;
}

/* Philox-4x32 with 10 rounds. */
static void philox4x32(uint32_t k0, uint32_t k1, const uint32_t in[4], uint32_t out[4])
{
	uint32_t x[4] = {in[0], in[1], in[2], in[3]};
	for (int r = 0; r < 10; r++) {
		uint64_t p0 = (uint64_t)x[0] * 0xD2511F53u, p1 = (uint64_t)x[2] * 0xCD9E8D57u;
		uint32_t y[4] = {(uint32_t)(p1 >> 32) ^ x[1] ^ k0, (uint32_t)p1,
		                 (uint32_t)(p0 >> 32) ^ x[3] ^ k1, (uint32_t)p0};
		memcpy(x, y, sizeof x);
		k0 += 0x9E3779B9u;
		k1 += 0xBB67AE85u;
	}
	memcpy(out, x, sizeof x);
}

/* Stores raw bits into element k (the low storage bits of v). */
static void store_bits(nx_literal *l, int64_t k, uint64_t v)
{
	int nb = nx_type_bytes(l->shape->type);
	int bits = nx_type_bits(l->shape->type);
	if (bits < 8)
		v &= (1u << bits) - 1;
	uint8_t *p = (uint8_t *)l->data + k * nb;
	for (int b = 0; b < nb; b++)
		p[b] = (uint8_t)(v >> (8 * b));
}

/* XLA's 32-bit three_fry layout: the shape is split in halves along its
 * first even dim (else its largest); element j of that dim takes output
 * word j % 2 of the counter for half-index j / 2. */
static uint64_t threefry_fill32(nx_literal *r, uint64_t key, uint64_t ctr)
{
	const nx_shape *s = r->shape;
	uint32_t o[2];
	if (s->rank == 0) {
		threefry2x32((uint32_t)key, (uint32_t)(key >> 32), (uint32_t)ctr, (uint32_t)(ctr >> 32), o);
		store_bits(r, 0, o[0]);
		return 1;
	}
	int split = -1;
	for (int d = 0; d < s->rank && split < 0; d++)
		if (s->dims[d] % 2 == 0)
			split = d;
	if (split < 0)
		for (int d = 0; d < s->rank; d++)
			if (split < 0 || s->dims[d] > s->dims[split])
				split = d;
	int64_t hd[NX_MAX_RANK], idx[NX_MAX_RANK];
	int64_t half = 1;
	for (int d = 0; d < s->rank; d++) {
		hd[d] = d == split ? (s->dims[d] + 1) / 2 : s->dims[d];
		half *= hd[d];
	}
	int64_t n = nx_shape_elems(s);
	memset(idx, 0, sizeof idx);
	for (int64_t k = 0; k < n; k++, nx_evop_next(idx, s->dims, s->rank)) {
		int64_t lin = 0;
		for (int d = 0; d < s->rank; d++)
			lin = lin * hd[d] + (d == split ? idx[d] / 2 : idx[d]);
		uint64_t c = ctr + (uint64_t)lin;
		threefry2x32((uint32_t)key, (uint32_t)(key >> 32), (uint32_t)c, (uint32_t)(c >> 32), o);
		store_bits(r, k, o[idx[split] % 2]);
	}
	return (uint64_t)half;
}

nx_status nx_eval_rng_bit_generator(nx_eval *ev, const nx_inst *i, nx_literal *const *ops, nx_literal **out)
{
	const nx_literal *st = ops[0];
	if (!nx_shape_is_tuple(i->shape) || i->shape->ntuple != 2 || st->shape->type != NX_U64 ||
	    st->shape->rank != 1 || st->shape->dims[0] < 2)
		return nx_eval_error(ev, i, "rng-bit-generator needs a u64[>=2] state and a (state, bits) result");
	nx_rng_algorithm alg = i->a.rng_algorithm == NX_RNG_DEFAULT ? NX_RNG_PHILOX : i->a.rng_algorithm;
	nx_literal *t = nx_evop_alloc_tuple(ev, i->shape);
	if (!t)
		return ev->diag->status;
	nx_literal *ns = t->tuple[0], *r = t->tuple[1];
	int64_t ns_n = nx_shape_elems(st->shape);
	for (int64_t k = 0; k < ns_n; k++)
		nx_lit_copy_elem(ns, k, st, k);
	*out = t;
	const uint64_t *sv = st->data;
	uint64_t key = sv[0];
	int64_t n = nx_shape_elems(r->shape);
	int bits = nx_type_bits(r->shape->type);
	if (!nx_type_is_array(r->shape->type) || nx_type_kind_of(r->shape->type) == NX_KIND_COMPLEX ||
	    r->shape->type == NX_PRED)
		return nx_eval_error(ev, i, "rng-bit-generator cannot produce %s",
		                     nx_type_name(r->shape->type));
	uint64_t *nsv = ns->data;

	if (alg == NX_RNG_THREE_FRY) {
		uint64_t ctr = sv[1];
		uint64_t used;
		if (bits == 64) {
			uint32_t o[2];
			for (int64_t k = 0; k < n; k++) {
				uint64_t c = ctr + (uint64_t)k;
				threefry2x32((uint32_t)key, (uint32_t)(key >> 32), (uint32_t)c,
				             (uint32_t)(c >> 32), o);
				store_bits(r, k, (uint64_t)o[0] | ((uint64_t)o[1] << 32));
			}
			used = (uint64_t)n;
		} else {
			/* 8- and 16-bit types keep the low bits of the 32-bit stream. */
			used = threefry_fill32(r, key, ctr);
		}
		nsv[1] = ctr + used;
		return NX_OK;
	}

	/* Philox: counter words (lo64, hi64) -> four u32 lanes, one block per
	 * four 32-bit (two 64-bit) outputs, lanes interleaved round-robin. */
	uint64_t lo = sv[1], hi = ns_n > 2 ? sv[2] : 0;
	uint32_t k0 = (uint32_t)key, k1 = (uint32_t)(key >> 32);
	int64_t per = bits == 64 ? 2 : 4;
	int64_t blocks = (n + per - 1) / per;
	for (int64_t b = 0; b < blocks; b++) {
		uint64_t clo = lo + (uint64_t)b, chi = hi + (clo < lo);
		uint32_t in[4] = {(uint32_t)clo, (uint32_t)(clo >> 32), (uint32_t)chi, (uint32_t)(chi >> 32)};
		uint32_t o[4];
		philox4x32(k0, k1, in, o);
		for (int64_t w = 0; w < per && b * per + w < n; w++) {
			uint64_t v = bits == 64 ? ((uint64_t)o[2 * w] | ((uint64_t)o[2 * w + 1] << 32)) : o[w];
			store_bits(r, b * per + w, v);
		}
	}
	uint64_t nlo = lo + (uint64_t)blocks;
	nsv[1] = nlo;
	if (ns_n > 2)
		nsv[2] = hi + (nlo < lo);
	return NX_OK;
}

/* ------------------------------------------------ rng, rng-get-and-update-state
 *
 * XLA leaves the stream of these stateful ops to the backend; nxcc's is
 * stated in docs/numerics.md ("rng"): element e of the k-th element drawn
 * in the evaluation uses Philox-4x32 with key splitmix64(seed) and counter
 * (rng_counter + e, 0), giving four words w0..w3. */

static uint64_t mix64(uint64_t z)
{
	z += UINT64_C(0x9e3779b97f4a7c15);
	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

static double operand_at(const nx_literal *l, int64_t e, int64_t n)
{
	return nx_lit_get_f64(l, nx_shape_elems(l->shape) == n ? e : 0);
}

nx_status nx_eval_rng(nx_eval *ev, const nx_inst *i, nx_literal *const *ops, nx_literal **out)
{
	if (i->noperands != 2 || !nx_shape_is_array(i->shape))
		return nx_eval_error(ev, i, "rng needs two operands and an array result");
	nx_type t = i->shape->type;
	nx_type_kind kind = nx_type_kind_of(t);
	bool normal = i->a.rng_distribution == NX_RNG_DIST_NORMAL;
	if (i->a.rng_distribution == NX_RNG_DIST_NONE)
		return nx_eval_error(ev, i, "rng needs distribution=rng_uniform or rng_normal");
	if (kind == NX_KIND_COMPLEX || t == NX_PRED || (normal && kind != NX_KIND_FLOAT))
		return nx_eval_error(ev, i, "rng %s cannot produce %s", normal ? "rng_normal" : "rng_uniform",
		                     nx_type_name(t));
	nx_literal *r = nx_eval_alloc(ev, i->shape);
	if (!r)
		return NX_ERR_INPUT;
	int64_t n = nx_shape_elems(i->shape);
	uint64_t key = mix64(ev->rng_seed);
	uint32_t k0 = (uint32_t)key, k1 = (uint32_t)(key >> 32);
	for (int64_t e = 0; e < n; e++) {
		uint64_t c = ev->rng_counter + (uint64_t)e;
		uint32_t in[4] = {(uint32_t)c, (uint32_t)(c >> 32), 0, 0}, w[4];
		philox4x32(k0, k1, in, w);
		uint64_t a64 = (uint64_t)w[0] | (uint64_t)w[1] << 32, b64 = (uint64_t)w[2] | (uint64_t)w[3] << 32;
		double u1 = (double)(a64 >> 11) * 0x1p-53; /* [0, 1) */
		double u2 = (double)(b64 >> 11) * 0x1p-53;
		if (kind == NX_KIND_FLOAT) {
			double a = operand_at(ops[0], e, n), b = operand_at(ops[1], e, n), v;
			if (normal) {
				/* Box-Muller on (1 - u1) in (0, 1] */
				v = a + b * sqrt(-2.0 * log(1.0 - u1)) * cos(6.283185307179586 * u2);
			} else {
				v = a + (b - a) * u1;
				/* rounding to a narrow type may reach b: [a, b) holds */
				if (nx_round_to_type(t, v) >= b && b > a)
					v = a;
			}
			nx_lit_set_f64(r, e, v);
		} else if (kind == NX_KIND_UINT) {
			uint64_t a = nx_lit_get_u64(ops[0], nx_shape_elems(ops[0]->shape) == n ? e : 0);
			uint64_t b = nx_lit_get_u64(ops[1], nx_shape_elems(ops[1]->shape) == n ? e : 0);
			nx_lit_set_u64(r, e, b > a ? a + a64 % (b - a) : a);
		} else {
			int64_t a = nx_lit_get_i64(ops[0], nx_shape_elems(ops[0]->shape) == n ? e : 0);
			int64_t b = nx_lit_get_i64(ops[1], nx_shape_elems(ops[1]->shape) == n ? e : 0);
			uint64_t span = (uint64_t)b - (uint64_t)a;
			nx_lit_set_i64(r, e, b > a ? (int64_t)((uint64_t)a + a64 % span) : a);
		}
	}
	ev->rng_counter += (uint64_t)n;
	*out = r;
	return NX_OK;
}

nx_status nx_eval_rng_get_and_update_state(nx_eval *ev, const nx_inst *i, nx_literal *const *ops,
                                           nx_literal **out)
{
	(void)ops;
	if (!nx_shape_is_array(i->shape) || i->shape->type != NX_U64 || nx_shape_elems(i->shape) != 2)
		return nx_eval_error(ev, i, "rng-get-and-update-state produces u64[2]");
	int64_t delta = 0;
	for (int k = 0; k < i->a.nunknown; k++)
		if (!strcmp(i->a.unknown[k].key, "delta"))
			delta = strtoll(i->a.unknown[k].value, NULL, 10);
	nx_literal *r = nx_eval_alloc(ev, i->shape);
	if (!r)
		return NX_ERR_INPUT;
	nx_lit_set_u64(r, 0, ev->rng_state[0]);
	nx_lit_set_u64(r, 1, ev->rng_state[1]);
	uint64_t lo = ev->rng_state[0] + (uint64_t)delta;
	ev->rng_state[1] += (lo < ev->rng_state[0]) + (delta < 0 ? UINT64_MAX : 0);
	ev->rng_state[0] = lo;
	*out = r;
	return NX_OK;
}
