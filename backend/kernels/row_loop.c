/* backend/kernels/row_loop.c — a fusion whose reductions run over the
 * trailing (contiguous) axes of R rows of C elements (softmax, layer norm,
 * their backward forms; the fusion pass forms them, passes/fusion.c
 * row_merge) as one loop nest over row tiles: every input row is loaded
 * once, reductions, per-row statistics and the elementwise producers and
 * consumers run on chip, every output is stored once.
 *
 * Values of the body: rows (R*C elements), per-row statistics (R), columns
 * ([C] inputs broadcast along the rows: loaded once into every partition,
 * by POOL over the store queues, a large one into partition 0 and copied
 * by one partition_broadcast),
 * scalars (constants become immediates, one-element inputs a [128, 1]
 * column). A tile is 128 partitions x kt rows, partition p holding rows
 * p*kt .. p*kt+kt-1 of the tile (contiguous in HBM). Instructions:
 *   row op        one instruction over [np, kt, C] (a column read with
 *                 stride 0 over kt, a statistic with stride 0 over C)
 *   row-scalar    row (op) statistic: kt instructions tensor_scalar over
 *                 [np, C], the statistic of row j as the per-partition
 *                 scalar (when C > 60, else one row op with stride 0)
 *   reduce        tensor_reduce over C: [np, kt]; a sum of f32 rows may
 *                 run on ACT: an identity activate per row in place, the
 *                 sum as its accumulator
 *   act-row       ACT f(x + b) per row with the statistic b as the
 *                 per-partition bias (f(x - s) takes -s), and a reduce-add
 *                 of its result as the activate's accumulator
 *   stat op       one instruction over [np, kt]
 * Row-scalar and unary copies go to ACT or DVE, row ops and reductions to
 * DVE or POOL (which share the SBUF port), by an estimate of each engine's
 * busy time. Consecutive instructions on one engine form a stage. Row
 * slots are shared by liveness (layout). Tiles rotate over ND buffer sets;
 * the stages of a tile run in order, tile i's loads wait for the last
 * stage (and, when an output sits on an input's slot, the stores) of tile
 * i-ND, its first stage for its loads and the stores of tile i-ND. The
 * loop body holds NB tiles (a multiple of ND, up to RW_NB) emitted in a
 * list-schedule order (schedule), with waits per iteration; tiles after
 * the loop wait for absolute counts. docs/lowering.md, "Row kernels". */
#include "backend/lower.h"
#include "ir/eval/eval.h"

#include <math.h>
#include <string.h>

#define RW_MAX 64  /* body instructions */
#define RW_IO 16   /* row/stat inputs + outputs */

enum {
	V_ROWIN, V_STATIN, V_COLIN, V_SCIN, V_CONST, /* inputs */
	V_SBC, V_RB, V_CB, V_ALIAS,                  /* views */
	V_ROW, V_STAT, V_COL,                        /* computed (V_COL: a converted column, once) */
};
enum { O_FULL, O_ROWSC, O_TSC, O_RED, O_ACTROW, O_NEG };

typedef struct rv {
	const nx_inst *i;
	int kind, a;    /* a: source value (views), -1 */
	nx_dtype dt;
	int pn;         /* parameter number */
	float imm;      /* constant value */
	int64_t off;    /* slot in a buffer set (rows, stats) or absolute (columns) */
	bool slot, out;
	int users;
} rv;

typedef struct rop {
	int kind, v;   /* value written */
	int o[3], no;  /* operands (values) */
	nx_lemap m;
	int alu;       /* O_ROWSC/O_TSC/O_RED: ALU op */
	bool rev;      /* O_ROWSC/O_TSC: scalar op src */
	int sc;        /* O_ROWSC/O_TSC/O_ACTROW: the scalar operand (value), or -1 for imm */
	float imm;
	int acc;       /* O_ACTROW: accumulator stat value, -1 */
	float init;    /* O_RED: init combined when not neutral */
	bool combine;
	nx_engine e;
	int stage;
} rop;

#define RW_ND 8 /* buffer sets at most */
#define RW_NB 16 /* tiles per loop body at most */

typedef struct rk {
	nx_lower *L;
	int nv, nop;
	rv v[RW_MAX];
	rop op[RW_MAX * 2];
	int64_t R, C, kt, bufb, step;
	int nd, nb; /* buffer sets; tiles per loop body (a multiple of nd) */
	int nstage;
	nx_engine seng[RW_MAX * 2];
	int sidx[RW_MAX * 2], per[NX_ENG_COUNT];
	int idx[RW_NB][RW_MAX * 2]; /* signal of stage s of body tile b among its engine's in the body */
	int64_t loop_tiles;     /* tiles done by the loop (tails number on from here) */
	int64_t ntile;          /* tiles in all */
	bool ht;                /* small first and last transfers (body_kl, body_ks) */
	bool sep, io_shared;    /* layout: outputs kept off input slots / an output on one */
	int order[RW_NB * (RW_MAX * 2 + 2)][2]; /* the body's items in emission order (schedule) */
	nx_lsync tail_last[RW_NB + 2], tail_st[RW_NB + 2];
	int ld[RW_IO], nld, outs[RW_IO], nout;
	nx_lval *const *ext;
	nx_lval *out[RW_IO];
	/* DMAs: SP issues every load and store over all 16 queues, each piece
	 * of a transfer on the least busy queue so far (estimated); kl / ks
	 * pieces per input / output of a tile */
	int kl, ks, lv;
	double qload[NX_LQ];         /* estimated busy time per queue (the body's, then the tails') */
	int8_t qmap[RW_NB][2][NX_LQ]; /* body tile b's loads (0) / stores (1): piece k's queue */
	int qpos[RW_NB][2][NX_LQ];   /* and the count on queue q after its last piece there (0: none) */
	int qcnt[NX_LQ], qreg[NX_LQ]; /* transfers per queue per body; the register advancing by it */
	int64_t base_q[NX_LQ], base_e[NX_ENG_COUNT];
	nx_lsync loads, stores, comp;
	nx_lsync colw;             /* the columns loaded (and converted) */
	bool cwait[NX_ENG_COUNT];  /* engine e waited for colw */
} rk;

/* tiles per loop body for T full tiles and nd buffer sets: the multiple of
 * nd up to RW_NB leaving the fewest tails (tiles after the loop run each
 * tile's stages back to back), then the largest (an iteration's last tiles
 * drain the engines before the next iteration's first; layer norm: 118.4 us
 * with 4 tiles per iteration, 110.5 with 8) */
