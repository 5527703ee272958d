/* runtime-stub/sim_cc.c — collectives between simulated ranks.
 *
 * Each rank is a thread running its own event loop. A CC instruction posts
 * the rank's source elements (its n-th collective) and blocks until every
 * participant posted its n-th collective (arrival), computes this rank's
 * result from the posted data exactly like the reference evaluator (members
 * reduced in group order, rounding to the dtype after each step), then
 * waits until every participant has read (departure) before its data may go.
 * Participants: the rank's replica group; all ranks for a permute. The
 * collective ends at the latest arrival (simulated time) plus the ring cost.
 * A wait that can never end (a participant halted or failed, or every
 * running rank waits) is an error, never a hang. */
#include "runtime-stub/sim.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct slot {
	uint64_t seq, done; /* collectives posted / finished reading */
	int op, table;
	size_t pc;
	uint64_t n;
	double arrive;
	double *data;
	bool halted, failed, secondary;
	int waiting; /* 0 running, 1 arrival, 2 departure */
	const int *parts;
	int nparts;
} slot;

struct nx_cc_world {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int nranks;
	slot *s;
};

nx_cc_world *nx_cc_world_new(int nranks)
{
	nx_cc_world *w = calloc(1, sizeof *w);
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
	w->nranks = nranks;
	w->s = calloc((size_t)nranks, sizeof *w->s);
	return w;
}

void nx_cc_world_free(nx_cc_world *w)
{
	if (!w)
		return;
	for (int r = 0; r < w->nranks; r++)
		free(w->s[r].data);
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->cv);
	free(w->s);
	free(w);
}

void nx_cc_halt(nx_cc_world *w, int r, bool failed)
{
	pthread_mutex_lock(&w->mu);
	w->s[r].halted = true;
	w->s[r].failed = failed;
	w->s[r].waiting = 0;
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);
}

bool nx_cc_secondary(nx_cc_world *w, int r)
{
	return w->s[r].secondary;
}

static uint64_t progress(const slot *p, int phase)
{
	return phase == 1 ? p->seq : p->done;
}

static bool ready(const nx_cc_world *w, int r)
{
	const slot *me = &w->s[r];
	for (int k = 0; k < me->nparts; k++)
		if (progress(&w->s[me->parts[k]], me->waiting) < me->seq)
			return false;
	return true;
}

/* Blocks (mutex held) until rank r's participants reached phase. */
static nx_status wait_for(nx_sim *s, int phase, const char *what)
{
	nx_cc_world *w = s->w;
	slot *me = &w->s[s->rank];
	me->waiting = phase;
	pthread_cond_broadcast(&w->cv);
	for (;;) {
		if (ready(w, s->rank))
			break;
		for (int k = 0; k < me->nparts; k++) {
			const slot *p = &w->s[me->parts[k]];
			if (!p->halted || progress(p, phase) >= me->seq)
				continue;
			me->waiting = 0;
			if (p->failed) {
				me->secondary = true;
				return nx_diag_set(s->d, NX_ERR_INPUT, NULL, 0, 0, "%s: %s: rank %d failed", nx_sim_where(s), what,
				                   me->parts[k]);
			}
			return nx_diag_set(s->d, NX_ERR_INPUT, NULL, 0, 0,
			                   "deadlock: rank %d waits in %s (collective #%llu, %s) for rank %d, which "
			                   "halted after %llu collectives",
			                   s->rank, what, (unsigned long long)me->seq, nx_sim_where(s), me->parts[k],
			                   (unsigned long long)p->seq);
		}
		bool stuck = true;
		for (int q = 0; q < w->nranks && stuck; q++)
			stuck = w->s[q].halted || (w->s[q].waiting && !ready(w, q));
		if (stuck) {
			me->waiting = 0;
			return nx_diag_set(s->d, NX_ERR_INPUT, NULL, 0, 0,
			                   "deadlock: every running rank waits in a collective (rank %d in %s, "
			                   "collective #%llu, %s)",
			                   s->rank, what, (unsigned long long)me->seq, nx_sim_where(s));
		}
		pthread_cond_wait(&w->cv, &w->mu);
	}
	me->waiting = 0;
	return NX_OK;
}

static double wrap_int(nx_dtype dt, int64_t v)
{
	switch (dt) {
	case NX_DT_S32: return (int32_t)(uint32_t)v;
	case NX_DT_U32: return (uint32_t)v;
	case NX_DT_S16: return (int16_t)(uint16_t)v;
	case NX_DT_U16: return (uint16_t)v;
	case NX_DT_S8: return (int8_t)(uint8_t)v;
	default: return (uint8_t)v;
	}
}

