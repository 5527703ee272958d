/* backend/lower.c — the lowering driver: walks the entry computation in
 * program order (fusions flattened into their bodies), gives every value an
 * HBM buffer (freed buffers are reused, with the waits that makes necessary),
 * calls the kernel lowering per instruction family, and assembles the .neff.
 * The emission substrate (streams, semaphores, DMA issue, SBUF) is
 * lower_emit.c, the HBM allocator lower_hbm.c, kernels the lower_*.c
 * families and kernels/. docs/lowering.md describes the scheme. */
#include "backend/lower.h"
#include "backend/lower_ext.h"
#include "backend/gpsimd/gpsimd.h"
#include "passes/loops.h"

#include "ir/eval/eval.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const char *const nx_lower_custom_calls[] = {"AwsNeuronTransferWithStaticRing", "AwsNeuronGelu",
                                              "AwsNeuronGeluBackward", "AwsNeuronSoftmax",
                                              "AwsNeuronSoftmaxBackward", NULL};

int nx_lower_dtype(nx_type t)
{
	switch (t) {
	case NX_F32: return NX_DT_F32;
	case NX_BF16: return NX_DT_BF16;
	case NX_F16: return NX_DT_F16;
	case NX_F8E4M3FN: return NX_DT_FP8E4M3;
	case NX_F8E5M2: return NX_DT_FP8E5M2;
	case NX_S32: return NX_DT_S32;
	case NX_U32: return NX_DT_U32;
	case NX_S64: return NX_DT_S64; /* storage only: values are u32 pairs (nx_l_dev_shape) */
	case NX_U64: return NX_DT_U64;
	case NX_S16: return NX_DT_S16;
	case NX_U16: return NX_DT_U16;
	case NX_S8: return NX_DT_S8;
	case NX_U8: case NX_PRED: return NX_DT_U8;
	default: return -1;
	}
}

/* the dispatch table (backend/lower.def) */
enum {
#define LOWER(op, fam) NX_LROW_##op,
#include "backend/lower.def"
#undef LOWER
	NX_LROWS
};
_Static_assert(NX_LROWS == 73, "backend/lower.def: update the count (and docs/lowering.md) with the rows");

static const uint8_t lower_family[NX_OP_COUNT] = {
#define LOWER(op, fam) [NX_OP_##op] = NX_LK_##fam,
#include "backend/lower.def"
#undef LOWER
};

static const char *const family_names[NX_LK_COUNT] = {
#define X(e, n) n,
	NX_LK_FAMILIES(X)
#undef X
};

int nx_l_family(nx_opcode op)
{
	return op < NX_OP_COUNT ? lower_family[op] : NX_LK_NONE;
}

const char *nx_l_family_name(int family)
{
	return family >= 0 && family < NX_LK_COUNT ? family_names[family] : "?";
}

bool nx_lower_supports(nx_opcode op)
{
	return nx_l_family(op) != NX_LK_NONE;
}

/* ------------------------------------------------------------------ map */
static size_t hptr(const void *p, size_t cap)
{
	uint64_t x = (uint64_t)(uintptr_t)p;
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return (size_t)x & (cap - 1);
}

static nx_lent *ent(nx_lower *L, const nx_inst *i)
{
	if (L->mapn * 2 >= L->mapcap) {
		size_t oc = L->mapcap, nc = oc ? oc * 2 : 256;
		nx_lent *old = L->map;
		L->map = calloc(nc, sizeof *L->map);
		L->mapcap = nc;
		L->mapn = 0;
		for (size_t k = 0; k < oc; k++)
			if (old[k].key) {
				size_t h = hptr(old[k].key, nc);
				while (L->map[h].key)
					h = (h + 1) & (nc - 1);
				L->map[h] = old[k];
				L->mapn++;
			}
		free(old);
	}
	size_t h = hptr(i, L->mapcap);
	while (L->map[h].key && L->map[h].key != i)
		h = (h + 1) & (L->mapcap - 1);
	if (!L->map[h].key) {
		L->map[h].key = i;
		L->map[h].res = i;
		L->map[h].last_use = -1;
		L->mapn++;
	}
	return &L->map[h];
}

static const nx_inst *resolve(nx_lower *L, const nx_inst *i)
{
	for (int k = 0; k < 64; k++) {
		const nx_inst *r = ent(L, i)->res;
		if (r == i)
			return i;
		i = r;
	}
	return i;
}

nx_lent *nx_l_ent(nx_lower *L, const nx_inst *i)
{
	return ent(L, i);
}

const nx_inst *nx_l_resolve(nx_lower *L, const nx_inst *i)
{
	return resolve(L, i);
}

/* ------------------------------------------------------------- buffers
 * nx_l_alloc / nx_l_release_buf: lower_hbm.c */
static void release(nx_lower *L, nx_lval *v)
{
	if (!v)
		return;
	if (v->tuple) {
		for (int k = 0; k < v->ntuple; k++)
			release(L, v->tuple[k]);
		return;
	}
	if (v->tsrc)
		release(L, v->tsrc);
	else if (v->buf)
		nx_l_release_buf(L, v->buf);
}

static void retain(nx_lval *v)
{
	if (v->tuple) {
		for (int k = 0; k < v->ntuple; k++)
			retain(v->tuple[k]);
		return;
	}
	if (v->tsrc)
		retain(v->tsrc);
	else if (v->buf)
		v->buf->refs++;
}

static bool is64(const nx_shape *s)
{
	return s && nx_shape_is_array(s) && (s->type == NX_S64 || s->type == NX_U64);
}

const nx_shape *nx_l_dev_shape(nx_lower *L, const nx_shape *s)
{
	if (!is64(s) || s->rank >= NX_MAX_RANK)
		return s;
	int64_t d[NX_MAX_RANK];
	memcpy(d, s->dims, sizeof(int64_t) * (size_t)s->rank);
	d[s->rank] = 2;
	return nx_shape_array(&L->a, NX_U32, s->rank + 1, d);
}

nx_lval *nx_l_newval(nx_lower *L, const nx_shape *s)
{
	nx_lval *v = nx_arena_alloc(&L->a, sizeof *v);
	s = nx_l_dev_shape(L, s);
	v->shape = s;
	v->dt = (nx_dtype)nx_lower_dtype(s->type);
	v->buf = nx_l_alloc(L, nx_shape_elems(s) * nx_dtype_bytes[v->dt]);
	v->buf->refs = 1;
	return v;
}

static nx_lval *alias_val(nx_lower *L, nx_lval *src, const nx_shape *s)
{
	nx_lval *v = nx_arena_alloc(&L->a, sizeof *v);
	*v = *src;
	v->shape = nx_l_dev_shape(L, s);
	retain(v);
	return v;
}

nx_lview nx_l_view_of(const nx_lval *v)
{
	if (v->tsrc) {
		nx_lview s = nx_l_view_of(v->tsrc), w = s;
		for (int k = 0; k < w.rank; k++) {
			w.dims[k] = s.dims[v->tinst->a.dimensions.v[k]];
			w.stride[k] = s.stride[v->tinst->a.dimensions.v[k]];
		}
		return w;
	}
	nx_lview w;
	memset(&w, 0, sizeof w);
	w.buf = v->buf;
	w.dt = v->dt;
	w.rank = v->shape->rank;
	int64_t st = 1;
	for (int k = w.rank - 1; k >= 0; k--) {
		w.dims[k] = v->shape->dims[k];
		w.stride[k] = st;
		st *= w.dims[k];
	}
	return w;
}

