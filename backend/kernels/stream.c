/* backend/kernels/stream.c — elementwise ops and row reductions over values
 * larger than one SBUF half, as one loop nest over tiles whose code does not
 * grow with the volume.
 *
 * The operands are O rows of R elements (row-major, contiguous); a tile is
 * 128 partitions x tr rows (tr*R contiguous elements per partition). Full
 * tiles run in a counted loop; the rows left over form at most two more
 * tiles ([q partitions, tr rows] and [1, s rows]), emitted once each. Per
 * tile: SP loads the operands (one queue each), the compute engine computes
 * into the output tile, POOL stores it (one queue). Tiles alternate between
 * ND buffer sets (the loop body holds ND tiles), so the loads of tile i+1
 * overlap the compute of tile i and the store of tile i-1. Per-iteration
 * waits (nx_l_wait_rel): the compute engine waits for its loads and for the
 * store of tile i-ND (the output buffer it reuses), SP for the compute
 * engine to be done with tile i-ND (the input buffers), POOL for the
 * compute engine. Elementwise: R = 1, the engine instruction of the op
 * (nx_l_elem_map). Reduction: DVE tensor_reduce over R into fp32 partials,
 * then the init value combined and the cast (as nx_l_reduce). Also the
 * column reduce (reduced axes leading), below. */
#include "backend/lower.h"

#include <string.h>

enum { R_SP_C, R_C_LD, R_C_ST, R_POOL_C };
enum { ND = 2 }; /* buffer sets */

typedef struct st {
	nx_lower *L;
	const nx_inst *i;
	int nops;
	nx_lval *const *ops;
	nx_lval *out;
	bool reduce;
	nx_lemap m;  /* elementwise */
	int alu;     /* reduction */
	nx_engine ce;
	int64_t R, tr, Ro;
	int64_t in_off[4], out_off, part_off, init_off, bufb, step;
	int ql[16], qs[8], kl, ks; /* queues; pieces (partition ranges) per load / the store */
	int64_t base_l[16], base_s[8], base_c;
	int lv;      /* loop level of the tile loop, -1 outside */
	nx_lsync loads, stores, comp;
} st;

/* one tile: np partitions x tr rows, first row `row0` (plus the loop's advance
 * of 128*tr rows per iteration) */
