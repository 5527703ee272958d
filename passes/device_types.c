/* passes/device_types.c — the element types a NeuronCore computes in.
 * Not a pass (it changes nothing): the compile driver calls it after the
 * pipeline, before lowering, so a module that still holds f64 or complex
 * values is refused with the op, the type and the user's source, instead of
 * being computed silently in f32 (neuronx-cc refuses f64 the same way,
 * error NCC_EVRF004). `nxcc opt` and `nxcc eval` still take such modules.
 * s64/u64 values may only be moved, never computed: int64-split expands
 * their arithmetic into 32-bit ops; what it left (a reduce or sort on s64,
 * a convert to bf16, a non-entry computation) is refused here, as is any
 * 64-bit value of an instruction other than an entry parameter, a constant,
 * a tuple, get-tuple-element, rng-bit-generator or a width-changing
 * bitcast-convert (s64[...] <-> u32[...,2]), and any such instruction
 * reading a 64-bit operand.
 * Checked: the shapes (tuple leaves included) of every instruction of every
 * computation; the first offender in computation and instruction order is
 * reported, with the count of all, preferring one whose result no other
 * offender reads (the op left unexpanded rather than what fed it). */
#include "passes/pass.h"

#include "ir/map.h"

#include <stdio.h>
#include <string.h>

static nx_type bad_leaf(const nx_shape *s)
{
	if (!s)
		return NX_TYPE_INVALID;
	if (s->type == NX_TUPLE) {
		for (int k = 0; k < s->ntuple; k++) {
			nx_type t = bad_leaf(s->tuple[k]);
			if (t != NX_TYPE_INVALID)
				return t;
		}
		return NX_TYPE_INVALID;
	}
	return s->type == NX_F64 || s->type == NX_C64 || s->type == NX_C128 ? s->type : NX_TYPE_INVALID;
}

static bool leaf64(const nx_shape *s)
{
	if (!s)
		return false;
	if (s->type == NX_TUPLE) {
		for (int k = 0; k < s->ntuple; k++)
			if (leaf64(s->tuple[k]))
				return true;
		return false;
	}
	return s->type == NX_S64 || s->type == NX_U64;
}

/* The 64-bit type i computes with, or NX_TYPE_INVALID when it only moves
 * 64-bit values (or has none). */
static nx_type bad64(const nx_comp *c, const nx_inst *i)
{
	bool mover = false;
	switch (i->op) {
	case NX_OP_PARAMETER: mover = c->is_entry; break;
	case NX_OP_CONSTANT: case NX_OP_TUPLE: case NX_OP_GET_TUPLE_ELEMENT: case NX_OP_RNG_BIT_GENERATOR:
		mover = true;
		break;
	case NX_OP_BITCAST_CONVERT:
		mover = i->noperands == 1 && nx_shape_is_array(i->shape) &&
		        nx_type_bits(i->shape->type) != nx_type_bits(i->operands[0]->shape->type);
		break;
	default: break;
	}
	if (mover)
		return NX_TYPE_INVALID;
	if (leaf64(i->shape))
		return nx_shape_is_array(i->shape) ? i->shape->type : NX_S64;
	for (int k = 0; k < i->noperands; k++)
		if (leaf64(i->operands[k]->shape))
			return nx_shape_is_array(i->operands[k]->shape) ? i->operands[k]->shape->type : NX_S64;
	return NX_TYPE_INVALID;
}

/* Which offender to name: one whose result no other offender reads, then
 * an op that computes (not a parameter, tuple or get-tuple-element, which
 * only pass a value on, nor a fusion, whose body holds the user's op), then
 * one with a source line. */
static int offender_rank(const nx_ptrmap *feeds, const nx_inst *i)
{
	bool holder = i->op == NX_OP_PARAMETER || i->op == NX_OP_TUPLE || i->op == NX_OP_GET_TUPLE_ELEMENT ||
	              i->op == NX_OP_FUSION;
	return (nx_ptrmap_get(feeds, i, 0) ? 0 : 4) + (holder ? 0 : 2) + (i->line > 0);
}

