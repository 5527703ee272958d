/* ir/verify/shape_infer.c — shape inference: entry point, shared helpers,
 * elementwise ops and data movement (broadcast, reshape, slice, pad, ...).
 * Semantics follow XLA's ShapeInference and HloVerifier. */
#include "ir/verify/shape_infer_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------- helpers */

nx_shape *si_fail(const si_ctx *c, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	const nx_inst *i = c->i;
	const char *file = i->parent && i->parent->module ? i->parent->module->file : NULL;
	nx_diag_set(c->d, NX_ERR_INPUT, file, i->line, i->col, "instruction '%s': %s", i->name,
	            buf);
	nx_diag_set_inst(c->d, i->name);
	return NULL;
}

const char *si_str(const si_ctx *c, const nx_shape *s)
{
	return s ? nx_shape_str(c->a, s, false) : "<none>";
}

nx_shape *si_array(const si_ctx *c, nx_type t, int rank)
{
	int64_t zero[NX_MAX_RANK] = {0};
	return nx_shape_array(c->a, t, rank, zero);
}

uint8_t si_dyn(const nx_shape *s, int k) { return s->dynamic ? s->dynamic[k] : NX_DIM_STATIC; }

void si_set_dim(const si_ctx *c, nx_shape *s, int k, int64_t size, uint8_t dyn)
{
	s->dims[k] = size;
	if (dyn != NX_DIM_STATIC && !s->dynamic)
		s->dynamic = nx_arena_alloc(c->a, (size_t)(s->rank ? s->rank : 1));
	if (s->dynamic)
		s->dynamic[k] = dyn;
}

bool si_nops(const si_ctx *c, int n)
{
	if (c->i->noperands != n) {
		si_fail(c, "%s takes %d operand%s, got %d", nx_opcode_name(c->i->op), n,
		        n == 1 ? "" : "s", c->i->noperands);
		return false;
	}
	return true;
}

bool si_min_ops(const si_ctx *c, int n)
{
	if (c->i->noperands < n) {
		si_fail(c, "%s takes at least %d operand%s, got %d", nx_opcode_name(c->i->op), n,
		        n == 1 ? "" : "s", c->i->noperands);
		return false;
	}
	return true;
}

const nx_shape *si_array_operand(const si_ctx *c, int k)
{
	const nx_shape *s = c->i->operands[k]->shape;
	if (!nx_shape_is_array(s)) {
		si_fail(c, "operand %d of %s must be an array, got %s", k, nx_opcode_name(c->i->op),
		        si_str(c, s));
		return NULL;
	}
	return s;
}

nx_shape *si_declared(const si_ctx *c) { return nx_shape_copy(c->a, c->i->shape); }

static bool dim_eq(int64_t x, uint8_t dx, int64_t y, uint8_t dy)
{
	if (dx == NX_DIM_UNBOUNDED || dy == NX_DIM_UNBOUNDED)
		return true;
	return x == y;
}

bool si_same_dims(const nx_shape *x, const nx_shape *y)
{
	if (x->rank != y->rank)
		return false;
	for (int k = 0; k < x->rank; k++)
		if (!dim_eq(x->dims[k], si_dyn(x, k), y->dims[k], si_dyn(y, k)))
			return false;
	return true;
}

bool si_is_scalar(const nx_shape *s) { return nx_shape_is_array(s) && s->rank == 0; }

bool nx_shape_infer_match(const nx_shape *x, const nx_shape *y)
{
	if (x->type != y->type)
		return false;
	if (x->type == NX_TUPLE) {
		if (x->ntuple != y->ntuple)
			return false;
		for (int k = 0; k < x->ntuple; k++)
			if (!nx_shape_infer_match(x->tuple[k], y->tuple[k]))
				return false;
		return true;
	}
	if (!nx_shape_is_array(x))
		return true;
	return si_same_dims(x, y);
}

const nx_comp *si_called(const si_ctx *c, int k, const char *role)
{
	if (k >= c->i->ncalled || !c->i->called[k]) {
		si_fail(c, "%s needs a %s computation", nx_opcode_name(c->i->op), role);
		return NULL;
	}
	const nx_comp *comp = c->i->called[k];
	if (!comp->root) {
		si_fail(c, "%s computation '%s' has no root", role, comp->name);
		return NULL;
	}
	return comp;
}

bool si_check_params(const si_ctx *c, const nx_comp *comp, const char *role, int nparams,
                     nx_shape *const *params)
{
	if (comp->nparams != nparams) {
		si_fail(c, "%s computation '%s' takes %d parameter%s, %s needs %d", role, comp->name,
		        comp->nparams, comp->nparams == 1 ? "" : "s", nx_opcode_name(c->i->op),
		        nparams);
		return false;
	}
	for (int p = 0; p < nparams; p++) {
		if (!comp->params[p]) {
			si_fail(c, "%s computation '%s' has no parameter %d", role, comp->name, p);
			return false;
		}
		if (params && params[p] && !nx_shape_infer_match(comp->params[p]->shape, params[p])) {
			si_fail(c, "parameter %d of %s computation '%s' has shape %s, expected %s", p,
			        role, comp->name, si_str(c, comp->params[p]->shape),
			        si_str(c, params[p]));
			return false;
		}
	}
	return true;
}

