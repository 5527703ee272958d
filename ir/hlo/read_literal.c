/* ir/hlo/read_literal.c — shapes and literal values of the HLO text reader, and
 * nx_parse_literal for "<shape> <value>" lines. */
#include "ir/hlo/read_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- shapes */

static bool is_lower_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

bool rd_at_shape(nx_rd *r)
{
	if (!rd_ws(r) || r->pos >= r->len)
		return false;
	if (r->s[r->pos] == '(')
		return true;
	size_t i = r->pos;
	while (i < r->len && is_lower_alnum(r->s[i]))
		i++;
	return i > r->pos && i < r->len && r->s[i] == '[' &&
	       nx_type_from_name(r->s + r->pos, i - r->pos) != NX_TYPE_INVALID;
}

static bool rd_layout(nx_rd *r, nx_shape *s)
{
	size_t start = r->pos; /* at '{' */
	r->pos++;
	int64_t m2m[NX_MAX_RANK];
	int n = 0;
	if (!rd_ws(r))
		return false;
	while (r->pos < r->len && r->s[r->pos] >= '0' && r->s[r->pos] <= '9') {
		int64_t v;
		size_t at = r->pos;
		if (!rd_int(r, &v, "in layout"))
			return false;
		if (n == NX_MAX_RANK || n >= s->rank)
			return rd_err(r, at, "layout has more entries than the shape's rank %d", s->rank);
		if (v >= s->rank)
			return rd_err(r, at, "layout entry %lld is out of range for rank %d", (long long)v,
			              s->rank);
		for (int k = 0; k < n; k++)
			if (m2m[k] == v)
				return rd_err(r, at, "layout entry %lld appears twice", (long long)v);
		m2m[n++] = v;
		if (!rd_accept(r, ','))
			break;
		if (!rd_ws(r))
			return false;
	}
	if (r->failed || !rd_ws(r))
		return false;
	if (r->pos < r->len && r->s[r->pos] == ':') {
		size_t xs = r->pos;
		int paren = 0;
		while (r->pos < r->len && (r->s[r->pos] != '}' || paren > 0) && r->s[r->pos] != '\n') {
			if (r->s[r->pos] == '(')
				paren++;
			else if (r->s[r->pos] == ')')
				paren--;
			r->pos++;
		}
		s->layout_extra = nx_arena_strndup(r->a, r->s + xs, r->pos - xs);
	}
	if (r->pos >= r->len || r->s[r->pos] != '}') {
		char c = r->pos < r->len ? r->s[r->pos] : 0;
		if (!c || c == '\n')
			return rd_err(r, r->pos, "expected '}' to end the layout");
		return rd_err(r, r->pos, "bad layout: unexpected '%c'", c);
	}
	r->pos++;
	if (n != s->rank && !(n == 0 && s->layout_extra == NULL && s->rank == 0))
		return rd_err(r, start, "layout lists %d dimensions but the shape has rank %d", n, s->rank);
	for (int k = 0; k < n; k++)
		s->minor_to_major[k] = m2m[k];
	return true;
}

