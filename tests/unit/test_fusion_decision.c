/* tests/unit/test_fusion_decision.c — nx_fusion_refusal: every refusal
 * reason for a representative producer/consumer pair, and allowed pairs
 * (NULL), at O1, O2 and O3. The pairs are instructions of one parsed
 * module, looked up by name. */
#include "testutil.h"

#include "passes/fusion.h"

static const char *hlo =
	"HloModule m\n"
	"add_f32 {\n"
	"  x = f32[] parameter(0)\n"
	"  y = f32[] parameter(1)\n"
	"  ROOT s = f32[] add(x, y)\n"
	"}\n"
	"ENTRY e {\n"
	"  p = f32[4,4] parameter(0)\n"
	"  q = f32[4,4] parameter(1)\n"
	"  i = s32[2] parameter(2)\n"
	"  n = s32[] parameter(3)\n"
	"  z = f32[] constant(0)\n"
	"  ex = f32[4,4] exponential(p)\n"
	"  ad = f32[4,4] add(ex, q)\n"
	"  mu = f32[4,4] multiply(ad, ad)\n"
	"  bc = f32[4,4] broadcast(z), dimensions={}\n"
	"  bm = f32[4,4] add(bc, mu)\n"
	"  tr = f32[4,4] transpose(bm), dimensions={1,0}\n"
	"  sl = f32[2,4] slice(tr), slice={[0:2], [0:4]}\n"
	"  ng = f32[2,4] negate(sl)\n"
	"  rd = f32[4] reduce(mu, z), dimensions={1}, to_apply=add_f32\n"
	"  rn = f32[4] negate(rd)\n"
	"  dt = f32[4,4] dot(tr, q), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
	"  dx = f32[4,4] dot(ex, q), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
	"  dr = f32[4,4] tanh(dt)\n"
	"  d2 = f32[4,4] dot(dt, q), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
	"  ds = f32[2,4] dynamic-slice(mu, n, n), dynamic_slice_sizes={2,4}\n"
	"  ar = f32[4,4] all-reduce(mu), replica_groups={}, to_apply=add_f32\n"
	"  an = f32[4,4] negate(ar)\n"
	"  cc = f32[4,4] custom-call(mu), custom_call_target=\"AwsNeuronGelu\"\n"
	"  cn = f32[4,4] negate(cc)\n"
	"  st = f32[4,4] sort(mu), dimensions={1}, to_apply=lt\n"
	"  sn = f32[4,4] negate(st)\n"
	"  gi = s32[2,1] reshape(i)\n"
	"  ga = f32[2,4] gather(mu, gi), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,4}\n"
	"  gn = f32[2,4] negate(ga)\n"
	"  ge = f32[2,4] gather(ex, gi), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,4}\n"
	"  du = f32[4,4] dynamic-update-slice(mu, sl, n, n)\n"
	"  sc = f32[4] scan(rd), dimensions={0}, to_apply=add_f32\n"
	"  sa = f32[4] negate(sc)\n"
	"  tu = (f32[4,4], f32[4]) tuple(mu, rd)\n"
	"  ROOT out = (f32[4,4], f32[2,4], f32[4], f32[4,4], f32[4,4]) tuple(bm, ng, rn, dr, an)\n"
	"}\n"
	"lt {\n"
	"  a = f32[] parameter(0)\n"
	"  b = f32[] parameter(1)\n"
	"  ROOT c = pred[] compare(a, b), direction=LT\n"
	"}\n";

typedef struct {
	const char *producer, *consumer;
	/* expected reason (a prefix) at O1, O2, O3; NULL = allowed */
	const char *why[3];
} pair;

#define COLL_P "producer is a collective"
#define COLL_C "consumer is a collective"
#define NOK_P "producer cannot be part of a kernel"
#define NOK_C "consumer cannot be part of a kernel"
#define CUSTOM "custom call is a kernel of its own"
#define O1_P "O1 fuses only elementwise producers"
#define O1_C "O1 fuses only into elementwise consumers"
#define RED "a reduction ends its kernel"
#define OWN_P "producer needs a kernel of its own"
#define OWN_C "consumer needs a kernel of its own"
#define MM_IN "only layout ops (broadcast/reshape/transpose/convert) fuse into a matmul operand"
#define MM_OUT "matmul result fuses only into an elementwise/layout epilogue"
#define GATHER "only layout ops fuse into a gather/dynamic-update-slice"
#define LOOP_P "producer is not a loop (index-mapped) op"
#define LOOP_C "consumer is not a loop op or a reduction"

