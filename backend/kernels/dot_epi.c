/* backend/kernels/dot_epi.c — a dot epilogue: the elementwise region that
 * reads a dot's result (a bias add, a residual add, a scale, a gradient
 * product), applied by the dot kernel to each output tile after its PSUM
 * evacuation and before its store, so the dot writes only the final value
 * (docs/lowering.md, "Dot epilogue").
 *
 * lower_split.c gives a dot and the region that alone reads it one fusion
 * (nx_l_is_dot_epi); nx_l_dot_epi_ok says whether its body is in the subset:
 *   - one dot whose operands are parameters, read only by the region;
 *   - bias rows: a parameter of N elements (the dot's last-axis extent)
 *     broadcast along the result's trailing axes, loaded once into SBUF
 *     ([128 partitions, N], the same row on every partition);
 *   - streamed inputs: parameters of the result's shape, loaded per step;
 *   - scalar constants broadcast: the immediate of a tensor_scalar;
 *   - reshape / bitcast / copy / convert to the same type: the same value;
 *   - elementwise ops of one DVE instruction (nx_l_elem_map) on <= 2
 *     operands, every value of the result's float type;
 *   - ACT functions: at the evacuation (mark_evac), or one between two
 *     passes of POOL over a step's groups (mid ops, mark_mid).
 * The dot-loop's stationary schedule (dot_loop.c) runs the ops on DVE per
 * store group (the tiles ACT evacuated), in place in the output buffer;
 * POOL stores after DVE. The intermediate values take scratch slots of one
 * store group. When the dot takes another kernel, the region runs after it
 * as a fused loop, in place in the output. */
#include "backend/lower.h"
#include "backend/lower_ext.h"

#include <stdio.h>
#include <string.h>

/* body classification: the epilogue value of each instruction, while the
 * inputs are still being found: rows, streamed inputs and ops numbered
 * apart (renumbered as nx_ldepi's values at the end) */
enum { V_NONE = -1, V_IMM = -2, V_DOTOP = -3, V_ROW = 1000, V_STR = 2000, V_OP = 3000 };

typedef struct ebuild {
	const nx_comp *b;
	nx_ptrmap val; /* instruction -> value + 8 (V_* + 8 for the specials) */
	nx_ptrmap imm; /* scalar broadcast -> its constant */
	nx_ldepi *e;
	const nx_inst *dot;
	const nx_inst *rowp[NX_LEPI_IN], *strp[NX_LEPI_IN];
	int64_t n, N;
} ebuild;

static int vget(const ebuild *x, const nx_inst *i)
{
	return (int)nx_ptrmap_get(&x->val, i, V_NONE + 8) - 8;
}

static void vput(ebuild *x, const nx_inst *i, int v)
{
	nx_ptrmap_put(&x->val, i, v + 8);
}

static int param_no(const nx_comp *b, const nx_inst *i)
{
	for (int p = 0; p < b->nparams; p++)
		if (b->params[p] == i)
			return p;
	return -1;
}

/* the value a parameter of the result's shape stands for (a streamed input) */
static int stream_of(ebuild *x, const nx_inst *p)
{
	nx_ldepi *e = x->e;
	for (int k = 0; k < e->nstr; k++)
		if (x->strp[k] == p)
			return V_STR + k;
	return V_NONE;
}

/* a broadcast of parameter p along the result's trailing axes, N elements */
static bool row_bcast(const ebuild *x, const nx_inst *i)
{
	const nx_inst *o = i->operands[0];
	const nx_shape *os = o->shape;
	int off = i->shape->rank - os->rank;
	if (o->op != NX_OP_PARAMETER || off < 0 || i->a.dimensions.n != os->rank || nx_shape_elems(os) != x->N)
		return false;
	for (int j = 0; j < os->rank; j++)
		if (i->a.dimensions.v[j] != off + j || os->dims[j] != i->shape->dims[off + j])
			return false;
	return true;
}

/* the immediate of scalar constant c in type dt */
static bool imm_of(const nx_inst *c, nx_dtype dt, float *f)
{
	uint8_t b[8] = {0};
	int d;
	if (!c || c->op != NX_OP_CONSTANT || !nx_lower_literal_bytes(c->a.literal, b, &d) || d != (int)dt)
		return false;
	uint32_t w = dt == NX_DT_BF16 ? (uint32_t)(b[0] | b[1] << 8) << 16
	                              : (uint32_t)(b[0] | b[1] << 8 | b[2] << 16 | (uint32_t)b[3] << 24);
	memcpy(f, &w, 4);
	return true;
}

