/* backend/lower_math.c — elementwise ops that take several engine
 * instructions (floor, ceil, the two roundings, clamp, float→int convert
 * with XLA's truncation), built on "row programs": a value viewed as
 * [O rows, R] with rows over partitions, a short list of DVE/ACT
 * instructions over whole SBUF tiles (a per-row slot read with stride 0
 * along R), all operands resident in one SBUF half; larger values run as
 * several programs over contiguous row ranges. */
#include "backend/lower_ext.h"

#include <math.h>
#include <string.h>

int nx_lp_add(nx_lprog *p, nx_engine e, nx_isa_op op, int func, int dst, int a, int b, float imm)
{
	NX_ASSERT(p->nsteps < NX_LP_MAXSTEP);
	nx_lpstep *s = &p->s[p->nsteps++];
	memset(s, 0, sizeof *s);
	s->e = e;
	s->op = op;
	s->func = func;
	s->dst = dst;
	s->a = a;
	s->b = b;
	s->c = -1;
	s->imm = imm;
	return p->nsteps - 1;
}

typedef struct slotinfo {
	nx_dtype dt;
	int64_t off;
	bool row;
} slotinfo;

/* tile of a slot as an operand of a step whose destination is full/row */
static nx_ap slot_ap(const slotinfo *s, int64_t base, int64_t P, int64_t T, int64_t R, bool dst_row)
{
	if (dst_row || !s->row || R == 1) {
		int32_t st[1] = {1};
		uint32_t c[1] = {(uint32_t)(s->row ? T : T * R)};
		return nx_ap_sbuf(s->dt, 0, (int)P, base + s->off, 1, st, c);
	}
	int32_t st[2] = {1, 0};
	uint32_t c[2] = {(uint32_t)T, (uint32_t)R};
	return nx_ap_sbuf(s->dt, 0, (int)P, base + s->off, 2, st, c);
}

static int64_t prog_bytes(const nx_lprog *p, nx_lval *const *in, const nx_lval *out, int64_t T, int64_t R,
                          slotinfo *si)
{
	int64_t b = 0;
	int ns = p->nin + 1 + p->nscratch;
	for (int k = 0; k < ns; k++) {
		slotinfo s;
		s.dt = k < p->nin ? in[k]->dt : k == p->nin ? out->dt : NX_DT_F32;
		s.row = p->row[k];
		s.off = b;
		b += nx_l_al64((s.row ? T : T * R) * nx_dtype_bytes[s.dt]);
		if (si)
			si[k] = s;
	}
	return b;
}

