/* tests/unit/test_sim.c — hand-assembled programs run on the simulator and
 * compared with plain C; timing overlap and serialization. */
#include "testutil.h"
#include "neff_prog.h"

#include <math.h>

enum { SEM_IN, SEM_MM, SEM_ACT, SEM_DONE, NSEM };

/* out E[64,F] = exp(A[128,64]^T . B[128,F]); R[64] = sum_n E. B arrives in
 * `chunks` DMAs of 16 columns issued by one loop. */
static uint8_t *build(int chunks, size_t *len, tp_streams *s, int64_t *offs)
{
	int F = 16 * chunks;
	int64_t a = 0, b = a + 128 * 64 * 4, e = b + 128LL * F * 4, r = e + 64LL * F * 4, end = r + 64 * 4;
	offs[0] = a, offs[1] = b, offs[2] = e, offs[3] = r;
	memset(s, 0, sizeof *s);
	/* SBUF: A at 0, B at 256, E at 4096, R at 8192 */
	tp_dma(s, tp_sb(NX_DT_F32, 128, 0, 64), tp_hbm(NX_DT_F32, a, 128, 64, 64), 0, SEM_IN);
	nx_insn *l = tp_add(s, NX_ENG_SP, NX_I_LOOP);
	l->iarg[0] = chunks;
	nx_ap dst = tp_sb(NX_DT_F32, 128, 256, 16), src = tp_hbm(NX_DT_F32, b, 128, 16, F);
	dst.loop_stride[0] = 64;
	src.loop_stride[0] = 64;
	tp_dma(s, dst, src, 1, SEM_IN);
	tp_add(s, NX_ENG_SP, NX_I_ENDLOOP);
	tp_wait(s, NX_ENG_SP, SEM_DONE, 1);
	tp_dma(s, tp_hbm(NX_DT_F32, e, 64, (uint32_t)F, F), tp_sb(NX_DT_F32, 64, 4096, (uint32_t)F), 2, -1);
	tp_dma(s, tp_hbm(NX_DT_F32, r, 64, 1, 1), tp_sb(NX_DT_F32, 64, 8192, 1), 3, -1);

	tp_wait(s, NX_ENG_PE, SEM_IN, 1 + chunks);
	nx_insn *mm = tp_add(s, NX_ENG_PE, NX_I_MATMUL);
	mm->flags = NX_IF_START;
	mm->ap[0] = tp_ps(64, 0, (uint32_t)F);
	mm->ap[1] = tp_sb(NX_DT_F32, 128, 0, 64);
	mm->ap[2] = tp_sb(NX_DT_F32, 128, 256, (uint32_t)F);
	mm->debug_id = 0;
	tp_signal(s, NX_ENG_PE, SEM_MM, 1);

	tp_wait(s, NX_ENG_ACT, SEM_MM, 1);
	nx_insn *ac = tp_add(s, NX_ENG_ACT, NX_I_ACTIVATE);
	ac->func = NX_ACT_EXP;
	ac->fimm[0] = 1.0f;
	ac->ap[0] = tp_sb(NX_DT_F32, 64, 4096, (uint32_t)F);
	ac->ap[1] = tp_ps(64, 0, (uint32_t)F);
	ac->debug_id = 1;
	tp_signal(s, NX_ENG_ACT, SEM_ACT, 1);

	tp_wait(s, NX_ENG_DVE, SEM_ACT, 1);
	nx_insn *rd = tp_add(s, NX_ENG_DVE, NX_I_TENSOR_REDUCE);
	rd->func = NX_ALU_ADD;
	rd->iarg[0] = 1;
	rd->ap[0] = tp_sb(NX_DT_F32, 64, 8192, 1);
	rd->ap[1] = tp_sb(NX_DT_F32, 64, 4096, (uint32_t)F);
	tp_signal(s, NX_ENG_DVE, SEM_DONE, 1);

	nx_neff_tensor in[2] = {tp_tensor("a", NX_DT_F32, 128, 64, a), tp_tensor("b", NX_DT_F32, 128, F, b)};
	nx_neff_tensor out[2] = {tp_tensor("e", NX_DT_F32, 64, F, e), tp_tensor("r", NX_DT_F32, 64, 1, r)};
	return tp_neff(s, in, 2, out, 2, end, NSEM, len);
}

