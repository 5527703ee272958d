/* passes/fusion.h — shared between the fusion pass files (fusion.c,
 * fusion_decision.c, fusion_patterns.c). Not a public interface. */
#ifndef NX_FUSION_H
#define NX_FUSION_H

#include "passes/pass.h"

/* NULL when producer may be fused into consumer's kernel at ctx->opt_level,
 * else a short reason (a string literal). Pairwise only: whole-kernel rules
 * (users outside the kernel, two matmuls in one kernel, cycles) live in
 * fusion.c and log their own reasons. */
const char *nx_fusion_refusal(const nx_inst *producer, const nx_inst *consumer,
                              const nx_pass_ctx *ctx);
/* May this instruction be part of a kernel at all? Parameters, constants,
 * tuples, get-tuple-element, collectives, control flow, side effects and
 * async/token plumbing stay outside. */
bool nx_fusion_fusible(const nx_inst *i);
/* Cheap enough to be copied into every kernel that reads it (scalar or small
 * constants, iota, broadcast of a scalar): never a reason to keep a kernel
 * boundary. */
bool nx_fusion_duplicable(const nx_inst *i, const nx_pass_ctx *ctx);
/* Contraction: dot, convolution, ragged/scaled dot. */
bool nx_fusion_is_matmul(const nx_inst *i);
/* reduce / reduce-window. */
bool nx_fusion_is_reduction(const nx_inst *i);
/* Opcode of the root of a reducer (to_apply), or NX_OP_COUNT. */
nx_opcode nx_fusion_reducer_op(const nx_inst *reduce);
/* Row kernels (backend/kernels/row_loop.c): a reduce (add/max/min/multiply,
 * constant init) over the trailing dims of its operand, R rows of C >= 2
 * elements. */
bool nx_fusion_row_reduce(const nx_inst *i, int64_t *R, int64_t *C);
/* A sum over the rows of R rows of C (the leading dims of its operand; f32,
 * bf16 or f16, constant init, C results: a bias gradient), which a row
 * kernel over R rows of C accumulates on PE. */
bool nx_fusion_col_sum(const nx_inst *i, int64_t R, int64_t C);
/* May i be part of a row kernel over R rows of C: reductions as above,
 * column sums, elementwise ops on rows (R*C elements) or per-row values
 * (R), converts, reshapes, broadcasts of a scalar, of a per-row value along
 * the trailing dims or of a column [C] (or its convert) along the leading
 * dims, scalar constants. */
bool nx_fusion_row_member(const nx_inst *i, int64_t R, int64_t C);
/* The budget of the row kernel: two buffer sets of one row (C elements of
 * 4 bytes) per row-sized value within half of a trn1 SBUF partition. */
#define NX_FUSION_ROW_SBUF_BYTES (96 * 1024)
/* A broadcast whose operand's dims are the output's leading (lead) or
 * trailing dims, in order; *prod: their element count. */
bool nx_fusion_bcast_run(const nx_inst *b, bool lead, int64_t *prod);

/* The graph view shared by the fusion files: the entry computation with
 * positions, users and the kernel (group) each instruction belongs to. */
typedef struct nx_fgraph {
	nx_comp *comp;
	int n;            /* instructions (positions 0..n-1) */
	nx_inst **insts;  /* = comp->insts at the start */
	int *uoff, *users; /* CSR users (by position) */
	int *group;       /* kernel id per position, -1 = none yet */
	int ngroups;
	const nx_pass_ctx *ctx;
} nx_fgraph;

static inline int nx_fpos(const nx_inst *i) { return (int)(intptr_t)i->aux; }

/* A recognised transformer pattern: the members (positions) form one kCustom
 * kernel named after the pattern. */
typedef struct nx_fpattern {
	const char *name; /* "softmax", "layer_norm", "gelu", "attention", ... */
	int *members;     /* positions in the nx_fgraph */
	int nmembers;
} nx_fpattern;

/* fusion_patterns.c: finds the --model-type transformer patterns among the
 * instructions not yet in a kernel. Returns the number found; *out is
 * malloc'd (members too). */
int nx_fusion_find_patterns(nx_fgraph *g, nx_fpattern **out);

/* fusion_recompute.c: values of one kernel that other kernels recompute
 * instead of reading them from HBM (cheap elementwise functions of what the
 * reader reads anyway), decided by bytes. into[p]: the kernels (group ids)
 * that recompute position p (a member of another kernel); extout[p]: a
 * member the recomputations read, so an output of its kernel. */
typedef struct nx_frecompute {
	int **into;
	int *ninto, *capinto;
	bool *extout;
	int n;
} nx_frecompute;

/* Decides on the grouping in g (skip[gi]: kCustom pattern kernels, neither
 * recomputed from nor into); fills r (allocated for g->n positions). */
void nx_fusion_recompute(const nx_fgraph *g, const bool *skip, nx_frecompute *r);
bool nx_frecompute_has(const nx_frecompute *r, int p, int gi);
/* Is member p an output of its kernel: the entry root, a leaf of a
 * recomputation, or read by something that does not recompute it? */
bool nx_frecompute_output(const nx_fgraph *g, const nx_frecompute *r, int p);
void nx_frecompute_free(nx_frecompute *r);

#endif
