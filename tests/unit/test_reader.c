/* tests/unit/test_reader.c — the HLO text reader: typed attributes, literals,
 * async forms, forward references, unknown attributes, the whole corpus. */
#include "testutil.h"

#include <math.h>

static nx_inst *find(nx_module *m, const char *name)
{
	for (int c = 0; c < m->ncomps; c++) {
		nx_inst *i = nx_comp_find_inst(m->comps[c], name);
		if (i)
			return i;
	}
	fail_msg("no instruction %s", name);
	return NULL;
}

static void assert_ivec(nx_ivec v, int n, const int64_t *want)
{
	assert_int_equal(v.n, n);
	for (int k = 0; k < n; k++)
		assert_int_equal(v.v[k], want[k]);
}
#define IVEC(v, ...) do { const int64_t w_[] = {__VA_ARGS__}; \
	assert_ivec(v, (int)(sizeof w_ / sizeof w_[0]), w_); } while (0)

static const char *kv(const nx_kv *v, int n, const char *key)
{
	for (int k = 0; k < n; k++)
		if (strcmp(v[k].key, key) == 0)
			return v[k].value;
	return NULL;
}

static void test_header(void **state)
{
	(void)state;
	nx_module *m = tu_parse(
		"HloModule jit_f, input_output_alias={ {0}: (1, {}, must-alias), {1}: (0, {2}) },"
		" entry_computation_layout={(f32[2]{0}, (s32[], f32[3]{0}))->(f32[2]{0}, f32[2]{0})},"
		" replica_count=4, num_partitions=2, is_scheduled=true,"
		" frontend_attributes={a=\"x\\\"y\",b=\"2\"}, mystery={1, {2}}, other=abc\n"
		"ENTRY main (p: f32[2], q: (s32[], f32[3])) -> (f32[2], f32[2]) {\n"
		"  p = f32[2] parameter(0)\n  q = (s32[], f32[3]) parameter(1)\n"
		"  ROOT t = (f32[2], f32[2]) tuple(p, p)\n}\n");
	assert_string_equal(m->name, "jit_f");
	assert_int_equal(m->naliases, 2);
	IVEC(m->aliases[0].output_index, 0);
	assert_int_equal(m->aliases[0].param_number, 1);
	assert_true(m->aliases[0].must_alias && m->aliases[0].kind_given);
	assert_false(m->aliases[1].kind_given);
	IVEC(m->aliases[1].param_index, 2);
	assert_non_null(m->entry_layout);
	assert_int_equal(m->entry_layout_nparams, 2);
	assert_int_equal(m->entry_layout->ntuple, 3);
	assert_int_equal(m->entry_layout->tuple[1]->type, NX_TUPLE);
	assert_int_equal(m->replica_count, 4);
	assert_int_equal(m->num_partitions, 2);
	assert_true(m->is_scheduled);
	assert_string_equal(kv(m->frontend_attributes, m->nfrontend_attributes, "a"), "x\"y");
	assert_int_equal(m->nunknown, 2);
	assert_string_equal(m->unknown[0].key, "mystery");
	assert_string_equal(m->unknown[0].value, "{1, {2}}");
	assert_string_equal(m->unknown[1].value, "abc");
	assert_string_equal(m->entry->name, "main");
	assert_int_equal(m->entry->nparams, 2);
	nx_module_free(m);
}

static void test_shapes(void **state)
{
	(void)state;
	nx_module *m = tu_parse(
		"HloModule s\nENTRY e {\n"
		"  a = f32[2,3]{0,1:T(8,128)S(1)} parameter(0)\n"
		"  b = bf16[<=4,?] parameter(1)\n"
		"  c = ((f32[], token[]), ()) parameter(2)\n"
		"  d = f8e4m3fn[7] parameter(3)\n"
		"  ROOT e = f32[2,3] negate(a)\n}\n");
	nx_inst *a = find(m, "a");
	nx_ivec m2m = {a->shape->minor_to_major, 2};
	IVEC(m2m, 0, 1);
	assert_string_equal(a->shape->layout_extra, ":T(8,128)S(1)");
	nx_inst *e = find(m, "e");
	assert_true(nx_shape_has_default_layout(e->shape));
	nx_inst *b = find(m, "b");
	assert_int_equal(b->shape->type, NX_BF16);
	assert_int_equal(b->shape->dynamic[0], NX_DIM_BOUNDED);
	assert_int_equal(b->shape->dims[0], 4);
	assert_int_equal(b->shape->dynamic[1], NX_DIM_UNBOUNDED);
	assert_int_equal(b->shape->dims[1], -1);
	nx_inst *c = find(m, "c");
	assert_int_equal(c->shape->ntuple, 2);
	assert_int_equal(c->shape->tuple[0]->tuple[1]->type, NX_TOKEN);
	assert_int_equal(c->shape->tuple[1]->ntuple, 0);
	assert_int_equal(find(m, "d")->shape->type, NX_F8E4M3FN);
	nx_module_free(m);
	/* every element type name parses */
	for (int t = 1; t < NX_TYPE_COUNT; t++) {
		if (t == NX_TUPLE)
			continue;
		char buf[256];
		bool arr = nx_type_is_array((nx_type)t);
		snprintf(buf, sizeof buf, "HloModule t\nENTRY e {\n  ROOT p = %s[%s] parameter(0)\n}\n",
		         nx_type_name((nx_type)t), arr ? "3" : "");
		m = tu_parse(buf);
		assert_int_equal(m->entry->root->shape->type, t);
		nx_module_free(m);
	}
}