static nx_status run_one(nx_lower *L, const nx_lprog *p, nx_lval *const *in, nx_lval *out, int64_t O, int64_t R)
{
	int64_t P = nx_l_div_le(O, 128), T = O / P;
	slotinfo si[NX_LP_MAXSLOT];
	int64_t bytes = prog_bytes(p, in, out, T, R, si), base;
	int h;
	if (T * R > (1 << 24))
		return nx_l_err(L, "row program tile too large");
	nx_status rc = nx_l_sbuf_begin(L, bytes, &base, &h);
	if (rc)
		return rc;
	nx_l_plan_kernel(L, "row-program");
	int32_t s1[1] = {1};
	uint32_t cF[1] = {(uint32_t)(T * R)};
	nx_lsync loads, prev;
	memset(&loads, 0, sizeof loads);
	nx_l_wait(L, NX_ENG_SP, &L->sbuf_free[h]);
	for (int k = 0; k < p->nin; k++) {
		nx_l_wait(L, NX_ENG_SP, &in[k]->buf->written);
		/* a row input holds one value per row */
		uint32_t cT[1] = {(uint32_t)T};
		int64_t ps = p->row[k] ? T : T * R;
		nx_ap hb = nx_ap_hbm(in[k]->dt, in[k]->buf->off, (int)P, ps, 1, s1, p->row[k] ? cT : cF);
		nx_ap sb = nx_ap_sbuf(in[k]->dt, 0, (int)P, base + si[k].off, 1, s1, p->row[k] ? cT : cF);
		nx_lsync y = nx_l_dma(L, NX_ENG_SP, sb, hb);
		nx_l_max(&loads, &y);
	}
	for (int k = 0; k < p->nin; k++)
		nx_l_max(&in[k]->buf->war, &loads);
	prev = loads;
	nx_l_max(&prev, &L->sbuf_free[h]);
	for (int k = 0; k < p->nsteps;) {
		nx_engine e = p->s[k].e;
		nx_l_wait(L, e, &prev);
		for (; k < p->nsteps && p->s[k].e == e; k++) {
			const nx_lpstep *st = &p->s[k];
			bool drow = si[st->dst].row;
			nx_insn *in_ = nx_l_emit(L, e, st->op);
			in_->func = (uint8_t)st->func;
			in_->flags = st->flags;
			in_->fimm[0] = st->imm;
			in_->ap[0] = slot_ap(&si[st->dst], base, P, T, R, drow);
			if (st->op == NX_I_TENSOR_REDUCE) {
				int32_t s2[2] = {(int32_t)R, 1};
				uint32_t c2[2] = {(uint32_t)T, (uint32_t)R};
				in_->ap[1] = nx_ap_sbuf(si[st->a].dt, 0, (int)P, base + si[st->a].off, 2, s2, c2);
				in_->iarg[0] = 1;
				continue;
			}
			int srcs[3] = {st->a, st->b, st->c};
			for (int j = 0; j < 3; j++)
				if (srcs[j] >= 0)
					in_->ap[1 + j] = slot_ap(&si[srcs[j]], base, P, T, R, drow);
		}
		prev = nx_l_signal(L, e);
	}
	nx_l_wait(L, NX_ENG_POOL, &prev);
	nx_l_wait(L, NX_ENG_POOL, &out->buf->war);
	nx_ap ho = nx_ap_hbm(out->dt, out->buf->off, (int)P, T * R, 1, s1, cF);
	nx_ap so = nx_ap_sbuf(out->dt, 0, (int)P, base + si[p->nin].off, 1, s1, cF);
	nx_lsync y = nx_l_dma(L, NX_ENG_POOL, ho, so);
	nx_l_max(&out->buf->written, &y);
	nx_l_max(&out->buf->war, &y);
	nx_l_max(&prev, &y);
	nx_l_max(&prev, &loads);
	nx_l_sbuf_end(L, h, &prev);
	return NX_OK;
}

nx_status nx_l_rowprog(nx_lower *L, const nx_lprog *p, nx_lval *const *in, nx_lval *out, int64_t O, int64_t R)
{
	if (O == 0 || R == 0)
		return NX_OK;
	int64_t P = nx_l_div_le(O, 128), T = O / P;
	if (prog_bytes(p, in, out, T, R, NULL) <= L->sbuf_half)
		return run_one(L, p, in, out, O, R);
	/* rows per partition that fit, with the alignment slack of every slot */
	int64_t per_t = prog_bytes(p, in, out, 1, R, NULL);
	int64_t slack = 64 * (p->nin + 1 + p->nscratch);
	int64_t Tm = (L->sbuf_half - slack) / (per_t > slack ? per_t - slack + 1 : 1);
	/* the most that fit, at most Tm: the bytes grow with T (bisection) */
	if (Tm > 1 && prog_bytes(p, in, out, Tm, R, NULL) > L->sbuf_half) {
		int64_t lo = 1, hi = Tm; /* bytes(hi) > half; lo fits or is 1 */
		while (hi - lo > 1) {
			int64_t mid = lo + (hi - lo) / 2;
			*(prog_bytes(p, in, out, mid, R, NULL) > L->sbuf_half ? &hi : &lo) = mid;
		}
		Tm = lo;
	}
	if (Tm < 1 || prog_bytes(p, in, out, Tm, R, NULL) > L->sbuf_half)
		return nx_l_err(L, "rows of %lld elements do not fit an SBUF half", (long long)R);
	int64_t rows = 128 * Tm;
	nx_lval *pin[NX_LP_MAXSLOT];
	for (int64_t a = 0; a < O; a += rows) {
		int64_t len = O - a < rows ? O - a : rows;
		int64_t d[2] = {len, R};
		for (int k = 0; k < p->nin; k++) {
			int64_t dr[2] = {len, 1};
			pin[k] = p->row[k] ? nx_l_piece(L, in[k], a, nx_shape_array(&L->a, in[k]->shape->type, 2, dr))
			                   : nx_l_piece(L, in[k], a * R, nx_shape_array(&L->a, in[k]->shape->type, 2, d));
		}
		nx_lval *po = nx_l_piece(L, out, a * R, nx_shape_array(&L->a, out->shape->type, 2, d));
		nx_status rc = run_one(L, p, pin, po, len, R);
		for (int k = 0; k < p->nin; k++)
			nx_l_piece_done(in[k], pin[k]);
		nx_l_piece_done(out, po);
		if (rc)
			return rc;
	}
	return NX_OK;
}

