/* ir/hlo/read_text.c — the HLO text reader: module header, computations,
 * instructions; name resolution (forward references allowed), topological
 * order, called computations. Scanning is in read_lex.c, shapes and literals
 * in read_literal.c, attributes in read_attrs.c. */
#include "ir/hlo/read_internal.h"
#include "ir/map.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ name tables */

/* nx_strmap (ir/map.h): cleared per computation in O(1). */
static void *ht_get(const nx_strmap *t, const char *s, size_t n)
{
	intptr_t v;
	return nx_strmap_find(t, s, n, &v) ? (void *)v : NULL;
}

/* Inserts; returns the existing value if the name is taken. */
static void *ht_put(nx_strmap *t, const char *s, size_t n, void *val)
{
	intptr_t old;
	return nx_strmap_add(t, s, n, (intptr_t)val, &old) ? NULL : (void *)old;
}

/* ----------------------------------------------------------------- parser */

typedef struct parser {
	nx_rd r;
	nx_module *m;
	nx_strmap insts; /* names of the current computation */
	nx_strmap comps;
	int nested; /* counter for names of nested operand instructions */
} parser;

static bool at_keyword(nx_rd *r, const char *kw)
{
	size_t n = strlen(kw);
	if (r->pos + n > r->len || memcmp(r->s + r->pos, kw, n) != 0)
		return false;
	if (r->pos + n < r->len && (rd_is_name_char(r->s[r->pos + n]) || r->s[r->pos + n] == '%'))
		return false;
	r->pos += n;
	return true;
}

static const char *found_text(nx_rd *r, char *buf, size_t n)
{
	if (r->pos >= r->len)
		return "end of file";
	size_t k = r->pos;
	while (k < r->len && rd_is_name_char(r->s[k]) && k - r->pos < 40)
		k++;
	if (k == r->pos)
		k++;
	snprintf(buf, n, "'%.*s'", (int)(k - r->pos), r->s + r->pos);
	return buf;
}

static void op_push(nx_rd *r, rd_pending *pd, rd_ref ref)
{
	if (pd->nops == pd->capops) {
		int nc = pd->capops ? 2 * pd->capops : 4;
		pd->ops = nx_arena_grow(&r->scratch, pd->ops, (size_t)pd->nops, (size_t)nc, sizeof(rd_ref));
		pd->capops = nc;
	}
	pd->ops[pd->nops++] = ref;
}

static nx_inst *parse_rhs(parser *P, nx_comp *c, const char *name, size_t namepos, nx_shape *shape,
                          bool nested);

/* Operands up to and including ')'. */
static bool parse_operands(parser *P, nx_comp *c, rd_pending *pd)
{
	nx_rd *r = &P->r;
	if (rd_accept(r, ')'))
		return true;
	for (;;) {
		if (r->failed)
			return false;
		rd_ref ref = {0};
		if (!rd_ws(r))
			return false;
		ref.spos = r->pos;
		if (rd_at_shape(r) && !rd_shape(r, &ref.written))
			return false;
		if (!rd_ws(r))
			return false;
		ref.pos = r->pos;
		const char *nm;
		size_t nn;
		if (!rd_name(r, &nm, &nn)) {
			char buf[64];
			if (r->failed)
				return false;
			return rd_err(r, r->pos, "expected operand name, found %s",
			              found_text(r, buf, sizeof buf));
		}
		if (!rd_ws(r))
			return false;
		if (ref.written && rd_peek(r) == '(') {
			/* nested instruction "f32[] constant(0)" used as an operand */
			if (!rd_depth_push(r))
				return false;
			r->pos = ref.pos;
			const char *gen;
			do
				gen = nx_arena_printf(&r->scratch, "%.*s.nested.%d", (int)nn, nm, ++P->nested);
			while (ht_get(&P->insts, gen, strlen(gen)));
			const char *saved = r->inst;
			nx_inst *ni = parse_rhs(P, c, gen, ref.pos, ref.written, true);
			r->inst = saved;
			if (!ni)
				return false;
			rd_depth_pop(r);
			ref.name = ni->name;
			ref.written = NULL;
		} else {
			ref.name = nx_arena_strndup(&r->scratch, nm, nn);
			while (!rd_eof(r) && rd_peek(r) == '#') {
				/* newer XLA prints a use of tuple element k as "%t#k"
				 * instead of a get-tuple-element instruction */
				if (ref.nindex == RD_MAX_TUPLE_INDICES)
					return rd_err(r, r->pos, "more than %d nested tuple indices",
					              RD_MAX_TUPLE_INDICES);
				ref.ipos[ref.nindex] = r->pos++;
				if (!rd_int(r, &ref.index[ref.nindex++], "as tuple index after '#'") || !rd_ws(r))
					return false;
			}
		}
		op_push(r, pd, ref);
		if (rd_accept(r, ')'))
			return true;
		if (r->failed)
			return false;
		if (!rd_ws(r))
			return false;
		if (rd_eof(r) || rd_peek(r) != ',') {
			char buf[64];
			return rd_err(r, r->pos, "expected ')' after operands, found %s",
			              found_text(r, buf, sizeof buf));
		}
		r->pos++;
	}
}

