/* passes/fusion_patterns.c — --model-type transformer patterns, each one
 * kCustom kernel whose computation is named after it:
 *   softmax    AwsNeuronSoftmax custom call, or reduce-max -> subtract -> exp
 *              -> reduce-add -> divide (converts and broadcasts allowed)
 *   layer_norm rsqrt (or sqrt) of (reduce-add variance + eps) applied to
 *              x - mean, with the scale and shift that follow
 *   gelu       AwsNeuronGelu custom call, 0.5*x*(1+erf(x/sqrt2)), or the tanh
 *              form 0.5*x*(1+tanh(c*(x+0.044715*x^3)))
 *   attention  dot -> (scale/mask/convert) -> softmax -> (convert) -> dot
 * The members of an expanded pattern are the instructions on a path from
 * its input x to its root ("between x and root"), which is convex by
 * construction; members read outside become extra kernel outputs. */
#include "passes/fusion.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
	nx_fgraph *g;
	int *mark;   /* scratch marks */
	int markv;
	int *list;   /* scratch list */
	nx_fpattern *out;
	int nout, cap;
	bool *taken;
} pctx;

static const nx_inst *skip_up(const nx_inst *i)
{
	/* Looks through converts, reshapes and broadcasts towards the producer. */
	while (i->op == NX_OP_CONVERT || i->op == NX_OP_RESHAPE || i->op == NX_OP_BROADCAST ||
	       i->op == NX_OP_BITCAST)
		i = i->operands[0];
	return i;
}

static bool is_reduce_of(const nx_inst *i, nx_opcode op)
{
	return i->op == NX_OP_REDUCE && i->noperands == 2 && nx_fusion_reducer_op(i) == op;
}

/* Members between x and root: forward from x (positions <= root), then
 * backward from root within that set. At most 256 members. */
static int between(pctx *p, int x, int root)
{
	nx_fgraph *g = p->g;
	int fwd = ++p->markv;
	int *st = p->list, sp = 0, nfw = 0;
	st[sp++] = x;
	p->mark[x] = fwd;
	while (sp) {
		int v = st[--sp];
		if (++nfw > 512)
			return -1;
		for (int k = g->uoff[v]; k < g->uoff[v + 1]; k++) {
			int u = g->users[k];
			if (u <= root && p->mark[u] != fwd) {
				p->mark[u] = fwd;
				st[sp++] = u;
			}
		}
	}
	if (p->mark[root] != fwd)
		return -1;
	int bwd = ++p->markv;
	int nm = 0;
	sp = 0;
	st[sp++] = root;
	p->mark[root] = bwd;
	int *mem = malloc(sizeof(int) * 600);
	while (sp) {
		int v = st[--sp];
		if (v == x)
			continue;
		mem[nm++] = v;
		if (nm > 256) {
			free(mem);
			return -1;
		}
		nx_inst *vi = g->insts[v];
		for (int k = 0; k < vi->noperands; k++) {
			int o = nx_fpos(vi->operands[k]);
			if (p->mark[o] == fwd) {
				p->mark[o] = bwd;
				st[sp++] = o;
			}
		}
	}
	memcpy(p->list, mem, sizeof(int) * (size_t)nm);
	free(mem);
	return nm;
}

static void emit(pctx *p, const char *name, const int *m, int n)
{
	nx_fgraph *g = p->g;
	for (int i = 0; i < n; i++)
		if (p->taken[m[i]] || g->group[m[i]] >= 0 || !nx_fusion_fusible(g->insts[m[i]]))
			return;
	if (p->nout == p->cap) {
		p->cap = p->cap ? 2 * p->cap : 16;
		p->out = realloc(p->out, sizeof(nx_fpattern) * (size_t)p->cap);
	}
	nx_fpattern *f = &p->out[p->nout++];
	f->name = name;
	f->nmembers = n;
	f->members = malloc(sizeof(int) * (size_t)(n ? n : 1));
	memcpy(f->members, m, sizeof(int) * (size_t)n);
	for (int i = 0; i < n; i++)
		p->taken[m[i]] = true;
}

static bool has_op(pctx *p, int n, nx_opcode op)
{
	for (int i = 0; i < n; i++)
		if (p->g->insts[p->list[i]]->op == op)
			return true;
	return false;
}

/* Follows single users through ops in `ok` up to `steps`; returns the last. */
static int walk_down(nx_fgraph *g, int v, int steps, bool (*ok)(const nx_inst *))
{
	for (int s = 0; s < steps; s++) {
		if (g->uoff[v + 1] - g->uoff[v] != 1)
			break;
		int u = g->users[g->uoff[v]];
		if (!ok(g->insts[u]))
			break;
		v = u;
	}
	return v;
}

static bool epilogue_op(const nx_inst *i)
{
	return i->op == NX_OP_MULTIPLY || i->op == NX_OP_ADD || i->op == NX_OP_CONVERT ||
	       i->op == NX_OP_SUBTRACT;
}

