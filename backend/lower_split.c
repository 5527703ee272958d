/* backend/lower_split.c — a fusion that no kernel takes whole (an output
 * fusion: a dot or a reduction with an elementwise epilogue beyond the fused
 * kernel's SBUF) split into as few kernels as possible instead of one per
 * body instruction (docs/lowering.md, "Split fusions").
 *
 * The body's instructions are sorted into
 *   - free: constants and broadcasts of parameters or constants (of one
 *     element or along the trailing axes; of any shape when `wide`), cloned
 *     into every region that reads them, never a value of their own in HBM
 *     (the driver still gets them as nodes, lowered only when something
 *     outside a region reads them);
 *   - elementwise: one-instruction elementwise ops (nx_l_elem_map),
 *     reshape, bitcast, copy, convert, broadcast;
 *   - heavy: everything else (dot, reduce, transpose, ...), a node of its own.
 * Elementwise instructions take a level, the number of heavy instructions on
 * the longest path to them; the instructions of one level form a region,
 * made a synthetic fusion (clones of the instructions, fresh parameters for
 * what they read from outside the region, a tuple root when several of its
 * values leave it: read by a heavy instruction, by another region, or the
 * fusion's root). The nodes come out as: free instructions, the heavy ones
 * that read only parameters, then per level its region and the heavy ones
 * of that level. A region that no kernel takes whole, that computes nothing
 * (only reshapes and broadcasts), or of one op that saves no broadcast or
 * fits SBUF stays its instructions. When a region with `wide` broadcasts is
 * refused, the split is planned again with the broadcasts the fused loop
 * does not take as heavy nodes (materialized, read as inputs).
 * nx_l_merge_region inlines a region into the one fusion that reads it. */
#include "backend/lower.h"
#include "ir/map.h"

#include <stdlib.h>
#include <string.h>

bool nx_l_fusion_whole(const nx_lower *L, const nx_inst *f)
{
	return f->op == NX_OP_FUSION && f->ncalled == 1 &&
	       (nx_l_row_ok(L, f) || (f->noperands <= 8 && nx_l_fused_ok(L, f)) || nx_l_fused_loop_ok(L, f));
}

enum { K_PARAM, K_FREE, K_EW, K_HEAVY };

/* the fusion kind of every synthetic fusion (nx_l_is_region: by address) */
static const char region_kind[] = "kLoop";

bool nx_l_is_region(const nx_inst *i)
{
	return i->op == NX_OP_FUSION && i->a.fusion_kind == region_kind;
}

typedef struct split {
	nx_lower *L;
	const nx_inst *f;
	const nx_comp *b;
	nx_ptrmap ix; /* body instruction -> index */
	int *kind, *lvl;
	nx_lsplit *out;
	int capn, capm;
	int refused; /* regions that compute and that no kernel takes */
} split;

static int ix(const split *s, const nx_inst *i)
{
	return (int)nx_ptrmap_get(&s->ix, i, -1);
}

static void node(split *s, const nx_inst *i)
{
	nx_lsplit *o = s->out;
	if (o->nnode == s->capn) {
		s->capn = s->capn ? 2 * s->capn : 64;
		o->node = nx_arena_grow(&s->L->a, o->node, (size_t)o->nnode, (size_t)s->capn, sizeof *o->node);
	}
	o->node[o->nnode++] = i;
}

static void map(split *s, const nx_inst *from, const nx_inst *to)
{
	nx_lsplit *o = s->out;
	if (o->nmap == s->capm) {
		s->capm = s->capm ? 2 * s->capm : 16;
		o->from = nx_arena_grow(&s->L->a, o->from, (size_t)o->nmap, (size_t)s->capm, sizeof *o->from);
		o->to = nx_arena_grow(&s->L->a, o->to, (size_t)o->nmap, (size_t)s->capm, sizeof *o->to);
	}
	o->from[o->nmap] = from;
	o->to[o->nmap++] = to;
}

/* an instruction the streamed fused kernels take (elementwise, or one that
 * shares its operand's values) */
