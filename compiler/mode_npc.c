/* compiler/mode_npc.c — nxcc installed as `neuron_parallel_compile` (a
 * symlink; argv[0] decides, compiler/main.c): the command line of
 * torch-neuronx's precompilation tool (docs/cli.md "neuron_parallel_compile
 * mode").
 *
 *     neuron_parallel_compile [--num_parallel N] [--command C] RUN COMMAND...
 *
 * C = collect: run the training command once with NEURON_EXTRACT_GRAPHS_ONLY=1
 *     and XLA dumping on, and record each graph in the compile cache as an
 *     entry without a .neff (model.hlo_module.pb + compile_flags.json);
 * C = compile: compile every such entry of the cache with its own flags,
 *     and the graphs of a Neuron cache in the same directory
 *     (neuronxcc-*\/MODULE_*\/model.hlo_module.pb or model.hlo.pb, with its
 *     compile_flags.json as a JSON list or compile_flags.txt);
 * no --command: collect, then compile;
 * C = clean: delete the cache's entries; C = clear-locks: nxcc cache clear-locks;
 * C = analyze: run the command, and write which operators of each graph
 *     nxcc cannot lower to --analyze-output (default ./model_analysis_result)/result.json.
 * A failed training run fails the command unless
 * NEURON_IGNORE_TRAINING_SCRIPT_ERROR_AND_COMPILE=1. Retries come from
 * NEURON_PARALLEL_COMPILE_MAX_RETRIES, the cache from NEURON_CC_FLAGS
 * (--cache_dir) or NEURON_COMPILE_CACHE_URL. The report,
 * neuron_parallel_compile_report.json, has Neuron's form:
 *     {"compilation_summary": {"true": N, "false": M},
 *      "compilation_report": {"<graph>": {"status": true, "retry": 0}, ...}} */
#include "compiler/cache.h"
#include "compiler/cli.h"
#include "compiler/errors.h"
#include "compiler/parallel.h"
#include "runtime-stub/json.h"

#include "backend/backend.h"

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define TOOL "neuron_parallel_compile"
#define REPORT "neuron_parallel_compile_report.json"

static void usage(FILE *f)
{
	fprintf(f, "usage: " TOOL " [--num_parallel N] [--command collect|compile|clean|clear-locks|analyze]\n"
	           "                               [--analyze-output DIR] [--analyze-verbosity 1|2] RUN COMMAND...\n\n"
	           "nxcc as torch-neuronx's precompiler: runs RUN COMMAND once to extract its graphs\n"
	           "(NEURON_EXTRACT_GRAPHS_ONLY=1, XLA dumping on), records them in the compile cache\n"
	           "and compiles them in parallel. See docs/cli.md.\n");
}

static const char *env(const char *n)
{
	const char *v = getenv(n);
	return v && *v ? v : NULL;
}

static int rm_entry(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
	(void)sb;
	(void)type;
	(void)ftw;
	remove(path);
	return 0;
}

/* Runs the training command in graph-extraction mode with XLA dumping into
 * dir. Returns its exit status (128+signal when killed; 127 when it could
 * not be started). */
static int run_trial(char **cmd, const char *dir)
{
	const char *old = getenv("XLA_FLAGS");
	char *flags = nx_xasprintf("%s%s--xla_dump_to=%s --xla_dump_hlo_as_proto", old ? old : "", old && *old ? " " : "", dir);
	fprintf(stderr, TOOL ": running %s with NEURON_EXTRACT_GRAPHS_ONLY=1 XLA_FLAGS=\"%s\"\n", cmd[0], flags);
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid == 0) {
		setenv("XLA_FLAGS", flags, 1);
		/* torch-neuronx's graph extraction mode: trace, do not execute */
		setenv("NEURON_EXTRACT_GRAPHS_ONLY", "1", 1);
		execvp(cmd[0], cmd);
		fprintf(stderr, TOOL ": error: cannot run %s: %s\n", cmd[0], strerror(errno));
		_exit(127);
	}
	free(flags);
	int ws = 0;
	if (pid < 0 || waitpid(pid, &ws, 0) < 0)
		return 127;
	return WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
}

/* ------------------------------------------------------------- collect */

/* Records every graph of the dump in the cache under the key nxcc compile
 * would use with flags f. Returns how many (or -1 on a cache error). */
