/* tests/unit/test_cache.c — the compile cache API on a local directory:
 * keys, store/lookup/failure, corruption, and crash safety with forked
 * writers killed by SIGKILL. */
#include "testutil.h"

#include "compiler/cache.h"

#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char root[256];

static int setup(void **state)
{
	(void)state;
	snprintf(root, sizeof(root), "/tmp/nxcc-test-cache-XXXXXX");
	if (!mkdtemp(root))
		return -1;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	return system(cmd) == 0 ? 0 : -1;
}

static nx_cache *open_cache(void)
{
	nx_cache *c;
	nx_diag d = {0};
	assert_int_equal(nx_cache_open(root, &c, &d), NX_OK);
	return c;
}

static nx_cache_key key(const char *fp)
{
	nx_cache_key k;
	nx_diag d = {0};
	assert_int_equal(nx_cache_key_make(fp, "0123456789abcdef", &k, &d), NX_OK);
	return k;
}

static void test_key(void **state)
{
	(void)state;
	nx_cache_key k = key("deadbeef");
	assert_string_equal(k.name, "MODULE_deadbeef+0123456789abcdef");
	nx_diag d = {0};
	assert_int_equal(nx_cache_key_make("../etc", "00", &k, &d), NX_ERR_INPUT);
	nx_diag_clear(&d);
	assert_int_equal(nx_cache_key_make("ab", "", &k, &d), NX_ERR_INPUT);
	nx_diag_clear(&d);
	nx_cache *c;
	assert_int_equal(nx_cache_open("s3://", &c, &d), NX_ERR_INPUT);
	nx_diag_clear(&d);
	assert_int_equal(nx_cache_open("/proc/nope/nxcc", &c, &d), NX_ERR_IO);
	nx_diag_clear(&d);
}

static void test_store_lookup(void **state)
{
	(void)state;
	nx_cache *c = open_cache();
	assert_string_equal(nx_cache_kind(c), "dir");
	nx_cache_key k = key("s1");
	uint8_t *neff = NULL;
	size_t len = 0;
	char *log = NULL;
	assert_int_equal(nx_cache_lookup(c, &k, false, &neff, &len, &log), NX_CACHE_MISS);
	nx_diag d = {0};
	const char bytes[] = "a neff, honestly";
	assert_int_equal(nx_cache_store(c, &k, "pb", 2, "{}", bytes, sizeof(bytes), &d), NX_OK);
	assert_int_equal(nx_cache_lookup(c, &k, false, &neff, &len, &log), NX_CACHE_HIT);
	assert_int_equal(len, sizeof(bytes));
	assert_memory_equal(neff, bytes, len);
	free(neff);
	char *where = nx_cache_where(c, &k);
	char path[600];
	snprintf(path, sizeof(path), "%s/model.hlo_module.pb", where);
	assert_int_equal(access(path, F_OK), 0);

	/* failure remembered until retry; a later success replaces it */
	nx_cache_key f = key("f1");
	assert_int_equal(nx_cache_store_failure(c, &f, NULL, 0, "{}", "boom\n", &d), NX_OK);
	assert_int_equal(nx_cache_lookup(c, &f, false, &neff, &len, &log), NX_CACHE_FAILED);
	assert_string_equal(log, "boom\n");
	free(log);
	assert_int_equal(nx_cache_lookup(c, &f, true, &neff, &len, &log), NX_CACHE_MISS);
	assert_int_equal(nx_cache_store(c, &f, NULL, 0, "{}", bytes, 4, &d), NX_OK);
	assert_int_equal(nx_cache_lookup(c, &f, false, &neff, &len, &log), NX_CACHE_HIT);
	free(neff);

	/* corrupt neff: miss */
	snprintf(path, sizeof(path), "%s/model.neff", where);
	FILE *fp = fopen(path, "wb");
	fputs("x", fp);
	fclose(fp);
	const char *why;
	assert_false(nx_cache_verify_entry(c, "nxcc-" NX_VERSION, k.name, &why));
	assert_non_null(strstr(why, "does not match"));
	assert_int_equal(nx_cache_lookup(c, &k, false, &neff, &len, &log), NX_CACHE_MISS);
	free(where);

	nx_cache_entry *e;
	int n;
	assert_int_equal(nx_cache_list(c, &e, &n, &d), NX_OK);
	assert_int_equal(n, 2);
	assert_string_equal(e[0].key, "MODULE_f1+0123456789abcdef");
	assert_int_equal(e[0].state, NX_ENTRY_DONE);
	nx_cache_entries_free(e, n);
	nx_cache_close(c);
}