bool si_check_reducer(const si_ctx *c, const nx_comp *comp, const char *role, int n,
                      const nx_type *acc, const nx_type *input)
{
	if (comp->nparams != 2 * n) {
		si_fail(c, "%s computation '%s' takes %d parameter%s, %s needs %d", role, comp->name,
		        comp->nparams, comp->nparams == 1 ? "" : "s", nx_opcode_name(c->i->op),
		        2 * n);
		return false;
	}
	for (int p = 0; p < 2 * n; p++) {
		const nx_inst *pi = comp->params[p];
		if (!pi) {
			si_fail(c, "%s computation '%s' has no parameter %d", role, comp->name, p);
			return false;
		}
		nx_type want = p < n ? acc[p] : (input ? input[p - n] : acc[p - n]);
		bool ok = si_is_scalar(pi->shape) &&
		          (pi->shape->type == want ||
		           (p >= n && nx_type_is_float(want) && nx_type_is_float(pi->shape->type)));
		if (!ok) {
			si_fail(c, "parameter %d of %s computation '%s' has shape %s, expected %s[]", p,
			        role, comp->name, si_str(c, pi->shape), nx_type_name(want));
			return false;
		}
	}
	const nx_shape *r = comp->root->shape;
	bool ok;
	if (n == 1)
		ok = si_is_scalar(r) && r->type == acc[0];
	else {
		ok = r->type == NX_TUPLE && r->ntuple == n;
		for (int k = 0; ok && k < n; k++)
			ok = si_is_scalar(r->tuple[k]) && r->tuple[k]->type == acc[k];
	}
	if (!ok) {
		char want[256] = "";
		size_t pos = 0;
		if (n > 1)
			pos += (size_t)snprintf(want + pos, sizeof(want) - pos, "(");
		for (int k = 0; k < n && pos < sizeof(want); k++)
			pos += (size_t)snprintf(want + pos, sizeof(want) - pos, "%s%s[]", k ? ", " : "",
			                        nx_type_name(acc[k]));
		if (n > 1 && pos < sizeof(want))
			snprintf(want + pos, sizeof(want) - pos, ")");
		si_fail(c, "%s computation '%s' returns %s, expected %s", role, comp->name,
		        si_str(c, r), want);
		return false;
	}
	return true;
}

int64_t si_window_dim(const si_ctx *c, int64_t in, const nx_window_dim *w, int k)
{
	if (w->size <= 0 || w->stride <= 0 || w->window_dilation <= 0 || w->base_dilation <= 0) {
		si_fail(c, "window dimension %d: size, stride and dilations must be positive", k);
		return -1;
	}
	int64_t base = in == 0 ? 0 : (in - 1) * w->base_dilation + 1;
	int64_t padded = base + w->pad_lo + w->pad_hi;
	int64_t win = (w->size - 1) * w->window_dilation + 1;
	if (padded < 0) {
		si_fail(c, "window dimension %d: padding makes the input size negative", k);
		return -1;
	}
	return padded < win ? 0 : (padded - win) / w->stride + 1;
}

bool si_dims_unique_in_range(const si_ctx *c, nx_ivec v, int rank, const char *what)
{
	for (int k = 0; k < v.n; k++) {
		if (v.v[k] < 0 || v.v[k] >= rank) {
			si_fail(c, "%s dimension %lld out of range for rank-%d operand", what,
			        (long long)v.v[k], rank);
			return false;
		}
		for (int j = 0; j < k; j++)
			if (v.v[j] == v.v[k]) {
				si_fail(c, "%s dimension %lld repeated", what, (long long)v.v[k]);
				return false;
			}
	}
	return true;
}

static bool is_complex(nx_type t) { return nx_type_kind_of(t) == NX_KIND_COMPLEX; }
static bool is_fc(nx_type t) { return nx_type_is_float(t) || is_complex(t); }
static bool is_numeric(nx_type t) { return nx_type_is_int(t) || is_fc(t); }
static bool is_signed_num(nx_type t)
{
	return nx_type_kind_of(t) == NX_KIND_SINT || is_fc(t);
}
static nx_type complex_part(nx_type t)
{
	return t == NX_C64 ? NX_F32 : t == NX_C128 ? NX_F64 : t;
}

/* --------------------------------------------------------- elementwise */

/* Operands agree in dims (a scalar bound where scalar_ok[k]); returns a copy
 * of operand `base` with the dynamic markers of all operands merged. */
static nx_shape *same_shape_operands(const si_ctx *c, int base, const bool *scalar_ok)
{
	const nx_inst *i = c->i;
	const nx_shape *b = si_array_operand(c, base);
	if (!b)
		return NULL;
	nx_shape *r = nx_shape_copy(c->a, b);
	nx_shape_set_default_layout(r);
	for (int k = 0; k < i->noperands; k++) {
		const nx_shape *s = si_array_operand(c, k);
		if (!s)
			return NULL;
		if (scalar_ok && scalar_ok[k] && s->rank == 0)
			continue;
		if (!si_same_dims(s, b))
			return si_fail(c, "operand %d has shape %s, incompatible with operand %d %s", k,
			               si_str(c, s), base, si_str(c, b));
		/* An unbounded dim takes the other operand's size; a bounded one
		 * makes the result dynamic. */
		for (int d = 0; d < s->rank; d++) {
			uint8_t sd = si_dyn(s, d), rd = si_dyn(r, d);
			if (rd == NX_DIM_UNBOUNDED && sd != NX_DIM_UNBOUNDED)
				si_set_dim(c, r, d, s->dims[d], sd);
			else if (sd == NX_DIM_BOUNDED && rd == NX_DIM_STATIC)
				si_set_dim(c, r, d, r->dims[d], NX_DIM_BOUNDED);
		}
	}
	return r;
}

