/* ir/eval/eval_sort.c — sort in the reference evaluator: every 1-D slice along
 * the sort dimension is ordered by a stable merge sort (which satisfies
 * both is_stable and the unstable contract), comparing through the
 * comparator computation on 2N scalars (p0.lhs, p0.rhs, p1.lhs, ...). */
#include <stdlib.h>

#include "ir/eval/eval_ops.h"

typedef struct sort_ctx {
	nx_eval *ev;
	const nx_inst *inst;
	const nx_comp *cmp;
	nx_literal *const *ops;
	int n;
	nx_literal **args; /* 2n scalars */
	nx_cmp_dir fast;   /* comparator is compare(p0, p1): direction; else NONE */
	bool total;        /* ... with type=TOTALORDER */
	nx_status st;
} sort_ctx;

/* Key for total order on floats: -NaN < -inf < ... < -0 < +0 < ... < NaN. */
static int total_cmp(double x, double y)
{
	bool xn = isnan(x), yn = isnan(y);
	if (xn || yn) {
		int kx = xn ? (signbit(x) ? -2 : 2) : 0, ky = yn ? (signbit(y) ? -2 : 2) : 0;
		return kx < ky ? -1 : kx > ky;
	}
	if (x == 0 && y == 0) {
		bool sx = signbit(x), sy = signbit(y);
		return sx == sy ? 0 : sx ? -1 : 1;
	}
	return x < y ? -1 : x > y;
}

/* Is element a (of the slice) less than element b per the comparator? */
static bool less(sort_ctx *c, int64_t a, int64_t b)
{
	if (c->st != NX_OK)
		return false;
	if (c->fast != NX_CMP_NONE) {
		const nx_literal *k = c->ops[0];
		int r;
		nx_type_kind kind = nx_type_kind_of(k->shape->type);
		if (kind == NX_KIND_FLOAT) {
			double x = nx_lit_get_f64(k, a), y = nx_lit_get_f64(k, b);
			if (c->total) {
				r = total_cmp(x, y);
			} else {
				if (isnan(x) || isnan(y))
					return c->fast == NX_CMP_NE;
				r = x < y ? -1 : x > y;
			}
		} else if (kind == NX_KIND_UINT || kind == NX_KIND_PRED) {
			uint64_t x = nx_lit_get_u64(k, a), y = nx_lit_get_u64(k, b);
			r = x < y ? -1 : x > y;
		} else {
			int64_t x = nx_lit_get_i64(k, a), y = nx_lit_get_i64(k, b);
			r = x < y ? -1 : x > y;
		}
		switch (c->fast) {
		case NX_CMP_LT: return r < 0;
		case NX_CMP_LE: return r <= 0;
		case NX_CMP_GT: return r > 0;
		case NX_CMP_GE: return r >= 0;
		case NX_CMP_EQ: return r == 0;
		default: return r != 0;
		}
	}
	for (int k = 0; k < c->n; k++) {
		nx_lit_copy_elem(c->args[2 * k], 0, c->ops[k], a);
		nx_lit_copy_elem(c->args[2 * k + 1], 0, c->ops[k], b);
	}
	nx_literal *r;
	c->st = nx_eval_call(c->ev, c->cmp, c->args, 2 * c->n, &r);
	if (c->st != NX_OK)
		return false;
	return nx_lit_get_i64(r, 0) != 0;
}

/* Stable merge sort of the linear indices v[0..len) using tmp. */
static void merge_sort(sort_ctx *c, int64_t *v, int64_t *tmp, int64_t len)
{
	if (len < 2)
		return;
	int64_t h = len / 2;
	merge_sort(c, v, tmp, h);
	merge_sort(c, v + h, tmp, len - h);
	int64_t a = 0, b = h, o = 0;
	while (a < h && b < len) {
		/* Take from the right only when strictly less: keeps equal keys in order. */
		if (less(c, v[b], v[a]))
			tmp[o++] = v[b++];
		else
			tmp[o++] = v[a++];
	}
	while (a < h)
		tmp[o++] = v[a++];
	while (b < len)
		tmp[o++] = v[b++];
	memcpy(v, tmp, sizeof(int64_t) * (size_t)len);
}

static nx_cmp_dir comparator_fast(const nx_comp *cmp, nx_literal *const *ops, bool *total)
{
	*total = false;
	if (!cmp || !cmp->root || cmp->root->op != NX_OP_COMPARE || cmp->nparams < 2)
		return NX_CMP_NONE;
	const nx_inst *r = cmp->root;
	if (r->operands[0] != cmp->params[0] || r->operands[1] != cmp->params[1])
		return NX_CMP_NONE;
	nx_type_kind k = nx_type_kind_of(ops[0]->shape->type);
	if (k == NX_KIND_COMPLEX)
		return NX_CMP_NONE;
	*total = r->a.compare_type == NX_CMPT_TOTALORDER;
	return r->a.direction;
}

nx_status nx_eval_sort(nx_eval *ev, const nx_inst *i, nx_literal *const *ops, nx_literal **out)
{
	int n = i->noperands;
	if (n < 1 || i->ncalled < 1)
		return nx_eval_error(ev, i, "sort needs operands and a comparator");
	const nx_shape *s = ops[0]->shape;
	int64_t dim = i->a.dimensions.n ? i->a.dimensions.v[0] : s->rank - 1;
	if (dim < 0 || dim >= s->rank)
		return nx_eval_error(ev, i, "sort dimension %lld out of range", (long long)dim);

	nx_literal *res, *outs[n];
	if (nx_shape_is_tuple(i->shape)) {
		res = nx_evop_alloc_tuple(ev, i->shape);
		if (!res)
			return ev->diag->status;
		for (int k = 0; k < n; k++)
			outs[k] = res->tuple[k];
	} else {
		res = outs[0] = nx_eval_alloc(ev, i->shape);
		if (!res)
			return ev->diag->status;
	}
	*out = res;
	int64_t total = nx_shape_elems(s);
	if (total == 0)
		return NX_OK;

	sort_ctx c = {.ev = ev, .inst = i, .cmp = i->called[0], .ops = ops, .n = n, .st = NX_OK};
	c.fast = comparator_fast(c.cmp, ops, &c.total);
	nx_literal *args[2 * n];
	if (c.fast == NX_CMP_NONE) {
		for (int k = 0; k < 2 * n; k++) {
			args[k] = nx_evop_scalar(ev, ops[k / 2]->shape->type);
			if (!args[k])
				return ev->diag->status;
		}
	}
	c.args = args;

	int64_t len = s->dims[dim], strides[NX_MAX_RANK];
	nx_evop_strides(s, strides);
	int64_t step = strides[dim];
	int64_t *v = malloc(sizeof(int64_t) * (size_t)len * 2);
	if (!v)
		return nx_eval_error(ev, i, "out of memory");
	int64_t *tmp = v + len;
	/* Each slice starts at a linear index whose coordinate along dim is 0. */
	for (int64_t base = 0; base < total; base++) {
		if ((base / step) % len != 0)
			continue;
		for (int64_t k = 0; k < len; k++)
			v[k] = base + k * step;
		merge_sort(&c, v, tmp, len);
		if (c.st != NX_OK)
			break;
		for (int64_t k = 0; k < len; k++)
			for (int j = 0; j < n; j++)
				nx_lit_copy_elem(outs[j], base + k * step, ops[j], v[k]);
	}
	free(v);
	return c.st;
}
