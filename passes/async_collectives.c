/* passes/async_collectives.c — asynchronous HLO forms into their synchronous
 * operations. XLA's scheduler splits an operation into a -start that begins
 * it and a -done that waits for it, so that independent work can run in
 * between; nxcc schedules kernels itself (queues, semaphores), so the pair
 * is one operation again:
 *
 *   all-reduce-start(x) ............ -> all-reduce(x)   (same attributes)
 *   all-reduce-done(s) ............. -> s
 *   all-gather-start(x) : (T, R) ... -> tuple(x, all-gather(x) : R)
 *   collective-permute-start(x) .... -> tuple(x, collective-permute(x), 0...)
 *   copy-start(x) : (T, T, u32[]) .. -> tuple(x, copy(x), 0)
 *   X-done(s), s : (T, R, ...) ..... -> get-tuple-element(s, 1)
 *   async-start(xs), calls=C ....... -> (left for dce)
 *   async-done(async-update*(s)) ... -> C's body cloned with s's operands
 *   op-start / op-done (the "negate-start" form of a wrapped opcode) likewise
 *
 * A -start whose shape is the bare result (no (operands, results) tuple)
 * becomes the operation with that shape. The tuples are folded away by
 * tuple-simplify. Where the form is not one of these, the instruction stays
 * and the backend refuses it by name. */
#include "passes/rewrite.h"

#include <stdlib.h>

static nx_inst *gte(nx_rw *rw, nx_inst *x, int k)
{
	nx_inst *g = nx_rw_add(rw, NX_OP_GET_TUPLE_ELEMENT, x->shape->tuple[k], &x, 1, NULL);
	g->a.tuple_index = k;
	return g;
}

/* The synchronous operation op on in's operands with in's attributes and
 * called computations, of the given shape. */
static nx_inst *sync_op(nx_rw *rw, const nx_inst *in, nx_opcode op, nx_shape *shape)
{
	nx_inst *s = nx_rw_add(rw, op, shape, in->operands, in->noperands, NULL);
	nx_inst **ctrl = s->a.control_predecessors;
	int nctrl = s->a.ncontrol_predecessors;
	s->a = in->a;
	s->a.control_predecessors = ctrl;
	s->a.ncontrol_predecessors = nctrl;
	s->a.async_wrapped = NX_OP_COUNT;
	s->called = in->called;
	s->ncalled = in->ncalled;
	return s;
}

/* The operand part of a start's (operands, results[, contexts]) shape:
 * the operand's own shape for one operand, a tuple of them for several. */
static bool is_operand_part(const nx_inst *in, const nx_shape *s)
{
	if (in->noperands == 1)
		return nx_shape_compatible(s, in->operands[0]->shape);
	if (!nx_shape_is_tuple(s) || s->ntuple != in->noperands)
		return false;
	for (int k = 0; k < in->noperands; k++)
		if (!nx_shape_compatible(s->tuple[k], in->operands[k]->shape))
			return false;
	return true;
}

/* zero of an array or u32[] context shape */
static nx_inst *zero_of(nx_rw *rw, const nx_shape *s)
{
	if (!nx_shape_is_array(s))
		return NULL;
	if (s->rank == 0)
		return nx_rw_scalar(rw, s->type, 0);
	return nx_rw_splat(rw, s, s->type, 0);
}

/* A wrapped -start: tuple(operands, op(operands), zero contexts...). */
static nx_inst *wrapped_start(nx_rw *rw, nx_inst *in, nx_opcode op)
{
	const nx_shape *s = in->shape;
	if (!nx_shape_is_tuple(s) || s->ntuple < 2 || !is_operand_part(in, s->tuple[0]))
		return NULL;
	nx_inst *el[8];
	if (s->ntuple > 8)
		return NULL;
	if (in->noperands == 1) {
		el[0] = in->operands[0];
	} else {
		el[0] = nx_rw_add(rw, NX_OP_TUPLE, s->tuple[0], in->operands, in->noperands, NULL);
	}
	el[1] = sync_op(rw, in, op, s->tuple[1]);
	for (int k = 2; k < s->ntuple; k++)
		if (!(el[k] = zero_of(rw, s->tuple[k])))
			return NULL;
	return nx_rw_add(rw, NX_OP_TUPLE, in->shape, el, s->ntuple, NULL);
}

