/* ir/hlo/read_lex.c — character-level scanning for the HLO text reader:
 * positions, diagnostics, whitespace/comments, names, numbers, strings and
 * raw balanced values. The text is not NUL-terminated: every read checks len. */
#include "ir/hlo/read_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void rd_linecol(nx_rd *r, size_t off, int *line, int *col)
{
	if (off > r->len)
		off = r->len;
	if (off < r->lc_off) {
		r->lc_off = 0;
		r->lc_line = 1;
		r->lc_line_start = 0;
	}
	const char *s = r->s;
	size_t i = r->lc_off;
	while (i < off) {
		const char *nl = memchr(s + i, '\n', off - i);
		if (!nl)
			break;
		i = (size_t)(nl - s) + 1;
		r->lc_line++;
		r->lc_line_start = i;
	}
	r->lc_off = off;
	*line = r->lc_line;
	*col = (int)(off - r->lc_line_start) + 1;
}

/* Returns the offset of the first byte that is not valid UTF-8, or len. */
static size_t utf8_bad(const unsigned char *s, size_t len)
{
	size_t i = 0;
	while (i < len) {
		unsigned char c = s[i];
		if (c < 0x80) {
			i++;
			continue;
		}
		int n;
		uint32_t cp;
		if (c >= 0xc2 && c <= 0xdf) {
			n = 1;
			cp = c & 0x1f;
		} else if (c >= 0xe0 && c <= 0xef) {
			n = 2;
			cp = c & 0x0f;
		} else if (c >= 0xf0 && c <= 0xf4) {
			n = 3;
			cp = c & 0x07;
		} else {
			return i;
		}
		if (i + (size_t)n >= len)
			return i;
		for (int k = 1; k <= n; k++) {
			if ((s[i + (size_t)k] & 0xc0) != 0x80)
				return i;
			cp = (cp << 6) | (s[i + (size_t)k] & 0x3f);
		}
		if ((n == 2 && cp < 0x800) || (n == 3 && (cp < 0x10000 || cp > 0x10ffff)) ||
		    (cp >= 0xd800 && cp <= 0xdfff))
			return i;
		i += (size_t)n + 1;
	}
	return len;
}

bool rd_err(nx_rd *r, size_t off, const char *fmt, ...)
{
	if (r->failed)
		return false;
	r->failed = true;
	/* At the end of a file ending in a newline, point after the last line
	 * rather than at an empty line past it. */
	if (off >= r->len && r->len > 0 && r->s[r->len - 1] == '\n')
		off = r->len - 1;
	int line, col;
	rd_linecol(r, off, &line, &col);
	va_list ap;
	va_start(ap, fmt);
	nx_diag_vset(r->d, NX_ERR_INPUT, r->file, line, col, fmt, ap);
	va_end(ap);
	size_t ls = r->lc_line_start, le = ls;
	while (le < r->len && r->s[le] != '\n')
		le++;
	if (le > ls && r->s[le - 1] == '\r')
		le--;
	/* the source line is printed to a terminal: keep it to printable ASCII
	 * (invalid UTF-8 is one of the errors we report) */
	char *buf = malloc(le - ls + 1);
	bool bad_utf8 = utf8_bad((const unsigned char *)r->s + ls, le - ls) < le - ls;
	if (buf) {
		for (size_t k = ls; k < le; k++) {
			unsigned char c = (unsigned char)r->s[k];
			bool ok = c == '\t' || (c >= 0x20 && c < 0x7f) || (c >= 0x80 && !bad_utf8);
			buf[k - ls] = ok ? (char)c : '?';
		}
		nx_diag_set_src(r->d, buf, le - ls);
		free(buf);
	}
	if (r->inst)
		nx_diag_set_inst(r->d, r->inst);
	return false;
}

bool rd_check_utf8(nx_rd *r)
{
	size_t bad = utf8_bad((const unsigned char *)r->s, r->len);
	if (bad < r->len)
		return rd_err(r, bad, "invalid UTF-8 byte 0x%02x", (unsigned char)r->s[bad]);
	const char *nul = memchr(r->s, 0, r->len);
	if (nul)
		return rd_err(r, (size_t)(nul - r->s), "NUL byte in HLO text");
	return true;
}

