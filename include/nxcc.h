/* nxcc.h — the nxcc library: compile XLA HLO for AWS NeuronCore and run the
 * result on the simulated NeuronCore, from C (or anything with a C FFI).
 *
 * Stable: functions are only added; a changed meaning gets a new name.
 * NXCC_API_VERSION grows by one with each addition. docs/api.md describes
 * every function with an example. Link with `pkg-config --cflags --libs nxcc`.
 *
 * Threads: distinct objects may be used from distinct threads at once.
 * Errors: functions return an nxcc status (0 ok, 1 bad input or unsupported,
 * 70 internal error, 2 bad argument to the API) and describe the problem as
 * data (nxcc_diagnostic). Nothing in the library prints or exits. */
#ifndef NXCC_H
#define NXCC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NXCC_API_VERSION 1

enum { NXCC_OK = 0, NXCC_ERR_INPUT = 1, NXCC_ERR_API = 2, NXCC_ERR_INTERNAL = 70 };

/* One diagnostic. Strings are owned by the object that returned it. */
typedef struct nxcc_diagnostic {
	const char *severity;    /* "error" or "warning" */
	int code;                /* status class: 1 input/unsupported, 70 internal, 2 API misuse */
	const char *file;        /* the name given for the input, or NULL */
	int line, col;           /* 1-based; 0 when unknown */
	const char *instruction; /* HLO instruction the message is about, or NULL */
	const char *message;     /* without file:line:col or "error: " */
} nxcc_diagnostic;

/* "0.1.0" */
const char *nxcc_version(void);
int nxcc_api_version(void);

/* ---- compile ---- */

typedef struct nxcc_compile_result nxcc_compile_result;

/* Compiles an HLO module, HLO text or a serialized HloModuleProto (detected
 * from the content), with flags as on the nxcc compile / neuronx-cc command
 * line ("--target trn1 -O2 --auto-cast none"; quotes group words). name
 * (may be NULL) is the file name diagnostics show. The compile cache is used
 * when flags name one with --cache-dir DIR|s3://B/P (same layout and keys as
 * nxcc compile); NEURON_CC_FLAGS and NEURON_COMPILE_CACHE_URL are not read.
 * --output, --logfile and the like are ignored: the .neff comes back as
 * bytes. *out is always set (free it with nxcc_compile_result_free), also
 * on failure, so its diagnostics can be read. Returns the status. */
int nxcc_compile(const void *hlo, size_t hlo_len, const char *name, const char *flags, nxcc_compile_result **out);
/* The .neff bytes (NULL when the compile failed); valid until the result is freed. */
const void *nxcc_compile_neff(const nxcc_compile_result *r, size_t *len);
int nxcc_compile_status(const nxcc_compile_result *r);
/* 1 when the .neff came from the cache. */
int nxcc_compile_cache_hit(const nxcc_compile_result *r);
int nxcc_compile_num_diagnostics(const nxcc_compile_result *r);
const nxcc_diagnostic *nxcc_compile_diagnostic(const nxcc_compile_result *r, int i);
void nxcc_compile_result_free(nxcc_compile_result *r);

/* ---- run on the simulator ---- */

typedef struct nxcc_program nxcc_program;

/* Loads a .neff (validated as untrusted input). On failure *out is NULL and
 * diag (may be NULL) is filled; release its strings with
 * nxcc_diagnostic_clear. */
int nxcc_program_load(const void *neff, size_t len, nxcc_program **out, nxcc_diagnostic *diag);
void nxcc_program_free(nxcc_program *p);
int nxcc_program_num_inputs(const nxcc_program *p);
int nxcc_program_num_outputs(const nxcc_program *p);
/* Per input (is_output 0) or output (1): name, device element type ("f32",
 * "bf16", "s32", ...), rank and dimensions, size in bytes. NULL / -1 when
 * i is out of range. */
const char *nxcc_program_tensor_name(const nxcc_program *p, int is_output, int i);
const char *nxcc_program_tensor_dtype(const nxcc_program *p, int is_output, int i);
int nxcc_program_tensor_rank(const nxcc_program *p, int is_output, int i);
int64_t nxcc_program_tensor_dim(const nxcc_program *p, int is_output, int i, int d);
int64_t nxcc_program_tensor_bytes(const nxcc_program *p, int is_output, int i);

/* Runs p on one simulated NeuronCore: inputs[i] holds input i's bytes in
 * its device type (row-major, little-endian; bf16 as raw 16-bit words),
 * outputs[i] receives output i (nxcc_program_tensor_bytes bytes each).
 * *sim_ns (may be NULL) gets the simulated time in nanoseconds. Programs
 * compiled for several ranks (collectives) need the command line. */
int nxcc_run(const nxcc_program *p, const void *const *inputs, void *const *outputs, double *sim_ns,
             nxcc_diagnostic *diag);

/* Releases the strings of a diagnostic filled by nxcc_program_load / nxcc_run. */
void nxcc_diagnostic_clear(nxcc_diagnostic *d);

#ifdef __cplusplus
}
#endif

#endif