/* ---------------------------------------------------------- constants */
static void store_elem(uint8_t *p, nx_dtype t, const nx_literal *l, int64_t k)
{
	double v = nx_lit_get_f64(l, k);
	switch (t) {
	case NX_DT_F32: { float f = (float)v; memcpy(p, &f, 4); return; }
	case NX_DT_BF16: nx_put_le(p, nx_f32_to_bf16((float)v), 2); return;
	case NX_DT_F16: nx_put_le(p, nx_f32_to_f16((float)v), 2); return;
	case NX_DT_FP8E4M3: p[0] = nx_f64_to_f8(NX_F8E4M3FN, v); return;
	case NX_DT_FP8E5M2: p[0] = nx_f64_to_f8(NX_F8E5M2, v); return;
	case NX_DT_S32: case NX_DT_U32: nx_put_le(p, (uint64_t)nx_lit_get_i64(l, k), 4); return;
	case NX_DT_S16: case NX_DT_U16: nx_put_le(p, (uint64_t)nx_lit_get_i64(l, k), 2); return;
	case NX_DT_S64: case NX_DT_U64: nx_put_le(p, nx_lit_get_u64(l, k), 8); return;
	default: p[0] = (uint8_t)nx_lit_get_i64(l, k); return;
	}
}

bool nx_lower_literal_bytes(const nx_literal *l, uint8_t *out, int *dtype)
{
	int dt = nx_lower_dtype(l->shape->type);
	if (dt < 0)
		return false;
	*dtype = dt;
	int64_t n = nx_shape_elems(l->shape);
	for (int64_t k = 0; k < n; k++)
		store_elem(out + k * nx_dtype_bytes[dt], (nx_dtype)dt, l, k);
	return true;
}

static nx_status lower_constant(nx_lower *L, const nx_inst *i, nx_lval **out)
{
	const nx_literal *l = i->a.literal;
	nx_lval *v = nx_arena_alloc(&L->a, sizeof *v);
	v->shape = nx_l_dev_shape(L, i->shape); /* s64/u64: u32 (lo, hi) pairs, the same bytes */
	v->dt = (nx_dtype)nx_lower_dtype(v->shape->type);
	int64_t n = nx_shape_elems(v->shape), bytes = n * nx_dtype_bytes[v->dt];
	/* constants are in HBM before the run starts: never in a reused buffer */
	v->buf = nx_arena_alloc(&L->a, sizeof *v->buf);
	v->buf->off = L->hbm_top;
	v->buf->bytes = (bytes + 63) & ~(int64_t)63;
	L->hbm_top += v->buf->bytes ? v->buf->bytes : 64;
	v->buf->pinned = true;
	v->buf->refs = 1;
	uint8_t *data = nx_arena_alloc(&L->a, (size_t)bytes + 1);
	int dt;
	if (!nx_lower_literal_bytes(l, data, &dt))
		return nx_l_err(L, "constant value does not fit the device type %s", nx_dtype_names[v->dt]);
	if (L->nconsts == L->capconsts) {
		L->capconsts = L->capconsts ? 2 * L->capconsts : 16;
		L->consts = nx_xrealloc(L->consts, (size_t)L->capconsts * sizeof *L->consts);
	}
	nx_neff_tensor *t = &L->consts[L->nconsts++];
	memset(t, 0, sizeof *t);
	t->name = nx_arena_printf(&L->a, "c%d", L->nconsts - 1);
	t->dtype = v->dt;
	t->rank = 1;
	t->dims[0] = n;
	t->hbm_offset = v->buf->off;
	t->alias_input = -1;
	t->data = data;
	L->st.io_bytes += bytes;
	*out = v;
	return NX_OK;
}

nx_status nx_l_constant(nx_lower *L, const nx_inst *i, nx_lval **out)
{
	return lower_constant(L, i, out);
}

/* ---------------------------------------------------------------- walk */
typedef struct nodes {
	const nx_inst **v;
	int n, cap;
} nodes;

static void push(nodes *ns, const nx_inst *i)
{
	if (ns->n == ns->cap) {
		ns->cap = ns->cap ? ns->cap * 2 : 256;
		ns->v = nx_xrealloc(ns->v, (size_t)ns->cap * sizeof *ns->v);
	}
	ns->v[ns->n++] = i;
}

/* Fusion i of c, one kernel, with the split regions that only it reads
 * merged in (lower_split.c): their results never go through HBM. */
static const nx_inst *merge_regions(nx_lower *L, const nx_comp *c, const nx_inst *i)
{
	const nx_inst *cur = i;
	for (int round = 0; round < 4; round++) {
		const nx_inst *m = NULL;
		for (int k = 0; k < cur->noperands && !m; k++) {
			const nx_inst *op = cur->operands[k];
			if (op->parent != c || op == c->root)
				continue;
			const nx_inst *r = resolve(L, op);
			if (!nx_l_is_region(r))
				continue;
			int uses = 0;
			for (int j = 0; j < c->ninsts && uses < 2; j++)
				for (int o = 0; o < c->insts[j]->noperands; o++)
					uses += c->insts[j]->operands[o] == op;
			if (uses == 1)
				m = nx_l_merge_region(L, cur, k, r);
		}
		if (!m)
			break;
		cur = m;
	}
	return cur;
}

/* a node: element t of fusion f's tuple */
static const nx_inst *push_gte(nx_lower *L, nodes *ns, const nx_inst *f, int t)
{
	const nx_inst *g = nx_l_gte(L, f, t);
	push(ns, g);
	return g;
}

/* m with the dot it reads as one multi-output dot epilogue
 * (nx_l_dot_multi_at), in the dot's place, with get-tuple-elements of the
 * dot's value (which its readers resolve to) and of m's when m has one
 * output; what m resolves to, or NULL */
static const nx_inst *dot_multi(nx_lower *L, const nx_comp *c, nodes *ns, const nx_inst *m)
{
	int at;
	const nx_inst *d, *mm = nx_l_dot_multi_at(L, c, ns->v, ns->n, m, resolve, &at, &d);
	if (!mm)
		return NULL;
	memmove(&ns->v[at], &ns->v[at + 1], sizeof *ns->v * (size_t)(ns->n - at - 1));
	ns->n--;
	push(ns, mm);
	ent(L, d)->res = push_gte(L, ns, mm, mm->shape->ntuple - 1);
	return nx_shape_is_array(m->shape) ? push_gte(L, ns, mm, 0) : mm;
}

static void flatten(nx_lower *L, const nx_comp *c, nodes *ns)
{
	for (int k = 0; k < c->ninsts; k++) {
		const nx_inst *i = c->insts[k];
		if (i->op == NX_OP_PARAMETER && !c->is_entry)
			continue;
		if (nx_l_fusion_whole(L, i)) {
			const nx_inst *m = merge_regions(L, c, i), *dm = dot_multi(L, c, ns, m);
			if (dm)
				m = dm;
			else
				push(ns, m); /* one kernel, intermediates in SBUF */
			if (m != i)
				ent(L, i)->res = m;
			continue;
		}
		if (i->op == NX_OP_FUSION && i->ncalled == 1) {
			const nx_comp *b = i->called[0];
			/* ent() may grow the map: resolve first, then take the entry. */
			for (int p = 0; p < b->nparams && p < i->noperands; p++)
				if (b->params[p]) {
					const nx_inst *r = resolve(L, i->operands[p]);
					ent(L, b->params[p])->res = r;
				}
			/* a few kernels (lower_split.c), else one per instruction */
			nx_lsplit sp;
			if (nx_l_split_fusion(L, i, &sp)) {
				for (int k2 = 0; k2 < sp.nmap; k2++)
					ent(L, sp.from[k2])->res = sp.to[k2];
				for (int k2 = 0; k2 < sp.nnode; k2++)
					push(ns, sp.node[k2]);
			} else {
				flatten(L, b, ns);
			}
			const nx_inst *r = resolve(L, b->root);
			ent(L, i)->res = r;
			continue;
		}
		push(ns, i);
	}
}

static nx_lval *val(nx_lower *L, const nx_inst *i)
{
	return ent(L, resolve(L, i))->val;
}

/* A deferred transpose (nx_lval.tsrc) done now, for a reader that needs
 * it contiguous. */
