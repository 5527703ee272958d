/* tests/unit/test_autocast_sums.c — nxcc check on programs computed through
 * bf16 (compiler/cmd_check.c, compiler/check_cancel.c; docs/numerics.md
 * "Outputs dominated by rounding noise", "Auto-cast error of a sum"):
 * - an add or subtract of sums is one sum of all their terms (a BERT input
 *   gradient dx = dx0 + dq.Wq + dk.Wk + dv.Wv), with sum |terms| of them all;
 * - the device-vs-evaluator bound from the rounding noise of the narrow
 *   program accepts another valid rounding of the same bf16 program where the
 *   sums cancel (which the bf16 tolerance from max|ref| rejects), and still
 *   rejects a lost sign, a wrong scale, a missing term larger than its
 *   resolution, half of the terms missing, and a wrong element; it applies
 *   only where the narrow program is dominated by its rounding. */
#include "testutil.h"

#include "compiler/check.h"
#include "ir/eval/eval.h"

#include <math.h>
#include <string.h>

#define ROWS 16
#define TERMS 64

static const char *SUMS = "HloModule s\n"
                          "add { a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT s = f32[] add(a, b) }\n"
                          "ENTRY e {\n"
                          "  p = f32[16,64] parameter(0)\n"
                          "  q = f32[16,64] parameter(1)\n"
                          "  z = f32[] constant(0)\n"
                          "  r = f32[16] reduce(p, z), dimensions={1}, to_apply=add\n"
                          "  d = f32[16,16] dot(p, q), lhs_contracting_dims={1}, rhs_contracting_dims={1}\n"
                          "  dr = f32[16] reduce(d, z), dimensions={1}, to_apply=add\n"
                          "  x = f32[16] slice(r), slice={[0:16]}\n"
                          "  o0 = f32[16] subtract(r, dr)\n"
                          "  o1 = f32[16] add(o0, x)\n"
                          "  o2 = f32[16] add(x, x)\n"
                          "  m = f32[16] multiply(x, x)\n"
                          "  o3 = f32[16] add(m, m)\n"
                          "  o4 = f32[16] add(r, m)\n"
                          "  ROOT t = (f32[16], f32[16], f32[16], f32[16], f32[16]) tuple(o0, o1, o2, o3, o4)\n"
                          "}\n";

static void test_sum_of_sums(void **state)
{
	(void)state;
	nx_module *m = tu_parse(SUMS);
	int64_t n = 0;
	/* r - dr: 64 + 16 terms; (r - dr) + r: 80 + 64; r + r: 128; m + m (no
	 * sum under it): none; r + m: 64 + 1 */
	const nx_inst *s = nx_check_output_sum(m, 0, &n);
	assert_non_null(s);
	assert_string_equal(s->name, "o0");
	assert_int_equal(n, 80);
	assert_non_null(nx_check_output_sum(m, 1, &n));
	assert_int_equal(n, 144);
	assert_non_null(nx_check_output_sum(m, 2, &n));
	assert_int_equal(n, 128);
	assert_null(nx_check_output_sum(m, 3, &n));
	assert_non_null(nx_check_output_sum(m, 4, &n));
	assert_int_equal(n, 65);
	/* sum |terms| of them all: every term's absolute value, a subtract's
	 * right-hand terms included (dr's terms: the values of d), and |m| for
	 * the term that is no sum */
	nx_arena a;
	nx_arena_init(&a);
	int64_t dims[2] = {16, 64};
	nx_literal *p = nx_literal_new(&a, nx_shape_array(&a, NX_F32, 2, dims));
	nx_literal *q = nx_literal_new(&a, nx_shape_array(&a, NX_F32, 2, dims));
	uint32_t x = 4321;
	for (int i = 0; i < 16 * 64; i++) {
		x = x * 1664525u + 1013904223u;
		nx_lit_set_f64(p, i, (float)((double)(x >> 8) / (1 << 24) * 2 - 1));
		x = x * 1664525u + 1013904223u;
		nx_lit_set_f64(q, i, (float)((double)(x >> 8) / (1 << 24) * 2 - 1));
	}
	nx_literal *args1[2] = {p, q};
	nx_literal *const *argv[1] = {args1};
	nx_eval_opts eo = {.replicas = 1};
	nx_diag d = {0};
	for (int leaf = 0; leaf < 5; leaf += 4) {
		nx_literal *abs = NULL;
		assert_int_equal(nx_check_abs_sums(m, leaf, &eo, argv, &a, &abs, &d), NX_OK);
		for (int i = 0; i < 16; i++) {
			double sp = 0, sd = 0, r = 0;
			for (int j = 0; j < 64; j++) {
				sp += fabs(nx_lit_get_f64(p, i * 64 + j));
				r += nx_lit_get_f64(p, i * 64 + j);
			}
			for (int k = 0; k < 16; k++) { /* dr's terms are the dot's values */
				double dk = 0;
				for (int j = 0; j < 64; j++)
					dk += nx_lit_get_f64(p, i * 64 + j) * nx_lit_get_f64(q, k * 64 + j);
				sd += fabs(dk);
			}
			double want = leaf == 0 ? sp + sd : sp + r * r;
			assert_true(fabs(nx_lit_get_f64(abs, i) - want) <= 1e-5 * want);
		}
	}
	nx_diag_clear(&d);
	nx_arena_free(&a);
	nx_module_free(m);
}

