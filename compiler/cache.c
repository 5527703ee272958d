/* compiler/cache.c — compile cache front: key, layout, lookup/store, locking.
 * The backends (cache_fs.c, cache_s3.c) are plain object stores; everything
 * about entries, markers and hashes lives here. */
#include "compiler/cache.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define VERSION_DIR "nxcc-" NX_VERSION

struct nx_cache {
	const nx_cache_backend *be;
	void *impl;
	char *url;
	bool usable;
	char *why_unusable; /* what give_up said, for "not stored: <reason>" */
	nx_cache_log_fn log;
	void *log_ud;
};

void (*nx_cache_test_before_done)(void);

static void default_log(void *ud, int level, const char *msg)
{
	(void)ud;
	if (level >= 1)
		fprintf(stderr, "nxcc: warning: %s\n", msg);
}

static void say(nx_cache *c, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(nx_cache *c, int level, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	c->log(c->log_ud, level, buf);
}

/* The store failed in a way that will not fix itself within this run
 * (unreachable, forbidden): warn once and stop using it. */
static void give_up(nx_cache *c, const char *what, const nx_diag *d)
{
	if (!c->usable)
		return;
	c->usable = false;
	c->why_unusable = nx_xasprintf("%s failed: %s", what, d && d->msg ? d->msg : "unknown error");
	say(c, 1, "compile cache %s: %s failed (%s); continuing without the cache", c->url, what,
	    d && d->msg ? d->msg : "unknown error");
}

const char *nx_cache_unusable_reason(const nx_cache *c)
{
	return c->why_unusable ? c->why_unusable : "the cache is unusable";
}

/* Objects of a directory cache are readable by everyone who may enter the
 * directory (a cache is shared by the users of a machine), whatever the
 * umask of the process that stored them. */
static void share_obj(nx_cache *c, const char *name)
{
	if (strcmp(c->be->kind, "dir") != 0)
		return;
	char *path = nx_xasprintf("%s/%s", c->url, name);
	chmod(path, 0644);
	char *slash = strrchr(path, '/');
	*slash = 0;
	chmod(path, 01777); /* entry directories are sticky 1777 like the cache root (cache_fs.c), whatever the umask */
	free(path);
}

static nx_status put_obj(nx_cache *c, const char *name, const void *data, size_t len, nx_diag *d)
{
	nx_status st = c->be->put(c->impl, name, data, len, d);
	if (st == NX_OK)
		share_obj(c, name);
	return st;
}

/* The default location is shared by every user of a machine: the root and
 * its version directory are created world-writable and sticky, like /tmp
 * (anyone may add entries, only an entry's owner may delete it). */
static void make_shared_dir(const char *path)
{
	struct stat st;
	if (stat(path, &st) == 0)
		return;
	if (mkdir(path, 01777) == 0)
		chmod(path, 01777); /* mkdir's mode went through the umask */
}

nx_status nx_cache_open_existing(const char *url, nx_cache **out, nx_diag *d)
{
	*out = NULL;
	if (url && strncmp(url, "s3://", 5) != 0) {
		const char *path = strncmp(url, "file://", 7) == 0 ? url + 7 : url;
		struct stat st;
		if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
			return nx_diag_set(d, NX_ERR_IO, NULL, 0, 0, "no compile cache at %s (%s)", path,
			                   stat(path, &st) != 0 ? strerror(errno) : "not a directory");
	}
	return nx_cache_open(url, out, d);
}

const char *nx_cache_location(const char *cache_dir_flag)
{
	if (cache_dir_flag && *cache_dir_flag)
		return cache_dir_flag;
	const char *env = getenv("NEURON_COMPILE_CACHE_URL");
	if (env && *env)
		return env;
	return nx_cache_default_dir();
}

const char *nx_cache_default_dir(void)
{
	/* tests cannot own /var/tmp: they move the default (hooks only) */
	const char *hooks = getenv("NXCC_TEST_HOOKS");
	const char *t = hooks && strcmp(hooks, "1") == 0 ? getenv("NXCC_TEST_DEFAULT_CACHE_DIR") : NULL;
	return t && *t ? t : NX_CACHE_DEFAULT_DIR;
}

nx_status nx_cache_open(const char *url, nx_cache **out, nx_diag *d)
{
	*out = NULL;
	if (!url || !*url)
		return nx_diag_set(d, NX_ERR_INPUT, NULL, 0, 0, "empty compile cache location");
	const nx_cache_backend *be;
	void *impl;
	char *canon;
	if (strncmp(url, "s3://", 5) == 0) {
		const char *bp = url + 5;
		if (!*bp || *bp == '/')
			return nx_diag_set(d, NX_ERR_INPUT, NULL, 0, 0, "compile cache url '%s' names no bucket", url);
		be = &nx_cache_s3_backend;
		impl = nx_cache_s3_open(bp, d);
		size_t n = strlen(url);
		canon = nx_xstrdup(url);
		while (n > 5 && canon[n - 1] == '/')
			canon[--n] = 0;
	} else {
		const char *path = strncmp(url, "file://", 7) == 0 ? url + 7 : url;
		if (strcmp(path, nx_cache_default_dir()) == 0) {
			make_shared_dir(path);
			char *ver = nx_xasprintf("%s/%s", path, VERSION_DIR);
			make_shared_dir(ver);
			free(ver);
		}
		be = &nx_cache_fs_backend;
		impl = nx_cache_fs_open(path, d);
		canon = nx_xstrdup(path);
	}
	if (!impl) {
		free(canon);
		return d ? d->status : NX_ERR_IO;
	}
	nx_cache *c = calloc(1, sizeof(*c));
	if (!c)
		abort();
	c->be = be;
	c->impl = impl;
	c->url = canon;
	c->usable = true;
	c->log = default_log;
	*out = c;
	return NX_OK;
}

void nx_cache_close(nx_cache *c)
{
	if (!c)
		return;
	c->be->close(c->impl);
	free(c->why_unusable);
	free(c->url);
	free(c);
}

void nx_cache_set_log(nx_cache *c, nx_cache_log_fn fn, void *ud)
{
	c->log = fn ? fn : default_log;
	c->log_ud = ud;
}

const char *nx_cache_kind(const nx_cache *c) { return c->be->kind; }
const char *nx_cache_url(const nx_cache *c) { return c->url; }
bool nx_cache_usable(const nx_cache *c) { return c->usable; }

static bool key_chars_ok(const char *s, size_t max)
{
	size_t n = strlen(s);
	if (n == 0 || n > max)
		return false;
	for (const char *p = s; *p; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      *p == '_' || *p == '-'))
			return false;
	return true;
}

