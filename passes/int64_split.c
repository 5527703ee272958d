/* passes/int64_split.c — exact 64-bit integer arithmetic for the device,
 * whose engines have no 64-bit integers (docs/numerics.md "64-bit integers").
 *
 * Every s64/u64 array value of the entry computation gets, on demand, one of
 * three 32-bit forms:
 *   narrow  an s32 value, when a range analysis proves the value fits
 *           (iota indices, constants, converts from narrower types and the
 *           arithmetic on them whose result range fits): the same op in s32;
 *   pair    two u32 values (lo, hi) with x = hi * 2^32 + lo: the arithmetic
 *           expanded into exact 32-bit integer ops (add with the carry from
 *           an unsigned compare, multiply from 16-bit partial products,
 *           shifts with XLA's out-of-range amounts, compares on the words);
 *   sat     an s32 value clamp(x, INT32_MIN, INT32_MAX): what a compare with
 *           a narrow value strictly inside that range, or an index of a
 *           gather/scatter/dynamic-slice (clamped or dropped by the op
 *           itself), needs; data movement (broadcast, reshape, ...) is done
 *           on it so a label broadcast against an iota stays one s32 compare.
 * The instructions that consume 64-bit values and give other types (compare,
 * convert, gather/scatter/dynamic-slice indices, rng-bit-generator's state,
 * the entry's outputs) are rewritten to use these forms; the 64-bit
 * instructions then die (dce). 64-bit parameters and outputs stay 64-bit (8
 * bytes per element in HBM): a parameter is read as bitcast-convert to
 * u32[...,2] (lo, hi), an output written as bitcast-convert of one.
 *
 * Reduces: add-reduce and add-reduce-window (cumsum) as s32 sums of 16- or
 * 8-bit limbs recombined as pairs; JAX's variadic arg-max/arg-min reduce ((value, index) with ties to
 * the first index) from s32 max/min reduces of the high then the low words
 * and a min-reduce of the matching indices. Divide/remainder: unrolled
 * 64-step restoring division on pairs.
 * An instruction this pass cannot expand (a reduce with another reducer, a
 * sort on s64, a convert to bf16 of a value that may not fit, ...) is left
 * as it is; the device type
 * check (passes/device_types.c) refuses it with its op and type, so nothing is
 * ever computed silently in 32 bits. Only the entry computation is rewritten. */
#include "passes/rewrite.h"

#include "ir/eval/eval.h"
#include "ir/map.h"
#include "ir/verify/shape_infer.h"

#include <stdlib.h>
#include <string.h>

/* the largest all-reduce group combined locally (an unrolled chain) */
enum { NX_I64_MAX_GROUP = 64 };

typedef struct rep {
	bool ranged, known, narrowable, has_pair;
	int64_t mn, mx;
	nx_inst *nar, *lo, *hi, *sat;
} rep;

typedef struct st {
	nx_rw *rw;
	nx_ptrmap map;
	nx_inst *dv_a, *dv_b, *dv[4]; /* the last divmod_pair */
	rep *r;
	int n, cap;
} st;

static bool is64(const nx_shape *s)
{
	return s && nx_shape_is_array(s) && (s->type == NX_S64 || s->type == NX_U64);
}

static rep *rep_of(st *S, const nx_inst *x)
{
	intptr_t k = nx_ptrmap_get(&S->map, x, -1);
	if (k < 0) {
		if (S->n == S->cap) {
			S->cap = S->cap ? 2 * S->cap : 64;
			S->r = realloc(S->r, sizeof *S->r * (size_t)S->cap);
		}
		memset(&S->r[S->n], 0, sizeof *S->r);
		k = S->n++;
		nx_ptrmap_put(&S->map, x, k);
	}
	return &S->r[k];
}

/* ------------------------------------------------------------- ranges */

static bool op_data(nx_opcode op)
{
	switch (op) {
	case NX_OP_BROADCAST: case NX_OP_RESHAPE: case NX_OP_TRANSPOSE: case NX_OP_SLICE: case NX_OP_COPY:
	case NX_OP_REVERSE: case NX_OP_BITCAST: case NX_OP_CONCATENATE: case NX_OP_PAD: case NX_OP_SELECT:
		return true;
	default:
		return false;
	}
}

static bool op_arith(nx_opcode op)
{
	switch (op) {
	case NX_OP_ADD: case NX_OP_SUBTRACT: case NX_OP_MULTIPLY: case NX_OP_NEGATE: case NX_OP_ABS:
	case NX_OP_MAXIMUM: case NX_OP_MINIMUM: case NX_OP_AND: case NX_OP_OR: case NX_OP_XOR: case NX_OP_NOT:
	case NX_OP_SHIFT_LEFT: case NX_OP_SHIFT_RIGHT_LOGICAL: case NX_OP_SHIFT_RIGHT_ARITHMETIC: case NX_OP_CLAMP:
		return true;
	default:
		return false;
	}
}

static bool type_range(nx_type t, int64_t *mn, int64_t *mx)
{
	switch (t) {
	case NX_PRED: *mn = 0, *mx = 1; return true;
	case NX_S8: *mn = INT8_MIN, *mx = INT8_MAX; return true;
	case NX_U8: *mn = 0, *mx = UINT8_MAX; return true;
	case NX_S16: *mn = INT16_MIN, *mx = INT16_MAX; return true;
	case NX_U16: *mn = 0, *mx = UINT16_MAX; return true;
	case NX_S32: *mn = INT32_MIN, *mx = INT32_MAX; return true;
	case NX_U32: *mn = 0, *mx = UINT32_MAX; return true;
	default: return false;
	}
}

static int64_t pow2_above(int64_t v) /* smallest 2^k - 1 >= v (v >= 0) */
{
	int64_t m = 0;
	while (m < v)
		m = m * 2 + 1;
	return m;
}

static bool fits32(const rep *r) { return r->known && r->mn >= INT32_MIN && r->mx <= INT32_MAX; }

static rep *range(st *S, const nx_inst *x);

