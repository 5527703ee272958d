/* tests/unit/test_eval_edge.c — evaluator edge cases the reference must get
 * right (XLA semantics): NaN/Inf through every binary float op and type,
 * signed zeros, integer wrap, clamped dynamic slices, bf16/f8 rounding, empty
 * arrays, float->int saturation, bitcast-convert across widths, sort with
 * NaNs under TOTALORDER, compare directions, rng. Gather/scatter index
 * clamping is in test_eval_families.c. */
#include "testutil.h"

#include <math.h>
#include <string.h>

#include "ir/eval/eval.h"
#include "ir/eval/eval_impl.h" /* nx_round_to_type: the format-table reference */

static nx_literal *run_seed(nx_arena *a, const char *text, uint64_t seed)
{
	nx_module *m = tu_parse(text);
	nx_diag d = {0};
	nx_literal *out = NULL;
	nx_literal *const *args[1] = {NULL};
	nx_eval_opts o = {.rng_seed = seed};
	if (nx_eval_module(m, &o, 0, args, a, &out, &d) != NX_OK) {
		print_error("%s\n", d.msg);
		fail();
	}
	nx_module_free(m);
	return out;
}

static nx_literal *run(nx_arena *a, const char *text)
{
	return run_seed(a, text, 0);
}

#define MOD(body) "HloModule t\nENTRY e {\n" body "\n}\n"

static bool is_neg_zero(double v)
{
	return v == 0 && signbit(v);
}

static void test_nan_inf_binary(void **s)
{
	(void)s;
	static const char *types[] = {"f32", "f64", "bf16", "f16"};
	static const char *ops[] = {"add", "subtract", "multiply", "divide", "remainder",
	                            "power", "atan2", "maximum", "minimum"};
	for (size_t t = 0; t < 4; t++)
		for (size_t o = 0; o < sizeof(ops) / sizeof(ops[0]); o++) {
			nx_arena a;
			nx_arena_init(&a);
			char text[512];
			const char *T = types[t];
			snprintf(text, sizeof(text),
			         MOD("x = %s[2] constant({nan, 2})\n y = %s[2] constant({2, nan})\n"
			             " ROOT r = %s[2] %s(x, y)"), T, T, T, ops[o]);
			nx_literal *r = run(&a, text);
			if (!isnan(nx_lit_get_f64(r, 0)) || !isnan(nx_lit_get_f64(r, 1))) {
				print_error("%s %s: NaN did not propagate\n", T, ops[o]);
				fail();
			}
			nx_arena_free(&a);
		}
	for (size_t t = 0; t < 4; t++) {
		nx_arena a;
		nx_arena_init(&a);
		char text[1024];
		const char *T = types[t];
		snprintf(text, sizeof(text),
		         MOD("i = %s[3] constant({inf, inf, -inf})\n ni = %s[3] constant({-inf, inf, -inf})\n"
		             " z = %s[3] constant({0, 0, 0})\n o = %s[3] constant({1, -1, 0})\n"
		             " s = %s[3] add(i, ni)\n d = %s[3] subtract(i, ni)\n m = %s[3] multiply(i, z)\n"
		             " q = %s[3] divide(o, z)\n rm = %s[3] remainder(i, o)\n r0 = %s[3] remainder(o, z)\n"
		             " ROOT t = (%s[3], %s[3], %s[3], %s[3], %s[3], %s[3]) tuple(s, d, m, q, rm, r0)"),
		         T, T, T, T, T, T, T, T, T, T, T, T, T, T, T, T);
		nx_literal *r = run(&a, text);
		assert_true(isnan(nx_lit_get_f64(r->tuple[0], 0)));              /* inf + -inf */
		assert_true(nx_lit_get_f64(r->tuple[0], 1) == INFINITY);
		assert_true(nx_lit_get_f64(r->tuple[1], 0) == INFINITY);         /* inf - -inf */
		assert_true(isnan(nx_lit_get_f64(r->tuple[1], 1)));              /* inf - inf */
		assert_true(isnan(nx_lit_get_f64(r->tuple[2], 0)));              /* inf * 0 */
		assert_true(nx_lit_get_f64(r->tuple[3], 0) == INFINITY);         /* 1/0 */
		assert_true(nx_lit_get_f64(r->tuple[3], 1) == -INFINITY);        /* -1/0 */
		assert_true(isnan(nx_lit_get_f64(r->tuple[3], 2)));              /* 0/0 */
		assert_true(isnan(nx_lit_get_f64(r->tuple[4], 0)));              /* fmod(inf, 1) */
		assert_true(isnan(nx_lit_get_f64(r->tuple[5], 0)));              /* fmod(1, 0) */
		nx_arena_free(&a);
	}
}

