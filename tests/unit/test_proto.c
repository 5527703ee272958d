/* tests/unit/test_proto.c — HloModuleProto writer/reader: IR built by hand
 * -> proto -> IR field by field, corrupted protos, and the corpus round trip
 * (text -> IR -> proto -> IR -> text equals text -> IR -> text). */
#include "testutil.h"

#include "ir/hlo/hlo.pb-c.h"

/* ---------------------------------------------------------------- helpers */

static nx_module *roundtrip(const nx_module *m)
{
	nx_diag d = {0};
	size_t len = 0;
	void *buf = nx_write_proto(m, &len, &d);
	if (!buf) {
		print_error("write: %s\n", d.msg);
		nx_diag_clear(&d);
		fail();
	}
	nx_module *r = nx_read_proto(buf, len, "rt.pb", &d);
	free(buf);
	if (!r) {
		print_error("read: %s\n", d.msg);
		nx_diag_clear(&d);
		fail();
	}
	return r;
}

static void assert_same_text(const nx_module *a, const nx_module *b)
{
	char *ta = nx_print_module(a, NULL), *tb = nx_print_module(b, NULL);
	if (strcmp(ta, tb) != 0)
		print_error("--- before\n%s\n--- after\n%s\n", ta, tb);
	assert_string_equal(ta, tb);
	free(ta);
	free(tb);
	char fa[33], fb[33];
	nx_fingerprint(a, fa);
	nx_fingerprint(b, fb);
	assert_string_equal(fa, fb);
}

static nx_kv *kvs(nx_arena *a, int n, const char *const *kv)
{
	nx_kv *v = nx_arena_alloc(a, sizeof(nx_kv) * (size_t)n);
	for (int i = 0; i < n; i++)
		v[i] = (nx_kv){nx_arena_strdup(a, kv[2 * i]), nx_arena_strdup(a, kv[2 * i + 1])};
	return v;
}

/* A module exercising most attributes: parameters with frontend attributes
 * and metadata, a constant with a non-default layout, broadcast, reduce with
 * a called computation, all-reduce with replica groups and sharding, a
 * custom-call, a tiled layout, aliasing and header attributes. */
