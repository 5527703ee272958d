/* backend/lower_while.c — a counted while loop as a device loop.
 *
 * The body's kernels are emitted once, inside a control loop of `trips`
 * iterations on every engine (isa.def LOOP iarg2 = 1: no access-pattern
 * level, so the kernels keep their four data-loop levels). With a known trip
 * count (passes/trip_count.c, or known_trip_count) the condition is not
 * evaluated; otherwise it is, on the device (dd_loop below).
 *
 * State: every leaf of the init tuple is copied into a buffer of its own,
 * pinned while the loop runs; the body's parameter is that tuple. The body
 * computes its root into fresh buffers (it may still read the old state after
 * computing parts of the new one); at the end of an iteration the root's
 * leaves are copied back into the state buffers (a leaf that is another
 * state leaf, as in a swap, goes through a temporary first). The induction
 * variable is one of these leaves: dynamic-slice and dynamic-update-slice in
 * the body read it from HBM at run time.
 *
 * Synchronization. Semaphore counts only grow. The lowering computes every
 * wait target for iteration 0 ("static" counts); iteration i must wait for
 * the same event i iterations later. So at the end of an iteration every
 * semaphore is padded to advance by the same D (the largest advance of any
 * semaphore in the iteration, plus one): each engine signals its own
 * semaphore, SP and POOL signal their DMA queues' semaphores once the
 * queues' real transfers of the iteration completed. Register NX_LREG_ITER
 * of every engine holds the offset between real and static counts, and once
 * a program has a device loop every wait adds it (wait iarg2/iarg3). It grows
 * by D per iteration and drops by D after the loop, so code after the loop
 * waits for the last iteration's events, and nested loops compose (an inner
 * loop's whole advance is uniform too). Then every engine waits for every
 * semaphore to reach the iteration's end: a full barrier, so no engine starts
 * iteration i+1 while another still reads iteration i's buffers or SBUF
 * regions, and the static plan (HBM buffer reuse, the SBUF ring, PSUM halves)
 * holds in every iteration. The dead-store pass is skipped in such programs
 * (it renumbers waits, which the padding has fixed). */
#include "backend/lower.h"
#include "passes/loops.h"

#include <stdlib.h>
#include <string.h>

static void counts(const nx_lower *L, nx_lsync *c)
{
	memset(c, 0, sizeof *c);
	for (int q = 0; q < NX_LQ; q++)
		c->s[q] = L->qcount[q];
	for (int e = 0; e < NX_ENG_COUNT; e++)
		c->s[NX_LSEM_ENG + e] = L->ecount[e];
}

static void ctrl_loop(nx_lower *L, int64_t trips)
{
	for (int e = 0; e < NX_ENG_COUNT; e++) {
		nx_insn *in = nx_l_emit(L, (nx_engine)e, NX_I_LOOP);
		in->iarg[0] = (int32_t)trips;
		in->iarg[2] = 1;
	}
}

/* Closes the control loop on every engine (iterations advance by D) and
 * records it in the plan. */
static void ctrl_end(nx_lower *L, int64_t D)
{
	for (int e = 0; e < NX_ENG_COUNT; e++) {
		nx_l_addreg(L, (nx_engine)e, NX_LREG_ITER, D);
		nx_insn *in = nx_l_emit(L, (nx_engine)e, NX_I_ENDLOOP);
		in->iarg[0] = 1;
		nx_l_addreg(L, (nx_engine)e, NX_LREG_ITER, -D);
	}
	L->dloop_depth--;
	nx_l_plan_kernel(L, "while-end");
	nx_l_plan(L, "sync", "every semaphore padded to +%lld per iteration, then a barrier on all engines",
	          (long long)D);
}

/* Leaf k of the state that the body passes through unchanged (its root
 * tuple's operand k is get-tuple-element k of the parameter): read-only,
 * so the state leaf is the init leaf itself, never copied. */
