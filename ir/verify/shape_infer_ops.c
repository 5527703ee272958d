/* ir/verify/shape_infer_ops.c — shape inference for contractions, reductions,
 * windows, gather/scatter, sort, control flow and the numeric library ops
 * (fft, batch-norm, cholesky, triangular-solve, topk, rng). */
#include "ir/verify/shape_infer_int.h"

#include <stdlib.h>
#include <string.h>

static const char *unknown_attr(const nx_inst *i, const char *key)
{
	for (int k = 0; k < i->a.nunknown; k++)
		if (strcmp(i->a.unknown[k].key, key) == 0)
			return i->a.unknown[k].value;
	return NULL;
}

static bool in_ivec(nx_ivec v, int64_t x)
{
	for (int k = 0; k < v.n; k++)
		if (v.v[k] == x)
			return true;
	return false;
}

static bool is_numeric(nx_type t)
{
	return nx_type_is_int(t) || nx_type_is_float(t) || nx_type_kind_of(t) == NX_KIND_COMPLEX;
}

/* Result element type of a contraction: the declared (preferred) type. */
static nx_type contraction_type(const si_ctx *c, nx_type lhs)
{
	const nx_shape *dcl = c->i->shape;
	return nx_shape_is_array(dcl) && (is_numeric(dcl->type) || dcl->type == NX_PRED) ? dcl->type
	                                                                                  : lhs;
}

/* ------------------------------------------------------------------ dot */

static nx_shape *infer_dot(const si_ctx *c)
{
	const nx_shape *l = si_array_operand(c, 0), *r = si_array_operand(c, 1);
	if (!l || !r)
		return NULL;
	const nx_dot_dnums *dn = &c->i->a.dot;
	if (dn->lhs_batch.n != dn->rhs_batch.n)
		return si_fail(c, "dot has %d lhs batch dimensions and %d rhs batch dimensions",
		               dn->lhs_batch.n, dn->rhs_batch.n);
	if (dn->lhs_contracting.n != dn->rhs_contracting.n)
		return si_fail(c, "dot has %d lhs contracting dimensions and %d rhs contracting "
		               "dimensions", dn->lhs_contracting.n, dn->rhs_contracting.n);
	if (!si_dims_unique_in_range(c, dn->lhs_batch, l->rank, "lhs batch") ||
	    !si_dims_unique_in_range(c, dn->rhs_batch, r->rank, "rhs batch") ||
	    !si_dims_unique_in_range(c, dn->lhs_contracting, l->rank, "lhs contracting") ||
	    !si_dims_unique_in_range(c, dn->rhs_contracting, r->rank, "rhs contracting"))
		return NULL;
	for (int k = 0; k < dn->lhs_contracting.n; k++) {
		int64_t a = dn->lhs_contracting.v[k], b = dn->rhs_contracting.v[k];
		if (in_ivec(dn->lhs_batch, a) || in_ivec(dn->rhs_batch, b))
			return si_fail(c, "dot dimension is both batch and contracting");
		if (l->dims[a] != r->dims[b] && !si_dyn(l, (int)a) && !si_dyn(r, (int)b))
			return si_fail(c, "dot contracting dimensions differ: lhs dimension %lld is %lld, "
			               "rhs dimension %lld is %lld", (long long)a, (long long)l->dims[a],
			               (long long)b, (long long)r->dims[b]);
	}
	for (int k = 0; k < dn->lhs_batch.n; k++) {
		int64_t a = dn->lhs_batch.v[k], b = dn->rhs_batch.v[k];
		if (l->dims[a] != r->dims[b] && !si_dyn(l, (int)a) && !si_dyn(r, (int)b))
			return si_fail(c, "dot batch dimensions differ: lhs dimension %lld is %lld, rhs "
			               "dimension %lld is %lld", (long long)a, (long long)l->dims[a],
			               (long long)b, (long long)r->dims[b]);
	}
	if (!is_numeric(l->type) && l->type != NX_PRED)
		return si_fail(c, "dot operands must be numeric");
	int rank = l->rank + r->rank - 2 * dn->lhs_contracting.n - dn->lhs_batch.n;
	nx_shape *s = si_array(c, contraction_type(c, l->type), rank);
	int o = 0;
	for (int k = 0; k < dn->lhs_batch.n; k++, o++)
		si_set_dim(c, s, o, l->dims[dn->lhs_batch.v[k]], si_dyn(l, (int)dn->lhs_batch.v[k]));
	for (int k = 0; k < l->rank; k++)
		if (!in_ivec(dn->lhs_batch, k) && !in_ivec(dn->lhs_contracting, k))
			si_set_dim(c, s, o++, l->dims[k], si_dyn(l, k));
	for (int k = 0; k < r->rank; k++)
		if (!in_ivec(dn->rhs_batch, k) && !in_ivec(dn->rhs_contracting, k))
			si_set_dim(c, s, o++, r->dims[k], si_dyn(r, k));
	return s;
}

/* ragged-dot and scaled-dot: operand ranks and types are checked, the result
 * is taken as declared (their extra dimension numbers are kept verbatim). */
