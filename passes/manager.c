/* passes/manager.c — the pass registry and the pass manager: pipelines per
 * -O level from passes.def, fixed-point groups, timing, verifying, dumping. */
#include "passes/pass.h"

#include "ir/file_atomic.h"
#include "passes/dump_graph.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const nx_pass_info registry[] = {
#define PASS(name, fn, group, level, summary) {name, fn, group, level, NX_OPT_MAX, summary},
#define PASS_LEVELS(name, fn, group, lo, hi, summary) {name, fn, group, lo, hi, summary},
#include "passes/passes.def"
#undef PASS_LEVELS
#undef PASS
};

int nx_pass_count(void) { return (int)(sizeof(registry) / sizeof(registry[0])); }
const nx_pass_info *nx_pass_get(int i) { return &registry[i]; }

const nx_pass_info *nx_pass_find(const char *name)
{
	for (int i = 0; i < nx_pass_count(); i++)
		if (strcmp(registry[i].name, name) == 0)
			return &registry[i];
	return NULL;
}

void nx_pass_log(const nx_pass_ctx *ctx, int level, const char *fmt, ...)
{
	if (!ctx || ctx->verbose < level)
		return;
	FILE *f = ctx->log ? ctx->log : stderr;
	va_list ap;
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fputc('\n', f);
}

typedef struct {
	const nx_pass_info *pass;
	double seconds;
	int runs, changes;
} pass_stat;

typedef struct {
	nx_module *m;
	const nx_pass_ctx *ctx;
	const nx_pass_opts *o;
	pass_stat *stats;
	int nstats;
	int dump_seq;
} manager;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static bool disabled(const nx_pass_opts *o, const char *name)
{
	for (int i = 0; o && i < o->ndisabled; i++)
		if (strcmp(o->disabled[i], name) == 0)
			return true;
	return false;
}

static pass_stat *stat_for(manager *mg, const nx_pass_info *p)
{
	for (int i = 0; i < mg->nstats; i++)
		if (mg->stats[i].pass == p)
			return &mg->stats[i];
	mg->stats = realloc(mg->stats, sizeof(pass_stat) * (size_t)(mg->nstats + 1));
	pass_stat *s = &mg->stats[mg->nstats++];
	memset(s, 0, sizeof(*s));
	s->pass = p;
	return s;
}

/* A dump that cannot be written is a warning, never a failed compile. */
static nx_status dump(manager *mg, const nx_pass_info *p)
{
	const nx_pass_opts *o = mg->o;
	if (!o || !o->dump_after)
		return NX_OK;
	if (strcmp(o->dump_after, "all") != 0 && strcmp(o->dump_after, p->name) != 0)
		return NX_OK;
	const char *dir = o->dump_dir ? o->dump_dir : ".";
	const char *fmt = o->dump_format ? o->dump_format : "hlo";
	/* the module name comes from the input (a .pb's name field): only
	 * [A-Za-z0-9_-] and inner dots reach the path, never '/' or '..' */
	char name[128];
	size_t n = 0;
	for (const char *c = mg->m->name; *c && n < sizeof name - 1; c++, n++)
		name[n] = isalnum((unsigned char)*c) || *c == '-' || *c == '_' || (*c == '.' && n) ? *c : '_';
	name[n] = 0;
	char base[4096];
	snprintf(base, sizeof(base), "%s/%s.%03d.%s", dir, n ? name : "module", mg->dump_seq++, p->name);
	nx_diag d = {0};
	nx_status st = nx_mkdir_p(dir, &d);
	if (st == NX_OK && (!strcmp(fmt, "dot") || !strcmp(fmt, "html"))) {
		st = nx_dump_graph(mg->m, mg->ctx, fmt[0] == 'h', base, &d);
	} else if (st == NX_OK) {
		char path[4200];
		snprintf(path, sizeof(path), "%s.hlo", base);
		char *text = nx_print_module(mg->m, NULL);
		st = nx_write_file_atomic(path, text, strlen(text), false, &d);
		free(text);
	}
	if (st != NX_OK) {
		char *msg = nx_diag_format(&d);
		FILE *log = mg->ctx->log ? mg->ctx->log : stderr;
		fprintf(log, "nxcc: warning: dump after pass %s not written: %s", p->name, msg ? msg : "?\n");
		free(msg);
	}
	nx_diag_clear(&d);
	return NX_OK;
}

