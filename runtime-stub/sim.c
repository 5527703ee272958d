/* runtime-stub/sim.c — runs a loaded .neff: functional effects plus a timing
 * model. Each engine advances its own clock through its stream; the engine
 * (or pending semaphore event) with the earliest time goes next, so
 * semaphore signals are seen in time order. DMAs run on their queues in the
 * background and signal their semaphore when done. */
#include "runtime-stub/sim.h"

#include "runtime-stub/profile.h"
#include "ir/thread.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define GIB_D 1073741824.0

nx_rt_opts nx_rt_opts_default(void)
{
	nx_rt_opts o = {0};
	const char *e = getenv("NEURON_RT_STOCHASTIC_ROUNDING_EN");
	o.stochastic_rounding = e && strcmp(e, "1") == 0;
	const char *seed = getenv("NEURON_RT_STOCHASTIC_ROUNDING_SEED");
	o.sr_seed = seed ? strtoull(seed, NULL, 0) : 0;
	const char *g = getenv("NXCC_SIM_GENERIC");
	o.generic_only = g && strcmp(g, "1") == 0;
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
	/* control loops (device while loops): no access-pattern level */
	int cdepth;
	size_t ctl_pc[NX_CTRL_DEPTH];
	int64_t ctl_n[NX_CTRL_DEPTH], ctl_i[NX_CTRL_DEPTH];
	int32_t reg[NX_NREGS];
} eng;

typedef struct {
	double t;
	int sem, inc;
	int snap; /* race check: the signaller's clock (nx_race_snapshot), or -1 */
} event;

/* Pending semaphore signals, a binary min-heap on t. Events with equal t
 * may leave in any order: all of them are applied before any engine at that
 * time runs, so the order does not change the timing. */
typedef struct {
	event *v;
	size_t n, cap;
} evheap;

static void ev_push(evheap *h, event x)
{
	if (h->n == h->cap) {
		h->cap = h->cap ? h->cap * 2 : 64;
		h->v = realloc(h->v, sizeof *h->v * h->cap);
		NX_ASSERT(h->v);
	}
	size_t i = h->n++;
	while (i > 0 && h->v[(i - 1) / 2].t > x.t) {
		h->v[i] = h->v[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h->v[i] = x;
}

static event ev_pop(evheap *h)
{
	event top = h->v[0], x = h->v[--h->n];
	size_t i = 0;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= h->n)
			break;
		if (c + 1 < h->n && h->v[c + 1].t < h->v[c].t)
			c++;
		if (!(h->v[c].t < x.t))
			break;
		h->v[i] = h->v[c];
		i = c;
	}
	if (h->n)
		h->v[i] = x;
	return top;
}

const char *nx_sim_where(nx_sim *s)
{
	snprintf(s->where, sizeof s->where, "sg00/%s.bin: instruction %zu", nx_engine_names[s->where_eng], s->where_pc);
	return s->where;
}

/* Statistics of one data instruction that do not need its data: DMA
 * traffic (HBM bytes each way, partition rows) and TensorE FLOPs with their
 * time at the peak rate of the moving operand's dtype. */
static void count_insn(const nx_target *t, const nx_insn *in, nx_rt_stats *st)
{
	if (in->op == NX_I_MATMUL) {
		double k = in->ap[1].part_count, m = (double)nx_ap_free_elems(&in->ap[1]);
		double fl = 2.0 * k * m * (double)nx_ap_free_elems(&in->ap[2]);
		int dt = in->ap[2].dtype;
		double tf = dt == NX_DT_F32 ? t->pe_tflops_fp32
		            : dt == NX_DT_FP8E4M3 || dt == NX_DT_FP8E5M2 ? t->pe_tflops_fp8
		                                                         : t->pe_tflops_bf16;
		st->pe_flops += fl;
		st->pe_peak_ns += fl / (tf * 1e3);
		return;
	}
	if (in->op != NX_I_DMA && in->op != NX_I_DMA_GATHER && in->op != NX_I_DMA_SCATTER)
		return;
	const nx_ap *dst = &in->ap[0], *src = &in->ap[1];
	uint64_t n = (uint64_t)src->part_count * nx_ap_free_elems(src);
	if (in->op == NX_I_DMA_GATHER) /* one source row per index */
		n *= (uint64_t)in->ap[2].part_count * nx_ap_free_elems(&in->ap[2]);
	uint64_t bytes = n * nx_dtype_bytes[src->dtype];
	st->dma_count++;
	st->dma_bytes += bytes;
	st->dma_rows += dst->space != NX_MEM_HBM ? dst->part_count : src->part_count;
	if (src->space == NX_MEM_HBM)
		st->hbm_read_bytes += bytes;
	if (dst->space == NX_MEM_HBM)
		st->hbm_write_bytes += in->op == NX_I_DMA_SCATTER /* one destination row per index */
		                           ? bytes
		                           : (uint64_t)dst->part_count * nx_ap_free_elems(dst) * nx_dtype_bytes[dst->dtype];
}

