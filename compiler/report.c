/* compiler/report.c — the HTML report of a simulated run (see report.h). */
#include "compiler/report.h"

#include "compiler/cli.h"
#include "ir/file_atomic.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { W = 1040, LABEL = 130 }; /* SVG width, label column */

static void esc(FILE *f, const char *s)
{
	for (; s && *s; s++)
		switch (*s) {
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		case '"': fputs("&quot;", f); break;
		default: fputc(*s, f);
		}
}

/* A stable, readable color per kernel. */
static void kcolor(uint32_t k, char *buf, size_t n)
{
	uint32_t h = k * 2654435761u;
	snprintf(buf, n, "hsl(%u,%u%%,%u%%)", h % 360, 55 + (h >> 9) % 25, 45 + (h >> 17) % 15);
}

static const char *human_bytes(double b, char *buf, size_t n)
{
	const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	int i = 0;
	while (b >= 1024 && i < 4)
		b /= 1024, i++;
	snprintf(buf, n, i ? "%.2f %s" : "%.0f %s", b, u[i]);
	return buf;
}

static const char *human_ns(double ns, char *buf, size_t n)
{
	if (ns >= 1e6)
		snprintf(buf, n, "%.3f ms", ns / 1e6);
	else if (ns >= 1e3)
		snprintf(buf, n, "%.3f us", ns / 1e3);
	else
		snprintf(buf, n, "%.1f ns", ns);
	return buf;
}

static const char *css =
	"body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#1d1d1f;background:#fff;max-width:1100px}"
	"h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd}"
	".sub{color:#555}table{border-collapse:collapse;margin:6px 0}"
	"td,th{border:1px solid #d0d0d0;padding:3px 8px;text-align:left;vertical-align:top}"
	"th{background:#eef1f5}td.n{text-align:right;font-variant-numeric:tabular-nums}"
	".bar{display:inline-block;height:10px;background:#3b7dd8;vertical-align:middle}"
	".ok{color:#11772d;font-weight:600}.bad{color:#b3261e;font-weight:600}"
	"code{font:12px ui-monospace,monospace;background:#f4f4f4;padding:1px 3px}"
	".sw{display:inline-block;width:12px;height:12px;vertical-align:middle;border:1px solid #888}"
	"svg{display:block;border:1px solid #d0d0d0;background:#fafafa}";

static void summary(FILE *f, const nx_report *r)
{
	const nx_rt_profile *p = r->prof;
	const nx_target *t = r->n->tgt;
	char a[64], b[64];
	fprintf(f, "<h2>Summary</h2>\n<table id=\"summary\">\n");
	fprintf(f, "<tr><th>simulated time</th><td class=n>%s</td></tr>\n", human_ns(p->total_ns, a, sizeof a));
	fprintf(f, "<tr><th>roofline bound</th><td class=n>%s (%.1f&times; the bound)</td></tr>\n",
	        human_ns(p->roofline_ns, a, sizeof a), p->roofline_ns > 0 ? p->total_ns / p->roofline_ns : 0);
	fprintf(f, "<tr><th>MFU estimate</th><td class=n>%.3f %% (%.3g TensorE FLOPs at %.0f TFLOPS bf16 peak)</td></tr>\n",
	        p->mfu_percent, p->pe_flops, t->pe_tflops_bf16);
	fprintf(f, "<tr><th>HBM bytes</th><td class=n>read %s, written %s (least traffic %s)</td></tr>\n",
	        human_bytes((double)p->hbm_read, a, sizeof a), human_bytes((double)p->hbm_write, b, sizeof b),
	        human_bytes((double)p->io_bytes, (char[64]){0}, 64));
	fprintf(f, "<tr><th>peak on-chip use</th><td class=n>SBUF %s, PSUM %s, DMA in flight %s</td></tr>\n",
	        human_bytes(p->peak[NX_PROF_SBUF], a, sizeof a), human_bytes(p->peak[NX_PROF_PSUM], b, sizeof b),
	        human_bytes(p->peak[NX_PROF_DMA_INFLIGHT], (char[64]){0}, 64));
	fprintf(f, "<tr><th>instructions executed</th><td class=n>%llu%s</td></tr>\n", (unsigned long long)p->insns,
	        p->truncated ? " (timeline shows the first 4,194,304)" : "");
	fprintf(f, "</table>\n<table id=\"engines\"><tr><th>engine</th><th>busy</th><th></th></tr>\n");
	for (int e = 0; e < NX_ENG_COUNT + 1; e++) {
		char name[48];
		double pct = e < NX_ENG_COUNT ? nx_prof_busy_percent(p, e)
		                              : (p->total_ns > 0 ? 100.0 * p->dma_active_ns / p->total_ns : 0);
		fprintf(f, "<tr><td>%s</td><td class=n>%.1f %%</td><td><span class=bar style=\"width:%dpx\"></span></td></tr>\n",
		        e < NX_ENG_COUNT ? nx_prof_track_name(e, name, sizeof name) : "DMA (any queue)", pct,
		        (int)(pct * 3));
	}
	fprintf(f, "</table>\n");
}

