/* tests/unit/test_fingerprint.c — the module fingerprint ignores names,
 * metadata and the order of independent definitions, and changes with
 * anything semantic. Modules are built by hand from one recipe with a
 * variant switch; corpus files are checked when the text reader exists. */
#include "testutil.h"

enum variant {
	V_BASE,
	V_RENAMED,      /* every instruction / computation / module renamed */
	V_NO_METADATA,  /* metadata dropped */
	V_REORDERED,    /* independent instructions written in another order */
	V_FA_ORDER,     /* frontend attributes in another order */
	/* semantic changes: */
	V_CONST,        /* constant value */
	V_DIM,          /* a dimension */
	V_LAYOUT,       /* a layout */
	V_ATTR,         /* reduce dimensions */
	V_OPERAND_ORDER,
	V_ALIAS,
	V_SHARDING,
	V_FRONTEND,
	V_OPCODE,
	V_COUNT
};

static const char *nm(enum variant v, const char *base)
{
	static char buf[8][64];
	static int k;
	if (v != V_RENAMED)
		return base;
	k = (k + 1) % 8;
	snprintf(buf[k], sizeof buf[k], "renamed_%s", base);
	return buf[k];
}

static nx_module *build(enum variant v)
{
	nx_module *m = nx_module_new(nm(v, "mod"));
	nx_arena *a = nx_module_arena(m);
	nx_comp *add = nx_comp_new(m, nm(v, "add"));
	nx_inst *x = nx_inst_new(add, NX_OP_PARAMETER, nx_shape_scalar(a, NX_F32), NULL, 0, nm(v, "x"));
	x->a.parameter_number = 0;
	nx_comp_add_param(add, x);
	nx_inst *y = nx_inst_new(add, NX_OP_PARAMETER, nx_shape_scalar(a, NX_F32), NULL, 0, nm(v, "y"));
	y->a.parameter_number = 1;
	nx_comp_add_param(add, y);
	nx_inst *xy[2] = {x, y};
	add->root = nx_inst_new(add, NX_OP_ADD, nx_shape_scalar(a, NX_F32), xy, 2, nm(v, "s"));

	nx_comp *e = nx_comp_new(m, nm(v, "main"));
	e->is_entry = true;
	m->entry = e;
	int64_t d[2] = {4, v == V_DIM ? 5 : 8};
	nx_shape *ps = nx_shape_array(a, NX_F32, 2, d);
	if (v == V_LAYOUT) {
		ps->minor_to_major[0] = 0;
		ps->minor_to_major[1] = 1;
	}
	nx_inst *p = nx_inst_new(e, NX_OP_PARAMETER, ps, NULL, 0, nm(v, "p0"));
	nx_comp_add_param(e, p);
	if (v != V_NO_METADATA) {
		p->a.nmetadata = 1;
		p->a.metadata = nx_arena_alloc(a, sizeof(nx_kv));
		p->a.metadata[0] = (nx_kv){"op_name", "xla__device_data"};
	}
	p->a.nfrontend_attributes = 2;
	p->a.frontend_attributes = nx_arena_alloc(a, 2 * sizeof(nx_kv));
	p->a.frontend_attributes[0] = (nx_kv){"neff_input_names", v == V_FRONTEND ? "input1" : "input0"};
	p->a.frontend_attributes[1] = (nx_kv){"z", "1"};
	if (v == V_FA_ORDER) {
		nx_kv t = p->a.frontend_attributes[0];
		p->a.frontend_attributes[0] = p->a.frontend_attributes[1];
		p->a.frontend_attributes[1] = t;
	}
	if (v == V_SHARDING)
		p->a.sharding = "replicated";

	/* Two independent constants; V_REORDERED writes them the other way. */
	nx_inst *k1 = NULL, *k2 = NULL;
	for (int pass = 0; pass < 2; pass++) {
		bool first = (pass == 0) != (v == V_REORDERED);
		nx_inst *k = nx_inst_new(e, NX_OP_CONSTANT, nx_shape_scalar(a, NX_F32), NULL, 0,
		                         nm(v, first ? "zero" : "two"));
		k->a.literal = nx_literal_new(a, k->shape);
		float val = first ? 0.0f : (v == V_CONST ? 3.0f : 2.0f);
		memcpy(k->a.literal->data, &val, 4);
		if (first)
			k1 = k;
		else
			k2 = k;
	}
	nx_inst *ops[2] = {p, k1};
	nx_inst *r = nx_inst_new(e, NX_OP_REDUCE, nx_shape_array(a, NX_F32, 1, d), ops, 2, nm(v, "r"));
	r->a.has_dimensions = true;
	int64_t rd = v == V_ATTR ? 0 : 1;
	r->a.dimensions = nx_ivec_dup(a, &rd, 1);
	nx_inst_set_called(r, &add, 1);
	if (v != V_NO_METADATA) {
		r->a.nmetadata = 2;
		r->a.metadata = nx_arena_alloc(a, 2 * sizeof(nx_kv));
		r->a.metadata[0] = (nx_kv){"op_type", "aten__sum"};
		r->a.metadata[1] = (nx_kv){"source_line", "42"};
	}
	nx_inst *b = nx_inst_new(e, NX_OP_BROADCAST, r->shape, &k2, 1, nm(v, "b"));
	b->a.has_dimensions = true;
	nx_inst *rb[2] = {r, b};
	if (v == V_OPERAND_ORDER) {
		rb[0] = b;
		rb[1] = r;
	}
	e->root = nx_inst_new(e, v == V_OPCODE ? NX_OP_SUBTRACT : NX_OP_MULTIPLY, r->shape, rb, 2,
	                      nm(v, "out"));
	m->naliases = 1;
	m->aliases = nx_arena_alloc(a, sizeof(nx_alias));
	m->aliases[0] = (nx_alias){{NULL, 0}, 0, {NULL, 0}, v == V_ALIAS, true};
	return m;
}