static void check_program(int chunks, size_t *ninsns)
{
	int F = 16 * chunks;
	size_t len;
	tp_streams *s = malloc(sizeof *s);
	int64_t offs[4];
	uint8_t *bytes = build(chunks, &len, s, offs);
	assert_non_null(bytes);
	*ninsns = 0;
	for (int e = 0; e < NX_ENG_COUNT; e++)
		*ninsns += s->n[e];
	nx_diag d = {0};
	nx_neff *n = nx_rt_load_bytes(bytes, len, "prog.neff", NULL, &d);
	if (!n)
		fail_msg("%s", d.msg);
	float *A = malloc(128 * 64 * 4), *B = malloc(128 * (size_t)F * 4);
	float *E = malloc(64 * (size_t)F * 4), *R = malloc(64 * 4);
	srand(7);
	for (int i = 0; i < 128 * 64; i++)
		A[i] = (float)(rand() % 200 - 100) / 400.0f;
	for (int i = 0; i < 128 * F; i++)
		B[i] = (float)(rand() % 200 - 100) / 400.0f;
	const void *ins[2] = {A, B};
	void *outs[2] = {E, R};
	nx_rt_opts o = nx_rt_opts_default();
	nx_rt_stats st;
	if (nx_rt_run(n, ins, outs, &o, &st, &d) != NX_OK)
		fail_msg("%s", d.msg);
	for (int m = 0; m < 64; m++) {
		float sum = 0;
		for (int j = 0; j < F; j++) {
			float acc = 0;
			for (int k = 0; k < 128; k++)
				acc += A[k * 64 + m] * B[k * F + j];
			float ex = expf(acc);
			assert_true(E[m * F + j] == ex);
			sum = j ? sum + ex : ex;
		}
		assert_true(R[m] == sum);
	}
	assert_true(st.total_ns > 0);
	assert_true(st.busy_ns[NX_ENG_PE] > 0 && st.busy_ns[NX_ENG_ACT] > 0 && st.busy_ns[NX_ENG_DVE] > 0);
	/* the loop ran `chunks` times */
	assert_int_equal(st.insns[NX_ENG_SP], 1 + 1 + 2 * chunks + 1 + 2);
	nx_neff_free(n);
	free(A), free(B), free(E), free(R), free(bytes), free(s);
}

static void matmul_exp_reduce(void **state)
{
	(void)state;
	size_t small, big;
	check_program(4, &small);
	check_program(32, &big);
	assert_int_equal(small, big); /* instruction count independent of volume */
}

/* Two engines each memset a large tile; `sync` makes ACT wait for DVE. */
static nx_rt_stats two_engines(bool sync)
{
	tp_streams *s = calloc(1, sizeof *s);
	nx_insn *a = tp_add(s, NX_ENG_DVE, NX_I_MEMSET);
	a->ap[0] = tp_sb(NX_DT_F32, 128, 0, 8192);
	a->fimm[0] = 1;
	tp_signal(s, NX_ENG_DVE, 0, 1);
	if (sync)
		tp_wait(s, NX_ENG_ACT, 0, 1);
	nx_insn *b = tp_add(s, NX_ENG_ACT, NX_I_MEMSET);
	b->ap[0] = tp_sb(NX_DT_F32, 128, 65536, 8192);
	size_t len;
	uint8_t *bytes = tp_neff(s, NULL, 0, NULL, 0, 0, 1, &len);
	nx_diag d = {0};
	nx_neff *n = nx_rt_load_bytes(bytes, len, "t.neff", NULL, &d);
	assert_non_null(n);
	nx_rt_stats st;
	nx_rt_opts o = {0};
	assert_int_equal(nx_rt_run(n, NULL, NULL, &o, &st, &d), NX_OK);
	nx_neff_free(n);
	free(bytes);
	free(s);
	return st;
}

static void overlap_and_serialize(void **state)
{
	(void)state;
	nx_rt_stats p = two_engines(false), q = two_engines(true);
	double dve = p.busy_ns[NX_ENG_DVE], act = p.busy_ns[NX_ENG_ACT];
	assert_true(dve > 1000 && act > 1000);
	assert_true(p.total_ns < dve + act);                 /* overlapped */
	assert_true(p.total_ns >= (dve > act ? dve : act));
	assert_true(q.total_ns >= q.busy_ns[NX_ENG_DVE] + q.busy_ns[NX_ENG_ACT]); /* serialized */
}

/* DVE and POOL each memset their own SBUF tile, no synchronization: they
 * share the SBUF port on NeuronCore-v2 [A2], not on NeuronCore-v3 [A3]. */
