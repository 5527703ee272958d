/* ir/eval/eval.h — the reference evaluator: executes a module on host literals,
 * op by op, in the module's own types. It is the oracle for every other test.
 *
 * Values are nx_literal objects. Literals produced during an evaluation live
 * in the evaluation's arena (nx_eval.arena) and die with nx_eval_free; the
 * results handed back to the caller are copied into the caller's arena. */
#ifndef NX_EVAL_H
#define NX_EVAL_H

#include "ir/ir.h"

typedef struct nx_eval nx_eval;
typedef struct nx_eval_group nx_eval_group; /* shared by the replicas of one run */

/* Where a NaN or Inf was born (nx_eval_opts.trace). An instruction is the
 * origin when its result holds a NaN while no operand does, or an Inf while
 * every operand is finite; constants are not reported (-inf masks and
 * reduction inits are intentional), entry parameters are (bad inputs). The
 * first origin in evaluation order wins (lowest replica on ties). */
typedef struct nx_eval_trace {
	bool found;          /* an origin was seen; the fields below are set */
	int replica;          /* the replica it was seen on */
	const nx_inst *inst;  /* the origin */
	const nx_comp *comp;  /* the computation holding inst */
	char report[4096];    /* human-readable: opcode, name, operand and result ranges */
} nx_eval_trace;

typedef struct nx_eval_opts {
	int replicas;           /* number of replicas evaluated in lockstep; 0 = 1 */
	int64_t max_memory;     /* bytes; 0 = default (a fraction of RAM) */
	uint64_t rng_seed;      /* for rng ops without explicit state */
	nx_eval_trace *trace;   /* non-NULL: find the first non-finite origin (slower) */
} nx_eval_opts;

struct nx_eval {
	nx_arena arena;          /* owns intermediate literals */
	const nx_module *module;
	int replica;             /* this replica's id, 0-based */
	int nreplicas;
	nx_eval_group *group;    /* NULL when nreplicas == 1 */
	nx_diag *diag;           /* where errors go */
	int64_t bytes_live;      /* accounting for max_memory */
	int64_t max_memory;
	uint64_t rng_seed;       /* nx_eval_opts.rng_seed */
	uint64_t rng_counter;    /* elements drawn by rng ops so far */
	uint64_t rng_state[2];   /* rng-get-and-update-state's 128-bit state (lo, hi) */
};

/* Evaluates the entry computation of m for every replica. args[r][k] is
 * parameter k of replica r (nargs per replica). On success *outs[r] is the
 * root's literal of replica r, allocated in out_arena. */
nx_status nx_eval_module(const nx_module *m, const nx_eval_opts *o, int nargs,
                         nx_literal *const *const *args, nx_arena *out_arena,
                         nx_literal **outs, nx_diag *d);

/* Calls computation c on args inside an evaluation (used by reduce, map,
 * scatter, sort comparators, while, conditional, call, fusion...). */
nx_status nx_eval_call(nx_eval *ev, const nx_comp *c, nx_literal *const *args, int nargs,
                       nx_literal **out);

/* A literal of the given shape in the evaluation arena, zero-filled. Fails
 * (returns NULL, sets ev->diag) when max_memory would be exceeded. */
