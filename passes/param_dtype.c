/* passes/param_dtype.c — --param-dtype bf16: the training state lives in the
 * narrow type, as torch-xla stores it under XLA_USE_BF16 / XLA_DOWNCAST_BF16
 * (docs/numerics.md, "Training on the simulator").
 *
 * Every f32 array parameter of the entry computation that an output aliases
 * (input_output_alias with a top-level output index and no parameter index:
 * weights, optimizer state) becomes ctx->param_type; its users read
 * convert(p) -> f32. The aliased output becomes convert(value) -> the narrow
 * type, so an update computed in f32 is rounded once, where it is stored
 * (round-to-nearest-even in the evaluator; stochastic on the simulator with
 * NEURON_RT_STOCHASTIC_ROUNDING_EN=1). Parameters no output aliases (data,
 * hyper-parameters) and the other outputs keep their types. An alias whose
 * parameter and output differ in type or dimensions is left alone. */
#include "passes/pass.h"

#include <stdlib.h>
#include <string.h>

/* The entry's instruction for output oi of the alias, or NULL. */
static nx_inst **output_slot(nx_comp *c, const nx_alias *al)
{
	if (c->root->op == NX_OP_TUPLE && al->output_index.n == 1 && al->output_index.v[0] >= 0 &&
	    al->output_index.v[0] < c->root->noperands)
		return &c->root->operands[al->output_index.v[0]];
	if (!nx_shape_is_tuple(c->root->shape) && al->output_index.n == 0)
		return &c->root;
	return NULL;
}

static nx_inst *convert(nx_module *m, nx_comp *c, nx_inst *x, nx_type t, const char *suffix)
{
	nx_inst *i = nx_inst_new(c, NX_OP_CONVERT, nx_shape_with_type(&m->arena, x->shape, t), &x, 1, x->name);
	i->name = nx_arena_printf(&m->arena, "%s.%s", x->name, suffix);
	return i;
}

nx_status nx_pass_param_dtype(nx_module *m, const nx_pass_ctx *ctx, bool *changed)
{
	nx_type t = ctx->param_type;
	if (t == NX_TYPE_INVALID || t == NX_F32 || !m->entry || !m->entry->root)
		return NX_OK;
	nx_comp *c = m->entry;
	/* the root tuple's operands are rewritten below: give it its own copy */
	if (c->root->op == NX_OP_TUPLE && c->root->noperands)
		c->root->operands = nx_arena_dup(&m->arena, c->root->operands,
		                                 sizeof(nx_inst *) * (size_t)c->root->noperands);
	int n0 = c->ninsts, nnew = 0;
	nx_inst **widen = calloc((size_t)c->nparams + 1, sizeof *widen); /* convert(p) -> f32 */
	nx_inst **narrow = calloc((size_t)m->naliases + 1, sizeof *narrow); /* convert(out) -> t */
	for (int a = 0; a < m->naliases; a++) {
		const nx_alias *al = &m->aliases[a];
		if (al->param_index.n || al->param_number < 0 || al->param_number >= c->nparams)
			continue;
		nx_inst *p = c->params[al->param_number];
		nx_inst **slot = output_slot(c, al);
		if (!p || !slot || !nx_shape_is_array(p->shape) || p->shape->type != NX_F32 ||
		    !nx_shape_compatible(p->shape, (*slot)->shape))
			continue;
		if (!widen[al->param_number]) {
			nx_shape *wide = p->shape;
			p->shape = nx_shape_with_type(&m->arena, wide, t);
			nx_inst *w = convert(m, c, p, NX_F32, "wide");
			w->shape = wide;
			nx_comp_replace_uses(c, p, w);
			w->operands[0] = p;
			widen[al->param_number] = w;
			nnew++;
			nx_pass_log(ctx, 2, "param-dtype: parameter %s stored as %s", p->name, nx_type_name(t));
		}
		slot = output_slot(c, al); /* replace_uses may have moved the root */
		narrow[a] = convert(m, c, *slot, t, "narrow");
		*slot = narrow[a];
		nnew++;
	}
	if (nnew) {
		/* parameters' widening converts first, then the old body, then the
		 * narrowing converts, then the root tuple (which reads them) */
		nx_inst **order = nx_arena_alloc(&m->arena, sizeof(nx_inst *) * (size_t)(n0 + nnew + 1));
		int k = 0;
		for (int i = 0; i < n0; i++)
			if (c->insts[i]->op == NX_OP_PARAMETER)
				order[k++] = c->insts[i];
		for (int i = 0; i < c->nparams; i++)
			if (widen[i])
				order[k++] = widen[i];
		for (int i = 0; i < n0; i++)
			if (c->insts[i]->op != NX_OP_PARAMETER && c->insts[i] != c->root)
				order[k++] = c->insts[i];
		for (int a = 0; a < m->naliases; a++)
			if (narrow[a] && narrow[a] != c->root)
				order[k++] = narrow[a];
		order[k++] = c->root; /* the old root tuple, or the new array root */
		NX_ASSERT(k == n0 + nnew);
		c->insts = order;
		c->ninsts = k;
		c->cap = k + 1;
		/* the root tuple's shape follows its operands */
		if (c->root->op == NX_OP_TUPLE) {
			nx_shape **el = nx_arena_alloc(&m->arena, sizeof(nx_shape *) * (size_t)(c->root->noperands + 1));
			for (int i = 0; i < c->root->noperands; i++)
				el[i] = c->root->operands[i]->shape;
			c->root->shape = nx_shape_tuple(&m->arena, c->root->noperands, el);
		}
		/* entry_computation_layout, when given, names the new types too */
		if (m->entry_layout && m->entry_layout->ntuple == m->entry_layout_nparams + 1 &&
		    m->entry_layout_nparams == c->nparams) {
			nx_shape **el = nx_arena_alloc(&m->arena, sizeof(nx_shape *) * (size_t)(c->nparams + 2));
			for (int i = 0; i < c->nparams; i++)
				el[i] = widen[i] ? nx_shape_with_type(&m->arena, m->entry_layout->tuple[i], t)
				                 : m->entry_layout->tuple[i];
			nx_shape *res = m->entry_layout->tuple[c->nparams];
			if (nx_shape_is_tuple(res) && c->root->op == NX_OP_TUPLE && res->ntuple == c->root->noperands) {
				nx_shape **re = nx_arena_alloc(&m->arena, sizeof(nx_shape *) * (size_t)(res->ntuple + 1));
				for (int i = 0; i < res->ntuple; i++)
					re[i] = nx_shape_with_type(&m->arena, res->tuple[i], c->root->operands[i]->shape->type);
				res = nx_shape_tuple(&m->arena, res->ntuple, re);
			} else if (!nx_shape_is_tuple(res)) {
				res = nx_shape_with_type(&m->arena, res, c->root->shape->type);
			}
			el[c->nparams] = res;
			m->entry_layout = nx_shape_tuple(&m->arena, c->nparams + 1, el);
		}
		*changed = true;
	}
	free(widen);
	free(narrow);
	return NX_OK;
}
