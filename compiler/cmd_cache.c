/* compiler/cmd_cache.c — `nxcc cache`: inspect and maintain the compile cache.
 * Also the hidden `nxcc cache test-compile`, which runs the compile driver's
 * cache protocol with a fake compiler so tests can exercise locking, crash
 * safety, failures and S3 before (and independently of) the real backend. */
#include "compiler/cache.h"
#include "compiler/cli.h"
#include "compiler/flags.h"

#include <ctype.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void usage(FILE *f)
{
	fprintf(f, "usage: nxcc cache COMMAND [--cache-dir DIR|s3://BUCKET/PREFIX]\n\n"
	           "commands:\n"
	           "  list                 one line per entry: state, size, age, key\n"
	           "  stats                entry counts and total size per nxcc version\n"
	           "  verify [--remove]    check every finished entry's neff against its hash\n"
	           "  prune --max-size SIZE  delete the oldest entries until the cache fits\n"
	           "                       (SIZE: bytes, or with K, M, G, T suffix)\n"
	           "  clear-locks          delete lock files nobody holds (never needed for\n"
	           "                       correctness: locks die with their process)\n\n"
	           "The cache is --cache-dir (or --cache_dir), else --cache_dir in NEURON_CC_FLAGS,\n"
	           "else NEURON_COMPILE_CACHE_URL, else " NX_CACHE_DEFAULT_DIR ": the rule of\n"
	           "nxcc compile. These commands never create the cache directory.\n");
}

/* The cache location for maintenance commands: the rule of nxcc compile
 * (nx_cache_location), with --cache-dir/--cache_dir from this command line,
 * else from NEURON_CC_FLAGS, above NEURON_COMPILE_CACHE_URL (as in the
 * Neuron docs), above the default. */
static const char *resolve(const char *flag, char **owned)
{
	*owned = NULL;
	if (flag)
		return flag;
	const char *ccf = getenv("NEURON_CC_FLAGS");
	if (ccf && *ccf) {
		nx_compile_flags f;
		nx_diag d = {0};
		if (nx_flags_parse(0, NULL, ccf, &f, &d) == NX_OK && f.cache_dir)
			*owned = nx_xstrdup(f.cache_dir);
		nx_flags_free(&f);
		nx_diag_clear(&d);
	}
	return nx_cache_location(*owned);
}

static const char *state_name(nx_cache_entry_state s)
{
	return s == NX_ENTRY_DONE ? "done" : s == NX_ENTRY_FAILED ? "failed" : "incomplete";
}

static void human(uint64_t b, char *out, size_t n)
{
	const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	double v = (double)b;
	int i = 0;
	while (v >= 1024 && i < 4) {
		v /= 1024;
		i++;
	}
	snprintf(out, n, i ? "%.1f %s" : "%.0f %s", v, u[i]);
}

static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	double v = strtod(s, &end);
	if (end == s || v < 0)
		return -1;
	uint64_t mul = 1;
	switch (toupper((unsigned char)*end)) {
	case 0: break;
	case 'K': mul = 1ull << 10; end++; break;
	case 'M': mul = 1ull << 20; end++; break;
	case 'G': mul = 1ull << 30; end++; break;
	case 'T': mul = 1ull << 40; end++; break;
	default: return -1;
	}
	if (*end == 'i' || *end == 'I')
		end++;
	if (*end == 'B' || *end == 'b')
		end++;
	if (*end)
		return -1;
	*out = (uint64_t)(v * (double)mul);
	return 0;
}

/* Prints d and releases what it holds (nxcc runs under LeakSanitizer in
 * make asan). */
static int report(nx_diag *d)
{
	int rc = nx_cli_report(d);
	nx_diag_clear(d);
	return rc;
}

