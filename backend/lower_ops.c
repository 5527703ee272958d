/* backend/lower_ops.c — kernels for elementwise math (DVE tensor_tensor /
 * tensor_scalar / select / tensor_copy, ACT activate), iota, reductions (DVE
 * tensor_reduce on the free axis, POOL partition_all_reduce for full
 * reductions) and the data-movement ops that are pure DMA access patterns
 * (broadcast, transpose). */
#include "backend/lower.h"
#include "backend/lower_ext.h"

#include <string.h>

typedef struct emap {
	nx_isa_op op;
	nx_engine e;
	int func, flags;
	float imm;
} emap;

static int cmp_alu(nx_cmp_dir d)
{
	switch (d) {
	case NX_CMP_EQ: return NX_ALU_EQ;
	case NX_CMP_NE: return NX_ALU_NE;
	case NX_CMP_LT: return NX_ALU_LT;
	case NX_CMP_LE: return NX_ALU_LE;
	case NX_CMP_GT: return NX_ALU_GT;
	case NX_CMP_GE: return NX_ALU_GE;
	default: return -1;
	}
}

static bool map_elem(const nx_inst *i, emap *m)
{
	memset(m, 0, sizeof *m);
	m->e = NX_ENG_DVE;
	m->imm = 1.0f;
	bool pred = i->shape && i->shape->type == NX_PRED;
	if (nx_l_int_map(i, &m->op, &m->func, &m->imm))
		return true; /* exact integer ALU (lower_math.c) */
	m->imm = 1.0f; /* nx_l_int_map cleared it: an integer sign was act(0 x) */
	switch (i->op) {
#define TT(O, A) case NX_OP_##O: m->op = NX_I_TENSOR_TENSOR; m->func = NX_ALU_##A; return true;
	TT(ADD, ADD) TT(SUBTRACT, SUB) TT(MULTIPLY, MUL) TT(DIVIDE, DIV) TT(MAXIMUM, MAX)
	TT(MINIMUM, MIN) TT(POWER, POW) TT(REMAINDER, MOD)
#undef TT
	case NX_OP_AND: m->op = NX_I_TENSOR_TENSOR; m->func = pred ? NX_ALU_LAND : NX_ALU_AND; return true;
	case NX_OP_OR: m->op = NX_I_TENSOR_TENSOR; m->func = pred ? NX_ALU_LOR : NX_ALU_OR; return true;
	case NX_OP_XOR: m->op = NX_I_TENSOR_TENSOR; m->func = pred ? NX_ALU_NE : NX_ALU_XOR; return true;
	case NX_OP_COMPARE:
		m->op = NX_I_TENSOR_TENSOR;
		m->func = cmp_alu(i->a.direction);
		return i->shape == NULL || m->func >= 0;
	case NX_OP_SELECT: m->op = NX_I_SELECT; return true;
	case NX_OP_NEGATE: m->op = NX_I_TENSOR_SCALAR; m->func = NX_ALU_MUL; m->imm = -1.0f; return true;
	case NX_OP_NOT:
		m->op = NX_I_TENSOR_SCALAR;
		m->func = NX_ALU_EQ;
		m->imm = 0.0f;
		return i->shape == NULL || pred;
	case NX_OP_CONVERT: case NX_OP_COPY: m->op = NX_I_TENSOR_COPY; return true;
#define AC(O, F) case NX_OP_##O: m->op = NX_I_ACTIVATE; m->e = NX_ENG_ACT; m->func = NX_ACT_##F; return true;
	AC(EXPONENTIAL, EXP) AC(LOG, LOG) AC(TANH, TANH) AC(LOGISTIC, LOGISTIC) AC(SQRT, SQRT)
	AC(RSQRT, RSQRT) AC(ABS, ABS) AC(SIGN, SIGN) AC(SINE, SIN) AC(COSINE, COS) AC(ERF, ERF)
	AC(LOG_PLUS_ONE, LOG1P) AC(EXPONENTIAL_MINUS_ONE, EXPM1) AC(ATAN, ARCTAN)
#undef AC
	default: return false;
	}
}

bool nx_l_elementwise_ok(const nx_inst *i)
{
	emap m;
	return map_elem(i, &m);
}