nx_status nx_cache_key_make(const char *hlo_fingerprint, const char *flags_hash, nx_cache_key *k,
                            nx_diag *d)
{
	if (!key_chars_ok(hlo_fingerprint, 64) || !key_chars_ok(flags_hash, 32))
		return nx_diag_set(d, NX_ERR_INPUT, NULL, 0, 0, "bad cache key parts '%s' + '%s'", hlo_fingerprint,
		                   flags_hash);
	snprintf(k->name, sizeof(k->name), "MODULE_%s+%s", hlo_fingerprint, flags_hash);
	return NX_OK;
}

char *nx_cache_where(const nx_cache *c, const nx_cache_key *k)
{
	return nx_xasprintf("%s/%s/%s", c->url, VERSION_DIR, k->name);
}

static char *obj(const char *version, const char *key, const char *file)
{
	return nx_xasprintf("%s/%s/%s", version, key, file);
}

/* Reads model.done: "<sha256 hex of model.neff> <key>\n". The key binds the
 * entry to its directory: an entry copied under another key (a wrong sync
 * prefix) is refused, not served. */
static bool done_hash(const uint8_t *data, size_t len, const char *key, char out[65])
{
	size_t kl = strlen(key);
	if (len != 64 + 1 + kl + 1 || data[64] != ' ' || memcmp(data + 65, key, kl) != 0 ||
	    data[len - 1] != '\n')
		return false;
	for (int i = 0; i < 64; i++) {
		char ch = (char)data[i];
		if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f')))
			return false;
		out[i] = ch;
	}
	out[64] = 0;
	return true;
}

