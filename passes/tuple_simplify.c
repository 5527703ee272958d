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

nx_status nx_pass_tuple_simplify(nx_module *m, const nx_pass_ctx *ctx, bool *changed)
{
	(void)ctx;
	for (int c = 0; c < m->ncomps; c++) {
		nx_comp *comp = m->comps[c];
		int *uses = nx_pass_use_counts(comp); /* also sets aux = position */
		for (int i = 0; i < comp->ninsts; i++) {
			nx_inst *in = comp->insts[i];
			nx_inst *repl = forward_of(in);
			/* The entry root keeps its identity: its name and metadata are the
			 * module's output as users see it, and aliasing refers to it. */
			if (!repl || uses[i] == 0 || (comp->is_entry && in == comp->root))
				continue;
			nx_comp_replace_uses(comp, in, repl);
			uses[(intptr_t)repl->aux] += uses[i];
			uses[i] = 0;
			*changed = true;
		}
		free(uses);
	}
	return NX_OK;
}
