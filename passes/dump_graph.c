/* passes/dump_graph.c — HLO graph views (see dump_graph.h). */
#include "passes/dump_graph.h"

#include "ir/file_atomic.h"
#include "passes/fusion.h"

#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* A dot string literal's contents (between double quotes). */
static void q(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', f);
		if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
}

static const char *kind_color(const char *kind)
{
	if (!kind)
		return "#e8e8e8";
	if (!strcmp(kind, "kLoop"))
		return "#dbe9fb";
	if (!strcmp(kind, "kInput"))
		return "#dcf3dc";
	if (!strcmp(kind, "kOutput"))
		return "#fde6cc";
	if (!strcmp(kind, "kCustom"))
		return "#eadcf7";
	return "#eeeeee";
}

static const char *meta(const nx_inst *i, const char *key)
{
	for (int k = 0; k < i->a.nmetadata; k++)
		if (!strcmp(i->a.metadata[k].key, key))
			return i->a.metadata[k].value;
	return NULL;
}

static void node(FILE *f, const nx_inst *i, const char *indent)
{
	char shp[200];
	nx_shape_print(shp, sizeof shp, i->shape, false);
	fprintf(f, "%si%lld [label=\"", indent, (long long)i->id);
	q(f, i->name);
	fprintf(f, "\\n%s ", nx_opcode_name(i->op));
	q(f, shp);
	fprintf(f, "\", tooltip=\"");
	char *text = nx_print_inst(i, NULL);
	if (strlen(text) > 400)
		strcpy(text + 397, "...");
	q(f, text);
	free(text);
	if (i->line)
		fprintf(f, "\\nline %d", i->line);
	const char *sf = meta(i, "source_file"), *sl = meta(i, "source_line"), *on = meta(i, "op_name");
	if (sf) {
		fputs("\\n", f);
		q(f, sf);
		fprintf(f, ":%s", sl ? sl : "?");
	}
	if (on) {
		fputs("\\n", f);
		q(f, on);
	}
	fprintf(f, "\"");
	if (i->op == NX_OP_PARAMETER || i->op == NX_OP_CONSTANT)
		fprintf(f, ", shape=ellipse, style=filled, fillcolor=\"#ffffff\"");
	else if (i->op == NX_OP_TUPLE || i->op == NX_OP_GET_TUPLE_ELEMENT)
		fprintf(f, ", shape=box, style=\"rounded,dashed\"");
	fprintf(f, "];\n");
}

/* The instruction that computes what x carries, for fusion decisions: a
 * fusion's root, or the element a get-tuple-element takes from a
 * multi-output fusion. */
static const nx_inst *inner(const nx_inst *x)
{
	if (x->op == NX_OP_GET_TUPLE_ELEMENT && x->noperands == 1 && x->operands[0]->op == NX_OP_FUSION) {
		const nx_inst *r = x->operands[0]->called[0]->root;
		if (r && r->op == NX_OP_TUPLE && x->a.tuple_index < r->noperands)
			return r->operands[x->a.tuple_index];
	}
	if (x->op == NX_OP_FUSION && x->ncalled && x->called[0]->root)
		return x->called[0]->root;
	return x;
}

/* Why producer (outer: an entry instruction) and consumer (inner: in a
 * kernel or the entry) are not in one kernel. */
static const char *why_apart(const nx_inst *outer, const nx_inst *cons, const nx_inst *cons_outer,
                             const nx_pass_ctx *ctx)
{
	const nx_inst *prod = inner(outer);
	if (prod->op == NX_OP_PARAMETER)
		return "a parameter of the program (read from HBM)";
	if (prod->op == NX_OP_CONSTANT)
		return "a constant of the program (in HBM)";
	if (!nx_fusion_fusible(prod) && prod == outer)
		return "producer cannot be part of a kernel (tuple, control flow, collective or side effect)";
	if (cons->op == NX_OP_TUPLE && cons == cons_outer && cons->parent->root == cons)
		return "program output";
	const char *r = nx_fusion_refusal(prod, cons, ctx);
	return r ? r
	         : "pairwise fusible; kept apart by a whole-kernel rule (users outside the kernel, two matmuls in one "
	           "kernel, a cycle through another kernel, or the kernel size)";
}

