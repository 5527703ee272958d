/* ir/shape.c — shapes: construction, sizes, comparison, printing. */
#include "ir/ir.h"

#include <stdio.h>
#include <string.h>

nx_shape *nx_shape_array(nx_arena *a, nx_type t, int rank, const int64_t *dims)
{
	NX_ASSERT(rank >= 0 && rank <= NX_MAX_RANK);
	nx_shape *s = nx_arena_alloc(a, sizeof(*s));
	s->type = t;
	s->rank = rank;
	s->dims = nx_arena_alloc(a, sizeof(int64_t) * (size_t)(rank ? rank : 1));
	if (rank)
		memcpy(s->dims, dims, sizeof(int64_t) * (size_t)rank);
	s->minor_to_major = nx_arena_alloc(a, sizeof(int64_t) * (size_t)(rank ? rank : 1));
	nx_shape_set_default_layout(s);
	return s;
}

nx_shape *nx_shape_scalar(nx_arena *a, nx_type t)
{
	return nx_shape_array(a, t, 0, NULL);
}

nx_shape *nx_shape_tuple(nx_arena *a, int n, nx_shape *const *elems)
{
	nx_shape *s = nx_arena_alloc(a, sizeof(*s));
	s->type = NX_TUPLE;
	s->ntuple = n;
	s->tuple = nx_arena_alloc(a, sizeof(nx_shape *) * (size_t)(n ? n : 1));
	for (int i = 0; i < n; i++)
		s->tuple[i] = elems[i];
	return s;
}

nx_shape *nx_shape_token(nx_arena *a)
{
	/* A token is a rank-0 non-array shape; it gets the same one-entry dims
	 * and layout a scalar has, so every walker may treat it like one. */
	nx_shape *s = nx_shape_scalar(a, NX_TOKEN);
	return s;
}

nx_shape *nx_shape_copy(nx_arena *a, const nx_shape *s)
{
	nx_shape *c = nx_arena_dup(a, s, sizeof(*s));
	if (s->type == NX_TUPLE) {
		c->tuple = nx_arena_alloc(a, sizeof(nx_shape *) * (size_t)(s->ntuple ? s->ntuple : 1));
		for (int i = 0; i < s->ntuple; i++)
			c->tuple[i] = nx_shape_copy(a, s->tuple[i]);
		return c;
	}
	size_t r = (size_t)(s->rank ? s->rank : 1);
	c->dims = s->dims ? nx_arena_dup(a, s->dims, sizeof(int64_t) * r)
	                  : nx_arena_alloc(a, sizeof(int64_t) * r);
	c->minor_to_major = s->minor_to_major
	                        ? nx_arena_dup(a, s->minor_to_major, sizeof(int64_t) * r)
	                        : nx_arena_alloc(a, sizeof(int64_t) * r);
	if (s->dynamic)
		c->dynamic = nx_arena_dup(a, s->dynamic, r);
	return c;
}

nx_shape *nx_shape_with_type(nx_arena *a, const nx_shape *s, nx_type t)
{
	nx_shape *c = nx_shape_copy(a, s);
	c->type = t;
	return c;
}

void nx_shape_set_default_layout(nx_shape *s)
{
	for (int i = 0; i < s->rank; i++)
		s->minor_to_major[i] = s->rank - 1 - i;
	s->layout_extra = NULL;
}

bool nx_shape_is_tuple(const nx_shape *s) { return s->type == NX_TUPLE; }
bool nx_shape_is_array(const nx_shape *s) { return nx_type_is_array(s->type); }

bool nx_shape_has_default_layout(const nx_shape *s)
{
	for (int i = 0; i < s->rank; i++)
		if (s->minor_to_major[i] != s->rank - 1 - i)
			return false;
	return s->layout_extra == NULL;
}

int64_t nx_shape_elems(const nx_shape *s)
{
	if (!nx_shape_is_array(s))
		return 0;
	int64_t n = 1;
	for (int i = 0; i < s->rank; i++) {
		int64_t d = s->dims[i];
		if (d < 0)
			return -1;
		if (d && n > INT64_MAX / d)
			return -1;
		n *= d;
	}
	return n;
}

int64_t nx_shape_bytes(const nx_shape *s)
{
	if (s->type == NX_TUPLE) {
		int64_t total = 0;
		for (int i = 0; i < s->ntuple; i++) {
			int64_t b = nx_shape_bytes(s->tuple[i]);
			if (b < 0 || total > INT64_MAX - b)
				return -1;
			total += b;
		}
		return total;
	}
	int64_t n = nx_shape_elems(s);
	int b = nx_type_bytes(s->type);
	if (n < 0 || (b && n > INT64_MAX / b))
		return -1;
	return n * b;
}

