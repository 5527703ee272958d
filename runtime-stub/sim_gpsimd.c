/* runtime-stub/sim_gpsimd.c — the GpSimd engine: kernels loaded from
 * sg00/gpsimd/ (JIT-compiled once per load, gpsimd_jit.c) and the POOL
 * `call` instruction run on the simulated SBUF.
 *
 * A call runs its kernel once per GpSimd core (8, each wired to 16 SBUF
 * partitions) whose partitions the operands cover, with the operands
 * restricted to that core's partitions; the cores run in parallel, so the
 * call takes as long as the slowest core. Time is an estimate (no public
 * GpSimd ISA exists; docs/gpsimd.md "Cost estimate"):
 *   ns(core) = insts * elems / lanes / f + bytes / NX_GS_SBUF_BYTES_PER_CYCLE / f
 * insts: the LLVM IR instructions of the kernel's module (static, counted at
 * load: timing never depends on data, so --timing-only matches a full run),
 * elems: the elements of the core's largest operand slice, lanes: the SIMD
 * lanes the call credits (iarg2:
 * 16 for elementwise kernels that vectorize over 512-bit registers, 1 for
 * data-dependent ones), f: the POOL clock of the target, bytes: the bytes of
 * the core's operand slices. */
#include "runtime-stub/gpsimd.h"
#include "runtime-stub/sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NX_GS_SBUF_BYTES_PER_CYCLE 64.0 /* [assumption] one 512-bit access per cycle per core */

typedef struct kent {
	const char *name; /* without "sg00/gpsimd/" and ".bc" */
	size_t namelen;
	const uint8_t *data;
	size_t size;
} kent;

static int cmp_kent(const void *a, const void *b)
{
	const kent *x = a, *y = b;
	size_t n = x->namelen < y->namelen ? x->namelen : y->namelen;
	int c = memcmp(x->name, y->name, n);
	return c ? c : (x->namelen > y->namelen) - (x->namelen < y->namelen);
}

int nx_rt_gpsimd_count(int nsec, const char *const *names, char *err, size_t errlen)
{
	int n = 0;
	for (int k = 0; k < nsec; k++) {
		if (strncmp(names[k], "sg00/gpsimd/", 12) != 0)
			continue;
		size_t l = strlen(names[k]);
		if (l <= 15 || strcmp(names[k] + l - 3, ".bc") != 0) {
			snprintf(err, errlen, "section %s: GpSimd sections are sg00/gpsimd/NAME.bc", names[k]);
			return -1;
		}
		for (const char *p = names[k] + 12; p < names[k] + l - 3; p++)
			if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_')) {
				snprintf(err, errlen, "section %s: kernel names are [A-Za-z0-9_]", names[k]);
				return -1;
			}
		n++;
	}
	if (n > NX_GS_MAX_KERNELS) {
		snprintf(err, errlen, "%d GpSimd kernels (at most %d)", n, NX_GS_MAX_KERNELS);
		return -1;
	}
	return n;
}

nx_gs_prog *nx_rt_gpsimd_load(int nsec, const char *const *names, const uint8_t *const *data, const size_t *sizes,
                              char *err, size_t errlen)
{
	kent *v = calloc((size_t)nsec + 1, sizeof *v);
	int n = 0;
	for (int k = 0; k < nsec; k++)
		if (!strncmp(names[k], "sg00/gpsimd/", 12))
			v[n++] = (kent){names[k] + 12, strlen(names[k]) - 15, data[k], sizes[k]};
	qsort(v, (size_t)n, sizeof *v, cmp_kent);
	char **nm = calloc((size_t)n + 1, sizeof *nm);
	const uint8_t **d = calloc((size_t)n + 1, sizeof *d);
	size_t *l = calloc((size_t)n + 1, sizeof *l);
	nx_gs_prog *p = NULL;
	bool dup = false;
	for (int k = 0; k < n; k++) {
		nm[k] = strndup(v[k].name, v[k].namelen);
		d[k] = v[k].data, l[k] = v[k].size;
		dup |= k > 0 && cmp_kent(&v[k - 1], &v[k]) == 0;
	}
	if (dup)
		snprintf(err, errlen, "two GpSimd kernels of one name");
	else
		p = nx_gs_prog_load(n, (const char *const *)nm, d, l, err, errlen);
	for (int k = 0; k < n; k++)
		free(nm[k]);
	free(nm), free(d), free(l), free(v);
	return p;
}

static int64_t ap_off(const nx_ap *a, const int64_t *li, int depth)
{
	int64_t off = a->offset;
	for (int d = 0; d < depth && d < NX_LOOP_DEPTH; d++)
		off += li[d] * a->loop_stride[d];
	return off;
}

/* The partitions [p0, p1) of core's 16 that the call's operands cover. */
static bool core_parts(const nx_ap *a0, int core, int *p0, int *p1)
{
	*p0 = core * NX_GS_CORE_PARTS, *p1 = *p0 + NX_GS_CORE_PARTS;
	if (*p0 < a0->part_start)
		*p0 = a0->part_start;
	if (*p1 > a0->part_start + a0->part_count)
		*p1 = a0->part_start + a0->part_count;
	return *p0 < *p1;
}

