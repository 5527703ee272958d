/* backend/lower_dot.c — dot as TensorE matmuls: C[M,N] = A[M,K] . B[K,N].
 * The stationary operand is loaded transposed (K on partitions, M free) by a
 * strided DMA, the moving one as [K, N]; K is tiled by <= 128 partitions and
 * accumulated in a PSUM bank (fp32), N by <= 512 columns (one bank each),
 * M by <= 128 rows. Tiles are counted loops, so code size depends on the
 * number of PSUM chunks, not on K. ACT evacuates PSUM into SBUF with the cast
 * to the result type; POOL stores. */
#include "backend/lower.h"
#include "ir/eval/eval.h"

#include <string.h>

/* (count, stride) of dims idx[0..n) of view v merged into one axis; false
 * when they are not mergeable. */
static bool merge(const nx_lview *v, const int64_t *idx, int n, int64_t *cnt, int64_t *stride)
{
	int64_t c = 1, s = 1;
	bool any = false;
	for (int k = 0; k < n; k++) {
		int64_t d = v->dims[idx[k]], st = v->stride[idx[k]];
		if (d == 1)
			continue;
		if (any && s != st * d)
			return false;
		c *= d;
		s = st;
		any = true;
	}
	*cnt = c;
	*stride = any ? s : 1;
	return true;
}

/* Matrix view of operand v: rows = dims a[], cols = dims b[]. Materializes a
 * permuted copy when the dims do not merge. */
static nx_status matrix(nx_lower *L, nx_lval *v, const int64_t *a, int na, const int64_t *b, int nb,
                        nx_lval **res, int64_t *rows, int64_t *srow, int64_t *cols, int64_t *scol)
{
	nx_lview w = nx_l_view_of(v);
	if (merge(&w, a, na, rows, srow) && merge(&w, b, nb, cols, scol)) {
		*res = v;
		return NX_OK;
	}
	nx_lview p = w;
	int r = 0;
	for (int k = 0; k < na; k++, r++)
		p.dims[r] = w.dims[a[k]], p.stride[r] = w.stride[a[k]];
	for (int k = 0; k < nb; k++, r++)
		p.dims[r] = w.dims[b[k]], p.stride[r] = w.stride[b[k]];
	nx_lval *c = nx_l_newval(L, v->shape);
	nx_status rc = nx_l_copy_view(L, &p, c);
	if (rc)
		return rc;
	*res = c;
	*rows = *cols = 1;
	for (int k = 0; k < na; k++)
		*rows *= w.dims[a[k]];
	for (int k = 0; k < nb; k++)
		*cols *= w.dims[b[k]];
	*srow = *cols;
	*scol = 1;
	return NX_OK;
}

bool nx_l_dot_mat(const nx_lval *v, int nbatch, const int64_t *a, int na, const int64_t *b, int nb, nx_ldmat *m)
{
	nx_lview w = nx_l_view_of(v), s = w;
	int64_t bi[NX_MAX_RANK], rows, cols, bc;
	s.rank = w.rank - nbatch;
	for (int k = 0; k < s.rank; k++)
		s.dims[k] = w.dims[k + nbatch], s.stride[k] = w.stride[k + nbatch];
	for (int k = 0; k < nbatch; k++)
		bi[k] = k;
	memset(m, 0, sizeof *m);
	if (!merge(&w, bi, nbatch, &bc, &m->sb) || !merge(&s, a, na, &rows, &m->sr) || !merge(&s, b, nb, &cols, &m->sc))
		return false;
	m->buf = w.buf;
	m->dt = v->dt;
	m->off = w.off;
	return true;
}