static nx_shape *bad_type(const si_ctx *c, int k, const char *want)
{
	return si_fail(c, "%s needs %s operands, operand %d is %s", nx_opcode_name(c->i->op), want,
	               k, si_str(c, c->i->operands[k]->shape));
}

static nx_shape *infer_unary(const si_ctx *c)
{
	const nx_inst *i = c->i;
	nx_shape *r = same_shape_operands(c, 0, NULL);
	if (!r)
		return NULL;
	nx_type t = r->type;
	switch (i->op) {
	case NX_OP_ABS:
		if (!is_signed_num(t) && !nx_type_is_int(t))
			return bad_type(c, 0, "numeric");
		r->type = complex_part(t);
		break;
	case NX_OP_REAL:
	case NX_OP_IMAG:
		if (!is_fc(t))
			return bad_type(c, 0, "floating-point or complex");
		r->type = complex_part(t);
		break;
	case NX_OP_IS_FINITE:
		if (!nx_type_is_float(t))
			return bad_type(c, 0, "floating-point");
		r->type = NX_PRED;
		break;
	case NX_OP_NOT:
		if (t != NX_PRED && !nx_type_is_int(t))
			return bad_type(c, 0, "pred or integer");
		break;
	case NX_OP_POPCNT:
	case NX_OP_CLZ:
		if (!nx_type_is_int(t))
			return bad_type(c, 0, "integer");
		break;
	case NX_OP_NEGATE:
		if (!is_numeric(t))
			return bad_type(c, 0, "numeric");
		break;
	case NX_OP_SIGN:
		if (!is_numeric(t))
			return bad_type(c, 0, "numeric");
		break;
	case NX_OP_FLOOR:
	case NX_OP_CEIL:
	case NX_OP_ROUND_NEAREST_AFZ:
	case NX_OP_ROUND_NEAREST_EVEN:
		if (!nx_type_is_float(t))
			return bad_type(c, 0, "floating-point");
		break;
	case NX_OP_REDUCE_PRECISION:
		if (!nx_type_is_float(t))
			return bad_type(c, 0, "floating-point");
		if (i->a.exponent_bits < 1 || i->a.mantissa_bits < 0)
			return si_fail(c, "reduce-precision needs exponent_bits >= 1 and mantissa_bits >= 0");
		break;
	case NX_OP_COPY:
		break;
	default: /* transcendental */
		if (!is_fc(t))
			return bad_type(c, 0, "floating-point or complex");
		break;
	}
	return r;
}

static nx_shape *infer_binary(const si_ctx *c)
{
	const nx_inst *i = c->i;
	nx_shape *r = same_shape_operands(c, 0, NULL);
	if (!r)
		return NULL;
	nx_type t = r->type, t1 = i->operands[1]->shape->type;
	if (t != t1)
		return si_fail(c, "operand types differ: %s and %s", nx_type_name(t), nx_type_name(t1));
	switch (i->op) {
	case NX_OP_AND:
	case NX_OP_OR:
	case NX_OP_XOR:
		if (t != NX_PRED && !nx_type_is_int(t))
			return bad_type(c, 0, "pred or integer");
		break;
	case NX_OP_SHIFT_LEFT:
	case NX_OP_SHIFT_RIGHT_ARITHMETIC:
	case NX_OP_SHIFT_RIGHT_LOGICAL:
	case NX_OP_MULHI:
		if (!nx_type_is_int(t))
			return bad_type(c, 0, "integer");
		break;
	case NX_OP_COMPARE:
		if (i->a.direction == NX_CMP_NONE)
			return si_fail(c, "compare needs a direction");
		r->type = NX_PRED;
		break;
	case NX_OP_COMPLEX:
		if (t != NX_F32 && t != NX_F64)
			return bad_type(c, 0, "f32 or f64");
		r->type = t == NX_F32 ? NX_C64 : NX_C128;
		break;
	case NX_OP_ATAN2:
		if (!is_fc(t))
			return bad_type(c, 0, "floating-point or complex");
		break;
	case NX_OP_MAXIMUM:
	case NX_OP_MINIMUM:
		if (!is_numeric(t) && t != NX_PRED)
			return bad_type(c, 0, "numeric");
		break;
	default:
		if (!is_numeric(t))
			return bad_type(c, 0, "numeric");
		break;
	}
	return r;
}

static nx_shape *infer_select(const si_ctx *c)
{
	bool sc[3] = {true, false, false};
	nx_shape *r = same_shape_operands(c, 1, sc);
	if (!r)
		return NULL;
	const nx_inst *i = c->i;
	if (i->operands[0]->shape->type != NX_PRED)
		return si_fail(c, "select predicate must be pred, got %s",
		               si_str(c, i->operands[0]->shape));
	if (i->operands[1]->shape->type != i->operands[2]->shape->type)
		return si_fail(c, "select branches differ: %s and %s", si_str(c, i->operands[1]->shape),
		               si_str(c, i->operands[2]->shape));
	return r;
}