static bool invariant(const nx_comp *body, int k)
{
	const nx_inst *r = body->root, *p = body->nparams > 0 ? body->params[0] : NULL;
	if (!p || r->op != NX_OP_TUPLE || k >= r->noperands)
		return false;
	const nx_inst *o = r->operands[k];
	return o->op == NX_OP_GET_TUPLE_ELEMENT && o->operands[0] == p && o->a.tuple_index == k;
}

static nx_lval *alias_of(nx_lower *L, nx_lval *src)
{
	nx_lval *v = nx_arena_alloc(&L->a, sizeof *v);
	*v = *src;
	v->sb_gen = 0;
	v->buf->refs++;
	return v;
}

/* A state leaf: init itself when invariant, init's buffer when init dies at
 * the loop and holds it alone, else a copy; pinned while the loop runs
 * (unless invariant: nothing writes it). */
typedef struct pins {
	nx_lbuf **v;
	int n, cap;
	int ninv, nadopt, ncopy; /* for the plan */
} pins;

static void pin(pins *p, nx_lbuf *b)
{
	if (p->n == p->cap) {
		p->cap = p->cap ? 2 * p->cap : 16;
		p->v = nx_xrealloc(p->v, (size_t)p->cap * sizeof *p->v);
	}
	b->pinned = true;
	p->v[p->n++] = b;
}

/* The loop is lowered: its buffers may be reused again. */
static void unpin(pins *p)
{
	for (int k = 0; k < p->n; k++)
		p->v[k]->pinned = false;
	free(p->v);
}

static nx_status state_leaf(nx_lower *L, nx_lval *init, bool inv, bool adopt, pins *p, nx_lval **out)
{
	if (!init->tsrc && (inv || (adopt && !init->buf->pinned && init->buf->refs == 1))) {
		*out = alias_of(L, init);
		if (!inv)
			pin(p, (*out)->buf);
		p->ninv += inv;
		p->nadopt += !inv;
		return NX_OK;
	}
	nx_lval *v = nx_arena_alloc(&L->a, sizeof *v);
	memset(v, 0, sizeof *v);
	v->shape = init->shape;
	v->dt = init->dt;
	v->buf = nx_l_alloc(L, nx_shape_elems(init->shape) * nx_dtype_bytes[init->dt]);
	v->buf->refs = 1;
	pin(p, v->buf);
	p->ncopy++;
	*out = v;
	nx_lview sv = nx_l_view_of(init);
	return nx_l_copy_view(L, &sv, v);
}

/* The loop state, leaf by leaf (nested tuples are copied). */
static nx_status make_state(nx_lower *L, const nx_comp *body, nx_lval *init, bool dies, pins *p, nx_lval **out)
{
	if (!init->tuple)
		return state_leaf(L, init, false, dies, p, out);
	nx_lval *v = nx_arena_alloc(&L->a, sizeof *v);
	memset(v, 0, sizeof *v);
	v->shape = init->shape;
	v->ntuple = init->ntuple;
	v->tuple = nx_arena_alloc(&L->a, sizeof(nx_lval *) * (size_t)(init->ntuple + 1));
	for (int k = 0; k < init->ntuple; k++) {
		nx_lval *x = init->tuple[k];
		nx_status rc;
		if (x->tuple) {
			rc = make_state(L, body, x, false, p, &v->tuple[k]);
		} else {
			bool shared = false; /* two leaves in one buffer: each its own state */
			for (int j = 0; j < init->ntuple && !shared; j++)
				shared = j != k && !init->tuple[j]->tuple && init->tuple[j]->buf == x->buf;
			rc = state_leaf(L, x, invariant(body, k) && !shared, dies && !shared, p, &v->tuple[k]);
		}
		if (rc != NX_OK)
			return rc;
	}
	*out = v;
	return NX_OK;
}

