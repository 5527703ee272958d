/* tests/unit/test_neff.c — the .neff container: determinism, tar listing,
 * and the loader's refusal of corrupted files, each with its message. */
#include "testutil.h"
#include "neff_prog.h"

#include <unistd.h>

static uint8_t *good(size_t *len)
{
	tp_streams *s = calloc(1, sizeof *s);
	tp_dma(s, tp_sb(NX_DT_F32, 128, 0, 64), tp_hbm(NX_DT_F32, 0, 128, 64, 64), 0, 0);
	tp_wait(s, NX_ENG_PE, 0, 1);
	nx_insn *mm = tp_add(s, NX_ENG_PE, NX_I_MATMUL);
	mm->flags = NX_IF_START;
	mm->ap[0] = tp_ps(64, 0, 64);
	mm->ap[1] = tp_sb(NX_DT_F32, 128, 0, 64);
	mm->ap[2] = tp_sb(NX_DT_F32, 128, 0, 64);
	tp_add(s, NX_ENG_ACT, NX_I_NOP);
	nx_neff_tensor in = tp_tensor("x", NX_DT_F32, 128, 64, 0);
	uint8_t *b = tp_neff(s, &in, 1, NULL, 0, 128 * 64 * 4, 2, len);
	free(s);
	return b;
}

static void resign(uint8_t *b, size_t len)
{
	nx_sha256(b + NX_NEFF_HEADER_SIZE, len - NX_NEFF_HEADER_SIZE, b + NX_NEFF_OFF_SHA256);
	nx_neff_seal_header(b);
}

/* Offset of a tar entry's header inside the file. */
static size_t entry(const uint8_t *b, size_t len, const char *name)
{
	size_t off = NX_NEFF_HEADER_SIZE;
	while (off + 512 <= len && b[off]) {
		if (strcmp((const char *)b + off, name) == 0)
			return off;
		unsigned long long sz = strtoull((const char *)b + off + 124, NULL, 8);
		off += 512 + (sz + 511) / 512 * 512;
	}
	fail_msg("no entry %s", name);
	return 0;
}

static void fix_tar_sum(uint8_t *h)
{
	memset(h + 148, ' ', 8);
	unsigned sum = 0;
	for (int i = 0; i < 512; i++)
		sum += h[i];
	snprintf((char *)h + 148, 8, "%06o", sum);
	h[155] = ' ';
}

static void expect_error(const uint8_t *b, size_t len, const char *msg)
{
	nx_diag d = {0};
	nx_neff *n = nx_rt_load_bytes(b, len, "x.neff", NULL, &d);
	if (n)
		fail_msg("loaded, expected: %s", msg);
	char *s = nx_diag_format(&d);
	if (!strstr(s, msg))
		fail_msg("got '%s', expected '%s'", s, msg);
	free(s);
	nx_diag_clear(&d);
}

static void deterministic_and_tar(void **state)
{
	(void)state;
	size_t l1, l2;
	uint8_t *a = good(&l1), *b = good(&l2);
	assert_int_equal(l1, l2);
	assert_memory_equal(a, b, l1);
	assert_memory_equal(a, NX_NEFF_MAGIC, 8);
	assert_string_equal((char *)a + NX_NEFF_OFF_TARGET, "trn1");
	assert_memory_equal(a + NX_NEFF_OFF_UUID, a + NX_NEFF_OFF_SHA256, 6);
	char path[] = "/tmp/nxcc-neff-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0 && write(fd, a, l1) == (ssize_t)l1);
	close(fd);
	char cmd[256];
	snprintf(cmd, sizeof cmd, "tail -c +1025 %s | tar -tf - 2>&1", path);
	FILE *p = popen(cmd, "r");
	char out[1024] = {0};
	size_t got = fread(out, 1, sizeof out - 1, p);
	out[got] = 0;
	assert_int_equal(pclose(p), 0);
	assert_string_equal(out, "sg00/act.bin\nsg00/debug.json\nsg00/def.json\nsg00/dve.bin\n"
	                         "sg00/pe.bin\nsg00/pool.bin\nsg00/sp.bin\n");
	nx_diag d = {0};
	nx_neff *n = nx_rt_load(path, NULL, &d);
	assert_non_null(n);
	assert_int_equal(n->nstream[NX_ENG_PE], 2);
	assert_int_equal(n->ninputs, 1);
	assert_string_equal(n->inputs[0].name, "x");
	assert_int_equal(n->nsections, 7);
	nx_neff_free(n);
	remove(path);
	free(a);
	free(b);
}