static nx_status materialize(nx_lower *L, nx_lval *v)
{
	nx_lval *src = v->tsrc;
	v->tsrc = NULL;
	v->buf = nx_l_alloc(L, nx_shape_elems(v->shape) * nx_dtype_bytes[v->dt]);
	v->buf->refs = 1;
	nx_status rc = nx_l_transpose(L, v->tinst, src, v);
	release(L, src);
	return rc;
}

/* A transpose that only dots read and that is no output is deferred: the
 * dots read their tiles through the permuted view of its operand
 * (canonicalize-dot transposes the lhs of x^T.w into [M, K]; dot-loop loads
 * A^T, the original layout, so the copy and the transposing load are both
 * saved). Small ones keep their kernel (SBUF residency, the one-chunk dot). */
static bool defer_transpose(nx_lower *L, const nx_inst *i, nx_lval *op, nx_lval **out)
{
	nx_lent *en = ent(L, i);
	if (i->op != NX_OP_TRANSPOSE || en->nondot || en->output || op->tuple || op->tsrc ||
	    i->a.dimensions.n != op->shape->rank || nx_l_resident(L, op, 0, 0) ||
	    nx_lower_dtype(i->shape->type) != (int)op->dt ||
	    nx_shape_elems(i->shape) * nx_dtype_bytes[op->dt] < ((int64_t)1 << 20))
		return false;
	nx_lval *v = nx_arena_alloc(&L->a, sizeof *v);
	memset(v, 0, sizeof *v);
	v->shape = i->shape;
	v->dt = op->dt;
	v->tsrc = op;
	v->tinst = i;
	retain(op);
	nx_l_plan_kernel(L, "transpose-deferred");
	*out = v;
	return true;
}

/* --------------------------------------------------- in-place outputs
 * An output aliased to entry parameter P is written by its producer
 * straight into P's buffer (no copy after the kernels) when the producer is
 * P's last reader and its kernel reads each element of P no later than it
 * writes it: an elementwise op, or a fusion without a dot (fused-loop
 * streams every value at the same index; the fused kernel loads all its
 * inputs before its stores). Nothing lowered later may read P or a value
 * sharing its buffer (an output returning P, a later kernel). */
static bool shares(const nx_lval *v, const nx_lbuf *b)
{
	if (v && v->tuple) {
		for (int k = 0; k < v->ntuple; k++)
			if (shares(v->tuple[k], b))
				return true;
		return false;
	}
	return v && (v->tsrc ? shares(v->tsrc, b) : v->buf == b);
}

static void plan_inplace(nx_lower *L, const nx_inst *i, int node)
{
	const nx_comp *e = L->m->entry;
	nx_lemap em;
	L->ndest = 0;
	if (i->op == NX_OP_FUSION ? i->ncalled != 1 : i->noperands > 3 || !nx_l_elem_map(i, &em))
		return;
	for (int k = 0; i->op == NX_OP_FUSION && k < i->called[0]->ninsts; k++)
		if (i->called[0]->insts[k]->op == NX_OP_DOT || i->called[0]->insts[k]->op == NX_OP_CONVOLUTION)
			return;
	int nt = nx_shape_is_array(i->shape) ? 1 : i->shape->ntuple;
	for (int a = 0; a < L->m->naliases; a++) {
		const nx_alias *al = &L->m->aliases[a];
		const nx_inst *r = e->root;
		if (al->param_index.n || al->param_number >= e->nparams || al->output_index.n > 1 ||
		    (al->output_index.n == 1 && (r->op != NX_OP_TUPLE || al->output_index.v[0] >= r->noperands)))
			continue;
		if (al->output_index.n == 1)
			r = r->operands[al->output_index.v[0]];
		/* the output leaf's producer, through values that share its buffer */
		int t = 0;
		for (int d = 0; d < 16 && r; d++) {
			r = resolve(L, r);
			const nx_inst *s = r->noperands ? resolve(L, r->operands[0]) : NULL;
			if (r->op == NX_OP_GET_TUPLE_ELEMENT && s->op == NX_OP_TUPLE)
				r = s->operands[r->a.tuple_index];
			else if (r->op == NX_OP_GET_TUPLE_ELEMENT && s == i)
				t = (int)r->a.tuple_index, r = s;
			else if ((r->op == NX_OP_RESHAPE || r->op == NX_OP_BITCAST || r->op == NX_OP_COPY ||
			          r->op == NX_OP_CONVERT) && nx_shape_is_array(r->shape) && nx_shape_is_array(s->shape) &&
			         nx_lower_dtype(r->shape->type) == nx_lower_dtype(s->shape->type))
				r = s;
			else
				break;
		}
		const nx_inst *pi = e->params[al->param_number];
		nx_lent *pe = ent(L, pi);
		const nx_shape *sh = nt == 1 ? i->shape : t < nt ? i->shape->tuple[t] : NULL;
		if (r != i || !sh || !nx_shape_is_array(sh) || !pe->val || pe->last_use > node ||
		    nx_shape_elems(sh) != nx_shape_elems(pi->shape) || nx_lower_dtype(sh->type) != (int)pe->val->dt)
			continue;
		bool busy = false;
		for (size_t k = 0; k < L->mapcap && !busy; k++) {
			const nx_lent *o = &L->map[k];
			busy = o->key && o != pe && !o->dead && (o->last_use > node || o->output) &&
			       shares(o->val, pe->val->buf);
		}
		if (busy)
			continue;
		if (!L->ndest) {
			L->dest = nx_arena_alloc(&L->a, sizeof *L->dest * (size_t)nt);
			L->ndest = nt;
		}
		L->dest[t] = pe->val->buf;
	}
}

/* a node's result (tuple element t): a fresh buffer, or the aliased
 * parameter's (plan_inplace) */
static nx_lval *out_val(nx_lower *L, const nx_shape *s, int t)
{
	if (t >= L->ndest || !L->dest[t])
		return nx_l_newval(L, s);
	nx_lval *v = nx_arena_alloc(&L->a, sizeof *v);
	v->shape = s;
	v->dt = (nx_dtype)nx_lower_dtype(s->type);
	v->buf = L->dest[t];
	v->buf->refs++;
	return v;
}

