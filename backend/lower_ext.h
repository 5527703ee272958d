/* backend/lower_ext.h — the op families lowered outside the core kernels
 * (lower_data.c: DMA data movement, pieces, kernels split into passes, batch
 * dot; lower_math.c: multi-instruction elementwise programs and the row
 * programs custom calls use; lower_custom.c: AwsNeuron custom calls).
 * lower.c calls nx_l_data before its own dispatch. */
#ifndef NX_LOWER_EXT_H
#define NX_LOWER_EXT_H

#include "backend/lower.h"

nx_status nx_l_dma_vv(nx_lower *L, const nx_lview *src, const nx_lview *dst, const nx_lsync *dwait,
                      nx_lsync *done);
/* nx_l_copy_view for views with a dimension beyond one DMA axis (2^24
 * elements): such dimensions become two axes (nx_l_dma_vv). */
nx_status nx_l_copy_view_split(nx_lower *L, const nx_lview *src, nx_lval *dst);

/* Elements [off, off + elems(s)) of v as a value of its own; its sync state
 * starts as v's and goes back to v with nx_l_piece_done. */
nx_lval *nx_l_piece(nx_lower *L, const nx_lval *v, int64_t off, const nx_shape *s);
void nx_l_piece_done(nx_lval *v, const nx_lval *p);
/* v broadcast (stride 0) to a fresh value of shape s when v has one element. */
nx_status nx_l_bcast_scalar(nx_lower *L, nx_lval *v, const nx_shape *s, nx_lval **res);

nx_status nx_l_dot_split(nx_lower *L, const nx_inst *i, nx_lval *const *ops, nx_lval *out);

/* *done false: not handled here, lower.c continues with its own kernels.
 * Which opcodes are lowered at all: backend/lower.def. */
nx_status nx_l_data(nx_lower *L, const nx_inst *i, nx_lval *const *ops, nx_lval *out, bool *done);
nx_status nx_l_math(nx_lower *L, const nx_inst *i, nx_lval *const *ops, nx_lval *out, bool *done);
nx_status nx_l_index(nx_lower *L, const nx_inst *i, nx_lval *const *ops, nx_lval *out, bool *done);

/* Row programs: values viewed as [O rows, R] (row-major), O over partitions
 * (P | O, T = O/P rows per partition). Slots 0..nin-1 are the inputs, slot
 * nin the output, then f32 scratch; a slot is a full tile [P, T*R] or, with
 * row = true, one value per row [P, T] (read as broadcast over R). */
#define NX_LP_MAXSLOT 12
#define NX_LP_MAXSTEP 24
typedef struct nx_lpstep {
	nx_engine e;     /* DVE or ACT */
	nx_isa_op op;    /* TENSOR_TENSOR, TENSOR_SCALAR, TENSOR_REDUCE, SELECT, TENSOR_COPY, ACTIVATE */
	int func;
	int dst, a, b, c; /* slots; -1 none */
	float imm;        /* tensor_scalar scalar, activate scale */
	uint16_t flags;
} nx_lpstep;
typedef struct nx_lprog {
	int nin, nscratch;
	bool row[NX_LP_MAXSLOT];
	int nsteps;
	nx_lpstep s[NX_LP_MAXSTEP];
} nx_lprog;
int nx_lp_add(nx_lprog *p, nx_engine e, nx_isa_op op, int func, int dst, int a, int b, float imm);
nx_status nx_l_rowprog(nx_lower *L, const nx_lprog *p, nx_lval *const *in, nx_lval *out, int64_t O, int64_t R);

/* lower_math.c: integer-typed elementwise ops on the exact integer ALU
 * operators (alu.def kind 'i'); with i->shape NULL (nx_lower_supports) the
 * opcodes only this path lowers (shifts). */
bool nx_l_int_map(const nx_inst *i, nx_isa_op *op, int *func, float *imm);

/* lower_gather.c: gather (row lookups) and dynamic-slice (one runtime start)
 * as indirect DMAs (dma_gather) */
nx_status nx_l_gather(nx_lower *L, const nx_inst *i, nx_lval *const *ops, nx_lval *out, bool *done);

/* kernels/scatter_add.c: a scatter-add of rows (embedding gradients,
 * repeated indices accumulating) as TensorE matmuls against one-hot tiles;
 * nx_l_scatter_pe_ok: its structure, SBUF fit, and its cost estimate below
 * the GpSimd kernel's (which takes the scatter otherwise). */
bool nx_l_scatter_pe_ok(const nx_lower *L, const nx_inst *i);
nx_status nx_l_scatter_pe(nx_lower *L, const nx_inst *i, nx_lval *const *ops, nx_lval *out);

/* kernels/colsum.c: an add-reduction over leading dims (column sums) as
 * TensorE matmuls against a ones column, without moving the reduced axis */
bool nx_l_colsum_ok(const nx_lower *L, const nx_inst *i);
nx_status nx_l_colsum(nx_lower *L, const nx_inst *i, nx_lval *const *ops, nx_lval *out);

/* lower_custom.c */
bool nx_l_custom_ok(const nx_inst *i);
nx_status nx_l_custom(nx_lower *L, const nx_inst *i, nx_lval *const *ops, nx_lval *out);

/* lower_rng.c: rng-bit-generator (Philox on the exact integer ALU) */
nx_status nx_l_rng(nx_lower *L, const nx_inst *i, nx_lval *const *ops, nx_lval **out);

#endif