bool nx_l_elem_map(const nx_inst *i, nx_lemap *out)
{
	emap m;
	if (!map_elem(i, &m))
		return false;
	out->op = m.op;
	out->e = m.e;
	out->func = m.func;
	out->flags = m.flags;
	out->imm = m.imm;
	return true;
}

int64_t nx_l_chunk(int64_t F, int64_t fmax)
{
	int64_t d = nx_l_div_le(F, fmax);
	if (d >= F || d * 4 >= fmax)
		return d;
	/* A poor divisor (F prime or nearly: 5087 gave 5087 chunks of one
	 * element, DMAs of 4 bytes per partition). The whole row is in SBUF
	 * anyway: take the smallest divisor above fmax instead. */
	for (int64_t k = fmax + 1; k < F; k++)
		if (F % k == 0)
			return k;
	return F;
}

/* A DMA between an SBUF tile and an HBM tile (partition rows part_stride
 * apart) of 256 KiB or more: cut into up to 8 partition ranges of >= 16
 * partitions, each on the next queue of the engine (one DMA moves ~17 B/ns). */
static nx_lsync dma_split(nx_lower *L, nx_engine e, nx_ap dst, nx_ap src, int64_t bytes)
{
	nx_ap *sb = dst.space == NX_MEM_HBM ? &src : &dst, *hb = dst.space == NX_MEM_HBM ? &dst : &src;
	int P = sb->part_count, np = P / 16 < 8 ? P / 16 : 8;
	if (bytes < 256 * 1024 || np < 2 || hb->space != NX_MEM_HBM || hb->part_count != P)
		return nx_l_dma(L, e, dst, src);
	nx_lsync all;
	memset(&all, 0, sizeof all);
	nx_ap s0 = *sb, h0 = *hb;
	for (int k = 0; k < np; k++) {
		int p0 = P * k / np, p1 = P * (k + 1) / np;
		sb->part_start = (uint16_t)(s0.part_start + p0);
		sb->part_count = (uint16_t)(p1 - p0);
		hb->offset = h0.offset + (int64_t)p0 * h0.part_stride * nx_dtype_bytes[h0.dtype];
		hb->part_count = (uint16_t)(p1 - p0);
		nx_lsync y = nx_l_dma(L, e, dst, src);
		nx_l_max(&all, &y);
	}
	return all;
}