static nx_shape *infer_clamp(const si_ctx *c)
{
	bool sc[3] = {true, false, true};
	nx_shape *r = same_shape_operands(c, 1, sc);
	if (!r)
		return NULL;
	for (int k = 0; k < 3; k += 2)
		if (c->i->operands[k]->shape->type != r->type)
			return si_fail(c, "clamp bound %d has type %s, operand is %s", k,
			               si_str(c, c->i->operands[k]->shape), nx_type_name(r->type));
	return r;
}

static nx_shape *infer_convert(const si_ctx *c)
{
	const nx_shape *o = si_array_operand(c, 0);
	const nx_shape *dcl = c->i->shape;
	if (!o)
		return NULL;
	if (!nx_shape_is_array(dcl))
		return si_fail(c, "convert result must be an array, declared %s", si_str(c, dcl));
	if (is_complex(o->type) && !is_complex(dcl->type))
		return si_fail(c, "convert from complex %s to non-complex %s is not allowed",
		               nx_type_name(o->type), nx_type_name(dcl->type));
	nx_shape *r = nx_shape_with_type(c->a, o, dcl->type);
	nx_shape_set_default_layout(r);
	return r;
}

static nx_shape *infer_stochastic_convert(const si_ctx *c)
{
	nx_shape *r = same_shape_operands(c, 0, NULL);
	if (!r)
		return NULL;
	nx_type t = r->type, rt = c->i->operands[1]->shape->type;
	if (!nx_type_is_float(t))
		return bad_type(c, 0, "floating-point");
	if (nx_type_kind_of(rt) != NX_KIND_UINT || nx_type_bits(rt) != nx_type_bits(t))
		return si_fail(c, "random operand must be unsigned with %d bits, got %s",
		               nx_type_bits(t), nx_type_name(rt));
	if (!nx_shape_is_array(c->i->shape))
		return si_fail(c, "result must be an array");
	r->type = c->i->shape->type;
	return r;
}

static nx_shape *infer_bitcast_convert(const si_ctx *c)
{
	const nx_shape *o = si_array_operand(c, 0);
	const nx_shape *dcl = c->i->shape;
	if (!o)
		return NULL;
	if (!nx_shape_is_array(dcl))
		return si_fail(c, "bitcast-convert result must be an array");
	int ib = nx_type_bits(o->type), ob = nx_type_bits(dcl->type);
	if (o->type == NX_PRED || dcl->type == NX_PRED)
		return si_fail(c, "bitcast-convert cannot convert pred");
	int64_t dims[NX_MAX_RANK];
	int rank = o->rank;
	memcpy(dims, o->dims, sizeof(int64_t) * (size_t)o->rank);
	if (ib > ob) {
		if (ib % ob || rank == NX_MAX_RANK)
			return si_fail(c, "bitcast-convert from %d to %d bits", ib, ob);
		dims[rank++] = ib / ob;
	} else if (ib < ob) {
		if (ob % ib || rank == 0 || o->dims[rank - 1] != ob / ib)
			return si_fail(c,
			               "bitcast-convert from %s to %s needs a last dimension of %d, "
			               "operand is %s",
			               nx_type_name(o->type), nx_type_name(dcl->type), ob / ib,
			               si_str(c, o));
		rank--;
	}
	nx_shape *r = nx_shape_array(c->a, dcl->type, rank, dims);
	for (int k = 0; k < rank && k < o->rank; k++)
		if (si_dyn(o, k))
			si_set_dim(c, r, k, dims[k], si_dyn(o, k));
	return r;
}

/* ------------------------------------------------------ data movement */

static nx_shape *infer_broadcast(const si_ctx *c)
{
	const nx_inst *i = c->i;
	const nx_shape *o = si_array_operand(c, 0), *dcl = i->shape;
	if (!o)
		return NULL;
	if (!nx_shape_is_array(dcl) || dcl->type != o->type)
		return si_fail(c, "broadcast result %s must have the operand's element type %s",
		               si_str(c, dcl), nx_type_name(o->type));
	nx_ivec dm = i->a.dimensions;
	if (dm.n != o->rank)
		return si_fail(c, "broadcast dimensions has %d entries for rank-%d operand", dm.n,
		               o->rank);
	for (int k = 0; k < dm.n; k++) {
		if (dm.v[k] < 0 || dm.v[k] >= dcl->rank)
			return si_fail(c, "broadcast dimension %lld out of range for rank-%d result",
			               (long long)dm.v[k], dcl->rank);
		if (k && dm.v[k] <= dm.v[k - 1])
			return si_fail(c, "broadcast dimensions must be strictly increasing");
		int64_t od = o->dims[k], rd = dcl->dims[dm.v[k]];
		if (od != 1 && !dim_eq(od, si_dyn(o, k), rd, si_dyn(dcl, (int)dm.v[k])))
			return si_fail(c,
			               "broadcast maps operand dimension %d (size %lld) to result "
			               "dimension %lld (size %lld)",
			               k, (long long)od, (long long)dm.v[k], (long long)rd);
	}
	return si_declared(c);
}