/* The root's leaves into the state buffers: a parallel assignment. */
static nx_status copy_back(nx_lower *L, nx_lval *root, nx_lval *state)
{
	nx_lval **rl = NULL, **sl = NULL, **tmp = NULL;
	int nr = 0, ns = 0, cr = 0, cs = 0;
	nx_status rc = NX_OK;
	nx_l_leaves(root, &rl, &nr, &cr);
	nx_l_leaves(state, &sl, &ns, &cs);
	if (nr != ns) {
		rc = nx_l_err(L, "while body returns %d arrays for a state of %d", nr, ns);
		goto out;
	}
	tmp = calloc((size_t)nr + 1, sizeof *tmp);
	NX_ASSERT(tmp);
	for (int j = 0; j < nr; j++) {
		if (!rl[j]->tsrc && rl[j]->buf == sl[j]->buf)
			continue;
		bool other = false;
		for (int k = 0; k < ns && !other; k++)
			other = k != j && !rl[j]->tsrc && rl[j]->buf == sl[k]->buf;
		if (!other)
			continue;
		tmp[j] = nx_l_newval(L, rl[j]->shape);
		tmp[j]->dt = rl[j]->dt;
		nx_lview sv = nx_l_view_of(rl[j]);
		if ((rc = nx_l_copy_view(L, &sv, tmp[j])) != NX_OK)
			goto out;
	}
	for (int j = 0; j < nr; j++) {
		nx_lval *src = tmp[j] ? tmp[j] : rl[j];
		if (!src->tsrc && src->buf == sl[j]->buf)
			continue;
		nx_lview sv = nx_l_view_of(src);
		if ((rc = nx_l_copy_view(L, &sv, sl[j])) != NX_OK)
			goto out;
	}
	for (int j = 0; j < nr; j++)
		if (tmp[j])
			nx_l_release_val(L, tmp[j]);
out:
	free(rl);
	free(sl);
	free(tmp);
	return rc;
}

/* Lowers one iteration of the body over the loop state: the body's root is
 * copied back into the state and released. The current instruction and debug
 * position are the while's again afterwards. */
static nx_status lower_body(nx_lower *L, const nx_comp *body, nx_lval *st)
{
	const nx_inst *cur = L->cur;
	uint32_t cur_debug = L->cur_debug;
	int node = L->node;
	nx_lval *root = NULL;
	nx_status rc = nx_l_lower_comp(L, body, st, &root);
	L->cur = cur;
	L->cur_debug = cur_debug;
	L->node = node;
	if (rc != NX_OK || (rc = copy_back(L, root, st)) != NX_OK)
		return rc;
	if (root != st)
		nx_l_release_val(L, root);
	return NX_OK;
}

static void pad(nx_lower *L, nx_engine e, int sem, int64_t n)
{
	while (n > 0) {
		int64_t step = n > 65535 ? 65535 : n;
		nx_l_signal_sem(L, e, sem, step);
		n -= step;
	}
}

/* Every semaphore advanced by D in this iteration, then a full barrier;
 * returns D. */
static int64_t iteration_end(nx_lower *L, const nx_lsync *s0)
{
	nx_lsync c;
	counts(L, &c);
	int64_t D = 0;
	for (int k = 0; k < NX_LSEMS; k++)
		if (c.s[k] - s0->s[k] > D)
			D = c.s[k] - s0->s[k];
	D++;
	for (int e = 0; e < NX_ENG_COUNT; e++)
		pad(L, (nx_engine)e, NX_LSEM_ENG + e, D - (c.s[NX_LSEM_ENG + e] - s0->s[NX_LSEM_ENG + e]));
	for (int side = 0; side < 2; side++) {
		nx_engine e = side ? NX_ENG_POOL : NX_ENG_SP;
		nx_lsync w;
		memset(&w, 0, sizeof w);
		for (int q = side * NX_LQ / 2; q < (side + 1) * NX_LQ / 2; q++)
			w.s[q] = c.s[q];
		nx_l_wait(L, e, &w);
		for (int q = side * NX_LQ / 2; q < (side + 1) * NX_LQ / 2; q++)
			pad(L, e, q, D - (c.s[q] - s0->s[q]));
	}
	nx_lsync all;
	for (int k = 0; k < NX_LSEMS; k++)
		all.s[k] = s0->s[k] + D;
	for (int e = 0; e < NX_ENG_COUNT; e++)
		nx_l_wait(L, (nx_engine)e, &all);
	return D;
}

