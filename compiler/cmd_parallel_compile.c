/* compiler/cmd_parallel_compile.c — `nxcc parallel-compile`: the command
 * line of compiler/parallel.c, and the trial run of `-- COMMAND` that
 * makes XLA dump the graphs a training script compiles. */
#include "compiler/cli.h"
#include "compiler/parallel.h"

#include <errno.h>
#include <ftw.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: nxcc parallel-compile [OPTIONS] [COMPILE FLAGS] DIR|FILE...\n"
	        "       nxcc parallel-compile [OPTIONS] [COMPILE FLAGS] -- COMMAND [ARGS...]\n\n"
	        "Compiles every graph of XLA dumps into the compile cache, one worker process\n"
	        "per graph. Inputs: directories (scanned recursively) or files: *.hlo,\n"
	        "*.hlo.txt, *.hlo_module.pb, *.pb, and XLA's module_NNNN.*.before_optimizations\n"
	        "dumps (after-optimization and per-pass dumps are skipped). With -- COMMAND,\n"
	        "runs COMMAND once with XLA_FLAGS=--xla_dump_to=DIR --xla_dump_hlo_as_proto\n"
	        "added and compiles what it dumped. Graphs are de-duplicated by cache key\n"
	        "(fingerprint + flags hash).\n\n"
	        "options:\n"
	        "  -j, --jobs N         worker processes (default: the number of CPUs)\n"
	        "  --timeout SECONDS    kill a compile that runs longer; it fails (default: none)\n"
	        "  --retries N          compile a failed graph again up to N times (default 0)\n"
	        "  --shard I/N          compile only shard I (0-based) of N; the split is by key,\n"
	        "                       so N machines sharing one cache cover every graph once\n"
	        "  --shard auto         I and N from the scheduler: Slurm (SLURM_PROCID/SLURM_NTASKS,\n"
	        "                       or an array's SLURM_ARRAY_TASK_ID/COUNT), a Kubernetes\n"
	        "                       Indexed Job (JOB_COMPLETION_INDEX, NXCC_SHARD_COUNT) or an\n"
	        "                       AWS Batch array (AWS_BATCH_JOB_ARRAY_INDEX/_SIZE); the\n"
	        "                       report defaults to compilation_report.IofN.json\n"
	        "  --report FILE        JSON report (default compilation_report.json)\n"
	        "  --output-dir DIR     also keep each .neff as DIR/<key>.neff\n"
	        "  --xla-dump-dir DIR   with -- COMMAND: dump there and keep it (default: a\n"
	        "                       temporary directory, removed afterwards)\n"
	        "  --quiet              no progress output\n\n"
	        "Every `nxcc compile` flag (see nxcc compile --help; NEURON_CC_FLAGS is merged)\n"
	        "is accepted and passed on to each compile; --cache-dir, --no-cache and\n"
	        "--retry-failed apply to the whole run. Exit 0 only when no graph failed.\n");
}

/* --shard auto: this task's shard from the scheduler that started it.
 * Returns 0 with *i, *n and a description in why; -1 (message in why) when
 * no scheduler's variables are set or they make no sense. */