static nx_rt_stats dve_pool(const char *target)
{
	tp_streams *s = calloc(1, sizeof *s);
	nx_insn *a = tp_add(s, NX_ENG_DVE, NX_I_MEMSET);
	a->ap[0] = tp_sb(NX_DT_F32, 128, 0, 8192);
	nx_insn *b = tp_add(s, NX_ENG_POOL, NX_I_MEMSET);
	b->ap[0] = tp_sb(NX_DT_F32, 128, 65536, 8192);
	size_t len;
	uint8_t *bytes = tp_neff(s, NULL, 0, NULL, 0, 0, 1, &len);
	nx_diag d = {0};
	nx_neff *n = nx_rt_load_bytes(bytes, len, "t.neff", nx_target_get(target), &d);
	assert_non_null(n);
	nx_rt_stats st;
	nx_rt_opts o = {0};
	assert_int_equal(nx_rt_run(n, NULL, NULL, &o, &st, &d), NX_OK);
	nx_neff_free(n);
	free(bytes);
	free(s);
	return st;
}

static void shared_sbuf_port(void **state)
{
	(void)state;
	nx_rt_stats v2 = dve_pool("trn1"), v3 = dve_pool("trn2");
	double a = v2.busy_ns[NX_ENG_DVE], b = v2.busy_ns[NX_ENG_POOL];
	assert_true(a > 1000 && b > 1000);
	assert_true(v2.total_ns >= a + b); /* serialized by the port */
	assert_true(v2.port_wait_ns[NX_ENG_DVE] + v2.port_wait_ns[NX_ENG_POOL] > 0);
	double c = v3.busy_ns[NX_ENG_DVE], e = v3.busy_ns[NX_ENG_POOL];
	assert_true(v3.total_ns < c + e); /* in parallel */
	assert_true(v3.port_wait_ns[NX_ENG_DVE] == 0 && v3.port_wait_ns[NX_ENG_POOL] == 0);
}

static double dma_pair(int q2)
{
	tp_streams *s = calloc(1, sizeof *s);
	tp_dma(s, tp_sb(NX_DT_F32, 128, 0, 4096), tp_hbm(NX_DT_F32, 0, 128, 4096, 4096), 0, -1);
	tp_dma(s, tp_sb(NX_DT_F32, 128, 16384, 4096), tp_hbm(NX_DT_F32, 0, 128, 4096, 4096), q2, -1);
	size_t len;
	uint8_t *bytes = tp_neff(s, NULL, 0, NULL, 0, 128 * 4096 * 4, 0, &len);
	nx_diag d = {0};
	nx_neff *n = nx_rt_load_bytes(bytes, len, "t.neff", NULL, &d);
	assert_non_null(n);
	nx_rt_stats st;
	nx_rt_opts o = {0};
	assert_int_equal(nx_rt_run(n, NULL, NULL, &o, &st, &d), NX_OK);
	nx_neff_free(n);
	free(bytes);
	free(s);
	return st.total_ns;
}

static void dma_queues(void **state)
{
	(void)state;
	double par = dma_pair(1), ser = dma_pair(0);
	assert_true(ser > 1.8 * par && ser < 2.2 * par);
}

static void deadlock_reported(void **state)
{
	(void)state;
	tp_streams *s = calloc(1, sizeof *s);
	tp_wait(s, NX_ENG_POOL, 1, 1);
	size_t len;
	uint8_t *bytes = tp_neff(s, NULL, 0, NULL, 0, 0, 2, &len);
	nx_diag d = {0};
	nx_neff *n = nx_rt_load_bytes(bytes, len, "t.neff", NULL, &d);
	assert_non_null(n);
	nx_rt_opts o = {0};
	assert_int_equal(nx_rt_run(n, NULL, NULL, &o, NULL, &d), NX_ERR_INPUT);
	assert_non_null(strstr(d.msg, "deadlock: sg00/pool.bin instruction 0 waits for semaphore 1"));
	nx_diag_clear(&d);
	nx_neff_free(n);
	free(bytes);
	free(s);
}

