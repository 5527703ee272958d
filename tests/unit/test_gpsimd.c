/* tests/unit/test_gpsimd.c — GpSimd kernels in the .neff: a hand-written
 * kernel runs per GpSimd core on the simulated SBUF; the loader rejects
 * corrupted and hostile bitcode (garbage, a call outside the allow-list,
 * inline assembly, a missing entry, bad section names, a call of a kernel
 * that does not exist) with a message; a kernel writing out of its slice is
 * stopped by the simulator with an error, not a crash. */
#include "testutil.h"
#include "neff_prog.h"

#include <llvm-c/BitWriter.h>
#include <llvm-c/Core.h>
#include <llvm-c/IRReader.h>

/* doubles element 0 of every partition of its core's slice: t[0] = 2 * t[1] */
static const char *k_double =
	"define void @k(ptr %t, i32 %n) {\n"
	"entry:\n"
	"  %d0 = load ptr, ptr %t\n"
	"  %p1 = getelementptr i8, ptr %t, i64 64\n"
	"  %d1 = load ptr, ptr %p1\n"
	"  %ps = getelementptr i8, ptr %t, i64 16\n"
	"  %np = load i64, ptr %ps\n"
	"  %sp = getelementptr i8, ptr %t, i64 40\n"
	"  %st = load i64, ptr %sp\n"
	"  br label %loop\n"
	"loop:\n"
	"  %p = phi i64 [0, %entry], [%p2, %loop]\n"
	"  %e = mul i64 %p, %st\n"
	"  %a = getelementptr float, ptr %d1, i64 %e\n"
	"  %x = load float, ptr %a\n"
	"  %y = fmul float %x, 2.0\n"
	"  %b = getelementptr float, ptr %d0, i64 %e\n"
	"  store float %y, ptr %b\n"
	"  %p2 = add i64 %p, 1\n"
	"  %c = icmp slt i64 %p2, %np\n"
	"  br i1 %c, label %loop, label %done\n"
	"done:\n"
	"  ret void\n"
	"}\n";

static const char *k_oob =
	"define void @k(ptr %t, i32 %n) {\n"
	"  %d0 = load ptr, ptr %t\n"
	"  %b = getelementptr i8, ptr %d0, i64 1000000\n"
	"  store float 1.0, ptr %b\n"
	"  ret void\n"
	"}\n";

static const char *k_system =
	"declare i32 @system(ptr)\n"
	"define void @k(ptr %t, i32 %n) {\n"
	"  %r = call i32 @system(ptr %t)\n"
	"  ret void\n"
	"}\n";

static const char *k_asm =
	"define void @k(ptr %t, i32 %n) {\n"
	"  call void asm sideeffect \"nop\", \"\"()\n"
	"  ret void\n"
	"}\n";

static const char *k_other =
	"define void @other(ptr %t, i32 %n) {\n"
	"  ret void\n"
	"}\n";

static uint8_t *bitcode(const char *ir, size_t *len)
{
	LLVMContextRef c = LLVMContextCreate();
	LLVMMemoryBufferRef mb = LLVMCreateMemoryBufferWithMemoryRangeCopy(ir, strlen(ir), "k");
	LLVMModuleRef m;
	char *msg = NULL;
	if (LLVMParseIRInContext(c, mb, &m, &msg))
		fail_msg("IR does not parse: %s", msg);
	LLVMMemoryBufferRef out = LLVMWriteBitcodeToMemoryBuffer(m);
	*len = LLVMGetBufferSize(out);
	uint8_t *b = malloc(*len);
	memcpy(b, LLVMGetBufferStart(out), *len);
	LLVMDisposeMemoryBuffer(out);
	LLVMDisposeModule(m);
	LLVMContextDispose(c);
	return b;
}

/* x (f32[P]) -> SBUF partition p byte 0; call; SBUF byte 64 -> y */
static uint8_t *program(const char *kname, const uint8_t *bc, size_t bclen, int kidx, int P, size_t *len)
{
	tp_streams *s = calloc(1, sizeof *s);
	tp_dma(s, tp_sb(NX_DT_F32, P, 0, 1), tp_hbm(NX_DT_F32, 0, P, 1, 1), 0, 0);
	tp_wait(s, NX_ENG_POOL, 0, 1);
	nx_insn *c = tp_add(s, NX_ENG_POOL, NX_I_CALL);
	c->ap[0] = tp_sb(NX_DT_F32, P, 64, 1);
	c->ap[1] = tp_sb(NX_DT_F32, P, 0, 1);
	c->iarg[0] = kidx;
	c->iarg[1] = 1;
	c->iarg[2] = 1;
	tp_signal(s, NX_ENG_POOL, 1, 1);
	tp_wait(s, NX_ENG_SP, 1, 1);
	tp_dma(s, tp_hbm(NX_DT_F32, 4 * P, P, 1, 1), tp_sb(NX_DT_F32, P, 64, 1), 1, 2);
	tp_wait(s, NX_ENG_SP, 2, 1);
	nx_neff_tensor in = tp_tensor("x", NX_DT_F32, P, 1, 0), out = tp_tensor("y", NX_DT_F32, P, 1, 4 * P);
	nx_neff_program p;
	memset(&p, 0, sizeof p);
	p.module_name = "test";
	p.target = "trn1";
	p.n_cores = 1;
	p.inputs = &in, p.ninputs = 1;
	p.outputs = &out, p.noutputs = 1;
	p.hbm_size = 8 * P;
	p.nsems = 3;
	for (int e = 0; e < NX_ENG_COUNT; e++)
		p.streams[e] = s->v[e], p.nstream[e] = s->n[e];
	nx_neff_kernel k = {kname, bc, bclen};
	p.gpsimd = &k;
	p.ngpsimd = 1;
	uint8_t *b;
	nx_diag d = {0};
	assert_int_equal(nx_neff_write(&p, &b, len, &d), NX_OK);
	free(s);
	return b;
}

