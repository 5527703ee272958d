/* compiler/mode_npc.c — nxcc as `neuron_parallel_compile` (in progress). */
#include "compiler/cli.h"
int nx_npc_main(int argc, char **argv)
{
	(void)argc;
	fprintf(stderr, "%s: error: not available in this build yet\n", argv[0]);
	return NX_EXIT_USER;
}
