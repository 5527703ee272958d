/* runtime-stub/sim_race.c — the simulator's race check (`nxcc run
 * --check-races`, docs/profile.md "Race check"): a happens-before detector
 * over the executed program, loop iterations included.
 *
 * Threads are the five engines and the DMA queues. Each has a vector clock
 * (what it knows has completed). An engine ticks its own entry per data
 * instruction; a DMA or collective on queue q joins what the issuing engine
 * knows (it starts after the engine's earlier instructions) and ticks q's
 * entry. A signal (an engine's `signal`, a transfer's completion) carries a
 * snapshot of its thread's clock; each semaphore keeps the running join of
 * the snapshots applied to it, by value, so a `wait sem >= k` learns
 * exactly what the first k increments carried (not later ones that happened
 * to arrive before the wait was checked).
 *
 * Every SBUF, PSUM and HBM access is recorded (partitions, byte pattern,
 * thread, its clock entry). A new access races with a recorded one on
 * another thread when they touch a common byte, one of them writes, and the
 * new access's thread does not know the recorded one completed. Accesses
 * are recorded when the simulator issues them, which is an order consistent
 * with happens-before (a waiter runs after the signal's event applied),
 * so each pair is checked once, by the later one.
 *
 * Records are dropped when no future access can race with them: superseded
 * by a later access of the same thread covering them, by a write that knows
 * them, or known by every engine that has not halted (a queue only acts
 * when an engine issues to it, and then knows what that engine knows). */
#include "runtime-stub/sim.h"

#include <stdio.h>
#include <stdlib.h>

#define RT_MAX (NX_ENG_COUNT + NX_RT_MAX_QUEUES)
#define RC_DIMS (NX_AP_DIMS + 1)

typedef struct vclock {
	uint32_t c[RT_MAX];
} vclock;

typedef struct racc {
	uint32_t gen;   /* bumped when freed; bucket entries carry it */
	uint32_t stamp; /* the last access that looked at it */
	uint32_t clk;
	uint8_t space, thread, nd, eng;
	bool write, live, box; /* box: touches anything in [lo, hi) (data-dependent gathers) */
	uint16_t p0, p1;
	int esz;
	int64_t base, lo, hi; /* bytes, inside the partition (SBUF/PSUM) or HBM */
	int64_t cnt[RC_DIMS], str[RC_DIMS];
	uint32_t pc, op, debug_id;
	int depth;
	int64_t li[NX_LOOP_DEPTH];
} racc;

typedef struct bentry {
	uint32_t idx, gen;
} bentry;

typedef struct bucket {
	bentry *v;
	uint32_t n, cap;
} bucket;

typedef struct semhist {
	int64_t *val; /* semaphore value after each applied increment */
	vclock *vc;   /* running join of the snapshots up to it */
	size_t n, cap;
} semhist;

struct nx_race {
	const nx_neff *n;
	int nthreads;
	vclock vc[RT_MAX];
	bool done[NX_ENG_COUNT];
	racc *rec;
	uint32_t nrec, caprec, *freel, nfree, capfree;
	uint32_t stamp;
	uint64_t inserted;
	bucket *b[NX_MEM_COUNT][2]; /* [space][write] */
	int64_t nb[NX_MEM_COUNT];
	int shift[NX_MEM_COUNT];
	semhist *sem;
	vclock *snap;
	int *snapfree;
	int nsnap, capsnap, nsnapfree;
	bool hbm; /* NX_CHECK_RACES_HBM=1: HBM too */
	int64_t *wr; /* HBM bytes any instruction may write: sorted disjoint [lo, hi) pairs */
	size_t nwr;
	unsigned emask[NX_MEM_COUNT]; /* engines issuing accesses to each memory */
	bool wr_all; /* a write's extent depends on a register loop count: all of HBM */
};

static void *grow(void *p, size_t *cap, size_t need, size_t sz)
{
	if (need <= *cap)
		return p;
	size_t c = *cap ? *cap * 2 : 16;
	while (c < need)
		c *= 2;
	p = realloc(p, c * sz);
	NX_ASSERT(p);
	*cap = c;
	return p;
}

static void describe(const nx_ap *a, const int64_t *li, int depth, racc *x);

static int cmp_span(const void *a, const void *b)
{
	int64_t x = ((const int64_t *)a)[0], y = ((const int64_t *)b)[0];
	return (x > y) - (x < y);
}

