/* backend/lower_hbm.c — HBM buffers of the lowering: a first-fit free list
 * whose neighbouring free blocks coalesce. A block taken from the list waits
 * for what its earlier contents' accesses and writes needed (war, written);
 * a merged block waits for all of its parts. */
#include "backend/lower.h"

#include <stdlib.h>
#include <string.h>

/* The free list is searched first-fit in list order; freemax, a max tree
 * over the sizes (leaf k = freel[k], 0 past nfree), finds that entry
 * without scanning the list: unrolled loops free tens of thousands of
 * buffers. */
static void free_set(nx_lower *L, int k, int64_t v)
{
	int i = k + L->capfree;
	L->freemax[i] = v;
	for (i /= 2; i >= 1; i /= 2)
		L->freemax[i] = L->freemax[2 * i] > L->freemax[2 * i + 1] ? L->freemax[2 * i] : L->freemax[2 * i + 1];
}

static int free_first_fit(const nx_lower *L, int64_t bytes)
{
	if (!L->nfree || L->freemax[1] < bytes)
		return -1;
	int i = 1;
	while (i < L->capfree)
		i = L->freemax[2 * i] >= bytes ? 2 * i : 2 * i + 1;
	return i - L->capfree;
}

#define FKEY(x) ((const void *)(intptr_t)((x) + 1))

static void free_add(nx_lower *L, nx_lbuf *b)
{
	if (L->nfree == L->capfree) {
		L->capfree = L->capfree ? L->capfree * 2 : 64;
		L->freel = nx_xrealloc(L->freel, (size_t)L->capfree * sizeof *L->freel);
		free(L->freemax);
		L->freemax = nx_xrealloc(NULL, (size_t)L->capfree * 2 * sizeof *L->freemax);
		memset(L->freemax, 0, (size_t)L->capfree * 2 * sizeof *L->freemax);
		for (int k = 0; k < L->nfree; k++)
			L->freemax[L->capfree + k] = L->freel[k]->bytes;
		for (int i = L->capfree - 1; i >= 1; i--)
			L->freemax[i] = L->freemax[2 * i] > L->freemax[2 * i + 1] ? L->freemax[2 * i] : L->freemax[2 * i + 1];
	}
	b->fidx = L->nfree;
	L->freel[L->nfree++] = b;
	free_set(L, L->nfree - 1, b->bytes);
	nx_ptrmap_put(&L->fstart, FKEY(b->off), (intptr_t)b);
	nx_ptrmap_put(&L->fend, FKEY(b->off + b->bytes), (intptr_t)b);
}

static void free_remove(nx_lower *L, int k)
{
	nx_lbuf *f = L->freel[k];
	nx_ptrmap_del(&L->fstart, FKEY(f->off));
	nx_ptrmap_del(&L->fend, FKEY(f->off + f->bytes));
	L->freel[k] = L->freel[--L->nfree];
	L->freel[k]->fidx = k;
	free_set(L, k, L->freel[k]->bytes);
	free_set(L, L->nfree, 0);
}

nx_lbuf *nx_l_alloc(nx_lower *L, int64_t bytes)
{
	bytes = (bytes + 63) & ~(int64_t)63;
	if (bytes == 0)
		bytes = 64;
	int k = free_first_fit(L, bytes);
	if (k >= 0) {
		nx_lbuf *f = L->freel[k];
		NX_ASSERT(k < L->nfree && f->bytes >= bytes);
		nx_lbuf *b = nx_arena_alloc(&L->a, sizeof *b);
		b->off = f->off;
		b->bytes = bytes;
		b->war = f->war;
		nx_l_max(&b->war, &f->written);
		if (f->bytes == bytes) {
			free_remove(L, k);
		} else {
			nx_ptrmap_del(&L->fstart, FKEY(f->off));
			f->off += bytes;
			f->bytes -= bytes;
			nx_ptrmap_put(&L->fstart, FKEY(f->off), (intptr_t)f);
			free_set(L, k, f->bytes);
		}
		return b;
	}
	nx_lbuf *b = nx_arena_alloc(&L->a, sizeof *b);
	b->off = L->hbm_top;
	b->bytes = bytes;
	L->hbm_top += bytes;
	return b;
}

/* A freed buffer joins the free list, merged with free neighbours (the
 * merged block waits for all of them: its war covers their accesses). */
void nx_l_release_buf(nx_lower *L, nx_lbuf *b)
{
	if (--b->refs > 0 || b->pinned)
		return;
	nx_lbuf *m = nx_arena_alloc(&L->a, sizeof *m);
	*m = *b;
	nx_l_max(&m->war, &m->written);
	nx_lbuf *lft = (nx_lbuf *)nx_ptrmap_get(&L->fend, FKEY(b->off), 0);
	if (lft) {
		m->off = lft->off;
		m->bytes += lft->bytes;
		nx_l_max(&m->war, &lft->war);
		nx_l_max(&m->war, &lft->written);
		free_remove(L, lft->fidx);
	}
	nx_lbuf *rgt = (nx_lbuf *)nx_ptrmap_get(&L->fstart, FKEY(b->off + b->bytes), 0);
	if (rgt) {
		m->bytes += rgt->bytes;
		nx_l_max(&m->war, &rgt->war);
		nx_l_max(&m->war, &rgt->written);
		free_remove(L, rgt->fidx);
	}
	m->written = m->war;
	free_add(L, m);
}

