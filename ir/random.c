/* ir/random.c — deterministic random inputs (see ir/npy.h). */
#include "ir/npy.h"

#include "ir/eval.h"

static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));
	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

static void fill(nx_literal *l, uint64_t *st)
{
	for (int k = 0; k < l->ntuple; k++)
		fill(l->tuple[k], st);
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

nx_literal *nx_random_literal(nx_arena *a, nx_shape *shape, uint64_t seed, int64_t param_index)
{
	nx_literal *l = nx_literal_new(a, shape);
	uint64_t st = seed * UINT64_C(0x2545f4914f6cdd1d) ^ ((uint64_t)param_index + 1) * UINT64_C(0x9e3779b97f4a7c15);
	splitmix(&st);
	fill(l, &st);
	return l;
}