/* One row per engine and per DMA queue that ran something; adjacent slices
 * of one kernel closer than a pixel merge into one rectangle. */
static void timeline(FILE *f, const nx_report *r)
{
	const nx_rt_profile *p = r->prof;
	double T = p->total_ns > 0 ? p->total_ns : 1, px = T / (W - LABEL - 10);
	int rows = 0, *row = calloc((size_t)p->ntracks, sizeof *row);
	for (int t = 0; t < p->ntracks; t++)
		row[t] = t < NX_ENG_COUNT || p->track_busy[t] > 0 ? rows++ : -1;
	int H = 22 * rows + 30;
	fprintf(f, "<h2>Engine timeline</h2>\n<svg id=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
	           "height=\"%d\" viewBox=\"0 0 %d %d\">\n", W, H, W, H);
	for (int t = 0; t < p->ntracks; t++) {
		if (row[t] < 0)
			continue;
		char name[48];
		fprintf(f, "<text x=\"4\" y=\"%d\" font-size=\"12\">%s</text>\n", 22 * row[t] + 15,
		        nx_prof_track_name(t, name, sizeof name));
		fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"18\" fill=\"#eceff3\"/>\n", LABEL, 22 * row[t] + 2,
		        W - LABEL - 10);
	}
	/* per track: the open segment */
	double *s0 = calloc((size_t)p->ntracks, sizeof *s0), *s1 = calloc((size_t)p->ntracks, sizeof *s1);
	uint32_t *sk = calloc((size_t)p->ntracks, sizeof *sk);
	bool *open = calloc((size_t)p->ntracks, sizeof *open);
	for (size_t i = 0; i <= p->nev; i++) {
		const nx_prof_ev *e = i < p->nev ? &p->ev[i] : NULL;
		for (int t = 0; t < p->ntracks; t++) {
			if (!open[t] || (e && e->track != t))
				continue;
			bool same = e && e->in->debug_id == sk[t] && e->start <= s1[t] + px;
			bool tiny = e && e->start <= s1[t] + px / 4;
			if (same || tiny) {
				s1[t] = e->start + e->dur > s1[t] ? e->start + e->dur : s1[t];
				goto next;
			}
			char col[40], dur[32];
			kcolor(sk[t], col, sizeof col);
			double w = (s1[t] - s0[t]) / px;
			fprintf(f, "<rect x=\"%.1f\" y=\"%d\" width=\"%.2f\" height=\"18\" fill=\"%s\"><title>", LABEL + s0[t] / px,
			        22 * row[t] + 2, w < 0.6 ? 0.6 : w, col);
			esc(f, nx_prof_kernel_name(p, sk[t]));
			fprintf(f, " %s</title></rect>\n", human_ns(s1[t] - s0[t], dur, sizeof dur));
			open[t] = false;
		}
		if (e && !open[e->track]) {
			open[e->track] = true;
			s0[e->track] = e->start;
			s1[e->track] = e->start + e->dur;
			sk[e->track] = e->in->debug_id;
		}
	next:;
	}
	char a[32];
	for (int k = 0; k <= 4; k++) {
		double x = LABEL + (W - LABEL - 10) * k / 4.0;
		fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#999\"/>"
		           "<text x=\"%.1f\" y=\"%d\" font-size=\"11\" text-anchor=\"%s\">%s</text>\n",
		        x, H - 26, x, H - 20, x, H - 8, k == 0 ? "start" : k == 4 ? "end" : "middle",
		        human_ns(T * k / 4.0, a, sizeof a));
	}
	fprintf(f, "</svg>\n");
	free(row), free(s0), free(s1), free(sk), free(open);
}

