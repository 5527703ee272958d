/* runtime-stub/gpsimd_jit.c — GpSimd kernel bitcode treated as untrusted
 * input: validated, sandboxed, JIT-compiled once per load with LLVM ORC
 * (LLJIT through the C API).
 *
 * Validation: at most NX_GS_MAX_BITCODE bytes, parses as bitcode, passes
 * LLVM's verifier, defines `void NAME(ptr, i32)`, declares no function but
 * the libm allow-list (backend/target/gpsimd.h) and vetted intrinsics, no
 * external globals, no module inline assembly, no inline asm, indirect
 * calls, invokes or atomics.
 * Sandbox: every load, store and memory intrinsic gets a call to
 * __nx_gs_chk(addr, bytes, write) before it (direct, constant-offset
 * accesses to the kernel's own allocas excepted); every basic block a call
 * to __nx_gs_tick(instructions). The checks compare with the regions the
 * run allows (operand slices) and the kernel's stack; a violation or a
 * kernel past its instruction budget longjmps out of the kernel (no C++
 * frames are involved) with a message. The JIT resolves only those two
 * functions and the allow-list: there is no process symbol generator. */
#include "backend/target/llvm_api.h"
#include "runtime-stub/gpsimd.h"

#include <llvm-c/Analysis.h>
#include <llvm-c/BitReader.h>
#include <llvm-c/Core.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define BUDGET 20000000000ULL /* IR instructions per kernel run */

struct nx_gs_prog {
	LLVMOrcLLJITRef jit;
	int n;
	char **names;
	void (**fn)(const nx_gs_tensor *, int32_t);
	uint64_t *static_insts; /* IR instructions of each kernel's module (the cost estimate) */
};

/* ------------------------------------------------------------ run context */
typedef struct run_ctx {
	const nx_gs_region *r;
	int nr;
	uintptr_t stack_hi;
	uintptr_t args_lo, args_hi; /* the tensor descriptors (read-only) */
	uint64_t insts;
	jmp_buf jb;
	char msg[256];
} run_ctx;

static _Thread_local run_ctx *cur;

static void nx_gs_chk(const void *p, int64_t n, int32_t write)
{
	run_ctx *c = cur;
	uintptr_t a = (uintptr_t)p;
	uintptr_t lo = (uintptr_t)__builtin_frame_address(0);
	if (n < 0)
		goto bad;
	if (a >= lo && a + (uint64_t)n <= c->stack_hi && a + (uint64_t)n >= a)
		return; /* the kernel's own stack frames */
	if (!write && a >= c->args_lo && a + (uint64_t)n <= c->args_hi)
		return;
	for (int k = 0; k < c->nr; k++) {
		const nx_gs_region *r = &c->r[k];
		uintptr_t b = (uintptr_t)r->base;
		if (a < b || (write && !r->writable))
			continue;
		uint64_t off = a - b;
		uint64_t part = r->pstride ? off / (uint64_t)r->pstride : 0, in = r->pstride ? off % (uint64_t)r->pstride : off;
		if ((int64_t)part < r->nparts && (int64_t)in >= r->lo && (int64_t)(in + (uint64_t)n) <= r->hi)
			return;
	}
bad:
	if (c->nr > 0 && (uintptr_t)c->r[0].base <= a && c->r[0].pstride > 0) {
		uint64_t off = a - (uintptr_t)c->r[0].base;
		snprintf(c->msg, sizeof c->msg,
		         "%s of %lld bytes outside the kernel's operand slices (partition +%llu of its slice, byte %llu)",
		         write ? "write" : "read", (long long)n, (unsigned long long)(off / (uint64_t)c->r[0].pstride),
		         (unsigned long long)(off % (uint64_t)c->r[0].pstride));
	} else
		snprintf(c->msg, sizeof c->msg, "%s of %lld bytes outside the kernel's operand slices",
		         write ? "write" : "read", (long long)n);
	longjmp(c->jb, 1);
}

static void nx_gs_tick(int64_t n)
{
	run_ctx *c = cur;
	c->insts += (uint64_t)n;
	if (c->insts > BUDGET) {
		snprintf(c->msg, sizeof c->msg, "more than %llu IR instructions (endless loop?)", (unsigned long long)BUDGET);
		longjmp(c->jb, 1);
	}
}

