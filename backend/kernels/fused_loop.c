/* backend/kernels/fused_loop.c — a fusion of elementwise ops whose values
 * exceed the fused kernel's SBUF budget (lower_fused.c), as one loop nest
 * over tiles instead of one kernel per op with HBM round trips between.
 *
 * Subset: parameters, elementwise ops with one engine instruction
 * (nx_l_elem_map, <= 3 operands), reshape / bitcast / copy / convert to the
 * same device type (sharing their operand's slot); every value has the
 * root's element count n. The n elements are tiles of 128 partitions x tr
 * contiguous elements (full tiles in a loop, then [q, tr] and [1, s]). Per
 * tile: SP loads the parameters, each stage (consecutive instructions on
 * one engine) computes and signals, POOL stores the root. The stages of a
 * tile run in order (stage k waits for stage k-1 of the same tile: a
 * per-iteration wait whose register counts the tiles), the next tile's
 * loads wait for the last stage (single buffers), the last stage waits for
 * the previous tile's store. */
#include "backend/lower.h"

#include <string.h>

#define FL_MAX 24

typedef struct fl {
	nx_lower *L;
	int nv;
	const nx_inst *inst[FL_MAX];
	int param[FL_MAX];  /* parameter number, -1 computed or alias */
	int alias[FL_MAX];  /* slot owner */
	int ops[FL_MAX][3];
	int nops[FL_MAX];
	nx_lemap m[FL_MAX];
	nx_dtype dt[FL_MAX];
	int64_t off[FL_MAX];
	int stage[FL_MAX];  /* stage of a computed value */
	int nstage;
	nx_engine seng[FL_MAX];
	int sidx[FL_MAX];   /* the stage's signal number on its engine within a tile */
	int per[NX_ENG_COUNT]; /* signals per tile per engine */
	int root;
	int64_t n, tr;
	nx_lval *const *ext;
	nx_lval *out;
	int ql, qs, lv;
	int64_t base_l, base_s, base_e[NX_ENG_COUNT];
	nx_lsync loads, stores, comp;
} fl;

/* registers: 0 loads (first stage's engine) / last stage's count (SP),
 * 1 stores (last stage's engine), 2 + e tiles x signals of engine e (POOL:
 * the last stage) */
enum { RF_LD, RF_ST, RF_ENG };

static int find(const fl *x, const nx_inst *i)
{
	for (int k = 0; k < x->nv; k++)
		if (x->inst[k] == i)
			return k;
	return -1;
}

static bool build(fl *x, const nx_inst *f)
{
	memset(x, 0, sizeof *x);
	if (f->op != NX_OP_FUSION || f->ncalled != 1 || f->noperands > 8 || !nx_shape_is_array(f->shape))
		return false;
	const nx_comp *b = f->called[0];
	x->n = nx_shape_elems(f->shape);
	if (x->n <= 0)
		return false;
	for (int k = 0; k < b->ninsts; k++) {
		const nx_inst *i = b->insts[k];
		if (x->nv == FL_MAX || !nx_shape_is_array(i->shape) || nx_shape_elems(i->shape) != x->n ||
		    nx_lower_dtype(i->shape->type) < 0)
			return false;
		int v = x->nv++;
		x->inst[v] = i;
		x->dt[v] = (nx_dtype)nx_lower_dtype(i->shape->type);
		x->param[v] = -1;
		x->alias[v] = v;
		x->stage[v] = -1;
		if (i->op == NX_OP_PARAMETER) {
			int pn = -1;
			for (int p = 0; p < b->nparams; p++)
				if (b->params[p] == i)
					pn = p;
			if (pn < 0 || pn >= f->noperands)
				return false;
			x->param[v] = pn;
			continue;
		}
		for (int j = 0; j < i->noperands; j++)
			if (find(x, i->operands[j]) < 0)
				return false;
		int a0 = i->noperands ? find(x, i->operands[0]) : -1;
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
		/* stages: consecutive instructions on one engine */
		if (x->nstage == 0 || x->seng[x->nstage - 1] != x->m[v].e) {
			x->seng[x->nstage] = x->m[v].e;
			x->sidx[x->nstage] = x->per[x->m[v].e]++;
			x->nstage++;
		}
		x->stage[v] = x->nstage - 1;
	}
	x->root = find(x, b->root);
	return x->root >= 0 && x->nstage > 0 && x->stage[x->alias[x->root]] == x->nstage - 1 &&
	       x->param[x->alias[x->root]] < 0;
}

bool nx_l_fused_loop_ok(const nx_lower *L, const nx_inst *f)
{
	fl x;
	if (!build(&x, f))
		return false;
	/* only bodies the fused kernel cannot hold: more than one SBUF half
	 * per partition over 128 partitions */
	int64_t per = 0;
	for (int v = 0; v < x.nv; v++)
		if (x.alias[v] == v)
			per += nx_dtype_bytes[x.dt[v]];
	return (double)x.n * (double)per > 128.0 * (double)L->sbuf_half;
}

