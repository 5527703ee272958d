/* tests/fuzz/harness.h — the bodies of the fuzz targets, shared by the
 * libFuzzer drivers (tests/fuzz/fuzz_*.c) and the regression replay test
 * (tests/unit/test_fuzz_regress.c).
 *
 * Each function takes arbitrary bytes and returns 0. A refusal with a
 * diagnostic is fine; a crash, a sanitizer report, a leak or a broken
 * round trip is a bug, reported by abort() after printing what differs. */
#ifndef NX_FUZZ_HARNESS_H
#define NX_FUZZ_HARNESS_H

#include "backend/target/neff.h"
#include "ir/ir.h"
#include "ir/npy.h"
#include "runtime-stub/rt.h"
#include "tests/unit/neff_prog.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline void fz_fail(const char *what, const char *a, const char *b)
{
	fprintf(stderr, "fuzz: %s\n--- first ---\n%s\n--- second ---\n%s\n", what, a ? a : "(null)",
	        b ? b : "(null)");
	abort();
}

static inline char *fz_diag_text(nx_diag *d)
{
	char *s = nx_diag_format(d);
	nx_diag_clear(d);
	return s;
}

/* read -> verify -> print -> read -> print: the printed text must read back
 * and print identically (print -> read -> print is a fixed point). */
static inline int nx_fuzz_text(const uint8_t *data, size_t len)
{
	nx_diag d = {0};
	nx_module *m = nx_read_text((const char *)data, len, "fuzz.hlo", &d);
	if (!m) {
		nx_diag_clear(&d);
		return 0;
	}
	(void)nx_verify_module(m, &d);
	nx_diag_clear(&d);
	char *p1 = nx_print_module(m, NULL);
	nx_module_free(m);
	if (!p1)
		fz_fail("nx_print_module returned NULL", NULL, NULL);
	nx_module *m2 = nx_read_text(p1, strlen(p1), "printed.hlo", &d);
	if (!m2) {
		char *s = fz_diag_text(&d);
		fz_fail("printed text does not read back", p1, s);
	}
	char *p2 = nx_print_module(m2, NULL);
	nx_module_free(m2);
	if (!p2 || strcmp(p1, p2) != 0)
		fz_fail("print -> read -> print is not a fixed point", p1, p2);
	free(p1);
	free(p2);
	return 0;
}

/* read_proto -> write_proto -> read_proto: the re-read must succeed and
 * print the same text as the first module. */
static inline int nx_fuzz_proto(const uint8_t *data, size_t len)
{
	nx_diag d = {0};
	nx_module *m = nx_read_proto(data, len, "fuzz.pb", &d);
	if (!m) {
		nx_diag_clear(&d);
		return 0;
	}
	(void)nx_verify_module(m, &d);
	nx_diag_clear(&d);
	char *p1 = nx_print_module(m, NULL);
	size_t blen = 0;
	void *bytes = nx_write_proto(m, &blen, &d);
	nx_module_free(m);
	if (!bytes) {
		/* A module the reader accepted must be writable. */
		char *s = fz_diag_text(&d);
		fz_fail("nx_write_proto refused a module nx_read_proto accepted", p1, s);
	}
	nx_module *m2 = nx_read_proto(bytes, blen, "written.pb", &d);
	free(bytes);
	if (!m2) {
		char *s = fz_diag_text(&d);
		fz_fail("written proto does not read back", p1, s);
	}
	char *p2 = nx_print_module(m2, NULL);
	nx_module_free(m2);
	if (!p1 || !p2 || strcmp(p1, p2) != 0)
		fz_fail("proto read -> write -> read changed the module", p1, p2);
	free(p1);
	free(p2);
	return 0;
}

/* parse -> print -> parse -> print: same text both times. */
static inline int nx_fuzz_literal(const uint8_t *data, size_t len)
{
	nx_arena a;
	nx_arena_init(&a);
	nx_diag d = {0};
	nx_literal *l = nx_parse_literal(&a, (const char *)data, len, &d);
	if (!l) {
		nx_diag_clear(&d);
		nx_arena_free(&a);
		return 0;
	}
	char *p1 = nx_print_literal(l);
	if (!p1)
		fz_fail("nx_print_literal returned NULL", NULL, NULL);
	nx_literal *l2 = nx_parse_literal(&a, p1, strlen(p1), &d);
	if (!l2) {
		char *s = fz_diag_text(&d);
		fz_fail("printed literal does not parse back", p1, s);
	}
	char *p2 = nx_print_literal(l2);
	if (!p2 || strcmp(p1, p2) != 0)
		fz_fail("literal print -> parse -> print is not a fixed point", p1, p2);
	free(p1);
	free(p2);
	nx_arena_free(&a);
	return 0;
}

