/* compiler/cmd_opt.c — `nxcc opt FILE [-O1|-O2|-O3] ... -o OUT.hlo`: runs the
 * pass pipeline and writes the optimized module as HLO text. */
#include "compiler/cli.h"
#include "passes/pass.h"

#include <stdlib.h>
#include <string.h>

static void help(void)
{
	printf("usage: nxcc opt FILE [-O1|-O2|-O3] [--passes=a,b,...] [-o OUT.hlo]\n"
	       "       [--auto-cast none|matmult|all] [--auto-cast-type bf16|fp16|tf32|fp8_e4m3|fp8_e5m2]\n"
	       "       [--model-type generic|transformer|unet-inference]\n"
	       "       [--time-passes] [--verify-each] [--dump-after=NAME|all] [--dump-dir=DIR]\n"
	       "       [--disable-pass=NAME ...] [--verbose 0|1|2|info|debug] [--list-passes]\n\n"
	       "Runs the optimization pipeline of the chosen level (default -O2), or exactly the\n"
	       "passes named by --passes, and writes the module as HLO text (stdout by default).\n"
	       "The entry parameters keep their number and order.\n");
}

static int parse_verbose(const char *v)
{
	if (!strcmp(v, "debug") || !strcmp(v, "2") || !strcmp(v, "all"))
		return 2;
	if (!strcmp(v, "info") || !strcmp(v, "1"))
		return 1;
	return 0;
}

nx_status nx_parse_autocast(const char *mode, const char *type, nx_pass_ctx *ctx, nx_diag *d)
{
	if (mode) {
		if (!strcmp(mode, "none"))
			ctx->autocast = NX_AUTOCAST_NONE;
		else if (!strcmp(mode, "matmult"))
			ctx->autocast = NX_AUTOCAST_MATMULT;
		else if (!strcmp(mode, "all"))
			ctx->autocast = NX_AUTOCAST_ALL;
		else
			return nx_diag_set(d, NX_ERR_INPUT, NULL, 0, 0,
			                   "--auto-cast must be none, matmult or all, not '%s'", mode);
	}
	if (type) {
		ctx->autocast_tf32 = false;
		if (!strcmp(type, "bf16"))
			ctx->autocast_type = NX_BF16;
		else if (!strcmp(type, "fp16"))
			ctx->autocast_type = NX_F16;
		else if (!strcmp(type, "tf32")) {
			ctx->autocast_type = NX_F32;
			ctx->autocast_tf32 = true;
		} else if (!strcmp(type, "fp8_e4m3"))
			ctx->autocast_type = NX_F8E4M3FN;
		else if (!strcmp(type, "fp8_e5m2"))
			ctx->autocast_type = NX_F8E5M2;
		else
			return nx_diag_set(d, NX_ERR_INPUT, NULL, 0, 0,
			                   "--auto-cast-type must be bf16, fp16, tf32, fp8_e4m3 or fp8_e5m2, not '%s'",
			                   type);
	}
	return NX_OK;
}