static nx_shape *infer_reshape(const si_ctx *c)
{
	const nx_shape *o = si_array_operand(c, 0), *dcl = c->i->shape;
	if (!o)
		return NULL;
	if (!nx_shape_is_array(dcl) || dcl->type != o->type)
		return si_fail(c, "reshape result %s must have the operand's element type %s",
		               si_str(c, dcl), nx_type_name(o->type));
	bool unb = false;
	for (int k = 0; k < o->rank; k++)
		unb |= si_dyn(o, k) == NX_DIM_UNBOUNDED;
	for (int k = 0; k < dcl->rank; k++)
		unb |= si_dyn(dcl, k) == NX_DIM_UNBOUNDED;
	if (!unb && nx_shape_elems(o) != nx_shape_elems(dcl))
		return si_fail(c, "reshape from %s to %s changes the element count (%lld vs %lld)",
		               si_str(c, o), si_str(c, dcl), (long long)nx_shape_elems(o),
		               (long long)nx_shape_elems(dcl));
	return si_declared(c);
}

static nx_shape *infer_dynamic_reshape(const si_ctx *c)
{
	if (!si_min_ops(c, 1))
		return NULL;
	const nx_shape *o = si_array_operand(c, 0), *dcl = c->i->shape;
	if (!o)
		return NULL;
	if (!nx_shape_is_array(dcl) || dcl->type != o->type)
		return si_fail(c, "dynamic-reshape result must have element type %s",
		               nx_type_name(o->type));
	if (c->i->noperands != 1 + dcl->rank)
		return si_fail(c, "dynamic-reshape needs one size operand per result dimension (%d)",
		               dcl->rank);
	for (int k = 1; k < c->i->noperands; k++) {
		const nx_shape *s = c->i->operands[k]->shape;
		if (!si_is_scalar(s) || !nx_type_is_int(s->type))
			return si_fail(c, "size operand %d must be an integer scalar, got %s", k,
			               si_str(c, s));
	}
	return si_declared(c);
}

static nx_shape *infer_transpose(const si_ctx *c)
{
	const nx_shape *o = si_array_operand(c, 0);
	if (!o)
		return NULL;
	nx_ivec p = c->i->a.dimensions;
	if (p.n != o->rank)
		return si_fail(c, "transpose dimensions {%d entries} is not a permutation of rank %d",
		               p.n, o->rank);
	bool seen[NX_MAX_RANK] = {false};
	for (int k = 0; k < p.n; k++) {
		if (p.v[k] < 0 || p.v[k] >= o->rank || seen[p.v[k]])
			return si_fail(c, "transpose dimensions are not a permutation of 0..%d",
			               o->rank - 1);
		seen[p.v[k]] = true;
	}
	nx_shape *r = si_array(c, o->type, o->rank);
	for (int k = 0; k < p.n; k++)
		si_set_dim(c, r, k, o->dims[p.v[k]], si_dyn(o, (int)p.v[k]));
	return r;
}

static nx_shape *infer_slice(const si_ctx *c)
{
	const nx_attrs *at = &c->i->a;
	const nx_shape *o = si_array_operand(c, 0);
	if (!o)
		return NULL;
	if (at->slice_start.n != o->rank || at->slice_limit.n != o->rank ||
	    (at->slice_stride.n && at->slice_stride.n != o->rank))
		return si_fail(c, "slice has %d ranges for rank-%d operand", at->slice_start.n, o->rank);
	nx_shape *r = si_array(c, o->type, o->rank);
	for (int k = 0; k < o->rank; k++) {
		int64_t s = at->slice_start.v[k], l = at->slice_limit.v[k];
		int64_t st = at->slice_stride.n ? at->slice_stride.v[k] : 1;
		if (st <= 0)
			return si_fail(c, "slice stride %lld in dimension %d must be positive",
			               (long long)st, k);
		if (s < 0 || l < s || (l > o->dims[k] && si_dyn(o, k) != NX_DIM_UNBOUNDED))
			return si_fail(c, "slice [%lld:%lld] out of bounds for dimension %d of size %lld",
			               (long long)s, (long long)l, k, (long long)o->dims[k]);
		si_set_dim(c, r, k, (l - s + st - 1) / st, NX_DIM_STATIC);
	}
	return r;
}

/* Index operands start at `first`: one integer scalar per operand dim (or the
 * old single rank-1 form). */
static bool check_start_indices(const si_ctx *c, int first, int rank)
{
	const nx_inst *i = c->i;
	int n = i->noperands - first;
	if (n == 1 && rank != 1 && i->operands[first]->shape->rank == 1 &&
	    i->operands[first]->shape->dims[0] == rank)
		return nx_type_is_int(i->operands[first]->shape->type) ||
		       (si_fail(c, "start indices must be integers"), false);
	if (n != rank) {
		si_fail(c, "%s needs %d start indices for a rank-%d operand, got %d",
		        nx_opcode_name(i->op), rank, rank, n);
		return false;
	}
	nx_type t0 = NX_TYPE_INVALID;
	for (int k = first; k < i->noperands; k++) {
		const nx_shape *s = i->operands[k]->shape;
		if (!si_is_scalar(s) || !nx_type_is_int(s->type)) {
			si_fail(c, "start index operand %d must be an integer scalar, got %s", k,
			        si_str(c, s));
			return false;
		}
		if (t0 && s->type != t0) {
			si_fail(c, "start indices have different types");
			return false;
		}
		t0 = s->type;
	}
	return true;
}

