/* tests/unit/test_ir_core.c — arena, type and opcode tables, shapes, modules. */
#include "testutil.h"
#include "ir/map.h"

static void test_arena(void **state)
{
	(void)state;
	nx_arena a;
	nx_arena_init(&a);
	char *s = nx_arena_strdup(&a, "hello");
	assert_string_equal(s, "hello");
	void *big = nx_arena_alloc(&a, 1 << 20);
	assert_non_null(big);
	assert_int_equal(((unsigned char *)big)[12345], 0);
	assert_int_equal((uintptr_t)big % 16, 0);
	char *p = nx_arena_printf(&a, "%s.%d", "add", 7);
	assert_string_equal(p, "add.7");
	int64_t v[3] = {1, 2, 3};
	int64_t *g = nx_arena_grow(&a, v, 3, 6, sizeof(int64_t));
	assert_int_equal(g[2], 3);
	assert_int_equal(g[5], 0);
	nx_arena_free(&a);
}

static void test_tables(void **state)
{
	(void)state;
	assert_int_equal(nx_opcode_from_name("add", 3), NX_OP_ADD);
	assert_int_equal(nx_opcode_from_name("count-leading-zeros", 19), NX_OP_CLZ);
	assert_int_equal(nx_opcode_from_name("opt-barrier", 11), NX_OP_OPT_BARRIER);
	assert_int_equal(nx_opcode_from_name("addx", 4), NX_OP_COUNT);
	for (int op = 0; op < NX_OP_COUNT; op++) {
		const char *n = nx_opcode_name((nx_opcode)op);
		assert_int_equal(nx_opcode_from_name(n, strlen(n)), op);
	}
	assert_int_equal(nx_type_from_name("bf16", 4), NX_BF16);
	assert_int_equal(nx_type_from_name("f8e4m3fn", 8), NX_F8E4M3FN);
	assert_int_equal(nx_type_from_proto(16), NX_BF16);
	assert_int_equal(nx_type_proto(NX_F32), 11);
	assert_int_equal(nx_type_bytes(NX_C128), 16);
	for (int t = 1; t < NX_TYPE_COUNT; t++)
		assert_int_equal(nx_type_from_proto(nx_type_proto((nx_type)t)), t);
}

static void test_shapes(void **state)
{
	(void)state;
	nx_arena a;
	nx_arena_init(&a);
	int64_t d[2] = {2, 3};
	nx_shape *s = nx_shape_array(&a, NX_F32, 2, d);
	assert_int_equal(nx_shape_elems(s), 6);
	assert_int_equal(nx_shape_bytes(s), 24);
	assert_string_equal(nx_shape_str(&a, s, true), "f32[2,3]{1,0}");
	assert_string_equal(nx_shape_str(&a, s, false), "f32[2,3]");
	nx_shape *t = nx_shape_copy(&a, s);
	t->minor_to_major[0] = 0;
	t->minor_to_major[1] = 1;
	assert_true(nx_shape_compatible(s, t));
	assert_false(nx_shape_equal(s, t));
	nx_shape *el[2] = {s, nx_shape_scalar(&a, NX_PRED)};
	nx_shape *tup = nx_shape_tuple(&a, 2, el);
	assert_string_equal(nx_shape_str(&a, tup, true), "(f32[2,3]{1,0}, pred[])");
	int64_t idx = 1;
	assert_ptr_equal(nx_shape_subshape(tup, &idx, 1), el[1]);
	int64_t huge[3] = {INT64_MAX / 2, 4, 4};
	assert_int_equal(nx_shape_elems(nx_shape_array(&a, NX_F32, 3, huge)), -1);
	nx_arena_free(&a);
}

static void test_module(void **state)
{
	(void)state;
	nx_module *m = nx_module_new("m");
	nx_comp *c = nx_comp_new(m, "main");
	nx_shape *s = nx_shape_scalar(&m->arena, NX_F32);
	nx_inst *p = nx_inst_new(c, NX_OP_PARAMETER, s, NULL, 0, "p");
	nx_comp_add_param(c, p);
	nx_inst *ops[2] = {p, p};
	nx_inst *add = nx_inst_new(c, NX_OP_ADD, s, ops, 2, "add");
	c->root = add;
	assert_ptr_equal(nx_comp_find_inst(c, "add"), add);
	assert_ptr_equal(nx_module_find_comp(m, "main"), c);
	nx_inst *neg = nx_inst_new(c, NX_OP_NEGATE, s, &p, 1, "neg");
	nx_comp_replace_uses(c, p, neg);
	assert_ptr_equal(add->operands[1], neg);
	const char *u = nx_module_unique_name(m, "add");
	assert_null(nx_comp_find_inst(c, u));
	/* a user name that looks generated is skipped */
	char want[32];
	snprintf(want, sizeof want, "neg.%lld", (long long)m->next_id);
	nx_inst_new(c, NX_OP_NEGATE, s, &p, 1, want);
	const char *v = nx_module_unique_name(m, "neg");
	assert_string_not_equal(v, want);
	assert_null(nx_comp_find_inst(c, v));
	nx_module_free(m);
}