static nx_inst *parse_rhs(parser *P, nx_comp *c, const char *name, size_t namepos, nx_shape *shape,
                          bool nested)
{
	nx_rd *r = &P->r;
	r->inst = name;
	if (!rd_ws(r))
		return NULL;
	size_t oppos = r->pos;
	const char *on;
	size_t onn;
	if (!rd_name(r, &on, &onn) || r->s[oppos] == '%') {
		char buf[64];
		r->pos = oppos;
		rd_err(r, oppos, "expected opcode, found %s", found_text(r, buf, sizeof buf));
		return NULL;
	}
	nx_opcode op = nx_opcode_from_name(on, onn);
	nx_opcode wrapped = NX_OP_COUNT;
	if (op == NX_OP_COUNT) {
		static const struct { const char *suf; nx_opcode op; } forms[] = {
			{"-start", NX_OP_ASYNC_START}, {"-update", NX_OP_ASYNC_UPDATE}, {"-done", NX_OP_ASYNC_DONE}};
		for (size_t k = 0; k < 3 && op == NX_OP_COUNT; k++) {
			size_t sl = strlen(forms[k].suf);
			if (onn > sl && memcmp(on + onn - sl, forms[k].suf, sl) == 0) {
				nx_opcode base = nx_opcode_from_name(on, onn - sl);
				if (base != NX_OP_COUNT) {
					op = forms[k].op;
					wrapped = base;
				}
			}
		}
	}
	if (op == NX_OP_COUNT) {
		rd_err(r, oppos, "unknown opcode '%.*s'", (int)(onn > 60 ? 60 : onn), on);
		return NULL;
	}
	if (!rd_expect(r, '(', "after the opcode"))
		return NULL;
	rd_pending *pd = nx_arena_alloc(&r->scratch, sizeof(*pd));
	pd->pos = namepos;
	int64_t pnum = -1;
	size_t pnum_pos = 0;
	nx_literal *lit = NULL;
	if (op == NX_OP_PARAMETER) {
		pnum_pos = (rd_ws(r), r->pos);
		if (!rd_int(r, &pnum, "as parameter number") ||
		    !rd_expect(r, ')', "after the parameter number"))
			return NULL;
		if (pnum < 0 || pnum > (1 << 20)) {
			rd_err(r, pnum_pos, "parameter number %lld is out of range", (long long)pnum);
			return NULL;
		}
	} else if (op == NX_OP_CONSTANT) {
		if (!rd_ws(r))
			return NULL;
		if (rd_peek(r) != '(' && rd_at_shape(r)) {
			size_t at = r->pos;
			nx_shape *w;
			if (!rd_shape(r, &w))
				return NULL;
			if (!nx_shape_compatible(w, shape)) {
				rd_err(r, at, "constant is written with shape %s but declared as %s",
				       nx_shape_str(&r->scratch, w, false),
				       nx_shape_str(&r->scratch, shape, false));
				return NULL;
			}
		}
		if (!rd_ws(r))
			return NULL;
		if (rd_at_elided(r)) {
			if (!rd_elided_value(r, shape, &lit))
				return NULL;
			P->m->nelided++;
		} else if (!rd_literal_value(r, shape, &lit)) {
			return NULL;
		}
		if (!rd_expect(r, ')', "after the constant's value"))
			return NULL;
	} else if (!parse_operands(P, c, pd)) {
		return NULL;
	}
	nx_inst *i = nx_inst_new(c, op, shape, NULL, 0, name);
	rd_linecol(r, namepos, &i->line, &i->col);
	i->aux = pd;
	i->a.async_wrapped = wrapped;
	i->a.literal = lit;
	pd->index = c->ninsts - 1;
	nx_inst *prev = ht_put(&P->insts, i->name, strlen(i->name), i);
	if (prev) {
		rd_err(r, namepos, "duplicate instruction name '%s' in computation '%s' (first defined on line %d)",
		       i->name, c->name, prev->line);
		return NULL;
	}
	if (op == NX_OP_PARAMETER) {
		i->a.parameter_number = pnum;
		if (pnum < c->nparams && c->params[pnum]) {
			rd_err(r, pnum_pos, "duplicate parameter number %lld in computation '%s'",
			       (long long)pnum, c->name);
			return NULL;
		}
		nx_comp_add_param(c, i);
	}
	/* a nested operand instruction has no attributes: a ',' after it
	 * separates operands */
	if (!nested && !rd_attrs(r, i, pd))
		return NULL;
	int arity = nx_opcode_arity(op);
	if (wrapped == NX_OP_COUNT && arity >= 0 && op != NX_OP_PARAMETER && op != NX_OP_CONSTANT &&
	    pd->nops != arity) {
		rd_err(r, oppos, "'%s' expects %d operand%s, got %d", nx_opcode_name(op), arity,
		       arity == 1 ? "" : "s", pd->nops);
		return NULL;
	}
	return i;
}

