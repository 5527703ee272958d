/* tests/unit/test_isa.c — encode -> decode -> disassemble for every opcode,
 * stream header checks, target tables and the cost model. */
#include "testutil.h"
#include "neff_prog.h"

#include <math.h>

static nx_insn sample(int op)
{
	const nx_isa_info *info = &nx_isa_table[op];
	int e = 0;
	while (!(info->engines & (1u << e)))
		e++;
	nx_insn in = nx_insn_new((nx_isa_op)op, (nx_engine)e);
	if (info->func_kind == NX_F_ACT)
		in.func = (uint8_t)(op % NX_ACT_COUNT);
	if (info->func_kind == NX_F_ALU)
		in.func = (uint8_t)(op % NX_ALU_COUNT);
	in.iarg[0] = op;
	in.iarg[2] = -op;
	in.fimm[0] = 0.5f * (float)op;
	in.debug_id = (uint32_t)op;
	for (int a = 0; a < info->nap; a++) {
		int32_t st[3] = {a + 1, -2, 7};
		uint32_t c[3] = {3, 4, (uint32_t)op + 1};
		in.ap[a] = nx_ap_sbuf((nx_dtype)((op + a) % NX_DT_S64), a * 32, 32, 100 * a + op, 3, st, c);
		in.ap[a].loop_stride[1] = -4 * a;
	}
	return in;
}

static void round_trip_every_op(void **state)
{
	(void)state;
	nx_insn all[NX_I_COUNT];
	for (int op = 0; op < NX_I_COUNT; op++) {
		nx_insn in = sample(op);
		uint8_t *b;
		size_t n;
		nx_isa_encode(in.engine, &in, 1, &b, &n);
		assert_int_equal(n, NX_ISA_STREAM_HEADER + NX_ISA_RECORD);
		nx_insn *out;
		size_t cnt;
		int eng;
		char err[128];
		assert_int_equal(nx_isa_decode(b, n, &eng, &out, &cnt, err, sizeof err), 0);
		assert_int_equal(cnt, 1);
		assert_int_equal(eng, in.engine);
		assert_memory_equal(&out[0], &in, sizeof in);
		char t1[1024], t2[1024];
		nx_isa_disasm(&in, t1, sizeof t1);
		nx_isa_disasm(&out[0], t2, sizeof t2);
		assert_string_equal(t1, t2);
		assert_non_null(strstr(t1, nx_isa_table[op].name));
		all[op] = in;
		free(out);
		free(b);
	}
	/* distinct instructions print distinctly */
	for (int i = 0; i < NX_I_COUNT; i++)
		for (int j = i + 1; j < NX_I_COUNT; j++) {
			char a[1024], b[1024];
			nx_isa_disasm(&all[i], a, sizeof a);
			nx_isa_disasm(&all[j], b, sizeof b);
			assert_string_not_equal(a, b);
		}
}

static void disasm_text(void **state)
{
	(void)state;
	nx_insn in = nx_insn_new(NX_I_MATMUL, NX_ENG_PE);
	in.flags = NX_IF_START;
	in.ap[0] = tp_ps(128, 0, 512);
	in.ap[1] = tp_sb(NX_DT_BF16, 128, 0, 128);
	in.ap[2] = tp_sb(NX_DT_BF16, 128, 256, 512);
	char t[512];
	nx_isa_disasm(&in, t, sizeof t);
	assert_string_equal(t, "matmul start psum.f32[0:128]+0 [1:512] <- sbuf.bf16[0:128]+0 [1:128], "
	                       "sbuf.bf16[0:128]+256 [1:512]");
	nx_insn loop[3] = {nx_insn_new(NX_I_LOOP, NX_ENG_DVE), nx_insn_new(NX_I_NOP, NX_ENG_DVE),
	                   nx_insn_new(NX_I_ENDLOOP, NX_ENG_DVE)};
	loop[0].iarg[0] = 4;
	char *s = nx_isa_disasm_stream(loop, 3);
	assert_string_equal(s, "     0  loop i=4\n     1    nop\n     2  endloop\n");
	free(s);
}

static void decode_rejects(void **state)
{
	(void)state;
	nx_insn in = sample(NX_I_TENSOR_TENSOR);
	uint8_t *b;
	size_t n;
	nx_isa_encode(in.engine, &in, 1, &b, &n);
	nx_insn *out;
	size_t cnt;
	int eng;
	char err[128];
	b[NX_ISA_STREAM_HEADER] = 200; /* opcode */
	assert_int_equal(nx_isa_decode(b, n, &eng, &out, &cnt, err, sizeof err), -1);
	assert_string_equal(err, "instruction 0: unknown opcode 200");
	b[NX_ISA_STREAM_HEADER] = NX_I_TENSOR_TENSOR;
	b[4] = 9; /* version */
	assert_int_equal(nx_isa_decode(b, n, &eng, &out, &cnt, err, sizeof err), -1);
	assert_non_null(strstr(err, "version 9"));
	b[4] = NX_ISA_VERSION;
	assert_int_equal(nx_isa_decode(b, n - 1, &eng, &out, &cnt, err, sizeof err), -1);
	b[NX_ISA_STREAM_HEADER + 2] = NX_ENG_PE; /* engine mismatch with stream */
	assert_int_equal(nx_isa_decode(b, n, &eng, &out, &cnt, err, sizeof err), -1);
	assert_non_null(strstr(err, "engine"));
	free(b);
}

