/* backend/gpsimd/gs_emit.c — the elemental emitter: HLO scalar computations
 * (comparators, combiners, map bodies, reducers) as LLVM IR through the C
 * API's IR builder, the way XLA:CPU's elemental emitter does it.
 *
 * Floats compute in f32 (bf16 values are f32 holding a bf16 value, rounded
 * to nearest-even after every operation, as the evaluator does); integers in
 * their width (s64/u64 as 32 bits, the device's width); pred as i1. Integer
 * division and shifts are guarded so that no input reaches LLVM's undefined
 * behaviour (x/0 = -1, INT_MIN/-1 = INT_MIN, x%0 = x, as XLA defines them). */
#include "backend/gpsimd/gs.h"
#include "ir/eval/eval.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int nx_gs_fail(nx_gs *g, const char *fmt, ...)
{
	if (!g->err) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(g->errbuf, sizeof g->errbuf, fmt, ap);
		va_end(ap);
		g->err = g->errbuf;
	}
	return -1;
}

bool nx_gs_type_ok(nx_type t)
{
	switch (t) {
	case NX_F32: case NX_BF16: case NX_S32: case NX_U32: case NX_S64: case NX_U64:
	case NX_S16: case NX_U16: case NX_S8: case NX_U8: case NX_PRED:
		return true;
	default:
		return false;
	}
}

static bool is_f(nx_type t)
{
	return t == NX_F32 || t == NX_BF16;
}

static bool is_signed(nx_type t)
{
	return t == NX_S8 || t == NX_S16 || t == NX_S32 || t == NX_S64;
}

LLVMTypeRef nx_gs_ctype(nx_gs *g, nx_type t)
{
	switch (t) {
	case NX_F32: case NX_BF16: return g->f32;
	case NX_S16: case NX_U16: return g->i16;
	case NX_S8: case NX_U8: return g->i8;
	case NX_PRED: return g->i1;
	default: return g->i32;
	}
}

static LLVMTypeRef store_type(nx_gs *g, nx_type t)
{
	if (t == NX_BF16)
		return g->i16;
	if (t == NX_PRED)
		return g->i8;
	return nx_gs_ctype(g, t);
}

LLVMValueRef nx_gs_c64(nx_gs *g, int64_t v)
{
	return nx_llvm.LLVMConstInt(g->i64, (unsigned long long)v, 1);
}

static LLVMValueRef c32(nx_gs *g, uint32_t v)
{
	return nx_llvm.LLVMConstInt(g->i32, v, 0);
}

/* f32 -> the f32 holding its bf16 rounding (nearest-even, NaN kept quiet) */
static LLVMValueRef round_bf16_bits(nx_gs *g, LLVMValueRef f)
{
	LLVMBuilderRef b = g->b;
	LLVMValueRef u = nx_llvm.LLVMBuildBitCast(b, f, g->i32, "u");
	LLVMValueRef lsb = nx_llvm.LLVMBuildAnd(b, nx_llvm.LLVMBuildLShr(b, u, c32(g, 16), ""), c32(g, 1), "");
	LLVMValueRef r = nx_llvm.LLVMBuildAdd(b, u, nx_llvm.LLVMBuildAdd(b, c32(g, 0x7fff), lsb, ""), "");
	r = nx_llvm.LLVMBuildAnd(b, r, c32(g, 0xffff0000u), "");
	LLVMValueRef nan = nx_llvm.LLVMBuildOr(b, nx_llvm.LLVMBuildAnd(b, u, c32(g, 0xffff0000u), ""), c32(g, 0x00400000u), "");
	LLVMValueRef isnan = nx_llvm.LLVMBuildFCmp(b, LLVMRealUNO, f, f, "");
	return nx_llvm.LLVMBuildSelect(b, isnan, nan, r, "bf"); /* i32 with the bf16 in the high half */
}

static LLVMValueRef fix(nx_gs *g, LLVMValueRef v, nx_type t)
{
	if (t != NX_BF16)
		return v;
	return nx_llvm.LLVMBuildBitCast(g->b, round_bf16_bits(g, v), g->f32, "");
}

