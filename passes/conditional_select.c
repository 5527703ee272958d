/* passes/conditional_select.c — a `conditional` whose branches have no side
 * effects becomes straight-line code: every branch's body is cloned into the
 * caller with its operand for the parameter, and the result is chosen
 * element by element with `select`.
 *
 *   conditional(p, t, f), true_computation=T, false_computation=F
 *     -> select(broadcast(p), T(t), F(f))
 *   conditional(i, o0..oN-1), branch_computations={B0..BN-1}
 *     -> select(i == 0, B0(o0), select(i == 1, B1(o1), ... BN-1(oN-1)))
 *
 * An index outside [0, N) takes the last branch, as XLA's semantics say
 * (no compare matches). Tuple results are selected leaf by leaf. Every
 * branch runs, so the cost is the sum of the branches, not the one taken;
 * in exchange the backend needs no branch on the device (docs/passes.md).
 * A branch with a side effect (rng, infeed, outfeed, send, recv) keeps its
 * conditional, which the backend refuses by name. Branches containing
 * conditionals are cloned as they are and rewritten in the next round. */
#include "passes/rewrite.h"

#include <stdlib.h>

enum { MAX_ROUNDS = 64, MAX_CLONED = 1 << 20 }; /* nesting depth; instructions cloned per run */

typedef struct cs_state {
	int64_t cloned;
} cs_state;

static bool comp_pure(const nx_comp *c, int depth)
{
	if (depth > 64)
		return false;
	for (int i = 0; i < c->ninsts; i++) {
		const nx_inst *in = c->insts[i];
		if (nx_opcode_flags(in->op) & NX_OPF_SIDE_EFFECT)
			return false;
		for (int k = 0; k < in->ncalled; k++)
			if (!comp_pure(in->called[k], depth + 1))
				return false;
	}
	return true;
}

static bool has_token(const nx_shape *s)
{
	if (s->type == NX_TOKEN)
		return true;
	if (s->type == NX_TUPLE)
		for (int k = 0; k < s->ntuple; k++)
			if (has_token(s->tuple[k]))
				return true;
	return false;
}

/* Branch b's body cloned before the conditional (names <name>.<cond>.b<b>);
 * returns its root's clone. */
static nx_inst *clone_branch(nx_rw *rw, const nx_inst *cond, int b, nx_inst *arg)
{
	const nx_comp *body = cond->called[b];
	nx_inst **cl = malloc(sizeof(nx_inst *) * (size_t)(body->ninsts + 1));
	NX_ASSERT(cl);
	int n = 0;
	nx_inst *root = nx_pass_clone_body(rw->m, rw->c, body, &arg,
	                                   nx_arena_printf(nx_rw_arena(rw), "%s.b%d", cond->name, b), cl, &n);
	for (int k = 0; k < n; k++)
		nx_rw_place(rw, cl[k]);
	free(cl);
	return root;
}

static nx_inst *gte(nx_rw *rw, nx_inst *x, int k)
{
	nx_inst *g = nx_rw_add(rw, NX_OP_GET_TUPLE_ELEMENT, x->shape->tuple[k], &x, 1, NULL);
	g->a.tuple_index = k;
	return g;
}

/* select(p, t, f) over every leaf of t's shape; p is pred[]. */
static nx_inst *select_leaves(nx_rw *rw, nx_inst *p, nx_inst *t, nx_inst *f)
{
	const nx_shape *s = t->shape;
	if (s->type == NX_TUPLE) {
		nx_inst **el = nx_arena_alloc(nx_rw_arena(rw), sizeof(nx_inst *) * (size_t)(s->ntuple ? s->ntuple : 1));
		for (int k = 0; k < s->ntuple; k++)
			el[k] = select_leaves(rw, p, gte(rw, t, k), gte(rw, f, k));
		return nx_rw_add(rw, NX_OP_TUPLE, t->shape, el, s->ntuple, NULL);
	}
	nx_inst *pb = p;
	if (s->rank > 0)
		pb = nx_rw_broadcast(rw, p, NX_PRED, s->rank, s->dims, NULL);
	nx_inst *ops[3] = {pb, t, f};
	return nx_rw_add(rw, NX_OP_SELECT, t->shape, ops, 3, NULL);
}

static nx_inst *rewrite(nx_rw *rw, nx_inst *in)
{
	cs_state *st = rw->user;
	if (in->op != NX_OP_CONDITIONAL || in->ncalled < 1 || has_token(in->shape))
		return NULL;
	nx_inst *sel = in->operands[0];
	bool is_pred = sel->shape->type == NX_PRED;
	int nb = in->ncalled;
	if (is_pred ? nb != 2 || in->noperands != 3 : in->noperands != nb + 1)
		return NULL; /* the verifier reports malformed conditionals */
	int64_t size = 0;
	for (int b = 0; b < nb; b++) {
		if (!comp_pure(in->called[b], 0) || in->called[b]->nparams != 1)
			return NULL;
		size += in->called[b]->ninsts;
	}
	if (st->cloned + size > MAX_CLONED)
		return NULL;
	st->cloned += size;
	nx_pass_log(rw->ctx, 2, "conditional-select: %s (%d branches, %lld instructions)", in->name, nb,
	            (long long)size);
	nx_inst *res = clone_branch(rw, in, nb - 1, in->operands[nb]);
	for (int b = nb - 2; b >= 0; b--) {
		nx_inst *r = clone_branch(rw, in, b, in->operands[b + 1]);
		nx_inst *p = sel;
		if (!is_pred) {
			p = nx_rw_binary(rw, NX_OP_COMPARE, sel, nx_rw_scalar(rw, sel->shape->type, (double)b));
			p->a.direction = NX_CMP_EQ;
		}
		res = select_leaves(rw, p, r, res);
	}
	return res;
}

nx_status nx_pass_conditional_select(nx_module *m, const nx_pass_ctx *ctx, bool *changed)
{
	cs_state st = {0};
	for (int round = 0; round < MAX_ROUNDS; round++) {
		bool ch = false;
		nx_status s = nx_rw_run(m, ctx, "conditional-select", rewrite, &st, &ch);
		if (s != NX_OK)
			return s;
		if (!ch)
			break;
		*changed = true;
	}
	return NX_OK;
}