static bool is_int(nx_dtype dt)
{
	return dt >= NX_DT_S32;
}

/* One reduction step, rounded to dt (the evaluator's per-step rounding). */
static double red(int f, nx_dtype dt, double a, double b)
{
	if (is_int(dt)) {
		int64_t x = (int64_t)a, y = (int64_t)b;
		switch (f) {
		case NX_ALU_ADD: return wrap_int(dt, (int64_t)((uint64_t)x + (uint64_t)y));
		case NX_ALU_MUL: return wrap_int(dt, (int64_t)((uint64_t)x * (uint64_t)y));
		case NX_ALU_MAX: return x > y ? a : b;
		case NX_ALU_MIN: return x < y ? a : b;
		case NX_ALU_AND: return wrap_int(dt, x & y);
		case NX_ALU_OR: return wrap_int(dt, x | y);
		case NX_ALU_LAND: return x != 0 && y != 0;
		case NX_ALU_LOR: return x != 0 || y != 0;
		default: return a;
		}
	}
	float x = (float)a, y = (float)b, r;
	switch (f) {
	case NX_ALU_ADD: r = x + y; break;
	case NX_ALU_MUL: r = x * y; break;
	case NX_ALU_MAX: r = x > y || x != x ? x : y; break;
	case NX_ALU_MIN: r = x < y || x != x ? x : y; break;
	case NX_ALU_LAND: r = x != 0 && y != 0; break;
	case NX_ALU_LOR: r = x != 0 || y != 0; break;
	default: r = x; break;
	}
	uint8_t buf[8];
	nx_rt_store_elem(buf, dt, r, -1);
	return nx_rt_load_elem(buf, dt);
}

