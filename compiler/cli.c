/* compiler/cli.c — flag matching, diagnostics output, file I/O. */
#include "compiler/cli.h"

#include "ir/file_atomic.h"
#include "passes/pass.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int nx_cli_flag(int argc, char **argv, int *i, const char *flag, const char **val)
{
	const char *a = argv[*i];
	size_t n = strlen(flag);
	if (strncmp(a, flag, n) != 0)
		return 0;
	if (a[n] == '=') {
		*val = a + n + 1;
		return 1;
	}
	if (a[n] != 0)
		return 0;
	if (*i + 1 >= argc) {
		fprintf(stderr, "nxcc: error: %s needs a value\n", flag);
		return -1;
	}
	*val = argv[++*i];
	return 1;
}

int nx_cli_report(const nx_diag *d)
{
	char *s = nx_diag_format(d);
	fputs(s, stderr);
	free(s);
	return d->status == NX_ERR_INTERNAL ? NX_EXIT_ICE : NX_EXIT_USER;
}

int nx_cli_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "nxcc %s: error: ", cmd);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	return NX_EXIT_USER;
}

char *nx_cli_read_file(const char *path, size_t *len, nx_diag *d)
{
	return nx_read_whole_file(path, len, d);
}

nx_status nx_cli_write_file(const char *path, const void *data, size_t len, nx_diag *d)
{
	return nx_write_file_atomic(path, data, len, true, d);
}

nx_status nx_cli_write_file_nosync(const char *path, const void *data, size_t len, nx_diag *d)
{
	return nx_write_file_atomic(path, data, len, false, d);
}

bool nx_cli_parse_input(const char *v, nx_cli_input *in)
{
	const char *eq = strchr(v, '=');
	if (!eq)
		return false;
	*in = (nx_cli_input){.arg = v, .rank = -1, .file = eq + 1};
	const char *colon = strchr(v, ':');
	const char *key = v;
	if (v[0] == 'r' && v[1] >= '0' && v[1] <= '9' && colon && colon < eq) {
		in->rank = atoi(v + 1);
		key = colon + 1;
	}
	in->key = nx_xasprintf("%.*s", (int)(eq - key), key);
	return true;
}

void nx_cli_inputs_free(nx_cli_input *in, int n)
{
	for (int k = 0; k < n; k++)
		free(in[k].key);
	free(in);
}

void nx_cli_warn_elided(const nx_module *m)
{
	if (m && m->nelided)
		fprintf(stderr,
		        "nxcc: warning: %s: %d constant%s elided in the dump (constant({...})) and filled with nxcc's deterministic stand-in values (docs/ir.md \"Elided constants\"): numbers computed from this module are not the model's; dump with --xla_dump_large_constants to keep them\n",
		        m->file ? m->file : "<input>", m->nelided, m->nelided == 1 ? " was" : "s were");
}

nx_module *nx_cli_read_verified(const char *path, nx_diag *d)
{
	nx_module *m = nx_read_file(path, d);
	nx_cli_warn_elided(m);
	if (m && nx_verify_module(m, d) != NX_OK) {
		nx_module_free(m);
		return NULL;
	}
	return m;
}

bool nx_cli_flatten_params(nx_module *m, nx_diag *d)
{
	bool tuple = false, changed = false;
	for (int k = 0; m && m->entry && k < m->entry->nparams; k++)
		tuple = tuple || (m->entry->params[k] && nx_shape_is_tuple(m->entry->params[k]->shape));
	if (!tuple)
		return false;
	nx_pass_ctx ctx = {.opt_level = 1, .diag = d};
	return nx_pass_flatten_params(m, &ctx, &changed) == NX_OK && changed;
}
