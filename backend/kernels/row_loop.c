/* backend/kernels/row_loop.c — a fusion whose reductions run over the
 * trailing (contiguous) axes of R rows of C elements (softmax, layer norm,
 * their backward forms; the fusion pass forms them, passes/fusion.c
 * row_merge) as one loop nest over row tiles: every input row is loaded
 * once, reductions, per-row statistics and the elementwise producers and
 * consumers run on chip, every output is stored once. The body (values,
 * slots, engines, one tile's instructions) is row_body.c's; this file
 * tiles it.
 *
 * Values: rows (R*C elements), per-row statistics (R), columns ([C] inputs
 * broadcast along the rows: loaded once into every partition, by SP, a
 * large one into partition 0 and copied by one POOL partition_broadcast),
 * scalars (constants become immediates, one-element inputs a [128, 1]
 * column). A tile is 128 partitions x kt rows, partition p holding rows
 * p*kt .. p*kt+kt-1 of the tile (contiguous in HBM). SP issues every load
 * and store, each piece on the least busy of the 16 DMA queues. Tiles
 * rotate over ND buffer sets; the stages of a tile run in order, tile i's
 * loads wait for the last stage (and, when an output sits on an input's
 * slot, the stores) of tile i-ND, its first stage for its loads and the
 * stores of tile i-ND. The loop body holds NB tiles (a multiple of ND, up
 * to RW_NB) emitted in a list-schedule order (schedule), with waits per
 * iteration; tiles after the loop wait for absolute counts.
 * docs/lowering.md, "Row kernels". */
#include "backend/kernels/row_loop.h"

#include <string.h>

/* tiles per loop body for T full tiles and nd buffer sets: the multiple of
 * nd up to RW_NB leaving the fewest tails (tiles after the loop run each
 * tile's stages back to back), then the largest (an iteration's last tiles
 * drain the engines before the next iteration's first; layer norm: 118.4 us
 * with 4 tiles per iteration, 110.5 with 8) */
static int lcm(int a, int b)
{
	int g = a, h = b;
	while (h) {
		int t = g % h;
		g = h, h = t;
	}
	return a / g * b;
}

/* (long rows: a multiple of the chunks per row too, so that body tile b
 * is chunk b % nc of its row) */
static int body_tiles(int64_t T, int nd, int nc, bool one)
{
	/* (one) every tile in one body when it holds them: nothing repeats
	 * it, so its tiles need not be a multiple of the buffer sets, and no
	 * tile is left to run its stages back to back after it (bert_layer's
	 * layer norms: 16 tiles in 3 sets). The estimate (o2_cost) still
	 * counts the tails of a repeated body: counting none, it picks 19
	 * tiles of one row over 4 of four for colabfold's [2500, 128] rows,
	 * 0.3 % slower in all. */
	if (one && T >= nd && T <= RW_NB)
		return (int)T;
	int m0 = lcm(nd, nc), nb = m0;
	for (int m = m0; m <= RW_NB; m += m0)
		if (T % m <= T % nb)
			nb = m;
	return nb;
}

/* registers: producer engine counts, queue counts (one per distinct number
 * of transfers per queue per body), all advanced once per loop body */
enum { RF_ENG, RF_Q = RF_ENG + NX_ENG_COUNT, RF_N = RF_Q + 8 };
_Static_assert(RF_N <= NX_NREGS - 2, "registers per engine (two are the device loops')");

/* bytes of value k per partition for a tile of kt rows */
static int64_t io_elems(const rk *x, int k, int64_t kt)
{
	bool row = x->v[k].kind == V_ROWIN || x->v[k].kind == V_ROW;
	return row ? kt * x->C : kt;
}

/* estimated ns of one of kp pieces of value v's transfer for a tile of np
 * partitions and kt rows, by the target's DMA model: the fixed cost, bytes
 * at a queue's rate, half the rate at the knee's bytes per partition
 * (trn1: 1.3 us, 17 B/ns, 256 bytes) */
static double piece_ns(const rk *x, int v, int64_t np, int64_t kt, int kp)
{
	const nx_target *t = x->L->t;
	double bpp = (double)io_elems(x, v, kt) * nx_dtype_bytes[x->v[v].dt];
	return t->dma_fixed_ns + bpp * ((double)np / kp) / nx_target_dma_queue_gbps(t) * (1.0 + t->dma_knee_bytes / bpp);
}

/* pieces per input / output of body tile b: the first tile's loads and
 * the last tile's stores over all 16 queues (the transfers nothing
 * overlaps), the second tile's loads and the last but one's stores in
 * twice the pieces (arriving before the first tile's compute ends; every
 * queue gets the same number of each size: layer norm 82.8 -> 80.2 us) */
static int body_kl(const rk *x, int b)
{
	int m = NX_LQ / x->nld;
	if (!x->ht)
		return x->kl;
	return b == 0 ? m : b == 1 && x->nb > 2 && 2 * x->kl < m ? 2 * x->kl : x->kl;
}

static int body_ks(const rk *x, int b)
{
	int m = NX_LQ / x->nout;
	if (!x->ht || x->loop_tiles != x->ntile)
		return x->ks;
	return b == x->nb - 1 ? m : b == x->nb - 2 && x->nb > 2 && 2 * x->ks < m ? 2 * x->ks : x->ks;
}

/* One tile's pieces. In the loop body (rel) waits are per iteration:
 * registers advance by one body per iteration and tile b of the body waits
 * for counts at its position (idx: the signal of stage s of tile b among
 * its engine's signals in the body, in emission order; qpos: a transfer's
 * count on its queue in the body). Tail tiles (after the loop, emitted in
 * order) wait for absolute counts. */
typedef struct tl {
	int64_t np, kt, r0;
	int kl, ks; /* pieces per input / output */
	int b;      /* position in the body when rel */
	int c;      /* long rows: the chunk of the row */
	int set;    /* buffer set */
	bool rel;
	int64_t u;  /* tails: the tile's number */
	nx_lsync prev; /* tails: the previous stage's signal */
	nx_lsync sst;  /* tails: the signal of the stage its stores follow (x->sst) */
	nx_lsync ld;   /* tails: its loads */
} tl;

/* a relative wait on engine e for the transfers of body tile b (kind 0:
 * loads, 1: stores), one body earlier when wrap */
static void wait_q(rk *x, nx_engine e, int b, int kind, bool wrap)
{
	for (int q = 0; q < NX_LQ; q++)
		if (x->qpos[b][kind][q])
			nx_l_wait_rel(x->L, e, q, x->base_q[q] + x->qpos[b][kind][q] - (wrap ? x->qcnt[q] : 0),
			              RF_Q + x->qreg[q]);
}