static nx_shape *infer_dot_variant(const si_ctx *c)
{
	for (int k = 0; k < c->i->noperands; k++)
		if (!si_array_operand(c, k))
			return NULL;
	if (!nx_shape_is_array(c->i->shape))
		return si_fail(c, "%s result must be an array", nx_opcode_name(c->i->op));
	return si_declared(c);
}

/* ---------------------------------------------------------- convolution */

static nx_shape *infer_convolution(const si_ctx *c)
{
	const nx_attrs *at = &c->i->a;
	if (!si_nops(c, 2))
		return NULL;
	const nx_shape *l = si_array_operand(c, 0), *r = si_array_operand(c, 1);
	if (!l || !r)
		return NULL;
	const nx_conv_dnums *cd = &at->conv;
	if (!cd->present)
		return si_fail(c, "convolution has no dim_labels");
	int ns = cd->in_spatial.n;
	if (l->rank != ns + 2 || r->rank != ns + 2 || cd->k_spatial.n != ns ||
	    cd->out_spatial.n != ns)
		return si_fail(c, "convolution dim_labels have %d spatial dimensions; lhs rank %d, rhs "
		               "rank %d", ns, l->rank, r->rank);
	if (at->window.ndims != ns)
		return si_fail(c, "convolution window has %d dimensions, dim_labels have %d",
		               at->window.ndims, ns);
	int64_t fgc = at->feature_group_count, bgc = at->batch_group_count;
	if (fgc < 1 || bgc < 1)
		return si_fail(c, "group counts must be positive");
	int64_t in_b = l->dims[cd->in_batch], in_f = l->dims[cd->in_feature];
	int64_t k_i = r->dims[cd->k_in], k_o = r->dims[cd->k_out];
	if (in_f % fgc)
		return si_fail(c, "input feature dimension %lld is not divisible by "
		               "feature_group_count %lld", (long long)in_f, (long long)fgc);
	if (in_f / fgc != k_i)
		return si_fail(c, "input feature dimension %lld / feature_group_count %lld != kernel "
		               "input feature dimension %lld", (long long)in_f, (long long)fgc,
		               (long long)k_i);
	if (k_o % fgc)
		return si_fail(c, "kernel output feature dimension %lld is not divisible by "
		               "feature_group_count %lld", (long long)k_o, (long long)fgc);
	if (in_b % bgc || k_o % bgc)
		return si_fail(c, "batch_group_count %lld does not divide the input batch %lld and "
		               "kernel output features %lld", (long long)bgc, (long long)in_b,
		               (long long)k_o);
	if (fgc > 1 && bgc > 1)
		return si_fail(c, "feature_group_count and batch_group_count cannot both exceed 1");
	nx_shape *s = si_array(c, contraction_type(c, l->type), ns + 2);
	if (cd->out_batch < 0 || cd->out_batch >= ns + 2 || cd->out_feature < 0 ||
	    cd->out_feature >= ns + 2)
		return si_fail(c, "bad output dimension numbers");
	si_set_dim(c, s, (int)cd->out_batch, in_b / bgc, si_dyn(l, (int)cd->in_batch));
	si_set_dim(c, s, (int)cd->out_feature, k_o, NX_DIM_STATIC);
	for (int k = 0; k < ns; k++) {
		const nx_window_dim *w = &at->window.dims[k];
		int64_t kd = r->dims[cd->k_spatial.v[k]];
		if (w->size != kd)
			return si_fail(c, "window size %lld in spatial dimension %d differs from the "
			               "kernel size %lld", (long long)w->size, k, (long long)kd);
		int64_t o = si_window_dim(c, l->dims[cd->in_spatial.v[k]], w, k);
		if (o < 0)
			return NULL;
		si_set_dim(c, s, (int)cd->out_spatial.v[k], o, NX_DIM_STATIC);
	}
	return s;
}

/* --------------------------------------------------------------- reduce */

static nx_shape *tuple_or_single(const si_ctx *c, int n, nx_shape **e)
{
	return n == 1 ? e[0] : nx_shape_tuple(c->a, n, e);
}

/* Variadic (inputs..., inits...): checks pairing, returns n. */
static int split_inputs_inits(const si_ctx *c, nx_type *acc, nx_type *in)
{
	const nx_inst *i = c->i;
	if (i->noperands < 2 || i->noperands % 2)
		return si_fail(c, "%s needs inputs and as many init values, got %d operands",
		               nx_opcode_name(i->op), i->noperands),
		       0;
	int n = i->noperands / 2;
	const nx_shape *s0 = si_array_operand(c, 0);
	if (!s0)
		return 0;
	for (int k = 0; k < n; k++) {
		const nx_shape *s = si_array_operand(c, k), *v = si_array_operand(c, n + k);
		if (!s || !v)
			return 0;
		if (!si_same_dims(s, s0))
			return si_fail(c, "input %d is %s, input 0 is %s", k, si_str(c, s),
			               si_str(c, s0)),
			       0;
		if (v->rank != 0)
			return si_fail(c, "init value %d must be a scalar, got %s", k, si_str(c, v)), 0;
		if (v->type != s->type &&
		    !(nx_type_is_float(v->type) && nx_type_is_float(s->type)))
			return si_fail(c, "init value %d has type %s, input is %s", k,
			               nx_type_name(v->type), si_str(c, s)),
			       0;
		acc[k] = v->type;
		in[k] = s->type;
	}
	return n;
}

