/* compiler/cache.h — the compile cache (DESIGN.md section 8, docs/cache.md).
 *
 * An entry is an object set under
 *     <root>/nxcc-<version>/MODULE_<hlo-fingerprint>+<flags-hash>/
 * holding model.hlo_module.pb, compile_flags.json, model.neff and, written
 * last, model.done (the sha256 hex of model.neff). A failed compile leaves
 * model.log instead of model.done. <root> is a directory or s3://bucket/prefix.
 *
 * The compile driver's protocol:
 *
 *     r = nx_cache_lookup(c, &key, retry, &neff, &len, &log);    hit? done.
 *     nx_cache_lock(c, &key, &lk, &waited, d);    one compiler per key
 *     r = nx_cache_lookup(...)                    someone else finished? done.
 *     compile; then nx_cache_store(...) or nx_cache_store_failure(...)
 *     nx_cache_unlock(&lk);
 *
 * Guarantees. Every object is written atomically (directory: temp + fsync +
 * rename; S3: a PUT is atomic), and model.done goes last, so an entry without
 * model.done does not exist for a reader; a killed writer leaves at most an
 * incomplete entry, which the next compile overwrites. model.done carries the
 * neff's hash, so a corrupt or half-replaced neff is a miss (and replaced).
 * The lock is flock(2) on a file (directory: the entry's model.lock; S3: a
 * local file under $TMPDIR/nxcc-locks-<uid>/), released by the kernel when
 * its holder dies: there is no stale lock to clean up. On S3 the lock only
 * serializes compiles on one machine; across machines two may compile the
 * same key, and both write the same bytes (compiles are deterministic).
 *
 * Degradation: lookup never fails; an unreachable or forbidden store is a
 * miss with one warning through the log callback, and later operations on
 * that cache are skipped. A failed store (or, on a directory cache, a lock
 * that cannot be created) is that one warning too; nx_cache_store then
 * returns the error (also when an earlier failure made the cache unusable),
 * which the caller reports on its result line ("not stored: <reason>"),
 * never as a second warning: a cache never fails a compile that could
 * succeed. The default directory is created sticky and world-writable (1777,
 * like /tmp) with its version directory; stored objects are made 0644 and
 * entry directories 0755 whatever the umask (docs/cache.md). */
#ifndef NX_CACHE_H
#define NX_CACHE_H

#include "ir/ir.h"

#include <stdint.h>

/* Where the cache is when neither --cache-dir nor NEURON_COMPILE_CACHE_URL is set. */
#define NX_CACHE_DEFAULT_DIR "/var/tmp/nxcc-compile-cache"

typedef struct nx_cache nx_cache;

/* Warnings and info lines from the cache ("cache: s3://b/p unreachable: ...").
 * level: 0 info, 1 warning. Default: warnings to stderr, info dropped. */
typedef void (*nx_cache_log_fn)(void *ud, int level, const char *msg);

/* MODULE_<hlo-fingerprint>+<flags-hash>: the entry's directory name. */
typedef struct nx_cache_key {
	char name[128]; /* NUL-terminated */
} nx_cache_key;

typedef enum { NX_CACHE_MISS = 0, NX_CACHE_HIT = 1, NX_CACHE_FAILED = 2 } nx_cache_result;

/* Picks the location: cache_dir_flag (--cache-dir), else
 * $NEURON_COMPILE_CACHE_URL, else NX_CACHE_DEFAULT_DIR. */
const char *nx_cache_location(const char *cache_dir_flag);
/* NX_CACHE_DEFAULT_DIR (tests move it: NXCC_TEST_HOOKS=1 with
 * NXCC_TEST_DEFAULT_CACHE_DIR). */
const char *nx_cache_default_dir(void);

/* Opens the cache at url (a path, file://path, or s3://bucket[/prefix]).
 * Creates a local root if missing. An S3 cache opens without network
 * traffic; trouble shows at first use. Error only for a malformed url or a
 * local root that cannot be created. */
nx_status nx_cache_open(const char *url, nx_cache **out, nx_diag *d);
void nx_cache_close(nx_cache *c);
/* nx_cache_open for commands that only read or maintain a cache (nxcc cache
 * list|stats|verify|prune|clear-locks): a local root that does not exist is
 * an error ("no compile cache at PATH"), never created. */
nx_status nx_cache_open_existing(const char *url, nx_cache **out, nx_diag *d);
/* Why the cache stopped being used ("store failed: ..."), for the result
 * line's "not stored: <reason>". */
const char *nx_cache_unusable_reason(const nx_cache *c);
void nx_cache_set_log(nx_cache *c, nx_cache_log_fn fn, void *ud);
/* "dir" or "s3". */
const char *nx_cache_kind(const nx_cache *c);
/* The root as given ("s3://b/p" or an absolute path). */
const char *nx_cache_url(const nx_cache *c);
/* False after the store proved unreachable or forbidden (then every call is a no-op/miss). */
bool nx_cache_usable(const nx_cache *c);

/* Builds the key from the module fingerprint (hex, e.g. nx_fingerprint) and
 * the flags hash (hex, nx_flags_hash). Error when either holds characters
 * other than [0-9A-Za-z_-] or is too long. */
nx_status nx_cache_key_make(const char *hlo_fingerprint, const char *flags_hash, nx_cache_key *k,
                            nx_diag *d);
/* Where the entry lives: "<root>/nxcc-<ver>/<key>" (path or s3:// url). Caller frees. */
char *nx_cache_where(const nx_cache *c, const nx_cache_key *k);

/* HIT: *neff (malloc'd, caller frees) and *len hold the verified neff.
 * FAILED: a previous compile of this key failed and retry_failed is false;
 * *failed_log (malloc'd, NUL-terminated) holds its log. MISS: nothing set. */
