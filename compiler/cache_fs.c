/* compiler/cache_fs.c — the compile cache's local directory backend.
 * Objects are files under the root; a put is temp file + fsync + rename, so a
 * reader sees the old file or the new one, never a part. The temporary is
 * made by mkstemp (O_CREAT|O_EXCL, a random name) in the entry directory, so
 * a symlink planted there by another user of a shared cache is never opened
 * for writing; reads open with O_NOFOLLOW. */
#include "compiler/cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct {
	char *root;
} fs_cache;

static char *join(const char *a, const char *b)
{
	size_t n = strlen(a) + strlen(b) + 2;
	char *s = malloc(n);
	if (!s)
		abort();
	snprintf(s, n, "%s/%s", a, b);
	return s;
}

/* mkdir -p; the cache is shared between users of a machine, so directories
 * are world writable with the sticky bit like /var/tmp itself (minus what
 * umask removes): anyone may add an entry, nobody may rename or delete
 * another user's files. */
static int mkdirs(const char *path)
{
	char *p = nx_xstrdup(path);
	if (!p)
		abort();
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = 0;
		if (mkdir(p, 01777) != 0 && errno != EEXIST) {
			free(p);
			return -1;
		}
		*s = '/';
	}
	int r = mkdir(p, 01777) != 0 && errno != EEXIST ? -1 : 0;
	free(p);
	return r;
}

void *nx_cache_fs_open(const char *root, nx_diag *d)
{
	if (mkdirs(root) != 0) {
		nx_diag_set(d, NX_ERR_IO, root, 0, 0, "cannot create compile cache directory: %s", strerror(errno));
		return NULL;
	}
	fs_cache *c = calloc(1, sizeof(*c));
	if (!c)
		abort();
	/* an absolute root keeps "cache hit (<where>)" meaningful from anywhere */
	c->root = realpath(root, NULL);
	if (!c->root)
		c->root = nx_xstrdup(root);
	return c;
}

static int fs_get(void *be, const char *name, uint8_t **data, size_t *len, nx_diag *d)
{
	fs_cache *c = be;
	char *path = join(c->root, name);
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0) {
		int e = errno;
		free(path);
		if (e == ENOENT || e == ENOTDIR || e == ELOOP)
			return 0; /* a symlink in the cache is not an object */
		nx_diag_set(d, NX_ERR_IO, NULL, 0, 0, "cannot read %s: %s", name, strerror(e));
		return -1;
	}
	struct stat st;
	if (fstat(fd, &st) != 0) {
		close(fd);
		free(path);
		nx_diag_set(d, NX_ERR_IO, NULL, 0, 0, "cannot stat %s", name);
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		/* a directory or FIFO where an object belongs: absent, so the next
		 * store replaces it (fs_put moves it aside) */
		close(fd);
		free(path);
		return 0;
	}
	size_t n = (size_t)st.st_size;
	uint8_t *buf = malloc(n ? n : 1);
	if (!buf)
		abort();
	size_t got = 0;
	while (got < n) {
		ssize_t k = read(fd, buf + got, n - got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		got += (size_t)k;
	}
	close(fd);
	free(path);
	if (got != n) {
		free(buf);
		nx_diag_set(d, NX_ERR_IO, NULL, 0, 0, "short read of %s", name);
		return -1;
	}
	*data = buf;
	*len = n;
	return 1;
}

/* rename(2), except that a directory squatting on the destination (which
 * would make every later store fail) is first moved aside under a
 * ".tmp." name that `nxcc cache prune` removes. */
static int rename_over(const char *tmp, const char *path)
{
	if (rename(tmp, path) == 0)
		return 0;
	if (errno != EISDIR && errno != ENOTEMPTY && errno != EEXIST)
		return -1;
	struct stat st;
	if (lstat(path, &st) != 0 || !S_ISDIR(st.st_mode))
		return -1;
	if (rmdir(path) != 0) {
		size_t n = strlen(path) + 32;
		char *aside = malloc(n);
		if (!aside)
			abort();
		snprintf(aside, n, "%s.tmp.dir.XXXXXX", path);
		int fd = mkstemp(aside); /* reserves a unique name */
		bool moved = fd >= 0 && close(fd) == 0 && unlink(aside) == 0 && rename(path, aside) == 0;
		free(aside);
		if (!moved)
			return -1;
	}
	return rename(tmp, path);
}

static nx_status fs_put(void *be, const char *name, const void *data, size_t len, nx_diag *d)
{
	fs_cache *c = be;
	char *path = join(c->root, name);
	char *slash = strrchr(path, '/');
	*slash = 0;
	int r = mkdirs(path);
	*slash = '/';
	if (r != 0) {
		nx_status st = nx_diag_set(d, NX_ERR_IO, NULL, 0, 0, "cannot create directory for %s: %s", name,
		                           strerror(errno));
		free(path);
		return st;
	}
	size_t tn = strlen(path) + 48;
	char *tmp = malloc(tn);
	if (!tmp)
		abort();
	snprintf(tmp, tn, "%s.tmp.XXXXXX", path);
	nx_status st = NX_OK;
	int fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		st = nx_diag_set(d, NX_ERR_IO, NULL, 0, 0, "cannot write %s: %s", name, strerror(errno));
		goto out;
	}
	/* mkstemp makes 0600; other users of a shared cache must read it */
	mode_t um = umask(0);
	umask(um);
	if (fchmod(fd, 0666 & ~um) != 0) {
		st = nx_diag_set(d, NX_ERR_IO, NULL, 0, 0, "cannot write %s: %s", name, strerror(errno));
		close(fd);
		unlink(tmp);
		goto out;
	}
	const char *p = data;
	size_t left = len;
	while (left) {
		ssize_t k = write(fd, p, left);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			st = nx_diag_set(d, NX_ERR_IO, NULL, 0, 0, "cannot write %s: %s", name, strerror(errno));
			close(fd);
			unlink(tmp);
			goto out;
		}
		p += k;
		left -= (size_t)k;
	}
	if (fsync(fd) != 0 || close(fd) != 0 || rename_over(tmp, path) != 0) {
		st = nx_diag_set(d, NX_ERR_IO, NULL, 0, 0, "cannot write %s: %s", name, strerror(errno));
		unlink(tmp);
	}
