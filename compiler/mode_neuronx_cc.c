/* compiler/mode_neuronx_cc.c — nxcc installed as `neuronx-cc` (a symlink;
 * argv[0] decides, compiler/main.c): the command line of the Neuron
 * compiler that framework wrappers (torch-neuronx, libneuronxla) run.
 *
 *     neuronx-cc [GLOBAL OPTIONS] compile FILE --framework XLA --target T ...
 *     neuronx-cc [GLOBAL OPTIONS] list-operators --framework XLA
 *
 * Global options before the subcommand (the older wrapper form
 * `neuronx-cc --target=trn1 compile ...`, `--verbose info`) apply to it, with
 * the subcommand's own flags winning. compile follows the wrapper's
 * conventions (docs/cli.md "neuronx-cc mode"): log-neuron-cc.txt unless
 * --logfile, no nxcc cache unless --cache-dir on the command line, the
 * status line "Compiler status PASS|ERROR" last, errors with their NXCC_E
 * code, exit 0/1/70. */
#include "compiler/cli.h"
#include "compiler/compile_cached.h"
#include "compiler/errors.h"
#include "nx_build_id.h"

#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
	fprintf(f, "usage: neuronx-cc [--verbose LEVEL] [COMPILE FLAGS] <command> [parameters]\n\n"
	           "commands:\n"
	           "  compile          compile an XLA HLO module (hlo.pb or HLO text) to a .neff\n"
	           "  list-operators   list the supported XLA operators\n\n"
	           "This is nxcc (%s) running as neuronx-cc: see `neuronx-cc compile --help`.\n",
	           NX_VERSION);
}

int nx_neuronx_cc_main(int argc, char **argv)
{
	/* the words before the subcommand are global options */
	int sub = 1;
	while (sub < argc && argv[sub][0] == '-') {
		if (!strcmp(argv[sub], "--help") || !strcmp(argv[sub], "-h")) {
			usage(stdout);
			return 0;
		}
		if (!strcmp(argv[sub], "--version") || !strcmp(argv[sub], "-V")) {
			printf("NeuronX Compiler version %s (nxcc %s, build %s)\n", NX_VERSION, NX_VERSION, NX_BUILD_ID);
			return 0;
		}
		/* a global option's value is the next word unless attached with '=' */
		bool takes_value = !strchr(argv[sub], '=') && sub + 1 < argc && argv[sub + 1][0] != '-' &&
		                   strcmp(argv[sub + 1], "compile") != 0 && strcmp(argv[sub + 1], "list-operators") != 0;
		sub += takes_value ? 2 : 1;
	}
	if (sub >= argc) {
		usage(stderr);
		fprintf(stderr, "neuronx-cc: error: " NX_E_ARG_INPUTS ": no command (compile or list-operators)\n");
		printf("Compiler status ERROR\n");
		return NX_EXIT_USER;
	}
	const char *cmd = argv[sub];
	if (strcmp(cmd, "compile") != 0 && strcmp(cmd, "list-operators") != 0) {
		fprintf(stderr, "neuronx-cc: error: " NX_E_ARG_UNKNOWN ": unknown command '%s' (compile or list-operators)\n",
		        cmd);
		printf("Compiler status ERROR\n");
		return NX_EXIT_USER;
	}
	/* subcommand, then the global options, then its own flags (which win) */
	char **v = calloc((size_t)argc + 1, sizeof(char *));
	if (!v)
		abort();
	int n = 0;
	v[n++] = (char *)cmd;
	bool list = !strcmp(cmd, "list-operators");
	for (int i = 1; i < sub; i++) {
		/* list-operators takes only --framework of the global options */
		bool fw = !strncmp(argv[i], "--framework", 11);
		if (!list || fw)
			v[n++] = argv[i];
		if (list && fw && !strchr(argv[i], '=') && i + 1 < sub)
			v[n++] = argv[++i];
	}
	for (int i = sub + 1; i < argc; i++)
		v[n++] = argv[i];
	int rc = list ? nx_cmd_list_operators(n, v) : nx_compile_main(n, v, true);
	free(v);
	return rc;
}
