/* passes/fusion_decision.c — which producer may join which consumer's
 * kernel, per optimization level. The rules (docs/passes.md, "fusion"):
 *   O1: elementwise producer into elementwise consumer (kLoop) only.
 *   O2: also broadcast/reshape/transpose/slice/pad/concatenate/iota/... into
 *       any consumer, elementwise inputs into a reduction (kInput), a matmul
 *       into its epilogue (kOutput), layout ops into a matmul operand.
 *   O3: as O2; the order and the sibling merges follow estimated savings. */
#include "passes/fusion.h"

bool nx_fusion_is_matmul(const nx_inst *i)
{
	return i->op == NX_OP_DOT || i->op == NX_OP_CONVOLUTION || i->op == NX_OP_RAGGED_DOT ||
	       i->op == NX_OP_SCALED_DOT;
}

bool nx_fusion_is_reduction(const nx_inst *i)
{
	return i->op == NX_OP_REDUCE || i->op == NX_OP_REDUCE_WINDOW;
}

nx_opcode nx_fusion_reducer_op(const nx_inst *r)
{
	if (r->ncalled < 1 || !r->called[0]->root)
		return NX_OP_COUNT;
	return r->called[0]->root->op;
}

bool nx_fusion_fusible(const nx_inst *i)
{
	unsigned f = nx_opcode_flags(i->op);
	if (f & (NX_OPF_COLLECTIVE | NX_OPF_SIDE_EFFECT))
		return false;
	if (i->a.ncontrol_predecessors)
		return false;
	if (!nx_shape_is_array(i->shape) && i->op != NX_OP_CUSTOM_CALL)
		return false;
	/* s64[...] <-> u32[..., 2] (int64-split's parameters and outputs) is
	 * a view of the same bytes; other 64-bit integer ops were not expanded
	 * and are refused before lowering (passes/device_types.c), by their
	 * own name: neither is ever inside a kernel */
	if (i->shape->type == NX_S64 || i->shape->type == NX_U64)
		return false;
	for (int k = 0; k < i->noperands; k++)
		if (i->operands[k]->shape->type == NX_S64 || i->operands[k]->shape->type == NX_U64)
			return false;
	switch (i->op) {
	case NX_OP_PARAMETER:
	case NX_OP_CONSTANT:
	case NX_OP_TUPLE:
	case NX_OP_GET_TUPLE_ELEMENT:
	case NX_OP_WHILE:
	case NX_OP_CONDITIONAL:
	case NX_OP_CALL:
	case NX_OP_FUSION:
	case NX_OP_ASYNC_START:
	case NX_OP_ASYNC_UPDATE:
	case NX_OP_ASYNC_DONE:
	case NX_OP_COPY_START:
	case NX_OP_COPY_DONE:
	case NX_OP_AFTER_ALL:
	case NX_OP_ADD_DEPENDENCY:
	case NX_OP_OPT_BARRIER:
	case NX_OP_DOMAIN:
	case NX_OP_REPLICA_ID:
	case NX_OP_PARTITION_ID:
	case NX_OP_RNG_BIT_GENERATOR:
	case NX_OP_GET_DIMENSION_SIZE:
	case NX_OP_SET_DIMENSION_SIZE:
		return false;
	case NX_OP_CUSTOM_CALL:
		/* A custom call is a kernel of its own (kCustom) unless it has
		 * side effects or a tuple result. */
		return !i->a.custom_call_has_side_effect && nx_shape_is_array(i->shape);
	default:
		return true;
	}
}

bool nx_fusion_duplicable(const nx_inst *i, const nx_pass_ctx *ctx)
{
	if (!nx_shape_is_array(i->shape))
		return false;
	/* O1 copies only constants: broadcasts and iotas are kernels there. */
	if (ctx && ctx->opt_level <= 1 && i->op != NX_OP_CONSTANT)
		return false;
	switch (i->op) {
	case NX_OP_CONSTANT:
		/* Small constants are copied into the kernel; large ones are
		 * kernel inputs (one copy in HBM). */
		return nx_shape_elems(i->shape) <= 16;
	case NX_OP_IOTA:
		return true;
	case NX_OP_BROADCAST:
		/* A broadcast of a scalar reads one element: recomputing it in
		 * every consumer is free. */
		return i->operands[0]->shape->rank == 0 &&
		       (i->operands[0]->op == NX_OP_CONSTANT || i->operands[0]->op == NX_OP_PARAMETER ||
		        i->operands[0]->op == NX_OP_IOTA);
	default:
		return false;
	}
}