static bool dve_ok(const nx_lemap *m)
{
	if (!(nx_isa_table[m->op].engines & NX_EM_DVE))
		return false;
	return m->op == NX_I_TENSOR_TENSOR || m->op == NX_I_TENSOR_SCALAR || m->op == NX_I_TENSOR_COPY;
}

/* one instruction of the body; false: not in the subset */
static bool classify(ebuild *x, const nx_inst *i)
{
	nx_ldepi *e = x->e;
	const nx_comp *b = x->b;
	if (i->op == NX_OP_PARAMETER || i->op == NX_OP_DOT)
		return true; /* placed by their readers; the dot before */
	if (!nx_shape_is_array(i->shape) || nx_lower_dtype(i->shape->type) < 0)
		return false;
	int64_t ne = nx_shape_elems(i->shape);
	if (i->op == NX_OP_CONSTANT)
		return ne == 1;
	if (ne != x->n || nx_lower_dtype(i->shape->type) != (int)e->dt)
		return false;
	if (i->op == NX_OP_BROADCAST) {
		const nx_inst *o = i->operands[0];
		if (nx_shape_elems(o->shape) == 1 && o->op == NX_OP_CONSTANT) {
			nx_ptrmap_put(&x->imm, i, (intptr_t)o);
			vput(x, i, V_IMM);
			return true;
		}
		if (!row_bcast(x, i) || nx_lower_dtype(o->shape->type) != (int)e->dt)
			return false;
		for (int k = 0; k < e->nrow; k++)
			if (x->rowp[k] == o) {
				vput(x, i, V_ROW + k);
				return true;
			}
		if (e->nrow == NX_LEPI_IN)
			return false;
		x->rowp[e->nrow++] = o;
		vput(x, i, V_ROW + e->nrow - 1);
		return true;
	}
	/* operands: the dot, values so far, parameters of the result's shape */
	int src[3];
	for (int j = 0; j < i->noperands; j++) {
		const nx_inst *o = i->operands[j];
		int v = o == x->dot ? 0 : vget(x, o);
		if (v == V_NONE && o->op == NX_OP_PARAMETER && param_no(b, o) >= 0 && nx_shape_elems(o->shape) == x->n &&
		    nx_lower_dtype(o->shape->type) == (int)e->dt) {
			v = stream_of(x, o);
			if (v == V_NONE) {
				if (e->nstr == NX_LEPI_IN)
					return false;
				x->strp[e->nstr++] = o;
				v = V_STR + e->nstr - 1;
			}
		}
		if (v == V_NONE || v == V_DOTOP)
			return false;
		src[j] = v;
	}
	if ((i->op == NX_OP_RESHAPE || i->op == NX_OP_BITCAST || i->op == NX_OP_COPY || i->op == NX_OP_CONVERT) &&
	    i->noperands == 1) {
		if (src[0] == V_IMM)
			return false;
		vput(x, i, src[0]);
		return true;
	}
	nx_lemap m;
	if (nx_l_family(i->op) != NX_LK_ELEMENTWISE || i->noperands < 1 || i->noperands > 2 || !nx_l_elem_map(i, &m))
		return false;
	for (int j = 0; j < i->noperands; j++)
		if (nx_lower_dtype(i->operands[j]->shape->type) != (int)e->dt)
			return false;
	if (e->nop == NX_LEPI_OPS)
		return false;
	nx_ldepi_op *op = &e->op[e->nop];
	memset(op, 0, sizeof *op);
	op->m = m;
	op->nops = i->noperands;
	op->e = NX_ENG_DVE;
	for (int j = 0; j < i->noperands; j++)
		op->src[j] = src[j];
	int ni = (op->nops > 0 && src[0] == V_IMM) + (op->nops > 1 && src[1] == V_IMM);
	if (ni) {
		/* a scalar operand: tensor_scalar with the immediate (reversed
		 * when it comes first) */
		int c = src[0] == V_IMM ? 0 : 1;
		if (ni > 1 || op->nops != 2 || m.op != NX_I_TENSOR_TENSOR || m.func >= NX_ALU_COUNT ||
		    (nx_alu_kinds[m.func] != 'a' && nx_alu_kinds[m.func] != 'c'))
			return false;
		const nx_inst *k = (const nx_inst *)nx_ptrmap_get(&x->imm, i->operands[c], 0);
		if (!imm_of(k, e->dt, &op->m.imm))
			return false;
		op->m.op = NX_I_TENSOR_SCALAR;
		op->m.flags = c == 0 ? NX_IF_REVERSE : 0;
		op->src[0] = src[1 - c];
		op->nops = 1;
	}
	/* an ACT function: on the dot's value at its evacuation (mark_evac), or
	 * between POOL's passes (mark_mid) */
	if (!dve_ok(&op->m) && !(op->m.op == NX_I_ACTIVATE && op->nops == 1))
		return false;
	vput(x, i, V_OP + e->nop);
	e->nop++;
	return true;
}

