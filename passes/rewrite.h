/* passes/rewrite.h — the local-rewrite driver shared by the simplification
 * passes (algsimp-*, constant-fold, batchnorm-expand, canonicalize-dot,
 * custom-call-recognize), and the small predicates they all need.
 *
 * The driver walks each computation in topological order and builds a new
 * instruction array. Before an instruction is offered to the pass's rewrite
 * function its operands are redirected to their replacements, so a rewrite
 * always sees simplified operands. New instructions made with nx_rw_add are
 * placed before the instruction being rewritten, which keeps the order
 * topological. A replaced instruction is dropped: every use of it (operands,
 * control edges, root) now names its replacement. */
#ifndef NX_PASSES_REWRITE_H
#define NX_PASSES_REWRITE_H

#include "passes/pass.h"
#include "ir/map.h"

typedef struct nx_rw nx_rw;

/* Returns the replacement of in (an existing or new instruction with in's
 * shape), or NULL to keep it. On a user error, set rw->status. */
typedef nx_inst *(*nx_rw_fn)(nx_rw *rw, nx_inst *in);

struct nx_rw {
	nx_module *m;
	nx_comp *c;
	const nx_pass_ctx *ctx;
	const char *pass; /* for --verbose debug */
	nx_inst **out;    /* the new order being built */
	int nout, cap;
	nx_strmap *names; /* every name in the module, for unique names */
	nx_status status; /* set by a rewrite on a user error; stops the walk */
	bool mutated;     /* set by a rewrite that changed an instruction in place */
	void *user;       /* the pass's own state, for its nx_rw_fn */
	/* reducer computations made by nx_rw_reduce in this run, reused */
	nx_comp *red_comp[16];
	nx_type red_type[16];   /* red_comp[k] reduces red_type[k] ... */
	nx_opcode red_op[16];   /* ... with red_op[k] */
	int nred;
};

/* Runs fn over every computation of m. *changed is set when anything was
 * replaced. */
nx_status nx_rw_run(nx_module *m, const nx_pass_ctx *ctx, const char *pass, nx_rw_fn fn,
                    void *user, bool *changed);

/* A new instruction placed before the one being rewritten; the name is
 * made unique from base (the opcode name when NULL). */
nx_inst *nx_rw_add(nx_rw *rw, nx_opcode op, nx_shape *shape, nx_inst *const *ops, int n,
                   const char *base);
nx_arena *nx_rw_arena(nx_rw *rw);
/* Places an instruction made elsewhere in rw->c (e.g. by nx_pass_clone_body)
 * before the one being rewritten; its name must already be unique. */
void nx_rw_place(nx_rw *rw, nx_inst *i);

/* Builders (shape computed here; layout default). */
nx_inst *nx_rw_unary(nx_rw *rw, nx_opcode op, nx_inst *x);
nx_inst *nx_rw_binary(nx_rw *rw, nx_opcode op, nx_inst *x, nx_inst *y);
/* compare(x, y), direction d: pred of x's dims */
nx_inst *nx_rw_compare(nx_rw *rw, nx_inst *x, nx_inst *y, nx_cmp_dir d);
/* select(p, a, b) of a's shape */
nx_inst *nx_rw_select(nx_rw *rw, nx_inst *p, nx_inst *a, nx_inst *b);
nx_inst *nx_rw_reshape(nx_rw *rw, nx_inst *x, int rank, const int64_t *dims);
nx_inst *nx_rw_transpose(nx_rw *rw, nx_inst *x, const int64_t *perm);
/* broadcast of x into shape (type t, rank, dims); bdims[k] = output dim of x's dim k. */
nx_inst *nx_rw_broadcast(nx_rw *rw, nx_inst *x, nx_type t, int rank, const int64_t *dims,
                         const int64_t *bdims);
nx_inst *nx_rw_convert(nx_rw *rw, nx_inst *x, nx_type t);
/* Scalar constant of type t holding v (rounded to t). */
nx_inst *nx_rw_scalar(nx_rw *rw, nx_type t, double v);
/* A scalar constant v broadcast to x's shape (with x's element type t). */
nx_inst *nx_rw_splat(nx_rw *rw, const nx_shape *like, nx_type t, double v);
/* reduce(x, init) over dims with a fresh computation applying op. */
nx_inst *nx_rw_reduce(nx_rw *rw, nx_inst *x, nx_inst *init, const int64_t *dims, int ndims,
                      nx_opcode op);

/* Constants: a `constant` whose elements are all equal, or a broadcast of
 * one. Returns the literal and sets *lit; NULL otherwise. */
const nx_literal *nx_rw_splat_value(const nx_inst *x);
bool nx_rw_is_splat(const nx_inst *x, double v); /* every element == v (ints exact) */
bool nx_rw_is_const(const nx_inst *x);           /* constant, or broadcast of one */

/* Element types */
bool nx_rw_is_intlike(nx_type t); /* pred, signed or unsigned integer */

/* base when no instruction or computation has it, else base.N with N the
 * module's next id (nx_fresh_name over the module's names). */
const char *nx_rw_unique_name(nx_rw *rw, const char *base);

#endif
