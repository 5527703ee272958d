/* tests/unit/test_check.c — nxcc check's tolerance (compiler/cmd_check.c):
 * an f32 output computed through bf16 values is held to the bf16 tolerance
 * (docs/numerics.md "Check tolerances"), integers stay exact, and a wrong
 * result still fails; a sum whose terms cancel is accepted by the bound from
 * sum |terms| (compiler/check_cancel.c) where the max|ref| one fails, and a
 * missing or sign-flipped term is still rejected; with --auto-cast, a sum
 * against the f32 original is measured against sum |terms| and gross errors
 * are still rejected. */
#include "testutil.h"

#include "compiler/check.h"
#include "ir/eval/eval.h"

#include <math.h>
#include <string.h>

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

/* out0: a sum over 64 terms seen through an identity custom call and a
 * reshape (a cancellation candidate); out1: a product (not a sum); out2: a
 * reduce with a max reducer (not a sum); out3: a dot through a transpose. */
static const char *SUM = "HloModule s\n"
                         "add { a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT s = f32[] add(a, b) }\n"
                         "max { a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT s = f32[] maximum(a, b) }\n"
                         "ENTRY e {\n"
                         "  p = f32[16,64] parameter(0)\n"
                         "  z = f32[] constant(0)\n"
                         "  r = f32[16] reduce(p, z), dimensions={1}, to_apply=add\n"
                         "  c = f32[16] custom-call(r), custom_call_target=\"AwsNeuronTransferWithStaticRing\"\n"
                         "  o0 = f32[4,4] reshape(c)\n"
                         "  o1 = f32[16] multiply(r, r)\n"
                         "  o2 = f32[16] reduce(p, z), dimensions={1}, to_apply=max\n"
                         "  d = f32[16,16] dot(p, p), lhs_contracting_dims={1}, rhs_contracting_dims={1}\n"
                         "  o3 = f32[16,16] transpose(d), dimensions={1,0}\n"
                         "  ROOT t = (f32[4,4], f32[16], f32[16], f32[16,16]) tuple(o0, o1, o2, o3)\n"
                         "}\n";

static void test_sum_source(void **state)
{
	(void)state;
	nx_module *m = tu_parse(SUM);
	int64_t n = 0;
	const nx_inst *s = nx_check_output_sum(m, 0, &n);
	assert_non_null(s);
	assert_string_equal(s->name, "r");
	assert_int_equal(n, 64);
	assert_null(nx_check_output_sum(m, 1, &n));
	assert_null(nx_check_output_sum(m, 2, &n));
	s = nx_check_output_sum(m, 3, &n);
	assert_non_null(s);
	assert_string_equal(s->name, "d");
	assert_int_equal(n, 64);
	assert_null(nx_check_output_sum(m, 4, &n));
	nx_module_free(m);
	/* a scatter that adds (an embedding gradient): each element sums at most
	 * every update row plus its own value; one that replaces is no sum */
	m = tu_parse("HloModule g\n"
	             "add { a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT s = f32[] add(a, b) }\n"
	             "set { a = f32[] parameter(0)\n ROOT b = f32[] parameter(1) }\n"
	             "ENTRY e {\n"
	             "  z = f32[] constant(0)\n"
	             "  o = f32[2,16] broadcast(z), dimensions={}\n"
	             "  i = s64[2048,1] parameter(0)\n"
	             "  u = f32[2048,16] parameter(1)\n"
	             "  s = f32[2,16] scatter(o, i, u), update_window_dims={1}, inserted_window_dims={0},"
	             " scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add\n"
	             "  r = f32[2,16] scatter(o, i, u), update_window_dims={1}, inserted_window_dims={0},"
	             " scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=set\n"
	             "  ROOT t = (f32[2,16], f32[2,16]) tuple(s, r)\n"
	             "}\n");
	s = nx_check_output_sum(m, 0, &n);
	assert_non_null(s);
	assert_string_equal(s->name, "s");
	assert_int_equal(n, 2049);
	assert_null(nx_check_output_sum(m, 1, &n));
	nx_module_free(m);
}

/* Row i of p: 63 values in [-1, 1) and minus their sum (rounded to f32):
 * each row sums to rounding noise, like a gradient that is analytically
 * zero (bert__bert_dp_graph_4 out27). The "device" sums the terms in the
 * reverse order, minus term `skip` (-1: none), with term `flip` negated. */
static void device_sums(const nx_literal *p, nx_literal *got, int skip, int flip)
{
	for (int i = 0; i < 16; i++) {
		float s = 0;
		for (int j = 63; j >= 0; j--)
			if (j != skip)
				s += (j == flip ? -1.0f : 1.0f) * (float)nx_lit_get_f64(p, i * 64 + j);
		nx_lit_set_f64(got, i, s);
	}
}

