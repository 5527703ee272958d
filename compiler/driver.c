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

static double clock_s(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double now(void)
{
	return clock_s(CLOCK_MONOTONIC);
}

/* The pass cost model (O3 fusion priority) from the target table, in
 * nanoseconds: an instruction as its own kernel costs its TensorE time (dots:
 * 2·M·N·K flops at the engine's rate for the operand type) or its VectorE time
 * (one element per partition per cycle, at least the minimum initiation
 * interval); moving bytes costs bytes over the core's HBM bandwidth. */
static int64_t leaf_count(const nx_shape *s)
{
	if (s->type != NX_TUPLE)
		return 1;
	int64_t n = 0;
	for (int k = 0; k < s->ntuple; k++)
		n += leaf_count(s->tuple[k]);
	return n;
}

static double cost_inst_ns(void *user, const nx_inst *i)
{
	const nx_target *t = user;
	int64_t elems = nx_shape_is_array(i->shape) ? nx_shape_elems(i->shape) : 0;
	if (i->op == NX_OP_DOT && i->noperands == 2 && nx_shape_is_array(i->operands[0]->shape)) {
		int64_t k = 1;
		for (int j = 0; j < i->a.dot.lhs_contracting.n; j++)
			k *= i->operands[0]->shape->dims[i->a.dot.lhs_contracting.v[j]];
		nx_type ty = i->operands[0]->shape->type;
		double tflops = ty == NX_F32 || ty == NX_F64 ? t->pe_tflops_fp32
		              : nx_type_bits(ty) == 8 ? t->pe_tflops_fp8 : t->pe_tflops_bf16;
		return 2.0 * (double)elems * (double)k / (tflops * 1e3);
	}
	double per_part = (double)elems / t->partitions;
	double cycles = per_part > t->min_ii[NX_ENG_DVE] ? per_part : t->min_ii[NX_ENG_DVE];
	return cycles / t->freq_ghz[NX_ENG_DVE];
}

static double cost_hbm_ns(void *user, int64_t bytes)
{
	const nx_target *t = user;
	return (double)bytes / t->hbm_gbps;
}

nx_status nx_driver_compile(const char *path, const nx_compile_opts *o, bool keep_module,
                            nx_compile_result *r, nx_diag *d)
{
	memset(r, 0, sizeof *r);
	double t0 = now(), c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
	const nx_target *tg = nx_target_get(o->target ? o->target : "trn1");
	if (!tg)
		return nx_diag_set(d, NX_ERR_INPUT, NULL, 0, 0, "unknown target '%s'", o->target);
	nx_pass_ctx ctx = {.opt_level = o->opt_level, .autocast_type = NX_BF16, .fold_max_elems = 1 << 16};
	ctx.diag = d;
	ctx.no_mixed_accumulation = o->no_mixed_accumulation;
	nx_cost_model cost = {(void *)tg, cost_inst_ns, cost_hbm_ns};
	ctx.cost = &cost;
	ctx.verbose = o->pass_verbose;
	ctx.log = o->pass_log;
	if (o->model_type) {
		if (!strcmp(o->model_type, "transformer"))
			ctx.model_type = NX_MODEL_TRANSFORMER;
		else if (!strcmp(o->model_type, "unet-inference"))
			ctx.model_type = NX_MODEL_UNET_INFERENCE;
		else if (strcmp(o->model_type, "generic") != 0)
			return nx_diag_set(d, NX_ERR_INPUT, NULL, 0, 0, "unknown --model-type '%s'", o->model_type);
	}
	if (nx_parse_autocast(o->auto_cast, o->auto_cast_type, &ctx, d) != NX_OK ||
	    nx_parse_param_dtype(o->param_dtype, &ctx, d) != NX_OK)
		return d->status;
	double t = now();
	nx_module *m = nx_read_file(path, d);
	r->t_read = now() - t;
	if (!m)
		return d->status;
	r->nelided = m->nelided;
	if (o->replicas > 0)
		m->replica_count = o->replicas;
	t = now();
	nx_status st = nx_verify_module(m, d);
	r->t_verify = now() - t;
	/* Random-input domains come from the module as written, before passes,
	 * one per .neff input: a tuple parameter's leaves (flatten-params) share
	 * its domain. */
	bool *nonneg = NULL;
	if (st == NX_OK && m->entry) {
		int64_t nl = 0;
		for (int k = 0; k < m->entry->nparams; k++)
			nl += leaf_count(m->entry->params[k]->shape);
		nonneg = calloc((size_t)nl + 1, sizeof(bool));
		nx_random_domain *dom = calloc((size_t)m->entry->nparams + 1, sizeof *dom);
		nx_random_domains(m->entry, dom);
		for (int k = 0, f = 0; k < m->entry->nparams; k++)
			for (int64_t j = leaf_count(m->entry->params[k]->shape); j > 0; j--)
				nonneg[f++] = dom[k] == NX_RANDOM_NONNEG;
		free(dom);
	}
	nx_pass_opts po = {0};
	t = now();
	if (st == NX_OK)
		st = nx_pass_run_pipeline(m, &ctx, o->passes ? o->passes : &po);
	r->t_passes = now() - t;
	t = now();
	if (st == NX_OK)
		st = nx_verify_module(m, d);
	r->t_verify += now() - t;
	t = now();
	r->st.dump = o->dump_lower;
	r->st.opt_level = o->opt_level;
	if (st == NX_OK)
		st = nx_check_device_types(m, d);
	if (st == NX_OK)
		st = nx_lower_module(m, tg, nonneg, &r->neff, &r->len, &r->st, d);
	r->t_lower = now() - t;
	nx_diag_explain(d, m); /* a refusal names the user's source */
	free(nonneg);
	r->seconds = now() - t0;
	r->cpu_seconds = clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
	if (keep_module && st == NX_OK)
		r->module = m;
	else
		nx_module_free(m);
	return st;
}