/* how many operands of the ops read value v */
static int readers(const nx_ldepi *e, int v)
{
	int n = 0;
	for (int q = 0; q < e->nop; q++)
		for (int j = 0; j < e->op[q].nops; j++)
			n += e->op[q].src[j] == v;
	return n;
}

/* The evacuation ops: ACT evacuates the dot's tile as f(x * s) instead of
 * copying it when the first ops are an ACT function f of the dot's value,
 * or of x * s (an immediate) read only by it, the dot's value read only by
 * the first; their values are then the evacuated tile. False when another
 * ACT function remains (ACT runs no other epilogue op). */
static bool mark_evac(nx_ldepi *e)
{
	int o0 = NX_LEPI_OP(e, 0), k = 0;
	e->evac_func = -1;
	e->evac_scale = 1.0f;
	if (e->nop > 0 && readers(e, 0) == 1 && e->op[0].nops == 1 && e->op[0].src[0] == 0) {
		const nx_lemap *m = &e->op[0].m;
		if (m->op == NX_I_TENSOR_SCALAR && m->func == NX_ALU_MUL && e->nop > 1 && readers(e, o0) == 1 &&
		    e->op[1].m.op == NX_I_ACTIVATE && e->op[1].src[0] == o0)
			k = 1;
		if (e->op[k].m.op == NX_I_ACTIVATE) {
			e->evac_func = e->op[k].m.func;
			e->evac_scale = (k ? m->imm : 1.0f) * e->op[k].m.imm;
			for (int q = 0; q <= k; q++)
				e->op[q].evac = true;
		}
	}
	return true;
}

/* The mid ops: the other ACT functions. POOL runs the ops before them over
 * the step's store groups (first pass, level 0), ACT the mid ops per group,
 * then POOL the ops after them (level 1) and the stores (dot_loop.c). A mid
 * op reads one first-pass op value; the root is of level 1. The mid ops'
 * results and the first-pass values that a mid op or a level-1 op reads
 * take step slots (carry); false when the ops do not split so. */
static bool act_ok(const nx_ldepi_op *op);

/* an op value of the first pass that a step slot can carry */
static bool first_op(const nx_ldepi *e, int v)
{
	int o0 = NX_LEPI_OP(e, 0);
	return v >= o0 && !e->op[v - o0].lvl && !e->op[v - o0].mid && !e->op[v - o0].evac && !e->op[v - o0].fold;
}

/* More work for ACT between the passes (POOL bounds the step): a mid
 * function's x * s operand (read by it alone) becomes its scale; then, in
 * order, ops ACT runs (act_ok) of the first pass that read only
 * first-pass op values and are read only by the second pass or ACT join
 * the mid ops (their operands take step slots; the GELU's f/2). Moving
 * the second pass's x + 1 after the tanh to ACT as well was slower (ACT's
 * mid ops delay its next evacuations). */
static void promote(nx_ldepi *e)
{
	int o0 = NX_LEPI_OP(e, 0);
	for (int k = 0; k < e->nop; k++) {
		nx_ldepi_op *op = &e->op[k];
		if (!op->mid)
			continue;
		int v = op->src[0];
		nx_ldepi_op *s = &e->op[v - o0];
		if (s->m.op == NX_I_TENSOR_SCALAR && s->m.func == NX_ALU_MUL && s->nops == 1 && s->xo < 0 &&
		    readers(e, v) == 1 && first_op(e, s->src[0])) {
			op->m.imm *= s->m.imm;
			op->src[0] = s->src[0];
			s->fold = true;
		}
	}
	for (int k = 0; k < e->nop; k++) {
		nx_ldepi_op *op = &e->op[k];
		if (op->mid || op->evac || op->fold || !act_ok(op))
			continue;
		bool firsts = true, late = true;
		for (int j = 0; j < op->nops; j++)
			firsts &= first_op(e, op->src[j]);
		for (int q = k + 1; q < e->nop; q++)
			for (int j = 0; j < e->op[q].nops; j++)
				late &= e->op[q].src[j] != o0 + k || e->op[q].lvl || e->op[q].mid;
		if (!op->lvl && firsts && late && k < e->nop - 1) {
			op->mid = true;
			e->nmid++;
		}
	}
}