static nx_shape *infer_reduce(const si_ctx *c)
{
	nx_type acc[64], in[64];
	if (c->i->noperands > 128)
		return si_fail(c, "too many reduce operands");
	int n = split_inputs_inits(c, acc, in);
	if (!n)
		return NULL;
	const nx_shape *s0 = c->i->operands[0]->shape;
	nx_ivec dm = c->i->a.dimensions;
	if (!si_dims_unique_in_range(c, dm, s0->rank, "reduce"))
		return NULL;
	const nx_comp *f = si_called(c, 0, "to_apply");
	if (!f || !si_check_reducer(c, f, "to_apply", n, acc, in))
		return NULL;
	nx_shape *e[64];
	for (int k = 0; k < n; k++) {
		e[k] = si_array(c, acc[k], s0->rank - dm.n);
		int o = 0;
		for (int d = 0; d < s0->rank; d++)
			if (!in_ivec(dm, d))
				si_set_dim(c, e[k], o++, s0->dims[d], si_dyn(s0, d));
	}
	return tuple_or_single(c, n, e);
}

static nx_shape *infer_reduce_window(const si_ctx *c)
{
	nx_type acc[64], in[64];
	if (c->i->noperands > 128)
		return si_fail(c, "too many reduce-window operands");
	int n = split_inputs_inits(c, acc, in);
	if (!n)
		return NULL;
	const nx_shape *s0 = c->i->operands[0]->shape;
	const nx_window *w = &c->i->a.window;
	if (w->ndims != s0->rank)
		return si_fail(c, "window has %d dimensions for rank-%d operand", w->ndims, s0->rank);
	const nx_comp *f = si_called(c, 0, "to_apply");
	if (!f || !si_check_reducer(c, f, "to_apply", n, acc, in))
		return NULL;
	nx_shape *e[64];
	for (int k = 0; k < n; k++)
		e[k] = si_array(c, acc[k], s0->rank);
	for (int d = 0; d < s0->rank; d++) {
		int64_t o = si_window_dim(c, s0->dims[d], &w->dims[d], d);
		if (o < 0)
			return NULL;
		for (int k = 0; k < n; k++)
			si_set_dim(c, e[k], d, o, NX_DIM_STATIC);
	}
	return tuple_or_single(c, n, e);
}

static nx_shape *infer_select_and_scatter(const si_ctx *c)
{
	const nx_shape *o = si_array_operand(c, 0), *src = si_array_operand(c, 1),
	               *init = si_array_operand(c, 2);
	if (!o || !src || !init)
		return NULL;
	if (init->rank != 0 || init->type != src->type)
		return si_fail(c, "init value must be a %s scalar, got %s", nx_type_name(src->type),
		               si_str(c, init));
	const nx_window *w = &c->i->a.window;
	if (w->ndims != o->rank)
		return si_fail(c, "window has %d dimensions for rank-%d operand", w->ndims, o->rank);
	if (src->rank != o->rank)
		return si_fail(c, "source rank %d differs from operand rank %d", src->rank, o->rank);
	for (int d = 0; d < o->rank; d++) {
		int64_t n = si_window_dim(c, o->dims[d], &w->dims[d], d);
		if (n < 0)
			return NULL;
		if (n != src->dims[d])
			return si_fail(c, "source %s does not match the window output of operand %s "
			               "(dimension %d should be %lld)", si_str(c, src), si_str(c, o), d,
			               (long long)n);
	}
	const nx_comp *sel = si_called(c, 0, "select");
	const nx_comp *sc = si_called(c, 1, "scatter");
	if (!sel || !sc)
		return NULL;
	nx_shape *ps[2] = {nx_shape_scalar(c->a, o->type), nx_shape_scalar(c->a, o->type)};
	if (!si_check_params(c, sel, "select", 2, ps))
		return NULL;
	if (!si_is_scalar(sel->root->shape) || sel->root->shape->type != NX_PRED)
		return si_fail(c, "select computation '%s' returns %s, expected pred[]", sel->name,
		               si_str(c, sel->root->shape));
	nx_type acc = init->type;
	if (!si_check_reducer(c, sc, "scatter", 1, &acc, NULL))
		return NULL;
	nx_shape *r = nx_shape_copy(c->a, o);
	nx_shape_set_default_layout(r);
	return r;
}

/* --------------------------------------------------------------- gather */

