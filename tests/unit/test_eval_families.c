/* tests/unit/test_eval_families.c — the evaluator's heavy op families
 * (ir/eval_conv.c, eval_window.c, eval_gather.c, eval_sort.c, eval_fft.c,
 * eval_bn.c, eval_rng.c), called directly on hand-built instructions. */
#include "testutil.h"

#include <math.h>

#include "ir/eval.h"

/* Until the evaluator core (ir/eval.c) provides the literal accessors, these
 * weak stand-ins cover the types used here; the core's strong definitions
 * replace them once it is linked. */
#define WEAK __attribute__((weak))
static void *elem(const nx_literal *l, int64_t i)
{
	return (char *)l->data + i * nx_type_bytes(l->shape->type);
}
WEAK nx_literal *nx_eval_alloc(nx_eval *ev, nx_shape *s)
{
	return nx_literal_new(&ev->arena, s);
}
WEAK int64_t nx_lit_get_i64(const nx_literal *l, int64_t i)
{
	switch (l->shape->type) {
	case NX_S32: return *(int32_t *)elem(l, i);
	case NX_U32: return *(uint32_t *)elem(l, i);
	case NX_S64: case NX_U64: return *(int64_t *)elem(l, i);
	case NX_PRED: case NX_U8: return *(uint8_t *)elem(l, i);
	case NX_F32: return (int64_t)*(float *)elem(l, i);
	default: return (int64_t)*(double *)elem(l, i);
	}
}
WEAK uint64_t nx_lit_get_u64(const nx_literal *l, int64_t i)
{
	return (uint64_t)nx_lit_get_i64(l, i);
}
WEAK double nx_lit_get_f64(const nx_literal *l, int64_t i)
{
	switch (l->shape->type) {
	case NX_F32: case NX_C64: return *(float *)elem(l, i);
	case NX_F64: case NX_C128: return *(double *)elem(l, i);
	default: return (double)nx_lit_get_i64(l, i);
	}
}
WEAK void nx_lit_get_c128(const nx_literal *l, int64_t i, double *re, double *im)
{
	*im = 0;
	*re = nx_lit_get_f64(l, i);
	if (l->shape->type == NX_C64)
		*im = ((float *)elem(l, i))[1];
	if (l->shape->type == NX_C128)
		*im = ((double *)elem(l, i))[1];
}
WEAK void nx_lit_set_i64(nx_literal *l, int64_t i, int64_t v)
{
	switch (l->shape->type) {
	case NX_S32: case NX_U32: *(int32_t *)elem(l, i) = (int32_t)v; break;
	case NX_S64: case NX_U64: *(int64_t *)elem(l, i) = v; break;
	case NX_PRED: *(uint8_t *)elem(l, i) = v != 0; break;
	case NX_U8: *(uint8_t *)elem(l, i) = (uint8_t)v; break;
	case NX_F32: *(float *)elem(l, i) = (float)v; break;
	default: *(double *)elem(l, i) = (double)v; break;
	}
}
WEAK void nx_lit_set_u64(nx_literal *l, int64_t i, uint64_t v)
{
	nx_lit_set_i64(l, i, (int64_t)v);
}
WEAK void nx_lit_set_c128(nx_literal *l, int64_t i, double re, double im)
{
	if (l->shape->type == NX_C64) {
		((float *)elem(l, i))[0] = (float)re;
		((float *)elem(l, i))[1] = (float)im;
	} else {
		((double *)elem(l, i))[0] = re;
		((double *)elem(l, i))[1] = im;
	}
}
WEAK void nx_lit_set_f64(nx_literal *l, int64_t i, double v)
{
	switch (l->shape->type) {
	case NX_F32: *(float *)elem(l, i) = (float)v; break;
	case NX_F64: *(double *)elem(l, i) = v; break;
	case NX_C64: case NX_C128: nx_lit_set_c128(l, i, v, 0); break;
	default: nx_lit_set_i64(l, i, (int64_t)v); break;
	}
}
WEAK void nx_lit_copy_elem(nx_literal *d, int64_t di, const nx_literal *s, int64_t si)
{
	memcpy(elem(d, di), elem(s, si), (size_t)nx_type_bytes(d->shape->type));
}
WEAK nx_status nx_eval_call(nx_eval *ev, const nx_comp *c, nx_literal *const *args, int nargs,
                            nx_literal **out)
{
	(void)args, (void)nargs, (void)out;
	return nx_diag_set(ev->diag, NX_ERR_INPUT, NULL, 0, 0, "no evaluator core to call %s", c->name);
}
WEAK nx_status nx_eval_exchange(nx_eval *ev, const nx_inst *i, nx_literal *mine, nx_literal ***all)
{
	(void)i, (void)mine, (void)all;
	return nx_diag_set(ev->diag, NX_ERR_INTERNAL, NULL, 0, 0, "no evaluator core");
}