static bool parse_inst(parser *P, nx_comp *c)
{
	nx_rd *r = &P->r;
	bool is_root = at_keyword(r, "ROOT");
	if (!rd_ws(r))
		return false;
	size_t namepos = r->pos;
	const char *nm;
	size_t nn;
	if (!rd_name(r, &nm, &nn)) {
		char buf[64];
		if (r->failed)
			return false;
		return rd_err(r, namepos, "expected instruction name, found %s",
		              found_text(r, buf, sizeof buf));
	}
	const char *name = nx_arena_strndup(&r->scratch, nm, nn);
	r->inst = name;
	if (!rd_expect(r, '=', "after the instruction name"))
		return false;
	nx_shape *shape;
	if (!rd_shape(r, &shape))
		return false;
	nx_inst *i = parse_rhs(P, c, name, namepos, shape, false);
	if (!i)
		return false;
	if (is_root) {
		if (c->root)
			return rd_err(r, namepos, "computation '%s' has more than one ROOT instruction",
			              c->name);
		c->root = i;
		((rd_pending *)i->aux)->is_root = true;
	}
	r->inst = NULL;
	return true;
}

/* "%t#k": the get-tuple-element of element k of t, one per (t, k) in a
 * computation, added to it (topo_order places it before its first user).
 * Its name is t's with ".k" appended, made unique if taken. "%t#k#j" is
 * element j of that one. `written` is the operand as written up to this
 * index, for messages. */
static nx_inst *element_of(parser *P, nx_comp *c, nx_inst *t, int64_t k, size_t ipos,
                           const char *written)
{
	nx_rd *r = &P->r;
	if (!nx_shape_is_tuple(t->shape)) {
		rd_err(r, ipos, "'%s': '%.*s' has shape %s, not a tuple", written,
		       (int)(strrchr(written, '#') - written), written,
		       nx_shape_str(&r->scratch, t->shape, false));
		return NULL;
	}
	if (k < 0 || k >= t->shape->ntuple) {
		rd_err(r, ipos, "'%s': tuple index out of range ('%.*s' has %d element%s)", written,
		       (int)(strrchr(written, '#') - written), written, t->shape->ntuple,
		       t->shape->ntuple == 1 ? "" : "s");
		return NULL;
	}
	const char *key = nx_arena_printf(&r->scratch, "%s#%lld", t->name, (long long)k);
	nx_inst *g = ht_get(&P->insts, key, strlen(key));
	if (g)
		return g;
	const char *name = nx_arena_printf(&r->scratch, "%s.%lld", t->name, (long long)k);
	for (int n = 1; ht_get(&P->insts, name, strlen(name)); n++)
		name = nx_arena_printf(&r->scratch, "%s.%lld.%d", t->name, (long long)k, n);
	nx_inst *tp = t;
	g = nx_inst_new(c, NX_OP_GET_TUPLE_ELEMENT, nx_shape_copy(r->a, t->shape->tuple[k]), &tp, 1,
	                name);
	g->a.tuple_index = k;
	rd_linecol(r, ipos, &g->line, &g->col);
	rd_pending *gp = nx_arena_alloc(&r->scratch, sizeof(*gp));
	gp->pos = ipos;
	gp->index = c->ninsts - 1;
	g->aux = gp;
	ht_put(&P->insts, g->name, strlen(g->name), g);
	ht_put(&P->insts, key, strlen(key), g);
	return g;
}

