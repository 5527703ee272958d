/* passes/fusion_recompute.c — values a kernel would write to HBM only for
 * another kernel to read them back, recomputed by that reader instead
 * (XLA's producer duplication, after the kernels are formed; docs/passes.md,
 * "Recomputation by readers").
 *
 * A candidate is an output v of kernel A read by kernel B that is a cheap
 * function (float elementwise ops, same-type converts, broadcasts: ACT/DVE
 * work per element) of values B reads anyway or could read for fewer
 * bytes: the GELU forward writing f*f, tanh(u), 1+tanh(u), f/2 next to gelu
 * for the backward, which needs only f to recompute them; a layer norm
 * writing broadcast gamma and its rsqrt row broadcast for the backward.
 *
 * v's cone for B: the members of A (and, as an option, of a matmul kernel's
 * epilogue: B reads the matmul result, written anyway, and the bias)
 * reached from v through such ops (at most CONE_MAX), stopping at leaves:
 * values B reads already, values outside, members that are not cheap (a
 * reduction: it becomes an output of its kernel). The decision is by HBM
 * bytes: tentatively B recomputes the cone, and the change in bytes is
 *   + leaves B did not read before (+ their writes when they were not
 *     outputs; + second_reader: a large matmul epilogue that no longer
 *     merges into its one reader)
 *   - cone values B no longer reads
 *   - cone values no longer written (no reader outside their kernel left)
 *   + one byte per element of each recomputed op (engine time).
 * Kept when it saves MIN_SAVING or more: all candidates of A together
 * first, then one value for all its readers (its write goes only when every
 * reader recomputes it), then per reader; two rounds (a cone accepted in B
 * makes its leaves free for the next value).
 * B must stay one backend kernel (open_kernel, cheap_in, users_take): a row
 * kernel whose rows fit its SBUF budget, every recomputed instruction a row
 * member; or a kernel of float values, recomputed values of v's element
 * count, broadcasts of a scalar or along the trailing dims; no
 * transcendental in a matmul kernel (its epilogue runs on DVE or Pool). KERNEL_MAX
 * bounds the instructions added to one kernel. Recomputing only removes
 * kernel-graph edges or adds edges leaf -> B where a path leaf -> A -> B
 * existed, so the kernel graph stays acyclic. */
#include "passes/fusion.h"

#include <stdlib.h>
#include <string.h>

enum { CONE_MAX = 24, KERNEL_MAX = 64, ROUNDS = 2 };
/* Savings below this are not worth a change of kernel shapes: a loop
 * kernel over a few tiles (1 MiB each) is latency-bound, and a longer body
 * costs more there than the bytes save; small bodies are lowered whole or
 * flattened by size. */
#define MIN_SAVING ((int64_t)8 << 20)

typedef struct {
	const nx_fgraph *g;
	const bool *skip;
	nx_frecompute *r;
	int G;
	int *moff, *mem;        /* members per group */
	int *roff, *rd;         /* sorted external reads per group (at the start) */
	int **xr;               /* reads added by recomputation, per group */
	int *nxr, *capxr;
	int *added;             /* instructions recomputed into each group */
	int64_t *R, *C;         /* row space of a row kernel, R = 0 otherwise */
	int64_t *rows;          /* its values of R*C elements */
	bool *closed;           /* takes no recomputation (see open_kernel) */
	bool *mm;               /* the group holds a matmul */
	bool cross;             /* cones may enter matmul epilogues */
	int *mark, markv;
	int *stk, *cone, ncone, *leaf, nleaf;
	/* tentative additions, to undo: (position, group) pairs */
	int *tp, *tg, nt, capt;
} rc;

static void push(int **a, int *n, int *cap, int v)
{
	if (*n == *cap) {
		*cap = *cap ? 2 * *cap : 4;
		*a = realloc(*a, sizeof(int) * (size_t)*cap);
	}
	(*a)[(*n)++] = v;
}

bool nx_frecompute_has(const nx_frecompute *r, int p, int gi)
{
	if (!r || !r->into || p < 0 || p >= r->n)
		return false;
	for (int k = 0; k < r->ninto[p]; k++)
		if (r->into[p][k] == gi)
			return true;
	return false;
}

