/* backend/lower_coll.c — collectives onto the CC instructions.
 *
 * Every rank runs the same program. A CC instruction works on flat HBM
 * buffers (the SP engine issues it on a DMA queue, so its completion is a
 * queue count like a DMA's): all_reduce dst[e] = reduce over the group of
 * src[e]; all_gather dst = the members' src concatenated in group order;
 * reduce_scatter dst = chunk `position in group` of the group's reduction;
 * collective_permute dst = src of the rank whose pair targets this one
 * (zeros when none). A dimension other than the outermost becomes a strided
 * copy into or out of a [group, ...] temporary. Groups are resolved here to
 * explicit ids (empty = all replicas, iota form expanded) and written into
 * the def.json replica-group table the instruction indexes. */
#include "backend/lower.h"

#include <stdlib.h>
#include <string.h>

static void add_ids(const nx_replica_groups *g, int64_t *n)
{
	if (!g->present)
		return;
	if (g->iota) {
		int64_t t = 1;
		for (int d = 0; d < g->iota_shape.n; d++)
			t *= g->iota_shape.v[d];
		*n = t > *n ? t : *n;
	}
	for (int j = 0; j < g->ngroups; j++)
		for (int e = 0; e < g->groups[j].n; e++)
			if (g->groups[j].v[e] + 1 > *n)
				*n = g->groups[j].v[e] + 1;
}

int nx_lower_replicas(const nx_module *m)
{
	if (m->replica_count > 0)
		return m->replica_count > 1024 ? 1024 : (int)m->replica_count;
	int64_t n = 1;
	for (int c = 0; c < m->ncomps; c++)
		for (int k = 0; k < m->comps[c]->ninsts; k++) {
			const nx_inst *i = m->comps[c]->insts[k];
			add_ids(&i->a.replica_groups, &n);
			for (int p = 0; p < i->a.nsource_target_pairs; p++)
				for (int e = 0; e < 2; e++)
					if (i->a.source_target_pairs[p][e] + 1 > n)
						n = i->a.source_target_pairs[p][e] + 1;
		}
	return n > 1024 ? 1024 : (int)n;
}

/* Explicit groups of i for N replicas: *ng groups of lens[g] ids in ids
 * (arena). Error text when the groups are unusable. */
static const char *explicit_groups(nx_lower *L, const nx_replica_groups *g, int N, int *ng, int **lens,
                                   int32_t **ids)
{
	if (!g->present || (g->ngroups == 0 && !g->iota)) {
		*ng = 1;
		*lens = nx_arena_alloc(&L->a, sizeof(int));
		(*lens)[0] = N;
		*ids = nx_arena_alloc(&L->a, sizeof(int32_t) * (size_t)N);
		for (int r = 0; r < N; r++)
			(*ids)[r] = r;
		return NULL;
	}
	if (g->iota) {
		if (g->iota_shape.n != 2)
			return "iota replica groups need a [groups, size] shape";
		int64_t G = g->iota_shape.v[0], S = g->iota_shape.v[1];
		int nr = g->iota_reshape.n;
		int64_t total = 1, dims[NX_MAX_RANK], st[NX_MAX_RANK], tdims[NX_MAX_RANK], idx[NX_MAX_RANK];
		if (nr < 1 || nr > NX_MAX_RANK)
			return "bad iota replica-group reshape";
		for (int d = 0; d < nr; d++)
			total *= dims[d] = g->iota_reshape.v[d];
		if (G < 1 || S < 1 || total != G * S || total > 65536)
			return "iota replica groups: reshape does not hold [groups, size]";
		bool tr = g->iota_transpose.n == nr;
		for (int64_t s = 1, d = nr - 1; d >= 0; d--)
			st[d] = s, s *= dims[d];
		for (int d = 0; d < nr; d++) {
			int p = tr ? (int)g->iota_transpose.v[d] : d;
			if (p < 0 || p >= nr)
				return "bad iota replica-group permutation";
			tdims[d] = dims[p];
			idx[d] = 0;
		}
		*ng = (int)G;
		*lens = nx_arena_alloc(&L->a, sizeof(int) * (size_t)G);
		*ids = nx_arena_alloc(&L->a, sizeof(int32_t) * (size_t)total);
		for (int64_t k = 0; k < G; k++)
			(*lens)[k] = (int)S;
		/* element k of the transposed iota, row-major */
		for (int64_t k = 0; k < total; k++) {
			int64_t v = 0;
			for (int d = 0; d < nr; d++)
				v += idx[d] * st[tr ? g->iota_transpose.v[d] : d];
			(*ids)[k] = (int32_t)v;
			for (int d = nr - 1; d >= 0; d--) {
				if (++idx[d] < tdims[d])
					break;
				idx[d] = 0;
			}
		}
		return NULL;
	}
	int64_t total = 0;
	for (int k = 0; k < g->ngroups; k++)
		total += g->groups[k].n;
	*ng = g->ngroups;
	*lens = nx_arena_alloc(&L->a, sizeof(int) * (size_t)g->ngroups);
	*ids = nx_arena_alloc(&L->a, sizeof(int32_t) * (size_t)(total + 1));
	int at = 0;
	for (int k = 0; k < g->ngroups; k++) {
		(*lens)[k] = g->groups[k].n;
		for (int j = 0; j < g->groups[k].n; j++)
			(*ids)[at++] = (int32_t)g->groups[k].v[j];
	}
	return NULL;
}

