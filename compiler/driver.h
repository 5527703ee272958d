/* compiler/driver.h — the compile pipeline: read, verify, passes, lower,
 * .neff bytes. The flags of compile-like commands are parsed by
 * compiler/flags.c and mapped onto nx_compile_opts by
 * nx_compile_opts_from_flags (compiler/compile_cached.h). */
#ifndef NX_DRIVER_H
#define NX_DRIVER_H

#include "backend/backend.h"
#include "ir/ir.h"
#include "passes/pass.h"

typedef struct nx_compile_opts {
	const char *target;        /* trn1 (default), trn1n, inf2, trn2 */
	int opt_level;             /* 1..3, default 2 */
	const char *auto_cast;     /* none|matmult|all; NULL = default */
	const char *auto_cast_type;
	const char *model_type;    /* generic|transformer|unet-inference */
	const char *framework;     /* XLA */
	const char *output;        /* --output */
	const nx_pass_opts *passes; /* --time-passes, --disable-pass, ...; NULL = defaults */
	int pass_verbose;          /* nx_pass_ctx.verbose: 0 quiet, 1 info, 2 debug */
	FILE *pass_log;            /* where the pass manager writes; NULL = stderr */
	int replicas;              /* > 0: replica count to compile for (nxcc check --ranks) */
	unsigned dump_lower;       /* NX_DUMP_* (backend.h): lowering dumps into r->st.dump_text */
	const char *param_dtype;   /* --param-dtype bf16|fp16 (nxcc train, opt); NULL = f32 */
	bool no_mixed_accumulation; /* --disable-mixed-precision-accumulation */
} nx_compile_opts;

void nx_compile_opts_init(nx_compile_opts *o);

typedef struct nx_compile_result {
	uint8_t *neff; /* malloc'd */
	size_t len;
	nx_lower_stats st; /* instruction counts, HBM/SBUF use (--stats) */
	double seconds;    /* the whole compile */
	double cpu_seconds; /* the process' CPU time during it (a loaded machine stretches seconds) */
	/* where the time went: read, verify (both runs), passes, lower */
	double t_read, t_verify, t_passes, t_lower;
	nx_module *module; /* the optimized module (caller frees), when keep_module */
	int nelided;       /* constants the reader filled ({...}): warn */
} nx_compile_result;

/* Compiles the module at path. On error *d is filled (exit status in
 * d->status). r->module is freed unless keep_module. */
nx_status nx_driver_compile(const char *path, const nx_compile_opts *o, bool keep_module,
                            nx_compile_result *r, nx_diag *d);

#endif
