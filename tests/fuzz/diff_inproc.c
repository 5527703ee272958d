/* tests/fuzz/diff_inproc.c — the differential campaign in one process.
 *
 * Reads random modules from stdin, as `tests/fuzz/gen_hlo.py --batch FIRST
 * COUNT` writes them (each framed by a line "@@ SEED BYTES"), and runs each
 * through what tests/fuzz/diff.sh runs through the nxcc binary, with the
 * library functions and no process per module:
 *   - the reference evaluator on the module as written, random inputs of SEED
 *     (the generator of nxcc eval/check);
 *   - the pass pipeline at -O1, -O2, -O3 (nxcc opt's defaults), printed and
 *     read back, then evaluated on the same inputs: byte-identical outputs;
 *   - compile for trn1 at -O(SEED%3+1) and trn2 at -O((SEED+1)%3+1), run on
 *     the simulator, compared with the evaluator as nxcc check compares
 *     (compiler/check.h: integers exact, floats within the dtype's tolerance).
 * A module that fails any step is written to OUTDIR/fail-SEED.hlo with its
 * log (OUTDIR/fail-SEED.log) and reported on stdout; the exit status is 1
 * when any module failed. An internal compiler error (abort) or a crash ends
 * the run: the module is saved as fail-SEED.hlo and named on stderr first. The last line gives the count, the seeds, the wall
 * time and modules per second.
 *   python3 tests/fuzz/gen_hlo.py --batch 1 10000 | build/fuzz/diff_inproc build-fuzz/diff
 */
#include "compiler/check.h"
#include "compiler/compile_cached.h"
#include "compiler/flags.h"
#include "compiler/rundev.h"
#include "ir/eval/eval.h"
#include "ir/npy.h"
#include "passes/pass.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { MAX_OUTS = 256 };

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static bool diag_fail(FILE *log, const char *what, nx_diag *d)
{
	char *s = nx_diag_format(d);
	fprintf(log, "%s: %s\n", what, s ? s : "(no diagnostic)");
	free(s);
	nx_diag_clear(d);
	return false;
}

static nx_module *read_verified(const char *text, size_t len, const char *name, FILE *log, nx_diag *d)
{
	nx_module *m = nx_read_text(text, len, name, d);
	if (m && nx_verify_module(m, d) == NX_OK)
		return m;
	diag_fail(log, "read/verify", d);
	nx_module_free(m);
	return NULL;
}

static bool same_bytes(const nx_literal *const *a, const nx_literal *const *b, int n)
{
	for (int k = 0; k < n; k++) {
		if (!nx_shape_equal(a[k]->shape, b[k]->shape) || a[k]->nbytes != b[k]->nbytes)
			return false;
		if (a[k]->nbytes && memcmp(a[k]->data, b[k]->data, (size_t)a[k]->nbytes) != 0)
			return false;
	}
	return true;
}

typedef struct campaign {
	const char *path;         /* the module as a file, for nx_driver_compile */
	nx_compile_flags f[2][4]; /* [target][-O level], the flags nxcc check parses */
} campaign;

/* nx_pass_run_pipeline at level o with nxcc opt's defaults, printed and read back. */
static nx_module *optimize(const char *text, size_t len, int o, FILE *log, nx_diag *d)
{
	nx_module *m = read_verified(text, len, "module.hlo", log, d);
	if (!m)
		return NULL;
	nx_pass_ctx ctx = {.opt_level = o, .autocast_type = NX_BF16, .fold_max_elems = 1 << 16};
	ctx.diag = d;
	nx_pass_opts po = {0};
	if (nx_pass_run_pipeline(m, &ctx, &po) != NX_OK) {
		diag_fail(log, "opt", d);
		nx_module_free(m);
		return NULL;
	}
	char *p = nx_print_module(m, NULL);
	nx_module_free(m);
	m = read_verified(p, strlen(p), "opt.hlo", log, d);
	if (!m)
		fprintf(log, "--- printed ---\n%s\n", p);
	free(p);
	return m;
}