bool nx_l_dot_mat2(const nx_lval *v, int nbatch, int split, const int64_t *a, int na, const int64_t *b, int nb,
                   nx_ldmat *m)
{
	NX_ASSERT(split > 0 && split < nbatch);
	nx_lview w = nx_l_view_of(v), s = w;
	int64_t bi[NX_MAX_RANK], rows, cols, b1, b2;
	s.rank = w.rank - nbatch;
	for (int k = 0; k < s.rank; k++)
		s.dims[k] = w.dims[k + nbatch], s.stride[k] = w.stride[k + nbatch];
	for (int k = 0; k < nbatch; k++)
		bi[k] = k;
	memset(m, 0, sizeof *m);
	if (!merge(&w, bi, split, &b1, &m->sb1) || !merge(&w, bi + split, nbatch - split, &b2, &m->sb) ||
	    !merge(&s, a, na, &rows, &m->sr) || !merge(&s, b, nb, &cols, &m->sc))
		return false;
	m->B2 = 1;
	for (int k = split; k < nbatch; k++)
		m->B2 *= w.dims[k];
	m->buf = w.buf;
	m->dt = v->dt;
	m->off = w.off;
	return true;
}

int64_t nx_l_dot_chunks(const nx_lower *L, int64_t M, int64_t N)
{
	int64_t mt = nx_l_div_le(M, L->t->pe_cols), nt = nx_l_div_le(N, L->t->matmul_max_n);
	int64_t banks = L->t->psum_banks / 2, NT = N / nt;
	return (M / mt) * ((NT + banks - 1) / banks);
}

static int rest(const nx_shape *s, nx_ivec used, int64_t *out)
{
	int n = 0;
	for (int k = 0; k < s->rank; k++) {
		bool u = false;
		for (int j = 0; j < used.n; j++)
			u |= used.v[j] == k;
		if (!u)
			out[n++] = k;
	}
	return n;
}

nx_status nx_l_dot(nx_lower *L, const nx_inst *i, nx_lval *const *ops, nx_lval *out)
{
	return nx_l_dot_epi(L, i, ops, out, NULL);
}

nx_lsync nx_l_transpose_sbuf(nx_lower *L, nx_dtype sdt, int64_t src, nx_dtype ddt, int64_t dst, int64_t P,
                             int64_t F, const nx_lsync *after, int slot)
{
	NX_ASSERT(P <= 128 && F <= 128);
	int ph = L->pidx++ & 1;
	int64_t pbase = ph * (L->t->psum_banks / 2) * L->t->psum_bank_bytes;
	int32_t s1[1] = {1};
	uint32_t cP[1] = {(uint32_t)P}, cF[1] = {(uint32_t)F};
	nx_l_wait(L, NX_ENG_PE, after);
	nx_l_wait(L, NX_ENG_PE, &L->psum_free[ph]);
	nx_insn *tr = nx_l_emit(L, NX_ENG_PE, NX_I_TRANSPOSE);
	tr->ap[0] = nx_ap_psum(NX_DT_F32, 0, (int)F, pbase, 1, s1, cP);
	tr->ap[1] = nx_ap_sbuf(sdt, 0, (int)P, src, 1, s1, cF);
	nx_lsync pd = nx_l_signal(L, NX_ENG_PE);
	nx_l_wait(L, NX_ENG_ACT, &pd);
	nx_l_wait(L, NX_ENG_ACT, &L->sbuf_free[slot]);
	nx_insn *cp = nx_l_emit(L, NX_ENG_ACT, NX_I_TENSOR_COPY);
	cp->ap[0] = nx_ap_sbuf(ddt, 0, (int)F, dst, 1, s1, cP);
	cp->ap[1] = nx_ap_psum(NX_DT_F32, 0, (int)F, pbase, 1, s1, cP);
	nx_lsync ev = nx_l_signal(L, NX_ENG_ACT);
	L->psum_free[ph] = ev;
	return ev;
}

bool nx_l_dot_dims(const nx_lower *L, const nx_inst *i, int64_t *M, int64_t *N, int64_t *mt)
{
	const nx_dot_dnums *dn = &i->a.dot;
	if (dn->lhs_batch.n || dn->rhs_batch.n || i->noperands != 2)
		return false;
	int64_t fl[NX_MAX_RANK], fr[NX_MAX_RANK];
	int nfl = rest(i->operands[0]->shape, dn->lhs_contracting, fl);
	int nfr = rest(i->operands[1]->shape, dn->rhs_contracting, fr);
	*M = *N = 1;
	for (int k = 0; k < nfl; k++)
		*M *= i->operands[0]->shape->dims[fl[k]];
	for (int k = 0; k < nfr; k++)
		*N *= i->operands[1]->shape->dims[fr[k]];
	*mt = nx_l_div_le(*M, L->t->pe_cols);
	return *M > 0 && *N > 0 && nx_l_dot_chunks(L, *M, *N) <= NX_LDOT_MAX_CHUNKS;
}

