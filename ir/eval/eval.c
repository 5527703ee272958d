/* ir/eval/eval.c — the evaluator's driver: module and computation interpretation,
 * value lifetimes and memory accounting, control flow, replicas as threads.
 *
 * Memory: literal headers live in the evaluation arena; array data is
 * malloc'd and reference-counted per buffer (a value shares buffers with the
 * values it was built from: tuple, get-tuple-element, call results). A value
 * is released after its last use in its computation, so peak memory is the
 * live set, not the sum of all instructions. */
#include "ir/eval/eval_impl.h"
#include "ir/thread.h"
#include "ir/map.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ----------------------------------------------------- evaluation state */

typedef struct buf {
	int64_t bytes;
	int64_t refs;
} buf;

typedef struct comp_info {
	nx_ptrmap pos;       /* inst -> position + 1 */
	int *uses;      /* per position: operand occurrences (+1 for the root) */
	nx_jit_plan jit; /* host JIT clusters (eval_jit.c) */
} comp_info;

struct nx_eval_group {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int n, arrived;
	uint64_t gen;
	bool failed;
	int failed_replica; /* the replica whose error released the others */
	const nx_inst *key;
	nx_literal **slots, **published;
};

typedef struct ev_priv {
	nx_eval pub;
	nx_ptrmap bufs;  /* data pointer -> buf */
	nx_ptrmap comps; /* comp -> comp_info */
	nx_literal *held; /* deposited in the last exchange, kept alive until the next */
	int depth;
	nx_eval_trace *trace; /* nx_eval_opts.trace */
	bool traced;          /* this replica has found its first origin */
	bool arena_data; /* data in the arena, no refcounts (an nx_eval we did not create) */
} ev_priv;

/* The evaluation this thread runs. An nx_eval built by someone else (unit
 * tests of single ops) has none: it gets arena-backed data and a temporary
 * private state inside nx_eval_call. */
static _Thread_local ev_priv *cur_priv;

static ev_priv *priv(nx_eval *ev)
{
	return cur_priv && &cur_priv->pub == ev ? cur_priv : NULL;
}

nx_status nx_eval_error(nx_eval *ev, const nx_inst *i, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	nx_status st = nx_diag_set(ev->diag, NX_ERR_INPUT, ev->module ? ev->module->file : NULL,
	                           i ? i->line : 0, i ? i->col : 0, "instruction '%s': %s",
	                           i ? i->name : "?", msg);
	if (i)
		nx_diag_set_inst(ev->diag, i->name);
	return st;
}

static nx_literal *alloc_lit(nx_eval *ev, nx_shape *shape, bool zero)
{
	nx_literal *l = nx_arena_alloc(&ev->arena, sizeof(*l));
	l->shape = shape;
	if (nx_shape_is_tuple(shape)) {
		l->ntuple = shape->ntuple;
		l->tuple = nx_arena_alloc(&ev->arena, sizeof(nx_literal *) * (size_t)(shape->ntuple + 1));
		for (int k = 0; k < shape->ntuple; k++) {
			l->tuple[k] = alloc_lit(ev, shape->tuple[k], zero);
			if (!l->tuple[k])
				return NULL;
		}
		return l;
	}
	if (!nx_type_is_array(shape->type))
		return l;
	int64_t bytes = nx_shape_bytes(shape);
	if (bytes < 0 || (ev->max_memory > 0 && ev->bytes_live + bytes > ev->max_memory)) {
		nx_diag_set(ev->diag, NX_ERR_INPUT, NULL, 0, 0,
		            "evaluation needs more than --max-memory %lld bytes (%lld live, %lld more "
		            "requested for %s)",
		            (long long)ev->max_memory, (long long)ev->bytes_live, (long long)bytes,
		            nx_shape_str(&ev->arena, shape, false));
		return NULL;
	}
	l->nbytes = bytes;
	if (bytes == 0)
		return l;
	if (!priv(ev) || priv(ev)->arena_data) {
		l->data = nx_arena_alloc(&ev->arena, (size_t)bytes);
		ev->bytes_live += bytes;
		return l;
	}
	l->data = zero ? calloc(1, (size_t)bytes) : malloc((size_t)bytes);
	if (!l->data) {
		nx_diag_set(ev->diag, NX_ERR_INPUT, NULL, 0, 0, "out of memory allocating %lld bytes",
		            (long long)bytes);
		return NULL;
	}
	buf *b = malloc(sizeof(*b));
	NX_ASSERT(b);
	b->bytes = bytes;
	b->refs = 0;
	nx_ptrmap_put(&priv(ev)->bufs, l->data, (intptr_t)b);
	ev->bytes_live += bytes;
	return l;
}

nx_literal *nx_eval_alloc(nx_eval *ev, nx_shape *shape)
{
	return alloc_lit(ev, shape, true);
}

nx_literal *nx_eval_scalar(nx_eval *ev, nx_type t)
{
	return nx_literal_new(&ev->arena, nx_shape_scalar(&ev->arena, t));
}

nx_literal *nx_eval_clone(nx_eval *ev, const nx_literal *l)
{
	nx_literal *c = alloc_lit(ev, l->shape, false);
	if (!c)
		return NULL;
	if (l->ntuple || nx_shape_is_tuple(l->shape)) {
		for (int k = 0; k < l->ntuple; k++)
			if (!(c->tuple[k] = nx_eval_clone(ev, l->tuple[k])))
				return NULL;
	} else if (l->nbytes) {
		memcpy(c->data, l->data, (size_t)l->nbytes);
	}
	return c;
}

