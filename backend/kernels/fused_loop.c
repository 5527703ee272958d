/* backend/kernels/fused_loop.c — a fusion of elementwise ops whose values
 * exceed the fused kernel's SBUF budget (lower_fused.c), as one loop nest
 * over tiles instead of one kernel per op with HBM round trips between.
 *
 * Subset: parameters, elementwise ops with one engine instruction
 * (nx_l_elem_map, <= 3 operands), reshape / bitcast / copy / convert to the
 * same device type (sharing their operand's slot), broadcasts of a
 * one-element parameter or constant (a [128, 1] column loaded once before
 * the loop, read with free stride 0), broadcasts of a parameter of C
 * elements along the trailing axes (a bias row: a resident [128, tr] tile
 * loaded once, every tile starting at a multiple of C; tr a multiple of C,
 * or C / 2^k with k <= 7 so that partition p holds row[(p tr) mod C ..]);
 * every other value has the element count n of the outputs: the root, or the elements of a tuple root (each
 * computed in the body). The n elements are tiles of 128 partitions x tr
 * contiguous elements (full tiles, then [q, tr] and [1, s]).
 *
 * Per tile: SP loads the parameters (rows cut over the load queues), each
 * stage (consecutive instructions on one engine) computes and signals,
 * and the outputs are stored (POOL right after its own last stage, else
 * SP; sp_stream). Tiles alternate between two SBUF buffer sets (the loop
 * body holds two tiles), so tile i+2 loads while tile i computes and
 * stores: the stages of a tile run in order (stage k waits for stage k-1
 * of the same tile, a per-iteration wait whose register counts the
 * tiles); what tile i+2 reuses of tile i's buffer set waits only for the
 * stages of tile i that use it (slot_waits). */
#include "backend/lower.h"

#include <string.h>

#define FL_MAX 128 /* values of a body */
#define FL_OPS 32  /* parameters, outputs (at most 4 per queue and tile) */

typedef struct fl {
	nx_lower *L;
	int nv;
	const nx_inst *inst[FL_MAX];
	int param[FL_MAX];  /* parameter number, -1 computed or alias */
	int one[FL_MAX];    /* a one-element parameter (its number) or constant (-2), else -1 */
	int col[FL_MAX];    /* broadcast of a one-element value: that value's index, else -1 */
	int rowp[FL_MAX];   /* a parameter of rowc elements (its number), read only by row broadcasts, else -1 */
	int row[FL_MAX];    /* broadcast of a rowp parameter along the trailing axes: its index, else -1 */
	int64_t rowc;       /* elements of the broadcast rows (one length per body), 0 none */
	nx_lval *colv[FL_MAX];
	int alias[FL_MAX];  /* slot owner */
	int ops[FL_MAX][3];
	int nops[FL_MAX];
	nx_lemap m[FL_MAX];
	int sc[FL_MAX];     /* tensor_scalar from a tensor_tensor: the column operand read as [P, 1] (-1 none, or an immediate) */
	unsigned em[FL_MAX]; /* engines that may run it */
	int ncomp;
	nx_dtype dt[FL_MAX];
	int64_t off[FL_MAX];
	int stage[FL_MAX];  /* stage of a computed value */
	int nstage;
	nx_engine seng[FL_MAX];
	int sidx[FL_MAX];   /* the stage's signal number on its engine within a tile */
	int per[NX_ENG_COUNT]; /* signals per tile per engine */
	int outs[FL_MAX], nout; /* output values (tuple elements in order) */
	int64_t n, tr, bufb, step;
	nx_lval *const *ext;
	nx_lval *out[FL_MAX];
	int nld, kl, ks;       /* parameters loaded; pieces (partition ranges) per load / store */
	int ql[FL_MAX], qs[FL_MAX], lv;
	int qlc[FL_MAX], qsc[FL_MAX]; /* transfers per tile on that queue (1 or 2) */
	int nql, nqs;          /* entries of ql / qs */
	bool cat;              /* the loads' (stores') partition rows, all streams one after the other, cut into nql (nqs) equal ranges, one per queue */
	int64_t base_l[FL_MAX], base_s[FL_MAX], base_e[NX_ENG_COUNT];
	int64_t snap_l[8][NX_LQ], snap_s[8][NX_LQ]; /* queue counts after tile t's loads / stores, at t mod 8 */
	nx_engine se;          /* the engine issuing the stores being emitted */
	bool pool_st;          /* the last stage is POOL's: it stores each tile after it (else SP) */
	nx_lsync bqs;          /* SP queues borrowed for stores (qs[8..]): their counts before the kernel */
	int lstage;            /* the last stage touching a loaded slot: tile t + ND's loads wait for it */
	bool swait[FL_MAX];    /* stage s first writes an output's slot: it waits for tile t - ND's stores */
	int owait[FL_MAX];     /* a later stage of tile t - ND stage s waits for (it still uses a slot s writes first), -1 */
	nx_lsync loads, stores, comp;
} fl;

/* registers: 0 loads (first stage's engine: a load queue with one
 * transfer per tile) / the last stage's signals (SP), 1 stores (the engine
 * of the stage first writing an output's slot: a store queue with one per
 * tile) / the loads' stage's signals (SP), 2 + e tiles x signals of
 * engine e; RF_LDX / RF_STX + c - 2: c per tile, for queues with c = 2..4
 * transfers per tile (more than 8 parameters / outputs share the 8
 * queues) */
enum { RF_LD, RF_ST, RF_ENG, RF_LDX = RF_ENG + NX_ENG_COUNT, RF_STX = RF_LDX + 3, RF_N = RF_STX + 3 };
_Static_assert(RF_N <= 16, "registers per engine");

/* Depth of the buffer rotation: tile i reuses the buffers of tile i - ND. */
enum { ND = 2 };

/* bytes per element of a tile: the slots of every value that has one */
static int64_t slot_bytes(const fl *x)
{
	int64_t per = 0;
	for (int v = 0; v < x->nv; v++)
		if (x->alias[v] == v && x->one[v] == -1 && x->col[v] < 0 && x->rowp[v] < 0 && x->row[v] < 0)
			per += nx_dtype_bytes[x->dt[v]];
	return per;
}

/* the widest tile row length <= tr at which every tile sees the broadcast
 * rows at the same place: a multiple of rowc, or rowc / 2^k (k <= 7, so a
 * full tile's 128 partitions cover whole rows); 0 when none */
static int64_t row_tr(const fl *x, int64_t tr)
{
	int64_t C = x->rowc;
	if (!C || tr < 1)
		return tr;
	if (tr >= C)
		return tr / C * C;
	for (int k = 1; k <= 7; k++)
		if (C % ((int64_t)1 << k) == 0 && C >> k <= tr)
			return C >> k;
	return 0;
}

/* the tile row length for value slots of sper bytes per element (nslots
 * slots, ncol broadcast columns and the resident rows besides), clamped to
 * the elements and fitted to the rows; 0 when nothing fits */
static int64_t fit_tr(const nx_lower *L, const fl *x, int ncol, int nslots, int64_t sper)
{
	int64_t rb = 0;
	int nrow = 0;
	for (int v = 0; v < x->nv; v++)
		if (x->row[v] >= 0)
			rb += nx_dtype_bytes[x->dt[v]], nrow++;
	int64_t room = (L->sbuf_half - 64 * ncol - 64 * nrow) / ND - 64 * nslots;
	if (room < 1)
		return 0;
	int64_t tr = rb ? room * ND / (sper * ND + rb) : room / sper;
	tr = tr < 2048 ? tr : 2048;
	if (tr < 1)
		return 0;
	if (x->n < 128 * tr)
		tr = (x->n + 127) / 128;
	return row_tr(x, tr);
}

static int find(const fl *x, const nx_inst *i)
{
	for (int k = 0; k < x->nv; k++)
		if (x->inst[k] == i)
			return k;
	return -1;
}

/* A tensor_tensor with one broadcast column operand of a float type
 * becomes a tensor_scalar (half the streamed operands): the constant as
 * the immediate (its value in the column's type), a parameter's column as
 * the per-partition scalar [P, 1]. */