/* Tails: what tile u (done earlier: in the loop, or an earlier tail) had
 * completed when its last stage signalled / its stores were issued. */
static nx_lsync done_of(const rk *x, int64_t u, bool stores)
{
	nx_lsync a;
	memset(&a, 0, sizeof a);
	if (u < 0)
		return a;
	if (u >= x->loop_tiles)
		return stores ? x->tail_st[u - x->loop_tiles] : x->tail_last[u - x->loop_tiles];
	int NB = x->nb;
	int64_t it = u / NB;
	int b = (int)(u % NB);
	if (stores) {
		for (int q = 0; q < NX_LQ; q++)
			if (x->qpos[b][1][q])
				a.s[q] = x->base_q[q] + it * x->qcnt[q] + x->qpos[b][1][q];
	} else {
		nx_engine last = x->seng[x->nstage - 1];
		a.s[NX_LSEM_ENG + last] = x->base_e[last] + it * NB * x->per[last] + x->idx[b][x->nstage - 1] + 1;
	}
	return a;
}

/* the kp least busy queues (estimate: piece_ns) for value v's pieces of
 * a tile of np partitions and kt rows, charged with the pieces */
static void pick(rk *x, int v, int64_t np, int64_t kt, int kp, int8_t *qs)
{
	double d = piece_ns(x, v, np, kt, kp);
	bool used[NX_LQ] = {false}, row = x->v[v].kind == V_ROWIN || x->v[v].kind == V_ROW;
	for (int k = 0; k < kp; k++) {
		if (x->rr) {
			/* at most two counts per queue and body for each kind of
			 * piece (per-row values, rows of 1 byte, wider rows): the
			 * least busy of the queues with the fewest pieces of the kind
			 * so far (rather than in rotation, which put the f32 rows of
			 * bert_dp_graph_4's cross-entropy on some queues and its pred
			 * rows and statistics on others: 1.2 to 6.7 ms per queue) */
			int (*rc)[NX_LQ] = &x->rcnt[!row ? 0 : nx_dtype_bytes[x->v[v].dt] == 1 ? 1 : 2];
			int b = -1;
			for (int q = 0; q < NX_LQ; q++)
				if (!used[q] && (b < 0 || (*rc)[q] < (*rc)[b] || ((*rc)[q] == (*rc)[b] && x->qload[q] < x->qload[b])))
					b = q;
			used[b] = true;
			qs[k] = (int8_t)b;
			(*rc)[b]++;
			x->qload[b] += d;
			continue;
		}
		int b = -1;
		for (int q = 0; q < NX_LQ; q++)
			if (!used[q] && (b < 0 || x->qload[q] < x->qload[b]))
				b = q;
		used[b] = true;
		qs[k] = (int8_t)b;
		x->qload[b] += d;
	}
}

/* the tile's width: the chunk's (long rows) or the row's */
static int64_t t_w(const rk *x, const tl *t)
{
	return x->nc > 1 && t->c == x->nc - 1 ? x->cl : x->C;
}

/* output o is stored by tile t: rows always, per-row values by the last
 * chunk of a long row */
static bool t_out(const rk *x, int c, int o)
{
	int k = x->outs[o];
	return x->nc < 2 || c == x->nc - 1 || x->v[k].kind == V_ROWIN || x->v[k].kind == V_ROW;
}

/* one transfer per piece: value v's [np, per] rows of tile t, partitions
 * split in kp ranges, piece k on queue qs[k] (long rows: one row per
 * partition, the chunk's columns of it) */
static void t_dma(rk *x, tl *t, int v, nx_lval *hv, bool load, int kp, const int8_t *qs, nx_lsync *acc)
{
	nx_lower *L = x->L;
	int esz = nx_dtype_bytes[hv->dt];
	bool row = x->v[v].kind == V_ROWIN || x->v[v].kind == V_ROW, ch = row && x->nc > 1;
	int64_t per = ch ? t_w(x, t) : io_elems(x, v, t->kt), per1 = row ? x->Cf : 1;
	int64_t pst = ch ? x->Cf : per, c0 = ch ? t->c * x->C : 0;
	for (int64_t pc = 0; pc < kp; pc++) {
		int64_t p0 = t->np * pc / kp, p1 = t->np * (pc + 1) / kp;
		int32_t s1[1] = {1};
		uint32_t c[1] = {(uint32_t)per};
		nx_ap h = nx_ap_hbm(hv->dt, hv->buf->off + (t->r0 * per1 + p0 * pst + c0) * esz, (int)(p1 - p0), pst, 1,
		                    s1, c);
		if (x->lv >= 0)
			h.loop_stride[x->lv] = x->step * per1 * esz;
		nx_ap sb = nx_ap_sbuf(x->v[v].dt, 0, (int)t->np, x->v[v].off + t->set * x->bufb, 1, s1, c);
		sb.part_start = (uint16_t)p0;
		sb.part_count = (uint16_t)(p1 - p0);
		int q = qs[pc];
		nx_lsync y = load ? nx_l_dma_q(L, NX_ENG_SP, q, sb, h) : nx_l_dma_q(L, NX_ENG_SP, q, h, sb);
		nx_l_max(acc, &y);
		nx_l_max(&t->ld, &y);
	}
}

/* pieces of one input or output of a tile of np partitions */
static int pieces(int k, int64_t np)
{
	return np < k ? (int)np : k;
}

static void t_load(rk *x, tl *t)
{
	nx_lower *L = x->L;
	int ND = x->nd;
	nx_engine last = x->seng[x->nstage - 1];
	/* the last stage and the stores of tile u - ND (an input's slot may
	 * hold an output later in the tile: layout) */
	if (t->rel) {
		int pb = t->b - ND, wrap = pb < 0;
		pb += wrap ? x->nb : 0;
		nx_l_wait_rel(L, NX_ENG_SP, NX_LSEM_ENG + last,
		              x->base_e[last] + x->idx[pb][x->nstage - 1] + 1 - wrap * x->nb * x->per[last], RF_ENG + last);
		if (x->io_shared)
			wait_q(x, NX_ENG_SP, pb, 1, wrap);
	} else {
		nx_lsync a = done_of(x, t->u - ND, false), b = done_of(x, t->u - ND, true);
		if (x->io_shared)
			nx_l_max(&a, &b);
		nx_l_wait(L, NX_ENG_SP, &a);
	}
	memset(&t->ld, 0, sizeof t->ld);
	int first = 0;
	for (int l = 0; l < x->nld; l++) {
		int v = x->ld[l], kp = pieces(t->kl, t->np);
		int8_t qs[NX_LQ];
		if (t->rel)
			memcpy(qs, x->qmap[t->b][0] + first, (size_t)kp);
		else
			pick(x, v, t->np, t->kt, kp, qs);
		t_dma(x, t, v, x->ext[x->v[v].pn], true, kp, qs, &x->loads);
		first += kp;
	}
}

