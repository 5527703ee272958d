/* compiler/cache_s3.c — the compile cache's S3 backend (s3://bucket/prefix).
 * A PUT is atomic per object; the cache front writes model.done last. There
 * is no atomic lock on S3: locks are local files (see cache.h). */
#include "compiler/cache.h"
#include "compiler/s3.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

typedef struct {
	nx_s3 *s3;
	char *bucket;
	char *prefix; /* "" or "some/prefix/" */
} s3_cache;

void *nx_cache_s3_open(const char *bucket_prefix, nx_diag *d)
{
	const char *slash = strchr(bucket_prefix, '/');
	size_t bl = slash ? (size_t)(slash - bucket_prefix) : strlen(bucket_prefix);
	char *bucket = malloc(bl + 1);
	if (!bucket)
		abort();
	memcpy(bucket, bucket_prefix, bl);
	bucket[bl] = 0;
	nx_s3 *s3 = nx_s3_new(bucket, d);
	if (!s3) {
		free(bucket);
		return NULL;
	}
	s3_cache *c = calloc(1, sizeof(*c));
	if (!c)
		abort();
	c->s3 = s3;
	c->bucket = bucket;
	const char *p = slash ? slash + 1 : "";
	size_t pl = strlen(p);
	while (pl && p[pl - 1] == '/')
		pl--;
	c->prefix = malloc(pl + 2);
	if (!c->prefix)
		abort();
	memcpy(c->prefix, p, pl);
	if (pl)
		c->prefix[pl++] = '/';
	c->prefix[pl] = 0;
	return c;
}

static nx_status fail(nx_diag *d, const char *what, const char *name, const nx_s3_resp *r)
{
	char *e = nx_s3_error_text(r);
	nx_status st = nx_diag_set(d, NX_ERR_IO, NULL, 0, 0, "%s %s: %s", what, name, e);
	free(e);
	return st;
}

/* The largest body each kind of object may have, and extra time a GET of
 * it may take beyond the per-request budget: a server that sends an endless
 * model.done is cut off at 4 KiB, not read into memory at 70 MB/s. */
static void object_limits(const char *name, int64_t *max, long *extra_ms)
{
	const char *b = strrchr(name, '/');
	b = b ? b + 1 : name;
	*extra_ms = 0;
	if (strcmp(b, "model.done") == 0)
		*max = 4096;
	else if (strcmp(b, "compile_flags.json") == 0)
		*max = 64 << 10;
	else if (strcmp(b, "model.log") == 0)
		*max = 16 << 20;
	else {
		*max = (int64_t)4 << 30; /* model.neff, model.hlo_module.pb */
		*extra_ms = 25000;
	}
}

static int s3_get(void *be, const char *name, uint8_t **data, size_t *len, nx_diag *d)
{
	s3_cache *c = be;
	char *key = nx_xasprintf("%s%s", c->prefix, name);
	nx_s3_resp r;
	int64_t max;
	long extra;
	object_limits(name, &max, &extra);
	nx_s3_set_limits(c->s3, max, extra);
	nx_status st = nx_s3_request(c->s3, "GET", key, NULL, NULL, 0, &r, d);
	free(key);
	if (st != NX_OK)
		return -1;
	int ret;
	if (r.status == 200) {
		*data = r.body ? r.body : calloc(1, 1);
		*len = r.len;
		return 1;
	}
	/* a missing bucket is not a missing object: it is a store that cannot work */
	if (r.status == 404 && !(r.body && strstr((const char *)r.body, "<Code>NoSuchBucket</Code>")))
		ret = 0;
	else {
		fail(d, "GET", name, &r);
		ret = -1;
	}
	free(r.body);
	return ret;
}

static nx_status s3_put(void *be, const char *name, const void *data, size_t len, nx_diag *d)
{
	s3_cache *c = be;
	char *key = nx_xasprintf("%s%s", c->prefix, name);
	nx_s3_resp r;
	/* uploads get 1 s per 8 MiB on top of the budget */
	nx_s3_set_limits(c->s3, 0, (long)(len >> 23) * 1000);
	/* a non-NULL body even when empty: it selects the PUT-with-payload path */
	nx_status st = nx_s3_request(c->s3, "PUT", key, NULL, data ? data : "", len, &r, d);
	free(key);
	if (st == NX_OK && r.status != 200)
		st = fail(d, "PUT", name, &r);
	free(r.body);
	return st;
}

static nx_status s3_del(void *be, const char *name, nx_diag *d)
{
	s3_cache *c = be;
	char *key = nx_xasprintf("%s%s", c->prefix, name);
	nx_s3_resp r;
	nx_status st = nx_s3_request(c->s3, "DELETE", key, NULL, NULL, 0, &r, d);
	free(key);
	if (st == NX_OK && r.status != 204 && r.status != 200 && r.status != 404)
		st = fail(d, "DELETE", name, &r);
	free(r.body);
	return st;
}

