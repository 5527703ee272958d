/* ir/eval/eval_data.c — data movement: broadcast, reshape, transpose, slice,
 * dynamic-slice, dynamic-update-slice, concatenate, pad, reverse, iota, copy,
 * bitcast(-convert), reduce-precision, get/set-dimension-size.
 *
 * Literals are row-major whatever their layout, so layout-only changes
 * (copy, reshape between layouts) are plain copies. Everything else is one
 * nx_copy_nd over element strides, typed by element size only. */
#include "ir/eval/eval_impl.h"

#include <math.h>
#include <string.h>

static nx_status alloc_out(nx_eval *ev, const nx_inst *i, nx_literal **out)
{
	*out = nx_eval_alloc(ev, i->shape);
	return *out ? NX_OK : NX_ERR_INPUT;
}

/* Start index k of a dynamic slice from a scalar index operand, clamped so
 * the slice stays in bounds (XLA semantics). */
static int64_t dyn_start(const nx_literal *idx, int64_t dim, int64_t size)
{
	int64_t v = nx_lit_get_i64(idx, 0);
	if (idx->shape->type == NX_U64 && (uint64_t)v > (uint64_t)INT64_MAX)
		v = INT64_MAX;
	int64_t hi = dim - size;
	if (v > hi)
		v = hi;
	if (v < 0)
		v = 0;
	return v;
}

static nx_status broadcast(nx_eval *ev, const nx_inst *i, const nx_literal *x, nx_literal *o)
{
	int r = o->shape->rank;
	int64_t ost[NX_MAX_RANK], xst[NX_MAX_RANK], sst[NX_MAX_RANK] = {0};
	nx_strides(o->shape, ost);
	nx_strides(x->shape, xst);
	if (i->a.dimensions.n != x->shape->rank)
		return nx_eval_error(ev, i, "broadcast dimensions do not match the operand rank");
	for (int k = 0; k < i->a.dimensions.n; k++) {
		int64_t d = i->a.dimensions.v[k];
		if (d < 0 || d >= r || x->shape->dims[k] != o->shape->dims[d])
			return nx_eval_error(ev, i, "broadcast dimension %d does not match", k);
		sst[d] = xst[k];
	}
	nx_copy_nd(o->data, ost, x->data, sst, o->shape->dims, r, nx_type_bytes(o->shape->type));
	return NX_OK;
}

static nx_status transpose(nx_eval *ev, const nx_inst *i, const nx_literal *x, nx_literal *o)
{
	int r = o->shape->rank;
	int64_t ost[NX_MAX_RANK], xst[NX_MAX_RANK], sst[NX_MAX_RANK];
	nx_strides(o->shape, ost);
	nx_strides(x->shape, xst);
	if (i->a.dimensions.n != r)
		return nx_eval_error(ev, i, "transpose permutation has the wrong length");
	for (int k = 0; k < r; k++) {
		int64_t d = i->a.dimensions.v[k];
		if (d < 0 || d >= r)
			return nx_eval_error(ev, i, "bad transpose permutation");
		sst[k] = xst[d];
	}
	nx_copy_nd(o->data, ost, x->data, sst, o->shape->dims, r, nx_type_bytes(o->shape->type));
	return NX_OK;
}

static nx_status slice(nx_eval *ev, const nx_inst *i, const nx_literal *x, nx_literal *o)
{
	int r = o->shape->rank, esz = nx_type_bytes(o->shape->type);
	int64_t ost[NX_MAX_RANK], xst[NX_MAX_RANK], sst[NX_MAX_RANK];
	nx_strides(o->shape, ost);
	nx_strides(x->shape, xst);
	if (i->a.slice_start.n != r)
		return nx_eval_error(ev, i, "slice has %d ranges for rank %d", i->a.slice_start.n, r);
	int64_t off = 0;
	for (int k = 0; k < r; k++) {
		int64_t st = i->a.slice_stride.n == r ? i->a.slice_stride.v[k] : 1;
		off += i->a.slice_start.v[k] * xst[k];
		sst[k] = xst[k] * st;
	}
	if (nx_shape_elems(o->shape) > 0)
		nx_copy_nd(o->data, ost, (const uint8_t *)x->data + off * esz, sst, o->shape->dims, r, esz);
	return NX_OK;
}

static nx_status dynamic_slice(nx_eval *ev, const nx_inst *i, nx_literal *const *ops, nx_literal *o)
{
	const nx_literal *x = ops[0];
	int r = o->shape->rank, esz = nx_type_bytes(o->shape->type);
	int64_t ost[NX_MAX_RANK], xst[NX_MAX_RANK];
	nx_strides(o->shape, ost);
	nx_strides(x->shape, xst);
	if (i->noperands != r + 1)
		return nx_eval_error(ev, i, "dynamic-slice needs one scalar index per dimension");
	int64_t off = 0;
	for (int k = 0; k < r; k++)
		off += dyn_start(ops[1 + k], x->shape->dims[k], o->shape->dims[k]) * xst[k];
	if (nx_shape_elems(o->shape) > 0)
		nx_copy_nd(o->data, ost, (const uint8_t *)x->data + off * esz, xst, o->shape->dims, r, esz);
	return NX_OK;
}

