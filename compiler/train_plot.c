/* compiler/train_plot.c — loss curves as SVG (compiler/train_plot.h). */
#include "compiler/train_plot.h"

#include <math.h>
#include <stdlib.h>

enum { W = 820, ML = 78, MR = 190, MT = 40, PH = 390, GAP = 70, DH = 220, MB = 52 };

static const char *const colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                                     "#9467bd", "#8c564b", "#e377c2", "#17becf"};

/* XML text: escape the five special characters. */
static void text(FILE *f, const char *s)
{
	for (; *s; s++)
		switch (*s) {
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&apos;", f); break;
		default: fputc(*s, f);
		}
}

/* One panel: its place on the page and its value axis. */
typedef struct {
	int top, height;
	bool log;
	double lo, hi; /* axis range (log10 values on a log axis) */
} panel;

static double ypix(const panel *p, double v)
{
	double t = p->log ? log10(v) : v;
	return p->top + p->height * (1 - (t - p->lo) / (p->hi - p->lo));
}

static double xpix(double step, int nsteps)
{
	return ML + (W - ML - MR) * (nsteps > 1 ? step / (nsteps - 1) : 0.5);
}

/* A "nice" tick spacing: 1, 2 or 5 times a power of ten, about n ticks. */
static double nice_step(double range, int n)
{
	double raw = range / n, p = pow(10, floor(log10(raw))), m = raw / p;
	return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

static bool plottable(const panel *p, double v)
{
	return isfinite(v) && (!p->log || v > 0);
}

/* Range of the finite values of y[k][0..n) (k < ny); log when allowed and
 * they span more than a factor of 20. */
static void fit(panel *p, double *const *y, int ny, int n, bool allow_log, bool zero)
{
	double mn = INFINITY, mx = -INFINITY;
	for (int k = 0; k < ny; k++)
		for (int i = 0; i < n; i++)
			if (isfinite(y[k][i]))
				mn = fmin(mn, y[k][i]), mx = fmax(mx, y[k][i]);
	if (zero)
		mn = fmin(mn, 0), mx = fmax(mx, 0);
	if (!isfinite(mn))
		mn = 0, mx = 1;
	p->log = allow_log && mn > 0 && mx / mn > 20;
	if (p->log) {
		p->lo = floor(log10(mn) * 4) / 4;
		p->hi = ceil(log10(mx) * 4) / 4;
	} else {
		double pad = mx > mn ? 0.05 * (mx - mn) : fabs(mx) * 0.05 + 1e-3;
		p->lo = mn - pad;
		p->hi = mx + pad;
		if (mn >= 0 && p->lo < 0 && !zero)
			p->lo = 0;
	}
	if (p->hi <= p->lo)
		p->hi = p->lo + 1;
}

static void frame(FILE *f, const panel *p, int nsteps, const char *ylabel)
{
	fputs("<g stroke=\"#ddd\" stroke-width=\"1\">\n", f);
	double ys = p->log ? 1 : nice_step(p->hi - p->lo, 6);
	double xs = nice_step(nsteps > 1 ? nsteps - 1 : 1, 8);
	for (double t = ceil(p->lo / ys) * ys; t <= p->hi + 1e-9 * ys; t += ys) {
		double y = ypix(p, p->log ? pow(10, t) : t);
		fprintf(f, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\"/>\n", ML, W - MR, y, y);
	}
	for (double t = 0; t <= nsteps - 1 + 1e-9; t += xs)
		fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\"/>\n", xpix(t, nsteps), xpix(t, nsteps), p->top,
		        p->top + p->height);
	fputs("</g>\n<g fill=\"#333\">\n", f);
	for (double t = ceil(p->lo / ys) * ys; t <= p->hi + 1e-9 * ys; t += ys) {
		double v = p->log ? pow(10, t) : fabs(t) < 1e-9 * ys ? 0 : t;
		fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%.4g</text>\n", ML - 6, ypix(p, v) + 4, v);
	}
	for (double t = 0; t <= nsteps - 1 + 1e-9; t += xs)
		fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%d</text>\n", xpix(t, nsteps),
		        p->top + p->height + 16, (int)t);
	fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">step</text>\n", (ML + W - MR) / 2,
	        p->top + p->height + 34);
	int yc = p->top + p->height / 2;
	fprintf(f, "<text x=\"16\" y=\"%d\" text-anchor=\"middle\" transform=\"rotate(-90 16 %d)\">", yc, yc);
	text(f, ylabel);
	fprintf(f, "%s</text>\n</g>\n", p->log ? " (log scale)" : "");
	fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#333\"/>\n", ML, p->top,
	        W - ML - MR, p->height);
}