/* the range of x, the union over its 64-bit operands for data movement */
static bool range_calc(st *S, const nx_inst *x, int64_t *mn, int64_t *mx)
{
	bool u = x->shape->type == NX_U64;
	switch (x->op) {
	case NX_OP_CONSTANT: {
		const nx_literal *l = x->a.literal;
		int64_t n = nx_shape_elems(x->shape);
		if (!l || n <= 0)
			return false;
		*mn = INT64_MAX, *mx = INT64_MIN;
		for (int64_t k = 0; k < n; k++) {
			if (u && nx_lit_get_u64(l, k) > (uint64_t)INT64_MAX)
				return false;
			int64_t v = nx_lit_get_i64(l, k);
			*mn = v < *mn ? v : *mn;
			*mx = v > *mx ? v : *mx;
		}
		return true;
	}
	case NX_OP_IOTA:
		*mn = 0;
		*mx = x->shape->dims[x->a.iota_dimension] - 1;
		return true;
	case NX_OP_CONVERT: {
		const nx_inst *o = x->operands[0];
		if (!is64(o->shape))
			return type_range(o->shape->type, mn, mx);
		rep *r = range(S, o);
		*mn = r->mn, *mx = r->mx;
		return r->known && (!u || r->mn >= 0);
	}
	default:
		break;
	}
	if (op_data(x->op)) {
		bool any = false;
		for (int k = 0; k < x->noperands; k++) {
			if (!is64(x->operands[k]->shape))
				continue;
			rep *r = range(S, x->operands[k]);
			if (!r->known)
				return false;
			*mn = any && *mn < r->mn ? *mn : r->mn;
			*mx = any && *mx > r->mx ? *mx : r->mx;
			any = true;
		}
		return any;
	}
	if (!op_arith(x->op))
		return false;
	/* copies: range() may move the array */
	rep ra = *range(S, x->operands[0]), rb = x->noperands > 1 ? *range(S, x->operands[1]) : ra;
	rep rc = x->noperands > 2 ? *range(S, x->operands[2]) : rb;
	rep *a = &ra, *b = &rb;
	if (!a->known || !b->known || !rc.known)
		return false;
	int64_t c[4];
	bool ovf = false;
	switch (x->op) {
	case NX_OP_ADD:
		ovf = __builtin_add_overflow(a->mn, b->mn, mn); /* both computed: no short circuit */
		ovf |= __builtin_add_overflow(a->mx, b->mx, mx);
		break;
	case NX_OP_SUBTRACT:
		ovf = __builtin_sub_overflow(a->mn, b->mx, mn);
		ovf |= __builtin_sub_overflow(a->mx, b->mn, mx);
		break;
	case NX_OP_MULTIPLY:
		ovf = __builtin_mul_overflow(a->mn, b->mn, &c[0]);
		ovf |= __builtin_mul_overflow(a->mn, b->mx, &c[1]);
		ovf |= __builtin_mul_overflow(a->mx, b->mn, &c[2]);
		ovf |= __builtin_mul_overflow(a->mx, b->mx, &c[3]);
		*mn = *mx = c[0];
		for (int k = 1; k < 4; k++) {
			*mn = c[k] < *mn ? c[k] : *mn;
			*mx = c[k] > *mx ? c[k] : *mx;
		}
		break;
	case NX_OP_NEGATE:
		ovf = a->mn == INT64_MIN;
		*mn = -a->mx, *mx = ovf ? 0 : -a->mn;
		break;
	case NX_OP_ABS:
		if (a->mn == INT64_MIN)
			return false;
		*mn = a->mn >= 0 ? a->mn : a->mx <= 0 ? -a->mx : 0;
		*mx = -a->mn > a->mx ? -a->mn : a->mx;
		break;
	case NX_OP_MAXIMUM:
		*mn = a->mn > b->mn ? a->mn : b->mn, *mx = a->mx > b->mx ? a->mx : b->mx;
		break;
	case NX_OP_MINIMUM:
		*mn = a->mn < b->mn ? a->mn : b->mn, *mx = a->mx < b->mx ? a->mx : b->mx;
		break;
	case NX_OP_NOT:
		if (u)
			return false;
		*mn = -a->mx - 1, *mx = -a->mn - 1;
		break;
	case NX_OP_AND:
		if (a->mn < 0 && b->mn < 0)
			return false;
		*mn = 0;
		*mx = a->mn >= 0 && b->mn >= 0 ? (a->mx < b->mx ? a->mx : b->mx) : a->mn >= 0 ? a->mx : b->mx;
		break;
	case NX_OP_OR: case NX_OP_XOR:
		if (a->mn < 0 || b->mn < 0)
			return false;
		*mn = 0, *mx = pow2_above(a->mx > b->mx ? a->mx : b->mx);
		break;
	case NX_OP_SHIFT_LEFT:
		if (a->mn < 0 || b->mn < 0 || b->mx > 62)
			return false;
		*mn = a->mn << b->mn;
		ovf = a->mx > (INT64_MAX >> b->mx);
		*mx = ovf ? 0 : a->mx << b->mx;
		break;
	case NX_OP_SHIFT_RIGHT_LOGICAL:
		if (a->mn < 0)
			return false;
		*mn = 0, *mx = a->mx;
		break;
	case NX_OP_SHIFT_RIGHT_ARITHMETIC:
		*mn = a->mn < 0 ? a->mn : 0, *mx = a->mx > 0 ? a->mx : 0;
		break;
	case NX_OP_CLAMP: { /* min(max(v, lo), hi) for clamp(lo, v, hi): monotone in each */
		int64_t l = b->mn > a->mn ? b->mn : a->mn, h = b->mx > a->mx ? b->mx : a->mx;
		*mn = l < rc.mn ? l : rc.mn, *mx = h < rc.mx ? h : rc.mx;
		break;
	}
	default:
		return false;
	}
	return !ovf && (!u || *mn >= 0);
}

static rep *range(st *S, const nx_inst *x)
{
	rep *r = rep_of(S, x);
	if (r->ranged)
		return r;
	r->ranged = true;
	int64_t mn = 0, mx = 0;
	bool known = range_calc(S, x, &mn, &mx);
	r = rep_of(S, x); /* the array may have moved */
	r->known = known, r->mn = mn, r->mx = mx;
	/* narrowable: fits s32 and computable in s32 from s32 operands */
	bool nar = fits32(r);
	if (nar && x->op != NX_OP_CONSTANT && x->op != NX_OP_IOTA &&
	    !(x->op == NX_OP_CONVERT && !is64(x->operands[0]->shape))) {
		if (!op_data(x->op) && !op_arith(x->op) && x->op != NX_OP_CONVERT)
			nar = false;
		for (int k = 0; nar && k < x->noperands; k++)
			if (is64(x->operands[k]->shape))
				nar = range(S, x->operands[k])->narrowable;
	}
	r = rep_of(S, x);
	r->narrowable = nar;
	return r;
}

/* ----------------------------------------------------------- builders */

static nx_shape *shp(st *S, const nx_shape *like, nx_type t)
{
	return nx_shape_array(nx_rw_arena(S->rw), t, like->rank, like->dims);
}

static nx_inst *clone(st *S, const nx_inst *x, nx_type t, nx_inst *const *ops)
{
	nx_inst *c = nx_rw_add(S->rw, x->op, shp(S, x->shape, t), ops, x->noperands, NULL);
	c->a = x->a;
	c->a.control_predecessors = NULL;
	c->a.ncontrol_predecessors = 0;
	return c;
}

static nx_inst *K(st *S, const nx_inst *like, nx_type t, double v)
{
	return nx_rw_splat(S->rw, like->shape, t, v);
}

static nx_inst *B(st *S, nx_opcode op, nx_inst *a, nx_inst *b) { return nx_rw_binary(S->rw, op, a, b); }
static nx_inst *U(st *S, nx_opcode op, nx_inst *a) { return nx_rw_unary(S->rw, op, a); }
static nx_inst *CV(st *S, nx_inst *a, nx_type t) { return nx_rw_convert(S->rw, a, t); }

static nx_inst *CMP(st *S, nx_inst *a, nx_inst *b, nx_cmp_dir d) { return nx_rw_compare(S->rw, a, b, d); }
static nx_inst *SEL(st *S, nx_inst *p, nx_inst *a, nx_inst *b) { return nx_rw_select(S->rw, p, a, b); }

static nx_inst *bitcast_to(st *S, nx_inst *x, nx_shape *s)
{
	return nx_rw_add(S->rw, NX_OP_BITCAST_CONVERT, s, &x, 1, NULL);
}

/* ------------------------------------------------------------ pairs */

static bool pair(st *S, nx_inst *x, nx_inst **lo, nx_inst **hi);
static nx_inst *narrow(st *S, nx_inst *x);
static nx_inst *sat(st *S, nx_inst *x);
static bool argred(st *S, nx_inst *x, nx_inst **vl, nx_inst **vh, nx_inst **idx);

/* (lo, hi) of a 64-bit instruction read as u32[..., 2] */
static void pair_of_source(st *S, nx_inst *x, nx_inst **lo, nx_inst **hi)
{
	const nx_shape *s = x->shape;
	int64_t d[NX_MAX_RANK];
	memcpy(d, s->dims, sizeof(int64_t) * (size_t)s->rank);
	d[s->rank] = 2;
	nx_arena *a = nx_rw_arena(S->rw);
	nx_inst *b = bitcast_to(S, x, nx_shape_array(a, NX_U32, s->rank + 1, d));
	for (int w = 0; w < 2; w++) {
		d[s->rank] = 1;
		nx_inst *sl = nx_rw_add(S->rw, NX_OP_SLICE, nx_shape_array(a, NX_U32, s->rank + 1, d), &b, 1, NULL);
		int64_t st0[NX_MAX_RANK], lim[NX_MAX_RANK], one[NX_MAX_RANK];
		for (int k = 0; k < s->rank; k++)
			st0[k] = 0, lim[k] = s->dims[k], one[k] = 1;
		st0[s->rank] = w, lim[s->rank] = w + 1, one[s->rank] = 1;
		sl->a.slice_start = nx_ivec_dup(a, st0, s->rank + 1);
		sl->a.slice_limit = nx_ivec_dup(a, lim, s->rank + 1);
		sl->a.slice_stride = nx_ivec_dup(a, one, s->rank + 1);
		nx_inst *r = nx_rw_reshape(S->rw, sl, s->rank, s->dims);
		*(w ? hi : lo) = r;
	}
}

