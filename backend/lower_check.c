/* backend/lower_check.c — checks of the lowering's SBUF use and
 * synchronization (bounds of every access, what each access must follow, free
 * points, debug race detectors over the finished streams), and the dead-store
 * pass, which works on the same view of HBM accesses. docs/lowering.md,
 * "Checks" and "Dead stores". */
#include "backend/lower.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Every SBUF access must stay inside the bytes a kernel asked for: a write
 * inside a region the current node allocated, a read inside any live region
 * (its own or a producer's resident copy). Regions are packed tightly in a
 * ring, so a byte past the request belongs to another kernel. Called before
 * each allocation and after each node, it checks what was emitted since the
 * last call against the regions as they were while it was emitted. */
static void ap_extent(const nx_ap *a, const int64_t *trip, int depth, int64_t *lo, int64_t *hi)
{
	int esz = nx_dtype_bytes[a->dtype];
	int64_t mn = 0, mx = 0;
	for (int d = 0; d < a->ndims; d++) {
		int64_t x = (int64_t)a->stride[d] * esz * ((int64_t)a->count[d] - 1);
		*(x < 0 ? &mn : &mx) += x;
	}
	for (int d = 0; d < depth && d < NX_LOOP_DEPTH; d++) {
		int64_t x = a->loop_stride[d] * (trip[d] - 1);
		*(x < 0 ? &mn : &mx) += x;
	}
	*lo = a->offset + mn;
	*hi = a->offset + mx + esz;
}

/* the regions in use (reg_gen != 0) in index order: they do not change
 * during one check, so its loops visit these instead of all NX_LREGS */
typedef struct {
	int r[NX_LREGS], n;
} live_regs;

static bool in_region(const nx_lower *L, const live_regs *lv, int64_t lo, int64_t hi, int64_t gen0)
{
	for (int j = 0; j < lv->n; j++) {
		int k = lv->r[j];
		if (L->reg_gen[k] >= gen0 && lo >= L->reg_off[k] && hi <= L->reg_req[k])
			return true;
	}
	return false;
}

/* An access to a region the current node allocated must follow everything
 * the region waits for (earlier kernels' use of those bytes): the issuing
 * engine must know it, except its own kernels (in order) and, for a DMA, its
 * own queue (FIFO). */
static void hazard(nx_lower *L, const live_regs *lv, nx_engine e, const nx_insn *in, size_t n, int64_t lo,
                   int64_t hi)
{
	while (L->chk_klog[e] < L->nklog[e] && L->klog[e][L->chk_klog[e]].at <= n)
		L->chk_klog[e]++;
	nx_lsync none;
	memset(&none, 0, sizeof none);
	const nx_lsync *kn = L->chk_klog[e] ? &L->klog[e][L->chk_klog[e] - 1].k : &none;
	for (int j = 0; j < lv->n; j++) {
		int r = lv->r[j];
		if (L->reg_gen[r] < L->node_gen0 || hi <= L->reg_off[r] || lo >= L->reg_end[r])
			continue;
		for (int k = 0; k < NX_LSEMS; k++) {
			if (k == NX_LSEM_ENG + (int)e || L->reg_wait[r].s[k] <= kn->s[k])
				continue;
			if (nx_isa_table[in->op].cost == NX_COST_DMA && k == in->iarg[0])
				continue;
			char dis[512];
			nx_isa_disasm(in, dis, sizeof dis);
			const char *kname = in->debug_id < (uint32_t)L->ndebug ? L->debug[in->debug_id] : "?";
			fprintf(stderr, "nxcc: kernel '%s' uses SBUF region %d [%lld, %lld) before sem %d >= %lld "
			                "(knows %lld): %s.%s #%zu %s\n",
			        kname, r, (long long)L->reg_off[r], (long long)L->reg_end[r], k,
			        (long long)L->reg_wait[r].s[k], (long long)kn->s[k], nx_engine_names[e],
			        nx_isa_table[in->op].name, n, dis);
			NX_ASSERT(!"SBUF access before the region's earlier users finished");
		}
	}
}

void nx_l_check_sbuf(nx_lower *L)
{
	live_regs lv;
	lv.n = 0;
	for (int r = 0; r < NX_LREGS; r++)
		if (L->reg_gen[r] != 0)
			lv.r[lv.n++] = r;
	for (int e = 0; e < NX_ENG_COUNT; e++) {
		nx_lstream *s = &L->s[e];
		for (size_t n = L->chk_pos[e]; n < s->n; n++) {
			const nx_insn *in = &s->v[n];
			int *dp = &L->chk_depth[e];
			if (nx_isa_ctrl_loop(in))
				continue; /* a device while loop: its body is checked once */
			if (in->op == NX_I_LOOP) {
				NX_ASSERT(*dp < NX_LOOP_DEPTH && in->iarg[1] == 0);
				L->chk_trip[e][(*dp)++] = in->iarg[0];
				continue;
			}
			if (in->op == NX_I_ENDLOOP) {
				NX_ASSERT(*dp > 0);
				(*dp)--;
				continue;
			}
			int64_t dma_mult = 1;
			for (int d = 0; d < *dp; d++)
				dma_mult *= L->chk_trip[e][d];
			for (int a = 0; a < nx_isa_table[in->op].nap; a++) {
				const nx_ap *ap = &in->ap[a];
				if (ap->space != NX_MEM_SBUF)
					continue;
				/* destinations: ap0, and ACT's accumulator ap3 */
				bool w = a == 0 || (in->op == NX_I_ACTIVATE && a == 3);
				int64_t lo, hi;
				ap_extent(ap, L->chk_trip[e], *dp, &lo, &hi);
				hazard(L, &lv, (nx_engine)e, in, n, lo, hi);
				for (int j = 0; j < lv.n; j++) {
					int r = lv.r[j];
					if (hi <= L->reg_off[r] || lo >= L->reg_end[r])
						continue;
					if (nx_isa_table[in->op].cost == NX_COST_DMA)
						L->reg_need[r].s[in->iarg[0]] = L->chk_qc[in->iarg[0]] + dma_mult;
					else if (L->reg_last[r][e] < (int64_t)n)
						L->reg_last[r][e] = (int64_t)n;
				}
				if (in_region(L, &lv, lo, hi, w ? (L->gen_next > L->node_gen0 ? L->gen_next : L->node_gen0) : 0))
					continue;
				char dis[512];
				nx_isa_disasm(in, dis, sizeof dis);
				const char *kn = in->debug_id < (uint32_t)L->ndebug ? L->debug[in->debug_id] : "?";
				fprintf(stderr, "nxcc: kernel '%s' %s SBUF bytes [%lld, %lld) outside its regions: %s.%s #%zu %s\n",
				        kn, w ? "writes" : "reads", (long long)lo, (long long)hi,
				        nx_engine_names[e], nx_isa_table[in->op].name, n, dis);
				for (int k = 0; k < NX_LREGS; k++)
					if (L->reg_gen[k])
						fprintf(stderr, "  region %d gen %lld: [%lld, %lld) asked, %lld reserved\n", k,
						        (long long)L->reg_gen[k], (long long)L->reg_off[k],
						        (long long)L->reg_req[k], (long long)L->reg_end[k]);
				NX_ASSERT(!"SBUF access outside the kernel's request");
			}
			if (nx_isa_table[in->op].cost == NX_COST_DMA && in->iarg[1] >= 0)
				L->chk_qc[in->iarg[1]] += dma_mult;
		}
		L->chk_pos[e] = s->n;
	}
}

/* A region about to be overwritten: its free point must cover every access
 * made to it (the kernel's own, and readers of its resident copy). */
void nx_l_check_free(nx_lower *L, int r)
{
	nx_lsync f = L->sbuf_free[r]; /* and what reaching it implies */
	for (int k = 0; k < NX_LSEMS; k++) {
		const nx_lsync *kk = L->sbuf_free[r].s[k] > 0 ? nx_l_know_at(L, k, L->sbuf_free[r].s[k]) : NULL;
		if (kk)
			nx_l_max(&f, kk);
	}
	for (int k = 0; k < NX_LQ; k++)
		if (L->reg_need[r].s[k] > f.s[k]) {
			fprintf(stderr, "nxcc: SBUF region %d [%lld, %lld) freed before queue %d reaches %lld (free at %lld)\n", r,
			        (long long)L->reg_off[r], (long long)L->reg_end[r], k, (long long)L->reg_need[r].s[k],
			        (long long)f.s[k]);
			NX_ASSERT(!"SBUF region freed before its DMAs complete");
		}
	for (int e = 0; e < NX_ENG_COUNT; e++) {
		int64_t n = L->reg_last[r][e];
		if (n < 0)
			continue;
		size_t lo = 0, hi = L->nsig[e];
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;
			if ((int64_t)L->sig_idx[e][mid] < n)
				lo = mid + 1;
			else
				hi = mid;
		}
		int64_t c = lo < L->nsig[e] ? L->sig_cnt[e][lo] : 0; /* count after the first signal after n */
		if (lo >= L->nsig[e] || f.s[NX_LSEM_ENG + e] < c) {
			const nx_insn *in = &L->s[e].v[n];
			char dis[512];
			nx_isa_disasm(in, dis, sizeof dis);
			fprintf(stderr, "nxcc: SBUF region %d [%lld, %lld) freed before %s signals %lld (free at %lld; "
			                "last access by '%s': #%lld %s)\n",
			        r, (long long)L->reg_off[r], (long long)L->reg_end[r], nx_engine_names[e], (long long)c,
			        (long long)f.s[NX_LSEM_ENG + e],
			        in->debug_id < (uint32_t)L->ndebug ? L->debug[in->debug_id] : "?", (long long)n, dis);
			NX_ASSERT(!"SBUF region freed before its users finish");
		}
	}
}

