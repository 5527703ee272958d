/* ir/file_atomic.c — temp file + rename writes (see file_atomic.h).
 *
 * Test hook: NX_FAULT_WRITE=N:ERR (ERR one of ENOSPC, EIO, EACCES) makes the
 * N-th committed file of this process (1-based) fail with that error, for the
 * fault-injection tests where no small tmpfs can be mounted. */
#include "ir/file_atomic.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static unsigned long seq;

static int fault_errno(void)
{
	static long count;
	const char *f = getenv("NX_FAULT_WRITE");
	if (!f || !*f)
		return 0;
	char *end;
	long n = strtol(f, &end, 10);
	if (*end != ':' || __atomic_add_fetch(&count, 1, __ATOMIC_RELAXED) != n)
		return 0;
	const char *e = end + 1;
	return strcmp(e, "EIO") == 0 ? EIO : strcmp(e, "EACCES") == 0 ? EACCES : ENOSPC;
}

nx_status nx_afile_open(nx_afile *af, const char *path, nx_diag *d)
{
	memset(af, 0, sizeof *af);
	if (strcmp(path, "-") == 0) {
		af->f = stdout;
		return NX_OK;
	}
	/* Renaming over a device or FIFO (-o /dev/null) would replace the node
	 * itself: those are written in place. */
	struct stat sb;
	if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode) && !S_ISDIR(sb.st_mode)) {
		af->f = fopen(path, "wb");
		af->direct = true;
		return af->f ? NX_OK : nx_diag_set(d, NX_ERR_IO, path, 0, 0, "cannot write: %s", strerror(errno));
	}
	af->path = nx_xasprintf("%s", path);
	af->tmp = nx_xasprintf("%s.tmp.%ld.%lu", path, (long)getpid(), __atomic_fetch_add(&seq, 1, __ATOMIC_RELAXED));
	int fd = open(af->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666); /* umask applies */
	if (fd >= 0 && !(af->f = fdopen(fd, "wb")))
		close(fd);
	if (!af->f) {
		nx_status st = nx_diag_set(d, NX_ERR_IO, path, 0, 0, "cannot write: %s", strerror(errno));
		unlink(af->tmp);
		free(af->path);
		free(af->tmp);
		memset(af, 0, sizeof *af);
		return st;
	}
	return NX_OK;
}

void nx_afile_abort(nx_afile *af)
{
	if (af->direct && af->f)
		fclose(af->f);
	if (af->tmp) {
		if (af->f)
			fclose(af->f);
		unlink(af->tmp);
	}
	free(af->path);
	free(af->tmp);
	memset(af, 0, sizeof *af);
}

nx_status nx_afile_commit(nx_afile *af, bool sync, nx_diag *d)
{
	if (!af->tmp) { /* stdout, or a device written in place */
		int fe = fault_errno();
		bool ok = !fe && fflush(af->f) == 0 && !ferror(af->f);
		if (fe)
			errno = fe;
		if (af->direct && fclose(af->f) != 0)
			ok = false;
		memset(af, 0, sizeof *af);
		return ok ? NX_OK : nx_diag_set(d, NX_ERR_IO, "-", 0, 0, "write failed: %s", strerror(errno));
	}
	int fe = fault_errno();
	bool ok = !fe && fflush(af->f) == 0 && !ferror(af->f);
	int err = fe ? fe : ok ? 0 : errno;
	if (ok && sync && fsync(fileno(af->f)) != 0)
		ok = false, err = errno;
	if (fclose(af->f) != 0 && ok)
		ok = false, err = errno;
	af->f = NULL;
	if (ok && rename(af->tmp, af->path) != 0)
		ok = false, err = errno;
	nx_status st = NX_OK;
	if (!ok)
		st = nx_diag_set(d, NX_ERR_IO, af->path, 0, 0, "write failed: %s", strerror(err ? err : EIO));
	nx_afile_abort(af); /* removes the temporary file if it is still there */
	return st;
}

nx_status nx_write_file_atomic(const char *path, const void *data, size_t len, bool sync, nx_diag *d)
{
	nx_afile af;
	if (nx_afile_open(&af, path, d) != NX_OK)
		return d->status;
	if (len && fwrite(data, 1, len, af.f) != len) {
		nx_status st = nx_diag_set(d, NX_ERR_IO, path, 0, 0, "write failed: %s", strerror(errno));
		if (af.tmp || af.direct)
			nx_afile_abort(&af);
		return st;
	}
	return nx_afile_commit(&af, sync, d);
}

nx_status nx_mkdir_p(const char *dir, nx_diag *d)
{
	char *p = nx_xasprintf("%s", dir);
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = 0;
		if (mkdir(p, 0777) != 0 && errno != EEXIST) {
			nx_status st = nx_diag_set(d, NX_ERR_IO, p, 0, 0, "cannot create directory: %s", strerror(errno));
			free(p);
			return st;
		}
		*s = '/';
	}
	nx_status st = NX_OK;
	struct stat sb;
	if (mkdir(p, 0777) != 0 && !(errno == EEXIST && stat(p, &sb) == 0 && S_ISDIR(sb.st_mode)))
		st = nx_diag_set(d, NX_ERR_IO, p, 0, 0, "cannot create directory: %s", strerror(errno == EEXIST ? ENOTDIR : errno));
	free(p);
	return st;
}