/* The estimated time of a GpSimd call, from its access patterns and the
 * kernel's static size only (never from data, so that --timing-only gives
 * a full run's time): per GpSimd core, (static IR instructions x elements
 * of its largest operand slice / SIMD lanes + operand bytes / 64) cycles at
 * the POOL clock; the call takes its slowest core (docs/targets.md). */
double nx_sim_gpsimd_ns(const nx_sim *s, const nx_insn *in)
{
	const nx_neff *n = s->n;
	int k = in->iarg[0], nops = 0;
	if (!n->gpsimd || k < 0 || k >= nx_gs_prog_count(n->gpsimd))
		return 0;
	while (nops < 4 && in->ap[nops].space != NX_MEM_NONE)
		nops++;
	const nx_ap *a0 = &in->ap[0];
	double f = s->t->freq_ghz[NX_ENG_POOL], worst = 0;
	double si = (double)nx_gs_prog_static_insts(n->gpsimd, k);
	int lanes = in->iarg[2] < 1 ? 1 : in->iarg[2] > NX_GS_MAX_LANES ? NX_GS_MAX_LANES : in->iarg[2];
	for (int core = 0; core < NX_GS_CORES; core++) {
		int p0, p1;
		if (!core_parts(a0, core, &p0, &p1))
			continue;
		double bytes = 0, elems = 0;
		for (int j = 0; j < nops; j++) {
			const nx_ap *a = &in->ap[j];
			int esz = nx_dtype_bytes[a->dtype];
			double e = 1;
			int64_t ext = esz;
			for (int d = 0; d < a->ndims; d++) {
				e *= (double)a->count[d];
				ext += (int64_t)a->stride[d] * esz * ((int64_t)a->count[d] - 1);
			}
			bytes += (double)(p1 - p0) * (double)ext;
			if (e * (p1 - p0) > elems)
				elems = e * (p1 - p0);
		}
		double c = (si * elems / lanes + bytes / NX_GS_SBUF_BYTES_PER_CYCLE) / f;
		if (c > worst)
			worst = c;
	}
	return worst;
}

nx_status nx_sim_gpsimd(nx_sim *s, const nx_insn *in, const int64_t *li, int depth, double *ns)
{
	const nx_neff *n = s->n;
	int k = in->iarg[0], nops = 0;
	*ns = 0;
	if (!n->gpsimd || k < 0 || k >= nx_gs_prog_count(n->gpsimd))
		return nx_diag_set(s->d, NX_ERR_INPUT, NULL, 0, 0, "%s: call of GpSimd kernel %d, the .neff has %d", s->where, k,
		                   nx_gs_prog_count(n->gpsimd));
	while (nops < 4 && in->ap[nops].space != NX_MEM_NONE)
		nops++;
	int64_t pb = s->t->sbuf_partition_bytes;
	const nx_ap *a0 = &in->ap[0];
	for (int core = 0; core < NX_GS_CORES; core++) {
		int p0, p1;
		if (!core_parts(a0, core, &p0, &p1))
			continue;
		nx_gs_tensor t[4];
		nx_gs_region r[4];
		for (int j = 0; j < nops; j++) {
			const nx_ap *a = &in->ap[j];
			int esz = nx_dtype_bytes[a->dtype];
			int64_t off = ap_off(a, li, depth);
			memset(&t[j], 0, sizeof t[j]);
			t[j].data = s->sbuf + (int64_t)p0 * pb + off;
			t[j].dtype = a->dtype;
			t[j].rank = 3;
			t[j].shape[0] = p1 - p0;
			t[j].stride[0] = pb / esz;
			t[j].shape[1] = a->ndims >= 2 ? a->count[0] : 1;
			t[j].stride[1] = a->ndims >= 2 ? a->stride[0] : 0;
			t[j].shape[2] = a->ndims >= 2 ? a->count[1] : a->ndims == 1 ? a->count[0] : 1;
			t[j].stride[2] = a->ndims >= 2 ? a->stride[1] : a->ndims == 1 ? a->stride[0] : 1;
			int64_t ext = esz;
			for (int d = 0; d < a->ndims; d++)
				ext += (int64_t)a->stride[d] * esz * ((int64_t)a->count[d] - 1);
			r[j] = (nx_gs_region){s->sbuf + (int64_t)p0 * pb, pb, p1 - p0, off, off + ext, j < in->iarg[1]};
		}
		uint64_t insts = 0; /* executed IR instructions: not used for timing */
		char msg[320];
		if (nx_gs_run(n->gpsimd, k, t, nops, r, nops, &insts, msg, sizeof msg) != 0)
			return nx_diag_set(s->d, NX_ERR_INPUT, NULL, 0, 0, "%s: GpSimd kernel '%s' on core %d (partitions %d..%d): %s",
			                   s->where, nx_gs_prog_name(n->gpsimd, k), core, p0, p1 - 1, msg);
	}
	*ns = nx_sim_gpsimd_ns(s, in);
	return NX_OK;
}
