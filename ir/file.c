/* ir/file.c — writing an output file whole or not at all.
 *
 * A regular file is written to a private temporary in its directory
 * (mkstemp: O_EXCL, a random name) and renamed over the path, so a reader,
 * a full disk or a crash leaves the old file or no file, never a part.
 * Devices and FIFOs (-o /dev/null) are written in place.
 *
 * Test hook: NX_FAULT_WRITE=N:ERR (ERR one of ENOSPC, EIO, EACCES) makes the
 * N-th write of this process (1-based) fail with that error, for the
 * fault-injection tests where no small tmpfs can be mounted. */
#include "ir/ir.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int fault_errno(void)
{
	static long count;
	const char *f = getenv("NX_FAULT_WRITE");
	if (!f || !*f)
		return 0;
	char *end;
	long n = strtol(f, &end, 10);
	if (*end != ':' || ++count != n)
		return 0;
	const char *e = end + 1;
	return strcmp(e, "EIO") == 0 ? EIO : strcmp(e, "EACCES") == 0 ? EACCES : ENOSPC;
}

static bool write_all(int fd, const void *data, size_t len)
{
	const char *p = data;
	int fe = fault_errno();
	if (fe) {
		errno = fe;
		return false;
	}
	while (len) {
		ssize_t k = write(fd, p, len);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return false;
		p += k;
		len -= (size_t)k;
	}
	return true;
}

nx_status nx_write_file_atomic(const char *path, const void *data, size_t len, bool sync, nx_diag *d)
{
	struct stat sb;
	if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode)) {
		int fd = open(path, O_WRONLY | O_CLOEXEC);
		if (fd < 0)
			return nx_diag_set(d, NX_ERR_IO, path, 0, 0, "cannot write: %s", strerror(errno));
		bool ok = write_all(fd, data, len);
		int e = errno;
		if (close(fd) != 0 && ok)
			ok = false, e = errno;
		return ok ? NX_OK : nx_diag_set(d, NX_ERR_IO, path, 0, 0, "write failed: %s", strerror(e));
	}
	size_t n = strlen(path);
	char *tmp = malloc(n + 16);
	if (!tmp)
		return nx_diag_set(d, NX_ERR_IO, path, 0, 0, "out of memory");
	snprintf(tmp, n + 16, "%s.tmp.XXXXXX", path);
	int fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		nx_status st = nx_diag_set(d, NX_ERR_IO, path, 0, 0, "cannot write: %s", strerror(errno));
		free(tmp);
		return st;
	}
	mode_t um = umask(0);
	umask(um);
	bool ok = fchmod(fd, 0666 & ~um) == 0 && write_all(fd, data, len) && (!sync || fsync(fd) == 0);
	int e = errno;
	if (close(fd) != 0 && ok)
		ok = false, e = errno;
	if (ok && rename(tmp, path) != 0)
		ok = false, e = errno;
	if (!ok)
		unlink(tmp);
	free(tmp);
	return ok ? NX_OK : nx_diag_set(d, NX_ERR_IO, path, 0, 0, "write failed: %s", strerror(e));
}