static void retain(nx_eval *ev, nx_literal *l)
{
	if (!l || !priv(ev))
		return;
	for (int k = 0; k < l->ntuple; k++)
		retain(ev, l->tuple[k]);
	if (l->data) {
		buf *b = (void *)nx_ptrmap_get(&priv(ev)->bufs, l->data, 0);
		if (b)
			b->refs++;
	}
}

/* Drops one reference; frees buffers that reach zero when free_dead. */
static void release(nx_eval *ev, nx_literal *l, bool free_dead)
{
	if (!l || !priv(ev))
		return;
	for (int k = 0; k < l->ntuple; k++)
		release(ev, l->tuple[k], free_dead);
	if (l->data) {
		buf *b = (void *)nx_ptrmap_get(&priv(ev)->bufs, l->data, 0);
		if (b && --b->refs <= 0 && free_dead) {
			ev->bytes_live -= b->bytes;
			nx_ptrmap_del(&priv(ev)->bufs, l->data);
			free(l->data);
			free(b);
		}
	}
}

static void ev_init(ev_priv *p, const nx_module *m, const nx_eval_opts *o, nx_diag *d)
{
	memset(p, 0, sizeof(*p));
	nx_arena_init(&p->pub.arena);
	p->pub.module = m;
	p->pub.diag = d;
	p->pub.nreplicas = 1;
	p->pub.max_memory = o ? o->max_memory : 0;
	p->pub.rng_seed = o ? o->rng_seed : 0;
	p->pub.rng_state[0] = p->pub.rng_seed; /* docs/numerics.md, "rng" */
	p->trace = o ? o->trace : NULL;
}

static void ev_free(ev_priv *p)
{
	for (size_t k = 0; k < p->bufs.cap; k++)
		if (p->bufs.keys[k]) {
			free((void *)p->bufs.keys[k]);
			free((void *)p->bufs.vals[k]);
		}
	nx_ptrmap_free(&p->bufs);
	for (size_t k = 0; k < p->comps.cap; k++)
		if (p->comps.keys[k]) {
			comp_info *ci = (comp_info *)p->comps.vals[k];
			nx_ptrmap_free(&ci->pos);
			free(ci->uses);
			nx_eval_jit_plan_free(&ci->jit);
			free(ci);
		}
	nx_ptrmap_free(&p->comps);
	nx_arena_free(&p->pub.arena);
}

/* ------------------------------------------------------------ replicas */

static nx_status group_fail(nx_eval *ev)
{
	nx_eval_group *g = ev->group;
	if (!g)
		return NX_OK;
	pthread_mutex_lock(&g->mu);
	if (!g->failed) {
		g->failed = true;
		g->failed_replica = ev->replica;
	}
	pthread_cond_broadcast(&g->cv);
	pthread_mutex_unlock(&g->mu);
	return NX_OK;
}

nx_status nx_eval_exchange(nx_eval *ev, const nx_inst *i, nx_literal *mine, nx_literal ***all)
{
	nx_eval_group *g = ev->group;
	if (!g) {
		static __thread nx_literal *one[1];
		one[0] = mine;
		if (all)
			*all = one;
		return NX_OK;
	}
	retain(ev, mine);
	pthread_mutex_lock(&g->mu);
	if (g->failed) {
		pthread_mutex_unlock(&g->mu);
		release(ev, mine, true);
		return nx_eval_error(ev, i, "stopped: replica %d failed", g->failed_replica);
	}
	if (g->arrived == 0)
		g->key = i;
	bool mismatch = g->key != i;
	g->slots[ev->replica] = mine;
	uint64_t gen = g->gen;
	if (mismatch) {
		g->failed = true;
		g->failed_replica = ev->replica;
		pthread_cond_broadcast(&g->cv);
	} else if (++g->arrived == g->n) {
		g->arrived = 0;
		memcpy(g->published, g->slots, sizeof(nx_literal *) * (size_t)g->n);
		g->gen++;
		pthread_cond_broadcast(&g->cv);
	} else {
		while (g->gen == gen && !g->failed)
			pthread_cond_wait(&g->cv, &g->mu);
	}
	bool ok = g->gen != gen;
	pthread_mutex_unlock(&g->mu);
	/* every replica has passed the previous exchange: its deposit may go */
	if (priv(ev)) {
		release(ev, priv(ev)->held, true);
		priv(ev)->held = mine;
	}
	if (mismatch)
		return nx_eval_error(ev, i, "replicas diverged: replica %d reached a different "
		                     "collective than the others", ev->replica);
	if (!ok)
		return nx_eval_error(ev, i, "stopped: replica %d failed", g->failed_replica);
	if (all)
		*all = g->published;
	return NX_OK;
}

/* ------------------------------------------------------- interpretation */

static int pos_of(const void *ctx, const nx_inst *i)
{
	intptr_t p = nx_ptrmap_get((const nx_ptrmap *)ctx, i, 0);
	NX_ASSERT(p > 0);
	return (int)p - 1;
}