/* stage s reads a column or a one-element input (loaded before the tiles) */
static bool stage_cols(const rk *x, int s)
{
	for (int q = 0; q < x->nop; q++) {
		const rop *o = &x->op[q];
		if (o->stage != s)
			continue;
		int vs[4] = {o->sc, -1, -1, -1};
		for (int j = 0; j < o->no; j++)
			vs[1 + j] = o->o[j];
		for (int j = 0; j < 4; j++) {
			int k = vs[j];
			while (k >= 0 && (x->v[k].kind == V_ALIAS || x->v[k].kind == V_CB || x->v[k].kind == V_RB ||
			                  x->v[k].kind == V_SBC))
				k = x->v[k].a;
			if (k >= 0 && (x->v[k].kind == V_COLIN || x->v[k].kind == V_COL || x->v[k].kind == V_SCIN ||
			               (x->v[k].kind == V_CONST && x->v[k].mem)))
				return true;
		}
	}
	return false;
}

static void t_stage(rk *x, tl *t, int s)
{
	nx_lower *L = x->L;
	int ND = x->nd;
	nx_engine e = x->seng[s];
	if (s == 0) {
		if (t->rel) {
			int pb = t->b - ND, wrap = pb < 0;
			pb += wrap ? x->nb : 0;
			wait_q(x, e, t->b, 0, false);
			wait_q(x, e, pb, 1, wrap);
		} else {
			/* its loads, the stores of tile u - ND */
			nx_lsync a = done_of(x, t->u - ND, true);
			nx_l_max(&a, &t->ld);
			nx_l_wait(L, e, &a);
		}
	} else {
		nx_engine pe = x->seng[s - 1];
		if (t->rel)
			nx_l_wait_rel(L, e, NX_LSEM_ENG + pe, x->base_e[pe] + x->idx[t->b][s - 1] + 1, RF_ENG + pe);
		else
			nx_l_wait(L, e, &t->prev);
	}
	/* the columns: before the engine's first stage that reads one (the
	 * first tile's loads and reductions need not wait for them) */
	if (!x->cwait[e] && stage_cols(x, s)) {
		nx_l_wait(L, e, &x->colw);
		x->cwait[e] = true;
	}
	x->chunk = t->c;
	x->pset = (t->set + x->nd - 1) % x->nd;
	x->w = t_w(x, t);
	for (int q = 0; q < x->nop; q++)
		if (x->op[q].stage == s)
			nx_rw_emit_op(x, &x->op[q], t->np, t->kt, t->set);
	x->w = x->C;
	t->prev = nx_l_signal(L, e);
	if (s == x->sst)
		t->sst = t->prev;
	nx_l_max(&x->comp, &t->prev);
}

/* the tile's outputs, by SP after its last stage */
static void t_store(rk *x, tl *t)
{
	nx_lower *L = x->L;
	nx_engine last = x->seng[x->sst];
	if (t->rel)
		nx_l_wait_rel(L, NX_ENG_SP, NX_LSEM_ENG + last, x->base_e[last] + x->idx[t->b][x->sst] + 1,
		              RF_ENG + last);
	else
		nx_l_wait(L, NX_ENG_SP, &t->sst);
	memset(&t->ld, 0, sizeof t->ld);
	int first = 0;
	for (int o = 0; o < x->nout; o++) {
		int kp = pieces(t->ks, t->np);
		int8_t qs[NX_LQ];
		if (!t_out(x, t->c, o))
			continue;
		if (t->rel)
			memcpy(qs, x->qmap[t->b][1] + first, (size_t)kp);
		else
			pick(x, x->outs[o], t->np, t->kt, kp, qs);
		t_dma(x, t, x->outs[o], x->out[o], false, kp, qs, &x->stores);
		first += kp;
	}
}

/* The order of the body's items (tile b, item j: 0 its loads, 1..nstage
 * its stages, nstage+1 its stores): a list schedule over estimated
 * durations (stages: op_cycles at the engine's clock; transfers: a piece's
 * DMA cost, the 16 queues shared by loads and stores), each engine in
 * order, the next item the ready one that could start first (ties: the
 * older tile), so an engine works on the next tile while the current one
 * is on another engine. */
static void schedule(rk *x)
{
	int ND = x->nd, NB = x->nb, nit = x->nstage + 2, n = 0;
	double sdur[RW_MAX * 2] = {0};
	for (int q = 0; q < x->nop; q++) {
		int only;
		double c = nx_rw_op_cycles(x, &x->op[q], &only);
		nx_engine e = x->op[q].e;
		sdur[x->op[q].stage] +=
		    c / (e == NX_ENG_ACT ? clk_act : e == NX_ENG_POOL ? clk_pool : e == NX_ENG_PE ? clk_pe : clk_dve);
	}
	/* a transfer item: latency (one piece) and its share of the queues */
	double lat[2] = {0, 0}, work[2] = {0, 0};
	for (int k = 0; k < 2; k++) {
		int n1 = k ? x->nout : x->nld, kp = k ? x->ks : x->kl;
		for (int l = 0; l < n1; l++) {
			int v = k ? x->outs[l] : x->ld[l];
			double d = x->L->t->dma_fixed_ns + (double)io_elems(x, v, x->kt) * 128.0 / kp *
			                                       nx_dtype_bytes[x->v[v].dt] / nx_target_dma_queue_gbps(x->L->t);
			lat[k] = d > lat[k] ? d : lat[k];
			work[k] += d * kp / NX_LQ;
		}
	}
	double efree[NX_ENG_COUNT] = {0}, fin[RW_NB][RW_MAX * 2 + 2], qfree = 0;
	int next[RW_NB] = {0};
	while (n < NB * nit) {
		int bb = -1;
		double best = 0;
		for (int b = 0; b < NB; b++) {
			int j = next[b];
			/* loads and stores in tile order; the loads into a buffer set
			 * after the tile before in it is done */
			if (j >= nit || (b > 0 && j == 0 && next[b - 1] < 1) || (b > 0 && j == nit - 1 && next[b - 1] < nit) ||
			    (b >= ND && j == 0 && next[b - ND] < nit))
				continue;
			/* long rows: a stage after the same stage of the chunk before
			 * (its reductions carry their partials, on the same engine) */
			if (x->nc > 1 && b > 0 && j >= 1 && j < nit - 1 && next[b - 1] <= j)
				continue;
			nx_engine e = j == 0 || j == nit - 1 ? NX_ENG_SP : x->seng[j - 1];
			double st = efree[e];
			int jp = j == nit - 1 ? x->sst + 1 : j - 1; /* stores: after stage sst */
			if (j > 0 && fin[b][jp] > st)
				st = fin[b][jp];
			if (j == 0 && b >= ND && fin[b - ND][x->nstage] > st)
				st = fin[b - ND][x->nstage];
			if (bb < 0 || st < best)
				bb = b, best = st;
		}
		int j = next[bb]++;
		if (j == 0 || j == nit - 1) {
			int k = j != 0;
			double st = best > qfree ? best : qfree;
			qfree = st + work[k];
			fin[bb][j] = st + lat[k];
			efree[NX_ENG_SP] = best + 50;
		} else {
			nx_engine e = x->seng[j - 1];
			fin[bb][j] = efree[e] = best + sdur[j - 1];
		}
		x->order[n][0] = bb, x->order[n][1] = j;
		n++;
	}
	/* the queues of each transfer item's pieces, in this order */
	memset(x->qpos, 0, sizeof x->qpos);
	memset(x->qcnt, 0, sizeof x->qcnt);
	memset(x->qload, 0, sizeof x->qload);
	memset(x->rcnt, 0, sizeof x->rcnt);
	for (int k = 0; k < NB * nit; k++) {
		int b = x->order[k][0], j = x->order[k][1];
		if (j != 0 && j != nit - 1)
			continue;
		int kind = j != 0, nv = kind ? x->nout : x->nld, kp = kind ? body_ks(x, b) : body_kl(x, b), p = 0;
		for (int l = 0; l < nv; l++) {
			if (kind && !t_out(x, b % x->nc, l))
				continue;
			pick(x, kind ? x->outs[l] : x->ld[l], 128, x->kt, kp, x->qmap[b][kind] + p);
			p += kp;
		}
		for (int i = 0; i < p; i++) {
			int q = x->qmap[b][kind][i];
			x->qpos[b][kind][q] = ++x->qcnt[q];
		}
	}
}