static void corrupted(void **state)
{
	(void)state;
	size_t len;
	uint8_t *g = good(&len), *b = malloc(len);
#define FRESH() memcpy(b, g, len)
	/* 1 flipped payload byte */
	FRESH();
	b[len - 2000] ^= 1;
	expect_error(b, len, "x.neff: error: payload sha256 mismatch (file corrupted?)");
	/* 2 truncated header */
	expect_error(g, 500, "truncated header (500 bytes");
	/* 3 truncated payload */
	expect_error(g, len - 1536, "payload size field says");
	/* 4 wrong magic */
	FRESH();
	b[0] = 'X';
	expect_error(b, len, "not a .neff file (bad magic)");
	/* 5 wrong version */
	FRESH();
	b[NX_NEFF_OFF_VERSION] = 7;
	expect_error(b, len, "unsupported .neff format version 7");
	/* 6 bad tar checksum */
	FRESH();
	b[entry(b, len, "sg00/dve.bin") + 5] = 'X';
	resign(b, len);
	expect_error(b, len, "checksum mismatch");
	/* 7 size field lying (tar entry larger than the payload) */
	FRESH();
	size_t e = entry(b, len, "sg00/sp.bin");
	snprintf((char *)b + e + 124, 12, "%011o", 077777777);
	fix_tar_sum(b + e);
	resign(b, len);
	expect_error(b, len, "size field exceeds the payload");
	/* 8 payload size field in the header lying */
	FRESH();
	b[NX_NEFF_OFF_PAYLOAD_SIZE] ^= 0x10;
	expect_error(b, len, "payload size field says");
	/* 9 unknown opcode */
	FRESH();
	e = entry(b, len, "sg00/pe.bin");
	b[e + 512 + NX_ISA_STREAM_HEADER + NX_ISA_RECORD] = 99;
	resign(b, len);
	expect_error(b, len, "sg00/pe.bin: instruction 1: unknown opcode 99");
	/* 10 section missing */
	FRESH();
	e = entry(b, len, "sg00/act.bin");
	memcpy(b + e, "sg00/axx.bin", 12);
	fix_tar_sum(b + e);
	resign(b, len);
	expect_error(b, len, "section sg00/act.bin missing");
	/* 11 unknown target */
	FRESH();
	memcpy(b + NX_NEFF_OFF_TARGET, "trn9", 4);
	expect_error(b, len, "header sha256 mismatch");
	nx_neff_seal_header(b);
	expect_error(b, len, "unknown target 'trn9'");
	/* 11b issue 15: flips in the module name, uuid, core count or a
	 * reserved byte loaded and ran; the header hash covers them */
	static const int flips[] = {NX_NEFF_OFF_MODULE, NX_NEFF_OFF_UUID + 3, NX_NEFF_OFF_NCORES,
	                            NX_NEFF_OFF_COMPILER + 2, NX_NEFF_OFF_HEADER_SHA256 + 7};
	for (size_t k = 0; k < sizeof flips / sizeof flips[0]; k++) {
		FRESH();
		b[flips[k]] ^= 0x02;
		expect_error(b, len, "header sha256 mismatch");
	}
	FRESH();
	b[700] = 1;
	expect_error(b, len, "reserved header byte 700 is not zero");
	/* 12 def.json not JSON */
	FRESH();
	e = entry(b, len, "sg00/def.json");
	b[e + 512] = '[';
	resign(b, len);
	expect_error(b, len, "sg00/def.json:");
#undef FRESH
	free(b);
	free(g);
}

static uint8_t *one(nx_insn in, int nsems, int64_t hbm, size_t *len)
{
	tp_streams *s = calloc(1, sizeof *s);
	s->v[in.engine][s->n[in.engine]++] = in;
	uint8_t *b = tp_neff(s, NULL, 0, NULL, 0, hbm, nsems, len);
	free(s);
	return b;
}

