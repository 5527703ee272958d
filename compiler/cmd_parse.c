/* compiler/cmd_parse.c — `nxcc parse FILE`: read, verify, summarize. */
#include "compiler/cli.h"

#include <stdlib.h>
#include <string.h>

static void help(void)
{
	printf("usage: nxcc parse FILE\n\n"
	       "Reads an HLO module (text or HloModuleProto, detected from the content),\n"
	       "verifies it and prints a summary: computations, instructions, the ops used\n"
	       "and the module fingerprint.\n");
}

int nx_cmd_parse(int argc, char **argv)
{
	const char *file = NULL;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			help();
			return 0;
		}
		if (argv[i][0] == '-' && argv[i][1])
			return nx_cli_usage_error("parse", "unknown flag '%s'", argv[i]);
		if (file)
			return nx_cli_usage_error("parse", "more than one input file");
		file = argv[i];
	}
	if (!file)
		return nx_cli_usage_error("parse", "no input file (see nxcc parse --help)");
	nx_diag d = {0};
	nx_module *m = nx_cli_read_verified(file, &d);
	if (!m) {
		int rc = nx_cli_report(&d);
		nx_diag_clear(&d);
		return rc;
	}
	int counts[NX_OP_COUNT] = {0};
	long ninst = 0;
	for (int c = 0; c < m->ncomps; c++)
		for (int i = 0; i < m->comps[c]->ninsts; i++) {
			counts[m->comps[c]->insts[i]->op]++;
			ninst++;
		}
	char fp[33];
	nx_fingerprint(m, fp);
	printf("module: %s\n", m->name);
	printf("computations: %d\n", m->ncomps);
	printf("instructions: %ld\n", ninst);
	printf("entry: %s (%d parameters)\n", m->entry ? m->entry->name : "-",
	       m->entry ? m->entry->nparams : 0);
	printf("ops:");
	for (int op = 0; op < NX_OP_COUNT; op++)
		if (counts[op])
			printf(" %s=%d", nx_opcode_name((nx_opcode)op), counts[op]);
	printf("\nfingerprint: %s\n", fp);
	nx_module_free(m);
	return 0;
}
