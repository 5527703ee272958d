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

/* FNV-1a over n bytes */
static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t k = 0; k < n; k++)
		h = (h ^ b[k]) * 0x100000001b3ull;
	return h;
}

/* A fingerprint of what the key holds (opcode, shape, operand names, a
 * constant's bytes): equal keys have equal fingerprints (but for constants
 * whose different bytes print alike, such as NaNs of other payloads, which
 * are no longer merged), so an instruction is printed only when an earlier
 * one shares its fingerprint (printing every instruction was most of the
 * pass). */
static uint64_t fingerprint(const nx_inst *i)
{
	uint64_t h = 0xcbf29ce484222325ull;
	int op = (int)i->op, ty = (int)i->shape->type;
	h = fnv(h, &op, sizeof op);
	h = fnv(h, &ty, sizeof ty);
	if (i->shape->type == NX_TUPLE)
		h = fnv(h, &i->shape->ntuple, sizeof i->shape->ntuple);
	else
		for (int d = 0; d < i->shape->rank; d++)
			h = fnv(h, &i->shape->dims[d], sizeof i->shape->dims[d]);
	h = fnv(h, &i->noperands, sizeof i->noperands);
	for (int k = 0; k < i->noperands; k++)
		h = fnv(h, i->operands[k]->name, strlen(i->operands[k]->name) + 1);
	if (i->op == NX_OP_CONSTANT && i->a.literal && i->a.literal->data)
		h = fnv(h, i->a.literal->data, (size_t)i->a.literal->nbytes);
	return h;
}

nx_status nx_pass_cse(nx_module *m, const nx_pass_ctx *ctx, bool *changed)
{
	for (int c = 0; c < m->ncomps; c++) {
		nx_comp *comp = m->comps[c];
		size_t n = (size_t)(comp->ninsts ? comp->ninsts : 1);
		/* fingerprint -> the first instruction with it; next: the others
		 * with it, in order (their keys differ); key: printed when needed */
		nx_strmap t = {0};
		uint64_t *fp = malloc(sizeof *fp * n);
		int *next = malloc(sizeof *next * n);
		char **key = calloc(n, sizeof *key);
		bool *keep = malloc(sizeof(bool) * n);
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
			 * identical keys mean identical values; an instruction's key
			 * does not change after its turn (printed later is the same). */
			fp[i] = fingerprint(in);
			next[i] = -1;
			intptr_t head;
			if (nx_strmap_add(&t, (const char *)&fp[i], sizeof fp[i], i, &head))
				continue;
			key[i] = key_of(in);
			nx_inst *prev = NULL;
			int last = -1;
			for (int j = (int)head; j >= 0 && !prev; last = j, j = next[j]) {
				if (!key[j])
					key[j] = key_of(comp->insts[j]);
				if (strcmp(key[i], key[j]) == 0)
					prev = comp->insts[j];
			}
			if (!prev) {
				next[last] = i;
				continue;
			}
			nx_pass_log(ctx, 2, "cse: %s -> %s", in->name, prev->name);
			in->aux = prev;
			keep[i] = false;
			removed = true;
		}
		if (removed) {
			nx_comp_compact(comp, keep);
			*changed = true;
		}
		for (size_t i = 0; i < n; i++)
			free(key[i]);
		free(key);
		free(next);
		free(fp);
		free(keep);
		nx_strmap_free(&t);
	}
	return NX_OK;
}