static comp_info *info_of(nx_eval *ev, const nx_comp *c)
{
	comp_info *ci = (void *)nx_ptrmap_get(&priv(ev)->comps, c, 0);
	if (ci)
		return ci;
	ci = calloc(1, sizeof(*ci));
	ci->uses = calloc((size_t)c->ninsts + 1, sizeof(int));
	NX_ASSERT(ci && ci->uses);
	for (int k = 0; k < c->ninsts; k++)
		nx_ptrmap_put(&ci->pos, c->insts[k], k + 1);
	for (int k = 0; k < c->ninsts; k++) {
		const nx_inst *in = c->insts[k];
		for (int j = 0; j < in->noperands; j++) {
			intptr_t p = nx_ptrmap_get(&ci->pos, in->operands[j], 0);
			NX_ASSERT(p > 0);
			ci->uses[p - 1]++;
		}
	}
	intptr_t r = nx_ptrmap_get(&ci->pos, c->root, 0);
	NX_ASSERT(r > 0);
	ci->uses[r - 1]++;
	if (!priv(ev)->trace) /* tracing needs every instruction's value */
		nx_eval_jit_plan(c, ci->uses, pos_of, &ci->pos, &ci->jit);
	nx_ptrmap_put(&priv(ev)->comps, c, (intptr_t)ci);
	return ci;
}

static nx_status eval_inst(nx_eval *ev, const nx_inst *i, nx_literal *const *ops,
                           nx_literal *const *args, int nargs, nx_literal **out);

static void ev_free(ev_priv *p);

/* ------------------------------------------------- non-finite tracing */

typedef struct fstats {
	int64_t n, nan, inf;
	double mn, mx; /* over finite elements */
} fstats;

static void fstats_add(fstats *s, double v)
{
	s->n++;
	if (isnan(v))
		s->nan++;
	else if (isinf(v))
		s->inf++;
	else {
		s->mn = v < s->mn ? v : s->mn;
		s->mx = v > s->mx ? v : s->mx;
	}
}

static void fstats_of(const nx_literal *l, fstats *s)
{
	if (!l)
		return;
	for (int k = 0; k < l->ntuple; k++)
		fstats_of(l->tuple[k], s);
	if (!l->data || !nx_shape_is_array(l->shape))
		return;
	nx_type_kind kind = nx_type_kind_of(l->shape->type);
	int64_t n = nx_shape_elems(l->shape);
	if (kind == NX_KIND_FLOAT && l->shape->type == NX_F32) {
		const float *p = l->data;
		for (int64_t e = 0; e < n; e++)
			fstats_add(s, p[e]);
	} else if (kind == NX_KIND_FLOAT) {
		for (int64_t e = 0; e < n; e++)
			fstats_add(s, nx_lit_get_f64(l, e));
	} else if (kind == NX_KIND_COMPLEX) {
		for (int64_t e = 0; e < n; e++) {
			double re, im;
			nx_lit_get_c128(l, e, &re, &im);
			fstats_add(s, re);
			fstats_add(s, im);
		}
	} else {
		s->n += n; /* integers: always finite, range not interesting here */
	}
}

static int fstats_print(char *buf, size_t cap, const fstats *s)
{
	if (s->n == 0)
		return snprintf(buf, cap, "empty");
	int w = 0;
	if (s->n > s->nan + s->inf)
		w = snprintf(buf, cap, "min %.9g max %.9g", s->mn, s->mx);
	else
		w = snprintf(buf, cap, "no finite values");
	if (s->nan && w >= 0 && (size_t)w < cap)
		w += snprintf(buf + w, cap - (size_t)w, ", %lld NaN", (long long)s->nan);
	if (s->inf && w >= 0 && (size_t)w < cap)
		w += snprintf(buf + w, cap - (size_t)w, ", %lld Inf", (long long)s->inf);
	return w;
}

static pthread_mutex_t trace_mu = PTHREAD_MUTEX_INITIALIZER;

/* Records i when it is the origin of a NaN/Inf (see nx_eval_trace). */
static void trace_nonfinite(nx_eval *ev, const nx_comp *c, const nx_inst *i,
                            nx_literal *const *ops, const nx_literal *v)
{
	nx_eval_trace *t = priv(ev)->trace;
	if (priv(ev)->traced || i->op == NX_OP_CONSTANT || i->op == NX_OP_GET_TUPLE_ELEMENT ||
	    i->op == NX_OP_TUPLE || (i->op == NX_OP_PARAMETER && priv(ev)->depth > 1))
		return;
	fstats r = {.mn = INFINITY, .mx = -INFINITY};
	fstats_of(v, &r);
	if (!r.nan && !r.inf)
		return;
	fstats *os = calloc((size_t)i->noperands + 1, sizeof(fstats));
	NX_ASSERT(os);
	int64_t onan = 0, oinf = 0;
	for (int j = 0; j < i->noperands; j++) {
		os[j].mn = INFINITY, os[j].mx = -INFINITY;
		fstats_of(ops[j], &os[j]);
		onan += os[j].nan, oinf += os[j].inf;
	}
	bool origin = r.nan ? onan == 0 : onan + oinf == 0;
	if (origin) {
		priv(ev)->traced = true;
		pthread_mutex_lock(&trace_mu);
		if (!t->found || ev->replica < t->replica) {
			char *b = t->report;
			size_t cap = sizeof(t->report);
			int w = snprintf(b, cap, "first non-finite value: %s '%s' in computation '%s'",
			                 nx_opcode_name(i->op), i->name, c->name);
			if (ev->nreplicas > 1 && w >= 0 && (size_t)w < cap)
				w += snprintf(b + w, cap - (size_t)w, " (replica %d)", ev->replica);
			if (i->line && w >= 0 && (size_t)w < cap)
				w += snprintf(b + w, cap - (size_t)w, " at line %d", i->line);
			if (w >= 0 && (size_t)w < cap)
				w += snprintf(b + w, cap - (size_t)w, "\n  result %s: ",
				              nx_shape_str(&ev->arena, i->shape, false));
			if (w >= 0 && (size_t)w < cap)
				w += fstats_print(b + w, cap - (size_t)w, &r);
			for (int j = 0; j < i->noperands && w >= 0 && (size_t)w < cap; j++) {
				w += snprintf(b + w, cap - (size_t)w, "\n  operand %d '%s' %s: ", j,
				              i->operands[j]->name,
				              nx_shape_str(&ev->arena, i->operands[j]->shape, false));
				if (w >= 0 && (size_t)w < cap)
					w += fstats_print(b + w, cap - (size_t)w, &os[j]);
			}
			t->found = true;
			t->replica = ev->replica;
			t->inst = i;
			t->comp = c;
		}
		pthread_mutex_unlock(&trace_mu);
	}
	free(os);
}

