/* passes/math_expand.c — elementwise math the backend has no kernel for, in
 * the ops it lowers (docs/passes.md "math-expand"). Floats: f32 directly;
 * bf16/f16 converted to f32, expanded, converted back (the evaluator
 * computes them in f32 and rounds once); f64 and complex stay (refused
 * before lowering by name). With a = |x|:
 *   tan(x)    = sin(x) / cos(x)
 *   atan2(y, x): t = atan(min(|x|,|y|) / max(|x|,|y|)) in [0, pi/4] (0 when
 *             both are 0, pi/4 when both are inf), r = |y| > |x| ? pi/2 - t
 *             : t, r = signbit(x) ? pi - r : r, signbit(y) ? -r : r; NaN
 *             when either is NaN. This is C's atan2f on signed zeros and
 *             infinities (XLA's atan2), in every quadrant.
 *   cbrt(x)   = sign(x) * |x|^(1/3) (±0, ±inf, NaN exact)
 *   sinh(x)   = sign(x) * (e + e/(e+1))/2, e = expm1(a) (no cancellation
 *             near 0); a > 88: h*(h/2), h = exp(a/2) (e^a alone overflows)
 *   cosh(x)   = (h + 1/h)/2, h = exp(a); a > 88: h*(h/2), h = exp(a/2)
 *   asinh(x)  = sign(x) * log1p(a + a²/(1 + sqrt(1 + a²))); a > 2^13:
 *             log(a) + ln 2
 *   acosh(x)  = log1p(t + sqrt(2t + t²)), t = x - 1 (exact near 1); x >
 *             2^13: log(x) + ln 2; x < 1: NaN
 *   atanh(x)  = sign(x) * log1p(2a/(1-a)) / 2; a > 1: NaN
 *   asin(x)   = atan2(x, sqrt((1-x)(1+x))), acos(x) = atan2(sqrt((1-x)(1+x)), x)
 *             (both exact at ±1 and 0); |x| > 1: NaN
 * NaN operands give NaN (an explicit select where the backend's min/max
 * would drop one).
 * Integers (8/16/32-bit, signed or not; the bit tricks wrap exactly on the
 * device's integer ALU, shift-right-logical on the type's bits):
 *   popcnt(x): x - ((x>>1) & 0x55..), (x & 0x33..) + ((x>>2) & 0x33..),
 *             (x + (x>>4)) & 0x0f.., then x + (x>>8), x + (x>>16), & 2W-1
 *   count-leading-zeros(x) = W - popcnt(x | x>>1 | ... smeared right)
 *   64-bit: on the two 32-bit halves (convert and shift, which int64-split,
 *   running after this pass, expands): popcnt(lo) + popcnt(hi);
 *   hi == 0 ? 32 + clz(lo) : clz(hi). */
#include "passes/rewrite.h"

#include <math.h>
#include <stdint.h>

enum { MATH_BIG_EXP = 88, MATH_BIG_LOG = 8192 };

#define MATH_PI 3.14159265358979323846
#define MATH_LN2 0.69314718055994530942

typedef struct mx {
	nx_rw *rw;
	const nx_shape *s; /* the f32 shape being computed in */
} mx;

static nx_inst *k_(mx *e, double v) { return nx_rw_splat(e->rw, e->s, e->s->type, v); }
static nx_inst *un(mx *e, nx_opcode op, nx_inst *x) { return nx_rw_unary(e->rw, op, x); }
static nx_inst *bin(mx *e, nx_opcode op, nx_inst *x, nx_inst *y) { return nx_rw_binary(e->rw, op, x, y); }
static nx_inst *add(mx *e, nx_inst *x, nx_inst *y) { return bin(e, NX_OP_ADD, x, y); }
static nx_inst *sub(mx *e, nx_inst *x, nx_inst *y) { return bin(e, NX_OP_SUBTRACT, x, y); }
static nx_inst *mul(mx *e, nx_inst *x, nx_inst *y) { return bin(e, NX_OP_MULTIPLY, x, y); }
static nx_inst *dvd(mx *e, nx_inst *x, nx_inst *y) { return bin(e, NX_OP_DIVIDE, x, y); }

