/* runtime-stub/sim_fast.c — host-speed execution of the hot instructions.
 *
 * The generic path (sim_engines.c) moves every element through a double and
 * rounds it with a generic encoder; that is exact for every dtype and
 * stochastic rounding, and slow. Here the operands of matmul, transpose,
 * activate, tensor_tensor, tensor_scalar, tensor_reduce, tensor_copy and dma
 * are f32/bf16 (or, for copies, one integer dtype on both sides) and rounding
 * is to nearest even, so values travel as floats through whole tiles: a
 * tile is loaded into a float buffer, computed with blocked loops, stored
 * back. Each step does the same fp32 operations in the same order as the
 * generic path (matmul sums K in ascending order per output element), so the
 * results are bit-identical (NaNs included: every store writes the canonical
 * NaN); tests/unit/test_sim.c and tests/e2e/sim_fast.sh compare the paths. */
#include "runtime-stub/sim.h"

#include <math.h>
#include <stdlib.h>

static bool fdt(int dt)
{
	return dt == NX_DT_F32 || dt == NX_DT_BF16;
}

static bool idt(int dt)
{
	return dt == NX_DT_S32 || dt == NX_DT_U32 || dt == NX_DT_S16 || dt == NX_DT_U16 || dt == NX_DT_S8 ||
	       dt == NX_DT_U8;
}

/* ALU operators whose result is an fp32 value (kinds 'a' and 'c'). */
static bool falu_ok(int op)
{
	return op < NX_ALU_COUNT && (nx_alu_kinds[op] == 'a' || nx_alu_kinds[op] == 'c');
}

static inline float from_bits(uint32_t u)
{
	float f;
	memcpy(&f, &u, 4);
	return f;
}

static inline float ld_f32(const uint8_t *p)
{
	float f;
	memcpy(&f, p, 4);
	return f;
}

static inline float ld_bf16(const uint8_t *p)
{
	return from_bits((uint32_t)p[0] << 16 | (uint32_t)p[1] << 24);
}

/* Stores write the canonical quiet NaN for every NaN, like nx_rt_store_elem. */
static inline void st_f32(uint8_t *p, float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x7fffffu))
		u = 0x7fc00000u;
	memcpy(p, &u, 4);
}

static inline void st_bf16(uint8_t *p, float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	uint32_t r;
	if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x7fffffu))
		r = 0x7fc0u;
	else
		r = (u + 0x7fffu + (u >> 16 & 1u)) >> 16; /* nearest even; overflow gives inf */
	p[0] = (uint8_t)r;
	p[1] = (uint8_t)(r >> 8);
}

/* Walks a view in [partition][free] order as runs along its innermost axis:
 * body sees q (address of the run's first element), n (elements), st (stride
 * in bytes) and k (index of the run's first element). */
#define FOR_RUNS(v, body)                                                                            \
	do {                                                                                         \
		const nx_ap *a_ = (v)->a;                                                            \
		int nd_ = a_->ndims;                                                                 \
		uint64_t n = nd_ ? a_->count[nd_ - 1] : 1;                                           \
		int64_t st = nd_ ? (int64_t)a_->stride[nd_ - 1] * (v)->esz : 0;                      \
		uint64_t runs_ = (v)->nf / n, k = 0;                                                 \
		for (uint64_t p_ = 0; p_ < (v)->np; p_++) {                                          \
			uint32_t c_[NX_AP_DIMS] = {0};                                               \
			for (uint64_t r_ = 0; r_ < runs_; r_++, k += n) {                            \
				int64_t o_ = 0;                                                      \
				for (int d_ = 0; d_ < nd_ - 1; d_++)                                 \
					o_ += (int64_t)c_[d_] * a_->stride[d_];                      \
				uint8_t *q = (v)->base + (int64_t)p_ * (v)->pstep + o_ * (v)->esz;   \
				body;                                                                \
				for (int d_ = nd_ - 2; d_ >= 0; d_--) {                              \
					if (++c_[d_] < a_->count[d_])                                \
						break;                                               \
					c_[d_] = 0;                                                  \
				}                                                                    \
			}                                                                            \
		}                                                                                    \
	} while (0)

