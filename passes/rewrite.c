/* passes/rewrite.c — the local-rewrite driver and builders (see rewrite.h). */
#include "passes/rewrite.h"

#include "ir/eval/eval.h"

#include <stdlib.h>
#include <string.h>

const char *nx_rw_unique_name(nx_rw *rw, const char *base)
{
	return nx_fresh_name(rw->names, &rw->m->arena, base, -1, &rw->m->next_id, true);
}

nx_arena *nx_rw_arena(nx_rw *rw) { return &rw->m->arena; }

/* ------------------------------------------------------------- driver */

static void push(nx_rw *rw, nx_inst *in)
{
	if (rw->nout == rw->cap) {
		rw->cap = rw->cap ? 2 * rw->cap : 64;
		rw->out = realloc(rw->out, sizeof(nx_inst *) * (size_t)rw->cap);
	}
	rw->out[rw->nout++] = in;
}

static nx_inst *final(nx_inst *x)
{
	while (x->aux)
		x = x->aux;
	return x;
}

void nx_rw_place(nx_rw *rw, nx_inst *i)
{
	i->aux = NULL;
	push(rw, i);
}

nx_inst *nx_rw_add(nx_rw *rw, nx_opcode op, nx_shape *shape, nx_inst *const *ops, int n,
                   const char *base)
{
	const char *name = nx_rw_unique_name(rw, base ? base : nx_opcode_name(op));
	nx_inst *i = nx_inst_new(rw->c, op, shape, ops, n, name);
	i->aux = NULL;
	push(rw, i);
	return i;
}

static bool rw_comp(nx_rw *rw, nx_comp *c, nx_rw_fn fn)
{
	nx_inst **old = c->insts;
	int n = c->ninsts;
	bool changed = false;
	for (int i = 0; i < n; i++)
		old[i]->aux = NULL;
	rw->c = c;
	rw->nout = 0;
	for (int i = 0; i < n && rw->status == NX_OK; i++) {
		nx_inst *in = old[i];
		for (int k = 0; k < in->noperands; k++)
			in->operands[k] = final(in->operands[k]);
		for (int k = 0; k < in->a.ncontrol_predecessors; k++)
			in->a.control_predecessors[k] = final(in->a.control_predecessors[k]);
		int before = rw->nout;
		rw->mutated = false;
		nx_inst *r = fn(rw, in);
		if (r && r != in) {
			NX_ASSERT(nx_shape_compatible(r->shape, in->shape));
			/* Control edges of the replaced instruction move to its replacement. */
			if (in->a.ncontrol_predecessors && r->op != NX_OP_PARAMETER) {
				int nc = r->a.ncontrol_predecessors + in->a.ncontrol_predecessors;
				nx_inst **cp = nx_arena_alloc(&rw->m->arena, sizeof(nx_inst *) * (size_t)nc);
				memcpy(cp, r->a.control_predecessors,
				       sizeof(nx_inst *) * (size_t)r->a.ncontrol_predecessors);
				memcpy(cp + r->a.ncontrol_predecessors, in->a.control_predecessors,
				       sizeof(nx_inst *) * (size_t)in->a.ncontrol_predecessors);
				r->a.control_predecessors = cp;
				r->a.ncontrol_predecessors = nc;
			}
			nx_pass_log(rw->ctx, 2, "%s: %s -> %s", rw->pass, in->name, r->name);
			in->aux = r;
			changed = true;
			continue;
		}
		if (rw->nout != before || rw->mutated)
			changed = true;
		push(rw, in);
	}
	if (c->root)
		c->root = final(c->root);
	/* Control edges may name instructions replaced after the edge's owner. */
	for (int i = 0; i < rw->nout; i++) {
		nx_inst *in = rw->out[i];
		for (int k = 0; k < in->a.ncontrol_predecessors; k++)
			in->a.control_predecessors[k] = final(in->a.control_predecessors[k]);
	}
	if (changed) {
		c->insts = nx_arena_dup(&rw->m->arena, rw->out, sizeof(nx_inst *) * (size_t)(rw->nout ? rw->nout : 1));
		c->ninsts = rw->nout;
		c->cap = rw->nout;
	} else {
		c->insts = old;
		c->ninsts = n;
	}
	return changed;
}