static void tile(st *x, int64_t np, int64_t tr, int64_t row0, int b)
{
	nx_lower *L = x->L;
	int64_t adv = x->step; /* rows per loop iteration */
	int64_t bo = b * x->bufb; /* this tile's buffer set */
	int32_t s1[2] = {1, 1};
	uint32_t cin[1] = {(uint32_t)(tr * x->R)}, cout[1] = {(uint32_t)(tr * x->Ro)};
	/* SP: loads once the compute engine is done with tile i - ND */
	nx_l_wait_rel(L, NX_ENG_SP, NX_LSEM_ENG + x->ce, x->base_c + 1 - ND, R_SP_C);
	/* a full tile: each queue takes one piece (a range of partitions); a
	 * tail tile may leave queues out and waits for absolute counts */
	bool full = np == 128;
	for (int k = 0; k < x->nops; k++) {
		nx_lval *v = x->ops[k];
		int esz = nx_dtype_bytes[v->dt];
		int64_t kp = np < x->kl ? np : x->kl;
		for (int64_t pc = 0; pc < kp; pc++) {
			int64_t p0 = np * pc / kp, p1 = np * (pc + 1) / kp;
			nx_ap h = nx_ap_hbm(v->dt, v->buf->off + (row0 + p0 * tr) * x->R * esz, (int)(p1 - p0), tr * x->R, 1,
			                    s1, cin);
			if (x->lv >= 0)
				h.loop_stride[x->lv] = adv * x->R * esz;
			nx_ap sb = nx_ap_sbuf(v->dt, (int)p0, (int)(p1 - p0), x->in_off[k] + bo, 1, s1, cin);
			nx_lsync y = nx_l_dma_q(L, NX_ENG_SP, x->ql[k * x->kl + pc], sb, h);
			nx_l_max(&x->loads, &y);
		}
	}
	nx_l_addreg(L, NX_ENG_SP, R_SP_C, 1);
	/* compute: one load per queue per tile, the store of tile i - ND */
	nx_l_addreg(L, x->ce, R_C_LD, 1);
	if (full) {
		for (int q = 0; q < x->nops * x->kl; q++)
			nx_l_wait_rel(L, x->ce, x->ql[q], x->base_l[q], R_C_LD);
		for (int q = 0; q < x->ks; q++)
			nx_l_wait_rel(L, x->ce, x->qs[q], x->base_s[q] + 1 - ND, R_C_ST);
	} else {
		nx_lsync a;
		memset(&a, 0, sizeof a);
		for (int q = 0; q < x->nops * x->kl; q++)
			a.s[x->ql[q]] = L->qcount[x->ql[q]];
		for (int q = 0; q < x->ks; q++)
			a.s[x->qs[q]] = L->qcount[x->qs[q]];
		nx_l_wait(L, x->ce, &a);
	}
	nx_ap o = nx_ap_sbuf(x->out->dt, 0, (int)np, x->out_off + bo, 1, s1, cout);
	if (!x->reduce) {
		nx_insn *in = nx_l_emit(L, x->ce, x->m.op);
		in->func = (uint8_t)x->m.func;
		in->flags = (uint16_t)x->m.flags;
		in->fimm[0] = x->m.imm;
		in->ap[0] = o;
		for (int k = 0; k < x->nops && k < 3; k++)
			in->ap[1 + k] = nx_ap_sbuf(x->ops[k]->dt, 0, (int)np, x->in_off[k] + bo, 1, s1, cin);
	} else {
		nx_insn *in = nx_l_emit(L, x->ce, NX_I_TENSOR_REDUCE);
		in->func = (uint8_t)x->alu;
		in->iarg[0] = 1;
		int32_t s2[2] = {(int32_t)x->R, 1};
		uint32_t c2[2] = {(uint32_t)tr, (uint32_t)x->R};
		nx_ap part = nx_ap_sbuf(NX_DT_F32, 0, (int)np, x->part_off + bo, 1, s1, cout);
		in->ap[0] = part;
		in->ap[1] = nx_ap_sbuf(x->ops[0]->dt, 0, (int)np, x->in_off[0] + bo, 2, s2, c2);
		nx_insn *c = nx_l_emit(L, x->ce, NX_I_TENSOR_TENSOR);
		c->func = (uint8_t)x->alu;
		c->ap[0] = o;
		c->ap[1] = part;
		int32_t s0[1] = {0};
		c->ap[2] = nx_ap_sbuf(x->ops[1]->dt, 0, (int)np, x->init_off, 1, s0, cout);
	}
	nx_lsync y = nx_l_signal(L, x->ce);
	nx_l_max(&x->comp, &y);
	nx_l_addreg(L, x->ce, R_C_ST, 1);
	if (x->ce != NX_ENG_POOL) {
		nx_l_addreg(L, NX_ENG_POOL, R_POOL_C, 1);
		nx_l_wait_rel(L, NX_ENG_POOL, NX_LSEM_ENG + x->ce, x->base_c, R_POOL_C);
	}
	int eo = nx_dtype_bytes[x->out->dt];
	int64_t kp = np < x->ks ? np : x->ks;
	for (int64_t pc = 0; pc < kp; pc++) {
		int64_t p0 = np * pc / kp, p1 = np * (pc + 1) / kp;
		nx_ap h = nx_ap_hbm(x->out->dt, x->out->buf->off + (row0 + p0 * tr) * x->Ro * eo, (int)(p1 - p0),
		                    tr * x->Ro, 1, s1, cout);
		if (x->lv >= 0)
			h.loop_stride[x->lv] = adv * x->Ro * eo;
		nx_ap so = nx_ap_sbuf(x->out->dt, (int)p0, (int)(p1 - p0), x->out_off + bo, 1, s1, cout);
		y = nx_l_dma_q(L, NX_ENG_POOL, x->qs[pc], h, so);
		nx_l_max(&x->stores, &y);
	}
}

/* Whether nx_l_reduce_loop holds one row of R elements of type in (with
 * its output and partial) in one of its ND buffer sets: stream()'s budget. */
bool nx_l_reduce_row_fits(const nx_lower *L, nx_dtype in, nx_dtype out, int64_t R)
{
	int64_t per_row = R * nx_dtype_bytes[in] + nx_dtype_bytes[out] + 4;
	int64_t room = (L->sbuf_half - 64) / ND - 64 * (2 + 3); /* 2 operands: x, init */
	return per_row <= room;
}

