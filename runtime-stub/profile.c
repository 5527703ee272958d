/* runtime-stub/profile.c — per-instruction profile of a simulated run, its
 * summary, counter tracks and writers (see profile.h, docs/profile.md). */
#include "runtime-stub/profile.h"

#include "ir/file_atomic.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static const char *const engine_long[NX_ENG_COUNT] = {"TensorE", "ScalarE", "VectorE", "GpSimdE", "SyncE"};

nx_rt_profile *nx_prof_new(const nx_neff *n)
{
	nx_rt_profile *p = calloc(1, sizeof *p);
	p->n = n;
	p->ntracks = NX_ENG_COUNT + n->tgt->dma_engines;
	p->track_busy = calloc((size_t)p->ntracks, sizeof *p->track_busy);
	p->k = calloc((size_t)n->ndebug + 1, sizeof *p->k);
	for (int i = 0; i <= n->ndebug; i++) {
		p->k[i].first = INFINITY;
		p->k[i].last = -INFINITY;
		for (int s = 0; s < 2; s++) {
			p->k[i].lo[s] = INT64_MAX, p->k[i].hi[s] = -1;
			p->k[i].plo[s] = INT32_MAX, p->k[i].phi[s] = -1;
		}
	}
	return p;
}

void nx_prof_free(nx_rt_profile *p)
{
	if (!p)
		return;
	free(p->ev);
	free(p->track_busy);
	free(p->k);
	for (int c = 0; c < NX_PROF_NCOUNTERS; c++) {
		free(p->counters[c].t);
		free(p->counters[c].v);
	}
	free(p);
}

static uint64_t ap_bytes(const nx_ap *a)
{
	return a->space == NX_MEM_NONE ? 0 : (uint64_t)a->part_count * nx_ap_free_elems(a) * nx_dtype_bytes[a->dtype];
}

/* A transfer's size (DMA, collective), else the bytes an instruction reads
 * and writes. */
static uint64_t insn_bytes(const nx_insn *in)
{
	int cost = nx_isa_table[in->op].cost;
	if (cost == NX_COST_DMA || cost == NX_COST_CC)
		return ap_bytes(&in->ap[0]);
	uint64_t b = 0;
	for (int a = 0; a < nx_isa_table[in->op].nap; a++)
		b += ap_bytes(&in->ap[a]);
	return b;
}

/* The byte range [*lo, *hi) an access pattern touches within a partition. */
static void ap_range(const nx_ap *a, const int64_t *li, int depth, int64_t *lo, int64_t *hi)
{
	int64_t off = a->offset, esz = nx_dtype_bytes[a->dtype], mn = 0, mx = 0;
	for (int d = 0; d < depth && d < NX_LOOP_DEPTH; d++)
		off += li[d] * a->loop_stride[d];
	for (int i = 0; i < a->ndims; i++) {
		int64_t reach = (int64_t)a->stride[i] * (a->count[i] ? a->count[i] - 1 : 0) * esz;
		if (reach < 0)
			mn += reach;
		else
			mx += reach;
	}
	*lo = off + mn;
	*hi = off + mx + esz;
}

static double insn_flops(const nx_insn *in, double *pe)
{
	const nx_ap *a = in->ap;
	switch (in->op) {
	case NX_I_MATMUL: {
		double f = 2.0 * a[1].part_count * (double)nx_ap_free_elems(&a[1]) * (double)nx_ap_free_elems(&a[2]);
		*pe = f;
		return f;
	}
	case NX_I_ACTIVATE:
	case NX_I_TENSOR_TENSOR:
	case NX_I_TENSOR_SCALAR:
	case NX_I_SELECT:
		return (double)a[0].part_count * (double)nx_ap_free_elems(&a[0]);
	case NX_I_TENSOR_REDUCE:
	case NX_I_PARTITION_REDUCE:
		return (double)a[1].part_count * (double)nx_ap_free_elems(&a[1]);
	default:
		return 0;
	}
}

