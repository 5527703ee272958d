/* compiler/cmd_list_operators.c — `nxcc list-operators --framework XLA`. */
#include "compiler/cli.h"

#include "backend/backend.h"

#include <string.h>

int nx_cmd_list_operators(int argc, char **argv)
{
	const char *v;
	for (int i = 1; i < argc; i++) {
		int r;
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			printf("usage: nxcc list-operators --framework XLA\n\n"
			       "Prints the HLO ops the backend lowers, then the custom-call targets.\n");
			return 0;
		}
		if ((r = nx_cli_flag(argc, argv, &i, "--framework", &v)) != 0) {
			if (r < 0)
				return NX_EXIT_USER;
			if (strcmp(v, "XLA") != 0)
				return nx_cli_usage_error("list-operators", "--framework '%s' is not supported (XLA)", v);
			continue;
		}
		return nx_cli_usage_error("list-operators", "unknown argument '%s'", argv[i]);
	}
	for (int op = 0; op < NX_OP_COUNT; op++)
		if (nx_lower_supports((nx_opcode)op))
			printf("%s\n", nx_opcode_name((nx_opcode)op));
	for (int k = 0; nx_lower_custom_calls[k]; k++)
		printf("custom-call:%s\n", nx_lower_custom_calls[k]);
	return 0;
}