/* O rows of R (reduced to Ro = 1 or kept, Ro = R = 1 for elementwise) */
static nx_status stream(st *x, int64_t O)
{
	nx_lower *L = x->L;
	int64_t per_row = 0; /* SBUF bytes per row held in one partition */
	for (int k = 0; k < x->nops; k++)
		per_row += (x->reduce && k == 1 ? 0 : x->R) * nx_dtype_bytes[x->ops[k]->dt];
	per_row += x->Ro * nx_dtype_bytes[x->out->dt] + (x->reduce ? 4 : 0);
	int64_t room = (L->sbuf_half - 64) / ND - 64 * (x->nops + 3);
	int64_t want = x->reduce ? (x->R >= 2048 ? 1 : 2048 / x->R) : 2048;
	x->tr = room / per_row < want ? room / per_row : want;
	if (x->tr < 1)
		return nx_l_err(L, "row of %lld elements does not fit SBUF", (long long)x->R);
	if (O < 128 * x->tr) /* small: spread the rows over the partitions */
		x->tr = (O + 127) / 128;
	int64_t tr = x->tr, bytes = 0;
	for (int k = 0; k < x->nops; k++) {
		x->in_off[k] = bytes;
		if (!(x->reduce && k == 1))
			bytes += nx_l_al64(tr * x->R * nx_dtype_bytes[x->ops[k]->dt]);
	}
	x->out_off = bytes;
	bytes += nx_l_al64(tr * x->Ro * nx_dtype_bytes[x->out->dt]);
	x->part_off = bytes;
	if (x->reduce)
		bytes += nx_l_al64(tr * 4);
	x->bufb = bytes;
	bytes *= ND;
	x->init_off = bytes; /* the reduce's init value, outside the buffer sets */
	bytes += 64;
	int64_t base;
	int h;
	nx_status rc = nx_l_sbuf_begin(L, bytes, &base, &h);
	if (rc)
		return rc;
	for (int k = 0; k < x->nops; k++)
		x->in_off[k] += base;
	x->out_off += base, x->part_off += base, x->init_off += base;
	/* the 8 SP queues shared by the operands' loads, the 8 POOL queues by
	 * the store: a full tile is cut into that many partition ranges. An
	 * elementwise loop of 8 tiles or more that loads more bytes than it
	 * stores splits the 16 queues by bytes: its loads borrow POOL queues
	 * no store uses (bert_layer's [2048,1024] multiplies: 10 load and 6
	 * store queues). SP first waits for what a borrowed queue carries: a
	 * queue's completions count in issue order. */
	int64_t T = O / (128 * tr), rem = O % (128 * tr), q = rem / tr, s = rem % tr;
	int nld = x->reduce ? 1 : x->nops, nl = 8;
	if (!x->reduce && T >= 8) {
		int64_t bl = 0, bs = nx_dtype_bytes[x->out->dt];
		for (int k = 0; k < nld; k++)
			bl += nx_dtype_bytes[x->ops[k]->dt];
		nl = nx_l_load_queues(bl, bs, 1);
	}
	x->kl = nl / nld;
	x->ks = 16 - nld * x->kl > 8 ? 8 : 16 - nld * x->kl;
	for (int k = 0; k < nld * x->kl && k < 8; k++)
		x->ql[k] = nx_l_queue(L, NX_ENG_SP);
	for (int k = 0; k < x->ks; k++)
		x->qs[k] = nx_l_queue(L, NX_ENG_POOL);
	nx_lsync bq;
	memset(&bq, 0, sizeof bq);
	for (int k = 8; k < nld * x->kl; k++) {
		x->ql[k] = nx_l_queue(L, NX_ENG_POOL);
		bq.s[x->ql[k]] = L->qcount[x->ql[k]];
	}
	x->lv = -1;
	nx_l_plan_kernel(L, x->reduce ? "reduce-loop" : "elementwise-loop");
	nx_l_plan(L, "shape", "%lld rows of %lld -> %lld, %d operands", (long long)O, (long long)x->R, (long long)x->Ro,
	          x->nops);
	nx_l_plan(L, "tiling", "[128 partitions, %lld rows] per tile; %lld tiles in a loop, tail [%lld, %lld] + [1, %lld]",
	          (long long)tr, (long long)T, (long long)q, (long long)tr, (long long)s);
	nx_l_plan(L, "loops", "tile %lld (%d buffers, %d tiles per iteration, per-iteration waits)", (long long)T,
	          (int)ND, (int)ND);
	nx_l_plan(L, "engines", "load sp q%d (%d queues), %s %s, store pool q%d (%d queues)", x->ql[0], nld * x->kl,
	          x->reduce ? "tensor_reduce" : "compute", nx_engine_names[x->ce], x->qs[0], x->ks);
	nx_l_plan(L, "resident", "none");

	nx_engine engs[3] = {NX_ENG_SP, x->ce, NX_ENG_POOL};
	int ne = x->ce == NX_ENG_POOL ? 2 : 3;
	if (x->ce == NX_ENG_POOL)
		engs[1] = NX_ENG_POOL;
	for (int k = 0; k < ne; k++)
		nx_l_wait(L, engs[k], &L->sbuf_free[h]);
	for (int k = 0; k < x->nops; k++)
		nx_l_wait(L, NX_ENG_SP, &x->ops[k]->buf->written);
	nx_l_wait(L, NX_ENG_SP, &bq);
	nx_l_wait(L, NX_ENG_POOL, &x->out->buf->war);
	if (x->reduce) {
		/* the init value, once, into every partition */
		nx_lval *init = x->ops[1];
		int32_t s1[1] = {1};
		uint32_t c1[1] = {1};
		nx_lsync y = nx_l_dma_q(L, NX_ENG_SP, nx_l_queue(L, NX_ENG_SP), nx_ap_sbuf(init->dt, 0, 128, x->init_off, 1, s1, c1),
		                        nx_ap_hbm(init->dt, init->buf->off, 128, 0, 1, s1, c1));
		nx_l_wait(L, x->ce, &y);
		nx_l_max(&x->loads, &y);
		x->nops = 1; /* the tiles load only x */
	}
	for (int k = 0; k < nld * x->kl; k++)
		x->base_l[k] = L->qcount[x->ql[k]];
	for (int k = 0; k < x->ks; k++)
		x->base_s[k] = L->qcount[x->qs[k]];
	x->base_c = L->ecount[x->ce];
	nx_lsync e0;
	memset(&e0, 0, sizeof e0);
	e0.s[NX_LSEM_ENG + x->ce] = x->base_c;
	nx_l_wait(L, NX_ENG_SP, &e0);
	nx_l_wait(L, NX_ENG_POOL, &e0);
	memset(&e0, 0, sizeof e0);
	for (int k = 0; k < x->ks; k++)
		e0.s[x->qs[k]] = x->base_s[k];
	nx_l_wait(L, x->ce, &e0);
	nx_l_setreg(L, NX_ENG_SP, R_SP_C, 0);
	nx_l_setreg(L, x->ce, R_C_LD, 0);
	nx_l_setreg(L, x->ce, R_C_ST, 0);
	if (x->ce != NX_ENG_POOL)
		nx_l_setreg(L, NX_ENG_POOL, R_POOL_C, 0);
	int64_t pairs = T / ND, te = 128 * tr;
	int par = 0;
	if (pairs > 0) {
		if (pairs > 1) {
			for (int k = 0; k < ne; k++)
				nx_l_loop(L, engs[k], pairs);
			x->lv = L->s[NX_ENG_SP].depth - 1;
		}
		x->step = ND * te;
		for (int b = 0; b < ND; b++)
			tile(x, 128, tr, b * te, b);
		if (pairs > 1) {
			for (int k = 0; k < ne; k++)
				nx_l_endloop(L, engs[k]);
			x->lv = -1;
		}
	}
	for (int64_t t = pairs * ND; t < T; t++, par = (par + 1) % ND)
		tile(x, 128, tr, t * te, par);
	if (q > 0) {
		tile(x, q, tr, T * te, par);
		par = (par + 1) % ND;
	}
	if (s > 0)
		tile(x, 1, s, T * te + q * tr, par);

	for (int k = 0; k < (x->reduce ? 2 : x->nops); k++)
		nx_l_max(&x->ops[k]->buf->war, &x->loads);
	nx_l_max(&x->out->buf->written, &x->stores);
	nx_l_max(&x->out->buf->war, &x->stores);
	nx_lsync done = x->stores;
	nx_l_max(&done, &x->loads);
	nx_l_max(&done, &x->comp);
	nx_l_sbuf_end(L, h, &done);
	return NX_OK;
}