nx_status nx_sim_cc(nx_sim *s, const nx_insn *in, const int64_t *li, int depth, double arrive, double *end)
{
	const nx_neff *n = s->n;
	nx_cc_world *w = s->w;
	const char *what = nx_isa_table[in->op].name;
	const nx_rt_rgroup *g = &n->rgroups[in->iarg[2]];
	nx_dtype dt = (nx_dtype)in->ap[1].dtype;
	int nr = w->nranks, me = s->rank, pos = -1;
	int *parts = calloc((size_t)nr + 1, sizeof *parts), np = 0;
	if (g->pairs) {
		for (int r = 0; r < nr; r++)
			parts[np++] = r;
		pos = me;
	} else {
		for (int k = 0; k < g->n && pos < 0; k++)
			for (int j = g->start[k]; j < g->start[k + 1]; j++)
				if (g->ids[j] == me) {
					pos = j - g->start[k];
					np = g->start[k + 1] - g->start[k];
					for (int q = 0; q < np; q++)
						parts[q] = g->ids[g->start[k] + q];
				}
	}
	if (pos < 0 || np == 0) {
		free(parts);
		return nx_diag_set(s->d, NX_ERR_INPUT, NULL, 0, 0, "%s: rank %d is in none of the replica groups",
		                   nx_sim_where(s), me);
	}
	double *mine = NULL;
	uint64_t cnt = (uint64_t)in->ap[1].part_count * nx_ap_free_elems(&in->ap[1]);
	if (!s->timing_only && nx_sim_get(s, &in->ap[1], li, depth, &mine, &cnt) != NX_OK) {
		free(parts);
		return s->d->status;
	}
	/* arrival: post, wait for the participants' same collective */
	pthread_mutex_lock(&w->mu);
	slot *sl = &w->s[me];
	free(sl->data);
	sl->data = mine;
	sl->n = cnt;
	sl->op = in->op;
	sl->table = in->iarg[2];
	sl->pc = s->pc;
	sl->arrive = arrive;
	sl->seq = ++s->ccseq;
	sl->parts = parts;
	sl->nparts = np;
	nx_status rc = wait_for(s, 1, what);
	const double **src = calloc((size_t)np + 1, sizeof *src);
	double last = arrive;
	for (int k = 0; k < np && rc == NX_OK; k++) {
		const slot *p = &w->s[parts[k]];
		if (p->op != sl->op || p->table != sl->table || p->n != sl->n)
			rc = nx_diag_set(s->d, NX_ERR_INPUT, NULL, 0, 0,
			                 "%s: ranks diverged: collective #%llu is %s over %llu elements (table %d) on rank "
			                 "%d but %s over %llu (table %d) on rank %d",
			                 nx_sim_where(s), (unsigned long long)sl->seq, what, (unsigned long long)sl->n, sl->table,
			                 me, nx_isa_table[p->op].name, (unsigned long long)p->n, p->table, parts[k]);
		src[k] = p->data;
		if (p->arrive > last)
			last = p->arrive;
	}
	pthread_mutex_unlock(&w->mu);

	/* compute this rank's result from the posted data (stable until departure) */
	uint64_t nres = cnt;
	double *res = NULL;
	if (rc == NX_OK && !s->timing_only) {
		if (in->op == NX_I_ALL_GATHER)
			nres = cnt * (uint64_t)np;
		else if (in->op == NX_I_REDUCE_SCATTER)
			nres = cnt / (uint64_t)np;
		res = calloc(nres + 1, sizeof *res);
		switch (in->op) {
		case NX_I_ALL_REDUCE:
			for (uint64_t e = 0; e < cnt; e++) {
				double acc = src[0][e];
				for (int k = 1; k < np; k++)
					acc = red(in->func, dt, acc, src[k][e]);
				res[e] = acc;
			}
			break;
		case NX_I_REDUCE_SCATTER:
			for (uint64_t e = 0; e < nres; e++) {
				uint64_t x = (uint64_t)pos * nres + e;
				double acc = src[0][x];
				for (int k = 1; k < np; k++)
					acc = red(in->func, dt, acc, src[k][x]);
				res[e] = acc;
			}
			break;
		case NX_I_ALL_GATHER:
			for (int k = 0; k < np; k++)
				memcpy(res + (uint64_t)k * cnt, src[k], sizeof(double) * cnt);
			break;
		default: /* permute: from the rank whose pair targets this one, else zeros */
			for (int p = 0; p < g->n; p++)
				if (g->ids[2 * p + 1] == me)
					memcpy(res, src[g->ids[2 * p]], sizeof(double) * cnt);
			break;
		}
	}
	/* departure: nobody frees posted data before every participant read it */
	pthread_mutex_lock(&w->mu);
	if (rc == NX_OK) {
		sl->done = sl->seq;
		rc = wait_for(s, 2, what);
	} else {
		sl->done = sl->seq; /* do not hold the others */
		pthread_cond_broadcast(&w->cv);
	}
	sl->parts = NULL;
	sl->nparts = 0;
	pthread_mutex_unlock(&w->mu);
	free(src);
	free(parts);
	if (rc == NX_OK && !s->timing_only)
		rc = nx_sim_put(s, &in->ap[0], li, depth, res, nres);
	free(res);
	int gs = g->pairs ? 2 : np;
	*end = last + nx_target_cc_ns(s->t, in->op, (double)cnt * nx_dtype_bytes[dt], gs);
	return rc;
}

nx_status nx_cc_check_program(const nx_neff *n, int nranks, nx_diag *d);
nx_status nx_cc_check_program(const nx_neff *n, int nranks, nx_diag *d)
{
	if (n->nreplicas != nranks)
		return nx_diag_set(d, NX_ERR_INPUT, NULL, 0, 0,
		                   "the program was compiled for %d rank%s; %d requested (compile the module with "
		                   "that replica count)",
		                   n->nreplicas, n->nreplicas == 1 ? "" : "s", nranks);
	char *seen = calloc((size_t)nranks + 1, 1);
	nx_status rc = NX_OK;
	for (int t = 0; t < n->nrgroups && rc == NX_OK; t++) {
		const nx_rt_rgroup *g = &n->rgroups[t];
		int total = g->pairs ? 2 * g->n : g->start[g->n];
		memset(seen, 0, (size_t)nranks);
		for (int k = 0; k < total && rc == NX_OK; k++) {
			if (g->ids[k] >= nranks)
				rc = nx_diag_set(d, NX_ERR_INPUT, NULL, 0, 0,
				                 "replica-group entry %d names rank %d, but %d rank%s run (the program was "
				                 "built for %d)",
				                 t, g->ids[k], nranks, nranks == 1 ? "" : "s", n->nreplicas);
			else
				seen[g->ids[k]] = 1;
		}
		for (int r = 0; r < nranks && rc == NX_OK && !g->pairs; r++)
			if (!seen[r])
				rc = nx_diag_set(d, NX_ERR_INPUT, NULL, 0, 0,
				                 "rank %d is in none of the groups of replica-group entry %d (the program "
				                 "was built for %d ranks)",
				                 r, t, n->nreplicas);
	}
	free(seen);
	return rc;
}
