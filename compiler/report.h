/* compiler/report.h — `nxcc run --report` and `nxcc check --report`: one
 * self-contained HTML page (inline CSS and SVG, no scripts, no network)
 * with the run's summary, an engine timeline, the top kernels with their HLO
 * source, SBUF/PSUM occupancy over time and, for check, the per-output
 * error table. docs/looking.md shows one. */
#ifndef NX_REPORT_H
#define NX_REPORT_H

#include "runtime-stub/profile.h"

/* One output compared by nxcc check. */
typedef struct nx_report_output {
	char name[64];
	char shape[256];
	bool ok, exact;
	double worst, worst_rel; /* |diff| and its relative size */
	int64_t where, nbad, n;
	double expected, got;    /* at where */
} nx_report_output;

typedef struct nx_report {
	const nx_neff *n;
	const nx_rt_profile *prof;       /* finished (nx_prof_finish) */
	const char *source;              /* the .neff or HLO file the user named */
	const char *hlo_path;            /* HLO text to quote source lines from, or NULL */
	const nx_report_output *outputs; /* check: per-output comparison, else NULL */
	int noutputs;
	const char *verdict;             /* check: "ok" / "FAILED", else NULL */
} nx_report;

/* Writes the page atomically. */
nx_status nx_report_write(const char *path, const nx_report *r, nx_diag *d);

#endif