static nx_status lower_node(nx_lower *L, const nx_inst *i, nx_lval **out)
{
	if (i->op == NX_OP_WHILE) { /* lower_while.c */
		nx_lent *ie = ent(L, resolve(L, i->operands[0]));
		if (!ie->val)
			return nx_l_err(L, "operand 0 has no value (unsupported producer)");
		return nx_l_while(L, i, ie->val, ie->last_use == L->node && !ie->output, out);
	}
	if (i->op == NX_OP_ALL_REDUCE || i->op == NX_OP_REDUCE_SCATTER || i->op == NX_OP_ALL_GATHER ||
	    i->op == NX_OP_COLLECTIVE_PERMUTE) {
		nx_lval **all = nx_arena_alloc(&L->a, sizeof *all * (size_t)(i->noperands + 1));
		for (int k = 0; k < i->noperands; k++)
			if (!(all[k] = val(L, i->operands[k])))
				return nx_l_err(L, "operand %d has no value (unsupported producer)", k);
		return nx_l_collective(L, i, all, out);
	}
	if (i->op == NX_OP_REPLICA_ID)
		return nx_l_replica_id(L, i, out);
	if ((i->op == NX_OP_TRANSPOSE || i->op == NX_OP_DOT) && ent(L, i)->pre) {
		/* its dot stored it so (dot_tout), or computed it (dot_sec) */
		*out = ent(L, i)->pre;
		nx_l_plan_kernel(L, i->op == NX_OP_DOT ? "dot-second-output" : "transpose-stored");
		return NX_OK;
	}
	if (i->op == NX_OP_REDUCE && ent(L, i)->pre) { /* its dot summed it (dot_cs) */
		*out = ent(L, i)->pre;
		nx_l_plan_kernel(L, "column-sum-stored");
		return NX_OK;
	}
	nx_lval **ops = nx_arena_alloc(&L->a, sizeof *ops * (size_t)(i->noperands > 8 ? i->noperands : 8));
	memset(ops, 0, sizeof *ops * (size_t)(i->noperands > 8 ? i->noperands : 8));
	for (int k = 0; k < i->noperands; k++) {
		ops[k] = val(L, i->operands[k]);
		if (!ops[k])
			return nx_l_err(L, "operand %d has no value (unsupported producer)", k);
		if (ops[k]->tuple && i->op != NX_OP_GET_TUPLE_ELEMENT && i->op != NX_OP_TUPLE &&
		    i->op != NX_OP_OPT_BARRIER)
			return nx_l_err(L, "tuple operands are not supported here");
		nx_status mrc;
		if (ops[k]->tsrc && i->op != NX_OP_DOT && !nx_l_dot_epi_operand(i, k) && (mrc = materialize(L, ops[k])))
			return mrc;
	}
	if (defer_transpose(L, i, ops[0], out))
		return NX_OK;
	/* GpSimd kernels generated with LLVM (backend/gpsimd/): sort, map,
	 * cumulative reduce-window, select-and-scatter (their lower.def family),
	 * and the scatter/reduce forms the vector families refuse */
	bool gs_done;
	nx_status gs_rc = nx_gpsimd_lower(L, i, ops, out, &gs_done);
	if (gs_done)
		return gs_rc;
	if (i->op != NX_OP_TUPLE && i->op != NX_OP_GET_TUPLE_ELEMENT && i->op != NX_OP_OPT_BARRIER &&
	    i->op != NX_OP_PARAMETER && !nx_lower_supports(i->op))
		return nx_l_err(L, "operation '%s' is not supported by the backend yet", nx_opcode_name(i->op));
	for (int k = 0; i->op == NX_OP_FUSION && k < i->noperands; k++) {
		nx_lent *de = ent(L, resolve(L, i->operands[k]));
		if (de->rows_f == i && de->rows.done) { /* the dot applied it (kernels/dot_rows.c) */
			*out = alias_val(L, ops[k], i->shape);
			L->ndest = 0;
			return NX_OK;
		}
	}
	if (i->op == NX_OP_FUSION && nx_l_row_ok(L, i)) {
		/* reductions over rows with their producers and consumers
		 * (kernels/row_loop.c): an array or a tuple of fresh values */
		nx_lval *v = nx_shape_is_array(i->shape) ? nx_l_newval(L, i->shape) : nx_arena_alloc(&L->a, sizeof *v);
		if (!nx_shape_is_array(i->shape)) {
			memset(v, 0, sizeof *v);
			v->shape = i->shape;
			v->ntuple = i->shape->ntuple;
			v->tuple = nx_arena_alloc(&L->a, sizeof(nx_lval *) * (size_t)(v->ntuple + 1));
			for (int k = 0; k < v->ntuple; k++)
				v->tuple[k] = nx_l_newval(L, i->shape->tuple[k]);
		}
		*out = v;
		return nx_l_row(L, i, ops, v);
	}
	if (i->op == NX_OP_FUSION && !nx_shape_is_array(i->shape) && (nx_l_is_dot_epi(i) || nx_l_fused_loop_ok(L, i))) {
		/* a multi-output loop fusion or dot epilogue: a tuple of fresh values */
		nx_lval *v = nx_arena_alloc(&L->a, sizeof *v);
		memset(v, 0, sizeof *v);
		v->shape = i->shape;
		v->ntuple = i->shape->ntuple;
		v->tuple = nx_arena_alloc(&L->a, sizeof(nx_lval *) * (size_t)(v->ntuple + 1));
		for (int k = 0; k < v->ntuple; k++)
			v->tuple[k] = out_val(L, i->shape->tuple[k], k);
		*out = v;
		return nx_l_is_dot_epi(i) ? nx_l_dot_epi_fusion(L, i, ops, v) : nx_l_fused_loop(L, i, ops, v);
	}
	if (i->op != NX_OP_TUPLE && i->op != NX_OP_GET_TUPLE_ELEMENT && i->op != NX_OP_OPT_BARRIER &&
	    i->op != NX_OP_PARAMETER && i->op != NX_OP_RNG_BIT_GENERATOR && nx_lower_dtype(i->shape->type) < 0)
		return nx_l_err(L, "element type %s has no device type", nx_type_name(i->shape->type));
	switch (i->op) {
	case NX_OP_CONSTANT:
		return lower_constant(L, i, out);
	case NX_OP_TUPLE: {
		nx_lval *v = nx_arena_alloc(&L->a, sizeof *v);
		v->shape = i->shape;
		v->ntuple = i->noperands;
		v->tuple = nx_arena_alloc(&L->a, sizeof(nx_lval *) * (size_t)(i->noperands + 1));
		for (int k = 0; k < i->noperands; k++) {
			v->tuple[k] = val(L, i->operands[k]);
			if (!v->tuple[k])
				return nx_l_err(L, "operand %d has no value", k);
			retain(v->tuple[k]);
		}
		*out = v;
		return NX_OK;
	}
	case NX_OP_GET_TUPLE_ELEMENT:
		if (!ops[0]->tuple || i->a.tuple_index >= ops[0]->ntuple)
			return nx_l_err(L, "get-tuple-element of a non-tuple value");
		*out = alias_val(L, ops[0]->tuple[i->a.tuple_index], i->shape);
		return NX_OK;
	case NX_OP_OPT_BARRIER:
		*out = alias_val(L, ops[0], i->shape);
		return NX_OK;
	case NX_OP_RESHAPE: case NX_OP_BITCAST: case NX_OP_COPY:
		if (nx_shape_elems(i->shape) != nx_shape_elems(ops[0]->shape) ||
		    nx_lower_dtype(i->shape->type) != (int)ops[0]->dt)
			return nx_l_err(L, "%s changes the element count or type", nx_opcode_name(i->op));
		*out = alias_val(L, ops[0], i->shape);
		return NX_OK;
	case NX_OP_BITCAST_CONVERT: {
		/* same-width reinterpretation: the operand's bytes read as the
		 * result's type (f32<->s32/u32, bf16<->s16/u16, ...) */
		const nx_shape *rs = nx_l_dev_shape(L, i->shape); /* s64[N] <-> u32[N,2]: a view */
		int dt = nx_lower_dtype(rs->type);
		if (nx_shape_elems(rs) != nx_shape_elems(ops[0]->shape) ||
		    nx_dtype_bytes[dt] != nx_dtype_bytes[ops[0]->dt])
			return nx_l_err(L, "bitcast-convert between element types of different widths (%s to %s) "
			                   "is not supported by the backend yet",
			                nx_type_name(i->operands[0]->shape->type), nx_type_name(i->shape->type));
		*out = alias_val(L, ops[0], i->shape);
		(*out)->dt = (nx_dtype)dt;
		(*out)->sb_gen = 0; /* a resident SBUF copy was left for the operand's type */
		return NX_OK;
	}
	case NX_OP_CUSTOM_CALL:
		if (nx_l_custom_ok(i)) {
			*out = nx_l_newval(L, i->shape);
			return nx_l_custom(L, i, ops, *out);
		}
		for (int k = 0; nx_lower_custom_calls[k]; k++)
			if (i->a.custom_call_target && !strcmp(i->a.custom_call_target, nx_lower_custom_calls[k]) &&
			    i->noperands == 1 && nx_shape_is_array(i->shape)) {
				*out = alias_val(L, ops[0], i->shape);
				return NX_OK;
			}
		return nx_l_err(L, "custom-call target '%s' is not supported by the backend",
		                i->a.custom_call_target ? i->a.custom_call_target : "");
	case NX_OP_RNG_BIT_GENERATOR:
		return nx_l_rng(L, i, ops, out); /* lower_rng.c */
	case NX_OP_CONVERT:
		if (nx_lower_dtype(i->shape->type) == (int)ops[0]->dt) {
			*out = alias_val(L, ops[0], i->shape);
			return NX_OK;
		}
		break;
	default:
		break;
	}
	nx_lval *v = out_val(L, i->shape, 0);
	*out = v;
	bool done;
	nx_status drc = nx_l_data(L, i, ops, v, &done);
	if (done)
		return drc;
	switch (i->op) {
	case NX_OP_BROADCAST: return nx_l_broadcast(L, i, ops[0], v);
	case NX_OP_TRANSPOSE: return nx_l_transpose(L, i, ops[0], v);
	case NX_OP_DOT: return nx_l_dot(L, i, ops, v);
	case NX_OP_REDUCE: return nx_l_reduce(L, i, ops, v);
	case NX_OP_IOTA: return nx_l_iota(L, i, v);
	case NX_OP_FUSION: return nx_l_is_dot_epi(i) ? nx_l_dot_epi_fusion(L, i, ops, v) : nx_l_fused(L, i, ops, v);
	default:
		if (nx_l_elementwise_ok(i))
			return nx_l_elementwise(L, i, ops, v);
		return nx_l_err(L, "operation '%s' is not supported by the backend yet", nx_opcode_name(i->op));
	}
}