static int cmd_list(nx_cache *c)
{
	nx_cache_entry *e;
	int n;
	nx_diag d = {0};
	if (nx_cache_list(c, &e, &n, &d) != NX_OK)
		return report(&d);
	time_t now = time(NULL);
	for (int i = 0; i < n; i++) {
		char sz[32];
		human(e[i].bytes, sz, sizeof(sz));
		long age = (long)(now - e[i].mtime);
		printf("%-10s %10s %8lds  %s/%s\n", state_name(e[i].state), sz, age < 0 ? 0 : age, e[i].version,
		       e[i].key);
	}
	nx_cache_entries_free(e, n);
	return 0;
}

static int cmd_stats(nx_cache *c)
{
	nx_cache_entry *e;
	int n;
	nx_diag d = {0};
	if (nx_cache_list(c, &e, &n, &d) != NX_OK)
		return report(&d);
	printf("cache: %s (%s)\n", nx_cache_url(c), nx_cache_kind(c));
	uint64_t total = 0;
	int counts[3] = {0};
	for (int i = 0; i < n; i++) {
		total += e[i].bytes;
		counts[e[i].state]++;
	}
	for (int i = 0; i < n;) {
		int j = i, cnt[3] = {0};
		uint64_t b = 0;
		for (; j < n && strcmp(e[j].version, e[i].version) == 0; j++) {
			cnt[e[j].state]++;
			b += e[j].bytes;
		}
		char sz[32];
		human(b, sz, sizeof(sz));
		printf("%s: %d entries (%d done, %d failed, %d incomplete), %s\n", e[i].version, j - i, cnt[0],
		       cnt[1], cnt[2], sz);
		i = j;
	}
	char sz[32];
	human(total, sz, sizeof(sz));
	printf("total: %d entries (%d done, %d failed, %d incomplete), %s (%llu bytes)\n", n, counts[0],
	       counts[1], counts[2], sz, (unsigned long long)total);
	nx_cache_entries_free(e, n);
	return 0;
}

static int cmd_verify(nx_cache *c, bool remove)
{
	nx_cache_entry *e;
	int n, bad = 0, ok = 0;
	nx_diag d = {0};
	if (nx_cache_list(c, &e, &n, &d) != NX_OK)
		return report(&d);
	for (int i = 0; i < n; i++) {
		if (e[i].state != NX_ENTRY_DONE)
			continue;
		const char *why;
		if (nx_cache_verify_entry(c, e[i].version, e[i].key, &why)) {
			ok++;
			continue;
		}
		bad++;
		printf("corrupt: %s/%s: %s%s\n", e[i].version, e[i].key, why, remove ? " (removed)" : "");
		if (remove && nx_cache_remove_entry(c, e[i].version, e[i].key, &d) != NX_OK) {
			nx_cache_entries_free(e, n);
			return report(&d);
		}
	}
	printf("%d entries verified, %d corrupt\n", ok + bad, bad);
	nx_cache_entries_free(e, n);
	return bad && !remove ? NX_EXIT_USER : 0;
}

static int cmp_age(const void *a, const void *b)
{
	const nx_cache_entry *x = a, *y = b;
	return x->mtime < y->mtime ? -1 : x->mtime > y->mtime ? 1 : strcmp(x->key, y->key);
}

static int cmd_prune(nx_cache *c, uint64_t max)
{
	nx_cache_entry *e;
	int n, removed = 0;
	nx_diag d = {0};
	if (nx_cache_list(c, &e, &n, &d) != NX_OK)
		return report(&d);
	uint64_t total = 0;
	for (int i = 0; i < n; i++)
		total += e[i].bytes;
	qsort(e, (size_t)n, sizeof(*e), cmp_age);
	uint64_t freed = 0;
	for (int i = 0; i < n && total > max; i++) {
		/* an entry being compiled right now is not ours to delete */
		if (nx_cache_entry_busy(c, e[i].version, e[i].key))
			continue;
		if (nx_cache_remove_entry(c, e[i].version, e[i].key, &d) != NX_OK) {
			nx_cache_entries_free(e, n);
			return report(&d);
		}
		total -= e[i].bytes;
		freed += e[i].bytes;
		removed++;
	}
	char a[32], b[32];
	human(freed, a, sizeof(a));
	human(total, b, sizeof(b));
	printf("pruned %d entries (%s); %s left\n", removed, a, b);
	int orphans = nx_cache_sweep_orphans(c);
	if (orphans)
		printf("removed %d orphaned temporaries\n", orphans);
	nx_cache_entries_free(e, n);
	return total > max ? NX_EXIT_USER : 0;
}