static void fload(const nx_sim_view *v, float *o)
{
	if (v->a->dtype == NX_DT_F32)
		FOR_RUNS(v, for (uint64_t i = 0; i < n; i++) o[k + i] = ld_f32(q + (int64_t)i * st));
	else
		FOR_RUNS(v, for (uint64_t i = 0; i < n; i++) o[k + i] = ld_bf16(q + (int64_t)i * st));
}

static void fstore(const nx_sim_view *v, const float *x)
{
	if (v->a->dtype == NX_DT_F32)
		FOR_RUNS(v, for (uint64_t i = 0; i < n; i++) st_f32(q + (int64_t)i * st, x[k + i]));
	else
		FOR_RUNS(v, for (uint64_t i = 0; i < n; i++) st_bf16(q + (int64_t)i * st, x[k + i]));
}

/* Raw elements of an integer dtype (copies: no value changes on the way). */
static void rload(const nx_sim_view *v, uint8_t *o)
{
	int e = v->esz;
	FOR_RUNS(v, for (uint64_t i = 0; i < n; i++) memcpy(o + (k + i) * (uint64_t)e, q + (int64_t)i * st, (size_t)e));
}

static void rstore(const nx_sim_view *v, const uint8_t *x)
{
	int e = v->esz;
	FOR_RUNS(v, for (uint64_t i = 0; i < n; i++) memcpy(q + (int64_t)i * st, x + (k + i) * (uint64_t)e, (size_t)e));
}

/* Scratch float buffer i (0..3) of n elements; NULL when the host has no room. */
static float *fbuf(nx_sim *s, int i, uint64_t n)
{
	if (s->ftmpcap[i] < n + 1) {
		float *p = malloc(sizeof(float) * (n + 1));
		if (!p)
			return NULL;
		free(s->ftmp[i]);
		s->ftmp[i] = p;
		s->ftmpcap[i] = n + 1;
	}
	return s->ftmp[i];
}

/* o += rows m0..m0+R-1 of st^T . mv over all K, in ascending k per element. */
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("O3")))
#endif
static void mm_rows(const float *restrict st, const float *restrict mv, float *restrict acc, uint64_t K,
                    uint64_t M, uint64_t N, uint64_t m0, int R)
{
	memset(acc, 0, sizeof *acc * N * (uint64_t)R);
	float *restrict a0 = acc, *restrict a1 = acc + N, *restrict a2 = acc + 2 * N, *restrict a3 = acc + 3 * N;
	for (uint64_t k = 0; k < K; k++) {
		const float *restrict row = mv + k * N;
		const float *w = st + k * M + m0;
		if (R == 4) {
			float w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3];
			for (uint64_t j = 0; j < N; j++) {
				float x = row[j];
				a0[j] += w0 * x;
				a1[j] += w1 * x;
				a2[j] += w2 * x;
				a3[j] += w3 * x;
			}
		} else {
			for (int r = 0; r < R; r++) {
				float wr = w[r];
				float *restrict ar = acc + (uint64_t)r * N;
				for (uint64_t j = 0; j < N; j++)
					ar[j] += wr * row[j];
			}
		}
	}
}

static bool matmul(nx_sim *s, const nx_insn *in, const nx_sim_view *v)
{
	uint64_t K = v[1].np, M = v[1].nf, N = v[2].nf;
	if (v[2].np != K || v[0].np != M || v[0].nf != N)
		return false;
	float *st = fbuf(s, 1, K * M), *mv = fbuf(s, 2, K * N), *o = fbuf(s, 0, M * N), *acc = fbuf(s, 3, 4 * N);
	if (!st || !mv || !o || !acc)
		return false;
	fload(&v[1], st);
	fload(&v[2], mv);
	bool start = in->flags & NX_IF_START;
	if (!start)
		fload(&v[0], o);
	for (uint64_t m = 0; m < M; m += 4) {
		int R = M - m >= 4 ? 4 : (int)(M - m);
		mm_rows(st, mv, acc, K, M, N, m, R);
		for (int r = 0; r < R; r++) {
			float *out = o + (m + (uint64_t)r) * N;
			const float *a = acc + (uint64_t)r * N;
			if (start)
				memcpy(out, a, sizeof *out * N);
			else
				for (uint64_t j = 0; j < N; j++)
					out[j] = out[j] + a[j];
		}
	}
	fstore(&v[0], o);
	return true;
}