static bool mark_mid(nx_ldepi *e)
{
	int o0 = NX_LEPI_OP(e, 0);
	e->nmid = e->ncarry = 0;
	for (int k = 0; k < e->nop; k++) {
		nx_ldepi_op *op = &e->op[k];
		op->mid = op->m.op == NX_I_ACTIVATE && !op->evac;
		op->lvl = op->mid;
		op->cslot = -1;
		for (int j = 0; j < op->nops; j++) {
			int v = op->src[j], l = v >= o0 ? e->op[v - o0].lvl : 0;
			if (op->mid && (l || v < o0 || e->op[v - o0].evac))
				return false;
			op->lvl = l > op->lvl ? l : op->lvl;
		}
		e->nmid += op->mid;
	}
	if (!e->nmid)
		return true;
	if (!e->op[e->nop - 1].lvl)
		return false;
	promote(e);
	for (int k = 0; k < e->nop; k++) {
		nx_ldepi_op *op = &e->op[k];
		bool c = op->mid && k < e->nop - 1; /* (a mid root: ACT writes the tile in place) */
		if (op->fold)
			continue;
		for (int q = k + 1; q < e->nop && !c && !op->lvl && !op->evac; q++)
			for (int j = 0; j < e->op[q].nops; j++)
				c |= e->op[q].src[j] == o0 + k && (e->op[q].mid || e->op[q].lvl);
		if (c && op->xo < 0)
			op->cslot = e->ncarry++;
	}
	return true;
}

/* The outputs of a tuple root: the dot's value (once) and op values, the
 * last op among them (else it would update the dot's tile in place before
 * its store); no ACT evacuation function (the dot's value is stored). */
static bool mark_outs(ebuild *x, const nx_inst *root)
{
	nx_ldepi *e = x->e;
	e->dout = -1;
	if (root->op != NX_OP_TUPLE || root->noperands < 2 || root->noperands > NX_LEPI_XO + 1)
		return false;
	for (int j = 0; j < root->noperands; j++) {
		const nx_inst *o = root->operands[j];
		int v = o == x->dot ? 0 : vget(x, o);
		if (v == 0 && e->dout < 0) {
			e->dout = j;
			continue;
		}
		if (v < V_OP || v >= V_OP + e->nop || e->op[v - V_OP].xo >= 0)
			return false;
		e->op[v - V_OP].xo = e->nxo;
		e->xo_op[e->nxo] = v - V_OP;
		e->xo_tup[e->nxo++] = j;
	}
	return e->dout >= 0 && e->nop > 0 && e->op[e->nop - 1].xo >= 0;
}

/* may op k run on ACT: x op immediate (arithmetic), x * x (square), a copy */
static bool act_ok(const nx_ldepi_op *op)
{
	const nx_lemap *m = &op->m;
	if (m->op == NX_I_TENSOR_SCALAR)
		return m->func < NX_ALU_COUNT && nx_alu_kinds[m->func] == 'a';
	if (m->op == NX_I_TENSOR_TENSOR)
		return m->func == NX_ALU_MUL && op->nops == 2 && op->src[0] == op->src[1];
	return m->op == NX_I_TENSOR_COPY;
}

/* The act ops: ops before the last whose operands are streamed inputs or
 * act ops. ACT runs them all before the other ops; each writes in place
 * into an operand (a streamed input or an act op's buffer) that no other
 * op reads but the act ops before it, else into a pre buffer of its own. */
static void mark_act(nx_ldepi *e)
{
	int s0 = NX_LEPI_STR(e, 0), o0 = NX_LEPI_OP(e, 0);
	e->npbuf = 0;
	for (int k = 0; k + 1 < e->nop; k++) {
		nx_ldepi_op *op = &e->op[k];
		op->act = false;
		bool ok = act_ok(op);
		for (int j = 0; j < op->nops && ok; j++) {
			int v = op->src[j];
			ok = (v >= s0 && v < s0 + e->nstr) || (v >= o0 && e->op[v - o0].act);
		}
		if (!ok)
			continue;
		op->act = true;
		op->pbuf = INT32_MIN;
		for (int j = 0; j < op->nops && op->pbuf == INT32_MIN; j++) {
			int v = op->src[j];
			bool later = false;
			for (int q = 0; q < e->nop && !later; q++)
				for (int i = 0; i < e->op[q].nops && q != k && !(q < k && e->op[q].act); i++)
					later |= e->op[q].src[i] == v;
			if (!later)
				op->pbuf = v < o0 ? -(v - s0) - 1 : e->op[v - o0].pbuf;
		}
		if (op->pbuf == INT32_MIN)
			op->pbuf = e->npbuf++;
	}
}