static void die_now(void) { raise(SIGKILL); }

/* A writer killed between model.neff and model.done, while holding the
 * lock: the next process neither waits nor reads the partial entry. */
static void test_killed_writer(void **state)
{
	(void)state;
	nx_cache_key k = key("crash");
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		nx_cache *c = open_cache();
		nx_cache_lock lk;
		nx_diag d = {0};
		if (nx_cache_lock_key(c, &k, &lk, NULL, &d) != NX_OK)
			_exit(2);
		nx_cache_test_before_done = die_now;
		nx_cache_store(c, &k, NULL, 0, "{}", "partial", 7, &d);
		_exit(3); /* not reached */
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	nx_cache *c = open_cache();
	char *where = nx_cache_where(c, &k), path[600];
	snprintf(path, sizeof(path), "%s/model.neff", where);
	assert_int_equal(access(path, F_OK), 0); /* it did get that far */
	free(where);
	uint8_t *neff;
	size_t len;
	assert_int_equal(nx_cache_lookup(c, &k, false, &neff, &len, NULL), NX_CACHE_MISS);
	nx_cache_lock lk;
	bool waited = true;
	nx_diag d = {0};
	assert_int_equal(nx_cache_lock_key(c, &k, &lk, &waited, &d), NX_OK);
	assert_false(waited);
	assert_int_equal(nx_cache_store(c, &k, NULL, 0, "{}", "whole", 5, &d), NX_OK);
	nx_cache_unlock(&lk);
	assert_int_equal(nx_cache_lookup(c, &k, false, &neff, &len, NULL), NX_CACHE_HIT);
	assert_memory_equal(neff, "whole", 5);
	free(neff);
	nx_cache_close(c);
}

/* The compile driver's protocol in a child: exit 0 compiled, 10 hit, 11 hit after waiting. */
static int child_compile(const char *fp, double secs)
{
	nx_cache *c = open_cache();
	nx_cache_key k = key(fp);
	uint8_t *neff;
	size_t len;
	if (nx_cache_lookup(c, &k, false, &neff, &len, NULL) == NX_CACHE_HIT)
		return 10;
	nx_cache_lock lk;
	bool waited;
	nx_diag d = {0};
	if (nx_cache_lock_key(c, &k, &lk, &waited, &d) != NX_OK)
		return 2;
	if (nx_cache_lookup(c, &k, false, &neff, &len, NULL) == NX_CACHE_HIT)
		return waited ? 11 : 10;
	struct timespec ts = {(time_t)secs, (long)((secs - (double)(time_t)secs) * 1e9)};
	nanosleep(&ts, NULL);
	if (nx_cache_store(c, &k, NULL, 0, "{}", fp, strlen(fp), &d) != NX_OK)
		return 3;
	nx_cache_unlock(&lk);
	nx_cache_close(c);
	return 0;
}

static void test_concurrent(void **state)
{
	(void)state;
	enum { N = 4 };
	pid_t pids[N];
	for (int i = 0; i < N; i++) {
		pids[i] = fork();
		assert_true(pids[i] >= 0);
		if (pids[i] == 0)
			_exit(child_compile("shared", 0.5));
	}
	int compiled = 0, waited_hits = 0;
	for (int i = 0; i < N; i++) {
		int st;
		assert_int_equal(waitpid(pids[i], &st, 0), pids[i]);
		assert_true(WIFEXITED(st));
		int rc = WEXITSTATUS(st);
		assert_true(rc == 0 || rc == 10 || rc == 11);
		compiled += rc == 0;
		waited_hits += rc == 11;
	}
	assert_int_equal(compiled, 1);
	assert_true(waited_hits >= 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_key, setup, teardown),
		cmocka_unit_test_setup_teardown(test_store_lookup, setup, teardown),
		cmocka_unit_test_setup_teardown(test_killed_writer, setup, teardown),
		cmocka_unit_test_setup_teardown(test_concurrent, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