static int64_t al64(int64_t v)
{
	return (v + 63) & ~(int64_t)63;
}

static nx_ap tile_ap(const fl *x, int v, int64_t np, int64_t tr)
{
	int32_t s1[1] = {1};
	uint32_t c[1] = {(uint32_t)tr};
	return nx_ap_sbuf(x->dt[v], 0, (int)np, x->off[x->alias[v]], 1, s1, c);
}

static void tile(fl *x, int64_t np, int64_t tr, int64_t e0)
{
	nx_lower *L = x->L;
	int32_t s1[1] = {1};
	uint32_t c[1] = {(uint32_t)tr};
	int64_t adv = 128 * x->tr;
	nx_engine last = x->seng[x->nstage - 1];
	/* SP: the previous tile's last stage is done, then the parameters */
	nx_l_wait_rel(L, NX_ENG_SP, NX_LSEM_ENG + last, x->base_e[last] + x->sidx[x->nstage - 1] + 1 - x->per[last],
	              RF_LD);
	int nld = 0;
	for (int v = 0; v < x->nv; v++) {
		if (x->param[v] < 0)
			continue;
		const nx_lval *p = x->ext[x->param[v]];
		int esz = nx_dtype_bytes[p->dt];
		nx_ap h = nx_ap_hbm(p->dt, p->buf->off + e0 * esz, (int)np, tr, 1, s1, c);
		if (x->lv >= 0)
			h.loop_stride[x->lv] = adv * esz;
		nx_lsync y = nx_l_dma_q(L, NX_ENG_SP, x->ql, tile_ap(x, v, np, tr), h);
		nx_l_max(&x->loads, &y);
		nld++;
	}
	nx_l_addreg(L, NX_ENG_SP, RF_LD, x->per[last]);
	/* stages */
	bool waited[NX_ENG_COUNT][NX_ENG_COUNT];
	memset(waited, 0, sizeof waited);
	for (int s = 0; s < x->nstage; s++) {
		nx_engine e = x->seng[s];
		if (s == 0) {
			nx_l_addreg(L, e, RF_LD, nld);
			nx_l_wait_rel(L, e, x->ql, x->base_l, RF_LD);
		} else {
			nx_engine pe = x->seng[s - 1];
			nx_l_wait_rel(L, e, NX_LSEM_ENG + pe, x->base_e[pe] + x->sidx[s - 1] + 1, RF_ENG + pe);
			waited[e][pe] = true;
		}
		if (s == x->nstage - 1)
			nx_l_wait_rel(L, e, x->qs, x->base_s, RF_ST);
		for (int v = 0; v < x->nv; v++) {
			if (x->stage[v] != s)
				continue;
			nx_insn *in = nx_l_emit(L, e, x->m[v].op);
			in->func = (uint8_t)x->m[v].func;
			in->flags = (uint16_t)x->m[v].flags;
			in->fimm[0] = x->m[v].imm;
			in->ap[0] = tile_ap(x, v, np, tr);
			for (int j = 0; j < x->nops[v]; j++)
				in->ap[1 + j] = tile_ap(x, x->ops[v][j], np, tr);
		}
		nx_lsync y = nx_l_signal(L, e);
		nx_l_max(&x->comp, &y);
	}
	for (int e = 0; e < NX_ENG_COUNT; e++)
		for (int pe = 0; pe < NX_ENG_COUNT; pe++)
			if (waited[e][pe])
				nx_l_addreg(L, (nx_engine)e, RF_ENG + pe, x->per[pe]);
	nx_l_addreg(L, last, RF_ST, 1);
	/* POOL: store the root after the last stage */
	if (last != NX_ENG_POOL) {
		nx_l_addreg(L, NX_ENG_POOL, RF_ENG + last, x->per[last]);
		nx_l_wait_rel(L, NX_ENG_POOL, NX_LSEM_ENG + last,
		              x->base_e[last] + x->sidx[x->nstage - 1] + 1 - x->per[last], RF_ENG + last);
	}
	int eo = nx_dtype_bytes[x->out->dt];
	nx_ap h = nx_ap_hbm(x->out->dt, x->out->buf->off + e0 * eo, (int)np, tr, 1, s1, c);
	if (x->lv >= 0)
		h.loop_stride[x->lv] = adv * eo;
	nx_lsync y = nx_l_dma_q(L, NX_ENG_POOL, x->qs, h, tile_ap(x, x->root, np, tr));
	nx_l_max(&x->stores, &y);
}