/* x as its 64-bit type from (lo, hi) */
static nx_inst *join(st *S, nx_inst *x)
{
	nx_inst *lo, *hi, *ix;
	if (x->op == NX_OP_PARAMETER ||
	    (x->op == NX_OP_GET_TUPLE_ELEMENT && (x->operands[0]->op != NX_OP_REDUCE || !argred(S, x->operands[0], &lo, &hi, &ix))))
		return x;
	if (!pair(S, x, &lo, &hi))
		return NULL;
	const nx_shape *s = x->shape;
	int64_t d[NX_MAX_RANK];
	memcpy(d, s->dims, sizeof(int64_t) * (size_t)s->rank);
	d[s->rank] = 1;
	nx_inst *w[2] = {nx_rw_reshape(S->rw, lo, s->rank + 1, d), nx_rw_reshape(S->rw, hi, s->rank + 1, d)};
	d[s->rank] = 2;
	nx_arena *a = nx_rw_arena(S->rw);
	nx_inst *c = nx_rw_add(S->rw, NX_OP_CONCATENATE, nx_shape_array(a, NX_U32, s->rank + 1, d), w, 2, NULL);
	int64_t cd = s->rank;
	c->a.dimensions = nx_ivec_dup(a, &cd, 1);
	c->a.has_dimensions = true;
	return bitcast_to(S, c, shp(S, s, s->type));
}

/* 64-bit compare of pairs */
static nx_inst *cmp_pair(st *S, nx_inst *al, nx_inst *ah, nx_inst *bl, nx_inst *bh, nx_cmp_dir d, bool sign)
{
	if (d == NX_CMP_EQ)
		return B(S, NX_OP_AND, CMP(S, al, bl, d), CMP(S, ah, bh, d));
	if (d == NX_CMP_NE)
		return B(S, NX_OP_OR, CMP(S, al, bl, d), CMP(S, ah, bh, d));
	nx_inst *h1 = sign ? CV(S, ah, NX_S32) : ah, *h2 = sign ? CV(S, bh, NX_S32) : bh;
	nx_cmp_dir strict = d == NX_CMP_LT || d == NX_CMP_LE ? NX_CMP_LT : NX_CMP_GT;
	nx_inst *hs = CMP(S, h1, h2, strict), *he = CMP(S, ah, bh, NX_CMP_EQ), *ls = CMP(S, al, bl, d);
	return B(S, NX_OP_OR, hs, B(S, NX_OP_AND, he, ls));
}

/* full 32x32 -> 64 unsigned product from 16-bit halves */
static void mul32(st *S, nx_inst *a, nx_inst *b, nx_inst **lo, nx_inst **hi)
{
	nx_inst *m = K(S, a, NX_U32, 65535), *s16 = K(S, a, NX_U32, 16);
	nx_inst *a0 = B(S, NX_OP_AND, a, m), *a1 = B(S, NX_OP_SHIFT_RIGHT_LOGICAL, a, s16);
	nx_inst *b0 = B(S, NX_OP_AND, b, m), *b1 = B(S, NX_OP_SHIFT_RIGHT_LOGICAL, b, s16);
	nx_inst *p00 = B(S, NX_OP_MULTIPLY, a0, b0), *p01 = B(S, NX_OP_MULTIPLY, a0, b1);
	nx_inst *p10 = B(S, NX_OP_MULTIPLY, a1, b0), *p11 = B(S, NX_OP_MULTIPLY, a1, b1);
	nx_inst *mid = B(S, NX_OP_ADD, B(S, NX_OP_ADD, B(S, NX_OP_SHIFT_RIGHT_LOGICAL, p00, s16), B(S, NX_OP_AND, p01, m)),
	                 B(S, NX_OP_AND, p10, m));
	*lo = B(S, NX_OP_OR, B(S, NX_OP_SHIFT_LEFT, mid, s16), B(S, NX_OP_AND, p00, m));
	nx_inst *h = B(S, NX_OP_ADD, p11, B(S, NX_OP_SHIFT_RIGHT_LOGICAL, p01, s16));
	h = B(S, NX_OP_ADD, h, B(S, NX_OP_SHIFT_RIGHT_LOGICAL, p10, s16));
	*hi = B(S, NX_OP_ADD, h, B(S, NX_OP_SHIFT_RIGHT_LOGICAL, mid, s16));
}

static void neg_pair(st *S, nx_inst *l, nx_inst *h, nx_inst **ol, nx_inst **oh)
{
	nx_inst *z = K(S, l, NX_U32, 0);
	*ol = B(S, NX_OP_SUBTRACT, z, l);
	nx_inst *bw = CV(S, CMP(S, l, z, NX_CMP_NE), NX_U32);
	*oh = B(S, NX_OP_SUBTRACT, B(S, NX_OP_SUBTRACT, z, h), bw);
}

static void sel_pair(st *S, nx_inst *p, nx_inst *al, nx_inst *ah, nx_inst *bl, nx_inst *bh, nx_inst **ol,
                     nx_inst **oh)
{
	*ol = SEL(S, p, al, bl);
	*oh = SEL(S, p, ah, bh);
}

/* shifts: amounts are the low word n (the high word only decides "huge") */
static void shift_pair(st *S, nx_opcode op, nx_inst *l, nx_inst *h, nx_inst *nl, nx_inst *nh, nx_inst **ol,
                       nx_inst **oh)
{
	nx_inst *c32 = K(S, l, NX_U32, 32), *z = K(S, l, NX_U32, 0);
	nx_inst *n = nl, *m = B(S, NX_OP_SUBTRACT, c32, n), *k = B(S, NX_OP_SUBTRACT, n, c32);
	nx_inst *big = CMP(S, nh, z, NX_CMP_NE);
	nx_inst *rl, *rh, *fill = z;
	if (op == NX_OP_SHIFT_LEFT) {
		rl = B(S, NX_OP_SHIFT_LEFT, l, n);
		rh = B(S, NX_OP_OR, B(S, NX_OP_OR, B(S, NX_OP_SHIFT_LEFT, h, n), B(S, NX_OP_SHIFT_RIGHT_LOGICAL, l, m)),
		       B(S, NX_OP_SHIFT_LEFT, l, k));
	} else if (op == NX_OP_SHIFT_RIGHT_LOGICAL) {
		rh = B(S, NX_OP_SHIFT_RIGHT_LOGICAL, h, n);
		rl = B(S, NX_OP_OR, B(S, NX_OP_OR, B(S, NX_OP_SHIFT_RIGHT_LOGICAL, l, n), B(S, NX_OP_SHIFT_LEFT, h, m)),
		       B(S, NX_OP_SHIFT_RIGHT_LOGICAL, h, k));
	} else {
		nx_inst *hs = CV(S, h, NX_S32);
		rh = CV(S, B(S, NX_OP_SHIFT_RIGHT_ARITHMETIC, hs, CV(S, n, NX_S32)), NX_U32);
		nx_inst *small = B(S, NX_OP_OR, B(S, NX_OP_SHIFT_RIGHT_LOGICAL, l, n), B(S, NX_OP_SHIFT_LEFT, h, m));
		nx_inst *large = CV(S, B(S, NX_OP_SHIFT_RIGHT_ARITHMETIC, hs, CV(S, k, NX_S32)), NX_U32);
		rl = SEL(S, CMP(S, n, c32, NX_CMP_LT), small, large);
		fill = CV(S, B(S, NX_OP_SHIFT_RIGHT_ARITHMETIC, hs, K(S, hs, NX_S32, 31)), NX_U32);
	}
	*ol = SEL(S, big, fill, rl);
	*oh = SEL(S, big, fill, rh);
}

/* f32 (any float but f64) -> s64/u64: saturating truncation, NaN -> 0 */
static void from_float(st *S, nx_inst *x, bool sign, nx_inst **ol, nx_inst **oh)
{
	if (x->shape->type != NX_F32)
		x = CV(S, x, NX_F32);
	nx_inst *a = U(S, NX_OP_ABS, x);
	nx_inst *h = CV(S, B(S, NX_OP_MULTIPLY, a, K(S, a, NX_F32, 0x1p-32)), NX_U32);
	nx_inst *lf = B(S, NX_OP_SUBTRACT, a, B(S, NX_OP_MULTIPLY, CV(S, h, NX_F32), K(S, a, NX_F32, 0x1p32)));
	nx_inst *l = CV(S, lf, NX_U32), *z = K(S, l, NX_U32, 0), *ones = K(S, l, NX_U32, 4294967295.0);
	if (sign) {
		nx_inst *nl, *nh;
		neg_pair(S, l, h, &nl, &nh);
		nx_inst *neg = CMP(S, x, K(S, x, NX_F32, 0), NX_CMP_LT);
		sel_pair(S, neg, nl, nh, l, h, &l, &h);
		nx_inst *hi = CMP(S, x, K(S, x, NX_F32, 0x1p63), NX_CMP_GE);
		sel_pair(S, hi, ones, K(S, l, NX_U32, 2147483647.0), l, h, &l, &h);
		nx_inst *lo = CMP(S, x, K(S, x, NX_F32, -0x1p63), NX_CMP_LT);
		sel_pair(S, lo, z, K(S, l, NX_U32, 2147483648.0), l, h, ol, oh);
	} else {
		nx_inst *neg = CMP(S, x, K(S, x, NX_F32, 0), NX_CMP_LE);
		sel_pair(S, neg, z, z, l, h, &l, &h);
		nx_inst *big = CMP(S, x, K(S, x, NX_F32, 0x1p64), NX_CMP_GE);
		sel_pair(S, big, ones, ones, l, h, ol, oh);
	}
}