/* The operand as written: "t", "t#0", "t#0#1". */
static const char *written_ref(nx_arena *a, const rd_ref *ref, int upto)
{
	const char *s = ref->name;
	for (int k = 0; k < upto; k++)
		s = nx_arena_printf(a, "%s#%lld", s, (long long)ref->index[k]);
	return s;
}

static bool resolve_refs(parser *P, nx_comp *c)
{
	nx_rd *r = &P->r;
	nx_arena *a = r->a;
	for (int k = 0; k < c->ninsts; k++) {
		nx_inst *i = c->insts[k];
		rd_pending *pd = i->aux;
		r->inst = i->name;
		if (pd->nops) {
			i->operands = nx_arena_alloc(a, sizeof(nx_inst *) * (size_t)pd->nops);
			i->noperands = pd->nops;
		}
		for (int o = 0; o < pd->nops; o++) {
			rd_ref *ref = &pd->ops[o];
			nx_inst *d = ht_get(&P->insts, ref->name, strlen(ref->name));
			if (!d)
				return rd_err(r, ref->pos, "operand '%s' is not defined in computation '%s'",
				              ref->name, c->name);
			for (int x = 0; x < ref->nindex && d; x++)
				d = element_of(P, c, d, ref->index[x], ref->ipos[x],
				               written_ref(&r->scratch, ref, x + 1));
			if (!d)
				return false;
			if (ref->written && !nx_shape_compatible(ref->written, d->shape))
				return rd_err(r, ref->spos,
				              "operand '%s' is written with shape %s but defined with shape %s",
				              written_ref(&r->scratch, ref, ref->nindex),
				              nx_shape_str(&r->scratch, ref->written, false),
				              nx_shape_str(&r->scratch, d->shape, false));
			i->operands[o] = d;
		}
		if (pd->npreds) {
			i->a.control_predecessors = nx_arena_alloc(a, sizeof(nx_inst *) * (size_t)pd->npreds);
			i->a.ncontrol_predecessors = pd->npreds;
		}
		for (int o = 0; o < pd->npreds; o++) {
			rd_ref *ref = &pd->preds[o];
			nx_inst *d = ht_get(&P->insts, ref->name, strlen(ref->name));
			if (!d)
				return rd_err(r, ref->pos,
				              "control predecessor '%s' is not defined in computation '%s'",
				              ref->name, c->name);
			i->a.control_predecessors[o] = d;
		}
	}
	r->inst = NULL;
	return true;
}

static nx_inst *edge(nx_inst *i, int k)
{
	return k < i->noperands ? i->operands[k] : i->a.control_predecessors[k - i->noperands];
}

/* Orders c->insts so operands come first, keeping file order when it already
 * is one; reports a cycle. */
static bool topo_order(parser *P, nx_comp *c)
{
	nx_rd *r = &P->r;
	bool sorted = true;
	for (int k = 0; k < c->ninsts && sorted; k++) {
		nx_inst *i = c->insts[k];
		int ne = i->noperands + i->a.ncontrol_predecessors;
		for (int e = 0; e < ne; e++) {
			nx_inst *d = edge(i, e);
			if (((rd_pending *)d->aux)->index >= k) {
				sorted = false;
				break;
			}
		}
	}
	if (sorted)
		return true;
	int n = c->ninsts;
	nx_inst **order = nx_arena_alloc(r->a, sizeof(nx_inst *) * (size_t)n);
	nx_inst **stack = malloc(sizeof(nx_inst *) * (size_t)n);
	int *next = malloc(sizeof(int) * (size_t)n);
	int no = 0;
	bool ok = true;
	for (int k = 0; k < n && ok; k++) {
		nx_inst *root = c->insts[k];
		if (((rd_pending *)root->aux)->state)
			continue;
		int sp = 0;
		stack[sp] = root;
		next[sp++] = 0;
		((rd_pending *)root->aux)->state = 1;
		while (sp > 0 && ok) {
			nx_inst *i = stack[sp - 1];
			int ne = i->noperands + i->a.ncontrol_predecessors;
			if (next[sp - 1] == ne) {
				((rd_pending *)i->aux)->state = 2;
				order[no++] = i;
				sp--;
				continue;
			}
			nx_inst *d = edge(i, next[sp - 1]++);
			rd_pending *dp = d->aux;
			if (dp->state == 2)
				continue;
			if (dp->state == 1) {
				char path[512];
				size_t pl = 0;
				int from = sp - 1;
				while (stack[from] != d)
					from--;
				for (int s = from; s < sp && pl < 400; s++)
					pl += (size_t)snprintf(path + pl, sizeof path - pl, "'%s' -> ", stack[s]->name);
				snprintf(path + pl, sizeof path - pl, "'%s'", d->name);
				r->inst = d->name;
				rd_err(r, dp->pos, "cycle between instructions in computation '%s': %s (each uses the next)",
				       c->name, path);
				ok = false;
				break;
			}
			dp->state = 1;
			stack[sp] = d;
			next[sp++] = 0;
		}
	}
	free(stack);
	free(next);
	if (!ok)
		return false;
	for (int k = 0; k < n; k++) {
		c->insts[k] = order[k];
		((rd_pending *)order[k]->aux)->index = k;
	}
	return true;
}

