/* passes/tuple_simplify.c — get-tuple-element(tuple(a0, a1, ...), k) -> ak;
 * tuple(gte(x, 0), ..., gte(x, n-1)) -> x when x has exactly n elements. */
#include "passes/pass.h"

#include <stdlib.h>

static nx_inst *forward_of(nx_inst *in)
{
	if (in->op == NX_OP_GET_TUPLE_ELEMENT && in->operands[0]->op == NX_OP_TUPLE) {
		nx_inst *t = in->operands[0];
		int64_t k = in->a.tuple_index;
		if (k >= 0 && k < t->noperands && nx_shape_equal(t->operands[k]->shape, in->shape))
			return t->operands[k];
	}
	if (in->op == NX_OP_TUPLE && in->noperands > 0) {
		nx_inst *src = NULL;
		for (int k = 0; k < in->noperands; k++) {
			nx_inst *g = in->operands[k];
			if (g->op != NX_OP_GET_TUPLE_ELEMENT || g->a.tuple_index != k)
				return NULL;
			if (src && g->operands[0] != src)
				return NULL;
			src = g->operands[0];
		}
		if (src->shape->type == NX_TUPLE && src->shape->ntuple == in->noperands &&
		    nx_shape_equal(src->shape, in->shape))
			return src;
	}
	return NULL;
}

/* One sweep in program order: operands are redirected to the forwards
 * found so far (what nx_comp_replace_uses does, without rescanning the
 * computation for every forward: unrolled loops make it long). */
nx_status nx_pass_tuple_simplify(nx_module *m, const nx_pass_ctx *ctx, bool *changed)
{
	(void)ctx;
	for (int c = 0; c < m->ncomps; c++) {
		nx_comp *comp = m->comps[c];
		free(nx_pass_use_counts(comp)); /* sets aux = position */
		nx_inst **fwd = calloc((size_t)comp->ninsts + 1, sizeof *fwd);
		NX_ASSERT(fwd);
#define NX_FWD(x) (fwd[(intptr_t)(x)->aux] ? fwd[(intptr_t)(x)->aux] : (x))
		for (int i = 0; i < comp->ninsts; i++) {
			nx_inst *in = comp->insts[i];
			for (int k = 0; k < in->noperands; k++)
				if (NX_FWD(in->operands[k]) != in->operands[k]) {
					in->operands[k] = NX_FWD(in->operands[k]);
					*changed = true;
				}
			for (int k = 0; k < in->a.ncontrol_predecessors; k++)
				if (NX_FWD(in->a.control_predecessors[k]) != in->a.control_predecessors[k]) {
					in->a.control_predecessors[k] = NX_FWD(in->a.control_predecessors[k]);
					*changed = true;
				}
			nx_inst *repl = forward_of(in);
			/* The entry root keeps its identity: its name and metadata are the
			 * module's output as users see it, and aliasing refers to it. */
			if (repl && !(comp->is_entry && in == comp->root))
				fwd[i] = repl;
		}
		if (comp->root && !comp->is_entry && NX_FWD(comp->root) != comp->root) {
			comp->root = NX_FWD(comp->root);
			*changed = true;
		}
#undef NX_FWD
		free(fwd);
	}
	return NX_OK;
}
