/* compiler/driver.h — the compile pipeline: read, verify, passes, lower,
 * .neff bytes. Flag handling for compile-like commands lives in one function
 * (nx_driver_flag) so the full neuronx-cc flag parser can replace it. */
#ifndef NX_DRIVER_H
#define NX_DRIVER_H

#include "backend/backend.h"
#include "ir/ir.h"

typedef struct nx_compile_opts {
	const char *target;        /* trn1 (default), trn1n, inf2, trn2 */
	int opt_level;             /* 1..3, default 2 */
	const char *auto_cast;     /* none|matmult|all; NULL = default */
	const char *auto_cast_type;
	const char *model_type;    /* generic|transformer|unet-inference */
	const char *framework;     /* XLA */
	const char *output;        /* --output */
	int replicas;              /* > 0: replica count to compile for (nxcc check --ranks) */
} nx_compile_opts;

void nx_compile_opts_init(nx_compile_opts *o);
/* Consumes argv[*i] when it is a compile flag: 1 consumed, 0 not a compile
 * flag, -1 bad flag (message printed). */
int nx_driver_flag(int argc, char **argv, int *i, nx_compile_opts *o, const char *cmd);

typedef struct nx_compile_result {
	uint8_t *neff; /* malloc'd */
	size_t len;
	nx_lower_stats st;
	double seconds;
	nx_module *module; /* the optimized module (caller frees), when keep_module */
} nx_compile_result;

/* Compiles the module at path. On error *d is filled (exit status in
 * d->status). r->module is freed unless keep_module. */
nx_status nx_driver_compile(const char *path, const nx_compile_opts *o, bool keep_module,
                            nx_compile_result *r, nx_diag *d);

#endif