nx_status nx_l_elementwise_loop(nx_lower *L, const nx_inst *i, nx_lval *const *ops, nx_lval *out)
{
	st x;
	memset(&x, 0, sizeof x);
	if (!nx_l_elem_map(i, &x.m) || i->noperands > 3)
		return nx_l_err(L, "operation '%s' is not supported by the backend yet", nx_opcode_name(i->op));
	x.L = L, x.i = i, x.nops = i->noperands, x.ops = ops, x.out = out;
	x.ce = x.m.e, x.R = 1, x.Ro = 1;
	int64_t n = nx_shape_elems(out->shape);
	if (n == 0)
		return NX_OK;
	return stream(&x, n);
}

nx_status nx_l_reduce_loop(nx_lower *L, const nx_inst *i, nx_lval *const *ops, nx_lval *out, int64_t O, int64_t R)
{
	st x;
	memset(&x, 0, sizeof x);
	x.alu = nx_l_reduce_alu(i);
	if (x.alu < 0 || i->noperands != 2)
		return nx_l_err(L, "reduce computation is not a single add/multiply/max/min");
	x.L = L, x.i = i, x.nops = 2, x.ops = ops, x.out = out, x.reduce = true;
	x.ce = NX_ENG_DVE, x.R = R, x.Ro = 1;
	if (O == 0)
		return NX_OK;
	return stream(&x, O);
}