static const char *const *hlo_lines(const char *path, int *nlines, char **text)
{
	*nlines = 0, *text = NULL;
	if (!path)
		return NULL;
	nx_diag d = {0};
	size_t len;
	char *t = nx_cli_read_file(path, &len, &d);
	nx_diag_clear(&d);
	if (!t || memchr(t, 0, len)) { /* HloModuleProto: no lines to quote */
		free(t);
		return NULL;
	}
	int cap = 1;
	for (size_t i = 0; i < len; i++)
		cap += t[i] == '\n';
	const char **v = calloc((size_t)cap + 1, sizeof *v);
	char *s = t;
	while (*s && *nlines < cap) {
		v[(*nlines)++] = s;
		char *nl = strchr(s, '\n');
		if (!nl)
			break;
		*nl = 0;
		s = nl + 1;
	}
	*text = t;
	return v;
}

static const nx_rt_profile *sort_p;
static int by_busy(const void *a, const void *b)
{
	double x = sort_p->k[*(const int *)a].busy_ns, y = sort_p->k[*(const int *)b].busy_ns;
	return x > y ? -1 : x < y ? 1 : *(const int *)a - *(const int *)b;
}

static void kernels(FILE *f, const nx_report *r)
{
	const nx_rt_profile *p = r->prof;
	const nx_neff *n = r->n;
	int nk = n->ndebug, *ord = malloc(sizeof *ord * (size_t)(nk + 1)), m = 0;
	for (int k = 0; k < nk; k++)
		if (p->k[k].insns)
			ord[m++] = k;
	sort_p = p;
	qsort(ord, (size_t)m, sizeof *ord, by_busy);
	int nlines;
	char *text;
	const char *const *lines = hlo_lines(r->hlo_path, &nlines, &text);
	double total_busy = 0;
	for (int k = 0; k <= nk; k++)
		total_busy += p->k[k].busy_ns;
	fprintf(f, "<h2>Top kernels by time</h2>\n<p class=sub>Busy time: the kernel's instructions on every engine and "
	           "DMA queue added up (%d kernels ran; the 25 busiest).</p>\n<table id=\"kernels\">\n"
	           "<tr><th></th><th>kernel</th><th>kind</th><th>busy</th><th>%%</th><th>span</th><th>instr.</th>"
	           "<th>FLOPs</th><th>HBM read / written</th><th>HLO source</th><th>metadata</th></tr>\n", m);
	for (int j = 0; j < m && j < 25; j++) {
		int k = ord[j];
		const nx_prof_kernel *K = &p->k[k];
		const nx_neff_src *s = n->debug_src ? &n->debug_src[k] : NULL;
		char col[40], a[32], b[32], c[32], e2[32];
		kcolor((uint32_t)k, col, sizeof col);
		fprintf(f, "<tr><td><span class=sw style=\"background:%s\"></span></td><td><code>", col);
		esc(f, n->debug_names[k]);
		fprintf(f, "</code></td><td>");
		esc(f, s && s->kind ? s->kind : "");
		fprintf(f, "</td><td class=n>%s</td><td class=n>%.1f</td><td class=n>%s</td><td class=n>%llu</td>"
		           "<td class=n>%.3g</td><td class=n>%s / %s</td><td>",
		        human_ns(K->busy_ns, a, sizeof a), total_busy > 0 ? 100 * K->busy_ns / total_busy : 0,
		        human_ns(K->last - K->first, b, sizeof b), (unsigned long long)K->insns, K->flops,
		        human_bytes((double)K->hbm_read, c, sizeof c), human_bytes((double)K->hbm_write, e2, sizeof e2));
		if (s && s->line) {
			fprintf(f, "line %d", s->line);
			if (s->hlo) {
				fprintf(f, " <code>");
				esc(f, s->hlo);
				fprintf(f, "</code>");
			}
			if (lines && s->line <= nlines) {
				char q[161];
				const char *l = lines[s->line - 1];
				while (*l == ' ' || *l == '\t')
					l++;
				snprintf(q, sizeof q, "%s", l);
				fprintf(f, "<br><code>");
				esc(f, q);
				fprintf(f, "%s</code>", strlen(l) > 160 ? "&hellip;" : "");
			}
		}
		fprintf(f, "</td><td>");
		if (s && s->source_file) {
			fprintf(f, "<code>");
			esc(f, s->source_file);
			fprintf(f, ":%d</code>", s->source_line);
		}
		if (s && s->op_name) {
			fprintf(f, "<br>");
			esc(f, s->op_name);
		}
		fprintf(f, "</td></tr>\n");
	}
	fprintf(f, "</table>\n");
	free((void *)lines);
	free(text);
	free(ord);
}