void nx_prof_add(nx_rt_profile *p, int track, double start, double dur, const nx_insn *in, const int64_t *loop_idx,
                 int depth)
{
	if (!p)
		return;
	if (p->nev < NX_PROF_MAX_EVENTS) {
		if (p->nev == p->cap) {
			p->cap = p->cap ? 2 * p->cap : 4096;
			p->ev = realloc(p->ev, p->cap * sizeof *p->ev);
		}
		p->ev[p->nev++] = (nx_prof_ev){start, dur, in, track};
	} else {
		p->truncated = true;
	}
	p->insns++;
	if (track >= 0 && track < p->ntracks)
		p->track_busy[track] += dur;
	uint32_t id = in->debug_id < (uint32_t)p->n->ndebug ? in->debug_id : (uint32_t)p->n->ndebug;
	nx_prof_kernel *k = &p->k[id];
	k->first = start < k->first ? start : k->first;
	k->last = start + dur > k->last ? start + dur : k->last;
	k->busy_ns += dur;
	k->insns++;
	double pe = 0, f = insn_flops(in, &pe);
	k->flops += f;
	p->flops += f;
	if (pe > 0) {
		const nx_target *t = p->n->tgt;
		int dt = in->ap[2].dtype;
		double tf = dt == NX_DT_F32 ? t->pe_tflops_fp32
		          : dt == NX_DT_FP8E4M3 || dt == NX_DT_FP8E5M2 ? t->pe_tflops_fp8 : t->pe_tflops_bf16;
		p->pe_flops += pe;
		p->pe_min_ns += pe / (tf * 1e3);
	}
	int cost = nx_isa_table[in->op].cost;
	if (cost == NX_COST_DMA || cost == NX_COST_CC) {
		uint64_t b = ap_bytes(&in->ap[0]);
		if (in->ap[1].space == NX_MEM_HBM)
			k->hbm_read += b, p->hbm_read += b;
		if (in->ap[0].space == NX_MEM_HBM)
			k->hbm_write += b, p->hbm_write += b;
	}
	for (int i = 0; i < nx_isa_table[in->op].nap; i++) {
		const nx_ap *a = &in->ap[i];
		if (a->space != NX_MEM_SBUF && a->space != NX_MEM_PSUM)
			continue;
		int s = a->space == NX_MEM_SBUF ? 0 : 1;
		int64_t lo, hi;
		ap_range(a, loop_idx, depth, &lo, &hi);
		k->lo[s] = lo < k->lo[s] ? lo : k->lo[s];
		k->hi[s] = hi > k->hi[s] ? hi : k->hi[s];
		k->plo[s] = a->part_start < k->plo[s] ? a->part_start : k->plo[s];
		k->phi[s] = a->part_start + a->part_count > k->phi[s] ? a->part_start + a->part_count : k->phi[s];
	}
}

typedef struct {
	double t, dv;
} step;

static int cmp_step(const void *a, const void *b)
{
	const step *x = a, *y = b;
	return x->t < y->t ? -1 : x->t > y->t ? 1 : (x->dv > y->dv) - (x->dv < y->dv); /* releases first */
}

/* Turns +dv/-dv steps into a counter track (one point per distinct time). */
static void make_counter(nx_prof_counter *c, const char *name, step *s, size_t n, double *peak)
{
	qsort(s, n, sizeof *s, cmp_step);
	c->name = name;
	c->t = malloc((n + 1) * sizeof *c->t);
	c->v = malloc((n + 1) * sizeof *c->v);
	c->t[0] = 0, c->v[0] = 0, c->n = 1;
	double v = 0;
	*peak = 0;
	for (size_t i = 0; i < n; i++) {
		v += s[i].dv;
		if (fabs(v) < 0.5)
			v = 0;
		if (c->t[c->n - 1] == s[i].t)
			c->v[c->n - 1] = v;
		else
			c->t[c->n] = s[i].t, c->v[c->n++] = v;
		*peak = v > *peak ? v : *peak;
	}
}

