/* ir/hlo/print_literal.c — text buffers, escaping, shapes with index comments,
 * and literals in XLA's one-line form ("f32[2,2] {{1, 2}, {3, 4}}").
 *
 * Floats print as the shortest decimal (fewest characters; ties go to fewer
 * significant digits) that reads back as exactly the same value of the
 * literal's own type (plain notation wins ties), so print -> read -> print
 * is a fixed point for every
 * float type, including bf16, f16 and the f8/f4 variants. Integral values
 * print without ".0" ("1", "-9984"), as XLA's %g-style printer does.
 * A shape without elements prints its full brace structure ({{}, {}} for
 * [2,0], as XLA) unless that takes more than 4096 groups: then just {},
 * which the reader accepts for any such shape (the evaluator corpus writes
 * f32[1000000000000,0] {} the same way). */
#include "ir/hlo/print_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ buffer */

void nx_buf_putn(nx_buf *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap < b->len + n + 1)
			cap *= 2;
		char *p = realloc(b->s, cap);
		if (!p)
			nx_ice(__FILE__, __LINE__, "out of memory");
		b->s = p;
		b->cap = cap;
	}
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = 0;
}

void nx_buf_puts(nx_buf *b, const char *s) { nx_buf_putn(b, s, strlen(s)); }
void nx_buf_putc(nx_buf *b, char c) { nx_buf_putn(b, &c, 1); }

void nx_buf_printf(nx_buf *b, const char *fmt, ...)
{
	char small[256];
	va_list ap;
	va_start(ap, fmt);
	int k = vsnprintf(small, sizeof small, fmt, ap);
	va_end(ap);
	NX_ASSERT(k >= 0);
	if ((size_t)k < sizeof small) {
		nx_buf_putn(b, small, (size_t)k);
		return;
	}
	char *big = malloc((size_t)k + 1);
	if (!big)
		nx_ice(__FILE__, __LINE__, "out of memory");
	va_start(ap, fmt);
	vsnprintf(big, (size_t)k + 1, fmt, ap);
	va_end(ap);
	nx_buf_putn(b, big, (size_t)k);
	free(big);
}

char *nx_buf_take(nx_buf *b)
{
	if (!b->s)
		nx_buf_putn(b, "", 0);
	char *s = b->s;
	b->s = NULL;
	b->len = b->cap = 0;
	return s;
}

void nx_buf_escaped(nx_buf *b, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		switch (*p) {
		case '"': nx_buf_puts(b, "\\\""); break;
		case '\\': nx_buf_puts(b, "\\\\"); break;
		case '\n': nx_buf_puts(b, "\\n"); break;
		case '\t': nx_buf_puts(b, "\\t"); break;
		case '\r': nx_buf_puts(b, "\\r"); break;
		default:
			if (*p < 0x20 || *p == 0x7f)
				nx_buf_printf(b, "\\%03o", *p);
			else
				nx_buf_putc(b, (char)*p);
		}
	}
}

/* ------------------------------------------------------------------ shapes */

void nx_buf_shape(nx_buf *b, const nx_shape *s, bool with_layout)
{
	if (s->type != NX_TUPLE) {
		char small[256];
		int k = nx_shape_print(small, sizeof small, s, with_layout);
		if ((size_t)k < sizeof small) {
			nx_buf_putn(b, small, (size_t)k);
			return;
		}
		char *big = malloc((size_t)k + 1);
		if (!big)
			nx_ice(__FILE__, __LINE__, "out of memory");
		nx_shape_print(big, (size_t)k + 1, s, with_layout);
		nx_buf_putn(b, big, (size_t)k);
		free(big);
		return;
	}
	nx_buf_putc(b, '(');
	for (int i = 0; i < s->ntuple; i++) {
		if (i)
			nx_buf_puts(b, ", ");
		if (i && i % 5 == 0)
			nx_buf_printf(b, "/*index=%d*/", i);
		nx_buf_shape(b, s->tuple[i], with_layout);
	}
	nx_buf_putc(b, ')');
}

/* ------------------------------------------------------------------ floats */

typedef enum { FS_IEEE, FS_FN, FS_FNUZ, FS_FINITE, FS_E8M0 } float_style;

typedef struct {
	int ebits, mbits, bias;
	float_style style;
} minifloat;

