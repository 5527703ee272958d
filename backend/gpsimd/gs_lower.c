/* backend/gpsimd/gs_lower.c — lowering onto GpSimd: which instructions go
 * there, the kernel built for each (gs_kernels.c), and the data movement
 * around its `call`: rows spread over partitions (P = 128 when there are
 * enough), as many rows per partition as one SBUF half holds, one DMA per
 * operand slot in (SP queues), the call on POOL, one DMA per result slot out
 * (POOL queues). An operand whose processed axis is not the minor one is
 * permuted through HBM first (and the result back).
 *
 * Kernel names are "g<4-digit index>_<instruction>", so name order (the
 * order of sg00/gpsimd/ in the tar, which `call` iarg0 indexes) is the order
 * of creation. */
#include "backend/gpsimd/gs.h"
#include "backend/lower_ext.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

nx_status nx_gs_user_kernel(const nx_custom_op *op, const char *name, uint8_t **bc, size_t *len, nx_diag *d);

typedef struct nx_gs_list {
	nx_neff_kernel *k;
	int n, cap;
} nx_gs_list;

/* ------------------------------------------------------------ custom ops */
static const nx_custom_op *custom_ops;
static int ncustom_ops;

void nx_gpsimd_set_custom_ops(const nx_custom_op *ops, int n)
{
	custom_ops = ops;
	ncustom_ops = n;
}

const nx_custom_op *nx_gpsimd_custom_op(const char *name)
{
	for (int k = 0; name && k < ncustom_ops; k++)
		if (!strcmp(custom_ops[k].name, name))
			return &custom_ops[k];
	return NULL;
}

/* ------------------------------------------------------------ selection */
bool nx_gpsimd_supports(nx_opcode op)
{
	return op == NX_OP_SORT || op == NX_OP_TOPK || op == NX_OP_MAP || op == NX_OP_REDUCE_WINDOW || op == NX_OP_SELECT_AND_SCATTER ||
	       op == NX_OP_SCATTER || op == NX_OP_REDUCE;
}

static bool simple_reducer(const nx_inst *i)
{
	const nx_inst *r = i->ncalled == 1 ? i->called[0]->root : NULL;
	if (!r || r->noperands != 2 || r->operands[0]->op != NX_OP_PARAMETER || r->operands[1]->op != NX_OP_PARAMETER)
		return false;
	bool pred = r->shape->type == NX_PRED;
	return r->op == NX_OP_ADD || r->op == NX_OP_MULTIPLY || r->op == NX_OP_MAXIMUM || r->op == NX_OP_MINIMUM ||
	       (pred && (r->op == NX_OP_AND || r->op == NX_OP_OR));
}

static bool types_ok(const nx_inst *i)
{
	for (int k = 0; k < i->noperands; k++)
		if (!nx_shape_is_array(i->operands[k]->shape) || !nx_gs_type_ok(i->operands[k]->shape->type))
			return false;
	if (nx_shape_is_tuple(i->shape)) {
		for (int k = 0; k < i->shape->ntuple; k++)
			if (!nx_shape_is_array(i->shape->tuple[k]) || !nx_gs_type_ok(i->shape->tuple[k]->type))
				return false;
		return true;
	}
	return nx_gs_type_ok(i->shape->type);
}

/* the one window dimension a reduce-window works along, -1 if not one */
static int window_axis(const nx_inst *i)
{
	const nx_window *w = &i->a.window;
	int ax = -1;
	for (int d = 0; d < w->ndims; d++) {
		const nx_window_dim *wd = &w->dims[d];
		if ((wd->base_dilation > 1) || (wd->window_dilation > 1) || wd->reversal)
			return -1;
		bool trivial = wd->size == 1 && wd->stride <= 1 && wd->pad_lo == 0 && wd->pad_hi == 0;
		if (trivial)
			continue;
		if (ax >= 0 || wd->pad_lo < 0 || wd->pad_hi < 0)
			return -1;
		ax = d;
	}
	return ax < 0 && w->ndims > 0 ? w->ndims - 1 : ax;
}

nx_gs_kind nx_gpsimd_kind(const nx_lower *L, const nx_inst *i)
{
	if (i->op == NX_OP_CUSTOM_CALL)
		return nx_gpsimd_custom_op(i->a.custom_call_target) ? NX_GS_CUSTOM : NX_GS_NONE;
	if (i->op == NX_OP_TOPK)
		return types_ok(i) && nx_shape_is_tuple(i->shape) && i->shape->ntuple == 2 ? NX_GS_TOPK : NX_GS_NONE;
	if (!nx_gpsimd_supports(i->op) || !types_ok(i) || i->ncalled < 1)
		return NX_GS_NONE;
	switch (i->op) {
	case NX_OP_SORT:
		return i->noperands >= 1 && i->noperands <= NX_GS_MAXSLOT / 2 ? NX_GS_SORT : NX_GS_NONE;
	case NX_OP_MAP:
		return i->noperands >= 1 && i->noperands < NX_GS_MAXSLOT ? NX_GS_MAP : NX_GS_NONE;
	case NX_OP_REDUCE:
		if (i->noperands % 2 || i->noperands > 2 * (NX_GS_MAXSLOT / 3))
			return NX_GS_NONE;
		return i->noperands > 2 || !simple_reducer(i) ? NX_GS_REDUCE : NX_GS_NONE;
	case NX_OP_REDUCE_WINDOW:
		return i->noperands == 2 && window_axis(i) >= 0 ? NX_GS_CUMULATIVE : NX_GS_NONE;
	case NX_OP_SCATTER: {
		const nx_scatter_dnums *sd = &i->a.scatter;
		if (i->noperands != 3 || sd->input_batching_dims.n)
			return NX_GS_NONE;
		/* the one-hot matmul kernel (backend/kernels/scatter_add.c) when
		 * its cost estimate is below ours */
		if (nx_l_scatter_pe_ok(L, i))
			return NX_GS_NONE;
		/* the DMA path (lower_data.c) takes one runtime index with assignment or add */
		bool dma = sd->scatter_dims_to_operand_dims.n == 1 && nx_shape_elems(i->operands[1]->shape) == 1 &&
		           (simple_reducer(i) ? i->called[0]->root->op == NX_OP_ADD
		                              : i->called[0]->root->op == NX_OP_PARAMETER);
		return dma ? NX_GS_NONE : NX_GS_SCATTER;
	}
	case NX_OP_SELECT_AND_SCATTER:
		return i->ncalled == 2 && i->a.window.ndims == i->operands[0]->shape->rank ? NX_GS_SELSCAT : NX_GS_NONE;
	default:
		return NX_GS_NONE;
	}
}

