/* compiler/cmd_print.c — `nxcc print FILE [--format text|proto] [-o OUT]`. */
#include "compiler/cli.h"

#include <stdlib.h>
#include <string.h>

static void help(void)
{
	printf("usage: nxcc print FILE [--format text|proto] [-o OUT]\n\n"
	       "Reads an HLO module (text or HloModuleProto, detected from the content)\n"
	       "and writes it as HLO text (default) or as a binary HloModuleProto.\n"
	       "OUT defaults to standard output. The output file appears only complete.\n");
}

int nx_cmd_print(int argc, char **argv)
{
	const char *file = NULL, *out = "-", *format = "text", *v;
	for (int i = 1; i < argc; i++) {
		int r;
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			help();
			return 0;
		}
		if ((r = nx_cli_flag(argc, argv, &i, "--format", &v)) != 0) {
			if (r < 0)
				return NX_EXIT_USER;
			format = v;
		} else if ((r = nx_cli_flag(argc, argv, &i, "-o", &v)) != 0 ||
		           (r = nx_cli_flag(argc, argv, &i, "--output", &v)) != 0) {
			if (r < 0)
				return NX_EXIT_USER;
			out = v;
		} else if (argv[i][0] == '-' && argv[i][1]) {
			return nx_cli_usage_error("print", "unknown flag '%s'", argv[i]);
		} else if (file) {
			return nx_cli_usage_error("print", "more than one input file");
		} else {
			file = argv[i];
		}
	}
	if (!file)
		return nx_cli_usage_error("print", "no input file (see nxcc print --help)");
	if (strcmp(format, "text") != 0 && strcmp(format, "proto") != 0)
		return nx_cli_usage_error("print", "--format must be text or proto, not '%s'", format);
	nx_diag d = {0};
	nx_module *m = nx_cli_read_verified(file, &d);
	if (!m) {
		int rc = nx_cli_report(&d);
		nx_diag_clear(&d);
		return rc;
	}
	void *data;
	size_t len = 0;
	if (strcmp(format, "text") == 0) {
		data = nx_print_module(m, NULL);
		len = strlen(data);
	} else {
		data = nx_write_proto(m, &len, &d);
	}
	int rc = 0;
	if (!data || nx_cli_write_file(out, data, len, &d) != NX_OK)
		rc = nx_cli_report(&d);
	free(data);
	nx_diag_clear(&d);
	nx_module_free(m);
	return rc;
}