/* The HBM bytes the program may write, over all loop iterations: reads of
 * other bytes (inputs, weights) can race with nothing and are not recorded. */
static void hbm_writes(nx_race *r)
{
	size_t cap = 0, n = 0;
	int64_t *v = NULL;
	for (int e = 0; e < NX_ENG_COUNT; e++) {
		int64_t trip[NX_LOOP_DEPTH] = {0};
		int depth = 0;
		for (size_t i = 0; i < r->n->nstream[e]; i++) {
			const nx_insn *in = &r->n->stream[e][i];
			if (nx_isa_ctrl_loop(in))
				continue; /* a device while loop: no access-pattern level */
			if (in->op == NX_I_LOOP) {
				trip[depth < NX_LOOP_DEPTH ? depth : NX_LOOP_DEPTH - 1] = in->iarg[1] ? -1 : in->iarg[0];
				depth++;
				continue;
			}
			if (in->op == NX_I_ENDLOOP) {
				depth -= depth > 0;
				continue;
			}
			if (in->op >= NX_I_COUNT || nx_isa_table[in->op].nap == 0 || in->ap[0].space != NX_MEM_HBM ||
			    in->op == NX_I_LDREG)
				continue;
			const nx_ap *a = &in->ap[0];
			int64_t no_loops[NX_LOOP_DEPTH] = {0};
			racc x;
			describe(a, no_loops, 0, &x);
			for (int d = 0; d < depth && d < NX_LOOP_DEPTH; d++) {
				if (a->loop_stride[d] == 0)
					continue;
				if (trip[d] < 0)
					r->wr_all = true;
				int64_t ext = a->loop_stride[d] * (trip[d] > 0 ? trip[d] - 1 : 0);
				*(ext < 0 ? &x.lo : &x.hi) += ext;
			}
			if (in->op == NX_I_DMA_SCATTER) /* rows chosen by data: all of them */
				x.hi += (int64_t)(in->iarg[2] > 0 ? in->iarg[2] - 1 : 0) * in->iarg[3];
			size_t c2 = cap;
			v = grow(v, &c2, 2 * n + 2, sizeof *v);
			cap = c2;
			v[2 * n] = x.lo;
			v[2 * n + 1] = x.hi;
			n++;
		}
	}
	if (n)
		qsort(v, n, 2 * sizeof *v, cmp_span);
	size_t m = 0;
	for (size_t i = 0; i < n; i++) {
		if (m && v[2 * i] <= v[2 * m - 1]) {
			if (v[2 * i + 1] > v[2 * m - 1])
				v[2 * m - 1] = v[2 * i + 1];
			continue;
		}
		v[2 * m] = v[2 * i];
		v[2 * m + 1] = v[2 * i + 1];
		m++;
	}
	r->wr = v;
	r->nwr = m;
}

static bool may_be_written(const nx_race *r, int64_t lo, int64_t hi)
{
	if (r->wr_all)
		return true;
	size_t a = 0, b = r->nwr;
	while (a < b) { /* the first span ending after lo */
		size_t mid = (a + b) / 2;
		if (r->wr[2 * mid + 1] <= lo)
			a = mid + 1;
		else
			b = mid;
	}
	return a < r->nwr && r->wr[2 * a] < hi;
}

nx_race *nx_race_new(const nx_neff *n, const nx_target *t)
{
	nx_race *r = calloc(1, sizeof *r);
	NX_ASSERT(r);
	r->n = n;
	const char *h = getenv("NX_CHECK_RACES_HBM");
	r->hbm = h && !strcmp(h, "1");
	r->nthreads = NX_ENG_COUNT + (t->dma_engines < NX_RT_MAX_QUEUES ? t->dma_engines : NX_RT_MAX_QUEUES);
	int64_t size[NX_MEM_COUNT] = {0, n->hbm_size, t->sbuf_partition_bytes, t->psum_partition_bytes};
	int shift[NX_MEM_COUNT] = {0, 20, 11, 11}; /* 1 MiB of HBM, 2 KiB of a partition per bucket */
	for (int s = NX_MEM_HBM; s < NX_MEM_COUNT; s++) {
		r->shift[s] = shift[s];
		r->nb[s] = (size[s] >> shift[s]) + 1;
		for (int w = 0; w < 2; w++) {
			r->b[s][w] = calloc((size_t)r->nb[s], sizeof(bucket));
			NX_ASSERT(r->b[s][w]);
		}
	}
	r->sem = calloc((size_t)n->nsems + 1, sizeof *r->sem);
	NX_ASSERT(r->sem);
	for (int e = 0; e < NX_ENG_COUNT; e++)
		for (size_t i = 0; i < n->nstream[e]; i++) {
			const nx_insn *in = &n->stream[e][i];
			for (int a = 0; in->op < NX_I_COUNT && a < nx_isa_table[in->op].nap; a++)
				if (in->ap[a].space < NX_MEM_COUNT)
					r->emask[in->ap[a].space] |= 1u << e;
		}
	if (r->hbm)
		hbm_writes(r);
	return r;
}