/* a tail tile u: everything in order, absolute waits */
static void tail(rk *x, int64_t np, int64_t kt, int64_t r0, int b, int64_t u)
{
	tl t;
	memset(&t, 0, sizeof t);
	t.np = np, t.kt = kt, t.r0 = r0, t.b = b, t.set = b, t.u = u;
	t.c = (int)(u % x->nc);
	t.kl = x->kl, t.ks = u == x->ntile - 1 ? NX_LQ / x->nout : x->ks;
	t_load(x, &t);
	for (int s = 0; s < x->nstage; s++)
		t_stage(x, &t, s);
	NX_ASSERT(u - x->loop_tiles >= 0 && u - x->loop_tiles < RW_NB + RW_NC + 2);
	x->tail_last[u - x->loop_tiles] = t.prev;
	t_store(x, &t);
	x->tail_st[u - x->loop_tiles] = t.ld;
}

/* The loop body: NB full tiles (tile b in buffer set b % ND), their items
 * in the order of schedule(). */
static void body(rk *x, int64_t r0)
{
	int NB = x->nb, nit = x->nstage + 2;
	tl t[RW_NB];
	for (int b = 0; b < NB; b++) {
		memset(&t[b], 0, sizeof t[b]);
		t[b].np = 128, t[b].kt = x->kt, t[b].r0 = r0 + b / x->nc * 128 * x->kt, t[b].b = b, t[b].set = b % x->nd;
		t[b].c = b % x->nc;
		t[b].rel = true;
		t[b].kl = body_kl(x, b), t[b].ks = body_ks(x, b);
	}
	for (int k = 0; k < NB * nit; k++) {
		int b = x->order[k][0], j = x->order[k][1];
		if (j == 0)
			t_load(x, &t[b]);
		else if (j <= x->nstage)
			t_stage(x, &t[b], j - 1);
		else
			t_store(x, &t[b]);
	}
	/* registers: one body further */
	bool used[NX_ENG_COUNT];
	nx_l_kernel_engines(x->seng, x->nstage, used);
	for (int e = 0; e < NX_ENG_COUNT; e++) {
		if (!used[e])
			continue;
		for (int pe = 0; pe < NX_ENG_COUNT; pe++)
			if (x->per[pe])
				nx_l_addreg(x->L, (nx_engine)e, RF_ENG + pe, NB * x->per[pe]);
		bool done[RF_N] = {false};
		for (int q = 0; q < NX_LQ; q++)
			if (x->qcnt[q] && !done[RF_Q + x->qreg[q]]) {
				done[RF_Q + x->qreg[q]] = true;
				nx_l_addreg(x->L, (nx_engine)e, RF_Q + x->qreg[q], x->qcnt[q]);
			}
	}
}

/* pieces per input (or output) of a tile: the nd tiles in flight hold
 * two transfers per queue (layer norm: 82.8 us at 8 buffer sets x 4
 * pieces, 88.0 at 8 x 8, 98.9 at 8 x 2; softmax 148.2 us at 4 x 8, 161.0
 * at 4 x 4), each as large as that allows (1.3 us fixed cost each) */
static int tile_pieces(int nd, int n)
{
	int k = (2 * NX_LQ + nd * n - 1) / (nd * n);
	k = k < NX_LQ / n ? k : NX_LQ / n;
	return k > 1 ? k : 1;
}

/* -O2 (and -O3) estimate (ns) for kt rows per partition and nd buffer
 * sets: the larger of the queues' work (piece_ns of each piece, over 16
 * queues) plus one tile's compute, and the busiest side's compute per
 * tile between the first load piece and the last store piece; plus each
 * tile after the loop one after another, and at each loop iteration's end
 * SP's stores of the last tiles holding up the next iteration's loads
 * (nd - 1 tiles) */