static bool shape_same(const nx_shape *a, const nx_shape *b, bool layout)
{
	if (a->type != b->type)
		return false;
	if (a->type == NX_TUPLE) {
		if (a->ntuple != b->ntuple)
			return false;
		for (int i = 0; i < a->ntuple; i++)
			if (!shape_same(a->tuple[i], b->tuple[i], layout))
				return false;
		return true;
	}
	if (a->rank != b->rank)
		return false;
	for (int i = 0; i < a->rank; i++) {
		if (a->dims[i] != b->dims[i])
			return false;
		uint8_t da = a->dynamic ? a->dynamic[i] : 0, db = b->dynamic ? b->dynamic[i] : 0;
		if (da != db)
			return false;
		if (layout && a->minor_to_major[i] != b->minor_to_major[i])
			return false;
	}
	if (layout) {
		const char *ea = a->layout_extra ? a->layout_extra : "";
		const char *eb = b->layout_extra ? b->layout_extra : "";
		if (strcmp(ea, eb) != 0)
			return false;
	}
	return true;
}

bool nx_shape_compatible(const nx_shape *a, const nx_shape *b) { return shape_same(a, b, false); }
bool nx_shape_equal(const nx_shape *a, const nx_shape *b) { return shape_same(a, b, true); }

/* Appends formatted text to buf at *pos, counting what would be written. */
static void put(char *buf, size_t n, size_t *pos, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void put(char *buf, size_t n, size_t *pos, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	size_t room = *pos < n ? n - *pos : 0;
	int k = vsnprintf(room ? buf + *pos : NULL, room, fmt, ap);
	va_end(ap);
	*pos += (size_t)k;
}

static void shape_print(char *buf, size_t n, size_t *pos, const nx_shape *s, bool with_layout)
{
	if (s->type == NX_TUPLE) {
		put(buf, n, pos, "(");
		for (int i = 0; i < s->ntuple; i++) {
			if (i)
				put(buf, n, pos, ", ");
			shape_print(buf, n, pos, s->tuple[i], with_layout);
		}
		put(buf, n, pos, ")");
		return;
	}
	put(buf, n, pos, "%s", nx_type_name(s->type));
	if (!nx_shape_is_array(s)) {
		put(buf, n, pos, "[]"); /* token[], opaque[]: as XLA prints them */
		return;
	}
	put(buf, n, pos, "[");
	for (int i = 0; i < s->rank; i++) {
		uint8_t dyn = s->dynamic ? s->dynamic[i] : NX_DIM_STATIC;
		if (i)
			put(buf, n, pos, ",");
		if (dyn == NX_DIM_UNBOUNDED)
			put(buf, n, pos, "?");
		else
			put(buf, n, pos, "%s%lld", dyn == NX_DIM_BOUNDED ? "<=" : "",
			    (long long)s->dims[i]);
	}
	put(buf, n, pos, "]");
	if (with_layout && (s->rank > 0 || s->layout_extra)) {
		put(buf, n, pos, "{");
		for (int i = 0; i < s->rank; i++)
			put(buf, n, pos, "%s%lld", i ? "," : "", (long long)s->minor_to_major[i]);
		if (s->layout_extra)
			put(buf, n, pos, "%s", s->layout_extra);
		put(buf, n, pos, "}");
	}
}

int nx_shape_print(char *buf, size_t n, const nx_shape *s, bool with_layout)
{
	size_t pos = 0;
	if (n)
		buf[0] = 0;
	shape_print(buf, n, &pos, s, with_layout);
	return (int)pos;
}

char *nx_shape_str(nx_arena *a, const nx_shape *s, bool with_layout)
{
	int k = nx_shape_print(NULL, 0, s, with_layout);
	char *buf = nx_arena_alloc(a, (size_t)k + 1);
	nx_shape_print(buf, (size_t)k + 1, s, with_layout);
	return buf;
}

const nx_shape *nx_shape_subshape(const nx_shape *s, const int64_t *index, int n)
{
	for (int i = 0; i < n; i++) {
		if (s->type != NX_TUPLE || index[i] < 0 || index[i] >= s->ntuple)
			return NULL;
		s = s->tuple[index[i]];
	}
	return s;
}

nx_literal *nx_literal_new(nx_arena *a, nx_shape *shape)
{
	nx_literal *l = nx_arena_alloc(a, sizeof(*l));
	l->shape = shape;
	if (shape->type == NX_TUPLE) {
		l->ntuple = shape->ntuple;
		l->tuple = nx_arena_alloc(a, sizeof(nx_literal *) * (size_t)(shape->ntuple ? shape->ntuple : 1));
		for (int i = 0; i < shape->ntuple; i++)
			l->tuple[i] = nx_literal_new(a, shape->tuple[i]);
		return l;
	}
	int64_t b = nx_shape_bytes(shape);
	NX_ASSERT(b >= 0);
	l->nbytes = b;
	l->data = b ? nx_arena_alloc(a, (size_t)b) : NULL;
	return l;
}
