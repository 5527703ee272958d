/* tests/unit/test_eval_ops.c — evaluator edge cases per op family. */
#include "testutil.h"

#include <math.h>

#include "ir/eval/eval.h"

/* Evaluates a parameterless module; returns the root literal in a. */
static nx_literal *run(nx_arena *a, const char *text)
{
	nx_module *m = tu_parse(text);
	nx_diag d = {0};
	nx_literal *out = NULL;
	nx_literal *const *args[1] = {NULL};
	nx_eval_opts o = {0};
	if (nx_eval_module(m, &o, 0, args, a, &out, &d) != NX_OK) {
		print_error("%s\n", d.msg);
		fail();
	}
	nx_module_free(m);
	return out;
}

#define MOD(body) "HloModule t\nENTRY e {\n" body "\n}\n"

static void test_bf16_ties(void **s)
{
	(void)s;
	nx_arena a;
	nx_arena_init(&a);
	/* 1 + 2^-8 is a tie between 1 and 1+2^-7: even -> 1; 1 + 3*2^-9 rounds up */
	nx_literal *r = run(&a, MOD("x = bf16[2] constant({1, 1})\n y = f32[2] constant({0.00390625, 0.005859375})\n"
	                            " yb = bf16[2] convert(y)\n ROOT z = bf16[2] add(x, yb)"));
	assert_true(nx_lit_get_f64(r, 0) == 1.0);
	assert_true(nx_lit_get_f64(r, 1) == 1.0 + 1.0 / 128);
	assert_int_equal(nx_f32_to_bf16(1.0f + 1.0f / 256), 0x3f80);
	assert_int_equal(nx_f32_to_bf16(1.0f + 3.0f / 512), 0x3f81);
	assert_true(isinf(nx_f16_to_f32(nx_f32_to_f16(70000.0f))));
	assert_true(nx_f8_to_f64(NX_F8E4M3FN, nx_f64_to_f8(NX_F8E4M3FN, 448)) == 448);
	assert_true(isnan(nx_f8_to_f64(NX_F8E4M3FN, nx_f64_to_f8(NX_F8E4M3FN, 1000))));
	assert_true(isinf(nx_f8_to_f64(NX_F8E5M2, nx_f64_to_f8(NX_F8E5M2, 1e6))));
	nx_arena_free(&a);
}

static void test_int_semantics(void **s)
{
	(void)s;
	nx_arena a;
	nx_arena_init(&a);
	nx_literal *r = run(&a, MOD("x = s32[4] constant({7, -7, -2147483648, 5})\n y = s32[4] constant({0, 0, -1, 2})\n"
	                            " d = s32[4] divide(x, y)\n m = s32[4] remainder(x, y)\n"
	                            " b = s32[4] constant({2147483647, 1, 1, 1})\n o = s32[4] add(b, b)\n"
	                            " sh = s32[4] constant({32, -1, 31, 1})\n l = s32[4] shift-left(y, sh)\n"
	                            " ra = s32[4] shift-right-arithmetic(x, sh)\n"
	                            " ROOT t = (s32[4], s32[4], s32[4], s32[4], s32[4]) tuple(d, m, o, l, ra)"));
	assert_int_equal(nx_lit_get_i64(r->tuple[0], 0), -1);
	assert_int_equal(nx_lit_get_i64(r->tuple[0], 2), INT32_MIN);
	assert_int_equal(nx_lit_get_i64(r->tuple[1], 0), 7);
	assert_int_equal(nx_lit_get_i64(r->tuple[1], 2), 0);
	assert_int_equal(nx_lit_get_i64(r->tuple[2], 0), -2);
	assert_int_equal(nx_lit_get_i64(r->tuple[3], 0), 0);
	assert_int_equal(nx_lit_get_i64(r->tuple[3], 1), 0);
	assert_int_equal(nx_lit_get_i64(r->tuple[4], 0), 0);  /* 7 >> 32 */
	assert_int_equal(nx_lit_get_i64(r->tuple[4], 1), -1); /* -7 >> huge */
	assert_int_equal(nx_lit_get_i64(r->tuple[4], 2), -1);
	r = run(&a, MOD("x = u8[2] constant({5, 0})\n y = u8[2] constant({0, 0})\n ROOT d = u8[2] divide(x, y)"));
	assert_int_equal(nx_lit_get_i64(r, 0), 255);
	nx_arena_free(&a);
}