int nx_gs_run(const nx_gs_prog *p, int k, const nx_gs_tensor *t, int n, const nx_gs_region *r, int nr,
              uint64_t *insts, char *err, size_t errlen)
{
	volatile char marker = 0;
	run_ctx c;
	memset(&c, 0, sizeof c);
	c.r = r, c.nr = nr;
	c.stack_hi = (uintptr_t)&marker;
	c.args_lo = (uintptr_t)t;
	c.args_hi = (uintptr_t)(t + n);
	run_ctx *saved = cur;
	cur = &c;
	if (setjmp(c.jb)) {
		cur = saved;
		snprintf(err, errlen, "%s", c.msg);
		*insts = c.insts;
		return -1;
	}
	p->fn[k](t, n);
	cur = saved;
	*insts = c.insts;
	(void)marker;
	return 0;
}

/* ------------------------------------------------------------ validation */
static const char *const libm_names[] = {
#define X(f) #f,
	NX_GS_LIBM(X)
#undef X
};
typedef void (*vfn)(void);
static const vfn libm_addrs[] = {
#define X(f) (vfn)&f,
	NX_GS_LIBM(X)
#undef X
};
#define NLIBM (int)(sizeof libm_names / sizeof *libm_names)

/* intrinsics without memory effects a kernel may use (prefix match) */
static const char *const pure_intrinsics[] = {
	"llvm.dbg.", "llvm.lifetime.", "llvm.assume", "llvm.experimental.noalias.scope.decl", "llvm.smax.", "llvm.smin.",
	"llvm.umax.", "llvm.umin.", "llvm.abs.", "llvm.fabs.", "llvm.sqrt.", "llvm.exp.", "llvm.exp2.", "llvm.log.",
	"llvm.log2.", "llvm.log10.", "llvm.sin.", "llvm.cos.", "llvm.pow.", "llvm.powi.", "llvm.floor.", "llvm.ceil.",
	"llvm.trunc.", "llvm.rint.", "llvm.round.", "llvm.roundeven.", "llvm.nearbyint.", "llvm.copysign.", "llvm.fma.",
	"llvm.fmuladd.", "llvm.minnum.", "llvm.maxnum.", "llvm.minimum.", "llvm.maximum.", "llvm.ctpop.", "llvm.ctlz.",
	"llvm.cttz.", "llvm.bswap.", "llvm.bitreverse.", "llvm.fshl.", "llvm.fshr.", "llvm.sadd.", "llvm.uadd.",
	"llvm.ssub.", "llvm.usub.", "llvm.smul.", "llvm.umul.", "llvm.fptosi.sat.", "llvm.fptoui.sat.",
	"llvm.vector.reduce.", "llvm.is.fpclass.", "llvm.expect.",
};

static bool is_mem_intrinsic(const char *nm)
{
	return !strncmp(nm, "llvm.memcpy.", 12) || !strncmp(nm, "llvm.memmove.", 13) || !strncmp(nm, "llvm.memset.", 12) ||
	       !strncmp(nm, "llvm.memcpy.inline.", 19) || !strncmp(nm, "llvm.memset.inline.", 19);
}

static bool allowed_decl(const char *nm)
{
	if (!strncmp(nm, "llvm.", 5)) {
		if (is_mem_intrinsic(nm))
			return true;
		for (size_t k = 0; k < sizeof pure_intrinsics / sizeof *pure_intrinsics; k++)
			if (!strncmp(nm, pure_intrinsics[k], strlen(pure_intrinsics[k])))
				return true;
		return false;
	}
	for (int k = 0; k < NLIBM; k++)
		if (!strcmp(nm, libm_names[k]))
			return true;
	return false;
}

static int fail(char *err, size_t n, const char *kname, const char *fmt, const char *arg)
{
	char m[200];
	snprintf(m, sizeof m, fmt, arg);
	snprintf(err, n, "GpSimd kernel '%s': %s", kname, m);
	return -1;
}