void nx_prof_finish(nx_rt_profile *p, const nx_rt_stats *st)
{
	const nx_neff *n = p->n;
	const nx_target *t = n->tgt;
	double total_ns = st->total_ns;
	p->total_ns = total_ns;
	for (int e = 0; e < NX_ENG_COUNT; e++)
		p->track_busy[e] = st->busy_ns[e];
	p->io_bytes = 0;
	for (int i = 0; i < n->ninputs; i++)
		p->io_bytes += n->inputs[i].bytes;
	for (int i = 0; i < n->noutputs; i++)
		p->io_bytes += n->outputs[i].bytes;
	for (int i = 0; i < n->nconsts; i++)
		p->io_bytes += n->consts[i].bytes;
	double mem_ns = (double)p->io_bytes / t->hbm_gbps;
	p->roofline_ns = p->pe_min_ns > mem_ns ? p->pe_min_ns : mem_ns;
	p->mfu_percent = total_ns > 0 ? 100.0 * p->pe_flops / (total_ns * t->pe_tflops_bf16 * 1e3) : 0;

	/* on-chip memory held by running kernels: each kernel's SBUF / PSUM
	 * footprint from its first instruction's start to its last one's end */
	size_t nk = (size_t)n->ndebug + 1, ns[2] = {0, 0};
	step *s[2] = {calloc(2 * nk + 1, sizeof(step)), calloc(2 * nk + 1, sizeof(step))};
	for (size_t i = 0; i < nk; i++) {
		const nx_prof_kernel *k = &p->k[i];
		for (int m = 0; m < 2; m++) {
			if (k->hi[m] < 0 || k->first > k->last)
				continue;
			double b = (double)(k->hi[m] - k->lo[m]) * (k->phi[m] - k->plo[m]);
			s[m][ns[m]++] = (step){k->first, b};
			s[m][ns[m]++] = (step){k->last, -b};
		}
	}
	make_counter(&p->counters[NX_PROF_SBUF], "SBUF bytes in use", s[0], ns[0], &p->peak[NX_PROF_SBUF]);
	make_counter(&p->counters[NX_PROF_PSUM], "PSUM bytes in use", s[1], ns[1], &p->peak[NX_PROF_PSUM]);
	free(s[0]);
	free(s[1]);

	/* DMA bytes in flight, and the time any queue is busy */
	size_t nd = 0;
	for (size_t i = 0; i < p->nev; i++)
		nd += p->ev[i].track >= NX_ENG_COUNT;
	step *dm = calloc(2 * nd + 1, sizeof *dm), *busy = calloc(2 * nd + 1, sizeof *busy);
	size_t j = 0;
	for (size_t i = 0; i < p->nev; i++) {
		const nx_prof_ev *e = &p->ev[i];
		if (e->track < NX_ENG_COUNT)
			continue;
		double b = (double)ap_bytes(&e->in->ap[0]);
		busy[j] = (step){e->start, 1};
		dm[j++] = (step){e->start, b};
		busy[j] = (step){e->start + e->dur, -1};
		dm[j++] = (step){e->start + e->dur, -b};
	}
	make_counter(&p->counters[NX_PROF_DMA_INFLIGHT], "DMA bytes in flight", dm, j, &p->peak[NX_PROF_DMA_INFLIGHT]);
	qsort(busy, j, sizeof *busy, cmp_step);
	double active = 0, since = 0, open = 0;
	for (size_t i = 0; i < j; i++) {
		if (open == 0 && busy[i].dv > 0)
			since = busy[i].t;
		open += busy[i].dv;
		if (open == 0)
			active += busy[i].t - since;
	}
	p->dma_active_ns = active;
	free(dm);
	free(busy);
}

double nx_prof_busy_percent(const nx_rt_profile *p, int track)
{
	return p->total_ns > 0 ? 100.0 * p->track_busy[track] / p->total_ns : 0;
}

const char *nx_prof_track_name(int track, char *buf, size_t n)
{
	if (track < NX_ENG_COUNT)
		snprintf(buf, n, "%s (%s)", nx_engine_names[track], engine_long[track]);
	else
		snprintf(buf, n, "dma queue %d", track - NX_ENG_COUNT);
	return buf;
}

const char *nx_prof_kernel_name(const nx_rt_profile *p, uint32_t k)
{
	return k < (uint32_t)p->n->ndebug ? p->n->debug_names[k] : "?";
}

