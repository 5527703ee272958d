/* tests/unit/test_verify.c — verifier and shape inference: hand-built IR
 * (no reader needed) and HLO text (corpus files and negative cases). */
#include "testutil.h"

#include "ir/verify/shape_infer.h"

/* ------------------------------------------------------ IR builders */

typedef struct tb {
	nx_module *m;
	nx_comp *c;
	nx_arena *a;
} tb;

static tb tb_new(void)
{
	tb b;
	b.m = nx_module_new("t");
	b.m->file = "built.hlo";
	b.a = nx_module_arena(b.m);
	b.c = nx_comp_new(b.m, "main");
	b.c->is_entry = true;
	b.m->entry = b.c;
	return b;
}

/* sh(b, F32, 2, 4, 3) = f32[4,3] */
static nx_shape *sh(tb *b, nx_type t, int rank, ...)
{
	int64_t d[8];
	va_list ap;
	va_start(ap, rank);
	for (int k = 0; k < rank; k++)
		d[k] = va_arg(ap, int);
	va_end(ap);
	return nx_shape_array(b->a, t, rank, d);
}

static nx_inst *par(tb *b, nx_comp *c, int k, nx_shape *s)
{
	nx_inst *p = nx_inst_new(c, NX_OP_PARAMETER, s, NULL, 0, nx_arena_printf(b->a, "p%d", k));
	p->a.parameter_number = k;
	nx_comp_add_param(c, p);
	return p;
}

static nx_inst *op(nx_comp *c, nx_opcode o, nx_shape *s, const char *name, int n, ...)
{
	nx_inst *ops[8];
	va_list ap;
	va_start(ap, n);
	for (int k = 0; k < n; k++)
		ops[k] = va_arg(ap, nx_inst *);
	va_end(ap);
	return nx_inst_new(c, o, s, ops, n, name);
}

static nx_ivec iv(tb *b, int n, ...)
{
	int64_t v[8];
	va_list ap;
	va_start(ap, n);
	for (int k = 0; k < n; k++)
		v[k] = va_arg(ap, int);
	va_end(ap);
	return nx_ivec_dup(b->a, v, n);
}

/* A scalar binary computation: (T, T) -> T. */
static nx_comp *scalar_add(tb *b, const char *name, nx_type t)
{
	nx_comp *c = nx_comp_new(b->m, name);
	nx_inst *x = par(b, c, 0, nx_shape_scalar(b->a, t));
	nx_inst *y = par(b, c, 1, nx_shape_scalar(b->a, t));
	c->root = op(c, NX_OP_ADD, nx_shape_scalar(b->a, t), "sum", 2, x, y);
	return c;
}

/* NULL when the module verifies; else the diagnostic message (malloc'd). */
static char *verify_msg(nx_module *m)
{
	nx_diag d = {0};
	nx_status st = nx_verify_module(m, &d);
	char *r = NULL;
	if (st != NX_OK) {
		assert_non_null(d.msg);
		r = strdup(d.msg);
	}
	nx_diag_clear(&d);
	return r;
}

static void expect_ok(nx_module *m)
{
	char *msg = verify_msg(m);
	if (msg) {
		print_error("unexpected error: %s\n", msg);
		free(msg);
		fail();
	}
	nx_module_free(m);
}

static void expect_err(nx_module *m, const char *want)
{
	char *msg = verify_msg(m);
	if (!msg) {
		print_error("expected an error containing \"%s\"\n", want);
		fail();
	}
	if (!strstr(msg, want)) {
		print_error("message \"%s\" does not contain \"%s\"\n", msg, want);
		free(msg);
		fail();
	}
	free(msg);
	nx_module_free(m);
}

/* ------------------------------------------------ hand-built tests */

static void test_built_elementwise(void **state)
{
	(void)state;
	tb b = tb_new();
	nx_inst *x = par(&b, b.c, 0, sh(&b, NX_F32, 2, 4, 4));
	nx_inst *y = par(&b, b.c, 1, sh(&b, NX_F32, 2, 4, 4));
	nx_inst *s = op(b.c, NX_OP_ADD, sh(&b, NX_F32, 2, 4, 4), "add.3", 2, x, y);
	nx_inst *cmp = op(b.c, NX_OP_COMPARE, sh(&b, NX_PRED, 2, 4, 4), "cmp", 2, s, y);
	cmp->a.direction = NX_CMP_LT;
	nx_inst *f = op(b.c, NX_OP_IS_FINITE, sh(&b, NX_PRED, 2, 4, 4), "fin", 1, s);
	nx_inst *a = op(b.c, NX_OP_AND, sh(&b, NX_PRED, 2, 4, 4), "and", 2, cmp, f);
	nx_inst *cx = op(b.c, NX_OP_COMPLEX, sh(&b, NX_C64, 2, 4, 4), "cx", 2, x, y);
	nx_inst *ab = op(b.c, NX_OP_ABS, sh(&b, NX_F32, 2, 4, 4), "abs", 1, cx);
	b.c->root = op(b.c, NX_OP_SELECT, sh(&b, NX_F32, 2, 4, 4), "sel", 3, a, ab, x);
	expect_ok(b.m);

	b = tb_new();
	x = par(&b, b.c, 0, sh(&b, NX_F32, 2, 4, 4));
	y = par(&b, b.c, 1, sh(&b, NX_F32, 2, 4, 4));
	b.c->root = op(b.c, NX_OP_ADD, sh(&b, NX_F32, 2, 4, 3), "add.3", 2, x, y);
	expect_err(b.m, "instruction 'add.3': shape f32[4,3] does not match the inferred shape "
	                "f32[4,4] of add(f32[4,4], f32[4,4])");
}