/* pointer operand a direct access to an alloca (or a constant GEP of one) */
static bool stack_direct(LLVMValueRef p)
{
	if (nx_llvm.LLVMIsAAllocaInst(p))
		return true;
	if (nx_llvm.LLVMIsAGetElementPtrInst(p)) {
		int n = nx_llvm.LLVMGetNumOperands(p);
		for (int k = 1; k < n; k++)
			if (!nx_llvm.LLVMIsAConstantInt(nx_llvm.LLVMGetOperand(p, (unsigned)k)))
				return false;
		return nx_llvm.LLVMIsAAllocaInst(nx_llvm.LLVMGetOperand(p, 0)) != NULL;
	}
	return false;
}

static int validate(LLVMModuleRef m, const char *kname, char *err, size_t n, uint64_t *count)
{
	size_t len;
	const char *asmtxt = nx_llvm.LLVMGetModuleInlineAsm(m, &len);
	if (asmtxt && len)
		return fail(err, n, kname, "%smodule-level inline assembly", "");
	for (LLVMValueRef g = nx_llvm.LLVMGetFirstGlobal(m); g; g = nx_llvm.LLVMGetNextGlobal(g))
		if (nx_llvm.LLVMIsDeclaration(g))
			return fail(err, n, kname, "external global '%s'", nx_llvm.LLVMGetValueName2(g, &len));
	if (nx_llvm.LLVMGetFirstGlobalAlias(m) || nx_llvm.LLVMGetFirstGlobalIFunc(m))
		return fail(err, n, kname, "%saliases or ifuncs", "");
	LLVMValueRef entry = nx_llvm.LLVMGetNamedFunction(m, kname);
	if (!entry || nx_llvm.LLVMIsDeclaration(entry))
		return fail(err, n, kname, "%sno entry function of the kernel's name", "");
	LLVMTypeRef ft = nx_llvm.LLVMGlobalGetValueType(entry), pt[2];
	if (nx_llvm.LLVMCountParamTypes(ft) != 2 || nx_llvm.LLVMGetTypeKind(nx_llvm.LLVMGetReturnType(ft)) != LLVMVoidTypeKind ||
	    (nx_llvm.LLVMGetParamTypes(ft, pt), nx_llvm.LLVMGetTypeKind(pt[0]) != LLVMPointerTypeKind) ||
	    nx_llvm.LLVMGetTypeKind(pt[1]) != LLVMIntegerTypeKind || nx_llvm.LLVMGetIntTypeWidth(pt[1]) != 32 || nx_llvm.LLVMIsFunctionVarArg(ft))
		return fail(err, n, kname, "%sentry is not void(ptr, i32)", "");
	for (LLVMValueRef f = nx_llvm.LLVMGetFirstFunction(m); f; f = nx_llvm.LLVMGetNextFunction(f)) {
		const char *nm = nx_llvm.LLVMGetValueName2(f, &len);
		if (nx_llvm.LLVMIsDeclaration(f)) {
			if (!allowed_decl(nm))
				return fail(err, n, kname, "calls '%s', which is not on the allow-list (docs/gpsimd.md)", nm);
			continue;
		}
		for (LLVMBasicBlockRef b = nx_llvm.LLVMGetFirstBasicBlock(f); b; b = nx_llvm.LLVMGetNextBasicBlock(b))
			for (LLVMValueRef i = nx_llvm.LLVMGetFirstInstruction(b); i; i = nx_llvm.LLVMGetNextInstruction(i)) {
				LLVMOpcode op = nx_llvm.LLVMGetInstructionOpcode(i);
				if (count)
					++*count;
				if (op == LLVMAtomicRMW || op == LLVMAtomicCmpXchg || op == LLVMInvoke || op == LLVMCallBr ||
				    op == LLVMIndirectBr || op == LLVMLandingPad || op == LLVMResume)
					return fail(err, n, kname, "unsupported instruction '%s'", nx_llvm.LLVMIsAInvokeInst(i) ? "invoke" : "atomic/exception");
				if ((op == LLVMLoad || op == LLVMStore) && nx_llvm.LLVMGetOrdering(i) != LLVMAtomicOrderingNotAtomic)
					return fail(err, n, kname, "%satomic memory access", "");
				if (op == LLVMCall) {
					LLVMValueRef callee = nx_llvm.LLVMGetCalledValue(i);
					if (!nx_llvm.LLVMIsAFunction(callee))
						return fail(err, n, kname, "%sindirect call or inline assembly", "");
				}
			}
	}
	return 0;
}

