/* compiler/cmd_eval.c — `nxcc eval`: run a module on host data with the
 * reference evaluator, print a summary of each output and write .npy files. */
#include "compiler/cli.h"

#include "ir/eval/eval.h"
#include "ir/npy.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void help(void)
{
	printf("usage: nxcc eval FILE [--input KEY=file.npy ...] [--random-inputs SEED]\n"
	       "                 [--output-dir DIR] [--replicas N] [--max-memory BYTES]\n"
	       "                 [--trace-nonfinite] [--save-inputs]\n\n"
	       "Evaluates the entry computation on the host, op by op in the module's own\n"
	       "types (the reference for every other test). KEY is a parameter number, a\n"
	       "parameter name or a neff_input_names value; 'rI:KEY=f.npy' gives replica I\n"
	       "its own input. A tuple parameter counts as its array leaves, numbered and\n"
	       "named as the .neff's inputs (<param>.<i>..., passes/flatten_params.c).\n"
	       "Parameters without --input get deterministic random data\n"
	       "from --random-inputs SEED. Prints shape, dtype and summary per output and\n"
	       "writes DIR/out<k>.npy (DIR/replica<i>/out<k>.npy with several replicas),\n"
	       "one per leaf of the result. Without --replicas, the module's replica_count,\n"
	       "else one more than the largest replica id its replica_groups name.\n"
	       "bf16 is stored as '<u2' words, f8 as '|u1'.\n"
	       "--save-inputs also writes the inputs used (given or random) as DIR/in<k>.npy\n"
	       "(k = parameter number, a tuple parameter's leaves numbered as above).\n"
	       "--trace-nonfinite reports (on stderr) the first instruction that creates a\n"
	       "NaN from NaN-free operands or an Inf from finite ones, with its opcode, name\n"
	       "and the range of each operand (constants are not reported).\n"
	       "Large elementwise work is JIT-compiled with LLVM, bit-identical to the\n"
	       "interpreter; NX_EVAL_JIT=0 turns that off (docs/gpsimd.md).\n");
}

static int find_param(const nx_comp *e, const char *key)
{
	char *end;
	long v = strtol(key, &end, 10);
	if (*key && !*end)
		return v >= 0 && v < e->nparams ? (int)v : -1;
	for (int k = 0; k < e->nparams; k++) {
		const nx_inst *p = e->params[k];
		if (!p)
			continue;
		if (!strcmp(p->name, key))
			return k;
		for (int j = 0; j < p->a.nfrontend_attributes; j++)
			if (!strcmp(p->a.frontend_attributes[j].key, "neff_input_names") &&
			    !strcmp(p->a.frontend_attributes[j].value, key))
				return k;
	}
	return -1;
}

static void summarize(const char *name, const nx_literal *l)
{
	char shp[256];
	nx_shape_print(shp, sizeof(shp), l->shape, false);
	int64_t n = nx_shape_elems(l->shape);
	printf("%s: %s", name, shp);
	if (n > 0 && nx_type_kind_of(l->shape->type) != NX_KIND_COMPLEX) {
		double mn = INFINITY, mx = -INFINITY, sum = 0;
		int64_t nonfinite = 0;
		for (int64_t k = 0; k < n; k++) {
			double v = nx_lit_get_f64(l, k);
			if (!isfinite(v)) {
				nonfinite++;
				continue;
			}
			mn = v < mn ? v : mn, mx = v > mx ? v : mx, sum += v;
		}
		if (n > nonfinite)
			printf("  min %.6g max %.6g mean %.6g", mn, mx, sum / (double)(n - nonfinite));
		if (nonfinite)
			printf("  non-finite %lld", (long long)nonfinite);
	}
	printf("  [");
	for (int64_t k = 0; k < n && k < 6; k++) {
		if (nx_type_kind_of(l->shape->type) == NX_KIND_COMPLEX) {
			double re, im;
			nx_lit_get_c128(l, k, &re, &im);
			printf("%s(%.6g,%.6g)", k ? ", " : "", re, im);
		} else {
			printf("%s%.6g", k ? ", " : "", nx_lit_get_f64(l, k));
		}
	}
	printf("%s]\n", n > 6 ? ", ..." : "");
}

