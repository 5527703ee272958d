/* compiler/cmd_train.c — `nxcc train`: N training steps on the simulated
 * NeuronCore. Each step's outputs that alias a parameter (input_output_alias)
 * become that parameter's value in the next step; the other parameters (data)
 * come per step from .npy stacks or the random generator. The same loop runs
 * in the reference evaluator as the baseline. Several configurations (compile
 * flags, --param-dtype, rounding) can run side by side; the loss of each step
 * goes to a CSV, a summary and an SVG plot (docs/numerics.md, "Training on
 * the simulator"). */
#include "compiler/cli.h"
#include "compiler/compile_cached.h"
#include "compiler/rundev.h"
#include "compiler/train_plot.h"

#include "ir/eval/eval.h"
#include "ir/npy.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static void help(void)
{
	printf("usage: nxcc train FILE.hlo|FILE.neff [compile flags] --steps N\n"
	       "                  [--data DIR] [--random-inputs SEED] [--loss-output K]\n"
	       "                  [--param-dtype bf16|fp16] [--rounding rne|sr] [--sr-seed S]\n"
	       "                  [--config NAME=FLAGS ...] [--baseline f32|none] [--target-loss X]\n"
	       "                  [--report DIR]\n\n"
	       "Runs N training steps of FILE on the simulated NeuronCore (compiled once,\n"
	       "loaded once). After each step, every output that aliases a parameter\n"
	       "(input_output_alias) is that parameter's value in the next step (weights,\n"
	       "optimizer state). The other parameters are data: DIR/<name>.npy (name: the\n"
	       "parameter's name in the HLO or its .neff input name) holding a stack with a\n"
	       "leading step axis gives step s the slice s mod S; a file with the\n"
	       "parameter's own shape is the same every step (for an aliased parameter: its\n"
	       "initial value). Without a file: the random data of --random-inputs SEED\n"
	       "(default 1, the generator of nxcc eval/run); data parameters get seed SEED+s\n"
	       "in step s. The loss is output K (default: the first scalar float output no\n"
	       "parameter aliases); its mean is recorded per step.\n\n"
	       "--baseline f32 (the default for HLO input) runs the same loop on the module\n"
	       "as written in the reference evaluator. --param-dtype bf16 stores the aliased\n"
	       "f32 parameters and outputs (weights, optimizer state) in bf16 (the\n"
	       "param-dtype pass). --rounding sr simulates stochastic rounding on every\n"
	       "narrowing write (as NEURON_RT_STOCHASTIC_ROUNDING_EN=1, the default when set),\n"
	       "with seed --sr-seed S (default NEURON_RT_STOCHASTIC_ROUNDING_SEED or 0) mixed\n"
	       "with the step number: reproducible, different per step.\n"
	       "--config NAME=FLAGS (repeatable) runs one more configuration: FLAGS are\n"
	       "space-separated compile flags, --param-dtype, --rounding, --sr-seed, added to\n"
	       "the common ones. Without --config one configuration runs.\n\n"
	       "Prints per configuration: the final loss (mean of the last tenth of the\n"
	       "steps, at most 100), its relative difference to the baseline's, the largest\n"
	       "relative difference of one step's loss to the baseline's, the first step where\n"
	       "the mean loss of the last N/20 steps (at most 50) reaches the target loss\n"
	       "(--target-loss; default the baseline's final loss + 10 %%) and the wall time\n"
	       "per step. --report DIR writes DIR/train.csv (step, one loss column per run),\n"
	       "DIR/summary.txt and DIR/loss.svg. Exit 1 when a run's loss is not finite.\n");
}

enum { SRC_RANDOM, SRC_CONST, SRC_STACK };

/* Where parameter k's values come from. */
typedef struct {
	const char *name;   /* HLO parameter name, or the .neff input name */
	bool state;         /* fed back from an aliased output */
	int src;            /* SRC_* */
	nx_literal *lit;    /* SRC_CONST / SRC_STACK: as loaded */
	const char *path;   /* SRC_CONST / SRC_STACK: the file */
	int64_t nstack;     /* SRC_STACK: leading axis */
	nx_shape *shape;    /* one step's shape and type (the module's, else the device's) */
	nx_random_domain dom;
} input_plan;

typedef struct {
	const char *name;
	char **words; /* extra flags */
	int nwords;
	const char *param_dtype;
	int rounding;  /* -1: environment, 0 rne, 1 sr */
	uint64_t sr_seed;
	bool sr_seed_set;
	double *loss;
	int done;      /* steps completed */
	double sim_s, step_s; /* wall time in nx_rt_run, in the whole step */
	double sim_cpu_s;     /* CPU time in nx_rt_run (a loaded machine inflates wall time) */
	bool sr;
} train_config;