/* The trip count: the pattern (passes/trip_count.c), else the
 * known_trip_count that while-trip-count (or XLA) wrote into backend_config
 * (the fusion pass may have hidden the pattern's increment in a kernel). */
static nx_trip_count trips_of(const nx_inst *i)
{
	nx_trip_count t = nx_while_trip_count(i);
	const char *bc = i->a.backend_config, *k, *n;
	if (t.n >= 0 || !bc || !(k = strstr(bc, "\"known_trip_count\"")) || !(n = strstr(k, "\"n\"")))
		return t;
	n += 3;
	while (*n == ' ' || *n == ':' || *n == '"')
		n++;
	char *end;
	long long v = strtoll(n, &end, 10);
	if (end != n && v >= 0)
		t.n = v;
	return t;
}

/* Every engine waits for everything so far. */
static void barrier(nx_lower *L)
{
	nx_lsync all;
	counts(L, &all);
	for (int e = 0; e < NX_ENG_COUNT; e++)
		nx_l_wait(L, (nx_engine)e, &all);
}

/* The condition on the state, its predicate in HBM, loaded into register
 * NX_LREG_PRED of every engine after a barrier. The predicate's buffer is
 * never reused: the loads are not tracked as readers. */
static nx_status predicate(nx_lower *L, const nx_inst *w, nx_lval *st, nx_lval **pred)
{
	nx_lval *p = NULL;
	const nx_inst *cur = L->cur;
	uint32_t cur_debug = L->cur_debug;
	int node = L->node;
	nx_status rc = nx_l_lower_comp(L, w->called[0], st, &p);
	L->cur = cur;
	L->cur_debug = cur_debug;
	L->node = node;
	if (rc != NX_OK)
		return rc;
	if (p->tuple || p->tsrc || !p->buf || nx_shape_elems(p->shape) != 1)
		return nx_l_err(L, "while condition %s does not give one predicate", w->called[0]->name);
	p->buf->pinned = true;
	*pred = p;
	return NX_OK;
}

static void load_predicate(nx_lower *L, const nx_lval *p)
{
	for (int e = 0; e < NX_ENG_COUNT; e++) {
		nx_insn *in = nx_l_emit(L, (nx_engine)e, NX_I_LDREG);
		uint32_t one = 1;
		int32_t st1 = 1;
		in->iarg[0] = NX_LREG_PRED;
		in->ap[0] = nx_ap_hbm(p->dt, p->buf->off, 1, 1, 1, &st1, &one);
	}
}

/* A loop whose trip count is not known: the condition is lowered too and
 * evaluated on the device before the loop and at the end of each
 * iteration (after the state is copied back); every engine loads the
 * predicate into a register and `brz` leaves the control loop (at most
 * 2^24 trips) when it is 0. The padding and the iteration register work as
 * for counted loops: the exit lands before the `addreg r15 -= D` after the
 * loop, so later code waits for the last iteration's events (or, after 0
 * trips, for events before the loop that the barrier already covered). */
