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
#include "runtime-stub/rt.h"

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
	nx_diag d = {0};
	nx_neff *n = nx_rt_load_bytes(b, len, "fuzz.neff", NULL, &d);
	free(b);
	if (!n) {
		nx_diag_clear(&d);
		return 0;
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
	return 0;
}

#endif