static void rounding(void **state)
{
	(void)state;
	uint8_t b[4];
	nx_rt_store_elem(b, NX_DT_BF16, 1.0 + 1.0 / 512, -1);
	assert_int_equal(nx_get_le(b, 2), 0x3f80); /* RNE: 1.0 */
	nx_rt_store_elem(b, NX_DT_BF16, 1.0 + 3.0 / 256, -1);
	assert_int_equal(nx_get_le(b, 2), 0x3f82); /* tie 1+1.5ulp -> even */
	int up = 0;
	for (int i = 0; i < 1000; i++) {
		nx_rt_store_elem(b, NX_DT_BF16, 1.0 + 1.0 / 512, i / 1000.0);
		up += nx_get_le(b, 2) == 0x3f81;
	}
	assert_true(up > 200 && up < 300); /* 1/4 of an ulp rounds up 1/4 of the time */
	nx_rt_store_elem(b, NX_DT_F16, 65519.0, -1);
	assert_int_equal(nx_get_le(b, 2), 0x7bff);
	nx_rt_store_elem(b, NX_DT_F16, 65520.0, -1);
	assert_int_equal(nx_get_le(b, 2), 0x7c00); /* inf */
	nx_rt_store_elem(b, NX_DT_FP8E4M3, 448.0, -1);
	assert_int_equal(b[0], 0x7e);
	assert_true(nx_rt_load_elem((uint8_t[]){0x01}, NX_DT_FP8E4M3) == ldexp(1, -9));
	nx_rt_store_elem(b, NX_DT_FP8E5M2, -57344.0, -1);
	assert_int_equal(b[0], 0xfb);
	nx_rt_store_elem(b, NX_DT_S8, 300.0, -1);
	assert_int_equal((int8_t)b[0], 127);
	for (int x = 0; x < 0x10000; x += 7) { /* every bf16 survives a round trip */
		uint8_t c[2] = {(uint8_t)x, (uint8_t)(x >> 8)};
		double v = nx_rt_load_elem(c, NX_DT_BF16);
		if (isnan(v))
			continue;
		nx_rt_store_elem(b, NX_DT_BF16, v, -1);
		assert_int_equal(nx_get_le(b, 2), (uint64_t)x);
	}
}

static void profile_written(void **state)
{
	(void)state;
	size_t len;
	tp_streams *s = malloc(sizeof *s);
	int64_t offs[4];
	uint8_t *bytes = build(4, &len, s, offs);
	nx_diag d = {0};
	nx_neff *n = nx_rt_load_bytes(bytes, len, "p.neff", NULL, &d);
	assert_non_null(n);
	static float A[128 * 64], B[128 * 64], E[64 * 64], R[64];
	const void *ins[2] = {A, B};
	void *outs[2] = {E, R};
	nx_rt_opts o = {0};
	char path[] = "/tmp/nxcc-prof-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	o.profile_path = path;
	assert_int_equal(nx_rt_run(n, ins, outs, &o, NULL, &d), NX_OK);
	char *txt = tu_read(path, NULL);
	assert_non_null(strstr(txt, "\"traceEvents\""));
	assert_non_null(strstr(txt, "\"name\": \"matmul\""));
	assert_non_null(strstr(txt, "\"kernel\": \"dot.1\""));
	assert_non_null(strstr(txt, "\"args\": {\"name\": \"dma queue 1\"}"));
	assert_null(strstr(txt, "\"ts\": 0, \"s\": \"g\"")); /* no stray end event */
	free(txt);
	remove(path);
	nx_neff_free(n);
	free(bytes);
	free(s);
}

/* f32 -> bf16 and bf16 -> f32 conversions (DMA and tensor_copy), a mixed
 * tensor_tensor and a bf16 matmul: the host-speed path of sim_fast.c gives
 * the same bytes as the generic element encoder (NXCC_SIM_GENERIC's path),
 * for NaN payloads, signaling NaNs, infinities, subnormals and ties. */
static void run_conv(nx_neff *n, const void *const *ins, void *const *outs, bool generic, nx_rt_stats *st)
{
	nx_diag d = {0};
	nx_rt_opts o = {0};
	o.generic_only = generic;
	if (nx_rt_run(n, ins, outs, &o, st, &d) != NX_OK)
		fail_msg("%s", d.msg);
}

