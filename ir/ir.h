/* ir/ir.h — the HLO IR: arena, diagnostics, element types, shapes, literals,
 * modules, computations and instructions.
 *
 * Ownership: one arena per module owns every instruction, shape, name and
 * literal reachable from it; nx_module_free releases them all at once.
 * Diagnostics (nx_diag) are heap-allocated because they outlive modules. */
#ifndef NX_IR_H
#define NX_IR_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NX_VERSION "0.1.0"

/* ------------------------------------------------------------------ status */

typedef enum nx_status {
	NX_OK = 0,
	NX_ERR_INPUT = 1,     /* bad input or unsupported op: exit 1 */
	NX_ERR_IO = 2,        /* file could not be read or written: exit 1 */
	NX_ERR_INTERNAL = 70, /* broken invariant: exit 70 */
} nx_status;

/* A user-facing error. file/line/col are 0/NULL when unknown; src_line is
 * the offending source line (without newline) used to draw the caret. */
typedef struct nx_diag {
	nx_status status;
	char *file;     /* input file name, or NULL */
	int line, col;  /* 1-based; 0 = unknown */
	char *inst;     /* instruction name the error is about, or NULL */
	char *msg;      /* the message, without "error: " */
	char *src_line; /* source line text for the caret, or NULL */
} nx_diag;

/* Sets *d (freeing what it held). Returns d->status for `return nx_diag_set(...)`. */
nx_status nx_diag_set(nx_diag *d, nx_status st, const char *file, int line, int col,
                      const char *fmt, ...) __attribute__((format(printf, 6, 7)));
nx_status nx_diag_vset(nx_diag *d, nx_status st, const char *file, int line, int col,
                       const char *fmt, va_list ap);
void nx_diag_set_inst(nx_diag *d, const char *inst);
void nx_diag_set_src(nx_diag *d, const char *line_start, size_t len);
/* "file:line:col: error: msg\n  src\n  ^\n" (parts omitted when unknown). Caller frees. */
char *nx_diag_format(const nx_diag *d);
void nx_diag_clear(nx_diag *d);

/* Internal compiler errors: a broken invariant, never a user mistake. The
 * default handler prints and aborts; the driver installs one that exits 70. */
typedef void (*nx_ice_handler)(const char *file, int line, const char *msg);
void nx_set_ice_handler(nx_ice_handler h);
_Noreturn void nx_ice(const char *file, int line, const char *fmt, ...);
#define NX_ASSERT(c) ((c) ? (void)0 : nx_ice(__FILE__, __LINE__, "assertion failed: %s", #c))
#define NX_UNREACHABLE() nx_ice(__FILE__, __LINE__, "unreachable")

/* ------------------------------------------------------------------- arena */

typedef struct nx_arena_chunk nx_arena_chunk;
typedef struct nx_arena {
	nx_arena_chunk *head; /* newest chunk first */
	size_t used;          /* bytes handed out, for statistics */
} nx_arena;

void nx_arena_init(nx_arena *a);
void nx_arena_free(nx_arena *a);
void *nx_arena_alloc(nx_arena *a, size_t n); /* zeroed, 16-byte aligned */
void *nx_arena_dup(nx_arena *a, const void *p, size_t n);
/* Grows an array owned by the arena: returns a new block of newn elements
 * holding the first oldn of p. The old block is simply abandoned. */
