/* passes/flatten_params.c — an entry parameter of tuple shape (JAX passes
 * one when a jitted function takes its arguments as a tuple) becomes one
 * parameter per array leaf, depth first, named <param>.<i>[.<j>...]: a .neff
 * input is an array. The old parameter's users read a tuple rebuilt from the
 * leaves (tuple-simplify folds it into their get-tuple-elements). Parameter
 * numbers follow the leaves in order, so random inputs of the flattened
 * module are those of the original (ir/eval/random.c numbers a tuple
 * parameter's leaves the same way). input_output_alias entries that name a
 * leaf are renumbered (an alias of a whole sub-tuple is dropped: aliasing is
 * an optimization, never a meaning); entry_computation_layout is rebuilt. */
#include "passes/pass.h"

#include <stdlib.h>
#include <string.h>

typedef struct flat {
	nx_module *m;
	nx_comp *e;
	nx_inst **out; /* new leading instructions (leaf params, rebuilt tuples) */
	int nout, cap;
	int64_t next;  /* next parameter number */
} flat;

static void push(flat *f, nx_inst *i)
{
	if (f->nout == f->cap) {
		f->cap = f->cap ? 2 * f->cap : 64;
		f->out = realloc(f->out, sizeof *f->out * (size_t)f->cap);
		NX_ASSERT(f->out);
	}
	f->out[f->nout++] = i;
}

/* name itself when no instruction of the module has it yet */
static const char *fresh_name(nx_module *m, const char *name)
{
	for (int c = 0; c < m->ncomps; c++)
		if (nx_comp_find_inst(m->comps[c], name))
			return nx_module_unique_name(m, name);
	return name;
}

/* The leaves of shape s as parameters (or tuples of them); the value that
 * stands for s. */
static nx_inst *build(flat *f, const nx_inst *old, nx_shape *s, const char *name)
{
	if (s->type != NX_TUPLE) {
		nx_inst *p = nx_inst_new(f->e, NX_OP_PARAMETER, s, NULL, 0, fresh_name(f->m, name));
		p->a.parameter_number = f->next++;
		p->a.metadata = old->a.metadata;
		p->a.nmetadata = old->a.nmetadata;
		push(f, p);
		return p;
	}
	nx_inst **el = calloc((size_t)s->ntuple + 1, sizeof *el);
	NX_ASSERT(el);
	for (int k = 0; k < s->ntuple; k++)
		el[k] = build(f, old, s->tuple[k], nx_arena_printf(&f->m->arena, "%s.%d", name, k));
	nx_inst *t = nx_inst_new(f->e, NX_OP_TUPLE, s, el, s->ntuple, nx_module_unique_name(f->m, name));
	free(el);
	push(f, t);
	return t;
}

static int64_t leaves(const nx_shape *s)
{
	if (s->type != NX_TUPLE)
		return 1;
	int64_t n = 0;
	for (int k = 0; k < s->ntuple; k++)
		n += leaves(s->tuple[k]);
	return n;
}

/* Appends the leaves of s (layout shapes) to v. */
static void leaf_shapes(nx_shape *s, nx_shape **v, int *n)
{
	if (s->type != NX_TUPLE) {
		v[(*n)++] = s;
		return;
	}
	for (int k = 0; k < s->ntuple; k++)
		leaf_shapes(s->tuple[k], v, n);
}

nx_status nx_pass_flatten_params(nx_module *m, const nx_pass_ctx *ctx, bool *changed)
{
	nx_comp *e = m->entry;
	bool any = false;
	for (int k = 0; e && k < e->nparams; k++)
		any |= e->params[k] && e->params[k]->shape->type == NX_TUPLE;
	if (!any)
		return NX_OK;
	int np = e->nparams, nold = e->ninsts;
	nx_inst **oldp = calloc((size_t)np + 1, sizeof *oldp);
	int64_t *first = calloc((size_t)np + 1, sizeof *first); /* first new number of old param k */
	NX_ASSERT(oldp && first);
	memcpy(oldp, e->params, sizeof *oldp * (size_t)np);
	flat f = {.m = m, .e = e};
	for (int k = 0; k < np; k++) {
		nx_inst *p = oldp[k];
		first[k] = f.next;
		if (!p)
			continue;
		if (p->shape->type != NX_TUPLE) {
			p->a.parameter_number = f.next++;
			continue;
		}
		nx_pass_log(ctx, 2, "flatten-params: %s: %lld leaves", p->name, (long long)leaves(p->shape));
		nx_inst *t = build(&f, p, p->shape, p->name);
		nx_comp_replace_uses(e, p, t);
	}
	first[np] = f.next;
	/* new order: the new parameters and tuples, then the old instructions
	 * without the tuple parameters (nx_inst_new appended the new ones) */
	nx_inst **insts = nx_arena_alloc(&m->arena, sizeof *insts * (size_t)(e->ninsts + 1));
	int n = 0;
	for (int k = 0; k < f.nout; k++)
		insts[n++] = f.out[k];
	for (int k = 0; k < nold; k++) {
		nx_inst *i = e->insts[k];
		if (!(i->op == NX_OP_PARAMETER && i->shape->type == NX_TUPLE))
			insts[n++] = i;
	}
	e->insts = insts;
	e->ninsts = n;
	e->cap = n;
	/* the parameter table */
	e->nparams = 0;
	e->params = NULL;
	for (int k = 0; k < n; k++)
		if (insts[k]->op == NX_OP_PARAMETER)
			nx_comp_add_param(e, insts[k]);
	/* aliases: (p, {i, j, ...}) of a tuple parameter -> (leaf number, {}) */
	int na = 0;
	for (int a = 0; a < m->naliases; a++) {
		nx_alias al = m->aliases[a];
		int64_t p = al.param_number;
		if (p < 0 || p >= np || !oldp[p]) {
			m->aliases[na++] = al;
			continue;
		}
		const nx_shape *s = oldp[p]->shape;
		int64_t num = first[p];
		bool ok = true;
		int d = 0;
		for (; d < al.param_index.n && s->type == NX_TUPLE; d++) {
			int64_t ix = al.param_index.v[d];
			if (ix < 0 || ix >= s->ntuple) {
				ok = false;
				break;
			}
			for (int64_t j = 0; j < ix; j++)
				num += leaves(s->tuple[j]);
			s = s->tuple[ix];
		}
		if (!ok || s->type == NX_TUPLE || d != al.param_index.n) {
			nx_pass_log(ctx, 1, "flatten-params: alias of parameter %lld dropped (not one array leaf)",
			            (long long)p);
			continue;
		}
		al.param_number = num;
		al.param_index.n = 0;
		m->aliases[na++] = al;
	}
	m->naliases = na;
	/* entry_computation_layout: the leaves in place of each tuple */
	if (m->entry_layout && m->entry_layout->type == NX_TUPLE && m->entry_layout_nparams == np &&
	    m->entry_layout->ntuple == np + 1) {
		int nl = (int)first[np];
		nx_shape **v = nx_arena_alloc(&m->arena, sizeof *v * (size_t)(nl + 2));
		int c = 0;
		for (int k = 0; k < np; k++)
			leaf_shapes(m->entry_layout->tuple[k], v, &c);
		v[c] = m->entry_layout->tuple[np];
		if (c == nl) {
			m->entry_layout = nx_shape_tuple(&m->arena, nl + 1, v);
			m->entry_layout_nparams = nl;
		} else {
			m->entry_layout = NULL;
		}
	} else if (m->entry_layout) {
		m->entry_layout = NULL;
	}
	free(f.out);
	free(oldp);
	free(first);
	*changed = true;
	return NX_OK;
}