nx_status nx_l_dot_epi(nx_lower *L, const nx_inst *i, nx_lval *const *ops, nx_lval *out, const nx_ldot_epi *epi)
{
	const nx_dot_dnums *dn = &i->a.dot;
	if (dn->lhs_batch.n || dn->rhs_batch.n)
		return nx_l_err(L, "dot with batch dimensions is not supported by the backend yet");
	if (i->noperands != 2)
		return nx_l_err(L, "dot with %d operands", i->noperands);
	nx_lval *A = ops[0], *B = ops[1];
	int64_t fl[NX_MAX_RANK], fr[NX_MAX_RANK];
	int nfl = rest(A->shape, dn->lhs_contracting, fl), nfr = rest(B->shape, dn->rhs_contracting, fr);
	int64_t M, sm, K, sk, K2, sk2, N, sn;
	nx_status rc;
	/* A as [M rows, K cols]; B as [K rows, N cols] */
	if ((rc = matrix(L, A, fl, nfl, dn->lhs_contracting.v, dn->lhs_contracting.n, &A, &M, &sm, &K, &sk)))
		return rc;
	if ((rc = matrix(L, B, dn->rhs_contracting.v, dn->rhs_contracting.n, fr, nfr, &B, &K2, &sk2, &N, &sn)))
		return rc;
	NX_ASSERT(K == K2);
	if (M == 0 || N == 0)
		return NX_OK;
	if (K == 0)
		return nx_l_err(L, "dot with an empty contraction is not supported by the backend yet");
	L->st.flops += 2.0 * (double)M * (double)N * (double)K;
	const nx_target *t = L->t;
	int64_t kt = nx_l_div_le(K, t->pe_rows), KT = K / kt;
	int64_t mt = nx_l_div_le(M, t->pe_cols), MT = M / mt;
	int64_t nt = nx_l_div_le(N, t->matmul_max_n), NT = N / nt;
	int banks = t->psum_banks / 2; /* a PSUM half per chunk, alternating */
	int64_t bank = t->psum_bank_bytes;
	int ea = nx_dtype_bytes[A->dt], eb = nx_dtype_bytes[B->dt], eo = nx_dtype_bytes[out->dt];
	int64_t oa = 0, ob = (KT * M * ea + 63) & ~63LL, oo = ob + ((KT * N * eb + 63) & ~63LL);
	int64_t bytes = oo + MT * N * eo, epi_off = (bytes + 63) & ~63LL;
	if (epi)
		bytes = epi_off + epi->bytes;
	int64_t base;
	int h;
	if ((rc = nx_l_sbuf_begin(L, bytes, &base, &h)))
		return rc;
	if (M > (1 << 24) || N > (1 << 24))
		return nx_l_err(L, "dot dimension too large");
	nx_l_plan_kernel(L, epi ? "dot+epilogue" : "dot");
	nx_l_plan(L, "shape", "[%lld, %lld] . [%lld, %lld] %s.%s -> %s", (long long)M, (long long)K, (long long)K,
	          (long long)N, nx_dtype_names[A->dt], nx_dtype_names[B->dt], nx_dtype_names[out->dt]);
	nx_l_plan(L, "tiling", "mt %lld, nt %lld, kt %lld; %lld PSUM chunks unrolled", (long long)mt, (long long)nt,
	          (long long)kt, (long long)(MT * ((NT + banks - 1) / banks)));
	nx_l_plan(L, "loops", "n tiles in a chunk > k %lld", (long long)KT);

	/* operands still in SBUF from the kernel that made them (one K tile):
	 * B [K, N] as it is; A^T [K, M] as it is when A is stored transposed,
	 * else A [M, K] transposed on PE through PSUM */
	int64_t aaddr = base + oa, baddr = base + ob;
	bool resA = false, resAT = false, resB = false;
	if (KT == 1) {
		resA = A == ops[0] && sm == 1 && sk == M && nx_l_resident(L, A, K, M);
		resAT = !resA && A == ops[0] && sk == 1 && sm == K && M <= t->pe_cols && K <= 512 / 4 &&
		        nx_l_resident(L, A, M, K);
		resB = B == ops[1] && sn == 1 && sk2 == N && nx_l_resident(L, B, K, N);
	}
	nx_l_plan(L, "resident", "A %s, B %s", resA ? "as A^T" : resAT ? "transposed on pe" : "no", resB ? "yes" : "no");
	nx_lsync loads;
	memset(&loads, 0, sizeof loads);
	if (resA) {
		aaddr = A->sb_off;
		nx_l_max(&loads, &A->sb_ready);
	} else if (resAT) {
		nx_lsync y = nx_l_transpose_sbuf(L, A->dt, A->sb_off, A->dt, aaddr, M, K, &A->sb_ready, h);
		nx_l_max(&loads, &y);
	}
	if (resB) {
		baddr = B->sb_off;
		nx_l_max(&loads, &B->sb_ready);
	}
	int32_t s[1];
	uint32_t c[1];
	if (!(resA || resAT) || !resB) {
		/* loads: A^T tiles [kt, M] and B tiles [kt, N], loop over K tiles */
		nx_lsync ld;
		memset(&ld, 0, sizeof ld);
		nx_l_wait(L, NX_ENG_SP, &L->sbuf_free[h]);
		if (!(resA || resAT))
			nx_l_wait(L, NX_ENG_SP, &A->buf->written);
		if (!resB)
			nx_l_wait(L, NX_ENG_SP, &B->buf->written);
		nx_l_loop(L, NX_ENG_SP, KT);
		if (!(resA || resAT)) {
			s[0] = (int32_t)sm, c[0] = (uint32_t)M;
			nx_ap ha = nx_ap_hbm(A->dt, A->buf->off, (int)kt, sk, 1, s, c);
			ha.loop_stride[0] = kt * sk * ea;
			s[0] = 1;
			nx_ap sa = nx_ap_sbuf(A->dt, 0, (int)kt, base + oa, 1, s, c);
			sa.loop_stride[0] = M * ea;
			ld = nx_l_dma(L, NX_ENG_SP, sa, ha);
		}
		if (!resB) {
			s[0] = (int32_t)sn, c[0] = (uint32_t)N;
			nx_ap hb = nx_ap_hbm(B->dt, B->buf->off, (int)kt, sk2, 1, s, c);
			hb.loop_stride[0] = kt * sk2 * eb;
			s[0] = 1;
			nx_ap sb = nx_ap_sbuf(B->dt, 0, (int)kt, base + ob, 1, s, c);
			sb.loop_stride[0] = N * eb;
			nx_lsync y = nx_l_dma(L, NX_ENG_SP, sb, hb);
			nx_l_max(&ld, &y);
		}
		nx_l_endloop(L, NX_ENG_SP);
		if (!(resA || resAT))
			nx_l_max(&A->buf->war, &ld);
		if (!resB)
			nx_l_max(&B->buf->war, &ld);
		nx_l_max(&loads, &ld);
	}

	/* chunks: one M tile x up to `banks` N tiles in one PSUM half */
	nx_lsync evac;
	memset(&evac, 0, sizeof evac);
	for (int64_t mi = 0; mi < MT; mi++)
		for (int64_t n0 = 0; n0 < NT; n0 += banks) {
			int64_t g = NT - n0 < banks ? NT - n0 : banks;
			int ph = L->pidx++ & 1;
			int64_t pbase = ph * banks * bank;
			nx_l_wait(L, NX_ENG_PE, &loads);
			nx_l_wait(L, NX_ENG_PE, &L->psum_free[ph]);
			nx_l_loop(L, NX_ENG_PE, g);
			for (int first = 1; first >= 0; first--) {
				if (!first) {
					if (KT == 1)
						break;
					nx_l_loop(L, NX_ENG_PE, KT - 1);
				}
				nx_insn *mm = nx_l_emit(L, NX_ENG_PE, NX_I_MATMUL);
				mm->flags = first ? NX_IF_START : 0;
				s[0] = 1, c[0] = (uint32_t)nt;
				nx_ap ps = nx_ap_psum(NX_DT_F32, 0, (int)mt, pbase, 1, s, c);
				ps.loop_stride[0] = bank;
				c[0] = (uint32_t)mt;
				nx_ap st = nx_ap_sbuf(A->dt, 0, (int)kt, aaddr + (mi * mt + (first ? 0 : M)) * ea, 1, s, c);
				c[0] = (uint32_t)nt;
				nx_ap mv = nx_ap_sbuf(B->dt, 0, (int)kt, baddr + ((n0 * nt) + (first ? 0 : N)) * eb, 1, s, c);
				mv.loop_stride[0] = nt * eb;
				if (!first) {
					st.loop_stride[1] = M * ea;
					mv.loop_stride[1] = N * eb;
				}
				mm->ap[0] = ps;
				mm->ap[1] = st;
				mm->ap[2] = mv;
				if (!first)
					nx_l_endloop(L, NX_ENG_PE);
			}
			nx_l_endloop(L, NX_ENG_PE);
			nx_lsync pd = nx_l_signal(L, NX_ENG_PE);
			/* evacuate PSUM -> SBUF with the cast */
			nx_l_wait(L, NX_ENG_ACT, &pd);
			nx_l_wait(L, NX_ENG_ACT, &L->sbuf_free[h]);
			nx_insn *cp = nx_l_emit(L, NX_ENG_ACT, NX_I_TENSOR_COPY);
			int32_t s2[2] = {(int32_t)(bank / 4), 1};
			uint32_t c2[2] = {(uint32_t)g, (uint32_t)nt};
			cp->ap[1] = nx_ap_psum(NX_DT_F32, 0, (int)mt, pbase, 2, s2, c2);
			s[0] = 1, c[0] = (uint32_t)(g * nt);
			cp->ap[0] = nx_ap_sbuf(out->dt, 0, (int)mt, base + oo + (mi * N + n0 * nt) * eo, 1, s, c);
			evac = nx_l_signal(L, NX_ENG_ACT);
			L->psum_free[ph] = evac;
		}
	if (resA || resAT)
		nx_l_resident_read(L, A, &evac);
	if (resB)
		nx_l_resident_read(L, B, &evac);
	if (epi) {
		/* the fused epilogue reads the result in SBUF and stores the kernel's root */
		nx_lsync done;
		nx_l_max(&evac, &loads);
		if ((rc = epi->emit(L, epi->ctx, h, base + oo, base + epi_off, &evac, &done)) != NX_OK)
			return rc;
		nx_l_sbuf_end(L, h, &done);
		if (A != ops[0])
			nx_l_release_buf(L, A->buf);
		if (B != ops[1])
			nx_l_release_buf(L, B->buf);
		return NX_OK;
	}
	if (MT == 1)
		nx_l_set_resident(L, out, h, base + oo, M, N, &evac);
	/* store [mt, N] per M tile */
	nx_l_wait(L, NX_ENG_POOL, &evac);
	nx_l_wait(L, NX_ENG_POOL, &out->buf->war);
	nx_l_loop(L, NX_ENG_POOL, MT);
	s[0] = 1, c[0] = (uint32_t)N;
	nx_ap ho = nx_ap_hbm(out->dt, out->buf->off, (int)mt, N, 1, s, c);
	ho.loop_stride[0] = mt * N * eo;
	nx_ap so = nx_ap_sbuf(out->dt, 0, (int)mt, base + oo, 1, s, c);
	so.loop_stride[0] = N * eo;
	nx_lsync st = nx_l_dma(L, NX_ENG_POOL, ho, so);
	nx_l_endloop(L, NX_ENG_POOL);
	nx_l_max(&out->buf->written, &st);
	nx_l_max(&out->buf->war, &st);
	nx_lsync done = st;
	nx_l_max(&done, &evac);
	nx_l_max(&done, &loads);
	nx_l_sbuf_end(L, h, &done);
	if (A != ops[0])
		nx_l_release_buf(L, A->buf);
	if (B != ops[1])
		nx_l_release_buf(L, B->buf);
	return NX_OK;
}