/* Ids in range, each replica in exactly one group. */
static const char *check_partition(int N, int ng, const int *lens, const int32_t *ids)
{
	char *seen = calloc((size_t)N + 1, 1);
	const char *why = NULL;
	int at = 0, cnt = 0;
	for (int k = 0; k < ng && !why; k++) {
		if (lens[k] < 1)
			why = "empty replica group";
		for (int j = 0; j < lens[k] && !why; j++, at++) {
			int32_t r = ids[at];
			if (r < 0 || r >= N)
				why = "replica group names a replica outside the module's replica count";
			else if (seen[r]++)
				why = "replica groups name a replica twice";
			else
				cnt++;
		}
	}
	if (!why && cnt != N)
		why = "replica groups do not cover every replica";
	free(seen);
	return why;
}

/* Table index of an entry (equal entries shared). */
static int table_add(nx_lower *L, bool pairs, int n, const int *lens, const int32_t *ids)
{
	int total = 0;
	for (int k = 0; k < n; k++)
		total += pairs ? 2 : lens[k];
	for (int t = 0; t < L->nrg; t++) {
		const nx_neff_rgroup *e = &L->rg[t];
		if (e->pairs != pairs || e->n != n || (!pairs && memcmp(e->len, lens, sizeof(int) * (size_t)n)))
			continue;
		if (!memcmp(e->ids, ids, sizeof(int32_t) * (size_t)total))
			return t;
	}
	if (L->nrg == L->caprg) {
		L->caprg = L->caprg ? 2 * L->caprg : 8;
		L->rg = nx_xrealloc(L->rg, sizeof *L->rg * (size_t)L->caprg);
	}
	L->rg[L->nrg] = (nx_neff_rgroup){pairs, n, lens, ids};
	return L->nrg++;
}

/* Flat HBM access pattern over n elements of buffer b. */
static bool flat_ap(nx_dtype dt, const nx_lbuf *b, int64_t n, nx_ap *a)
{
	int64_t F = nx_l_div_le(n, 1 << 24), R = n / F;
	if (R > (1 << 24))
		return false;
	int32_t st[2] = {(int32_t)F, 1};
	uint32_t c[2] = {(uint32_t)R, (uint32_t)F};
	*a = nx_ap_hbm(dt, b->off, 1, 0, 2, st, c);
	return true;
}