static int body_tiles(int64_t T, int nd)
{
	int nb = nd;
	for (int m = nd; m <= RW_NB; m += nd)
		if (T % m <= T % nb)
			nb = m;
	return nb;
}

/* registers: producer engine counts, queue counts (one per distinct number
 * of transfers per queue per body), all advanced once per loop body */
enum { RF_ENG, RF_Q = RF_ENG + NX_ENG_COUNT, RF_N = RF_Q + 4 };
_Static_assert(RF_N <= NX_NREGS - 2, "registers per engine (two are the device loops')");

static int find(const rk *x, const nx_inst *i)
{
	for (int k = 0; k < x->nv; k++)
		if (x->v[k].i == i)
			return k;
	return -1;
}

static int res(const rk *x, int k)
{
	while (x->v[k].kind == V_ALIAS)
		k = x->v[k].a;
	return k;
}

static bool is_row(const rk *x, int k)
{
	int kd = x->v[res(x, k)].kind;
	return kd == V_ROWIN || kd == V_ROW;
}

static bool is_stat(const rk *x, int k)
{
	int kd = x->v[res(x, k)].kind;
	return kd == V_STATIN || kd == V_STAT;
}

static bool trailing_bcast(const nx_inst *b, bool lead)
{
	const nx_shape *o = b->shape, *s = b->operands[0]->shape;
	int n = b->a.dimensions.n, first = lead ? 0 : o->rank - n;
	if (n != s->rank)
		return false;
	for (int j = 0; j < n; j++)
		if (b->a.dimensions.v[j] != first + j || s->dims[j] != o->dims[first + j])
			return false;
	return true;
}

static bool neutral(int alu, double v)
{
	switch (alu) {
	case NX_ALU_ADD: return v == 0.0;
	case NX_ALU_MUL: return v == 1.0;
	case NX_ALU_MAX: return isinf(v) && v < 0;
	case NX_ALU_MIN: return isinf(v) && v > 0;
	default: return false;
	}
}

static rop *newop(rk *x, int kind, int v)
{
	rop *o = &x->op[x->nop++];
	memset(o, 0, sizeof *o);
	o->kind = kind, o->v = v, o->sc = -1, o->acc = -1;
	return o;
}

