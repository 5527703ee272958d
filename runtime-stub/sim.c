/* runtime-stub/sim.c — runs a loaded .neff: functional effects plus a timing
 * model. Each engine advances its own clock through its stream; the engine
 * (or pending semaphore event) with the earliest time goes next, so
 * semaphore signals are seen in time order. DMAs run on their queues in the
 * background and signal their semaphore when done. */
#include "runtime-stub/sim.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

nx_rt_opts nx_rt_opts_default(void)
{
	nx_rt_opts o = {0};
	const char *e = getenv("NEURON_RT_STOCHASTIC_ROUNDING_EN");
	o.stochastic_rounding = e && strcmp(e, "1") == 0;
	const char *seed = getenv("NEURON_RT_STOCHASTIC_ROUNDING_SEED");
	o.sr_seed = seed ? strtoull(seed, NULL, 0) : 0;
	return o;
}

typedef struct {
	size_t pc;
	double clock;
	bool done;
	int wait_sem; /* -1 when not blocked */
	int depth;
	size_t loop_pc[NX_LOOP_DEPTH];
	int64_t loop_n[NX_LOOP_DEPTH], loop_i[NX_LOOP_DEPTH];
	int32_t reg[NX_NREGS];
} eng;

typedef struct {
	double t;
	int sem, inc;
} event;

typedef struct {
	int track; /* engine, or NX_ENG_COUNT + DMA queue */
	double start, dur;
	uint16_t op;
	uint32_t debug;
} trace_ev;

typedef struct {
	trace_ev *v;
	size_t n, cap;
} trace;

static void trace_add(trace *tr, int track, double start, double dur, const nx_insn *in)
{
	if (tr->n == tr->cap) {
		if (tr->cap >= (1u << 22))
			return; /* keep profiles bounded */
		tr->cap = tr->cap ? tr->cap * 2 : 1024;
		tr->v = realloc(tr->v, sizeof *tr->v * tr->cap);
	}
	tr->v[tr->n++] = (trace_ev){track, start, dur, in->op, in->debug_id};
}

static nx_status write_trace(const nx_neff *n, const trace *tr, const char *path, nx_diag *d)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return nx_diag_set(d, NX_ERR_IO, path, 0, 0, "cannot write the profile");
	fprintf(f, "{\"traceEvents\": [\n");
	for (int t = 0; t < NX_ENG_COUNT + n->tgt->dma_engines; t++) {
		char name[32];
		if (t < NX_ENG_COUNT)
			snprintf(name, sizeof name, "%s", nx_engine_names[t]);
		else
			snprintf(name, sizeof name, "dma%d", t - NX_ENG_COUNT);
		fprintf(f, "{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 1, \"tid\": %d, \"args\": {\"name\": \"%s\"}},\n",
		        t, name);
	}
	for (size_t i = 0; i < tr->n; i++) {
		const trace_ev *e = &tr->v[i];
		fprintf(f, "{\"name\": \"%s\", \"ph\": \"X\", \"pid\": 1, \"tid\": %d, \"ts\": %.4f, \"dur\": %.4f",
		        nx_isa_table[e->op].name, e->track, e->start / 1000.0, e->dur / 1000.0);
		if (e->debug < (uint32_t)n->ndebug) {
			fprintf(f, ", \"args\": {\"hlo\": \"");
			for (const char *p = n->debug_names[e->debug]; *p; p++)
				if (*p != '"' && *p != '\\' && (unsigned char)*p >= 0x20)
					fputc(*p, f);
			fprintf(f, "\"}");
		}
		fprintf(f, "},\n");
	}
	fprintf(f, "{\"name\": \"end\", \"ph\": \"i\", \"pid\": 1, \"tid\": 0, \"ts\": 0, \"s\": \"g\"}\n]}\n");
	if (fclose(f) != 0)
		return nx_diag_set(d, NX_ERR_IO, path, 0, 0, "cannot write the profile");
	return NX_OK;
}

