/* passes/while_unroll.c — replaces a counted while loop (passes/loops.h) by
 * trips copies of its body: copy t reads the state copy t-1 produced (copy 0
 * the loop's init), users of the loop read the last copy; 0 trips is the init
 * itself. The condition is not copied: the trip count decides it.
 *
 * Inner loops go first: a loop is unrolled once no loop in its body can
 * still be, so the size test sees the body as it will be cloned. A loop is
 * unrolled when trips x body instructions <= NX_UNROLL_MAX_INSTS (4096):
 * small loops cost little code and gain constant starts for their slices.
 * Bigger counted loops stay whiles and become device loops (one copy of the
 * body's code, backend/lower_while.c); so do all of them under
 * --disable-pass=while-unroll. Loops whose trip count is not a compile-time
 * constant stay whiles too (the backend evaluates their condition on the
 * device).
 * Copies are named <instruction>.<loop>.<trip>. */
#include "passes/loops.h"
#include "passes/pass.h"

#include <stdlib.h>

static int64_t unroll_trips(const nx_inst *w)
{
	if (w->op != NX_OP_WHILE)
		return -1;
	nx_trip_count t = nx_while_trip_count(w);
	if (t.n < 0)
		return -1;
	int64_t size = w->called[1]->ninsts;
	if (t.n > 0 && size > NX_UNROLL_MAX_INSTS / t.n)
		return -1;
	return t.n;
}

static bool has_unrollable(const nx_comp *c)
{
	for (int k = 0; k < c->ninsts; k++)
		if (unroll_trips(c->insts[k]) >= 0)
			return true;
	return false;
}

/* Appends trips copies of w's body to out; returns the last state. */
static nx_inst *unroll(nx_module *m, nx_comp *into, nx_inst *w, int64_t trips, nx_inst **out, int *nout)
{
	nx_inst *cur = w->operands[0];
	for (int64_t t = 0; t < trips; t++)
		cur = nx_pass_clone_body(m, into, w->called[1], &cur,
		                         nx_arena_printf(&m->arena, "%s.%lld", w->name, (long long)t), out, nout);
	return cur;
}

nx_status nx_pass_while_unroll(nx_module *m, const nx_pass_ctx *ctx, bool *changed)
{
	for (int round = 0; round < 64; round++) {
		bool any = false;
		for (int c = 0; c < m->ncomps; c++) {
			nx_comp *comp = m->comps[c];
			int64_t extra = 0;
			for (int i = 0; i < comp->ninsts; i++) {
				nx_inst *w = comp->insts[i];
				int64_t n = unroll_trips(w);
				if (n >= 0 && !has_unrollable(w->called[1]))
					extra += n * w->called[1]->ninsts;
			}
			bool have = false;
			for (int i = 0; i < comp->ninsts && !have; i++)
				have = unroll_trips(comp->insts[i]) >= 0 && !has_unrollable(comp->insts[i]->called[1]);
			if (!have)
				continue;
			if (comp->ninsts + extra > INT32_MAX / 2)
				continue;
			int cap = comp->ninsts + (int)extra;
			nx_inst **insts = nx_arena_alloc(&m->arena, sizeof(nx_inst *) * (size_t)(cap + 1));
			int n = 0, nold = comp->ninsts;
			nx_inst **old = comp->insts;
			for (int i = 0; i < nold; i++) {
				nx_inst *w = old[i];
				int64_t trips = unroll_trips(w);
				if (trips < 0 || has_unrollable(w->called[1]) || n + trips * w->called[1]->ninsts > cap) {
					insts[n++] = w;
					continue;
				}
				nx_pass_log(ctx, 2, "while-unroll: %s: %lld copies of %s (%d instructions)", w->name,
				            (long long)trips, w->called[1]->name, w->called[1]->ninsts);
				nx_inst *last = unroll(m, comp, w, trips, insts, &n);
				/* users later in the array read the last state */
				comp->insts = old + i + 1;
				comp->ninsts = nold - i - 1;
				nx_comp_replace_uses(comp, w, last);
				comp->insts = old;
				comp->ninsts = nold;
				if (comp->root == w)
					comp->root = last;
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