/* classify the body and derive the instruction list */
static bool build(rk *x, const nx_lower *L, const nx_inst *f)
{
	memset(x, 0, sizeof *x);
	if (f->op != NX_OP_FUSION || f->ncalled != 1)
		return false;
	const nx_comp *b = f->called[0];
	const nx_inst *root = b->root;
	if (!root || b->ninsts > RW_MAX)
		return false;
	bool tup = root->op == NX_OP_TUPLE;
	/* the row space: the first reduction over trailing dims */
	x->R = 0;
	for (int k = 0; k < b->ninsts && !x->R; k++) {
		const nx_inst *i = b->insts[k];
		if (i->op != NX_OP_REDUCE || i->noperands != 2)
			continue;
		const nx_shape *s = i->operands[0]->shape;
		int nd = i->a.dimensions.n, k0 = s->rank - nd;
		bool ok = nd >= 1 && k0 >= 1;
		for (int j = 0; ok && j < nd; j++)
			ok = i->a.dimensions.v[j] == k0 + j;
		if (!ok)
			return false;
		int64_t r0 = 1, c0 = 1;
		for (int j = 0; j < s->rank; j++)
			*(j < k0 ? &r0 : &c0) *= s->dims[j];
		x->R = r0, x->C = c0;
	}
	int64_t R = x->R, C = x->C;
	if (R < 1 || C < 2 || C > 16384)
		return false;
	for (int k = 0; k < b->ninsts; k++) {
		const nx_inst *i = b->insts[k];
		if (i == root && tup)
			continue;
		if (!nx_shape_is_array(i->shape) || nx_lower_dtype(i->shape->type) < 0)
			return false;
		rv *v = &x->v[x->nv];
		memset(v, 0, sizeof *v);
		v->i = i, v->a = -1, v->pn = -1;
		v->dt = (nx_dtype)nx_lower_dtype(i->shape->type);
		int64_t e = nx_shape_elems(i->shape);
		int ops[3] = {-1, -1, -1};
		if (i->noperands > 3 && i->op != NX_OP_PARAMETER)
			return false;
		for (int j = 0; j < i->noperands && j < 3; j++)
			if ((ops[j] = find(x, i->operands[j])) < 0)
				return false;
		int vi = x->nv++;
		for (int j = 0; j < i->noperands && j < 3; j++)
			x->v[ops[j]].users++;
		switch (i->op) {
		case NX_OP_PARAMETER: {
			for (int p = 0; p < b->nparams; p++)
				if (b->params[p] == i)
					v->pn = p;
			if (v->pn < 0 || v->pn >= f->noperands)
				return false;
			/* a [C] value read only by broadcasts along the rows (or converts
			 * of it) is a column */
			bool col = e == C;
			for (int u = 0; u < b->ninsts && col; u++) {
				const nx_inst *w = b->insts[u];
				for (int j = 0; j < w->noperands; j++)
					if (w->operands[j] == i)
						col = (w->op == NX_OP_BROADCAST && nx_shape_elems(w->shape) == R * C &&
						       trailing_bcast(w, false)) ||
						      (w->op == NX_OP_CONVERT && nx_shape_elems(w->shape) == C);
			}
			v->kind = e == 1 ? V_SCIN : col ? V_COLIN : e == R * C ? V_ROWIN : e == R ? V_STATIN : -1;
			if (v->kind < 0)
				return false;
			break;
		}
		case NX_OP_CONSTANT:
			if (e != 1)
				return false;
			v->kind = V_CONST;
			v->imm = (float)nx_lit_get_f64(i->a.literal, 0);
			break;
		case NX_OP_BROADCAST: {
			int s = res(x, ops[0]);
			int sk = x->v[s].kind;
			if (sk == V_SCIN || sk == V_CONST || sk == V_SBC) {
				v->kind = V_SBC;
				v->a = sk == V_SBC ? x->v[s].a : s;
			} else if (is_stat(x, s) && e == R * C && trailing_bcast(i, true)) {
				v->kind = V_RB, v->a = s;
			} else if ((sk == V_COLIN || sk == V_COL) && e == R * C && trailing_bcast(i, false) &&
			           x->v[s].dt == v->dt) {
				v->kind = V_CB, v->a = s;
			} else {
				return false;
			}
			if (v->kind == V_SBC && e != R && e != R * C)
				return false;
			break;
		}
		default: {
			bool layout = i->op == NX_OP_RESHAPE || i->op == NX_OP_BITCAST || i->op == NX_OP_COPY ||
			              i->op == NX_OP_CONVERT;
			int s0 = i->noperands ? res(x, ops[0]) : -1;
			if (i->op == NX_OP_CONVERT && s0 >= 0 && (x->v[s0].kind == V_COLIN || x->v[s0].kind == V_COL) &&
			    e == C && nx_type_is_float(i->shape->type)) {
				/* a converted column: computed once before the tiles */
				v->kind = x->v[s0].dt == v->dt ? V_ALIAS : V_COL;
				v->a = s0;
				break;
			}
			if (layout && x->v[ops[0]].dt == v->dt && nx_shape_elems(i->operands[0]->shape) == e &&
			    (is_row(x, ops[0]) || is_stat(x, ops[0]))) {
				v->kind = V_ALIAS, v->a = res(x, ops[0]);
				break;
			}
			if (layout && (i->op != NX_OP_CONVERT || !nx_type_is_float(i->shape->type)))
				return false; /* a converting copy between float types is an op */
			if (i->op == NX_OP_REDUCE) {
				int a = res(x, ops[0]), in = res(x, ops[1]);
				int alu = nx_l_reduce_alu(i);
				if (!is_row(x, a) || x->v[in].kind != V_CONST || e != R || alu < 0 ||
				    nx_shape_elems(i->operands[0]->shape) != R * C)
					return false;
				/* over the trailing dims (the row space's C) */
				const nx_shape *s = i->operands[0]->shape;
				int64_t c0 = 1;
				for (int j = s->rank - i->a.dimensions.n; j < s->rank; j++)
					c0 *= s->dims[j];
				if (c0 != C || i->a.dimensions.v[0] != s->rank - i->a.dimensions.n)
					return false;
				v->kind = V_STAT;
				rop *o = newop(x, O_RED, vi);
				o->o[0] = a, o->no = 1, o->alu = alu;
				o->init = x->v[in].imm;
				o->combine = !neutral(alu, o->init);
				break;
			}
			nx_lemap m;
			if (nx_l_family(i->op) != NX_LK_ELEMENTWISE || !nx_l_elem_map(i, &m) || i->noperands < 1 ||
			    m.op == NX_I_SELECT || i->shape->type == NX_PRED)
				return false;
			if (e != R * C && e != R)
				return false;
			bool row = e == R * C && R * C != R;
			v->kind = row ? V_ROW : V_STAT;
			int no = i->noperands, nsc = 0, nrb = 0, sci = -1, rbi = -1;
			for (int j = 0; j < no; j++) {
				int s = res(x, ops[j]);
				int sk = x->v[s].kind;
				if (sk == V_SBC)
					nsc++, sci = j;
				else if (sk == V_RB)
					nrb++, rbi = j;
				else if (row ? !(is_row(x, s) || sk == V_CB) : !is_stat(x, s))
					return false;
				if (nx_lower_dtype(i->operands[j]->shape->type) < 0)
					return false;
			}
			rop *o;
			if (nsc + nrb == 1 && no == 2 && m.op == NX_I_TENSOR_TENSOR && nx_type_is_float(i->shape->type)) {
				int j = nsc ? sci : rbi, other = 1 - j;
				int s = res(x, ops[j]);
				o = newop(x, nsc ? O_TSC : O_ROWSC, vi);
				o->o[0] = res(x, ops[other]), o->no = 1;
				o->alu = m.func, o->rev = j == 0, o->m = m;
				int src = x->v[s].a; /* SBC: the scalar; RB: the statistic */
				if (nsc && x->v[src].kind == V_CONST)
					o->imm = x->v[src].imm;
				else
					o->sc = src;
				if (nrb && C <= 60) { /* one row op reading the statistic with stride 0 */
					o->kind = O_FULL;
					o->o[0] = res(x, ops[0]), o->o[1] = res(x, ops[1]), o->no = 2;
				}
			} else if (nsc + nrb == 0 || (nsc == 0 && row)) {
				/* x * x on rows: ACT square */
				if (i->op == NX_OP_MULTIPLY && row && res(x, ops[0]) == res(x, ops[1]) &&
				    nx_type_is_float(i->shape->type)) {
					o = newop(x, O_ACTROW, vi);
					o->o[0] = res(x, ops[0]), o->no = 1;
					o->m.op = NX_I_ACTIVATE, o->m.e = NX_ENG_ACT, o->m.func = NX_ACT_SQUARE;
					o->m.imm = 1.0f;
					break;
				}
				o = newop(x, O_FULL, vi);
				o->m = m, o->no = no;
				for (int j = 0; j < no; j++)
					o->o[j] = res(x, ops[j]);
				/* f(row (+|-) statistic) on ACT: one activate per row with the bias */
				if (row && m.op == NX_I_ACTIVATE && no == 1) {
					int t = o->o[0];
					rop *tp = NULL;
					for (int q = 0; q < x->nop - 1; q++)
						if (x->op[q].v == t)
							tp = &x->op[q];
					if (tp && tp->kind == O_ROWSC && x->v[t].users == 1 && !tp->rev &&
					    (tp->alu == NX_ALU_ADD || tp->alu == NX_ALU_SUB) && x->v[t].dt == NX_DT_F32) {
						o->kind = O_ACTROW;
						o->o[0] = tp->o[0];
						o->sc = t; /* bias: t's slot holds +-statistic */
						if (tp->alu == NX_ALU_SUB) {
							tp->kind = O_NEG; /* t = -statistic */
						} else {
							tp->kind = O_NEG;
							tp->imm = 1.0f; /* t = statistic (a copy) */
						}
						tp->alu = NX_ALU_MUL;
						x->v[t].kind = V_STAT;
					}
				}
			} else {
				return false;
			}
			break;
		}
		}
	}
	/* reduce-add of an activate's result: its accumulator */
	for (int q = 0; q < x->nop; q++) {
		rop *r = &x->op[q];
		if (r->kind != O_RED || r->alu != NX_ALU_ADD || r->combine)
			continue;
		int a = r->o[0];
		for (int p = 0; p < q; p++)
			if (x->op[p].v == a && x->v[a].kind == V_ROW && x->op[p].acc < 0 && x->v[a].dt == NX_DT_F32 &&
			    x->v[r->v].dt == NX_DT_F32 &&
			    (x->op[p].kind == O_ACTROW ||
			     (x->op[p].kind == O_FULL && x->op[p].m.op == NX_I_ACTIVATE && x->op[p].no == 1))) {
				x->op[p].kind = O_ACTROW;
				x->op[p].acc = r->v;
				r->kind = -1; /* done by the activate */
			}
	}
	/* outputs */
	x->nout = tup ? root->noperands : 1;
	if (x->nout > RW_IO)
		return false;
	for (int k = 0; k < x->nout; k++) {
		int o = find(x, tup ? root->operands[k] : root);
		if (o < 0)
			return false;
		o = res(x, o);
		if ((x->v[o].kind == V_RB || x->v[o].kind == V_CB) && x->nop < RW_MAX * 2) {
			/* a per-row value or a column broadcast along the rows and read
			 * outside: materialized by a copy right after the value is
			 * computed (columns: first) */
			int st = x->v[o].a, pos = 0; /* the statistic, or the column */
			for (int q = 0; q < x->nop && x->v[o].kind == V_RB; q++)
				if (x->op[q].v == st)
					pos = q + 1;
			memmove(&x->op[pos + 1], &x->op[pos], sizeof(rop) * (size_t)(x->nop - pos));
			x->nop++;
			rop *c = &x->op[pos];
			memset(c, 0, sizeof *c);
			c->kind = O_FULL, c->v = o, c->o[0] = st, c->no = 1, c->sc = -1, c->acc = -1;
			c->m.op = NX_I_TENSOR_COPY, c->m.e = NX_ENG_DVE, c->m.imm = 1.0f;
			x->v[o].kind = V_ROW;
		}
		if (x->v[o].kind != V_ROW && x->v[o].kind != V_STAT)
			return false;
		/* an output whose value became the bias of an activate is not kept */
		for (int q = 0; q < x->nop; q++)
			if (x->op[q].v == o && x->op[q].kind == O_NEG)
				return false;
		x->outs[k] = o;
		x->v[o].out = true;
	}
	for (int k = 0; k < x->nv; k++)
		if ((x->v[k].kind == V_ROWIN || x->v[k].kind == V_STATIN) && x->v[k].users > 0) {
			if (x->nld == RW_IO)
				return false;
			x->ld[x->nld++] = k;
		}
	/* a lone reduction is the reduce kernels' (lower_ops.c, stream.c) */
	if (x->nop < 2)
		return false;
	/* drop ops whose value nobody reads (the activate took it over) */
	int n = 0;
	for (int q = 0; q < x->nop; q++)
		if (x->op[q].kind >= 0)
			x->op[n++] = x->op[q];
	x->nop = n;
	if (x->nld < 1 || x->nop < 1)
		return false;
	(void)L;
	return true;
}

