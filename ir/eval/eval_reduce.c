/* ir/eval/eval_reduce.c — reduce (single and variadic).
 *
 * Order: like XLA's evaluator, every output element folds its inputs in
 * row-major order of the reduced indices, starting from the init value:
 * acc = f(acc, x). The fast path (one operand, to_apply a single add /
 * multiply / maximum / minimum / and / or of its two parameters) keeps that
 * order by walking the input once in row-major order and folding into an
 * accumulator per output element. Narrow floats (f16, bf16, f8) accumulate
 * in f32 and round once to the result type at the end, as the device does
 * (docs/numerics.md); XLA's backends promote such reductions the same way
 * rather than rounding after every add. Everything else
 * calls to_apply through nx_eval_call per element. */
#include "ir/eval/eval_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The binary op when c is "ROOT op(p0, p1)" (either order), else NX_OP_COUNT. */
static nx_opcode simple_op(const nx_comp *c)
{
	const nx_inst *r = c->root;
	if (c->nparams != 2 || r->noperands != 2)
		return NX_OP_COUNT;
	switch (r->op) {
	case NX_OP_ADD:
	case NX_OP_MULTIPLY:
	case NX_OP_MAXIMUM:
	case NX_OP_MINIMUM:
	case NX_OP_AND:
	case NX_OP_OR: break;
	default: return NX_OP_COUNT;
	}
	const nx_inst *a = r->operands[0], *b = r->operands[1];
	if (a->op != NX_OP_PARAMETER || b->op != NX_OP_PARAMETER || a == b)
		return NX_OP_COUNT;
	if (r->shape->type != a->shape->type || r->shape->type != b->shape->type)
		return NX_OP_COUNT;
	return r->op;
}

/* out-offset stride per input dim (0 for reduced dims) */
static void out_strides(const nx_shape *in, const nx_shape *outs, const bool *red, int64_t *os)
{
	int64_t ost[NX_MAX_RANK];
	nx_strides(outs, ost);
	for (int d = 0, od = 0; d < in->rank; d++)
		os[d] = red[d] ? 0 : ost[od++];
}

#define FOLD_F(T, EXPR)                                                                   \
	do {                                                                                  \
		for (int64_t e = 0; e < n; e++) {                                                 \
			T a_ = acc[o], x_ = x[e];                                                     \
			acc[o] = (EXPR);                                                              \
			ADVANCE();                                                                    \
		}                                                                                 \
	} while (0)

/* steps the output offset o along the row-major input walk */
#define ADVANCE()                                                                         \
	do {                                                                                  \
		for (int d_ = r - 1; d_ >= 0; d_--) {                                             \
			o += os[d_];                                                                  \
			if (++idx[d_] < dims[d_])                                                     \
				break;                                                                    \
			o -= os[d_] * dims[d_];                                                       \
			idx[d_] = 0;                                                                  \
		}                                                                                 \
	} while (0)

static void fold_f32(nx_opcode op, const float *x, float *acc, int64_t n, int r,
                     const int64_t *dims, const int64_t *os)
{
	int64_t idx[NX_MAX_RANK] = {0}, o = 0;
	switch (op) {
	case NX_OP_ADD: FOLD_F(float, a_ + x_); break;
	case NX_OP_MULTIPLY: FOLD_F(float, a_ * x_); break;
	case NX_OP_MAXIMUM: FOLD_F(float, isnan(a_) ? a_ : isnan(x_) ? x_ : a_ < x_ ? x_ : a_); break;
	case NX_OP_MINIMUM: FOLD_F(float, isnan(a_) ? a_ : isnan(x_) ? x_ : x_ < a_ ? x_ : a_); break;
	default: NX_UNREACHABLE();
	}
}

static void fold_f64(nx_opcode op, const double *x, double *acc, int64_t n, int r,
                     const int64_t *dims, const int64_t *os)
{
	int64_t idx[NX_MAX_RANK] = {0}, o = 0;
	switch (op) {
	case NX_OP_ADD: FOLD_F(double, a_ + x_); break;
	case NX_OP_MULTIPLY: FOLD_F(double, a_ * x_); break;
	case NX_OP_MAXIMUM: FOLD_F(double, isnan(a_) ? a_ : isnan(x_) ? x_ : a_ < x_ ? x_ : a_); break;
	case NX_OP_MINIMUM: FOLD_F(double, isnan(a_) ? a_ : isnan(x_) ? x_ : x_ < a_ ? x_ : a_); break;
	default: NX_UNREACHABLE();
	}
}

