/* backend/neff_write.c — serializes a program into a .neff. Deterministic:
 * no timestamps, no addresses, sorted tar entries, fixed key order. */
#include "backend/target/neff.h"
#include "ir/file_atomic.h"
#include "ir/ir.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

typedef struct {
	char *b;
	size_t len, cap;
} buf;

static void grow(buf *s, size_t add)
{
	if (s->len + add + 1 > s->cap) {
		s->cap = (s->len + add + 1) * 2;
		s->b = realloc(s->b, s->cap);
	}
}

static void bput(buf *s, const void *p, size_t n)
{
	grow(s, n);
	memcpy(s->b + s->len, p, n);
	s->len += n;
	s->b[s->len] = 0;
}

static void bprintf(buf *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void bprintf(buf *s, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int k = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	grow(s, (size_t)k);
	va_start(ap, fmt);
	vsnprintf(s->b + s->len, (size_t)k + 1, fmt, ap);
	va_end(ap);
	s->len += (size_t)k;
}

static void json_str(buf *s, const char *v)
{
	bput(s, "\"", 1);
	for (const unsigned char *p = (const unsigned char *)(v ? v : ""); *p; p++) {
		if (*p == '"' || *p == '\\')
			bprintf(s, "\\%c", *p);
		else if (*p < 0x20)
			bprintf(s, "\\u%04x", *p);
		else
			bput(s, p, 1);
	}
	bput(s, "\"", 1);
}

int64_t nx_neff_tensor_bytes(const nx_neff_tensor *t)
{
	if (t->dtype >= NX_DT_COUNT || t->rank < 0 || t->rank > NX_NEFF_MAX_RANK)
		return -1;
	int64_t n = nx_dtype_bytes[t->dtype];
	for (int i = 0; i < t->rank; i++) {
		if (t->dims[i] < 0 || (t->dims[i] && n > INT64_MAX / t->dims[i]))
			return -1;
		n *= t->dims[i];
	}
	return n;
}

static void json_tensor(buf *s, const nx_neff_tensor *t, int kind, int idx)
{
	bprintf(s, "    {\"name\": ");
	json_str(s, t->name);
	bprintf(s, ", \"dtype\": \"%s\", \"shape\": [", nx_dtype_names[t->dtype]);
	for (int i = 0; i < t->rank; i++)
		bprintf(s, "%s%lld", i ? ", " : "", (long long)t->dims[i]);
	bprintf(s, "], \"hbm_offset\": %lld, \"bytes\": %lld", (long long)t->hbm_offset,
	        (long long)nx_neff_tensor_bytes(t));
	if (kind == 1)
		bprintf(s, ", \"alias_input\": %d", t->alias_input);
	if (kind == 0 && t->nonneg)
		bprintf(s, ", \"random_domain\": \"nonneg\"");
	if (kind == 2)
		bprintf(s, ", \"file\": \"sg00/const/c%d.npy\"", idx);
	bprintf(s, "}");
}

static void json_list(buf *s, const char *key, const nx_neff_tensor *v, int n, int kind)
{
	bprintf(s, "  \"%s\": [%s", key, n ? "\n" : "");
	for (int i = 0; i < n; i++) {
		json_tensor(s, &v[i], kind, i);
		bprintf(s, "%s\n", i + 1 < n ? "," : "");
	}
	bprintf(s, "%s],\n", n ? "  " : "");
}

static char *def_json(const nx_neff_program *p)
{
	buf s = {0};
	bprintf(&s, "{\n  \"format\": %d,\n  \"target\": ", NX_NEFF_VERSION);
	json_str(&s, p->target);
	bprintf(&s, ",\n  \"hbm_size\": %lld,\n  \"scratch_offset\": %lld,\n  \"scratch_size\": %lld,\n"
	            "  \"semaphores\": %d,\n",
	        (long long)p->hbm_size, (long long)p->scratch_offset, (long long)p->scratch_size,
	        p->nsems);
	bprintf(&s, "  \"replicas\": %d,\n  \"replica_groups\": [",
	        p->nreplicas > 0 ? p->nreplicas : p->n_cores > 0 ? p->n_cores : 1);
	for (int k = 0; k < p->nrgroups; k++) {
		const nx_neff_rgroup *g = &p->rgroups[k];
		bprintf(&s, "%s{\"%s\": [", k ? ",\n    " : "\n    ", g->pairs ? "pairs" : "groups");
		int at = 0;
		for (int j = 0; j < g->n; j++) {
			int len = g->pairs ? 2 : g->len[j];
			bprintf(&s, "%s[", j ? ", " : "");
			for (int e = 0; e < len; e++)
				bprintf(&s, "%s%d", e ? ", " : "", (int)g->ids[at + e]);
			at += len;
			bprintf(&s, "]");
		}
		bprintf(&s, "]}");
	}
	bprintf(&s, "%s],\n", p->nrgroups ? "\n  " : "");
	if (p->has_rank_id)
		bprintf(&s, "  \"rank_id_offset\": %lld,\n", (long long)p->rank_id_offset);
	json_list(&s, "inputs", p->inputs, p->ninputs, 0);
	json_list(&s, "outputs", p->outputs, p->noutputs, 1);
	json_list(&s, "constants", p->consts, p->nconsts, 2);
	bprintf(&s, "  \"engines\": {");
	for (int e = 0; e < NX_ENG_COUNT; e++)
		bprintf(&s, "%s\"%s\": \"sg00/%s.bin\"", e ? ", " : "", nx_engine_names[e],
		        nx_engine_names[e]);
	bprintf(&s, "}\n}\n");
	return s.b;
}

static const char *npy_descr(nx_dtype t)
{
	switch (t) {
	case NX_DT_F32: return "<f4";
	case NX_DT_F16: return "<f2";
	case NX_DT_S32: return "<i4";
	case NX_DT_U32: return "<u4";
	case NX_DT_S16: return "<i2";
	case NX_DT_U16: case NX_DT_BF16: return "<u2"; /* bf16: raw bits */
	case NX_DT_S8: return "|i1";
	default: return "|u1"; /* u8, fp8: raw bits */
	}
}

static void npy(buf *s, const nx_neff_tensor *t)
{
	buf h = {0};
	bprintf(&h, "{'descr': '%s', 'fortran_order': False, 'shape': (", npy_descr(t->dtype));
	for (int i = 0; i < t->rank; i++)
		bprintf(&h, "%lld%s", (long long)t->dims[i], t->rank == 1 ? "," : i + 1 < t->rank ? ", " : "");
	bprintf(&h, "), }");
	while ((10 + h.len + 1) % 64)
		bput(&h, " ", 1);
	bput(&h, "\n", 1);
	bput(s, "\x93NUMPY\x01\x00", 8);
	uint8_t hl[2] = {(uint8_t)(h.len & 0xff), (uint8_t)(h.len >> 8)};
	bput(s, hl, 2);
	bput(s, h.b, h.len);
	int64_t n = nx_neff_tensor_bytes(t);
	if (n > 0 && t->data)
		bput(s, t->data, (size_t)n);
	else if (n > 0) {
		grow(s, (size_t)n);
		memset(s->b + s->len, 0, (size_t)n);
		s->len += (size_t)n;
	}
	free(h.b);
}

typedef struct {
	char name[100];
	buf data;
} entry;

static int cmp_entry(const void *a, const void *b)
{
	return strcmp(((const entry *)a)->name, ((const entry *)b)->name);
}

static void tar_entry(buf *out, const entry *e)
{
	uint8_t h[512];
	memset(h, 0, sizeof h);
	memcpy(h, e->name, strlen(e->name));
	memcpy(h + 100, "0000644", 7);
	memcpy(h + 108, "0000000", 7);
	memcpy(h + 116, "0000000", 7);
	snprintf((char *)h + 124, 12, "%011llo", (unsigned long long)e->data.len);
	memcpy(h + 136, "00000000000", 11);
	memset(h + 148, ' ', 8);
	h[156] = '0';
	memcpy(h + 257, "ustar", 6);
	memcpy(h + 263, "00", 2);
	memcpy(h + 265, "root", 4);
	memcpy(h + 297, "root", 4);
	unsigned sum = 0;
	for (int i = 0; i < 512; i++)
		sum += h[i];
	snprintf((char *)h + 148, 8, "%06o", sum);
	h[155] = ' ';
	bput(out, h, 512);
	bput(out, e->data.b ? e->data.b : "", e->data.len);
	static const uint8_t zero[512];
	if (e->data.len % 512)
		bput(out, zero, 512 - e->data.len % 512);
}

int nx_neff_write(const nx_neff_program *p, uint8_t **out, size_t *len, struct nx_diag *d)
{
	*out = NULL;
	*len = 0;
	for (int i = 0; i < p->ninputs + p->noutputs + p->nconsts; i++) {
		const nx_neff_tensor *t = i < p->ninputs ? &p->inputs[i]
		                          : i < p->ninputs + p->noutputs ? &p->outputs[i - p->ninputs]
		                                                          : &p->consts[i - p->ninputs - p->noutputs];
		if (nx_neff_tensor_bytes(t) < 0)
			return nx_diag_set(d, NX_ERR_INTERNAL, NULL, 0, 0, "neff: tensor '%s' has a bad shape",
			                   t->name ? t->name : "?");
	}
	int ne = NX_ENG_COUNT + 2 + p->nconsts + p->ngpsimd;
	entry *ents = calloc((size_t)ne, sizeof *ents);
	int k = 0;
	snprintf(ents[k].name, 100, "sg00/def.json");
	char *dj = def_json(p);
	bput(&ents[k++].data, dj, strlen(dj));
	free(dj);
	for (int e = 0; e < NX_ENG_COUNT; e++) {
		uint8_t *b;
		size_t n;
		nx_isa_encode(e, p->streams[e], p->nstream[e], &b, &n);
		snprintf(ents[k].name, 100, "sg00/%s.bin", nx_engine_names[e]);
		bput(&ents[k++].data, b, n);
		free(b);
	}
	for (int c = 0; c < p->nconsts; c++) {
		snprintf(ents[k].name, 100, "sg00/const/c%d.npy", c);
		npy(&ents[k++].data, &p->consts[c]);
	}
	for (int g = 0; g < p->ngpsimd; g++) { /* GpSimd kernels (backend/target/gpsimd.h) */
		snprintf(ents[k].name, 100, "sg00/gpsimd/%.80s.bc", p->gpsimd[g].name);
		bput(&ents[k++].data, p->gpsimd[g].data, p->gpsimd[g].len);
	}
	snprintf(ents[k].name, 100, "sg00/debug.json");
	bprintf(&ents[k].data, "{\"names\": [");
	for (int i = 0; i < p->ndebug; i++) {
		bprintf(&ents[k].data, "%s", i ? ", " : "");
		json_str(&ents[k].data, p->debug_names[i]);
	}
	if (p->debug_src) {
		bprintf(&ents[k].data, "],\n \"sources\": [");
		for (int i = 0; i < p->ndebug; i++) {
			const nx_neff_src *r = &p->debug_src[i];
			bprintf(&ents[k].data, "%s{\"line\": %d, \"source_line\": %d", i ? ",\n  " : "", r->line,
			        r->source_line);
			const char *keys[] = {"hlo", "kind", "op_name", "source_file"};
			const char *vals[] = {r->hlo, r->kind, r->op_name, r->source_file};
			for (int f = 0; f < 4; f++)
				if (vals[f]) {
					bprintf(&ents[k].data, ", \"%s\": ", keys[f]);
					json_str(&ents[k].data, vals[f]);
				}
			bprintf(&ents[k].data, "}");
		}
	}
	bprintf(&ents[k++].data, "]}\n");
	qsort(ents, (size_t)k, sizeof *ents, cmp_entry);

	buf o = {0};
	uint8_t hdr[NX_NEFF_HEADER_SIZE];
	memset(hdr, 0, sizeof hdr);
	bput(&o, hdr, sizeof hdr);
	for (int i = 0; i < k; i++) {
		tar_entry(&o, &ents[i]);
		free(ents[i].data.b);
	}
	free(ents);
	static const uint8_t zero[1024];
	bput(&o, zero, 1024);
	size_t payload = o.len - NX_NEFF_HEADER_SIZE;

	uint8_t *h = (uint8_t *)o.b;
	memcpy(h + NX_NEFF_OFF_MAGIC, NX_NEFF_MAGIC, 8);
	nx_put_le(h + NX_NEFF_OFF_VERSION, NX_NEFF_VERSION, 4);
	nx_put_le(h + NX_NEFF_OFF_HEADER_SIZE, NX_NEFF_HEADER_SIZE, 4);
	nx_put_le(h + NX_NEFF_OFF_PAYLOAD_SIZE, payload, 8);
	nx_sha256(h + NX_NEFF_HEADER_SIZE, payload, h + NX_NEFF_OFF_SHA256);
	/* A name-based UUID (RFC 9562 version 8 layout) from the payload hash:
	 * equal programs get equal ids, no clock or random source involved. */
	memcpy(h + NX_NEFF_OFF_UUID, h + NX_NEFF_OFF_SHA256, 16);
	h[NX_NEFF_OFF_UUID + 6] = (uint8_t)((h[NX_NEFF_OFF_UUID + 6] & 0x0f) | 0x80);
	h[NX_NEFF_OFF_UUID + 8] = (uint8_t)((h[NX_NEFF_OFF_UUID + 8] & 0x3f) | 0x80);
	nx_put_le(h + NX_NEFF_OFF_NCORES, (uint32_t)(p->n_cores > 0 ? p->n_cores : 1), 4);
	nx_put_le(h + NX_NEFF_OFF_FEATURES, p->features | (p->ngpsimd ? NX_NEFF_FEAT_GPSIMD : 0u), 4);
	snprintf((char *)h + NX_NEFF_OFF_TARGET, 16, "%s", p->target ? p->target : "");
	snprintf((char *)h + NX_NEFF_OFF_COMPILER, 32, "nxcc %s",
	         p->compiler_version ? p->compiler_version : NX_VERSION);
	snprintf((char *)h + NX_NEFF_OFF_MODULE, 128, "%s", p->module_name ? p->module_name : "");
	nx_neff_seal_header(h);
	*out = h;
	*len = o.len;
	return NX_OK;
}

int nx_neff_write_file(const nx_neff_program *p, const char *path, struct nx_diag *d)
{
	uint8_t *b;
	size_t n;
	if (nx_neff_write(p, &b, &n, d) != NX_OK)
		return d->status;
	nx_status st = nx_write_file_atomic(path, b, n, false, d);
	free(b);
	return st;
}
