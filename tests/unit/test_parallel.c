/* tests/unit/test_parallel.c — nxcc parallel-compile's planning: which files
 * of an XLA dump are graphs, proto over text of one module, one graph per
 * cache key, and a shard split every machine computes the same way. */
#include "testutil.h"

#include "compiler/flags.h"
#include "compiler/parallel.h"

#include <sys/stat.h>
#include <unistd.h>

static const char *mod_a = "HloModule a\nENTRY e {\n  p = f32[4] parameter(0)\n  ROOT n = f32[4] negate(p)\n}\n";
/* the same graph as mod_a, written differently (names, spacing) */
static const char *mod_a2 = "HloModule other_name\n\nENTRY main {\n  x = f32[4]{0} parameter(0)\n  ROOT y = f32[4]{0} negate(x)\n}\n";
static const char *mod_b = "HloModule b\nENTRY e {\n  p = f32[4] parameter(0)\n  ROOT n = f32[4] exponential(p)\n}\n";

static void classify(void **state)
{
	(void)state;
	static const struct {
		const char *name;
		nx_pc_kind kind;
	} cases[] = {
		/* plain files as frameworks and users name them */
		{"model.hlo", NX_PC_TEXT},
		{"model.hlo.txt", NX_PC_TEXT},
		{"model.hlo_module.pb", NX_PC_PROTO},
		{"graph.pb", NX_PC_PROTO},
		{"notes.txt", NX_PC_SKIP},
		{"model.neff", NX_PC_SKIP},
		{".hidden.hlo", NX_PC_SKIP},
		{"model.hlo_snapshot.pb", NX_PC_SKIP},
		{"model.after_optimizations.hlo", NX_PC_SKIP},
		/* XLA's own dump names: only the module as the framework handed it over */
		{"module_0001.SyncTensorsGraph.5.before_optimizations.txt", NX_PC_TEXT},
		{"module_0001.SyncTensorsGraph.5.before_optimizations.hlo.pb", NX_PC_PROTO},
		{"1700000000123.module_0042.jit_step.before_optimizations.txt", NX_PC_TEXT},
		{"module_0001.SyncTensorsGraph.5.after_optimizations.txt", NX_PC_SKIP},
		{"module_0001.SyncTensorsGraph.5.after_optimizations.hlo.pb", NX_PC_SKIP},
		{"module_0001.SyncTensorsGraph.5.after_optimizations-buffer-assignment.txt", NX_PC_SKIP},
		{"module_0001.SyncTensorsGraph.5.0003.algsimp.after_fusion.txt", NX_PC_SKIP},
		{"module_0001.SyncTensorsGraph.5.ir-no-opt.ll", NX_PC_SKIP},
		{"module_0001.SyncTensorsGraph.5.before_optimizations.hlo.pb.gz", NX_PC_SKIP},
		{"module_0001.SyncTensorsGraph.5.before_optimizations.dot", NX_PC_SKIP},
		{"module_0001.SyncTensorsGraph.5.before_optimizations.html", NX_PC_SKIP},
		{"module_0001.SyncTensorsGraph.5.hlo_snapshot.pb", NX_PC_SKIP},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		nx_pc_kind k = nx_pc_classify(cases[i].name);
		if (k != cases[i].kind)
			fail_msg("%s: classified %d, expected %d", cases[i].name, (int)k, (int)cases[i].kind);
	}
}

static char tmpdir[256];