static bool elementwise(const nx_inst *i)
{
	if (!nx_shape_is_array(i->shape) || nx_lower_dtype(i->shape->type) < 0)
		return false;
	switch (i->op) {
	case NX_OP_RESHAPE: case NX_OP_BITCAST: case NX_OP_COPY: case NX_OP_BROADCAST:
		return true;
	default: {
		nx_lemap m;
		if (nx_l_family(i->op) != NX_LK_ELEMENTWISE || i->noperands < 1 || i->noperands > 3 ||
		    !nx_l_elem_map(i, &m))
			return false;
		/* float -> integer converts truncate through a row program */
		return i->op != NX_OP_CONVERT || !nx_type_is_float(i->operands[0]->shape->type) ||
		       nx_type_is_float(i->shape->type);
	}
	}
}

/* a broadcast along the result's trailing axes (a bias row), which the
 * fused loop keeps resident */
static bool row_broadcast(const nx_inst *i)
{
	const nx_shape *os = i->operands[0]->shape;
	int off = i->shape->rank - os->rank;
	if (off < 0 || i->a.dimensions.n != os->rank)
		return false;
	for (int j = 0; j < os->rank; j++)
		if (i->a.dimensions.v[j] != off + j || os->dims[j] != i->shape->dims[off + j])
			return false;
	return true;
}

static void classify(split *s, bool wide)
{
	const nx_comp *b = s->b;
	for (int k = 0; k < b->ninsts; k++) {
		const nx_inst *i = b->insts[k];
		int kd = K_HEAVY, l = -1;
		if (i->op == NX_OP_PARAMETER) {
			kd = K_PARAM;
		} else if (i->op == NX_OP_CONSTANT && nx_shape_is_array(i->shape)) {
			kd = K_FREE;
		} else if (i->op == NX_OP_BROADCAST && i->noperands == 1 && nx_shape_is_array(i->shape)) {
			int o = ix(s, i->operands[0]);
			bool one = nx_shape_elems(i->operands[0]->shape) == 1 || row_broadcast(i);
			if (o >= 0 && (s->kind[o] == K_PARAM || s->kind[o] == K_FREE) && (one || wide))
				kd = K_FREE;
			else if (one || wide)
				kd = K_EW;
		} else if (elementwise(i)) {
			kd = K_EW;
		}
		if (kd == K_EW || kd == K_HEAVY) {
			l = kd == K_EW ? 0 : -1;
			for (int j = 0; j < i->noperands; j++) {
				int o = ix(s, i->operands[j]);
				if (o < 0 || s->kind[o] == K_PARAM || s->kind[o] == K_FREE)
					continue;
				int lo = s->lvl[o] + (kd == K_EW && s->kind[o] == K_HEAVY);
				l = lo > l ? lo : l;
			}
		}
		s->kind[k] = kd;
		s->lvl[k] = l;
	}
}

/* computes something (not only views, broadcasts and constants) */
static bool computes(const nx_inst *i)
{
	switch (i->op) {
	case NX_OP_RESHAPE: case NX_OP_BITCAST: case NX_OP_COPY: case NX_OP_BROADCAST: case NX_OP_CONSTANT:
		return false;
	case NX_OP_CONVERT:
		return nx_lower_dtype(i->shape->type) != nx_lower_dtype(i->operands[0]->shape->type);
	default:
		return true;
	}
}

/* A synthetic fusion under construction: clones of source instructions,
 * parameters for the outer values they read (one per value). */
typedef struct region {
	nx_lower *L;
	const split *s; /* a split's region r; NULL: every instruction not mapped yet is cloned */
	int r;
	nx_ptrmap cm; /* source instruction -> clone or parameter */
	nx_ptrmap om; /* outer value -> parameter */
	nx_comp *c;
	const nx_inst **in;
	int nin, capin;
} region;

static void region_init(region *g, nx_lower *L, const split *s, int r, const char *name, const nx_comp *like)
{
	memset(g, 0, sizeof *g);
	g->L = L, g->s = s, g->r = r;
	nx_ptrmap_init(&g->cm, 16);
	nx_ptrmap_init(&g->om, 8);
	g->c = nx_arena_alloc(&L->a, sizeof *g->c);
	g->c->name = name;
	g->c->module = like->module;
	g->c->execution_thread = like->execution_thread;
}