static bool minifloat_of(nx_type t, minifloat *f)
{
	switch (t) {
	case NX_F16: *f = (minifloat){5, 10, 15, FS_IEEE}; return true;
	case NX_BF16: *f = (minifloat){8, 7, 127, FS_IEEE}; return true;
	case NX_F8E5M2: *f = (minifloat){5, 2, 15, FS_IEEE}; return true;
	case NX_F8E4M3: *f = (minifloat){4, 3, 7, FS_IEEE}; return true;
	case NX_F8E3M4: *f = (minifloat){3, 4, 3, FS_IEEE}; return true;
	case NX_F8E4M3FN: *f = (minifloat){4, 3, 7, FS_FN}; return true;
	case NX_F8E4M3FNUZ: *f = (minifloat){4, 3, 8, FS_FNUZ}; return true;
	case NX_F8E5M2FNUZ: *f = (minifloat){5, 2, 16, FS_FNUZ}; return true;
	case NX_F8E4M3B11FNUZ: *f = (minifloat){4, 3, 11, FS_FNUZ}; return true;
	case NX_F4E2M1FN: *f = (minifloat){2, 1, 1, FS_FINITE}; return true;
	case NX_F8E8M0FNU: *f = (minifloat){8, 0, 127, FS_E8M0}; return true;
	default: return false;
	}
}

enum { FV_FINITE, FV_INF, FV_NAN };

/* Decodes raw bits; *v gets the value (with sign) for finite numbers and
 * the sign (+-1) for infinities. */
static int minifloat_decode(const minifloat *f, uint64_t bits, double *v)
{
	uint64_t mmask = ((uint64_t)1 << f->mbits) - 1;
	uint64_t emax = ((uint64_t)1 << f->ebits) - 1;
	if (f->style == FS_E8M0) {
		if ((bits & 0xff) == 0xff)
			return FV_NAN;
		*v = ldexp(1.0, (int)(bits & 0xff) - f->bias);
		return FV_FINITE;
	}
	bool neg = (bits >> (f->ebits + f->mbits)) & 1;
	uint64_t e = (bits >> f->mbits) & emax, m = bits & mmask;
	if (f->style == FS_IEEE && e == emax) {
		*v = neg ? -1 : 1;
		return m ? FV_NAN : FV_INF;
	}
	if (f->style == FS_FN && e == emax && m == mmask)
		return FV_NAN;
	if (f->style == FS_FNUZ && neg && e == 0 && m == 0)
		return FV_NAN;
	double mag = e ? ldexp((double)(m | (mmask + 1)), (int)e - f->bias - f->mbits)
	               : ldexp((double)m, 1 - f->bias - f->mbits);
	*v = neg ? -mag : mag;
	return FV_FINITE;
}

/* True when d rounds (to nearest, ties to even) to the value whose
 * magnitude bits are mag: d lies strictly between the midpoints to the
 * neighbours, or on one with an even mantissa. */
static bool minifloat_roundtrips(const minifloat *f, uint64_t mag, double v, double d)
{
	double av = fabs(v), ad = fabs(d), lo = 0, hi = 0, x = 0;
	bool has_lo = mag > 0 && minifloat_decode(f, mag - 1, &x) == FV_FINITE;
	if (has_lo)
		lo = fabs(x);
	int magbits = f->style == FS_E8M0 ? 8 : f->ebits + f->mbits;
	bool has_hi = (mag + 1) < ((uint64_t)1 << magbits) &&
	              minifloat_decode(f, mag + 1, &x) == FV_FINITE;
	if (has_hi)
		hi = fabs(x);
	if (!has_lo && !has_hi)
		return ad == av;
	if (!has_lo)
		lo = f->style == FS_E8M0 ? av - (hi - av) : 0;
	if (!has_hi)
		hi = av + (av - lo);
	double mlo = (lo + av) / 2, mhi = (av + hi) / 2;
	if ((v < 0) != (d < 0) && ad != 0)
		return false;
	if (ad > mlo && ad < mhi)
		return true;
	return (ad == mlo || ad == mhi) && (mag & 1) == 0;
}

/* cand = snprintf("%.*g", p, v) made from D, the 17 significant digits of
 * v ("%.16e": digits D[0..16], decimal exponent X), without formatting again:
 * one snprintf per element instead of one per precision (literal printing
 * was up to nine snprintf per element). Rounding D to p digits is exact
 * except when D[p..] is 5 followed by zeros (the exact value may lie on either
 * side of the tie): then snprintf decides. Returns the length. */