/* ------------------------------------------------------------ fixtures */

typedef struct fx {
	nx_module *m;
	nx_comp *c;
	nx_eval ev;
	nx_diag d;
} fx;

static fx *fx_new(void)
{
	fx *f = calloc(1, sizeof *f);
	f->m = nx_module_new("t");
	f->c = nx_comp_new(f->m, "e");
	nx_arena_init(&f->ev.arena);
	f->ev.module = f->m;
	f->ev.diag = &f->d;
	f->ev.nreplicas = 1;
	return f;
}

static void fx_free(fx *f)
{
	nx_arena_free(&f->ev.arena);
	nx_module_free(f->m);
	nx_diag_clear(&f->d);
	free(f);
}

static nx_shape *sh(fx *f, nx_type t, int rank, const int64_t *dims)
{
	return nx_shape_array(nx_module_arena(f->m), t, rank, dims);
}

static nx_literal *lit(fx *f, nx_shape *s, const double *v)
{
	nx_literal *l = nx_literal_new(&f->ev.arena, s);
	for (int64_t k = 0; k < nx_shape_elems(s); k++)
		nx_lit_set_f64(l, k, v[k]);
	return l;
}

static nx_ivec iv(fx *f, int n, const int64_t *v)
{
	return nx_ivec_dup(nx_module_arena(f->m), v, n);
}

static nx_inst *inst(fx *f, nx_opcode op, nx_shape *s, int noperands)
{
	nx_inst *i = nx_inst_new(f->c, op, s, NULL, 0, nx_opcode_name(op));
	i->noperands = noperands;
	return i;
}

/* A scalar computation (a, b) -> op(a, b). */
static nx_comp *binop_comp(fx *f, nx_opcode op, nx_type t, nx_type rt)
{
	nx_comp *c = nx_comp_new(f->m, nx_module_unique_name(f->m, "f"));
	nx_shape *s = sh(f, t, 0, NULL);
	nx_inst *p[2];
	for (int k = 0; k < 2; k++) {
		p[k] = nx_inst_new(c, NX_OP_PARAMETER, s, NULL, 0, k ? "b" : "a");
		p[k]->a.parameter_number = k;
		nx_comp_add_param(c, p[k]);
	}
	c->root = nx_inst_new(c, op, sh(f, rt, 0, NULL), p, 2, "r");
	return c;
}

static nx_window_dim *window(fx *f, nx_inst *i, int n)
{
	i->a.window.ndims = n;
	i->a.window.dims = nx_arena_alloc(nx_module_arena(f->m), sizeof(nx_window_dim) * (size_t)n);
	for (int k = 0; k < n; k++)
		i->a.window.dims[k] = (nx_window_dim){.size = 1, .stride = 1, .window_dilation = 1,
		                                      .base_dilation = 1};
	return i->a.window.dims;
}

static void expect(const nx_literal *l, const double *want, int64_t n, double tol)
{
	assert_int_equal(nx_shape_elems(l->shape), n);
	for (int64_t k = 0; k < n; k++) {
		double got = nx_lit_get_f64(l, k);
		if (fabs(got - want[k]) > tol) {
			print_error("element %lld: got %g, want %g\n", (long long)k, got, want[k]);
			fail();
		}
	}
}

static void ok(fx *f, nx_status st)
{
	if (st != NX_OK) {
		print_error("%s\n", f->d.msg ? f->d.msg : "error");
		fail();
	}
}

/* ------------------------------------------------------------ convolution */

static void conv_dnums_bf01(fx *f, nx_inst *i)
{
	static const int64_t sp[] = {2, 3};
	nx_conv_dnums *d = &i->a.conv;
	d->present = true;
	d->in_batch = 0, d->in_feature = 1, d->in_spatial = iv(f, 2, sp);
	d->k_out = 0, d->k_in = 1, d->k_spatial = iv(f, 2, sp);
	d->out_batch = 0, d->out_feature = 1, d->out_spatial = iv(f, 2, sp);
}

/* XLA's DilatedWindowAndBaseConv2DWithDifferentLowAndHighPaddingAndStrides:
 * negative high padding, both dilations and strides at once. */
