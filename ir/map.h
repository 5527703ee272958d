/* ir/map.h — the shared hash tables and name generator (one of each: every
 * layer uses these instead of private copies).
 *
 * nx_ptrmap: pointer -> integer (or pointer, through intptr_t), open
 * addressing with linear probing; grows itself. Never iterated by callers,
 * so nothing depends on where the allocator placed the keys.
 * nx_strmap: string -> integer (keys not copied), clearable in O(1).
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

/* String -> integer; keys are (pointer, length), not copied (they must
 * outlive their entries) and need no NUL. nx_strmap_clear empties it in
 * O(1) (a generation count), so one map can serve many scopes. */
typedef struct nx_strmap_ent {
	const char *key;
	size_t len;
	uint32_t hash, gen; /* live when gen == the map's */
	intptr_t val;
} nx_strmap_ent;

typedef struct nx_strmap {
	nx_strmap_ent *e;
	size_t cap, n;
	uint32_t gen;
} nx_strmap;

/* Whether k is present; its value in *val (when val is not NULL). */
bool nx_strmap_find(const nx_strmap *m, const char *k, size_t len, intptr_t *val);
/* Adds k -> v and returns true, or returns false (and the value in *old,
 * when not NULL) when k is present. */
bool nx_strmap_add(nx_strmap *m, const char *k, size_t len, intptr_t v, intptr_t *old);
/* The value of NUL-terminated k, or missing. */
intptr_t nx_strmap_get(const nx_strmap *m, const char *k, intptr_t missing);
void nx_strmap_clear(nx_strmap *m);
void nx_strmap_free(nx_strmap *m);
/* Entry i (0 <= i < m->cap) if live, else NULL: for freeing owned keys. */
const nx_strmap_ent *nx_strmap_at(const nx_strmap *m, size_t i);

/* A name not in s, allocated in a and added to s: base itself when
 * try_base and free, else "base.N" ("base_M.N" when mid >= 0) with N taken
 * from *counter (post-incremented until free). */
const char *nx_fresh_name(nx_strmap *s, nx_arena *a, const char *base, int64_t mid, int64_t *counter,
                          bool try_base);

#endif