static int collect(nx_cache *c, const char *dump, const nx_compile_flags *f, nx_diag *d)
{
	char **files = NULL;
	int n = 0;
	if (nx_pc_collect(dump, &files, &n, d) != NX_OK)
		return -1;
	char fh[17];
	nx_flags_hash(f, fh);
	char *flags_json = nx_flags_canonical_json(f);
	int stored = 0, rc = 0;
	for (int i = 0; i < n && rc == 0; i++) {
		nx_diag md = {0};
		nx_module *m = nx_read_file(files[i], &md);
		if (!m) {
			char *s = nx_diag_format(&md);
			fprintf(stderr, TOOL ": warning: skipping %s: %s", files[i], s);
			free(s);
			nx_diag_clear(&md);
			continue;
		}
		char fp[33];
		nx_fingerprint(m, fp);
		nx_cache_key k;
		size_t len = 0;
		void *pb = NULL;
		if (nx_cache_key_make(fp, fh, &k, d) != NX_OK || !(pb = nx_write_proto(m, &len, d)) ||
		    nx_cache_store_graph(c, &k, pb, len, flags_json, d) != NX_OK)
			rc = -1;
		else
			stored++;
		free(pb);
		nx_module_free(m);
	}
	for (int i = 0; i < n; i++)
		free(files[i]);
	free(files);
	free(flags_json);
	return rc < 0 ? -1 : stored;
}

/* ------------------------------------------------------------- compile */

typedef struct {
	char *file;   /* the graph, a local file */
	char *flags;  /* its flags as one line (words separated by spaces) */
	char *shown;  /* where the graph lives, for the report (the cache entry) */
} job;

typedef struct {
	job *v;
	int n;
} jobs;

static void add_job(jobs *js, char *file, char *flags, char *shown)
{
	job *nv = realloc(js->v, sizeof(job) * (size_t)(js->n + 1));
	if (!nv)
		abort();
	js->v = nv;
	js->v[js->n++] = (job){file, flags, shown ? shown : nx_xstrdup(file)};
}

/* nxcc's own compile_flags.json (the canonical object, docs/cli.md) back to
 * the flags that give it. NULL when it is not one. */
static char *words_from_canonical(const nx_json *j)
{
	const nx_json *t = nx_json_get(j, "target"), *mt = nx_json_get(j, "model_type"), *ac = nx_json_get(j, "auto_cast");
	const nx_json *act = nx_json_get(j, "auto_cast_type"), *ol = nx_json_get(j, "optlevel"), *lnc = nx_json_get(j, "lnc");
	const nx_json *sat = nx_json_get(j, "saturate_infinity"), *mpa = nx_json_get(j, "mixed_precision_accumulation");
	const nx_json *dp = nx_json_get(j, "disable_pass");
	if (!t || t->type != NX_J_STR || !mt || mt->type != NX_J_STR || !ac || ac->type != NX_J_STR || !ol ||
	    ol->type != NX_J_NUM || !lnc || lnc->type != NX_J_NUM)
		return NULL;
	char *s = nx_xasprintf("--target=%s --model-type=%s --auto-cast=%s -O%d --lnc=%d", t->str, mt->str, ac->str,
	                       (int)ol->num, (int)lnc->num);
	char *x;
	if (act && act->type == NX_J_STR)
		x = nx_xasprintf("%s --auto-cast-type=%s", s, act->str), free(s), s = x;
	if (sat && sat->type == NX_J_BOOL && sat->inum != 0)
		x = nx_xasprintf("%s --enable-saturate-infinity", s), free(s), s = x;
	if (mpa && mpa->type == NX_J_BOOL && mpa->inum == 0)
		x = nx_xasprintf("%s --disable-mixed-precision-accumulation", s), free(s), s = x;
	for (int i = 0; dp && dp->type == NX_J_ARR && i < dp->n; i++)
		if (dp->items[i].type == NX_J_STR)
			x = nx_xasprintf("%s --disable-pass=%s", s, dp->items[i].str), free(s), s = x;
	return s;
}

/* An entry's flags: compile_flags.json as nxcc's object or Neuron's list of
 * words, or compile_flags.txt (words). NULL when there is none. */