static void bad_programs(void **state)
{
	(void)state;
	size_t len;
	uint8_t *b;
	/* out-of-range partitions */
	nx_insn in = nx_insn_new(NX_I_TENSOR_COPY, NX_ENG_DVE);
	in.ap[0] = tp_sb(NX_DT_F32, 128, 0, 8);
	in.ap[1] = tp_sb(NX_DT_F32, 128, 0, 8);
	in.ap[1].part_start = 2;
	b = one(in, 0, 0, &len);
	expect_error(b, len, "sg00/dve.bin: instruction 0: sbuf access [partition 2..130) exceeds 128 partitions");
	free(b);
	/* bytes beyond the partition */
	in.ap[1].part_start = 0;
	in.ap[1].offset = 192 * 1024 - 16;
	b = one(in, 0, 0, &len);
	expect_error(b, len, "sbuf access [byte 196592..196624) exceeds 196608 bytes per partition");
	free(b);
	/* HBM beyond the program's buffer */
	nx_insn dma = nx_insn_new(NX_I_DMA, NX_ENG_SP);
	dma.ap[0] = tp_sb(NX_DT_F32, 128, 0, 64);
	dma.ap[1] = tp_hbm(NX_DT_F32, 4, 128, 64, 64);
	b = one(dma, 0, 128 * 64 * 4, &len);
	expect_error(b, len, "hbm access [4, 32772) outside the program's 32768 HBM bytes");
	free(b);
	/* semaphore index */
	nx_insn w = nx_insn_new(NX_I_WAIT, NX_ENG_ACT);
	w.iarg[0] = 5;
	w.iarg[1] = 1;
	b = one(w, 2, 0, &len);
	expect_error(b, len, "sg00/act.bin: instruction 0: semaphore 5 out of range (2 semaphores)");
	free(b);
	/* loops: unbalanced and loop strides beyond the nesting */
	nx_insn l = nx_insn_new(NX_I_LOOP, NX_ENG_POOL);
	l.iarg[0] = 3;
	b = one(l, 0, 0, &len);
	expect_error(b, len, "sg00/pool.bin: loop at instruction 0 is never closed");
	free(b);
	in.ap[1].offset = 0;
	in.ap[0].loop_stride[0] = 4;
	b = one(in, 0, 0, &len);
	expect_error(b, len, "uses loop level 0 outside 0 enclosing loops");
	free(b);
	/* loop strides checked against trip counts */
	tp_streams *s = calloc(1, sizeof *s);
	*tp_add(s, NX_ENG_DVE, NX_I_LOOP) = l;
	s->v[NX_ENG_DVE][0].engine = NX_ENG_DVE;
	s->v[NX_ENG_DVE][1] = in;
	s->v[NX_ENG_DVE][1].ap[0].loop_stride[0] = 96 * 1024;
	s->n[NX_ENG_DVE] = 2;
	tp_add(s, NX_ENG_DVE, NX_I_ENDLOOP);
	b = tp_neff(s, NULL, 0, NULL, 0, 0, 0, &len);
	expect_error(b, len, "sg00/dve.bin: instruction 1: sbuf access [byte 0..196640)");
	free(b);
	free(s);
	/* matmul limits */
	nx_insn mm = nx_insn_new(NX_I_MATMUL, NX_ENG_PE);
	mm.ap[0] = tp_ps(64, 0, 1024);
	mm.ap[1] = tp_sb(NX_DT_BF16, 128, 0, 64);
	mm.ap[2] = tp_sb(NX_DT_BF16, 128, 0, 1024);
	b = one(mm, 0, 0, &len);
	expect_error(b, len, "matmul N 1024 must be <= 512");
	free(b);
	/* compute engine touching HBM */
	in.ap[0] = tp_hbm(NX_DT_F32, 0, 1, 8, 0);
	in.ap[0].loop_stride[0] = 0;
	b = one(in, 0, 64, &len);
	expect_error(b, len, "compute engines cannot access HBM");
	free(b);
}

/* Issue 15: a DMA in three loops of 2^24 with a 2^40-byte loop stride: its
 * span (2^40 * (2^24 - 1) per level) overflowed int64 in the loader's check
 * (UBSan) before the simulator's per-access check caught it. */
static void loop_span_overflow(void **state)
{
	(void)state;
	tp_streams *s = calloc(1, sizeof *s);
	for (int k = 0; k < 3; k++)
		tp_add(s, NX_ENG_SP, NX_I_LOOP)->iarg[0] = 1 << 24;
	nx_insn *dma = tp_add(s, NX_ENG_SP, NX_I_DMA);
	dma->ap[0] = tp_sb(NX_DT_F32, 1, 0, 1);
	dma->ap[1] = tp_hbm(NX_DT_F32, 0, 1, 1, 0);
	for (int k = 0; k < 3; k++)
		dma->ap[1].loop_stride[k] = 1LL << 40;
	for (int k = 0; k < 3; k++)
		tp_add(s, NX_ENG_SP, NX_I_ENDLOOP);
	size_t len;
	uint8_t *b = tp_neff(s, NULL, 0, NULL, 0, 64, 1, &len);
	expect_error(b, len, "sg00/sp.bin: instruction 3: operand 1: access span overflows 64 bits");
	free(b);
	free(s);
}