void nx_frecompute_free(nx_frecompute *r)
{
	if (r->into)
		for (int p = 0; p < r->n; p++)
			free(r->into[p]);
	free(r->into);
	free(r->ninto);
	free(r->capinto);
	free(r->extout);
	memset(r, 0, sizeof(*r));
}

bool nx_frecompute_output(const nx_fgraph *g, const nx_frecompute *r, int p)
{
	int gp = g->group[p];
	if (g->insts[p] == g->comp->root || (r && r->extout && r->extout[p]))
		return true;
	for (int k = g->uoff[p]; k < g->uoff[p + 1]; k++) {
		int u = g->users[k], gu = g->group[u];
		if (gu == gp)
			continue;
		if (gu < 0 || !nx_frecompute_has(r, p, gu) ||
		    nx_fusion_refusal(g->insts[p], g->insts[u], g->ctx) != NULL)
			return true;
	}
	return false;
}

static int cmp_int(const void *x, const void *y)
{
	return *(const int *)x - *(const int *)y;
}

static bool reads(const rc *s, int gi, int o)
{
	const int *lo = s->rd + s->roff[gi];
	int n = s->roff[gi + 1] - s->roff[gi];
	if (n && bsearch(&o, lo, (size_t)n, sizeof(int), cmp_int))
		return true;
	for (int k = 0; k < s->nxr[gi]; k++)
		if (s->xr[gi][k] == o)
			return true;
	return false;
}

/* May x be recomputed inside kernel b and stay in b's kernel class (v:
 * the element count of the value recomputed)? A row kernel computes per-row
 * values too; elsewhere (fused-loop, the split epilogue of a matmul or a
 * column reduction) every recomputed value has v's element count. */
static bool cheap_in(const rc *s, const nx_inst *x, int b, int64_t v)
{
	if (!nx_shape_is_array(x->shape) || !nx_fusion_fusible(x) || x->op == NX_OP_CUSTOM_CALL ||
	    nx_fusion_is_reduction(x) || nx_fusion_is_matmul(x) || !nx_type_is_float(x->shape->type))
		return false;
	if (s->R[b] > 0 ? !nx_fusion_row_member(x, s->R[b], s->C[b]) : nx_shape_elems(x->shape) != v)
		return false;
	/* a matmul kernel's epilogue runs on DVE or Pool, per output tile in
	 * the matmul kernel (backend/kernels/dot_epi.c): a transcendental
	 * (an ACT function) there makes it a loop of its own again, which
	 * reads the matmul result back; the value is read instead */
	if (s->mm[b] && (nx_opcode_flags(x->op) & NX_OPF_EXPENSIVE))
		return false;
	int64_t e;
	switch (x->op) {
	case NX_OP_CONVERT:
		/* a change of type stays where it is: the row and loop kernels
		 * take mixed-type bodies only in the forms autocast leaves */
		return x->operands[0]->shape->type == x->shape->type;
	case NX_OP_BROADCAST:
		/* a scalar, or a row along the leading dims (a row kernel's
		 * per-row values passed nx_fusion_row_member above) */
		return x->operands[0]->shape->rank == 0 || nx_fusion_bcast_run(x, false, &e) ||
		       (s->R[b] > 0 && nx_fusion_bcast_run(x, true, &e));
	default:
		return (nx_opcode_flags(x->op) & NX_OPF_ELEMENTWISE) && x->noperands <= 3;
	}
}

/* Do all of o's users in kernel b take a copy of o (nx_fusion_refusal)?
 * Only elementwise users and reductions: a recomputed value behind a
 * transpose or reshape in front of a matmul would be a region of its own
 * (written, then read by the matmul). */
static bool users_take(const rc *s, int o, int b)
{
	const nx_fgraph *g = s->g;
	for (int k = g->uoff[o]; k < g->uoff[o + 1]; k++) {
		const nx_inst *u = g->insts[g->users[k]];
		if (g->group[g->users[k]] != b)
			continue;
		if (!(nx_opcode_flags(u->op) & NX_OPF_ELEMENTWISE) && u->op != NX_OP_REDUCE)
			return false;
		if (nx_fusion_refusal(g->insts[o], u, g->ctx))
			return false;
	}
	return true;
}

