/* bench/bench_reader.c — HLO text reader throughput: MB/s and instructions/s.
 * usage: bench_reader [FILE] [REPS] */
#include "ir/ir.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : "../shared/corpus/hlo/torch-neuronx/llama2__llama2_dp1_tp1_pp1.hlo";
	int reps = argc > 2 ? atoi(argv[2]) : 20;
	FILE *f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "bench_reader: cannot open %s\n", path);
		return 1;
	}
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *buf = malloc((size_t)n);
	if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
		fprintf(stderr, "bench_reader: read error\n");
		return 1;
	}
	fclose(f);
	long insts = 0;
	double best = 1e30, total = 0;
	for (int k = 0; k < reps; k++) {
		nx_diag d = {0};
		double t0 = now();
		nx_module *m = nx_read_text(buf, (size_t)n, path, &d);
		double t = now() - t0;
		if (!m) {
			char *s = nx_diag_format(&d);
			fprintf(stderr, "%s", s);
			free(s);
			return 1;
		}
		insts = 0;
		for (int c = 0; c < m->ncomps; c++)
			insts += m->comps[c]->ninsts;
		nx_module_free(m);
		total += t;
		if (t < best)
			best = t;
	}
	double mean = total / reps;
	printf("reader: %s (%ld bytes, %ld instructions), %d reps\n", path, n, insts, reps);
	printf("reader: mean %.2f ms: %.1f MB/s, %.0f instructions/s (best %.1f MB/s)\n", mean * 1e3,
	       (double)n / mean / 1e6, (double)insts / mean, (double)n / best / 1e6);
	free(buf);
	return 0;
}
