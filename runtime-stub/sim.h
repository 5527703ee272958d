/* runtime-stub/sim.h — internal to the simulator. */
#ifndef NX_SIM_H
#define NX_SIM_H

#include "runtime-stub/rt.h"

typedef struct nx_cc_world nx_cc_world;
typedef struct nx_race nx_race;

typedef struct nx_sim {
	const nx_neff *n;
	const nx_target *t;
	uint8_t *hbm, *sbuf, *psum;
	bool sr;
	uint64_t rng;
	nx_diag *d;
	int where_eng;      /* the instruction executing, for messages: nx_sim_where */
	size_t where_pc;
	char where[96];
	double *tmp[5];
	size_t tmpcap[5];
	float *ftmp[4]; /* sim_fast.c: tiles as floats */
	size_t ftmpcap[4];
	bool timing_only; /* no memories: instructions are timed, not executed */
	bool generic_only; /* never sim_fast.c */
	/* collectives */
	nx_cc_world *w;
	int rank;
	uint64_t ccseq; /* collectives this rank entered */
	size_t pc;      /* SP instruction index, for messages */
	double gs_ns;   /* the last GpSimd call's estimated time (sim_gpsimd.c) */
	nx_race *race;  /* nx_rt_opts.check_races: sim_race.c */
} nx_sim;

/* "sg00/pe.bin: instruction 12": the instruction executing (formatted only
 * when a message needs it). */
const char *nx_sim_where(nx_sim *s);

/* An access pattern resolved with the loop indices: element (p, free index
 * 0) of partition p is at base + p * pstep. */
typedef struct nx_sim_view {
	uint8_t *base;
	int64_t pstep;
	int esz;
	const nx_ap *a;
	uint64_t np, nf; /* partitions, elements per partition */
} nx_sim_view;

/* sim_fast.c: executes in at host speed when its dtypes and operators
 * allow (bit-identical to the generic path). False: not handled, nothing
 * written; the generic path runs it (and reports any error). */
bool nx_sim_fast(nx_sim *s, const nx_insn *in, const nx_sim_view *v);
/* The engines' fp32 ALU operators and activation functions (sim_engines.c). */
double nx_sim_alu(int op, double a, double b);
double nx_sim_act(int f, double v);

/* Executes the data effect of one instruction with the given loop indices.
 * Returns NX_OK or an input error in s->d. */
nx_status nx_sim_exec(nx_sim *s, const nx_insn *in, const int64_t *loop_idx, int depth);

/* Elements of a (with loop indices) in [partition][free] order, malloc'd. */
nx_status nx_sim_get(nx_sim *s, const nx_ap *a, const int64_t *li, int depth, double **out, uint64_t *n);
/* Stores n elements into a, rounding to its dtype. */
nx_status nx_sim_put(nx_sim *s, const nx_ap *a, const int64_t *li, int depth, const double *x, uint64_t n);

/* sim_gpsimd.c: the POOL `call` of a GpSimd kernel; *ns its estimated time.
 * nx_rt_gpsimd_count checks the sg00/gpsimd/ section names (-1: bad) and
 * counts them; nx_rt_gpsimd_load JIT-compiles them (NULL + err: rejected). */
nx_status nx_sim_gpsimd(nx_sim *s, const nx_insn *in, const int64_t *li, int depth, double *ns);
double nx_sim_gpsimd_ns(const nx_sim *s, const nx_insn *in); /* estimated time, data-independent */
int nx_rt_gpsimd_count(int nsec, const char *const *names, char *err, size_t errlen);
struct nx_gs_prog *nx_rt_gpsimd_load(int nsec, const char *const *names, const uint8_t *const *data,
                                     const size_t *sizes, char *err, size_t errlen);

/* sim_race.c: the happens-before race check (nx_rt_opts.check_races).
 * Threads: engines 0..4, DMA queue q = NX_ENG_COUNT + q. */
nx_race *nx_race_new(const nx_neff *n, const nx_target *t);
void nx_race_free(nx_race *r);
/* Engine eng halted: it accesses nothing more. */
void nx_race_done(nx_race *r, int eng);
/* A copy of what thread knows, for a signal applied later; its handle. */
int nx_race_snapshot(nx_race *r, int thread);
/* A signal with snapshot snap was applied: semaphore sem is now value_after. */
void nx_race_signal(nx_race *r, int sem, int64_t value_after, int snap);
/* Engine eng passed a wait for sem >= target. */
void nx_race_wait(nx_race *r, int eng, int sem, int64_t target);
/* Engine eng issues a transfer or collective to queue: the queue learns
 * what the engine knows and ticks. */
void nx_race_issue(nx_race *r, int eng, int queue);
/* Checks and records the accesses of in (issued by eng; queue >= 0: runs
 * on that DMA queue, after nx_race_issue). A race is an input error in s->d. */
nx_status nx_race_access(nx_race *r, nx_sim *s, int eng, int queue, const nx_insn *in, const int64_t *li,
                         int depth);

/* sim_cc.c: the ranks' meeting point. */
nx_cc_world *nx_cc_world_new(int nranks);
void nx_cc_world_free(nx_cc_world *w);
/* Marks rank r finished (failed: with an error), waking ranks waiting for it. */
void nx_cc_halt(nx_cc_world *w, int r, bool failed);
/* Whether rank r's error only reports another rank's failure. */
bool nx_cc_secondary(nx_cc_world *w, int r);
/* Executes a CC instruction: blocks until the group met, writes the result,
 * *end = latest arrival + ring cost. */
nx_status nx_sim_cc(nx_sim *s, const nx_insn *in, const int64_t *li, int depth, double arrive, double *end);

#endif