static nx_shape *infer_gather(const si_ctx *c)
{
	const nx_shape *o = si_array_operand(c, 0), *ix = si_array_operand(c, 1);
	if (!o || !ix)
		return NULL;
	const nx_gather_dnums *g = &c->i->a.gather;
	if (!nx_type_is_int(ix->type))
		return si_fail(c, "gather indices must be integers, got %s", si_str(c, ix));
	int64_t ivd = g->index_vector_dim;
	if (ivd < 0 || ivd > ix->rank)
		return si_fail(c, "index_vector_dim %lld out of range for rank-%d indices",
		               (long long)ivd, ix->rank);
	int64_t nidx = ivd == ix->rank ? 1 : ix->dims[ivd];
	if (g->start_index_map.n != nidx)
		return si_fail(c, "start_index_map has %d entries, the index vector has %lld",
		               g->start_index_map.n, (long long)nidx);
	if (g->slice_sizes.n != o->rank)
		return si_fail(c, "slice_sizes has %d entries for rank-%d operand", g->slice_sizes.n,
		               o->rank);
	if (!si_dims_unique_in_range(c, g->start_index_map, o->rank, "start_index_map") ||
	    !si_dims_unique_in_range(c, g->collapsed_slice_dims, o->rank, "collapsed_slice_dims") ||
	    !si_dims_unique_in_range(c, g->operand_batching_dims, o->rank, "operand_batching_dims"))
		return NULL;
	if (g->offset_dims.n + g->collapsed_slice_dims.n + g->operand_batching_dims.n != o->rank)
		return si_fail(c, "offset_dims (%d) + collapsed_slice_dims (%d) + "
		               "operand_batching_dims (%d) must equal the operand rank %d",
		               g->offset_dims.n, g->collapsed_slice_dims.n,
		               g->operand_batching_dims.n, o->rank);
	for (int k = 0; k < o->rank; k++) {
		int64_t s = g->slice_sizes.v[k];
		if (s < 0 || s > o->dims[k])
			return si_fail(c, "slice size %lld out of bounds for operand dimension %d of size "
			               "%lld", (long long)s, k, (long long)o->dims[k]);
		if ((in_ivec(g->collapsed_slice_dims, k) || in_ivec(g->operand_batching_dims, k)) &&
		    s > 1)
			return si_fail(c, "collapsed/batching dimension %d must have slice size <= 1, got "
			               "%lld", k, (long long)s);
	}
	int batch_rank = ivd == ix->rank ? ix->rank : ix->rank - 1;
	int out_rank = batch_rank + g->offset_dims.n;
	for (int k = 0; k < g->offset_dims.n; k++) {
		if (g->offset_dims.v[k] < 0 || g->offset_dims.v[k] >= out_rank)
			return si_fail(c, "offset dimension %lld out of range for rank-%d result",
			               (long long)g->offset_dims.v[k], out_rank);
		if (k && g->offset_dims.v[k] <= g->offset_dims.v[k - 1])
			return si_fail(c, "offset_dims must be sorted and unique");
	}
	if (g->start_indices_batching_dims.n != g->operand_batching_dims.n)
		return si_fail(c, "start_indices_batching_dims and operand_batching_dims differ in "
		               "length");
	nx_shape *r = si_array(c, o->type, out_rank);
	int oi = 0, bi = 0;
	for (int k = 0; k < out_rank; k++) {
		if (in_ivec(g->offset_dims, k)) {
			while (in_ivec(g->collapsed_slice_dims, oi) || in_ivec(g->operand_batching_dims, oi))
				oi++;
			si_set_dim(c, r, k, g->slice_sizes.v[oi], NX_DIM_STATIC);
			oi++;
		} else {
			if (bi == ivd)
				bi++;
			si_set_dim(c, r, k, ix->dims[bi], si_dyn(ix, bi));
			bi++;
		}
	}
	return r;
}

/* -------------------------------------------------------------- scatter */