/* s64/u64 pair -> f32, rounded to nearest even once: the magnitude shifted
 * right by sh (the high word's bit length, from the exponent of f32(hi >> 1),
 * at most one too many) into 31-32 bits with a sticky bit, converted, scaled
 * by 2^sh */
static nx_inst *to_float(st *S, nx_inst *l, nx_inst *h, bool sign)
{
	nx_inst *neg = NULL;
	if (sign) {
		neg = CMP(S, CV(S, h, NX_S32), K(S, h, NX_S32, 0), NX_CMP_LT);
		nx_inst *nl, *nh;
		neg_pair(S, l, h, &nl, &nh);
		sel_pair(S, neg, nl, nh, l, h, &l, &h);
	}
	nx_inst *one = K(S, l, NX_U32, 1), *c32 = K(S, l, NX_U32, 32), *z = K(S, l, NX_U32, 0);
	nx_inst *h2 = B(S, NX_OP_SHIFT_RIGHT_LOGICAL, h, one);
	nx_inst *fb = bitcast_to(S, CV(S, h2, NX_F32), shp(S, h->shape, NX_U32));
	nx_inst *e = B(S, NX_OP_AND, B(S, NX_OP_SHIFT_RIGHT_LOGICAL, fb, K(S, l, NX_U32, 23)), K(S, l, NX_U32, 255));
	nx_inst *e2 = B(S, NX_OP_SUBTRACT, e, K(S, l, NX_U32, 125));
	nx_inst *sh = SEL(S, CMP(S, h2, z, NX_CMP_EQ), h, B(S, NX_OP_MINIMUM, e2, c32));
	nx_inst *w = B(S, NX_OP_OR, B(S, NX_OP_SHIFT_RIGHT_LOGICAL, l, sh),
	               B(S, NX_OP_SHIFT_LEFT, h, B(S, NX_OP_SUBTRACT, c32, sh)));
	nx_inst *mask = B(S, NX_OP_SUBTRACT, B(S, NX_OP_SHIFT_LEFT, one, sh), one);
	nx_inst *sticky = CV(S, CMP(S, B(S, NX_OP_AND, l, mask), z, NX_CMP_NE), NX_U32);
	w = B(S, NX_OP_OR, w, sticky);
	nx_inst *p2 = bitcast_to(S, B(S, NX_OP_SHIFT_LEFT, B(S, NX_OP_ADD, sh, K(S, l, NX_U32, 127)), K(S, l, NX_U32, 23)),
	                         shp(S, h->shape, NX_F32));
	nx_inst *r = B(S, NX_OP_MULTIPLY, CV(S, w, NX_F32), p2);
	return sign ? SEL(S, neg, U(S, NX_OP_NEGATE, r), r) : r;
}

/* (lo, hi) of op(a, b) for the binary ops a reducer may apply; false for
 * any other op */
static bool bin_pair(st *S, nx_opcode op, bool sign, nx_inst *al, nx_inst *ah, nx_inst *bl, nx_inst *bh,
                     nx_inst **lo, nx_inst **hi)
{
	switch (op) {
	case NX_OP_ADD: {
		*lo = B(S, NX_OP_ADD, al, bl);
		nx_inst *c = CV(S, CMP(S, *lo, al, NX_CMP_LT), NX_U32);
		*hi = B(S, NX_OP_ADD, B(S, NX_OP_ADD, ah, bh), c);
		return true;
	}
	case NX_OP_SUBTRACT: {
		*lo = B(S, NX_OP_SUBTRACT, al, bl);
		nx_inst *bw = CV(S, CMP(S, al, bl, NX_CMP_LT), NX_U32);
		*hi = B(S, NX_OP_SUBTRACT, B(S, NX_OP_SUBTRACT, ah, bh), bw);
		return true;
	}
	case NX_OP_MULTIPLY: {
		nx_inst *h;
		mul32(S, al, bl, lo, &h);
		*hi = B(S, NX_OP_ADD, B(S, NX_OP_ADD, h, B(S, NX_OP_MULTIPLY, al, bh)), B(S, NX_OP_MULTIPLY, ah, bl));
		return true;
	}
	case NX_OP_AND: case NX_OP_OR: case NX_OP_XOR:
		*lo = B(S, op, al, bl);
		*hi = B(S, op, ah, bh);
		return true;
	case NX_OP_MAXIMUM: case NX_OP_MINIMUM: {
		nx_inst *lt = cmp_pair(S, al, ah, bl, bh, NX_CMP_LT, sign);
		if (op == NX_OP_MINIMUM)
			sel_pair(S, lt, al, ah, bl, bh, lo, hi);
		else
			sel_pair(S, lt, bl, bh, al, ah, lo, hi);
		return true;
	}
	default:
		return false;
	}
}

/* all-reduce of a 64-bit array (docs/numerics.md "64-bit integers"): the
 * group's words are gathered as u32 (all-gather of [1, 2, dims...] on a new
 * outer dimension, same replica groups) and combined locally, rank after rank
 * in group order, with the pair arithmetic of the reducer's op (add,
 * multiply, maximum, minimum, and, or: nx_pass_reducer_op). The group size
 * comes from the replica groups or the module's replica_count (`--ranks`).
 * False (device_types then refuses the all-reduce) for another reducer, a
 * tuple all-reduce or a group of more than NX_I64_MAX_GROUP ranks. */
static bool all_reduce_pair(st *S, nx_inst *x, nx_inst *l, nx_inst *h, nx_inst **lo, nx_inst **hi)
{
	nx_opcode op = x->ncalled == 1 ? nx_pass_reducer_op(x->called[0]) : NX_OP_COUNT;
	/* 0: no replica_count and no groups, one replica (nx_lower_replicas) */
	int64_t g = nx_collective_group_size(x);
	const nx_shape *s = x->shape;
	if (x->noperands != 1 || op == NX_OP_COUNT || g < 0 || g > NX_I64_MAX_GROUP || s->rank + 2 > NX_MAX_RANK)
		return false;
	if (g <= 1) {
		*lo = l, *hi = h;
		return true;
	}
	nx_arena *a = nx_rw_arena(S->rw);
	int r = s->rank;
	int64_t d[NX_MAX_RANK], st0[NX_MAX_RANK], lim[NX_MAX_RANK], one[NX_MAX_RANK];
	d[0] = d[1] = 1;
	for (int k = 0; k < r; k++)
		d[k + 2] = s->dims[k];
	nx_inst *w[2] = {nx_rw_reshape(S->rw, l, r + 2, d), nx_rw_reshape(S->rw, h, r + 2, d)};
	d[1] = 2;
	nx_inst *c = nx_rw_add(S->rw, NX_OP_CONCATENATE, nx_shape_array(a, NX_U32, r + 2, d), w, 2, NULL);
	int64_t cd = 1, gd = 0;
	c->a.dimensions = nx_ivec_dup(a, &cd, 1);
	c->a.has_dimensions = true;
	d[0] = g;
	nx_inst *ag = nx_rw_add(S->rw, NX_OP_ALL_GATHER, nx_shape_array(a, NX_U32, r + 2, d), &c, 1, NULL);
	ag->a.dimensions = nx_ivec_dup(a, &gd, 1);
	ag->a.has_dimensions = true;
	ag->a.replica_groups = x->a.replica_groups;
	ag->a.channel_id = x->a.channel_id;
	ag->a.use_global_device_ids = x->a.use_global_device_ids;
	for (int k = 0; k < r + 2; k++)
		st0[k] = 0, lim[k] = d[k], one[k] = 1;
	d[0] = d[1] = 1;
	nx_inst *al = NULL, *ah = NULL;
	for (int64_t k = 0; k < g; k++) {
		nx_inst *wk[2];
		for (int j = 0; j < 2; j++) {
			st0[0] = k, lim[0] = k + 1, st0[1] = j, lim[1] = j + 1;
			nx_inst *sl = nx_rw_add(S->rw, NX_OP_SLICE, nx_shape_array(a, NX_U32, r + 2, d), &ag, 1, NULL);
			sl->a.slice_start = nx_ivec_dup(a, st0, r + 2);
			sl->a.slice_limit = nx_ivec_dup(a, lim, r + 2);
			sl->a.slice_stride = nx_ivec_dup(a, one, r + 2);
			wk[j] = nx_rw_reshape(S->rw, sl, r, s->dims);
		}
		if (k == 0)
			al = wk[0], ah = wk[1];
		else if (!bin_pair(S, op, s->type == NX_S64, al, ah, wk[0], wk[1], &al, &ah))
			return false;
	}
	*lo = al, *hi = ah;
	return true;
}

