/* tests/api/api_test.c — drives the installed library (nxcc.h, libnxcc.so)
 * the way an embedding program would. Built by tests/e2e/install_api.sh with
 * `pkg-config --cflags --libs nxcc` against a temporary DESTDIR.
 *   api_test MODEL.hlo OUT.neff CACHE_DIR
 * Compiles MODEL.hlo (writes the .neff to OUT.neff for a byte comparison with
 * nxcc compile), compiles it again through CACHE_DIR twice (miss, then hit
 * with the same bytes), runs it on the simulator with inputs of ones, checks
 * the diagnostics of a broken module and of a truncated .neff. */
#include <nxcc.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;
#define CHECK(c, ...) do { if (!(c)) { failures++; printf("FAIL %s:%d: ", __FILE__, __LINE__); printf(__VA_ARGS__); printf("\n"); } } while (0)

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *b = malloc((size_t)n + 1);
	*len = fread(b, 1, (size_t)n, f);
	fclose(f);
	return b;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: api_test MODEL.hlo OUT.neff CACHE_DIR\n");
		return 2;
	}
	CHECK(nxcc_api_version() == NXCC_API_VERSION, "api version %d", nxcc_api_version());
	printf("nxcc %s, API %d\n", nxcc_version(), nxcc_api_version());
	size_t hlen;
	char *hlo = slurp(argv[1], &hlen);
	CHECK(hlo != NULL, "cannot read %s", argv[1]);
	if (!hlo)
		return 1;

	nxcc_compile_result *r;
	int st = nxcc_compile(hlo, hlen, "model.hlo", "--framework XLA --target trn1 -O2", &r);
	size_t nlen;
	const void *neff = nxcc_compile_neff(r, &nlen);
	CHECK(st == NXCC_OK && neff && nlen > 1024, "compile: status %d, %zu bytes", st, nlen);
	CHECK(nxcc_compile_num_diagnostics(r) == 0, "diagnostics on success");
	FILE *o = fopen(argv[2], "wb");
	fwrite(neff, 1, nlen, o);
	fclose(o);

	/* through the cache: a miss, then a hit with the same bytes */
	char flags[4200];
	snprintf(flags, sizeof flags, "--target trn1 -O2 --cache-dir '%s'", argv[3]);
	nxcc_compile_result *c1, *c2;
	CHECK(nxcc_compile(hlo, hlen, "model.hlo", flags, &c1) == NXCC_OK, "cached compile 1");
	CHECK(nxcc_compile(hlo, hlen, "model.hlo", flags, &c2) == NXCC_OK, "cached compile 2");
	size_t l1, l2;
	const void *n1 = nxcc_compile_neff(c1, &l1), *n2 = nxcc_compile_neff(c2, &l2);
	CHECK(!nxcc_compile_cache_hit(c1) && nxcc_compile_cache_hit(c2), "cache: hit flags %d %d",
	      nxcc_compile_cache_hit(c1), nxcc_compile_cache_hit(c2));
	CHECK(l1 == nlen && l2 == nlen && !memcmp(n1, neff, nlen) && !memcmp(n2, neff, nlen),
	      "cached .neff differs (%zu, %zu vs %zu bytes)", l1, l2, nlen);
	nxcc_compile_result_free(c1);
	nxcc_compile_result_free(c2);

	/* run with inputs of ones */
	nxcc_program *p;
	nxcc_diagnostic d = {0};
	st = nxcc_program_load(neff, nlen, &p, &d);
	CHECK(st == NXCC_OK && p, "load: %d %s", st, d.message ? d.message : "");
	int ni = nxcc_program_num_inputs(p), no = nxcc_program_num_outputs(p);
	CHECK(ni == 7 && no == 5, "mlp_step has 7 inputs and 5 outputs, not %d and %d", ni, no);
	void **in = calloc((size_t)ni, sizeof *in), **out = calloc((size_t)no, sizeof *out);
	for (int i = 0; i < ni; i++) {
		int64_t b = nxcc_program_tensor_bytes(p, 0, i);
		CHECK(!strcmp(nxcc_program_tensor_dtype(p, 0, i), "f32"), "input %d is %s", i, nxcc_program_tensor_dtype(p, 0, i));
		in[i] = malloc((size_t)b);
		for (int64_t k = 0; k < b / 4; k++)
			((float *)in[i])[k] = 0.5f;
	}
	for (int i = 0; i < no; i++)
		out[i] = calloc(1, (size_t)nxcc_program_tensor_bytes(p, 1, i));
	double ns = 0;
	st = nxcc_run(p, (const void *const *)in, out, &ns, &d);
	CHECK(st == NXCC_OK && ns > 0, "run: %d %s, %.1f ns", st, d.message ? d.message : "", ns);
	/* out0: loss of a step of y = relu(x w1 + b1) w2 + b2 on constant data is finite and >= 0 */
	float loss = ((float *)out[0])[0];
	CHECK(isfinite(loss) && loss >= 0, "loss %g", loss);
	printf("ran %s: %d inputs, %d outputs, simulated %.3f us, out0 %s[%lld] = %g\n", "mlp_step", ni, no, ns / 1e3,
	       nxcc_program_tensor_name(p, 1, 0), (long long)nxcc_program_tensor_dim(p, 1, 0, 0), loss);
	CHECK(nxcc_program_tensor_name(p, 0, ni) == NULL && nxcc_program_tensor_bytes(p, 1, -1) == -1, "range checks");
	for (int i = 0; i < ni; i++)
		free(in[i]);
	for (int i = 0; i < no; i++)
		free(out[i]);
	free(in);
	free(out);
	nxcc_program_free(p);

	/* diagnostics as data: a module with an undefined operand */
	const char *bad = "HloModule m\n\nENTRY e {\n  p0 = f32[4] parameter(0)\n  ROOT a = f32[4] add(p0, p9)\n}\n";
	nxcc_compile_result *b;
	st = nxcc_compile(bad, strlen(bad), "bad.hlo", "--target trn1", &b);
	const nxcc_diagnostic *bd = nxcc_compile_diagnostic(b, 0);
	CHECK(st == NXCC_ERR_INPUT && nxcc_compile_status(b) == 1, "bad module: status %d", st);
	CHECK(nxcc_compile_neff(b, NULL) == NULL, "a .neff for a bad module");
	CHECK(bd && bd->code == 1 && bd->file && !strcmp(bd->file, "bad.hlo") && bd->line == 5 && bd->col > 0 &&
	          strstr(bd->message, "p9"),
	      "diagnostic: %s:%d:%d code %d: %s", bd && bd->file ? bd->file : "(null)", bd ? bd->line : 0,
	      bd ? bd->col : 0, bd ? bd->code : 0, bd ? bd->message : "(none)");
	if (bd)
		printf("diagnostic: %s:%d:%d: %s: %s\n", bd->file, bd->line, bd->col, bd->severity, bd->message);
	nxcc_compile_result_free(b);
	/* a bad flag */
	st = nxcc_compile(hlo, hlen, NULL, "--target vax", &b);
	CHECK(st == NXCC_ERR_INPUT && strstr(nxcc_compile_diagnostic(b, 0)->message, "vax"), "bad flag: %d", st);
	nxcc_compile_result_free(b);
	/* a truncated .neff is an error, not a crash */
	st = nxcc_program_load(neff, nlen / 2, &p, &d);
	CHECK(st == NXCC_ERR_INPUT && p == NULL && d.message, "truncated .neff: %d", st);
	nxcc_diagnostic_clear(&d);
	nxcc_compile_result_free(r);
	free(hlo);
	printf("%s\n", failures ? "api_test: FAILED" : "api_test: ok");
	return failures ? 1 : 0;
}
