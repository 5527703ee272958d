/* backend/gpsimd/gs.h — GpSimd kernels generated with the LLVM C API
 * (internal to backend/gpsimd/; the lowering's entry points are in
 * backend/gpsimd/gpsimd.h).
 *
 *   gs_emit.c     elemental emitter: an HLO scalar computation (comparator,
 *                 combiner, map body, reducer) as inline LLVM IR; element
 *                 loads/stores in the device types (bf16 rounded as bf16)
 *   gs_kernels.c  kernel families over the row layout below: map, reduce,
 *                 sort, cumulative (reduce-window along rows), scatter,
 *                 select-and-scatter
 *   gs_module.c   module lifetime: verify, optimize (new pass manager), bitcode;
 *                 user bitcode (custom operators) renamed to its kernel name
 *   gs_lower.c    the lowering: data into SBUF, `call` on POOL, data back
 *
 * Row layout of a generated kernel: one writable u8 operand covering, per
 * partition, the kernel's slots one after another (64-byte aligned); slot k
 * holds T rows of R_k elements (T = the operand's shape[1], rows per
 * partition). The kernel loops over its partitions and rows. */
#ifndef NX_GS_H
#define NX_GS_H

#include "backend/gpsimd/gpsimd.h"
#include "backend/target/gpsimd.h"

#include "backend/target/llvm_api.h"

#define NX_GS_MAXSLOT 12

typedef struct nx_gs {
	LLVMContextRef ctx;
	LLVMModuleRef mod;
	LLVMBuilderRef b;
	LLVMValueRef fn;
	LLVMTypeRef i1, i8, i16, i32, i64, f32, ptr, vd;
	nx_diag *d;
	const nx_inst *inst; /* for messages */
	const char *err;     /* first unsupported construct, static text or arena */
	char errbuf[160];
} nx_gs;

/* A value in the emitter: LLVM value in its compute type (floats f32, bf16
 * kept as an f32 holding a bf16 value; integers iN; pred i1). */
typedef struct nx_gs_val {
	LLVMValueRef v;
	nx_type t;
} nx_gs_val;

/* gs_emit.c */
bool nx_gs_type_ok(nx_type t);
LLVMTypeRef nx_gs_ctype(nx_gs *g, nx_type t);
/* Emits computation c at the builder's position on args (one per
 * parameter), results in out[] (a tuple root gives several); returns the
 * number of results, -1 on an unsupported op (g->err says which). */
int nx_gs_comp(nx_gs *g, const nx_comp *c, const nx_gs_val *args, nx_gs_val *out, int maxout);
/* One elementwise instruction i on its operands' values x[] (the scalar
 * semantics of any shape: the caller iterates); -1 when unsupported. */
int nx_gs_inst(nx_gs *g, const nx_inst *i, nx_gs_val *o, const nx_gs_val *x);
nx_gs_val nx_gs_load(nx_gs *g, nx_type t, LLVMValueRef ptr);
void nx_gs_store(nx_gs *g, nx_gs_val v, LLVMValueRef ptr);
nx_gs_val nx_gs_convert(nx_gs *g, nx_gs_val v, nx_type to);
/* i64 key ordering v by the total order (floats) or by value (integers) */
LLVMValueRef nx_gs_order_key(nx_gs *g, nx_gs_val v);
/* Loop helpers over i64 counters kept in allocas (mem2reg promotes them). */
typedef struct nx_gs_loop {
	LLVMValueRef var;
	LLVMBasicBlockRef cond, body, end;
} nx_gs_loop;
nx_gs_loop nx_gs_for(nx_gs *g, LLVMValueRef lo, LLVMValueRef hi, const char *name);
LLVMValueRef nx_gs_idx(nx_gs *g, const nx_gs_loop *l);
void nx_gs_endfor(nx_gs *g, nx_gs_loop *l);
LLVMValueRef nx_gs_c64(nx_gs *g, int64_t v);
LLVMValueRef nx_gs_var(nx_gs *g, LLVMTypeRef t, const char *name); /* entry-block alloca */
int nx_gs_fail(nx_gs *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* gs_kernels.c: one kernel per family. A slot of the row layout. */
typedef struct nx_gs_slot {
	nx_type t;   /* HLO element type (stored as its device type) */
	int64_t R;   /* elements per row */
} nx_gs_slot;
typedef struct nx_gs_kspec {
	nx_gs_kind kind;
	const nx_inst *inst;
	int nslot;
	nx_gs_slot slot[NX_GS_MAXSLOT];
	int nin;      /* map/reduce/sort/cumulative: operands; slots after them are inits/outputs */
	/* reduce-window along the row (cumulative): window size, stride, low pad */
	int64_t win, wstride, wpad;
	bool largest; /* top-k */
	/* scatter over a part of the operand: rows [r0, r0 + n) of dim pdim of
	 * pfull (r0 in slot 3, s32); pdim -1: the whole operand */
	int pdim;
	int64_t pfull, r0; /* r0: not part of the kernel (the lowering writes it) */
} nx_gs_kspec;
/* Builds the kernel function `name` into g->mod. */
nx_status nx_gs_build(nx_gs *g, const nx_gs_kspec *k, const char *name);
/* Byte offset of slot s for T rows per partition (the same rule the kernel
 * computes at run time). */
int64_t nx_gs_slot_off(const nx_gs_kspec *k, int s, int64_t T);
int64_t nx_gs_region_bytes(const nx_gs_kspec *k, int64_t T);

/* gs_module.c */
nx_status nx_gs_begin(nx_gs *g, const char *name, nx_diag *d);
/* Verifies, optimizes (O2) and writes bitcode (malloc'd); frees the module. */
nx_status nx_gs_finish(nx_gs *g, uint8_t **bc, size_t *len);
/* User bitcode: entry function op->name checked and renamed to name. */
nx_status nx_gs_user_kernel(const nx_custom_op *op, const char *name, uint8_t **bc, size_t *len, nx_diag *d);
void nx_gs_abort(nx_gs *g);

#endif