/* ------------------------------------------------------------ reduces */

/* the pair (v << p, v >> (64 - p)) of a u32 v placed at bit p (0 <= p < 64) */
static void place(st *S, nx_inst *v, int p, nx_inst **lo, nx_inst **hi)
{
	nx_inst *z = K(S, v, NX_U32, 0);
	if (p == 0) {
		*lo = v, *hi = z;
	} else if (p < 32) {
		*lo = B(S, NX_OP_SHIFT_LEFT, v, K(S, v, NX_U32, p));
		*hi = B(S, NX_OP_SHIFT_RIGHT_LOGICAL, v, K(S, v, NX_U32, 32 - p));
	} else {
		*lo = z;
		*hi = p == 32 ? v : B(S, NX_OP_SHIFT_LEFT, v, K(S, v, NX_U32, p - 32));
	}
}

/* a scalar pair broadcast to shape like */
static void bcast_pair(st *S, const nx_shape *like, nx_inst **lo, nx_inst **hi)
{
	int64_t none[1] = {0};
	if ((*lo)->shape->rank == like->rank)
		return;
	*lo = nx_rw_broadcast(S->rw, *lo, NX_U32, like->rank, like->dims, none);
	*hi = nx_rw_broadcast(S->rw, *hi, NX_U32, like->rank, like->dims, none);
}

/* elements each output of reduce / reduce-window x combines */
static int64_t reduced_count(const nx_inst *x)
{
	int64_t n = 1;
	if (x->op == NX_OP_REDUCE_WINDOW)
		for (int k = 0; k < x->a.window.ndims; k++)
			n *= x->a.window.dims[k].size;
	else
		for (int k = 0; k < x->a.dimensions.n; k++)
			n *= x->operands[0]->shape->dims[x->a.dimensions.v[k]];
	return n;
}

/* the s32 add-reduce (reduce) or add-reduce-window of limb, init 0 */
static nx_inst *limb_sum(st *S, const nx_inst *x, nx_inst *limb, nx_inst *z)
{
	if (x->op == NX_OP_REDUCE)
		return nx_rw_reduce(S->rw, limb, z, x->a.dimensions.v, x->a.dimensions.n, NX_OP_ADD);
	/* the s32 add computation of nx_rw_reduce (this reduce over no
	 * dimensions is dead) */
	nx_inst *any = nx_rw_reduce(S->rw, limb, z, NULL, 0, NX_OP_ADD), *ops[2] = {limb, z};
	nx_inst *w = clone(S, x, NX_S32, ops);
	nx_inst_set_called(w, any->called, 1);
	return w;
}

/* add-reduce or add-reduce-window (init 0: padding adds nothing; JAX's
 * cumsum) of a 64-bit array (docs/numerics.md "64-bit integers"): the
 * words are cut into w-bit limbs (w = 16 for up to 2^15 elements per output,
 * w = 8 up to 2^23), each limb add-reduced in s32 (exact: the sum stays below
 * 2^31), and the limb sums placed at their bit offsets and added as pairs
 * (mod 2^64, as XLA wraps), plus a reduce's init value once. */
static bool reduce_add_pair(st *S, nx_inst *x, nx_inst **lo, nx_inst **hi)
{
	int64_t n = reduced_count(x);
	int w = n <= 32767 ? 16 : n <= 8421504 ? 8 : 0;
	nx_inst *wl, *wh, *il, *ih;
	if (x->op == NX_OP_REDUCE_WINDOW && !nx_rw_is_splat(x->operands[1], 0))
		return false;
	if (!w || !pair(S, x->operands[0], &wl, &wh) || !pair(S, x->operands[1], &il, &ih))
		return false;
	bcast_pair(S, x->shape, &il, &ih);
	nx_inst *al = il, *ah = ih, *z = nx_rw_scalar(S->rw, NX_S32, 0);
	for (int p = 0; p < 64; p += w) {
		nx_inst *word = p < 32 ? wl : wh;
		nx_inst *limb = p % 32 ? B(S, NX_OP_SHIFT_RIGHT_LOGICAL, word, K(S, word, NX_U32, p % 32)) : word;
		limb = B(S, NX_OP_AND, limb, K(S, limb, NX_U32, (1 << w) - 1));
		nx_inst *r = limb_sum(S, x, CV(S, limb, NX_S32), z);
		nx_inst *pl, *ph;
		place(S, CV(S, r, NX_U32), p, &pl, &ph);
		bin_pair(S, NX_OP_ADD, false, al, ah, pl, ph, &al, &ah);
	}
	*lo = al, *hi = ah;
	return true;
}

static bool is_param(const nx_inst *x, int k) { return x->op == NX_OP_PARAMETER && x->a.parameter_number == k; }

/* compare(p[a], p[b]) with direction d, either operand order */
static bool is_cmp(const nx_inst *x, int a, int b, nx_cmp_dir d)
{
	if (x->op != NX_OP_COMPARE)
		return false;
	const nx_inst *u = x->operands[0], *v = x->operands[1];
	if (is_param(u, a) && is_param(v, b))
		return x->a.direction == d;
	nx_cmp_dir r = d == NX_CMP_GT ? NX_CMP_LT : d == NX_CMP_LT ? NX_CMP_GT : d;
	return is_param(u, b) && is_param(v, a) && x->a.direction == r;
}

static bool is_bin(const nx_inst *x, nx_opcode op, const nx_inst **a, const nx_inst **b)
{
	if (x->op != op || x->noperands != 2)
		return false;
	*a = x->operands[0], *b = x->operands[1];
	return true;
}

/* the reducer of an arg-max (d = GT) / arg-min (d = LT) with ties to the
 * first index, as JAX writes it:
 *   (select(c, v0, v1), select(or(c, and(eq(v0, v1), lt(i0, i1))), i0, i1))
 * with c = compare(v0, v1, d) and params (v0, i0, v1, i1) */
static bool argred_reducer(const nx_comp *c, nx_cmp_dir *dir)
{
	const nx_inst *t = c->root, *a, *b;
	if (c->nparams != 4 || t->op != NX_OP_TUPLE || t->noperands != 2)
		return false;
	const nx_inst *sv = t->operands[0], *si = t->operands[1];
	if (sv->op != NX_OP_SELECT || si->op != NX_OP_SELECT || !is_param(sv->operands[1], 0) ||
	    !is_param(sv->operands[2], 2) || !is_param(si->operands[1], 1) || !is_param(si->operands[2], 3))
		return false;
	const nx_inst *cv = sv->operands[0];
	nx_cmp_dir d = is_cmp(cv, 0, 2, NX_CMP_GT) ? NX_CMP_GT : is_cmp(cv, 0, 2, NX_CMP_LT) ? NX_CMP_LT : NX_CMP_EQ;
	if (d == NX_CMP_EQ || !is_bin(si->operands[0], NX_OP_OR, &a, &b))
		return false;
	if (b == cv)
		b = a, a = cv;
	const nx_inst *e, *l;
	if (a != cv || !is_bin(b, NX_OP_AND, &e, &l))
		return false;
	if (!is_cmp(e, 0, 2, NX_CMP_EQ))
		e = l, l = b->operands[0];
	if (!is_cmp(e, 0, 2, NX_CMP_EQ) || !is_cmp(l, 1, 3, NX_CMP_LT))
		return false;
	*dir = d;
	return true;
}

/* the s32 order key of a word: signed high word as is, others biased */
static nx_inst *key(st *S, nx_inst *w, bool sign)
{
	return CV(S, sign ? w : B(S, NX_OP_XOR, w, K(S, w, NX_U32, 2147483648.0)), NX_S32);
}