/* compile + simulate + compare, as nxcc check FILE --target T -O<o> --random-inputs SEED */
static bool device(campaign *c, int t, int o, nx_literal *const *args, const nx_literal *const *refs, int nref,
                   int64_t L, nx_arena *a, FILE *log)
{
	nx_compile_opts co;
	nx_pass_opts po;
	nx_compile_opts_from_flags(&c->f[t][o], &co, &po, NULL);
	nx_diag d = {0};
	nx_compile_result cr = {0};
	if (nx_driver_compile(c->path, &co, false, &cr, &d) != NX_OK)
		return diag_fail(log, "compile", &d);
	nx_neff *n = nx_rt_load_bytes(cr.neff, cr.len, c->path, NULL, &d);
	free(cr.neff);
	if (!n)
		return diag_fail(log, "load", &d);
	bool ok = false;
	if (n->noutputs != nref) {
		fprintf(log, "the .neff has %d outputs, the module %d\n", n->noutputs, nref);
		goto done;
	}
	nx_type types[MAX_OUTS];
	nx_literal *outs[MAX_OUTS];
	for (int k = 0; k < nref; k++)
		types[k] = refs[k]->shape->type;
	nx_rt_opts ro = nx_rt_opts_default();
	nx_rt_stats st;
	memset(&st, 0, sizeof st);
	if (nx_rundev(n, args, types, a, outs, &ro, &st, &d) != NX_OK) {
		diag_fail(log, "run", &d);
		goto done;
	}
	ok = nx_check_compare(log, refs, outs, nref, L, NULL, NULL) == 0;
done:
	nx_neff_free(n);
	return ok;
}

/* One module; false (with the reason in why and the story in log) when any step fails. */
static bool one(campaign *c, uint64_t seed, const char *text, size_t len, FILE *log, const char **why)
{
	nx_diag d = {0};
	nx_arena a;
	nx_arena_init(&a);
	nx_module *m = read_verified(text, len, "module.hlo", log, &d);
	bool ok = false;
	*why = "read/verify failed";
	if (!m)
		goto done;
	const nx_comp *e = m->entry;
	nx_literal **args = nx_arena_alloc(&a, sizeof *args * (size_t)(e->nparams + 1));
	nx_random_domain *dom = nx_arena_alloc(&a, sizeof *dom * (size_t)(e->nparams + 1));
	nx_random_domains(e, dom);
	for (int k = 0; k < e->nparams; k++)
		args[k] = nx_random_literal_in(&a, e->params[k]->shape, seed, k, dom[k]);
	nx_literal *const *argv1[1] = {args};
	nx_eval_opts eo = {.replicas = 1, .rng_seed = seed};
	nx_literal *ref = NULL;
	*why = "eval failed";
	if (nx_eval_module(m, &eo, e->nparams, argv1, &a, &ref, &d) != NX_OK) {
		diag_fail(log, "eval", &d);
		goto done;
	}
	const nx_literal *refs[MAX_OUTS];
	int nref = 0;
	nx_check_leaves(ref, refs, &nref, MAX_OUTS);
	if (nref > MAX_OUTS)
		goto done;
	for (int o = 1; o <= 3; o++) {
		static const char *fails[] = {"", "opt -O1 failed", "opt -O2 failed", "opt -O3 failed"};
		static const char *diffs[] = {"", "opt -O1 changed the results", "opt -O2 changed the results",
		                              "opt -O3 changed the results"};
		*why = fails[o];
		nx_module *mo = optimize(text, len, o, log, &d);
		if (!mo)
			goto done;
		nx_literal *r2 = NULL;
		nx_status st = nx_eval_module(mo, &eo, e->nparams, argv1, &a, &r2, &d);
		nx_module_free(mo);
		if (st != NX_OK) {
			diag_fail(log, "eval after opt", &d);
			goto done;
		}
		const nx_literal *r2s[MAX_OUTS];
		int n2 = 0;
		nx_check_leaves(r2, r2s, &n2, MAX_OUTS);
		*why = diffs[o];
		if (n2 != nref || !same_bytes(refs, r2s, nref)) {
			fprintf(log, "-O%d: outputs are not byte-identical\n", o);
			goto done;
		}
	}
	int64_t L = nx_check_longest_reduction(m);
	int o1 = (int)(seed % 3 + 1), o2 = (int)((seed + 1) % 3 + 1);
	static const char *chk[2][4] = {{"", "check trn1 -O1", "check trn1 -O2", "check trn1 -O3"},
	                                {"", "check trn2 -O1", "check trn2 -O2", "check trn2 -O3"}};
	*why = chk[0][o1];
	if (!device(c, 0, o1, args, refs, nref, L, &a, log))
		goto done;
	*why = chk[1][o2];
	if (!device(c, 1, o2, args, refs, nref, L, &a, log))
		goto done;
	ok = true;
done:
	nx_diag_clear(&d);
	nx_module_free(m);
	nx_arena_free(&a);
	return ok;
}