static nx_status run(nx_sim *s, const nx_rt_opts *o, nx_rt_stats *st, trace *tr)
{
	const nx_neff *n = s->n;
	const nx_target *t = s->t;
	eng E[NX_ENG_COUNT];
	memset(E, 0, sizeof E);
	for (int e = 0; e < NX_ENG_COUNT; e++)
		E[e].wait_sem = -1;
	int64_t *sem = calloc((size_t)n->nsems + 1, sizeof *sem);
	double *qclock = calloc((size_t)t->dma_engines, sizeof *qclock);
	event *ev = NULL;
	size_t nev = 0, evcap = 0;
	uint64_t steps = 0, budget = o->max_steps ? o->max_steps : 1000000000ULL;
	char where[96];
	s->where = where;
	nx_status rc = NX_OK;

	for (;;) {
		int be = -1;
		for (int e = 0; e < NX_ENG_COUNT; e++)
			if (!E[e].done && E[e].wait_sem < 0 && (be < 0 || E[e].clock < E[be].clock))
				be = e;
		size_t bi = nev;
		for (size_t i = 0; i < nev; i++)
			if (bi == nev || ev[i].t < ev[bi].t)
				bi = i;
		if (be < 0 && bi == nev) {
			for (int e = 0; e < NX_ENG_COUNT; e++)
				if (!E[e].done) {
					rc = nx_diag_set(s->d, NX_ERR_INPUT, NULL, 0, 0,
					                 "deadlock: sg00/%s.bin instruction %zu waits for semaphore %d >= %d (it is %lld)",
					                 nx_engine_names[e], E[e].pc, E[e].wait_sem,
					                 n->stream[e][E[e].pc].iarg[1], (long long)sem[E[e].wait_sem]);
					goto out;
				}
			break;
		}
		if (bi < nev && (be < 0 || ev[bi].t <= E[be].clock)) {
			event x = ev[bi];
			ev[bi] = ev[--nev];
			sem[x.sem] += x.inc;
			for (int e = 0; e < NX_ENG_COUNT; e++)
				if (E[e].wait_sem == x.sem && sem[x.sem] >= n->stream[e][E[e].pc].iarg[1]) {
					E[e].wait_sem = -1;
					if (E[e].clock < x.t)
						E[e].clock = x.t;
				}
			continue;
		}
		eng *g = &E[be];
		if (g->pc >= n->nstream[be]) {
			g->done = true;
			continue;
		}
		if (++steps > budget) {
			rc = nx_diag_set(s->d, NX_ERR_INPUT, NULL, 0, 0,
			                 "instruction budget of %llu exceeded (endless loop?)", (unsigned long long)budget);
			goto out;
		}
		const nx_insn *in = &n->stream[be][g->pc];
		snprintf(where, sizeof where, "sg00/%s.bin: instruction %zu", nx_engine_names[be], g->pc);
		double ctrl = t->ctrl_cycles / t->freq_ghz[be];
		st->insns[be]++;
		switch (in->op) {
		case NX_I_HALT:
			g->done = true;
			continue;
		case NX_I_NOP:
			g->clock += ctrl;
			break;
		case NX_I_LOOP: {
			int64_t cnt = in->iarg[1] ? g->reg[in->iarg[1] - 1] : in->iarg[0];
			g->clock += ctrl;
			if (cnt <= 0) {
				g->pc = (size_t)n->loop_match[be][g->pc] + 1;
				continue;
			}
			g->loop_pc[g->depth] = g->pc;
			g->loop_n[g->depth] = cnt;
			g->loop_i[g->depth] = 0;
			g->depth++;
			break;
		}
		case NX_I_ENDLOOP: {
			int d = g->depth - 1;
			g->clock += ctrl;
			if (++g->loop_i[d] < g->loop_n[d]) {
				g->pc = g->loop_pc[d] + 1;
				continue;
			}
			g->depth--;
			break;
		}
		case NX_I_SETREG:
			g->reg[in->iarg[0]] = in->iarg[1];
			g->clock += ctrl;
			break;
		case NX_I_ADDREG:
			g->reg[in->iarg[0]] = (int32_t)((uint32_t)g->reg[in->iarg[0]] + (uint32_t)in->iarg[1]);
			g->clock += ctrl;
			break;
		case NX_I_WAIT:
			if (sem[in->iarg[0]] < in->iarg[1]) {
				g->wait_sem = in->iarg[0];
				st->insns[be]--; /* counted when it passes */
				continue; /* re-executed when woken */
			}
			g->clock += ctrl;
			break;
		case NX_I_SIGNAL:
			g->clock += ctrl;
			if (nev == evcap)
				ev = realloc(ev, sizeof *ev * (evcap = evcap ? evcap * 2 : 16));
			ev[nev++] = (event){g->clock, in->iarg[0], in->iarg[1]};
			break;
		default: {
			if (nx_isa_table[in->op].cost == NX_COST_CC) {
				int q = in->iarg[0];
				double end, arrive;
				g->clock += ctrl;
				arrive = qclock[q] > g->clock ? qclock[q] : g->clock;
				s->pc = g->pc;
				if ((rc = nx_sim_cc(s, in, g->loop_i, g->depth, arrive, &end)) != NX_OK)
					goto out;
				qclock[q] = end;
				st->cc_ns += end - arrive;
				st->cc_count++;
				st->cc_bytes += (uint64_t)in->ap[1].part_count * nx_ap_free_elems(&in->ap[1]) *
				                nx_dtype_bytes[in->ap[1].dtype];
				trace_add(tr, NX_ENG_COUNT + q, arrive, end - arrive, in);
				if (in->iarg[1] >= 0) {
					if (nev == evcap)
						ev = realloc(ev, sizeof *ev * (evcap = evcap ? evcap * 2 : 16));
					ev[nev++] = (event){end, in->iarg[1], 1};
				}
				st->busy_ns[be] += ctrl;
				break;
			}
			if ((rc = nx_sim_exec(s, in, g->loop_i, g->depth)) != NX_OK)
				goto out;
			double ns = nx_target_ns(t, in) + (in->op == NX_I_CALL ? s->gs_ns : 0); /* GpSimd: measured work */
			if (nx_isa_table[in->op].cost == NX_COST_DMA) {
				int q = in->iarg[0];
				g->clock += ctrl;
				double start = qclock[q] > g->clock ? qclock[q] : g->clock;
				qclock[q] = start + ns;
				st->dma_busy_ns += ns;
				trace_add(tr, NX_ENG_COUNT + q, start, ns, in);
				if (in->iarg[1] >= 0) {
					if (nev == evcap)
						ev = realloc(ev, sizeof *ev * (evcap = evcap ? evcap * 2 : 16));
					ev[nev++] = (event){qclock[q], in->iarg[1], 1};
				}
				st->busy_ns[be] += ctrl;
			} else {
				trace_add(tr, be, g->clock, ns, in);
				g->clock += ns;
				st->busy_ns[be] += ns;
			}
		}
		}
		g->pc++;
	}
	st->total_ns = 0;
	for (int e = 0; e < NX_ENG_COUNT; e++)
		if (E[e].clock > st->total_ns)
			st->total_ns = E[e].clock;
	for (int q = 0; q < t->dma_engines; q++)
		if (qclock[q] > st->total_ns)
			st->total_ns = qclock[q];
out:
	free(sem);
	free(qclock);
	free(ev);
	return rc;
}