bool rd_shape(nx_rd *r, nx_shape **out)
{
	if (!rd_ws(r))
		return false;
	size_t start = r->pos;
	if (r->pos < r->len && r->s[r->pos] == '(') {
		if (!rd_depth_push(r))
			return false;
		r->pos++;
		nx_shape *tmp[8];
		nx_shape **el = tmp;
		int n = 0, cap = 8;
		if (!rd_accept(r, ')')) {
			for (;;) {
				nx_shape *e;
				if (!rd_shape(r, &e))
					return false;
				if (n == cap) {
					nx_shape **ne = nx_arena_alloc(&r->scratch, sizeof(*ne) * (size_t)cap * 2);
					memcpy(ne, el, sizeof(*ne) * (size_t)n);
					el = ne;
					cap *= 2;
				}
				el[n++] = e;
				if (rd_accept(r, ')'))
					break;
				if (!rd_expect(r, ',', "between tuple element shapes"))
					return false;
			}
		}
		rd_depth_pop(r);
		*out = nx_shape_tuple(r->a, n, el);
		return true;
	}
	size_t i = r->pos;
	while (i < r->len && is_lower_alnum(r->s[i]))
		i++;
	if (i == start || i >= r->len || r->s[i] != '[') {
		size_t k = i;
		while (k < r->len && rd_is_name_char(r->s[k]) && k - start < 40)
			k++;
		if (k == start)
			return rd_err(r, start, "expected shape, found %s",
			              start >= r->len ? "end of file" : "punctuation");
		return rd_err(r, start, "expected shape, found '%.*s'", (int)(k - start), r->s + start);
	}
	nx_type t = nx_type_from_name(r->s + start, i - start);
	if (t == NX_TYPE_INVALID || t == NX_TUPLE)
		return rd_err(r, start, "unknown element type '%.*s'", (int)(i - start), r->s + start);
	r->pos = i + 1;
	int64_t dims[NX_MAX_RANK];
	uint8_t dyn[NX_MAX_RANK];
	bool any_dyn = false;
	int rank = 0;
	if (!rd_ws(r))
		return false;
	if (r->pos < r->len && r->s[r->pos] != ']') {
		for (;;) {
			if (!rd_ws(r))
				return false;
			size_t at = r->pos;
			if (rank == NX_MAX_RANK)
				return rd_err(r, at, "shape rank exceeds %d", NX_MAX_RANK);
			uint8_t dk = NX_DIM_STATIC;
			int64_t v = 0;
			if (at < r->len && r->s[at] == '?') {
				r->pos++;
				dk = NX_DIM_UNBOUNDED;
				v = -1;
			} else {
				if (at + 1 < r->len && r->s[at] == '<' && r->s[at + 1] == '=') {
					r->pos += 2;
					dk = NX_DIM_BOUNDED;
				}
				if (!rd_int(r, &v, "as dimension size"))
					return false;
				if (v < 0)
					return rd_err(r, at, "negative dimension size %lld", (long long)v);
			}
			any_dyn |= dk != NX_DIM_STATIC;
			dyn[rank] = dk;
			dims[rank++] = v;
			if (rd_accept(r, ']'))
				break;
			if (!rd_expect(r, ',', "between dimensions"))
				return false;
		}
	} else if (!rd_expect(r, ']', "to end the dimensions")) {
		return false;
	}
	if (t == NX_TOKEN || t == NX_OPAQUE) {
		if (rank != 0)
			return rd_err(r, start, "%s shape cannot have dimensions", nx_type_name(t));
		nx_shape *s = nx_shape_token(r->a);
		s->type = t;
		*out = s;
		return true;
	}
	int64_t prod = 1;
	for (int k = 0; k < rank; k++) {
		if (dims[k] > 0 && prod > INT64_MAX / dims[k])
			return rd_err(r, start, "shape is too large: the number of elements overflows int64");
		if (dims[k] > 0)
			prod *= dims[k];
	}
	nx_shape *s = nx_shape_array(r->a, t, rank, dims);
	if (any_dyn)
		s->dynamic = nx_arena_dup(r->a, dyn, (size_t)rank);
	if (r->pos < r->len && r->s[r->pos] == '{' && !rd_layout(r, s))
		return false;
	*out = s;
	return true;
}

/* ---------------------------------------------------------- float encoding */

enum { FK_IEEE, FK_FN, FK_FNUZ, FK_NONAN, FK_E8M0 };

