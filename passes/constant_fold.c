/* passes/constant_fold.c — an instruction whose operands are all constants
 * (or broadcasts of constants) is evaluated with the reference evaluator and
 * replaced by a constant.
 *
 * How: the instruction is copied into a one-instruction module whose entry
 * computation holds its constant operands, and nx_eval_module runs it (the
 * evaluator is the one semantics we have; called computations, e.g. a
 * reducer, are shared with the original module, read-only). The result is
 * copied into the module's arena.
 *
 * Never folded: parameters, side-effecting, rng, collective, custom-call,
 * control-flow and async ops, tuples, instructions without operands (iota:
 * folding only grows the module; an iota of at most 64 elements is a
 * constant operand of its users, though), broadcasts (a broadcast of a scalar
 * constant stays a broadcast), results over ctx->fold_max_elems elements.
 * An elementwise op whose operands are all splats (scalar constants or
 * broadcasts of one) is folded on scalars and stays a broadcast of the new
 * scalar constant, so no large array constant appears. An instruction the
 * evaluator rejects (e.g. an unsupported op) is simply left alone. */
#include "passes/rewrite.h"

#include "ir/eval/eval.h"

#include <string.h>

/* An iota this small counts as a constant operand: a scan carries its
 * chunk offsets as iota * stride, and once the loop is unrolled
 * (while-unroll) slicing them must give constant indices. */
#define NX_FOLD_IOTA_MAX 64

static bool foldable_op(const nx_inst *in)
{
	if (!nx_pass_is_pure(in))
		return false;
	/* Already folded (constant, splat, iota), not an array computation of
	 * its own (calls, control flow, tuples) or opaque (custom calls). */
	switch (in->op) {
	case NX_OP_PARAMETER:
	case NX_OP_CONSTANT:
	case NX_OP_BROADCAST:
	case NX_OP_IOTA:
	case NX_OP_CUSTOM_CALL:
	case NX_OP_WHILE:
	case NX_OP_CONDITIONAL:
	case NX_OP_CALL:
	case NX_OP_FUSION:
	case NX_OP_DOMAIN:
	case NX_OP_TUPLE:
	case NX_OP_GET_TUPLE_ELEMENT:
	case NX_OP_ADD_DEPENDENCY:
		return false;
	default:
		return in->noperands > 0 && nx_shape_is_array(in->shape) &&
		       in->a.ncontrol_predecessors == 0;
	}
}

static bool is_scalar_const(const nx_inst *x)
{
	return x->op == NX_OP_CONSTANT && x->shape->rank == 0 && x->a.literal;
}

/* Evaluates a copy of in on operand constants ops[] (with the given shapes);
 * NULL when the evaluator refuses. */
static nx_literal *evaluate(nx_rw *rw, const nx_inst *in, nx_inst *const *ops, nx_shape *shape)
{
	nx_module *t = nx_module_new("fold");
	t->replica_count = rw->m->replica_count;
	t->num_partitions = rw->m->num_partitions;
	nx_comp *c = nx_comp_new(t, "fold");
	c->is_entry = true;
	t->entry = c;
	nx_inst *k[64];
	for (int j = 0; j < in->noperands; j++) {
		const nx_inst *src = ops[j];
		nx_inst *kc = NULL;
		if (src->op == NX_OP_IOTA) {
			k[j] = nx_inst_new(c, NX_OP_IOTA, nx_shape_copy(&t->arena, src->shape), NULL, 0,
			                   nx_arena_printf(&t->arena, "i%d", j));
			k[j]->a = src->a;
			continue;
		}
		const nx_inst *lit = src->op == NX_OP_BROADCAST ? src->operands[0] : src;
		kc = nx_inst_new(c, NX_OP_CONSTANT, nx_shape_copy(&t->arena, lit->shape), NULL, 0,
		                 nx_arena_printf(&t->arena, "k%d", j));
		kc->a.literal = lit->a.literal;
		if (src->op == NX_OP_BROADCAST) {
			nx_inst *b = nx_inst_new(c, NX_OP_BROADCAST, nx_shape_copy(&t->arena, src->shape), &kc,
			                         1, nx_arena_printf(&t->arena, "b%d", j));
			b->a = src->a;
			kc = b;
		}
		k[j] = kc;
	}
	nx_inst *r = nx_inst_new(c, in->op, nx_shape_copy(&t->arena, shape), k, in->noperands, "r");
	r->a = in->a;
	r->a.ncontrol_predecessors = 0;
	r->a.control_predecessors = NULL;
	if (in->ncalled)
		nx_inst_set_called(r, in->called, in->ncalled);
	c->root = r;
	nx_eval_opts o = {.max_memory = (int64_t)1 << 30};
	nx_literal *const *noargs[1] = {NULL};
	nx_literal *out = NULL;
	nx_diag d = {0};
	nx_status st = nx_eval_module(t, &o, 0, noargs, &rw->m->arena, &out, &d);
	if (st != NX_OK) {
		nx_pass_log(rw->ctx, 2, "constant-fold: not folding %s: %s", in->name, d.msg ? d.msg : "");
		out = NULL;
	}
	nx_diag_clear(&d);
	nx_module_free(t);
	return out;
}

