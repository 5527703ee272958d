/* compiler/flags.h — the flags of `neuronx-cc compile`, as nxcc understands them.
 *
 * nx_flags_parse accepts every spelling of the public neuronx-cc CLI
 * reference (`--flag value` and `--flag=value`, `-O1`, `-O 2`, `--optlevel O1`,
 * `-lnc 2`), plus nxcc's own cache and pass-manager flags, and merges
 * NEURON_CC_FLAGS (split like a shell; the command line wins). Flags that do
 * not change nxcc's output are accepted and listed in `accepted_no_effect`
 * so the driver can log them at --verbose info.
 *
 * Ownership: every string and array in nx_compile_flags belongs to it and is
 * released by nx_flags_free. */
#ifndef NX_FLAGS_H
#define NX_FLAGS_H

#include "ir/ir.h"

#include <stdio.h>
#include "passes/pass.h" /* nx_model_type, nx_autocast_mode: one enum for flags and passes */

typedef enum { NX_TARGET_TRN1, NX_TARGET_TRN1N, NX_TARGET_INF2, NX_TARGET_TRN2 } nx_target_kind; /* not nx_target: backend/target/target.h has that */
typedef nx_autocast_mode nx_auto_cast;
typedef enum {
	NX_CASTTYPE_BF16, NX_CASTTYPE_FP16, NX_CASTTYPE_TF32, NX_CASTTYPE_FP8_E4M3, NX_CASTTYPE_FP8_E5M2
} nx_auto_cast_type;
typedef enum {
	NX_LOG_DEBUG, NX_LOG_INFO, NX_LOG_WARNING, NX_LOG_ERROR, NX_LOG_CRITICAL
} nx_log_level;

typedef struct nx_compile_flags {
	/* --- flags that change the output (they form the cache key) --- */
	char *framework;             /* "XLA" (required by neuronx-cc; we default to it) */
	nx_target_kind target;            /* --target; default trn1 */
	bool target_set;             /* --target was given */
	nx_model_type model_type;    /* --model-type; default generic */
	nx_auto_cast auto_cast;      /* --auto-cast; default none */
	nx_auto_cast_type auto_cast_type; /* --auto-cast-type; default bf16 */
	int optlevel;                /* 1..3, default 2 */
	int lnc;                     /* --logical-nc-config/-lnc/--lnc; 0 = target default */
	bool saturate_infinity;      /* --enable-saturate-infinity (trn1/inf2 only) */
	bool mixed_precision_accumulation; /* default true; --disable-... clears */
	char **disable_pass;         /* --disable-pass=NAME (repeatable, comma lists) */
	int n_disable_pass;
	char **custom_op;            /* --custom-op NAME=kernel.c|.bc|.ll (repeatable; compiler/custom_op.c) */
	int n_custom_op;

	/* --- flags that change where things go or how much is said --- */
	char **inputs;               /* positional model files */
	int n_inputs;
	char *output;                /* --output; NULL = "file.neff" per neuronx-cc */
	char *logfile;               /* --logfile */
	nx_log_level verbose;        /* --verbose; default warning. Numbers: 0 warning, 1 info,
	                                2..9 debug (a verbosity count, as nxcc opt took it);
	                                10 and up are Python logging levels (10 debug, 20 info,
	                                30 warning, 40 error, 50 critical; between: the next up) */
	char *workdir;               /* --workdir */
	char *cache_dir;             /* --cache-dir / --cache_dir: path or s3://bucket/prefix */
	bool no_cache;               /* --no-cache */
	bool retry_failed;           /* --retry-failed / --retry_failed_compilation */

	/* --- pass manager (stored for the pass manager; not in the key) --- */
	char **dump_after;           /* --dump-after=NAME|all (repeatable, comma lists) */
	int n_dump_after;
	char *dump_dir;              /* --dump-dir */
	unsigned dump_lower;         /* nxcc compile --dump-lower (NX_DUMP_*): set by cmd_compile, not hashed */
	char *dump_format;           /* --dump-format hlo|dot|html (passes/dump_graph.h) */
	bool verify_each;            /* --verify-each */
	bool time_passes;            /* --time-passes */

	/* flags accepted for compatibility that do not change nxcc's output,
	 * as written ("--enable-fast-context-switch", "--pipeline=compile") */
	char **accepted_no_effect;
	int n_accepted_no_effect;

	/* unknown flags found in NEURON_CC_FLAGS (names, without values):
	 * ignored, and the caller warns once (nx_log_flags); an error instead
	 * with --strict-flags. On the command line an unknown flag is an error. */
	char **unknown_env;
	int n_unknown_env;
	bool strict_flags;           /* --strict-flags */
} nx_compile_flags;

/* Parses argv[0..argc) (argv[0] is the first flag, not the program name)
 * after the words of env_neuron_cc_flags (may be NULL), so the command line
 * wins. *out is initialized here; free it with nx_flags_free even on error.
 * Errors: an unknown flag, a bad value, a missing value, unbalanced quotes
 * in NEURON_CC_FLAGS, a positional argument inside NEURON_CC_FLAGS. */
nx_status nx_flags_parse(int argc, char **argv, const char *env_neuron_cc_flags,
                         nx_compile_flags *out, nx_diag *d);
void nx_flags_free(nx_compile_flags *f);
/* The known flag nearest to name (edit distance, '_' = '-'), or NULL when
 * none is near enough to suggest: "did you mean". */
const char *nx_flags_suggest(const char *name);
/* Every flag the parser knows, one a line, in table order: "--target VALUE",
 * "--no-cache", "--pipeline VALUE..." (nxcc compile --list-flags; docs/cli.md
 * holds the same list and tests/e2e/cli_flags.sh compares them). */
void nx_flags_print_list(FILE *out);
/* Sets is_input[i] for each argv word nx_flags_parse would take as a
 * positional input (the rest are flags and their values), so a caller can
 * pass the flags on without the inputs (nxcc parallel-compile). */
void nx_flags_mark_inputs(int argc, char **argv, bool *is_input);

/* Splits s like a POSIX shell word splitter (whitespace, '...', "...", \x;
 * no expansion). Returns the word count and a malloc'd NULL-terminated
 * vector (free each word, then the vector); -1 with *d set on bad quoting. */
int nx_flags_split(const char *s, char ***words, nx_diag *d);

/* The flags that change the output, normalized (target defaults applied,
 * auto-cast-type dropped when auto-cast is none, disable-pass sorted and
 * de-duplicated), as one line of JSON with keys in a fixed order. Two flag
 * sets that compile the same program give the same string. Caller frees. */
char *nx_flags_canonical_json(const nx_compile_flags *f);
/* First 16 hex chars of sha256(nx_flags_canonical_json(f)) + NUL. */
void nx_flags_hash(const nx_compile_flags *f, char out[17]);

const char *nx_target_name(nx_target_kind t);
const char *nx_log_level_name(nx_log_level l);
/* Effective logical NeuronCore count: --lnc, else 2 on trn2, else 1. */
int nx_flags_lnc(const nx_compile_flags *f);

#endif