static nx_shape *infer_dynamic_slice(const si_ctx *c)
{
	if (!si_min_ops(c, 1))
		return NULL;
	const nx_shape *o = si_array_operand(c, 0);
	if (!o || !check_start_indices(c, 1, o->rank))
		return NULL;
	nx_ivec sz = c->i->a.dynamic_slice_sizes;
	if (sz.n != o->rank)
		return si_fail(c, "dynamic_slice_sizes has %d entries for rank-%d operand", sz.n,
		               o->rank);
	nx_shape *r = si_array(c, o->type, o->rank);
	for (int k = 0; k < o->rank; k++) {
		if (sz.v[k] < 0 || (sz.v[k] > o->dims[k] && si_dyn(o, k) != NX_DIM_UNBOUNDED))
			return si_fail(c, "slice size %lld out of bounds for dimension %d of size %lld",
			               (long long)sz.v[k], k, (long long)o->dims[k]);
		si_set_dim(c, r, k, sz.v[k], NX_DIM_STATIC);
	}
	return r;
}

static nx_shape *infer_dus(const si_ctx *c)
{
	if (!si_min_ops(c, 2))
		return NULL;
	const nx_shape *o = si_array_operand(c, 0), *u = si_array_operand(c, 1);
	if (!o || !u || !check_start_indices(c, 2, o->rank))
		return NULL;
	if (u->type != o->type)
		return si_fail(c, "update type %s differs from operand type %s", nx_type_name(u->type),
		               nx_type_name(o->type));
	if (u->rank != o->rank)
		return si_fail(c, "update rank %d differs from operand rank %d", u->rank, o->rank);
	for (int k = 0; k < o->rank; k++)
		if (u->dims[k] > o->dims[k] && si_dyn(o, k) != NX_DIM_UNBOUNDED)
			return si_fail(c, "update dimension %d (%lld) exceeds operand dimension (%lld)", k,
			               (long long)u->dims[k], (long long)o->dims[k]);
	nx_shape *r = nx_shape_copy(c->a, o);
	nx_shape_set_default_layout(r);
	return r;
}

static nx_shape *infer_concatenate(const si_ctx *c)
{
	const nx_inst *i = c->i;
	if (!si_min_ops(c, 1))
		return NULL;
	if (i->a.dimensions.n != 1)
		return si_fail(c, "concatenate needs exactly one dimension");
	const nx_shape *o = si_array_operand(c, 0);
	if (!o)
		return NULL;
	int64_t dim = i->a.dimensions.v[0];
	if (dim < 0 || dim >= o->rank)
		return si_fail(c, "concatenate dimension %lld out of range for rank-%d operand",
		               (long long)dim, o->rank);
	nx_shape *r = nx_shape_copy(c->a, o);
	nx_shape_set_default_layout(r);
	for (int k = 1; k < i->noperands; k++) {
		const nx_shape *s = si_array_operand(c, k);
		if (!s)
			return NULL;
		if (s->rank != o->rank)
			return si_fail(c, "concatenate operand %d has rank %d, operand 0 has rank %d", k,
			               s->rank, o->rank);
		if (s->type != o->type)
			return si_fail(c, "concatenate operand %d has type %s, operand 0 has %s", k,
			               nx_type_name(s->type), nx_type_name(o->type));
		for (int d = 0; d < o->rank; d++)
			if (d != dim && !dim_eq(s->dims[d], si_dyn(s, d), o->dims[d], si_dyn(o, d)))
				return si_fail(c, "concatenate operand %d is %s, incompatible with %s outside "
				               "dimension %lld", k, si_str(c, s), si_str(c, o),
				               (long long)dim);
		if (__builtin_add_overflow(r->dims[dim], s->dims[dim], &r->dims[dim]))
			return si_fail(c, "concatenate dimension %lld overflows 64 bits", (long long)dim);
		if (si_dyn(s, (int)dim))
			si_set_dim(c, r, (int)dim, r->dims[dim], si_dyn(s, (int)dim));
	}
	return r;
}

static nx_shape *infer_pad(const si_ctx *c)
{
	const nx_inst *i = c->i;
	const nx_shape *o = si_array_operand(c, 0), *v = si_array_operand(c, 1);
	if (!o || !v)
		return NULL;
	if (v->rank != 0 || v->type != o->type)
		return si_fail(c, "padding value must be a %s scalar, got %s", nx_type_name(o->type),
		               si_str(c, v));
	if (i->a.npadding != o->rank)
		return si_fail(c, "padding has %d dimensions for rank-%d operand", i->a.npadding,
		               o->rank);
	nx_shape *r = si_array(c, o->type, o->rank);
	for (int k = 0; k < o->rank; k++) {
		const nx_pad_dim *p = &i->a.padding[k];
		if (p->interior < 0)
			return si_fail(c, "interior padding %lld in dimension %d is negative",
			               (long long)p->interior, k);
		int64_t d = o->dims[k], n, in = 0;
		if ((d > 0 && __builtin_mul_overflow(d - 1, p->interior, &in)) || __builtin_add_overflow(p->lo, p->hi, &n) ||
		    __builtin_add_overflow(n, d, &n) || __builtin_add_overflow(n, in, &n))
			return si_fail(c, "padding of dimension %d overflows 64 bits (low %lld, high %lld, interior %lld)", k,
			               (long long)p->lo, (long long)p->hi, (long long)p->interior);
		if (n < 0)
			return si_fail(c, "padding makes dimension %d negative (%lld)", k, (long long)n);
		si_set_dim(c, r, k, n, si_dyn(o, k));
	}
	return r;
}

