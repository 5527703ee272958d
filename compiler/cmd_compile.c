/* compiler/cmd_compile.c — `nxcc compile`: HLO module to .neff, through the
 * compile cache (compiler/compile_cached.c). Flags: every neuronx-cc
 * spelling (compiler/flags.c), NEURON_CC_FLAGS merged, the command line wins. */
#include "compiler/cli.h"
#include "compiler/custom_op.h"
#include "compiler/compile_cached.h"
#include "compiler/errors.h"

#include <errno.h>
#include <stdio.h>
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
	       "                   [--dump-dir DIR] [--dump-format hlo|dot|html]\n"
	       "                   [--cache-dir DIR|s3://BUCKET/PREFIX] [--no-cache] [--retry-failed]\n"
	       "                   [--dump-lower plan|memory|streams[,...]]\n\n"
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
	       "use and the lowering stage times. --dump-lower prints the kernel plan (one\n"
	       "block per kernel: kind, tiling, loop nest, engines, resident inputs), the\n"
	       "memory plan (SBUF regions, PSUM halves, HBM placement) and/or the engine\n"
	       "streams (disassembly) after compiling (no cache lookup; docs/lowering.md).\n"
	       "Exit 1 on a bad input or an unsupported op, 70 on an internal error.\n"
	       "--list-flags prints every flag the parser knows (docs/cli.md explains them).\n");
}

/* Whether the command line itself (not NEURON_CC_FLAGS, which belongs to
 * the framework and its own cache) names a compile cache. */
static bool cache_asked(int argc, char **argv)
{
	for (int i = 0; i < argc; i++)
		if (!strncmp(argv[i], "--cache-dir", 11) || !strncmp(argv[i], "--cache_dir", 11))
			return true;
	return false;
}

int nx_compile_main(int argc, char **argv, bool neuronx_cc)
{
	char **rest = calloc((size_t)argc + 1, sizeof(char *));
	if (!rest)
		abort();
	int nrest = 0;
	bool stats = false;
	unsigned dump = 0;
	for (int i = 1; i < argc; i++) {
		const char *dv = NULL;
		if (!strcmp(argv[i], "--dump-lower") && i + 1 < argc)
			dv = argv[++i];
		else if (!strncmp(argv[i], "--dump-lower=", 13))
			dv = argv[i] + 13;
		if (dv) {
			char buf[64];
			snprintf(buf, sizeof buf, "%s", dv);
			for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
				unsigned bit = !strcmp(tok, "plan") ? NX_DUMP_PLAN : !strcmp(tok, "memory") ? NX_DUMP_MEMORY
				               : !strcmp(tok, "streams") ? NX_DUMP_STREAMS : 0;
				if (!bit) {
					free(rest);
					return nx_cli_usage_error("compile", "--dump-lower takes plan, memory or streams (got '%s')",
					                          tok);
				}
				dump |= bit;
			}
			continue;
		}
		if (!strcmp(argv[i], "--dump-lower")) {
			free(rest);
			return nx_cli_usage_error("compile", "--dump-lower needs a value: plan, memory or streams");
		}
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			help();
			free(rest);
			return 0;
		}
		if (!strcmp(argv[i], "--list-flags")) {
			nx_flags_print_list(stdout);
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
	log.codes = neuronx_cc;
	int rc;
	nx_status pst = nx_flags_parse(nrest, rest, getenv("NEURON_CC_FLAGS"), &f, &d);
	if (pst == NX_OK && neuronx_cc) {
		/* the framework wrapper's conventions: a log file by default, and
		 * no cache of our own under the framework's unless asked for */
		if (!f.logfile)
			f.logfile = nx_xstrdup("log-neuron-cc.txt");
		if (!cache_asked(nrest, rest))
			f.no_cache = true;
	}
	if (pst != NX_OK)
		rc = nx_log_report(&log, &d);
	else if (f.n_inputs == 0)
		rc = nx_cli_usage_error("compile", NX_E_ARG_INPUTS ": no input file (see %s compile --help)",
		                        neuronx_cc ? "neuronx-cc" : "nxcc");
	else if (f.n_inputs > 1)
		rc = nx_cli_usage_error("compile", NX_E_ARG_INPUTS ": more than one input file ('%s', '%s')", f.inputs[0],
		                        f.inputs[1]);
	else if (nx_log_open(&log, &f, &d) != NX_OK)
		rc = nx_log_report(&log, &d);
	else {
		f.dump_lower = dump;
		nx_log_flags(&log, neuronx_cc ? "neuronx-cc compile" : "compile", argc - 1, argv + 1, &f);
		rc = nx_custom_ops_setup(&f, &log); /* --custom-op (GpSimd kernels) */
		if (rc == 0)
			rc = nx_compile_cached(&f, stats, neuronx_cc, &log);
		nx_logf(&log, rc ? NX_LOG_ERROR : NX_LOG_INFO, "compile %s (exit status %d)", rc ? "FAILED" : "PASSED", rc);
	}
	/* neuronx-cc's last word, which framework wrappers look for */
	if (neuronx_cc) {
		printf("Compiler status %s\n", rc == 0 ? "PASS" : "ERROR");
		nx_log_filef(&log, NX_LOG_INFO, "Compiler status %s", rc == 0 ? "PASS" : "ERROR");
	}
	if (!nx_log_close(&log)) {
		fprintf(stderr, "%s: error: cannot write the log file: %s\n", f.logfile, strerror(errno));
		if (!rc)
			rc = NX_EXIT_USER;
	}
	nx_diag_clear(&d);
	nx_flags_free(&f);
	free(rest);
	return rc;
}

int nx_cmd_compile(int argc, char **argv)
{
	return nx_compile_main(argc, argv, false);
}