static int shard_from_env(int *i, int *n, char *why, size_t wn)
{
	static const struct {
		const char *sched, *index, *count, *count2, *min;
	} src[] = {
		/* an array job's task: its index in the array */
		{"Slurm array", "SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT", NULL, "SLURM_ARRAY_TASK_MIN"},
		/* a task of srun -n N / sbatch --ntasks N */
		{"Slurm", "SLURM_PROCID", "SLURM_NTASKS", NULL, NULL},
		/* Kubernetes Indexed Job: the index is set, the count is not (the
		 * Job's .spec.completions, passed as NXCC_SHARD_COUNT) */
		{"Kubernetes Indexed Job", "JOB_COMPLETION_INDEX", "NXCC_SHARD_COUNT", NULL, NULL},
		{"AWS Batch array job", "AWS_BATCH_JOB_ARRAY_INDEX", "AWS_BATCH_JOB_ARRAY_SIZE", "NXCC_SHARD_COUNT", NULL},
	};
	for (size_t k = 0; k < sizeof(src) / sizeof(src[0]); k++) {
		const char *iv = getenv(src[k].index);
		if (!iv || !*iv)
			continue;
		const char *cv = getenv(src[k].count), *cname = src[k].count;
		if ((!cv || !*cv) && src[k].count2) {
			cv = getenv(src[k].count2);
			cname = src[k].count2;
		}
		if (!cv || !*cv) {
			snprintf(why, wn, "%s=%s is set but %s is not (the number of shards)", src[k].index, iv, src[k].count);
			return -1;
		}
		char *e1, *e2;
		long idx = strtol(iv, &e1, 10), cnt = strtol(cv, &e2, 10);
		const char *mv = src[k].min ? getenv(src[k].min) : NULL;
		if (mv && *mv)
			idx -= strtol(mv, NULL, 10);
		if (*e1 || *e2 || cnt < 1 || cnt > 1000000 || idx < 0 || idx >= cnt) {
			snprintf(why, wn, "%s=%s and %s=%s do not give a shard 0 <= I < N", src[k].index, iv, cname, cv);
			return -1;
		}
		*i = (int)idx;
		*n = (int)cnt;
		snprintf(why, wn, "%s: %s=%s, %s=%s", src[k].sched, src[k].index, iv, cname, cv);
		return 0;
	}
	snprintf(why, wn, "no scheduler environment: SLURM_PROCID/SLURM_NTASKS, SLURM_ARRAY_TASK_ID/SLURM_ARRAY_TASK_COUNT, "
	                  "JOB_COMPLETION_INDEX/NXCC_SHARD_COUNT or AWS_BATCH_JOB_ARRAY_INDEX/AWS_BATCH_JOB_ARRAY_SIZE");
	return -1;
}

static int parse_int(const char *s, int lo, int *out)
{
	char *end;
	long v = strtol(s, &end, 10);
	if (!*s || *end || v < lo || v > 1000000)
		return -1;
	*out = (int)v;
	return 0;
}

static int rm_entry(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
	(void)sb;
	(void)type;
	(void)ftw;
	remove(path);
	return 0;
}

/* Runs the training command once with XLA dumping into dir. Its exit status
 * only warns: a trial run is often stopped after the first steps. */
/* XLA splits XLA_FLAGS at whitespace and takes a double-quoted value whole
 * (parse_flags_from_env). A dump directory with a space is quoted; one with
 * a quote, backslash or control character cannot be passed safely (it
 * could inject other flags) and is refused before anything runs. */
static bool dump_dir_ok(const char *dir)
{
	for (const unsigned char *p = (const unsigned char *)dir; *p; p++)
		if (*p == '"' || *p == '\\' || *p == '\'' || *p < 0x20 || *p == 0x7f)
			return false;
	return true;
}

static void run_trial(char **cmd, const char *dir)
{
	const char *old = getenv("XLA_FLAGS");
	size_t n = (old ? strlen(old) : 0) + strlen(dir) + 64;
	char *flags = malloc(n);
	if (!flags)
		abort();
	bool quote = strpbrk(dir, " \t") != NULL;
	snprintf(flags, n, "%s%s--xla_dump_to=%s%s%s --xla_dump_hlo_as_proto", old ? old : "", old && *old ? " " : "",
	         quote ? "\"" : "", dir, quote ? "\"" : "");
	fprintf(stderr, "nxcc parallel-compile: running %s with XLA_FLAGS=\"%s\"\n", cmd[0], flags);
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid == 0) {
		setenv("XLA_FLAGS", flags, 1);
		execvp(cmd[0], cmd);
		fprintf(stderr, "nxcc parallel-compile: error: cannot run %s: %s\n", cmd[0], strerror(errno));
		_exit(127);
	}
	free(flags);
	int ws = 0;
	if (pid < 0 || waitpid(pid, &ws, 0) < 0)
		fprintf(stderr, "nxcc parallel-compile: warning: cannot run %s: %s\n", cmd[0], strerror(errno));
	else if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0)
		fprintf(stderr, "nxcc parallel-compile: warning: %s exited with %s %d; compiling what it dumped\n",
		        cmd[0], WIFEXITED(ws) ? "status" : "signal", WIFEXITED(ws) ? WEXITSTATUS(ws) : WTERMSIG(ws));
}