/* An internal compiler error or a crash ends the process: the module being
 * run is saved first (fail-SEED.hlo) and named on stderr. */
static char crash_path[4200], crash_msg[4400];
static const char *crash_text;
static size_t crash_len;

static void on_crash(int sig)
{
	int fd = open(crash_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd >= 0) {
		if (write(fd, crash_text, crash_len) < 0)
			crash_len = 0;
		close(fd);
	}
	if (write(2, crash_msg, strlen(crash_msg)) < 0)
		crash_len = 0;
	signal(sig, SIG_DFL);
	raise(sig);
}

static bool write_all(const char *path, const char *s, size_t n)
{
	FILE *fp = fopen(path, "wb");
	if (!fp)
		return false;
	bool ok = fwrite(s, 1, n, fp) == n;
	return fclose(fp) == 0 && ok;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: gen_hlo.py --batch FIRST COUNT | diff_inproc OUTDIR\n");
		return 2;
	}
	const char *outdir = argv[1];
	const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	char path[4096];
	snprintf(path, sizeof path, "%s/nx_diff_inproc.%ld.hlo", tmp, (long)getpid());
	campaign c = {.path = path};
	static const char *tg[2] = {"trn1", "trn2"};
	static const char *ol[4] = {"", "-O1", "-O2", "-O3"};
	for (int t = 0; t < 2; t++)
		for (int o = 1; o <= 3; o++) {
			char *av[4] = {(char *)path, "--target", (char *)tg[t], (char *)ol[o]};
			nx_diag d = {0};
			if (nx_flags_parse(4, av, NULL, &c.f[t][o], &d) != NX_OK) {
				char *s = nx_diag_format(&d);
				fprintf(stderr, "diff_inproc: %s\n", s);
				return 2;
			}
		}
	signal(SIGABRT, on_crash);
	signal(SIGSEGV, on_crash);
	signal(SIGBUS, on_crash);
	signal(SIGFPE, on_crash);
	double t0 = now();
	long n = 0, bad = 0;
	unsigned long long seed, first = 0, last = 0;
	size_t len;
	char line[128];
	while (fgets(line, sizeof line, stdin)) {
		if (sscanf(line, "@@ %llu %zu", &seed, &len) != 2) {
			fprintf(stderr, "diff_inproc: expected '@@ SEED BYTES', got: %s", line);
			return 2;
		}
		char *text = malloc(len + 1);
		if (!text || fread(text, 1, len, stdin) != len) {
			fprintf(stderr, "diff_inproc: short module for seed %llu\n", seed);
			return 2;
		}
		text[len] = 0;
		snprintf(crash_path, sizeof crash_path, "%s/fail-%llu.hlo", outdir, seed);
		snprintf(crash_msg, sizeof crash_msg, "diff: seed %llu: crashed (%s)\n", seed, crash_path);
		crash_text = text, crash_len = len;
		if (!n)
			first = seed;
		last = seed;
		char *logbuf = NULL;
		size_t loglen = 0;
		FILE *log = open_memstream(&logbuf, &loglen);
		const char *why = "cannot write the module";
		bool ok = log && write_all(path, text, len) && one(&c, seed, text, len, log, &why);
		if (log)
			fclose(log);
		if (!ok) {
			char fp[4096];
			bad++;
			snprintf(fp, sizeof fp, "%s/fail-%llu.hlo", outdir, seed);
			write_all(fp, text, len);
			snprintf(fp, sizeof fp, "%s/fail-%llu.log", outdir, seed);
			write_all(fp, logbuf ? logbuf : "", loglen);
			printf("diff: seed %llu: %s (%s/fail-%llu.hlo)\n", seed, why, outdir, seed);
			fflush(stdout);
		}
		free(logbuf);
		free(text);
		n++;
	}
	unlink(path);
	for (int t = 0; t < 2; t++)
		for (int o = 1; o <= 3; o++)
			nx_flags_free(&c.f[t][o]);
	double s = now() - t0;
	printf("diff: %ld modules (seeds %llu..%llu), %ld differences, %.1f s, %.1f modules/s\n", n, first, last, bad,
	       s, s > 0 ? (double)n / s : 0.0);
	return bad ? 1 : 0;
}
