/* ir/hlo/read_file.c — read an HLO module from a file, text or proto, detected
 * from the content (never from the file name). */
#include "ir/ir.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* HLO text starts (after whitespace and comments) with "HloModule". A proto
 * starts with a field tag; field 1 (name, length-delimited) gives 0x0a. */
bool nx_looks_like_text(const char *buf, size_t len)
{
	size_t i = 0;
	for (;;) {
		while (i < len && (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\n' || buf[i] == '\r'))
			i++;
		if (i + 1 < len && buf[i] == '/' && buf[i + 1] == '/') {
			while (i < len && buf[i] != '\n')
				i++;
			continue;
		}
		if (i + 1 < len && buf[i] == '/' && buf[i + 1] == '*') {
			i += 2;
			while (i + 1 < len && !(buf[i] == '*' && buf[i + 1] == '/'))
				i++;
			i += 2;
			continue;
		}
		break;
	}
	if (i >= len)
		return true; /* empty: let the text reader say so */
	if (len - i >= 9 && memcmp(buf + i, "HloModule", 9) == 0)
		return true;
	/* Mostly printable ASCII/UTF-8 in the first bytes: text (the text reader
	 * gives the better error). */
	size_t n = len - i < 256 ? len - i : 256, bad = 0;
	for (size_t k = 0; k < n; k++) {
		unsigned char c = (unsigned char)buf[i + k];
		if (c < 0x09 || (c > 0x0d && c < 0x20) || c == 0x7f)
			bad++;
	}
	return bad == 0;
}

char *nx_read_whole_file(const char *path, size_t *len, nx_diag *d)
{
	FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
	if (!f) {
		nx_diag_set(d, NX_ERR_IO, path, 0, 0, "cannot open: %s", strerror(errno));
		return NULL;
	}
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap + 1);
	for (;;) {
		if (n == cap) {
			char *nb = buf ? realloc(buf, 2 * cap + 1) : NULL;
			if (!nb) {
				free(buf);
				if (f != stdin)
					fclose(f);
				nx_diag_set(d, NX_ERR_IO, path, 0, 0, "out of memory reading file");
				return NULL;
			}
			buf = nb;
			cap *= 2;
		}
		size_t k = fread(buf + n, 1, cap - n, f);
		n += k;
		if (k == 0)
			break;
	}
	bool err = ferror(f) != 0;
	if (f != stdin)
		fclose(f);
	if (err) {
		free(buf);
		nx_diag_set(d, NX_ERR_IO, path, 0, 0, "read error");
		return NULL;
	}
	buf[n] = 0;
	*len = n;
	return buf;
}

nx_module *nx_read_file(const char *path, nx_diag *d)
{
	size_t n;
	char *buf = nx_read_whole_file(path, &n, d);
	if (!buf)
		return NULL;
	nx_module *m = nx_looks_like_text(buf, n) ? nx_read_text(buf, n, path, d)
	                                          : nx_read_proto(buf, n, path, d);
	free(buf);
	return m;
}
