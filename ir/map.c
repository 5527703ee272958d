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

static uint32_t str_hash(const char *s, size_t n)
{
	uint32_t h = 2166136261u; /* FNV-1a */
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 16777619u;
	return h;
}

static nx_strmap_ent *str_slot(const nx_strmap *m, const char *k, size_t n, uint32_t h)
{
	size_t mask = m->cap - 1;
	for (size_t i = h & mask;; i = (i + 1) & mask) {
		nx_strmap_ent *e = &m->e[i];
		if (e->gen != m->gen || (e->hash == h && e->len == n && memcmp(e->key, k, n) == 0))
			return e;
	}
}

bool nx_strmap_find(const nx_strmap *m, const char *k, size_t len, intptr_t *val)
{
	if (!m->cap)
		return false;
	const nx_strmap_ent *e = str_slot(m, k, len, str_hash(k, len));
	if (e->gen != m->gen)
		return false;
	if (val)
		*val = e->val;
	return true;
}

intptr_t nx_strmap_get(const nx_strmap *m, const char *k, intptr_t missing)
{
	intptr_t v;
	return nx_strmap_find(m, k, strlen(k), &v) ? v : missing;
}

bool nx_strmap_add(nx_strmap *m, const char *k, size_t len, intptr_t v, intptr_t *old)
{
	if (2 * (m->n + 1) > m->cap) {
		size_t ncap = m->cap ? 2 * m->cap : 256;
		nx_strmap_ent *ne = calloc(ncap, sizeof *ne);
		NX_ASSERT(ne);
		uint32_t ng = 1; /* fresh slots have gen 0 */
		for (size_t i = 0; i < m->cap; i++) {
			const nx_strmap_ent *e = &m->e[i];
			if (e->gen != m->gen)
				continue;
			size_t j = e->hash & (ncap - 1);
			while (ne[j].gen == ng)
				j = (j + 1) & (ncap - 1);
			ne[j] = *e;
			ne[j].gen = ng;
		}
		free(m->e);
		m->e = ne;
		m->cap = ncap;
		m->gen = ng;
	}
	uint32_t h = str_hash(k, len);
	nx_strmap_ent *e = str_slot(m, k, len, h);
	if (e->gen == m->gen) {
		if (old)
			*old = e->val;
		return false;
	}
	*e = (nx_strmap_ent){k, len, h, m->gen, v};
	m->n++;
	return true;
}

void nx_strmap_clear(nx_strmap *m)
{
	m->n = 0;
	if (++m->gen == 0) { /* wrapped: stale entries could look live */
		memset(m->e, 0, m->cap * sizeof *m->e);
		m->gen = 1;
	}
}

void nx_strmap_free(nx_strmap *m)
{
	free(m->e);
	memset(m, 0, sizeof *m);
}

const nx_strmap_ent *nx_strmap_at(const nx_strmap *m, size_t i)
{
	return i < m->cap && m->e[i].gen == m->gen ? &m->e[i] : NULL;
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
const char *nx_fresh_name(nx_strmap *s, nx_arena *a, const char *base, int64_t mid, int64_t *counter,
                          bool try_base)
{
	size_t bl = strlen(base);
	if (try_base && !nx_strmap_find(s, base, bl, NULL)) {
		char *n = nx_arena_alloc(a, bl + 1);
		memcpy(n, base, bl + 1);
		nx_strmap_add(s, n, bl, 0, NULL);
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
		if (nx_strmap_add(s, n, (size_t)(p - n), 0, NULL))
			return n;
	}
}