/* The loader's integrity checks (payload size, sha256, tar checksums) would
 * stop almost every mutation at the door; recompute them so that mutations
 * reach the section parsers. Works on a private copy. */
static inline void fz_neff_fixup(uint8_t *b, size_t len)
{
	if (len < NX_NEFF_HEADER_SIZE)
		return;
	uint64_t pl = len - NX_NEFF_HEADER_SIZE;
	for (int i = 0; i < 8; i++)
		b[NX_NEFF_OFF_PAYLOAD_SIZE + i] = (uint8_t)(pl >> (8 * i));
	size_t off = NX_NEFF_HEADER_SIZE;
	while (off + 512 <= len && b[off]) {
		uint8_t *h = b + off;
		memset(h + 148, ' ', 8);
		unsigned sum = 0;
		for (int i = 0; i < 512; i++)
			sum += h[i];
		char tmp[8];
		snprintf(tmp, sizeof tmp, "%06o", sum & 0777777u);
		memcpy(h + 148, tmp, 6);
		h[154] = 0;
		h[155] = ' ';
		char sz[13];
		memcpy(sz, h + 124, 12);
		sz[12] = 0;
		unsigned long long n = strtoull(sz, NULL, 8);
		if (n > len)
			break;
		off += 512 + (size_t)(n + 511) / 512 * 512;
	}
	nx_sha256(b + NX_NEFF_HEADER_SIZE, (size_t)pl, b + NX_NEFF_OFF_SHA256);
	nx_neff_seal_header(b);
}

/* Load; on success run the simulator on zeroed inputs with a small
 * instruction budget. */
static inline void fz_neff_run(const uint8_t *b, size_t len)
{
	nx_diag d = {0};
	nx_neff *n = nx_rt_load_bytes(b, len, "fuzz.neff", NULL, &d);
	if (!n) {
		nx_diag_clear(&d);
		return;
	}
	/* Tensors lie inside the HBM size the loader checked (up to the target's
	 * 16 GiB): skip running programs whose simulated HBM would exceed the
	 * fuzzer's memory limit. */
	if (n->hbm_size <= (64 << 20)) {
		const void **ins = calloc((size_t)n->ninputs + 1, sizeof *ins);
		void **outs = calloc((size_t)n->noutputs + 1, sizeof *outs);
		for (int i = 0; i < n->ninputs; i++)
			ins[i] = calloc((size_t)n->inputs[i].bytes + 1, 1);
		for (int i = 0; i < n->noutputs; i++)
			outs[i] = calloc((size_t)n->outputs[i].bytes + 1, 1);
		nx_rt_opts o = {0};
		o.max_steps = 20000;
		nx_rt_stats st;
		(void)nx_rt_run(n, (const void *const *)ins, (void *const *)outs, &o, &st, &d);
		nx_diag_clear(&d);
		for (int i = 0; i < n->ninputs; i++)
			free((void *)ins[i]);
		for (int i = 0; i < n->noutputs; i++)
			free(outs[i]);
		free(ins);
		free(outs);
	}
	nx_neff_free(n);
}

/* Load (with the integrity fields recomputed unless the first byte after the
 * header says otherwise: both the checks and what lies behind them get
 * exercised); on success run the simulator on zeroed inputs with a small
 * instruction budget. */
static inline int nx_fuzz_neff(const uint8_t *data, size_t len)
{
	uint8_t *b = malloc(len ? len : 1);
	memcpy(b, data, len);
	/* Even lengths get fixed up: mutations of the checked fields themselves
	 * stay reachable through odd lengths. */
	if (len % 2 == 0)
		fz_neff_fixup(b, len);
	fz_neff_run(b, len);
	free(b);
	return 0;
}

/* The .neff's sg00/def.json replaced by name (with the tar sizes and the
 * integrity fields recomputed); malloc'd, *out_len set. */