/* the dot's N: the product of its rhs dims that are neither batch nor contracting */
static int64_t dot_n(const nx_inst *d)
{
	const nx_dot_dnums *dn = &d->a.dot;
	const nx_shape *s = d->operands[1]->shape;
	int64_t N = 1;
	for (int k = 0; k < s->rank; k++) {
		bool u = false;
		for (int j = 0; j < dn->rhs_contracting.n; j++)
			u |= dn->rhs_contracting.v[j] == k;
		for (int j = 0; j < dn->rhs_batch.n; j++)
			u |= dn->rhs_batch.v[j] == k;
		if (!u)
			N *= s->dims[k];
	}
	return N;
}

bool nx_l_dot_epi_ok(const nx_lower *L, const nx_inst *f, const nx_inst **dotp, nx_ldepi *eo)
{
	(void)L;
	if (f->op != NX_OP_FUSION || f->ncalled != 1 || !f->called[0]->root)
		return false;
	bool multi = !nx_shape_is_array(f->shape); /* a tuple root (mark_outs) */
	const nx_comp *b = f->called[0];
	ebuild x;
	nx_ldepi e;
	memset(&x, 0, sizeof x);
	memset(&e, 0, sizeof e);
	x.b = b, x.e = &e;
	for (int k = 0; k < b->ninsts; k++)
		if (b->insts[k]->op == NX_OP_DOT) {
			if (x.dot)
				return false;
			x.dot = b->insts[k];
		}
	const nx_inst *d = x.dot;
	if (!d || d == b->root || d->noperands != 2 || !nx_shape_is_array(d->shape) || nx_lower_dtype(d->shape->type) < 0)
		return false;
	e.dt = (nx_dtype)nx_lower_dtype(d->shape->type);
	if ((e.dt != NX_DT_F32 && e.dt != NX_DT_BF16) || (!multi && nx_lower_dtype(f->shape->type) != (int)e.dt))
		return false;
	x.n = nx_shape_elems(d->shape), x.N = dot_n(d);
	if (x.n <= 0 || x.N <= 0)
		return false;
	nx_ptrmap_init(&x.val, (size_t)b->ninsts + 1);
	nx_ptrmap_init(&x.imm, 8);
	bool ok = true;
	for (int j = 0; j < 2; j++) {
		if (d->operands[j]->op != NX_OP_PARAMETER || param_no(b, d->operands[j]) < 0)
			ok = false;
		else
			vput(&x, d->operands[j], V_DOTOP);
	}
	for (int k = 0; k < b->ninsts && ok; k++)
		ok = (multi && b->insts[k] == b->root) || classify(&x, b->insts[k]);
	for (int k = 0; k < NX_LEPI_OPS; k++)
		e.op[k].xo = -1;
	int rv = ok && !multi ? vget(&x, b->root) : V_NONE;
	/* the root is the last op (or a tuple of outputs); the dot's operands
	 * feed only the dot */
	ok = ok && e.nop > 0 && (multi ? mark_outs(&x, b->root) : rv == V_OP + e.nop - 1);
	for (int k = 0; k < e.nop && ok; k++)
		for (int j = 0; j < e.op[k].nops; j++) {
			int v = e.op[k].src[j];
			e.op[k].src[j] = v >= V_OP ? NX_LEPI_OP(&e, v - V_OP)
			                 : v >= V_STR ? NX_LEPI_STR(&e, v - V_STR)
			                 : v >= V_ROW ? NX_LEPI_ROW(&e, v - V_ROW) : v;
		}
	nx_ptrmap_free(&x.val);
	nx_ptrmap_free(&x.imm);
	if (!ok || !mark_evac(&e) || !mark_mid(&e) || (multi && e.evac_func >= 0))
		return false;
	for (int j = 0; j < e.nxo; j++)
		e.op[e.xo_op[j]].cslot = e.ncarry + j;
	if (!e.nmid && !multi)
		mark_act(&e);
	if (dotp)
		*dotp = d;
	if (eo) {
		*eo = e;
		/* parameter numbers until the lowering binds the values */
		for (int k = 0; k < e.nrow; k++)
			eo->row[k] = (nx_lval *)(intptr_t)(param_no(b, x.rowp[k]) + 1);
		for (int k = 0; k < e.nstr; k++)
			eo->str[k] = (nx_lval *)(intptr_t)(param_no(b, x.strp[k]) + 1);
	}
	return true;
}