static nx_inst *unkey(st *S, nx_inst *k, bool sign)
{
	nx_inst *w = CV(S, k, NX_U32);
	return sign ? w : B(S, NX_OP_XOR, w, K(S, w, NX_U32, 2147483648.0));
}

/* broadcast of a reduce result r back over the operand shape of reduce x */
static nx_inst *unreduce(st *S, const nx_inst *x, nx_inst *r)
{
	const nx_shape *s = x->operands[0]->shape;
	int64_t bd[NX_MAX_RANK];
	int n = 0;
	for (int k = 0; k < s->rank; k++) {
		bool red = false;
		for (int j = 0; j < x->a.dimensions.n; j++)
			red |= x->a.dimensions.v[j] == k;
		if (!red)
			bd[n++] = k;
	}
	return nx_rw_broadcast(S->rw, r, r->shape->type, s->rank, s->dims, bd);
}

/* arg-max/arg-min reduce x = reduce(v, i, v0, i0) of a 64-bit v, i narrowable
 * (an iota), v0 the identity (the type's minimum for arg-max, maximum for
 * arg-min): the extreme high word key Mh (max/min reduce in s32), then the
 * extreme low word key Ml among the elements whose high word is Mh, then
 * the smallest index among the elements equal to (Mh, Ml); i0 competes only
 * when the extreme is v0 itself. Sets the value's pair and the s32 index. */
static bool argred(st *S, nx_inst *x, nx_inst **vl, nx_inst **vh, nx_inst **idx)
{
	rep *r = rep_of(S, x);
	if (r->has_pair) {
		*vl = r->lo, *vh = r->hi, *idx = r->nar;
		return true;
	}
	nx_cmp_dir d;
	if (x->op != NX_OP_REDUCE || x->noperands != 4 || x->ncalled != 1 || !argred_reducer(x->called[0], &d) ||
	    !is64(x->operands[0]->shape))
		return false;
	nx_inst *v = x->operands[0], *i = x->operands[1], *v0 = x->operands[2], *i0 = x->operands[3];
	bool sign = v->shape->type == NX_S64, mx = d == NX_CMP_GT;
	const nx_literal *l0 = v0->op == NX_OP_CONSTANT ? v0->a.literal : NULL;
	uint64_t want = sign ? (mx ? (uint64_t)INT64_MIN : (uint64_t)INT64_MAX) : (mx ? 0 : UINT64_MAX);
	if (!l0 || nx_lit_get_u64(l0, 0) != want)
		return false;
	nx_inst *ni = is64(i->shape) ? (range(S, i)->narrowable ? narrow(S, i) : NULL) : i;
	nx_inst *n0 = is64(i0->shape) ? (range(S, i0)->narrowable ? narrow(S, i0) : NULL) : i0;
	nx_inst *wl, *wh;
	if (!ni || !n0 || ni->shape->type != NX_S32 || !pair(S, v, &wl, &wh))
		return false;
	nx_opcode op = mx ? NX_OP_MAXIMUM : NX_OP_MINIMUM;
	double ext = mx ? INT32_MIN : INT32_MAX;
	nx_inst *e = nx_rw_scalar(S->rw, NX_S32, ext);
	const int64_t *dims = x->a.dimensions.v;
	int nd = x->a.dimensions.n;
	nx_inst *kh = key(S, wh, sign), *kl = key(S, wl, false);
	nx_inst *mh = nx_rw_reduce(S->rw, kh, e, dims, nd, op);
	nx_inst *onh = CMP(S, kh, unreduce(S, x, mh), NX_CMP_EQ);
	nx_inst *ml = nx_rw_reduce(S->rw, SEL(S, onh, kl, K(S, kl, NX_S32, ext)), e, dims, nd, op);
	nx_inst *hit = B(S, NX_OP_AND, onh, CMP(S, kl, unreduce(S, x, ml), NX_CMP_EQ));
	nx_inst *big = nx_rw_scalar(S->rw, NX_S32, INT32_MAX);
	nx_inst *ri = nx_rw_reduce(S->rw, SEL(S, hit, ni, K(S, ni, NX_S32, INT32_MAX)), big, dims, nd, NX_OP_MINIMUM);
	int64_t none[1] = {0};
	nx_inst *b0 = nx_rw_broadcast(S->rw, n0, NX_S32, ri->shape->rank, ri->shape->dims, none);
	nx_inst *at = B(S, NX_OP_AND, CMP(S, mh, K(S, mh, NX_S32, ext), NX_CMP_EQ),
	                CMP(S, ml, K(S, ml, NX_S32, ext), NX_CMP_EQ));
	*idx = SEL(S, at, B(S, NX_OP_MINIMUM, ri, b0), ri);
	*vh = unkey(S, mh, sign), *vl = unkey(S, ml, false);
	r = rep_of(S, x);
	r->lo = *vl, r->hi = *vh, r->nar = *idx, r->has_pair = true;
	return true;
}

/* ------------------------------------------------------------ divide */

/* quotient and remainder of 64-bit a / b (docs/numerics.md "64-bit
 * integers"): restoring long division of the magnitudes, unrolled over the
 * 64 bits, the (r, q) register shifted left one bit per step and d
 * subtracted where r >= d (or a bit fell out of r); then XLA's signs (the
 * quotient truncates toward zero, the remainder has the dividend's sign) and
 * its division by zero (quotient -1 / all ones, remainder the dividend).
 * The last pair of operands is kept: div and rem of the same operands share
 * the work. */
static bool divmod_pair(st *S, nx_inst *a, nx_inst *b, nx_inst **w)
{
	if (S->dv_a == a && S->dv_b == b) {
		memcpy(w, S->dv, sizeof S->dv);
		return true;
	}
	nx_inst *nl, *nh, *dl, *dh;
	if (!pair(S, a, &nl, &nh) || !pair(S, b, &dl, &dh))
		return false;
	bool sign = a->shape->type == NX_S64;
	nx_inst *z = K(S, nl, NX_U32, 0), *one = K(S, nl, NX_U32, 1), *c31 = K(S, nl, NX_U32, 31);
	nx_inst *na = NULL, *nb = NULL, *xl, *xh;
	if (sign) {
		na = CMP(S, CV(S, nh, NX_S32), K(S, nh, NX_S32, 0), NX_CMP_LT);
		nb = CMP(S, CV(S, dh, NX_S32), K(S, dh, NX_S32, 0), NX_CMP_LT);
		neg_pair(S, nl, nh, &xl, &xh);
		sel_pair(S, na, xl, xh, nl, nh, &nl, &nh);
		neg_pair(S, dl, dh, &xl, &xh);
		sel_pair(S, nb, xl, xh, dl, dh, &dl, &dh);
	}
	nx_inst *rl = z, *rh = z, *ql = nl, *qh = nh;
	for (int k = 0; k < 64; k++) {
		nx_inst *out = CMP(S, B(S, NX_OP_SHIFT_RIGHT_LOGICAL, rh, c31), z, NX_CMP_NE);
		rh = B(S, NX_OP_OR, B(S, NX_OP_SHIFT_LEFT, rh, one), B(S, NX_OP_SHIFT_RIGHT_LOGICAL, rl, c31));
		rl = B(S, NX_OP_OR, B(S, NX_OP_SHIFT_LEFT, rl, one), B(S, NX_OP_SHIFT_RIGHT_LOGICAL, qh, c31));
		qh = B(S, NX_OP_OR, B(S, NX_OP_SHIFT_LEFT, qh, one), B(S, NX_OP_SHIFT_RIGHT_LOGICAL, ql, c31));
		ql = B(S, NX_OP_SHIFT_LEFT, ql, one);
		nx_inst *ge = B(S, NX_OP_OR, out, cmp_pair(S, rl, rh, dl, dh, NX_CMP_GE, false)), *sl, *sh;
		bin_pair(S, NX_OP_SUBTRACT, false, rl, rh, dl, dh, &sl, &sh);
		sel_pair(S, ge, sl, sh, rl, rh, &rl, &rh);
		ql = B(S, NX_OP_OR, ql, CV(S, ge, NX_U32));
	}
	if (sign) {
		nx_inst *dz = cmp_pair(S, dl, dh, z, z, NX_CMP_EQ, false);
		neg_pair(S, ql, qh, &xl, &xh);
		sel_pair(S, B(S, NX_OP_XOR, na, nb), xl, xh, ql, qh, &ql, &qh);
		nx_inst *m1 = K(S, nl, NX_U32, 4294967295.0);
		sel_pair(S, dz, m1, m1, ql, qh, &ql, &qh);
		neg_pair(S, rl, rh, &xl, &xh);
		sel_pair(S, na, xl, xh, rl, rh, &rl, &rh);
	}
	S->dv_a = a, S->dv_b = b;
	S->dv[0] = w[0] = ql, S->dv[1] = w[1] = qh, S->dv[2] = w[2] = rl, S->dv[3] = w[3] = rh;
	return true;
}

