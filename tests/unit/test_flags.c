/* tests/unit/test_flags.c — neuronx-cc flag parsing and the canonical form. */
#include "testutil.h"

#include "compiler/flags.h"
#include "nx_build_id.h"

/* Parses a space-separated command line (no quoting) plus env. */
static nx_status parse(const char *line, const char *env, nx_compile_flags *f, nx_diag *d)
{
	char **w;
	int n = nx_flags_split(line, &w, d);
	assert_true(n >= 0);
	nx_status st = nx_flags_parse(n, w, env, f, d);
	for (int i = 0; i < n; i++)
		free(w[i]);
	free(w);
	return st;
}

static void parse_ok(const char *line, const char *env, nx_compile_flags *f)
{
	nx_diag d = {0};
	if (parse(line, env, f, &d) != NX_OK) {
		print_error("'%s': %s\n", line, d.msg);
		nx_diag_clear(&d);
		fail();
	}
}

static void parse_err(const char *line, const char *env, const char *msg_part)
{
	nx_compile_flags f;
	nx_diag d = {0};
	assert_int_equal(parse(line, env, &f, &d), NX_ERR_INPUT);
	if (!strstr(d.msg, msg_part)) {
		print_error("'%s': message '%s' lacks '%s'\n", line, d.msg, msg_part);
		fail();
	}
	nx_diag_clear(&d);
	nx_flags_free(&f);
}

static void test_defaults(void **state)
{
	(void)state;
	nx_compile_flags f;
	parse_ok("model.hlo", NULL, &f);
	assert_int_equal(f.n_inputs, 1);
	assert_string_equal(f.inputs[0], "model.hlo");
	assert_int_equal(f.target, NX_TARGET_TRN1);
	assert_int_equal(f.optlevel, 2);
	assert_int_equal(f.auto_cast, NX_AUTOCAST_NONE);
	assert_int_equal(f.verbose, NX_LOG_WARNING);
	assert_true(f.mixed_precision_accumulation);
	assert_int_equal(nx_flags_lnc(&f), 1);
	nx_flags_free(&f);
}

static void test_all_spellings(void **state)
{
	(void)state;
	nx_compile_flags f;
	parse_ok("m.hlo --framework XLA --target trn2 --model-type=transformer --auto-cast all "
	         "--auto-cast-type=fp8_e5m2 -O3 --lnc 1 --enable-saturate-infinity --output o.neff "
	         "--verbose=debug --logfile l.txt --workdir w --cache-dir s3://b/p --no-cache --retry-failed "
	         "--dump-after=simplify,fusion --dump-after dce --dump-dir d --verify-each --disable-pass cse "
	         "--time-passes --enable-fast-loading-neuron-binaries --enable-fast-context-switch "
	         "--distribution-strategy llm-training --pipeline=compile --internal-foo=bar "
	         "--disable-mixed-precision-accumulation",
	         NULL, &f);
	assert_int_equal(f.target, NX_TARGET_TRN2);
	assert_int_equal(f.model_type, NX_MODEL_TRANSFORMER);
	assert_int_equal(f.auto_cast, NX_AUTOCAST_ALL);
	assert_int_equal(f.auto_cast_type, NX_CASTTYPE_FP8_E5M2);
	assert_int_equal(f.optlevel, 3);
	assert_int_equal(nx_flags_lnc(&f), 1);
	assert_true(f.saturate_infinity && f.no_cache && f.retry_failed && f.verify_each && f.time_passes);
	assert_false(f.mixed_precision_accumulation);
	assert_string_equal(f.output, "o.neff");
	assert_string_equal(f.logfile, "l.txt");
	assert_string_equal(f.workdir, "w");
	assert_string_equal(f.cache_dir, "s3://b/p");
	assert_string_equal(f.dump_dir, "d");
	assert_int_equal(f.verbose, NX_LOG_DEBUG);
	assert_int_equal(f.n_dump_after, 3);
	assert_string_equal(f.dump_after[1], "fusion");
	assert_int_equal(f.n_disable_pass, 1);
	assert_int_equal(f.n_accepted_no_effect, 5);
	assert_string_equal(f.accepted_no_effect[2], "--distribution-strategy=llm-training");
	assert_string_equal(f.accepted_no_effect[4], "--internal-foo=bar");
	nx_flags_free(&f);
}