static int64_t al64(int64_t v)
{
	return (v + 63) & ~(int64_t)63;
}

/* the last op reading value k (through aliases), -1 none; outputs are
 * never given up (their store follows the last stage) */
static int last_use(const rk *x, int k)
{
	if (x->v[k].out)
		return 1 << 20;
	int last = -1;
	for (int q = 0; q < x->nop; q++) {
		const rop *o = &x->op[q];
		for (int j = 0; j < o->no; j++)
			if (res(x, o->o[j]) == k)
				last = q;
		if (o->sc >= 0 && res(x, o->sc) == k)
			last = q;
	}
	return last;
}

/* Slots: statistics kt (per buffer set), columns once; rows kt*C, shared:
 * a row value's slot is given up after its last reader (ops of a tile run
 * in order: a later stage waits for the earlier ones), so an op may write
 * in place of an operand it reads last (same elements, same pattern). */
static int64_t layout(rk *x, int64_t kt, int64_t *cols)
{
	int64_t set = 0, c = 0, fo[RW_MAX], fs[RW_MAX];
	int nf = 0, lu[RW_MAX];
	bool fin[RW_MAX], vin[RW_MAX]; /* the slot (a value's) first held an input */
	bool gone[RW_MAX];
	for (int k = 0; k < x->nv; k++) {
		rv *v = &x->v[k];
		int esz = nx_dtype_bytes[v->dt];
		v->slot = false;
		gone[k] = false;
		vin[k] = v->kind == V_ROWIN;
		lu[k] = last_use(x, k);
		if (v->kind == V_ROWIN) {
			v->off = set, set += al64(kt * x->C * esz), v->slot = true;
		} else if (v->kind == V_STATIN || v->kind == V_STAT) {
			v->off = set, set += al64(kt * esz), v->slot = true;
		} else if (v->kind == V_COLIN || v->kind == V_COL) {
			v->off = c, c += al64(x->C * esz);
		} else if (v->kind == V_SCIN) {
			v->off = c, c += 64;
		}
	}
	for (int q = 0; q <= x->nop; q++) {
		for (int k = 0; k < x->nv; k++) {
			rv *v = &x->v[k];
			if ((v->kind == V_ROWIN || v->kind == V_ROW) && v->slot && !gone[k] && lu[k] <= q) {
				gone[k] = true;
				fin[nf] = vin[k];
				fo[nf] = v->off, fs[nf] = al64(kt * x->C * nx_dtype_bytes[v->dt]), nf++;
			}
		}
		for (int k = 0; k < x->nv; k++) {
			rv *v = &x->v[k];
			if (v->kind != V_ROW || v->slot || (q < x->nop && x->op[q].v != k))
				continue;
			int64_t sz = al64(kt * x->C * nx_dtype_bytes[v->dt]);
			int f = -1;
			/* x->sep: an output never takes an input's slot, so the next
			 * loads into it need not wait for this tile's stores */
			for (int j = 0; j < nf && f < 0; j++)
				if (fs[j] == sz && !(x->sep && v->out && fin[j]))
					f = j;
			if (f >= 0) {
				v->off = fo[f];
				vin[k] = fin[f];
				x->io_shared |= v->out && fin[f];
				fo[f] = fo[nf - 1], fs[f] = fs[nf - 1], fin[f] = fin[nf - 1], nf--;
			} else {
				v->off = set, set += sz;
			}
			v->slot = true;
		}
	}
	*cols = c;
	return set;
}

static const double clk_act = 1.4, clk_dve = 1.12, clk_pool = 1.4;

