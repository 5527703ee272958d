/* ir/hlo/proto_text.c — text attributes <-> structured proto fields (sharding,
 * layout tiles, metadata) for the HloModuleProto reader and writer. Parsers
 * accept only what their formatter prints back identically; the writer checks
 * that round trip and keeps the text verbatim otherwise (see ir/hlo/proto.h). */
#include "ir/hlo/proto.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ a string builder */

typedef struct sbuf {
	char *p;
	size_t n, cap;
} sbuf;

static void sb_put(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_put(sbuf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char tmp[64];
	int k = vsnprintf(tmp, sizeof tmp, fmt, ap);
	va_end(ap);
	if (k < 0)
		return;
	if (b->n + (size_t)k + 1 > b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 64;
		while (cap < b->n + (size_t)k + 1)
			cap *= 2;
		char *q = realloc(b->p, cap);
		NX_ASSERT(q);
		b->p = q;
		b->cap = cap;
	}
	if ((size_t)k < sizeof tmp) {
		memcpy(b->p + b->n, tmp, (size_t)k + 1);
	} else {
		va_start(ap, fmt);
		vsnprintf(b->p + b->n, (size_t)k + 1, fmt, ap);
		va_end(ap);
	}
	b->n += (size_t)k;
}

static char *sb_finish(nx_arena *a, sbuf *b)
{
	char *r = nx_arena_strndup(a, b->p ? b->p : "", b->n);
	free(b->p);
	return r;
}

/* ------------------------------------------------------------ small parsing */

typedef struct cur {
	const char *s;
	bool ok;
} cur;

static bool lit(cur *c, const char *w)
{
	size_t n = strlen(w);
	if (strncmp(c->s, w, n) != 0)
		return false;
	c->s += n;
	return true;
}

static int64_t num(cur *c)
{
	if (!((*c->s >= '0' && *c->s <= '9') || (*c->s == '-' && c->s[1] >= '0' && c->s[1] <= '9'))) {
		c->ok = false;
		return 0;
	}
	char *end;
	errno = 0;
	long long v = strtoll(c->s, &end, 10);
	if (errno)
		c->ok = false;
	c->s = end;
	return v;
}

/* A list of integers separated by sep, at least one. */
static int64_t *nums(nx_arena *a, cur *c, char sep, size_t *n)
{
	int64_t *v = NULL;
	size_t k = 0, cap = 0;
	do {
		if (k == cap) {
			size_t nc = cap ? cap * 2 : 8;
			v = nx_arena_grow(a, v, k, nc, sizeof(int64_t));
			cap = nc;
		}
		v[k++] = num(c);
	} while (c->ok && *c->s == sep && (c->s++, true));
	*n = k;
	return v;
}

/* ------------------------------------------------------------------ sharding */

static bool sharding_elem(nx_arena *a, cur *c, Xla__OpSharding *o)
{
	if (lit(c, "replicated")) {
		o->type = XLA__OP_SHARDING__TYPE__REPLICATED;
		return true;
	}
	if (lit(c, "manual")) {
		o->type = XLA__OP_SHARDING__TYPE__MANUAL;
		return true;
	}
	if (lit(c, "maximal device=")) {
		o->type = XLA__OP_SHARDING__TYPE__MAXIMAL;
		o->n_tile_assignment_dimensions = 1;
		o->tile_assignment_dimensions = nx_arena_alloc(a, sizeof(int64_t));
		o->tile_assignment_dimensions[0] = 1;
		o->n_tile_assignment_devices = 1;
		o->tile_assignment_devices = nx_arena_alloc(a, sizeof(int64_t));
		o->tile_assignment_devices[0] = num(c);
		return c->ok;
	}
	if (!lit(c, "devices=["))
		return false;
	o->type = XLA__OP_SHARDING__TYPE__OTHER;
	o->tile_assignment_dimensions = nums(a, c, ',', &o->n_tile_assignment_dimensions);
	if (!c->ok || !lit(c, "]"))
		return false;
	if (lit(c, "<=[")) {
		o->iota_reshape_dims = nums(a, c, ',', &o->n_iota_reshape_dims);
		if (!c->ok || !lit(c, "]"))
			return false;
		if (lit(c, "T(")) {
			size_t n;
			int64_t *p = nums(a, c, ',', &n);
			if (!c->ok || !lit(c, ")") || n != o->n_iota_reshape_dims)
				return false;
			o->n_iota_transpose_perm = n;
			o->iota_transpose_perm = nx_arena_alloc(a, sizeof(int32_t) * n);
			for (size_t i = 0; i < n; i++)
				o->iota_transpose_perm[i] = (int32_t)p[i];
		}
	} else {
		o->tile_assignment_devices = nums(a, c, ',', &o->n_tile_assignment_devices);
		if (!c->ok)
			return false;
	}
	if (lit(c, " last_tile_dim_replicate"))
		o->replicate_on_last_tile_dim = true;
	return true;
}

bool nx_pb_sharding_parse(nx_arena *a, const char *text, Xla__OpSharding **out)
{
	cur c = {text, true};
	Xla__OpSharding *o;
	NX_PB_NEW(a, o, Xla__OpSharding, XLA__OP_SHARDING__INIT);
	*out = o;
	if (*c.s != '{')
		return sharding_elem(a, &c, o) && c.ok && *c.s == 0;
	/* Tuple: "{elem}, {elem}, ..." (the outer braces are not in the text). */
	o->type = XLA__OP_SHARDING__TYPE__TUPLE;
	size_t cap = 0;
	for (;;) {
		if (!lit(&c, "{"))
			return false;
		Xla__OpSharding *e;
		NX_PB_NEW(a, e, Xla__OpSharding, XLA__OP_SHARDING__INIT);
		if (!sharding_elem(a, &c, e) || !c.ok || !lit(&c, "}"))
			return false;
		if (o->n_tuple_shardings == cap) {
			size_t nc = cap ? cap * 2 : 4;
			o->tuple_shardings = nx_arena_grow(a, o->tuple_shardings, cap, nc, sizeof(e));
			cap = nc;
		}
		o->tuple_shardings[o->n_tuple_shardings++] = e;
		if (*c.s == 0)
			return true;
		if (!lit(&c, ", "))
			return false;
	}
}

static void put_ints(sbuf *b, const int64_t *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		sb_put(b, "%s%" PRId64, i ? "," : "", v[i]);
}

static bool sharding_elem_format(sbuf *b, const Xla__OpSharding *s)
{
	switch (s->type) {
	case XLA__OP_SHARDING__TYPE__REPLICATED:
		sb_put(b, "replicated");
		return true;
	case XLA__OP_SHARDING__TYPE__MANUAL:
		sb_put(b, "manual");
		return true;
	case XLA__OP_SHARDING__TYPE__MAXIMAL:
		if (s->n_tile_assignment_devices != 1)
			return false;
		sb_put(b, "maximal device=%" PRId64, s->tile_assignment_devices[0]);
		return true;
	case XLA__OP_SHARDING__TYPE__OTHER:
		if (s->n_last_tile_dims || s->n_tile_assignment_dimensions == 0)
			return false;
		sb_put(b, "devices=[");
		put_ints(b, s->tile_assignment_dimensions, s->n_tile_assignment_dimensions);
		sb_put(b, "]");
		if (s->n_iota_reshape_dims) {
			sb_put(b, "<=[");
			put_ints(b, s->iota_reshape_dims, s->n_iota_reshape_dims);
			sb_put(b, "]");
			if (s->n_iota_transpose_perm) {
				sb_put(b, "T(");
				for (size_t i = 0; i < s->n_iota_transpose_perm; i++)
					sb_put(b, "%s%d", i ? "," : "", (int)s->iota_transpose_perm[i]);
				sb_put(b, ")");
			}
		} else {
			if (!s->n_tile_assignment_devices)
				return false;
			put_ints(b, s->tile_assignment_devices, s->n_tile_assignment_devices);
		}
		if (s->replicate_on_last_tile_dim)
			sb_put(b, " last_tile_dim_replicate");
		return true;
	default:
		return false;
	}
}

char *nx_pb_sharding_format(nx_arena *a, const Xla__OpSharding *s)
{
	sbuf b = {0};
	bool ok = true;
	if (s->type == XLA__OP_SHARDING__TYPE__TUPLE) {
		for (size_t i = 0; i < s->n_tuple_shardings && ok; i++) {
			sb_put(&b, "%s{", i ? ", " : "");
			ok = s->tuple_shardings[i]->type != XLA__OP_SHARDING__TYPE__TUPLE &&
			     sharding_elem_format(&b, s->tuple_shardings[i]);
			sb_put(&b, "}");
		}
	} else {
		ok = sharding_elem_format(&b, s);
	}
	if (!ok) {
		free(b.p);
		return NULL;
	}
	return sb_finish(a, &b);
}

/* ------------------------------------------------------------------ layouts */

bool nx_pb_layout_extra_parse(nx_arena *a, const char *text, Xla__LayoutProto *l)
{
	cur c = {text, true};
	if (!lit(&c, ":"))
		return false;
	if (lit(&c, "T")) {
		size_t cap = 0;
		while (lit(&c, "(")) {
			Xla__TileProto *t;
			NX_PB_NEW(a, t, Xla__TileProto, XLA__TILE_PROTO__INIT);
			t->dimensions = nums(a, &c, ',', &t->n_dimensions);
			if (!c.ok || !lit(&c, ")"))
				return false;
			if (l->n_tiles == cap) {
				size_t nc = cap ? cap * 2 : 4;
				l->tiles = nx_arena_grow(a, l->tiles, cap, nc, sizeof(t));
				cap = nc;
			}
			l->tiles[l->n_tiles++] = t;
		}
		if (!l->n_tiles)
			return false;
	}
	if (lit(&c, "E(")) {
		l->element_size_in_bits = num(&c);
		if (!c.ok || !lit(&c, ")") || l->element_size_in_bits == 0)
			return false;
	}
	if (lit(&c, "S(")) {
		l->memory_space = num(&c);
		if (!c.ok || !lit(&c, ")") || l->memory_space == 0)
			return false;
	}
	return *c.s == 0;
}

char *nx_pb_layout_extra_format(nx_arena *a, const Xla__LayoutProto *l)
{
	if (!l->n_tiles && !l->element_size_in_bits && !l->memory_space)
		return NULL;
	sbuf b = {0};
	sb_put(&b, ":");
	if (l->n_tiles) {
		sb_put(&b, "T");
		for (size_t i = 0; i < l->n_tiles; i++) {
			sb_put(&b, "(");
			put_ints(&b, l->tiles[i]->dimensions, l->tiles[i]->n_dimensions);
			sb_put(&b, ")");
		}
	}
	if (l->element_size_in_bits)
		sb_put(&b, "E(%" PRId64 ")", l->element_size_in_bits);
	if (l->memory_space)
		sb_put(&b, "S(%" PRId64 ")", l->memory_space);
	return sb_finish(a, &b);
}

/* ------------------------------------------------------------------ metadata */

/* XLA's printing order (OpMetadataToString). */
enum { MD_STR, MD_INT };
static const struct {
	const char *key;
	int kind;
} md_keys[] = {
	{"op_type", MD_STR},         {"op_name", MD_STR},           {"source_file", MD_STR},
	{"source_line", MD_INT},     {"source_end_line", MD_INT},   {"source_column", MD_INT},
	{"source_end_column", MD_INT}, {"deduplicated_name", MD_STR}, {"scheduling_name", MD_STR},
	{"stack_frame_id", MD_INT},
};
enum { MD_NKEYS = sizeof md_keys / sizeof md_keys[0] };

static char **md_str(Xla__OpMetadata *md, int k)
{
	switch (k) {
	case 0: return &md->op_type;
	case 1: return &md->op_name;
	case 2: return &md->source_file;
	case 7: return &md->deduplicated_name;
	case 8: return &md->scheduling_name;
	default: return NULL;
	}
}

static int32_t *md_int(Xla__OpMetadata *md, int k)
{
	switch (k) {
	case 3: return &md->source_line;
	case 4: return &md->source_end_line;
	case 5: return &md->source_column;
	case 6: return &md->source_end_column;
	case 9: return &md->stack_frame_id;
	default: return NULL;
	}
}

void nx_pb_metadata_fill(nx_arena *a, const nx_kv *kv, int n, Xla__OpMetadata *md)
{
	for (int i = 0; i < n; i++) {
		for (int k = 0; k < MD_NKEYS; k++) {
			if (strcmp(kv[i].key, md_keys[k].key) != 0)
				continue;
			if (md_keys[k].kind == MD_STR) {
				*md_str(md, k) = nx_arena_strdup(a, kv[i].value);
			} else {
				char *end;
				errno = 0;
				long v = strtol(kv[i].value, &end, 10);
				if (!errno && *end == 0 && v >= INT32_MIN && v <= INT32_MAX)
					*md_int(md, k) = (int32_t)v;
			}
		}
	}
}

int nx_pb_metadata_entries(nx_arena *a, const Xla__OpMetadata *cmd, nx_kv **out)
{
	Xla__OpMetadata *md = (Xla__OpMetadata *)cmd; /* the accessors are shared */
	nx_kv *v = nx_arena_alloc(a, sizeof(nx_kv) * MD_NKEYS);
	int n = 0;
	for (int k = 0; k < MD_NKEYS; k++) {
		if (md_keys[k].kind == MD_STR) {
			const char *s = *md_str(md, k);
			if (s && *s)
				v[n++] = (nx_kv){md_keys[k].key, nx_arena_strdup(a, s)};
		} else if (*md_int(md, k)) {
			v[n++] = (nx_kv){md_keys[k].key, nx_arena_printf(a, "%d", (int)*md_int(md, k))};
		}
	}
	*out = v;
	return n;
}

/* ------------------------------------------------------------------ enums, ops */

static const char *const api_names[] = {
	"API_VERSION_UNSPECIFIED", "API_VERSION_ORIGINAL", "API_VERSION_STATUS_RETURNING",
	"API_VERSION_STATUS_RETURNING_UNIFIED", "API_VERSION_TYPED_FFI",
};

int nx_pb_api_version_num(const char *name)
{
	for (int i = 0; i < (int)(sizeof api_names / sizeof api_names[0]); i++)
		if (strcmp(name, api_names[i]) == 0)
			return i;
	return -1;
}

const char *nx_pb_api_version_name(int num)
{
	if (num <= 0 || num >= (int)(sizeof api_names / sizeof api_names[0]))
		return NULL;
	return api_names[num];
}

bool nx_pb_op_implies_dimensions(nx_opcode op)
{
	return op == NX_OP_BROADCAST || op == NX_OP_TRANSPOSE || op == NX_OP_REDUCE ||
	       op == NX_OP_REVERSE;
}

bool nx_pb_op_implies_replica_groups(nx_opcode op)
{
	return op == NX_OP_ALL_REDUCE || op == NX_OP_ALL_REDUCE_START || op == NX_OP_ALL_GATHER ||
	       op == NX_OP_ALL_GATHER_START || op == NX_OP_REDUCE_SCATTER || op == NX_OP_ALL_TO_ALL ||
	       op == NX_OP_COLLECTIVE_BROADCAST || op == NX_OP_RAGGED_ALL_TO_ALL;
}

/* ------------------------------------------------------------------ layouts of data */

void nx_pb_permute(const nx_shape *s, const void *src, void *dst, int elem, bool to_physical)
{
	int64_t n = nx_shape_elems(s);
	int r = s->rank;
	int64_t idx[NX_MAX_RANK] = {0}, stride[NX_MAX_RANK];
	/* Physical stride of each logical dimension: minor_to_major[0] varies fastest. */
	int64_t st = 1;
	for (int k = 0; k < r; k++) {
		stride[s->minor_to_major[k]] = st;
		st *= s->dims[s->minor_to_major[k]];
	}
	const char *in = src;
	char *out = dst;
	for (int64_t li = 0; li < n; li++) {
		int64_t pi = 0;
		for (int d = 0; d < r; d++)
			pi += idx[d] * stride[d];
		if (to_physical)
			memcpy(out + pi * elem, in + li * elem, (size_t)elem);
		else
			memcpy(out + li * elem, in + pi * elem, (size_t)elem);
		for (int d = r - 1; d >= 0; d--) {
			if (++idx[d] < s->dims[d])
				break;
			idx[d] = 0;
		}
	}
}
