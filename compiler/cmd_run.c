/* compiler/cmd_run.c — `nxcc run`: load a .neff (validated as untrusted),
 * simulate it, print outputs, simulated time and engine utilization. */
#include "compiler/cli.h"
#include "compiler/report.h"
#include "compiler/rundev.h"

#include "ir/eval/eval.h"
#include "ir/file_atomic.h"
#include "ir/npy.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void help(void)
{
	printf("usage: nxcc run OUT.neff [--input NAME=x.npy ...] [--random-inputs SEED]\n"
	       "                [--output-dir DIR] [--profile trace.json] [--profile-format chrome|summary-json]\n"
	       "                [--report report.html] [--ranks N]\n"
	       "                [--max-steps N] [--timing-only] [--stats-json FILE] [--check-races]\n\n"
	       "Loads the .neff (every offset, access pattern and semaphore is checked),\n"
	       "runs it on the simulated NeuronCore of its target and prints each output,\n"
	       "the simulated time and busy/total time per engine. NAME is an input name\n"
	       "from the .neff or its index. Inputs without --input get the deterministic\n"
	       "random data of --random-inputs SEED (the same generator as nxcc eval).\n"
	       "Writes DIR/out<k>.npy (s64/u64 as 8-byte integers).\n"
	       "--ranks N (default: the .neff's replica count) runs N simulated ranks that\n"
	       "exchange data in collectives; every rank gets the same inputs unless\n"
	       "--input rI:NAME=x.npy gives rank I its own; writes DIR/rank<i>/out<k>.npy.\n"
	       "--max-steps N (default 10^9) bounds the instructions simulated; a program\n"
	       "whose loop counts alone need more is refused before it starts.\n"
	       "--timing-only times the instruction streams without data (no inputs, no\n"
	       "outputs, no simulated memories): the same simulated time and statistics as\n"
	       "a full run, for programs too large or slow to execute.\n"
	       "--check-races stops with an error at the first race: two accesses to the\n"
	       "same SBUF, PSUM or HBM bytes, one a write, on engines or DMA queues neither\n"
	       "of which waits for the other, loop iterations included (docs/lowering.md).\n"
	       "--stats-json FILE writes the run's statistics as JSON: simulated time, per\n"
	       "engine busy time and instructions, DMA transfers, bytes, partition rows,\n"
	       "HBM bytes read and written, busy time per DMA queue, TensorE FLOPs and\n"
	       "their time at the dtype's peak (docs/benchmarks.md describes the fields).\n"
	       "--profile writes rank 0's profile: a Chrome trace / Perfetto JSON (engines,\n"
	       "DMA queues, per-instruction args, SBUF/PSUM/DMA counter tracks), or with\n"
	       "--profile-format summary-json the summary (total_time, mfu_estimated_percent,\n"
	       "*_engine_active_time_percent, hbm_read_bytes, ...; docs/profile.md).\n"
	       "--report writes one self-contained HTML page: summary, engine timeline,\n"
	       "top kernels with their HLO source, SBUF/PSUM occupancy (docs/looking.md).\n"
	       "Every output file is written atomically (no partial file on a full disk).\n");
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
	const char *file = NULL, *outdir = NULL, *profile = NULL, *stats_json = NULL, *report = NULL, *v;
	bool timing_only = false, check_races = false;
	int profile_format = NX_RT_PROFILE_CHROME;
	nx_cli_input *inputs = calloc((size_t)argc + 1, sizeof *inputs);
	int ninputs = 0, rc = 0, nranks = 0;
	bool have_seed = false;
	uint64_t seed = 0, max_steps = 0;
	for (int i = 1; i < argc; i++) {
		int r;
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			help();
			nx_cli_inputs_free(inputs, ninputs);
			return 0;
		}
		if ((r = nx_cli_flag(argc, argv, &i, "--input", &v)) != 0) {
			if (r < 0 || !nx_cli_parse_input(v, &inputs[ninputs])) {
				nx_cli_inputs_free(inputs, ninputs);
				return nx_cli_usage_error("run", "--input needs NAME=file.npy");
			}
			ninputs++;
		} else if ((r = nx_cli_flag(argc, argv, &i, "--random-inputs", &v)) != 0) {
			if (r < 0)
				goto usage;
			seed = strtoull(v, NULL, 0), have_seed = true;
		} else if ((r = nx_cli_flag(argc, argv, &i, "--ranks", &v)) != 0) {
			if (r < 0)
				goto usage;
			nranks = atoi(v);
			if (nranks < 1 || nranks > 64) {
				nx_cli_inputs_free(inputs, ninputs);
				return nx_cli_usage_error("run", "--ranks must be 1 to 64");
			}
		} else if ((r = nx_cli_flag(argc, argv, &i, "--output-dir", &v)) != 0) {
			if (r < 0)
				goto usage;
			outdir = v;
		} else if ((r = nx_cli_flag(argc, argv, &i, "--profile", &v)) != 0) {
			if (r < 0)
				goto usage;
			profile = v;
		} else if ((r = nx_cli_flag(argc, argv, &i, "--max-steps", &v)) != 0) {
			char *end;
			if (r < 0 || (max_steps = strtoull(v, &end, 10), *end || !*v || max_steps == 0 || *v == '-')) {
				nx_cli_inputs_free(inputs, ninputs);
				return nx_cli_usage_error("run", "--max-steps needs a positive count of instructions");
			}
		} else if ((r = nx_cli_flag(argc, argv, &i, "--stats-json", &v)) != 0) {
			if (r < 0)
				goto usage;
			stats_json = v;
		} else if (!strcmp(argv[i], "--timing-only")) {
			timing_only = true;
		} else if (!strcmp(argv[i], "--check-races")) {
			check_races = true;
		} else if ((r = nx_cli_flag(argc, argv, &i, "--profile-format", &v)) != 0) {
			if (r < 0)
				goto usage;
			if (!strcmp(v, "summary-json"))
				profile_format = NX_RT_PROFILE_SUMMARY;
			else if (!strcmp(v, "chrome") || !strcmp(v, "perfetto"))
				profile_format = NX_RT_PROFILE_CHROME;
			else {
				nx_cli_inputs_free(inputs, ninputs);
				return nx_cli_usage_error("run", "--profile-format is chrome (or perfetto) or summary-json");
			}
		} else if ((r = nx_cli_flag(argc, argv, &i, "--report", &v)) != 0) {
			if (r < 0)
				goto usage;
			report = v;
		} else if (argv[i][0] == '-' && argv[i][1]) {
			nx_cli_inputs_free(inputs, ninputs);
			return nx_cli_usage_error("run", "unknown flag '%s'", argv[i]);
		} else if (file) {
			nx_cli_inputs_free(inputs, ninputs);
			return nx_cli_usage_error("run", "more than one .neff file");
		} else {
			file = argv[i];
		}
	}
	if (!file) {
		nx_cli_inputs_free(inputs, ninputs);
		return nx_cli_usage_error("run", "no .neff file (see nxcc run --help)");
	}
	if (timing_only && (ninputs || have_seed || outdir)) {
		nx_cli_inputs_free(inputs, ninputs);
		return nx_cli_usage_error("run", "--timing-only runs without data: no --input, --random-inputs or --output-dir");
	}
	nx_diag d = {0};
	nx_arena a;
	nx_arena_init(&a);
	nx_rt_profile *prof = NULL;
	nx_neff *n = nx_rt_load(file, NULL, &d);
	if (!n)
		goto fail;
	if (!nranks)
		nranks = n->nreplicas;
	if (timing_only) {
		nx_rt_opts o = nx_rt_opts_default();
		o.profile_path = profile;
		o.profile_format = profile_format;
		o.timing_only = true;
		o.check_races = check_races;
		if (report)
			o.profile_out = &prof;
		nx_rt_stats *st = nx_arena_alloc(&a, sizeof *st * (size_t)nranks);
		const nx_neff **ns = nx_arena_alloc(&a, sizeof *ns * (size_t)nranks);
		for (int r = 0; r < nranks; r++)
			ns[r] = n;
		if (nx_rt_run_ranks(nranks, ns, NULL, NULL, &o, st, &d) != NX_OK)
			goto fail;
		nx_rundev_print_ranks(n, nranks, st);
		if (stats_json && nx_rundev_write_stats_json(stats_json, n, nranks, st, true, &d) != NX_OK)
			goto fail;
		if (report && nx_report_write(report, &(nx_report){.n = n, .prof = prof, .source = file}, &d) != NX_OK)
			goto fail;
		goto done;
	}
	if (nx_rundev_check_memory(n, nranks, &d) != NX_OK) /* before making inputs */
		goto fail;
	nx_literal ***in = nx_arena_alloc(&a, sizeof *in * (size_t)nranks);
	for (int r = 0; r < nranks; r++)
		in[r] = nx_arena_alloc(&a, sizeof **in * (size_t)(n->ninputs + 1));
	/* shared inputs first, then rI: overrides */
	for (int pass = 0; pass < 2; pass++)
		for (int k = 0; k < ninputs; k++) {
			const char *key = inputs[k].key;
			int rank = inputs[k].rank;
			if ((pass == 0) != (rank < 0))
				continue;
			if (rank >= nranks) {
				nx_diag_set(&d, NX_ERR_INPUT, file, 0, 0, "--input %s: there is no rank %d (%d rank%s)", inputs[k].arg,
				            rank, nranks, nranks == 1 ? "" : "s");
				goto fail;
			}
			int idx = -1;
			for (int j = 0; j < n->ninputs; j++)
				if (!strcmp(n->inputs[j].name, key))
					idx = j;
			if (idx < 0) {
				char *end;
				long x = strtol(key, &end, 10);
				if (!*end && x >= 0 && x < n->ninputs)
					idx = (int)x;
			}
			if (idx < 0) {
				nx_diag_set(&d, NX_ERR_INPUT, file, 0, 0, "--input %s: no input with that name or index", key);
				goto fail;
			}
			nx_dtype dt = n->inputs[idx].dtype;
			bool raw = dt == NX_DT_BF16 || dt == NX_DT_FP8E4M3 || dt == NX_DT_FP8E5M2;
			nx_literal *l = nx_npy_load(&a, inputs[k].file, raw ? nx_rundev_type(dt) : NX_TYPE_INVALID, &d);
			if (!l)
				goto fail;
			for (int r = 0; r < nranks; r++)
				if (rank < 0 || rank == r)
					in[r][idx] = l;
		}
	for (int k = 0; k < n->ninputs; k++) {
		nx_literal *rnd = NULL;
		for (int r = 0; r < nranks; r++) {
			if (in[r][k])
				continue;
			if (!have_seed) {
				nx_diag_set(&d, NX_ERR_INPUT, file, 0, 0,
				            "input %d (%s) has no --input and no --random-inputs SEED was given", k,
				            n->inputs[k].name);
				goto fail;
			}
			if (!rnd) {
				nx_shape *s = nx_shape_array(&a, nx_rundev_type(n->inputs[k].dtype), n->inputs[k].rank,
				                             n->inputs[k].dims);
				rnd = nx_random_literal_in(&a, s, seed, k, n->inputs[k].nonneg ? NX_RANDOM_NONNEG : NX_RANDOM_SIGNED);
			}
			in[r][k] = rnd;
		}
	}
	nx_literal ***outs = nx_arena_alloc(&a, sizeof *outs * (size_t)nranks);
	for (int r = 0; r < nranks; r++)
		outs[r] = nx_arena_alloc(&a, sizeof **outs * (size_t)(n->noutputs + 1));
	nx_rt_opts o = nx_rt_opts_default();
	o.profile_path = profile;
	if (max_steps)
		o.max_steps = max_steps;
	o.check_races = check_races;
	o.profile_format = profile_format;
	if (report)
		o.profile_out = &prof;
	nx_rt_stats *st = nx_arena_alloc(&a, sizeof *st * (size_t)nranks);
	if (nx_rundev_ranks(n, nranks, (nx_literal *const *const *)in, NULL, &a, outs, &o, st, &d) != NX_OK)
		goto fail;
	if (outdir && nx_mkdir_p(outdir, &d) != NX_OK)
		goto fail;
	for (int r = 0; r < nranks; r++) {
		char dir[4096];
		snprintf(dir, sizeof dir, "%s/rank%d", outdir ? outdir : ".", r);
		if (nranks > 1)
			printf("rank %d:\n", r);
		if (outdir && nranks > 1 && mkdir(dir, 0777) != 0 && errno != EEXIST) {
			nx_diag_set(&d, NX_ERR_IO, dir, 0, 0, "cannot create the output directory");
			goto fail;
		}
		for (int k = 0; k < n->noutputs; k++) {
			char name[300];
			snprintf(name, sizeof name, "out%d (%s)", k, n->outputs[k].name);
			summarize(name, outs[r][k]);
			if (outdir) {
				char path[8200];
				snprintf(path, sizeof path, "%s/out%d.npy", nranks > 1 ? dir : outdir, k);
				if (nx_npy_save(path, outs[r][k], &d) != NX_OK)
					goto fail;
			}
		}
	}
	nx_rundev_print_ranks(n, nranks, st);
	if (stats_json && nx_rundev_write_stats_json(stats_json, n, nranks, st, false, &d) != NX_OK)
		goto fail;
	if (report && nx_report_write(report, &(nx_report){.n = n, .prof = prof, .source = file}, &d) != NX_OK)
		goto fail;
	goto done;
fail:
	rc = nx_cli_report(&d);
done:
	nx_prof_free(prof);
	nx_diag_clear(&d);
	nx_neff_free(n);
	nx_arena_free(&a);
	nx_cli_inputs_free(inputs, ninputs);
	return rc;
usage:
	nx_cli_inputs_free(inputs, ninputs);
	return NX_EXIT_USER;
}
