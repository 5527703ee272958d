/* ir/eval/random.c — deterministic random inputs (see ir/npy.h).
 *
 * Uniform [-1, 1) data is fine for most parameters, but a training step
 * also takes optimizer state whose sign is an invariant of the model: Adam's
 * second moment v goes through sqrt(beta2 * v + (1 - beta2) * g * g), and a
 * negative v (or beta2) makes the whole update NaN. nx_random_domains finds
 * those parameters by walking the entry computation backwards from every
 * operand that must not be negative (sqrt, rsqrt, log, log-plus-one, the base
 * of power, divisors: Adam's sqrt(v) + eps with eps < 0 reaches 0) through ops that keep a non-negative result when
 * their inputs are (add, multiply, divide, broadcast, reshape, ...). Such
 * parameters get values in [0, 1) instead of [-1, 1). */
#include "ir/map.h"
#include "ir/npy.h"

#include "ir/eval/eval.h"

#include <stdlib.h>
#include <string.h>

static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));
	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

static void fill(nx_literal *l, uint64_t *st, nx_random_domain dom)
{
	for (int k = 0; k < l->ntuple; k++)
		fill(l->tuple[k], st, dom);
	if (!nx_shape_is_array(l->shape) || !l->data)
		return;
	int64_t n = nx_shape_elems(l->shape);
	nx_type t = l->shape->type;
	nx_type_kind k = nx_type_kind_of(t);
	int64_t lim = 8;
	for (int d = 0; d < l->shape->rank; d++)
		if (l->shape->dims[d] < lim)
			lim = l->shape->dims[d];
	if (lim < 1)
		lim = 1;
	for (int64_t e = 0; e < n; e++) {
		uint64_t r = splitmix(st);
		double u = (double)(r >> 11) * 0x1p-53 * 2.0 - 1.0; /* [-1, 1) */
		if (dom == NX_RANDOM_NONNEG)
			u = (u + 1.0) * 0.5; /* same draw, mapped to [0, 1) */
		if (k == NX_KIND_FLOAT)
			nx_lit_set_f64(l, e, u);
		else if (k == NX_KIND_COMPLEX)
			nx_lit_set_c128(l, e, u, (double)(splitmix(st) >> 11) * 0x1p-53 * 2.0 - 1.0);
		else if (k == NX_KIND_PRED)
			nx_lit_set_i64(l, e, (int64_t)(r >> 63));
		else
			nx_lit_set_i64(l, e, (int64_t)((r >> 32) % (uint64_t)lim));
	}
}

static uint64_t stream(uint64_t seed, int64_t param_index)
{
	uint64_t st = seed * UINT64_C(0x2545f4914f6cdd1d) ^ ((uint64_t)param_index + 1) * UINT64_C(0x9e3779b97f4a7c15);
	splitmix(&st);
	return st;
}

nx_literal *nx_random_literal_in(nx_arena *a, nx_shape *shape, uint64_t seed, int64_t param_index,
                                 nx_random_domain dom)
{
	nx_literal *l = nx_literal_new(a, shape);
	uint64_t st = stream(seed, param_index);
	fill(l, &st, dom);
	return l;
}

/* Every array leaf its own stream, numbered in order from *flat. */
static void fill_leaves(nx_literal *l, uint64_t seed, int64_t *flat, nx_random_domain dom)
{
	if (nx_shape_is_tuple(l->shape)) {
		for (int k = 0; k < l->ntuple; k++)
			fill_leaves(l->tuple[k], seed, flat, dom);
		return;
	}
	uint64_t st = stream(seed, (*flat)++);
	fill(l, &st, dom);
}

void nx_random_args(nx_arena *a, const nx_comp *entry, uint64_t seed, const nx_random_domain *dom,
                    nx_literal **args)
{
	int64_t flat = 0;
	for (int k = 0; k < entry->nparams; k++) {
		nx_shape *s = entry->params[k]->shape;
		args[k] = nx_literal_new(a, s);
		fill_leaves(args[k], seed, &flat, dom[k]);
	}
}

nx_literal *nx_random_literal(nx_arena *a, nx_shape *shape, uint64_t seed, int64_t param_index)
{
	return nx_random_literal_in(a, shape, seed, param_index, NX_RANDOM_SIGNED);
}

/* ------------------------------------------------------ use analysis */