/* ------------------------------------------------ dropping dead stores
 * A kernel stores its result to HBM and also leaves it in SBUF; when every
 * reader used the SBUF copy, nobody reads those HBM bytes before they are
 * overwritten or the program ends, and the store is dead unless the bytes are
 * an input, a constant or an output. Decided after lowering on the streams:
 * HBM accesses are ordered by node (debug_id); a dropped store becomes a nop
 * and every wait on its queue that counted it is lowered by its transfers. */
typedef struct hacc {
	uint32_t id;   /* node (debug_id) */
	int e;
	size_t n;
	int64_t lo, hi, mult;
	bool write, dense, store;
	int q;         /* queue; its count c when the transfer completes */
	int64_t c;
	const nx_lsync *kn; /* what the issuing engine knew */
} hacc;

static void hbm_accesses(const nx_lower *L, hacc **out, size_t *nout)
{
	size_t cap = 0;
	*out = NULL;
	*nout = 0;
	for (int e = 0; e < NX_ENG_COUNT; e++) {
		int64_t trip[NX_LOOP_DEPTH], qc[NX_LQ] = {0};
		int depth = 0;
		size_t kl = 0;
		static const nx_lsync none;
		const nx_lstream *s = &L->s[e];
		for (size_t n = 0; n < s->n; n++) {
			const nx_insn *in = &s->v[n];
			while (kl < L->nklog[e] && L->klog[e][kl].at <= n)
				kl++;
			int q = -1;
			int64_t c = 0;
			if ((nx_isa_table[in->op].cost == NX_COST_DMA || nx_isa_table[in->op].cost == NX_COST_CC) &&
			    in->iarg[1] >= 0 && in->iarg[1] < NX_LQ) {
				int64_t m = 1;
				for (int d = 0; d < depth; d++)
					m *= trip[d];
				q = in->iarg[1];
				c = qc[q] += m;
			}
			if (nx_isa_ctrl_loop(in))
				continue; /* a device while loop: its body is checked once */
			if (in->op == NX_I_LOOP) {
				trip[depth++] = in->iarg[0];
				continue;
			}
			if (in->op == NX_I_ENDLOOP) {
				depth--;
				continue;
			}
			for (int a = 0; a < nx_isa_table[in->op].nap; a++) {
				nx_ap ap = in->ap[a];
				if (ap.space != NX_MEM_HBM)
					continue;
				int esz = nx_dtype_bytes[ap.dtype];
				int64_t lo, hi, mult = 1, elems = (int64_t)ap.part_count * (int64_t)nx_ap_free_elems(&ap);
				bool dense = ap.part_count == 1 || ap.part_stride != 0;
				for (int d = 0; d < ap.ndims; d++)
					dense = dense && (ap.stride[d] != 0 || ap.count[d] == 1);
				for (int d = 0; d < depth; d++) {
					mult *= trip[d];
					dense = dense && (ap.loop_stride[d] != 0 || trip[d] == 1);
				}
				ap_extent(&ap, trip, depth, &lo, &hi);
				int64_t x = ap.part_stride * esz * ((int64_t)ap.part_count - 1);
				*(x < 0 ? &lo : &hi) += x;
				if ((in->op == NX_I_DMA_GATHER && a == 1) || (in->op == NX_I_DMA_SCATTER && a == 0)) {
					hi += (int64_t)(in->iarg[2] > 0 ? in->iarg[2] - 1 : 0) * in->iarg[3];
					dense = false;
				}
				if (*nout == cap) {
					cap = cap ? 2 * cap : 256;
					*out = nx_xrealloc(*out, cap * sizeof **out);
				}
				hacc *h = &(*out)[(*nout)++];
				h->id = in->debug_id;
				h->e = e;
				h->n = n;
				h->lo = lo;
				h->hi = hi;
				h->mult = mult;
				h->write = a == 0;
				h->dense = dense && elems * mult * esz == hi - lo;
				h->store = a == 0 && e == NX_ENG_POOL && in->op == NX_I_DMA && in->ap[1].space == NX_MEM_SBUF;
				h->q = q;
				h->c = c;
				h->kn = kl ? &L->klog[e][kl - 1].k : &none;
			}
		}
	}
}