static void test_signed_zero(void **s)
{
	(void)s;
	nx_arena a;
	nx_arena_init(&a);
	nx_literal *r = run(&a, MOD("z = f32[2] constant({0, -0})\n n = f32[2] negate(z)\n"
	                            " pz = f32[2] constant({0, -0})\n mz = f32[2] constant({-0, -0})\n"
	                            " s = f32[2] add(mz, pz)\n"
	                            " l = f32[2] constant({-0, 0})\n rr = f32[2] constant({0, -0})\n"
	                            " mx = f32[2] maximum(l, rr)\n mn = f32[2] minimum(l, rr)\n"
	                            " ROOT t = (f32[2], f32[2], f32[2], f32[2]) tuple(n, s, mx, mn)"));
	assert_true(is_neg_zero(nx_lit_get_f64(r->tuple[0], 0)));  /* negate(0) = -0 */
	assert_true(!signbit(nx_lit_get_f64(r->tuple[0], 1)));     /* negate(-0) = +0 */
	assert_true(!signbit(nx_lit_get_f64(r->tuple[1], 0)));     /* -0 + 0 = +0 */
	assert_true(is_neg_zero(nx_lit_get_f64(r->tuple[1], 1)));  /* -0 + -0 = -0 */
	/* XLA's maximum/minimum are std::max/std::min: ±0 ties keep the lhs */
	assert_true(is_neg_zero(nx_lit_get_f64(r->tuple[2], 0)));
	assert_true(!signbit(nx_lit_get_f64(r->tuple[2], 1)));
	assert_true(is_neg_zero(nx_lit_get_f64(r->tuple[3], 0)));
	assert_true(!signbit(nx_lit_get_f64(r->tuple[3], 1)));
	/* reductions fold max(acc, x): the same rule in reduce and reduce-window */
	r = run(&a, "HloModule t\nmx {\n a = f32[] parameter(0)\n b = f32[] parameter(1)\n"
	            " ROOT m = f32[] maximum(a, b)\n}\nENTRY e {\n x = f32[2] constant({-0, 0})\n"
	            " i = f32[] constant(-inf)\n r = f32[] reduce(x, i), dimensions={0}, to_apply=mx\n"
	            " w = f32[1] reduce-window(x, i), window={size=2}, to_apply=mx\n"
	            " ROOT t = (f32[], f32[1]) tuple(r, w)\n}\n");
	assert_true(is_neg_zero(nx_lit_get_f64(r->tuple[0], 0)));
	assert_true(is_neg_zero(nx_lit_get_f64(r->tuple[1], 0)));
	nx_arena_free(&a);
}