static bool is_layout_op(nx_opcode op)
{
	switch (op) {
	case NX_OP_BROADCAST:
	case NX_OP_RESHAPE:
	case NX_OP_BITCAST:
	case NX_OP_TRANSPOSE:
	case NX_OP_CONVERT:
	case NX_OP_COPY:
		return true;
	default:
		return false;
	}
}

/* Ops a loop kernel can compute element by element from indices: the
 * elementwise ops plus data movement that maps output to input indices. */
static bool is_loop_op(nx_opcode op)
{
	if (nx_opcode_flags(op) & NX_OPF_ELEMENTWISE)
		return true;
	switch (op) {
	case NX_OP_BROADCAST:
	case NX_OP_RESHAPE:
	case NX_OP_BITCAST:
	case NX_OP_TRANSPOSE:
	case NX_OP_SLICE:
	case NX_OP_DYNAMIC_SLICE:
	case NX_OP_PAD:
	case NX_OP_CONCATENATE:
	case NX_OP_REVERSE:
	case NX_OP_IOTA:
	case NX_OP_BITCAST_CONVERT:
		return true;
	default:
		return false;
	}
}

const char *nx_fusion_refusal(const nx_inst *p, const nx_inst *c, const nx_pass_ctx *ctx)
{
	if (nx_opcode_flags(p->op) & NX_OPF_COLLECTIVE)
		return "producer is a collective (communication stays outside kernels)";
	if (nx_opcode_flags(c->op) & NX_OPF_COLLECTIVE)
		return "consumer is a collective (communication stays outside kernels)";
	if (!nx_fusion_fusible(p))
		return "producer cannot be part of a kernel";
	if (!nx_fusion_fusible(c))
		return "consumer cannot be part of a kernel";
	if (p->op == NX_OP_CUSTOM_CALL || c->op == NX_OP_CUSTOM_CALL)
		return "custom call is a kernel of its own";
	int level = ctx ? ctx->opt_level : 2;
	bool pe = (nx_opcode_flags(p->op) & NX_OPF_ELEMENTWISE) != 0;
	bool ce = (nx_opcode_flags(c->op) & NX_OPF_ELEMENTWISE) != 0;
	if (level <= 1) {
		if (!pe)
			return "O1 fuses only elementwise producers";
		if (!ce)
			return "O1 fuses only into elementwise consumers";
		return NULL;
	}
	if (nx_fusion_is_reduction(p))
		return "a reduction ends its kernel (its result is not fused into consumers)";
	if (p->op == NX_OP_SORT || p->op == NX_OP_SCATTER || p->op == NX_OP_GATHER ||
	    p->op == NX_OP_DYNAMIC_UPDATE_SLICE || p->op == NX_OP_SELECT_AND_SCATTER ||
	    p->op == NX_OP_FFT || p->op == NX_OP_TRIANGULAR_SOLVE || p->op == NX_OP_CHOLESKY ||
	    p->op == NX_OP_TOPK || p->op == NX_OP_MAP || p->op == NX_OP_RNG ||
	    p->op == NX_OP_BATCH_NORM_TRAINING || p->op == NX_OP_BATCH_NORM_INFERENCE ||
	    p->op == NX_OP_BATCH_NORM_GRAD)
		return "producer needs a kernel of its own";
	if (c->op == NX_OP_SORT || c->op == NX_OP_SCATTER || c->op == NX_OP_SELECT_AND_SCATTER ||
	    c->op == NX_OP_FFT || c->op == NX_OP_TRIANGULAR_SOLVE || c->op == NX_OP_CHOLESKY ||
	    c->op == NX_OP_TOPK || c->op == NX_OP_MAP || c->op == NX_OP_RNG ||
	    c->op == NX_OP_BATCH_NORM_TRAINING || c->op == NX_OP_BATCH_NORM_INFERENCE ||
	    c->op == NX_OP_BATCH_NORM_GRAD)
		return "consumer needs a kernel of its own";
	if (nx_fusion_is_matmul(c)) {
		/* The matmul engine streams its operands: only index remapping and
		 * type conversion can be folded into the operand load. */
		if (!is_layout_op(p->op))
			return "only layout ops (broadcast/reshape/transpose/convert) fuse into a matmul operand";
		return NULL;
	}
	if (nx_fusion_is_matmul(p)) {
		/* Matmul epilogue: elementwise ops on the accumulator before it is
		 * written back. */
		if (!ce && !is_layout_op(c->op))
			return "matmul result fuses only into an elementwise/layout epilogue";
		return NULL;
	}
	if (c->op == NX_OP_GATHER || c->op == NX_OP_DYNAMIC_UPDATE_SLICE) {
		if (!is_layout_op(p->op))
			return "only layout ops fuse into a gather/dynamic-update-slice";
		return NULL;
	}
	if (!is_loop_op(p->op))
		return "producer is not a loop (index-mapped) op";
	if (!is_loop_op(c->op) && !nx_fusion_is_reduction(c))
		return "consumer is not a loop op or a reduction";
	return NULL;
}