static double o2_cost(rk *x, int nd, int64_t k)
{
	int64_t T0 = x->R / (128 * k), rem = x->R - T0 * 128 * k;
	int64_t ntile = (T0 + (rem / 128 > 0) + (rem % 128 > 0)) * x->nc;
	T0 *= x->nc;
	int nb = body_tiles(T0, nd, x->nc, false);
	int64_t groups = T0 / nb, tails = ntile - groups * nb;
	int kl = tile_pieces(nd, x->nld), ks = tile_pieces(nd, x->nout);
	double work = 0, lat_l = 0, lat_s = 0, comp = 0;
	for (int l = 0; l < x->nld; l++) {
		double d = piece_ns(x, x->ld[l], 128, k, kl);
		work += kl * d / NX_LQ;
		lat_l = d > lat_l ? d : lat_l;
	}
	for (int o = 0; o < x->nout; o++) {
		double d = piece_ns(x, x->outs[o], 128, k, ks);
		work += ks * d / NX_LQ;
		lat_s = d > lat_s ? d : lat_s;
	}
	x->kt = k;
	double act = 0, port = 0, flex = 0, pe = 0;
	for (int q = 0; q < x->nop; q++) {
		int only;
		double c = nx_rw_op_cycles(x, &x->op[q], &only);
		if (only == 3) { /* PE (column sums) */
			comp += c / clk_pe;
			pe += c / clk_pe;
			continue;
		}
		comp += c / clk_act;
		*(only == 1 ? &act : only == 2 ? &port : &flex) += c / (only == 2 ? clk_port(x, k) : clk_act);
	}
	double ct = (act + port + flex) / 2;
	ct = ct > act ? ct : act;
	ct = ct > port ? ct : port;
	ct = ct > pe ? ct : pe;
	/* queue-bound: the queues' work and one tile's compute; compute-bound:
	 * the busiest side per tile between the first load and the last store */
	double qb = (double)ntile * work + comp, cb = lat_l + (double)ntile * ct + lat_s;
	/* long rows: a buffer set's round (a chunk's load, compute and store)
	 * over the sets in flight (measured, [2048, 30522] x - max: 3.03 ms
	 * in 5 chunks and 2 sets, which the terms above put at 1.9 ms; 2.10
	 * with 4 sets); the same for a long body (BERT's layer-norm forward
	 * and backward with its column sums in one kernel, 13 stages: 365.6
	 * us in 2 sets, which the terms above put at 254, 315.6 in 3) */
	if (x->nc > 1 || x->nop >= 24) {
		double cyc = (double)ntile * (work + ct) * 2.0 / nd;
		cb = cb > cyc ? cb : cyc;
	}
	double per = work > ct ? work : ct;
	return (qb > cb ? qb : cb) + (double)tails * (lat_l + comp + lat_s) +
	       (double)(groups > 1 ? groups - 1 : 0) * (nd - 1) * per;
}

/* The body's first and last transfers in more pieces when the kernel is
 * bound by compute plus the exposed first load and last store rather than
 * by the queues' work, which the extra pieces' fixed costs raise (layer
 * norm: 82.8 -> 80.2 us; softmax, queue-bound: 148.2 against 149.5) */
static bool head_tail(rk *x)
{
	double w[2] = {0, 0}, lat[2][2] = {{0, 0}, {0, 0}};
	x->ht = false;
	for (int h = 0; h < 2; h++) {
		x->ht = h;
		for (int b = 0; b < x->nb; b++)
			for (int k = 0; k < 2; k++) {
				int nv = k ? x->nout : x->nld, kp = k ? body_ks(x, b) : body_kl(x, b);
				for (int l = 0; l < nv; l++) {
					double d = piece_ns(x, k ? x->outs[l] : x->ld[l], 128, x->kt, kp);
					w[h] += kp * d;
					if ((k == 0 && b == 0) || (k == 1 && b == x->nb - 1))
						lat[h][k] = d > lat[h][k] ? d : lat[h][k];
				}
			}
	}
	double act = 0, port = 0, flex = 0, pe = 0;
	for (int q = 0; q < x->nop; q++) {
		int only;
		double c = nx_rw_op_cycles(x, &x->op[q], &only);
		/* (the port side at DVE's clock even where POOL runs it: the
		 * split it picks for layer norm measures 80.2 us against 82.5) */
		if (only == 3)
			pe += c / clk_pe;
		else
			*(only == 1 ? &act : only == 2 ? &port : &flex) += c / (only == 2 ? clk_dve : clk_act);
	}
	double ct = (act + port + flex) / 2;
	ct = ct > act ? ct : act;
	ct = ct > port ? ct : port;
	ct = ct > pe ? ct : pe;
	double t[2];
	for (int h = 0; h < 2; h++) {
		double q = w[h] * (double)(x->loop_tiles / x->nb) / NX_LQ, c = lat[h][0] + ct * (double)x->ntile + lat[h][1];
		t[h] = q > c ? q : c;
	}
	x->ht = t[1] < t[0];
	return x->ht;
}

/* long rows: one row per partition, chunks of it per tile; the chunks
 * (ncm at least) and buffer sets (lo at least) by the estimate, the body
 * a multiple of both; x is left with them (0: none fits) */
static int chunks_pick(rk *x, int ncm, int lo, double *best)
{
	int bnc = 0, bnd = 0;
	bool bsep = true;
	int64_t half = x->L->sbuf_half, cols;
	for (int nc = ncm; nc <= RW_NC; nc++) {
		if (!nx_rw_set_chunks(x, nc))
			continue;
		x->sep = true;
		int64_t s1 = nx_rw_layout(x, 1, &cols), rm = half - cols - 64 * x->nv;
		if (rm / 3 < s1) { /* outputs on input slots */
			x->sep = false;
			s1 = nx_rw_layout(x, 1, &cols);
		}
		for (int nd = RW_ND; nd >= lo; nd--) {
			if (nd * s1 > rm || lcm(nd, nc) > RW_NB)
				continue;
			double c = o2_cost(x, nd, 1);
			if (bnc == 0 || c < *best)
				bnc = nc, bnd = nd, bsep = x->sep, *best = c;
		}
	}
	if (bnc == 0)
		return 0;
	nx_rw_set_chunks(x, bnc);
	x->sep = bsep, x->nd = bnd;
	return bnc;
}

/* the op of column sum c */
static const rop *cs_op(const rk *x, int c)
{
	for (int q = 0; q < x->nop; q++)
		if (x->op[q].kind == O_CSUM && x->op[q].v == x->cs[c])
			return &x->op[q];
	NX_ASSERT(0);
	return NULL;
}

/* Column sums, before the tiles: DVE sets each sum's ones column and a
 * zero row, PE zeroes the sums' PSUM columns (matmuls of one zero
 * partition, which start their banks); the tiles' matmuls then only
 * accumulate. */
