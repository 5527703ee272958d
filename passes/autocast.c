/* passes/autocast.c — --auto-cast none|matmult|all with --auto-cast-type
 * (docs/numerics.md, "Auto-cast", has the table). Entry computation only.
 *   matmult: f32 dot/convolution operands are converted to the narrow type;
 *            the result stays f32 (f32 accumulation, mixed-precision dot).
 *            tf32: operands go through reduce-precision(e8, m10) instead.
 *   all:     as matmult, plus the cast-safe f32 elementwise ops (add,
 *            subtract, multiply, negate, abs, maximum, minimum, select,
 *            clamp, tanh, logistic) compute in the narrow type; data movement
 *            (broadcast, reshape, transpose, slice, concatenate, copy) follows
 *            its operand. Precision-sensitive ops stay f32: exp, log, divide,
 *            sqrt, rsqrt, power, erf, reductions, compare, and everything else,
 *            and so does whatever feeds a decision (compare, float-to-integer
 *            convert, floor, ceil, round, sign, sort) through elementwise
 *            and data-movement ops (a dropout mask's uniform, an index).
 *            fp8 and tf32 cast only matmul inputs even in `all`.
 * Parameters and the root keep their types: converts are inserted. */
#include "passes/pass.h"

#include <stdlib.h>
#include <string.h>

static bool elementwise_safe(nx_opcode op)
{
	switch (op) {
	case NX_OP_ADD: case NX_OP_SUBTRACT: case NX_OP_MULTIPLY: case NX_OP_NEGATE:
	case NX_OP_ABS: case NX_OP_MAXIMUM: case NX_OP_MINIMUM: case NX_OP_SELECT:
	case NX_OP_CLAMP: case NX_OP_TANH: case NX_OP_LOGISTIC:
		return true;
	default:
		return false;
	}
}

static bool movement(nx_opcode op)
{
	return op == NX_OP_BROADCAST || op == NX_OP_RESHAPE || op == NX_OP_TRANSPOSE ||
	       op == NX_OP_SLICE || op == NX_OP_CONCATENATE || op == NX_OP_COPY;
}

/* An op whose result is a discrete function of its float operands: which
 * side of a threshold, which integer, which order. */
static bool decides(const nx_inst *x)
{
	switch (x->op) {
	case NX_OP_COMPARE: case NX_OP_FLOOR: case NX_OP_CEIL: case NX_OP_ROUND_NEAREST_AFZ:
	case NX_OP_ROUND_NEAREST_EVEN: case NX_OP_SIGN: case NX_OP_SORT:
		return true;
	case NX_OP_CONVERT:
		return nx_shape_is_array(x->shape) && !nx_type_is_float(x->shape->type);
	default:
		return false;
	}
}

/* keep[i]: old[i] feeds a decision (decides()) through elementwise and
 * data-movement ops only, so `all` leaves it f32: narrowing it would change
 * the decision (a dropout mask bit, an index), not round a value. */
static bool *decision_cones(nx_inst **old, int n, const nx_comp *c)
{
	bool *keep = calloc((size_t)n + 1, sizeof(bool));
	NX_ASSERT(keep);
	for (int i = n - 1; i >= 0; i--) {
		const nx_inst *x = old[i];
		bool through = keep[i] && ((nx_opcode_flags(x->op) & NX_OPF_ELEMENTWISE) || movement(x->op));
		if (!decides(x) && !through)
			continue;
		for (int k = 0; k < x->noperands; k++) {
			const nx_inst *o = x->operands[k];
			intptr_t p = (intptr_t)o->aux;
			if (o->parent == c && p >= 0 && p < n && old[p] == o && nx_shape_is_array(o->shape) &&
			    nx_type_is_float(o->shape->type))
				keep[p] = true;
		}
	}
	return keep;
}

typedef struct {
	nx_module *m;
	nx_comp *c;
	nx_type t;
	nx_inst **narrow, **wide; /* memo by position */
	nx_inst **out;
	int nout;
	int cnt;
} ac;

static nx_inst *mk(ac *a, nx_opcode op, nx_shape *sh, nx_inst *x, const char *base)
{
	nx_inst *i = nx_inst_new(a->c, op, sh, &x, 1, base);
	i->name = nx_arena_printf(&a->m->arena, "%s.ac%d.%lld", base, a->cnt++, (long long)i->id);
	a->c->ninsts--; /* placed by the caller */
	a->out[a->nout++] = i;
	return i;
}

/* The narrow version of f32 value x (position p). */
static nx_inst *to_narrow(ac *a, nx_inst *x, int p, bool tf32)
{
	if (x->shape->type != NX_F32)
		return x;
	if (p >= 0 && a->narrow[p])
		return a->narrow[p];
	nx_inst *r;
	if (tf32) {
		r = mk(a, NX_OP_REDUCE_PRECISION, x->shape, x, "reduce-precision");
		r->a.exponent_bits = 8;
		r->a.mantissa_bits = 10;
	} else {
		r = mk(a, NX_OP_CONVERT, nx_shape_with_type(&a->m->arena, x->shape, a->t), x, "convert");
	}
	if (p >= 0)
		a->narrow[p] = r;
	return r;
}

