/* ir/diag.c — user diagnostics and internal compiler errors. */
#include "ir/ir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void nx_diag_clear(nx_diag *d)
{
	if (!d)
		return;
	free(d->file);
	free(d->inst);
	free(d->msg);
	free(d->src_line);
	memset(d, 0, sizeof(*d));
}

nx_status nx_diag_vset(nx_diag *d, nx_status st, const char *file, int line, int col,
                       const char *fmt, va_list ap)
{
	if (!d)
		return st;
	nx_diag_clear(d);
	d->status = st;
	d->file = nx_xstrdup(file);
	d->line = line;
	d->col = col;
	/* A NULL format is a caller bug; saying so here also keeps GCC's
	 * -Wformat-truncation from warning "null format string" on the path
	 * that recovering UBSan nonnull checks add. */
	NX_ASSERT(fmt != NULL);
	va_list ap2;
	va_copy(ap2, ap);
	int n = vsnprintf(NULL, 0, fmt, ap);
	d->msg = malloc((size_t)n + 1);
	if (!d->msg)
		abort();
	vsnprintf(d->msg, (size_t)n + 1, fmt, ap2);
	va_end(ap2);
	return st;
}

nx_status nx_diag_set(nx_diag *d, nx_status st, const char *file, int line, int col,
                      const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	nx_diag_vset(d, st, file, line, col, fmt, ap);
	va_end(ap);
	return st;
}

void nx_diag_set_inst(nx_diag *d, const char *inst)
{
	if (!d)
		return;
	free(d->inst);
	d->inst = nx_xstrdup(inst);
}

void nx_diag_set_src(nx_diag *d, const char *line_start, size_t len)
{
	if (!d)
		return;
	free(d->src_line);
	d->src_line = malloc(len + 1);
	if (!d->src_line)
		abort();
	memcpy(d->src_line, line_start, len);
	d->src_line[len] = 0;
}

char *nx_diag_format(const nx_diag *d)
{
	size_t cap = 256 + (d->msg ? strlen(d->msg) : 0) + (d->file ? strlen(d->file) : 0) +
	             (d->src_line ? 2 * strlen(d->src_line) + 8 : 0);
	char *s = malloc(cap);
	if (!s)
		abort();
	size_t n = 0;
	if (d->file)
		n += (size_t)snprintf(s + n, cap - n, "%s:", d->file);
	if (d->line > 0)
		n += (size_t)snprintf(s + n, cap - n, "%d:", d->line);
	if (d->line > 0 && d->col > 0)
		n += (size_t)snprintf(s + n, cap - n, "%d:", d->col);
	n += (size_t)snprintf(s + n, cap - n, "%serror: %s\n", n ? " " : "",
	                      d->msg ? d->msg : "unknown error");
	if (d->src_line) {
		n += (size_t)snprintf(s + n, cap - n, "  %s\n", d->src_line);
		if (d->col > 0) {
			n += (size_t)snprintf(s + n, cap - n, "  ");
			for (int i = 1; i < d->col && n + 2 < cap; i++)
				s[n++] = d->src_line[i - 1] == '\t' ? '\t' : ' ';
			n += (size_t)snprintf(s + n, cap - n, "^\n");
		}
	}
	return s;
}

static void default_ice(const char *file, int line, const char *msg)
{
	fprintf(stderr, "%s:%d: internal compiler error: %s\n", file, line, msg);
	abort();
}

static nx_ice_handler ice_handler = default_ice;

void nx_set_ice_handler(nx_ice_handler h)
{
	ice_handler = h ? h : default_ice;
}

_Noreturn void nx_ice(const char *file, int line, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	ice_handler(file, line, buf);
	abort(); /* a handler must not return */
}