static int gcand(char *cand, size_t cap, double v, const char *D, int X, int p)
{
	bool tie = D[p] == '5';
	for (int k = p + 1; k < 17 && tie; k++)
		tie = D[k] == '0';
	if (p < 17 && tie)
		return snprintf(cand, cap, "%.*g", p, v);
	char R[18];
	memcpy(R, D, (size_t)p);
	int e = X;
	if (p < 17 && D[p] >= '5') { /* round up, carrying */
		int k = p - 1;
		while (k >= 0 && R[k] == '9')
			R[k--] = '0';
		if (k >= 0) {
			R[k]++;
		} else {
			memmove(R + 1, R, (size_t)p - 1);
			R[0] = '1';
			e++;
		}
	}
	int sig = p;
	while (sig > 1 && R[sig - 1] == '0')
		sig--;
	char *o = cand;
	if (v < 0)
		*o++ = '-';
	if (e < -4 || e >= p) {
		*o++ = R[0];
		if (sig > 1) {
			*o++ = '.';
			memcpy(o, R + 1, (size_t)sig - 1);
			o += sig - 1;
		}
		o += snprintf(o, cap - (size_t)(o - cand), "e%c%02d", e < 0 ? '-' : '+', e < 0 ? -e : e);
	} else if (e >= 0) {
		memcpy(o, R, (size_t)e + 1);
		o += e + 1;
		if (sig > e + 1) {
			*o++ = '.';
			memcpy(o, R + e + 1, (size_t)(sig - e - 1));
			o += sig - e - 1;
		}
	} else {
		*o++ = '0';
		*o++ = '.';
		for (int k = 0; k < -e - 1; k++)
			*o++ = '0';
		memcpy(o, R, (size_t)sig);
		o += sig;
	}
	*o = 0;
	return (int)(o - cand);
}

/* Writes the candidate with the fewest characters among %.1g .. %.<maxp>g
 * that `ok` accepts. */
static void shortest(nx_buf *b, double v, int maxp, bool (*ok)(const void *, const char *),
                     const void *ctx)
{
	char best[64] = "", cand[64], e17[40];
	size_t bestlen = 0;
	/* d.dddddddddddddddde[+-]X */
	snprintf(e17, sizeof e17, "%.16e", v);
	const char *m = e17 + (e17[0] == '-');
	char D[18];
	D[0] = m[0];
	memcpy(D + 1, m + 2, 16);
	D[17] = 0;
	int X = atoi(m + 19);
	for (int p = 1; p <= maxp; p++) {
		int k = gcand(cand, sizeof cand, v, D, X, p);
		/* On equal length, plain notation reads better: -30000, not -3e+04. */
		bool better = !bestlen || (size_t)k < bestlen ||
		              ((size_t)k == bestlen && strchr(best, 'e') && !strchr(cand, 'e'));
		if (!better)
			continue;
		if (ok(ctx, cand)) {
			memcpy(best, cand, (size_t)k + 1);
			bestlen = (size_t)k;
		}
	}
	if (!bestlen)
		snprintf(best, sizeof best, "%.*g", maxp, v);
	nx_buf_puts(b, best);
}

/* strtof, not (float)strtod, which could round twice. */
static bool ok_f32(const void *ctx, const char *cand)
{
	float got = strtof(cand, NULL);
	return memcmp(&got, ctx, sizeof got) == 0;
}

static bool ok_f64(const void *ctx, const char *cand)
{
	double got = strtod(cand, NULL);
	return memcmp(&got, ctx, sizeof got) == 0;
}

typedef struct {
	const minifloat *f;
	uint64_t mag;
	double v;
} mini_ctx;

static bool ok_mini(const void *ctx, const char *cand)
{
	const mini_ctx *c = ctx;
	return minifloat_roundtrips(c->f, c->mag, c->v, strtod(cand, NULL));
}

static void put_special(nx_buf *b, double v)
{
	if (isnan(v))
		nx_buf_puts(b, "nan");
	else if (isinf(v))
		nx_buf_puts(b, v < 0 ? "-inf" : "inf");
	else
		nx_buf_puts(b, signbit(v) ? "-0" : "0");
}

void nx_buf_float(nx_buf *b, nx_type t, uint64_t bits)
{
	if (t == NX_F32) {
		uint32_t u = (uint32_t)bits;
		float f;
		memcpy(&f, &u, sizeof f);
		if (!isfinite(f) || f == 0)
			put_special(b, f);
		else
			shortest(b, f, 9, ok_f32, &f);
		return;
	}
	if (t == NX_F64) {
		double d;
		memcpy(&d, &bits, sizeof d);
		if (!isfinite(d) || d == 0)
			put_special(b, d);
		else
			shortest(b, d, 17, ok_f64, &d);
		return;
	}
	minifloat f;
	NX_ASSERT(minifloat_of(t, &f));
	double v = 0;
	int kind = minifloat_decode(&f, bits, &v);
	if (kind == FV_NAN) {
		nx_buf_puts(b, "nan");
		return;
	}
	if (kind == FV_INF || v == 0) {
		put_special(b, kind == FV_INF ? v * INFINITY : v);
		return;
	}
	int magbits = f.style == FS_E8M0 ? 8 : f.ebits + f.mbits;
	mini_ctx c = {&f, bits & (((uint64_t)1 << magbits) - 1), v};
	shortest(b, v, 9, ok_mini, &c);
}