/* the (lo, hi) words of a 64-bit value; false when the op is not expanded */
static bool pair_calc(st *S, nx_inst *x, nx_inst **lo, nx_inst **hi)
{
	bool sign = x->shape->type == NX_S64;
	rep *r = range(S, x);
	if (r->narrowable && x->op != NX_OP_CONSTANT) {
		nx_inst *n = narrow(S, x);
		*lo = CV(S, n, NX_U32);
		*hi = CV(S, B(S, NX_OP_SHIFT_RIGHT_ARITHMETIC, n, K(S, n, NX_S32, 31)), NX_U32);
		return true;
	}
	int no = x->noperands;
	nx_inst *ol[64], *oh[64];
	if (x->op != NX_OP_CONVERT && x->op != NX_OP_PARAMETER && x->op != NX_OP_GET_TUPLE_ELEMENT &&
	    x->op != NX_OP_GATHER && x->op != NX_OP_DYNAMIC_SLICE) {
		if (no > 64)
			return false;
		for (int k = 0; k < no; k++) {
			ol[k] = oh[k] = x->operands[k];
			if (is64(x->operands[k]->shape) && !pair(S, x->operands[k], &ol[k], &oh[k]))
				return false;
		}
	}
	switch (x->op) {
	case NX_OP_GET_TUPLE_ELEMENT: {
		nx_inst *t = x->operands[0], *vl, *vh, *ix;
		if (t->op == NX_OP_REDUCE && argred(S, t, &vl, &vh, &ix)) {
			if (x->a.tuple_index == 0) {
				*lo = vl, *hi = vh;
			} else {
				*lo = CV(S, ix, NX_U32);
				*hi = CV(S, B(S, NX_OP_SHIFT_RIGHT_ARITHMETIC, ix, K(S, ix, NX_S32, 31)), NX_U32);
			}
			return true;
		}
		pair_of_source(S, x, lo, hi);
		return true;
	}
	case NX_OP_PARAMETER:
		pair_of_source(S, x, lo, hi);
		return true;
	case NX_OP_CONSTANT: {
		nx_arena *a = nx_rw_arena(S->rw);
		nx_inst *w[2];
		for (int k = 0; k < 2; k++) {
			nx_literal *l = nx_literal_new(a, shp(S, x->shape, NX_U32));
			for (int64_t e = 0; e < nx_shape_elems(x->shape); e++)
				nx_lit_set_u64(l, e, (nx_lit_get_u64(x->a.literal, e) >> (32 * k)) & 0xffffffffu);
			w[k] = nx_rw_add(S->rw, NX_OP_CONSTANT, shp(S, x->shape, NX_U32), NULL, 0, NULL);
			w[k]->a.literal = l;
		}
		*lo = w[0], *hi = w[1];
		return true;
	}
	case NX_OP_CONVERT: {
		nx_inst *o = x->operands[0];
		nx_type t = o->shape->type;
		if (is64(o->shape))
			return pair(S, o, lo, hi);
		if (t == NX_U32) {
			*lo = o;
			*hi = K(S, o, NX_U32, 0);
			return true;
		}
		if (t == NX_F32 || t == NX_BF16 || t == NX_F16) {
			from_float(S, o, sign, lo, hi);
			return true;
		}
		return false;
	}
	case NX_OP_GATHER:
	case NX_OP_DYNAMIC_SLICE: {
		nx_inst *ops[64];
		if (no > 64 || !pair(S, x->operands[0], &ol[0], &oh[0]))
			return false;
		for (int k = 1; k < no; k++) {
			ops[k] = is64(x->operands[k]->shape) ? sat(S, x->operands[k]) : x->operands[k];
			if (!ops[k])
				return false;
		}
		for (int w = 0; w < 2; w++) {
			ops[0] = w ? oh[0] : ol[0];
			*(w ? hi : lo) = clone(S, x, NX_U32, ops);
		}
		return true;
	}
	default:
		break;
	}
	if (op_data(x->op)) {
		*lo = clone(S, x, NX_U32, ol);
		*hi = clone(S, x, NX_U32, oh);
		return true;
	}
	nx_inst *al = ol[0], *ah = oh[0], *bl = no > 1 ? ol[1] : NULL, *bh = no > 1 ? oh[1] : NULL;
	if (x->op == NX_OP_ALL_REDUCE)
		return all_reduce_pair(S, x, al, ah, lo, hi);
	if (x->op == NX_OP_DIVIDE || x->op == NX_OP_REMAINDER) {
		nx_inst *w[4];
		if (!divmod_pair(S, x->operands[0], x->operands[1], w))
			return false;
		int k = x->op == NX_OP_DIVIDE ? 0 : 2;
		*lo = w[k], *hi = w[k + 1];
		return true;
	}
	if (x->op == NX_OP_REDUCE || x->op == NX_OP_REDUCE_WINDOW)
		return no == 2 && x->ncalled == 1 && nx_pass_reducer_op(x->called[0]) == NX_OP_ADD &&
		       reduce_add_pair(S, x, lo, hi);
	if (no == 2 && bin_pair(S, x->op, sign, al, ah, bl, bh, lo, hi))
		return true;
	switch (x->op) {
	case NX_OP_NEGATE: neg_pair(S, al, ah, lo, hi); return true;
	case NX_OP_NOT:
		*lo = U(S, NX_OP_NOT, al);
		*hi = U(S, NX_OP_NOT, ah);
		return true;
	case NX_OP_ABS: {
		if (!sign) {
			*lo = al, *hi = ah;
			return true;
		}
		nx_inst *nl, *nh, *neg = CMP(S, CV(S, ah, NX_S32), K(S, ah, NX_S32, 0), NX_CMP_LT);
		neg_pair(S, al, ah, &nl, &nh);
		sel_pair(S, neg, nl, nh, al, ah, lo, hi);
		return true;
	}
	case NX_OP_SHIFT_LEFT: case NX_OP_SHIFT_RIGHT_LOGICAL: case NX_OP_SHIFT_RIGHT_ARITHMETIC:
		shift_pair(S, x->op, al, ah, bl, bh, lo, hi);
		return true;
	case NX_OP_CLAMP: {
		/* clamp(lo, v, hi) = min(max(v, lo), hi); scalar bounds broadcast */
		for (int k = 0; k < 3; k += 2)
			if (ol[k]->shape->rank != x->shape->rank) {
				int64_t none[1] = {0};
				ol[k] = nx_rw_broadcast(S->rw, ol[k], NX_U32, x->shape->rank, x->shape->dims, none);
				oh[k] = nx_rw_broadcast(S->rw, oh[k], NX_U32, x->shape->rank, x->shape->dims, none);
			}
		nx_inst *ml, *mh;
		sel_pair(S, cmp_pair(S, bl, bh, ol[0], oh[0], NX_CMP_LT, sign), ol[0], oh[0], bl, bh, &ml, &mh);
		sel_pair(S, cmp_pair(S, ol[2], oh[2], ml, mh, NX_CMP_LT, sign), ol[2], oh[2], ml, mh, lo, hi);
		return true;
	}
	default:
		return false;
	}
}

static bool pair(st *S, nx_inst *x, nx_inst **lo, nx_inst **hi)
{
	rep *r = rep_of(S, x);
	if (!r->has_pair) {
		nx_inst *l = NULL, *h = NULL;
		if (!pair_calc(S, x, &l, &h))
			return false;
		r = rep_of(S, x);
		r->lo = l, r->hi = h, r->has_pair = true;
	}
	*lo = r->lo, *hi = r->hi;
	return true;
}