nx_status nx_cc_check_program(const nx_neff *n, int nranks, nx_diag *d);

typedef struct rank_job {
	const nx_neff *n;
	const void *const *inputs;
	void *const *outputs;
	const nx_rt_opts *o;
	nx_rt_stats *st;
	nx_diag d;
	nx_cc_world *w;
	int rank;
	nx_status rc;
} rank_job;

static void *run_rank(void *arg)
{
	rank_job *j = arg;
	const nx_neff *n = j->n;
	nx_rt_stats *st = j->st;
	nx_diag *d = &j->d;
	const nx_rt_opts *o = j->o;
	memset(st, 0, sizeof *st);
	nx_sim s;
	memset(&s, 0, sizeof s);
	s.n = n;
	s.t = n->tgt;
	s.d = d;
	s.w = j->w;
	s.rank = j->rank;
	s.sr = o->stochastic_rounding;
	s.rng = o->sr_seed * 0x9e3779b97f4a7c15ULL + 0x2545f4914f6cdd1dULL + (uint64_t)j->rank * 0x632be59bd9b4e019ULL;
	if (!s.rng)
		s.rng = 1;
	s.hbm = calloc((size_t)n->hbm_size + 1, 1);
	s.sbuf = calloc((size_t)(s.t->partitions * s.t->sbuf_partition_bytes), 1);
	s.psum = calloc((size_t)(s.t->partitions * s.t->psum_partition_bytes), 1);
	if (!s.hbm || !s.sbuf || !s.psum) {
		free(s.hbm);
		free(s.sbuf);
		free(s.psum);
		j->rc = nx_diag_set(d, NX_ERR_INPUT, NULL, 0, 0, "cannot allocate %lld bytes of simulated HBM",
		                    (long long)n->hbm_size);
		nx_cc_halt(j->w, j->rank, true);
		return NULL;
	}
	for (int i = 0; i < n->nconsts; i++)
		memcpy(s.hbm + n->consts[i].hbm_offset, n->consts[i].data, (size_t)n->consts[i].bytes);
	for (int i = 0; i < n->ninputs; i++)
		if (n->inputs[i].bytes)
			memcpy(s.hbm + n->inputs[i].hbm_offset, j->inputs[i], (size_t)n->inputs[i].bytes);
	if (n->rank_id_offset >= 0)
		nx_put_le(s.hbm + n->rank_id_offset, (uint32_t)j->rank, 4);
	trace tr = {0};
	nx_status rc = run(&s, o, st, &tr);
	nx_cc_halt(j->w, j->rank, rc != NX_OK);
	st->dma_bytes = s.dma_bytes;
	if (rc == NX_OK)
		for (int i = 0; i < n->noutputs; i++)
			if (n->outputs[i].bytes)
				memcpy(j->outputs[i], s.hbm + n->outputs[i].hbm_offset, (size_t)n->outputs[i].bytes);
	if (rc == NX_OK && o->profile_path && j->rank == 0)
		rc = write_trace(n, &tr, o->profile_path, d);
	free(tr.v);
	for (int i = 0; i < 5; i++)
		free(s.tmp[i]);
	free(s.hbm);
	free(s.sbuf);
	free(s.psum);
	j->rc = rc;
	return NULL;
}