static nx_module *build(void)
{
	nx_module *m = nx_module_new("built");
	nx_arena *a = nx_module_arena(m);
	nx_comp *add = nx_comp_new(m, "add_f32");
	nx_shape *sf = nx_shape_scalar(a, NX_F32);
	nx_inst *x = nx_inst_new(add, NX_OP_PARAMETER, sf, NULL, 0, "x");
	x->a.parameter_number = 0;
	nx_comp_add_param(add, x);
	nx_inst *y = nx_inst_new(add, NX_OP_PARAMETER, nx_shape_scalar(a, NX_F32), NULL, 0, "y");
	y->a.parameter_number = 1;
	nx_comp_add_param(add, y);
	nx_inst *xy[2] = {x, y};
	add->root = nx_inst_new(add, NX_OP_ADD, nx_shape_scalar(a, NX_F32), xy, 2, "sum");

	nx_comp *e = nx_comp_new(m, "main");
	e->is_entry = true;
	m->entry = e;
	int64_t d23[2] = {2, 3};
	nx_shape *s23 = nx_shape_array(a, NX_F32, 2, d23);
	nx_inst *p0 = nx_inst_new(e, NX_OP_PARAMETER, s23, NULL, 0, "p0");
	p0->a.parameter_number = 0;
	nx_comp_add_param(e, p0);
	p0->a.frontend_attributes = kvs(a, 2, (const char *[]){"zeta", "1", "alpha", "in0"});
	p0->a.nfrontend_attributes = 2;
	p0->a.metadata = kvs(a, 3, (const char *[]){"op_type", "xla__device_data", "op_name",
	                                             "p0", "source_line", "12"});
	p0->a.nmetadata = 3;

	nx_shape *c23 = nx_shape_array(a, NX_F32, 2, d23);
	c23->minor_to_major[0] = 0;
	c23->minor_to_major[1] = 1;
	nx_inst *c = nx_inst_new(e, NX_OP_CONSTANT, c23, NULL, 0, "c");
	c->a.literal = nx_literal_new(a, nx_shape_copy(a, c23));
	float vals[6] = {1, 2, 3, 4, 5, 6.5f};
	memcpy(c->a.literal->data, vals, sizeof vals);
	/* Metadata in an order OpMetadata cannot reproduce: kept verbatim. */
	c->a.metadata = kvs(a, 2, (const char *[]){"op_name", "b", "op_type", "a"});
	c->a.nmetadata = 2;

	nx_inst *pc[2] = {p0, c};
	nx_inst *mul = nx_inst_new(e, NX_OP_MULTIPLY, nx_shape_copy(a, s23), pc, 2, "mul");
	mul->a.sharding = "devices=[2,1]0,1";

	nx_inst *zero = nx_inst_new(e, NX_OP_CONSTANT, nx_shape_scalar(a, NX_F32), NULL, 0, "zero");
	zero->a.literal = nx_literal_new(a, nx_shape_scalar(a, NX_F32));
	nx_inst *rin[2] = {mul, zero};
	int64_t d2[1] = {2};
	nx_inst *red = nx_inst_new(e, NX_OP_REDUCE, nx_shape_array(a, NX_F32, 1, d2), rin, 2, "red");
	int64_t one = 1;
	red->a.dimensions = nx_ivec_dup(a, &one, 1);
	red->a.has_dimensions = true;
	nx_inst_set_called(red, &add, 1);
	red->a.sharding = "{replicated}, {maximal device=1}";
	red->a.unknown = kvs(a, 1, (const char *[]){"weird_attr", "{1,2}"});
	red->a.nunknown = 1;

	nx_inst *ar = nx_inst_new(e, NX_OP_ALL_REDUCE, nx_shape_array(a, NX_F32, 1, d2), &red, 1, "ar");
	nx_inst_set_called(ar, &add, 1);
	nx_replica_groups *g = &ar->a.replica_groups;
	g->present = true;
	g->ngroups = 2;
	g->groups = nx_arena_alloc(a, sizeof(nx_ivec) * 2);
	int64_t g0[2] = {0, 1}, g1[2] = {2, 3};
	g->groups[0] = nx_ivec_dup(a, g0, 2);
	g->groups[1] = nx_ivec_dup(a, g1, 2);
	ar->a.channel_id = 7;
	ar->a.sharding = "{replicated}, {maximal device=1} weird";

	nx_inst *bc = nx_inst_new(e, NX_OP_BROADCAST, nx_shape_copy(a, s23), &zero, 1, "bc");
	bc->a.has_dimensions = true; /* dimensions={} */
	nx_shape *tiled = nx_shape_copy(a, s23);
	tiled->layout_extra = ":T(8,128)(2,1)S(1)";
	nx_inst *cc = nx_inst_new(e, NX_OP_CUSTOM_CALL, tiled, &bc, 1, "cc");
	cc->a.custom_call_target = "AwsNeuronSoftmax";
	cc->a.api_version = "API_VERSION_UNSPECIFIED";
	cc->a.backend_config = "1";
	nx_shape *odd = nx_shape_copy(a, s23);
	odd->layout_extra = ":T(8,128)L(4)";
	nx_inst *cp = nx_inst_new(e, NX_OP_COPY, odd, &cc, 1, "cp");
	nx_inst *tin[2] = {ar, cp};
	nx_shape *ts[2] = {ar->shape, cp->shape};
	e->root = nx_inst_new(e, NX_OP_TUPLE, nx_shape_tuple(a, 2, ts), tin, 2, "out");

	m->naliases = 1;
	m->aliases = nx_arena_alloc(a, sizeof(nx_alias));
	int64_t zi = 0;
	m->aliases[0] = (nx_alias){nx_ivec_dup(a, &zi, 1), 0, {NULL, 0}, true, true};
	m->replica_count = 4;
	m->unknown = kvs(a, 1, (const char *[]){"allow_spmd_sharding_propagation_to_output", "{true}"});
	m->nunknown = 1;
	m->frontend_attributes = kvs(a, 1, (const char *[]){"k", "v"});
	m->nfrontend_attributes = 1;
	return m;
}

/* ---------------------------------------------------------------- tests */