static const pair pairs[] = {
	/* allowed everywhere: elementwise into elementwise */
	{"ex", "ad", {NULL, NULL, NULL}},
	{"ad", "mu", {NULL, NULL, NULL}},
	/* layout / data movement: O2+ */
	{"bc", "bm", {O1_P, NULL, NULL}},
	{"bm", "tr", {O1_C, NULL, NULL}},
	{"tr", "sl", {O1_P, NULL, NULL}},
	{"mu", "ds", {O1_C, NULL, NULL}},
	/* elementwise into a reduction (kInput): O2+ */
	{"mu", "rd", {O1_C, NULL, NULL}},
	{"rd", "rn", {O1_P, RED, RED}},
	/* matmul operand and epilogue */
	{"tr", "dt", {O1_P, NULL, NULL}},
	{"ex", "dx", {O1_C, MM_IN, MM_IN}},
	{"dt", "dr", {O1_P, NULL, NULL}},
	{"dt", "d2", {O1_P, MM_IN, MM_IN}},
	{"dt", "rd", {O1_P, MM_OUT, MM_OUT}},
	/* communication, non-kernel ops, custom calls */
	{"ar", "an", {COLL_P, COLL_P, COLL_P}},
	{"mu", "ar", {COLL_C, COLL_C, COLL_C}},
	{"p", "ex", {NOK_P, NOK_P, NOK_P}},
	{"mu", "tu", {NOK_C, NOK_C, NOK_C}},
	{"cc", "cn", {CUSTOM, CUSTOM, CUSTOM}},
	{"mu", "cc", {CUSTOM, CUSTOM, CUSTOM}},
	/* ops that need a kernel of their own */
	{"st", "sn", {O1_P, OWN_P, OWN_P}},
	{"mu", "st", {O1_C, OWN_C, OWN_C}},
	{"ga", "gn", {O1_P, OWN_P, OWN_P}},
	{"du", "gn", {O1_P, OWN_P, OWN_P}},
	/* gather / dynamic-update-slice consumers take only layout ops */
	{"gi", "ga", {O1_P, NULL, NULL}},
	{"ex", "ge", {O1_C, GATHER, GATHER}},
	{"tr", "du", {O1_P, NULL, NULL}},
	{"sl", "du", {O1_P, GATHER, GATHER}},
	{"mu", "du", {O1_C, GATHER, GATHER}},
	/* neither loop ops nor reductions */
	{"sc", "sa", {O1_P, LOOP_P, LOOP_P}},
	{"rd", "sc", {O1_P, RED, RED}},
	{"rn", "sc", {O1_C, LOOP_C, LOOP_C}},
};

static void check_pairs(void **state)
{
	(void)state;
	nx_module *m = tu_parse(hlo);
	nx_comp *c = m->entry;
	int bad = 0;
	for (size_t k = 0; k < sizeof(pairs) / sizeof(pairs[0]); k++) {
		const pair *t = &pairs[k];
		nx_inst *p = nx_comp_find_inst(c, t->producer);
		nx_inst *u = nx_comp_find_inst(c, t->consumer);
		assert_non_null(p);
		assert_non_null(u);
		for (int lv = 1; lv <= 3; lv++) {
			nx_pass_ctx ctx = {.opt_level = lv};
			const char *got = nx_fusion_refusal(p, u, &ctx);
			const char *want = t->why[lv - 1];
			bool ok = want ? got && strncmp(got, want, strlen(want)) == 0 : got == NULL;
			if (!ok) {
				print_error("O%d %s -> %s: got \"%s\", want \"%s\"\n", lv, t->producer,
				            t->consumer, got ? got : "(allowed)", want ? want : "(allowed)");
				bad++;
			}
		}
	}
	nx_module_free(m);
	assert_int_equal(bad, 0);
}

/* Every reason string nx_fusion_refusal can return is covered by a pair
 * above: a new rule without a test fails here. */
static void every_reason_covered(void **state)
{
	(void)state;
	static const char *const reasons[] = {COLL_P, COLL_C, NOK_P, NOK_C, CUSTOM, O1_P, O1_C, RED,
	                                      OWN_P, OWN_C, MM_IN, MM_OUT, GATHER, LOOP_P, LOOP_C};
	const char *root = getenv("NX_ROOT");
	char path[4096];
	snprintf(path, sizeof path, "%s/passes/fusion_decision.c", root ? root : ".");
	char *src = tu_read(path, NULL);
	if (!src) {
		print_message("skipped: %s not found (run from the repository root or set NX_ROOT)\n", path);
		skip();
	}
	int in_src = 0;
	for (const char *s = src; (s = strstr(s, "return \"")); s += 8)
		in_src++;
	assert_int_equal(in_src, (int)(sizeof(reasons) / sizeof(reasons[0])));
	for (size_t r = 0; r < sizeof(reasons) / sizeof(reasons[0]); r++) {
		bool used = false;
		for (size_t k = 0; k < sizeof(pairs) / sizeof(pairs[0]); k++)
			for (int lv = 0; lv < 3; lv++)
				used |= pairs[k].why[lv] && strcmp(pairs[k].why[lv], reasons[r]) == 0;
		if (!used)
			print_error("reason not exercised: %s\n", reasons[r]);
		assert_true(used);
	}
	free(src);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(check_pairs),
		cmocka_unit_test(every_reason_covered),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
