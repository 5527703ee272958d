/* passes/dump_graph.h — the HLO graph as Graphviz dot or a self-contained
 * HTML page (`--dump-format=dot|html` with --dump-after): the entry
 * computation with every fusion kernel drawn as a cluster colored by its
 * kind (kLoop, kInput, kOutput, kCustom), edges labeled with the shapes they
 * carry, and on every edge between two kernels the reason the fusion pass
 * kept them apart (nx_fusion_refusal) as its tooltip. */
#ifndef NX_DUMP_GRAPH_H
#define NX_DUMP_GRAPH_H

#include "passes/pass.h"

/* The dot text of m's entry computation (malloc'd). ctx gives the -O level
 * the refusal reasons follow. */
char *nx_dump_graph_dot(const nx_module *m, const nx_pass_ctx *ctx);

/* Writes path.dot, or path.html, atomically; with Graphviz's `dot` on PATH
 * also path.svg (dot) or the SVG inline (html). base is path without the
 * extension. */
nx_status nx_dump_graph(const nx_module *m, const nx_pass_ctx *ctx, bool html, const char *base, nx_diag *d);

#endif