static nx_shape *infer_scatter(const si_ctx *c)
{
	const nx_inst *i = c->i;
	if (i->noperands < 3 || (i->noperands - 1) % 2)
		return si_fail(c, "scatter needs operands, indices and as many updates, got %d "
		               "operands", i->noperands);
	int n = (i->noperands - 1) / 2;
	if (n > 64)
		return si_fail(c, "too many scatter operands");
	const nx_shape *ix = si_array_operand(c, n);
	const nx_shape *o0 = si_array_operand(c, 0);
	if (!ix || !o0)
		return NULL;
	if (!nx_type_is_int(ix->type))
		return si_fail(c, "scatter indices must be integers, got %s", si_str(c, ix));
	const nx_scatter_dnums *s = &i->a.scatter;
	int64_t ivd = s->index_vector_dim;
	if (ivd < 0 || ivd > ix->rank)
		return si_fail(c, "index_vector_dim %lld out of range for rank-%d indices",
		               (long long)ivd, ix->rank);
	int64_t nidx = ivd == ix->rank ? 1 : ix->dims[ivd];
	if (s->scatter_dims_to_operand_dims.n != nidx)
		return si_fail(c, "scatter_dims_to_operand_dims has %d entries, the index vector has "
		               "%lld", s->scatter_dims_to_operand_dims.n, (long long)nidx);
	if (!si_dims_unique_in_range(c, s->scatter_dims_to_operand_dims, o0->rank,
	                             "scatter_dims_to_operand_dims") ||
	    !si_dims_unique_in_range(c, s->inserted_window_dims, o0->rank, "inserted_window_dims") ||
	    !si_dims_unique_in_range(c, s->input_batching_dims, o0->rank, "input_batching_dims"))
		return NULL;
	if (s->update_window_dims.n + s->inserted_window_dims.n + s->input_batching_dims.n !=
	    o0->rank)
		return si_fail(c, "update_window_dims (%d) + inserted_window_dims (%d) + "
		               "input_batching_dims (%d) must equal the operand rank %d",
		               s->update_window_dims.n, s->inserted_window_dims.n,
		               s->input_batching_dims.n, o0->rank);
	int scatter_rank = ivd == ix->rank ? ix->rank : ix->rank - 1;
	nx_type acc[64], in[64];
	nx_shape *e[64];
	for (int k = 0; k < n; k++) {
		const nx_shape *o = si_array_operand(c, k), *u = si_array_operand(c, n + 1 + k);
		if (!o || !u)
			return NULL;
		if (!si_same_dims(o, o0))
			return si_fail(c, "scatter operand %d is %s, operand 0 is %s", k, si_str(c, o),
			               si_str(c, o0));
		if (u->rank != scatter_rank + s->update_window_dims.n)
			return si_fail(c, "updates %d has rank %d, expected %d (scatter dims %d + window "
			               "dims %d)", k, u->rank, scatter_rank + s->update_window_dims.n,
			               scatter_rank, s->update_window_dims.n);
		if (u->type != o->type)
			return si_fail(c, "updates %d type %s differs from operand type %s", k,
			               nx_type_name(u->type), nx_type_name(o->type));
		for (int d = 0; d < s->update_window_dims.n; d++) {
			int64_t wd = s->update_window_dims.v[d];
			if (wd < 0 || wd >= u->rank || (d && wd <= s->update_window_dims.v[d - 1]))
				return si_fail(c, "update_window_dims must be sorted and within the updates "
				               "rank %d", u->rank);
		}
		/* window dims of the updates map, in order, onto operand dims that
		 * are neither inserted nor batching; scatter dims match the indices. */
		int od = 0, sd = 0;
		for (int d = 0; d < u->rank; d++) {
			if (in_ivec(s->update_window_dims, d)) {
				while (in_ivec(s->inserted_window_dims, od) || in_ivec(s->input_batching_dims, od))
					od++;
				if (u->dims[d] > o->dims[od])
					return si_fail(c, "updates dimension %d (%lld) exceeds operand dimension "
					               "%d (%lld)", d, (long long)u->dims[d], od,
					               (long long)o->dims[od]);
				od++;
			} else {
				if (sd == ivd)
					sd++;
				if (u->dims[d] != ix->dims[sd] && !si_dyn(u, d) && !si_dyn(ix, sd))
					return si_fail(c, "updates scatter dimension %d (%lld) differs from "
					               "indices dimension %d (%lld)", d, (long long)u->dims[d], sd,
					               (long long)ix->dims[sd]);
				sd++;
			}
		}
		acc[k] = o->type;
		in[k] = u->type;
		e[k] = nx_shape_copy(c->a, o);
		nx_shape_set_default_layout(e[k]);
	}
	const nx_comp *f = si_called(c, 0, "to_apply");
	if (!f || !si_check_reducer(c, f, "to_apply", n, acc, in))
		return NULL;
	return tuple_or_single(c, n, e);
}

/* ----------------------------------------------------------- sort, map */

static nx_shape *infer_sort(const si_ctx *c)
{
	const nx_inst *i = c->i;
	if (!si_min_ops(c, 1))
		return NULL;
	const nx_shape *o0 = si_array_operand(c, 0);
	if (!o0)
		return NULL;
	if (i->a.dimensions.n != 1 || i->a.dimensions.v[0] < 0 || i->a.dimensions.v[0] >= o0->rank)
		return si_fail(c, "sort dimension %lld out of range for rank-%d operand",
		               (long long)(i->a.dimensions.n ? i->a.dimensions.v[0] : -1), o0->rank);
	int n = i->noperands;
	nx_shape **e = nx_arena_alloc(c->a, sizeof(nx_shape *) * (size_t)n);
	nx_shape **ps = nx_arena_alloc(c->a, sizeof(nx_shape *) * (size_t)(2 * n));
	for (int k = 0; k < n; k++) {
		const nx_shape *o = si_array_operand(c, k);
		if (!o)
			return NULL;
		if (!si_same_dims(o, o0))
			return si_fail(c, "sort operand %d is %s, operand 0 is %s", k, si_str(c, o),
			               si_str(c, o0));
		e[k] = nx_shape_copy(c->a, o);
		nx_shape_set_default_layout(e[k]);
		ps[2 * k] = ps[2 * k + 1] = nx_shape_scalar(c->a, o->type);
	}
	const nx_comp *f = si_called(c, 0, "comparator");
	if (!f || !si_check_params(c, f, "comparator", 2 * n, ps))
		return NULL;
	if (!si_is_scalar(f->root->shape) || f->root->shape->type != NX_PRED)
		return si_fail(c, "comparator computation '%s' returns %s, expected pred[]", f->name,
		               si_str(c, f->root->shape));
	return tuple_or_single(c, n, e);
}