nx_status nx_l_elementwise(nx_lower *L, const nx_inst *i, nx_lval *const *ops, nx_lval *out)
{
	emap m;
	if (!map_elem(i, &m))
		return nx_l_err(L, "operation '%s' is not supported by the backend yet", nx_opcode_name(i->op));
	int64_t n = nx_shape_elems(out->shape);
	if (n == 0)
		return NX_OK;
	int nops = i->noperands;
	for (int k = 0; k < nops; k++)
		if (nx_shape_elems(ops[k]->shape) != n)
			return nx_l_err(L, "operand %d has %lld elements, the result %lld", k,
			                (long long)nx_shape_elems(ops[k]->shape), (long long)n);
	/* an operand still in SBUF from an earlier kernel fixes the partitions */
	nx_ltile t = nx_l_tile(n, 2048);
	for (int k = 0; k < nops; k++)
		if (nx_l_resident(L, ops[k], 0, 0) && ops[k]->sb_P * ops[k]->sb_F == n) {
			t = nx_l_tile_p(n, ops[k]->sb_P, 2048);
			break;
		}
	int64_t off[9], bytes = 0;
	for (int k = 0; k <= nops; k++) {
		off[k] = bytes;
		bytes += nx_l_al64(t.F * nx_dtype_bytes[k < nops ? ops[k]->dt : out->dt]);
	}
	int64_t base;
	int h;
	nx_status rc = nx_l_sbuf_begin(L, bytes, &base, &h);
	if (rc)
		return rc;
	nx_l_plan_kernel(L, "elementwise");
	nx_l_plan(L, "op", "%s on %s (%s)", nx_isa_table[m.op].name, nx_engine_names[m.e], nx_opcode_name(i->op));
	nx_l_plan(L, "tiling", "[%lld, %lld] in %lld chunks of %lld", (long long)t.P, (long long)t.F, (long long)t.Lc,
	          (long long)t.Fc);
	nx_l_plan(L, "loops", "chunks %lld", (long long)t.Lc);
	bool res[9];
	int64_t addr[9];
	nx_lsync loads, done;
	memset(&loads, 0, sizeof loads);
	bool any_load = false;
	for (int k = 0; k < nops; k++) {
		res[k] = nx_l_resident(L, ops[k], t.P, t.F);
		nx_l_plan(L, "input", "%d %s", k, res[k] ? "resident in SBUF" : "loaded by sp");
		addr[k] = res[k] ? ops[k]->sb_off : base + off[k];
		if (res[k])
			nx_l_max(&loads, &ops[k]->sb_ready);
		else
			any_load = true;
	}
	if (any_load) {
		nx_l_wait(L, NX_ENG_SP, &L->sbuf_free[h]);
		for (int k = 0; k < nops; k++)
			if (!res[k])
				nx_l_wait(L, NX_ENG_SP, &ops[k]->buf->written);
		nx_l_loop(L, NX_ENG_SP, t.Lc);
		nx_lsync ld;
		memset(&ld, 0, sizeof ld);
		for (int k = 0; k < nops; k++) {
			if (res[k])
				continue;
			nx_lsync y = dma_split(L, NX_ENG_SP, nx_l_sbuf_tile(ops[k]->dt, &t, addr[k], 0),
			                       nx_l_hbm_tile(ops[k], &t), t.P * t.Fc * nx_dtype_bytes[ops[k]->dt]);
			nx_l_max(&ld, &y);
		}
		nx_l_endloop(L, NX_ENG_SP);
		for (int k = 0; k < nops; k++)
			if (!res[k])
				nx_l_max(&ops[k]->buf->war, &ld);
		nx_l_max(&loads, &ld);
	}

	nx_l_wait(L, m.e, &loads);
	nx_l_wait(L, m.e, &L->sbuf_free[h]);
	nx_l_loop(L, m.e, t.Lc);
	nx_insn *in = nx_l_emit(L, m.e, m.op);
	in->func = (uint8_t)m.func;
	in->flags = (uint16_t)m.flags;
	in->fimm[0] = m.imm;
	in->ap[0] = nx_l_sbuf_tile(out->dt, &t, base + off[nops], 0);
	for (int k = 0; k < nops && k < 3; k++)
		in->ap[1 + k] = nx_l_sbuf_tile(ops[k]->dt, &t, addr[k], 0);
	nx_l_endloop(L, m.e);
	done = nx_l_signal(L, m.e);
	for (int k = 0; k < nops; k++)
		if (res[k])
			nx_l_resident_read(L, ops[k], &done);
	nx_l_set_resident(L, out, h, base + off[nops], t.P, t.F, &done);

	nx_l_wait(L, NX_ENG_POOL, &done);
	nx_l_wait(L, NX_ENG_POOL, &out->buf->war);
	nx_l_loop(L, NX_ENG_POOL, t.Lc);
	nx_lsync st = dma_split(L, NX_ENG_POOL, nx_l_hbm_tile(out, &t), nx_l_sbuf_tile(out->dt, &t, base + off[nops], 0),
	                        t.P * t.Fc * nx_dtype_bytes[out->dt]);
	nx_l_endloop(L, NX_ENG_POOL);
	nx_l_max(&out->buf->written, &st);
	nx_l_max(&out->buf->war, &st);
	nx_l_max(&done, &st);
	nx_l_max(&done, &loads);
	nx_l_sbuf_end(L, h, &done);
	return NX_OK;
}

/* iota: the values 0..len-1 of the iota dimension are made once in SBUF,
 * beyond 64 KiB spread over up to 128 partitions (partition p holds
 * [p*F, p*F + F)), and
 * DMA'd to HBM with stride-0 axes for the dimensions before and after it:
 * at most two DMAs (the full partitions, then a partial last one), whatever
 * the size. */