static void test_optlevel_forms(void **state)
{
	(void)state;
	const char *forms[] = {"--optlevel 1", "--optlevel O1", "--optlevel=1", "--optlevel=O1", "-O1", "-O 1",
	                       "-O=1", "--enable-experimental-O1"};
	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		nx_compile_flags f;
		parse_ok(forms[i], NULL, &f);
		assert_int_equal(f.optlevel, 1);
		nx_flags_free(&f);
	}
	parse_err("--optlevel 4", NULL, "--optlevel");
	parse_err("-O0", NULL, "-O");
	parse_err("--optlevel", NULL, "needs a value");
}

static void test_lnc_forms(void **state)
{
	(void)state;
	const char *forms[] = {"-lnc 1", "-lnc=1", "--lnc 1", "--logical-nc-config=1"};
	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		nx_compile_flags f;
		parse_ok(forms[i], NULL, &f);
		assert_int_equal(f.lnc, 1);
		nx_flags_free(&f);
	}
	nx_compile_flags f;
	parse_ok("--target trn2", NULL, &f);
	assert_int_equal(nx_flags_lnc(&f), 2);
	nx_flags_free(&f);
	parse_err("-lnc 3", NULL, "-lnc");
}

static void test_errors(void **state)
{
	(void)state;
	parse_err("--frobnicate", NULL, "unknown flag '--frobnicate'");
	parse_err("--frobnicate=3", NULL, "unknown flag '--frobnicate'");
	parse_err("--target trn9", NULL, "trn1|trn1n|inf2|trn2");
	parse_err("--auto-cast fast", NULL, "--auto-cast");
	parse_err("--auto-cast-type int8", NULL, "--auto-cast-type");
	parse_err("--model-type cnn", NULL, "--model-type");
	parse_err("--framework TENSORFLOW", NULL, "XLA");
	parse_err("--verbose loud", NULL, "--verbose");
	parse_err("--no-cache=maybe", NULL, "takes no value");
	parse_err("--strict-flags", "--bogus", "unknown flag '--bogus' (from NEURON_CC_FLAGS; --strict-flags)");
	parse_err("--cache-dri /x", NULL, "NXCC_EARG001: unknown flag '--cache-dri' (did you mean '--cache-dir'?)");
	parse_err("--retry_failed_compilaton", NULL, "(did you mean '--retry_failed_compilation'?)");
	parse_err("--lnc 2 --target trn1", NULL, "NXCC_EARG003: --lnc 2 is not supported on --target trn1");
	parse_err("--lnc 2", NULL, "NXCC_EARG003");
	parse_err("--auto-cast matmal", NULL, "NXCC_EARG002: invalid value 'matmal' for --auto-cast");
	parse_err("", "model.hlo", "non-flag word");
	parse_err("", "--target 'trn1", "unbalanced");
}

/* The flags real pipelines put in NEURON_CC_FLAGS (issue 13): accepted,
 * wrapper flags consumed the way the torch-neuronx wrapper does. */
static void test_pipeline_flags(void **state)
{
	(void)state;
	nx_compile_flags f;
	parse_ok("m.hlo", "--no_cache --log_level=INFO --compile_workdir=/tmp/w --execute-repetition=1 "
	         "--pipeline compile SaveTemps --model-type=cnn-training --auto-cast=matmul --enable-dge", &f);
	assert_true(f.no_cache);
	assert_int_equal(f.verbose, NX_LOG_INFO);
	assert_string_equal(f.workdir, "/tmp/w");
	assert_int_equal(f.model_type, NX_MODEL_GENERIC);
	assert_int_equal(f.auto_cast, NX_AUTOCAST_MATMULT);
	assert_int_equal(f.n_inputs, 1); /* SaveTemps went to --pipeline, not to the inputs */
	assert_int_equal(f.n_unknown_env, 0);
	assert_int_equal(f.n_accepted_no_effect, 3);
	nx_flags_free(&f);
	/* --pipeline's list stops at a file name */
	parse_ok("--pipeline compile SaveTemps model.hlo", NULL, &f);
	assert_int_equal(f.n_inputs, 1);
	assert_string_equal(f.inputs[0], "model.hlo");
	nx_flags_free(&f);
	/* unknown flags from NEURON_CC_FLAGS are recorded (and ignored), with their values */
	parse_ok("m.hlo", "--frobnicate 3 --target inf2 --zap=1", &f);
	assert_int_equal(f.n_unknown_env, 2);
	assert_string_equal(f.unknown_env[0], "--frobnicate");
	assert_string_equal(f.unknown_env[1], "--zap");
	assert_int_equal(f.target, NX_TARGET_INF2);
	nx_flags_free(&f);
	parse_ok("--lnc 2 --target trn2", NULL, &f);
	nx_flags_free(&f);
}