static void fp(enum variant v, char out[33])
{
	nx_module *m = build(v);
	nx_fingerprint(m, out);
	nx_module_free(m);
}

static void test_format_and_stability(void **state)
{
	(void)state;
	char a[33], b[33];
	fp(V_BASE, a);
	fp(V_BASE, b);
	assert_string_equal(a, b);
	assert_int_equal(strlen(a), 32);
	for (int i = 0; i < 32; i++)
		assert_true((a[i] >= '0' && a[i] <= '9') || (a[i] >= 'a' && a[i] <= 'f'));
	assert_string_not_equal(a, "00000000000000000000000000000000");
}

static void test_invariant(void **state)
{
	(void)state;
	char base[33], other[33];
	fp(V_BASE, base);
	enum variant same[] = {V_RENAMED, V_NO_METADATA, V_REORDERED, V_FA_ORDER};
	for (size_t i = 0; i < sizeof same / sizeof *same; i++) {
		fp(same[i], other);
		if (strcmp(base, other) != 0)
			fail_msg("variant %d changed the fingerprint", (int)same[i]);
	}
}

static void test_sensitive(void **state)
{
	(void)state;
	char seen[V_COUNT][33];
	fp(V_BASE, seen[0]);
	int n = 1;
	for (int v = V_CONST; v < V_COUNT; v++) {
		fp((enum variant)v, seen[n]);
		for (int j = 0; j < n; j++)
			if (strcmp(seen[j], seen[n]) == 0)
				fail_msg("variant %d has the fingerprint of another module", v);
		n++;
	}
}

/* The canonical text itself: ids, not names; no metadata. */
static void test_canonical_text(void **state)
{
	(void)state;
	nx_module *m = build(V_BASE);
	nx_print_opts o = {.canonical = true};
	char *t = nx_print_module(m, &o);
	assert_null(strstr(t, "metadata"));
	assert_null(strstr(t, "%main"));
	assert_non_null(strstr(t, "HloModule m,"));
	assert_non_null(strstr(t, "to_apply=%c0"));
	free(t);
	nx_module_free(m);
}

static nx_module *read_path(const char *path)
{
	size_t len;
	char *text = tu_read(path, &len);
	if (!text)
		return NULL;
	nx_diag d = {0};
	nx_module *m = nx_read_text(text, len, path, &d);
	if (!m) {
		char *s = nx_diag_format(&d);
		print_error("%s", s);
		free(s);
	}
	nx_diag_clear(&d);
	free(text);
	return m;
}

/* Over the corpus: two reads agree; stripping metadata and renaming every
 * instruction keeps the fingerprint; changing one constant, one dimension
 * or one attribute changes it. */
static void test_corpus(void **state)
{
	(void)state;
	if (!tu_reader_ready())
		skip(); /* the HLO text reader (branch reader) is not merged yet */
	char dir[1024];
	snprintf(dir, sizeof dir, "%s/hlo/torch-neuronx", tu_corpus());
	char **files;
	int n = tu_list(dir, ".hlo", &files);
	if (n == 0)
		skip();
	for (int i = 0; i < n; i++) {
		char path[2048];
		snprintf(path, sizeof path, "%s/%s", dir, files[i]);
		nx_module *a = read_path(path), *b = read_path(path);
		if (!a || !b)
			fail_msg("cannot read %s", path);
		char fa[33], fb[33];
		nx_fingerprint(a, fa);
		nx_fingerprint(b, fb);
		if (strcmp(fa, fb))
			fail_msg("%s: two reads differ", files[i]);
		bool did_const = false, did_dim = false, did_attr = false;
		for (int c = 0; c < b->ncomps; c++) {
			nx_comp *comp = b->comps[c];
			for (int k = 0; k < comp->ninsts; k++) {
				nx_inst *in = comp->insts[k];
				in->a.nmetadata = 0;
				in->name = nx_arena_printf(nx_module_arena(b), "n%d_%d", c, k);
			}
		}
		nx_fingerprint(b, fb);
		if (strcmp(fa, fb))
			fail_msg("%s: metadata/names changed the fingerprint", files[i]);
		for (int c = 0; c < b->ncomps; c++) {
			nx_comp *comp = b->comps[c];
			for (int k = 0; k < comp->ninsts; k++) {
				nx_inst *in = comp->insts[k];
				char f2[33];
				if (!did_const && in->op == NX_OP_CONSTANT && in->a.literal &&
				    in->a.literal->nbytes) {
					unsigned char *p = in->a.literal->data;
					p[0] ^= 1;
					nx_fingerprint(b, f2);
					p[0] ^= 1;
					assert_string_not_equal(f2, fa);
					did_const = true;
				}
				if (!did_dim && in->shape->type != NX_TUPLE && in->shape->rank > 0 &&
				    in->op != NX_OP_PARAMETER && in->op != NX_OP_CONSTANT) {
					in->shape->dims[0]++;
					nx_fingerprint(b, f2);
					in->shape->dims[0]--;
					assert_string_not_equal(f2, fa);
					did_dim = true;
				}
				if (!did_attr && in->a.has_dimensions && in->a.dimensions.n) {
					in->a.dimensions.v[0]++;
					nx_fingerprint(b, f2);
					in->a.dimensions.v[0]--;
					assert_string_not_equal(f2, fa);
					did_attr = true;
				}
			}
		}
		nx_module_free(a);
		nx_module_free(b);
	}
	tu_list_free(files, n);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_format_and_stability),
		cmocka_unit_test(test_invariant),
		cmocka_unit_test(test_sensitive),
		cmocka_unit_test(test_canonical_text),
		cmocka_unit_test(test_corpus),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