static void targets(void **state)
{
	(void)state;
	for (int i = 0; nx_target_names[i]; i++) {
		const nx_target *t = nx_target_get(nx_target_names[i]);
		assert_non_null(t);
		assert_int_equal(t->partitions, 128);
		assert_int_equal(t->psum_partition_bytes, t->psum_banks * t->psum_bank_bytes);
		assert_int_equal(t->matmul_max_n * 4, t->psum_bank_bytes);
	}
	assert_null(nx_target_get("trn9"));
	const nx_target *a = nx_target_get("trn1"), *b = nx_target_get("trn2");
	assert_int_equal(a->partitions * a->sbuf_partition_bytes, 24LL << 20);
	assert_int_equal(b->partitions * b->sbuf_partition_bytes, 28LL << 20);
	/* the TFLOPS in the table agree with clock x array size x 2 */
	assert_true(fabs(128.0 * 128 * 2 * a->freq_ghz[NX_ENG_PE] / 1000 - a->pe_tflops_bf16) < 1.0);
	assert_true(fabs(128.0 * 128 * 2 * b->freq_ghz[NX_ENG_PE] / 1000 - b->pe_tflops_bf16) < 1.0);
}

static void costs(void **state)
{
	(void)state;
	const nx_target *t = nx_target_get("trn1");
	nx_insn mm = nx_insn_new(NX_I_MATMUL, NX_ENG_PE);
	mm.ap[0] = tp_ps(128, 0, 512);
	mm.ap[1] = tp_sb(NX_DT_BF16, 128, 0, 128);
	mm.ap[2] = tp_sb(NX_DT_BF16, 128, 0, 512);
	assert_true(nx_target_cycles(t, &mm) == 512);
	mm.ap[2] = tp_sb(NX_DT_F32, 128, 0, 512);
	assert_true(nx_target_cycles(t, &mm) == 2048);
	mm.ap[2] = tp_sb(NX_DT_BF16, 128, 0, 16);
	assert_true(nx_target_cycles(t, &mm) == 64);
	mm.ap[1] = tp_sb(NX_DT_BF16, 128, 0, 8);
	assert_true(nx_target_cycles(t, &mm) == 16);
	nx_insn tt = nx_insn_new(NX_I_TENSOR_TENSOR, NX_ENG_DVE);
	tt.ap[0] = tt.ap[1] = tt.ap[2] = tp_sb(NX_DT_F32, 128, 0, 1000);
	assert_true(nx_target_cycles(t, &tt) == 2000 + t->access_overhead[NX_ENG_DVE]);
	/* an on-chip operand with an innermost stride above 16 bytes halves the
	 * SBUF/PSUM interface rate [A2]: 16 bytes (4 f32) is still full rate */
	nx_insn cp = nx_insn_new(NX_I_TENSOR_COPY, NX_ENG_DVE);
	cp.ap[0] = tp_sb(NX_DT_F32, 128, 0, 1000);
	cp.ap[1] = tp_sb(NX_DT_F32, 128, 0, 1000);
	cp.ap[1].stride[0] = 4;
	assert_true(nx_target_cycles(t, &cp) == 1000 + t->access_overhead[NX_ENG_DVE]);
	cp.ap[1].stride[0] = 5;
	assert_true(nx_target_cycles(t, &cp) == 2000 + t->access_overhead[NX_ENG_DVE]);
	/* shared ports: DVE/POOL on SBUF and DVE/ACT on PSUM on NeuronCore-v2
	 * [A2], none on NeuronCore-v3 [A3]; PE and DMA hold none */
	const nx_target *v3 = nx_target_get("trn2");
	assert_int_equal(nx_target_ports(t, &cp), NX_PORT_SBUF_DVE_POOL);
	assert_int_equal(nx_target_ports(v3, &cp), 0);
	cp.ap[1] = tp_ps(128, 0, 1000);
	assert_int_equal(nx_target_ports(t, &cp), NX_PORT_SBUF_DVE_POOL | NX_PORT_PSUM_DVE_ACT);
	cp.engine = NX_ENG_ACT;
	assert_int_equal(nx_target_ports(t, &cp), NX_PORT_PSUM_DVE_ACT);
	cp.engine = NX_ENG_POOL;
	cp.ap[1] = tp_sb(NX_DT_F32, 128, 0, 1000);
	assert_int_equal(nx_target_ports(t, &cp), NX_PORT_SBUF_DVE_POOL);
	assert_int_equal(nx_target_ports(t, &mm), 0);
	nx_insn dma = nx_insn_new(NX_I_DMA, NX_ENG_SP);
	dma.ap[0] = tp_sb(NX_DT_F32, 128, 0, 1024);
	dma.ap[1] = tp_hbm(NX_DT_F32, 0, 128, 1024, 1024);
	double ns = nx_target_ns(t, &dma);
	/* 4 KiB per partition: efficiency 4096 / (4096 + 256); 17 B/ns on trn1 */
	assert_true(fabs(ns - (1300.0 + 512.0 * 1024 / (17.0 * 4096.0 / (4096.0 + 256.0)))) < 1e-6);
	/* a transposing (element-strided) source halves the bandwidth */
	dma.ap[1] = tp_hbm(NX_DT_F32, 0, 128, 1024, 1);
	dma.ap[1].stride[0] = 128;
	double ns2 = nx_target_ns(t, &dma);
	assert_true(fabs(ns2 - (1300.0 + 512.0 * 1024 / (0.5 * 17.0 * 4096.0 / (4096.0 + 256.0)))) < 1e-6);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(round_trip_every_op), cmocka_unit_test(disasm_text),
		cmocka_unit_test(decode_rejects),      cmocka_unit_test(targets),
		cmocka_unit_test(costs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
