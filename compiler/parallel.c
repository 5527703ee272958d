/* compiler/parallel.c — nxcc parallel-compile: find, key, de-duplicate,
 * shard, and compile graphs with worker processes (compiler/parallel.h). */
#include "compiler/parallel.h"
#include "compiler/cache.h"
#include "compiler/cli.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The subcommand a worker runs for one graph: "compile" (`nxcc compile FILE
 * FLAGS --output OUT`) or "test-compile", the cache protocol's stand-in with
 * a fake compiler (`nxcc cache test-compile --key FINGERPRINT ...`). Tests
 * of the scheduler pick the stand-in with NXCC_TEST_PC_WORKER so they do not
 * depend on what the backend can lower. */
static const char *const default_worker = "compile";

static bool worker_is_compile(void)
{
	const char *hooks = getenv("NXCC_TEST_HOOKS");
	const char *w = hooks && strcmp(hooks, "1") == 0 ? getenv("NXCC_TEST_PC_WORKER") : NULL;
	return strcmp(w && *w ? w : default_worker, "compile") == 0;
}

static bool ends_with(const char *s, const char *suf)
{
	size_t a = strlen(s), b = strlen(suf);
	return a >= b && strcmp(s + a - b, suf) == 0;
}

/* ------------------------------------------------------------ collecting */

/* XLA dump names: [<timestamp>.]module_<NNNN>.<module name>.<stage>.<ext>. */
static const char *xla_dump_rest(const char *name)
{
	const char *p = name;
	while (*p >= '0' && *p <= '9')
		p++;
	if (p != name && *p == '.')
		p++;
	else
		p = name;
	if (strncmp(p, "module_", 7) != 0)
		return NULL;
	p += 7;
	const char *q = p;
	while (*q >= '0' && *q <= '9')
		q++;
	if (q == p || (*q != '.' && *q != 0))
		return NULL;
	return q;
}

nx_pc_kind nx_pc_classify(const char *name)
{
	if (name[0] == '.')
		return NX_PC_SKIP;
	if (xla_dump_rest(name)) {
		/* XLA writes each module at several stages; only the module as the
		 * framework handed it over is what a compiler receives. */
		const char *b = strstr(name, ".before_optimizations.");
		if (!b || strstr(name, "buffer-assignment") || strstr(name, ".ir-"))
			return NX_PC_SKIP;
		const char *ext = b + strlen(".before_optimizations.");
		if (strcmp(ext, "txt") == 0 || strcmp(ext, "hlo") == 0 || strcmp(ext, "hlo.txt") == 0)
			return NX_PC_TEXT;
		if (strcmp(ext, "hlo.pb") == 0 || strcmp(ext, "pb") == 0 || strcmp(ext, "hlo_module.pb") == 0)
			return NX_PC_PROTO;
		return NX_PC_SKIP; /* .hlo.pb.gz, .dot, .html, .pbtxt, ... */
	}
	if (ends_with(name, ".hlo_snapshot.pb") || strstr(name, "after_optimizations"))
		return NX_PC_SKIP;
	if (ends_with(name, ".hlo") || ends_with(name, ".hlo.txt"))
		return NX_PC_TEXT;
	if (ends_with(name, ".hlo_module.pb") || ends_with(name, ".pb"))
		return NX_PC_PROTO;
	return NX_PC_SKIP;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The part of an XLA dump name before ".before_optimizations." (NULL when
 * the name is not one). */
static size_t dump_stem_len(const char *name)
{
	const char *b = strstr(name, ".before_optimizations.");
	return xla_dump_rest(name) && b ? (size_t)(b - name) : 0;
}

/* Directories already scanned, by device and inode: a bind mount or a
 * hard-linked loop is scanned once. */
typedef struct {
	dev_t *dev;
	ino_t *ino;
	int n;
} dir_set;

static bool dir_seen(dir_set *v, const struct stat *sb)
{
	for (int i = 0; i < v->n; i++)
		if (v->dev[i] == sb->st_dev && v->ino[i] == sb->st_ino)
			return true;
	v->dev = nx_xrealloc(v->dev, sizeof(dev_t) * (size_t)(v->n + 1));
	v->ino = nx_xrealloc(v->ino, sizeof(ino_t) * (size_t)(v->n + 1));
	v->dev[v->n] = sb->st_dev;
	v->ino[v->n++] = sb->st_ino;
	return false;
}

/* Symlinks to directories are never followed (they could lead out of the
 * tree or back into it: a few loops made the scan exponential); symlinks
 * to files are taken. */
static nx_status scan_dir(const char *dir, int depth, dir_set *seen, char ***files, int *n, nx_diag *d)
{
	if (depth > 16)
		return NX_OK;
	DIR *dp = opendir(dir);
	if (!dp)
		return nx_diag_set(d, NX_ERR_IO, dir, 0, 0, "cannot read directory: %s", strerror(errno));
	char **names = NULL;
	int nn = 0;
	struct dirent *e;
	while ((e = readdir(dp))) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		names = nx_xrealloc(names, sizeof(char *) * (size_t)(nn + 1));
		names[nn++] = nx_xstrdup(e->d_name);
	}
	closedir(dp);
	qsort(names, (size_t)nn, sizeof(char *), cmp_str);
	nx_status st = NX_OK;
	for (int i = 0; i < nn && st == NX_OK; i++) {
		size_t len = strlen(dir) + strlen(names[i]) + 2;
		char *path = malloc(len);
		if (!path)
			abort();
		snprintf(path, len, "%s/%s", dir, names[i]);
		struct stat sb;
		bool link = lstat(path, &sb) == 0 && S_ISLNK(sb.st_mode);
		if (link && stat(path, &sb) != 0)
			memset(&sb, 0, sizeof sb); /* dangling: skipped below */
		if (S_ISDIR(sb.st_mode)) {
			if (!link && !dir_seen(seen, &sb))
				st = scan_dir(path, depth + 1, seen, files, n, d);
			free(path);
			continue;
		}
		nx_pc_kind k = nx_pc_classify(names[i]);
		size_t stem = dump_stem_len(names[i]);
		if (k == NX_PC_TEXT && stem) {
			/* with --xla_dump_hlo_as_text and _as_proto both, one module is
			 * written twice: keep the proto, which is exact */
			for (int j = 0; j < nn; j++)
				if (j != i && dump_stem_len(names[j]) == stem && strncmp(names[j], names[i], stem) == 0 &&
				    nx_pc_classify(names[j]) == NX_PC_PROTO)
					k = NX_PC_SKIP;
		}
		if (k == NX_PC_SKIP || !S_ISREG(sb.st_mode)) {
			free(path);
			continue;
		}
		*files = nx_xrealloc(*files, sizeof(char *) * (size_t)(*n + 1));
		(*files)[(*n)++] = path;
	}
	for (int i = 0; i < nn; i++)
		free(names[i]);
	free(names);
	return st;
}

nx_status nx_pc_collect(const char *path, char ***files, int *n, nx_diag *d)
{
	struct stat sb;
	if (stat(path, &sb) != 0)
		return nx_diag_set(d, NX_ERR_IO, path, 0, 0, "cannot open: %s", strerror(errno));
	if (S_ISDIR(sb.st_mode)) {
		size_t len = strlen(path);
		char *p = nx_xstrdup(path);
		while (len > 1 && p[len - 1] == '/')
			p[--len] = 0;
		dir_set seen = {0};
		dir_seen(&seen, &sb);
		nx_status st = scan_dir(p, 0, &seen, files, n, d);
		free(seen.dev);
		free(seen.ino);
		free(p);
		return st;
	}
	/* a file named on the command line is taken whatever its name */
	*files = nx_xrealloc(*files, sizeof(char *) * (size_t)(*n + 1));
	(*files)[(*n)++] = nx_xstrdup(path);
	return NX_OK;
}

int nx_pc_shard_of(const char *key, int shard_n)
{
	uint8_t h[32];
	nx_sha256(key, strlen(key), h);
	uint32_t v = (uint32_t)h[0] << 24 | (uint32_t)h[1] << 16 | (uint32_t)h[2] << 8 | h[3];
	return (int)(v % (uint32_t)shard_n);
}

/* ------------------------------------------------------------- the graphs */

typedef struct graph {
	char *file;
	char fp[33];
	nx_cache_key key;      /* name[0] == 0: the file could not be read */
	nx_pc_status status;
	double seconds;
	int retries;           /* attempts after the first */
	char *error;
	char *where;           /* cache hit: where it came from */
	/* while running */
	pid_t pid;
	double started, attempt_started;
	bool timed_out;
	char *log;
} graph;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static const char *status_name(nx_pc_status s)
{
	switch (s) {
	case NX_PC_COMPILED: return "compiled";
	case NX_PC_CACHED: return "cached";
	case NX_PC_FAILED: return "failed";
	default: return "pending";
	}
}

/* One line of the compile's output that says what went wrong: the first
 * line with "error", else the last non-empty line. malloc'd or NULL. */
static char *log_error_line(const char *text)
{
	if (!text)
		return NULL;
	const char *best = NULL, *last = NULL;
	size_t best_n = 0, last_n = 0;
	for (const char *p = text; *p;) {
		const char *e = strchr(p, '\n');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		if (n) {
			last = p;
			last_n = n;
			if (!best && (memmem(p, n, "error", 5) || memmem(p, n, "Error", 5))) {
				best = p;
				best_n = n;
			}
		}
		p += n + (e ? 1 : 0);
	}
	if (!best) {
		best = last;
		best_n = last_n;
	}
	if (!best)
		return NULL;
	if (best_n > 1000)
		best_n = 1000;
	char *s = malloc(best_n + 1);
	if (!s)
		abort();
	memcpy(s, best, best_n);
	s[best_n] = 0;
	return s;
}

static char *read_log(const char *path)
{
	nx_diag d = {0};
	size_t len;
	char *s = nx_cli_read_file(path, &len, &d);
	nx_diag_clear(&d);
	return s;
}

/* ------------------------------------------------------------ the workers */

static char self_exe[4096];

static const char *exe_path(void)
{
	if (!self_exe[0]) {
		ssize_t n = readlink("/proc/self/exe", self_exe, sizeof(self_exe) - 1);
		if (n <= 0)
			snprintf(self_exe, sizeof(self_exe), "/proc/self/exe");
		else
			self_exe[n] = 0;
	}
	return self_exe;
}

static pid_t start_worker(graph *g, const nx_pc_opts *o, const char *out, bool retry)
{
	char **argv = calloc((size_t)o->flag_argc + 16, sizeof(char *));
	if (!argv)
		abort();
	int k = 0;
	argv[k++] = (char *)exe_path();
	bool hang = false;
	if (worker_is_compile()) {
		argv[k++] = "compile";
		argv[k++] = g->file;
	} else {
		argv[k++] = "cache";
		argv[k++] = "test-compile";
		argv[k++] = "--key";
		argv[k++] = g->fp;
		/* the real compile honors NXCC_TEST_HANG_ON itself */
		const char *h = getenv("NXCC_TEST_HANG_ON");
		const char *base = strrchr(g->file, '/');
		hang = h && getenv("NXCC_TEST_HOOKS") && strcmp(getenv("NXCC_TEST_HOOKS"), "1") == 0 && strcmp(h, base ? base + 1 : g->file) == 0;
		if (hang) {
			argv[k++] = "--sleep";
			argv[k++] = "100000";
		}
	}
	for (int i = 0; i < o->flag_argc; i++)
		argv[k++] = o->flag_argv[i];
	argv[k++] = "--output";
	argv[k++] = (char *)out;
	/* the last --logfile wins over the user's and NEURON_CC_FLAGS': one file
	 * per worker, appended to the run's log when the graph is done */
	char *wlog = NULL;
	if (o->log && o->log->file) {
		wlog = nx_xasprintf("%s.compile-log", g->log);
		argv[k++] = "--logfile";
		argv[k++] = wlog;
	}
	if (retry)
		argv[k++] = "--retry-failed";
	argv[k] = NULL;
	fflush(stdout);
	fflush(stderr);
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid == 0) {
		/* A parent killed outright (SIGKILL, OOM) takes its workers along:
		 * no orphan compiles running on into a cache the rerun uses. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(137);
		int fd = open(g->log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		int in = open("/dev/null", O_RDONLY);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		if (in >= 0)
			dup2(in, 0);
		execv(argv[0], argv);
		dprintf(2, "nxcc parallel-compile: error: cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	free(wlog);
	free(argv);
	return pid;
}

/* ---------------------------------------------------------------- output */

static void json_str(FILE *f, const char *s)
{
	if (!s) {
		fputs("null", f);
		return;
	}
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p < 0x20)
			fprintf(f, "\\u%04x", *p);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}

typedef struct counts {
	int total, compiled, cached, failed, running, done;
} counts;

static counts count(const graph *g, int n)
{
	counts c = {0};
	c.total = n;
	for (int i = 0; i < n; i++) {
		c.compiled += g[i].status == NX_PC_COMPILED;
		c.cached += g[i].status == NX_PC_CACHED;
		c.failed += g[i].status == NX_PC_FAILED;
		c.running += g[i].status == NX_PC_RUNNING;
	}
	c.done = c.compiled + c.cached + c.failed;
	return c;
}

static nx_status write_report(const char *path, const graph *g, int n, double seconds, nx_diag *d)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		abort();
	counts c = count(g, n);
	fprintf(f, "{\"total\":%d,\"compiled\":%d,\"cached\":%d,\"failed\":%d,\"seconds\":%.3f,\"graphs\":[", c.total,
	        c.compiled, c.cached, c.failed, seconds);
	for (int i = 0; i < n; i++) {
		fputs(i ? ",\n" : "\n", f);
		fputs("{\"file\":", f);
		json_str(f, g[i].file);
		fputs(",\"key\":", f);
		json_str(f, g[i].key.name[0] ? g[i].key.name : NULL);
		fprintf(f, ",\"status\":\"%s\",\"seconds\":%.3f,\"retries\":%d,\"error\":", status_name(g[i].status),
		        g[i].seconds, g[i].retries);
		json_str(f, g[i].error);
		fputc('}', f);
	}
	fputs("]}\n", f);
	fclose(f);
	nx_status st = nx_cli_write_file(path, buf, len, d);
	free(buf);
	return st;
}

typedef struct progress {
	bool tty, quiet;
	bool line_open; /* a \r line is on the terminal */
	double t0;
	int done;
} progress;

static void progress_line(progress *p, const graph *g, int n)
{
	if (p->quiet || !p->tty)
		return;
	counts c = count(g, n);
	fprintf(stderr, "\r[%d/%d] %d compiled, %d cached, %d failed, %d running  %.1fs   ", c.done, c.total,
	        c.compiled, c.cached, c.failed, c.running, now_s() - p->t0);
	fflush(stderr);
	p->line_open = true;
}

static void progress_done(progress *p, const graph *g, int n, const graph *x)
{
	p->done++;
	if (p->quiet)
		return;
	if (p->tty) {
		if (x->status == NX_PC_FAILED) {
			fprintf(stderr, "\r\033[K%s: failed: %s\n", x->file, x->error ? x->error : "?");
			p->line_open = false;
		}
		progress_line(p, g, n);
		return;
	}
	fprintf(stderr, "[%d/%d] %s %s (%.2fs)%s%s\n", p->done, n, status_name(x->status), x->file,
	        x->seconds, x->error ? ": " : "", x->error ? x->error : "");
}

/* ------------------------------------------------------------------- run */

static volatile sig_atomic_t interrupted;
static void on_signal(int sig)
{
	interrupted = sig;
}

static void finish_attempt(graph *g, int wstatus, const nx_pc_opts *o, bool *again)
{
	double t = now_s();
	char *log = read_log(g->log);
	char *line = log_error_line(log);
	*again = false;
	bool ok = WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0 && !g->timed_out;
	free(g->error);
	g->error = NULL;
	if (ok) {
		g->status = log && strstr(log, "cache hit") ? NX_PC_CACHED : NX_PC_COMPILED;
	} else {
		if (g->timed_out)
			g->error = nx_xasprintf("timed out after %gs (compile killed)", o->timeout);
		else if (WIFSIGNALED(wstatus))
			g->error = nx_xasprintf("compiler killed by signal %d (%s)%s%s", WTERMSIG(wstatus),
			               strsignal(WTERMSIG(wstatus)), line ? ": " : "", line ? line : "");
		else
			g->error = line ? nx_xstrdup(line) : nx_xasprintf("compiler exited with status %d", WEXITSTATUS(wstatus));
		if (g->retries < o->retries && !interrupted) {
			g->retries++;
			*again = true;
		} else {
			g->status = NX_PC_FAILED;
		}
	}
	g->seconds = t - g->started;
	g->pid = 0;
	if (o->log && o->log->file) {
		nx_log_filef(o->log, ok ? NX_LOG_INFO : NX_LOG_ERROR, "%s: %s%s (%.3f s)%s%s", g->file,
		        ok ? status_name(g->status) : "attempt failed", *again ? ", retrying" : "", g->seconds,
		        g->error ? ": " : "", g->error ? g->error : "");
		char *wpath = nx_xasprintf("%s.compile-log", g->log);
		char *wtext = read_log(wpath);
		if (wtext)
			fputs(wtext, o->log->file);
		free(wtext);
		unlink(wpath);
		free(wpath);
	}
	free(line);
	free(log);
}

static char *out_path(const char *workdir, const nx_pc_opts *o, const graph *g, int idx)
{
	if (o->output_dir)
		return nx_xasprintf("%s/%s.neff", o->output_dir, g->key.name);
	return nx_xasprintf("%s/g%04d.neff", workdir, idx);
}

static void rm_rf_workdir(const char *dir);

/* Work directories are $TMPDIR/nxcc-parallel-XXXXXX, each with an "owner"
 * file its run holds flock(2) on. A run killed outright leaves its directory
 * behind; the next run removes every one whose owner lock it can take. */
static void sweep_workdirs(const char *tmp)
{
	DIR *dp = opendir(tmp);
	if (!dp)
		return;
	struct dirent *e;
	while ((e = readdir(dp))) {
		if (strncmp(e->d_name, "nxcc-parallel-", 14) != 0)
			continue;
		char *dir = nx_xasprintf("%s/%s", tmp, e->d_name);
		char *owner = nx_xasprintf("%s/owner", dir);
		int fd = open(owner, O_RDWR | O_CLOEXEC);
		if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0)
			rm_rf_workdir(dir);
		if (fd >= 0)
			close(fd);
		free(owner);
		free(dir);
	}
	closedir(dp);
}

static void rm_rf_workdir(const char *dir)
{
	DIR *dp = opendir(dir);
	if (!dp)
		return;
	struct dirent *e;
	while ((e = readdir(dp))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		char *p = nx_xasprintf("%s/%s", dir, e->d_name);
		unlink(p);
		free(p);
	}
	closedir(dp);
	rmdir(dir);
}

/* Reads and keys every file; marks duplicates and other shards' graphs. */
static int key_graphs(char **files, int n, const nx_pc_opts *o, graph **out, int *dups, int *other_shard)
{
	char fh[17];
	nx_flags_hash(o->flags, fh);
	graph *all = calloc((size_t)n + 1, sizeof(graph));
	if (!all)
		abort();
	int m = 0;
	*dups = *other_shard = 0;
	for (int i = 0; i < n; i++) {
		graph g = {0};
		g.file = files[i];
		nx_diag d = {0};
		nx_module *mod = nx_read_file(files[i], &d);
		if (mod) {
			nx_fingerprint(mod, g.fp);
			nx_module_free(mod);
			if (nx_cache_key_make(g.fp, fh, &g.key, &d) != NX_OK) {
				g.key.name[0] = 0;
				g.error = nx_xstrdup(d.msg ? d.msg : "bad key");
			}
		} else {
			char *s = nx_diag_format(&d);
			size_t l = strlen(s);
			while (l && s[l - 1] == '\n')
				s[--l] = 0;
			g.error = s;
		}
		nx_diag_clear(&d);
		const char *base = strrchr(files[i], '/');
		int shard = nx_pc_shard_of(g.key.name[0] ? g.key.name : base ? base + 1 : files[i], o->shard_n);
		if (shard != o->shard_i) {
			free(g.error);
			++*other_shard;
			continue;
		}
		int dup = -1;
		for (int j = 0; j < m && g.key.name[0]; j++)
			if (strcmp(all[j].key.name, g.key.name) == 0)
				dup = j;
		if (dup >= 0) {
			if (!o->quiet)
				fprintf(stderr, "nxcc parallel-compile: %s is the same graph as %s (%s)\n", g.file,
				        all[dup].file, g.key.name);
			++*dups;
			continue;
		}
		if (g.error) {
			g.status = NX_PC_FAILED;
		}
		all[m++] = g;
	}
	*out = all;
	return m;
}

int nx_pc_select(char **files, int n, const nx_compile_flags *f, int shard_i, int shard_n, bool *keep, int *dups,
                 int *other_shard)
{
	nx_pc_opts o = {.jobs = 1, .shard_i = shard_i, .shard_n = shard_n, .quiet = true, .flags = f};
	graph *g;
	int m = key_graphs(files, n, &o, &g, dups, other_shard);
	for (int i = 0; i < n; i++) {
		keep[i] = false;
		for (int k = 0; k < m; k++)
			keep[i] |= g[k].file == files[i];
	}
	for (int k = 0; k < m; k++)
		free(g[k].error);
	free(g);
	return m;
}

int nx_pc_run(char **files, int n, const nx_pc_opts *o)
{
	double t0 = now_s();
	graph *g;
	int dups, other;
	int m = key_graphs(files, n, o, &g, &dups, &other);

	nx_cache *cache = NULL;
	nx_diag d = {0};
	if (!o->flags->no_cache) {
		if (nx_cache_open(nx_cache_location(o->flags->cache_dir), &cache, &d) != NX_OK) {
			fprintf(stderr, "nxcc parallel-compile: warning: compile cache unusable: %s\n", d.msg);
			nx_diag_clear(&d);
			cache = NULL;
		}
	}
	/* Cached keys need no worker: a second run over the same graphs costs
	 * one lookup per graph. */
	for (int i = 0; i < m && cache; i++) {
		if (g[i].status != NX_PC_PENDING)
			continue;
		double t = now_s();
		uint8_t *neff = NULL;
		size_t len = 0;
		char *flog = NULL;
		nx_cache_result r = nx_cache_lookup(cache, &g[i].key, o->flags->retry_failed, &neff, &len, &flog);
		if (r == NX_CACHE_HIT) {
			g[i].status = NX_PC_CACHED;
			if (o->output_dir) {
				char *p = out_path(NULL, o, &g[i], i);
				if (nx_cli_write_file(p, neff, len, &d) != NX_OK) {
					g[i].status = NX_PC_FAILED;
					g[i].error = nx_xstrdup(d.msg);
					nx_diag_clear(&d);
				}
				free(p);
			}
		} else if (r == NX_CACHE_FAILED) {
			char *line = log_error_line(flog);
			g[i].status = NX_PC_FAILED;
			g[i].error = nx_xasprintf("cached failure (pass --retry-failed to compile again): %s", line ? line : "");
			free(line);
		}
		g[i].seconds = now_s() - t;
		free(neff);
		free(flog);
	}
	nx_cache_close(cache);

	char tmpl[4096];
	const char *tmp = getenv("TMPDIR");
	tmp = tmp && *tmp ? tmp : "/tmp";
	sweep_workdirs(tmp);
	snprintf(tmpl, sizeof(tmpl), "%s/nxcc-parallel-XXXXXX", tmp);
	if (!mkdtemp(tmpl)) {
		fprintf(stderr, "nxcc parallel-compile: error: cannot create %s: %s\n", tmpl, strerror(errno));
		return NX_EXIT_USER;
	}
	/* The owner file is locked before it takes its name: a concurrent run's
	 * sweep (another Slurm shard starting at the same moment) must never
	 * find it unlocked and remove this directory. */
	char *owner = nx_xasprintf("%s/owner", tmpl), *owner_tmp = nx_xasprintf("%s/.owner", tmpl);
	int owner_fd = open(owner_tmp, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (owner_fd >= 0 && (flock(owner_fd, LOCK_EX) != 0 || rename(owner_tmp, owner) != 0)) {
		close(owner_fd);
		owner_fd = -1;
	}
	free(owner_tmp);
	free(owner);
	struct sigaction sa = {0}, old_int, old_term;
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);

	for (int i = 0; i < m && o->log; i++)
		if (g[i].status != NX_PC_PENDING)
			nx_log_filef(o->log, g[i].status == NX_PC_FAILED ? NX_LOG_ERROR : NX_LOG_INFO, "%s: %s (key %s)%s%s",
			        g[i].file, status_name(g[i].status), g[i].key.name[0] ? g[i].key.name : "none",
			        g[i].error ? ": " : "", g[i].error ? g[i].error : "");
	progress p = {isatty(2), o->quiet, false, t0, 0};
	for (int i = 0; i < m; i++)
		if (g[i].status != NX_PC_PENDING)
			progress_done(&p, g, m, &g[i]);
	int next = 0, running = 0;
	for (;;) {
		while (running < o->jobs && !interrupted) {
			while (next < m && g[next].status != NX_PC_PENDING)
				next++;
			if (next >= m)
				break;
			graph *x = &g[next];
			free(x->log);
			x->log = nx_xasprintf("%s/g%04d.log", tmpl, next);
			char *out = out_path(tmpl, o, x, next);
			x->started = x->attempt_started = now_s();
			x->timed_out = false;
			x->pid = start_worker(x, o, out, false);
			free(out);
			if (x->pid < 0) {
				x->status = NX_PC_FAILED;
				x->error = nx_xasprintf("cannot start a worker: %s", strerror(errno));
				x->pid = 0;
				progress_done(&p, g, m, x);
				continue;
			}
			x->status = NX_PC_RUNNING;
			running++;
			progress_line(&p, g, m);
		}
		if (running == 0)
			break;
		int ws;
		pid_t pid = waitpid(-1, &ws, WNOHANG);
		if (pid > 0) {
			int i = 0;
			while (i < m && g[i].pid != pid)
				i++;
			if (i == m)
				continue;
			bool again;
			finish_attempt(&g[i], ws, o, &again);
			if (again) {
				/* a retry recompiles even if the failed attempt was stored */
				char *out = out_path(tmpl, o, &g[i], i);
				g[i].attempt_started = now_s();
				g[i].timed_out = false;
				g[i].pid = start_worker(&g[i], o, out, true);
				free(out);
				if (g[i].pid > 0)
					continue;
				g[i].pid = 0;
				g[i].status = NX_PC_FAILED;
			}
			running--;
			if (again || g[i].status == NX_PC_FAILED || g[i].status == NX_PC_COMPILED ||
			    g[i].status == NX_PC_CACHED)
				progress_done(&p, g, m, &g[i]);
			continue;
		}
		double t = now_s();
		for (int i = 0; i < m; i++) {
			if (g[i].status != NX_PC_RUNNING || g[i].pid <= 0)
				continue;
			if (interrupted || (o->timeout > 0 && !g[i].timed_out && t - g[i].attempt_started > o->timeout)) {
				g[i].timed_out = o->timeout > 0 && t - g[i].attempt_started > o->timeout;
				kill(g[i].pid, SIGKILL);
			}
		}
		struct timespec ts = {0, 20 * 1000 * 1000};
		nanosleep(&ts, NULL);
		progress_line(&p, g, m);
	}
	if (p.line_open)
		fputs("\n", stderr);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	for (int i = 0; i < m; i++)
		if (g[i].status == NX_PC_PENDING || g[i].status == NX_PC_RUNNING) {
			g[i].status = NX_PC_FAILED;
			free(g[i].error);
			g[i].error = nx_xstrdup("interrupted");
		}
	rm_rf_workdir(tmpl);
	if (owner_fd >= 0)
		close(owner_fd);

	double secs = now_s() - t0;
	int rc = 0;
	if (write_report(o->report, g, m, secs, &d) != NX_OK)
		rc = nx_cli_report(&d);
	counts c = count(g, m);
	printf("total %d, compiled %d, cached %d, failed %d in %.2fs", c.total, c.compiled, c.cached, c.failed, secs);
	if (dups)
		printf(" (%d duplicate file%s)", dups, dups == 1 ? "" : "s");
	if (o->shard_n > 1)
		printf(" (shard %d/%d; %d file%s in other shards)", o->shard_i, o->shard_n, other, other == 1 ? "" : "s");
	printf("; report: %s\n", o->report);
	if (o->log)
		nx_log_filef(o->log, c.failed ? NX_LOG_ERROR : NX_LOG_INFO,
		        "parallel-compile: total %d, compiled %d, cached %d, failed %d in %.2fs (%d duplicate files)", c.total,
		        c.compiled, c.cached, c.failed, secs, dups);
	for (int i = 0; i < m; i++)
		if (g[i].status == NX_PC_FAILED)
			printf("failed: %s: %s\n", g[i].file, g[i].error ? g[i].error : "?");
	if (!rc && (c.failed || interrupted))
		rc = NX_EXIT_USER;
	for (int i = 0; i < m; i++) {
		free(g[i].error);
		free(g[i].where);
		free(g[i].log);
	}
	free(g);
	return rc;
}
