/* backend/target/isa.h — the nxcc NeuronCore ISA (published: runtime-stub uses it).
 *
 * Five sequencers (PE, ACT, DVE, POOL, SP) each run one instruction stream.
 * Operands are access patterns (nx_ap) over HBM, SBUF or PSUM. Loops are
 * counted (loop/endloop); an access pattern adds loop index x loop_stride[d]
 * bytes for each enclosing loop d (0 = outermost), so code size does not grow
 * with tensor volume. Engines synchronize through semaphores (wait >= v,
 * signal +n). Instructions encode to a fixed 388-byte little-endian record
 * (NX_ISA_RECORD); a stream is a 16-byte header and the records. */
#ifndef NX_ISA_H
#define NX_ISA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define NX_ISA_VERSION 1
#define NX_ISA_MAGIC "NXIS"
#define NX_AP_DIMS 4   /* free-axis (stride, count) pairs */
#define NX_LOOP_DEPTH 4 /* loop nesting limit */
#define NX_NREGS 16    /* scalar registers per sequencer */
#define NX_CTRL_DEPTH 4 /* control (while) loops around the data loops */

typedef enum nx_engine { NX_ENG_PE, NX_ENG_ACT, NX_ENG_DVE, NX_ENG_POOL, NX_ENG_SP, NX_ENG_COUNT } nx_engine;
enum {
	NX_EM_PE = 1 << NX_ENG_PE,
	NX_EM_ACT = 1 << NX_ENG_ACT,
	NX_EM_DVE = 1 << NX_ENG_DVE,
	NX_EM_POOL = 1 << NX_ENG_POOL,
	NX_EM_SP = 1 << NX_ENG_SP,
	NX_EM_ALL = (1 << NX_ENG_COUNT) - 1,
};

typedef enum nx_mem { NX_MEM_NONE, NX_MEM_HBM, NX_MEM_SBUF, NX_MEM_PSUM, NX_MEM_COUNT } nx_mem;

/* Element types the engines read and write. s64/u64 are storage only: the
 * types of 64-bit program inputs and outputs (8 bytes per element, little
 * endian); the lowering moves and computes them as u32 (lo, hi) word pairs
 * and never emits an instruction operand of these types. Append only
 * (encoded). */
#define NX_DTYPES(X)                \
	X(F32, "f32", 4)            \
	X(BF16, "bf16", 2)          \
	X(F16, "f16", 2)            \
	X(FP8E4M3, "f8e4m3fn", 1)   \
	X(FP8E5M2, "f8e5m2", 1)     \
	X(S32, "s32", 4)            \
	X(U32, "u32", 4)            \
	X(S16, "s16", 2)            \
	X(U16, "u16", 2)            \
	X(S8, "s8", 1)              \
	X(U8, "u8", 1)              \
	X(S64, "s64", 8)            \
	X(U64, "u64", 8)
typedef enum nx_dtype {
#define X(e, n, b) NX_DT_##e,
	NX_DTYPES(X)
#undef X
	NX_DT_COUNT
} nx_dtype;

typedef enum nx_opcode_isa {
#define INSN(e, name, eng, nap, func, cost) NX_I_##e,
#include "backend/target/isa.def"
#undef INSN
	NX_I_COUNT
} nx_isa_op;
_Static_assert(NX_I_COUNT == 34, "isa.def rows: update the opcode count (append only)");

typedef enum nx_act_func {
#define ACT(e, name) NX_ACT_##e,
#include "backend/target/act.def"
#undef ACT
	NX_ACT_COUNT
} nx_act_func;

typedef enum nx_alu_op {
#define ALU(e, name, kind) NX_ALU_##e,
#include "backend/target/alu.def"
#undef ALU
	NX_ALU_COUNT
} nx_alu_op;

enum { NX_F_NONE, NX_F_ACT, NX_F_ALU };
typedef enum nx_cost_id { NX_COST_CTRL, NX_COST_MATMUL, NX_COST_ACT, NX_COST_VEC1, NX_COST_VEC2,
	                  NX_COST_XPART, NX_COST_DMA, NX_COST_CC, NX_COST_GPSIMD } nx_cost_id;

/* Instruction flags. */
enum {
	NX_IF_START = 1 << 0,   /* matmul: overwrite the PSUM bank instead of accumulating */
	NX_IF_REVERSE = 1 << 1, /* tensor_scalar: scalar op src */
	NX_IF_DROP = 1 << 2,    /* dma_scatter: an index out of range drops its row */
	NX_IF_ALL = 7,
};

