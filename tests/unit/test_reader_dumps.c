/* tests/unit/test_reader_dumps.c — what real XLA dumps contain beyond the
 * plain module: the stack-frame tables (and the source locations they give),
 * elided constants, modules without an HloModule line. */
#include "tests/unit/testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *tables =
	"HloModule m, entry_computation_layout={(f32[2]{0})->f32[2]{0}}\n"
	"\n"
	"FileNames\n"
	"1 \"/src/train.py\"\n"
	"2 \"/src/model.py\"\n"
	"\n"
	"FunctionNames\n"
	"1 \"main\"\n"
	"2 \"Dense.__call__\"\n"
	"\n"
	"FileLocations\n"
	"1 {file_name_id=1 function_name_id=1 line=10 end_line=10 column=2 end_column=9}\n"
	"2 {file_name_id=2 function_name_id=2 line=42 end_line=43 column=5 end_column=20}\n"
	"\n"
	"StackFrames\n"
	"1 {file_location_id=1 parent_frame_id=1}\n"
	"2 {file_location_id=2 parent_frame_id=1}\n"
	"\n"
	"\n"
	"ENTRY %e (p: f32[2]) -> f32[2] {\n"
	"  %p = f32[2]{0} parameter(0)\n"
	"  ROOT %n = f32[2]{0} negate(f32[2]{0} %p), metadata={op_name=\"jit(f)/neg\" stack_frame_id=2}\n"
	"}\n"
	"\n";

static nx_module *read_ok(const char *text)
{
	nx_diag d = {0};
	nx_module *m = nx_read_text(text, strlen(text), "t.hlo", &d);
	if (!m) {
		char *s = nx_diag_format(&d);
		fail_msg("read failed: %s", s);
	}
	return m;
}

static char *read_err(const char *text)
{
	nx_diag d = {0};
	nx_module *m = nx_read_text(text, strlen(text), "t.hlo", &d);
	assert_null(m);
	char *s = nx_diag_format(&d);
	nx_diag_clear(&d);
	return s;
}

static void test_tables_read_print(void **state)
{
	(void)state;
	nx_module *m = read_ok(tables);
	assert_int_equal(m->stack.nfile_names, 2);
	assert_int_equal(m->stack.nfunction_names, 2);
	assert_int_equal(m->stack.nlocations, 2);
	assert_int_equal(m->stack.nframes, 2);
	assert_int_equal(m->stack.locations[1].line, 42);
	assert_int_equal(m->stack.locations[1].end_column, 20);
	/* the text writes the parent's id + 1: "parent_frame_id=1" is no caller */
	assert_int_equal(m->stack.frames[1].parent_frame_id, 0);
	/* the printer writes the tables back exactly as XLA does */
	char *p = nx_print_module(m, NULL);
	assert_string_equal(p, tables);
	free(p);
	/* no_metadata drops them with the metadata */
	nx_print_opts o = {.no_metadata = true};
	p = nx_print_module(m, &o);
	assert_null(strstr(p, "FileNames"));
	free(p);
	/* proto round trip keeps them */
	nx_diag d = {0};
	size_t n;
	void *pb = nx_write_proto(m, &n, &d);
	assert_non_null(pb);
	nx_module *m2 = nx_read_proto(pb, n, "x.pb", &d);
	assert_non_null(m2);
	p = nx_print_module(m2, NULL);
	assert_string_equal(p, tables);
	free(p);
	free(pb);
	nx_module_free(m2);
	nx_module_free(m);
}

static void test_source_of_instruction(void **state)
{
	(void)state;
	nx_module *m = read_ok(tables);
	char buf[256];
	assert_true(nx_inst_source(m, m->entry->root, buf, sizeof buf));
	assert_string_equal(buf, "jit(f)/neg at /src/model.py:42 (in Dense.__call__)");
	assert_false(nx_inst_source(m, m->entry->params[0], buf, sizeof buf));
	assert_string_equal(buf, "");
	nx_module_free(m);
	/* torch-xla style: source_file/source_line win over the tables */
	m = read_ok("HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n"
	            "  ROOT s = f32[2] sort(p), dimensions={0}, metadata={op_type=\"aten__sort\" op_name=\"aten__sort\" source_file=\"train.py\" source_line=42}\n}\n");
	assert_true(nx_inst_source(m, m->entry->root, buf, sizeof buf));
	assert_string_equal(buf, "aten__sort at train.py:42");
	nx_module_free(m);
}

static void test_tables_errors(void **state)
{
	(void)state;
	char *s = read_err("HloModule m\nFileNames\n1 \"a\"\n3 \"b\"\nENTRY e {\n  ROOT p = f32[] parameter(0)\n}\n");
	assert_non_null(strstr(s, "t.hlo:4:1: error: FileNames entry 3 out of order (expected 2)"));
	free(s);
	s = read_err("HloModule m\nStackFrames\n1 {file_location_id=4 parent_frame_id=1}\nENTRY e {\n  ROOT p = f32[] parameter(0)\n}\n");
	assert_non_null(strstr(s, "StackFrames entry 1 names location 4"));
	free(s);
	s = read_err("HloModule m\nStackFrames\n1 {file_location_id=0 parent_frame_id=0}\nENTRY e {\n  ROOT p = f32[] parameter(0)\n}\n");
	assert_non_null(strstr(s, "StackFrames entry 1: parent_frame_id 0, expected >= 1"));
	free(s);
	s = read_err("HloModule m\nFileLocations\n1 {file_name_id=0 colour=3}\nENTRY e {\n  ROOT p = f32[] parameter(0)\n}\n");
	assert_non_null(strstr(s, "unknown field 'colour' in a FileLocations entry"));
	free(s);
	/* a computation may still be called FileNames */
	nx_module *m = read_ok("HloModule m\nFileNames {\n  ROOT p = f32[] parameter(0)\n}\n");
	assert_string_equal(m->entry->name, "FileNames");
	nx_module_free(m);
}