nx_status nx_rt_run_ranks(int nranks, const nx_neff *const *n, const void *const *const *inputs,
                          void *const *const *outputs, const nx_rt_opts *o, nx_rt_stats *st, nx_diag *d)
{
	nx_rt_opts def = nx_rt_opts_default();
	if (!o)
		o = &def;
	if (nranks < 1 || nranks > 64)
		return nx_diag_set(d, NX_ERR_INPUT, NULL, 0, 0, "%d ranks: the simulator runs 1 to 64", nranks);
	for (int r = 0; r < nranks; r++)
		if (nx_cc_check_program(n[r], nranks, d) != NX_OK)
			return d->status;
	rank_job *jobs = calloc((size_t)nranks, sizeof *jobs);
	nx_rt_stats *dummy = st ? NULL : calloc((size_t)nranks, sizeof *dummy);
	nx_cc_world *w = nx_cc_world_new(nranks);
	pthread_t *th = calloc((size_t)nranks, sizeof *th);
	for (int r = 0; r < nranks; r++)
		jobs[r] = (rank_job){n[r], inputs[r], outputs[r], o, st ? &st[r] : &dummy[r], {0}, w, r, NX_OK};
	if (nranks == 1) {
		run_rank(&jobs[0]);
	} else {
		for (int r = 0; r < nranks; r++)
			if (pthread_create(&th[r], NULL, run_rank, &jobs[r]) != 0)
				NX_ASSERT(!"pthread_create failed");
		for (int r = 0; r < nranks; r++)
			pthread_join(th[r], NULL);
	}
	/* the first rank whose error is its own (others report "rank R failed") */
	int bad = -1;
	for (int r = 0; r < nranks; r++)
		if (jobs[r].rc != NX_OK && (bad < 0 || (nx_cc_secondary(w, bad) && !nx_cc_secondary(w, r))))
			bad = r;
	nx_status rc = NX_OK;
	if (bad >= 0) {
		if (nranks > 1)
			nx_diag_set(d, jobs[bad].d.status, NULL, 0, 0, "rank %d: %s", bad,
			            jobs[bad].d.msg ? jobs[bad].d.msg : "failed");
		else
			nx_diag_set(d, jobs[bad].d.status, NULL, 0, 0, "%s", jobs[bad].d.msg ? jobs[bad].d.msg : "failed");
		rc = d->status ? d->status : NX_ERR_INPUT;
	}
	for (int r = 0; r < nranks; r++)
		nx_diag_clear(&jobs[r].d);
	nx_cc_world_free(w);
	free(th);
	free(dummy);
	free(jobs);
	return rc;
}

nx_status nx_rt_run(const nx_neff *n, const void *const *inputs, void *const *outputs,
                    const nx_rt_opts *o, nx_rt_stats *st, nx_diag *d)
{
	return nx_rt_run_ranks(1, &n, &inputs, &outputs, o, st, d);
}