/* ------------------------------------------------------------ kernels */
static int add_kernel(nx_lower *L, const char *stem, uint8_t *bc, size_t len, char *name, size_t namelen)
{
	nx_gs_list *gl = L->gs;
	if (!gl) {
		gl = L->gs = nx_arena_alloc(&L->a, sizeof *gl);
		memset(gl, 0, sizeof *gl);
	}
	if (gl->n == gl->cap) {
		int nc = gl->cap ? 2 * gl->cap : 16;
		nx_neff_kernel *k = nx_arena_alloc(&L->a, sizeof *k * (size_t)nc);
		if (gl->n)
			memcpy(k, gl->k, sizeof *k * (size_t)gl->n);
		gl->k = k, gl->cap = nc;
	}
	uint8_t *copy = nx_arena_alloc(&L->a, len ? len : 1);
	memcpy(copy, bc, len);
	char *nm = nx_arena_strndup(&L->a, name, strlen(name));
	(void)stem;
	(void)namelen;
	gl->k[gl->n] = (nx_neff_kernel){nm, copy, len};
	return gl->n++;
}

static void kernel_name(const nx_lower *L, const nx_inst *i, char *buf, size_t n)
{
	int idx = L->gs ? L->gs->n : 0;
	int w = snprintf(buf, n, "g%04d_", idx);
	for (const char *p = i->name; *p && (size_t)w + 1 < n && w < 60; p++)
		buf[w++] = (char)((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ? *p : '_');
	buf[w] = 0;
}

/* Builds the kernel for k (or the user's), returns its index or -1. */
static int make_kernel(nx_lower *L, const nx_gs_kspec *k)
{
	char name[80];
	uint8_t *bc = NULL;
	size_t len = 0;
	if (L->gs && L->gs->n >= NX_GS_MAX_KERNELS) {
		nx_l_err(L, "more than %d GpSimd kernels", NX_GS_MAX_KERNELS);
		return -1;
	}
	const char *why = nx_llvm_load();
	if (why) {
		nx_l_err(L, "%s", why);
		return -1;
	}
	kernel_name(L, k->inst, name, sizeof name);
	nx_status rc;
	if (k->kind == NX_GS_CUSTOM) {
		rc = nx_gs_user_kernel(nx_gpsimd_custom_op(k->inst->a.custom_call_target), name, &bc, &len, L->d);
	} else {
		nx_gs g;
		nx_gs_begin(&g, name, L->d);
		rc = nx_gs_build(&g, k, name);
		if (rc == NX_OK)
			rc = nx_gs_finish(&g, &bc, &len);
		else
			nx_gs_abort(&g);
	}
	if (rc != NX_OK) {
		free(bc);
		return -1;
	}
	int idx = add_kernel(L, name, bc, len, name, sizeof name);
	free(bc);
	L->st.kernels++;
	return idx;
}

void nx_gpsimd_program(const nx_lower *L, nx_neff_program *p)
{
	p->ngpsimd = L->gs ? L->gs->n : 0;
	p->gpsimd = L->gs ? L->gs->k : NULL;
}

/* ------------------------------------------------------------ data movement */
typedef struct gs_io {
	nx_lval *in, *out; /* DMA'd into the slot before / out of it after the call */
} gs_io;

static bool per_part_slot(const nx_gs_kspec *k, int s)
{
	return (k->kind == NX_GS_REDUCE && s >= k->nin && s < 2 * k->nin) || (k->kind == NX_GS_CUMULATIVE && s == 1);
}

static nx_ap slot_ap(const nx_gs_kspec *k, int s, nx_dtype dt, int P, int64_t base, int64_t T)
{
	int64_t R = k->slot[s].R, rows = per_part_slot(k, s) ? 1 : T;
	int32_t st[2] = {(int32_t)R, 1};
	uint32_t ct[2] = {(uint32_t)rows, (uint32_t)R};
	return nx_ap_sbuf(dt, 0, P, base + nx_gs_slot_off(k, s, T), 2, st, ct);
}

/* One chunk: O = P*T rows (P <= 128). */
static nx_status run_chunk(nx_lower *L, const nx_gs_kspec *k, int kidx, int lanes, const gs_io *io, int64_t P, int64_t T)
{
	int64_t bytes = nx_gs_region_bytes(k, T), base;
	int h;
	if (bytes > L->sbuf_half || bytes > INT32_MAX)
		return nx_l_err(L, "GpSimd kernel of %lld bytes per partition does not fit an SBUF half", (long long)bytes);
	nx_status rc = nx_l_sbuf_begin(L, bytes, &base, &h);
	if (rc)
		return rc;
	nx_lsync loads, prev;
	memset(&loads, 0, sizeof loads);
	nx_l_wait(L, NX_ENG_SP, &L->sbuf_free[h]);
	for (int s = 0; s < k->nslot; s++) {
		if (!io[s].in)
			continue;
		nx_lval *v = io[s].in;
		nx_l_wait(L, NX_ENG_SP, &v->buf->written);
		int64_t R = k->slot[s].R, rows = per_part_slot(k, s) ? 1 : T;
		int32_t s2[2] = {(int32_t)R, 1};
		uint32_t c2[2] = {(uint32_t)rows, (uint32_t)R};
		nx_ap hb = nx_ap_hbm(v->dt, v->buf->off, (int)P, per_part_slot(k, s) ? 0 : T * R, 2, s2, c2);
		nx_lsync y = nx_l_dma(L, NX_ENG_SP, slot_ap(k, s, v->dt, (int)P, base, T), hb);
		nx_l_max(&loads, &y);
	}
	for (int s = 0; s < k->nslot; s++)
		if (io[s].in)
			nx_l_max(&io[s].in->buf->war, &loads);
	prev = loads;
	nx_l_max(&prev, &L->sbuf_free[h]);
	nx_l_wait(L, NX_ENG_POOL, &prev);
	if (k->kind == NX_GS_SCATTER && k->pdim >= 0) { /* the part's first row, for the kernel (slot 3) */
		nx_insn *r0 = nx_l_emit(L, NX_ENG_POOL, NX_I_IOTA);
		r0->ap[0] = slot_ap(k, 3, NX_DT_S32, (int)P, base, T);
		r0->iarg[0] = (int32_t)k->r0;
	}
	nx_insn *c = nx_l_emit(L, NX_ENG_POOL, NX_I_CALL);
	c->iarg[0] = kidx;
	c->iarg[1] = 1;
	c->iarg[2] = lanes;
	if (k->kind == NX_GS_CUSTOM) { /* ap0 the result, then the operands, in their types */
		int o = k->nslot - 1;
		c->ap[0] = slot_ap(k, o, (nx_dtype)nx_lower_dtype(k->slot[o].t), (int)P, base, T);
		for (int s = 0; s < o; s++)
			c->ap[1 + s] = slot_ap(k, s, (nx_dtype)nx_lower_dtype(k->slot[s].t), (int)P, base, T);
	} else { /* the region as bytes; rows (stride 0) carry T to the kernel */
		int32_t st[2] = {0, 1};
		uint32_t ct[2] = {(uint32_t)T, (uint32_t)bytes};
		c->ap[0] = nx_ap_sbuf(NX_DT_U8, 0, (int)P, base, 2, st, ct);
	}
	prev = nx_l_signal(L, NX_ENG_POOL);
	nx_lsync stores = prev;
	for (int s = 0; s < k->nslot; s++) {
		if (!io[s].out)
			continue;
		nx_lval *v = io[s].out;
		nx_l_wait(L, NX_ENG_POOL, &v->buf->war);
		int64_t R = k->slot[s].R;
		int32_t s2[2] = {(int32_t)R, 1};
		uint32_t c2[2] = {(uint32_t)T, (uint32_t)R};
		nx_ap ho = nx_ap_hbm(v->dt, v->buf->off, (int)P, T * R, 2, s2, c2);
		nx_lsync y = nx_l_dma(L, NX_ENG_POOL, ho, slot_ap(k, s, v->dt, (int)P, base, T));
		nx_l_max(&v->buf->written, &y);
		nx_l_max(&v->buf->war, &y);
		nx_l_max(&stores, &y);
	}
	nx_l_max(&stores, &loads);
	nx_l_sbuf_end(L, h, &stores);
	return NX_OK;
}

static nx_lval *piece(nx_lower *L, nx_lval *v, int64_t off, int64_t n)
{
	return nx_l_piece(L, v, off, nx_shape_array(&L->a, v->shape->type, 1, &n));
}

/* All rows: O rows, chunks of up to 128*Tm rows, each split into a full
 * 128-partition part and a remainder of < 128 rows. */
static nx_status run_rows(nx_lower *L, const nx_gs_kspec *k, int kidx, int lanes, const gs_io *io, int64_t O)
{
	if (O == 0)
		return NX_OK;
	int64_t Tm = 1;
	if (nx_gs_region_bytes(k, 1) > L->sbuf_half)
		return nx_l_err(L, "instruction '%s': one row of the GpSimd kernel needs %lld bytes, more than an SBUF half",
		                k->inst->name, (long long)nx_gs_region_bytes(k, 1));
	while (Tm < (1 << 20) && nx_gs_region_bytes(k, 2 * Tm) <= L->sbuf_half && 128 * Tm < O)
		Tm *= 2;
	while (nx_gs_region_bytes(k, Tm + 1) <= L->sbuf_half && 128 * Tm < O && Tm < (1 << 22))
		Tm++;
	for (int64_t a = 0; a < O;) {
		int64_t len = O - a < 128 * Tm ? O - a : 128 * Tm;
		int64_t P = len >= 128 ? 128 : len, T = len / P;
		len = P * T;
		gs_io pio[NX_GS_MAXSLOT];
		for (int s = 0; s < k->nslot; s++) {
			bool pp = per_part_slot(k, s);
			int64_t R = k->slot[s].R;
			pio[s].in = io[s].in && !pp ? piece(L, io[s].in, a * R, len * R) : io[s].in;
			pio[s].out = io[s].out ? piece(L, io[s].out, a * R, len * R) : NULL;
		}
		nx_status rc = run_chunk(L, k, kidx, lanes, pio, P, T);
		for (int s = 0; s < k->nslot; s++) {
			if (pio[s].in && pio[s].in != io[s].in)
				nx_l_piece_done(io[s].in, pio[s].in);
			if (pio[s].out)
				nx_l_piece_done(io[s].out, pio[s].out);
		}
		if (rc)
			return rc;
		a += len;
	}
	return NX_OK;
}

/* v with its dimensions permuted (result dim k = v's dim perm[k]), through HBM. */
static nx_status permuted(nx_lower *L, nx_lval *v, const int *perm, nx_lval **res)
{
	const nx_shape *s = v->shape;
	bool id = true;
	for (int d = 0; d < s->rank; d++)
		id &= perm[d] == d;
	if (id) {
		*res = v;
		return NX_OK;
	}
	int64_t dims[NX_MAX_RANK];
	for (int d = 0; d < s->rank; d++)
		dims[d] = s->dims[perm[d]];
	nx_lval *o = nx_l_newval(L, nx_shape_array(&L->a, s->type, s->rank, dims));
	nx_lview src = nx_l_view_of(v), p = src;
	for (int d = 0; d < s->rank; d++)
		p.dims[d] = src.dims[perm[d]], p.stride[d] = src.stride[perm[d]];
	*res = o;
	return nx_l_copy_view_split(L, &p, o);
}

/* the permutation moving the dims marked in `last` to the end, in order */
static void perm_last(int rank, const bool *last, int *perm)
{
	int n = 0;
	for (int d = 0; d < rank; d++)
		if (!last[d])
			perm[n++] = d;
	for (int d = 0; d < rank; d++)
		if (last[d])
			perm[n++] = d;
}

static void perm_inverse(int rank, const int *perm, int *inv)
{
	for (int d = 0; d < rank; d++)
		inv[perm[d]] = d;
}

static nx_lval *tuple_of(nx_lower *L, const nx_inst *i, int n)
{
	nx_lval *t = nx_arena_alloc(&L->a, sizeof *t);
	memset(t, 0, sizeof *t);
	t->shape = i->shape;
	t->ntuple = n;
	t->tuple = nx_arena_alloc(&L->a, (size_t)n * sizeof *t->tuple);
	for (int k = 0; k < n; k++)
		t->tuple[k] = nx_l_newval(L, i->shape->tuple[k]);
	return t;
}

static const nx_shape *result_shape(const nx_inst *i, int k)
{
	return nx_shape_is_tuple(i->shape) ? i->shape->tuple[k] : i->shape;
}

/* ------------------------------------------------------------ families */
static nx_status lower_sort(nx_lower *L, const nx_inst *i, nx_lval *const *ops, nx_lval **out)
{
	int n = i->noperands;
	const nx_shape *s = ops[0]->shape;
	int64_t dim = i->a.dimensions.n ? i->a.dimensions.v[0] : s->rank - 1;
	nx_gs_kspec k = {.kind = NX_GS_SORT, .inst = i, .nslot = 2 * n, .nin = n};
	bool last[NX_MAX_RANK] = {0};
	int perm[NX_MAX_RANK], inv[NX_MAX_RANK];
	if (s->rank == 0) {
		*out = n == 1 ? ops[0] : NULL;
		if (n == 1)
			ops[0]->buf->refs++;
		return n == 1 ? NX_OK : nx_l_err(L, "sort of scalars");
	}
	last[dim] = true;
	perm_last(s->rank, last, perm);
	perm_inverse(s->rank, perm, inv);
	int64_t R = s->dims[dim], O = R ? nx_shape_elems(s) / R : 0;
	for (int j = 0; j < n; j++) {
		k.slot[j] = (nx_gs_slot){ops[j]->shape->type, R};
		k.slot[n + j] = k.slot[j];
	}
	*out = n == 1 ? nx_l_newval(L, i->shape) : tuple_of(L, i, n);
	if (O == 0)
		return NX_OK;
	int kidx = make_kernel(L, &k);
	if (kidx < 0)
		return L->d->status ? L->d->status : NX_ERR_INPUT;
	gs_io io[NX_GS_MAXSLOT] = {{0}};
	nx_lval *tmp[NX_GS_MAXSLOT] = {0};
	for (int j = 0; j < n; j++) {
		nx_status rc = permuted(L, ops[j], perm, &io[j].in);
		if (rc)
			return rc;
		nx_lval *res = n == 1 ? *out : (*out)->tuple[j];
		io[j].out = io[j].in == ops[j] ? res : (tmp[j] = nx_l_newval(L, io[j].in->shape));
	}
	nx_status rc = run_rows(L, &k, kidx, 1, io, O);
	for (int j = 0; j < n && rc == NX_OK; j++) {
		if (io[j].in != ops[j])
			nx_l_release_buf(L, io[j].in->buf);
		if (tmp[j]) {
			nx_lval *res = n == 1 ? *out : (*out)->tuple[j], *back;
			rc = permuted(L, tmp[j], inv, &back);
			if (rc == NX_OK) { /* copy into the result buffer */
				nx_lview v = nx_l_view_of(back);
				rc = nx_l_copy_view_split(L, &v, res);
				nx_l_release_buf(L, back->buf);
			}
			nx_l_release_buf(L, tmp[j]->buf);
		}
	}
	return rc;
}

static nx_status lower_topk(nx_lower *L, const nx_inst *i, nx_lval *const *ops, nx_lval **out)
{
	const nx_shape *s = ops[0]->shape;
	int64_t R = s->dims[s->rank - 1], K = i->shape->tuple[0]->dims[s->rank - 1], O = R ? nx_shape_elems(s) / R : 0;
	bool largest = true;
	for (int k = 0; k < i->a.nunknown; k++)
		if (!strcmp(i->a.unknown[k].key, "largest"))
			largest = strcmp(i->a.unknown[k].value, "false") != 0;
	nx_gs_kspec k = {.kind = NX_GS_TOPK, .inst = i, .nslot = 3, .nin = 1, .largest = largest};
	k.slot[0] = (nx_gs_slot){s->type, R};
	k.slot[1] = (nx_gs_slot){s->type, K};
	k.slot[2] = (nx_gs_slot){NX_S32, K};
	*out = tuple_of(L, i, 2);
	if (O == 0 || K == 0)
		return NX_OK;
	int kidx = make_kernel(L, &k);
	if (kidx < 0)
		return L->d->status ? L->d->status : NX_ERR_INPUT;
	gs_io io[3] = {{ops[0], NULL}, {NULL, (*out)->tuple[0]}, {NULL, (*out)->tuple[1]}};
	return run_rows(L, &k, kidx, 1, io, O);
}

static nx_status lower_map(nx_lower *L, const nx_inst *i, nx_lval *const *ops, nx_lval **out)
{
	int n = i->noperands;
	int64_t N = nx_shape_elems(i->shape), R = N, O = 1;
	/* rows of up to 2048 elements so that large maps spread over partitions */
	for (int64_t c = 2048; c >= 1; c--)
		if (N % c == 0) {
			R = c, O = N / c;
			break;
		}
	nx_gs_kspec k = {.kind = NX_GS_MAP, .inst = i, .nslot = n + 1, .nin = n};
	gs_io io[NX_GS_MAXSLOT] = {{0}};
	for (int j = 0; j < n; j++) {
		k.slot[j] = (nx_gs_slot){ops[j]->shape->type, R};
		io[j].in = ops[j];
	}
	k.slot[n] = (nx_gs_slot){i->shape->type, R};
	*out = nx_l_newval(L, i->shape);
	io[n].out = *out;
	if (N == 0)
		return NX_OK;
	int kidx = make_kernel(L, &k);
	if (kidx < 0)
		return L->d->status ? L->d->status : NX_ERR_INPUT;
	return run_rows(L, &k, kidx, NX_GS_MAX_LANES, io, O);
}

static nx_status lower_reduce(nx_lower *L, const nx_inst *i, nx_lval *const *ops, nx_lval **out)
{
	int n = i->noperands / 2;
	const nx_shape *s = ops[0]->shape;
	bool red[NX_MAX_RANK] = {0};
	int perm[NX_MAX_RANK];
	for (int d = 0; d < i->a.dimensions.n; d++)
		red[i->a.dimensions.v[d]] = true;
	perm_last(s->rank, red, perm);
	int64_t R = 1;
	for (int d = 0; d < s->rank; d++)
		if (red[d])
			R *= s->dims[d];
	int64_t O = R ? nx_shape_elems(s) / R : nx_shape_elems(result_shape(i, 0));
	nx_gs_kspec k = {.kind = NX_GS_REDUCE, .inst = i, .nslot = 3 * n, .nin = n};
	gs_io io[NX_GS_MAXSLOT] = {{0}};
	*out = n == 1 ? nx_l_newval(L, i->shape) : tuple_of(L, i, n);
	for (int j = 0; j < n; j++) {
		k.slot[j] = (nx_gs_slot){ops[j]->shape->type, R};
		k.slot[n + j] = (nx_gs_slot){ops[n + j]->shape->type, 1};
		k.slot[2 * n + j] = (nx_gs_slot){result_shape(i, j)->type, 1};
		nx_status rc = permuted(L, ops[j], perm, &io[j].in);
		if (rc)
			return rc;
		io[n + j].in = ops[n + j];
		io[2 * n + j].out = n == 1 ? *out : (*out)->tuple[j];
	}
	if (O == 0)
		return NX_OK;
	int kidx = make_kernel(L, &k);
	if (kidx < 0)
		return L->d->status ? L->d->status : NX_ERR_INPUT;
	nx_status rc = run_rows(L, &k, kidx, 1, io, O);
	for (int j = 0; j < n; j++)
		if (io[j].in != ops[j])
			nx_l_release_buf(L, io[j].in->buf);
	return rc;
}

static nx_status lower_cumulative(nx_lower *L, const nx_inst *i, nx_lval *const *ops, nx_lval **out)
{
	int ax = window_axis(i);
	const nx_shape *s = ops[0]->shape;
	const nx_window_dim *wd = &i->a.window.dims[ax];
	bool last[NX_MAX_RANK] = {0};
	int perm[NX_MAX_RANK], inv[NX_MAX_RANK];
	last[ax] = true;
	perm_last(s->rank, last, perm);
	perm_inverse(s->rank, perm, inv);
	int64_t R = s->dims[ax], Ro = i->shape->dims[ax], O = R ? nx_shape_elems(s) / R : 0;
	nx_gs_kspec k = {.kind = NX_GS_CUMULATIVE, .inst = i, .nslot = 3, .nin = 1,
	                 .win = wd->size, .wstride = wd->stride > 0 ? wd->stride : 1, .wpad = wd->pad_lo};
	k.slot[0] = (nx_gs_slot){s->type, R};
	k.slot[1] = (nx_gs_slot){ops[1]->shape->type, 1};
	k.slot[2] = (nx_gs_slot){i->shape->type, Ro};
	*out = nx_l_newval(L, i->shape);
	if (O == 0 || Ro == 0)
		return NX_OK;
	gs_io io[3] = {{0}};
	nx_status rc = permuted(L, ops[0], perm, &io[0].in);
	if (rc)
		return rc;
	io[1].in = ops[1];
	bool moved = io[0].in != ops[0];
	int64_t od[NX_MAX_RANK];
	for (int d = 0; d < s->rank; d++)
		od[d] = i->shape->dims[perm[d]];
	nx_lval *res = moved ? nx_l_newval(L, nx_shape_array(&L->a, i->shape->type, s->rank, od)) : *out;
	io[2].out = res;
	int kidx = make_kernel(L, &k);
	if (kidx < 0)
		return L->d->status ? L->d->status : NX_ERR_INPUT;
	rc = run_rows(L, &k, kidx, 1, io, O);
	if (moved && rc == NX_OK) {
		nx_lval *back;
		rc = permuted(L, res, inv, &back);
		if (rc == NX_OK) {
			nx_lview v = nx_l_view_of(back);
			rc = nx_l_copy_view_split(L, &v, *out);
			nx_l_release_buf(L, back->buf);
		}
		nx_l_release_buf(L, res->buf);
		nx_l_release_buf(L, io[0].in->buf);
	}
	return rc;
}

/* A scatter over rows [r0, r0 + n) of operand dim pdim (of pfull). */
typedef struct gs_part {
	int pdim;
	int64_t pfull, r0;
} gs_part;

/* scatter and select-and-scatter: whole tensors in one partition (*kcache:
 * a kernel built for the same shapes, or -1; part: NULL or the operand rows
 * this scatter covers) */
static nx_status lower_whole(nx_lower *L, nx_gs_kind kind, const nx_inst *i, nx_lval *const *ops, nx_lval **out,
                             int *kcache, const gs_part *part)
{
	nx_gs_kspec k = {.kind = kind, .inst = i, .nslot = kind == NX_GS_SCATTER ? 3 : 4, .nin = 3, .pdim = -1};
	if (part) { /* slot 3: r0, written by an iota on POOL before the call */
		k.pdim = part->pdim, k.pfull = part->pfull, k.r0 = part->r0;
		k.nslot = 4;
		k.slot[3] = (nx_gs_slot){NX_S32, 1};
	}
	gs_io io[4] = {{0}};
	for (int j = 0; j < 3; j++) {
		k.slot[j] = (nx_gs_slot){ops[j]->shape->type, nx_shape_elems(ops[j]->shape)};
		io[j].in = ops[j];
	}
	*out = nx_l_newval(L, i->shape);
	if (kind == NX_GS_SCATTER)
		io[0].out = *out;
	else {
		k.slot[3] = (nx_gs_slot){i->shape->type, nx_shape_elems(i->shape)};
		io[3].out = *out;
	}
	if (nx_shape_elems(i->shape) == 0)
		return NX_OK;
	for (int j = 0; j < k.nslot; j++)
		if (k.slot[j].R == 0)
			k.slot[j].R = 1; /* empty updates: the kernel copies the operand */
	if (nx_gs_region_bytes(&k, 1) > L->sbuf_half)
		return nx_l_err(L, "%s: operands of %lld bytes do not fit one SBUF partition half (GpSimd runs it in one partition)",
		                nx_opcode_name(i->op), (long long)nx_gs_region_bytes(&k, 1));
	int kidx = *kcache >= 0 ? *kcache : (*kcache = make_kernel(L, &k));
	if (kidx < 0)
		return L->d->status ? L->d->status : NX_ERR_INPUT;
	if (kind == NX_GS_SCATTER && nx_shape_elems(ops[2]->shape) == 0) {
		nx_lview v = nx_l_view_of(ops[0]);
		return nx_l_copy_view_split(L, &v, *out);
	}
	return run_rows(L, &k, kidx, 1, io, 1);
}

/* The operand dimension along which a scatter (select-and-scatter) splits
 * into independent parts, and the matching dimension of the updates
 * (source): a window dimension the updates cover whole and no index
 * addresses (a dimension with a size-1, stride-1, unpadded window). -1: none. */
static int split_dim(nx_gs_kind kind, const nx_inst *i, int *ud)
{
	const nx_shape *os = i->operands[0]->shape;
	int best = -1;
	if (kind == NX_GS_SCATTER) {
		const nx_scatter_dnums *sd = &i->a.scatter;
		const nx_shape *us = i->operands[2]->shape;
		int k = 0;
		for (int d = 0; d < os->rank; d++) {
			bool ins = false, idx = false;
			for (int j = 0; j < sd->inserted_window_dims.n; j++)
				ins |= sd->inserted_window_dims.v[j] == d;
			if (ins)
				continue;
			for (int j = 0; j < sd->scatter_dims_to_operand_dims.n; j++)
				idx |= sd->scatter_dims_to_operand_dims.v[j] == d;
			int u = (int)sd->update_window_dims.v[k++];
			if (!idx && us->dims[u] == os->dims[d] && os->dims[d] > 1 && (best < 0 || os->dims[d] > os->dims[best]))
				best = d, *ud = u;
		}
		return best;
	}
	for (int d = 0; d < os->rank; d++) {
		const nx_window_dim *w = &i->a.window.dims[d];
		if (w->size == 1 && w->stride <= 1 && !w->pad_lo && !w->pad_hi && w->window_dilation <= 1 &&
		    w->base_dilation <= 1 && os->dims[d] > 1 && (best < 0 || os->dims[d] > os->dims[best]))
			best = d, *ud = d;
	}
	return best;
}

static nx_inst *fake_operand(nx_lower *L, const nx_inst *o, int d, int64_t n)
{
	nx_inst *f = nx_arena_alloc(&L->a, sizeof *f);
	*f = *o;
	f->shape = nx_shape_copy(&L->a, o->shape);
	f->shape->dims[d] = n;
	return f;
}

/* slice [c0, c0 + n) of dimension d of v into a fresh value, or back */
static nx_status slice_copy(nx_lower *L, nx_lval *v, int d, int64_t c0, nx_lval *part, bool into_part)
{
	nx_lview s = nx_l_view_of(v), p = nx_l_view_of(part);
	s.off = c0 * s.stride[d];
	s.dims[d] = p.dims[d];
	const nx_lview *src = into_part ? &s : &p, *dst = into_part ? &p : &s;
	nx_lsync y, w = dst->buf->war;
	nx_status rc = nx_l_dma_vv(L, src, dst, &w, &y);
	nx_l_max(&dst->buf->written, &y);
	nx_l_max(&dst->buf->war, &y);
	return rc;
}

typedef struct split_cache split_cache;
static nx_status lower_rows(nx_lower *L, const nx_inst *i, nx_lval *const *ops, nx_lval **out, split_cache *cache);

/* kernels built for part shapes (operand, updates/source), reused by equal parts */
typedef struct split_cache {
	int n;
	const nx_shape *op[8], *up[8];
	int kidx[8];
} split_cache;

static bool same_dims(const nx_shape *a, const nx_shape *b)
{
	return a->rank == b->rank && !memcmp(a->dims, b->dims, sizeof *a->dims * (size_t)a->rank);
}

static int *cache_slot(split_cache *c, const nx_shape *op, const nx_shape *up)
{
	for (int k = 0; k < c->n; k++)
		if (same_dims(c->op[k], op) && same_dims(c->up[k], up))
			return &c->kidx[k];
	if (c->n == 8)
		return NULL;
	c->op[c->n] = op, c->up[c->n] = up, c->kidx[c->n] = -1;
	return &c->kidx[c->n++];
}

/* scatter / select-and-scatter, split along independent dimensions
 * (recursively, one at a time) into parts that fit one SBUF partition half */
static nx_status lower_split_c(nx_lower *L, nx_gs_kind kind, const nx_inst *i, nx_lval *const *ops, nx_lval **out,
                               split_cache *cache)
{
	int ui0 = kind == NX_GS_SCATTER ? 2 : 1, none = -1;
	int *kc = cache_slot(cache, i->operands[0]->shape, i->operands[ui0]->shape);
	if (!kc)
		kc = &none;
	nx_gs_kspec k = {.kind = kind, .inst = i, .nslot = kind == NX_GS_SCATTER ? 3 : 4, .nin = 3};
	for (int j = 0; j < 3; j++)
		k.slot[j] = (nx_gs_slot){ops[j]->shape->type, nx_shape_elems(ops[j]->shape) ? nx_shape_elems(ops[j]->shape) : 1};
	if (kind == NX_GS_SELSCAT)
		k.slot[3] = (nx_gs_slot){i->shape->type, k.slot[0].R};
	int ud = -1, d = split_dim(kind, i, &ud);
	bool fits = nx_gs_region_bytes(&k, 1) <= L->sbuf_half;
	if (fits || nx_shape_elems(i->shape) == 0)
		return lower_whole(L, kind, i, ops, out, kc, NULL);
	if (d < 0) /* too large, no independent dimension: a scatter in parts of rows */
		return kind == NX_GS_SCATTER ? lower_rows(L, i, ops, out, cache) : lower_whole(L, kind, i, ops, out, kc, NULL);
	const nx_shape *os = ops[0]->shape, *us = ops[kind == NX_GS_SCATTER ? 2 : 1]->shape;
	int ui = kind == NX_GS_SCATTER ? 2 : 1;
	int64_t D = os->dims[d], lo = 1, hi = D;
	while (lo < hi) { /* the largest part that fits */
		int64_t m = (lo + hi + 1) / 2;
		nx_gs_kspec t = k;
		t.slot[0].R = k.slot[0].R / D * m;
		t.slot[ui].R = k.slot[ui].R / us->dims[ud] * m;
		if (kind == NX_GS_SELSCAT)
			t.slot[3].R = t.slot[0].R;
		if (nx_gs_region_bytes(&t, 1) <= L->sbuf_half)
			lo = m;
		else
			hi = m - 1;
	}
	*out = nx_l_newval(L, i->shape);
	for (int64_t c0 = 0; c0 < D; c0 += lo) {
		int64_t n = D - c0 < lo ? D - c0 : lo;
		nx_inst *f = nx_arena_alloc(&L->a, sizeof *f);
		*f = *i;
		f->operands = nx_arena_alloc(&L->a, sizeof *f->operands * (size_t)i->noperands);
		memcpy(f->operands, i->operands, sizeof *f->operands * (size_t)i->noperands);
		f->operands[0] = fake_operand(L, i->operands[0], d, n);
		f->operands[ui] = fake_operand(L, i->operands[ui], ud, n);
		f->shape = f->operands[0]->shape;
		nx_lval *part[3] = {nx_l_newval(L, f->operands[0]->shape), ops[1], ops[2]}, *po = NULL;
		part[ui] = nx_l_newval(L, f->operands[ui]->shape);
		nx_status rc = slice_copy(L, ops[0], d, c0, part[0], true);
		if (rc == NX_OK)
			rc = slice_copy(L, ops[ui], ud, c0, part[ui], true);
		if (rc == NX_OK)
			rc = lower_split_c(L, kind, f, part, &po, cache);
		if (rc == NX_OK)
			rc = slice_copy(L, *out, d, c0, po, false);
		nx_l_release_buf(L, part[0]->buf);
		nx_l_release_buf(L, part[ui]->buf);
		if (po)
			nx_l_release_buf(L, po->buf);
		if (rc)
			return rc;
	}
	return NX_OK;
}

/* a scatter whose operand alone is too large: parts of rows along an
 * indexed dimension with a window of 1 (an inserted dimension); every part
 * sees all indices and updates and applies those landing in it */
static nx_status lower_rows(nx_lower *L, const nx_inst *i, nx_lval *const *ops, nx_lval **out, split_cache *cache)
{
	const nx_scatter_dnums *sd = &i->a.scatter;
	const nx_shape *os = ops[0]->shape;
	int pd = -1;
	for (int j = 0; j < sd->scatter_dims_to_operand_dims.n; j++) {
		int64_t d = sd->scatter_dims_to_operand_dims.v[j];
		for (int q = 0; q < sd->inserted_window_dims.n; q++)
			if (sd->inserted_window_dims.v[q] == d && os->dims[d] > 1 && (pd < 0 || os->dims[d] > os->dims[pd]))
				pd = (int)d;
	}
	nx_gs_kspec k = {.kind = NX_GS_SCATTER, .inst = i, .nslot = 4, .nin = 3};
	for (int j = 0; j < 3; j++)
		k.slot[j] = (nx_gs_slot){ops[j]->shape->type, nx_shape_elems(ops[j]->shape) ? nx_shape_elems(ops[j]->shape) : 1};
	k.slot[3] = (nx_gs_slot){NX_S32, 1};
	int64_t D = pd >= 0 ? os->dims[pd] : 1, n = 0;
	for (int64_t lo = 1, hi = D; pd >= 0 && lo <= hi;) { /* the most rows that fit */
		int64_t m = (lo + hi) / 2;
		nx_gs_kspec t = k;
		t.slot[0].R = k.slot[0].R / D * m;
		if (nx_gs_region_bytes(&t, 1) <= L->sbuf_half)
			n = m, lo = m + 1;
		else
			hi = m - 1;
	}
	if (n == 0) {
		k.nslot = 3;
		return nx_l_err(L, "scatter: operands of %lld bytes do not fit one SBUF partition half and no part of them does "
		                   "(GpSimd runs scatter in one partition)", (long long)nx_gs_region_bytes(&k, 1));
	}
	*out = nx_l_newval(L, i->shape);
	for (int64_t r0 = 0; r0 < D; r0 += n) {
		int64_t m = D - r0 < n ? D - r0 : n;
		nx_inst *f = nx_arena_alloc(&L->a, sizeof *f);
		*f = *i;
		f->operands = nx_arena_alloc(&L->a, sizeof *f->operands * (size_t)i->noperands);
		memcpy(f->operands, i->operands, sizeof *f->operands * (size_t)i->noperands);
		f->operands[0] = fake_operand(L, i->operands[0], pd, m);
		f->shape = f->operands[0]->shape;
		nx_lval *part[3] = {nx_l_newval(L, f->shape), ops[1], ops[2]}, *po = NULL;
		gs_part pp = {pd, D, r0};
		int none = -1, *kc = cache_slot(cache, f->shape, ops[2]->shape);
		nx_status rc = slice_copy(L, ops[0], pd, r0, part[0], true);
		if (rc == NX_OK)
			rc = lower_whole(L, NX_GS_SCATTER, f, part, &po, kc ? kc : &none, &pp);
		if (rc == NX_OK)
			rc = slice_copy(L, *out, pd, r0, po, false);
		nx_l_release_buf(L, part[0]->buf);
		if (po)
			nx_l_release_buf(L, po->buf);
		if (rc)
			return rc;
	}
	return NX_OK;
}

static nx_status lower_split(nx_lower *L, nx_gs_kind kind, const nx_inst *i, nx_lval *const *ops, nx_lval **out)
{
	split_cache c = {0};
	return lower_split_c(L, kind, i, ops, out, &c);
}

static nx_status lower_custom(nx_lower *L, const nx_inst *i, nx_lval *const *ops, nx_lval **out)
{
	int n = i->noperands;
	if (n > 3 || !nx_shape_is_array(i->shape))
		return nx_l_err(L, "custom operator '%s': at most 3 array operands and one array result",
		                i->a.custom_call_target);
	const nx_shape *rs = i->shape;
	int64_t R = rs->rank ? rs->dims[rs->rank - 1] : 1, O = R ? nx_shape_elems(rs) / R : 0;
	nx_gs_kspec k = {.kind = NX_GS_CUSTOM, .inst = i, .nslot = n + 1, .nin = n};
	gs_io io[4] = {{0}};
	for (int j = 0; j < n; j++) {
		const nx_shape *s = ops[j]->shape;
		int64_t Rj = s->rank ? s->dims[s->rank - 1] : 1;
		if (!nx_gs_type_ok(s->type) || (Rj ? nx_shape_elems(s) / Rj : 0) != O)
			return nx_l_err(L, "custom operator '%s': operand %d must have the result's rows (all dims but the last)",
			                i->a.custom_call_target, j);
		k.slot[j] = (nx_gs_slot){s->type, Rj};
		io[j].in = ops[j];
	}
	if (!nx_gs_type_ok(rs->type))
		return nx_l_err(L, "custom operator '%s': result type %s", i->a.custom_call_target, nx_type_name(rs->type));
	k.slot[n] = (nx_gs_slot){rs->type, R};
	*out = nx_l_newval(L, i->shape);
	io[n].out = *out;
	if (O == 0)
		return NX_OK;
	int kidx = make_kernel(L, &k);
	if (kidx < 0)
		return L->d->status ? L->d->status : NX_ERR_INPUT;
	return run_rows(L, &k, kidx, NX_GS_MAX_LANES, io, O);
}

nx_status nx_gpsimd_lower(nx_lower *L, const nx_inst *i, nx_lval *const *ops, nx_lval **out, bool *done)
{
	nx_gs_kind kind = nx_gpsimd_kind(L, i);
	*done = kind != NX_GS_NONE;
	switch (kind) {
	case NX_GS_SORT: return lower_sort(L, i, ops, out);
	case NX_GS_MAP: return lower_map(L, i, ops, out);
	case NX_GS_TOPK: return lower_topk(L, i, ops, out);
	case NX_GS_REDUCE: return lower_reduce(L, i, ops, out);
	case NX_GS_CUMULATIVE: return lower_cumulative(L, i, ops, out);
	case NX_GS_SCATTER: case NX_GS_SELSCAT: return lower_split(L, kind, i, ops, out);
	case NX_GS_CUSTOM: return lower_custom(L, i, ops, out);
	default: return NX_OK;
	}
}
