/* ir/eval/eval_elem.c — elementwise ops and convert, for every element type.
 *
 * Each op computes in its operand type's domain (nx_dom): f32 for f32 and
 * every narrower float (rounded to the result type on store, once per op,
 * like XLA's evaluator with Eigen's bfloat16/half), f64, int64 bit patterns
 * for integers (wrapping: results are truncated to the type's width on
 * store), double complex. Work is done in chunks of NX_CHUNK elements with
 * the op switch outside the inner loops. */
#include "ir/eval/eval_impl.h"

#include <math.h>
#include <string.h>

/* ------------------------------------------------------------- floats */

#define FLOAT_UNARY(T, F, SFX)                                                          \
	static bool unary_##SFX(nx_opcode op, const T *x, T *y, int64_t n)                  \
	{                                                                                   \
		int64_t k;                                                                      \
		switch (op) {                                                                   \
		case NX_OP_ABS: for (k = 0; k < n; k++) y[k] = fabs##F(x[k]); break;            \
		case NX_OP_NEGATE: for (k = 0; k < n; k++) y[k] = -x[k]; break;                 \
		case NX_OP_COPY: for (k = 0; k < n; k++) y[k] = x[k]; break;                    \
		case NX_OP_SIGN:                                                                \
			for (k = 0; k < n; k++)                                                     \
				y[k] = isnan(x[k]) ? x[k] : x[k] == 0 ? x[k] : copysign##F(1, x[k]);    \
			break;                                                                      \
		case NX_OP_EXPONENTIAL: for (k = 0; k < n; k++) y[k] = exp##F(x[k]); break;     \
		case NX_OP_EXPONENTIAL_MINUS_ONE: for (k = 0; k < n; k++) y[k] = expm1##F(x[k]); break; \
		case NX_OP_LOG: for (k = 0; k < n; k++) y[k] = log##F(x[k]); break;             \
		case NX_OP_LOG_PLUS_ONE: for (k = 0; k < n; k++) y[k] = log1p##F(x[k]); break;  \
		case NX_OP_LOGISTIC: for (k = 0; k < n; k++) y[k] = 1 / (1 + exp##F(-x[k])); break; \
		case NX_OP_SQRT: for (k = 0; k < n; k++) y[k] = sqrt##F(x[k]); break;           \
		case NX_OP_RSQRT: for (k = 0; k < n; k++) y[k] = 1 / sqrt##F(x[k]); break;      \
		case NX_OP_CBRT: for (k = 0; k < n; k++) y[k] = cbrt##F(x[k]); break;           \
		case NX_OP_SINE: for (k = 0; k < n; k++) y[k] = sin##F(x[k]); break;            \
		case NX_OP_COSINE: for (k = 0; k < n; k++) y[k] = cos##F(x[k]); break;          \
		case NX_OP_TAN: for (k = 0; k < n; k++) y[k] = tan##F(x[k]); break;             \
		case NX_OP_TANH: for (k = 0; k < n; k++) y[k] = tanh##F(x[k]); break;           \
		case NX_OP_ERF: for (k = 0; k < n; k++) y[k] = erf##F(x[k]); break;             \
		case NX_OP_FLOOR: for (k = 0; k < n; k++) y[k] = floor##F(x[k]); break;         \
		case NX_OP_CEIL: for (k = 0; k < n; k++) y[k] = ceil##F(x[k]); break;           \
		case NX_OP_ROUND_NEAREST_AFZ: for (k = 0; k < n; k++) y[k] = round##F(x[k]); break; \
		case NX_OP_ROUND_NEAREST_EVEN: for (k = 0; k < n; k++) y[k] = nearbyint##F(x[k]); break; \
		case NX_OP_ACOS: for (k = 0; k < n; k++) y[k] = acos##F(x[k]); break;           \
		case NX_OP_ASIN: for (k = 0; k < n; k++) y[k] = asin##F(x[k]); break;           \
		case NX_OP_ATAN: for (k = 0; k < n; k++) y[k] = atan##F(x[k]); break;           \
		case NX_OP_ACOSH: for (k = 0; k < n; k++) y[k] = acosh##F(x[k]); break;         \
		case NX_OP_ASINH: for (k = 0; k < n; k++) y[k] = asinh##F(x[k]); break;         \
		case NX_OP_ATANH: for (k = 0; k < n; k++) y[k] = atanh##F(x[k]); break;         \
		case NX_OP_COSH: for (k = 0; k < n; k++) y[k] = cosh##F(x[k]); break;           \
		case NX_OP_SINH: for (k = 0; k < n; k++) y[k] = sinh##F(x[k]); break;           \
		default: return false;                                                          \
		}                                                                               \
		return true;                                                                    \
	}

FLOAT_UNARY(float, f, f32)
FLOAT_UNARY(double, , f64)

/* maximum/minimum propagate NaN (XLA semantics), unlike fmax/fmin. */
#define FLOAT_BINARY(T, F, SFX)                                                            \
	static bool binary_##SFX(nx_opcode op, const T *a, const T *b, T *y, int64_t n)        \
	{                                                                                      \
		int64_t k;                                                                         \
		switch (op) {                                                                      \
		case NX_OP_ADD: for (k = 0; k < n; k++) y[k] = a[k] + b[k]; break;                 \
		case NX_OP_SUBTRACT: for (k = 0; k < n; k++) y[k] = a[k] - b[k]; break;            \
		case NX_OP_MULTIPLY: for (k = 0; k < n; k++) y[k] = a[k] * b[k]; break;            \
		case NX_OP_DIVIDE: for (k = 0; k < n; k++) y[k] = a[k] / b[k]; break;              \
		case NX_OP_MAXIMUM:                                                                \
			for (k = 0; k < n; k++)                                                        \
				y[k] = isnan(a[k]) ? a[k] : isnan(b[k]) ? b[k] : a[k] < b[k] ? b[k] : a[k]; \
			break;                                                                         \
		case NX_OP_MINIMUM:                                                                \
			for (k = 0; k < n; k++)                                                        \
				y[k] = isnan(a[k]) ? a[k] : isnan(b[k]) ? b[k] : b[k] < a[k] ? b[k] : a[k]; \
			break;                                                                         \
		case NX_OP_POWER: for (k = 0; k < n; k++) y[k] = pow##F(a[k], b[k]); break;        \
		case NX_OP_REMAINDER: for (k = 0; k < n; k++) y[k] = fmod##F(a[k], b[k]); break;   \
		case NX_OP_ATAN2: for (k = 0; k < n; k++) y[k] = atan2##F(a[k], b[k]); break;      \
		default: return false;                                                             \
		}                                                                                  \
		return true;                                                                       \
	}

FLOAT_BINARY(float, f, f32)
FLOAT_BINARY(double, , f64)

static int64_t total_order_f32(float f)
{
	int32_t i;
	memcpy(&i, &f, 4);
	return i < 0 ? (int64_t)(i ^ INT32_MAX) : i;
}

static int64_t total_order_f64(double f)
{
	int64_t i;
	memcpy(&i, &f, 8);
	return i < 0 ? (i ^ INT64_MAX) : i;
}

static int64_t cmp_i(nx_cmp_dir d, int64_t a, int64_t b)
{
	switch (d) {
	case NX_CMP_EQ: return a == b;
	case NX_CMP_NE: return a != b;
	case NX_CMP_LT: return a < b;
	case NX_CMP_LE: return a <= b;
	case NX_CMP_GT: return a > b;
	default: return a >= b;
	}
}

static int64_t cmp_u(nx_cmp_dir d, uint64_t a, uint64_t b)
{
	switch (d) {
	case NX_CMP_EQ: return a == b;
	case NX_CMP_NE: return a != b;
	case NX_CMP_LT: return a < b;
	case NX_CMP_LE: return a <= b;
	case NX_CMP_GT: return a > b;
	default: return a >= b;
	}
}

static int64_t cmp_d(nx_cmp_dir d, double a, double b)
{
	switch (d) {
	case NX_CMP_EQ: return a == b;
	case NX_CMP_NE: return a != b;
	case NX_CMP_LT: return a < b;
	case NX_CMP_LE: return a <= b;
	case NX_CMP_GT: return a > b;
	default: return a >= b;
	}
}

/* ----------------------------------------------------------- integers */

typedef struct ity {
	int bits;
	bool sign, pred;
	uint64_t mask;
} ity;

static ity ity_of(nx_type t)
{
	ity r;
	r.bits = nx_type_bits(t);
	r.sign = nx_type_kind_of(t) == NX_KIND_SINT;
	r.pred = t == NX_PRED;
	r.mask = r.bits >= 64 ? UINT64_MAX : (UINT64_C(1) << r.bits) - 1;
	return r;
}

static int64_t sra(int64_t x, unsigned s)
{
	return x < 0 ? ~(int64_t)(~(uint64_t)x >> s) : (int64_t)((uint64_t)x >> s);
}

static bool unary_int(nx_opcode op, ity t, const int64_t *x, int64_t *y, int64_t n)
{
	int64_t k;
	switch (op) {
	case NX_OP_COPY: memcpy(y, x, (size_t)n * 8); break;
	case NX_OP_ABS:
		for (k = 0; k < n; k++)
			y[k] = t.sign && x[k] < 0 ? (int64_t)(0 - (uint64_t)x[k]) : x[k];
		break;
	case NX_OP_NEGATE: for (k = 0; k < n; k++) y[k] = (int64_t)(0 - (uint64_t)x[k]); break;
	case NX_OP_SIGN:
		for (k = 0; k < n; k++)
			y[k] = t.sign ? (x[k] > 0) - (x[k] < 0) : x[k] != 0;
		break;
	case NX_OP_NOT:
		for (k = 0; k < n; k++)
			y[k] = t.pred ? !x[k] : ~x[k];
		break;
	case NX_OP_POPCNT:
		for (k = 0; k < n; k++)
			y[k] = __builtin_popcountll((uint64_t)x[k] & t.mask);
		break;
	case NX_OP_CLZ:
		for (k = 0; k < n; k++) {
			uint64_t v = (uint64_t)x[k] & t.mask;
			y[k] = v ? __builtin_clzll(v) - (64 - t.bits) : t.bits;
		}
		break;
	default: return false;
	}
	return true;
}

static int64_t ipow(ity t, int64_t a, int64_t b)
{
	if (t.sign && b < 0)
		return a == 1 ? 1 : 0;
	uint64_t r = 1, base = (uint64_t)a, e = (uint64_t)b & t.mask;
	while (e) {
		if (e & 1)
			r *= base;
		base *= base;
		e >>= 1;
	}
	return (int64_t)r;
}

static bool binary_int(nx_opcode op, ity t, const int64_t *a, const int64_t *b, int64_t *y, int64_t n)
{
	int64_t k;
	switch (op) {
	case NX_OP_ADD:
		for (k = 0; k < n; k++)
			y[k] = t.pred ? (a[k] | b[k]) : (int64_t)((uint64_t)a[k] + (uint64_t)b[k]);
		break;
	case NX_OP_SUBTRACT: for (k = 0; k < n; k++) y[k] = (int64_t)((uint64_t)a[k] - (uint64_t)b[k]); break;
	case NX_OP_MULTIPLY:
		for (k = 0; k < n; k++)
			y[k] = t.pred ? (a[k] & b[k]) : (int64_t)((uint64_t)a[k] * (uint64_t)b[k]);
		break;
	case NX_OP_DIVIDE:
		for (k = 0; k < n; k++) {
			if (b[k] == 0)
				y[k] = -1;
			else if (t.sign)
				y[k] = (a[k] == INT64_MIN && b[k] == -1) ? a[k] : a[k] / b[k];
			else
				y[k] = (int64_t)((uint64_t)a[k] / (uint64_t)b[k]);
		}
		break;
	case NX_OP_REMAINDER:
		for (k = 0; k < n; k++) {
			if (b[k] == 0)
				y[k] = a[k];
			else if (t.sign)
				y[k] = b[k] == -1 ? 0 : a[k] % b[k];
			else
				y[k] = (int64_t)((uint64_t)a[k] % (uint64_t)b[k]);
		}
		break;
	case NX_OP_MAXIMUM:
		for (k = 0; k < n; k++)
			y[k] = t.sign ? (a[k] < b[k] ? b[k] : a[k]) : ((uint64_t)a[k] < (uint64_t)b[k] ? b[k] : a[k]);
		break;
	case NX_OP_MINIMUM:
		for (k = 0; k < n; k++)
			y[k] = t.sign ? (b[k] < a[k] ? b[k] : a[k]) : ((uint64_t)b[k] < (uint64_t)a[k] ? b[k] : a[k]);
		break;
	case NX_OP_POWER: for (k = 0; k < n; k++) y[k] = ipow(t, a[k], b[k]); break;
	case NX_OP_AND: for (k = 0; k < n; k++) y[k] = a[k] & b[k]; break;
	case NX_OP_OR: for (k = 0; k < n; k++) y[k] = a[k] | b[k]; break;
	case NX_OP_XOR: for (k = 0; k < n; k++) y[k] = a[k] ^ b[k]; break;
	case NX_OP_SHIFT_LEFT:
		for (k = 0; k < n; k++) {
			uint64_t s = (uint64_t)b[k] & t.mask;
			y[k] = s >= (uint64_t)t.bits ? 0 : (int64_t)((uint64_t)a[k] << s);
		}
		break;
	case NX_OP_SHIFT_RIGHT_LOGICAL:
		for (k = 0; k < n; k++) {
			uint64_t s = (uint64_t)b[k] & t.mask;
			y[k] = s >= (uint64_t)t.bits ? 0 : (int64_t)(((uint64_t)a[k] & t.mask) >> s);
		}
		break;
	case NX_OP_SHIFT_RIGHT_ARITHMETIC:
		for (k = 0; k < n; k++) {
			uint64_t s = (uint64_t)b[k] & t.mask;
			/* the value is sign-extended to 64 bits, so shifting by up to 63 is exact */
			int64_t v = t.sign || t.bits == 64 ? a[k]
			          : sra((int64_t)((uint64_t)a[k] << (64 - t.bits)), (unsigned)(64 - t.bits));
			y[k] = s >= (uint64_t)t.bits ? (v < 0 ? -1 : 0) : sra(v, (unsigned)s);
		}
		break;
	case NX_OP_MULHI:
		for (k = 0; k < n; k++) {
			if (t.bits == 64) {
				__extension__ typedef __int128 i128;
				__extension__ typedef unsigned __int128 u128;
				y[k] = t.sign ? (int64_t)(((i128)a[k] * (i128)b[k]) >> 64)
				              : (int64_t)(uint64_t)(((u128)(uint64_t)a[k] * (u128)(uint64_t)b[k]) >> 64);
			} else {
				y[k] = t.sign ? sra(a[k] * b[k], (unsigned)t.bits)
				              : (int64_t)(((uint64_t)a[k] * (uint64_t)b[k]) >> t.bits);
			}
		}
		break;
	default: return false;
	}
	return true;
}

/* ------------------------------------------------------------ complex */

static bool unary_c(nx_opcode op, const double complex *x, double complex *y, int64_t n)
{
	int64_t k;
	switch (op) {
	case NX_OP_NEGATE: for (k = 0; k < n; k++) y[k] = -x[k]; break;
	case NX_OP_COPY: for (k = 0; k < n; k++) y[k] = x[k]; break;
	case NX_OP_EXPONENTIAL: for (k = 0; k < n; k++) y[k] = cexp(x[k]); break;
	case NX_OP_EXPONENTIAL_MINUS_ONE: for (k = 0; k < n; k++) y[k] = cexp(x[k]) - 1; break;
	case NX_OP_LOG: for (k = 0; k < n; k++) y[k] = clog(x[k]); break;
	case NX_OP_LOG_PLUS_ONE: for (k = 0; k < n; k++) y[k] = clog(1 + x[k]); break;
	case NX_OP_SQRT: for (k = 0; k < n; k++) y[k] = csqrt(x[k]); break;
	case NX_OP_RSQRT: for (k = 0; k < n; k++) y[k] = 1 / csqrt(x[k]); break;
	case NX_OP_SINE: for (k = 0; k < n; k++) y[k] = csin(x[k]); break;
	case NX_OP_COSINE: for (k = 0; k < n; k++) y[k] = ccos(x[k]); break;
	case NX_OP_TAN: for (k = 0; k < n; k++) y[k] = ctan(x[k]); break;
	case NX_OP_TANH: for (k = 0; k < n; k++) y[k] = ctanh(x[k]); break;
	case NX_OP_LOGISTIC: for (k = 0; k < n; k++) y[k] = 1 / (1 + cexp(-x[k])); break;
	case NX_OP_SIGN:
		for (k = 0; k < n; k++) {
			double a = cabs(x[k]);
			y[k] = a == 0 ? x[k] : x[k] / a;
		}
		break;
	default: return false;
	}
	return true;
}

static bool binary_c(nx_opcode op, const double complex *a, const double complex *b,
                     double complex *y, int64_t n)
{
	int64_t k;
	switch (op) {
	case NX_OP_ADD: for (k = 0; k < n; k++) y[k] = a[k] + b[k]; break;
	case NX_OP_SUBTRACT: for (k = 0; k < n; k++) y[k] = a[k] - b[k]; break;
	case NX_OP_MULTIPLY: for (k = 0; k < n; k++) y[k] = a[k] * b[k]; break;
	case NX_OP_DIVIDE: for (k = 0; k < n; k++) y[k] = a[k] / b[k]; break;
	case NX_OP_POWER: for (k = 0; k < n; k++) y[k] = cpow(a[k], b[k]); break;
	default: return false;
	}
	return true;
}

/* ------------------------------------------------------------- driver */

typedef union dbuf {
	float f[NX_CHUNK];
	double d[NX_CHUNK];
	int64_t i[NX_CHUNK];
	double complex c[NX_CHUNK];
} dbuf;

/* Loads n elements at s; a one-element operand is broadcast (scalar clamp
 * bounds, scalar select predicates). */
static void load_dom(nx_dom dom, const nx_literal *l, int64_t s, int64_t n, dbuf *b)
{
	bool one = nx_shape_elems(l->shape) == 1;
	int64_t m = one ? 1 : n, at = one ? 0 : s;
	switch (dom) {
	case NX_DOM_F32: nx_load_f32(l, at, m, b->f); if (one) for (int64_t k = 1; k < n; k++) b->f[k] = b->f[0]; break;
	case NX_DOM_F64: nx_load_f64(l, at, m, b->d); if (one) for (int64_t k = 1; k < n; k++) b->d[k] = b->d[0]; break;
	case NX_DOM_INT: nx_load_i64(l, at, m, b->i); if (one) for (int64_t k = 1; k < n; k++) b->i[k] = b->i[0]; break;
	case NX_DOM_C: nx_load_c(l, at, m, b->c); if (one) for (int64_t k = 1; k < n; k++) b->c[k] = b->c[0]; break;
	default: break;
	}
}

static void store_dom(nx_dom dom, nx_literal *l, int64_t s, int64_t n, const dbuf *b)
{
	switch (dom) {
	case NX_DOM_F32: nx_store_f32(l, s, n, b->f); break;
	case NX_DOM_F64: nx_store_f64(l, s, n, b->d); break;
	case NX_DOM_INT: nx_store_i64(l, s, n, b->i); break;
	case NX_DOM_C: nx_store_c(l, s, n, b->c); break;
	default: break;
	}
}

static bool compare_chunk(const nx_inst *i, nx_type t, nx_dom dom, const dbuf *a, const dbuf *b,
                          int64_t *y, int64_t n)
{
	nx_cmp_dir d = i->a.direction;
	bool total = i->a.compare_type == NX_CMPT_TOTALORDER;
	ity it = ity_of(t);
	bool uns = i->a.compare_type == NX_CMPT_UNSIGNED || (i->a.compare_type == NX_CMPT_DEFAULT && !it.sign);
	for (int64_t k = 0; k < n; k++) {
		switch (dom) {
		case NX_DOM_F32:
			y[k] = total ? cmp_i(d, total_order_f32(a->f[k]), total_order_f32(b->f[k]))
			             : cmp_d(d, a->f[k], b->f[k]);
			break;
		case NX_DOM_F64:
			y[k] = total ? cmp_i(d, total_order_f64(a->d[k]), total_order_f64(b->d[k]))
			             : cmp_d(d, a->d[k], b->d[k]);
			break;
		case NX_DOM_INT:
			y[k] = uns ? cmp_u(d, (uint64_t)a->i[k] & it.mask, (uint64_t)b->i[k] & it.mask)
			           : cmp_i(d, a->i[k], b->i[k]);
			break;
		case NX_DOM_C:
			if (d != NX_CMP_EQ && d != NX_CMP_NE)
				return false;
			y[k] = (a->c[k] == b->c[k]) == (d == NX_CMP_EQ);
			break;
		default: return false;
		}
	}
	return true;
}

static nx_status select_op(nx_eval *ev, const nx_inst *i, nx_literal *const *ops, nx_literal *o)
{
	int64_t n = nx_shape_elems(o->shape);
	int esz = nx_type_bytes(o->shape->type);
	bool one = nx_shape_elems(ops[0]->shape) == 1;
	const uint8_t *p = ops[0]->data;
	const uint8_t *a = ops[1]->data, *b = ops[2]->data;
	uint8_t *y = o->data;
	(void)ev, (void)i;
	for (int64_t k = 0; k < n; k++) {
		bool c = p[one ? 0 : k] != 0;
		memcpy(y + k * esz, (c ? a : b) + k * esz, (size_t)esz);
	}
	return NX_OK;
}

static bool maxmin(nx_dom dom, ity it, nx_opcode op, dbuf *a, dbuf *b, dbuf *y, int64_t n)
{
	switch (dom) {
	case NX_DOM_F32: return binary_f32(op, a->f, b->f, y->f, n);
	case NX_DOM_F64: return binary_f64(op, a->d, b->d, y->d, n);
	case NX_DOM_INT: return binary_int(op, it, a->i, b->i, y->i, n);
	default: return false;
	}
}

nx_status nx_eval_elementwise(nx_eval *ev, const nx_inst *i, nx_literal *const *ops, nx_literal **out)
{
	nx_literal *o = nx_eval_alloc(ev, i->shape);
	if (!o)
		return NX_ERR_INPUT;
	*out = o;
	if (!nx_shape_is_array(i->shape))
		return nx_eval_error(ev, i, "elementwise op on a non-array shape");
	int64_t n = nx_shape_elems(i->shape);
	for (int j = 0; j < i->noperands; j++) {
		int64_t m = nx_shape_elems(ops[j]->shape);
		if (!nx_shape_is_array(ops[j]->shape) || (m != n && m != 1))
			return nx_eval_error(ev, i, "operand %d has %lld elements, result %lld", j,
			                     (long long)m, (long long)n);
	}
	if (i->op == NX_OP_SELECT)
		return select_op(ev, i, ops, o);
	nx_type it = i->noperands ? ops[i->op == NX_OP_CLAMP ? 1 : 0]->shape->type : i->shape->type;
	nx_type ot = i->shape->type;
	nx_dom dom = nx_dom_of(it), odom = nx_dom_of(ot);
	ity ti = ity_of(it);
	if (dom == NX_DOM_NONE)
		return nx_eval_error(ev, i, "%s on %s is not supported", nx_opcode_name(i->op), nx_type_name(it));
	static _Thread_local dbuf A, B, C, Y;
	for (int64_t s = 0; s < n; s += NX_CHUNK) {
		int64_t c = n - s < NX_CHUNK ? n - s : NX_CHUNK;
		for (int j = 0; j < i->noperands && j < 3; j++)
			load_dom(dom, ops[j], s, c, j == 0 ? &A : j == 1 ? &B : &C);
		bool ok = true;
		nx_dom sdom = odom;
		switch (i->op) {
		case NX_OP_COMPARE:
			ok = compare_chunk(i, it, dom, &A, &B, Y.i, c);
			sdom = NX_DOM_INT;
			break;
		case NX_OP_IS_FINITE:
			for (int64_t k = 0; k < c; k++)
				Y.i[k] = dom == NX_DOM_F64 ? isfinite(A.d[k]) : isfinite(A.f[k]);
			ok = dom == NX_DOM_F32 || dom == NX_DOM_F64;
			sdom = NX_DOM_INT;
			break;
		case NX_OP_CLAMP: /* clamp(lo, x, hi) = min(max(x, lo), hi) */
			ok = maxmin(dom, ti, NX_OP_MAXIMUM, &B, &A, &Y, c) && maxmin(dom, ti, NX_OP_MINIMUM, &Y, &C, &B, c);
			if (ok)
				Y = B;
			break;
		case NX_OP_REAL:
		case NX_OP_IMAG:
		case NX_OP_ABS:
			if (dom == NX_DOM_C) {
				for (int64_t k = 0; k < c; k++)
					Y.d[k] = i->op == NX_OP_REAL ? creal(A.c[k]) : i->op == NX_OP_IMAG ? cimag(A.c[k]) : cabs(A.c[k]);
				sdom = NX_DOM_F64;
			} else if (i->op == NX_OP_ABS) {
				ok = dom == NX_DOM_F32 ? unary_f32(i->op, A.f, Y.f, c)
				   : dom == NX_DOM_F64 ? unary_f64(i->op, A.d, Y.d, c) : unary_int(i->op, ti, A.i, Y.i, c);
			} else { /* real/imag of a real number */
				Y = A;
				if (i->op == NX_OP_IMAG)
					memset(&Y, 0, sizeof(Y));
				sdom = dom;
			}
			break;
		case NX_OP_COMPLEX:
			for (int64_t k = 0; k < c; k++)
				Y.c[k] = dom == NX_DOM_F64 ? CMPLX(A.d[k], B.d[k]) : CMPLX(A.f[k], B.f[k]);
			sdom = NX_DOM_C;
			break;
		default:
			if (i->noperands == 1) {
				switch (dom) {
				case NX_DOM_F32: ok = unary_f32(i->op, A.f, Y.f, c); break;
				case NX_DOM_F64: ok = unary_f64(i->op, A.d, Y.d, c); break;
				case NX_DOM_INT: ok = unary_int(i->op, ti, A.i, Y.i, c); break;
				default: ok = unary_c(i->op, A.c, Y.c, c); break;
				}
			} else if (i->noperands == 2) {
				switch (dom) {
				case NX_DOM_F32: ok = binary_f32(i->op, A.f, B.f, Y.f, c); break;
				case NX_DOM_F64: ok = binary_f64(i->op, A.d, B.d, Y.d, c); break;
				case NX_DOM_INT: ok = binary_int(i->op, ti, A.i, B.i, Y.i, c); break;
				default: ok = binary_c(i->op, A.c, B.c, Y.c, c); break;
				}
			} else {
				ok = false;
			}
			sdom = dom;
		}
		if (!ok)
			return nx_eval_error(ev, i, "%s is not supported for %s", nx_opcode_name(i->op), nx_type_name(it));
		if (sdom != odom && sdom == NX_DOM_F64 && odom == NX_DOM_F32) {
			for (int64_t k = 0; k < c; k++)
				Y.f[k] = (float)Y.d[k];
			sdom = NX_DOM_F32;
		}
		if (sdom != odom && !(sdom == NX_DOM_INT && odom == NX_DOM_INT))
			return nx_eval_error(ev, i, "%s: result type %s does not match the operands",
			                     nx_opcode_name(i->op), nx_type_name(ot));
		store_dom(sdom, o, s, c, &Y);
	}
	return NX_OK;
}

/* -------------------------------------------------------------- convert */

static int64_t sat_i(double v, nx_type t)
{
	ity it = ity_of(t);
	if (isnan(v))
		return 0;
	if (it.pred)
		return v != 0;
	double lo = it.sign ? -ldexp(1.0, it.bits - 1) : 0;
	double hi = it.sign ? ldexp(1.0, it.bits - 1) : ldexp(1.0, it.bits); /* exclusive */
	if (v <= lo)
		return it.sign ? (it.bits == 64 ? INT64_MIN : -(INT64_C(1) << (it.bits - 1))) : 0;
	if (v >= hi)
		return it.sign ? (int64_t)(it.mask >> 1) : (int64_t)it.mask;
	if (!it.sign && v >= 9.2233720368547758e18)
		return (int64_t)(uint64_t)v;
	return (int64_t)v;
}

nx_literal *nx_eval_convert_lit(nx_eval *ev, const nx_literal *src, nx_type t)
{
	nx_literal *o = nx_eval_alloc(ev, nx_shape_with_type(&ev->arena, src->shape, t));
	if (!o)
		return NULL;
	nx_type st = src->shape->type;
	nx_dom sd = nx_dom_of(st), od = nx_dom_of(t);
	int64_t n = nx_shape_elems(src->shape);
	static _Thread_local dbuf A, Y;
	if (st == t) {
		if (n)
			memcpy(o->data, src->data, (size_t)o->nbytes);
		return o;
	}
	for (int64_t s = 0; s < n; s += NX_CHUNK) {
		int64_t c = n - s < NX_CHUNK ? n - s : NX_CHUNK;
		if (sd == NX_DOM_C || od == NX_DOM_C) {
			nx_load_c(src, s, c, A.c);
			if (od == NX_DOM_C) {
				nx_store_c(o, s, c, A.c);
			} else {
				for (int64_t k = 0; k < c; k++)
					Y.d[k] = creal(A.c[k]);
				if (od == NX_DOM_INT)
					for (int64_t k = 0; k < c; k++)
						Y.i[k] = sat_i(Y.d[k], t);
				store_dom(od == NX_DOM_INT ? NX_DOM_INT : NX_DOM_F64, o, s, c, &Y);
			}
		} else if (sd == NX_DOM_INT) {
			nx_load_i64(src, s, c, A.i);
			bool u64 = st == NX_U64;
			if (od == NX_DOM_INT) {
				nx_store_i64(o, s, c, A.i);
			} else if (t == NX_F32) {
				for (int64_t k = 0; k < c; k++)
					Y.f[k] = u64 ? (float)(uint64_t)A.i[k] : (float)A.i[k];
				nx_store_f32(o, s, c, Y.f);
			} else {
				for (int64_t k = 0; k < c; k++)
					Y.d[k] = u64 ? (double)(uint64_t)A.i[k] : (double)A.i[k];
				nx_store_f64(o, s, c, Y.d);
			}
		} else { /* float source */
			if (st == NX_F32 || st == NX_BF16) {
				nx_load_f32(src, s, c, A.f);
				for (int64_t k = c - 1; k >= 0; k--)
					Y.d[k] = A.f[k];
			} else {
				nx_load_f64(src, s, c, Y.d);
			}
			if (od == NX_DOM_INT) {
				for (int64_t k = 0; k < c; k++)
					A.i[k] = sat_i(Y.d[k], t);
				nx_store_i64(o, s, c, A.i);
			} else if (t == NX_BF16 && (st == NX_F32)) {
				uint16_t *p = (uint16_t *)o->data + s;
				for (int64_t k = 0; k < c; k++)
					p[k] = nx_f32_to_bf16((float)Y.d[k]);
			} else {
				nx_store_f64(o, s, c, Y.d);
			}
		}
	}
	return o;
}

nx_status nx_eval_convert(nx_eval *ev, const nx_inst *i, nx_literal *const *ops, nx_literal **out)
{
	if (!nx_shape_is_array(i->shape) || !nx_shape_is_array(ops[0]->shape))
		return nx_eval_error(ev, i, "convert of a non-array value");
	*out = nx_eval_convert_lit(ev, ops[0], i->shape->type);
	if (!*out)
		return NX_ERR_INPUT;
	(*out)->shape = i->shape;
	return NX_OK;
}