static void to_scalar(fl *x, int v)
{
	nx_lemap *m = &x->m[v];
	if (m->op != NX_I_TENSOR_TENSOR || x->nops[v] != 2 || m->func >= NX_ALU_COUNT ||
	    (nx_alu_kinds[m->func] != 'a' && nx_alu_kinds[m->func] != 'c') ||
	    (x->dt[v] != NX_DT_F32 && x->dt[v] != NX_DT_BF16))
		return;
	int c0 = x->col[x->ops[v][0]] >= 0, c1 = x->col[x->ops[v][1]] >= 0;
	if (c0 == c1)
		return;
	int col = x->ops[v][c0 ? 0 : 1], src = x->col[col];
	if (x->dt[col] != x->dt[x->ops[v][c0 ? 1 : 0]])
		return;
	m->op = NX_I_TENSOR_SCALAR;
	m->flags = c0 ? NX_IF_REVERSE : 0;
	x->ops[v][0] = x->ops[v][c0 ? 1 : 0];
	x->nops[v] = 1;
	x->sc[v] = col;
	if (x->one[src] == -2) { /* a constant: the immediate */
		uint8_t b[8] = {0};
		int dt;
		if (!nx_lower_literal_bytes(x->inst[src]->a.literal, b, &dt) || dt != (int)x->dt[col])
			return;
		uint32_t w = dt == NX_DT_BF16 ? (uint32_t)(b[0] | b[1] << 8) << 16
		                              : (uint32_t)(b[0] | b[1] << 8 | b[2] << 16 | (uint32_t)b[3] << 24);
		memcpy(&m->imm, &w, 4);
		x->sc[v] = -2;
	}
}

static bool isfloat(nx_dtype t)
{
	return t <= NX_DT_FP8E5M2;
}

/* engines that may run value v: the instruction's (isa.def), ACT only for
 * float arithmetic (its datapath is fp32) */
static unsigned engines(const fl *x, int v)
{
	const nx_lemap *m = &x->m[v];
	unsigned em = nx_isa_table[m->op].engines & (NX_EM_ACT | NX_EM_DVE | NX_EM_POOL);
	bool fl = true;
	for (int j = 0; j < x->nops[v]; j++)
		fl = fl && isfloat(x->dt[x->ops[v][j]]);
	if (m->op != NX_I_ACTIVATE &&
	    (!fl || !isfloat(x->dt[v]) ||
	     (m->func < NX_ALU_COUNT && nx_isa_table[m->op].func_kind == NX_F_ALU && nx_alu_kinds[m->func] != 'a')))
		em &= ~(unsigned)NX_EM_ACT;
	return em ? em : 1u << m->e;
}

static bool build(fl *x, const nx_inst *f)
{
	memset(x, 0, sizeof *x);
	if (f->op != NX_OP_FUSION || f->ncalled != 1 || f->noperands > FL_OPS)
		return false;
	const nx_comp *b = f->called[0];
	const nx_inst *root = b->root;
	if (!root)
		return false;
	bool tup = root->op == NX_OP_TUPLE;
	if (tup ? root->noperands < 1 || root->noperands > FL_OPS || !nx_shape_is_array(root->operands[0]->shape)
	        : !nx_shape_is_array(f->shape))
		return false;
	x->n = nx_shape_elems(tup ? root->operands[0]->shape : f->shape);
	if (x->n <= 1)
		return false;
	for (int k = 0; k < b->ninsts; k++) {
		const nx_inst *i = b->insts[k];
		if (i == root && tup)
			continue;
		if (x->nv == FL_MAX || !nx_shape_is_array(i->shape) || nx_lower_dtype(i->shape->type) < 0)
			return false;
		int64_t ne = nx_shape_elems(i->shape);
		int v = x->nv++;
		x->inst[v] = i;
		x->dt[v] = (nx_dtype)nx_lower_dtype(i->shape->type);
		x->param[v] = -1;
		x->one[v] = -1;
		x->col[v] = -1;
		x->rowp[v] = -1;
		x->row[v] = -1;
		x->alias[v] = v;
		x->stage[v] = -1;
		if (i->op == NX_OP_PARAMETER) {
			int pn = -1;
			for (int p = 0; p < b->nparams; p++)
				if (b->params[p] == i)
					pn = p;
			if (pn < 0 || pn >= f->noperands)
				return false;
			if (ne == 1)
				x->one[v] = pn;
			else if (ne == x->n)
				x->param[v] = pn;
			else
				x->rowp[v] = pn;
			continue;
		}
		if (i->op == NX_OP_CONSTANT && ne == 1) {
			x->one[v] = -2;
			continue;
		}
		if (ne != x->n)
			return false;
		for (int j = 0; j < i->noperands; j++)
			if (find(x, i->operands[j]) < 0)
				return false;
		int a0 = i->noperands ? find(x, i->operands[0]) : -1;
		if (i->op == NX_OP_BROADCAST) {
			if (a0 < 0 || x->dt[a0] != x->dt[v])
				return false;
			if (x->one[a0] != -1) {
				x->col[v] = a0;
				continue;
			}
			/* a row: the operand's axes are the result's trailing ones */
			const nx_shape *os = i->operands[0]->shape;
			int off = i->shape->rank - os->rank;
			if (x->rowp[a0] < 0 || i->a.dimensions.n != os->rank || off < 0)
				return false;
			for (int j = 0; j < os->rank; j++)
				if (i->a.dimensions.v[j] != off + j || os->dims[j] != i->shape->dims[off + j])
					return false;
			int64_t C = nx_shape_elems(os);
			if (x->rowc && x->rowc != C)
				return false;
			x->rowc = C;
			x->row[v] = a0;
			continue;
		}
		for (int j = 0; j < i->noperands; j++) {
			int o = find(x, i->operands[j]);
			if (x->one[o] != -1 || x->rowp[o] >= 0)
				return false; /* one-element values and rows only through a broadcast */
		}
		bool same = a0 >= 0 && x->dt[a0] == x->dt[v];
		if ((i->op == NX_OP_RESHAPE || i->op == NX_OP_BITCAST || i->op == NX_OP_COPY || i->op == NX_OP_CONVERT) &&
		    same) {
			x->alias[v] = x->alias[a0];
			continue;
		}
		/* float -> integer converts truncate through a row program
		 * (lower_math.c), not the engine's cast */
		if (i->op == NX_OP_CONVERT && a0 >= 0 && nx_type_is_float(i->operands[0]->shape->type) &&
		    !nx_type_is_float(i->shape->type))
			return false;
		if (nx_l_family(i->op) != NX_LK_ELEMENTWISE || i->noperands < 1 || i->noperands > 3 ||
		    !nx_l_elem_map(i, &x->m[v]))
			return false;
		x->nops[v] = i->noperands;
		for (int j = 0; j < i->noperands; j++)
			x->ops[v][j] = x->alias[find(x, i->operands[j])];
		x->sc[v] = -1;
		to_scalar(x, v);
		x->em[v] = engines(x, v);
		x->stage[v] = 0;
		x->ncomp++;
	}
	x->nout = tup ? root->noperands : 1;
	for (int k = 0; k < x->nout; k++) {
		int o = find(x, tup ? root->operands[k] : root);
		/* outputs are computed values of n elements (not parameters) */
		if (o < 0 || x->one[o] != -1 || x->col[x->alias[o]] >= 0 || x->row[x->alias[o]] >= 0 ||
		    x->stage[x->alias[o]] < 0 ||
		    nx_shape_elems(x->inst[o]->shape) != x->n)
			return false;
		x->outs[k] = x->alias[o];
	}
	for (int v = 0; v < x->nv; v++)
		x->nld += x->param[v] >= 0;
	return x->ncomp > 0 && x->nld > 0;
}

bool nx_l_fused_loop_ok(const nx_lower *L, const nx_inst *f)
{
	fl x;
	if (!build(&x, f))
		return false;
	/* bodies of 1 MiB or more with more than 8 inputs or a tuple root (the
	 * fused kernel takes neither; small ones stay flattened, their values
	 * resident in SBUF, which is faster there), else only bodies the fused
	 * kernel cannot hold: more than one SBUF half per partition over 128
	 * partitions */
	int ncol = 0;
	for (int v = 0; v < x.nv; v++)
		ncol += x.col[v] >= 0;
	/* rows: tiles of at least 64 elements that fit them */
	if (x.rowc && fit_tr(L, &x, ncol, x.nv, slot_bytes(&x)) < 64)
		return false;
	double bytes = (double)x.n * (double)slot_bytes(&x);
	if ((f->noperands > 8 || f->called[0]->root->op == NX_OP_TUPLE) && bytes >= 1048576.0)
		return true;
	return bytes > 128.0 * (double)L->sbuf_half;
}

/* v's operand view in buffer set b: a tile slot, or a broadcast column read
 * with free stride 0 */
static nx_ap tile_ap(const fl *x, int v, int64_t np, int64_t tr, int b)
{
	int a = x->alias[v];
	int32_t s1[1] = {x->col[a] >= 0 ? 0 : 1};
	uint32_t c[1] = {(uint32_t)tr};
	bool once = x->col[a] >= 0 || x->row[a] >= 0; /* loaded once, not per buffer set */
	return nx_ap_sbuf(x->dt[v], 0, (int)np, x->off[a] + (once ? 0 : b * x->bufb), 1, s1, c);
}


