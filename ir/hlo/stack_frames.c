/* ir/hlo/stack_frames.c — the source-location tables newer XLA prints between
 * the module header and the first computation, and what they are for: the
 * user's Python file and line of an instruction.
 *
 *   FileNames
 *   1 "/src/train.py"
 *
 *   FunctionNames
 *   1 "train_step"
 *
 *   FileLocations
 *   1 {file_name_id=1 function_name_id=1 line=42 end_line=42 column=3 end_column=20}
 *
 *   StackFrames
 *   1 {file_location_id=1 parent_frame_id=1}
 *
 * Entries are numbered 1..n in order. An instruction names its innermost frame
 * with metadata={... stack_frame_id=N}; a frame's parent is the caller. The
 * proto (and the IR) give the parent's id, 0 for none; XLA's text printer
 * writes that id + 1 and its parser subtracts 1 (hlo_parser.cc,
 * ParseStackFramesList), so "parent_frame_id=1" is a frame without a caller.
 * Checked on JAX 0.11.2's dumps (tests/data/jax): every frame's text value is
 * its proto value + 1. Reading, printing (print -> read -> print is a fixed
 * point) and the lookup used by diagnostics live here. */
#include "ir/hlo/print_internal.h"
#include "ir/hlo/proto.h"
#include "ir/hlo/read_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ read */

enum { T_FILES, T_FUNCS, T_LOCS, T_FRAMES, T_COUNT };
static const char *const table_names[T_COUNT] = {"FileNames", "FunctionNames", "FileLocations",
                                                  "StackFrames"};

/* Which table keyword starts at the current position (after whitespace), or
 * -1. A keyword counts only when an entry number follows it, so a computation
 * that happens to be called "FileNames" still reads as one. */
static int table_at(nx_rd *r)
{
	for (int t = 0; t < T_COUNT; t++) {
		size_t n = strlen(table_names[t]);
		if (r->pos + n > r->len || memcmp(r->s + r->pos, table_names[t], n) != 0)
			continue;
		size_t k = r->pos + n;
		if (k < r->len && (rd_is_name_char(r->s[k]) || r->s[k] == '%'))
			continue;
		while (k < r->len && (r->s[k] == ' ' || r->s[k] == '\t' || r->s[k] == '\r' || r->s[k] == '\n'))
			k++;
		if (k < r->len && r->s[k] >= '0' && r->s[k] <= '9')
			return t;
	}
	return -1;
}

static bool at_digit(nx_rd *r)
{
	return r->pos < r->len && r->s[r->pos] >= '0' && r->s[r->pos] <= '9';
}

/* {key=N key=N ...}: each key must be one of keys[]; values go to out[]. */
static bool read_fields(nx_rd *r, const char *const *keys, int64_t *out, int nkeys, const char *table)
{
	if (!rd_expect(r, '{', "to start a table entry"))
		return false;
	for (;;) {
		if (rd_accept(r, '}'))
			return true;
		if (r->failed || !rd_ws(r))
			return false;
		size_t kp = r->pos;
		const char *k;
		size_t kn;
		if (!rd_word(r, &k, &kn))
			return rd_err(r, kp, "expected a field name or '}' in a %s entry", table);
		int f = -1;
		for (int j = 0; j < nkeys; j++)
			if (strlen(keys[j]) == kn && memcmp(keys[j], k, kn) == 0)
				f = j;
		if (f < 0)
			return rd_err(r, kp, "unknown field '%.*s' in a %s entry", (int)kn, k, table);
		if (!rd_expect(r, '=', "after the field name") || !rd_int(r, &out[f], "as the field value"))
			return false;
		if (out[f] < 0 || out[f] > INT32_MAX)
			return rd_err(r, kp, "field '%.*s' is out of range in a %s entry", (int)kn, k, table);
	}
}

static const char *const loc_keys[] = {"file_name_id", "function_name_id", "line",
                                       "end_line",     "column",           "end_column"};
static const char *const frame_keys[] = {"file_location_id", "parent_frame_id"};

