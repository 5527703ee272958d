/* backend/target/llvm_api.c — libLLVM-16 loaded on first use (llvm_api.h). */
#include "backend/target/llvm_api.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#ifndef NX_LLVM_SO
#define NX_LLVM_SO "libLLVM-16.so.1"
#endif

nx_llvm_api nx_llvm;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static char why[300];
static const char *result = "LLVM not loaded";

static void load(void)
{
	void *h = dlopen(NX_LLVM_SO, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		h = dlopen("libLLVM-16.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(why, sizeof why, "GpSimd kernels need LLVM 16 (Debian llvm-16, make deps): %s", dlerror());
		result = why;
		return;
	}
#define X(f)                                                                                   \
	{                                                                                      \
		void *p = dlsym(h, #f);                                                         \
		if (!p) {                                                                       \
			snprintf(why, sizeof why, "libLLVM-16 lacks %s", #f);                   \
			result = why;                                                           \
			return;                                                                 \
		}                                                                               \
		memcpy(&nx_llvm.f, &p, sizeof p);                                               \
	}
	NX_LLVM_FNS(X)
#undef X
#if defined(__x86_64__)
	nx_llvm.LLVMInitializeX86TargetInfo();
	nx_llvm.LLVMInitializeX86Target();
	nx_llvm.LLVMInitializeX86TargetMC();
	nx_llvm.LLVMInitializeX86AsmPrinter();
#else
	nx_llvm.LLVMInitializeAArch64TargetInfo();
	nx_llvm.LLVMInitializeAArch64Target();
	nx_llvm.LLVMInitializeAArch64TargetMC();
	nx_llvm.LLVMInitializeAArch64AsmPrinter();
#endif
	result = NULL;
}

const char *nx_llvm_load(void)
{
	pthread_once(&once, load);
	return result;
}