static char *entry_flags(const char *json, size_t jlen, const char *txt)
{
	if (txt) {
		char *s = nx_xstrdup(txt);
		for (char *p = s; *p; p++)
			if (*p == '\n' || *p == '\r')
				*p = ' ';
		return s;
	}
	if (!json)
		return NULL;
	char err[128];
	nx_json *j = nx_json_parse(json, jlen, err, sizeof(err));
	if (!j)
		return NULL;
	char *s = NULL;
	if (j->type == NX_J_OBJ) {
		s = words_from_canonical(j);
	} else if (j->type == NX_J_ARR) {
		s = nx_xstrdup("");
		for (int i = 0; i < j->n; i++) {
			if (j->items[i].type != NX_J_STR)
				continue;
			/* quoted for nx_flags_split: a flag's value may hold spaces */
			char *x = nx_xasprintf("%s%s'%s'", s, *s ? " " : "", j->items[i].str);
			free(s);
			s = x;
		}
	}
	nx_json_free(j);
	return s;
}

static char *read_text(const char *path, size_t *len)
{
	nx_diag d = {0};
	char *s = nx_read_whole_file(path, len, &d);
	nx_diag_clear(&d);
	return s;
}

static bool exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

/* A Neuron cache in the same directory: <root>/neuronxcc-*\/MODULE_*\/ with
 * a graph and no model.done (Neuron's marker of a finished compile). */
static void scan_neuron_layout(const char *root, jobs *js)
{
	DIR *r = opendir(root);
	if (!r)
		return;
	struct dirent *v;
	while ((v = readdir(r))) {
		if (strncmp(v->d_name, "neuronxcc-", 10) != 0)
			continue;
		char *vdir = nx_xasprintf("%s/%s", root, v->d_name);
		DIR *e = opendir(vdir);
		struct dirent *m;
		while (e && (m = readdir(e))) {
			if (strncmp(m->d_name, "MODULE_", 7) != 0)
				continue;
			char *dir = nx_xasprintf("%s/%s", vdir, m->d_name);
			char *pb = nx_xasprintf("%s/model.hlo_module.pb", dir);
			if (!exists(pb)) {
				free(pb);
				pb = nx_xasprintf("%s/model.hlo.pb", dir);
			}
			char *done = nx_xasprintf("%s/model.done", dir), *neff = nx_xasprintf("%s/model.neff", dir);
			if (exists(pb) && !exists(done) && !exists(neff)) {
				char *jp = nx_xasprintf("%s/compile_flags.json", dir), *tp = nx_xasprintf("%s/compile_flags.txt", dir);
				size_t jl = 0, tl = 0;
				char *json = read_text(jp, &jl), *txt = json ? NULL : read_text(tp, &tl);
				char *fl = entry_flags(json, jl, txt);
				if (!fl && (json || txt))
					fprintf(stderr, TOOL ": warning: %s: cannot read its compile flags; compiling with the defaults\n", dir);
				add_job(js, pb, fl ? fl : nx_xstrdup(""), NULL);
				pb = NULL;
				free(json);
				free(txt);
				free(jp);
				free(tp);
			}
			free(pb);
			free(done);
			free(neff);
			free(dir);
		}
		if (e)
			closedir(e);
		free(vdir);
	}
	closedir(r);
}

/* nxcc's own collected entries (incomplete: a graph, no model.done), copied
 * to local files in tmp (the cache may be on S3). */
static void scan_collected(nx_cache *c, const char *tmp, jobs *js, nx_diag *d)
{
	nx_cache_entry *e;
	int n;
	if (nx_cache_list(c, &e, &n, d) != NX_OK)
		return;
	char ver[64];
	snprintf(ver, sizeof(ver), "nxcc-%s", NX_VERSION);
	for (int i = 0; i < n; i++) {
		if (e[i].state != NX_ENTRY_INCOMPLETE || strcmp(e[i].version, ver) != 0)
			continue;
		uint8_t *pb = NULL, *fj = NULL;
		size_t pl = 0, fl = 0;
		nx_diag rd = {0};
		if (nx_cache_read_obj(c, e[i].version, e[i].key, "model.hlo_module.pb", &pb, &pl, &rd) == 1 &&
		    nx_cache_read_obj(c, e[i].version, e[i].key, "compile_flags.json", &fj, &fl, &rd) == 1) {
			char *flags = entry_flags((const char *)fj, fl, NULL);
			char *path = nx_xasprintf("%s/%s.hlo_module.pb", tmp, e[i].key);
			if (flags && nx_cli_write_file_nosync(path, pb, pl, &rd) == NX_OK) {
				add_job(js, path, flags,
				        nx_xasprintf("%s/%s/%s/model.hlo_module.pb", nx_cache_url(c), e[i].version, e[i].key));
				path = flags = NULL;
			}
			free(path);
			free(flags);
		}
		nx_diag_clear(&rd);
		free(pb);
		free(fj);
	}
	nx_cache_entries_free(e, n);
}

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			fprintf(f, "\\u%04x", *s);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}

