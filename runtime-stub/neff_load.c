/* runtime-stub/neff_load.c — reads and validates a .neff (untrusted input). */
#include "runtime-stub/json.h"
#include "runtime-stub/gpsimd.h"
#include "runtime-stub/rt.h"
#include "runtime-stub/sim.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct {
	const char *file; /* for messages */
	nx_diag *d;
} ctx;

static nx_status err(ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static nx_status err(ctx *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	nx_diag_vset(c->d, NX_ERR_INPUT, c->file, 0, 0, fmt, ap);
	va_end(ap);
	return NX_ERR_INPUT;
}

void nx_neff_free(nx_neff *n)
{
	if (!n)
		return;
	for (int e = 0; e < NX_ENG_COUNT; e++) {
		free(n->stream[e]);
		free(n->loop_match[e]);
	}
	nx_rt_tensor *lists[3] = {n->inputs, n->outputs, n->consts};
	int counts[3] = {n->ninputs, n->noutputs, n->nconsts};
	for (int l = 0; l < 3; l++) {
		for (int i = 0; i < counts[l]; i++)
			free(lists[l][i].name);
		free(lists[l]);
	}
	for (int i = 0; i < n->nrgroups; i++) {
		free(n->rgroups[i].start);
		free(n->rgroups[i].ids);
	}
	free(n->rgroups);
	for (int i = 0; i < n->ndebug; i++) {
		free(n->debug_names[i]);
		if (n->debug_src) {
			free((char *)n->debug_src[i].hlo);
			free((char *)n->debug_src[i].kind);
			free((char *)n->debug_src[i].op_name);
			free((char *)n->debug_src[i].source_file);
		}
	}
	free(n->debug_names);
	free(n->debug_src);
	for (int i = 0; i < n->nsections; i++)
		free(n->section_names[i]);
	free(n->section_names);
	free(n->section_sizes);
	nx_gs_prog_free(n->gpsimd);
	free(n->file);
	free(n);
}

/* ------------------------------------------------------------------- tar */

typedef struct {
	char name[101];
	const uint8_t *data;
	size_t size;
} tar_ent;

static int octal(const uint8_t *p, int n, uint64_t *v)
{
	int i = 0, any = 0;
	*v = 0;
	while (i < n && p[i] == ' ')
		i++;
	for (; i < n && p[i] >= '0' && p[i] <= '7'; i++, any = 1) {
		if (*v >> 60)
			return -1;
		*v = *v * 8 + (uint64_t)(p[i] - '0');
	}
	for (; i < n; i++)
		if (p[i] != 0 && p[i] != ' ')
			return -1;
	return any ? 0 : -1;
}

static nx_status read_tar(ctx *c, const uint8_t *p, size_t len, tar_ent **out, int *nout)
{
	size_t off = 0;
	int n = 0, cap = 0;
	tar_ent *v = NULL;
	*out = NULL;
	*nout = 0;
	for (;;) {
		if (off + 512 > len) {
			free(v);
			return err(c, "payload truncated: tar archive has no end-of-archive marker");
		}
		const uint8_t *h = p + off;
		int zero = 1;
		for (int i = 0; i < 512 && zero; i++)
			zero = h[i] == 0;
		if (zero)
			break;
		uint64_t sum, size;
		if (octal(h + 148, 8, &sum) != 0) {
			free(v);
			return err(c, "tar header at payload offset %zu: bad checksum field", off);
		}
		uint64_t s = 0;
		for (int i = 0; i < 512; i++)
			s += (i >= 148 && i < 156) ? ' ' : h[i];
		if (s != sum) {
			free(v);
			return err(c, "tar header at payload offset %zu: checksum mismatch (file corrupted?)", off);
		}
		if (memcmp(h + 257, "ustar", 5) != 0) {
			free(v);
			return err(c, "tar header at payload offset %zu: not a ustar header", off);
		}
		if (octal(h + 124, 12, &size) != 0 || size > len - off - 512) {
			free(v);
			return err(c, "tar entry at payload offset %zu: size field exceeds the payload", off);
		}
		if (h[156] != '0' && h[156] != 0) {
			free(v);
			return err(c, "tar entry at payload offset %zu: not a regular file", off);
		}
		if (memchr(h, 0, 100) == NULL || h[0] == 0) {
			free(v);
			return err(c, "tar entry at payload offset %zu: bad name", off);
		}
		if (n == cap)
			v = realloc(v, sizeof *v * (size_t)(cap = cap ? cap * 2 : 16));
		memcpy(v[n].name, h, 100);
		v[n].name[100] = 0;
		v[n].data = h + 512;
		v[n].size = (size_t)size;
		n++;
		off += 512 + ((size_t)size + 511) / 512 * 512;
		if (off > len) {
			free(v);
			return err(c, "payload truncated inside a tar entry");
		}
	}
	*out = v;
	*nout = n;
	return NX_OK;
}

static const tar_ent *find(const tar_ent *v, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (strcmp(v[i].name, name) == 0)
			return &v[i];
	return NULL;
}

/* --------------------------------------------------------------- def.json */

static int jint(const nx_json *o, const char *k, int64_t lo, int64_t hi, int64_t *out)
{
	const nx_json *j = nx_json_get(o, k);
	if (!j || j->type != NX_J_NUM || !j->is_int || j->inum < lo || j->inum > hi)
		return -1;
	*out = j->inum;
	return 0;
}

static nx_dtype dtype_of(const char *s)
{
	for (int t = 0; t < NX_DT_COUNT; t++)
		if (strcmp(nx_dtype_names[t], s) == 0)
			return (nx_dtype)t;
	return NX_DT_COUNT;
}

static nx_status tensors(ctx *c, nx_neff *n, const nx_json *def, const char *key,
                         nx_rt_tensor **out, int *nout, const tar_ent *ents, int nents)
{
	const nx_json *a = nx_json_get(def, key);
	if (!a || a->type != NX_J_ARR)
		return err(c, "sg00/def.json: '%s' missing or not a list", key);
	*out = calloc((size_t)a->n + 1, sizeof **out);
	*nout = a->n;
	for (int i = 0; i < a->n; i++) {
		const nx_json *t = &a->items[i];
		nx_rt_tensor *r = &(*out)[i];
		const nx_json *nm = nx_json_get(t, "name"), *dt = nx_json_get(t, "dtype"),
		              *sh = nx_json_get(t, "shape");
		r->alias_input = -1;
		if (!nm || nm->type != NX_J_STR || !dt || dt->type != NX_J_STR || !sh ||
		    sh->type != NX_J_ARR || sh->n > NX_NEFF_MAX_RANK)
			return err(c, "sg00/def.json: %s[%d]: bad name, dtype or shape", key, i);
		r->name = strdup(nm->str);
		r->dtype = dtype_of(dt->str);
		if (r->dtype == NX_DT_COUNT)
			return err(c, "sg00/def.json: %s '%s': unknown dtype '%s'", key, r->name, dt->str);
		r->rank = sh->n;
		int64_t bytes = nx_dtype_bytes[r->dtype];
		for (int k = 0; k < sh->n; k++) {
			const nx_json *x = &sh->items[k];
			if (x->type != NX_J_NUM || !x->is_int || x->inum < 0 || x->inum > (1LL << 40))
				return err(c, "sg00/def.json: %s '%s': bad dimension", key, r->name);
			r->dims[k] = x->inum;
			if (x->inum && bytes > (INT64_MAX >> 1) / x->inum)
				return err(c, "sg00/def.json: %s '%s': size overflows", key, r->name);
			bytes *= x->inum;
		}
		int64_t b2;
		if (jint(t, "hbm_offset", 0, n->hbm_size, &r->hbm_offset) != 0 ||
		    jint(t, "bytes", 0, INT64_MAX, &b2) != 0)
			return err(c, "sg00/def.json: %s '%s': bad hbm_offset or bytes", key, r->name);
		if (b2 != bytes)
			return err(c, "sg00/def.json: %s '%s': bytes %lld does not match its shape (%lld)",
			           key, r->name, (long long)b2, (long long)bytes);
		r->bytes = bytes;
		if (bytes > n->hbm_size - r->hbm_offset)
			return err(c, "sg00/def.json: %s '%s': [%lld, %lld) exceeds hbm_size %lld", key,
			           r->name, (long long)r->hbm_offset, (long long)(r->hbm_offset + bytes),
			           (long long)n->hbm_size);
		if (strcmp(key, "inputs") == 0) {
			const nx_json *rd = nx_json_get(t, "random_domain");
			if (rd && (rd->type != NX_J_STR || strcmp(rd->str, "nonneg") != 0))
				return err(c, "sg00/def.json: input '%s': bad random_domain", r->name);
			r->nonneg = rd != NULL;
		}
		if (strcmp(key, "outputs") == 0) {
			int64_t al;
			if (jint(t, "alias_input", -1, n->ninputs - 1, &al) != 0)
				return err(c, "sg00/def.json: output '%s': bad alias_input", r->name);
			r->alias_input = (int)al;
		}
		if (strcmp(key, "constants") == 0) {
			const nx_json *f = nx_json_get(t, "file");
			const tar_ent *e = f && f->type == NX_J_STR ? find(ents, nents, f->str) : NULL;
			if (!e)
				return err(c, "sg00/def.json: constant '%s': file missing from the payload", r->name);
			/* .npy: magic, version, u16 header length, header, data */
			if (e->size < 10 || memcmp(e->data, "\x93NUMPY", 6) != 0)
				return err(c, "%s: not a .npy file", e->name);
			size_t hl = e->data[8] | (size_t)e->data[9] << 8;
			if (10 + hl > e->size || e->size - 10 - hl != (size_t)bytes)
				return err(c, "%s: holds %zu data bytes, def.json says %lld", e->name,
				           e->size >= 10 + hl ? e->size - 10 - hl : 0, (long long)bytes);
			r->data = e->data + 10 + hl;
		}
	}
	return NX_OK;
}

/* "replicas" and "replica_groups" (absent in single-rank programs). */
static nx_status replica_groups(ctx *c, nx_neff *n, const nx_json *def)
{
	int64_t v = n->n_cores;
	if (nx_json_get(def, "replicas") && jint(def, "replicas", 1, 64, &v) != 0)
		return err(c, "sg00/def.json: bad replicas");
	if (v != (int64_t)n->n_cores)
		return err(c, "sg00/def.json: replicas %lld differs from the header's NeuronCore count %u",
		           (long long)v, n->n_cores);
	n->nreplicas = (int)v;
	n->rank_id_offset = -1;
	if (nx_json_get(def, "rank_id_offset") &&
	    jint(def, "rank_id_offset", 0, n->hbm_size - 4, &n->rank_id_offset) != 0)
		return err(c, "sg00/def.json: rank_id_offset outside hbm_size");
	const nx_json *a = nx_json_get(def, "replica_groups");
	if (!a)
		return NX_OK;
	if (a->type != NX_J_ARR || a->n > 4096)
		return err(c, "sg00/def.json: replica_groups is not a list");
	n->rgroups = calloc((size_t)a->n + 1, sizeof *n->rgroups);
	char *seen = calloc((size_t)n->nreplicas * 2 + 1, 1);
	nx_status st = NX_OK;
	for (int t = 0; t < a->n && st == NX_OK; t++) {
		nx_rt_rgroup *g = &n->rgroups[n->nrgroups++];
		const nx_json *gl = nx_json_get(&a->items[t], "groups"), *pl = nx_json_get(&a->items[t], "pairs");
		const nx_json *l = gl ? gl : pl;
		g->pairs = gl == NULL;
		if (!l || (gl && pl) || l->type != NX_J_ARR || l->n < 1 || l->n > 4096) {
			st = err(c, "sg00/def.json: replica_groups[%d]: needs one non-empty 'groups' or 'pairs' list", t);
			break;
		}
		memset(seen, 0, (size_t)n->nreplicas * 2);
		int total = 0;
		for (int k = 0; k < l->n; k++)
			total += l->items[k].type == NX_J_ARR ? l->items[k].n : 0;
		g->n = l->n;
		g->ids = calloc((size_t)total + 1, sizeof *g->ids);
		g->start = g->pairs ? NULL : calloc((size_t)l->n + 1, sizeof *g->start);
		int at = 0;
		for (int k = 0; k < l->n && st == NX_OK; k++) {
			const nx_json *m = &l->items[k];
			if (m->type != NX_J_ARR || m->n < 1 || (g->pairs && m->n != 2)) {
				st = err(c, "sg00/def.json: replica_groups[%d][%d]: %s", t, k,
				         g->pairs ? "a pair is [source, target]" : "empty or not a list");
				break;
			}
			if (!g->pairs)
				g->start[k] = at;
			for (int e = 0; e < m->n; e++) {
				const nx_json *x = &m->items[e];
				if (x->type != NX_J_NUM || !x->is_int || x->inum < 0 || x->inum >= n->nreplicas) {
					st = err(c, "sg00/def.json: replica_groups[%d][%d]: replica id outside [0, %d)", t, k,
					         n->nreplicas);
					break;
				}
				/* groups: every id once; pairs: every source once, every target once */
				int slot = (int)x->inum + (g->pairs && e == 1 ? n->nreplicas : 0);
				if (seen[slot]++) {
					st = err(c, "sg00/def.json: replica_groups[%d]: replica %lld named twice%s", t,
					         (long long)x->inum, g->pairs ? (e ? " as a target" : " as a source") : "");
					break;
				}
				g->ids[at++] = (int32_t)x->inum;
			}
		}
		if (!g->pairs && g->start)
			g->start[l->n] = at;
	}
	free(seen);
	return st;
}

/* ---------------------------------------------------- instruction checks */

/* The byte range [lo, hi) an access pattern touches over all iterations of
 * its enclosing loops. false when that range does not fit in int64 (a stride
 * of 2^40 times 2^24 iterations): every step is overflow-checked. */
static bool span(const nx_ap *a, int64_t *lo, int64_t *hi, const int64_t *loop_max, int depth)
{
	int64_t esz = nx_dtype_bytes[a->dtype];
	int64_t mn = 0, mx = 0, s;
	for (int d = 0; d < a->ndims + depth; d++) {
		bool ov = d < a->ndims ? __builtin_mul_overflow((int64_t)a->stride[d] * esz, (int64_t)a->count[d] - 1, &s)
		                       : __builtin_mul_overflow(a->loop_stride[d - a->ndims], loop_max[d - a->ndims], &s);
		if (ov || (s < 0 ? __builtin_add_overflow(mn, s, &mn) : __builtin_add_overflow(mx, s, &mx)))
			return false;
	}
	return !__builtin_add_overflow(a->offset, mn, lo) && !__builtin_add_overflow(a->offset, mx, hi) &&
	       !__builtin_add_overflow(*hi, esz, hi);
}

static nx_status check_ap(ctx *c, const nx_neff *n, const char *sec, size_t i, int k,
                          const nx_ap *a, const int64_t *loop_max, int depth)
{
	const nx_target *t = n->tgt;
	const char *mem = nx_mem_names[a->space];
	for (int d = depth; d < NX_LOOP_DEPTH; d++)
		if (a->loop_stride[d] != 0)
			return err(c, "%s: instruction %zu: operand %d uses loop level %d outside %d enclosing loops",
			           sec, i, k, d, depth);
	for (int d = 0; d < a->ndims; d++)
		if (a->count[d] > (1u << 24))
			return err(c, "%s: instruction %zu: operand %d: count %u too large", sec, i, k, a->count[d]);
	for (int d = 0; d < depth; d++)
		if (a->loop_stride[d] > (1LL << 40) || a->loop_stride[d] < -(1LL << 40))
			return err(c, "%s: instruction %zu: operand %d: loop stride out of range", sec, i, k);
	if (a->offset > (1LL << 48) || a->offset < -(1LL << 48) || a->part_stride > (1LL << 40) ||
	    a->part_stride < -(1LL << 40))
		return err(c, "%s: instruction %zu: operand %d: offset out of range", sec, i, k);
	int64_t lo, hi;
	if (!span(a, &lo, &hi, loop_max, depth))
		return err(c, "%s: instruction %zu: operand %d: access span overflows 64 bits", sec, i, k);
	if (a->space == NX_MEM_HBM) {
		int64_t ps = a->part_stride * nx_dtype_bytes[a->dtype] * (a->part_count - 1);
		if (ps < 0 ? __builtin_add_overflow(lo, ps, &lo) : __builtin_add_overflow(hi, ps, &hi))
			return err(c, "%s: instruction %zu: operand %d: access span overflows 64 bits", sec, i, k);
		if (lo < 0 || hi > n->hbm_size)
			return err(c, "%s: instruction %zu: hbm access [%lld, %lld) outside the program's %lld HBM bytes",
			           sec, i, (long long)lo, (long long)hi, (long long)n->hbm_size);
		return NX_OK;
	}
	if (a->part_stride != 0)
		return err(c, "%s: instruction %zu: %s operand with a partition stride", sec, i, mem);
	if ((int)a->part_start + a->part_count > t->partitions)
		return err(c, "%s: instruction %zu: %s access [partition %u..%u) exceeds %d partitions", sec,
		           i, mem, a->part_start, a->part_start + a->part_count, t->partitions);
	int64_t lim = a->space == NX_MEM_SBUF ? t->sbuf_partition_bytes : t->psum_partition_bytes;
	if (lo < 0 || hi > lim)
		return err(c, "%s: instruction %zu: %s access [byte %lld..%lld) exceeds %lld bytes per partition",
		           sec, i, mem, (long long)lo, (long long)hi, (long long)lim);
	return NX_OK;
}

static nx_status check_semantics(ctx *c, const nx_neff *n, const char *sec, size_t i, const nx_insn *in)
{
	const nx_target *t = n->tgt;
	const nx_ap *a = in->ap;
	const nx_isa_info *info = &nx_isa_table[in->op];
	/* Required operands: all but the documented optional ones. */
	for (int k = 0; k < info->nap; k++) {
		bool optional = (in->op == NX_I_ACTIVATE && k >= 2) || (in->op == NX_I_TENSOR_SCALAR && k == 2) ||
		                (in->op == NX_I_CALL && k >= 1);
		if (!optional && a[k].space == NX_MEM_NONE)
			return err(c, "%s: instruction %zu (%s): operand %d missing", sec, i, info->name, k);
		if (a[k].space == NX_MEM_HBM && info->cost != NX_COST_DMA && info->cost != NX_COST_CC &&
		    in->op != NX_I_LDREG)
			return err(c, "%s: instruction %zu (%s): compute engines cannot access HBM", sec, i, info->name);
	}
	switch (in->op) {
	case NX_I_CALL: { /* GpSimd kernel (backend/target/gpsimd.h) */
		int nops = 0;
		while (nops < 4 && a[nops].space != NX_MEM_NONE)
			nops++;
		for (int k = nops; k < 4; k++)
			if (a[k].space != NX_MEM_NONE)
				return err(c, "%s: instruction %zu (call): operands must come first", sec, i);
		if (in->iarg[0] < 0 || in->iarg[0] >= n->ngpsimd)
			return err(c, "%s: instruction %zu (call): kernel %d, the .neff has %d", sec, i, in->iarg[0], n->ngpsimd);
		if (in->iarg[1] < 1 || in->iarg[1] > nops || in->iarg[2] < 1 || in->iarg[2] > NX_GS_MAX_LANES || in->iarg[3])
			return err(c, "%s: instruction %zu (call): bad writable count or lanes", sec, i);
		for (int k = 0; k < nops; k++) {
			if (a[k].space != NX_MEM_SBUF || a[k].part_start != a[0].part_start || a[k].part_count != a[0].part_count ||
			    a[k].ndims > 2)
				return err(c, "%s: instruction %zu (call): operands must be SBUF over the same partitions, 2-D", sec, i);
			for (int d = 0; d < a[k].ndims; d++)
				if (a[k].stride[d] < 0)
					return err(c, "%s: instruction %zu (call): negative stride", sec, i);
		}
		break;
	}
	case NX_I_WAIT:
	case NX_I_SIGNAL:
		if (in->iarg[0] < 0 || in->iarg[0] >= n->nsems)
			return err(c, "%s: instruction %zu: semaphore %d out of range (%d semaphores)", sec, i,
			           in->iarg[0], n->nsems);
		if (in->op == NX_I_WAIT && (in->iarg[2] < 0 || in->iarg[2] > NX_NREGS || in->iarg[3] < 0 ||
		                            in->iarg[3] > NX_NREGS))
			return err(c, "%s: instruction %zu: bad wait register %d", sec, i, in->iarg[2]);
		if (in->op == NX_I_SIGNAL && (in->iarg[1] < 0 || in->iarg[1] > 65535))
			return err(c, "%s: instruction %zu: bad signal increment %d", sec, i, in->iarg[1]);
		break;
	case NX_I_LDREG:
		if (in->ap[0].space != NX_MEM_HBM || in->ap[0].part_count != 1 || nx_ap_free_elems(&in->ap[0]) != 1)
			return err(c, "%s: instruction %zu (ldreg): the operand must be one HBM element", sec, i);
		/* fall through */
	case NX_I_BRZ:
	case NX_I_SETREG:
	case NX_I_ADDREG:
		if (in->iarg[0] < 0 || in->iarg[0] >= NX_NREGS)
			return err(c, "%s: instruction %zu: register %d out of range", sec, i, in->iarg[0]);
		break;
	case NX_I_MATMUL: {
		uint64_t m = nx_ap_free_elems(&a[1]), nn = nx_ap_free_elems(&a[2]);
		if (a[0].space != NX_MEM_PSUM || a[1].space != NX_MEM_SBUF || a[2].space != NX_MEM_SBUF)
			return err(c, "%s: instruction %zu: matmul reads SBUF and writes PSUM", sec, i);
		if (a[0].dtype != NX_DT_F32)
			return err(c, "%s: instruction %zu: matmul output must be f32", sec, i);
		if (a[1].part_count != a[2].part_count || a[1].part_count > t->pe_rows)
			return err(c, "%s: instruction %zu: matmul K (%u, %u) must match and be <= %d", sec, i,
			           a[1].part_count, a[2].part_count, t->pe_rows);
		if (m > (uint64_t)t->pe_cols || m != a[0].part_count)
			return err(c, "%s: instruction %zu: matmul M %llu must be <= %d and equal the output partitions %u",
			           sec, i, (unsigned long long)m, t->pe_cols, a[0].part_count);
		if (nn > (uint64_t)t->matmul_max_n || nn != nx_ap_free_elems(&a[0]))
			return err(c, "%s: instruction %zu: matmul N %llu must be <= %d and equal the output size", sec,
			           i, (unsigned long long)nn, t->matmul_max_n);
		if (a[0].offset / t->psum_bank_bytes != (a[0].offset + (int64_t)nn * 4 - 1) / t->psum_bank_bytes)
			return err(c, "%s: instruction %zu: matmul output crosses a PSUM bank", sec, i);
		break;
	}
	case NX_I_TRANSPOSE:
		if (a[0].space != NX_MEM_PSUM || a[1].space != NX_MEM_SBUF ||
		    nx_ap_free_elems(&a[1]) != a[0].part_count || nx_ap_free_elems(&a[0]) != a[1].part_count)
			return err(c, "%s: instruction %zu: transpose needs SBUF [P,F] -> PSUM [F,P]", sec, i);
		break;
	case NX_I_DMA_GATHER:
		if (in->iarg[2] < 1 || in->iarg[3] < 0)
			return err(c, "%s: instruction %zu: dma_gather needs a row count >= 1 and a row stride >= 0", sec, i);
		if ((uint64_t)a[0].part_count * nx_ap_free_elems(&a[0]) !=
		    (uint64_t)a[1].part_count * nx_ap_free_elems(&a[1]) * a[2].part_count * nx_ap_free_elems(&a[2]))
			return err(c, "%s: instruction %zu: dma_gather destination is not one row per index", sec, i);
		/* fall through */
	case NX_I_DMA_SCATTER:
		if (in->op == NX_I_DMA_SCATTER) {
			if (in->iarg[2] < 1 || in->iarg[3] < 0)
				return err(c, "%s: instruction %zu: dma_scatter needs a row count >= 1 and a row stride >= 0",
				           sec, i);
			if ((uint64_t)a[1].part_count * nx_ap_free_elems(&a[1]) !=
			    (uint64_t)a[0].part_count * nx_ap_free_elems(&a[0]) * a[2].part_count * nx_ap_free_elems(&a[2]))
				return err(c, "%s: instruction %zu: dma_scatter source is not one row per index", sec, i);
			if (a[0].space != NX_MEM_HBM)
				return err(c, "%s: instruction %zu: dma_scatter writes rows of HBM", sec, i);
		}
		/* fall through */
	case NX_I_DMA:
		if (in->iarg[0] < 0 || in->iarg[0] >= t->dma_engines)
			return err(c, "%s: instruction %zu: DMA queue %d out of range (%d queues)", sec, i,
			           in->iarg[0], t->dma_engines);
		if (in->iarg[1] < -1 || in->iarg[1] >= n->nsems)
			return err(c, "%s: instruction %zu: semaphore %d out of range (%d semaphores)", sec, i,
			           in->iarg[1], n->nsems);
		if (in->op == NX_I_DMA && (uint64_t)a[0].part_count * nx_ap_free_elems(&a[0]) !=
		                              (uint64_t)a[1].part_count * nx_ap_free_elems(&a[1]))
			return err(c, "%s: instruction %zu: dma source and destination sizes differ", sec, i);
		break;
	default:
		if (info->cost == NX_COST_CC) {
			if (in->iarg[0] < 0 || in->iarg[0] >= t->dma_engines || in->iarg[1] < -1 ||
			    in->iarg[1] >= n->nsems)
				return err(c, "%s: instruction %zu: bad queue or semaphore", sec, i);
			if (in->iarg[2] < 0 || in->iarg[2] >= n->nrgroups)
				return err(c, "%s: instruction %zu (%s): replica-group table index %d out of range (%d entries)",
				           sec, i, info->name, in->iarg[2], n->nrgroups);
			const nx_rt_rgroup *g = &n->rgroups[in->iarg[2]];
			if (g->pairs != (in->op == NX_I_COLLECTIVE_PERMUTE))
				return err(c, "%s: instruction %zu (%s): replica-group entry %d holds %s", sec, i, info->name,
				           in->iarg[2], g->pairs ? "source-target pairs" : "groups");
			if (a[0].space != NX_MEM_HBM || a[1].space != NX_MEM_HBM || a[0].dtype != a[1].dtype)
				return err(c, "%s: instruction %zu (%s): operands must be HBM of one dtype", sec, i, info->name);
			int gs = g->pairs ? 1 : g->start[1] - g->start[0];
			for (int k = 1; !g->pairs && k < g->n; k++)
				if (g->start[k + 1] - g->start[k] != gs && in->op != NX_I_ALL_REDUCE)
					return err(c, "%s: instruction %zu (%s): replica groups of different sizes", sec, i,
					           info->name);
			uint64_t nd = (uint64_t)a[0].part_count * nx_ap_free_elems(&a[0]),
			         ns = (uint64_t)a[1].part_count * nx_ap_free_elems(&a[1]);
			bool ok = in->op == NX_I_ALL_GATHER ? nd == ns * (uint64_t)gs
			          : in->op == NX_I_REDUCE_SCATTER ? ns == nd * (uint64_t)gs
			                                          : nd == ns;
			if (!ok)
				return err(c, "%s: instruction %zu (%s): destination of %llu elements does not fit a source "
				              "of %llu over groups of %d", sec, i, info->name, (unsigned long long)nd,
				           (unsigned long long)ns, gs);
		}
		break;
	}
	return NX_OK;
}

static nx_status check_stream(ctx *c, nx_neff *n, int e)
{
	char sec[32];
	snprintf(sec, sizeof sec, "sg00/%s.bin", nx_engine_names[e]);
	const nx_insn *v = n->stream[e];
	size_t cnt = n->nstream[e];
	n->loop_match[e] = calloc(cnt + 1, sizeof(int32_t));
	int64_t loop_max[NX_LOOP_DEPTH] = {0};
	uint64_t trips[NX_LOOP_DEPTH + 1] = {1}; /* product of enclosing static counts */
	size_t open[NX_LOOP_DEPTH], copen[NX_CTRL_DEPTH];
	int depth = 0, cdepth = 0;
	if (cnt > (1u << 24))
		return err(c, "%s: too many instructions (%zu)", sec, cnt);
	for (size_t i = 0; i < cnt; i++) {
		const nx_insn *in = &v[i];
		/* control loops (device while loops) nest around the data loops:
		 * one may not open or close inside a data loop */
		if ((in->op == NX_I_LOOP && in->iarg[2] != 0 && in->iarg[2] != 1) ||
		    (in->op == NX_I_ENDLOOP && in->iarg[0] != 0 && in->iarg[0] != 1))
			return err(c, "%s: instruction %zu: bad loop kind", sec, i);
		if (in->op == NX_I_BRZ && (cdepth == 0 || depth))
			return err(c, "%s: instruction %zu: brz outside a control loop or inside a data loop", sec, i);
		if (nx_isa_ctrl_loop(in)) {
			if (depth)
				return err(c, "%s: instruction %zu: control loop inside a data loop", sec, i);
			if (in->op == NX_I_LOOP) {
				if (cdepth == NX_CTRL_DEPTH)
					return err(c, "%s: instruction %zu: control loops nested deeper than %d", sec, i,
					           NX_CTRL_DEPTH);
				if (in->iarg[1] != 0 || in->iarg[0] < 1 || in->iarg[0] > (1 << 24))
					return err(c, "%s: instruction %zu: loop count %d out of range", sec, i, in->iarg[0]);
				copen[cdepth++] = i;
				continue;
			}
			if (cdepth == 0)
				return err(c, "%s: instruction %zu: endloop without loop", sec, i);
			size_t b = copen[--cdepth];
			n->loop_match[e][b] = (int32_t)i;
			n->loop_match[e][i] = (int32_t)b;
			continue;
		}
		if (in->op == NX_I_LOOP) {
			if (depth == NX_LOOP_DEPTH)
				return err(c, "%s: instruction %zu: loops nested deeper than %d", sec, i, NX_LOOP_DEPTH);
			if (in->iarg[1] < 0 || in->iarg[1] > NX_NREGS)
				return err(c, "%s: instruction %zu: bad loop count register", sec, i);
			if (in->iarg[1] == 0 && (in->iarg[0] < 1 || in->iarg[0] > (1 << 24)))
				return err(c, "%s: instruction %zu: loop count %d out of range", sec, i, in->iarg[0]);
			/* register counts are checked while running */
			loop_max[depth] = in->iarg[1] ? 0 : in->iarg[0] - 1;
			if (__builtin_mul_overflow(trips[depth], (uint64_t)loop_max[depth] + 1, &trips[depth + 1]))
				trips[depth + 1] = UINT64_MAX;
			open[depth++] = i;
			continue;
		}
		if (in->op == NX_I_ENDLOOP) {
			if (depth == 0)
				return err(c, "%s: instruction %zu: endloop without loop", sec, i);
			size_t b = open[--depth];
			n->loop_match[e][b] = (int32_t)i;
			n->loop_match[e][i] = (int32_t)b;
			continue;
		}
		/* a lower bound of the steps a run takes: nx_rt_run refuses a
		 * program that cannot finish within its budget before it starts */
		if (__builtin_add_overflow(n->min_steps, trips[depth], &n->min_steps))
			n->min_steps = UINT64_MAX;
		nx_status st = check_semantics(c, n, sec, i, in);
		if (st != NX_OK)
			return st;
		for (int k = 0; k < nx_isa_table[in->op].nap; k++)
			if (in->ap[k].space != NX_MEM_NONE &&
			    (st = check_ap(c, n, sec, i, k, &in->ap[k], loop_max, depth)) != NX_OK)
				return st;
	}
	if (depth)
		return err(c, "%s: loop at instruction %zu is never closed", sec, open[depth - 1]);
	if (cdepth)
		return err(c, "%s: loop at instruction %zu is never closed", sec, copen[cdepth - 1]);
	return NX_OK;
}

static char *opt_str(const nx_json *o, const char *key)
{
	const nx_json *v = nx_json_get(o, key);
	return v && v->type == NX_J_STR ? strdup(v->str) : NULL;
}

static int opt_int(const nx_json *o, const char *key)
{
	const nx_json *v = nx_json_get(o, key);
	return v && v->type == NX_J_NUM && v->is_int && v->inum > 0 && v->inum < (1 << 30) ? (int)v->inum : 0;
}

/* debug.json "sources" (optional, for profiles and reports): ignored unless
 * it is a list as long as "names"; malformed entries read as unknown. */
static void load_debug_src(nx_neff *n, const nx_json *src)
{
	if (!src || src->type != NX_J_ARR || src->n != n->ndebug)
		return;
	n->debug_src = calloc((size_t)n->ndebug + 1, sizeof *n->debug_src);
	for (int i = 0; i < src->n; i++) {
		const nx_json *o = &src->items[i];
		if (o->type != NX_J_OBJ)
			continue;
		n->debug_src[i] = (nx_neff_src){opt_str(o, "hlo"), opt_str(o, "kind"), opt_int(o, "line"),
		                                opt_str(o, "op_name"), opt_str(o, "source_file"), opt_int(o, "source_line")};
	}
}

/* ------------------------------------------------------------------ load */

static nx_status load(ctx *c, nx_neff *n, const nx_target *tgt)
{
	const uint8_t *h = n->file;
	size_t len = n->file_len;
	if (len < NX_NEFF_HEADER_SIZE)
		return err(c, "truncated header (%zu bytes, a .neff starts with %d)", len, NX_NEFF_HEADER_SIZE);
	if (memcmp(h, NX_NEFF_MAGIC, 8) != 0)
		return err(c, "not a .neff file (bad magic)");
	n->version = (uint32_t)nx_get_le(h + NX_NEFF_OFF_VERSION, 4);
	if (n->version != NX_NEFF_VERSION)
		return err(c, "unsupported .neff format version %u (this runtime reads version %d)",
		           n->version, NX_NEFF_VERSION);
	if (nx_get_le(h + NX_NEFF_OFF_HEADER_SIZE, 4) != NX_NEFF_HEADER_SIZE)
		return err(c, "bad header size field");
	uint64_t pl = nx_get_le(h + NX_NEFF_OFF_PAYLOAD_SIZE, 8);
	if (pl != len - NX_NEFF_HEADER_SIZE)
		return err(c, "payload size field says %llu bytes but the file holds %zu (truncated?)",
		           (unsigned long long)pl, len - NX_NEFF_HEADER_SIZE);
	uint8_t sha[32];
	nx_sha256(h, NX_NEFF_OFF_HEADER_SHA256, sha);
	if (memcmp(sha, h + NX_NEFF_OFF_HEADER_SHA256, 32) != 0)
		return err(c, "header sha256 mismatch (file corrupted?)");
	for (int k = NX_NEFF_OFF_END; k < NX_NEFF_HEADER_SIZE; k++)
		if (h[k])
			return err(c, "reserved header byte %d is not zero", k);
	nx_sha256(h + NX_NEFF_HEADER_SIZE, (size_t)pl, sha);
	if (memcmp(sha, h + NX_NEFF_OFF_SHA256, 32) != 0)
		return err(c, "payload sha256 mismatch (file corrupted?)");
	memcpy(n->sha256, sha, 32);
	memcpy(n->uuid, h + NX_NEFF_OFF_UUID, 16);
	n->n_cores = (uint32_t)nx_get_le(h + NX_NEFF_OFF_NCORES, 4);
	n->features = (uint32_t)nx_get_le(h + NX_NEFF_OFF_FEATURES, 4);
	memcpy(n->target, h + NX_NEFF_OFF_TARGET, 16);
	memcpy(n->compiler, h + NX_NEFF_OFF_COMPILER, 32);
	memcpy(n->module, h + NX_NEFF_OFF_MODULE, 128);
	if (n->features & ~(uint32_t)NX_NEFF_FEAT_ALL)
		return err(c, "unknown feature bits 0x%x", n->features);
	if (n->n_cores < 1 || n->n_cores > 64)
		return err(c, "bad NeuronCore count %u", n->n_cores);
	n->tgt = tgt ? tgt : nx_target_get(n->target);
	if (!n->tgt)
		return err(c, "unknown target '%s'", n->target);

	tar_ent *ents;
	int nents;
	nx_status st = read_tar(c, h + NX_NEFF_HEADER_SIZE, (size_t)pl, &ents, &nents);
	if (st != NX_OK)
		return st;
	n->nsections = nents;
	n->section_names = calloc((size_t)nents + 1, sizeof(char *));
	n->section_sizes = calloc((size_t)nents + 1, sizeof(size_t));
	for (int i = 0; i < nents; i++) {
		n->section_names[i] = strdup(ents[i].name);
		n->section_sizes[i] = ents[i].size;
	}
	{ /* GpSimd kernels: names checked and counted now, compiled after the streams */
		char gerr[200];
		if ((n->ngpsimd = nx_rt_gpsimd_count(nents, (const char *const *)n->section_names, gerr, sizeof gerr)) < 0) {
			free(ents);
			return err(c, "%s", gerr);
		}
	}
	const tar_ent *de = find(ents, nents, "sg00/def.json");
	if (!de) {
		free(ents);
		return err(c, "section sg00/def.json missing");
	}
	char jerr[128];
	nx_json *def = nx_json_parse((const char *)de->data, de->size, jerr, sizeof jerr);
	if (!def || def->type != NX_J_OBJ) {
		nx_json_free(def);
		free(ents);
		return err(c, "sg00/def.json: %s", def ? "not an object" : jerr);
	}
	int64_t v;
	if (jint(def, "format", NX_NEFF_VERSION, NX_NEFF_VERSION, &v) != 0)
		st = err(c, "sg00/def.json: bad format");
	else if (jint(def, "hbm_size", 0, n->tgt->hbm_bytes, &n->hbm_size) != 0)
		st = err(c, "sg00/def.json: hbm_size missing or larger than the target's %lld bytes",
		         (long long)n->tgt->hbm_bytes);
	else if (jint(def, "scratch_offset", 0, n->hbm_size, &n->scratch_offset) != 0 ||
	         jint(def, "scratch_size", 0, n->hbm_size - n->scratch_offset, &n->scratch_size) != 0)
		st = err(c, "sg00/def.json: scratch area outside hbm_size");
	else if (jint(def, "semaphores", 0, n->tgt->semaphores, &v) != 0)
		st = err(c, "sg00/def.json: semaphore count missing or above the target's %d", n->tgt->semaphores);
	else {
		n->nsems = (int)v;
		st = replica_groups(c, n, def);
		if (st == NX_OK)
			st = tensors(c, n, def, "inputs", &n->inputs, &n->ninputs, ents, nents);
		if (st == NX_OK)
			st = tensors(c, n, def, "outputs", &n->outputs, &n->noutputs, ents, nents);
		if (st == NX_OK)
			st = tensors(c, n, def, "constants", &n->consts, &n->nconsts, ents, nents);
	}
	nx_json_free(def);
	for (int e = 0; e < NX_ENG_COUNT && st == NX_OK; e++) {
		char sec[32], m[160];
		snprintf(sec, sizeof sec, "sg00/%s.bin", nx_engine_names[e]);
		const tar_ent *se = find(ents, nents, sec);
		if (!se) {
			st = err(c, "section %s missing", sec);
			break;
		}
		int eng;
		if (nx_isa_decode(se->data, se->size, &eng, &n->stream[e], &n->nstream[e], m, sizeof m) != 0) {
			st = err(c, "%s: %s", sec, m);
			break;
		}
		if (eng != e) {
			st = err(c, "%s: holds the %s stream", sec, nx_engine_names[eng]);
			break;
		}
		st = check_stream(c, n, e);
	}
	if (st == NX_OK && n->ngpsimd > 0) { /* validate, sandbox and JIT-compile (sim_gpsimd.c) */
		char gerr[320];
		const uint8_t **gd = calloc((size_t)nents + 1, sizeof *gd);
		for (int k = 0; k < nents; k++)
			gd[k] = ents[k].data;
		n->gpsimd = nx_rt_gpsimd_load(nents, (const char *const *)n->section_names, gd, n->section_sizes, gerr,
		                              sizeof gerr);
		free(gd);
		if (!n->gpsimd)
			st = err(c, "%s", gerr);
	}
	const tar_ent *dbg = find(ents, nents, "sg00/debug.json");
	if (st == NX_OK && dbg) {
		nx_json *j = nx_json_parse((const char *)dbg->data, dbg->size, jerr, sizeof jerr);
		const nx_json *names = nx_json_get(j, "names");
		if (!names || names->type != NX_J_ARR)
			st = err(c, "sg00/debug.json: %s", j ? "no 'names' list" : jerr);
		else {
			n->debug_names = calloc((size_t)names->n + 1, sizeof(char *));
			for (int i = 0; i < names->n; i++)
				n->debug_names[n->ndebug++] =
				    strdup(names->items[i].type == NX_J_STR ? names->items[i].str : "?");
			load_debug_src(n, nx_json_get(j, "sources"));
		}
		nx_json_free(j);
	}
	free(ents);
	return st;
}

nx_neff *nx_rt_load_bytes(const uint8_t *bytes, size_t len, const char *name, const nx_target *t,
                          nx_diag *d)
{
	nx_neff *n = calloc(1, sizeof *n);
	n->file = malloc(len ? len : 1);
	memcpy(n->file, bytes, len);
	n->file_len = len;
	ctx c = {name ? name : "<neff>", d};
	if (load(&c, n, t) != NX_OK) {
		nx_neff_free(n);
		return NULL;
	}
	return n;
}

nx_neff *nx_rt_load(const char *path, const nx_target *t, nx_diag *d)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		nx_diag_set(d, NX_ERR_IO, path, 0, 0, "cannot open");
		return NULL;
	}
	size_t cap = 1 << 16, len = 0, k;
	uint8_t *b = malloc(cap);
	while ((k = fread(b + len, 1, cap - len, f)) > 0) {
		len += k;
		if (len == cap)
			b = realloc(b, cap *= 2);
	}
	fclose(f);
	nx_neff *n = nx_rt_load_bytes(b, len, path, t, d);
	free(b);
	return n;
}
