/* passes/dce.c — removes instructions whose results nobody uses, and
 * computations nothing calls.
 * Keeps: parameters (they fix the signature), side-effecting instructions,
 * control predecessors of live instructions. */
#include "passes/pass.h"

#include <stdlib.h>

static bool dce_comp(nx_comp *c)
{
	int n = c->ninsts;
	if (n == 0)
		return false;
	for (int i = 0; i < n; i++)
		c->insts[i]->aux = (void *)(intptr_t)i;
	bool *live = calloc((size_t)(unsigned)n, sizeof(bool));
	/* Topological order: walking backwards sees every user before its operands. */
	if (c->root)
		live[(intptr_t)c->root->aux] = true;
	for (int i = n - 1; i >= 0; i--) {
		nx_inst *in = c->insts[i];
		if (in->op == NX_OP_PARAMETER || nx_pass_has_side_effect(in))
			live[i] = true;
		if (!live[i])
			continue;
		for (int k = 0; k < in->noperands; k++)
			live[(intptr_t)in->operands[k]->aux] = true;
		for (int k = 0; k < in->a.ncontrol_predecessors; k++)
			live[(intptr_t)in->a.control_predecessors[k]->aux] = true;
	}
	bool changed = false;
	for (int i = 0; i < n; i++)
		changed |= !live[i];
	if (changed)
		nx_comp_compact(c, live);
	free(live);
	return changed;
}

static void mark_called(nx_comp *c, bool *reach, nx_module *m)
{
	for (int i = 0; i < m->ncomps; i++)
		if (m->comps[i] == c) {
			if (reach[i])
				return;
			reach[i] = true;
			break;
		}
	for (int i = 0; i < c->ninsts; i++)
		for (int k = 0; k < c->insts[i]->ncalled; k++)
			mark_called(c->insts[i]->called[k], reach, m);
}

nx_status nx_pass_dce(nx_module *m, const nx_pass_ctx *ctx, bool *changed)
{
	(void)ctx;
	for (int i = 0; i < m->ncomps; i++)
		*changed |= dce_comp(m->comps[i]);
	if (!m->entry)
		return NX_OK;
	bool *reach = calloc((size_t)(unsigned)m->ncomps + 1, sizeof(bool));
	mark_called(m->entry, reach, m);
	int j = 0;
	for (int i = 0; i < m->ncomps; i++)
		if (reach[i])
			m->comps[j++] = m->comps[i];
	if (j != m->ncomps)
		*changed = true;
	m->ncomps = j;
	free(reach);
	return NX_OK;
}