static nx_inst *cmp(mx *e, nx_inst *x, nx_inst *y, nx_cmp_dir d) { return nx_rw_compare(e->rw, x, y, d); }
static nx_inst *sel(mx *e, nx_inst *p, nx_inst *a, nx_inst *b) { return nx_rw_select(e->rw, p, a, b); }

/* sign bit of an f32 value (true for -0 and negative NaN) */
static nx_inst *sign_bit(mx *e, nx_inst *x)
{
	nx_arena *a = nx_rw_arena(e->rw);
	nx_inst *b = nx_rw_add(e->rw, NX_OP_BITCAST_CONVERT,
	                       nx_shape_array(a, NX_S32, x->shape->rank, x->shape->dims), &x, 1, NULL);
	nx_inst *c = nx_rw_binary(e->rw, NX_OP_COMPARE, b, nx_rw_splat(e->rw, b->shape, NX_S32, 0));
	c->a.direction = NX_CMP_LT;
	return c;
}

static nx_inst *isnan_(mx *e, nx_inst *x) { return cmp(e, x, x, NX_CMP_NE); }

/* x when x is NaN, else r */
static nx_inst *nan_through(mx *e, nx_inst *x, nx_inst *r) { return sel(e, isnan_(e, x), x, r); }

static nx_inst *atan2_f32(mx *e, nx_inst *y, nx_inst *x)
{
	nx_inst *ax = un(e, NX_OP_ABS, x), *ay = un(e, NX_OP_ABS, y);
	nx_inst *mn = bin(e, NX_OP_MINIMUM, ax, ay), *mxv = bin(e, NX_OP_MAXIMUM, ax, ay);
	nx_inst *t = un(e, NX_OP_ATAN, dvd(e, mn, mxv));
	t = sel(e, cmp(e, mn, mxv, NX_CMP_EQ), k_(e, MATH_PI / 4), t);
	t = sel(e, cmp(e, mxv, k_(e, 0), NX_CMP_EQ), k_(e, 0), t);
	nx_inst *r = sel(e, cmp(e, ay, ax, NX_CMP_GT), sub(e, k_(e, MATH_PI / 2), t), t);
	r = sel(e, sign_bit(e, x), sub(e, k_(e, MATH_PI), r), r);
	r = sel(e, sign_bit(e, y), un(e, NX_OP_NEGATE, r), r);
	nx_inst *nan = bin(e, NX_OP_OR, isnan_(e, x), isnan_(e, y));
	return sel(e, nan, add(e, x, y), r); /* x + y: NaN (never inf - inf here) */
}

/* NaN where bad, else r */
static nx_inst *nan_if(mx *e, nx_inst *bad, nx_inst *r) { return sel(e, bad, k_(e, NAN), r); }

static nx_inst *sign_times(mx *e, nx_inst *x, nx_inst *r) { return mul(e, un(e, NX_OP_SIGN, x), r); }

/* the big-argument forms: h*(h/2), h = exp(a/2) (sinh and cosh of a > 88) */
static nx_inst *half_exp_sq(mx *e, nx_inst *a)
{
	nx_inst *h = un(e, NX_OP_EXPONENTIAL, mul(e, a, k_(e, 0.5)));
	return mul(e, h, mul(e, h, k_(e, 0.5)));
}

/* log(a) + ln 2 (asinh and acosh of a > 2^13) */
static nx_inst *log2a(mx *e, nx_inst *a) { return add(e, un(e, NX_OP_LOG, a), k_(e, MATH_LN2)); }