static bool read_table(nx_rd *r, nx_module *m, int t)
{
	nx_stack_frames *s = &m->stack;
	size_t tp = r->pos;
	r->pos += strlen(table_names[t]);
	int *count[T_COUNT] = {&s->nfile_names, &s->nfunction_names, &s->nlocations, &s->nframes};
	if (*count[t])
		return rd_err(r, tp, "the %s table appears twice", table_names[t]);
	int cap = 0;
	for (;;) {
		if (!rd_ws(r))
			return false;
		if (!at_digit(r))
			return true;
		size_t ep = r->pos;
		int64_t id;
		if (!rd_int(r, &id, "as the entry number"))
			return false;
		if (id != *count[t] + 1)
			return rd_err(r, ep, "%s entry %lld out of order (expected %d)", table_names[t],
			              (long long)id, *count[t] + 1);
		if (*count[t] == cap) {
			int nc = cap ? 2 * cap : 64;
			if (t == T_FILES)
				s->file_names = nx_arena_grow(r->a, s->file_names, (size_t)cap, (size_t)nc, sizeof(char *));
			else if (t == T_FUNCS)
				s->function_names = nx_arena_grow(r->a, s->function_names, (size_t)cap, (size_t)nc, sizeof(char *));
			else if (t == T_LOCS)
				s->locations = nx_arena_grow(r->a, s->locations, (size_t)cap, (size_t)nc, sizeof(nx_file_location));
			else
				s->frames = nx_arena_grow(r->a, s->frames, (size_t)cap, (size_t)nc, sizeof(nx_stack_frame));
			cap = nc;
		}
		int k = (*count[t])++;
		if (t == T_FILES || t == T_FUNCS) {
			if (!rd_ws(r))
				return false;
			if (rd_peek(r) != '"')
				return rd_err(r, r->pos, "expected a quoted name in the %s table", table_names[t]);
			const char **dst = t == T_FILES ? &s->file_names[k] : &s->function_names[k];
			if (!rd_string(r, r->a, dst))
				return false;
		} else if (t == T_LOCS) {
			int64_t v[6] = {0};
			if (!read_fields(r, loc_keys, v, 6, table_names[t]))
				return false;
			s->locations[k] = (nx_file_location){v[0], v[1], v[2], v[3], v[4], v[5]};
		} else {
			int64_t v[2] = {0};
			size_t fp = r->pos;
			if (!read_fields(r, frame_keys, v, 2, table_names[t]))
				return false;
			/* the text writes the parent's id + 1 (1: no caller); XLA's
			 * parser subtracts 1, giving the proto's 0-is-none id */
			if (v[1] < 1)
				return rd_err(r, fp, "StackFrames entry %d: parent_frame_id %lld, expected >= 1 (the text writes the parent's id + 1; 1 = no caller)",
				              k + 1, (long long)v[1]);
			s->frames[k] = (nx_stack_frame){v[0], v[1] - 1};
		}
	}
}

/* Every id points into its table (0 = none). Returns false with a message. */
static bool tables_valid(const nx_stack_frames *s, char *err, size_t n)
{
	for (int k = 0; k < s->nlocations; k++) {
		const nx_file_location *l = &s->locations[k];
		if (l->file_name_id < 0 || l->file_name_id > s->nfile_names || l->function_name_id < 0 ||
		    l->function_name_id > s->nfunction_names) {
			snprintf(err, n, "FileLocations entry %d names file %lld / function %lld, but there are %d file names and %d function names",
			         k + 1, (long long)l->file_name_id, (long long)l->function_name_id,
			         s->nfile_names, s->nfunction_names);
			return false;
		}
	}
	for (int k = 0; k < s->nframes; k++) {
		const nx_stack_frame *f = &s->frames[k];
		if (f->file_location_id < 0 || f->file_location_id > s->nlocations ||
		    f->parent_frame_id < 0 || f->parent_frame_id > s->nframes) {
			snprintf(err, n, "StackFrames entry %d names location %lld / parent %lld, but there are %d locations and %d frames",
			         k + 1, (long long)f->file_location_id, (long long)f->parent_frame_id,
			         s->nlocations, s->nframes);
			return false;
		}
	}
	return true;
}