/* One use of each operand of in is over (operands that are JIT cluster
 * members were never materialized). */
static void drop_operands(nx_eval *ev, comp_info *ci, const nx_inst *in, nx_literal **vals, int *left)
{
	for (int j = 0; j < in->noperands; j++) {
		int p = (int)nx_ptrmap_get(&ci->pos, in->operands[j], 0) - 1;
		if (ci->jit.role && ci->jit.role[p] == NX_JIT_MEMBER)
			continue;
		if (--left[p] == 0) {
			release(ev, vals[p], true);
			vals[p] = NULL;
		}
	}
}

/* A JIT cluster at its root's turn: the kernel when every leaf value has the
 * shape the plan saw, else the members one by one (the interpreter). */
static nx_status eval_cluster(nx_eval *ev, const nx_comp *c, comp_info *ci, const nx_jit_cl *cl,
                              nx_literal **vals, nx_literal *const *args, int nargs, nx_literal **out)
{
	const nx_inst *root = c->insts[cl->members[cl->nm - 1]];
	const void *lbuf[16], **ld = cl->nl <= 16 ? lbuf : malloc(sizeof(void *) * (size_t)cl->nl);
	bool ok = ld != NULL && nx_eval_jit_hook->run;
	for (int j = 0; j < cl->nl && ok; j++) {
		const nx_literal *l = vals[cl->leaves[j]];
		const nx_shape *s = c->insts[cl->leaves[j]]->shape;
		ok = l && !l->ntuple && nx_shape_is_array(l->shape) && l->shape->type == s->type &&
		     nx_shape_elems(l->shape) == nx_shape_elems(s) && (l->data || l->nbytes == 0);
		if (ok)
			ld[j] = l->data;
	}
	nx_status st = NX_OK;
	if (ok) {
		nx_literal *o = nx_eval_alloc(ev, root->shape);
		if (!o)
			st = NX_ERR_INPUT;
		else
			nx_eval_jit_hook->run(cl->kernel, o->data, ld, nx_shape_elems(root->shape));
		*out = o;
		nx_eval_jit_count(cl->nm);
	}
	if (ld != lbuf)
		free(ld);
	if (ok || st != NX_OK)
		return st;
	/* interpret: every use of a member but the root is by a later member */
	nx_literal **mv = calloc((size_t)cl->nm, sizeof(*mv));
	int *rem = calloc((size_t)cl->nm, sizeof(int));
	NX_ASSERT(mv && rem);
	for (int m = 0; m < cl->nm; m++)
		rem[m] = ci->uses[cl->members[m]];
	for (int m = 0; m < cl->nm && st == NX_OK; m++) {
		const nx_inst *in = c->insts[cl->members[m]];
		nx_literal *ops[3] = {NULL, NULL, NULL};
		int from[3] = {-1, -1, -1};
		if (in->noperands > 3) {
			st = nx_eval_error(ev, in, "JIT cluster member with %d operands", in->noperands);
			break;
		}
		for (int j = 0; j < in->noperands; j++) {
			int p = (int)nx_ptrmap_get(&ci->pos, in->operands[j], 0) - 1;
			ops[j] = vals[p];
			for (int q = 0; q < m; q++)
				if (cl->members[q] == p)
					ops[j] = mv[q], from[j] = q;
		}
		st = eval_inst(ev, in, ops, args, nargs, &mv[m]);
		if (st == NX_OK)
			retain(ev, mv[m]);
		for (int j = 0; j < in->noperands; j++)
			if (from[j] >= 0 && --rem[from[j]] == 0) {
				release(ev, mv[from[j]], true);
				mv[from[j]] = NULL;
			}
	}
	if (st == NX_OK) {
		*out = mv[cl->nm - 1];
		release(ev, *out, false); /* the caller retains it */
		mv[cl->nm - 1] = NULL;
	}
	for (int m = 0; m < cl->nm; m++)
		release(ev, mv[m], true); /* after an error */
	free(mv);
	free(rem);
	return st;
}

