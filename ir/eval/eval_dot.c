/* ir/eval/eval_dot.c — dot with any batch and contracting dimensions.
 *
 * Operands are permuted to [batch, M, K] and [batch, K, N] (M, N: the free
 * dimensions in order), multiplied, and the [batch, M, N] result is exactly
 * XLA's dot output order. f32 and narrower floats use a blocked f32 kernel
 * (packed panels, 4×16 register tile, AVX2 when the CPU has it); each output
 * element is still accumulated in f32 in order k = 0..K-1 without FMA, so
 * the result equals the naive loop bit for bit, and narrow results are
 * rounded once at the end (XLA's evaluator accumulates bf16 dots in f32).
 * f64, integers (wrapping) and complex use straightforward loops. */
#include "ir/eval/eval_impl.h"

#include <stdlib.h>
#include <string.h>

typedef float v8f __attribute__((vector_size(32)));

#define MR 4
#define NR 16
#define KC 256
#define MC 128

/* C[MR×NR] += Ap[k][MR] · Bp[k][NR] over kc; acc stays in registers. */
#define KERNEL_BODY                                                                  \
	v8f c00, c01, c10, c11, c20, c21, c30, c31;                                       \
	memcpy(&c00, c + 0 * ldc, 32); memcpy(&c01, c + 0 * ldc + 8, 32);                 \
	memcpy(&c10, c + 1 * ldc, 32); memcpy(&c11, c + 1 * ldc + 8, 32);                 \
	memcpy(&c20, c + 2 * ldc, 32); memcpy(&c21, c + 2 * ldc + 8, 32);                 \
	memcpy(&c30, c + 3 * ldc, 32); memcpy(&c31, c + 3 * ldc + 8, 32);                 \
	for (int64_t p = 0; p < kc; p++) {                                                \
		v8f b0, b1;                                                                   \
		memcpy(&b0, bp + p * NR, 32);                                                 \
		memcpy(&b1, bp + p * NR + 8, 32);                                             \
		const float *ap_ = ap + p * MR;                                               \
		v8f a0 = {ap_[0], ap_[0], ap_[0], ap_[0], ap_[0], ap_[0], ap_[0], ap_[0]};    \
		v8f a1 = {ap_[1], ap_[1], ap_[1], ap_[1], ap_[1], ap_[1], ap_[1], ap_[1]};    \
		v8f a2 = {ap_[2], ap_[2], ap_[2], ap_[2], ap_[2], ap_[2], ap_[2], ap_[2]};    \
		v8f a3 = {ap_[3], ap_[3], ap_[3], ap_[3], ap_[3], ap_[3], ap_[3], ap_[3]};    \
		v8f t;                                                                        \
		t = a0 * b0; c00 += t; t = a0 * b1; c01 += t;                                 \
		t = a1 * b0; c10 += t; t = a1 * b1; c11 += t;                                 \
		t = a2 * b0; c20 += t; t = a2 * b1; c21 += t;                                 \
		t = a3 * b0; c30 += t; t = a3 * b1; c31 += t;                                 \
	}                                                                                 \
	memcpy(c + 0 * ldc, &c00, 32); memcpy(c + 0 * ldc + 8, &c01, 32);                 \
	memcpy(c + 1 * ldc, &c10, 32); memcpy(c + 1 * ldc + 8, &c11, 32);                 \
	memcpy(c + 2 * ldc, &c20, 32); memcpy(c + 2 * ldc + 8, &c21, 32);                 \
	memcpy(c + 3 * ldc, &c30, 32); memcpy(c + 3 * ldc + 8, &c31, 32);

/* "t = a*b; c += t" keeps the product rounded before the add: GCC does not
 * contract it into an FMA under -std=c11 (-ffp-contract=off). */
static void kernel_generic(int64_t kc, const float *ap, const float *bp, float *c, int64_t ldc)
{
	KERNEL_BODY
}

#if defined(__x86_64__)
__attribute__((target("avx2"))) static void kernel_avx2(int64_t kc, const float *ap, const float *bp,
                                                        float *c, int64_t ldc)
{
	KERNEL_BODY
}
#endif

typedef void (*kernel_fn)(int64_t, const float *, const float *, float *, int64_t);

static kernel_fn pick_kernel(void)
{
#if defined(__x86_64__)
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx2"))
		return kernel_avx2;
#endif
	return kernel_generic;
}