static bool softmax_at(pctx *p, int rmax, int *root_out, int *x_out)
{
	nx_fgraph *g = p->g;
	nx_inst *r = g->insts[rmax];
	int x = nx_fpos(r->operands[0]);
	/* Forward: find the exp, then a divide reading the exp and a sum. */
	for (int k = g->uoff[x]; k < g->uoff[x + 1]; k++) {
		nx_inst *sub = g->insts[g->users[k]];
		if (sub->op != NX_OP_SUBTRACT)
			continue;
		int sp = g->users[k];
		for (int j = g->uoff[sp]; j < g->uoff[sp + 1]; j++) {
			int e = g->users[j];
			if (g->insts[e]->op != NX_OP_EXPONENTIAL)
				continue;
			/* The divide within two hops of the exp. */
			int cand[8], nc = 0;
			for (int a = g->uoff[e]; a < g->uoff[e + 1] && nc < 8; a++) {
				int u = g->users[a];
				cand[nc++] = u;
				if (g->insts[u]->op == NX_OP_CONVERT)
					for (int b = g->uoff[u]; b < g->uoff[u + 1] && nc < 8; b++)
						cand[nc++] = g->users[b];
			}
			for (int c = 0; c < nc; c++) {
				nx_inst *d = g->insts[cand[c]];
				if (d->op != NX_OP_DIVIDE)
					continue;
				if (!is_reduce_of(skip_up(d->operands[1]), NX_OP_ADD))
					continue;
				*root_out = cand[c];
				*x_out = x;
				return true;
			}
		}
	}
	return false;
}

static bool is_transcendental_anchor(const nx_inst *i)
{
	return i->op == NX_OP_ERF || i->op == NX_OP_TANH;
}

