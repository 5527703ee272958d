/* passes/device_types.c — the element types a NeuronCore computes in.
 * Not a pass (it changes nothing): the compile driver calls it after the
 * pipeline, before lowering, so a module that still holds f64 or complex
 * values is refused with the op, the type and the user's source, instead of
 * being computed silently in f32 (neuronx-cc refuses f64 the same way,
 * error NCC_EVRF004). `nxcc opt` and `nxcc eval` still take such modules.
 * Checked: the shapes (tuple leaves included) of every instruction of every
 * computation; the first offender in computation and instruction order is
 * reported, with the count of all. */
#include "passes/pass.h"

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

nx_status nx_check_device_types(const nx_module *m, nx_diag *d)
{
	const nx_inst *first = NULL;
	nx_type ft = NX_TYPE_INVALID;
	int count = 0;
	for (int c = 0; c < m->ncomps; c++)
		for (int k = 0; k < m->comps[c]->ninsts; k++) {
			const nx_inst *i = m->comps[c]->insts[k];
			nx_type t = bad_leaf(i->shape);
			if (t == NX_TYPE_INVALID)
				continue;
			if (!first || (first->line == 0 && i->line > 0)) {
				first = i;
				ft = t;
			}
			count++;
		}
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
	const char *hint = ft != NX_F64
		? "complex arithmetic is not lowered yet; keep real and imaginary parts as separate f32 tensors"
		: "compute in f32 (torch: .float(); JAX: leave jax_enable_x64 off), or convert to f32 before the value reaches the device";
	nx_diag_set(d, NX_ERR_INPUT, m->file, first->line, first->col,
	            "instruction '%s' (%s): %s is not supported on NeuronCore (type %s)%s%s; nxcc does not compute %s in a narrower type; hint: %s",
	            first->name, op, nx_type_name(ft), shape, from, more, nx_type_name(ft), hint);
	nx_diag_set_inst(d, first->name);
	return NX_ERR_INPUT;
}