static void test_built_infer_api(void **state)
{
	(void)state;
	tb b = tb_new();
	nx_inst *l = par(&b, b.c, 0, sh(&b, NX_BF16, 3, 2, 8, 16));
	nx_inst *r = par(&b, b.c, 1, sh(&b, NX_BF16, 3, 2, 16, 5));
	nx_inst *d = op(b.c, NX_OP_DOT, sh(&b, NX_F32, 3, 2, 8, 5), "dot", 2, l, r);
	d->a.dot.lhs_batch = iv(&b, 1, 0);
	d->a.dot.rhs_batch = iv(&b, 1, 0);
	d->a.dot.lhs_contracting = iv(&b, 1, 2);
	d->a.dot.rhs_contracting = iv(&b, 1, 1);
	b.c->root = d;
	nx_arena a;
	nx_arena_init(&a);
	nx_diag dg = {0};
	nx_shape *s = nx_infer_shape(&a, d, &dg);
	assert_non_null(s);
	assert_string_equal(nx_shape_str(&a, s, false), "f32[2,8,5]");
	d->a.dot.rhs_contracting = iv(&b, 1, 2);
	assert_null(nx_infer_shape(&a, d, &dg));
	assert_non_null(strstr(dg.msg, "dot contracting dimensions differ"));
	assert_string_equal(dg.inst, "dot");
	assert_string_equal(dg.file, "built.hlo");
	nx_diag_clear(&dg);
	nx_arena_free(&a);
	nx_module_free(b.m);
}

static void test_built_reduce_while(void **state)
{
	(void)state;
	tb b = tb_new();
	nx_comp *add = scalar_add(&b, "add", NX_F32);
	nx_inst *x = par(&b, b.c, 0, sh(&b, NX_F32, 3, 2, 3, 4));
	nx_inst *z = op(b.c, NX_OP_CONSTANT, nx_shape_scalar(b.a, NX_F32), "zero", 0);
	z->a.literal = nx_literal_new(b.a, nx_shape_scalar(b.a, NX_F32));
	nx_inst *r = op(b.c, NX_OP_REDUCE, sh(&b, NX_F32, 1, 3), "red", 2, x, z);
	r->a.dimensions = iv(&b, 2, 0, 2);
	nx_inst_set_called(r, &add, 1);
	b.c->root = r;
	expect_ok(b.m);

	/* reducer with the wrong arity */
	b = tb_new();
	nx_comp *neg = nx_comp_new(b.m, "neg");
	nx_inst *q = par(&b, neg, 0, nx_shape_scalar(b.a, NX_F32));
	neg->root = op(neg, NX_OP_NEGATE, nx_shape_scalar(b.a, NX_F32), "n", 1, q);
	x = par(&b, b.c, 0, sh(&b, NX_F32, 1, 4));
	z = op(b.c, NX_OP_CONSTANT, nx_shape_scalar(b.a, NX_F32), "zero", 0);
	z->a.literal = nx_literal_new(b.a, nx_shape_scalar(b.a, NX_F32));
	r = op(b.c, NX_OP_REDUCE, nx_shape_scalar(b.a, NX_F32), "red", 2, x, z);
	r->a.dimensions = iv(&b, 1, 0);
	nx_inst_set_called(r, &neg, 1);
	b.c->root = r;
	expect_err(b.m, "to_apply computation 'neg' takes 1 parameter, reduce needs 2");

	/* while: body returns the wrong shape */
	b = tb_new();
	nx_shape *st = sh(&b, NX_S32, 0);
	nx_comp *cond = nx_comp_new(b.m, "cond");
	q = par(&b, cond, 0, st);
	nx_inst *lim = op(cond, NX_OP_CONSTANT, nx_shape_scalar(b.a, NX_S32), "lim", 0);
	lim->a.literal = nx_literal_new(b.a, nx_shape_scalar(b.a, NX_S32));
	cond->root = op(cond, NX_OP_COMPARE, nx_shape_scalar(b.a, NX_PRED), "lt", 2, q, lim);
	cond->root->a.direction = NX_CMP_LT;
	nx_comp *body = nx_comp_new(b.m, "body");
	q = par(&b, body, 0, st);
	body->root = op(body, NX_OP_CONVERT, nx_shape_scalar(b.a, NX_F32), "cv", 1, q);
	x = par(&b, b.c, 0, st);
	nx_comp *cb[2] = {cond, body};
	nx_inst *w = op(b.c, NX_OP_WHILE, st, "loop", 1, x);
	nx_inst_set_called(w, cb, 2);
	b.c->root = w;
	expect_err(b.m, "body computation 'body' returns f32[], the loop state is s32[]");
}