typedef struct nx_ap {
	uint8_t space; /* nx_mem; NONE = absent optional operand */
	uint8_t dtype; /* nx_dtype */
	uint8_t ndims; /* free-axis pairs used, outermost first */
	uint16_t part_start, part_count;
	int64_t part_stride; /* HBM only: elements between partition rows */
	int64_t offset;      /* bytes: into the partition (SBUF/PSUM) or into HBM */
	int32_t stride[NX_AP_DIMS]; /* elements */
	uint32_t count[NX_AP_DIMS];
	int64_t loop_stride[NX_LOOP_DEPTH]; /* bytes per iteration of enclosing loop d */
} nx_ap;

typedef struct nx_insn {
	uint16_t op;    /* nx_isa_op */
	uint8_t engine; /* nx_engine */
	uint8_t func;   /* nx_act_func or nx_alu_op */
	uint16_t flags; /* NX_IF_* */
	int32_t iarg[4];
	float fimm[2];
	uint32_t debug_id; /* index into sg00/debug.json names; 0xffffffff none */
	nx_ap ap[4];
} nx_insn;

typedef struct nx_isa_info {
	const char *name;
	unsigned engines;
	int nap;
	int func_kind;
	nx_cost_id cost;
} nx_isa_info;

/* Static tables, usable without linking backend code. */
static const nx_isa_info nx_isa_table[NX_I_COUNT] = {
#define INSN(e, name, eng, nap, func, cost) {name, eng, nap, NX_##func, NX_COST_##cost},
#include "backend/target/isa.def"
#undef INSN
};
static const char *const nx_engine_names[NX_ENG_COUNT] = {"pe", "act", "dve", "pool", "sp"};
static const char *const nx_mem_names[NX_MEM_COUNT] = {"none", "hbm", "sbuf", "psum"};
static const char *const nx_dtype_names[NX_DT_COUNT] = {
#define X(e, n, b) n,
	NX_DTYPES(X)
#undef X
};
static const uint8_t nx_dtype_bytes[NX_DT_COUNT] = {
#define X(e, n, b) b,
	NX_DTYPES(X)
#undef X
};
static const char *const nx_act_names[NX_ACT_COUNT] = {
#define ACT(e, name) name,
#include "backend/target/act.def"
#undef ACT
};
static const char *const nx_alu_names[NX_ALU_COUNT] = {
#define ALU(e, name, kind) name,
#include "backend/target/alu.def"
#undef ALU
};
static const char nx_alu_kinds[NX_ALU_COUNT] = {
#define ALU(e, name, kind) kind,
#include "backend/target/alu.def"
#undef ALU
};

/* ------------------------------------------------------------ wire format
 * Record: u16 op, u8 engine, u8 func, u16 flags, u16 reserved(0), i32 iarg[4],
 * f32 fimm[2], u32 debug_id, then 4 access patterns of 88 bytes: u8 space,
 * u8 dtype, u8 ndims, u8 reserved, u16 part_start, u16 part_count,
 * i64 part_stride, i64 offset, i32 stride[4], u32 count[4], i64 loop_stride[4].
 * Stream: "NXIS", u32 version, u32 engine, u32 count, records. */
#define NX_ISA_AP_BYTES 88
#define NX_ISA_HEAD_BYTES 36
#define NX_ISA_RECORD (NX_ISA_HEAD_BYTES + 4 * NX_ISA_AP_BYTES)
#define NX_ISA_STREAM_HEADER 16