int nx_cmd_parallel_compile(int argc, char **argv)
{
	nx_diag d = {0}; /* cleared on every exit path (label out) */
	nx_pc_opts o = {0};
	o.jobs = (int)sysconf(_SC_NPROCESSORS_ONLN);
	if (o.jobs < 1)
		o.jobs = 1;
	o.shard_n = 1;
	o.report = "compilation_report.json";
	const char *dump_dir = NULL;
	char **cmd = NULL;
	bool shard_auto = false, report_set = false;
	char shard_report[64];
	char **rest = calloc((size_t)argc + 1, sizeof(char *));
	if (!rest)
		abort();
	int nrest = 0, rc = NX_EXIT_USER;
	for (int i = 1; i < argc; i++) {
		const char *v;
		int r;
		if (strcmp(argv[i], "--") == 0) {
			if (i + 1 >= argc) {
				rc = nx_cli_usage_error("parallel-compile", "-- needs a COMMAND");
				goto out;
			}
			cmd = argv + i + 1;
			break;
		} else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			usage(stdout);
			rc = 0;
			goto out;
		} else if (strncmp(argv[i], "-j", 2) == 0 && argv[i][2] >= '0' && argv[i][2] <= '9') {
			if (parse_int(argv[i] + 2, 1, &o.jobs)) {
				rc = nx_cli_usage_error("parallel-compile", "bad job count '%s'", argv[i] + 2);
				goto out;
			}
		} else if ((r = nx_cli_flag(argc, argv, &i, "--jobs", &v)) || (r = nx_cli_flag(argc, argv, &i, "-j", &v))) {
			if (r < 0)
				goto out;
			if (parse_int(v, 1, &o.jobs)) {
				rc = nx_cli_usage_error("parallel-compile", "bad job count '%s'", v);
				goto out;
			}
		} else if ((r = nx_cli_flag(argc, argv, &i, "--timeout", &v))) {
			char *end;
			if (r < 0)
				goto out;
			o.timeout = strtod(v, &end);
			if (!*v || *end || o.timeout < 0) {
				rc = nx_cli_usage_error("parallel-compile", "bad --timeout '%s' (seconds)", v);
				goto out;
			}
		} else if ((r = nx_cli_flag(argc, argv, &i, "--retries", &v))) {
			if (r < 0)
				goto out;
			if (parse_int(v, 0, &o.retries)) {
				rc = nx_cli_usage_error("parallel-compile", "bad --retries '%s'", v);
				goto out;
			}
		} else if ((r = nx_cli_flag(argc, argv, &i, "--shard", &v))) {
			if (r < 0)
				goto out;
			char extra, why[512];
			if (strcmp(v, "auto") == 0) {
				if (shard_from_env(&o.shard_i, &o.shard_n, why, sizeof(why)) != 0) {
					rc = nx_cli_usage_error("parallel-compile", "--shard auto: %s", why);
					goto out;
				}
				fprintf(stderr, "nxcc parallel-compile: shard %d/%d (%s)\n", o.shard_i, o.shard_n, why);
				shard_auto = true;
			} else if (sscanf(v, "%d/%d%c", &o.shard_i, &o.shard_n, &extra) != 2 || o.shard_n < 1 || o.shard_i < 0 ||
			    o.shard_i >= o.shard_n) {
				rc = nx_cli_usage_error("parallel-compile", "bad --shard '%s' (I/N with 0 <= I < N)", v);
				goto out;
			}
		} else if ((r = nx_cli_flag(argc, argv, &i, "--report", &v))) {
			if (r < 0)
				goto out;
			o.report = v;
			report_set = true;
		} else if ((r = nx_cli_flag(argc, argv, &i, "--output-dir", &v))) {
			if (r < 0)
				goto out;
			o.output_dir = v;
		} else if ((r = nx_cli_flag(argc, argv, &i, "--xla-dump-dir", &v))) {
			if (r < 0)
				goto out;
			dump_dir = v;
		} else if (strcmp(argv[i], "--quiet") == 0) {
			o.quiet = true;
		} else {
			rest[nrest++] = argv[i];
		}
	}

	/* shards of one job often share a working directory: one report each */
	if (shard_auto && !report_set && o.shard_n > 1) {
		snprintf(shard_report, sizeof(shard_report), "compilation_report.%dof%d.json", o.shard_i, o.shard_n);
		o.report = shard_report;
	}
	nx_compile_flags f;
	nx_log log = {0};
	if (nx_flags_parse(nrest, rest, getenv("NEURON_CC_FLAGS"), &f, &d) != NX_OK) {
		rc = nx_cli_report(&d);
		nx_flags_free(&f);
		goto out;
	}
	o.flags = &f;
	bool *is_input = calloc((size_t)nrest + 1, sizeof(bool));
	char **flag_argv = calloc((size_t)nrest + 1, sizeof(char *));
	char **inputs = calloc((size_t)nrest + 1, sizeof(char *));
	if (!is_input || !flag_argv || !inputs)
		abort();
	nx_flags_mark_inputs(nrest, rest, is_input);
	int ninputs = 0;
	for (int i = 0; i < nrest; i++) {
		if (is_input[i])
			inputs[ninputs++] = rest[i];
		else
			flag_argv[o.flag_argc++] = rest[i];
	}
	o.flag_argv = flag_argv;

	char **files = NULL;
	int nfiles = 0;
	char tmpdump[4096] = "";
	if (f.output) {
		rc = nx_cli_usage_error("parallel-compile", "--output names one file; use --output-dir DIR to keep the .neff files");
		goto done;
	}
	if (cmd && ninputs) {
		rc = nx_cli_usage_error("parallel-compile", "give either inputs or -- COMMAND, not both");
		goto done;
	}
	if (!cmd && !ninputs) {
		usage(stderr);
		goto done;
	}
	if (cmd && dump_dir && !dump_dir_ok(dump_dir)) {
		rc = nx_cli_usage_error("parallel-compile",
		                        "--xla-dump-dir '%s': a quote, backslash or control character cannot be "
		                        "passed in XLA_FLAGS safely; choose another directory",
		                        dump_dir);
		goto done;
	}
	if (cmd) {
		if (!dump_dir) {
			const char *tmp = getenv("TMPDIR");
			snprintf(tmpdump, sizeof(tmpdump), "%s/nxcc-xla-dump-XXXXXX", tmp && *tmp ? tmp : "/tmp");
			if (!mkdtemp(tmpdump)) {
				rc = nx_cli_usage_error("parallel-compile", "cannot create %s: %s", tmpdump, strerror(errno));
				tmpdump[0] = 0;
				goto done;
			}
			dump_dir = tmpdump;
		}
		run_trial(cmd, dump_dir);
		inputs[ninputs++] = (char *)dump_dir;
	}
	for (int i = 0; i < ninputs; i++)
		if (nx_pc_collect(inputs[i], &files, &nfiles, &d) != NX_OK) {
			rc = nx_cli_report(&d);
			goto done;
		}
	if (nfiles == 0) {
		rc = nx_cli_usage_error("parallel-compile", "no graphs found in %s%s", cmd ? "the dump of " : "",
		                        cmd ? cmd[0] : inputs[0]);
		goto done;
	}
	if (nx_log_open(&log, &f, &d) != NX_OK) {
		rc = nx_cli_report(&d);
		goto done;
	}
	nx_log_flags(&log, "parallel-compile", argc - 1, argv + 1, &f);
	nx_logf(&log, NX_LOG_INFO, "%d graph files found", nfiles);
	o.log = &log;
	rc = nx_pc_run(files, nfiles, &o);
done:
	nx_log_close(&log);
	if (tmpdump[0])
		nftw(tmpdump, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	for (int i = 0; i < nfiles; i++)
		free(files[i]);
	free(files);
	free(is_input);
	free(flag_argv);
	free(inputs);
	nx_flags_free(&f);
out:
	nx_diag_clear(&d);
	free(rest);
	return rc;
}