static void test_int_wrap(void **s)
{
	(void)s;
	static const struct {
		const char *t, *max;
		int64_t wrapped; /* max + 1 */
	} c[] = {
		{"s8", "127", -128},
		{"s16", "32767", -32768},
		{"s32", "2147483647", INT32_MIN},
		{"s64", "9223372036854775807", INT64_MIN},
		{"u8", "255", 0},
		{"u16", "65535", 0},
		{"u32", "4294967295", 0},
		{"u64", "18446744073709551615", 0},
	};
	for (size_t k = 0; k < sizeof(c) / sizeof(c[0]); k++) {
		nx_arena a;
		nx_arena_init(&a);
		char text[512];
		const char *T = c[k].t;
		snprintf(text, sizeof(text),
		         MOD("x = %s[] constant(%s)\n o = %s[] constant(1)\n s = %s[] add(x, o)\n"
		             " z = %s[] constant(0)\n d = %s[] subtract(z, o)\n m = %s[] multiply(x, x)\n"
		             " ROOT t = (%s[], %s[], %s[]) tuple(s, d, m)"),
		         T, c[k].max, T, T, T, T, T, T, T, T);
		nx_literal *r = run(&a, text);
		bool uns = T[0] == 'u';
		if (uns) {
			assert_true(nx_lit_get_u64(r->tuple[0], 0) == 0);
			uint64_t mx = strtoull(c[k].max, NULL, 10);
			assert_true(nx_lit_get_u64(r->tuple[1], 0) == mx); /* 0 - 1 wraps to max */
			assert_true(nx_lit_get_u64(r->tuple[2], 0) == 1);  /* max*max = 1 mod 2^n */
		} else {
			assert_true(nx_lit_get_i64(r->tuple[0], 0) == c[k].wrapped);
			assert_true(nx_lit_get_i64(r->tuple[1], 0) == -1);
			assert_true(nx_lit_get_i64(r->tuple[2], 0) == 1); /* (2^(n-1)-1)^2 = 1 mod 2^n */
		}
		nx_arena_free(&a);
	}
	nx_arena a;
	nx_arena_init(&a);
	nx_literal *r = run(&a, MOD("x = s32[] constant(-2147483648)\n ROOT n = s32[] negate(x)"));
	assert_true(nx_lit_get_i64(r, 0) == INT32_MIN);
	r = run(&a, MOD("x = s8[] constant(100)\n y = s8[] constant(3)\n ROOT n = s8[] multiply(x, y)"));
	assert_true(nx_lit_get_i64(r, 0) == 44); /* 300 - 256 */
	nx_arena_free(&a);
}

static void test_dynamic_slice_clamp(void **s)
{
	(void)s;
	nx_arena a;
	nx_arena_init(&a);
	nx_literal *r = run(&a, MOD("x = s32[5] iota(), iota_dimension=0\n lo = s32[] constant(-3)\n"
	                            " hi = s32[] constant(10)\n"
	                            " a = s32[2] dynamic-slice(x, lo), dynamic_slice_sizes={2}\n"
	                            " b = s32[2] dynamic-slice(x, hi), dynamic_slice_sizes={2}\n"
	                            " u = s32[3] constant({70, 71, 72})\n"
	                            " c = s32[5] dynamic-update-slice(x, u, hi)\n"
	                            " d = s32[5] dynamic-update-slice(x, u, lo)\n"
	                            " ROOT t = (s32[2], s32[2], s32[5], s32[5]) tuple(a, b, c, d)"));
	assert_int_equal(nx_lit_get_i64(r->tuple[0], 0), 0);
	assert_int_equal(nx_lit_get_i64(r->tuple[1], 0), 3);
	int64_t c[5] = {0, 1, 70, 71, 72}, d[5] = {70, 71, 72, 3, 4};
	for (int k = 0; k < 5; k++) {
		assert_int_equal(nx_lit_get_i64(r->tuple[2], k), c[k]);
		assert_int_equal(nx_lit_get_i64(r->tuple[3], k), d[k]);
	}
	/* unsigned start indices: huge values clamp to the end */
	r = run(&a, MOD("x = s32[2,4] iota(), iota_dimension=1\n i = u32[] constant(4294967295)\n"
	                " z = u32[] constant(0)\n"
	                " ROOT a = s32[2,2] dynamic-slice(x, z, i), dynamic_slice_sizes={2,2}"));
	assert_int_equal(nx_lit_get_i64(r, 0), 2);
	nx_arena_free(&a);
}

static uint32_t f32_bits(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	return u;
}

static float bits_f32(uint32_t u)
{
	float f;
	memcpy(&f, &u, 4);
	return f;
}