/* ---------------------------------------------------------- column reduce
 * [R rows, C columns] (row-major, the reduced axes leading) reduced over the
 * rows: rows on partitions, one contiguous [np <= 128 rows, cw columns]
 * tile per DMA (>= 2 KiB per partition where C allows, cut over the SP
 * queues), accumulated elementwise on DVE into an fp32 [128, cw] tile
 * (NCB buffers rotate so loads run ahead of the adds), then one POOL
 * partition_all_reduce per column chunk, the init value and the cast on
 * POOL, one store. The tiles are emitted unrolled (nx_l_colreduce_ok caps
 * their count). */
enum { NCB = 4, NCQ = 8, CR_MAX_TILES = 512 };

static int64_t col_width(const nx_lower *L, nx_dtype in, nx_dtype out, int64_t C)
{
	int64_t per = NCB * nx_dtype_bytes[in] + 4 + nx_dtype_bytes[out] + 4;
	int64_t cw = (L->sbuf_half - 64 * (NCB + 3)) / per;
	if (cw > 2048)
		cw = 2048;
	cw &= ~(int64_t)15;
	return cw < C ? cw : C;
}

/* rows per partition in a full tile: 1, or for narrow C enough for
 * >= 2 KiB contiguous per partition (bounded by R / 128 and the buffers) */
static int64_t col_rows(const nx_lower *L, nx_dtype in, nx_dtype out, int64_t R, int64_t C)
{
	int64_t cmax = col_width(L, in, out, INT64_MAX / 16), k = 2048 / (C * nx_dtype_bytes[in]);
	if (k > R / 128)
		k = R / 128;
	if (k > cmax / C)
		k = cmax / C;
	return k < 1 ? 1 : k;
}

bool nx_l_colreduce_ok(const nx_lower *L, const nx_inst *i, nx_dtype in, nx_dtype out, int64_t R, int64_t C)
{
	int alu = nx_l_reduce_alu(i);
	if (i->noperands != 2 || R < 128 || C < 16 || alu < 0 || nx_alu_kinds[alu] == 'i')
		return false;
	if (in != NX_DT_F32 && in != NX_DT_BF16 && in != NX_DT_F16)
		return false;
	int64_t cw = col_width(L, in, out, C);
	if (cw < 16)
		return false;
	int64_t tiles = (R + 127) / 128 * ((C + cw - 1) / cw);
	return tiles <= CR_MAX_TILES;
}

