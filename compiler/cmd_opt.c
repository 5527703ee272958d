/* compiler/cmd_opt.c — `nxcc opt FILE [-O1|-O2|-O3] ... -o OUT.hlo`: runs the
 * pass pipeline and writes the optimized module as HLO text. */
#include "compiler/cli.h"
#include "compiler/compile_cached.h"
#include "passes/pass.h"

#include <stdlib.h>
#include <string.h>

static void help(void)
{
	printf("usage: nxcc opt FILE [-O1|-O2|-O3] [--passes=a,b,...] [-o OUT.hlo]\n"
	       "       [--auto-cast none|matmult|all] [--auto-cast-type bf16|fp16|tf32|fp8_e4m3|fp8_e5m2]\n"
	       "       [--model-type generic|transformer|unet-inference] [--param-dtype bf16|fp16]\n"
	       "       [--time-passes] [--verify-each] [--dump-after=NAME|all] [--dump-dir=DIR]\n"
	       "       [--dump-format=hlo|dot|html]  (dot/html: the graph with fusion clusters, docs/looking.md)\n"
	       "       [--disable-pass=NAME ...] [--verbose LEVEL] [--list-passes] [--check-changed]\n\n"
	       "Runs the optimization pipeline of the chosen level (default -O2), or exactly the\n"
	       "passes named by --passes, and writes the module as HLO text (stdout by default).\n"
	       "The entry parameters keep their number and order. The flags it shares with\n"
	       "nxcc compile are parsed the same way (every spelling; compiler/flags.c);\n"
	       "flags that only matter to the backend (--target, ...) are accepted and unused.\n"
	       "NEURON_CC_FLAGS is not read.\n");
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

nx_status nx_parse_param_dtype(const char *v, nx_pass_ctx *ctx, nx_diag *d)
{
	if (!v || !strcmp(v, "f32") || !strcmp(v, "fp32"))
		ctx->param_type = NX_TYPE_INVALID;
	else if (!strcmp(v, "bf16"))
		ctx->param_type = NX_BF16;
	else if (!strcmp(v, "fp16") || !strcmp(v, "f16"))
		ctx->param_type = NX_F16;
	else
		return nx_diag_set(d, NX_ERR_INPUT, NULL, 0, 0, "--param-dtype must be bf16, fp16 or f32, not '%s'", v);
	return NX_OK;
}

int nx_cmd_opt(int argc, char **argv)
{
	/* opt's own flags come out first; the rest are nxcc compile's, parsed by
	 * compiler/flags.c (without NEURON_CC_FLAGS: opt is a developer tool
	 * whose output should depend on its command line only) */
	const char *passes = NULL, *param_dtype = NULL, *v;
	bool check_changed = false;
	char **rest = calloc((size_t)argc + 1, sizeof(char *));
	if (!rest)
		abort();
	int nrest = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		int r;
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			help();
			free(rest);
			return 0;
		} else if (!strcmp(a, "--list-passes")) {
			for (int k = 0; k < nx_pass_count(); k++) {
				const nx_pass_info *p = nx_pass_get(k);
				char lv[16];
				if (p->max_level >= NX_OPT_MAX)
					snprintf(lv, sizeof lv, "O%d", p->min_level);
				else
					snprintf(lv, sizeof lv, "O%d-%d", p->min_level, p->max_level);
				printf("%-20s %-5s %-10s %s\n", p->name, lv, p->group ? p->group : "-", p->summary);
			}
			free(rest);
			return 0;
		} else if ((r = nx_cli_flag(argc, argv, &i, "--passes", &v)) != 0) {
			if (r < 0) {
				free(rest);
				return NX_EXIT_USER;
			}
			passes = v;
		} else if ((r = nx_cli_flag(argc, argv, &i, "--param-dtype", &v)) != 0) {
			if (r < 0) {
				free(rest);
				return NX_EXIT_USER;
			}
			param_dtype = v;
		} else if (!strcmp(a, "--check-changed")) {
			check_changed = true;
		} else {
			rest[nrest++] = argv[i];
		}
	}
	nx_compile_flags f;
	nx_diag d = {0};
	int rc = 0;
	nx_module *m = NULL;
	if (nx_flags_parse(nrest, rest, NULL, &f, &d) != NX_OK) {
		free(rest);
		rc = nx_cli_report(&d);
		nx_diag_clear(&d);
		nx_flags_free(&f);
		return rc;
	}
	free(rest);
	if (f.n_inputs != 1) {
		rc = f.n_inputs ? nx_cli_usage_error("opt", "more than one input file")
		                : nx_cli_usage_error("opt", "no input file (see nxcc opt --help)");
		nx_flags_free(&f);
		return rc;
	}
	for (int k = 0; k < f.n_disable_pass; k++)
		if (!nx_pass_find(f.disable_pass[k])) {
			rc = nx_cli_usage_error("opt", "unknown pass '%s' (see --list-passes)", f.disable_pass[k]);
			nx_flags_free(&f);
			return rc;
		}
	const char *file = f.inputs[0], *out = f.output ? f.output : "-";
	nx_compile_opts o;
	nx_pass_opts po;
	nx_compile_opts_from_flags(&f, &o, &po, NULL);
	po.check_changed = check_changed;
	nx_pass_ctx ctx = {.opt_level = f.optlevel, .autocast_type = NX_BF16, .fold_max_elems = 1 << 16};
	ctx.model_type = f.model_type;
	ctx.no_mixed_accumulation = !f.mixed_precision_accumulation;
	ctx.verbose = f.verbose == NX_LOG_DEBUG ? 2 : f.verbose == NX_LOG_INFO ? 1 : 0;
	ctx.diag = &d;
	if (nx_parse_autocast(o.auto_cast, o.auto_cast_type, &ctx, &d) != NX_OK ||
	    nx_parse_param_dtype(param_dtype, &ctx, &d) != NX_OK)
		goto fail;
	m = nx_cli_read_verified(file, &d);
	if (!m)
		goto fail;
	nx_status st;
	if (passes) {
		const char *names[64];
		char *list = nx_xstrdup(passes);
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
	nx_flags_free(&f);
	return 0;
fail:
	nx_diag_explain(&d, m);
	rc = nx_cli_report(&d);
	nx_diag_clear(&d);
	nx_module_free(m);
	nx_flags_free(&f);
	return rc;
}