static double op_cycles(const rk *x, const rop *o, int *only)
{
	double kt = (double)x->kt, C = (double)x->C;
	double n = x->v[o->v].kind == V_ROW ? kt * C : kt;
	switch (o->kind) {
	case O_ACTROW:
		*only = 1;
		return kt * ((C > 64 ? C : 64) + 60 + (o->acc >= 0 ? 64 : 0));
	case O_NEG:
		*only = 2;
		return 124;
	case O_ROWSC:
	case O_TSC:
		/* ACT takes the scalar operand as a per-partition column only */
		*only = o->sc >= 0 || o->kind == O_TSC ? 0 : 2;
		return o->kind == O_ROWSC ? kt * ((C > 64 ? C : 64) + 60) : (n > 64 ? n : 64) + 60;
	case O_RED:
		/* a sum of f32 rows also on ACT: identity in place, the sum as
		 * the accumulator */
		*only = o->alu == NX_ALU_ADD && !o->combine && x->v[o->v].dt == NX_DT_F32 &&
		                is_row(x, o->o[0]) && x->v[res(x, o->o[0])].dt == NX_DT_F32
		            ? 0
		            : 2;
		return (n > 64 ? n : 64) + 60;
	default: {
		double nn = n * (o->no > 1 ? o->no : 1);
		*only = o->m.op == NX_I_ACTIVATE ? 1 : (o->m.op == NX_I_TENSOR_COPY || o->m.op == NX_I_TENSOR_SCALAR) ? 0 : 2;
		return (nn > 64 ? nn : 64) + 60;
	}
	}
}

/* engines by estimated busy time per tile (ns): ops that only one side can
 * run (ACT: activates; DVE/POOL, which share the SBUF port: reductions, two-
 * input ops) are counted first, then each flexible op goes to the side that
 * ends up less busy; DVE/POOL ops to the less busy of the two */
static void assign(rk *x)
{
	double load[NX_ENG_COUNT] = {0}, rest_act = 0, rest_port = 0;
	for (int q = 0; q < x->nop; q++) {
		int only;
		double c = op_cycles(x, &x->op[q], &only);
		rest_act += only == 1 ? c / clk_act : 0;
		rest_port += only == 2 ? c / clk_dve : 0;
	}
	for (int q = 0; q < x->nop; q++) {
		rop *o = &x->op[q];
		int only;
		double c = op_cycles(x, o, &only);
		if (only == 1) {
			o->e = NX_ENG_ACT;
			rest_act -= c / clk_act;
		} else if (only == 2) {
			rest_port -= c / clk_dve;
			bool pool_ok = o->kind == O_RED ||
			               (o->kind == O_FULL && o->m.op == NX_I_TENSOR_TENSOR && nx_alu_kinds[o->m.func] == 'a');
			o->e = pool_ok && load[NX_ENG_POOL] < load[NX_ENG_DVE] ? NX_ENG_POOL : NX_ENG_DVE;
		} else {
			double a = load[NX_ENG_ACT] + rest_act + c / clk_act;
			double d = load[NX_ENG_DVE] + load[NX_ENG_POOL] + rest_port + c / clk_dve;
			o->e = a < d ? NX_ENG_ACT : NX_ENG_DVE;
		}
		load[o->e] += c / (o->e == NX_ENG_ACT ? clk_act : o->e == NX_ENG_POOL ? clk_pool : clk_dve);
	}
	x->nstage = 0;
	memset(x->per, 0, sizeof x->per);
	for (int q = 0; q < x->nop; q++) {
		rop *o = &x->op[q];
		if (x->nstage == 0 || x->seng[x->nstage - 1] != o->e) {
			x->seng[x->nstage] = o->e;
			x->sidx[x->nstage] = x->per[o->e]++;
			x->nstage++;
		}
		o->stage = x->nstage - 1;
	}
}

bool nx_l_row_ok(const nx_lower *L, const nx_inst *f)
{
	rk x;
	if (!build(&x, L, f))
		return false;
	int64_t cols;
	int64_t set = layout(&x, 1, &cols);
	return 2 * set + cols + 64 * x.nv <= L->sbuf_half;
}

/* value k in buffer set b: rows [np, kt, C] (j >= 0: row j, [np, C]),
 * statistics [np, kt] (j >= 0: [np, 1]); a statistic read as a row with
 * stride 0 over C (as_row) */
static nx_ap vap(const rk *x, int k, int64_t np, int64_t kt, int b, int j, bool as_row)
{
	const rv *v = &x->v[k];
	int esz = nx_dtype_bytes[v->dt];
	int32_t st[2];
	uint32_t c[2];
	int64_t off;
	if (v->kind == V_COLIN || v->kind == V_COL) {
		off = v->off;
		if (j >= 0) {
			st[0] = 1, c[0] = (uint32_t)x->C;
			return nx_ap_sbuf(v->dt, 0, (int)np, off, 1, st, c);
		}
		st[0] = 0, st[1] = 1, c[0] = (uint32_t)kt, c[1] = (uint32_t)x->C;
		return nx_ap_sbuf(v->dt, 0, (int)np, off, 2, st, c);
	}
	if (v->kind == V_SCIN) {
		st[0] = 1, c[0] = 1;
		return nx_ap_sbuf(v->dt, 0, (int)np, v->off, 1, st, c);
	}
	off = v->off + b * x->bufb;
	bool row = v->kind == V_ROWIN || v->kind == V_ROW;
	if (row) {
		if (j >= 0) {
			st[0] = 1, c[0] = (uint32_t)x->C;
			return nx_ap_sbuf(v->dt, 0, (int)np, off + j * x->C * esz, 1, st, c);
		}
		st[0] = (int32_t)x->C, st[1] = 1, c[0] = (uint32_t)kt, c[1] = (uint32_t)x->C;
		return nx_ap_sbuf(v->dt, 0, (int)np, off, 2, st, c);
	}
	if (j >= 0) {
		st[0] = 1, c[0] = 1;
		return nx_ap_sbuf(v->dt, 0, (int)np, off + j * esz, 1, st, c);
	}
	if (as_row) {
		st[0] = 1, st[1] = 0, c[0] = (uint32_t)kt, c[1] = (uint32_t)x->C;
		return nx_ap_sbuf(v->dt, 0, (int)np, off, 2, st, c);
	}
	st[0] = 1, c[0] = (uint32_t)kt;
	return nx_ap_sbuf(v->dt, 0, (int)np, off, 1, st, c);
}