int nx_fusion_find_patterns(nx_fgraph *g, nx_fpattern **out)
{
	pctx p = {0};
	p.g = g;
	p.mark = calloc((size_t)g->n + 1, sizeof(int));
	p.list = malloc(sizeof(int) * ((size_t)g->n + 600));
	p.taken = calloc((size_t)g->n + 1, sizeof(bool));
	/* Softmax first: attention is built around it. */
	int *smax_root = malloc(sizeof(int) * ((size_t)g->n + 1));
	for (int i = 0; i < g->n; i++)
		smax_root[i] = -1;
	for (int i = 0; i < g->n; i++) {
		nx_inst *x = g->insts[i];
		if (x->op == NX_OP_CUSTOM_CALL && x->a.custom_call_target) {
			const char *t = x->a.custom_call_target;
			const char *name = !strcmp(t, "AwsNeuronSoftmax")           ? "softmax"
			                   : !strcmp(t, "AwsNeuronGelu")            ? "gelu"
			                   : !strcmp(t, "AwsNeuronSoftmaxBackward") ? "softmax_backward"
			                   : !strcmp(t, "AwsNeuronGeluBackward")    ? "gelu_backward"
			                                                            : NULL;
			if (name) {
				emit(&p, name, &i, 1);
				if (!strcmp(name, "softmax"))
					smax_root[i] = i;
			}
			continue;
		}
		int root, in;
		if (is_reduce_of(x, NX_OP_MAXIMUM) && softmax_at(&p, i, &root, &in)) {
			int n = between(&p, in, root);
			if (n > 0 && has_op(&p, n, NX_OP_EXPONENTIAL)) {
				int before = p.nout;
				emit(&p, "softmax", p.list, n);
				if (p.nout > before)
					smax_root[root] = root;
			}
		}
	}
	/* Layer norm: rsqrt (or sqrt) whose input comes from a reduce-add. */
	for (int i = 0; i < g->n; i++) {
		nx_inst *a = g->insts[i];
		if ((a->op != NX_OP_RSQRT && a->op != NX_OP_SQRT) || p.taken[i])
			continue;
		/* Backward to the subtract x - mean feeding the variance. */
		const nx_inst *v = a->operands[0];
		if (v->op == NX_OP_ADD) /* + epsilon */
			v = skip_up(v->operands[0])->op == NX_OP_CONSTANT ? v->operands[1] : v->operands[0];
		v = skip_up(v);
		if (v->op == NX_OP_MULTIPLY || v->op == NX_OP_DIVIDE)
			v = skip_up(v->operands[0]);
		if (!is_reduce_of(v, NX_OP_ADD))
			continue;
		const nx_inst *sq = skip_up(v->operands[0]);
		if (sq->op != NX_OP_MULTIPLY)
			continue;
		const nx_inst *xc = skip_up(sq->operands[0]);
		if (xc->op != NX_OP_SUBTRACT)
			continue;
		int x = nx_fpos(xc->operands[0]);
		/* Forward: the multiply by the broadcast rsqrt, then scale/shift. */
		int root = -1;
		int xcp = nx_fpos(xc);
		for (int k = g->uoff[xcp]; k < g->uoff[xcp + 1]; k++) {
			int u = g->users[k];
			if (g->insts[u]->op == NX_OP_MULTIPLY && u > i)
				root = u;
		}
		if (root < 0)
			continue;
		root = walk_down(g, root, 3, epilogue_op);
		int n = between(&p, x, root);
		if (n > 0)
			emit(&p, "layer_norm", p.list, n);
	}
	/* GELU: erf or tanh anchors. */
	for (int i = 0; i < g->n; i++) {
		nx_inst *a = g->insts[i];
		if (!is_transcendental_anchor(a) || p.taken[i])
			continue;
		/* x: for erf, the non-constant operand of erf's multiply; for tanh,
		 * the value used both inside the polynomial and outside it. */
		const nx_inst *m = skip_up(a->operands[0]);
		const nx_inst *x = NULL;
		if (a->op == NX_OP_ERF && (m->op == NX_OP_MULTIPLY || m->op == NX_OP_DIVIDE)) {
			x = skip_up(m->operands[0])->op == NX_OP_CONSTANT ? m->operands[1] : m->operands[0];
		} else if (a->op == NX_OP_TANH && m->op == NX_OP_MULTIPLY) {
			const nx_inst *s = skip_up(m->operands[0])->op == NX_OP_CONSTANT ? m->operands[1]
			                                                              : m->operands[0];
			if (s->op == NX_OP_ADD)
				x = s->operands[0]->op == NX_OP_MULTIPLY ? s->operands[1] : s->operands[0];
		}
		if (!x)
			continue;
		int root = walk_down(g, walk_down(g, i, 1, epilogue_op), 3, epilogue_op);
		if (root == i)
			continue;
		int n = between(&p, nx_fpos(x), root);
		int muls = 0;
		for (int k = 0; k < n; k++)
			muls += g->insts[p.list[k]]->op == NX_OP_MULTIPLY;
		if (n > 0 && muls >= 2 && has_op(&p, n, NX_OP_ADD))
			emit(&p, "gelu", p.list, n);
	}
	/* Attention: a softmax kernel between two dots. Rebuilt as one pattern
	 * (the softmax entry is replaced). */
	for (int k = 0; k < p.nout; k++) {
		nx_fpattern *sm = &p.out[k];
		if (strcmp(sm->name, "softmax") != 0)
			continue;
		int root = -1, minm = g->n;
		for (int j = 0; j < sm->nmembers; j++) {
			if (sm->members[j] > root)
				root = sm->members[j];
			if (sm->members[j] < minm)
				minm = sm->members[j];
		}
		/* Input side: the softmax input, through single-user elementwise ops. */
		const nx_inst *in = NULL;
		for (int j = 0; j < sm->nmembers && !in; j++) {
			nx_inst *mi = g->insts[sm->members[j]];
			for (int o = 0; o < mi->noperands; o++) {
				int op = nx_fpos(mi->operands[o]);
				if (!p.taken[op] && g->insts[op]->shape->rank >= 2 &&
				    g->insts[op]->op != NX_OP_CONSTANT && g->insts[op]->op != NX_OP_BROADCAST &&
				    nx_shape_elems(g->insts[op]->shape) == nx_shape_elems(g->insts[root]->shape))
					in = g->insts[op];
			}
		}
		if (!in)
			continue;
		int chain[8], nch = 0;
		const nx_inst *d1 = in;
		while (nch < 4 && d1->op != NX_OP_DOT && (nx_opcode_flags(d1->op) & NX_OPF_ELEMENTWISE) &&
		       g->uoff[nx_fpos(d1) + 1] - g->uoff[nx_fpos(d1)] == 1) {
			chain[nch++] = nx_fpos(d1);
			d1 = d1->operands[0]->op == NX_OP_BROADCAST && d1->noperands > 1 ? d1->operands[1]
			                                                                 : d1->operands[0];
		}
		if (d1->op != NX_OP_DOT || g->uoff[nx_fpos(d1) + 1] - g->uoff[nx_fpos(d1)] != 1)
			continue;
		chain[nch++] = nx_fpos(d1);
		/* Output side. */
		int v = root;
		while (nch < 8 && g->uoff[v + 1] - g->uoff[v] == 1 &&
		       g->insts[g->users[g->uoff[v]]]->op == NX_OP_CONVERT) {
			v = g->users[g->uoff[v]];
			chain[nch++] = v;
		}
		if (g->uoff[v + 1] - g->uoff[v] != 1 || g->insts[g->users[g->uoff[v]]]->op != NX_OP_DOT)
			continue;
		int d2 = g->users[g->uoff[v]];
		chain[nch++] = d2;
		bool ok = true;
		for (int j = 0; j < nch; j++)
			ok &= !p.taken[chain[j]] || g->insts[chain[j]]->op == NX_OP_CUSTOM_CALL;
		ok &= !p.taken[d2];
		if (!ok)
			continue;
		int *mem = malloc(sizeof(int) * (size_t)(sm->nmembers + nch));
		memcpy(mem, sm->members, sizeof(int) * (size_t)sm->nmembers);
		int nm = sm->nmembers;
		for (int j = 0; j < nch; j++)
			if (!p.taken[chain[j]])
				mem[nm++] = chain[j];
		for (int j = 0; j < nm; j++)
			p.taken[mem[j]] = true;
		free(sm->members);
		sm->members = mem;
		sm->nmembers = nm;
		sm->name = "attention";
	}
	free(p.mark);
	free(p.list);
	free(p.taken);
	free(smax_root);
	*out = p.out;
	return p.nout;
}