static void fast_path_identical(void **state)
{
	(void)state;
	enum { F = 64, B = 512 };
	int64_t i0 = 0, i1 = i0 + 128 * F * 4, o0 = i1 + 128 * B * 2, o1 = o0 + 128 * F * 2, o2 = o1 + 128 * F * 4,
	        o3 = o2 + 128 * B * 4, o4 = o3 + 128 * F * 2, end = o4 + 64 * B * 4;
	tp_streams *s = calloc(1, sizeof *s);
	tp_dma(s, tp_sb(NX_DT_F32, 128, 0, F), tp_hbm(NX_DT_F32, i0, 128, F, F), 0, 0);
	tp_dma(s, tp_sb(NX_DT_BF16, 128, 512, B), tp_hbm(NX_DT_BF16, i1, 128, B, B), 1, 0);
	tp_wait(s, NX_ENG_SP, 1, 2);
	tp_dma(s, tp_hbm(NX_DT_BF16, o0, 128, F, F), tp_sb(NX_DT_BF16, 128, 256, F), 2, -1);
	tp_dma(s, tp_hbm(NX_DT_F32, o1, 128, F, F), tp_sb(NX_DT_F32, 128, 0, F), 3, -1);
	tp_dma(s, tp_hbm(NX_DT_F32, o2, 128, B, B), tp_sb(NX_DT_F32, 128, 2048, B), 4, -1);
	tp_dma(s, tp_hbm(NX_DT_BF16, o3, 128, F, F), tp_sb(NX_DT_BF16, 128, 4096, F), 5, -1);
	tp_dma(s, tp_hbm(NX_DT_F32, o4, 64, B, B), tp_sb(NX_DT_F32, 64, 8192, B), 6, -1); /* the f32 DMA cast */

	tp_wait(s, NX_ENG_DVE, 0, 2);
	nx_insn *c = tp_add(s, NX_ENG_DVE, NX_I_TENSOR_COPY);
	c->ap[0] = tp_sb(NX_DT_BF16, 128, 256, F);
	c->ap[1] = tp_sb(NX_DT_F32, 128, 0, F);
	c = tp_add(s, NX_ENG_DVE, NX_I_TENSOR_COPY);
	c->ap[0] = tp_sb(NX_DT_F32, 128, 2048, B);
	c->ap[1] = tp_sb(NX_DT_BF16, 128, 512, B);
	nx_insn *t = tp_add(s, NX_ENG_DVE, NX_I_TENSOR_TENSOR); /* bf16 = f32 * bf16 */
	t->func = NX_ALU_MUL;
	t->ap[0] = tp_sb(NX_DT_BF16, 128, 4096, F);
	t->ap[1] = tp_sb(NX_DT_F32, 128, 0, F);
	t->ap[2] = tp_sb(NX_DT_BF16, 128, 512, F);
	tp_signal(s, NX_ENG_DVE, 1, 1);

	tp_wait(s, NX_ENG_PE, 0, 2); /* [64,B] = in0[:, :64]^T . in1 (bf16 x bf16) */
	nx_insn *mm = tp_add(s, NX_ENG_PE, NX_I_MATMUL);
	mm->flags = NX_IF_START;
	mm->ap[0] = tp_ps(64, 0, B);
	mm->ap[1] = tp_sb(NX_DT_BF16, 128, 256, 64);
	mm->ap[2] = tp_sb(NX_DT_BF16, 128, 512, B);
	tp_wait(s, NX_ENG_PE, 1, 1); /* after the copy wrote the bf16 tile */
	nx_insn *m2 = tp_add(s, NX_ENG_PE, NX_I_MATMUL);
	*m2 = *mm;
	m2->flags = 0; /* accumulate a second time */
	tp_signal(s, NX_ENG_PE, 2, 1);
	tp_wait(s, NX_ENG_ACT, 2, 1);
	nx_insn *ac = tp_add(s, NX_ENG_ACT, NX_I_ACTIVATE);
	ac->func = NX_ACT_EXP;
	ac->fimm[0] = 0.25f;
	ac->ap[0] = tp_sb(NX_DT_F32, 64, 8192, B);
	ac->ap[1] = tp_ps(64, 0, B);
	tp_signal(s, NX_ENG_ACT, 1, 1);

	nx_neff_tensor in[2] = {tp_tensor("a", NX_DT_F32, 128, F, i0), tp_tensor("b", NX_DT_BF16, 128, B, i1)};
	nx_neff_tensor out[5] = {tp_tensor("c", NX_DT_BF16, 128, F, o0), tp_tensor("d", NX_DT_F32, 128, F, o1),
	                         tp_tensor("e", NX_DT_F32, 128, B, o2), tp_tensor("f", NX_DT_BF16, 128, F, o3),
	                         tp_tensor("g", NX_DT_F32, 64, B, o4)};
	size_t len;
	uint8_t *bytes = tp_neff(s, in, 2, out, 5, end, 3, &len);
	assert_non_null(bytes);
	nx_diag d = {0};
	nx_neff *n = nx_rt_load_bytes(bytes, len, "conv.neff", NULL, &d);
	if (!n)
		fail_msg("%s", d.msg);

	uint32_t *a = malloc(128 * F * 4);
	uint16_t *b = malloc(128 * B * 2);
	static const uint32_t special[] = {
		0x7fc00001, 0xffa00000, 0x7f800001 /* sNaN */, 0xff800000, 0x7f800000, 0x80000000, 0x00000000,
		0x00000001, 0x807fffff, 0x00008000, 0x00018000 /* subnormal ties */, 0x3f808000, 0x3f818000 /* ties */,
		0x7f7fffff /* rounds to inf */, 0x7f7f7fff, 0xff7f8000, 0x3f80ffff, 0x0080ffff};
	uint64_t r = 88172645463325252ULL;
	for (int i = 0; i < 128 * F; i++) {
		r ^= r << 13, r ^= r >> 7, r ^= r << 17;
		a[i] = i < (int)(sizeof special / 4) ? special[i] : (uint32_t)r;
		if (i % 3 == 0 && i >= (int)(sizeof special / 4)) /* ordinary magnitudes too */
			a[i] = (a[i] & 0x807fffff) | (uint32_t)(120 + i % 16) << 23;
	}
	for (int i = 0; i < 128 * B; i++)
		b[i] = (uint16_t)i; /* every bf16 pattern */
	const void *ins[2] = {a, b};
	uint8_t *res[2][5];
	for (int g = 0; g < 2; g++) {
		for (int k = 0; k < 5; k++)
			res[g][k] = calloc(1, (size_t)n->outputs[k].bytes);
		nx_rt_stats st;
		run_conv(n, ins, (void *const *)res[g], g == 1, &st);
	}
	for (int k = 0; k < 5; k++) {
		if (memcmp(res[0][k], res[1][k], (size_t)n->outputs[k].bytes))
			print_message("output %d differs\n", k);
		assert_memory_equal(res[0][k], res[1][k], (size_t)n->outputs[k].bytes);
	}
	for (int i = 0; i < 128 * F; i++) { /* and both equal the element encoder */
		uint8_t want[2];
		float f;
		memcpy(&f, &a[i], 4);
		nx_rt_store_elem(want, NX_DT_BF16, (double)f, -1);
		assert_memory_equal(res[0][0] + 2 * i, want, 2);
	}
	for (int g = 0; g < 2; g++)
		for (int k = 0; k < 5; k++)
			free(res[g][k]);
	free(a), free(b);
	nx_neff_free(n);
	free(bytes);
	free(s);
}