bool rd_ws(nx_rd *r)
{
	const char *s = r->s;
	size_t i = r->pos, n = r->len;
	for (;;) {
		while (i < n && (s[i] == ' ' || s[i] == '\n' || s[i] == '\t' || s[i] == '\r'))
			i++;
		if (i + 1 < n && s[i] == '/' && s[i + 1] == '/') {
			const char *nl = memchr(s + i, '\n', n - i);
			i = nl ? (size_t)(nl - s) + 1 : n;
			continue;
		}
		if (i + 1 < n && s[i] == '/' && s[i + 1] == '*') {
			size_t start = i;
			i += 2;
			while (i + 1 < n && !(s[i] == '*' && s[i + 1] == '/'))
				i++;
			if (i + 1 >= n) {
				r->pos = n;
				return rd_err(r, start, "unterminated comment");
			}
			i += 2;
			continue;
		}
		break;
	}
	r->pos = i;
	return true;
}

bool rd_eof(nx_rd *r) { return r->pos >= r->len; }

char rd_peek(nx_rd *r) { return r->pos < r->len ? r->s[r->pos] : 0; }

bool rd_accept(nx_rd *r, char c)
{
	if (!rd_ws(r))
		return false;
	if (r->pos < r->len && r->s[r->pos] == c) {
		r->pos++;
		return true;
	}
	return false;
}

/* A short description of what is at pos, for "found ..." in messages. */
static const char *found(nx_rd *r, char *buf, size_t n)
{
	if (r->pos >= r->len)
		return "end of file";
	unsigned char c = (unsigned char)r->s[r->pos];
	if (rd_is_name_char((char)c) || c == '%') {
		size_t k = r->pos + 1;
		while (k < r->len && k - r->pos < 40 && rd_is_name_char(r->s[k]))
			k++;
		snprintf(buf, n, "'%.*s'", (int)(k - r->pos), r->s + r->pos);
	} else if (c == '\n') {
		snprintf(buf, n, "end of line");
	} else if (c < 0x80 && c >= 0x20) {
		snprintf(buf, n, "'%c'", c);
	} else {
		snprintf(buf, n, "byte 0x%02x", c);
	}
	return buf;
}

bool rd_expect(nx_rd *r, char c, const char *what)
{
	if (rd_accept(r, c))
		return true;
	if (r->failed)
		return false;
	char buf[64];
	return rd_err(r, r->pos, "expected '%c' %s, found %s", c, what, found(r, buf, sizeof buf));
}

bool rd_expect_arrow(nx_rd *r, const char *what)
{
	if (r->pos + 1 < r->len && r->s[r->pos] == '-' && r->s[r->pos + 1] == '>') {
		r->pos += 2;
		return true;
	}
	if (r->failed)
		return false;
	char buf[64];
	return rd_err(r, r->pos, "expected '->' %s, found %s", what, found(r, buf, sizeof buf));
}

bool rd_is_name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '.' || c == '-' || c == '$';
}

bool rd_name(nx_rd *r, const char **out, size_t *n)
{
	if (!rd_ws(r))
		return false;
	size_t i = r->pos;
	if (i < r->len && r->s[i] == '%')
		i++;
	size_t start = i;
	while (i < r->len && rd_is_name_char(r->s[i]))
		i++;
	if (i == start)
		return false;
	*out = r->s + start;
	*n = i - start;
	r->pos = i;
	return true;
}

bool rd_word(nx_rd *r, const char **out, size_t *n)
{
	if (!rd_ws(r))
		return false;
	size_t i = r->pos;
	while (i < r->len && ((r->s[i] >= 'a' && r->s[i] <= 'z') || (r->s[i] >= 'A' && r->s[i] <= 'Z') ||
	                      (r->s[i] >= '0' && r->s[i] <= '9') || r->s[i] == '_'))
		i++;
	if (i == r->pos)
		return false;
	*out = r->s + r->pos;
	*n = i - r->pos;
	r->pos = i;
	return true;
}