static void emit_op(rk *x, const rop *o, int64_t np, int64_t kt, int b)
{
	nx_lower *L = x->L;
	bool row = x->v[o->v].kind == V_ROW;
	switch (o->kind) {
	case O_FULL: {
		nx_insn *in = nx_l_emit(L, o->e, o->m.op);
		in->func = (uint8_t)o->m.func;
		in->flags = (uint16_t)o->m.flags;
		in->fimm[0] = o->m.imm;
		in->ap[0] = vap(x, o->v, np, kt, b, -1, false);
		for (int j = 0; j < o->no; j++) {
			int s = o->o[j];
			int sk = x->v[s].kind;
			if (sk == V_RB)
				in->ap[1 + j] = vap(x, x->v[s].a, np, kt, b, -1, true);
			else if (sk == V_CB)
				in->ap[1 + j] = vap(x, x->v[s].a, np, kt, b, -1, false);
			else
				in->ap[1 + j] = vap(x, s, np, kt, b, -1, row && (sk == V_STAT || sk == V_STATIN));
		}
		return;
	}
	case O_TSC:
	case O_ROWSC: {
		int nrow = o->kind == O_ROWSC ? (int)kt : 1;
		for (int j = 0; j < nrow; j++) {
			int jj = o->kind == O_ROWSC ? j : -1;
			nx_insn *in = nx_l_emit(L, o->e, NX_I_TENSOR_SCALAR);
			in->func = (uint8_t)o->alu;
			in->flags = o->rev ? NX_IF_REVERSE : 0;
			in->fimm[0] = o->imm;
			in->ap[0] = vap(x, o->v, np, kt, b, jj, false);
			int s = o->o[0];
			in->ap[1] = x->v[s].kind == V_CB ? vap(x, x->v[s].a, np, kt, b, jj, false) : vap(x, s, np, kt, b, jj, false);
			if (o->sc >= 0)
				in->ap[2] = vap(x, o->sc, np, kt, b, o->kind == O_ROWSC ? j : 0, false);
		}
		return;
	}
	case O_NEG: {
		/* t = statistic * imm (-1: the bias of f(x - s)) */
		nx_insn *in = nx_l_emit(L, o->e, NX_I_TENSOR_SCALAR);
		in->func = NX_ALU_MUL;
		in->fimm[0] = o->imm == 1.0f ? 1.0f : -1.0f;
		in->ap[0] = vap(x, o->v, np, kt, b, -1, false);
		in->ap[1] = vap(x, o->sc, np, kt, b, -1, false);
		return;
	}
	case O_RED: {
		if (o->e == NX_ENG_ACT) {
			nx_insn *z = nx_l_emit(L, NX_ENG_ACT, NX_I_MEMSET);
			z->fimm[0] = 0.0f;
			z->ap[0] = vap(x, o->v, np, kt, b, -1, false);
			for (int j = 0; j < kt; j++) {
				nx_insn *in = nx_l_emit(L, NX_ENG_ACT, NX_I_ACTIVATE);
				in->func = NX_ACT_IDENTITY;
				in->fimm[0] = 1.0f;
				in->ap[0] = vap(x, o->o[0], np, kt, b, j, false);
				in->ap[1] = vap(x, o->o[0], np, kt, b, j, false);
				in->ap[3] = vap(x, o->v, np, kt, b, j, false);
			}
			return;
		}
		nx_insn *in = nx_l_emit(L, o->e, NX_I_TENSOR_REDUCE);
		in->func = (uint8_t)o->alu;
		in->iarg[0] = 1;
		in->ap[0] = vap(x, o->v, np, kt, b, -1, false);
		in->ap[1] = vap(x, o->o[0], np, kt, b, -1, false);
		if (o->combine) {
			nx_insn *c = nx_l_emit(L, o->e, NX_I_TENSOR_SCALAR);
			c->func = (uint8_t)o->alu;
			c->fimm[0] = o->init;
			c->ap[0] = vap(x, o->v, np, kt, b, -1, false);
			c->ap[1] = vap(x, o->v, np, kt, b, -1, false);
		}
		return;
	}
	case O_ACTROW: {
		if (o->acc >= 0) {
			nx_insn *z = nx_l_emit(L, NX_ENG_ACT, NX_I_MEMSET);
			z->fimm[0] = 0.0f;
			z->ap[0] = vap(x, o->acc, np, kt, b, -1, false);
		}
		for (int j = 0; j < kt; j++) {
			nx_insn *in = nx_l_emit(L, NX_ENG_ACT, NX_I_ACTIVATE);
			in->func = (uint8_t)o->m.func;
			in->fimm[0] = o->m.imm;
			in->ap[0] = vap(x, o->v, np, kt, b, j, false);
			in->ap[1] = vap(x, o->o[0], np, kt, b, j, false);
			if (o->sc >= 0)
				in->ap[2] = vap(x, o->sc, np, kt, b, j, false);
			if (o->acc >= 0)
				in->ap[3] = vap(x, o->acc, np, kt, b, j, false);
		}
		return;
	}
	default:
		NX_ASSERT(0);
	}
}

/* bytes of value k per partition for a tile of kt rows */
static int64_t io_elems(const rk *x, int k, int64_t kt)
{
	bool row = x->v[k].kind == V_ROWIN || x->v[k].kind == V_ROW;
	return row ? kt * x->C : kt;
}

/* estimated ns of one of kp pieces of value v's transfer for a tile of np
 * partitions and kt rows: 1.3 us fixed, bytes at 17 B/ns, half the rate
 * at 256 bytes per partition */
static double piece_ns(const rk *x, int v, int64_t np, int64_t kt, int kp)
{
	double bpp = (double)io_elems(x, v, kt) * nx_dtype_bytes[x->v[v].dt];
	return 1300.0 + bpp * ((double)np / kp) / 17.0 * (1.0 + 256.0 / bpp);
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
	int set;    /* buffer set */
	bool rel;
	int64_t u;  /* tails: the tile's number */
	nx_lsync prev; /* tails: the previous stage's signal */
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
	bool used[NX_LQ] = {false};
	for (int k = 0; k < kp; k++) {
		int b = -1;
		for (int q = 0; q < NX_LQ; q++)
			if (!used[q] && (b < 0 || x->qload[q] < x->qload[b]))
				b = q;
		used[b] = true;
		qs[k] = (int8_t)b;
		x->qload[b] += d;
	}
}

/* one transfer per piece: value v's [np, per] rows of tile t, partitions
 * split in kp ranges, piece k on queue qs[k] */
