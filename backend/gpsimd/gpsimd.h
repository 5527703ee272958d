/* backend/gpsimd/gpsimd.h — ops lowered to GpSimd kernels generated with
 * LLVM (docs/gpsimd.md). The lowering (backend/lower.c) calls
 * nx_gpsimd_lower before its own kernels; the driver registers the user's
 * custom operators with nx_gpsimd_set_custom_ops. */
#ifndef NX_GPSIMD_LOWER_H
#define NX_GPSIMD_LOWER_H

#include "backend/lower.h"

typedef enum nx_gs_kind {
	NX_GS_NONE = -1,
	NX_GS_MAP,        /* map: the body per element */
	NX_GS_REDUCE,     /* reduce over the minor dims with any reducer (variadic) */
	NX_GS_SORT,       /* sort along one dimension, 1..6 operands, stable merge sort */
	NX_GS_CUMULATIVE, /* reduce-window along one dimension (cumulative sums) */
	NX_GS_SCATTER,    /* scatter with any combiner, duplicate indices in order */
	NX_GS_SELSCAT,    /* select-and-scatter */
	NX_GS_CUSTOM,     /* custom-call of a user kernel */
	NX_GS_TOPK,       /* topk along the last dimension (stable, total order) */
} nx_gs_kind;

/* A user custom operator: custom_call_target NAME runs function NAME of
 * this LLVM bitcode (backend/target/gpsimd.h ABI). */
typedef struct nx_custom_op {
	const char *name;
	const uint8_t *bc;
	size_t len;
} nx_custom_op;

/* Registers the custom operators compiles in this process use (the array is
 * kept, not copied; NULL, 0 clears). */
void nx_gpsimd_set_custom_ops(const nx_custom_op *ops, int n);
const nx_custom_op *nx_gpsimd_custom_op(const char *name);

/* Whether some instruction with this opcode may go to GpSimd. */
bool nx_gpsimd_supports(nx_opcode op);
/* The family that lowers i on GpSimd, NX_GS_NONE when the fixed-function
 * engines do (or nothing does). */
nx_gs_kind nx_gpsimd_kind(const nx_lower *L, const nx_inst *i);

/* Lowers i as a GpSimd kernel when nx_gpsimd_kind says so (*done true),
 * else leaves it to the caller (*done false). */
nx_status nx_gpsimd_lower(nx_lower *L, const nx_inst *i, nx_lval *const *ops, nx_lval **out, bool *done);
/* The kernels lowered so far, for the .neff (sorted by name). */
void nx_gpsimd_program(const nx_lower *L, nx_neff_program *p);

/* The reference evaluator's host JIT (gs_host.c): elementwise clusters of
 * at least min_elems elements as LLVM kernels for this CPU, bit-identical
 * to the interpreter. compiler/ installs it as nx_eval_jit_hook. */
struct nx_eval_jit_ops;
const struct nx_eval_jit_ops *nx_gpsimd_eval_jit(int64_t min_elems);
/* Kernels compiled so far and the time spent compiling them. */
void nx_gpsimd_eval_jit_stats(int *kernels, double *compile_ms);

#endif
