/* backend/target/llvm_api.h — the LLVM 16 C API, loaded on first use.
 *
 * nxcc does not link libLLVM: loading it (and running its static
 * constructors) would add to the start of every process, while only
 * programs with GpSimd kernels need it. nx_llvm_load() dlopens
 * libLLVM-16 once and fills nx_llvm with the functions nxcc calls
 * (NX_LLVM_FNS); code calls them as nx_llvm.LLVMxxx(...). */
#ifndef NX_LLVM_API_H
#define NX_LLVM_API_H

#include <llvm-c/Analysis.h>
#include <llvm-c/BitReader.h>
#include <llvm-c/BitWriter.h>
#include <llvm-c/Core.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>

#define NX_LLVM_FNS(X) \
	X(LLVMAddFunction) \
	X(LLVMAppendBasicBlockInContext) \
	X(LLVMBuildAShr) \
	X(LLVMBuildAdd) \
	X(LLVMBuildAlloca) \
	X(LLVMBuildAnd) \
	X(LLVMBuildBitCast) \
	X(LLVMBuildBr) \
	X(LLVMBuildCall2) \
	X(LLVMBuildCondBr) \
	X(LLVMBuildFAdd) \
	X(LLVMBuildFCmp) \
	X(LLVMBuildFDiv) \
	X(LLVMBuildFMul) \
	X(LLVMBuildFNeg) \
	X(LLVMBuildFRem) \
	X(LLVMBuildFSub) \
	X(LLVMBuildGEP2) \
	X(LLVMBuildICmp) \
	X(LLVMBuildLShr) \
	X(LLVMBuildLoad2) \
	X(LLVMBuildMul) \
	X(LLVMBuildNot) \
	X(LLVMBuildOr) \
	X(LLVMBuildRetVoid) \
	X(LLVMBuildSDiv) \
	X(LLVMBuildSExt) \
	X(LLVMBuildSIToFP) \
	X(LLVMBuildSRem) \
	X(LLVMBuildSelect) \
	X(LLVMBuildShl) \
	X(LLVMBuildStore) \
	X(LLVMBuildSub) \
	X(LLVMBuildTrunc) \
	X(LLVMBuildUDiv) \
	X(LLVMBuildUIToFP) \
	X(LLVMBuildURem) \
	X(LLVMBuildXor) \
	X(LLVMBuildZExt) \
	X(LLVMConstAllOnes) \
	X(LLVMConstInt) \
	X(LLVMConstReal) \
	X(LLVMConstShl) \
	X(LLVMContextCreate) \
	X(LLVMContextDispose) \
	X(LLVMCountParamTypes) \
	X(LLVMCreateBuilderInContext) \
	X(LLVMCreateMemoryBufferWithMemoryRangeCopy) \
	X(LLVMCreatePassBuilderOptions) \
	X(LLVMCreateTargetMachine) \
	X(LLVMCreateTargetDataLayout) \
	X(LLVMDisposeBuilder) \
	X(LLVMDisposeErrorMessage) \
	X(LLVMDisposeMemoryBuffer) \
	X(LLVMDisposeMessage) \
	X(LLVMDisposeModule) \
	X(LLVMDisposePassBuilderOptions) \
	X(LLVMDisposeTargetData) \
	X(LLVMFloatTypeInContext) \
	X(LLVMFunctionType) \
	X(LLVMGetBufferSize) \
	X(LLVMGetBufferStart) \
	X(LLVMGetCalledValue) \
	X(LLVMGetDefaultTargetTriple) \
	X(LLVMGetEntryBasicBlock) \
	X(LLVMGetErrorMessage) \
	X(LLVMGetFirstBasicBlock) \
	X(LLVMGetFirstFunction) \
	X(LLVMGetFirstGlobal) \
	X(LLVMGetFirstGlobalAlias) \
	X(LLVMGetFirstGlobalIFunc) \
	X(LLVMGetFirstInstruction) \
	X(LLVMGetHostCPUFeatures) \
	X(LLVMGetHostCPUName) \
	X(LLVMGetInsertBlock) \
	X(LLVMGetInstructionOpcode) \
	X(LLVMGetIntTypeWidth) \
	X(LLVMGetIntrinsicDeclaration) \
	X(LLVMGetModuleContext) \
	X(LLVMGetModuleDataLayout) \
	X(LLVMGetModuleInlineAsm) \
	X(LLVMGetNamedFunction) \
	X(LLVMGetNextBasicBlock) \
	X(LLVMGetNextFunction) \
	X(LLVMGetNextGlobal) \
	X(LLVMGetNextInstruction) \
	X(LLVMGetNumOperands) \
	X(LLVMGetOperand) \
	X(LLVMGetOrdering) \
	X(LLVMGetParam) \
	X(LLVMGetParamTypes) \
	X(LLVMGetReturnType) \
	X(LLVMGetTargetFromTriple) \
	X(LLVMGetTypeKind) \
	X(LLVMGetValueName2) \
	X(LLVMGlobalGetValueType) \
	X(LLVMInt16TypeInContext) \
	X(LLVMInt1TypeInContext) \
	X(LLVMInt32TypeInContext) \
	X(LLVMInt64TypeInContext) \
	X(LLVMInt8TypeInContext) \
	X(LLVMIntTypeInContext) \
	X(LLVMIntrinsicGetType) \
	X(LLVMIsAAllocaInst) \
	X(LLVMIsAConstantInt) \
	X(LLVMIsAFunction) \
	X(LLVMIsAGetElementPtrInst) \
	X(LLVMIsAInvokeInst) \
	X(LLVMIsAPHINode) \
	X(LLVMIsDeclaration) \
	X(LLVMIsFunctionVarArg) \
	X(LLVMLookupIntrinsicID) \
	X(LLVMModuleCreateWithNameInContext) \
	X(LLVMOrcAbsoluteSymbols) \
	X(LLVMOrcCreateLLJIT) \
	X(LLVMOrcCreateLLJITBuilder) \
	X(LLVMOrcCreateNewThreadSafeContext) \
	X(LLVMOrcCreateNewThreadSafeModule) \
	X(LLVMOrcDisposeLLJIT) \
	X(LLVMOrcDisposeThreadSafeContext) \
	X(LLVMOrcDisposeThreadSafeModule) \
	X(LLVMOrcJITDylibDefine) \
	X(LLVMOrcJITTargetMachineBuilderCreateFromTargetMachine) \
	X(LLVMOrcLLJITAddLLVMIRModule) \
	X(LLVMOrcLLJITBuilderSetJITTargetMachineBuilder) \
	X(LLVMOrcLLJITGetMainJITDylib) \
	X(LLVMOrcLLJITLookup) \
	X(LLVMOrcLLJITMangleAndIntern) \
	X(LLVMOrcThreadSafeContextGetContext) \
	X(LLVMParseBitcodeInContext2) \
	X(LLVMPointerTypeInContext) \
	X(LLVMPositionBuilderAtEnd) \
	X(LLVMPositionBuilderBefore) \
	X(LLVMRunPasses) \
	X(LLVMSetLinkage) \
	X(LLVMSetModuleDataLayout) \
	X(LLVMSetTarget) \
	X(LLVMSetValueName2) \
	X(LLVMStoreSizeOfType) \
	X(LLVMTypeOf) \
	X(LLVMVerifyModule) \
	X(LLVMVoidTypeInContext) \
	X(LLVMWriteBitcodeToMemoryBuffer) \
	NX_LLVM_TARGET_FNS(X)

#if defined(__x86_64__)
#define NX_LLVM_TARGET_FNS(X) X(LLVMInitializeX86TargetInfo) X(LLVMInitializeX86Target) \
	X(LLVMInitializeX86TargetMC) X(LLVMInitializeX86AsmPrinter)
#elif defined(__aarch64__)
#define NX_LLVM_TARGET_FNS(X) X(LLVMInitializeAArch64TargetInfo) X(LLVMInitializeAArch64Target) \
	X(LLVMInitializeAArch64TargetMC) X(LLVMInitializeAArch64AsmPrinter)
#else
#error "GpSimd JIT: no LLVM native target for this host"
#endif

typedef struct nx_llvm_api {
#define X(f) __typeof__(&f) f;
	NX_LLVM_FNS(X)
#undef X
} nx_llvm_api;

extern nx_llvm_api nx_llvm;

/* Loads libLLVM-16 (once, thread-safe) and initializes the host target.
 * NULL when ready, else a message saying why not. */
const char *nx_llvm_load(void);

#endif