bool nx_l_dot_epi_operand(const nx_inst *f, int k)
{
	if (!nx_l_is_dot_epi(f) || k < 0 || k >= f->called[0]->nparams)
		return false;
	const nx_comp *b = f->called[0];
	const nx_inst *p = b->params[k];
	bool dot = false;
	for (int j = 0; j < b->ninsts; j++)
		for (int o = 0; o < b->insts[j]->noperands; o++)
			if (b->insts[j]->operands[o] == p) {
				if (b->insts[j]->op != NX_OP_DOT)
					return false;
				dot = true;
			}
	return dot;
}

int64_t nx_l_epi_pre_bytes(const nx_ldepi *e, int64_t G, int64_t nt)
{
	return e->npbuf * 2 * nx_l_al64(G * nt * nx_dtype_bytes[e->dt]);
}

int64_t nx_l_epi_bytes(const nx_ldepi *e, int64_t G, int64_t gb, int64_t nt, int64_t N)
{
	int esz = nx_dtype_bytes[e->dt];
	return e->nrow * nx_l_al64(N * esz) + e->nstr * 2 * nx_l_al64(G * nt * esz) + (e->nop - 1) * nx_l_al64(gb * nt * esz) +
	       (e->ncarry + 2 * e->nxo) * nx_l_al64(G * nt * esz);
}

/* time of the ops on eng (ACT: the act ops; POOL: the others) */
static double ops_ns(const nx_lower *L, const nx_ldepi *e, nx_engine eng, int64_t w)
{
	double ns = 0;
	for (int k = 0; k < e->nop; k++) {
		bool a = e->op[k].act || e->op[k].mid;
		if ((eng == NX_ENG_POOL && a) || (eng == NX_ENG_ACT && !a) || e->op[k].evac || e->op[k].fold)
			continue;
		nx_insn in;
		memset(&in, 0, sizeof in);
		in.op = (uint16_t)e->op[k].m.op;
		in.engine = (uint8_t)eng;
		in.func = (uint8_t)e->op[k].m.func;
		int32_t s1[1] = {1};
		uint32_t c[1] = {(uint32_t)w};
		int na = eng == NX_ENG_ACT && in.op == NX_I_TENSOR_TENSOR ? 1 : e->op[k].nops; /* square */
		if (na != e->op[k].nops)
			in.op = NX_I_ACTIVATE;
		for (int a = 0; a <= na; a++)
			in.ap[a] = nx_ap_sbuf(e->dt, 0, 128, 0, 1, s1, c);
		ns += nx_target_ns(L->t, &in) + L->t->ctrl_cycles / L->t->freq_ghz[eng];
	}
	return ns;
}

double nx_l_epi_ns(const nx_lower *L, const nx_ldepi *e, nx_engine eng, int64_t w)
{
	return ops_ns(L, e, eng, w);
}

double nx_l_epi_act_ns(const nx_lower *L, const nx_ldepi *e, int64_t w)
{
	return ops_ns(L, e, NX_ENG_ACT, w);
}

/* the ops of pass `pass` (-1: all) on one group */
static void emit_ops(nx_lower *L, const nx_ldepi *e, nx_engine eng, const nx_ap *val, nx_ap dst, int64_t scratch,
                     int64_t w, bool pre, int pass, const nx_ap *carry)
{
	int nin = 1 + e->nrow + e->nstr;
	int64_t slot = nx_l_al64(w * nx_dtype_bytes[e->dt]);
	nx_ap v[1 + 2 * NX_LEPI_IN + NX_LEPI_OPS];
	for (int k = 0; k < nin; k++)
		v[k] = val[k];
	for (int k = 0; k < e->nop; k++) {
		const nx_ldepi_op *op = &e->op[k];
		if (pre && op->act) {
			v[nin + k] = val[nin + k]; /* ACT computed it before */
			continue;
		}
		if (op->evac) {
			v[nin + k] = v[0]; /* ACT's evacuation */
			continue;
		}
		if (op->fold)
			continue; /* the scale of the mid op that alone reads it */
		if (pass >= 0 && (op->mid || op->lvl != pass)) {
			if (op->cslot >= 0) /* another pass's (or ACT's) value in its step slot */
				v[nin + k] = carry[op->cslot];
			continue;
		}
		nx_ap o = dst;
		if (carry && op->cslot >= 0) {
			o = carry[op->cslot];
		} else if (k < e->nop - 1) {
			/* a scratch slot of the group's shape, the same every iteration */
			o.offset = scratch + k * slot;
			memset(o.loop_stride, 0, sizeof o.loop_stride);
		}
		nx_insn *in = nx_l_emit(L, eng, op->m.op);
		in->func = (uint8_t)op->m.func;
		in->flags = (uint16_t)op->m.flags;
		in->fimm[0] = op->m.imm;
		in->ap[0] = o;
		for (int j = 0; j < op->nops; j++)
			in->ap[1 + j] = v[op->src[j]];
		v[nin + k] = o;
	}
}