static void test_cancellation(void **state)
{
	(void)state;
	nx_module *m = tu_parse(SUM);
	nx_arena a;
	nx_arena_init(&a);
	int64_t dims[2] = {16, 64};
	nx_literal *p = nx_literal_new(&a, nx_shape_array(&a, NX_F32, 2, dims));
	uint32_t x = 12345;
	for (int i = 0; i < 16; i++) {
		double sum = 0;
		for (int j = 0; j < 63; j++) {
			x = x * 1664525u + 1013904223u;
			float v = (float)((double)(x >> 8) / (1 << 24) * 2 - 1);
			nx_lit_set_f64(p, i * 64 + j, v);
			sum += v;
		}
		nx_lit_set_f64(p, i * 64 + 63, -sum);
	}
	nx_literal *args1[1] = {p};
	nx_literal *const *argv[1] = {args1};
	nx_eval_opts eo = {.replicas = 1};
	nx_diag d = {0};
	nx_literal *ref = NULL, *abs = NULL;
	assert_int_equal(nx_eval_module(m, &eo, 1, argv, &a, &ref, &d), NX_OK);
	assert_int_equal(nx_check_abs_sums(m, 0, &eo, argv, &a, &abs, &d), NX_OK);
	const nx_literal *refs[1] = {ref->tuple[0]};
	assert_int_equal(nx_shape_elems(abs->shape), 16);
	for (int i = 0; i < 16; i++) { /* sum |terms| of row i */
		double s = 0;
		for (int j = 0; j < 64; j++)
			s += fabs(nx_lit_get_f64(p, i * 64 + j));
		assert_true(fabs(nx_lit_get_f64(abs, i) - s) <= 1e-5 * s);
	}
	int64_t Lr = nx_check_longest_reduction(m);
	assert_int_equal(Lr, 64);
	nx_literal *got = nx_literal_new(&a, nx_shape_copy(&a, refs[0]->shape));
	nx_literal *outs[1] = {got};
	nx_check_cancel cancel[1] = {{abs, 64, "reduce", 0}};
	FILE *devnull = fopen("/dev/null", "w");
	assert_non_null(devnull);
	/* another summation order: the old bound (from max|ref|, itself noise)
	 * rejects it, the cancellation bound accepts it */
	device_sums(p, got, -1, -1);
	assert_true(nx_check_output_fails(refs[0], got, Lr, NX_F32));
	assert_int_equal(nx_check_compare_cancel(devnull, refs, outs, 1, Lr, NULL, NULL, NULL), 1);
	assert_int_equal(nx_check_compare_cancel(devnull, refs, outs, 1, Lr, NULL, NULL, cancel), 0);
	/* a missing term, or one with the wrong sign, is still rejected */
	device_sums(p, got, 5, -1);
	assert_int_equal(nx_check_compare_cancel(devnull, refs, outs, 1, Lr, NULL, NULL, cancel), 1);
	device_sums(p, got, -1, 5);
	assert_int_equal(nx_check_compare_cancel(devnull, refs, outs, 1, Lr, NULL, NULL, cancel), 1);
	/* so is a wrong value where the sum is not noise: the element of the
	 * largest sum |terms| one part in 1e3 off its sum |terms| */
	device_sums(p, got, -1, -1);
	int big = 0;
	for (int i = 1; i < 16; i++)
		if (nx_lit_get_f64(abs, i) > nx_lit_get_f64(abs, big))
			big = i;
	nx_lit_set_f64(got, big, nx_lit_get_f64(got, big) + 1e-3 * nx_lit_get_f64(abs, big));
	assert_int_equal(nx_check_compare_cancel(devnull, refs, outs, 1, Lr, NULL, NULL, cancel), 1);
	fclose(devnull);
	nx_diag_clear(&d);
	nx_arena_free(&a);
	nx_module_free(m);
}

/* Row i of p: 64 terms; cancel: 63 values in [-1, 1) and minus their sum
 * (each row sums to noise), else 64 values in [0, 1) (no cancellation). */
static nx_literal *terms(nx_arena *a, bool cancel)
{
	int64_t dims[2] = {16, 64};
	nx_literal *p = nx_literal_new(a, nx_shape_array(a, NX_F32, 2, dims));
	uint32_t x = 12345;
	for (int i = 0; i < 16; i++) {
		double sum = 0;
		for (int j = 0; j < 64; j++) {
			x = x * 1664525u + 1013904223u;
			double u = (double)(x >> 8) / (1 << 24);
			float v = (float)(cancel ? u * 2 - 1 : u);
			if (cancel && j == 63)
				v = (float)-sum;
			nx_lit_set_f64(p, i * 64 + j, v);
			sum += v;
		}
	}
	return p;
}