void nx_race_free(nx_race *r)
{
	if (!r)
		return;
	for (int s = NX_MEM_HBM; s < NX_MEM_COUNT; s++)
		for (int w = 0; w < 2; w++) {
			for (int64_t i = 0; i < r->nb[s]; i++)
				free(r->b[s][w][i].v);
			free(r->b[s][w]);
		}
	for (int i = 0; i <= r->n->nsems; i++) {
		free(r->sem[i].val);
		free(r->sem[i].vc);
	}
	free(r->sem);
	free(r->wr);
	free(r->snap);
	free(r->snapfree);
	free(r->rec);
	free(r->freel);
	free(r);
}

static void join(vclock *a, const vclock *b, int n)
{
	for (int i = 0; i < n; i++)
		if (b->c[i] > a->c[i])
			a->c[i] = b->c[i];
}

void nx_race_done(nx_race *r, int eng)
{
	r->done[eng] = true;
}

int nx_race_snapshot(nx_race *r, int thread)
{
	int h;
	if (r->nsnapfree) {
		h = r->snapfree[--r->nsnapfree];
	} else {
		size_t cap = (size_t)r->capsnap;
		r->snap = grow(r->snap, &cap, (size_t)r->nsnap + 1, sizeof *r->snap);
		r->capsnap = (int)cap;
		h = r->nsnap++;
	}
	r->snap[h] = r->vc[thread];
	return h;
}

void nx_race_signal(nx_race *r, int sem, int64_t value_after, int snap)
{
	semhist *h = &r->sem[sem];
	size_t cap = h->cap;
	h->val = grow(h->val, &cap, h->n + 1, sizeof *h->val);
	cap = h->cap;
	h->vc = grow(h->vc, &cap, h->n + 1, sizeof *h->vc);
	h->cap = cap;
	vclock v = h->n ? h->vc[h->n - 1] : (vclock){{0}};
	join(&v, &r->snap[snap], r->nthreads);
	h->val[h->n] = value_after;
	h->vc[h->n++] = v;
	size_t cf = (size_t)r->nsnapfree;
	r->snapfree = grow(r->snapfree, &cf, (size_t)r->nsnapfree + 1, sizeof *r->snapfree);
	r->snapfree[r->nsnapfree++] = snap;
}