static nx_shape *infer_map(const si_ctx *c)
{
	const nx_inst *i = c->i;
	if (!si_min_ops(c, 1))
		return NULL;
	const nx_shape *o0 = si_array_operand(c, 0);
	if (!o0)
		return NULL;
	nx_shape **ps = nx_arena_alloc(c->a, sizeof(nx_shape *) * (size_t)i->noperands);
	for (int k = 0; k < i->noperands; k++) {
		const nx_shape *o = si_array_operand(c, k);
		if (!o)
			return NULL;
		if (!si_same_dims(o, o0))
			return si_fail(c, "map operand %d is %s, operand 0 is %s", k, si_str(c, o),
			               si_str(c, o0));
		ps[k] = nx_shape_scalar(c->a, o->type);
	}
	const nx_comp *f = si_called(c, 0, "to_apply");
	if (!f || !si_check_params(c, f, "to_apply", i->noperands, ps))
		return NULL;
	if (!si_is_scalar(f->root->shape))
		return si_fail(c, "to_apply computation '%s' must return a scalar, returns %s",
		               f->name, si_str(c, f->root->shape));
	nx_shape *r = nx_shape_with_type(c->a, o0, f->root->shape->type);
	nx_shape_set_default_layout(r);
	return r;
}

/* --------------------------------------------------------- control flow */

static nx_shape *infer_while(const si_ctx *c)
{
	const nx_shape *init = c->i->operands[0]->shape;
	const nx_comp *cond = si_called(c, 0, "condition"), *body = si_called(c, 1, "body");
	if (!cond || !body)
		return NULL;
	nx_shape *p[1] = {(nx_shape *)init};
	if (!si_check_params(c, cond, "condition", 1, p) || !si_check_params(c, body, "body", 1, p))
		return NULL;
	const nx_shape *cr = cond->root->shape;
	if (!si_is_scalar(cr) || cr->type != NX_PRED)
		return si_fail(c, "condition computation '%s' returns %s, expected pred[]", cond->name,
		               si_str(c, cr));
	if (!nx_shape_infer_match(body->root->shape, init))
		return si_fail(c, "body computation '%s' returns %s, the loop state is %s", body->name,
		               si_str(c, body->root->shape), si_str(c, init));
	return nx_shape_copy(c->a, init);
}

static nx_shape *infer_conditional(const si_ctx *c)
{
	const nx_inst *i = c->i;
	if (!si_min_ops(c, 1))
		return NULL;
	const nx_shape *sel = i->operands[0]->shape;
	int nb = i->ncalled;
	if (si_is_scalar(sel) && sel->type == NX_PRED) {
		if (nb != 2)
			return si_fail(c, "conditional with a pred selector needs 2 branches, got %d", nb);
	} else if (si_is_scalar(sel) && sel->type == NX_S32) {
		if (nb < 1)
			return si_fail(c, "conditional needs at least one branch");
	} else
		return si_fail(c, "conditional selector must be pred[] or s32[], got %s",
		               si_str(c, sel));
	if (i->noperands != nb + 1)
		return si_fail(c, "conditional with %d branches needs %d operands, got %d", nb, nb + 1,
		               i->noperands);
	const nx_shape *res = NULL;
	for (int k = 0; k < nb; k++) {
		const nx_comp *b = si_called(c, k, "branch");
		if (!b)
			return NULL;
		nx_shape *p[1] = {i->operands[k + 1]->shape};
		if (!si_check_params(c, b, "branch", 1, p))
			return NULL;
		if (!res)
			res = b->root->shape;
		else if (!nx_shape_infer_match(b->root->shape, res))
			return si_fail(c, "branch computation '%s' returns %s, branch 0 returns %s",
			               b->name, si_str(c, b->root->shape), si_str(c, res));
	}
	return nx_shape_copy(c->a, res);
}

/* call, fusion: the called computation's parameters are the operands. */
static nx_shape *infer_call(const si_ctx *c)
{
	const nx_inst *i = c->i;
	const nx_comp *f = si_called(c, 0, i->op == NX_OP_FUSION ? "fused" : "to_apply");
	if (!f)
		return NULL;
	nx_shape **p = nx_arena_alloc(c->a, sizeof(nx_shape *) * (size_t)(i->noperands + 1));
	for (int k = 0; k < i->noperands; k++)
		p[k] = i->operands[k]->shape;
	if (!si_check_params(c, f, i->op == NX_OP_FUSION ? "fused" : "to_apply", i->noperands, p))
		return NULL;
	return nx_shape_copy(c->a, f->root->shape);
}

/* ----------------------------------------------------------------- rng */

static nx_shape *infer_rng(const si_ctx *c)
{
	const nx_inst *i = c->i;
	const nx_shape *dcl = i->shape;
	if (!nx_shape_is_array(dcl))
		return si_fail(c, "rng result must be an array");
	if (i->noperands != 2)
		return si_fail(c, "rng takes 2 operands, got %d", i->noperands);
	for (int k = 0; k < 2; k++) {
		const nx_shape *s = i->operands[k]->shape;
		if (!si_is_scalar(s) || s->type != dcl->type)
			return si_fail(c, "rng parameter %d must be a %s scalar, got %s", k,
			               nx_type_name(dcl->type), si_str(c, s));
	}
	if (i->a.rng_distribution == NX_RNG_DIST_NORMAL && !nx_type_is_float(dcl->type))
		return si_fail(c, "rng_normal needs a floating-point result");
	return si_declared(c);
}