/* 1 intact (neff and len set), 0 absent or corrupt (*why set), -1 store error. */
static int read_done_entry(nx_cache *c, const char *version, const char *key, uint8_t **neff, size_t *len,
                           const char **why, nx_diag *d)
{
	char *n_done = obj(version, key, "model.done");
	uint8_t *done = NULL;
	size_t done_len = 0;
	int r = c->be->get(c->impl, n_done, &done, &done_len, d);
	free(n_done);
	if (r <= 0) {
		*why = "no model.done";
		return r;
	}
	char want[65];
	bool ok = done_hash(done, done_len, key, want);
	free(done);
	if (!ok) {
		*why = "model.done does not hold this entry's key and a sha256";
		return 0;
	}
	char *n_neff = obj(version, key, "model.neff");
	uint8_t *data = NULL;
	size_t dlen = 0;
	r = c->be->get(c->impl, n_neff, &data, &dlen, d);
	free(n_neff);
	if (r <= 0) {
		*why = "model.done present but model.neff missing";
		return r;
	}
	char got[65];
	nx_sha256_hex(data, dlen, got);
	if (strcmp(got, want) != 0) {
		free(data);
		*why = "model.neff does not match the hash in model.done";
		return 0;
	}
	*neff = data;
	*len = dlen;
	return 1;
}

nx_cache_result nx_cache_lookup(nx_cache *c, const nx_cache_key *k, bool retry_failed, uint8_t **neff,
                                size_t *len, char **failed_log)
{
	if (!c || !c->usable)
		return NX_CACHE_MISS;
	nx_diag d = {0};
	const char *why = NULL;
	int r = read_done_entry(c, VERSION_DIR, k->name, neff, len, &why, &d);
	if (r < 0) {
		give_up(c, "lookup", &d);
		nx_diag_clear(&d);
		return NX_CACHE_MISS;
	}
	if (r == 1)
		return NX_CACHE_HIT;
	if (strcmp(why, "no model.done") != 0)
		say(c, 1, "compile cache entry %s/%s/%s is corrupt (%s); recompiling", c->url, VERSION_DIR, k->name,
		    why);
	/* a marker that is there but wrong is never a cached failure */
	if (strcmp(why, "no model.done") != 0)
		return NX_CACHE_MISS;
	if (retry_failed)
		return NX_CACHE_MISS;
	char *n_log = obj(VERSION_DIR, k->name, "model.log");
	uint8_t *log = NULL;
	size_t log_len = 0;
	r = c->be->get(c->impl, n_log, &log, &log_len, &d);
	free(n_log);
	if (r < 0) {
		give_up(c, "lookup", &d);
		nx_diag_clear(&d);
		return NX_CACHE_MISS;
	}
	if (r == 0)
		return NX_CACHE_MISS;
	char *s = malloc(log_len + 1);
	if (!s)
		abort();
	memcpy(s, log, log_len);
	s[log_len] = 0;
	free(log);
	if (failed_log)
		*failed_log = s;
	else
		free(s);
	return NX_CACHE_FAILED;
}

/* ------------------------------------------------------------------ locks */

