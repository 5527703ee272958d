/* passes/trip_count.c — the trip count of a counted while loop (passes/loops.h).
 * Used by while-trip-count (annotation), while-unroll and the backend's
 * refusal of loops it cannot unroll. */
#include "passes/loops.h"

#include "ir/eval/eval.h"

/* An integer scalar constant, through copies, reshapes and bitcasts. */
static bool const_int(const nx_inst *i, int64_t *v)
{
	for (int hops = 0; i && hops < 8; hops++) {
		if ((i->op == NX_OP_COPY || i->op == NX_OP_RESHAPE || i->op == NX_OP_BITCAST) && i->noperands == 1) {
			i = i->operands[0];
			continue;
		}
		if (i->op != NX_OP_CONSTANT || !i->a.literal || !nx_shape_is_array(i->shape) ||
		    !nx_type_is_int(i->shape->type) || nx_shape_elems(i->shape) != 1)
			return false;
		if (nx_type_kind_of(i->shape->type) != NX_KIND_SINT && nx_lit_get_u64(i->a.literal, 0) > (uint64_t)INT64_MAX)
			return false;
		*v = nx_lit_get_i64(i->a.literal, 0);
		return true;
	}
	return false;
}

/* gte(param 0 of c, k) -> k; else -1 */
static int gte_of_param(const nx_inst *i, const nx_comp *c)
{
	if (i->op != NX_OP_GET_TUPLE_ELEMENT || c->nparams != 1 || i->operands[0] != c->params[0])
		return -1;
	return (int)i->a.tuple_index;
}

static int64_t ceil_div(int64_t a, int64_t b) /* a >= 0, b > 0 */
{
	return a / b + (a % b != 0);
}

static nx_trip_count unknown(nx_trip_count t, const char *why)
{
	t.n = -1;
	t.why = why;
	return t;
}

nx_trip_count nx_while_trip_count(const nx_inst *w)
{
	nx_trip_count t = {.n = -1, .index = -1};
	if (w->op != NX_OP_WHILE || w->ncalled != 2 || w->noperands != 1)
		return unknown(t, "not a while loop");
	const nx_comp *cond = w->called[0], *body = w->called[1];
	const nx_inst *cr = cond->root;
	if (!cr || cr->op != NX_OP_COMPARE || cr->noperands != 2)
		return unknown(t, "the condition's root is not a compare");
	/* the condition: compare(i, N) or compare(N, i) */
	int side = gte_of_param(cr->operands[0], cond) >= 0 ? 0 : 1;
	int k = gte_of_param(cr->operands[side], cond);
	if (k >= 0 && !nx_type_is_int(cr->operands[side]->shape->type))
		return unknown(t, "the loop-state element the condition compares is not an integer");
	if (k < 0 || !const_int(cr->operands[1 - side], &t.bound))
		return unknown(t, "the condition does not compare a loop-state element with a constant");
	t.index = k;
	/* the body: root tuple with i + S (or i - S) at index k */
	const nx_inst *br = body->root;
	if (!br || br->op != NX_OP_TUPLE || k >= br->noperands)
		return unknown(t, "the body's root is not a tuple");
	const nx_inst *up = br->operands[k];
	if (up->op == NX_OP_ADD && gte_of_param(up->operands[0], body) == k && const_int(up->operands[1], &t.step)) {
	} else if (up->op == NX_OP_ADD && gte_of_param(up->operands[1], body) == k &&
	           const_int(up->operands[0], &t.step)) {
	} else if (up->op == NX_OP_SUBTRACT && gte_of_param(up->operands[0], body) == k &&
	           const_int(up->operands[1], &t.step) && t.step > INT64_MIN) {
		t.step = -t.step;
	} else {
		return unknown(t, "the body does not add a constant to the induction variable");
	}
	/* the init: element k of the init tuple is a constant */
	const nx_inst *init = w->operands[0];
	if (init->op != NX_OP_TUPLE || k >= init->noperands || !const_int(init->operands[k], &t.init))
		return unknown(t, "the induction variable does not start at a constant");
	const int64_t lim = (int64_t)1 << 62;
	if (t.init <= -lim || t.init >= lim || t.bound <= -lim || t.bound >= lim || t.step <= -lim || t.step >= lim)
		return unknown(t, "constants beyond 2^62");
	nx_cmp_dir d = cr->a.direction;
	if (side == 1) /* N op i  ==  i op' N */
		d = d == NX_CMP_LT ? NX_CMP_GT : d == NX_CMP_GT ? NX_CMP_LT : d == NX_CMP_LE ? NX_CMP_GE
		  : d == NX_CMP_GE ? NX_CMP_LE : d;
	int64_t K = t.init, N = t.bound, S = t.step;
	switch (d) {
	case NX_CMP_LT:
		t.n = K >= N ? 0 : S > 0 ? ceil_div(N - K, S) : -1;
		break;
	case NX_CMP_LE:
		t.n = K > N ? 0 : S > 0 ? ceil_div(N - K + 1, S) : -1;
		break;
	case NX_CMP_GT:
		t.n = K <= N ? 0 : S < 0 ? ceil_div(K - N, -S) : -1;
		break;
	case NX_CMP_GE:
		t.n = K < N ? 0 : S < 0 ? ceil_div(K - N + 1, -S) : -1;
		break;
	case NX_CMP_NE:
		t.n = K == N ? 0 : S != 0 && (N - K) % S == 0 && (N - K) / S > 0 ? (N - K) / S : -1;
		break;
	case NX_CMP_EQ:
		t.n = K != N ? 0 : S != 0 ? 1 : -1;
		break;
	default:
		return unknown(t, "unknown compare direction");
	}
	if (t.n < 0)
		return unknown(t, "the induction variable never reaches the bound");
	/* the last value the loop computes must not wrap in the variable's type */
	int bits = nx_type_bits(cr->operands[side]->shape->type);
	if (bits < 64) {
		bool sg = nx_type_kind_of(cr->operands[side]->shape->type) == NX_KIND_SINT;
		int64_t lo = sg ? -((int64_t)1 << (bits - 1)) : 0;
		int64_t hi = sg ? ((int64_t)1 << (bits - 1)) - 1 : (int64_t)(((uint64_t)1 << bits) - 1);
		if (t.n > lim / (S < 0 ? -S : S > 0 ? S : 1))
			return unknown(t, "the induction variable wraps around");
		int64_t last = K + t.n * S;
		if (last < lo || last > hi)
			return unknown(t, "the induction variable wraps around");
	}
	t.why = NULL;
	return t;
}