nx_status nx_pass_autocast(nx_module *m, const nx_pass_ctx *ctx, bool *changed)
{
	if (ctx->autocast == NX_AUTOCAST_NONE || !m->entry)
		return NX_OK;
	nx_comp *c = m->entry;
	int n = c->ninsts;
	bool tf32 = ctx->autocast_tf32 || ctx->autocast_type == NX_F32;
	bool fp8 = nx_type_bits(ctx->autocast_type) == 8;
	bool all = ctx->autocast == NX_AUTOCAST_ALL && !tf32 && !fp8;
	ac a = {m, c, ctx->autocast_type, NULL, NULL, NULL, 0, 0};
	a.narrow = calloc((size_t)n + 1, sizeof(nx_inst *));
	a.wide = calloc((size_t)n + 1, sizeof(nx_inst *));
	bool *isn = calloc((size_t)n + 1, sizeof(bool)); /* result now narrow */
	a.out = nx_arena_alloc(&m->arena, sizeof(nx_inst *) * (size_t)(4 * n + 4));
	nx_inst **old = malloc(sizeof(nx_inst *) * ((size_t)n + 1));
	memcpy(old, c->insts, sizeof(nx_inst *) * (size_t)n);
	for (int i = 0; i < n; i++)
		old[i]->aux = (void *)(intptr_t)i;
	bool *keep = all ? decision_cones(old, n, c) : NULL;
	bool any = false;
#define POS(x) ((x)->parent == c && (intptr_t)(x)->aux < n && old[(intptr_t)(x)->aux] == (x) ? (int)(intptr_t)(x)->aux : -1)
	for (int i = 0; i < n; i++) {
		nx_inst *x = old[i];
		bool f32 = nx_shape_is_array(x->shape) && x->shape->type == NX_F32;
		bool ops_f32 = true, ops_narrow = x->noperands > 0;
		for (int k = 0; k < x->noperands; k++) {
			int p = POS(x->operands[k]);
			nx_type ot = x->operands[k]->shape->type;
			if (!(ot == NX_F32 || (p >= 0 && isn[p]) || ot == NX_PRED))
				ops_f32 = false;
			if (!(p >= 0 && isn[p]))
				ops_narrow = false;
		}
		if ((x->op == NX_OP_DOT || x->op == NX_OP_CONVOLUTION) && f32 && ops_f32) {
			nx_inst **ops = nx_arena_alloc(&m->arena, sizeof(nx_inst *) * (size_t)x->noperands);
			for (int k = 0; k < x->noperands; k++) {
				int p = POS(x->operands[k]);
				nx_inst *o = x->operands[k];
				ops[k] = (p >= 0 && isn[p] && !tf32) ? o : to_narrow(&a, (p >= 0 && isn[p]) ? a.wide[p] : o, p, tf32);
			}
			x->operands = ops;
			nx_pass_log(ctx, 2, "autocast: %s inputs to %s", x->name, tf32 ? "tf32" : nx_type_name(a.t));
			any = true;
		} else if (all && f32 && ops_f32 && !keep[i] &&
		           (elementwise_safe(x->op) || (movement(x->op) && ops_narrow))) {
			nx_inst **ops = nx_arena_alloc(&m->arena, sizeof(nx_inst *) * (size_t)x->noperands);
			for (int k = 0; k < x->noperands; k++) {
				int p = POS(x->operands[k]);
				nx_inst *o = x->operands[k];
				ops[k] = o->shape->type == NX_PRED || (p >= 0 && isn[p]) ? o : to_narrow(&a, o, p, false);
			}
			x->operands = ops;
			x->shape = nx_shape_with_type(&m->arena, x->shape, a.t);
			isn[i] = true;
			any = true;
		} else {
			/* Everything else reads f32: widen narrowed operands. */
			for (int k = 0; k < x->noperands; k++) {
				int p = POS(x->operands[k]);
				if (p < 0 || !isn[p])
					continue;
				if (!a.wide[p])
					a.wide[p] = mk(&a, NX_OP_CONVERT,
					               nx_shape_with_type(&m->arena, x->operands[k]->shape, NX_F32),
					               x->operands[k], "convert");
				if (x->operands == old[i]->operands) {
					nx_inst **ops = nx_arena_dup(&m->arena, x->operands, sizeof(nx_inst *) * (size_t)x->noperands);
					x->operands = ops;
				}
				x->operands[k] = a.wide[p];
			}
		}
		a.out[a.nout++] = x;
		/* A narrowed value that is the root goes back to f32. */
		if (x == c->root && isn[i]) {
			a.wide[i] = mk(&a, NX_OP_CONVERT, nx_shape_with_type(&m->arena, x->shape, NX_F32), x,
			               "convert");
			c->root = a.wide[i];
		}
	}
#undef POS
	/* mk() placed conversions before their user, but widening converts were
	 * appended after the user; a stable topological fix-up is simplest. */
	if (any) {
		for (int i = 0; i < a.nout; i++)
			a.out[i]->aux = (void *)(intptr_t)-1;
		nx_inst **res = nx_arena_alloc(&m->arena, sizeof(nx_inst *) * (size_t)(a.nout + 1));
		int nr = 0;
		/* Each new convert reads an already placed value, and is read by the
		 * instruction after which it was created... place operands first. */
		for (int i = 0; i < a.nout; i++) {
			nx_inst *x = a.out[i];
			if ((intptr_t)x->aux == 1)
				continue;
			for (int k = 0; k < x->noperands; k++) {
				nx_inst *o = x->operands[k];
				if ((intptr_t)o->aux == -1 && o->parent == c) {
					/* A convert created later than its reader: place it now
					 * (its own operand is placed already). */
					o->aux = (void *)(intptr_t)1;
					res[nr++] = o;
				}
			}
			x->aux = (void *)(intptr_t)1;
			res[nr++] = x;
		}
		c->insts = res;
		c->ninsts = nr;
		c->cap = nr + 1;
		*changed = true;
	}
	free(a.narrow);
	free(a.wide);
	free(isn);
	free(keep);
	free(old);
	return NX_OK;
}
