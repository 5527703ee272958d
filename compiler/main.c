/* compiler/main.c — the nxcc command: dispatches to a subcommand. */
#include "compiler/cli.h"
#include "compiler/custom_op.h"
#include "nx_build_id.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
} command;

static const command commands[] = {
#define CMD(name, fn, summary) {name, fn, summary},
#include "compiler/commands.def"
#undef CMD
};

static void exit_ice(const char *file, int line, const char *msg)
{
	fprintf(stderr, "nxcc: internal compiler error: %s (%s:%d)\n", file ? msg : msg, file, line);
	fflush(stderr);
	_Exit(NX_EXIT_ICE);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: nxcc COMMAND [ARGS...]\n\n"
	           "nxcc compiles XLA HLO modules for NeuronCore accelerators.\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-18s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\n`nxcc COMMAND --help` describes a command. `nxcc --version` prints the version.\n");
}

int main(int argc, char **argv)
{
	nx_set_ice_handler(exit_ice);
	nx_eval_jit_setup(); /* LLVM is loaded only when a cluster is compiled */
	/* installed under the Neuron tools' names (symlinks), nxcc is them */
	const char *self = strrchr(argv[0], '/');
	self = self ? self + 1 : argv[0];
	if (strcmp(self, "neuronx-cc") == 0)
		return nx_neuronx_cc_main(argc, argv);
	if (strcmp(self, "neuron_parallel_compile") == 0)
		return nx_npc_main(argc, argv);
	if (argc < 2) {
		usage(stderr);
		return NX_EXIT_USER;
	}
	const char *cmd = argv[1];
	if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
		printf("nxcc %s (build %s)\n", NX_VERSION, NX_BUILD_ID);
		return 0;
	}
	if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
		usage(stdout);
		return 0;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(commands[i].name, cmd) == 0)
			return commands[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "nxcc: error: unknown command '%s' (see nxcc --help)\n", cmd);
	return NX_EXIT_USER;
}
