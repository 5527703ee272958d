/* examples/custom_op/swish_clip.c — a user GpSimd kernel: y = clip(x * sigmoid(x), -lo, hi)
 * with the bounds per row from a second operand, fused in one pass.
 *
 *   nxcc check swish_clip.hlo --custom-op swish_clip=swish_clip.c
 *
 * The ABI (docs/gpsimd.md): t[0] is the result, t[1..] the operands, each
 * the slice of one GpSimd core: shape {partitions, rows, elements per row},
 * strides in elements. */
#include <math.h>
#include <stdint.h>

typedef struct nx_gs_tensor {
	void *data;
	int32_t dtype, rank;
	int64_t shape[3];
	int64_t stride[3];
} nx_gs_tensor;

void swish_clip(const nx_gs_tensor *t, int32_t n)
{
	(void)n;
	const nx_gs_tensor *y = &t[0], *x = &t[1], *b = &t[2];
	for (int64_t p = 0; p < y->shape[0]; p++)
		for (int64_t r = 0; r < y->shape[1]; r++) {
			const float *xr = (const float *)x->data + p * x->stride[0] + r * x->stride[1];
			float *yr = (float *)y->data + p * y->stride[0] + r * y->stride[1];
			float hi = ((const float *)b->data)[p * b->stride[0] + r * b->stride[1]];
			for (int64_t e = 0; e < y->shape[2]; e++) {
				float v = xr[e * x->stride[2]];
				float s = v / (1.0f + expf(-v));
				yr[e * y->stride[2]] = s > hi ? hi : s < -hi ? -hi : s;
			}
		}
}