void nx_l_epi_emit(nx_lower *L, const nx_ldepi *e, nx_engine eng, const nx_ap *val, nx_ap dst, int64_t scratch,
                   int64_t w, bool pre)
{
	emit_ops(L, e, eng, val, dst, scratch, w, pre, -1, NULL);
}

void nx_l_epi_emit_pass(nx_lower *L, const nx_ldepi *e, nx_engine eng, const nx_ap *val, nx_ap dst, int64_t scratch,
                        int64_t w, int pass, const nx_ap *carry)
{
	emit_ops(L, e, eng, val, dst, scratch, w, false, pass, carry);
}

/* op on ACT: its function, or x * x as the square function */
static nx_insn *act_op(nx_lower *L, const nx_ldepi_op *op)
{
	nx_insn *in;
	if (op->m.op == NX_I_TENSOR_TENSOR) { /* x * x */
		in = nx_l_emit(L, NX_ENG_ACT, NX_I_ACTIVATE);
		in->func = NX_ACT_SQUARE;
		in->fimm[0] = 1.0f;
	} else {
		in = nx_l_emit(L, NX_ENG_ACT, op->m.op);
		in->func = (uint8_t)op->m.func;
		in->flags = (uint16_t)op->m.flags;
		in->fimm[0] = op->m.imm;
	}
	return in;
}

void nx_l_epi_emit_mid(nx_lower *L, const nx_ldepi *e, const nx_ap *carry, nx_ap dst)
{
	int o0 = NX_LEPI_OP(e, 0);
	for (int k = 0; k < e->nop; k++) {
		const nx_ldepi_op *op = &e->op[k];
		if (!op->mid)
			continue;
		nx_insn *in = act_op(L, op);
		in->ap[0] = op->cslot >= 0 ? carry[op->cslot] : dst;
		in->ap[1] = carry[e->op[op->src[0] - o0].cslot];
	}
}

void nx_l_epi_emit_act(nx_lower *L, const nx_ldepi *e, const nx_ap *val, const nx_ap *pre)
{
	int nin = 1 + e->nrow + e->nstr;
	nx_ap v[1 + 2 * NX_LEPI_IN + NX_LEPI_OPS];
	for (int k = 0; k < nin; k++)
		v[k] = val[k];
	for (int k = 0; k < e->nop; k++) {
		const nx_ldepi_op *op = &e->op[k];
		if (!op->act)
			continue;
		nx_ap o = op->pbuf >= 0 ? pre[op->pbuf] : val[NX_LEPI_STR(e, -op->pbuf - 1)];
		nx_insn *in = act_op(L, op);
		in->ap[0] = o;
		in->ap[1] = v[op->src[0]];
		v[nin + k] = o;
	}
}

/* the plan line after the ops and their engine (dot_loop.c) */
static void describe(nx_ldepi *e)
{
	int n = 0;
	if (e->evac_func >= 0)
		n = snprintf(e->desc, sizeof e->desc, ", evacuated as %s(x * %g) on act", nx_act_names[e->evac_func],
		             (double)e->evac_scale);
	n += snprintf(e->desc + n, sizeof e->desc - (size_t)n, ", %d bias row%s resident, %d streamed input%s", e->nrow,
	              e->nrow == 1 ? "" : "s", e->nstr, e->nstr == 1 ? "" : "s");
	if (e->nxo)
		snprintf(e->desc + n, sizeof e->desc - (size_t)n, "; stores the dot's value and %d more", e->nxo);
}

/* A multi-output epilogue the dot did not apply: region r (the dot's value
 * a parameter) without the dot's output, as the multi-output fused loop
 * after the dot (which wrote dv) */