typedef struct {
	const char *file;
	bool is_neff;
	int steps;
	const char *data_dir;
	uint64_t seed;
	int loss_output; /* -1: choose */
	bool baseline;
	double target;   /* NaN: default */
	const char *report;
	char **common;   /* compile flags for every configuration (the file included) */
	int ncommon;
} train_args;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double cpu_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* splitmix64: the stochastic-rounding seed of step s. */
static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* l converted to type t (RNE for floats), or l itself when it has t. */
static nx_literal *as_type(nx_arena *a, nx_literal *l, nx_type t)
{
	if (l->shape->type == t)
		return l;
	nx_literal *r = nx_literal_new(a, nx_shape_with_type(a, l->shape, t));
	int64_t n = nx_shape_elems(l->shape);
	bool ints = nx_type_is_int(t) || t == NX_PRED;
	for (int64_t i = 0; i < n; i++) {
		if (ints)
			nx_lit_set_i64(r, i, nx_lit_get_i64(l, i));
		else
			nx_lit_set_f64(r, i, nx_lit_get_f64(l, i));
	}
	return r;
}

/* Parameter k's value in step s (state: its initial value), type of plan. */
static nx_literal *input_value(nx_arena *a, const input_plan *p, int k, int s, uint64_t seed)
{
	if (p->src == SRC_CONST)
		return p->lit;
	if (p->src == SRC_STACK) {
		nx_literal *r = nx_literal_new(a, p->shape);
		int64_t i = s % p->nstack;
		if (r->nbytes)
			memcpy(r->data, (const char *)p->lit->data + i * r->nbytes, (size_t)r->nbytes);
		return r;
	}
	return nx_random_literal_in(a, p->shape, p->state ? seed : seed + (uint64_t)s, k, p->dom);
}

/* Reads DIR/<name>.npy for parameter k when there is one; fills p->src. */
static nx_status plan_file(nx_arena *a, const char *dir, input_plan *p, const char *alt, nx_diag *d)
{
	const char *names[2] = {p->name, alt};
	for (int j = 0; j < 2; j++) {
		if (!names[j] || !*names[j])
			continue;
		char *path = nx_arena_printf(a, "%s/%s.npy", dir, names[j]);
		struct stat sb;
		if (stat(path, &sb) != 0)
			continue;
		nx_type want = p->shape->type == NX_BF16 || nx_type_bits(p->shape->type) == 8 ? p->shape->type
		                                                                             : NX_TYPE_INVALID;
		nx_literal *l = nx_npy_load(a, path, want, d);
		if (!l)
			return d->status;
		l = as_type(a, l, p->shape->type);
		const nx_shape *ls = l->shape, *ps = p->shape;
		bool same = ls->rank == ps->rank, stack = ls->rank == ps->rank + 1 && ls->dims[0] > 0;
		for (int r = 0; r < ps->rank; r++) {
			same = same && ls->dims[r] == ps->dims[r];
			stack = stack && ls->dims[r + 1] == ps->dims[r];
		}
		if (!same && !stack) {
			char want_s[128], got_s[128];
			nx_shape_print(want_s, sizeof want_s, ps, false);
			nx_shape_print(got_s, sizeof got_s, ls, false);
			return nx_diag_set(d, NX_ERR_INPUT, path, 0, 0,
			                   "shape %s is neither the parameter's shape %s nor a stack [S,...] of it", got_s,
			                   want_s);
		}
		p->lit = l;
		p->path = path;
		p->src = same ? SRC_CONST : SRC_STACK;
		p->nstack = stack ? ls->dims[0] : 1;
		if (p->src == SRC_STACK)
			p->state = false; /* per-step data wins over the feedback */
		return NX_OK;
	}
	return NX_OK;
}

/* For each output leaf: the parameter it aliases (top-level entries only), or -1. */
static void module_aliases(const nx_module *m, int nleaves, int *alias)
{
	const nx_inst *root = m->entry->root;
	for (int k = 0; k < nleaves; k++) {
		alias[k] = -1;
		for (int a = 0; a < m->naliases; a++) {
			const nx_alias *al = &m->aliases[a];
			bool match = nx_shape_is_tuple(root->shape) ? al->output_index.n == 1 && al->output_index.v[0] == k
			                                            : al->output_index.n == 0;
			if (match && al->param_index.n == 0 && al->param_number < m->entry->nparams)
				alias[k] = (int)al->param_number;
		}
	}
}

static void leaves(nx_literal *l, nx_literal **out, int *n, int cap)
{
	if (nx_shape_is_tuple(l->shape)) {
		for (int k = 0; k < l->ntuple; k++)
			leaves(l->tuple[k], out, n, cap);
		return;
	}
	if (*n < cap)
		out[*n] = l;
	(*n)++;
}

static double lit_mean(const nx_literal *l)
{
	int64_t n = nx_shape_elems(l->shape);
	double s = 0;
	for (int64_t i = 0; i < n; i++)
		s += nx_lit_get_f64(l, i);
	return n ? s / (double)n : NAN;
}