nx_status nx_l_bcast_scalar(nx_lower *L, nx_lval *v, const nx_shape *s, nx_lval **res)
{
	nx_lval *c = nx_l_newval(L, nx_shape_with_type(&L->a, s, v->shape->type));
	nx_lview src = nx_l_view_of(c), dst = nx_l_view_of(c);
	src.buf = v->buf;
	src.dt = v->dt;
	for (int k = 0; k < src.rank; k++)
		src.stride[k] = 0;
	nx_lsync y, w = c->buf->war;
	nx_status rc = nx_l_dma_vv(L, &src, &dst, &w, &y);
	nx_l_max(&c->buf->written, &y);
	nx_l_max(&c->buf->war, &y);
	*res = c;
	return rc;
}

/* ------------------------------------------------------------ programs */
#define TS(P, F, D, A, IMM) nx_lp_add(P, NX_ENG_DVE, NX_I_TENSOR_SCALAR, NX_ALU_##F, D, A, -1, IMM)
#define TT(P, F, D, A, B) nx_lp_add(P, NX_ENG_DVE, NX_I_TENSOR_TENSOR, NX_ALU_##F, D, A, B, 0)

/* t = trunc(x) in slot t (x - fmod(x, 1); |x| >= 2^23 is already integral,
 * and keeps inf); uses slot tmp. */
static void trunc_steps(nx_lprog *p, int x, int t, int tmp)
{
	TS(p, MOD, t, x, 1.0f);
	TT(p, SUB, t, x, t);
	TS(p, ABS_MAX, tmp, x, 0.0f);
	TS(p, GE, tmp, tmp, 8388608.0f);
	int k = nx_lp_add(p, NX_ENG_DVE, NX_I_SELECT, 0, t, tmp, x, 0);
	p->s[k].c = t;
}

/* A zero result takes the sign of x (XLA: floor/ceil/round of -0.3 or -0
 * is -0; x - fmod(x, 1) gives +0): o = o == 0 ? x * 0 : o; uses z, tmp. */
static void signed_zero_steps(nx_lprog *p, int x, int o, int z, int tmp)
{
	TS(p, MUL, z, x, 0.0f);
	TS(p, EQ, tmp, o, 0.0f);
	int k = nx_lp_add(p, NX_ENG_DVE, NX_I_SELECT, 0, o, tmp, z, 0);
	p->s[k].c = o;
}

/* slot d = sign(x) as -1/0/1 (0 for NaN); uses tmp */
static void sign_steps(nx_lprog *p, int x, int d, int tmp)
{
	TS(p, GT, d, x, 0.0f);
	TS(p, LT, tmp, x, 0.0f);
	TT(p, SUB, d, d, tmp);
}

static bool is_float(nx_type t)
{
	return t == NX_F32 || t == NX_BF16 || t == NX_F16 || t == NX_F8E4M3FN || t == NX_F8E5M2 || t == NX_F64;
}