bool rd_int(nx_rd *r, int64_t *v, const char *what)
{
	if (!rd_int_raw(r, v, what))
		return false;
	size_t i = r->pos;
	if (i < r->len && (rd_is_name_char(r->s[i]) && r->s[i] != '-' && r->s[i] != '.')) {
		size_t k = i;
		while (k < r->len && rd_is_name_char(r->s[k]) && k - i < 40)
			k++;
		return rd_err(r, i, "unexpected '%.*s' after integer %s", (int)(k - i), r->s + i, what);
	}
	return true;
}

bool rd_int_raw(nx_rd *r, int64_t *v, const char *what)
{
	if (!rd_ws(r))
		return false;
	size_t i = r->pos, start = i;
	bool neg = false;
	if (i < r->len && (r->s[i] == '-' || r->s[i] == '+'))
		neg = r->s[i++] == '-';
	if (i >= r->len || r->s[i] < '0' || r->s[i] > '9') {
		char buf[64];
		return rd_err(r, start, "expected integer %s, found %s", what, found(r, buf, sizeof buf));
	}
	uint64_t x = 0;
	while (i < r->len && r->s[i] >= '0' && r->s[i] <= '9') {
		unsigned dgt = (unsigned)(r->s[i] - '0');
		if (x > (UINT64_MAX - dgt) / 10 || (!neg && x * 10 + dgt > (uint64_t)INT64_MAX) ||
		    (neg && x * 10 + dgt > (uint64_t)INT64_MAX + 1))
			return rd_err(r, start, "integer %s is out of range", what);
		x = x * 10 + dgt;
		i++;
	}
	*v = neg ? (int64_t)(0 - x) : (int64_t)x;
	r->pos = i;
	return true;
}

