/* passes/inline.c — replaces every `call` by the body of the computation it
 * calls: the callee's instructions are cloned into the caller just before
 * the call, parameters become the call's operands, and users of the call use
 * the clone of the callee's root. Nested calls inline in the next round of
 * the same pass (it loops until no call is left). */
#include "passes/pass.h"

#include <stdlib.h>
#include <string.h>

/* Clones callee's instructions into a fresh array of the caller's arena. */
static nx_inst *inline_call(nx_module *m, nx_comp *caller, nx_inst *call, nx_inst ***out,
                            int *nout)
{
	nx_comp *callee = call->called[0];
	nx_inst **map = calloc((size_t)(callee->ninsts ? callee->ninsts : 1), sizeof(nx_inst *));
	for (int i = 0; i < callee->ninsts; i++)
		callee->insts[i]->aux = (void *)(intptr_t)i;
	for (int i = 0; i < callee->ninsts; i++) {
		nx_inst *src = callee->insts[i];
		if (src->op == NX_OP_PARAMETER) {
			map[i] = call->operands[src->a.parameter_number];
			continue;
		}
		nx_inst *c = nx_arena_dup(&m->arena, src, sizeof(*src));
		c->id = m->next_id++;
		c->parent = caller;
		c->name = nx_arena_printf(&m->arena, "%s.%s", src->name, call->name);
		c->operands = nx_arena_alloc(&m->arena, sizeof(nx_inst *) * (size_t)(src->noperands ? src->noperands : 1));
		for (int k = 0; k < src->noperands; k++)
			c->operands[k] = map[(intptr_t)src->operands[k]->aux];
		if (src->a.ncontrol_predecessors) {
			c->a.control_predecessors = nx_arena_alloc(
				&m->arena, sizeof(nx_inst *) * (size_t)src->a.ncontrol_predecessors);
			for (int k = 0; k < src->a.ncontrol_predecessors; k++)
				c->a.control_predecessors[k] = map[(intptr_t)src->a.control_predecessors[k]->aux];
		}
		map[i] = c;
		(*out)[(*nout)++] = c;
	}
	nx_inst *root = map[(intptr_t)callee->root->aux];
	free(map);
	return root;
}

nx_status nx_pass_inline(nx_module *m, const nx_pass_ctx *ctx, bool *changed)
{
	for (int round = 0; round < 64; round++) {
		bool any = false;
		for (int c = 0; c < m->ncomps; c++) {
			nx_comp *comp = m->comps[c];
			int extra = 0;
			for (int i = 0; i < comp->ninsts; i++)
				if (comp->insts[i]->op == NX_OP_CALL && comp->insts[i]->ncalled == 1)
					extra += comp->insts[i]->called[0]->ninsts;
			if (!extra)
				continue;
			int cap = comp->ninsts + extra;
			nx_inst **insts = nx_arena_alloc(&m->arena, sizeof(nx_inst *) * (size_t)cap);
			int n = 0;
			int nold = comp->ninsts;
			nx_inst **old = comp->insts;
			for (int i = 0; i < nold; i++) {
				nx_inst *in = old[i];
				if (in->op != NX_OP_CALL || in->ncalled != 1) {
					insts[n++] = in;
					continue;
				}
				nx_pass_log(ctx, 2, "inline: %s calls %s", in->name, in->called[0]->name);
				nx_inst *root = inline_call(m, comp, in, &insts, &n);
				/* Users later in the array get the inlined root. */
				comp->insts = old + i + 1;
				comp->ninsts = nold - i - 1;
				nx_comp_replace_uses(comp, in, root);
				comp->insts = old;
				comp->ninsts = nold;
				if (comp->root == in)
					comp->root = root;
				any = true;
			}
			comp->insts = insts;
			comp->ninsts = n;
			comp->cap = cap;
		}
		if (!any)
			break;
		*changed = true;
	}
	return NX_OK;
}