static void test_attrs(void **state)
{
	(void)state;
	nx_module *m = tu_parse(
		"HloModule a\n"
		"add { x = f32[] parameter(0)\n y = f32[] parameter(1)\n ROOT s = f32[] add(x, y) }\n"
		"ge { x = f32[] parameter(0)\n y = f32[] parameter(1)\n ROOT s = pred[] compare(x, y), direction=GE }\n"
		"cond { x = s32[] parameter(0)\n ROOT c = pred[] constant(true) }\n"
		"ENTRY main {\n"
		"  p = f32[4,6] parameter(0)\n"
		"  i = s32[3,1] parameter(1)\n"
		"  k = f32[2,2,1,1] parameter(2)\n"
		"  img = f32[1,4,4,1] parameter(3)\n"
		"  z = f32[] constant(0)\n"
		"  br = f32[2,4,6] broadcast(p), dimensions={1,2}\n"
		"  cmp = pred[4,6] compare(p, p), direction=LT, type=TOTALORDER\n"
		"  sl = f32[2,2] slice(p), slice={[0:2], [1:5:2]}\n"
		"  ds = f32[2,2] dynamic-slice(p, i, i), dynamic_slice_sizes={2,2}\n"
		"  pd = f32[7,9] pad(p, z), padding=0_1_2x-1_4\n"
		"  rw = f32[2,3] reduce-window(p, z), window={size=3x3 stride=2x1 pad=0_1x1_1 lhs_dilate=1x2 rhs_dilate=2x1 rhs_reversal=0x1}, to_apply=add\n"
		"  cv = f32[1,3,3,1] convolution(img, k), window={size=2x2}, dim_labels=b01f_01io->b01f, feature_group_count=1, batch_group_count=1\n"
		"  dt = f32[4,4] dot(p, p), lhs_batch_dims={}, lhs_contracting_dims={1}, rhs_contracting_dims={1}\n"
		"  g = f32[3,6] gather(p, i), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,6}, indices_are_sorted=true\n"
		"  sc = f32[4,6] scatter(p, i, g), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, unique_indices=true, to_apply=add\n"
		"  gte = s32[] get-tuple-element((s32[], f32[]) tuple(s32[] constant(1), z)), index=0\n"
		"  io = s32[5] iota(), iota_dimension=0\n"
		"  cc = f32[2] custom-call(p), custom_call_target=\"foo\\n\", api_version=API_VERSION_STATUS_RETURNING, custom_call_has_side_effect=true, backend_config=\"a\\\"b\"\n"
		"  cj = f32[2] custom-call(p), custom_call_target=\"bar\", backend_config={\"x\": {\"y\": 1}}\n"
		"  ar = f32[4,6] all-reduce(p), replica_groups={{0,1},{2,3}}, channel_id=5, use_global_device_ids=true, constrain_layout=true, to_apply=add\n"
		"  ag = f32[8,6] all-gather(p), replica_groups=[2,4]<=[4,2]T(1,0), dimensions={0}\n"
		"  ar2 = f32[4,6] all-reduce(p), replica_groups={}, to_apply=add\n"
		"  cp = f32[4,6] collective-permute(p), source_target_pairs={{0,1},{1,2}}\n"
		"  ft = c64[4,6] fft(c64[4,6] convert(p)), fft_type=IRFFT, fft_length={4,6}\n"
		"  bn = (f32[4,6], f32[6], f32[6]) batch-norm-training(p, f32[6] constant({1,2,3,4,5,6}), f32[6] constant({1,2,3,4,5,6})), epsilon=0.001, feature_index=1\n"
		"  rbg = (u64[2], u32[4]) rng-bit-generator(u64[2] constant({1,2})), algorithm=rng_philox\n"
		"  rn = f32[3] rng(z, z), distribution=rng_normal\n"
		"  rp = f32[4,6] reduce-precision(p), exponent_bits=5, mantissa_bits=10\n"
		"  so = f32[4,6] sort(p), dimensions={1}, is_stable=true, to_apply=ge\n"
		"  fu = f32[4,6] fusion(p), kind=kLoop, calls=add\n"
		"  wh = s32[] while(s32[] constant(0)), condition=%cond, body=cond\n"
		"  cd = f32[] conditional(pred[] constant(true), z, z), true_computation=add, false_computation=add\n"
		"  cd2 = f32[] conditional(s32[] constant(1), z, z), branch_computations={%add, %add}\n"
		"  sas = f32[4,6] select-and-scatter(p, p, z), window={size=1x1}, select=ge, scatter=add\n"
		"  sh = f32[4,6] copy(p), sharding={devices=[2,1]0,1 metadata={op_name=\"x\"}}, metadata={op_type=\"aten__add\" op_name=\"a/b\\\"c\" source_file=\"/x.py\" source_line=63}, frontend_attributes={neff_input_names=\"input3\"}\n"
		"  un = f32[4,6] copy(p), zzz={{1}, \"a,b\"}, operand_precision={default, highest}, control-predecessors={%sh, cc}\n"
		"  dotalg = f32[4,4] dot(p, p), lhs_contracting_dims={1}, rhs_contracting_dims={1}, algorithm=dot_bf16_bf16_f32\n"
		"  ROOT r = f32[4,6] add(p, p)\n}\n");
	assert_true(find(m, "br")->a.has_dimensions);
	IVEC(find(m, "br")->a.dimensions, 1, 2);
	assert_int_equal(find(m, "cmp")->a.direction, NX_CMP_LT);
	assert_int_equal(find(m, "cmp")->a.compare_type, NX_CMPT_TOTALORDER);
	nx_inst *sl = find(m, "sl");
	IVEC(sl->a.slice_start, 0, 1);
	IVEC(sl->a.slice_limit, 2, 5);
	IVEC(sl->a.slice_stride, 1, 2);
	IVEC(find(m, "ds")->a.dynamic_slice_sizes, 2, 2);
	nx_inst *pd = find(m, "pd");
	assert_int_equal(pd->a.npadding, 2);
	assert_int_equal(pd->a.padding[0].hi, 1);
	assert_int_equal(pd->a.padding[0].interior, 2);
	assert_int_equal(pd->a.padding[1].lo, -1);
	assert_int_equal(pd->a.padding[1].interior, 0);
	nx_window *w = &find(m, "rw")->a.window;
	assert_int_equal(w->ndims, 2);
	assert_int_equal(w->dims[0].stride, 2);
	assert_int_equal(w->dims[0].pad_hi, 1);
	assert_int_equal(w->dims[1].base_dilation, 2);
	assert_int_equal(w->dims[0].window_dilation, 2);
	assert_true(w->dims[1].reversal && !w->dims[0].reversal);
	assert_int_equal(find(m, "rw")->ncalled, 1);
	nx_conv_dnums *cv = &find(m, "cv")->a.conv;
	assert_true(cv->present);
	assert_int_equal(cv->in_batch, 0);
	assert_int_equal(cv->in_feature, 3);
	IVEC(cv->in_spatial, 1, 2);
	assert_int_equal(cv->k_in, 2);
	assert_int_equal(cv->k_out, 3);
	IVEC(cv->k_spatial, 0, 1);
	assert_int_equal(find(m, "cv")->a.window.dims[1].stride, 1);
	IVEC(find(m, "dt")->a.dot.lhs_contracting, 1);
	assert_int_equal(find(m, "dt")->a.dot.lhs_batch.n, 0);
	nx_gather_dnums *g = &find(m, "g")->a.gather;
	IVEC(g->offset_dims, 1);
	IVEC(g->slice_sizes, 1, 6);
	assert_int_equal(g->index_vector_dim, 1);
	assert_true(g->indices_are_sorted);
	nx_scatter_dnums *s = &find(m, "sc")->a.scatter;
	IVEC(s->update_window_dims, 1);
	IVEC(s->scatter_dims_to_operand_dims, 0);
	assert_true(s->unique_indices);
	assert_int_equal(find(m, "sc")->noperands, 3);
	nx_inst *gte = find(m, "gte");
	assert_int_equal(gte->a.tuple_index, 0);
	assert_int_equal(gte->operands[0]->op, NX_OP_TUPLE);
	assert_int_equal(gte->operands[0]->operands[0]->op, NX_OP_CONSTANT);
	assert_int_equal(find(m, "io")->a.iota_dimension, 0);
	nx_inst *cc = find(m, "cc");
	assert_string_equal(cc->a.custom_call_target, "foo\n");
	assert_string_equal(cc->a.api_version, "API_VERSION_STATUS_RETURNING");
	assert_true(cc->a.custom_call_has_side_effect);
	assert_string_equal(cc->a.backend_config, "a\"b");
	assert_false(cc->a.backend_config_raw);
	assert_string_equal(find(m, "cj")->a.backend_config, "{\"x\": {\"y\": 1}}");
	assert_true(find(m, "cj")->a.backend_config_raw);
	nx_inst *ar = find(m, "ar");
	assert_true(ar->a.replica_groups.present && !ar->a.replica_groups.iota);
	assert_int_equal(ar->a.replica_groups.ngroups, 2);
	IVEC(ar->a.replica_groups.groups[1], 2, 3);
	assert_int_equal(ar->a.channel_id, 5);
	assert_true(ar->a.use_global_device_ids && ar->a.constrain_layout);
	assert_string_equal(ar->called[0]->name, "add");
	nx_replica_groups *rg = &find(m, "ag")->a.replica_groups;
	assert_true(rg->iota);
	IVEC(rg->iota_shape, 2, 4);
	IVEC(rg->iota_reshape, 4, 2);
	IVEC(rg->iota_transpose, 1, 0);
	assert_true(find(m, "ar2")->a.replica_groups.present);
	assert_int_equal(find(m, "ar2")->a.replica_groups.ngroups, 0);
	nx_inst *cp = find(m, "cp");
	assert_int_equal(cp->a.nsource_target_pairs, 2);
	assert_int_equal(cp->a.source_target_pairs[1][0], 1);
	assert_int_equal(cp->a.source_target_pairs[1][1], 2);
	assert_int_equal(find(m, "ft")->a.fft_type, NX_FFT_IRFFT);
	IVEC(find(m, "ft")->a.fft_length, 4, 6);
	assert_true(fabsf(find(m, "bn")->a.epsilon - 0.001f) < 1e-9f);
	assert_int_equal(find(m, "bn")->a.feature_index, 1);
	assert_int_equal(find(m, "rbg")->a.rng_algorithm, NX_RNG_PHILOX);
	assert_int_equal(find(m, "rn")->a.rng_distribution, NX_RNG_DIST_NORMAL);
	assert_int_equal(find(m, "rp")->a.exponent_bits, 5);
	assert_int_equal(find(m, "rp")->a.mantissa_bits, 10);
	assert_true(find(m, "so")->a.is_stable);
	assert_string_equal(find(m, "fu")->a.fusion_kind, "kLoop");
	assert_string_equal(find(m, "fu")->called[0]->name, "add");
	nx_inst *wh = find(m, "wh");
	assert_int_equal(wh->ncalled, 2);
	assert_string_equal(wh->called[0]->name, "cond");
	assert_int_equal(find(m, "cd")->ncalled, 2);
	assert_int_equal(find(m, "cd2")->ncalled, 2);
	nx_inst *sas = find(m, "sas");
	assert_string_equal(sas->called[0]->name, "ge");
	assert_string_equal(sas->called[1]->name, "add");
	nx_inst *sh = find(m, "sh");
	assert_string_equal(sh->a.sharding, "devices=[2,1]0,1 metadata={op_name=\"x\"}");
	assert_string_equal(kv(sh->a.metadata, sh->a.nmetadata, "op_name"), "a/b\"c");
	assert_string_equal(kv(sh->a.metadata, sh->a.nmetadata, "source_line"), "63");
	assert_string_equal(kv(sh->a.frontend_attributes, sh->a.nfrontend_attributes,
	                       "neff_input_names"), "input3");
	nx_inst *un = find(m, "un");
	assert_int_equal(un->a.nunknown, 2);
	assert_string_equal(un->a.unknown[0].key, "zzz");
	assert_string_equal(un->a.unknown[0].value, "{{1}, \"a,b\"}");
	assert_string_equal(un->a.unknown[1].key, "operand_precision");
	assert_int_equal(un->a.ncontrol_predecessors, 2);
	assert_ptr_equal(un->a.control_predecessors[1], cc);
	nx_inst *da = find(m, "dotalg");
	assert_int_equal(da->a.nunknown, 1);
	assert_string_equal(da->a.unknown[0].value, "dot_bf16_bf16_f32");
	nx_module_free(m);
}

