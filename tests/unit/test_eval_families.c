/* tests/unit/test_eval_families.c — the evaluator's heavy op families
 * (ir/eval/eval_conv.c, eval_window.c, eval_gather.c, eval_sort.c, eval_fft.c,
 * eval_bn.c, eval_rng.c, eval_collective.c), run from HLO text through the
 * evaluator. */
#include "testutil.h"

#include <math.h>

#include "ir/eval/eval.h"

/* Evaluates HLO text on literal-text arguments (same for every replica);
 * outs[r] is replica r's result. */
typedef struct run {
	nx_arena a;
	nx_module *m;
	nx_literal *outs[8];
} run;

static nx_literal *L(run *r, const char *text)
{
	nx_diag d = {0};
	nx_literal *l = nx_parse_literal(&r->a, text, strlen(text), &d);
	if (!l) {
		print_error("literal '%s': %s\n", text, d.msg);
		nx_diag_clear(&d);
		fail();
	}
	return l;
}

static run *run_hlo(const char *hlo, int replicas, int nargs, const char **args)
{
	run *r = calloc(1, sizeof *r);
	nx_arena_init(&r->a);
	r->m = tu_parse(hlo);
	nx_literal *a[8];
	for (int k = 0; k < nargs; k++)
		a[k] = L(r, args[k]);
	nx_literal *const *per[8];
	for (int k = 0; k < replicas; k++)
		per[k] = a;
	nx_eval_opts o = {.replicas = replicas};
	nx_diag d = {0};
	if (nx_eval_module(r->m, &o, nargs, per, &r->a, r->outs, &d) != NX_OK) {
		print_error("eval: %s\n", d.msg);
		nx_diag_clear(&d);
		fail();
	}
	return r;
}

static void run_free(run *r)
{
	nx_module_free(r->m);
	nx_arena_free(&r->a);
	free(r);
}

/* Compares got with the literal text want, within tol for floats. */
static void expect(run *r, const nx_literal *got, const char *want, double tol)
{
	const nx_literal *w = L(r, want);
	assert_true(nx_shape_compatible(got->shape, w->shape));
	int64_t n = nx_shape_elems(w->shape);
	for (int64_t k = 0; k < n; k++) {
		double gr, gi, wr, wi;
		nx_lit_get_c128(got, k, &gr, &gi);
		nx_lit_get_c128(w, k, &wr, &wi);
		if (fabs(gr - wr) > tol || fabs(gi - wi) > tol) {
			print_error("element %lld: got (%g, %g), want (%g, %g)\n", (long long)k, gr, gi, wr, wi);
			fail();
		}
	}
}

static void test_conv_negative_padding_dilations(void **state)
{
	(void)state;
	const char *args[] = {"f32[1,1,4,4] {{{{1,2,3,4},{5,6,7,8},{9,10,11,12},{13,14,15,16}}}}",
	                      "f32[1,1,2,3] {{{{5,6,7},{8,9,10}}}}"};
	run *r = run_hlo("HloModule m\nENTRY e {\n  l = f32[1,1,4,4] parameter(0)\n"
	                 "  k = f32[1,1,2,3] parameter(1)\n"
	                 "  ROOT c = f32[1,1,9,3] convolution(l, k), window={size=2x3 stride=1x3 "
	                 "pad=2_2x2_-1 lhs_dilate=2x3 rhs_dilate=2x1}, dim_labels=bf01_oi01->bf01\n}\n",
	                 1, 2, args);
	expect(r, r->outs[0],
	       "f32[1,1,9,3] {{{{10,20,30},{0,0,0},{57,74,91},{0,0,0},{125,142,159},{0,0,0},"
	       "{193,210,227},{0,0,0},{91,98,105}}}}",
	       0);
	run_free(r);
}

/* Two feature groups with a reversed 1x2 kernel, in s32. */
static void test_conv_groups_int(void **state)
{
	(void)state;
	const char *args[] = {"s32[1,4,1,2] {{{{1,2}},{{3,4}},{{5,6}},{{7,8}}}}",
	                      "s32[2,2,1,2] {{{{1,10}},{{100,1000}}},{{{2,20}},{{200,2000}}}}"};
	run *r = run_hlo("HloModule m\nENTRY e {\n  l = s32[1,4,1,2] parameter(0)\n"
	                 "  k = s32[2,2,1,2] parameter(1)\n"
	                 "  ROOT c = s32[1,2,1,1] convolution(l, k), window={size=1x2 rhs_reversal=0x1}, "
	                 "dim_labels=bf01_oi01->bf01, feature_group_count=2\n}\n",
	                 1, 2, args);
	/* o=0 sees inputs 0,1 with kernel 0; o=1 inputs 2,3 with kernel 1 */
	expect(r, r->outs[0], "s32[1,2,1,1] {{{{3412}},{{15712}}}}", 0);
	run_free(r);
}

