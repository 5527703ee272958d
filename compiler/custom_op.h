/* compiler/custom_op.h — `--custom-op NAME=FILE` (compiler/custom_op.c). */
#ifndef NX_CUSTOM_OP_H
#define NX_CUSTOM_OP_H

#include "compiler/flags.h"
#include "compiler/log.h"

/* Compiles/reads the user's kernels and registers them with the backend and
 * the evaluator; turns the compile cache off when there are any. Returns
 * an exit status (0, or 1 with the message printed). */
int nx_custom_ops_setup(nx_compile_flags *f, nx_log *log);

/* Installs the evaluator's host JIT (backend/gpsimd/gs_host.c) unless
 * NX_EVAL_JIT=0 (NX_EVAL_JIT=plan: clusters planned but their members
 * interpreted, a test of the plan); NX_EVAL_JIT_MIN sets the smallest cluster (elements,
 * default 65536); NX_EVAL_JIT_STATS=1 prints what it did at exit. */
void nx_eval_jit_setup(void);

#endif