/* What a bf16 auto-cast program makes of the sums: each term rounded to
 * bf16 and then off by a relative error of up to 8 bf16 unit roundoffs
 * (upstream bf16 arithmetic; deterministic pseudo-random), summed in f32. */
static void autocast_sums(const nx_literal *p, nx_literal *got)
{
	uint32_t x = 777;
	for (int i = 0; i < 16; i++) {
		float s = 0;
		for (int j = 0; j < 64; j++) {
			x = x * 1664525u + 1013904223u;
			double delta = ((double)(x >> 8) / (1 << 24) * 2 - 1) * 8 * ldexp(1, -8);
			uint32_t w;
			float v = (float)nx_lit_get_f64(p, i * 64 + j);
			memcpy(&w, &v, 4);
			w = (w + 0x7fffu + ((w >> 16) & 1u)) & 0xffff0000u; /* round to bf16, nearest even */
			memcpy(&v, &w, 4);
			s += (float)(v * (1 + delta));
		}
		nx_lit_set_f64(got, i, s);
	}
}

static void test_autocast_sums(void **state)
{
	(void)state;
	nx_module *m = tu_parse(SUM);
	nx_arena a;
	nx_arena_init(&a);
	double bound = nx_check_autocast_bound("bf16");
	assert_true(bound == 0.125);
	for (int cancel = 1; cancel >= 0; cancel--) {
		nx_literal *args1[1] = {terms(&a, cancel)};
		nx_literal *const *argv[1] = {args1};
		nx_eval_opts eo = {.replicas = 1};
		nx_diag d = {0};
		nx_literal *ref = NULL, *abs = NULL;
		assert_int_equal(nx_eval_module(m, &eo, 1, argv, &a, &ref, &d), NX_OK);
		assert_int_equal(nx_check_abs_sums(m, 0, &eo, argv, &a, &abs, &d), NX_OK);
		const nx_literal *r = ref->tuple[0];
		nx_literal *got = nx_literal_new(&a, nx_shape_copy(&a, r->shape));
		autocast_sums(args1[0], got);
		/* bf16 noise: relative to the noise the sums cancel to, it is huge
		 * (bert_dp_graph_4 out27: 1.2e4); against sum |terms| it is within
		 * the bound; a sum that does not cancel passes the plain measure */
		double plain = nx_check_rel_l2(r, got, NULL), vs_abs = nx_check_rel_l2(r, got, abs);
		if (cancel)
			assert_true(plain > bound);
		else
			assert_true(plain <= bound);
		assert_true(vs_abs <= bound / 4);
		/* the signs of the terms lost (got = sum |terms|): rejected either way */
		for (int i = 0; i < 16; i++)
			nx_lit_set_f64(got, i, nx_lit_get_f64(abs, i));
		if (cancel)
			assert_true(nx_check_rel_l2(r, got, abs) > bound);
		/* half of the terms missing: rejected (cancelling terms: half of
		 * them sum to about sqrt(32)/sqrt(3) of 32 x 0.5, under the bound) */
		for (int i = 0; i < 16; i++) {
			double h = 0;
			for (int j = 0; j < 32; j++)
				h += nx_lit_get_f64(args1[0], i * 64 + j);
			nx_lit_set_f64(got, i, h);
		}
		if (!cancel)
			assert_true(nx_check_rel_l2(r, got, abs) > bound && nx_check_rel_l2(r, got, NULL) > bound);
		/* the result negated */
		for (int i = 0; i < 16; i++)
			nx_lit_set_f64(got, i, -nx_lit_get_f64(r, i));
		if (!cancel)
			assert_true(nx_check_rel_l2(r, got, abs) > bound);
		/* an error of 0.25 sum|terms| on every element is rejected, 0.05 is
		 * not: the resolution of a bf16 comparison is 32 u sum|terms| (a
		 * single missing term, about sum|terms|/64 here, is the device
		 * check's to find, in the program's own precision) */
		for (int i = 0; i < 16; i++)
			nx_lit_set_f64(got, i, nx_lit_get_f64(r, i) + 0.25 * nx_lit_get_f64(abs, i));
		assert_true(nx_check_rel_l2(r, got, abs) > bound);
		for (int i = 0; i < 16; i++)
			nx_lit_set_f64(got, i, nx_lit_get_f64(r, i) - 0.05 * nx_lit_get_f64(abs, i));
		assert_true(nx_check_rel_l2(r, got, abs) <= bound);
		nx_diag_clear(&d);
	}
	nx_arena_free(&a);
	nx_module_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_through_types),
		cmocka_unit_test(test_tolerance),
		cmocka_unit_test(test_sum_source),
		cmocka_unit_test(test_cancellation),
		cmocka_unit_test(test_autocast_sums),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
