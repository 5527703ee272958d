/* compiler/log.h — the compile log: --verbose and --logfile of neuronx-cc.
 *
 * One message goes to two places with their own thresholds: the console
 * (stderr, "nxcc: LEVEL: msg") at --verbose and above, and the --logfile
 * (one "TIME LEVEL PID [nxcc]: msg" line each, every level from info up, and
 * debug too at --verbose debug), so a log asked for is useful even when the
 * console was kept quiet. Result lines ("cache hit ...", "check: ok") are the
 * command's output on stdout, not log messages, and are not filtered.
 *
 * Ownership: nx_log_open opens the file, nx_log_close closes it. */
#ifndef NX_LOG_H
#define NX_LOG_H

#include "compiler/flags.h"

#include <stdio.h>

typedef struct nx_log {
	nx_log_level console;    /* stderr gets this level and above */
	nx_log_level file_level; /* the file gets this level and above */
	FILE *file;              /* --logfile; NULL = none */
	bool codes;              /* errors carry their NXCC_E code (neuronx-cc mode) */
} nx_log;

/* Sets the thresholds from f and opens f->logfile (truncated) when given.
 * A log file that cannot be opened is an error (the user asked for it). */
nx_status nx_log_open(nx_log *l, const nx_compile_flags *f, nx_diag *d);
/* false when a write to the log file failed (a full disk): the caller
 * reports it, a silently empty log is not a log. */
bool nx_log_close(nx_log *l);

/* Whether a message at lvl goes anywhere (to skip building costly ones). */
bool nx_log_on(const nx_log *l, nx_log_level lvl);
void nx_logf(nx_log *l, nx_log_level lvl, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Like nx_logf, to the log file only (a record the console already shows in
 * its own form, e.g. parallel-compile's progress lines). */
void nx_log_filef(nx_log *l, nx_log_level lvl, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Writes text (several lines: a pass timing table, the pass log) at lvl;
 * console forces it onto the console whatever --verbose says (--time-passes). */
void nx_log_text(nx_log *l, nx_log_level lvl, bool console, const char *text);
/* Logs d as an error (critical when it is an internal error) and returns the
 * exit status, like nx_cli_report. */
int nx_log_report(nx_log *l, const nx_diag *d);
/* The flags as parsed: the command line, NEURON_CC_FLAGS, the canonical
 * (cache key) form and each accepted-no-effect flag, at info. */
void nx_log_flags(nx_log *l, const char *cmd, int argc, char **argv, const nx_compile_flags *f);
/* One warning naming every unknown flag NEURON_CC_FLAGS held (nothing when
 * none); nx_log_flags calls it, commands without a log call it directly. */
void nx_flags_warn_unknown(nx_log *l, const nx_compile_flags *f);

#endif