/* The streams' rows of a tile (n streams of np partition rows, one after
 * the other) cut into nq ranges, range j on queue j: calls f (when given)
 * for each piece (stream, first row, end row, j). Returns the pieces on
 * queue q0. */
static int cat_pieces(int n, int64_t np, int nq, int q0, void (*f)(void *, int, int64_t, int64_t, int), void *ctx)
{
	int64_t R = n * np;
	int cnt = 0;
	for (int j = 0; j < nq; j++) {
		for (int64_t r0 = R * j / nq, r1 = R * (j + 1) / nq; r0 < r1;) {
			int st = (int)(r0 / np);
			int64_t p0 = r0 % np, p1 = p0 + (r1 - r0) < np ? p0 + (r1 - r0) : np;
			if (f)
				f(ctx, st, p0, p1, j);
			cnt += j == q0;
			r0 += p1 - p0;
		}
	}
	return cnt;
}

typedef struct tctx {
	fl *x;
	int64_t np, tr, e0;
	int b, lvs[FL_MAX];
} tctx;

static void load_piece(void *ctx, int st, int64_t p0, int64_t p1, int j)
{
	tctx *t = ctx;
	fl *x = t->x;
	int v = t->lvs[st];
	const nx_lval *p = x->ext[x->param[v]];
	int esz = nx_dtype_bytes[p->dt];
	int32_t s1[1] = {1};
	uint32_t c[1] = {(uint32_t)t->tr};
	nx_ap h = nx_ap_hbm(p->dt, p->buf->off + (t->e0 + p0 * t->tr) * esz, (int)(p1 - p0), t->tr, 1, s1, c);
	if (x->lv >= 0)
		h.loop_stride[x->lv] = x->step * esz;
	nx_ap sb = tile_ap(x, v, t->np, t->tr, t->b);
	sb.part_start = (uint16_t)p0;
	sb.part_count = (uint16_t)(p1 - p0);
	nx_lsync y = nx_l_dma_q(x->L, NX_ENG_SP, x->ql[j], sb, h);
	nx_l_max(&x->loads, &y);
}

static void store_piece(void *ctx, int o, int64_t p0, int64_t p1, int j)
{
	tctx *t = ctx;
	fl *x = t->x;
	int eo = nx_dtype_bytes[x->out[o]->dt];
	int32_t s1[1] = {1};
	uint32_t c[1] = {(uint32_t)t->tr};
	nx_ap h = nx_ap_hbm(x->out[o]->dt, x->out[o]->buf->off + (t->e0 + p0 * t->tr) * eo, (int)(p1 - p0), t->tr, 1,
	                    s1, c);
	if (x->lv >= 0)
		h.loop_stride[x->lv] = x->step * eo;
	nx_ap sb = tile_ap(x, x->outs[o], t->np, t->tr, t->b);
	sb.part_start = (uint16_t)p0;
	sb.part_count = (uint16_t)(p1 - p0);
	nx_lsync y = nx_l_dma_q(x->L, x->se, x->qs[j], h, sb);
	nx_l_max(&x->stores, &y);
}

/* SP: the loads of a tile (np partitions, rows of tr, first element e0,
 * buffer set b); x->lv: SP's loop level when inside its loop */
static void sp_loads(fl *x, int64_t np, int64_t tr, int64_t e0, int b)
{
	int32_t s1[1] = {1};
	uint32_t c[1] = {(uint32_t)tr};
	tctx tc = {x, np, tr, e0, b, {0}};
	int k = 0;
	for (int v = 0; v < x->nv; v++)
		if (x->param[v] >= 0)
			tc.lvs[k++] = v;
	if (x->cat) {
		cat_pieces(x->nld, np, x->nql, -1, load_piece, &tc);
		return;
	}
	k = 0;
	for (int v = 0; v < x->nv; v++) {
		if (x->param[v] < 0)
			continue;
		const nx_lval *p = x->ext[x->param[v]];
		int esz = nx_dtype_bytes[p->dt];
		int64_t kp = np < x->kl ? np : x->kl;
		for (int64_t pc = 0; pc < kp; pc++, k++) {
			int64_t p0 = np * pc / kp, p1 = np * (pc + 1) / kp;
			nx_ap h = nx_ap_hbm(p->dt, p->buf->off + (e0 + p0 * tr) * esz, (int)(p1 - p0), tr, 1, s1, c);
			if (x->lv >= 0)
				h.loop_stride[x->lv] = x->step * esz;
			nx_ap sb = tile_ap(x, v, np, tr, b);
			sb.part_start = (uint16_t)p0;
			sb.part_count = (uint16_t)(p1 - p0);
			nx_lsync y = nx_l_dma_q(x->L, NX_ENG_SP, x->ql[k], sb, h);
			nx_l_max(&x->loads, &y);
		}
		k += (int)(x->kl - kp);
	}
}

/* SP: the stores of a tile */
static void sp_stores(fl *x, int64_t np, int64_t tr, int64_t e0, int b)
{
	int32_t s1[1] = {1};
	uint32_t c[1] = {(uint32_t)tr};
	tctx tc = {x, np, tr, e0, b, {0}};
	if (x->cat) {
		/* POOL's on its own queues (qs[0..7]): SP's next transfers on a
		 * borrowed one would not follow them */
		cat_pieces(x->nout, np, x->se == NX_ENG_POOL && x->nqs > 8 ? 8 : x->nqs, -1, store_piece, &tc);
		return;
	}
	for (int o = 0; o < x->nout; o++) {
		int eo = nx_dtype_bytes[x->out[o]->dt];
		int64_t kp = np < x->ks ? np : x->ks;
		for (int64_t pc = 0; pc < kp; pc++) {
			int64_t p0 = np * pc / kp, p1 = np * (pc + 1) / kp;
			nx_ap h = nx_ap_hbm(x->out[o]->dt, x->out[o]->buf->off + (e0 + p0 * tr) * eo, (int)(p1 - p0), tr, 1,
			                    s1, c);
			if (x->lv >= 0)
				h.loop_stride[x->lv] = x->step * eo;
			nx_ap sb = tile_ap(x, x->outs[o], np, tr, b);
			sb.part_start = (uint16_t)p0;
			sb.part_count = (uint16_t)(p1 - p0);
			nx_lsync y = nx_l_dma_q(x->L, x->se, x->qs[o * x->ks + pc], h, sb);
			nx_l_max(&x->stores, &y);
		}
	}
}

/* engine w (SP, POOL) waits until stage st of tile t is done (t < 0: nothing): in SP's
 * loop relative to register r (the step's tile count times the stage
 * engine's signals per tile), else absolute */
static void wait_stage(fl *x, nx_engine w, int st, int64_t t, int r)
{
	nx_engine e = x->seng[st];
	int64_t base = x->base_e[e] + x->sidx[st] + 1;
	if (r >= 0) {
		nx_l_wait_rel(x->L, w, NX_LSEM_ENG + e, base, r);
		return;
	}
	if (t < 0)
		return;
	nx_lsync y;
	memset(&y, 0, sizeof y);
	y.s[NX_LSEM_ENG + e] = base + t * x->per[e];
	nx_l_wait(x->L, w, &y);
}

/* tile t of the kernel: full tiles, then [q, tr] and [1, s]; buffer set t mod ND */
static void tile_at(const fl *x, int64_t t, int64_t *np, int64_t *tr, int64_t *e0)
{
	int64_t te = 128 * x->tr, T = x->n / te, rem = x->n % te, q = rem / x->tr;
	*np = t < T ? 128 : t == T && q > 0 ? q : 1;
	*tr = t < T || (t == T && q > 0) ? x->tr : rem % x->tr;
	*e0 = t < T ? t * te : t == T ? T * te : T * te + q * x->tr;
}

/* SP's stream: every tile's loads and stores, one step per tile t: the
 * loads of tile t + ND once tile t's last stage touching a loaded slot is
 * done, then the stores of tile t after its last stage. SP never holds a
 * compute engine and the loads run ND tiles ahead. Steps of the full
 * groups but the last run in a loop (registers RF_LD: tiles x the last
 * engine's signals, RF_ST: the same for the loads' stage); the rest are
 * emitted one by one, recording the queue counts the tail tiles wait for
 * (snap_*). The last ND tiles' stores, which no load follows, are POOL's
 * (pool_stores): SP goes on to the next kernel's loads. Where the last
 * stage is POOL's, POOL stores every tile right after it (x->pool_st) and
 * SP only loads. Returns the first tile pool_stores stores. */