static void test_fields(void **state)
{
	(void)state;
	nx_module *m = build();
	nx_module *r = roundtrip(m);
	assert_string_equal(r->name, "built");
	assert_int_equal(r->ncomps, 2);
	assert_ptr_equal(r->entry, r->comps[1]);
	assert_true(r->entry->is_entry);
	assert_int_equal(r->entry->id, m->entry->id);
	assert_int_equal(r->replica_count, 4);
	assert_int_equal(r->num_partitions, 0);
	assert_int_equal(r->nunknown, 1);
	assert_string_equal(r->unknown[0].value, "{true}");
	assert_int_equal(r->naliases, 1);
	assert_true(r->aliases[0].must_alias && r->aliases[0].kind_given);
	assert_null(r->entry_layout);

	nx_comp *e = r->entry;
	assert_int_equal(e->ninsts, m->entry->ninsts);
	for (int k = 0; k < e->ninsts; k++) {
		assert_string_equal(e->insts[k]->name, m->entry->insts[k]->name);
		assert_int_equal(e->insts[k]->id, m->entry->insts[k]->id);
		assert_int_equal(e->insts[k]->op, m->entry->insts[k]->op);
		assert_true(nx_shape_equal(e->insts[k]->shape, m->entry->insts[k]->shape));
	}
	nx_inst *p0 = nx_comp_find_inst(e, "p0");
	assert_ptr_equal(e->params[0], p0);
	/* Frontend attributes keep their order (not sorted). */
	assert_int_equal(p0->a.nfrontend_attributes, 2);
	assert_string_equal(p0->a.frontend_attributes[0].key, "zeta");
	assert_string_equal(p0->a.frontend_attributes[1].value, "in0");
	assert_int_equal(p0->a.nmetadata, 3);
	assert_string_equal(p0->a.metadata[2].value, "12");
	nx_inst *c = nx_comp_find_inst(e, "c");
	assert_int_equal(c->shape->minor_to_major[0], 0);
	assert_memory_equal(c->a.literal->data, m->entry->insts[1]->a.literal->data, 24);
	assert_string_equal(c->a.metadata[0].key, "op_name");
	nx_inst *red = nx_comp_find_inst(e, "red");
	assert_ptr_equal(red->called[0], r->comps[0]);
	assert_ptr_equal(red->operands[0], nx_comp_find_inst(e, "mul"));
	assert_true(red->a.has_dimensions);
	assert_int_equal(red->a.dimensions.v[0], 1);
	assert_string_equal(red->a.sharding, "{replicated}, {maximal device=1}");
	assert_string_equal(red->a.unknown[0].key, "weird_attr");
	nx_inst *ar = nx_comp_find_inst(e, "ar");
	assert_true(ar->a.replica_groups.present);
	assert_int_equal(ar->a.replica_groups.ngroups, 2);
	assert_int_equal(ar->a.replica_groups.groups[1].v[1], 3);
	assert_int_equal(ar->a.channel_id, 7);
	assert_string_equal(ar->a.sharding, "{replicated}, {maximal device=1} weird");
	nx_inst *bc = nx_comp_find_inst(e, "bc");
	assert_true(bc->a.has_dimensions);
	assert_int_equal(bc->a.dimensions.n, 0);
	nx_inst *cc = nx_comp_find_inst(e, "cc");
	assert_string_equal(cc->a.custom_call_target, "AwsNeuronSoftmax");
	assert_string_equal(cc->a.api_version, "API_VERSION_UNSPECIFIED");
	assert_string_equal(cc->a.backend_config, "1");
	assert_string_equal(cc->shape->layout_extra, ":T(8,128)(2,1)S(1)");
	assert_string_equal(nx_comp_find_inst(e, "cp")->shape->layout_extra, ":T(8,128)L(4)");
	assert_true(r->next_id > m->entry->root->id);
	assert_same_text(m, r);
	nx_module_free(m);
	nx_module_free(r);
}

static void drop_attrs(Xla__NxccAttr **v, size_t *n)
{
	for (size_t k = 0; k < *n; k++)
		xla__nxcc_attr__free_unpacked(v[k], NULL);
	*n = 0;
}

static void drop_text(Xla__NxccText **t)
{
	if (*t)
		xla__nxcc_text__free_unpacked(*t, NULL);
	*t = NULL;
}