static nx_inst *float_op(mx *e, nx_opcode op, nx_inst *x, nx_inst *y)
{
	nx_inst *a = op == NX_OP_ATAN2 || op == NX_OP_TAN ? NULL : un(e, NX_OP_ABS, x);
	switch (op) {
	case NX_OP_TAN: return dvd(e, un(e, NX_OP_SINE, x), un(e, NX_OP_COSINE, x));
	case NX_OP_ATAN2: return atan2_f32(e, x, y);
	case NX_OP_CBRT: return sign_times(e, x, bin(e, NX_OP_POWER, a, k_(e, 1.0 / 3.0)));
	case NX_OP_SINH: {
		nx_inst *m = un(e, NX_OP_EXPONENTIAL_MINUS_ONE, a);
		nx_inst *s = mul(e, add(e, m, dvd(e, m, add(e, m, k_(e, 1)))), k_(e, 0.5));
		s = sel(e, cmp(e, a, k_(e, MATH_BIG_EXP), NX_CMP_GT), half_exp_sq(e, a), s);
		return sign_times(e, x, s);
	}
	case NX_OP_COSH: {
		nx_inst *h = un(e, NX_OP_EXPONENTIAL, a);
		nx_inst *c = mul(e, add(e, h, dvd(e, k_(e, 1), h)), k_(e, 0.5));
		return nan_through(e, x, sel(e, cmp(e, a, k_(e, MATH_BIG_EXP), NX_CMP_GT), half_exp_sq(e, a), c));
	}
	case NX_OP_ASINH: {
		nx_inst *a2 = mul(e, a, a);
		nx_inst *q = dvd(e, a2, add(e, k_(e, 1), un(e, NX_OP_SQRT, add(e, k_(e, 1), a2))));
		nx_inst *r = un(e, NX_OP_LOG_PLUS_ONE, add(e, a, q));
		r = sel(e, cmp(e, a, k_(e, MATH_BIG_LOG), NX_CMP_GT), log2a(e, a), r);
		return sign_times(e, x, r);
	}
	case NX_OP_ACOSH: {
		nx_inst *t = sub(e, x, k_(e, 1));
		nx_inst *w = un(e, NX_OP_SQRT, add(e, mul(e, t, k_(e, 2)), mul(e, t, t)));
		nx_inst *r = un(e, NX_OP_LOG_PLUS_ONE, add(e, t, w));
		r = sel(e, cmp(e, x, k_(e, MATH_BIG_LOG), NX_CMP_GT), log2a(e, x), r);
		return nan_through(e, x, nan_if(e, cmp(e, x, k_(e, 1), NX_CMP_LT), r));
	}
	case NX_OP_ATANH: {
		nx_inst *q = dvd(e, mul(e, a, k_(e, 2)), sub(e, k_(e, 1), a));
		nx_inst *r = mul(e, un(e, NX_OP_LOG_PLUS_ONE, q), k_(e, 0.5));
		return sign_times(e, x, nan_if(e, cmp(e, a, k_(e, 1), NX_CMP_GT), r));
	}
	case NX_OP_ASIN:
	case NX_OP_ACOS: {
		nx_inst *w = un(e, NX_OP_SQRT, mul(e, sub(e, k_(e, 1), x), add(e, k_(e, 1), x)));
		nx_inst *r = op == NX_OP_ASIN ? atan2_f32(e, x, w) : atan2_f32(e, w, x);
		return nan_through(e, x, nan_if(e, cmp(e, a, k_(e, 1), NX_CMP_GT), r));
	}
	default: return NULL;
	}
}

static bool is_float_op(nx_opcode op)
{
	switch (op) {
	case NX_OP_TAN: case NX_OP_ATAN2: case NX_OP_CBRT: case NX_OP_SINH: case NX_OP_COSH:
	case NX_OP_ASINH: case NX_OP_ACOSH: case NX_OP_ATANH: case NX_OP_ASIN: case NX_OP_ACOS: return true;
	default: return false;
	}
}

static nx_inst *expand_float(nx_rw *rw, nx_inst *in)
{
	nx_type t = in->shape->type;
	if (t != NX_F32 && t != NX_BF16 && t != NX_F16)
		return NULL;
	for (int k = 0; k < in->noperands; k++)
		if (in->operands[k]->shape->type != t || in->operands[k]->shape->dynamic)
			return NULL;
	nx_inst *x = in->operands[0], *y = in->noperands > 1 ? in->operands[1] : NULL;
	if (t != NX_F32) {
		x = nx_rw_convert(rw, x, NX_F32);
		y = y ? nx_rw_convert(rw, y, NX_F32) : NULL;
	}
	mx e = {rw, x->shape};
	nx_inst *r = float_op(&e, in->op, x, y);
	if (t != NX_F32)
		r = nx_rw_convert(rw, r, t);
	r->shape = nx_shape_copy(nx_rw_arena(rw), in->shape);
	return r;
}