static int write_leaves(const nx_literal *l, const char *dir, int *k, nx_diag *d)
{
	if (nx_shape_is_tuple(l->shape)) {
		for (int j = 0; j < l->ntuple; j++)
			if (write_leaves(l->tuple[j], dir, k, d) != 0)
				return 1;
		return 0;
	}
	char name[64], path[4096];
	snprintf(name, sizeof(name), "out%d", *k);
	summarize(name, l);
	if (dir) {
		snprintf(path, sizeof(path), "%s/out%d.npy", dir, *k);
		if (nx_npy_save(path, l, d) != NX_OK)
			return 1;
	}
	(*k)++;
	return 0;
}

/* Replicas a module without replica_count implies: one more than the
 * largest replica id its collectives name (torch-neuronx graphs of a
 * tensor-parallel run say replica_groups={{0,1}} but no replica_count). */
static int implied_replicas(const nx_module *m)
{
	int64_t n = 1;
	for (int c = 0; c < m->ncomps; c++)
		for (int k = 0; k < m->comps[c]->ninsts; k++) {
			const nx_replica_groups *g = &m->comps[c]->insts[k]->a.replica_groups;
			if (!g->present)
				continue;
			if (g->iota) {
				int64_t t = 1;
				for (int d = 0; d < g->iota_shape.n; d++)
					t *= g->iota_shape.v[d];
				n = t > n ? t : n;
			}
			for (int j = 0; j < g->ngroups; j++)
				for (int e = 0; e < g->groups[j].n; e++)
					if (g->groups[j].v[e] + 1 > n)
						n = g->groups[j].v[e] + 1;
		}
	return n > 1024 ? 1024 : (int)n;
}

static bool mkdir_p(const char *dir)
{
	char buf[4096];
	snprintf(buf, sizeof(buf), "%s", dir);
	for (char *p = buf + 1; *p; p++)
		if (*p == '/') {
			*p = 0;
			mkdir(buf, 0777);
			*p = '/';
		}
	return mkdir(buf, 0777) == 0 || errno == EEXIST;
}