static nx_literal *lit(nx_arena *a, const char *s)
{
	nx_diag d = {0};
	nx_literal *l = nx_parse_literal(a, s, strlen(s), &d);
	if (!l) {
		print_error("%s: %s\n", s, d.msg);
		nx_diag_clear(&d);
		fail();
	}
	return l;
}

static void test_literals(void **state)
{
	(void)state;
	nx_arena a;
	nx_arena_init(&a);
	nx_literal *l = lit(&a, "f32[2,2] {{1, 2.5}, {-inf, nan}}");
	float *f = l->data;
	assert_true(f[1] == 2.5f && isinf(f[2]) && f[2] < 0 && isnan(f[3]));
	l = lit(&a, "f64[2] {0.1, 1e300}");
	assert_true(((double *)l->data)[0] == 0.1 && ((double *)l->data)[1] == 1e300);
	l = lit(&a, "pred[3] {true, false, 1}");
	assert_int_equal(((uint8_t *)l->data)[0], 1);
	assert_int_equal(((uint8_t *)l->data)[1], 0);
	l = lit(&a, "s8[2] {-128, 127}");
	assert_int_equal(((int8_t *)l->data)[0], -128);
	l = lit(&a, "u64[1] {18446744073709551615}");
	assert_true(((uint64_t *)l->data)[0] == UINT64_MAX);
	l = lit(&a, "s64[] -9223372036854775808");
	assert_true(((int64_t *)l->data)[0] == INT64_MIN);
	l = lit(&a, "s4[2] {-8, 7}");
	assert_int_equal(((int8_t *)l->data)[0], -8);
	l = lit(&a, "u16[] 65535");
	assert_int_equal(((uint16_t *)l->data)[0], 65535);
	/* bf16: 1 = 0x3f80; 1.00390625 is the tie between 0x3f80 and 0x3f81 -> even */
	l = lit(&a, "bf16[4] {1, 1.00390625, 1.01171875, -inf}");
	uint16_t *h = l->data;
	assert_int_equal(h[0], 0x3f80);
	assert_int_equal(h[1], 0x3f80);
	assert_int_equal(h[2], 0x3f82);
	assert_int_equal(h[3], 0xff80);
	l = lit(&a, "f16[4] {1, 65504, 70000, 5.960464477539063e-08}");
	h = l->data;
	assert_int_equal(h[0], 0x3c00);
	assert_int_equal(h[1], 0x7bff);
	assert_int_equal(h[2], 0x7c00);
	assert_int_equal(h[3], 0x0001);
	l = lit(&a, "f8e4m3fn[3] {448, 1000, -nan}");
	uint8_t *b = l->data;
	assert_int_equal(b[0], 0x7e);
	assert_int_equal(b[1], 0x7f); /* no inf: overflow is NaN */
	assert_int_equal(b[2], 0xff);
	l = lit(&a, "f8e5m2[2] {1, inf}");
	assert_int_equal(((uint8_t *)l->data)[0], 0x3c);
	assert_int_equal(((uint8_t *)l->data)[1], 0x7c);
	l = lit(&a, "f8e4m3fnuz[2] {1, -0}");
	assert_int_equal(((uint8_t *)l->data)[0], 0x40);
	assert_int_equal(((uint8_t *)l->data)[1], 0x00);
	l = lit(&a, "f4e2m1fn[2] {6, -0.5}");
	assert_int_equal(((uint8_t *)l->data)[0], 0x7);
	assert_int_equal(((uint8_t *)l->data)[1], 0x9);
	l = lit(&a, "f8e8m0fnu[2] {1, 0.25}");
	assert_int_equal(((uint8_t *)l->data)[0], 127);
	assert_int_equal(((uint8_t *)l->data)[1], 125);
	l = lit(&a, "c64[2] {(1, 0), (-2, 2.5)}");
	assert_true(((float *)l->data)[2] == -2 && ((float *)l->data)[3] == 2.5f);
	l = lit(&a, "c128[] (1, -1)");
	assert_true(((double *)l->data)[1] == -1);
	l = lit(&a, "f32[0] {}");
	assert_int_equal(l->nbytes, 0);
	l = lit(&a, "s32[2,0] {{}, {}}");
	assert_int_equal(l->shape->dims[0], 2);
	l = lit(&a, "(s32[], f32[]) (1, 2.5)");
	assert_int_equal(l->ntuple, 2);
	assert_true(((float *)l->tuple[1]->data)[0] == 2.5f);
	l = lit(&a, "(s32[], (f32[2], pred[])) (1, ({1, 2}, true))");
	assert_int_equal(l->tuple[1]->ntuple, 2);
	l = lit(&a, "s32[2,1,2] {{{1, 2}}, {{3, /*index=3*/4}}}");
	assert_int_equal(((int32_t *)l->data)[3], 4);
	nx_diag d = {0};
	assert_null(nx_parse_literal(&a, "f32[2] {1}", 10, &d));
	assert_non_null(strstr(d.msg, "too few elements"));
	assert_null(nx_parse_literal(&a, "s32[] 1 2", 9, &d));
	assert_string_equal(d.msg, "unexpected text after the literal");
	nx_diag_clear(&d);
	nx_arena_free(&a);

	/* a constant's literal takes the instruction's shape, layout included */
	nx_module *m = tu_parse("HloModule c\nENTRY e {\n"
	                        "  t = (s32[], f32[]) constant((1, 2.5))\n"
	                        "  ROOT c = f32[2,2]{0,1} constant({{1, 2}, {3, 4}})\n}\n");
	nx_inst *c = m->entry->root;
	assert_ptr_equal(c->a.literal->shape, c->shape);
	assert_true(((float *)c->a.literal->data)[1] == 2);
	assert_int_equal(find(m, "t")->a.literal->ntuple, 2);
	nx_module_free(m);
}