nx_gs_val nx_gs_load(nx_gs *g, nx_type t, LLVMValueRef ptr)
{
	LLVMValueRef v = nx_llvm.LLVMBuildLoad2(g->b, store_type(g, t), ptr, "");
	if (t == NX_BF16)
		v = nx_llvm.LLVMBuildBitCast(g->b, nx_llvm.LLVMBuildShl(g->b, nx_llvm.LLVMBuildZExt(g->b, v, g->i32, ""), c32(g, 16), ""), g->f32, "");
	else if (t == NX_PRED)
		v = nx_llvm.LLVMBuildICmp(g->b, LLVMIntNE, v, nx_llvm.LLVMConstInt(g->i8, 0, 0), "");
	return (nx_gs_val){v, t};
}

void nx_gs_store(nx_gs *g, nx_gs_val x, LLVMValueRef ptr)
{
	LLVMValueRef v = x.v;
	if (x.t == NX_BF16)
		v = nx_llvm.LLVMBuildTrunc(g->b, nx_llvm.LLVMBuildLShr(g->b, round_bf16_bits(g, v), c32(g, 16), ""), g->i16, "");
	else if (x.t == NX_PRED)
		v = nx_llvm.LLVMBuildZExt(g->b, v, g->i8, "");
	nx_llvm.LLVMBuildStore(g->b, v, ptr);
}

static LLVMValueRef intrinsic(nx_gs *g, const char *name, LLVMTypeRef *ov, int nov, LLVMValueRef *args, int n)
{
	unsigned id = nx_llvm.LLVMLookupIntrinsicID(name, strlen(name));
	LLVMValueRef f = nx_llvm.LLVMGetIntrinsicDeclaration(g->mod, id, ov, (size_t)nov);
	LLVMTypeRef ft = nx_llvm.LLVMIntrinsicGetType(g->ctx, id, ov, (size_t)nov);
	return nx_llvm.LLVMBuildCall2(g->b, ft, f, args, (unsigned)n, "");
}

static LLVMValueRef libm(nx_gs *g, const char *name, LLVMValueRef *args, int n)
{
	LLVMTypeRef at[2] = {g->f32, g->f32};
	LLVMTypeRef ft = nx_llvm.LLVMFunctionType(g->f32, at, (unsigned)n, 0);
	LLVMValueRef f = nx_llvm.LLVMGetNamedFunction(g->mod, name);
	if (!f)
		f = nx_llvm.LLVMAddFunction(g->mod, name, ft);
	return nx_llvm.LLVMBuildCall2(g->b, ft, f, args, (unsigned)n, "");
}

nx_gs_val nx_gs_convert(nx_gs *g, nx_gs_val x, nx_type to)
{
	LLVMBuilderRef b = g->b;
	LLVMTypeRef tt = nx_gs_ctype(g, to);
	LLVMValueRef v = x.v;
	if (x.t == to)
		return x;
	if (to == NX_PRED) {
		v = is_f(x.t) ? nx_llvm.LLVMBuildFCmp(b, LLVMRealUNE, v, nx_llvm.LLVMConstReal(g->f32, 0), "")
		              : x.t == NX_PRED ? v : nx_llvm.LLVMBuildICmp(b, LLVMIntNE, v, nx_llvm.LLVMConstInt(nx_llvm.LLVMTypeOf(v), 0, 0), "");
		return (nx_gs_val){v, to};
	}
	if (is_f(x.t) && is_f(to))
		return (nx_gs_val){fix(g, v, to), to};
	if (is_f(x.t)) { /* saturating, NaN -> 0 (no poison) */
		LLVMTypeRef ov[2] = {tt, g->f32};
		v = intrinsic(g, is_signed(to) ? "llvm.fptosi.sat" : "llvm.fptoui.sat", ov, 2, &v, 1);
		return (nx_gs_val){v, to};
	}
	if (is_f(to)) {
		v = is_signed(x.t) ? nx_llvm.LLVMBuildSIToFP(b, v, g->f32, "") : nx_llvm.LLVMBuildUIToFP(b, v, g->f32, "");
		return (nx_gs_val){fix(g, v, to), to};
	}
	unsigned fb = nx_llvm.LLVMGetIntTypeWidth(nx_llvm.LLVMTypeOf(v)), tb = nx_llvm.LLVMGetIntTypeWidth(tt);
	if (tb < fb)
		v = nx_llvm.LLVMBuildTrunc(b, v, tt, "");
	else if (tb > fb)
		v = is_signed(x.t) ? nx_llvm.LLVMBuildSExt(b, v, tt, "") : nx_llvm.LLVMBuildZExt(b, v, tt, "");
	return (nx_gs_val){v, to};
}