static nx_shape *infer_rng_bit_generator(const si_ctx *c)
{
	const nx_shape *st = si_array_operand(c, 0), *dcl = c->i->shape;
	if (!st)
		return NULL;
	if (dcl->type != NX_TUPLE || dcl->ntuple != 2 || !nx_shape_is_array(dcl->tuple[1]))
		return si_fail(c, "rng-bit-generator result must be a (state, values) tuple, declared "
		               "%s", si_str(c, dcl));
	if (!nx_type_is_int(dcl->tuple[1]->type))
		return si_fail(c, "rng-bit-generator values must be integers, declared %s",
		               si_str(c, dcl->tuple[1]));
	nx_shape *e[2] = {nx_shape_copy(c->a, st), nx_shape_copy(c->a, dcl->tuple[1])};
	return nx_shape_tuple(c->a, 2, e);
}

/* ------------------------------------------------------ batch norm */

static nx_shape *infer_batch_norm(const si_ctx *c)
{
	const nx_inst *i = c->i;
	const nx_shape *o = si_array_operand(c, 0);
	if (!o)
		return NULL;
	if (!nx_type_is_float(o->type))
		return si_fail(c, "%s needs a floating-point operand, got %s", nx_opcode_name(i->op),
		               si_str(c, o));
	int64_t f = i->a.feature_index;
	if (f < 0 || f >= o->rank)
		return si_fail(c, "feature_index %lld out of range for rank-%d operand", (long long)f,
		               o->rank);
	int64_t nf = o->dims[f];
	for (int k = 1; k < i->noperands; k++) {
		const nx_shape *s = si_array_operand(c, k);
		if (!s)
			return NULL;
		bool full = i->op == NX_OP_BATCH_NORM_GRAD && k == 4;
		bool ok = s->type == o->type &&
		          (full ? si_same_dims(s, o) : (s->rank == 1 && s->dims[0] == nf));
		if (!ok)
			return si_fail(c, "operand %d of %s is %s, expected %s", k, nx_opcode_name(i->op),
			               si_str(c, s),
			               full ? si_str(c, o)
			                    : nx_arena_printf(c->a, "%s[%lld]", nx_type_name(o->type),
			                                      (long long)nf));
	}
	nx_shape *r = nx_shape_copy(c->a, o);
	nx_shape_set_default_layout(r);
	if (i->op == NX_OP_BATCH_NORM_INFERENCE)
		return r;
	int64_t d[1] = {nf};
	nx_shape *e[3] = {r, nx_shape_array(c->a, o->type, 1, d), nx_shape_array(c->a, o->type, 1, d)};
	return nx_shape_tuple(c->a, 3, e);
}

/* ------------------------------------------------------------- linalg, fft */

static nx_shape *infer_fft(const si_ctx *c)
{
	const nx_attrs *at = &c->i->a;
	const nx_shape *o = si_array_operand(c, 0);
	if (!o)
		return NULL;
	int n = at->fft_length.n;
	if (n < 1 || n > 3 || o->rank < n)
		return si_fail(c, "fft_length has %d entries for rank-%d operand (1..3 and <= rank)", n,
		               o->rank);
	bool cplx = nx_type_kind_of(o->type) == NX_KIND_COMPLEX;
	nx_shape *r = nx_shape_copy(c->a, o);
	nx_shape_set_default_layout(r);
	int base = o->rank - n;
	switch (at->fft_type) {
	case NX_FFT_FFT:
	case NX_FFT_IFFT:
		if (!cplx)
			return si_fail(c, "%s needs a complex operand, got %s",
			               at->fft_type == NX_FFT_FFT ? "FFT" : "IFFT", si_str(c, o));
		/* XLA does not tie FFT/IFFT operand dims to fft_length. */
		return r;
	case NX_FFT_RFFT:
		if (o->type != NX_F32 && o->type != NX_F64)
			return si_fail(c, "RFFT needs an f32 or f64 operand, got %s", si_str(c, o));
		for (int k = 0; k < n; k++)
			if (o->dims[base + k] != at->fft_length.v[k])
				return si_fail(c, "operand dimension %d (%lld) differs from fft_length %lld",
				               base + k, (long long)o->dims[base + k],
				               (long long)at->fft_length.v[k]);
		r->type = o->type == NX_F32 ? NX_C64 : NX_C128;
		r->dims[o->rank - 1] = at->fft_length.v[n - 1] == 0 ? 0 : at->fft_length.v[n - 1] / 2 + 1;
		return r;
	case NX_FFT_IRFFT:
		if (!cplx)
			return si_fail(c, "IRFFT needs a complex operand, got %s", si_str(c, o));
		for (int k = 0; k < n; k++) {
			int64_t want = at->fft_length.v[k];
			if (k == n - 1)
				want = want == 0 ? 0 : want / 2 + 1;
			if (o->dims[base + k] != want)
				return si_fail(c, "operand dimension %d (%lld) should be %lld for fft_length",
				               base + k, (long long)o->dims[base + k], (long long)want);
		}
		r->type = o->type == NX_C64 ? NX_F32 : NX_F64;
		r->dims[o->rank - 1] = at->fft_length.v[n - 1];
		return r;
	default:
		return si_fail(c, "fft has no fft_type");
	}
}