static const char *meta(const nx_inst *i, const char *key)
{
	for (int k = 0; k < i->a.nmetadata; k++)
		if (!strcmp(i->a.metadata[k].key, key))
			return i->a.metadata[k].value;
	return NULL;
}

/* A kernel's debug entry: its name and where it came from (for a fusion,
 * the root of the fused computation; metadata from the first instruction
 * of the kernel that has some). i NULL: the output copies. */
static void add_debug(nx_lower *L, const char *name, const nx_inst *i)
{
	if (L->ndebug == L->capdebug) {
		L->capdebug = L->capdebug ? 2 * L->capdebug : 64;
		L->debug = nx_xrealloc(L->debug, (size_t)L->capdebug * sizeof *L->debug);
		L->debug_src = nx_xrealloc(L->debug_src, (size_t)L->capdebug * sizeof *L->debug_src);
	}
	nx_neff_src r = {0};
	if (i) {
		const nx_inst *root = i->op == NX_OP_FUSION && i->ncalled && i->called[0]->root ? i->called[0]->root : i;
		r.hlo = root->name;
		r.kind = i->op == NX_OP_FUSION && i->a.fusion_kind ? i->a.fusion_kind : nx_opcode_name(i->op);
		r.line = root->line ? root->line : i->line;
		const nx_inst *src = meta(i, "source_file") ? i : root;
		for (int k = 0; !meta(src, "source_file") && root != i && k < i->called[0]->ninsts; k++)
			if (meta(i->called[0]->insts[k], "source_file"))
				src = i->called[0]->insts[k];
		r.op_name = meta(src, "op_name");
		r.source_file = meta(src, "source_file");
		const char *sl = meta(src, "source_line");
		r.source_line = sl ? atoi(sl) : 0;
	}
	L->debug_src[L->ndebug] = r;
	L->debug[L->ndebug++] = name;
}

static const char *fattr(const nx_inst *i, const char *key, int k, nx_arena *a)
{
	for (int j = 0; j < i->a.nfrontend_attributes; j++)
		if (!strcmp(i->a.frontend_attributes[j].key, key)) {
			const char *s = i->a.frontend_attributes[j].value;
			for (int n = 0; n < k && s; n++) {
				s = strchr(s, ',');
				if (s)
					s++;
			}
			if (!s)
				return NULL;
			const char *e = strchr(s, ',');
			return nx_arena_strndup(a, s, e ? (size_t)(e - s) : strlen(s));
		}
	return NULL;
}

/* the array leaves of an HLO shape, in the order of nx_l_leaves() */
static void shape_leaves(const nx_shape *s, const nx_shape **out, int *n, int max)
{
	if (nx_shape_is_tuple(s)) {
		for (int k = 0; k < s->ntuple; k++)
			shape_leaves(s->tuple[k], out, n, max);
		return;
	}
	if (*n < max)
		out[*n] = s;
	(*n)++;
}

void nx_l_leaves(nx_lval *v, nx_lval ***out, int *n, int *cap)
{
	if (v->tuple) {
		for (int k = 0; k < v->ntuple; k++)
			nx_l_leaves(v->tuple[k], out, n, cap);
		return;
	}
	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 16;
		*out = nx_xrealloc(*out, (size_t)*cap * sizeof **out);
	}
	(*out)[(*n)++] = v;
}

/* --------------------------------------------------------- HBM plan
 * Before any code is emitted: a lower bound of the HBM the program needs
 * (parameters for the whole program, constants and every value that gets a
 * buffer of its own from its producer to its last reader; values that share
 * their operand's buffer are not counted, so the bound never exceeds what
 * the lowering allocates). Beyond the target's HBM the compile is refused,
 * naming the peak and the largest tensors live there. */
static bool own_buffer(const nx_inst *i)
{
	switch (i->op) {
	case NX_OP_TUPLE: case NX_OP_GET_TUPLE_ELEMENT: case NX_OP_RESHAPE: case NX_OP_BITCAST:
	case NX_OP_COPY: case NX_OP_OPT_BARRIER: case NX_OP_CONVERT: case NX_OP_CUSTOM_CALL:
	case NX_OP_ALL_REDUCE: case NX_OP_REDUCE_SCATTER: case NX_OP_ALL_GATHER: case NX_OP_COLLECTIVE_PERMUTE:
		return false;
	default:
		return nx_shape_is_array(i->shape) && nx_lower_dtype(i->shape->type) >= 0;
	}
}

static int64_t value_bytes(const nx_inst *i)
{
	double b = (double)nx_shape_elems(i->shape) * nx_dtype_bytes[nx_lower_dtype(i->shape->type)];
	return b > 9e18 ? INT64_MAX / 4 : (int64_t)b;
}

static nx_status hbm_plan_check(nx_lower *L, const nodes *ns)
{
	int n = ns->n;
	int64_t *delta = calloc((size_t)n + 2, sizeof *delta);
	int *born = calloc((size_t)n + 1, sizeof *born), *dies = calloc((size_t)n + 1, sizeof *dies);
	for (int k = 0; k < n; k++) {
		const nx_inst *i = ns->v[k];
		nx_lent *en = ent(L, i);
		born[k] = dies[k] = -1;
		if (!own_buffer(i) || (i->op != NX_OP_PARAMETER && !en->output && !en->used))
			continue;
		int d = i->op == NX_OP_PARAMETER || en->output ? n : en->last_use < k ? k : en->last_use;
		born[k] = i->op == NX_OP_PARAMETER ? 0 : k;
		dies[k] = d;
		int64_t b = value_bytes(i);
		delta[born[k]] += b;
		delta[d + 1] -= b;
	}
	int64_t live = 0, peak = 0;
	int at = 0;
	for (int k = 0; k <= n; k++) {
		live += delta[k];
		if (live > peak)
			peak = live, at = k < n ? k : n - 1;
	}
	nx_status rc = NX_OK;
	L->st.hbm_lower_bound = peak;
	if (peak > L->t->hbm_bytes) {
		/* the five largest tensors live at the peak */
		int top[5] = {-1, -1, -1, -1, -1};
		for (int k = 0; k < n; k++) {
			if (born[k] < 0 || born[k] > at || dies[k] < at)
				continue;
			int64_t b = value_bytes(ns->v[k]);
			for (int j = 0; j < 5; j++)
				if (top[j] < 0 || b > value_bytes(ns->v[top[j]])) {
					memmove(top + j + 1, top + j, sizeof *top * (size_t)(4 - j));
					top[j] = k;
					break;
				}
		}
		char list[1024];
		size_t len = 0;
		list[0] = 0;
		for (int j = 0; j < 5 && top[j] >= 0 && len < sizeof list - 200; j++) {
			const nx_inst *i = ns->v[top[j]];
			char sh[128];
			nx_shape_print(sh, sizeof sh, i->shape, false);
			len += (size_t)snprintf(list + len, sizeof list - len, "%s'%s' %s %.2f GiB", j ? ", " : "", i->name,
			                        sh, (double)value_bytes(i) / (1024.0 * 1024 * 1024));
		}
		L->cur = ns->v[at];
		rc = nx_l_err(L, "HBM plan needs at least %.2f GiB (%lld bytes) at this instruction; %s has %.0f GiB "
		                 "per NeuronCore; largest live tensors: %s",
		              (double)peak / (1024.0 * 1024 * 1024), (long long)peak, L->t->name,
		              (double)L->t->hbm_bytes / (1024.0 * 1024 * 1024), list);
		L->cur = NULL;
	}
	free(delta);
	free(born);
	free(dies);
	return rc;
}