static LLVMValueRef decl(LLVMModuleRef m, const char *name, LLVMTypeRef ft)
{
	LLVMValueRef f = nx_llvm.LLVMGetNamedFunction(m, name);
	return f ? f : nx_llvm.LLVMAddFunction(m, name, ft);
}

static int instrument(LLVMModuleRef m, const char *kname, char *err, size_t n)
{
	LLVMContextRef ctx = nx_llvm.LLVMGetModuleContext(m);
	LLVMTypeRef i32 = nx_llvm.LLVMInt32TypeInContext(ctx), i64 = nx_llvm.LLVMInt64TypeInContext(ctx);
	LLVMTypeRef ptr = nx_llvm.LLVMPointerTypeInContext(ctx, 0), vd = nx_llvm.LLVMVoidTypeInContext(ctx);
	LLVMTypeRef ca[3] = {ptr, i64, i32};
	LLVMTypeRef chk_t = nx_llvm.LLVMFunctionType(vd, ca, 3, 0), tick_t = nx_llvm.LLVMFunctionType(vd, &i64, 1, 0);
	if (nx_llvm.LLVMGetNamedFunction(m, "__nx_gs_chk") || nx_llvm.LLVMGetNamedFunction(m, "__nx_gs_tick"))
		return fail(err, n, kname, "%sdefines the runtime's check functions", "");
	LLVMValueRef chk = decl(m, "__nx_gs_chk", chk_t), tick = decl(m, "__nx_gs_tick", tick_t);
	LLVMTargetDataRef td = nx_llvm.LLVMGetModuleDataLayout(m);
	LLVMBuilderRef b = nx_llvm.LLVMCreateBuilderInContext(ctx);
	for (LLVMValueRef f = nx_llvm.LLVMGetFirstFunction(m); f; f = nx_llvm.LLVMGetNextFunction(f)) {
		if (nx_llvm.LLVMIsDeclaration(f))
			continue;
		for (LLVMBasicBlockRef bb = nx_llvm.LLVMGetFirstBasicBlock(f); bb; bb = nx_llvm.LLVMGetNextBasicBlock(bb)) {
			int64_t count = 0;
			LLVMValueRef first = NULL;
			for (LLVMValueRef i = nx_llvm.LLVMGetFirstInstruction(bb); i; i = nx_llvm.LLVMGetNextInstruction(i)) {
				count++;
				if (!first && !nx_llvm.LLVMIsAPHINode(i))
					first = i;
			}
			for (LLVMValueRef i = nx_llvm.LLVMGetFirstInstruction(bb); i; i = nx_llvm.LLVMGetNextInstruction(i)) {
				LLVMOpcode op = nx_llvm.LLVMGetInstructionOpcode(i);
				LLVMValueRef p = NULL, p2 = NULL, len = NULL;
				int write = 0;
				if (op == LLVMLoad) {
					p = nx_llvm.LLVMGetOperand(i, 0);
					len = nx_llvm.LLVMConstInt(i64, nx_llvm.LLVMStoreSizeOfType(td, nx_llvm.LLVMTypeOf(i)), 0);
				} else if (op == LLVMStore) {
					p = nx_llvm.LLVMGetOperand(i, 1), write = 1;
					len = nx_llvm.LLVMConstInt(i64, nx_llvm.LLVMStoreSizeOfType(td, nx_llvm.LLVMTypeOf(nx_llvm.LLVMGetOperand(i, 0))), 0);
				} else if (op == LLVMCall) {
					size_t nl;
					const char *nm = nx_llvm.LLVMGetValueName2(nx_llvm.LLVMGetCalledValue(i), &nl);
					if (is_mem_intrinsic(nm)) {
						p = nx_llvm.LLVMGetOperand(i, 0), write = 1;
						len = nx_llvm.LLVMGetOperand(i, 2);
						if (strncmp(nm, "llvm.memset.", 12) != 0)
							p2 = nx_llvm.LLVMGetOperand(i, 1);
						if (nx_llvm.LLVMTypeOf(len) != i64)
							len = NULL;
						if (!len) {
							nx_llvm.LLVMDisposeBuilder(b);
							return fail(err, n, kname, "%smemory intrinsic with a non-64-bit length", "");
						}
					}
				}
				if (!p || (stack_direct(p) && !p2 && op != LLVMCall))
					continue;
				nx_llvm.LLVMPositionBuilderBefore(b, i);
				LLVMValueRef a[3] = {p, len, nx_llvm.LLVMConstInt(i32, (unsigned)write, 0)};
				nx_llvm.LLVMBuildCall2(b, chk_t, chk, a, 3, "");
				if (p2) {
					LLVMValueRef a2[3] = {p2, len, nx_llvm.LLVMConstInt(i32, 0, 0)};
					nx_llvm.LLVMBuildCall2(b, chk_t, chk, a2, 3, "");
				}
			}
			if (first) {
				nx_llvm.LLVMPositionBuilderBefore(b, first);
				LLVMValueRef c = nx_llvm.LLVMConstInt(i64, (unsigned long long)count, 0);
				nx_llvm.LLVMBuildCall2(b, tick_t, tick, &c, 1, "");
			}
		}
	}
	nx_llvm.LLVMDisposeBuilder(b);
	return 0;
}

