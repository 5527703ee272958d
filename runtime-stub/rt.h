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
	int ndebug;
	char **debug_names;
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

typedef struct nx_rt_opts {
	bool stochastic_rounding; /* NEURON_RT_STOCHASTIC_ROUNDING_EN=1 */
	uint64_t sr_seed;         /* NEURON_RT_STOCHASTIC_ROUNDING_SEED */
	const char *profile_path; /* Chrome trace JSON, or NULL */
	uint64_t max_steps;       /* instruction budget (0: 1e9) against endless loops */
} nx_rt_opts;

/* Defaults, with the NEURON_RT_* environment variables applied. */
nx_rt_opts nx_rt_opts_default(void);

typedef struct nx_rt_stats {
	double total_ns;
	double busy_ns[NX_ENG_COUNT];
	uint64_t insns[NX_ENG_COUNT]; /* executed, loops unrolled */
	double dma_busy_ns;
	uint64_t dma_bytes;
	double cc_ns;         /* collectives: arrival to completion, summed */
	uint64_t cc_count, cc_bytes;
} nx_rt_stats;

/* inputs[i]: neff->inputs[i].bytes bytes; outputs[i]: room for
 * neff->outputs[i].bytes. */
nx_status nx_rt_run(const nx_neff *n, const void *const *inputs, void *const *outputs,
                    const nx_rt_opts *o, nx_rt_stats *st, nx_diag *d);

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
