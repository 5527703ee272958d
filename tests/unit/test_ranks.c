/* tests/unit/test_ranks.c — the multi-rank simulator: a hand-assembled
 * 4-rank program with all_reduce, all_gather, reduce_scatter and
 * collective_permute against a C computation; a rank that halts while the
 * others wait is a deadlock error; a bad replica-group table is rejected. */
#include "testutil.h"

#include "neff_prog.h"

#define R 4

static nx_ap flat(nx_dtype t, int64_t off, uint32_t n)
{
	return tp_hbm(t, off, 1, n, n);
}

static void cc(tp_streams *s, nx_isa_op op, int func, int table, nx_ap dst, nx_ap src, int q)
{
	nx_insn *in = tp_add(s, NX_ENG_SP, op);
	in->ap[0] = dst;
	in->ap[1] = src;
	in->func = (uint8_t)func;
	in->iarg[0] = q;
	in->iarg[1] = q;
	in->iarg[2] = table;
}

static const int lens4[1] = {4};
static const int32_t ids4[4] = {0, 1, 2, 3};
static const int32_t ring[8] = {0, 1, 1, 2, 2, 3, 3, 0};
static const int lens22[2] = {2, 2};
static const int32_t ids22[4] = {3, 1, 0, 2};

/* Program: in f32[4] @0; ar @64 (4), ag @128 (16), rs @256 (1), perm @320 (4),
 * ar2 @384 (4) = all-reduce max over groups {3,1},{0,2}. */
static nx_neff *build(bool with_cc, const nx_neff_rgroup *tab, int ntab)
{
	tp_streams s;
	memset(&s, 0, sizeof s);
	if (with_cc) {
		cc(&s, NX_I_ALL_REDUCE, NX_ALU_ADD, 0, flat(NX_DT_F32, 64, 4), flat(NX_DT_F32, 0, 4), 0);
		cc(&s, NX_I_ALL_GATHER, 0, 0, flat(NX_DT_F32, 128, 16), flat(NX_DT_F32, 0, 4), 1);
		cc(&s, NX_I_REDUCE_SCATTER, NX_ALU_ADD, 0, flat(NX_DT_F32, 256, 1), flat(NX_DT_F32, 0, 4), 2);
		cc(&s, NX_I_COLLECTIVE_PERMUTE, 0, 1, flat(NX_DT_F32, 320, 4), flat(NX_DT_F32, 0, 4), 3);
		cc(&s, NX_I_ALL_REDUCE, NX_ALU_MAX, 2, flat(NX_DT_F32, 384, 4), flat(NX_DT_F32, 0, 4), 4);
		for (int q = 0; q < 5; q++)
			tp_wait(&s, NX_ENG_SP, q, 1);
	}
	for (int e = 0; e < NX_ENG_COUNT; e++)
		tp_add(&s, (nx_engine)e, NX_I_HALT);
	nx_neff_tensor in = tp_tensor("x", NX_DT_F32, 1, 4, 0);
	nx_neff_tensor out[5] = {tp_tensor("ar", NX_DT_F32, 1, 4, 64), tp_tensor("ag", NX_DT_F32, 4, 4, 128),
	                         tp_tensor("rs", NX_DT_F32, 1, 1, 256), tp_tensor("perm", NX_DT_F32, 1, 4, 320),
	                         tp_tensor("ar2", NX_DT_F32, 1, 4, 384)};
	nx_neff_program p;
	memset(&p, 0, sizeof p);
	p.module_name = "ranks";
	p.target = "trn1";
	p.n_cores = R;
	p.nreplicas = R;
	p.rgroups = tab;
	p.nrgroups = ntab;
	p.features = NX_NEFF_FEAT_COLLECTIVES;
	p.inputs = &in;
	p.ninputs = 1;
	p.outputs = out;
	p.noutputs = 5;
	p.hbm_size = 512;
	p.nsems = 8;
	for (int e = 0; e < NX_ENG_COUNT; e++) {
		p.streams[e] = s.v[e];
		p.nstream[e] = s.n[e];
	}
	uint8_t *b;
	size_t len;
	nx_diag d = {0};
	assert_int_equal(nx_neff_write(&p, &b, &len, &d), NX_OK);
	nx_neff *n = nx_rt_load_bytes(b, len, "ranks.neff", NULL, &d);
	free(b);
	if (!n) {
		print_error("load: %s\n", d.msg);
		nx_diag_clear(&d);
	}
	return n;
}

static const nx_neff_rgroup table[3] = {{false, 1, lens4, ids4}, {true, 4, NULL, ring}, {false, 2, lens22, ids22}};