/* The reference evaluator's loop: the module as written. */
static nx_status run_baseline(const nx_module *m, const input_plan *plan, const train_args *A, int loss_k,
                              double *loss, double *secs, nx_diag *d)
{
	const nx_comp *e = m->entry;
	int np = e->nparams;
	nx_arena keep, step[2];
	nx_arena_init(&keep);
	nx_arena_init(&step[0]);
	nx_arena_init(&step[1]);
	nx_literal **args = nx_arena_alloc(&keep, sizeof *args * (size_t)(np + 1));
	for (int k = 0; k < np; k++)
		if (plan[k].state)
			args[k] = input_value(&keep, &plan[k], k, 0, A->seed);
	int nl = 0;
	nx_literal **lv = NULL;
	int *alias = NULL;
	nx_status rc = NX_OK;
	double t0 = now();
	for (int s = 0; s < A->steps && rc == NX_OK; s++) {
		/* step s's results live in step[s % 2]; the state they feed is read in s + 1 */
		nx_arena *sa = &step[s % 2];
		nx_arena_free(sa);
		nx_arena_init(sa);
		for (int k = 0; k < np; k++)
			if (!plan[k].state)
				args[k] = input_value(sa, &plan[k], k, s, A->seed);
		nx_literal *const *argv_r[1] = {args};
		nx_literal *out = NULL;
		nx_eval_opts eo = {.replicas = 1, .rng_seed = A->seed + (uint64_t)s};
		rc = nx_eval_module(m, &eo, np, argv_r, sa, &out, d);
		if (rc != NX_OK)
			break;
		if (!lv) {
			nl = 0;
			leaves(out, NULL, &nl, 0);
			lv = calloc((size_t)nl + 1, sizeof *lv);
			alias = calloc((size_t)nl + 1, sizeof *alias);
			module_aliases(m, nl, alias);
		}
		int n = 0;
		leaves(out, lv, &n, nl);
		loss[s] = lit_mean(lv[loss_k]);
		for (int j = 0; j < nl; j++)
			if (alias[j] >= 0 && plan[alias[j]].state)
				args[alias[j]] = lv[j];
		if (!isfinite(loss[s])) {
			for (int r = s + 1; r < A->steps; r++)
				loss[r] = NAN;
			break;
		}
	}
	*secs = (now() - t0) / (A->steps ? A->steps : 1);
	free(lv);
	free(alias);
	nx_arena_free(&keep);
	nx_arena_free(&step[0]);
	nx_arena_free(&step[1]);
	return rc;
}

/* The simulator's loop over one loaded .neff. Returns the first error. */
static nx_status run_sim(const nx_neff *n, const input_plan *plan, const train_args *A, int loss_k,
                         train_config *c, nx_diag *d)
{
	nx_status rc = NX_OK;
	void **ib = calloc((size_t)n->ninputs + 1, sizeof *ib), **ob = calloc((size_t)n->noutputs + 1, sizeof *ob);
	for (int k = 0; k < n->ninputs; k++)
		ib[k] = calloc((size_t)n->inputs[k].bytes + 1, 1);
	for (int k = 0; k < n->noutputs; k++)
		ob[k] = calloc((size_t)n->outputs[k].bytes + 1, 1);
	nx_arena sa;
	nx_arena_init(&sa);
	for (int k = 0; k < n->ninputs && rc == NX_OK; k++)
		if (plan[k].state) {
			nx_literal *l = input_value(&sa, &plan[k], k, 0, A->seed);
			rc = nx_rundev_input_bytes(n, k, as_type(&sa, l, nx_rundev_type(n->inputs[k].dtype)), ib[k], d);
		}
	for (int j = 0; j < n->noutputs && rc == NX_OK; j++) {
		int a = n->outputs[j].alias_input;
		if (a >= 0 && plan[a].state &&
		    (n->outputs[j].bytes != n->inputs[a].bytes || n->outputs[j].dtype != n->inputs[a].dtype))
			rc = nx_diag_set(d, NX_ERR_INPUT, A->file, 0, 0, "output %d (%s) aliases input %d (%s) of another type",
			                 j, n->outputs[j].name, a, n->inputs[a].name);
	}
	nx_rt_opts ro = nx_rt_opts_default();
	if (c->rounding >= 0)
		ro.stochastic_rounding = c->rounding == 1;
	if (c->sr_seed_set)
		ro.sr_seed = c->sr_seed;
	c->sr = ro.stochastic_rounding;
	uint64_t base = ro.sr_seed;
	const nx_rt_tensor *lt = &n->outputs[loss_k];
	int64_t lne = lt->bytes / nx_dtype_bytes[lt->dtype];
	double t0 = now();
	for (int s = 0; s < A->steps && rc == NX_OK; s++) {
		nx_arena_free(&sa);
		nx_arena_init(&sa);
		for (int k = 0; k < n->ninputs && rc == NX_OK; k++)
			if (!plan[k].state) {
				nx_literal *l = input_value(&sa, &plan[k], k, s, A->seed);
				rc = nx_rundev_input_bytes(n, k, as_type(&sa, l, nx_rundev_type(n->inputs[k].dtype)), ib[k], d);
			}
		if (rc != NX_OK)
			break;
		ro.sr_seed = mix(base ^ mix((uint64_t)s));
		nx_rt_stats st;
		double t1 = now(), c1 = cpu_now();
		rc = nx_rt_run(n, (const void *const *)ib, (void *const *)ob, &ro, &st, d);
		c->sim_s += now() - t1;
		c->sim_cpu_s += cpu_now() - c1;
		if (rc != NX_OK)
			break;
		double sum = 0;
		for (int64_t i = 0; i < lne; i++)
			sum += nx_rt_load_elem((const uint8_t *)ob[loss_k] + i * nx_dtype_bytes[lt->dtype], lt->dtype);
		c->loss[s] = lne ? sum / (double)lne : NAN;
		c->done = s + 1;
		for (int j = 0; j < n->noutputs; j++) {
			int a = n->outputs[j].alias_input;
			if (a >= 0 && plan[a].state)
				memcpy(ib[a], ob[j], (size_t)n->outputs[j].bytes);
		}
		if (!isfinite(c->loss[s]))
			break;
	}
	c->step_s = now() - t0;
	for (int s = c->done; s < A->steps; s++)
		c->loss[s] = NAN;
	nx_arena_free(&sa);
	for (int k = 0; k < n->ninputs; k++)
		free(ib[k]);
	for (int k = 0; k < n->noutputs; k++)
		free(ob[k]);
	free(ib);
	free(ob);
	return rc;
}