/* ------------------------------------------------------ test-compile */

static double stall_seconds;
static void stall_hook(void)
{
	struct timespec ts = {(time_t)stall_seconds, (long)((stall_seconds - (double)(time_t)stall_seconds) * 1e9)};
	nanosleep(&ts, NULL);
}

static void sleep_s(double s)
{
	struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
	nanosleep(&ts, NULL);
}

static int cmd_test_compile(int argc, char **argv)
{
	const char *key = NULL;
	double sleep_for = 0;
	bool fail = false;
	char **rest = calloc((size_t)argc + 1, sizeof(char *));
	int nrest = 0;
	for (int i = 0; i < argc; i++) {
		const char *v;
		int r;
		if ((r = nx_cli_flag(argc, argv, &i, "--key", &v))) {
			if (r < 0)
				goto bad;
			key = v;
		} else if ((r = nx_cli_flag(argc, argv, &i, "--sleep", &v))) {
			if (r < 0)
				goto bad;
			sleep_for = atof(v);
		} else if ((r = nx_cli_flag(argc, argv, &i, "--stall-before-done", &v))) {
			if (r < 0)
				goto bad;
			stall_seconds = atof(v);
			nx_cache_test_before_done = stall_hook;
		} else if (strcmp(argv[i], "--fail") == 0) {
			fail = true;
		} else {
			rest[nrest++] = argv[i];
		}
	}
	if (!key) {
		free(rest);
		return nx_cli_usage_error("cache test-compile", "--key is required");
	}
	nx_compile_flags f;
	nx_diag d = {0};
	if (nx_flags_parse(nrest, rest, getenv("NEURON_CC_FLAGS"), &f, &d) != NX_OK) {
		free(rest);
		nx_flags_free(&f);
		return report(&d);
	}
	free(rest);
	char fh[17];
	nx_flags_hash(&f, fh);
	char *flags_json = nx_flags_canonical_json(&f);
	nx_cache_key k;
	if (nx_cache_key_make(key, fh, &k, &d) != NX_OK) {
		free(flags_json);
		nx_flags_free(&f);
		return report(&d);
	}
	nx_cache *c = NULL;
	if (!f.no_cache && nx_cache_open(nx_cache_location(f.cache_dir), &c, &d) != NX_OK) {
		/* a cache that cannot be opened never stops a compile */
		fprintf(stderr, "nxcc: warning: compile cache unusable: %s\n", d.msg);
		nx_diag_clear(&d);
		c = NULL;
	}
	int rc = 0;
	uint8_t *neff = NULL;
	size_t len = 0;
	char *log = NULL;
	nx_cache_lock lk = {-1};
	nx_cache_result r = c ? nx_cache_lookup(c, &k, f.retry_failed, &neff, &len, &log) : NX_CACHE_MISS;
	if (r == NX_CACHE_MISS && c) {
		bool waited = false;
		if (nx_cache_lock_key(c, &k, &lk, &waited, &d) != NX_OK) {
			fprintf(stderr, "nxcc: warning: %s; compiling without the lock\n", d.msg);
			nx_diag_clear(&d);
		}
		if (waited)
			fprintf(stderr, "nxcc: waited for another compile of %s\n", k.name);
		r = nx_cache_lookup(c, &k, f.retry_failed, &neff, &len, &log);
	}
	char *where = c ? nx_cache_where(c, &k) : NULL;
	if (r == NX_CACHE_HIT) {
		printf("cache hit (%s)\n", where);
	} else if (r == NX_CACHE_FAILED) {
		fprintf(stderr, "nxcc: error: a previous compile of this module failed (%s/model.log); "
		                "pass --retry-failed to compile again\n%s", where, log);
		rc = NX_EXIT_USER;
	} else {
		sleep_s(sleep_for);
		if (fail) {
			const char *msg = "fake compile failed on purpose\n";
			if (c && nx_cache_store_failure(c, &k, NULL, 0, flags_json, msg, &d) != NX_OK)
				nx_diag_clear(&d);
			fprintf(stderr, "nxcc: error: %s", msg);
			rc = NX_EXIT_USER;
		} else {
			/* deterministic fake neff: the same key always gives the same bytes */
			len = 4096;
			neff = malloc(len);
			for (size_t i = 0; i < len; i++)
				neff[i] = (uint8_t)k.name[i % strlen(k.name)];
			if (c && nx_cache_store(c, &k, NULL, 0, flags_json, neff, len, &d) != NX_OK)
				nx_diag_clear(&d); /* store already warned */
			printf("cache miss%s\n", c ? "" : " (cache disabled)");
		}
	}
	if (rc == 0 && f.output && neff && nx_cli_write_file(f.output, neff, len, &d) != NX_OK)
		rc = report(&d);
	nx_cache_unlock(&lk);
	free(where);
	free(neff);
	free(log);
	free(flags_json);
	nx_cache_close(c);
	nx_flags_free(&f);
	return rc;
bad:
	free(rest);
	return NX_EXIT_USER;
}