nx_status nx_rw_run(nx_module *m, const nx_pass_ctx *ctx, const char *pass, nx_rw_fn fn,
                    void *user, bool *changed)
{
	nx_strmap names = {0};
	for (int c = 0; c < m->ncomps; c++) {
		nx_strmap_add(&names, m->comps[c]->name, strlen(m->comps[c]->name), 0, NULL);
		for (int i = 0; i < m->comps[c]->ninsts; i++) {
			const char *n = m->comps[c]->insts[i]->name;
			nx_strmap_add(&names, n, strlen(n), 0, NULL);
		}
	}
	nx_rw rw = {.m = m, .ctx = ctx, .pass = pass, .names = &names, .user = user};
	int ncomps = m->ncomps;
	nx_comp **comps = malloc(sizeof(nx_comp *) * ((size_t)(unsigned)ncomps + 1));
	memcpy(comps, m->comps, sizeof(nx_comp *) * (size_t)(unsigned)ncomps);
	for (int c = 0; c < ncomps && rw.status == NX_OK; c++)
		*changed |= rw_comp(&rw, comps[c], fn);
	if (m->ncomps != ncomps)
		*changed = true;
	free(comps);
	free(rw.out);
	nx_strmap_free(&names);
	return rw.status;
}

/* ------------------------------------------------------------ builders */

nx_inst *nx_rw_unary(nx_rw *rw, nx_opcode op, nx_inst *x)
{
	nx_shape *s = nx_shape_array(&rw->m->arena, x->shape->type, x->shape->rank, x->shape->dims);
	return nx_rw_add(rw, op, s, &x, 1, NULL);
}

nx_inst *nx_rw_binary(nx_rw *rw, nx_opcode op, nx_inst *x, nx_inst *y)
{
	nx_type t = op == NX_OP_COMPARE ? NX_PRED : x->shape->type;
	nx_shape *s = nx_shape_array(&rw->m->arena, t, x->shape->rank, x->shape->dims);
	nx_inst *ops[2] = {x, y};
	return nx_rw_add(rw, op, s, ops, 2, NULL);
}

nx_inst *nx_rw_compare(nx_rw *rw, nx_inst *x, nx_inst *y, nx_cmp_dir d)
{
	nx_inst *c = nx_rw_binary(rw, NX_OP_COMPARE, x, y);
	c->a.direction = d;
	return c;
}

nx_inst *nx_rw_select(nx_rw *rw, nx_inst *p, nx_inst *a, nx_inst *b)
{
	nx_inst *ops[3] = {p, a, b};
	return nx_rw_add(rw, NX_OP_SELECT, nx_shape_copy(&rw->m->arena, a->shape), ops, 3, NULL);
}

nx_inst *nx_rw_reshape(nx_rw *rw, nx_inst *x, int rank, const int64_t *dims)
{
	nx_shape *s = nx_shape_array(&rw->m->arena, x->shape->type, rank, dims);
	return nx_rw_add(rw, NX_OP_RESHAPE, s, &x, 1, NULL);
}

nx_inst *nx_rw_transpose(nx_rw *rw, nx_inst *x, const int64_t *perm)
{
	int r = x->shape->rank;
	int64_t dims[NX_MAX_RANK];
	for (int k = 0; k < r; k++)
		dims[k] = x->shape->dims[perm[k]];
	nx_shape *s = nx_shape_array(&rw->m->arena, x->shape->type, r, dims);
	nx_inst *t = nx_rw_add(rw, NX_OP_TRANSPOSE, s, &x, 1, NULL);
	t->a.dimensions = nx_ivec_dup(&rw->m->arena, perm, r);
	t->a.has_dimensions = true;
	return t;
}

nx_inst *nx_rw_broadcast(nx_rw *rw, nx_inst *x, nx_type t, int rank, const int64_t *dims,
                         const int64_t *bdims)
{
	nx_shape *s = nx_shape_array(&rw->m->arena, t, rank, dims);
	nx_inst *b = nx_rw_add(rw, NX_OP_BROADCAST, s, &x, 1, NULL);
	b->a.dimensions = nx_ivec_dup(&rw->m->arena, bdims, x->shape->rank);
	b->a.has_dimensions = true;
	return b;
}

nx_inst *nx_rw_convert(nx_rw *rw, nx_inst *x, nx_type t)
{
	nx_shape *s = nx_shape_array(&rw->m->arena, t, x->shape->rank, x->shape->dims);
	return nx_rw_add(rw, NX_OP_CONVERT, s, &x, 1, NULL);
}

nx_inst *nx_rw_scalar(nx_rw *rw, nx_type t, double v)
{
	nx_shape *s = nx_shape_scalar(&rw->m->arena, t);
	nx_inst *k = nx_rw_add(rw, NX_OP_CONSTANT, s, NULL, 0, NULL);
	k->a.literal = nx_literal_new(&rw->m->arena, nx_shape_scalar(&rw->m->arena, t));
	nx_lit_set_f64(k->a.literal, 0, v);
	return k;
}

