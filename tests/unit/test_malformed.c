/* tests/unit/test_malformed.c — every tests/malformed/<name>.hlo starts with
 * "// ERROR: <line>:<col>: <message>"; the reader (which must skip that
 * comment itself) has to report exactly that. */
#include "testutil.h"

static const char *dir(void)
{
	const char *root = getenv("NX_ROOT");
	static char buf[4096];
	snprintf(buf, sizeof buf, "%s/tests/malformed", root ? root : ".");
	return buf;
}

static void test_malformed_files(void **state)
{
	(void)state;
	char **names;
	int n = tu_list(dir(), ".hlo", &names);
	assert_true(n >= 30);
	int failures = 0;
	for (int k = 0; k < n; k++) {
		char path[4200];
		snprintf(path, sizeof path, "%s/%s", dir(), names[k]);
		size_t len = 0;
		char *text = tu_read(path, &len);
		assert_non_null(text);
		int line = 0, col = 0, off = 0;
		assert_int_equal(sscanf(text, "// ERROR: %d:%d: %n", &line, &col, &off), 2);
		const char *msg = text + off;
		size_t ml = strcspn(msg, "\n");
		nx_diag d = {0};
		nx_module *m = nx_read_text(text, len, names[k], &d);
		if (m) {
			print_error("%s: parsed without error\n", names[k]);
			failures++;
			nx_module_free(m);
		} else if (d.status != NX_ERR_INPUT || d.line != line || d.col != col ||
		           strlen(d.msg) != ml || strncmp(d.msg, msg, ml) != 0 || !d.src_line ||
		           !d.file || strcmp(d.file, names[k]) != 0) {
			print_error("%s: expected %d:%d: %.*s\n  got %d:%d: %s\n", names[k], line, col,
			            (int)ml, msg, d.line, d.col, d.msg ? d.msg : "(null)");
			failures++;
		}
		nx_diag_clear(&d);
		free(text);
	}
	tu_list_free(names, n);
	assert_int_equal(failures, 0);
}

/* Every prefix of a valid module must fail cleanly (never crash or read
 * past len); the buffer is copied exactly so ASan sees overruns. */
static void test_truncations(void **state)
{
	(void)state;
	const char *src = "HloModule m, entry_computation_layout={(f32[2]{0})->f32[2]{0}}\n\n"
	                  "add {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n"
	                  "  ROOT s = f32[] add(x, y)\n}\n\n"
	                  "ENTRY main {\n  p = f32[2]{0} parameter(0), metadata={op_name=\"a\\\"b\" source_line=3}\n"
	                  "  c = f32[2] constant({1, -inf})\n"
	                  "  r = f32[] reduce(p, f32[] constant(0)), dimensions={0}, to_apply=%add\n"
	                  "  ROOT t = f32[2] add(c, f32[2]{0} %p), sharding={devices=[2]0,1}\n}\n";
	size_t n = strlen(src);
	for (size_t k = 0; k < n; k++) {
		char *buf = malloc(k ? k : 1);
		memcpy(buf, src, k);
		nx_diag d = {0};
		nx_module *m = nx_read_text(buf, k, "t.hlo", &d);
		if (m) {
			/* a prefix is a complete module only right after a computation */
			assert_true(k > 0 && buf[k - 1] == '}');
			nx_module_free(m);
		} else {
			assert_int_equal(d.status, NX_ERR_INPUT);
			assert_true(d.line >= 1 && d.col >= 1);
		}
		nx_diag_clear(&d);
		free(buf);
	}
	nx_diag d = {0};
	nx_module *m = nx_read_text(src, n, "t.hlo", &d);
	assert_non_null(m);
	nx_module_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_malformed_files),
		cmocka_unit_test(test_truncations),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