static void test_async_and_structure(void **state)
{
	(void)state;
	nx_module *m = tu_parse(
		"HloModule a\n"
		"// a comment\n"
		"%wrapped (x: f32[]) -> f32[] {\n  %x = f32[] parameter(0)\n  ROOT %n = f32[] negate(f32[] %x)\n}\n"
		"\n"
		"ENTRY %main () -> f32[] {\n"
		"  init = f32[] constant(42.0)\n"
		"  s = ((f32[]), f32[], u32[]) negate-start(init)\n"
		"  u = ((f32[]), f32[], u32[]) negate-update(s)\n"
		"  d = f32[] negate-done(u)\n"
		"  s2 = ((f32[]), f32[], u32[]) async-start(init), calls=%wrapped\n"
		"  d2 = f32[] async-done(s2)\n"
		"  ars = f32[] all-reduce-start(init), to_apply=wrapped\n"
		"  ard = f32[] all-reduce-done(ars)\n"
		"  ROOT r = f32[] add(d, d2)\n}\n");
	nx_inst *s = find(m, "s");
	assert_int_equal(s->op, NX_OP_ASYNC_START);
	assert_int_equal(s->a.async_wrapped, NX_OP_NEGATE);
	assert_int_equal(find(m, "u")->op, NX_OP_ASYNC_UPDATE);
	assert_int_equal(find(m, "d")->op, NX_OP_ASYNC_DONE);
	assert_int_equal(find(m, "d")->a.async_wrapped, NX_OP_NEGATE);
	nx_inst *s2 = find(m, "s2");
	assert_int_equal(s2->op, NX_OP_ASYNC_START);
	assert_int_equal(s2->a.async_wrapped, NX_OP_COUNT);
	assert_string_equal(s2->called[0]->name, "wrapped");
	assert_int_equal(find(m, "ars")->op, NX_OP_ALL_REDUCE_START);
	assert_int_equal(find(m, "ars")->a.async_wrapped, NX_OP_COUNT);
	assert_int_equal(find(m, "init")->line, 9);
	assert_int_equal(find(m, "init")->col, 3);
	assert_true(m->entry->is_entry);
	assert_false(m->comps[0]->is_entry);
	nx_module_free(m);

	/* forward references: the reader orders instructions topologically,
	 * keeping file order otherwise; the default root is the last one; the
	 * default entry is the last computation */
	m = tu_parse("HloModule f\n"
	             "c1 {\n  a = f32[] add(p, q)\n  p = f32[] parameter(0)\n"
	             "  z = f32[] constant(1)\n  q = f32[] negate(p)\n}\n"
	             "c2 {\n  p = f32[] parameter(0)\n  ROOT r = f32[] call(p), to_apply=c1\n"
	             "  x = f32[] copy(p)\n}\n");
	nx_comp *c1 = m->comps[0];
	assert_string_equal(c1->root->name, "q");
	const char *want[] = {"p", "q", "a", "z"};
	assert_int_equal(c1->ninsts, 4);
	for (int k = 0; k < 4; k++)
		assert_string_equal(c1->insts[k]->name, want[k]);
	assert_ptr_equal(m->entry, m->comps[1]);
	assert_string_equal(m->entry->root->name, "r");
	assert_ptr_equal(find(m, "r")->called[0], c1);
	assert_ptr_equal(c1->params[0], c1->insts[0]);
	/* ids are unique */
	assert_true(c1->insts[0]->id != c1->insts[1]->id && c1->id != m->comps[1]->id);
	nx_module_free(m);

	/* attributes split over lines, index=N block comments, unknown attrs at
	 * the end of a line */
	m = tu_parse("HloModule l\nENTRY e {\n  p = f32[2] parameter(0)\n"
	             "  t = (f32[2], f32[2]) tuple(p, /*index=1*/p),\n"
	             "      metadata={op_name=\"x\"\n source_line=3}, foo=bar baz\n"
	             "  ROOT g = f32[2] get-tuple-element(t),\n  index=1\n}\n");
	nx_inst *t = find(m, "t");
	assert_int_equal(t->noperands, 2);
	assert_int_equal(t->a.nmetadata, 2);
	assert_string_equal(t->a.unknown[0].value, "bar baz");
	assert_int_equal(m->entry->root->a.tuple_index, 1);
	nx_module_free(m);
}