/* Kernels (debug ids) that synchronize per loop iteration (nx_l_wait_rel):
 * the detectors below see only constant waits, so they check such a kernel
 * against other kernels but not its accesses against each other (their
 * order comes from the per-iteration waits; the `nxcc check` tests run
 * them). calloc'd, ndebug entries. */
static bool *loop_synced(const nx_lower *L)
{
	bool *v = calloc((size_t)L->ndebug + 1, 1);
	for (int e = 0; e < NX_ENG_COUNT; e++)
		for (size_t n = 0; n < L->s[e].n; n++) {
			const nx_insn *in = &L->s[e].v[n];
			if (in->op == NX_I_WAIT && in->iarg[2] > 0 && in->debug_id < (uint32_t)L->ndebug)
				v[in->debug_id] = true;
		}
	return v;
}

/* Debug (NX_CHECK_HBM=1): HBM accesses that overlap, one of them a read and
 * the other a write, neither of which knows the other has completed. */
void nx_l_check_hbm_races(const nx_lower *L)
{
	hacc *h;
	size_t nh;
	int found = 0;
	hbm_accesses(L, &h, &nh);
	bool *ls = loop_synced(L);
	for (size_t a = 0; a < nh && found < 10; a++)
		for (size_t b = a + 1; b < nh && found < 10; b++) {
			const hacc *A = &h[a], *B = &h[b];
			if ((!A->write && !B->write) || A->hi <= B->lo || B->hi <= A->lo || A->q < 0 || B->q < 0)
				continue;
			if (A->id == B->id && A->id < (uint32_t)L->ndebug && ls[A->id])
				continue;
			if (A->q == B->q || A->kn->s[B->q] >= B->c || B->kn->s[A->q] >= A->c)
				continue;
			if (A->write && B->write && A->id == B->id)
				continue; /* one kernel's windows (concatenate): boxes overlap, bytes do not */
			found++;
			fprintf(stderr, "nxcc: HBM race: %s '%s' %s.#%zu [%lld, %lld) and %s '%s' %s.#%zu [%lld, %lld)\n",
			        A->write ? "write" : "read", L->debug[A->id], nx_engine_names[A->e], A->n, (long long)A->lo,
			        (long long)A->hi, B->write ? "write" : "read", L->debug[B->id], nx_engine_names[B->e], B->n,
			        (long long)B->lo, (long long)B->hi);
		}
	free(ls);
	free(h);
}