/* Compiles the jobs, one parallel-compile run per distinct flag set, and
 * writes Neuron's report. Returns the exit status. */
static int compile_jobs(jobs *js, const char *tmp, int num_parallel, int retries, const char *cache_url)
{
	FILE *rep = fopen(REPORT ".tmp", "w");
	if (!rep) {
		fprintf(stderr, TOOL ": error: " NX_E_IO ": cannot write " REPORT ": %s\n", strerror(errno));
		return NX_EXIT_USER;
	}
	fprintf(rep, "{\"compilation_summary\": {\"true\": %%TRUE%%, \"false\": %%FALSE%%}, \"compilation_report\": {");
	int ok = 0, bad = 0, group = 0, rc = 0;
	bool *done = calloc((size_t)js->n + 1, sizeof(bool));
	char **files = calloc((size_t)js->n + 1, sizeof(char *));
	if (!done || !files)
		abort();
	fprintf(stderr, TOOL ": compile cache path: %s; %d graphs to compile\n", cache_url, js->n);
	for (int i = 0; i < js->n; i++) {
		if (done[i])
			continue;
		int nf = 0;
		for (int k = i; k < js->n; k++)
			if (!done[k] && strcmp(js->v[k].flags, js->v[i].flags) == 0) {
				files[nf++] = js->v[k].file;
				done[k] = true;
			}
		char **words = NULL;
		nx_diag d = {0};
		int nw = nx_flags_split(js->v[i].flags, &words, &d);
		nx_compile_flags f;
		char *rpath = nx_xasprintf("%s/report-%d.json", tmp, group++);
		/* the graph's own flags, leniently: a Neuron flag nxcc does not
		 * know is dropped (as from NEURON_CC_FLAGS), not a failure */
		char **keep = calloc((size_t)(nw > 0 ? nw : 0) + 3, sizeof(char *));
		int nk = 0;
		if (!keep)
			abort();
		for (int w = 0; w < nw; w++) {
			/* a flag alone, or with the next word as its value */
			int took = 0;
			for (int len = 1; len <= 2 && !took && w + len <= nw; len++) {
				nx_compile_flags one;
				nx_diag od = {0};
				/* probed on trn2, where every --lnc is valid: the whole set is
				 * checked together below */
				char *probe[3] = {"--target=trn2", words[w], len == 2 ? words[w + 1] : NULL};
				if (nx_flags_parse(len + 1, probe, NULL, &one, &od) == NX_OK && one.n_inputs == 0)
					took = len;
				nx_flags_free(&one);
				nx_diag_clear(&od);
			}
			/* where output goes and what is logged stay ours */
			bool ours = !strncmp(words[w], "--output", 8) || !strncmp(words[w], "--logfile", 9) ||
			            !strncmp(words[w], "--cache", 7) || !strncmp(words[w], "--verbose", 9);
			for (int k = 0; k < took && !ours; k++)
				keep[nk++] = words[w + k];
			w += took ? took - 1 : 0;
		}
		keep[nk++] = "--cache-dir";
		keep[nk++] = (char *)cache_url;
		if (nw < 0 || nx_flags_parse(nk, keep, getenv("NEURON_CC_FLAGS"), &f, &d) != NX_OK) {
			fprintf(stderr, TOOL ": error: flags '%s': %s\n", js->v[i].flags, d.msg ? d.msg : "cannot split");
			for (int k = 0; k < nf; k++) {
				fprintf(rep, "%s", ok + bad ? ", " : "");
				const char *shown = files[k];
				for (int x = 0; x < js->n; x++)
					if (!strcmp(js->v[x].file, shown))
						shown = js->v[x].shown;
				json_str(rep, shown);
				fprintf(rep, ": {\"status\": false, \"retry\": 0}");
				bad++;
			}
			rc = NX_EXIT_USER;
		} else {
			nx_pc_opts o = {.jobs = num_parallel, .retries = retries, .shard_n = 1, .report = rpath, .quiet = true,
			                .flag_argv = keep, .flag_argc = nk, .flags = &f};
			int r = nx_pc_run(files, nf, &o);
			if (r != 0)
				rc = NX_EXIT_USER;
			size_t len = 0;
			char *text = read_text(rpath, &len);
			char err[128];
			nx_json *j = text ? nx_json_parse(text, len, err, sizeof(err)) : NULL;
			const nx_json *gs = j ? nx_json_get(j, "graphs") : NULL;
			for (int k = 0; gs && gs->type == NX_J_ARR && k < gs->n; k++) {
				const nx_json *file = nx_json_get(&gs->items[k], "file"), *st = nx_json_get(&gs->items[k], "status");
				const nx_json *re = nx_json_get(&gs->items[k], "retries");
				bool good = st && st->type == NX_J_STR && strcmp(st->str, "failed") != 0;
				fprintf(rep, "%s", ok + bad ? ", " : "");
				const char *shown = file && file->type == NX_J_STR ? file->str : "?";
				for (int x = 0; x < js->n; x++)
					if (!strcmp(js->v[x].file, shown))
						shown = js->v[x].shown;
				json_str(rep, shown);
				fprintf(rep, ": {\"status\": %s, \"retry\": %d}", good ? "true" : "false",
				        re && re->type == NX_J_NUM ? (int)re->num : 0);
				good ? ok++ : bad++;
			}
			nx_json_free(j);
			free(text);
		}
		nx_flags_free(&f);
		nx_diag_clear(&d);
		for (int w = 0; w < nw; w++)
			free(words[w]);
		free(words);
		free(keep);
		free(rpath);
	}
	fprintf(rep, "}}\n");
	fclose(rep);
	/* the counts go in front: rewrite the placeholders */
	size_t len = 0;
	char *text = read_text(REPORT ".tmp", &len);
	unlink(REPORT ".tmp");
	char *a = text ? strstr(text, "%TRUE%") : NULL, *b = text ? strstr(text, "%FALSE%") : NULL;
	FILE *out = fopen(REPORT, "w");
	if (a && b && out) {
		fprintf(out, "%.*s%d%.*s%d%s", (int)(a - text), text, ok, (int)(b - a - 6), a + 6, bad, b + 7);
		fclose(out);
	} else {
		if (out)
			fclose(out);
		fprintf(stderr, TOOL ": error: " NX_E_IO ": cannot write " REPORT "\n");
		rc = NX_EXIT_USER;
	}
	free(text);
	free(done);
	free(files);
	printf(TOOL ": Total graphs: %d\n" TOOL ": Total successful compilations: %d\n" TOOL
	       ": Total failed compilations: %d\nreport: " REPORT "\n",
	       ok + bad, ok, bad);
	if (bad)
		fprintf(stderr, TOOL ": error: " NX_E_PC_FAILED ": %d of %d graphs failed to compile (see " REPORT ")\n", bad,
		        ok + bad);
	return bad ? NX_EXIT_USER : rc;
}