static int64_t sp_stream(fl *x, int64_t N, int64_t T)
{
	nx_lower *L = x->L;
	int64_t te = 128 * x->tr, G = T / ND, np, tr, e0;
	int ls = x->lstage, lst = x->nstage - 1;
	x->se = NX_ENG_SP;
	for (int64_t t = 0; t < ND && t < N; t++) {
		tile_at(x, t, &np, &tr, &e0);
		sp_loads(x, np, tr, e0, (int)(t % ND));
		memcpy(x->snap_l[t % 8], L->qcount, sizeof x->snap_l[0]);
	}
	nx_l_wait(L, NX_ENG_SP, &x->bqs); /* before the first stores */
	int64_t t0 = 0;
	if (G - 1 >= 2) {
		nx_l_loop(L, NX_ENG_SP, G - 1);
		x->lv = L->s[NX_ENG_SP].depth - 1;
		x->step = ND * te;
		for (int b = 0; b < ND; b++) {
			wait_stage(x, NX_ENG_SP, ls, 0, RF_ST);
			sp_loads(x, 128, x->tr, (b + ND) * te, b);
			if (!x->pool_st) {
				wait_stage(x, NX_ENG_SP, lst, 0, RF_LD);
				sp_stores(x, 128, x->tr, b * te, b);
				nx_l_addreg(L, NX_ENG_SP, RF_LD, x->per[x->seng[lst]]);
			}
			nx_l_addreg(L, NX_ENG_SP, RF_ST, x->per[x->seng[ls]]);
		}
		nx_l_endloop(L, NX_ENG_SP);
		x->lv = -1;
		t0 = ND * (G - 1);
	}
	int64_t t = t0;
	for (; t + ND < N; t++) {
		wait_stage(x, NX_ENG_SP, ls, t, -1);
		tile_at(x, t + ND, &np, &tr, &e0);
		sp_loads(x, np, tr, e0, (int)((t + ND) % ND));
		memcpy(x->snap_l[(t + ND) % 8], L->qcount, sizeof x->snap_l[0]);
		if (x->pool_st)
			continue;
		wait_stage(x, NX_ENG_SP, lst, t, -1);
		tile_at(x, t, &np, &tr, &e0);
		sp_stores(x, np, tr, e0, (int)(t % ND));
		memcpy(x->snap_s[t % 8], L->qcount, sizeof x->snap_s[0]);
	}
	return x->pool_st ? N : t;
}

/* POOL: the stores of tiles t0 .. N - 1, after SP's (so each queue's
 * transfers stay in program order) */
static void pool_stores(fl *x, int64_t t0, int64_t N)
{
	int64_t np, tr, e0;
	if (t0 >= N)
		return;
	nx_l_wait(x->L, NX_ENG_POOL, &x->stores);
	x->se = NX_ENG_POOL;
	for (int64_t t = t0; t < N; t++) {
		wait_stage(x, NX_ENG_POOL, x->nstage - 1, t, -1);
		tile_at(x, t, &np, &tr, &e0);
		sp_stores(x, np, tr, e0, (int)(t % ND));
	}
}

/* the compute stages of tile t (np partitions, rows of tr, buffer set b).
 * Registers of a stage engine during tile t: RF_LD t (RF_LDX + c - 2:
 * t c) for the loads' waits, RF_ST / RF_STX likewise for the stores',
 * RF_ENG + e t x engine e's signals per tile */
static void tile(fl *x, int64_t t, int64_t np, int64_t tr, int64_t e0, int b)
{
	nx_lower *L = x->L;
	/* a full tile: every load queue takes its pieces (rows of partitions);
	 * a tail tile may leave queues out, so it waits for the counts SP's
	 * stream recorded instead */
	bool full = np == 128;
	bool waited[NX_ENG_COUNT][NX_ENG_COUNT], ldr[NX_ENG_COUNT] = {false}, str[NX_ENG_COUNT] = {false};
	memset(waited, 0, sizeof waited);
	for (int s = 0; s < x->nstage; s++) {
		nx_engine e = x->seng[s];
		if (s == 0) { /* this tile's loads */
			ldr[e] = true;
			if (full)
				for (int q = 0; q < x->nql; q++)
					nx_l_wait_rel(L, e, x->ql[q], x->base_l[q] + x->qlc[q],
					              x->qlc[q] > 1 ? RF_LDX + x->qlc[q] - 2 : RF_LD);
			else {
				nx_lsync a;
				memset(&a, 0, sizeof a);
				for (int q = 0; q < x->nql; q++)
					a.s[x->ql[q]] = x->snap_l[t % 8][x->ql[q]];
				nx_l_wait(L, e, &a);
			}
		} else { /* the previous stage of this tile */
			nx_engine pe = x->seng[s - 1];
			nx_l_wait_rel(L, e, NX_LSEM_ENG + pe, x->base_e[pe] + x->sidx[s - 1] + 1, RF_ENG + pe);
			waited[e][pe] = true;
		}
		/* tile t - ND's later stage still using a slot this one writes
		 * (implied when it runs on the previous stage's engine, whose
		 * signal for this tile comes later) */
		if (x->owait[s] >= 0 && (s == 0 || x->seng[x->owait[s]] != x->seng[s - 1])) {
			int os = x->owait[s];
			nx_engine pe = x->seng[os];
			nx_l_wait_rel(L, e, NX_LSEM_ENG + pe, x->base_e[pe] + x->sidx[os] + 1 - ND * x->per[pe], RF_ENG + pe);
			waited[e][pe] = true;
		}
		if (x->swait[s]) { /* tile t - ND's stores of the output slots this stage writes */
			str[e] = true;
			if (full)
				for (int o = 0; o < x->nqs; o++)
					nx_l_wait_rel(L, e, x->qs[o], x->base_s[o] + x->qsc[o] * (1 - ND),
					              x->qsc[o] > 1 ? RF_STX + x->qsc[o] - 2 : RF_ST);
			else if (t >= ND) {
				nx_lsync a;
				memset(&a, 0, sizeof a);
				/* a full tile's stores: qsc per queue per tile before */
				bool fu = t - ND < x->n / (128 * x->tr);
				for (int o = 0; o < x->nqs; o++)
					a.s[x->qs[o]] = fu ? x->base_s[o] + (t - ND + 1) * x->qsc[o] : x->snap_s[(t - ND) % 8][x->qs[o]];
				nx_l_wait(L, e, &a);
			}
		}
		for (int v = 0; v < x->nv; v++) {
			if (x->stage[v] != s)
				continue;
			nx_insn *in = nx_l_emit(L, e, x->m[v].op);
			in->func = (uint8_t)x->m[v].func;
			in->flags = (uint16_t)x->m[v].flags;
			in->fimm[0] = x->m[v].imm;
			in->ap[0] = tile_ap(x, v, np, tr, b);
			for (int j = 0; j < x->nops[v]; j++)
				in->ap[1 + j] = tile_ap(x, x->ops[v][j], np, tr, b);
			if (x->sc[v] >= 0)
				in->ap[2] = tile_ap(x, x->sc[v], np, 1, b);
		}
		nx_lsync y = nx_l_signal(L, e);
		nx_l_max(&x->comp, &y);
	}
	if (x->pool_st) { /* POOL's own last stage: no wait */
		x->se = NX_ENG_POOL;
		sp_stores(x, np, tr, e0, b);
		memcpy(x->snap_s[t % 8], L->qcount, sizeof x->snap_s[0]);
	}
	for (int e = 0; e < NX_ENG_COUNT; e++) {
		for (int pe = 0; pe < NX_ENG_COUNT; pe++)
			if (waited[e][pe])
				nx_l_addreg(L, (nx_engine)e, RF_ENG + pe, x->per[pe]);
		if (ldr[e]) {
			nx_l_addreg(L, (nx_engine)e, RF_LD, 1);
			for (int c = 2; c <= 4; c++)
				nx_l_addreg(L, (nx_engine)e, RF_LDX + c - 2, c);
		}
		if (str[e]) {
			nx_l_addreg(L, (nx_engine)e, RF_ST, 1);
			for (int c = 2; c <= 4; c++)
				nx_l_addreg(L, (nx_engine)e, RF_STX + c - 2, c);
		}
	}
}

/* time of value v's instruction on engine e for a full tile (the target's
 * cost model, nx_target_ns) */
static double cost(const nx_lower *L, const fl *x, int v, nx_engine e)
{
	nx_insn in;
	memset(&in, 0, sizeof in);
	in.op = (uint16_t)x->m[v].op;
	in.engine = (uint8_t)e;
	in.func = (uint8_t)x->m[v].func;
	in.ap[0] = tile_ap(x, v, 128, x->tr, 0);
	for (int j = 0; j < x->nops[v]; j++)
		in.ap[1 + j] = tile_ap(x, x->ops[v][j], 128, x->tr, 0);
	if (x->sc[v] >= 0)
		in.ap[2] = tile_ap(x, x->sc[v], 128, 1, 0);
	return nx_target_ns(L->t, &in);
}