/* Issue 15: 2^48 loop iterations ran ~10 minutes before the budget stopped
 * them; the loop counts alone exceed any budget, so the run is refused at
 * once (nxcc run --max-steps sets the budget). */
static void loop_trips_over_budget(void **state)
{
	(void)state;
	tp_streams *s = calloc(1, sizeof *s);
	for (int k = 0; k < 3; k++)
		tp_add(s, NX_ENG_DVE, NX_I_LOOP)->iarg[0] = 1 << 16;
	nx_insn *cp = tp_add(s, NX_ENG_DVE, NX_I_TENSOR_COPY);
	cp->ap[0] = tp_sb(NX_DT_F32, 1, 0, 1);
	cp->ap[1] = tp_sb(NX_DT_F32, 1, 64, 1);
	for (int k = 0; k < 3; k++)
		tp_add(s, NX_ENG_DVE, NX_I_ENDLOOP);
	size_t len;
	uint8_t *b = tp_neff(s, NULL, 0, NULL, 0, 64, 1, &len);
	nx_diag d = {0};
	nx_neff *n = nx_rt_load_bytes(b, len, "x.neff", NULL, &d);
	assert_non_null(n);
	assert_true(n->min_steps == 1ULL << 48);
	nx_rt_opts o = nx_rt_opts_default();
	nx_rt_stats st;
	assert_int_equal(nx_rt_run(n, NULL, NULL, &o, &st, &d), NX_ERR_INPUT);
	char *msg = nx_diag_format(&d);
	if (!strstr(msg, "executes at least 281474976710656 instructions"))
		fail_msg("got '%s'", msg);
	free(msg);
	nx_diag_clear(&d);
	nx_neff_free(n);
	free(b);
	free(s);
}

/* Control loops (a device while, backend/lower_while.c): LOOP iarg2 = 1 /
 * ENDLOOP iarg0 = 1 repeat the code but take no access-pattern level; WAIT
 * iarg3 adds a second register. DVE signals s0 once per iteration of a
 * 3-trip control loop around a data loop whose copy uses loop level 0;
 * POOL waits for s0 >= 1 + r15 in its own 3-trip control loop, advancing
 * r15 by 1: it runs only as DVE progresses. Then the loader's refusals. */
