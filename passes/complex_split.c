/* passes/complex_split.c — c64 values as pairs of f32 arrays (re, im) (docs/passes.md "complex-split", docs/numerics.md
 * "Complex numbers").
 *
 * Walks every computation in order (the entry, loop bodies: a rotary
 * embedding in a device loop) and gives each c64 instruction it can express a
 * pair, built from its operands' pairs; the c64 instruction itself stays
 * until nothing reads it (dce). Consumers that leave the complex domain
 * are replaced: real -> re, imag -> im, abs -> the scaled hypot, compare
 * EQ/NE -> both parts. A c64 instruction without a pair (a parameter or a
 * tuple element, an op listed nowhere below, c128) stays with its users, and
 * device-types refuses it by name before lowering.
 *   complex(a, b)           (a, b)
 *   constant                two f32 constants
 *   convert f32/bf16/f16/integer -> c64   (convert to f32, 0); c64 -> c64 identity
 *   broadcast reshape transpose slice concatenate reverse copy pad select
 *   dynamic-slice dynamic-update-slice   the same op on re and on im
 *   add subtract negate     per part
 *   multiply                (ar br - ai bi, ar bi + ai br)
 *   divide                  Smith's algorithm: with |br| >= |bi|, r = bi/br,
 *                           d = br + bi r, ((ar + ai r)/d, (ai - ar r)/d);
 *                           otherwise the same with the parts swapped
 *   exponential             e^ar (cos ai, sin ai)
 *   sqrt                    t = sqrt(|ar|/2 + |z|/2); ar >= 0: (t, ai/2t),
 *                           else (|ai|/2t, t with ai's sign); 0: (0, ai)
 *   log                     (log |z|, atan2(ai, ar)) (math-expand, which
 *                           runs next, expands the atan2)
 *   reduce with an add reducer   the sums of the parts
 *   dot                     (ar.br - ai.bi, ar.bi + ai.br) as four f32 dots
 *   abs                     m sqrt(1 + (n/m)^2), m = max(|re|,|im|),
 *                           n = min: no overflow or underflow of the
 *                           squares; 0 when m = 0, inf when a part is
 *                           inf, NaN when a part is NaN (and none inf) */
#include "passes/rewrite.h"
#include "ir/eval/eval.h"

#include <math.h>
#include <stdlib.h>

typedef struct cs {
	nx_ptrmap map; /* c64 instruction -> index + 1 in re/im */
	nx_inst **re, **im;
	int n, cap;
} cs;

static bool pair_of(cs *s, const nx_inst *x, nx_inst **re, nx_inst **im)
{
	intptr_t k = nx_ptrmap_get(&s->map, x, 0);
	if (!k)
		return false;
	*re = s->re[k - 1], *im = s->im[k - 1];
	return true;
}

static void set_pair(cs *s, const nx_inst *x, nx_inst *re, nx_inst *im)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 64;
		s->re = realloc(s->re, sizeof(nx_inst *) * (size_t)s->cap);
		s->im = realloc(s->im, sizeof(nx_inst *) * (size_t)s->cap);
		NX_ASSERT(s->re && s->im);
	}
	s->re[s->n] = re, s->im[s->n] = im;
	nx_ptrmap_put(&s->map, x, ++s->n);
}

/* in's shape (layout kept) with element type t */
static nx_shape *retype(nx_rw *rw, const nx_shape *sh, nx_type t)
{
	nx_shape *r = nx_shape_copy(nx_rw_arena(rw), sh);
	r->type = t;
	return r;
}

/* in again with f32 operands ops, attributes copied, no control edges */
static nx_inst *clone_f32(nx_rw *rw, const nx_inst *in, nx_inst **ops)
{
	nx_inst *c = nx_rw_add(rw, in->op, retype(rw, in->shape, NX_F32), ops, in->noperands, NULL);
	c->a = in->a;
	c->a.ncontrol_predecessors = 0;
	c->a.control_predecessors = NULL;
	return c;
}

static nx_inst *bin(nx_rw *rw, nx_opcode op, nx_inst *x, nx_inst *y) { return nx_rw_binary(rw, op, x, y); }

static nx_inst *sel(nx_rw *rw, nx_inst *p, nx_inst *a, nx_inst *b) { return nx_rw_select(rw, p, a, b); }
static nx_inst *cmp(nx_rw *rw, nx_inst *x, nx_inst *y, nx_cmp_dir d) { return nx_rw_compare(rw, x, y, d); }

static nx_inst *cabs_f32(nx_rw *rw, nx_inst *re, nx_inst *im);