static void test_built_structure(void **state)
{
	(void)state;
	/* no entry */
	tb b = tb_new();
	b.c->root = par(&b, b.c, 0, sh(&b, NX_F32, 0));
	b.m->entry = NULL;
	expect_err(b.m, "has no entry computation");

	/* no root */
	b = tb_new();
	par(&b, b.c, 0, sh(&b, NX_F32, 0));
	expect_err(b.m, "computation 'main': has no root instruction");

	/* parameter gap */
	b = tb_new();
	nx_inst *p1 = nx_inst_new(b.c, NX_OP_PARAMETER, sh(&b, NX_F32, 0), NULL, 0, "p1");
	p1->a.parameter_number = 1;
	nx_comp_add_param(b.c, p1);
	b.c->root = p1;
	expect_err(b.m, "parameter 0 is missing");

	/* use before definition */
	b = tb_new();
	nx_inst *x = par(&b, b.c, 0, sh(&b, NX_F32, 1, 2));
	nx_inst *n1 = op(b.c, NX_OP_NEGATE, sh(&b, NX_F32, 1, 2), "n1", 1, x);
	nx_inst *n2 = op(b.c, NX_OP_NEGATE, sh(&b, NX_F32, 1, 2), "n2", 1, n1);
	n1->operands[0] = n2;
	b.c->root = n2;
	expect_err(b.m, "instruction 'n1': operand 'n2' is used before it is defined");

	/* operand from another computation */
	b = tb_new();
	nx_comp *o = nx_comp_new(b.m, "other");
	nx_inst *y = par(&b, o, 0, sh(&b, NX_F32, 0));
	o->root = y;
	b.c->root = op(b.c, NX_OP_NEGATE, sh(&b, NX_F32, 0), "n", 1, y);
	expect_err(b.m, "operand 'p0' is not defined in computation 'main'");

	/* recursion */
	b = tb_new();
	nx_comp *f = nx_comp_new(b.m, "f");
	y = par(&b, f, 0, sh(&b, NX_F32, 0));
	nx_inst *cl = op(f, NX_OP_CALL, sh(&b, NX_F32, 0), "again", 1, y);
	nx_inst_set_called(cl, &f, 1);
	f->root = cl;
	x = par(&b, b.c, 0, sh(&b, NX_F32, 0));
	b.c->root = op(b.c, NX_OP_CALL, sh(&b, NX_F32, 0), "c", 1, x);
	nx_inst_set_called(b.c->root, &f, 1);
	expect_err(b.m, "calls computation 'f' recursively");

	/* called computation outside the module */
	b = tb_new();
	tb b2 = tb_new();
	nx_comp *foreign = scalar_add(&b2, "add", NX_F32);
	x = par(&b, b.c, 0, sh(&b, NX_F32, 1, 4));
	nx_inst *z = op(b.c, NX_OP_CONSTANT, nx_shape_scalar(b.a, NX_F32), "zero", 0);
	z->a.literal = nx_literal_new(b.a, nx_shape_scalar(b.a, NX_F32));
	nx_inst *r = op(b.c, NX_OP_REDUCE, nx_shape_scalar(b.a, NX_F32), "red", 2, x, z);
	r->a.dimensions = iv(&b, 1, 0);
	nx_inst_set_called(r, &foreign, 1);
	b.c->root = r;
	expect_err(b.m, "called computation 'add' is not in the module");
	nx_module_free(b2.m);

	/* arity */
	b = tb_new();
	x = par(&b, b.c, 0, sh(&b, NX_F32, 0));
	b.c->root = op(b.c, NX_OP_ADD, sh(&b, NX_F32, 0), "a", 1, x);
	expect_err(b.m, "add takes 2 operands, got 1");
}

static void test_built_alias(void **state)
{
	(void)state;
	tb b = tb_new();
	nx_inst *x = par(&b, b.c, 0, sh(&b, NX_F32, 1, 4));
	nx_inst *n = op(b.c, NX_OP_NEGATE, sh(&b, NX_F32, 1, 4), "n", 1, x);
	nx_inst *ops[1] = {n};
	nx_shape *ts[1] = {sh(&b, NX_F32, 1, 4)};
	b.c->root = nx_inst_new(b.c, NX_OP_TUPLE, nx_shape_tuple(b.a, 1, ts), ops, 1, "t");
	b.m->aliases = nx_arena_alloc(b.a, sizeof(nx_alias));
	b.m->naliases = 1;
	b.m->aliases[0].output_index = iv(&b, 1, 0);
	b.m->aliases[0].param_number = 0;
	nx_module *keep = b.m;
	char *msg = verify_msg(keep);
	assert_null(msg);
	b.m->aliases[0].output_index = iv(&b, 1, 1);
	expect_err(keep, "input_output_alias {1}: the entry result (f32[4]) has no such output");
}

/* ------------------------------------------------------ text tests */

static nx_module *try_parse(const char *text, const char *file)
{
	nx_diag d = {0};
	nx_module *m = nx_read_text(text, strlen(text), file, &d);
	nx_diag_clear(&d);
	return m;
}

static void verify_dir_files(const char *dir, const char *suffix, const char *sub, int *nfiles,
                             int *nbad)
{
	char **names;
	int n = tu_list(dir, suffix, &names);
	for (int k = 0; k < n; k++) {
		char path[4096];
		snprintf(path, sizeof(path), "%s/%s%s", dir, names[k], sub);
		size_t len;
		char *text = tu_read(path, &len);
		if (!text)
			continue;
		nx_diag d = {0};
		nx_module *m = nx_read_text(text, len, path, &d);
		if (!m) {
			char *s = nx_diag_format(&d);
			print_error("reader failed on %s:\n%s", path, s);
			free(s);
			nx_diag_clear(&d);
			free(text);
			tu_list_free(names, n);
			fail();
		}
		if (nx_verify_module(m, &d) != NX_OK) {
			char *s = nx_diag_format(&d);
			print_error("verify failed on %s:\n%s", path, s);
			free(s);
			nx_diag_clear(&d);
			(*nbad)++;
		}
		(*nfiles)++;
		nx_module_free(m);
		free(text);
	}
	tu_list_free(names, n);
}

static void test_corpus_verifies(void **state)
{
	(void)state;
	if (!tu_reader_ready()) {
		print_message("skipped: the HLO text reader (branch reader) is not merged yet\n");
		skip();
	}
	char dir[4096];
	int n = 0, bad = 0;
	snprintf(dir, sizeof(dir), "%s/hlo/torch-neuronx", tu_corpus());
	verify_dir_files(dir, ".hlo", "", &n, &bad);
	int n1 = n;
	snprintf(dir, sizeof(dir), "%s/xla-evaluator", tu_corpus());
	verify_dir_files(dir, "", "/module.hlo", &n, &bad);
	print_message("verified %d torch-neuronx and %d xla-evaluator modules\n", n1, n - n1);
	assert_int_equal(bad, 0);
	assert_true(n1 > 0);
	assert_true(n > n1);
}