static void test_env_merge(void **state)
{
	(void)state;
	nx_compile_flags f;
	parse_ok("--target inf2", "--target trn2 --auto-cast matmult --logfile \"my log.txt\" -O1", &f);
	assert_int_equal(f.target, NX_TARGET_INF2); /* command line wins */
	assert_int_equal(f.auto_cast, NX_AUTOCAST_MATMULT);
	assert_int_equal(f.optlevel, 1);
	assert_string_equal(f.logfile, "my log.txt");
	nx_flags_free(&f);
	parse_ok("", "--cache_dir=/tmp/x --retry_failed_compilation", &f);
	assert_string_equal(f.cache_dir, "/tmp/x");
	assert_true(f.retry_failed);
	nx_flags_free(&f);
}

static void test_split(void **state)
{
	(void)state;
	char **w;
	nx_diag d = {0};
	int n = nx_flags_split("  a 'b c' \"d \\\"e\\\"\" f\\ g h'i'j ", &w, &d);
	assert_int_equal(n, 5);
	assert_string_equal(w[0], "a");
	assert_string_equal(w[1], "b c");
	assert_string_equal(w[2], "d \"e\"");
	assert_string_equal(w[3], "f g");
	assert_string_equal(w[4], "hij");
	assert_null(w[5]);
	for (int i = 0; i < n; i++)
		free(w[i]);
	free(w);
}

static char *canon(const char *line, const char *env)
{
	nx_compile_flags f;
	parse_ok(line, env, &f);
	char *j = nx_flags_canonical_json(&f);
	nx_flags_free(&f);
	return j;
}

static void same(const char *a, const char *b)
{
	char *x = canon(a, NULL), *y = canon(b, NULL);
	if (strcmp(x, y) != 0) {
		print_error("'%s' -> %s\n'%s' -> %s\n", a, x, b, y);
		fail();
	}
	free(x);
	free(y);
}

static void differ(const char *a, const char *b)
{
	char *x = canon(a, NULL), *y = canon(b, NULL);
	if (strcmp(x, y) == 0) {
		print_error("'%s' and '%s' both -> %s\n", a, b, x);
		fail();
	}
	free(x);
	free(y);
}

static void test_canonical(void **state)
{
	(void)state;
	char *j = canon("--target trn1 -O2", NULL);
	assert_string_equal(j, "{\"compiler\":\"" NX_VERSION "+" NX_BUILD_ID "\",\"framework\":\"XLA\",\"target\":\"trn1\",\"model_type\":\"generic\","
	                       "\"auto_cast\":\"none\",\"auto_cast_type\":null,\"optlevel\":2,\"lnc\":1,"
	                       "\"saturate_infinity\":false,\"mixed_precision_accumulation\":true,"
	                       "\"disable_pass\":[]}");
	free(j);
	same("", "--target trn1 --optlevel 2 --framework xla");
	same("a.hlo --output x.neff --verbose info --logfile l", "b.hlo");
	same("--enable-fast-context-switch --dump-after all --verify-each --no-cache", "");
	same("--auto-cast-type fp16", ""); /* no auto-cast: the type is moot */
	differ("--target trn1n", "--target trn1"); /* the .neff names its target */
	same("--target trn2 --enable-saturate-infinity", "--target trn2");
	same("--target trn2", "--target trn2 -lnc 2");
	same("--disable-pass b,a --disable-pass a", "--disable-pass=a --disable-pass=b");
	/* a name nxcc has no pass for disables nothing: same program, same key */
	same("--disable-pass cse,no-such-pass", "--disable-pass cse");
	same("--disable-pass NeuronLoopFusion", "");
	differ("", "-O1");
	differ("", "--target inf2");
	differ("--auto-cast all", "--auto-cast all --auto-cast-type fp16");
	differ("", "--model-type transformer");
	differ("", "--enable-saturate-infinity");
	differ("", "--disable-mixed-precision-accumulation");
	differ("", "--disable-pass cse");
	nx_compile_flags f;
	parse_ok("-O3", NULL, &f);
	char h[17];
	nx_flags_hash(&f, h);
	assert_int_equal(strlen(h), 16);
	char *c = nx_flags_canonical_json(&f);
	char full[65];
	nx_sha256_hex(c, strlen(c), full);
	assert_memory_equal(h, full, 16);
	free(c);
	nx_flags_free(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),   cmocka_unit_test(test_all_spellings),
		cmocka_unit_test(test_optlevel_forms), cmocka_unit_test(test_lnc_forms),
		cmocka_unit_test(test_errors),     cmocka_unit_test(test_env_merge),
		cmocka_unit_test(test_pipeline_flags),
		cmocka_unit_test(test_split),      cmocka_unit_test(test_canonical),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
