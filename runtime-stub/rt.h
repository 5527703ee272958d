/* runtime-stub/rt.h — load, validate and simulate a .neff.
 *
 * The loader treats the file as untrusted: every size, offset, access
 * pattern, semaphore and loop is checked before anything runs, and the
 * simulator checks each access again with the actual loop indices.
 * Ownership: nx_rt_load* returns a nx_neff that nx_neff_free releases.
 * Collectives: nx_rt_run_ranks runs N ranks (one thread each, own HBM,
 * SBUF, PSUM) that meet at CC instructions (see sim_cc.c). */
#ifndef NX_RT_H
#define NX_RT_H

#include "backend/target/isa.h"
#include "backend/target/neff.h"
#include "backend/target/target.h"
#include "ir/ir.h"

typedef struct nx_rt_tensor {
	char *name;
	nx_dtype dtype;
	int rank;
	int64_t dims[NX_NEFF_MAX_RANK];
	int64_t hbm_offset, bytes;
	int alias_input;     /* outputs; -1 none */
	bool nonneg;         /* inputs: random test data must be >= 0 */
	const uint8_t *data; /* constants: points into the loaded file */
} nx_rt_tensor;

/* A replica-group table entry (def.json "replica_groups"): n groups, group
 * k = ids[start[k] .. start[k+1]), or n (source, target) pairs ids[2k..2k+1]. */
typedef struct nx_rt_rgroup {
	bool pairs;
	int n;
	int *start; /* groups only: n + 1 offsets */
	int32_t *ids;
} nx_rt_rgroup;

typedef struct nx_neff {
	uint8_t *file; /* the whole file, owned */
	size_t file_len;
	uint32_t version, n_cores, features;
	char target[17], compiler[33], module[129];
	uint8_t sha256[32], uuid[16];
	const nx_target *tgt;
	int64_t hbm_size, scratch_offset, scratch_size;
	int nsems;
	int ninputs, noutputs, nconsts;
	nx_rt_tensor *inputs, *outputs, *consts;
	nx_insn *stream[NX_ENG_COUNT];
	size_t nstream[NX_ENG_COUNT];
	int32_t *loop_match[NX_ENG_COUNT]; /* loop <-> endloop pc */
	uint64_t min_steps; /* instructions any run executes at least (static loop counts) */
	int ndebug;
	char **debug_names;
	nx_neff_src *debug_src; /* ndebug entries (strings owned), or NULL when the .neff has none */
	int nreplicas;         /* def.json "replicas" (the header's NeuronCore count) */
	int64_t rank_id_offset; /* where the rank id (u32) goes before a run; -1 none */
	int nrgroups;
	nx_rt_rgroup *rgroups; /* validated: ids < nreplicas, disjoint */
	int nsections;
	char **section_names; /* tar entries in file order */
	size_t *section_sizes;
	int ngpsimd;                /* sg00/gpsimd/ kernels, JIT-compiled at load */
	struct nx_gs_prog *gpsimd;  /* runtime-stub/gpsimd.h */
} nx_neff;

/* t NULL: the target named in the header. NULL + *d on any problem. */
nx_neff *nx_rt_load(const char *path, const nx_target *t, nx_diag *d);
nx_neff *nx_rt_load_bytes(const uint8_t *bytes, size_t len, const char *name,
                          const nx_target *t, nx_diag *d);
void nx_neff_free(nx_neff *n);

enum { NX_RT_PROFILE_CHROME, NX_RT_PROFILE_SUMMARY };

