/* passes/util.c — helpers shared by passes. */
#include "passes/pass.h"

#include <stdlib.h>

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