bool rd_stack_tables(nx_rd *r, nx_module *m)
{
	bool any = false;
	for (;;) {
		if (!rd_ws(r))
			return false;
		int t = table_at(r);
		if (t < 0)
			break;
		if (!read_table(r, m, t))
			return false;
		any = true;
	}
	char err[200];
	if (any && !tables_valid(&m->stack, err, sizeof err))
		return rd_err(r, 0, "%s", err);
	return true;
}

/* ----------------------------------------------------------------- proto */

Xla__StackFrameIndexProto *nx_pb_stack_frames_to(nx_arena *a, const nx_stack_frames *s)
{
	if (!s->nfile_names && !s->nfunction_names && !s->nlocations && !s->nframes)
		return NULL;
	Xla__StackFrameIndexProto *p;
	NX_PB_NEW(a, p, Xla__StackFrameIndexProto, XLA__STACK_FRAME_INDEX_PROTO__INIT);
	p->n_file_names = (size_t)s->nfile_names;
	p->file_names = nx_arena_alloc(a, sizeof(char *) * (size_t)(s->nfile_names + 1));
	for (int k = 0; k < s->nfile_names; k++)
		p->file_names[k] = nx_arena_strdup(a, s->file_names[k]);
	p->n_function_names = (size_t)s->nfunction_names;
	p->function_names = nx_arena_alloc(a, sizeof(char *) * (size_t)(s->nfunction_names + 1));
	for (int k = 0; k < s->nfunction_names; k++)
		p->function_names[k] = nx_arena_strdup(a, s->function_names[k]);
	p->n_file_locations = (size_t)s->nlocations;
	p->file_locations = nx_arena_alloc(a, sizeof(*p->file_locations) * (size_t)(s->nlocations + 1));
	for (int k = 0; k < s->nlocations; k++) {
		const nx_file_location *l = &s->locations[k];
		Xla__StackFrameIndexProto__FileLocation *e;
		NX_PB_NEW(a, e, Xla__StackFrameIndexProto__FileLocation,
		          XLA__STACK_FRAME_INDEX_PROTO__FILE_LOCATION__INIT);
		e->file_name_id = (int32_t)l->file_name_id;
		e->function_name_id = (int32_t)l->function_name_id;
		e->line = (int32_t)l->line;
		e->end_line = (int32_t)l->end_line;
		e->column = (int32_t)l->column;
		e->end_column = (int32_t)l->end_column;
		p->file_locations[k] = e;
	}
	p->n_stack_frames = (size_t)s->nframes;
	p->stack_frames = nx_arena_alloc(a, sizeof(*p->stack_frames) * (size_t)(s->nframes + 1));
	for (int k = 0; k < s->nframes; k++) {
		Xla__StackFrameIndexProto__StackFrame *e;
		NX_PB_NEW(a, e, Xla__StackFrameIndexProto__StackFrame,
		          XLA__STACK_FRAME_INDEX_PROTO__STACK_FRAME__INIT);
		e->file_location_id = (int32_t)s->frames[k].file_location_id;
		e->parent_frame_id = (int32_t)s->frames[k].parent_frame_id;
		p->stack_frames[k] = e;
	}
	return p;
}

bool nx_pb_stack_frames_from(nx_arena *a, const Xla__StackFrameIndexProto *p, nx_stack_frames *s,
                             char *err, size_t nerr)
{
	if (p->n_file_names > INT32_MAX || p->n_function_names > INT32_MAX ||
	    p->n_file_locations > INT32_MAX || p->n_stack_frames > INT32_MAX) {
		snprintf(err, nerr, "stack_frame_index is too large");
		return false;
	}
	s->nfile_names = (int)p->n_file_names;
	s->file_names = nx_arena_alloc(a, sizeof(char *) * (p->n_file_names + 1));
	for (size_t k = 0; k < p->n_file_names; k++)
		s->file_names[k] = nx_arena_strdup(a, p->file_names[k]);
	s->nfunction_names = (int)p->n_function_names;
	s->function_names = nx_arena_alloc(a, sizeof(char *) * (p->n_function_names + 1));
	for (size_t k = 0; k < p->n_function_names; k++)
		s->function_names[k] = nx_arena_strdup(a, p->function_names[k]);
	s->nlocations = (int)p->n_file_locations;
	s->locations = nx_arena_alloc(a, sizeof(nx_file_location) * (p->n_file_locations + 1));
	for (size_t k = 0; k < p->n_file_locations; k++) {
		const Xla__StackFrameIndexProto__FileLocation *e = p->file_locations[k];
		s->locations[k] = (nx_file_location){e->file_name_id, e->function_name_id, e->line,
		                                     e->end_line,     e->column,           e->end_column};
	}
	s->nframes = (int)p->n_stack_frames;
	s->frames = nx_arena_alloc(a, sizeof(nx_stack_frame) * (p->n_stack_frames + 1));
	for (size_t k = 0; k < p->n_stack_frames; k++)
		s->frames[k] = (nx_stack_frame){p->stack_frames[k]->file_location_id,
		                                p->stack_frames[k]->parent_frame_id};
	if (!tables_valid(s, err, nerr)) {
		memset(s, 0, sizeof *s);
		return false;
	}
	return true;
}

