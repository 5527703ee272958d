/* ir/hlo/read_internal.h — shared state of the HLO text reader (read_*.c). */
#ifndef NX_READ_INTERNAL_H
#define NX_READ_INTERNAL_H

#include "ir/ir.h"

/* Deepest nesting of braces/parens the reader follows (tuple shapes,
 * literals, raw attribute values, nested operands). */
#define NX_READ_MAX_DEPTH 128

typedef struct nx_rd {
	const char *s; /* text, not NUL-terminated */
	size_t len;
	size_t pos;
	const char *file;
	nx_diag *d;
	bool failed;
	int depth;
	nx_arena *a;       /* module arena (IR memory) */
	nx_arena scratch;  /* reader-only memory, freed at the end */
	const char *inst;  /* instruction being parsed, for diagnostics */
	/* line/col cache: positions are asked mostly in increasing order */
	size_t lc_off, lc_line_start;
	int lc_line;
} nx_rd;

/* ---- read_lex.c ---- */
void rd_linecol(nx_rd *r, size_t off, int *line, int *col);
/* Reports an error at byte offset off (first error wins). Returns false. */
bool rd_err(nx_rd *r, size_t off, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
bool rd_check_utf8(nx_rd *r);
/* Skips whitespace and comments; false on an unterminated block comment. */
bool rd_ws(nx_rd *r);
bool rd_eof(nx_rd *r);
char rd_peek(nx_rd *r); /* after rd_ws; 0 at the end */
/* Skips whitespace then consumes c if present. */
bool rd_accept(nx_rd *r, char c);
/* Skips whitespace then requires c; error "expected 'c' <what>". */
bool rd_expect(nx_rd *r, char c, const char *what);
/* Consumes "->" or fails with "expected '->' <what>". */
bool rd_expect_arrow(nx_rd *r, const char *what);
bool rd_is_name_char(char c);
/* Reads a name ([%]name chars); out and n exclude '%'. false (no error) if none. */
bool rd_name(nx_rd *r, const char **out, size_t *n);
/* Reads an identifier made of [A-Za-z0-9_] (no '.', '-'). */
bool rd_word(nx_rd *r, const char **out, size_t *n);
bool rd_int(nx_rd *r, int64_t *v, const char *what);
/* Integer without checking what follows (for 0_1x2_3 forms). */
bool rd_int_raw(nx_rd *r, int64_t *v, const char *what);
bool rd_bool(nx_rd *r, bool *v, const char *what);
/* Quoted string, unescaped into arena a (NUL-terminated). */
bool rd_string(nx_rd *r, nx_arena *a, const char **out);
/* {1,2,3} (possibly empty) */
bool rd_ivec_braced(nx_rd *r, nx_ivec *v, const char *what);
/* Raw balanced text up to a ',' or newline at depth 0 (or an unmatched
 * closer); returns the trimmed text in the arena. */
bool rd_raw_value(nx_rd *r, const char **out);
/* Text inside a balanced {...} starting at '{' (returned without the outer braces). */
bool rd_raw_braced(nx_rd *r, const char **out);
bool rd_depth_push(nx_rd *r);
void rd_depth_pop(nx_rd *r);
const char *rd_strndup(nx_rd *r, const char *s, size_t n);

/* ---- read_literal.c ---- */
/* Shape: f32[2,3]{1,0}, (a, b), token[]. */
bool rd_shape(nx_rd *r, nx_shape **out);
/* True if the text at the current position starts a shape. */
bool rd_at_shape(nx_rd *r);
/* A literal value of the given shape (after the shape). */
bool rd_literal_value(nx_rd *r, nx_shape *shape, nx_literal **out);
/* "{...}" (an elided constant) at the current position? */
bool rd_at_elided(nx_rd *r);
/* Consumes "{...}" and fills a deterministic value of the shape. */
bool rd_elided_value(nx_rd *r, nx_shape *shape, nx_literal **out);
/* Encodes d into the bit pattern of float type t (round to nearest even). */
uint64_t nx_float_encode(double d, nx_type t);

/* ---- read_attrs.c ---- */
enum { RD_MAX_TUPLE_INDICES = 8 };

typedef struct rd_ref {
	const char *name; /* NUL-terminated, in scratch */
	size_t pos;        /* the name */
	size_t spos;       /* the written shape */
	nx_shape *written; /* shape written before the operand, or NULL */
	/* "%t#k": element k of tuple t (an implicit get-tuple-element);
	 * "%t#k#j" nests */
	int nindex;
	int64_t index[RD_MAX_TUPLE_INDICES];
	size_t ipos[RD_MAX_TUPLE_INDICES]; /* each '#' */
} rd_ref;

/* Per-instruction state the reader resolves after the computation is read. */
typedef struct rd_pending {
	rd_ref *ops;
	int nops, capops;
	rd_ref *preds;
	int npreds;
	/* called computations by role */
	rd_ref *to_apply; int nto_apply;
	rd_ref *branches; int nbranches;
	rd_ref cond, body, tcomp, fcomp, select, scatter;
	bool has_cond, has_body, has_true, has_false, has_select, has_scatter;
	bool has_branches;
	size_t pos; /* position of the definition */
	int index;  /* position in the computation while resolving */
	int state;  /* DFS mark */
	bool is_root;
} rd_pending;

/* Parses `, key=value` attributes of instruction i. */
bool rd_attrs(nx_rd *r, nx_inst *i, rd_pending *pd);
/* input_output_alias, entry_computation_layout, ... of the module header. */
bool rd_module_attr(nx_rd *r, nx_module *m, const char *key, size_t keylen, size_t keypos);
bool rd_kv_list(nx_rd *r, nx_kv **out, int *n, bool commas);
bool rd_comp_ref(nx_rd *r, rd_ref *ref);

/* ---- stack_frames.c ---- */
/* FileNames / FunctionNames / FileLocations / StackFrames tables into m->stack
 * (none present is fine). */
bool rd_stack_tables(nx_rd *r, nx_module *m);

#endif