static LLVMValueRef constant(nx_gs *g, const nx_literal *l, nx_type t)
{
	if (is_f(t))
		return nx_llvm.LLVMConstReal(g->f32, nx_lit_get_f64(l, 0));
	if (t == NX_PRED)
		return nx_llvm.LLVMConstInt(g->i1, nx_lit_get_i64(l, 0) != 0, 0);
	LLVMTypeRef tt = nx_gs_ctype(g, t);
	return nx_llvm.LLVMConstInt(tt, is_signed(t) ? (unsigned long long)nx_lit_get_i64(l, 0) : nx_lit_get_u64(l, 0), 1);
}

/* the total order key of an f32 (as a signed i32 compare) */
static LLVMValueRef total_key(nx_gs *g, LLVMValueRef f)
{
	LLVMValueRef i = nx_llvm.LLVMBuildBitCast(g->b, f, g->i32, "");
	LLVMValueRef neg = nx_llvm.LLVMBuildICmp(g->b, LLVMIntSLT, i, c32(g, 0), "");
	return nx_llvm.LLVMBuildSelect(g->b, neg, nx_llvm.LLVMBuildXor(g->b, i, c32(g, 0x7fffffff), ""), i, "");
}

LLVMValueRef nx_gs_order_key(nx_gs *g, nx_gs_val v)
{
	if (is_f(v.t))
		return nx_llvm.LLVMBuildSExt(g->b, total_key(g, v.v), g->i64, "");
	if (is_signed(v.t))
		return nx_llvm.LLVMBuildSExt(g->b, v.v, g->i64, "");
	return nx_llvm.LLVMBuildZExt(g->b, v.v, g->i64, "");
}

static LLVMValueRef compare(nx_gs *g, const nx_inst *i, nx_gs_val a, nx_gs_val b)
{
	nx_cmp_dir d = i->a.direction;
	LLVMBuilderRef bl = g->b;
	if (is_f(a.t) && i->a.compare_type != NX_CMPT_TOTALORDER) {
		static const LLVMRealPredicate fp[] = {LLVMRealOEQ, LLVMRealOEQ, LLVMRealUNE, LLVMRealOLT,
		                                       LLVMRealOLE, LLVMRealOGT, LLVMRealOGE};
		return nx_llvm.LLVMBuildFCmp(bl, fp[d], a.v, b.v, "");
	}
	LLVMValueRef x = a.v, y = b.v;
	bool sgn = is_signed(a.t) || is_f(a.t);
	if (is_f(a.t))
		x = total_key(g, x), y = total_key(g, y);
	if (a.t == NX_PRED)
		sgn = false;
	static const LLVMIntPredicate sp[] = {LLVMIntEQ, LLVMIntEQ, LLVMIntNE, LLVMIntSLT, LLVMIntSLE, LLVMIntSGT, LLVMIntSGE};
	static const LLVMIntPredicate up[] = {LLVMIntEQ, LLVMIntEQ, LLVMIntNE, LLVMIntULT, LLVMIntULE, LLVMIntUGT, LLVMIntUGE};
	return nx_llvm.LLVMBuildICmp(bl, sgn ? sp[d] : up[d], x, y, "");
}

static LLVMValueRef maxmin(nx_gs *g, bool max, nx_gs_val a, nx_gs_val b)
{
	LLVMBuilderRef bl = g->b;
	if (is_f(a.t)) { /* isnan(a) ? a : isnan(b) ? b : (a < b) == max ? b : a */
		LLVMValueRef lt = max ? nx_llvm.LLVMBuildFCmp(bl, LLVMRealOLT, a.v, b.v, "") : nx_llvm.LLVMBuildFCmp(bl, LLVMRealOLT, b.v, a.v, "");
		LLVMValueRef r = nx_llvm.LLVMBuildSelect(bl, lt, b.v, a.v, "");
		r = nx_llvm.LLVMBuildSelect(bl, nx_llvm.LLVMBuildFCmp(bl, LLVMRealUNO, b.v, b.v, ""), b.v, r, "");
		return nx_llvm.LLVMBuildSelect(bl, nx_llvm.LLVMBuildFCmp(bl, LLVMRealUNO, a.v, a.v, ""), a.v, r, "");
	}
	bool s = is_signed(a.t);
	LLVMValueRef lt = max ? nx_llvm.LLVMBuildICmp(bl, s ? LLVMIntSLT : LLVMIntULT, a.v, b.v, "")
	                      : nx_llvm.LLVMBuildICmp(bl, s ? LLVMIntSLT : LLVMIntULT, b.v, a.v, "");
	return nx_llvm.LLVMBuildSelect(bl, lt, b.v, a.v, "");
}