nx_status nx_cache_lock_key(nx_cache *c, const nx_cache_key *k, nx_cache_lock *lk, bool *waited, nx_diag *d)
{
	lk->fd = -1;
	if (waited)
		*waited = false;
	char *entry = nx_xasprintf("%s/%s", VERSION_DIR, k->name);
	char *dir = c->be->lock_dir(c->impl, entry);
	free(entry);
	if (!dir) {
		nx_status st = nx_diag_set(d, NX_ERR_IO, NULL, 0, 0, "cannot create a lock directory for %s: %s", k->name,
		                           strerror(errno));
		/* a directory cache keeps its locks in the entry: no lock means no
		 * entry either, so this is the one warning, not the first of two */
		if (strcmp(c->be->kind, "dir") == 0)
			give_up(c, "lock", d);
		return st;
	}
	char *path = nx_xasprintf("%s/model.lock", dir);
	free(dir);
	/* A lock file can be unlinked (nxcc cache clear-locks) between our open
	 * and our flock; then we would hold a lock nobody else can see. After
	 * locking, check the path still names our inode, else start over. */
	for (;;) {
		/* O_NOFOLLOW: a symlink planted as model.lock is not followed */
		int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0666);
		struct stat ls;
		if (fd >= 0 && (fstat(fd, &ls) != 0 || !S_ISREG(ls.st_mode))) {
			close(fd);
			fd = -1;
			errno = EINVAL;
		}
		if (fd < 0) {
			nx_status st = nx_diag_set(d, NX_ERR_IO, path, 0, 0, "cannot open lock: %s", strerror(errno));
			if (strcmp(c->be->kind, "dir") == 0)
				give_up(c, "lock", d);
			free(path);
			return st;
		}
		if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
			if (errno != EWOULDBLOCK) {
				nx_status st = nx_diag_set(d, NX_ERR_IO, path, 0, 0, "flock: %s", strerror(errno));
				close(fd);
				free(path);
				return st;
			}
			if (waited && !*waited)
				say(c, 0, "waiting for another compile of %s", k->name);
			if (waited)
				*waited = true;
			while (flock(fd, LOCK_EX) != 0) {
				if (errno != EINTR) {
					nx_status st = nx_diag_set(d, NX_ERR_IO, path, 0, 0, "flock: %s", strerror(errno));
					close(fd);
					free(path);
					return st;
				}
			}
		}
		struct stat a, b;
		if (fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_ino == b.st_ino && a.st_dev == b.st_dev) {
			lk->fd = fd;
			free(path);
			return NX_OK;
		}
		close(fd);
	}
}

void nx_cache_unlock(nx_cache_lock *lk)
{
	if (lk->fd >= 0) {
		/* the file stays: unlinking here would race with a waiter */
		flock(lk->fd, LOCK_UN);
		close(lk->fd);
	}
	lk->fd = -1;
}

/* ------------------------------------------------------------------ store */

static nx_status put_entry_files(nx_cache *c, const nx_cache_key *k, const void *hlo_pb, size_t hlo_len,
                                 const char *flags_json, nx_diag *d)
{
	nx_status st = NX_OK;
	if (hlo_pb) {
		char *n = obj(VERSION_DIR, k->name, "model.hlo_module.pb");
		st = put_obj(c, n, hlo_pb, hlo_len, d);
		free(n);
	}
	if (st == NX_OK && flags_json) {
		char *n = obj(VERSION_DIR, k->name, "compile_flags.json");
		st = put_obj(c, n, flags_json, strlen(flags_json), d);
		free(n);
	}
	return st;
}

static nx_status del_quiet(nx_cache *c, const nx_cache_key *k, const char *file, nx_diag *d)
{
	char *n = obj(VERSION_DIR, k->name, file);
	nx_status st = c->be->del(c->impl, n, d);
	free(n);
	return st;
}

nx_status nx_cache_store(nx_cache *c, const nx_cache_key *k, const void *hlo_pb, size_t hlo_len,
                         const char *flags_json, const void *neff, size_t neff_len, nx_diag *d)
{
	if (!c->usable)
		return nx_diag_set(d, NX_ERR_IO, NULL, 0, 0, "%s", nx_cache_unusable_reason(c));
	/* An old marker must not vouch for a neff while we replace it. */
	nx_status st = del_quiet(c, k, "model.done", d);
	if (st == NX_OK)
		st = put_entry_files(c, k, hlo_pb, hlo_len, flags_json, d);
	if (st == NX_OK) {
		char *n = obj(VERSION_DIR, k->name, "model.neff");
		st = put_obj(c, n, neff, neff_len, d);
		free(n);
	}
	if (st == NX_OK && nx_cache_test_before_done)
		nx_cache_test_before_done();
	if (st == NX_OK) {
		char hex[65];
		nx_sha256_hex(neff, neff_len, hex);
		char *line = nx_xasprintf("%s %s\n", hex, k->name);
		char *n = obj(VERSION_DIR, k->name, "model.done");
		st = put_obj(c, n, line, strlen(line), d);
		free(n);
		free(line);
	}
	if (st == NX_OK)
		st = del_quiet(c, k, "model.log", d);
	if (st != NX_OK)
		give_up(c, "store", d);
	return st;
}