/* ------------------------------------------------------------ row kernels */

bool nx_fusion_row_reduce(const nx_inst *i, int64_t *R, int64_t *C)
{
	if (i->op != NX_OP_REDUCE || i->noperands != 2 || !nx_shape_is_array(i->shape))
		return false;
	nx_opcode r = nx_fusion_reducer_op(i);
	if (r != NX_OP_ADD && r != NX_OP_MAXIMUM && r != NX_OP_MINIMUM && r != NX_OP_MULTIPLY)
		return false;
	if (i->operands[1]->op != NX_OP_CONSTANT || nx_shape_elems(i->operands[1]->shape) != 1)
		return false;
	const nx_shape *s = i->operands[0]->shape;
	int nd = i->a.dimensions.n, k = s->rank - nd;
	if (nd < 1 || k < 1)
		return false;
	for (int j = 0; j < nd; j++)
		if (i->a.dimensions.v[j] != k + j)
			return false;
	int64_t r0 = 1, c0 = 1;
	for (int j = 0; j < s->rank; j++)
		*(j < k ? &r0 : &c0) *= s->dims[j];
	*R = r0, *C = c0;
	return r0 >= 1 && c0 >= 2;
}

bool nx_fusion_bcast_run(const nx_inst *b, bool lead, int64_t *prod)
{
	const nx_shape *o = b->shape, *s = b->operands[0]->shape;
	int n = b->a.dimensions.n;
	if (n != s->rank)
		return false;
	int first = lead ? 0 : o->rank - n;
	int64_t p = 1;
	for (int j = 0; j < n; j++) {
		if (b->a.dimensions.v[j] != first + j || s->dims[j] != o->dims[first + j])
			return false;
		p *= s->dims[j];
	}
	*prod = p;
	return true;
}

static bool pe_float(nx_type t)
{
	return t == NX_F32 || t == NX_BF16 || t == NX_F16;
}

bool nx_fusion_col_sum(const nx_inst *i, int64_t R, int64_t C)
{
	if (i->op != NX_OP_REDUCE || i->noperands != 2 || !nx_shape_is_array(i->shape) ||
	    nx_fusion_reducer_op(i) != NX_OP_ADD || i->operands[1]->op != NX_OP_CONSTANT ||
	    !pe_float(i->shape->type) || !pe_float(i->operands[0]->shape->type) || R < 2 ||
	    nx_shape_elems(i->shape) != C || nx_shape_elems(i->operands[0]->shape) != R * C)
		return false;
	const nx_shape *s = i->operands[0]->shape;
	int nd = i->a.dimensions.n;
	if (nd < 1 || nd >= s->rank)
		return false;
	int64_t r = 1;
	for (int j = 0; j < nd; j++) {
		if (i->a.dimensions.v[j] != j)
			return false;
		r *= s->dims[j];
	}
	return r == R;
}

bool nx_fusion_row_member(const nx_inst *i, int64_t R, int64_t C)
{
	if (!nx_shape_is_array(i->shape))
		return false;
	int64_t e = nx_shape_elems(i->shape), x, y;
	if (i->op == NX_OP_CONSTANT)
		return e == 1;
	if (nx_fusion_col_sum(i, R, C))
		return true;
	/* a column converted before its broadcast along the rows (bf16 gamma) */
	if (i->op == NX_OP_CONVERT && e == C && nx_shape_elems(i->operands[0]->shape) == C)
		return true;
	if (e != R * C && e != R)
		return false;
	switch (i->op) {
	case NX_OP_REDUCE:
		return nx_fusion_row_reduce(i, &x, &y) && x == R && y == C;
	case NX_OP_BROADCAST: {
		int64_t oe = nx_shape_elems(i->operands[0]->shape);
		if (oe == 1)
			return true;
		if (e != R * C)
			return false;
		return (oe == R && nx_fusion_bcast_run(i, true, &x) && x == R) || (oe == C && nx_fusion_bcast_run(i, false, &x) && x == C);
	}
	case NX_OP_RESHAPE:
	case NX_OP_BITCAST:
	case NX_OP_COPY:
	case NX_OP_CONVERT:
		return true;
	default:
		return (nx_opcode_flags(i->op) & NX_OPF_ELEMENTWISE) && i->noperands <= 3 && i->op != NX_OP_COMPARE &&
		       i->shape->type != NX_PRED;
	}
}
