/* compiler/cmd_inspect.c — `nxcc inspect FILE.neff [--disasm]`. */
#include "compiler/cli.h"
#include "runtime-stub/rt.h"

#include <stdlib.h>
#include <string.h>

static void help(void)
{
	printf("usage: nxcc inspect FILE.neff [--disasm]\n\n"
	       "Validates a .neff and prints its header, sections, tensors and the number\n"
	       "of instructions per engine; --disasm adds one line per instruction.\n");
}

static void tensor(const char *kind, const nx_rt_tensor *t)
{
	printf("  %-8s %-24s %s[", kind, t->name, nx_dtype_names[t->dtype]);
	for (int i = 0; i < t->rank; i++)
		printf("%s%lld", i ? "," : "", (long long)t->dims[i]);
	printf("] hbm+%lld (%lld bytes)", (long long)t->hbm_offset, (long long)t->bytes);
	if (t->alias_input >= 0)
		printf(" aliases input %d", t->alias_input);
	printf("\n");
}

int nx_cmd_inspect(int argc, char **argv)
{
	const char *file = NULL;
	bool disasm = false;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			help();
			return 0;
		}
		if (strcmp(argv[i], "--disasm") == 0)
			disasm = true;
		else if (argv[i][0] == '-' && argv[i][1])
			return nx_cli_usage_error("inspect", "unknown flag '%s'", argv[i]);
		else if (file)
			return nx_cli_usage_error("inspect", "more than one input file");
		else
			file = argv[i];
	}
	if (!file)
		return nx_cli_usage_error("inspect", "no input file (see nxcc inspect --help)");
	nx_diag d = {0};
	nx_neff *n = nx_rt_load(file, NULL, &d);
	if (!n) {
		int rc = nx_cli_report(&d);
		nx_diag_clear(&d);
		return rc;
	}
	char sha[65], uuid[37];
	for (int i = 0; i < 32; i++)
		snprintf(sha + 2 * i, 3, "%02x", n->sha256[i]);
	int k = 0;
	for (int i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			uuid[k++] = '-';
		k += snprintf(uuid + k, 3, "%02x", n->uuid[i]);
	}
	printf("file:      %s\nformat:    %u\ncompiler:  %s\ntarget:    %s (%s)\nmodule:    %s\n"
	       "uuid:      %s\nsha256:    %s\ncores:     %u\nfeatures:  0x%x\n",
	       file, n->version, n->compiler, n->target, n->tgt->core, n->module, uuid, sha, n->n_cores,
	       n->features);
	printf("hbm:       %lld bytes (scratch %lld at %lld)\nsemaphores: %d\n", (long long)n->hbm_size,
	       (long long)n->scratch_size, (long long)n->scratch_offset, n->nsems);
	printf("sections:\n");
	for (int i = 0; i < n->nsections; i++)
		printf("  %-24s %zu bytes\n", n->section_names[i], n->section_sizes[i]);
	printf("tensors:\n");
	for (int i = 0; i < n->ninputs; i++)
		tensor("input", &n->inputs[i]);
	for (int i = 0; i < n->noutputs; i++)
		tensor("output", &n->outputs[i]);
	for (int i = 0; i < n->nconsts; i++)
		tensor("constant", &n->consts[i]);
	printf("engines:\n");
	for (int e = 0; e < NX_ENG_COUNT; e++)
		printf("  %-5s %zu instructions\n", nx_engine_names[e], n->nstream[e]);
	if (disasm)
		for (int e = 0; e < NX_ENG_COUNT; e++) {
			if (!n->nstream[e])
				continue;
			printf("\n%s:\n", nx_engine_names[e]);
			char *s = nx_isa_disasm_stream(n->stream[e], n->nstream[e]);
			fputs(s, stdout);
			free(s);
		}
	nx_neff_free(n);
	return 0;
}
