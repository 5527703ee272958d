/* backend/target/neff.h — the .neff container (published: runtime-stub reads it).
 *
 * A fixed 1024-byte header, then a POSIX ustar archive (the payload) with
 * entries sorted by name, mtime 0, uid/gid 0:
 *   sg00/def.json       inputs/outputs/constants (names, shapes, dtypes, HBM
 *                       offsets, aliasing), HBM size and scratch, semaphores
 *   sg00/pe.bin act.bin dve.bin pool.bin sp.bin   instruction streams (isa.h)
 *   sg00/const/NAME.npy constants, copied to their HBM offset before a run
 *   sg00/debug.json     {"names": [...]}: nx_insn.debug_id -> HLO instruction,
 *                       and "sources": [...] (same index): where that kernel
 *                       came from (nx_neff_src; profiles and reports show it)
 *   sg00/gpsimd/NAME.bc GpSimd kernels, LLVM bitcode defining function NAME
 *                       (backend/target/gpsimd.h); `call` iarg0 indexes them in
 *                       name order
 * def.json also records "replicas" (ranks the program runs on; the header's
 * NeuronCore count) and "replica_groups": the table collective instructions
 * index (iarg2), each entry {"groups": [[ids]...]} or {"pairs": [[src, tgt]...]}.
 * `tail -c +1025 x.neff | tar -tf -` lists the payload. */
#ifndef NX_NEFF_H
#define NX_NEFF_H

#include "backend/target/isa.h"
#include "ir/ir.h" /* nx_sha256 */

#include <stddef.h>
#include <stdint.h>

#define NX_NEFF_MAGIC "NXNEFF\r\n" /* 8 bytes; \r\n catches text-mode mangling */
#define NX_NEFF_VERSION 1
#define NX_NEFF_HEADER_SIZE 1024
#define NX_NEFF_MAX_RANK 8

/* Header layout: byte offsets; integers little-endian; strings NUL-padded. */
enum {
	NX_NEFF_OFF_MAGIC = 0,        /* 8 bytes */
	NX_NEFF_OFF_VERSION = 8,      /* u32 format version */
	NX_NEFF_OFF_HEADER_SIZE = 12, /* u32, 1024 */
	NX_NEFF_OFF_PAYLOAD_SIZE = 16, /* u64 */
	NX_NEFF_OFF_SHA256 = 24,      /* 32 bytes: sha256 of the payload */
	NX_NEFF_OFF_UUID = 56,        /* 16 bytes, derived from the sha256 */
	NX_NEFF_OFF_NCORES = 72,      /* u32 NeuronCores requested */
	NX_NEFF_OFF_FEATURES = 76,    /* u32 feature bits */
	NX_NEFF_OFF_TARGET = 80,      /* 16 bytes */
	NX_NEFF_OFF_COMPILER = 96,    /* 32 bytes compiler version */
	NX_NEFF_OFF_MODULE = 128,     /* 128 bytes module name */
	NX_NEFF_OFF_HEADER_SHA256 = 256, /* 32 bytes: sha256 of header bytes [0, 256) */
	NX_NEFF_OFF_END = 288,        /* the rest is zero (checked) */
};
enum {
	NX_NEFF_FEAT_COLLECTIVES = 1 << 0, /* streams hold collective instructions */
	NX_NEFF_FEAT_GPSIMD = 1 << 1,      /* sg00/gpsimd/ kernels present */
	NX_NEFF_FEAT_ALL = 3,
};

typedef struct nx_neff_tensor {
	const char *name;
	nx_dtype dtype;
	int rank;
	int64_t dims[NX_NEFF_MAX_RANK];
	int64_t hbm_offset; /* bytes from the start of the program's HBM */
	int alias_input;    /* outputs: input index sharing the buffer, -1 none */
	bool nonneg;        /* inputs: random test data must be >= 0 (nx_random_domains) */
	const void *data;   /* constants only: the bytes (elements x dtype size) */
} nx_neff_tensor;

/* One replica-group table entry: n groups (len[g] ids each, concatenated in
 * ids) for all_reduce / all_gather / reduce_scatter, or n (source, target)
 * pairs (ids[2k], ids[2k+1]; len NULL) for collective_permute. */
typedef struct nx_neff_rgroup {
	bool pairs;
	int n;
	const int *len;
	const int32_t *ids;
} nx_neff_rgroup;

/* Where a kernel (debug id) came from: its HLO instruction (for a fusion the
 * root of the fused computation), the line of that instruction in the HLO
 * file, the fusion kind, and the framework's metadata (op_name,
 * source_file:source_line). Absent fields are NULL / 0. */
typedef struct nx_neff_src {
	const char *hlo;  /* root HLO instruction name */
	const char *kind; /* fusion kind (kLoop, kInput, kOutput, kCustom) or the opcode */
	int line;         /* line in the HLO file */
	const char *op_name, *source_file;
	int source_line;
} nx_neff_src;

/* A GpSimd kernel: LLVM bitcode defining the function `name`. */
typedef struct nx_neff_kernel {
	const char *name;
	const uint8_t *data;
	size_t len;
} nx_neff_kernel;

typedef struct nx_neff_program {
	const char *module_name;
	const char *target;
	const char *compiler_version; /* NULL: NX_VERSION */
	int n_cores;
	uint32_t features;
	int ninputs, noutputs, nconsts;
	const nx_neff_tensor *inputs, *outputs, *consts;
	int64_t hbm_size; /* everything: inputs, outputs, constants, scratch */
	int64_t scratch_offset, scratch_size;
	int nsems;        /* semaphores used (indices < nsems) */
	const nx_insn *streams[NX_ENG_COUNT];
	size_t nstream[NX_ENG_COUNT];
	int ndebug;
	const char *const *debug_names;
	const nx_neff_src *debug_src;  /* ndebug entries, or NULL */
	int nreplicas;                 /* 0: n_cores */
	bool has_rank_id;              /* the runtime stores the rank (u32) at rank_id_offset */
	int64_t rank_id_offset;
	int nrgroups;
	const nx_neff_rgroup *rgroups; /* replica-group table */
	int ngpsimd;                   /* GpSimd kernels, sorted by name */
	const nx_neff_kernel *gpsimd;
} nx_neff_program;

struct nx_diag;
/* Serializes p (no validation beyond what writing needs). *out malloc'd. */
int nx_neff_write(const nx_neff_program *p, uint8_t **out, size_t *len, struct nx_diag *d);
/* Writes atomically to path. */
int nx_neff_write_file(const nx_neff_program *p, const char *path, struct nx_diag *d);
/* Bytes of a tensor (elements x dtype size); -1 on overflow. */
int64_t nx_neff_tensor_bytes(const nx_neff_tensor *t);

/* Seals the header after every other field is written: the header hash
 * covers magic, sizes, the payload hash, uuid, core count, features,
 * target, compiler and module name, so no header bit flips unnoticed. */
static inline void nx_neff_seal_header(uint8_t *h)
{
	nx_sha256(h, NX_NEFF_OFF_HEADER_SHA256, h + NX_NEFF_OFF_HEADER_SHA256);
}

#endif