/* The XLA fields alone (what a real dump has) carry the mapped forms. */
static void test_xla_fields(void **state)
{
	(void)state;
	nx_module *m = build();
	nx_diag d = {0};
	size_t len;
	uint8_t *buf = nx_write_proto(m, &len, &d);
	assert_non_null(buf);
	Xla__HloModuleProto *p = xla__hlo_module_proto__unpack(NULL, len, buf);
	assert_non_null(p);
	assert_int_equal(p->n_computations, 2);
	assert_int_equal(p->entry_computation_id, m->entry->id);
	Xla__HloComputationProto *e = p->computations[1];
	assert_int_equal(e->root_id, m->entry->root->id);
	assert_non_null(p->host_program_shape);
	assert_int_equal(p->host_program_shape->n_parameters, 1);
	Xla__HloInstructionProto *mul = e->instructions[2], *red = e->instructions[4],
	                         *ar = e->instructions[5], *cc = e->instructions[7];
	assert_string_equal(mul->opcode, "multiply");
	assert_int_equal(mul->sharding->type, XLA__OP_SHARDING__TYPE__OTHER);
	assert_int_equal(mul->sharding->n_tile_assignment_devices, 2);
	assert_null(mul->nxcc_sharding);
	assert_int_equal(red->sharding->type, XLA__OP_SHARDING__TYPE__TUPLE);
	assert_int_equal(red->sharding->tuple_shardings[1]->tile_assignment_devices[0], 1);
	assert_non_null(ar->nxcc_sharding);
	assert_int_equal(red->called_computation_ids[0], m->comps[0]->id);
	assert_int_equal(ar->collective_device_list->n_replica_groups, 2);
	assert_int_equal(ar->n_replica_groups, 2);
	assert_string_equal(cc->custom_call_target, "AwsNeuronSoftmax");
	assert_int_equal(cc->shape->layout->n_tiles, 2);
	assert_int_equal(cc->shape->layout->memory_space, 1);
	assert_null(cc->shape->layout->nxcc_layout_extra);
	Xla__HloInstructionProto *c = e->instructions[1];
	assert_int_equal(c->literal->n_f32s, 6);
	/* Layout {0,1}: physical (column-major) order. */
	assert_true(c->literal->f32s[1] == 4.0f && c->literal->f32s[2] == 2.0f);
	Xla__HloInstructionProto *p0 = e->instructions[0];
	assert_string_equal(p0->metadata->op_type, "xla__device_data");
	assert_int_equal(p0->metadata->source_line, 12);
	assert_int_equal(p0->n_nxcc_metadata, 0);
	assert_int_equal(c->n_nxcc_metadata, 2);
	assert_int_equal(p->input_output_alias->entries[0]->kind, XLA__KIND__MUST_ALIAS);

	/* Strip every nxcc_* extension: what a real XLA dump would give. */
	for (size_t ci = 0; ci < p->n_computations; ci++)
		for (size_t k = 0; k < p->computations[ci]->n_instructions; k++) {
			Xla__HloInstructionProto *ip = p->computations[ci]->instructions[k];
			drop_attrs(ip->nxcc_unknown_attributes, &ip->n_nxcc_unknown_attributes);
			drop_attrs(ip->nxcc_metadata, &ip->n_nxcc_metadata);
			drop_text(&ip->nxcc_sharding);
			drop_text(&ip->nxcc_api_version);
			ip->nxcc_dimensions_given = 0;
			if (ip->shape->layout)
				drop_text(&ip->shape->layout->nxcc_layout_extra);
		}
	drop_attrs(p->nxcc_unknown_attributes, &p->n_nxcc_unknown_attributes);
	p->nxcc_replica_count = 0;
	p->nxcc_no_entry_layout = false;
	size_t n2 = xla__hlo_module_proto__get_packed_size(p);
	uint8_t *b2 = malloc(n2);
	xla__hlo_module_proto__pack(p, b2);
	nx_module *r = nx_read_proto(b2, n2, "xla.pb", &d);
	assert_non_null(r);
	nx_inst *rc = nx_comp_find_inst(r->entry, "c");
	assert_string_equal(rc->a.metadata[0].key, "op_type"); /* XLA order now */
	assert_null(nx_comp_find_inst(r->entry, "ar")->a.sharding); /* could not map */
	assert_string_equal(nx_comp_find_inst(r->entry, "red")->a.sharding,
	                    "{replicated}, {maximal device=1}");
	assert_null(nx_comp_find_inst(r->entry, "cc")->a.api_version);
	assert_string_equal(nx_comp_find_inst(r->entry, "cp")->shape->layout_extra, ":T(8,128)");
	assert_non_null(r->entry_layout); /* host_program_shape is there */
	free(b2);
	nx_module_free(r);
	xla__hlo_module_proto__free_unpacked(p, NULL);
	free(buf);
	nx_module_free(m);
}

/* A while's computations and topk's k/largest as XLA writes them: body
 * first in called_computation_ids (kBodyComputationIndex = 0), k and largest
 * in fields 81 and 85. */
