/* passes/fusion.c — groups the entry computation into kernels: afterwards
 * every instruction that can be part of a kernel (nx_fusion_fusible) lives in
 * exactly one `fusion` instruction whose called computation holds its body.
 *
 * Algorithm (linear in instructions + edges):
 *  1. --model-type transformer, O2+: recognised patterns (fusion_patterns.c)
 *     become kCustom kernels first.
 *  2. Walking the instructions from last to first, each one not yet in a
 *     kernel roots a new kernel, which absorbs producers in decreasing
 *     position order while nx_fusion_refusal allows it and every user of the
 *     producer is already in the kernel (so a producer is never duplicated
 *     and kernels keep one output; a path producer -> outside -> kernel is
 *     then impossible, so no cycle can form).
 *  3. Cheap producers (small constants; from O2 also iota and broadcasts of
 *     scalars; at O3 also cheap elementwise ops whose duplication saves
 *     estimated cycles) are copied into every kernel that reads them.
 *  4. O2+: kernels holding a reduction over trailing dims absorb their
 *     neighbours in the same row space (row kernels: softmax, layer norm),
 *     then the column sums of their rows (bias gradients, col_merge);
 *     then sibling kernels reading the same input with the same iteration
 *     shape merge into one multi-output kernel (tuple result + get-tuple-
 *     element users), unless one reaches the other. O3 merges the pairs with
 *     the largest estimated saving first. Then a loop kernel of 1 MiB or
 *     more merges into the loop kernel that reads it when no path between
 *     them leaves both (producer_merge). Then readers recompute cheap
 *     values instead of reading them when that saves HBM bytes
 *     (fusion_recompute.c); the kernels' outputs follow from that.
 *  5. The kernel graph is checked for cycles (Kahn); if patterns or sibling
 *     merges made one, the grouping is redone without them.
 * Parameters, constants, tuples, get-tuple-element, collectives, control flow,
 * side-effecting and async instructions stay outside kernels. Only the entry
 * computation is fused. */
#include "passes/fusion.h"

#include "ir/map.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
	int *m; /* member positions */
	int n, cap;
	int root;
	const char *pattern; /* kCustom name, or NULL */
	int minpos, maxpos;
	bool dead; /* merged into another group */
} group;

typedef struct {
	nx_fgraph g;
	nx_module *mod;
	group *grp;
	int ngrp, capgrp;
	int *stamp;  /* per position: last group that decided on it */
	bool *dupok; /* O3: producer chosen for duplication */
	nx_inst ***orig_ops; /* original operand arrays by position */
	nx_strmap names; /* every name in the module */
	nx_frecompute rc; /* O2+: values recomputed by their readers */
	int64_t cnt_fusion, cnt_comp, cnt_param, cnt_clone, cnt_gte, cnt_pat;
} fstate;

/* ------------------------------------------------------------- names */

/* "base.N", or "base_M.N" when mid >= 0, with N from *counter, not yet in the
 * module. */
static const char *fresh_name_mid(fstate *s, const char *base, int64_t mid, int64_t *counter)
{
	return nx_fresh_name(&s->names, &s->mod->arena, base, mid, counter, false);
}

static const char *fresh_name(fstate *s, const char *base, int64_t *counter)
{
	return fresh_name_mid(s, base, -1, counter);
}

/* ---------------------------------------------------------------- groups */

static int group_new(fstate *s, int root, const char *pattern)
{
	if (s->ngrp == s->capgrp) {
		s->capgrp = s->capgrp ? 2 * s->capgrp : 64;
		s->grp = realloc(s->grp, sizeof(group) * (size_t)s->capgrp);
	}
	group *g = &s->grp[s->ngrp];
	memset(g, 0, sizeof(*g));
	g->root = root;
	g->pattern = pattern;
	g->minpos = root;
	g->maxpos = root;
	return s->ngrp++;
}

static void group_add(fstate *s, int gi, int pos)
{
	group *g = &s->grp[gi];
	if (g->n == g->cap) {
		g->cap = g->cap ? 2 * g->cap : 8;
		g->m = realloc(g->m, sizeof(int) * (size_t)g->cap);
	}
	g->m[g->n++] = pos;
	s->g.group[pos] = gi;
	if (pos < g->minpos)
		g->minpos = pos;
	if (pos > g->maxpos)
		g->maxpos = pos;
}

static int group_count_if(fstate *s, int gi, bool (*pred)(const nx_inst *))
{
	int k = 0;
	for (int i = 0; i < s->grp[gi].n; i++)
		k += pred(s->g.insts[s->grp[gi].m[i]]);
	return k;
}

/* ------------------------------------------------------------------ heap */

typedef struct {
	int *v;
	int n, cap;
} heap;