void nx_race_wait(nx_race *r, int eng, int sem, int64_t target)
{
	const semhist *h = &r->sem[sem];
	size_t lo = 0, hi = h->n;
	while (lo < hi) { /* the first increment that reached target */
		size_t mid = (lo + hi) / 2;
		if (h->val[mid] < target)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (target > 0 && lo < h->n)
		join(&r->vc[eng], &h->vc[lo], r->nthreads);
}

void nx_race_issue(nx_race *r, int eng, int queue)
{
	int q = NX_ENG_COUNT + queue;
	join(&r->vc[q], &r->vc[eng], r->nthreads);
	r->vc[q].c[q]++;
}

/* One operand of an instruction as a record (without thread fields). */
static void describe(const nx_ap *a, const int64_t *li, int depth, racc *x)
{
	int esz = nx_dtype_bytes[a->dtype < NX_DT_COUNT ? a->dtype : 0];
	int64_t off = a->offset;
	for (int d = 0; d < depth && d < NX_LOOP_DEPTH; d++)
		off += li[d] * a->loop_stride[d];
	x->space = a->space;
	x->esz = esz;
	x->nd = 0;
	x->box = false;
	if (a->space == NX_MEM_HBM) {
		x->p0 = 0, x->p1 = 1;
		x->cnt[x->nd] = a->part_count;
		x->str[x->nd++] = a->part_stride * esz;
	} else {
		x->p0 = a->part_start, x->p1 = (uint16_t)(a->part_start + a->part_count);
	}
	for (int d = 0; d < a->ndims && d < NX_AP_DIMS; d++) {
		x->cnt[x->nd] = a->count[d];
		x->str[x->nd++] = (int64_t)a->stride[d] * esz;
	}
	int64_t lo = off, hi = off + esz;
	for (int d = 0; d < x->nd; d++) {
		int64_t e = x->str[d] * (x->cnt[d] - 1);
		*(e < 0 ? &lo : &hi) += e;
	}
	x->base = off;
	x->lo = lo;
	x->hi = hi;
}

static bool dense(const racc *x)
{
	if (x->box)
		return true;
	int64_t n = x->esz;
	for (int d = 0; d < x->nd; d++)
		n *= x->cnt[d] > 0 ? x->cnt[d] : 0;
	return n == x->hi - x->lo;
}

/* Calls mark on every byte range of x inside [w0, w1); false when there are
 * too many elements to enumerate. */
static bool each_elem(const racc *x, int64_t w0, int64_t w1, uint8_t *bits, bool test, bool *hit)
{
	uint64_t total = 1;
	for (int d = 0; d < x->nd; d++)
		total *= (uint64_t)(x->cnt[d] > 0 ? x->cnt[d] : 0);
	if (total > (1u << 22))
		return false;
	int64_t idx[RC_DIMS] = {0};
	for (uint64_t k = 0; k < total; k++) {
		int64_t o = x->base;
		for (int d = 0; d < x->nd; d++)
			o += idx[d] * x->str[d];
		for (int64_t b = o; b < o + x->esz; b++)
			if (b >= w0 && b < w1) {
				uint64_t i = (uint64_t)(b - w0);
				if (test && (bits[i >> 3] >> (i & 7) & 1)) {
					*hit = true;
					return true;
				}
				if (!test)
					bits[i >> 3] |= (uint8_t)(1u << (i & 7));
			}
		for (int d = x->nd - 1; d >= 0; d--) {
			if (++idx[d] < x->cnt[d])
				break;
			idx[d] = 0;
		}
	}
	return true;
}

/* x as rows: cnt[0] rows stride[0] bytes apart, each a dense run of *w
 * bytes from the row's start (w <= the stride). False: not of that form. */
static bool rows(const racc *x, int64_t *w)
{
	if (x->box || x->nd < 1 || x->str[0] <= 0)
		return false;
	int64_t n = x->esz, hi = x->esz;
	for (int d = 1; d < x->nd; d++) {
		if (x->str[d] < 0)
			return false;
		n *= x->cnt[d];
		hi += x->str[d] * (x->cnt[d] - 1);
	}
	*w = hi;
	return n == hi && hi <= x->str[0];
}

static int64_t floordiv(int64_t a, int64_t b)
{
	return a / b - (a % b != 0 && (a < 0) != (b < 0));
}

/* Whether a and b touch a common byte (conservative: true when unsure). */
static bool overlap(const racc *a, const racc *b)
{
	if (a->space != b->space || a->p1 <= b->p0 || b->p1 <= a->p0 || a->hi <= b->lo || b->hi <= a->lo)
		return false;
	if (dense(a) && dense(b))
		return true;
	int64_t wa, wb;
	if (rows(a, &wa) && rows(b, &wb) && a->str[0] == b->str[0]) {
		/* row i of a meets row j of b iff -wb < d + (j - i) S < wa */
		int64_t S = a->str[0], d = b->base - a->base;
		int64_t klo = -floordiv(d + wb - 1, S), khi = floordiv(wa - 1 - d, S);
		if (klo < -(a->cnt[0] - 1))
			klo = -(a->cnt[0] - 1);
		if (khi > b->cnt[0] - 1)
			khi = b->cnt[0] - 1;
		return klo <= khi;
	}
	int64_t w0 = a->lo > b->lo ? a->lo : b->lo, w1 = a->hi < b->hi ? a->hi : b->hi;
	if (w1 - w0 > (64 << 20))
		return true;
	uint8_t *bits = calloc((size_t)((w1 - w0 + 7) / 8), 1);
	NX_ASSERT(bits);
	const racc *m = dense(a) ? b : a, *t = m == a ? b : a; /* mark the strided one */
	bool hit = false, ok;
	if (dense(t)) { /* t covers the whole window: any byte of m in it */
		memset(bits, 0xff, (size_t)((w1 - w0 + 7) / 8));
		ok = each_elem(m, w0, w1, bits, true, &hit);
	} else {
		ok = each_elem(m, w0, w1, bits, false, &hit) && each_elem(t, w0, w1, bits, true, &hit);
	}
	free(bits);
	return ok ? hit : true;
}

/* Whether a's bytes include all of b's (a dense and its box around b's). */
static bool covers(const racc *a, const racc *b)
{
	return a->space == b->space && !a->box && dense(a) && a->p0 <= b->p0 && a->p1 >= b->p1 && a->lo <= b->lo &&
	       a->hi >= b->hi;
}

static void drop(nx_race *r, uint32_t i)
{
	r->rec[i].live = false;
	r->rec[i].gen++;
	size_t cap = r->capfree;
	r->freel = grow(r->freel, &cap, (size_t)r->nfree + 1, sizeof *r->freel);
	r->capfree = (uint32_t)cap;
	r->freel[r->nfree++] = i;
}

static void bucket_range(const nx_race *r, const racc *x, int64_t *b0, int64_t *b1)
{
	int64_t lo = x->lo < 0 ? 0 : x->lo, hi = x->hi < 1 ? 1 : x->hi;
	*b0 = lo >> r->shift[x->space];
	*b1 = (hi - 1) >> r->shift[x->space];
	if (*b1 >= r->nb[x->space])
		*b1 = r->nb[x->space] - 1;
	if (*b0 > *b1)
		*b0 = *b1;
}

static const char *tname(const nx_race *r, int thread, char *buf, size_t len)
{
	(void)r;
	if (thread < NX_ENG_COUNT)
		snprintf(buf, len, "%s", nx_engine_names[thread]);
	else
		snprintf(buf, len, "dma queue %d", thread - NX_ENG_COUNT);
	return buf;
}

static void where(const nx_race *r, const racc *x, char *buf, size_t len)
{
	char t[32], it[96] = "";
	size_t k = 0;
	for (int d = 0; d < x->depth && k < sizeof it; d++)
		k += (size_t)snprintf(it + k, sizeof it - k, "%s%lld", d ? ", " : " (loop iteration ", (long long)x->li[d]);
	if (x->depth && k < sizeof it)
		snprintf(it + k, sizeof it - k, ")");
	const char *kern = x->debug_id < (uint32_t)r->n->ndebug ? r->n->debug_names[x->debug_id] : NULL;
	snprintf(buf, len, "%s %s [%lld, %lld) on %s: sg00/%s.bin instruction %u%s%s%s%s", x->write ? "write" : "read",
	         nx_isa_table[x->op].name, (long long)x->lo, (long long)x->hi, tname(r, x->thread, t, sizeof t),
	         nx_engine_names[x->eng], x->pc, it, kern ? " (kernel '" : "", kern ? kern : "", kern ? "')" : "");
}

/* Drops the records no future access can race with: known to every live
 * engine that issues accesses to their memory (a queue acts only when such
 * an engine issues to it, and then knows what that engine knows). */
static void gc(nx_race *r)
{
	uint32_t known[NX_MEM_COUNT][RT_MAX];
	for (int sp = 0; sp < NX_MEM_COUNT; sp++)
		for (int t = 0; t < r->nthreads; t++)
			known[sp][t] = UINT32_MAX;
	for (int sp = NX_MEM_HBM; sp < NX_MEM_COUNT; sp++)
		for (int e = 0; e < NX_ENG_COUNT; e++) {
			if (r->done[e] || !(r->emask[sp] & (1u << e)))
				continue;
			for (int t = 0; t < r->nthreads; t++)
				if (r->vc[e].c[t] < known[sp][t])
					known[sp][t] = r->vc[e].c[t];
		}
	for (uint32_t i = 0; i < r->nrec; i++) {
		const racc *x = &r->rec[i];
		if (x->live && x->clk <= known[x->space][x->thread])
			drop(r, i);
	}
}

/* Checks x (by thread t) against the records, then records it. */
static nx_status access1(nx_race *r, nx_sim *s, racc *x)
{
	if (x->space < NX_MEM_HBM || x->space >= NX_MEM_COUNT || x->hi <= x->lo || (x->space == NX_MEM_HBM && !r->hbm))
		return NX_OK;
	if (x->space == NX_MEM_HBM && !x->write && !may_be_written(r, x->lo, x->hi))
		return NX_OK; /* nothing ever writes these bytes */
	const vclock *k = &r->vc[x->thread];
	int64_t b0, b1;
	bucket_range(r, x, &b0, &b1);
	r->stamp++;
	/* a read conflicts with writes only; a write with both */
	for (int w = x->write ? 0 : 1; w < 2; w++)
	for (int64_t bi = b0; bi <= b1; bi++) {
		bucket *b = &r->b[x->space][w][bi];
		for (uint32_t j = 0; j < b->n;) {
			bentry en = b->v[j];
			racc *o = &r->rec[en.idx];
			if (o->gen != en.gen) {
				b->v[j] = b->v[--b->n];
				continue;
			}
			j++;
			if (o->stamp == r->stamp)
				continue;
			o->stamp = r->stamp;
			bool knows = o->thread == x->thread || k->c[o->thread] >= o->clk;
			if (knows) {
				if ((x->write || !o->write) && covers(x, o))
					drop(r, en.idx);
				continue;
			}
			if ((!x->write && !o->write) || !overlap(x, o))
				continue;
			char a[320], c[320];
			where(r, o, a, sizeof a);
			where(r, x, c, sizeof c);
			char parts[48] = "";
			if (x->space != NX_MEM_HBM)
				snprintf(parts, sizeof parts, " partitions [%u, %u)", (unsigned)(x->p0 > o->p0 ? x->p0 : o->p0),
				         (unsigned)(x->p1 < o->p1 ? x->p1 : o->p1));
			return nx_diag_set(s->d, NX_ERR_INPUT, NULL, 0, 0, "race on %s%s: %s, and %s, which does not wait for it",
			                   nx_mem_names[x->space], parts, a, c);
		}
	}
	uint32_t i;
	if (r->nfree) {
		i = r->freel[--r->nfree];
	} else {
		size_t cap = r->caprec;
		r->rec = grow(r->rec, &cap, (size_t)r->nrec + 1, sizeof *r->rec);
		r->caprec = (uint32_t)cap;
		i = r->nrec++;
		r->rec[i].gen = 0;
	}
	uint32_t gen = r->rec[i].gen;
	r->rec[i] = *x;
	r->rec[i].gen = gen;
	r->rec[i].live = true;
	r->rec[i].stamp = r->stamp;
	for (int64_t bi = b0; bi <= b1; bi++) {
		bucket *b = &r->b[x->space][x->write][bi];
		size_t cap = b->cap;
		b->v = grow(b->v, &cap, (size_t)b->n + 1, sizeof *b->v);
		b->cap = (uint32_t)cap;
		b->v[b->n++] = (bentry){i, gen};
	}
	if (++r->inserted % 4096 == 0)
		gc(r);
	return NX_OK;
}

nx_status nx_race_access(nx_race *r, nx_sim *s, int eng, int queue, const nx_insn *in, const int64_t *li,
                         int depth)
{
	int thread = queue >= 0 ? NX_ENG_COUNT + queue : eng;
	if (queue < 0)
		r->vc[eng].c[eng]++;
	const nx_isa_info *info = &nx_isa_table[in->op];
	for (int a = 0; a < info->nap; a++) {
		const nx_ap *ap = &in->ap[a];
		if (ap->space == NX_MEM_NONE)
			continue;
		racc x;
		memset(&x, 0, sizeof x);
		describe(ap, li, depth, &x);
		x.thread = (uint8_t)thread;
		x.clk = r->vc[thread].c[thread];
		x.eng = (uint8_t)eng;
		x.pc = (uint32_t)s->where_pc;
		x.op = in->op;
		x.debug_id = in->debug_id;
		x.depth = depth < NX_LOOP_DEPTH ? depth : NX_LOOP_DEPTH;
		for (int d = 0; d < x.depth; d++)
			x.li[d] = li[d];
		x.write = (a == 0 && in->op != NX_I_LDREG) || (in->op == NX_I_ACTIVATE && a == 3) || (in->op == NX_I_CALL && a < in->iarg[1]);
		if (in->op == NX_I_CALL && a >= in->iarg[1])
			x.write = false;
		if ((in->op == NX_I_DMA_GATHER && a == 1) || (in->op == NX_I_DMA_SCATTER && a == 0)) {
			/* rows chosen by data: all of them */
			x.hi += (int64_t)(in->iarg[2] > 0 ? in->iarg[2] - 1 : 0) * in->iarg[3];
			x.box = true;
		}
		nx_status rc = access1(r, s, &x);
		if (rc != NX_OK)
			return rc;
	}
	return NX_OK;
}