static nx_status run_one(manager *mg, const nx_pass_info *p, bool *changed)
{
	pass_stat *s = stat_for(mg, p);
	char *before = NULL;
	if (mg->o && mg->o->check_changed)
		before = nx_print_module(mg->m, NULL);
	double t0 = now();
	*changed = false;
	nx_status st = p->fn(mg->m, mg->ctx, changed);
	s->seconds += now() - t0;
	s->runs++;
	s->changes += *changed;
	nx_pass_log(mg->ctx, 2, "pass %s: %s", p->name, *changed ? "changed" : "unchanged");
	if (before) {
		char *after = nx_print_module(mg->m, NULL);
		bool differs = strcmp(before, after) != 0;
		free(before);
		free(after);
		if (differs != *changed)
			nx_ice(__FILE__, __LINE__, "pass %s reported changed=%d but the module %s",
			       p->name, *changed, differs ? "changed" : "did not change");
	}
	if (st != NX_OK)
		return st;
	if (*changed && mg->o && mg->o->verify_each) {
		st = nx_verify_module(mg->m, mg->ctx->diag);
		if (st != NX_OK) {
			/* A pass produced an invalid module: that is our bug. */
			char *msg = mg->ctx->diag ? nx_diag_format(mg->ctx->diag) : NULL;
			nx_ice(__FILE__, __LINE__, "verifier failed after pass %s: %s", p->name,
			       msg ? msg : "");
		}
	}
	return dump(mg, p);
}

/* Runs passes[0..n) once, or to a fixed point when they form a group. */
static nx_status run_group(manager *mg, const nx_pass_info **passes, int n, bool fixed)
{
	int cap = mg->o && mg->o->max_iterations ? mg->o->max_iterations : 16;
	for (int iter = 0; iter < (fixed ? cap : 1); iter++) {
		bool any = false;
		for (int i = 0; i < n; i++) {
			bool changed = false;
			nx_status st = run_one(mg, passes[i], &changed);
			if (st != NX_OK)
				return st;
			any |= changed;
		}
		if (!any)
			break;
	}
	return NX_OK;
}

static nx_status run_passes(manager *mg, const nx_pass_info **list, int n)
{
	nx_status st = NX_OK;
	for (int i = 0; i < n && st == NX_OK;) {
		int j = i + 1;
		const char *g = list[i]->group;
		while (g && j < n && list[j]->group && strcmp(list[j]->group, g) == 0)
			j++;
		st = run_group(mg, list + i, j - i, g != NULL);
		i = j;
	}
	if (mg->o && mg->o->time_passes) {
		FILE *f = mg->ctx->log ? mg->ctx->log : stderr;
		double total = 0;
		for (int i = 0; i < mg->nstats; i++)
			total += mg->stats[i].seconds;
		fprintf(f, "pass timing (%.3f ms total)\n", 1e3 * total);
		for (int i = 0; i < mg->nstats; i++)
			fprintf(f, "  %-20s %9.3f ms  %3d runs  %3d changed\n", mg->stats[i].pass->name,
			        1e3 * mg->stats[i].seconds, mg->stats[i].runs, mg->stats[i].changes);
	}
	free(mg->stats);
	return st;
}

nx_status nx_pass_run_pipeline(nx_module *m, const nx_pass_ctx *ctx, const nx_pass_opts *o)
{
	const nx_pass_info *list[256];
	int n = 0;
	for (int i = 0; i < nx_pass_count() && n < 256; i++) {
		const nx_pass_info *p = &registry[i];
		if (p->min_level <= ctx->opt_level && ctx->opt_level <= p->max_level && !disabled(o, p->name))
			list[n++] = p;
	}
	manager mg = {m, ctx, o, NULL, 0, 0};
	return run_passes(&mg, list, n);
}

nx_status nx_pass_run_list(nx_module *m, const nx_pass_ctx *ctx, const nx_pass_opts *o,
                           const char *const *names, int n)
{
	const nx_pass_info **list = calloc((size_t)(n ? n : 1), sizeof(*list));
	for (int i = 0; i < n; i++) {
		list[i] = nx_pass_find(names[i]);
		if (!list[i]) {
			free(list);
			return nx_diag_set(ctx->diag, NX_ERR_INPUT, NULL, 0, 0, "unknown pass '%s'", names[i]);
		}
	}
	/* An explicit list runs each pass once, in the order given. */
	manager mg = {m, ctx, o, NULL, 0, 0};
	nx_status st = NX_OK;
	for (int i = 0; i < n && st == NX_OK; i++)
		st = run_group(&mg, &list[i], 1, false);
	free(mg.stats);
	free(list);
	return st;
}