/* LLVM 16's bitcode reader ends the process on some malformed inputs
 * (report_fatal_error, e.g. "can't skip to bit ..."), so untrusted bitcode
 * is parsed, verified and validated first in a child process; only what
 * passed there is parsed here. The child's message (its stderr included)
 * comes back through a pipe. */
static int precheck(const uint8_t *data, size_t len, const char *name, char *err, size_t n)
{
	int fd[2];
	if (pipe(fd) != 0) {
		snprintf(err, n, "GpSimd kernel '%s': pipe: cannot check the bitcode", name);
		return -1;
	}
	fflush(stderr);
	pid_t pid = fork();
	if (pid < 0) {
		close(fd[0]), close(fd[1]);
		snprintf(err, n, "GpSimd kernel '%s': fork: cannot check the bitcode", name);
		return -1;
	}
	if (pid == 0) {
		close(fd[0]);
		dup2(fd[1], 2);
		LLVMContextRef ctx = nx_llvm.LLVMContextCreate();
		LLVMMemoryBufferRef mb = nx_llvm.LLVMCreateMemoryBufferWithMemoryRangeCopy((const char *)data, len, name);
		LLVMModuleRef m = NULL;
		char msg[400] = "", *vm = NULL;
		int bad = 1;
		if (nx_llvm.LLVMParseBitcodeInContext2(ctx, mb, &m))
			snprintf(msg, sizeof msg, "GpSimd kernel '%s': not valid LLVM bitcode", name);
		else if (nx_llvm.LLVMVerifyModule(m, LLVMReturnStatusAction, &vm))
			snprintf(msg, sizeof msg, "GpSimd kernel '%s': fails LLVM's verifier: %.200s", name, vm ? vm : "");
		else if (validate(m, name, msg, sizeof msg, NULL) == 0)
			bad = 0, snprintf(msg, sizeof msg, "OK");
		if (write(fd[1], msg, strlen(msg)) < 0)
			bad = 1;
		_exit(bad);
	}
	close(fd[1]);
	char buf[400];
	size_t got = 0;
	ssize_t r;
	while (got < sizeof buf - 1 && (r = read(fd[0], buf + got, sizeof buf - 1 - got)) > 0)
		got += (size_t)r;
	buf[got] = 0;
	close(fd[0]);
	int st = 0;
	waitpid(pid, &st, 0);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0 && !strcmp(buf, "OK"))
		return 0;
	if (strstr(buf, "GpSimd kernel '") == buf) {
		snprintf(err, n, "%s", buf);
		return -1;
	}
	for (char *p = buf; *p; p++)
		if (*p == '\n')
			*p = ' ';
	snprintf(err, n, "GpSimd kernel '%s': not valid LLVM bitcode (%.200s)", name, got ? buf : "the reader failed");
	return -1;
}

/* ------------------------------------------------------------ JIT */
static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static void init_llvm(void)
{
	/* the host target: nx_llvm_load */
}

