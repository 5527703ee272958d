/* passes/pass.h — the pass interface, the registry and the pass manager.
 *
 * A pass is one file with one entry point:
 *   nx_status nx_pass_NAME(nx_module *, const nx_pass_ctx *, bool *changed);
 * *changed is true exactly when the printed module differs. The manager, not
 * the pass, does timing, dumping, verifying and fixed-point iteration. */
#ifndef NX_PASS_H
#define NX_PASS_H

#include "ir/ir.h"

#include <stdio.h>

typedef enum nx_autocast_mode {
	NX_AUTOCAST_NONE = 0, /* keep every type */
	NX_AUTOCAST_MATMULT,  /* only matrix-multiply inputs */
	NX_AUTOCAST_ALL,      /* all f32 computation */
} nx_autocast_mode;

typedef enum nx_model_type {
	NX_MODEL_GENERIC = 0,
	NX_MODEL_TRANSFORMER,
	NX_MODEL_UNET_INFERENCE,
} nx_model_type;

/* Costs for passes that need them (O3 fusion priority, auto-cast): filled by
 * the driver from the chosen target, so passes never include backend code. */
typedef struct nx_cost_model {
	void *user; /* passed back to every callback (the target) */
	/* Estimated cycles of instruction i when executed as its own kernel. */
	double (*inst_cycles)(void *user, const nx_inst *i);
	/* Estimated cycles to move `bytes` between HBM and on-chip memory. */
	double (*hbm_cycles)(void *user, int64_t bytes);
} nx_cost_model;

typedef struct nx_pass_ctx {
	int opt_level;              /* 1, 2 or 3 */
	nx_autocast_mode autocast;
	nx_type autocast_type;      /* bf16, f16, f32 (tf32 is f32 math on TensorE), f8 */
	bool autocast_tf32;         /* --auto-cast-type tf32 */
	nx_type param_type;         /* --param-dtype: aliased f32 parameters stored in this
	                               type (passes/param_dtype.c); NX_TYPE_INVALID: keep */
	nx_model_type model_type;
	int verbose;                /* 0 quiet, 1 info, 2 debug */
	FILE *log;                  /* where --verbose output goes (stderr when NULL) */
	const nx_cost_model *cost;  /* may be NULL below O3 */
	int64_t fold_max_elems;     /* constant folding size cap */
	nx_diag *diag;              /* user errors */
	bool no_mixed_accumulation; /* --disable-mixed-precision-accumulation: bf16/f16
	                               sums and batch norms stay in their own type */
} nx_pass_ctx;

typedef nx_status (*nx_pass_fn)(nx_module *m, const nx_pass_ctx *ctx, bool *changed);

/* custom-call-recognize also accepts the targets this says yes to (the
 * user's GpSimd kernels, set by compiler/custom_op.c); NULL: none. */
extern bool (*nx_custom_target_hook)(const char *target);

#define NX_OPT_MAX 3 /* -O1..-O3 */

/* The registry: passes/passes.def expanded. */
typedef struct nx_pass_info {
	const char *name;  /* stable short name: --disable-pass, --dump-after */
	nx_pass_fn fn;
	const char *group; /* consecutive passes of one group iterate to a fixed point; NULL = once */
	int min_level;     /* runs at -O<min_level> and above */
	int max_level;     /* ... up to -O<max_level> (NX_OPT_MAX but for PASS_LEVELS rows) */
	const char *summary;
} nx_pass_info;

#define PASS(name, fn, group, level, summary) \
	nx_status fn(nx_module *m, const nx_pass_ctx *ctx, bool *changed);
#include "passes/passes.def"
#undef PASS

/* passes/device_types.c: refuses a module that still holds f64 or complex
 * values before lowering (NX_ERR_INPUT naming op, type and source). */
nx_status nx_check_device_types(const nx_module *m, nx_diag *d);

int nx_pass_count(void);
const nx_pass_info *nx_pass_get(int i);
const nx_pass_info *nx_pass_find(const char *name);

/* Manager options (the --time-passes ... flags). */
typedef struct nx_pass_opts {
	bool time_passes;        /* print a timing table to log */
	bool verify_each;        /* run the verifier after every pass that changed the module */
	const char *dump_after;  /* pass name or "all"; NULL = none */
	const char *dump_dir;    /* where dumps go ("." when NULL; created when missing) */
	const char *dump_format; /* "hlo" (NULL), "dot" or "html" (passes/dump_graph.h) */
	const char **disabled;   /* pass names not to run */
	int ndisabled;
	int max_iterations;      /* fixed-point cap per group; 0 = 16 */
	bool check_changed;      /* debug: print before/after and assert that a pass that
	                            says "unchanged" did not change the printed module */
} nx_pass_opts;

/* Runs the pipeline of ctx->opt_level on m. */
nx_status nx_pass_run_pipeline(nx_module *m, const nx_pass_ctx *ctx, const nx_pass_opts *o);
/* Runs only the named passes, in order (for tests: `nxcc opt --passes=a,b`). */
nx_status nx_pass_run_list(nx_module *m, const nx_pass_ctx *ctx, const nx_pass_opts *o,
                           const char *const *names, int n);

/* Shared helpers for passes (passes/util.c). */
/* Number of uses of each instruction of c (operands + root), indexed by the
 * instruction's position; caller frees. */
int *nx_pass_use_counts(const nx_comp *c);
/* True when executing i does something besides computing its result (an
 * opcode flagged NX_OPF_SIDE_EFFECT, a custom call marked side-effecting):
 * it must run even when nobody uses the result. */
bool nx_pass_has_side_effect(const nx_inst *i);
/* True when i's result is a function of its operands and attributes alone
 * and computing it is unobservable: no side effect, no collective, no random
 * numbers, no replica/partition id, no token or async/copy pair, no
 * optimization barrier. Two such instructions with the same operands may be
 * merged (cse), and one with constant operands may be folded. Says nothing
 * about parameters: they have no operands. */
bool nx_pass_is_pure(const nx_inst *i);
/* The binary op (add, multiply, maximum, minimum, and, or) a reducer
 * computation c applies to its two parameters, in either order, with nothing
 * else in it; NX_OP_COUNT otherwise. */
nx_opcode nx_pass_reducer_op(const nx_comp *c);
/* Clones the instructions of body other than its parameters into `into`,
 * appending them (in body order) to out[*nout], with parameter k replaced by
 * args[k]; each clone gets a fresh id and the name <name>.<suffix>, or
 * <name>.i<id> when suffix is NULL. Returns the clone of body's root (or the
 * argument it is). Used by inline, while-unroll and conditional-select. */
nx_inst *nx_pass_clone_body(nx_module *m, nx_comp *into, const nx_comp *body, nx_inst *const *args,
                            const char *suffix, nx_inst **out, int *nout);
/* Logs at the given verbosity level. */
void nx_pass_log(const nx_pass_ctx *ctx, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