static void add_into(rc *s, int p, int b)
{
	nx_frecompute *r = s->r;
	push(&r->into[p], &r->ninto[p], &r->capinto[p], b);
	if (s->nt == s->capt) {
		s->capt = s->capt ? 2 * s->capt : 64;
		s->tp = realloc(s->tp, sizeof(int) * (size_t)s->capt);
		s->tg = realloc(s->tg, sizeof(int) * (size_t)s->capt);
	}
	s->tp[s->nt] = p;
	s->tg[s->nt++] = b;
}

/* v's cone for kernel b (v in kernel a): interior members in s->cone,
 * leaves in s->leaf. False when over CONE_MAX. */
static bool cone(rc *s, int v, int a, int b)
{
	const nx_fgraph *g = s->g;
	int64_t ve = nx_shape_elems(g->insts[v]->shape);
	s->ncone = s->nleaf = 0;
	s->markv++;
	int sp = 0;
	s->stk[sp++] = v;
	s->mark[v] = s->markv;
	while (sp) {
		int x = s->stk[--sp];
		if (s->ncone == CONE_MAX)
			return false;
		s->cone[s->ncone++] = x;
		const nx_inst *xi = g->insts[x];
		for (int k = 0; k < xi->noperands; k++) {
			int o = nx_fpos(xi->operands[k]);
			if (s->mark[o] == s->markv)
				continue;
			s->mark[o] = s->markv;
			const nx_inst *oi = g->insts[o];
			bool copied = oi->op == NX_OP_CONSTANT
			                      ? nx_fusion_duplicable(oi, g->ctx)
			                      : nx_fusion_duplicable(oi, g->ctx) && !nx_fusion_refusal(oi, xi, g->ctx);
			if (copied || g->group[o] == b || nx_frecompute_has(s->r, o, b))
				continue; /* free: copied into every kernel, or b's own */
			int go = g->group[o];
			bool inside = go == a || (s->cross && go >= 0 && !s->skip[go] && s->mm[go]);
			if (inside && !reads(s, b, o) && cheap_in(s, oi, b, ve) &&
			    !nx_fusion_refusal(oi, xi, g->ctx) && users_take(s, o, b))
				s->stk[sp++] = o;
			else
				s->leaf[s->nleaf++] = o;
		}
	}
	return true;
}

/* Is x's write free: the result of a matmul of 1 MiB or more with an
 * epilogue, which the backend writes before the epilogue anyway (it splits
 * such kernels: backend/lower_split.c)? */
static bool written_anyway(const rc *s, int x)
{
	int gx = s->g->group[x];
	return gx >= 0 && nx_fusion_is_matmul(s->g->insts[x]) && s->moff[gx + 1] - s->moff[gx] > 1 &&
	       nx_shape_bytes(s->g->insts[x]->shape) >= (1 << 20);
}

/* Output bytes of the kernel members among the positions in list. */
static int64_t out_bytes(const rc *s, const int *list, int n)
{
	int64_t b = 0;
	for (int k = 0; k < n; k++)
		if (s->g->group[list[k]] >= 0 && !written_anyway(s, list[k]) &&
		    nx_frecompute_output(s->g, s->r, list[k]))
			b += nx_shape_bytes(s->g->insts[list[k]]->shape);
	return b;
}

/* The kernels and other instructions that read o from HBM. */
static int readers(const rc *s, int o)
{
	const nx_fgraph *g = s->g;
	int go = g->group[o], n = g->insts[o] == g->comp->root, last = -2;
	for (int k = g->uoff[o]; k < g->uoff[o + 1]; k++) {
		int u = g->users[k], gu = g->group[u];
		if (gu == go || (gu >= 0 && nx_frecompute_has(s->r, o, gu) &&
		                 !nx_fusion_refusal(g->insts[o], g->insts[u], g->ctx)))
			continue;
		if (gu < 0 || gu != last)
			n++;
		last = gu;
	}
	return n;
}

/* Extra bytes when kernel b starts reading o: a large matmul epilogue
 * (the backend writes the matmul result, then its elementwise epilogue as
 * a region) merges into the one kernel reading it (backend/lower.c,
 * merge_regions); a second reader makes the region write o and read the
 * matmul result again. */
static int64_t second_reader(const rc *s, int o)
{
	const nx_fgraph *g = s->g;
	int go = g->group[o];
	int64_t bytes = nx_shape_bytes(g->insts[o]->shape);
	if (go < 0 || nx_fusion_is_matmul(g->insts[o]) || bytes < (1 << 20) || readers(s, o) != 1)
		return 0;
	for (int k = s->moff[go]; k < s->moff[go + 1]; k++)
		if (nx_fusion_is_matmul(g->insts[s->mem[k]]))
			return 2 * bytes;
	return 0;
}