void *nx_arena_grow(nx_arena *a, void *p, size_t oldn, size_t newn, size_t elem);
char *nx_arena_strdup(nx_arena *a, const char *s);
char *nx_arena_strndup(nx_arena *a, const char *s, size_t n);
char *nx_arena_printf(nx_arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Heap memory outside any arena (caches, flag lists, diagnostics), owned by
 * the caller and released with free(). Running out of memory aborts. */
char *nx_xstrdup(const char *s); /* NULL gives NULL */
char *nx_xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void *nx_xrealloc(void *p, size_t n);

/* ------------------------------------------------------------ element types */

typedef enum nx_type_kind {
	NX_KIND_PRED,
	NX_KIND_SINT,
	NX_KIND_UINT,
	NX_KIND_FLOAT,
	NX_KIND_COMPLEX,
	NX_KIND_TOKEN,
	NX_KIND_OPAQUE,
	NX_KIND_TUPLE,
} nx_type_kind;

typedef enum nx_type {
	NX_TYPE_INVALID = 0,
#define TYPE(E, name, bits, bytes, kind, proto) NX_##E,
#include "ir/types.def"
#undef TYPE
	NX_TYPE_COUNT
} nx_type;

const char *nx_type_name(nx_type t);
nx_type nx_type_from_name(const char *s, size_t n); /* NX_TYPE_INVALID if unknown */
int nx_type_bits(nx_type t);                        /* logical bits (pred = 1) */
int nx_type_bytes(nx_type t);                       /* storage bytes per element */
nx_type_kind nx_type_kind_of(nx_type t);
int nx_type_proto(nx_type t);           /* XLA PrimitiveType number */
nx_type nx_type_from_proto(int number); /* NX_TYPE_INVALID if unknown */
bool nx_type_is_float(nx_type t);
bool nx_type_is_int(nx_type t); /* signed or unsigned integer */
bool nx_type_is_array(nx_type t); /* not token/opaque/tuple */

/* ------------------------------------------------------------------ shapes */

#define NX_MAX_RANK 64

enum {
	NX_DIM_STATIC = 0,    /* ordinary dimension */
	NX_DIM_BOUNDED = 1,   /* dynamic with bound: "<=N" */
	NX_DIM_UNBOUNDED = 2, /* dynamic without bound: "?" (dims[i] is -1) */
};

typedef struct nx_shape nx_shape;
struct nx_shape {
	nx_type type;
	int rank;
	int64_t *dims;           /* size, or the bound of a dynamic dimension */
	uint8_t *dynamic;        /* NULL when every dim is static; else NX_DIM_* per dim */
	int64_t *minor_to_major; /* rank entries; always set for arrays */
	const char *layout_extra; /* verbatim layout text after minor_to_major, e.g.
	                             ":T(8,128)S(1)"; NULL when none */
	int ntuple;
	nx_shape **tuple; /* elements of a tuple shape */
};

nx_shape *nx_shape_array(nx_arena *a, nx_type t, int rank, const int64_t *dims);
nx_shape *nx_shape_scalar(nx_arena *a, nx_type t);
nx_shape *nx_shape_tuple(nx_arena *a, int n, nx_shape *const *elems);
nx_shape *nx_shape_token(nx_arena *a);
nx_shape *nx_shape_copy(nx_arena *a, const nx_shape *s); /* deep */
/* Same shape with another element type (layout kept). */
nx_shape *nx_shape_with_type(nx_arena *a, const nx_shape *s, nx_type t);
void nx_shape_set_default_layout(nx_shape *s); /* minor_to_major = rank-1..0 */
bool nx_shape_is_tuple(const nx_shape *s);
bool nx_shape_is_array(const nx_shape *s);
bool nx_shape_has_default_layout(const nx_shape *s);
/* Number of elements; -1 if it overflows int64. Tuples: 0. */
int64_t nx_shape_elems(const nx_shape *s);
/* Bytes of the array data (elems * storage bytes); -1 on overflow. Tuples:
 * sum over leaves. */
int64_t nx_shape_bytes(const nx_shape *s);
/* Compatible: same type, rank, dims and dynamic flags (and tuple structure),
 * ignoring layout. Equal: also layouts. */
bool nx_shape_compatible(const nx_shape *a, const nx_shape *b);
bool nx_shape_equal(const nx_shape *a, const nx_shape *b);
/* Prints "f32[2,3]{1,0}" (with_layout) or "f32[2,3]"; tuples as "(a, b)".
 * Returns the number of characters the full text needs (snprintf-like). */
int nx_shape_print(char *buf, size_t n, const nx_shape *s, bool with_layout);
/* Convenience: formatted into the arena. */
char *nx_shape_str(nx_arena *a, const nx_shape *s, bool with_layout);
/* Leaf of a tuple shape by index path; NULL if out of range. */
const nx_shape *nx_shape_subshape(const nx_shape *s, const int64_t *index, int n);

/* ---------------------------------------------------------------- literals */

/* An array literal holds nx_shape_elems(shape) elements of storage
 * nx_type_bytes(type), row-major (logical order, whatever the layout). A tuple
 * literal holds ntuple element literals. */
typedef struct nx_literal nx_literal;
struct nx_literal {
	nx_shape *shape;
	void *data;     /* NULL for tuples and zero-element arrays */
	int64_t nbytes; /* bytes at data */
	int ntuple;
	nx_literal **tuple;
};

nx_literal *nx_literal_new(nx_arena *a, nx_shape *shape); /* zero-filled */

/* --------------------------------------------------------------- opcodes */

enum {
	NX_OPF_ELEMENTWISE = 1 << 0, /* same-shape elementwise op */
	NX_OPF_UNARY = 1 << 1,
	NX_OPF_BINARY = 1 << 2,
	NX_OPF_COMMUTATIVE = 1 << 3,
	NX_OPF_EXPENSIVE = 1 << 4,  /* transcendental or contraction: never duplicate */
	NX_OPF_COLLECTIVE = 1 << 5, /* communicates between replicas/partitions */
	NX_OPF_SIDE_EFFECT = 1 << 6, /* must not be removed or reordered freely */
};

typedef enum nx_opcode {
#define OP(E, name, arity, flags) NX_OP_##E,
#include "ir/opcodes.def"
#undef OP
	NX_OP_COUNT
} nx_opcode;

const char *nx_opcode_name(nx_opcode op);
int nx_opcode_arity(nx_opcode op); /* -1 = variadic */
unsigned nx_opcode_flags(nx_opcode op);
/* Returns NX_OP_COUNT when unknown. */
nx_opcode nx_opcode_from_name(const char *s, size_t n);

/* ------------------------------------------------------------ attributes */

typedef struct nx_ivec {
	int64_t *v;
	int n;
} nx_ivec;

typedef struct nx_kv {
	const char *key;
	const char *value; /* unescaped string value, or verbatim text (see users) */
} nx_kv;

typedef enum nx_cmp_dir {
	NX_CMP_NONE = 0,
	NX_CMP_EQ,
	NX_CMP_NE,
	NX_CMP_LT,
	NX_CMP_LE,
	NX_CMP_GT,
	NX_CMP_GE,
} nx_cmp_dir;

typedef enum nx_cmp_type {
	NX_CMPT_DEFAULT = 0, /* not printed: derived from the element type */
	NX_CMPT_FLOAT,
	NX_CMPT_TOTALORDER,
	NX_CMPT_SIGNED,
	NX_CMPT_UNSIGNED,
} nx_cmp_type;

typedef struct nx_window_dim {
	int64_t size, stride;      /* stride defaults to 1 */
	int64_t pad_lo, pad_hi;    /* may be negative */
	int64_t window_dilation;   /* rhs_dilate, default 1 */
	int64_t base_dilation;     /* lhs_dilate, default 1 */
	bool reversal;             /* rhs_reversal */
} nx_window_dim;

typedef struct nx_window {
	int ndims; /* 0 = no window attribute */
	nx_window_dim *dims;
} nx_window;

typedef struct nx_pad_dim {
	int64_t lo, hi;   /* may be negative */
	int64_t interior; /* >= 0 */
} nx_pad_dim;

/* Convolution dimension numbers; printed as dim_labels=b01f_01io->b01f. */
typedef struct nx_conv_dnums {
	bool present; /* false: no dim_labels were given */
	int64_t in_batch, in_feature;
	nx_ivec in_spatial;
	int64_t k_in, k_out; /* kernel input / output feature dims */
	nx_ivec k_spatial;
	int64_t out_batch, out_feature;
	nx_ivec out_spatial;
} nx_conv_dnums;

typedef struct nx_dot_dnums {
	nx_ivec lhs_batch, rhs_batch;
	nx_ivec lhs_contracting, rhs_contracting;
} nx_dot_dnums;

typedef struct nx_gather_dnums {
	nx_ivec offset_dims;
	nx_ivec collapsed_slice_dims;
	nx_ivec start_index_map;
	nx_ivec operand_batching_dims;
	nx_ivec start_indices_batching_dims;
	int64_t index_vector_dim;
	nx_ivec slice_sizes;
	bool indices_are_sorted;
} nx_gather_dnums;

typedef struct nx_scatter_dnums {
	nx_ivec update_window_dims;
	nx_ivec inserted_window_dims;
	nx_ivec scatter_dims_to_operand_dims;
	nx_ivec input_batching_dims;
	nx_ivec scatter_indices_batching_dims;
	int64_t index_vector_dim;
	bool indices_are_sorted;
	bool unique_indices;
} nx_scatter_dnums;

/* replica_groups={{0,1},{2,3}} or the iota form [G,S]<=[dims]T(perm). */
typedef struct nx_replica_groups {
	bool present;       /* attribute given (possibly as {} = all replicas) */
	bool iota;          /* iota form */
	int ngroups;
	nx_ivec *groups;    /* list form */
	nx_ivec iota_shape;     /* [G,S] of the iota form */
	nx_ivec iota_reshape;   /* <=[dims] */
	nx_ivec iota_transpose; /* T(perm); n == 0 when absent */
} nx_replica_groups;

typedef enum nx_fft_type {
	NX_FFT_NONE = 0,
	NX_FFT_FFT,
	NX_FFT_IFFT,
	NX_FFT_RFFT,
	NX_FFT_IRFFT,
} nx_fft_type;

typedef enum nx_rng_algorithm {
	NX_RNG_DEFAULT = 0, /* rng_default */
	NX_RNG_THREE_FRY,   /* rng_three_fry */
	NX_RNG_PHILOX,      /* rng_philox */
} nx_rng_algorithm;

typedef enum nx_rng_distribution {
	NX_RNG_DIST_NONE = 0,
	NX_RNG_DIST_UNIFORM, /* rng_uniform */
	NX_RNG_DIST_NORMAL,  /* rng_normal */
} nx_rng_distribution;

/* The role of called computations is fixed by the opcode:
 *   to_apply   : reduce, reduce-window, map, sort, scatter, all-reduce,
 *                reduce-scatter, call, custom-call (called_computations)
 *   while      : called[0] = condition, called[1] = body
 *   conditional: called[] = branch_computations (or true, false)
 *   select-and-scatter: called[0] = select, called[1] = scatter
 *   fusion, async-start, call: called[0] = calls
 */

/* ------------------------------------------------------------ IR objects */

typedef struct nx_inst nx_inst;
/* The one parser of a custom call's axis: backend_config "3", 3 or "\"3\""
 * (quotes and spaces around one integer, nothing else). */
bool nx_custom_call_axis_parse(const char *config, int64_t *axis);
/* The axis of an AwsNeuronSoftmax-style custom call: its backend_config
 * (nx_custom_call_axis_parse; negative counts from the end); rank - 1 when
 * absent or not an integer. */
int64_t nx_custom_call_axis(const nx_inst *i, int rank);
typedef struct nx_comp nx_comp;
typedef struct nx_module nx_module;

/* Every attribute lives in this one struct; an opcode uses the fields its
 * syntax has. Unknown attributes are kept verbatim in attrs. */
typedef struct nx_attrs {
	int64_t parameter_number; /* parameter */
	int64_t tuple_index;      /* get-tuple-element index= */
	int64_t iota_dimension;   /* iota */
	nx_ivec dimensions;       /* broadcast, reduce, transpose, reverse, concatenate,
	                             map, sort, all-gather, all-to-all, reduce-scatter, ... */
	bool has_dimensions;      /* dimensions= was given (it may be {}) */
	nx_cmp_dir direction;     /* compare */
	nx_cmp_type compare_type; /* compare type= */
	nx_literal *literal;      /* constant */
	nx_ivec slice_start, slice_limit, slice_stride; /* slice={[a:b:s], ...} */
	nx_ivec dynamic_slice_sizes;
	nx_pad_dim *padding; /* pad: one per dim of the operand (padding=lo_hi_int x ...) */
	int npadding;
	nx_window window; /* convolution, reduce-window, select-and-scatter */
	nx_conv_dnums conv;
	int64_t feature_group_count; /* default 1 */
	int64_t batch_group_count;   /* default 1 */
	nx_dot_dnums dot;
	nx_gather_dnums gather;
	nx_scatter_dnums scatter;
	const char *custom_call_target;
	const char *api_version; /* e.g. "API_VERSION_ORIGINAL"; NULL = absent */
	bool custom_call_has_side_effect;
	const char *backend_config; /* unescaped; NULL = absent */
	bool backend_config_raw;    /* printed as {..} JSON instead of a quoted string */
	nx_replica_groups replica_groups;
	int64_t channel_id; /* 0 = absent */
	bool use_global_device_ids;
	bool constrain_layout;
	int64_t (*source_target_pairs)[2]; /* collective-permute */
	int nsource_target_pairs;
	nx_fft_type fft_type;
	nx_ivec fft_length;
	float epsilon;         /* batch-norm-* */
	int64_t feature_index; /* batch-norm-* */
	nx_rng_algorithm rng_algorithm;
	nx_rng_distribution rng_distribution;
	int64_t exponent_bits, mantissa_bits; /* reduce-precision */
	bool is_stable;                       /* sort */
	const char *fusion_kind; /* fusion kind=kLoop|kInput|kOutput|kCustom */
	nx_opcode async_wrapped; /* "negate-start" form: the wrapped opcode; NX_OP_COUNT if none */
	const char *sharding;    /* text inside sharding={...}; NULL = absent */
	nx_kv *metadata;         /* metadata={k=v ...}; string values unescaped */
	int nmetadata;
	nx_kv *frontend_attributes; /* frontend_attributes={k="v",...}; unescaped */
	int nfrontend_attributes;
	nx_inst **control_predecessors;
	int ncontrol_predecessors;
	nx_kv *unknown; /* other attributes: key and verbatim value text, in input order */
	int nunknown;
} nx_attrs;

struct nx_inst {
	nx_opcode op;
	const char *name; /* without the leading '%' */
	int64_t id;       /* unique in the module (proto id) */
	nx_shape *shape;
	nx_inst **operands;
	int noperands;
	nx_comp **called; /* called computations; role by opcode (see above) */
	int ncalled;
	nx_comp *parent;
	nx_attrs a;
	int line, col; /* source position of the definition (0 when built) */
	void *aux;     /* scratch pointer for the pass that currently runs */
};

struct nx_comp {
	const char *name;
	int64_t id; /* unique in the module (next_id, or the proto's id) */
	nx_module *module;
	nx_inst **insts; /* topological order (operands before users); the reader
	                    keeps file order when it already is one; the printer
	                    prints in this order */
	int ninsts, cap;
	nx_inst *root;
	nx_inst **params; /* indexed by parameter number */
	int nparams;
	bool is_entry;
	const char *execution_thread; /* NULL = main */
	int line, col;
};

/* input_output_alias entry: {output_index}: (param, {param_index}, kind) */
typedef struct nx_alias {
	nx_ivec output_index;
	int64_t param_number;
	nx_ivec param_index;
	bool must_alias; /* must-alias vs may-alias; printed only when given */
	bool kind_given; /* kind text was present */
} nx_alias;

/* The source-location tables XLA prints before the first computation
 * (FileNames, FunctionNames, FileLocations, StackFrames; StackFrameIndexProto
 * in a proto). Ids are 1-based positions in each table; 0 means none.
 * Instructions point into them with metadata stack_frame_id. */
typedef struct nx_file_location {
	int64_t file_name_id, function_name_id;
	int64_t line, end_line, column, end_column;
} nx_file_location;

typedef struct nx_stack_frame {
	int64_t file_location_id, parent_frame_id;
} nx_stack_frame;

typedef struct nx_stack_frames {
	const char **file_names;
	int nfile_names;
	const char **function_names;
	int nfunction_names;
	nx_file_location *locations;
	int nlocations;
	nx_stack_frame *frames;
	int nframes;
} nx_stack_frames;

struct nx_module {
	nx_arena arena;
	const char *name;
	const char *file; /* source file name, for diagnostics; may be NULL */
	nx_comp **comps;  /* definition order, entry included */
	int ncomps, capcomps;
	nx_comp *entry;
	nx_alias *aliases;
	int naliases;
	int64_t replica_count;  /* 0 = absent (means 1) */
	int64_t num_partitions; /* 0 = absent (means 1) */
	bool is_scheduled;
	nx_shape *entry_layout; /* entry_computation_layout as a tuple of
	                           (params..., result) shapes; NULL = absent */
	int entry_layout_nparams;
	nx_kv *frontend_attributes; /* module-level frontend_attributes */
	int nfrontend_attributes;
	nx_kv *unknown; /* other header attributes, verbatim, in input order */
	int nunknown;
	int64_t next_id; /* the next unused computation/instruction id */
	nx_stack_frames stack; /* source-location tables (all empty when absent) */
	int nelided; /* constants written as {...} and filled by the reader */
};

/* Module construction. Names are copied into the arena. */
nx_module *nx_module_new(const char *name);
void nx_module_free(nx_module *m);
nx_comp *nx_comp_new(nx_module *m, const char *name);
/* Appends an instruction to c. operands are copied. The shape is used as is
 * (it must live in m's arena). a.async_wrapped is set to NX_OP_COUNT,
 * feature/batch group counts to 1, window defaults left to the caller. */
nx_inst *nx_inst_new(nx_comp *c, nx_opcode op, nx_shape *shape, nx_inst *const *operands,
                     int noperands, const char *name);
void nx_inst_set_called(nx_inst *i, nx_comp *const *called, int n);
void nx_comp_add_param(nx_comp *c, nx_inst *param); /* by a.parameter_number */
nx_comp *nx_module_find_comp(const nx_module *m, const char *name);
nx_inst *nx_comp_find_inst(const nx_comp *c, const char *name);
/* Replaces every use of old (operands, root) in c by new. */
void nx_comp_replace_uses(nx_comp *c, nx_inst *old, nx_inst *repl);
/* Removes instructions for which keep[i] is false (index = position). */
void nx_comp_compact(nx_comp *c, const bool *keep);
/* Makes a unique instruction name in m from base ("add" -> "add.12"), with
 * nx_fresh_name (ir/map.h) over the module's instruction names: linear in
 * the module, for one-off names; a pass that makes many keeps an nx_strset
 * (nx_rw_unique_name). */
const char *nx_module_unique_name(nx_module *m, const char *base);
nx_arena *nx_module_arena(nx_module *m);

/* nx_ivec helpers */
nx_ivec nx_ivec_dup(nx_arena *a, const int64_t *v, int n);
bool nx_ivec_eq(nx_ivec x, nx_ivec y);

/* ------------------------------------------------ entry points of ir/ files */

/* ir/hlo/read_text.c: parse HLO text. file is used in diagnostics. On error
 * returns NULL and fills *d. */
nx_module *nx_read_text(const char *text, size_t len, const char *file, nx_diag *d);
/* ir/hlo/read_file.c: read a file (text or HloModuleProto, detected from the
 * content), returning the module. */
nx_module *nx_read_file(const char *path, nx_diag *d);
bool nx_looks_like_text(const char *buf, size_t len);
/* The whole file ("-" = stdin), malloc'd and NUL-terminated; NULL with *d set. */
char *nx_read_whole_file(const char *path, size_t *len, nx_diag *d);

/* ir/hlo/read_text.c: parses "<shape> <value>" literal text as HLO constants and
 * XLA's literal printer write it ("f32[2,2] {{1, 2}, {3, 4}}", "pred[] true",
 * "c64[2] {(1, 0), (2, 3)}", "(s32[], f32[]) (1, 2.5)") into arena a. */
nx_literal *nx_parse_literal(nx_arena *a, const char *text, size_t len, nx_diag *d);

/* ir/hlo/stack_frames.c: the user's source of an instruction, for
 * diagnostics: "op_name at file:line (in function)" from metadata
 * source_file/source_line, else from its stack_frame_id in m's tables (the
 * innermost frame outside site-/dist-packages, else the innermost).
 * false (buf "") when it has neither an op_name nor a location. */
bool nx_inst_source(const nx_module *m, const nx_inst *i, char *buf, size_t n);

/* ir/hlo/stack_frames.c: completes a user error about an instruction of m
 * (d->inst): its position when the error has none, " [from <source>]" (as
 * nx_inst_source), a hint after "not supported" messages, and the source
 * line for the caret, read from the file. */
void nx_diag_explain(nx_diag *d, const nx_module *m);

/* ir/hlo/print.c: HLO text. The result is malloc'd; caller frees. */
typedef struct nx_print_opts {
	bool no_metadata;  /* omit metadata={...} and the stack-frame tables */
	bool canonical;    /* fingerprint form: ids instead of names, no metadata */
} nx_print_opts;
char *nx_print_module(const nx_module *m, const nx_print_opts *o);
char *nx_print_inst(const nx_inst *i, const nx_print_opts *o); /* one line */
/* "<shape> <value>" in the form nx_parse_literal reads (shortest round-trip
 * decimal for floats, inf/-inf/nan). malloc'd. */
char *nx_print_literal(const nx_literal *l);

/* ir/verify/verify.c: shape inference and structural checks. */
nx_status nx_verify_module(const nx_module *m, nx_diag *d);

/* ir/file_atomic.c: writes data to path whole or not at all (temporary + rename;
 * devices and FIFOs in place); fsync first when sync. A clear error in *d. */
nx_status nx_write_file_atomic(const char *path, const void *data, size_t len, bool sync, nx_diag *d);

/* ir/hash.c: SHA-256 (OpenSSL libcrypto). */
void nx_sha256(const void *data, size_t len, uint8_t out[32]);
void nx_sha256_hex(const void *data, size_t len, char out[65]);

/* ir/hlo/fingerprint.c: 32 hex chars + NUL. */
void nx_fingerprint(const nx_module *m, char out[33]);

/* ir/proto.c: HloModuleProto. */
nx_module *nx_read_proto(const void *data, size_t len, const char *file, nx_diag *d);
/* Serialized bytes, malloc'd; *len set. NULL on failure with *d filled. */
void *nx_write_proto(const nx_module *m, size_t *len, nx_diag *d);

#endif