static inline uint8_t *fz_neff_replace(const uint8_t *b, size_t len, const char *name, const uint8_t *data,
                                       size_t dlen, size_t *out_len)
{
	uint8_t *o = calloc(len + dlen + 1024, 1);
	size_t off = NX_NEFF_HEADER_SIZE, w = NX_NEFF_HEADER_SIZE;
	memcpy(o, b, NX_NEFF_HEADER_SIZE);
	while (off + 512 <= len && b[off]) {
		char sz[13];
		memcpy(sz, b + off + 124, 12);
		sz[12] = 0;
		size_t n = (size_t)strtoull(sz, NULL, 8), span = 512 + (n + 511) / 512 * 512;
		if (span > len - off)
			break;
		if (strncmp((const char *)b + off, name, 100) == 0) {
			memcpy(o + w, b + off, 512);
			snprintf((char *)o + w + 124, 12, "%011llo", (unsigned long long)dlen);
			memcpy(o + w + 512, data, dlen);
			w += 512 + (dlen + 511) / 512 * 512;
		} else {
			memcpy(o + w, b + off, span);
			w += span;
		}
		off += span;
	}
	memcpy(o + w, b + off, len - off); /* the end-of-archive blocks */
	w += len - off;
	fz_neff_fixup(o, w);
	*out_len = w;
	return o;
}

/* A small valid program (tests/unit/neff_prog.h): input a [128,16] copied to
 * output o through SBUF. */
static inline uint8_t *fz_neff_template(size_t *len)
{
	tp_streams *s = calloc(1, sizeof *s);
	tp_dma(s, tp_sb(NX_DT_F32, 128, 0, 16), tp_hbm(NX_DT_F32, 0, 128, 16, 16), 0, 0);
	tp_wait(s, NX_ENG_SP, 0, 1);
	tp_dma(s, tp_hbm(NX_DT_F32, 128 * 16 * 4, 128, 16, 16), tp_sb(NX_DT_F32, 128, 0, 16), 0, 1);
	nx_neff_tensor in = tp_tensor("a", NX_DT_F32, 128, 16, 0);
	nx_neff_tensor out = tp_tensor("o", NX_DT_F32, 128, 16, 128 * 16 * 4);
	uint8_t *b = tp_neff(s, &in, 1, &out, 1, 2 * 128 * 16 * 4, 4, len);
	free(s);
	if (!b)
		fz_fail("cannot build the .neff template", NULL, NULL);
	return b;
}

/* The bytes are sg00/def.json of an otherwise valid .neff (the template's
 * instruction streams): loaded and, when it loads, run. */
static inline int nx_fuzz_defjson(const uint8_t *data, size_t len)
{
	static uint8_t *tpl;
	static size_t tlen;
	if (!tpl)
		tpl = fz_neff_template(&tlen);
	size_t n;
	uint8_t *b = fz_neff_replace(tpl, tlen, "sg00/def.json", data, len, &n);
	fz_neff_run(b, n);
	free(b);
	return 0;
}

/* .npy bytes; the first byte picks the type asked for (or none). What reads
 * must write and read back to the same shape and bytes. */
static inline int nx_fuzz_npy(const uint8_t *data, size_t len)
{
	if (len < 1)
		return 0;
	nx_type want = data[0] % (NX_TYPE_COUNT + 1) == NX_TYPE_COUNT ? NX_TYPE_INVALID : (nx_type)(data[0] % (NX_TYPE_COUNT + 1));
	nx_arena a;
	nx_arena_init(&a);
	nx_diag d = {0};
	nx_literal *l = nx_npy_read(&a, data + 1, len - 1, want, &d);
	if (!l) {
		nx_diag_clear(&d);
		nx_arena_free(&a);
		return 0;
	}
	size_t wlen = 0;
	void *w = nx_npy_write(l, &wlen);
	if (!w)
		fz_fail("nx_npy_write refused a literal nx_npy_read made", NULL, NULL);
	nx_literal *l2 = nx_npy_read(&a, w, wlen, l->shape->type, &d);
	if (!l2) {
		char *s = fz_diag_text(&d);
		fz_fail("written .npy does not read back", NULL, s);
	}
	if (!nx_shape_equal(l->shape, l2->shape) || l->nbytes != l2->nbytes ||
	    (l->nbytes && memcmp(l->data, l2->data, (size_t)l->nbytes) != 0))
		fz_fail(".npy read -> write -> read changed the array", NULL, NULL);
	free(w);
	nx_arena_free(&a);
	return 0;
}

/* The HloProto wrapper XLA's tools write (hlo_module = field 1): the bytes
 * are wrapped as its hlo_module and go through the proto target. */
static inline int nx_fuzz_hloproto(const uint8_t *data, size_t len)
{
	uint8_t *b = malloc(len + 16);
	size_t n = 0, v = len;
	b[n++] = 0x0a; /* field 1, length-delimited */
	do {
		b[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
	memcpy(b + n, data, len);
	nx_fuzz_proto(b, n + len);
	free(b);
	return 0;
}

#endif
