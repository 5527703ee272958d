/* ir/eval/eval_topk.c — topk in the reference evaluator: along the last
 * dimension, the k largest (largest=true, the default) or smallest values
 * and their s32 indices, ordered as XLA's TopK decomposition orders them: a
 * stable sort under the total order of floats (-NaN < -inf < ... < -0 < +0
 * < ... < +inf < +NaN; integers by value), ties in index order. */
#include <stdlib.h>
#include <string.h>

#include "ir/eval/eval_ops.h"

static const char *attr(const nx_inst *i, const char *key)
{
	for (int k = 0; k < i->a.nunknown; k++)
		if (!strcmp(i->a.unknown[k].key, key))
			return i->a.unknown[k].value;
	return NULL;
}

/* a total order key: floats by bit pattern (sign-flipped), ints by value */
static int64_t key(const nx_literal *l, int64_t idx)
{
	nx_type t = l->shape->type;
	if (nx_type_is_float(t)) {
		double d = nx_lit_get_f64(l, idx);
		float f = (float)d;
		int32_t b;
		memcpy(&b, &f, 4);
		return b < 0 ? (int64_t)(b ^ INT32_MAX) : b;
	}
	if (t == NX_U64)
		return (int64_t)(nx_lit_get_u64(l, idx) >> 1); /* order kept for values < 2^63 */
	return nx_lit_get_i64(l, idx);
}

nx_status nx_eval_topk(nx_eval *ev, const nx_inst *i, nx_literal *const *ops, nx_literal **out)
{
	const nx_literal *x = ops[0];
	const nx_shape *xs = x->shape;
	if (!nx_shape_is_tuple(i->shape) || i->shape->ntuple != 2 || xs->rank < 1)
		return nx_eval_error(ev, i, "topk needs an array operand and a (values, indices) result");
	const char *lg = attr(i, "largest");
	bool largest = !lg || strcmp(lg, "false") != 0;
	int64_t R = xs->dims[xs->rank - 1], K = i->shape->tuple[0]->dims[xs->rank - 1];
	int64_t O = R ? nx_shape_elems(xs) / R : 0;
	nx_literal *res = nx_arena_alloc(&ev->arena, sizeof *res);
	memset(res, 0, sizeof *res);
	res->shape = i->shape;
	res->ntuple = 2;
	res->tuple = nx_arena_alloc(&ev->arena, 2 * sizeof *res->tuple);
	for (int k = 0; k < 2; k++)
		if (!(res->tuple[k] = nx_eval_alloc(ev, i->shape->tuple[k])))
			return ev->diag->status;
	*out = res;
	int64_t *best = malloc(sizeof *best * (size_t)(K + 1)), *bk = malloc(sizeof *bk * (size_t)(K + 1));
	for (int64_t o = 0; o < O; o++) {
		int64_t m = 0;
		for (int64_t e = 0; e < R; e++) { /* insertion into the best m, stable */
			int64_t v = key(x, o * R + e), j = m;
			while (j > 0 && (largest ? v > bk[j - 1] : v < bk[j - 1]))
				j--;
			if (j >= K)
				continue;
			int64_t last = m < K ? m : K - 1;
			for (int64_t q = last; q > j; q--)
				best[q] = best[q - 1], bk[q] = bk[q - 1];
			best[j] = e, bk[j] = v;
			if (m < K)
				m++;
		}
		for (int64_t j = 0; j < K; j++) {
			nx_lit_copy_elem(res->tuple[0], o * K + j, x, o * R + best[j]);
			nx_lit_set_i64(res->tuple[1], o * K + j, best[j]);
		}
	}
	free(best);
	free(bk);
	return NX_OK;
}