nx_status nx_l_iota(nx_lower *L, const nx_inst *i, nx_lval *out)
{
	int d = (int)i->a.iota_dimension;
	const nx_shape *s = out->shape;
	int64_t n = nx_shape_elems(s);
	if (n == 0)
		return NX_OK;
	if (d < 0 || d >= s->rank)
		return nx_l_err(L, "iota dimension %d out of range", d);
	int64_t outer = 1, inner = 1, len = s->dims[d];
	for (int k = 0; k < d; k++)
		outer *= s->dims[k];
	for (int k = d + 1; k < s->rank; k++)
		inner *= s->dims[k];
	if (len > (1 << 24) || outer > (1 << 24) || inner > (1 << 24))
		return nx_l_err(L, "iota too large");
	int esz = nx_dtype_bytes[out->dt];
	/* a narrow integer iota past its type's range wraps (XLA): made in s32,
	 * then wrapped in place by int_add 0 into the type (the stores saturate;
	 * each element is written at or before where it is read) */
	int64_t top = out->dt == NX_DT_S8 ? 127 : out->dt == NX_DT_U8 ? 255 : out->dt == NX_DT_S16 ? 32767
	              : out->dt == NX_DT_U16 ? 65535 : INT64_MAX;
	bool wrap = len - 1 > top;
	/* one partition while the values fit 64 KiB (one long DMA row per
	 * outer index); beyond, spread over up to 128 partitions */
	int64_t F = len * (wrap ? 4 : esz) <= 65536 ? len : (len + 127) / 128; /* values per partition */
	int64_t P = (len + F - 1) / F;    /* partitions used */
	int64_t full = len / F, rem = len - full * F;
	int64_t base;
	int h;
	nx_status rc = nx_l_sbuf_begin(L, nx_l_al64(F * (wrap ? 4 : esz)), &base, &h);
	if (rc)
		return rc;
	nx_l_plan_kernel(L, "iota");
	nx_l_plan(L, "tile", "%lld partitions x %lld values", (long long)P, (long long)F);
	int32_t st1[1] = {1};
	uint32_t c1[1] = {(uint32_t)F};
	nx_l_wait(L, NX_ENG_DVE, &L->sbuf_free[h]);
	nx_insn *in = nx_l_emit(L, NX_ENG_DVE, NX_I_IOTA);
	in->ap[0] = nx_ap_sbuf(wrap ? NX_DT_S32 : out->dt, 0, (int)P, base, 1, st1, c1);
	in->iarg[1] = F; /* value = p*F + f */
	in->iarg[2] = 1;
	if (wrap) { /* differential seed 9058: s8[144] iota */
		nx_insn *w = nx_l_emit(L, NX_ENG_DVE, NX_I_TENSOR_SCALAR);
		w->func = NX_ALU_IADD;
		w->ap[0] = nx_ap_sbuf(out->dt, 0, (int)P, base, 1, st1, c1);
		w->ap[1] = in->ap[0];
		w->fimm[0] = 0;
	}
	nx_lsync done = nx_l_signal(L, NX_ENG_DVE);
	/* the repeated rows: one DMA per 16 MiB or so, up to 16 of them cut
	 * along the outer axis, on the POOL and SP queues in turn
	 * (bert_dp_graph_4's s32[2048,30522]: one 250 MB DMA took 14.6 ms) */
	int64_t npieces = n * esz / (16LL << 20) + 1;
	if (npieces > 16)
		npieces = 16;
	if (npieces > outer)
		npieces = outer;
	for (int k = 0; k < (npieces > 1 ? 2 : 1); k++) {
		nx_engine e = k ? NX_ENG_SP : NX_ENG_POOL;
		nx_l_wait(L, e, &done);
		nx_l_wait(L, e, &out->buf->war);
	}
	nx_lsync all = done;
	for (int64_t pc = 0; pc < npieces; pc++) {
		int64_t o0 = outer * pc / npieces, o1 = outer * (pc + 1) / npieces;
		for (int part = 0; part < 2; part++) {
			int64_t np = part == 0 ? full : (rem ? 1 : 0), cnt = part == 0 ? F : rem;
			if (np == 0)
				continue;
			int32_t st[3], dst_st[3];
			uint32_t c[3];
			int nd = 0;
			if (outer > 1)
				st[nd] = 0, dst_st[nd] = (int32_t)(len * inner), c[nd++] = (uint32_t)(o1 - o0);
			st[nd] = 1, dst_st[nd] = (int32_t)inner, c[nd++] = (uint32_t)cnt;
			if (inner > 1)
				st[nd] = 0, dst_st[nd] = 1, c[nd++] = (uint32_t)inner;
			int64_t p0 = part == 0 ? 0 : full;
			nx_ap src = nx_ap_sbuf(out->dt, (int)p0, (int)np, base, nd, st, c);
			nx_ap dst = nx_ap_hbm(out->dt, out->buf->off + (o0 * len * inner + p0 * F * inner) * esz, (int)np,
			                      F * inner, nd, dst_st, c);
			nx_lsync y = nx_l_dma(L, pc % 2 ? NX_ENG_SP : NX_ENG_POOL, dst, src);
			nx_l_max(&all, &y);
		}
	}
	nx_l_max(&out->buf->written, &all);
	nx_l_max(&out->buf->war, &all);
	done = all;
	nx_l_sbuf_end(L, h, &done);
	return NX_OK;
}

