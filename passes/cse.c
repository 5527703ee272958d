/* passes/cse.c — common subexpression elimination: an instruction identical
 * to an earlier one in the same computation (same opcode, shape, operands,
 * called computations and attributes) is replaced by it.
 * Never merges: parameters, side-effecting ops, rng, collectives (their
 * identity is their communication), custom calls with side effects. */
#include "passes/pass.h"

#include "ir/map.h"

#include <stdlib.h>
#include <string.h>

static bool mergeable(const nx_inst *i)
{
	return i->op != NX_OP_PARAMETER && nx_pass_is_pure(i);
}

/* The instruction's printed form without its name: everything after " = ". */
static char *key_of(const nx_inst *i)
{
	nx_print_opts o = {.no_metadata = true};
	char *s = nx_print_inst(i, &o);
	char *eq = strstr(s, " = ");
	if (!eq)
		return s;
	memmove(s, eq + 3, strlen(eq + 3) + 1);
	return s;
}

/* Returns the existing instruction for key, or inserts val and returns NULL
 * (the table then owns key). */
static nx_inst *lookup_or_insert(nx_strmap *t, char *key, nx_inst *val, bool *owned)
{
	intptr_t old;
	if (!nx_strmap_add(t, key, strlen(key), (intptr_t)val, &old))
		return (nx_inst *)old;
	*owned = true;
	return NULL;
}

static void table_free(nx_strmap *t)
{
	for (size_t i = 0; i < t->cap; i++) {
		const nx_strmap_ent *e = nx_strmap_at(t, i);
		if (e)
			free((void *)e->key);
	}
	nx_strmap_free(t);
}

nx_status nx_pass_cse(nx_module *m, const nx_pass_ctx *ctx, bool *changed)
{
	for (int c = 0; c < m->ncomps; c++) {
		nx_comp *comp = m->comps[c];
		nx_strmap t = {0};
		bool *keep = malloc(sizeof(bool) * (size_t)(comp->ninsts ? comp->ninsts : 1));
		bool removed = false;
		/* aux = the instruction a removed one forwards to; users come later
		 * in topological order and take it as they are reached (one sweep,
		 * linear, instead of a scan of the computation per merge). */
		for (int i = 0; i < comp->ninsts; i++)
			comp->insts[i]->aux = NULL;
		for (int i = 0; i < comp->ninsts; i++) {
			nx_inst *in = comp->insts[i];
			keep[i] = true;
			for (int k = 0; k < in->noperands; k++)
				if (in->operands[k]->aux)
					in->operands[k] = in->operands[k]->aux;
			for (int k = 0; k < in->a.ncontrol_predecessors; k++)
				if (in->a.control_predecessors[k]->aux)
					in->a.control_predecessors[k] = in->a.control_predecessors[k]->aux;
			if (!mergeable(in) || in == comp->root)
				continue;
			/* Operands were already canonicalized (topological order), so
			 * identical keys mean identical values. */
			char *key = key_of(in);
			bool owned = false;
			nx_inst *prev = lookup_or_insert(&t, key, in, &owned);
			if (!owned)
				free(key);
			if (!prev)
				continue;
			nx_pass_log(ctx, 2, "cse: %s -> %s", in->name, prev->name);
			in->aux = prev;
			keep[i] = false;
			removed = true;
		}
		if (removed) {
			nx_comp_compact(comp, keep);
			*changed = true;
		}
		free(keep);
		table_free(&t);
	}
	return NX_OK;
}