nx_cache_result nx_cache_lookup(nx_cache *c, const nx_cache_key *k, bool retry_failed, uint8_t **neff,
                                size_t *len, char **failed_log);

typedef struct nx_cache_lock {
	int fd; /* -1 when not held */
} nx_cache_lock;

/* Takes the key's exclusive lock, blocking while another process holds it.
 * *waited (may be NULL) tells whether it had to wait. */
nx_status nx_cache_lock_key(nx_cache *c, const nx_cache_key *k, nx_cache_lock *lk, bool *waited,
                            nx_diag *d);
void nx_cache_unlock(nx_cache_lock *lk);

/* Stores a successful compile. hlo_pb may be NULL (then no
 * model.hlo_module.pb). Removes a model.log left by an earlier failure. */
nx_status nx_cache_store(nx_cache *c, const nx_cache_key *k, const void *hlo_pb, size_t hlo_len,
                         const char *flags_json, const void *neff, size_t neff_len, nx_diag *d);
/* Records a failed compile: model.hlo_module.pb (if given), compile_flags.json, model.log. */
nx_status nx_cache_store_failure(nx_cache *c, const nx_cache_key *k, const void *hlo_pb, size_t hlo_len,
                                 const char *flags_json, const char *log, nx_diag *d);

/* Records a graph to compile later (neuron_parallel_compile --command
 * collect): model.hlo_module.pb and compile_flags.json, no model.done, so
 * the entry is "incomplete" until a compile of the key stores its neff. */
nx_status nx_cache_store_graph(nx_cache *c, const nx_cache_key *k, const void *hlo_pb, size_t hlo_len,
                               const char *flags_json, nx_diag *d);
/* One object of an entry ("model.hlo_module.pb"): 1 read (*data malloc'd),
 * 0 absent, -1 error (d set). */
int nx_cache_read_obj(nx_cache *c, const char *version, const char *key, const char *file, uint8_t **data,
                      size_t *len, nx_diag *d);

/* ---- maintenance (nxcc cache) ---- */

typedef enum { NX_ENTRY_DONE, NX_ENTRY_FAILED, NX_ENTRY_INCOMPLETE } nx_cache_entry_state;

typedef struct nx_cache_entry {
	char *version;   /* "nxcc-0.1.0" */
	char *key;       /* "MODULE_...+..." */
	nx_cache_entry_state state;
	uint64_t bytes;  /* sum of its objects */
	int64_t mtime;   /* newest object, seconds since the epoch */
} nx_cache_entry;

/* Lists every entry of every nxcc version under the root, sorted by
 * version then key. Free with nx_cache_entries_free. */
nx_status nx_cache_list(nx_cache *c, nx_cache_entry **out, int *n, nx_diag *d);
void nx_cache_entries_free(nx_cache_entry *e, int n);
/* Checks a done entry: neff present and its hash matches model.done.
 * Returns true when intact; *why (static string) says what is wrong. */
bool nx_cache_verify_entry(nx_cache *c, const char *version, const char *key, const char **why);
/* Deletes every object of an entry. */
nx_status nx_cache_remove_entry(nx_cache *c, const char *version, const char *key, nx_diag *d);
/* True when some process holds the entry's lock (a compile is running). */
bool nx_cache_entry_busy(nx_cache *c, const char *version, const char *key);
/* Removes lock files nobody holds (directory caches and the local S3 lock
 * directory). Returns how many were removed. Never needed for correctness. */
int nx_cache_clear_locks(nx_cache *c);
/* Removes temporaries that writers killed mid-store left behind (older than
 * NX_CACHE_ORPHAN_AGE seconds, so a live writer's file is never touched);
 * returns how many. */
#define NX_CACHE_ORPHAN_AGE 3600
int nx_cache_sweep_orphans(nx_cache *c);

/* Test hook: called by nx_cache_store after model.neff and before
 * model.done is written (crash-safety tests stall or die there). */
extern void (*nx_cache_test_before_done)(void);

/* ---- backends (compiler/cache_fs.c, compiler/cache_s3.c) ---- */

typedef struct nx_cache_obj {
	char *name;    /* relative to the root: "nxcc-0.1.0/MODULE_x+y/model.neff" */
	uint64_t size;  /* bytes */
	int64_t mtime;  /* seconds since the epoch */
} nx_cache_obj;

/* An object store. get: 1 found, 0 absent, -1 error (d set). put is atomic
 * per object. list returns every object under prefix (malloc'd array). */
typedef struct nx_cache_backend {
	const char *kind; /* "dir" or "s3", for messages */
	int (*get)(void *be, const char *name, uint8_t **data, size_t *len, nx_diag *d);
	nx_status (*put)(void *be, const char *name, const void *data, size_t len, nx_diag *d);
	nx_status (*del)(void *be, const char *name, nx_diag *d);
	nx_status (*list)(void *be, const char *prefix, nx_cache_obj **objs, int *n, nx_diag *d);
	/* The local directory holding lock files for name's entry (malloc'd). */
	char *(*lock_dir)(void *be, const char *entry);
	/* Removes orphaned temporaries older than `before` (Unix time); returns
	 * how many. NULL when the store has none (S3 puts are whole objects). */
	int (*sweep)(void *be, int64_t before);
	void (*close)(void *be);
} nx_cache_backend;

void *nx_cache_fs_open(const char *root, nx_diag *d);
extern const nx_cache_backend nx_cache_fs_backend;
/* bucket_prefix: "bucket" or "bucket/prefix" (no s3://). */
void *nx_cache_s3_open(const char *bucket_prefix, nx_diag *d);
extern const nx_cache_backend nx_cache_s3_backend;

#endif