static void test_xla_while_topk(void **state)
{
	(void)state;
	nx_module *m = tu_parse(
		"HloModule w\n"
		"%cond (c: (s32[], f32[8])) -> pred[] {\n"
		"  %c = (s32[], f32[8]) parameter(0)\n  %i = s32[] get-tuple-element(%c), index=0\n"
		"  %n = s32[] constant(3)\n  ROOT %lt = pred[] compare(%i, %n), direction=LT\n}\n"
		"%body (b: (s32[], f32[8])) -> (s32[], f32[8]) {\n"
		"  %b = (s32[], f32[8]) parameter(0)\n  %j = s32[] get-tuple-element(%b), index=0\n"
		"  %one = s32[] constant(1)\n  %j1 = s32[] add(%j, %one)\n"
		"  %v = f32[8] get-tuple-element(%b), index=1\n  %v2 = f32[8] negate(%v)\n"
		"  ROOT %r = (s32[], f32[8]) tuple(%j1, %v2)\n}\n"
		"ENTRY %e (x: f32[8]) -> (f32[3], s32[3]) {\n"
		"  %x = f32[8] parameter(0)\n  %z = s32[] constant(0)\n"
		"  %t = (s32[], f32[8]) tuple(%z, %x)\n"
		"  %w = (s32[], f32[8]) while(%t), condition=%cond, body=%body\n"
		"  %y = f32[8] get-tuple-element(%w), index=1\n"
		"  ROOT %k = (f32[3], s32[3]) topk(%y), k=3, largest=false\n}\n");
	nx_diag d = {0};
	size_t len;
	uint8_t *buf = nx_write_proto(m, &len, &d);
	assert_non_null(buf);
	Xla__HloModuleProto *p = xla__hlo_module_proto__unpack(NULL, len, buf);
	assert_non_null(p);
	Xla__HloComputationProto *e = p->computations[2];
	Xla__HloInstructionProto *w = e->instructions[3], *k = e->instructions[5];
	assert_string_equal(w->opcode, "while");
	assert_int_equal(w->called_computation_ids[0], m->comps[1]->id); /* body */
	assert_int_equal(w->called_computation_ids[1], m->comps[0]->id); /* condition */
	assert_string_equal(k->opcode, "topk");
	assert_int_equal(k->k, 3);
	assert_false(k->largest);
	assert_int_equal(k->n_nxcc_unknown_attributes, 0);
	xla__hlo_module_proto__free_unpacked(p, NULL);
	nx_module *r = nx_read_proto(buf, len, "w.pb", &d);
	assert_non_null(r);
	nx_inst *rw = nx_comp_find_inst(r->entry, "w"), *rk = r->entry->root;
	assert_string_equal(rw->called[0]->name, "cond");
	assert_string_equal(rw->called[1]->name, "body");
	assert_int_equal(rk->a.nunknown, 2);
	assert_string_equal(rk->a.unknown[0].key, "k");
	assert_string_equal(rk->a.unknown[0].value, "3");
	assert_string_equal(rk->a.unknown[1].key, "largest");
	assert_string_equal(rk->a.unknown[1].value, "false");
	nx_module_free(r);
	free(buf);
	nx_module_free(m);

	/* a compare's order (field 102): TOTAL on a float compare reads as
	 * TOTALORDER, as the text's order=TOTAL */
	m = tu_parse("HloModule c\nENTRY e {\n  %a = f32[4] parameter(0)\n"
	             "  ROOT %t = pred[4] compare(%a, %a), direction=LT, type=FLOAT\n}\n");
	buf = nx_write_proto(m, &len, &d);
	assert_non_null(buf);
	p = xla__hlo_module_proto__unpack(NULL, len, buf);
	Xla__HloInstructionProto *cmp = p->computations[0]->instructions[1];
	assert_string_equal(cmp->comparison_type, "FLOAT");
	const char *orders[] = {"TOTAL", "PARTIAL", "SOME"};
	for (int o = 0; o < 3; o++) {
		cmp->comparison_order = (char *)orders[o];
		size_t n2 = xla__hlo_module_proto__get_packed_size(p);
		uint8_t *b2 = malloc(n2);
		xla__hlo_module_proto__pack(p, b2);
		r = nx_read_proto(b2, n2, "c.pb", &d);
		if (o < 2) {
			assert_non_null(r);
			assert_int_equal(r->entry->root->a.compare_type, o == 0 ? NX_CMPT_TOTALORDER : NX_CMPT_FLOAT);
			nx_module_free(r);
		} else {
			assert_null(r);
			assert_non_null(strstr(d.msg, "unknown comparison order 'SOME'"));
			nx_diag_clear(&d);
		}
		free(b2);
	}
	cmp->comparison_order = NULL;
	xla__hlo_module_proto__free_unpacked(p, NULL);
	free(buf);
	nx_module_free(m);
}