void nx_sgemm(int64_t m, int64_t n, int64_t k, const float *a, const float *b, float *c)
{
	static kernel_fn kern;
	if (!kern)
		kern = pick_kernel();
	memset(c, 0, sizeof(float) * (size_t)(m * n));
	if (m == 0 || n == 0 || k == 0)
		return;
	int64_t np = (n + NR - 1) / NR;
	float *bp = malloc(sizeof(float) * (size_t)(np * NR * KC));
	float *apk = malloc(sizeof(float) * (size_t)(MC * KC));
	float ctile[MR * NR];
	NX_ASSERT(bp && apk);
	for (int64_t k0 = 0; k0 < k; k0 += KC) {
		int64_t kc = k - k0 < KC ? k - k0 : KC;
		/* pack B[k0:k0+kc, :] into NR-wide column panels, zero-padded */
		for (int64_t jp = 0; jp < np; jp++) {
			float *dst = bp + jp * NR * kc;
			int64_t j0 = jp * NR, w = n - j0 < NR ? n - j0 : NR;
			for (int64_t p = 0; p < kc; p++) {
				const float *src = b + (k0 + p) * n + j0;
				memcpy(dst + p * NR, src, sizeof(float) * (size_t)w);
				for (int64_t q = w; q < NR; q++)
					dst[p * NR + q] = 0;
			}
		}
		for (int64_t i0 = 0; i0 < m; i0 += MC) {
			int64_t mc = m - i0 < MC ? m - i0 : MC;
			/* pack A[i0:i0+mc, k0:k0+kc] into MR-tall row panels */
			for (int64_t ip = 0; ip < mc; ip += MR) {
				float *dst = apk + ip * kc;
				for (int64_t p = 0; p < kc; p++)
					for (int64_t r = 0; r < MR; r++)
						dst[p * MR + r] = ip + r < mc ? a[(i0 + ip + r) * k + k0 + p] : 0;
			}
			for (int64_t jp = 0; jp < np; jp++) {
				int64_t j0 = jp * NR, w = n - j0 < NR ? n - j0 : NR;
				for (int64_t ip = 0; ip < mc; ip += MR) {
					int64_t h = mc - ip < MR ? mc - ip : MR;
					float *cc = c + (i0 + ip) * n + j0;
					if (h == MR && w == NR) {
						kern(kc, apk + ip * kc, bp + jp * NR * kc, cc, n);
					} else { /* edge tile through a scratch tile */
						memset(ctile, 0, sizeof(ctile));
						for (int64_t r = 0; r < h; r++)
							memcpy(ctile + r * NR, cc + r * n, sizeof(float) * (size_t)w);
						kern(kc, apk + ip * kc, bp + jp * NR * kc, ctile, NR);
						for (int64_t r = 0; r < h; r++)
							memcpy(cc + r * n, ctile + r * NR, sizeof(float) * (size_t)w);
					}
				}
			}
		}
	}
	free(bp);
	free(apk);
}

/* Permutes x into [batch..., free..., contracting...] (lhs) or
 * [batch..., contracting..., free...] (rhs) order, as a new literal. */
static nx_literal *arrange(nx_eval *ev, const nx_literal *x, nx_ivec batch, nx_ivec contr,
                           bool contr_last, int64_t *nfree)
{
	int r = x->shape->rank, np = 0;
	int64_t perm[NX_MAX_RANK], dims[NX_MAX_RANK], st[NX_MAX_RANK], sst[NX_MAX_RANK], ost[NX_MAX_RANK];
	bool used[NX_MAX_RANK] = {0};
	for (int k = 0; k < batch.n; k++)
		perm[np++] = batch.v[k], used[batch.v[k]] = true;
	for (int k = 0; k < contr.n; k++)
		used[contr.v[k]] = true;
	int fstart = np;
	if (!contr_last)
		for (int k = 0; k < contr.n; k++)
			perm[np++] = contr.v[k];
	if (!contr_last)
		fstart = np;
	*nfree = 1;
	for (int d = 0; d < r; d++)
		if (!used[d])
			perm[np++] = d, *nfree *= x->shape->dims[d];
	if (contr_last)
		for (int k = 0; k < contr.n; k++)
			perm[np++] = contr.v[k];
	(void)fstart;
	nx_strides(x->shape, st);
	for (int k = 0; k < r; k++)
		dims[k] = x->shape->dims[perm[k]], sst[k] = st[perm[k]];
	nx_literal *o = nx_eval_alloc(ev, nx_shape_array(&ev->arena, x->shape->type, r, dims));
	if (!o)
		return NULL;
	nx_strides(o->shape, ost);
	if (nx_shape_elems(o->shape) > 0)
		nx_copy_nd(o->data, ost, x->data, sst, dims, r, nx_type_bytes(x->shape->type));
	return o;
}

static bool valid_dims(nx_ivec v, int rank)
{
	for (int k = 0; k < v.n; k++)
		if (v.v[k] < 0 || v.v[k] >= rank)
			return false;
	return true;
}