nx_status nx_cache_store_failure(nx_cache *c, const nx_cache_key *k, const void *hlo_pb, size_t hlo_len,
                                 const char *flags_json, const char *log, nx_diag *d)
{
	if (!c->usable)
		return nx_diag_set(d, NX_ERR_IO, NULL, 0, 0, "%s", nx_cache_unusable_reason(c));
	nx_status st = del_quiet(c, k, "model.done", d);
	if (st == NX_OK)
		st = put_entry_files(c, k, hlo_pb, hlo_len, flags_json, d);
	if (st == NX_OK) {
		char *n = obj(VERSION_DIR, k->name, "model.log");
		st = put_obj(c, n, log ? log : "", log ? strlen(log) : 0, d);
		free(n);
	}
	if (st != NX_OK)
		give_up(c, "store", d);
	return st;
}

nx_status nx_cache_store_graph(nx_cache *c, const nx_cache_key *k, const void *hlo_pb, size_t hlo_len,
                               const char *flags_json, nx_diag *d)
{
	if (!c->usable)
		return nx_diag_set(d, NX_ERR_IO, NULL, 0, 0, "%s", nx_cache_unusable_reason(c));
	nx_status st = put_entry_files(c, k, hlo_pb, hlo_len, flags_json, d);
	if (st != NX_OK)
		give_up(c, "store", d);
	return st;
}

int nx_cache_read_obj(nx_cache *c, const char *version, const char *key, const char *file, uint8_t **data,
                      size_t *len, nx_diag *d)
{
	char *n = obj(version, key, file);
	int r = c->be->get(c->impl, n, data, len, d);
	free(n);
	return r;
}

/* ------------------------------------------------------------ maintenance */

static int cmp_entry(const void *a, const void *b)
{
	const nx_cache_entry *x = a, *y = b;
	int r = strcmp(x->version, y->version);
	return r ? r : strcmp(x->key, y->key);
}

nx_status nx_cache_list(nx_cache *c, nx_cache_entry **out, int *n_out, nx_diag *d)
{
	*out = NULL;
	*n_out = 0;
	nx_cache_obj *objs = NULL;
	int n = 0;
	nx_status st = c->be->list(c->impl, "", &objs, &n, d);
	if (st != NX_OK)
		return st;
	nx_cache_entry *e = NULL;
	int ne = 0;
	/* objects arrive in any order: group by "<version>/<key>/" */
	for (int i = 0; i < n; i++) {
		const char *name = objs[i].name;
		const char *s1 = strchr(name, '/');
		const char *s2 = s1 ? strchr(s1 + 1, '/') : NULL;
		if (!s1 || !s2 || strncmp(name, "nxcc-", 5) != 0 || strncmp(s1 + 1, "MODULE_", 7) != 0 ||
		    strchr(s2 + 1, '/'))
			continue;
		size_t vl = (size_t)(s1 - name), kl = (size_t)(s2 - s1 - 1);
		const char *file = s2 + 1;
		int j;
		for (j = 0; j < ne; j++)
			if (strlen(e[j].version) == vl && strncmp(e[j].version, name, vl) == 0 &&
			    strlen(e[j].key) == kl && strncmp(e[j].key, s1 + 1, kl) == 0)
				break;
		if (j == ne) {
			nx_cache_entry *ee = realloc(e, sizeof(*e) * (size_t)(ne + 1));
			if (!ee)
				abort();
			e = ee;
			memset(&e[ne], 0, sizeof(e[ne]));
			e[ne].version = nx_xasprintf("%.*s", (int)vl, name);
			e[ne].key = nx_xasprintf("%.*s", (int)kl, s1 + 1);
			e[ne].state = NX_ENTRY_INCOMPLETE;
			ne++;
		}
		if (strcmp(file, "model.lock") == 0)
			continue;
		e[j].bytes += objs[i].size;
		if (objs[i].mtime > e[j].mtime)
			e[j].mtime = objs[i].mtime;
		if (strcmp(file, "model.done") == 0)
			e[j].state = NX_ENTRY_DONE;
		else if (strcmp(file, "model.log") == 0 && e[j].state != NX_ENTRY_DONE)
			e[j].state = NX_ENTRY_FAILED;
	}
	for (int i = 0; i < n; i++)
		free(objs[i].name);
	free(objs);
	qsort(e, (size_t)ne, sizeof(*e), cmp_entry);
	*out = e;
	*n_out = ne;
	return NX_OK;
}