static void test_conv_negative_padding_dilations(void **state)
{
	(void)state;
	fx *f = fx_new();
	static const int64_t ld[] = {1, 1, 4, 4}, rd[] = {1, 1, 2, 3}, od[] = {1, 1, 9, 3};
	double lv[16], rv[] = {5, 6, 7, 8, 9, 10};
	for (int k = 0; k < 16; k++)
		lv[k] = k + 1;
	nx_literal *ops[2] = {lit(f, sh(f, NX_F32, 4, ld), lv), lit(f, sh(f, NX_F32, 4, rd), rv)};
	nx_inst *i = inst(f, NX_OP_CONVOLUTION, sh(f, NX_F32, 4, od), 2);
	conv_dnums_bf01(f, i);
	nx_window_dim *w = window(f, i, 2);
	w[0] = (nx_window_dim){.size = 2, .stride = 1, .pad_lo = 2, .pad_hi = 2, .window_dilation = 2,
	                       .base_dilation = 2};
	w[1] = (nx_window_dim){.size = 3, .stride = 3, .pad_lo = 2, .pad_hi = -1, .window_dilation = 1,
	                       .base_dilation = 3};
	nx_literal *out;
	ok(f, nx_eval_convolution(&f->ev, i, ops, &out));
	static const double want[] = {10,  20,  30,  0, 0, 0, 57,  74,  91,  0, 0, 0, 125, 142,
	                              159, 0,   0,   0, 193, 210, 227, 0, 0, 0, 91, 98,  105};
	expect(out, want, 27, 0);
	fx_free(f);
}

/* Two feature groups, 1x1 kernel: each output feature sees only its half of
 * the input features; also checks s32 accumulation and reversal. */
static void test_conv_groups_int(void **state)
{
	(void)state;
	fx *f = fx_new();
	static const int64_t ld[] = {1, 4, 1, 2}, rd[] = {2, 2, 1, 2}, od[] = {1, 2, 1, 1};
	/* in features 0..3, spatial width 2 */
	double lv[] = {1, 2, 3, 4, 5, 6, 7, 8};
	/* kernel [o][i][0][w] */
	double rv[] = {1, 10, 100, 1000, 2, 20, 200, 2000};
	nx_literal *ops[2] = {lit(f, sh(f, NX_S32, 4, ld), lv), lit(f, sh(f, NX_S32, 4, rd), rv)};
	nx_inst *i = inst(f, NX_OP_CONVOLUTION, sh(f, NX_S32, 4, od), 2);
	conv_dnums_bf01(f, i);
	i->a.feature_group_count = 2;
	nx_window_dim *w = window(f, i, 2);
	w[1].size = 2;
	nx_literal *out;
	ok(f, nx_eval_convolution(&f->ev, i, ops, &out));
	/* o=0: in 0,1: 1*1 + 2*10 + 3*100 + 4*1000; o=1: in 2,3 with kernel 2.. */
	double want[] = {1 + 20 + 300 + 4000, 5 * 2 + 6 * 20 + 7 * 200 + 8 * 2000};
	expect(out, want, 2, 0);
	w[1].reversal = true;
	ok(f, nx_eval_convolution(&f->ev, i, ops, &out));
	double want_rev[] = {10 + 2 + 3000 + 400, 5 * 20 + 6 * 2 + 7 * 2000 + 8 * 200};
	expect(out, want_rev, 2, 0);
	fx_free(f);
}

/* ----------------------------------------------------------- reduce-window */

static void test_reduce_window_base_dilation(void **state)
{
	(void)state;
	fx *f = fx_new();
	static const int64_t id[] = {4, 4}, od[] = {3, 3};
	double v[16], z = 0;
	for (int k = 0; k < 16; k++)
		v[k] = k;
	nx_literal *ops[2] = {lit(f, sh(f, NX_F32, 2, id), v), lit(f, sh(f, NX_F32, 0, NULL), &z)};
	nx_inst *i = inst(f, NX_OP_REDUCE_WINDOW, sh(f, NX_F32, 2, od), 2);
	nx_comp *mx = binop_comp(f, NX_OP_MAXIMUM, NX_F32, NX_F32);
	nx_inst_set_called(i, &mx, 1);
	nx_window_dim *w = window(f, i, 2);
	for (int k = 0; k < 2; k++)
		w[k] = (nx_window_dim){.size = 3, .stride = 3, .pad_lo = 1, .pad_hi = 1,
		                       .window_dilation = 1, .base_dilation = 2};
	nx_literal *out;
	ok(f, nx_eval_reduce_window(&f->ev, i, ops, &out));
	static const double want[] = {0, 2, 3, 8, 10, 11, 12, 14, 15};
	expect(out, want, 9, 0);
	fx_free(f);
}

