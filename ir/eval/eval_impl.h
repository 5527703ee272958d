/* ir/eval/eval_impl.h — internals shared by the evaluator core files
 * (eval.c, eval_lit.c, eval_elem.c, eval_data.c, eval_dot.c, eval_reduce.c,
 * eval_custom.c). Not part of the evaluator's public interface. */
#ifndef NX_EVAL_IMPL_H
#define NX_EVAL_IMPL_H

#include "ir/eval/eval.h"

#include <complex.h>
/* glibc defines CMPLX only for GCC >= 4.7; clang (which reports 4.2) has the
 * same builtin. */
#ifndef CMPLX
#define CMPLX(x, y) __builtin_complex((double)(x), (double)(y))
#endif

/* Elements processed per chunk by the elementwise kernels: small enough to
 * stay in L1/L2, large enough to amortize the per-chunk dispatch. */
#define NX_CHUNK 1024

/* Computation domain of an element type: narrow floats compute in f32 and
 * round on store, like XLA's evaluator. */
typedef enum nx_dom {
	NX_DOM_F32,
	NX_DOM_F64,
	NX_DOM_INT, /* int64 bit patterns; width and signedness from the type */
	NX_DOM_C,   /* double complex */
	NX_DOM_NONE,
} nx_dom;

nx_dom nx_dom_of(nx_type t);

/* Chunk loads and stores between literals and domain buffers. Loads convert
 * from any array type; stores round (floats RNE, ints wrap, pred != 0). */
void nx_load_f32(const nx_literal *l, int64_t at, int64_t n, float *dst);
void nx_load_f64(const nx_literal *l, int64_t at, int64_t n, double *dst);
void nx_load_i64(const nx_literal *l, int64_t at, int64_t n, int64_t *dst); /* u64 as bits */
void nx_load_c(const nx_literal *l, int64_t at, int64_t n, double complex *dst);
void nx_store_f32(nx_literal *l, int64_t at, int64_t n, const float *src);
void nx_store_f64(nx_literal *l, int64_t at, int64_t n, const double *src);
void nx_store_i64(nx_literal *l, int64_t at, int64_t n, const int64_t *src);
void nx_store_c(nx_literal *l, int64_t at, int64_t n, const double complex *src);

/* Rounds v to the float type t and back (RNE), for any float type. */
double nx_round_to_type(nx_type t, double v);
/* Sign-extends / masks a 64-bit pattern to the integer type t. */
int64_t nx_int_wrap(nx_type t, int64_t v);

/* dst[...] = src[...] over an n-D box: element strides may be negative or 0.
 * esz is the element size in bytes. */
void nx_copy_nd(void *dst, const int64_t *dst_st, const void *src, const int64_t *src_st,
                const int64_t *dims, int rank, int esz);

/* Deep copy of a literal into the evaluation (accounted). NULL on OOM. */
nx_literal *nx_eval_clone(nx_eval *ev, const nx_literal *l);
/* A scalar literal of type t in the evaluation arena (not accounted: tiny). */
nx_literal *nx_eval_scalar(nx_eval *ev, nx_type t);

/* Op families of the core. */
nx_status nx_eval_elementwise(nx_eval *ev, const nx_inst *i, nx_literal *const *ops, nx_literal **out);
nx_status nx_eval_convert(nx_eval *ev, const nx_inst *i, nx_literal *const *ops, nx_literal **out);
nx_status nx_eval_data_op(nx_eval *ev, const nx_inst *i, nx_literal *const *ops, nx_literal **out);
nx_status nx_eval_dot(nx_eval *ev, const nx_inst *i, nx_literal *const *ops, nx_literal **out);
nx_status nx_eval_reduce(nx_eval *ev, const nx_inst *i, nx_literal *const *ops, nx_literal **out);
nx_status nx_eval_custom_call(nx_eval *ev, const nx_inst *i, nx_literal *const *ops, nx_literal **out);
/* Converts src to a new literal of type t (same dims). */
nx_literal *nx_eval_convert_lit(nx_eval *ev, const nx_literal *src, nx_type t);

/* C = A·B for row-major f32 matrices, A: m×k, B: k×n, C: m×n (overwritten).
 * Each C element is accumulated in f32 in order k = 0..K-1 without FMA, so
 * the result equals the naive loop bit for bit. */
void nx_sgemm(int64_t m, int64_t n, int64_t k, const float *a, const float *b, float *c);

/* eval_jit.c: the plan of a computation's JIT clusters (nx_eval_jit_hook). */
typedef struct nx_jit_cl {
	void *kernel;
	int *members, nm; /* positions in evaluation order, the root last */
	int *leaves, nl;  /* positions of the values from outside */
} nx_jit_cl;
typedef struct nx_jit_plan {
	int *role; /* per position: NX_JIT_NONE, NX_JIT_MEMBER or the cluster it roots */
	nx_jit_cl *cl;
	int ncl;
} nx_jit_plan;
enum { NX_JIT_NONE = -1, NX_JIT_MEMBER = -2, NX_JIT_MAXM = 64 /* members of one cluster */ };
/* pos(ctx, i): the position of instruction i in c. uses[]: per position,
 * operand occurrences (+1 for the root). No hook: an empty plan. */
void nx_eval_jit_plan(const nx_comp *c, const int *uses, int (*pos)(const void *ctx, const nx_inst *i),
                      const void *ctx, nx_jit_plan *p);
void nx_eval_jit_plan_free(nx_jit_plan *p);
void nx_eval_jit_count(int64_t insts);

#endif