static nx_status dynamic_update_slice(nx_eval *ev, const nx_inst *i, nx_literal *const *ops, nx_literal *o)
{
	const nx_literal *x = ops[0], *u = ops[1];
	int r = o->shape->rank, esz = nx_type_bytes(o->shape->type);
	int64_t ost[NX_MAX_RANK], ust[NX_MAX_RANK];
	nx_strides(o->shape, ost);
	nx_strides(u->shape, ust);
	if (i->noperands != r + 2 || u->shape->rank != r)
		return nx_eval_error(ev, i, "dynamic-update-slice needs one scalar index per dimension");
	if (o->nbytes)
		memcpy(o->data, x->data, (size_t)o->nbytes);
	int64_t off = 0;
	for (int k = 0; k < r; k++) {
		if (u->shape->dims[k] > o->shape->dims[k])
			return nx_eval_error(ev, i, "update is larger than the operand");
		off += dyn_start(ops[2 + k], o->shape->dims[k], u->shape->dims[k]) * ost[k];
	}
	if (nx_shape_elems(u->shape) > 0)
		nx_copy_nd((uint8_t *)o->data + off * esz, ost, u->data, ust, u->shape->dims, r, esz);
	return NX_OK;
}

static nx_status concatenate(nx_eval *ev, const nx_inst *i, nx_literal *const *ops, nx_literal *o)
{
	int r = o->shape->rank, esz = nx_type_bytes(o->shape->type);
	if (i->a.dimensions.n != 1)
		return nx_eval_error(ev, i, "concatenate needs one dimension");
	int64_t d = i->a.dimensions.v[0], ost[NX_MAX_RANK], xst[NX_MAX_RANK], at = 0;
	if (d < 0 || d >= r)
		return nx_eval_error(ev, i, "concatenate dimension out of range");
	nx_strides(o->shape, ost);
	for (int j = 0; j < i->noperands; j++) {
		const nx_literal *x = ops[j];
		nx_strides(x->shape, xst);
		if (at + x->shape->dims[d] > o->shape->dims[d])
			return nx_eval_error(ev, i, "concatenated operands exceed the result");
		if (nx_shape_elems(x->shape) > 0)
			nx_copy_nd((uint8_t *)o->data + at * ost[d] * esz, ost, x->data, xst, x->shape->dims, r, esz);
		at += x->shape->dims[d];
	}
	return NX_OK;
}

static nx_status pad(nx_eval *ev, const nx_inst *i, nx_literal *const *ops, nx_literal *o)
{
	const nx_literal *x = ops[0], *pv = ops[1];
	int r = o->shape->rank, esz = nx_type_bytes(o->shape->type);
	int64_t n = nx_shape_elems(o->shape);
	if (i->a.npadding != r)
		return nx_eval_error(ev, i, "padding has %d dimensions for rank %d", i->a.npadding, r);
	for (int64_t k = 0; k < n; k++)
		memcpy((uint8_t *)o->data + k * esz, pv->data, (size_t)esz);
	int64_t ost[NX_MAX_RANK], xst[NX_MAX_RANK], dst[NX_MAX_RANK], sst[NX_MAX_RANK], cnt[NX_MAX_RANK];
	nx_strides(o->shape, ost);
	nx_strides(x->shape, xst);
	int64_t doff = 0, soff = 0;
	for (int k = 0; k < r; k++) {
		const nx_pad_dim *p = &i->a.padding[k];
		int64_t step = p->interior + 1, in = x->shape->dims[k];
		/* source element s lands at lo + s*step; keep those in [0, out) */
		int64_t s0 = p->lo >= 0 ? 0 : (-p->lo + step - 1) / step;
		int64_t c = 0;
		if (in > s0) {
			int64_t last = o->shape->dims[k] - 1 - p->lo; /* s*step <= last */
			int64_t s1 = last < 0 ? -1 : last / step;
			if (s1 > in - 1)
				s1 = in - 1;
			c = s1 - s0 + 1;
		}
		if (c <= 0)
			return NX_OK;
		cnt[k] = c;
		doff += (p->lo + s0 * step) * ost[k];
		soff += s0 * xst[k];
		dst[k] = ost[k] * step;
		sst[k] = xst[k];
	}
	nx_copy_nd((uint8_t *)o->data + doff * esz, dst, (const uint8_t *)x->data + soff * esz, sst, cnt, r, esz);
	return NX_OK;
}

static nx_status reverse(nx_eval *ev, const nx_inst *i, const nx_literal *x, nx_literal *o)
{
	int r = o->shape->rank, esz = nx_type_bytes(o->shape->type);
	int64_t ost[NX_MAX_RANK], sst[NX_MAX_RANK], off = 0;
	nx_strides(o->shape, ost);
	memcpy(sst, ost, sizeof(int64_t) * (size_t)r);
	for (int k = 0; k < i->a.dimensions.n; k++) {
		int64_t d = i->a.dimensions.v[k];
		if (d < 0 || d >= r)
			return nx_eval_error(ev, i, "reverse dimension out of range");
		off += (o->shape->dims[d] - 1) * ost[d];
		sst[d] = -ost[d];
	}
	if (nx_shape_elems(o->shape) > 0)
		nx_copy_nd(o->data, ost, (const uint8_t *)x->data + off * esz, sst, o->shape->dims, r, esz);
	return NX_OK;
}