static void liveness(nx_lower *L, const nodes *nsp, const nx_inst *root)
{
	const nodes ns = *nsp;
	/* liveness backwards from the root: values nobody reads cost no code */
	ent(L, resolve(L, root))->output = true;
	for (int k = ns.n - 1; k >= 0; k--) {
		nx_lent *en = ent(L, ns.v[k]);
		if (!en->output && !en->used && ns.v[k]->op != NX_OP_PARAMETER)
			continue;
		for (int j = 0; j < ns.v[k]->noperands; j++) {
			const nx_inst *r = resolve(L, ns.v[k]->operands[j]);
			ent(L, r)->used = true;
		}
	}
	for (int k = 0; k < ns.n; k++) {
		nx_lent *en = ent(L, ns.v[k]);
		if (!en->output && !en->used)
			continue;
		for (int j = 0; j < ns.v[k]->noperands; j++) {
			ent(L, resolve(L, ns.v[k]->operands[j]))->last_use = k;
			if (ns.v[k]->op != NX_OP_DOT && !nx_l_dot_epi_operand(ns.v[k], j))
				ent(L, resolve(L, ns.v[k]->operands[j]))->nondot = true;
		}
	}
	ent(L, resolve(L, root))->last_use = ns.n;
	nx_l_pair_dots(L, nsp->v, nsp->n);
}

/* a second output's Y (dot_sec), not lowered yet maybe: its value, or a
 * view of a transpose or a reshape of one (NULL: none) */
static nx_lval *sec_y(nx_lower *L, const nx_inst *y, int depth)
{
	y = resolve(L, y);
	nx_lval *v = ent(L, y)->val, *z;
	bool t = y->op == NX_OP_TRANSPOSE, r = y->op == NX_OP_RESHAPE;
	if (v || depth > 2 || (!t && !r) || y->noperands != 1 || !(z = sec_y(L, y->operands[0], depth + 1)) ||
	    z->tuple || (r && (z->tsrc || nx_lower_dtype(y->shape->type) != (int)z->dt)))
		return v && !v->tuple ? v : NULL;
	v = nx_arena_alloc(&L->a, sizeof *v);
	*v = *z; /* a view for the dot loop's loads, no reference of its own */
	v->shape = y->shape;
	if (t)
		v->buf = NULL, v->tsrc = z, v->tinst = y;
	return v;
}

/* the kernels of ns in program order; dead values are released */
static nx_status lower_nodes(nx_lower *L, const nodes *nsp, bool entry)
{
	const nodes ns = *nsp;
	nx_status rc = NX_OK;
	for (int k = 0; k < ns.n; k++) {
		const nx_inst *i = ns.v[k];
		L->node = k;
		L->cur = i;
		L->cur_debug = (uint32_t)L->ndebug;
		add_debug(L, i->name, i);
		if (i->op == NX_OP_PARAMETER)
			continue;
		if (!ent(L, i)->output && !ent(L, i)->used)
			continue; /* dead */
		nx_lval *v = NULL;
		nx_l_check_sbuf(L);
		L->node_gen0 = L->gen_next + 1;
		if (entry)
			plan_inplace(L, i, k);
		nx_lent *ie = ent(L, i);
		L->dot_rows = ie->rows_f ? &ie->rows : NULL;
		if (ie->rows_f && ie->rows.kind == NX_DR_SOFTMAX_BWD) {
			/* p: computed already, contiguous in the dot result's layout */
			nx_lval *pv = val(L, ie->rows_f->operands[ie->rows.pk]);
			nx_lview w;
			memset(&w, 0, sizeof w);
			bool ok = pv && !pv->tuple && !pv->tsrc;
			if (ok)
				w = nx_l_view_of(pv), ok = w.off == 0;
			for (int d = w.rank - 1, st = 1; ok && d >= 0; st *= (int)w.dims[d], d--)
				ok = w.dims[d] == 1 || w.stride[d] == st;
			ie = ent(L, i);
			ie->rows.P = ok ? pv : NULL;
			ie->rows.sec = NULL;
			for (int w = 1; ok && w >= 0; w--) /* Y's value: its own, or the view of a transpose */
				if (ie->sec[w].i && (ie->sec[w].yv = sec_y(L, ie->sec[w].i->operands[1], 0)))
					ie->sec[w].next = ie->rows.sec, ie->rows.sec = &ie->sec[w];
			L->dot_rows = ok ? &ie->rows : NULL;
		}
		L->tout_i = ent(L, i)->tout, L->tout_v = NULL;
		nx_ldcs cs = ent(L, i)->cs;
		L->dot_cs = cs.red ? &cs : NULL;
		rc = lower_node(L, i, &v);
		if (cs.red && rc == NX_OK && cs.done)
			ent(L, cs.red)->pre = cs.out;
		L->dot_cs = NULL;
		if (rc == NX_OK && L->tout_v)
			ent(L, L->tout_i)->pre = L->tout_v;
		for (int w = 0; rc == NX_OK && w < 2; w++)
			if (ent(L, i)->sec[w].done) { /* the second dot's value (and its reader's) */
				nx_ldsec sc = ent(L, i)->sec[w];
				if (sc.tout)
					ent(L, sc.tout)->pre = sc.val, sc.val = alias_val(L, sc.val, sc.i->shape);
				ent(L, sc.i)->pre = sc.val;
			}
		L->tout_i = NULL, L->tout_v = NULL;
		L->dot_rows = NULL;
		for (int t = 0; rc == NX_OK && v && t < L->ndest; t++)
			if (L->dest[t] && (v->tuple ? v->tuple[t]->buf : v->buf) == L->dest[t])
				nx_l_plan(L, "in-place", "result %d written into the buffer of the parameter it aliases", t);
		L->ndest = 0;
		if (rc == NX_OK && L->too_big)
			rc = nx_l_err(L, "the program would need more than %d instructions on one engine "
			                 "(this op's code grows with its tensor size here); refusing instead of "
			                 "exhausting memory", NX_LOWER_MAX_INSNS);
		if (rc != NX_OK)
			return rc;
		nx_l_check_sbuf(L);
		if (L->mem_f && v && v->buf && !v->tuple)
			fprintf(L->mem_f, "value %s: hbm %lld, %lld bytes\n", i->name, (long long)v->buf->off,
			        (long long)v->buf->bytes);
		nx_lent *en = ent(L, i);
		en->val = v;
		if (en->last_use < 0 && !en->output) {
			release(L, v);
			en->dead = true;
		}
		for (int j = 0; j < i->noperands; j++) {
			nx_lent *o = ent(L, resolve(L, i->operands[j]));
			if (o->last_use == k && !o->dead && !o->output) {
				o->dead = true;
				release(L, o->val);
			}
		}
	}
	return NX_OK;
}