static nx_status cc_emit(nx_lower *L, nx_isa_op op, int func, int table, nx_lval *dst, int64_t ndst,
                         nx_lbuf *src, int64_t nsrc)
{
	nx_ap ad, as;
	if (!flat_ap(dst->dt, dst->buf, ndst, &ad) || !flat_ap(dst->dt, src, nsrc, &as))
		return nx_l_err(L, "collective operand of %lld elements is too large", (long long)nsrc);
	nx_l_wait(L, NX_ENG_SP, &src->written);
	nx_l_wait(L, NX_ENG_SP, &dst->buf->war);
	int q = L->qnext[0];
	L->qnext[0] = (L->qnext[0] + 1) % (NX_LQ / 2);
	nx_insn *in = nx_l_emit(L, NX_ENG_SP, op);
	in->ap[0] = ad;
	in->ap[1] = as;
	in->func = (uint8_t)func;
	in->iarg[0] = q;
	in->iarg[1] = q;
	in->iarg[2] = table;
	nx_lsync y;
	memset(&y, 0, sizeof y);
	y.s[q] = ++L->qcount[q];
	nx_l_max(&src->war, &y);
	nx_l_max(&dst->buf->written, &y);
	nx_l_max(&dst->buf->war, &y);
	L->ncc++;
	return NX_OK;
}

/* ALU operator of the to_apply computation; -1 when not a plain binary op. */
static int coll_alu(const nx_inst *i)
{
	if (i->ncalled != 1 || !i->called[0]->root)
		return -1;
	const nx_inst *r = i->called[0]->root;
	if (r->noperands != 2 || r->operands[0]->op != NX_OP_PARAMETER || r->operands[1]->op != NX_OP_PARAMETER)
		return -1;
	bool pred = r->shape->type == NX_PRED;
	switch (r->op) {
	case NX_OP_ADD: return NX_ALU_ADD;
	case NX_OP_MULTIPLY: return NX_ALU_MUL;
	case NX_OP_MAXIMUM: return NX_ALU_MAX;
	case NX_OP_MINIMUM: return NX_ALU_MIN;
	case NX_OP_AND: return pred ? NX_ALU_LAND : nx_type_is_int(r->shape->type) ? NX_ALU_AND : -1;
	case NX_OP_OR: return pred ? NX_ALU_LOR : nx_type_is_int(r->shape->type) ? NX_ALU_OR : -1;
	default: return -1;
	}
}

/* Row-major dims of s as (A, D, B) around dimension d. */
static void split3(const nx_shape *s, int d, int64_t *A, int64_t *D, int64_t *B)
{
	*A = *B = 1;
	for (int k = 0; k < s->rank; k++) {
		if (k < d)
			*A *= s->dims[k];
		else if (k > d)
			*B *= s->dims[k];
	}
	*D = s->dims[d];
}

static nx_lval *tmp_val(nx_lower *L, nx_dtype dt, int64_t n)
{
	nx_lval *v = nx_arena_alloc(&L->a, sizeof *v);
	v->dt = dt;
	v->buf = nx_l_alloc(L, n * nx_dtype_bytes[dt]);
	v->buf->refs = 1;
	return v;
}

static nx_lview view4(nx_lbuf *b, nx_dtype dt, const int64_t *dims, const int64_t *stride)
{
	nx_lview w;
	memset(&w, 0, sizeof w);
	w.buf = b;
	w.dt = dt;
	w.rank = 4;
	for (int k = 0; k < 4; k++)
		w.dims[k] = dims[k], w.stride[k] = stride[k];
	return w;
}