nx_literal *nx_eval_alloc(nx_eval *ev, nx_shape *shape);
/* An error about instruction i: "instruction 'name': msg". Returns NX_ERR_INPUT. */
nx_status nx_eval_error(nx_eval *ev, const nx_inst *i, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Generic element access (slow path for complex ops; hot loops use typed
 * pointers). Index is the row-major linear index. Setters round to the
 * literal's type: floats round-to-nearest-even (bf16, f16, f8 included),
 * integers wrap, pred stores value != 0. */
double nx_lit_get_f64(const nx_literal *l, int64_t idx);
int64_t nx_lit_get_i64(const nx_literal *l, int64_t idx);   /* signed and unsigned < 2^63 */
uint64_t nx_lit_get_u64(const nx_literal *l, int64_t idx);
void nx_lit_get_c128(const nx_literal *l, int64_t idx, double *re, double *im);
void nx_lit_set_f64(nx_literal *l, int64_t idx, double v);
void nx_lit_set_i64(nx_literal *l, int64_t idx, int64_t v);
void nx_lit_set_u64(nx_literal *l, int64_t idx, uint64_t v);
void nx_lit_set_c128(nx_literal *l, int64_t idx, double re, double im);
/* Copies element src[si] to dst[di]; both literals of the same element type. */
void nx_lit_copy_elem(nx_literal *dst, int64_t di, const nx_literal *src, int64_t si);

/* Row-major strides (in elements) of a shape's dims. */
void nx_strides(const nx_shape *s, int64_t *st);

/* Scalar float conversions with round-to-nearest-even. */
float nx_bf16_to_f32(uint16_t b);
uint16_t nx_f32_to_bf16(float f);
float nx_f16_to_f32(uint16_t h);
uint16_t nx_f32_to_f16(float f);
double nx_f8_to_f64(nx_type t, uint8_t v);
uint8_t nx_f64_to_f8(nx_type t, double v);

/* Collectives: every replica of the group deposits its value under the same
 * (per-instruction) key and waits until all have; *all then holds one literal
 * per replica (index = replica id), valid until the next exchange. */
nx_status nx_eval_exchange(nx_eval *ev, const nx_inst *i, nx_literal *mine, nx_literal ***all);

/* Per-op implementations outside eval.c (one family per file). Each computes
 * instruction i from its operand values ops[] into *out. */
typedef nx_status (*nx_eval_op_fn)(nx_eval *ev, const nx_inst *i, nx_literal *const *ops,
                                   nx_literal **out);
nx_status nx_eval_convolution(nx_eval *, const nx_inst *, nx_literal *const *, nx_literal **);
nx_status nx_eval_reduce_window(nx_eval *, const nx_inst *, nx_literal *const *, nx_literal **);
nx_status nx_eval_select_and_scatter(nx_eval *, const nx_inst *, nx_literal *const *, nx_literal **);
nx_status nx_eval_gather(nx_eval *, const nx_inst *, nx_literal *const *, nx_literal **);
nx_status nx_eval_scatter(nx_eval *, const nx_inst *, nx_literal *const *, nx_literal **);
nx_status nx_eval_sort(nx_eval *, const nx_inst *, nx_literal *const *, nx_literal **);
nx_status nx_eval_topk(nx_eval *, const nx_inst *, nx_literal *const *, nx_literal **);
nx_status nx_eval_fft(nx_eval *, const nx_inst *, nx_literal *const *, nx_literal **);
nx_status nx_eval_batch_norm(nx_eval *, const nx_inst *, nx_literal *const *, nx_literal **);
nx_status nx_eval_rng_bit_generator(nx_eval *, const nx_inst *, nx_literal *const *, nx_literal **);
nx_status nx_eval_rng(nx_eval *, const nx_inst *, nx_literal *const *, nx_literal **);
nx_status nx_eval_rng_get_and_update_state(nx_eval *, const nx_inst *, nx_literal *const *, nx_literal **);
nx_status nx_eval_collective(nx_eval *, const nx_inst *, nx_literal *const *, nx_literal **);

/* Custom-call targets outside the built-in ones (user GpSimd kernels, set by
 * the compiler: compiler/custom_op.c). *handled false: not one of its. */
typedef nx_status (*nx_eval_custom_fn)(nx_eval *ev, const nx_inst *i, nx_literal *const *ops, nx_literal **out,
                                       bool *handled);
extern nx_eval_custom_fn nx_eval_custom_hook;
/* A custom call the evaluator computes as the identity (one device):
 * AwsNeuronTransferWithStaticRing, Sharding, SPMDFullToShardShape,
 * SPMDShardToFullShape, xla.sdy.* (ir/eval/eval_custom.c). */
bool nx_eval_custom_is_identity(const nx_inst *i);

/* Host JIT of elementwise clusters (docs/gpsimd.md, "The JIT in the
 * evaluator"). When a hook is installed (compiler/ installs the GpSimd
 * emitter's: backend/gpsimd/gs_host.c), each computation is planned once:
 * an elementwise instruction whose result has at least min_elems elements
 * roots a cluster that absorbs, recursively, its operands that the hook
 * accepts as members, whose every use is by a member, and that have the
 * root's element count (broadcast, reshape and friends included; a
 * broadcast's operand stays a leaf). The cluster is computed in one pass at the root's turn; its members
 * are not materialized. Kernels must reproduce the interpreter bit for bit. */
typedef struct nx_eval_cluster {
	const nx_inst *const *insts;  /* members in evaluation order; the last is the root */
	int ninsts;
	const nx_inst *const *leaves; /* values from outside, in order of first use */
	int nleaves;
	int64_t n;                    /* elements of the root */
} nx_eval_cluster;

typedef struct nx_eval_jit_ops {
	int64_t min_elems;                          /* smaller roots are interpreted */
	bool (*member)(const nx_inst *i);           /* i may be part of a cluster */
	void *(*compile)(const nx_eval_cluster *c); /* NULL: interpret the members */
	/* out = the root over elements [0, n); leaves[k]: the data of leaf k.
	 * NULL: the members are interpreted at the root's turn (tests the plan) */
	void (*run)(void *kernel, void *out, const void *const *leaves, int64_t n);
} nx_eval_jit_ops;
extern const nx_eval_jit_ops *nx_eval_jit_hook;
/* Clusters run and instructions they covered, since the process started. */
void nx_eval_jit_stats(int64_t *clusters, int64_t *insts);

#endif