static nx_status multi_after(nx_lower *L, const nx_inst *f, const nx_inst *r, const nx_ldepi *e,
                             nx_lval *const *ops, nx_lval *dv, nx_lval *out)
{
	nx_arena *a = &L->a;
	const nx_comp *rb = r->called[0];
	const nx_inst *rt = rb->root;
	nx_inst *t = nx_arena_alloc(a, sizeof *t);
	*t = *rt;
	t->noperands = e->nxo;
	t->operands = nx_arena_alloc(a, sizeof *t->operands * (size_t)e->nxo);
	nx_shape **shp = nx_arena_alloc(a, sizeof *shp * (size_t)e->nxo);
	nx_lval *v = nx_arena_alloc(a, sizeof *v);
	memset(v, 0, sizeof *v);
	v->ntuple = e->nxo;
	v->tuple = nx_arena_alloc(a, sizeof(nx_lval *) * (size_t)(e->nxo + 1));
	for (int j = 0, n = 0; j < rt->noperands; j++)
		if (j != e->dout) {
			t->operands[n] = rt->operands[j];
			shp[n] = rt->operands[j]->shape;
			v->tuple[n++] = out->tuple[j];
		}
	t->shape = nx_shape_tuple(a, e->nxo, shp);
	v->shape = t->shape;
	nx_comp *c = nx_arena_alloc(a, sizeof *c);
	*c = *rb;
	c->insts = nx_arena_alloc(a, sizeof *c->insts * (size_t)(rb->ninsts + 1));
	for (int k = 0; k < rb->ninsts; k++)
		c->insts[k] = rb->insts[k] == rt ? t : rb->insts[k];
	c->root = t;
	nx_inst *r2 = nx_arena_alloc(a, sizeof *r2);
	*r2 = *r;
	r2->shape = t->shape;
	r2->called = nx_arena_alloc(a, sizeof *r2->called);
	r2->called[0] = c;
	if (!nx_l_fused_loop_ok(L, r2))
		return nx_l_err(L, "dot epilogue: no kernel takes the outputs after the dot");
	nx_lval **rops = nx_arena_alloc(a, sizeof *rops * (size_t)(r2->noperands + 1));
	for (int q = 0; q < r2->noperands; q++) {
		rops[q] = dv;
		for (int k = 0; k < f->noperands; k++)
			if (f->operands[k] == r2->operands[q])
				rops[q] = ops[k];
	}
	nx_l_plan(L, "epilogue", "none (not in the dot kernel's plan); the outputs follow");
	return nx_l_fused_loop(L, r2, rops, v);
}

nx_status nx_l_dot_epi_fusion(nx_lower *L, const nx_inst *f, nx_lval *const *ops, nx_lval *out)
{
	const nx_inst *d;
	nx_ldepi e;
	if (!nx_l_dot_epi_ok(L, f, &d, &e))
		return nx_l_err(L, "fusion is no dot with an epilogue");
	for (int k = 0; k < e.nrow; k++)
		e.row[k] = ops[(intptr_t)e.row[k] - 1];
	for (int k = 0; k < e.nstr; k++)
		e.str[k] = ops[(intptr_t)e.str[k] - 1];
	describe(&e);
	const nx_comp *b = f->called[0];
	nx_lval *dops[2];
	for (int j = 0; j < 2; j++)
		dops[j] = ops[param_no(b, d->operands[j])];
	/* the dot writes the output buffer (its shape): the result, or its raw
	 * value that the region then updates in place */
	nx_lval dv = e.nxo ? *out->tuple[e.dout] : *out;
	dv.shape = d->shape;
	for (int j = 0; j < e.nxo; j++)
		e.xout[j] = out->tuple[e.xo_tup[j]];
	L->epi = &e;
	bool done = false;
	nx_status rc = nx_l_data(L, d, dops, &dv, &done);
	L->epi = NULL;
	if (rc)
		return rc;
	if (!done)
		rc = nx_l_dot(L, d, dops, &dv);
	if (rc || e.used)
		return rc;
	const nx_inst *r = nx_l_dot_epi_region(L, f);
	if (r && e.nxo)
		return multi_after(L, f, r, &e, ops, &dv, out);
	if (!r || !nx_l_fusion_whole(L, r))
		return nx_l_err(L, "dot epilogue: no kernel takes the region after the dot");
	nx_lval **rops = nx_arena_alloc(&L->a, sizeof *rops * (size_t)(r->noperands + 1));
	for (int q = 0; q < r->noperands; q++) {
		rops[q] = &dv;
		for (int k = 0; k < f->noperands; k++)
			if (f->operands[k] == r->operands[q])
				rops[q] = ops[k];
	}
	nx_l_plan(L, "epilogue", "none (not in the dot kernel's plan); the region follows in place");
	return nx_l_fused(L, r, rops, out);
}