/* sqrt(re + i im), principal branch: t = sqrt(|re|/2 + |z|/2) (no
 * overflow); re >= 0: (t, im/(2t)), else (|im|/(2t), t with im's sign);
 * z = 0: (0, im) */
static void csqrt_f32(nx_rw *rw, nx_inst *x, nx_inst *y, nx_inst **re, nx_inst **im)
{
	nx_inst *half = nx_rw_splat(rw, x->shape, NX_F32, 0.5), *zero = nx_rw_splat(rw, x->shape, NX_F32, 0);
	nx_inst *ax = nx_rw_unary(rw, NX_OP_ABS, x), *ay = nx_rw_unary(rw, NX_OP_ABS, y);
	nx_inst *t = nx_rw_unary(rw, NX_OP_SQRT, bin(rw, NX_OP_ADD, bin(rw, NX_OP_MULTIPLY, ax, half),
	                                             bin(rw, NX_OP_MULTIPLY, cabs_f32(rw, x, y), half)));
	nx_inst *t2 = bin(rw, NX_OP_ADD, t, t);
	nx_arena *a = nx_rw_arena(rw);
	nx_inst *yb = nx_rw_add(rw, NX_OP_BITCAST_CONVERT, nx_shape_array(a, NX_S32, y->shape->rank, y->shape->dims),
	                        &y, 1, NULL);
	nx_inst *yneg = cmp(rw, yb, nx_rw_splat(rw, yb->shape, NX_S32, 0), NX_CMP_LT);
	nx_inst *pos = cmp(rw, x, zero, NX_CMP_GE);
	nx_inst *z0 = bin(rw, NX_OP_AND, cmp(rw, ax, zero, NX_CMP_EQ), cmp(rw, ay, zero, NX_CMP_EQ));
	*re = sel(rw, z0, zero, sel(rw, pos, t, bin(rw, NX_OP_DIVIDE, ay, t2)));
	*im = sel(rw, z0, y, sel(rw, pos, bin(rw, NX_OP_DIVIDE, y, t2), sel(rw, yneg, nx_rw_unary(rw, NX_OP_NEGATE, t), t)));
}

