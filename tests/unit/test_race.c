/* tests/unit/test_race.c — the simulator's race check (nx_rt_opts
 * check_races, runtime-stub/sim_race.c) on hand-assembled loop kernels: a
 * DMA of iteration i+1 overwriting the SBUF tile that VectorE still reads in
 * iteration i is reported; the same loop synchronized per iteration is not. */
#include "testutil.h"
#include "neff_prog.h"

enum { SEM_LOADED, SEM_READ, NSEM };
enum { N = 6 };

/* SP loads row i of A[N,128x64] into one SBUF tile T per iteration; DVE
 * copies T into slot i of an output tile. sync: how the load of iteration i
 * waits for DVE's reads: 0 not at all, 1 for iteration i-1 (correct), 2 for
 * iteration i-2 only (an off-by-one). */
static nx_status run_loop(int sync, nx_diag *d)
{
	tp_streams *s = calloc(1, sizeof *s);
	nx_insn *in = tp_add(s, NX_ENG_SP, NX_I_SETREG);
	in->iarg[0] = 0, in->iarg[1] = 0;
	in = tp_add(s, NX_ENG_SP, NX_I_LOOP);
	in->iarg[0] = N;
	if (sync) { /* wait read >= i - (sync - 1) */
		in = tp_add(s, NX_ENG_SP, NX_I_WAIT);
		in->iarg[0] = SEM_READ, in->iarg[1] = 1 - sync, in->iarg[2] = 1;
	}
	nx_ap dst = tp_sb(NX_DT_F32, 128, 0, 64), src = tp_hbm(NX_DT_F32, 0, 128, 64, 64);
	src.loop_stride[0] = 128 * 64 * 4;
	tp_dma(s, dst, src, 0, SEM_LOADED);
	in = tp_add(s, NX_ENG_SP, NX_I_ADDREG);
	in->iarg[0] = 0, in->iarg[1] = 1;
	tp_add(s, NX_ENG_SP, NX_I_ENDLOOP);

	in = tp_add(s, NX_ENG_DVE, NX_I_SETREG);
	in->iarg[0] = 0, in->iarg[1] = 0;
	in = tp_add(s, NX_ENG_DVE, NX_I_LOOP);
	in->iarg[0] = N;
	in = tp_add(s, NX_ENG_DVE, NX_I_WAIT); /* loaded >= i + 1 */
	in->iarg[0] = SEM_LOADED, in->iarg[1] = 1, in->iarg[2] = 1;
	in = tp_add(s, NX_ENG_DVE, NX_I_TENSOR_COPY);
	in->ap[0] = tp_sb(NX_DT_F32, 128, 4096, 64);
	in->ap[0].loop_stride[0] = 64 * 4;
	in->ap[1] = tp_sb(NX_DT_F32, 128, 0, 64);
	tp_signal(s, NX_ENG_DVE, SEM_READ, 1);
	in = tp_add(s, NX_ENG_DVE, NX_I_ADDREG);
	in->iarg[0] = 0, in->iarg[1] = 1;
	tp_add(s, NX_ENG_DVE, NX_I_ENDLOOP);

	size_t len;
	uint8_t *bytes = tp_neff(s, NULL, 0, NULL, 0, (int64_t)N * 128 * 64 * 4, NSEM, &len);
	nx_neff *n = nx_rt_load_bytes(bytes, len, "loop.neff", NULL, d);
	assert_non_null(n);
	nx_rt_opts o = {0};
	o.timing_only = true;
	nx_rt_stats st;
	nx_status rc = nx_rt_run(n, NULL, NULL, &o, &st, d);
	assert_int_equal(rc, NX_OK); /* without the check, every variant runs */
	o.check_races = true;
	rc = nx_rt_run(n, NULL, NULL, &o, &st, d);
	nx_neff_free(n);
	free(bytes);
	free(s);
	return rc;
}

static void synchronized_loop(void **state)
{
	(void)state;
	nx_diag d = {0};
	if (run_loop(1, &d) != NX_OK)
		fail_msg("%s", d.msg);
}