/* Valid modules for ops the corpus does not cover; each must verify. */
static const char *const good_cases[] = {
	/* convolution with feature groups, padding, dilation */
	"HloModule m\nENTRY e {\n"
	"  x = f32[2,8,10,10] parameter(0)\n"
	"  k = f32[4,4,3,3] parameter(1)\n"
	"  ROOT c = f32[2,4,5,10] convolution(x, k), window={size=3x3 stride=2x1 pad=1_1x2_2 "
	"rhs_dilate=1x2}, dim_labels=bf01_oi01->bf01, feature_group_count=2\n}\n",
	/* dot with batch dims and preferred type */
	"HloModule m\nENTRY e {\n"
	"  a = bf16[3,4,5] parameter(0)\n  b = bf16[3,5,6] parameter(1)\n"
	"  ROOT d = f32[3,4,6] dot(a, b), lhs_batch_dims={0}, rhs_batch_dims={0}, "
	"lhs_contracting_dims={2}, rhs_contracting_dims={1}\n}\n",
	/* variadic reduce -> tuple */
	"HloModule m\n"
	"mx {\n  a = f32[] parameter(0)\n  b = s32[] parameter(1)\n  c = f32[] parameter(2)\n"
	"  d = s32[] parameter(3)\n  ROOT t = (f32[], s32[]) tuple(a, b)\n}\n"
	"ENTRY e {\n  x = f32[4,5] parameter(0)\n  i = s32[4,5] parameter(1)\n"
	"  z = f32[] constant(0)\n  o = s32[] constant(0)\n"
	"  ROOT r = (f32[5], s32[5]) reduce(x, i, z, o), dimensions={0}, to_apply=mx\n}\n",
	/* reduce-window with base dilation and padding */
	"HloModule m\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
	"  ROOT s = f32[] add(a, b)\n}\n"
	"ENTRY e {\n  x = f32[4,6] parameter(0)\n  z = f32[] constant(0)\n"
	"  ROOT r = f32[3,7] reduce-window(x, z), window={size=2x2 stride=1x1 pad=0_0x1_1 "
	"lhs_dilate=1x1}, to_apply=add\n}\n",
	/* select-and-scatter */
	"HloModule m\nge {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
	"  ROOT c = pred[] compare(a, b), direction=GE\n}\n"
	"add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n"
	"ENTRY e {\n  x = f32[4,6] parameter(0)\n  s = f32[2,3] parameter(1)\n  z = f32[] constant(0)\n"
	"  ROOT r = f32[4,6] select-and-scatter(x, s, z), window={size=2x2 stride=2x2}, "
	"select=ge, scatter=add\n}\n",
	/* gather (embedding lookup) */
	"HloModule m\nENTRY e {\n  t = f32[100,16] parameter(0)\n  i = s32[8,4] parameter(1)\n"
	"  ROOT g = f32[8,4,16] gather(t, i), offset_dims={2}, collapsed_slice_dims={0}, "
	"start_index_map={0}, index_vector_dim=2, slice_sizes={1,16}\n}\n",
	/* scatter */
	"HloModule m\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
	"  ROOT s = f32[] add(a, b)\n}\n"
	"ENTRY e {\n  t = f32[100,16] parameter(0)\n  i = s32[8,1] parameter(1)\n"
	"  u = f32[8,16] parameter(2)\n"
	"  ROOT s = f32[100,16] scatter(t, i, u), update_window_dims={1}, inserted_window_dims={0}, "
	"scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add\n}\n",
	/* variadic sort */
	"HloModule m\nlt {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
	"  c = s32[] parameter(2)\n  d = s32[] parameter(3)\n"
	"  ROOT r = pred[] compare(a, b), direction=LT\n}\n"
	"ENTRY e {\n  x = f32[3,8] parameter(0)\n  i = s32[3,8] iota(), iota_dimension=1\n"
	"  ROOT s = (f32[3,8], s32[3,8]) sort(x, i), dimensions={1}, to_apply=lt\n}\n",
	/* conditional with an s32 index */
	"HloModule m\nb0 {\n  p = f32[2] parameter(0)\n  ROOT n = f32[2] negate(p)\n}\n"
	"b1 {\n  p = s32[] parameter(0)\n  ROOT b = f32[2] broadcast(f32[] constant(1)), dimensions={}\n}\n"
	"ENTRY e {\n  k = s32[] parameter(0)\n  x = f32[2] parameter(1)\n  y = s32[] parameter(2)\n"
	"  ROOT c = f32[2] conditional(k, x, y), branch_computations={b0, b1}\n}\n",
	/* pad with negative and interior padding; slice; concatenate; reverse */
	"HloModule m\nENTRY e {\n  x = f32[4,5] parameter(0)\n  z = f32[] constant(0)\n"
	"  p = f32[4,11] pad(x, z), padding=1_-1x0_2_1\n"
	"  s = f32[2,4] slice(p), slice={[1:4:2], [3:11:2]}\n"
	"  t = f32[2,5] slice(x), slice={[0:2], [0:5]}\n"
	"  c = f32[2,9] concatenate(s, t), dimensions={1}\n"
	"  ROOT r = f32[2,9] reverse(c), dimensions={0,1}\n}\n"
	,
	/* bitcast-convert across widths, real/imag, fft */
	"HloModule m\nENTRY e {\n  x = f32[4] parameter(0)\n"
	"  b = u16[4,2] bitcast-convert(x)\n  f = f32[4] bitcast-convert(b)\n"
	"  r = c64[3] fft(f), fft_type=RFFT, fft_length={4}\n"
	"  i = f32[4] fft(r), fft_type=IRFFT, fft_length={4}\n"
	"  c = c64[3] fft(r), fft_type=IFFT, fft_length={3}\n"
	"  re = f32[3] real(c)\n  im = f32[3] imag(c)\n"
	"  ROOT t = (f32[4], f32[3], f32[3], u16[4,2]) tuple(i, re, im, b)\n}\n",
	/* batch norm, dynamic-(update-)slice, clamp with scalar bounds */
	"HloModule m\nENTRY e {\n  x = f32[2,3,4] parameter(0)\n  s = f32[3] parameter(1)\n"
	"  o = f32[3] parameter(2)\n"
	"  bn = (f32[2,3,4], f32[3], f32[3]) batch-norm-training(x, s, o), epsilon=0.001, "
	"feature_index=1\n"
	"  y = f32[2,3,4] get-tuple-element(bn), index=0\n"
	"  i = s32[] parameter(3)\n"
	"  d = f32[1,2,4] dynamic-slice(y, i, i, i), dynamic_slice_sizes={1,2,4}\n"
	"  u = f32[2,3,4] dynamic-update-slice(y, d, i, i, i)\n"
	"  lo = f32[] constant(0)\n  hi = f32[] constant(1)\n"
	"  ROOT c = f32[2,3,4] clamp(lo, u, hi)\n}\n",
	/* async wrapped form, copy-start/done, rng-bit-generator */
	"HloModule m\nENTRY e {\n  x = f32[4] parameter(0)\n"
	"  s = ((f32[4]), f32[4], u32[]) negate-start(x)\n"
	"  u = ((f32[4]), f32[4], u32[]) negate-update(s)\n"
	"  n = f32[4] negate-done(u)\n"
	"  cs = (f32[4], f32[4], u32[]) copy-start(n)\n  cd = f32[4] copy-done(cs)\n"
	"  st = u64[2] parameter(1)\n"
	"  rb = (u64[2], u32[8]) rng-bit-generator(st), algorithm=rng_philox\n"
	"  ROOT t = (f32[4], (u64[2], u32[8])) tuple(cd, rb)\n}\n",
	/* collectives with replica groups */
	"HloModule m, replica_count=4\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
	"  ROOT s = f32[] add(a, b)\n}\n"
	"ENTRY e {\n  x = f32[8,2] parameter(0)\n"
	"  ag = f32[16,2] all-gather(x), replica_groups={{0,1},{2,3}}, dimensions={0}\n"
	"  ag2 = f32[32,2] all-gather(x), replica_groups={}, dimensions={0}\n"
	"  rs = f32[4,2] reduce-scatter(x), replica_groups={{0,1},{2,3}}, dimensions={0}, "
	"to_apply=add\n"
	"  ar = f32[8,2] all-reduce(x), replica_groups={}, to_apply=add\n"
	"  a2a = f32[8,2] all-to-all(x), replica_groups={{0,1,2,3}}, dimensions={0}\n"
	"  cp = f32[8,2] collective-permute(x), source_target_pairs={{0,1},{1,0}}\n"
	"  ags = (f32[8,2], f32[16,2]) all-gather-start(x), replica_groups={{0,1},{2,3}}, "
	"dimensions={0}\n"
	"  agd = f32[16,2] all-gather-done(ags)\n"
	"  id = u32[] replica-id()\n"
	"  ROOT t = (f32[16,2], f32[32,2], f32[4,2], f32[8,2], f32[8,2], f32[8,2], f32[16,2], u32[]) "
	"tuple(ag, ag2, rs, ar, a2a, cp, agd, id)\n}\n",
	/* generic async with calls=, entry layout, iota, transpose, gte */
	"HloModule m, entry_computation_layout={(f32[4,2]{0,1})->(f32[2,4]{1,0}, s32[4]{0})}\n"
	"f {\n  p = f32[4,2] parameter(0)\n  ROOT t = f32[2,4] transpose(p), dimensions={1,0}\n}\n"
	"ENTRY e {\n  x = f32[4,2]{0,1} parameter(0)\n"
	"  s = ((f32[4,2]), f32[2,4], s32[]) async-start(x), calls=f\n"
	"  d = f32[2,4] async-done(s)\n  i = s32[4] iota(), iota_dimension=0\n"
	"  ROOT t = (f32[2,4], s32[4]) tuple(d, i)\n}\n",
	/* custom-calls of Neuron, cholesky, triangular-solve, map */
	"HloModule m\nmul {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
	"  ROOT s = f32[] multiply(a, b)\n}\n"
	"ENTRY e {\n  x = f32[4,4] parameter(0)\n"
	"  g = f32[4,4] custom-call(x), custom_call_target=\"AwsNeuronGelu\"\n"
	"  gb = f32[4,4] custom-call(g, x), custom_call_target=\"AwsNeuronGeluBackward\"\n"
	"  ch = f32[4,4] cholesky(gb), lower=true\n"
	"  b = f32[4,2] parameter(1)\n"
	"  ts = f32[4,2] triangular-solve(ch, b), left_side=true, lower=true, "
	"transpose_a=NO_TRANSPOSE\n"
	"  ROOT m = f32[4,2] map(ts, b), dimensions={0,1}, to_apply=mul\n}\n",
};