static void add_inst(region *g, nx_inst *i)
{
	nx_comp *c = g->c;
	if (c->ninsts == c->cap) {
		int nc = c->cap ? 2 * c->cap : 16;
		c->insts = nx_arena_grow(&g->L->a, c->insts, (size_t)c->ninsts, (size_t)nc, sizeof *c->insts);
		c->cap = nc;
	}
	c->insts[c->ninsts++] = i;
	i->parent = c;
}

/* the parameter that reads outer value o (the synthetic fusion's operand) */
static nx_inst *param(region *g, const nx_inst *o)
{
	nx_arena *a = &g->L->a;
	nx_inst *c = (nx_inst *)nx_ptrmap_get(&g->om, o, 0);
	if (c)
		return c;
	c = nx_arena_alloc(a, sizeof *c);
	c->op = NX_OP_PARAMETER;
	c->name = nx_arena_printf(a, "%s.in%d", g->c->name, g->nin);
	c->shape = o->shape;
	c->a.parameter_number = g->nin;
	c->a.async_wrapped = NX_OP_COUNT;
	if (g->nin == g->capin) {
		int nc = g->capin ? 2 * g->capin : 8;
		g->in = nx_arena_grow(a, g->in, (size_t)g->nin, (size_t)nc, sizeof *g->in);
		g->c->params = nx_arena_grow(a, g->c->params, (size_t)g->nin, (size_t)nc, sizeof *g->c->params);
		g->capin = nc;
	}
	g->in[g->nin] = o;
	g->c->params[g->nin++] = c;
	g->c->nparams = g->nin;
	add_inst(g, c);
	nx_ptrmap_put(&g->om, o, (intptr_t)c);
	return c;
}

/* the synthetic fusion's value for source instruction i: a clone (region
 * members, free instructions), or a parameter (read from outside) */
static nx_inst *clone(region *g, const nx_inst *i)
{
	nx_inst *c = (nx_inst *)nx_ptrmap_get(&g->cm, i, 0);
	if (c)
		return c;
	const split *s = g->s;
	int k = s ? ix(s, i) : 0;
	if (s && !(k >= 0 && (s->kind[k] == K_FREE || (s->kind[k] == K_EW && s->lvl[k] == g->r)))) {
		c = param(g, i);
	} else {
		c = nx_arena_alloc(&g->L->a, sizeof *c);
		*c = *i;
		c->operands = nx_arena_alloc(&g->L->a, sizeof *c->operands * (size_t)(i->noperands + 1));
		for (int j = 0; j < i->noperands; j++)
			c->operands[j] = clone(g, i->operands[j]);
		add_inst(g, c);
	}
	nx_ptrmap_put(&g->cm, i, (intptr_t)c);
	return c;
}

/* the fusion instruction of g with root `root`; diagnostics point at `at` */
static nx_inst *finish(region *g, nx_inst *root, const nx_inst *at, const nx_inst *like)
{
	nx_arena *a = &g->L->a;
	nx_ptrmap_free(&g->cm);
	nx_ptrmap_free(&g->om);
	nx_inst *f = nx_arena_alloc(a, sizeof *f);
	f->op = NX_OP_FUSION;
	f->name = g->c->name;
	f->parent = like->parent;
	f->line = at->line, f->col = at->col;
	f->a.async_wrapped = NX_OP_COUNT;
	f->a.fusion_kind = region_kind;
	f->operands = nx_arena_alloc(a, sizeof *f->operands * (size_t)(g->nin + 1));
	for (int k = 0; k < g->nin; k++)
		f->operands[k] = (nx_inst *)g->in[k];
	f->noperands = g->nin;
	f->called = nx_arena_alloc(a, sizeof *f->called);
	f->called[0] = g->c;
	f->ncalled = 1;
	g->c->root = root;
	f->shape = root->shape;
	return f;
}

