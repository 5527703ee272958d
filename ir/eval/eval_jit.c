/* ir/eval/eval_jit.c — which instructions of a computation the host JIT
 * computes together (nx_eval_jit_hook, eval.h). The evaluator only plans;
 * the hook (installed by compiler/) decides which instructions it can
 * reproduce bit for bit and compiles the kernels. */
#include "ir/eval/eval_impl.h"

#include <stdlib.h>
#include <string.h>

const nx_eval_jit_ops *nx_eval_jit_hook;

static _Atomic int64_t n_clusters, n_insts;

void nx_eval_jit_stats(int64_t *clusters, int64_t *insts)
{
	*clusters = n_clusters;
	*insts = n_insts;
}

void nx_eval_jit_count(int64_t insts)
{
	n_clusters++;
	n_insts += insts;
}

static bool is_view(nx_opcode op)
{
	return op == NX_OP_BROADCAST || op == NX_OP_RESHAPE || op == NX_OP_BITCAST;
}

/* i can be in a cluster whose root has n elements */
static bool fits(const nx_inst *i, int64_t n)
{
	if (!nx_shape_is_array(i->shape) || nx_shape_elems(i->shape) != n)
		return false;
	if (!(nx_opcode_flags(i->op) & NX_OPF_ELEMENTWISE) && !is_view(i->op))
		return false;
	return nx_eval_jit_hook->member(i);
}

void nx_eval_jit_plan(const nx_comp *c, const int *uses, int (*pos)(const void *ctx, const nx_inst *i),
                      const void *ctx, nx_jit_plan *p)
{
	memset(p, 0, sizeof *p);
	const nx_eval_jit_ops *h = nx_eval_jit_hook;
	int n = c->ninsts;
	if (!h || n == 0)
		return;
	p->role = malloc(sizeof(int) * (size_t)n);
	int *mem = malloc(sizeof(int) * (size_t)n);
	int *leaf = malloc(sizeof(int) * (size_t)n);
	const nx_inst **mi = malloc(sizeof(*mi) * (size_t)n), **li = malloc(sizeof(*li) * (size_t)n);
	NX_ASSERT(p->role && mem && leaf && mi && li);
	for (int k = 0; k < n; k++)
		p->role[k] = NX_JIT_NONE;
	for (int r = n - 1; r >= 0; r--) {
		const nx_inst *root = c->insts[r];
		if (p->role[r] != NX_JIT_NONE || is_view(root->op) || !nx_shape_is_array(root->shape))
			continue;
		int64_t ne = nx_shape_elems(root->shape);
		if (ne < h->min_elems || ne < 1 || !fits(root, ne))
			continue;
		/* absorb operands whose every use is by a member (a DAG: a value
		 * used twice inside the cluster is computed once), until none is
		 * left or the cluster is NX_JIT_MAXM large */
		int nm = 0;
		mem[nm++] = r;
		p->role[r] = NX_JIT_MEMBER;
		for (bool grew = true; grew && nm < NX_JIT_MAXM;) {
			grew = false;
			for (int a = 0; a < nm && nm < NX_JIT_MAXM; a++) {
				const nx_inst *in = c->insts[mem[a]];
				if (in->op == NX_OP_BROADCAST)
					continue; /* its operand is read through the broadcast's index map */
				for (int j = 0; j < in->noperands && nm < NX_JIT_MAXM; j++) {
					int q = pos(ctx, in->operands[j]);
					const nx_inst *o = c->insts[q];
					if (p->role[q] != NX_JIT_NONE || o == c->root || !fits(o, ne))
						continue;
					int cnt = 0;
					bool bcast = false;
					for (int b = 0; b < nm; b++) {
						const nx_inst *u = c->insts[mem[b]];
						for (int jj = 0; jj < u->noperands; jj++)
							if (u->operands[jj] == o) {
								cnt++;
								bcast |= u->op == NX_OP_BROADCAST;
							}
					}
					if (cnt == uses[q] && !bcast) {
						p->role[q] = NX_JIT_MEMBER;
						mem[nm++] = q;
						grew = true;
					}
				}
			}
		}
		/* evaluation order: ascending positions */
		for (int a = 1; a < nm; a++)
			for (int b = a; b > 0 && mem[b - 1] > mem[b]; b--) {
				int t = mem[b];
				mem[b] = mem[b - 1], mem[b - 1] = t;
			}
		int nl = 0;
		for (int a = 0; a < nm; a++) {
			const nx_inst *in = c->insts[mem[a]];
			mi[a] = in;
			for (int j = 0; j < in->noperands; j++) {
				int q = pos(ctx, in->operands[j]);
				if (p->role[q] == NX_JIT_MEMBER)
					continue;
				bool seen = false;
				for (int b = 0; b < nl && !seen; b++)
					seen = leaf[b] == q;
				if (!seen) {
					li[nl] = c->insts[q];
					leaf[nl++] = q;
				}
			}
		}
		nx_eval_cluster cl = {mi, nm, li, nl, ne};
		void *kern = h->compile(&cl);
		if (!kern) { /* the hook cannot: the members may root smaller clusters */
			for (int a = 0; a < nm; a++)
				p->role[mem[a]] = NX_JIT_NONE;
			p->role[r] = -3; /* tried */
			continue;
		}
		p->cl = realloc(p->cl, sizeof(*p->cl) * (size_t)(p->ncl + 1));
		NX_ASSERT(p->cl);
		nx_jit_cl *x = &p->cl[p->ncl];
		x->kernel = kern;
		x->nm = nm, x->nl = nl;
		x->members = malloc(sizeof(int) * (size_t)nm);
		x->leaves = malloc(sizeof(int) * (size_t)(nl + 1));
		NX_ASSERT(x->members && x->leaves);
		memcpy(x->members, mem, sizeof(int) * (size_t)nm);
		memcpy(x->leaves, leaf, sizeof(int) * (size_t)nl);
		p->role[r] = p->ncl++;
	}
	for (int k = 0; k < n; k++)
		if (p->role[k] == -3)
			p->role[k] = NX_JIT_NONE;
	free(mem), free(leaf), free(mi), free(li);
}

void nx_eval_jit_plan_free(nx_jit_plan *p)
{
	for (int k = 0; k < p->ncl; k++) {
		free(p->cl[k].members);
		free(p->cl[k].leaves);
	}
	free(p->cl);
	free(p->role);
	memset(p, 0, sizeof *p);
}