static void unsynchronized_loop(void **state)
{
	(void)state;
	nx_diag d = {0};
	assert_int_equal(run_loop(0, &d), NX_ERR_INPUT);
	print_message("%s\n", d.msg);
	assert_non_null(strstr(d.msg, "race on sbuf partitions [0, 128)"));
	assert_non_null(strstr(d.msg, "write dma [0, 256) on dma queue 0: sg00/sp.bin"));
	assert_non_null(strstr(d.msg, "read tensor_copy [0, 256) on dve: sg00/dve.bin instruction 3 (loop iteration 0)"));
	nx_diag_clear(&d);
}

/* The load of iteration i waits for the read of iteration i-2 only: it
 * overwrites the tile while iteration i-1 may still read it. */
static void off_by_one_loop(void **state)
{
	(void)state;
	nx_diag d = {0};
	assert_int_equal(run_loop(2, &d), NX_ERR_INPUT);
	print_message("%s\n", d.msg);
	assert_non_null(strstr(d.msg, "race on sbuf"));
	assert_non_null(strstr(d.msg, "on dma queue 0: sg00/sp.bin instruction 3 (loop iteration"));
	assert_non_null(strstr(d.msg, "on dve: sg00/dve.bin instruction 3 (loop iteration"));
	nx_diag_clear(&d);
}

/* Two engines writing disjoint halves of one tile, and a strided pattern
 * interleaved with another: no common byte, no race. */
static void disjoint_bytes(void **state)
{
	(void)state;
	tp_streams *s = calloc(1, sizeof *s);
	nx_insn *a = tp_add(s, NX_ENG_DVE, NX_I_MEMSET);
	a->ap[0] = tp_sb(NX_DT_F32, 64, 0, 256);
	nx_insn *b = tp_add(s, NX_ENG_ACT, NX_I_MEMSET);
	b->ap[0] = tp_sb(NX_DT_F32, 64, 0, 256);
	b->ap[0].part_start = 64;
	nx_insn *c = tp_add(s, NX_ENG_POOL, NX_I_MEMSET); /* even elements of [2048, 3072) */
	c->ap[0] = tp_sb(NX_DT_F32, 128, 2048, 128);
	c->ap[0].stride[0] = 2;
	nx_insn *e = tp_add(s, NX_ENG_ACT, NX_I_MEMSET); /* odd ones */
	e->ap[0] = c->ap[0];
	e->ap[0].offset += 4;
	size_t len;
	uint8_t *bytes = tp_neff(s, NULL, 0, NULL, 0, 0, 1, &len);
	nx_diag d = {0};
	nx_neff *n = nx_rt_load_bytes(bytes, len, "t.neff", NULL, &d);
	assert_non_null(n);
	nx_rt_opts o = {0};
	o.check_races = true;
	if (nx_rt_run(n, NULL, NULL, &o, NULL, &d) != NX_OK)
		fail_msg("%s", d.msg);
	/* the odd elements shifted onto the even ones: a write-write race */
	nx_neff_free(n);
	free(bytes);
	s->v[NX_ENG_ACT][1].ap[0].offset -= 4;
	bytes = tp_neff(s, NULL, 0, NULL, 0, 0, 1, &len);
	n = nx_rt_load_bytes(bytes, len, "t.neff", NULL, &d);
	assert_non_null(n);
	assert_int_equal(nx_rt_run(n, NULL, NULL, &o, NULL, &d), NX_ERR_INPUT);
	print_message("%s\n", d.msg);
	assert_non_null(strstr(d.msg, "race on sbuf partitions [0, 128): write memset [2048, 3068) on pool"));
	nx_diag_clear(&d);
	nx_neff_free(n);
	free(bytes);
	free(s);
}

/* NX_CHECK_RACES_HBM=1: a store on queue 1 and a load of the same HBM bytes
 * on queue 2 with no wait between them race; loads of bytes nothing writes
 * (the input) are never recorded; waiting for the store fixes it. */