/* ----------------------------------------------------------------- print */

void nx_buf_stack_frames(nx_buf *b, const nx_stack_frames *s)
{
	if (s->nfile_names) {
		nx_buf_puts(b, "FileNames\n");
		for (int k = 0; k < s->nfile_names; k++) {
			nx_buf_printf(b, "%d \"", k + 1);
			nx_buf_escaped(b, s->file_names[k]);
			nx_buf_puts(b, "\"\n");
		}
		nx_buf_putc(b, '\n');
	}
	if (s->nfunction_names) {
		nx_buf_puts(b, "FunctionNames\n");
		for (int k = 0; k < s->nfunction_names; k++) {
			nx_buf_printf(b, "%d \"", k + 1);
			nx_buf_escaped(b, s->function_names[k]);
			nx_buf_puts(b, "\"\n");
		}
		nx_buf_putc(b, '\n');
	}
	if (s->nlocations) {
		nx_buf_puts(b, "FileLocations\n");
		for (int k = 0; k < s->nlocations; k++) {
			const nx_file_location *l = &s->locations[k];
			nx_buf_printf(b, "%d {file_name_id=%lld function_name_id=%lld line=%lld end_line=%lld column=%lld end_column=%lld}\n",
			              k + 1, (long long)l->file_name_id, (long long)l->function_name_id,
			              (long long)l->line, (long long)l->end_line, (long long)l->column,
			              (long long)l->end_column);
		}
		nx_buf_putc(b, '\n');
	}
	if (s->nframes) {
		nx_buf_puts(b, "StackFrames\n");
		for (int k = 0; k < s->nframes; k++)
			nx_buf_printf(b, "%d {file_location_id=%lld parent_frame_id=%lld}\n", k + 1,
			              (long long)s->frames[k].file_location_id,
			              (long long)s->frames[k].parent_frame_id + 1); /* as XLA prints */
		nx_buf_putc(b, '\n');
	}
	if (s->nfile_names || s->nfunction_names || s->nlocations || s->nframes)
		nx_buf_putc(b, '\n');
}

/* ---------------------------------------------------------------- lookup */


static const char *meta(const nx_inst *i, const char *key)
{
	for (int k = 0; k < i->a.nmetadata; k++)
		if (!strcmp(i->a.metadata[k].key, key))
			return i->a.metadata[k].value;
	return NULL;
}

/* The frame to show for innermost frame id: walking to the callers, the
 * first one whose file is not an installed library (site-packages,
 * dist-packages: flax, haiku, transformers, ...) — the user's own code;
 * the innermost frame when every one is a library's. */
static long long user_frame(const nx_stack_frames *s, long long id)
{
	long long f = id;
	for (int step = 0; step < 64 && f > 0 && f <= s->nframes; step++) {
		int64_t loc = s->frames[f - 1].file_location_id;
		if (loc > 0 && loc <= s->nlocations) {
			int64_t fn = s->locations[loc - 1].file_name_id;
			const char *file = fn > 0 && fn <= s->nfile_names ? s->file_names[fn - 1] : NULL;
			if (file && !strstr(file, "/site-packages/") && !strstr(file, "/dist-packages/") &&
			    file[0] != '<')
				return f;
		}
		long long parent = s->frames[f - 1].parent_frame_id;
		if (parent == f)
			break; /* a frame that is its own caller: no further */
		f = parent;
	}
	return id;
}