static float xin[R][4], outb[R][5][16];
static const void *inp[R][1];
static void *outp[R][5];

static void setup_io(void)
{
	for (int r = 0; r < R; r++) {
		for (int e = 0; e < 4; e++)
			xin[r][e] = (float)(r * 10 + e) + 0.25f;
		inp[r][0] = xin[r];
		for (int k = 0; k < 5; k++)
			outp[r][k] = outb[r][k];
	}
	memset(outb, 0, sizeof outb);
}

static void four_ranks(void **state)
{
	(void)state;
	nx_neff *n = build(true, table, 3);
	assert_non_null(n);
	setup_io();
	const nx_neff *ns[R] = {n, n, n, n};
	const void *const *ins[R] = {inp[0], inp[1], inp[2], inp[3]};
	void *const *outs[R] = {outp[0], outp[1], outp[2], outp[3]};
	nx_rt_stats st[R];
	nx_diag d = {0};
	nx_status rc = nx_rt_run_ranks(R, ns, ins, outs, NULL, st, &d);
	if (rc != NX_OK)
		print_error("%s\n", d.msg);
	assert_int_equal(rc, NX_OK);
	for (int r = 0; r < R; r++) {
		for (int e = 0; e < 4; e++) {
			float sum = 0;
			for (int q = 0; q < R; q++)
				sum += xin[q][e];
			assert_true(outb[r][0][e] == sum);
			for (int q = 0; q < R; q++)
				assert_true(outb[r][1][q * 4 + e] == xin[q][e]);
			int from = (r + R - 1) % R; /* ring: r-1 -> r */
			assert_true(outb[r][3][e] == xin[from][e]);
			int partner = r == 3 ? 1 : r == 1 ? 3 : r == 0 ? 2 : 0;
			float mx = xin[r][e] > xin[partner][e] ? xin[r][e] : xin[partner][e];
			assert_true(outb[r][4][e] == mx);
		}
		float rs = 0;
		for (int q = 0; q < R; q++)
			rs += xin[q][r];
		assert_true(outb[r][2][0] == rs);
		assert_int_equal(st[r].cc_count, 5);
		assert_true(st[r].cc_ns > 0);
		/* ranks meet: every rank ends at the same simulated time */
		assert_true(st[r].total_ns == st[0].total_ns);
	}
	nx_diag_clear(&d);
	nx_neff_free(n);
}

static void deadlock(void **state)
{
	(void)state;
	nx_neff *n = build(true, table, 3), *idle = build(false, table, 3);
	assert_non_null(n);
	assert_non_null(idle);
	setup_io();
	const nx_neff *ns[R] = {n, n, idle, n}; /* rank 2 halts at once */
	const void *const *ins[R] = {inp[0], inp[1], inp[2], inp[3]};
	void *const *outs[R] = {outp[0], outp[1], outp[2], outp[3]};
	nx_diag d = {0};
	assert_int_equal(nx_rt_run_ranks(R, ns, ins, outs, NULL, NULL, &d), NX_ERR_INPUT);
	assert_non_null(strstr(d.msg, "deadlock"));
	assert_non_null(strstr(d.msg, "rank 2"));
	nx_diag_clear(&d);
	/* the program's rank count is enforced */
	assert_int_equal(nx_rt_run_ranks(2, ns, ins, outs, NULL, NULL, &d), NX_ERR_INPUT);
	assert_non_null(strstr(d.msg, "compiled for 4 ranks"));
	nx_diag_clear(&d);
	nx_neff_free(n);
	nx_neff_free(idle);
}

static void bad_tables(void **state)
{
	(void)state;
	static const int32_t twice[4] = {0, 1, 1, 3};
	static const int32_t big[4] = {0, 1, 2, 7};
	static const int lens31[2] = {3, 1};
	nx_neff_rgroup t[3];
	memcpy(t, table, sizeof t);
	t[0].ids = twice;
	assert_null(build(true, t, 3)); /* replica named twice */
	memcpy(t, table, sizeof t);
	t[0].ids = big;
	assert_null(build(true, t, 3)); /* id >= replicas */
	memcpy(t, table, sizeof t);
	t[2].len = lens31;
	nx_neff *ok = build(true, t, 3); /* all_reduce over groups of 3 and 1: fine */
	assert_non_null(ok);
	nx_neff_free(ok);
	memcpy(t, table, sizeof t);
	t[0] = (nx_neff_rgroup){false, 2, lens31, ids4};
	assert_null(build(true, t, 3)); /* all_gather over groups of different sizes */
	assert_null(build(true, table, 1)); /* table index out of range */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(four_ranks),
		cmocka_unit_test(deadlock),
		cmocka_unit_test(bad_tables),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
