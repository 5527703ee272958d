/* ir/tables.c — expansions of types.def and opcodes.def. */
#include "ir/ir.h"

#include <string.h>

typedef struct {
	const char *name;
	int bits, bytes;
	nx_type_kind kind;
	int proto;
} type_info;

static const type_info types[NX_TYPE_COUNT] = {
	[NX_TYPE_INVALID] = {"invalid", 0, 0, NX_KIND_OPAQUE, 0},
#define TYPE(E, name, bits, bytes, kind, proto) [NX_##E] = {name, bits, bytes, kind, proto},
#include "ir/types.def"
#undef TYPE
};

_Static_assert(sizeof(types) / sizeof(types[0]) == NX_TYPE_COUNT, "types.def out of sync");

const char *nx_type_name(nx_type t)
{
	return (unsigned)t < NX_TYPE_COUNT ? types[t].name : "invalid";
}

nx_type nx_type_from_name(const char *s, size_t n)
{
	for (int t = 1; t < NX_TYPE_COUNT; t++)
		if (strlen(types[t].name) == n && memcmp(types[t].name, s, n) == 0)
			return (nx_type)t;
	return NX_TYPE_INVALID;
}

int nx_type_bits(nx_type t) { return types[t].bits; }
int nx_type_bytes(nx_type t) { return types[t].bytes; }
nx_type_kind nx_type_kind_of(nx_type t) { return types[t].kind; }
int nx_type_proto(nx_type t) { return types[t].proto; }

nx_type nx_type_from_proto(int number)
{
	for (int t = 1; t < NX_TYPE_COUNT; t++)
		if (types[t].proto == number)
			return (nx_type)t;
	return NX_TYPE_INVALID;
}

bool nx_type_is_float(nx_type t) { return types[t].kind == NX_KIND_FLOAT; }

bool nx_type_is_int(nx_type t)
{
	return types[t].kind == NX_KIND_SINT || types[t].kind == NX_KIND_UINT;
}

bool nx_type_is_array(nx_type t)
{
	nx_type_kind k = types[t].kind;
	return t != NX_TYPE_INVALID && k != NX_KIND_TOKEN && k != NX_KIND_OPAQUE &&
	       k != NX_KIND_TUPLE;
}

typedef struct {
	const char *name;
	int arity;
	unsigned flags;
} op_info;

static const op_info ops[] = {
#define OP(E, name, arity, flags) {name, arity, flags},
#include "ir/opcodes.def"
#undef OP
};

_Static_assert(sizeof(ops) / sizeof(ops[0]) == NX_OP_COUNT, "opcodes.def out of sync");

const char *nx_opcode_name(nx_opcode op)
{
	return (unsigned)op < NX_OP_COUNT ? ops[op].name : "invalid-opcode";
}

int nx_opcode_arity(nx_opcode op) { return ops[op].arity; }
unsigned nx_opcode_flags(nx_opcode op) { return ops[op].flags; }

nx_opcode nx_opcode_from_name(const char *s, size_t n)
{
	/* The table is sorted by name, so a binary search works. */
	int lo = 0, hi = NX_OP_COUNT - 1;
	while (lo <= hi) {
		int mid = (lo + hi) / 2;
		const char *m = ops[mid].name;
		size_t ml = strlen(m);
		int c = memcmp(m, s, ml < n ? ml : n);
		if (c == 0)
			c = ml < n ? -1 : ml > n ? 1 : 0;
		if (c == 0)
			return (nx_opcode)mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	/* Fallback for any row out of order. */
	for (int i = 0; i < NX_OP_COUNT; i++)
		if (strlen(ops[i].name) == n && memcmp(ops[i].name, s, n) == 0)
			return (nx_opcode)i;
	return NX_OP_COUNT;
}
