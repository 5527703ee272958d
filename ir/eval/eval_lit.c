/* ir/eval/eval_lit.c — literal element access and the narrow float formats.
 *
 * Every narrow float (f16, bf16, the f8 family, f4e2m1fn) is encoded from a
 * double by one routine driven by a small format table, so conversions from
 * f32 and from f64 both round exactly once (round-to-nearest-even). Overflow
 * follows ml_dtypes (what XLA uses): IEEE-like formats go to inf, formats
 * without inf ("fn"/"fnuz") go to NaN, f4e2m1fn (no NaN either) saturates. */
#include "ir/eval/eval_impl.h"

#include <math.h>
#include <string.h>

enum { FMT_IEEE, FMT_FN, FMT_FNUZ, FMT_E8M0, FMT_F4 };

typedef struct fmt {
	int ebits, mbits, bias, kind;
} fmt;

static bool fmt_of(nx_type t, fmt *f)
{
	switch (t) {
	case NX_F16: *f = (fmt){5, 10, 15, FMT_IEEE}; return true;
	case NX_BF16: *f = (fmt){8, 7, 127, FMT_IEEE}; return true;
	case NX_F8E5M2: *f = (fmt){5, 2, 15, FMT_IEEE}; return true;
	case NX_F8E4M3: *f = (fmt){4, 3, 7, FMT_IEEE}; return true;
	case NX_F8E3M4: *f = (fmt){3, 4, 3, FMT_IEEE}; return true;
	case NX_F8E4M3FN: *f = (fmt){4, 3, 7, FMT_FN}; return true;
	case NX_F8E4M3FNUZ: *f = (fmt){4, 3, 8, FMT_FNUZ}; return true;
	case NX_F8E5M2FNUZ: *f = (fmt){5, 2, 16, FMT_FNUZ}; return true;
	case NX_F8E4M3B11FNUZ: *f = (fmt){4, 3, 11, FMT_FNUZ}; return true;
	case NX_F8E8M0FNU: *f = (fmt){8, 0, 127, FMT_E8M0}; return true;
	case NX_F4E2M1FN: *f = (fmt){2, 1, 1, FMT_F4}; return true;
	default: return false;
	}
}

static double fmt_decode(const fmt *f, uint32_t bits)
{
	int nb = 1 + f->ebits + f->mbits;
	if (f->kind == FMT_E8M0)
		return bits == 0xff ? NAN : ldexp(1.0, (int)bits - 127);
	uint32_t sign = (bits >> (nb - 1)) & 1;
	uint32_t e = (bits >> f->mbits) & ((1u << f->ebits) - 1);
	uint32_t m = bits & ((1u << f->mbits) - 1);
	uint32_t emax_field = (1u << f->ebits) - 1;
	if (f->kind == FMT_FNUZ && sign && e == 0 && m == 0)
		return NAN;
	if (f->kind == FMT_IEEE && e == emax_field)
		return m ? NAN : (sign ? -INFINITY : INFINITY);
	if (f->kind == FMT_FN && e == emax_field && m == (1u << f->mbits) - 1)
		return NAN;
	double v;
	if (e == 0)
		v = ldexp((double)m, 1 - f->bias - f->mbits);
	else
		v = ldexp((double)(m | (1u << f->mbits)), (int)e - f->bias - f->mbits);
	return sign ? -v : v;
}

static uint32_t fmt_nan(const fmt *f)
{
	int nb = 1 + f->ebits + f->mbits;
	switch (f->kind) {
	case FMT_IEEE: return ((1u << (nb - 1)) - 1); /* exp all ones, mantissa all ones */
	case FMT_FN: return ((1u << (nb - 1)) - 1);
	case FMT_FNUZ: return 1u << (nb - 1);
	case FMT_E8M0: return 0xff;
	default: return (1u << (nb - 1)) - 1; /* f4: no NaN; max magnitude */
	}
}

static double fmt_max(const fmt *f)
{
	int emax_field = (1 << f->ebits) - 1;
	double mfull = 2.0 - ldexp(1.0, -f->mbits);
	switch (f->kind) {
	case FMT_IEEE: return ldexp(mfull, emax_field - 1 - f->bias);
	case FMT_FN: return ldexp(2.0 - ldexp(1.0, 1 - f->mbits), emax_field - f->bias);
	case FMT_FNUZ:
	case FMT_F4: return ldexp(mfull, emax_field - f->bias);
	default: return ldexp(1.0, 127);
	}
}