nx_status nx_l_lower_comp(nx_lower *L, const nx_comp *c, nx_lval *param, nx_lval **root)
{
	nodes ns = {0};
	flatten(L, c, &ns);
	if (c->nparams > 0 && c->params[0]) {
		nx_lent *pe = ent(L, c->params[0]);
		pe->val = param;
		pe->output = true; /* the loop state: never released by the body */
	}
	for (int k = 0; k < ns.n; k++) /* a condition is lowered twice */
		ent(L, ns.v[k])->dead = false;
	liveness(L, &ns, c->root);
	nx_status rc = lower_nodes(L, &ns, false);
	*root = rc == NX_OK ? val(L, c->root) : NULL;
	free(ns.v);
	return rc;
}

void nx_l_release_val(nx_lower *L, nx_lval *v)
{
	release(L, v);
}

static nx_status lower_all(nx_lower *L, nx_neff_program *p)
{
	const nx_module *m = L->m;
	const nx_comp *e = m->entry;
	nodes ns = {0};
	nx_status rc = NX_OK;
	flatten(L, e, &ns);
	liveness(L, &ns, e->root);
	double tm = nx_l_now();	rc = hbm_plan_check(L, &ns);
	L->st.t_memory = nx_l_now() - tm;
	if (rc != NX_OK)
		goto out;

	/* inputs */
	nx_neff_tensor *in = nx_arena_alloc(&L->a, sizeof *in * (size_t)(e->nparams + 1));
	for (int k = 0; k < e->nparams; k++) {
		const nx_inst *pi = e->params[k];
		L->cur = pi;
		if (!pi || !nx_shape_is_array(pi->shape) || nx_lower_dtype(pi->shape->type) < 0 ||
		    pi->shape->rank > NX_NEFF_MAX_RANK) {
			rc = nx_l_err(L, "parameter %d: only arrays of device types (rank <= %d) are supported", k,
			              NX_NEFF_MAX_RANK);
			goto out;
		}
		nx_lval *v = nx_l_newval(L, pi->shape);
		v->buf->pinned = true;
		ent(L, pi)->val = v;
		const char *nm = fattr(pi, "neff_input_names", 0, &L->a);
		in[k].name = nm ? nm : pi->name;
		in[k].dtype = (nx_dtype)nx_lower_dtype(pi->shape->type); /* s64/u64: 8-byte storage */
		in[k].rank = pi->shape->rank;
		for (int r = 0; r < pi->shape->rank; r++)
			in[k].dims[r] = pi->shape->dims[r];
		in[k].hbm_offset = v->buf->off;
		in[k].alias_input = -1;
		in[k].nonneg = L->input_nonneg && L->input_nonneg[k];
		L->st.io_bytes += nx_shape_elems(pi->shape) * nx_dtype_bytes[in[k].dtype];
	}
	int64_t scratch0 = L->hbm_top;

	for (int k = 0; k < e->ninsts; k++)
		L->st.fusions += e->insts[k]->op == NX_OP_FUSION;
	if ((rc = lower_nodes(L, &ns, true)) != NX_OK)
		goto out;
	L->cur = e->root;
	if (L->hbm_top > L->t->hbm_bytes) {
		rc = nx_l_err(L, "HBM plan needs %lld bytes with scratch; %s has %lld per NeuronCore", (long long)L->hbm_top,
		              L->t->name, (long long)L->t->hbm_bytes);
		goto out;
	}
	L->cur_debug = (uint32_t)L->ndebug;
	add_debug(L, "outputs", NULL);

	/* outputs: copy into aliased parameter buffers or fresh output buffers */
	nx_lval *root = val(L, e->root), **lv = NULL;
	int nl = 0, capl = 0;
	nx_l_leaves(root, &lv, &nl, &capl);
	nx_neff_tensor *out = nx_arena_alloc(&L->a, sizeof *out * (size_t)(nl + 1));
	bool *taken = calloc((size_t)nl + 1, 1);
	nx_lval *srcv = calloc((size_t)nl + 1, sizeof *srcv);
	nx_lbuf **dstb = calloc((size_t)nl + 1, sizeof *dstb);
	const nx_shape **hl = calloc((size_t)nl + 1, sizeof *hl);
	int nhl = 0;
	shape_leaves(e->root->shape, hl, &nhl, nl);
	for (int k = 0; k < nl; k++) {
		nx_lval *v = lv[k];
		int alias = -1;
		for (int a = 0; a < m->naliases; a++) {
			const nx_alias *al = &m->aliases[a];
			bool match = root->tuple ? (al->output_index.n == 1 && al->output_index.v[0] == k)
			                         : al->output_index.n == 0;
			if (match && al->param_index.n == 0 && al->param_number < e->nparams)
				alias = (int)al->param_number;
		}
		nx_lbuf *dst;
		if (alias >= 0) {
			dst = ent(L, e->params[alias])->val->buf;
		} else {
			bool own = !v->buf->pinned;
			for (int j = 0; j < k; j++)
				if (lv[j]->buf == v->buf)
					own = false;
			if (own) {
				dst = v->buf;
			} else {
				dst = nx_l_alloc(L, nx_shape_elems(v->shape) * nx_dtype_bytes[v->dt]);
			}
		}
		dst->pinned = true;
		srcv[k] = *v;
		dstb[k] = dst;
		taken[k] = dst == v->buf; /* nothing to copy */
		const char *nm = fattr(e->root, "neff_output_names", k, &L->a);
		out[k].name = nm ? nm : nx_arena_printf(&L->a, "output%d", k);
		/* s64/u64 outputs: the u32 pairs' bytes, described as 8-byte elements */
		const nx_shape *os = nhl == nl && is64(hl[k]) ? hl[k] : v->shape;
		out[k].dtype = os == v->shape ? v->dt : (nx_dtype)nx_lower_dtype(os->type);
		out[k].rank = os->rank;
		if (os->rank > NX_NEFF_MAX_RANK) {
			rc = nx_l_err(L, "output %d has rank %d (at most %d)", k, os->rank, NX_NEFF_MAX_RANK);
			goto out2;
		}
		for (int r = 0; r < os->rank; r++)
			out[k].dims[r] = os->dims[r];
		out[k].hbm_offset = dst->off;
		out[k].alias_input = alias;
		L->st.io_bytes += nx_shape_elems(v->shape) * nx_dtype_bytes[v->dt];
	}
	/* The copies are a parallel assignment: outputs aliased to parameters
	 * overwrite parameter buffers that other outputs may still have to read
	 * (a parameter returned unchanged next to its update, swapped aliases).
	 * A copy goes only once no pending copy reads its destination; when
	 * every pending copy is blocked (a cycle), one blocked source is saved
	 * to a temporary first. */
	for (;;) {
		bool left = false, progress = false;
		for (int k = 0; k < nl; k++) {
			if (taken[k])
				continue;
			left = true;
			bool blocked = false;
			for (int j = 0; j < nl && !blocked; j++)
				blocked = j != k && !taken[j] && srcv[j].buf == dstb[k];
			if (blocked)
				continue;
			nx_lval dv = srcv[k];
			dv.buf = dstb[k];
			nx_lview sv = nx_l_view_of(&srcv[k]);
			if ((rc = nx_l_copy_view(L, &sv, &dv)) != NX_OK)
				goto out2;
			taken[k] = progress = true;
		}
		if (!left)
			break;
		if (progress)
			continue;
		for (int j = 0; j < nl; j++) {
			bool read = false;
			for (int k = 0; k < nl && !read; k++)
				read = k != j && !taken[k] && !taken[j] && srcv[j].buf == dstb[k];
			if (!read)
				continue;
			nx_lval *t = nx_l_newval(L, srcv[j].shape);
			t->dt = srcv[j].dt;
			nx_lview sv = nx_l_view_of(&srcv[j]);
			if ((rc = nx_l_copy_view(L, &sv, t)) != NX_OK)
				goto out2;
			srcv[j].buf = t->buf;
			break;
		}
	}
	/* every engine ends only when the stores it depends on have completed */
	nx_lsync all;
	memset(&all, 0, sizeof all);
	for (int q = 0; q < NX_LQ; q++)
		all.s[q] = L->qcount[q];
	nx_l_wait(L, NX_ENG_SP, &all);
	nx_l_wait(L, NX_ENG_POOL, &all);
	for (int en = 0; en < NX_ENG_COUNT; en++)
		nx_l_emit(L, (nx_engine)en, NX_I_HALT);
	{
		int nkeep = 0;
		int64_t (*keep)[2] = malloc(sizeof *keep * (size_t)(nl + L->nconsts + 2));
		keep[nkeep][0] = 0, keep[nkeep++][1] = scratch0; /* inputs */
		for (int k = 0; k < L->nconsts; k++) {
			int64_t nb = nx_dtype_bytes[L->consts[k].dtype];
			for (int r = 0; r < L->consts[k].rank; r++)
				nb *= L->consts[k].dims[r];
			keep[nkeep][0] = L->consts[k].hbm_offset, keep[nkeep++][1] = L->consts[k].hbm_offset + nb;
		}
		for (int k = 0; k < nl; k++) {
			int64_t nb = nx_dtype_bytes[out[k].dtype];
			for (int r = 0; r < out[k].rank; r++)
				nb *= out[k].dims[r];
			keep[nkeep][0] = out[k].hbm_offset, keep[nkeep++][1] = out[k].hbm_offset + nb;
		}
		if (L->rank_id)
			keep[nkeep][0] = L->rank_id->off, keep[nkeep++][1] = L->rank_id->off + L->rank_id->bytes;
		double tc = nx_l_now();
		if (getenv("NX_CHECK_HBM"))
			nx_l_check_hbm_races(L);
		if (getenv("NX_CHECK_ONCHIP"))
			nx_l_check_onchip_races(L, atoi(getenv("NX_CHECK_ONCHIP")) == 2 ? NX_MEM_PSUM : NX_MEM_SBUF);
		if (!getenv("NX_KEEP_STORES") && !L->ndloops) /* device loops: lower_while.c */
			nx_l_drop_dead_stores(L, (const int64_t(*)[2])keep, nkeep);
		free(keep);
		L->st.t_check += nx_l_now() - tc;
	}

	memset(p, 0, sizeof *p);
	p->module_name = m->name ? m->name : "module";
	p->target = L->t->name;
	p->n_cores = L->nreplicas;
	p->nreplicas = L->nreplicas;
	p->nrgroups = L->nrg;
	p->has_rank_id = L->rank_id != NULL;
	p->rank_id_offset = L->rank_id ? L->rank_id->off : 0;
	p->rgroups = L->rg;
	if (L->ncc)
		p->features |= NX_NEFF_FEAT_COLLECTIVES;
	p->ninputs = e->nparams;
	p->inputs = in;
	p->noutputs = nl;
	p->outputs = out;
	p->nconsts = L->nconsts;
	p->consts = L->consts;
	p->hbm_size = L->hbm_top > 0 ? L->hbm_top : 64;
	p->scratch_offset = scratch0;
	p->scratch_size = p->hbm_size - scratch0;
	p->nsems = NX_LSEMS;
	for (int en = 0; en < NX_ENG_COUNT; en++) {
		p->streams[en] = L->s[en].v;
		p->nstream[en] = L->s[en].n;
	}
	nx_gpsimd_program(L, p); /* GpSimd kernels (backend/gpsimd/) */
	p->ndebug = L->ndebug;
	p->debug_names = L->debug;
	p->debug_src = L->debug_src;
out2:
	free(hl);
	free(taken);
	free(srcv);
	free(dstb);
	free(lv);
out:
	free(ns.v);
	return rc;
}