/* whether member k's value leaves region r */
static bool leaves(const split *s, int k)
{
	const nx_comp *b = s->b;
	if (b->insts[k] == b->root)
		return true;
	for (int j = k + 1; j < b->ninsts; j++) {
		const nx_inst *u = b->insts[j];
		if (s->kind[j] == K_EW && s->lvl[j] == s->lvl[k])
			continue;
		for (int o = 0; o < u->noperands; o++)
			if (u->operands[o] == b->insts[k])
				return true;
	}
	return false;
}

/* the kind of a dot with its epilogue (nx_l_is_dot_epi: by address) */
static const char dot_epi_kind[] = "kOutput";

bool nx_l_is_dot_epi(const nx_inst *i)
{
	return i->op == NX_OP_FUSION && i->a.fusion_kind == dot_epi_kind;
}

/* region F (a synthetic fusion) with its operand k, dot D, computed inside:
 * D's operands and F's others as parameters */
static nx_inst *absorb(nx_lower *L, const nx_inst *F, int k, const nx_inst *D)
{
	const nx_comp *fb = F->called[0];
	region g;
	region_init(&g, L, NULL, 0, nx_arena_printf(&L->a, "%s.d", F->name), fb);
	for (int j = 0; j < D->noperands; j++)
		nx_ptrmap_put(&g.cm, D->operands[j], (intptr_t)param(&g, D->operands[j]));
	nx_inst *dc = clone(&g, D);
	for (int p = 0; p < fb->nparams; p++)
		if (fb->params[p])
			nx_ptrmap_put(&g.cm, fb->params[p], (intptr_t)(p == k ? dc : param(&g, F->operands[p])));
	for (int j = 0; j < fb->ninsts; j++)
		clone(&g, fb->insts[j]);
	nx_inst *m = finish(&g, clone(&g, fb->root), F, F);
	m->a.fusion_kind = dot_epi_kind;
	return m;
}

bool nx_l_body_live(const nx_comp *c, const nx_inst *i)
{
	const nx_comp *b = i->parent;
	if (!b || b == c || !b->root)
		return true;
	int n = 0, cap = (b->ninsts + 1) * 4;
	const nx_inst **st = nx_xrealloc(NULL, sizeof *st * (size_t)cap);
	bool live = false;
	st[n++] = b->root;
	while (n && !live) { /* (bodies are small) */
		const nx_inst *u = st[--n];
		live = u == i;
		for (int o = 0; o < u->noperands && n < cap; o++)
			if (u->operands[o]->parent == b)
				st[n++] = u->operands[o];
	}
	free(st);
	return live;
}

const nx_inst *nx_l_gte(nx_lower *L, const nx_inst *f, int t)
{
	nx_inst *g = nx_arena_alloc(&L->a, sizeof *g);
	g->op = NX_OP_GET_TUPLE_ELEMENT;
	g->name = nx_arena_printf(&L->a, "%s.%d", f->name, t);
	g->a.tuple_index = t;
	g->shape = f->shape->tuple[t];
	g->a.async_wrapped = NX_OP_COUNT;
	g->operands = nx_arena_alloc(&L->a, sizeof *g->operands);
	g->operands[0] = (nx_inst *)f;
	g->noperands = 1;
	g->parent = f->parent;
	return g;
}

const nx_inst *nx_l_dot_multi_at(nx_lower *L, const nx_comp *c, const nx_inst *const *v, int nv, const nx_inst *m,
                                 const nx_inst *(*res)(nx_lower *, const nx_inst *), int *at, const nx_inst **dot)
{
	for (int k = 0; k < m->noperands; k++) {
		const nx_inst *d = res(L, m->operands[k]);
		int a = -1, uses = 0, n = 0;
		for (int j = 0; j < nv; j++)
			a = v[j] == d ? j : a;
		for (int j = 0; j < c->ninsts; j++)
			for (int o = 0; o < c->insts[j]->noperands; o++)
				uses += c->insts[j]->operands[o] == m->operands[k];
		for (int j = a + 1; a >= 0 && j < nv; j++)
			for (int o = 0; o < v[j]->noperands; o++)
				n += res(L, v[j]->operands[o]) == d && nx_l_body_live(c, v[j]);
		for (int o = 0; o < m->noperands; o++)
			n += o != k && res(L, m->operands[o]) == d;
		const nx_inst *mm = d->op == NX_OP_DOT && a >= 0 && uses > 1 && !n ? nx_l_dot_multi(L, m, k, d) : NULL;
		if (mm) {
			*at = a, *dot = d;
			return mm;
		}
	}
	return NULL;
}