/* One polyline per run of plottable values. */
static void curve(FILE *f, const panel *p, const double *y, int n, const char *col, bool dashed)
{
	bool open = false;
	for (int i = 0; i < n; i++) {
		bool ok = plottable(p, y[i]);
		if (ok && !open) {
			fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\"%s points=\"", col,
			        dashed ? " stroke-dasharray=\"6,4\"" : "");
			open = true;
		} else if (!ok && open) {
			fputs("\"/>\n", f);
			open = false;
		}
		if (ok)
			fprintf(f, "%.1f,%.1f ", xpix(i, n), ypix(p, y[i]));
	}
	if (open)
		fputs("\"/>\n", f);
}

static const char *color(const nx_train_series *s, int k)
{
	return s[k].dashed ? "#000" : colors[k % (int)(sizeof colors / sizeof *colors)];
}

void nx_train_plot_svg(FILE *f, const char *title, const nx_train_series *s, int nseries, int nsteps,
                       double target)
{
	int base = -1;
	for (int k = 0; k < nseries; k++)
		if (s[k].dashed && base < 0)
			base = k;
	double **y = calloc((size_t)nseries + 1, sizeof *y), **rel = calloc((size_t)nseries + 1, sizeof *rel);
	int nrel = 0;
	for (int k = 0; k < nseries; k++) {
		y[k] = (double *)s[k].y;
		if (base < 0 || k == base)
			continue;
		rel[nrel] = calloc((size_t)nsteps + 1, sizeof **rel);
		for (int i = 0; i < nsteps; i++) {
			double b = s[base].y[i];
			rel[nrel][i] = isfinite(b) && b != 0 ? 100 * (s[k].y[i] - b) / fabs(b) : NAN;
		}
		nrel++;
	}
	panel top = {MT, PH, false, 0, 0}, bot = {MT + PH + GAP, DH, false, 0, 0};
	fit(&top, y, nseries, nsteps, true, false);
	int h = MT + PH + MB + (nrel ? GAP - MB + DH + MB : 0);
	fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
	           "font-family=\"sans-serif\" font-size=\"12\">\n", W, h, W, h);
	fprintf(f, "<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n", W, h);
	fprintf(f, "<text x=\"%d\" y=\"22\" font-size=\"14\">", ML);
	text(f, title);
	fputs("</text>\n", f);
	frame(f, &top, nsteps, "loss");
	if (isfinite(target) && plottable(&top, target)) {
		double ty = ypix(&top, target);
		if (ty >= top.top && ty <= top.top + top.height)
			fprintf(f, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#888\" stroke-dasharray=\"2,3\"/>\n"
			           "<text x=\"%d\" y=\"%.1f\" fill=\"#888\">target %.4g</text>\n",
			        ML, W - MR, ty, ty, W - MR + 6, ty + 4, target);
	}
	/* the baseline last, so that its dashes show over a run that equals it */
	for (int k = 0; k < nseries; k++)
		if (k != base)
			curve(f, &top, s[k].y, nsteps, color(s, k), false);
	if (base >= 0)
		curve(f, &top, s[base].y, nsteps, color(s, base), true);
	for (int k = 0; k < nseries; k++) {
		int ly = MT + 12 + 20 * k;
		fprintf(f, "<line x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"2\"%s/>\n", W - MR + 10,
		        W - MR + 34, ly, ly, color(s, k), s[k].dashed ? " stroke-dasharray=\"6,4\"" : "");
		fprintf(f, "<text x=\"%d\" y=\"%d\">", W - MR + 40, ly + 4);
		text(f, s[k].name);
		fputs("</text>\n", f);
	}
	if (nrel) {
		fit(&bot, rel, nrel, nsteps, false, true);
		fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"13\">relative difference to the ", ML, bot.top - 8);
		text(f, s[base].name);
		fputs(" (%)</text>\n", f);
		frame(f, &bot, nsteps, "difference (%)");
		double zy = ypix(&bot, 0);
		fprintf(f, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#000\" stroke-dasharray=\"6,4\"/>\n", ML,
		        W - MR, zy, zy);
		for (int k = 0, r = 0; k < nseries; k++)
			if (k != base)
				curve(f, &bot, rel[r++], nsteps, color(s, k), false);
	}
	fputs("</svg>\n", f);
	for (int k = 0; k < nrel; k++)
		free(rel[k]);
	free(rel);
	free(y);
}