static nx_shape *infer_reverse(const si_ctx *c)
{
	const nx_shape *o = si_array_operand(c, 0);
	if (!o || !si_dims_unique_in_range(c, c->i->a.dimensions, o->rank, "reverse"))
		return NULL;
	nx_shape *r = nx_shape_copy(c->a, o);
	nx_shape_set_default_layout(r);
	return r;
}

static nx_shape *infer_iota(const si_ctx *c)
{
	const nx_shape *dcl = c->i->shape;
	if (!nx_shape_is_array(dcl) || dcl->rank == 0)
		return si_fail(c, "iota result must be an array of rank >= 1, declared %s",
		               si_str(c, dcl));
	if (c->i->a.iota_dimension < 0 || c->i->a.iota_dimension >= dcl->rank)
		return si_fail(c, "iota_dimension %lld out of range for rank-%d result",
		               (long long)c->i->a.iota_dimension, dcl->rank);
	if (dcl->type == NX_PRED)
		return si_fail(c, "iota cannot produce pred");
	return si_declared(c);
}

static nx_shape *infer_tuple(const si_ctx *c)
{
	nx_shape **e = nx_arena_alloc(c->a, sizeof(nx_shape *) * (size_t)(c->i->noperands + 1));
	for (int k = 0; k < c->i->noperands; k++)
		e[k] = nx_shape_copy(c->a, c->i->operands[k]->shape);
	return nx_shape_tuple(c->a, c->i->noperands, e);
}

static nx_shape *infer_gte(const si_ctx *c)
{
	const nx_shape *o = c->i->operands[0]->shape;
	int64_t k = c->i->a.tuple_index;
	if (o->type != NX_TUPLE)
		return si_fail(c, "get-tuple-element operand must be a tuple, got %s", si_str(c, o));
	if (k < 0 || k >= o->ntuple)
		return si_fail(c, "tuple index %lld out of range for %d-element tuple %s", (long long)k,
		               o->ntuple, si_str(c, o));
	return nx_shape_copy(c->a, o->tuple[k]);
}

static nx_shape *infer_constant(const si_ctx *c)
{
	const nx_literal *l = c->i->a.literal;
	if (!l)
		return si_fail(c, "constant has no literal");
	if (!nx_shape_infer_match(c->i->shape, l->shape))
		return si_fail(c, "constant literal has shape %s", si_str(c, l->shape));
	return si_declared(c);
}

static nx_shape *infer_parameter(const si_ctx *c)
{
	const nx_inst *i = c->i;
	const nx_comp *comp = i->parent;
	int64_t k = i->a.parameter_number;
	if (k < 0 || !comp || k >= comp->nparams || comp->params[k] != i)
		return si_fail(c, "parameter number %lld is not registered in computation '%s'",
		               (long long)k, comp ? comp->name : "?");
	const nx_module *m = comp->module;
	if (comp->is_entry && m && m->entry_layout && m->entry_layout->type == NX_TUPLE &&
	    k < m->entry_layout_nparams && k < m->entry_layout->ntuple) {
		const nx_shape *want = m->entry_layout->tuple[k];
		if (!nx_shape_infer_match(i->shape, want))
			return si_fail(c, "parameter %lld has shape %s, entry_computation_layout says %s",
			               (long long)k, si_str(c, i->shape), si_str(c, want));
	}
	return si_declared(c);
}

static nx_shape *infer_get_dimension_size(const si_ctx *c)
{
	const nx_shape *o = si_array_operand(c, 0);
	int64_t k = c->i->a.dimensions.n ? c->i->a.dimensions.v[0] : -1;
	if (!o)
		return NULL;
	if (c->i->a.dimensions.n != 1 || k < 0 || k >= o->rank)
		return si_fail(c, "dimension %lld out of range for rank-%d operand", (long long)k,
		               o->rank);
	return nx_shape_scalar(c->a, NX_S32);
}

static nx_shape *infer_set_dimension_size(const si_ctx *c)
{
	const nx_shape *o = si_array_operand(c, 0), *v = si_array_operand(c, 1);
	int64_t k = c->i->a.dimensions.n ? c->i->a.dimensions.v[0] : -1;
	if (!o || !v)
		return NULL;
	if (c->i->a.dimensions.n != 1 || k < 0 || k >= o->rank)
		return si_fail(c, "dimension %lld out of range for rank-%d operand", (long long)k,
		               o->rank);
	if (v->rank != 0 || v->type != NX_S32)
		return si_fail(c, "set-dimension-size size must be s32[], got %s", si_str(c, v));
	nx_shape *r = nx_shape_copy(c->a, o);
	nx_shape_set_default_layout(r);
	si_set_dim(c, r, (int)k, o->dims[k], NX_DIM_BOUNDED);
	return r;
}