static void csum_begin(rk *x, int h, int ph)
{
	nx_lower *L = x->L;
	if (!x->ncs)
		return;
	int64_t CT = (x->C + 127) / 128, z = 0;
	int32_t s1[1] = {1};
	uint32_t c1[1] = {1};
	nx_l_wait(L, NX_ENG_DVE, &L->sbuf_free[h]);
	for (int c = 0; c < x->ncs; c++) {
		const rv *v = &x->v[x->cs[c]];
		int64_t ones = v->off + nx_l_al64(CT * nx_dtype_bytes[v->dt]);
		nx_insn *m = nx_l_emit(L, NX_ENG_DVE, NX_I_MEMSET);
		m->fimm[0] = 1.0f;
		m->ap[0] = nx_ap_sbuf(x->v[cs_op(x, c)->o[0]].dt, 0, 128, ones, 1, s1, c1);
		z = ones + 64;
	}
	c1[0] = 128;
	nx_insn *m = nx_l_emit(L, NX_ENG_DVE, NX_I_MEMSET);
	m->fimm[0] = 0.0f;
	m->ap[0] = nx_ap_sbuf(NX_DT_F32, 0, 1, z, 1, s1, c1);
	nx_lsync y = nx_l_signal(L, NX_ENG_DVE);
	nx_l_max(&x->comp, &y);
	nx_l_wait(L, NX_ENG_PE, &L->psum_free[ph]);
	nx_l_wait(L, NX_ENG_PE, &y);
	for (int64_t z0 = 0, tot = x->ncs * CT; z0 < tot; z0 += 128) {
		int64_t n = tot - z0 < 128 ? tot - z0 : 128;
		nx_insn *mm = nx_l_emit(L, NX_ENG_PE, NX_I_MATMUL);
		mm->flags = NX_IF_START;
		c1[0] = (uint32_t)n;
		mm->ap[0] = nx_ap_psum(NX_DT_F32, 0, 128, x->pbase + z0 * 4, 1, s1, c1);
		mm->ap[2] = nx_ap_sbuf(NX_DT_F32, 0, 1, z, 1, s1, c1);
		c1[0] = 128;
		mm->ap[1] = nx_ap_sbuf(NX_DT_F32, 0, 1, z, 1, s1, c1);
	}
}

/* Column sums, after the tiles: ACT adds the init value and casts
 * ([128, ct], the ragged last 128 columns on fewer partitions), SP
 * stores them (out[ct * 128 + p] = sums[p, ct]). */
static void csum_end(rk *x, int h, int ph)
{
	nx_lower *L = x->L;
	if (!x->ncs)
		return;
	int64_t CTf = x->C / 128, rem = x->C % 128;
	int32_t s1[1] = {1}, s128[1] = {128};
	uint32_t c1[1];
	nx_lsync pe = nx_l_signal(L, NX_ENG_PE);
	nx_l_wait(L, NX_ENG_ACT, &L->sbuf_free[h]);
	nx_l_wait(L, NX_ENG_ACT, &pe);
	for (int c = 0; c < x->ncs; c++) {
		const rv *v = &x->v[x->cs[c]];
		nx_l_colsum_finish(L, v->dt, v->off, x->pbase + v->pc * 4, x->C, cs_op(x, c)->init, v->dt, -1);
	}
	nx_lsync ev = nx_l_signal(L, NX_ENG_ACT);
	nx_l_max(&x->comp, &ev);
	L->psum_free[ph] = ev;
	nx_l_wait(L, NX_ENG_SP, &ev);
	for (int c = 0; c < x->ncs; c++) {
		const rv *v = &x->v[x->cs[c]];
		nx_lval *o = x->csout[c];
		int64_t eo = nx_dtype_bytes[v->dt];
		for (int part = 0; part < 2; part++) {
			int64_t np = part ? rem : 128, nf = part ? (rem ? 1 : 0) : CTf, off = part ? CTf : 0;
			if (np == 0 || nf == 0)
				continue;
			c1[0] = (uint32_t)nf;
			nx_ap ho = nx_ap_hbm(o->dt, o->buf->off + off * 128 * eo, (int)np, 1, 1, s128, c1);
			nx_lsync y = nx_l_dma_q(L, NX_ENG_SP, (2 * c + part) % (NX_LQ / 2), ho,
			                        nx_ap_sbuf(v->dt, 0, (int)np, v->off + off * eo, 1, s1, c1));
			nx_l_max(&x->stores, &y);
		}
	}
}