static nx_inst *start(nx_rw *rw, nx_inst *in, nx_opcode op)
{
	if (nx_shape_is_tuple(in->shape) && in->shape->ntuple >= 2 && is_operand_part(in, in->shape->tuple[0]) &&
	    !(in->noperands > 1 && op == NX_OP_ALL_REDUCE))
		return wrapped_start(rw, in, op);
	return sync_op(rw, in, op, in->shape);
}

/* -done: element 1 of a (operands, results, ...) tuple, else the value. */
static nx_inst *done(nx_rw *rw, nx_inst *in)
{
	nx_inst *s = in->operands[0];
	if (nx_shape_compatible(in->shape, s->shape))
		return s;
	if (nx_shape_is_tuple(s->shape) && s->shape->ntuple >= 2 && nx_shape_compatible(in->shape, s->shape->tuple[1]))
		return gte(rw, s, 1);
	return NULL;
}

static nx_inst *async_done(nx_rw *rw, nx_inst *in)
{
	nx_inst *s = in->operands[0];
	while (s->op == NX_OP_ASYNC_UPDATE && s->noperands == 1)
		s = s->operands[0];
	if (s->op != NX_OP_ASYNC_START)
		return NULL;
	if (s->ncalled == 1) {
		const nx_comp *body = s->called[0];
		if (body->nparams != s->noperands || !nx_shape_compatible(in->shape, body->root->shape))
			return NULL;
		nx_inst **cl = malloc(sizeof(nx_inst *) * (size_t)(body->ninsts + 1));
		NX_ASSERT(cl);
		int n = 0;
		nx_inst *root = nx_pass_clone_body(rw->m, rw->c, body, s->operands, in->name, cl, &n);
		for (int k = 0; k < n; k++)
			nx_rw_place(rw, cl[k]);
		free(cl);
		return root;
	}
	if (s->a.async_wrapped != NX_OP_COUNT && s->a.async_wrapped != NX_OP_ASYNC_START)
		return sync_op(rw, s, s->a.async_wrapped, in->shape);
	return NULL;
}

static nx_inst *rewrite(nx_rw *rw, nx_inst *in)
{
	nx_inst *r = NULL;
	switch (in->op) {
	case NX_OP_ALL_REDUCE_START: r = start(rw, in, NX_OP_ALL_REDUCE); break;
	case NX_OP_ALL_GATHER_START: r = start(rw, in, NX_OP_ALL_GATHER); break;
	case NX_OP_COLLECTIVE_PERMUTE_START: r = start(rw, in, NX_OP_COLLECTIVE_PERMUTE); break;
	case NX_OP_COPY_START: r = start(rw, in, NX_OP_COPY); break;
	case NX_OP_ALL_REDUCE_DONE:
	case NX_OP_ALL_GATHER_DONE:
	case NX_OP_COLLECTIVE_PERMUTE_DONE:
	case NX_OP_COPY_DONE:
		if (in->noperands == 1)
			r = done(rw, in);
		break;
	case NX_OP_ASYNC_DONE:
		if (in->noperands == 1)
			r = async_done(rw, in);
		break;
	default: break;
	}
	if (r)
		nx_pass_log(rw->ctx, 2, "async-collectives: %s (%s)", in->name, nx_opcode_name(in->op));
	return r;
}

nx_status nx_pass_async_collectives(nx_module *m, const nx_pass_ctx *ctx, bool *changed)
{
	return nx_rw_run(m, ctx, "async-collectives", rewrite, NULL, changed);
}