nx_status nx_eval_call(nx_eval *ev, const nx_comp *c, nx_literal *const *args, int nargs,
                       nx_literal **out)
{
	if (!priv(ev)) {
		ev_priv tp, *saved = cur_priv;
		memset(&tp, 0, sizeof(tp));
		tp.pub = *ev;
		tp.arena_data = true;
		cur_priv = &tp;
		nx_status st = nx_eval_call(&tp.pub, c, args, nargs, out);
		cur_priv = saved;
		ev->arena = tp.pub.arena;
		ev->bytes_live = tp.pub.bytes_live;
		nx_arena_init(&tp.pub.arena); /* now owned by ev again */
		ev_free(&tp);
		return st;
	}
	if (nargs != c->nparams)
		return nx_diag_set(ev->diag, NX_ERR_INPUT, NULL, 0, 0,
		                   "computation '%s' takes %d arguments, got %d", c->name, c->nparams, nargs);
	if (priv(ev)->depth > 200)
		return nx_diag_set(ev->diag, NX_ERR_INPUT, NULL, 0, 0,
		                   "computation '%s': calls nested too deeply", c->name);
	comp_info *ci = info_of(ev, c);
	int n = c->ninsts;
	nx_literal **vals = calloc((size_t)n + 1, sizeof(*vals));
	int *left = malloc(sizeof(int) * ((size_t)n + 1));
	nx_literal *opbuf[8];
	NX_ASSERT(vals && left);
	memcpy(left, ci->uses, sizeof(int) * (size_t)n);
	nx_status st = NX_OK;
	/* arguments belong to the caller, whatever their count: pin them */
	for (int k = 0; k < nargs; k++)
		retain(ev, args[k]);
	priv(ev)->depth++;
	const int *role = ci->jit.role;
	for (int k = 0; k < n && st == NX_OK; k++) {
		const nx_inst *in = c->insts[k];
		if (role && role[k] == NX_JIT_MEMBER)
			continue; /* computed with its cluster's root */
		nx_literal *v = NULL;
		if (role && role[k] >= 0) {
			const nx_jit_cl *cl = &ci->jit.cl[role[k]];
			st = eval_cluster(ev, c, ci, cl, vals, args, nargs, &v);
			if (st == NX_OK) {
				retain(ev, v);
				vals[k] = v;
				for (int m = 0; m < cl->nm; m++)
					drop_operands(ev, ci, c->insts[cl->members[m]], vals, left);
				if (left[k] == 0) {
					release(ev, v, true);
					vals[k] = NULL;
				}
			}
			continue;
		}
		nx_literal **ops = in->noperands <= 8 ? opbuf : malloc(sizeof(*ops) * (size_t)in->noperands);
		for (int j = 0; j < in->noperands; j++)
			ops[j] = vals[nx_ptrmap_get(&ci->pos, in->operands[j], 0) - 1];
		st = eval_inst(ev, in, ops, args, nargs, &v);
		if (st == NX_OK && priv(ev)->trace)
			trace_nonfinite(ev, c, in, ops, v);
		if (st == NX_OK) {
			retain(ev, v);
			vals[k] = v;
			drop_operands(ev, ci, in, vals, left);
			if (left[k] == 0) { /* unused */
				release(ev, v, true);
				vals[k] = NULL;
			}
		}
		if (ops != opbuf)
			free(ops);
	}
	priv(ev)->depth--;
	int r = (int)nx_ptrmap_get(&ci->pos, c->root, 0) - 1;
	if (st == NX_OK) {
		*out = vals[r];
		release(ev, vals[r], false); /* the caller takes it over at refcount 0 */
		vals[r] = NULL;
	}
	for (int k = 0; k < n; k++)
		if (vals[k])
			release(ev, vals[k], true);
	for (int k = 0; k < nargs; k++)
		release(ev, args[k], false);
	free(vals);
	free(left);
	return st;
}

static nx_literal *make_tuple(nx_eval *ev, nx_shape *shape, nx_literal *const *elems, int n)
{
	nx_literal *t = nx_arena_alloc(&ev->arena, sizeof(*t));
	if (!shape) {
		nx_shape **ss = nx_arena_alloc(&ev->arena, sizeof(nx_shape *) * (size_t)(n + 1));
		for (int k = 0; k < n; k++)
			ss[k] = elems[k]->shape;
		shape = nx_shape_tuple(&ev->arena, n, ss);
	}
	t->shape = shape;
	t->ntuple = n;
	t->tuple = nx_arena_alloc(&ev->arena, sizeof(nx_literal *) * (size_t)(n + 1));
	memcpy(t->tuple, elems, sizeof(nx_literal *) * (size_t)n);
	return t;
}

static bool pred_value(const nx_literal *l)
{
	return l->data && nx_lit_get_i64(l, 0) != 0;
}

static nx_status eval_map(nx_eval *ev, const nx_inst *i, nx_literal *const *ops, nx_literal **out)
{
	const nx_comp *c = i->called[0];
	nx_literal *o = nx_eval_alloc(ev, i->shape);
	if (!o)
		return NX_ERR_INPUT;
	int64_t n = nx_shape_elems(i->shape);
	int na = i->noperands;
	nx_literal **sc = nx_arena_alloc(&ev->arena, sizeof(nx_literal *) * (size_t)(na + 1));
	for (int j = 0; j < na; j++)
		sc[j] = nx_eval_scalar(ev, ops[j]->shape->type);
	for (int64_t e = 0; e < n; e++) {
		for (int j = 0; j < na; j++)
			nx_lit_copy_elem(sc[j], 0, ops[j], e);
		nx_literal *r;
		nx_status st = nx_eval_call(ev, c, sc, na, &r);
		if (st != NX_OK)
			return st;
		if (r->shape->type != o->shape->type)
			return nx_eval_error(ev, i, "map computation returns %s, expected %s",
			                     nx_type_name(r->shape->type), nx_type_name(o->shape->type));
		nx_lit_copy_elem(o, e, r, 0);
		retain(ev, r);
		release(ev, r, true);
	}
	*out = o;
	return NX_OK;
}