/* Pulls --param-dtype, --rounding and --sr-seed out of words[0..*n). */
static int config_flags(const char *cmd, char **words, int *n, train_config *c)
{
	int k = 0;
	const char *v;
	for (int i = 0; i < *n; i++) {
		int r;
		if ((r = nx_cli_flag(*n, words, &i, "--param-dtype", &v)) != 0) {
			if (r < 0)
				return -1;
			c->param_dtype = v;
		} else if ((r = nx_cli_flag(*n, words, &i, "--rounding", &v)) != 0) {
			if (r < 0)
				return -1;
			if (strcmp(v, "rne") && strcmp(v, "sr")) {
				nx_cli_usage_error(cmd, "--rounding must be rne or sr, not '%s'", v);
				return -1;
			}
			c->rounding = !strcmp(v, "sr");
		} else if ((r = nx_cli_flag(*n, words, &i, "--sr-seed", &v)) != 0) {
			if (r < 0)
				return -1;
			c->sr_seed = strtoull(v, NULL, 0);
			c->sr_seed_set = true;
		} else {
			words[k++] = words[i];
		}
	}
	*n = k;
	return 0;
}

/* Compiles the configuration (or loads the .neff). NULL with *d set. */
static nx_neff *config_neff(const train_args *A, train_config *c, nx_log *log, nx_diag *d)
{
	if (A->is_neff) {
		if (c->nwords || c->param_dtype) {
			nx_diag_set(d, NX_ERR_INPUT, A->file, 0, 0,
			            "configuration '%s': compile flags and --param-dtype need an HLO module, not a .neff",
			            c->name);
			return NULL;
		}
		return nx_rt_load(A->file, NULL, d);
	}
	int argc = A->ncommon + c->nwords;
	char **argv = calloc((size_t)argc + 1, sizeof *argv);
	memcpy(argv, A->common, sizeof *argv * (size_t)A->ncommon);
	if (c->nwords)
		memcpy(argv + A->ncommon, c->words, sizeof *argv * (size_t)c->nwords);
	nx_compile_flags f;
	nx_compile_result cr = {0};
	nx_neff *n = NULL;
	if (nx_flags_parse(argc, argv, getenv("NEURON_CC_FLAGS"), &f, d) == NX_OK) {
		nx_compile_opts o;
		nx_pass_opts po;
		nx_compile_opts_from_flags(&f, &o, &po, log);
		o.param_dtype = c->param_dtype;
		if (nx_compile_logged(A->file, &f, &o, log, false, &cr, d) == NX_OK) {
			printf("%s: compiled in %.2f s\n", c->name, cr.seconds);
			n = nx_rt_load_bytes(cr.neff, cr.len, A->file, NULL, d);
		}
	}
	free(cr.neff);
	nx_flags_free(&f);
	free(argv);
	return n;
}

/* out[s]: mean of the finite values among y[s-w+1 .. s] (NaN when none). */
static void trailing_mean(const double *y, int n, int w, double *out)
{
	for (int s = 0; s < n; s++) {
		double sum = 0;
		int c = 0;
		for (int j = s - w + 1 < 0 ? 0 : s - w + 1; j <= s; j++)
			if (isfinite(y[j]))
				sum += y[j], c++;
		out[s] = c == w || (c && s < w && c == s + 1) ? sum / c : NAN;
	}
}