/* x_{k+1} = x_k + x_k over a reduce of 64 terms, `levels` deep: one sum of
 * 64 x 2^levels terms; a DAG of adds that reuse each other stops being a sum
 * past 8 levels rather than taking time exponential in its depth. */
static void test_add_dag(void **state)
{
	(void)state;
	for (int levels = 5; levels <= 40; levels += 35) {
		char text[8192];
		int w = snprintf(text, sizeof text,
		                 "HloModule g\n"
		                 "add { a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT s = f32[] add(a, b) }\n"
		                 "ENTRY e {\n  p = f32[16,64] parameter(0)\n  z = f32[] constant(0)\n"
		                 "  x0 = f32[16] reduce(p, z), dimensions={1}, to_apply=add\n");
		for (int k = 0; k < levels; k++)
			w += snprintf(text + w, sizeof text - (size_t)w, "  x%d = f32[16] add(x%d, x%d)\n", k + 1, k, k);
		snprintf(text + w, sizeof text - (size_t)w, "  ROOT t = (f32[16]) tuple(x%d)\n}\n", levels);
		nx_module *m = tu_parse(text);
		int64_t n = 0;
		const nx_inst *s = nx_check_output_sum(m, 0, &n);
		if (levels > 8) {
			assert_null(s);
			nx_module_free(m);
			continue;
		}
		assert_non_null(s);
		assert_int_equal(n, 64 << levels);
		nx_arena a;
		nx_arena_init(&a);
		int64_t dims[2] = {16, 64};
		nx_literal *p = nx_literal_new(&a, nx_shape_array(&a, NX_F32, 2, dims));
		for (int i = 0; i < 16 * 64; i++)
			nx_lit_set_f64(p, i, (i % 3) - 1.0);
		nx_literal *args1[1] = {p};
		nx_literal *const *argv[1] = {args1};
		nx_eval_opts eo = {.replicas = 1};
		nx_diag d = {0};
		nx_literal *abs = NULL;
		assert_int_equal(nx_check_abs_sums(m, 0, &eo, argv, &a, &abs, &d), NX_OK);
		for (int i = 0; i < 16; i++) {
			double sp = 0;
			for (int j = 0; j < 64; j++)
				sp += fabs(nx_lit_get_f64(p, i * 64 + j));
			assert_true(nx_lit_get_f64(abs, i) == sp * (1 << levels));
		}
		nx_diag_clear(&d);
		nx_arena_free(&a);
		nx_module_free(m);
	}
}

static uint32_t lcg(uint32_t *x)
{
	*x = *x * 1664525u + 1013904223u;
	return *x >> 8;
}

