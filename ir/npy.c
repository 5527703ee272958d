/* ir/npy.c — .npy reader and writer (see ir/npy.h). */
#include "ir/npy.h"

#include "ir/file_atomic.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *nx_npy_descr(nx_type t)
{
	switch (t) {
	case NX_PRED: return "|b1";
	case NX_S8: return "|i1";
	case NX_U8: return "|u1";
	case NX_S16: return "<i2";
	case NX_U16: return "<u2";
	case NX_S32: return "<i4";
	case NX_U32: return "<u4";
	case NX_S64: return "<i8";
	case NX_U64: return "<u8";
	case NX_F16: return "<f2";
	case NX_F32: return "<f4";
	case NX_F64: return "<f8";
	case NX_C64: return "<c8";
	case NX_C128: return "<c16";
	case NX_BF16: return "<u2";
	default:
		if (nx_type_is_float(t) || nx_type_is_int(t)) /* f8, f4, sub-byte ints: raw bytes */
			return nx_type_kind_of(t) == NX_KIND_SINT ? "|i1" : "|u1";
		return NULL;
	}
}

void *nx_npy_write(const nx_literal *l, size_t *len)
{
	const nx_shape *s = l->shape;
	const char *descr = nx_npy_descr(s->type);
	if (!descr || !nx_shape_is_array(s))
		return NULL;
	char hdr[8192];
	int n = snprintf(hdr, sizeof(hdr), "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
	for (int d = 0; d < s->rank; d++)
		n += snprintf(hdr + n, sizeof(hdr) - (size_t)n, "%lld%s", (long long)s->dims[d],
		              s->rank == 1 ? "," : d + 1 < s->rank ? ", " : "");
	n += snprintf(hdr + n, sizeof(hdr) - (size_t)n, "), }");
	bool v2 = n + 11 > 65535;
	size_t pre = v2 ? 12 : 10;
	size_t total = (pre + (size_t)n + 1 + 63) / 64 * 64; /* header incl. '\n', 64-aligned */
	size_t hlen = total - pre;
	size_t nbytes = (size_t)l->nbytes;
	uint8_t *out = malloc(total + nbytes);
	if (!out)
		return NULL;
	memcpy(out, "\x93NUMPY", 6);
	out[6] = v2 ? 2 : 1;
	out[7] = 0;
	if (v2) {
		for (int b = 0; b < 4; b++)
			out[8 + b] = (uint8_t)(hlen >> (8 * b));
	} else {
		out[8] = (uint8_t)(hlen & 0xff);
		out[9] = (uint8_t)(hlen >> 8);
	}
	memcpy(out + pre, hdr, (size_t)n);
	memset(out + pre + n, ' ', hlen - (size_t)n - 1);
	out[total - 1] = '\n';
	if (nbytes)
		memcpy(out + total, l->data, nbytes);
	*len = total + nbytes;
	return out;
}

static const char *find_key(const char *h, const char *key)
{
	const char *p = strstr(h, key);
	if (!p)
		return NULL;
	p += strlen(key);
	while (*p == ' ' || *p == ':' || *p == '\'' || *p == '"')
		p++;
	return p;
}

/* The type a descr denotes on its own (bf16/f8 need `want`). */
static nx_type descr_type(const char *d)
{
	static const struct { const char *s; nx_type t; } tab[] = {
		{"b1", NX_PRED}, {"i1", NX_S8}, {"u1", NX_U8}, {"i2", NX_S16}, {"u2", NX_U16},
		{"i4", NX_S32}, {"u4", NX_U32}, {"i8", NX_S64}, {"u8", NX_U64}, {"f2", NX_F16},
		{"f4", NX_F32}, {"f8", NX_F64}, {"c8", NX_C64}, {"c16", NX_C128},
	};
	char order = d[0];
	if (order != '<' && order != '|' && order != '=')
		return NX_TYPE_INVALID;
	for (size_t k = 0; k < sizeof(tab) / sizeof(tab[0]); k++) {
		size_t n = strlen(tab[k].s);
		if (!strncmp(d + 1, tab[k].s, n) && (d[1 + n] == '\'' || d[1 + n] == '"')) {
			/* multi-byte types must be little-endian ('<', or '=' on this host) */
			if (order == '|' && n > 0 && tab[k].s[1] != '1')
				return NX_TYPE_INVALID;
			return tab[k].t;
		}
	}
	return NX_TYPE_INVALID;
}

nx_literal *nx_npy_read(nx_arena *a, const void *data, size_t len, nx_type want, nx_diag *d)
{
	const uint8_t *p = data;
	if (len < 10 || memcmp(p, "\x93NUMPY", 6) != 0) {
		nx_diag_set(d, NX_ERR_INPUT, NULL, 0, 0, "not a .npy file (bad magic)");
		return NULL;
	}
	int ver = p[6];
	size_t pre, hlen;
	if (ver == 1) {
		pre = 10, hlen = (size_t)p[8] | (size_t)p[9] << 8;
	} else if (ver == 2 || ver == 3) {
		if (len < 12) {
			nx_diag_set(d, NX_ERR_INPUT, NULL, 0, 0, "truncated .npy header");
			return NULL;
		}
		pre = 12, hlen = (size_t)p[8] | (size_t)p[9] << 8 | (size_t)p[10] << 16 | (size_t)p[11] << 24;
	} else {
		nx_diag_set(d, NX_ERR_INPUT, NULL, 0, 0, ".npy format version %d is not supported", ver);
		return NULL;
	}
	if (pre + hlen > len) {
		nx_diag_set(d, NX_ERR_INPUT, NULL, 0, 0, "truncated .npy header");
		return NULL;
	}
	char *h = nx_arena_strndup(a, (const char *)p + pre, hlen);
	const char *descr = find_key(h, "descr"), *fo = find_key(h, "fortran_order"), *sh = find_key(h, "shape");
	if (!descr || !fo || !sh || *sh != '(') {
		nx_diag_set(d, NX_ERR_INPUT, NULL, 0, 0, "malformed .npy header: %s", h);
		return NULL;
	}
	if (!strncmp(fo, "True", 4)) {
		nx_diag_set(d, NX_ERR_INPUT, NULL, 0, 0, "Fortran-order .npy arrays are not supported");
		return NULL;
	}
	nx_type t = descr_type(descr);
	if (t == NX_TYPE_INVALID) {
		const char *e = strpbrk(descr, "'\"");
		nx_diag_set(d, NX_ERR_INPUT, NULL, 0, 0, "unsupported .npy dtype '%.*s' (little-endian only)",
		            e ? (int)(e - descr) : 8, descr);
		return NULL;
	}
	if (want != NX_TYPE_INVALID && want != t) {
		bool raw_ok = nx_type_bytes(want) == nx_type_bytes(t) && !strcmp(nx_npy_descr(want), nx_npy_descr(t)) &&
		              (want == NX_BF16 || (nx_type_is_float(want) && nx_type_bytes(want) == 1) ||
		               (nx_type_is_int(want) && nx_type_bits(want) < 8));
		if (!raw_ok) {
			nx_diag_set(d, NX_ERR_INPUT, NULL, 0, 0, "array has dtype %s (%s), expected %s (%s)",
			            nx_type_name(t), nx_npy_descr(t), nx_type_name(want), nx_npy_descr(want));
			return NULL;
		}
		t = want;
	}
	int64_t dims[NX_MAX_RANK];
	int rank = 0;
	const char *q = sh + 1;
	for (;;) {
		while (*q == ' ' || *q == ',')
			q++;
		if (*q == ')')
			break;
		char *end;
		long long v = strtoll(q, &end, 10);
		if (end == q || v < 0 || rank == NX_MAX_RANK) {
			nx_diag_set(d, NX_ERR_INPUT, NULL, 0, 0, "malformed .npy shape");
			return NULL;
		}
		dims[rank++] = v;
		q = end;
	}
	nx_shape *s = nx_shape_array(a, t, rank, dims);
	int64_t bytes = nx_shape_bytes(s);
	if (bytes < 0 || (size_t)bytes > len - pre - hlen) {
		nx_diag_set(d, NX_ERR_INPUT, NULL, 0, 0, ".npy data is shorter than its shape needs");
		return NULL;
	}
	nx_literal *l = nx_literal_new(a, s);
	if (bytes)
		memcpy(l->data, p + pre + hlen, (size_t)bytes);
	if (t == NX_PRED)
		for (int64_t k = 0; k < bytes; k++)
			((uint8_t *)l->data)[k] = ((uint8_t *)l->data)[k] != 0;
	return l;
}

nx_status nx_npy_save(const char *path, const nx_literal *l, nx_diag *d)
{
	size_t len;
	void *buf = nx_npy_write(l, &len);
	if (!buf)
		return nx_diag_set(d, NX_ERR_INPUT, path, 0, 0, "cannot write %s as .npy",
		                   nx_type_name(l->shape->type));
	nx_status st = nx_write_file_atomic(path, buf, len, false, d);
	free(buf);
	return st;
}

nx_literal *nx_npy_load(nx_arena *a, const char *path, nx_type want, nx_diag *d)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		nx_diag_set(d, NX_ERR_IO, path, 0, 0, "cannot open file");
		return NULL;
	}
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	void *buf = malloc(n > 0 ? (size_t)n : 1);
	size_t got = buf ? fread(buf, 1, (size_t)(n > 0 ? n : 0), f) : 0;
	fclose(f);
	nx_literal *l = nx_npy_read(a, buf, got, want, d);
	if (!l && d->msg && !d->file) {
		char *m = d->msg;
		d->msg = NULL;
		nx_diag_set(d, d->status, path, 0, 0, "%s", m);
		free(m);
	}
	free(buf);
	return l;
}
