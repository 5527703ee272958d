/* compiler/train_plot.h — the loss curves of `nxcc train` as an SVG image,
 * written by nxcc itself (no plotting dependency). */
#ifndef NX_TRAIN_PLOT_H
#define NX_TRAIN_PLOT_H

#include <stdbool.h>
#include <stdio.h>

typedef struct nx_train_series {
	const char *name;
	const double *y; /* nsteps values; NaN where the run had stopped or diverged */
	bool dashed;     /* the evaluator baseline */
} nx_train_series;

/* Writes an SVG document of the series against the step (0 .. nsteps-1) to
 * f: a log-scale loss axis when the finite values span more than a factor
 * of 20 and are all positive, else linear; a horizontal dotted line at
 * target (when finite); a legend in series order. When a series is dashed
 * (the baseline), a second panel below shows every other series' relative
 * difference to it in percent. */
void nx_train_plot_svg(FILE *f, const char *title, const nx_train_series *s, int nseries, int nsteps,
                       double target);

#endif