nx_inst *nx_rw_splat(nx_rw *rw, const nx_shape *like, nx_type t, double v)
{
	nx_inst *k = nx_rw_scalar(rw, t, v);
	if (like->rank == 0)
		return k;
	return nx_rw_broadcast(rw, k, t, like->rank, like->dims, NULL);
}

nx_inst *nx_rw_reduce(nx_rw *rw, nx_inst *x, nx_inst *init, const int64_t *dims, int ndims,
                      nx_opcode op)
{
	nx_module *m = rw->m;
	nx_type t = x->shape->type;
	nx_comp *r = NULL;
	for (int k = 0; k < rw->nred && !r; k++)
		if (rw->red_type[k] == t && rw->red_op[k] == op)
			r = rw->red_comp[k];
	if (!r) {
		/* The reducer computation goes first in the module: callees are
		 * defined before their callers. */
		r = nx_comp_new(m, nx_rw_unique_name(rw, nx_opcode_name(op)));
		memmove(m->comps + 1, m->comps, sizeof(nx_comp *) * (size_t)(m->ncomps - 1));
		m->comps[0] = r;
		nx_inst *p[2];
		for (int k = 0; k < 2; k++) {
			p[k] = nx_inst_new(r, NX_OP_PARAMETER, nx_shape_scalar(&m->arena, t), NULL, 0,
			                   nx_rw_unique_name(rw, k ? "y" : "x"));
			p[k]->a.parameter_number = k;
			nx_comp_add_param(r, p[k]);
		}
		r->root = nx_inst_new(r, op, nx_shape_scalar(&m->arena, t), p, 2,
		                      nx_rw_unique_name(rw, nx_opcode_name(op)));
		if (rw->nred < 16) {
			rw->red_comp[rw->nred] = r;
			rw->red_type[rw->nred] = t;
			rw->red_op[rw->nred++] = op;
		}
	}
	int64_t od[NX_MAX_RANK];
	int on = 0;
	for (int k = 0; k < x->shape->rank; k++) {
		bool red = false;
		for (int j = 0; j < ndims; j++)
			red |= dims[j] == k;
		if (!red)
			od[on++] = x->shape->dims[k];
	}
	nx_inst *ops[2] = {x, init};
	nx_inst *red = nx_rw_add(rw, NX_OP_REDUCE, nx_shape_array(&m->arena, t, on, od), ops, 2, NULL);
	red->a.dimensions = nx_ivec_dup(&m->arena, dims, ndims);
	red->a.has_dimensions = true;
	nx_inst_set_called(red, &r, 1);
	return red;
}

/* ---------------------------------------------------------- constants */

const nx_literal *nx_rw_splat_value(const nx_inst *x)
{
	if (x->op == NX_OP_BROADCAST)
		x = x->operands[0];
	if (x->op != NX_OP_CONSTANT || !x->a.literal || !nx_shape_is_array(x->shape))
		return NULL;
	const nx_literal *l = x->a.literal;
	int64_t n = nx_shape_elems(l->shape);
	if (n <= 0 || !l->data)
		return NULL;
	size_t eb = (size_t)nx_type_bytes(l->shape->type);
	for (int64_t k = 1; k < n; k++)
		if (memcmp((const char *)l->data + (size_t)k * eb, l->data, eb) != 0)
			return NULL;
	return l;
}

bool nx_rw_is_splat(const nx_inst *x, double v)
{
	const nx_literal *l = nx_rw_splat_value(x);
	if (!l)
		return false;
	nx_type t = l->shape->type;
	switch (nx_type_kind_of(t)) {
	case NX_KIND_FLOAT: return nx_lit_get_f64(l, 0) == v;
	case NX_KIND_COMPLEX: {
		double re, im;
		nx_lit_get_c128(l, 0, &re, &im);
		return re == v && im == 0;
	}
	case NX_KIND_UINT:
		return v >= 0 && nx_lit_get_u64(l, 0) == (uint64_t)v;
	case NX_KIND_SINT:
	case NX_KIND_PRED: return nx_lit_get_i64(l, 0) == (int64_t)v;
	default: return false;
	}
}

bool nx_rw_is_const(const nx_inst *x)
{
	if (x->op == NX_OP_BROADCAST)
		x = x->operands[0];
	return x->op == NX_OP_CONSTANT;
}

bool nx_rw_is_intlike(nx_type t)
{
	nx_type_kind k = nx_type_kind_of(t);
	return k == NX_KIND_PRED || k == NX_KIND_SINT || k == NX_KIND_UINT;
}