/* per-tile time of the busiest compute resource: each engine, and on
 * targets where DVE and POOL share the SBUF port, the two together */
static double makespan(const nx_lower *L, const double *ld)
{
	double m = 0;
	for (int e = 0; e < NX_ENG_COUNT; e++)
		m = ld[e] > m ? ld[e] : m;
	if (L->t->dve_pool_share_sbuf && ld[NX_ENG_DVE] + ld[NX_ENG_POOL] > m)
		m = ld[NX_ENG_DVE] + ld[NX_ENG_POOL];
	return m;
}

/* Engine split: the computed values in levels, one engine per level and
 * each engine in at most one level (so the engines' streams never wait on
 * each other within a tile and tiles pipeline through the levels); a
 * value's level is at least its operands'. Every order of up to three of
 * ACT, DVE and POOL is tried, values placed greedily in program order on
 * the allowed level that keeps the busiest resource least busy (costs from
 * the target model); the order with the least busy resource wins. */
static double assign(const nx_lower *L, fl *x)
{
	static const nx_engine eng[3] = {NX_ENG_ACT, NX_ENG_DVE, NX_ENG_POOL};
	double best = -1;
	int bseq[3] = {0}, bn = 0, blev[FL_MAX];
	for (int code = 0; code < 3 + 9 + 27; code++) {
		int n = code < 3 ? 1 : code < 12 ? 2 : 3, c = code < 3 ? code : code < 12 ? code - 3 : code - 12;
		int seq[3];
		for (int k = 0; k < n; k++, c /= 3)
			seq[k] = c % 3;
		if ((n > 1 && seq[0] == seq[1]) || (n > 2 && (seq[2] == seq[0] || seq[2] == seq[1])))
			continue;
		double ld[NX_ENG_COUNT] = {0};
		int lev[FL_MAX], hi[FL_MAX];
		bool ok = true;
		/* the latest level each value may take: its readers must still
		 * find their engine at or after it */
		for (int v = 0; v < x->nv; v++)
			hi[v] = n - 1;
		for (int u = x->nv - 1; u >= 0 && ok; u--) {
			if (x->stage[u] < 0)
				continue;
			int k = hi[u];
			while (k >= 0 && !(x->em[u] & (1u << eng[seq[k]])))
				k--;
			ok = k >= 0;
			hi[u] = k;
			for (int j = 0; j < x->nops[u]; j++)
				if (hi[x->ops[u][j]] > k)
					hi[x->ops[u][j]] = k;
		}
		for (int v = 0; v < x->nv && ok; v++) {
			lev[v] = 0;
			if (x->stage[v] < 0)
				continue;
			int lo = 0;
			for (int j = 0; j < x->nops[v]; j++)
				if (x->stage[x->ops[v][j]] >= 0 && lev[x->ops[v][j]] > lo)
					lo = lev[x->ops[v][j]];
			int bk = -1;
			double bm = 0, bc = 0;
			for (int k = lo; k <= hi[v]; k++) {
				nx_engine e = eng[seq[k]];
				if (!(x->em[v] & (1u << e)))
					continue;
				double cc = cost(L, x, v, e);
				ld[e] += cc;
				double mk = makespan(L, ld);
				ld[e] -= cc;
				if (bk < 0 || mk < bm - 1e-9)
					bk = k, bm = mk, bc = cc;
			}
			if (bk < 0)
				ok = false;
			else
				lev[v] = bk, ld[eng[seq[bk]]] += bc;
		}
		/* -O3: then move single values between levels (operands at or
		 * before, readers at or after) while the busiest resource drops */
		for (int pass = 0; L->o3 && ok && pass < 8; pass++) {
			bool moved = false;
			for (int v = 0; v < x->nv; v++) {
				if (x->stage[v] < 0)
					continue;
				int lo = 0, up = hi[v];
				for (int j = 0; j < x->nops[v]; j++)
					if (x->stage[x->ops[v][j]] >= 0 && lev[x->ops[v][j]] > lo)
						lo = lev[x->ops[v][j]];
				for (int u = v + 1; u < x->nv; u++)
					for (int j = 0; j < x->nops[u]; j++)
						if (x->ops[u][j] == v && x->stage[u] >= 0 && lev[u] < up)
							up = lev[u];
				nx_engine e0 = eng[seq[lev[v]]];
				double c0 = cost(L, x, v, e0), m0 = makespan(L, ld);
				for (int k = lo; k <= up; k++) {
					nx_engine e = eng[seq[k]];
					if (k == lev[v] || !(x->em[v] & (1u << e)))
						continue;
					double cc = cost(L, x, v, e);
					ld[e0] -= c0, ld[e] += cc;
					double mk = makespan(L, ld);
					if (mk < m0 - 1e-9) {
						lev[v] = k, e0 = e, c0 = cc, m0 = mk, moved = true;
						continue;
					}
					ld[e] -= cc, ld[e0] += c0;
				}
			}
			if (!moved)
				break;
		}
		double mk = makespan(L, ld);
		if (ok && (best < 0 || mk < best - 1e-9)) {
			best = mk, bn = n;
			memcpy(bseq, seq, sizeof seq);
			memcpy(blev, lev, sizeof lev);
		}
	}
	if (best < 0) {
		/* an engine needed twice (ACT, then DVE, then ACT again): the
		 * instructions' own engines in program order, a stage per run */
		double ld[NX_ENG_COUNT] = {0};
		x->nstage = 0;
		memset(x->per, 0, sizeof x->per);
		for (int v = 0; v < x->nv; v++) {
			if (x->stage[v] < 0)
				continue;
			nx_engine e = x->m[v].e;
			if (!(x->em[v] & (1u << e)))
				e = x->em[v] & NX_EM_DVE ? NX_ENG_DVE : x->em[v] & NX_EM_ACT ? NX_ENG_ACT : NX_ENG_POOL;
			x->m[v].e = e;
			ld[e] += cost(L, x, v, e);
			if (x->nstage == 0 || x->seng[x->nstage - 1] != e) {
				x->seng[x->nstage] = e;
				x->sidx[x->nstage] = x->per[e]++;
				x->nstage++;
			}
			x->stage[v] = x->nstage - 1;
		}
		return makespan(L, ld);
	}
	/* stages: the levels that hold values */
	int map[3] = {-1, -1, -1};
	x->nstage = 0;
	memset(x->per, 0, sizeof x->per);
	for (int k = 0; k < bn; k++)
		for (int v = 0; v < x->nv; v++)
			if (x->stage[v] >= 0 && blev[v] == k && map[k] < 0) {
				map[k] = x->nstage;
				x->seng[x->nstage] = eng[bseq[k]];
				x->sidx[x->nstage] = x->per[eng[bseq[k]]]++;
				x->nstage++;
			}
	for (int v = 0; v < x->nv; v++)
		if (x->stage[v] >= 0) {
			x->stage[v] = map[blev[v]];
			x->m[v].e = eng[bseq[blev[v]]];
		}
	return best;
}

/* per-tile time of the busiest compute resource for the assigned stages
 * at the tile width x->tr */
static double stage_time(const nx_lower *L, const fl *x)
{
	double ld[NX_ENG_COUNT] = {0};
	for (int v = 0; v < x->nv; v++)
		if (x->stage[v] >= 0)
			ld[x->m[v].e] += cost(L, x, v, x->m[v].e);
	return makespan(L, ld);
}

typedef struct qctx {
	const fl *x;
	const nx_dtype *dt;
	double ns[NX_LQ];
} qctx;

/* one piece's transfer time (the target's DMA model) on its queue */
static void time_piece(void *ctx, int st, int64_t p0, int64_t p1, int j)
{
	qctx *c = ctx;
	int32_t s1[1] = {1};
	uint32_t n[1] = {(uint32_t)c->x->tr};
	nx_insn in;
	memset(&in, 0, sizeof in);
	in.op = NX_I_DMA;
	in.engine = NX_ENG_SP;
	in.ap[0] = nx_ap_sbuf(c->dt[st], (int)p0, (int)(p1 - p0), 0, 1, s1, n);
	in.ap[1] = nx_ap_hbm(c->dt[st], 0, (int)(p1 - p0), c->x->tr, 1, s1, n);
	c->ns[j] += nx_target_ns(c->x->L->t, &in);
}