/* Operands that must be >= 0 for i's result to be defined (not NaN). */
static bool needs_nonneg_operand(const nx_inst *i, int j)
{
	switch (i->op) {
	case NX_OP_SQRT:
	case NX_OP_RSQRT:
	case NX_OP_LOG:
	case NX_OP_LOG_PLUS_ONE: return j == 0;
	case NX_OP_POWER: return j == 0;
	/* a divisor whose sign is random crosses zero somewhere in a large
	 * tensor (sqrt(v) + eps with eps < 0); a non-negative one stays away
	 * from it wherever one of its terms is not tiny */
	case NX_OP_DIVIDE: return j == 1;
	default: return false;
	}
}

/* Operands that must be >= 0 for i's result to be >= 0. */
static bool propagates(const nx_inst *i, int j)
{
	switch (i->op) {
	case NX_OP_MULTIPLY:
		/* x * x is a square: no constraint on x */
		return i->noperands != 2 || i->operands[0] != i->operands[1];
	case NX_OP_ADD:
	case NX_OP_DIVIDE:
	case NX_OP_MAXIMUM:
	case NX_OP_MINIMUM:
	case NX_OP_BROADCAST:
	case NX_OP_RESHAPE:
	case NX_OP_BITCAST:
	case NX_OP_TRANSPOSE:
	case NX_OP_COPY:
	case NX_OP_CONVERT:
	case NX_OP_SLICE:
	case NX_OP_CONCATENATE:
	case NX_OP_REVERSE:
	case NX_OP_PAD:
	case NX_OP_REDUCE:
	case NX_OP_REDUCE_WINDOW:
	case NX_OP_TUPLE:
	case NX_OP_GET_TUPLE_ELEMENT:
	case NX_OP_OPT_BARRIER:
	case NX_OP_SQRT:
	case NX_OP_CBRT:
	case NX_OP_ALL_REDUCE:
	case NX_OP_ALL_GATHER:
	case NX_OP_REDUCE_SCATTER:
	case NX_OP_COLLECTIVE_PERMUTE:
	case NX_OP_ALL_TO_ALL: return true;
	case NX_OP_DYNAMIC_SLICE: return j == 0;                  /* not the indices */
	case NX_OP_DYNAMIC_UPDATE_SLICE: return j < 2;
	case NX_OP_SELECT: return j > 0;                          /* not the predicate */
	case NX_OP_CLAMP: return j == 1;
	case NX_OP_DOT: return true;
	default: return false;
	}
}

/* Marks the parameters of c that must be >= 0; root_nonneg: c's result must
 * be. depth bounds recursion through calls. */
static void analyze(const nx_comp *c, bool root_nonneg, bool *param_out, int depth)
{
	if (!c || depth > 32)
		return;
	nx_ptrmap pm; /* inst -> position */
	nx_ptrmap_init(&pm, (size_t)c->ninsts);
	for (int k = 0; k < c->ninsts; k++)
		nx_ptrmap_put(&pm, c->insts[k], k);
	bool *need = calloc((size_t)c->ninsts + 1, sizeof(bool));
	NX_ASSERT(need);
	int r = c->root ? (int)nx_ptrmap_get(&pm, c->root, -1) : -1;
	if (r >= 0 && root_nonneg)
		need[r] = true;
	for (int k = c->ninsts - 1; k >= 0; k--) {
		const nx_inst *in = c->insts[k];
		bool *sub = NULL;
		if ((in->op == NX_OP_CALL || in->op == NX_OP_FUSION) && in->ncalled == 1 &&
		    in->called[0]->nparams == in->noperands) {
			sub = calloc((size_t)in->noperands + 1, sizeof(bool));
			NX_ASSERT(sub);
			analyze(in->called[0], need[k], sub, depth + 1);
		}
		for (int j = 0; j < in->noperands; j++) {
			bool n = needs_nonneg_operand(in, j) || (need[k] && propagates(in, j)) ||
			         (sub && sub[j]);
			int p = n ? (int)nx_ptrmap_get(&pm, in->operands[j], -1) : -1;
			if (p >= 0)
				need[p] = true;
		}
		free(sub);
	}
	for (int k = 0; k < c->nparams; k++) {
		int p = c->params[k] ? (int)nx_ptrmap_get(&pm, c->params[k], -1) : -1;
		if (p >= 0 && need[p])
			param_out[k] = true;
	}
	free(need);
	nx_ptrmap_free(&pm);
}

void nx_random_domains(const nx_comp *entry, nx_random_domain *dom)
{
	bool *nn = calloc((size_t)entry->nparams + 1, sizeof(bool));
	NX_ASSERT(nn);
	analyze(entry, false, nn, 0);
	for (int k = 0; k < entry->nparams; k++)
		dom[k] = nn[k] ? NX_RANDOM_NONNEG : NX_RANDOM_SIGNED;
	free(nn);
}