static nx_status eval_while(nx_eval *ev, const nx_inst *i, nx_literal *init, nx_literal **out)
{
	if (i->ncalled < 2)
		return nx_eval_error(ev, i, "while needs condition and body computations");
	nx_literal *state = init;
	retain(ev, state);
	for (int64_t iter = 0;; iter++) {
		nx_literal *p;
		nx_status st = nx_eval_call(ev, i->called[0], &state, 1, &p);
		if (st != NX_OK) {
			release(ev, state, true);
			return st;
		}
		bool go = pred_value(p);
		retain(ev, p);
		release(ev, p, true);
		if (!go)
			break;
		nx_literal *next;
		st = nx_eval_call(ev, i->called[1], &state, 1, &next);
		if (st != NX_OK) {
			release(ev, state, true);
			return st;
		}
		retain(ev, next);
		release(ev, state, true);
		state = next;
	}
	release(ev, state, false);
	*out = state;
	return NX_OK;
}

static nx_status eval_async_start(nx_eval *ev, const nx_inst *i, nx_literal *const *ops,
                                  nx_literal **out)
{
	nx_literal *r = NULL;
	nx_status st;
	nx_shape *rs = nx_shape_is_tuple(i->shape) && i->shape->ntuple >= 2 ? i->shape->tuple[1] : i->shape;
	if (i->ncalled > 0) {
		st = nx_eval_call(ev, i->called[0], ops, i->noperands, &r);
	} else if (i->a.async_wrapped != NX_OP_COUNT) {
		nx_inst w = *i;
		w.op = i->a.async_wrapped;
		w.shape = rs;
		w.a.async_wrapped = NX_OP_COUNT;
		st = eval_inst(ev, &w, ops, NULL, 0, &r);
	} else {
		return nx_eval_error(ev, i, "async-start without a wrapped computation");
	}
	if (st != NX_OK)
		return st;
	nx_literal *opt = make_tuple(ev, NULL, ops, i->noperands);
	nx_literal *ctx = nx_eval_scalar(ev, NX_U32);
	nx_literal *el[3] = {opt, r, ctx};
	int n = nx_shape_is_tuple(i->shape) ? i->shape->ntuple : 3;
	if (n < 2)
		n = 2;
	if (n > 3)
		n = 3;
	*out = make_tuple(ev, NULL, el, n);
	return NX_OK;
}

static bool is_pending_family(nx_opcode op)
{
	return op == NX_OP_CONVOLUTION;
}

