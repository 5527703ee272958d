/* backend/gpsimd/gs_module.c — an LLVM module per GpSimd kernel: created,
 * verified (LLVMVerifyModule), optimized with the new pass manager
 * (LLVMRunPasses, default<O2>, target-independent: the bitcode carries no
 * triple), written as bitcode. User bitcode (custom operators) is checked
 * for its entry function and renamed to the kernel's name. */
#include "backend/gpsimd/gs.h"

#include <llvm-c/Analysis.h>
#include <llvm-c/BitReader.h>
#include <llvm-c/BitWriter.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <stdlib.h>
#include <string.h>

nx_status nx_gs_begin(nx_gs *g, const char *name, nx_diag *d)
{
	memset(g, 0, sizeof *g);
	g->d = d;
	g->ctx = nx_llvm.LLVMContextCreate();
	g->mod = nx_llvm.LLVMModuleCreateWithNameInContext(name, g->ctx);
	g->b = nx_llvm.LLVMCreateBuilderInContext(g->ctx);
	g->i1 = nx_llvm.LLVMInt1TypeInContext(g->ctx);
	g->i8 = nx_llvm.LLVMInt8TypeInContext(g->ctx);
	g->i16 = nx_llvm.LLVMInt16TypeInContext(g->ctx);
	g->i32 = nx_llvm.LLVMInt32TypeInContext(g->ctx);
	g->i64 = nx_llvm.LLVMInt64TypeInContext(g->ctx);
	g->f32 = nx_llvm.LLVMFloatTypeInContext(g->ctx);
	g->ptr = nx_llvm.LLVMPointerTypeInContext(g->ctx, 0);
	g->vd = nx_llvm.LLVMVoidTypeInContext(g->ctx);
	return NX_OK;
}

void nx_gs_abort(nx_gs *g)
{
	if (g->b)
		nx_llvm.LLVMDisposeBuilder(g->b);
	if (g->mod)
		nx_llvm.LLVMDisposeModule(g->mod);
	if (g->ctx)
		nx_llvm.LLVMContextDispose(g->ctx);
	g->b = NULL, g->mod = NULL, g->ctx = NULL;
}

static nx_status bitcode(nx_gs *g, uint8_t **bc, size_t *len)
{
	LLVMMemoryBufferRef mb = nx_llvm.LLVMWriteBitcodeToMemoryBuffer(g->mod);
	*len = nx_llvm.LLVMGetBufferSize(mb);
	*bc = malloc(*len ? *len : 1);
	memcpy(*bc, nx_llvm.LLVMGetBufferStart(mb), *len);
	nx_llvm.LLVMDisposeMemoryBuffer(mb);
	return NX_OK;
}

nx_status nx_gs_finish(nx_gs *g, uint8_t **bc, size_t *len)
{
	char *msg = NULL;
	*bc = NULL;
	if (nx_llvm.LLVMVerifyModule(g->mod, LLVMReturnStatusAction, &msg)) {
		nx_status rc = nx_diag_set(g->d, NX_ERR_INTERNAL, NULL, 0, 0, "GpSimd kernel for '%s' fails LLVM's verifier: %.300s",
		                           g->inst ? g->inst->name : "?", msg ? msg : "");
		nx_llvm.LLVMDisposeMessage(msg);
		nx_gs_abort(g);
		return rc;
	}
	nx_llvm.LLVMDisposeMessage(msg);
	LLVMPassBuilderOptionsRef po = nx_llvm.LLVMCreatePassBuilderOptions();
	LLVMErrorRef e = nx_llvm.LLVMRunPasses(g->mod, "default<O2>", NULL, po);
	nx_llvm.LLVMDisposePassBuilderOptions(po);
	if (e) {
		char *m = nx_llvm.LLVMGetErrorMessage(e);
		nx_status rc = nx_diag_set(g->d, NX_ERR_INTERNAL, NULL, 0, 0, "optimizing a GpSimd kernel: %s", m);
		nx_llvm.LLVMDisposeErrorMessage(m);
		nx_gs_abort(g);
		return rc;
	}
	nx_status rc = bitcode(g, bc, len);
	nx_gs_abort(g);
	return rc;
}

/* User bitcode: parse, find `entry` (void(ptr, i32)), rename it to `name`,
 * verify, write back. */
nx_status nx_gs_user_kernel(const nx_custom_op *op, const char *name, uint8_t **bc, size_t *len, nx_diag *d)
{
	nx_gs g;
	nx_gs_begin(&g, name, d);
	nx_llvm.LLVMDisposeModule(g.mod);
	g.mod = NULL;
	LLVMMemoryBufferRef mb = nx_llvm.LLVMCreateMemoryBufferWithMemoryRangeCopy((const char *)op->bc, op->len, "custom");
	if (nx_llvm.LLVMParseBitcodeInContext2(g.ctx, mb, &g.mod)) {
		g.mod = NULL;
		nx_llvm.LLVMDisposeMemoryBuffer(mb);
		nx_gs_abort(&g);
		return nx_diag_set(d, NX_ERR_INPUT, NULL, 0, 0, "custom operator '%s': not LLVM bitcode LLVM 16 reads", op->name);
	}
	nx_llvm.LLVMDisposeMemoryBuffer(mb);
	LLVMValueRef f = nx_llvm.LLVMGetNamedFunction(g.mod, op->name);
	if (!f || nx_llvm.LLVMIsDeclaration(f)) {
		nx_gs_abort(&g);
		return nx_diag_set(d, NX_ERR_INPUT, NULL, 0, 0, "custom operator '%s': the kernel defines no function '%s'",
		                   op->name, op->name);
	}
	LLVMTypeRef ft = nx_llvm.LLVMGlobalGetValueType(f);
	LLVMTypeRef pt[2];
	if (nx_llvm.LLVMCountParamTypes(ft) != 2 || nx_llvm.LLVMGetTypeKind(nx_llvm.LLVMGetReturnType(ft)) != LLVMVoidTypeKind ||
	    (nx_llvm.LLVMGetParamTypes(ft, pt), nx_llvm.LLVMGetTypeKind(pt[0]) != LLVMPointerTypeKind) ||
	    nx_llvm.LLVMGetTypeKind(pt[1]) != LLVMIntegerTypeKind || nx_llvm.LLVMGetIntTypeWidth(pt[1]) != 32) {
		nx_gs_abort(&g);
		return nx_diag_set(d, NX_ERR_INPUT, NULL, 0, 0,
		                   "custom operator '%s': expected 'void %s(const nx_gs_tensor *t, int32_t n)' "
		                   "(docs/gpsimd.md)", op->name, op->name);
	}
	nx_llvm.LLVMSetValueName2(f, name, strlen(name));
	nx_llvm.LLVMSetLinkage(f, LLVMExternalLinkage);
	char *msg = NULL;
	if (nx_llvm.LLVMVerifyModule(g.mod, LLVMReturnStatusAction, &msg)) {
		nx_status rc = nx_diag_set(d, NX_ERR_INPUT, NULL, 0, 0, "custom operator '%s': invalid LLVM module: %.300s",
		                           op->name, msg ? msg : "");
		nx_llvm.LLVMDisposeMessage(msg);
		nx_gs_abort(&g);
		return rc;
	}
	nx_llvm.LLVMDisposeMessage(msg);
	nx_status rc = bitcode(&g, bc, len);
	nx_gs_abort(&g);
	return rc;
}
