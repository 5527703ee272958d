/* compiler/cmd_compile.c — `nxcc compile`: HLO module to .neff, through the
 * compile cache (compiler/compile_cached.c). Flags: every neuronx-cc
 * spelling (compiler/flags.c), NEURON_CC_FLAGS merged, the command line wins. */
#include "compiler/cli.h"
#include "compiler/custom_op.h"
#include "compiler/compile_cached.h"

#include <stdlib.h>
#include <string.h>

static void help(void)
{
	printf("usage: nxcc compile FILE --framework XLA --target trn1|trn1n|inf2|trn2\n"
	       "                   [-O1|-O2|-O3|--optlevel N] [--auto-cast none|matmult|all]\n"
	       "                   [--auto-cast-type bf16|fp16|tf32|fp8_e4m3|fp8_e5m2]\n"
	       "                   [--model-type generic|transformer|unet-inference]\n"
	       "                   [--output OUT.neff] [--verbose LEVEL] [--logfile FILE] [--stats]\n"
	       "                   [--time-passes] [--disable-pass NAME] [--dump-after NAME|all]\n"
	       "                   [--cache-dir DIR|s3://BUCKET/PREFIX] [--no-cache] [--retry-failed]\n\n"
	       "Reads FILE (HLO text or HloModuleProto), verifies it, runs the pass pipeline\n"
	       "of the -O level, lowers it onto the NeuronCore engines of the target and\n"
	       "writes the .neff atomically (no partial file on failure; default file.neff).\n"
	       "Every flag of `neuronx-cc compile` is accepted in both --flag value and\n"
	       "--flag=value forms; NEURON_CC_FLAGS is read first, the command line wins.\n"
	       "Flags that do not change nxcc's output are listed at --verbose info.\n"
	       "--verbose debug|info|warning|error|critical (or a number: 10..50 as Python\n"
	       "logging, 0/1/2 as a verbosity count) sets what reaches the console;\n"
	       "--logfile FILE gets the flags, the cache decision, phase and pass timings\n"
	       "and any error (info and up; debug too at --verbose debug).\n\n"
	       "The compile cache (--cache-dir, else NEURON_COMPILE_CACHE_URL, else\n"
	       "/var/tmp/nxcc-compile-cache) is keyed by the module's fingerprint and the\n"
	       "flags that change the output: a hit prints 'cache hit (WHERE)' and writes\n"
	       "the cached .neff; a failed compile is cached and reported again until\n"
	       "--retry-failed. --stats prints instruction counts per engine, HBM and SBUF\n"
	       "use. Exit 1 on a bad input or an unsupported op, 70 on an internal error.\n");
}

int nx_cmd_compile(int argc, char **argv)
{
	char **rest = calloc((size_t)argc + 1, sizeof(char *));
	if (!rest)
		abort();
	int nrest = 0;
	bool stats = false;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			help();
			free(rest);
			return 0;
		}
		if (!strcmp(argv[i], "--stats"))
			stats = true;
		else
			rest[nrest++] = argv[i];
	}
	nx_compile_flags f;
	nx_diag d = {0};
	nx_log log = {0};
	int rc;
	if (nx_flags_parse(nrest, rest, getenv("NEURON_CC_FLAGS"), &f, &d) != NX_OK)
		rc = nx_cli_report(&d);
	else if (f.n_inputs == 0)
		rc = nx_cli_usage_error("compile", "no input file (see nxcc compile --help)");
	else if (f.n_inputs > 1)
		rc = nx_cli_usage_error("compile", "more than one input file ('%s', '%s')", f.inputs[0], f.inputs[1]);
	else if (nx_log_open(&log, &f, &d) != NX_OK)
		rc = nx_cli_report(&d);
	else {
		nx_log_flags(&log, "compile", argc - 1, argv + 1, &f);
		rc = nx_custom_ops_setup(&f, &log); /* --custom-op (GpSimd kernels) */
		if (rc == 0)
			rc = nx_compile_cached(&f, stats, &log);
		nx_logf(&log, rc ? NX_LOG_ERROR : NX_LOG_INFO, "compile %s (exit status %d)", rc ? "FAILED" : "PASSED", rc);
	}
	nx_log_close(&log);
	nx_diag_clear(&d);
	nx_flags_free(&f);
	free(rest);
	return rc;
}