static inline float falu(int op, float x, float y)
{
	return (float)nx_sim_alu(op, x, y);
}

/* o[i] = a[i] op b[i] with the loop specialized for the common operators. */
static void alu_vec(int op, const float *a, const float *b, float *o, uint64_t n)
{
	switch (op) {
	case NX_ALU_ADD: for (uint64_t i = 0; i < n; i++) o[i] = a[i] + b[i]; break;
	case NX_ALU_SUB: for (uint64_t i = 0; i < n; i++) o[i] = a[i] - b[i]; break;
	case NX_ALU_MUL: for (uint64_t i = 0; i < n; i++) o[i] = a[i] * b[i]; break;
	case NX_ALU_DIV: for (uint64_t i = 0; i < n; i++) o[i] = a[i] / b[i]; break;
	default: for (uint64_t i = 0; i < n; i++) o[i] = falu(op, a[i], b[i]); break;
	}
}

static bool same_shape(const nx_sim_view *a, const nx_sim_view *b)
{
	return a->np == b->np && a->nf == b->nf;
}

static bool elementwise(nx_sim *s, const nx_insn *in, const nx_sim_view *v)
{
	uint64_t P = v[0].np, F = v[0].nf, n = P * F;
	float *o = fbuf(s, 0, n), *x = fbuf(s, 1, v[1].np * v[1].nf);
	if (!o || !x)
		return false;
	switch (in->op) {
	case NX_I_TENSOR_TENSOR: {
		float *y = fbuf(s, 2, n);
		if (!y)
			return false;
		fload(&v[1], x);
		fload(&v[2], y);
		alu_vec(in->func, x, y, o, n);
		break;
	}
	case NX_I_TENSOR_SCALAR: {
		float *c = NULL;
		if (in->ap[2].space) {
			if (!(c = fbuf(s, 2, v[2].np * v[2].nf)))
				return false;
			fload(&v[2], c);
			for (uint64_t p = 0; p < P; p++) /* first element of each partition */
				c[p] = c[p * v[2].nf];
		}
		fload(&v[1], x);
		bool rev = in->flags & NX_IF_REVERSE;
		for (uint64_t p = 0; p < P; p++) {
			float k = c ? c[p] : in->fimm[0];
			const float *xp = x + p * F;
			float *op = o + p * F;
			if (!rev && in->func == NX_ALU_ADD)
				for (uint64_t f = 0; f < F; f++) op[f] = xp[f] + k;
			else if (!rev && in->func == NX_ALU_MUL)
				for (uint64_t f = 0; f < F; f++) op[f] = xp[f] * k;
			else if (rev)
				for (uint64_t f = 0; f < F; f++) op[f] = falu(in->func, k, xp[f]);
			else
				for (uint64_t f = 0; f < F; f++) op[f] = falu(in->func, xp[f], k);
		}
		break;
	}
	case NX_I_ACTIVATE: {
		float *b = NULL;
		if (in->ap[2].space) {
			if (!(b = fbuf(s, 2, v[2].np * v[2].nf)))
				return false;
			fload(&v[2], b);
			for (uint64_t p = 0; p < P; p++)
				b[p] = b[p * v[2].nf];
		}
		fload(&v[1], x);
		float scale = in->fimm[0];
		for (uint64_t p = 0; p < P; p++) {
			float bp = b ? b[p] : 0.0f;
			for (uint64_t f = 0; f < F; f++)
				o[p * F + f] = (float)nx_sim_act(in->func, x[p * F + f] * scale + bp);
		}
		fstore(&v[0], o);
		if (in->ap[3].space) { /* sums the values as stored (after rounding) */
			float *acc = fbuf(s, 3, v[3].np);
			if (!acc)
				return false;
			fload(&v[0], o);
			fload(&v[3], acc);
			for (uint64_t p = 0; p < P; p++) {
				float sum = acc[p];
				for (uint64_t f = 0; f < F; f++)
					sum += o[p * F + f];
				acc[p] = sum;
			}
			fstore(&v[3], acc);
		}
		return true;
	}
	case NX_I_TENSOR_REDUCE: {
		uint64_t inner = v[1].nf / F;
		fload(&v[1], x);
		for (uint64_t i = 0; i < n; i++) {
			const float *r = x + i * inner;
			float acc = r[0];
			if (in->func == NX_ALU_ADD)
				for (uint64_t j = 1; j < inner; j++) acc = acc + r[j];
			else
				for (uint64_t j = 1; j < inner; j++) acc = falu(in->func, acc, r[j]);
			o[i] = acc;
		}
		break;
	}
	case NX_I_TRANSPOSE:
		fload(&v[1], x);
		for (uint64_t i = 0; i < F; i++)
			for (uint64_t j = 0; j < P; j++)
				o[j * F + i] = x[i * P + j];
		break;
	default: /* tensor_copy, dma */
		fload(&v[1], o);
		break;
	}
	fstore(&v[0], o);
	return true;
}

