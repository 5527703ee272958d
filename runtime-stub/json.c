/* runtime-stub/json.c — recursive-descent JSON reader. */
#include "runtime-stub/json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
	const char *s, *end;
	char *err;
	size_t errlen;
	int failed;
} rd;

static void fail(rd *r, const char *msg)
{
	if (!r->failed)
		snprintf(r->err, r->errlen, "%s at byte %ld", msg, (long)(r->end - r->s));
	r->failed = 1;
}

static void ws(rd *r)
{
	while (r->s < r->end && (*r->s == ' ' || *r->s == '\n' || *r->s == '\t' || *r->s == '\r'))
		r->s++;
}

static void clear(nx_json *j)
{
	free(j->str);
	for (int i = 0; i < j->n; i++) {
		if (j->keys)
			free(j->keys[i]);
		clear(&j->items[i]);
	}
	free(j->keys);
	free(j->items);
}

static char *str(rd *r)
{
	r->s++; /* opening quote */
	size_t cap = 16, n = 0;
	char *o = malloc(cap);
	while (r->s < r->end && *r->s != '"') {
		char c = *r->s++;
		if ((unsigned char)c < 0x20) {
			fail(r, "control character in string");
			break;
		}
		if (c == '\\') {
			if (r->s >= r->end) {
				fail(r, "bad escape");
				break;
			}
			c = *r->s++;
			switch (c) {
			case 'n': c = '\n'; break;
			case 't': c = '\t'; break;
			case 'r': c = '\r'; break;
			case 'b': c = '\b'; break;
			case 'f': c = '\f'; break;
			case 'u': {
				unsigned v = 0;
				for (int i = 0; i < 4; i++) {
					if (r->s >= r->end) {
						fail(r, "bad \\u escape");
						break;
					}
					char h = *r->s++;
					v = v * 16 + (unsigned)(h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : 99);
					if (v > 0xffff)
						fail(r, "bad \\u escape");
				}
				c = v < 0x80 ? (char)v : '?';
				break;
			}
			case '"': case '\\': case '/': break;
			default: fail(r, "bad escape");
			}
		}
		if (n + 2 > cap)
			o = realloc(o, cap *= 2);
		o[n++] = c;
	}
	if (r->s >= r->end)
		fail(r, "unterminated string");
	else
		r->s++;
	o[n] = 0;
	return o;
}

static void value(rd *r, nx_json *j, int depth);

static void push(nx_json *j, int *cap)
{
	if (j->n == *cap) {
		*cap = *cap ? *cap * 2 : 4;
		j->items = realloc(j->items, sizeof *j->items * (size_t)*cap);
		if (j->type == NX_J_OBJ)
			j->keys = realloc(j->keys, sizeof *j->keys * (size_t)*cap);
	}
	memset(&j->items[j->n], 0, sizeof j->items[0]);
	if (j->type == NX_J_OBJ)
		j->keys[j->n] = NULL;
	j->n++;
}

static void value(rd *r, nx_json *j, int depth)
{
	memset(j, 0, sizeof *j);
	ws(r);
	if (depth > 32)
		{ fail(r, "nesting too deep"); return; }
	if (r->s >= r->end)
		{ fail(r, "unexpected end"); return; }
	char c = *r->s;
	if (c == '{' || c == '[') {
		j->type = c == '{' ? NX_J_OBJ : NX_J_ARR;
		char close = c == '{' ? '}' : ']';
		int cap = 0;
		r->s++;
		ws(r);
		if (r->s < r->end && *r->s == close) {
			r->s++;
			return;
		}
		while (!r->failed) {
			push(j, &cap);
			if (j->type == NX_J_OBJ) {
				ws(r);
				if (r->s >= r->end || *r->s != '"')
					{ fail(r, "expected a key"); return; }
				j->keys[j->n - 1] = str(r);
				ws(r);
				if (r->s >= r->end || *r->s != ':')
					{ fail(r, "expected ':'"); return; }
				r->s++;
			}
			value(r, &j->items[j->n - 1], depth + 1);
			ws(r);
			if (r->s < r->end && *r->s == ',') {
				r->s++;
				continue;
			}
			if (r->s < r->end && *r->s == close) {
				r->s++;
				return;
			}
			{ fail(r, "expected ',' or a closing bracket"); return; }
		}
		return;
	}
	if (c == '"') {
		j->type = NX_J_STR;
		j->str = str(r);
		return;
	}
	if ((size_t)(r->end - r->s) >= 4 && memcmp(r->s, "null", 4) == 0) {
		r->s += 4;
		return;
	}
	if ((size_t)(r->end - r->s) >= 4 && memcmp(r->s, "true", 4) == 0) {
		j->type = NX_J_BOOL;
		j->inum = 1;
		r->s += 4;
		return;
	}
	if ((size_t)(r->end - r->s) >= 5 && memcmp(r->s, "false", 5) == 0) {
		j->type = NX_J_BOOL;
		r->s += 5;
		return;
	}
	if (c == '-' || (c >= '0' && c <= '9')) {
		char tmp[64];
		size_t n = 0;
		int frac = 0;
		while (r->s < r->end && n < sizeof tmp - 1 && strchr("+-0123456789.eE", *r->s)) {
			if (strchr(".eE", *r->s))
				frac = 1;
			tmp[n++] = *r->s++;
		}
		tmp[n] = 0;
		char *e;
		j->type = NX_J_NUM;
		j->num = strtod(tmp, &e);
		if (*e)
			{ fail(r, "bad number"); return; }
		if (!frac) {
			long long v = strtoll(tmp, &e, 10);
			j->inum = v;
			j->is_int = (j->num < 9.2e18 && j->num > -9.2e18);
		}
		return;
	}
	fail(r, "unexpected character");
}

nx_json *nx_json_parse(const char *s, size_t len, char *err, size_t errlen)
{
	rd r = {s, s + len, err, errlen, 0};
	nx_json *j = calloc(1, sizeof *j);
	value(&r, j, 0);
	ws(&r);
	if (!r.failed && r.s != r.end)
		fail(&r, "trailing characters");
	if (r.failed) {
		nx_json_free(j);
		return NULL;
	}
	return j;
}

void nx_json_free(nx_json *j)
{
	if (!j)
		return;
	clear(j);
	free(j);
}

const nx_json *nx_json_get(const nx_json *o, const char *key)
{
	if (!o || o->type != NX_J_OBJ)
		return NULL;
	for (int i = 0; i < o->n; i++)
		if (o->keys[i] && strcmp(o->keys[i], key) == 0)
			return &o->items[i];
	return NULL;
}