static LLVMValueRef idiv(nx_gs *g, bool rem, nx_gs_val a, nx_gs_val b)
{
	LLVMBuilderRef bl = g->b;
	LLVMTypeRef t = nx_llvm.LLVMTypeOf(a.v);
	LLVMValueRef zero = nx_llvm.LLVMConstInt(t, 0, 0), one = nx_llvm.LLVMConstInt(t, 1, 0), ones = nx_llvm.LLVMConstAllOnes(t);
	LLVMValueRef bz = nx_llvm.LLVMBuildICmp(bl, LLVMIntEQ, b.v, zero, "");
	LLVMValueRef safe = nx_llvm.LLVMBuildSelect(bl, bz, one, b.v, "");
	LLVMValueRef r;
	if (is_signed(a.t)) {
		unsigned w = nx_llvm.LLVMGetIntTypeWidth(t);
		LLVMValueRef min = nx_llvm.LLVMConstShl(one, nx_llvm.LLVMConstInt(t, w - 1, 0));
		LLVMValueRef ovf = nx_llvm.LLVMBuildAnd(bl, nx_llvm.LLVMBuildICmp(bl, LLVMIntEQ, a.v, min, ""),
		                                nx_llvm.LLVMBuildICmp(bl, LLVMIntEQ, safe, ones, ""), "");
		safe = nx_llvm.LLVMBuildSelect(bl, ovf, one, safe, "");
		r = rem ? nx_llvm.LLVMBuildSRem(bl, a.v, safe, "") : nx_llvm.LLVMBuildSDiv(bl, a.v, safe, "");
		r = nx_llvm.LLVMBuildSelect(bl, ovf, rem ? zero : min, r, "");
	} else
		r = rem ? nx_llvm.LLVMBuildURem(bl, a.v, safe, "") : nx_llvm.LLVMBuildUDiv(bl, a.v, safe, "");
	return nx_llvm.LLVMBuildSelect(bl, bz, rem ? a.v : ones, r, "");
}

static LLVMValueRef shift(nx_gs *g, nx_opcode op, nx_gs_val a, nx_gs_val b)
{
	LLVMBuilderRef bl = g->b;
	LLVMTypeRef t = nx_llvm.LLVMTypeOf(a.v);
	unsigned w = nx_llvm.LLVMGetIntTypeWidth(t);
	LLVMValueRef big = nx_llvm.LLVMBuildICmp(bl, LLVMIntUGE, b.v, nx_llvm.LLVMConstInt(t, w, 0), "");
	LLVMValueRef s = nx_llvm.LLVMBuildSelect(bl, big, nx_llvm.LLVMConstInt(t, 0, 0), b.v, "");
	if (op == NX_OP_SHIFT_LEFT)
		return nx_llvm.LLVMBuildSelect(bl, big, nx_llvm.LLVMConstInt(t, 0, 0), nx_llvm.LLVMBuildShl(bl, a.v, s, ""), "");
	if (op == NX_OP_SHIFT_RIGHT_LOGICAL)
		return nx_llvm.LLVMBuildSelect(bl, big, nx_llvm.LLVMConstInt(t, 0, 0), nx_llvm.LLVMBuildLShr(bl, a.v, s, ""), "");
	s = nx_llvm.LLVMBuildSelect(bl, big, nx_llvm.LLVMConstInt(t, w - 1, 0), b.v, "");
	return nx_llvm.LLVMBuildAShr(bl, a.v, s, "");
}

static const char *unary_libm(nx_opcode op)
{
	switch (op) {
	case NX_OP_EXPONENTIAL: return "expf";
	case NX_OP_LOG: return "logf";
	case NX_OP_LOG_PLUS_ONE: return "log1pf";
	case NX_OP_EXPONENTIAL_MINUS_ONE: return "expm1f";
	case NX_OP_TANH: return "tanhf";
	case NX_OP_SQRT: return "sqrtf";
	case NX_OP_SINE: return "sinf";
	case NX_OP_COSINE: return "cosf";
	case NX_OP_TAN: return "tanf";
	case NX_OP_ATAN: return "atanf";
	case NX_OP_ERF: return "erff";
	case NX_OP_CBRT: return "cbrtf";
	case NX_OP_FLOOR: return "floorf";
	case NX_OP_CEIL: return "ceilf";
	case NX_OP_ROUND_NEAREST_AFZ: return "roundf";
	case NX_OP_ROUND_NEAREST_EVEN: return "rintf";
	default: return NULL;
	}
}

