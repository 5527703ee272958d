/* backend/gpsimd/gs_host.c — the evaluator's host JIT (nx_eval_jit_hook,
 * ir/eval/eval.h): an elementwise cluster of the reference evaluator as one
 * loop over its elements, built with the GpSimd elemental emitter
 * (gs_emit.c), optimized for the host CPU and compiled by one process-wide
 * LLJIT. Kernels must give the interpreter's bits:
 *   - only f32, s32, u32 and pred values (the emitter computes s64 in 32
 *     bits, bf16/f16 round differently on some inputs: interpreted);
 *   - IR from LLVMBuild* carries no fast-math flags, so LLVM neither
 *     reassociates nor contracts into FMA; vectorization keeps every lane's
 *     IEEE operation;
 *   - libm calls are renamed nx_host_<fn> before optimization, so LLVM does
 *     not recognize, fold or simplify them (pow(x, 2) -> x*x), and are bound
 *     to the process's own libm, which the interpreter calls;
 *   - operations the interpreter defines differently (pred add, f32 -> pred
 *     convert: NaN is false there) are not members.
 * Kernels are cached by a signature of the cluster (ops, types, attributes,
 * shapes), so the same computation on other data compiles once. */
#include "backend/gpsimd/gs.h"
#include "ir/eval/eval.h"

#include <math.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef void (*host_fn)(void *out, const void *const *leaves, int64_t n);

typedef struct host_kernel {
	uint64_t hash;
	char *sig;
	host_fn fn;
} host_kernel;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static LLVMOrcLLJITRef jit;
static LLVMTargetMachineRef tm;
static char *triple;
static bool broken; /* LLVM missing or the JIT failed to start: interpret */
static host_kernel *cache;
static int ncache, nnames;
static int64_t compile_ns;

/* The libm functions the emitter calls, bound to the process's own. */
#define HOST_LIBM(X) \
	X(expf) X(logf) X(log1pf) X(expm1f) X(tanhf) X(sqrtf) X(sinf) X(cosf) X(tanf) X(atanf) \
	X(erff) X(cbrtf) X(floorf) X(ceilf) X(roundf) X(rintf) X(powf) X(atan2f)
#define ONE(f) +1
enum { NHOST_LIBM = 0 HOST_LIBM(ONE) };
#undef ONE
_Static_assert(NHOST_LIBM == 18, "HOST_LIBM changed: update the symbol table size");

static bool type_ok(nx_type t)
{
	return t == NX_F32 || t == NX_S32 || t == NX_U32 || t == NX_PRED;
}