/* Fusion F (one kernel, an elementwise loop) reading at operand k dot D,
 * which other instructions read too: one synthetic fusion computing D and
 * F's body, its root a tuple of F's outputs and then D's value, when the
 * dot kernel can apply F as a multi-output epilogue (kernels/dot_epi.c:
 * the dot's tiles stored, and F's values from them); NULL otherwise. */
const nx_inst *nx_l_dot_multi(nx_lower *L, const nx_inst *F, int k, const nx_inst *D)
{
	if (D->op != NX_OP_DOT || !nx_shape_is_array(D->shape) || nx_shape_elems(D->shape) < ((int64_t)1 << 18) ||
	    F->op != NX_OP_FUSION || F->ncalled != 1 || F->noperands != F->called[0]->nparams ||
	    k >= F->called[0]->nparams || !F->called[0]->params[k])
		return NULL;
	const nx_comp *fb = F->called[0];
	for (int j = 0; j < fb->ninsts; j++)
		if (fb->insts[j]->ncalled || fb->insts[j]->op == NX_OP_DOT)
			return NULL;
	nx_inst *m = absorb(L, F, k, D);
	nx_comp *mb = m->called[0];
	nx_arena *a = &L->a;
	const nx_inst *r = mb->root, *dc = NULL;
	for (int j = 0; j < mb->ninsts; j++)
		dc = mb->insts[j]->op == NX_OP_DOT ? mb->insts[j] : dc;
	int n = r->op == NX_OP_TUPLE ? r->noperands : 1;
	if (n + 1 > NX_LEPI_XO + 1 || !dc)
		return NULL;
	nx_inst *t = nx_arena_alloc(a, sizeof *t);
	t->op = NX_OP_TUPLE;
	t->name = nx_arena_printf(a, "%s.out", mb->name);
	t->a.async_wrapped = NX_OP_COUNT;
	t->operands = nx_arena_alloc(a, sizeof *t->operands * (size_t)(n + 1));
	nx_shape **shp = nx_arena_alloc(a, sizeof *shp * (size_t)(n + 1));
	for (int j = 0; j < n; j++)
		t->operands[j] = r->op == NX_OP_TUPLE ? r->operands[j] : (nx_inst *)r;
	t->operands[n] = (nx_inst *)dc;
	for (int j = 0; j <= n; j++)
		shp[j] = t->operands[j]->shape;
	t->noperands = n + 1;
	t->shape = nx_shape_tuple(a, n + 1, shp);
	t->parent = mb;
	if (r->op == NX_OP_TUPLE) { /* in place of F's tuple */
		for (int j = 0; j < mb->ninsts; j++)
			mb->insts[j] = mb->insts[j] == r ? t : mb->insts[j];
	} else {
		if (mb->ninsts == mb->cap) {
			int nc = mb->cap ? 2 * mb->cap : 16;
			mb->insts = nx_arena_grow(a, mb->insts, (size_t)mb->ninsts, (size_t)nc, sizeof *mb->insts);
			mb->cap = nc;
		}
		mb->insts[mb->ninsts++] = t;
	}
	mb->root = t;
	m->shape = t->shape;
	return nx_l_dot_epi_ok(L, m, NULL, NULL) ? m : NULL;
}

/* A dot read only by one region (a single-output synthetic fusion) goes
 * into it when the dot kernel can apply the region as its epilogue
 * (kernels/dot_epi.c): one node instead of two, and the dot's result never
 * goes through HBM. */
/* whether the fusion's result goes to one fusion that one kernel takes
 * (the driver merges a region into it, which the dot's epilogue would
 * prevent: the region then costs that kernel nothing) */
