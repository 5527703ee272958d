/* compiler/cmd_run.c — `nxcc run`: load a .neff (validated as untrusted),
 * simulate it, print outputs, simulated time and engine utilization. */
#include "compiler/cli.h"
#include "compiler/rundev.h"

#include "ir/eval.h"
#include "ir/npy.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void help(void)
{
	printf("usage: nxcc run OUT.neff [--input NAME=x.npy ...] [--random-inputs SEED]\n"
	       "                [--output-dir DIR] [--profile trace.json]\n\n"
	       "Loads the .neff (every offset, access pattern and semaphore is checked),\n"
	       "runs it on the simulated NeuronCore of its target and prints each output,\n"
	       "the simulated time and busy/total time per engine. NAME is an input name\n"
	       "from the .neff or its index. Inputs without --input get the deterministic\n"
	       "random data of --random-inputs SEED (the same generator as nxcc eval).\n"
	       "Writes DIR/out<k>.npy. s64 values travel as s32 on the device.\n");
}

static void summarize(const char *name, const nx_literal *l)
{
	int64_t n = nx_shape_elems(l->shape);
	char shp[256];
	nx_shape_print(shp, sizeof shp, l->shape, false);
	double mn = INFINITY, mx = -INFINITY, sum = 0;
	for (int64_t k = 0; k < n; k++) {
		double v = nx_lit_get_f64(l, k);
		mn = v < mn ? v : mn, mx = v > mx ? v : mx, sum += v;
	}
	printf("%s: %s", name, shp);
	if (n)
		printf("  min %.6g max %.6g mean %.6g", mn, mx, sum / (double)n);
	printf("\n");
}

int nx_cmd_run(int argc, char **argv)
{
	const char *file = NULL, *outdir = NULL, *profile = NULL, *v;
	const char **keys = calloc((size_t)argc + 1, sizeof *keys);
	int nkeys = 0, rc = 0;
	bool have_seed = false;
	uint64_t seed = 0;
	for (int i = 1; i < argc; i++) {
		int r;
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			help();
			free(keys);
			return 0;
		}
		if ((r = nx_cli_flag(argc, argv, &i, "--input", &v)) != 0) {
			if (r < 0 || !strchr(v, '=')) {
				free(keys);
				return nx_cli_usage_error("run", "--input needs NAME=file.npy");
			}
			keys[nkeys++] = v;
		} else if ((r = nx_cli_flag(argc, argv, &i, "--random-inputs", &v)) != 0) {
			if (r < 0)
				goto usage;
			seed = strtoull(v, NULL, 0), have_seed = true;
		} else if ((r = nx_cli_flag(argc, argv, &i, "--output-dir", &v)) != 0) {
			if (r < 0)
				goto usage;
			outdir = v;
		} else if ((r = nx_cli_flag(argc, argv, &i, "--profile", &v)) != 0) {
			if (r < 0)
				goto usage;
			profile = v;
		} else if (argv[i][0] == '-' && argv[i][1]) {
			free(keys);
			return nx_cli_usage_error("run", "unknown flag '%s'", argv[i]);
		} else if (file) {
			free(keys);
			return nx_cli_usage_error("run", "more than one .neff file");
		} else {
			file = argv[i];
		}
	}
	if (!file) {
		free(keys);
		return nx_cli_usage_error("run", "no .neff file (see nxcc run --help)");
	}
	nx_diag d = {0};
	nx_arena a;
	nx_arena_init(&a);
	nx_neff *n = nx_rt_load(file, NULL, &d);
	if (!n)
		goto fail;
	nx_literal **in = nx_arena_alloc(&a, sizeof *in * (size_t)(n->ninputs + 1));
	for (int k = 0; k < nkeys; k++) {
		const char *eq = strchr(keys[k], '=');
		int idx = -1;
		for (int j = 0; j < n->ninputs; j++)
			if (strlen(n->inputs[j].name) == (size_t)(eq - keys[k]) &&
			    !strncmp(n->inputs[j].name, keys[k], (size_t)(eq - keys[k])))
				idx = j;
		if (idx < 0) {
			char *end;
			long x = strtol(keys[k], &end, 10);
			if (end == eq && x >= 0 && x < n->ninputs)
				idx = (int)x;
		}
		if (idx < 0) {
			nx_diag_set(&d, NX_ERR_INPUT, file, 0, 0, "--input %.*s: no input with that name or index",
			            (int)(eq - keys[k]), keys[k]);
			goto fail;
		}
		nx_dtype dt = n->inputs[idx].dtype;
		bool raw = dt == NX_DT_BF16 || dt == NX_DT_FP8E4M3 || dt == NX_DT_FP8E5M2;
		in[idx] = nx_npy_load(&a, eq + 1, raw ? nx_rundev_type(dt) : NX_TYPE_INVALID, &d);
		if (!in[idx])
			goto fail;
	}
	for (int k = 0; k < n->ninputs; k++) {
		if (in[k])
			continue;
		if (!have_seed) {
			nx_diag_set(&d, NX_ERR_INPUT, file, 0, 0,
			            "input %d (%s) has no --input and no --random-inputs SEED was given", k, n->inputs[k].name);
			goto fail;
		}
		nx_shape *s = nx_shape_array(&a, nx_rundev_type(n->inputs[k].dtype), n->inputs[k].rank, n->inputs[k].dims);
		in[k] = nx_random_literal_in(&a, s, seed, k, n->inputs[k].nonneg ? NX_RANDOM_NONNEG : NX_RANDOM_SIGNED);
	}
	nx_literal **outs = nx_arena_alloc(&a, sizeof *outs * (size_t)(n->noutputs + 1));
	nx_rt_opts o = nx_rt_opts_default();
	o.profile_path = profile;
	nx_rt_stats st;
	if (nx_rundev(n, in, NULL, &a, outs, &o, &st, &d) != NX_OK)
		goto fail;
	if (outdir && mkdir(outdir, 0777) != 0 && errno != EEXIST) {
		nx_diag_set(&d, NX_ERR_IO, outdir, 0, 0, "cannot create the output directory");
		goto fail;
	}
	for (int k = 0; k < n->noutputs; k++) {
		char name[300];
		snprintf(name, sizeof name, "out%d (%s)", k, n->outputs[k].name);
		summarize(name, outs[k]);
		if (outdir) {
			char path[4096];
			snprintf(path, sizeof path, "%s/out%d.npy", outdir, k);
			if (nx_npy_save(path, outs[k], &d) != NX_OK)
				goto fail;
		}
	}
	nx_rundev_print_stats(n, &st);
	goto done;
fail:
	rc = nx_cli_report(&d);
done:
	nx_diag_clear(&d);
	nx_neff_free(n);
	nx_arena_free(&a);
	free(keys);
	return rc;
usage:
	free(keys);
	return NX_EXIT_USER;
}