static nx_status hbm_pair(bool wait, nx_diag *d)
{
	tp_streams *s = calloc(1, sizeof *s);
	tp_dma(s, tp_sb(NX_DT_F32, 128, 0, 64), tp_hbm(NX_DT_F32, 0, 128, 64, 64), 0, 0);
	tp_wait(s, NX_ENG_SP, 0, 1);
	tp_dma(s, tp_hbm(NX_DT_F32, 32768, 128, 64, 64), tp_sb(NX_DT_F32, 128, 0, 64), 1, 1);
	if (wait)
		tp_wait(s, NX_ENG_SP, 1, 1);
	tp_dma(s, tp_sb(NX_DT_F32, 128, 1024, 64), tp_hbm(NX_DT_F32, 32768, 128, 64, 64), 2, -1);
	tp_dma(s, tp_sb(NX_DT_F32, 128, 2048, 64), tp_hbm(NX_DT_F32, 0, 128, 64, 64), 3, -1);
	size_t len;
	uint8_t *bytes = tp_neff(s, NULL, 0, NULL, 0, 65536, 2, &len);
	nx_neff *n = nx_rt_load_bytes(bytes, len, "h.neff", NULL, d);
	assert_non_null(n);
	nx_rt_opts o = {0};
	o.timing_only = true;
	o.check_races = true;
	setenv("NX_CHECK_RACES_HBM", "1", 1);
	nx_status rc = nx_rt_run(n, NULL, NULL, &o, NULL, d);
	unsetenv("NX_CHECK_RACES_HBM");
	nx_neff_free(n);
	free(bytes);
	free(s);
	return rc;
}

static void hbm_races(void **state)
{
	(void)state;
	nx_diag d = {0};
	assert_int_equal(hbm_pair(false, &d), NX_ERR_INPUT);
	print_message("%s\n", d.msg);
	assert_non_null(strstr(d.msg, "race on hbm: write dma [32768, 65536) on dma queue 1"));
	assert_non_null(strstr(d.msg, "read dma [32768, 65536) on dma queue 2"));
	nx_diag_clear(&d);
	if (hbm_pair(true, &d) != NX_OK)
		fail_msg("%s", d.msg);
}

/* Two queues store column blocks of one [128, 64] f32 HBM matrix with no
 * wait between them: disjoint blocks (rows interleave, bytes do not) are
 * not a race; blocks sharing a column are. */
static nx_status column_blocks(int second_col, nx_diag *d)
{
	tp_streams *s = calloc(1, sizeof *s);
	nx_ap a = tp_hbm(NX_DT_F32, 0, 128, 32, 64), b = tp_hbm(NX_DT_F32, (int64_t)second_col * 4, 128, 32, 64);
	tp_dma(s, a, tp_sb(NX_DT_F32, 128, 0, 32), 1, -1);
	tp_dma(s, b, tp_sb(NX_DT_F32, 128, 1024, 32), 2, -1);
	size_t len;
	uint8_t *bytes = tp_neff(s, NULL, 0, NULL, 0, 128 * 64 * 4, 1, &len);
	nx_neff *n = nx_rt_load_bytes(bytes, len, "c.neff", NULL, d);
	assert_non_null(n);
	nx_rt_opts o = {0};
	o.timing_only = true;
	o.check_races = true;
	setenv("NX_CHECK_RACES_HBM", "1", 1);
	nx_status rc = nx_rt_run(n, NULL, NULL, &o, NULL, d);
	unsetenv("NX_CHECK_RACES_HBM");
	nx_neff_free(n);
	free(bytes);
	free(s);
	return rc;
}

static void hbm_column_blocks(void **state)
{
	(void)state;
	nx_diag d = {0};
	if (column_blocks(32, &d) != NX_OK)
		fail_msg("%s", d.msg);
	assert_int_equal(column_blocks(31, &d), NX_ERR_INPUT);
	assert_non_null(strstr(d.msg, "race on hbm: write dma"));
	nx_diag_clear(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(synchronized_loop),
		cmocka_unit_test(unsynchronized_loop),
		cmocka_unit_test(off_by_one_loop),
		cmocka_unit_test(disjoint_bytes),
		cmocka_unit_test(hbm_races),
		cmocka_unit_test(hbm_column_blocks),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