/* uniform in [-1, 1) */
static double unif(uint32_t *x)
{
	return (double)lcg(x) / (1 << 24) * 2 - 1;
}

static float to_bf16(float v)
{
	uint32_t w;
	memcpy(&w, &v, 4);
	w = (w + 0x7fffu + ((w >> 16) & 1u)) & 0xffff0000u; /* nearest even */
	memcpy(&v, &w, 4);
	return v;
}

/* The exact terms, row i term j; cancel: 63 values in [-1, 1) and minus
 * their sum (each row sums to 0, like the key-bias gradient of attention),
 * else values in [0, 1). */
static void exact_terms(double *t, bool cancel)
{
	uint32_t x = 2024;
	for (int i = 0; i < ROWS; i++) {
		double s = 0;
		for (int j = 0; j < TERMS; j++) {
			double v = cancel ? unif(&x) : (unif(&x) + 1) / 2;
			if (cancel && j == TERMS - 1)
				v = -s;
			t[i * TERMS + j] = v;
			s += v;
		}
	}
}

/* A bf16 program's sums: each term carries a relative error of up to 2u of
 * upstream bf16 arithmetic (seed `up`) and is rounded to bf16, then summed
 * in f32. `other` (with frac > 0): that fraction of the terms was rounded
 * upstream differently (seed `other`), summed in the reverse order: another
 * execution of the same program (a device that keeps some intermediates in
 * f32, or accumulates in another order). */
static void program(const double *t, nx_literal *out, uint32_t up, uint32_t other, double frac)
{
	const double u = ldexp(1, -8);
	for (int i = 0; i < ROWS; i++) {
		float s = 0;
		for (int jj = 0; jj < TERMS; jj++) {
			int j = frac > 0 ? TERMS - 1 - jj : jj;
			uint32_t a = up + (uint32_t)(i * TERMS + j) * 2654435761u, b = other + (uint32_t)(i * TERMS + j) * 40503u;
			double delta = 2 * u * unif(&a);
			if (frac > 0 && (unif(&b) + 1) / 2 < frac)
				delta = 2 * u * unif(&b);
			s += to_bf16((float)(t[i * TERMS + j] * (1 + delta)));
		}
		nx_lit_set_f64(out, i, s);
	}
}

/* How many outputs fail: ref (evaluator) against got (device), computed
 * through bf16, with the noise bound when noise > 0. */
static int verdict(const nx_literal *ref, nx_literal *got, double noise)
{
	static const nx_type bf16[1] = {NX_BF16};
	const nx_literal *refs[1] = {ref};
	nx_literal *outs[1] = {got};
	nx_check_cancel c[1];
	memset(c, 0, sizeof c);
	c[0].noise = noise;
	FILE *devnull = fopen("/dev/null", "w");
	assert_non_null(devnull);
	int bad = nx_check_compare_cancel(devnull, refs, outs, 1, TERMS, bf16, NULL, c);
	fclose(devnull);
	return bad;
}

