/* backend/kernels/row_body.c — the row kernel's body (row_loop.h): which
 * fusions it takes (nx_rw_build: rows, per-row statistics, columns,
 * scalars; reductions over the trailing axes, the row ops around them),
 * the SBUF slots of a buffer set (nx_rw_layout: rows share slots by
 * liveness), the engine of each op by estimated busy time (nx_rw_assign)
 * and one tile's instructions (nx_rw_emit_op). Instructions:
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
 * busy time. Consecutive instructions on one engine form a stage.
 * docs/lowering.md, "Row kernels". */
#include "backend/kernels/row_loop.h"
#include "ir/eval/eval.h"

#include <math.h>
#include <string.h>

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

/* the scalar behind value k (a broadcast one-element input or constant,
 * or one itself), -1 none */
static int scal(const rk *x, int k)
{
	k = res(x, k);
	if (x->v[k].kind == V_SBC)
		k = x->v[k].a;
	return x->v[k].kind == V_SCIN || x->v[k].kind == V_CONST ? k : -1;
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

/* a reduction over the leading dims of its operand: R rows of C */
static bool col_reduce(const nx_inst *i, int64_t *R, int64_t *C)
{
	if (i->op != NX_OP_REDUCE || i->noperands != 2)
		return false;
	const nx_shape *s = i->operands[0]->shape;
	int nd = i->a.dimensions.n;
	if (nd < 1 || nd >= s->rank)
		return false;
	for (int j = 0; j < nd; j++)
		if (i->a.dimensions.v[j] != j)
			return false;
	int64_t r0 = 1, c0 = 1;
	for (int j = 0; j < s->rank; j++)
		*(j < nd ? &r0 : &c0) *= s->dims[j];
	*R = r0, *C = c0;
	return true;
}

/* classify the body and derive the instruction list */
bool nx_rw_build(rk *x, const nx_lower *L, const nx_inst *f)
{
	/* the checks that need no state come before clearing x (~80 KB,
	 * asked of every fusion) */
	if (f->op != NX_OP_FUSION || f->ncalled != 1)
		return false;
	const nx_comp *b = f->called[0];
	const nx_inst *root = b->root;
	if (!root || b->ninsts > RW_MAX)
		return false;
	bool tup = root->op == NX_OP_TUPLE;
	/* the row space: the first reduction over trailing dims */
	int64_t R = 0, C = 0;
	for (int k = 0; k < b->ninsts && !R; k++) {
		const nx_inst *i = b->insts[k];
		int64_t cr, cc;
		if (i->op != NX_OP_REDUCE || i->noperands != 2 ||
		    (col_reduce(i, &cr, &cc) && nx_shape_elems(i->shape) == cc && cr > 1))
			continue; /* (a column sum: its rows are the row space's) */
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
		R = r0, C = c0;
	}
	/* no reduction: the row space of the first per-row value broadcast
	 * along the trailing dims (x - max, a long row's log-softmax) */
	bool has_red = R > 0;
	for (int k = 0; k < b->ninsts && !R; k++) {
		const nx_inst *i = b->insts[k];
		if (i->op != NX_OP_BROADCAST || i->a.dimensions.n < 1 || !trailing_bcast(i, true))
			continue;
		int64_t r0 = nx_shape_elems(i->operands[0]->shape);
		R = r0, C = r0 > 0 ? nx_shape_elems(i->shape) / r0 : 0;
	}
	if (R < 1 || C < 2 || C > ((int64_t)1 << 24))
		return false;
	memset(x, 0, sizeof *x);
	x->R = R, x->C = C;
	x->Cf = x->cl = x->w = C;
	x->nc = 1;
	for (int k = 0; k < b->ninsts; k++) {
		const nx_inst *i = b->insts[k];
		if (i == root && tup)
			continue;
		if (!nx_shape_is_array(i->shape) || nx_lower_dtype(i->shape->type) < 0 || i->shape->type == NX_S64 ||
		    i->shape->type == NX_U64)
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
			} else if (is_stat(x, s) && R > 1 && e == R && nx_shape_elems(i->operands[0]->shape) == 1) {
				v->kind = V_ALIAS, v->a = s; /* a computed scalar: a statistic already */
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
			int64_t cr, cc;
			if (i->op == NX_OP_REDUCE && col_reduce(i, &cr, &cc) && cr == R && cc == C && e == C && R > 1) {
				/* a sum over the rows: PE, into PSUM (nx_rw_emit_op) */
				int a = res(x, ops[0]), in = res(x, ops[1]);
				nx_dtype adt = x->v[a].dt;
				if (!is_row(x, a) || x->v[in].kind != V_CONST || nx_l_reduce_alu(i) != NX_ALU_ADD ||
				    (adt != NX_DT_F32 && adt != NX_DT_BF16 && adt != NX_DT_F16) ||
				    (v->dt != NX_DT_F32 && v->dt != NX_DT_BF16 && v->dt != NX_DT_F16) || x->ncs == RW_IO)
					return false;
				v->kind = V_CSUM;
				v->pc = (int)(x->ncs * ((C + 127) / 128));
				x->cs[x->ncs++] = vi;
				rop *o = newop(x, O_CSUM, vi);
				o->o[0] = a, o->no = 1, o->alu = NX_ALU_ADD;
				o->init = x->v[in].imm;
				break;
			}
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
			if (i->op == NX_OP_IOTA) {
				/* the column number along a row of the last dim alone */
				int rk1 = i->shape->rank - 1;
				if (e != R * C || R * C == R || rk1 < 1 || i->a.iota_dimension != rk1 || i->shape->dims[rk1] != C)
					return false;
				v->kind = V_ROW;
				newop(x, O_IOTA, vi);
				break;
			}
			nx_lemap m;
			if (nx_l_family(i->op) != NX_LK_ELEMENTWISE || !nx_l_elem_map(i, &m) || i->noperands < 1)
				return false;
			/* a one-element value computed from one-element inputs: a
			 * statistic (every row the same) */
			if (e != R * C && e != R && !(e == 1 && R > 1))
				return false;
			bool row = e == R * C && R * C != R;
			v->kind = row ? V_ROW : V_STAT;
			int no = i->noperands, nsc = 0, nrb = 0, sci = -1, rbi = -1;
			for (int j = 0; j < no; j++) {
				int s = res(x, ops[j]);
				int sk = x->v[s].kind;
				if (sk == V_SBC || sk == V_SCIN || sk == V_CONST)
					nsc++, sci = j;
				else if (sk == V_RB)
					nrb++, rbi = j;
				else if (row ? !(is_row(x, s) || sk == V_CB) : !is_stat(x, s))
					return false;
				if (nx_lower_dtype(i->operands[j]->shape->type) < 0)
					return false;
			}
			rop *o;
			/* (a compare with a per-row value too: the one-hot of labels,
			 * a tensor_scalar rather than a two-input op on the shared port) */
			if (nsc + nrb == 1 && no == 2 && m.op == NX_I_TENSOR_TENSOR &&
			    (nx_type_is_float(i->shape->type) || (i->op == NX_OP_COMPARE && nrb == 1))) {
				int j = nsc ? sci : rbi, other = 1 - j;
				int s = res(x, ops[j]);
				o = newop(x, nsc ? O_TSC : O_ROWSC, vi);
				o->o[0] = res(x, ops[other]), o->no = 1;
				o->alu = m.func, o->rev = j == 0, o->m = m;
				int src = nsc ? scal(x, s) : x->v[s].a; /* the scalar; RB: the statistic */
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
					bool t_out = false; /* an output keeps its value */
					for (int r = 0; tup && r < root->noperands; r++)
						t_out |= root->operands[r] == x->v[t].i;
					if (tp && tp->kind == O_ROWSC && x->v[t].users == 1 && !tp->rev && !t_out && root != x->v[t].i &&
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
			} else if (m.op == NX_I_SELECT && no == 3 && scal(x, ops[1]) >= 0 && scal(x, ops[2]) >= 0 &&
			           x->v[scal(x, ops[1])].kind == V_CONST && x->v[scal(x, ops[2])].kind == V_CONST &&
			           x->v[scal(x, ops[2])].imm == 0.0f && x->v[scal(x, ops[1])].imm > 0.0f &&
			           isfinite(x->v[scal(x, ops[1])].imm) && nx_type_is_float(i->shape->type) &&
			           (is_row(x, ops[0]) || is_stat(x, ops[0]))) {
				/* select(p, c, 0) with c > 0: p * c (exact, +0 where p is
				 * false), a tensor_scalar ACT or DVE can run rather than a
				 * select on the shared port (bert_dp_graph_4's loss pick:
				 * 2.18 -> 1.89 ms) */
				o = newop(x, O_TSC, vi);
				o->o[0] = res(x, ops[0]), o->no = 1;
				o->alu = NX_ALU_MUL, o->imm = x->v[scal(x, ops[1])].imm;
				o->m.op = NX_I_TENSOR_SCALAR, o->m.func = NX_ALU_MUL;
			} else {
				/* select, compare and the rest: one instruction, per-row values
				 * and scalars read with stride 0 (a constant from a [128, 1]
				 * column set once) */
				o = newop(x, O_FULL, vi);
				o->m = m, o->no = no;
				for (int j = 0; j < no; j++) {
					o->o[j] = res(x, ops[j]);
					int c = scal(x, o->o[j]);
					if (c >= 0 && x->v[c].kind == V_CONST)
						x->v[c].mem = true;
				}
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
	int nres = tup ? root->noperands : 1, ncs = 0;
	if (nres > RW_IO)
		return false;
	x->nout = 0;
	for (int k = 0; k < nres; k++) {
		int o = find(x, tup ? root->operands[k] : root);
		if (o < 0)
			return false;
		o = res(x, o);
		if (x->v[o].kind == V_CSUM) { /* stored once, after the tiles */
			if (x->v[o].out)
				return false;
			x->v[o].out = true;
			ncs++;
			continue;
		}
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
		if ((x->v[o].kind != V_ROW && x->v[o].kind != V_STAT) || !(nx_shape_elems(x->v[o].i->shape) == R * C ||
		                                                          nx_shape_elems(x->v[o].i->shape) == R))
			return false;
		/* an output whose value became the bias of an activate is not kept */
		for (int q = 0; q < x->nop; q++)
			if (x->op[q].v == o && x->op[q].kind == O_NEG)
				return false;
		x->otup[x->nout] = k;
		x->outs[x->nout++] = o;
		x->v[o].out = true;
	}
	/* column sums: each an output (in the order of the body), read by no
	 * op, within a PSUM half (2048 columns of f32); their ops last (PE,
	 * the tile's last stage) */
	if (ncs != x->ncs || (x->ncs && (x->nout < 1 || x->ncs * ((C + 127) / 128) > 2048)))
		return false;
	for (int c = 0; c < x->ncs; c++) {
		if (!x->v[x->cs[c]].out || x->v[x->cs[c]].users)
			return false;
		for (int k = 0; k < nres; k++) /* the result position of cs[c] */
			if (res(x, find(x, tup ? root->operands[k] : root)) == x->cs[c])
				x->cstup[c] = k;
	}
	if (x->ncs) {
		rop tmp[RW_MAX * 2];
		int n = 0;
		for (int pass = 0; pass < 2; pass++)
			for (int q = 0; q < x->nop; q++)
				if ((x->op[q].kind == O_CSUM) == (pass == 1))
					tmp[n++] = x->op[q];
		memcpy(x->op, tmp, sizeof(rop) * (size_t)n);
		if (x->nop == x->ncs)
			return false;
	}
	for (int k = 0; k < x->nv; k++)
		if ((x->v[k].kind == V_ROWIN || x->v[k].kind == V_STATIN) && x->v[k].users > 0) {
			if (x->nld == RW_IO)
				return false;
			x->ld[x->nld++] = k;
		}
	/* a lone reduction is the reduce kernels' (lower_ops.c, stream.c)
	 * unless its rows need chunks (nx_l_row_ok) */
	x->lone = has_red && x->nop == 1;
	if (x->nop < 1)
		return false;
	/* drop ops whose value nobody reads (the activate took it over) */
	int n = 0;
	for (int q = 0; q < x->nop; q++)
		if (x->op[q].kind >= 0)
			x->op[n++] = x->op[q];
	x->nop = n;
	if (x->nld < 1 || x->nop < 1)
		return false;
	/* chunks of a long row: no columns; a reduction's result (a
	 * partial until the row's last chunk) read by no op */
	x->chunkable = x->ncs == 0;
	for (int k = 0; k < x->nv; k++)
		if ((x->v[k].kind == V_COLIN || x->v[k].kind == V_COL || x->v[k].kind == V_CB) && x->v[k].users > 0)
			x->chunkable = false;
	for (int q = 0; q < x->nop; q++) {
		const rop *o = &x->op[q];
		int red = o->kind == O_RED ? o->v : o->kind == O_ACTROW ? o->acc : -1;
		if (red < 0)
			continue;
		for (int p = 0; p < x->nop; p++) {
			const rop *r = &x->op[p];
			for (int j = 0; j < r->no; j++)
				if (res(x, r->o[j]) == red || (x->v[r->o[j]].kind == V_RB && res(x, x->v[r->o[j]].a) == red))
					x->chunkable = false;
			if (r->sc >= 0 && res(x, r->sc) == red)
				x->chunkable = false;
		}
	}
	(void)L;
	return true;
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
int64_t nx_rw_layout(rk *x, int64_t kt, int64_t *cols)
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
			v->off = set, set += nx_l_al64(kt * x->C * esz), v->slot = true;
		} else if (v->kind == V_STATIN || v->kind == V_STAT) {
			v->off = set, set += nx_l_al64(kt * esz), v->slot = true;
		} else if (v->kind == V_COLIN || v->kind == V_COL) {
			v->off = c, c += nx_l_al64(x->C * esz);
		} else if (v->kind == V_SCIN || (v->kind == V_CONST && v->mem)) {
			v->off = c, c += 64;
		} else if (v->kind == V_CSUM) {
			/* the sums [128, ct] (ct: columns / 128), a ones column, a zero row */
			v->off = c, c += nx_l_al64((x->C + 127) / 128 * esz) + 64 + 512;
		}
	}
	for (int q = 0; q <= x->nop; q++) {
		for (int k = 0; k < x->nv; k++) {
			rv *v = &x->v[k];
			if ((v->kind == V_ROWIN || v->kind == V_ROW) && v->slot && !gone[k] && lu[k] <= q) {
				gone[k] = true;
				fin[nf] = vin[k];
				fo[nf] = v->off, fs[nf] = nx_l_al64(kt * x->C * nx_dtype_bytes[v->dt]), nf++;
			}
		}
		for (int k = 0; k < x->nv; k++) {
			rv *v = &x->v[k];
			if (v->kind != V_ROW || v->slot || (q < x->nop && x->op[q].v != k))
				continue;
			int64_t sz = nx_l_al64(kt * x->C * nx_dtype_bytes[v->dt]);
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

double nx_rw_op_cycles(const rk *x, const rop *o, int *only)
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
	case O_IOTA:
		*only = 2;
		return kt * ((C > 64 ? C : 64) + 60);
	case O_CSUM: /* PE: a matmul per 128 columns of a row, f32 at a quarter rate */
		*only = 3;
		return kt * (double)((x->C + 127) / 128) * 64.0 * (x->v[o->o[0]].dt == NX_DT_F32 ? 4.0 : 1.0);
	case O_ROWSC:
	case O_TSC:
		/* ACT takes the scalar operand as a per-partition column only,
		 * and arithmetic only (compares: DVE) */
		*only = (o->sc >= 0 || o->kind == O_TSC) && nx_alu_kinds[o->alu] == 'a' ? 0 : 2;
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
 * ends up less busy; DVE/POOL ops to the less busy of the two, or to
 * POOL where the two share the SBUF port (port_pool) */
void nx_rw_assign(rk *x)
{
	double load[NX_ENG_COUNT] = {0}, rest_act = 0, rest_port = 0;
	bool share = port_pool(x, x->kt);
	for (int q = 0; q < x->nop; q++) {
		int only;
		double c = nx_rw_op_cycles(x, &x->op[q], &only);
		rest_act += only == 1 ? c / clk_act : 0;
		rest_port += only == 2 ? c / clk_port(x, x->kt) : 0;
	}
	for (int q = 0; q < x->nop; q++) {
		rop *o = &x->op[q];
		int only;
		double c = nx_rw_op_cycles(x, o, &only);
		if (only == 3) {
			o->e = NX_ENG_PE;
			continue;
		}
		if (only == 1) {
			o->e = NX_ENG_ACT;
			rest_act -= c / clk_act;
		} else if (only == 2) {
			rest_port -= c / clk_port(x, x->kt);
			bool pool_ok = o->kind == O_RED || o->kind == O_IOTA ||
			               (o->kind == O_FULL && o->m.op == NX_I_TENSOR_TENSOR && nx_alu_kinds[o->m.func] == 'a');
			/* POOL all it can run where it shares the port (port_pool) */
			if (share)
				o->e = o->kind == O_FULL && !(nx_isa_table[o->m.op].engines & NX_EM_POOL) ? NX_ENG_DVE : NX_ENG_POOL;
			else
				o->e = pool_ok && load[NX_ENG_POOL] < load[NX_ENG_DVE] ? NX_ENG_POOL : NX_ENG_DVE;
		} else {
			double a = load[NX_ENG_ACT] + rest_act + c / clk_act;
			double d = load[NX_ENG_DVE] + load[NX_ENG_POOL] + rest_port + c / clk_port(x, x->kt);
			o->e = a <= d ? NX_ENG_ACT : share ? NX_ENG_POOL : NX_ENG_DVE; /* (ties: ACT, its own port) */
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
	/* stores follow the last stage but PE's (column sums) */
	x->sst = x->nstage - 1;
	if (x->ncs && x->nstage > 1 && x->seng[x->nstage - 1] == NX_ENG_PE)
		x->sst = x->nstage - 2;
}

bool nx_rw_set_chunks(rk *x, int nc)
{
	int64_t cw = (x->Cf + nc - 1) / nc;
	if (nc < 1 || nc > RW_NC || (nc > 1 && (!x->chunkable || x->Cf - (nc - 1) * cw < 1)))
		return false;
	x->nc = nc;
	x->C = x->w = cw;
	x->cl = x->Cf - (nc - 1) * cw;
	return true;
}

int nx_rw_chunks_min(rk *x, int64_t half)
{
	for (int nc = 1; nc <= RW_NC; nc++) {
		if (!nx_rw_set_chunks(x, nc))
			continue;
		int64_t cols;
		int64_t set = nx_rw_layout(x, 1, &cols);
		if (2 * set + cols + 64 * x->nv <= half)
			return nc;
	}
	nx_rw_set_chunks(x, 1);
	return 0;
}

bool nx_l_row_ok(const nx_lower *L, const nx_inst *f)
{
	rk x;
	if (!nx_rw_build(&x, L, f))
		return false;
	/* a lone reduction over long rows: the reduce kernels take two passes
	 * at 8 queues (bert_dp_graph_4's max over rows of 30522 f32: 2.11 ms
	 * against 1.03 here) */
	int nc = nx_rw_chunks_min(&x, L->sbuf_half);
	return nc > 1 || (nc == 1 && !x.lone);
}

/* value k in buffer set b: rows [np, kt, C] (j >= 0: row j, [np, C]),
 * statistics [np, kt] (j >= 0: [np, 1]); a statistic read as a row with
 * stride 0 over C (as_row) */
nx_ap nx_rw_vap(const rk *x, int k, int64_t np, int64_t kt, int b, int j, bool as_row)
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
			st[0] = 1, c[0] = (uint32_t)x->w;
			return nx_ap_sbuf(v->dt, 0, (int)np, off + j * x->C * esz, 1, st, c);
		}
		st[0] = (int32_t)x->C, st[1] = 1, c[0] = (uint32_t)kt, c[1] = (uint32_t)x->w;
		return nx_ap_sbuf(v->dt, 0, (int)np, off, 2, st, c);
	}
	if (j >= 0) {
		st[0] = 1, c[0] = 1;
		return nx_ap_sbuf(v->dt, 0, (int)np, off + j * esz, 1, st, c);
	}
	if (as_row) {
		st[0] = 1, st[1] = 0, c[0] = (uint32_t)kt, c[1] = (uint32_t)x->w;
		return nx_ap_sbuf(v->dt, 0, (int)np, off, 2, st, c);
	}
	st[0] = 1, c[0] = (uint32_t)kt;
	return nx_ap_sbuf(v->dt, 0, (int)np, off, 1, st, c);
}

/* long rows: a reduction's partial of this chunk combined with the one of
 * the chunk before (the tile before, in set x->pset; same engine, so in
 * order) */
static void carry(rk *x, nx_engine e, int k, int alu, int64_t np, int64_t kt, int b)
{
	if (x->nc < 2 || x->chunk == 0)
		return;
	if (e == NX_ENG_ACT) { /* a sum: identity with the partial before as the bias */
		NX_ASSERT(alu == NX_ALU_ADD);
		for (int j = 0; j < kt; j++) {
			nx_insn *in = nx_l_emit(x->L, NX_ENG_ACT, NX_I_ACTIVATE);
			in->func = NX_ACT_IDENTITY;
			in->fimm[0] = 1.0f;
			in->ap[0] = nx_rw_vap(x, k, np, kt, b, j, false);
			in->ap[1] = nx_rw_vap(x, k, np, kt, b, j, false);
			in->ap[2] = nx_rw_vap(x, k, np, kt, x->pset, j, false);
		}
		return;
	}
	nx_insn *in = nx_l_emit(x->L, e, NX_I_TENSOR_TENSOR);
	in->func = (uint8_t)alu;
	in->ap[0] = nx_rw_vap(x, k, np, kt, b, -1, false);
	in->ap[1] = nx_rw_vap(x, k, np, kt, b, -1, false);
	in->ap[2] = nx_rw_vap(x, k, np, kt, x->pset, -1, false);
}

void nx_rw_emit_op(rk *x, const rop *o, int64_t np, int64_t kt, int b)
{
	nx_lower *L = x->L;
	bool row = x->v[o->v].kind == V_ROW;
	switch (o->kind) {
	case O_FULL: {
		nx_insn *in = nx_l_emit(L, o->e, o->m.op);
		in->func = (uint8_t)o->m.func;
		in->flags = (uint16_t)o->m.flags;
		in->fimm[0] = o->m.imm;
		in->ap[0] = nx_rw_vap(x, o->v, np, kt, b, -1, false);
		for (int j = 0; j < o->no; j++) {
			int s = o->o[j];
			int sk = x->v[s].kind, c = scal(x, s);
			if (c >= 0) { /* a scalar with stride 0 over the tile */
				int32_t st[2] = {0, 0};
				uint32_t cn[2] = {(uint32_t)kt, (uint32_t)x->w};
				in->ap[1 + j] = nx_ap_sbuf(x->v[c].dt, 0, (int)np, x->v[c].off, row ? 2 : 1, st, cn);
			} else if (sk == V_RB)
				in->ap[1 + j] = nx_rw_vap(x, x->v[s].a, np, kt, b, -1, true);
			else if (sk == V_CB)
				in->ap[1 + j] = nx_rw_vap(x, x->v[s].a, np, kt, b, -1, false);
			else
				in->ap[1 + j] = nx_rw_vap(x, s, np, kt, b, -1, row && (sk == V_STAT || sk == V_STATIN));
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
			in->ap[0] = nx_rw_vap(x, o->v, np, kt, b, jj, false);
			int s = o->o[0];
			in->ap[1] = x->v[s].kind == V_CB ? nx_rw_vap(x, x->v[s].a, np, kt, b, jj, false) : nx_rw_vap(x, s, np, kt, b, jj, false);
			if (o->sc >= 0)
				in->ap[2] = nx_rw_vap(x, o->sc, np, kt, b, o->kind == O_ROWSC ? j : 0, false);
		}
		return;
	}
	case O_NEG: {
		/* t = statistic * imm (-1: the bias of f(x - s)) */
		nx_insn *in = nx_l_emit(L, o->e, NX_I_TENSOR_SCALAR);
		in->func = NX_ALU_MUL;
		in->fimm[0] = o->imm == 1.0f ? 1.0f : -1.0f;
		in->ap[0] = nx_rw_vap(x, o->v, np, kt, b, -1, false);
		in->ap[1] = nx_rw_vap(x, o->sc, np, kt, b, -1, false);
		return;
	}
	case O_RED: {
		if (o->e == NX_ENG_ACT) {
			nx_insn *z = nx_l_emit(L, NX_ENG_ACT, NX_I_MEMSET);
			z->fimm[0] = 0.0f;
			z->ap[0] = nx_rw_vap(x, o->v, np, kt, b, -1, false);
			for (int j = 0; j < kt; j++) {
				nx_insn *in = nx_l_emit(L, NX_ENG_ACT, NX_I_ACTIVATE);
				in->func = NX_ACT_IDENTITY;
				in->fimm[0] = 1.0f;
				in->ap[0] = nx_rw_vap(x, o->o[0], np, kt, b, j, false);
				in->ap[1] = nx_rw_vap(x, o->o[0], np, kt, b, j, false);
				in->ap[3] = nx_rw_vap(x, o->v, np, kt, b, j, false);
			}
			carry(x, NX_ENG_ACT, o->v, NX_ALU_ADD, np, kt, b);
			return;
		}
		nx_insn *in = nx_l_emit(L, o->e, NX_I_TENSOR_REDUCE);
		in->func = (uint8_t)o->alu;
		in->iarg[0] = 1;
		in->ap[0] = nx_rw_vap(x, o->v, np, kt, b, -1, false);
		in->ap[1] = nx_rw_vap(x, o->o[0], np, kt, b, -1, false);
		carry(x, o->e, o->v, o->alu, np, kt, b);
		if (o->combine && x->chunk == 0) { /* the init once (chunk 0 of a long row) */
			nx_insn *c = nx_l_emit(L, o->e, NX_I_TENSOR_SCALAR);
			c->func = (uint8_t)o->alu;
			c->fimm[0] = o->init;
			c->ap[0] = nx_rw_vap(x, o->v, np, kt, b, -1, false);
			c->ap[1] = nx_rw_vap(x, o->v, np, kt, b, -1, false);
		}
		return;
	}
	case O_IOTA: /* the column number, per row (chunk's columns: from its first) */
		for (int j = 0; j < kt; j++) {
			nx_insn *in = nx_l_emit(L, o->e, NX_I_IOTA);
			in->iarg[0] = (int32_t)(x->chunk * x->C);
			in->iarg[1] = 0;
			in->iarg[2] = 1;
			in->ap[0] = nx_rw_vap(x, o->v, np, kt, b, j, false);
		}
		return;
	case O_CSUM: {
		/* psum[c, 0] += rows[p, c]^T . ones[p] per 128 columns c of each
		 * of the kt rows (stationary: the rows' columns) */
		const rv *cv = &x->v[o->v];
		int a = o->o[0];
		nx_dtype dt = x->v[a].dt;
		int64_t esz = nx_dtype_bytes[dt], CT = (x->C + 127) / 128;
		int64_t ones = cv->off + nx_l_al64(CT * nx_dtype_bytes[cv->dt]);
		for (int64_t j = 0; j < kt; j++)
			nx_l_colsum_mm(L, dt, np, x->v[a].off + b * x->bufb + j * x->C * esz, x->C, ones,
			               x->pbase + cv->pc * 4, 0);
		return;
	}
	case O_ACTROW: {
		if (o->acc >= 0) {
			nx_insn *z = nx_l_emit(L, NX_ENG_ACT, NX_I_MEMSET);
			z->fimm[0] = 0.0f;
			z->ap[0] = nx_rw_vap(x, o->acc, np, kt, b, -1, false);
		}
		for (int j = 0; j < kt; j++) {
			nx_insn *in = nx_l_emit(L, NX_ENG_ACT, NX_I_ACTIVATE);
			in->func = (uint8_t)o->m.func;
			in->fimm[0] = o->m.imm;
			in->ap[0] = nx_rw_vap(x, o->v, np, kt, b, j, false);
			in->ap[1] = nx_rw_vap(x, o->o[0], np, kt, b, j, false);
			if (o->sc >= 0)
				in->ap[2] = nx_rw_vap(x, o->sc, np, kt, b, j, false);
			if (o->acc >= 0)
				in->ap[3] = nx_rw_vap(x, o->acc, np, kt, b, j, false);
		}
		if (o->acc >= 0)
			carry(x, NX_ENG_ACT, o->acc, NX_ALU_ADD, np, kt, b);
		return;
	}
	default:
		NX_ASSERT(0);
	}
}

