/* ir/module.c — modules, computations and instructions. */
#include "ir/ir.h"
#include "ir/map.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

nx_module *nx_module_new(const char *name)
{
	nx_module *m = calloc(1, sizeof(*m));
	if (!m)
		nx_ice(__FILE__, __LINE__, "out of memory");
	nx_arena_init(&m->arena);
	m->name = nx_arena_strdup(&m->arena, name ? name : "module");
	m->next_id = 1;
	return m;
}

void nx_module_free(nx_module *m)
{
	if (!m)
		return;
	nx_arena_free(&m->arena);
	free(m);
}

nx_arena *nx_module_arena(nx_module *m) { return &m->arena; }

nx_comp *nx_comp_new(nx_module *m, const char *name)
{
	nx_comp *c = nx_arena_alloc(&m->arena, sizeof(*c));
	c->name = nx_arena_strdup(&m->arena, name);
	c->module = m;
	c->id = m->next_id++;
	if (m->ncomps == m->capcomps) {
		int cap = m->capcomps ? 2 * m->capcomps : 8;
		m->comps = nx_arena_grow(&m->arena, m->comps, (size_t)m->ncomps, (size_t)cap,
		                         sizeof(nx_comp *));
		m->capcomps = cap;
	}
	m->comps[m->ncomps++] = c;
	return c;
}

nx_inst *nx_inst_new(nx_comp *c, nx_opcode op, nx_shape *shape, nx_inst *const *operands,
                     int noperands, const char *name)
{
	nx_module *m = c->module;
	nx_inst *i = nx_arena_alloc(&m->arena, sizeof(*i));
	i->op = op;
	i->name = nx_arena_strdup(&m->arena, name ? name : nx_opcode_name(op));
	i->id = m->next_id++;
	i->shape = shape;
	i->parent = c;
	i->noperands = noperands;
	if (noperands) {
		i->operands = nx_arena_alloc(&m->arena, sizeof(nx_inst *) * (size_t)noperands);
		memcpy(i->operands, operands, sizeof(nx_inst *) * (size_t)noperands);
	}
	i->a.async_wrapped = NX_OP_COUNT;
	i->a.feature_group_count = 1;
	i->a.batch_group_count = 1;
	if (c->ninsts == c->cap) {
		int cap = c->cap ? 2 * c->cap : 16;
		c->insts = nx_arena_grow(&m->arena, c->insts, (size_t)c->ninsts, (size_t)cap,
		                         sizeof(nx_inst *));
		c->cap = cap;
	}
	c->insts[c->ninsts++] = i;
	return i;
}

void nx_inst_set_called(nx_inst *i, nx_comp *const *called, int n)
{
	nx_arena *a = &i->parent->module->arena;
	i->ncalled = n;
	i->called = n ? nx_arena_dup(a, called, sizeof(nx_comp *) * (size_t)n) : NULL;
}

void nx_comp_add_param(nx_comp *c, nx_inst *param)
{
	int64_t k = param->a.parameter_number;
	NX_ASSERT(k >= 0);
	if (k >= c->nparams) {
		/* The array's capacity is the power of two >= nparams (implicit):
		 * growing by doubling keeps 10^4 parameters linear, not quadratic. */
		size_t cap = 1;
		while (cap < (size_t)c->nparams)
			cap *= 2;
		if (!c->params || (size_t)k >= cap) {
			size_t nc = cap;
			while (nc <= (size_t)k)
				nc *= 2;
			c->params = nx_arena_grow(&c->module->arena, c->params, (size_t)c->nparams, nc,
			                          sizeof(nx_inst *));
		}
		c->nparams = (int)k + 1;
	}
	c->params[k] = param;
}

nx_comp *nx_module_find_comp(const nx_module *m, const char *name)
{
	for (int i = 0; i < m->ncomps; i++)
		if (strcmp(m->comps[i]->name, name) == 0)
			return m->comps[i];
	return NULL;
}

nx_inst *nx_comp_find_inst(const nx_comp *c, const char *name)
{
	for (int i = 0; i < c->ninsts; i++)
		if (strcmp(c->insts[i]->name, name) == 0)
			return c->insts[i];
	return NULL;
}

void nx_comp_replace_uses(nx_comp *c, nx_inst *old, nx_inst *repl)
{
	for (int i = 0; i < c->ninsts; i++) {
		nx_inst *in = c->insts[i];
		for (int k = 0; k < in->noperands; k++)
			if (in->operands[k] == old)
				in->operands[k] = repl;
		for (int k = 0; k < in->a.ncontrol_predecessors; k++)
			if (in->a.control_predecessors[k] == old)
				in->a.control_predecessors[k] = repl;
	}
	if (c->root == old)
		c->root = repl;
}

void nx_comp_compact(nx_comp *c, const bool *keep)
{
	int j = 0;
	for (int i = 0; i < c->ninsts; i++)
		if (keep[i])
			c->insts[j++] = c->insts[i];
	c->ninsts = j;
}

const char *nx_module_unique_name(nx_module *m, const char *base)
{
	/* Ids are unique in the module, so base.id cannot collide with another
	 * generated name; it could collide with a user name, so check. */
	nx_strmap names = {0};
	for (int c = 0; c < m->ncomps; c++)
		for (int i = 0; i < m->comps[c]->ninsts; i++) {
			const char *n = m->comps[c]->insts[i]->name;
			nx_strmap_add(&names, n, strlen(n), 0, NULL);
		}
	const char *name = nx_fresh_name(&names, &m->arena, base, -1, &m->next_id, false);
	nx_strmap_free(&names);
	return name;
}

nx_ivec nx_ivec_dup(nx_arena *a, const int64_t *v, int n)
{
	nx_ivec r = {NULL, n};
	if (n)
		r.v = nx_arena_dup(a, v, sizeof(int64_t) * (size_t)n);
	return r;
}

bool nx_ivec_eq(nx_ivec x, nx_ivec y)
{
	if (x.n != y.n)
		return false;
	for (int i = 0; i < x.n; i++)
		if (x.v[i] != y.v[i])
			return false;
	return true;
}

bool nx_custom_call_axis_parse(const char *s, int64_t *axis)
{
	if (!s)
		return false;
	while (*s == '"' || *s == ' ')
		s++;
	char *end;
	long long v = strtoll(s, &end, 10);
	if (end == s)
		return false;
	while (*end == '"' || *end == ' ')
		end++;
	if (*end)
		return false;
	*axis = v;
	return true;
}

int64_t nx_custom_call_axis(const nx_inst *i, int rank)
{
	int64_t v;
	if (!nx_custom_call_axis_parse(i->a.backend_config, &v))
		return rank - 1;
	return v < 0 ? v + rank : v;
}