static bool float_fmt(nx_type t, int *E, int *M, int *bias, int *kind)
{
	switch (t) {
	case NX_F16: *E = 5; *M = 10; *bias = 15; *kind = FK_IEEE; return true;
	case NX_BF16: *E = 8; *M = 7; *bias = 127; *kind = FK_IEEE; return true;
	case NX_F8E5M2: *E = 5; *M = 2; *bias = 15; *kind = FK_IEEE; return true;
	case NX_F8E4M3: *E = 4; *M = 3; *bias = 7; *kind = FK_IEEE; return true;
	case NX_F8E4M3FN: *E = 4; *M = 3; *bias = 7; *kind = FK_FN; return true;
	case NX_F8E4M3B11FNUZ: *E = 4; *M = 3; *bias = 11; *kind = FK_FNUZ; return true;
	case NX_F8E3M4: *E = 3; *M = 4; *bias = 3; *kind = FK_IEEE; return true;
	case NX_F8E5M2FNUZ: *E = 5; *M = 2; *bias = 16; *kind = FK_FNUZ; return true;
	case NX_F8E4M3FNUZ: *E = 4; *M = 3; *bias = 8; *kind = FK_FNUZ; return true;
	case NX_F8E8M0FNU: *E = 8; *M = 0; *bias = 127; *kind = FK_E8M0; return true;
	case NX_F4E2M1FN: *E = 2; *M = 1; *bias = 1; *kind = FK_NONAN; return true;
	default: return false;
	}
}

uint64_t nx_float_encode(double v, nx_type t)
{
	int E, M, bias, kind;
	if (!float_fmt(t, &E, &M, &bias, &kind))
		return 0;
	uint64_t signbit = (uint64_t)1 << (E + M);
	uint64_t expall = ((uint64_t)1 << E) - 1;
	uint64_t nan = kind == FK_IEEE   ? (expall << M) | ((uint64_t)1 << (M - 1))
	               : kind == FK_FN   ? (expall << M) | (((uint64_t)1 << M) - 1)
	               : kind == FK_FNUZ ? signbit
	               : kind == FK_E8M0 ? 0xff
	                                 : 0;
	uint64_t maxmag = kind == FK_IEEE ? ((expall - 1) << M) | (((uint64_t)1 << M) - 1)
	                  : kind == FK_FN ? (expall << M) | (((uint64_t)1 << M) - 2)
	                                  : (expall << M) | (((uint64_t)1 << M) - 1);
	if (kind == FK_E8M0) {
		if (isnan(v) || v < 0 || isinf(v))
			return 0xff;
		if (v == 0)
			return 0;
		int x;
		double f = frexp(v, &x) * 2; /* [1, 2) */
		int e = x - 1 + (rint(f) >= 2 ? 1 : 0);
		if (e + 127 > 254)
			return 0xff;
		return e + 127 < 0 ? 0 : (uint64_t)(e + 127);
	}
	bool neg = signbit(v) != 0;
	uint64_t sign = neg ? signbit : 0;
	if (isnan(v))
		return kind == FK_NONAN ? maxmag : (kind == FK_FNUZ ? nan : nan | sign);
	double a = fabs(v);
	bool overflow = isinf(a);
	uint64_t mag = 0;
	if (!overflow && a != 0) {
		int x;
		frexp(a, &x);
		int e = x - 1, emin = 1 - bias;
		if (e < emin)
			e = emin;
		double m = rint(ldexp(a, M - e));
		if (m >= ldexp(1, M + 1)) {
			m /= 2;
			e++;
		}
		uint64_t mi = (uint64_t)m;
		if (mi < ((uint64_t)1 << M))
			mag = mi;
		else if ((uint64_t)(e + bias) > expall)
			overflow = true;
		else
			mag = ((uint64_t)(e + bias) << M) | (mi - ((uint64_t)1 << M));
		if (!overflow && mag > maxmag)
			overflow = true;
	}
	if (overflow) {
		if (kind == FK_IEEE)
			return sign | (expall << M);
		if (kind == FK_NONAN)
			return sign | maxmag;
		return kind == FK_FNUZ ? nan : nan | sign;
	}
	if (mag == 0 && kind == FK_FNUZ)
		return 0;
	return sign | mag;
}

/* --------------------------------------------------------------- literals */