/* A trial: which positions may change output status, which leaf reads
 * it adds, which leaves it makes outputs. */
typedef struct {
	int *pos, n, cap;   /* members of a whose output status may change */
	int *newx, nn, capn; /* (group, position) leaf reads added, pairs */
	int *exto, ne, cape; /* leaves made outputs */
} trial;

static void push_pos(trial *t, int p)
{
	for (int k = 0; k < t->n; k++)
		if (t->pos[k] == p)
			return;
	push(&t->pos, &t->n, &t->cap, p);
}

/* Tentatively recompute vs[j] (members of kernel a) in kernel bs[j]; the
 * change in read bytes, or INT64_MAX when refused (caps). The additions are
 * recorded in s->tp/tg. */
static int64_t try_pairs(rc *s, int a, const int *vs, const int *bs, int np, trial *t)
{
	const nx_fgraph *g = s->g;
	t->n = t->nn = t->ne = 0;
	int64_t delta = 0;
	for (int j = 0; j < np; j++) {
		int v = vs[j], b = bs[j];
		if (nx_frecompute_has(s->r, v, b))
			continue; /* in the cone of an earlier pair */
		push_pos(t, v);
		int nb = 0;
		for (int k = 0; k < s->nt; k++)
			nb += s->tg[k] == b;
		if (!cone(s, v, a, b) || s->added[b] + nb + s->ncone > KERNEL_MAX)
			return INT64_MAX;
		if (s->R[b] > 0) {
			int64_t rows = s->rows[b];
			for (int k = 0; k < s->nt; k++)
				rows += s->tg[k] == b && nx_shape_elems(g->insts[s->tp[k]]->shape) == s->R[b] * s->C[b];
			for (int k = 0; k < s->ncone; k++)
				rows += nx_shape_elems(g->insts[s->cone[k]]->shape) == s->R[b] * s->C[b];
			if (rows * s->C[b] * 4 * 2 > NX_FUSION_ROW_SBUF_BYTES)
				return INT64_MAX;
		}
		for (int k = 0; k < s->ncone; k++) {
			int x = s->cone[k];
			/* b no longer reads x */
			if (reads(s, b, x))
				delta -= nx_shape_bytes(g->insts[x]->shape);
			/* engine time, as HBM bytes: one byte per element of an
			 * op (ACT, DVE and Pool together run an elementwise op
			 * about 8x faster than HBM moves it in f32) */
			if (g->insts[x]->op != NX_OP_BROADCAST && g->insts[x]->op != NX_OP_CONVERT)
				delta += nx_shape_elems(g->insts[x]->shape);
			add_into(s, x, b);
			push_pos(t, x);
		}
		for (int k = 0; k < s->nleaf; k++) {
			int o = s->leaf[k];
			if (!nx_type_is_float(g->insts[o]->shape->type))
				return INT64_MAX; /* b stays a kernel of float values */
			bool dup = false;
			for (int q = 0; q + 1 < t->nn && !dup; q += 2)
				dup = t->newx[q] == b && t->newx[q + 1] == o;
			if (dup || reads(s, b, o))
				continue;
			delta += nx_shape_bytes(g->insts[o]->shape);
			bool again = false;
			for (int q = 1; q < t->nn && !again; q += 2)
				again = t->newx[q] == o;
			if (!again)
				delta += second_reader(s, o);
			push(&t->newx, &t->nn, &t->capn, b);
			push(&t->newx, &t->nn, &t->capn, o);
			/* a member of a kernel (a, or a third one that might
			 * recompute it too) stays an output */
			if (g->group[o] >= 0 && !s->r->extout[o]) {
				bool have = false;
				for (int q = 0; q < t->ne && !have; q++)
					have = t->exto[q] == o;
				if (!have)
					push(&t->exto, &t->ne, &t->cape, o);
				push_pos(t, o);
			}
		}
	}
	return delta;
}

static void undo(rc *s, int nt0)
{
	for (int k = s->nt - 1; k >= nt0; k--)
		s->r->ninto[s->tp[k]]--; /* the last added entry of tp[k] */
	s->nt = nt0;
}