bool rd_bool(nx_rd *r, bool *v, const char *what)
{
	const char *w;
	size_t n;
	size_t start = (rd_ws(r), r->pos);
	if (rd_word(r, &w, &n)) {
		if (n == 4 && memcmp(w, "true", 4) == 0) {
			*v = true;
			return true;
		}
		if (n == 5 && memcmp(w, "false", 5) == 0) {
			*v = false;
			return true;
		}
	}
	r->pos = start;
	char buf[64];
	return rd_err(r, start, "expected true or false %s, found %s", what, found(r, buf, sizeof buf));
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

bool rd_string(nx_rd *r, nx_arena *a, const char **out)
{
	if (!rd_ws(r))
		return false;
	size_t start = r->pos;
	if (start >= r->len || r->s[start] != '"') {
		char buf[64];
		return rd_err(r, start, "expected string, found %s", found(r, buf, sizeof buf));
	}
	size_t i = start + 1;
	bool esc = false;
	while (i < r->len && r->s[i] != '"') {
		if (r->s[i] == '\\') {
			esc = true;
			i++;
		}
		i++;
	}
	if (i >= r->len)
		return rd_err(r, start, "unterminated string");
	size_t end = i;
	r->pos = end + 1;
	if (!esc) {
		*out = nx_arena_strndup(a, r->s + start + 1, end - start - 1);
		return true;
	}
	char *buf = nx_arena_alloc(a, end - start);
	size_t o = 0;
	for (size_t k = start + 1; k < end; k++) {
		char c = r->s[k];
		if (c != '\\') {
			buf[o++] = c;
			continue;
		}
		c = r->s[++k];
		switch (c) {
		case 'n': buf[o++] = '\n'; break;
		case 't': buf[o++] = '\t'; break;
		case 'r': buf[o++] = '\r'; break;
		case '0': case '1': case '2': case '3': case '4': case '5': case '6': case '7': {
			int v = 0, nd = 0;
			while (nd < 3 && k < end && r->s[k] >= '0' && r->s[k] <= '7') {
				v = v * 8 + (r->s[k] - '0');
				k++;
				nd++;
			}
			k--;
			buf[o++] = (char)v;
			break;
		}
		case 'x': {
			int v = 0, nd = 0;
			while (nd < 2 && k + 1 < end && hexval(r->s[k + 1]) >= 0) {
				v = v * 16 + hexval(r->s[++k]);
				nd++;
			}
			if (nd == 0)
				return rd_err(r, k - 1, "bad \\x escape in string");
			buf[o++] = (char)v;
			break;
		}
		default: buf[o++] = c; break; /* \" \\ \' and the rest stand for themselves */
		}
	}
	buf[o] = 0;
	*out = buf;
	return true;
}

bool rd_depth_push(nx_rd *r)
{
	if (++r->depth > NX_READ_MAX_DEPTH)
		return rd_err(r, r->pos, "nesting too deep (more than %d levels)", NX_READ_MAX_DEPTH);
	return true;
}

void rd_depth_pop(nx_rd *r) { r->depth--; }

const char *rd_strndup(nx_rd *r, const char *s, size_t n)
{
	return nx_arena_strndup(r->a, s, n);
}

bool rd_ivec_braced(nx_rd *r, nx_ivec *v, const char *what)
{
	if (!rd_expect(r, '{', what))
		return false;
	int64_t tmp[16];
	int64_t *buf = tmp;
	int n = 0, cap = 16;
	if (!rd_accept(r, '}')) {
		for (;;) {
			int64_t x;
			if (!rd_int(r, &x, what))
				return false;
			if (n == cap) {
				int64_t *nb = nx_arena_alloc(&r->scratch, sizeof(int64_t) * (size_t)cap * 2);
				memcpy(nb, buf, sizeof(int64_t) * (size_t)n);
				buf = nb;
				cap *= 2;
			}
			buf[n++] = x;
			if (rd_accept(r, '}'))
				break;
			if (!rd_expect(r, ',', what))
				return false;
		}
	}
	*v = nx_ivec_dup(r->a, buf, n);
	return true;
}

/* Scans balanced text from r->pos. Stops (without consuming) at a ',' or a
 * newline at depth 0, or at an unmatched closer. Strings are skipped whole. */
static bool scan_balanced(nx_rd *r, bool stop_nl, size_t *end)
{
	char stack[NX_READ_MAX_DEPTH];
	int sp = 0;
	size_t i = r->pos;
	while (i < r->len) {
		char c = r->s[i];
		if (c == '"') {
			size_t q = i++;
			while (i < r->len && r->s[i] != '"')
				i += r->s[i] == '\\' ? 2 : 1;
			if (i >= r->len)
				return rd_err(r, q, "unterminated string");
			i++;
			continue;
		}
		if (c == '{' || c == '(' || c == '[') {
			if (sp == NX_READ_MAX_DEPTH)
				return rd_err(r, i, "nesting too deep (more than %d levels)", NX_READ_MAX_DEPTH);
			stack[sp++] = c == '{' ? '}' : c == '(' ? ')' : ']';
		} else if (c == '}' || c == ')' || c == ']') {
			if (sp == 0)
				break;
			if (stack[sp - 1] != c)
				return rd_err(r, i, "expected '%c', found '%c'", stack[sp - 1], c);
			sp--;
			if (sp == 0 && !stop_nl) {
				i++;
				break;
			}
		} else if (sp == 0 && (c == ',' || (stop_nl && c == '\n'))) {
			break;
		}
		i++;
	}
	if (sp > 0)
		return rd_err(r, r->len, "expected '%c' before end of file", stack[sp - 1]);
	*end = i;
	return true;
}

bool rd_raw_value(nx_rd *r, const char **out)
{
	while (r->pos < r->len && (r->s[r->pos] == ' ' || r->s[r->pos] == '\t'))
		r->pos++;
	size_t start = r->pos, end;
	if (!scan_balanced(r, true, &end))
		return false;
	size_t e = end;
	while (e > start && (r->s[e - 1] == ' ' || r->s[e - 1] == '\t' || r->s[e - 1] == '\r'))
		e--;
	*out = nx_arena_strndup(r->a, r->s + start, e - start);
	r->pos = end;
	return true;
}

bool rd_raw_braced(nx_rd *r, const char **out)
{
	if (!rd_ws(r))
		return false;
	size_t start = r->pos, end;
	if (start >= r->len || r->s[start] != '{')
		return rd_expect(r, '{', "to start the value");
	if (!scan_balanced(r, false, &end))
		return false;
	*out = nx_arena_strndup(r->a, r->s + start + 1, end - start - 2);
	r->pos = end;
	return true;
}