static bool merges_later(const split *s)
{
	const nx_comp *c = s->f->parent;
	const nx_inst *u = NULL;
	int n = 0;
	for (int j = 0; c && j < c->ninsts; j++)
		for (int q = 0; q < c->insts[j]->noperands; q++)
			if (c->insts[j]->operands[q] == s->f)
				u = c->insts[j], n++;
	return n == 1 && u != c->root && nx_l_fusion_whole(s->L, u);
}

/* region F (reading dot D at operand k) with D inside, when that is a dot
 * epilogue: D is read only by F's members; root: F computes the fusion's
 * result (left to the driver's merge when one fusion kernel reads it) */
static nx_inst *epi_of(split *s, const nx_inst *F, int k, bool root)
{
	const nx_comp *b = s->b;
	const nx_inst *D = F->operands[k];
	int d = ix(s, D);
	/* small dots take the unrolled kernel (and a fused kernel the whole
	 * fusion), never the dot-loop that applies epilogues */
	if (d < 0 || D->op != NX_OP_DOT || s->kind[d] != K_HEAVY || D == b->root || (root && merges_later(s)) ||
	    nx_shape_elems(D->shape) < ((int64_t)1 << 18) || !nx_l_fusion_whole(s->L, F))
		return NULL;
	int lv = -2;
	for (int j = d + 1; j < b->ninsts; j++)
		for (int q = 0; q < b->insts[j]->noperands; q++)
			if (b->insts[j]->operands[q] == D) {
				if (s->kind[j] != K_EW || (lv != -2 && lv != s->lvl[j]))
					return NULL;
				lv = s->lvl[j];
			}
	nx_inst *m = absorb(s->L, F, k, D);
	return nx_l_dot_epi_ok(s->L, m, NULL, NULL) ? m : NULL;
}

static void dot_epilogues(split *s)
{
	const nx_comp *b = s->b;
	nx_lsplit *o = s->out;
	for (int a = 0; a < o->nnode; a++) {
		const nx_inst *F = o->node[a];
		if (!nx_l_is_region(F) || !nx_shape_is_array(F->shape) || F->noperands != F->called[0]->nparams)
			continue;
		bool root = false;
		for (int j = 0; j < o->nmap; j++)
			root |= o->to[j] == F && o->from[j] == b->root;
		for (int k = 0; k < F->noperands; k++) {
			int dn = -1;
			for (int j = 0; j < a; j++)
				dn = o->node[j] == F->operands[k] ? j : dn;
			nx_inst *m = dn < 0 ? NULL : epi_of(s, F, k, root);
			if (!m)
				continue;
			for (int j = 0; j < o->nmap; j++)
				if (o->to[j] == F)
					o->to[j] = m;
			o->node[a] = m;
			memmove(&o->node[dn], &o->node[dn + 1], sizeof *o->node * (size_t)(o->nnode - dn - 1));
			o->nnode--;
			a--;
			break;
		}
	}
}