/* Debug (NX_CHECK_ONCHIP=1|2: SBUF|PSUM): conflicting accesses on different
 * engines (or DMA queues) neither of which knows the other completed. */
typedef struct oacc {
	int e, q;
	size_t n;
	int64_t lo, hi, c;
	int p0, p1;
	bool write;
	const nx_lsync *kn;
} oacc;

void nx_l_check_onchip_races(const nx_lower *L, int space)
{
	oacc *v = NULL;
	size_t nv = 0, cap = 0;
	static const nx_lsync none;
	for (int e = 0; e < NX_ENG_COUNT; e++) {
		int64_t trip[NX_LOOP_DEPTH], qc[NX_LQ] = {0};
		int depth = 0;
		size_t kl = 0;
		const nx_lstream *s = &L->s[e];
		for (size_t n = 0; n < s->n; n++) {
			const nx_insn *in = &s->v[n];
			while (kl < L->nklog[e] && L->klog[e][kl].at <= n)
				kl++;
			if (nx_isa_ctrl_loop(in))
				continue; /* a device while loop: its body is checked once */
			if (in->op == NX_I_LOOP) {
				trip[depth++] = in->iarg[0];
				continue;
			}
			if (in->op == NX_I_ENDLOOP) {
				depth--;
				continue;
			}
			int q = -1;
			int64_t c = 0;
			bool dma = nx_isa_table[in->op].cost == NX_COST_DMA || nx_isa_table[in->op].cost == NX_COST_CC;
			if (dma && in->iarg[1] >= 0 && in->iarg[1] < NX_LQ) {
				int64_t m = 1;
				for (int d = 0; d < depth; d++)
					m *= trip[d];
				q = in->iarg[1];
				c = qc[q] += m;
			}
			if (!dma) { /* completes with the engine's next signal */
				size_t lo = 0, hi = L->nsig[e];
				while (lo < hi) {
					size_t mid = (lo + hi) / 2;
					if (L->sig_idx[e][mid] < n)
						lo = mid + 1;
					else
						hi = mid;
				}
				q = NX_LSEM_ENG + e;
				c = lo < L->nsig[e] ? L->sig_cnt[e][lo] : INT64_MAX;
			}
			for (int a = 0; a < nx_isa_table[in->op].nap; a++) {
				const nx_ap *ap = &in->ap[a];
				if (ap->space != space)
					continue;
				if (nv == cap)
					v = nx_xrealloc(v, (cap = cap ? 2 * cap : 1024) * sizeof *v);
				oacc *o = &v[nv++];
				ap_extent(ap, trip, depth, &o->lo, &o->hi);
				o->e = e;
				o->q = q;
				o->c = c;
				o->n = n;
				o->p0 = ap->part_start;
				o->p1 = ap->part_start + ap->part_count;
				o->write = a == 0 || (in->op == NX_I_ACTIVATE && a == 3);
				o->kn = kl ? &L->klog[e][kl - 1].k : &none;
			}
		}
	}
	int found = 0;
	bool *ls = loop_synced(L);
	for (size_t a = 0; a < nv && found < 10; a++)
		for (size_t b = a + 1; b < nv && found < 10; b++) {
			const oacc *A = &v[a], *B = &v[b];
			if ((!A->write && !B->write) || A->hi <= B->lo || B->hi <= A->lo || A->p1 <= B->p0 || B->p1 <= A->p0)
				continue;
			uint32_t ia_id = L->s[A->e].v[A->n].debug_id, ib_id = L->s[B->e].v[B->n].debug_id;
			if (ia_id == ib_id && ia_id < (uint32_t)L->ndebug && ls[ia_id])
				continue;
			if (A->q == B->q || (A->e == B->e && A->q >= NX_LSEM_ENG) || A->kn->s[B->q] >= B->c ||
			    B->kn->s[A->q] >= A->c)
				continue;
			const nx_insn *ia = &L->s[A->e].v[A->n], *ib = &L->s[B->e].v[B->n];
			found++;
			fprintf(stderr, "nxcc: %s race: '%s' %s.#%zu %s [%lld, %lld) and '%s' %s.#%zu %s [%lld, %lld)\n",
			        nx_mem_names[space], L->debug[ia->debug_id], nx_engine_names[A->e], A->n,
			        nx_isa_table[ia->op].name, (long long)A->lo, (long long)A->hi, L->debug[ib->debug_id],
			        nx_engine_names[B->e], B->n, nx_isa_table[ib->op].name, (long long)B->lo, (long long)B->hi);
		}
	free(ls);
	free(v);
}