typedef struct bad_case {
	const char *text;
	const char *msg; /* substring of the diagnostic */
} bad_case;

#define ADD_COMP "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n"

static const bad_case bad_cases[] = {
	{"HloModule m\nENTRY e {\n  x = f32[4,4] parameter(0)\n"
	 "  ROOT a = f32[4,3] add(x, x)\n}\n",
	 "instruction 'a': shape f32[4,3] does not match the inferred shape f32[4,4] of "
	 "add(f32[4,4], f32[4,4])"},
	{"HloModule m\nENTRY e {\n  x = f32[4] parameter(0)\n  y = s32[4] parameter(1)\n"
	 "  ROOT a = f32[4] multiply(x, y)\n}\n",
	 "operand types differ: f32 and s32"},
	{"HloModule m\nENTRY e {\n  x = f32[4] parameter(0)\n"
	 "  ROOT c = f32[4] compare(x, x), direction=LT\n}\n",
	 "does not match the inferred shape pred[4]"},
	{"HloModule m\nENTRY e {\n  x = f32[3] parameter(0)\n"
	 "  ROOT b = f32[2,4] broadcast(x), dimensions={1}\n}\n",
	 "broadcast maps operand dimension 0 (size 3) to result dimension 1 (size 4)"},
	{"HloModule m\nENTRY e {\n  x = f32[3] parameter(0)\n"
	 "  ROOT b = f32[2,3] broadcast(x), dimensions={2}\n}\n",
	 "broadcast dimension 2 out of range for rank-2 result"},
	{"HloModule m\nENTRY e {\n  x = f32[2,3] parameter(0)\n  y = f32[4,3] parameter(1)\n"
	 "  ROOT d = f32[2,4] dot(x, y), lhs_contracting_dims={0}, rhs_contracting_dims={1}\n}\n",
	 "dot contracting dimensions differ: lhs dimension 0 is 2, rhs dimension 1 is 3"},
	{"HloModule m\nENTRY e {\n  x = f32[2,3] parameter(0)\n  y = f32[3,4] parameter(1)\n"
	 "  ROOT d = f32[2,4] dot(x, y), lhs_contracting_dims={2}, rhs_contracting_dims={0}\n}\n",
	 "lhs contracting dimension 2 out of range for rank-2 operand"},
	{"HloModule m\n" ADD_COMP "ENTRY e {\n  x = f32[4,5] parameter(0)\n  z = s32[] constant(0)\n"
	 "  ROOT r = s32[5] reduce(x, z), dimensions={0}, to_apply=add\n}\n",
	 "init value 0 has type s32, input is f32[4,5]"},
	{"HloModule m\n" ADD_COMP "ENTRY e {\n  x = f32[4,5] parameter(0)\n  z = f32[] constant(0)\n"
	 "  ROOT r = f32[5] reduce(x, z), dimensions={2}, to_apply=add\n}\n",
	 "reduce dimension 2 out of range for rank-2 operand"},
	{"HloModule m\nneg {\n  a = f32[] parameter(0)\n  ROOT n = f32[] negate(a)\n}\n"
	 "ENTRY e {\n  x = f32[4] parameter(0)\n  z = f32[] constant(0)\n"
	 "  ROOT r = f32[] reduce(x, z), dimensions={0}, to_apply=neg\n}\n",
	 "to_apply computation 'neg' takes 1 parameter, reduce needs 2"},
	{"HloModule m\nENTRY e {\n  t = f32[100,16] parameter(0)\n  i = s32[8,2] parameter(1)\n"
	 "  ROOT g = f32[8,16] gather(t, i), offset_dims={1}, collapsed_slice_dims={0}, "
	 "start_index_map={0}, index_vector_dim=1, slice_sizes={1,16}\n}\n",
	 "start_index_map has 1 entries, the index vector has 2"},
	{"HloModule m\nENTRY e {\n  t = f32[100,16] parameter(0)\n  i = s32[8] parameter(1)\n"
	 "  ROOT g = f32[8,16] gather(t, i), offset_dims={1}, collapsed_slice_dims={0}, "
	 "start_index_map={0}, index_vector_dim=1, slice_sizes={2,16}\n}\n",
	 "collapsed/batching dimension 0 must have slice size <= 1"},
	{"HloModule m\n" ADD_COMP "ENTRY e {\n  t = f32[100,16] parameter(0)\n  i = s32[8,1] parameter(1)\n"
	 "  u = f32[9,16] parameter(2)\n"
	 "  ROOT s = f32[100,16] scatter(t, i, u), update_window_dims={1}, inserted_window_dims={0}, "
	 "scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add\n}\n",
	 "updates scatter dimension 0 (9) differs from indices dimension 0 (8)"},
	{"HloModule m\nENTRY e {\n  x = f32[2,3,4] parameter(0)\n"
	 "  ROOT t = f32[4,3,2] transpose(x), dimensions={2,1,1}\n}\n",
	 "transpose dimensions are not a permutation of 0..2"},
	{"HloModule m\nENTRY e {\n  x = f32[4,5] parameter(0)\n"
	 "  ROOT s = f32[2,6] slice(x), slice={[0:2], [0:6]}\n}\n",
	 "slice [0:6] out of bounds for dimension 1 of size 5"},
	{"HloModule m\nENTRY e {\n  x = f32[4,5] parameter(0)\n  y = f32[4] parameter(1)\n"
	 "  ROOT c = f32[4,6] concatenate(x, y), dimensions={1}\n}\n",
	 "concatenate operand 1 has rank 1, operand 0 has rank 2"},
	{"HloModule m\nENTRY e {\n  x = f32[4,5] parameter(0)\n"
	 "  ROOT r = f32[3,7] reshape(x)\n}\n",
	 "reshape from f32[4,5] to f32[3,7] changes the element count (20 vs 21)"},
	{"HloModule m\nENTRY e {\n  x = f32[4,5] parameter(0)\n  z = f32[] constant(0)\n"
	 "  ROOT p = f32[4,5] pad(x, z), padding=-5_0x0_0\n}\n",
	 "padding makes dimension 0 negative (-1)"},
	{"HloModule m\ncond {\n  p = s32[] parameter(0)\n  ROOT c = pred[] compare(p, p), direction=LT\n}\n"
	 "body {\n  p = s32[] parameter(0)\n  ROOT c = f32[] convert(p)\n}\n"
	 "ENTRY e {\n  x = s32[] parameter(0)\n  ROOT w = s32[] while(x), condition=cond, body=body\n}\n",
	 "body computation 'body' returns f32[], the loop state is s32[]"},
	{"HloModule m\ncond {\n  p = s32[] parameter(0)\n  ROOT c = s32[] add(p, p)\n}\n"
	 "body {\n  p = s32[] parameter(0)\n  ROOT c = s32[] add(p, p)\n}\n"
	 "ENTRY e {\n  x = s32[] parameter(0)\n  ROOT w = s32[] while(x), condition=cond, body=body\n}\n",
	 "condition computation 'cond' returns s32[], expected pred[]"},
	{"HloModule m\nENTRY e {\n  x = f32[] parameter(0)\n  t = (f32[], f32[]) tuple(x, x)\n"
	 "  ROOT g = f32[] get-tuple-element(t), index=2\n}\n",
	 "tuple index 2 out of range for 2-element tuple (f32[], f32[])"},
	{"HloModule m, input_output_alias={ {1}: (0, {}, must-alias) }\nENTRY e {\n"
	 "  x = f32[4] parameter(0)\n  ROOT t = (f32[4]) tuple(x)\n}\n",
	 "input_output_alias {1}: the entry result (f32[4]) has no such output"},
	{"HloModule m, input_output_alias={ {0}: (0, {}, must-alias) }\nENTRY e {\n"
	 "  x = f32[4] parameter(0)\n  y = f32[8] parameter(1)\n  ROOT t = (f32[8]) tuple(y)\n}\n",
	 "input_output_alias {0}: output f32[8] and parameter 0 f32[4] differ"},
	{"HloModule m\nENTRY e {\n  x = f32[2,8,10,10] parameter(0)\n  k = f32[4,3,3,3] parameter(1)\n"
	 "  ROOT c = f32[2,4,8,8] convolution(x, k), window={size=3x3}, dim_labels=bf01_oi01->bf01\n}\n",
	 "input feature dimension 8 / feature_group_count 1 != kernel input feature dimension 3"},
	{"HloModule m\nENTRY e {\n  x = f32[4,6] parameter(0)\n  s = f32[2,2] parameter(1)\n"
	 "  ROOT o = f32[4,6] select-and-scatter(x, s, f32[] constant(0)), window={size=2x2 "
	 "stride=2x2}, select=ge, scatter=add\n}\n"
	 "ge {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
	 "  ROOT c = pred[] compare(a, b), direction=GE\n}\n" ADD_COMP,
	 "source f32[2,2] does not match the window output of operand f32[4,6]"},
	{"HloModule m\nlt {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
	 "  ROOT r = pred[] compare(a, b), direction=LT\n}\n"
	 "ENTRY e {\n  x = f32[3,8] parameter(0)\n  i = s32[3,8] parameter(1)\n"
	 "  ROOT s = (f32[3,8], s32[3,8]) sort(x, i), dimensions={1}, to_apply=lt\n}\n",
	 "comparator computation 'lt' takes 2 parameters, sort needs 4"},
	{"HloModule m, replica_count=4\nENTRY e {\n  x = f32[8,2] parameter(0)\n"
	 "  ROOT ag = f32[8,2] all-gather(x), replica_groups={{0,1},{2,3}}, dimensions={0}\n}\n",
	 "does not match the inferred shape f32[16,2] of all-gather(f32[8,2])"},
	{"HloModule m\n" ADD_COMP "ENTRY e {\n  x = f32[7,2] parameter(0)\n"
	 "  ROOT rs = f32[3,2] reduce-scatter(x), replica_groups={{0,1}}, dimensions={0}, to_apply=add\n}\n",
	 "reduce-scatter dimension 0 (7) is not divisible by the group size 2"},
	{"HloModule m\nb0 {\n  p = f32[4] parameter(0)\n  ROOT n = f32[4] negate(p)\n}\n"
	 "ENTRY e {\n  x = f32[4] parameter(0)\n  k = pred[] parameter(1)\n"
	 "  ROOT c = f32[4] conditional(k, x, x, x), branch_computations={b0, b0, b0}\n}\n",
	 "conditional with a pred selector needs 2 branches, got 3"},
	{"HloModule m\nENTRY e {\n  x = f32[4] parameter(0)\n"
	 "  ROOT f = c64[4] fft(x), fft_type=FFT, fft_length={4}\n}\n",
	 "FFT needs a complex operand, got f32[4]"},
	{"HloModule m\nENTRY e {\n  x = f32[4] parameter(0)\n"
	 "  ROOT b = u8[4] bitcast-convert(x)\n}\n",
	 "does not match the inferred shape u8[4,4]"},
	{"HloModule m\nENTRY e {\n  x = f32[4,4] parameter(0)\n"
	 "  ROOT g = f32[4,8] custom-call(x), custom_call_target=\"AwsNeuronGelu\"\n}\n",
	 "does not match the inferred shape f32[4,4] of custom-call(f32[4,4])"},
	{"HloModule m\nENTRY e {\n  x = f32[4] parameter(0)\n"
	 "  ROOT c = (f32[4], f32[4]) copy-start(x)\n}\n",
	 "does not match the inferred shape (f32[4], f32[4], u32[])"},
	{"HloModule m\nENTRY e {\n  x = f32[4] parameter(0)\n"
	 "  s = ((f32[4]), f32[4], u32[]) negate-start(x)\n"
	 "  ROOT n = f32[5] negate-done(s)\n}\n",
	 "instruction 'n': shape f32[5] does not match the inferred shape f32[4]"},
	{"HloModule m\nENTRY e {\n  x = f32[4] parameter(0)\n"
	 "  ROOT d = f32[2] dynamic-slice(x, x), dynamic_slice_sizes={2}\n}\n",
	 "start index operand 1 must be an integer scalar, got f32[4]"},
	{"HloModule m\nENTRY e {\n  x = f32[4] parameter(0)\n  y = pred[4] parameter(1)\n"
	 "  ROOT c = f32[4] clamp(y, x, x)\n}\n",
	 "clamp bound 0 has type pred[4], operand is f32"},
	{"HloModule m\nENTRY e {\n  x = f32[4] parameter(0)\n"
	 "  ROOT c = f32[4] shift-left(x, x)\n}\n",
	 "shift-left needs integer operands"},
	{"HloModule m\nENTRY e {\n  x = f32[4,4] parameter(0)\n"
	 "  ROOT s = s32[] get-dimension-size(x), dimensions={2}\n}\n",
	 "dimension 2 out of range for rank-2 operand"},
	{"HloModule m, entry_computation_layout={(f32[4]{0})->f32[4]{0}}\nENTRY e {\n"
	 "  x = f32[5] parameter(0)\n  ROOT n = f32[5] negate(x)\n}\n",
	 "parameter 0 has shape f32[5], entry_computation_layout says f32[4]"},
	{"HloModule m, entry_computation_layout={(f32[4]{0})->f32[8]{0}}\nENTRY e {\n"
	 "  x = f32[4] parameter(0)\n  ROOT n = f32[4] negate(x)\n}\n",
	 "result f32[4] does not match entry_computation_layout f32[8]"},
	{"HloModule m\n" ADD_COMP "ENTRY e {\n  x = f32[4,6] parameter(0)\n  z = f32[] constant(0)\n"
	 "  ROOT r = f32[3,5] reduce-window(x, z), window={size=2x2x2}, to_apply=add\n}\n",
	 "window has 3 dimensions for rank-2 operand"},
	{"HloModule m\nENTRY e {\n  x = f32[6,2] parameter(0)\n"
	 "  ROOT a = f32[6,2] all-to-all(x), replica_groups={{0,1,2,3}}, dimensions={0}\n}\n",
	 "all-to-all split dimension 0 (6) is not divisible by the group size 4"},
	{"HloModule m\nENTRY e {\n  x = f32[4,4] parameter(0)\n  u = f32[2,5] parameter(1)\n"
	 "  i = s32[] parameter(2)\n"
	 "  ROOT d = f32[4,4] dynamic-update-slice(x, u, i, i)\n}\n",
	 "update dimension 1 (5) exceeds operand dimension (4)"},
	{"HloModule m\nf {\n  p = f32[4] parameter(0)\n  ROOT n = f32[4] negate(p)\n}\n"
	 "ENTRY e {\n  x = f32[4] parameter(0)\n"
	 "  s = ((f32[4]), f32[3], s32[]) async-start(x), calls=f\n"
	 "  ROOT d = f32[3] async-done(s)\n}\n",
	 "does not match the inferred shape ((f32[4]), f32[4], s32[])"},
	{"HloModule m\nf {\n  p = f32[4] parameter(0)\n  ROOT n = f32[4] negate(p)\n}\n"
	 "ENTRY e {\n  x = f32[4] parameter(0)\n"
	 "  ROOT c = f32[4] call(x, x), to_apply=f\n}\n",
	 "to_apply computation 'f' takes 1 parameter, call needs 2"},
};

