/* ir/eval/eval_fft.c — fft (FFT, IFFT, RFFT, IRFFT) in the reference evaluator.
 *
 * Transforms run over the last fft_length.n dims in double precision with a
 * direct DFT per axis (any length; the evaluator values clarity over speed),
 * then round to the output type. IRFFT runs the complex inverse over the
 * leading fft axes first and the Hermitian (C2R) inverse over the last one,
 * whose imaginary parts of the DC and Nyquist terms drop out, as in XLA. */
#include <complex.h>
#include <stdlib.h>

#include "ir/eval/eval_ops.h"

/* In-place DFT of len elements of buf spaced stride apart; sign -1 forward,
 * +1 inverse (unscaled). */
static void dft_axis(double complex *buf, int64_t len, int64_t stride, int sign,
                     double complex *scratch, const double complex *tw)
{
	for (int64_t k = 0; k < len; k++) {
		double complex acc = 0;
		for (int64_t j = 0; j < len; j++) {
			/* tw[m] = exp(-2 pi i m / len); the index product wraps mod len. */
			double complex w = tw[(j * k) % len];
			if (sign > 0)
				w = conj(w);
			acc += buf[j * stride] * w;
		}
		scratch[k] = acc;
	}
	for (int64_t k = 0; k < len; k++)
		buf[k * stride] = scratch[k];
}

static double complex *twiddles(int64_t len)
{
	double complex *tw = malloc(sizeof(double complex) * (size_t)(len ? len : 1));
	for (int64_t m = 0; tw && m < len; m++) {
		double a = -2.0 * M_PI * (double)m / (double)len;
		tw[m] = cos(a) + I * sin(a);
	}
	return tw;
}

/* Transforms axis `axis` (of a row-major array with dims) of buf. */
static bool transform(double complex *buf, const int64_t *dims, int rank, int axis, int sign)
{
	int64_t len = dims[axis], stride = 1, total = 1;
	for (int d = rank - 1; d > axis; d--)
		stride *= dims[d];
	for (int d = 0; d < rank; d++)
		total *= dims[d];
	if (len <= 1 || total == 0)
		return true;
	double complex *tw = twiddles(len);
	double complex *scratch = malloc(sizeof(double complex) * (size_t)len);
	if (!tw || !scratch) {
		free(tw);
		free(scratch);
		return false;
	}
	for (int64_t base = 0; base < total; base++) {
		if ((base / stride) % len != 0)
			continue;
		dft_axis(buf + base, len, stride, sign, scratch, tw);
	}
	if (sign > 0)
		for (int64_t k = 0; k < total; k++)
			buf[k] /= (double)len;
	free(tw);
	free(scratch);
	return true;
}

nx_status nx_eval_fft(nx_eval *ev, const nx_inst *i, nx_literal *const *ops, nx_literal **out)
{
	const nx_literal *in = ops[0];
	const nx_shape *is = in->shape, *os = i->shape;
	int nf = i->a.fft_length.n;
	nx_fft_type ft = i->a.fft_type;
	if (nf < 1 || nf > 3 || nf > is->rank || is->rank != os->rank)
		return nx_eval_error(ev, i, "fft: fft_length must name 1 to 3 trailing dims");
	nx_literal *res = nx_eval_alloc(ev, i->shape);
	if (!res)
		return ev->diag->status;
	*out = res;
	int64_t nout = nx_shape_elems(os), nin = nx_shape_elems(is);
	if (nout == 0 || nin == 0)
		return NX_OK;
	for (int k = 0; k < nf; k++)
		if (i->a.fft_length.v[k] == 0)
			return NX_OK; /* a zero-length transform yields zeros */

	int rank = is->rank;
	/* Work array: the full complex signal, dims = output dims except that
	 * RFFT works on the real input's dims and IRFFT on the output's. */
	int64_t wdims[NX_MAX_RANK];
	for (int d = 0; d < rank; d++)
		wdims[d] = ft == NX_FFT_RFFT ? is->dims[d] : os->dims[d];
	int64_t wtotal = 1;
	for (int d = 0; d < rank; d++)
		wtotal *= wdims[d];
	double complex *w = calloc((size_t)wtotal, sizeof(double complex));
	if (!w)
		return nx_eval_error(ev, i, "out of memory");
	int first = rank - nf, last = rank - 1;
	bool ok = true;

	if (ft == NX_FFT_FFT || ft == NX_FFT_IFFT || ft == NX_FFT_RFFT) {
		for (int64_t k = 0; k < nin; k++) {
			double re, im = 0;
			if (nx_type_kind_of(is->type) == NX_KIND_COMPLEX)
				nx_lit_get_c128(in, k, &re, &im);
			else
				re = nx_lit_get_f64(in, k);
			w[k] = re + I * im;
		}
		int sign = ft == NX_FFT_IFFT ? 1 : -1;
		for (int a = first; a <= last && ok; a++)
			ok = transform(w, wdims, rank, a, sign);
		if (ft == NX_FFT_RFFT) {
			/* Keep the first L/2+1 entries of the last axis. */
			int64_t idx[NX_MAX_RANK], wst[NX_MAX_RANK];
			int64_t st = 1;
			for (int d = rank - 1; d >= 0; d--) {
				wst[d] = st;
				st *= wdims[d];
			}
			memset(idx, 0, sizeof idx);
			for (int64_t o = 0; o < nout; o++, nx_evop_next(idx, os->dims, rank)) {
				int64_t lin = 0;
				for (int d = 0; d < rank; d++)
					lin += idx[d] * wst[d];
				nx_lit_set_c128(res, o, creal(w[lin]), cimag(w[lin]));
			}
		} else {
			for (int64_t o = 0; o < nout; o++)
				nx_lit_set_c128(res, o, creal(w[o]), cimag(w[o]));
		}
	} else if (ft == NX_FFT_IRFFT) {
		/* Place the half spectrum, inverse-transform the leading axes, then
		 * extend the last axis Hermitian-symmetrically. */
		int64_t L = os->dims[last], half = is->dims[last];
		int64_t idx[NX_MAX_RANK];
		memset(idx, 0, sizeof idx);
		for (int64_t k = 0; k < nin; k++, nx_evop_next(idx, is->dims, rank)) {
			if (idx[last] >= L)
				continue;
			int64_t lin = 0;
			for (int d = 0; d < rank; d++)
				lin = lin * wdims[d] + idx[d];
			double re, im;
			nx_lit_get_c128(in, k, &re, &im);
			w[lin] = re + I * im;
		}
		for (int a = first; a < last && ok; a++)
			ok = transform(w, wdims, rank, a, 1);
		int64_t nrows = wtotal / L;
		for (int64_t r = 0; r < nrows && ok; r++) {
			double complex *row = w + r * L;
			int64_t nh = L / 2 + 1 < half ? L / 2 + 1 : half;
			for (int64_t k = nh; k < L; k++)
				row[k] = (L - k < nh) ? conj(row[L - k]) : 0;
		}
		if (ok)
			ok = transform(w, wdims, rank, last, 1);
		for (int64_t o = 0; o < nout && ok; o++)
			nx_lit_set_f64(res, o, creal(w[o]));
	} else {
		free(w);
		return nx_eval_error(ev, i, "fft: unknown fft_type");
	}
	free(w);
	if (!ok)
		return nx_eval_error(ev, i, "out of memory");
	return NX_OK;
}