static void test_reduce_window_base_dilation(void **state)
{
	(void)state;
	const char *args[] = {"f32[4,4] {{0,1,2,3},{4,5,6,7},{8,9,10,11},{12,13,14,15}}"};
	run *r = run_hlo("HloModule m\nmx {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
	                 "  ROOT m = f32[] maximum(a, b)\n}\nENTRY e {\n  x = f32[4,4] parameter(0)\n"
	                 "  z = f32[] constant(0)\n  ROOT w = f32[3,3] reduce-window(x, z), "
	                 "window={size=3x3 stride=3x3 pad=1_1x1_1 lhs_dilate=2x2}, to_apply=mx\n}\n",
	                 1, 1, args);
	expect(r, r->outs[0], "f32[3,3] {{0,2,3},{8,10,11},{12,14,15}}", 0);
	run_free(r);
}

static void test_select_and_scatter(void **state)
{
	(void)state;
	const char *args[] = {"f32[6] {1,5,5,2,9,3}", "f32[2] {10,20}"};
	run *r = run_hlo("HloModule m\nge {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
	                 "  ROOT c = pred[] compare(a, b), direction=GE\n}\n"
	                 "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
	                 "  ROOT s = f32[] add(a, b)\n}\nENTRY e {\n  x = f32[6] parameter(0)\n"
	                 "  s = f32[2] parameter(1)\n  z = f32[] constant(0)\n"
	                 "  ROOT r = f32[6] select-and-scatter(x, s, z), window={size=3 stride=3}, "
	                 "select=ge, scatter=add\n}\n",
	                 1, 2, args);
	/* a tie keeps the first element (GE) */
	expect(r, r->outs[0], "f32[6] {0,10,0,0,20,0}", 0);
	run_free(r);
}

static void test_gather_clamps(void **state)
{
	(void)state;
	const char *args[] = {"f32[5] {10,11,12,13,14}", "s32[3] {-2,4,1}"};
	run *r = run_hlo("HloModule m\nENTRY e {\n  x = f32[5] parameter(0)\n  i = s32[3] parameter(1)\n"
	                 "  ROOT g = f32[3,2] gather(x, i), offset_dims={1}, collapsed_slice_dims={}, "
	                 "start_index_map={0}, index_vector_dim=1, slice_sizes={2}\n}\n",
	                 1, 2, args);
	expect(r, r->outs[0], "f32[3,2] {{10,11},{13,14},{11,12}}", 0);
	run_free(r);
	const char *eargs[] = {"f32[5] {10,11,12,13,14}", "s32[0] {}"};
	r = run_hlo("HloModule m\nENTRY e {\n  x = f32[5] parameter(0)\n  i = s32[0] parameter(1)\n"
	            "  ROOT g = f32[0,2] gather(x, i), offset_dims={1}, collapsed_slice_dims={}, "
	            "start_index_map={0}, index_vector_dim=1, slice_sizes={2}\n}\n",
	            1, 2, eargs);
	assert_int_equal(nx_shape_elems(r->outs[0]->shape), 0);
	run_free(r);
}

static void test_scatter_skips_out_of_bounds(void **state)
{
	(void)state;
	/* start 4 does not fit a window of 2; -1 is negative; 1 repeats */
	const char *args[] = {"f32[5] {0,0,0,0,0}", "s32[4] {4,-1,1,1}",
	                      "f32[4,2] {{100,100},{100,100},{1,2},{3,4}}"};
	run *r = run_hlo("HloModule m\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
	                 "  ROOT s = f32[] add(a, b)\n}\nENTRY e {\n  x = f32[5] parameter(0)\n"
	                 "  i = s32[4] parameter(1)\n  u = f32[4,2] parameter(2)\n"
	                 "  ROOT s = f32[5] scatter(x, i, u), update_window_dims={1}, "
	                 "inserted_window_dims={}, scatter_dims_to_operand_dims={0}, "
	                 "index_vector_dim=1, to_apply=add\n}\n",
	                 1, 3, args);
	expect(r, r->outs[0], "f32[5] {0,4,6,0,0}", 0);
	run_free(r);
}