/* Literals of every storage class survive, including sub-byte and 16-bit. */
static void test_literals(void **state)
{
	(void)state;
	static const nx_type types[] = {NX_PRED, NX_S4, NX_S8, NX_U8, NX_S16, NX_U16, NX_F16,
	                                NX_BF16, NX_S32, NX_U32, NX_S64, NX_U64, NX_F32, NX_F64,
	                                NX_C64, NX_C128, NX_F8E4M3FN, NX_F8E5M2};
	nx_module *m = nx_module_new("lits");
	nx_arena *a = nx_module_arena(m);
	nx_comp *e = nx_comp_new(m, "main");
	m->entry = e;
	e->is_entry = true;
	int n = (int)(sizeof types / sizeof types[0]);
	nx_inst **cs = malloc(sizeof(nx_inst *) * (size_t)n);
	nx_shape **ss = malloc(sizeof(nx_shape *) * (size_t)n);
	for (int t = 0; t < n; t++) {
		int64_t dims[2] = {2, 3};
		nx_shape *s = nx_shape_array(a, types[t], 2, dims);
		nx_inst *c = nx_inst_new(e, NX_OP_CONSTANT, s, NULL, 0, nx_type_name(types[t]));
		c->a.literal = nx_literal_new(a, nx_shape_copy(a, s));
		uint8_t *p = c->a.literal->data;
		for (int64_t k = 0; k < c->a.literal->nbytes; k++)
			p[k] = (uint8_t)(k * 7 + t);
		if (types[t] == NX_PRED)
			for (int k = 0; k < 6; k++)
				p[k] = (uint8_t)(k & 1);
		if (types[t] == NX_S4)
			for (int k = 0; k < 6; k++)
				p[k] = (uint8_t)(int8_t)(k - 3);
		cs[t] = c;
		ss[t] = s;
	}
	e->root = nx_inst_new(e, NX_OP_TUPLE, nx_shape_tuple(a, n, ss), cs, n, "t");
	nx_module *r = roundtrip(m);
	for (int t = 0; t < n; t++) {
		nx_literal *x = cs[t]->a.literal, *y = r->entry->insts[t]->a.literal;
		assert_int_equal(x->nbytes, y->nbytes);
		assert_memory_equal(x->data, y->data, (size_t)x->nbytes);
	}
	free(cs);
	free(ss);
	nx_module_free(m);
	nx_module_free(r);
}

/* ---------------------------------------------------------------- corrupted */

static Xla__HloModuleProto *unpack_built(nx_module **m, uint8_t **buf)
{
	nx_diag d = {0};
	size_t len;
	*m = build();
	*buf = nx_write_proto(*m, &len, &d);
	assert_non_null(*buf);
	Xla__HloModuleProto *p = xla__hlo_module_proto__unpack(NULL, len, *buf);
	assert_non_null(p);
	return p;
}

static void expect_error(Xla__HloModuleProto *p, const char *needle, const char *inst)
{
	size_t n = xla__hlo_module_proto__get_packed_size(p);
	uint8_t *b = malloc(n);
	xla__hlo_module_proto__pack(p, b);
	nx_diag d = {0};
	nx_module *r = nx_read_proto(b, n, "bad.pb", &d);
	free(b);
	assert_null(r);
	assert_int_equal(d.status, NX_ERR_INPUT);
	if (!strstr(d.msg, needle))
		print_error("message: %s\n", d.msg);
	assert_non_null(strstr(d.msg, needle));
	assert_string_equal(d.file, "bad.pb");
	if (inst)
		assert_string_equal(d.inst, inst);
	nx_diag_clear(&d);
}