/* Does every kernel among the positions of t keep an output? */
static bool outputs_left(const rc *s, const trial *t)
{
	for (int k = 0; k < t->n; k++) {
		int gk = s->g->group[t->pos[k]];
		if (gk < 0)
			continue;
		bool any = false;
		for (int q = s->moff[gk]; q < s->moff[gk + 1] && !any; q++)
			any = nx_frecompute_output(s->g, s->r, s->mem[q]);
		if (!any)
			return false;
	}
	return true;
}

/* The change in HBM bytes when vs[j] is recomputed in bs[j] (all j
 * together), or INT64_MAX when refused; kept when apply and negative. */
static int64_t evaluate(rc *s, int a, const int *vs, const int *bs, int np, trial *t, bool apply)
{
	int nt0 = s->nt;
	int64_t d = try_pairs(s, a, vs, bs, np, t);
	if (d == INT64_MAX) {
		undo(s, nt0);
		return d;
	}
	/* outputs after (extout set for the new leaves) vs before */
	for (int k = 0; k < t->ne; k++)
		s->r->extout[t->exto[k]] = true;
	int64_t after_w = out_bytes(s, t->pos, t->n);
	bool left = outputs_left(s, t);
	int nt1 = s->nt;
	for (int k = 0; k < t->ne; k++)
		s->r->extout[t->exto[k]] = false;
	for (int k = nt1 - 1; k >= nt0; k--)
		s->r->ninto[s->tp[k]]--;
	int64_t before_w = out_bytes(s, t->pos, t->n);
	for (int k = nt0; k < nt1; k++)
		s->r->ninto[s->tp[k]]++;
	d += after_w - before_w;
	if (!left)
		d = INT64_MAX;
	if (!apply || d > -MIN_SAVING) {
		undo(s, nt0);
		return d;
	}
	for (int k = 0; k < t->ne; k++)
		s->r->extout[t->exto[k]] = true;
	for (int q = 0; q < t->nn; q += 2)
		push(&s->xr[t->newx[q]], &s->nxr[t->newx[q]], &s->capxr[t->newx[q]], t->newx[q + 1]);
	for (int k = nt0; k < s->nt; k++) {
		int b = s->tg[k];
		s->added[b]++;
		if (s->R[b] > 0)
			s->rows[b] += nx_shape_elems(s->g->insts[s->tp[k]]->shape) == s->R[b] * s->C[b];
	}
	s->nt = 0;
	return d;
}

/* Recompute vs[j] in bs[j] (all j together) when the HBM bytes drop, with
 * the cones entering matmul epilogues (the reader recomputes a bias add
 * from the matmul result) or not, whichever moves fewer. */
static bool decide(rc *s, int a, const int *vs, const int *bs, int np, trial *t)
{
	s->cross = true;
	int64_t d1 = evaluate(s, a, vs, bs, np, t, false);
	s->cross = false;
	int64_t d2 = evaluate(s, a, vs, bs, np, t, false);
	if (d1 > -MIN_SAVING && d2 > -MIN_SAVING)
		return false;
	s->cross = d1 < d2;
	int64_t d = evaluate(s, a, vs, bs, np, t, true);
	NX_ASSERT(d <= -MIN_SAVING);
	for (int j = 0; j < np; j++)
		nx_pass_log(s->g->ctx, 2, "fusion: recompute %s in the kernel of %s (%d with it%s: %lld HBM bytes)",
		            s->g->insts[vs[j]]->name, s->g->insts[s->mem[s->moff[bs[j] + 1] - 1]]->name, np,
		            s->cross ? ", through a matmul epilogue" : "", (long long)d);
	return true;
}

/* May kernel gi take recomputed values and stay one backend kernel? A row
 * kernel whose rows fit the row kernel's SBUF budget, or a kernel of float
 * values (no predicates, integers or converts of broadcasts: the backend
 * flattens those into one kernel per instruction, where every recomputed
 * instruction would be a pass over HBM of its own). */