nx_status nx_l_broadcast(nx_lower *L, const nx_inst *i, nx_lval *op, nx_lval *out)
{
	nx_lview src = nx_l_view_of(op), v;
	memset(&v, 0, sizeof v);
	v.buf = op->buf;
	v.dt = op->dt;
	v.rank = out->shape->rank;
	for (int k = 0; k < v.rank; k++)
		v.dims[k] = out->shape->dims[k];
	if (i->a.dimensions.n != op->shape->rank)
		return nx_l_err(L, "broadcast dimensions do not match the operand rank");
	for (int j = 0; j < i->a.dimensions.n; j++)
		v.stride[i->a.dimensions.v[j]] = src.stride[j];
	nx_l_plan_kernel(L, "broadcast-dma");
	return nx_l_copy_view(L, &v, out);
}

/* The PE transpose goes through fp32 PSUM: exact for every type but the
 * 32-bit integers (above 2^24: differential seed 8430). */
static bool pe_transpose_exact(nx_dtype t)
{
	return t != NX_DT_S32 && t != NX_DT_U32;
}

/* A 2-D transpose of a value still in SBUF as [R, C] (R, C <= 128): PE
 * transpose into a new region (the result stays resident), POOL stores it. */
static bool transpose_sbuf(nx_lower *L, const nx_inst *i, nx_lval *op, nx_lval *out, nx_status *rc)
{
	const nx_shape *s = op->shape;
	if (s->rank != 2 || i->a.dimensions.v[0] != 1 || i->a.dimensions.v[1] != 0 || !pe_transpose_exact(op->dt))
		return false;
	int64_t R = s->dims[0], C = s->dims[1];
	if (R > 128 || C > 128 || R < 1 || C < 1 || !nx_l_resident(L, op, R, C))
		return false;
	int64_t base;
	int h;
	if ((*rc = nx_l_sbuf_begin(L, nx_l_al64(R * nx_dtype_bytes[out->dt]), &base, &h)) != NX_OK)
		return true;
	if (!nx_l_resident(L, op, R, C)) {
		/* our own region overwrote it; the region keeps its wait as its free point */
		return false;
	}
	nx_l_plan_kernel(L, "transpose-pe");
	nx_lsync done = nx_l_transpose_sbuf(L, op->dt, op->sb_off, out->dt, base, R, C, &op->sb_ready, h);
	nx_l_resident_read(L, op, &done);
	nx_l_set_resident(L, out, h, base, C, R, &done);
	int32_t s1[1] = {1};
	uint32_t cR[1] = {(uint32_t)R};
	nx_l_wait(L, NX_ENG_POOL, &done);
	nx_l_wait(L, NX_ENG_POOL, &out->buf->war);
	nx_lsync st = nx_l_dma(L, NX_ENG_POOL, nx_ap_hbm(out->dt, out->buf->off, (int)C, R, 1, s1, cR),
	                       nx_ap_sbuf(out->dt, 0, (int)C, base, 1, s1, cR));
	nx_l_max(&out->buf->written, &st);
	nx_l_max(&out->buf->war, &st);
	nx_l_max(&done, &st);
	nx_l_sbuf_end(L, h, &done);
	*rc = NX_OK;
	return true;
}

