/* examples/custom_op/oob.c — a broken kernel that writes past its slice:
 * the simulator stops it with an error naming the kernel and the address. */
#include <stdint.h>

typedef struct nx_gs_tensor {
	void *data;
	int32_t dtype, rank;
	int64_t shape[3];
	int64_t stride[3];
} nx_gs_tensor;

void oob(const nx_gs_tensor *t, int32_t n)
{
	(void)n;
	float *y = t[0].data;
	for (int64_t e = 0; e <= t[0].shape[1] * t[0].shape[2] + 4096; e++) /* runs off the end */
		y[e] = 1.0f;
}