nx_status nx_l_colreduce(nx_lower *L, const nx_inst *i, nx_lval *const *ops, nx_lval *out, int64_t R, int64_t C)
{
	nx_lval *x = ops[0], *init = ops[1];
	int alu = nx_l_reduce_alu(i);
	if (alu < 0)
		return nx_l_err(L, "reduce computation is not a single add/multiply/max/min");
	int esz = nx_dtype_bytes[x->dt], osz = nx_dtype_bytes[out->dt];
	int64_t cw = col_width(L, x->dt, out->dt, C);
	/* narrow C: k consecutive rows per partition (k*C contiguous elements,
	 * >= 2 KiB where R allows); the k column groups are added at the end */
	int64_t k = col_rows(L, x->dt, out->dt, R, C), wk = k > 1 ? k * C : cw;
	int64_t nfull = R / (128 * k), rest = R - nfull * 128 * k;
	int64_t o_in = 0, o_acc = NCB * nx_l_al64(wk * esz), o_out = o_acc + nx_l_al64(wk * 4), o_part = o_out + nx_l_al64(cw * osz);
	int64_t o_init = o_part + nx_l_al64(cw * 4);
	int64_t base;
	int h;
	nx_status rc = nx_l_sbuf_begin(L, o_init + 64, &base, &h);
	if (rc)
		return rc;
	int64_t P = R < 128 ? R : 128, nrb = nfull + (rest + 127) / 128, ncc = (C + cw - 1) / cw;
	int q[NCQ];
	for (int k = 0; k < NCQ; k++)
		q[k] = nx_l_queue(L, NX_ENG_SP);
	int qs = nx_l_queue(L, NX_ENG_POOL);
	nx_l_plan_kernel(L, "column-reduce");
	nx_l_plan(L, "shape", "%lld rows of %lld columns -> %lld (%s)", (long long)R, (long long)C, (long long)C,
	          nx_alu_names[alu]);
	nx_l_plan(L, "tiling", "[%lld rows, %lld columns] per tile, %lld rows per partition; %lld row tiles x %lld column chunks",
	          (long long)P, (long long)cw, (long long)k, (long long)nrb, (long long)ncc);
	nx_l_plan(L, "loops", "none (%lld tiles unrolled, %d buffers)", (long long)(nrb * ncc), (int)NCB);
	nx_l_plan(L, "engines", "load sp q%d (%d queues), tensor_tensor dve, partition_all_reduce pool, store pool q%d",
	          q[0], (int)NCQ, qs);
	nx_l_plan(L, "resident", "none");
	nx_engine engs[3] = {NX_ENG_SP, NX_ENG_DVE, NX_ENG_POOL};
	for (int k = 0; k < 3; k++)
		nx_l_wait(L, engs[k], &L->sbuf_free[h]);
	nx_l_wait(L, NX_ENG_SP, &x->buf->written);
	nx_l_wait(L, NX_ENG_SP, &init->buf->written);
	nx_l_wait(L, NX_ENG_POOL, &out->buf->war);
	int32_t s1[1] = {1}, s0[1] = {0};
	uint32_t c1[1] = {1};
	nx_lsync loads, stores, comp[NCB], pool;
	memset(&loads, 0, sizeof loads);
	memset(&stores, 0, sizeof stores);
	memset(comp, 0, sizeof comp);
	memset(&pool, 0, sizeof pool);
	nx_lsync iy = nx_l_dma_q(L, NX_ENG_SP, q[0], nx_ap_sbuf(init->dt, 0, 1, base + o_init, 1, s1, c1),
	                         nx_ap_hbm(init->dt, init->buf->off, 1, 0, 1, s1, c1));
	nx_l_max(&loads, &iy);
	nx_l_wait(L, NX_ENG_POOL, &iy);
	int64_t t = 0;
	for (int64_t cc = 0; cc < ncc; cc++) {
		int64_t c0 = cc * cw, w = C - c0 < cw ? C - c0 : cw;
		uint32_t cn[1] = {(uint32_t)w}, ck[1] = {(uint32_t)(k * w)};
		nx_ap acc = nx_ap_sbuf(NX_DT_F32, 0, (int)P, base + o_acc, 1, s1, ck);
		/* the accumulator is free once POOL reduced the previous chunk */
		nx_l_wait(L, NX_ENG_DVE, &pool);
		for (int64_t rb = 0; rb < nrb; rb++, t++) {
			int b = (int)(t % NCB);
			/* full tiles of k rows per partition, then the rest one row each */
			int64_t kk = rb < nfull ? k : 1, r0 = rb < nfull ? rb * 128 * k : nfull * 128 * k + (rb - nfull) * 128;
			int64_t np = R - r0 < 128 * kk ? (R - r0) / kk : 128;
			uint32_t cl[1] = {(uint32_t)(kk * w)};
			int64_t ib = base + o_in + b * nx_l_al64(wk * esz);
			nx_l_wait(L, NX_ENG_SP, &comp[b]); /* the adds done with this buffer */
			nx_lsync ld;
			memset(&ld, 0, sizeof ld);
			int kq = np < NCQ ? (int)np : NCQ;
			for (int pc = 0; pc < kq; pc++) {
				int64_t p0 = np * pc / kq, p1 = np * (pc + 1) / kq;
				nx_ap hb = nx_ap_hbm(x->dt, x->buf->off + ((r0 + p0 * kk) * C + c0) * esz, (int)(p1 - p0), kk * C, 1,
				                     s1, cl);
				nx_ap sb = nx_ap_sbuf(x->dt, (int)p0, (int)(p1 - p0), ib, 1, s1, cl);
				nx_lsync y = nx_l_dma_q(L, NX_ENG_SP, q[(t * kq + pc) % NCQ], sb, hb);
				nx_l_max(&ld, &y);
			}
			nx_l_max(&loads, &ld);
			nx_l_wait(L, NX_ENG_DVE, &ld);
			nx_ap in = nx_ap_sbuf(x->dt, 0, (int)np, ib, 1, s1, cl);
			nx_ap a = nx_ap_sbuf(NX_DT_F32, 0, (int)np, base + o_acc, 1, s1, cl);
			if (rb == 0) {
				nx_insn *c = nx_l_emit(L, NX_ENG_DVE, NX_I_TENSOR_COPY);
				c->ap[0] = a;
				c->ap[1] = in;
			} else {
				nx_insn *c = nx_l_emit(L, NX_ENG_DVE, NX_I_TENSOR_TENSOR);
				c->func = (uint8_t)alu;
				c->ap[0] = a;
				c->ap[1] = a;
				c->ap[2] = in;
			}
			comp[b] = nx_l_signal(L, NX_ENG_DVE);
		}
		/* POOL: across the partitions, the init value, the cast, the store */
		nx_lsync dv = nx_l_signal(L, NX_ENG_DVE);
		nx_l_wait(L, NX_ENG_POOL, &dv);
		nx_l_wait(L, NX_ENG_POOL, &stores); /* the out tile's previous store */
		if (P > 1) {
			nx_insn *pr = nx_l_emit(L, NX_ENG_POOL, NX_I_PARTITION_REDUCE);
			pr->func = (uint8_t)alu;
			pr->ap[0] = acc;
			pr->ap[1] = acc;
		}
		nx_ap a0 = nx_ap_sbuf(NX_DT_F32, 0, 1, base + o_acc, 1, s1, cn);
		if (k > 1) { /* the k column groups of partition 0 */
			int32_t sk[2] = {1, (int32_t)C};
			uint32_t cg[2] = {(uint32_t)C, (uint32_t)k};
			a0 = nx_ap_sbuf(NX_DT_F32, 0, 1, base + o_part, 1, s1, cn);
			nx_insn *r = nx_l_emit(L, NX_ENG_POOL, NX_I_TENSOR_REDUCE);
			r->func = (uint8_t)alu;
			r->iarg[0] = 1;
			r->ap[0] = a0;
			r->ap[1] = nx_ap_sbuf(NX_DT_F32, 0, 1, base + o_acc, 2, sk, cg);
		}
		nx_ap o = nx_ap_sbuf(out->dt, 0, 1, base + o_out, 1, s1, cn);
		nx_insn *c = nx_l_emit(L, NX_ENG_POOL, NX_I_TENSOR_TENSOR);
		c->func = (uint8_t)alu;
		c->ap[0] = o;
		c->ap[1] = a0;
		c->ap[2] = nx_ap_sbuf(init->dt, 0, 1, base + o_init, 1, s0, cn);
		pool = nx_l_signal(L, NX_ENG_POOL);
		nx_lsync y = nx_l_dma_q(L, NX_ENG_POOL, qs, nx_ap_hbm(out->dt, out->buf->off + c0 * osz, 1, w, 1, s1, cn), o);
		nx_l_max(&stores, &y);
	}
	nx_l_max(&x->buf->war, &loads);
	nx_l_max(&init->buf->war, &loads);
	nx_l_max(&out->buf->written, &stores);
	nx_l_max(&out->buf->war, &stores);
	nx_lsync done = stores;
	nx_l_max(&done, &loads);
	nx_l_max(&done, &pool);
	for (int b = 0; b < NCB; b++)
		nx_l_max(&done, &comp[b]);
	nx_l_sbuf_end(L, h, &done);
	return NX_OK;
}