static bool parse_comp(parser *P)
{
	nx_rd *r = &P->r;
	bool is_entry = at_keyword(r, "ENTRY");
	if (!rd_ws(r))
		return false;
	size_t namepos = r->pos;
	const char *nm;
	size_t nn;
	if (!rd_name(r, &nm, &nn)) {
		char buf[64];
		if (r->failed)
			return false;
		return rd_err(r, namepos, "expected computation name, found %s",
		              found_text(r, buf, sizeof buf));
	}
	char *name = nx_arena_strndup(&r->scratch, nm, nn);
	nx_comp *prev = ht_get(&P->comps, name, nn);
	if (prev)
		return rd_err(r, namepos, "duplicate computation name '%s' (first defined on line %d)",
		              name, prev->line);
	nx_comp *c = nx_comp_new(P->m, name);
	ht_put(&P->comps, c->name, nn, c);
	rd_linecol(r, namepos, &c->line, &c->col);
	c->is_entry = is_entry;
	if (is_entry) {
		if (P->m->entry)
			return rd_err(r, namepos,
			              "more than one ENTRY computation (the first is '%s' on line %d)",
			              P->m->entry->name, P->m->entry->line);
		P->m->entry = c;
	}
	if (rd_accept(r, '(')) {
		/* signature: (p: shape, ...) -> shape; the parameters themselves
		 * are the parameter instructions */
		if (!rd_accept(r, ')')) {
			for (;;) {
				const char *pn;
				size_t pnn;
				nx_shape *ps;
				if (!rd_name(r, &pn, &pnn)) {
					char buf[64];
					if (r->failed)
						return false;
					return rd_err(r, r->pos, "expected parameter name, found %s",
					              found_text(r, buf, sizeof buf));
				}
				if (!rd_expect(r, ':', "after the parameter name") || !rd_shape(r, &ps))
					return false;
				if (rd_accept(r, ')'))
					break;
				if (!rd_expect(r, ',', "between parameters"))
					return false;
			}
		}
		if (!rd_ws(r))
			return false;
		if (!rd_expect_arrow(r, "before the result shape"))
			return false;
		nx_shape *res;
		if (!rd_shape(r, &res))
			return false;
	}
	while (rd_accept(r, ',')) {
		const char *k;
		size_t kn;
		size_t kp = r->pos;
		if (!rd_name(r, &k, &kn))
			return rd_err(r, kp, "expected attribute name after ','");
		if (!rd_expect(r, '=', "after attribute name"))
			return false;
		if (kn == 16 && memcmp(k, "execution_thread", 16) == 0) {
			if (!rd_string(r, r->a, &c->execution_thread))
				return false;
		} else {
			const char *raw;
			if (!rd_raw_value(r, &raw))
				return false;
		}
	}
	if (!rd_expect(r, '{', "to start the computation body"))
		return false;
	nx_strmap_clear(&P->insts);
	for (;;) {
		if (!rd_ws(r))
			return false;
		if (rd_eof(r))
			return rd_err(r, r->len, "expected '}' at the end of computation '%s', found end of file",
			              c->name);
		if (rd_peek(r) == '}') {
			r->pos++;
			break;
		}
		if (!parse_inst(P, c))
			return false;
	}
	/* XLA writes the thread after the body: "}, execution_thread=\"x\"". */
	size_t after = r->pos;
	if (!rd_ws(r))
		return false;
	if (rd_peek(r) == ',' && r->pos + 1 < r->len) {
		r->pos++;
		if (!rd_ws(r))
			return false;
		const char *k;
		size_t kn, kp = r->pos;
		if (rd_name(r, &k, &kn) && kn == 16 && memcmp(k, "execution_thread", 16) == 0) {
			if (!rd_expect(r, '=', "after execution_thread") ||
			    !rd_string(r, r->a, &c->execution_thread))
				return false;
		} else {
			return rd_err(r, kp, "expected execution_thread after computation '%s'",
			              c->name);
		}
	} else {
		r->pos = after;
	}
	if (c->ninsts == 0)
		return rd_err(r, r->pos - 1, "computation '%s' has no instructions", c->name);
	if (!c->root)
		c->root = c->insts[c->ninsts - 1];
	for (int k = 0; k < c->nparams; k++)
		if (!c->params[k])
			return rd_err(r, namepos, "computation '%s' has no parameter %d (parameters must be numbered 0..%d)",
			              c->name, k, c->nparams - 1);
	return resolve_refs(P, c) && topo_order(P, c);
}