static nx_inst *fold(nx_rw *rw, nx_inst *in)
{
	if (!foldable_op(in) || in->noperands > 64)
		return NULL;
	bool splats = (nx_opcode_flags(in->op) & NX_OPF_ELEMENTWISE) != 0;
	for (int j = 0; j < in->noperands; j++) {
		nx_inst *x = in->operands[j];
		bool bcast = x->op == NX_OP_BROADCAST && x->operands[0]->op == NX_OP_CONSTANT;
		bool small_iota = x->op == NX_OP_IOTA && nx_shape_elems(x->shape) <= NX_FOLD_IOTA_MAX;
		if (x->op != NX_OP_CONSTANT && !bcast && !small_iota)
			return NULL;
		if (!(is_scalar_const(x) || (bcast && is_scalar_const(x->operands[0]))))
			splats = false;
	}
	nx_arena *a = nx_rw_arena(rw);
	if (splats && in->shape->rank > 0) {
		/* fold on scalars, keep the broadcast */
		nx_inst *sops[64];
		for (int j = 0; j < in->noperands; j++) {
			nx_inst *x = in->operands[j];
			sops[j] = x->op == NX_OP_BROADCAST ? x->operands[0] : x;
		}
		nx_literal *l = evaluate(rw, in, sops, nx_shape_scalar(a, in->shape->type));
		if (!l)
			return NULL;
		nx_inst *k = nx_rw_add(rw, NX_OP_CONSTANT, nx_shape_scalar(a, in->shape->type), NULL, 0,
		                       "constant");
		k->a.literal = l;
		return nx_rw_broadcast(rw, k, in->shape->type, in->shape->rank, in->shape->dims, NULL);
	}
	int64_t cap = rw->ctx && rw->ctx->fold_max_elems > 0 ? rw->ctx->fold_max_elems : 1 << 16;
	int64_t n = nx_shape_elems(in->shape);
	if (n < 0 || n > cap)
		return NULL;
	for (int j = 0; j < in->noperands; j++)
		if (nx_shape_elems(in->operands[j]->shape) > (int64_t)1 << 24)
			return NULL;
	nx_literal *l = evaluate(rw, in, in->operands, in->shape);
	if (!l)
		return NULL;
	nx_inst *k = nx_rw_add(rw, NX_OP_CONSTANT, nx_shape_copy(a, in->shape), NULL, 0, "constant");
	k->a.literal = l;
	k->a.metadata = in->a.metadata;
	k->a.nmetadata = in->a.nmetadata;
	return k;
}

nx_status nx_pass_constant_fold(nx_module *m, const nx_pass_ctx *ctx, bool *changed)
{
	return nx_rw_run(m, ctx, "constant-fold", fold, NULL, changed);
}