/* A number-ish token: sign, digits, letters, '.', exponent signs. */
static bool num_token(nx_rd *r, size_t *start, size_t *end)
{
	if (!rd_ws(r))
		return false;
	size_t i = r->pos;
	*start = i;
	if (i < r->len && (r->s[i] == '-' || r->s[i] == '+'))
		i++;
	while (i < r->len) {
		char c = r->s[i];
		if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    c == '.' || c == '_')
			i++;
		else if ((c == '-' || c == '+') && (r->s[i - 1] == 'e' || r->s[i - 1] == 'E'))
			i++;
		else
			break;
	}
	/* nan(0x...) payload */
	if (i < r->len && r->s[i] == '(' && i - *start >= 3 &&
	    (memcmp(r->s + i - 3, "nan", 3) == 0)) {
		while (i < r->len && r->s[i] != ')' && r->s[i] != '\n')
			i++;
		if (i < r->len && r->s[i] == ')')
			i++;
	}
	*end = i;
	if (i == *start) {
		return rd_err(r, i, "expected a literal value, found %s",
		              i >= r->len ? "end of file" : "punctuation");
	}
	r->pos = i;
	return true;
}

static bool parse_float_tok(nx_rd *r, size_t s, size_t e, double *out, float *outf, bool f32)
{
	char buf[80];
	size_t n = e - s;
	if (n >= sizeof buf)
		return rd_err(r, s, "bad floating-point literal '%.*s'", 40, r->s + s);
	memcpy(buf, r->s + s, n);
	buf[n] = 0;
	const char *b = buf;
	bool neg = false;
	if (*b == '-' || *b == '+')
		neg = *b++ == '-';
	if (strncmp(b, "nan", 3) == 0 && (b[3] == 0 || b[3] == '(')) {
		*out = neg ? -NAN : NAN;
		*outf = neg ? -NAN : NAN;
		return true;
	}
	if (strcmp(b, "inf") == 0) {
		*out = neg ? -INFINITY : INFINITY;
		*outf = neg ? -INFINITY : INFINITY;
		return true;
	}
	char *endp;
	if (f32)
		*outf = strtof(buf, &endp);
	else
		*out = strtod(buf, &endp);
	if (endp == buf || *endp || !((b[0] >= '0' && b[0] <= '9') || b[0] == '.'))
		return rd_err(r, s, "bad floating-point literal '%s'", buf);
	return true;
}

static bool parse_int_tok(nx_rd *r, size_t s, size_t e, nx_type t, int64_t *out)
{
	const char *p = r->s + s;
	size_t n = e - s, k = 0;
	bool neg = false;
	if (k < n && (p[k] == '-' || p[k] == '+'))
		neg = p[k++] == '-';
	int base = 10;
	if (k + 1 < n && p[k] == '0' && (p[k + 1] == 'x' || p[k + 1] == 'X')) {
		base = 16;
		k += 2;
	}
	if (k >= n)
		return rd_err(r, s, "bad integer literal '%.*s'", (int)n, p);
	uint64_t x = 0;
	for (; k < n; k++) {
		int dg;
		char c = p[k];
		if (c >= '0' && c <= '9')
			dg = c - '0';
		else if (base == 16 && c >= 'a' && c <= 'f')
			dg = c - 'a' + 10;
		else if (base == 16 && c >= 'A' && c <= 'F')
			dg = c - 'A' + 10;
		else
			return rd_err(r, s, "bad integer literal '%.*s'", (int)(n > 40 ? 40 : n), p);
		if (x > (UINT64_MAX - (uint64_t)dg) / (uint64_t)base)
			return rd_err(r, s, "integer literal '%.*s' is out of range for %s",
			              (int)(n > 40 ? 40 : n), p, nx_type_name(t));
		x = x * (uint64_t)base + (uint64_t)dg;
	}
	int bits = nx_type_bits(t);
	bool ok;
	if (nx_type_kind_of(t) == NX_KIND_UINT) {
		ok = !neg || x == 0;
		if (bits < 64)
			ok = ok && x <= (((uint64_t)1 << bits) - 1);
	} else {
		uint64_t lim = (uint64_t)1 << (bits - 1); /* |min| */
		ok = neg ? x <= lim : x < lim;
	}
	if (!ok)
		return rd_err(r, s, "integer literal '%.*s' is out of range for %s",
		              (int)(n > 40 ? 40 : n), p, nx_type_name(t));
	*out = neg ? (int64_t)(0 - x) : (int64_t)x;
	return true;
}