static const char *read_error(const char *text)
{
	static char msg[512];
	nx_diag d = {0};
	nx_module *m = nx_read_text(text, strlen(text), "t.hlo", &d);
	assert_null(m);
	char *f = nx_diag_format(&d);
	snprintf(msg, sizeof msg, "%s", f);
	free(f);
	nx_diag_clear(&d);
	return msg;
}

/* What newer XLA (JAX 0.11) prints. A use of tuple element k as "%t#k" (no
 * get-tuple-element instruction): the reader adds one get-tuple-element per
 * (t, k), before its first user, also for a forward reference. A float
 * total-order compare as "order=TOTAL" (type=TOTALORDER before). */
static void test_newer_xla_forms(void **state)
{
	(void)state;
	nx_module *m = tu_parse(
		"HloModule t\n"
		"ENTRY e {\n"
		"  %p = f32[4]{0} parameter(0)\n"
		"  %s = f32[4]{0} add(%t#0, f32[4]{0} %t#1)\n"
		"  %t = (f32[4]{0}, f32[4]{0}) tuple(%p, %p)\n"
		"  %t.1 = f32[4]{0} negate(%t#1)\n"
		"  ROOT %r = (f32[4]{0}, f32[4]{0}) tuple(%s, %t#1)\n"
		"}\n");
	nx_comp *e = m->entry;
	assert_int_equal(e->ninsts, 7);
	nx_inst *s = find(m, "s"), *t = find(m, "t");
	assert_int_equal(s->operands[0]->op, NX_OP_GET_TUPLE_ELEMENT);
	assert_int_equal(s->operands[0]->a.tuple_index, 0);
	assert_ptr_equal(s->operands[0]->operands[0], t);
	assert_string_equal(s->operands[0]->name, "t.0");
	/* one instruction per element; "t.1" is taken, so t#1 is "t.1.1" */
	nx_inst *g1 = s->operands[1];
	assert_string_equal(g1->name, "t.1.1");
	assert_ptr_equal(find(m, "t.1")->operands[0], g1);
	assert_ptr_equal(e->root->operands[1], g1);
	/* operands come before their users */
	for (int k = 0; k < e->ninsts; k++)
		for (int o = 0; o < e->insts[k]->noperands; o++) {
			int j = 0;
			while (e->insts[j] != e->insts[k]->operands[o])
				j++;
			assert_true(j < k);
		}
	nx_module_free(m);

	assert_non_null(strstr(read_error("HloModule t\nENTRY e {\n  %p = f32[4] parameter(0)\n"
	                                  "  ROOT %r = f32[4] negate(%p#0)\n}\n"),
	                       "'p#0': 'p' has shape f32[4], not a tuple"));
	assert_non_null(strstr(read_error("HloModule t\nENTRY e {\n  %p = (f32[4]) parameter(0)\n"
	                                  "  ROOT %r = f32[4] negate(%p#1)\n}\n"),
	                       "t.hlo:4:29: error: 'p#1': tuple index out of range ('p' has 1 element)"));
	assert_non_null(strstr(read_error("HloModule t\nENTRY e {\n  %p = (f32[4]) parameter(0)\n"
	                                  "  ROOT %r = f32[4] negate(%p#x)\n}\n"),
	                       "as tuple index after '#'"));

	/* nested: "%t#1#0" is element 0 of element 1, one instruction each */
	m = tu_parse("HloModule n\nENTRY e {\n  %p = (f32[4], (s32[2], f32[4])) parameter(0)\n"
	             "  %a = f32[4] negate(%p#1#1)\n"
	             "  ROOT %r = (s32[2], f32[4], f32[4]) tuple(%p#1#0, %a, %p#1 #1)\n}\n");
	nx_inst *inner = find(m, "p.1"), *leaf = find(m, "p.1.1");
	assert_int_equal(inner->a.tuple_index, 1);
	assert_ptr_equal(leaf->operands[0], inner);
	assert_int_equal(leaf->a.tuple_index, 1);
	assert_ptr_equal(find(m, "a")->operands[0], leaf);
	assert_ptr_equal(m->entry->root->operands[2], leaf);
	assert_ptr_equal(m->entry->root->operands[0]->operands[0], inner);
	assert_int_equal(m->entry->ninsts, 6); /* p, p.1, p.1.1, a, p.1.0, r */
	nx_module_free(m);
	assert_non_null(strstr(read_error("HloModule t\nENTRY e {\n  %p = (f32[4], (f32[4])) parameter(0)\n"
	                                  "  ROOT %r = f32[4] negate(%p#0#0)\n}\n"),
	                       "t.hlo:4:31: error: 'p#0#0': 'p#0' has shape f32[4], not a tuple"));
	assert_non_null(strstr(read_error("HloModule t\nENTRY e {\n  %p = (f32[4], (f32[4])) parameter(0)\n"
	                                  "  ROOT %r = f32[4] negate(f32[8] %p#1#0)\n}\n"),
	                       "operand 'p#1#0' is written with shape f32[8] but defined with shape f32[4]"));

	m = tu_parse("HloModule c\nENTRY e {\n  %a = f32[4] parameter(0)\n"
	             "  %t = pred[4] compare(%a, %a), direction=LT, order=TOTAL\n"
	             "  ROOT %p = pred[4] compare(%a, %a), direction=LT, order=PARTIAL\n}\n");
	assert_int_equal(find(m, "t")->a.compare_type, NX_CMPT_TOTALORDER);
	assert_int_equal(find(m, "t")->a.nunknown, 0);
	assert_int_equal(find(m, "p")->a.compare_type, NX_CMPT_DEFAULT);
	nx_module_free(m);
	assert_non_null(strstr(read_error("HloModule c\nENTRY e {\n  %a = f32[4] parameter(0)\n"
	                                  "  ROOT %t = pred[4] compare(%a, %a), direction=LT, order=SOME\n}\n"),
	                       "unknown comparison order 'SOME' (expected TOTAL or PARTIAL)"));
}