void nx_cache_entries_free(nx_cache_entry *e, int n)
{
	for (int i = 0; i < n; i++) {
		free(e[i].version);
		free(e[i].key);
	}
	free(e);
}

bool nx_cache_verify_entry(nx_cache *c, const char *version, const char *key, const char **why)
{
	nx_diag d = {0};
	uint8_t *neff = NULL;
	size_t len = 0;
	*why = NULL;
	int r = read_done_entry(c, version, key, &neff, &len, why, &d);
	if (r < 0)
		*why = "cannot read from the store";
	nx_diag_clear(&d);
	free(neff);
	return r == 1;
}

nx_status nx_cache_remove_entry(nx_cache *c, const char *version, const char *key, nx_diag *d)
{
	/* model.done first: a reader must never see a marker without its neff */
	static const char *const files[] = {"model.done", "model.neff", "model.log", "compile_flags.json",
	                                    "model.hlo_module.pb", "model.lock"};
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		char *n = obj(version, key, files[i]);
		nx_status st = c->be->del(c->impl, n, d);
		free(n);
		if (st != NX_OK)
			return st;
	}
	return NX_OK;
}

static int clear_lock_file(const char *path)
{
	int fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return 0;
	int removed = 0;
	if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
		/* held by us now, so no one is compiling: safe to unlink (lockers
		 * re-check the inode after locking) */
		removed = unlink(path) == 0;
		flock(fd, LOCK_UN);
	}
	close(fd);
	return removed;
}

bool nx_cache_entry_busy(nx_cache *c, const char *version, const char *key)
{
	char *entry = nx_xasprintf("%s/%s", version, key);
	char *dir = c->be->lock_dir(c->impl, entry);
	free(entry);
	if (!dir)
		return false;
	char *path = nx_xasprintf("%s/model.lock", dir);
	free(dir);
	bool busy = false;
	int fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd >= 0) {
		busy = flock(fd, LOCK_EX | LOCK_NB) != 0;
		close(fd); /* closing drops our flock if we got it */
	}
	free(path);
	return busy;
}

int nx_cache_clear_locks(nx_cache *c)
{
	nx_cache_entry *e;
	int n, removed = 0;
	nx_diag d = {0};
	if (nx_cache_list(c, &e, &n, &d) != NX_OK) {
		nx_diag_clear(&d);
		return 0;
	}
	for (int i = 0; i < n; i++) {
		char *entry = nx_xasprintf("%s/%s", e[i].version, e[i].key);
		char *dir = c->be->lock_dir(c->impl, entry);
		free(entry);
		if (!dir)
			continue;
		char *path = nx_xasprintf("%s/model.lock", dir);
		removed += clear_lock_file(path);
		free(path);
		free(dir);
	}
	nx_cache_entries_free(e, n);
	return removed;
}

int nx_cache_sweep_orphans(nx_cache *c)
{
	if (!c || !c->be->sweep)
		return 0;
	const char *age = getenv("NX_CACHE_ORPHAN_AGE"); /* tests: 0 = every temporary */
	int64_t a = age && *age ? strtoll(age, NULL, 10) : NX_CACHE_ORPHAN_AGE;
	return c->be->sweep(c->impl, (int64_t)time(NULL) - a);
}