static void store_int(void *data, int64_t idx, int bytes, int64_t v)
{
	unsigned char *p = (unsigned char *)data + idx * bytes;
	switch (bytes) {
	case 1: { int8_t x = (int8_t)v; memcpy(p, &x, 1); break; }
	case 2: { int16_t x = (int16_t)v; memcpy(p, &x, 2); break; }
	case 4: { int32_t x = (int32_t)v; memcpy(p, &x, 4); break; }
	default: memcpy(p, &v, 8); break;
	}
}

static bool scalar_float(nx_rd *r, nx_type t, void *dst)
{
	size_t s, e;
	if (!num_token(r, &s, &e))
		return false;
	double d = 0;
	float f = 0;
	if (t == NX_F32) {
		if (!parse_float_tok(r, s, e, &d, &f, true))
			return false;
		memcpy(dst, &f, 4);
		return true;
	}
	if (!parse_float_tok(r, s, e, &d, &f, false))
		return false;
	if (t == NX_F64) {
		memcpy(dst, &d, 8);
		return true;
	}
	uint64_t bits = nx_float_encode(d, t);
	if (nx_type_bytes(t) == 2) {
		uint16_t x = (uint16_t)bits;
		memcpy(dst, &x, 2);
	} else {
		uint8_t x = (uint8_t)bits;
		memcpy(dst, &x, 1);
	}
	return true;
}

/* One element of type t into data[idx]. */
static bool element(nx_rd *r, nx_type t, void *data, int64_t idx)
{
	int bytes = nx_type_bytes(t);
	unsigned char *dst = (unsigned char *)data + idx * bytes;
	switch (nx_type_kind_of(t)) {
	case NX_KIND_PRED: {
		size_t s, e;
		if (!num_token(r, &s, &e))
			return false;
		const char *p = r->s + s;
		size_t n = e - s;
		if ((n == 4 && memcmp(p, "true", 4) == 0) || (n == 1 && *p == '1'))
			*dst = 1;
		else if ((n == 5 && memcmp(p, "false", 5) == 0) || (n == 1 && *p == '0'))
			*dst = 0;
		else
			return rd_err(r, s, "expected true or false, found '%.*s'", (int)(n > 40 ? 40 : n), p);
		return true;
	}
	case NX_KIND_SINT:
	case NX_KIND_UINT: {
		size_t s, e;
		int64_t v = 0;
		if (!num_token(r, &s, &e) || !parse_int_tok(r, s, e, t, &v))
			return false;
		store_int(data, idx, bytes, v);
		return true;
	}
	case NX_KIND_FLOAT:
		return scalar_float(r, t, dst);
	case NX_KIND_COMPLEX: {
		nx_type part = t == NX_C64 ? NX_F32 : NX_F64;
		int pb = bytes / 2;
		if (!rd_expect(r, '(', "to start a complex value"))
			return false;
		if (!scalar_float(r, part, dst))
			return false;
		if (!rd_expect(r, ',', "between the real and imaginary parts"))
			return false;
		if (!scalar_float(r, part, dst + pb))
			return false;
		return rd_expect(r, ')', "to end a complex value");
	}
	default:
		return rd_err(r, r->pos, "%s values cannot be written as literals", nx_type_name(t));
	}
}

typedef struct lit_ctx {
	const nx_shape *shape;
	void *data;
	int64_t idx;
	int64_t *stride; /* elements per index of each dimension */
} lit_ctx;