static bool open_kernel(const rc *s, int gi, bool *feeds)
{
	const nx_fgraph *g = s->g;
	if (s->R[gi] > 0)
		return s->rows[gi] * s->C[gi] * 4 * 2 <= NX_FUSION_ROW_SBUF_BYTES;
	for (int k = s->moff[gi + 1] - 1; k >= s->moff[gi]; k--) {
		int p = s->mem[k];
		const nx_inst *x = g->insts[p];
		if (!nx_type_is_float(x->shape->type) ||
		    (x->op == NX_OP_CONVERT && x->operands[0]->op == NX_OP_BROADCAST))
			return false;
		for (int o = 0; o < x->noperands; o++)
			if (!nx_type_is_float(x->operands[o]->shape->type))
				return false;
		/* members in reverse position order: feeds[p], p is read by
		 * the matmul (through members) */
		feeds[p] = false;
		for (int u = g->uoff[p]; u < g->uoff[p + 1]; u++) {
			int q = g->users[u];
			feeds[p] |= g->group[q] == gi && (nx_fusion_is_matmul(g->insts[q]) || feeds[q]);
		}
		/* a matmul kernel is split into the matmul and its epilogue
		 * (backend/lower_split.c); an elementwise or layout op in
		 * front of the matmul other than a transpose (a reshape or
		 * convert of an operand) would share a region with the
		 * recomputed values, of another element count, and that region
		 * would be flattened into one kernel per instruction */
		if (feeds[p] && x->op != NX_OP_TRANSPOSE && !nx_fusion_is_matmul(x))
			return false;
	}
	return true;
}

/* Appends (v, b) for every kernel b that may recompute output v. */
static void candidates(rc *s, int v, int **vs, int **bs, int *np, int *capv, int *capb)
{
	const nx_fgraph *g = s->g;
	int a = g->group[v], n0 = *np;
	if (a < 0 || s->skip[a] || g->insts[v] == g->comp->root || !nx_frecompute_output(g, s->r, v))
		return;
	int64_t ve = nx_shape_elems(g->insts[v]->shape);
	for (int k = g->uoff[v]; k < g->uoff[v + 1]; k++) {
		int b = g->group[g->users[k]];
		bool seen = b < 0 || b == a;
		for (int j = n0; j < *np && !seen; j++)
			seen = (*bs)[j] == b;
		if (seen || s->skip[b] || s->closed[b] || nx_frecompute_has(s->r, v, b) ||
		    !cheap_in(s, g->insts[v], b, ve) || !users_take(s, v, b))
			continue;
		int nv = *np;
		push(vs, &nv, capv, v);
		push(bs, np, capb, b);
	}
}