static void put(const char *rel, const void *data, size_t len)
{
	char p[512];
	snprintf(p, sizeof p, "%s/%s", tmpdir, rel);
	FILE *f = fopen(p, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	fclose(f);
}

static void put_text(const char *rel, const char *text) { put(rel, text, strlen(text)); }

static void put_proto(const char *rel, const char *text)
{
	nx_module *m = tu_parse(text);
	nx_diag d = {0};
	size_t len = 0;
	void *pb = nx_write_proto(m, &len, &d);
	assert_non_null(pb);
	put(rel, pb, len);
	free(pb);
	nx_module_free(m);
}

static int setup(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof tmpdir, "%s/nxcc-test-parallel-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(tmpdir))
		return -1;
	char p[512];
	snprintf(p, sizeof p, "%s/sub", tmpdir);
	mkdir(p, 0755);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

static const char *base(const char *p)
{
	const char *b = strrchr(p, '/');
	return b ? b + 1 : p;
}

static void free_files(char **v, int n)
{
	for (int i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static void collect_dump(void **state)
{
	(void)state;
	/* one module dumped as text and proto: the proto is kept */
	put_text("module_0001.g.before_optimizations.txt", mod_a);
	put_proto("module_0001.g.before_optimizations.hlo.pb", mod_a);
	/* text only: kept */
	put_text("module_0002.h.before_optimizations.txt", mod_b);
	/* a later stage of the same module, a pass dump and noise: skipped */
	put_text("module_0001.g.after_optimizations.txt", mod_a);
	put_text("module_0001.g.0001.dce.after_x.txt", mod_a);
	put_text("README", "not a graph");
	/* a subdirectory is scanned */
	put_text("sub/extra.hlo", mod_b);
	char **files = NULL;
	int n = 0;
	nx_diag d = {0};
	assert_int_equal(nx_pc_collect(tmpdir, &files, &n, &d), NX_OK);
	assert_int_equal(n, 3);
	assert_string_equal(base(files[0]), "module_0001.g.before_optimizations.hlo.pb");
	assert_string_equal(base(files[1]), "module_0002.h.before_optimizations.txt");
	assert_string_equal(base(files[2]), "extra.hlo");
	free_files(files, n);

	/* a file named on the command line is taken whatever its name */
	char p[512];
	snprintf(p, sizeof p, "%s/README", tmpdir);
	files = NULL;
	n = 0;
	assert_int_equal(nx_pc_collect(p, &files, &n, &d), NX_OK);
	assert_int_equal(n, 1);
	free_files(files, n);

	/* a path that does not exist is an error, not an empty list */
	snprintf(p, sizeof p, "%s/missing", tmpdir);
	files = NULL;
	n = 0;
	assert_int_not_equal(nx_pc_collect(p, &files, &n, &d), NX_OK);
	nx_diag_clear(&d);
	free_files(files, n);
}

static void dedup_by_key(void **state)
{
	(void)state;
	put_text("d1.hlo", mod_a);
	put_text("d2.hlo", mod_a2);   /* same graph, other text */
	put_proto("d3.pb", mod_a);    /* same graph as a proto */
	put_text("d4.hlo", mod_b);    /* another graph */
	put_text("d5.hlo", "HloModule broken\nENTRY e {\n"); /* unreadable: kept, fails later */
	put_text("d6.hlo", "HloModule broken\nENTRY e {\n"); /* unreadable files are not keyed: both kept */
	char *files[6];
	for (int i = 0; i < 6; i++) {
		files[i] = malloc(600);
		snprintf(files[i], 600, "%s/d%d.%s", tmpdir, i + 1, i == 2 ? "pb" : "hlo");
	}
	nx_compile_flags f;
	nx_diag d = {0};
	assert_int_equal(nx_flags_parse(0, NULL, NULL, &f, &d), NX_OK);
	bool keep[6];
	int dups, other;
	int m = nx_pc_select(files, 6, &f, 0, 1, keep, &dups, &other);
	assert_int_equal(m, 4);
	assert_int_equal(dups, 2);
	assert_int_equal(other, 0);
	assert_true(keep[0]);  /* the first file of a key wins */
	assert_false(keep[1]);
	assert_false(keep[2]);
	assert_true(keep[3]);
	assert_true(keep[4]);
	assert_true(keep[5]);

	/* the flags are part of the key: -O1 and -O2 are different graphs to
	 * compile, but the de-duplication within one run is the same */
	nx_compile_flags f1;
	char *o1[] = {"-O1"};
	assert_int_equal(nx_flags_parse(1, o1, NULL, &f1, &d), NX_OK);
	assert_int_equal(nx_pc_select(files, 6, &f1, 0, 1, keep, &dups, &other), 4);

	/* shards: every kept graph is in exactly one shard, whatever the count */
	for (int sn = 1; sn <= 4; sn++) {
		int owners[6] = {0}, total = 0, total_dups = 0;
		for (int si = 0; si < sn; si++) {
			total += nx_pc_select(files, 6, &f, si, sn, keep, &dups, &other);
			total_dups += dups;
			for (int i = 0; i < 6; i++)
				owners[i] += keep[i];
			/* other_shard counts files, duplicates included */
			int mine = 0;
			for (int i = 0; i < 6; i++)
				mine += keep[i];
			assert_int_equal(mine + dups + other, 6);
		}
		assert_int_equal(total, 4);
		assert_int_equal(total_dups, 2);
		assert_int_equal(owners[0] + owners[1] + owners[2], 1);
		assert_int_equal(owners[3], 1);
		assert_int_equal(owners[4], 1);
		assert_int_equal(owners[5], 1);
	}
	nx_flags_free(&f);
	nx_flags_free(&f1);
	for (int i = 0; i < 6; i++)
		free(files[i]);
}

static void shard_determinism(void **state)
{
	(void)state;
	/* The split is sha256(key)'s first four bytes, big-endian, mod n: every
	 * machine and every nxcc version computes the same one. Expected values
	 * from Python's hashlib. */
	assert_int_equal(nx_pc_shard_of("MODULE_4ff2afbe379a841ad3313e649855655d+d1e933ea7b155d2d", 7), 6);
	assert_int_equal(nx_pc_shard_of("MODULE_00000000000000000000000000000000+0000000000000000", 3), 0);
	assert_int_equal(nx_pc_shard_of("a", 1000), 610);
	/* stable across calls, in range, and close to even over many keys */
	int per[4] = {0};
	for (int i = 0; i < 2000; i++) {
		char k[80];
		snprintf(k, sizeof k, "MODULE_%032x+%016x", i * 2654435761u, i);
		int s = nx_pc_shard_of(k, 4);
		assert_int_equal(s, nx_pc_shard_of(k, 4));
		assert_true(s >= 0 && s < 4);
		assert_int_equal(nx_pc_shard_of(k, 1), 0);
		per[s]++;
	}
	for (int s = 0; s < 4; s++)
		assert_true(per[s] > 400 && per[s] < 600);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(classify),
		cmocka_unit_test_setup_teardown(collect_dump, setup, teardown),
		cmocka_unit_test_setup_teardown(dedup_by_key, setup, teardown),
		cmocka_unit_test(shard_determinism),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