static void do_region(split *s, int r)
{
	const nx_comp *b = s->b;
	nx_arena *a = &s->L->a;
	int nm = 0, nout = 0, ncomp = 0, nfree = 0, first = -1;
	for (int k = 0; k < b->ninsts; k++)
		if (s->kind[k] == K_EW && s->lvl[k] == r) {
			nm++;
			ncomp += computes(b->insts[k]);
			if (leaves(s, k) && nout++ == 0)
				first = k;
			for (int j = 0; j < b->insts[k]->noperands; j++) {
				int o = ix(s, b->insts[k]->operands[j]);
				nfree += o >= 0 && s->kind[o] == K_FREE && b->insts[o]->op == NX_OP_BROADCAST;
			}
		}
	bool comp = ncomp > 0;
	if (!nm)
		return;
	const nx_inst *F = NULL;
	if (comp && nout > 0) {
		region g;
		region_init(&g, s->L, s, r, nx_arena_printf(a, "%s.e%d", s->f->name, r), b);
		nx_inst **outs = nx_arena_alloc(a, sizeof *outs * (size_t)nout);
		nx_shape **shp = nx_arena_alloc(a, sizeof *shp * (size_t)nout);
		int no = 0;
		for (int k = 0; k < b->ninsts; k++)
			if (s->kind[k] == K_EW && s->lvl[k] == r) {
				nx_inst *c = clone(&g, b->insts[k]);
				if (leaves(s, k))
					outs[no] = c, shp[no++] = c->shape;
			}
		nx_inst *root = outs[0];
		if (nout > 1) {
			nx_inst *t = nx_arena_alloc(a, sizeof *t);
			t->op = NX_OP_TUPLE;
			t->name = nx_arena_printf(a, "%s.out", g.c->name);
			t->a.async_wrapped = NX_OP_COUNT;
			t->operands = outs;
			t->noperands = nout;
			t->shape = nx_shape_tuple(a, nout, shp);
			add_inst(&g, t);
			root = t;
		}
		/* diagnostics point at the region's first value that leaves it */
		nx_inst *f = finish(&g, root, b->insts[first]->line ? b->insts[first] : s->f, s->f);
		/* one op: its own kernel does as well, unless a broadcast is saved
		 * (and in SBUF-sized values its own kernel keeps its result
		 * resident for the next; the fused kernel stores it) */
		if (nx_l_fusion_whole(s->L, f) && (ncomp > 1 || (nfree > 0 && nx_l_fused_loop_ok(s->L, f))))
			F = f;
		/* or the epilogue of a dot (dot_epilogues) */
		for (int k = 0; !F && nout == 1 && k < f->noperands; k++)
			if (epi_of(s, f, k, b->insts[first] == b->root))
				F = f;
		/* or the fusion's result, left to the driver's merge into the one
		 * fusion kernel that reads it (merges_later): as a node of its own
		 * it would be an elementwise kernel */
		if (!F && nout == 1 && b->insts[first] == b->root && merges_later(s) && nx_l_fusion_whole(s->L, f))
			F = f;
	}
	if (!F) {
		s->refused += comp && nout > 0;
		for (int k = 0; k < b->ninsts; k++)
			if (s->kind[k] == K_EW && s->lvl[k] == r)
				node(s, b->insts[k]);
		return;
	}
	node(s, F);
	int no = 0;
	for (int k = 0; k < b->ninsts; k++) {
		if (s->kind[k] != K_EW || s->lvl[k] != r || !leaves(s, k))
			continue;
		if (nout == 1) {
			map(s, b->insts[k], F);
			continue;
		}
		nx_inst *e = nx_arena_alloc(a, sizeof *e);
		e->op = NX_OP_GET_TUPLE_ELEMENT;
		e->name = nx_arena_printf(a, "%s.%d", F->name, no);
		e->shape = F->shape->tuple[no];
		e->a.tuple_index = no++;
		e->a.async_wrapped = NX_OP_COUNT;
		e->operands = nx_arena_alloc(a, sizeof *e->operands);
		e->operands[0] = (nx_inst *)F;
		e->noperands = 1;
		e->parent = F->parent;
		node(s, e);
		map(s, b->insts[k], e);
	}
}

const nx_inst *nx_l_dot_epi_region(nx_lower *L, const nx_inst *f)
{
	const nx_comp *fb = f->called[0];
	const nx_inst *D = NULL;
	for (int j = 0; j < fb->ninsts; j++)
		D = fb->insts[j]->op == NX_OP_DOT ? fb->insts[j] : D;
	if (!D || fb->nparams != f->noperands)
		return NULL;
	region g;
	region_init(&g, L, NULL, 0, nx_arena_printf(&L->a, "%s.r", f->name), fb);
	for (int p = 0; p < fb->nparams; p++)
		if (fb->params[p] && !nx_l_dot_epi_operand(f, p))
			nx_ptrmap_put(&g.cm, fb->params[p], (intptr_t)param(&g, f->operands[p]));
	nx_ptrmap_put(&g.cm, D, (intptr_t)param(&g, D));
	for (int j = 0; j < fb->ninsts; j++)
		if (fb->insts[j] != D && !(fb->insts[j]->op == NX_OP_PARAMETER))
			clone(&g, fb->insts[j]);
	nx_inst *r = finish(&g, clone(&g, fb->root), f, f);
	return r;
}