/* Parses text and verifies it: want NULL = must verify, else the message
 * must contain want. Reports and returns false on mismatch. */
static bool check_text(const char *text, const char *want)
{
	nx_diag d = {0};
	nx_module *m = nx_read_text(text, strlen(text), "case.hlo", &d);
	if (!m) {
		print_error("reader rejected the case:\n%s\n%s\n", text, d.msg ? d.msg : "");
		nx_diag_clear(&d);
		return false;
	}
	nx_status st = nx_verify_module(m, &d);
	bool ok;
	if (!want)
		ok = st == NX_OK;
	else
		ok = st == NX_ERR_INPUT && d.msg && strstr(d.msg, want);
	if (!ok)
		print_error("case:\n%s\nexpected %s%s%s, got: %s\n", text, want ? "an error containing \"" : "success",
		            want ? want : "", want ? "\"" : "", st == NX_OK ? "success" : d.msg);
	nx_diag_clear(&d);
	nx_module_free(m);
	return ok;
}

static void test_text_good(void **state)
{
	(void)state;
	if (!tu_reader_ready()) {
		print_message("skipped: the HLO text reader (branch reader) is not merged yet\n");
		skip();
	}
	int bad = 0;
	for (size_t k = 0; k < sizeof(good_cases) / sizeof(good_cases[0]); k++)
		bad += !check_text(good_cases[k], NULL);
	assert_int_equal(bad, 0);
}

