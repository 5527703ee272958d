/* tests/unit/testutil.h — shared by the cmocka unit tests. */
#ifndef NX_TESTUTIL_H
#define NX_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"

/* ../shared/corpus, or $NX_CORPUS. */
static inline const char *tu_corpus(void)
{
	const char *c = getenv("NX_CORPUS");
	return c ? c : "../shared/corpus";
}

/* Reads a file into a malloc'd NUL-terminated buffer; NULL if absent. */
static inline char *tu_read(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *buf = malloc((size_t)n + 1);
	size_t got = fread(buf, 1, (size_t)n, f);
	fclose(f);
	buf[got] = 0;
	if (len)
		*len = got;
	return buf;
}

/* Parses HLO text, failing the test with the diagnostic on error. */
static inline nx_module *tu_parse(const char *text)
{
	nx_diag d = {0};
	nx_module *m = nx_read_text(text, strlen(text), "test.hlo", &d);
	if (!m) {
		char *s = nx_diag_format(&d);
		print_error("%s", s);
		free(s);
		nx_diag_clear(&d);
		fail();
	}
	return m;
}

/* True when the text reader parses a trivial module: tests that read HLO
 * files skip (with a message) on a branch where the reader is missing. */
static inline bool tu_reader_ready(void)
{
	const char *t = "HloModule m\n\nENTRY e {\n  ROOT p = f32[] parameter(0)\n}\n";
	nx_diag d = {0};
	nx_module *m = nx_read_text(t, strlen(t), "probe.hlo", &d);
	nx_diag_clear(&d);
	nx_module_free(m);
	return m != NULL;
}

/* Lists the entries of dir ending in suffix (sorted); returns the count. */
static int tu_cmpstr(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}
static inline int tu_list(const char *dir, const char *suffix, char ***out)
{
	DIR *d = opendir(dir);
	int n = 0, cap = 16;
	char **v = malloc(sizeof(char *) * (size_t)cap);
	if (d) {
		struct dirent *e;
		size_t sl = strlen(suffix);
		while ((e = readdir(d))) {
			size_t l = strlen(e->d_name);
			if (e->d_name[0] == '.' || l < sl || strcmp(e->d_name + l - sl, suffix) != 0)
				continue;
			if (n == cap)
				v = realloc(v, sizeof(char *) * (size_t)(cap *= 2));
			v[n++] = strdup(e->d_name);
		}
		closedir(d);
	}
	qsort(v, (size_t)n, sizeof(char *), tu_cmpstr);
	*out = v;
	return n;
}
static inline void tu_list_free(char **v, int n)
{
	for (int i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

#endif