/* --timing-only: no memories, the same time and statistics as a full run. */
static void timing_only_same(void **state)
{
	(void)state;
	size_t len;
	tp_streams *s = malloc(sizeof *s);
	int64_t offs[4];
	uint8_t *bytes = build(8, &len, s, offs);
	nx_diag d = {0};
	nx_neff *n = nx_rt_load_bytes(bytes, len, "p.neff", NULL, &d);
	assert_non_null(n);
	static float A[128 * 64], B[128 * 128], E[64 * 128], R[64];
	const void *ins[2] = {A, B};
	void *outs[2] = {E, R};
	nx_rt_stats full, fast;
	nx_rt_opts o = {0};
	assert_int_equal(nx_rt_run(n, ins, outs, &o, &full, &d), NX_OK);
	o.timing_only = true;
	assert_int_equal(nx_rt_run(n, NULL, NULL, &o, &fast, &d), NX_OK);
	assert_memory_equal(&full, &fast, sizeof full);
	assert_true(full.dma_count == 1 + 8 + 2 && full.pe_flops == 2.0 * 128 * 64 * 128);
	assert_true(full.hbm_read_bytes == (128 * 64 + 128 * 128) * 4 && full.hbm_write_bytes == (64 * 128 + 64) * 4);
	nx_neff_free(n);
	free(bytes);
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(matmul_exp_reduce), cmocka_unit_test(overlap_and_serialize), cmocka_unit_test(shared_sbuf_port),
		cmocka_unit_test(dma_queues),        cmocka_unit_test(deadlock_reported),
		cmocka_unit_test(rounding),          cmocka_unit_test(profile_written),
		cmocka_unit_test(fast_path_identical), cmocka_unit_test(timing_only_same),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