static void jstr(FILE *f, const char *s)
{
	fputc('"', f);
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

/* Trace layout: pid 1 the engines (tid = engine), pid 2 the DMA queues
 * (tid = queue), pid 3 the counter tracks. Times in microseconds. */
nx_status nx_prof_write_chrome(const nx_rt_profile *p, const char *path, nx_diag *d)
{
	nx_afile af;
	if (nx_afile_open(&af, path, d) != NX_OK)
		return d->status;
	FILE *f = af.f;
	const nx_neff *n = p->n;
	char name[64];
	fprintf(f, "{\"displayTimeUnit\": \"ns\", \"otherData\": {\"module\": ");
	jstr(f, n->module);
	fprintf(f, ", \"target\": \"%s\", \"total_time_ns\": %.3f, \"truncated\": %s},\n\"traceEvents\": [\n",
	        n->tgt->name, p->total_ns, p->truncated ? "true" : "false");
	const char *procs[3] = {"NeuronCore engines", "DMA queues", "on-chip memory"};
	for (int pid = 1; pid <= 3; pid++)
		fprintf(f,
		        "{\"name\": \"process_name\", \"ph\": \"M\", \"ts\": 0, \"pid\": %d, \"tid\": 0, \"args\": {\"name\": \"%s\"}},\n"
		        "{\"name\": \"process_sort_index\", \"ph\": \"M\", \"ts\": 0, \"pid\": %d, \"tid\": 0, \"args\": {\"sort_index\": %d}},\n",
		        pid, procs[pid - 1], pid, pid);
	for (int t = 0; t < p->ntracks; t++) {
		int pid = t < NX_ENG_COUNT ? 1 : 2, tid = t < NX_ENG_COUNT ? t : t - NX_ENG_COUNT;
		fprintf(f, "{\"name\": \"thread_name\", \"ph\": \"M\", \"ts\": 0, \"pid\": %d, \"tid\": %d, \"args\": {\"name\": ",
		        pid, tid);
		jstr(f, nx_prof_track_name(t, name, sizeof name));
		fprintf(f, "}},\n{\"name\": \"thread_sort_index\", \"ph\": \"M\", \"ts\": 0, \"pid\": %d, \"tid\": %d, "
		           "\"args\": {\"sort_index\": %d}},\n", pid, tid, tid);
	}
	for (size_t i = 0; i < p->nev; i++) {
		const nx_prof_ev *e = &p->ev[i];
		const nx_insn *in = e->in;
		int pid = e->track < NX_ENG_COUNT ? 1 : 2, tid = e->track < NX_ENG_COUNT ? e->track : e->track - NX_ENG_COUNT;
		double dummy = 0;
		fprintf(f, "{\"name\": \"%s\", \"cat\": \"%s\", \"ph\": \"X\", \"pid\": %d, \"tid\": %d, \"ts\": %.4f, \"dur\": %.4f, "
		           "\"args\": {\"instruction\": \"sg00/%s.bin:%ld\", \"kernel\": ",
		        nx_isa_table[in->op].name, nx_engine_names[in->engine], pid, tid, e->start / 1000.0,
		        e->dur / 1000.0, nx_engine_names[in->engine], (long)(in - n->stream[in->engine]));
		jstr(f, nx_prof_kernel_name(p, in->debug_id));
		if (n->debug_src && in->debug_id < (uint32_t)n->ndebug) {
			const nx_neff_src *r = &n->debug_src[in->debug_id];
			if (r->hlo) {
				fprintf(f, ", \"hlo\": ");
				jstr(f, r->hlo);
			}
			if (r->line)
				fprintf(f, ", \"hlo_line\": %d", r->line);
			if (r->source_file) {
				fprintf(f, ", \"source\": ");
				char src[600];
				snprintf(src, sizeof src, "%s:%d", r->source_file, r->source_line);
				jstr(f, src);
			}
		}
		fprintf(f, ", \"bytes\": %llu, \"flops\": %.0f", (unsigned long long)insn_bytes(in), insn_flops(in, &dummy));
		if (nx_isa_table[in->op].cost == NX_COST_DMA) /* partition rows: the on-chip side's, else the source's */
			fprintf(f, ", \"rows\": %u", (unsigned)(in->ap[0].space != NX_MEM_HBM ? in->ap[0].part_count : in->ap[1].part_count));
		fprintf(f, "}},\n");
	}
	for (int c = 0; c < NX_PROF_NCOUNTERS; c++) {
		const nx_prof_counter *k = &p->counters[c];
		for (size_t i = 0; i < k->n; i++) {
			fprintf(f, "{\"name\": ");
			jstr(f, k->name);
			fprintf(f, ", \"ph\": \"C\", \"pid\": 3, \"tid\": 0, \"ts\": %.4f, \"args\": {\"bytes\": %.0f}}%s\n",
			        k->t[i] / 1000.0, k->v[i], c == NX_PROF_NCOUNTERS - 1 && i + 1 == k->n ? "" : ",");
		}
	}
	fprintf(f, "]}\n");
	return nx_afile_commit(&af, false, d);
}

nx_status nx_prof_write_summary(const nx_rt_profile *p, const char *path, nx_diag *d)
{
	nx_afile af;
	if (nx_afile_open(&af, path, d) != NX_OK)
		return d->status;
	FILE *f = af.f;
	const nx_target *t = p->n->tgt;
	double dma = p->total_ns > 0 ? 100.0 * p->dma_active_ns / p->total_ns : 0;
	fprintf(f, "{\n  \"module\": ");
	jstr(f, p->n->module);
	fprintf(f, ",\n  \"target\": \"%s\",\n  \"total_time\": %.9g,\n  \"total_time_ns\": %.3f,\n"
	           "  \"mfu_estimated_percent\": %.4f,\n"
	           "  \"tensor_engine_active_time_percent\": %.4f,\n"
	           "  \"vector_engine_active_time_percent\": %.4f,\n"
	           "  \"scalar_engine_active_time_percent\": %.4f,\n"
	           "  \"gpsimd_engine_active_time_percent\": %.4f,\n"
	           "  \"sync_engine_active_time_percent\": %.4f,\n"
	           "  \"dma_active_time_percent\": %.4f,\n"
	           "  \"hbm_read_bytes\": %llu,\n  \"hbm_write_bytes\": %llu,\n"
	           "  \"tensor_engine_flops\": %.0f,\n  \"flops\": %.0f,\n"
	           "  \"roofline_time_ns\": %.3f,\n  \"roofline_ratio\": %.4f,\n"
	           "  \"sbuf_peak_bytes\": %.0f,\n  \"psum_peak_bytes\": %.0f,\n  \"dma_peak_bytes_in_flight\": %.0f,\n"
	           "  \"instructions\": %llu,\n  \"events_truncated\": %s\n}\n",
	        t->name, p->total_ns * 1e-9, p->total_ns, p->mfu_percent, nx_prof_busy_percent(p, NX_ENG_PE),
	        nx_prof_busy_percent(p, NX_ENG_DVE), nx_prof_busy_percent(p, NX_ENG_ACT),
	        nx_prof_busy_percent(p, NX_ENG_POOL), nx_prof_busy_percent(p, NX_ENG_SP), dma,
	        (unsigned long long)p->hbm_read, (unsigned long long)p->hbm_write, p->pe_flops, p->flops, p->roofline_ns,
	        p->roofline_ns > 0 ? p->total_ns / p->roofline_ns : 0, p->peak[NX_PROF_SBUF], p->peak[NX_PROF_PSUM],
	        p->peak[NX_PROF_DMA_INFLIGHT], (unsigned long long)p->insns, p->truncated ? "true" : "false");
	return nx_afile_commit(&af, false, d);
}

nx_status nx_rt_profile_output(nx_rt_profile *p, const nx_rt_stats *st, const nx_rt_opts *o, nx_diag *d)
{
	nx_prof_finish(p, st);
	nx_status rc = NX_OK;
	if (o->profile_path)
		rc = o->profile_format == NX_RT_PROFILE_SUMMARY ? nx_prof_write_summary(p, o->profile_path, d)
		                                                : nx_prof_write_chrome(p, o->profile_path, d);
	if (rc != NX_OK) { /* the run reports only the message: name the file in it */
		char *msg = nx_xasprintf("%s", d->msg ? d->msg : "write failed");
		nx_diag_set(d, rc, o->profile_path, 0, 0, "%s: cannot write the profile: %s", o->profile_path, msg);
		free(msg);
	}
	if (o->profile_out && rc == NX_OK)
		*o->profile_out = p;
	else
		nx_prof_free(p);
	return rc;
}