static void test_select_and_scatter(void **state)
{
	(void)state;
	fx *f = fx_new();
	static const int64_t id[] = {6}, sd[] = {2};
	double v[] = {1, 5, 5, 2, 9, 3}, s[] = {10, 20}, z = 0;
	nx_literal *ops[3] = {lit(f, sh(f, NX_F32, 1, id), v), lit(f, sh(f, NX_F32, 1, sd), s),
	                      lit(f, sh(f, NX_F32, 0, NULL), &z)};
	nx_inst *i = inst(f, NX_OP_SELECT_AND_SCATTER, sh(f, NX_F32, 1, id), 3);
	nx_comp *cs[2] = {binop_comp(f, NX_OP_COMPARE, NX_F32, NX_PRED),
	                  binop_comp(f, NX_OP_ADD, NX_F32, NX_F32)};
	cs[0]->root->a.direction = NX_CMP_GE;
	nx_inst_set_called(i, cs, 2);
	nx_window_dim *w = window(f, i, 1);
	w[0].size = 3, w[0].stride = 3;
	nx_literal *out;
	ok(f, nx_eval_select_and_scatter(&f->ev, i, ops, &out));
	/* ties keep the first (GE): window {1,5,5} selects index 1 */
	static const double want[] = {0, 10, 0, 0, 20, 0};
	expect(out, want, 6, 0);
	fx_free(f);
}

/* ---------------------------------------------------------- gather/scatter */

static void test_gather_clamps(void **state)
{
	(void)state;
	fx *f = fx_new();
	static const int64_t od_[] = {5}, idd[] = {3}, outd[] = {3, 2};
	double ov[] = {10, 11, 12, 13, 14}, ixv[] = {-2, 4, 1};
	nx_literal *ops[2] = {lit(f, sh(f, NX_F32, 1, od_), ov), lit(f, sh(f, NX_S32, 1, idd), ixv)};
	nx_inst *i = inst(f, NX_OP_GATHER, sh(f, NX_F32, 2, outd), 2);
	static const int64_t one[] = {1}, zero[] = {0}, two[] = {2};
	i->a.gather.offset_dims = iv(f, 1, one);
	i->a.gather.start_index_map = iv(f, 1, zero);
	i->a.gather.index_vector_dim = 1; /* == rank: implicit trailing 1 */
	i->a.gather.slice_sizes = iv(f, 1, two);
	nx_literal *out;
	ok(f, nx_eval_gather(&f->ev, i, ops, &out));
	static const double want[] = {10, 11, 13, 14, 11, 12};
	expect(out, want, 6, 0);

	/* Empty start indices give an empty result. */
	static const int64_t e0[] = {0}, eo[] = {0, 2};
	ops[1] = lit(f, sh(f, NX_S32, 1, e0), NULL);
	i->shape = sh(f, NX_F32, 2, eo);
	ok(f, nx_eval_gather(&f->ev, i, ops, &out));
	assert_int_equal(nx_shape_elems(out->shape), 0);
	fx_free(f);
}

static void test_scatter_skips_out_of_bounds(void **state)
{
	(void)state;
	fx *f = fx_new();
	static const int64_t od_[] = {5}, idd[] = {4}, ud[] = {4, 2};
	double ov[] = {0, 0, 0, 0, 0};
	/* start 4 does not fit a window of 2; -1 is negative; 1 and 1 repeat */
	double ixv[] = {4, -1, 1, 1}, uv[] = {100, 100, 100, 100, 1, 2, 3, 4};
	nx_literal *ops[3] = {lit(f, sh(f, NX_F32, 1, od_), ov), lit(f, sh(f, NX_S32, 1, idd), ixv),
	                      lit(f, sh(f, NX_F32, 2, ud), uv)};
	nx_inst *i = inst(f, NX_OP_SCATTER, sh(f, NX_F32, 1, od_), 3);
	nx_comp *add = binop_comp(f, NX_OP_ADD, NX_F32, NX_F32);
	nx_inst_set_called(i, &add, 1);
	static const int64_t one[] = {1}, zero[] = {0};
	i->a.scatter.update_window_dims = iv(f, 1, one);
	i->a.scatter.scatter_dims_to_operand_dims = iv(f, 1, zero);
	i->a.scatter.index_vector_dim = 1;
	nx_literal *out;
	ok(f, nx_eval_scatter(&f->ev, i, ops, &out));
	static const double want[] = {0, 4, 6, 0, 0};
	expect(out, want, 5, 0);
	/* The operand itself is not modified. */
	expect(ops[0], ov, 5, 0);
	fx_free(f);
}

