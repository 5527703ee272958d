/* ir/verify/shape_infer_int.h — helpers shared by the shape inference files. */
#ifndef NX_SHAPE_INFER_INT_H
#define NX_SHAPE_INFER_INT_H

#include "ir/verify/shape_infer.h"

typedef struct si_ctx {
	nx_arena *a;
	const nx_inst *i;
	nx_diag *d;
} si_ctx;

/* Fills the diag with "instruction 'name': msg"; returns NULL. */
nx_shape *si_fail(const si_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Shape text for messages. */
const char *si_str(const si_ctx *c, const nx_shape *s);
/* A fresh array shape with static dims (rank entries zeroed). */
nx_shape *si_array(const si_ctx *c, nx_type t, int rank);
/* Sets dimension k of s to size, marking it dynamic as dyn says. */
void si_set_dim(const si_ctx *c, nx_shape *s, int k, int64_t size, uint8_t dyn);
uint8_t si_dyn(const nx_shape *s, int k);
/* Operand k as an array; NULL + diag when it is a tuple/token. */
const nx_shape *si_array_operand(const si_ctx *c, int k);
/* The operand count must be exactly n / at least n. */
bool si_nops(const si_ctx *c, int n);
bool si_min_ops(const si_ctx *c, int n);
/* Declared shape copy (the answer for ops whose shape is an attribute). */
nx_shape *si_declared(const si_ctx *c);
bool si_same_dims(const nx_shape *x, const nx_shape *y);
bool si_is_scalar(const nx_shape *s);
/* Checks the called computation at position k exists; NULL + diag if not. */
const nx_comp *si_called(const si_ctx *c, int k, const char *role);
/* Checks comp has nparams parameters, each a scalar/array compatible with
 * params[p] (NULL = don't care); role names the computation in messages. */
bool si_check_params(const si_ctx *c, const nx_comp *comp, const char *role, int nparams,
                     nx_shape *const *params);
/* The reducer of reduce/reduce-window/scatter/all-reduce...: n accumulators
 * of types acc[] (scalars): takes 2n scalars, returns n scalars (tuple when
 * n > 1). input[] are the element types of the values fed in (may be NULL). */
bool si_check_reducer(const si_ctx *c, const nx_comp *comp, const char *role, int n,
                      const nx_type *acc, const nx_type *input);
/* Window output size for one dimension; -1 + diag on bad window. */
int64_t si_window_dim(const si_ctx *c, int64_t in, const nx_window_dim *w, int k);
bool si_dims_unique_in_range(const si_ctx *c, nx_ivec v, int rank, const char *what);

/* Per-family inference, by opcode. */
nx_shape *si_infer_basic(const si_ctx *c);   /* shape_infer.c */
nx_shape *si_infer_ops(const si_ctx *c);     /* shape_infer_ops.c */
nx_shape *si_infer_coll(const si_ctx *c);    /* shape_infer_coll.c */
bool si_is_basic(nx_opcode op);
bool si_is_coll(nx_opcode op);

#endif