static nx_comp *find_comp(parser *P, rd_ref *ref)
{
	nx_comp *c = ht_get(&P->comps, ref->name, strlen(ref->name));
	if (!c)
		rd_err(&P->r, ref->pos, "computation '%s' is not defined", ref->name);
	return c;
}

static bool resolve_called(parser *P)
{
	nx_rd *r = &P->r;
	nx_comp *buf[2];
	for (int ci = 0; ci < P->m->ncomps; ci++) {
		nx_comp *c = P->m->comps[ci];
		for (int k = 0; k < c->ninsts; k++) {
			nx_inst *i = c->insts[k];
			rd_pending *pd = i->aux;
			r->inst = i->name;
			if (pd->has_branches || pd->has_true || pd->has_false) {
				if (pd->has_branches) {
					nx_comp **v = nx_arena_alloc(&r->scratch, sizeof(nx_comp *) * (size_t)(pd->nbranches + 1));
					for (int b = 0; b < pd->nbranches; b++)
						if (!(v[b] = find_comp(P, &pd->branches[b])))
							return false;
					nx_inst_set_called(i, v, pd->nbranches);
				} else {
					if (!pd->has_true || !pd->has_false)
						return rd_err(r, pd->pos, "conditional needs both true_computation and false_computation");
					if (!(buf[0] = find_comp(P, &pd->tcomp)) || !(buf[1] = find_comp(P, &pd->fcomp)))
						return false;
					nx_inst_set_called(i, buf, 2);
				}
			} else if (pd->has_cond || pd->has_body) {
				if (!pd->has_cond || !pd->has_body)
					return rd_err(r, pd->pos, "while needs both condition and body");
				if (!(buf[0] = find_comp(P, &pd->cond)) || !(buf[1] = find_comp(P, &pd->body)))
					return false;
				nx_inst_set_called(i, buf, 2);
			} else if (pd->has_select || pd->has_scatter) {
				if (!pd->has_select || !pd->has_scatter)
					return rd_err(r, pd->pos, "select-and-scatter needs both select and scatter");
				if (!(buf[0] = find_comp(P, &pd->select)) || !(buf[1] = find_comp(P, &pd->scatter)))
					return false;
				nx_inst_set_called(i, buf, 2);
			} else if (pd->nto_apply) {
				nx_comp **v = nx_arena_alloc(&r->scratch, sizeof(nx_comp *) * (size_t)pd->nto_apply);
				for (int b = 0; b < pd->nto_apply; b++)
					if (!(v[b] = find_comp(P, &pd->to_apply[b])))
						return false;
				nx_inst_set_called(i, v, pd->nto_apply);
			}
			for (int b = 0; b < i->ncalled; b++)
				if (i->called[b] == c)
					return rd_err(r, pd->pos, "computation '%s' calls itself", c->name);
		}
	}
	r->inst = NULL;
	return true;
}

/* XLA's parser also takes a module without its "HloModule" line when the
 * text starts with ENTRY or with a computation: a name then '(' or '{'. */