static uint32_t fmt_encode(const fmt *f, double v)
{
	int nb = 1 + f->ebits + f->mbits;
	uint32_t signbit = 1u << (nb - 1);
	if (isnan(v))
		return f->kind == FMT_F4 ? 0 : fmt_nan(f);
	if (f->kind == FMT_E8M0) {
		if (v <= 0 || isinf(v))
			return 0xff;
		int e;
		double fr = frexp(v, &e); /* v = fr * 2^e, fr in [0.5, 1) */
		/* nearest power of two in log space rounds at sqrt(2); ml_dtypes rounds
		 * the (empty) mantissa RNE, i.e. at 1.5 * 2^k. */
		int k = e - 1;
		if (fr * 2 >= 1.5)
			k++;
		if (k < -127)
			k = -127;
		if (k > 127)
			return 0xff;
		return (uint32_t)(k + 127);
	}
	uint32_t sign = signbit(v) ? signbit : 0;
	double a = fabs(v);
	if (f->kind == FMT_FNUZ && a == 0)
		return 0;
	if (isinf(a)) {
		if (f->kind == FMT_IEEE)
			return sign | (((1u << f->ebits) - 1) << f->mbits);
		if (f->kind == FMT_F4)
			return sign | (signbit - 1);
		return fmt_nan(f);
	}
	if (a == 0)
		return sign;
	int emin = 1 - f->bias;
	int e;
	frexp(a, &e);
	int ue = e - 1; /* a = 1.x * 2^ue */
	if (ue < emin)
		ue = emin;
	double q = ldexp(a, f->mbits - ue);
	double r = nearbyint(q); /* default rounding mode: ties to even */
	double rv = ldexp(r, ue - f->mbits);
	if (rv > fmt_max(f)) {
		if (f->kind == FMT_IEEE)
			return sign | (((1u << f->ebits) - 1) << f->mbits);
		if (f->kind == FMT_F4)
			return sign | (signbit - 1);
		return fmt_nan(f);
	}
	if (rv == 0)
		return f->kind == FMT_FNUZ ? 0 : sign;
	frexp(rv, &e);
	ue = e - 1;
	if (ue < emin) /* subnormal */
		return sign | (uint32_t)ldexp(rv, f->mbits - emin);
	uint32_t m = (uint32_t)(ldexp(rv, f->mbits - ue) - ldexp(1.0, f->mbits));
	return sign | ((uint32_t)(ue + f->bias) << f->mbits) | m;
}

float nx_bf16_to_f32(uint16_t b)
{
	uint32_t u = (uint32_t)b << 16;
	float f;
	memcpy(&f, &u, 4);
	return f;
}

uint16_t nx_f32_to_bf16(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	if (isnan(f))
		return (uint16_t)((u >> 16) | 0x40); /* keep sign and payload, force quiet */
	u += 0x7fff + ((u >> 16) & 1);
	return (uint16_t)(u >> 16);
}

float nx_f16_to_f32(uint16_t h)
{
	static const fmt f16 = {5, 10, 15, FMT_IEEE};
	return (float)fmt_decode(&f16, h);
}

uint16_t nx_f32_to_f16(float f)
{
	static const fmt f16 = {5, 10, 15, FMT_IEEE};
	uint32_t u = fmt_encode(&f16, f);
	if (isnan(f) && signbit(f))
		u |= 0x8000;
	return (uint16_t)u;
}

double nx_f8_to_f64(nx_type t, uint8_t v)
{
	fmt f;
	NX_ASSERT(fmt_of(t, &f));
	return fmt_decode(&f, v);
}

uint8_t nx_f64_to_f8(nx_type t, double v)
{
	fmt f;
	NX_ASSERT(fmt_of(t, &f));
	return (uint8_t)fmt_encode(&f, v);
}