static nx_status eval_inst(nx_eval *ev, const nx_inst *i, nx_literal *const *ops,
                           nx_literal *const *args, int nargs, nx_literal **out)
{
	(void)is_pending_family;
	unsigned fl = nx_opcode_flags(i->op);
	switch (i->op) {
	case NX_OP_PARAMETER:
		if (!args || i->a.parameter_number < 0 || i->a.parameter_number >= nargs)
			return nx_eval_error(ev, i, "parameter %lld has no argument",
			                     (long long)i->a.parameter_number);
		*out = args[i->a.parameter_number];
		return NX_OK;
	case NX_OP_CONSTANT:
		if (!i->a.literal)
			return nx_eval_error(ev, i, "constant without a value");
		*out = i->a.literal;
		return NX_OK;
	case NX_OP_TUPLE: *out = make_tuple(ev, i->shape, ops, i->noperands); return NX_OK;
	case NX_OP_GET_TUPLE_ELEMENT:
		if (i->a.tuple_index < 0 || i->a.tuple_index >= ops[0]->ntuple)
			return nx_eval_error(ev, i, "tuple index %lld out of range",
			                     (long long)i->a.tuple_index);
		*out = ops[0]->tuple[i->a.tuple_index];
		return NX_OK;
	case NX_OP_OPT_BARRIER:
	case NX_OP_DOMAIN:
	case NX_OP_ADD_DEPENDENCY:
	case NX_OP_ASYNC_UPDATE: *out = ops[0]; return NX_OK;
	case NX_OP_ASYNC_DONE:
		*out = ops[0]->ntuple >= 2 ? ops[0]->tuple[1] : ops[0];
		return NX_OK;
	case NX_OP_ASYNC_START: return eval_async_start(ev, i, ops, out);
	case NX_OP_COPY_START: {
		nx_literal *c = nx_eval_clone(ev, ops[0]);
		if (!c)
			return NX_ERR_INPUT;
		nx_literal *el[3] = {ops[0], c, nx_eval_scalar(ev, NX_U32)};
		*out = make_tuple(ev, NULL, el, 3);
		return NX_OK;
	}
	case NX_OP_COPY_DONE: *out = ops[0]->ntuple >= 2 ? ops[0]->tuple[1] : ops[0]; return NX_OK;
	case NX_OP_AFTER_ALL: *out = nx_literal_new(&ev->arena, i->shape); return NX_OK;
	case NX_OP_REPLICA_ID: {
		nx_literal *l = nx_eval_alloc(ev, i->shape);
		if (!l)
			return NX_ERR_INPUT;
		nx_lit_set_i64(l, 0, ev->replica);
		*out = l;
		return NX_OK;
	}
	case NX_OP_PARTITION_ID: *out = nx_eval_alloc(ev, i->shape); return *out ? NX_OK : NX_ERR_INPUT;
	case NX_OP_CALL:
	case NX_OP_FUSION:
		if (i->ncalled < 1)
			return nx_eval_error(ev, i, "%s without a called computation", nx_opcode_name(i->op));
		return nx_eval_call(ev, i->called[0], ops, i->noperands, out);
	case NX_OP_MAP: return eval_map(ev, i, ops, out);
	case NX_OP_WHILE: return eval_while(ev, i, ops[0], out);
	case NX_OP_CONDITIONAL: {
		if (i->ncalled < 1)
			return nx_eval_error(ev, i, "conditional without branches");
		int64_t b;
		if (ops[0]->shape->type == NX_PRED)
			b = pred_value(ops[0]) ? 0 : 1;
		else
			b = nx_lit_get_i64(ops[0], 0);
		if (b < 0 || b >= i->ncalled)
			b = i->ncalled - 1;
		int na = i->noperands - 1;
		if (ops[0]->shape->type == NX_PRED && i->noperands == 3)
			return nx_eval_call(ev, i->called[b], ops + 1 + b, 1, out);
		if (na == i->ncalled)
			return nx_eval_call(ev, i->called[b], ops + 1 + b, 1, out);
		return nx_eval_call(ev, i->called[b], ops + 1, na, out);
	}
	case NX_OP_CONVERT: return nx_eval_convert(ev, i, ops, out);
	case NX_OP_DOT: return nx_eval_dot(ev, i, ops, out);
	case NX_OP_REDUCE: return nx_eval_reduce(ev, i, ops, out);
	case NX_OP_CUSTOM_CALL: return nx_eval_custom_call(ev, i, ops, out);
	case NX_OP_CONVOLUTION: return nx_eval_convolution(ev, i, ops, out);
	case NX_OP_REDUCE_WINDOW: return nx_eval_reduce_window(ev, i, ops, out);
	case NX_OP_SELECT_AND_SCATTER: return nx_eval_select_and_scatter(ev, i, ops, out);
	case NX_OP_GATHER: return nx_eval_gather(ev, i, ops, out);
	case NX_OP_SCATTER: return nx_eval_scatter(ev, i, ops, out);
	case NX_OP_SORT: return nx_eval_sort(ev, i, ops, out);
	case NX_OP_TOPK: return nx_eval_topk(ev, i, ops, out); /* eval_topk.c */
	case NX_OP_FFT: return nx_eval_fft(ev, i, ops, out);
	case NX_OP_BATCH_NORM_GRAD:
	case NX_OP_BATCH_NORM_INFERENCE:
	case NX_OP_BATCH_NORM_TRAINING: return nx_eval_batch_norm(ev, i, ops, out);
	case NX_OP_RNG: return nx_eval_rng(ev, i, ops, out);
	case NX_OP_RNG_GET_AND_UPDATE_STATE: return nx_eval_rng_get_and_update_state(ev, i, ops, out);
	case NX_OP_RNG_BIT_GENERATOR: return nx_eval_rng_bit_generator(ev, i, ops, out);
	case NX_OP_BROADCAST:
	case NX_OP_RESHAPE:
	case NX_OP_BITCAST:
	case NX_OP_DYNAMIC_RESHAPE:
	case NX_OP_TRANSPOSE:
	case NX_OP_SLICE:
	case NX_OP_DYNAMIC_SLICE:
	case NX_OP_DYNAMIC_UPDATE_SLICE:
	case NX_OP_CONCATENATE:
	case NX_OP_PAD:
	case NX_OP_REVERSE:
	case NX_OP_IOTA:
	case NX_OP_COPY:
	case NX_OP_BITCAST_CONVERT:
	case NX_OP_REDUCE_PRECISION:
	case NX_OP_GET_DIMENSION_SIZE:
	case NX_OP_SET_DIMENSION_SIZE: return nx_eval_data_op(ev, i, ops, out);
	default: break;
	}
	if (fl & NX_OPF_COLLECTIVE)
		return nx_eval_collective(ev, i, ops, out);
	if (fl & NX_OPF_ELEMENTWISE)
		return nx_eval_elementwise(ev, i, ops, out);
	return nx_eval_error(ev, i, "%s is not supported by the evaluator", nx_opcode_name(i->op));
}

/* --------------------------------------------------------------- module */

static nx_literal *copy_out(nx_arena *a, const nx_literal *l)
{
	nx_literal *c = nx_arena_alloc(a, sizeof(*c));
	c->shape = nx_shape_copy(a, l->shape);
	c->ntuple = l->ntuple;
	if (l->ntuple) {
		c->tuple = nx_arena_alloc(a, sizeof(nx_literal *) * (size_t)l->ntuple);
		for (int k = 0; k < l->ntuple; k++) {
			c->tuple[k] = copy_out(a, l->tuple[k]);
			c->tuple[k]->shape = c->shape->tuple[k];
		}
	} else if (l->nbytes) {
		c->nbytes = l->nbytes;
		c->data = nx_arena_dup(a, l->data, (size_t)l->nbytes);
	}
	return c;
}