/* SBUF and PSUM bytes held by running kernels (and DMA bytes in flight) as
 * step lines, each scaled to its own capacity. */
static void occupancy(FILE *f, const nx_report *r)
{
	const nx_rt_profile *p = r->prof;
	const nx_target *t = r->n->tgt;
	double T = p->total_ns > 0 ? p->total_ns : 1;
	int H = 170, top = 10, bot = 30, plot = H - top - bot, pw = W - LABEL - 10;
	double size[2] = {(double)t->partitions * (double)t->sbuf_partition_bytes,
	                  (double)t->partitions * (double)t->psum_partition_bytes};
	double cap[NX_PROF_NCOUNTERS]; /* each line is scaled to its own peak */
	for (int c = 0; c < NX_PROF_NCOUNTERS; c++)
		cap[c] = p->peak[c] > 0 ? p->peak[c] : 1;
	const char *colr[] = {"#3b7dd8", "#d8583b", "#2e9e5b"};
	const char *label[] = {"SBUF peak %s of %s", "PSUM peak %s of %s", "DMA in flight, peak %s"};
	fprintf(f, "<h2>On-chip memory over time</h2>\n<p class=sub>Bytes of SBUF and PSUM held by the kernels running at "
	           "each moment (a kernel holds the address range its instructions touch from its first instruction to its "
	           "last), and bytes of DMA transfers in flight; each line is scaled to its own peak.</p>\n");
	fprintf(f, "<svg id=\"occupancy\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
	           "viewBox=\"0 0 %d %d\">\n<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#eceff3\"/>\n",
	        W, H, W, H, LABEL, top, pw, plot);
	for (int c = 0; c < NX_PROF_NCOUNTERS; c++) {
		const nx_prof_counter *k = &p->counters[c];
		char a[32], b[32], lab[96];
		snprintf(lab, sizeof lab, label[c], human_bytes(p->peak[c], a, sizeof a),
		         c < 2 ? human_bytes(size[c], b, sizeof b) : "");
		fprintf(f, "<text x=\"4\" y=\"%d\" font-size=\"11\" fill=\"%s\">%s</text>\n", top + 14 + 16 * c, colr[c], lab);
		fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"", colr[c]);
		double lastx = -1, y = top + plot;
		size_t step = k->n > 4000 ? k->n / 4000 : 1;
		for (size_t i = 0; i < k->n; i += step) {
			double x = LABEL + k->t[i] / T * pw, ny = top + plot - plot * (k->v[i] / cap[c] > 1 ? 1 : k->v[i] / cap[c]);
			if (lastx >= 0)
				fprintf(f, "%.1f,%.1f ", x, y);
			fprintf(f, "%.1f,%.1f ", x, ny);
			lastx = x, y = ny;
		}
		fprintf(f, "%.1f,%.1f\"/>\n", (double)LABEL + pw, y);
	}
	char a[32];
	for (int k = 0; k <= 4; k++) {
		double x = LABEL + pw * k / 4.0;
		fprintf(f, "<text x=\"%.1f\" y=\"%d\" font-size=\"11\" text-anchor=\"%s\">%s</text>\n", x, H - 10,
		        k == 0 ? "start" : k == 4 ? "end" : "middle", human_ns(T * k / 4.0, a, sizeof a));
	}
	fprintf(f, "</svg>\n");
}

