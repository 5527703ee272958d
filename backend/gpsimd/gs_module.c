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
	g->ctx = LLVMContextCreate();
	g->mod = LLVMModuleCreateWithNameInContext(name, g->ctx);
	g->b = LLVMCreateBuilderInContext(g->ctx);
	g->i1 = LLVMInt1TypeInContext(g->ctx);
	g->i8 = LLVMInt8TypeInContext(g->ctx);
	g->i16 = LLVMInt16TypeInContext(g->ctx);
	g->i32 = LLVMInt32TypeInContext(g->ctx);
	g->i64 = LLVMInt64TypeInContext(g->ctx);
	g->f32 = LLVMFloatTypeInContext(g->ctx);
	g->ptr = LLVMPointerTypeInContext(g->ctx, 0);
	g->vd = LLVMVoidTypeInContext(g->ctx);
	return NX_OK;
}

void nx_gs_abort(nx_gs *g)
{
	if (g->b)
		LLVMDisposeBuilder(g->b);
	if (g->mod)
		LLVMDisposeModule(g->mod);
	if (g->ctx)
		LLVMContextDispose(g->ctx);
	g->b = NULL, g->mod = NULL, g->ctx = NULL;
}

static nx_status bitcode(nx_gs *g, uint8_t **bc, size_t *len)
{
	LLVMMemoryBufferRef mb = LLVMWriteBitcodeToMemoryBuffer(g->mod);
	*len = LLVMGetBufferSize(mb);
	*bc = malloc(*len ? *len : 1);
	memcpy(*bc, LLVMGetBufferStart(mb), *len);
	LLVMDisposeMemoryBuffer(mb);
	return NX_OK;
}

nx_status nx_gs_finish(nx_gs *g, uint8_t **bc, size_t *len)
{
	char *msg = NULL;
	*bc = NULL;
	if (LLVMVerifyModule(g->mod, LLVMReturnStatusAction, &msg)) {
		nx_status rc = nx_diag_set(g->d, NX_ERR_INTERNAL, NULL, 0, 0, "GpSimd kernel for '%s' fails LLVM's verifier: %.300s",
		                           g->inst ? g->inst->name : "?", msg ? msg : "");
		LLVMDisposeMessage(msg);
		nx_gs_abort(g);
		return rc;
	}
	LLVMDisposeMessage(msg);
	LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
	LLVMErrorRef e = LLVMRunPasses(g->mod, "default<O2>", NULL, po);
	LLVMDisposePassBuilderOptions(po);
	if (e) {
		char *m = LLVMGetErrorMessage(e);
		nx_status rc = nx_diag_set(g->d, NX_ERR_INTERNAL, NULL, 0, 0, "optimizing a GpSimd kernel: %s", m);
		LLVMDisposeErrorMessage(m);
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
	LLVMDisposeModule(g.mod);
	g.mod = NULL;
	LLVMMemoryBufferRef mb = LLVMCreateMemoryBufferWithMemoryRangeCopy((const char *)op->bc, op->len, "custom");
	if (LLVMParseBitcodeInContext2(g.ctx, mb, &g.mod)) {
		g.mod = NULL;
		LLVMDisposeMemoryBuffer(mb);
		nx_gs_abort(&g);
		return nx_diag_set(d, NX_ERR_INPUT, NULL, 0, 0, "custom operator '%s': not LLVM bitcode LLVM 16 reads", op->name);
	}
	LLVMDisposeMemoryBuffer(mb);
	LLVMValueRef f = LLVMGetNamedFunction(g.mod, op->name);
	if (!f || LLVMIsDeclaration(f)) {
		nx_gs_abort(&g);
		return nx_diag_set(d, NX_ERR_INPUT, NULL, 0, 0, "custom operator '%s': the kernel defines no function '%s'",
		                   op->name, op->name);
	}
	LLVMTypeRef ft = LLVMGlobalGetValueType(f);
	LLVMTypeRef pt[2];
	if (LLVMCountParamTypes(ft) != 2 || LLVMGetTypeKind(LLVMGetReturnType(ft)) != LLVMVoidTypeKind ||
	    (LLVMGetParamTypes(ft, pt), LLVMGetTypeKind(pt[0]) != LLVMPointerTypeKind) ||
	    LLVMGetTypeKind(pt[1]) != LLVMIntegerTypeKind || LLVMGetIntTypeWidth(pt[1]) != 32) {
		nx_gs_abort(&g);
		return nx_diag_set(d, NX_ERR_INPUT, NULL, 0, 0,
		                   "custom operator '%s': expected 'void %s(const nx_gs_tensor *t, int32_t n)' "
		                   "(docs/gpsimd.md)", op->name, op->name);
	}
	LLVMSetValueName2(f, name, strlen(name));
	LLVMSetLinkage(f, LLVMExternalLinkage);
	char *msg = NULL;
	if (LLVMVerifyModule(g.mod, LLVMReturnStatusAction, &msg)) {
		nx_status rc = nx_diag_set(d, NX_ERR_INPUT, NULL, 0, 0, "custom operator '%s': invalid LLVM module: %.300s",
		                           op->name, msg ? msg : "");
		LLVMDisposeMessage(msg);
		nx_gs_abort(&g);
		return rc;
	}
	LLVMDisposeMessage(msg);
	nx_status rc = bitcode(&g, bc, len);
	nx_gs_abort(&g);
	return rc;
}
