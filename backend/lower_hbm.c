/* backend/lower_hbm.c — HBM buffers of the lowering: a first-fit free list
 * whose neighbouring free blocks coalesce when the program would otherwise
 * outgrow the target's HBM. A block taken from the list waits for what its
 * earlier contents' accesses and writes needed (war, written); a merged
 * block waits for all of its parts. Also the refusal, before anything is
 * emitted, of values no HBM plan can hold (nx_l_hbm_refuse_unplannable). */
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

/* Merges every free block with the free blocks that follow it in HBM
 * (the merged block's war covers all parts); sweeps until nothing merges. */
static void coalesce_all(nx_lower *L)
{
	bool merged = true;
	while (merged) {
		merged = false;
		for (int k = 0; k < L->nfree; k++) {
			nx_lbuf *f = L->freel[k];
			nx_lbuf *r;
			while ((r = (nx_lbuf *)nx_ptrmap_get(&L->fstart, FKEY(f->off + f->bytes), 0)) != NULL) {
				free_remove(L, r->fidx);
				nx_ptrmap_del(&L->fend, FKEY(f->off + f->bytes));
				f->bytes += r->bytes;
				nx_l_max(&f->war, &r->war);
				nx_l_max(&f->war, &r->written);
				f->written = f->war;
				nx_ptrmap_put(&L->fend, FKEY(f->off + f->bytes), (intptr_t)f);
				free_set(L, f->fidx, f->bytes);
				merged = true;
			}
		}
	}
}

nx_lbuf *nx_l_alloc(nx_lower *L, int64_t bytes)
{
	bytes = (bytes + 63) & ~(int64_t)63;
	if (bytes == 0)
		bytes = 64;
	int k = free_first_fit(L, bytes);
	if (k < 0 && L->nfree > 1 && L->hbm_top + bytes > L->t->hbm_bytes) {
		coalesce_all(L);
		k = free_first_fit(L, bytes);
	}
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

/* A freed buffer joins the free list as it is. Neighbouring free blocks are
 * merged only under pressure (nx_l_alloc, when the program would otherwise
 * grow past the target's HBM): a merged block waits for all of its parts,
 * so merging eagerly made small allocations wait for unrelated kernels
 * (bert_single_graph_2: 628.5 -> 709.9 us simulated). */
void nx_l_release_buf(nx_lower *L, nx_lbuf *b)
{
	if (--b->refs > 0 || b->pinned)
		return;
	nx_lbuf *m = nx_arena_alloc(&L->a, sizeof *m);
	*m = *b;
	nx_l_max(&m->war, &m->written);
	m->written = m->war;
	free_add(L, m);
}

/* ------------------------------------------------- sizes before emitting */
static bool shape_unbounded(const nx_shape *s)
{
	if (s->type == NX_TUPLE) {
		for (int k = 0; k < s->ntuple; k++)
			if (shape_unbounded(s->tuple[k]))
				return true;
		return false;
	}
	for (int k = 0; s->dynamic && k < s->rank; k++)
		if (s->dynamic[k] == NX_DIM_UNBOUNDED)
			return true;
	return false;
}

/* The largest single array of a shape: a tuple is its leaves, each its own
 * buffer (a while loop's state tuple may sum past HBM while every leaf fits;
 * whether they fit together is the HBM plan's question); -1 past 2^63. */
static int64_t largest_leaf_bytes(const nx_shape *s)
{
	if (s->type != NX_TUPLE)
		return nx_shape_bytes(s);
	int64_t big = 0;
	for (int k = 0; k < s->ntuple; k++) {
		int64_t b = largest_leaf_bytes(s->tuple[k]);
		if (b < 0)
			return -1;
		if (b > big)
			big = b;
	}
	return big;
}

/* Sizes known before emitting are checked before emitting: a value larger
 * than the core's HBM (f32[2^40]) is refused at once instead of after
 * minutes of emitting instructions for it. */
nx_status nx_l_hbm_refuse_unplannable(nx_lower *L)
{
	for (int c = 0; c < L->m->ncomps; c++)
		for (int k = 0; k < L->m->comps[c]->ninsts; k++) {
			const nx_inst *i = L->m->comps[c]->insts[k];
			if (shape_unbounded(i->shape)) {
				L->cur = i;
				return nx_l_err(L, "unbounded dynamic dimension in %s: the backend needs "
				                   "static sizes or bounds (f32[<=N])",
				                nx_shape_str(&L->a, i->shape, false));
			}
			int64_t b = largest_leaf_bytes(i->shape);
			if (b < 0 || b > L->t->hbm_bytes) {
				L->cur = i;
				/* a tuple's shape can be thousands of characters: the
				 * message keeps its head, the numbers come first */
				const char *sh = nx_shape_str(&L->a, i->shape, false);
				int shn = (int)strlen(sh) > 160 ? 160 : (int)strlen(sh);
				return nx_l_err(L, "HBM plan needs at least %s bytes for this value alone%s, more than the %lld "
				                   "bytes of HBM of one %s core (%.*s%s)",
				                b < 0 ? "2^63" : nx_arena_printf(&L->a, "%lld", (long long)b),
				                i->shape->type == NX_TUPLE ? " (its largest element)" : "",
				                (long long)L->t->hbm_bytes, L->t->name, shn, sh, shn < (int)strlen(sh) ? "..." : "");
			}
		}
	return NX_OK;
}