/* An unbounded dynamic dimension (f32[?,784]) has no size to plan memory
 * or loops with: refused before anything is emitted. */
nx_status nx_lower_module(const nx_module *m, const nx_target *t, const bool *input_nonneg,
                          uint8_t **neff, size_t *len, nx_lower_stats *st, nx_diag *d)
{
	nx_lower L;
	memset(&L, 0, sizeof L);
	L.m = m;
	L.input_nonneg = input_nonneg;
	L.t = t;
	L.d = d;
	nx_arena_init(&L.a);
	L.sbuf_half = t->sbuf_partition_bytes / 2;
	L.o3 = st && st->opt_level >= 3;
	L.nreplicas = nx_lower_replicas(m);
	*neff = NULL;
	*len = 0;
	nx_neff_program p;
	L.last_slot = -1;
	char *dtext[3] = {NULL, NULL, NULL};
	size_t dlen[3] = {0, 0, 0};
	unsigned want = st ? st->dump : 0;
	if (want & NX_DUMP_PLAN && (L.plan_f = open_memstream(&dtext[0], &dlen[0])))
		fprintf(L.plan_f, "# kernel plan (%s)\n", t->name);
	if (want & NX_DUMP_MEMORY && (L.mem_f = open_memstream(&dtext[1], &dlen[1])))
		fprintf(L.mem_f, "# memory plan (%s): HBM %lld bytes per NeuronCore, SBUF %lld bytes per partition\n",
		        t->name, (long long)t->hbm_bytes, (long long)t->sbuf_partition_bytes);
	double t0 = nx_l_now();
	nx_status rc = !m->entry ? nx_l_err(&L, "module has no entry computation")
	               : L.nreplicas > 64 ? nx_l_err(&L, "%d replicas: the runtime runs at most 64 ranks", L.nreplicas)
	               : nx_l_hbm_refuse_unplannable(&L) != NX_OK ? d->status
	                                  : lower_all(&L, &p);
	if (rc == NX_OK) {
		for (int e = 0; e < NX_ENG_COUNT; e++)
			L.st.insns[e] = L.s[e].n;
		L.st.hbm_bytes = p.hbm_size;
		L.st.sbuf_peak = L.sbuf_peak;
		L.st.t_emit = nx_l_now() - t0 - L.st.t_memory - L.st.t_check;
		double te = nx_l_now();
		if (nx_neff_write(&p, neff, len, d) != 0)
			rc = d->status ? d->status : NX_ERR_INTERNAL;
		L.st.t_encode = nx_l_now() - te;
		if (want & NX_DUMP_STREAMS) {
			FILE *f = open_memstream(&dtext[2], &dlen[2]);
			if (f)
				fprintf(f, "# streams (%s)\n", t->name);
			for (int e = 0; e < NX_ENG_COUNT && f; e++) {
				char *dis = nx_isa_disasm_stream(L.s[e].v, L.s[e].n);
				fprintf(f, "stream %s: %zu instructions\n%s", nx_engine_names[e], L.s[e].n, dis);
				free(dis);
			}
			if (f)
				fclose(f);
		}
	}
	if (L.plan_f)
		fclose(L.plan_f);
	if (L.mem_f)
		fclose(L.mem_f);
	if (st) {
		L.st.dump = want;
		L.st.dump_text = NULL;
		if (rc == NX_OK && want) {
			size_t n = dlen[0] + dlen[1] + dlen[2] + 1;
			L.st.dump_text = malloc(n);
			snprintf(L.st.dump_text, n, "%s%s%s", dtext[0] ? dtext[0] : "", dtext[1] ? dtext[1] : "",
			         dtext[2] ? dtext[2] : "");
		}
		*st = L.st;
	}
	for (int k = 0; k < 3; k++)
		free(dtext[k]);
	for (int e = 0; e < NX_ENG_COUNT; e++)
		free(L.s[e].v);
	free(L.map);
	free(L.freel);
	free(L.freemax);
	nx_ptrmap_free(&L.fstart);
	nx_ptrmap_free(&L.fend);
	free(L.debug);
	free(L.debug_src);
	free(L.consts);
	free(L.rg);
	for (int e = 0; e < NX_ENG_COUNT; e++)
		free(L.klog[e]), free(L.sig_idx[e]), free(L.sig_cnt[e]);
	for (int k = 0; k < NX_LSEMS; k++)
		free(L.know[k]);
	nx_arena_free(&L.a);
	return rc;
}