static void test_float_semantics(void **s)
{
	(void)s;
	nx_arena a;
	nx_arena_init(&a);
	nx_literal *r = run(&a, MOD("x = f32[3] constant({nan, 1, -0})\n y = f32[3] constant({1, nan, 0})\n"
	                            " mx = f32[3] maximum(x, y)\n c = pred[3] compare(x, y), direction=NE\n"
	                            " e = pred[3] compare(x, y), direction=EQ\n"
	                            " big = f32[3] constant({3e9, -3e9, nan})\n cv = s32[3] convert(big)\n"
	                            " ROOT t = (f32[3], pred[3], pred[3], s32[3]) tuple(mx, c, e, cv)"));
	assert_true(isnan(nx_lit_get_f64(r->tuple[0], 0)) && isnan(nx_lit_get_f64(r->tuple[0], 1)));
	assert_int_equal(nx_lit_get_i64(r->tuple[1], 0), 1);
	assert_int_equal(nx_lit_get_i64(r->tuple[2], 0), 0);
	assert_int_equal(nx_lit_get_i64(r->tuple[2], 2), 1); /* -0 == 0 */
	assert_int_equal(nx_lit_get_i64(r->tuple[3], 0), INT32_MAX);
	assert_int_equal(nx_lit_get_i64(r->tuple[3], 1), INT32_MIN);
	assert_int_equal(nx_lit_get_i64(r->tuple[3], 2), 0);
	nx_arena_free(&a);
}

static void test_data_edges(void **s)
{
	(void)s;
	nx_arena a;
	nx_arena_init(&a);
	nx_literal *r = run(&a, MOD("x = s32[5] iota(), iota_dimension=0\n i = s32[] constant(4)\n"
	                            " ds = s32[3] dynamic-slice(x, i), dynamic_slice_sizes={3}\n"
	                            " z = s32[0] slice(x), slice={[2:2]}\n"
	                            " p = s32[] constant(-1)\n pd = s32[5] pad(x, p), padding=-1_-1_1\n"
	                            " ROOT t = (s32[3], s32[0], s32[5]) tuple(ds, z, pd)"));
	assert_int_equal(nx_lit_get_i64(r->tuple[0], 0), 2); /* start clamped to 5-3 */
	assert_int_equal(nx_shape_elems(r->tuple[1]->shape), 0);
	/* pad 0,1,2,3,4 interior 1 -> 0 _ 1 _ 2 _ 3 _ 4, minus one at each end */
	int64_t want[5] = {-1, 1, -1, 2, -1};
	for (int k = 0; k < 5; k++)
		assert_int_equal(nx_lit_get_i64(r->tuple[2], k), want[k]);
	nx_arena_free(&a);
}

/* a narrow-float scatter-add accumulates in f32 and rounds once (bf16: 256 +
 * 1 rounds back to 256 one add at a time; 256 + 700 ones is 956 in f32,
 * exact in bf16), as reduce and the device's one-hot matmul kernel do */
static void test_scatter_narrow_sum(void **s)
{
	(void)s;
	nx_arena a;
	nx_arena_init(&a);
	nx_literal *r = run(&a, "HloModule t\nadd {\n a = bf16[] parameter(0)\n b = bf16[] parameter(1)\n"
	                        " ROOT s = bf16[] add(a, b)\n}\nENTRY e {\n x = bf16[2] constant({256, 0})\n"
	                        " one = bf16[] constant(1)\n u = bf16[700] broadcast(one), dimensions={}\n"
	                        " z = s32[] constant(0)\n i = s32[700,1] broadcast(z), dimensions={}\n"
	                        " ROOT r = bf16[2] scatter(x, i, u), update_window_dims={}, inserted_window_dims={0},"
	                        " scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add\n}\n");
	assert_true(nx_lit_get_f64(r, 0) == 956.0);
	assert_true(nx_lit_get_f64(r, 1) == 0.0);
	nx_arena_free(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bf16_ties),
		cmocka_unit_test(test_int_semantics),
		cmocka_unit_test(test_float_semantics),
		cmocka_unit_test(test_data_edges),
		cmocka_unit_test(test_scatter_narrow_sum),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