typedef struct replica_job {
	const nx_module *m;
	const nx_eval_opts *o;
	int nargs;
	nx_literal *const *args;
	nx_arena *out_arena;
	pthread_mutex_t *out_mu;
	nx_literal **out;
	nx_eval_group *g;
	int replica;
	nx_diag diag;
	nx_status st;
} replica_job;

static int64_t default_max_memory(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
	if (pages <= 0 || psz <= 0)
		return INT64_C(8) << 30;
	return (int64_t)pages * psz / 2;
}

static void *run_replica(void *arg)
{
	replica_job *j = arg;
	ev_priv p, *saved = cur_priv;
	ev_init(&p, j->m, j->o, &j->diag);
	cur_priv = &p;
	p.pub.replica = j->replica;
	p.pub.nreplicas = j->g ? j->g->n : 1;
	p.pub.group = j->g;
	if (p.pub.max_memory <= 0)
		p.pub.max_memory = default_max_memory();
	nx_literal *r = NULL;
	const nx_comp *e = j->m->entry;
	j->st = e ? nx_eval_call(&p.pub, e, j->args, j->nargs, &r)
	          : nx_diag_set(&j->diag, NX_ERR_INPUT, NULL, 0, 0, "module has no entry computation");
	if (j->st != NX_OK) {
		group_fail(&p.pub);
	} else {
		if (j->out_mu)
			pthread_mutex_lock(j->out_mu);
		*j->out = copy_out(j->out_arena, r);
		if (j->out_mu)
			pthread_mutex_unlock(j->out_mu);
		/* nobody may free a deposit another replica still reads */
		if (j->g) {
			nx_diag tmp = {0};
			p.pub.diag = &tmp;
			nx_eval_exchange(&p.pub, NULL, NULL, NULL);
			nx_diag_clear(&tmp);
		}
	}
	release(&p.pub, p.held, true);
	ev_free(&p);
	cur_priv = saved;
	return NULL;
}

nx_status nx_eval_module(const nx_module *m, const nx_eval_opts *o, int nargs,
                         nx_literal *const *const *args, nx_arena *out_arena,
                         nx_literal **outs, nx_diag *d)
{
	int n = o && o->replicas > 0 ? o->replicas : 1;
	if (m->entry && nargs != m->entry->nparams)
		return nx_diag_set(d, NX_ERR_INPUT, m->file, 0, 0,
		                   "entry computation takes %d parameters, got %d", m->entry->nparams, nargs);
	replica_job *jobs = calloc((size_t)n, sizeof(*jobs));
	NX_ASSERT(jobs);
	nx_eval_group g;
	pthread_mutex_t out_mu = PTHREAD_MUTEX_INITIALIZER;
	memset(&g, 0, sizeof(g));
	if (n > 1) {
		pthread_mutex_init(&g.mu, NULL);
		pthread_cond_init(&g.cv, NULL);
		g.n = n;
		g.failed_replica = -1;
		g.slots = calloc((size_t)n, sizeof(nx_literal *));
		g.published = calloc((size_t)n, sizeof(nx_literal *));
	}
	for (int r = 0; r < n; r++) {
		jobs[r] = (replica_job){.m = m, .o = o, .nargs = nargs, .args = args[r],
		                        .out_arena = out_arena, .out_mu = n > 1 ? &out_mu : NULL,
		                        .out = &outs[r], .g = n > 1 ? &g : NULL, .replica = r};
	}
	if (n == 1) {
		run_replica(&jobs[0]);
	} else {
		pthread_t *th = calloc((size_t)n, sizeof(pthread_t));
		NX_ASSERT(th);
		int started = 0;
		for (; started < n; started++) {
			int e = nx_thread_create(&th[started], run_replica, &jobs[started]);
			if (e == 0)
				continue;
			/* the replicas already running are released from their
			 * exchanges and stop: the thread error is the one reported */
			jobs[started].st = nx_diag_set(&jobs[started].diag, NX_ERR_IO, m->file, 0, 0,
			                               "cannot start a thread for replica %d of %d: %s", started, n,
			                               strerror(e));
			pthread_mutex_lock(&g.mu);
			g.failed = true;
			g.failed_replica = started;
			pthread_cond_broadcast(&g.cv);
			pthread_mutex_unlock(&g.mu);
			break;
		}
		for (int r = 0; r < started; r++)
			pthread_join(th[r], NULL);
		free(th);
	}
	nx_status st = NX_OK;
	int first = -1;
	for (int r = 0; r < n; r++)
		if (jobs[r].st != NX_OK && (first < 0 || r == g.failed_replica))
			first = r;
	if (first >= 0) {
		st = jobs[first].st;
		nx_diag_clear(d);
		*d = jobs[first].diag;
		if (n > 1 && jobs[first].diag.msg) {
			char *msg = d->msg;
			size_t len = strlen(msg) + 32;
			d->msg = malloc(len);
			snprintf(d->msg, len, "replica %d: %s", first, msg);
			free(msg);
		}
		jobs[first].diag = (nx_diag){0};
	}
	for (int r = 0; r < n; r++)
		nx_diag_clear(&jobs[r].diag);
	if (n > 1) {
		pthread_mutex_destroy(&g.mu);
		pthread_cond_destroy(&g.cv);
		free(g.slots);
		free(g.published);
	}
	free(jobs);
	return st;
}