static void fold_int(nx_opcode op, bool sign, const int64_t *x, int64_t *acc, int64_t n, int r,
                     const int64_t *dims, const int64_t *os)
{
	int64_t idx[NX_MAX_RANK] = {0}, o = 0;
	switch (op) {
	case NX_OP_ADD: FOLD_F(int64_t, (int64_t)((uint64_t)a_ + (uint64_t)x_)); break;
	case NX_OP_MULTIPLY: FOLD_F(int64_t, (int64_t)((uint64_t)a_ * (uint64_t)x_)); break;
	case NX_OP_AND: FOLD_F(int64_t, a_ & x_); break;
	case NX_OP_OR: FOLD_F(int64_t, a_ | x_); break;
	case NX_OP_MAXIMUM:
		if (sign)
			FOLD_F(int64_t, a_ < x_ ? x_ : a_);
		else
			FOLD_F(int64_t, (uint64_t)a_ < (uint64_t)x_ ? x_ : a_);
		break;
	case NX_OP_MINIMUM:
		if (sign)
			FOLD_F(int64_t, x_ < a_ ? x_ : a_);
		else
			FOLD_F(int64_t, (uint64_t)x_ < (uint64_t)a_ ? x_ : a_);
		break;
	default: NX_UNREACHABLE();
	}
}

static nx_status fast_reduce(nx_eval *ev, const nx_inst *i, nx_opcode op, const nx_literal *x,
                             const nx_literal *init, nx_literal *o, const bool *red)
{
	int r = x->shape->rank;
	int64_t os[NX_MAX_RANK], n = nx_shape_elems(x->shape), m = nx_shape_elems(o->shape);
	nx_type t = o->shape->type;
	nx_dom dom = nx_dom_of(t);
	out_strides(x->shape, o->shape, red, os);
	/* the input walk is done in whole-array buffers in the domain */
	size_t esz = dom == NX_DOM_F32 ? 4 : 8;
	void *acc = malloc(esz * (size_t)(m ? m : 1));
	/* an empty input has no data pointer: take the buffer path */
	void *xs = n > 0 && (t == NX_F32 || t == NX_F64 || t == NX_S64 || t == NX_U64) ? x->data
	         : malloc(esz * (size_t)(n ? n : 1));
	if (!acc || !xs) {
		free(acc);
		if (xs != x->data)
			free(xs);
		return nx_eval_error(ev, i, "out of memory allocating the reduction's %lld-element buffers",
		                     (long long)(n > m ? n : m));
	}
	if ((op == NX_OP_AND || op == NX_OP_OR) && dom != NX_DOM_INT) {
		free(acc);
		if (xs != x->data)
			free(xs);
		return nx_eval_error(ev, i, "reduce with %s on %s", nx_opcode_name(op), nx_type_name(t));
	}
	switch (dom) {
	case NX_DOM_F32: {
		float iv;
		nx_load_f32(init, 0, 1, &iv);
		for (int64_t k = 0; k < m; k++)
			((float *)acc)[k] = iv;
		if (xs != x->data && n > 0)
			nx_load_f32(x, 0, n, xs);
		fold_f32(op, xs, acc, n, r, x->shape->dims, os);
		nx_store_f32(o, 0, m, acc);
		break;
	}
	case NX_DOM_F64: {
		double iv;
		nx_load_f64(init, 0, 1, &iv);
		for (int64_t k = 0; k < m; k++)
			((double *)acc)[k] = iv;
		fold_f64(op, x->data, acc, n, r, x->shape->dims, os);
		nx_store_f64(o, 0, m, acc);
		break;
	}
	default: {
		int64_t iv;
		nx_load_i64(init, 0, 1, &iv);
		for (int64_t k = 0; k < m; k++)
			((int64_t *)acc)[k] = iv;
		if (xs != x->data && n > 0)
			nx_load_i64(x, 0, n, xs);
		bool sign = nx_type_kind_of(t) == NX_KIND_SINT;
		if (!sign && t != NX_U64) /* zero-extended values compare correctly as signed too */
			sign = true;
		fold_int(op, sign, xs, acc, n, r, x->shape->dims, os);
		nx_store_i64(o, 0, m, acc);
		break;
	}
	}
	free(acc);
	if (xs != x->data)
		free(xs);
	return NX_OK;
}