/* per full tile: the busiest load queue (*ld) and store queue (*st), ns */
static void dma_time(const fl *x, double *ld, double *st)
{
	nx_dtype dl[FL_MAX], ds[FL_MAX];
	int k = 0;
	for (int v = 0; v < x->nv; v++)
		if (x->param[v] >= 0)
			dl[k++] = x->ext[x->param[v]]->dt;
	for (int o = 0; o < x->nout; o++)
		ds[o] = x->out[o]->dt;
	qctx a = {x, dl, {0}}, b = {x, ds, {0}};
	if (x->cat) {
		cat_pieces(x->nld, 128, x->nql, -1, time_piece, &a);
		cat_pieces(x->nout, 128, x->nqs, -1, time_piece, &b);
	} else {
		for (int s = 0; s < x->nld; s++)
			for (int pc = 0; pc < x->kl; pc++)
				time_piece(&a, s, 128 * pc / x->kl, 128 * (pc + 1) / x->kl, x->ql[s * x->kl + pc] % NX_LQ);
		for (int o = 0; o < x->nout; o++)
			for (int pc = 0; pc < x->ks; pc++)
				time_piece(&b, o, 128 * pc / x->ks, 128 * (pc + 1) / x->ks, x->qs[o * x->ks + pc] % NX_LQ);
	}
	*ld = *st = 0;
	for (int q = 0; q < NX_LQ; q++) {
		*ld = a.ns[q] > *ld ? a.ns[q] : *ld;
		*st = b.ns[q] > *st ? b.ns[q] : *st;
	}
}

/* Stores outweighing the loads (cat: every queue carries one side): the
 * load queues (1 to 8, SP's) leaving the rest of SP's and POOL's 8 to the
 * stores that make the busier side per full tile least busy, by the DMA
 * model (fixed costs per piece included; bert_layer's GELU forward, one
 * f32 input and two f32 outputs: 5 load and 11 store queues). Loads that
 * would put more than 4 pieces of a tile on a queue are not tried. */
static int store_split(fl *x)
{
	int nql = x->nql, nqs = x->nqs, best = 8;
	bool cat = x->cat;
	double bt = 0;
	x->cat = true;
	for (int nl = 8; nl >= 1; nl--) {
		bool ok = true;
		for (int j = 0; j < nl; j++)
			ok = ok && cat_pieces(x->nld, 128, nl, j, NULL, NULL) <= 4;
		if (!ok)
			break;
		x->nql = nl, x->nqs = NX_LQ - nl;
		double dl, ds;
		dma_time(x, &dl, &ds);
		double t = dl > ds ? dl : ds;
		if (nl == 8 || t < bt - 1e-9)
			best = nl, bt = t;
	}
	x->nql = nql, x->nqs = nqs, x->cat = cat;
	return best;
}

/* Tile slots shared by values whose lives do not overlap within a tile
 * (execution order: stage by stage, program order within a stage; an
 * instruction never writes a slot it reads). Loaded parameters live from
 * the tile's start, outputs to its end; an output never takes a slot a
 * parameter was loaded into (the loads of tile i + ND wait only for tile
 * i's computation, not for its stores). slot[v]: v's slot (-1 none);
 * returns the count, with each slot's element size in x->off[slot]. */
static int reuse_slots(fl *x, int *slot, bool pipe)
{
	int pos[FL_MAX], last[FL_MAX], lstg[FL_MAX], ns = 0, p = 0, l0 = 0;
	int64_t esz[FL_MAX];
	bool loaded[FL_MAX], isout[FL_MAX];
	int minst[FL_MAX]; /* per slot: the earliest stage writing it */
	for (int v = 0; v < x->nv; v++)
		pos[v] = -1, last[v] = -1, slot[v] = -1, isout[v] = false, lstg[v] = x->stage[v];
	for (int st = 0; st < x->nstage; st++)
		for (int v = 0; v < x->nv; v++)
			if (x->stage[v] == st)
				pos[v] = p++;
	for (int v = 0; v < x->nv; v++)
		for (int j = 0; j < x->nops[v]; j++)
			if (x->stage[v] >= 0) {
				int o = x->ops[v][j];
				last[o] = pos[v] > last[o] ? pos[v] : last[o];
				lstg[o] = x->stage[v] > lstg[o] ? x->stage[v] : lstg[o];
				if (x->param[o] >= 0 && x->stage[v] > l0)
					l0 = x->stage[v];
			}
	for (int o = 0; o < x->nout; o++)
		isout[x->outs[o]] = true, last[x->outs[o]] = p, lstg[x->outs[o]] = x->nstage;
	int freed[FL_MAX]; /* per slot: the position after which it is free, p + 1 taken */
	for (int q = -1; q < p; q++)
		for (int v = 0; v < x->nv; v++) {
			if (x->alias[v] != v || x->one[v] != -1 || x->col[v] >= 0 || x->row[v] >= 0 || x->rowp[v] >= 0 ||
			    pos[v] != q ||
			    (q < 0 && x->param[v] < 0))
				continue;
			int64_t e = nx_dtype_bytes[x->dt[v]];
			int k = 0;
			/* pipe: besides, a loaded slot holds only values dead by the
			 * last stage reading a parameter (tile t + ND's loads wait for
			 * no later stage), an output's slot no value of an earlier
			 * stage (only the output's stage waits for tile t - ND's
			 * stores) */
			for (; k < ns; k++)
				if (esz[k] == e && freed[k] < q && !(isout[v] && loaded[k]) &&
				    !(pipe && loaded[k] && lstg[v] > l0) && !(pipe && isout[v] && minst[k] < x->stage[v]))
					break;
			if (k == ns)
				esz[ns] = e, loaded[ns] = false, minst[ns] = x->nstage, ns++;
			slot[v] = k;
			loaded[k] = loaded[k] || q < 0;
			if (q >= 0 && x->stage[v] < minst[k])
				minst[k] = x->stage[v];
			freed[k] = last[v] < q ? q : last[v];
		}
	for (int k = 0; k < ns; k++)
		x->off[k] = esz[k];
	return ns;
}

/* Which stage of tile t - ND each access of tile t must follow (the two
 * share a buffer set): the loads, the last stage touching a slot a
 * parameter is loaded into (x->lstage); the stage that first writes a
 * slot, the last stage of tile t - ND using it (x->owait, when on another
 * engine and later) and, for an output's slot, tile t - ND's stores
 * (x->swait). Everything else follows from the stages' order within a
 * tile and each engine's program order. */
static void slot_waits(fl *x, const int *slot, int ns)
{
	int first[FL_MAX], lasta[FL_MAX];
	bool loaded[FL_MAX], isout[FL_MAX];
	for (int k = 0; k < ns; k++)
		first[k] = -1, lasta[k] = -1, loaded[k] = false, isout[k] = false;
	for (int v = 0; v < x->nv; v++) {
		if (x->param[v] >= 0 && slot[v] >= 0)
			loaded[slot[v]] = true;
		int st = x->stage[v];
		if (st < 0)
			continue;
		int k = slot[x->alias[v]];
		if (k >= 0) {
			first[k] = first[k] < 0 || st < first[k] ? st : first[k];
			lasta[k] = st > lasta[k] ? st : lasta[k];
		}
		for (int j = 0; j < x->nops[v]; j++) {
			int o = slot[x->ops[v][j]];
			if (o >= 0 && st > lasta[o])
				lasta[o] = st;
		}
	}
	for (int o = 0; o < x->nout; o++)
		if (slot[x->outs[o]] >= 0)
			isout[slot[x->outs[o]]] = true;
	x->lstage = 0;
	for (int s = 0; s < x->nstage; s++)
		x->swait[s] = false, x->owait[s] = -1;
	for (int k = 0; k < ns; k++) {
		if (loaded[k] && lasta[k] > x->lstage)
			x->lstage = lasta[k];
		if (first[k] < 0)
			continue;
		x->swait[first[k]] = x->swait[first[k]] || isout[k];
		if (lasta[k] > first[k] && x->seng[lasta[k]] != x->seng[first[k]] && lasta[k] > x->owait[first[k]])
			x->owait[first[k]] = lasta[k];
	}
}