static void test_text_bad(void **state)
{
	(void)state;
	if (!tu_reader_ready()) {
		print_message("skipped: the HLO text reader (branch reader) is not merged yet\n");
		skip();
	}
	int bad = 0;
	size_t n = sizeof(bad_cases) / sizeof(bad_cases[0]);
	for (size_t k = 0; k < n; k++)
		bad += !check_text(bad_cases[k].text, bad_cases[k].msg);
	print_message("%zu negative cases, %d failed\n", n, bad);
	assert_int_equal(bad, 0);
}

/* Diagnostics carry file:line:col of the offending instruction. */
static void test_text_location(void **state)
{
	(void)state;
	if (!tu_reader_ready())
		skip();
	const char *t = "HloModule m\nENTRY e {\n  x = f32[4] parameter(0)\n"
	                "  ROOT a = f32[5] negate(x)\n}\n";
	nx_module *m = try_parse(t, "loc.hlo");
	assert_non_null(m);
	nx_diag d = {0};
	assert_int_equal(nx_verify_module(m, &d), NX_ERR_INPUT);
	assert_string_equal(d.file, "loc.hlo");
	assert_int_equal(d.line, 4);
	assert_true(d.col > 0);
	assert_string_equal(d.inst, "a");
	nx_diag_clear(&d);
	nx_module_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_built_elementwise),
		cmocka_unit_test(test_built_infer_api),
		cmocka_unit_test(test_built_reduce_while),
		cmocka_unit_test(test_built_structure),
		cmocka_unit_test(test_built_alias),
		cmocka_unit_test(test_corpus_verifies),
		cmocka_unit_test(test_text_good),
		cmocka_unit_test(test_text_bad),
		cmocka_unit_test(test_text_location),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
