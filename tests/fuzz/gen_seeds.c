/* tests/fuzz/gen_seeds.c — builds seed inputs for the fuzz targets from the
 * repository's own material (run by tests/fuzz/run.sh, output not committed).
 *   gen_seeds proto OUTDIR FILE.hlo...    HloModuleProto of each readable module
 *   gen_seeds literal OUTDIR FILE.hlo...  printed literal of each constant
 *   gen_seeds neff OUTDIR                 small programs from tests/unit/neff_prog.h
 *   gen_seeds defjson OUTDIR              their sg00/def.json (and the defjson target's template's)
 *   gen_seeds npy OUTDIR FILE.hlo...      .npy of each array constant, after the byte that
 *                                         picks the type the npy target asks for */
#include "ir/ir.h"
#include "tests/fuzz/harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int nout;

static void put(const char *dir, const char *kind, const void *b, size_t len)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s-%04d", dir, kind, nout++);
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(b, 1, len, f) != len) {
		fprintf(stderr, "gen_seeds: cannot write %s\n", path);
		exit(1);
	}
	fclose(f);
}

static nx_module *load(const char *path)
{
	nx_diag d = {0};
	nx_module *m = nx_read_file(path, &d);
	nx_diag_clear(&d);
	return m;
}

/* The data of tar entry name in a .neff (NULL when absent). */
static const uint8_t *tar_get(const uint8_t *b, size_t len, const char *name, size_t *n)
{
	size_t off = NX_NEFF_HEADER_SIZE;
	while (off + 512 <= len && b[off]) {
		char sz[13];
		memcpy(sz, b + off + 124, 12);
		sz[12] = 0;
		*n = (size_t)strtoull(sz, NULL, 8);
		if (*n > len - off - 512)
			return NULL;
		if (strncmp((const char *)b + off, name, 100) == 0)
			return b + off + 512;
		off += 512 + (*n + 511) / 512 * 512;
	}
	return NULL;
}

static void put_neff(const char *dir, bool defjson, const uint8_t *b, size_t len)
{
	size_t n;
	const uint8_t *j = defjson ? tar_get(b, len, "sg00/def.json", &n) : NULL;
	if (!defjson)
		put(dir, "neff", b, len);
	else if (j)
		put(dir, "def", j, n);
}

static void gen_neff(const char *dir, bool defjson)
{
	if (defjson) {
		size_t len;
		uint8_t *b = fz_neff_template(&len);
		put_neff(dir, true, b, len);
		free(b);
	}
	for (int variant = 0; variant < 3; variant++) {
		tp_streams *s = calloc(1, sizeof *s);
		int F = 16 << variant;
		tp_dma(s, tp_sb(NX_DT_F32, 128, 0, 64), tp_hbm(NX_DT_F32, 0, 128, 64, 64), 0, 0);
		tp_dma(s, tp_sb(NX_DT_F32, 128, 256, (uint32_t)F), tp_hbm(NX_DT_F32, 128 * 64 * 4, 128, (uint32_t)F, F), 1, 0);
		tp_wait(s, NX_ENG_PE, 0, 2);
		nx_insn *mm = tp_add(s, NX_ENG_PE, NX_I_MATMUL);
		mm->flags = NX_IF_START;
		mm->ap[0] = tp_ps(64, 0, (uint32_t)F);
		mm->ap[1] = tp_sb(NX_DT_F32, 128, 0, 64);
		mm->ap[2] = tp_sb(NX_DT_F32, 128, 256, (uint32_t)F);
		tp_signal(s, NX_ENG_PE, 1, 1);
		tp_wait(s, NX_ENG_ACT, 1, 1);
		if (variant > 0)
			tp_add(s, NX_ENG_DVE, NX_I_NOP);
		tp_add(s, NX_ENG_ACT, NX_I_NOP);
		nx_neff_tensor in[2] = {tp_tensor("a", NX_DT_F32, 128, 64, 0),
		                        tp_tensor("b", NX_DT_F32, 128, F, 128 * 64 * 4)};
		nx_neff_tensor out = tp_tensor("o", NX_DT_F32, 64, F, 128 * 64 * 4 + 128 * (int64_t)F * 4);
		size_t len;
		uint8_t *b = tp_neff(s, in, 2, &out, 1, 128 * 64 * 4 + 192 * (int64_t)F * 4, 4, &len);
		free(s);
		if (b) {
			put_neff(dir, defjson, b, len);
			free(b);
		}
	}
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: gen_seeds proto|literal|neff|defjson|npy OUTDIR [FILE...]\n");
		return 2;
	}
	const char *mode = argv[1], *dir = argv[2];
	if (strcmp(mode, "neff") == 0 || strcmp(mode, "defjson") == 0) {
		gen_neff(dir, strcmp(mode, "defjson") == 0);
		return 0;
	}
	for (int k = 3; k < argc; k++) {
		nx_module *m = load(argv[k]);
		if (!m)
			continue;
		if (strcmp(mode, "proto") == 0) {
			nx_diag d = {0};
			size_t len;
			void *b = nx_write_proto(m, &len, &d);
			nx_diag_clear(&d);
			if (b)
				put(dir, "pb", b, len);
			free(b);
		} else if (strcmp(mode, "npy") == 0) {
			for (int c = 0; c < m->ncomps; c++)
				for (int i = 0; i < m->comps[c]->ninsts; i++) {
					const nx_literal *l = m->comps[c]->insts[i]->a.literal;
					if (!l || !nx_shape_is_array(l->shape) || l->nbytes > 4096)
						continue;
					size_t len;
					uint8_t *b = nx_npy_write(l, &len);
					if (!b)
						continue;
					uint8_t *p = malloc(len + 1);
					p[0] = (uint8_t)l->shape->type;
					memcpy(p + 1, b, len);
					put(dir, "npy", p, len + 1);
					free(p);
					free(b);
				}
		} else {
			for (int c = 0; c < m->ncomps; c++)
				for (int i = 0; i < m->comps[c]->ninsts; i++) {
					const nx_inst *in = m->comps[c]->insts[i];
					if (!in->a.literal)
						continue;
					char *s = nx_print_literal(in->a.literal);
					if (s && strlen(s) < 4096)
						put(dir, "lit", s, strlen(s));
					free(s);
				}
		}
		nx_module_free(m);
	}
	return 0;
}