static void test_bf16_rounding(void **s)
{
	(void)s;
	/* ties go to even in both directions */
	assert_int_equal(nx_f32_to_bf16(bits_f32(0x3f808000)), 0x3f80); /* down to even */
	assert_int_equal(nx_f32_to_bf16(bits_f32(0x3f818000)), 0x3f82); /* up to even */
	assert_int_equal(nx_f32_to_bf16(bits_f32(0xbf818000)), 0xbf82);
	assert_int_equal(nx_f32_to_bf16(bits_f32(0x3f808001)), 0x3f81); /* above the tie */
	/* largest exponent: a tie above the largest finite bf16 (odd mantissa)
	 * rounds to even, which is inf; just below the tie stays finite */
	assert_int_equal(nx_f32_to_bf16(bits_f32(0x7f7f8000)), 0x7f80);
	assert_int_equal(nx_f32_to_bf16(bits_f32(0x7f7f7fff)), 0x7f7f);
	assert_int_equal(nx_f32_to_bf16(bits_f32(0xff7f8000)), 0xff80);
	/* a tie below an even mantissa at the top exponent stays finite */
	assert_int_equal(nx_f32_to_bf16(bits_f32(0x7f7e8000)), 0x7f7e);
	assert_true(isnan(nx_bf16_to_f32(nx_f32_to_bf16(NAN))));
	assert_true(isnan(nx_bf16_to_f32(nx_f32_to_bf16(bits_f32(0x7f800001))))); /* sNaN stays NaN */
	/* the same through the convert op */
	nx_arena a;
	nx_arena_init(&a);
	/* 0x7f7f8000, 0x3f818000, 0x7f7f0000 */
	nx_literal *r = run(&a, MOD("u = u32[3] constant({2139062272, 1065451520, 2139029504})\n"
	                            " x = f32[3] bitcast-convert(u)\n ROOT c = bf16[3] convert(x)"));
	assert_true(isinf(nx_lit_get_f64(r, 0)));
	assert_true(nx_lit_get_f64(r, 1) == 1.015625); /* 0x3f818000 -> 0x3f82 */
	assert_true(nx_lit_get_f64(r, 2) == (double)bits_f32(0x7f7f0000));
	(void)f32_bits;
	nx_arena_free(&a);
}

/* bf16 stores take a bit-level rounding (eval_lit.c bf16_fast) where the
 * value is a bf16 normal: the same value as the format-table encoder
 * (nx_round_to_type) for random doubles over the whole exponent range,
 * ties, the edges of the normal range, overflow, zeros, inf and NaN. */
static void test_bf16_store_fast_path(void **s)
{
	(void)s;
	nx_arena a;
	nx_arena_init(&a);
	int64_t one = 1;
	nx_literal *l = nx_literal_new(&a, nx_shape_array(&a, NX_BF16, 1, &one));
	uint64_t st = 12345;
	double edge[] = {0.0, -0.0, 1.0, -1.0, 1.00390625, 1.005859375, 1.0078125 + 0x1p-9, 0x1p-126, -0x1p-126,
	                 0x1p-126 * (1 - 0x1p-9), 0x1p-127, 0x1p-133, 0x1p-134, 0x1.fep127, 0x1.ffp127, 0x1.fefffffp127,
	                 -0x1.ffp127, 0x1p128, INFINITY, -INFINITY, 3.0e38, 65504.0, 1e-40};
	int ne = (int)(sizeof edge / sizeof edge[0]);
	for (int k = 0; k < ne + 2000000; k++) {
		double v;
		if (k < ne) {
			v = edge[k];
		} else {
			st += UINT64_C(0x9e3779b97f4a7c15);
			uint64_t z = st;
			z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
			z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
			z ^= z >> 31;
			/* exponents 2^-140 .. 2^130 and every mantissa; every 4th a tie */
			uint64_t bits = (z & UINT64_C(0x800fffffffffffff)) | ((uint64_t)(1023 - 140 + (int)((z >> 52) % 271)) << 52);
			if (k % 4 == 0)
				bits = (bits & ~((UINT64_C(1) << 45) - 1)) | (UINT64_C(1) << 44);
			memcpy(&v, &bits, 8);
		}
		nx_lit_set_f64(l, 0, v);
		double got = nx_lit_get_f64(l, 0), want = nx_round_to_type(NX_BF16, v);
		if (!(got == want && signbit(got) == signbit(want))) {
			print_error("bf16 store of %a: got %a, want %a\n", v, got, want);
			fail();
		}
	}
	nx_lit_set_f64(l, 0, NAN);
	assert_true(isnan(nx_lit_get_f64(l, 0)));
	nx_arena_free(&a);
}