/* ---------------------------------------------------------------- literals */

static uint64_t load_bits(const unsigned char *p, int bytes)
{
	switch (bytes) {
	case 1: return p[0];
	case 2: { uint16_t x; memcpy(&x, p, 2); return x; }
	case 4: { uint32_t x; memcpy(&x, p, 4); return x; }
	default: { uint64_t x; memcpy(&x, p, 8); return x; }
	}
}

static void put_elem(nx_buf *b, nx_type t, const unsigned char *p)
{
	int bytes = nx_type_bytes(t);
	switch (nx_type_kind_of(t)) {
	case NX_KIND_PRED:
		nx_buf_puts(b, p[0] ? "true" : "false");
		return;
	case NX_KIND_SINT: {
		uint64_t u = load_bits(p, bytes);
		int64_t s;
		switch (bytes) {
		case 1: s = (int8_t)u; break;
		case 2: s = (int16_t)u; break;
		case 4: s = (int32_t)u; break;
		default: s = (int64_t)u; break;
		}
		nx_buf_printf(b, "%lld", (long long)s);
		return;
	}
	case NX_KIND_UINT:
		nx_buf_printf(b, "%llu", (unsigned long long)load_bits(p, bytes));
		return;
	case NX_KIND_FLOAT:
		nx_buf_float(b, t, load_bits(p, bytes));
		return;
	case NX_KIND_COMPLEX: {
		nx_type part = t == NX_C64 ? NX_F32 : NX_F64;
		int half = bytes / 2;
		nx_buf_putc(b, '(');
		nx_buf_float(b, part, load_bits(p, half));
		nx_buf_puts(b, ", ");
		nx_buf_float(b, part, load_bits(p + half, half));
		nx_buf_putc(b, ')');
		return;
	}
	default:
		NX_UNREACHABLE();
	}
}

/* Elements of dimension dim onward, starting at element index *at. */
static void put_dims(nx_buf *b, const nx_literal *l, int dim, int64_t *at)
{
	const nx_shape *s = l->shape;
	int bytes = nx_type_bytes(s->type);
	nx_buf_putc(b, '{');
	for (int64_t i = 0; i < s->dims[dim]; i++) {
		if (i)
			nx_buf_puts(b, ", ");
		if (dim + 1 < s->rank) {
			put_dims(b, l, dim + 1, at);
		} else {
			NX_ASSERT((*at + 1) * bytes <= l->nbytes);
			put_elem(b, s->type, (const unsigned char *)l->data + *at * bytes);
			(*at)++;
		}
	}
	nx_buf_putc(b, '}');
}

/* Brace groups in the full form of a shape without elements ({{}, {}} for
 * [2,0] is 3); 0 when the shape has elements; saturates. */
static int64_t empty_groups(const nx_shape *s)
{
	int64_t groups = 0, at_level = 1;
	bool empty = false;
	for (int k = 0; k < s->rank; k++)
		empty |= s->dims[k] == 0;
	if (!empty)
		return 0;
	for (int k = 0; k < s->rank; k++) {
		groups += at_level;
		if (s->dims[k] == 0 || groups > INT64_MAX / 4)
			break;
		at_level = s->dims[k] > INT64_MAX / 4 / at_level ? INT64_MAX / 4 : at_level * s->dims[k];
	}
	return groups;
}

void nx_buf_literal_value(nx_buf *b, const nx_literal *l)
{
	const nx_shape *s = l->shape;
	if (s->type == NX_TUPLE) {
		nx_buf_putc(b, '(');
		for (int i = 0; i < l->ntuple; i++) {
			if (i)
				nx_buf_puts(b, ", ");
			nx_buf_literal_value(b, l->tuple[i]);
		}
		nx_buf_putc(b, ')');
		return;
	}
	if (!nx_type_is_array(s->type)) {
		nx_buf_puts(b, nx_type_name(s->type));
		return;
	}
	if (s->rank == 0) {
		NX_ASSERT(l->nbytes >= nx_type_bytes(s->type));
		put_elem(b, s->type, l->data);
		return;
	}
	if (empty_groups(s) > 4096) {
		/* The reader takes {} for any shape without elements; the full form
		 * of s8[61612612,0] would be 61612612 "{}" groups from a tiny input. */
		nx_buf_puts(b, "{}");
		return;
	}
	int64_t at = 0;
	put_dims(b, l, 0, &at);
}

char *nx_print_literal(const nx_literal *l)
{
	nx_buf b = {0};
	nx_buf_shape(&b, l->shape, false);
	nx_buf_putc(&b, ' ');
	nx_buf_literal_value(&b, l);
	return nx_buf_take(&b);
}
