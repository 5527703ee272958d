/* tests/unit/test_npy.c — .npy write/read round trip for every array type. */
#include "testutil.h"

#include "ir/eval/eval.h"
#include "ir/npy.h"

static void test_roundtrip(void **state)
{
	(void)state;
	nx_type types[] = {NX_PRED, NX_S8, NX_S16, NX_S32, NX_S64, NX_U8, NX_U16, NX_U32, NX_U64, NX_F16,
	                   NX_BF16, NX_F32, NX_F64, NX_C64, NX_C128, NX_F8E4M3FN, NX_F8E5M2};
	for (size_t k = 0; k < sizeof(types) / sizeof(types[0]); k++) {
		nx_arena a;
		nx_arena_init(&a);
		int64_t dims[3] = {2, 3, 4};
		nx_shape *s = nx_shape_array(&a, types[k], 3, dims);
		nx_literal *l = nx_random_literal(&a, s, 42, (int64_t)k);
		size_t len;
		void *buf = nx_npy_write(l, &len);
		assert_non_null(buf);
		assert_int_equal(len % 64, (size_t)l->nbytes % 64); /* header is 64-aligned */
		nx_diag d = {0};
		nx_literal *r = nx_npy_read(&a, buf, len, types[k], &d);
		assert_non_null(r);
		assert_true(nx_shape_compatible(r->shape, s));
		assert_memory_equal(r->data, l->data, (size_t)l->nbytes);
		free(buf);
		nx_arena_free(&a);
	}
}

static void test_scalar_empty_and_errors(void **state)
{
	(void)state;
	nx_arena a;
	nx_arena_init(&a);
	nx_diag d = {0};
	nx_literal *sc = nx_literal_new(&a, nx_shape_scalar(&a, NX_F32));
	nx_lit_set_f64(sc, 0, 2.5);
	size_t len;
	void *buf = nx_npy_write(sc, &len);
	assert_non_null(strstr((char *)buf + 10, "'shape': ()"));
	nx_literal *r = nx_npy_read(&a, buf, len, NX_TYPE_INVALID, &d);
	assert_non_null(r);
	assert_int_equal(r->shape->rank, 0);
	assert_true(nx_lit_get_f64(r, 0) == 2.5);
	/* a float file is not accepted for an s32 parameter */
	assert_null(nx_npy_read(&a, buf, len, NX_S32, &d));
	assert_non_null(strstr(d.msg, "expected s32"));
	free(buf);
	int64_t z[2] = {0, 3};
	nx_literal *e = nx_literal_new(&a, nx_shape_array(&a, NX_S32, 2, z));
	buf = nx_npy_write(e, &len);
	r = nx_npy_read(&a, buf, len, NX_S32, &d);
	assert_non_null(r);
	assert_int_equal(r->shape->dims[0], 0);
	/* truncated data */
	assert_null(nx_npy_read(&a, buf, 20, NX_S32, &d));
	free(buf);
	assert_null(nx_npy_read(&a, "garbage!!!!!", 12, NX_S32, &d));
	nx_diag_clear(&d);
	nx_arena_free(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_scalar_empty_and_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