static bool array_level(nx_rd *r, lit_ctx *c, int level)
{
	const nx_shape *s = c->shape;
	if (!rd_depth_push(r))
		return false;
	if (!rd_expect(r, '{', "to start a literal dimension"))
		return false;
	int64_t want = s->dims[level], got = 0;
	if (!rd_accept(r, '}')) {
		for (;;) {
			if (r->failed)
				return false;
			if (got == want)
				return rd_err(r, r->pos,
				              "too many elements in dimension %d of the literal (expected %lld)",
				              level, (long long)want);
			if (level + 1 == s->rank) {
				if (!element(r, s->type, c->data, c->idx++))
					return false;
			} else if (!array_level(r, c, level + 1)) {
				return false;
			}
			got++;
			if (rd_accept(r, '}'))
				break;
			if (!rd_expect(r, ',', "between literal elements"))
				return false;
		}
	}
	if (r->failed)
		return false;
	if (got != want)
		return rd_err(r, r->pos - 1,
		              "too few elements in dimension %d of the literal (expected %lld, found %lld)",
		              level, (long long)want, (long long)got);
	rd_depth_pop(r);
	return true;
}

/* {} or {{}, {}} for a shape without elements. */
static bool empty_literal(nx_rd *r)
{
	if (!rd_ws(r))
		return false;
	if (r->pos >= r->len || r->s[r->pos] != '{')
		return rd_expect(r, '{', "to start the literal");
	int depth = 0;
	do {
		if (!rd_ws(r))
			return false;
		char c = rd_peek(r);
		if (c == '{') {
			if (++depth > NX_READ_MAX_DEPTH)
				return rd_err(r, r->pos, "nesting too deep (more than %d levels)",
				              NX_READ_MAX_DEPTH);
		} else if (c == '}') {
			depth--;
		} else if (c != ',') {
			return rd_err(r, r->pos, "expected no elements in a literal of a zero-size shape");
		}
		r->pos++;
	} while (depth > 0);
	return true;
}

bool rd_literal_value(nx_rd *r, nx_shape *shape, nx_literal **out)
{
	if (shape->type == NX_TUPLE) {
		if (!rd_depth_push(r))
			return false;
		nx_literal *l = nx_arena_alloc(r->a, sizeof(*l));
		l->shape = shape;
		l->ntuple = shape->ntuple;
		l->tuple = nx_arena_alloc(r->a, sizeof(nx_literal *) * (size_t)(shape->ntuple + 1));
		if (!rd_expect(r, '(', "to start a tuple literal"))
			return false;
		for (int k = 0; k < shape->ntuple; k++) {
			if (k && !rd_expect(r, ',', "between tuple literal elements"))
				return false;
			nx_shape *es = shape->tuple[k];
			if (!rd_ws(r))
				return false;
			if (rd_peek(r) != '(' && rd_at_shape(r)) {
				size_t at = r->pos;
				nx_shape *w;
				if (!rd_shape(r, &w))
					return false;
				if (!nx_shape_compatible(w, es))
					return rd_err(r, at, "tuple literal element %d has shape %s, expected %s", k,
					              nx_shape_str(&r->scratch, w, false),
					              nx_shape_str(&r->scratch, es, false));
			}
			if (r->failed || !rd_literal_value(r, es, &l->tuple[k]))
				return false;
		}
		if (!rd_expect(r, ')', "to end a tuple literal"))
			return false;
		rd_depth_pop(r);
		*out = l;
		return true;
	}
	if (!nx_type_is_array(shape->type))
		return rd_err(r, r->pos, "%s values cannot be written as literals",
		              nx_type_name(shape->type));
	if (shape->dynamic)
		for (int k = 0; k < shape->rank; k++)
			if (shape->dynamic[k] == NX_DIM_UNBOUNDED)
				return rd_err(r, r->pos, "a literal cannot have an unbounded dynamic dimension");
	int64_t elems = nx_shape_elems(shape);
	if (!rd_ws(r))
		return false;
	/* each element takes at least two characters of text ("0,"): refuse
	 * shapes the remaining text cannot hold before allocating for them */
	if (elems < 0 || (uint64_t)elems > (r->len - r->pos) / 2 + 1)
		return rd_err(r, r->pos,
		              "literal of shape %s needs %lld elements, more than the text holds",
		              nx_shape_str(&r->scratch, shape, false), (long long)elems);
	nx_literal *l = nx_literal_new(r->a, shape);
	if (shape->rank == 0) {
		if (!element(r, shape->type, l->data, 0))
			return false;
	} else if (elems == 0) {
		if (!empty_literal(r))
			return false;
	} else {
		lit_ctx c = {shape, l->data, 0, NULL};
		if (!array_level(r, &c, 0))
			return false;
	}
	*out = l;
	return true;
}