nx_status nx_l_math(nx_lower *L, const nx_inst *i, nx_lval *const *ops, nx_lval *out, bool *done)
{
	nx_lprog p;
	memset(&p, 0, sizeof p);
	int64_t n = nx_shape_elems(out->shape);
	*done = true;
	/* x in slot 0, result in slot 1 (nin = 1) */
	p.nin = 1;
	int x = 0, o = 1, t = 2, a = 3, b = 4, c = 5;
	switch (i->op) {
	case NX_OP_FLOOR: case NX_OP_CEIL:
		p.nscratch = 2;
		trunc_steps(&p, x, t, a);
		nx_lp_add(&p, NX_ENG_DVE, NX_I_TENSOR_TENSOR, i->op == NX_OP_FLOOR ? NX_ALU_LT : NX_ALU_GT, a, x, t, 0);
		nx_lp_add(&p, NX_ENG_DVE, NX_I_TENSOR_TENSOR, i->op == NX_OP_FLOOR ? NX_ALU_SUB : NX_ALU_ADD, o, t, a, 0);
		signed_zero_steps(&p, x, o, t, a);
		break;
	case NX_OP_ROUND_NEAREST_AFZ:
		p.nscratch = 3;
		trunc_steps(&p, x, t, a);
		TT(&p, SUB, a, x, t);
		TS(&p, ABS_MAX, a, a, 0.0f);
		TS(&p, GE, a, a, 0.5f);
		sign_steps(&p, x, b, o);
		TT(&p, MUL, a, a, b);
		TT(&p, ADD, o, t, a);
		signed_zero_steps(&p, x, o, t, a);
		break;
	case NX_OP_ROUND_NEAREST_EVEN:
		p.nscratch = 4;
		trunc_steps(&p, x, t, a);
		TT(&p, SUB, a, x, t);
		TS(&p, ABS_MAX, a, a, 0.0f);
		TS(&p, GT, b, a, 0.5f);  /* more than half: away from zero */
		TS(&p, EQ, a, a, 0.5f);  /* a tie */
		TS(&p, MOD, c, t, 2.0f);
		TS(&p, NE, c, c, 0.0f);  /* t odd */
		TT(&p, LAND, a, a, c);
		TT(&p, LOR, b, b, a);
		sign_steps(&p, x, a, c);
		TT(&p, MUL, b, b, a);
		TT(&p, ADD, o, t, b);
		signed_zero_steps(&p, x, o, t, a);
		break;
	case NX_OP_REDUCE_PRECISION: {
		/* f32 rounded to mantissa_bits (tf32 auto-cast: 10) by Veltkamp's
		 * split: c = s * (2^(23-m) + 1), hi = c - (c - s) is s rounded to
		 * nearest on m + 1 significant bits, in three exact-order f32 ops.
		 * |x| >= 2^100 is scaled by 2^-40 first (c must not overflow) and
		 * back after (powers of two are exact; a carry past the largest
		 * finite value gives inf, as XLA's reduce-precision does); inf
		 * passes through. Exponent ranges narrower than f32's are refused. */
		int mb = (int)i->a.mantissa_bits;
		if (i->shape->type != NX_F32 || i->a.exponent_bits < 8)
			return nx_l_err(L, "reduce-precision to exponent_bits=%d, mantissa_bits=%d of %s: the backend "
			                   "rounds f32 to exponent_bits >= 8 only",
			                (int)i->a.exponent_bits, mb, nx_type_name(i->shape->type));
		if (mb >= 23) {
			p.nscratch = 0;
			nx_lp_add(&p, NX_ENG_DVE, NX_I_TENSOR_COPY, 0, o, x, -1, 0);
			break;
		}
		int big = 2, sc = 3, s_ = 4, cc = 5, dd = 6, inf = 7;
		p.nscratch = 6;
		TS(&p, ABS_MAX, big, x, 0.0f);
		TS(&p, GT, inf, big, 3.4028234663852886e38f); /* |x| = inf */
		TS(&p, GE, big, big, 0x1p100f);
		TS(&p, MUL, sc, x, 0x1p-40f);
		int k = nx_lp_add(&p, NX_ENG_DVE, NX_I_SELECT, 0, s_, big, sc, 0);
		p.s[k].c = x;
		TS(&p, MUL, cc, s_, (float)(ldexp(1.0, 23 - mb) + 1.0));
		TT(&p, SUB, dd, cc, s_);
		TT(&p, SUB, o, cc, dd);
		TS(&p, MUL, sc, o, 0x1p40f);
		k = nx_lp_add(&p, NX_ENG_DVE, NX_I_SELECT, 0, o, big, sc, 0);
		p.s[k].c = o;
		k = nx_lp_add(&p, NX_ENG_DVE, NX_I_SELECT, 0, o, inf, x, 0);
		p.s[k].c = o;
		break;
	}
	case NX_OP_CONVERT:
		if (!is_float(i->operands[0]->shape->type) || is_float(i->shape->type))
			goto no;
		p.nscratch = 2;
		if (i->shape->type == NX_PRED) {
			TS(&p, NE, o, x, 0.0f);
		} else {
			/* XLA truncates toward zero; the store saturates (NaN -> 0) */
			trunc_steps(&p, x, t, a);
			nx_lp_add(&p, NX_ENG_DVE, NX_I_TENSOR_COPY, 0, o, t, -1, 0);
		}
		break;
	case NX_OP_CLAMP: case NX_OP_SELECT: {
		if (i->op == NX_OP_SELECT && nx_shape_elems(ops[0]->shape) == n)
			goto no;
		nx_lval *in[3];
		for (int k = 0; k < 3; k++) {
			in[k] = ops[k];
			if (nx_shape_elems(ops[k]->shape) != n) {
				if (nx_shape_elems(ops[k]->shape) != 1)
					return nx_l_err(L, "operand %d is neither a scalar nor of the result's shape", k);
				nx_status rc = nx_l_bcast_scalar(L, ops[k], out->shape, &in[k]);
				if (rc)
					return rc;
			}
		}
		p.nin = 3;
		if (i->op == NX_OP_CLAMP) {
			/* clamp(lo, x, hi) = min(max(x, lo), hi) */
			TT(&p, MAX, 3, 1, 0);
			TT(&p, MIN, 3, 3, 2);
		} else {
			int k = nx_lp_add(&p, NX_ENG_DVE, NX_I_SELECT, 0, 3, 0, 1, 0);
			p.s[k].c = 2;
		}
		nx_status rc = nx_l_rowprog(L, &p, in, out, n, 1);
		for (int k = 0; k < 3; k++)
			if (in[k] != ops[k])
				nx_l_release_buf(L, in[k]->buf);
		return rc;
	}
	default:
		goto no;
	}
	return nx_l_rowprog(L, &p, ops, out, n, 1);
no:
	*done = false;
	return NX_OK;
}