/* the pair of a c64 instruction in, from its operands' pairs; false: none */
static bool split(nx_rw *rw, cs *s, nx_inst *in, nx_inst **re, nx_inst **im)
{
	nx_arena *a = nx_rw_arena(rw);
	int n = in->noperands;
	nx_inst *ore[8], *oim[8];
	if (n > 8)
		return false;
	switch (in->op) {
	case NX_OP_COMPLEX: {
		nx_inst *x = in->operands[0], *y = in->operands[1];
		if (x->shape->type != NX_F32 || y->shape->type != NX_F32)
			return false;
		*re = x, *im = y;
		return true;
	}
	case NX_OP_CONSTANT: {
		const nx_literal *l = in->a.literal;
		if (!l || !nx_shape_is_array(in->shape))
			return false;
		nx_inst *k[2];
		for (int p = 0; p < 2; p++) {
			k[p] = nx_rw_add(rw, NX_OP_CONSTANT, retype(rw, in->shape, NX_F32), NULL, 0, NULL);
			k[p]->a.literal = nx_literal_new(a, retype(rw, in->shape, NX_F32));
		}
		int64_t e = nx_shape_elems(in->shape);
		for (int64_t j = 0; j < e; j++) {
			double r, i;
			nx_lit_get_c128(l, j, &r, &i);
			nx_lit_set_f64(k[0]->a.literal, j, r);
			nx_lit_set_f64(k[1]->a.literal, j, i);
		}
		*re = k[0], *im = k[1];
		return true;
	}
	case NX_OP_CONVERT: {
		nx_inst *x = in->operands[0];
		nx_type_kind k = nx_type_kind_of(x->shape->type);
		if (x->shape->type == NX_C64)
			return pair_of(s, x, re, im);
		if (k != NX_KIND_FLOAT && k != NX_KIND_SINT && k != NX_KIND_UINT && x->shape->type != NX_PRED)
			return false;
		if (x->shape->type == NX_F64)
			return false;
		*re = x->shape->type == NX_F32 ? x : nx_rw_add(rw, NX_OP_CONVERT, retype(rw, in->shape, NX_F32), &x, 1, NULL);
		*im = nx_rw_splat(rw, (*re)->shape, NX_F32, 0);
		return true;
	}
	default: break;
	}
	/* the others read c64 operands by their pairs (indices stay) */
	for (int k = 0; k < n; k++) {
		nx_inst *o = in->operands[k];
		if (o->shape->type == NX_C64) {
			if (!pair_of(s, o, &ore[k], &oim[k]))
				return false;
		} else if (nx_type_kind_of(o->shape->type) == NX_KIND_COMPLEX) {
			return false;
		} else {
			ore[k] = oim[k] = o;
		}
	}
	switch (in->op) {
	case NX_OP_BROADCAST: case NX_OP_RESHAPE: case NX_OP_TRANSPOSE: case NX_OP_SLICE:
	case NX_OP_CONCATENATE: case NX_OP_REVERSE: case NX_OP_COPY: case NX_OP_PAD: case NX_OP_SELECT:
	case NX_OP_DYNAMIC_SLICE: case NX_OP_DYNAMIC_UPDATE_SLICE: case NX_OP_ADD: case NX_OP_SUBTRACT:
	case NX_OP_NEGATE:
		if (in->op == NX_OP_SELECT && in->operands[0]->shape->type != NX_PRED)
			return false;
		*re = clone_f32(rw, in, ore);
		*im = clone_f32(rw, in, oim);
		return true;
	case NX_OP_MULTIPLY: {
		nx_inst *ar = ore[0], *ai = oim[0], *br = ore[1], *bi = oim[1];
		*re = bin(rw, NX_OP_SUBTRACT, bin(rw, NX_OP_MULTIPLY, ar, br), bin(rw, NX_OP_MULTIPLY, ai, bi));
		*im = bin(rw, NX_OP_ADD, bin(rw, NX_OP_MULTIPLY, ar, bi), bin(rw, NX_OP_MULTIPLY, ai, br));
		return true;
	}
	case NX_OP_DIVIDE: {
		nx_inst *ar = ore[0], *ai = oim[0], *br = ore[1], *bi = oim[1];
		nx_inst *big = cmp(rw, nx_rw_unary(rw, NX_OP_ABS, br), nx_rw_unary(rw, NX_OP_ABS, bi), NX_CMP_GE);
		/* |br| >= |bi|: r = bi/br, d = br + bi r */
		nx_inst *r1 = bin(rw, NX_OP_DIVIDE, bi, br);
		nx_inst *d1 = bin(rw, NX_OP_ADD, br, bin(rw, NX_OP_MULTIPLY, bi, r1));
		nx_inst *re1 = bin(rw, NX_OP_DIVIDE, bin(rw, NX_OP_ADD, ar, bin(rw, NX_OP_MULTIPLY, ai, r1)), d1);
		nx_inst *im1 = bin(rw, NX_OP_DIVIDE, bin(rw, NX_OP_SUBTRACT, ai, bin(rw, NX_OP_MULTIPLY, ar, r1)), d1);
		/* else: r = br/bi, d = bi + br r */
		nx_inst *r2 = bin(rw, NX_OP_DIVIDE, br, bi);
		nx_inst *d2 = bin(rw, NX_OP_ADD, bi, bin(rw, NX_OP_MULTIPLY, br, r2));
		nx_inst *re2 = bin(rw, NX_OP_DIVIDE, bin(rw, NX_OP_ADD, bin(rw, NX_OP_MULTIPLY, ar, r2), ai), d2);
		nx_inst *im2 = bin(rw, NX_OP_DIVIDE, bin(rw, NX_OP_SUBTRACT, bin(rw, NX_OP_MULTIPLY, ai, r2), ar), d2);
		*re = sel(rw, big, re1, re2);
		*im = sel(rw, big, im1, im2);
		return true;
	}
	case NX_OP_EXPONENTIAL: {
		nx_inst *e = nx_rw_unary(rw, NX_OP_EXPONENTIAL, ore[0]);
		*re = bin(rw, NX_OP_MULTIPLY, e, nx_rw_unary(rw, NX_OP_COSINE, oim[0]));
		*im = bin(rw, NX_OP_MULTIPLY, e, nx_rw_unary(rw, NX_OP_SINE, oim[0]));
		return true;
	}
	case NX_OP_REDUCE: /* a sum: the parts' sums */
		if (n != 2 || in->ncalled != 1 || nx_pass_reducer_op(in->called[0]) != NX_OP_ADD ||
		    in->operands[0]->shape->type != NX_C64 || in->operands[1]->shape->type != NX_C64)
			return false;
		*re = nx_rw_reduce(rw, ore[0], ore[1], in->a.dimensions.v, in->a.dimensions.n, NX_OP_ADD);
		*im = nx_rw_reduce(rw, oim[0], oim[1], in->a.dimensions.v, in->a.dimensions.n, NX_OP_ADD);
		return true;
	case NX_OP_SQRT:
		csqrt_f32(rw, ore[0], oim[0], re, im);
		return true;
	case NX_OP_LOG: /* (log|z|, atan2(im, re)); math-expand expands the atan2 */
		*re = nx_rw_unary(rw, NX_OP_LOG, cabs_f32(rw, ore[0], oim[0]));
		*im = bin(rw, NX_OP_ATAN2, oim[0], ore[0]);
		return true;
	case NX_OP_DOT: {
		if (n != 2 || in->operands[0]->shape->type != NX_C64 || in->operands[1]->shape->type != NX_C64)
			return false;
		nx_inst *pp[4][2] = {{ore[0], ore[1]}, {oim[0], oim[1]}, {ore[0], oim[1]}, {oim[0], ore[1]}}, *d[4];
		for (int k = 0; k < 4; k++)
			d[k] = clone_f32(rw, in, pp[k]);
		*re = bin(rw, NX_OP_SUBTRACT, d[0], d[1]);
		*im = bin(rw, NX_OP_ADD, d[2], d[3]);
		return true;
	}
	default: return false;
	}
}