static void t_dma(rk *x, tl *t, int v, nx_lval *hv, bool load, int kp, const int8_t *qs, nx_lsync *acc)
{
	nx_lower *L = x->L;
	int esz = nx_dtype_bytes[hv->dt];
	int64_t per = io_elems(x, v, t->kt), per1 = io_elems(x, v, 1);
	for (int64_t pc = 0; pc < kp; pc++) {
		int64_t p0 = t->np * pc / kp, p1 = t->np * (pc + 1) / kp;
		int32_t s1[1] = {1};
		uint32_t c[1] = {(uint32_t)per};
		nx_ap h = nx_ap_hbm(hv->dt, hv->buf->off + (t->r0 * per1 + p0 * per) * esz, (int)(p1 - p0), per, 1, s1, c);
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
			if (k >= 0 && (x->v[k].kind == V_COLIN || x->v[k].kind == V_COL || x->v[k].kind == V_SCIN))
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
	for (int q = 0; q < x->nop; q++)
		if (x->op[q].stage == s)
			emit_op(x, &x->op[q], t->np, t->kt, t->set);
	t->prev = nx_l_signal(L, e);
	nx_l_max(&x->comp, &t->prev);
}

/* the tile's outputs, by SP after its last stage */
static void t_store(rk *x, tl *t)
{
	nx_lower *L = x->L;
	nx_engine last = x->seng[x->nstage - 1];
	if (t->rel)
		nx_l_wait_rel(L, NX_ENG_SP, NX_LSEM_ENG + last, x->base_e[last] + x->idx[t->b][x->nstage - 1] + 1,
		              RF_ENG + last);
	else
		nx_l_wait(L, NX_ENG_SP, &t->prev);
	memset(&t->ld, 0, sizeof t->ld);
	int first = 0;
	for (int o = 0; o < x->nout; o++) {
		int kp = pieces(t->ks, t->np);
		int8_t qs[NX_LQ];
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
		double c = op_cycles(x, &x->op[q], &only);
		nx_engine e = x->op[q].e;
		sdur[x->op[q].stage] += c / (e == NX_ENG_ACT ? clk_act : e == NX_ENG_POOL ? clk_pool : clk_dve);
	}
	/* a transfer item: latency (one piece) and its share of the queues */
	double lat[2] = {0, 0}, work[2] = {0, 0};
	for (int k = 0; k < 2; k++) {
		int n1 = k ? x->nout : x->nld, kp = k ? x->ks : x->kl;
		for (int l = 0; l < n1; l++) {
			int v = k ? x->outs[l] : x->ld[l];
			double d = 1300.0 + (double)io_elems(x, v, x->kt) * 128.0 / kp * nx_dtype_bytes[x->v[v].dt] / 17.0;
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
			nx_engine e = j == 0 || j == nit - 1 ? NX_ENG_SP : x->seng[j - 1];
			double st = efree[e];
			if (j > 0 && fin[b][j - 1] > st)
				st = fin[b][j - 1];
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
	for (int k = 0; k < NB * nit; k++) {
		int b = x->order[k][0], j = x->order[k][1];
		if (j != 0 && j != nit - 1)
			continue;
		int kind = j != 0, nv = kind ? x->nout : x->nld, kp = kind ? body_ks(x, b) : body_kl(x, b), p = 0;
		for (int l = 0; l < nv; l++, p += kp)
			pick(x, kind ? x->outs[l] : x->ld[l], 128, x->kt, kp, x->qmap[b][kind] + p);
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
	t.kl = x->kl, t.ks = u == x->ntile - 1 ? NX_LQ / x->nout : x->ks;
	t_load(x, &t);
	for (int s = 0; s < x->nstage; s++)
		t_stage(x, &t, s);
	NX_ASSERT(u - x->loop_tiles >= 0 && u - x->loop_tiles < RW_NB + 2);
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
		t[b].np = 128, t[b].kt = x->kt, t[b].r0 = r0 + b * 128 * x->kt, t[b].b = b, t[b].set = b % x->nd;
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

/* -O2 estimate (ns) for kt rows per partition and nd buffer sets: the
 * queues' work per tile (a transfer's fixed cost, bytes at 17 B/ns, over
 * 16 queues), the first load piece and the last store piece exposed, the
 * first and last tiles' compute (ops back to back), the tiles after the
 * loop one after another, and at each loop iteration's end SP's stores of
 * the last tiles hold up the next iteration's loads (nd - 1 tiles) */
static double o2_cost(rk *x, int nd, int64_t k)
{
	int64_t T0 = x->R / (128 * k), rem = x->R - T0 * 128 * k;
	int64_t ntile = T0 + (rem / 128 > 0) + (rem % 128 > 0);
	int nb = body_tiles(T0, nd);
	int64_t groups = T0 / nb, tails = ntile - groups * nb;
	int kl = tile_pieces(nd, x->nld), ks = tile_pieces(nd, x->nout);
	double lb = 0, sb = 0, comp = 0;
	for (int l = 0; l < x->nld; l++)
		lb += (double)io_elems(x, x->ld[l], k) * 128.0 * nx_dtype_bytes[x->v[x->ld[l]].dt];
	for (int o = 0; o < x->nout; o++)
		sb += (double)io_elems(x, x->outs[o], k) * 128.0 * nx_dtype_bytes[x->v[x->outs[o]].dt];
	x->kt = k;
	for (int q = 0; q < x->nop; q++) {
		int only;
		comp += op_cycles(x, &x->op[q], &only) / clk_act;
	}
	double work = (x->nld * kl + x->nout * ks) * 1300.0 / NX_LQ + (lb + sb) / (NX_LQ * 17.0);
	double lat_l = 1300.0 + lb / (x->nld * kl) / 17.0, lat_s = 1300.0 + sb / (x->nout * ks) / 17.0;
	double per = work > comp ? work : comp;
	return (double)ntile * work + lat_l + lat_s + 2.0 * comp + (double)tails * (lat_l + comp + lat_s) +
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
	double act = 0, port = 0, flex = 0;
	for (int q = 0; q < x->nop; q++) {
		int only;
		double c = op_cycles(x, &x->op[q], &only);
		*(only == 1 ? &act : only == 2 ? &port : &flex) += c / (only == 2 ? clk_dve : clk_act);
	}
	double ct = (act + port + flex) / 2;
	ct = ct > act ? ct : act;
	ct = ct > port ? ct : port;
	double t[2];
	for (int h = 0; h < 2; h++) {
		double q = w[h] * (double)(x->loop_tiles / x->nb) / NX_LQ, c = lat[h][0] + ct * (double)x->ntile + lat[h][1];
		t[h] = q > c ? q : c;
	}
	x->ht = t[1] < t[0];
	return x->ht;
}

nx_status nx_l_row(nx_lower *L, const nx_inst *f, nx_lval *const *ops, nx_lval *out)
{
	rk x;
	if (!build(&x, L, f))
		return nx_l_err(L, "fusion outside the row kernel's subset");
	x.L = L, x.ext = ops;
	if (out->tuple ? out->ntuple != x.nout : x.nout != 1)
		return nx_l_err(L, "fusion outputs do not match its body");
	for (int o = 0; o < x.nout; o++) {
		x.out[o] = out->tuple ? out->tuple[o] : out;
		if (x.out[o]->dt != x.v[x.outs[o]].dt)
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
	int64_t cols, set1 = layout(&x, 1, &cols);
	int64_t rpp = (x.R + 127) / 128;
	int64_t room = L->sbuf_half - cols - 64 * x.nv;
	if (room / 3 < set1) { /* outputs on input slots rather than two buffer sets */
		x.sep = false;
		set1 = layout(&x, 1, &cols);
	}
	int64_t kt = 0;
	double bestc = 0;
	/* buffer sets: up to eight (layer norm at kt 1: 82.8 us with eight
	 * against 91.7 with four), fewer where the estimate is lower (larger
	 * tiles: softmax 148.2 us at 16 rows with four against 152.2 at 8) */
	for (int nd = RW_ND; nd >= 2; nd--) {
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
	x.bufb = layout(&x, kt, &cols);
	int64_t base;
	int h;
	nx_status rc = nx_l_sbuf_begin(L, x.bufb * x.nd + cols, &base, &h);
	if (rc)
		return rc;
	for (int k = 0; k < x.nv; k++) {
		if (x.v[k].kind == V_COLIN || x.v[k].kind == V_SCIN || x.v[k].kind == V_COL)
			x.v[k].off += base + x.bufb * x.nd;
		else if (x.v[k].slot)
			x.v[k].off += base;
	}
	assign(&x);
	x.kl = tile_pieces(x.nd, x.nld);
	x.ks = tile_pieces(x.nd, x.nout);
	if (x.nld * x.kl > NX_LQ || x.nout * x.ks > NX_LQ)
		return nx_l_err(L, "row kernel has too many inputs or outputs");
	x.lv = -1;
	int64_t T = x.R / (128 * kt), rem = x.R - T * 128 * kt, k2 = rem / 128, s = rem % 128;
	x.nb = body_tiles(T, x.nd);
	x.ntile = T + (k2 > 0) + (s > 0);
	x.loop_tiles = T / x.nb * x.nb;
	if (x.loop_tiles > 0)
		head_tail(&x);
	nx_l_plan_kernel(L, "row-loop");
	nx_l_plan(L, "shape", "%lld rows of %lld, %d values, %d instructions per tile, %d outputs", (long long)x.R,
	          (long long)x.C, x.nv, x.nop, x.nout);
	nx_l_plan(L, "tiling", "[128 partitions, %lld rows of %lld] per tile; %lld tiles in a loop, tail [128, %lld] + [%lld, 1]",
	          (long long)kt, (long long)x.C, (long long)T, (long long)k2, (long long)s);
	nx_l_plan(L, "loops", "tile %lld (%d buffers, %d tiles per iteration, per-iteration waits)", (long long)T, x.nd,
	          x.nb);
	char st[160];
	size_t len = 0;
	st[0] = 0;
	for (int k = 0; k < x.nop && len < sizeof st - 24; k++) {
		static const char *const kn[] = {"op", "rowscalar", "scalar", "reduce", "act-row", "neg"};
		const rop *o = &x.op[k];
		len += (size_t)snprintf(st + len, sizeof st - len, "%s%s:%s%s", k ? " " : "", kn[o->kind],
		                        nx_engine_names[o->e], o->acc >= 0 ? "+acc" : "");
	}
	nx_l_plan(L, "body", "%s", st);
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
	/* converted columns, once, on DVE */
	bool cdve = false;
	for (int k = 0; k < x.nv; k++) {
		rv *v = &x.v[k];
		if (v->kind != V_COL)
			continue;
		if (!cdve) {
			nx_l_wait(L, NX_ENG_DVE, &L->sbuf_free[h]);
			nx_l_wait(L, NX_ENG_DVE, &colw);
		}
		cdve = true;
		nx_insn *in = nx_l_emit(L, NX_ENG_DVE, NX_I_TENSOR_COPY);
		in->ap[0] = vap(&x, k, 128, 1, 0, 0, false);
		in->ap[1] = vap(&x, v->a, 128, 1, 0, 0, false);
	}
	if (cdve) {
		nx_lsync y = nx_l_signal(L, NX_ENG_DVE);
		nx_l_max(&colw, &y);
		nx_l_max(&x.comp, &y);
	}
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
		schedule(&x);
		for (int k = 0; k < NB * (x.nstage + 2); k++) {
			int b = x.order[k][0], j = x.order[k][1];
			if (j >= 1 && j <= x.nstage)
				x.idx[b][j - 1] = cnt[x.seng[j - 1]]++;
		}
		/* one register per distinct number of transfers per queue */
		int vals[NX_LQ], nvals = 0;
		for (int q = 0; q < NX_LQ; q++) {
			int r = 0;
			while (r < nvals && vals[r] != x.qcnt[q])
				r++;
			if (r == nvals)
				vals[nvals++] = x.qcnt[q];
			if (r >= RF_N - RF_Q)
				return nx_l_err(L, "row kernel: too many queue registers");
			x.qreg[q] = r;
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
		x.step = NB * 128 * kt;
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
	for (; u < T; u++, par = (par + 1) % ND)
		tail(&x, 128, kt, u * 128 * kt, par, u);
	if (k2 > 0) {
		tail(&x, 128, k2, T * 128 * kt, par, u++);
		par = (par + 1) % ND;
	}
	if (s > 0)
		tail(&x, s, 1, T * 128 * kt + k2 * 128, par, u);
	for (int l = 0; l < x.nld; l++)
		nx_l_max(&ops[x.v[x.ld[l]].pn]->buf->war, &x.loads);
	/* queues 8..15 are POOL's outside this kernel: its next transfers on
	 * them follow SP's last ones (counts in issue order) */
	nx_lsync spi = nx_l_signal(L, NX_ENG_SP);
	nx_l_wait(L, NX_ENG_POOL, &spi);
	nx_l_kernel_end(L, h, x.out, x.nout, &x.loads, &x.stores, &x.comp);
	return NX_OK;
}
