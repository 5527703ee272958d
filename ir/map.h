/* ir/map.h — the shared hash tables and name generator (one of each: every
 * layer uses these instead of private copies).
 *
 * nx_ptrmap: pointer -> integer (or pointer, through intptr_t), open
 * addressing with linear probing; grows itself. Never iterated by callers,
 * so nothing depends on where the allocator placed the keys.
 * nx_strset: a set of strings (not copied: they must outlive the set).
 * nx_fresh_name: "base.N" names that are not in a set. */
#ifndef NX_MAP_H
#define NX_MAP_H

#include "ir/ir.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct nx_ptrmap {
	const void **keys;
	intptr_t *vals;
	size_t cap, n;
} nx_ptrmap;

/* An empty map with room for n keys before it grows ({0} is also empty). */
void nx_ptrmap_init(nx_ptrmap *m, size_t n);
void nx_ptrmap_free(nx_ptrmap *m);
/* Sets k (not NULL) to v. */
void nx_ptrmap_put(nx_ptrmap *m, const void *k, intptr_t v);
/* k's value, or missing. */
intptr_t nx_ptrmap_get(const nx_ptrmap *m, const void *k, intptr_t missing);
void nx_ptrmap_del(nx_ptrmap *m, const void *k);

typedef struct nx_strset {
	const char **v;
	size_t cap, n;
} nx_strset;

bool nx_strset_has(const nx_strset *s, const char *k);
/* Adds k (kept by pointer); no-op when present. */
void nx_strset_add(nx_strset *s, const char *k);
void nx_strset_free(nx_strset *s);

/* A name not in s, allocated in a and added to s: base itself when
 * try_base and free, else "base.N" ("base_M.N" when mid >= 0) with N taken
 * from *counter (post-incremented until free). */
const char *nx_fresh_name(nx_strset *s, nx_arena *a, const char *base, int64_t mid, int64_t *counter,
                          bool try_base);

#endif