static nx_shape *infer_bitcast(const si_ctx *c)
{
	const nx_shape *o = c->i->operands[0]->shape, *dcl = c->i->shape;
	if (!nx_shape_is_array(o) || !nx_shape_is_array(dcl))
		return si_declared(c);
	if (nx_shape_bytes(o) != nx_shape_bytes(dcl))
		return si_fail(c, "bitcast from %s to %s changes the byte size", si_str(c, o),
		               si_str(c, dcl));
	return si_declared(c);
}

static nx_shape *identity(const si_ctx *c)
{
	nx_shape *r = nx_shape_copy(c->a, c->i->operands[0]->shape);
	return r;
}

bool si_is_basic(nx_opcode op)
{
	if (nx_opcode_flags(op) & (NX_OPF_UNARY | NX_OPF_BINARY))
		return true;
	switch (op) {
	case NX_OP_SELECT:
	case NX_OP_CLAMP:
	case NX_OP_COMPARE:
	case NX_OP_STOCHASTIC_CONVERT:
	case NX_OP_BITCAST_CONVERT:
	case NX_OP_BITCAST:
	case NX_OP_BROADCAST:
	case NX_OP_RESHAPE:
	case NX_OP_DYNAMIC_RESHAPE:
	case NX_OP_TRANSPOSE:
	case NX_OP_SLICE:
	case NX_OP_DYNAMIC_SLICE:
	case NX_OP_DYNAMIC_UPDATE_SLICE:
	case NX_OP_CONCATENATE:
	case NX_OP_PAD:
	case NX_OP_REVERSE:
	case NX_OP_IOTA:
	case NX_OP_TUPLE:
	case NX_OP_GET_TUPLE_ELEMENT:
	case NX_OP_CONSTANT:
	case NX_OP_PARAMETER:
	case NX_OP_GET_DIMENSION_SIZE:
	case NX_OP_SET_DIMENSION_SIZE:
	case NX_OP_DOMAIN:
	case NX_OP_OPT_BARRIER:
		return true;
	default:
		return false;
	}
}

nx_shape *si_infer_basic(const si_ctx *c)
{
	switch (c->i->op) {
	case NX_OP_CONVERT: return infer_convert(c);
	case NX_OP_COPY: return identity(c);
	case NX_OP_SELECT: return infer_select(c);
	case NX_OP_CLAMP: return infer_clamp(c);
	case NX_OP_COMPARE: return infer_binary(c);
	case NX_OP_STOCHASTIC_CONVERT: return infer_stochastic_convert(c);
	case NX_OP_BITCAST_CONVERT: return infer_bitcast_convert(c);
	case NX_OP_BITCAST: return infer_bitcast(c);
	case NX_OP_BROADCAST: return infer_broadcast(c);
	case NX_OP_RESHAPE: return infer_reshape(c);
	case NX_OP_DYNAMIC_RESHAPE: return infer_dynamic_reshape(c);
	case NX_OP_TRANSPOSE: return infer_transpose(c);
	case NX_OP_SLICE: return infer_slice(c);
	case NX_OP_DYNAMIC_SLICE: return infer_dynamic_slice(c);
	case NX_OP_DYNAMIC_UPDATE_SLICE: return infer_dus(c);
	case NX_OP_CONCATENATE: return infer_concatenate(c);
	case NX_OP_PAD: return infer_pad(c);
	case NX_OP_REVERSE: return infer_reverse(c);
	case NX_OP_IOTA: return infer_iota(c);
	case NX_OP_TUPLE: return infer_tuple(c);
	case NX_OP_GET_TUPLE_ELEMENT: return infer_gte(c);
	case NX_OP_CONSTANT: return infer_constant(c);
	case NX_OP_PARAMETER: return infer_parameter(c);
	case NX_OP_GET_DIMENSION_SIZE: return infer_get_dimension_size(c);
	case NX_OP_SET_DIMENSION_SIZE: return infer_set_dimension_size(c);
	case NX_OP_DOMAIN:
	case NX_OP_OPT_BARRIER: return identity(c);
	default: break;
	}
	unsigned f = nx_opcode_flags(c->i->op);
	if (f & NX_OPF_UNARY)
		return infer_unary(c);
	if (f & NX_OPF_BINARY)
		return infer_binary(c);
	NX_UNREACHABLE();
}

/* ----------------------------------------------------------- dispatch */

nx_shape *nx_infer_shape(nx_arena *a, const nx_inst *i, nx_diag *d)
{
	si_ctx c = {a, i, d};
	int ar = nx_opcode_arity(i->op);
	if (ar >= 0 && i->noperands != ar && i->a.async_wrapped == NX_OP_COUNT)
		return si_fail(&c, "%s takes %d operand%s, got %d", nx_opcode_name(i->op), ar,
		               ar == 1 ? "" : "s", i->noperands);
	for (int k = 0; k < i->noperands; k++)
		if (!i->operands[k] || !i->operands[k]->shape)
			return si_fail(&c, "operand %d is missing", k);
	if (!i->shape)
		return si_fail(&c, "instruction has no shape");
	if (si_is_coll(i->op) || i->a.async_wrapped != NX_OP_COUNT)
		return si_infer_coll(&c);
	if (si_is_basic(i->op))
		return si_infer_basic(&c);
	return si_infer_ops(&c);
}