/* ------------------------------------------------------------- analyze */

static int analyze(const char *dump, const char *outdir, int verbosity)
{
	char **files = NULL;
	int n = 0;
	nx_diag d = {0};
	if (nx_pc_collect(dump, &files, &n, &d) != NX_OK)
		return nx_cli_report(&d);
	mkdir(outdir, 0777);
	char *path = nx_xasprintf("%s/result.json", outdir);
	FILE *f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, TOOL ": error: " NX_E_IO ": cannot write %s: %s\n", path, strerror(errno));
		free(path);
		return NX_EXIT_USER;
	}
	int unsupported = 0;
	fprintf(f, "{\"graphs\": [");
	for (int i = 0; i < n; i++) {
		nx_module *m = nx_read_file(files[i], &d);
		fprintf(f, "%s{\"file\": ", i ? ", " : "");
		json_str(f, files[i]);
		if (!m) {
			fprintf(f, ", \"error\": ");
			json_str(f, d.msg ? d.msg : "unreadable");
			fprintf(f, "}");
			nx_diag_clear(&d);
			continue;
		}
		fprintf(f, ", \"unsupported\": [");
		int k = 0;
		for (int c = 0; c < m->ncomps; c++)
			for (int x = 0; x < m->comps[c]->ninsts; x++) {
				const nx_inst *in = m->comps[c]->insts[x];
				bool ok = nx_lower_supports(in->op);
				if (in->op == NX_OP_CUSTOM_CALL) {
					ok = false;
					for (int t = 0; nx_lower_custom_calls[t] && in->a.custom_call_target; t++)
						ok |= strcmp(nx_lower_custom_calls[t], in->a.custom_call_target) == 0;
				}
				if (ok)
					continue;
				fprintf(f, "%s{\"operator\": ", k++ ? ", " : "");
				json_str(f, in->op == NX_OP_CUSTOM_CALL && in->a.custom_call_target ? in->a.custom_call_target
				                                                                   : nx_opcode_name(in->op));
				if (verbosity >= 2) {
					fprintf(f, ", \"instruction\": ");
					json_str(f, in->name);
				}
				fprintf(f, "}");
				unsupported++;
			}
		fprintf(f, "]}");
		nx_module_free(m);
	}
	fprintf(f, "], \"unsupported_total\": %d}\n", unsupported);
	fclose(f);
	printf(TOOL ": analyzed %d graphs, %d unsupported operators; result: %s\n", n, unsupported, path);
	free(path);
	for (int i = 0; i < n; i++)
		free(files[i]);
	free(files);
	return 0;
}