/* a column sum of dot's operand k (or of the value that operand transposes,
 * t): red adds over exactly the operand's contracting dims (the kept ones,
 * in order, are its free dims: the dot loop's matrix columns), floats,
 * init a scalar constant */
bool nx_l_dot_cs_match(const nx_inst *dot, int k, const nx_inst *red, const nx_inst *init, const nx_inst *t,
                       nx_ldcs *cs)
{
	if (dot->op != NX_OP_DOT || dot->noperands != 2 || dot->a.dot.lhs_batch.n || dot->a.dot.rhs_batch.n ||
	    red->op != NX_OP_REDUCE || red->noperands != 2 || !nx_shape_is_array(red->shape) ||
	    nx_l_reduce_alu(red) != NX_ALU_ADD || init->op != NX_OP_CONSTANT || !init->a.literal ||
	    !nx_shape_is_array(init->shape) || nx_shape_elems(init->shape) != 1)
		return false;
	nx_type ty = red->operands[0]->shape->type, o = red->shape->type;
	if ((ty != NX_F32 && ty != NX_BF16 && ty != NX_F16) || (o != NX_F32 && o != NX_BF16 && o != NX_F16) ||
	    init->shape->type != o)
		return false;
	const nx_shape *s = dot->operands[k]->shape;
	nx_ivec c = k ? dot->a.dot.rhs_contracting : dot->a.dot.lhs_contracting;
	int r = s->rank;
	if (t && (t->a.dimensions.n != r || t->operands[0]->shape->rank != r))
		return false;
	/* the operand's dim d is the reduce input's dim p[d] */
	bool red_d[NX_MAX_RANK] = {0}, con[NX_MAX_RANK] = {0};
	for (int q = 0; q < red->a.dimensions.n; q++)
		red_d[red->a.dimensions.v[q]] = true;
	for (int q = 0; q < c.n; q++)
		con[c.v[q]] = true;
	int64_t last = -1;
	for (int d = 0; d < r; d++) {
		int64_t p = t ? t->a.dimensions.v[d] : d;
		if (p < 0 || p >= r || red_d[p] != con[d])
			return false;
		if (!con[d] && s->dims[d] > 1) { /* the free dims keep their order */
			if (p < last)
				return false;
			last = p;
		}
	}
	if (red->a.dimensions.n != c.n)
		return false;
	memset(cs, 0, sizeof *cs);
	cs->k = k;
	cs->red = red;
	cs->init = (float)nx_lit_get_f64(init->a.literal, 0);
	cs->dt = (nx_dtype)nx_lower_dtype(o);
	return true;
}