static void edge(FILE *f, const nx_inst *from, const nx_inst *to, const nx_inst *carrier, const char *tooltip,
                 bool inside)
{
	char shp[200];
	nx_shape_print(shp, sizeof shp, carrier->shape, false);
	fprintf(f, "  i%lld -> i%lld [label=\"", (long long)from->id, (long long)to->id);
	q(f, shp);
	fprintf(f, "\", tooltip=\"");
	q(f, tooltip);
	fprintf(f, "\"%s];\n", inside ? "" : ", color=\"#b3261e\", fontcolor=\"#7a1a14\", penwidth=1.4");
}

char *nx_dump_graph_dot(const nx_module *m, const nx_pass_ctx *ctx)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		abort();
	const nx_comp *e = m->entry;
	fprintf(f, "digraph \"");
	q(f, m->name);
	fprintf(f, "\" {\n  graph [rankdir=TB, fontname=\"Helvetica\", fontsize=11, tooltip=\"");
	q(f, m->name);
	fprintf(f, "\"];\n  node [shape=box, fontname=\"Helvetica\", fontsize=10];\n"
	           "  edge [fontname=\"Helvetica\", fontsize=8, color=\"#777777\"];\n");
	int nf = 0;
	for (int k = 0; e && k < e->ninsts; k++) {
		const nx_inst *i = e->insts[k];
		if (i->op != NX_OP_FUSION || !i->ncalled) {
			node(f, i, "  ");
			continue;
		}
		const nx_comp *fc = i->called[0];
		fprintf(f, "  subgraph cluster_%d {\n    label=\"", nf++);
		q(f, i->name);
		fprintf(f, " (%s)\";\n    tooltip=\"kernel ", i->a.fusion_kind ? i->a.fusion_kind : "fusion");
		q(f, i->name);
		fprintf(f, ": %d instructions, calls %s\";\n    style=filled; color=\"#888888\"; fillcolor=\"%s\";\n",
		        fc->ninsts - fc->nparams, fc->name, kind_color(i->a.fusion_kind));
		for (int j = 0; j < fc->ninsts; j++)
			if (fc->insts[j]->op != NX_OP_PARAMETER)
				node(f, fc->insts[j], "    ");
		fprintf(f, "  }\n");
	}
	/* edges: into entry instructions and into kernel members */
	for (int k = 0; e && k < e->ninsts; k++) {
		const nx_inst *c = e->insts[k];
		if (c->op != NX_OP_FUSION || !c->ncalled) {
			for (int j = 0; j < c->noperands; j++) {
				const nx_inst *p = c->operands[j];
				edge(f, inner(p) != p && p->op == NX_OP_FUSION ? inner(p) : p, c, p, why_apart(p, c, c, ctx),
				     false);
			}
			continue;
		}
		const nx_comp *fc = c->called[0];
		for (int t = 0; t < fc->ninsts; t++) {
			const nx_inst *ci = fc->insts[t];
			if (ci->op == NX_OP_PARAMETER)
				continue;
			for (int j = 0; j < ci->noperands; j++) {
				const nx_inst *p = ci->operands[j];
				if (p->op != NX_OP_PARAMETER || p->parent != fc) {
					edge(f, p, ci, p, "fused: computed in the same kernel", true);
					continue;
				}
				int64_t pn = p->a.parameter_number;
				if (pn < 0 || pn >= c->noperands)
					continue;
				const nx_inst *o = c->operands[pn];
				edge(f, o->op == NX_OP_FUSION ? inner(o) : o, ci, o, why_apart(o, ci, c, ctx), false);
			}
		}
	}
	fprintf(f, "}\n");
	fclose(f);
	return buf;
}

