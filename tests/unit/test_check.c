/* tests/unit/test_check.c — nxcc check's tolerance (compiler/cmd_check.c):
 * an f32 output computed through bf16 values is held to the bf16 tolerance
 * (docs/numerics.md "Check tolerances"), integers stay exact, and a wrong
 * result still fails. */
#include "testutil.h"

#include "compiler/check.h"
#include "ir/eval/eval.h"

/* out0: f32 through bf16 (auto-cast's converts around an add); out1: pure
 * f32; out2: s32 computed from a bf16 value (exact whatever it passed
 * through); out3: f32 through a reduce-precision to 10 mantissa bits (tf32,
 * f16's tier); out4: a tuple leaf whose tuple mixes bf16 and f32 (the tuple
 * counts as its narrowest element). */
static const char *MOD = "HloModule t\n"
                         "ENTRY e {\n"
                         "  p = f32[4] parameter(0)\n"
                         "  q = f32[4] parameter(1)\n"
                         "  pb = bf16[4] convert(p)\n"
                         "  qb = bf16[4] convert(q)\n"
                         "  s = bf16[4] add(pb, qb)\n"
                         "  o0 = f32[4] convert(s)\n"
                         "  o1 = f32[4] multiply(p, q)\n"
                         "  o2 = s32[4] convert(s)\n"
                         "  rp = f32[4] reduce-precision(q), exponent_bits=8, mantissa_bits=10\n"
                         "  o3 = f32[4] add(p, rp)\n"
                         "  t = (bf16[4], f32[4]) tuple(s, o1)\n"
                         "  o4 = f32[4] get-tuple-element(t), index=1\n"
                         "  ROOT r = (f32[4], f32[4], s32[4], f32[4], f32[4]) tuple(o0, o1, o2, o3, o4)\n"
                         "}\n";

static void test_through_types(void **state)
{
	(void)state;
	nx_module *m = tu_parse(MOD);
	nx_type t[8];
	assert_int_equal(nx_check_through_types(m, t, 8), 5);
	assert_int_equal(t[0], NX_BF16);
	assert_int_equal(t[1], NX_F32);
	assert_int_equal(t[2], NX_BF16); /* reported, but an integer stays exact */
	assert_int_equal(t[3], NX_F16);
	assert_int_equal(t[4], NX_BF16);
	nx_module_free(m);
}

static nx_literal *vec(nx_arena *a, nx_type ty, const double *v, int n)
{
	int64_t d = n;
	nx_literal *l = nx_literal_new(a, nx_shape_array(a, ty, 1, &d));
	for (int k = 0; k < n; k++)
		nx_lit_set_f64(l, k, v[k]);
	return l;
}

/* Returns how many of the outputs differ. */
static int compare(nx_arena *a, nx_type ty, const double *ref, const double *got, const nx_type *through)
{
	const nx_literal *refs[1] = {vec(a, ty, ref, 4)};
	nx_literal *outs[1] = {vec(a, ty, got, 4)};
	FILE *devnull = fopen("/dev/null", "w");
	assert_non_null(devnull);
	int bad = nx_check_compare(devnull, refs, outs, 1, 16, through, NULL);
	fclose(devnull);
	return bad;
}

static void test_tolerance(void **state)
{
	(void)state;
	nx_arena a;
	nx_arena_init(&a);
	static const nx_type bf16[1] = {NX_BF16}, f32[1] = {NX_F32}, f16[1] = {NX_F16};
	/* llama__tp_2 under bf16 auto-cast: one element 1.3 % off (22.762 vs 22.474) */
	const double ref[4] = {22.7621536, -3.5, 0.25, 10};
	const double near[4] = {22.4737511, -3.5, 0.25, 10};
	assert_int_equal(compare(&a, NX_F32, ref, near, NULL), 1); /* the f32 tolerance fails */
	assert_int_equal(compare(&a, NX_F32, ref, near, f32), 1);
	assert_int_equal(compare(&a, NX_F32, ref, near, f16), 1); /* 1.3 % is past f16's 2e-3 + 2e-3 x 0.44 */
	assert_int_equal(compare(&a, NX_F32, ref, near, bf16), 0); /* the bf16 one passes */
	/* a genuinely wrong result still fails under the bf16 tolerance */
	const double wrong[4] = {22.7621536, -3.5, 0.25, 12};
	assert_int_equal(compare(&a, NX_F32, ref, wrong, bf16), 1);
	const double sign[4] = {-22.7621536, -3.5, 0.25, 10};
	assert_int_equal(compare(&a, NX_F32, ref, sign, bf16), 1);
	/* integers stay exact whatever they were computed through */
	const double iref[4] = {1, 2, 3, 4}, igot[4] = {1, 2, 3, 5};
	assert_int_equal(compare(&a, NX_S32, iref, igot, bf16), 1);
	assert_int_equal(compare(&a, NX_S32, iref, iref, bf16), 0);
	nx_arena_free(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_through_types),
		cmocka_unit_test(test_tolerance),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
