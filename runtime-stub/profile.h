/* runtime-stub/profile.h — what a simulated run did, instruction by
 * instruction: the data behind `nxcc run --profile` (a Chrome trace / Perfetto
 * JSON, or a summary JSON) and `--report` (compiler/report.c).
 *
 * The simulator hands every timed instruction to nx_prof_add (a NULL profile
 * ignores it); nx_prof_finish derives the summary, the per-kernel table and
 * the counter tracks. Kernels are the .neff's debug entries (one per node of
 * the fused HLO: a fusion or a single instruction). */
#ifndef NX_PROFILE_H
#define NX_PROFILE_H

#include "runtime-stub/rt.h"

/* One executed instruction. track: engine (0..NX_ENG_COUNT-1), or
 * NX_ENG_COUNT + DMA queue for transfers and collectives. */
typedef struct nx_prof_ev {
	double start, dur; /* ns */
	const nx_insn *in; /* into the .neff's stream */
	int track;
} nx_prof_ev;

/* Per kernel (debug id; the last entry collects instructions without one). */
typedef struct nx_prof_kernel {
	double first, last;   /* ns: first start, last end (first > last: never ran) */
	double busy_ns;       /* sum of its instructions' durations, engines and DMA queues */
	uint64_t insns;
	double flops;         /* TensorE 2*K*M*N plus one per element of vector/scalar arithmetic */
	uint64_t hbm_read, hbm_write;
	int64_t lo[2], hi[2]; /* SBUF, PSUM byte range touched within a partition */
	int plo[2], phi[2];   /* partitions touched */
} nx_prof_kernel;

/* A counter track: value v[i] from time t[i] (ns) on. */
typedef struct nx_prof_counter {
	const char *name;
	double *t, *v;
	size_t n;
} nx_prof_counter;

enum { NX_PROF_SBUF, NX_PROF_PSUM, NX_PROF_DMA_INFLIGHT, NX_PROF_NCOUNTERS };

typedef struct nx_rt_profile {
	const nx_neff *n;
	int ntracks;               /* NX_ENG_COUNT + DMA queues */
	nx_prof_ev *ev;            /* kept events, in execution order */
	size_t nev, cap;
	bool truncated;            /* more than NX_PROF_MAX_EVENTS: the rest only counted */
	double *track_busy;        /* ns per track, every instruction */
	nx_prof_kernel *k;         /* n->ndebug + 1 */
	double pe_flops;           /* matmul FLOPs */
	double pe_min_ns;          /* matmul FLOPs at the TensorE peak of their input type */
	double flops;              /* all arithmetic (see nx_prof_kernel.flops) */
	uint64_t hbm_read, hbm_write;
	uint64_t insns;
	/* nx_prof_finish: */
	double total_ns;
	double dma_active_ns;      /* time at least one DMA queue is busy */
	int64_t io_bytes;          /* inputs + outputs + constants: the least HBM traffic */
	double roofline_ns;        /* max(pe_min_ns, io_bytes / HBM bandwidth) */
	double mfu_percent;        /* pe_flops / (total time x TensorE bf16 peak) */
	nx_prof_counter counters[NX_PROF_NCOUNTERS];
	double peak[NX_PROF_NCOUNTERS];
} nx_rt_profile;

#define NX_PROF_MAX_EVENTS (1u << 22)

nx_rt_profile *nx_prof_new(const nx_neff *n);
void nx_prof_free(nx_rt_profile *p);
/* Records one instruction with the loop indices it ran with. */
void nx_prof_add(nx_rt_profile *p, int track, double start, double dur, const nx_insn *in, const int64_t *loop_idx,
                 int depth);
/* After the run: engine busy times from st (control instructions included),
 * the summary and the counter tracks. */
void nx_prof_finish(nx_rt_profile *p, const nx_rt_stats *st);

/* Percent of the run a track was busy. */
double nx_prof_busy_percent(const nx_rt_profile *p, int track);
/* Human-readable track name: "pe (TensorE)", "dma queue 3". */
const char *nx_prof_track_name(int track, char *buf, size_t n);
/* The kernel name of debug id k ("?" when unknown). */
const char *nx_prof_kernel_name(const nx_rt_profile *p, uint32_t k);

/* After a successful run (sim.c): finishes p, writes o->profile_path in
 * o->profile_format, and hands p to *o->profile_out or frees it. */
nx_status nx_rt_profile_output(nx_rt_profile *p, const nx_rt_stats *st, const nx_rt_opts *o, nx_diag *d);

/* Writes the Chrome trace-event JSON (opens in Perfetto and chrome://tracing). */
nx_status nx_prof_write_chrome(const nx_rt_profile *p, const char *path, nx_diag *d);
/* Writes the summary JSON (docs/profile.md lists the fields). */
nx_status nx_prof_write_summary(const nx_rt_profile *p, const char *path, nx_diag *d);

#endif
