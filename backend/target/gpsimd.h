/* backend/target/gpsimd.h — the GpSimd kernel ABI (published: the runtime
 * stub runs kernels with it, user kernels are written against it; see
 * docs/gpsimd.md).
 *
 * A GpSimd kernel is LLVM bitcode stored in the .neff as
 * sg00/gpsimd/<name>.bc and defining one external function <name>:
 *
 *     void <name>(const nx_gs_tensor *t, int32_t n);
 *
 * The POOL instruction `call` (isa.def) launches it: iarg0 is the kernel's
 * index in name order, ap[0..3] its tensors (SBUF; the first iarg1 of them
 * writable, the rest read-only), iarg2 the SIMD lanes the cost estimate
 * credits (1..NX_GS_MAX_LANES). The runtime calls the kernel once per GpSimd
 * core whose 16 partitions the operands touch, t[k] describing operand k
 * restricted to that core's partitions. Every load and store the kernel
 * makes is checked against those slices (reads: any operand, writes: the
 * writable ones) and the kernel's own stack; a violation stops the kernel
 * with an error naming the kernel, the core and the address. */
#ifndef NX_GPSIMD_H
#define NX_GPSIMD_H

#include <stdint.h>

#define NX_GS_CORES 8            /* GpSimd cores per NeuronCore */
#define NX_GS_CORE_PARTS 16      /* SBUF partitions wired to each */
#define NX_GS_MAX_LANES 16       /* 512-bit SIMD, 32-bit lanes */
#define NX_GS_MAX_BITCODE (16 << 20) /* bytes per kernel section */
#define NX_GS_MAX_KERNELS 4096

/* One operand's slice: element (p, r, c) is at
 * data + (p*stride[0] + r*stride[1] + c*stride[2]) * element size. */
typedef struct nx_gs_tensor {
	void *data;
	int32_t dtype;     /* nx_dtype (backend/target/isa.h) */
	int32_t rank;      /* 3 */
	int64_t shape[3];  /* partitions of this core, rows per partition, elements per row */
	int64_t stride[3]; /* elements */
} nx_gs_tensor;

/* Byte offsets of the fields, for code that builds the struct in LLVM IR. */
enum {
	NX_GS_T_DATA = 0,
	NX_GS_T_DTYPE = 8,
	NX_GS_T_RANK = 12,
	NX_GS_T_SHAPE = 16,
	NX_GS_T_STRIDE = 40,
	NX_GS_T_SIZE = 64,
};

/* Host functions a kernel may call besides LLVM intrinsics: libm's scalar
 * float functions. Anything else declared in a kernel is rejected at load. */
#define NX_GS_LIBM(X) \
	X(expf) X(logf) X(log1pf) X(expm1f) X(tanhf) X(sqrtf) X(sinf) X(cosf) X(tanf) X(atan2f) X(atanf) \
	X(powf) X(fmodf) X(erff) X(cbrtf) X(fabsf) X(floorf) X(ceilf) X(roundf) X(rintf) X(truncf) \
	X(fminf) X(fmaxf) X(nearbyintf) X(exp2f) X(log2f) X(log10f) X(asinf) X(acosf) X(sinhf) X(coshf) \
	X(exp) X(log) X(tanh) X(sqrt) X(pow) X(fmod) X(sin) X(cos) X(erf) X(log1p) X(expm1) X(atan2) \
	X(floor) X(ceil) X(round) X(trunc) X(rint) X(fabs)

#endif