/* 32-bit (and narrower) integers: s64/u64 are carried as s32/u32. */
static bool int32ish(nx_type t)
{
	return nx_type_is_int(t);
}

static int int_cmp(nx_cmp_dir d)
{
	switch (d) {
	case NX_CMP_EQ: return NX_ALU_IEQ;
	case NX_CMP_NE: return NX_ALU_INE;
	case NX_CMP_LT: return NX_ALU_ILT;
	case NX_CMP_LE: return NX_ALU_ILE;
	case NX_CMP_GT: return NX_ALU_IGT;
	case NX_CMP_GE: return NX_ALU_IGE;
	default: return -1;
	}
}

bool nx_l_int_map(const nx_inst *i, nx_isa_op *op, int *func, float *imm)
{
	if (!i->shape) /* nx_lower_supports: the ops only this path lowers */
		return i->op == NX_OP_SHIFT_LEFT || i->op == NX_OP_SHIFT_RIGHT_LOGICAL ||
		       i->op == NX_OP_SHIFT_RIGHT_ARITHMETIC;
	if (i->noperands < 1 || !i->operands[0]->shape || !int32ish(i->operands[0]->shape->type))
		return false;
	nx_type rt = i->shape->type;
	*op = NX_I_TENSOR_TENSOR;
	*imm = 0.0f;
	switch (i->op) {
	case NX_OP_ADD: *func = NX_ALU_IADD; return true;
	case NX_OP_SUBTRACT: *func = NX_ALU_ISUB; return true;
	case NX_OP_MULTIPLY: *func = NX_ALU_IMUL; return true;
	case NX_OP_MAXIMUM: *func = NX_ALU_IMAX; return true;
	case NX_OP_MINIMUM: *func = NX_ALU_IMIN; return true;
	case NX_OP_AND: *func = NX_ALU_IAND; return true;
	case NX_OP_OR: *func = NX_ALU_IOR; return true;
	case NX_OP_XOR: *func = NX_ALU_IXOR; return true;
	case NX_OP_DIVIDE: *func = NX_ALU_IDIV; return true;
	case NX_OP_REMAINDER: *func = NX_ALU_IREM; return true;
	case NX_OP_ABS:
		*op = NX_I_TENSOR_SCALAR;
		*func = NX_ALU_IABS;
		return true;
	case NX_OP_SHIFT_LEFT: *func = NX_ALU_ISHL; return true;
	case NX_OP_SHIFT_RIGHT_LOGICAL: *func = NX_ALU_ILSHR; return true;
	case NX_OP_SHIFT_RIGHT_ARITHMETIC: *func = NX_ALU_IASHR; return true;
	case NX_OP_COMPARE:
		*func = int_cmp(i->a.direction);
		return *func >= 0;
	case NX_OP_NEGATE:
		*op = NX_I_TENSOR_SCALAR;
		*func = NX_ALU_IMUL;
		*imm = -1.0f;
		return true;
	case NX_OP_NOT: /* bitwise: x ^ -1, wrapped to the type */
		*op = NX_I_TENSOR_SCALAR;
		*func = NX_ALU_IXOR;
		*imm = -1.0f;
		return true;
	case NX_OP_CONVERT:
		/* XLA wraps an integer narrowing (two's complement); the bare cast
		 * of the store saturates */
		if (!int32ish(rt))
			return false;
		*op = NX_I_TENSOR_SCALAR;
		*func = NX_ALU_IADD;
		return true;
	default:
		return false;
	}
}