/* ir/map.h: the shared pointer map, string set and name generator. */
static void test_maps(void **state)
{
	(void)state;
	static int keys[5000];
	nx_ptrmap m = {0};
	assert_int_equal(nx_ptrmap_get(&m, &keys[0], -7), -7);
	for (int i = 0; i < 5000; i++) /* grows from empty */
		nx_ptrmap_put(&m, &keys[i], i);
	for (int i = 0; i < 5000; i += 2)
		nx_ptrmap_del(&m, &keys[i]);
	assert_int_equal(m.n, 2500);
	for (int i = 0; i < 5000; i++)
		assert_int_equal(nx_ptrmap_get(&m, &keys[i], -1), i % 2 ? i : -1);
	nx_ptrmap_put(&m, &keys[1], 42);
	assert_int_equal(nx_ptrmap_get(&m, &keys[1], -1), 42);
	nx_ptrmap_free(&m);
	nx_ptrmap_init(&m, 3);
	nx_ptrmap_put(&m, &keys[3], 3);
	assert_int_equal(nx_ptrmap_get(&m, &keys[3], -1), 3);
	nx_ptrmap_free(&m);

	nx_arena a;
	nx_arena_init(&a);
	nx_strmap s = {0};
	assert_false(nx_strmap_find(&s, "x", 1, NULL));
	assert_true(nx_strmap_add(&s, "fusion.0", 8, 10, NULL));
	assert_true(nx_strmap_add(&s, "fusion.1", 8, 11, NULL));
	assert_true(nx_strmap_add(&s, "x_and_more", 1, 12, NULL)); /* key "x": no NUL needed */
	intptr_t old = 0;
	assert_false(nx_strmap_add(&s, "fusion.1", 8, 99, &old));
	assert_int_equal(old, 11);
	assert_int_equal(nx_strmap_get(&s, "x", -1), 12);
	int64_t k = 0;
	assert_string_equal(nx_fresh_name(&s, &a, "fusion", -1, &k, false), "fusion.2");
	assert_int_equal(k, 3);
	assert_string_equal(nx_fresh_name(&s, &a, "param", 7, &k, false), "param_7.3");
	assert_string_equal(nx_fresh_name(&s, &a, "y", -1, &k, true), "y");
	assert_string_equal(nx_fresh_name(&s, &a, "x", -1, &k, true), "x.4");
	assert_true(nx_strmap_find(&s, "y", 1, NULL) && nx_strmap_find(&s, "x.4", 3, NULL) &&
	            nx_strmap_find(&s, "param_7.3", 9, NULL));
	static char names[3000][16];
	for (int i = 0; i < 3000; i++) { /* grows, keeps every entry */
		snprintf(names[i], sizeof names[i], "n%d", i);
		assert_true(nx_strmap_add(&s, names[i], strlen(names[i]), i, NULL));
	}
	for (int i = 0; i < 3000; i++)
		assert_int_equal(nx_strmap_get(&s, names[i], -1), i);
	size_t live = 0;
	for (size_t i = 0; i < s.cap; i++)
		live += nx_strmap_at(&s, i) != NULL;
	assert_int_equal(live, s.n);
	nx_strmap_clear(&s); /* O(1): every entry gone */
	assert_int_equal(nx_strmap_get(&s, "n7", -1), -1);
	assert_false(nx_strmap_find(&s, "fusion.0", 8, NULL));
	assert_true(nx_strmap_add(&s, "n7", 2, 5, NULL));
	assert_int_equal(nx_strmap_get(&s, "n7", -1), 5);
	nx_strmap_free(&s);
	nx_arena_free(&a);
	/* the one custom-call axis parser */
	int64_t ax = 99;
	assert_true(nx_custom_call_axis_parse("3", &ax) && ax == 3);
	assert_true(nx_custom_call_axis_parse("\"-1\"", &ax) && ax == -1);
	assert_true(nx_custom_call_axis_parse(" \"2\" ", &ax) && ax == 2);
	assert_false(nx_custom_call_axis_parse("3junk", &ax));
	assert_false(nx_custom_call_axis_parse("", &ax));
	assert_false(nx_custom_call_axis_parse(NULL, &ax));
}

static void test_diag(void **state)
{
	(void)state;
	nx_diag d = {0};
	nx_diag_set(&d, NX_ERR_INPUT, "m.hlo", 3, 5, "bad %s", "thing");
	const char *line = "  ROOT a = f32[4] add(p0, p9)";
	nx_diag_set_src(&d, line, strlen(line));
	char *s = nx_diag_format(&d);
	assert_string_equal(s, "m.hlo:3:5: error: bad thing\n    ROOT a = f32[4] add(p0, p9)\n      ^\n");
	free(s);
	nx_diag_clear(&d);
}

static void test_sha256(void **state)
{
	(void)state;
	char hex[65];
	nx_sha256_hex("abc", 3, hex);
	assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_arena),  cmocka_unit_test(test_tables),
		cmocka_unit_test(test_shapes), cmocka_unit_test(test_module),
		cmocka_unit_test(test_diag), cmocka_unit_test(test_sha256), cmocka_unit_test(test_maps),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