double nx_round_to_type(nx_type t, double v)
{
	fmt f;
	if (t == NX_F32 || t == NX_C64)
		return (double)(float)v;
	if (t == NX_F64 || t == NX_C128 || !fmt_of(t, &f))
		return v;
	return fmt_decode(&f, fmt_encode(&f, v));
}

int64_t nx_int_wrap(nx_type t, int64_t v)
{
	int bits = nx_type_bits(t);
	if (bits >= 64)
		return v;
	uint64_t mask = (UINT64_C(1) << bits) - 1;
	uint64_t u = (uint64_t)v & mask;
	if (nx_type_kind_of(t) == NX_KIND_SINT && (u >> (bits - 1)) & 1)
		u |= ~mask;
	return (int64_t)u;
}

nx_dom nx_dom_of(nx_type t)
{
	switch (nx_type_kind_of(t)) {
	case NX_KIND_PRED:
	case NX_KIND_SINT:
	case NX_KIND_UINT: return NX_DOM_INT;
	case NX_KIND_FLOAT: return t == NX_F64 ? NX_DOM_F64 : NX_DOM_F32;
	case NX_KIND_COMPLEX: return NX_DOM_C;
	default: return NX_DOM_NONE;
	}
}

/* ------------------------------------------------------- scalar access */

static double get_narrow(nx_type t, const uint8_t *p)
{
	fmt f;
	if (t == NX_BF16) {
		uint16_t b;
		memcpy(&b, p, 2);
		return nx_bf16_to_f32(b);
	}
	NX_ASSERT(fmt_of(t, &f));
	uint32_t bits = 0;
	memcpy(&bits, p, (size_t)nx_type_bytes(t));
	return fmt_decode(&f, bits);
}

/* double -> bf16 bits, rounded to nearest even directly on the double's
 * bits, when v and its rounding are bf16 normals (2^-126 <= |v| and no
 * overflow); false otherwise (zeros, subnormals, overflow, inf and NaN go
 * to fmt_encode). The same bits as fmt_encode, several times faster:
 * bf16 stores dominate the evaluator's bf16 graphs and random inputs. */
static bool bf16_fast(double v, uint16_t *out)
{
	uint64_t u;
	memcpy(&u, &v, 8);
	int e = (int)((u >> 52) & 0x7ff);
	if (e < 1023 - 126 || e > 1023 + 127)
		return false;
	uint64_t r = u + ((UINT64_C(1) << 44) - 1) + ((u >> 45) & 1); /* RNE at bit 45 */
	int er = (int)((r >> 52) & 0x7ff);
	if (er > 1023 + 127)
		return false; /* rounds past bf16's largest finite value */
	*out = (uint16_t)(((r >> 63) << 15) | ((uint64_t)(er - 1023 + 127) << 7) | ((r >> 45) & 0x7f));
	return true;
}

static void set_narrow(nx_type t, uint8_t *p, double v)
{
	uint16_t fb;
	if (t == NX_BF16 && bf16_fast(v, &fb)) {
		memcpy(p, &fb, 2);
		return;
	}
	fmt f;
	NX_ASSERT(fmt_of(t, &f));
	uint32_t bits = fmt_encode(&f, v);
	if (t == NX_BF16 || t == NX_F16) {
		if (isnan(v) && signbit(v))
			bits |= 0x8000;
		uint16_t b = (uint16_t)bits;
		memcpy(p, &b, 2);
	} else {
		*p = (uint8_t)bits;
	}
}

static int64_t get_int_raw(nx_type t, const uint8_t *p)
{
	switch (t) {
	case NX_PRED: return *p != 0;
	case NX_S8: return (int8_t)*p;
	case NX_U8: return *p;
	case NX_S16: { int16_t v; memcpy(&v, p, 2); return v; }
	case NX_U16: { uint16_t v; memcpy(&v, p, 2); return v; }
	case NX_S32: { int32_t v; memcpy(&v, p, 4); return v; }
	case NX_U32: { uint32_t v; memcpy(&v, p, 4); return v; }
	case NX_S64:
	case NX_U64: { int64_t v; memcpy(&v, p, 8); return v; }
	default: /* sub-byte: stored one per byte, extended */
		return nx_int_wrap(t, nx_type_kind_of(t) == NX_KIND_SINT ? (int8_t)*p : *p);
	}
}