static void test_sort_stable(void **state)
{
	(void)state;
	const char *args[] = {"f32[2,6] {{3,1,3,1,2,3},{0,0,0,0,0,0}}",
	                      "s32[2,6] {{0,1,2,3,4,5},{6,7,8,9,10,11}}"};
	run *r = run_hlo("HloModule m\nlt {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
	                 "  c = s32[] parameter(2)\n  d = s32[] parameter(3)\n"
	                 "  ROOT l = pred[] compare(a, b), direction=LT\n}\nENTRY e {\n"
	                 "  k = f32[2,6] parameter(0)\n  v = s32[2,6] parameter(1)\n"
	                 "  ROOT s = (f32[2,6], s32[2,6]) sort(k, v), dimensions={1}, is_stable=true, "
	                 "to_apply=lt\n}\n",
	                 1, 2, args);
	expect(r, r->outs[0]->tuple[0], "f32[2,6] {{1,1,2,3,3,3},{0,0,0,0,0,0}}", 0);
	expect(r, r->outs[0]->tuple[1], "s32[2,6] {{1,3,4,0,2,5},{6,7,8,9,10,11}}", 0);
	run_free(r);
}

static void test_fft_lengths(void **state)
{
	(void)state;
	/* Prime length 7: IFFT(FFT(x)) == x and the DC term is the sum. */
	const char *args[] = {"c128[7] {(-1,0),(-0.5,1),(0,2),(0.5,0),(1,1),(1.5,2),(2,0)}"};
	run *r = run_hlo("HloModule m\nENTRY e {\n  x = c128[7] parameter(0)\n"
	                 "  f = c128[7] fft(x), fft_type=FFT, fft_length={7}\n"
	                 "  i = c128[7] fft(f), fft_type=IFFT, fft_length={7}\n"
	                 "  ROOT t = (c128[7], c128[7]) tuple(f, i)\n}\n",
	                 1, 1, args);
	double re, im;
	nx_lit_get_c128(r->outs[0]->tuple[0], 0, &re, &im);
	assert_true(fabs(re - 3.5) < 1e-12 && fabs(im - 6) < 1e-12);
	expect(r, r->outs[0]->tuple[1], args[0], 1e-12);
	run_free(r);
	/* Length 1 is the identity, length 0 gives zeros. */
	const char *a1[] = {"c64[1,1] {{(42.25,24.5)}}"};
	r = run_hlo("HloModule m\nENTRY e {\n  x = c64[1,1] parameter(0)\n"
	            "  a = c64[1,1] fft(x), fft_type=FFT, fft_length={1}\n"
	            "  b = c64[1,1] fft(x), fft_type=FFT, fft_length={0}\n"
	            "  ROOT t = (c64[1,1], c64[1,1]) tuple(a, b)\n}\n",
	            1, 1, a1);
	expect(r, r->outs[0]->tuple[0], "c64[1,1] {{(42.25,24.5)}}", 0);
	expect(r, r->outs[0]->tuple[1], "c64[1,1] {{(0,0)}}", 0);
	run_free(r);
	/* RFFT then IRFFT of odd length 5 round-trips a real signal. */
	const char *a5[] = {"f64[5] {1,-2,3.5,0,7}"};
	r = run_hlo("HloModule m\nENTRY e {\n  x = f64[5] parameter(0)\n"
	            "  s = c128[3] fft(x), fft_type=RFFT, fft_length={5}\n"
	            "  ROOT b = f64[5] fft(s), fft_type=IRFFT, fft_length={5}\n}\n",
	            1, 1, a5);
	expect(r, r->outs[0], a5[0], 1e-12);
	run_free(r);
}

static void test_batch_norm_training(void **state)
{
	(void)state;
	const char *args[] = {"f32[2,2] {{1,10},{3,30}}", "f32[2] {2,1}", "f32[2] {0.5,0}"};
	run *r = run_hlo("HloModule m\nENTRY e {\n  x = f32[2,2] parameter(0)\n"
	                 "  s = f32[2] parameter(1)\n  o = f32[2] parameter(2)\n"
	                 "  ROOT b = (f32[2,2], f32[2], f32[2]) batch-norm-training(x, s, o), "
	                 "epsilon=0, feature_index=1\n}\n",
	                 1, 3, args);
	expect(r, r->outs[0]->tuple[0], "f32[2,2] {{-1.5,-1},{2.5,1}}", 1e-6);
	expect(r, r->outs[0]->tuple[1], "f32[2] {2,20}", 1e-6);
	expect(r, r->outs[0]->tuple[2], "f32[2] {1,100}", 1e-6);
	run_free(r);
}