static nx_status one_operand(nx_lower *L, const nx_inst *i, int func, int table, int gsize, nx_lval *o,
                             nx_lval *res)
{
	const nx_shape *os = o->shape, *rs = res->shape;
	int64_t n = nx_shape_elems(os), nr = nx_shape_elems(rs);
	if (n == 0 || nr == 0)
		return NX_OK;
	int d = i->a.dimensions.n ? (int)i->a.dimensions.v[0] : 0;
	int64_t A = 1, D = 1, B = 1;
	if (os->rank > 0 && d >= 0 && d < os->rank)
		split3(os, d, &A, &D, &B);
	nx_status rc;
	switch (i->op) {
	case NX_OP_ALL_REDUCE:
		return cc_emit(L, NX_I_ALL_REDUCE, func, table, res, nr, o->buf, n);
	case NX_OP_COLLECTIVE_PERMUTE:
		return cc_emit(L, NX_I_COLLECTIVE_PERMUTE, 0, table, res, nr, o->buf, n);
	case NX_OP_ALL_GATHER: {
		if (nr != n * gsize)
			return nx_l_err(L, "all-gather result is not %d times its operand", gsize);
		if (A == 1)
			return cc_emit(L, NX_I_ALL_GATHER, 0, table, res, nr, o->buf, n);
		/* tmp [g][A][D][B] -> result [A][g][D][B] */
		nx_lval *t = tmp_val(L, o->dt, nr);
		if ((rc = cc_emit(L, NX_I_ALL_GATHER, 0, table, t, nr, o->buf, n)) != NX_OK)
			return rc;
		int64_t dims[4] = {A, gsize, D, B}, st[4] = {D * B, A * D * B, B, 1};
		nx_lview v = view4(t->buf, t->dt, dims, st);
		rc = nx_l_copy_view(L, &v, res);
		nx_l_release_buf(L, t->buf);
		return rc;
	}
	case NX_OP_REDUCE_SCATTER: {
		if (n != nr * gsize || D % gsize)
			return nx_l_err(L, "reduce-scatter operand is not %d times its result", gsize);
		if (A == 1)
			return cc_emit(L, NX_I_REDUCE_SCATTER, func, table, res, nr, o->buf, n);
		/* operand [A][g][D/g][B] -> tmp [g][A][D/g][B] */
		int64_t Dg = D / gsize;
		nx_lval *t = tmp_val(L, o->dt, n);
		int64_t dims[4] = {gsize, A, Dg, B}, st[4] = {Dg * B, D * B, B, 1};
		nx_lview v = view4(o->buf, o->dt, dims, st);
		if ((rc = nx_l_copy_view(L, &v, t)) == NX_OK)
			rc = cc_emit(L, NX_I_REDUCE_SCATTER, func, table, res, nr, t->buf, n);
		nx_l_release_buf(L, t->buf);
		return rc;
	}
	default:
		return nx_l_err(L, "collective '%s' is not supported by the backend yet", nx_opcode_name(i->op));
	}
}