/* The windows: final loss over the last tenth of the run (at most 100
 * steps), curves and steps-to-target over a twentieth (at most 50). */
static int final_window(int n) { return n / 10 < 1 ? 1 : n / 10 > 100 ? 100 : n / 10; }
static int curve_window(int n) { return n / 20 < 1 ? 1 : n / 20 > 50 ? 50 : n / 20; }

/* First step whose trailing mean reaches target, or -1. */
static int steps_to(const double *sm, int n, double target)
{
	for (int s = 0; s < n; s++)
		if (sm[s] <= target)
			return s;
	return -1;
}

/* Reports and files: summary on stdout (and DIR/summary.txt), CSV, SVG. */
static nx_status write_results(const train_args *A, const double *base, double base_s, train_config *cf, int nc,
                               double target, nx_diag *d)
{
	char *sum = NULL, *csv = NULL, *svg = NULL;
	size_t nsum = 0, ncsv = 0, nsvg = 0;
	FILE *f = open_memstream(&sum, &nsum);
	int N = A->steps, wf = final_window(N), wc = curve_window(N);
	double **sm = calloc((size_t)nc + 1, sizeof *sm), *bsm = NULL;
	for (int k = 0; k < nc; k++) {
		sm[k] = calloc((size_t)N + 1, sizeof **sm);
		trailing_mean(cf[k].loss, N, wc, sm[k]);
	}
	double *tmp = calloc((size_t)N + 1, sizeof *tmp);
	double bfinal = NAN;
	if (base) {
		bsm = calloc((size_t)N + 1, sizeof *bsm);
		trailing_mean(base, N, wc, bsm);
		trailing_mean(base, N, wf, tmp);
		bfinal = tmp[N - 1];
	}
	if (isnan(target))
		target = isfinite(bfinal) ? bfinal + 0.1 * fabs(bfinal) : NAN;
	if (isnan(target) && nc) {
		trailing_mean(cf[0].loss, N, wf, tmp);
		target = tmp[N - 1] + 0.1 * fabs(tmp[N - 1]);
	}
	fprintf(f, "%-24s %13s %12s %14s %10s %10s\n", "configuration", "final loss", "vs baseline", "max step diff",
	        "to target", "ms/step");
	if (base) {
		int hit = steps_to(bsm, N, target);
		char ht[32];
		snprintf(ht, sizeof ht, hit < 0 ? "never" : "%d", hit);
		fprintf(f, "%-24s %13.6g %12s %14s %10s %10.3f\n", "f32 baseline (evaluator)", bfinal, "-", "-", ht,
		        base_s * 1e3);
	}
	for (int k = 0; k < nc; k++) {
		train_config *c = &cf[k];
		trailing_mean(c->loss, N, wf, tmp);
		double fin = tmp[N - 1], worst = 0;
		for (int s = 0; s < N; s++) {
			if (base && isfinite(base[s]) && base[s] != 0)
				worst = fmax(worst, fabs(c->loss[s] - base[s]) / fabs(base[s]));
			if (base && !isfinite(c->loss[s]))
				worst = INFINITY;
		}
		int hit = steps_to(sm[k], N, target);
		char rel[32] = "-", md[32] = "-", ht[32];
		if (base && isfinite(bfinal) && bfinal != 0) {
			snprintf(rel, sizeof rel, "%+.3f %%", 100 * (fin - bfinal) / fabs(bfinal));
			snprintf(md, sizeof md, "%.3g", worst);
		}
		snprintf(ht, sizeof ht, hit < 0 ? "never" : "%d", hit);
		fprintf(f, "%-24s %13.6g %12s %14s %10s %10.3f%s\n", c->name, fin, rel, md, ht,
		        c->done ? 1e3 * c->step_s / c->done : 0.0, c->done < N ? "  (stopped: loss not finite)" : "");
	}
	fprintf(f, "final loss: mean of the last %d steps; vs baseline: its relative difference to the baseline's;\n"
	           "max step diff: largest |loss - baseline| / |baseline| of one step; to target: first step\n"
	           "where the mean of the last %d steps <= %.6g; ms/step: wall time of a whole step.\n",
	        wf, wc, target);
	for (int k = 0; k < nc; k++)
		fprintf(f, "  %s: %.3f ms simulating (%.3f ms CPU) per step, rounding %s\n", cf[k].name,
		        cf[k].done ? 1e3 * cf[k].sim_s / cf[k].done : 0.0, cf[k].done ? 1e3 * cf[k].sim_cpu_s / cf[k].done : 0.0,
		        cf[k].sr ? "stochastic" : "nearest-even");
	fclose(f);
	fputs(sum, stdout);
	nx_status rc = NX_OK;
	if (A->report) {
		if (mkdir(A->report, 0777) != 0 && errno != EEXIST) {
			rc = nx_diag_set(d, NX_ERR_IO, A->report, 0, 0, "cannot create the report directory");
			goto out;
		}
		f = open_memstream(&csv, &ncsv);
		fprintf(f, "step%s", base ? ",f32_baseline" : "");
		for (int k = 0; k < nc; k++)
			fprintf(f, ",%s", cf[k].name);
		fputc('\n', f);
		for (int s = 0; s < A->steps; s++) {
			fprintf(f, "%d", s);
			if (base) {
				if (isfinite(base[s]))
					fprintf(f, ",%.9g", base[s]);
				else
					fputc(',', f);
			}
			for (int k = 0; k < nc; k++) {
				if (isfinite(cf[k].loss[s]))
					fprintf(f, ",%.9g", cf[k].loss[s]);
				else
					fputc(',', f);
			}
			fputc('\n', f);
		}
		fclose(f);
		nx_train_series *sr = calloc((size_t)nc + 2, sizeof *sr);
		int ns = 0;
		if (base)
			sr[ns++] = (nx_train_series){"f32 baseline", bsm, true};
		for (int k = 0; k < nc; k++)
			sr[ns++] = (nx_train_series){cf[k].name, sm[k], false};
		const char *slash = strrchr(A->file, '/');
		char title[512];
		snprintf(title, sizeof title, "nxcc train %s: loss, mean of the last %d steps", slash ? slash + 1 : A->file,
		         wc);
		f = open_memstream(&svg, &nsvg);
		nx_train_plot_svg(f, title, sr, ns, A->steps, target);
		fclose(f);
		free(sr);
		char path[4096];
		snprintf(path, sizeof path, "%s/train.csv", A->report);
		if ((rc = nx_cli_write_file(path, csv, ncsv, d)) != NX_OK)
			goto out;
		snprintf(path, sizeof path, "%s/loss.svg", A->report);
		if ((rc = nx_cli_write_file(path, svg, nsvg, d)) != NX_OK)
			goto out;
		snprintf(path, sizeof path, "%s/summary.txt", A->report);
		if ((rc = nx_cli_write_file(path, sum, nsum, d)) != NX_OK)
			goto out;
		printf("wrote %s/train.csv, %s/loss.svg, %s/summary.txt\n", A->report, A->report, A->report);
	}
out:
	for (int k = 0; k < nc; k++)
		free(sm[k]);
	free(sm);
	free(bsm);
	free(tmp);
	free(sum);
	free(csv);
	free(svg);
	return rc;
}