nx_status nx_l_row(nx_lower *L, const nx_inst *f, nx_lval *const *ops, nx_lval *out)
{
	rk x;
	if (!nx_rw_build(&x, L, f))
		return nx_l_err(L, "fusion outside the row kernel's subset");
	x.L = L, x.ext = ops;
	if (out->tuple ? out->ntuple != x.nout + x.ncs : x.nout + x.ncs != 1)
		return nx_l_err(L, "fusion outputs do not match its body");
	for (int o = 0; o < x.nout; o++) {
		x.out[o] = out->tuple ? out->tuple[x.otup[o]] : out;
		if (x.out[o]->dt != x.v[x.outs[o]].dt)
			return nx_l_err(L, "row kernel output type");
	}
	for (int c = 0; c < x.ncs; c++) {
		x.csout[c] = out->tuple[x.cstup[c]];
		if (x.csout[c]->dt != x.v[x.cs[c]].dt)
			return nx_l_err(L, "row kernel output type");
	}
	/* tile: kt rows per partition and nd buffer sets within SBUF, by an
	 * estimate of the time: the loads' time per queue (lq), a transfer's
	 * fixed cost (1.3 us) per tile, the first load and the last store not
	 * overlapped (one tile each), nor the first tile's compute before the
	 * first store and the last's after the last load (comp: its ops back
	 * to back; layer norm 105.7 us at kt 1 against 109.1 at kt 2), and a
	 * tile's time for each tile outside the loop (tails wait for absolute
	 * counts) */
	x.sep = true;
	int ncm = nx_rw_chunks_min(&x, L->sbuf_half);
	if (ncm < 1)
		return nx_l_err(L, "row kernel rows do not fit SBUF");
	int64_t cols, set1 = nx_rw_layout(&x, 1, &cols);
	int64_t rpp = (x.R + 127) / 128;
	int64_t room = L->sbuf_half - cols - 64 * x.nv;
	if (room / 3 < set1) { /* outputs on input slots rather than two buffer sets */
		x.sep = false;
		set1 = nx_rw_layout(&x, 1, &cols);
	}
	int64_t kt = 0;
	double bestc = 0;
	if (ncm > 1) {
		/* four sets or more where they fit ([2048, 30522] x - max: 2.10 ms
		 * in 5 chunks and 4 sets, 3.03 and 3.71 with 2 and 3, with a
		 * chunk's output on its input's slot) */
		int nc = chunks_pick(&x, ncm, 4, &bestc);
		if (nc == 0)
			nc = chunks_pick(&x, ncm, 2, &bestc);
		if (nc == 0)
			return nx_l_err(L, "row kernel rows do not fit SBUF");
		kt = 1;
	}
	/* buffer sets: up to eight (layer norm at kt 1: 82.8 us with eight
	 * against 91.7 with four), fewer where the estimate is lower (larger
	 * tiles: softmax 148.2 us at 16 rows with four against 152.2 at 8) */
	for (int nd = RW_ND; nd >= 2 && x.nc == 1; nd--) {
		int64_t km = room / nd / set1;
		if (km > 64)
			km = 64;
		if (km > rpp)
			km = rpp;
		if (L->o3) { /* -O3: up to 128 rows per partition */
			km = room / nd / set1;
			km = km < 128 ? km : 128;
			km = km < rpp ? km : rpp;
		}
		for (int64_t k = 1; k <= km; k++) {
			double c = o2_cost(&x, nd, k);
			if (kt == 0 || c < bestc)
				kt = k, x.nd = nd, bestc = c;
		}
	}
	if (kt < 1)
		return nx_l_err(L, "row kernel rows do not fit SBUF");
	x.kt = kt;
	x.io_shared = false;
	x.bufb = nx_rw_layout(&x, kt, &cols);
	int64_t base;
	int h;
	nx_status rc = nx_l_sbuf_begin(L, x.bufb * x.nd + cols, &base, &h);
	if (rc)
		return rc;
	for (int k = 0; k < x.nv; k++) {
		if (x.v[k].kind == V_COLIN || x.v[k].kind == V_SCIN || x.v[k].kind == V_COL || x.v[k].kind == V_CSUM ||
		    (x.v[k].kind == V_CONST && x.v[k].mem))
			x.v[k].off += base + x.bufb * x.nd;
		else if (x.v[k].slot)
			x.v[k].off += base;
	}
	int ph = 0;
	if (x.ncs) { /* column sums: a PSUM half (dots alternate them) */
		ph = L->pidx++ & 1;
		x.pbase = ph * (L->t->psum_banks / 2) * L->t->psum_bank_bytes;
	}
	nx_rw_assign(&x);
	x.kl = tile_pieces(x.nd, x.nld);
	x.ks = tile_pieces(x.nd, x.nout);
	if (x.nld * x.kl > NX_LQ || x.nout * x.ks > NX_LQ)
		return nx_l_err(L, "row kernel has too many inputs or outputs");
	x.lv = -1;
	int64_t T = x.R / (128 * kt), rem = x.R - T * 128 * kt, k2 = rem / 128, s = rem % 128;
	int64_t Trow = T;
	T *= x.nc; /* tiles (long rows: a row's chunks are nc tiles) */
	x.nb = body_tiles(T, x.nd, x.nc, true);
	x.ntile = T + (k2 > 0) + (s > 0) * x.nc;
	x.loop_tiles = T / x.nb * x.nb;
	if (x.loop_tiles > 0)
		head_tail(&x);
	nx_l_plan_kernel(L, "row-loop");
	nx_l_plan(L, "shape", "%lld rows of %lld, %d values, %d instructions per tile, %d outputs", (long long)x.R,
	          (long long)x.Cf, x.nv, x.nop, x.nout);
	if (x.nc > 1)
		nx_l_plan(L, "tiling",
		          "[128 partitions, 1 row] x %d chunks of %lld (last %lld) per row, a tile per chunk; %lld tiles "
		          "in a loop, tail [%lld, 1] x %d",
		          x.nc, (long long)x.C, (long long)x.cl, (long long)T, (long long)s, s > 0 ? x.nc : 0);
	else
		nx_l_plan(L, "tiling",
		          "[128 partitions, %lld rows of %lld] per tile; %lld tiles in a loop, tail [128, %lld] + [%lld, 1]",
		          (long long)kt, (long long)x.C, (long long)T, (long long)k2, (long long)s);
	nx_l_plan(L, "loops", "tile %lld (%d buffers, %d tiles per iteration, per-iteration waits)", (long long)T, x.nd,
	          x.nb);
	char st[160];
	size_t len = 0;
	st[0] = 0;
	for (int k = 0; k < x.nop && len < sizeof st - 24; k++) {
		static const char *const kn[] = {"op", "rowscalar", "scalar", "reduce", "act-row", "neg", "iota", "colsum"};
		const rop *o = &x.op[k];
		len += (size_t)snprintf(st + len, sizeof st - len, "%s%s:%s%s", k ? " " : "", kn[o->kind],
		                        nx_engine_names[o->e], o->acc >= 0 ? "+acc" : "");
	}
	nx_l_plan(L, "body", "%s", st);
	if (x.ncs)
		nx_l_plan(L, "column sums", "%d on pe (matmuls against a ones column into psum half %d), stored after the tiles",
		          x.ncs, ph);
	nx_l_plan(L, "engines",
	          "sp loads %d pieces per tile (body tiles 0, 1: %d, %d), stores %d (last two: %d, %d) on the least "
	          "busy of 16 queues, %d stages",
	          x.nld * x.kl, x.nld * body_kl(&x, 0), x.nld * body_kl(&x, 1), x.nout * x.ks,
	          x.nout * body_ks(&x, x.nb - 2), x.nout * body_ks(&x, x.nb - 1), x.nstage);
	bool used[NX_ENG_COUNT];
	nx_l_kernel_engines(x.seng, x.nstage, used);
	nx_l_kernel_begin(L, h, used);
	for (int k = 0; k < x.nv; k++)
		if (x.v[k].pn >= 0)
			nx_l_wait(L, NX_ENG_SP, &ops[x.v[k].pn]->buf->written);
	for (int o = 0; o < x.nout; o++)
		nx_l_wait(L, NX_ENG_SP, &x.out[o]->buf->war);
	for (int c = 0; c < x.ncs; c++)
		nx_l_wait(L, NX_ENG_SP, &x.csout[c]->buf->war);
	/* columns (every partition gets the [C] vector) and one-element
	 * inputs, before the first tile, by SP on queues 7, 6, ... (the second
	 * tile's): the compute engines wait for them */
	nx_lsync colw;
	memset(&colw, 0, sizeof colw);
	int cq = 0;
	bool cbc = false;
	int64_t pre_s[NX_LQ]; /* queue counts before the columns (the tiles need not wait for them) */
	int64_t pre_e[NX_ENG_COUNT]; /* engine counts before (POOL broadcasts columns) */
	for (int q = 0; q < NX_LQ; q++)
		pre_s[q] = L->qcount[q];
	for (int e = 0; e < NX_ENG_COUNT; e++)
		pre_e[e] = L->ecount[e];
	for (int k = 0; k < x.nv; k++) {
		rv *v = &x.v[k];
		if (v->kind != V_COLIN && v->kind != V_SCIN)
			continue;
		nx_lval *src = ops[v->pn];
		int32_t s1[1] = {1};
		uint32_t c1[1] = {(uint32_t)(v->kind == V_COLIN ? x.C : 1)};
		bool big = v->kind == V_COLIN && x.C * nx_dtype_bytes[v->dt] >= 512;
		nx_l_wait(L, NX_ENG_SP, &src->buf->written);
		nx_ap hb = nx_ap_hbm(src->dt, src->buf->off, big ? 1 : 128, 0, 1, s1, c1);
		nx_ap sb = nx_ap_sbuf(v->dt, 0, big ? 1 : 128, v->off, 1, s1, c1);
		nx_lsync y = nx_l_dma_q(L, NX_ENG_SP, 7 - cq++ % 8, sb, hb);
		nx_l_max(&colw, &y);
		nx_l_max(&src->buf->war, &y);
		if (big) {
			/* partition 0 to the others on POOL (1.5 us for 1024
			 * elements) rather than 128 copies over the store queues
			 * (5.4 us on each; the stores are the last to finish) */
			nx_l_wait(L, NX_ENG_POOL, &y);
			nx_insn *in = nx_l_emit(L, NX_ENG_POOL, NX_I_PARTITION_BCAST);
			in->ap[0] = nx_ap_sbuf(v->dt, 1, 127, v->off, 1, s1, c1);
			in->ap[1] = sb;
			cbc = true;
		}
	}
	if (cbc) {
		nx_lsync y = nx_l_signal(L, NX_ENG_POOL);
		nx_l_max(&colw, &y);
		nx_l_max(&x.comp, &y);
	}
	nx_l_max(&x.loads, &colw);
	/* converted columns and constants read as operands, once, on DVE */
	bool cdve = false;
	for (int k = 0; k < x.nv; k++) {
		rv *v = &x.v[k];
		if (v->kind != V_COL && !(v->kind == V_CONST && v->mem))
			continue;
		if (!cdve) {
			nx_l_wait(L, NX_ENG_DVE, &L->sbuf_free[h]);
			nx_l_wait(L, NX_ENG_DVE, &colw);
		}
		cdve = true;
		if (v->kind == V_CONST) {
			int32_t s1[1] = {1};
			uint32_t c1[1] = {1};
			nx_insn *in = nx_l_emit(L, NX_ENG_DVE, NX_I_MEMSET);
			in->fimm[0] = v->imm;
			in->ap[0] = nx_ap_sbuf(v->dt, 0, 128, v->off, 1, s1, c1);
			continue;
		}
		nx_insn *in = nx_l_emit(L, NX_ENG_DVE, NX_I_TENSOR_COPY);
		in->ap[0] = nx_rw_vap(&x, k, 128, 1, 0, 0, false);
		in->ap[1] = nx_rw_vap(&x, v->a, 128, 1, 0, 0, false);
	}
	if (cdve) {
		nx_lsync y = nx_l_signal(L, NX_ENG_DVE);
		nx_l_max(&colw, &y);
		nx_l_max(&x.comp, &y);
	}
	csum_begin(&x, h, ph); /* (its signal before the tiles' counts start) */
	for (int q = 0; q < NX_LQ; q++)
		x.base_q[q] = L->qcount[q];
	for (int e = 0; e < NX_ENG_COUNT; e++)
		x.base_e[e] = L->ecount[e];
	nx_lsync e0;
	memset(&e0, 0, sizeof e0);
	for (int e = 0; e < NX_ENG_COUNT; e++)
		if (used[e] && e != NX_ENG_SP)
			e0.s[NX_LSEM_ENG + e] = pre_e[e];
	for (int q = 0; q < NX_LQ; q++)
		e0.s[q] = pre_s[q];
	for (int e = 0; e < NX_ENG_COUNT; e++)
		if (used[e])
			nx_l_wait(L, (nx_engine)e, &e0);
	x.colw = colw;
	memset(x.cwait, 0, sizeof x.cwait);
	for (int e = 0; e < NX_ENG_COUNT; e++)
		if (used[e])
			for (int r = 0; r < RF_N; r++)
				nx_l_setreg(L, (nx_engine)e, r, 0);
	int ND = x.nd;
	int NB = x.nb;
	int64_t groups = T / NB;
	/* signal positions of the body's stages, in the wavefront order */
	{
		int cnt[NX_ENG_COUNT] = {0};
		/* one register per distinct number of transfers per queue and body:
		 * pieces in rotation when the least busy queues need too many */
		for (x.rr = false;; x.rr = true) {
			schedule(&x);
			int vals[NX_LQ], nvals = 0;
			for (int q = 0; q < NX_LQ && nvals <= RF_N - RF_Q; q++) {
				int r = 0;
				while (r < nvals && vals[r] != x.qcnt[q])
					r++;
				if (r == nvals)
					vals[nvals++] = x.qcnt[q];
				x.qreg[q] = r;
			}
			if (nvals <= RF_N - RF_Q)
				break;
			NX_ASSERT(!x.rr);
		}
		for (int k = 0; k < NB * (x.nstage + 2); k++) {
			int b = x.order[k][0], j = x.order[k][1];
			if (j >= 1 && j <= x.nstage)
				x.idx[b][j - 1] = cnt[x.seng[j - 1]]++;
		}
	}
	int par = 0;
	if (groups > 0) {
		if (groups > 1) {
			for (int e = 0; e < NX_ENG_COUNT; e++)
				if (used[e])
					nx_l_loop(L, (nx_engine)e, groups);
			x.lv = L->s[NX_ENG_SP].depth - 1;
		}
		x.step = NB / x.nc * 128 * kt;
		body(&x, 0);
		if (groups > 1) {
			for (int e = 0; e < NX_ENG_COUNT; e++)
				if (used[e])
					nx_l_endloop(L, (nx_engine)e);
			x.lv = -1;
		}
	}
	x.loop_tiles = groups * NB;
	int64_t u = x.loop_tiles;
	/* tile u in set u % ND, as in the body (one body of T tiles need not
	 * be a multiple of ND: the first tail's set is not always set 0, and
	 * it waits for tile u - ND, the one before it in its set) */
	par = (int)(u % ND);
	for (; u < T; u++, par = (par + 1) % ND)
		tail(&x, 128, kt, u / x.nc * 128 * kt, par, u);
	if (k2 > 0) {
		tail(&x, 128, k2, Trow * 128 * kt, par, u++);
		par = (par + 1) % ND;
	}
	for (int c = 0; s > 0 && c < x.nc; c++, u++, par = (par + 1) % ND)
		tail(&x, s, 1, Trow * 128 * kt + k2 * 128, par, u);
	csum_end(&x, h, ph);
	for (int l = 0; l < x.nld; l++)
		nx_l_max(&ops[x.v[x.ld[l]].pn]->buf->war, &x.loads);
	/* queues 8..15 are POOL's outside this kernel: its next transfers on
	 * them follow SP's last ones (counts in issue order) */
	nx_lsync spi = nx_l_signal(L, NX_ENG_SP);
	nx_l_wait(L, NX_ENG_POOL, &spi);
	nx_lval *all[2 * RW_IO];
	for (int o = 0; o < x.nout; o++)
		all[o] = x.out[o];
	for (int c = 0; c < x.ncs; c++)
		all[x.nout + c] = x.csout[c];
	nx_l_kernel_end(L, h, all, x.nout + x.ncs, &x.loads, &x.stores, &x.comp);
	return NX_OK;
}