void nx_fusion_recompute(const nx_fgraph *g, const bool *skip, nx_frecompute *r)
{
	int n = g->n, G = g->ngroups;
	memset(r, 0, sizeof(*r));
	r->n = n;
	r->into = calloc((size_t)n + 1, sizeof(int *));
	r->ninto = calloc((size_t)n + 1, sizeof(int));
	r->capinto = calloc((size_t)n + 1, sizeof(int));
	r->extout = calloc((size_t)n + 1, sizeof(bool));
	if (G <= 0)
		return;
	rc s = {0};
	s.g = g;
	s.skip = skip;
	s.r = r;
	s.G = G;
	s.moff = calloc((size_t)G + 2, sizeof(int));
	s.mem = malloc(sizeof(int) * ((size_t)n + 1));
	for (int p = 0; p < n; p++)
		if (g->group[p] >= 0)
			s.moff[g->group[p] + 1]++;
	for (int k = 0; k < G; k++)
		s.moff[k + 1] += s.moff[k];
	int *fill = malloc(sizeof(int) * ((size_t)G + 1));
	memcpy(fill, s.moff, sizeof(int) * (size_t)G);
	for (int p = 0; p < n; p++)
		if (g->group[p] >= 0)
			s.mem[fill[g->group[p]]++] = p;
	/* external reads per group: operands of members from outside */
	s.roff = calloc((size_t)G + 2, sizeof(int));
	int ne = 0;
	for (int p = 0; p < n; p++)
		if (g->group[p] >= 0)
			ne += g->insts[p]->noperands;
	s.rd = malloc(sizeof(int) * ((size_t)ne + 1));
	int nr = 0;
	for (int gi = 0; gi < G; gi++) {
		int start = nr;
		for (int k = s.moff[gi]; k < s.moff[gi + 1]; k++) {
			const nx_inst *x = g->insts[s.mem[k]];
			for (int o = 0; o < x->noperands; o++) {
				int q = nx_fpos(x->operands[o]);
				if (g->group[q] != gi)
					s.rd[nr++] = q;
			}
		}
		qsort(s.rd + start, (size_t)(nr - start), sizeof(int), cmp_int);
		int u = start;
		for (int k = start; k < nr; k++)
			if (k == start || s.rd[k] != s.rd[u - 1])
				s.rd[u++] = s.rd[k];
		nr = u;
		s.roff[gi + 1] = nr;
	}
	s.xr = calloc((size_t)G + 1, sizeof(int *));
	s.nxr = calloc((size_t)G + 1, sizeof(int));
	s.capxr = calloc((size_t)G + 1, sizeof(int));
	s.added = calloc((size_t)G + 1, sizeof(int));
	s.R = calloc((size_t)G + 1, sizeof(int64_t));
	s.C = calloc((size_t)G + 1, sizeof(int64_t));
	s.rows = calloc((size_t)G + 1, sizeof(int64_t));
	s.closed = calloc((size_t)G + 1, sizeof(bool));
	for (int gi = 0; gi < G; gi++) {
		int64_t R = 0, C = 0;
		bool found = false;
		for (int k = s.moff[gi]; k < s.moff[gi + 1] && !found; k++)
			found = nx_fusion_row_reduce(g->insts[s.mem[k]], &R, &C);
		bool all = found;
		for (int k = s.moff[gi]; k < s.moff[gi + 1] && all; k++)
			all = nx_fusion_row_member(g->insts[s.mem[k]], R, C);
		if (all) {
			s.R[gi] = R;
			s.C[gi] = C;
			for (int k = s.moff[gi]; k < s.moff[gi + 1]; k++)
				s.rows[gi] += nx_shape_elems(g->insts[s.mem[k]]->shape) == R * C;
		}
	}
	s.mm = calloc((size_t)G + 1, sizeof(bool));
	for (int p = 0; p < n; p++)
		if (g->group[p] >= 0 && nx_fusion_is_matmul(g->insts[p]))
			s.mm[g->group[p]] = true;
	bool *feeds = calloc((size_t)n + 1, sizeof(bool));
	for (int gi = 0; gi < G; gi++)
		s.closed[gi] = !open_kernel(&s, gi, feeds);
	free(feeds);
	s.mark = calloc((size_t)n + 1, sizeof(int));
	s.stk = malloc(sizeof(int) * ((size_t)n + 1));
	s.cone = malloc(sizeof(int) * ((size_t)CONE_MAX + 1));
	s.leaf = malloc(sizeof(int) * ((size_t)CONE_MAX * 3 + 1));
	trial t = {0};
	int *vs = NULL, *bs = NULL, np = 0, capv = 0, capb = 0;
	for (int round = 0; round < ROUNDS; round++) {
		bool any = false;
		/* all candidates of one kernel together (the cones share leaves:
		 * the GELU backward reading f once for f*f, tanh, f/2), else one
		 * value at a time: for all its readers (its write goes), else
		 * per reader */
		for (int a = 0; a < G; a++) {
			if (skip[a])
				continue;
			np = 0;
			for (int k = s.moff[a]; k < s.moff[a + 1]; k++)
				candidates(&s, s.mem[k], &vs, &bs, &np, &capv, &capb);
			if (np < 2 || !decide(&s, a, vs, bs, np, &t)) {
				for (int k = s.moff[a]; k < s.moff[a + 1]; k++) {
					int v = s.mem[k];
					np = 0;
					candidates(&s, v, &vs, &bs, &np, &capv, &capb);
					if (np > 1 && decide(&s, a, vs, bs, np, &t)) {
						any = true;
						continue;
					}
					for (int j = 0; j < np; j++)
						any |= decide(&s, a, &vs[j], &bs[j], 1, &t);
				}
			} else {
				any = true;
			}
		}
		if (!any)
			break;
	}
	free(vs);
	free(bs);
	free(t.pos);
	free(t.newx);
	free(t.exto);
	for (int gi = 0; gi < G; gi++)
		free(s.xr[gi]);
	free(s.xr);
	free(s.nxr);
	free(s.capxr);
	free(s.added);
	free(s.R);
	free(s.C);
	free(s.rows);
	free(s.closed);
	free(s.moff);
	free(s.mem);
	free(fill);
	free(s.roff);
	free(s.rd);
	free(s.mm);
	free(s.mark);
	free(s.stk);
	free(s.cone);
	free(s.leaf);
	free(s.tp);
	free(s.tg);
}
