/* tests/unit/test_fuzz_regress.c — replays every input in
 * tests/fuzz/regress/<target>/ (crashes and round-trip mismatches the fuzzers
 * found, since fixed) through the same harness the fuzz targets run. A
 * regression aborts inside the harness with what differs. */
#include "testutil.h"
#include "tests/fuzz/harness.h"

static const char *root(void)
{
	const char *r = getenv("NX_ROOT");
	return r ? r : ".";
}

static int replay(const char *target, int (*fn)(const uint8_t *, size_t))
{
	char dir[4096];
	snprintf(dir, sizeof dir, "%s/tests/fuzz/regress/%s", root(), target);
	char **names;
	int n = tu_list(dir, "", &names);
	for (int i = 0; i < n; i++) {
		char path[8192];
		snprintf(path, sizeof path, "%s/%s", dir, names[i]);
		size_t len = 0;
		char *b = tu_read(path, &len);
		assert_non_null(b);
		print_message("replay %s/%s\n", target, names[i]);
		fn((const uint8_t *)b, len);
		free(b);
	}
	tu_list_free(names, n);
	return n;
}

static int total;

static void regress_text(void **state)
{
	(void)state;
	total += replay("text", nx_fuzz_text);
}

static void regress_proto(void **state)
{
	(void)state;
	total += replay("proto", nx_fuzz_proto);
}

static void regress_neff(void **state)
{
	(void)state;
	total += replay("neff", nx_fuzz_neff);
}

static void regress_literal(void **state)
{
	(void)state;
	total += replay("literal", nx_fuzz_literal);
}

static void regress_npy(void **state)
{
	(void)state;
	total += replay("npy", nx_fuzz_npy);
}

static void regress_defjson(void **state)
{
	(void)state;
	total += replay("defjson", nx_fuzz_defjson);
}

static void regress_hloproto(void **state)
{
	(void)state;
	total += replay("hloproto", nx_fuzz_hloproto);
}

/* Guards against a wrong path silently replaying nothing. */
static void found_inputs(void **state)
{
	(void)state;
	assert_true(total > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(regress_text),    cmocka_unit_test(regress_proto),
		cmocka_unit_test(regress_neff),    cmocka_unit_test(regress_literal),
		cmocka_unit_test(regress_npy),     cmocka_unit_test(regress_defjson),
		cmocka_unit_test(regress_hloproto), cmocka_unit_test(found_inputs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