bool nx_sim_fast(nx_sim *s, const nx_insn *in, const nx_sim_view *v)
{
	if (s->sr)
		return false;
	const nx_isa_info *info = &nx_isa_table[in->op];
	for (int k = 0; k < info->nap; k++)
		if (in->ap[k].space != NX_MEM_NONE && !fdt(in->ap[k].dtype) &&
		    !((in->op == NX_I_DMA || in->op == NX_I_TENSOR_COPY) && idt(in->ap[k].dtype)))
			return false;
	uint64_t P = v[0].np, F = v[0].nf;
	switch (in->op) {
	case NX_I_MATMUL:
		return matmul(s, in, v);
	case NX_I_TENSOR_COPY:
	case NX_I_DMA: {
		if (v[0].np * v[0].nf != v[1].np * v[1].nf || (in->op == NX_I_TENSOR_COPY && !same_shape(&v[0], &v[1])))
			return false;
		if (idt(in->ap[0].dtype) || idt(in->ap[1].dtype)) {
			if (in->ap[0].dtype != in->ap[1].dtype)
				return false;
			uint8_t *b = (uint8_t *)fbuf(s, 1, (v[1].np * v[1].nf * (uint64_t)v[1].esz + 3) / 4);
			if (!b)
				return false;
			rload(&v[1], b);
			rstore(&v[0], b);
			return true;
		}
		return elementwise(s, in, v);
	}
	case NX_I_TRANSPOSE:
		return v[1].np == F && v[1].nf == P && elementwise(s, in, v);
	case NX_I_ACTIVATE:
		if (!same_shape(&v[0], &v[1]) || (in->ap[2].space && v[2].np != P) ||
		    (in->ap[3].space && (v[3].np != P || v[3].nf != 1)))
			return false;
		return elementwise(s, in, v);
	case NX_I_TENSOR_TENSOR:
		return falu_ok(in->func) && same_shape(&v[0], &v[1]) && same_shape(&v[0], &v[2]) && elementwise(s, in, v);
	case NX_I_TENSOR_SCALAR:
		return falu_ok(in->func) && same_shape(&v[0], &v[1]) && (!in->ap[2].space || v[2].np == P) &&
		       elementwise(s, in, v);
	case NX_I_TENSOR_REDUCE: {
		int k = in->iarg[0];
		if (!falu_ok(in->func) || k < 1 || k > in->ap[1].ndims)
			return false;
		uint64_t inner = 1;
		for (int d = in->ap[1].ndims - k; d < in->ap[1].ndims; d++)
			inner *= in->ap[1].count[d];
		return v[1].np == P && v[1].nf == F * inner && elementwise(s, in, v);
	}
	default:
		return false;
	}
}