out:
	free(tmp);
	free(path);
	return st;
}

static nx_status fs_del(void *be, const char *name, nx_diag *d)
{
	fs_cache *c = be;
	char *path = join(c->root, name);
	nx_status st = NX_OK;
	if (unlink(path) != 0 && errno != ENOENT && errno != ENOTDIR)
		st = nx_diag_set(d, NX_ERR_IO, NULL, 0, 0, "cannot delete %s: %s", name, strerror(errno));
	/* drop the entry directory once it is empty (fails harmlessly otherwise) */
	char *slash = strrchr(path, '/');
	if (st == NX_OK && slash) {
		*slash = 0;
		rmdir(path);
	}
	free(path);
	return st;
}

typedef struct {
	nx_cache_obj *v;
	int n;
} obj_vec;

/* Walks up to three levels (<version>/<key>/<file>) below root. */
static void walk(const char *root, const char *rel, int depth, obj_vec *out)
{
	char *dir = rel[0] ? join(root, rel) : nx_xstrdup(root);
	DIR *dp = opendir(dir);
	if (!dp) {
		free(dir);
		return;
	}
	struct dirent *de;
	while ((de = readdir(dp))) {
		if (de->d_name[0] == '.')
			continue;
		char *r = rel[0] ? join(rel, de->d_name) : nx_xstrdup(de->d_name);
		char *full = join(root, r);
		struct stat st;
		if (lstat(full, &st) == 0) {
			if (S_ISDIR(st.st_mode) && depth < 2) {
				walk(root, r, depth + 1, out);
			} else if (S_ISREG(st.st_mode) && depth == 2 && !strstr(de->d_name, ".tmp.")) {
				nx_cache_obj *nv = realloc(out->v, sizeof(*nv) * (size_t)(out->n + 1));
				if (!nv)
					abort();
				out->v = nv;
				out->v[out->n].name = r;
				out->v[out->n].size = (uint64_t)st.st_size;
				out->v[out->n].mtime = (int64_t)st.st_mtime;
				out->n++;
				r = NULL;
			}
		}
		free(full);
		free(r);
	}
	closedir(dp);
	free(dir);
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return (flag == FTW_DP ? rmdir(path) : unlink(path)) != 0 && errno != ENOENT ? -1 : 0;
}

/* Removes "<version>/<key>/<file>.tmp.*" (files a killed writer left, or a
 * directory moved aside by rename_over) last changed before `before`.
 * Never follows a symlink: a link is removed, not its target. */
static int fs_sweep(void *be, int64_t before)
{
	fs_cache *c = be;
	int removed = 0;
	DIR *d0 = opendir(c->root);
	for (struct dirent *v; d0 && (v = readdir(d0));) {
		if (v->d_name[0] == '.')
			continue;
		char *vdir = join(c->root, v->d_name);
		DIR *d1 = opendir(vdir);
		for (struct dirent *k; d1 && (k = readdir(d1));) {
			if (k->d_name[0] == '.')
				continue;
			char *kdir = join(vdir, k->d_name);
			DIR *d2 = opendir(kdir);
			for (struct dirent *f; d2 && (f = readdir(d2));) {
				if (!strstr(f->d_name, ".tmp."))
					continue;
				char *full = join(kdir, f->d_name);
				struct stat st;
				if (lstat(full, &st) == 0 && (int64_t)st.st_mtime < before &&
				    nftw(full, rm_one, 16, FTW_DEPTH | FTW_PHYS) == 0)
					removed++;
				free(full);
			}
			if (d2)
				closedir(d2);
			free(kdir);
		}
		if (d1)
			closedir(d1);
		free(vdir);
	}
	if (d0)
		closedir(d0);
	return removed;
}

static nx_status fs_list(void *be, const char *prefix, nx_cache_obj **objs, int *n, nx_diag *d)
{
	(void)d;
	fs_cache *c = be;
	obj_vec v = {0};
	walk(c->root, "", 0, &v);
	/* the walk is cheap; filtering afterwards keeps it simple */
	int k = 0;
	for (int i = 0; i < v.n; i++) {
		if (strncmp(v.v[i].name, prefix, strlen(prefix)) == 0)
			v.v[k++] = v.v[i];
		else
			free(v.v[i].name);
	}
	*objs = v.v;
	*n = k;
	return NX_OK;
}

static char *fs_lock_dir(void *be, const char *entry)
{
	fs_cache *c = be;
	char *dir = join(c->root, entry);
	if (mkdirs(dir) != 0) {
		free(dir);
		return NULL;
	}
	return dir;
}

static void fs_close(void *be)
{
	fs_cache *c = be;
	free(c->root);
	free(c);
}

const nx_cache_backend nx_cache_fs_backend = {
	.kind = "dir",
	.get = fs_get,
	.put = fs_put,
	.del = fs_del,
	.list = fs_list,
	.lock_dir = fs_lock_dir,
	.sweep = fs_sweep,
	.close = fs_close,
};