void nx_l_drop_dead_stores(nx_lower *L, const int64_t (*keep)[2], int nkeep)
{
	hacc *h;
	size_t nh;
	hbm_accesses(L, &h, &nh);
	int64_t *drop_cnt = NULL, *drop_mult = NULL;
	int *drop_q = NULL;
	size_t nd = 0;
	/* a queue some loop waits on per iteration (nx_l_wait_rel), or that
	 * two engines issue on, keeps its stores: those waits count them and
	 * cannot be lowered */
	bool relq[NX_LQ] = {false};
	unsigned qeng[NX_LQ] = {0}; /* engines issuing on the queue: POOL's count alone is its count when one */
	for (int e = 0; e < NX_ENG_COUNT; e++)
		for (size_t n = 0; n < L->s[e].n; n++) {
			const nx_insn *in = &L->s[e].v[n];
			if (in->op == NX_I_WAIT && in->iarg[2] > 0 && in->iarg[0] < NX_LQ)
				relq[in->iarg[0]] = true;
			if ((nx_isa_table[in->op].cost == NX_COST_DMA || nx_isa_table[in->op].cost == NX_COST_CC) &&
			    in->iarg[1] >= 0 && in->iarg[1] < NX_LQ)
				qeng[in->iarg[1]] |= 1u << e;
		}
	for (int q = 0; q < NX_LQ; q++)
		relq[q] |= (qeng[q] & (qeng[q] - 1)) != 0;
	for (size_t k = 0; k < nh; k++) {
		const hacc *S = &h[k];
		if (!S->store)
			continue;
		bool kept = S->q >= 0 && S->q < NX_LQ && relq[S->q];
		for (int j = 0; j < nkeep && !kept; j++)
			kept = S->lo < keep[j][1] && keep[j][0] < S->hi;
		for (size_t r = 0; r < nh && !kept; r++) {
			const hacc *R = &h[r];
			if (R->write || R->id < S->id || R->hi <= S->lo || S->hi <= R->lo)
				continue;
			/* R reads the stored bytes unless a dense write of a node
			 * strictly between covers what it reads of them */
			int64_t a = R->lo > S->lo ? R->lo : S->lo, b = R->hi < S->hi ? R->hi : S->hi;
			bool covered = false;
			for (size_t w = 0; w < nh && !covered; w++)
				covered = h[w].write && h[w].dense && h[w].id > S->id && h[w].id < R->id && h[w].lo <= a &&
				          h[w].hi >= b;
			kept = !covered;
		}
		if (kept)
			continue;
		nx_insn *in = &L->s[NX_ENG_POOL].v[S->n];
		drop_cnt = nx_xrealloc(drop_cnt, (nd + 1) * sizeof *drop_cnt);
		drop_mult = nx_xrealloc(drop_mult, (nd + 1) * sizeof *drop_mult);
		drop_q = nx_xrealloc(drop_q, (nd + 1) * sizeof *drop_q);
		drop_q[nd] = in->iarg[0];
		drop_mult[nd] = S->mult;
		drop_cnt[nd] = (int64_t)S->n; /* stream index for now: counts below */
		nd++;
	}
	/* the count each dropped store reached on its queue */
	if (nd) {
		int64_t qc[NX_LQ] = {0}, trip[NX_LOOP_DEPTH];
		int depth = 0;
		size_t di = 0;
		const nx_lstream *s = &L->s[NX_ENG_POOL];
		for (size_t n = 0; n < s->n && di < nd; n++) {
			const nx_insn *in = &s->v[n];
			if (nx_isa_ctrl_loop(in))
				continue;
			if (in->op == NX_I_LOOP)
				trip[depth++] = in->iarg[0];
			else if (in->op == NX_I_ENDLOOP)
				depth--;
			else if (nx_isa_table[in->op].cost == NX_COST_DMA && in->iarg[1] >= 0) {
				int64_t m = 1;
				for (int d = 0; d < depth; d++)
					m *= trip[d];
				qc[in->iarg[1]] += m;
				for (size_t k = 0; k < nd; k++)
					if (drop_cnt[k] == (int64_t)n && drop_q[k] >= 0) {
						drop_cnt[k] = qc[in->iarg[1]];
						drop_q[k] = -1 - in->iarg[1]; /* resolved */
						L->s[NX_ENG_POOL].v[n] = nx_insn_new(NX_I_NOP, NX_ENG_POOL);
						L->s[NX_ENG_POOL].v[n].debug_id = s->v[n].debug_id;
						di++;
					}
			}
		}
		for (int e = 0; e < NX_ENG_COUNT; e++)
			for (size_t n = 0; n < L->s[e].n; n++) {
				nx_insn *in = &L->s[e].v[n];
				if (in->op != NX_I_WAIT || in->iarg[0] >= NX_LQ)
					continue;
				int64_t sub = 0;
				for (size_t k = 0; k < nd; k++)
					if (drop_q[k] == -1 - in->iarg[0] && drop_cnt[k] <= in->iarg[1])
						sub += drop_mult[k];
				in->iarg[1] -= (int32_t)sub;
			}
	}
	free(drop_cnt);
	free(drop_mult);
	free(drop_q);
	free(h);
}