/* ----------------------------------------------------------- integers */

static nx_inst *ik(mx *e, uint64_t v) { return nx_rw_splat(e->rw, e->s, e->s->type, (double)v); }
static nx_inst *srl(mx *e, nx_inst *x, int n) { return bin(e, NX_OP_SHIFT_RIGHT_LOGICAL, x, ik(e, (uint64_t)n)); }
static nx_inst *and_(mx *e, nx_inst *x, uint64_t m) { return bin(e, NX_OP_AND, x, ik(e, m)); }

/* popcount of the w-bit values of x (w = 8, 16, 32) in x's type */
static nx_inst *popcnt_w(mx *e, nx_inst *x, int w)
{
	x = sub(e, x, and_(e, srl(e, x, 1), 0x55555555u & ((1ull << w) - 1)));
	x = add(e, and_(e, x, 0x33333333u & ((1ull << w) - 1)), and_(e, srl(e, x, 2), 0x33333333u & ((1ull << w) - 1)));
	x = and_(e, add(e, x, srl(e, x, 4)), 0x0f0f0f0fu & ((1ull << w) - 1));
	for (int s = 8; s < w; s *= 2)
		x = add(e, x, srl(e, x, s));
	return w > 8 ? and_(e, x, (uint64_t)(2 * w - 1)) : x;
}

static nx_inst *clz_w(mx *e, nx_inst *x, int w)
{
	for (int s = 1; s < w; s *= 2)
		x = bin(e, NX_OP_OR, x, srl(e, x, s));
	return sub(e, ik(e, (uint64_t)w), popcnt_w(e, x, w));
}

static nx_inst *expand_int(nx_rw *rw, nx_inst *in)
{
	nx_inst *x = in->operands[0];
	nx_type t = in->shape->type;
	nx_type_kind k = nx_type_kind_of(t);
	if ((k != NX_KIND_SINT && k != NX_KIND_UINT) || x->shape->type != t || x->shape->dynamic)
		return NULL;
	int w = nx_type_bits(t);
	mx e = {rw, x->shape};
	nx_inst *r;
	if (w == 64) {
		nx_inst *lo = nx_rw_convert(rw, x, NX_U32);
		nx_inst *hi = nx_rw_convert(rw, srl(&e, x, 32), NX_U32);
		mx e32 = {rw, lo->shape};
		nx_inst *h, *l;
		if (in->op == NX_OP_POPCNT) {
			r = add(&e32, popcnt_w(&e32, lo, 32), popcnt_w(&e32, hi, 32));
		} else {
			h = clz_w(&e32, hi, 32);
			l = add(&e32, clz_w(&e32, lo, 32), ik(&e32, 32));
			r = sel(&e32, cmp(&e32, hi, ik(&e32, 0), NX_CMP_EQ), l, h);
		}
		r = nx_rw_convert(rw, r, t);
	} else if (w == 8 || w == 16 || w == 32) {
		r = in->op == NX_OP_POPCNT ? popcnt_w(&e, x, w) : clz_w(&e, x, w);
	} else {
		return NULL;
	}
	r->shape = nx_shape_copy(nx_rw_arena(rw), in->shape);
	return r;
}

static nx_inst *expand(nx_rw *rw, nx_inst *in)
{
	if (!nx_shape_is_array(in->shape) || in->shape->dynamic)
		return NULL;
	if (is_float_op(in->op))
		return expand_float(rw, in);
	if (in->op == NX_OP_POPCNT || in->op == NX_OP_CLZ)
		return in->noperands == 1 ? expand_int(rw, in) : NULL;
	return NULL;
}

nx_status nx_pass_math_expand(nx_module *m, const nx_pass_ctx *ctx, bool *changed)
{
	return nx_rw_run(m, ctx, "math-expand", expand, NULL, changed);
}