int nx_cmd_opt(int argc, char **argv)
{
	const char *file = NULL, *out = "-", *v, *passes = NULL, *ac = NULL, *act = NULL;
	nx_pass_ctx ctx = {.opt_level = 2, .autocast_type = NX_BF16, .fold_max_elems = 1 << 16};
	nx_pass_opts po = {0};
	const char *disabled[64];
	nx_diag d = {0};
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		int r = 0;
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			help();
			return 0;
		} else if (!strcmp(a, "--list-passes")) {
			for (int k = 0; k < nx_pass_count(); k++) {
				const nx_pass_info *p = nx_pass_get(k);
				printf("%-20s O%d  %-10s %s\n", p->name, p->min_level, p->group ? p->group : "-",
				       p->summary);
			}
			return 0;
		} else if (!strcmp(a, "-O1") || !strcmp(a, "-O2") || !strcmp(a, "-O3")) {
			ctx.opt_level = a[2] - '0';
		} else if ((r = nx_cli_flag(argc, argv, &i, "--passes", &v)) > 0) {
			passes = v;
		} else if (r == 0 && (r = nx_cli_flag(argc, argv, &i, "-o", &v)) > 0) {
			out = v;
		} else if (r == 0 && (r = nx_cli_flag(argc, argv, &i, "--output", &v)) > 0) {
			out = v;
		} else if (r == 0 && (r = nx_cli_flag(argc, argv, &i, "--auto-cast-type", &v)) > 0) {
			act = v;
		} else if (r == 0 && (r = nx_cli_flag(argc, argv, &i, "--auto-cast", &v)) > 0) {
			ac = v;
		} else if (r == 0 && (r = nx_cli_flag(argc, argv, &i, "--model-type", &v)) > 0) {
			if (!strcmp(v, "transformer"))
				ctx.model_type = NX_MODEL_TRANSFORMER;
			else if (!strcmp(v, "unet-inference"))
				ctx.model_type = NX_MODEL_UNET_INFERENCE;
			else if (!strcmp(v, "generic"))
				ctx.model_type = NX_MODEL_GENERIC;
			else
				return nx_cli_usage_error("opt", "unknown --model-type '%s'", v);
		} else if (r == 0 && (r = nx_cli_flag(argc, argv, &i, "--dump-after", &v)) > 0) {
			po.dump_after = v;
		} else if (r == 0 && (r = nx_cli_flag(argc, argv, &i, "--dump-dir", &v)) > 0) {
			po.dump_dir = v;
		} else if (r == 0 && (r = nx_cli_flag(argc, argv, &i, "--disable-pass", &v)) > 0) {
			if (!nx_pass_find(v))
				return nx_cli_usage_error("opt", "unknown pass '%s' (see --list-passes)", v);
			if (po.ndisabled < 64)
				disabled[po.ndisabled++] = v;
		} else if (r == 0 && (r = nx_cli_flag(argc, argv, &i, "--verbose", &v)) > 0) {
			ctx.verbose = parse_verbose(v);
		} else if (r == 0 && !strcmp(a, "--time-passes")) {
			po.time_passes = true;
		} else if (r == 0 && !strcmp(a, "--verify-each")) {
			po.verify_each = true;
		} else if (r == 0 && !strcmp(a, "--check-changed")) {
			po.check_changed = true;
		} else if (r < 0) {
			return NX_EXIT_USER;
		} else if (a[0] == '-' && a[1]) {
			return nx_cli_usage_error("opt", "unknown flag '%s'", a);
		} else if (file) {
			return nx_cli_usage_error("opt", "more than one input file");
		} else {
			file = a;
		}
		if (r < 0)
			return NX_EXIT_USER;
	}
	if (!file)
		return nx_cli_usage_error("opt", "no input file (see nxcc opt --help)");
	po.disabled = disabled;
	ctx.diag = &d;
	int rc = 0;
	nx_module *m = NULL;
	if (nx_parse_autocast(ac, act, &ctx, &d) != NX_OK)
		goto fail;
	m = nx_read_file(file, &d);
	if (!m || nx_verify_module(m, &d) != NX_OK)
		goto fail;
	nx_status st;
	if (passes) {
		const char *names[64];
		char *list = strdup(passes);
		int n = 0;
		for (char *tok = strtok(list, ","); tok && n < 64; tok = strtok(NULL, ","))
			names[n++] = tok;
		st = nx_pass_run_list(m, &ctx, &po, names, n);
		free(list);
	} else {
		st = nx_pass_run_pipeline(m, &ctx, &po);
	}
	if (st != NX_OK)
		goto fail;
	char *text = nx_print_module(m, NULL);
	st = nx_cli_write_file(out, text, strlen(text), &d);
	free(text);
	if (st != NX_OK)
		goto fail;
	nx_module_free(m);
	return 0;
fail:
	rc = nx_cli_report(&d);
	nx_diag_clear(&d);
	nx_module_free(m);
	return rc;
}