static void test_f8e4m3fn_convert(void **s)
{
	(void)s;
	nx_arena a;
	nx_arena_init(&a);
	nx_literal *r = run(&a, MOD("x = f32[10] constant({448, 464, 465, 1000, inf, -inf, nan, -0, 0.0009765625, 0.0029296875})\n"
	                            " ROOT c = f8e4m3fn[10] convert(x)"));
	const uint8_t *b = r->data;
	assert_int_equal(b[0], 0x7e);              /* 448, the largest finite */
	assert_int_equal(b[1], 0x7e);              /* tie 448/480: to even (448) */
	assert_true(isnan(nx_lit_get_f64(r, 2)));  /* above the tie: overflow, no inf -> NaN */
	assert_true(isnan(nx_lit_get_f64(r, 3)));
	assert_true(isnan(nx_lit_get_f64(r, 4))); /* inf -> NaN (no inf in the format) */
	assert_true(isnan(nx_lit_get_f64(r, 5)));
	assert_true(isnan(nx_lit_get_f64(r, 6)));
	assert_int_equal(b[7], 0x80);              /* -0 keeps its sign */
	assert_int_equal(b[8], 0x00);              /* 2^-10: tie between 0 and 2^-9 -> 0 */
	assert_int_equal(b[9], 0x02);              /* 3*2^-10: tie 2^-9/2^-8 -> even 2^-8 */
	nx_arena_free(&a);
}

static void test_empty_arrays(void **s)
{
	(void)s;
	nx_arena a;
	nx_arena_init(&a);
	nx_literal *r = run(&a, "HloModule t\nadd {\n a = f32[] parameter(0)\n b = f32[] parameter(1)\n"
	                        " ROOT s = f32[] add(a, b)\n}\nENTRY e {\n x = f32[0,3] constant({})\n"
	                        " i = f32[] constant(5)\n r = f32[3] reduce(x, i), dimensions={0}, to_apply=add\n"
	                        " p = f32[2,0] constant({ {}, {} })\n q = f32[0,3] constant({})\n"
	                        " d = f32[2,3] dot(p, q), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
	                        " e0 = f32[0] constant({})\n b = f32[2,0] broadcast(e0), dimensions={1}\n"
	                        " two = f32[2] constant({1, 2})\n c = f32[2] concatenate(e0, two, e0), dimensions={0}\n"
	                        " ROOT t = (f32[3], f32[2,3], f32[2,0], f32[2]) tuple(r, d, b, c)\n}\n");
	for (int k = 0; k < 3; k++)
		assert_true(nx_lit_get_f64(r->tuple[0], k) == 5);
	for (int k = 0; k < 6; k++)
		assert_true(nx_lit_get_f64(r->tuple[1], k) == 0);
	assert_int_equal(nx_shape_elems(r->tuple[2]->shape), 0);
	assert_true(nx_lit_get_f64(r->tuple[3], 0) == 1 && nx_lit_get_f64(r->tuple[3], 1) == 2);
	nx_arena_free(&a);
}

static void test_convert_saturation(void **s)
{
	(void)s;
	nx_arena a;
	nx_arena_init(&a);
	nx_literal *r = run(&a, MOD("x = f32[6] constant({-1, 300, nan, 200, -inf, 2.9})\n"
	                            " u = u8[6] convert(x)\n i = s8[6] convert(x)\n"
	                            " y = f64[3] constant({1e20, -1e20, nan})\n l = s64[3] convert(y)\n"
	                            " w = u32[3] convert(y)\n"
	                            " ROOT t = (u8[6], s8[6], s64[3], u32[3]) tuple(u, i, l, w)"));
	int64_t u[6] = {0, 255, 0, 200, 0, 2}, i8[6] = {-1, 127, 0, 127, -128, 2};
	for (int k = 0; k < 6; k++) {
		assert_int_equal(nx_lit_get_i64(r->tuple[0], k), u[k]);
		assert_int_equal(nx_lit_get_i64(r->tuple[1], k), i8[k]);
	}
	assert_true(nx_lit_get_i64(r->tuple[2], 0) == INT64_MAX);
	assert_true(nx_lit_get_i64(r->tuple[2], 1) == INT64_MIN);
	assert_true(nx_lit_get_i64(r->tuple[2], 2) == 0);
	assert_true(nx_lit_get_u64(r->tuple[3], 0) == UINT32_MAX);
	assert_true(nx_lit_get_u64(r->tuple[3], 1) == 0);
	assert_true(nx_lit_get_u64(r->tuple[3], 2) == 0);
	nx_arena_free(&a);
}

