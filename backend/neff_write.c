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
	/* formatted straight into the spare capacity; again after growing
	 * when it did not fit */
	va_list ap;
	va_start(ap, fmt);
	size_t room = s->cap > s->len ? s->cap - s->len : 0;
	int k = vsnprintf(room ? s->b + s->len : NULL, room, fmt, ap);
	va_end(ap);
	if ((size_t)k >= room) {
		grow(s, (size_t)k);
		va_start(ap, fmt);
		vsnprintf(s->b + s->len, (size_t)k + 1, fmt, ap);
		va_end(ap);
	}
	s->len += (size_t)k;
}

static void json_str(buf *s, const char *v)
{
	bput(s, "\"", 1);
	const unsigned char *p = (const unsigned char *)(v ? v : ""), *run = p;
	for (; *p; p++) {
		if (*p != '"' && *p != '\\' && *p >= 0x20)
			continue;
		bput(s, run, (size_t)(p - run));
		if (*p == '"' || *p == '\\')
			bprintf(s, "\\%c", *p);
		else
			bprintf(s, "\\u%04x", *p);
		run = p + 1;
	}
	bput(s, run, (size_t)(p - run));
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

/* The .npy header of constant t (its data follows). */
static void npy_header(buf *s, const nx_neff_tensor *t)
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
	free(h.b);
}

/* A tar member: its name, its size, and where its bytes come from. Sizes
 * are known before anything is written, so the archive is one allocation
 * and every byte is written once, in place (an engine stream is encoded
 * straight into it). */
enum { E_TEXT, E_STREAM, E_CONST, E_GPSIMD };

typedef struct {
	char name[100];
	int kind, idx; /* E_STREAM: engine; E_CONST: constant; E_GPSIMD: kernel */
	buf text;      /* E_TEXT: the bytes; E_CONST: the .npy header */
	size_t len;    /* bytes in all */
} entry;

static int cmp_entry(const void *a, const void *b)
{
	return strcmp(((const entry *)a)->name, ((const entry *)b)->name);
}

static size_t pad512(size_t n)
{
	return (512 - n % 512) % 512;
}

static void tar_header(uint8_t *h, const entry *e)
{
	memset(h, 0, 512);
	memcpy(h, e->name, strlen(e->name));
	memcpy(h + 100, "0000644", 7);
	memcpy(h + 108, "0000000", 7);
	memcpy(h + 116, "0000000", 7);
	snprintf((char *)h + 124, 12, "%011llo", (unsigned long long)e->len);
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
}

/* Writes member e's header, bytes and padding at w; returns the end. */
static uint8_t *tar_member(uint8_t *w, const entry *e, const nx_neff_program *p)
{
	tar_header(w, e);
	w += 512;
	switch (e->kind) {
	case E_TEXT:
		if (e->len)
			memcpy(w, e->text.b, e->len);
		break;
	case E_STREAM:
		nx_isa_encode_to(e->idx, p->streams[e->idx], p->nstream[e->idx], w);
		break;
	case E_CONST: {
		const nx_neff_tensor *t = &p->consts[e->idx];
		size_t n = e->len - e->text.len;
		memcpy(w, e->text.b, e->text.len);
		if (n && t->data)
			memcpy(w + e->text.len, t->data, n);
		else if (n)
			memset(w + e->text.len, 0, n);
		break;
	}
	case E_GPSIMD:
		if (e->len)
			memcpy(w, p->gpsimd[e->idx].data, e->len);
		break;
	}
	w += e->len;
	size_t pad = pad512(e->len);
	memset(w, 0, pad);
	return w + pad;
}

static void debug_json(buf *s, const nx_neff_program *p)
{
	bprintf(s, "{\"names\": [");
	for (int i = 0; i < p->ndebug; i++) {
		if (i)
			bput(s, ", ", 2);
		json_str(s, p->debug_names[i]);
	}
	if (p->debug_src) {
		bprintf(s, "],\n \"sources\": [");
		for (int i = 0; i < p->ndebug; i++) {
			const nx_neff_src *r = &p->debug_src[i];
			bprintf(s, "%s{\"line\": %d, \"source_line\": %d", i ? ",\n  " : "", r->line,
			        r->source_line);
			const char *keys[] = {"hlo", "kind", "op_name", "source_file"};
			const char *vals[] = {r->hlo, r->kind, r->op_name, r->source_file};
			for (int f = 0; f < 4; f++)
				if (vals[f]) {
					bprintf(s, ", \"%s\": ", keys[f]);
					json_str(s, vals[f]);
				}
			bput(s, "}", 1);
		}
	}
	bprintf(s, "]}\n");
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
	bput(&ents[k].text, dj, strlen(dj));
	ents[k].len = ents[k].text.len;
	k++;
	free(dj);
	for (int e = 0; e < NX_ENG_COUNT; e++) {
		snprintf(ents[k].name, 100, "sg00/%s.bin", nx_engine_names[e]);
		ents[k].kind = E_STREAM, ents[k].idx = e;
		ents[k++].len = nx_isa_stream_bytes(p->nstream[e]);
	}
	for (int c = 0; c < p->nconsts; c++) {
		snprintf(ents[k].name, 100, "sg00/const/c%d.npy", c);
		ents[k].kind = E_CONST, ents[k].idx = c;
		npy_header(&ents[k].text, &p->consts[c]);
		ents[k].len = ents[k].text.len + (size_t)nx_neff_tensor_bytes(&p->consts[c]);
		k++;
	}
	for (int g = 0; g < p->ngpsimd; g++) { /* GpSimd kernels (backend/target/gpsimd.h) */
		snprintf(ents[k].name, 100, "sg00/gpsimd/%.80s.bc", p->gpsimd[g].name);
		ents[k].kind = E_GPSIMD, ents[k].idx = g;
		ents[k++].len = p->gpsimd[g].len;
	}
	snprintf(ents[k].name, 100, "sg00/debug.json");
	debug_json(&ents[k].text, p);
	ents[k].len = ents[k].text.len;
	k++;
	qsort(ents, (size_t)k, sizeof *ents, cmp_entry);

	size_t total = NX_NEFF_HEADER_SIZE + 1024;
	for (int i = 0; i < k; i++)
		total += 512 + ents[i].len + pad512(ents[i].len);
	uint8_t *h = malloc(total);
	if (!h) {
		for (int i = 0; i < k; i++)
			free(ents[i].text.b);
		free(ents);
		return nx_diag_set(d, NX_ERR_IO, NULL, 0, 0, "neff: cannot allocate %zu bytes on the host", total);
	}
	memset(h, 0, NX_NEFF_HEADER_SIZE);
	uint8_t *w = h + NX_NEFF_HEADER_SIZE;
	for (int i = 0; i < k; i++) {
		w = tar_member(w, &ents[i], p);
		free(ents[i].text.b);
	}
	free(ents);
	memset(w, 0, 1024);
	NX_ASSERT(w + 1024 == h + total);
	size_t payload = total - NX_NEFF_HEADER_SIZE;

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
	*len = total;
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