static nx_shape *infer_cholesky(const si_ctx *c)
{
	const nx_shape *o = si_array_operand(c, 0);
	if (!o)
		return NULL;
	if (o->rank < 2 || o->dims[o->rank - 1] != o->dims[o->rank - 2])
		return si_fail(c, "cholesky needs square matrices in the two minor dimensions, got %s",
		               si_str(c, o));
	if (!nx_type_is_float(o->type) && nx_type_kind_of(o->type) != NX_KIND_COMPLEX)
		return si_fail(c, "cholesky needs a floating-point operand, got %s", si_str(c, o));
	nx_shape *r = nx_shape_copy(c->a, o);
	nx_shape_set_default_layout(r);
	return r;
}

static nx_shape *infer_triangular_solve(const si_ctx *c)
{
	const nx_shape *a = si_array_operand(c, 0), *b = si_array_operand(c, 1);
	if (!a || !b)
		return NULL;
	if (a->type != b->type)
		return si_fail(c, "triangular-solve operands differ in type: %s and %s",
		               nx_type_name(a->type), nx_type_name(b->type));
	if (a->rank < 2 || a->rank != b->rank || a->dims[a->rank - 1] != a->dims[a->rank - 2])
		return si_fail(c, "triangular-solve needs square a and b of the same rank, got %s and %s",
		               si_str(c, a), si_str(c, b));
	for (int k = 0; k < a->rank - 2; k++)
		if (a->dims[k] != b->dims[k])
			return si_fail(c, "triangular-solve batch dimension %d differs", k);
	const char *ls = unknown_attr(c->i, "left_side");
	bool left = ls && strcmp(ls, "true") == 0;
	int64_t m = a->dims[a->rank - 1];
	int64_t want = left ? b->dims[b->rank - 2] : b->dims[b->rank - 1];
	if (want != m)
		return si_fail(c, "triangular-solve: a is %s, b is %s (left_side=%s)", si_str(c, a),
		               si_str(c, b), left ? "true" : "false");
	nx_shape *r = nx_shape_copy(c->a, b);
	nx_shape_set_default_layout(r);
	return r;
}

static nx_shape *infer_topk(const si_ctx *c)
{
	const nx_shape *o = si_array_operand(c, 0), *dcl = c->i->shape;
	if (!o)
		return NULL;
	if (o->rank < 1)
		return si_fail(c, "topk needs an operand of rank >= 1");
	const char *ks = unknown_attr(c->i, "k");
	int64_t k;
	if (ks)
		k = strtoll(ks, NULL, 10);
	else if (dcl->type == NX_TUPLE && dcl->ntuple == 2 && nx_shape_is_array(dcl->tuple[0]) &&
	         dcl->tuple[0]->rank == o->rank)
		k = dcl->tuple[0]->dims[o->rank - 1];
	else
		return si_fail(c, "topk has no k");
	if (k < 0 || k > o->dims[o->rank - 1])
		return si_fail(c, "topk k=%lld exceeds the last dimension of %s", (long long)k,
		               si_str(c, o));
	nx_shape *v = nx_shape_copy(c->a, o);
	nx_shape_set_default_layout(v);
	v->dims[o->rank - 1] = k;
	nx_shape *e[2] = {v, nx_shape_with_type(c->a, v, NX_S32)};
	return nx_shape_tuple(c->a, 2, e);
}

/* scan, shuffle, rng-get-and-update-state: shapes are taken as declared. */
static nx_shape *infer_declared(const si_ctx *c) { return si_declared(c); }

nx_shape *si_infer_ops(const si_ctx *c)
{
	switch (c->i->op) {
	case NX_OP_DOT: return infer_dot(c);
	case NX_OP_RAGGED_DOT:
	case NX_OP_SCALED_DOT: return infer_dot_variant(c);
	case NX_OP_CONVOLUTION: return infer_convolution(c);
	case NX_OP_REDUCE: return infer_reduce(c);
	case NX_OP_REDUCE_WINDOW: return infer_reduce_window(c);
	case NX_OP_SELECT_AND_SCATTER: return infer_select_and_scatter(c);
	case NX_OP_GATHER: return infer_gather(c);
	case NX_OP_SCATTER: return infer_scatter(c);
	case NX_OP_SORT: return infer_sort(c);
	case NX_OP_MAP: return infer_map(c);
	case NX_OP_WHILE: return infer_while(c);
	case NX_OP_CONDITIONAL: return infer_conditional(c);
	case NX_OP_CALL:
	case NX_OP_FUSION: return infer_call(c);
	case NX_OP_RNG: return infer_rng(c);
	case NX_OP_RNG_BIT_GENERATOR: return infer_rng_bit_generator(c);
	case NX_OP_BATCH_NORM_TRAINING:
	case NX_OP_BATCH_NORM_INFERENCE:
	case NX_OP_BATCH_NORM_GRAD: return infer_batch_norm(c);
	case NX_OP_FFT: return infer_fft(c);
	case NX_OP_CHOLESKY: return infer_cholesky(c);
	case NX_OP_TRIANGULAR_SOLVE: return infer_triangular_solve(c);
	case NX_OP_TOPK: return infer_topk(c);
	case NX_OP_SCAN:
	case NX_OP_SHUFFLE:
	case NX_OP_RNG_GET_AND_UPDATE_STATE: return infer_declared(c);
	default: break;
	}
	return si_fail(c, "no shape inference for opcode %s", nx_opcode_name(c->i->op));
}