static int llvm_err(LLVMErrorRef e, char *err, size_t n, const char *what)
{
	char *m = nx_llvm.LLVMGetErrorMessage(e);
	snprintf(err, n, "GpSimd: %s: %.200s", what, m);
	nx_llvm.LLVMDisposeErrorMessage(m);
	return -1;
}

static int define_symbols(LLVMOrcLLJITRef J, char *err, size_t n)
{
	/* code generation lowers memory intrinsics to memcpy/memmove/memset; the
	 * checks ran before the intrinsic */
	static const char *const extra[] = {"__nx_gs_chk", "__nx_gs_tick", "memcpy", "memmove", "memset"};
	const vfn extrap[] = {(vfn)&nx_gs_chk, (vfn)&nx_gs_tick, (vfn)&memcpy, (vfn)&memmove, (vfn)&memset};
	LLVMOrcCSymbolMapPair pairs[NLIBM + 5];
	LLVMJITSymbolFlags fl = {LLVMJITSymbolGenericFlagsExported | LLVMJITSymbolGenericFlagsCallable, 0};
	int k = 0;
	for (int j = 0; j < NLIBM; j++, k++)
		pairs[k] = (LLVMOrcCSymbolMapPair){nx_llvm.LLVMOrcLLJITMangleAndIntern(J, libm_names[j]),
		                                   {(LLVMOrcJITTargetAddress)(uintptr_t)libm_addrs[j], fl}};
	for (int j = 0; j < 5; j++, k++)
		pairs[k] = (LLVMOrcCSymbolMapPair){nx_llvm.LLVMOrcLLJITMangleAndIntern(J, extra[j]),
		                                   {(LLVMOrcJITTargetAddress)(uintptr_t)extrap[j], fl}};
	LLVMOrcMaterializationUnitRef mu = nx_llvm.LLVMOrcAbsoluteSymbols(pairs, (size_t)k);
	LLVMErrorRef e = nx_llvm.LLVMOrcJITDylibDefine(nx_llvm.LLVMOrcLLJITGetMainJITDylib(J), mu);
	return e ? llvm_err(e, err, n, "defining the runtime symbols") : 0;
}

void nx_gs_prog_free(nx_gs_prog *p)
{
	if (!p)
		return;
	if (p->jit)
		nx_llvm.LLVMOrcDisposeLLJIT(p->jit);
	for (int k = 0; k < p->n; k++)
		free(p->names[k]);
	free(p->names);
	free(p->fn);
	free(p->static_insts);
	free(p);
}

int nx_gs_prog_count(const nx_gs_prog *p)
{
	return p ? p->n : 0;
}

const char *nx_gs_prog_name(const nx_gs_prog *p, int k)
{
	return p->names[k];
}

uint64_t nx_gs_prog_static_insts(const nx_gs_prog *p, int k)
{
	return p->static_insts[k];
}