static nx_status iota(nx_eval *ev, const nx_inst *i, nx_literal *o)
{
	int r = o->shape->rank;
	int64_t d = i->a.iota_dimension, n = nx_shape_elems(o->shape), st[NX_MAX_RANK];
	if (r == 0 || d < 0 || d >= r)
		return nx_eval_error(ev, i, "iota dimension out of range");
	nx_strides(o->shape, st);
	nx_dom dom = nx_dom_of(o->shape->type);
	for (int64_t k = 0; k < n; k++) {
		int64_t v = (k / st[d]) % o->shape->dims[d];
		if (dom == NX_DOM_INT)
			nx_lit_set_i64(o, k, v);
		else
			nx_lit_set_f64(o, k, (double)v);
	}
	return NX_OK;
}

static nx_status reduce_precision(nx_eval *ev, const nx_inst *i, const nx_literal *x, nx_literal *o)
{
	int64_t n = nx_shape_elems(o->shape);
	int eb = (int)i->a.exponent_bits, mb = (int)i->a.mantissa_bits;
	if (eb < 1 || mb < 0)
		return nx_eval_error(ev, i, "reduce-precision needs exponent_bits >= 1 and mantissa_bits >= 0");
	int bias = (1 << (eb - 1)) - 1;
	double maxv = ldexp(2.0 - ldexp(1.0, -mb), bias);
	int emin = 1 - bias;
	for (int64_t k = 0; k < n; k++) {
		double v = nx_lit_get_f64(x, k), a = fabs(v);
		if (!isnan(v) && !isinf(v) && a != 0) {
			int e;
			frexp(a, &e);
			int ue = e - 1 < emin ? emin : e - 1;
			double rv = ldexp(nearbyint(ldexp(a, mb - ue)), ue - mb);
			if (rv > maxv)
				rv = INFINITY;
			v = copysign(rv, v);
		}
		nx_lit_set_f64(o, k, v);
	}
	return NX_OK;
}

nx_status nx_eval_data_op(nx_eval *ev, const nx_inst *i, nx_literal *const *ops, nx_literal **out)
{
	nx_literal *o;
	nx_status st = alloc_out(ev, i, &o);
	if (st != NX_OK)
		return st;
	*out = o;
	if (!nx_shape_is_array(i->shape))
		return nx_eval_error(ev, i, "%s with a non-array result", nx_opcode_name(i->op));
	const nx_literal *x = i->noperands ? ops[0] : NULL;
	switch (i->op) {
	case NX_OP_BROADCAST: return broadcast(ev, i, x, o);
	case NX_OP_TRANSPOSE: return transpose(ev, i, x, o);
	case NX_OP_SLICE: return slice(ev, i, x, o);
	case NX_OP_DYNAMIC_SLICE: return dynamic_slice(ev, i, ops, o);
	case NX_OP_DYNAMIC_UPDATE_SLICE: return dynamic_update_slice(ev, i, ops, o);
	case NX_OP_CONCATENATE: return concatenate(ev, i, ops, o);
	case NX_OP_PAD: return pad(ev, i, ops, o);
	case NX_OP_REVERSE: return reverse(ev, i, x, o);
	case NX_OP_IOTA: return iota(ev, i, o);
	case NX_OP_REDUCE_PRECISION: return reduce_precision(ev, i, x, o);
	case NX_OP_GET_DIMENSION_SIZE: {
		int64_t d = i->a.dimensions.n ? i->a.dimensions.v[0] : 0;
		if (d < 0 || d >= x->shape->rank)
			return nx_eval_error(ev, i, "dimension out of range");
		nx_lit_set_i64(o, 0, x->shape->dims[d]);
		return NX_OK;
	}
	case NX_OP_RESHAPE:
	case NX_OP_DYNAMIC_RESHAPE:
	case NX_OP_BITCAST:
	case NX_OP_COPY:
	case NX_OP_SET_DIMENSION_SIZE:
	case NX_OP_BITCAST_CONVERT:
		if (x->nbytes != o->nbytes || !nx_shape_is_array(x->shape))
			return nx_eval_error(ev, i, "%s from %lld to %lld bytes", nx_opcode_name(i->op),
			                     (long long)x->nbytes, (long long)o->nbytes);
		if (i->op != NX_OP_BITCAST_CONVERT && i->op != NX_OP_BITCAST &&
		    x->shape->type != o->shape->type)
			return nx_eval_error(ev, i, "%s changes the element type", nx_opcode_name(i->op));
		if (o->nbytes)
			memcpy(o->data, x->data, (size_t)o->nbytes);
		return NX_OK;
	default: return nx_eval_error(ev, i, "not a data-movement op");
	}
}