static void test_rng_bit_generator(void **state)
{
	(void)state;
	/* three_fry u32[3,2] from state {0,0}: what XLA's CPU backend returns. */
	const char *a2[] = {"u64[2] {0,0}"};
	run *r = run_hlo("HloModule m\nENTRY e {\n  s = u64[2] parameter(0)\n"
	                 "  ROOT r = (u64[2], u32[3,2]) rng-bit-generator(s), algorithm=rng_three_fry\n}\n",
	                 1, 1, a2);
	expect(r, r->outs[0]->tuple[1],
	       "u32[3,2] {{1797259609,2579123966},{1351547692,3235790642},{1688610540,4229293427}}", 0);
	expect(r, r->outs[0]->tuple[0], "u64[2] {0,3}", 0);
	run_free(r);
	/* philox (the default) with counter 0, key 0: Random123's known answer. */
	const char *a3[] = {"u64[3] {0,0,0}"};
	r = run_hlo("HloModule m\nENTRY e {\n  s = u64[3] parameter(0)\n"
	            "  ROOT r = (u64[3], u32[4]) rng-bit-generator(s), algorithm=rng_default\n}\n",
	            1, 1, a3);
	expect(r, r->outs[0]->tuple[1], "u32[4] {1713891541,3781805453,3159862348,2600524760}", 0);
	expect(r, r->outs[0]->tuple[0], "u64[3] {0,1,0}", 0);
	run_free(r);
}

/* 4 replicas; replica 3 is nobody's target and gets zeros, replica 0 is
 * fed by replica 2. */
static void test_collective_permute_missing_source(void **state)
{
	(void)state;
	run *r = run_hlo("HloModule m, replica_count=4\nENTRY e {\n  id = u32[] replica-id()\n"
	                 "  ten = u32[] constant(10)\n  s = u32[] add(id, ten)\n"
	                 "  b = u32[2] broadcast(s), dimensions={}\n"
	                 "  ROOT p = u32[2] collective-permute(b), source_target_pairs={{0,1},{1,2},{2,0}}\n}\n",
	                 4, 0, NULL);
	expect(r, r->outs[0], "u32[2] {12,12}", 0);
	expect(r, r->outs[1], "u32[2] {10,10}", 0);
	expect(r, r->outs[2], "u32[2] {11,11}", 0);
	expect(r, r->outs[3], "u32[2] {0,0}", 0);
	run_free(r);
}

/* Iota groups [2,2]<=[2,2]T(1,0) are {{0,2},{1,3}}. */
static void test_all_reduce_iota_groups(void **state)
{
	(void)state;
	run *r = run_hlo("HloModule m, replica_count=4\nadd {\n  a = u32[] parameter(0)\n"
	                 "  b = u32[] parameter(1)\n  ROOT s = u32[] add(a, b)\n}\nENTRY e {\n"
	                 "  id = u32[] replica-id()\n  one = u32[] constant(1)\n  x = u32[] add(id, one)\n"
	                 "  ROOT r = u32[] all-reduce(x), replica_groups=[2,2]<=[2,2]T(1,0), to_apply=add\n}\n",
	                 4, 0, NULL);
	expect(r, r->outs[0], "u32[] 4", 0);
	expect(r, r->outs[1], "u32[] 6", 0);
	expect(r, r->outs[2], "u32[] 4", 0);
	expect(r, r->outs[3], "u32[] 6", 0);
	run_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_conv_negative_padding_dilations),
		cmocka_unit_test(test_conv_groups_int),
		cmocka_unit_test(test_reduce_window_base_dilation),
		cmocka_unit_test(test_select_and_scatter),
		cmocka_unit_test(test_gather_clamps),
		cmocka_unit_test(test_scatter_skips_out_of_bounds),
		cmocka_unit_test(test_sort_stable),
		cmocka_unit_test(test_fft_lengths),
		cmocka_unit_test(test_batch_norm_training),
		cmocka_unit_test(test_rng_bit_generator),
		cmocka_unit_test(test_collective_permute_missing_source),
		cmocka_unit_test(test_all_reduce_iota_groups),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