static nx_status dd_loop(nx_lower *L, const nx_inst *i, nx_lval *init, bool init_dies, nx_lval **out)
{
	const nx_comp *body = i->called[1];
	pins p = {0};
	nx_lval *st = NULL;
	nx_status rc = make_state(L, body, init, init_dies, &p, &st);
	if (rc != NX_OK)
		goto out;
	nx_l_plan_kernel(L, "while-loop");
	nx_l_plan(L, "loop", "data-dependent (condition %s on the device), at most %d trips over %s (%d instructions)",
	          i->called[0]->name, 1 << 24, body->name, body->ninsts);
	nx_l_plan(L, "state", "%d invariant, %d taken over from the init, %d copied", p.ninv, p.nadopt, p.ncopy);
	if (!L->ndloops)
		for (int e = 0; e < NX_ENG_COUNT; e++)
			nx_l_setreg(L, (nx_engine)e, NX_LREG_ITER, 0);
	L->ndloops++;
	L->dloop_depth++;
	nx_lval *pred;
	if ((rc = predicate(L, i, st, &pred)) != NX_OK)
		goto out;
	barrier(L);
	load_predicate(L, pred);
	ctrl_loop(L, 1 << 24);
	for (int e = 0; e < NX_ENG_COUNT; e++)
		nx_l_emit(L, (nx_engine)e, NX_I_BRZ)->iarg[0] = NX_LREG_PRED;
	nx_lsync s0;
	counts(L, &s0);
	int64_t adv0 = L->dloop_adv;
	if ((rc = lower_body(L, body, st)) != NX_OK)
		goto out;
	if ((rc = predicate(L, i, st, &pred)) != NX_OK)
		goto out;
	int64_t D = iteration_end(L, &s0); /* its barrier covers the predicate */
	load_predicate(L, pred);
	/* the trip count is unknown: count one iteration against the 32-bit
	 * wait targets (docs/lowering.md) */
	L->dloop_adv = adv0 + D;
	ctrl_end(L, D);
out:
	unpin(&p);
	*out = st;
	return rc;
}

nx_status nx_l_while(nx_lower *L, const nx_inst *i, nx_lval *init, bool init_dies, nx_lval **out)
{
	nx_trip_count t = trips_of(i);
	if (t.n < 0 && L->dloop_depth >= NX_CTRL_DEPTH)
		return nx_l_err(L, "while loops nested deeper than %d device loops", NX_CTRL_DEPTH);
	if (t.n < 0)
		return dd_loop(L, i, init, init_dies, out);
	if (t.n > (1 << 24))
		return nx_l_err(L, "while loop with %lld trips: a device loop counts at most %d", (long long)t.n, 1 << 24);
	if (L->dloop_depth >= NX_CTRL_DEPTH)
		return nx_l_err(L, "while loops nested deeper than %d device loops", NX_CTRL_DEPTH);
	const nx_comp *body = i->called[1];
	pins p = {0};
	nx_lval *st = NULL;
	nx_status rc = make_state(L, body, init, init_dies, &p, &st);
	if (rc != NX_OK)
		goto out;
	nx_l_plan_kernel(L, "while-loop");
	nx_l_plan(L, "loop", "%lld trips over %s (%d instructions), a control loop on every engine", (long long)t.n,
	          body->name, body->ninsts);
	nx_l_plan(L, "state", "%d invariant, %d taken over from the init, %d copied", p.ninv, p.nadopt, p.ncopy);
	if (t.n == 0)
		goto out;
	if (!L->ndloops)
		for (int e = 0; e < NX_ENG_COUNT; e++)
			nx_l_setreg(L, (nx_engine)e, NX_LREG_ITER, 0);
	L->ndloops++;
	L->dloop_depth++;
	ctrl_loop(L, t.n);
	nx_lsync s0;
	counts(L, &s0);
	int64_t adv0 = L->dloop_adv;
	L->dloop_adv = 0; /* the inner loops' advance in one iteration */
	if ((rc = lower_body(L, body, st)) != NX_OK)
		goto out;
	int64_t D = iteration_end(L, &s0);
	/* NX_LREG_ITER advances by the inner loops' advance and D per iteration,
	 * less D after the loop; with the static counts it must stay a 32-bit
	 * wait target */
	double adv = (double)t.n * (double)(L->dloop_adv + D) - (double)D;
	L->dloop_adv = adv0 + (int64_t)adv;
	int64_t top = 0;
	for (int k = 0; k < NX_LSEMS; k++)
		top = s0.s[k] + D > top ? s0.s[k] + D : top;
	if (adv + (double)adv0 + (double)top > (double)INT32_MAX) {
		rc = nx_l_err(L, "while loop with %lld trips of %lld semaphore steps: beyond the device loop's 32-bit "
		                 "wait targets",
		              (long long)t.n, (long long)D);
		goto out;
	}
	ctrl_end(L, D);
out:
	unpin(&p);
	*out = st;
	return rc;
}