nx_gs_prog *nx_gs_prog_load(int n, const char *const *names, const uint8_t *const *data, const size_t *len,
                            char *err, size_t errlen)
{
	const char *why = nx_llvm_load();
	if (why) {
		snprintf(err, errlen, "%s", why);
		return NULL;
	}
	pthread_once(&init_once, init_llvm);
	nx_gs_prog *p = calloc(1, sizeof *p);
	p->names = calloc((size_t)n + 1, sizeof *p->names);
	p->fn = calloc((size_t)n + 1, sizeof *p->fn);
	p->static_insts = calloc((size_t)n + 1, sizeof *p->static_insts);
	LLVMOrcLLJITBuilderRef jb = nx_llvm.LLVMOrcCreateLLJITBuilder();
	{ /* host target machine at codegen level "less": the IR was optimized at compile time */
		char *triple = nx_llvm.LLVMGetDefaultTargetTriple(), *cpu = nx_llvm.LLVMGetHostCPUName(), *feat = nx_llvm.LLVMGetHostCPUFeatures();
		LLVMTargetRef tgt;
		char *terr = NULL;
		if (!nx_llvm.LLVMGetTargetFromTriple(triple, &tgt, &terr)) {
			LLVMTargetMachineRef tm = nx_llvm.LLVMCreateTargetMachine(tgt, triple, cpu, feat, LLVMCodeGenLevelLess, LLVMRelocDefault,
			                                                  LLVMCodeModelJITDefault);
			nx_llvm.LLVMOrcLLJITBuilderSetJITTargetMachineBuilder(jb, nx_llvm.LLVMOrcJITTargetMachineBuilderCreateFromTargetMachine(tm));
		}
		nx_llvm.LLVMDisposeMessage(terr);
		nx_llvm.LLVMDisposeMessage(triple);
		nx_llvm.LLVMDisposeMessage(cpu);
		nx_llvm.LLVMDisposeMessage(feat);
	}
	LLVMErrorRef e = nx_llvm.LLVMOrcCreateLLJIT(&p->jit, jb);
	if (e) {
		p->jit = NULL;
		llvm_err(e, err, errlen, "creating the JIT");
		goto bad;
	}
	if (define_symbols(p->jit, err, errlen))
		goto bad;
	for (int k = 0; k < n; k++) {
		p->names[k] = strdup(names[k]);
		p->n = k + 1;
		if (len[k] > NX_GS_MAX_BITCODE || len[k] < 4) {
			snprintf(err, errlen, "GpSimd kernel '%s': %zu bytes of bitcode (at most %d)", names[k], len[k],
			         NX_GS_MAX_BITCODE);
			goto bad;
		}
		if (precheck(data[k], len[k], names[k], err, errlen))
			goto bad;
		LLVMOrcThreadSafeContextRef tsc = nx_llvm.LLVMOrcCreateNewThreadSafeContext();
		LLVMContextRef ctx = nx_llvm.LLVMOrcThreadSafeContextGetContext(tsc);
		LLVMMemoryBufferRef mb = nx_llvm.LLVMCreateMemoryBufferWithMemoryRangeCopy((const char *)data[k], len[k], names[k]);
		LLVMModuleRef m = NULL;
		char *msg = NULL;
		if (nx_llvm.LLVMParseBitcodeInContext2(ctx, mb, &m)) {
			nx_llvm.LLVMDisposeMemoryBuffer(mb);
			nx_llvm.LLVMOrcDisposeThreadSafeContext(tsc);
			snprintf(err, errlen, "GpSimd kernel '%s': not valid LLVM bitcode", names[k]);
			goto bad;
		}
		nx_llvm.LLVMDisposeMemoryBuffer(mb);
		int bad = 0;
		if (nx_llvm.LLVMVerifyModule(m, LLVMReturnStatusAction, &msg)) {
			snprintf(err, errlen, "GpSimd kernel '%s': fails LLVM's verifier: %.200s", names[k], msg ? msg : "");
			bad = 1;
		}
		nx_llvm.LLVMDisposeMessage(msg);
		if (!bad && (validate(m, names[k], err, errlen, &p->static_insts[k]) || instrument(m, names[k], err, errlen)))
			bad = 1;
		if (bad) {
			nx_llvm.LLVMDisposeModule(m);
			nx_llvm.LLVMOrcDisposeThreadSafeContext(tsc);
			goto bad;
		}
		LLVMOrcThreadSafeModuleRef tsm = nx_llvm.LLVMOrcCreateNewThreadSafeModule(m, tsc);
		nx_llvm.LLVMOrcDisposeThreadSafeContext(tsc);
		e = nx_llvm.LLVMOrcLLJITAddLLVMIRModule(p->jit, nx_llvm.LLVMOrcLLJITGetMainJITDylib(p->jit), tsm);
		if (e) {
			nx_llvm.LLVMOrcDisposeThreadSafeModule(tsm);
			llvm_err(e, err, errlen, names[k]);
			goto bad;
		}
	}
	for (int k = 0; k < n; k++) {
		LLVMOrcExecutorAddress addr = 0;
		e = nx_llvm.LLVMOrcLLJITLookup(p->jit, &addr, names[k]);
		if (e) {
			llvm_err(e, err, errlen, names[k]);
			goto bad;
		}
		p->fn[k] = (void (*)(const nx_gs_tensor *, int32_t))(uintptr_t)addr;
	}
	return p;
bad:
	nx_gs_prog_free(p);
	return NULL;
}