static bool member(const nx_inst *i)
{
	nx_type t = i->shape->type;
	if (!type_ok(t))
		return false;
	for (int j = 0; j < i->noperands; j++)
		if (!nx_shape_is_array(i->operands[j]->shape) || !type_ok(i->operands[j]->shape->type))
			return false;
	nx_type a = i->noperands ? i->operands[0]->shape->type : t;
	switch (i->op) {
	case NX_OP_BROADCAST: case NX_OP_RESHAPE: case NX_OP_BITCAST: case NX_OP_COPY:
		return a == t;
	case NX_OP_SELECT:
		return a == NX_PRED && i->operands[1]->shape->type == t && i->operands[2]->shape->type == t;
	case NX_OP_COMPARE:
		return i->operands[1]->shape->type == a;
	case NX_OP_CONVERT:
		return !(a == NX_F32 && t == NX_PRED); /* NaN converts to false in the evaluator */
	case NX_OP_AND: case NX_OP_OR: case NX_OP_XOR: case NX_OP_NOT:
		return t != NX_F32 && a == t;
	default:
		break;
	}
	for (int j = 0; j < i->noperands; j++)
		if (i->operands[j]->shape->type != t)
			return false;
	if (t == NX_F32) {
		switch (i->op) {
		case NX_OP_ADD: case NX_OP_SUBTRACT: case NX_OP_MULTIPLY: case NX_OP_DIVIDE: case NX_OP_REMAINDER:
		case NX_OP_MAXIMUM: case NX_OP_MINIMUM: case NX_OP_CLAMP: case NX_OP_NEGATE: case NX_OP_ABS:
		case NX_OP_SIGN: case NX_OP_POWER: case NX_OP_ATAN2: case NX_OP_RSQRT: case NX_OP_LOGISTIC:
		case NX_OP_EXPONENTIAL: case NX_OP_LOG: case NX_OP_LOG_PLUS_ONE: case NX_OP_EXPONENTIAL_MINUS_ONE:
		case NX_OP_TANH: case NX_OP_SQRT: case NX_OP_SINE: case NX_OP_COSINE: case NX_OP_TAN: case NX_OP_ATAN:
		case NX_OP_ERF: case NX_OP_CBRT: case NX_OP_FLOOR: case NX_OP_CEIL: case NX_OP_ROUND_NEAREST_AFZ:
		case NX_OP_ROUND_NEAREST_EVEN:
			return true;
		default:
			return false;
		}
	}
	if (t == NX_PRED)
		return false; /* pred add/multiply are or/and in the evaluator */
	switch (i->op) {
	case NX_OP_ADD: case NX_OP_SUBTRACT: case NX_OP_MULTIPLY: case NX_OP_DIVIDE: case NX_OP_REMAINDER:
	case NX_OP_MAXIMUM: case NX_OP_MINIMUM: case NX_OP_CLAMP: case NX_OP_NEGATE: case NX_OP_ABS:
	case NX_OP_SHIFT_LEFT: case NX_OP_SHIFT_RIGHT_LOGICAL: case NX_OP_SHIFT_RIGHT_ARITHMETIC:
		return true;
	default:
		return false;
	}
}

/* ----------------------------------------------------------- signature */

typedef struct sbuf {
	char *p;
	size_t n, cap;
} sbuf;