static void set_int_raw(nx_type t, uint8_t *p, int64_t v)
{
	switch (nx_type_bytes(t)) {
	case 1: *p = (uint8_t)(t == NX_PRED ? v != 0 : nx_int_wrap(t, v)); break;
	case 2: { uint16_t x = (uint16_t)v; memcpy(p, &x, 2); break; }
	case 4: { uint32_t x = (uint32_t)v; memcpy(p, &x, 4); break; }
	default: memcpy(p, &v, 8); break;
	}
}

static const uint8_t *at(const nx_literal *l, int64_t idx)
{
	return (const uint8_t *)l->data + idx * nx_type_bytes(l->shape->type);
}

double nx_lit_get_f64(const nx_literal *l, int64_t idx)
{
	nx_type t = l->shape->type;
	const uint8_t *p = at(l, idx);
	switch (nx_type_kind_of(t)) {
	case NX_KIND_FLOAT:
		if (t == NX_F32) { float f; memcpy(&f, p, 4); return f; }
		if (t == NX_F64) { double d; memcpy(&d, p, 8); return d; }
		return get_narrow(t, p);
	case NX_KIND_COMPLEX: {
		double re, im;
		nx_lit_get_c128(l, idx, &re, &im);
		return re;
	}
	case NX_KIND_UINT: return t == NX_U64 ? (double)(uint64_t)get_int_raw(t, p) : (double)get_int_raw(t, p);
	default: return (double)get_int_raw(t, p);
	}
}

int64_t nx_lit_get_i64(const nx_literal *l, int64_t idx)
{
	nx_type t = l->shape->type;
	switch (nx_type_kind_of(t)) {
	case NX_KIND_FLOAT:
	case NX_KIND_COMPLEX: {
		double d = nx_lit_get_f64(l, idx);
		if (isnan(d))
			return 0;
		if (d >= 9.2233720368547758e18)
			return INT64_MAX;
		if (d <= -9.2233720368547758e18)
			return INT64_MIN;
		return (int64_t)d;
	}
	default: return get_int_raw(t, at(l, idx));
	}
}

uint64_t nx_lit_get_u64(const nx_literal *l, int64_t idx)
{
	nx_type t = l->shape->type;
	if (nx_type_kind_of(t) == NX_KIND_FLOAT || nx_type_kind_of(t) == NX_KIND_COMPLEX) {
		double d = nx_lit_get_f64(l, idx);
		if (isnan(d) || d <= 0)
			return 0;
		if (d >= 1.8446744073709552e19)
			return UINT64_MAX;
		return (uint64_t)d;
	}
	return (uint64_t)get_int_raw(t, at(l, idx));
}

void nx_lit_get_c128(const nx_literal *l, int64_t idx, double *re, double *im)
{
	nx_type t = l->shape->type;
	const uint8_t *p = at(l, idx);
	if (t == NX_C64) {
		float f[2];
		memcpy(f, p, 8);
		*re = f[0], *im = f[1];
	} else if (t == NX_C128) {
		double d[2];
		memcpy(d, p, 16);
		*re = d[0], *im = d[1];
	} else {
		*re = nx_lit_get_f64(l, idx);
		*im = 0;
	}
}

void nx_lit_set_f64(nx_literal *l, int64_t idx, double v)
{
	nx_type t = l->shape->type;
	uint8_t *p = (uint8_t *)at(l, idx);
	switch (nx_type_kind_of(t)) {
	case NX_KIND_FLOAT:
		if (t == NX_F32) { float f = (float)v; memcpy(p, &f, 4); }
		else if (t == NX_F64) memcpy(p, &v, 8);
		else set_narrow(t, p, v);
		return;
	case NX_KIND_COMPLEX: nx_lit_set_c128(l, idx, v, 0); return;
	case NX_KIND_PRED: *p = v != 0; return;
	case NX_KIND_SINT: {
		int64_t x = isnan(v) ? 0 : v >= 9.2233720368547758e18 ? INT64_MAX
		          : v <= -9.2233720368547758e18 ? INT64_MIN : (int64_t)v;
		set_int_raw(t, p, x);
		return;
	}
	default: {
		uint64_t x = isnan(v) || v <= 0 ? 0 : v >= 1.8446744073709552e19 ? UINT64_MAX : (uint64_t)v;
		set_int_raw(t, p, (int64_t)x);
		return;
	}
	}
}

