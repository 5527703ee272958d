/* tests/unit/eval_compare.h — literal comparison with XLA ErrorSpec
 * semantics (an element passes when |got-want| <= abs or the relative error
 * <= rel; NaN equals NaN; integers and pred exact). Shared by evaluator tests. */
#ifndef NX_EVAL_COMPARE_H
#define NX_EVAL_COMPARE_H

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ir/eval/eval.h"

static inline bool ec_near(double g, double w, double abs_tol, double rel_tol, bool tol)
{
	if (isnan(g) || isnan(w))
		return isnan(g) && isnan(w);
	if (g == w)
		return true;
	if (!tol || isinf(g) || isinf(w))
		return false;
	double e = fabs(g - w);
	return e <= abs_tol || (w != 0 && e / fabs(w) <= rel_tol);
}

/* Returns true when equal; otherwise writes a reason into why. */
static inline bool ec_compare(const nx_literal *got, const nx_literal *want, bool tol, double abs_tol,
                              double rel_tol, char *why, size_t whylen)
{
	if (nx_shape_is_tuple(want->shape) || nx_shape_is_tuple(got->shape)) {
		if (got->ntuple != want->ntuple) {
			snprintf(why, whylen, "tuple of %d elements, expected %d", got->ntuple, want->ntuple);
			return false;
		}
		for (int k = 0; k < got->ntuple; k++)
			if (!ec_compare(got->tuple[k], want->tuple[k], tol, abs_tol, rel_tol, why, whylen))
				return false;
		return true;
	}
	if (!nx_shape_compatible(got->shape, want->shape)) {
		char a[128], b[128];
		nx_shape_print(a, sizeof(a), got->shape, false);
		nx_shape_print(b, sizeof(b), want->shape, false);
		snprintf(why, whylen, "shape %s, expected %s", a, b);
		return false;
	}
	nx_type t = want->shape->type;
	int64_t n = nx_shape_elems(want->shape);
	nx_type_kind k = nx_type_kind_of(t);
	for (int64_t e = 0; e < n; e++) {
		bool ok;
		double g = 0, w = 0;
		if (k == NX_KIND_FLOAT) {
			g = nx_lit_get_f64(got, e), w = nx_lit_get_f64(want, e);
			ok = ec_near(g, w, abs_tol, rel_tol, tol);
		} else if (k == NX_KIND_COMPLEX) {
			double gi, wi;
			nx_lit_get_c128(got, e, &g, &gi);
			nx_lit_get_c128(want, e, &w, &wi);
			ok = ec_near(g, w, abs_tol, rel_tol, tol) && ec_near(gi, wi, abs_tol, rel_tol, tol);
		} else {
			ok = nx_lit_get_u64(got, e) == nx_lit_get_u64(want, e);
			g = (double)nx_lit_get_i64(got, e), w = (double)nx_lit_get_i64(want, e);
		}
		if (!ok) {
			snprintf(why, whylen, "element %lld: got %.9g, expected %.9g", (long long)e, g, w);
			return false;
		}
	}
	return true;
}

#endif