nx_status nx_l_transpose(nx_lower *L, const nx_inst *i, nx_lval *op, nx_lval *out)
{
	nx_lview src = nx_l_view_of(op), v = src;
	if (i->a.dimensions.n != op->shape->rank)
		return nx_l_err(L, "transpose permutation does not match the operand rank");
	nx_status rc;
	if (transpose_sbuf(L, i, op, out, &rc))
		return rc;
	for (int k = 0; k < v.rank; k++) {
		v.dims[k] = src.dims[i->a.dimensions.v[k]];
		v.stride[k] = src.stride[i->a.dimensions.v[k]];
	}
	nx_l_plan_kernel(L, "transpose-dma");
	return nx_l_copy_view(L, &v, out);
}

int nx_l_reduce_alu(const nx_inst *i)
{
	if (i->ncalled != 1 || !i->called[0]->root)
		return -1;
	const nx_inst *r = i->called[0]->root;
	if (r->noperands != 2 || r->operands[0]->op != NX_OP_PARAMETER || r->operands[1]->op != NX_OP_PARAMETER)
		return -1;
	bool pred = r->shape->type == NX_PRED;
	if (nx_type_is_int(r->shape->type)) {
		/* exact and wrapping, with s32 partials (XLA: an s8 sum wraps) */
		switch (r->op) {
		case NX_OP_ADD: return NX_ALU_IADD;
		case NX_OP_MULTIPLY: return NX_ALU_IMUL;
		case NX_OP_MAXIMUM: return NX_ALU_IMAX;
		case NX_OP_MINIMUM: return NX_ALU_IMIN;
		default: return -1;
		}
	}
	switch (r->op) {
	case NX_OP_ADD: return NX_ALU_ADD;
	case NX_OP_MULTIPLY: return NX_ALU_MUL;
	case NX_OP_MAXIMUM: return NX_ALU_MAX;
	case NX_OP_MINIMUM: return NX_ALU_MIN;
	case NX_OP_AND: return pred ? NX_ALU_LAND : -1;
	case NX_OP_OR: return pred ? NX_ALU_LOR : -1;
	default: return -1;
	}
}