static void test_noise_bound(void **state)
{
	(void)state;
	nx_arena a;
	nx_arena_init(&a);
	int64_t rows = ROWS;
	nx_shape *sh = nx_shape_array(&a, NX_F32, 1, &rows);
	static double t[ROWS * TERMS];
	assert_true(NX_CHECK_NOISE_C > 28 && NX_CHECK_NOISE_C < 28.3);
	for (int cancel = 1; cancel >= 0; cancel--) {
		exact_terms(t, cancel);
		nx_literal *orig = nx_literal_new(&a, sh), *ref = nx_literal_new(&a, sh), *got = nx_literal_new(&a, sh);
		for (int i = 0; i < ROWS; i++) { /* the f32 original */
			float s = 0;
			for (int j = 0; j < TERMS; j++)
				s += (float)t[i * TERMS + j];
			nx_lit_set_f64(orig, i, s);
		}
		program(t, ref, 11, 0, 0);
		double noise = nx_check_rms_diff(ref, orig), sq = 0, maxref = 0;
		for (int i = 0; i < ROWS; i++) {
			double e = nx_lit_get_f64(ref, i) - nx_lit_get_f64(orig, i);
			sq += e * e;
			maxref = fmax(maxref, fabs(nx_lit_get_f64(ref, i)));
		}
		assert_true(fabs(noise - sqrt(sq / ROWS)) <= 1e-12);
		/* the second chance only where the narrow type's rounding dominates:
		 * the cancelling sums are noise (relative L2 against the original far
		 * past 32u), the others are computed well (no second chance) */
		double acb = nx_check_autocast_bound("bf16");
		if (cancel)
			assert_true(nx_check_noise(ref, orig, acb) == noise && nx_check_rel_l2(orig, ref, NULL) > 1);
		else
			assert_true(nx_check_noise(ref, orig, acb) == 0 && nx_check_rel_l2(orig, ref, NULL) < 0.01);
		/* bf16 noise of a sum of 64 terms: about sqrt(64) x 0.4u x rms(term) */
		assert_true(noise > 1e-3 && noise < 5e-2);
		double bound = NX_CHECK_NOISE_C * noise;
		/* another execution, a quarter of the roundings different */
		program(t, got, 11, 99, 0.25);
		if (cancel) {
			/* the sums are noise: the bf16 tolerance (from max|ref|, itself
			 * noise) rejects the other rounding, the noise bound accepts it */
			assert_int_equal(verdict(ref, got, 0), 1);
			assert_int_equal(verdict(ref, got, noise), 0);
			/* a missing term past the resolution (28.2 x noise) is rejected,
			 * one under it is not: the resolution of a bf16 program whose
			 * sums cancel */
			int i = 3, big = 0, small = 0;
			for (int j = 1; j < TERMS; j++) {
				double v = fabs(t[i * TERMS + j]);
				if (v > fabs(t[i * TERMS + big]))
					big = j;
				if (v < fabs(t[i * TERMS + small]))
					small = j;
			}
			assert_true(fabs(t[i * TERMS + big]) > 2 * bound && fabs(t[i * TERMS + small]) < bound / 2);
			double g = nx_lit_get_f64(got, i);
			nx_lit_set_f64(got, i, g - t[i * TERMS + big]);
			assert_int_equal(verdict(ref, got, noise), 1);
			nx_lit_set_f64(got, i, g - t[i * TERMS + small]);
			assert_int_equal(verdict(ref, got, noise), 0);
			nx_lit_set_f64(got, i, g);
		} else {
			assert_int_equal(verdict(ref, got, noise), 0);
			/* sums that do not cancel: the noise is far below the values */
			assert_true(bound < 0.1 * maxref);
		}
		/* half of the terms missing */
		for (int i = 0; i < ROWS; i++) {
			double h = 0;
			for (int j = 0; j < TERMS / 2; j++)
				h += t[i * TERMS + j];
			nx_lit_set_f64(got, i, h);
		}
		assert_int_equal(verdict(ref, got, noise), 1);
		/* no noise estimate: no second chance */
		program(t, got, 11, 99, 0.25);
		if (cancel)
			assert_int_equal(verdict(ref, got, 0), 1);
		if (cancel)
			continue;
		/* the sign lost, a wrong scale (5 %), one wrong element */
		for (int i = 0; i < ROWS; i++)
			nx_lit_set_f64(got, i, -nx_lit_get_f64(ref, i));
		assert_int_equal(verdict(ref, got, noise), 1);
		for (int i = 0; i < ROWS; i++)
			nx_lit_set_f64(got, i, 1.05 * nx_lit_get_f64(ref, i));
		assert_int_equal(verdict(ref, got, noise), 1);
		program(t, got, 11, 99, 0.25);
		nx_lit_set_f64(got, 7, nx_lit_get_f64(got, 7) + 2 * bound + 0.05 * maxref);
		assert_int_equal(verdict(ref, got, noise), 1);
	}
	nx_arena_free(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sum_of_sums),
		cmocka_unit_test(test_add_dag),
		cmocka_unit_test(test_noise_bound),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
