/* compiler/cli.h — helpers shared by the nxcc subcommands. */
#ifndef NX_CLI_H
#define NX_CLI_H

#include "ir/ir.h"

#include <stdio.h>

#define CMD(name, fn, summary) int fn(int argc, char **argv);
#include "compiler/commands.def"
#undef CMD

/* nxcc run as `neuronx-cc` and as `neuron_parallel_compile` (symlinks;
 * compiler/mode_neuronx_cc.c, compiler/mode_npc.c). argv[0] is the program. */
int nx_neuronx_cc_main(int argc, char **argv);
int nx_npc_main(int argc, char **argv);

/* Exit statuses (DESIGN.md section 10). */
enum { NX_EXIT_OK = 0, NX_EXIT_USER = 1, NX_EXIT_ICE = 70 };

/* Matches argv[*i] against flag in both "--flag value" and "--flag=value"
 * forms. On a match sets *val (advancing *i past a separate value) and
 * returns 1; returns -1 (after printing an error) when the value is missing;
 * 0 when argv[*i] is another flag. */
int nx_cli_flag(int argc, char **argv, int *i, const char *flag, const char **val);
/* Prints d to stderr (once) and returns its exit status. */
int nx_cli_report(const nx_diag *d);
/* Prints "nxcc CMD: error: msg" and returns NX_EXIT_USER. */
int nx_cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
struct nx_pass_ctx;
/* --auto-cast / --auto-cast-type values into ctx (compiler/cmd_opt.c). */
nx_status nx_parse_autocast(const char *mode, const char *type, struct nx_pass_ctx *ctx, nx_diag *d);
/* --param-dtype bf16|fp16|f32 into ctx->param_type (NULL: f32, keep). */
nx_status nx_parse_param_dtype(const char *v, struct nx_pass_ctx *ctx, nx_diag *d);
/* Reads an HLO module (text or proto) and verifies it; NULL with *d set
 * when either fails. */
nx_module *nx_cli_read_verified(const char *path, nx_diag *d);
/* When m's entry takes a tuple parameter: flattens it as the compiler does
 * (passes/flatten_params.c), so its parameters are the .neff's inputs, in
 * number, order and name (<param>.<i>...), with the same random data;
 * returns whether it changed. `nxcc eval` and `nxcc train` call this so
 * that --input, --save-inputs and DIR/<name>.npy address leaves. */
bool nx_cli_flatten_params(nx_module *m, nx_diag *d);
/* When m had elided constants ({...}, filled by the reader): a warning on
 * stderr that the numbers of this command are not the model's. */
void nx_cli_warn_elided(const nx_module *m);
/* Reads a whole file (malloc'd, NUL-terminated). NULL with *d set on error. */
char *nx_cli_read_file(const char *path, size_t *len, nx_diag *d);
/* Writes atomically: a temp file in the same directory, fsync, rename. No
 * partial file is ever visible at path. "-" writes to stdout. */
nx_status nx_cli_write_file(const char *path, const void *data, size_t len, nx_diag *d);
/* The same without the fsync: still never partial while the system runs,
 * but not durable across a power loss. For copies of data kept durably
 * elsewhere (a cache hit's .neff), where the fsync was most of the time. */
nx_status nx_cli_write_file_nosync(const char *path, const void *data, size_t len, nx_diag *d);

/* One --input argument of nxcc eval and nxcc run: "KEY=file.npy", or
 * "rI:KEY=file.npy" for rank (replica) I only. */
typedef struct nx_cli_input {
	const char *arg;  /* the whole argument, for messages */
	int rank;         /* the I of rI:, or -1 for every rank */
	char *key;        /* KEY, malloc'd: a name or a number, as the command reads it */
	const char *file; /* points into arg */
} nx_cli_input;
/* Splits v into *in; false (nothing allocated) when v has no '='. */
bool nx_cli_parse_input(const char *v, nx_cli_input *in);
/* Frees the keys of in[0..n) and the array in itself. */
void nx_cli_inputs_free(nx_cli_input *in, int n);

#endif