bool nx_inst_source(const nx_module *m, const nx_inst *i, char *buf, size_t n)
{
	if (!n)
		return false;
	buf[0] = 0;
	const char *op_name = meta(i, "op_name");
	const char *file = meta(i, "source_file");
	const char *line = meta(i, "source_line");
	const char *func = NULL;
	char lbuf[32];
	const char *sf = meta(i, "stack_frame_id");
	if ((!file || !line) && sf && m) {
		const nx_stack_frames *s = &m->stack;
		long long id = user_frame(s, strtoll(sf, NULL, 10));
		if (id > 0 && id <= s->nframes) {
			int64_t loc = s->frames[id - 1].file_location_id;
			if (loc > 0 && loc <= s->nlocations) {
				const nx_file_location *l = &s->locations[loc - 1];
				if (l->file_name_id > 0 && l->file_name_id <= s->nfile_names) {
					file = s->file_names[l->file_name_id - 1];
					snprintf(lbuf, sizeof lbuf, "%lld", (long long)l->line);
					line = lbuf;
				}
				if (l->function_name_id > 0 && l->function_name_id <= s->nfunction_names)
					func = s->function_names[l->function_name_id - 1];
			}
		}
	}
	if (!op_name && !file)
		return false;
	int w;
	if (op_name && file)
		w = snprintf(buf, n, "%s at %s:%s", op_name, file, line ? line : "?");
	else if (file)
		w = snprintf(buf, n, "%s:%s", file, line ? line : "?");
	else
		w = snprintf(buf, n, "%s", op_name);
	if (func && w >= 0 && (size_t)w < n)
		snprintf(buf + w, n - (size_t)w, " (in %s)", func);
	return true;
}

/* ------------------------------------------------------------ diagnostics */

static const nx_inst *find_inst(const nx_module *m, const char *name)
{
	for (int c = 0; c < m->ncomps; c++) {
		const nx_inst *i = nx_comp_find_inst(m->comps[c], name);
		if (i)
			return i;
	}
	return NULL;
}

/* Line `line` of the text file `file`, into d->src_line. */
static void fill_src_line(nx_diag *d)
{
	if (d->src_line || !d->file || d->line <= 0 || !strcmp(d->file, "-"))
		return;
	nx_diag tmp = {0};
	size_t len;
	char *text = nx_read_whole_file(d->file, &len, &tmp);
	nx_diag_clear(&tmp);
	if (!text)
		return;
	if (nx_looks_like_text(text, len)) {
		const char *p = text, *end = text + len;
		for (int l = 1; l < d->line && p < end; l++) {
			const char *nl = memchr(p, '\n', (size_t)(end - p));
			p = nl ? nl + 1 : end;
		}
		if (p < end) {
			const char *nl = memchr(p, '\n', (size_t)(end - p));
			nx_diag_set_src(d, p, (size_t)((nl ? nl : end) - p));
		}
	}
	free(text);
}

void nx_diag_explain(nx_diag *d, const nx_module *m)
{
	if (!d || d->status != NX_ERR_INPUT || !m)
		return;
	const nx_inst *i = d->inst ? find_inst(m, d->inst) : NULL;
	if (i && !d->line && i->line) {
		free(d->file);
		d->file = m->file ? nx_xstrdup(m->file) : NULL;
		d->line = i->line;
		d->col = i->col;
	}
	char src[512];
	if (i && d->msg && !strstr(d->msg, " [from ") && nx_inst_source(m, i, src, sizeof src)) {
		char *msg = nx_xasprintf("%s [from %s]", d->msg, src);
		free(d->msg);
		d->msg = msg;
	}
	if (i && d->msg && strstr(d->msg, "not supported") && !strstr(d->msg, "hint:")) {
		char *msg = nx_xasprintf("%s; hint: `nxcc list-operators --framework XLA` lists what the backend lowers; "
		                         "rewrite this op in the model or exclude it from the compiled graph", d->msg);
		free(d->msg);
		d->msg = msg;
	}
	fill_src_line(d);
}