/* ------------------------------------------------ a second output
 * (kernels/dot_sec.c): attention's dv = p^T . dctx beside dp = dctx . v^T,
 * whose row epilogue loads p per step anyway */

/* v is {n0, n0 + 1, .., n0 + n - 1} */
static bool iseq(nx_ivec v, int n0, int n)
{
	if (v.n != n)
		return false;
	for (int k = 0; k < n; k++)
		if (v.v[k] != n0 + k)
			return false;
	return true;
}

/* t = transpose(x) swapping the last two of nb + 2 dims */
static bool swap_last(const nx_inst *t, int nb)
{
	if (t->op != NX_OP_TRANSPOSE || t->noperands != 1 || t->a.dimensions.n != nb + 2)
		return false;
	for (int k = 0; k < nb + 2; k++)
		if (t->a.dimensions.v[k] != (k < nb ? k : 2 * nb + 1 - k))
			return false;
	return true;
}

bool nx_l_dot_sec_match(nx_lower *L, const nx_inst *d, const nx_inst *d2, const nx_inst *x, nx_l_res_fn res)
{
	if (d->op != NX_OP_DOT || d2->op != NX_OP_DOT || d->noperands != 2 || d2->noperands != 2)
		return false;
	const nx_dot_dnums *a = &d->a.dot, *b = &d2->a.dot;
	int nb = a->lhs_batch.n, r = nb + 2;
	if (nb < 1 || !iseq(a->lhs_batch, 0, nb) || !iseq(a->rhs_batch, 0, nb) || !iseq(b->lhs_batch, 0, nb) ||
	    !iseq(b->rhs_batch, 0, nb))
		return false;
	const nx_shape *o = d->shape, *xs = x->shape, *y = d2->operands[1]->shape;
	if (!nx_shape_is_array(o) || !nx_shape_is_array(xs) || !nx_shape_is_array(y) || !nx_shape_is_array(d2->shape) ||
	    o->rank != r || xs->rank != r || y->rank != r || d2->shape->rank != r || d->operands[0]->shape->rank != r ||
	    d2->operands[0]->shape->rank != r)
		return false;
	/* d: A [.., M, K] . B contracting K, its result [.., M, N]; d2: x
	 * (d's result's dims) contracting M, or x^T contracting its columns,
	 * and Y [.., M, K'] contracting M */
	if (!iseq(a->lhs_contracting, nb + 1, 1) || !iseq(b->rhs_contracting, nb, 1))
		return false;
	const nx_inst *l = res(L, d2->operands[0]);
	if (l == x) {
		if (!iseq(b->lhs_contracting, nb, 1))
			return false;
	} else if (!swap_last(l, nb) || res(L, l->operands[0]) != x || !iseq(b->lhs_contracting, nb + 1, 1)) {
		return false;
	}
	for (int k = 0; k < r; k++)
		if (xs->dims[k] != o->dims[k])
			return false;
	return nx_type_is_float(d2->shape->type) && nx_type_is_float(y->type) && nx_type_is_float(xs->type);
}

