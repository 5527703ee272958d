/* ir/arena.c — bump allocator that owns everything in a module. */
#include "ir/ir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NX_ARENA_CHUNK (64 * 1024)

struct nx_arena_chunk {
	nx_arena_chunk *next;
	size_t size, used;
	_Alignas(16) unsigned char data[];
};

void nx_arena_init(nx_arena *a)
{
	a->head = NULL;
	a->used = 0;
}

void nx_arena_free(nx_arena *a)
{
	nx_arena_chunk *c = a->head;
	while (c) {
		nx_arena_chunk *next = c->next;
		free(c);
		c = next;
	}
	a->head = NULL;
	a->used = 0;
}

static nx_arena_chunk *chunk_new(size_t size)
{
	nx_arena_chunk *c = malloc(sizeof(*c) + size);
	if (!c)
		nx_ice(__FILE__, __LINE__, "out of memory (%zu bytes)", size);
	c->size = size;
	c->used = 0;
	c->next = NULL;
	return c;
}

void *nx_arena_alloc(nx_arena *a, size_t n)
{
	n = (n + 15) & ~(size_t)15;
	if (n == 0)
		n = 16;
	nx_arena_chunk *c = a->head;
	if (!c || c->size - c->used < n) {
		if (n > NX_ARENA_CHUNK / 4) {
			/* big block: own chunk, linked behind the current one */
			nx_arena_chunk *big = chunk_new(n);
			big->used = n;
			if (c) {
				big->next = c->next;
				c->next = big;
			} else {
				a->head = big;
			}
			a->used += n;
			memset(big->data, 0, n);
			return big->data;
		}
		c = chunk_new(NX_ARENA_CHUNK);
		c->next = a->head;
		a->head = c;
	}
	void *p = c->data + c->used;
	c->used += n;
	a->used += n;
	memset(p, 0, n);
	return p;
}

void *nx_arena_dup(nx_arena *a, const void *p, size_t n)
{
	void *q = nx_arena_alloc(a, n);
	if (n)
		memcpy(q, p, n);
	return q;
}

void *nx_arena_grow(nx_arena *a, void *p, size_t oldn, size_t newn, size_t elem)
{
	void *q = nx_arena_alloc(a, newn * elem);
	if (p && oldn)
		memcpy(q, p, (oldn < newn ? oldn : newn) * elem);
	return q;
}

char *nx_arena_strndup(nx_arena *a, const char *s, size_t n)
{
	char *q = nx_arena_alloc(a, n + 1);
	memcpy(q, s, n);
	q[n] = 0;
	return q;
}

char *nx_arena_strdup(nx_arena *a, const char *s)
{
	return s ? nx_arena_strndup(a, s, strlen(s)) : NULL;
}

char *nx_arena_printf(nx_arena *a, const char *fmt, ...)
{
	/* A NULL format is a caller bug; saying so here also keeps GCC's
	 * -Wformat-truncation from warning "null format string" on the path
	 * that recovering UBSan nonnull checks add. */
	NX_ASSERT(fmt != NULL);
	va_list ap, ap2;
	va_start(ap, fmt);
	va_copy(ap2, ap);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	char *s = nx_arena_alloc(a, (size_t)n + 1);
	vsnprintf(s, (size_t)n + 1, fmt, ap2);
	va_end(ap2);
	return s;
}

/* ---------------------------------------------------------- heap helpers */

char *nx_xstrdup(const char *s)
{
	if (!s)
		return NULL;
	size_t n = strlen(s);
	char *q = malloc(n + 1);
	if (!q)
		abort();
	memcpy(q, s, n + 1);
	return q;
}

char *nx_xasprintf(const char *fmt, ...)
{
	NX_ASSERT(fmt != NULL);
	va_list ap, ap2;
	va_start(ap, fmt);
	va_copy(ap2, ap);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	char *s = malloc((size_t)n + 1);
	if (!s)
		abort();
	vsnprintf(s, (size_t)n + 1, fmt, ap2);
	va_end(ap2);
	return s;
}

void *nx_xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (!q) {
		/* no diagnostic can be built without memory: say so and stop */
		fprintf(stderr, "nxcc: out of memory (allocating %zu bytes)\n", n);
		abort();
	}
	return q;
}
