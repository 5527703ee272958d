/* compiler/parallel.h — nxcc parallel-compile: the offline AOT step
 * (DESIGN.md section 9, docs/cli.md).
 *
 * Finds the graphs in XLA dump directories, keys each one the way
 * `nxcc compile` keys its cache entry (nx_fingerprint + nx_flags_hash),
 * keeps one graph per key, keeps this shard's keys, and compiles the rest
 * with worker processes: the nxcc binary itself, one per graph, so a crash
 * or a hang fails only that graph. Keys already in the cache are reported
 * as cached without starting a worker. */
#ifndef NX_PARALLEL_H
#define NX_PARALLEL_H

#include "compiler/flags.h"
#include "compiler/log.h"

typedef enum { NX_PC_PENDING, NX_PC_RUNNING, NX_PC_COMPILED, NX_PC_CACHED, NX_PC_FAILED } nx_pc_status;

/* What kind of file a directory scan found. */
typedef enum {
	NX_PC_SKIP,   /* not a graph (or a graph after optimization, a pass dump, ...) */
	NX_PC_TEXT,   /* HLO text */
	NX_PC_PROTO,  /* HloModuleProto */
} nx_pc_kind;

/* Classifies a file name (no directory) found while scanning a dump:
 * `*.hlo`, `*.hlo.txt`, `*.hlo_module.pb`, `*.pb`, and in XLA's own
 * `module_NNNN.<name>.<stage>.<ext>` names only the before_optimizations
 * stage (`.txt`, `.hlo.pb`). After-optimization modules, per-pass dumps,
 * buffer assignments, LLVM IR (`*.ir-*`), snapshots, html/dot are skipped. */
nx_pc_kind nx_pc_classify(const char *name);

/* Appends the graph files under path (a file is taken as is; a directory is
 * scanned recursively) to *files, sorted per directory. When one XLA dump
 * stem has both a .txt and a proto, only the proto is kept. */
nx_status nx_pc_collect(const char *path, char ***files, int *n, nx_diag *d);

typedef struct nx_pc_opts {
	int jobs;              /* worker processes, >= 1 */
	double timeout;        /* seconds per compile attempt; 0 = none */
	int retries;           /* extra attempts after a failed one */
	int shard_i, shard_n;  /* this machine's shard; 0/1 = everything */
	const char *report;    /* JSON report path */
	const char *output_dir;/* keep each .neff as DIR/<key>.neff; NULL = discard */
	bool quiet;            /* no progress output */
	/* The compile flags as written (no inputs), passed to every worker. */
	char **flag_argv;
	int flag_argc;
	const nx_compile_flags *flags; /* the same, parsed: cache key and location */
	/* --logfile of the run: each graph's outcome, and each worker's own
	 * compile log (workers write theirs to the work directory; appended
	 * here when they finish). NULL = none. */
	nx_log *log;
} nx_pc_opts;

/* Compiles files[0..n) and writes the report. Returns the exit status:
 * 0 when no graph of this shard failed, 1 otherwise (or on a usage problem). */
int nx_pc_run(char **files, int n, const nx_pc_opts *o);

/* The planning half of nx_pc_run, without compiling: reads and keys each
 * of files[0..n) with flags f and sets keep[i] for the files this shard
 * (shard_i of shard_n) compiles: per key, the first file in order; a file
 * that cannot be read is kept (it is reported as failed). *dups counts the
 * files dropped as another file's graph, *other_shard those of other shards.
 * Returns the number kept. */
int nx_pc_select(char **files, int n, const nx_compile_flags *f, int shard_i, int shard_n, bool *keep, int *dups,
                 int *other_shard);

/* The shard (0..shard_n-1) a key belongs to: a hash of the key, so every
 * machine computes the same split without talking to the others. */
int nx_pc_shard_of(const char *key, int shard_n);

#endif