static void put(sbuf *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(sbuf *s, const char *fmt, ...)
{
	for (;;) {
		va_list ap;
		va_start(ap, fmt);
		int w = vsnprintf(s->p + s->n, s->cap - s->n, fmt, ap);
		va_end(ap);
		if (w >= 0 && (size_t)w < s->cap - s->n) {
			s->n += (size_t)w;
			return;
		}
		s->cap = s->cap * 2 + (size_t)(w > 0 ? w : 64) + 64;
		s->p = realloc(s->p, s->cap);
		NX_ASSERT(s->p);
	}
}

static void put_shape(sbuf *s, const nx_shape *sh)
{
	put(s, "%d[", (int)sh->type);
	for (int d = 0; d < sh->rank; d++)
		put(s, "%lld,", (long long)sh->dims[d]);
	put(s, "]");
}

/* where operand j of member m comes from: 'm' index or 'l' index */
static int ref(const nx_eval_cluster *c, int m, int j, bool *is_member)
{
	const nx_inst *o = c->insts[m]->operands[j];
	for (int k = 0; k < m; k++)
		if (c->insts[k] == o) {
			*is_member = true;
			return k;
		}
	for (int k = 0; k < c->nleaves; k++)
		if (c->leaves[k] == o) {
			*is_member = false;
			return k;
		}
	NX_ASSERT(!"cluster operand neither member nor leaf");
	return -1;
}

static char *signature(const nx_eval_cluster *c)
{
	sbuf s = {NULL, 0, 0};
	put(&s, "n%lld;", (long long)c->n);
	for (int k = 0; k < c->nleaves; k++) {
		put(&s, "L");
		put_shape(&s, c->leaves[k]->shape);
	}
	for (int m = 0; m < c->ninsts; m++) {
		const nx_inst *i = c->insts[m];
		put(&s, ";%d:", (int)i->op);
		put_shape(&s, i->shape);
		if (i->op == NX_OP_COMPARE)
			put(&s, "c%d,%d", (int)i->a.direction, (int)i->a.compare_type);
		if (i->op == NX_OP_BROADCAST) {
			put(&s, "b");
			for (int d = 0; d < i->a.dimensions.n; d++)
				put(&s, "%lld,", (long long)i->a.dimensions.v[d]);
		}
		for (int j = 0; j < i->noperands; j++) {
			bool mem;
			int r = ref(c, m, j, &mem);
			put(&s, "%c%d", mem ? 'm' : 'l', r);
		}
	}
	return s.p;
}

static uint64_t fnv(const char *s)
{
	uint64_t h = UINT64_C(14695981039346656037);
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * UINT64_C(1099511628211);
	return h;
}

/* ----------------------------------------------------------- kernel IR */

static LLVMTypeRef mem_type(nx_gs *g, nx_type t)
{
	return t == NX_PRED ? g->i8 : t == NX_F32 ? g->f32 : g->i32;
}

/* element `idx` of leaf k */
static nx_gs_val load_leaf(nx_gs *g, const nx_eval_cluster *c, LLVMValueRef *lp, int k, LLVMValueRef idx)
{
	nx_type t = c->leaves[k]->shape->type;
	LLVMValueRef p = nx_llvm.LLVMBuildGEP2(g->b, mem_type(g, t), lp[k], &idx, 1, "");
	return nx_gs_load(g, t, p);
}

/* the broadcast operand's linear index for output element e */
static LLVMValueRef bcast_index(nx_gs *g, const nx_inst *i, LLVMValueRef e)
{
	const nx_shape *os = i->shape, *xs = i->operands[0]->shape;
	int64_t ost[NX_MAX_RANK], xst[NX_MAX_RANK];
	nx_strides(os, ost);
	nx_strides(xs, xst);
	LLVMValueRef idx = nx_gs_c64(g, 0);
	for (int k = 0; k < i->a.dimensions.n; k++) {
		int64_t d = i->a.dimensions.v[k];
		if (xs->dims[k] == 1)
			continue;
		LLVMValueRef q = nx_llvm.LLVMBuildUDiv(g->b, e, nx_gs_c64(g, ost[d]), "");
		q = nx_llvm.LLVMBuildURem(g->b, q, nx_gs_c64(g, os->dims[d]), "");
		idx = nx_llvm.LLVMBuildAdd(g->b, idx, nx_llvm.LLVMBuildMul(g->b, q, nx_gs_c64(g, xst[k]), ""), "");
	}
	return idx;
}

static int build(nx_gs *g, const nx_eval_cluster *c, const char *name)
{
	LLVMTypeRef pt[3] = {g->ptr, g->ptr, g->i64};
	g->fn = nx_llvm.LLVMAddFunction(g->mod, name, nx_llvm.LLVMFunctionType(g->vd, pt, 3, 0));
	LLVMBasicBlockRef entry = nx_llvm.LLVMAppendBasicBlockInContext(g->ctx, g->fn, "entry");
	nx_llvm.LLVMPositionBuilderAtEnd(g->b, entry);
	LLVMValueRef out = nx_llvm.LLVMGetParam(g->fn, 0), lv = nx_llvm.LLVMGetParam(g->fn, 1);
	LLVMValueRef *lp = calloc((size_t)c->nleaves + 1, sizeof *lp);
	nx_gs_val *mv = calloc((size_t)c->ninsts + 1, sizeof *mv);
	NX_ASSERT(lp && mv);
	for (int k = 0; k < c->nleaves; k++) {
		LLVMValueRef ix = nx_gs_c64(g, k);
		lp[k] = nx_llvm.LLVMBuildLoad2(g->b, g->ptr, nx_llvm.LLVMBuildGEP2(g->b, g->ptr, lv, &ix, 1, ""), "");
	}
	nx_gs_loop l = nx_gs_for(g, nx_gs_c64(g, 0), nx_llvm.LLVMGetParam(g->fn, 2), "e");
	LLVMValueRef e = nx_gs_idx(g, &l);
	int rc = 0;
	for (int m = 0; m < c->ninsts && rc == 0; m++) {
		const nx_inst *i = c->insts[m];
		nx_gs_val x[3];
		if (i->noperands > 3) {
			rc = nx_gs_fail(g, "%d operands", i->noperands);
			break;
		}
		for (int j = 0; j < i->noperands; j++) {
			bool mem;
			int r = ref(c, m, j, &mem);
			if (mem) {
				x[j] = mv[r];
				continue;
			}
			int64_t ne = nx_shape_elems(c->leaves[r]->shape);
			LLVMValueRef idx = i->op == NX_OP_BROADCAST ? bcast_index(g, i, e) : ne == 1 ? nx_gs_c64(g, 0) : e;
			if (i->op != NX_OP_BROADCAST && ne != 1 && ne != c->n)
				rc = nx_gs_fail(g, "operand of %lld elements", (long long)ne);
			x[j] = load_leaf(g, c, lp, r, idx);
		}
		if (rc)
			break;
		switch (i->op) {
		case NX_OP_BROADCAST: case NX_OP_RESHAPE: case NX_OP_BITCAST: case NX_OP_COPY:
			mv[m] = x[0];
			break;
		default:
			rc = nx_gs_inst(g, i, &mv[m], x);
		}
	}
	if (rc == 0) {
		nx_gs_val r = mv[c->ninsts - 1];
		nx_type t = c->insts[c->ninsts - 1]->shape->type;
		nx_gs_store(g, r, nx_llvm.LLVMBuildGEP2(g->b, mem_type(g, t), out, &e, 1, ""));
		nx_gs_endfor(g, &l);
		nx_llvm.LLVMBuildRetVoid(g->b);
	}
	free(lp);
	free(mv);
	return rc;
}

/* libm declarations -> nx_host_<name>: opaque to LLVM's library-call
 * simplification and constant folding */
static void rename_libm(LLVMModuleRef m)
{
	for (LLVMValueRef f = nx_llvm.LLVMGetFirstFunction(m); f; f = nx_llvm.LLVMGetNextFunction(f)) {
		size_t len;
		const char *nm = nx_llvm.LLVMGetValueName2(f, &len);
		if (!nx_llvm.LLVMIsDeclaration(f) || (len >= 5 && !strncmp(nm, "llvm.", 5)))
			continue;
		char buf[64];
		snprintf(buf, sizeof buf, "nx_host_%.*s", (int)len, nm);
		nx_llvm.LLVMSetValueName2(f, buf, strlen(buf));
	}
}

/* ----------------------------------------------------------------- JIT */

typedef void (*vfn)(void);

static bool start_jit(void)
{
	if (jit || broken)
		return jit != NULL;
	broken = true;
	if (nx_llvm_load())
		return false;
	char *cpu = nx_llvm.LLVMGetHostCPUName(), *feat = nx_llvm.LLVMGetHostCPUFeatures();
	triple = nx_llvm.LLVMGetDefaultTargetTriple();
	LLVMTargetRef tgt;
	char *terr = NULL;
	bool ok = !nx_llvm.LLVMGetTargetFromTriple(triple, &tgt, &terr);
	nx_llvm.LLVMDisposeMessage(terr);
	if (ok) {
		/* one for the optimizer's cost model, one the JIT owns */
		tm = nx_llvm.LLVMCreateTargetMachine(tgt, triple, cpu, feat, LLVMCodeGenLevelDefault, LLVMRelocDefault,
		                                     LLVMCodeModelJITDefault);
		LLVMTargetMachineRef jtm = nx_llvm.LLVMCreateTargetMachine(tgt, triple, cpu, feat, LLVMCodeGenLevelDefault,
		                                                           LLVMRelocDefault, LLVMCodeModelJITDefault);
		LLVMOrcLLJITBuilderRef jb = nx_llvm.LLVMOrcCreateLLJITBuilder();
		nx_llvm.LLVMOrcLLJITBuilderSetJITTargetMachineBuilder(jb, nx_llvm.LLVMOrcJITTargetMachineBuilderCreateFromTargetMachine(jtm));
		LLVMErrorRef e = nx_llvm.LLVMOrcCreateLLJIT(&jit, jb);
		if (e) {
			char *m = nx_llvm.LLVMGetErrorMessage(e);
			nx_llvm.LLVMDisposeErrorMessage(m);
			jit = NULL;
		}
	}
	nx_llvm.LLVMDisposeMessage(cpu);
	nx_llvm.LLVMDisposeMessage(feat);
	if (!jit)
		return false;
	static const char *const names[] = {
#define NAME(f) "nx_host_" #f,
		HOST_LIBM(NAME)
#undef NAME
		"fmodf", "memcpy", "memmove", "memset"};
	const vfn addrs[] = {
#define ADDR(f) (vfn)&f,
		HOST_LIBM(ADDR)
#undef ADDR
		(vfn)&fmodf, (vfn)&memcpy, (vfn)&memmove, (vfn)&memset};
	LLVMOrcCSymbolMapPair pairs[NHOST_LIBM + 4];
	LLVMJITSymbolFlags fl = {LLVMJITSymbolGenericFlagsExported | LLVMJITSymbolGenericFlagsCallable, 0};
	for (int k = 0; k < NHOST_LIBM + 4; k++)
		pairs[k] = (LLVMOrcCSymbolMapPair){nx_llvm.LLVMOrcLLJITMangleAndIntern(jit, names[k]),
		                                   {(LLVMOrcJITTargetAddress)(uintptr_t)addrs[k], fl}};
	LLVMErrorRef e = nx_llvm.LLVMOrcJITDylibDefine(nx_llvm.LLVMOrcLLJITGetMainJITDylib(jit),
	                                               nx_llvm.LLVMOrcAbsoluteSymbols(pairs, NHOST_LIBM + 4));
	if (e) {
		char *m = nx_llvm.LLVMGetErrorMessage(e);
		nx_llvm.LLVMDisposeErrorMessage(m);
		return false;
	}
	broken = false;
	return true;
}

static void drop_error(LLVMErrorRef e)
{
	if (e) {
		char *m = nx_llvm.LLVMGetErrorMessage(e);
		nx_llvm.LLVMDisposeErrorMessage(m);
	}
}

/* emit, verify, optimize for the host, add to the JIT, look up: under mu */
static host_fn compile_cluster(const nx_eval_cluster *c)
{
	char name[32];
	snprintf(name, sizeof name, "nx_ejit%d", nnames++);
	LLVMOrcThreadSafeContextRef tsc = nx_llvm.LLVMOrcCreateNewThreadSafeContext();
	nx_gs g;
	memset(&g, 0, sizeof g);
	g.ctx = nx_llvm.LLVMOrcThreadSafeContextGetContext(tsc);
	g.mod = nx_llvm.LLVMModuleCreateWithNameInContext(name, g.ctx);
	g.b = nx_llvm.LLVMCreateBuilderInContext(g.ctx);
	g.i1 = nx_llvm.LLVMInt1TypeInContext(g.ctx);
	g.i8 = nx_llvm.LLVMInt8TypeInContext(g.ctx);
	g.i16 = nx_llvm.LLVMInt16TypeInContext(g.ctx);
	g.i32 = nx_llvm.LLVMInt32TypeInContext(g.ctx);
	g.i64 = nx_llvm.LLVMInt64TypeInContext(g.ctx);
	g.f32 = nx_llvm.LLVMFloatTypeInContext(g.ctx);
	g.ptr = nx_llvm.LLVMPointerTypeInContext(g.ctx, 0);
	g.vd = nx_llvm.LLVMVoidTypeInContext(g.ctx);
	int rc = build(&g, c, name);
	nx_llvm.LLVMDisposeBuilder(g.b);
	char *msg = NULL;
	if (rc == 0 && nx_llvm.LLVMVerifyModule(g.mod, LLVMReturnStatusAction, &msg))
		rc = -1;
	nx_llvm.LLVMDisposeMessage(msg);
	if (rc == 0) {
		rename_libm(g.mod);
		nx_llvm.LLVMSetTarget(g.mod, triple);
		LLVMTargetDataRef td = nx_llvm.LLVMCreateTargetDataLayout(tm);
		nx_llvm.LLVMSetModuleDataLayout(g.mod, td);
		nx_llvm.LLVMDisposeTargetData(td);
		LLVMPassBuilderOptionsRef po = nx_llvm.LLVMCreatePassBuilderOptions();
		LLVMErrorRef e = nx_llvm.LLVMRunPasses(g.mod, "default<O2>", tm, po);
		nx_llvm.LLVMDisposePassBuilderOptions(po);
		if (e) {
			drop_error(e);
			rc = -1;
		}
	}
	if (rc) {
		nx_llvm.LLVMDisposeModule(g.mod);
		nx_llvm.LLVMOrcDisposeThreadSafeContext(tsc);
		return NULL;
	}
	LLVMOrcThreadSafeModuleRef tsm = nx_llvm.LLVMOrcCreateNewThreadSafeModule(g.mod, tsc);
	nx_llvm.LLVMOrcDisposeThreadSafeContext(tsc);
	LLVMErrorRef e = nx_llvm.LLVMOrcLLJITAddLLVMIRModule(jit, nx_llvm.LLVMOrcLLJITGetMainJITDylib(jit), tsm);
	if (e) {
		nx_llvm.LLVMOrcDisposeThreadSafeModule(tsm);
		drop_error(e);
		return NULL;
	}
	LLVMOrcExecutorAddress addr = 0;
	e = nx_llvm.LLVMOrcLLJITLookup(jit, &addr, name);
	if (e) {
		drop_error(e);
		return NULL;
	}
	return (host_fn)(uintptr_t)addr;
}

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void *compile(const nx_eval_cluster *c)
{
	char *sig = signature(c);
	uint64_t h = fnv(sig);
	host_kernel *k = NULL;
	pthread_mutex_lock(&mu);
	for (int j = 0; j < ncache && !k; j++)
		if (cache[j].hash == h && !strcmp(cache[j].sig, sig))
			k = &cache[j];
	if (!k && start_jit()) {
		int64_t t0 = now_ns();
		host_fn fn = compile_cluster(c);
		compile_ns += now_ns() - t0;
		/* failures are cached too (fn NULL): the same cluster is not retried */
		cache = realloc(cache, sizeof *cache * (size_t)(ncache + 1));
		NX_ASSERT(cache);
		cache[ncache] = (host_kernel){h, sig, fn};
		k = &cache[ncache++];
		sig = NULL;
	}
	/* the cache only grows: entries keep their place until exit, but the
	 * array may move, so hand out the function's address */
	host_fn fn = k ? k->fn : NULL;
	pthread_mutex_unlock(&mu);
	free(sig);
	return fn ? (void *)(uintptr_t)fn : NULL;
}

static void run(void *kernel, void *out, const void *const *leaves, int64_t n)
{
	host_fn fn = (host_fn)(uintptr_t)kernel;
	fn(out, leaves, n);
}

const nx_eval_jit_ops *nx_gpsimd_eval_jit(int64_t min_elems)
{
	static nx_eval_jit_ops ops = {0, member, compile, run};
	ops.min_elems = min_elems;
	return &ops;
}

void nx_gpsimd_eval_jit_stats(int *kernels, double *compile_ms)
{
	pthread_mutex_lock(&mu);
	int n = 0;
	for (int j = 0; j < ncache; j++)
		n += cache[j].fn != NULL;
	*kernels = n;
	*compile_ms = (double)compile_ns / 1e6;
	pthread_mutex_unlock(&mu);
}