int nx_cmd_cache(int argc, char **argv)
{
	if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? NX_EXIT_USER : 0;
	}
	const char *sub = argv[1];
	if (strcmp(sub, "test-compile") == 0)
		return cmd_test_compile(argc - 2, argv + 2);
	const char *dir = NULL, *max = NULL;
	bool remove = false;
	for (int i = 2; i < argc; i++) {
		const char *v;
		int r;
		if ((r = nx_cli_flag(argc, argv, &i, "--cache-dir", &v)) || (r = nx_cli_flag(argc, argv, &i, "--cache_dir", &v))) {
			if (r < 0)
				return NX_EXIT_USER;
			dir = v;
		} else if ((r = nx_cli_flag(argc, argv, &i, "--max-size", &v))) {
			if (r < 0)
				return NX_EXIT_USER;
			max = v;
		} else if (strcmp(argv[i], "--remove") == 0) {
			remove = true;
		} else if (strcmp(argv[i], "--help") == 0) {
			usage(stdout);
			return 0;
		} else {
			return nx_cli_usage_error("cache", "unknown argument '%s'", argv[i]);
		}
	}
	uint64_t max_size = 0;
	if (strcmp(sub, "prune") == 0) {
		if (!max)
			return nx_cli_usage_error("cache", "prune needs --max-size SIZE");
		if (parse_size(max, &max_size) != 0)
			return nx_cli_usage_error("cache", "bad size '%s' (e.g. 500M, 10G)", max);
	}
	char *owned;
	const char *url = resolve(dir, &owned);
	nx_cache *c;
	nx_diag d = {0};
	if (nx_cache_open_existing(url, &c, &d) != NX_OK) {
		free(owned);
		return report(&d);
	}
	free(owned);
	int rc;
	if (strcmp(sub, "list") == 0)
		rc = cmd_list(c);
	else if (strcmp(sub, "stats") == 0)
		rc = cmd_stats(c);
	else if (strcmp(sub, "verify") == 0)
		rc = cmd_verify(c, remove);
	else if (strcmp(sub, "prune") == 0)
		rc = cmd_prune(c, max_size);
	else if (strcmp(sub, "clear-locks") == 0)
		printf("removed %d unused lock files\n", nx_cache_clear_locks(c)), rc = 0;
	else
		rc = nx_cli_usage_error("cache", "unknown command '%s' (list, stats, verify, prune, clear-locks)", sub);
	nx_cache_close(c);
	return rc;
}