static int64_t parse_time(const char *s)
{
	struct tm tm = {0};
	if (!s || sscanf(s, "%d-%d-%dT%d:%d:%d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min,
	                 &tm.tm_sec) != 6)
		return 0;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	return (int64_t)timegm(&tm);
}

/* ListObjectsV2, following continuation tokens. */
static nx_status s3_list(void *be, const char *prefix, nx_cache_obj **objs, int *n, nx_diag *d)
{
	s3_cache *c = be;
	*objs = NULL;
	*n = 0;
	char *full = nx_xasprintf("%s%s", c->prefix, prefix);
	char *eprefix = nx_s3_encode(full, false);
	char *token = NULL;
	nx_status st = NX_OK;
	size_t pl = strlen(c->prefix);
	for (;;) {
		/* parameters sorted by name: the canonical query SigV4 signs */
		char *etok = token ? nx_s3_encode(token, false) : NULL;
		size_t ql = strlen(eprefix) + (etok ? strlen(etok) : 0) + 64;
		char *q = malloc(ql);
		if (!q)
			abort();
		snprintf(q, ql, "%s%s%slist-type=2&prefix=%s", etok ? "continuation-token=" : "", etok ? etok : "",
		         etok ? "&" : "", eprefix);
		free(etok);
		nx_s3_resp r;
		st = nx_s3_request(c->s3, "GET", "", q, NULL, 0, &r, d);
		free(q);
		if (st != NX_OK)
			break;
		if (r.status != 200) {
			st = fail(d, "LIST", full, &r);
			free(r.body);
			break;
		}
		const char *p = r.body ? (const char *)r.body : "";
		for (;;) {
			const char *after;
			char *item = nx_s3_xml_get(p, "Contents", &after);
			if (!item)
				break;
			char *k = nx_s3_xml_get(item, "Key", NULL);
			char *sz = nx_s3_xml_get(item, "Size", NULL);
			char *lm = nx_s3_xml_get(item, "LastModified", NULL);
			if (k && strncmp(k, c->prefix, pl) == 0) {
				nx_cache_obj *nv = realloc(*objs, sizeof(*nv) * (size_t)(*n + 1));
				if (!nv)
					abort();
				*objs = nv;
				nv[*n].name = nx_xstrdup(k + pl);
				nv[*n].size = sz ? strtoull(sz, NULL, 10) : 0;
				nv[*n].mtime = parse_time(lm);
				++*n;
			}
			free(k);
			free(sz);
			free(lm);
			free(item);
			p = after;
		}
		char *trunc = r.body ? nx_s3_xml_get((const char *)r.body, "IsTruncated", NULL) : NULL;
		free(token);
		token = NULL;
		if (trunc && strcmp(trunc, "true") == 0)
			token = nx_s3_xml_get((const char *)r.body, "NextContinuationToken", NULL);
		free(trunc);
		free(r.body);
		if (!token)
			break;
	}
	free(token);
	free(eprefix);
	free(full);
	return st;
}

/* $TMPDIR/nxcc-locks-<uid>/<sha256(bucket/prefix/entry)[:32]>: one local
 * lock per entry, shared by every process of this user on this machine. */
static char *s3_lock_dir(void *be, const char *entry)
{
	s3_cache *c = be;
	const char *tmp = getenv("TMPDIR");
	if (!tmp || !*tmp)
		tmp = "/tmp";
	char base[4096];
	if (snprintf(base, sizeof(base), "%s/nxcc-locks-%ld", tmp, (long)getuid()) >= (int)sizeof(base))
		return NULL;
	if (mkdir(base, 0700) != 0 && errno != EEXIST)
		return NULL;
	/* The name is predictable: another user may have made it first (or a
	 * symlink by that name). Use it only when it is our own private
	 * directory, else run without the lock. */
	struct stat bs;
	if (lstat(base, &bs) != 0 || !S_ISDIR(bs.st_mode) || bs.st_uid != getuid() ||
	    (bs.st_mode & 077) != 0)
		return NULL;
	size_t n = strlen(c->bucket) + strlen(c->prefix) + strlen(entry) + 4;
	char *id = malloc(n);
	if (!id)
		abort();
	snprintf(id, n, "%s/%s%s", c->bucket, c->prefix, entry);
	char hex[65];
	nx_sha256_hex(id, strlen(id), hex);
	free(id);
	hex[32] = 0;
	size_t dn = strlen(base) + 40;
	char *dir = malloc(dn);
	if (!dir)
		abort();
	snprintf(dir, dn, "%s/%.32s", base, hex);
	if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
		free(dir);
		return NULL;
	}
	return dir;
}

static void s3_close(void *be)
{
	s3_cache *c = be;
	nx_s3_free(c->s3);
	free(c->bucket);
	free(c->prefix);
	free(c);
}

const nx_cache_backend nx_cache_s3_backend = {
	.kind = "s3",
	.get = s3_get,
	.put = s3_put,
	.del = s3_del,
	.list = s3_list,
	.lock_dir = s3_lock_dir,
	.close = s3_close,
};