static int train(train_args *A, train_config *cf, int nc, nx_log *log)
{
	nx_diag d = {0};
	nx_arena a;
	nx_arena_init(&a);
	nx_module *m = NULL;
	nx_neff **neffs = calloc((size_t)nc + 1, sizeof *neffs);
	double *base = NULL, base_s = 0;
	int rc = 0;
	if (!A->is_neff) {
		m = nx_cli_read_verified(A->file, &d);
		if (!m)
			goto fail;
		/* a tuple parameter: its leaves, as the .neff's inputs (names, data) */
		nx_cli_flatten_params(m, &d);
		if (d.status != NX_OK)
			goto fail;
	} else if (A->baseline) {
		nx_diag_set(&d, NX_ERR_INPUT, A->file, 0, 0, "--baseline f32 needs the HLO module, not a .neff");
		goto fail;
	}
	for (int k = 0; k < nc; k++)
		if (!(neffs[k] = config_neff(A, &cf[k], log, &d)))
			goto fail;
	const nx_neff *n0 = neffs[0];
	int np = n0->ninputs;
	if (n0->nreplicas > 1) {
		nx_diag_set(&d, NX_ERR_INPUT, A->file, 0, 0,
		            "the program runs on %d replicas; nxcc train simulates one NeuronCore", n0->nreplicas);
		goto fail;
	}
	if (m && m->entry->nparams != np) {
		nx_diag_set(&d, NX_ERR_INTERNAL, A->file, 0, 0, "the .neff has %d inputs, the module %d parameters", np,
		            m->entry->nparams);
		goto fail;
	}
	/* the input plan: shapes and types of the module (else of the device) */
	input_plan *plan = nx_arena_alloc(&a, sizeof *plan * (size_t)(np + 1));
	nx_random_domain *dom = nx_arena_alloc(&a, sizeof *dom * (size_t)(np + 1));
	if (m)
		nx_random_domains(m->entry, dom);
	int nstate = 0;
	for (int k = 0; k < np; k++) {
		input_plan *p = &plan[k];
		const nx_rt_tensor *t = &n0->inputs[k];
		p->name = m ? m->entry->params[k]->name : t->name;
		p->shape = m ? m->entry->params[k]->shape : nx_shape_array(&a, nx_rundev_type(t->dtype), t->rank, t->dims);
		p->dom = m ? dom[k] : t->nonneg ? NX_RANDOM_NONNEG : NX_RANDOM_SIGNED;
		for (int j = 0; j < n0->noutputs; j++)
			if (n0->outputs[j].alias_input == k)
				p->state = true;
		if (A->data_dir && plan_file(&a, A->data_dir, p, t->name, &d) != NX_OK)
			goto fail;
		nstate += p->state;
	}
	if (!nstate) {
		nx_diag_set(&d, NX_ERR_INPUT, A->file, 0, 0,
		            "no output aliases a parameter (input_output_alias): nothing to feed back between steps");
		goto fail;
	}
	/* the loss output */
	int K = A->loss_output;
	if (K >= n0->noutputs) {
		nx_diag_set(&d, NX_ERR_INPUT, A->file, 0, 0, "--loss-output %d: the program has %d outputs", K,
		            n0->noutputs);
		goto fail;
	}
	for (int j = 0; j < n0->noutputs && K < 0; j++) {
		const nx_rt_tensor *t = &n0->outputs[j];
		bool fl = t->dtype == NX_DT_F32 || t->dtype == NX_DT_BF16 || t->dtype == NX_DT_F16;
		if (fl && t->alias_input < 0 && t->bytes == nx_dtype_bytes[t->dtype])
			K = j;
	}
	if (K < 0) {
		nx_diag_set(&d, NX_ERR_INPUT, A->file, 0, 0,
		            "no scalar float output that no parameter aliases: give --loss-output K");
		goto fail;
	}
	for (int k = 1; k < nc; k++)
		if (neffs[k]->ninputs != np || neffs[k]->noutputs != n0->noutputs) {
			nx_diag_set(&d, NX_ERR_INTERNAL, A->file, 0, 0, "configuration '%s' compiled to another interface",
			            cf[k].name);
			goto fail;
		}
	printf("nxcc train: %s, %d steps, loss = output %d (%s)\n", A->file, A->steps, K, n0->outputs[K].name);
	for (int k = 0; k < np; k++) {
		const input_plan *p = &plan[k];
		printf("  input %d %-12s %s, %s\n", k, p->name, p->state ? "state (fed back)" : "data",
		       p->src == SRC_STACK   ? nx_arena_printf(&a, "%s, stack of %lld", p->path, (long long)p->nstack)
		       : p->src == SRC_CONST ? p->path
		       : p->state            ? nx_arena_printf(&a, "random, seed %llu", (unsigned long long)A->seed)
		                             : nx_arena_printf(&a, "random, seed %llu + step", (unsigned long long)A->seed));
	}
	fflush(stdout);
	if (A->baseline) {
		base = calloc((size_t)A->steps + 1, sizeof *base);
		if (run_baseline(m, plan, A, K, base, &base_s, &d) != NX_OK)
			goto fail;
	}
	bool diverged = false;
	for (int k = 0; k < nc; k++) {
		cf[k].loss = calloc((size_t)A->steps + 1, sizeof(double));
		if (run_sim(neffs[k], plan, A, K, &cf[k], &d) != NX_OK)
			goto fail;
		diverged |= cf[k].done < A->steps;
	}
	if (write_results(A, base, base_s, cf, nc, A->target, &d) != NX_OK)
		goto fail;
	if (diverged) {
		printf("train: a run's loss stopped being finite\n");
		rc = NX_EXIT_USER;
	}
	goto done;
fail:
	rc = nx_log_report(log, &d);
done:
	for (int k = 0; k < nc; k++)
		nx_neff_free(neffs[k]);
	free(neffs);
	free(base);
	nx_module_free(m);
	nx_diag_clear(&d);
	nx_arena_free(&a);
	return rc;
}