/* One instruction of a scalar computation; vals[] indexed by position. */
static int emit_inst(nx_gs *g, const nx_inst *i, nx_gs_val *o, const nx_gs_val *x)
{
	if (i->op != NX_OP_TUPLE && (!nx_shape_is_array(i->shape) || i->shape->rank != 0))
		return nx_gs_fail(g, "'%s' in a computation is not a scalar", i->name);
	return nx_gs_inst(g, i, o, x);
}

int nx_gs_inst(nx_gs *g, const nx_inst *i, nx_gs_val *o, const nx_gs_val *x)
{
	LLVMBuilderRef b = g->b;
	nx_type t = i->shape->type;
	const char *fn;
	if (i->op != NX_OP_TUPLE && !nx_gs_type_ok(t))
		return nx_gs_fail(g, "element type %s in a GpSimd computation", nx_type_name(t));
	o->t = t;
	switch (i->op) {
	case NX_OP_CONSTANT: o->v = constant(g, i->a.literal, t); return 0;
	case NX_OP_COPY: *o = x[0]; return 0;
	case NX_OP_CONVERT: *o = nx_gs_convert(g, x[0], t); return 0;
	case NX_OP_BITCAST_CONVERT:
		if (nx_type_bytes(t) != nx_type_bytes(x[0].t) || t == NX_BF16 || x[0].t == NX_BF16 || t == NX_PRED)
			return nx_gs_fail(g, "bitcast-convert %s -> %s", nx_type_name(x[0].t), nx_type_name(t));
		o->v = nx_llvm.LLVMBuildBitCast(b, x[0].v, nx_gs_ctype(g, t), "");
		return 0;
	case NX_OP_COMPARE: o->v = compare(g, i, x[0], x[1]); return 0;
	case NX_OP_SELECT: o->v = nx_llvm.LLVMBuildSelect(b, x[0].v, x[1].v, x[2].v, ""); return 0;
	case NX_OP_MAXIMUM: o->v = maxmin(g, true, x[0], x[1]); return 0;
	case NX_OP_MINIMUM: o->v = maxmin(g, false, x[0], x[1]); return 0;
	case NX_OP_CLAMP: { /* min(max(x, lo), hi) */
		nx_gs_val m = {maxmin(g, true, x[1], x[0]), t};
		o->v = maxmin(g, false, m, x[2]);
		return 0;
	}
	case NX_OP_AND: o->v = nx_llvm.LLVMBuildAnd(b, x[0].v, x[1].v, ""); return 0;
	case NX_OP_OR: o->v = nx_llvm.LLVMBuildOr(b, x[0].v, x[1].v, ""); return 0;
	case NX_OP_XOR: o->v = nx_llvm.LLVMBuildXor(b, x[0].v, x[1].v, ""); return 0;
	case NX_OP_NOT: o->v = nx_llvm.LLVMBuildNot(b, x[0].v, ""); return 0;
	case NX_OP_SHIFT_LEFT: case NX_OP_SHIFT_RIGHT_LOGICAL: case NX_OP_SHIFT_RIGHT_ARITHMETIC:
		if (is_f(t) || t == NX_PRED)
			break;
		o->v = shift(g, i->op, x[0], x[1]);
		return 0;
	default:
		break;
	}
	if (is_f(t)) {
		LLVMValueRef v;
		switch (i->op) {
		case NX_OP_ADD: v = nx_llvm.LLVMBuildFAdd(b, x[0].v, x[1].v, ""); break;
		case NX_OP_SUBTRACT: v = nx_llvm.LLVMBuildFSub(b, x[0].v, x[1].v, ""); break;
		case NX_OP_MULTIPLY: v = nx_llvm.LLVMBuildFMul(b, x[0].v, x[1].v, ""); break;
		case NX_OP_DIVIDE: v = nx_llvm.LLVMBuildFDiv(b, x[0].v, x[1].v, ""); break;
		case NX_OP_REMAINDER: v = nx_llvm.LLVMBuildFRem(b, x[0].v, x[1].v, ""); break;
		case NX_OP_NEGATE: v = nx_llvm.LLVMBuildFNeg(b, x[0].v, ""); break;
		case NX_OP_ABS: {
			LLVMTypeRef ov = g->f32;
			LLVMValueRef a = x[0].v;
			v = intrinsic(g, "llvm.fabs", &ov, 1, &a, 1);
			break;
		}
		case NX_OP_POWER: { LLVMValueRef a[2] = {x[0].v, x[1].v}; v = libm(g, "powf", a, 2); break; }
		case NX_OP_ATAN2: { LLVMValueRef a[2] = {x[0].v, x[1].v}; v = libm(g, "atan2f", a, 2); break; }
		case NX_OP_RSQRT: {
			LLVMValueRef a = x[0].v;
			v = nx_llvm.LLVMBuildFDiv(b, nx_llvm.LLVMConstReal(g->f32, 1.0), libm(g, "sqrtf", &a, 1), "");
			break;
		}
		case NX_OP_LOGISTIC: {
			LLVMValueRef a = nx_llvm.LLVMBuildFNeg(b, x[0].v, "");
			v = nx_llvm.LLVMBuildFDiv(b, nx_llvm.LLVMConstReal(g->f32, 1.0),
			                  nx_llvm.LLVMBuildFAdd(b, nx_llvm.LLVMConstReal(g->f32, 1.0), libm(g, "expf", &a, 1), ""), "");
			break;
		}
		case NX_OP_SIGN: {
			LLVMValueRef z = nx_llvm.LLVMConstReal(g->f32, 0), a = x[0].v;
			LLVMValueRef pos = nx_llvm.LLVMBuildFCmp(b, LLVMRealOGT, a, z, ""), neg = nx_llvm.LLVMBuildFCmp(b, LLVMRealOLT, a, z, "");
			v = nx_llvm.LLVMBuildSelect(b, pos, nx_llvm.LLVMConstReal(g->f32, 1), nx_llvm.LLVMBuildSelect(b, neg, nx_llvm.LLVMConstReal(g->f32, -1), a, ""), "");
			break;
		}
		default:
			if (!(fn = unary_libm(i->op)))
				return nx_gs_fail(g, "operation '%s' in a GpSimd computation", nx_opcode_name(i->op));
			{
				LLVMValueRef a = x[0].v;
				v = libm(g, fn, &a, 1);
			}
		}
		o->v = fix(g, v, t);
		return 0;
	}
	LLVMTypeRef tt = nx_gs_ctype(g, t);
	switch (i->op) {
	case NX_OP_ADD: o->v = nx_llvm.LLVMBuildAdd(b, x[0].v, x[1].v, ""); return 0;
	case NX_OP_SUBTRACT: o->v = nx_llvm.LLVMBuildSub(b, x[0].v, x[1].v, ""); return 0;
	case NX_OP_MULTIPLY: o->v = nx_llvm.LLVMBuildMul(b, x[0].v, x[1].v, ""); return 0;
	case NX_OP_DIVIDE: o->v = idiv(g, false, x[0], x[1]); return 0;
	case NX_OP_REMAINDER: o->v = idiv(g, true, x[0], x[1]); return 0;
	case NX_OP_NEGATE: o->v = nx_llvm.LLVMBuildSub(b, nx_llvm.LLVMConstInt(tt, 0, 0), x[0].v, ""); return 0;
	case NX_OP_ABS:
		if (!is_signed(t)) {
			*o = x[0];
			return 0;
		}
		o->v = nx_llvm.LLVMBuildSelect(b, nx_llvm.LLVMBuildICmp(b, LLVMIntSLT, x[0].v, nx_llvm.LLVMConstInt(tt, 0, 0), ""),
		                       nx_llvm.LLVMBuildSub(b, nx_llvm.LLVMConstInt(tt, 0, 0), x[0].v, ""), x[0].v, "");
		return 0;
	default:
		return nx_gs_fail(g, "operation '%s' on %s in a GpSimd computation", nx_opcode_name(i->op), nx_type_name(t));
	}
}