/* ------------------------------------------------------------------- sort */

static void test_sort_stable(void **state)
{
	(void)state;
	fx *f = fx_new();
	static const int64_t d[] = {2, 6};
	double k[] = {3, 1, 3, 1, 2, 3, 0, 0, 0, 0, 0, 0}, p[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
	nx_comp *c = nx_comp_new(f->m, "cmp");
	nx_inst *pp[4];
	for (int q = 0; q < 4; q++) {
		pp[q] = nx_inst_new(c, NX_OP_PARAMETER, sh(f, NX_F32, 0, NULL), NULL, 0, "p");
		pp[q]->a.parameter_number = q;
		nx_comp_add_param(c, pp[q]);
	}
	c->root = nx_inst_new(c, NX_OP_COMPARE, sh(f, NX_PRED, 0, NULL), pp, 2, "lt");
	c->root->a.direction = NX_CMP_LT;
	nx_shape *ts[2] = {sh(f, NX_F32, 2, d), sh(f, NX_F32, 2, d)};
	nx_inst *i = inst(f, NX_OP_SORT, nx_shape_tuple(nx_module_arena(f->m), 2, ts), 2);
	nx_inst_set_called(i, &c, 1);
	static const int64_t dim1[] = {1};
	i->a.dimensions = iv(f, 1, dim1);
	i->a.is_stable = true;
	nx_literal *ops[2] = {lit(f, ts[0], k), lit(f, ts[1], p)}, *out;
	ok(f, nx_eval_sort(&f->ev, i, ops, &out));
	static const double wk[] = {1, 1, 2, 3, 3, 3, 0, 0, 0, 0, 0, 0};
	static const double wp[] = {1, 3, 4, 0, 2, 5, 6, 7, 8, 9, 10, 11};
	expect(out->tuple[0], wk, 12, 0);
	expect(out->tuple[1], wp, 12, 0);
	fx_free(f);
}

/* -------------------------------------------------------------------- fft */

static nx_literal *fft_run(fx *f, nx_fft_type t, nx_shape *os, nx_literal *in, int n,
                           const int64_t *len)
{
	nx_inst *i = inst(f, NX_OP_FFT, os, 1);
	i->a.fft_type = t;
	i->a.fft_length = iv(f, n, len);
	nx_literal *out;
	ok(f, nx_eval_fft(&f->ev, i, &in, &out));
	return out;
}

static void test_fft_lengths(void **state)
{
	(void)state;
	fx *f = fx_new();
	/* Length 7 (prime): FFT then IFFT returns the input; FFT of a delta is flat. */
	static const int64_t d7[] = {7};
	nx_shape *s7 = sh(f, NX_C128, 1, d7);
	nx_literal *x = nx_literal_new(&f->ev.arena, s7);
	for (int k = 0; k < 7; k++)
		nx_lit_set_c128(x, k, k * 0.5 - 1, k % 3);
	nx_literal *y = fft_run(f, NX_FFT_FFT, s7, x, 1, d7);
	double re, im;
	nx_lit_get_c128(y, 0, &re, &im); /* DC = sum */
	assert_true(fabs(re - (0.5 * 21 - 7)) < 1e-12 && fabs(im - 6) < 1e-12);
	nx_literal *z = fft_run(f, NX_FFT_IFFT, s7, y, 1, d7);
	for (int k = 0; k < 7; k++) {
		nx_lit_get_c128(z, k, &re, &im);
		assert_true(fabs(re - (k * 0.5 - 1)) < 1e-12 && fabs(im - k % 3) < 1e-12);
	}
	/* Length 1 is the identity; length 0 gives zeros. */
	static const int64_t d1[] = {1, 1}, l1[] = {1}, l0[] = {0};
	nx_shape *s1 = sh(f, NX_C64, 2, d1);
	nx_literal *a = nx_literal_new(&f->ev.arena, s1);
	nx_lit_set_c128(a, 0, 42.25, 24.5);
	nx_literal *b = fft_run(f, NX_FFT_FFT, s1, a, 1, l1);
	nx_lit_get_c128(b, 0, &re, &im);
	assert_true(re == 42.25 && im == 24.5);
	b = fft_run(f, NX_FFT_FFT, s1, a, 1, l0);
	nx_lit_get_c128(b, 0, &re, &im);
	assert_true(re == 0 && im == 0);
	/* RFFT length 5 then IRFFT length 5 round-trips a real signal. */
	static const int64_t r5[] = {5}, h3[] = {3};
	double rv[] = {1, -2, 3.5, 0, 7};
	nx_literal *r = lit(f, sh(f, NX_F64, 1, r5), rv);
	nx_literal *sp = fft_run(f, NX_FFT_RFFT, sh(f, NX_C128, 1, h3), r, 1, r5);
	nx_literal *back = fft_run(f, NX_FFT_IRFFT, sh(f, NX_F64, 1, r5), sp, 1, r5);
	expect(back, rv, 5, 1e-12);
	fx_free(f);
}

/* ------------------------------------------------------------- batch norm */

static void test_batch_norm_training(void **state)
{
	(void)state;
	fx *f = fx_new();
	static const int64_t xd[] = {2, 2}, fd[] = {2};
	double xv[] = {1, 10, 3, 30}, sv[] = {2, 1}, ov[] = {0.5, 0};
	nx_shape *ts[3] = {sh(f, NX_F32, 2, xd), sh(f, NX_F32, 1, fd), sh(f, NX_F32, 1, fd)};
	nx_inst *i = inst(f, NX_OP_BATCH_NORM_TRAINING, nx_shape_tuple(nx_module_arena(f->m), 3, ts), 3);
	i->a.feature_index = 1;
	i->a.epsilon = 0;
	nx_literal *ops[3] = {lit(f, ts[0], xv), lit(f, ts[1], sv), lit(f, ts[2], ov)}, *out;
	ok(f, nx_eval_batch_norm(&f->ev, i, ops, &out));
	static const double mean[] = {2, 20}, var[] = {1, 100}, y[] = {-1.5, -1, 2.5, 1};
	expect(out->tuple[0], y, 4, 1e-6);
	expect(out->tuple[1], mean, 2, 1e-6);
	expect(out->tuple[2], var, 2, 1e-6);
	fx_free(f);
}

/* -------------------------------------------------------------------- rng */

static void test_rng_bit_generator(void **state)
{
	(void)state;
	fx *f = fx_new();
	static const int64_t d2[] = {2}, d3[] = {3}, d32[] = {3, 2}, d4[] = {4};
	double s2[] = {0, 0}, s3[] = {0, 0, 0};
	/* three_fry, u32[3,2] from state {0, 0}: split along dim 1. Values are
	 * what XLA's CPU backend returns for this call. */
	nx_shape *ts[2] = {sh(f, NX_U64, 1, d2), sh(f, NX_U32, 2, d32)};
	nx_inst *i = inst(f, NX_OP_RNG_BIT_GENERATOR, nx_shape_tuple(nx_module_arena(f->m), 2, ts), 1);
	i->a.rng_algorithm = NX_RNG_THREE_FRY;
	nx_literal *in = lit(f, ts[0], s2), *out;
	ok(f, nx_eval_rng_bit_generator(&f->ev, i, &in, &out));
	static const uint32_t tf[] = {1797259609u, 2579123966u, 1351547692u,
	                              3235790642u, 1688610540u, 4229293427u};
	for (int k = 0; k < 6; k++)
		assert_int_equal(nx_lit_get_u64(out->tuple[1], k), tf[k]);
	assert_int_equal(nx_lit_get_u64(out->tuple[0], 1), 3);
	/* philox (and rng_default) with counter 0, key 0: the Random123
	 * known-answer block for Philox4x32-10. */
	nx_shape *tp[2] = {sh(f, NX_U64, 1, d3), sh(f, NX_U32, 1, d4)};
	i->shape = nx_shape_tuple(nx_module_arena(f->m), 2, tp);
	i->a.rng_algorithm = NX_RNG_DEFAULT;
	in = lit(f, tp[0], s3);
	ok(f, nx_eval_rng_bit_generator(&f->ev, i, &in, &out));
	static const uint32_t ph[] = {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u};
	for (int k = 0; k < 4; k++)
		assert_int_equal(nx_lit_get_u64(out->tuple[1], k), ph[k]);
	assert_int_equal(nx_lit_get_u64(out->tuple[0], 1), 1);
	fx_free(f);
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
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