/* XLA prints large constants as "{...}" unless asked for full literals. Such a
 * module is still compiled and timed, so the reader fills the value
 * deterministically (docs/ir.md "Elided constants"): element k (row-major) of
 * a float constant is u_k = (splitmix64(k) >> 40) / 2^23 - 1 in [-1, 1),
 * rounded to the type (complex: real u_k, imaginary 0); integer elements are
 * 0 and pred elements false. m->nelided counts them; the commands warn. */
static uint64_t splitmix64(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

bool rd_at_elided(nx_rd *r)
{
	size_t k = r->pos;
	if (k >= r->len || r->s[k] != '{')
		return false;
	k++;
	while (k < r->len && (r->s[k] == ' ' || r->s[k] == '\t'))
		k++;
	if (k + 3 > r->len || memcmp(r->s + k, "...", 3) != 0)
		return false;
	k += 3;
	while (k < r->len && (r->s[k] == ' ' || r->s[k] == '\t'))
		k++;
	return k < r->len && r->s[k] == '}';
}

bool rd_elided_value(nx_rd *r, nx_shape *shape, nx_literal **out)
{
	size_t at = r->pos;
	while (r->s[r->pos] != '}')
		r->pos++;
	r->pos++;
	if (!nx_shape_is_array(shape) || shape->dynamic)
		return rd_err(r, at, "an elided constant {...} must have a static array shape");
	int64_t bytes = nx_shape_bytes(shape);
	if (bytes < 0 || bytes > ((int64_t)1 << 30))
		return rd_err(r, at, "elided constant of shape %s is larger than 1 GiB; nxcc fills elided constants in memory",
		              nx_shape_str(&r->scratch, shape, false));
	nx_literal *l = nx_literal_new(r->a, shape);
	int64_t n = nx_shape_elems(shape);
	nx_type t = shape->type;
	int eb = nx_type_bytes(t);
	if (nx_type_is_float(t) || nx_type_kind_of(t) == NX_KIND_COMPLEX) {
		for (int64_t k = 0; k < n; k++) {
			double u = (double)(splitmix64((uint64_t)k) >> 40) / 8388608.0 - 1.0;
			unsigned char *p = (unsigned char *)l->data + k * eb;
			if (t == NX_F64 || t == NX_C128) {
				memcpy(p, &u, 8);
			} else if (t == NX_F32 || t == NX_C64) {
				float f = (float)u;
				memcpy(p, &f, 4);
			} else {
				uint64_t bits = nx_float_encode(u, t);
				memcpy(p, &bits, (size_t)eb); /* little-endian storage */
			}
		}
	}
	*out = l;
	return true;
}

nx_literal *nx_parse_literal(nx_arena *a, const char *text, size_t len, nx_diag *d)
{
	nx_rd r = {0};
	r.s = text;
	r.len = len;
	r.d = d;
	r.a = a;
	r.lc_line = 1;
	nx_arena_init(&r.scratch);
	nx_shape *s;
	nx_literal *l = NULL;
	if (rd_check_utf8(&r) && rd_shape(&r, &s) && rd_literal_value(&r, s, &l) && rd_ws(&r) &&
	    r.pos < r.len)
		rd_err(&r, r.pos, "unexpected text after the literal");
	nx_arena_free(&r.scratch);
	return r.failed ? NULL : l;
}