/* A configuration's name from its settings when --config gave none. */
static const char *default_name(const nx_compile_flags *f, const train_config *c, nx_arena *a)
{
	static const char *const modes[] = {"none", "matmult", "all"};
	static const char *const types[] = {"bf16", "fp16", "tf32", "fp8_e4m3", "fp8_e5m2"};
	char *s = nx_arena_printf(a, "%s", "");
	if (f->auto_cast != NX_AUTOCAST_NONE)
		s = nx_arena_printf(a, "auto-cast-%s-%s", modes[f->auto_cast], types[f->auto_cast_type]);
	if (c->param_dtype)
		s = nx_arena_printf(a, "%s%sparam-%s", s, *s ? "+" : "", c->param_dtype);
	if (c->rounding >= 0 || *s)
		s = nx_arena_printf(a, "%s%s%s", s, *s ? "-" : "", c->rounding == 1 ? "sr" : "rne");
	return *s ? s : "simulator";
}

int nx_cmd_train(int argc, char **argv)
{
	train_args A = {.seed = 1, .loss_output = -1, .baseline = true, .target = NAN};
	bool baseline_set = false;
	char **rest = calloc((size_t)argc + 1, sizeof(char *));
	const char **cfgs = calloc((size_t)argc + 1, sizeof(char *));
	int nrest = 0, ncfg = 0, rc = 0;
	train_config top = {.rounding = -1};
	nx_arena a;
	nx_arena_init(&a);
	const char *v = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			help();
			goto out;
		}
		int r;
		if ((r = nx_cli_flag(argc, argv, &i, "--steps", &v)) != 0) {
			char *end;
			long x = r > 0 ? strtol(v, &end, 10) : 0;
			if (r < 0 || *end || x < 1 || x > 100000000) {
				rc = nx_cli_usage_error("train", "--steps must be a number from 1 to 1e8");
				goto out;
			}
			A.steps = (int)x;
		} else if ((r = nx_cli_flag(argc, argv, &i, "--data", &v)) != 0) {
			A.data_dir = v;
		} else if ((r = nx_cli_flag(argc, argv, &i, "--random-inputs", &v)) != 0) {
			if (r > 0)
				A.seed = strtoull(v, NULL, 0);
		} else if ((r = nx_cli_flag(argc, argv, &i, "--loss-output", &v)) != 0) {
			if (r > 0 && (A.loss_output = atoi(v)) < 0)
				r = -1, nx_cli_usage_error("train", "--loss-output must be an output index >= 0");
		} else if ((r = nx_cli_flag(argc, argv, &i, "--baseline", &v)) != 0) {
			if (r > 0 && strcmp(v, "f32") && strcmp(v, "none"))
				r = -1, nx_cli_usage_error("train", "--baseline must be f32 or none, not '%s'", v);
			A.baseline = r > 0 && !strcmp(v, "f32");
			baseline_set = true;
		} else if ((r = nx_cli_flag(argc, argv, &i, "--target-loss", &v)) != 0) {
			if (r > 0)
				A.target = strtod(v, NULL);
		} else if ((r = nx_cli_flag(argc, argv, &i, "--report", &v)) != 0) {
			A.report = v;
		} else if ((r = nx_cli_flag(argc, argv, &i, "--config", &v)) != 0) {
			if (r > 0 && (!strchr(v, '=') || v[0] == '='))
				r = -1, nx_cli_usage_error("train", "--config needs NAME=FLAGS, not '%s'", v);
			cfgs[ncfg++] = v;
		} else {
			rest[nrest++] = argv[i];
		}
		if (r < 0) {
			rc = NX_EXIT_USER;
			goto out;
		}
	}
	/* --param-dtype, --rounding, --sr-seed on the command line apply to every configuration */
	if (config_flags("train", rest, &nrest, &top) < 0) {
		rc = NX_EXIT_USER;
		goto out;
	}
	if (!A.steps) {
		rc = nx_cli_usage_error("train", "--steps N is required (see nxcc train --help)");
		goto out;
	}
	nx_compile_flags f;
	nx_diag fd = {0};
	nx_log log = {0};
	if (nx_flags_parse(nrest, rest, getenv("NEURON_CC_FLAGS"), &f, &fd) != NX_OK)
		rc = nx_cli_report(&fd);
	else if (f.n_inputs != 1)
		rc = f.n_inputs ? nx_cli_usage_error("train", "more than one input file ('%s', '%s')", f.inputs[0], f.inputs[1])
		                : nx_cli_usage_error("train", "no input file (see nxcc train --help)");
	else if (nx_log_open(&log, &f, &fd) != NX_OK)
		rc = nx_cli_report(&fd);
	if (rc) {
		nx_log_close(&log);
		nx_diag_clear(&fd);
		nx_flags_free(&f);
		goto out;
	}
	A.file = nx_arena_printf(&a, "%s", f.inputs[0]);
	size_t fl = strlen(A.file);
	A.is_neff = fl > 5 && !strcmp(A.file + fl - 5, ".neff");
	if (A.is_neff && !baseline_set)
		A.baseline = false;
	A.common = rest;
	A.ncommon = nrest;
	int nc = ncfg ? ncfg : 1;
	train_config *cf = calloc((size_t)nc + 1, sizeof *cf);
	for (int k = 0; k < nc && !rc; k++) {
		cf[k] = top;
		if (!ncfg) {
			cf[k].name = default_name(&f, &top, &a);
			continue;
		}
		char *spec = nx_arena_printf(&a, "%s", cfgs[k]), *eq = strchr(spec, '=');
		*eq = 0;
		cf[k].name = spec;
		cf[k].words = nx_arena_alloc(&a, sizeof(char *) * (strlen(eq + 1) / 2 + 2));
		for (char *w = strtok(eq + 1, " \t"); w; w = strtok(NULL, " \t"))
			cf[k].words[cf[k].nwords++] = w;
		if (config_flags("train", cf[k].words, &cf[k].nwords, &cf[k]) < 0)
			rc = NX_EXIT_USER;
	}
	if (!rc) {
		nx_log_flags(&log, "train", argc - 1, argv + 1, &f);
		rc = train(&A, cf, nc, &log);
	}
	for (int k = 0; k < nc; k++)
		free(cf[k].loss);
	free(cf);
	nx_log_close(&log);
	nx_diag_clear(&fd);
	nx_flags_free(&f);
out:
	nx_arena_free(&a);
	free(rest);
	free(cfgs);
	return rc;
}