static void test_bad_bytes(void **state)
{
	(void)state;
	nx_module *m = build();
	nx_diag d = {0};
	size_t len;
	uint8_t *buf = nx_write_proto(m, &len, &d);
	/* Truncated. */
	assert_null(nx_read_proto(buf, len / 2, "t.pb", &d));
	assert_non_null(strstr(d.msg, "not a valid HloModuleProto"));
	nx_diag_clear(&d);
	/* Garbage. */
	uint8_t junk[64];
	for (size_t k = 0; k < sizeof junk; k++)
		junk[k] = (uint8_t)(0xff - k * 13);
	assert_null(nx_read_proto(junk, sizeof junk, "g.pb", &d));
	assert_non_null(strstr(d.msg, "not a valid HloModuleProto"));
	nx_diag_clear(&d);
	/* Deep nesting: tuple shapes inside tuple shapes. */
	enum { DEPTH = 5000 };
	uint8_t *deep = malloc(DEPTH * 4 + 16), *q = deep;
	/* computations(3) { instructions(2) { shape(3) { tuple_shapes(4) {...} } } } */
	size_t inner = 0;
	uint8_t *tmp = malloc(DEPTH * 4 + 16);
	for (int k = 0; k < DEPTH; k++) { /* wrap: 0x22 len ... (tuple_shapes = field 4) */
		uint8_t hdr[8];
		int h = 0;
		hdr[h++] = 0x22;
		size_t v = inner;
		do {
			hdr[h++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
			v >>= 7;
		} while (v);
		memmove(tmp + h, deep, inner);
		memcpy(tmp, hdr, (size_t)h);
		inner += (size_t)h;
		memcpy(deep, tmp, inner);
	}
	(void)q;
	/* Wrap as HloModuleProto.computations[0].instructions[0].shape: use the
	 * shape bytes as a ShapeProto inside field 3 of an instruction. */
	Xla__HloModuleProto *p = xla__hlo_module_proto__unpack(NULL, len, buf);
	Xla__HloInstructionProto *ip = p->computations[1]->instructions[0];
	ip->shape->n_tuple_shapes = 0;
	size_t n = xla__hlo_module_proto__get_packed_size(p);
	uint8_t *b = malloc(n + inner + 64);
	xla__hlo_module_proto__pack(p, b);
	/* Append the deep shape as another shape field (3) of an instruction in an
	 * extra computation: HloModuleProto field 3 -> HloComputationProto field 2
	 * -> HloInstructionProto field 3. */
	uint8_t *w = b + n;
	size_t l3 = inner, l2 = 1 + 3 + l3, l1 = 1 + 3 + l2;
	*w++ = 0x1a; /* computations */
	*w++ = (uint8_t)(0x80 | (l1 & 0x7f)); *w++ = (uint8_t)(0x80 | ((l1 >> 7) & 0x7f)); *w++ = (uint8_t)(l1 >> 14);
	*w++ = 0x12; /* instructions */
	*w++ = (uint8_t)(0x80 | (l2 & 0x7f)); *w++ = (uint8_t)(0x80 | ((l2 >> 7) & 0x7f)); *w++ = (uint8_t)(l2 >> 14);
	*w++ = 0x1a; /* shape */
	*w++ = (uint8_t)(0x80 | (l3 & 0x7f)); *w++ = (uint8_t)(0x80 | ((l3 >> 7) & 0x7f)); *w++ = (uint8_t)(l3 >> 14);
	memcpy(w, deep, inner);
	w += inner;
	assert_null(nx_read_proto(b, (size_t)(w - b), "deep.pb", &d));
	assert_non_null(strstr(d.msg, "nested deeper"));
	nx_diag_clear(&d);
	free(b);
	free(tmp);
	free(deep);
	xla__hlo_module_proto__free_unpacked(p, NULL);
	free(buf);
	nx_module_free(m);
}

static void test_bad_content(void **state)
{
	(void)state;
	nx_module *m;
	uint8_t *buf;
	Xla__HloModuleProto *p = unpack_built(&m, &buf);
	Xla__HloComputationProto *e = p->computations[1];
	Xla__HloInstructionProto *mul = e->instructions[2];

	/* Dangling operand id. */
	int64_t saved = mul->operand_ids[1];
	mul->operand_ids[1] = 999999;
	expect_error(p, "refers to id 999999", "mul");
	mul->operand_ids[1] = saved;

	/* Unknown opcode. */
	char *op = mul->opcode;
	mul->opcode = "frobnicate";
	expect_error(p, "unknown opcode 'frobnicate'", "mul");
	mul->opcode = op;

	/* Literal size does not match the shape. */
	Xla__HloInstructionProto *c = e->instructions[1];
	c->literal->n_f32s = 5;
	expect_error(p, "has 5 elements, expected 6", "c");
	c->literal->n_f32s = 6;

	/* Dangling computation id. */
	Xla__HloInstructionProto *red = e->instructions[4];
	saved = red->called_computation_ids[0];
	red->called_computation_ids[0] = 4242;
	expect_error(p, "calls computation id 4242", "red");
	/* Call cycle: main's reduce calls main. */
	red->called_computation_ids[0] = e->id;
	expect_error(p, "call cycle", "red");
	red->called_computation_ids[0] = saved;

	/* Missing root. */
	int64_t root = e->root_id;
	e->root_id = 123456;
	expect_error(p, "root id 123456", NULL);
	e->root_id = root;

	/* Cycle: p0 -> mul -> ... make mul an operand of the constant. */
	Xla__HloInstructionProto *cst = e->instructions[1];
	int64_t cid = mul->id;
	cst->n_operand_ids = 1;
	cst->operand_ids = &cid;
	expect_error(p, "cycle", NULL);
	cst->n_operand_ids = 0;
	cst->operand_ids = NULL;

	/* Bad shapes: layout that is not a permutation, unknown element type. */
	mul->shape->layout->minor_to_major[0] = 1;
	mul->shape->layout->minor_to_major[1] = 1;
	expect_error(p, "not a permutation", "mul");
	mul->shape->layout->minor_to_major[0] = 0;
	mul->shape->element_type = 99;
	expect_error(p, "unknown element type 99", "mul");
	mul->shape->element_type = XLA__PRIMITIVE_TYPE__F32;
	int64_t neg = mul->shape->dimensions[0];
	mul->shape->dimensions[0] = -5;
	expect_error(p, "negative dimension", "mul");
	mul->shape->dimensions[0] = neg;

	/* Still reads after all the restorations. */
	size_t n = xla__hlo_module_proto__get_packed_size(p);
	uint8_t *b = malloc(n);
	xla__hlo_module_proto__pack(p, b);
	nx_diag d = {0};
	nx_module *r = nx_read_proto(b, n, "ok.pb", &d);
	assert_non_null(r);
	nx_module_free(r);
	free(b);
	xla__hlo_module_proto__free_unpacked(p, NULL);
	free(buf);
	nx_module_free(m);
}

/* Deterministic byte mutations of a valid proto: the reader must either
 * refuse with a diagnostic or give a module the writer can write again. */
static void test_mutations(void **state)
{
	(void)state;
	nx_module *m = build();
	nx_diag d = {0};
	size_t len;
	uint8_t *buf = nx_write_proto(m, &len, &d);
	uint8_t *b = malloc(len);
	uint64_t x = 0x9e3779b97f4a7c15u;
	int refused = 0, read = 0;
	for (int it = 0; it < 3000; it++) {
		memcpy(b, buf, len);
		for (int k = 0; k < 1 + it % 4; k++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			b[x % len] = (uint8_t)(x >> 32);
		}
		nx_module *r = nx_read_proto(b, len - (it % 7 == 0 ? x % 8 : 0), "mut.pb", &d);
		if (!r) {
			assert_non_null(d.msg);
			nx_diag_clear(&d);
			refused++;
			continue;
		}
		read++;
		size_t l2;
		void *again = nx_write_proto(r, &l2, &d);
		assert_non_null(again);
		free(again);
		nx_module_free(r);
	}
	assert_true(refused > 0 && read > 0);
	free(b);
	free(buf);
	nx_module_free(m);
}

/* ---------------------------------------------------------------- corpus */

static int corpus_file(const char *path, int *skipped)
{
	size_t len;
	char *text = tu_read(path, &len);
	if (!text)
		return 0;
	nx_diag d = {0};
	nx_module *m = nx_read_text(text, len, path, &d);
	free(text);
	if (!m) {
		if (d.msg && strstr(d.msg, "not implemented")) {
			(*skipped)++;
			nx_diag_clear(&d);
			return 0;
		}
		print_error("%s: text reader: %s\n", path, d.msg);
		nx_diag_clear(&d);
		return 1;
	}
	size_t plen = 0;
	void *pb = nx_write_proto(m, &plen, &d);
	if (!pb) {
		print_error("%s: write: %s\n", path, d.msg);
		nx_diag_clear(&d);
		nx_module_free(m);
		return 1;
	}
	nx_module *r = nx_read_proto(pb, plen, path, &d);
	free(pb);
	int bad = 0;
	if (!r) {
		print_error("%s: read back: %s\n", path, d.msg);
		nx_diag_clear(&d);
		bad = 1;
	} else {
		char *ta = nx_print_module(m, NULL), *tb = nx_print_module(r, NULL);
		char fa[33], fb[33];
		nx_fingerprint(m, fa);
		nx_fingerprint(r, fb);
		if (strcmp(ta, tb) != 0 || strcmp(fa, fb) != 0) {
			/* Show the first differing line. */
			const char *x = ta, *y = tb;
			while (*x && *x == *y)
				x++, y++;
			while (x > ta && x[-1] != '\n')
				x--, y--;
			print_error("%s: round trip differs:\n  text:  %.300s\n  proto: %.300s\n", path, x, y);
			bad = 1;
		}
		free(ta);
		free(tb);
		nx_module_free(r);
	}
	nx_module_free(m);
	return bad;
}

static void test_corpus(void **state)
{
	(void)state;
	char dir[4096], path[8192];
	int bad = 0, done = 0, skipped = 0;
	char **v;
	static const char *const dirs[] = {"hlo/torch-neuronx", "hlo/jax"};
	for (int d = 0; d < 2; d++) {
		snprintf(dir, sizeof dir, "%s/%s", tu_corpus(), dirs[d]);
		int n = tu_list(dir, ".hlo", &v);
		for (int i = 0; i < n; i++) {
			snprintf(path, sizeof path, "%s/%s", dir, v[i]);
			bad += corpus_file(path, &skipped);
			done++;
		}
		tu_list_free(v, n);
	}
	snprintf(dir, sizeof dir, "%s/xla-evaluator", tu_corpus());
	DIR *dd = opendir(dir);
	struct dirent *de;
	while (dd && (de = readdir(dd))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "%s/%s/module.hlo", dir, de->d_name);
		FILE *f = fopen(path, "rb");
		if (!f)
			continue;
		fclose(f);
		bad += corpus_file(path, &skipped);
		done++;
	}
	if (dd)
		closedir(dd);
	if (done == 0)
		skip();
	if (skipped == done) {
		print_message("corpus round trip skipped: the text reader is not merged yet\n");
		skip();
	}
	print_message("corpus: %d modules, %d differ\n", done, bad);
	assert_int_equal(bad, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fields),
		cmocka_unit_test(test_xla_fields),
		cmocka_unit_test(test_xla_while_topk),
		cmocka_unit_test(test_literals),
		cmocka_unit_test(test_bad_bytes),
		cmocka_unit_test(test_bad_content),
		cmocka_unit_test(test_mutations),
		cmocka_unit_test(test_corpus),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