/* |re + i im| without overflow or underflow of the squares */
static nx_inst *cabs_f32(nx_rw *rw, nx_inst *re, nx_inst *im)
{
	nx_inst *x = nx_rw_unary(rw, NX_OP_ABS, re), *y = nx_rw_unary(rw, NX_OP_ABS, im);
	nx_inst *m = bin(rw, NX_OP_MAXIMUM, x, y), *n = bin(rw, NX_OP_MINIMUM, x, y);
	nx_inst *zero = nx_rw_splat(rw, x->shape, NX_F32, 0), *one = nx_rw_splat(rw, x->shape, NX_F32, 1);
	nx_inst *inf = nx_rw_splat(rw, x->shape, NX_F32, INFINITY);
	nx_inst *q = bin(rw, NX_OP_DIVIDE, n, m);
	nx_inst *h = bin(rw, NX_OP_MULTIPLY, m,
	                 nx_rw_unary(rw, NX_OP_SQRT, bin(rw, NX_OP_ADD, one, bin(rw, NX_OP_MULTIPLY, q, q))));
	h = sel(rw, cmp(rw, m, zero, NX_CMP_EQ), zero, h);
	nx_inst *nan = bin(rw, NX_OP_OR, cmp(rw, re, re, NX_CMP_NE), cmp(rw, im, im, NX_CMP_NE));
	h = sel(rw, nan, bin(rw, NX_OP_ADD, re, im), h);
	nx_inst *isinf = bin(rw, NX_OP_OR, cmp(rw, x, inf, NX_CMP_EQ), cmp(rw, y, inf, NX_CMP_EQ));
	return sel(rw, isinf, inf, h);
}

static nx_inst *rewrite(nx_rw *rw, nx_inst *in)
{
	cs *s = rw->user;
	if (!nx_shape_is_array(in->shape) || in->shape->dynamic)
		return NULL;
	if (in->shape->type == NX_C64) {
		nx_inst *re, *im;
		if (split(rw, s, in, &re, &im))
			set_pair(s, in, re, im);
		return NULL;
	}
	if (in->noperands < 1 || in->operands[0]->shape->type != NX_C64)
		return NULL;
	nx_inst *re, *im, *r = NULL;
	if (!pair_of(s, in->operands[0], &re, &im))
		return NULL;
	switch (in->op) {
	case NX_OP_REAL: r = re; break;
	case NX_OP_IMAG: r = im; break;
	case NX_OP_ABS: r = in->shape->type == NX_F32 ? cabs_f32(rw, re, im) : NULL; break;
	case NX_OP_COMPARE: {
		nx_inst *bre, *bim;
		nx_cmp_dir d = in->a.direction;
		if ((d != NX_CMP_EQ && d != NX_CMP_NE) || !pair_of(s, in->operands[1], &bre, &bim))
			return NULL;
		r = bin(rw, d == NX_CMP_EQ ? NX_OP_AND : NX_OP_OR, cmp(rw, re, bre, d), cmp(rw, im, bim, d));
		break;
	}
	default: return NULL;
	}
	if (r)
		r->shape = r == re || r == im ? r->shape : nx_shape_copy(nx_rw_arena(rw), in->shape);
	return r;
}

nx_status nx_pass_complex_split(nx_module *m, const nx_pass_ctx *ctx, bool *changed)
{
	cs s = {0};
	nx_ptrmap_init(&s.map, 64);
	nx_status rc = nx_rw_run(m, ctx, "complex-split", rewrite, &s, changed);
	nx_ptrmap_free(&s.map);
	free(s.re);
	free(s.im);
	return rc;
}