nx_status nx_l_reduce(nx_lower *L, const nx_inst *i, nx_lval *const *ops, nx_lval *out)
{
	if (i->noperands != 2)
		return nx_l_err(L, "variadic reduce is not supported by the backend yet");
	int alu = nx_l_reduce_alu(i);
	if (alu < 0)
		return nx_l_err(L, "reduce computation '%s' is not a single add/multiply/max/min",
		                i->ncalled ? i->called[0]->name : "?");
	nx_lval *x = ops[0], *init = ops[1];
	const nx_shape *xs = x->shape;
	bool red[NX_MAX_RANK] = {0};
	for (int k = 0; k < i->a.dimensions.n; k++)
		red[i->a.dimensions.v[k]] = true;
	int64_t O = 1, R = 1;
	for (int k = 0; k < xs->rank; k++)
		*(red[k] ? &R : &O) *= xs->dims[k];
	if (O == 0)
		return NX_OK;
	/* reduced dims innermost: permute through a DMA when they are not */
	bool trailing = true;
	for (int k = 0, seen = 0; k < xs->rank; k++) {
		if (red[k])
			seen = 1;
		else if (seen && xs->dims[k] > 1)
			trailing = false;
	}
	nx_lval *src = x;
	/* [R, O] reduced over dim 0 and still in SBUF: transposed on PE instead
	 * of permuted through HBM */
	bool rt = !trailing && R > 1 && xs->rank == 2 && red[0] && !red[1] && xs->dims[0] <= 128 &&
	          pe_transpose_exact(x->dt) &&
	          xs->dims[1] <= 128 && nx_l_resident(L, x, xs->dims[0], xs->dims[1]);
	if (!trailing && R > 1 && !rt) {
		nx_lview v = nx_l_view_of(x), w = v;
		int r = 0;
		for (int pass = 0; pass < 2; pass++)
			for (int k = 0; k < xs->rank; k++)
				if (red[k] == (pass == 1)) {
					w.dims[r] = v.dims[k];
					w.stride[r] = v.stride[k];
					r++;
				}
		src = nx_l_newval(L, xs);
		nx_status rc = nx_l_copy_view(L, &w, src);
		if (rc)
			return rc;
	}
	if (R == 0)
		return nx_l_err(L, "reduction over an empty dimension is not supported by the backend yet");
	/* partitions: outputs, or (for a full reduction) slices of the reduced axis */
	int64_t S = O == 1 ? nx_l_div_le(R, 128) : 1;
	int64_t P = O == 1 ? S : nx_l_div_le(O, 128), T = O == 1 ? 1 : O / P, R2 = R / S;
	int esz = nx_dtype_bytes[src->dt], osz = nx_dtype_bytes[out->dt];
	int64_t o_in = 0, o_part = nx_l_al64(T * R2 * esz), o_init = o_part + nx_l_al64(T * 4), o_out = o_init + 64;
	int64_t bytes = o_out + nx_l_al64(T * osz);
	int64_t base;
	int h;
	nx_status rc = nx_l_sbuf_begin(L, bytes, &base, &h);
	if (rc)
		return rc;
	if (R2 > (1 << 24))
		return nx_l_err(L, "reduction of %lld elements per partition is too large", (long long)R2);
	nx_l_plan_kernel(L, "reduce");
	nx_l_plan(L, "shape", "%lld rows of %lld (%s)", (long long)O, (long long)R, nx_alu_names[alu]);
	nx_l_plan(L, "tiling", "%lld partitions x %lld rows of %lld", (long long)P, (long long)T, (long long)R2);
	nx_l_plan(L, "loops", "rows %lld", (long long)T);
	int32_t s1[1] = {1};
	uint32_t cR[1] = {(uint32_t)R2}, c1[1] = {1};
	nx_lsync loads;
	memset(&loads, 0, sizeof loads);
	bool rd = !rt && T == 1 && src == x && nx_l_resident(L, x, P, R2);
	rt = rt && nx_l_resident(L, x, xs->dims[0], xs->dims[1]);
	nx_ap sin = nx_ap_sbuf(src->dt, 0, (int)P, rd ? x->sb_off : base + o_in, 1, s1, cR);
	sin.loop_stride[0] = R2 * esz;
	nx_l_wait(L, NX_ENG_SP, &L->sbuf_free[h]);
	nx_l_wait(L, NX_ENG_SP, &init->buf->written);
	if (rd) {
		loads = x->sb_ready;
	} else if (rt) {
		loads = nx_l_transpose_sbuf(L, x->dt, x->sb_off, x->dt, base + o_in, R, O, &x->sb_ready, h);
	} else if (!trailing && R > 1 && src == x) {
		/* the SBUF copy went (our own region took its place): a strided load */
		uint32_t cR1[1] = {(uint32_t)R};
		int32_t sO[1] = {(int32_t)O};
		nx_l_wait(L, NX_ENG_SP, &src->buf->written);
		nx_ap s0 = sin;
		s0.loop_stride[0] = 0; /* T == 1: no loop around this load */
		loads = nx_l_dma(L, NX_ENG_SP, s0, nx_ap_hbm(src->dt, src->buf->off, (int)P, 1, 1, sO, cR1));
	} else {
		nx_l_wait(L, NX_ENG_SP, &src->buf->written);
		nx_l_loop(L, NX_ENG_SP, T);
		nx_ap hin = nx_ap_hbm(src->dt, src->buf->off, (int)P, R2, 1, s1, cR);
		hin.loop_stride[0] = P * R2 * esz;
		loads = dma_split(L, NX_ENG_SP, sin, hin, P * R2 * esz);
		nx_l_endloop(L, NX_ENG_SP);
	}
	int ip = O == 1 ? 1 : (int)P;
	nx_lsync y = nx_l_dma(L, NX_ENG_SP, nx_ap_sbuf(init->dt, 0, ip, base + o_init, 1, s1, c1),
	                      nx_ap_hbm(init->dt, init->buf->off, ip, 0, 1, s1, c1));
	nx_l_max(&loads, &y);
	nx_l_max(&src->buf->war, &loads);
	nx_l_max(&init->buf->war, &loads);
	if (src != x)
		src->buf->pinned = false; /* scratch: freed below */

	nx_l_wait(L, NX_ENG_DVE, &loads);
	nx_l_loop(L, NX_ENG_DVE, T);
	nx_insn *in = nx_l_emit(L, NX_ENG_DVE, NX_I_TENSOR_REDUCE);
	in->func = (uint8_t)alu;
	in->iarg[0] = 1;
	/* partials: s32 (a narrow sum wraps), u32 for u32 data (max/min compare
	 * unsigned: differential seed 805) */
	nx_dtype pdt = nx_alu_kinds[alu] != 'i' ? NX_DT_F32 : src->dt == NX_DT_U32 ? NX_DT_U32 : NX_DT_S32;
	nx_ap part = nx_ap_sbuf(pdt, 0, (int)P, base + o_part, 1, s1, c1);
	part.loop_stride[0] = 4;
	in->ap[0] = part;
	in->ap[1] = sin;
	nx_lsync done;
	if (O == 1) {
		nx_l_endloop(L, NX_ENG_DVE);
		done = nx_l_signal(L, NX_ENG_DVE);
		nx_ap p1 = nx_ap_sbuf(pdt, 0, (int)P, base + o_part, 1, s1, c1);
		nx_ap q1 = p1;
		q1.part_count = 1;
		nx_l_wait(L, NX_ENG_POOL, &done);
		if (P > 1) {
			nx_insn *pr = nx_l_emit(L, NX_ENG_POOL, NX_I_PARTITION_REDUCE);
			pr->func = (uint8_t)alu;
			pr->ap[0] = p1;
			pr->ap[1] = p1;
		}
		nx_insn *c = nx_l_emit(L, NX_ENG_POOL, NX_I_TENSOR_TENSOR);
		c->func = (uint8_t)alu;
		c->ap[0] = nx_ap_sbuf(out->dt, 0, 1, base + o_out, 1, s1, c1);
		c->ap[1] = q1;
		c->ap[2] = nx_ap_sbuf(init->dt, 0, 1, base + o_init, 1, s1, c1);
		done = nx_l_signal(L, NX_ENG_POOL);
	} else {
		nx_insn *c = nx_l_emit(L, NX_ENG_DVE, NX_I_TENSOR_TENSOR);
		c->func = (uint8_t)alu;
		nx_ap o = nx_ap_sbuf(out->dt, 0, (int)P, base + o_out, 1, s1, c1);
		o.loop_stride[0] = osz;
		c->ap[0] = o;
		c->ap[1] = part;
		c->ap[2] = nx_ap_sbuf(init->dt, 0, (int)P, base + o_init, 1, s1, c1);
		nx_l_endloop(L, NX_ENG_DVE);
		done = nx_l_signal(L, NX_ENG_DVE);
	}
	if (rd || rt)
		nx_l_resident_read(L, x, &done);
	if (T == 1)
		nx_l_set_resident(L, out, h, base + o_out, O == 1 ? 1 : P, 1, &done);
	nx_l_wait(L, NX_ENG_POOL, &done);
	nx_l_wait(L, NX_ENG_POOL, &out->buf->war);
	int op_ = O == 1 ? 1 : (int)P;
	nx_l_loop(L, NX_ENG_POOL, T);
	nx_ap hout = nx_ap_hbm(out->dt, out->buf->off, op_, 1, 1, s1, c1);
	hout.loop_stride[0] = P * osz;
	nx_ap sout = nx_ap_sbuf(out->dt, 0, op_, base + o_out, 1, s1, c1);
	sout.loop_stride[0] = osz;
	nx_lsync st = nx_l_dma(L, NX_ENG_POOL, hout, sout);
	nx_l_endloop(L, NX_ENG_POOL);
	nx_l_max(&out->buf->written, &st);
	nx_l_max(&out->buf->war, &st);
	nx_l_max(&done, &st);
	nx_l_max(&done, &loads);
	nx_l_sbuf_end(L, h, &done);
	if (src != x) {
		src->buf->refs = 1;
		src->buf->pinned = false;
		nx_l_release_buf(L, src->buf);
	}
	return NX_OK;
}