/* V's value and view, Y's view; false when they do not merge */
static bool sec_prep(nx_lower *L, nx_ldsec *s, int nb, int split)
{
	const nx_inst *i = s->i;
	int64_t ra[1] = {0}, ca[1] = {1};
	bool ok = split ? nx_l_dot_mat2(s->yv, nb, split, ra, 1, ca, 1, &s->Y) : nx_l_dot_mat(s->yv, nb, ra, 1, ca, 1, &s->Y);
	if (!ok || (split && s->Y.B2 == 0))
		return false;
	nx_lval *T = nx_l_newval(L, s->tout ? s->tout->shape : i->shape);
	nx_ldmat O;
	if (s->tout) {
		ok = nx_l_tout_mat(s->tout, i, nb, split, T, &O);
	} else { /* [batch, N, K'] contiguous */
		const int64_t *dims = i->shape->dims;
		memset(&O, 0, sizeof O);
		O.buf = T->buf, O.dt = T->dt;
		O.sc = 1, O.sr = dims[nb + 1], O.sb = dims[nb] * dims[nb + 1];
		if (split) {
			O.B2 = 1;
			for (int k = split; k < nb; k++)
				O.B2 *= dims[k];
			O.sb1 = O.B2 * O.sb;
		}
	}
	if (!ok) {
		nx_l_release_buf(L, T->buf);
		return false;
	}
	s->val = T, s->O = O;
	return true;
}

void nx_l_dot_sec_prep(nx_lower *L, int nb, int split)
{
	for (nx_ldsec **pp = L->dot_rows ? &L->dot_rows->sec : NULL; pp && *pp;) {
		(*pp)->val = NULL, (*pp)->done = false;
		if (sec_prep(L, *pp, nb, split))
			pp = &(*pp)->next;
		else
			*pp = (*pp)->next; /* without it */
	}
}

void nx_l_dot_sec_end(nx_lower *L)
{
	for (nx_ldsec *s = L->dot_rows ? L->dot_rows->sec : NULL; s; s = s->next)
		if (!s->done && s->val) {
			nx_l_release_buf(L, s->val->buf);
			s->val = NULL;
		}
}