static void test_bitcast_convert_widths(void **s)
{
	(void)s;
	nx_arena a;
	nx_arena_init(&a);
	nx_literal *r = run(&a, MOD("x = f32[2] constant({1, -2})\n b = u8[2,4] bitcast-convert(x)\n"
	                            " h = u16[3,2] constant({{0x1234, 0x5678}, {0, 0x8000}, {0xffff, 0xffff}})\n"
	                            " w = u32[3] bitcast-convert(h)\n"
	                            " s = s32[2] bitcast-convert(x)\n"
	                            " back = f32[2] bitcast-convert(b)\n"
	                            " ROOT t = (u8[2,4], u32[3], s32[2], f32[2]) tuple(b, w, s, back)"));
	uint8_t want[8] = {0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0xc0}; /* little-endian */
	assert_memory_equal(r->tuple[0]->data, want, 8);
	assert_true(nx_lit_get_u64(r->tuple[1], 0) == 0x56781234u);
	assert_true(nx_lit_get_u64(r->tuple[1], 1) == 0x80000000u);
	assert_true(nx_lit_get_u64(r->tuple[1], 2) == 0xffffffffu);
	assert_true(nx_lit_get_i64(r->tuple[2], 1) == (int32_t)0xc0000000u);
	assert_true(nx_lit_get_f64(r->tuple[3], 0) == 1 && nx_lit_get_f64(r->tuple[3], 1) == -2);
	nx_arena_free(&a);
}

static void test_sort_totalorder_nan(void **s)
{
	(void)s;
	nx_arena a;
	nx_arena_init(&a);
	nx_literal *r = run(&a, "HloModule t\nlt {\n a = f32[] parameter(0)\n b = f32[] parameter(1)\n"
	                        " c = s32[] parameter(2)\n d = s32[] parameter(3)\n"
	                        " ROOT l = pred[] compare(a, b), direction=LT, type=TOTALORDER\n}\n"
	                        "ENTRY e {\n k = f32[8] constant({nan, 1, -nan, 0, -0, 1, nan, -inf})\n"
	                        " v = s32[8] iota(), iota_dimension=0\n"
	                        " ROOT s = (f32[8], s32[8]) sort(k, v), dimensions={0}, is_stable=true, to_apply=lt\n}\n");
	/* -NaN < -inf < -0 < +0 < 1 = 1 < NaN = NaN; equal keys keep input order */
	int64_t want[8] = {2, 7, 4, 3, 1, 5, 0, 6};
	for (int k = 0; k < 8; k++)
		assert_int_equal(nx_lit_get_i64(r->tuple[1], k), want[k]);
	assert_true(is_neg_zero(nx_lit_get_f64(r->tuple[0], 2)));
	nx_arena_free(&a);
}

static void test_compare_directions(void **s)
{
	(void)s;
	static const char *dirs[] = {"EQ", "NE", "LT", "LE", "GT", "GE"};
	/* (nan, 1), (1, nan), (nan, nan), (1, 1), (-0, 0), (inf, 1) */
	static const int fwant[6][6] = {
		{0, 0, 0, 1, 1, 0}, /* EQ */
		{1, 1, 1, 0, 0, 1}, /* NE */
		{0, 0, 0, 0, 0, 0}, /* LT */
		{0, 0, 0, 1, 1, 0}, /* LE */
		{0, 0, 0, 0, 0, 1}, /* GT */
		{0, 0, 0, 1, 1, 1}, /* GE */
	};
	/* u32 (0xffffffff, 1), (1, 0xffffffff), (5, 5), (0, 0x80000000) */
	static const int uwant[6][4] = {
		{0, 0, 1, 0}, {1, 1, 0, 1}, {0, 1, 0, 1}, {0, 1, 1, 1}, {1, 0, 0, 0}, {1, 0, 1, 0},
	};
	for (int d = 0; d < 6; d++) {
		nx_arena a;
		nx_arena_init(&a);
		char text[768];
		snprintf(text, sizeof(text),
		         MOD("x = f32[6] constant({nan, 1, nan, 1, -0, inf})\n"
		             " y = f32[6] constant({1, nan, nan, 1, 0, 1})\n"
		             " c = pred[6] compare(x, y), direction=%s\n"
		             " h = bf16[6] convert(x)\n g = bf16[6] convert(y)\n"
		             " cb = pred[6] compare(h, g), direction=%s\n"
		             " p = u32[4] constant({4294967295, 1, 5, 0})\n q = u32[4] constant({1, 4294967295, 5, 2147483648})\n"
		             " cu = pred[4] compare(p, q), direction=%s\n"
		             " ROOT t = (pred[6], pred[6], pred[4]) tuple(c, cb, cu)"),
		         dirs[d], dirs[d], dirs[d]);
		nx_literal *r = run(&a, text);
		for (int k = 0; k < 6; k++) {
			if (nx_lit_get_i64(r->tuple[0], k) != fwant[d][k] ||
			    nx_lit_get_i64(r->tuple[1], k) != fwant[d][k]) {
				print_error("float compare %s case %d\n", dirs[d], k);
				fail();
			}
		}
		for (int k = 0; k < 4; k++)
			if (nx_lit_get_i64(r->tuple[2], k) != uwant[d][k]) {
				print_error("u32 compare %s case %d\n", dirs[d], k);
				fail();
			}
		nx_arena_free(&a);
	}
}