nx_status nx_l_collective(nx_lower *L, const nx_inst *i, nx_lval *const *ops, nx_lval **out)
{
	int N = L->nreplicas;
	int nres = nx_shape_is_tuple(i->shape) ? i->shape->ntuple : 1;
	if (nres != i->noperands)
		return nx_l_err(L, "%s with %d operands and %d results", nx_opcode_name(i->op), i->noperands, nres);
	int func = 0, table = -1, gsize = 1;
	bool identity = false;
	if (i->op == NX_OP_COLLECTIVE_PERMUTE) {
		int np = i->a.nsource_target_pairs;
		int32_t *ids = nx_arena_alloc(&L->a, sizeof(int32_t) * (size_t)(2 * np + 1));
		char *st = calloc((size_t)N + 1, 1), *tt = calloc((size_t)N + 1, 1);
		const char *why = NULL;
		identity = true;
		for (int p = 0; p < np; p++) {
			int64_t s = i->a.source_target_pairs[p][0], t = i->a.source_target_pairs[p][1];
			if (s < 0 || s >= N || t < 0 || t >= N)
				why = "source_target_pairs names a replica outside the replica count";
			else if (st[s]++ || tt[t]++)
				why = "source_target_pairs names a source or target twice";
			ids[2 * p] = (int32_t)s, ids[2 * p + 1] = (int32_t)t;
			identity = identity && s == t;
		}
		identity = identity && np == N;
		free(st);
		free(tt);
		if (why)
			return nx_l_err(L, "%s", why);
		if (!identity)
			table = table_add(L, true, np, NULL, ids);
	} else {
		int ng, *lens;
		int32_t *ids;
		const char *why = explicit_groups(L, &i->a.replica_groups, N, &ng, &lens, &ids);
		if (!why)
			why = check_partition(N, ng, lens, ids);
		if (why)
			return nx_l_err(L, "%s (%d replicas)", why, N);
		gsize = lens[0];
		bool equal = true;
		for (int k = 0; k < ng; k++)
			equal = equal && lens[k] == gsize;
		if (!equal && i->op != NX_OP_ALL_REDUCE)
			return nx_l_err(L, "%s over replica groups of different sizes", nx_opcode_name(i->op));
		identity = equal && gsize == 1;
		if (!identity)
			table = table_add(L, false, ng, lens, ids);
		if (i->op == NX_OP_ALL_REDUCE || i->op == NX_OP_REDUCE_SCATTER) {
			func = coll_alu(i);
			if (func < 0)
				return nx_l_err(L, "%s computation '%s' is not a single add/multiply/maximum/minimum/and/or",
				                nx_opcode_name(i->op), i->ncalled ? i->called[0]->name : "?");
		}
	}
	nx_lval **el = nx_arena_alloc(&L->a, sizeof *el * (size_t)(nres + 1));
	for (int k = 0; k < nres; k++) {
		const nx_shape *rs = nx_shape_is_tuple(i->shape) ? i->shape->tuple[k] : i->shape;
		nx_lval *o = ops[k];
		if (!o || o->tuple || !nx_shape_is_array(rs) || nx_lower_dtype(rs->type) != (int)o->dt)
			return nx_l_err(L, "%s operand %d does not match its result", nx_opcode_name(i->op), k);
		if (identity) {
			/* one-member groups (or a permute onto itself): the operand */
			if (nx_shape_elems(rs) != nx_shape_elems(o->shape))
				return nx_l_err(L, "%s operand %d does not match its result", nx_opcode_name(i->op), k);
			el[k] = nx_arena_alloc(&L->a, sizeof *el[k]);
			*el[k] = *o;
			el[k]->shape = rs;
			if (o->buf)
				o->buf->refs++;
			continue;
		}
		el[k] = nx_l_newval(L, rs);
		nx_status rc = one_operand(L, i, func, table, gsize, o, el[k]);
		if (rc != NX_OK)
			return rc;
	}
	if (!nx_shape_is_tuple(i->shape)) {
		*out = el[0];
		return NX_OK;
	}
	nx_lval *v = nx_arena_alloc(&L->a, sizeof *v);
	v->shape = i->shape;
	v->ntuple = nres;
	v->tuple = el;
	*out = v;
	return NX_OK;
}

/* The rank as u32[]: a word the runtime writes before the run, never reused. */
nx_status nx_l_replica_id(nx_lower *L, const nx_inst *i, nx_lval **out)
{
	if (!nx_shape_is_array(i->shape) || i->shape->rank != 0 || nx_lower_dtype(i->shape->type) != NX_DT_U32)
		return nx_l_err(L, "replica-id must be u32[]");
	if (!L->rank_id) {
		L->rank_id = nx_arena_alloc(&L->a, sizeof *L->rank_id);
		L->rank_id->off = L->hbm_top;
		L->rank_id->bytes = 64;
		L->rank_id->pinned = true;
		L->hbm_top += 64;
	}
	nx_lval *v = nx_arena_alloc(&L->a, sizeof *v);
	v->shape = i->shape;
	v->dt = NX_DT_U32;
	v->buf = L->rank_id;
	L->rank_id->refs++;
	*out = v;
	return NX_OK;
}