int nx_gs_comp(nx_gs *g, const nx_comp *c, const nx_gs_val *args, nx_gs_val *out, int maxout)
{
	nx_gs_val *v = calloc((size_t)c->ninsts + 1, sizeof *v);
	int nout = -1;
	for (int k = 0; k < c->ninsts; k++)
		c->insts[k]->aux = (void *)(intptr_t)k;
	for (int k = 0; k < c->ninsts; k++) {
		const nx_inst *i = c->insts[k];
		if (i->op == NX_OP_PARAMETER) {
			if (i->a.parameter_number < 0 || i->a.parameter_number >= c->nparams)
				goto fail;
			v[k] = args[i->a.parameter_number];
			if (v[k].t != i->shape->type) {
				nx_gs_fail(g, "parameter %lld of '%s' has a different type", (long long)i->a.parameter_number, c->name);
				goto fail;
			}
			continue;
		}
		if (i->op == NX_OP_TUPLE) {
			if (i != c->root || i->noperands > maxout) {
				nx_gs_fail(g, "tuple inside computation '%s'", c->name);
				goto fail;
			}
			continue;
		}
		nx_gs_val x[3];
		if (i->noperands > 3) {
			nx_gs_fail(g, "'%s' with %d operands in a GpSimd computation", i->name, i->noperands);
			goto fail;
		}
		for (int j = 0; j < i->noperands; j++)
			x[j] = v[(intptr_t)i->operands[j]->aux];
		if (emit_inst(g, i, &v[k], x) < 0)
			goto fail;
	}
	if (c->root->op == NX_OP_TUPLE) {
		for (int j = 0; j < c->root->noperands; j++)
			out[j] = v[(intptr_t)c->root->operands[j]->aux];
		nout = c->root->noperands;
	} else {
		out[0] = v[(intptr_t)c->root->aux];
		nout = 1;
	}
	free(v);
	return nout;
fail:
	free(v);
	if (!g->err)
		nx_gs_fail(g, "computation '%s' is not supported on GpSimd", c->name);
	return -1;
}