static void expect_load_error(const uint8_t *b, size_t len, const char *msg)
{
	nx_diag d = {0};
	nx_neff *n = nx_rt_load_bytes(b, len, "x.neff", NULL, &d);
	if (n)
		fail_msg("loaded, expected '%s'", msg);
	char *s = nx_diag_format(&d);
	if (!strstr(s, msg))
		fail_msg("got '%s', expected '%s'", s, msg);
	free(s);
	nx_diag_clear(&d);
}

static void runs_per_core(void **state)
{
	(void)state;
	size_t bl, len;
	uint8_t *bc = bitcode(k_double, &bl);
	uint8_t *b = program("k", bc, bl, 0, 40, &len);
	nx_diag d = {0};
	nx_neff *n = nx_rt_load_bytes(b, len, "x.neff", NULL, &d);
	if (!n)
		fail_msg("%s", nx_diag_format(&d));
	float x[40], y[40];
	for (int k = 0; k < 40; k++)
		x[k] = (float)k - 7.5f;
	const void *ins[1] = {x};
	void *outs[1] = {y};
	nx_rt_opts o = nx_rt_opts_default();
	nx_rt_stats st;
	memset(&st, 0, sizeof st);
	assert_int_equal(nx_rt_run(n, ins, outs, &o, &st, &d), NX_OK);
	for (int k = 0; k < 40; k++) /* 40 partitions: cores 0, 1 and part of 2 */
		assert_true(y[k] == 2 * x[k]);
	assert_true(st.busy_ns[NX_ENG_POOL] > 0);
	nx_neff_free(n);
	free(b);
	free(bc);
}

static void out_of_slice(void **state)
{
	(void)state;
	size_t bl, len;
	uint8_t *bc = bitcode(k_oob, &bl);
	uint8_t *b = program("k", bc, bl, 0, 16, &len);
	nx_diag d = {0};
	nx_neff *n = nx_rt_load_bytes(b, len, "x.neff", NULL, &d);
	assert_non_null(n);
	float x[16] = {0}, y[16];
	const void *ins[1] = {x};
	void *outs[1] = {y};
	nx_rt_opts o = nx_rt_opts_default();
	nx_rt_stats st;
	assert_int_equal(nx_rt_run(n, ins, outs, &o, &st, &d), NX_ERR_INPUT);
	char *s = nx_diag_format(&d);
	if (!strstr(s, "GpSimd kernel 'k' on core 0 (partitions 0..15): write of 4 bytes outside the kernel's operand slices"))
		fail_msg("got '%s'", s);
	free(s);
	nx_diag_clear(&d);
	nx_neff_free(n);
	free(b);
	free(bc);
}

static void rejected(void **state)
{
	(void)state;
	size_t bl, len;
	uint8_t *bc, *b;
	/* garbage where the bitcode was */
	bc = bitcode(k_double, &bl);
	for (size_t k = 8; k < bl; k++)
		bc[k] ^= (uint8_t)(0x5a + k);
	b = program("k", bc, bl, 0, 16, &len);
	expect_load_error(b, len, "GpSimd kernel 'k': not valid LLVM bitcode");
	free(b), free(bc);
	/* a call outside the allow-list */
	bc = bitcode(k_system, &bl);
	b = program("k", bc, bl, 0, 16, &len);
	expect_load_error(b, len, "GpSimd kernel 'k': calls 'system', which is not on the allow-list");
	free(b), free(bc);
	/* inline assembly */
	bc = bitcode(k_asm, &bl);
	b = program("k", bc, bl, 0, 16, &len);
	expect_load_error(b, len, "GpSimd kernel 'k': indirect call or inline assembly");
	free(b), free(bc);
	/* no function of the kernel's name */
	bc = bitcode(k_other, &bl);
	b = program("k", bc, bl, 0, 16, &len);
	expect_load_error(b, len, "GpSimd kernel 'k': no entry function of the kernel's name");
	free(b);
	/* a section name outside [A-Za-z0-9_] */
	b = program("k.x", bc, bl, 0, 16, &len);
	expect_load_error(b, len, "section sg00/gpsimd/k.x.bc: kernel names are [A-Za-z0-9_]");
	free(b), free(bc);
	/* a call of kernel 3 in a .neff with one */
	bc = bitcode(k_double, &bl);
	b = program("k", bc, bl, 3, 16, &len);
	expect_load_error(b, len, "sg00/pool.bin: instruction 1 (call): kernel 3, the .neff has 1");
	free(b);
	/* truncated bitcode */
	b = program("k", bc, bl / 2, 0, 16, &len);
	expect_load_error(b, len, "GpSimd kernel 'k': not valid LLVM bitcode");
	free(b), free(bc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(runs_per_core),
		cmocka_unit_test(out_of_slice),
		cmocka_unit_test(rejected),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
