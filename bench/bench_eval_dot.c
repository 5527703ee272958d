/* bench/bench_eval_dot.c — GFLOP/s of the evaluator's f32 matmul kernel
 * (single thread), N×N×N with N = argv[1] (default 1024). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "ir/eval/eval_impl.h"

int main(int argc, char **argv)
{
	int64_t n = argc > 1 ? atoll(argv[1]) : 1024;
	float *a = malloc(sizeof(float) * (size_t)(n * n)), *b = malloc(sizeof(float) * (size_t)(n * n));
	float *c = malloc(sizeof(float) * (size_t)(n * n));
	for (int64_t k = 0; k < n * n; k++)
		a[k] = (float)(k % 7) - 3, b[k] = (float)(k % 5) - 2;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	nx_sgemm(n, n, n, a, b, c);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
	printf("dot f32 %lldx%lldx%lld: %.3f s, %.2f GFLOP/s (c[0] = %g)\n", (long long)n, (long long)n,
	       (long long)n, s, 2.0 * (double)n * (double)n * (double)n / s * 1e-9, (double)c[0]);
	free(a), free(b), free(c);
	return 0;
}