/* ------------------------------------------------------------ loops */
LLVMValueRef nx_gs_var(nx_gs *g, LLVMTypeRef t, const char *name)
{
	LLVMBasicBlockRef cur = nx_llvm.LLVMGetInsertBlock(g->b);
	LLVMBasicBlockRef entry = nx_llvm.LLVMGetEntryBasicBlock(g->fn);
	LLVMValueRef first = nx_llvm.LLVMGetFirstInstruction(entry);
	if (first)
		nx_llvm.LLVMPositionBuilderBefore(g->b, first);
	else
		nx_llvm.LLVMPositionBuilderAtEnd(g->b, entry);
	LLVMValueRef a = nx_llvm.LLVMBuildAlloca(g->b, t, name);
	nx_llvm.LLVMPositionBuilderAtEnd(g->b, cur);
	return a;
}

nx_gs_loop nx_gs_for(nx_gs *g, LLVMValueRef lo, LLVMValueRef hi, const char *name)
{
	nx_gs_loop l;
	l.var = nx_gs_var(g, g->i64, name);
	nx_llvm.LLVMBuildStore(g->b, lo, l.var);
	l.cond = nx_llvm.LLVMAppendBasicBlockInContext(g->ctx, g->fn, "cond");
	l.body = nx_llvm.LLVMAppendBasicBlockInContext(g->ctx, g->fn, "body");
	l.end = nx_llvm.LLVMAppendBasicBlockInContext(g->ctx, g->fn, "end");
	nx_llvm.LLVMBuildBr(g->b, l.cond);
	nx_llvm.LLVMPositionBuilderAtEnd(g->b, l.cond);
	LLVMValueRef i = nx_llvm.LLVMBuildLoad2(g->b, g->i64, l.var, "");
	nx_llvm.LLVMBuildCondBr(g->b, nx_llvm.LLVMBuildICmp(g->b, LLVMIntSLT, i, hi, ""), l.body, l.end);
	nx_llvm.LLVMPositionBuilderAtEnd(g->b, l.body);
	return l;
}

LLVMValueRef nx_gs_idx(nx_gs *g, const nx_gs_loop *l)
{
	return nx_llvm.LLVMBuildLoad2(g->b, g->i64, l->var, "");
}

void nx_gs_endfor(nx_gs *g, nx_gs_loop *l)
{
	LLVMValueRef i = nx_llvm.LLVMBuildLoad2(g->b, g->i64, l->var, "");
	nx_llvm.LLVMBuildStore(g->b, nx_llvm.LLVMBuildAdd(g->b, i, nx_gs_c64(g, 1), ""), l->var);
	nx_llvm.LLVMBuildBr(g->b, l->cond);
	nx_llvm.LLVMPositionBuilderAtEnd(g->b, l->end);
}
