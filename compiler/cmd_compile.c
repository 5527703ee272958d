/* compiler/cmd_compile.c — `nxcc compile`: HLO module to .neff. */
#include "compiler/cli.h"
#include "compiler/driver.h"

#include <stdlib.h>
#include <string.h>

static void help(void)
{
	printf("usage: nxcc compile FILE --framework XLA --target trn1|trn1n|inf2|trn2\n"
	       "                   [-O1|-O2|-O3|--optlevel N] [--auto-cast none|matmult|all]\n"
	       "                   [--auto-cast-type bf16|fp16|tf32|fp8_e4m3|fp8_e5m2]\n"
	       "                   [--model-type generic|transformer|unet-inference]\n"
	       "                   --output OUT.neff [--stats]\n\n"
	       "Reads FILE (HLO text or HloModuleProto), verifies it, runs the pass pipeline\n"
	       "of the -O level, lowers it onto the NeuronCore engines of the target and\n"
	       "writes the .neff atomically (no partial file on failure). --stats prints\n"
	       "instruction counts per engine, HBM and SBUF use. Exit 1 on a bad input or\n"
	       "an unsupported op, 70 on an internal error.\n");
}

int nx_cmd_compile(int argc, char **argv)
{
	nx_compile_opts o;
	nx_compile_opts_init(&o);
	const char *file = NULL;
	bool stats = false;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			help();
			return 0;
		}
		if (!strcmp(a, "--stats")) {
			stats = true;
			continue;
		}
		int r = nx_driver_flag(argc, argv, &i, &o, "compile");
		if (r < 0)
			return NX_EXIT_USER;
		if (r > 0)
			continue;
		if (a[0] == '-' && a[1])
			return nx_cli_usage_error("compile", "unknown flag '%s'", a);
		if (file)
			return nx_cli_usage_error("compile", "more than one input file");
		file = a;
	}
	if (!file)
		return nx_cli_usage_error("compile", "no input file (see nxcc compile --help)");
	if (!o.output)
		return nx_cli_usage_error("compile", "no --output file");
	nx_diag d = {0};
	nx_compile_result r;
	int rc = 0;
	if (nx_driver_compile(file, &o, false, &r, &d) != NX_OK ||
	    nx_cli_write_file(o.output, r.neff, r.len, &d) != NX_OK) {
		rc = nx_cli_report(&d);
	} else if (stats) {
		printf("compile time: %.3f s\nneff: %zu bytes\nkernels: %d\n", r.seconds, r.len, r.st.kernels);
		for (int e = 0; e < NX_ENG_COUNT; e++)
			printf("instructions %s: %zu\n", nx_engine_names[e], r.st.insns[e]);
		printf("hbm: %lld bytes\nsbuf peak: %lld bytes per partition\n", (long long)r.st.hbm_bytes,
		       (long long)r.st.sbuf_peak);
	}
	nx_diag_clear(&d);
	free(r.neff);
	return rc;
}