static nx_status run(nx_sim *s, const nx_rt_opts *o, nx_rt_stats *st, nx_rt_profile *tr)
{
	const nx_neff *n = s->n;
	const nx_target *t = s->t;
	eng E[NX_ENG_COUNT];
	memset(E, 0, sizeof E);
	for (int e = 0; e < NX_ENG_COUNT; e++)
		E[e].wait_sem = -1;
	if (t->dma_engines > NX_RT_MAX_QUEUES)
		return nx_diag_set(s->d, NX_ERR_INPUT, NULL, 0, 0, "target %s has %d DMA queues; the simulator keeps %d",
		                   t->name, t->dma_engines, NX_RT_MAX_QUEUES);
	int64_t *sem = calloc((size_t)n->nsems + 1, sizeof *sem);
	double *qclock = calloc((size_t)t->dma_engines, sizeof *qclock);
	double port_free[NX_PORT_COUNT] = {0}; /* shared SBUF/PSUM ports: busy until */
	nx_race *race = NULL;
	evheap ev = {0};
	uint64_t steps = 0, budget = o->max_steps ? o->max_steps : 1000000000ULL;
	nx_status rc = NX_OK;
	if (n->min_steps > budget) {
		rc = nx_diag_set(s->d, NX_ERR_INPUT, NULL, 0, 0,
		                 "the program executes at least %llu instructions (its loop counts), over the "
		                 "budget of %llu (nxcc run --max-steps)",
		                 (unsigned long long)n->min_steps, (unsigned long long)budget);
		goto out;
	}
	NX_ASSERT(sem && qclock);
	race = s->race = o->check_races ? nx_race_new(n, t) : NULL;

	for (;;) {
		int be = -1;
		for (int e = 0; e < NX_ENG_COUNT; e++)
			if (!E[e].done && E[e].wait_sem < 0 && (be < 0 || E[e].clock < E[be].clock))
				be = e;
		if (be < 0 && ev.n == 0) {
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
		if (ev.n && (be < 0 || ev.v[0].t <= E[be].clock)) {
			event x = ev_pop(&ev);
			sem[x.sem] += x.inc;
			if (race && x.snap >= 0)
				nx_race_signal(race, x.sem, sem[x.sem], x.snap);
			for (int e = 0; e < NX_ENG_COUNT; e++)
				if (E[e].wait_sem == x.sem && sem[x.sem] >= nx_isa_wait_target(&n->stream[e][E[e].pc], E[e].reg)) {
					E[e].wait_sem = -1;
					if (E[e].clock < x.t)
						E[e].clock = x.t;
				}
			continue;
		}
		eng *g = &E[be];
		if (g->pc >= n->nstream[be]) {
			g->done = true;
			if (race)
				nx_race_done(race, be);
			continue;
		}
		if (++steps > budget) {
			rc = nx_diag_set(s->d, NX_ERR_INPUT, NULL, 0, 0,
			                 "instruction budget of %llu exceeded (endless loop?)", (unsigned long long)budget);
			goto out;
		}
		const nx_insn *in = &n->stream[be][g->pc];
		s->where_eng = be;
		s->where_pc = g->pc;
		double ctrl = t->ctrl_cycles / t->freq_ghz[be];
		st->insns[be]++;
		switch (in->op) {
		case NX_I_HALT:
			g->done = true;
			if (race)
				nx_race_done(race, be);
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
			if (nx_isa_ctrl_loop(in)) {
				g->ctl_pc[g->cdepth] = g->pc;
				g->ctl_n[g->cdepth] = cnt;
				g->ctl_i[g->cdepth] = 0;
				g->cdepth++;
				break;
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
			if (nx_isa_ctrl_loop(in)) {
				d = g->cdepth - 1;
				if (++g->ctl_i[d] < g->ctl_n[d]) {
					g->pc = g->ctl_pc[d] + 1;
					continue;
				}
				g->cdepth--;
				break;
			}
			if (++g->loop_i[d] < g->loop_n[d]) {
				g->pc = g->loop_pc[d] + 1;
				continue;
			}
			g->depth--;
			break;
		}
		case NX_I_BRZ:
			g->clock += ctrl;
			if (g->reg[in->iarg[0]] == 0) { /* leave the control loop */
				g->pc = (size_t)n->loop_match[be][g->ctl_pc[--g->cdepth]] + 1;
				continue;
			}
			break;
		case NX_I_LDREG: {
			g->clock += ctrl;
			if (s->timing_only) {
				rc = nx_diag_set(s->d, NX_ERR_INPUT, NULL, 0, 0,
				                 "sg00/%s.bin instruction %zu: ldreg (a data-dependent loop) needs data: run "
				                 "without --timing-only",
				                 nx_engine_names[be], g->pc);
				goto out;
			}
			double *v;
			uint64_t cnt;
			s->pc = g->pc;
			if (race && (rc = nx_race_access(race, s, be, -1, in, g->loop_i, g->depth)) != NX_OK)
				goto out;
			if ((rc = nx_sim_get(s, &in->ap[0], g->loop_i, g->depth, &v, &cnt)) != NX_OK)
				goto out;
			g->reg[in->iarg[0]] = (int32_t)v[0];
			free(v);
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
			if (sem[in->iarg[0]] < nx_isa_wait_target(in, g->reg)) {
				g->wait_sem = in->iarg[0];
				st->insns[be]--; /* counted when it passes */
				continue; /* re-executed when woken */
			}
			if (race)
				nx_race_wait(race, be, in->iarg[0], nx_isa_wait_target(in, g->reg));
			g->clock += ctrl;
			break;
		case NX_I_SIGNAL:
			g->clock += ctrl;
			ev_push(&ev, (event){g->clock, in->iarg[0], in->iarg[1], race ? nx_race_snapshot(race, be) : -1});
			break;
		default: {
			if (nx_isa_table[in->op].cost == NX_COST_CC) {
				int q = in->iarg[0];
				double end, arrive;
				g->clock += ctrl;
				arrive = qclock[q] > g->clock ? qclock[q] : g->clock;
				s->pc = g->pc;
				if (race) {
					nx_race_issue(race, be, q);
					if ((rc = nx_race_access(race, s, be, q, in, g->loop_i, g->depth)) != NX_OK)
						goto out;
				}
				if ((rc = nx_sim_cc(s, in, g->loop_i, g->depth, arrive, &end)) != NX_OK)
					goto out;
				qclock[q] = end;
				st->cc_ns += end - arrive;
				st->cc_count++;
				st->cc_bytes += (uint64_t)in->ap[1].part_count * nx_ap_free_elems(&in->ap[1]) *
				                nx_dtype_bytes[in->ap[1].dtype];
				st->queue_busy_ns[q] += end - arrive;
				nx_prof_add(tr, NX_ENG_COUNT + q, arrive, end - arrive, in, g->loop_i, g->depth);
				if (in->iarg[1] >= 0)
					ev_push(&ev, (event){end, in->iarg[1], 1, race ? nx_race_snapshot(race, NX_ENG_COUNT + q) : -1});
				st->busy_ns[be] += ctrl;
				break;
			}
			bool xfer = nx_isa_table[in->op].cost == NX_COST_DMA;
			if (race) {
				if (xfer)
					nx_race_issue(race, be, in->iarg[0]);
				if ((rc = nx_race_access(race, s, be, xfer ? in->iarg[0] : -1, in, g->loop_i, g->depth)) != NX_OK)
					goto out;
			}
			if (!s->timing_only && (rc = nx_sim_exec(s, in, g->loop_i, g->depth)) != NX_OK)
				goto out;
			count_insn(t, in, st);
			double ns = nx_target_ns(t, in) + (in->op == NX_I_CALL ? nx_sim_gpsimd_ns(s, in) : 0); /* GpSimd estimate */
			if (nx_isa_table[in->op].cost == NX_COST_DMA) {
				int q = in->iarg[0];
				g->clock += ctrl;
				double start = qclock[q] > g->clock ? qclock[q] : g->clock;
				qclock[q] = start + ns;
				st->dma_busy_ns += ns;
				st->queue_busy_ns[q] += ns;
				nx_prof_add(tr, NX_ENG_COUNT + q, start, ns, in, g->loop_i, g->depth);
				if (in->iarg[1] >= 0)
					ev_push(&ev, (event){qclock[q], in->iarg[1], 1, race ? nx_race_snapshot(race, NX_ENG_COUNT + q) : -1});
				st->busy_ns[be] += ctrl;
			} else {
				/* an instruction holding a shared port starts when the
				 * other engine's earlier holders are done (docs/targets.md) */
				unsigned pm = nx_target_ports(t, in);
				double start = g->clock;
				for (int p = 0; p < NX_PORT_COUNT; p++)
					if ((pm & (1u << p)) && port_free[p] > start)
						start = port_free[p];
				st->port_wait_ns[be] += start - g->clock;
				nx_prof_add(tr, be, start, ns, in, g->loop_i, g->depth);
				g->clock = start + ns;
				for (int p = 0; p < NX_PORT_COUNT; p++)
					if (pm & (1u << p))
						port_free[p] = g->clock;
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
	nx_race_free(race);
	s->race = NULL;
	free(sem);
	free(qclock);
	free(ev.v);
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
	s.timing_only = o->timing_only;
	s.generic_only = o->generic_only;
	if (!s.timing_only) {
		/* HBM pages are touched only where the program writes them */
		s.hbm = calloc((size_t)n->hbm_size + 1, 1);
		s.sbuf = calloc((size_t)(s.t->partitions * s.t->sbuf_partition_bytes), 1);
		s.psum = calloc((size_t)(s.t->partitions * s.t->psum_partition_bytes), 1);
		if (!s.hbm || !s.sbuf || !s.psum) {
			free(s.hbm);
			free(s.sbuf);
			free(s.psum);
			j->rc = nx_diag_set(d, NX_ERR_INPUT, NULL, 0, 0,
			                    "cannot allocate %lld bytes of simulated HBM on the host (nxcc run "
			                    "--timing-only simulates the timing without it)",
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
	}
	/* only rank 0 is profiled */
	nx_rt_profile *tr = j->rank == 0 && (o->profile_path || o->profile_out) ? nx_prof_new(n) : NULL;
	nx_status rc = run(&s, o, st, tr);
	nx_cc_halt(j->w, j->rank, rc != NX_OK);
	if (rc == NX_OK && !s.timing_only)
		for (int i = 0; i < n->noutputs; i++)
			if (n->outputs[i].bytes)
				memcpy(j->outputs[i], s.hbm + n->outputs[i].hbm_offset, (size_t)n->outputs[i].bytes);
	if (rc == NX_OK && tr)
		rc = nx_rt_profile_output(tr, st, o, d);
	else
		nx_prof_free(tr);
	for (int i = 0; i < 5; i++)
		free(s.tmp[i]);
	for (int i = 0; i < 4; i++)
		free(s.ftmp[i]);
	free(s.hbm);
	free(s.sbuf);
	free(s.psum);
	j->rc = rc;
	return NULL;
}

/* The host's memory: physical, or the cgroup v2 limit when lower. */
static int64_t host_memory_bytes(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
	int64_t mem = pages > 0 && psz > 0 ? (int64_t)pages * psz : INT64_MAX;
	FILE *f = fopen("/sys/fs/cgroup/memory.max", "r");
	if (f) {
		long long lim;
		if (fscanf(f, "%lld", &lim) == 1 && lim > 0 && lim < mem)
			mem = lim;
		fclose(f);
	}
	return mem;
}

nx_status nx_rt_check_host_memory(const nx_neff *n, int nranks, int64_t extra, nx_diag *d)
{
	double need = (double)nranks * (double)n->hbm_size + (double)extra;
	int64_t have = host_memory_bytes();
	if (need > (double)have)
		return nx_diag_set(d, NX_ERR_INPUT, NULL, 0, 0,
		                   "a full run needs %.2f GiB of host memory (%d rank%s x %.2f GiB of simulated HBM, "
		                   "%.2f GiB of inputs and outputs); this host has %.2f GiB (nxcc run --timing-only "
		                   "simulates the timing without data)",
		                   need / GIB_D, nranks, nranks == 1 ? "" : "s", (double)n->hbm_size / GIB_D,
		                   (double)extra / GIB_D, (double)have / GIB_D);
	return NX_OK;
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
	if (!o->timing_only && nx_rt_check_host_memory(n[0], nranks, 0, d) != NX_OK)
		return d->status;
	rank_job *jobs = calloc((size_t)nranks, sizeof *jobs);
	nx_rt_stats *dummy = st ? NULL : calloc((size_t)nranks, sizeof *dummy);
	nx_cc_world *w = nx_cc_world_new(nranks);
	pthread_t *th = calloc((size_t)nranks, sizeof *th);
	for (int r = 0; r < nranks; r++)
		jobs[r] = (rank_job){n[r], inputs ? inputs[r] : NULL, outputs ? outputs[r] : NULL, o, st ? &st[r] : &dummy[r], {0}, w, r, NX_OK};
	if (nranks == 1) {
		run_rank(&jobs[0]);
	} else {
		int started = 0;
		for (; started < nranks; started++) {
			int e = nx_thread_create(&th[started], run_rank, &jobs[started]);
			if (e == 0)
				continue;
			/* the ranks already running stop at their next collective */
			jobs[started].rc = nx_diag_set(&jobs[started].d, NX_ERR_IO, NULL, 0, 0,
			                               "cannot start a thread for rank %d of %d: %s", started, nranks,
			                               strerror(e));
			for (int r = started; r < nranks; r++)
				nx_cc_halt(w, r, true);
			break;
		}
		for (int r = 0; r < started; r++)
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
