/* ir/verify/verify.c — module verifier: structure (entry, roots, parameters,
 * topological order, called computations, no recursion, aliases, entry
 * layout) and every instruction's shape against nx_infer_shape. */
#include "ir/ir.h"
#include "ir/map.h"
#include "ir/verify/shape_infer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct vctx {
	const nx_module *m;
	nx_diag *d;
	nx_arena scratch;
} vctx;

static nx_status inst_err(vctx *v, const nx_inst *i, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static nx_status inst_err(vctx *v, const nx_inst *i, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	nx_diag_set(v->d, NX_ERR_INPUT, v->m->file, i->line, i->col, "instruction '%s': %s",
	            i->name, buf);
	nx_diag_set_inst(v->d, i->name);
	return NX_ERR_INPUT;
}

static nx_status comp_err(vctx *v, const nx_comp *c, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static nx_status comp_err(vctx *v, const nx_comp *c, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return nx_diag_set(v->d, NX_ERR_INPUT, v->m->file, c ? c->line : 0, c ? c->col : 0, "%s%s%s%s",
	                   c ? "computation '" : "", c ? c->name : "", c ? "': " : "", buf);
}

static const char *sstr(vctx *v, const nx_shape *s) { return nx_shape_str(&v->scratch, s, false); }

/* --------------------------------------------------------- structure */

static nx_status check_comp_structure(vctx *v, const nx_comp *c, const nx_ptrmap *comps)
{
	if (!c->root)
		return comp_err(v, c, "has no root instruction");
	if (c->root->parent != c)
		return comp_err(v, c, "root '%s' belongs to another computation", c->root->name);
	for (int p = 0; p < c->nparams; p++) {
		const nx_inst *pi = c->params[p];
		if (!pi)
			return comp_err(v, c, "parameters are not numbered 0..%d: parameter %d is missing",
			                c->nparams - 1, p);
		if (pi->op != NX_OP_PARAMETER || pi->a.parameter_number != p || pi->parent != c)
			return comp_err(v, c, "parameter slot %d holds '%s', not parameter(%d)", p,
			                pi->name, p);
	}
	nx_ptrmap pos;
	nx_ptrmap_init(&pos, (size_t)c->ninsts);
	nx_status st = NX_OK;
	bool root_seen = false;
	for (int k = 0; k < c->ninsts && st == NX_OK; k++) {
		const nx_inst *i = c->insts[k];
		if (i->parent != c) {
			st = inst_err(v, i, "listed in computation '%s' but its parent is '%s'", c->name,
			              i->parent ? i->parent->name : "none");
			break;
		}
		if ((int)nx_ptrmap_get(&pos, i, -1) >= 0) {
			st = inst_err(v, i, "appears twice in computation '%s'", c->name);
			break;
		}
		root_seen |= i == c->root;
		if (i->op == NX_OP_PARAMETER &&
		    (i->a.parameter_number < 0 || i->a.parameter_number >= c->nparams ||
		     c->params[i->a.parameter_number] != i)) {
			st = inst_err(v, i, "parameter(%lld) is not parameter %lld of computation '%s'",
			              (long long)i->a.parameter_number, (long long)i->a.parameter_number,
			              c->name);
			break;
		}
		for (int o = 0; o < i->noperands && st == NX_OK; o++) {
			const nx_inst *op = i->operands[o];
			if (!op)
				st = inst_err(v, i, "operand %d is missing", o);
			else if (op->parent != c)
				st = inst_err(v, i, "operand '%s' is not defined in computation '%s'", op->name,
				              c->name);
			else if ((int)nx_ptrmap_get(&pos, op, -1) < 0)
				st = inst_err(v, i, "operand '%s' is used before it is defined", op->name);
		}
		for (int o = 0; o < i->a.ncontrol_predecessors && st == NX_OK; o++) {
			const nx_inst *op = i->a.control_predecessors[o];
			if (!op || op->parent != c)
				st = inst_err(v, i, "control predecessor '%s' is not in computation '%s'",
				              op ? op->name : "?", c->name);
		}
		for (int o = 0; o < i->ncalled && st == NX_OK; o++) {
			const nx_comp *cc = i->called[o];
			if (!cc || (int)nx_ptrmap_get(comps, cc, -1) < 0)
				st = inst_err(v, i, "called computation '%s' is not in the module",
				              cc ? cc->name : "?");
			else if (cc == v->m->entry)
				st = inst_err(v, i, "calls the entry computation '%s'", cc->name);
		}
		nx_ptrmap_put(&pos, i, k);
	}
	if (st == NX_OK && !root_seen)
		st = comp_err(v, c, "root '%s' is not one of its instructions", c->root->name);
	nx_ptrmap_free(&pos);
	return st;
}

/* Depth-first search over calls; color: 0 new, 1 on the stack, 2 done. */
static nx_status check_recursion(vctx *v, const nx_comp *c, const nx_ptrmap *comps, int *color)
{
	int me = (int)nx_ptrmap_get(comps, c, -1);
	color[me] = 1;
	for (int k = 0; k < c->ninsts; k++) {
		const nx_inst *i = c->insts[k];
		for (int o = 0; o < i->ncalled; o++) {
			int j = (int)nx_ptrmap_get(comps, i->called[o], -1);
			if (color[j] == 1)
				return inst_err(v, i, "calls computation '%s' recursively", i->called[o]->name);
			if (color[j] == 0 && check_recursion(v, i->called[o], comps, color) != NX_OK)
				return NX_ERR_INPUT;
		}
	}
	color[me] = 2;
	return NX_OK;
}

/* ---------------------------------------------------------------- shapes */

/* Ops whose result type comes from a reducer: like XLA's verifier in
 * mixed-precision mode, their result may differ from the reducer's type in
 * floating-point precision only (e.g. an f32 reduction declared bf16). */
static bool reduces_via_computation(nx_opcode op)
{
	return op == NX_OP_REDUCE || op == NX_OP_REDUCE_WINDOW || op == NX_OP_ALL_REDUCE ||
	       op == NX_OP_REDUCE_SCATTER || op == NX_OP_SCATTER || op == NX_OP_MAP ||
	       op == NX_OP_SELECT_AND_SCATTER || op == NX_OP_ALL_REDUCE_START;
}

static bool match_ignoring_fp(const nx_shape *x, const nx_shape *y)
{
	if (x->type == NX_TUPLE || y->type == NX_TUPLE) {
		if (x->type != y->type || x->ntuple != y->ntuple)
			return false;
		for (int k = 0; k < x->ntuple; k++)
			if (!match_ignoring_fp(x->tuple[k], y->tuple[k]))
				return false;
		return true;
	}
	if (x->type != y->type && !(nx_type_is_float(x->type) && nx_type_is_float(y->type)))
		return false;
	nx_shape tmp = *y;
	tmp.type = x->type;
	return nx_shape_infer_match(x, &tmp);
}

static nx_status check_inst_shape(vctx *v, const nx_inst *i)
{
	nx_shape *want = nx_infer_shape(&v->scratch, i, v->d);
	if (!want) {
		if (!v->d || v->d->status == NX_OK)
			return inst_err(v, i, "invalid operands for %s", nx_opcode_name(i->op));
		return v->d->status;
	}
	if (nx_shape_infer_match(i->shape, want))
		return NX_OK;
	if (reduces_via_computation(i->op) && match_ignoring_fp(i->shape, want))
		return NX_OK;
	/* "add(f32[4,4], f32[4,4])", eliding long operand lists. */
	size_t cap = 512, len = 0;
	char *ops = nx_arena_alloc(&v->scratch, cap);
	len += (size_t)snprintf(ops, cap, "%s(", nx_opcode_name(i->op));
	for (int k = 0; k < i->noperands && len < cap; k++) {
		if (k == 6 && i->noperands > 7) {
			len += (size_t)snprintf(ops + len, cap - len, ", ... %d more", i->noperands - 6);
			break;
		}
		len += (size_t)snprintf(ops + len, cap - len, "%s%s", k ? ", " : "",
		                        sstr(v, i->operands[k]->shape));
	}
	if (len < cap)
		snprintf(ops + len, cap - len, ")");
	return inst_err(v, i, "shape %s does not match the inferred shape %s of %s",
	                sstr(v, i->shape), sstr(v, want), ops);
}

static nx_status check_aliases(vctx *v)
{
	const nx_module *m = v->m;
	const nx_comp *e = m->entry;
	for (int k = 0; k < m->naliases; k++) {
		const nx_alias *al = &m->aliases[k];
		const nx_shape *out = nx_shape_subshape(e->root->shape, al->output_index.v,
		                                        al->output_index.n);
		char idx[128] = "";
		size_t n = 0;
		for (int j = 0; j < al->output_index.n && n < sizeof(idx); j++)
			n += (size_t)snprintf(idx + n, sizeof(idx) - n, "%s%lld", j ? "," : "",
			                      (long long)al->output_index.v[j]);
		if (!out)
			return comp_err(v, NULL, "input_output_alias {%s}: the entry result %s has no such "
			                "output", idx, sstr(v, e->root->shape));
		if (al->param_number < 0 || al->param_number >= e->nparams)
			return comp_err(v, NULL, "input_output_alias {%s}: parameter %lld does not exist "
			                "(the entry has %d)", idx, (long long)al->param_number, e->nparams);
		const nx_shape *in = nx_shape_subshape(e->params[al->param_number]->shape,
		                                       al->param_index.v, al->param_index.n);
		if (!in)
			return comp_err(v, NULL, "input_output_alias {%s}: parameter %lld has no such "
			                "element", idx, (long long)al->param_number);
		if (!nx_shape_infer_match(out, in))
			return comp_err(v, NULL, "input_output_alias {%s}: output %s and parameter %lld %s "
			                "differ", idx, sstr(v, out), (long long)al->param_number,
			                sstr(v, in));
		for (int j = 0; j < k; j++)
			if (nx_ivec_eq(m->aliases[j].output_index, al->output_index))
				return comp_err(v, NULL, "input_output_alias {%s}: output aliased twice", idx);
	}
	return NX_OK;
}

static nx_status check_entry_layout(vctx *v)
{
	const nx_module *m = v->m;
	const nx_shape *l = m->entry_layout;
	if (!l)
		return NX_OK;
	if (l->type != NX_TUPLE || l->ntuple != m->entry_layout_nparams + 1)
		return comp_err(v, m->entry, "entry_computation_layout is malformed");
	if (m->entry_layout_nparams != m->entry->nparams)
		return comp_err(v, m->entry, "entry_computation_layout has %d parameters, the entry "
		                "computation has %d", m->entry_layout_nparams, m->entry->nparams);
	const nx_shape *res = l->tuple[l->ntuple - 1];
	if (!nx_shape_infer_match(m->entry->root->shape, res))
		return comp_err(v, m->entry, "result %s does not match entry_computation_layout %s",
		                sstr(v, m->entry->root->shape), sstr(v, res));
	return NX_OK;
}

nx_status nx_verify_module(const nx_module *m, nx_diag *d)
{
	vctx v = {m, d, {0}};
	nx_arena_init(&v.scratch);
	nx_status st = NX_OK;
	nx_ptrmap comps;
	nx_ptrmap_init(&comps, (size_t)m->ncomps);
	int *color = calloc((size_t)m->ncomps + 1, sizeof(int));
	if (!color)
		nx_ice(__FILE__, __LINE__, "out of memory");
	for (int k = 0; k < m->ncomps; k++) {
		if ((int)nx_ptrmap_get(&comps, m->comps[k], -1) >= 0) {
			st = comp_err(&v, m->comps[k], "is listed twice in the module");
			goto out;
		}
		nx_ptrmap_put(&comps, m->comps[k], k);
	}
	if (!m->entry || (int)nx_ptrmap_get(&comps, m->entry, -1) < 0) {
		st = comp_err(&v, NULL, "module '%s' has no entry computation", m->name);
		goto out;
	}
	for (int k = 0; k < m->ncomps && st == NX_OK; k++)
		st = check_comp_structure(&v, m->comps[k], &comps);
	for (int k = 0; k < m->ncomps && st == NX_OK; k++)
		if (color[k] == 0)
			st = check_recursion(&v, m->comps[k], &comps, color);
	for (int k = 0; k < m->ncomps && st == NX_OK; k++) {
		const nx_comp *c = m->comps[k];
		for (int j = 0; j < c->ninsts && st == NX_OK; j++)
			st = check_inst_shape(&v, c->insts[j]);
	}
	if (st == NX_OK)
		st = check_entry_layout(&v);
	if (st == NX_OK)
		st = check_aliases(&v);
out:
	free(color);
	nx_ptrmap_free(&comps);
	nx_arena_free(&v.scratch);
	return st;
}