typedef struct nx_rt_opts {
	bool stochastic_rounding; /* NEURON_RT_STOCHASTIC_ROUNDING_EN=1 */
	uint64_t sr_seed;         /* NEURON_RT_STOCHASTIC_ROUNDING_SEED */
	uint64_t max_steps;       /* instruction budget (0: 1e9) against endless loops;
	                             a program whose min_steps exceed it is refused at once */
	bool timing_only;         /* time the instruction streams without data: no HBM,
	                           * SBUF or PSUM, inputs and outputs unused (may be NULL);
	                           * the same simulated time and statistics as a full run */
	bool generic_only;        /* NXCC_SIM_GENERIC=1: never the host-speed paths of
	                           * sim_fast.c (tests compare both; results are identical) */
	bool check_races;         /* nxcc run --check-races: report two accesses to the same
	                           * on-chip or HBM bytes, one a write, on different engines or
	                           * queues that do not wait for each other (sim_race.c) */
	const char *profile_path; /* Chrome trace JSON (or the summary, see profile_format), or NULL */
	int profile_format;       /* NX_RT_PROFILE_CHROME or NX_RT_PROFILE_SUMMARY */
	struct nx_rt_profile **profile_out; /* non-NULL: rank 0's profile (runtime-stub/profile.h)
	                                       for the caller, who frees it with nx_prof_free */
} nx_rt_opts;

/* Defaults, with the NEURON_RT_* environment variables applied. */
nx_rt_opts nx_rt_opts_default(void);

#define NX_RT_MAX_QUEUES 32 /* DMA queues a target may have */

typedef struct nx_rt_stats {
	double total_ns;
	double busy_ns[NX_ENG_COUNT];
	double port_wait_ns[NX_ENG_COUNT]; /* waiting for a shared SBUF/PSUM port (docs/targets.md) */
	uint64_t insns[NX_ENG_COUNT]; /* executed, loops unrolled */
	double dma_busy_ns;
	uint64_t dma_bytes;
	double cc_ns;         /* collectives: arrival to completion, summed */
	uint64_t cc_count, cc_bytes;
	uint64_t dma_count;   /* transfers (dma, dma_gather) */
	uint64_t dma_rows;    /* partition rows they moved (SBUF/PSUM side; HBM to HBM: source rows) */
	uint64_t hbm_read_bytes, hbm_write_bytes; /* DMA traffic from and to HBM */
	double queue_busy_ns[NX_RT_MAX_QUEUES];    /* per DMA queue: transfers and collectives */
	double pe_flops;      /* matmul: 2*K*M*N each */
	double pe_peak_ns;    /* those FLOPs at the TensorE peak of each one's moving dtype */
} nx_rt_stats;

/* inputs[i]: neff->inputs[i].bytes bytes; outputs[i]: room for
 * neff->outputs[i].bytes. */
nx_status nx_rt_run(const nx_neff *n, const void *const *inputs, void *const *outputs,
                    const nx_rt_opts *o, nx_rt_stats *st, nx_diag *d);

/* A full run of nranks ranks holds nranks simulated HBMs (touched where the
 * program writes) plus `extra` host bytes: an error naming the sizes when
 * that exceeds the host's memory (physical, or the cgroup's limit), so a
 * large program is refused instead of being killed by the OOM killer.
 * nx_rt_run_ranks checks it (extra 0) unless timing_only. */
nx_status nx_rt_check_host_memory(const nx_neff *n, int nranks, int64_t extra, nx_diag *d);

/* Runs nranks ranks, rank r the program n[r] (usually all the same .neff)
 * on inputs[r] into outputs[r], st[r] its statistics (st may be NULL). A
 * CC instruction blocks its rank until every member of its replica group
 * reached the same collective; it completes at the latest arrival plus the
 * ring cost (nx_target_cc_ns), so ranks synchronize in simulated time. A
 * rank that halts while others wait for it is a deadlock error. Only rank 0
 * writes o->profile_path. */
nx_status nx_rt_run_ranks(int nranks, const nx_neff *const *n, const void *const *const *inputs,
                          void *const *const *outputs, const nx_rt_opts *o, nx_rt_stats *st, nx_diag *d);

/* runtime-stub/sim_num.c: element conversions (round-to-nearest-even unless
 * u01 >= 0, then stochastic with that uniform [0,1) draw). */
double nx_rt_load_elem(const uint8_t *p, nx_dtype t);
void nx_rt_store_elem(uint8_t *p, nx_dtype t, double v, double u01);

#endif