/* --------------------------------------------------------------- main */

static int opt(int argc, char **argv, int *i, const char *name, const char **val)
{
	size_t l = strlen(name);
	if (strncmp(argv[*i], name, l) != 0)
		return 0;
	if (argv[*i][l] == '=') {
		*val = argv[*i] + l + 1;
		return 1;
	}
	if (argv[*i][l] || *i + 1 >= argc)
		return argv[*i][l] ? 0 : -1;
	*val = argv[++*i];
	return 1;
}

int nx_npc_main(int argc, char **argv)
{
	const char *command = NULL, *num = NULL, *aout = "model_analysis_result", *averb = "2";
	int i = 1;
	for (; i < argc && argv[i][0] == '-'; i++) {
		const char *v;
		int r;
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(stdout);
			return 0;
		}
		if (!strcmp(argv[i], "--")) {
			i++;
			break;
		}
		static const char *const names[] = {"--command", "--num_parallel", "--analyze-output", "--analyze-verbosity"};
		const char **slots[] = {&command, &num, &aout, &averb};
		bool matched = false;
		for (int k = 0; k < 4 && !matched; k++) {
			if (!(r = opt(argc, argv, &i, names[k], &v)))
				continue;
			if (r < 0) {
				fprintf(stderr, TOOL ": error: " NX_E_ARG_VALUE ": %s needs a value\n", names[k]);
				return NX_EXIT_USER;
			}
			*slots[k] = v;
			matched = true;
		}
		if (matched)
			continue;
		fprintf(stderr, TOOL ": error: " NX_E_ARG_UNKNOWN ": unknown option '%s' (--num_parallel, --command, "
		                "--analyze-output, --analyze-verbosity; the run command follows them)\n", argv[i]);
		return NX_EXIT_USER;
	}
	char **cmd = i < argc ? argv + i : NULL;
	static const char *const commands[] = {"collect", "compile", "clean", "clear-locks", "analyze", NULL};
	bool known = !command;
	for (int k = 0; commands[k] && command; k++)
		known |= !strcmp(command, commands[k]);
	if (!known) {
		fprintf(stderr, TOOL ": error: " NX_E_ARG_VALUE ": invalid --command '%s' (collect, compile, clean, "
		                "clear-locks, analyze)\n", command);
		return NX_EXIT_USER;
	}
	int jobs_n = (int)sysconf(_SC_NPROCESSORS_ONLN), retries = 0;
	if (num && ((jobs_n = atoi(num)) < 1)) {
		fprintf(stderr, TOOL ": error: " NX_E_ARG_VALUE ": bad --num_parallel '%s'\n", num);
		return NX_EXIT_USER;
	}
	if (jobs_n < 1)
		jobs_n = 1;
	const char *mr = env("NEURON_PARALLEL_COMPILE_MAX_RETRIES");
	if (mr && (retries = atoi(mr)) < 0)
		retries = 0;
	bool needs_cmd = !command || !strcmp(command, "collect") || !strcmp(command, "analyze");
	if (needs_cmd && !cmd) {
		usage(stderr);
		fprintf(stderr, TOOL ": error: " NX_E_ARG_INPUTS ": no run command\n");
		return NX_EXIT_USER;
	}

	/* the flags and cache of the graphs: NEURON_CC_FLAGS, as the framework's */
	nx_compile_flags f;
	nx_diag d = {0};
	if (nx_flags_parse(0, NULL, getenv("NEURON_CC_FLAGS"), &f, &d) != NX_OK) {
		nx_flags_free(&f);
		return nx_cli_report(&d);
	}
	nx_log quiet = {.console = NX_LOG_WARNING};
	nx_flags_warn_unknown(&quiet, &f);
	const char *url = nx_cache_location(f.cache_dir);
	int rc = 0;
	nx_cache *c = NULL;
	const char *tmpdir = env("TMPDIR") ? env("TMPDIR") : "/tmp";
	char tmp[4096];
	snprintf(tmp, sizeof(tmp), "%s/nxcc-npc-XXXXXX", tmpdir);
	if (!mkdtemp(tmp)) {
		fprintf(stderr, TOOL ": error: " NX_E_IO ": cannot create %s: %s\n", tmp, strerror(errno));
		nx_flags_free(&f);
		return NX_EXIT_USER;
	}
	bool maint = command && (!strcmp(command, "clean") || !strcmp(command, "clear-locks"));
	if ((maint ? nx_cache_open_existing(url, &c, &d) : nx_cache_open(url, &c, &d)) != NX_OK) {
		rc = nx_cli_report(&d);
		goto out;
	}
	fprintf(stderr, TOOL ": compile cache path: %s\n", nx_cache_url(c));
	if (command && !strcmp(command, "clear-locks")) {
		printf(TOOL ": removed %d unused lock files\n", nx_cache_clear_locks(c));
		goto out;
	}
	if (command && !strcmp(command, "clean")) {
		nx_cache_entry *e;
		int n, removed = 0;
		if (nx_cache_list(c, &e, &n, &d) != NX_OK) {
			rc = nx_cli_report(&d);
			goto out;
		}
		for (int k = 0; k < n && rc == 0; k++) {
			if (nx_cache_entry_busy(c, e[k].version, e[k].key))
				continue;
			if (nx_cache_remove_entry(c, e[k].version, e[k].key, &d) != NX_OK)
				rc = nx_cli_report(&d);
			else
				removed++;
		}
		nx_cache_entries_free(e, n);
		printf(TOOL ": removed %d cache entries from %s\n", removed, nx_cache_url(c));
		goto out;
	}
	if (cmd) {
		char *dump = nx_xasprintf("%s/xla-dump", tmp);
		mkdir(dump, 0700);
		int st = run_trial(cmd, dump);
		const char *ignore = env("NEURON_IGNORE_TRAINING_SCRIPT_ERROR_AND_COMPILE");
		if (st != 0 && !(ignore && strcmp(ignore, "0") != 0)) {
			fprintf(stderr, TOOL ": error: " NX_E_TRIAL ": %s exited with status %d; set "
			                "NEURON_IGNORE_TRAINING_SCRIPT_ERROR_AND_COMPILE=1 to compile the graphs it produced\n",
			        cmd[0], st);
			free(dump);
			rc = NX_EXIT_USER;
			goto out;
		}
		if (st != 0)
			fprintf(stderr, TOOL ": warning: %s exited with status %d; compiling the graphs it produced "
			                "(NEURON_IGNORE_TRAINING_SCRIPT_ERROR_AND_COMPILE)\n", cmd[0], st);
		if (command && !strcmp(command, "analyze")) {
			rc = analyze(dump, aout, atoi(averb));
			free(dump);
			goto out;
		}
		int got = collect(c, dump, &f, &d);
		free(dump);
		if (got < 0) {
			rc = nx_cli_report(&d);
			goto out;
		}
		fprintf(stderr, TOOL ": extracted %d graphs into %s for ahead-of-time parallel compilation\n", got,
		        nx_cache_url(c));
		if (command && !strcmp(command, "collect"))
			goto out;
	}
	jobs js = {0};
	scan_collected(c, tmp, &js, &d);
	nx_diag_clear(&d);
	if (strcmp(nx_cache_kind(c), "dir") == 0)
		scan_neuron_layout(nx_cache_url(c), &js);
	char *url_copy = nx_xstrdup(nx_cache_url(c));
	nx_cache_close(c);
	c = NULL;
	rc = compile_jobs(&js, tmp, jobs_n, retries, url_copy);
	free(url_copy);
	for (int k = 0; k < js.n; k++) {
		free(js.v[k].file);
		free(js.v[k].flags);
		free(js.v[k].shown);
	}
	free(js.v);
out:
	nx_cache_close(c);
	nx_flags_free(&f);
	nx_diag_clear(&d);
	nftw(tmp, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	return rc;
}