nx_status nx_eval_dot(nx_eval *ev, const nx_inst *i, nx_literal *const *ops, nx_literal **out)
{
	const nx_dot_dnums *dn = &i->a.dot;
	const nx_literal *l = ops[0], *r = ops[1];
	nx_type ot = i->shape->type;
	if (!valid_dims(dn->lhs_batch, l->shape->rank) || !valid_dims(dn->lhs_contracting, l->shape->rank) ||
	    !valid_dims(dn->rhs_batch, r->shape->rank) || !valid_dims(dn->rhs_contracting, r->shape->rank) ||
	    dn->lhs_batch.n != dn->rhs_batch.n || dn->lhs_contracting.n != dn->rhs_contracting.n)
		return nx_eval_error(ev, i, "bad dot dimension numbers");
	int64_t B = 1, K = 1, M, N;
	for (int k = 0; k < dn->lhs_batch.n; k++)
		B *= l->shape->dims[dn->lhs_batch.v[k]];
	for (int k = 0; k < dn->lhs_contracting.n; k++) {
		K *= l->shape->dims[dn->lhs_contracting.v[k]];
		if (l->shape->dims[dn->lhs_contracting.v[k]] != r->shape->dims[dn->rhs_contracting.v[k]])
			return nx_eval_error(ev, i, "contracting dimensions differ in size");
	}
	nx_dom dom = nx_dom_of(ot);
	/* operands are computed in the result's domain (XLA converts them) */
	nx_type ct = dom == NX_DOM_F32 ? NX_F32 : dom == NX_DOM_F64 ? NX_F64 : dom == NX_DOM_C ? NX_C128 : NX_S64;
	nx_literal *lc = l->shape->type == ct ? (nx_literal *)l : nx_eval_convert_lit(ev, l, ct);
	nx_literal *rc = r->shape->type == ct ? (nx_literal *)r : nx_eval_convert_lit(ev, r, ct);
	if (!lc || !rc)
		return NX_ERR_INPUT;
	nx_literal *la = arrange(ev, lc, dn->lhs_batch, dn->lhs_contracting, true, &M);
	nx_literal *ra = arrange(ev, rc, dn->rhs_batch, dn->rhs_contracting, false, &N);
	if (!la || !ra)
		return NX_ERR_INPUT;
	nx_literal *o = nx_eval_alloc(ev, i->shape);
	if (!o)
		return NX_ERR_INPUT;
	if (nx_shape_elems(i->shape) != B * M * N)
		return nx_eval_error(ev, i, "result shape does not match the dot");
	nx_literal *acc = ot == ct ? o : nx_eval_alloc(ev, nx_shape_with_type(&ev->arena, i->shape, ct));
	if (!acc)
		return NX_ERR_INPUT;
	for (int64_t b = 0; b < B; b++) {
		switch (dom) {
		case NX_DOM_F32:
			nx_sgemm(M, N, K, (const float *)la->data + b * M * K, (const float *)ra->data + b * K * N,
			         (float *)acc->data + b * M * N);
			break;
		case NX_DOM_F64: {
			const double *A = (const double *)la->data + b * M * K, *Bm = (const double *)ra->data + b * K * N;
			double *C = (double *)acc->data + b * M * N;
			for (int64_t x = 0; x < M; x++)
				for (int64_t p = 0; p < K; p++) {
					double av = A[x * K + p];
					for (int64_t y = 0; y < N; y++)
						C[x * N + y] += av * Bm[p * N + y];
				}
			break;
		}
		case NX_DOM_C: {
			const double complex *A = (const double complex *)la->data + b * M * K;
			const double complex *Bm = (const double complex *)ra->data + b * K * N;
			double complex *C = (double complex *)acc->data + b * M * N;
			for (int64_t x = 0; x < M; x++)
				for (int64_t p = 0; p < K; p++)
					for (int64_t y = 0; y < N; y++)
						C[x * N + y] += A[x * K + p] * Bm[p * N + y];
			break;
		}
		default: {
			const uint64_t *A = (const uint64_t *)la->data + b * M * K, *Bm = (const uint64_t *)ra->data + b * K * N;
			uint64_t *C = (uint64_t *)acc->data + b * M * N;
			for (int64_t x = 0; x < M; x++)
				for (int64_t p = 0; p < K; p++)
					for (int64_t y = 0; y < N; y++)
						C[x * N + y] += A[x * K + p] * Bm[p * N + y];
			break;
		}
		}
	}
	if (acc != o) {
		nx_literal *cv = nx_eval_convert_lit(ev, acc, ot);
		if (!cv)
			return NX_ERR_INPUT;
		if (o->nbytes)
			memcpy(o->data, cv->data, (size_t)o->nbytes);
	}
	*out = o;
	return NX_OK;
}