static bool starts_computation(nx_rd *r)
{
	size_t save = r->pos;
	bool ok = at_keyword(r, "ENTRY");
	if (!ok) {
		const char *nm;
		size_t nn;
		ok = rd_name(r, &nm, &nn) && rd_ws(r) && (rd_peek(r) == '(' || rd_peek(r) == '{');
	}
	r->pos = save;
	r->failed = false;
	return ok;
}

/* The module name of a headerless file: its base name up to the first '.'
 * ("model.hlo.txt" -> "model"), or "module". */
static void stem_of(const char *file, const char **nm, size_t *nn)
{
	if (!file || !strcmp(file, "-"))
		return;
	const char *b = strrchr(file, '/');
	b = b ? b + 1 : file;
	size_t n = 0;
	while (b[n] && b[n] != '.' && (rd_is_name_char(b[n]) || b[n] == '-'))
		n++;
	if (n) {
		*nm = b;
		*nn = n;
	}
}

static bool parse_module(parser *P)
{
	nx_rd *r = &P->r;
	if (!rd_check_utf8(r) || !rd_ws(r))
		return false;
	if (rd_eof(r))
		return rd_err(r, 0, "empty file: expected 'HloModule'");
	size_t hp = r->pos;
	bool header = at_keyword(r, "HloModule");
	if (!header && !starts_computation(r)) {
		char buf[64];
		return rd_err(r, hp, "expected 'HloModule' or a computation at the start of the file, found %s",
		              found_text(r, buf, sizeof buf));
	}
	const char *nm = "module";
	size_t nn = 6;
	if (header && !rd_name(r, &nm, &nn)) {
		char buf[64];
		if (r->failed)
			return false;
		return rd_err(r, r->pos, "expected module name after 'HloModule', found %s",
		              found_text(r, buf, sizeof buf));
	}
	if (!header)
		stem_of(r->file, &nm, &nn);
	P->m = nx_module_new(nx_arena_strndup(&r->scratch, nm, nn));
	r->a = &P->m->arena;
	P->m->file = r->file ? nx_arena_strdup(r->a, r->file) : NULL;
	while (header && rd_accept(r, ',')) {
		const char *k;
		size_t kn;
		size_t kp = r->pos;
		if (!rd_name(r, &k, &kn))
			return rd_err(r, kp, "expected attribute name after ','");
		if (!rd_expect(r, '=', "after attribute name"))
			return false;
		if (!rd_module_attr(r, P->m, k, kn, kp))
			return false;
	}
	if (r->failed || !rd_stack_tables(r, P->m))
		return false;
	for (;;) {
		if (!rd_ws(r))
			return false;
		if (rd_eof(r))
			break;
		if (!parse_comp(P))
			return false;
	}
	nx_module *m = P->m;
	if (m->ncomps == 0)
		return rd_err(r, r->len, "expected a computation after the module header, found end of file");
	if (!resolve_called(P))
		return false;
	if (!m->entry) {
		nx_comp *last = m->comps[m->ncomps - 1];
		for (int ci = 0; ci < m->ncomps; ci++)
			for (int k = 0; k < m->comps[ci]->ninsts; k++) {
				nx_inst *i = m->comps[ci]->insts[k];
				for (int b = 0; b < i->ncalled; b++)
					if (i->called[b] == last)
						return rd_err(r, ((rd_pending *)i->aux)->pos,
						              "missing ENTRY: the last computation '%s' is called here, so it cannot be the entry",
						              last->name);
			}
		m->entry = last;
		last->is_entry = true;
	}
	return true;
}

nx_module *nx_read_text(const char *text, size_t len, const char *file, nx_diag *d)
{
	parser P = {0};
	P.r.s = text ? text : "";
	P.r.len = text ? len : 0;
	P.r.file = file;
	P.r.d = d;
	P.r.lc_line = 1;
	nx_arena_init(&P.r.scratch);
	P.r.a = &P.r.scratch;
	bool ok = parse_module(&P) && !P.r.failed;
	if (P.m)
		for (int ci = 0; ci < P.m->ncomps; ci++)
			for (int k = 0; k < P.m->comps[ci]->ninsts; k++)
				P.m->comps[ci]->insts[k]->aux = NULL;
	nx_strmap_free(&P.insts);
	nx_strmap_free(&P.comps);
	nx_arena_free(&P.r.scratch);
	if (!ok) {
		nx_module_free(P.m);
		return NULL;
	}
	return P.m;
}