static void control_loops(void **state)
{
	(void)state;
	tp_streams *s = calloc(1, sizeof *s);
	nx_insn *l = tp_add(s, NX_ENG_DVE, NX_I_LOOP);
	l->iarg[0] = 3;
	l->iarg[2] = 1;
	tp_add(s, NX_ENG_DVE, NX_I_LOOP)->iarg[0] = 2;
	nx_insn *cp = tp_add(s, NX_ENG_DVE, NX_I_TENSOR_COPY);
	cp->ap[0] = tp_sb(NX_DT_F32, 1, 0, 1);
	cp->ap[0].loop_stride[0] = 4;
	cp->ap[1] = tp_sb(NX_DT_F32, 1, 64, 1);
	tp_add(s, NX_ENG_DVE, NX_I_ENDLOOP);
	tp_signal(s, NX_ENG_DVE, 0, 1);
	tp_add(s, NX_ENG_DVE, NX_I_ENDLOOP)->iarg[0] = 1;
	nx_insn *sr = tp_add(s, NX_ENG_POOL, NX_I_SETREG);
	sr->iarg[0] = 15;
	l = tp_add(s, NX_ENG_POOL, NX_I_LOOP);
	l->iarg[0] = 3;
	l->iarg[2] = 1;
	nx_insn *w = tp_add(s, NX_ENG_POOL, NX_I_WAIT);
	w->iarg[1] = 1;
	w->iarg[3] = 16;
	nx_insn *ar = tp_add(s, NX_ENG_POOL, NX_I_ADDREG);
	ar->iarg[0] = 15;
	ar->iarg[1] = 1;
	tp_add(s, NX_ENG_POOL, NX_I_ENDLOOP)->iarg[0] = 1;
	size_t len;
	uint8_t *b = tp_neff(s, NULL, 0, NULL, 0, 64, 1, &len);
	nx_diag d = {0};
	nx_neff *n = nx_rt_load_bytes(b, len, "x.neff", NULL, &d);
	assert_non_null(n);
	nx_rt_opts o = nx_rt_opts_default();
	nx_rt_stats st;
	assert_int_equal(nx_rt_run(n, NULL, NULL, &o, &st, &d), NX_OK);
	/* DVE: the control loop, then 3 x (loop, 2 x (copy, endloop), signal,
	 * endloop) */
	assert_int_equal(st.insns[NX_ENG_DVE], 1 + 3 * (1 + 2 * 2 + 1 + 1));
	/* POOL: setreg, then 3 x (wait, addreg, endloop) plus the loop itself */
	assert_int_equal(st.insns[NX_ENG_POOL], 1 + 3 * 3 + 1);
	nx_neff_free(n);
	free(b);
	/* a wait for one more than DVE ever signals deadlocks, not hangs */
	w->iarg[1] = 2;
	b = tp_neff(s, NULL, 0, NULL, 0, 64, 1, &len);
	n = nx_rt_load_bytes(b, len, "x.neff", NULL, &d);
	assert_non_null(n);
	assert_int_equal(nx_rt_run(n, NULL, NULL, &o, &st, &d), NX_ERR_INPUT);
	char *msg = nx_diag_format(&d);
	if (!strstr(msg, "deadlock"))
		fail_msg("got '%s'", msg);
	free(msg);
	nx_diag_clear(&d);
	nx_neff_free(n);
	free(b);
	free(s);
	/* the loader: a control loop inside a data loop, kinds that do not
	 * match, a bad kind, a loop level the data loops do not have */
	s = calloc(1, sizeof *s);
	tp_add(s, NX_ENG_SP, NX_I_LOOP)->iarg[0] = 2;
	l = tp_add(s, NX_ENG_SP, NX_I_LOOP);
	l->iarg[0] = 2;
	l->iarg[2] = 1;
	tp_add(s, NX_ENG_SP, NX_I_ENDLOOP)->iarg[0] = 1;
	tp_add(s, NX_ENG_SP, NX_I_ENDLOOP);
	b = tp_neff(s, NULL, 0, NULL, 0, 64, 1, &len);
	expect_error(b, len, "sg00/sp.bin: instruction 1: control loop inside a data loop");
	free(b);
	s->v[NX_ENG_SP][1].op = NX_I_NOP;
	s->v[NX_ENG_SP][2].iarg[0] = 0;
	s->v[NX_ENG_SP][3].iarg[0] = 1; /* a data loop closed as a control loop */
	b = tp_neff(s, NULL, 0, NULL, 0, 64, 1, &len);
	expect_error(b, len, "sg00/sp.bin: instruction 3: endloop without loop");
	free(b);
	s->v[NX_ENG_SP][0].iarg[2] = 2;
	b = tp_neff(s, NULL, 0, NULL, 0, 64, 1, &len);
	expect_error(b, len, "sg00/sp.bin: instruction 0: bad loop kind");
	free(b);
	free(s);
	s = calloc(1, sizeof *s);
	l = tp_add(s, NX_ENG_DVE, NX_I_LOOP);
	l->iarg[0] = 2;
	l->iarg[2] = 1;
	cp = tp_add(s, NX_ENG_DVE, NX_I_TENSOR_COPY);
	cp->ap[0] = tp_sb(NX_DT_F32, 1, 0, 1);
	cp->ap[0].loop_stride[0] = 4;
	cp->ap[1] = tp_sb(NX_DT_F32, 1, 64, 1);
	tp_add(s, NX_ENG_DVE, NX_I_ENDLOOP)->iarg[0] = 1;
	b = tp_neff(s, NULL, 0, NULL, 0, 64, 1, &len);
	expect_error(b, len, "uses loop level 0 outside 0 enclosing loops");
	free(b);
	/* brz outside a control loop; ldreg of more than one element */
	s->v[NX_ENG_DVE][1] = nx_insn_new(NX_I_BRZ, NX_ENG_DVE);
	s->v[NX_ENG_DVE][0].op = NX_I_NOP;
	s->v[NX_ENG_DVE][2].op = NX_I_NOP;
	b = tp_neff(s, NULL, 0, NULL, 0, 64, 1, &len);
	expect_error(b, len, "sg00/dve.bin: instruction 1: brz outside a control loop or inside a data loop");
	free(b);
	s->v[NX_ENG_DVE][1] = nx_insn_new(NX_I_LDREG, NX_ENG_DVE);
	s->v[NX_ENG_DVE][1].ap[0] = tp_hbm(NX_DT_F32, 0, 1, 2, 0);
	b = tp_neff(s, NULL, 0, NULL, 0, 64, 1, &len);
	expect_error(b, len, "sg00/dve.bin: instruction 1 (ldreg): the operand must be one HBM element");
	free(b);
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(loop_span_overflow),
		cmocka_unit_test(loop_trips_over_budget),
		cmocka_unit_test(control_loops),
		cmocka_unit_test(deterministic_and_tar),
		cmocka_unit_test(corrupted),
		cmocka_unit_test(bad_programs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