void nx_lit_set_i64(nx_literal *l, int64_t idx, int64_t v)
{
	nx_type t = l->shape->type;
	nx_type_kind k = nx_type_kind_of(t);
	if (k == NX_KIND_FLOAT || k == NX_KIND_COMPLEX)
		nx_lit_set_f64(l, idx, (double)v);
	else
		set_int_raw(t, (uint8_t *)at(l, idx), v);
}

void nx_lit_set_u64(nx_literal *l, int64_t idx, uint64_t v)
{
	nx_type t = l->shape->type;
	nx_type_kind k = nx_type_kind_of(t);
	if (k == NX_KIND_FLOAT || k == NX_KIND_COMPLEX)
		nx_lit_set_f64(l, idx, (double)v);
	else
		set_int_raw(t, (uint8_t *)at(l, idx), (int64_t)v);
}

void nx_lit_set_c128(nx_literal *l, int64_t idx, double re, double im)
{
	nx_type t = l->shape->type;
	uint8_t *p = (uint8_t *)at(l, idx);
	if (t == NX_C64) {
		float f[2] = {(float)re, (float)im};
		memcpy(p, f, 8);
	} else if (t == NX_C128) {
		double d[2] = {re, im};
		memcpy(p, d, 16);
	} else {
		nx_lit_set_f64(l, idx, re);
	}
}

void nx_lit_copy_elem(nx_literal *dst, int64_t di, const nx_literal *src, int64_t si)
{
	int b = nx_type_bytes(dst->shape->type);
	NX_ASSERT(dst->shape->type == src->shape->type);
	memcpy((uint8_t *)dst->data + di * b, (const uint8_t *)src->data + si * b, (size_t)b);
}

/* ------------------------------------------------------ chunk transfers */

void nx_load_f32(const nx_literal *l, int64_t s, int64_t n, float *d)
{
	nx_type t = l->shape->type;
	if (t == NX_F32) {
		memcpy(d, (const float *)l->data + s, (size_t)n * 4);
	} else if (t == NX_BF16) {
		const uint16_t *p = (const uint16_t *)l->data + s;
		for (int64_t k = 0; k < n; k++) {
			uint32_t u = (uint32_t)p[k] << 16;
			memcpy(&d[k], &u, 4);
		}
	} else if (t == NX_F64) {
		const double *p = (const double *)l->data + s;
		for (int64_t k = 0; k < n; k++)
			d[k] = (float)p[k];
	} else {
		for (int64_t k = 0; k < n; k++)
			d[k] = (float)nx_lit_get_f64(l, s + k);
	}
}

void nx_load_f64(const nx_literal *l, int64_t s, int64_t n, double *d)
{
	if (l->shape->type == NX_F64)
		memcpy(d, (const double *)l->data + s, (size_t)n * 8);
	else
		for (int64_t k = 0; k < n; k++)
			d[k] = nx_lit_get_f64(l, s + k);
}

void nx_load_i64(const nx_literal *l, int64_t s, int64_t n, int64_t *d)
{
	nx_type t = l->shape->type;
	const uint8_t *p = (const uint8_t *)l->data;
	switch (t) {
	case NX_S32: for (int64_t k = 0; k < n; k++) d[k] = ((const int32_t *)p)[s + k]; break;
	case NX_U32: for (int64_t k = 0; k < n; k++) d[k] = ((const uint32_t *)p)[s + k]; break;
	case NX_S64:
	case NX_U64: memcpy(d, (const int64_t *)p + s, (size_t)n * 8); break;
	default:
		if (nx_dom_of(t) == NX_DOM_INT)
			for (int64_t k = 0; k < n; k++)
				d[k] = get_int_raw(t, p + (s + k) * nx_type_bytes(t));
		else
			for (int64_t k = 0; k < n; k++)
				d[k] = nx_lit_get_i64(l, s + k);
	}
}

void nx_load_c(const nx_literal *l, int64_t s, int64_t n, double complex *d)
{
	for (int64_t k = 0; k < n; k++) {
		double re, im;
		nx_lit_get_c128(l, s + k, &re, &im);
		d[k] = CMPLX(re, im);
	}
}

