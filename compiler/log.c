/* compiler/log.c — console and --logfile messages (compiler/log.h). */
#include "compiler/log.h"
#include "compiler/cli.h"
#include "compiler/errors.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *const upper[] = {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"};

nx_status nx_log_open(nx_log *l, const nx_compile_flags *f, nx_diag *d)
{
	l->console = f->verbose;
	l->file_level = f->verbose < NX_LOG_INFO ? f->verbose : NX_LOG_INFO;
	l->file = NULL;
	if (!f->logfile)
		return NX_OK;
	l->file = fopen(f->logfile, "w");
	if (!l->file)
		return nx_diag_set(d, NX_ERR_IO, f->logfile, 0, 0, "cannot open the log file: %s", strerror(errno));
	/* a line at a time: a compile killed midway leaves a readable log */
	setvbuf(l->file, NULL, _IOLBF, 0);
	return NX_OK;
}

bool nx_log_close(nx_log *l)
{
	bool ok = true;
	if (l->file) {
		ok = !ferror(l->file);
		ok &= fclose(l->file) == 0;
	}
	l->file = NULL;
	return ok;
}

bool nx_log_on(const nx_log *l, nx_log_level lvl)
{
	return lvl >= l->console || (l->file && lvl >= l->file_level);
}

static void file_prefix(FILE *f, nx_log_level lvl)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	struct tm tm;
	gmtime_r(&ts.tv_sec, &tm);
	char when[32];
	strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
	fprintf(f, "%s.%03ldZ %s %ld [nxcc]: ", when, ts.tv_nsec / 1000000, upper[lvl], (long)getpid());
}

static void emit(nx_log *l, nx_log_level lvl, bool console, const char *msg)
{
	if (console || lvl >= l->console) {
		static const char *const lower[] = {"debug", "info", "warning", "error", "critical"};
		fprintf(stderr, "nxcc: %s: %s\n", lower[lvl], msg);
	}
	if (l->file && lvl >= l->file_level) {
		file_prefix(l->file, lvl);
		fprintf(l->file, "%s\n", msg);
	}
}

void nx_logf(nx_log *l, nx_log_level lvl, const char *fmt, ...)
{
	if (!nx_log_on(l, lvl))
		return;
	va_list ap;
	va_start(ap, fmt);
	char *msg = NULL;
	if (vasprintf(&msg, fmt, ap) < 0)
		abort();
	va_end(ap);
	emit(l, lvl, false, msg);
	free(msg);
}

void nx_log_filef(nx_log *l, nx_log_level lvl, const char *fmt, ...)
{
	if (!l->file || lvl < l->file_level)
		return;
	va_list ap;
	va_start(ap, fmt);
	file_prefix(l->file, lvl);
	vfprintf(l->file, fmt, ap);
	fputc('\n', l->file);
	va_end(ap);
}

void nx_log_text(nx_log *l, nx_log_level lvl, bool console, const char *text)
{
	if (!text || !*text)
		return;
	if (console || lvl >= l->console) {
		fputs(text, stderr);
		if (text[strlen(text) - 1] != '\n')
			fputc('\n', stderr);
	}
	if (l->file && lvl >= l->file_level)
		for (const char *p = text; *p;) {
			const char *e = strchr(p, '\n');
			int n = e ? (int)(e - p) : (int)strlen(p);
			file_prefix(l->file, lvl);
			fprintf(l->file, "%.*s\n", n, p);
			p += n + (e ? 1 : 0);
		}
}

int nx_log_report(nx_log *l, const nx_diag *d)
{
	nx_log_level lvl = d->status == NX_ERR_INTERNAL ? NX_LOG_CRITICAL : NX_LOG_ERROR;
	char *s;
	if (l->codes && !(d->msg && strncmp(d->msg, "NXCC_E", 6) == 0)) {
		/* "file:1:2: error: NXCC_EINP001: msg": the code leads the message */
		nx_diag coded = *d;
		coded.msg = nx_xasprintf("%s: %s", nx_error_code(d), d->msg ? d->msg : "unknown error");
		s = nx_diag_format(&coded);
		free(coded.msg);
	} else {
		s = nx_diag_format(d);
	}
	/* the diagnostic carries its own "file:line: error:" form: keep it as is */
	if (lvl >= l->console)
		fputs(s, stderr);
	if (l->file) {
		size_t n = strlen(s);
		while (n && s[n - 1] == '\n')
			s[--n] = 0;
		for (char *p = s; *p;) {
			char *e = strchr(p, '\n');
			int k = e ? (int)(e - p) : (int)strlen(p);
			file_prefix(l->file, lvl);
			fprintf(l->file, "%.*s\n", k, p);
			p += k + (e ? 1 : 0);
		}
	}
	free(s);
	return d->status == NX_ERR_INTERNAL ? NX_EXIT_ICE : NX_EXIT_USER;
}

void nx_log_flags(nx_log *l, const char *cmd, int argc, char **argv, const nx_compile_flags *f)
{
	nx_flags_warn_unknown(l, f);
	if (!nx_log_on(l, NX_LOG_INFO))
		return;
	char *line = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&line, &len);
	if (!m)
		abort();
	fprintf(m, "nxcc %s", cmd);
	for (int i = 0; i < argc; i++)
		fprintf(m, strpbrk(argv[i], " \t'\"") ? " '%s'" : " %s", argv[i]);
	fclose(m);
	/* the command line is for the file: on the console the user just typed it */
	if (l->file && NX_LOG_INFO >= l->file_level) {
		file_prefix(l->file, NX_LOG_INFO);
		fprintf(l->file, "command line: %s\n", line);
		const char *env = getenv("NEURON_CC_FLAGS");
		if (env && *env) {
			file_prefix(l->file, NX_LOG_INFO);
			fprintf(l->file, "NEURON_CC_FLAGS: %s\n", env);
		}
	}
	free(line);
	char *j = nx_flags_canonical_json(f);
	nx_logf(l, NX_LOG_INFO, "flags that change the output: %s", j);
	free(j);
	nx_logf(l, NX_LOG_DEBUG, "verbose %s, optimization level %d, lnc %d", nx_log_level_name(f->verbose),
	        f->optlevel, nx_flags_lnc(f));
	for (int i = 0; i < f->n_accepted_no_effect; i++)
		nx_logf(l, NX_LOG_INFO, "%s accepted; it does not change nxcc's output", f->accepted_no_effect[i]);
}

void nx_flags_warn_unknown(nx_log *l, const nx_compile_flags *f)
{
	if (!f->n_unknown_env)
		return;
	char *line = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&line, &len);
	if (!m)
		abort();
	for (int i = 0; i < f->n_unknown_env; i++)
		fprintf(m, "%s'%s'", i ? ", " : "", f->unknown_env[i]);
	fclose(m);
	nx_logf(l, NX_LOG_WARNING, "ignoring unknown flag%s %s from NEURON_CC_FLAGS (--strict-flags makes this an error)",
	        f->n_unknown_env > 1 ? "s" : "", line);
	free(line);
}
