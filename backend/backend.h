/* backend/backend.h — lowering a verified HLO module onto a NeuronCore and
 * writing the .neff (the entry point the compiler driver uses). */
#ifndef NX_BACKEND_H
#define NX_BACKEND_H

#include "backend/target/isa.h"
#include "backend/target/target.h"
#include "ir/ir.h"

/* What nx_lower_module prints into nx_lower_stats.dump_text
 * (`nxcc compile --dump-lower=plan|memory|streams`, docs/lowering.md). */
enum { NX_DUMP_PLAN = 1, NX_DUMP_MEMORY = 2, NX_DUMP_STREAMS = 4 };

typedef struct nx_lower_stats {
	unsigned dump;                /* in: NX_DUMP_* wanted */
	int opt_level;                /* in: -O level; 3 = cost-model search per kernel (O3),
	                                 anything else the -O2 plans */
	char *dump_text;              /* out: malloc'd text of the dumps asked for (caller frees), NULL none */
	/* seconds per lowering stage: HBM plan check, kernels (plan, memory,
	 * schedule and emit interleave per kernel), checks and dead stores,
	 * encoding the .neff */
	double t_memory, t_emit, t_check, t_encode;
	size_t insns[NX_ENG_COUNT]; /* static instructions per engine stream */
	int kernels;
	int fusions;                  /* fusion instructions in the entry computation handed to the
	                                 backend (the clusters of --dump-format=dot) */
	int64_t hbm_bytes, sbuf_peak; /* program HBM, SBUF bytes per partition at peak */
	int64_t hbm_lower_bound;      /* the HBM plan's bound checked before emitting (lower.c) */
	double flops;                 /* 2*M*N*K over all dots */
	int64_t io_bytes;             /* inputs + outputs + constants: minimal HBM traffic */
} nx_lower_stats;

/* Lowers m (verified, after passes) for target t into .neff bytes (*neff
 * malloc'd). An op the backend cannot lower is NX_ERR_INPUT naming the
 * instruction and the op. st may be NULL. input_nonneg (NULL = none) marks
 * entry parameters whose random test data must be non-negative
 * (nx_random_domains of the original module), recorded in def.json so that
 * `nxcc run --random-inputs` draws the data `nxcc eval` draws. */
nx_status nx_lower_module(const nx_module *m, const nx_target *t, const bool *input_nonneg,
                          uint8_t **neff, size_t *len, nx_lower_stats *st, nx_diag *d);

/* Ranks a module runs on: its replica_count, else one more than the largest
 * replica id its replica groups or source_target_pairs name (at most 1024). */
int nx_lower_replicas(const nx_module *m);

/* Whether the backend lowers op (custom calls: see nx_lower_custom_call_ok). */
bool nx_lower_supports(nx_opcode op);
/* Custom-call targets the backend lowers, NULL-terminated. */
extern const char *const nx_lower_custom_calls[];

/* Device element type carrying HLO type t (s64 as s32, pred as u8...);
 * -1 when none. */
int nx_lower_dtype(nx_type t);

/* Converts an array literal to device bytes (elements x device size) at out;
 * *dtype gets the device type. false when a value does not fit it (s64
 * outside the 32-bit range) or the type has no device type. */
bool nx_lower_literal_bytes(const nx_literal *l, uint8_t *out, int *dtype);

#endif
