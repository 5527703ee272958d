/* compiler/driver.c — read -> verify -> passes (-O level) -> lower -> .neff. */
#include "compiler/driver.h"

#include "compiler/cli.h"
#include "ir/npy.h"
#include "passes/pass.h"

#include <stddef.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

void nx_compile_opts_init(nx_compile_opts *o)
{
	memset(o, 0, sizeof *o);
	o->target = "trn1";
	o->opt_level = 2;
	o->framework = "XLA";
}

int nx_driver_flag(int argc, char **argv, int *i, nx_compile_opts *o, const char *cmd)
{
	const char *a = argv[*i], *v;
	int r;
	if (!strcmp(a, "-O1") || !strcmp(a, "-O2") || !strcmp(a, "-O3")) {
		o->opt_level = a[2] - '0';
		return 1;
	}
	if ((r = nx_cli_flag(argc, argv, i, "--optlevel", &v)) != 0) {
		if (r < 0)
			return -1;
		if (strlen(v) != 1 || v[0] < '1' || v[0] > '3') {
			nx_cli_usage_error(cmd, "--optlevel must be 1, 2 or 3, not '%s'", v);
			return -1;
		}
		o->opt_level = v[0] - '0';
		return 1;
	}
	static const struct {
		const char *flag;
		size_t off;
	} sv[] = {
		{"--target", offsetof(nx_compile_opts, target)},
		{"--auto-cast-type", offsetof(nx_compile_opts, auto_cast_type)},
		{"--auto-cast", offsetof(nx_compile_opts, auto_cast)},
		{"--model-type", offsetof(nx_compile_opts, model_type)},
		{"--framework", offsetof(nx_compile_opts, framework)},
		{"--output", offsetof(nx_compile_opts, output)},
	};
	for (size_t k = 0; k < sizeof sv / sizeof sv[0]; k++) {
		/* "--auto-cast" is a prefix of "--auto-cast-type": nx_cli_flag wants '=' or the end */
		if ((r = nx_cli_flag(argc, argv, i, sv[k].flag, &v)) != 0) {
			if (r < 0)
				return -1;
			*(const char **)((char *)o + sv[k].off) = v;
			if (!strcmp(sv[k].flag, "--target") && !nx_target_get(v)) {
				nx_cli_usage_error(cmd, "unknown --target '%s' (trn1, trn1n, inf2, trn2)", v);
				return -1;
			}
			if (!strcmp(sv[k].flag, "--framework") && strcmp(v, "XLA") != 0) {
				nx_cli_usage_error(cmd, "--framework '%s' is not supported (XLA)", v);
				return -1;
			}
			return 1;
		}
	}
	return 0;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

nx_status nx_driver_compile(const char *path, const nx_compile_opts *o, bool keep_module,
                            nx_compile_result *r, nx_diag *d)
{
	memset(r, 0, sizeof *r);
	double t0 = now();
	const nx_target *t = nx_target_get(o->target ? o->target : "trn1");
	if (!t)
		return nx_diag_set(d, NX_ERR_INPUT, NULL, 0, 0, "unknown target '%s'", o->target);
	nx_pass_ctx ctx = {.opt_level = o->opt_level, .autocast_type = NX_BF16, .fold_max_elems = 1 << 16};
	ctx.diag = d;
	if (o->model_type) {
		if (!strcmp(o->model_type, "transformer"))
			ctx.model_type = NX_MODEL_TRANSFORMER;
		else if (!strcmp(o->model_type, "unet-inference"))
			ctx.model_type = NX_MODEL_UNET_INFERENCE;
		else if (strcmp(o->model_type, "generic") != 0)
			return nx_diag_set(d, NX_ERR_INPUT, NULL, 0, 0, "unknown --model-type '%s'", o->model_type);
	}
	if (nx_parse_autocast(o->auto_cast, o->auto_cast_type, &ctx, d) != NX_OK)
		return d->status;
	nx_module *m = nx_read_file(path, d);
	if (!m)
		return d->status;
	if (o->replicas > 0)
		m->replica_count = o->replicas;
	nx_status st = nx_verify_module(m, d);
	/* Random-input domains come from the module as written, before passes. */
	bool *nonneg = calloc((size_t)(m->entry ? m->entry->nparams : 0) + 1, sizeof(bool));
	if (st == NX_OK && m->entry) {
		nx_random_domain *dom = calloc((size_t)m->entry->nparams + 1, sizeof *dom);
		nx_random_domains(m->entry, dom);
		for (int k = 0; k < m->entry->nparams; k++)
			nonneg[k] = dom[k] == NX_RANDOM_NONNEG;
		free(dom);
	}
	nx_pass_opts po = {0};
	if (st == NX_OK)
		st = nx_pass_run_pipeline(m, &ctx, &po);
	if (st == NX_OK)
		st = nx_verify_module(m, d);
	if (st == NX_OK)
		st = nx_lower_module(m, t, nonneg, &r->neff, &r->len, &r->st, d);
	free(nonneg);
	r->seconds = now() - t0;
	if (keep_module && st == NX_OK)
		r->module = m;
	else
		nx_module_free(m);
	return st;
}
