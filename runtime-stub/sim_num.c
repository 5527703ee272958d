/* runtime-stub/sim_num.c — element loads and rounding stores. Narrow floats
 * go through one generic encoder (exponent bits, mantissa bits); every NaN
 * is stored as the canonical quiet NaN. */
#include "runtime-stub/rt.h"

#include <math.h>

typedef struct {
	int ebits, mbits, bias;
	bool inf;   /* has infinities (IEEE style) */
	bool fn;    /* e4m3fn: only S.1111.111 is NaN, no inf */
} fmt;

static const fmt F16 = {5, 10, 15, true, false}, BF16 = {8, 7, 127, true, false},
                 E4M3 = {4, 3, 7, false, true}, E5M2 = {5, 2, 15, true, false};

static double decode(uint32_t b, fmt f)
{
	uint32_t s = b >> (f.ebits + f.mbits), e = (b >> f.mbits) & ((1u << f.ebits) - 1),
	         m = b & ((1u << f.mbits) - 1), emax = (1u << f.ebits) - 1;
	double v;
	if (f.fn && e == emax && m == (1u << f.mbits) - 1)
		v = NAN;
	else if (!f.fn && e == emax)
		v = m ? NAN : INFINITY;
	else if (e == 0)
		v = ldexp((double)m, 1 - f.bias - f.mbits);
	else
		v = ldexp((double)(m | (1u << f.mbits)), (int)e - f.bias - f.mbits);
	return s ? -v : v;
}

static uint32_t encode(double x, fmt f, double u01)
{
	uint32_t sign = signbit(x) ? 1u << (f.ebits + f.mbits) : 0, emax = (1u << f.ebits) - 1;
	uint32_t nan = f.fn ? (emax << f.mbits) | ((1u << f.mbits) - 1) : (emax << f.mbits) | (1u << (f.mbits - 1));
	if (isnan(x))
		return sign | nan;
	double a = fabs(x);
	int maxexp = f.fn ? (int)emax - f.bias : (int)emax - 1 - f.bias;
	double maxv = f.fn ? ldexp((double)((1u << (f.mbits + 1)) - 2), maxexp - f.mbits)
	                   : ldexp((double)((1u << (f.mbits + 1)) - 1), maxexp - f.mbits);
	if (isinf(a))
		return sign | (f.inf ? emax << f.mbits : nan);
	int e;
	frexp(a, &e);
	e -= 1; /* a in [2^e, 2^(e+1)) */
	if (e < 1 - f.bias)
		e = 1 - f.bias;
	double q = ldexp(1.0, e - f.mbits);
	double r = u01 >= 0 ? floor(a / q + u01) * q : nearbyint(a / q) * q;
	if (r > maxv)
		return sign | (f.inf ? emax << f.mbits : nan);
	if (r == 0)
		return sign;
	frexp(r, &e);
	e -= 1;
	if (e < 1 - f.bias)
		return sign | (uint32_t)(r / ldexp(1.0, 1 - f.bias - f.mbits));
	uint32_t m = (uint32_t)((r / ldexp(1.0, e) - 1.0) * (double)(1u << f.mbits) + 0.5);
	return sign | ((uint32_t)(e + f.bias) << f.mbits) | m;
}

double nx_rt_load_elem(const uint8_t *p, nx_dtype t)
{
	uint32_t u = 0;
	switch (t) {
	case NX_DT_F32: {
		float f;
		memcpy(&f, p, 4);
		return f;
	}
	case NX_DT_BF16: return decode((uint32_t)nx_get_le(p, 2), BF16);
	case NX_DT_F16: return decode((uint32_t)nx_get_le(p, 2), F16);
	case NX_DT_FP8E4M3: return decode(p[0], E4M3);
	case NX_DT_FP8E5M2: return decode(p[0], E5M2);
	case NX_DT_S32: u = (uint32_t)nx_get_le(p, 4); return (int32_t)u;
	case NX_DT_U32: return (uint32_t)nx_get_le(p, 4);
	case NX_DT_S16: return (int16_t)nx_get_le(p, 2);
	case NX_DT_U16: return (uint16_t)nx_get_le(p, 2);
	case NX_DT_S8: return (int8_t)p[0];
	case NX_DT_U8: return p[0];
	default: return 0;
	}
}

static int64_t to_int(double v, double lo, double hi)
{
	if (isnan(v))
		return 0;
	v = nearbyint(v);
	return (int64_t)(v < lo ? lo : v > hi ? hi : v);
}

void nx_rt_store_elem(uint8_t *p, nx_dtype t, double v, double u01)
{
	/* One NaN in memory: which operand's NaN an engine passes on depends on
	 * the order the host evaluates it, so the simulator stores the
	 * canonical quiet NaN (positive, payload 0) for every NaN. */
	if (isnan(v))
		v = (double)NAN;
	switch (t) {
	case NX_DT_F32: {
		float f;
		if (u01 >= 0 && isfinite(v) && v != 0) {
			/* stochastic: round at f32 precision using the draw */
			uint32_t b = encode(v, (fmt){8, 23, 127, true, false}, u01);
			memcpy(&f, &b, 4);
		} else {
			f = (float)v;
		}
		memcpy(p, &f, 4);
		return;
	}
	case NX_DT_BF16: nx_put_le(p, encode(v, BF16, u01), 2); return;
	case NX_DT_F16: nx_put_le(p, encode(v, F16, u01), 2); return;
	case NX_DT_FP8E4M3: p[0] = (uint8_t)encode(v, E4M3, u01); return;
	case NX_DT_FP8E5M2: p[0] = (uint8_t)encode(v, E5M2, u01); return;
	case NX_DT_S32: nx_put_le(p, (uint64_t)to_int(v, -2147483648.0, 2147483647.0), 4); return;
	case NX_DT_U32: nx_put_le(p, (uint64_t)to_int(v, 0, 4294967295.0), 4); return;
	case NX_DT_S16: nx_put_le(p, (uint64_t)to_int(v, -32768, 32767), 2); return;
	case NX_DT_U16: nx_put_le(p, (uint64_t)to_int(v, 0, 65535), 2); return;
	case NX_DT_S8: p[0] = (uint8_t)to_int(v, -128, 127); return;
	case NX_DT_U8: p[0] = (uint8_t)to_int(v, 0, 255); return;
	default: return;
	}
}