static int parse_file(const char *path)
{
	size_t len;
	char *text = tu_read(path, &len);
	if (!text) {
		print_error("cannot read %s\n", path);
		return 1;
	}
	nx_diag d = {0};
	nx_module *m = nx_read_text(text, len, path, &d);
	free(text);
	if (!m) {
		char *s = nx_diag_format(&d);
		print_error("%s", s);
		free(s);
		nx_diag_clear(&d);
		return 1;
	}
	int bad = m->entry ? 0 : 1;
	nx_module_free(m);
	return bad;
}

static void test_corpus_torch(void **state)
{
	(void)state;
	char dir[4096], path[8192];
	snprintf(dir, sizeof dir, "%s/hlo/torch-neuronx", tu_corpus());
	char **names;
	int n = tu_list(dir, ".hlo", &names);
	if (n == 0) {
		tu_list_free(names, n);
		skip();
	}
	int bad = 0;
	for (int k = 0; k < n; k++) {
		snprintf(path, sizeof path, "%s/%s", dir, names[k]);
		bad += parse_file(path);
	}
	tu_list_free(names, n);
	assert_int_equal(bad, 0);
}

/* Lines of inputs.txt / expected.txt; expected lines may be prefixed with
 * "tuple N: " or "replica N: "; "tolerance:" lines are not literals. */