/* Runs `dot -Tsvg in -o out`; false when Graphviz is absent or fails. */
static bool run_dot(const char *in, const char *out)
{
	char *argv[] = {"dot", "-Tsvg", (char *)in, "-o", (char *)out, NULL};
	pid_t pid;
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", 1, 0); /* O_WRONLY */
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", 1, 0);
	int rc = posix_spawnp(&pid, "dot", &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc != 0)
		return false;
	int st;
	if (waitpid(pid, &st, 0) != pid)
		return false;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static void html_esc(FILE *f, const char *s)
{
	for (; s && *s; s++)
		switch (*s) {
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		default: fputc(*s, f);
		}
}

static nx_status write_html(const nx_module *m, const char *dot, const char *svg, size_t svglen, const char *path,
                            nx_diag *d)
{
	nx_afile af;
	if (nx_afile_open(&af, path, d) != NX_OK)
		return d->status;
	FILE *f = af.f;
	fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>");
	html_esc(f, m->name);
	fprintf(f, " (nxcc graph)</title>\n<style>body{font:14px system-ui,sans-serif;margin:20px}"
	           "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 8px;text-align:left}"
	           "th{background:#eef1f5}pre{font-size:11px;background:#f6f6f6;padding:8px;overflow:auto}"
	           ".k{display:inline-block;width:12px;height:12px;border:1px solid #888}</style></head><body>\n<h1>");
	html_esc(f, m->name);
	fprintf(f, "</h1>\n<p>Fusion kernels are clusters, colored by kind: ");
	const char *kinds[] = {"kLoop", "kInput", "kOutput", "kCustom"};
	for (int k = 0; k < 4; k++)
		fprintf(f, "<span class=k style=\"background:%s\"></span> %s ", kind_color(kinds[k]), kinds[k]);
	fprintf(f, ". Edges are labeled with the shape they carry; red edges cross kernels, and their tooltip says why "
	           "the fusion pass kept the two apart.</p>\n<table id=\"kernels\"><tr><th>kernel</th><th>kind</th>"
	           "<th>instructions</th><th>root</th></tr>\n");
	const nx_comp *e = m->entry;
	for (int k = 0; e && k < e->ninsts; k++) {
		const nx_inst *i = e->insts[k];
		if (i->op != NX_OP_FUSION || !i->ncalled)
			continue;
		fprintf(f, "<tr><td>");
		html_esc(f, i->name);
		fprintf(f, "</td><td><span class=k style=\"background:%s\"></span> %s</td><td>%d</td><td>",
		        kind_color(i->a.fusion_kind), i->a.fusion_kind ? i->a.fusion_kind : "",
		        i->called[0]->ninsts - i->called[0]->nparams);
		html_esc(f, i->called[0]->root ? i->called[0]->root->name : "");
		fprintf(f, "</td></tr>\n");
	}
	fprintf(f, "</table>\n");
	if (svg) {
		const char *start = strstr(svg, "<svg"); /* drop the XML prologue and doctype */
		fprintf(f, "<div id=\"graph\">\n");
		fwrite(start ? start : svg, 1, svglen - (size_t)(start ? start - svg : 0), f);
		fprintf(f, "</div>\n");
	} else {
		fprintf(f, "<p>Graphviz (<code>dot</code>) was not found: the graph in dot form.</p>\n<pre id=\"graph\">");
		html_esc(f, dot);
		fprintf(f, "</pre>\n");
	}
	fprintf(f, "</body></html>\n");
	return nx_afile_commit(&af, false, d);
}

nx_status nx_dump_graph(const nx_module *m, const nx_pass_ctx *ctx, bool html, const char *base, nx_diag *d)
{
	char *dot = nx_dump_graph_dot(m, ctx);
	char *dotp = nx_xasprintf("%s.dot", base), *svgp = nx_xasprintf("%s.svg", base);
	nx_status st = NX_OK;
	if (!html) {
		st = nx_write_file_atomic(dotp, dot, strlen(dot), false, d);
		if (st == NX_OK) { /* dot -o writes in place: render to a temp name, then rename */
			char *tmp = nx_xasprintf("%s.tmp.%ld", svgp, (long)getpid());
			if (run_dot(dotp, tmp))
				rename(tmp, svgp);
			unlink(tmp);
			free(tmp);
		}
	} else {
		char *tmpdot = nx_xasprintf("%s.dot.tmp.%ld", base, (long)getpid());
		char *tmpsvg = nx_xasprintf("%s.svg.tmp.%ld", base, (long)getpid());
		char *svg = NULL;
		size_t svglen = 0;
		if (nx_write_file_atomic(tmpdot, dot, strlen(dot), false, d) == NX_OK && run_dot(tmpdot, tmpsvg)) {
			nx_diag rd = {0};
			svg = nx_read_whole_file(tmpsvg, &svglen, &rd);
			nx_diag_clear(&rd);
		}
		unlink(tmpdot);
		unlink(tmpsvg);
		char *htmlp = nx_xasprintf("%s.html", base);
		st = write_html(m, dot, svg, svglen, htmlp, d);
		free(htmlp);
		free(svg);
		free(tmpdot);
		free(tmpsvg);
	}
	free(dotp);
	free(svgp);
	free(dot);
	return st;
}
