/* ir/map.c — the shared hash tables and name generator (ir/map.h). */
#include "ir/map.h"

#include <stdlib.h>
#include <string.h>

static size_t ptr_hash(const void *p)
{
	uint64_t x = (uint64_t)(uintptr_t)p;
	x ^= x >> 33;
	x *= UINT64_C(0xff51afd7ed558ccd);
	x ^= x >> 33;
	return (size_t)x;
}

static void ptrmap_alloc(nx_ptrmap *m, size_t cap)
{
	m->cap = cap;
	m->n = 0;
	m->keys = calloc(cap, sizeof *m->keys);
	m->vals = calloc(cap, sizeof *m->vals);
	NX_ASSERT(m->keys && m->vals);
}

void nx_ptrmap_init(nx_ptrmap *m, size_t n)
{
	size_t cap = 16;
	while (cap < 2 * n + 16)
		cap *= 2;
	ptrmap_alloc(m, cap);
}

void nx_ptrmap_free(nx_ptrmap *m)
{
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof *m);
}

void nx_ptrmap_put(nx_ptrmap *m, const void *k, intptr_t v)
{
	NX_ASSERT(k);
	if (2 * (m->n + 1) > m->cap) {
		nx_ptrmap old = *m;
		ptrmap_alloc(m, old.cap ? 2 * old.cap : 64);
		for (size_t i = 0; i < old.cap; i++)
			if (old.keys[i])
				nx_ptrmap_put(m, old.keys[i], old.vals[i]);
		free(old.keys);
		free(old.vals);
	}
	size_t i = ptr_hash(k) & (m->cap - 1);
	while (m->keys[i] && m->keys[i] != k)
		i = (i + 1) & (m->cap - 1);
	if (!m->keys[i])
		m->n++;
	m->keys[i] = k;
	m->vals[i] = v;
}

intptr_t nx_ptrmap_get(const nx_ptrmap *m, const void *k, intptr_t missing)
{
	if (!m->cap)
		return missing;
	for (size_t i = ptr_hash(k) & (m->cap - 1); m->keys[i]; i = (i + 1) & (m->cap - 1))
		if (m->keys[i] == k)
			return m->vals[i];
	return missing;
}

void nx_ptrmap_del(nx_ptrmap *m, const void *k)
{
	if (!m->cap)
		return;
	size_t i = ptr_hash(k) & (m->cap - 1);
	while (m->keys[i] && m->keys[i] != k)
		i = (i + 1) & (m->cap - 1);
	if (!m->keys[i])
		return;
	m->keys[i] = NULL;
	m->n--;
	/* re-insert the rest of the cluster (deletion under linear probing) */
	for (size_t j = (i + 1) & (m->cap - 1); m->keys[j]; j = (j + 1) & (m->cap - 1)) {
		const void *kk = m->keys[j];
		intptr_t vv = m->vals[j];
		m->keys[j] = NULL;
		m->n--;
		nx_ptrmap_put(m, kk, vv);
	}
}

static uint64_t str_hash(const char *s)
{
	uint64_t h = UINT64_C(1469598103934665603); /* FNV-1a */
	while (*s)
		h = (h ^ (unsigned char)*s++) * UINT64_C(1099511628211);
	return h;
}

bool nx_strset_has(const nx_strset *s, const char *k)
{
	if (!s->cap)
		return false;
	for (size_t j = str_hash(k) & (s->cap - 1); s->v[j]; j = (j + 1) & (s->cap - 1))
		if (strcmp(s->v[j], k) == 0)
			return true;
	return false;
}

void nx_strset_add(nx_strset *s, const char *k)
{
	if (2 * (s->n + 1) > s->cap) {
		nx_strset ns = {calloc(s->cap ? 2 * s->cap : 256, sizeof(char *)), s->cap ? 2 * s->cap : 256, 0};
		NX_ASSERT(ns.v);
		for (size_t i = 0; i < s->cap; i++)
			if (s->v[i])
				nx_strset_add(&ns, s->v[i]);
		free(s->v);
		*s = ns;
	}
	size_t j = str_hash(k) & (s->cap - 1);
	while (s->v[j]) {
		if (strcmp(s->v[j], k) == 0)
			return;
		j = (j + 1) & (s->cap - 1);
	}
	s->v[j] = k;
	s->n++;
}

void nx_strset_free(nx_strset *s)
{
	free(s->v);
	memset(s, 0, sizeof *s);
}

/* Appends the decimal digits of v (>= 0) at p; returns the end. */
static char *put_uint(char *p, int64_t v)
{
	char tmp[24];
	int k = 0;
	do
		tmp[k++] = (char)('0' + v % 10);
	while ((v /= 10) > 0);
	while (k)
		*p++ = tmp[--k];
	return p;
}

/* Built by hand, not with snprintf: at O1 every op becomes a kernel of its
 * own and snprintf-based naming was half of the fusion pass's time on
 * llama2. */
const char *nx_fresh_name(nx_strset *s, nx_arena *a, const char *base, int64_t mid, int64_t *counter,
                          bool try_base)
{
	size_t bl = strlen(base);
	if (try_base && !nx_strset_has(s, base)) {
		char *n = nx_arena_alloc(a, bl + 1);
		memcpy(n, base, bl + 1);
		nx_strset_add(s, n);
		return n;
	}
	for (;;) {
		char *n = nx_arena_alloc(a, bl + 50);
		memcpy(n, base, bl);
		char *p = n + bl;
		if (mid >= 0) {
			*p++ = '_';
			p = put_uint(p, mid);
		}
		*p++ = '.';
		p = put_uint(p, (*counter)++);
		*p = 0;
		if (!nx_strset_has(s, n)) {
			nx_strset_add(s, n);
			return n;
		}
	}
}
