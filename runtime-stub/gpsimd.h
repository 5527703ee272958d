/* runtime-stub/gpsimd.h — GpSimd kernels in the runtime stub: bitcode from
 * an untrusted .neff (or a user's custom operator) validated, sandboxed and
 * JIT-compiled with LLVM ORC (gpsimd_jit.c), and the `call` instruction on
 * the simulated SBUF (sim_gpsimd.c). docs/gpsimd.md. */
#ifndef NX_RT_GPSIMD_H
#define NX_RT_GPSIMD_H

#include "backend/target/gpsimd.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct nx_gs_prog nx_gs_prog;

/* Validates each kernel (size, LLVM's verifier, entry function
 * `void names[k](ptr, i32)`, only the documented external symbols, no
 * inline assembly, atomics or indirect calls), instruments every memory
 * access and basic block, and JIT-compiles them with one LLJIT. NULL with a
 * message in err on any problem. */
nx_gs_prog *nx_gs_prog_load(int n, const char *const *names, const uint8_t *const *data, const size_t *len,
                            char *err, size_t errlen);
void nx_gs_prog_free(nx_gs_prog *p);
int nx_gs_prog_count(const nx_gs_prog *p);
const char *nx_gs_prog_name(const nx_gs_prog *p, int k);
/* IR instructions in kernel k's module, counted at validation (static: the
 * simulator's cost estimate must not depend on data). */
uint64_t nx_gs_prog_static_insts(const nx_gs_prog *p, int k);

/* Memory a kernel run may touch: nparts partitions of pstride bytes from
 * base, bytes [lo, hi) of each. */
typedef struct nx_gs_region {
	const uint8_t *base;
	int64_t pstride;
	int64_t nparts;
	int64_t lo, hi;
	bool writable;
} nx_gs_region;

/* Runs kernel k on t[0..n-1], accesses confined to the regions and the
 * kernel's stack. *insts gets the IR instructions it executed. -1 with a
 * message (out-of-slice access, instruction budget) otherwise. */
int nx_gs_run(const nx_gs_prog *p, int k, const nx_gs_tensor *t, int n, const nx_gs_region *r, int nr,
              uint64_t *insts, char *err, size_t errlen);

#endif
