/* passes/util.c — helpers shared by passes. */
#include "passes/pass.h"

#include <stdlib.h>

bool nx_pass_has_side_effect(const nx_inst *i)
{
	return (nx_opcode_flags(i->op) & NX_OPF_SIDE_EFFECT) ||
	       (i->op == NX_OP_CUSTOM_CALL && i->a.custom_call_has_side_effect);
}

bool nx_pass_is_pure(const nx_inst *i)
{
	if (nx_pass_has_side_effect(i) || (nx_opcode_flags(i->op) & NX_OPF_COLLECTIVE))
		return false;
	switch (i->op) {
	case NX_OP_RNG:
	case NX_OP_RNG_BIT_GENERATOR:
	case NX_OP_RNG_GET_AND_UPDATE_STATE:
	case NX_OP_REPLICA_ID:
	case NX_OP_PARTITION_ID:
	case NX_OP_AFTER_ALL:
	case NX_OP_ASYNC_START:
	case NX_OP_ASYNC_UPDATE:
	case NX_OP_ASYNC_DONE:
	case NX_OP_COPY_START:
	case NX_OP_COPY_DONE:
	case NX_OP_OPT_BARRIER:
		return false;
	default:
		return true;
	}
}

int *nx_pass_use_counts(const nx_comp *c)
{
	int *uses = calloc((size_t)(c->ninsts ? c->ninsts : 1), sizeof(int));
	/* Positions come from the scratch field, set here for this call only. */
	for (int i = 0; i < c->ninsts; i++)
		c->insts[i]->aux = (void *)(intptr_t)i;
	for (int i = 0; i < c->ninsts; i++) {
		const nx_inst *in = c->insts[i];
		for (int k = 0; k < in->noperands; k++)
			uses[(intptr_t)in->operands[k]->aux]++;
	}
	if (c->root)
		uses[(intptr_t)c->root->aux]++;
	return uses;
}

nx_opcode nx_pass_reducer_op(const nx_comp *c)
{
	const nx_inst *r = c ? c->root : NULL;
	if (!r || c->nparams != 2 || r->noperands != 2 || c->ninsts != 3)
		return NX_OP_COUNT;
	bool direct = r->operands[0] == c->params[0] && r->operands[1] == c->params[1];
	bool swapped = r->operands[0] == c->params[1] && r->operands[1] == c->params[0];
	if (!direct && !swapped)
		return NX_OP_COUNT;
	switch (r->op) {
	case NX_OP_ADD: case NX_OP_MULTIPLY: case NX_OP_MAXIMUM: case NX_OP_MINIMUM:
	case NX_OP_AND: case NX_OP_OR:
		return r->op;
	default:
		return NX_OP_COUNT;
	}
}

nx_inst *nx_pass_clone_body(nx_module *m, nx_comp *into, const nx_comp *body, nx_inst *const *args,
                            const char *suffix, nx_inst **out, int *nout)
{
	nx_inst **map = calloc((size_t)body->ninsts + 1, sizeof *map);
	NX_ASSERT(map);
	for (int i = 0; i < body->ninsts; i++)
		body->insts[i]->aux = (void *)(intptr_t)i;
	for (int i = 0; i < body->ninsts; i++) {
		const nx_inst *src = body->insts[i];
		if (src->op == NX_OP_PARAMETER) {
			map[i] = args[src->a.parameter_number];
			continue;
		}
		nx_inst *c = nx_arena_dup(&m->arena, src, sizeof *src);
		c->id = m->next_id++;
		c->parent = into;
		c->name = suffix ? nx_arena_printf(&m->arena, "%s.%s", src->name, suffix)
		                 : nx_arena_printf(&m->arena, "%s.i%lld", src->name, (long long)c->id);
		c->operands = nx_arena_alloc(&m->arena, sizeof(nx_inst *) * (size_t)(src->noperands + 1));
		for (int k = 0; k < src->noperands; k++)
			c->operands[k] = map[(intptr_t)src->operands[k]->aux];
		if (src->a.ncontrol_predecessors) {
			c->a.control_predecessors =
				nx_arena_alloc(&m->arena, sizeof(nx_inst *) * (size_t)src->a.ncontrol_predecessors);
			for (int k = 0; k < src->a.ncontrol_predecessors; k++)
				c->a.control_predecessors[k] = map[(intptr_t)src->a.control_predecessors[k]->aux];
		}
		map[i] = c;
		out[(*nout)++] = c;
	}
	nx_inst *root = map[(intptr_t)body->root->aux];
	free(map);
	return root;
}