static void outputs(FILE *f, const nx_report *r)
{
	fprintf(f, "<h2>Outputs against the reference evaluator: <span class=%s>%s</span></h2>\n<table id=\"errors\">\n"
	           "<tr><th>output</th><th>shape</th><th>result</th><th>worst |diff|</th><th>relative</th>"
	           "<th>at</th><th>expected</th><th>got</th><th>outside tolerance</th></tr>\n",
	        r->verdict && !strcmp(r->verdict, "ok") ? "ok" : "bad", r->verdict ? r->verdict : "");
	for (int k = 0; k < r->noutputs; k++) {
		const nx_report_output *o = &r->outputs[k];
		fprintf(f, "<tr><td><code>");
		esc(f, o->name);
		fprintf(f, "</code></td><td><code>");
		esc(f, o->shape);
		fprintf(f, "</code></td><td class=%s>%s%s</td><td class=n>%.3g</td><td class=n>%.3g</td><td class=n>%lld</td>"
		           "<td class=n>%.9g</td><td class=n>%.9g</td><td class=n>%lld of %lld</td></tr>\n",
		        o->ok ? "ok" : "bad", o->ok ? "ok" : "MISMATCH", o->exact ? " (exact)" : "", o->worst, o->worst_rel,
		        (long long)o->where, o->expected, o->got, (long long)o->nbad, (long long)o->n);
	}
	fprintf(f, "</table>\n");
}

nx_status nx_report_write(const char *path, const nx_report *r, nx_diag *d)
{
	nx_afile af;
	if (nx_afile_open(&af, path, d) != NX_OK)
		return d->status;
	FILE *f = af.f;
	const nx_neff *n = r->n;
	fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>nxcc report: ");
	esc(f, n->module);
	fprintf(f, "</title>\n<style>%s</style></head><body>\n<h1>", css);
	esc(f, n->module);
	fprintf(f, " on %s</h1>\n<p class=sub>", n->tgt->name);
	esc(f, r->source);
	fprintf(f, " &middot; compiled by %s &middot; simulated NeuronCore (%s)</p>\n", n->compiler, n->tgt->core);
	summary(f, r);
	if (r->outputs)
		outputs(f, r);
	timeline(f, r);
	kernels(f, r);
	occupancy(f, r);
	fprintf(f, "<p class=sub>Times are simulated (runtime-stub timing model, docs/DESIGN.md section 7); the roofline "
	           "bound is the larger of the TensorE FLOPs at peak and the least HBM traffic at full bandwidth.</p>\n"
	           "</body></html>\n");
	return nx_afile_commit(&af, false, d);
}