static int parse_literal_lines(const char *path)
{
	size_t len;
	char *text = tu_read(path, &len);
	if (!text)
		return 0;
	int bad = 0;
	nx_arena a;
	nx_arena_init(&a);
	for (char *line = text; *line;) {
		char *nl = strchr(line, '\n');
		size_t ll = nl ? (size_t)(nl - line) : strlen(line);
		char *s = line;
		if (ll && strncmp(s, "tolerance:", 10) != 0) {
			if (strncmp(s, "tuple ", 6) == 0 || strncmp(s, "replica ", 8) == 0) {
				char *colon = memchr(s, ':', ll);
				if (colon) {
					ll -= (size_t)(colon + 2 - s);
					s = colon + 2;
				}
			}
			nx_diag d = {0};
			if (!nx_parse_literal(&a, s, ll, &d)) {
				print_error("%s: %.*s: %s\n", path, (int)ll, s, d.msg);
				bad++;
			}
			nx_diag_clear(&d);
		}
		line = nl ? nl + 1 : line + ll;
	}
	nx_arena_free(&a);
	free(text);
	return bad;
}

static void test_corpus_evaluator(void **state)
{
	(void)state;
	char dir[4096], path[8192];
	snprintf(dir, sizeof dir, "%s/xla-evaluator", tu_corpus());
	char **names;
	int n = tu_list(dir, "", &names);
	int bad = 0, seen = 0;
	for (int k = 0; k < n; k++) {
		snprintf(path, sizeof path, "%s/%s/module.hlo", dir, names[k]);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		fclose(f);
		seen++;
		bad += parse_file(path);
		snprintf(path, sizeof path, "%s/%s/inputs.txt", dir, names[k]);
		bad += parse_literal_lines(path);
		snprintf(path, sizeof path, "%s/%s/expected.txt", dir, names[k]);
		bad += parse_literal_lines(path);
	}
	tu_list_free(names, n);
	if (seen == 0)
		skip();
	assert_int_equal(bad, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_header),
		cmocka_unit_test(test_shapes),
		cmocka_unit_test(test_attrs),
		cmocka_unit_test(test_literals),
		cmocka_unit_test(test_async_and_structure),
		cmocka_unit_test(test_newer_xla_forms),
		cmocka_unit_test(test_corpus_torch),
		cmocka_unit_test(test_corpus_evaluator),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