static void test_headerless(void **state)
{
	(void)state;
	nx_diag d = {0};
	const char *t = "ENTRY %e (p: f32[2]) -> f32[2] {\n  %p = f32[2]{0} parameter(0)\n  ROOT %n = f32[2]{0} negate(%p)\n}\n";
	nx_module *m = nx_read_text(t, strlen(t), "dir/my_model.hlo.txt", &d);
	assert_non_null(m);
	assert_string_equal(m->name, "my_model");
	assert_string_equal(m->entry->name, "e");
	nx_module_free(m);
	/* a bare computation: the last one is the entry */
	t = "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n"
	    "main {\n  p = f32[4] parameter(0)\n  z = f32[] constant(0)\n  ROOT r = f32[] reduce(p, z), dimensions={0}, to_apply=add\n}\n";
	m = nx_read_text(t, strlen(t), NULL, &d);
	assert_non_null(m);
	assert_string_equal(m->name, "module");
	assert_string_equal(m->entry->name, "main");
	nx_module_free(m);
	char *s = read_err("garbage here\n");
	assert_non_null(strstr(s, "expected 'HloModule' or a computation at the start of the file, found 'garbage'"));
	free(s);
}

static void test_elided_constant(void **state)
{
	(void)state;
	nx_module *m = read_ok("HloModule m\nENTRY e {\n  c = f32[3,2]{1,0} constant({...})\n"
	                       "  i = s32[4]{0} constant({ ... })\n  ROOT t = (f32[3,2], s32[4]) tuple(c, i)\n}\n");
	assert_int_equal(m->nelided, 2);
	const nx_inst *c = m->entry->insts[0];
	const float *f = c->a.literal->data;
	float again[6];
	for (int k = 0; k < 6; k++) {
		assert_true(f[k] >= -1.0f && f[k] < 1.0f);
		again[k] = f[k];
	}
	assert_true(f[0] != f[1]); /* not a splat */
	const int32_t *iv = m->entry->insts[1]->a.literal->data;
	for (int k = 0; k < 4; k++)
		assert_int_equal(iv[k], 0);
	/* deterministic: the same values on a second read */
	char *p = nx_print_module(m, NULL);
	nx_module_free(m);
	m = read_ok("HloModule m\nENTRY e {\n  c = f32[3,2]{1,0} constant({...})\n  ROOT n = f32[3,2] negate(c)\n}\n");
	assert_memory_equal(m->entry->insts[0]->a.literal->data, again, sizeof again);
	nx_module_free(m);
	/* the printed module holds the values in full and reads back without elision */
	m = read_ok(p);
	assert_int_equal(m->nelided, 0);
	nx_module_free(m);
	free(p);
	char *s = read_err("HloModule m\nENTRY e {\n  ROOT c = f32[65536,65536] constant({...})\n}\n");
	assert_non_null(strstr(s, "larger than 1 GiB"));
	free(s);
}

/* HloProto { hlo_module = 1; buffer_assignment = 3 } around a module. */
static void test_hlo_proto_wrapper(void **state)
{
	(void)state;
	nx_module *m = read_ok(tables);
	nx_diag d = {0};
	size_t n;
	uint8_t *pb = nx_write_proto(m, &n, &d);
	assert_non_null(pb);
	uint8_t *w = malloc(n + 16);
	size_t k = 0, v = n;
	w[k++] = 0x0a;
	do {
		w[k++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
	memcpy(w + k, pb, n);
	k += n;
	w[k++] = 0x1a; /* buffer_assignment: an empty-ish message nxcc skips */
	w[k++] = 0x02;
	w[k++] = 0x08;
	w[k++] = 0x01;
	nx_module *m2 = nx_read_proto(w, k, "w.pb", &d);
	assert_non_null(m2);
	char *p1 = nx_print_module(m, NULL), *p2 = nx_print_module(m2, NULL);
	assert_string_equal(p1, p2);
	free(p1);
	free(p2);
	nx_module_free(m2);
	/* neither a module nor a wrapper: a clear error */
	uint8_t junk[] = {0x0a, 0x01, 'x'};
	assert_null(nx_read_proto(junk, sizeof junk, "j.pb", &d));
	print_message("junk proto: %s\n", d.msg);
	assert_non_null(d.msg);
	nx_diag_clear(&d);
	free(w);
	free(pb);
	nx_module_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tables_read_print),
		cmocka_unit_test(test_source_of_instruction),
		cmocka_unit_test(test_tables_errors),
		cmocka_unit_test(test_headerless),
		cmocka_unit_test(test_elided_constant),
		cmocka_unit_test(test_hlo_proto_wrapper),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