void nx_store_f32(nx_literal *l, int64_t s, int64_t n, const float *src)
{
	nx_type t = l->shape->type;
	if (t == NX_F32) {
		memcpy((float *)l->data + s, src, (size_t)n * 4);
	} else if (t == NX_BF16) {
		uint16_t *p = (uint16_t *)l->data + s;
		for (int64_t k = 0; k < n; k++)
			p[k] = nx_f32_to_bf16(src[k]);
	} else {
		for (int64_t k = 0; k < n; k++)
			nx_lit_set_f64(l, s + k, src[k]);
	}
}

void nx_store_f64(nx_literal *l, int64_t s, int64_t n, const double *src)
{
	if (l->shape->type == NX_F64)
		memcpy((double *)l->data + s, src, (size_t)n * 8);
	else
		for (int64_t k = 0; k < n; k++)
			nx_lit_set_f64(l, s + k, src[k]);
}

void nx_store_i64(nx_literal *l, int64_t s, int64_t n, const int64_t *src)
{
	nx_type t = l->shape->type;
	uint8_t *p = (uint8_t *)l->data;
	switch (t) {
	case NX_S32:
	case NX_U32: for (int64_t k = 0; k < n; k++) ((uint32_t *)p)[s + k] = (uint32_t)src[k]; break;
	case NX_S64:
	case NX_U64: memcpy((int64_t *)p + s, src, (size_t)n * 8); break;
	default:
		for (int64_t k = 0; k < n; k++)
			nx_lit_set_i64(l, s + k, src[k]);
	}
}

void nx_store_c(nx_literal *l, int64_t s, int64_t n, const double complex *src)
{
	for (int64_t k = 0; k < n; k++)
		nx_lit_set_c128(l, s + k, creal(src[k]), cimag(src[k]));
}

/* --------------------------------------------------------- n-D copies */

void nx_strides(const nx_shape *s, int64_t *st)
{
	int64_t acc = 1;
	for (int d = s->rank - 1; d >= 0; d--) {
		st[d] = acc;
		acc *= s->dims[d];
	}
}

#define COPY_LOOP(T)                                                                 \
	do {                                                                             \
		T *dp = (T *)dst;                                                            \
		const T *sp = (const T *)src;                                                \
		for (;;) {                                                                   \
			T *d = dp + doff;                                                        \
			const T *s = sp + soff;                                                  \
			if (ds == 1 && ss == 1)                                                  \
				memcpy(d, s, (size_t)inner * sizeof(T));                             \
			else                                                                     \
				for (int64_t k = 0; k < inner; k++)                                  \
					d[k * ds] = s[k * ss];                                           \
			int r = rank - 2;                                                        \
			for (; r >= 0; r--) {                                                    \
				doff += dst_st[r], soff += src_st[r];                                \
				if (++idx[r] < dims[r])                                              \
					break;                                                           \
				doff -= dst_st[r] * dims[r], soff -= src_st[r] * dims[r];            \
				idx[r] = 0;                                                          \
			}                                                                        \
			if (r < 0)                                                               \
				return;                                                              \
		}                                                                            \
	} while (0)

void nx_copy_nd(void *dst, const int64_t *dst_st, const void *src, const int64_t *src_st,
                const int64_t *dims, int rank, int esz)
{
	for (int r = 0; r < rank; r++)
		if (dims[r] <= 0)
			return;
	if (rank == 0) {
		memcpy(dst, src, (size_t)esz);
		return;
	}
	int64_t idx[NX_MAX_RANK] = {0};
	int64_t doff = 0, soff = 0;
	int64_t inner = dims[rank - 1], ds = dst_st[rank - 1], ss = src_st[rank - 1];
	typedef struct { uint64_t a, b; } u128;
	switch (esz) {
	case 1: COPY_LOOP(uint8_t);
	case 2: COPY_LOOP(uint16_t);
	case 4: COPY_LOOP(uint32_t);
	case 8: COPY_LOOP(uint64_t);
	case 16: COPY_LOOP(u128);
	default: NX_UNREACHABLE();
	}
}