static bool plan(split *s, bool wide)
{
	const nx_comp *b = s->b;
	memset(s->out, 0, sizeof *s->out);
	s->capn = s->capm = s->refused = 0;
	classify(s, wide);
	int top = -1, nr = 0;
	for (int k = 0; k < b->ninsts; k++) {
		top = s->lvl[k] > top ? s->lvl[k] : top;
		nr += s->kind[k] == K_EW && computes(b->insts[k]);
	}
	if (!nr)
		return false;
	for (int k = 0; k < b->ninsts; k++)
		if (s->kind[k] == K_FREE)
			node(s, b->insts[k]);
	for (int r = -1; r <= top; r++) {
		if (r >= 0)
			do_region(s, r);
		for (int k = 0; k < b->ninsts; k++)
			if (s->kind[k] == K_HEAVY && s->lvl[k] == r)
				node(s, b->insts[k]);
	}
	dot_epilogues(s);
	return true;
}

bool nx_l_split_fusion(nx_lower *L, const nx_inst *f, nx_lsplit *out)
{
	if (f->op != NX_OP_FUSION || f->ncalled != 1 || !f->called[0]->root)
		return false;
	const nx_comp *b = f->called[0];
	for (int k = 0; k < b->ninsts; k++)
		if (b->insts[k]->op == NX_OP_FUSION || (b->insts[k]->ncalled && b->insts[k]->op != NX_OP_REDUCE))
			return false; /* nested computations: flattened as before */
	split s = {L, f, b, {0}, NULL, NULL, out, 0, 0, 0};
	nx_ptrmap_init(&s.ix, (size_t)b->ninsts);
	for (int k = 0; k < b->ninsts; k++)
		nx_ptrmap_put(&s.ix, b->insts[k], k);
	s.kind = calloc((size_t)b->ninsts + 1, sizeof *s.kind);
	s.lvl = calloc((size_t)b->ninsts + 1, sizeof *s.lvl);
	bool ok = plan(&s, true);
	if (ok && s.refused)
		ok = plan(&s, false);
	free(s.kind);
	free(s.lvl);
	nx_ptrmap_free(&s.ix);
	return ok;
}

/* Consumer c (a fusion one kernel takes) reads at operand k region r
 * (a synthetic fusion with an array root) and nothing else reads r: one
 * synthetic fusion computing c's body with r's body in place of parameter
 * k, so r's result never goes through HBM. NULL when no kernel takes it
 * whole. */
const nx_inst *nx_l_merge_region(nx_lower *L, const nx_inst *c, int k, const nx_inst *r)
{
	const nx_comp *cb = c->called[0], *rb = r->called[0];
	if (!nx_l_is_region(r) || !nx_shape_is_array(r->shape) || k >= cb->nparams || !cb->params[k] ||
	    cb->nparams != c->noperands || rb->nparams != r->noperands)
		return NULL;
	for (int j = 0; j < cb->ninsts; j++)
		if (cb->insts[j]->op == NX_OP_FUSION)
			return NULL;
	region g;
	region_init(&g, L, NULL, 0, nx_arena_printf(&L->a, "%s.m", c->name), cb);
	for (int q = 0; q < rb->nparams; q++)
		nx_ptrmap_put(&g.cm, rb->params[q], (intptr_t)param(&g, r->operands[q]));
	nx_inst *rv = clone(&g, rb->root);
	for (int p = 0; p < cb->nparams; p++)
		nx_ptrmap_put(&g.cm, cb->params[p], (intptr_t)(p == k ? rv : param(&g, c->operands[p])));
	for (int j = 0; j < cb->ninsts; j++)
		clone(&g, cb->insts[j]);
	nx_inst *m = finish(&g, clone(&g, cb->root), c, c);
	m->a.fusion_kind = c->a.fusion_kind; /* not a region: merged no further */
	return nx_l_fusion_whole(L, m) ? m : NULL;
}