nx_status nx_l_fused_loop(nx_lower *L, const nx_inst *f, nx_lval *const *ops, nx_lval *out)
{
	fl x;
	if (!nx_l_fused_loop_ok(L, f) || !build(&x, f))
		return nx_l_err(L, "fusion outside the loop kernel's subset");
	x.L = L, x.ext = ops, x.out = out;
	int64_t per = 0;
	for (int v = 0; v < x.nv; v++)
		if (x.alias[v] == v)
			per += nx_dtype_bytes[x.dt[v]];
	int64_t room = L->sbuf_half - 64 * x.nv;
	x.tr = room / per < 2048 ? room / per : 2048;
	if (x.tr < 1)
		return nx_l_err(L, "fusion body too wide for SBUF");
	if (x.n < 128 * x.tr)
		x.tr = (x.n + 127) / 128;
	int64_t bytes = 0;
	for (int v = 0; v < x.nv; v++)
		if (x.alias[v] == v) {
			x.off[v] = bytes;
			bytes += al64(x.tr * nx_dtype_bytes[x.dt[v]]);
		}
	int64_t base;
	int h;
	nx_status rc = nx_l_sbuf_begin(L, bytes, &base, &h);
	if (rc)
		return rc;
	for (int v = 0; v < x.nv; v++)
		x.off[v] += base;
	x.ql = nx_l_queue(L, NX_ENG_SP);
	x.qs = nx_l_queue(L, NX_ENG_POOL);
	x.lv = -1;
	int64_t T = x.n / (128 * x.tr), rem = x.n % (128 * x.tr), q = rem / x.tr, s = rem % x.tr;
	nx_l_plan_kernel(L, "fused-loop");
	nx_l_plan(L, "body", "%d values, %d stages, %lld elements", x.nv, x.nstage, (long long)x.n);
	nx_l_plan(L, "tiling", "[128 partitions, %lld] per tile; %lld tiles in a loop, tail [%lld, %lld] + [1, %lld]",
	          (long long)x.tr, (long long)T, (long long)q, (long long)x.tr, (long long)s);
	nx_l_plan(L, "loops", "tile %lld (single-buffered, per-iteration waits)", (long long)T);
	char st[128];
	size_t len = 0;
	st[0] = 0;
	for (int k = 0; k < x.nstage && len < sizeof st - 8; k++)
		len += (size_t)snprintf(st + len, sizeof st - len, "%s%s", k ? " > " : "", nx_engine_names[x.seng[k]]);
	nx_l_plan(L, "engines", "load sp q%d, stages %s, store pool q%d", x.ql, st, x.qs);
	nx_l_plan(L, "resident", "none");

	bool used[NX_ENG_COUNT] = {false};
	used[NX_ENG_SP] = used[NX_ENG_POOL] = true;
	for (int k = 0; k < x.nstage; k++)
		used[x.seng[k]] = true;
	for (int e = 0; e < NX_ENG_COUNT; e++)
		if (used[e])
			nx_l_wait(L, (nx_engine)e, &L->sbuf_free[h]);
	for (int v = 0; v < x.nv; v++)
		if (x.param[v] >= 0)
			nx_l_wait(L, NX_ENG_SP, &ops[x.param[v]]->buf->written);
	nx_l_wait(L, NX_ENG_POOL, &out->buf->war);
	x.base_l = L->qcount[x.ql];
	x.base_s = L->qcount[x.qs];
	for (int e = 0; e < NX_ENG_COUNT; e++)
		x.base_e[e] = L->ecount[e];
	/* the engines' earlier kernels are complete before the first tile
	 * (relative targets start at the counts below) */
	nx_lsync e0;
	memset(&e0, 0, sizeof e0);
	for (int e = 0; e < NX_ENG_COUNT; e++)
		if (used[e] && e != NX_ENG_SP)
			e0.s[NX_LSEM_ENG + e] = x.base_e[e];
	e0.s[x.qs] = x.base_s;
	for (int e = 0; e < NX_ENG_COUNT; e++)
		if (used[e])
			nx_l_wait(L, (nx_engine)e, &e0);
	for (int e = 0; e < NX_ENG_COUNT; e++)
		if (used[e])
			for (int r = 0; r < RF_ENG + NX_ENG_COUNT; r++)
				nx_l_setreg(L, (nx_engine)e, r, 0);
	if (T > 0) {
		if (T > 1) {
			for (int e = 0; e < NX_ENG_COUNT; e++)
				if (used[e])
					nx_l_loop(L, (nx_engine)e, T);
			x.lv = L->s[NX_ENG_SP].depth - 1;
		}
		tile(&x, 128, x.tr, 0);
		if (T > 1) {
			for (int e = 0; e < NX_ENG_COUNT; e++)
				if (used[e])
					nx_l_endloop(L, (nx_engine)e);
			x.lv = -1;
		}
	}
	if (q > 0)
		tile(&x, q, x.tr, T * 128 * x.tr);
	if (s > 0)
		tile(&x, 1, s, T * 128 * x.tr + q * x.tr);
	for (int v = 0; v < x.nv; v++)
		if (x.param[v] >= 0)
			nx_l_max(&ops[x.param[v]]->buf->war, &x.loads);
	nx_l_max(&out->buf->written, &x.stores);
	nx_l_max(&out->buf->war, &x.stores);
	nx_lsync done = x.stores;
	nx_l_max(&done, &x.loads);
	nx_l_max(&done, &x.comp);
	nx_l_sbuf_end(L, h, &done);
	return NX_OK;
}