static inline void nx_put_le(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}
static inline uint64_t nx_get_le(const uint8_t *p, int n)
{
	uint64_t v = 0;
	for (int i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/* Fixed-width little-endian stores: one store each on a little-endian host
 * (the encoder writes ~400 bytes per instruction), bytes elsewhere. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define NX_LE_STORE(p, v, T) \
	do { \
		T nx_le_v_ = (T)(v); \
		memcpy((p), &nx_le_v_, sizeof nx_le_v_); \
	} while (0)
#else
#define NX_LE_STORE(p, v, T) nx_put_le((p), (uint64_t)(T)(v), (int)sizeof(T))
#endif

/* Writes every byte of one record, the reserved ones as 0. */
static inline void nx_isa_put_record(uint8_t *p, const nx_insn *in)
{
	NX_LE_STORE(p + 0, in->op, uint16_t);
	p[2] = in->engine;
	p[3] = in->func;
	NX_LE_STORE(p + 4, in->flags, uint16_t);
	p[6] = p[7] = 0;
	for (int i = 0; i < 4; i++)
		NX_LE_STORE(p + 8 + 4 * i, in->iarg[i], uint32_t);
	for (int i = 0; i < 2; i++) {
		uint32_t fb;
		memcpy(&fb, &in->fimm[i], 4);
		NX_LE_STORE(p + 24 + 4 * i, fb, uint32_t);
	}
	NX_LE_STORE(p + 32, in->debug_id, uint32_t);
	for (int a = 0; a < 4; a++) {
		uint8_t *q = p + NX_ISA_HEAD_BYTES + a * NX_ISA_AP_BYTES;
		const nx_ap *ap = &in->ap[a];
		q[0] = ap->space;
		q[1] = ap->dtype;
		q[2] = ap->ndims;
		q[3] = 0;
		NX_LE_STORE(q + 4, ap->part_start, uint16_t);
		NX_LE_STORE(q + 6, ap->part_count, uint16_t);
		NX_LE_STORE(q + 8, ap->part_stride, uint64_t);
		NX_LE_STORE(q + 16, ap->offset, uint64_t);
		for (int d = 0; d < NX_AP_DIMS; d++) {
			NX_LE_STORE(q + 24 + 4 * d, ap->stride[d], uint32_t);
			NX_LE_STORE(q + 40 + 4 * d, ap->count[d], uint32_t);
		}
		for (int d = 0; d < NX_LOOP_DEPTH; d++)
			NX_LE_STORE(q + 56 + 8 * d, ap->loop_stride[d], uint64_t);
	}
}

/* Decodes one record without judging it (see nx_isa_check_record). */
static inline void nx_isa_get_record(const uint8_t *p, nx_insn *in)
{
	uint32_t fb;
	memset(in, 0, sizeof *in);
	in->op = (uint16_t)nx_get_le(p, 2);
	in->engine = p[2];
	in->func = p[3];
	in->flags = (uint16_t)nx_get_le(p + 4, 2);
	for (int i = 0; i < 4; i++)
		in->iarg[i] = (int32_t)(uint32_t)nx_get_le(p + 8 + 4 * i, 4);
	for (int i = 0; i < 2; i++) {
		fb = (uint32_t)nx_get_le(p + 24 + 4 * i, 4);
		memcpy(&in->fimm[i], &fb, 4);
	}
	in->debug_id = (uint32_t)nx_get_le(p + 32, 4);
	for (int a = 0; a < 4; a++) {
		const uint8_t *q = p + NX_ISA_HEAD_BYTES + a * NX_ISA_AP_BYTES;
		nx_ap *ap = &in->ap[a];
		ap->space = q[0];
		ap->dtype = q[1];
		ap->ndims = q[2];
		ap->part_start = (uint16_t)nx_get_le(q + 4, 2);
		ap->part_count = (uint16_t)nx_get_le(q + 6, 2);
		ap->part_stride = (int64_t)nx_get_le(q + 8, 8);
		ap->offset = (int64_t)nx_get_le(q + 16, 8);
		for (int d = 0; d < NX_AP_DIMS; d++) {
			ap->stride[d] = (int32_t)(uint32_t)nx_get_le(q + 24 + 4 * d, 4);
			ap->count[d] = (uint32_t)nx_get_le(q + 40 + 4 * d, 4);
		}
		for (int d = 0; d < NX_LOOP_DEPTH; d++)
			ap->loop_stride[d] = (int64_t)nx_get_le(q + 56 + 8 * d, 8);
	}
}

/* Structural checks of one decoded record (fields in range, operands present
 * where required). NULL when fine, else a static message. */
static inline const char *nx_isa_check_record(const nx_insn *in, int engine)
{
	if (in->op >= NX_I_COUNT)
		return "unknown opcode";
	const nx_isa_info *info = &nx_isa_table[in->op];
	if (in->engine != engine)
		return "engine field does not match its stream";
	if (!(info->engines & (1u << engine)))
		return "opcode not executable on this engine";
	if (info->func_kind == NX_F_ACT && in->func >= NX_ACT_COUNT)
		return "unknown activation function";
	if (info->func_kind == NX_F_ALU && in->func >= NX_ALU_COUNT)
		return "unknown ALU operator";
	if (info->func_kind == NX_F_NONE && in->func != 0)
		return "func field set on an instruction without one";
	if (in->flags & ~NX_IF_ALL)
		return "unknown flag bits";
	for (int a = 0; a < 4; a++) {
		const nx_ap *ap = &in->ap[a];
		if (a >= info->nap && ap->space != NX_MEM_NONE)
			return "operand given beyond the instruction's operands";
		if (ap->space >= NX_MEM_COUNT)
			return "unknown memory space";
		if (ap->space == NX_MEM_NONE)
			continue;
		if (ap->dtype >= NX_DT_COUNT)
			return "unknown dtype";
		if (ap->dtype == NX_DT_S64 || ap->dtype == NX_DT_U64)
			return "s64/u64 operand (storage-only types: moved as u32 word pairs)";
		if (ap->ndims > NX_AP_DIMS)
			return "more than 4 free-axis pairs";
		if (ap->part_count == 0)
			return "access pattern with 0 partitions";
		for (int d = 0; d < ap->ndims; d++)
			if (ap->count[d] == 0)
				return "access pattern with a 0 count";
	}
	return NULL;
}

/* The count a wait blocks for: iarg1, plus register iarg2-1 when iarg2 > 0,
 * plus register iarg3-1 when iarg3 > 0. */
static inline int64_t nx_isa_wait_target(const nx_insn *in, const int32_t *reg)
{
	return (int64_t)in->iarg[1] + (in->iarg[2] > 0 && in->iarg[2] <= NX_NREGS ? reg[in->iarg[2] - 1] : 0) +
	       (in->iarg[3] > 0 && in->iarg[3] <= NX_NREGS ? reg[in->iarg[3] - 1] : 0);
}

/* A control loop / its endloop (isa.def LOOP): no access-pattern level. */
static inline bool nx_isa_ctrl_loop(const nx_insn *in)
{
	return (in->op == NX_I_LOOP && in->iarg[2] == 1) || (in->op == NX_I_ENDLOOP && in->iarg[0] == 1);
}

/* Number of elements per partition of an access pattern. */
static inline uint64_t nx_ap_free_elems(const nx_ap *ap)
{
	uint64_t n = 1;
	for (int d = 0; d < ap->ndims; d++)
		n *= ap->count[d];
	return n;
}

/* ------------------------------------------------- backend/target/encode.c, disasm.c */
/* Encodes a stream (header + records). Caller frees *out. */
void nx_isa_encode(int engine, const nx_insn *insns, size_t n, uint8_t **out, size_t *len);
/* The same into dst, which holds nx_isa_stream_bytes(n) bytes (every one
 * written). */
void nx_isa_encode_to(int engine, const nx_insn *insns, size_t n, uint8_t *dst);
static inline size_t nx_isa_stream_bytes(size_t n)
{
	return NX_ISA_STREAM_HEADER + n * NX_ISA_RECORD;
}
/* Decodes a stream; *insns malloc'd. On a malformed stream returns -1 and
 * writes a message ("instruction 3: unknown opcode 99") into err. */
int nx_isa_decode(const uint8_t *buf, size_t len, int *engine, nx_insn **insns, size_t *n,
                  char *err, size_t errlen);
/* One line, no newline: "matmul.pe psum[0:128]+0 f32 [1,512] <- ..." */
void nx_isa_disasm(const nx_insn *in, char *buf, size_t n);
/* Whole stream, one instruction per line, prefixed by its index. malloc'd. */
char *nx_isa_disasm_stream(const nx_insn *insns, size_t n);
/* Access pattern builders for lowering and tests. */
nx_ap nx_ap_sbuf(nx_dtype t, int p0, int np, int64_t off, int ndims, const int32_t *stride,
                 const uint32_t *count);
nx_ap nx_ap_psum(nx_dtype t, int p0, int np, int64_t off, int ndims, const int32_t *stride,
                 const uint32_t *count);
nx_ap nx_ap_hbm(nx_dtype t, int64_t off, int np, int64_t part_stride, int ndims,
                const int32_t *stride, const uint32_t *count);
nx_insn nx_insn_new(nx_isa_op op, nx_engine e);

#endif
