/* runtime-stub/sim_engines.c — what each instruction does to HBM, SBUF and
 * PSUM. Operands are gathered into double arrays [partition][free element],
 * computed in fp32 like the engines, and scattered back with rounding to the
 * destination dtype. Every access is bounds-checked with the actual loop
 * indices, so a program that passed the loader still cannot escape memory.
 * Instructions that sim_fast.c can run at host speed (bit-identical) go
 * there after their operands are resolved; the rest, and every one under
 * NXCC_SIM_GENERIC=1, take the element path below. */
#include "runtime-stub/sim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static nx_status fail(nx_sim *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static nx_status fail(nx_sim *s, const char *fmt, ...)
{
	char m[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(m, sizeof m, fmt, ap);
	va_end(ap);
	return nx_diag_set(s->d, NX_ERR_INPUT, NULL, 0, 0, "%s: %s", nx_sim_where(s), m);
}

static double draw(nx_sim *s)
{
	if (!s->sr)
		return -1;
	/* xorshift64*: reproducible for a given NEURON_RT_STOCHASTIC_ROUNDING_SEED */
	s->rng ^= s->rng >> 12;
	s->rng ^= s->rng << 25;
	s->rng ^= s->rng >> 27;
	return (double)((s->rng * 2685821657736338717ULL) >> 11) / 9007199254740992.0;
}

typedef nx_sim_view view;

static nx_status resolve(nx_sim *s, const nx_ap *a, const int64_t *li, int depth, view *v)
{
	int64_t off = a->offset;
	for (int d = 0; d < depth && d < NX_LOOP_DEPTH; d++)
		off += li[d] * a->loop_stride[d];
	int esz = nx_dtype_bytes[a->dtype];
	int64_t lo = off, hi = off + esz;
	for (int d = 0; d < a->ndims; d++) {
		int64_t x = (int64_t)a->stride[d] * esz * ((int64_t)a->count[d] - 1);
		if (x < 0)
			lo += x;
		else
			hi += x;
	}
	v->a = a;
	v->esz = esz;
	v->np = a->part_count;
	v->nf = nx_ap_free_elems(a);
	if (a->space == NX_MEM_HBM) {
		int64_t x = a->part_stride * esz * ((int64_t)a->part_count - 1);
		if (x < 0)
			lo += x;
		else
			hi += x;
		if (lo < 0 || hi > s->n->hbm_size)
			return fail(s, "hbm access [%lld, %lld) outside %lld bytes", (long long)lo, (long long)hi,
			            (long long)s->n->hbm_size);
		v->base = s->hbm + off;
		v->pstep = a->part_stride * esz;
		return NX_OK;
	}
	int64_t pb = a->space == NX_MEM_SBUF ? s->t->sbuf_partition_bytes : s->t->psum_partition_bytes;
	if ((int)a->part_start + a->part_count > s->t->partitions || lo < 0 || hi > pb)
		return fail(s, "%s access [partition %u..%u) [byte %lld..%lld) out of bounds", nx_mem_names[a->space],
		            a->part_start, a->part_start + a->part_count, (long long)lo, (long long)hi);
	v->base = (a->space == NX_MEM_SBUF ? s->sbuf : s->psum) + a->part_start * pb + off;
	v->pstep = pb;
	return NX_OK;
}

/* Calls f on each element address in [p][free] order. */
#define FOR_EACH(v, body)                                                                      \
	do {                                                                                   \
		uint64_t k_ = 0;                                                               \
		uint32_t c_[NX_AP_DIMS] = {0};                                                 \
		int nd_ = (v)->a->ndims;                                                       \
		for (uint64_t p_ = 0; p_ < (v)->np; p_++) {                                    \
			for (uint64_t f_ = 0; f_ < (v)->nf; f_++, k_++) {                      \
				int64_t o_ = 0;                                                \
				for (int d_ = 0; d_ < nd_; d_++)                               \
					o_ += (int64_t)c_[d_] * (v)->a->stride[d_];            \
				uint8_t *ptr = (v)->base + (int64_t)p_ * (v)->pstep + o_ * (v)->esz; \
				body;                                                          \
				for (int d_ = nd_ - 1; d_ >= 0; d_--) {                        \
					if (++c_[d_] < (v)->a->count[d_])                      \
						break;                                         \
					c_[d_] = 0;                                            \
				}                                                              \
			}                                                                      \
		}                                                                              \
	} while (0)

/* Scratch slot i; reserve() made room for every operand before. */
static double *tmp(nx_sim *s, int i, size_t n)
{
	NX_ASSERT(s->tmpcap[i] >= n);
	return s->tmp[i];
}

/* Room in slot i for n elements, or a clear error (an access pattern too
 * large for the host, not a crash). */
static nx_status reserve(nx_sim *s, int i, uint64_t n)
{
	if (s->tmpcap[i] >= n)
		return NX_OK;
	double *p = n < (SIZE_MAX / sizeof(double)) ? malloc(sizeof(double) * n) : NULL;
	if (!p)
		return fail(s, "cannot allocate %llu elements of host memory for an operand",
		            (unsigned long long)n);
	free(s->tmp[i]);
	s->tmp[i] = p;
	s->tmpcap[i] = n;
	return NX_OK;
}

static double *gather(nx_sim *s, int slot, const view *v)
{
	double *o = tmp(s, slot, v->np * v->nf + 1);
	FOR_EACH(v, o[k_] = nx_rt_load_elem(ptr, (nx_dtype)v->a->dtype));
	return o;
}

static void scatter(nx_sim *s, const view *v, const double *x)
{
	FOR_EACH(v, nx_rt_store_elem(ptr, (nx_dtype)v->a->dtype, x[k_], draw(s)));
}

nx_status nx_sim_get(nx_sim *s, const nx_ap *a, const int64_t *li, int depth, double **out, uint64_t *n)
{
	view v;
	*out = NULL;
	*n = 0;
	if (resolve(s, a, li, depth, &v) != NX_OK)
		return s->d->status;
	double *o = malloc(sizeof(double) * (v.np * v.nf + 1));
	if (!o)
		return fail(s, "cannot allocate %llu elements of host memory for an operand",
		            (unsigned long long)(v.np * v.nf));
	FOR_EACH(&v, o[k_] = nx_rt_load_elem(ptr, (nx_dtype)v.a->dtype));
	*out = o;
	*n = v.np * v.nf;
	return NX_OK;
}

nx_status nx_sim_put(nx_sim *s, const nx_ap *a, const int64_t *li, int depth, const double *x, uint64_t n)
{
	view v;
	if (resolve(s, a, li, depth, &v) != NX_OK)
		return s->d->status;
	if (v.np * v.nf != n)
		return fail(s, "collective result of %llu elements for a destination of %llu", (unsigned long long)n,
		            (unsigned long long)(v.np * v.nf));
	FOR_EACH(&v, nx_rt_store_elem(ptr, (nx_dtype)v.a->dtype, x[k_], draw(s)));
	return NX_OK;
}

static double alu(int op, double a, double b)
{
	float x = (float)a, y = (float)b;
	int64_t i = (int64_t)a, j = (int64_t)b;
	switch (op) {
	case NX_ALU_BYPASS: return x;
	case NX_ALU_ADD: return x + y;
	case NX_ALU_SUB: return x - y;
	case NX_ALU_MUL: return x * y;
	case NX_ALU_DIV: return x / y;
	case NX_ALU_MAX: return x > y || isnan(x) ? x : y;
	case NX_ALU_MIN: return x < y || isnan(x) ? x : y;
	case NX_ALU_POW: return powf(x, y);
	case NX_ALU_MOD: return fmodf(x, y);
	case NX_ALU_ABS_MAX: return fabsf(x) > fabsf(y) ? fabsf(x) : fabsf(y);
	case NX_ALU_EQ: return x == y;
	case NX_ALU_NE: return x != y;
	case NX_ALU_LT: return x < y;
	case NX_ALU_LE: return x <= y;
	case NX_ALU_GT: return x > y;
	case NX_ALU_GE: return x >= y;
	case NX_ALU_LAND: return x != 0 && y != 0;
	case NX_ALU_LOR: return x != 0 || y != 0;
	case NX_ALU_AND: return (double)(int32_t)(i & j);
	case NX_ALU_OR: return (double)(int32_t)(i | j);
	case NX_ALU_XOR: return (double)(int32_t)(i ^ j);
	case NX_ALU_SHL: return (double)(int32_t)((uint32_t)i << (j & 31));
	case NX_ALU_SHR: return (double)(int32_t)((uint32_t)i >> (j & 31));
	}
	return 0;
}

/* kind 'i' operators: exact on the integer values, wrapped to dt's width. */
static double alu_int(int op, double a, double b, nx_dtype dt)
{
	int w = 32;
	bool sgn = dt != NX_DT_U32 && dt != NX_DT_U16 && dt != NX_DT_U8;
	if (dt == NX_DT_S16 || dt == NX_DT_U16)
		w = 16;
	else if (dt == NX_DT_S8 || dt == NX_DT_U8)
		w = 8;
	int64_t i = isfinite(a) && fabs(a) < 9.2e18 ? (int64_t)a : 0;
	int64_t j = isfinite(b) && fabs(b) < 9.2e18 ? (int64_t)b : 0;
	uint64_t mask = (w == 64 ? ~0ull : (1ull << w) - 1);
	uint64_t amt = (uint64_t)j & 0xffffffffull; /* the shift amount is unsigned */
	uint64_t r;
	switch (op) {
	case NX_ALU_IADD: r = (uint64_t)i + (uint64_t)j; break;
	case NX_ALU_ISUB: r = (uint64_t)i - (uint64_t)j; break;
	case NX_ALU_IMUL: r = (uint64_t)i * (uint64_t)j; break;
	case NX_ALU_IEQ: return i == j;
	case NX_ALU_INE: return i != j;
	case NX_ALU_ILT: return i < j;
	case NX_ALU_ILE: return i <= j;
	case NX_ALU_IGT: return i > j;
	case NX_ALU_IGE: return i >= j;
	case NX_ALU_IMAX: r = (uint64_t)(i > j ? i : j); break;
	case NX_ALU_IMIN: r = (uint64_t)(i < j ? i : j); break;
	case NX_ALU_IMULHI: r = (((uint64_t)i & 0xffffffffull) * ((uint64_t)j & 0xffffffffull)) >> 32; break;
	case NX_ALU_IXOR: r = (uint64_t)i ^ (uint64_t)j; break;
	case NX_ALU_IAND: r = (uint64_t)i & (uint64_t)j; break;
	case NX_ALU_IOR: r = (uint64_t)i | (uint64_t)j; break;
	case NX_ALU_IDIV:
	case NX_ALU_IREM: {
		/* the operands as values of the destination type */
		int64_t x = sgn ? (int64_t)((uint64_t)i << (64 - w)) >> (64 - w) : (int64_t)((uint64_t)i & mask);
		int64_t y = sgn ? (int64_t)((uint64_t)j << (64 - w)) >> (64 - w) : (int64_t)((uint64_t)j & mask);
		int64_t mn = sgn ? -((int64_t)1 << (w - 1)) : 0;
		if (y == 0)
			r = op == NX_ALU_IDIV ? ~0ull : (uint64_t)x;
		else if (sgn && x == mn && y == -1)
			r = op == NX_ALU_IDIV ? (uint64_t)x : 0;
		else
			r = (uint64_t)(op == NX_ALU_IDIV ? x / y : x % y);
		break;
	}
	case NX_ALU_IABS: {
		int64_t x = sgn ? (int64_t)((uint64_t)i << (64 - w)) >> (64 - w) : (int64_t)((uint64_t)i & mask);
		r = (uint64_t)(x < 0 ? -x : x);
		break;
	}
	case NX_ALU_ISHL: r = amt >= (uint64_t)w ? 0 : (uint64_t)i << amt; break;
	case NX_ALU_ILSHR: r = amt >= (uint64_t)w ? 0 : ((uint64_t)i & mask) >> amt; break;
	case NX_ALU_IASHR: {
		/* sign-extend from the width first */
		int64_t x = (int64_t)((uint64_t)i << (64 - w)) >> (64 - w);
		r = (uint64_t)(x >> (amt >= (uint64_t)w ? w - 1 : (int)amt));
		break;
	}
	default: return 0;
	}
	r &= mask;
	if (sgn && w < 64 && (r >> (w - 1)) & 1)
		return (double)(int64_t)(r | ~mask);
	return (double)r;
}

static double alu_dt(int op, double a, double b, nx_dtype dt)
{
	return nx_alu_kinds[op] == 'i' ? alu_int(op, a, b, dt) : alu(op, a, b);
}

double nx_sim_alu(int op, double a, double b)
{
	return alu(op, a, b);
}

static double act(int f, double v)
{
	float x = (float)v;
	switch (f) {
	case NX_ACT_IDENTITY: case NX_ACT_COPY: return x;
	case NX_ACT_EXP: return expf(x);
	case NX_ACT_LOG: return logf(x);
	case NX_ACT_TANH: return tanhf(x);
	case NX_ACT_LOGISTIC: return 1.0f / (1.0f + expf(-x));
	case NX_ACT_GELU_TANH: return 0.5f * x * (1.0f + tanhf(0.7978845608f * (x + 0.044715f * x * x * x)));
	case NX_ACT_GELU: return 0.5f * x * (1.0f + erff(x * 0.70710678f));
	case NX_ACT_RELU: return x > 0 ? x : 0.0f;
	case NX_ACT_SQRT: return sqrtf(x);
	case NX_ACT_RSQRT: return 1.0f / sqrtf(x);
	case NX_ACT_SQUARE: return x * x;
	case NX_ACT_RECIPROCAL: return 1.0f / x;
	case NX_ACT_SIN: return sinf(x);
	case NX_ACT_COS: return cosf(x);
	case NX_ACT_ABS: return fabsf(x);
	case NX_ACT_SIGN: return x > 0 ? 1.0f : x < 0 ? -1.0f : x;
	case NX_ACT_ERF: return erff(x);
	case NX_ACT_SOFTPLUS: return log1pf(expf(x));
	case NX_ACT_SILU: return x / (1.0f + expf(-x));
	case NX_ACT_ARCTAN: return atanf(x);
	case NX_ACT_NEG: return -x;
	case NX_ACT_LOG1P: return log1pf(x);
	case NX_ACT_EXPM1: return expm1f(x);
	}
	return x;
}

double nx_sim_act(int f, double v)
{
	return act(f, v);
}

static nx_status same(nx_sim *s, const view *a, const view *b, const char *what)
{
	if (a->np != b->np || a->nf != b->nf)
		return fail(s, "%s: operand shapes differ ([%llu,%llu] vs [%llu,%llu])", what,
		            (unsigned long long)a->np, (unsigned long long)a->nf, (unsigned long long)b->np,
		            (unsigned long long)b->nf);
	return NX_OK;
}

/* One value per partition (first element of each partition's pattern). */
static double *per_part(nx_sim *s, int slot, const view *v)
{
	double *x = gather(s, slot, v);
	for (uint64_t p = 0; p < v->np; p++)
		x[p] = x[p * v->nf];
	return x;
}

/* dma_gather / dma_scatter: the row of operand ap[a] that index j picks,
 * j clamped into [0, iarg2 - 1], rows iarg3 bytes apart; *row holds its
 * access pattern (the view points at it: it must outlive *w) */
static nx_status indexed_row(nx_sim *s, const nx_insn *in, int a, double j, const int64_t *li, int depth, nx_ap *row,
                             view *w)
{
	int64_t k = !(j > 0) ? 0 : j >= (double)in->iarg[2] ? in->iarg[2] - 1 : (int64_t)j;
	*row = in->ap[a];
	row->offset += k * (int64_t)in->iarg[3];
	return resolve(s, row, li, depth, w);
}

nx_status nx_sim_exec(nx_sim *s, const nx_insn *in, const int64_t *li, int depth)
{
	const nx_isa_info *info = &nx_isa_table[in->op];
	view v[4];
	memset(v, 0, sizeof v);
	for (int k = 0; k < info->nap; k++)
		if (in->ap[k].space != NX_MEM_NONE && resolve(s, &in->ap[k], li, depth, &v[k]) != NX_OK)
			return s->d->status;
	if (!s->generic_only && nx_sim_fast(s, in, v))
		return NX_OK;
	for (int k = 0; k < 4; k++)
		if (reserve(s, k, v[k].np * v[k].nf + 1) != NX_OK)
			return s->d->status;
	uint64_t P = v[0].np, F = v[0].nf, n = P * F;
	switch (in->op) {
	case NX_I_CALL: /* GpSimd kernel (sim_gpsimd.c); its time goes to s->gs_ns */
		return nx_sim_gpsimd(s, in, li, depth, &s->gs_ns);
	case NX_I_MATMUL: {
		uint64_t K = v[1].np, M = v[1].nf, N = v[2].nf;
		if (v[2].np != K || v[0].np != M || v[0].nf != N)
			return fail(s, "matmul shapes do not agree");
		double *st = gather(s, 1, &v[1]), *mv = gather(s, 2, &v[2]), *o = gather(s, 0, &v[0]);
		for (uint64_t m = 0; m < M; m++)
			for (uint64_t j = 0; j < N; j++) {
				float acc = 0;
				for (uint64_t k = 0; k < K; k++)
					acc += (float)st[k * M + m] * (float)mv[k * N + j];
				o[m * N + j] = (in->flags & NX_IF_START) ? acc : (float)o[m * N + j] + acc;
			}
		scatter(s, &v[0], o);
		return NX_OK;
	}
	case NX_I_TRANSPOSE: {
		if (v[1].np != F || v[1].nf != P)
			return fail(s, "transpose shapes do not agree");
		double *x = gather(s, 1, &v[1]), *o = tmp(s, 0, n + 1);
		for (uint64_t i = 0; i < F; i++)
			for (uint64_t j = 0; j < P; j++)
				o[j * F + i] = x[i * P + j];
		scatter(s, &v[0], o);
		return NX_OK;
	}
	case NX_I_ACTIVATE: {
		if (same(s, &v[0], &v[1], "activate"))
			return s->d->status;
		double *x = gather(s, 1, &v[1]), *o = tmp(s, 0, n + 1);
		double *bias = in->ap[2].space ? per_part(s, 2, &v[2]) : NULL;
		if (bias && v[2].np != P)
			return fail(s, "activate: bias must have one value per partition");
		for (uint64_t p = 0; p < P; p++)
			for (uint64_t f = 0; f < F; f++) {
				float t = (float)x[p * F + f] * in->fimm[0] + (bias ? (float)bias[p] : 0.0f);
				o[p * F + f] = act(in->func, t);
			}
		scatter(s, &v[0], o);
		if (in->ap[3].space) {
			if (v[3].np != P || v[3].nf != 1)
				return fail(s, "activate: accumulator must be [P,1]");
			/* sums the values as stored (after rounding) */
			double *r = gather(s, 0, &v[0]), *acc = gather(s, 3, &v[3]);
			for (uint64_t p = 0; p < P; p++) {
				float sum = (float)acc[p];
				for (uint64_t f = 0; f < F; f++)
					sum += (float)r[p * F + f];
				acc[p] = sum;
			}
			scatter(s, &v[3], acc);
		}
		return NX_OK;
	}
	case NX_I_TENSOR_TENSOR: {
		if (same(s, &v[0], &v[1], "tensor_tensor") || same(s, &v[0], &v[2], "tensor_tensor"))
			return s->d->status;
		double *a = gather(s, 1, &v[1]), *b = gather(s, 2, &v[2]), *o = tmp(s, 0, n + 1);
		for (uint64_t i = 0; i < n; i++)
			o[i] = alu_dt(in->func, a[i], b[i], (nx_dtype)v[0].a->dtype);
		scatter(s, &v[0], o);
		return NX_OK;
	}
	case NX_I_TENSOR_SCALAR: {
		if (same(s, &v[0], &v[1], "tensor_scalar"))
			return s->d->status;
		double *a = gather(s, 1, &v[1]), *o = tmp(s, 0, n + 1);
		double *sc = in->ap[2].space ? per_part(s, 2, &v[2]) : NULL;
		if (sc && v[2].np != P)
			return fail(s, "tensor_scalar: scalar must have one value per partition");
		for (uint64_t p = 0; p < P; p++)
			for (uint64_t f = 0; f < F; f++) {
				double c = sc ? sc[p] : in->fimm[0], x = a[p * F + f];
				o[p * F + f] = (in->flags & NX_IF_REVERSE) ? alu_dt(in->func, c, x, (nx_dtype)v[0].a->dtype)
				                                           : alu_dt(in->func, x, c, (nx_dtype)v[0].a->dtype);
			}
		scatter(s, &v[0], o);
		return NX_OK;
	}
	case NX_I_TENSOR_REDUCE: {
		int k = in->iarg[0];
		if (k < 1 || k > in->ap[1].ndims)
			return fail(s, "tensor_reduce over %d axes of a %d-axis operand", k, in->ap[1].ndims);
		uint64_t inner = 1;
		for (int d = in->ap[1].ndims - k; d < in->ap[1].ndims; d++)
			inner *= in->ap[1].count[d];
		if (v[1].np != P || v[1].nf != F * inner)
			return fail(s, "tensor_reduce: output must be [P, input/reduced]");
		double *x = gather(s, 1, &v[1]), *o = tmp(s, 0, n + 1);
		for (uint64_t i = 0; i < n; i++) {
			double acc = x[i * inner];
			for (uint64_t j = 1; j < inner; j++)
				acc = alu_dt(in->func, acc, x[i * inner + j], in->ap[0].dtype);
			o[i] = acc;
		}
		scatter(s, &v[0], o);
		return NX_OK;
	}
	case NX_I_TENSOR_COPY: {
		if (same(s, &v[0], &v[1], "tensor_copy"))
			return s->d->status;
		scatter(s, &v[0], gather(s, 1, &v[1]));
		return NX_OK;
	}
	case NX_I_SELECT: {
		for (int k = 1; k < 4; k++)
			if (same(s, &v[0], &v[k], "select"))
				return s->d->status;
		double *c = gather(s, 1, &v[1]), *a = gather(s, 2, &v[2]), *b = gather(s, 3, &v[3]);
		double *o = tmp(s, 0, n + 1);
		for (uint64_t i = 0; i < n; i++)
			o[i] = c[i] != 0 ? a[i] : b[i];
		scatter(s, &v[0], o);
		return NX_OK;
	}
	case NX_I_IOTA:
	case NX_I_MEMSET:
	case NX_I_AFFINE_SELECT: {
		double *o = tmp(s, 0, n + 1), *x = NULL;
		if (in->op == NX_I_AFFINE_SELECT) {
			if (same(s, &v[0], &v[1], "affine_select"))
				return s->d->status;
			x = gather(s, 1, &v[1]);
		}
		for (uint64_t p = 0; p < P; p++)
			for (uint64_t f = 0; f < F; f++) {
				double a = (double)in->iarg[0] + (double)p * in->iarg[1] + (double)f * in->iarg[2];
				double r = in->op == NX_I_MEMSET ? in->fimm[0]
				           : in->op == NX_I_IOTA ? a
				           : alu(in->func, a, 0) != 0 ? x[p * F + f] : in->fimm[0];
				o[p * F + f] = r;
			}
		scatter(s, &v[0], o);
		return NX_OK;
	}
	case NX_I_TRANSPOSE32: {
		if (same(s, &v[0], &v[1], "transpose32"))
			return s->d->status;
		if (P % 32 || F % 32)
			return fail(s, "transpose32 needs multiples of 32 partitions and elements");
		double *x = gather(s, 1, &v[1]), *o = tmp(s, 0, n + 1);
		for (uint64_t p = 0; p < P; p++)
			for (uint64_t f = 0; f < F; f++) {
				uint64_t g = p / 32 * 32, b = f / 32 * 32;
				o[(g + f % 32) * F + b + p % 32] = x[p * F + f];
			}
		scatter(s, &v[0], o);
		return NX_OK;
	}
	case NX_I_PARTITION_REDUCE:
	case NX_I_PARTITION_BCAST: {
		if (v[1].nf != F || (in->op == NX_I_PARTITION_BCAST && v[1].np != 1))
			return fail(s, "%s: operand shapes do not agree", info->name);
		double *x = gather(s, 1, &v[1]), *o = tmp(s, 0, n + 1);
		for (uint64_t f = 0; f < F; f++) {
			double acc = x[f];
			if (in->op == NX_I_PARTITION_REDUCE)
				for (uint64_t p = 1; p < v[1].np; p++)
					acc = alu_dt(in->func, acc, x[p * F + f], in->ap[0].dtype);
			for (uint64_t p = 0; p < P; p++)
				o[p * F + f] = acc;
		}
		scatter(s, &v[0], o);
		return NX_OK;
	}
	case NX_I_GATHER:
	case NX_I_SCATTER: {
		/* gather: dst[p,i] = src[p, idx[p,i]]; scatter: dst[p, idx[p,i]] = src[p,i] */
		const view *big = in->op == NX_I_GATHER ? &v[1] : &v[0];
		const view *small = in->op == NX_I_GATHER ? &v[0] : &v[1];
		if (big->np != small->np || v[2].np != small->np || v[2].nf != small->nf)
			return fail(s, "%s: operand shapes do not agree", info->name);
		double *x = gather(s, 1, &v[1]), *ix = gather(s, 2, &v[2]);
		double *o = in->op == NX_I_GATHER ? tmp(s, 0, n + 1) : gather(s, 0, &v[0]);
		for (uint64_t p = 0; p < small->np; p++)
			for (uint64_t i = 0; i < small->nf; i++) {
				double j = ix[p * small->nf + i];
				if (!(j >= 0 && j < (double)big->nf))
					return fail(s, "%s: index %g out of range [0, %llu)", info->name, j,
					            (unsigned long long)big->nf);
				if (in->op == NX_I_GATHER)
					o[p * small->nf + i] = x[p * big->nf + (uint64_t)j];
				else
					o[p * big->nf + (uint64_t)j] = x[p * small->nf + i];
			}
		scatter(s, &v[0], o);
		return NX_OK;
	}
	case NX_I_DMA_GATHER: {
		uint64_t R = v[2].np * v[2].nf, row = v[1].np * v[1].nf;
		if (v[0].np * v[0].nf != R * row)
			return fail(s, "%s: destination is not %llu rows of %llu", info->name, (unsigned long long)R,
			            (unsigned long long)row);
		double *ix = gather(s, 2, &v[2]), *o = tmp(s, 0, n + 1);
		for (uint64_t r = 0; r < R; r++) {
			nx_ap a;
			view w;
			if (indexed_row(s, in, 1, ix[r], li, depth, &a, &w) != NX_OK)
				return s->d->status;
			double *x = gather(s, 1, &w);
			memcpy(o + r * row, x, row * sizeof *o);
		}
		scatter(s, &v[0], o);
		return NX_OK;
	}
	case NX_I_DMA_SCATTER: {
		uint64_t R = v[2].np * v[2].nf, row = v[0].np * v[0].nf;
		if (v[1].np * v[1].nf != R * row)
			return fail(s, "%s: source is not %llu rows of %llu", info->name, (unsigned long long)R,
			            (unsigned long long)row);
		double *ix = gather(s, 2, &v[2]), *src = gather(s, 1, &v[1]);
		for (uint64_t r = 0; r < R; r++) {
			double j = ix[r];
			if ((in->flags & NX_IF_DROP) && (!(j >= 0) || j >= (double)in->iarg[2]))
				continue;
			nx_ap a;
			view w;
			if (indexed_row(s, in, 0, j, li, depth, &a, &w) != NX_OK)
				return s->d->status;
			scatter(s, &w, src + r * row);
		}
		return NX_OK;
	}
	case NX_I_DMA: {
		if (v[0].np * v[0].nf != v[1].np * v[1].nf)
			return fail(s, "%s: source and destination sizes differ", info->name);
		scatter(s, &v[0], gather(s, 1, &v[1]));
		return NX_OK;
	}
	default:
		return fail(s, "%s is not a data instruction", info->name);
	}
}