int nx_cmd_eval(int argc, char **argv)
{
	const char *file = NULL, *outdir = NULL, *v;
	nx_cli_input *inputs = calloc((size_t)argc + 1, sizeof(nx_cli_input));
	int ninputs = 0, replicas = 0, rc = 0;
	bool have_seed = false, trace = false, save_inputs = false;
	uint64_t seed = 0;
	int64_t maxmem = 0;
	for (int i = 1; i < argc; i++) {
		int r;
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			help();
			nx_cli_inputs_free(inputs, ninputs);
			return 0;
		}
		if ((r = nx_cli_flag(argc, argv, &i, "--input", &v)) != 0) {
			if (r < 0)
				goto usage;
			if (!nx_cli_parse_input(v, &inputs[ninputs])) {
				nx_cli_inputs_free(inputs, ninputs);
				return nx_cli_usage_error("eval", "--input needs KEY=file.npy, not '%s'", v);
			}
			ninputs++;
		} else if ((r = nx_cli_flag(argc, argv, &i, "--random-inputs", &v)) != 0) {
			if (r < 0)
				goto usage;
			seed = strtoull(v, NULL, 0), have_seed = true;
		} else if ((r = nx_cli_flag(argc, argv, &i, "--output-dir", &v)) != 0) {
			if (r < 0)
				goto usage;
			outdir = v;
		} else if ((r = nx_cli_flag(argc, argv, &i, "--replicas", &v)) != 0) {
			if (r < 0)
				goto usage;
			replicas = atoi(v);
			if (replicas < 1) {
				nx_cli_inputs_free(inputs, ninputs);
				return nx_cli_usage_error("eval", "--replicas must be >= 1");
			}
		} else if ((r = nx_cli_flag(argc, argv, &i, "--max-memory", &v)) != 0) {
			if (r < 0)
				goto usage;
			maxmem = strtoll(v, NULL, 0);
		} else if (!strcmp(argv[i], "--save-inputs")) {
			save_inputs = true;
		} else if (!strcmp(argv[i], "--trace-nonfinite")) {
			trace = true;
		} else if (argv[i][0] == '-' && argv[i][1]) {
			nx_cli_inputs_free(inputs, ninputs);
			return nx_cli_usage_error("eval", "unknown flag '%s'", argv[i]);
		} else if (file) {
			nx_cli_inputs_free(inputs, ninputs);
			return nx_cli_usage_error("eval", "more than one input file");
		} else {
			file = argv[i];
		}
	}
	if (!file) {
		nx_cli_inputs_free(inputs, ninputs);
		return nx_cli_usage_error("eval", "no input file (see nxcc eval --help)");
	}
	if (save_inputs && !outdir) {
		nx_cli_inputs_free(inputs, ninputs);
		return nx_cli_usage_error("eval", "--save-inputs needs --output-dir");
	}
	nx_diag d = {0};
	nx_module *m = nx_cli_read_verified(file, &d);
	nx_arena a;
	nx_arena_init(&a);
	if (!m)
		goto fail;
	if (!m->entry) {
		nx_diag_set(&d, NX_ERR_INPUT, file, 0, 0, "module has no entry computation");
		goto fail;
	}
	/* tuple parameters become their leaves, as the .neff's inputs */
	nx_cli_flatten_params(m, &d);
	if (d.status != NX_OK)
		goto fail;
	if (!replicas)
		replicas = m->replica_count > 0 ? (int)m->replica_count : implied_replicas(m);
	if (maxmem <= 0) {
		long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
		maxmem = pages > 0 && psz > 0 ? (int64_t)pages * psz / 2 : (INT64_C(8) << 30);
	}
	const nx_comp *e = m->entry;
	/* quick pre-check: parameters and entry results alone must fit */
	int64_t need = 0;
	for (int k = 0; k < e->ninsts; k++) {
		int64_t b = nx_shape_bytes(e->insts[k]->shape);
		if (e->insts[k]->op == NX_OP_PARAMETER || e->insts[k] == e->root)
			need += b < 0 ? INT64_MAX / 4 : b;
	}
	if (need * replicas > maxmem) {
		nx_diag_set(&d, NX_ERR_INPUT, file, 0, 0,
		            "evaluation needs at least %lld bytes for parameters and results, more than "
		            "--max-memory %lld", (long long)(need * replicas), (long long)maxmem);
		goto fail;
	}
	/* and so must the largest single value anywhere (a [1024,4096,32000]
	 * mask would otherwise be found only after minutes of work) */
	const nx_inst *big = NULL;
	int64_t bigb = 0;
	for (int c = 0; c < m->ncomps; c++)
		for (int k = 0; k < m->comps[c]->ninsts; k++) {
			const nx_inst *in = m->comps[c]->insts[k];
			int64_t b = nx_shape_is_tuple(in->shape) ? 0 : nx_shape_bytes(in->shape);
			if (b < 0)
				b = INT64_MAX / 4;
			if (b > bigb)
				big = in, bigb = b;
		}
	if (big && bigb * replicas > maxmem) {
		char shp[256];
		nx_shape_print(shp, sizeof(shp), big->shape, false);
		nx_diag_set(&d, NX_ERR_INPUT, file, big->line, big->col,
		            "evaluation needs at least %lld bytes (instruction '%s' is %s%s), more than "
		            "--max-memory %lld", (long long)(bigb * replicas), big->name, shp,
		            replicas > 1 ? " on every replica" : "", (long long)maxmem);
		goto fail;
	}
	for (int k = 0; k < ninputs; k++)
		if (inputs[k].rank >= replicas) {
			nx_diag_set(&d, NX_ERR_INPUT, file, 0, 0, "--input r%d:%s: there is no replica %d "
			            "(%d replica%s)", inputs[k].rank, inputs[k].key, inputs[k].rank,
			            replicas, replicas == 1 ? "" : "s");
			goto fail;
		}
	int np = e->nparams;
	nx_random_domain *dom = nx_arena_alloc(&a, sizeof(nx_random_domain) * (size_t)(np + 1));
	nx_random_domains(e, dom);
	nx_literal *const **argv_r = nx_arena_alloc(&a, sizeof(void *) * (size_t)replicas);
	nx_literal **rnd = NULL;
	for (int r = 0; r < replicas; r++) {
		nx_literal **args = nx_arena_alloc(&a, sizeof(nx_literal *) * (size_t)(np + 1));
		for (int pass = 0; pass < 2; pass++) /* shared inputs first, replica-specific override */
			for (int k = 0; k < ninputs; k++) {
				const nx_cli_input *in = &inputs[k];
				if ((pass == 0) != (in->rank < 0) || (pass == 1 && in->rank != r))
					continue;
				int p = find_param(e, in->key);
				if (p < 0) {
					/* a tuple parameter's name: its leaves are the inputs */
					const char *leaf = NULL;
					size_t kl = strlen(in->key);
					for (int j = 0; j < np && !leaf; j++)
						if (!strncmp(e->params[j]->name, in->key, kl) && e->params[j]->name[kl] == '.')
							leaf = e->params[j]->name;
					if (leaf)
						nx_diag_set(&d, NX_ERR_INPUT, file, 0, 0, "--input %s: a tuple parameter; give "
						            "each array leaf its own --input (%s, ...)", in->key, leaf);
					else
						nx_diag_set(&d, NX_ERR_INPUT, file, 0, 0, "--input %s: no parameter with that "
						            "number, name or neff_input_names", in->key);
					goto fail;
				}
				const nx_shape *ps = e->params[p]->shape;
				nx_literal *l = nx_npy_load(&a, in->file, ps->type, &d);
				if (!l)
					goto fail;
				if (!nx_shape_compatible(l->shape, ps)) {
					char got[256], want[256];
					nx_shape_print(got, sizeof(got), l->shape, false);
					nx_shape_print(want, sizeof(want), ps, false);
					nx_diag_set(&d, NX_ERR_INPUT, in->file, 0, 0, "parameter %d (%s) is %s, the "
					            "file holds %s", p, e->params[p]->name, want, got);
					goto fail;
				}
				l->shape = e->params[p]->shape;
				args[p] = l;
			}
		for (int p = 0; p < np; p++) {
			if (args[p])
				continue;
			if (!have_seed) {
				nx_diag_set(&d, NX_ERR_INPUT, file, 0, 0, "parameter %d (%s) has no --input and "
				            "no --random-inputs SEED was given", p, e->params[p]->name);
				goto fail;
			}
			if (!rnd) { /* every parameter's, numbered by leaves as the .neff's inputs are */
				rnd = nx_arena_alloc(&a, sizeof(nx_literal *) * (size_t)(np + 1));
				nx_random_args(&a, e, seed, dom, rnd);
			}
			args[p] = rnd[p];
		}
		argv_r[r] = args;
	}
	nx_literal **outs = nx_arena_alloc(&a, sizeof(nx_literal *) * (size_t)replicas);
	nx_eval_trace *tr = trace ? calloc(1, sizeof(*tr)) : NULL;
	nx_eval_opts o = {.replicas = replicas, .max_memory = maxmem, .rng_seed = seed, .trace = tr};
	nx_status est = nx_eval_module(m, &o, np, argv_r, &a, outs, &d);
	if (tr) {
		if (tr->found)
			fprintf(stderr, "%s: %s\n", file, tr->report);
		else if (est == NX_OK)
			fprintf(stderr, "%s: no non-finite values created\n", file);
		free(tr);
	}
	if (est != NX_OK)
		goto fail;
	for (int r = 0; r < replicas; r++) {
		char dir[4096];
		const char *dp = NULL;
		if (outdir) {
			if (replicas > 1)
				snprintf(dir, sizeof(dir), "%s/replica%d", outdir, r);
			else
				snprintf(dir, sizeof(dir), "%s", outdir);
			if (!mkdir_p(dir)) {
				nx_diag_set(&d, NX_ERR_IO, dir, 0, 0, "cannot create directory");
				goto fail;
			}
			dp = dir;
		}
		for (int p = 0; dp && save_inputs && p < np; p++) {
			char path[4200];
			if (!nx_shape_is_array(argv_r[r][p]->shape))
				continue;
			snprintf(path, sizeof(path), "%s/in%d.npy", dp, p);
			if (nx_npy_save(path, argv_r[r][p], &d) != NX_OK)
				goto fail;
		}
		if (replicas > 1)
			printf("replica %d:\n", r);
		int k = 0;
		if (write_leaves(outs[r], dp, &k, &d) != 0)
			goto fail;
	}
	goto done;
fail:
	rc = nx_cli_report(&d);
done:
	nx_diag_clear(&d);
	nx_arena_free(&a);
	nx_module_free(m);
	nx_cli_inputs_free(inputs, ninputs);
	return rc;
usage:
	nx_cli_inputs_free(inputs, ninputs);
	return NX_EXIT_USER;
}
