/* compiler/train_plot.c — loss curves as SVG (compiler/train_plot.h). */
#include "compiler/train_plot.h"

#include <math.h>

enum { W = 820, H = 480, ML = 78, MR = 190, MT = 40, MB = 52 };

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

typedef struct {
	bool log;
	double lo, hi; /* axis range (log10 values on a log axis) */
} axis;

static double ypix(const axis *a, double v)
{
	double t = a->log ? log10(v) : v;
	return MT + (H - MT - MB) * (1 - (t - a->lo) / (a->hi - a->lo));
}

static double xpix(int step, int nsteps)
{
	return ML + (W - ML - MR) * (nsteps > 1 ? (double)step / (nsteps - 1) : 0.5);
}

/* A "nice" tick spacing: 1, 2 or 5 times a power of ten, about n ticks. */
static double nice_step(double range, int n)
{
	double raw = range / n, p = pow(10, floor(log10(raw))), m = raw / p;
	return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

void nx_train_plot_svg(FILE *f, const char *title, const nx_train_series *s, int nseries, int nsteps,
                       double target)
{
	double mn = INFINITY, mx = -INFINITY;
	for (int k = 0; k < nseries; k++)
		for (int i = 0; i < nsteps; i++)
			if (isfinite(s[k].y[i])) {
				mn = fmin(mn, s[k].y[i]);
				mx = fmax(mx, s[k].y[i]);
			}
	if (!isfinite(mn))
		mn = 0, mx = 1;
	axis a = {mn > 0 && mx / mn > 20, 0, 0};
	if (a.log) {
		a.lo = floor(log10(mn) * 4) / 4;
		a.hi = ceil(log10(mx) * 4) / 4;
	} else {
		double pad = mx > mn ? 0.05 * (mx - mn) : fabs(mx) * 0.05 + 1e-3;
		a.lo = mn - pad;
		a.hi = mx + pad;
		if (mn >= 0 && a.lo < 0)
			a.lo = 0;
	}
	if (a.hi <= a.lo)
		a.hi = a.lo + 1;
	fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
	           "font-family=\"sans-serif\" font-size=\"12\">\n", W, H, W, H);
	fprintf(f, "<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n", W, H);
	fprintf(f, "<text x=\"%d\" y=\"22\" font-size=\"14\">", ML);
	text(f, title);
	fputs("</text>\n", f);
	/* grid and tick labels */
	fputs("<g stroke=\"#ddd\" stroke-width=\"1\">\n", f);
	double ys = a.log ? 1 : nice_step(a.hi - a.lo, 6);
	for (double t = ceil(a.lo / ys) * ys; t <= a.hi + 1e-9 * ys; t += ys) {
		double v = a.log ? pow(10, t) : t;
		fprintf(f, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\"/>\n", ML, W - MR, ypix(&a, v), ypix(&a, v));
	}
	double xs = nice_step(nsteps > 1 ? nsteps - 1 : 1, 8);
	for (double t = 0; t <= nsteps - 1 + 1e-9; t += xs)
		fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\"/>\n", xpix((int)t, nsteps),
		        xpix((int)t, nsteps), MT, H - MB);
	fputs("</g>\n<g fill=\"#333\">\n", f);
	for (double t = ceil(a.lo / ys) * ys; t <= a.hi + 1e-9 * ys; t += ys) {
		double v = a.log ? pow(10, t) : t;
		fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%.4g</text>\n", ML - 6, ypix(&a, v) + 4, v);
	}
	for (double t = 0; t <= nsteps - 1 + 1e-9; t += xs)
		fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%d</text>\n", xpix((int)t, nsteps),
		        H - MB + 16, (int)t);
	fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">step</text>\n", (ML + W - MR) / 2, H - 12);
	fprintf(f, "<text x=\"16\" y=\"%d\" text-anchor=\"middle\" transform=\"rotate(-90 16 %d)\">loss%s</text>\n",
	        (MT + H - MB) / 2, (MT + H - MB) / 2, a.log ? " (log scale)" : "");
	fputs("</g>\n", f);
	fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#333\"/>\n", ML, MT,
	        W - ML - MR, H - MT - MB);
	if (isfinite(target) && (!a.log || target > 0)) {
		double y = ypix(&a, target);
		if (y >= MT && y <= H - MB)
			fprintf(f, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#888\" stroke-dasharray=\"2,3\"/>\n"
			           "<text x=\"%d\" y=\"%.1f\" fill=\"#888\">target %.4g</text>\n",
			        ML, W - MR, y, y, W - MR + 6, y + 4, target);
	}
	/* one polyline per finite run of each series */
	for (int k = 0; k < nseries; k++) {
		const char *col = s[k].dashed ? "#000" : colors[k % (int)(sizeof colors / sizeof *colors)];
		bool open = false;
		for (int i = 0; i < nsteps; i++) {
			double v = s[k].y[i];
			bool ok = isfinite(v) && (!a.log || v > 0);
			if (ok && !open) {
				fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\"%s points=\"", col,
				        s[k].dashed ? " stroke-dasharray=\"6,4\"" : "");
				open = true;
			} else if (!ok && open) {
				fputs("\"/>\n", f);
				open = false;
			}
			if (ok)
				fprintf(f, "%.1f,%.1f ", xpix(i, nsteps), ypix(&a, v));
		}
		if (open)
			fputs("\"/>\n", f);
		int ly = MT + 12 + 20 * k;
		fprintf(f, "<line x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"2\"%s/>\n", W - MR + 10,
		        W - MR + 34, ly, ly, col, s[k].dashed ? " stroke-dasharray=\"6,4\"" : "");
		fprintf(f, "<text x=\"%d\" y=\"%d\">", W - MR + 40, ly + 4);
		text(f, s[k].name);
		fputs("</text>\n", f);
	}
	fputs("</svg>\n", f);
}
