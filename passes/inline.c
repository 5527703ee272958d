/* passes/inline.c — replaces every `call` by the body of the computation it
 * calls: the callee's instructions are cloned into the caller just before
 * the call, parameters become the call's operands, and users of the call use
 * the clone of the callee's root. Nested calls inline in the next sweep
 * over the same caller (until no call is left). Only computations reached
 * other than through a call (the entry, fusion/while/reduce bodies...) are
 * inlined into: one reached only by calls is dead once its callers are
 * inlined, and expanding it too made a chain of N calls cost N^2 (issue 15:
 * a 10^5-deep chain took over 300 s and 10 GB). */
#include "passes/pass.h"

#include <stdlib.h>
#include <string.h>

/* One sweep over comp: every call replaced by its callee's body. */
static void sweep(nx_module *m, const nx_pass_ctx *ctx, nx_comp *comp, int64_t extra)
{
	int cap = comp->ninsts + (int)extra;
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
		/* callee.call names; past a few levels of nesting the call's own
		 * name is long: the clone's id keeps it unique and short */
		nx_inst *root = nx_pass_clone_body(m, comp, in->called[0], in->operands,
		                                   strlen(in->name) <= 48 ? in->name : NULL, insts, &n);
		/* Users later in the array get the inlined root. */
		comp->insts = old + i + 1;
		comp->ninsts = nold - i - 1;
		nx_comp_replace_uses(comp, in, root);
		comp->insts = old;
		comp->ninsts = nold;
		if (comp->root == in)
			comp->root = root;
	}
	comp->insts = insts;
	comp->ninsts = n;
	comp->cap = cap;
}

typedef struct comp_ix {
	const nx_comp *c;
	int ix;
} comp_ix;

static int cmp_ix(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)((const comp_ix *)a)->c, y = (uintptr_t)((const comp_ix *)b)->c;
	return x < y ? -1 : x > y;
}

enum { MAX_INLINED = 1 << 24 }; /* instructions in one caller after inlining */

nx_status nx_pass_inline(nx_module *m, const nx_pass_ctx *ctx, bool *changed)
{
	bool *by_call = calloc((size_t)m->ncomps + 1, 1), *by_other = calloc((size_t)m->ncomps + 1, 1);
	NX_ASSERT(by_call && by_other);
	comp_ix *idx = calloc((size_t)m->ncomps + 1, sizeof *idx);
	NX_ASSERT(idx);
	for (int c = 0; c < m->ncomps; c++)
		idx[c] = (comp_ix){m->comps[c], c};
	qsort(idx, (size_t)m->ncomps, sizeof *idx, cmp_ix);
	for (int c = 0; c < m->ncomps; c++)
		for (int i = 0; i < m->comps[c]->ninsts; i++) {
			const nx_inst *in = m->comps[c]->insts[i];
			for (int k = 0; k < in->ncalled; k++) {
				comp_ix key = {in->called[k], 0};
				const comp_ix *f = bsearch(&key, idx, (size_t)m->ncomps, sizeof *idx, cmp_ix);
				if (f)
					(in->op == NX_OP_CALL ? by_call : by_other)[f->ix] = true;
			}
		}
	nx_status st = NX_OK;
	for (int c = 0; c < m->ncomps && st == NX_OK; c++) {
		nx_comp *comp = m->comps[c];
		if (by_call[c] && !by_other[c] && !comp->is_entry && comp != m->entry)
			continue; /* reached only through calls: dead after inlining */
		for (;;) {
			int64_t extra = 0;
			for (int i = 0; i < comp->ninsts; i++)
				if (comp->insts[i]->op == NX_OP_CALL && comp->insts[i]->ncalled == 1)
					extra += comp->insts[i]->called[0]->ninsts;
			if (!extra)
				break;
			if (comp->ninsts + extra > MAX_INLINED) {
				st = nx_diag_set(ctx->diag, NX_ERR_INPUT, m->file, 0, 0,
				                 "inlining the calls of computation '%s' makes more than %d instructions",
				                 comp->name, MAX_INLINED);
				break;
			}
			sweep(m, ctx, comp, extra);
			*changed = true;
		}
	}
	free(idx);
	free(by_call);
	free(by_other);
	return st;
}