/* the s32 value of a 64-bit x whose range fits s32 (NULL when not expanded) */
static nx_inst *narrow(st *S, nx_inst *x)
{
	rep *r = range(S, x);
	if (r->nar)
		return r->nar;
	nx_inst *n = NULL;
	if (!r->narrowable) {
		nx_inst *lo, *hi;
		if (!fits32(r) || !pair(S, x, &lo, &hi))
			return NULL;
		n = CV(S, lo, NX_S32);
	} else if (x->op == NX_OP_CONSTANT) {
		nx_literal *l = nx_literal_new(nx_rw_arena(S->rw), shp(S, x->shape, NX_S32));
		for (int64_t e = 0; e < nx_shape_elems(x->shape); e++)
			nx_lit_set_i64(l, e, nx_lit_get_i64(x->a.literal, e));
		n = nx_rw_add(S->rw, NX_OP_CONSTANT, shp(S, x->shape, NX_S32), NULL, 0, NULL);
		n->a.literal = l;
	} else if (x->op == NX_OP_CONVERT) {
		n = is64(x->operands[0]->shape) ? narrow(S, x->operands[0]) : CV(S, x->operands[0], NX_S32);
	} else {
		nx_inst *ops[64];
		if (x->noperands > 64)
			return NULL;
		for (int k = 0; k < x->noperands; k++) {
			ops[k] = is64(x->operands[k]->shape) ? narrow(S, x->operands[k]) : x->operands[k];
			if (!ops[k])
				return NULL;
		}
		n = clone(S, x, NX_S32, ops);
	}
	rep_of(S, x)->nar = n;
	return n;
}

/* clamp(x, INT32_MIN, INT32_MAX) as s32 (u64: min(x, INT32_MAX)) */
static nx_inst *sat(st *S, nx_inst *x)
{
	rep *r = range(S, x);
	if (r->sat)
		return r->sat;
	nx_inst *n = NULL;
	if (r->narrowable) {
		n = narrow(S, x);
	} else if (op_data(x->op) && x->noperands <= 64) {
		nx_inst *ops[64];
		for (int k = 0; k < x->noperands; k++) {
			ops[k] = is64(x->operands[k]->shape) ? sat(S, x->operands[k]) : x->operands[k];
			if (!ops[k])
				return NULL;
		}
		n = clone(S, x, NX_S32, ops);
	} else {
		nx_inst *lo, *hi;
		if (!pair(S, x, &lo, &hi))
			return NULL;
		nx_inst *ls = CV(S, lo, NX_S32), *fits, *lim;
		if (x->shape->type == NX_S64) {
			nx_inst *hs = CV(S, hi, NX_S32);
			fits = CMP(S, hs, B(S, NX_OP_SHIFT_RIGHT_ARITHMETIC, ls, K(S, ls, NX_S32, 31)), NX_CMP_EQ);
			lim = SEL(S, CMP(S, hs, K(S, hs, NX_S32, 0), NX_CMP_LT), K(S, ls, NX_S32, INT32_MIN),
			          K(S, ls, NX_S32, INT32_MAX));
		} else {
			fits = B(S, NX_OP_AND, CMP(S, hi, K(S, hi, NX_U32, 0), NX_CMP_EQ),
			         CMP(S, lo, K(S, lo, NX_U32, INT32_MAX), NX_CMP_LE));
			lim = K(S, ls, NX_S32, INT32_MAX);
		}
		n = SEL(S, fits, ls, lim);
	}
	rep_of(S, x)->sat = n;
	return n;
}

/* ------------------------------------------------------------ sinks */

static bool inside32(const rep *r, bool u)
{
	return r->narrowable && r->mn > (u ? -1 : INT32_MIN) && r->mx < INT32_MAX;
}

static nx_inst *sink_compare(st *S, nx_inst *in)
{
	nx_inst *a = in->operands[0], *b = in->operands[1];
	bool u = a->shape->type == NX_U64;
	rep ra = *range(S, a), rb = *range(S, b); /* copies: range() may move the array */
	nx_inst *x = NULL, *y = NULL;
	if (ra.narrowable && rb.narrowable) {
		x = narrow(S, a), y = narrow(S, b);
	} else if (inside32(&rb, u)) {
		x = sat(S, a), y = narrow(S, b);
	} else if (inside32(&ra, u)) {
		x = narrow(S, a), y = sat(S, b);
	}
	if (x && y) {
		nx_inst *c = CMP(S, x, y, in->a.direction);
		return c;
	}
	nx_inst *al, *ah, *bl, *bh;
	if (!pair(S, a, &al, &ah) || !pair(S, b, &bl, &bh))
		return NULL;
	return cmp_pair(S, al, ah, bl, bh, in->a.direction, !u);
}

static nx_inst *sink_convert(st *S, nx_inst *in)
{
	nx_inst *x = in->operands[0];
	nx_type t = in->shape->type;
	bool ok = t == NX_PRED || t == NX_F32 || t == NX_BF16 || t == NX_F16 || (nx_type_is_int(t) && !is64(in->shape));
	if (!ok)
		return NULL;
	if (range(S, x)->narrowable)
		return CV(S, narrow(S, x), t);
	nx_inst *lo, *hi;
	if (t == NX_BF16 || t == NX_F16 || !pair(S, x, &lo, &hi))
		return NULL;
	if (t == NX_PRED)
		return CMP(S, B(S, NX_OP_OR, lo, hi), K(S, lo, NX_U32, 0), NX_CMP_NE);
	if (t == NX_F32)
		return to_float(S, lo, hi, x->shape->type == NX_S64);
	return CV(S, lo, t);
}

/* in with its 64-bit operands from `from` on replaced by f(operand) where f
 * gives one; NULL when none changes */
static nx_inst *with_ops(st *S, nx_inst *in, int from, nx_inst *(*f)(st *, nx_inst *))
{
	nx_inst *ops[NX_MAX_RANK + 8];
	if (in->noperands > NX_MAX_RANK + 8)
		return NULL;
	bool any = false;
	for (int k = 0; k < in->noperands; k++) {
		ops[k] = in->operands[k];
		if (k >= from && is64(ops[k]->shape)) {
			nx_inst *v = f(S, ops[k]);
			if (v) /* one not expanded stays 64-bit: device_types names it */
				ops[k] = v;
			any |= ops[k] != in->operands[k];
		}
	}
	if (!any)
		return NULL;
	nx_inst *c = nx_rw_add(S->rw, in->op, in->shape, ops, in->noperands, NULL);
	c->a = in->a;
	c->a.control_predecessors = NULL;
	c->a.ncontrol_predecessors = 0;
	if (in->ncalled)
		nx_inst_set_called(c, in->called, in->ncalled);
	return c;
}

static nx_inst *rewrite(nx_rw *rw, nx_inst *in)
{
	st *S = rw->user;
	if (!rw->c->is_entry)
		return NULL;
	S->rw = rw;
	bool root = in == rw->c->root;
	if (is64(in->shape))
		return root && in->op != NX_OP_PARAMETER ? join(S, in) : NULL;
	switch (in->op) {
	case NX_OP_COMPARE:
		return is64(in->operands[0]->shape) ? sink_compare(S, in) : NULL;
	case NX_OP_CONVERT:
		return is64(in->operands[0]->shape) ? sink_convert(S, in) : NULL;
	case NX_OP_GATHER:
	case NX_OP_SCATTER:
		return in->noperands >= 2 && is64(in->operands[1]->shape) && !is64(in->operands[0]->shape)
		           ? with_ops(S, in, 1, sat) : NULL;
	case NX_OP_DYNAMIC_SLICE:
		return is64(in->operands[0]->shape) ? NULL : with_ops(S, in, 1, sat);
	case NX_OP_DYNAMIC_UPDATE_SLICE:
		return is64(in->operands[0]->shape) ? NULL : with_ops(S, in, 2, sat);
	case NX_OP_GET_TUPLE_ELEMENT: {
		nx_inst *t = in->operands[0], *vl, *vh, *ix;
		return t->op == NX_OP_REDUCE && in->a.tuple_index == 1 && in->shape->type == NX_S32 &&
		               argred(S, t, &vl, &vh, &ix) ? ix : NULL;
	}
	case NX_OP_RNG_BIT_GENERATOR:
	case NX_OP_TUPLE:
		return with_ops(S, in, 0, join);
	default:
		return NULL;
	}
}

nx_status nx_pass_int64_split(nx_module *m, const nx_pass_ctx *ctx, bool *changed)
{
	st S = {0};
	nx_ptrmap_init(&S.map, 64);
	nx_status rc = nx_rw_run(m, ctx, "int64-split", rewrite, &S, changed);
	nx_ptrmap_free(&S.map);
	free(S.r);
	return rc;
}