nx_status nx_check_device_types(const nx_module *m, nx_diag *d)
{
	const nx_inst *first = NULL;
	nx_type ft = NX_TYPE_INVALID;
	int count = 0;
	/* offenders that feed another offender: the op int64-split or
	 * complex-split could not expand is the last of such a chain (an s64
	 * all-reduce with an xor reducer, not the convert that made its
	 * operand; a c64 add of an entry parameter, not the complex that made
	 * its other operand) */
	nx_ptrmap feeds;
	nx_ptrmap_init(&feeds, 64);
	for (int cc = 0; cc < m->ncomps; cc++)
		for (int k = 0; k < m->comps[cc]->ninsts; k++) {
			const nx_inst *i = m->comps[cc]->insts[k];
			nx_type bl = bad_leaf(i->shape);
			if (bad64(m->comps[cc], i) != NX_TYPE_INVALID || bl == NX_C64 || bl == NX_C128)
				for (int o = 0; o < i->noperands; o++)
					nx_ptrmap_put(&feeds, i->operands[o], 1);
		}
	/* the entry first: its instruction is the user's op (a reduce rather
	 * than its reducer's parameter) */
	for (int cc = -1; cc < m->ncomps; cc++) {
		const nx_comp *comp = cc < 0 ? m->entry : m->comps[cc];
		if (!comp || (cc >= 0 && comp == m->entry))
			continue;
		for (int k = 0; k < comp->ninsts; k++) {
			const nx_inst *i = comp->insts[k];
			nx_type t = bad_leaf(i->shape);
			if (t == NX_TYPE_INVALID)
				t = bad64(comp, i);
			if (t == NX_TYPE_INVALID)
				continue;
			/* the first real op with a source line (a parameter only names
			 * where a value came from, a fusion only holds the op) */
			int rank = offender_rank(&feeds, i), frank = first ? offender_rank(&feeds, first) : -1;
			if (rank > frank) {
				first = i;
				ft = t;
			}
			count++;
		}
	}
	nx_ptrmap_free(&feeds);
	if (!first)
		return NX_OK;
	char shape[256], src[512], from[530] = "", more[64] = "";
	nx_shape_print(shape, sizeof shape, first->shape, false);
	if (nx_inst_source(m, first, src, sizeof src))
		snprintf(from, sizeof from, " [from %s]", src);
	if (count > 1)
		snprintf(more, sizeof more, " (and %d more instruction%s)", count - 1, count > 2 ? "s" : "");
	const char *op = first->op == NX_OP_CUSTOM_CALL && first->a.custom_call_target
	                     ? first->a.custom_call_target : nx_opcode_name(first->op);
	const char *hint = ft == NX_S64 || ft == NX_U64
		? "int64-split expands s64/u64 add, subtract, multiply, negate, abs, min/max, clamp, compare, bitwise ops, shifts, select, divide, remainder, add-reduce/reduce-window, arg-max/arg-min reduce (JAX's), all-reduce with an add/multiply/min/max/and/or reducer, converts to/from 32-bit integers, pred and f32, and data movement of the entry computation; compute this op in s32 (torch: .int(); JAX: leave jax_enable_x64 off)"
		: ft != NX_F64
		? "complex-split computes c64 values as pairs of f32 arrays (complex, real, imag, constants, converts, data movement, add, subtract, negate, multiply, divide, exp, sqrt, log, abs, dot, sums, compare EQ/NE), but not c64 parameters, outputs or tuple elements (loop state), c128 or other ops; pass and return real and imaginary parts as separate f32 tensors"
		: "compute in f32 (torch: .float(); JAX: leave jax_enable_x64 off), or convert to f32 before the value reaches the device";
	bool i64 = ft == NX_S64 || ft == NX_U64;
	nx_diag_set(d, NX_ERR_INPUT, m->file, first->line, first->col,
	            "instruction '%s' (%s): %s%s is not supported on NeuronCore (type %s)%s%s; nxcc does not compute %s in a narrower type; hint: %s",
	            first->name, op, nx_type_name(ft), i64 ? " arithmetic in this op" : "", shape, from, more,
	            nx_type_name(ft), hint);
	nx_diag_set_inst(d, first->name);
	return NX_ERR_INPUT;
}