static nx_status generic_reduce(nx_eval *ev, const nx_inst *i, nx_literal *const *ops, int nin,
                                nx_literal **outs, const bool *red)
{
	const nx_comp *c = i->called[0];
	const nx_shape *ins = ops[0]->shape;
	int r = ins->rank;
	int64_t os[NX_MAX_RANK], n = nx_shape_elems(ins), m = nx_shape_elems(outs[0]->shape);
	out_strides(ins, outs[0]->shape, red, os);
	for (int k = 0; k < nin; k++)
		for (int64_t e = 0; e < m; e++)
			nx_lit_copy_elem(outs[k], e, ops[nin + k], 0);
	nx_literal **args = nx_arena_alloc(&ev->arena, sizeof(nx_literal *) * (size_t)(2 * nin));
	for (int k = 0; k < nin; k++) {
		args[k] = nx_eval_scalar(ev, outs[k]->shape->type);
		args[nin + k] = nx_eval_scalar(ev, ops[k]->shape->type);
	}
	int64_t idx[NX_MAX_RANK] = {0}, o = 0;
	const int64_t *dims = ins->dims;
	for (int64_t e = 0; e < n; e++) {
		for (int k = 0; k < nin; k++) {
			nx_lit_copy_elem(args[k], 0, outs[k], o);
			nx_lit_copy_elem(args[nin + k], 0, ops[k], e);
		}
		nx_literal *res;
		nx_status st = nx_eval_call(ev, c, args, 2 * nin, &res);
		if (st != NX_OK)
			return st;
		for (int k = 0; k < nin; k++) {
			const nx_literal *v = nin == 1 && !res->ntuple ? res : k < res->ntuple ? res->tuple[k] : NULL;
			if (!v || v->shape->type != outs[k]->shape->type)
				return nx_eval_error(ev, i, "reduce computation returns the wrong type");
			nx_lit_copy_elem(outs[k], o, v, 0);
		}
		ADVANCE();
	}
	return NX_OK;
}

nx_status nx_eval_reduce(nx_eval *ev, const nx_inst *i, nx_literal *const *ops, nx_literal **out)
{
	if (i->noperands % 2 != 0 || i->noperands == 0 || i->ncalled < 1)
		return nx_eval_error(ev, i, "reduce needs operands, as many init values and to_apply");
	int nin = i->noperands / 2;
	const nx_shape *ins = ops[0]->shape;
	bool red[NX_MAX_RANK] = {0};
	for (int k = 0; k < i->a.dimensions.n; k++) {
		int64_t d = i->a.dimensions.v[k];
		if (d < 0 || d >= ins->rank)
			return nx_eval_error(ev, i, "reduce dimension %lld out of range", (long long)d);
		red[d] = true;
	}
	for (int k = 1; k < nin; k++)
		if (nx_shape_elems(ops[k]->shape) != nx_shape_elems(ins))
			return nx_eval_error(ev, i, "reduce operands differ in size");
	nx_literal *o = nx_eval_alloc(ev, i->shape);
	if (!o)
		return NX_ERR_INPUT;
	*out = o;
	nx_literal **outs = nin == 1 && !nx_shape_is_tuple(i->shape) ? &o : o->tuple;
	if (nin > 1 && o->ntuple != nin)
		return nx_eval_error(ev, i, "variadic reduce needs a tuple result of %d elements", nin);
	/* accumulate in the init values' type (the computation's), convert at the end */
	nx_literal *acc[64];
	if (nin > 64)
		return nx_eval_error(ev, i, "reduce with more than 64 operands");
	for (int k = 0; k < nin; k++) {
		nx_type it = ops[nin + k]->shape->type;
		acc[k] = outs[k]->shape->type == it ? outs[k]
		       : nx_eval_alloc(ev, nx_shape_with_type(&ev->arena, outs[k]->shape, it));
		if (!acc[k])
			return NX_ERR_INPUT;
	}
	nx_opcode op = nin == 1 ? simple_op(i->called[0]) : NX_OP_COUNT;
	nx_type t = acc[0]->shape->type;
	nx_status st;
	if (op != NX_OP_COUNT && ops[0]->shape->type == t && i->called[0]->root->shape->type == t &&
	    nx_dom_of(t) != NX_DOM_C && nx_dom_of(t) != NX_DOM_NONE)
		st = fast_reduce(ev, i, op, ops[0], ops[1], acc[0], red);
	else
		st = generic_reduce(ev, i, ops, nin, acc, red);
	for (int k = 0; k < nin && st == NX_OK; k++) {
		if (acc[k] == outs[k])
			continue;
		nx_literal *c = nx_eval_convert_lit(ev, acc[k], outs[k]->shape->type);
		if (!c)
			return NX_ERR_INPUT;
		if (c->nbytes)
			memcpy(outs[k]->data, c->data, (size_t)c->nbytes);
	}
	return st;
}