static void heap_push(heap *h, int x)
{
	if (h->n == h->cap) {
		h->cap = h->cap ? 2 * h->cap : 64;
		h->v = realloc(h->v, sizeof(int) * (size_t)h->cap);
	}
	int i = h->n++;
	while (i > 0 && h->v[(i - 1) / 2] < x) {
		h->v[i] = h->v[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h->v[i] = x;
}

static int heap_pop(heap *h)
{
	int top = h->v[0], x = h->v[--h->n];
	int i = 0;
	for (;;) {
		int c = 2 * i + 1;
		if (c >= h->n)
			break;
		if (c + 1 < h->n && h->v[c + 1] > h->v[c])
			c++;
		if (h->v[c] <= x)
			break;
		h->v[i] = h->v[c];
		i = c;
	}
	if (h->n)
		h->v[i] = x;
	return top;
}

/* ------------------------------------------------------------- decisions */

static bool clonable(fstate *s, int p)
{
	const nx_inst *i = s->g.insts[p];
	if (i->op == NX_OP_CONSTANT)
		return nx_fusion_duplicable(i, s->g.ctx);
	return nx_fusion_duplicable(i, s->g.ctx) || (s->dupok && s->dupok[p]);
}

static bool all_users_in(fstate *s, int p, int gi)
{
	for (int k = s->g.uoff[p]; k < s->g.uoff[p + 1]; k++)
		if (s->g.group[s->g.users[k]] != gi)
			return false;
	return s->g.insts[p] != s->g.comp->root;
}

static void grow(fstate *s, int gi, heap *h)
{
	nx_fgraph *g = &s->g;
	const nx_pass_ctx *ctx = g->ctx;
	h->n = 0;
	for (int j = 0; j < s->grp[gi].n; j++) {
		nx_inst *x = g->insts[s->grp[gi].m[j]];
		for (int k = 0; k < x->noperands; k++)
			heap_push(h, nx_fpos(x->operands[k]));
	}
	while (h->n) {
		int p = heap_pop(h);
		if (s->stamp[p] == gi || g->group[p] >= 0)
			continue;
		s->stamp[p] = gi;
		nx_inst *pi = g->insts[p];
		if (pi->op == NX_OP_PARAMETER || pi->op == NX_OP_CONSTANT || clonable(s, p))
			continue;
		/* The consumer: any member that reads p (the first found). */
		const char *why = NULL;
		nx_inst *cons = NULL;
		for (int k = g->uoff[p]; k < g->uoff[p + 1] && !why; k++) {
			int u = g->users[k];
			if (g->group[u] != gi)
				continue;
			cons = g->insts[u];
			why = nx_fusion_refusal(pi, cons, ctx);
		}
		if (!cons)
			continue;
		if (!why && !all_users_in(s, p, gi))
			why = (nx_opcode_flags(pi->op) & NX_OPF_EXPENSIVE) || nx_fusion_is_matmul(pi)
			              ? "expensive producer has users outside this kernel (not duplicated)"
			              : "producer has users outside this kernel";
		if (!why && nx_fusion_is_matmul(pi) && group_count_if(s, gi, nx_fusion_is_matmul))
			why = "kernel already holds a matmul";
		if (!why && nx_fusion_is_matmul(pi) && group_count_if(s, gi, nx_fusion_is_reduction))
			why = "a matmul does not fuse into a reduction kernel";
		if (!why && nx_fusion_is_reduction(pi))
			why = "a reduction ends its kernel";
		if (why) {
			nx_pass_log(ctx, 2, "fusion: refuse %s -> %s: %s", pi->name, cons->name, why);
			continue;
		}
		group_add(s, gi, p);
		for (int k = 0; k < pi->noperands; k++)
			heap_push(h, nx_fpos(pi->operands[k]));
	}
}

/* O3: duplicate cheap elementwise producers read by several kernels when
 * the estimated saving is positive (cost model when given, else bytes). */
static void choose_duplicates(fstate *s)
{
	nx_fgraph *g = &s->g;
	const nx_pass_ctx *ctx = g->ctx;
	if (!s->dupok)
		s->dupok = calloc((size_t)g->n + 1, sizeof(bool));
	/* Candidates: kernels of one cheap elementwise instruction whose every
	 * user is in another kernel that may copy it. Dissolving such a kernel
	 * never adds one, and the kernel graph keeps its edges (the copy reads
	 * what the producer read), so no cycle can appear. */
	for (int p = 0; p < g->n; p++) {
		nx_inst *pi = g->insts[p];
		int k = g->uoff[p + 1] - g->uoff[p];
		int gp = g->group[p];
		if (k < 2 || gp < 0 || s->grp[gp].n != 1 || s->grp[gp].pattern || pi == g->comp->root ||
		    !(nx_opcode_flags(pi->op) & NX_OPF_ELEMENTWISE) ||
		    (nx_opcode_flags(pi->op) & NX_OPF_EXPENSIVE))
			continue;
		bool ok = true;
		for (int u = g->uoff[p]; u < g->uoff[p + 1] && ok; u++) {
			int gu = g->group[g->users[u]];
			ok = gu >= 0 && gu != gp && nx_fusion_refusal(pi, g->insts[g->users[u]], ctx) == NULL;
		}
		if (!ok)
			continue;
		int64_t b = nx_shape_bytes(pi->shape), in = 0;
		for (int o = 0; o < pi->noperands; o++)
			if (!nx_fusion_duplicable(pi->operands[o], ctx))
				in += nx_shape_bytes(pi->operands[o]->shape);
		/* Unfused: p writes b and reads in, each user reads b. Duplicated:
		 * each user reads in. */
		int64_t saved = b + (int64_t)k * b + in - (int64_t)k * in;
		double gain = (double)saved;
		if (ctx->cost && ctx->cost->hbm_cycles && ctx->cost->inst_cycles)
			gain = ctx->cost->hbm_cycles(ctx->cost->user, saved) -
			       (k - 1) * ctx->cost->inst_cycles(ctx->cost->user, pi);
		if (gain > 0) {
			s->dupok[p] = true;
			g->group[p] = -1;
			s->grp[gp].dead = true;
			s->grp[gp].n = 0;
			nx_pass_log(ctx, 2, "fusion: duplicate %s into its %d users (gain %.0f)", pi->name, k,
			            gain);
		}
	}
}

/* Is there a path from a member of a to a member of b leaving a (with
 * direct false: through something outside both)? Bounded. */
static int reaches(fstate *s, int a, int b, int *stack, int *mark, int markv, bool direct)
{
	nx_fgraph *g = &s->g;
	int sp = 0, visits = 0;
	for (int i = 0; i < s->grp[a].n; i++) {
		int p = s->grp[a].m[i];
		for (int k = g->uoff[p]; k < g->uoff[p + 1]; k++) {
			int u = g->users[k];
			if (g->group[u] != a && (direct || g->group[u] != b) && mark[u] != markv) {
				mark[u] = markv;
				stack[sp++] = u;
			}
		}
	}
	while (sp) {
		int u = stack[--sp];
		if (g->group[u] == b)
			return 1;
		if (u > s->grp[b].maxpos)
			continue;
		if (++visits > 4096)
			return -1;
		for (int k = g->uoff[u]; k < g->uoff[u + 1]; k++) {
			int w = g->users[k];
			if (mark[w] != markv) {
				mark[w] = markv;
				stack[sp++] = w;
			}
		}
		/* A group member reached from outside: the whole group is reached. */
		int gu = g->group[u];
		if (gu >= 0 && gu != a)
			for (int i = 0; i < s->grp[gu].n; i++) {
				int w = s->grp[gu].m[i];
				if (mark[w] != markv) {
					mark[w] = markv;
					stack[sp++] = w;
				}
			}
	}
	return 0;
}

/* ------------------------------------------------------------ row kernels */

/* Every member of group gi lives in the row space (R rows of C); *rows: the
 * members of R*C elements (SBUF tiles of the row kernel). cs: column sums
 * (nx_fusion_col_sum) 0 none, 1 at least one and no reduction over the
 * rows' elements (a column sum's own group), 2 any. */
static bool row_group(fstate *s, int gi, int64_t R, int64_t C, int64_t *rows, int cs)
{
	group *g = &s->grp[gi];
	if (g->dead || g->pattern || g->n == 0)
		return false;
	int64_t k = 0, r, c;
	int ncs = 0, nrr = 0;
	for (int i = 0; i < g->n; i++) {
		const nx_inst *x = s->g.insts[g->m[i]];
		if (!nx_fusion_row_member(x, R, C))
			return false;
		ncs += nx_fusion_col_sum(x, R, C);
		nrr += nx_fusion_row_reduce(x, &r, &c);
		k += nx_shape_elems(x->shape) == R * C;
	}
	*rows = k;
	return cs == 2 || (cs == 0 && ncs == 0) || (cs == 1 && ncs > 0 && nrr == 0);
}


/* Row values live at once in the kernel of groups a and b together (the
 * row kernel gives a row's slot up after its last reader, row_body.c
 * nx_rw_layout): a computed row from its position to its last reader
 * there (to the end when read outside or the result), a row read from
 * outside from the start to its last reader; broadcasts and same-type
 * layout ops are views. */
static int64_t row_live(fstate *s, int a, int b, int64_t R, int64_t C)
{
	nx_fgraph *g = &s->g;
	enum { NL = 256 };
	int st[NL], en[NL], ext[NL], n = 0;
	for (int h = 0; h < 2; h++) {
		const group *gr = &s->grp[h ? b : a];
		for (int i = 0; i < gr->n && n < NL; i++) {
			int p = gr->m[i];
			const nx_inst *x = g->insts[p];
			for (int o = 0; o < x->noperands; o++) {
				int q = nx_fpos(s->orig_ops[p][o]);
				if (g->group[q] == a || g->group[q] == b || nx_shape_elems(g->insts[q]->shape) != R * C)
					continue;
				int k = 0;
				while (k < n && !(ext[k] && st[k] == q))
					k++;
				if (k == n) {
					if (n == NL)
						return INT64_MAX;
					st[n] = q, en[n] = p, ext[n++] = 1;
				} else if (p > en[k]) {
					en[k] = p;
				}
			}
			bool view = x->op == NX_OP_BROADCAST || x->op == NX_OP_CONSTANT ||
			            ((x->op == NX_OP_RESHAPE || x->op == NX_OP_BITCAST || x->op == NX_OP_COPY) &&
			             x->noperands == 1 && x->operands[0]->shape->type == x->shape->type);
			if (view || nx_shape_elems(x->shape) != R * C)
				continue;
			int e = p;
			if (x == g->comp->root)
				e = INT32_MAX;
			for (int u = g->uoff[p]; u < g->uoff[p + 1]; u++) {
				int w = g->users[u];
				e = g->group[w] == a || g->group[w] == b ? (w > e ? w : e) : INT32_MAX;
				if (e == INT32_MAX)
					break;
			}
			if (n == NL)
				return INT64_MAX;
			st[n] = p, en[n] = e, ext[n++] = 0;
		}
	}
	/* the most intervals over one position (an input's from the start) */
	int64_t best = 0;
	for (int k = 0; k < n; k++) {
		int at = ext[k] ? -1 : st[k];
		int64_t c = 0;
		for (int j = 0; j < n; j++)
			c += (ext[j] ? -1 : st[j]) <= at && en[j] >= at && (ext[j] || en[j] > at || j == k);
		best = c > best ? c : best;
	}
	return best;
}

/* the end of a row merge (col: a column sum into row kernel gi): refused
 * when the kernel would exceed 64 instructions, for why (its rows would
 * not fit SBUF), or when a path between the two kernels leaves both; else
 * gq's members join gi */
static bool row_join(fstate *s, int gi, int gq, const char *why, bool col, int64_t C, int64_t *rows, int64_t r2,
                     int *stack, int *mark, int *markv)
{
	nx_fgraph *g = &s->g;
	if (s->grp[gi].n + s->grp[gq].n > 64)
		why = "row kernel would exceed 64 instructions";
	if (!why) {
		int r1 = reaches(s, gi, gq, stack, mark, ++*markv, false);
		int r3 = r1 ? r1 : reaches(s, gq, gi, stack, mark, ++*markv, false);
		if (r1 || r3)
			why = "a path between them leaves both kernels";
	}
	const nx_inst *ra = g->insts[s->grp[gi].root], *rb = g->insts[s->grp[gq].root];
	if (why) {
		if (col)
			nx_pass_log(g->ctx, 2, "fusion: refuse column sum %s into %s: %s", rb->name, ra->name, why);
		else
			nx_pass_log(g->ctx, 2, "fusion: refuse row %s + %s: %s", ra->name, rb->name, why);
		return false;
	}
	if (col)
		nx_pass_log(g->ctx, 2, "fusion: column sum %s into %s (rows of %lld)", rb->name, ra->name, (long long)C);
	else
		nx_pass_log(g->ctx, 2, "fusion: row %s + %s (rows of %lld)", ra->name, rb->name, (long long)C);
	if (s->grp[gq].root > s->grp[gi].root)
		s->grp[gi].root = s->grp[gq].root;
	for (int k = 0; k < s->grp[gq].n; k++)
		group_add(s, gi, s->grp[gq].m[k]);
	s->grp[gq].dead = true;
	s->grp[gq].n = 0;
	*rows += r2;
	return true;
}

static bool row_try(fstate *s, int gi, int q, int64_t R, int64_t C, int64_t *rows, int *stack, int *mark,
                    int *markv)
{
	nx_fgraph *g = &s->g;
	int gq = g->group[q];
	int64_t r2;
	if (gq < 0 || gq == gi || !row_group(s, gq, R, C, &r2, 0))
		return false;
	const char *why = NULL;
	if ((*rows + r2) * C * 4 * 2 > NX_FUSION_ROW_SBUF_BYTES &&
	    row_live(s, gi, gq, R, C) * C * 4 * 2 > NX_FUSION_ROW_SBUF_BYTES)
		why = "rows of the merged kernel would not fit SBUF";
	return row_join(s, gi, gq, why, false, C, rows, r2, stack, mark, markv);
}

/* O2+: a kernel holding a reduction over the trailing dims of its operand
 * absorbs its producer and consumer kernels while all of their members live
 * in the same row space and no path between the two leaves through a third
 * kernel: softmax and layer norm become one kernel, which the backend lowers
 * as a row kernel (backend/kernels/row_loop.c) or flattens. */
static void row_merge(fstate *s)
{
	nx_fgraph *g = &s->g;
	int *stack = malloc(sizeof(int) * ((size_t)g->n + 1));
	int *mark = calloc((size_t)g->n + 1, sizeof(int));
	int markv = 0;
	for (int gi = 0; gi < s->ngrp; gi++) {
		if (s->grp[gi].dead || s->grp[gi].pattern)
			continue;
		int64_t R = 0, C = 0, rows;
		bool found = false;
		for (int i = 0; i < s->grp[gi].n && !found; i++)
			found = nx_fusion_row_reduce(g->insts[s->grp[gi].m[i]], &R, &C);
		if (!found || !row_group(s, gi, R, C, &rows, 0))
			continue;
		bool grew = true;
		while (grew) {
			grew = false;
			for (int k = 0; k < s->grp[gi].n && !grew; k++) {
				int p = s->grp[gi].m[k];
				const nx_inst *x = g->insts[p];
				for (int o = 0; o < x->noperands && !grew; o++)
					grew = row_try(s, gi, nx_fpos(s->orig_ops[p][o]), R, C, &rows, stack, mark, &markv);
				for (int u = g->uoff[p]; u < g->uoff[p + 1] && !grew; u++)
					grew = row_try(s, gi, g->users[u], R, C, &rows, stack, mark, &markv);
			}
		}
	}
	free(stack);
	free(mark);
}

enum { COL_MIN = 1 << 14 }; /* elements of a row kernel that takes column sums */

/* Column sum group q (a sum over the rows of a value of R*C elements and
 * the elementwise ops feeding it: a bias gradient) into row kernel gi. */
static bool col_try(fstate *s, int gi, int q, int64_t R, int64_t C, int64_t *rows, int *stack, int *mark,
                    int *markv, int *tried)
{
	nx_fgraph *g = &s->g;
	int gq = g->group[q];
	int64_t r2;
	if (gq < 0 || gq == gi || tried[gq] == gi || !row_group(s, gq, R, C, &r2, 1))
		return false;
	tried[gq] = gi; /* once per row kernel */
	const char *why = NULL;
	/* the row kernel sums after a tile's other ops: each sum's operand
	 * is live to the end (one more row, over the estimate) */
	int64_t ncs = 0;
	for (int h = 0; h < 2; h++)
		for (int k = 0; k < s->grp[h ? gq : gi].n; k++)
			ncs += nx_fusion_col_sum(g->insts[s->grp[h ? gq : gi].m[k]], R, C);
	if ((row_live(s, gi, gq, R, C) + ncs) * C * 4 * 2 > NX_FUSION_ROW_SBUF_BYTES)
		why = "rows of the merged kernel would not fit SBUF";
	return row_join(s, gi, gq, why, true, C, rows, r2, stack, mark, markv);
}

/* O2+, after row_merge: a row kernel takes the column sums of the values it
 * computes or reads (its consumers, and its siblings reading its inputs),
 * which it accumulates on PE as it goes (backend/kernels/row_loop.c): the
 * layer norm backward's bias and gamma gradients, and the bias gradient of
 * the matmul reading its result. */
static void col_merge(fstate *s)
{
	nx_fgraph *g = &s->g;
	int *stack = malloc(sizeof(int) * ((size_t)g->n + 1));
	int *mark = calloc((size_t)g->n + 1, sizeof(int));
	int *tried = malloc(sizeof(int) * ((size_t)s->ngrp + 1));
	int markv = 0;
	for (int k = 0; k < s->ngrp; k++)
		tried[k] = -1;
	for (int gi = 0; gi < s->ngrp; gi++) {
		if (s->grp[gi].dead || s->grp[gi].pattern)
			continue;
		int64_t R = 0, C = 0, rows;
		bool found = false;
		for (int i = 0; i < s->grp[gi].n && !found; i++)
			found = nx_fusion_row_reduce(g->insts[s->grp[gi].m[i]], &R, &C);
		/* (in small kernels, its sums' tail after the last tile costs more
		 * than their own kernels: mlp__single_mlp's 32 rows of 10) */
		if (!found || R * C < COL_MIN || !row_group(s, gi, R, C, &rows, 2))
			continue;
		bool grew = true;
		while (grew) {
			grew = false;
			for (int k = 0; k < s->grp[gi].n && !grew; k++) {
				int p = s->grp[gi].m[k];
				const nx_inst *x = g->insts[p];
				if (nx_shape_elems(x->shape) != R * C)
					continue;
				for (int u = g->uoff[p]; u < g->uoff[p + 1] && !grew; u++)
					grew = col_try(s, gi, g->users[u], R, C, &rows, stack, mark, &markv, tried);
				/* siblings: readers of the row-sized values it reads */
				for (int o = 0; o < x->noperands && !grew; o++) {
					int q = nx_fpos(s->orig_ops[p][o]);
					if (g->group[q] == gi || nx_shape_elems(g->insts[q]->shape) != R * C)
						continue;
					for (int u = g->uoff[q]; u < g->uoff[q + 1] && !grew; u++)
						grew = col_try(s, gi, g->users[u], R, C, &rows, stack, mark, &markv, tried);
				}
			}
		}
	}
	free(stack);
	free(mark);
	free(tried);
}

static bool plain_loop(fstate *s, int gi)
{
	group *g = &s->grp[gi];
	if (g->dead || g->pattern)
		return false;
	for (int i = 0; i < g->n; i++) {
		const nx_inst *x = s->g.insts[g->m[i]];
		if (nx_fusion_is_matmul(x) || nx_fusion_is_reduction(x) || x->op == NX_OP_CUSTOM_CALL)
			return false;
	}
	return true;
}

static bool same_dims(const nx_shape *a, const nx_shape *b)
{
	if (a->rank != b->rank)
		return false;
	for (int i = 0; i < a->rank; i++)
		if (a->dims[i] != b->dims[i])
			return false;
	return true;
}

typedef struct {
	int a, b;
	int64_t bytes;
	int order;
} sib;

static int sib_cmp(const void *x, const void *y)
{
	const sib *p = x, *q = y;
	if (p->bytes != q->bytes)
		return p->bytes > q->bytes ? -1 : 1;
	return p->order - q->order;
}

static int find_live(fstate *s, int gi)
{
	return s->g.group[s->grp[gi].root];
}

static void sibling_merge(fstate *s)
{
	nx_fgraph *g = &s->g;
	const nx_pass_ctx *ctx = g->ctx;
	sib *c = NULL;
	int nc = 0, capc = 0;
	/* plain_loop per group, computed once: a value with 10^4 users in one
	 * long group must not rescan that group per use (quadratic). */
	signed char *pl = calloc((size_t)s->ngrp + 1, 1); /* 0 unknown, 1 yes, 2 no */
	for (int p = 0; p < g->n; p++) {
		int first = -1;
		for (int k = g->uoff[p]; k < g->uoff[p + 1]; k++) {
			int gu = g->group[g->users[k]];
			if (gu >= 0 && pl && !pl[gu])
				pl[gu] = plain_loop(s, gu) ? 1 : 2;
			if (gu < 0 || (pl ? pl[gu] != 1 : !plain_loop(s, gu)))
				continue;
			if (first < 0) {
				first = gu;
				continue;
			}
			if (gu == first)
				continue;
			if (nc == capc) {
				capc = capc ? 2 * capc : 64;
				c = realloc(c, sizeof(sib) * (size_t)capc);
			}
			c[nc] = (sib){first, gu, nx_shape_bytes(g->insts[p]->shape), nc};
			nc++;
		}
	}
	free(pl);
	if (ctx->opt_level >= 3 && nc > 1)
		qsort(c, (size_t)nc, sizeof(sib), sib_cmp);
	int *stack = malloc(sizeof(int) * ((size_t)g->n + 1));
	int *mark = calloc((size_t)g->n + 1, sizeof(int));
	int markv = 0;
	for (int i = 0; i < nc; i++) {
		int a = find_live(s, c[i].a), b = find_live(s, c[i].b);
		if (a == b || !plain_loop(s, a) || !plain_loop(s, b))
			continue;
		const nx_inst *ra = g->insts[s->grp[a].root], *rb = g->insts[s->grp[b].root];
		const char *why = NULL;
		if (!same_dims(ra->shape, rb->shape))
			why = "sibling kernels iterate over different shapes";
		else if (s->grp[a].n + s->grp[b].n > 64)
			why = "merged kernel would exceed 64 instructions";
		else {
			int r1 = reaches(s, a, b, stack, mark, ++markv, true);
			int r2 = r1 ? r1 : reaches(s, b, a, stack, mark, ++markv, true);
			if (r1 || r2)
				why = (r1 < 0 || r2 < 0) ? "dependency check too large"
				                         : "sibling kernels depend on each other";
		}
		if (why) {
			nx_pass_log(ctx, 2, "fusion: refuse sibling %s + %s: %s", ra->name, rb->name, why);
			continue;
		}
		nx_pass_log(ctx, 2, "fusion: sibling %s + %s (multi-output)", ra->name, rb->name);
		/* Keep the later root as the group's root. */
		if (s->grp[b].root > s->grp[a].root) {
			int t = a;
			a = b;
			b = t;
		}
		for (int k = 0; k < s->grp[b].n; k++)
			group_add(s, a, s->grp[b].m[k]);
		s->grp[b].dead = true;
		s->grp[b].n = 0;
	}
	free(stack);
	free(mark);
	free(c);
}

/* O2+: a loop kernel merges into the loop kernel that reads it (same
 * iteration shape, values of 1 MiB or more: the backend's fused-loop takes
 * multi-output kernels of that size, smaller ones would be flattened) when
 * every path between them is direct: the producer's values that are read
 * elsewhere (outputs of the program, other kernels) become outputs of the
 * merged kernel, the consumer no longer reloads them (an optimizer step's
 * moment updates feeding the parameter update: one kernel). */
static void producer_merge(fstate *s)
{
	nx_fgraph *g = &s->g;
	const nx_pass_ctx *ctx = g->ctx;
	int *stack = malloc(sizeof(int) * ((size_t)g->n + 1));
	int *mark = calloc((size_t)g->n + 1, sizeof(int));
	int markv = 0;
	for (int b = 0; b < s->ngrp; b++) {
		for (int j = 0; j < s->grp[b].n && plain_loop(s, b); j++) {
			const nx_inst *x = g->insts[s->grp[b].m[j]];
			for (int o = 0; o < x->noperands; o++) {
				int a = g->group[nx_fpos(x->operands[o])];
				if (a < 0 || a == b || !plain_loop(s, a))
					continue;
				const nx_inst *ra = g->insts[s->grp[a].root], *rb = g->insts[s->grp[b].root];
				const char *why = NULL;
				if (!same_dims(ra->shape, rb->shape) || nx_shape_bytes(rb->shape) < (1 << 20))
					why = "different shapes or below 1 MiB";
				else if (s->grp[a].n + s->grp[b].n > 64)
					why = "merged kernel would exceed 64 instructions";
				else if (reaches(s, a, b, stack, mark, ++markv, false))
					why = "a path through another instruction";
				if (why) {
					nx_pass_log(ctx, 2, "fusion: refuse producer %s into %s: %s", ra->name, rb->name, why);
					continue;
				}
				nx_pass_log(ctx, 2, "fusion: producer %s into %s (multi-output)", ra->name, rb->name);
				if (s->grp[a].root > s->grp[b].root)
					s->grp[b].root = s->grp[a].root;
				for (int k = 0; k < s->grp[a].n; k++)
					group_add(s, b, s->grp[a].m[k]);
				s->grp[a].dead = true;
				s->grp[a].n = 0;
				j = -1; /* rescan b's members, now with a's */
				break;
			}
		}
	}
	free(stack);
	free(mark);
}

/* Kahn's algorithm on the kernel graph (a kernel is one node; instructions
 * outside kernels are nodes of their own): false when it has a cycle. */
static bool acyclic(fstate *s)
{
	nx_fgraph *g = &s->g;
	int nq = g->n + s->ngrp;
	int *eoff = calloc((size_t)nq + 2, sizeof(int));
	int *indeg = calloc((size_t)nq + 1, sizeof(int));
	int *edge = NULL;
	for (int pass = 0; pass < 2; pass++) {
		for (int u = 0; u < g->n; u++) {
			nx_inst *ui = g->insts[u];
			int qu = g->group[u] >= 0 ? g->n + g->group[u] : u;
			for (int k = 0; k < ui->noperands; k++) {
				int o = nx_fpos(ui->operands[k]);
				int qo = g->group[o] >= 0 ? g->n + g->group[o] : o;
				if (qo == qu)
					continue;
				if (pass == 0)
					eoff[qo + 1]++;
				else
					edge[eoff[qo]++] = qu;
			}
		}
		if (pass == 0) {
			for (int q = 0; q < nq; q++)
				eoff[q + 1] += eoff[q];
			edge = malloc(sizeof(int) * ((size_t)eoff[nq] + 1));
		}
	}
	/* After filling, eoff[q] is the end of q's edges and eoff[q-1] the start. */
	for (int e = 0; e < eoff[nq > 0 ? nq - 1 : 0]; e++)
		indeg[edge[e]]++;
	int *queue = malloc(sizeof(int) * ((size_t)nq + 1));
	int qh = 0, qt = 0;
	for (int q = 0; q < nq; q++)
		if (indeg[q] == 0)
			queue[qt++] = q;
	while (qh < qt) {
		int q = queue[qh++];
		for (int e = q ? eoff[q - 1] : 0; e < eoff[q]; e++)
			if (--indeg[edge[e]] == 0)
				queue[qt++] = edge[e];
	}
	free(eoff);
	free(indeg);
	free(edge);
	free(queue);
	return qt == nq;
}

/* Steps 1-4. */
static void partition(fstate *s, bool patterns, bool siblings)
{
	nx_fgraph *g = &s->g;
	const nx_pass_ctx *ctx = g->ctx;
	for (int i = 0; i < s->ngrp; i++)
		free(s->grp[i].m);
	s->ngrp = 0;
	for (int i = 0; i < g->n; i++) {
		g->group[i] = -1;
		s->stamp[i] = -1;
	}
	nx_frecompute_free(&s->rc);
	heap h = {0};
	if (patterns) {
		nx_fpattern *pats = NULL;
		int np = nx_fusion_find_patterns(g, &pats);
		for (int i = 0; i < np; i++) {
			bool free_ = pats[i].nmembers > 0;
			int root = -1;
			for (int k = 0; k < pats[i].nmembers; k++) {
				free_ &= g->group[pats[i].members[k]] < 0;
				if (pats[i].members[k] > root)
					root = pats[i].members[k];
			}
			if (free_) {
				int gi = group_new(s, root, pats[i].name);
				for (int k = 0; k < pats[i].nmembers; k++)
					group_add(s, gi, pats[i].members[k]);
				grow(s, gi, &h);
				nx_pass_log(ctx, 2, "fusion: pattern %s at %s (%d instructions)", pats[i].name,
				            g->insts[root]->name, pats[i].nmembers);
			}
			free(pats[i].members);
		}
		free(pats);
	}
	for (int p = g->n - 1; p >= 0; p--) {
		nx_inst *pi = g->insts[p];
		if (g->group[p] >= 0 || !nx_fusion_fusible(pi) || clonable(s, p))
			continue;
		int gi = group_new(s, p, NULL);
		group_add(s, gi, p);
		grow(s, gi, &h);
	}
	free(h.v);
	/* Cheap producers get a kernel of their own only when something outside
	 * kernels (or a kernel that may not copy them) still reads them. */
	bool *dead = calloc((size_t)g->n + 1, sizeof(bool));
	for (int p = g->n - 1; p >= 0; p--) {
		nx_inst *pi = g->insts[p];
		if (g->group[p] >= 0 || !nx_fusion_fusible(pi) || !clonable(s, p))
			continue;
		bool need = pi == g->comp->root;
		for (int k = g->uoff[p]; k < g->uoff[p + 1] && !need; k++) {
			int u = g->users[k];
			if (dead[u])
				continue;
			need = g->group[u] < 0 || nx_fusion_refusal(pi, g->insts[u], ctx) != NULL;
		}
		if (need) {
			int gi = group_new(s, p, NULL);
			group_add(s, gi, p);
		} else {
			dead[p] = true;
		}
	}
	free(dead);
	if (g->ctx->opt_level >= 3)
		choose_duplicates(s);
	if (siblings) {
		row_merge(s);
		col_merge(s);
		sibling_merge(s);
		producer_merge(s);
		g->ngroups = s->ngrp;
		bool *skip = calloc((size_t)s->ngrp + 1, sizeof(bool));
		for (int i = 0; i < s->ngrp; i++)
			skip[i] = s->grp[i].dead || s->grp[i].pattern;
		nx_fusion_recompute(g, skip, &s->rc);
		free(skip);
	}
}

/* ----------------------------------------------------------------- build */

typedef struct {
	fstate *s;
	int gi;
	nx_comp *fc;
	int *memo_stamp;
	nx_inst **memo;
	nx_inst **ext; /* external operands in parameter order (entry values) */
	int next;
	int *ext_pos;
} builder;

static void comp_append(nx_comp *c, nx_inst *i)
{
	if (c->ninsts == c->cap) {
		int cap = c->cap ? 2 * c->cap : 16;
		c->insts = nx_arena_grow(&c->module->arena, c->insts, (size_t)c->ninsts, (size_t)cap,
		                         sizeof(nx_inst *));
		c->cap = cap;
	}
	c->insts[c->ninsts++] = i;
	i->parent = c;
}

static nx_inst *resolve(builder *b, int o, const nx_inst *user);

static nx_inst *clone_into(builder *b, int p)
{
	fstate *s = b->s;
	nx_inst *src = s->g.insts[p];
	nx_inst *c = nx_arena_dup(&s->mod->arena, src, sizeof(*src));
	c->id = s->mod->next_id++;
	c->name = fresh_name(s, src->name, &s->cnt_clone);
	c->parent = b->fc;
	int no = src->noperands;
	nx_inst **ops = s->orig_ops[p];
	c->operands = nx_arena_alloc(&s->mod->arena, sizeof(nx_inst *) * (size_t)(no ? no : 1));
	for (int k = 0; k < no; k++)
		c->operands[k] = resolve(b, nx_fpos(ops[k]), src);
	comp_append(b->fc, c);
	return c;
}

static nx_inst *resolve(builder *b, int o, const nx_inst *user)
{
	fstate *s = b->s;
	if (s->g.group[o] == b->gi)
		return s->g.insts[o];
	if (b->memo_stamp[o] == b->gi)
		return b->memo[o];
	nx_inst *oi = s->g.insts[o];
	nx_inst *r;
	if ((clonable(s, o) && (oi->op == NX_OP_CONSTANT || nx_fusion_refusal(oi, user, s->g.ctx) == NULL)) ||
	    (nx_frecompute_has(&s->rc, o, b->gi) && nx_fusion_refusal(oi, user, s->g.ctx) == NULL)) {
		r = clone_into(b, o);
	} else {
		r = nx_inst_new(b->fc, NX_OP_PARAMETER, oi->shape, NULL, 0, "p");
		r->name = fresh_name_mid(s, "param", b->next, &s->cnt_param);
		r->a.parameter_number = b->next;
		nx_comp_add_param(b->fc, r);
		b->ext_pos[b->next++] = o;
	}
	b->memo_stamp[o] = b->gi;
	b->memo[o] = r;
	return r;
}

static int cmp_int(const void *x, const void *y)
{
	return *(const int *)x - *(const int *)y;
}

static const char *kind_of(fstate *s, int gi)
{
	group *g = &s->grp[gi];
	if (g->pattern)
		return "kCustom";
	bool mm = false, red = false, cc = false;
	for (int i = 0; i < g->n; i++) {
		const nx_inst *x = s->g.insts[g->m[i]];
		mm |= nx_fusion_is_matmul(x);
		red |= nx_fusion_is_reduction(x);
		cc |= x->op == NX_OP_CUSTOM_CALL;
	}
	return cc ? "kCustom" : mm ? "kOutput" : red ? "kInput" : "kLoop";
}

static int64_t kernel_bytes(const nx_inst *i)
{
	int64_t b = nx_shape_bytes(i->shape);
	for (int k = 0; k < i->noperands; k++)
		b += nx_shape_bytes(i->operands[k]->shape);
	return b;
}

static nx_status fuse_comp(nx_module *m, nx_comp *c, const nx_pass_ctx *ctx, bool *changed)
{
	if (!c || c->ninsts == 0)
		return NX_OK;
	fstate s = {0};
	s.mod = m;
	nx_fgraph *g = &s.g;
	g->comp = c;
	g->ctx = ctx;
	g->n = c->ninsts;
	int n = g->n;
	g->insts = malloc(sizeof(nx_inst *) * (size_t)n);
	memcpy(g->insts, c->insts, sizeof(nx_inst *) * (size_t)n);
	for (int i = 0; i < n; i++)
		g->insts[i]->aux = (void *)(intptr_t)i;
	g->uoff = calloc((size_t)n + 2, sizeof(int));
	int ne = 0;
	for (int i = 0; i < n; i++)
		for (int k = 0; k < g->insts[i]->noperands; k++) {
			g->uoff[nx_fpos(g->insts[i]->operands[k]) + 1]++;
			ne++;
		}
	for (int i = 0; i < n; i++)
		g->uoff[i + 1] += g->uoff[i];
	g->users = malloc(sizeof(int) * ((size_t)ne + 1));
	int *fill = malloc(sizeof(int) * ((size_t)n + 1));
	memcpy(fill, g->uoff, sizeof(int) * (size_t)n);
	for (int i = 0; i < n; i++) {
		nx_inst *x = g->insts[i];
		for (int k = 0; k < x->noperands; k++) {
			int o = nx_fpos(x->operands[k]);
			/* A user appears once per distinct operand slot; duplicates are
			 * harmless for the membership tests. */
			g->users[fill[o]++] = i;
		}
	}
	free(fill);
	g->group = malloc(sizeof(int) * ((size_t)n + 1));
	s.stamp = malloc(sizeof(int) * ((size_t)n + 1));
	s.orig_ops = malloc(sizeof(nx_inst **) * ((size_t)n + 1));
	for (int i = 0; i < n; i++)
		s.orig_ops[i] = g->insts[i]->operands;

	int64_t before = 0;
	for (int i = 0; i < n; i++)
		if (nx_fusion_fusible(g->insts[i]))
			before += kernel_bytes(g->insts[i]);

	bool pats = ctx->model_type == NX_MODEL_TRANSFORMER && ctx->opt_level >= 2;
	bool sibs = ctx->opt_level >= 2;
	partition(&s, pats, sibs);
	if (!acyclic(&s)) {
		nx_pass_log(ctx, 1, "fusion: kernel graph had a cycle; regrouping without patterns and sibling merges");
		if (s.dupok)
			memset(s.dupok, 0, (size_t)n + 1);
		partition(&s, false, false);
		NX_ASSERT(acyclic(&s));
	}
	int nkernels = 0;
	for (int i = 0; i < s.ngrp; i++)
		nkernels += !s.grp[i].dead && s.grp[i].n > 0;

	if (nkernels == 0) {
		nx_pass_log(ctx, 1, "fusion: 0 kernels, HBM bytes before %lld after %lld", (long long)before,
		            (long long)before);
		goto done;
	}
	*changed = true;
	/* Names in use. */
	for (int ci = 0; ci < m->ncomps; ci++) {
		nx_strmap_add(&s.names, m->comps[ci]->name, strlen(m->comps[ci]->name), 0, NULL);
		for (int i = 0; i < m->comps[ci]->ninsts; i++) {
			const char *n = m->comps[ci]->insts[i]->name;
			nx_strmap_add(&s.names, n, strlen(n), 0, NULL);
		}
	}

	nx_inst **newval = calloc((size_t)n + 1, sizeof(nx_inst *));
	nx_inst **kernel_of = calloc((size_t)n + 1, sizeof(nx_inst *));
	for (int i = 0; i < n; i++)
		newval[i] = g->insts[i];
	builder b = {&s, 0, NULL, NULL, NULL, NULL, 0, NULL};
	b.memo_stamp = malloc(sizeof(int) * ((size_t)n + 1));
	for (int i = 0; i < n; i++)
		b.memo_stamp[i] = -1;
	b.memo = malloc(sizeof(nx_inst *) * ((size_t)n + 1));
	b.ext_pos = malloc(sizeof(int) * ((size_t)n + 1));
	int kinds[4] = {0};
	/* Fusion instructions with their sort keys, to order the new entry. */
	nx_inst **fus = malloc(sizeof(nx_inst *) * ((size_t)s.ngrp + 1));
	int *fkey = malloc(sizeof(int) * ((size_t)s.ngrp + 1));
	nx_inst ***gtes = calloc((size_t)s.ngrp + 1, sizeof(nx_inst **));
	int *ngtes = calloc((size_t)s.ngrp + 1, sizeof(int));
	int nf = 0;
	for (int gi = 0; gi < s.ngrp; gi++) {
		group *gr = &s.grp[gi];
		if (gr->dead || gr->n == 0)
			continue;
		qsort(gr->m, (size_t)gr->n, sizeof(int), cmp_int);
		const char *cname = fresh_name(&s, gr->pattern ? gr->pattern : "fused_computation",
		                               gr->pattern ? &s.cnt_pat : &s.cnt_comp);
		nx_comp *fc = nx_comp_new(m, cname);
		b.gi = gi;
		b.fc = fc;
		b.next = 0;
		/* Outputs: members read outside the kernel (or the entry root). */
		int nout = 0;
		int *outs = malloc(sizeof(int) * (size_t)gr->n);
		for (int k = 0; k < gr->n; k++) {
			if (nx_frecompute_output(g, &s.rc, gr->m[k]))
				outs[nout++] = gr->m[k];
		}
		for (int k = 0; k < gr->n; k++) {
			int p = gr->m[k];
			nx_inst *x = g->insts[p];
			nx_inst **ops = nx_arena_alloc(&m->arena, sizeof(nx_inst *) * (size_t)(x->noperands ? x->noperands : 1));
			for (int o = 0; o < x->noperands; o++)
				ops[o] = resolve(&b, nx_fpos(s.orig_ops[p][o]), x);
			x->operands = ops;
			comp_append(fc, x);
		}
		nx_shape *fshape;
		if (nout == 1) {
			fc->root = g->insts[outs[0]];
			fshape = fc->root->shape;
		} else {
			nx_inst **ro = malloc(sizeof(nx_inst *) * (size_t)nout);
			nx_shape **sh = malloc(sizeof(nx_shape *) * (size_t)nout);
			for (int k = 0; k < nout; k++) {
				ro[k] = g->insts[outs[k]];
				sh[k] = ro[k]->shape;
			}
			fshape = nx_shape_tuple(&m->arena, nout, sh);
			nx_inst *t = nx_inst_new(fc, NX_OP_TUPLE, fshape, ro, nout, "tuple");
			t->name = fresh_name(&s, "tuple", &s.cnt_gte);
			fc->root = t;
			free(ro);
			free(sh);
		}
		/* The fusion instruction (appended to the entry's array, which is
		 * rebuilt below). */
		nx_inst **fops = malloc(sizeof(nx_inst *) * (size_t)(b.next ? b.next : 1));
		for (int k = 0; k < b.next; k++)
			fops[k] = g->insts[b.ext_pos[k]]; /* remapped below */
		nx_inst *f = nx_inst_new(c, NX_OP_FUSION, fshape, fops, b.next, "fusion");
		f->name = fresh_name(&s, "fusion", &s.cnt_fusion);
		f->a.fusion_kind = kind_of(&s, gi);
		if (gr->pattern)
			f->a.backend_config = nx_arena_printf(&m->arena, "{\"nx_pattern\":\"%s\"}", gr->pattern);
		nx_inst_set_called(f, &fc, 1);
		free(fops);
		const char *kd = f->a.fusion_kind;
		kinds[kd[1] == 'L' ? 0 : kd[1] == 'I' ? 1 : kd[1] == 'O' ? 2 : 3]++;
		fus[nf] = f;
		fkey[nf] = gr->maxpos;
		nf++;
		for (int k = 0; k < gr->n; k++)
			kernel_of[gr->m[k]] = f;
		if (nout == 1) {
			newval[outs[0]] = f;
		} else {
			gtes[nf - 1] = malloc(sizeof(nx_inst *) * (size_t)nout);
			ngtes[nf - 1] = nout;
			for (int k = 0; k < nout; k++) {
				nx_inst *ge = nx_inst_new(c, NX_OP_GET_TUPLE_ELEMENT, g->insts[outs[k]]->shape, &f, 1, "gte");
				ge->name = fresh_name(&s, "get-tuple-element", &s.cnt_gte);
				ge->a.tuple_index = k;
				newval[outs[k]] = ge;
				gtes[nf - 1][k] = ge;
			}
		}
		free(outs);
		/* Remember the external positions on the fusion (operands hold the
		 * pre-fusion instructions for now). */
	}
	/* Rewrite operands of the fusion instructions and of instructions that
	 * stay in the entry. */
	for (int k = 0; k < nf; k++) {
		nx_inst *f = fus[k];
		for (int o = 0; o < f->noperands; o++)
			f->operands[o] = newval[nx_fpos(f->operands[o])];
	}
	/* New entry order: kept instructions by position; each fusion (and its
	 * get-tuple-elements) at its last member's position; then a DFS makes it
	 * topological (a kernel can be read before its last member's position). */
	int total = 0;
	nx_inst **order = malloc(sizeof(nx_inst *) * ((size_t)n + (size_t)nf * 2 + (size_t)c->ninsts + 1));
	int *fat = malloc(sizeof(int) * ((size_t)n + 1));
	for (int i = 0; i < n; i++)
		fat[i] = -1;
	for (int k = 0; k < nf; k++)
		fat[fkey[k]] = k;
	int *uses = calloc((size_t)n + 1, sizeof(int));
	for (int i = 0; i < n; i++) {
		nx_inst *x = g->insts[i];
		if (g->group[i] < 0) {
			/* Kept: operands to new values. */
			bool rewrite = false;
			for (int o = 0; o < x->noperands; o++)
				rewrite |= newval[nx_fpos(x->operands[o])] != x->operands[o];
			if (rewrite) {
				nx_inst **ops = nx_arena_alloc(&m->arena, sizeof(nx_inst *) * (size_t)x->noperands);
				for (int o = 0; o < x->noperands; o++)
					ops[o] = newval[nx_fpos(x->operands[o])];
				x->operands = ops;
			}
			for (int o = 0; o < x->a.ncontrol_predecessors; o++) {
				nx_inst *cp = x->a.control_predecessors[o];
				if (cp->parent == c && nx_fpos(cp) < n && g->insts[nx_fpos(cp)] == cp &&
				    kernel_of[nx_fpos(cp)])
					x->a.control_predecessors[o] = kernel_of[nx_fpos(cp)];
			}
		}
	}
	/* Which kept instructions lost every user (copied constants, cheap
	 * producers now inside kernels)? Users come later, so one backward walk
	 * settles it. */
	for (int k = 0; k < nf; k++)
		for (int o = 0; o < fus[k]->noperands; o++) {
			nx_inst *op = fus[k]->operands[o];
			if (nx_fpos(op) >= 0 && nx_fpos(op) < n && g->insts[nx_fpos(op)] == op)
				uses[nx_fpos(op)]++;
		}
	bool *lost = calloc((size_t)n + 1, sizeof(bool));
	for (int i = n - 1; i >= 0; i--) {
		nx_inst *x = g->insts[i];
		if (g->group[i] >= 0)
			continue;
		lost[i] = uses[i] == 0 && g->uoff[i + 1] > g->uoff[i] && x != c->root &&
		          newval[nx_fpos(c->root)] != x && x->op != NX_OP_PARAMETER &&
		          !(nx_opcode_flags(x->op) & NX_OPF_SIDE_EFFECT) &&
		          (x->op == NX_OP_CONSTANT || clonable(&s, i));
		if (lost[i])
			continue;
		for (int o = 0; o < x->noperands; o++) {
			nx_inst *op = x->operands[o];
			if (nx_fpos(op) >= 0 && nx_fpos(op) < n && g->insts[nx_fpos(op)] == op)
				uses[nx_fpos(op)]++;
		}
		for (int o = 0; o < x->a.ncontrol_predecessors; o++) {
			nx_inst *op = x->a.control_predecessors[o];
			if (nx_fpos(op) >= 0 && nx_fpos(op) < n && g->insts[nx_fpos(op)] == op)
				uses[nx_fpos(op)]++;
		}
	}
	for (int i = 0; i < n; i++) {
		if (g->group[i] < 0 && !lost[i])
			order[total++] = g->insts[i];
		if (fat[i] >= 0) {
			int k = fat[i];
			order[total++] = fus[k];
			for (int j = 0; j < ngtes[k]; j++)
				order[total++] = gtes[k][j];
		}
	}
	free(lost);
	if (newval[nx_fpos(c->root)] != c->root)
		c->root = newval[nx_fpos(c->root)];
	/* Topological DFS over `order`. */
	for (int i = 0; i < total; i++)
		order[i]->aux = (void *)(intptr_t)i;
	int *state = calloc((size_t)total + 1, sizeof(int));
	int *stk = malloc(sizeof(int) * ((size_t)total + 1));
	int *sidx = malloc(sizeof(int) * ((size_t)total + 1));
	nx_inst **out = nx_arena_alloc(&m->arena, sizeof(nx_inst *) * ((size_t)total + 1));
	int no = 0;
	for (int i = 0; i < total; i++) {
		if (state[i])
			continue;
		int sp = 0;
		stk[sp] = i;
		sidx[sp++] = 0;
		state[i] = 1;
		while (sp) {
			int v = stk[sp - 1];
			nx_inst *x = order[v];
			int nops = x->noperands + x->a.ncontrol_predecessors;
			if (sidx[sp - 1] < nops) {
				int k = sidx[sp - 1]++;
				nx_inst *o = k < x->noperands ? x->operands[k]
				                              : x->a.control_predecessors[k - x->noperands];
				int w = (int)(intptr_t)o->aux;
				if (o->parent != c || w < 0 || w >= total || order[w] != o)
					continue;
				NX_ASSERT(state[w] != 1);
				if (!state[w]) {
					state[w] = 1;
					stk[sp] = w;
					sidx[sp++] = 0;
				}
				continue;
			}
			state[v] = 2;
			out[no++] = x;
			sp--;
		}
	}
	c->insts = out;
	c->ninsts = no;
	c->cap = total + 1;
	int64_t after = 0;
	for (int k = 0; k < nf; k++)
		after += kernel_bytes(fus[k]);
	nx_pass_log(ctx, 1,
	            "fusion: %d kernels (kLoop %d, kInput %d, kOutput %d, kCustom %d), HBM bytes before %lld after %lld",
	            nf, kinds[0], kinds[1], kinds[2], kinds[3], (long long)before, (long long)after);
	free(state);
	free(stk);
	free(sidx);
	free(order);
	free(fat);
	free(uses);
	for (int k = 0; k < nf; k++)
		free(gtes[k]);
	free(gtes);
	free(ngtes);
	free(fus);
	free(fkey);
	free(newval);
	free(kernel_of);
	free(b.memo_stamp);
	free(b.memo);
	free(b.ext_pos);
done:
	for (int i = 0; i < s.ngrp; i++)
		free(s.grp[i].m);
	free(s.grp);
	free(s.stamp);
	free(s.dupok);
	nx_frecompute_free(&s.rc);
	free(s.orig_ops);
	nx_strmap_free(&s.names);
	free(g->insts);
	free(g->uoff);
	free(g->users);
	free(g->group);
	return NX_OK;
}

/* The entry, and the bodies of the while loops it (or such a body) still
 * runs: the backend lowers those as device loops (backend/lower_while.c),
 * one kernel per fusion as in the entry. Collected first: fusing appends
 * computations. */
nx_status nx_pass_fusion(nx_module *m, const nx_pass_ctx *ctx, bool *changed)
{
	if (!m->entry)
		return NX_OK;
	nx_comp **cs = malloc(sizeof *cs * ((size_t)m->ncomps + 1));
	NX_ASSERT(cs);
	int nc = 0;
	cs[nc++] = m->entry;
	for (int k = 0; k < nc; k++)
		for (int i = 0; i < cs[k]->ninsts; i++) {
			const nx_inst *w = cs[k]->insts[i];
			if (w->op != NX_OP_WHILE || w->ncalled < 2)
				continue;
			bool seen = false;
			for (int j = 0; j < nc && !seen; j++)
				seen = cs[j] == w->called[1];
			if (!seen && nc < m->ncomps)
				cs[nc++] = w->called[1];
		}
	nx_status rc = NX_OK;
	for (int k = 0; k < nc && rc == NX_OK; k++)
		rc = fuse_comp(m, cs[k], ctx, changed);
	free(cs);
	return rc;
}
