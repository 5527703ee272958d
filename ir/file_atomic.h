/* ir/file_atomic.h — output files that appear whole or not at all.
 *
 * Every file nxcc writes for a user (.neff, .npy outputs, profiles, reports,
 * dumps) goes through here: the data goes to a temporary file in the same
 * directory ("PATH.tmp.PID.N"), and only a complete, closed (optionally
 * fsync'd) file is renamed onto PATH. A full disk or any other write error
 * removes the temporary file and leaves PATH as it was. */
#ifndef NX_FILE_ATOMIC_H
#define NX_FILE_ATOMIC_H

#include "ir/ir.h"

#include <stdio.h>

typedef struct nx_afile {
	FILE *f;    /* write here (stdio buffering; errors are sticky) */
	char *path; /* the destination */
	char *tmp;  /* the temporary file; NULL for "-" (stdout) and devices */
	bool direct; /* a device or FIFO, written in place */
} nx_afile;

/* Opens a temporary file next to path ("-" writes to stdout). */
nx_status nx_afile_open(nx_afile *af, const char *path, nx_diag *d);
/* Flushes, checks for write errors, fsyncs when sync, closes and renames.
 * On any failure the temporary file is removed and *d names path. */
nx_status nx_afile_commit(nx_afile *af, bool sync, nx_diag *d);
/* Closes and removes the temporary file (after an error of the caller's). */
void nx_afile_abort(nx_afile *af);

/* nx_write_file_atomic (the whole of data at path) is declared in ir/ir.h. */

/* Creates dir and its missing parents (mode 0777 & ~umask). */
nx_status nx_mkdir_p(const char *dir, nx_diag *d);

#endif