static void test_rng_ops(void **s)
{
	(void)s;
	const char *text = MOD("a = f32[] constant(2)\n b = f32[] constant(3)\n"
	                       " u = f32[4096] rng(a, b), distribution=rng_uniform\n"
	                       " z = f32[] constant(1)\n o = f32[] constant(2)\n"
	                       " n = f32[4096] rng(z, o), distribution=rng_normal\n"
	                       " i0 = s32[] constant(-5)\n i1 = s32[] constant(5)\n"
	                       " iu = s32[4096] rng(i0, i1), distribution=rng_uniform\n"
	                       " u2 = f32[4096] rng(a, b), distribution=rng_uniform\n"
	                       " s0 = u64[2] rng-get-and-update-state(), delta=4096\n"
	                       " s1 = u64[2] rng-get-and-update-state(), delta=4096\n"
	                       " ROOT t = (f32[4096], f32[4096], s32[4096], f32[4096], u64[2], u64[2]) "
	                       "tuple(u, n, iu, u2, s0, s1)");
	nx_arena a;
	nx_arena_init(&a);
	nx_literal *r = run_seed(&a, text, 11), *r2 = run_seed(&a, text, 11), *r3 = run_seed(&a, text, 12);
	double sum = 0, sq = 0;
	int seen[10] = {0};
	for (int k = 0; k < 4096; k++) {
		double u = nx_lit_get_f64(r->tuple[0], k), n = nx_lit_get_f64(r->tuple[1], k);
		int64_t i = nx_lit_get_i64(r->tuple[2], k);
		assert_true(u >= 2 && u < 3);
		assert_true(i >= -5 && i < 5);
		seen[i + 5]++;
		sum += n, sq += n * n;
	}
	double mean = sum / 4096, sd = sqrt(sq / 4096 - mean * mean);
	assert_true(fabs(mean - 1) < 0.15 && fabs(sd - 2) < 0.15);
	for (int k = 0; k < 10; k++)
		assert_true(seen[k] > 300);
	/* deterministic per seed; later draws differ from earlier ones */
	assert_memory_equal(r->tuple[0]->data, r2->tuple[0]->data, 4096 * 4);
	assert_memory_not_equal(r->tuple[0]->data, r3->tuple[0]->data, 4096 * 4);
	assert_memory_not_equal(r->tuple[0]->data, r->tuple[3]->data, 4096 * 4);
	/* the state: seed, then + delta */
	assert_true(nx_lit_get_u64(r->tuple[4], 0) == 11 && nx_lit_get_u64(r->tuple[4], 1) == 0);
	assert_true(nx_lit_get_u64(r->tuple[5], 0) == 11 + 4096 && nx_lit_get_u64(r->tuple[5], 1) == 0);
	nx_arena_free(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nan_inf_binary),
		cmocka_unit_test(test_signed_zero),
		cmocka_unit_test(test_int_wrap),
		cmocka_unit_test(test_dynamic_slice_clamp),
		cmocka_unit_test(test_bf16_rounding),
		cmocka_unit_test(test_bf16_store_fast_path),
		cmocka_unit_test(test_f8e4m3fn_convert),
		cmocka_unit_test(test_empty_arrays),
		cmocka_unit_test(test_convert_saturation),
		cmocka_unit_test(test_bitcast_convert_widths),
		cmocka_unit_test(test_sort_totalorder_nan),
		cmocka_unit_test(test_compare_directions),
		cmocka_unit_test(test_rng_ops),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