nx_status nx_l_fused_loop(nx_lower *L, const nx_inst *f, nx_lval *const *ops, nx_lval *out)
{
	fl x;
	if (!nx_l_fused_loop_ok(L, f) || !build(&x, f))
		return nx_l_err(L, "fusion outside the loop kernel's subset");
	x.L = L, x.ext = ops;
	if (out->tuple ? out->ntuple != x.nout : x.nout != 1)
		return nx_l_err(L, "fusion outputs do not match its body");
	for (int o = 0; o < x.nout; o++)
		x.out[o] = out->tuple ? out->tuple[o] : out;
	int64_t per = slot_bytes(&x);
	int ncol = 0;
	for (int v = 0; v < x.nv; v++)
		ncol += x.col[v] >= 0;
	x.tr = fit_tr(L, &x, ncol, x.nv, per);
	if (x.tr < 1)
		return nx_l_err(L, "fusion body too wide for SBUF");
	double per_tile = assign(L, &x);
	/* fewer slots, wider tiles */
	/* Slots shared as widely as possible, or only so that tile t + ND's
	 * loads and stores wait for the earliest stages (pipe): pipe when the
	 * tile stays as wide or the kernel is bound by its compute, whose
	 * stages then overlap the other buffer set's transfers (bert_layer's
	 * fusion.32: 651 -> 596 us). DMA-bound kernels keep the widest tiles
	 * (dp_graph_4's fusion.60.e0 at [128, 2029] with tails instead of
	 * [128, 2048]: +6 us; f32 Adam) */
	int slot[FL_MAX], ns = reuse_slots(&x, slot, false), pslot[FL_MAX];
	int64_t wide = 0;
	for (int k = 0; k < ns; k++)
		wide += x.off[k];
	wide = fit_tr(L, &x, ncol, ns, wide);
	int pns = reuse_slots(&x, pslot, true);
	int64_t pw = 0;
	for (int k = 0; k < pns; k++)
		pw += x.off[k];
	pw = fit_tr(L, &x, ncol, pns, pw);
	x.tr = wide;
	double bpe = 0; /* HBM bytes per element */
	for (int v = 0; v < x.nv; v++)
		bpe += x.param[v] >= 0 ? nx_dtype_bytes[x.dt[v]] : 0;
	for (int o = 0; o < x.nout; o++)
		bpe += nx_dtype_bytes[x.dt[x.outs[o]]];
	/* the queues: all 16 with at most 8 inputs and outputs, else 8 a side
	 * (the loads' 8 carry the most bytes) */
	double qbw = nx_target_dma_queue_gbps(L->t) * (x.nld <= 8 && x.nout <= 8 ? NX_LQ : NX_LQ / 2);
	double lb = 0;
	for (int v = 0; v < x.nv; v++)
		lb += x.param[v] >= 0 ? nx_dtype_bytes[x.dt[v]] : 0;
	if (!(x.nld <= 8 && x.nout <= 8))
		bpe = lb > bpe - lb ? lb : bpe - lb;
	bool pipe = pw >= 64 && (pw == wide || stage_time(L, &x) > 1.1 * 128.0 * (double)wide * bpe / qbw);
	ns = reuse_slots(&x, slot, pipe);
	slot_waits(&x, slot, ns);
	int64_t sper = 0;
	for (int k = 0; k < ns; k++)
		sper += x.off[k];
	x.tr = fit_tr(L, &x, ncol, ns, sper); /* >= the first: fewer, narrower slots */
	int64_t bytes = 0, soff[FL_MAX];
	for (int k = 0; k < ns; k++) {
		soff[k] = bytes;
		bytes += nx_l_al64(x.tr * x.off[k]);
	}
	for (int v = 0; v < x.nv; v++)
		x.off[v] = slot[v] >= 0 ? soff[slot[v]] : 0;
	x.bufb = bytes;
	bytes *= ND;
	for (int v = 0; v < x.nv; v++)
		if (x.col[v] >= 0) {
			x.off[v] = bytes;
			bytes += 64;
		} else if (x.row[v] >= 0) {
			x.off[v] = bytes;
			bytes += nx_l_al64(x.tr * nx_dtype_bytes[x.dt[v]]);
		}
	int64_t base;
	int h;
	nx_status rc = nx_l_sbuf_begin(L, bytes, &base, &h);
	if (rc)
		return rc;
	for (int v = 0; v < x.nv; v++)
		x.off[v] += base;
	/* the 8 SP queues shared by the parameters, the 8 POOL queues by the
	 * outputs: each takes kl (ks) pieces of a tile, on queues of their own */
	x.kl = x.nld <= 8 ? 8 / x.nld : 1, x.ks = x.nout <= 8 ? 8 / x.nout : 1;
	x.nql = x.nld * x.kl, x.nqs = x.nout * x.ks;
	x.cat = x.nld <= 8 && x.nout <= 8;
	int nql = x.nld * x.kl < 8 ? x.nld * x.kl : 8, nqs = x.nout * x.ks < 8 ? x.nout * x.ks : 8;
	for (int k = 0; k < x.nld * x.kl; k++) {
		x.ql[k] = k < nql ? nx_l_queue(L, NX_ENG_SP) : x.ql[k - nql];
		x.qlc[k] = (x.nld * x.kl - k % 8 + 7) / 8; /* entries k % 8, k % 8 + 8, ... */
	}
	for (int o = 0; o < x.nout * x.ks; o++) {
		x.qs[o] = o < nqs ? nx_l_queue(L, NX_ENG_POOL) : x.qs[o - nqs];
		x.qsc[o] = (x.nout * x.ks - o % 8 + 7) / 8;
	}
	if (x.cat) {
		/* every queue, loads and stores balanced by bytes: SP loads on its
		 * 8 queues and, when the loads outweigh the stores, on some of
		 * POOL's too (borrowed for this kernel: SP first waits for what
		 * they carry, and POOL's later transfers on them follow this
		 * kernel's last stores, which follow every load) */
		int64_t bl = 0, bs = 0;
		for (int v = 0; v < x.nv; v++)
			bl += x.param[v] >= 0 ? nx_dtype_bytes[x.dt[v]] : 0;
		for (int o = 0; o < x.nout; o++)
			bs += nx_dtype_bytes[x.dt[x.outs[o]]];
		int nl = nx_l_load_queues(bl, bs, x.nout);
		/* a borrowed queue makes SP wait for the previous kernel's
		 * transfers on it: only kernels of 8 full tiles or more earn
		 * that back (bert_single_graph_2 632.0 -> 628.5 us) */
		if (x.n / (128 * x.tr) < 8)
			nl = 8;
		else if (bs > bl && x.seng[x.nstage - 1] != NX_ENG_POOL)
			nl = store_split(&x);
		for (int j = nql; j < 8; j++)
			x.ql[j] = nx_l_queue(L, NX_ENG_SP);
		for (int j = nqs; j < 16 - nl; j++)
			x.qs[j] = j < 8 ? nx_l_queue(L, NX_ENG_POOL) : x.ql[nl + j - 8];
		/* the borrowed queues are POOL queues no store uses: first those
		 * taken for stores above and left over (a queue carrying loads and
		 * stores would satisfy the stages' load waits with stores) */
		for (int j = 8, spare = 16 - nl; j < nl; j++)
			x.ql[j] = spare < nqs ? x.qs[spare++] : nx_l_queue(L, NX_ENG_POOL);
		x.nql = nl, x.nqs = 16 - nl;
		for (int j = 0; j < x.nql; j++)
			x.qlc[j] = cat_pieces(x.nld, 128, x.nql, j, NULL, NULL);
		for (int j = 0; j < x.nqs; j++)
			x.qsc[j] = cat_pieces(x.nout, 128, x.nqs, j, NULL, NULL);
		for (int j = 0; j < x.nql; j++)
			x.cat = x.cat && x.qlc[j] <= 4;
		for (int j = 0; j < x.nqs; j++)
			x.cat = x.cat && x.qsc[j] <= 4;
		NX_ASSERT(x.cat); /* at most 8 streams a side: a queue's range spans at most 3 */
	}
	x.lv = -1;
	int64_t T = x.n / (128 * x.tr), rem = x.n % (128 * x.tr), q = rem / x.tr, s = rem % x.tr;
	nx_l_plan_kernel(L, "fused-loop");
	nx_l_plan(L, "body", "%d values, %d stages, %lld elements, %d outputs", x.nv, x.nstage, (long long)x.n,
	          x.nout);
	nx_l_plan(L, "tiling", "[128 partitions, %lld] per tile; %lld tiles in a loop, tail [%lld, %lld] + [1, %lld]",
	          (long long)x.tr, (long long)T, (long long)q, (long long)x.tr, (long long)s);
	nx_l_plan(L, "loops", "tile %lld (%d buffers, two tiles per iteration, per-iteration waits)", (long long)T,
	          (int)ND);
	char st[128];
	size_t len = 0;
	st[0] = 0;
	for (int k = 0; k < x.nstage && len < sizeof st - 8; k++)
		len += (size_t)snprintf(st + len, sizeof st - len, "%s%s", k ? " > " : "", nx_engine_names[x.seng[k]]);
	x.pool_st = x.seng[x.nstage - 1] == NX_ENG_POOL;
	nx_l_plan(L, "engines", "load sp q%d (%d queues), stages %s, store %s q%d (%d queues)", x.ql[0],
	          x.cat || x.nql < 8 ? x.nql : 8, st, x.pool_st ? "pool" : "sp", x.qs[0],
	          x.cat || x.nqs < 8 ? x.nqs : 8);
	/* the model at the final tile width: the busiest compute resource
	 * (DVE and POOL together where they share the SBUF port) and the
	 * busiest load and store queues per full tile; the kernel takes the
	 * slowest of them per tile plus the first tile's loads and the last
	 * tile's stores, which nothing overlaps */
	per_tile = stage_time(L, &x);
	double dl, ds;
	dma_time(&x, &dl, &ds);
	double pt = per_tile > dl ? per_tile : dl;
	pt = pt > ds ? pt : ds;
	double model = (double)x.n / (128.0 * (double)x.tr) * pt + dl + ds;
	nx_l_plan(L, "compute",
	          "%.2f us per full tile on the busiest engine (target model), DMA %.2f us loads / %.2f us stores "
	          "per tile; model %.1f us",
	          per_tile / 1000.0, dl / 1000.0, ds / 1000.0, model / 1000.0);
	int nrow = 0;
	for (int v = 0; v < x.nv; v++)
		nrow += x.row[v] >= 0;
	if (nrow)
		nx_l_plan(L, "resident", "%d broadcast row%s of %lld as [128, %lld]", nrow, nrow > 1 ? "s" : "",
		          (long long)x.rowc, (long long)x.tr);
	else
		nx_l_plan(L, "resident", "none");

	bool used[NX_ENG_COUNT];
	nx_l_kernel_engines(x.seng, x.nstage, used);
	nx_l_kernel_begin(L, h, used);
	for (int v = 0; v < x.nv; v++)
		if (x.param[v] >= 0 || x.one[v] >= 0 || x.rowp[v] >= 0)
			nx_l_wait(L, NX_ENG_SP,
			          &ops[x.one[v] >= 0 ? x.one[v] : x.rowp[v] >= 0 ? x.rowp[v] : x.param[v]]->buf->written);
	/* POOL queues borrowed for loads: what they carry so far is done */
	nx_lsync bq;
	memset(&bq, 0, sizeof bq);
	for (int j = 8; x.cat && j < x.nql; j++)
		bq.s[x.ql[j]] = L->qcount[x.ql[j]];
	nx_l_wait(L, NX_ENG_SP, &bq);
	memset(&x.bqs, 0, sizeof x.bqs);
	for (int j = 8; x.cat && j < x.nqs; j++)
		x.bqs.s[x.qs[j]] = L->qcount[x.qs[j]];
	for (int o = 0; o < x.nout; o++)
		nx_l_wait(L, NX_ENG_POOL, &x.out[o]->buf->war);
	/* broadcast columns: the one element to every partition (partition
	 * stride 0), once, spread over SP's load queues (FIFO: before every
	 * tile's loads on the queue, which the first stage waits for) */
	int ncl = 0;
	for (int v = 0; v < x.nv; v++) {
		if (x.col[v] < 0)
			continue;
		int a = x.col[v];
		nx_lval *src = x.one[a] >= 0 ? ops[x.one[a]] : NULL;
		if (!src && (rc = nx_l_constant(L, x.inst[a], &src)) != NX_OK)
			return rc;
		nx_l_wait(L, NX_ENG_SP, &src->buf->written);
		int32_t s1[1] = {1};
		uint32_t c1[1] = {1};
		nx_ap hb = nx_ap_hbm(x.dt[v], src->buf->off, 128, 0, 1, s1, c1);
		nx_ap sb = nx_ap_sbuf(x.dt[v], 0, 128, x.off[v], 1, s1, c1);
		nx_lsync y = nx_l_dma_q(L, NX_ENG_SP, x.ql[ncl++ % (x.nql < 8 ? x.nql : 8)], sb, hb);
		nx_l_max(&x.loads, &y);
		nx_l_max(&src->buf->war, &y);
	}
	/* broadcast rows: the resident [128, tr] tile, row[(p tr + j) mod C] at
	 * partition p, element j: transfers reading the row tr / C times with
	 * stride 0 when C divides tr, else the row's C / tr partitions from
	 * consecutive pieces of it; in pieces of at most 16 partitions spread
	 * over the load queues (one queue moving the whole tile exposes it:
	 * 1 MiB took 65 us before the first tile, bert_layer's fusion.29) */
	for (int v = 0; v < x.nv; v++) {
		if (x.row[v] < 0)
			continue;
		nx_lval *src = ops[x.rowp[x.row[v]]];
		int64_t C = x.rowc, g = x.tr >= C ? 128 : C / x.tr, pp = g < 16 ? g : 16;
		int esz = nx_dtype_bytes[x.dt[v]];
		for (int64_t p0 = 0; p0 < 128; p0 += pp) {
			int32_t hs[2] = {0, 1}, ss[2] = {(int32_t)C, 1};
			uint32_t c2[2] = {(uint32_t)(x.tr / C), (uint32_t)C}, c1[1] = {(uint32_t)x.tr};
			bool rep = x.tr >= C;
			nx_ap hb = rep ? nx_ap_hbm(x.dt[v], src->buf->off, (int)pp, 0, 2, hs, c2)
			               : nx_ap_hbm(x.dt[v], src->buf->off + (p0 % g) * x.tr * esz, (int)pp, x.tr, 1, hs + 1, c1);
			nx_ap sb = rep ? nx_ap_sbuf(x.dt[v], (int)p0, (int)pp, x.off[v], 2, ss, c2)
			               : nx_ap_sbuf(x.dt[v], (int)p0, (int)pp, x.off[v], 1, ss + 1, c1);
			nx_lsync y = nx_l_dma_q(L, NX_ENG_SP, x.ql[ncl++ % (x.nql < 8 ? x.nql : 8)], sb, hb);
			nx_l_max(&x.loads, &y);
			nx_l_max(&src->buf->war, &y);
		}
	}
	/* every load queue: its count now, plus one per tile */
	NX_ASSERT(x.nld >= 1);
	for (int k = 0; k < x.nql; k++)
		x.base_l[k] = L->qcount[x.ql[k]];
	for (int o = 0; o < x.nqs; o++)
		x.base_s[o] = L->qcount[x.qs[o]];
	for (int e = 0; e < NX_ENG_COUNT; e++)
		x.base_e[e] = L->ecount[e];
	/* the engines' earlier kernels are complete before the first tile
	 * (relative targets start at the counts below) */
	nx_lsync e0;
	memset(&e0, 0, sizeof e0);
	for (int e = 0; e < NX_ENG_COUNT; e++)
		if (used[e] && e != NX_ENG_SP)
			e0.s[NX_LSEM_ENG + e] = x.base_e[e];
	for (int o = 0; o < x.nqs; o++)
		e0.s[x.qs[o]] = x.base_s[o];
	for (int e = 0; e < NX_ENG_COUNT; e++)
		if (used[e])
			nx_l_wait(L, (nx_engine)e, &e0);
	for (int e = 0; e < NX_ENG_COUNT; e++)
		if (used[e])
			for (int r = 0; r < RF_N; r++)
				nx_l_setreg(L, (nx_engine)e, r, 0);
	int64_t pairs = T / ND, N = T + (q > 0) + (s > 0);
	int64_t tp = sp_stream(&x, N, T);
	/* the stage engines: ND tiles per loop iteration */
	bool stage_eng[NX_ENG_COUNT] = {false};
	for (int k = 0; k < x.nstage; k++)
		stage_eng[x.seng[k]] = true;
	if (pairs > 1)
		for (int e = 0; e < NX_ENG_COUNT; e++)
			if (stage_eng[e])
				nx_l_loop(L, (nx_engine)e, pairs);
	if (pairs > 1) {
		x.lv = L->s[NX_ENG_POOL].depth - 1;
		x.step = ND * 128 * x.tr;
	}
	for (int64_t t = 0; t < (pairs > 0 ? ND : 0); t++)
		tile(&x, t, 128, x.tr, t * 128 * x.tr, (int)t);
	x.lv = -1;
	if (pairs > 1)
		for (int e = 0; e < NX_ENG_COUNT; e++)
			if (stage_eng[e])
				nx_l_endloop(L, (nx_engine)e);
	for (int64_t t = pairs * ND; t < N; t++) {
		int64_t np, tr, e0;
		tile_at(&x, t, &np, &tr, &e0);
		tile(&x, t, np, tr, e0, (int)(t % ND));
	}
	pool_stores(&x, tp, N);
	for (int v = 0; v < x.nv; v++)
		if (x.param[v] >= 0)
			nx_l_max(&ops[x.param[v]]->buf->war, &x.loads);
	nx_l_kernel_end(L, h, x.out, x.nout, &x.loads, &x.stores, &x.comp);
	return NX_OK;
}
